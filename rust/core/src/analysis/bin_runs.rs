//! Counts per bin of a time series that keeps only the stretches of bins near packets, so that
//! a quiet hour between two packets costs nothing: the iteration analysis kept every bin from
//! the first packet to the last, 2^24 bins of 8 bytes for each of its 18 series (2.4 GB) for a
//! capture of two packets 4.66 hours apart.

/// A gap of more bins than this after a run starts a new run instead of filling it with zeros:
/// small enough that a gap costs at most 8 kB, large enough that a busy series is one run.
const GAP_BINS: usize = 1024;

/// Counts per bin, as runs of consecutive bins (zeros between runs).
#[derive(Debug, Clone, Default)]
pub(crate) struct BinRuns {
    /// (first bin, the counts of the bins from it), in order of bins, not overlapping.
    runs: Vec<(usize, Vec<u64>)>,
}

impl BinRuns {
    /// Add `v` to bin `idx` (saturating). Bins come in time order, so this is the last run's.
    pub(crate) fn add(&mut self, idx: usize, v: u64) {
        // A bin before the last run's end (not in time order) finds its run, or a new one.
        let k = self.runs.partition_point(|(start, _)| *start <= idx);
        let last = k == self.runs.len();
        if let Some((start, bins)) = k.checked_sub(1).and_then(|k| self.runs.get_mut(k)) {
            let at = idx - *start;
            if at < bins.len() || (last && at - bins.len() <= GAP_BINS) {
                if at >= bins.len() {
                    bins.resize(at + 1, 0);
                }
                if let Some(b) = bins.get_mut(at) {
                    *b = b.saturating_add(v);
                }
                return;
            }
        }
        self.runs.insert(k, (idx, vec![v]));
    }

    /// The sum of every bin (saturating).
    pub(crate) fn sum(&self) -> u64 {
        self.runs
            .iter()
            .flat_map(|(_, bins)| bins)
            .fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// The first `len` bins summed `factor` to one (the last sum over what is left), as f64
    /// summed in order of bins: the same numbers as pooling the dense series, whose zeros add
    /// nothing.
    pub(crate) fn pool(&self, len: usize, factor: usize) -> Vec<f64> {
        let factor = factor.max(1);
        let mut out = vec![0.0; len.div_ceil(factor)];
        for (start, bins) in &self.runs {
            for (i, v) in bins.iter().enumerate() {
                if let Some(o) = out.get_mut((start + i) / factor) {
                    *o += *v as f64;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense series' pooling, as the analysis did it.
    fn dense_pool(x: &[u64], factor: usize) -> Vec<f64> {
        x.chunks(factor.max(1))
            .map(|c| c.iter().map(|v| *v as f64).sum())
            .collect()
    }

    #[test]
    fn runs_pool_as_the_dense_series_does() {
        let mut rng = crate::test_rng::Rng(7);
        for _ in 0..200 {
            let len = 1 + rng.below(20_000) as usize;
            let mut dense = vec![0u64; len];
            let mut runs = BinRuns::default();
            let mut idx = 0usize;
            for _ in 0..rng.below(300) {
                // Mostly in order, with gaps short and long, sometimes a step back.
                idx = match rng.below(10) {
                    0 => idx.saturating_sub(rng.below(3_000) as usize),
                    1..=3 => idx + rng.below(5_000) as usize,
                    _ => idx + rng.below(3) as usize,
                }
                .min(len - 1);
                let v = rng.below(1 << 40);
                dense[idx] += v;
                runs.add(idx, v);
            }
            assert_eq!(runs.sum(), dense.iter().sum::<u64>());
            for factor in [1, 2, 3, 7, 64, 1000, len] {
                assert_eq!(
                    runs.pool(len, factor),
                    dense_pool(&dense, factor),
                    "{len} {factor}"
                );
            }
        }
    }

    #[test]
    fn a_long_gap_holds_no_bins() {
        let mut runs = BinRuns::default();
        runs.add(0, 1);
        runs.add(1 << 24, 2);
        assert_eq!(runs.runs.iter().map(|(_, b)| b.len()).sum::<usize>(), 2);
        assert_eq!(runs.pool((1 << 24) + 1, 1 << 23), vec![1.0, 0.0, 2.0]);
    }
}
