//! E(τ) of two time chunks merged, at the edges of the seam replay (`engine/chunk.rs`,
//! `replay`), each case worked by hand below and checked against the brute force of
//! `engine::reference` and against the sequential scan. Guards, not gaps: the merge's random
//! tests (`engine::chunk::tests`) caught each mutant below too, but only on seeds that happen to
//! land on its edge; these cases pin each edge by hand. Each fails on a mutant of the replay:
//! `<=` for `<` in the test of whether a's own best crosses the seam, or in the bisection for
//! the first start that reaches b; `>=` for `>` in `first_after`; `-` for `+` in the skipped
//! block's bound on bytes or on packets.
//!
//! All cases use a window reaching 100 ns (τ = 100 closed, τ = 101 half-open) and cut the trace
//! into chunk a (before the seam) and chunk b (after it):
//! - a window of a that ends exactly at b's first packet: it crosses the seam, so only the
//!   replay may report it, never a's own best, which lacks b's packets (here a zero-size one:
//!   the bytes tie and only the packet count tells);
//! - the replay skips a block of starts when even the tail from the block's first start plus
//!   the head up to its last start's reach cannot beat the best bytes or the most packets.
//!   That bound must count the head packets exactly at the reach (closed at its end), add the
//!   head's bytes, and add its packets.

use burstcore::engine::chunk::{ChunkScanner, Edges, DEFAULT_INSTANT_CAP};
use burstcore::engine::reference;
use burstcore::engine::{Arrival, By, Closure, EnvelopeRow, ScanConfig, Scanner};

/// τ with a reach of 100 ns under `closure` (the largest t − s of two packets in one window).
fn tau(closure: Closure) -> i64 {
    match closure {
        Closure::Closed => 100,
        Closure::HalfOpen => 101,
    }
}

fn config(closure: Closure) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![tau(closure)])
        .with_closure(closure)
        .with_by(vec![By::All])
}

/// The envelope row of `a` then `b` scanned as two chunks and merged; `trim`: the first keeps
/// no head and the last no tail, as the threaded driver scans them.
fn merged(a: &[(i64, u64)], b: &[(i64, u64)], closure: Closure, trim: bool) -> EnvelopeRow {
    let mut states = Vec::new();
    for (k, part) in [a, b].into_iter().enumerate() {
        let edges = Edges {
            first: trim && k == 0,
            last: trim && k == 1,
        };
        let mut c =
            ChunkScanner::with_options(config(closure), DEFAULT_INSTANT_CAP, edges).unwrap();
        for &(ts, size) in part {
            c.push_lean(ts, size, 0).unwrap();
        }
        states.push(c.finish().unwrap());
    }
    let second = states.pop().unwrap();
    let out = states.pop().unwrap().merge(second).unwrap();
    let mut rows = out.finish().unwrap().envelope;
    assert_eq!(rows.len(), 1);
    rows.pop().unwrap()
}

/// Bytes, packets in the window, its start, most packets in any window.
type Row = (u128, u64, i64, u64);

/// The merged row of `a` then `b` under both closures and both edge settings equals `want`
/// (worked by hand), the brute force's row and the sequential scan's.
fn check(a: &[(i64, u64)], b: &[(i64, u64)], want: Row, ctx: &str) {
    let all: Vec<(i64, u64)> = a.iter().chain(b).copied().collect();
    for closure in [Closure::Closed, Closure::HalfOpen] {
        let r = reference::envelope(&all, tau(closure), closure).unwrap();
        let oracle = (r.bytes, r.packets_in_window, r.start_ns, r.max_packets);
        assert_eq!(oracle, want, "{ctx}, {closure:?}: the hand-worked row");
        let mut s = Scanner::new(config(closure)).unwrap();
        for &(ts, size) in &all {
            s.push(&Arrival::new(ts, size)).unwrap();
        }
        let seq = &s.finish().unwrap().envelope[0];
        let fields = |e: &EnvelopeRow| {
            (
                u128::from(e.bytes),
                e.packets_in_window,
                e.start_ns,
                e.max_packets,
            )
        };
        assert_eq!(fields(seq), want, "{ctx}, {closure:?}: sequential");
        for trim in [false, true] {
            let got = merged(a, b, closure, trim);
            assert_eq!(
                fields(&got),
                want,
                "{ctx}, {closure:?}, trim {trim}: merged"
            );
        }
    }
}

#[test]
fn a_window_ending_at_the_seam_counts_the_next_chunks_packets_there() {
    // a's best is its one packet, the window [0, 100]; b's first packet, at 100, lies in it.
    // With 0 bytes there, a's own best (100 bytes, 1 packet) ties the window that crosses
    // (100 bytes, 2 packets): only the crossing one is right. (A replay that took a's best as
    // not crossing because 0 + 100 ≤ 100 kept the tie's first candidate, 1 packet.)
    check(
        &[(0, 100)],
        &[(100, 0)],
        (100, 2, 0, 2),
        "zero-size packet at the reach",
    );
    // With bytes there the crossing window is larger: [0, 100] holds 150 bytes. (A bisection
    // that left out starts whose reach ends exactly at b's first packet lost it: 50 from 100.)
    check(
        &[(0, 100)],
        &[(100, 50)],
        (150, 2, 0, 2),
        "packet at the reach",
    );
}

#[test]
fn a_skipped_block_of_starts_counts_the_head_up_to_its_reach() {
    // a: 1000 bytes at 0 (two packets of 500), whose window [0, 100] ends before b: the best
    // before the replay, with 2 packets at most. The tail's one start, 150, reaches 250 exactly,
    // where b's 500 bytes are: [150, 250] holds 600 + 500 = 1100 bytes in 2 packets, the best.
    // Bounding the block by the head before 250 (600 ≤ 1000), or subtracting the head's bytes
    // (600 − 500 ≤ 1000), skipped it and kept 1000 from 0.
    check(
        &[(0, 500), (0, 500), (150, 600)],
        &[(250, 500)],
        (1100, 2, 150, 2),
        "bytes at the block's reach",
    );
}

#[test]
fn a_skipped_block_of_starts_counts_the_heads_packets() {
    // a: 1000 bytes at 0 in one packet, the best, and 1 packet at most within a. The tail's
    // start 150 and b's packet at 250 are empty: [150, 250] cannot beat the bytes, but holds
    // 2 packets, the most of any window. Subtracting the head's packets from the block's bound
    // on them (1 + 0 − 1 ≤ 1) skipped it and reported 1.
    check(
        &[(0, 1000), (150, 0)],
        &[(250, 0)],
        (1000, 1, 0, 2),
        "empty packets at the seam",
    );
}
