//! The scan of several captures merged by timestamp, and the scan that groups by headers, read
//! each record framed whole in the buffer in their own loop and hand the rest (the end, a cut
//! record, every warning) to `next_packet`. Guard: with a capture cut at every byte of its last
//! records, and at points before, each scan keeps exactly the packets, warnings and offsets
//! that reading each capture alone with `next_packet` gives, and the metrics of their merge
//! computed from those packets' columns.

use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::engine::{By, EnvelopeRow, ScanConfig};
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::frames::TcpSegment;
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::write_capture;
use scratch::Scratch;

/// `n` packets of 66–1,514 bytes on the wire, captured at most 96, 0–20 µs apart from `ts0`
/// among four hosts: short records, so that many cuts fall in the last few.
fn generate(n: usize, seed: u64, ts0: i64, pcapng: bool) -> Vec<u8> {
    let mut x = seed;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut ts = ts0;
    let frames: Vec<(i64, u32, Vec<u8>)> = (0..n)
        .map(|_| {
            ts += next(20_000) as i64;
            let wire = 66 + next(1449) as u32;
            let mut f = Vec::new();
            TcpSegment::between_hosts(next(4) as u16, next(4) as u16, 5000, 6000)
                .write_frame(wire, 96, &mut f)
                .expect("frame");
            (ts, wire, f)
        })
        .collect();
    write_capture(&frames, pcapng, ByteOrder::Little, true)
}

fn open(path: &Path, mmap: bool) -> CaptureReader {
    let options = ReadOptions::default().with_mmap(mmap);
    CaptureReader::new(input::open_path(path).expect("open"), options).expect("reader")
}

type Seen = (Vec<(i64, u64)>, Vec<(Option<u64>, String)>);

/// Every packet's (timestamp, wire length) and the warnings, read one by one with
/// `next_packet` (the out-of-line read, no scan).
fn read_alone(path: &Path, mmap: bool) -> Seen {
    let mut r = open(path, mmap);
    let mut packets = Vec::new();
    while let Some(p) = r.next_packet().expect("a cut tail is a warning") {
        packets.push((p.ts_ns.expect("stamped"), u64::from(p.wire_len)));
    }
    (packets, warnings(&r))
}

fn warnings(r: &CaptureReader) -> Vec<(Option<u64>, String)> {
    r.warnings()
        .iter()
        .map(|w| (w.offset, w.reason.clone()))
        .collect()
}

fn config(by: Vec<By>) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 50_000, 1_000_000])
        .with_rates_bps(vec![2_000_000_000, 20_000_000_000])
        .with_by(by)
}

fn aggregate(rows: &[EnvelopeRow]) -> Vec<EnvelopeRow> {
    rows.iter().filter(|r| r.by == By::All).cloned().collect()
}

#[test]
fn merged_and_decoded_scans_read_every_cut_as_next_packet_does() {
    let dir = Scratch::new("merged_reads");
    const TS0: i64 = 1_700_000_000_000_000_000;
    for pcapng in [false, true] {
        let a = generate(300, 0x9E37_79B9_7F4A_7C15, TS0, pcapng);
        let b = generate(200, 0xD1B5_4A32_D192_ED03, TS0 + 5_000, pcapng);
        let a_path = dir.join("a");
        std::fs::write(&a_path, &a).expect("write");
        // Every byte of the last ~400 (several records, and the end itself), then every
        // 37th back to the file header, so that cuts land both ways round a record.
        let cuts = (b.len() - 400..=b.len()).chain((40..b.len() - 400).step_by(37));
        for cut in cuts {
            let b_path = dir.join("b");
            std::fs::write(&b_path, &b[..cut]).expect("write");
            for mmap in [false, true] {
                let (a_seen, a_warned) = read_alone(&a_path, mmap);
                let (b_seen, b_warned) = read_alone(&b_path, mmap);
                // The merge's order: by timestamp, ties to the capture listed first.
                let mut merged: Vec<(i64, usize, u64)> = a_seen
                    .iter()
                    .map(|&(t, s)| (t, 0, s))
                    .chain(b_seen.iter().map(|&(t, s)| (t, 1, s)))
                    .collect();
                merged.sort_by_key(|&(t, file, _)| (t, file));
                let ts: Vec<i64> = merged.iter().map(|m| m.0).collect();
                let sizes: Vec<u64> = merged.iter().map(|m| m.2).collect();
                let (want, _) =
                    pipeline::scan_columns(&ts, &sizes, None, config(vec![By::All]), &mut |_| {
                        Ok(())
                    })
                    .expect("columns");
                let what = format!("pcapng {pcapng}, cut {cut} of {}, mmap {mmap}", b.len());
                // Both captures merged without headers, then with; and b alone by headers.
                let scans: [(&[&Path], Vec<By>); 3] = [
                    (&[&a_path, &b_path], vec![By::All]),
                    (&[&a_path, &b_path], vec![By::All, By::Pair]),
                    (&[&b_path], vec![By::Pair, By::All]),
                ];
                for (paths, by) in scans {
                    let mut readers: Vec<CaptureReader> =
                        paths.iter().map(|p| open(p, mmap)).collect();
                    let cfg = config(by.clone());
                    let (out, acc) =
                        pipeline::scan(&mut readers, cfg, SizeKind::Wire, &mut |_| Ok(()))
                            .unwrap_or_else(|e| panic!("{what}, {by:?}: {e}"));
                    let what = format!("{what}, {} captures by {by:?}", paths.len());
                    let b_reader = readers.last().expect("b");
                    assert_eq!(warnings(b_reader), b_warned, "{what}");
                    if paths.len() == 2 {
                        assert_eq!(warnings(&readers[0]), a_warned, "{what}");
                        assert_eq!(acc.packets_read, merged.len() as u64, "{what}");
                        assert_eq!(aggregate(&out.envelope), want.envelope, "{what}");
                        let backlog: Vec<_> =
                            out.backlog.iter().filter(|r| r.by == By::All).collect();
                        assert_eq!(backlog, want.backlog.iter().collect::<Vec<_>>(), "{what}");
                    } else {
                        assert_eq!(acc.packets_read, b_seen.len() as u64, "{what}");
                        let bytes: u64 = b_seen.iter().map(|p| p.1).sum();
                        let pairs: u64 = out
                            .groups
                            .iter()
                            .filter(|g| g.by == By::Pair)
                            .map(|g| g.bytes)
                            .sum();
                        assert_eq!(pairs, bytes, "{what}");
                    }
                }
            }
        }
    }
}
