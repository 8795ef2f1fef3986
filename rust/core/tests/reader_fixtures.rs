//! Hand-made byte fixtures for the capture reader: each builds a tiny capture with known
//! contents and checks what comes out, including every way it can be cut or damaged.

mod reader_util;

use burstcore::capture::{ReadOptions, TsResolution};
use burstcore::ErrorKind;
use reader_util::{read_bytes, Read};
use std::io::Write;

fn put32(v: &mut Vec<u8>, x: u32, big: bool) {
    v.extend_from_slice(&if big {
        x.to_be_bytes()
    } else {
        x.to_le_bytes()
    });
}

fn put16(v: &mut Vec<u8>, x: u16, big: bool) {
    v.extend_from_slice(&if big {
        x.to_be_bytes()
    } else {
        x.to_le_bytes()
    });
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

fn opt(code: u16, value: &[u8], big: bool) -> Vec<u8> {
    let mut v = Vec::new();
    put16(&mut v, code, big);
    put16(&mut v, value.len() as u16, big);
    v.extend_from_slice(value);
    pad4(&mut v);
    v
}

fn block(ty: u32, body: &[u8], big: bool) -> Vec<u8> {
    let mut b = body.to_vec();
    pad4(&mut b);
    let len = (b.len() + 12) as u32;
    let mut v = Vec::new();
    put32(&mut v, ty, big);
    put32(&mut v, len, big);
    v.extend_from_slice(&b);
    put32(&mut v, len, big);
    v
}

fn shb(big: bool, version: (u16, u16)) -> Vec<u8> {
    let mut b = Vec::new();
    put32(&mut b, 0x1A2B_3C4D, big);
    put16(&mut b, version.0, big);
    put16(&mut b, version.1, big);
    b.extend_from_slice(&[0xff; 8]);
    block(0x0A0D_0D0A, &b, big)
}

fn idb(big: bool, linktype: u16, snaplen: u32, options: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    put16(&mut b, linktype, big);
    put16(&mut b, 0, big);
    put32(&mut b, snaplen, big);
    for o in options {
        b.extend_from_slice(o);
    }
    if !options.is_empty() {
        b.extend_from_slice(&[0; 4]);
    }
    block(1, &b, big)
}

fn epb(big: bool, iface: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
    let mut b = Vec::new();
    put32(&mut b, iface, big);
    put32(&mut b, (ts >> 32) as u32, big);
    put32(&mut b, ts as u32, big);
    put32(&mut b, data.len() as u32, big);
    put32(&mut b, orig, big);
    b.extend_from_slice(data);
    block(6, &b, big)
}

fn spb(big: bool, data: &[u8], orig: u32) -> Vec<u8> {
    let mut b = Vec::new();
    put32(&mut b, orig, big);
    b.extend_from_slice(data);
    block(3, &b, big)
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A classic pcap file; records are (secs, sub, data, orig_len).
fn pcap(big: bool, nanos: bool, modified: bool, records: &[(u32, u32, Vec<u8>, u32)]) -> Vec<u8> {
    let magic: u32 = if modified {
        0xa1b2_cd34
    } else if nanos {
        0xa1b2_3c4d
    } else {
        0xa1b2_c3d4
    };
    let mut v = Vec::new();
    put32(&mut v, magic, big);
    put16(&mut v, 2, big);
    put16(&mut v, 4, big);
    put32(&mut v, 0, big);
    put32(&mut v, 0, big);
    put32(&mut v, 65535, big);
    put32(&mut v, 1, big);
    for (s, sub, data, orig) in records {
        put32(&mut v, *s, big);
        put32(&mut v, *sub, big);
        put32(&mut v, data.len() as u32, big);
        put32(&mut v, *orig, big);
        if modified {
            v.extend_from_slice(&[0; 8]);
        }
        v.extend_from_slice(data);
    }
    v
}

fn strict() -> ReadOptions {
    ReadOptions::default().with_strict(true)
}

fn clean(r: &Read) {
    assert!(r.error.is_none(), "unexpected error {:?}", r.error);
    assert!(
        r.warnings.is_empty(),
        "unexpected warnings {:?}",
        r.warnings
    );
}

#[test]
fn power_of_two_resolution() {
    let big = false;
    let raw = (1_340_954_905u64 << 8) + 3;
    let mut f = shb(big, (1, 0));
    f.extend(idb(big, 1, 0, &[opt(9, &[0x88], big)]));
    f.extend(epb(big, 0, raw, &payload(60, 1), 60));
    let r = read_bytes(&f, ReadOptions::default());
    clean(&r);
    assert_eq!(r.interfaces[0].resolution, TsResolution::Pow2(8));
    // 3/256 s = 11718750 ns exactly.
    assert_eq!(r.packets[0].ts_ns, Some(1_340_954_905_011_718_750));
}

/// Odd-sized and repeated if_tsresol / if_tsoffset options, read as tshark 4.0 reads them: the
/// first of the specified size (1 byte, 8 bytes) counts, the others are ignored. Expected times
/// from the pcapng definition by hand, each checked against tshark 4.0.17's frame.time_epoch.
#[test]
fn odd_sized_and_repeated_time_options_follow_tshark() {
    let raw = 1_500_000_000u64;
    let off = |s: i64, big: bool| {
        if big {
            s.to_be_bytes().to_vec()
        } else {
            s.to_le_bytes().to_vec()
        }
    };
    for big in [false, true] {
        let cases: Vec<(&str, Vec<Vec<u8>>, i64)> = vec![
            // 2 bytes: not an if_tsresol; µs, the default (tshark: 1500.000000000).
            (
                "tsresol of 2 bytes",
                vec![opt(9, &[9, 0], big)],
                1_500_000_000_000,
            ),
            // The first counts (tshark: 1500000.000000000, ms).
            (
                "two tsresol",
                vec![opt(9, &[3], big), opt(9, &[9], big)],
                1_500_000_000_000_000,
            ),
            // An odd-sized one does not count as the first (tshark: 1500000.000000000).
            (
                "tsresol of 2 bytes, then 1",
                vec![opt(9, &[9, 0], big), opt(9, &[3], big)],
                1_500_000_000_000_000,
            ),
            // 9 bytes: not an if_tsoffset (tshark: 1500.000000000).
            (
                "tsoffset of 9 bytes",
                vec![opt(14, &[off(100, big), vec![0]].concat(), big)],
                1_500_000_000_000,
            ),
            // The first counts (tshark: 1600.000000000).
            (
                "two tsoffset",
                vec![opt(14, &off(100, big), big), opt(14, &off(7, big), big)],
                1_600_000_000_000,
            ),
            // An odd-sized one does not count as the first (tshark: 1507.000000000).
            (
                "tsoffset of 4 bytes, then 8",
                vec![opt(14, &[5, 0, 0, 0], big), opt(14, &off(7, big), big)],
                1_507_000_000_000,
            ),
        ];
        for (what, options, want) in cases {
            let mut f = shb(big, (1, 0));
            f.extend(idb(big, 1, 0, &options));
            f.extend(epb(big, 0, raw, &payload(60, 1), 60));
            let r = read_bytes(&f, ReadOptions::default());
            clean(&r);
            assert_eq!(r.packets[0].ts_ns, Some(want), "{what}, big endian {big}");
        }
    }
}

#[test]
fn negative_ts_offset_and_nanosecond_resolution() {
    for big in [false, true] {
        let mut f = shb(big, (1, 0));
        let offset: i64 = -100;
        let off_bytes = if big {
            offset.to_be_bytes()
        } else {
            offset.to_le_bytes()
        };
        f.extend(idb(
            big,
            1,
            0,
            &[opt(9, &[9], big), opt(14, &off_bytes, big)],
        ));
        f.extend(epb(big, 0, 5, &payload(10, 2), 10));
        f.extend(epb(big, 0, 250_000_000_000, &payload(10, 3), 10));
        let r = read_bytes(&f, ReadOptions::default());
        clean(&r);
        assert_eq!(r.interfaces[0].ts_offset_s, -100);
        assert_eq!(r.packets[0].ts_ns, Some(5 - 100_000_000_000));
        assert_eq!(r.packets[1].ts_ns, Some(150_000_000_000));
    }
}

#[test]
fn mixed_byte_order_sections_number_interfaces_globally() {
    let mut f = shb(false, (1, 0));
    f.extend(idb(false, 1, 0, &[opt(2, b"eth0", false)]));
    f.extend(idb(false, 0, 0, &[]));
    f.extend(epb(false, 1, 1_000_000, &payload(20, 4), 30));
    f.extend(shb(true, (1, 0)));
    f.extend(idb(true, 101, 64, &[opt(2, b"raw", true)]));
    f.extend(epb(true, 0, 2_000_000, &payload(40, 5), 40));
    f.extend(spb(true, &payload(100, 6), 100));
    let r = read_bytes(&f, ReadOptions::default());
    clean(&r);
    assert_eq!(r.sections.len(), 2);
    type Row = (u32, u32, u32, u16, Option<i64>, u32, u32);
    let got: Vec<Row> = r
        .packets
        .iter()
        .map(|p| {
            (
                p.interface,
                p.local_id,
                p.section,
                p.linktype,
                p.ts_ns,
                p.cap_len,
                p.wire_len,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 1, 0, 0, Some(1_000_000_000), 20, 30),
            (2, 0, 1, 101, Some(2_000_000_000), 40, 40),
            // SPB: no timestamp, captured length cut at snaplen 64.
            (2, 0, 1, 101, None, 64, 100),
        ]
    );
    assert_eq!(r.packets[2].data, payload(100, 6)[..64].to_vec());
    assert_eq!(r.interfaces[2].name.as_deref(), Some("raw"));
}

/// A small pcapng and pcap, with the stream offsets where each block/record ends.
fn small_files() -> Vec<(Vec<u8>, Vec<usize>, Vec<usize>)> {
    let mut out = Vec::new();
    for big in [false, true] {
        let mut f = shb(big, (1, 0));
        let shb_end = f.len();
        f.extend(idb(big, 1, 0, &[]));
        let header = f.len();
        let mut ends = Vec::new();
        for i in 0..3u8 {
            f.extend(epb(
                big,
                0,
                1_000_000 * u64::from(i),
                &payload(13 + usize::from(i), i),
                99,
            ));
            ends.push(f.len());
        }
        let mut blocks = vec![shb_end, header];
        blocks.extend(&ends);
        out.push((f, ends, blocks));
        let recs: Vec<_> = (0..3u8)
            .map(|i| (7, u32::from(i), payload(9 + usize::from(i), i), 50))
            .collect();
        let p = pcap(big, false, false, &recs);
        let mut ends = Vec::new();
        let mut at = 24;
        for r in &recs {
            at += 16 + r.2.len();
            ends.push(at);
        }
        let mut blocks = vec![24];
        blocks.extend(&ends);
        out.push((p, ends, blocks));
    }
    out
}

#[test]
fn truncation_at_every_offset() {
    for (file, ends, blocks) in small_files() {
        let full = read_bytes(&file, ReadOptions::default());
        clean(&full);
        assert_eq!(full.packets.len(), 3);
        for cut in 0..file.len() {
            let bytes = &file[..cut];
            let r = read_bytes(bytes, ReadOptions::default());
            let s = read_bytes(bytes, strict());
            if cut < 4 {
                assert_eq!(
                    r.error.as_ref().map(|e| e.kind),
                    Some(ErrorKind::NotACapture),
                    "cut {cut}"
                );
                continue;
            }
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(r.packets.len(), whole, "cut {cut}");
            assert_eq!(r.packets[..], full.packets[..whole], "cut {cut}");
            let boundary = blocks.contains(&cut);
            if boundary {
                clean(&r);
                clean(&s);
            } else {
                assert!(r.error.is_none(), "cut {cut}: {:?}", r.error);
                assert_eq!(r.warnings.len(), 1, "cut {cut}");
                assert_eq!(r.warnings[0].kind, ErrorKind::Truncated);
                assert!(
                    r.warnings[0].reason.contains("may still be being written"),
                    "{}",
                    r.warnings[0]
                );
                let block_start = blocks
                    .iter()
                    .rev()
                    .find(|&&e| e <= cut)
                    .copied()
                    .unwrap_or(0);
                assert_eq!(r.warnings[0].offset, Some(block_start as u64), "cut {cut}");
                assert_eq!(
                    s.error.as_ref().map(|e| e.kind),
                    Some(ErrorKind::Truncated),
                    "cut {cut}"
                );
                assert_eq!(s.packets.len(), whole);
            }
        }
    }
}

fn with_len(mut f: Vec<u8>, at: usize, len: u32) -> Vec<u8> {
    f[at..at + 4].copy_from_slice(&len.to_le_bytes());
    f
}

#[test]
fn bad_block_lengths() {
    let mut base = shb(false, (1, 0));
    base.extend(idb(false, 1, 0, &[]));
    let epb_at = base.len();
    base.extend(epb(false, 0, 1, &payload(16, 0), 16));
    for (len, kind) in [
        (0, ErrorKind::Corrupt),
        (8, ErrorKind::Corrupt),
        (13, ErrorKind::Corrupt),
        (0xFFFF_FFF0, ErrorKind::LimitExceeded),
    ] {
        let f = with_len(base.clone(), epb_at + 4, len);
        let r = read_bytes(&f, ReadOptions::default());
        let e = r.error.unwrap_or_else(|| panic!("length {len}: no error"));
        assert_eq!(e.kind, kind, "length {len}: {e}");
        assert_eq!(e.offset, Some(epb_at as u64), "length {len}: {e}");
    }
    // Mismatched trailing length.
    let n = base.len();
    let f = with_len(base.clone(), n - 4, 44);
    let e = read_bytes(&f, ReadOptions::default()).error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::Corrupt, Some(epb_at as u64)),
        "{e}"
    );
    // Captured length larger than the block.
    let f = with_len(base.clone(), epb_at + 8 + 12, 17);
    let e = read_bytes(&f, ReadOptions::default()).error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::Corrupt, Some(epb_at as u64)),
        "{e}"
    );
    // A huge pcap caplen is refused before any allocation.
    let p = pcap(false, false, false, &[(1, 2, payload(8, 0), 8)]);
    let p = with_len(p, 24 + 8, 0xFFFF_0000);
    let e = read_bytes(&p, ReadOptions::default()).error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::LimitExceeded, Some(24)),
        "{e}"
    );
    // An option running past its block.
    let mut f = shb(false, (1, 0));
    let idb_at = f.len();
    let mut body = Vec::new();
    put16(&mut body, 1, false);
    put16(&mut body, 0, false);
    put32(&mut body, 0, false);
    put16(&mut body, 2, false);
    put16(&mut body, 200, false);
    body.extend_from_slice(b"eth0");
    f.extend(block(1, &body, false));
    let e = read_bytes(&f, ReadOptions::default()).error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::Corrupt, Some(idb_at as u64)),
        "{e}"
    );
}

#[test]
fn undeclared_interface_names_the_block() {
    let mut f = shb(false, (1, 0));
    f.extend(idb(false, 1, 0, &[]));
    f.extend(epb(false, 0, 1, &payload(8, 0), 8));
    let bad_at = f.len();
    f.extend(epb(false, 1, 2, &payload(8, 0), 8));
    let r = read_bytes(&f, ReadOptions::default());
    assert_eq!(r.packets.len(), 1);
    let e = r.error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::UndeclaredInterface, Some(bad_at as u64)),
        "{e}"
    );
    assert!(
        e.reason.starts_with(
            "enhanced packet block names interface 1, but its section declares only interface 0: "
        ),
        "{e}"
    );
    // Interfaces restart at each section: interface 0 of a new empty section is undeclared.
    let mut f = shb(false, (1, 0));
    f.extend(idb(false, 1, 0, &[]));
    f.extend(shb(false, (1, 0)));
    let bad_at = f.len();
    f.extend(spb(false, &payload(8, 0), 8));
    let e = read_bytes(&f, ReadOptions::default()).error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::UndeclaredInterface, Some(bad_at as u64)),
        "{e}"
    );
    // An SPB names no interface: the message must not say it does.
    assert!(
        e.reason.starts_with(
            "simple packet block belongs to interface 0 (a simple packet block always does), \
             but its section declares no interface before it: "
        ),
        "{e}"
    );
}

#[test]
fn unsupported_section_version_after_packets() {
    let mut f = shb(false, (1, 0));
    f.extend(idb(false, 1, 0, &[]));
    f.extend(epb(false, 0, 1, &payload(8, 0), 8));
    let bad_at = f.len();
    f.extend(shb(false, (2, 0)));
    f.extend(idb(false, 1, 0, &[]));
    f.extend(epb(false, 0, 1, &payload(8, 0), 8));
    let r = read_bytes(&f, ReadOptions::default());
    assert_eq!(r.packets.len(), 1);
    let e = r.error.unwrap();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::UnsupportedVersion, Some(bad_at as u64)),
        "{e}"
    );
}

#[test]
fn timestamp_out_of_range_and_absurd_resolution() {
    let mut f = shb(false, (1, 0));
    f.extend(idb(false, 1, 0, &[]));
    f.extend(epb(false, 0, u64::MAX, &payload(8, 0), 8));
    f.extend(epb(false, 0, u64::MAX - 1, &payload(8, 0), 8));
    f.extend(epb(false, 0, 1, &payload(8, 0), 8));
    let r = read_bytes(&f, ReadOptions::default());
    assert!(r.error.is_none());
    let ts: Vec<Option<i64>> = r.packets.iter().map(|p| p.ts_ns).collect();
    assert_eq!(ts, vec![None, None, Some(1000)]);
    assert_eq!(r.stats.timestamps_out_of_range, 2);
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].kind, ErrorKind::TimestampOutOfRange);

    for res in [20u8, 0x80 | 64] {
        let mut f = shb(false, (1, 0));
        let at = f.len();
        f.extend(idb(false, 1, 0, &[opt(9, &[res], false)]));
        let e = read_bytes(&f, ReadOptions::default()).error.unwrap();
        assert_eq!(
            (e.kind, e.offset),
            (ErrorKind::Corrupt, Some(at as u64)),
            "{e}"
        );
    }
}

#[test]
fn classic_pcap_variants() {
    let recs = vec![
        (1_700_000_000u32, 123_456u32, payload(30, 1), 60u32),
        (4_294_967_295, 999_999, payload(5, 2), 5),
    ];
    for big in [false, true] {
        for (nanos, modified) in [(false, false), (true, false), (false, true)] {
            let r = read_bytes(&pcap(big, nanos, modified, &recs), ReadOptions::default());
            clean(&r);
            let unit = if nanos { 1 } else { 1000 };
            let got: Vec<(Option<i64>, u32, u32, Vec<u8>)> = r
                .packets
                .iter()
                .map(|p| (p.ts_ns, p.cap_len, p.wire_len, p.data.clone()))
                .collect();
            let want: Vec<(Option<i64>, u32, u32, Vec<u8>)> = recs
                .iter()
                .map(|(s, sub, d, o)| {
                    (
                        Some(i64::from(*s) * 1_000_000_000 + i64::from(*sub) * unit),
                        d.len() as u32,
                        *o,
                        d.clone(),
                    )
                })
                .collect();
            assert_eq!(got, want, "big {big} nanos {nanos} modified {modified}");
        }
    }
}

#[test]
fn not_a_capture_says_what_it_looks_like() {
    let e = read_bytes(b"PK\x03\x04 some zip bytes", ReadOptions::default())
        .error
        .unwrap();
    assert_eq!(e.kind, ErrorKind::NotACapture);
    assert!(
        e.reason.contains("50 4b 03 04") && e.reason.contains("zip"),
        "{e}"
    );
    let e = read_bytes(b"", ReadOptions::default()).error.unwrap();
    assert_eq!(e.kind, ErrorKind::NotACapture);
}

#[test]
fn gzip_and_zstd_wrapped_captures() {
    let (file, _, _) = small_files().remove(0);
    let plain = read_bytes(&file, ReadOptions::default());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&file).unwrap();
    let gz = gz.finish().unwrap();
    let zs = zstd::stream::encode_all(std::io::Cursor::new(&file), 3).unwrap();
    for (bytes, name, magic) in [(gz.clone(), "gzip", 2), (zs, "zstd", 4)] {
        let r = read_bytes(&bytes, ReadOptions::default());
        clean(&r);
        assert_eq!(r.packets, plain.packets, "{name}");
        let input =
            burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes.clone())), None)
                .unwrap();
        let reader = burstcore::capture::CaptureReader::new(input, ReadOptions::default()).unwrap();
        assert_eq!(reader.compression().name(), name);
        // Cut short anywhere: never an error when not strict, a Truncated warning, a prefix of the packets.
        for cut in (1..bytes.len()).step_by(7) {
            let r = read_bytes(&bytes[..cut], ReadOptions::default());
            if let Some(e) = &r.error {
                // Too little left to see the capture's magic: not a capture, and once the
                // compression is known the message says the file is cut off (a small capture
                // fits one compressed block, all lost).
                assert_eq!(e.kind, ErrorKind::NotACapture, "{name} cut {cut}: {e}");
                if cut >= magic {
                    assert!(
                        e.reason.contains("stream ends early"),
                        "{name} cut {cut}: {e}"
                    );
                }
                continue;
            }
            assert_eq!(
                r.packets[..],
                plain.packets[..r.packets.len()],
                "{name} cut {cut}"
            );
            assert!(
                r.warnings.iter().any(|w| w.kind == ErrorKind::Truncated),
                "{name} cut {cut}"
            );
            let s = read_bytes(&bytes[..cut], strict());
            let kind = s.error.map(|e| e.kind);
            assert!(
                matches!(kind, Some(ErrorKind::Truncated | ErrorKind::NotACapture)),
                "{name} cut {cut}: {kind:?}"
            );
        }
    }
    // Damaged deflate data is a decompression error, not a truncation.
    let mut bad = gz.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[20..mid] {
        *b ^= 0xa5;
    }
    let r = read_bytes(&bad, ReadOptions::default());
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::Decompression));
}

/// A file its writer left before its magic number was whole (dumpcap killed at a ring buffer's
/// file switch): among several files a cut file, no packets and a truncation warning at 0
/// (strict: the error); alone, and for bytes no capture starts with, not a capture.
#[test]
fn a_file_cut_before_its_magic_is_a_cut_file_only_among_several() {
    let several = ReadOptions::default().with_one_of_several(true);
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&shb(false, (1, 0))).unwrap();
        // Its 10-byte gzip header only: the writer stopped before any of the capture.
        e.finish().unwrap()[..10].to_vec()
    };
    let cut: [&[u8]; 6] = [
        &[],
        &[0x0a],
        &[0x0a, 0x0d, 0x0d],
        &[0xd4, 0xc3],
        &[0x1f],
        &gz,
    ];
    for bytes in cut {
        let r = read_bytes(bytes, several);
        assert!(r.opened && r.error.is_none(), "{bytes:02x?}: {:?}", r.error);
        assert!(r.packets.is_empty());
        let [w] = r.warnings.as_slice() else {
            panic!("{bytes:02x?}: {:?}", r.warnings)
        };
        assert_eq!((w.kind, w.offset), (ErrorKind::Truncated, Some(0)), "{w}");
        let strict = read_bytes(bytes, several.with_strict(true));
        let e = strict.error.expect("strict: an error");
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, Some(0)), "{e}");
        // Alone: nothing to read it as.
        let alone = read_bytes(bytes, ReadOptions::default());
        assert_eq!(
            alone.error.map(|e| e.kind),
            Some(ErrorKind::NotACapture),
            "{bytes:02x?}"
        );
    }
    assert!(read_bytes(&[], several).warnings[0]
        .to_string()
        .contains("an empty file"));
    for junk in [&b"ab"[..], &[0], b"PK\x03"] {
        let r = read_bytes(junk, several);
        assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::NotACapture));
    }
}

/// `format()` names what the magic number says, and nothing for a file cut before it (no format
/// to name, where it used to give a placeholder pcapng).
#[test]
fn a_readers_format_is_its_magic_numbers_or_none() {
    use burstcore::capture::{ByteOrder, CaptureReader, Format};
    let open = |bytes: &[u8]| {
        let input =
            burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), None)
                .expect("in-memory input");
        CaptureReader::new(input, ReadOptions::default().with_one_of_several(true)).expect("opened")
    };
    assert_eq!(open(&[]).format(), None);
    assert_eq!(open(&[0x0a, 0x0d]).format(), None);
    assert_eq!(open(&shb(true, (1, 0))).format(), Some(&Format::PcapNg));
    let p = open(&pcap(true, true, false, &[]));
    let Some(Format::Pcap {
        byte_order, nanos, ..
    }) = p.format()
    else {
        panic!("{:?}", p.format())
    };
    assert_eq!((*byte_order, *nanos), (ByteOrder::Big, true));
}
