//! Superposition of several traces: an exact k-way merge on timestamps with per-source offsets.
//!
//! The merge holds one pending packet per source in a binary heap ordered by
//! (shifted timestamp, source index, sequence number within the source), so ties are broken
//! deterministically and the merge is stable. A packet whose shifted timestamp leaves the i64
//! range is left out and counted ([`Merge::out_of_range`]): pinned to i64::MIN/MAX, every such
//! packet would land at one instant and make a burst that never happened.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::Arrival;

/// Merge of ordered `Arrival` iterators. Yields (source index, arrival with shifted timestamp).
#[derive(Debug)]
pub struct Merge<I: Iterator<Item = Arrival>> {
    sources: Vec<(I, i64, u64)>,
    heap: BinaryHeap<Reverse<(i64, usize, u64)>>,
    pending: Vec<Option<Arrival>>,
    out_of_range: u64,
}

impl<I: Iterator<Item = Arrival>> Merge<I> {
    /// `offsets_ns[k]` is added to every timestamp of source k (missing offsets are 0).
    pub fn new(sources: Vec<I>, offsets_ns: &[i64]) -> Self {
        let n = sources.len();
        let mut m = Merge {
            sources: sources
                .into_iter()
                .enumerate()
                .map(|(k, it)| (it, offsets_ns.get(k).copied().unwrap_or(0), 0u64))
                .collect(),
            heap: BinaryHeap::with_capacity(n),
            pending: vec![None; n],
            out_of_range: 0,
        };
        for k in 0..n {
            m.refill(k);
        }
        m
    }

    /// Packets left out so far because their shifted timestamp is outside the i64 range.
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    fn refill(&mut self, k: usize) {
        let Some((it, off, seq)) = self.sources.get_mut(k) else {
            return;
        };
        let mut next = it.next();
        while let Some(a) = next.as_mut() {
            if let Some(ts) = a.ts_ns.checked_add(*off) {
                a.ts_ns = ts;
                break;
            }
            self.out_of_range += 1;
            next = it.next();
        }
        if let Some(a) = next {
            self.heap.push(Reverse((a.ts_ns, k, *seq)));
            *seq = seq.saturating_add(1);
            if let Some(p) = self.pending.get_mut(k) {
                *p = Some(a);
            }
        }
    }
}

impl<I: Iterator<Item = Arrival>> Iterator for Merge<I> {
    type Item = (usize, Arrival);

    fn next(&mut self) -> Option<(usize, Arrival)> {
        let Reverse((_, k, _)) = self.heap.pop()?;
        let a = self.pending.get_mut(k)?.take()?;
        self.refill(k);
        Some((k, a))
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by the golden-ratio constant and
/// mixed by two multiply-xorshift rounds. Tiny, fast, full period 2^64, and fixed here so a seed
/// gives the same offsets on every platform and version. Not for cryptography.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, bound] (inclusive), without modulo bias (rejection sampling).
    pub fn below_incl(&mut self, bound: u64) -> u64 {
        if bound == u64::MAX {
            return self.next_u64();
        }
        let span = bound + 1;
        // Largest multiple of span that fits: values at or above it would bias the low residues.
        let zone = u64::MAX - (u64::MAX % span);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % span;
            }
        }
    }
}

/// `n` offsets uniform in [0, max_ns] (max_ns < 0 gives all zeros) from SplitMix64 seeded with
/// `seed`.
pub fn random_offsets(n: usize, max_ns: i64, seed: u64) -> Vec<i64> {
    let mut rng = SplitMix64(seed);
    let bound = u64::try_from(max_ns).unwrap_or(0);
    (0..n)
        .map(|_| i64::try_from(rng.below_incl(bound)).unwrap_or(0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Headers;

    fn at(ts_ns: i64) -> Arrival {
        Arrival {
            ts_ns,
            size: 60,
            interface: 0,
            headers: Headers::default(),
        }
    }

    #[test]
    fn shifted_times_past_the_i64_range_are_left_out_and_counted() {
        let near_end = vec![at(i64::MAX - 20), at(i64::MAX - 10), at(i64::MAX)];
        let near_start = vec![at(i64::MIN), at(i64::MIN + 5)];
        let mut m = Merge::new(
            vec![near_end.into_iter(), near_start.into_iter()],
            &[10, -1],
        );
        let got: Vec<(usize, i64)> = m.by_ref().map(|(k, a)| (k, a.ts_ns)).collect();
        // Pinned to i64::MAX/MIN they would have been kept, all at one instant.
        assert_eq!(got, [(1, i64::MIN + 4), (0, i64::MAX - 10), (0, i64::MAX)]);
        assert_eq!(m.out_of_range(), 2);
    }
}
