//! The analyses against brute-force references on random traces (in-test SplitMix64).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use burstcore::analysis::{
    random_offsets, BurstDetector, FlowKey, FlowOptions, FlowTable, GapHistogram,
    GroupedHistograms, Merge, SizeHistogram, TrafficMatrix,
};
use burstcore::engine::Arrival;
use burstcore::wire::Headers;

mod engine_util;
use engine_util::Rng;

/// A random ordered trace: few hosts and ports (so flows repeat), some non-IP packets, gaps
/// from 0 to large (so bursts and timeouts trigger), sizes across the histogram range.
fn trace(seed: u64, n: usize) -> Vec<Arrival> {
    let mut r = Rng(seed);
    let mut ts = 1_700_000_000_000_000_000i64 + r.below(1000) as i64;
    (0..n)
        .map(|_| {
            ts += match r.below(4) {
                0 => 0,
                1 => r.below(100) as i64,
                2 => r.below(10_000) as i64,
                _ => r.below(5_000_000) as i64,
            };
            let ip = |r: &mut Rng| IpAddr::V4(Ipv4Addr::new(10, 0, 0, r.below(4) as u8));
            let headers = if r.below(20) == 0 {
                Headers::default()
            } else {
                Headers::default()
                    .with_src(Some(ip(&mut r)))
                    .with_dst(Some(ip(&mut r)))
                    .with_ip_proto(Some([6u8, 17][r.below(2) as usize]))
                    .with_sport(Some(1000 + r.below(3) as u16))
                    .with_dport(Some(1000 + r.below(3) as u16))
            };
            let size = match r.below(10) {
                0 => 65_536 + r.below(10_000),
                1..=3 => 60 + r.below(20),
                _ => r.below(1600),
            };
            Arrival::new(ts, size)
                .with_interface(0)
                .with_headers(headers)
        })
        .collect()
}

type RefKey = (IpAddr, IpAddr, u8, u16, u16);

fn ref_key(a: &Arrival, key: FlowKey) -> Option<(RefKey, bool)> {
    let h = &a.headers;
    let k = (
        h.src?,
        h.dst?,
        h.ip_proto.unwrap_or(0),
        h.sport.unwrap_or(0),
        h.dport.unwrap_or(0),
    );
    Some(match key {
        FlowKey::Flow5 => (k, true),
        FlowKey::Flow4 => ((k.0, k.1, 0, k.3, k.4), true),
        FlowKey::BiFlow5 => {
            if (k.0, k.3) <= (k.1, k.4) {
                (k, true)
            } else {
                ((k.1, k.0, k.2, k.4, k.3), false)
            }
        }
    })
}

#[test]
fn flows_match_hashmap_of_vec_reference() {
    for seed in 0..12u64 {
        let tr = trace(seed, 3000);
        for key in [FlowKey::Flow5, FlowKey::Flow4, FlowKey::BiFlow5] {
            for timeout in [None, Some(1_000_000i64), Some(0)] {
                // Reference: all packets of each key, then split where a gap exceeds the timeout.
                let mut groups: HashMap<RefKey, Vec<&Arrival>> = HashMap::new();
                let mut non_ip = (0u64, 0u64);
                for a in &tr {
                    match ref_key(a, key) {
                        Some((k, _)) => groups.entry(k).or_default().push(a),
                        None => non_ip = (non_ip.0 + 1, non_ip.1 + a.size),
                    }
                }
                let mut expect = Vec::new();
                for pkts in groups.values() {
                    let mut cur: Vec<&Arrival> = Vec::new();
                    for a in pkts {
                        if let (Some(t), Some(l)) = (timeout, cur.last()) {
                            if a.ts_ns - l.ts_ns > t {
                                expect.push(summarise(&cur));
                                cur.clear();
                            }
                        }
                        cur.push(a);
                    }
                    expect.push(summarise(&cur));
                }
                let mut ft = FlowTable::new(
                    FlowOptions::default()
                        .with_key(key)
                        .with_idle_timeout_ns(timeout)
                        .with_max_flows(1 << 20),
                );
                for a in &tr {
                    ft.push(a).unwrap();
                }
                let rep = ft.finish_report();
                assert_eq!((rep.no_flow_packets, rep.no_flow_bytes), non_ip);
                let mut got: Vec<_> = rep
                    .flows
                    .iter()
                    .map(|r| {
                        assert_eq!(r.duration_ns, r.last_seen_ns - r.first_seen_ns);
                        assert_eq!(r.packets, r.src2dst_packets + r.dst2src_packets);
                        assert_eq!(r.bytes, r.src2dst_bytes + r.dst2src_bytes);
                        (
                            r.src_ip,
                            r.dst_ip,
                            r.src_port,
                            r.dst_port,
                            r.first_seen_ns,
                            r.last_seen_ns,
                            r.packets,
                            r.bytes,
                            r.src2dst_packets,
                            r.src2dst_bytes,
                        )
                    })
                    .collect();
                got.sort();
                expect.sort();
                assert_eq!(got, expect, "seed {seed} {key:?} {timeout:?}");
            }
        }
    }
}

/// (src, dst, sport, dport as sent by the first packet, first, last, packets, bytes, and the
/// packets/bytes in the first packet's direction).
fn summarise(p: &[&Arrival]) -> (IpAddr, IpAddr, u16, u16, i64, i64, u64, u64, u64, u64) {
    let f = p[0].headers;
    let (src, sport) = (f.src.unwrap(), f.sport.unwrap_or(0));
    let fwd: Vec<_> = p
        .iter()
        .filter(|a| a.headers.src == Some(src) && a.headers.sport.unwrap_or(0) == sport)
        .collect();
    (
        src,
        f.dst.unwrap(),
        sport,
        f.dport.unwrap_or(0),
        p[0].ts_ns,
        p[p.len() - 1].ts_ns,
        p.len() as u64,
        p.iter().map(|a| a.size).sum(),
        fwd.len() as u64,
        fwd.iter().map(|a| a.size).sum(),
    )
}

#[test]
fn matrix_totals_match_sums() {
    for seed in 0..8u64 {
        let tr = trace(seed, 5000);
        let mut m = TrafficMatrix::new();
        for a in &tr {
            m.push(a);
        }
        let total: u64 = tr.iter().map(|a| a.size).sum();
        let m = m.finish().unwrap();
        assert_eq!(m.total_bytes, total);
        assert_eq!(m.total_packets, tr.len() as u64);
        assert_eq!(m.pairs.iter().map(|c| c.2).sum::<u64>(), total);
        assert_eq!(
            m.host_totals.iter().map(|h| h.sent_bytes).sum::<u64>(),
            total
        );
        assert_eq!(
            m.host_totals.iter().map(|h| h.received_bytes).sum::<u64>(),
            total
        );
        for ((s, d), (b, p)) in m.pair_totals() {
            let sel: Vec<_> = tr
                .iter()
                .filter(|a| a.headers.src == s && a.headers.dst == d)
                .collect();
            assert_eq!((b, p), (sel.iter().map(|a| a.size).sum(), sel.len() as u64));
        }
    }
}

#[test]
fn histograms_match_sorted_reference() {
    for seed in 0..8u64 {
        let tr = trace(seed, 4000);
        let mut sizes = SizeHistogram::new();
        let mut gaps = GapHistogram::new();
        let mut grouped: GroupedHistograms<Option<IpAddr>> = GroupedHistograms::new(100);
        for a in &tr {
            sizes.add(a.size);
            gaps.push_ts(a.ts_ns);
            grouped.push(a, Some(a.headers.src));
        }
        let mut s: Vec<u64> = tr.iter().map(|a| a.size).collect();
        s.sort();
        let in_range: Vec<u64> = s.iter().copied().filter(|x| *x <= 65535).collect();
        assert_eq!(sizes.overflow, (s.len() - in_range.len()) as u64);
        for size in [0u64, 60, 61, 100, 1500, 65535, 65536, 70_000, 100_000] {
            assert_eq!(
                sizes.count_of(size),
                s.iter().filter(|x| **x == size).count() as u64
            );
        }
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99] {
            let rank = ((q * s.len() as f64).ceil() as usize).max(1);
            assert_eq!(sizes.quantile(q), Some(s[rank - 1]), "q {q}");
        }
        let mut g: Vec<u64> = tr
            .windows(2)
            .map(|w| (w[1].ts_ns - w[0].ts_ns) as u64)
            .collect();
        g.sort();
        assert_eq!(gaps.count, g.len() as u64);
        for q in [0.0, 0.1, 0.5, 0.9, 1.0] {
            let want = g[((q * g.len() as f64).ceil() as usize).max(1) - 1];
            let (lo, hi) = gaps.quantile_bounds(q).unwrap();
            assert!(
                lo <= want && want <= hi,
                "gap q {q}: {want} not in [{lo},{hi}]"
            );
        }
        for b in 0..65usize {
            let (lo, hi) = GapHistogram::bucket_bounds(b);
            let n = g.iter().filter(|x| **x >= lo && **x <= hi).count() as u64;
            assert_eq!(gaps.bucket_count(b), n, "bucket {b}");
        }
        let per_group: u64 = grouped.groups.values().map(|(s, _)| s.count).sum();
        assert_eq!(per_group, tr.len() as u64);
        for (k, (hs, hg)) in &grouped.groups {
            let sel: Vec<_> = tr.iter().filter(|a| a.headers.src == *k).collect();
            assert_eq!(hs.bytes, sel.iter().map(|a| a.size).sum::<u64>());
            assert_eq!(hg.count, sel.len() as u64 - 1);
        }
    }
}

#[test]
fn bursts_match_brute_force() {
    for seed in 0..8u64 {
        let tr = trace(seed, 4000);
        for g in [0i64, 50, 5_000, 1_000_000] {
            let mut d = BurstDetector::new(g);
            for a in &tr {
                d.push(a);
            }
            let rep = d.finish();
            // Reference: split at every gap > g.
            let mut want = Vec::new();
            let mut start = 0;
            for i in 1..=tr.len() {
                if i == tr.len() || tr[i].ts_ns - tr[i - 1].ts_ns > g {
                    let p = &tr[start..i];
                    want.push((
                        p[0].ts_ns,
                        p[p.len() - 1].ts_ns,
                        p.iter().map(|a| a.size).sum::<u64>(),
                        p.len() as u64,
                    ));
                    start = i;
                }
            }
            let got: Vec<_> = rep
                .bursts
                .iter()
                .map(|b| (b.start_ns, b.end_ns, b.bytes, b.packets))
                .collect();
            assert_eq!(got, want, "seed {seed} g {g}");
            assert_eq!(rep.total_bursts, want.len() as u64);
            let offs: Vec<i64> = want.windows(2).map(|w| w[1].0 - w[0].1).collect();
            assert_eq!(rep.off_gaps_ns, offs);
            assert!(rep.off_gaps_ns.iter().all(|x| *x > g));
        }
    }
}

#[test]
fn merge_matches_stable_sort() {
    for seed in 0..10u64 {
        let k = 1 + (seed as usize % 5);
        let sources: Vec<Vec<Arrival>> = (0..k)
            .map(|i| trace(seed * 31 + i as u64, 500 + 100 * i))
            .collect();
        let offsets = random_offsets(k, 3_000_000_000, seed);
        assert_eq!(
            offsets,
            random_offsets(k, 3_000_000_000, seed),
            "seeded offsets repeat"
        );
        assert!(offsets.iter().all(|o| (0..=3_000_000_000).contains(o)));
        let mut want: Vec<(i64, usize, usize, Arrival)> = Vec::new();
        for (s, src) in sources.iter().enumerate() {
            for (seq, a) in src.iter().enumerate() {
                let mut b = *a;
                b.ts_ns += offsets[s];
                want.push((b.ts_ns, s, seq, b));
            }
        }
        want.sort_by_key(|w| (w.0, w.1, w.2));
        let got: Vec<(usize, Arrival)> = Merge::new(
            sources.into_iter().map(|v| v.into_iter()).collect(),
            &offsets,
        )
        .collect();
        let want: Vec<(usize, Arrival)> = want.into_iter().map(|w| (w.1, w.3)).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn iterations_recover_synthetic_period() {
    use burstcore::analysis::{IterationAnalyzer, IterationOptions};
    // Synthetic training: 30 iterations of period 80 ms ± jitter, 20 ms ON at 1 packet/10 µs,
    // plus a noisy start-up phase; the reference period is the mean start spacing.
    let mut r = Rng(7);
    let mut an = IterationAnalyzer::new(IterationOptions::default());
    let mut t = 1_000_000_000_000i64;
    let pkt = |t: i64, size: u64, an: &mut IterationAnalyzer| {
        an.push(
            &Arrival::new(t, size)
                .with_interface(0)
                .with_headers(Headers::default()),
        );
    };
    for _ in 0..2000 {
        t += r.below(200_000) as i64;
        pkt(t, 200 + r.below(1300), &mut an);
    }
    t += 300_000_000;
    let mut starts = Vec::new();
    for _ in 0..30 {
        let start = t + r.below(4_000_000) as i64;
        starts.push(start);
        for k in 0..2000 {
            pkt(start + k * 10_000, 1514, &mut an);
        }
        t += 80_000_000;
    }
    let rep = an.finish();
    let truth = (starts[29] - starts[0]) as f64 / 29.0;
    let got = rep.period_ns.unwrap() as f64;
    assert!((got / truth - 1.0).abs() < 0.02, "period {got} vs {truth}");
    let full: Vec<_> = rep
        .iterations
        .iter()
        .filter(|it| it.bytes == 2000 * 1514)
        .collect();
    assert!(full.len() >= 28, "{} full iterations", full.len());
}
