//! E(τ) where a window's trail sits at the oldest packet the envelope's ring holds while the
//! ring is exactly full: the slot of the packet before the trail then holds the newest packet.
//! A trail gets there when a packet comes more than 2³² ns (the span of the ring's 32-bit
//! stamps) after the packets before it: the trails move on to it, and the ring keeps nothing
//! older. `steady` may look `max_packets` packets back only from a packet at least that far
//! past the trail; a mutant that let it look from the trail itself (`trail * max_packets` for
//! `trail + max_packets` in `advance`) read the overwritten slot and skipped the new maximum.
//! Checked against the brute force of `engine::reference` and a hand-worked row.

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
    assert_eq!(
        (
            row.bytes,
            row.packets_in_window,
            row.start_ns,
            row.max_packets
        ),
        (200, 1, 5_000_000_000, 1)
    );
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
