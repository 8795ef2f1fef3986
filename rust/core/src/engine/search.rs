//! Searches along sequences on which a condition turns from false to true once (prefix sums and
//! timestamps never decrease): the envelope's ring and the packets kept at a chunk's seam.

/// The first index in `from..to` where `holds` is true, or `to` if it never is; `holds` must be
/// false and then true along the indices. Galloping from `from` finds the end of a stretch in a
/// few reads however long it is, and the first probe settles the common case where the very
/// next index already holds.
#[inline]
pub(crate) fn first_where(from: u64, to: u64, holds: impl Fn(u64) -> bool) -> u64 {
    if from >= to || holds(from) {
        return from.min(to);
    }
    // !holds(lo), and holds(hi) or hi = to.
    let (mut lo, mut hi) = (from, to);
    let mut step = 1;
    while step < hi - lo {
        let probe = lo + step;
        if holds(probe) {
            hi = probe;
            break;
        }
        lo = probe;
        step *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::first_where;

    #[test]
    fn finds_the_first_index_that_holds() {
        for n in 0..40u64 {
            for turn in 0..=n + 1 {
                for from in 0..=n {
                    let got = first_where(from, n, |i| i >= turn);
                    assert_eq!(got, turn.clamp(from, n), "n {n}, turn {turn}, from {from}");
                }
            }
        }
    }
}
