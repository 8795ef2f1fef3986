//! A scan the time chunks do not take (a time range, a filter, compressed or streamed input),
//! for the aggregate alone on two threads, is split by function (`parallel::orders_once`,
//! `ParallelScanner::by_function`): the reading thread reorders once and keeps no window
//! (`split_by_function`), and the result is exactly the single-threaded one.

mod engine_util;
mod scratch;

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::{BinOrigin, By, ScanConfig, ScanOutput};
use burstcore::parallel::{orders_once, split_by_function, ParallelScanner, Reading};
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::TimeRange;
use engine_util::{assert_same_outcome, random_config, shuffle_within, single, trace, Pkt, Rng};
use scratch::Scratch;
use std::cell::Cell;
use std::path::Path;

/// Split by function as a scan the chunks do not take; `lean`: pushed as the reading loop
/// pushes a packet without headers.
fn ordered(
    config: ScanConfig,
    arrivals: &[Pkt],
    reading: Reading,
    captured_per_packet: u64,
    lean: bool,
) -> burstcore::error::Result<ScanOutput> {
    let captured = Cell::new(0u64);
    std::thread::scope(|scope| {
        let mut s = ParallelScanner::by_function(scope, config, &captured, reading)?;
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
fn ordered_equals_single_on_random_traces() {
    let mut rng = Rng(0x0D_E5_ED);
    let mut split = 0;
    for case in 0..300 {
        // Long enough for several batches of 4,096 handed on.
        let sorted = trace(&mut rng, 20_000);
        let cfg = random_config(&mut rng, vec![By::All]);
        let arrivals = shuffle_within(&mut rng, &sorted, cfg.reorder_horizon_ns + 3);
        let per_packet = [0, 64, 1_500, 100_000][rng.below(4) as usize];
        // Reading that inflates or decodes moves the rates and bins, never a result.
        let reading = Reading {
            captured_per_packet: 0.0,
            decodes: rng.chance(30),
            inflates: rng.chance(50),
        };
        split += usize::from(split_by_function(&cfg, reading).is_some());
        let want = single(cfg.clone(), &arrivals);
        let got = ordered(cfg.clone(), &arrivals, reading, per_packet, case % 2 == 0);
        assert_same_outcome(want, got, "ordered", case);
    }
    assert!(split > 150, "{split} of 300 split");
}

fn bench_windows() -> Vec<i64> {
    let mut windows: Vec<i64> = vec![250_000, 1_000_000_000];
    for e in 3..9 {
        for m in [1, 2, 5] {
            windows.push(m * 10i64.pow(e));
        }
    }
    windows
}

#[test]
fn the_reading_thread_keeps_no_window() {
    let mut rng = Rng(11);
    for _ in 0..500 {
        let cfg = random_config(&mut rng, vec![By::All]);
        let reading = Reading {
            captured_per_packet: rng.below(2_000) as f64,
            decodes: rng.chance(30),
            inflates: rng.chance(50),
        };
        let Some(plan) = split_by_function(&cfg, reading) else {
            let units = cfg.windows_ns.len() + cfg.rates_bps.len() + cfg.bins_ns.len();
            assert!(cfg.windows_ns.is_empty() || units < 2);
            continue;
        };
        let local = plan.local.expect("the reading thread's share");
        let [worker] = &plan.workers[..] else {
            panic!("one worker: {:?}", plan.workers);
        };
        let [worker] = &worker[..] else {
            panic!("one share: {worker:?}");
        };
        assert!(local.windows_ns.is_empty());
        assert_eq!(worker.windows_ns, cfg.windows_ns);
        // Every rate and bin once.
        let mut rates = local.rates_bps.clone();
        rates.extend(&worker.rates_bps);
        rates.sort_unstable();
        let mut want = cfg.rates_bps.clone();
        want.sort_unstable();
        assert_eq!(rates, want);
        let mut bins = local.bins_ns.clone();
        bins.extend(&worker.bins_ns);
        bins.sort_unstable();
        let mut want = cfg.bins_ns.clone();
        want.sort_unstable();
        assert_eq!(bins, want);
    }
    // The benchmark's 20 windows and 8 rates: the rates stay with a reading thread that reads
    // snaplen-128 records (its share then about level with the envelope's), and go to the
    // worker on full frames, where reading alone outweighs the envelope, and mostly when it
    // inflates.
    let bench = ScanConfig::default()
        .with_windows_ns(bench_windows())
        .with_rates_bps((1..=8).map(|r| r * 1_000_000_000).collect());
    let rates_local = |reading| {
        let plan = split_by_function(&bench, reading).expect("split");
        plan.local.expect("local").rates_bps.len()
    };
    let snap128 = Reading {
        captured_per_packet: 107.0,
        ..Reading::default()
    };
    assert_eq!(rates_local(snap128), 8);
    let full = Reading {
        captured_per_packet: 1_047.0,
        ..Reading::default()
    };
    assert_eq!(rates_local(full), 0);
    let inflated = Reading {
        inflates: true,
        ..snap128
    };
    assert!(rates_local(inflated) < 4, "{}", rates_local(inflated));
}

#[test]
fn only_the_aggregate_on_two_threads_orders_once() {
    let cfg = ScanConfig::default()
        .with_windows_ns(vec![1_000, 1_000_000])
        .with_rates_bps(vec![1_000_000_000]);
    assert!(orders_once(&cfg, 2));
    assert!(orders_once(
        &cfg.clone().with_time_range(TimeRange {
            start_ns: Some(0),
            end_ns: None
        }),
        2
    ));
    assert!(!orders_once(&cfg, 1));
    assert!(!orders_once(&cfg, 3));
    assert!(!orders_once(
        &cfg.clone().with_by(vec![By::All, By::Pair]),
        2
    ));
    assert!(!orders_once(&cfg.clone().with_by(vec![By::Interface]), 2));
    assert!(!orders_once(&cfg.clone().with_windows_ns(vec![]), 2));
    assert!(!orders_once(
        &cfg.clone().with_windows_ns(vec![1]).with_rates_bps(vec![]),
        2
    ));
}

/// A pcap of `packets` records of 128 captured bytes, 1 to 1,000 ns apart.
fn write_pcap(path: &Path, packets: usize) {
    let mut options = PcapOptions::default();
    options.snaplen = 128;
    let mut w = PcapWriter::new(Vec::new(), options).expect("header");
    let mut rng = Rng(5);
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..packets {
        ts += 1 + rng.below(1_000) as i64;
        let wire = 64 + rng.below(1_451) as u32;
        let data = vec![0u8; wire.min(128) as usize];
        w.write_packet(ts, wire, &data).expect("record");
    }
    std::fs::write(path, w.finish().expect("finish")).expect("write");
}

#[test]
fn a_time_range_on_two_threads_gives_the_one_thread_result() {
    // Two threads whatever this machine's cores.
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let dir = Scratch::new("split-ordered");
    let path = dir.join("snap128.pcap");
    write_pcap(&path, 30_000);
    let start = 1_700_000_000_000_000_000i64 + 1_000_000;
    let cfg = ScanConfig::default()
        .with_windows_ns(bench_windows())
        .with_rates_bps(vec![1_000_000_000, 10_000_000_000])
        .with_bins_ns(vec![1_000_000])
        .with_bin_origin(BinOrigin::FirstPacket)
        .with_time_range(TimeRange {
            start_ns: Some(start),
            end_ns: Some(start + 10_000_000),
        });
    assert!(orders_once(&cfg, 2));
    let scan = |threads| {
        let input = burstcore::input::open_path(&path).expect("open");
        let reader = CaptureReader::new(input, ReadOptions::default()).expect("reader");
        let (out, acc) = pipeline::scan_threads(
            &mut [reader],
            cfg.clone(),
            SizeKind::Wire,
            threads,
            &mut |_| Ok(()),
        )
        .expect("scan");
        (out.envelope, out.backlog, out.series, acc.counted)
    };
    let one = scan(1);
    assert!(
        one.3 > 1_000 && one.3 < 30_000,
        "{} packets in range",
        one.3
    );
    assert_eq!(one, scan(2));
}
