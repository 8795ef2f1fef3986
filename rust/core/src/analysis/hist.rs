//! Packet-size and inter-arrival-gap histograms with exact counts.
//!
//! Sizes: one counter per byte count 0..=65535 plus an overflow bucket, so size quantiles are
//! exact (for sizes up to 65535). Gaps: log2 buckets of nanoseconds (bucket 0 holds gap 0,
//! bucket k ≥ 1 holds [2^(k-1), 2^k)), so a gap quantile is known to within its bucket.

use std::collections::HashMap;
use std::hash::Hash;

use crate::engine::Arrival;

/// Exact counts per packet size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeHistogram {
    counts: Vec<u64>,
    /// Sizes above 65535, and the largest of them.
    pub overflow: u64,
    pub overflow_max: u64,
    pub count: u64,
    pub bytes: u64,
}

pub const SIZE_BUCKETS: usize = 65536;
/// Bucket 0 for gap 0, then one per bit length of the gap: 64 covers every i64.
pub const GAP_BUCKETS: usize = 65;

impl Default for SizeHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl SizeHistogram {
    pub fn new() -> Self {
        SizeHistogram {
            counts: vec![0; SIZE_BUCKETS],
            overflow: 0,
            overflow_max: 0,
            count: 0,
            bytes: 0,
        }
    }

    pub fn add(&mut self, size: u64) {
        match usize::try_from(size)
            .ok()
            .and_then(|i| self.counts.get_mut(i))
        {
            Some(c) => *c = c.saturating_add(1),
            None => {
                self.overflow = self.overflow.saturating_add(1);
                self.overflow_max = self.overflow_max.max(size);
            }
        }
        self.count = self.count.saturating_add(1);
        self.bytes = self.bytes.saturating_add(size);
    }

    /// Packets of exactly `size` bytes (sizes above 65535: see `overflow`).
    pub fn count_of(&self, size: u64) -> u64 {
        usize::try_from(size)
            .ok()
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Non-empty (size, count) pairs in increasing size.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(s, c)| (s as u64, *c))
    }

    /// The q-quantile as the smallest size s with at least ceil(q·count) packets ≤ s (q in \[0,1\];
    /// q = 0 gives the minimum). `None` when empty. Exact; in the overflow bucket the answer is
    /// the largest overflowing size, an upper bound.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let rank = rank_for(q, self.count)?;
        let mut seen = 0u64;
        for (s, c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                return Some(s as u64);
            }
        }
        Some(self.overflow_max)
    }

    pub fn min(&self) -> Option<u64> {
        self.quantile(0.0)
    }

    pub fn max(&self) -> Option<u64> {
        self.quantile(1.0)
    }
}

/// 1-based rank of the q-quantile among `n` values: max(1, ceil(q·n)), computed without floats
/// drifting past n.
fn rank_for(q: f64, n: u64) -> Option<u64> {
    if n == 0 || q.is_nan() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    let r = (q * n as f64).ceil();
    // The float product may round up past an exact integer; clamp into [1, n].
    Some((r as u64).clamp(1, n))
}

/// Exact counts of inter-arrival gaps per log2 bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapHistogram {
    pub counts: [u64; GAP_BUCKETS],
    pub count: u64,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    last_ts: Option<i64>,
}

impl Default for GapHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl GapHistogram {
    pub fn new() -> Self {
        GapHistogram {
            counts: [0; GAP_BUCKETS],
            count: 0,
            min_ns: None,
            max_ns: None,
            last_ts: None,
        }
    }

    /// Bucket of a gap: 0 for 0, else its bit length (a negative gap, impossible in order, is 0).
    pub fn bucket_of(gap_ns: i64) -> usize {
        if gap_ns <= 0 {
            0
        } else {
            (64 - gap_ns.leading_zeros()) as usize
        }
    }

    /// Inclusive range [lo, hi] of gaps in bucket `b`.
    pub fn bucket_bounds(b: usize) -> (i64, i64) {
        match b {
            0 => (0, 0),
            1..=63 => (
                1i64 << (b - 1),
                ((1i128 << b) - 1).min(i64::MAX as i128) as i64,
            ),
            _ => (i64::MAX, i64::MAX),
        }
    }

    /// Feed a timestamp; the gap to the previous one is recorded.
    pub fn push_ts(&mut self, ts_ns: i64) {
        if let Some(prev) = self.last_ts {
            self.add_gap(ts_ns.saturating_sub(prev).max(0));
        }
        self.last_ts = Some(ts_ns);
    }

    pub fn add_gap(&mut self, gap_ns: i64) {
        if let Some(c) = self.counts.get_mut(Self::bucket_of(gap_ns)) {
            *c = c.saturating_add(1);
        }
        self.count = self.count.saturating_add(1);
        self.min_ns = Some(self.min_ns.map_or(gap_ns, |m| m.min(gap_ns)));
        self.max_ns = Some(self.max_ns.map_or(gap_ns, |m| m.max(gap_ns)));
    }

    /// Bounds [lo, hi] within which the q-quantile gap (same rank rule as sizes) lies, narrowed
    /// by the exact min and max.
    pub fn quantile_bounds(&self, q: f64) -> Option<(i64, i64)> {
        let rank = rank_for(q, self.count)?;
        let mut seen = 0u64;
        for (b, c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                let (lo, hi) = Self::bucket_bounds(b);
                let lo = lo.max(self.min_ns.unwrap_or(lo));
                let hi = hi.min(self.max_ns.unwrap_or(hi));
                return Some((lo, hi));
            }
        }
        None
    }
}

/// Size and gap histograms for the whole trace and, optionally, per caller-given group key.
/// Gaps within a group are between consecutive packets of that group.
#[derive(Debug, Clone)]
pub struct GroupedHistograms<K: Eq + Hash> {
    pub all_sizes: SizeHistogram,
    pub all_gaps: GapHistogram,
    pub groups: HashMap<K, (SizeHistogram, GapHistogram)>,
    pub max_groups: usize,
    /// Packets whose group was not created because `max_groups` was reached.
    pub ungrouped: u64,
}

impl<K: Eq + Hash> GroupedHistograms<K> {
    pub fn new(max_groups: usize) -> Self {
        GroupedHistograms {
            all_sizes: SizeHistogram::new(),
            all_gaps: GapHistogram::new(),
            groups: HashMap::new(),
            max_groups,
            ungrouped: 0,
        }
    }

    /// Feed one packet; `key` selects its group (`None`: aggregate only).
    pub fn push(&mut self, a: &Arrival, key: Option<K>) {
        self.all_sizes.add(a.size);
        self.all_gaps.push_ts(a.ts_ns);
        let Some(k) = key else { return };
        let full = self.groups.len() >= self.max_groups;
        match self.groups.get_mut(&k) {
            Some((s, g)) => {
                s.add(a.size);
                g.push_ts(a.ts_ns);
            }
            None if full => self.ungrouped = self.ungrouped.saturating_add(1),
            None => {
                // 512 KiB per group: the cap on groups is what bounds memory here.
                let mut s = SizeHistogram::new();
                let mut g = GapHistogram::new();
                s.add(a.size);
                g.push_ts(a.ts_ns);
                self.groups.insert(k, (s, g));
            }
        }
    }
}
