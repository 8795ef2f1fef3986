//! B_max(r) where a packet finds one unit of work (1/8·10⁹ byte) still queued: the queue is
//! kept exactly, so that unit is not served yet and the busy period goes on. Rates just below a
//! whole number of bytes per nanosecond (8·10⁹·L − 1 bit/s, coprime to the scale) get there; the
//! random rates of the unit tests never did, so a mutant of the scalar Lindley lanes that ended
//! the period one unit early (`q − 1 <= served` for `<` in `Lane::run`) passed them. Checked
//! against the O(n³) oracle of `engine::reference` and a hand-worked case. On a CPU with AVX2
//! the vector lanes take the first burst and the mutant shows at the second one, a period that
//! may tie the longest (handed to the scalar lanes): its peak moved to the second burst.

use burstcore::engine::reference;
use burstcore::engine::{Arrival, By, ScanConfig, Scanner, BACKLOG_SCALE};

/// Rows of one aggregate scan: (rate, exact B_max, peak, longest busy period, its start).
fn scan(packets: &[(i64, u64)], rates: &[u64]) -> Vec<(u64, u128, i64, i64, i64)> {
    let config = ScanConfig::default()
        .with_windows_ns(vec![])
        .with_rates_bps(rates.to_vec())
        .with_by(vec![By::All]);
    let mut scanner = Scanner::new(config).unwrap();
    for &(ts, size) in packets {
        scanner.push(&Arrival::new(ts, size)).unwrap();
    }
    let (out, exact) = scanner.finish_exact().unwrap();
    assert_eq!(out.backlog.len(), exact.len());
    out.backlog
        .iter()
        .zip(&exact)
        .map(|(row, e)| {
            assert_eq!(row.rate_bps, e.rate_bps);
            (
                row.rate_bps,
                e.bmax_scaled,
                row.peak_ns,
                row.longest_busy_ns,
                row.longest_busy_start_ns,
            )
        })
        .collect()
}

fn check(packets: &[(i64, u64)], rates: &[u64], ctx: &str) {
    let got = scan(packets, rates);
    assert_eq!(got.len(), rates.len(), "{ctx}");
    for (row, &rate) in got.iter().zip(rates) {
        let want = reference::backlog(packets, rate).unwrap();
        let want = (
            rate,
            want.bmax_scaled,
            want.peak_ns,
            want.longest_busy_ns,
            want.longest_busy_start_ns,
        );
        assert_eq!(*row, want, "{ctx}, rate {rate}");
    }
}

#[test]
fn one_unit_of_work_left_keeps_the_period_open() {
    // Hand-worked: 1 byte at 0 and 1 byte at 1 ns, served at 8·10⁹ − 1 bit/s. In units of
    // bit·ns/s the first leaves 8·10⁹ queued, 1 ns serves 8·10⁹ − 1, so the second finds 1
    // unit and leaves 8·10⁹ + 1: B_max is that, at 1 ns. The period runs from 0 and drains
    // ⌈(8·10⁹ + 1)/(8·10⁹ − 1)⌉ = 2 ns after 1 ns: 3 ns long.
    let rate = BACKLOG_SCALE - 1;
    let got = scan(&[(0, 1), (1, 1)], &[rate]);
    assert_eq!(got, vec![(rate, u128::from(BACKLOG_SCALE) + 1, 1, 3, 0)]);

    // Around it: 0, 1 or 2 units left (or the queue empty one unit early), after packets of
    // L bytes 1 or 3 ns apart, alone and among rates the vector lanes take eight at a time,
    // then a quiet gap and the same again (a second period of equal length).
    for l in [1u64, 2, 1500] {
        for gap in [1i64, 3] {
            let whole = BACKLOG_SCALE * l;
            // rate × gap = whole − left, for left in −1..=2 (rates divisible where needed).
            let mut rates: Vec<u64> = (-1i64..=2)
                .filter_map(|left| {
                    let served = whole.checked_add_signed(-left)?;
                    (served % gap as u64 == 0).then_some(served / gap as u64)
                })
                .collect();
            rates.sort_unstable();
            let mut packets = Vec::new();
            for start in [0i64, 1_000_000] {
                packets.extend((0..4).map(|k| (start + k * gap, l)));
            }
            let ctx = format!("{l} B every {gap} ns");
            check(&packets, &rates, &ctx);
            let mut many = rates.clone();
            many.extend((1..=9).map(|k| k * 1_000_000_007));
            many.sort_unstable();
            many.dedup();
            check(&packets, &many, &format!("{ctx}, among others"));
        }
    }
}
