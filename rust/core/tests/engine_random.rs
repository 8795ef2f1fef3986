//! The streaming engine against the brute-force references of `engine::reference`, on thousands
//! of random traces, for both window conventions and several groupings in the same pass, with the
//! input shuffled within the reorder horizon.

mod engine_util;

use burstcore::engine::reference;
use burstcore::engine::{
    ratio_to_f64, BinOrigin, By, Closure, GroupKey, LatePolicy, ScanConfig, BACKLOG_SCALE,
};
use engine_util::{ip, points, run, shuffle_within, trace, Pkt, Rng};
use std::collections::BTreeMap;

/// The groupings under test and each packet's group, derived from the generated fields (not from
/// the engine's key function).
fn key_of(by: By, p: &Pkt) -> GroupKey {
    match by {
        By::All => GroupKey::All,
        By::Src => p.src.map_or(GroupKey::None, |s| GroupKey::Host(ip(s))),
        By::Dst => p.dst.map_or(GroupKey::None, |d| GroupKey::Host(ip(d))),
        By::Pair => match (p.src, p.dst) {
            (Some(s), Some(d)) => GroupKey::Pair(ip(s), ip(d)),
            _ => GroupKey::None,
        },
        By::Interface => GroupKey::Interface(p.iface),
        By::Vlan => p.vlan.map_or(GroupKey::None, GroupKey::Vlan),
        _ => unreachable!("not generated"),
    }
}

const BYS: [By; 6] = [By::All, By::Src, By::Dst, By::Pair, By::Interface, By::Vlan];

fn pick_windows(rng: &mut Rng, pts: &[(i64, u64)]) -> Vec<i64> {
    let mut w = Vec::new();
    for _ in 0..1 + rng.below(5) {
        let tau = match rng.below(7) {
            0 => 1,
            1 => i64::MAX,
            2 | 3 if pts.len() >= 2 => {
                // An exact gap between two packets (or one more), where conventions differ.
                let a = pts[rng.below(pts.len() as u64) as usize].0;
                let b = pts[rng.below(pts.len() as u64) as usize].0;
                let g = i64::try_from(a.abs_diff(b)).unwrap_or(i64::MAX).max(1);
                g.saturating_add(rng.below(2) as i64)
            }
            4 => 1 + rng.below(5000) as i64,
            5 => 1 + rng.below(2_000_000_000) as i64,
            _ => 1 + rng.below(3) as i64,
        };
        w.push(tau);
    }
    w
}

fn pick_rates(rng: &mut Rng) -> Vec<u64> {
    (0..1 + rng.below(4))
        .map(|_| match rng.below(6) {
            0 => 1,
            1 => u64::MAX,
            2 => 8_000_000_000,
            3 => 1 + rng.below(100_000_000_000_000),
            _ => 1 + rng.below(20_000_000_000),
        })
        .collect()
}

fn pick_bins(rng: &mut Rng) -> Vec<i64> {
    (0..rng.below(4))
        .map(|_| match rng.below(5) {
            0 => 1,
            1 => 3,
            2 => i64::MAX,
            3 => 1_000_000_000,
            _ => 1 + rng.below(5000) as i64,
        })
        .collect()
}

/// Check one scan of `sorted` (fed as `arrivals`) against the references, group by group.
fn check(config: &ScanConfig, sorted: &[Pkt], arrivals: &[Pkt], seed: u64) {
    let (out, exact) = run(config.clone(), arrivals).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let mut bys = config.by.clone();
    if bys.is_empty() {
        bys.push(By::All); // documented default
    }
    bys.sort_by_key(|b| By::EVERY.iter().position(|x| x == b));
    bys.dedup();
    let mut windows = config.windows_ns.clone();
    windows.sort_unstable();
    windows.dedup();
    let mut rates = config.rates_bps.clone();
    rates.sort_unstable();
    rates.dedup();
    let mut bins = config.bins_ns.clone();
    bins.sort_unstable();
    bins.dedup();

    // One origin for every group: the first packet of all, in timestamp order.
    let origin = match config.bin_origin {
        BinOrigin::At(o) => o,
        BinOrigin::FirstPacket => sorted.iter().map(|p| p.ts).min().unwrap_or(0),
    };
    let (mut env_i, mut bl_i, mut se_i, mut gr_i) = (0, 0, 0, 0);
    for &by in &bys {
        let mut groups: BTreeMap<GroupKey, Vec<Pkt>> = BTreeMap::new();
        for p in sorted {
            groups.entry(key_of(by, p)).or_default().push(*p);
        }
        for (key, members) in &groups {
            let pts = points(members);
            let ctx = format!("seed {seed} by {} group {}", by.name(), key.label());
            // Summary.
            let g = &out.groups[gr_i];
            gr_i += 1;
            let total: u128 = pts.iter().map(|p| u128::from(p.1)).sum();
            assert_eq!((g.by, g.group), (by, *key), "{ctx}");
            assert_eq!(g.packets, pts.len() as u64, "{ctx}");
            assert_eq!(
                u128::from(g.bytes),
                total.min(u128::from(u64::MAX)),
                "{ctx}"
            );
            assert_eq!(
                (g.first_ns, g.last_ns),
                (pts[0].0, pts[pts.len() - 1].0),
                "{ctx}"
            );
            // Envelope.
            for &tau in &windows {
                let r = reference::envelope(&pts, tau, config.closure).expect("non-empty");
                let e = &out.envelope[env_i];
                env_i += 1;
                let ctx = format!("{ctx} tau {tau} {:?}", config.closure);
                assert_eq!((e.by, e.group, e.window_ns), (by, *key, tau), "{ctx}");
                assert_eq!(
                    u128::from(e.bytes),
                    r.bytes.min(u128::from(u64::MAX)),
                    "{ctx}"
                );
                if r.bytes <= u128::from(u64::MAX) {
                    assert_eq!(e.packets_in_window, r.packets_in_window, "{ctx}");
                    assert_eq!(e.start_ns, r.start_ns, "{ctx}");
                }
                assert_eq!(e.max_packets, r.max_packets, "{ctx}");
            }
            // Backlog.
            for &rate in &rates {
                let r = reference::backlog(&pts, rate).expect("non-empty");
                let b = &out.backlog[bl_i];
                let x = &exact[bl_i];
                bl_i += 1;
                let ctx = format!("{ctx} rate {rate}");
                assert_eq!((b.by, b.group, b.rate_bps), (by, *key, rate), "{ctx}");
                assert_eq!((x.by, x.group, x.rate_bps), (by, *key, rate), "{ctx}");
                assert_eq!(x.bmax_scaled, r.bmax_scaled, "{ctx}");
                assert_eq!(
                    b.bmax_bytes,
                    ratio_to_f64(r.bmax_scaled, BACKLOG_SCALE),
                    "{ctx}"
                );
                assert_eq!(b.peak_ns, r.peak_ns, "{ctx}");
                assert_eq!(b.longest_busy_ns, r.longest_busy_ns, "{ctx}");
                assert_eq!(b.longest_busy_start_ns, r.longest_busy_start_ns, "{ctx}");
            }
            // Series.
            for &bin in &bins {
                for (start, bytes, packets) in reference::bins_from(&pts, bin, origin) {
                    let s = &out.series[se_i];
                    se_i += 1;
                    let ctx = format!("{ctx} bin {bin} start {start}");
                    assert_eq!(
                        (s.by, s.group, s.bin_ns, s.start_ns),
                        (by, *key, bin, start),
                        "{ctx}"
                    );
                    assert_eq!(
                        u128::from(s.bytes),
                        bytes.min(u128::from(u64::MAX)),
                        "{ctx}"
                    );
                    assert_eq!(s.packets, packets, "{ctx}");
                }
            }
        }
    }
    assert_eq!(out.groups.len(), gr_i, "seed {seed}: extra group rows");
    assert_eq!(
        out.envelope.len(),
        env_i,
        "seed {seed}: extra envelope rows"
    );
    assert_eq!(out.backlog.len(), bl_i, "seed {seed}: extra backlog rows");
    assert_eq!(out.series.len(), se_i, "seed {seed}: extra series rows");
}

fn random_config(rng: &mut Rng, pts: &[(i64, u64)]) -> ScanConfig {
    let mut by: Vec<By> = BYS.iter().copied().filter(|_| rng.chance(50)).collect();
    if rng.chance(20) {
        by.clear(); // the default: aggregate only
    }
    ScanConfig::default()
        .with_windows_ns(pick_windows(rng, pts))
        .with_closure(if rng.chance(50) {
            Closure::HalfOpen
        } else {
            Closure::Closed
        })
        .with_rates_bps(pick_rates(rng))
        .with_bins_ns(pick_bins(rng))
        .with_by(by)
        .with_reorder_horizon_ns(match rng.below(3) {
            0 => 0,
            1 => rng.below(10) as i64,
            _ => rng.below(1_000_000) as i64,
        })
        .with_late(LatePolicy::Error)
        .with_max_groups(1000)
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_bin_origin(match rng.below(6) {
            0 => BinOrigin::FirstPacket,
            1 => BinOrigin::At(i64::MIN),
            2 => BinOrigin::At(i64::MAX),
            3 => BinOrigin::At(rng.below(u64::MAX) as i64),
            4 => BinOrigin::At(
                pts.first()
                    .map_or(0, |p| p.0)
                    .saturating_add(rng.below(7000) as i64 - 3500),
            ),
            _ => BinOrigin::At(0),
        })
        .with_file_filters(Vec::new())
}

#[test]
fn engine_matches_references_on_random_traces() {
    let mut rng = Rng(0x5EED_0001);
    for seed in 0..4000u64 {
        let sorted = trace(&mut rng, 48);
        let pts = points(&sorted);
        let mut config = random_config(&mut rng, &pts);
        let arrivals = shuffle_within(&mut rng, &sorted, config.reorder_horizon_ns);
        if config.by.is_empty() {
            check(&config, &sorted, &arrivals, seed);
            config.by = vec![By::All];
        }
        check(&config, &sorted, &arrivals, seed);
        // The other convention on the same trace.
        config.closure = match config.closure {
            Closure::HalfOpen => Closure::Closed,
            Closure::Closed => Closure::HalfOpen,
        };
        check(&config, &sorted, &arrivals, seed);
    }
}

#[test]
fn engine_matches_references_on_longer_traces() {
    // Fewer, longer traces: rings that grow and wrap many times, many busy periods.
    let mut rng = Rng(0x5EED_0002);
    for seed in 0..40u64 {
        let sorted = trace(&mut rng, 400);
        let pts = points(&sorted);
        let mut config = random_config(&mut rng, &pts);
        config.by = vec![By::All, By::Src, By::Interface];
        let arrivals = shuffle_within(&mut rng, &sorted, config.reorder_horizon_ns);
        check(&config, &sorted, &arrivals, seed);
    }
}
