//! Properties every correct envelope, backlog and series must have (docs/metrics.md), checked on
//! the engine's own output for random traces. They tie independent parts of the engine to each
//! other: the backlog must equal a formula over the envelope, the envelope must bracket the bins.

mod engine_util;

use burstcore::engine::{
    By, Closure, ExactBacklog, LatePolicy, ScanConfig, ScanOutput, BACKLOG_SCALE,
};
use engine_util::{points, run, trace, Pkt, Rng};
use std::collections::BTreeMap;

fn config(windows: Vec<i64>, closure: Closure, rates: Vec<u64>, bins: Vec<i64>) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(windows)
        .with_closure(closure)
        .with_rates_bps(rates)
        .with_bins_ns(bins)
        .with_by(vec![By::All])
        .with_reorder_horizon_ns(0)
        .with_late(LatePolicy::Error)
        .with_max_groups(10)
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_bin_origin(Default::default())
        .with_file_filters(Vec::new())
}

fn scan(c: ScanConfig, trace: &[Pkt]) -> (ScanOutput, Vec<ExactBacklog>) {
    run(c, trace).expect("sorted input scans")
}

/// Moderate sizes so sums stay far from saturation and products of rates and backlogs fit u128.
fn moderate(mut t: Vec<Pkt>) -> Vec<Pkt> {
    for p in &mut t {
        p.size %= 10_000;
    }
    t
}

fn envelope_of(out: &ScanOutput) -> BTreeMap<i64, u64> {
    out.envelope
        .iter()
        .map(|e| (e.window_ns, e.bytes))
        .collect()
}

#[test]
fn envelope_is_monotone_subadditive_and_covers_the_trace() {
    let mut rng = Rng(0xE1);
    for seed in 0..1500 {
        let t = moderate(trace(&mut rng, 60));
        let pts = points(&t);
        if pts.is_empty() {
            continue;
        }
        // Base lengths and all their pairwise sums, so sub-additivity can be checked inside the set.
        let base: Vec<i64> = (0..4).map(|_| 1 + rng.below(3000) as i64).collect();
        let mut windows = base.clone();
        for a in &base {
            for b in &base {
                windows.push(a + b);
            }
        }
        let span = pts[pts.len() - 1].0.abs_diff(pts[0].0);
        let beyond = i64::try_from(span).ok().and_then(|s| s.checked_add(1));
        windows.extend(beyond);
        let total: u64 = pts.iter().map(|p| p.1).sum();
        for closure in [Closure::HalfOpen, Closure::Closed] {
            let (out, _) = scan(config(windows.clone(), closure, vec![], vec![]), &t);
            let e = envelope_of(&out);
            let ctx = format!("seed {seed} {closure:?}");
            let values: Vec<u64> = e.values().copied().collect();
            assert!(
                values.windows(2).all(|w| w[0] <= w[1]),
                "{ctx}: not monotone {e:?}"
            );
            for a in &base {
                for b in &base {
                    assert!(
                        e[&(a + b)] <= e[a] + e[b],
                        "{ctx}: E({a}+{b}) > E({a}) + E({b})"
                    );
                }
            }
            if let Some(beyond) = beyond {
                assert_eq!(
                    e[&beyond], total,
                    "{ctx}: a window longer than the span holds all"
                );
            }
            let pk: Vec<u64> = out.envelope.iter().map(|r| r.max_packets).collect();
            assert!(
                pk.windows(2).all(|w| w[0] <= w[1]),
                "{ctx}: E_pkts not monotone"
            );
        }
    }
}

#[test]
fn envelope_is_bounded_by_link_capacity() {
    // Packets serialised on a link of C bit/s: each arrives no earlier than its own transmission
    // time after the previous one, so E(τ) ≤ Cτ + L_max.
    let mut rng = Rng(0xE2);
    for seed in 0..500 {
        let c: u64 = [1_000_000_000u64, 10_000_000_000, 100_000_000_000][rng.below(3) as usize];
        let mut ts = rng.below(1 << 40) as i64;
        let mut t = Vec::new();
        for _ in 0..rng.below(200) {
            let size = 64 + rng.below(1500);
            let tx_ns = (size * 8 * 1_000_000_000).div_ceil(c) as i64;
            ts += tx_ns
                + if rng.chance(70) {
                    0
                } else {
                    rng.below(100_000) as i64
                };
            t.push(Pkt::bare(ts, size));
        }
        let lmax = t.iter().map(|p| p.size).max().unwrap_or(0);
        let windows: Vec<i64> = (0..6).map(|_| 1 + rng.below(200_000) as i64).collect();
        let (out, _) = scan(config(windows, Closure::HalfOpen, vec![], vec![]), &t);
        for e in &out.envelope {
            let bound = u128::from(c) * e.window_ns as u128 / 8_000_000_000 + u128::from(lmax);
            assert!(
                u128::from(e.bytes) <= bound,
                "seed {seed}: E({}) = {} > {bound}",
                e.window_ns,
                e.bytes
            );
        }
    }
}

#[test]
fn backlog_is_nonincreasing_convex_and_at_least_the_largest_packet() {
    let mut rng = Rng(0xE3);
    for seed in 0..1500 {
        let t = moderate(trace(&mut rng, 60));
        if t.is_empty() {
            continue;
        }
        let rates: Vec<u64> = (0..6).map(|_| 1 + rng.below(1 << 34)).collect();
        let (_, exact) = scan(config(vec![], Closure::HalfOpen, rates, vec![]), &t);
        let lmax = t.iter().map(|p| p.size).max().unwrap_or(0);
        let b: Vec<(u128, u128)> = exact
            .iter()
            .map(|x| (u128::from(x.rate_bps), x.bmax_scaled))
            .collect();
        for w in b.windows(2) {
            assert!(
                w[0].1 >= w[1].1,
                "seed {seed}: B_max grows with the rate: {b:?}"
            );
        }
        for &(_, v) in &b {
            assert!(
                v >= u128::from(lmax) * u128::from(BACKLOG_SCALE),
                "seed {seed}: B_max < L_max"
            );
        }
        // Convex: (r3−r1)·B(r2) ≤ (r3−r2)·B(r1) + (r2−r1)·B(r3) for r1 < r2 < r3.
        for i in 0..b.len() {
            for j in i + 1..b.len() {
                for k in j + 1..b.len() {
                    let ((r1, b1), (r2, b2), (r3, b3)) = (b[i], b[j], b[k]);
                    assert!(
                        (r3 - r1) * b2 <= (r3 - r2) * b1 + (r2 - r1) * b3,
                        "seed {seed}: not convex at {r1} {r2} {r3}"
                    );
                }
            }
        }
    }
}

#[test]
fn backlog_equals_sup_of_closed_envelope_minus_service() {
    // B_max(r) = max over τ ∈ {t_j − t_i} of (E_closed(τ) − rτ), exactly, with E from the engine's
    // envelope and B from its Lindley queue: two independent computations.
    let mut rng = Rng(0xE4);
    let mut checked = 0;
    for seed in 0..1500 {
        let t = moderate(trace(&mut rng, 50));
        let pts = points(&t);
        if pts.is_empty() {
            continue;
        }
        let mut gaps: Vec<i64> = Vec::new();
        for a in &pts {
            for b in &pts {
                if let Ok(g) = i64::try_from(b.0.abs_diff(a.0)) {
                    if g > 0 {
                        gaps.push(g);
                    }
                }
            }
        }
        if gaps.len()
            != pts.len() * pts.len()
                - pts
                    .iter()
                    .map(|a| pts.iter().filter(|b| b.0 == a.0).count())
                    .sum::<usize>()
        {
            continue; // a gap beyond i64: the identity needs every gap as a window
        }
        let rates: Vec<u64> = (0..3).map(|_| 1 + rng.below(1 << 36)).collect();
        let (out, exact) = scan(config(gaps, Closure::Closed, rates, vec![]), &t);
        // τ = 0: the most bytes at one timestamp (windows must be > 0, so computed here).
        let mut at: BTreeMap<i64, u128> = BTreeMap::new();
        for p in &pts {
            *at.entry(p.0).or_default() += u128::from(p.1);
        }
        let e0 = at.values().copied().max().unwrap_or(0) * u128::from(BACKLOG_SCALE);
        for x in &exact {
            let mut best = e0;
            for e in &out.envelope {
                let work = u128::from(e.bytes) * u128::from(BACKLOG_SCALE);
                let served = u128::from(x.rate_bps) * e.window_ns as u128;
                if let Some(v) = work.checked_sub(served) {
                    best = best.max(v);
                }
            }
            assert_eq!(x.bmax_scaled, best, "seed {seed} rate {}", x.rate_bps);
            checked += 1;
        }
    }
    assert!(checked > 2000, "only {checked} traces and rates checked");
}

#[test]
fn binned_peak_brackets_the_envelope() {
    // max_k B_k(Δ) ≤ E(Δ) ≤ 2·max_k B_k(Δ) (half-open windows of the bin width).
    let mut rng = Rng(0xE5);
    for seed in 0..1500 {
        let t = moderate(trace(&mut rng, 80));
        if t.is_empty() {
            continue;
        }
        let bins: Vec<i64> = (0..4).map(|_| 1 + rng.below(5000) as i64).collect();
        let (out, _) = scan(
            config(bins.clone(), Closure::HalfOpen, vec![], bins.clone()),
            &t,
        );
        let e = envelope_of(&out);
        for d in bins {
            let peak = out
                .series
                .iter()
                .filter(|s| s.bin_ns == d)
                .map(|s| s.bytes)
                .max()
                .unwrap_or(0);
            assert!(
                peak <= e[&d] && e[&d] <= 2 * peak,
                "seed {seed} Δ {d}: peak {peak}, E {}",
                e[&d]
            );
            let packets: u64 = out
                .series
                .iter()
                .filter(|s| s.bin_ns == d)
                .map(|s| s.packets)
                .sum();
            assert_eq!(
                packets,
                t.len() as u64,
                "seed {seed}: every packet in one bin"
            );
        }
    }
}
