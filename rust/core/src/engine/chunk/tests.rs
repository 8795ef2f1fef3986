//! Chunked scans merged in random orders against the sequential scanner (the oracle), on
//! thousands of random traces split at random points.

use super::*;
use crate::engine::Scanner;
use crate::wire::Headers;
use std::net::{IpAddr, Ipv4Addr};

use crate::test_rng::Rng;

const BYS: [By; 6] = [By::All, By::Src, By::Dst, By::Pair, By::Interface, By::Vlan];

/// A sorted trace: bursts, idle gaps, ties, zero sizes; `wild` adds huge sizes and timestamps
/// near the ends of i64.
fn trace(rng: &mut Rng, n: usize, wild: bool) -> Vec<Arrival> {
    let style = rng.below(4);
    let mut ts: i64 = match (wild, rng.below(4)) {
        (true, 0) => i64::MIN + rng.below(1000) as i64,
        (true, 1) => i64::MAX - 1_000_000_000_000,
        _ => rng.below(1 << 40) as i64 - (1 << 39),
    };
    let hosts = 1 + rng.below(4) as u8;
    (0..n)
        .map(|_| {
            let step = match (style, rng.below(100)) {
                (_, 0..=24) => 0,
                (0, _) => 1 + rng.below(3) as i64,
                (1, 25..=89) => 1 + rng.below(1000) as i64,
                (1, _) => 1_000_000 + rng.below(1_000_000_000) as i64,
                (2, _) => 1000 * rng.below(5) as i64,
                _ => rng.below(200_000) as i64,
            };
            ts = ts.saturating_add(step);
            let size = match rng.below(100) {
                0..=14 => 0,
                15 if wild => rng.next() >> rng.below(64),
                16 if wild => u64::MAX / 4,
                _ => 1 + rng.below(1500),
            };
            let src = (rng.below(5) != 0).then(|| rng.below(u64::from(hosts)) as u8);
            let dst = (rng.below(5) != 0).then(|| rng.below(u64::from(hosts)) as u8);
            let ip = |x: u8| IpAddr::V4(Ipv4Addr::new(10, 0, 0, x));
            Arrival {
                ts_ns: ts,
                size,
                interface: rng.below(2) as u32,
                headers: Headers {
                    src: src.map(ip),
                    dst: dst.map(ip),
                    vlan: (rng.below(3) == 0).then(|| rng.below(3) as u16),
                    ..Default::default()
                },
            }
        })
        .collect()
}

fn config(rng: &mut Rng, trace: &[Arrival], wild: bool) -> ScanConfig {
    let mut windows = Vec::new();
    for _ in 0..rng.below(5) {
        windows.push(match rng.below(7) {
            0 => 1,
            1 if wild => i64::MAX,
            2 | 3 if trace.len() >= 2 => {
                // An exact gap between two packets (or one more), where conventions differ.
                let a = trace[rng.below(trace.len() as u64) as usize].ts_ns;
                let b = trace[rng.below(trace.len() as u64) as usize].ts_ns;
                let g = i64::try_from(a.abs_diff(b)).unwrap_or(i64::MAX).max(1);
                g.saturating_add(rng.below(2) as i64)
            }
            4 => 1 + rng.below(5000) as i64,
            5 => 1 + rng.below(2_000_000_000) as i64,
            _ => 1 + rng.below(3) as i64,
        });
    }
    let rates = (0..rng.below(4))
        .map(|_| match rng.below(7) {
            0 if wild => 1,
            1 if wild => u64::MAX,
            2 => 8_000_000_000,
            3 => 1 + rng.below(100_000_000_000_000),
            // Around the trace's mean rate, where queues carry over long stretches.
            4 => 1_000_000 + rng.below(50_000_000_000),
            _ => 1 + rng.below(20_000_000_000),
        })
        .collect();
    let bins = (0..rng.below(4))
        .map(|_| match rng.below(5) {
            0 => 1,
            1 => 3,
            2 => i64::MAX,
            3 => 1_000_000_000,
            _ => 1 + rng.below(5000) as i64,
        })
        .collect();
    let mut by: Vec<By> = BYS.iter().copied().filter(|_| rng.below(2) == 0).collect();
    match rng.below(6) {
        0 | 1 => by = BYS.to_vec(),
        // The aggregate alone is buffered bare and released in runs (see `Release::release_run`).
        2 => by = vec![By::All],
        _ => {}
    }
    ScanConfig {
        windows_ns: windows,
        closure: if rng.below(2) == 0 {
            Closure::HalfOpen
        } else {
            Closure::Closed
        },
        rates_bps: rates,
        bins_ns: bins,
        by,
        // The traces are sorted: any horizon gives the same result. Without one each packet
        // goes through at once, with one the buffer releases them in batches.
        reorder_horizon_ns: [0, 1, 1_000_000][rng.below(3) as usize],
        ..ScanConfig::default()
    }
}

fn sequential(config: &ScanConfig, arrivals: &[Arrival]) -> (ScanOutput, Vec<ExactBacklog>) {
    let mut s = Scanner::new(config.clone()).expect("config");
    for a in arrivals {
        s.push(a).expect("push");
    }
    s.finish_exact().expect("finish")
}

/// Split at `cuts` (sorted indices), scan each piece, merge adjacent states in a random order.
fn chunked(
    rng: &mut Rng,
    config: &ScanConfig,
    arrivals: &[Arrival],
    cuts: &[usize],
    cap: usize,
) -> std::result::Result<(ScanOutput, Vec<ExactBacklog>), NotMergeable> {
    let mut states = Vec::new();
    let mut from = 0;
    // Half the time the outer chunks keep no head (first) and no tail (last), as the driver does.
    let trim = rng.below(2) == 0;
    let pieces = cuts.len() + 1;
    for (k, &to) in cuts
        .iter()
        .chain(std::iter::once(&arrivals.len()))
        .enumerate()
    {
        let edges = Edges {
            first: trim && k == 0,
            last: trim && k + 1 == pieces,
        };
        let mut s = ChunkScanner::with_options(config.clone(), cap, edges).expect("config");
        if cap < 8 {
            // Small caps come with a small budget over all groups, half the time.
            if rng.below(2) == 0 {
                s.set_budget(rng.below(40) as usize);
            }
        }
        for a in &arrivals[from..to] {
            s.push(a).expect("push");
        }
        states.push(s.finish().expect("finish"));
        from = to;
    }
    while states.len() > 1 {
        let i = rng.below(states.len() as u64 - 1) as usize;
        let b = states.remove(i + 1);
        let a = states.remove(i);
        let threads = 1 + rng.below(3) as usize;
        states.insert(i, a.merge_threads(b, threads)?);
    }
    states.remove(0).finish_exact()
}

fn assert_same(
    got: &(ScanOutput, Vec<ExactBacklog>),
    want: &(ScanOutput, Vec<ExactBacklog>),
    ctx: &str,
) {
    assert_eq!(got.0.envelope, want.0.envelope, "envelope, {ctx}");
    assert_eq!(got.0.backlog, want.0.backlog, "backlog, {ctx}");
    assert_eq!(got.1, want.1, "exact backlog, {ctx}");
    assert_eq!(got.0.series, want.0.series, "series, {ctx}");
    assert_eq!(got.0.groups, want.0.groups, "groups, {ctx}");
    assert_eq!(got.0.reorder, want.0.reorder, "reorder, {ctx}");
}

fn cuts(rng: &mut Rng, n: usize) -> Vec<usize> {
    let pieces = 2 + rng.below(5) as usize;
    let mut c: Vec<usize> = (1..pieces)
        .map(|_| rng.below(n as u64 + 1) as usize)
        .collect();
    c.sort_unstable();
    c
}

#[test]
fn merged_chunks_equal_the_sequential_scan() {
    let mut refused = 0;
    for seed in 0..3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 7);
        // Some traces span several of the envelope's batches (1024 packets), so that the tails
        // taken from its ring have wrapped and grown.
        let n = match rng.below(16) {
            0..=3 => rng.below(6) as usize,
            4..=7 => 1 + rng.below(40) as usize,
            8 => 2000 + rng.below(4000) as usize,
            _ => 1 + rng.below(400) as usize,
        };
        let t = trace(&mut rng, n, false);
        let c = config(&mut rng, &t, false);
        let want = sequential(&c, &t);
        let cut = cuts(&mut rng, t.len());
        match chunked(&mut rng, &c, &t, &cut, DEFAULT_INSTANT_CAP) {
            Ok(got) => assert_same(&got, &want, &format!("seed {seed}, cuts {cut:?}, {c:?}")),
            Err(e) => {
                refused += 1;
                eprintln!("seed {seed}: {e}");
            }
        }
    }
    // Moderate traces (sizes, times and rates far from the integer limits) always merge.
    assert_eq!(refused, 0);
}

#[test]
fn wild_values_merge_exactly_or_refuse() {
    let (mut merged, mut refused) = (0, 0);
    for seed in 0..2000u64 {
        let mut rng = Rng(seed ^ 0xA5A5_0000);
        let n = 1 + rng.below(200) as usize;
        let t = trace(&mut rng, n, true);
        let c = config(&mut rng, &t, true);
        let want = sequential(&c, &t);
        let cut = cuts(&mut rng, t.len());
        match chunked(&mut rng, &c, &t, &cut, DEFAULT_INSTANT_CAP) {
            Ok(got) => {
                merged += 1;
                assert_same(&got, &want, &format!("seed {seed}, cuts {cut:?}, {c:?}"));
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("wild: {merged} merged, {refused} refused");
    assert!(merged > refused, "{merged} merged, {refused} refused");
}

#[test]
fn small_caps_merge_exactly_or_refuse() {
    let (mut merged, mut refused) = (0, 0);
    for seed in 0..2000u64 {
        let mut rng = Rng(seed ^ 0x5EED_0000_0000);
        let n = 1 + rng.below(300) as usize;
        let t = trace(&mut rng, n, false);
        let c = config(&mut rng, &t, false);
        let want = sequential(&c, &t);
        let cut = cuts(&mut rng, t.len());
        let cap = 1 + rng.below(4) as usize;
        match chunked(&mut rng, &c, &t, &cut, cap) {
            Ok(got) => {
                merged += 1;
                assert_same(&got, &want, &format!("seed {seed}, cap {cap}, {c:?}"));
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("caps: {merged} merged, {refused} refused");
    assert!(
        refused > 0 && merged > refused,
        "{merged} merged, {refused} refused"
    );
}

#[test]
fn every_split_of_one_trace_and_every_merge_order() {
    // One trace with long carried busy periods, cut at every pair of points.
    let mut rng = Rng(99);
    let t = trace(&mut rng, 60, false);
    let c = ScanConfig {
        windows_ns: vec![1, 700, 5_000, 100_000],
        rates_bps: vec![1_000_000_000, 8_000_000_000, 40_000_000_000],
        bins_ns: vec![1_000, 64_000],
        by: BYS.to_vec(),
        reorder_horizon_ns: 0,
        ..ScanConfig::default()
    };
    let want = sequential(&c, &t);
    for i in 0..=t.len() {
        for j in i..=t.len() {
            let got = chunked(&mut rng, &c, &t, &[i, j], DEFAULT_INSTANT_CAP)
                .unwrap_or_else(|e| panic!("cuts {i} {j}: {e}"));
            assert_same(&got, &want, &format!("cuts {i} {j}"));
        }
    }
}

#[test]
fn reordered_input_merges_exactly_when_chunks_do_not_overlap() {
    let (mut merged, mut refused) = (0, 0);
    for seed in 0..1000u64 {
        let mut rng = Rng(seed ^ 0x0DD0_0000);
        let n = 2 + rng.below(300) as usize;
        let sorted = trace(&mut rng, n, false);
        let mut c = config(&mut rng, &sorted, false);
        c.reorder_horizon_ns = rng.below(3000) as i64;
        c.late = LatePolicy::Drop;
        // Swap neighbours: reordering within (and sometimes beyond) the horizon.
        let mut t = sorted.clone();
        for _ in 0..n / 4 {
            let i = rng.below(n as u64 - 1) as usize;
            t.swap(i, i + 1);
        }
        let want = sequential(&c, &t);
        let cut = cuts(&mut rng, t.len());
        match chunked(&mut rng, &c, &t, &cut, DEFAULT_INSTANT_CAP) {
            Ok(got) => {
                merged += 1;
                assert_same(&got, &want, &format!("seed {seed}, cuts {cut:?}, {c:?}"));
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("reordered: {merged} merged, {refused} refused");
    assert!(merged > 100, "{merged} merged, {refused} refused");
}

#[test]
fn long_seams_replay_on_threads() {
    // Seams of more than PARALLEL_SEAM packets: the windows are replayed on several threads.
    let mut rng = Rng(2024);
    for _ in 0..3 {
        let t = trace(&mut rng, 3 * PARALLEL_SEAM, false);
        let c = ScanConfig {
            windows_ns: vec![1, 3_000, 1_000_000, 1 << 40],
            rates_bps: vec![1_000_000_000, 80_000_000_000],
            bins_ns: vec![1_000_000],
            by: vec![By::All, By::Src],
            reorder_horizon_ns: 0,
            ..ScanConfig::default()
        };
        let want = sequential(&c, &t);
        let cut = cuts(&mut rng, t.len());
        let got = chunked(&mut rng, &c, &t, &cut, DEFAULT_INSTANT_CAP)
            .unwrap_or_else(|e| panic!("cuts {cut:?}: {e}"));
        assert_same(&got, &want, &format!("cuts {cut:?}"));
    }
}

/// Interfaces taking turns: each sends `per` packets 1 µs apart, then falls silent for good.
fn interfaces_in_turn(interfaces: u32, per: usize) -> Vec<Arrival> {
    (0..interfaces as usize * per)
        .map(|i| Arrival {
            ts_ns: i as i64 * 1_000,
            size: 100 + (i % 7) as u64,
            interface: (i / per) as u32,
            headers: Headers::default(),
        })
        .collect()
}

#[test]
fn interfaces_fallen_silent_let_go_of_their_packets_in_a_chunk() {
    // Eight interfaces of 20,000 packets each, a 10 ms window (10,000 packets, a ring of 16,384
    // slots). The last trim comes at packet 131,072 (131 ms): interfaces 0-5 have been silent
    // for more than 10 ms then and keep 64 slots each; 6 and 7 theirs. Before, a chunk kept
    // every ring to its end: 8 × 16,384 slots.
    let t = interfaces_in_turn(8, 20_000);
    let c = ScanConfig {
        windows_ns: vec![1_000, 10_000_000],
        by: vec![By::All, By::Interface],
        ..ScanConfig::default()
    };
    let mut s = ChunkScanner::new(c).expect("config");
    for a in &t {
        s.push(a).expect("push");
    }
    let slots: Vec<usize> = s.sink.groupings[1]
        .slots
        .states
        .iter()
        .map(|g| g.envelope.held_slots())
        .collect();
    let held: usize = slots.iter().sum();
    assert!(held <= 6 * 64 + 2 * 16_384, "{held} slots: {slots:?}");
}

#[test]
fn trimmed_chunks_merge_into_the_sequential_scan() {
    // The trims of each chunk let go of the silent interfaces' packets, tails included: the
    // merged result must still be the sequential scan's. Chunks of more than 65,536 packets,
    // so that each trims at least once.
    let t = interfaces_in_turn(8, 20_000);
    let mut rng = Rng(48);
    for horizon in [0, 1_000_000] {
        for closure in [Closure::HalfOpen, Closure::Closed] {
            let c = ScanConfig {
                windows_ns: vec![1_000, 3_000_000, 10_000_000],
                closure,
                rates_bps: vec![1_000_000_000, 900_000_000],
                bins_ns: vec![5_000_000],
                by: vec![By::All, By::Interface],
                reorder_horizon_ns: horizon,
                ..ScanConfig::default()
            };
            let want = sequential(&c, &t);
            for cut in [vec![70_000], vec![1_000, 75_000], vec![66_000, 140_000]] {
                let got = chunked(&mut rng, &c, &t, &cut, DEFAULT_INSTANT_CAP)
                    .unwrap_or_else(|e| panic!("cuts {cut:?}: {e}"));
                assert_same(
                    &got,
                    &want,
                    &format!("cuts {cut:?}, {closure:?}, {horizon}"),
                );
            }
        }
    }
}

#[test]
fn a_merge_after_the_leading_chunk_keeps_one_instant_per_queue() {
    // Sixteen interfaces in round robin, 1 µs apart, served at 8 and 20 Gbit/s: every packet
    // finds its queue empty at a new minimum of D, so each chunk but the first keeps one
    // instant per packet and rate (to its cap). Merged after the leading chunk, they only
    // count for their longest busy period: before, the merge copied them all, and a
    // two-thread scan held them twice at its peak.
    let t: Vec<Arrival> = (0..48_000)
        .map(|i| Arrival {
            ts_ns: i * 1_000,
            size: 100 + (i % 7) as u64 * 200,
            interface: (i % 16) as u32,
            headers: Headers::default(),
        })
        .collect();
    let c = ScanConfig {
        windows_ns: vec![10_000],
        rates_bps: vec![8_000_000_000, 20_000_000_000],
        by: vec![By::Interface],
        ..ScanConfig::default()
    };
    let want = sequential(&c, &t);
    let cuts = [0, 16_000, 32_000, 48_000];
    let mut states: Vec<ChunkState> = cuts
        .windows(2)
        .enumerate()
        .map(|(k, w)| {
            let edges = Edges {
                first: k == 0,
                last: k == 2,
            };
            let mut s =
                ChunkScanner::with_options(c.clone(), DEFAULT_INSTANT_CAP, edges).expect("config");
            for a in &t[w[0]..w[1]] {
                s.push(a).expect("push");
            }
            s.finish().expect("finish")
        })
        .collect();
    let queues = 16 * c.rates_bps.len();
    assert_eq!(states[0].retained_instants(), queues, "the leading chunk");
    // 1,000 packets per interface and chunk, each an instant of both rates.
    assert!(states[1].retained_instants() >= 1_000 * queues);
    let third = states.pop().expect("three");
    let second = states.pop().expect("two");
    let merged = states.pop().expect("one").merge(second).expect("in order");
    assert_eq!(merged.retained_instants(), queues, "after the second chunk");
    let merged = merged.merge(third).expect("in order");
    assert_eq!(merged.retained_instants(), queues, "after the third chunk");
    assert_same(
        &merged.finish_exact().expect("exact"),
        &want,
        "three chunks",
    );
}

#[test]
fn a_merge_of_chunks_each_at_their_cap_keeps_no_more_than_the_cap() {
    // 100 B every 1000 ns at 1 and 2.5 B/ns: each packet finds the queue empty, D falling by
    // 900 B (750 B) of service left over, a new minimum. A chunk of `cap` packets keeps its
    // first packet and `cap` − 1 of them: exactly its cap, not truncated. Merged, the next
    // chunk's first packet is a new minimum again (D of A's last + 100 B − 1000 B of service
    // across the seam), the one the cap turns away: a merge that kept it (`<=` for `<` in
    // `RateChunk::merge`) would hold cap + 1 per queue, results unchanged.
    let c = ScanConfig {
        windows_ns: vec![],
        rates_bps: vec![8_000_000_000, 20_000_000_000],
        by: vec![By::All],
        ..ScanConfig::default()
    };
    let queues = c.rates_bps.len();
    for cap in [1, 2, 5] {
        let t: Vec<Arrival> = (0..3 * cap as i64)
            .map(|i| Arrival::new(i * 1_000, 100))
            .collect();
        let want = sequential(&c, &t);
        let mut states: Vec<ChunkState> = t
            .chunks(cap)
            .map(|piece| {
                let mut s =
                    ChunkScanner::with_options(c.clone(), cap, Edges::default()).expect("config");
                for a in piece {
                    s.push(a).expect("push");
                }
                s.finish().expect("finish")
            })
            .collect();
        for s in &states {
            assert_eq!(s.retained_instants(), cap * queues, "cap {cap}: each chunk");
        }
        let third = states.pop().expect("three");
        let second = states.pop().expect("two");
        let merged = states.pop().expect("one").merge(second).expect("in order");
        assert!(
            merged.retained_instants() <= cap * queues,
            "cap {cap}: {} kept after the second chunk",
            merged.retained_instants()
        );
        let merged = merged.merge(third).expect("in order");
        assert!(merged.retained_instants() <= cap * queues, "cap {cap}");
        assert_same(
            &merged.finish_exact().expect("exact"),
            &want,
            &format!("cap {cap}"),
        );
    }
}

/// Merge `states` in order and compare the exact result with the sequential scan's.
fn assert_merges_into(states: Vec<ChunkState>, want: &(ScanOutput, Vec<ExactBacklog>), what: &str) {
    let merged = states
        .into_iter()
        .reduce(|a, b| a.merge(b).expect("in order"))
        .expect("chunks");
    assert_same(&merged.finish_exact().expect("exact"), want, what);
}

/// Scan `arrivals` cut at `cuts` as the driver does (the first chunk keeps no head, the last no
/// tail); the states, in order.
fn states_at(config: &ScanConfig, arrivals: &[Arrival], cuts: &[usize]) -> Vec<ChunkState> {
    let ends: Vec<usize> = cuts.iter().copied().chain([arrivals.len()]).collect();
    let mut from = 0;
    ends.iter()
        .enumerate()
        .map(|(k, &to)| {
            let edges = Edges {
                first: k == 0,
                last: k + 1 == ends.len(),
            };
            let mut s = ChunkScanner::with_options(config.clone(), DEFAULT_INSTANT_CAP, edges)
                .expect("config");
            for a in &arrivals[from..to] {
                s.push(a).expect("push");
            }
            from = to;
            s.finish().expect("finish")
        })
        .collect()
}

/// Per group of `state`: whether its head is the envelope's ring itself (`None`: no head).
fn heads_in_ring(state: &ChunkState) -> Vec<Option<bool>> {
    state
        .groupings
        .iter()
        .flat_map(|(_, g)| g.values())
        .map(|g| g.head.as_ref().map(|h| matches!(h, Kept::Ring(_))))
        .collect()
}

#[test]
fn a_head_stays_in_the_rings_slots_unless_the_ring_could_come_round_onto_it() {
    // A packet every µs after the cut at 10,000. With 4.5 ms windows the ring holds all of the
    // second chunk's first 4,501 packets (8,192 slots), then its trails leave the first packet:
    // a chunk of 5,000 packets ends before the ring could come round, one of 40,000 does not,
    // and its head must be copied out in time. A window longer than the chunk never lets its
    // first packet go. A chunk with a tail as well (the middle of three) copies its head at the
    // end, as the ring becomes the tail. Each merged result is the sequential scan's; whole
    // timestamps (a 5 s window) and short ones alike, and a gap of 9 s after the head (further
    // than short stamps tell apart from the head's last packet), the head copied or not.
    let steady = |n: usize, gap_after: Option<usize>| -> Vec<Arrival> {
        (0..n)
            .map(|i| {
                let gap = gap_after.filter(|&g| i >= g).map_or(0, |_| 9_000_000_000);
                Arrival::new(i as i64 * 1_000 + gap, 60 + (i as u64 * 7) % 1400)
            })
            .collect()
    };
    // Name, packets, the longest window, cuts, and whether each later chunk's head is the ring.
    type Case = (&'static str, Vec<Arrival>, i64, Vec<usize>, [bool; 2]);
    let cases: [Case; 7] = [
        (
            "closed, in the ring",
            steady(15_000, None),
            4_500_000,
            vec![10_000],
            [true; 2],
        ),
        (
            "come round",
            steady(50_000, None),
            4_500_000,
            vec![10_000],
            [false; 2],
        ),
        (
            "open to the end",
            steady(13_000, None),
            1_000_000_000,
            vec![10_000],
            [true; 2],
        ),
        (
            "whole stamps",
            steady(50_000, None),
            5_000_000_000,
            vec![10_000],
            [true; 2],
        ),
        (
            "a 9 s gap after the head",
            steady(60_000, Some(14_000)),
            1_000_000_000,
            vec![10_000],
            [false; 2],
        ),
        (
            "middle of three",
            steady(20_000, None),
            4_500_000,
            vec![10_000, 15_000],
            [false, true],
        ),
        (
            "a 9 s gap after a head left in the ring",
            steady(15_100, Some(15_000)),
            1_000_000_000,
            vec![10_000],
            [true; 2],
        ),
    ];
    for (name, t, window, cuts, in_ring) in cases {
        for closure in [Closure::HalfOpen, Closure::Closed] {
            let c = ScanConfig {
                windows_ns: vec![1_000, 50_000, window],
                closure,
                rates_bps: vec![8_000_000_000],
                by: vec![By::All],
                reorder_horizon_ns: 0,
                ..ScanConfig::default()
            };
            let want = sequential(&c, &t);
            let states = states_at(&c, &t, &cuts);
            // The first chunk keeps no head; each later one's head is where the case says.
            let kinds: Vec<Vec<Option<bool>>> = states.iter().map(heads_in_ring).collect();
            assert_eq!(kinds[0], vec![None], "{name}: first chunk");
            for (k, &ring) in in_ring.iter().enumerate().take(states.len() - 1) {
                assert_eq!(kinds[k + 1], vec![Some(ring)], "{name}: chunk {}", k + 1);
            }
            assert_merges_into(states, &want, &format!("{name}, {closure:?}"));
        }
    }
}

#[test]
fn heads_of_groups_fallen_silent_are_copied_before_a_trim_shrinks_their_rings() {
    // Forty interfaces of 3,000 packets (3 ms) each, a 10 ms window: an interface falls silent
    // with its head still open, every packet of it within the window of its first. The trim at
    // the second chunk's packet 65,536 finds the early ones silent for more than the window:
    // their heads are complete, and copied before their rings shrink; the last ones' heads are
    // still their rings at the end. Both merge into the sequential scan.
    let t = interfaces_in_turn(40, 3_000);
    for closure in [Closure::HalfOpen, Closure::Closed] {
        let c = ScanConfig {
            windows_ns: vec![1_000, 10_000_000],
            closure,
            rates_bps: vec![1_000_000_000],
            by: vec![By::All, By::Interface],
            reorder_horizon_ns: 0,
            ..ScanConfig::default()
        };
        let want = sequential(&c, &t);
        for cuts in [vec![20_000], vec![20_000, 108_000]] {
            let states = states_at(&c, &t, &cuts);
            let kinds: Vec<Vec<Option<bool>>> = states.iter().map(heads_in_ring).collect();
            if let [_, second] = &kinds[..] {
                assert!(
                    second.contains(&Some(true)) && second.contains(&Some(false)),
                    "{second:?}"
                );
            } else {
                // The middle chunk's rings are its tails: its heads are copies; the last's are
                // rings (none trimmed in its 12,000 packets, the aggregate's not come round).
                assert!(kinds[1].iter().all(|&k| k == Some(false)), "{kinds:?}");
                assert!(kinds[2].iter().all(|&k| k == Some(true)), "{kinds:?}");
            }
            assert_merges_into(states, &want, &format!("{cuts:?}, {closure:?}"));
        }
    }
}

#[test]
fn a_trim_closes_the_head_of_a_group_fallen_silent_within_it() {
    // Interface 0 sends every µs to 120 ms; interface 1 sends 50 packets at 5 ms (in the first
    // chunk, so that windows across the seam need the second's head) and 200 from 12 ms, then
    // nothing while the second chunk (from 10 ms) trims at its packet 65,536 (about 75 ms),
    // past the head's end (12 ms + the longest reach). That trim must close the head: with a
    // 10 ms window interface 1's burst (200 µs) is idle past the reach too, its packets let
    // go and its ring shrunk, so the head is copied out first (left open, it was lost and
    // the merge refused); with a 50 ms window (a burst of 30 ms) nothing is let go and the
    // closed head stays in the ring. Then interface 1 is silent to the end, or sends again
    // from 80 ms until its trails leave its first packet and the head is copied before the
    // ring could come round onto it. Each merged result is the sequential scan's.
    let trace = |gap: i64, resume: bool| -> Vec<Arrival> {
        let on = |interface: u32, ts_ns: i64, size: u64| Arrival {
            ts_ns,
            size,
            interface,
            headers: Headers::default(),
        };
        let mut t: Vec<Arrival> = (0..120_000i64)
            .map(|i| on(0, i * 1_000, 60 + (i as u64 * 13) % 1400))
            .chain((0..50i64).map(|i| on(1, 5_000_000 + i * 1_000, 1_400)))
            .chain((0..200i64).map(|i| on(1, 12_000_000 + i * gap, 100 + i as u64 % 9)))
            .chain(
                (0..if resume { 3_000i64 } else { 0 })
                    .map(|i| on(1, 80_000_000 + i * 10_000, 1_000 + i as u64 % 5)),
            )
            .collect();
        t.sort_by_key(|a| a.ts_ns);
        t
    };
    // The longest window, the burst's spacing, whether interface 1 sends again, and whether
    // its head in the second of two chunks is the ring itself.
    for (tau, gap, resume, in_ring) in [
        (10_000_000, 1_000, false, false),
        (10_000_000, 1_000, true, false),
        (50_000_000, 150_000, false, true),
        (50_000_000, 150_000, true, false),
    ] {
        let t = trace(gap, resume);
        for closure in [Closure::HalfOpen, Closure::Closed] {
            let c = ScanConfig {
                windows_ns: vec![1_000, tau],
                closure,
                rates_bps: vec![1_000_000_000],
                by: vec![By::All, By::Interface],
                reorder_horizon_ns: 0,
                ..ScanConfig::default()
            };
            let want = sequential(&c, &t);
            for cuts in [vec![10_000], vec![10_000, 100_000]] {
                let what = format!("{tau} ns, resume {resume}, {cuts:?}, {closure:?}");
                let states = states_at(&c, &t, &cuts);
                // The groups in key order: the aggregate, interface 0, interface 1.
                let second = heads_in_ring(&states[1]);
                let want_head = Some(in_ring && cuts.len() == 1);
                assert_eq!(
                    second.get(2).copied(),
                    Some(want_head),
                    "{what}: {second:?}"
                );
                assert_merges_into(states, &want, &what);
            }
        }
    }
}
