//! A scan shared among threads gives exactly the single-threaded result: random traces (ties,
//! zero and huge sizes, reordering within the horizon, late packets), every grouping, lean and
//! full batches, 2 to 5 threads, and every way the reading cost can deal the shares.

mod engine_util;

use burstcore::engine::{By, ScanConfig, ScanOutput};
use burstcore::parallel::{plan, split_config, ParallelScanner, Reading};
use engine_util::{assert_same_outcome, random_config, shuffle_within, single, trace, Rng};
use std::cell::Cell;

fn config(rng: &mut Rng, by: Vec<By>) -> ScanConfig {
    random_config(rng, by)
        // Now and then few enough groups allowed that a grouping by key fails partway.
        .with_max_groups(if rng.chance(20) {
            1 + rng.below(6) as usize
        } else {
            ScanConfig::DEFAULT_MAX_GROUPS
        })
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_file_filters(Vec::new())
}

fn parallel(
    config: ScanConfig,
    arrivals: &[engine_util::Pkt],
    threads: usize,
    captured_per_packet: u64,
) -> burstcore::error::Result<ScanOutput> {
    let captured = Cell::new(0u64);
    std::thread::scope(|scope| {
        let mut s = ParallelScanner::new(scope, config, threads, &captured, Reading::default())?;
        for p in arrivals {
            captured.set(captured.get() + captured_per_packet);
            if let Err(e) = s.push(&p.arrival()) {
                return Err(s.fail(e));
            }
        }
        s.finish()
    })
}

#[test]
fn parallel_equals_single_on_random_traces() {
    let mut rng = Rng(0x5EED_0F7E);
    let groupings = [
        vec![By::All],
        vec![By::All, By::Interface],
        vec![By::Interface],
        vec![By::All, By::Src, By::Pair],
        vec![By::Src, By::Pair],
        vec![By::Flow5],
        By::EVERY.to_vec(),
    ];
    for case in 0..300 {
        let sorted = trace(&mut rng, 9_000);
        let by = groupings[case % groupings.len()].clone();
        let cfg = config(&mut rng, by);
        let arrivals = shuffle_within(&mut rng, &sorted, cfg.reorder_horizon_ns + 3);
        let threads = 2 + rng.below(4) as usize;
        // From tiny packets (the reading thread takes a share) to jumbo frames (it takes none).
        let per_packet = [0, 64, 1_500, 100_000][rng.below(4) as usize];
        let want = single(cfg.clone(), &arrivals);
        let got = parallel(cfg.clone(), &arrivals, threads, per_packet);
        assert_same_outcome(want, got, "parallel", case);
    }
}

#[test]
fn every_metric_is_dealt_exactly_once() {
    let mut rng = Rng(42);
    for _ in 0..500 {
        let cfg = config(&mut rng, vec![By::All]);
        let threads = 1 + rng.below(8) as usize;
        let per_packet = rng.below(20_000) as f64;
        let reading = Reading {
            captured_per_packet: per_packet,
            decodes: rng.chance(50),
            inflates: rng.chance(50),
        };
        let Some(parts) = split_config(&cfg, threads, reading) else {
            let units = cfg.windows_ns.len() + cfg.rates_bps.len() + cfg.bins_ns.len();
            assert!(threads < 2 || units < 2);
            continue;
        };
        assert!(parts.len() >= 2 && parts.len() <= threads);
        let mut windows: Vec<i64> = parts.iter().flat_map(|p| p.windows_ns.clone()).collect();
        let mut rates: Vec<u64> = parts.iter().flat_map(|p| p.rates_bps.clone()).collect();
        let mut bins: Vec<i64> = parts.iter().flat_map(|p| p.bins_ns.clone()).collect();
        windows.sort_unstable();
        rates.sort_unstable();
        bins.sort_unstable();
        let (mut w, mut r, mut b) = (cfg.windows_ns, cfg.rates_bps, cfg.bins_ns);
        w.sort_unstable();
        r.sort_unstable();
        b.sort_unstable();
        assert_eq!((windows, rates, bins), (w, r, b));
        // Windows stay in runs of neighbouring lengths: no thread's windows interleave another's.
        let mut last = i64::MIN;
        for p in &parts {
            if let (Some(&lo), Some(&hi)) = (p.windows_ns.first(), p.windows_ns.last()) {
                assert!(lo > last && hi >= lo);
                last = hi;
            }
        }
    }
}

/// The benchmark's 20 windows and 8 rates.
fn benchmark_config(by: Vec<By>) -> ScanConfig {
    let mut windows = vec![250_000, 1_000_000_000];
    for e in 3..9 {
        for m in [1, 2, 5] {
            windows.push(m * 10i64.pow(e));
        }
    }
    ScanConfig::default()
        .with_windows_ns(windows)
        .with_rates_bps((1..=8).map(|k| k * 1_000_000_000).collect())
        .with_by(by)
}

#[test]
fn the_reading_thread_keeps_fewer_windows_when_it_decodes_headers() {
    // The metric split at snaplen 128 (123 bytes per packet): decoding every header (for a
    // grouping, or for size="ip") is work the reading thread does besides reading, so it keeps
    // fewer of the shortest windows, and the workers take what it leaves.
    let cfg = benchmark_config;
    // As the pipeline calls it: decoding when a grouping reads headers or the size needs them.
    let kept = |c: &ScanConfig, size_decodes: bool| {
        let reading = Reading {
            captured_per_packet: 123.0,
            decodes: size_decodes || c.reads_headers(),
            inflates: false,
        };
        let parts = split_config(c, 2, reading).expect("split");
        (parts[0].windows_ns.len(), parts[0].rates_bps.len())
    };
    let (lean, _) = kept(&cfg(vec![By::All]), false);
    let (decoding, rates) = kept(&cfg(vec![By::All, By::Pair]), false);
    assert!(
        decoding < lean,
        "{decoding} windows with headers, {lean} without"
    );
    assert!(decoding > 0, "the reading thread still takes a share");
    assert_eq!(rates, 0);
    // An interface is known without headers: no decoding cost.
    assert_eq!(kept(&cfg(vec![By::Interface]), false).0, lean);
    // size="ip" or "payload" on the aggregate decodes every packet too.
    assert_eq!(kept(&cfg(vec![By::All]), true).0, decoding);
}

#[test]
fn a_split_by_grouping_deals_every_metric_of_every_grouping_once() {
    let mut rng = Rng(0x9A17);
    for case in 0..1000 {
        let with_all = case % 2 == 0;
        let mut by: Vec<By> = [By::All, By::Src, By::Pair, By::Flow5, By::Interface]
            .into_iter()
            .filter(|&b| {
                if b == By::All {
                    with_all
                } else {
                    rng.chance(50)
                }
            })
            .collect();
        if !by.iter().any(|b| b.reads_headers()) {
            by.push(By::Dst);
        }
        let cfg = config(&mut rng, by.clone());
        let threads = 2 + rng.below(4) as usize;
        let per_packet = rng.below(20_000) as f64;
        let reading = Reading {
            captured_per_packet: per_packet,
            decodes: true,
            inflates: rng.chance(50),
        };
        let plan = plan(&cfg, threads, reading).expect("a plan");
        // The reading thread looks up no key: it scans the aggregate, or nothing.
        match &plan.local {
            Some(local) => assert!(with_all && local.by == vec![By::All]),
            None => assert!(!with_all),
        }
        assert!(!plan.workers.is_empty() && plan.workers.len() < threads);
        // Every (grouping, metric) exactly once over all the scanners.
        let mut dealt: Vec<(&str, char, i64)> = Vec::new();
        for c in plan.local.iter().chain(plan.workers.iter().flatten()) {
            for &b in &c.by {
                dealt.extend(c.windows_ns.iter().map(|&w| (b.name(), 'w', w)));
                dealt.extend(c.rates_bps.iter().map(|&r| (b.name(), 'r', r as i64)));
                dealt.extend(c.bins_ns.iter().map(|&x| (b.name(), 'b', x)));
            }
        }
        let mut want: Vec<(&str, char, i64)> = Vec::new();
        for &b in &by {
            want.extend(cfg.windows_ns.iter().map(|&w| (b.name(), 'w', w)));
            want.extend(cfg.rates_bps.iter().map(|&r| (b.name(), 'r', r as i64)));
            want.extend(cfg.bins_ns.iter().map(|&x| (b.name(), 'b', x)));
        }
        dealt.sort_unstable();
        want.sort_unstable();
        assert_eq!(dealt, want, "case {case}");
        // Each worker scans every keyed grouping (so all meet the same errors), the aggregate
        // only beside them.
        let keyed: Vec<By> = by.iter().copied().filter(|&b| b != By::All).collect();
        for w in &plan.workers {
            assert_eq!(w[0].by, keyed);
            assert!(w[1..].iter().all(|c| c.by == vec![By::All]));
        }
    }
}

#[test]
fn the_reading_thread_takes_the_aggregate_as_far_as_reading_leaves_room() {
    // By all and pair, on two threads.
    let cfg = benchmark_config(vec![By::All, By::Pair]);
    let local = |per_packet: f64| {
        let reading = Reading {
            captured_per_packet: per_packet,
            decodes: true,
            inflates: false,
        };
        let p = plan(&cfg, 2, reading).expect("a plan");
        let local = p.local.expect("the aggregate on the reading thread");
        local.windows_ns.len() + local.rates_bps.len()
    };
    // Snaplen 128: most of the aggregate; full frames: reading is work enough.
    assert!(local(123.0) > 10, "{}", local(123.0));
    assert_eq!(local(1_500.0), 0);
}

#[test]
fn the_reading_thread_keeps_fewer_windows_when_it_decompresses() {
    // The aggregate alone at snaplen 128: a compressed capture costs the reading thread its
    // decompression too, so the workers take more of the windows.
    let cfg = benchmark_config(vec![By::All]);
    let kept = |inflates: bool| {
        let reading = Reading {
            captured_per_packet: 123.0,
            decodes: false,
            inflates,
        };
        split_config(&cfg, 2, reading).expect("split")[0]
            .windows_ns
            .len()
    };
    let (plain, compressed) = (kept(false), kept(true));
    assert!(
        compressed < plain,
        "{compressed} windows compressed, {plain} plain"
    );
}
