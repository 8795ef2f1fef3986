//! The reorder buffer: shuffled-within-horizon input gives exactly the results of sorted input;
//! late packets are errors or are dropped and counted, as configured. Expected counts come from a
//! direct simulation of the rule "late iff more than the horizon older than the latest so far".

mod engine_util;

use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::ErrorKind;
use engine_util::{run, shuffle_within, trace, Pkt, Rng};

fn config(horizon: i64, late: LatePolicy) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1, 10, 1000, 1_000_000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![1_000_000_000, 8_000_000_000])
        .with_bins_ns(vec![100, 1_000_000])
        .with_by(vec![By::All, By::Src, By::Vlan])
        .with_reorder_horizon_ns(horizon)
        .with_late(late)
        .with_max_groups(100)
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_bin_origin(Default::default())
        .with_file_filters(Vec::new())
}

/// (packets accepted, reordered, dropped, max lateness) by the rule, for an arrival order.
fn simulate(arrivals: &[Pkt], horizon: i64) -> (Vec<Pkt>, u64, u64, i64) {
    let (mut accepted, mut reordered, mut dropped, mut max_late) = (Vec::new(), 0, 0, 0i64);
    let mut latest: Option<i64> = None;
    for p in arrivals {
        match latest {
            Some(l) if p.ts < l => {
                let lateness = i128::from(l) - i128::from(p.ts);
                max_late = max_late.max(i64::try_from(lateness).unwrap_or(i64::MAX));
                if lateness > i128::from(horizon) {
                    dropped += 1;
                    continue;
                }
                reordered += 1;
            }
            _ => latest = Some(p.ts),
        }
        accepted.push(*p);
    }
    (accepted, reordered, dropped, max_late)
}

fn sorted_stable(p: &[Pkt]) -> Vec<Pkt> {
    let mut s = p.to_vec();
    s.sort_by_key(|p| p.ts);
    s
}

#[test]
fn shuffled_within_horizon_equals_sorted() {
    let mut rng = Rng(0xA1);
    let mut reordered_total = 0;
    for seed in 0..1500 {
        let sorted = trace(&mut rng, 120);
        let horizon = [0, 1, 7, 1000, 1_000_000_000][rng.below(5) as usize];
        let arrivals = shuffle_within(&mut rng, &sorted, horizon);
        let (want, _) = run(config(0, LatePolicy::Error), &sorted).expect("sorted scans");
        let (got, _) = run(config(horizon, LatePolicy::Error), &arrivals)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (_, reordered, dropped, max_late) = simulate(&arrivals, horizon);
        assert_eq!(
            dropped, 0,
            "seed {seed}: the shuffle stays within the horizon"
        );
        assert_eq!(got.envelope, want.envelope, "seed {seed}");
        assert_eq!(got.backlog, want.backlog, "seed {seed}");
        assert_eq!(got.series, want.series, "seed {seed}");
        assert_eq!(got.groups, want.groups, "seed {seed}");
        assert_eq!(got.reorder.reordered, reordered, "seed {seed}");
        assert_eq!(got.reorder.max_lateness_ns, max_late, "seed {seed}");
        assert_eq!(got.reorder.dropped_late, 0, "seed {seed}");
        assert_eq!(want.reorder.reordered, 0, "seed {seed}");
        reordered_total += reordered;
    }
    assert!(
        reordered_total > 1000,
        "the shuffles reordered only {reordered_total} packets"
    );
}

#[test]
fn late_packets_are_dropped_and_counted() {
    let mut rng = Rng(0xA2);
    let mut dropped_total = 0;
    for seed in 0..1500 {
        let sorted = trace(&mut rng, 120);
        let horizon = [0, 5, 1000][rng.below(3) as usize];
        // Shuffle with more than the horizon allows, so some packets are late.
        let arrivals = shuffle_within(&mut rng, &sorted, horizon.max(1) * 10);
        let (accepted, reordered, dropped, max_late) = simulate(&arrivals, horizon);
        let (got, _) = run(config(horizon, LatePolicy::Drop), &arrivals)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (want, _) =
            run(config(0, LatePolicy::Error), &sorted_stable(&accepted)).expect("sorted");
        assert_eq!(got.reorder.dropped_late, dropped, "seed {seed}");
        assert_eq!(got.reorder.reordered, reordered, "seed {seed}");
        assert_eq!(got.reorder.max_lateness_ns, max_late, "seed {seed}");
        assert_eq!(got.envelope, want.envelope, "seed {seed}");
        assert_eq!(got.backlog, want.backlog, "seed {seed}");
        assert_eq!(got.series, want.series, "seed {seed}");
        assert_eq!(got.groups, want.groups, "seed {seed}");
        dropped_total += dropped;
    }
    assert!(
        dropped_total > 1000,
        "only {dropped_total} late packets in the whole test"
    );
}

#[test]
fn late_packet_is_an_error_that_says_how_to_fix_it() {
    let mut rng = Rng(0xA3);
    let mut errors = 0;
    for seed in 0..1500 {
        let sorted = trace(&mut rng, 60);
        let horizon = [0, 3, 1000][rng.below(3) as usize];
        let arrivals = shuffle_within(&mut rng, &sorted, horizon.max(1) * 10);
        let (accepted, _, dropped, _) = simulate(&arrivals, horizon);
        let result = run(config(horizon, LatePolicy::Error), &arrivals);
        if dropped == 0 {
            assert!(
                result.is_ok(),
                "seed {seed}: no late packet, yet {result:?}"
            );
            continue;
        }
        let err = result.expect_err("a late packet must fail the scan");
        // The first late packet is the one named: the first arrival the rule did not accept.
        let first_late = arrivals
            .iter()
            .zip(accepted.iter().map(Some).chain(std::iter::repeat(None)))
            .find(|(a, b)| Some(*a) != *b)
            .map(|(a, _)| *a)
            .expect("some packet was late");
        assert_eq!(err.kind, ErrorKind::OutOfOrder, "seed {seed}");
        assert!(
            err.reason.ends_with(&format!(
                "The late packet: {}",
                burstcore::printable::iso_ns(first_late.ts)
            )),
            "seed {seed}: {err}"
        );
        assert!(
            err.reason.contains(&format!(
                "horizon of {}:",
                burstcore::printable::duration_text(horizon.unsigned_abs())
            )),
            "seed {seed}: {err}"
        );
        assert!(
            err.reason.contains("raise reorder_horizon"),
            "seed {seed}: {err}"
        );
        errors += 1;
    }
    assert!(errors > 300, "only {errors} traces had a late packet");
}

#[test]
fn exactly_at_the_horizon_is_accepted_one_more_is_late() {
    let p = |ts| Pkt::bare(ts, 100);
    let ok = run(
        config(50, LatePolicy::Error),
        &[p(1000), p(950), p(1000), p(950)],
    );
    let (out, _) = ok.expect("50 ns early with a 50 ns horizon is fine");
    assert_eq!(out.reorder.reordered, 2);
    assert_eq!(out.reorder.max_lateness_ns, 50);
    let late = run(config(50, LatePolicy::Error), &[p(1000), p(949)]);
    assert_eq!(
        late.map(|_| ()).map_err(|e| e.kind),
        Err(ErrorKind::OutOfOrder)
    );
    // Equal timestamps are never late, even with no horizon.
    let ties = run(config(0, LatePolicy::Error), &[p(5), p(5), p(5)]);
    assert_eq!(ties.expect("ties are in order").0.reorder.reordered, 0);
    // Extreme timestamps: lateness beyond i64 does not overflow.
    let far = run(
        config(i64::MAX, LatePolicy::Drop),
        &[p(i64::MAX), p(i64::MIN)],
    );
    let (out, _) = far.expect("dropped");
    assert_eq!(
        (out.reorder.dropped_late, out.reorder.max_lateness_ns),
        (1, i64::MAX)
    );
}
