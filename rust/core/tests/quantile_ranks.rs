//! Size quantiles at fractional ranks, against a sorted list. Found by mutation testing: rounding
//! the rank q·n to the nearest integer instead of up passed every Rust test, whose traces had
//! packet counts (4000) at which q·n is a whole number for every q they asked.

use burstcore::analysis::SizeHistogram;

/// The q-quantile by definition: the smallest size with at least ⌈q·n⌉ sizes at or below it.
fn by_sorting(sizes: &[u64], q: f64) -> u64 {
    let mut s = sizes.to_vec();
    s.sort_unstable();
    // Exact rational ceiling of q·n for the q used here (multiples of 1/100).
    let hundredths = (q * 100.0).round() as usize;
    let rank = (hundredths * s.len()).div_ceil(100).max(1);
    s[rank - 1]
}

#[test]
fn quantiles_take_the_rank_rounded_up() {
    // Every count from 1 to 40 packets, so q·n falls between integers, below and above the half.
    let all: Vec<u64> = (0..40u64).map(|i| 60 + (i * 37) % 1441).collect();
    for n in 1..=all.len() {
        let sizes = &all[..n];
        let mut h = SizeHistogram::new();
        for &s in sizes {
            h.add(s);
        }
        for q in [0.0, 0.01, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 0.99, 1.0] {
            assert_eq!(h.quantile(q), Some(by_sorting(sizes, q)), "n {n} q {q}");
        }
        assert_eq!(h.min(), sizes.iter().copied().min());
        assert_eq!(h.max(), sizes.iter().copied().max());
    }
}
