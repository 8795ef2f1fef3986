//! `ReadOptions::mmap` must be invisible except for speed: a plain file read through a memory
//! mapping gives exactly the packets, offsets, errors, warnings, statistics, interfaces and
//! sections of the same file read through `read()`, on generated captures and on damaged copies
//! (cut inside a record, corrupt lengths, random damage), strict or not; and anything that
//! cannot be mapped (gzip, zstd, a reader, a special file, an empty file) is read buffered with
//! the same result. The buffered read is the oracle.

use burstcore::capture::TsResolution;
use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::error::ErrorKind;
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

mod engine_util;
mod reader_util;
use engine_util::Rng;
use reader_util::{read_opened, Read};

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("burstcore-mmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Everything a reader of `input` reports, and whether it read through a mapping (kept apart, so
/// that a mapped and a buffered read compare equal when they agree on everything else).
fn read_input(input: burstcore::error::Result<input::Input>, options: ReadOptions) -> (Read, bool) {
    let mut read = read_opened(input, options);
    let mapped = std::mem::take(&mut read.mapped);
    (read, mapped)
}

fn options(strict: bool, mmap: bool) -> ReadOptions {
    ReadOptions {
        strict,
        mmap,
        ..ReadOptions::default()
    }
}

/// Read `path` buffered and mapped (strict and not); both must agree. Returns the buffered
/// outcome (non-strict) and whether the mapped read really used a mapping.
fn both(path: &Path, ctx: &str) -> (Read, bool) {
    let mut first = None;
    let mut mapped_any = false;
    for strict in [false, true] {
        let (buffered, was_mapped) = read_input(input::open_path(path), options(strict, false));
        assert!(!was_mapped, "{ctx}: mapped without the option");
        let (mapped, was_mapped) = read_input(input::open_path(path), options(strict, true));
        assert_eq!(mapped, buffered, "{ctx}, strict {strict}");
        mapped_any |= was_mapped;
        first.get_or_insert(buffered);
    }
    (first.expect("read twice"), mapped_any)
}

fn frame(rng: &mut Rng, wire: u32, snaplen: u32) -> Vec<u8> {
    let mut f = Vec::new();
    let (s, d) = (rng.below(4) as u16, rng.below(4) as u16);
    TcpSegment::between_hosts(s, d, 5000, 6000)
        .write_frame(wire, snaplen, &mut f)
        .expect("frame");
    f
}

fn gen_pcap(rng: &mut Rng, n: usize) -> Vec<u8> {
    let snaplen = [65535, 96][rng.below(2) as usize];
    let opts = PcapOptions {
        byte_order: if rng.below(2) == 0 {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        },
        nanos: rng.below(2) == 0,
        linktype: 1,
        snaplen,
    };
    let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..n {
        ts += rng.below(50_000) as i64;
        let wire = 66 + rng.below(1449) as u32;
        let f = frame(rng, wire, snaplen);
        w.write_packet(ts, wire, &f).expect("packet");
    }
    w.finish().expect("finish")
}

fn gen_pcapng(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new());
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..1 + rng.below(2) {
        let order = if rng.below(2) == 0 {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        };
        w.section(order, Some("mmap test")).expect("shb");
        let res = [TsResolution::Pow10(6), TsResolution::Pow10(9)][rng.below(2) as usize];
        w.interface(1, 0, res, 0, Some("eth0")).expect("idb");
        w.interface(1, 128, res, 0, Some("eth1")).expect("idb");
        for _ in 0..n {
            ts += rng.below(50_000) as i64;
            let kind = rng.below(20);
            // Simple packets belong to interface 0 (no snaplen).
            let iface = if kind == 0 { 0 } else { rng.below(2) as u32 };
            let wire = 66 + rng.below(1449) as u32;
            let f = frame(rng, wire, if iface == 1 { 128 } else { 0 });
            match kind {
                0 => w.simple_packet(wire, &f).expect("spb"),
                1 => w
                    .interface_statistics(iface, 0, &Default::default())
                    .expect("isb"),
                2 => w.custom(true, 32473, &f[..8]).expect("custom"),
                _ => w.enhanced_packet(iface, ts, wire, &f).expect("epb"),
            }
        }
    }
    w.finish().expect("finish")
}

/// Offsets of the records (pcap) or blocks (pcapng) after the file header.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let rd = |at: usize, big: bool| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let mut out = Vec::new();
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        let mut at = 0;
        let mut big = false;
        while let Some(kind) = rd(at, false) {
            if kind == 0x0a0d_0d0a {
                big = bytes.get(at + 8..at + 12) == Some(&[0x1a, 0x2b, 0x3c, 0x4d][..]);
            }
            let Some(len) = rd(at + 4, big) else { break };
            out.push(at);
            at += len as usize;
        }
    } else {
        let big = bytes.starts_with(&[0xa1, 0xb2]);
        let mut at = 24;
        while let Some(caplen) = rd(at + 8, big) {
            out.push(at);
            at += 16 + caplen as usize;
        }
    }
    out
}

#[test]
fn mapped_reads_equal_buffered_reads_on_generated_and_damaged_files() {
    let dir = temp_dir();
    let mut rng = Rng(0x3a9);
    let (mut truncated, mut corrupt, mut mapped, mut packets) = (0, 0, 0, 0);
    for case in 0..40 {
        let pcapng = case % 2 == 0;
        // Some files far larger than the 1 MiB read buffer, so that the buffered read compacts
        // and refills while the mapped one never does.
        let n = if case % 5 == 0 {
            6000
        } else {
            1 + rng.below(300) as usize
        };
        let good = if pcapng {
            gen_pcapng(&mut rng, n)
        } else {
            gen_pcap(&mut rng, n)
        };
        let offsets = record_offsets(&good);
        assert!(offsets.len() > 1, "case {case}: no records found");
        let pick = |rng: &mut Rng| offsets[1 + rng.below(offsets.len() as u64 - 1) as usize];
        let mut variants: Vec<(String, Vec<u8>)> = vec![("intact".into(), good.clone())];
        // Cut inside a record (header or body), and inside the file header.
        let at = pick(&mut rng) + 1 + rng.below(20) as usize;
        variants.push((
            format!("cut at {at}"),
            good[..at.min(good.len() - 1)].to_vec(),
        ));
        variants.push((
            "cut in header".into(),
            good[..1 + rng.below(20) as usize].to_vec(),
        ));
        // A length that cannot be right: pcapng total length not a multiple of 4 or too big;
        // pcap captured length above the limit.
        let at = pick(&mut rng);
        let mut bad = good.clone();
        let field = if pcapng { at + 4 } else { at + 8 };
        let value: u32 = [13, 0xffff_fff0, 70 << 20][rng.below(3) as usize];
        bad[field..field + 4].copy_from_slice(&value.to_le_bytes());
        if bytes_big(&good, pcapng, at) {
            bad[field..field + 4].copy_from_slice(&value.to_be_bytes());
        }
        variants.push((format!("bad length at {at}"), bad));
        // Random damage.
        let mut bad = good.clone();
        for _ in 0..3 {
            let i = rng.below(bad.len() as u64) as usize;
            bad[i] = rng.next() as u8;
        }
        variants.push(("random bytes".into(), bad));
        for (i, (what, bytes)) in variants.into_iter().enumerate() {
            let path = dir.join(format!("case{case}-{i}.cap"));
            std::fs::write(&path, &bytes).expect("write");
            let ctx = format!(
                "case {case} ({}), {what}",
                if pcapng { "pcapng" } else { "pcap" }
            );
            let (out, was_mapped) = both(&path, &ctx);
            mapped += usize::from(was_mapped);
            packets += out.packets.len();
            truncated += usize::from(out.warnings.iter().any(|w| w.kind == ErrorKind::Truncated));
            corrupt += usize::from(
                out.opened
                    && matches!(
                        &out.error,
                        Some(e) if matches!(e.kind, ErrorKind::Corrupt | ErrorKind::LimitExceeded)
                    ),
            );
            std::fs::remove_file(&path).expect("remove");
        }
    }
    // The cases must reach the mapping, the packets, truncation and corrupt lengths.
    assert!(mapped >= 190, "mapped {mapped} times");
    assert!(packets > 50_000, "{packets} packets");
    assert!(truncated >= 40, "{truncated} truncation warnings");
    assert!(corrupt >= 30, "{corrupt} corrupt-length errors");
}

/// The byte order of the block at `at` (pcapng) or of the file (pcap).
fn bytes_big(bytes: &[u8], pcapng: bool, at: usize) -> bool {
    if !pcapng {
        return bytes.starts_with(&[0xa1, 0xb2]);
    }
    // The byte-order magic of the last section header before `at`.
    record_offsets(bytes)
        .into_iter()
        .take_while(|&o| o <= at)
        .filter(|&o| bytes.get(o..o + 4) == Some(&[0x0a, 0x0d, 0x0d, 0x0a][..]))
        .last()
        .is_some_and(|o| bytes.get(o + 8..o + 12) == Some(&[0x1a, 0x2b, 0x3c, 0x4d][..]))
}

#[test]
fn what_cannot_be_mapped_is_read_buffered_with_the_same_result() {
    let dir = temp_dir();
    let mut rng = Rng(77);
    let plain = gen_pcapng(&mut rng, 2000);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let zst = zstd::stream::encode_all(Cursor::new(&plain), 1).expect("zstd");
    let (want, _) = read_input(
        input::from_reader(Box::new(Cursor::new(plain.clone())), None),
        options(false, false),
    );
    assert!(want.packets.len() > 1000);
    for (name, bytes) in [("gz", &gz), ("zst", &zst)] {
        let path = dir.join(format!("fallback.pcapng.{name}"));
        std::fs::write(&path, bytes).expect("write");
        let (got, was_mapped) = read_input(input::open_path(&path), options(false, true));
        assert!(!was_mapped, "{name} file mapped");
        assert_eq!(got, want, "{name}");
        // A compressed file cut short: the same warning as without the option.
        std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
        let (cut, was_mapped) = read_input(input::open_path(&path), options(false, true));
        assert!(!was_mapped);
        assert_eq!(
            cut,
            read_input(input::open_path(&path), options(false, false)).0
        );
        assert!(
            cut.warnings.iter().any(|w| w.kind == ErrorKind::Truncated),
            "{name}"
        );
    }
    // A reader (stdin, a socket, a Python file object): nothing to map.
    let (got, was_mapped) = read_input(
        input::from_reader(Box::new(Cursor::new(plain.clone())), None),
        options(false, true),
    );
    assert!(!was_mapped);
    assert_eq!(got, want);
    // A special file and an empty file: the same error either way.
    let empty = dir.join("empty.pcap");
    std::fs::write(&empty, b"").expect("write");
    for path in [Path::new("/dev/null"), empty.as_path()] {
        let (a, _) = read_input(input::open_path(path), options(false, false));
        let (b, was_mapped) = read_input(input::open_path(path), options(false, true));
        assert!(!was_mapped);
        assert_eq!(a, b, "{}", path.display());
        assert!(!a.opened);
        assert_eq!(
            a.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::NotACapture)
        );
    }
    // A file that is not a capture at all: same error, same offset.
    let junk = dir.join("junk.pcap");
    std::fs::write(&junk, vec![0x42u8; 5000]).expect("write");
    let (a, _) = both(&junk, "junk");
    assert!(!a.opened && a.error.is_some());
}

#[test]
fn scans_of_a_mapped_file_equal_buffered_scans() {
    let dir = temp_dir();
    let mut rng = Rng(5);
    for (i, pcapng) in [(0, true), (1, false)] {
        let bytes = if pcapng {
            gen_pcapng(&mut rng, 20_000)
        } else {
            gen_pcap(&mut rng, 20_000)
        };
        let path = dir.join(format!("scan{i}.cap"));
        std::fs::write(&path, bytes).expect("write");
        let config = ScanConfig {
            windows_ns: vec![1_000, 100_000, 10_000_000, 1_000_000_000],
            closure: Closure::HalfOpen,
            rates_bps: vec![1_000_000_000, 10_000_000_000],
            bins_ns: vec![1_000_000],
            by: vec![By::All, By::Pair, By::Interface],
            reorder_horizon_ns: 0,
            late: LatePolicy::Error,
            ..ScanConfig::default()
        };
        let scan = |mmap: bool, threads: usize| {
            let reader =
                CaptureReader::new(input::open_path(&path).expect("open"), options(false, mmap))
                    .expect("reader");
            assert_eq!(reader.is_mapped(), mmap);
            pipeline::scan_threads(
                &mut [reader],
                config.clone(),
                SizeKind::Wire,
                threads,
                &mut |_| Ok(()),
            )
            .expect("scan")
        };
        let want = scan(false, 1);
        assert!(want.1.counted > 10_000);
        for threads in [1, 2] {
            let got = scan(true, threads);
            assert_eq!(got.0.envelope, want.0.envelope, "{i} {threads}");
            assert_eq!(got.0.backlog, want.0.backlog, "{i} {threads}");
            assert_eq!(got.0.series, want.0.series, "{i} {threads}");
            assert_eq!(got.0.groups, want.0.groups, "{i} {threads}");
            assert_eq!(got.1, want.1, "{i} {threads}");
        }
    }
}
