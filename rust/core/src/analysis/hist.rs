//! Packet-size and inter-arrival-gap histograms with exact counts.
//!
//! Sizes: one counter per byte count 0..=65535 and a sorted map of the few larger sizes
//! (TSO/GRO and BIG TCP super-frames), so size quantiles are exact. Gaps: log2 buckets of nanoseconds (bucket 0 holds gap 0,
//! bucket k ≥ 1 holds [2^(k-1), 2^k)), so a gap quantile is known to within its bucket.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use crate::engine::Arrival;

/// Exact counts per packet size.
///
/// Two forms with the same answers: dense (a counter per size, 512 KiB, for the whole trace,
/// which sees every size) and sparse (the sizes seen, 10 bytes each, for one group of many,
/// which sees few). A sparse histogram turns dense once it holds `SPARSE_MAX` sizes, when
/// growing further would cost more than the dense form. Sizes above 65535 are counted each in
/// a sorted map, as exactly: a capture holds few distinct ones, and no dense form of the sizes
/// up to 2^32 would fit. Their number is what bounds that map; [`GroupedHistograms`] counts it
/// against `max_groups`.
#[derive(Debug, Clone)]
pub struct SizeHistogram {
    counts: Counts,
    /// Count per size above 65535.
    large: BTreeMap<u64, u64>,
    /// Packets above 65535 bytes (super-frames), counted in `large` too.
    pub overflow: u64,
    /// Sizes counted.
    pub count: u64,
    /// Their sum, bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone)]
enum Counts {
    Dense(Box<[u64; SIZE_BUCKETS]>),
    /// Parallel vectors rather than pairs, which would pad to 16 bytes. Entries `..head` are in
    /// increasing size, and so are entries `head..` (at most `TAIL_MAX`): a new size is put in
    /// order among the tail's few, and the tail merged into the head when full, so a capture
    /// of random sizes shifts each entry of a large group once per `TAIL_MAX` new sizes rather
    /// than once per new size.
    Sparse {
        sizes: Vec<u16>,
        counts: Vec<u64>,
        head: usize,
    },
}

/// One counter per size up to 65535 in the dense form.
pub const SIZE_BUCKETS: usize = 65536;
/// Heap bytes taken as one entry of the map of sizes above 65535: 16 bytes of size and count
/// and its share of the B-tree's nodes (a leaf of 11 entries takes 192 bytes), as measured
/// with a counting allocator: 34.3 bytes an entry for sizes in increasing or decreasing order
/// (35.5 for 100 of them), 24-27 in random order.
pub const LARGE_ENTRY_BYTES: usize = 36;
/// Distinct sizes above 65535, over all the histograms of a [`GroupedHistograms`], that count
/// as one group against `max_groups`: about what the dense form's 512 KiB holds (at most
/// 576 KiB of them).
pub const LARGE_PER_GROUP: usize = 16_384;
/// Bucket 0 for gap 0, then one per bit length of the gap: 64 covers every u64 (a gap between
/// two int64 instants, up to 2^64 − 1 ns).
pub const GAP_BUCKETS: usize = 65;

/// Sizes a sparse histogram holds before it turns dense: its vectors grow by doubling, and the
/// next doubling (20 bytes a size) would outweigh the dense form's 8 per possible size.
pub const SPARSE_MAX: usize = 32768;
const TAIL_MAX: usize = 64;
const _: () = assert!(SPARSE_MAX * 10 <= SIZE_BUCKETS * 8 && SPARSE_MAX * 20 > SIZE_BUCKETS * 8);

impl Default for SizeHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Same packets counted, whichever form holds them.
impl PartialEq for SizeHistogram {
    fn eq(&self, other: &Self) -> bool {
        (self.overflow, self.count, self.bytes) == (other.overflow, other.count, other.bytes)
            && self.nonzero().eq(other.nonzero())
    }
}

impl Eq for SizeHistogram {}

impl SizeHistogram {
    /// Sparse: memory follows the distinct sizes seen.
    pub fn new() -> Self {
        Self::with_counts(Counts::Sparse {
            sizes: Vec::new(),
            counts: Vec::new(),
            head: 0,
        })
    }

    /// Dense from the start: 512 KiB, for a histogram that will see many sizes (the whole
    /// trace), where a counter per size is the fastest to update.
    pub fn dense() -> Self {
        Self::with_counts(Counts::Dense(zeroed_dense()))
    }

    fn with_counts(counts: Counts) -> Self {
        SizeHistogram {
            counts,
            large: BTreeMap::new(),
            overflow: 0,
            count: 0,
            bytes: 0,
        }
    }

    /// Whether it holds a counter per size (see the type's documentation).
    pub fn is_dense(&self) -> bool {
        matches!(self.counts, Counts::Dense(_))
    }

    /// Bytes this histogram holds on the heap (allocated, not just used; the sizes above 65535
    /// at `LARGE_ENTRY_BYTES` each).
    pub fn heap_bytes(&self) -> usize {
        let small = match &self.counts {
            Counts::Dense(c) => std::mem::size_of_val(&**c),
            Counts::Sparse { sizes, counts, .. } => {
                sizes.capacity() * std::mem::size_of::<u16>()
                    + counts.capacity() * std::mem::size_of::<u64>()
            }
        };
        small + self.large_sizes() * LARGE_ENTRY_BYTES
    }

    /// Distinct sizes above 65535 counted.
    pub fn large_sizes(&self) -> usize {
        self.large.len()
    }

    /// Count one packet of `size` bytes.
    ///
    /// Whether it is a size above 65535 not seen before (what [`GroupedHistograms`] counts
    /// against `max_groups`).
    pub fn add(&mut self, size: u64) -> bool {
        let new_large = match u16::try_from(size) {
            Ok(s) => {
                self.add_counted(s);
                false
            }
            Err(_) => {
                self.overflow = self.overflow.saturating_add(1);
                let c = self.large.entry(size).or_insert(0);
                *c = c.saturating_add(1);
                *c == 1
            }
        };
        self.count = self.count.saturating_add(1);
        self.bytes = self.bytes.saturating_add(size);
        new_large
    }

    #[inline]
    fn add_counted(&mut self, s: u16) {
        let at = match &mut self.counts {
            Counts::Dense(c) => {
                let c = &mut c[usize::from(s)];
                *c = c.saturating_add(1);
                return;
            }
            Counts::Sparse {
                sizes,
                counts,
                head,
            } => match find(sizes, *head, s) {
                Ok(i) => {
                    counts[i] = counts[i].saturating_add(1);
                    return;
                }
                Err(i) => i,
            },
        };
        self.add_new(s, at);
    }

    /// A size the sparse form has not seen, to go at `at` in its tail. Out of line: rare once a
    /// group has seen its few sizes, and the counting above stays small enough to inline.
    #[inline(never)]
    fn add_new(&mut self, s: u16, at: usize) {
        let Counts::Sparse {
            sizes,
            counts,
            head,
        } = &mut self.counts
        else {
            unreachable!("only a sparse histogram meets a new size")
        };
        if sizes.len() >= SPARSE_MAX {
            self.densify();
            self.add_counted(s);
            return;
        }
        sizes.insert(at, s);
        counts.insert(at, 1);
        if sizes.len() - *head >= TAIL_MAX {
            merge_tail(sizes, counts, *head);
            *head = sizes.len();
        }
    }

    fn densify(&mut self) {
        let mut dense = zeroed_dense();
        for (s, c) in self.nonzero().take_while(|(s, _)| *s < SIZE_BUCKETS as u64) {
            dense[s as usize] = c;
        }
        self.counts = Counts::Dense(dense);
    }

    /// Packets of exactly `size` bytes.
    pub fn count_of(&self, size: u64) -> u64 {
        let Ok(s) = u16::try_from(size) else {
            return self.large.get(&size).copied().unwrap_or(0);
        };
        match &self.counts {
            Counts::Dense(c) => c[usize::from(s)],
            Counts::Sparse {
                sizes,
                counts,
                head,
            } => find(sizes, *head, s).map_or(0, |i| counts[i]),
        }
    }

    /// Non-empty (size, count) pairs in increasing size.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let (dense, sparse) = match &self.counts {
            Counts::Dense(c) => (Some(c.iter()), None),
            Counts::Sparse {
                sizes,
                counts,
                head,
            } => {
                let (hs, ts) = sizes.split_at(*head);
                let (hc, tc) = counts.split_at(*head);
                (
                    None,
                    Some(MergeRuns {
                        a: (hs, hc),
                        b: (ts, tc),
                    }),
                )
            }
        };
        let dense = dense
            .into_iter()
            .flat_map(|c| c.enumerate())
            .filter(|(_, c)| **c > 0)
            .map(|(s, c)| (s as u64, *c));
        let large = self.large.iter().map(|(s, c)| (*s, *c));
        dense.chain(sparse.into_iter().flatten()).chain(large)
    }

    /// The q-quantile as the smallest size s with at least ceil(q·count) packets ≤ s (q in \[0,1\];
    /// q = 0 gives the minimum). `None` when empty. Exact, above 65535 too.
    pub fn quantile(&self, q: impl Into<Quantile>) -> Option<u64> {
        let rank = rank_for(q, self.count)?;
        let mut seen = 0u64;
        let mut last = None;
        for (s, c) in self.nonzero() {
            seen = seen.saturating_add(c);
            last = Some(s);
            if seen >= rank {
                break;
            }
        }
        // Short of the rank only if a count saturated: the largest size, then.
        last
    }

    /// The smallest size counted (`None`: none).
    pub fn min(&self) -> Option<u64> {
        self.quantile(0.0)
    }

    /// The largest size counted (`None`: none).
    pub fn max(&self) -> Option<u64> {
        self.quantile(1.0)
    }
}

fn zeroed_dense() -> Box<[u64; SIZE_BUCKETS]> {
    // Through a Vec: a boxed array literal would be built on the stack first.
    match vec![0u64; SIZE_BUCKETS].into_boxed_slice().try_into() {
        Ok(b) => b,
        Err(_) => unreachable!("the vector has SIZE_BUCKETS counters"),
    }
}

/// Index of `s` in a sparse histogram's runs, or where to insert it in the tail.
fn find(sizes: &[u16], head: usize, s: u16) -> Result<usize, usize> {
    match sizes[..head].binary_search(&s) {
        Ok(i) => Ok(i),
        Err(_) => sizes[head..]
            .binary_search(&s)
            .map(|i| i + head)
            .map_err(|i| i + head),
    }
}

/// Merges the sorted tail `head..` into the sorted head `..head`, in place, from the back.
fn merge_tail(sizes: &mut [u16], counts: &mut [u64], head: usize) {
    let n = sizes.len() - head;
    let mut ts = [0u16; TAIL_MAX];
    let mut tc = [0u64; TAIL_MAX];
    ts[..n].copy_from_slice(&sizes[head..]);
    tc[..n].copy_from_slice(&counts[head..]);
    let (mut i, mut j, mut k) = (head, n, sizes.len());
    // Once the tail is placed, the head's remaining entries are already where they belong.
    while j > 0 {
        k -= 1;
        if i > 0 && sizes[i - 1] > ts[j - 1] {
            i -= 1;
            sizes[k] = sizes[i];
            counts[k] = counts[i];
        } else {
            j -= 1;
            sizes[k] = ts[j];
            counts[k] = tc[j];
        }
    }
}

/// Two runs of (size, count), each in increasing size and with no size in both, in order.
struct MergeRuns<'a> {
    a: (&'a [u16], &'a [u64]),
    b: (&'a [u16], &'a [u64]),
}

impl Iterator for MergeRuns<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let take_a = match (self.a.0.first(), self.b.0.first()) {
            (Some(x), Some(y)) => x < y,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let run = if take_a { &mut self.a } else { &mut self.b };
        let (s, rest_s) = run.0.split_first()?;
        let (c, rest_c) = run.1.split_first()?;
        *run = (rest_s, rest_c);
        Some((u64::from(*s), *c))
    }
}

/// A quantile q in \[0, 1\], exactly as it was asked for: a ratio num/den. A float is the decimal
/// it is written as (its shortest form, as Python's `repr` and Rust's `{:e}` give it): the f64
/// product 0.07 · 100 is 7.000000000000001, whose ceiling, 8, is not the 7th value asked for. A
/// ratio is for the q's a float cannot hold (1/3, a Decimal of 20 digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantile {
    num: u128,
    /// 0: not a number (a NaN), which has no rank.
    den: u128,
}

impl Quantile {
    /// The largest denominator taken: the rank's long division holds 3·den in u128.
    pub const MAX_DEN: u128 = 1 << 126;

    /// num/den; `None` unless 0 < den ≤ `MAX_DEN` and num ≤ den (q in \[0, 1\]).
    pub fn ratio(num: u128, den: u128) -> Option<Self> {
        (den > 0 && den <= Self::MAX_DEN && num <= den).then_some(Self { num, den })
    }

    /// 1-based rank of the q-quantile among `n` values: max(1, ⌈q·n⌉), at most n; `None` for no
    /// values or a NaN.
    pub fn rank(self, n: u64) -> Option<u64> {
        if n == 0 || self.den == 0 {
            return None;
        }
        Some(mul_div_ceil(self.num, self.den, n).clamp(1, n))
    }
}

impl From<f64> for Quantile {
    /// q as its shortest decimal m·10^−k (m < 10^17; k ≤ 37 for q ≥ 10^−20), clamped to
    /// \[0, 1\]. A q under 10^−20 has q·n < 1 for every u64 n: 0, which ranks first as any
    /// positive q does there.
    fn from(q: f64) -> Self {
        const NAN: Quantile = Quantile { num: 0, den: 0 };
        if q.is_nan() {
            return NAN;
        }
        let q = q.clamp(0.0, 1.0);
        if q < 1e-20 {
            return Self { num: 0, den: 1 };
        }
        let text = format!("{q:e}");
        let parsed = (|| {
            let (mantissa, exp) = text.split_once('e')?;
            let exp: i64 = exp.parse().ok()?;
            let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
            let m: u128 = mantissa.replace('.', "").parse().ok()?;
            let k = u32::try_from(i64::try_from(fraction).ok()? - exp).ok()?;
            Self::ratio(m, 10u128.checked_pow(k)?)
        })();
        // Unreachable for q in [10^−20, 1]: m and 10^k fit (see above).
        parsed.unwrap_or(NAN)
    }
}

/// 1-based rank of the q-quantile among `n` values: max(1, ⌈q·n⌉), q as written.
fn rank_for(q: impl Into<Quantile>, n: u64) -> Option<u64> {
    q.into().rank(n)
}

/// ⌈num·n / den⌉ for num ≤ den ≤ 2^126, by long division over n's bits: num·n can pass u128
/// (a den of 10^37 times a u64 n), the remainder never does (it stays under den, and 2·rem + num
/// under 3·den). At most n.
fn mul_div_ceil(num: u128, den: u128, n: u64) -> u64 {
    let (mut quot, mut rem) = (0u64, 0u128);
    for bit in (0..u64::BITS).rev() {
        quot <<= 1;
        rem = 2 * rem + if n >> bit & 1 == 1 { num } else { 0 };
        while rem >= den {
            rem -= den;
            quot += 1;
        }
    }
    quot + u64::from(rem > 0)
}

/// Exact counts of inter-arrival gaps per log2 bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapHistogram {
    /// Buckets `lo..lo + counts.len()`, from the smallest to the largest seen: a group's gaps
    /// seldom span more than a few decades, so a few buckets where all 65 would take 520 bytes
    /// a group.
    lo: usize,
    counts: Vec<u64>,
    /// Gaps counted.
    pub count: u64,
    /// Exact, in u64: a gap between two int64 instants can pass int64 (more than 292 years,
    /// which only damaged timestamps give), where an int64 one stopped at int64's end.
    pub min_ns: Option<u64>,
    /// The largest gap, ns.
    pub max_ns: Option<u64>,
    last_ts: Option<i64>,
}

impl Default for GapHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl GapHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        GapHistogram {
            lo: 0,
            counts: Vec::new(),
            count: 0,
            min_ns: None,
            max_ns: None,
            last_ts: None,
        }
    }

    /// Bucket of a gap: 0 for 0, else its bit length.
    pub fn bucket_of(gap_ns: u64) -> usize {
        (64 - gap_ns.leading_zeros()) as usize
    }

    /// Inclusive range [lo, hi] of gaps in bucket `b`.
    pub fn bucket_bounds(b: usize) -> (u64, u64) {
        match b {
            0 => (0, 0),
            1..=64 => (1u64 << (b - 1), u64::MAX >> (64 - b)),
            _ => (u64::MAX, u64::MAX),
        }
    }

    /// Gaps in bucket `b`.
    pub fn bucket_count(&self, b: usize) -> u64 {
        b.checked_sub(self.lo)
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Non-empty (bucket, count) pairs in increasing bucket.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (self.lo + i, *c))
    }

    /// Bytes this histogram holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * std::mem::size_of::<u64>()
    }

    /// Feed a timestamp; the gap to the previous one is recorded.
    pub fn push_ts(&mut self, ts_ns: i64) {
        if let Some(prev) = self.last_ts {
            // In order, ts ≥ prev, and the difference of two int64 is exact in u64 (a negative
            // one, impossible in order, is 0).
            let gap = if ts_ns >= prev {
                (ts_ns as u64).wrapping_sub(prev as u64)
            } else {
                0
            };
            self.add_gap(gap);
        }
        self.last_ts = Some(ts_ns);
    }

    /// Count one gap of `gap_ns` ns.
    pub fn add_gap(&mut self, gap_ns: u64) {
        let b = Self::bucket_of(gap_ns);
        // Below `lo` wraps to far past the end, so one check finds every bucket not yet held.
        match self.counts.get_mut(b.wrapping_sub(self.lo)) {
            Some(c) => *c = c.saturating_add(1),
            None => self.add_outside(b),
        }
        self.count = self.count.saturating_add(1);
        self.min_ns = Some(self.min_ns.map_or(gap_ns, |m| m.min(gap_ns)));
        self.max_ns = Some(self.max_ns.map_or(gap_ns, |m| m.max(gap_ns)));
    }

    /// Widens the buckets held to take `b`, and counts it there.
    #[inline(never)]
    fn add_outside(&mut self, b: usize) {
        if self.counts.is_empty() {
            self.lo = b;
        } else if b < self.lo {
            self.counts
                .splice(0..0, std::iter::repeat_n(0, self.lo - b));
            self.lo = b;
        }
        let i = b - self.lo;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// Bounds [lo, hi] within which the q-quantile gap (same rank rule as sizes) lies, narrowed
    /// by the exact min and max.
    pub fn quantile_bounds(&self, q: impl Into<Quantile>) -> Option<(u64, u64)> {
        let rank = rank_for(q, self.count)?;
        let mut seen = 0u64;
        for (b, c) in self.nonzero() {
            seen = seen.saturating_add(c);
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
    /// Sizes of every packet.
    pub all_sizes: SizeHistogram,
    /// Gaps between consecutive packets of the whole trace.
    pub all_gaps: GapHistogram,
    /// Per group, its sizes and the gaps between its consecutive packets.
    pub groups: HashMap<K, (SizeHistogram, GapHistogram)>,
    /// Most groups kept; the packets of further groups count in `ungrouped` (and in the whole
    /// trace's histograms).
    pub max_groups: usize,
    /// Packets whose group was not created because `max_groups` was reached.
    pub ungrouped: u64,
    /// Distinct sizes above 65535 held, the whole trace's and each group's.
    pub large_sizes: usize,
}

impl<K: Eq + Hash> GroupedHistograms<K> {
    /// Histograms of at most `max_groups` groups.
    pub fn new(max_groups: usize) -> Self {
        GroupedHistograms {
            all_sizes: SizeHistogram::dense(),
            all_gaps: GapHistogram::new(),
            groups: HashMap::new(),
            max_groups,
            ungrouped: 0,
            large_sizes: 0,
        }
    }

    /// What counts against `max_groups`: the groups, and one more for every `LARGE_PER_GROUP`
    /// distinct sizes above 65535 past the first `LARGE_PER_GROUP` (the whole trace's share, as
    /// its 512 KiB of counters are not counted either), so that a forged capture of millions of
    /// distinct huge sizes is bounded as many groups of many sizes are.
    pub fn groups_used(&self) -> usize {
        let extra = self.large_sizes.saturating_sub(LARGE_PER_GROUP);
        self.groups
            .len()
            .saturating_add(extra.div_ceil(LARGE_PER_GROUP))
    }

    /// Whether more than `max_groups` are used (see `groups_used`) or a packet was left out of
    /// its group for want of room: the result is incomplete.
    pub fn over_limit(&self) -> bool {
        self.ungrouped > 0 || self.groups_used() > self.max_groups
    }

    /// Feed one packet; `key` selects its group (`None`: aggregate only).
    pub fn push(&mut self, a: &Arrival, key: Option<K>) {
        self.large_sizes += usize::from(self.all_sizes.add(a.size));
        self.all_gaps.push_ts(a.ts_ns);
        let Some(k) = key else { return };
        let full = self.groups_used() >= self.max_groups;
        match self.groups.get_mut(&k) {
            Some((s, g)) => {
                self.large_sizes += usize::from(s.add(a.size));
                g.push_ts(a.ts_ns);
            }
            None if full => self.ungrouped = self.ungrouped.saturating_add(1),
            None => {
                // Sparse: a group's histograms grow with the sizes and gaps it sees, so
                // max_groups small groups cost little (docs/limits.md, Memory).
                let mut s = SizeHistogram::new();
                let mut g = GapHistogram::new();
                self.large_sizes += usize::from(s.add(a.size));
                g.push_ts(a.ts_ns);
                self.groups.insert(k, (s, g));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use crate::wire::Headers;

    const QS: [f64; 12] = [
        0.0, 1e-9, 0.01, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 0.99, 0.999_999, 1.0,
    ];

    #[test]
    fn a_rank_is_the_ceiling_of_q_as_written_times_n() {
        // Where the f64 product passes the whole number: 0.07 · 100 = 7.000000000000001.
        for (q, n, rank) in [
            (0.07, 100, 7),
            (0.035, 200, 7),
            (0.017, 3000, 51),
            (0.57, 100, 57),
        ] {
            assert_eq!(rank_for(q, n), Some(rank), "q {q}, n {n}");
        }
        // Against the exact ceiling of i/1000 · n, for every three-digit q.
        for i in 0..=1000u64 {
            let q = format!("{}", i as f64 / 1000.0).parse::<f64>().unwrap();
            for n in [
                1u64,
                2,
                3,
                7,
                100,
                200,
                750,
                1500,
                3000,
                15_000,
                1 << 40,
                u64::MAX,
            ] {
                let exact = (u128::from(i) * u128::from(n)).div_ceil(1000) as u64;
                assert_eq!(rank_for(q, n), Some(exact.clamp(1, n)), "q {q}, n {n}");
            }
        }
        assert_eq!(rank_for(1e-300, 1 << 60), Some(1));
        assert_eq!(rank_for(1.0, u64::MAX), Some(u64::MAX));
        // 16 digits: 1 − 2^−52 is 0.9999999999999998 as written.
        assert_eq!(
            rank_for(1.0 - f64::EPSILON, 10u64.pow(16)),
            Some(9_999_999_999_999_998)
        );
        assert_eq!(rank_for(0.5, 0), None);
        assert_eq!(rank_for(f64::NAN, 5), None);
    }

    #[test]
    fn ranks_of_long_and_tiny_q_at_large_n_are_exact() {
        // Each q with its shortest decimal m·10^−k written out by hand (as Python's repr gives
        // it), the rank ⌈m·n / 10^k⌉ in u128 at n past f64's integers and near u64's end.
        let cases: [(f64, u128, u32); 9] = [
            (1.0 / 3.0, 3_333_333_333_333_333, 16),
            (0.1 + 0.2, 30_000_000_000_000_004, 17),
            (1.0 - 2f64.powi(-53), 9_999_999_999_999_999, 16),
            (1e-15, 1, 15),
            (1e-20, 1, 20),
            (1.234_567_890_123_456_7e-20, 12_345_678_901_234_567, 36),
            (0.07, 7, 2),
            (2.5e-10, 25, 11),
            (0.999, 999, 3),
        ];
        for (q, m, k) in cases {
            for n in [(1u64 << 53) + 1, u64::MAX - 1, u64::MAX, 10u64.pow(19)] {
                let exact = (m * u128::from(n)).div_ceil(10u128.pow(k));
                let want = u64::try_from(exact).unwrap().clamp(1, n);
                assert_eq!(rank_for(q, n), Some(want), "q {q:e}, n {n}");
            }
        }
        // Under 10^−20, q·n < 1 for every u64 n: the first value, as for any positive q.
        for q in [
            5e-324,
            f64::MIN_POSITIVE,
            f64::from_bits(1e-20f64.to_bits() - 1),
        ] {
            assert_eq!(rank_for(q, u64::MAX), Some(1), "q {q:e}");
        }
        assert_eq!(rank_for(-0.0, 10), Some(1));
        assert_eq!(rank_for(f64::INFINITY, 10), Some(10));
    }

    #[test]
    fn a_ratio_ranks_exactly_where_its_float_would_not() {
        // 1/3 of 3·10^16 is the 10^16-th value; the float 1/3, as written (0.3333333333333333),
        // ranks one before it.
        let third = Quantile::ratio(1, 3).unwrap();
        let n = 3 * 10u64.pow(16);
        assert_eq!(third.rank(n), Some(10u64.pow(16)));
        assert_eq!(rank_for(1.0 / 3.0, n), Some(10u64.pow(16) - 1));
        // A Decimal of 20 digits, 0.07000000000000000001: 7 of 100 is the 8th value, not the 7th.
        let long = Quantile::ratio(7 * 10u128.pow(18) + 1, 10u128.pow(20)).unwrap();
        assert_eq!(long.rank(100), Some(8));
        assert_eq!(rank_for(0.07, 100), Some(7));
        // The float's decimal is the ratio it is read as.
        assert_eq!(Quantile::from(0.07), Quantile::ratio(7, 100).unwrap());
        assert_eq!(Quantile::from(1.0), Quantile::ratio(1, 1).unwrap());
        // Where num·n passes u128: against the products worked out by hand.
        let den = Quantile::MAX_DEN;
        assert_eq!(
            Quantile::ratio(den - 1, den).unwrap().rank(u64::MAX),
            Some(u64::MAX)
        );
        assert_eq!(Quantile::ratio(1, den).unwrap().rank(u64::MAX), Some(1));
        let half = Quantile::ratio(den / 2, den).unwrap();
        assert_eq!(half.rank(u64::MAX), Some(1 << 63));
        assert_eq!(half.rank(u64::MAX - 1), Some((1 << 63) - 1));
        let big = 10u128.pow(37);
        let r = Quantile::ratio(big - 3, big)
            .unwrap()
            .rank(10u64.pow(19))
            .unwrap();
        // 10^19 − 3·10^−18, rounded up.
        assert_eq!(r, 10u64.pow(19));
        // Against u128 where the product fits.
        for (num, den) in [
            (1u128, 3u128),
            (2, 7),
            (999, 1000),
            (5, 5),
            (0, 9),
            (12_345, 99_991),
        ] {
            for n in [1u64, 2, 3, 10, 99_991, 1 << 40, u64::MAX] {
                let want = (num * u128::from(n)).div_ceil(den) as u64;
                let q = Quantile::ratio(num, den).unwrap();
                assert_eq!(q.rank(n), Some(want.clamp(1, n)), "{num}/{den} of {n}");
            }
        }
        assert_eq!(Quantile::ratio(4, 3), None);
        assert_eq!(Quantile::ratio(0, 0), None);
        assert_eq!(Quantile::ratio(1, den + 1), None);
        assert_eq!(third.rank(0), None);
    }

    fn assert_same(sparse: &SizeHistogram, dense: &SizeHistogram, what: &str) {
        assert!(dense.is_dense());
        assert_eq!(sparse, dense, "{what}");
        assert!(sparse.nonzero().eq(dense.nonzero()), "{what}");
        for q in QS {
            assert_eq!(sparse.quantile(q), dense.quantile(q), "{what}: q {q}");
        }
        for (s, c) in dense.nonzero() {
            assert_eq!(sparse.count_of(s), c, "{what}: size {s}");
        }
        assert_eq!(sparse.count_of(0), dense.count_of(0));
        assert_eq!(sparse.count_of(65535), dense.count_of(65535));
    }

    #[test]
    fn sparse_and_dense_sizes_agree() {
        let mut rng = Rng(11);
        // Distinct sizes from a handful (a real flow) to every size (past SPARSE_MAX, so the
        // sparse one turns dense on the way), some above 65535.
        for (range, n) in [
            (3u64, 50usize),
            (1500, 4000),
            (65536, 200),
            (65536, 20_000),
            (70_000, 300_000),
        ] {
            let mut sparse = SizeHistogram::new();
            let mut dense = SizeHistogram::dense();
            for i in 0..n {
                let s = 40 + rng.below(range);
                sparse.add(s);
                dense.add(s);
                if i % 997 == 0 {
                    assert_same(&sparse, &dense, &format!("{range}/{n} at {i}"));
                }
            }
            assert_same(&sparse, &dense, &format!("{range}/{n}"));
            let small = sparse.nonzero().filter(|(s, _)| *s <= 65535).count();
            assert_eq!(sparse.is_dense(), small > SPARSE_MAX);
        }
    }

    #[test]
    fn sizes_in_falling_and_rising_order_agree() {
        for sizes in [
            (0..40_000u64).rev().collect::<Vec<_>>(),
            (0..40_000u64).collect(),
            (0..3000u64).map(|i| (i * 7919) % 3000).collect(),
        ] {
            let mut sparse = SizeHistogram::new();
            let mut dense = SizeHistogram::dense();
            for s in sizes.iter().chain(&sizes[..100]) {
                sparse.add(*s);
                dense.add(*s);
            }
            assert_same(&sparse, &dense, "ordered");
        }
    }

    #[test]
    fn sparse_sizes_stay_small_and_never_outgrow_dense() {
        let mut h = SizeHistogram::new();
        for i in 0..100_000u64 {
            h.add([60, 1514, 66][(i % 3) as usize]);
        }
        assert!(!h.is_dense());
        assert!(h.heap_bytes() <= 64, "{} bytes", h.heap_bytes());
        let dense_bytes = SizeHistogram::dense().heap_bytes();
        assert_eq!(dense_bytes, SIZE_BUCKETS * 8);
        let mut h = SizeHistogram::new();
        for s in 0..SIZE_BUCKETS as u64 {
            h.add((s * 40_503) % SIZE_BUCKETS as u64);
            assert!(h.heap_bytes() <= dense_bytes, "{} sizes", s + 1);
        }
        assert!(h.is_dense());
    }

    #[test]
    fn sizes_above_65535_are_exact() {
        // Mixes across 65535 (BIG TCP frames up to 512 KiB, and one past u32), against a sorted
        // list; before, every size above 65535 shared one bucket, its quantiles the largest.
        let mut rng = Rng(23);
        for (small, large, n) in [
            (0usize, 1usize, 1usize),
            (3, 1, 40),
            (1, 3, 40),
            (5, 5, 3001),
        ] {
            let mut h = SizeHistogram::new();
            let mut dense = SizeHistogram::dense();
            let mut all = Vec::new();
            for _ in 0..n {
                let s = if rng.below((small + large) as u64) < small as u64 {
                    60 + rng.below(65_476)
                } else {
                    [65_536, 65_537, 131_072, 524_288, 1 << 33][rng.below(5) as usize]
                        + rng.below(300)
                };
                h.add(s);
                dense.add(s);
                all.push(s);
            }
            all.sort_unstable();
            assert_same(&h, &dense, "large");
            let over = all.iter().filter(|s| **s > 65_535).count() as u64;
            assert_eq!(h.overflow, over);
            let mut distinct = all.clone();
            distinct.dedup();
            let want: Vec<(u64, u64)> = distinct
                .iter()
                .map(|d| (*d, all.iter().filter(|s| *s == d).count() as u64))
                .collect();
            assert!(h.nonzero().eq(want.iter().copied()));
            for (size, c) in &want {
                assert_eq!(h.count_of(*size), *c);
            }
            assert_eq!(h.count_of(65_536 + 301), 0);
            for q in QS {
                let rank = rank_for(q, all.len() as u64).unwrap() as usize;
                assert_eq!(h.quantile(q), Some(all[rank - 1]), "q {q}, n {n}");
            }
            let large_distinct = distinct.iter().filter(|s| **s > 65_535).count();
            assert_eq!(h.large_sizes(), large_distinct);
        }
    }

    #[test]
    fn sizes_above_65535_count_against_max_groups() {
        let arrival = |i: u64, size: u64| Arrival {
            ts_ns: i as i64,
            size,
            interface: 0,
            headers: Headers::default(),
        };
        // One group, the trace's share of LARGE_PER_GROUP distinct sizes, then one group more
        // per LARGE_PER_GROUP: 3 groups allowed, the first of them the group itself.
        let mut h = GroupedHistograms::<u32>::new(3);
        let n = 3 * LARGE_PER_GROUP as u64;
        for i in 0..n {
            h.push(&arrival(i, 65_536 + i), Some(0));
            // Repeats add nothing.
            h.push(&arrival(i, 65_536 + i / 2), Some(0));
            h.push(&arrival(i, 1500), None);
        }
        // The trace's sizes and the group's are the same n.
        assert_eq!(h.large_sizes, 2 * n as usize);
        assert_eq!(h.groups_used(), 1 + 5);
        assert!(h.over_limit());
        let mut h = GroupedHistograms::<u32>::new(3);
        for i in 0..LARGE_PER_GROUP as u64 / 2 {
            h.push(&arrival(i, 100_000 + i), Some(0));
        }
        assert_eq!(h.large_sizes, LARGE_PER_GROUP);
        assert_eq!(h.groups_used(), 1);
        h.push(&arrival(0, 1 << 20), Some(0));
        assert_eq!((h.large_sizes, h.groups_used()), (LARGE_PER_GROUP + 2, 2));
        h.push(&arrival(0, 1500), Some(1));
        assert!(!h.over_limit());
        // The room left goes to large sizes or groups alike.
        h.push(&arrival(0, 1500), Some(2));
        assert_eq!(h.ungrouped, 1);
        assert!(h.over_limit());
        // Sizes up to 65535 cost nothing here.
        let mut h = GroupedHistograms::<u32>::new(1);
        for i in 0..65_536 {
            h.push(&arrival(i, i), Some(0));
        }
        assert_eq!((h.large_sizes, h.groups_used()), (0, 1));
        assert!(!h.over_limit());
    }

    #[test]
    fn gap_buckets_match_a_full_array() {
        let mut rng = Rng(5);
        for spread in [0u32, 1, 10, 40, 63] {
            let mut h = GapHistogram::new();
            let mut want = [0u64; GAP_BUCKETS];
            for _ in 0..5000 {
                let g = rng.next() >> (63 - spread);
                h.add_gap(g);
                want[GapHistogram::bucket_of(g)] += 1;
            }
            for (b, w) in want.iter().enumerate() {
                assert_eq!(h.bucket_count(b), *w, "spread {spread}, bucket {b}");
            }
            let nz: Vec<_> = want
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(b, c)| (b, *c))
                .collect();
            assert!(h.nonzero().eq(nz), "spread {spread}");
        }
        let mut h = GapHistogram::new();
        for g in [1_000_000, 1_000, 3_000_000, 0, i64::MAX as u64] {
            h.add_gap(g);
        }
        assert_eq!(h.nonzero().count(), 5);
        assert_eq!(h.quantile_bounds(0.0), Some((0, 0)));
        assert_eq!(h.quantile_bounds(1.0), Some((1 << 62, i64::MAX as u64)));
    }

    #[test]
    fn a_gap_past_int64_is_exact() {
        // 1684 to 2255: 1.8e19 ns, past int64; an int64 gap stopped at i64::MAX.
        let mut h = GapHistogram::new();
        let (a, b) = (-9_000_000_000_000_000_000i64, 9_000_000_000_000_000_000i64);
        h.push_ts(a);
        h.push_ts(b);
        let gap = 18_000_000_000_000_000_000u64;
        assert_eq!((h.min_ns, h.max_ns), (Some(gap), Some(gap)));
        assert_eq!(h.bucket_count(64), 1);
        assert_eq!(GapHistogram::bucket_bounds(64), (1 << 63, u64::MAX));
        assert_eq!(h.quantile_bounds(0.5), Some((gap, gap)));
        h.push_ts(i64::MAX);
        assert_eq!(h.min_ns, Some((i64::MAX - b) as u64));
    }

    #[test]
    fn a_small_group_costs_little() {
        let mut h = GroupedHistograms::<u32>::new(10_000);
        for i in 0..100_000u32 {
            let a = Arrival {
                ts_ns: i64::from(i) * 1_000,
                size: [60, 1514, 66][(i % 3) as usize],
                interface: 0,
                headers: Headers::default(),
            };
            h.push(&a, Some(i % 10_000));
        }
        assert_eq!(h.groups.len(), 10_000);
        for (s, g) in h.groups.values() {
            assert!(s.heap_bytes() + g.heap_bytes() <= 128);
        }
        let inline = std::mem::size_of::<(u32, (SizeHistogram, GapHistogram))>();
        assert!(inline <= 200, "{inline} bytes inline a group");
    }
}
