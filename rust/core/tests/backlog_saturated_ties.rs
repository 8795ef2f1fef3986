//! The longest busy period when two periods both reach i64::MAX ns, where `busy_len` saturates:
//! the tie goes to the earlier one, as at any other equal length. `Lane::close` measures a
//! period only where `outlasts` says it may be longer, which is exact below i64::MAX, so a
//! mutant keeping the later period at equal lengths (`len >= longest`) passed every test whose
//! periods were shorter. Only a group spanning most of the i64 range gets there; its span puts
//! it in the u128 lanes, which run one by one (no vector lanes), through the public scanner.
//! Checked against the O(n³) oracle of `engine::reference` and hand-worked numbers.

use burstcore::engine::reference;
use burstcore::engine::{Arrival, By, ScanConfig, Scanner};

/// (rate, peak, longest busy period, its start) of one aggregate scan at one rate.
fn scan(packets: &[(i64, u64)], rate: u64) -> (u64, i64, i64, i64) {
    let config = ScanConfig::default()
        .with_windows_ns(vec![])
        .with_rates_bps(vec![rate])
        .with_by(vec![By::All]);
    let mut scanner = Scanner::new(config).unwrap();
    for &(ts, size) in packets {
        scanner.push(&Arrival::new(ts, size)).unwrap();
    }
    let out = scanner.finish().unwrap();
    assert_eq!(out.backlog.len(), 1);
    let row = &out.backlog[0];
    (
        row.rate_bps,
        row.peak_ns,
        row.longest_busy_ns,
        row.longest_busy_start_ns,
    )
}

#[test]
fn two_saturated_periods_keep_the_earlier() {
    // At 1 bit/s a byte takes 8·10⁹ ns. The first period holds 1 152 921 505 bytes from
    // i64::MIN: 9 223 372 040 000 000 000 ns ≥ i64::MAX, reported as i64::MAX; it ends at
    // i64::MIN + that = 3 145 224 192. The second, from 3 145 224 202, holds as many bytes and
    // saturates too. (Packets of at most 1 152 921 504 bytes, the largest a u64 lane takes.)
    let first = i64::MIN;
    let second = 3_145_224_202;
    let packets = [
        (first, 576_460_752),
        (first + 1, 576_460_753),
        (second, 1_152_921_504),
        (second + 1, 1),
    ];
    let want = reference::backlog(&packets, 1).unwrap();
    assert_eq!(want.longest_busy_ns, i64::MAX);
    assert_eq!(want.longest_busy_start_ns, first);
    let got = scan(&packets, 1);
    assert_eq!(
        got,
        (
            1,
            want.peak_ns,
            want.longest_busy_ns,
            want.longest_busy_start_ns
        )
    );
    assert_eq!((got.2, got.3), (i64::MAX, first));
}
