//! The fast paths (`pcap::next`'s whole-record case, `pcapng::fast_enhanced_packet`) must be
//! invisible. They only run when a whole record is already in the buffer, so reading the same
//! bytes twice tells them apart: from a `Cursor` (small files arrive whole: every valid record
//! takes the fast path) and from a reader that hands out 1-3 bytes per call (the buffer never
//! holds a whole record at the start of `next`, so only the general framing runs). Both must
//! give the same packets, the same error with the same offset and message, the same warnings,
//! statistics, interfaces and sections, on generated captures and on damaged copies of them.
//! `next_packet_inline`, the copy of the fast paths that the one-file scan's loop inlines, is
//! held to the same: read from the `Cursor` through it, the outcome must be the general one.

use super::{CaptureReader, Interface, ReadOptions, ReadStats, Section, TsResolution};
use crate::error::{Error, Warning};
use crate::input;
use crate::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::io::{self, Cursor, Read};

use crate::test_rng::Rng;

/// At most 3 bytes per read.
struct Trickle(Vec<u8>, usize);
impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = self.0.get(self.1..).unwrap_or(&[]);
        let n = rest.len().min(buf.len()).min(1 + self.1 % 3);
        buf[..n].copy_from_slice(&rest[..n]);
        self.1 += n;
        Ok(n)
    }
}

type PacketRow = (Option<i64>, u32, u16, u32, u8, Vec<u8>, u64);

#[derive(Debug, PartialEq)]
struct Outcome {
    opened: std::result::Result<(), Error>,
    packets: Vec<PacketRow>,
    end: std::result::Result<(), Error>,
    warnings: Vec<Warning>,
    stats: ReadStats,
    interfaces: Vec<Interface>,
    sections: Vec<Section>,
}

/// How `read` takes the packets.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    /// Whole from a `Cursor`, through `next_packet`: the fast paths.
    Fast,
    /// Whole from a `Cursor`, through `next_packet_inline`.
    Inline,
    /// A few bytes a read, through `next_packet`: the general framing only.
    Trickle,
}

fn read(bytes: &[u8], way: Way, strict: bool, max_block_len: u32) -> Outcome {
    let trickle = way == Way::Trickle;
    let source: Box<dyn Read + Send> = if trickle {
        Box::new(Trickle(bytes.to_vec(), 0))
    } else {
        Box::new(Cursor::new(bytes.to_vec()))
    };
    let mut out = Outcome {
        opened: Ok(()),
        packets: Vec::new(),
        end: Ok(()),
        warnings: Vec::new(),
        stats: ReadStats::default(),
        interfaces: Vec::new(),
        sections: Vec::new(),
    };
    let mut options = ReadOptions {
        strict,
        ..ReadOptions::default()
    };
    options.limits.max_block_len = max_block_len;
    let mut reader = match input::from_reader(source, None)
        .and_then(|input| CaptureReader::new(input, options))
    {
        Ok(r) => r,
        Err(e) => {
            out.opened = Err(e);
            return out;
        }
    };
    loop {
        let next = if way == Way::Inline {
            reader.next_packet_inline()
        } else {
            reader.next_packet()
        };
        match next {
            Ok(Some(p)) => out.packets.push((
                p.ts_ns,
                p.interface,
                p.linktype,
                p.wire_len,
                p.fcs_len,
                p.data.to_vec(),
                p.offset,
            )),
            Ok(None) => break,
            Err(e) => {
                out.end = Err(e);
                break;
            }
        }
    }
    out.warnings = reader.warnings().to_vec();
    out.stats = reader.stats().clone();
    out.interfaces = reader.interfaces().to_vec();
    out.sections = reader.sections().to_vec();
    out
}

fn pcapng(rng: &mut Rng) -> Vec<u8> {
    let resolutions = [
        TsResolution::Pow10(6),
        TsResolution::Pow10(9),
        TsResolution::Pow10(0),
        TsResolution::Pow10(3),
        TsResolution::Pow10(12),
        TsResolution::Pow10(19),
        TsResolution::Pow2(20),
        TsResolution::Pow2(63),
    ];
    let offsets = [0i64, 1_700_000_000, -1_700_000_000, 9_000_000_000, i64::MIN];
    let mut w = PcapNgWriter::new(Vec::new());
    for _ in 0..1 + rng.below(2) {
        let order = if rng.below(2) == 0 {
            super::ByteOrder::Little
        } else {
            super::ByteOrder::Big
        };
        w.section(order, Some("t")).unwrap();
        let interfaces = 1 + rng.below(3) as u32;
        let mut snaplens = Vec::new();
        for _ in 0..interfaces {
            let res = resolutions[rng.below(resolutions.len() as u64) as usize];
            let off = offsets[rng.below(offsets.len() as u64) as usize];
            let snaplen = [0u32, 64, 65535][rng.below(3) as usize];
            w.interface(1, snaplen, res, off, Some("eth")).unwrap();
            snaplens.push(snaplen as usize);
        }
        for _ in 0..rng.below(40) {
            let iface = rng.below(u64::from(interfaces)) as u32;
            // Small raw values, realistic ones, and ones near and past the fast path's end.
            let raw = match rng.below(4) {
                0 => rng.below(1 << 20),
                1 => 1_700_000_000_000_000 + rng.below(1 << 40),
                2 => u64::MAX - rng.below(1 << 10),
                _ => rng.next() >> rng.below(64),
            };
            let n = rng.below(80) as usize;
            let mut data = rng.bytes(n);
            let wire = data.len() as u32 + rng.below(3) as u32;
            // The writer keeps a record within its interface's snaplen (0: none); damage() may
            // still make one longer.
            match snaplens[iface as usize] {
                0 => {}
                snaplen => data.truncate(snaplen),
            }
            match rng.below(10) {
                0 => w
                    .obsolete_packet_raw(iface as u16, raw, wire, &data)
                    .unwrap(),
                1 => w
                    .interface_statistics(iface, raw, &Default::default())
                    .unwrap(),
                2 => w.custom(true, 32473, &data).unwrap(),
                _ => w.enhanced_packet_raw(iface, raw, wire, &data).unwrap(),
            }
        }
    }
    w.finish().unwrap()
}

fn pcap(rng: &mut Rng) -> Vec<u8> {
    let options = PcapOptions {
        byte_order: if rng.below(2) == 0 {
            super::ByteOrder::Little
        } else {
            super::ByteOrder::Big
        },
        nanos: rng.below(2) == 0,
        linktype: 1,
        snaplen: 65535,
        fcs_len: 0,
    };
    let mut w = PcapWriter::new(Vec::new(), options).unwrap();
    for _ in 0..rng.below(40) {
        let n = rng.below(80) as usize;
        let data = rng.bytes(n);
        let ts = (rng.next() >> 2) as i64 % 4_000_000_000_000_000_000;
        w.write_packet(ts, data.len() as u32 + rng.below(3) as u32, &data)
            .unwrap();
    }
    w.finish().unwrap()
}

/// Damage that hits the checks: random bytes, cuts, and lengths, types and interface ids
/// replaced by values at and around the limits.
fn damage(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(3) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len() as u64) as usize;
        match rng.below(4) {
            0 => b[at] = rng.next() as u8,
            1 => b.truncate(at),
            _ => {
                let at = at & !3;
                let v: u32 = [
                    0,
                    1,
                    6,
                    11,
                    12,
                    28,
                    32,
                    36,
                    0x0A0D_0D0A,
                    64 << 20,
                    (64 << 20) + 4,
                    u32::MAX,
                    rng.next() as u32,
                ][rng.below(13) as usize];
                let v = if rng.below(2) == 0 { v } else { v.swap_bytes() };
                if let Some(s) = b.get_mut(at..at + 4) {
                    s.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    b
}

#[test]
fn fast_paths_agree_with_general_framing() {
    let mut rng = Rng(0x5eed);
    let mut packets = 0;
    let mut errors = 0;
    for round in 0..600 {
        let base = if round % 2 == 0 {
            pcapng(&mut rng)
        } else {
            pcap(&mut rng)
        };
        for variant in 0..4 {
            let bytes = if variant == 0 {
                base.clone()
            } else {
                damage(&mut rng, base.clone())
            };
            // A small block limit, so that the limit check matters on these small files.
            for (strict, max_block_len) in [(false, 64 << 20), (true, 64 << 20), (false, 64)] {
                let fast = read(&bytes, Way::Fast, strict, max_block_len);
                let general = read(&bytes, Way::Trickle, strict, max_block_len);
                assert_eq!(
                    fast, general,
                    "round {round} variant {variant} strict {strict} limit {max_block_len}"
                );
                let inline = read(&bytes, Way::Inline, strict, max_block_len);
                assert_eq!(
                    inline, general,
                    "inline: round {round} variant {variant} strict {strict} limit {max_block_len}"
                );
                packets += fast.packets.len();
                errors += usize::from(fast.end.is_err() || fast.opened.is_err());
            }
        }
    }
    // The generator must actually reach both the packets and the error paths.
    assert!(packets > 10_000, "{packets} packets");
    assert!(errors > 500, "{errors} errors");
}
