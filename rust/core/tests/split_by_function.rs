//! A scan split by function (`ParallelScanner::by_function`: the reading thread reorders once and
//! keeps the rates and bins its reading leaves room for, a worker scans the windows from the
//! packets handed on in order) gives exactly the single-threaded result, and `chunked::by_function`
//! chooses it from the capture alone: one plain file of small records, the aggregate, two
//! threads.

mod engine_util;
mod scratch;

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::{By, ScanConfig, ScanOutput};
use burstcore::parallel::{split_by_function, ParallelScanner, Reading};
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::{PcapOptions, PcapWriter};
use engine_util::{assert_same_outcome, random_config, shuffle_within, single, trace, Pkt, Rng};
use scratch::Scratch;
use std::cell::Cell;
use std::path::Path;

/// Split by function; `lean`: pushed as the reading loop pushes a packet without headers.
fn by_function(
    config: ScanConfig,
    arrivals: &[Pkt],
    captured_per_packet: u64,
    lean: bool,
) -> burstcore::error::Result<ScanOutput> {
    let captured = Cell::new(0u64);
    std::thread::scope(|scope| {
        let mut s = ParallelScanner::by_function(scope, config, &captured, Reading::default())?;
        for p in arrivals {
            captured.set(captured.get() + captured_per_packet);
            let pushed = if lean {
                s.push_lean(p.ts, p.size, p.iface)
            } else {
                s.push(&p.arrival())
            };
            if let Err(e) = pushed {
                return Err(s.fail(e));
            }
        }
        s.finish()
    })
}

#[test]
fn by_function_equals_single_on_random_traces() {
    let mut rng = Rng(0xF0_0C7_10E);
    let mut split = 0;
    for case in 0..300 {
        // Long enough for several batches of 4,096 handed on.
        let sorted = trace(&mut rng, 20_000);
        let cfg = random_config(&mut rng, vec![By::All]);
        let arrivals = shuffle_within(&mut rng, &sorted, cfg.reorder_horizon_ns + 3);
        let per_packet = [0, 64, 1_500, 100_000][rng.below(4) as usize];
        let plan = split_by_function(&cfg, Reading::default());
        split += usize::from(plan.is_some());
        let want = single(cfg.clone(), &arrivals);
        let got = by_function(cfg.clone(), &arrivals, per_packet, case % 2 == 0);
        assert_same_outcome(want, got, "by function", case);
    }
    // Most configs are split (the others scan on the reading thread alone).
    assert!(split > 150, "{split} of 300 split");
}

#[test]
fn the_reading_thread_keeps_the_rates_and_no_window_on_small_records() {
    // The benchmark's 20 windows and 8 rates at snaplen 128 (107 captured bytes a packet in the
    // pcap, 124 in the pcapng): every window on the worker, the rates on the reading thread.
    // With the two shortest windows it kept before, the reading thread was the slower by a
    // fifth of its time (benches/RESULTS.md, perf-dh). Every share of every config is checked
    // in split_ordered.rs.
    let mut windows: Vec<i64> = vec![250_000, 1_000_000_000];
    for e in 3..9 {
        for m in [1, 2, 5] {
            windows.push(m * 10i64.pow(e));
        }
    }
    let bench = ScanConfig::default()
        .with_windows_ns(windows.clone())
        .with_rates_bps((1..=8).map(|r| r * 1_000_000_000).collect());
    for captured_per_packet in [107.0, 124.0] {
        let reading = Reading {
            captured_per_packet,
            ..Reading::default()
        };
        let plan = split_by_function(&bench, reading).expect("split");
        let local = plan.local.expect("local");
        assert!(local.windows_ns.is_empty(), "{:?}", local.windows_ns);
        assert_eq!(local.rates_bps.len(), 8);
        assert_eq!(plan.workers[0][0].windows_ns.len(), windows.len());
    }
}

/// A pcap of `packets` records of `captured` bytes each, 1 µs apart.
fn write_pcap(path: &Path, packets: usize, captured: u32) {
    let mut options = PcapOptions::default();
    options.snaplen = captured;
    let mut w = PcapWriter::new(Vec::new(), options).expect("header");
    let data = vec![0u8; captured as usize];
    for i in 0..packets {
        let ts = 1_700_000_000_000_000_000 + i as i64 * 1_000;
        w.write_packet(ts, 1_514, &data).expect("record");
    }
    std::fs::write(path, w.finish().expect("finish")).expect("write");
}

fn open(path: &Path) -> CaptureReader {
    let input = burstcore::input::open_path(path).expect("open");
    CaptureReader::new(input, ReadOptions::default()).expect("reader")
}

fn bench_config() -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 10_000, 1_000_000])
        .with_rates_bps(vec![1_000_000_000, 10_000_000_000])
}

#[test]
fn small_records_are_split_by_function_full_frames_in_time_chunks() {
    // Two threads whatever this machine's cores.
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let dir = Scratch::new("split-by-function");
    // 128 B captured + 16 B of record header, and full 1,514 B frames; both past the probe.
    let small = dir.join("snap128.pcap");
    let full = dir.join("full.pcap");
    write_pcap(&small, 20_000, 128);
    write_pcap(&full, 2_000, 1_514);
    let cfg = bench_config();
    assert!(burstcore::chunked::by_function(&[open(&small)], &cfg, 2));
    assert!(!burstcore::chunked::by_function(&[open(&full)], &cfg, 2));
    // Not for one thread, several files, a grouping by key, or a config with nothing to share.
    assert!(!burstcore::chunked::by_function(&[open(&small)], &cfg, 1));
    let two = [open(&small), open(&small)];
    assert!(!burstcore::chunked::by_function(&two, &cfg, 2));
    let by_pair = cfg.clone().with_by(vec![By::All, By::Pair]);
    assert!(!burstcore::chunked::by_function(
        &[open(&small)],
        &by_pair,
        2
    ));
    let rates_only = cfg.clone().with_windows_ns(vec![]);
    assert!(!burstcore::chunked::by_function(
        &[open(&small)],
        &rates_only,
        2
    ));

    // And the scan that takes that way gives the one-thread result.
    let scan = |threads| {
        let (out, acc) = pipeline::scan_threads(
            &mut [open(&small)],
            cfg.clone(),
            SizeKind::Wire,
            threads,
            &mut |_| Ok(()),
        )
        .expect("scan");
        (out.envelope, out.backlog, acc.counted)
    };
    assert_eq!(scan(1), scan(2));
}
