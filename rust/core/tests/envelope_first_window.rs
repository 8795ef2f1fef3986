//! E(τ) through the scanner where the envelope's first window (the one still reaching back to a
//! group's first packet, which `advance` takes in one step) is made of empty packets, or goes
//! on past a catch-up of the windows (every 1024 packets): hand-worked rows, and the brute force
//! of `engine::reference`. Both were found by mutation testing of `engine/envelope.rs`: the
//! envelope's own unit tests passed with that step's tie rules broken (only the random scans
//! of `engine_random` caught it).

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
