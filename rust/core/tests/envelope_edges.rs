//! E(τ) through the scanner at edges of the envelope's `advance` found by mutation testing of
//! `engine/envelope.rs` (the envelope's own unit tests passed with each broken), each checked
//! against hand-worked rows and the brute force of `engine::reference`:
//! - the first window (the one still reaching back to a group's first packet, which `advance`
//!   takes in one step) made of empty packets, or going on past a catch-up of the windows
//!   (every 1024 packets): its tie rules (only the random scans of `engine_random` caught them);
//! - a window's trail at the oldest packet the ring holds while the ring is exactly full, where
//!   the slot of the packet before the trail holds the newest packet. A trail gets there when a
//!   packet comes more than 2³² ns (the span of the ring's 32-bit stamps) after the packets
//!   before it: the trails move on to it, and the ring keeps nothing older. `steady` may look
//!   `max_packets` packets back only from a packet at least that far past the trail; a mutant
//!   that let it look from the trail itself (`trail * max_packets` for `trail + max_packets`)
//!   read the overwritten slot and skipped the new maximum.

use burstcore::engine::reference;
use burstcore::engine::{Arrival, By, Closure, EnvelopeRow, ScanConfig, Scanner};

/// The envelope rows of one aggregate scan of `packets` (sorted), a row per window.
fn scan(packets: &[(i64, u64)], windows: &[i64], closure: Closure) -> Vec<EnvelopeRow> {
    let config = ScanConfig::default()
        .with_windows_ns(windows.to_vec())
        .with_closure(closure)
        .with_by(vec![By::All]);
    let mut scanner = Scanner::new(config).unwrap();
    for &(ts, size) in packets {
        scanner.push(&Arrival::new(ts, size)).unwrap();
    }
    scanner.finish().unwrap().envelope
}

/// Bytes, packets in the window, its start, and most packets in any window.
fn fields(row: &EnvelopeRow) -> (u64, u64, i64, u64) {
    (
        row.bytes,
        row.packets_in_window,
        row.start_ns,
        row.max_packets,
    )
}

/// Every envelope row of one aggregate scan of `packets` (sorted) equals the oracle's.
fn check(packets: &[(i64, u64)], windows: &[i64], closure: Closure, ctx: &str) {
    let rows = scan(packets, windows, closure);
    assert_eq!(rows.len(), windows.len(), "{ctx}");
    for (row, &tau) in rows.iter().zip(windows) {
        let want = reference::envelope(packets, tau, closure).unwrap();
        let got = (
            u128::from(row.bytes),
            row.packets_in_window,
            row.start_ns,
            row.max_packets,
        );
        let want = (
            want.bytes,
            want.packets_in_window,
            want.start_ns,
            want.max_packets,
        );
        assert_eq!(got, want, "{ctx}, τ {tau}, {closure:?}");
    }
}

#[test]
fn a_group_that_starts_with_empty_packets_reports_where_they_are() {
    // Zero-size packets at 100, 105 and 130 ns, then one of 10 bytes at 140, and a window of
    // 10 ns (half-open, reach 9). Its first window holds {100, 105}: 0 bytes in 2 packets from
    // 100, the earliest start of the most bytes (0), until the packet at 140 holds 10 bytes
    // alone (130 is 10 ns before it, past the reach). So E(10) = 10 bytes, 1 packet, from 140,
    // and at most 2 packets in a window. With only the first three packets, E(10) is 0 bytes
    // in 2 packets from 100: the first window counts with nothing in it, and starts at 100.
    let empty = [(100, 0), (105, 0), (130, 0)];
    check(&empty, &[10], Closure::HalfOpen, "empty");
    let row = scan(&empty, &[10], Closure::HalfOpen).pop().unwrap();
    assert_eq!(fields(&row), (0, 2, 100, 2));
    let then_bytes = [(100, 0), (105, 0), (130, 0), (140, 10)];
    check(&then_bytes, &[10], Closure::HalfOpen, "then bytes");
    let row = scan(&then_bytes, &[10], Closure::HalfOpen).pop().unwrap();
    assert_eq!(fields(&row), (10, 1, 140, 2));
}

#[test]
fn empty_packets_after_a_batch_still_count_in_the_first_window() {
    // 1100 packets 1 ns apart (0..=1099 ns), 1 byte each up to 999 ns and empty after, all in
    // one window of 2²⁰ ns: the first window holds them all, so E = 1000 bytes in 1100 packets
    // from 0, and at most 1100 packets in a window. The windows catch up every 1024 packets
    // (and when the scanner trims), so the empty packets straddle a catch-up: those after it
    // still join the first window's count though they add no bytes.
    let packets: Vec<(i64, u64)> = (0..1100).map(|i| (i, u64::from(i < 1000))).collect();
    for closure in [Closure::HalfOpen, Closure::Closed] {
        check(&packets, &[1 << 20], closure, "empty tail");
        let row = scan(&packets, &[1 << 20], closure).pop().unwrap();
        assert_eq!(fields(&row), (1000, 1100, 0, 1100));
    }
}

/// A packet of 100 bytes at 0, then one of `big` bytes 5 s later (past the stamps' span), then
/// `empty` zero-size packets 1 µs apart.
fn trace(big: u64, empty: usize) -> Vec<(i64, u64)> {
    const LATER: i64 = 5_000_000_000;
    let mut packets = vec![(0, 100), (LATER, big)];
    packets.extend((1..=empty as i64).map(|k| (LATER + 1_000 * k, 0)));
    packets
}

#[test]
fn a_new_maximum_right_after_the_stamps_span_with_the_ring_exactly_full() {
    // Hand-worked: with τ = 10 ns every window holds one packet, so E(10) is the larger packet,
    // 200 bytes alone from 5 s, and at most one packet in a window. The ring starts with 16
    // slots; the trail moves to the 200-byte packet (sequence 1) before it is pushed, and with
    // 15 empty packets after it the ring holds sequences 1..=16, full, slot 0 holding the last.
    let packets = trace(200, 15);
    let row = scan(&packets, &[10], Closure::HalfOpen).pop().unwrap();
    assert_eq!(fields(&row), (200, 1, 5_000_000_000, 1));
    // Around it (a ring one short of full, full at 16, 32 and 64 slots, and between), both
    // closures, windows that hold one packet or several, and a first packet as large.
    for empty in [1, 13, 14, 15, 16, 17, 30, 31, 32, 63, 64, 100] {
        for big in [50, 100, 200] {
            for closure in [Closure::HalfOpen, Closure::Closed] {
                let packets = trace(big, empty);
                let ctx = format!("{empty} empty packets, {big} bytes");
                check(&packets, &[10, 1_000, 5_000, 1 << 20], closure, &ctx);
            }
        }
    }
}
