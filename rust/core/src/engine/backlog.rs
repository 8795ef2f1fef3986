//! The backlog of a constant-rate FIFO server fed by one group, for many rates at once (Lindley).
//!
//! Exactness: the queue is kept in units of bit·ns/s, i.e. bytes × 8·10⁹, so the work a server of
//! r bit/s does in Δt ns is the integer r·Δt and no rounding ever happens while streaming. A u128
//! holds 2⁹⁷ per packet of 2⁶⁴ bytes, so it only saturates after 2³¹ such packets in one busy
//! period. The byte value is rounded to f64 once, at the end.
//!
//! Speed: [`Backlog`] holds packets and runs the rates over them one rate at a time (a lane per
//! rate), in u64 while the queue stays below 2⁶³ (1.15 GB) and the group spans less than 2⁶² ns,
//! else in u128 for good. The results are those of the per-packet u128 recursion, bit for bit
//! (tested against it). `ChunkBacklog` (in `backlog/chunk.rs`) runs the same lanes with what
//! merging time chunks needs, then the per-packet u128 recursion past that range, with the same
//! results as the u128 recursion alone (tested against it).
//!
//! Busy periods: a packet that finds the queue empty (everything before it fully served at or
//! before its arrival) and is not empty itself starts a busy period. The period ends at the exact
//! instant its last packet's queue is served, `t_last + Q_last/r`; the reported length is
//! `t_last − t_start + ⌈Q_last/r⌉` ns, so a period is never reported shorter than it is. A
//! zero-size packet never starts one. With no busy period at all (every packet empty) the longest
//! is 0 ns starting at the group's first packet.

use super::{BacklogRow, By, GroupKey};

mod chunk;
mod simd;
pub(crate) use chunk::{ChunkRates, RateChunk};

/// Units of the exact queue: bytes × this = bit·ns/s.
pub const BACKLOG_SCALE: u64 = 8_000_000_000;

/// Packets held before the rates catch up, one rate at a time over all of them: each rate's loop
/// then keeps its queue in registers, and its data-dependent branches follow that one rate's
/// pattern instead of eight rates' interleaved ones. The buffer grows with the group (a group of
/// a few packets holds a few), so it costs at most 16 bytes × BATCH per group.
pub(crate) const BATCH: usize = 256;
/// The batch of a group among many (a grouping by key): a flow scan may hold a million groups,
/// and 32 packets (512 bytes) each keep most of the batching's gain at an eighth of the memory.
pub(crate) const KEYED_BATCH: usize = 32;

/// The integer the scaled queue is kept in. A u64 queue is kept below 2⁶³ (1.15 GB of backlog),
/// which is what keeps the per-packet loop short (see [`Lane::dcap`]); a group whose queue (or a
/// packet's work) leaves that range moves to u128 for good.
const NARROW_LIMIT: u64 = 1 << 63;
/// The largest packet whose work the u64 lanes take (below NARROW_LIMIT).
const NARROW_SIZE: u64 = (NARROW_LIMIT - 1) / BACKLOG_SCALE;
/// The u64 lanes see groups spanning less than this (146 years): a busy period's span plus its
/// drain bound then fits a u64 without a saturating add.
const SPAN_LIMIT: u64 = 1 << 62;

trait Scaled: Copy + Ord + std::fmt::Debug {
    const ZERO: Self;
    /// The scaled work of a held packet (see [`Held`]).
    fn work(held: u64) -> Self;
    /// `rate × dt`, or where that is at least 2⁶³ (`dt` > `dcap`), anything that is too: both
    /// exceed every u64 queue, which then empties, as it would exactly.
    fn served(rate: u64, dt: u64, dcap: u64) -> Self;
    /// The queue after the work is added; `None` when it does not fit.
    fn add(rem: Self, work: Self) -> Option<Self>;
    fn saturating_sub(self, other: Self) -> Self;
    fn wrapping_sub_one(self) -> Self;
    /// An upper bound of ⌈self / r⌉ for any r ≥ 2^shift.
    fn drain_bound(self, shift: u32) -> u64;
    /// `span + drain` for a span of a busy period and a [`Scaled::drain_bound`], or more.
    fn bound(span: u64, drain: u64) -> u64;
    fn wide(self) -> u128;
}

impl Scaled for u64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn work(held: u64) -> Self {
        held
    }
    #[inline(always)]
    fn served(rate: u64, dt: u64, dcap: u64) -> Self {
        // rate × dcap < 2⁶⁴ (see `dcap`): a plain multiplication, no overflow check.
        rate.wrapping_mul(dt.min(dcap))
    }
    #[inline(always)]
    fn add(rem: Self, work: Self) -> Option<Self> {
        // Both below 2⁶³: the sum does not wrap.
        let q = rem + work;
        (q < NARROW_LIMIT).then_some(q)
    }
    #[inline(always)]
    fn saturating_sub(self, other: Self) -> Self {
        u64::saturating_sub(self, other)
    }
    #[inline(always)]
    fn wrapping_sub_one(self) -> Self {
        self.wrapping_sub(1)
    }
    #[inline(always)]
    fn drain_bound(self, shift: u32) -> u64 {
        (self >> shift) + 1
    }
    #[inline(always)]
    fn bound(span: u64, drain: u64) -> u64 {
        // The u64 lanes see spans below 2⁶² (SPAN_LIMIT) and queues below 2⁶³: no wrap.
        span + drain
    }
    #[inline(always)]
    fn wide(self) -> u128 {
        u128::from(self)
    }
}

impl Scaled for u128 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn work(held: u64) -> Self {
        u128::from(held) * u128::from(BACKLOG_SCALE)
    }
    #[inline(always)]
    fn served(rate: u64, dt: u64, _dcap: u64) -> Self {
        u128::from(rate) * u128::from(dt)
    }
    #[inline(always)]
    fn add(rem: Self, work: Self) -> Option<Self> {
        // 2⁹⁷ per packet: saturating takes 2³¹ packets of 2⁶⁴ bytes in one busy period.
        Some(rem.saturating_add(work))
    }
    #[inline(always)]
    fn saturating_sub(self, other: Self) -> Self {
        u128::saturating_sub(self, other)
    }
    #[inline(always)]
    fn wrapping_sub_one(self) -> Self {
        self.wrapping_sub(1)
    }
    #[inline(always)]
    fn drain_bound(self, shift: u32) -> u64 {
        u64::try_from(self >> shift).map_or(u64::MAX, |d| d.saturating_add(1))
    }
    #[inline(always)]
    fn bound(span: u64, drain: u64) -> u64 {
        span.saturating_add(drain)
    }
    #[inline(always)]
    fn wide(self) -> u128 {
        self
    }
}

/// One server rate, in queue units `Q`.
#[derive(Debug, Clone, Copy)]
struct Lane<Q> {
    rate: u64,
    /// floor(log2(rate)): ⌈q/r⌉ ≤ (q >> shift) + 1 bounds a busy period without dividing.
    shift: u32,
    /// ⌈2⁶³ / rate⌉: rate × dcap is at least 2⁶³ and below 2⁶⁴, so rate × min(dt, dcap) never
    /// wraps and is at least 2⁶³ (above every u64 queue) exactly when rate × dt is.
    dcap: u64,
    /// Queue just after the latest packet the lane has seen, in bytes × BACKLOG_SCALE.
    q: Q,
    /// Start of the open busy period; meaningful only while `q` > 0.
    start_ns: i64,
    best_q: Q,
    peak_ns: i64,
    longest_ns: i64,
    longest_start_ns: i64,
}

/// floor(log2(rate)): ⌈q/r⌉ ≤ (q >> shift) + 1 bounds a busy period without dividing.
fn shift_of(rate: u64) -> u32 {
    rate.max(1).ilog2()
}

/// ⌈2⁶³ / rate⌉: see [`Lane::dcap`].
fn dcap_of(rate: u64) -> u64 {
    NARROW_LIMIT.div_ceil(rate.max(1))
}

impl<Q: Scaled> Lane<Q> {
    fn new(rate: u64, first_ns: i64) -> Self {
        Lane {
            rate,
            shift: shift_of(rate),
            dcap: dcap_of(rate),
            q: Q::ZERO,
            start_ns: first_ns,
            best_q: Q::ZERO,
            peak_ns: first_ns,
            longest_ns: 0,
            longest_start_ns: first_ns,
        }
    }

    /// Close the busy period from `start` whose last packet, at `last`, left the queue `q`;
    /// returns the longest period's length. Called only for periods that may be the longest.
    #[cold]
    #[inline(always)]
    fn close(&mut self, start: i64, last: i64, q: Q) -> i64 {
        if outlasts(start, last, q.wide(), self.rate, self.longest_ns as u64) {
            let len = busy_len(start, last, q.wide(), self.rate);
            if len > self.longest_ns {
                self.longest_ns = len;
                self.longest_start_ns = start;
            }
        }
        self.longest_ns
    }

    /// The longest busy period, counting the open one as if it drained now.
    fn longest(&self, last: i64) -> (i64, i64) {
        let mut l = *self;
        if l.q > Q::ZERO {
            l.close(l.start_ns, last, l.q);
        }
        (l.longest_ns, l.longest_start_ns)
    }

    /// Run the lane over `held` (the latest packet it saw was at `last`). `Err(i)`: the queue
    /// would not fit `Q` at `held[i]`; the lane is left as it was before that packet.
    #[inline(never)]
    fn run(&mut self, mut last: i64, held: &[Held]) -> Result<(), usize> {
        let (rate, dcap, shift) = (self.rate, self.dcap, self.shift);
        let (mut q, mut start, mut best, mut peak) =
            (self.q, self.start_ns, self.best_q, self.peak_ns);
        // Never negative.
        let mut longest = self.longest_ns as u64;
        let mut out = Ok(());
        let mut i = 0;
        while let Some(h) = held.get(i) {
            // Sorted input: ts ≥ last, so the wrapped difference is the exact one.
            let dt = h.ts.wrapping_sub(last) as u64;
            let served = Q::served(rate, dt, dcap);
            // A busy period that may beat the longest (a bound without division): rare, so
            // tested first, while whether a period ends here follows the traffic.
            let bound = Q::bound(last.wrapping_sub(start) as u64, q.drain_bound(shift));
            if bound > longest && q.wrapping_sub_one() < served {
                // The queue had work and all of it is served by `ts`: the period ends. With it
                // closed, the packet finds an empty queue, as the loop then takes it (again).
                longest = self.close(start, last, q) as u64;
                q = Q::ZERO;
                continue;
            }
            let rem = q.saturating_sub(served);
            let Some(next) = Q::add(rem, Q::work(h.val)) else {
                out = Err(i);
                break;
            };
            start = if rem == Q::ZERO { h.ts } else { start };
            q = next;
            if q > best {
                // Rare once the queue has had its bursts: a branch, not two conditional moves.
                (best, peak) = record(q, h.ts);
            }
            last = h.ts;
            i += 1;
        }
        self.q = q;
        self.start_ns = start;
        self.best_q = best;
        self.peak_ns = peak;
        out
    }
}

/// A new maximum (out of line, to mark the branch unlikely).
#[cold]
#[inline(always)]
fn record<Q>(q: Q, ts: i64) -> (Q, i64) {
    (q, ts)
}

impl Lane<u64> {
    fn widen(&self) -> Lane<u128> {
        Lane {
            rate: self.rate,
            shift: self.shift,
            dcap: self.dcap,
            q: u128::from(self.q),
            start_ns: self.start_ns,
            best_q: u128::from(self.best_q),
            peak_ns: self.peak_ns,
            longest_ns: self.longest_ns,
            longest_start_ns: self.longest_start_ns,
        }
    }
}

/// A packet not yet run through the lanes: its timestamp, and its scaled work (while the lanes
/// are u64) or its size in bytes (u128 lanes, whose work may not fit a u64).
#[derive(Debug, Clone, Copy)]
struct Held {
    ts: i64,
    val: u64,
}

#[derive(Debug, Clone)]
enum Lanes {
    Narrow(Vec<Lane<u64>>),
    Wide(Vec<Lane<u128>>),
}

impl Lanes {
    /// Run every lane over `held`, the lanes' latest packet being at `last`; switches to u128
    /// where a queue outgrows u64. `simd`: eight u64 lanes at a time where the CPU can.
    fn run(&mut self, last: i64, held: &[Held], simd: bool) {
        let narrow = match self {
            Lanes::Narrow(lanes) => lanes,
            Lanes::Wide(lanes) => {
                for lane in lanes {
                    let _ = lane.run(last, held);
                }
                return;
            }
        };
        // Lanes `from..to` stopped before packet i (a queue would not fit a u64 there).
        let mut failed = None;
        let mut from = 0;
        while from < narrow.len() {
            let to = narrow.len().min(from + simd::width());
            let (to, ran) = match simd.then(|| simd::run(&mut narrow[from..to], last, held)) {
                Some(Some(ran)) => (to, ran),
                // Without vector lanes (on this CPU, or asked so): one lane at a time.
                _ => (from + 1, narrow[from].run(last, held)),
            };
            if let Err(i) = ran {
                failed = Some((from, to, i));
                break;
            }
            from = to;
        }
        if let Some((from, to, i)) = failed {
            // Lanes before `from` have run over all of `held`, lanes `from..to` up to packet
            // i, the others not.
            let mut wide: Vec<Lane<u128>> = narrow.iter().map(Lane::widen).collect();
            // The held values are u64 work, which the u128 lanes read as sizes: convert them.
            let rest: Vec<Held> = held
                .iter()
                .map(|h| Held {
                    ts: h.ts,
                    val: h.val / BACKLOG_SCALE,
                })
                .collect();
            let before = if i == 0 { last } else { held[i - 1].ts };
            for lane in &mut wide[from..to] {
                let _ = lane.run(before, &rest[i..]);
            }
            for lane in &mut wide[to..] {
                let _ = lane.run(last, &rest);
            }
            *self = Lanes::Wide(wide);
        }
    }
}

/// B_max(r) of one group for a sorted list of rates.
#[derive(Debug, Clone)]
pub(crate) struct Backlog {
    lanes: Lanes,
    /// Packets the lanes have not seen yet.
    held: Vec<Held>,
    /// The first packet, and the latest one the lanes have seen (valid once `seen`).
    first_ns: i64,
    last_ns: i64,
    /// Packets before this time may enter the u64 lanes without further checks (i64::MIN
    /// before the first packet, with u128 lanes, or without rates: no packet may).
    narrow_end: i64,
    rates: Vec<u64>,
    seen: bool,
    /// Packets held at most (see [`BATCH`], [`KEYED_BATCH`]).
    batch: usize,
    /// Eight u64 lanes at a time where the CPU can (see `simd`); off only in tests of the
    /// lanes one by one.
    simd: bool,
}

impl Backlog {
    /// `rates_bps` must be positive (the scanner ensures it).
    pub(crate) fn new(rates_bps: &[u64]) -> Self {
        Self::with_batch(rates_bps, BATCH)
    }

    /// [`Backlog::new`] holding at most `batch` packets (≥ 1) before the rates catch up.
    pub(crate) fn with_batch(rates_bps: &[u64], batch: usize) -> Self {
        Backlog {
            batch: batch.max(1),
            lanes: Lanes::Narrow(Vec::new()),
            held: Vec::new(),
            first_ns: 0,
            last_ns: 0,
            narrow_end: i64::MIN,
            rates: rates_bps.to_vec(),
            seen: false,
            simd: true,
        }
    }

    /// Whether it has no rate: then a push does nothing, and a run need not be walked.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }

    /// Add a packet; packets must come in timestamp order.
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        // One comparison each for the common case: u64 lanes, a size and a time they take.
        if size <= NARROW_SIZE && ts < self.narrow_end {
            self.hold(ts, size * BACKLOG_SCALE);
        } else if !self.rates.is_empty() {
            self.push_other(ts, size);
        }
    }

    #[inline(always)]
    fn hold(&mut self, ts: i64, val: u64) {
        self.held.push(Held { ts, val });
        if self.held.len() >= self.batch {
            self.catch_up();
        }
    }

    /// The first packet, a packet the u64 lanes cannot take, or any packet of u128 lanes (with
    /// at least one rate: without, nothing is held).
    #[cold]
    #[inline(never)]
    fn push_other(&mut self, ts: i64, size: u64) {
        if !self.seen {
            self.first(ts);
        }
        let narrow = size <= NARROW_SIZE && (ts.wrapping_sub(self.first_ns) as u64) < SPAN_LIMIT;
        match &self.lanes {
            Lanes::Narrow(_) if narrow => self.hold(ts, size * BACKLOG_SCALE),
            Lanes::Narrow(_) => {
                self.widen();
                self.hold(ts, size);
            }
            Lanes::Wide(_) => self.hold(ts, size),
        }
    }

    #[cold]
    fn first(&mut self, ts: i64) {
        self.seen = true;
        self.first_ns = ts;
        self.last_ns = ts;
        // Where SPAN_LIMIT ends, or earlier (then `push_other` takes the packets in between).
        self.narrow_end = ts.saturating_add(SPAN_LIMIT as i64);
        // The queue is empty before the first packet: Q₁ = L₁ is the recursion from Q₀ = 0.
        self.lanes = Lanes::Narrow(self.rates.iter().map(|&r| Lane::new(r, ts)).collect());
    }

    /// A packet's work, or the group's span, is beyond the u64 lanes: every lane moves to u128.
    #[cold]
    #[inline(never)]
    fn widen(&mut self) {
        self.catch_up();
        if let Lanes::Narrow(lanes) = &self.lanes {
            self.lanes = Lanes::Wide(lanes.iter().map(Lane::widen).collect());
        }
        self.narrow_end = i64::MIN;
    }

    /// Run the lanes over the held packets.
    fn catch_up(&mut self) {
        if let Some(h) = self.held.last() {
            let last = h.ts;
            self.lanes.run(self.last_ns, &self.held, self.simd);
            self.last_ns = last;
            self.held.clear();
            if let Lanes::Wide(_) = self.lanes {
                // A queue outgrew the u64 lanes: packets are held as sizes from now on.
                self.narrow_end = i64::MIN;
            }
        }
    }

    /// The lanes as if they had seen every packet (without changing `self`).
    fn settled(&self) -> Lanes {
        let mut lanes = self.lanes.clone();
        lanes.run(self.last_ns, &self.held, self.simd);
        lanes
    }

    /// Exact B_max per rate, in bytes × BACKLOG_SCALE (for tests and exact merging).
    pub(crate) fn exact(&self) -> impl Iterator<Item = (u64, u128)> + '_ {
        let best: Vec<(u64, u128)> = match self.settled() {
            Lanes::Narrow(l) => l.iter().map(|l| (l.rate, u128::from(l.best_q))).collect(),
            Lanes::Wide(l) => l.iter().map(|l| (l.rate, l.best_q)).collect(),
        };
        // Before any packet: B_max 0 at every rate, as the per-packet queues reported.
        let none = (!self.seen).then(|| self.rates.iter().map(|&r| (r, 0u128)));
        best.into_iter().chain(none.into_iter().flatten())
    }

    /// One row per rate; a busy period still open counts as if it drained after the latest
    /// packet (and stays open: more packets may follow).
    pub(crate) fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<BacklogRow>) {
        if !self.seen {
            return;
        }
        self.catch_up();
        let last = self.last_ns;
        let row =
            |rate_bps, best: u128, peak_ns, (longest_busy_ns, longest_busy_start_ns)| BacklogRow {
                by,
                group,
                rate_bps,
                bmax_bytes: ratio_to_f64(best, BACKLOG_SCALE),
                peak_ns,
                longest_busy_ns,
                longest_busy_start_ns,
            };
        match &self.lanes {
            Lanes::Narrow(lanes) => out.extend(
                lanes
                    .iter()
                    .map(|l| row(l.rate, u128::from(l.best_q), l.peak_ns, l.longest(last))),
            ),
            Lanes::Wide(lanes) => out.extend(
                lanes
                    .iter()
                    .map(|l| row(l.rate, l.best_q, l.peak_ns, l.longest(last))),
            ),
        }
    }
}

/// Length of a busy period that started at `start` and whose last packet, at `last_ns`, left the
/// queue `q` (scaled): `last − start + ⌈q/r⌉`, saturating at i64::MAX.
pub(crate) fn busy_len(start: i64, last_ns: i64, q: u128, rate: u64) -> i64 {
    // A 128-bit division is a slow library call; the queue nearly always fits 64 bits.
    let drain_ns = match u64::try_from(q) {
        Ok(q) => u128::from(q.div_ceil(rate)),
        Err(_) => q.div_ceil(u128::from(rate)),
    };
    let len = u128::from(last_ns.abs_diff(start)).saturating_add(drain_ns);
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// Whether the busy period of [`busy_len`] may be longer than `longest` ns: always when it is,
/// and never when it is not unless `longest` is i64::MAX or more (where `busy_len` saturates).
/// Without `busy_len`'s division: ⌈q/r⌉ > l exactly when q > l·r.
pub(crate) fn outlasts(start: i64, last_ns: i64, q: u128, rate: u64, longest: u64) -> bool {
    match longest.checked_sub(last_ns.abs_diff(start)) {
        None => true,
        // Both factors are below 2⁶⁴: the product fits.
        Some(l) => q > u128::from(l) * u128::from(rate),
    }
}

/// A busy period: (length ns, start ns).
type Period = (i64, i64);

/// The longer period; at equal lengths the earlier one (the sequential scan keeps the first).
fn longer(a: Option<Period>, b: Option<Period>) -> Option<Period> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 > x.0 || (y.0 == x.0 && y.1 < x.1) {
            y
        } else {
            x
        }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// `n / d` rounded once to the nearest f64 (ties to even); 0 when `d` is 0.
///
/// The quotient is computed with at least 55 significant bits plus a sticky bit for the remainder,
/// which is all one correct rounding to 53 bits needs.
pub fn ratio_to_f64(n: u128, d: u64) -> f64 {
    if n == 0 || d == 0 {
        return 0.0;
    }
    let d = u128::from(d);
    let n_bits = 128 - n.leading_zeros() as i32;
    let d_bits = 128 - d.leading_zeros() as i32;
    // n < 2^n_bits and d ≥ 2^(d_bits−1): shifting n to d_bits + 56 bits (≤ 120) gives a quotient
    // of at least 2^55 without overflow.
    let shift = (d_bits + 56 - n_bits).max(0);
    let n = n << shift;
    let q = n / d;
    let sticky = !n.is_multiple_of(d);
    let q_bits = 128 - q.leading_zeros() as i32;
    let drop = q_bits - 53;
    let mut keep = q >> drop;
    let rest = q & ((1u128 << drop) - 1);
    let half = 1u128 << (drop - 1);
    if rest > half || (rest == half && (sticky || keep & 1 == 1)) {
        keep += 1;
    }
    // keep ≤ 2^53 is exact in f64, and so is the power of two, so the product is exact.
    keep as f64 * 2f64.powi(drop - shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_matches_ieee_division_where_that_is_exact() {
        // Both operands below 2^53 convert exactly, and IEEE division rounds once: an oracle.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x >> (x % 40)) & ((1 << 53) - 1);
            let d = ((x.rotate_left(17) >> (x % 50)) & ((1 << 53) - 1)).max(1);
            assert_eq!(
                ratio_to_f64(u128::from(n), d),
                n as f64 / d as f64,
                "{n}/{d}"
            );
        }
        assert_eq!(ratio_to_f64(0, 7), 0.0);
        assert_eq!(ratio_to_f64(7, 0), 0.0);
    }

    #[test]
    fn ratio_rounds_wide_numerators_once() {
        // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: to even, down. Plus a tiny remainder: up.
        let d = BACKLOG_SCALE;
        let n = ((1u128 << 53) + 1) * u128::from(d);
        assert_eq!(ratio_to_f64(n, d), 9007199254740992.0);
        assert_eq!(ratio_to_f64(n + 1, d), 9007199254740994.0);
        assert_eq!(ratio_to_f64(u128::MAX, 1), 2f64.powi(128));
    }

    #[test]
    fn lindley_by_hand() {
        // 1500 B at t=0 and t=1000 ns on 8 Gbit/s: the server does 1000 B per µs.
        let mut b = Backlog::new(&[8_000_000_000]);
        b.push(0, 1500);
        b.push(1000, 1500);
        let mut rows = Vec::new();
        b.rows(By::All, GroupKey::All, &mut rows);
        assert_eq!(rows[0].bmax_bytes, 2000.0);
        assert_eq!(rows[0].peak_ns, 1000);
        // Busy from 0 until 1000 + 2000 B / (1 B/ns) = 3000.
        assert_eq!(rows[0].longest_busy_ns, 3000);
        assert_eq!(rows[0].longest_busy_start_ns, 0);
    }
}

#[cfg(test)]
mod lindley_tests {
    //! The batched u64/u128 lanes against the straightforward per-packet u128 recursion.

    use super::test_traces::{rates, trace};
    use super::*;

    /// The per-packet Lindley recursion in u128, as the engine computed it before batching.
    #[derive(Debug, Clone)]
    struct RefQueue {
        rate: u64,
        q: u128,
        last_ns: i64,
        best_q: u128,
        peak_ns: i64,
        busy_start: Option<i64>,
        longest_ns: i64,
        longest_start_ns: i64,
    }

    #[derive(Debug, Clone)]
    struct Reference {
        queues: Vec<RefQueue>,
        seen: bool,
    }

    impl RefQueue {
        fn close_busy(&mut self) {
            if let Some(start) = self.busy_start.take() {
                let len = busy_len(start, self.last_ns, self.q, self.rate);
                if len > self.longest_ns {
                    self.longest_ns = len;
                    self.longest_start_ns = start;
                }
            }
        }
    }

    impl Reference {
        fn new(rates: &[u64]) -> Self {
            let queues = rates
                .iter()
                .map(|&rate| RefQueue {
                    rate,
                    q: 0,
                    last_ns: 0,
                    best_q: 0,
                    peak_ns: 0,
                    busy_start: None,
                    longest_ns: 0,
                    longest_start_ns: 0,
                })
                .collect();
            Reference {
                queues,
                seen: false,
            }
        }

        fn push(&mut self, ts: i64, size: u64) {
            let work = u128::from(size) * u128::from(BACKLOG_SCALE);
            if !self.seen {
                self.seen = true;
                for q in &mut self.queues {
                    q.q = work;
                    q.last_ns = ts;
                    q.best_q = work;
                    q.peak_ns = ts;
                    q.busy_start = (work > 0).then_some(ts);
                    q.longest_start_ns = ts;
                }
                return;
            }
            for q in &mut self.queues {
                let served = u128::from(q.rate) * u128::from(ts.abs_diff(q.last_ns));
                if q.q <= served {
                    q.close_busy();
                    q.q = 0;
                } else {
                    q.q -= served;
                }
                q.q = q.q.saturating_add(work);
                q.last_ns = ts;
                if q.q > 0 && q.busy_start.is_none() {
                    q.busy_start = Some(ts);
                }
                if q.q > q.best_q {
                    q.best_q = q.q;
                    q.peak_ns = ts;
                }
            }
        }

        fn exact(&self) -> Vec<(u64, u128)> {
            self.queues.iter().map(|q| (q.rate, q.best_q)).collect()
        }

        /// The rows with the open periods closed on copies (a read does not end a period).
        fn rows(&self) -> Vec<BacklogRow> {
            if !self.seen {
                return Vec::new();
            }
            self.queues
                .iter()
                .map(|q| {
                    let mut q = q.clone();
                    q.close_busy();
                    BacklogRow {
                        by: By::All,
                        group: GroupKey::All,
                        rate_bps: q.rate,
                        bmax_bytes: ratio_to_f64(q.best_q, BACKLOG_SCALE),
                        peak_ns: q.peak_ns,
                        longest_busy_ns: q.longest_ns,
                        longest_busy_start_ns: q.longest_start_ns,
                    }
                })
                .collect()
        }
    }

    use crate::test_rng::Rng;

    fn same_rows(got: &[BacklogRow], want: &[BacklogRow], ctx: &str) {
        assert_eq!(got.len(), want.len(), "{ctx}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(
                (
                    g.rate_bps,
                    g.bmax_bytes.to_bits(),
                    g.peak_ns,
                    g.longest_busy_ns,
                    g.longest_busy_start_ns
                ),
                (
                    w.rate_bps,
                    w.bmax_bytes.to_bits(),
                    w.peak_ns,
                    w.longest_busy_ns,
                    w.longest_busy_start_ns
                ),
                "{ctx}"
            );
        }
    }

    /// Push `packets`, reading rows and exact values at the `reads` positions and at the end.
    /// Both ways of running the u64 lanes: eight at a time where this CPU can, and one by one.
    fn check(rates: &[u64], packets: &[(i64, u64)], reads: &[usize], ctx: &str) {
        for batch in [BATCH, KEYED_BATCH] {
            for simd in [true, false] {
                check_batch(
                    rates,
                    packets,
                    reads,
                    (batch, simd),
                    &format!("{ctx}, batch {batch}, simd {simd}"),
                );
            }
            // The AVX2 lanes too where the CPU has AVX-512 (else they ran just above).
            if simd::available() {
                simd::without_avx512(|| {
                    let ctx = format!("{ctx}, batch {batch}, AVX2");
                    check_batch(rates, packets, reads, (batch, true), &ctx);
                });
            }
        }
    }

    fn check_batch(
        rates: &[u64],
        packets: &[(i64, u64)],
        reads: &[usize],
        (batch, simd): (usize, bool),
        ctx: &str,
    ) {
        let mut got = Backlog::with_batch(rates, batch);
        got.simd = simd;
        let mut want = Reference::new(rates);
        for (i, &(t, s)) in packets.iter().enumerate() {
            if reads.contains(&i) {
                let e: Vec<_> = got.exact().collect();
                if want.seen {
                    assert_eq!(e, want.exact(), "{ctx} exact before packet {i}");
                }
                let mut rows = Vec::new();
                got.rows(By::All, GroupKey::All, &mut rows);
                same_rows(
                    &rows,
                    &want.rows(),
                    &format!("{ctx} rows before packet {i}"),
                );
            }
            got.push(t, s);
            want.push(t, s);
        }
        let e: Vec<_> = got.exact().collect();
        assert_eq!(e, want.exact(), "{ctx} exact");
        let mut rows = Vec::new();
        got.rows(By::All, GroupKey::All, &mut rows);
        same_rows(&rows, &want.rows(), ctx);
    }

    #[test]
    fn lanes_match_the_per_packet_recursion() {
        let mut rng = Rng(7);
        let lens = [
            1,
            2,
            3,
            BATCH - 1,
            BATCH,
            BATCH + 1,
            2 * BATCH + 5,
            3 * BATCH - 1,
            5 * BATCH + 17,
        ];
        for round in 0..1500 {
            let n = if round % 3 == 0 {
                lens[round / 3 % lens.len()]
            } else {
                1 + rng.below(3 * BATCH as u64) as usize
            };
            let style = rng.below(5);
            let rates = rates(&mut rng, false);
            let packets = trace(&mut rng, n, style);
            let reads: Vec<usize> = match rng.below(3) {
                0 => Vec::new(),
                1 => vec![rng.below(n as u64) as usize],
                _ => (0..4).map(|_| rng.below(n as u64) as usize).collect(),
            };
            check(
                &rates,
                &packets,
                &reads,
                &format!("round {round}, style {style}, n {n}, rates {rates:?}"),
            );
            if round % 100 == 0 {
                check(&[], &packets, &reads, "no rates");
            }
        }
    }

    #[test]
    fn periods_as_long_as_the_longest() {
        // Most busy periods tie with the longest, which the vector lanes take themselves, and
        // some pass it by a nanosecond, which the scalar lanes must take (every lane's results
        // against the per-packet recursion).
        let mut rng = Rng(29);
        for round in 0..300 {
            let mut r = rates(&mut rng, false);
            r.extend((1..=4).map(|k| k * BACKLOG_SCALE));
            r.push(BACKLOG_SCALE / 2);
            r.sort_unstable();
            r.dedup();
            let n = 1 + rng.below(3 * BATCH as u64) as usize;
            let packets = trace(&mut rng, n, 7);
            let reads = vec![rng.below(n as u64) as usize];
            check(
                &r,
                &packets,
                &reads,
                &format!("round {round}, n {n}, rates {r:?}"),
            );
        }
    }

    #[test]
    fn more_rates_than_one_vector() {
        // Full blocks of eight lanes and a partial one, against the per-packet recursion.
        let mut rng = Rng(21);
        for round in 0..200 {
            let k = 9 + rng.below(16) as usize;
            let mut r = Vec::new();
            while r.len() < k {
                r.extend(rates(&mut rng, false));
            }
            r.sort_unstable();
            r.dedup();
            let n = 1 + rng.below(3 * BATCH as u64) as usize;
            let style = rng.below(5);
            let packets = trace(&mut rng, n, style);
            let reads = vec![rng.below(n as u64) as usize];
            check(
                &r,
                &packets,
                &reads,
                &format!("round {round}, style {style}, n {n}, rates {r:?}"),
            );
        }
    }

    #[test]
    fn exact_emptying_and_batch_edges() {
        // 1 B/ns: a packet of L bytes followed by a gap of exactly L ns finds the queue empty
        // (served == q), which closes the period, and a gap one shorter does not.
        let rate = BACKLOG_SCALE;
        for n in [BATCH - 1, BATCH, BATCH + 1, 2 * BATCH + 3] {
            for slack in [-1i64, 0, 1] {
                let mut t = 0i64;
                let packets: Vec<(i64, u64)> = (0..n)
                    .map(|i| {
                        let size = 1 + (i as u64 * 7) % 50;
                        let p = (t, size);
                        t += size as i64 + slack;
                        p
                    })
                    .collect();
                // Also the exact rate alone: beside the others, whose queues close at every
                // packet, the vector lanes would hand every packet to the scalar ones.
                for rates in [&[rate, rate / 2, rate * 2][..], &[rate]] {
                    check(
                        rates,
                        &packets,
                        &[BATCH - 1, BATCH, n - 1],
                        &format!("n {n}, slack {slack}, rates {rates:?}"),
                    );
                }
            }
        }
    }

    #[test]
    fn queue_outgrows_u64_mid_batch() {
        // Equal timestamps pile up ~1 GB packets: the queue passes 2⁶⁴ scaled units at some
        // packet inside a batch, at a different one for each rate.
        let four = [1, 1_000_000_000, BACKLOG_SCALE, u64::MAX];
        // Also with the slow rates in the first block of eight lanes and the fast in the
        // second, so that only some blocks outgrow u64.
        let twelve: Vec<u64> = (0..12).map(|i| 1u64 << (i * 5)).collect();
        for rates in [&four[..], &twelve[..]] {
            queue_outgrows_u64(rates);
        }
    }

    fn queue_outgrows_u64(rates: &[u64]) {
        for at in [0, 1, BATCH - 3, BATCH + 2] {
            let mut packets: Vec<(i64, u64)> = (0..at).map(|i| (i as i64 * 100, 700)).collect();
            let t0 = at as i64 * 100;
            packets.extend((0..BATCH + 9).map(|i| (t0 + i as i64 / 4, 1_000_000_000 + i as u64)));
            packets.extend((0..BATCH).map(|i| (t0 + 1_000_000 + i as i64 * 1000, 1500)));
            check(rates, &packets, &[at + 2, at + BATCH], &format!("at {at}"));
        }
        // One packet whose work alone exceeds u64, mid-batch, after a busy start.
        let huge = NARROW_LIMIT / BACKLOG_SCALE + 1;
        let packets: Vec<(i64, u64)> = (0..BATCH + 40)
            .map(|i| (i as i64 * 10, if i == BATCH / 2 { huge } else { 1000 }))
            .collect();
        check(rates, &packets, &[BATCH / 2 + 1], "huge packet");
    }

    #[test]
    fn lanes_match_the_closed_form_oracle() {
        // The O(n³) sup-over-intervals oracle of engine::reference, on short traces.
        let mut rng = Rng(99);
        for round in 0..300 {
            let n = 1 + rng.below(40) as usize;
            let style = rng.below(5);
            let packets = trace(&mut rng, n, style);
            let rates = rates(&mut rng, false);
            let mut b = Backlog::new(&rates);
            for &(t, s) in &packets {
                b.push(t, s);
            }
            let exact: Vec<_> = b.exact().collect();
            let mut rows = Vec::new();
            b.rows(By::All, GroupKey::All, &mut rows);
            for ((row, &(rate, bmax)), &r) in rows.iter().zip(&exact).zip(&rates) {
                let want = super::super::reference::backlog(&packets, r).expect("packets");
                let ctx = format!("round {round}, rate {rate}");
                assert_eq!(rate, r, "{ctx}");
                assert_eq!(bmax, want.bmax_scaled, "{ctx}");
                assert_eq!(row.peak_ns, want.peak_ns, "{ctx}");
                assert_eq!(row.longest_busy_ns, want.longest_busy_ns, "{ctx}");
                assert_eq!(
                    row.longest_busy_start_ns, want.longest_busy_start_ns,
                    "{ctx}"
                );
            }
        }
    }
    /// Time the lanes against the per-packet recursion on a capture (the benchmark's 8 rates):
    /// `BACKLOG_BENCH=FILE cargo test -p burstcore --release --lib backlog_bench -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn backlog_bench() {
        let Some(mut packets) = crate::bench_support::packets_of("BACKLOG_BENCH") else {
            return;
        };
        // The whole capture at the benchmark's rates (its mean is MEAN_BPS of scan_bench): the
        // same rows, bit for bit.
        let mean = 33_165_083_973f64;
        let rates: Vec<u64> = [1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
            .iter()
            .map(|m| (mean * m) as u64)
            .collect();
        let mut got = Backlog::new(&rates);
        let mut want = Reference::new(&rates);
        for &(t, s) in &packets {
            got.push(t, s);
            want.push(t, s);
        }
        let mut rows = Vec::new();
        got.rows(By::All, GroupKey::All, &mut rows);
        same_rows(&rows, &want.rows(), "whole capture");
        // A prefix that stays in the L2 cache, replayed shifted in time: streaming the whole
        // capture from memory would cost more than the queues on a busy machine.
        packets.truncate(1 << 17);
        let span = packets.last().map_or(0, |p| p.0) - packets.first().map_or(0, |p| p.0) + 1;
        let reps = 64;
        // The rates of the benchmark, on the prefix's own mean rate (on the capture's, the
        // replayed queues would grow without bound).
        let bytes: u64 = packets.iter().map(|p| p.1).sum();
        let mean = bytes as f64 * 8e9 / span as f64;
        let rates: Vec<u64> = [1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
            .iter()
            .map(|m| (mean * m) as u64)
            .collect();
        let cpu = crate::bench_support::thread_cpu_seconds;
        let time = |f: &mut dyn FnMut() -> u128| {
            let mut best = f64::MAX;
            let mut check = 0;
            for _ in 0..5 {
                let t0 = cpu();
                check = f();
                best = best.min(cpu() - t0);
            }
            (best * 1e9 / (packets.len() as f64 * reps as f64), check)
        };
        let (new, a) = time(&mut || {
            let mut b = Backlog::new(&rates);
            for k in 0..reps {
                for &(t, s) in &packets {
                    b.push(t + k * span, s);
                }
            }
            b.exact().map(|(_, v)| v).sum()
        });
        let (old, b) = time(&mut || {
            let mut b = Reference::new(&rates);
            for k in 0..reps {
                for &(t, s) in &packets {
                    b.push(t + k * span, s);
                }
            }
            b.exact().iter().map(|&(_, v)| v).sum()
        });
        assert_eq!(a, b);
        println!(
            "{} packets × {reps}, 8 rates: lanes {new:.2} ns/packet ({:.2} per rate), per-packet u128 {old:.2} ns/packet ({:.2} per rate)",
            packets.len(),
            new / 8.0,
            old / 8.0
        );
    }
}

#[cfg(test)]
mod test_traces {
    //! Random rates and traces for the tests of both backlogs against their references.

    use super::*;
    use crate::test_rng::Rng;

    /// Rates at which queues empty exactly (whole bytes per ns), tiny and huge ones, random ones.
    pub(super) fn rates(rng: &mut Rng, any_order: bool) -> Vec<u64> {
        let mut r: Vec<u64> = (0..1 + rng.below(8))
            .map(|_| match rng.below(8) {
                0 => BACKLOG_SCALE * (1 + rng.below(4)),
                1 => BACKLOG_SCALE / (1 + rng.below(8)),
                2 => 1 + rng.below(1000),
                3 => u64::MAX - rng.below(1000),
                4 => 1 << rng.below(64),
                _ => 1 + rng.below(100_000_000_000),
            })
            .collect();
        r.sort_unstable();
        r.dedup();
        // The scanner sorts its rates, so a queue outgrows u64 at the slowest rate first; in
        // another order the switch comes after some rates took the packet.
        if any_order && rng.below(2) == 0 {
            r.reverse();
        }
        r
    }

    /// A trace of `n` packets, sorted unless `style` is 6; `style` (0–7) picks the gaps and
    /// sizes.
    pub(super) fn trace(rng: &mut Rng, n: usize, style: u64) -> Vec<(i64, u64)> {
        let mut ts: i64 = match rng.below(4) {
            0 => i64::MIN + rng.below(1000) as i64,
            1 => i64::MAX - (1 << 50),
            _ => rng.below(1 << 40) as i64 - (1 << 39),
        };
        // Work at least this large is beyond the u64 rates (2⁶³).
        let wide = NARROW_SIZE + 1;
        (0..n)
            .map(|_| {
                let size = match (style, rng.below(1000)) {
                    (_, 0..=139) => 0,
                    (4, 150..=151) => wide + rng.below(1 << 20),
                    (4, 152) => u64::MAX - rng.below(3),
                    (4, 149) => NARROW_SIZE - rng.below(2),
                    (4, 148) => u64::MAX / BACKLOG_SCALE + rng.below(3) - 1,
                    // Queues that outgrow u64 over a few packets.
                    (4, 153..=400) => wide / 2 + rng.below(wide / 4),
                    (3, 150..=170) => 1 << rng.below(31),
                    (7, 140..=199) => 1200,
                    (7, _) => 1500,
                    (0 | 3 | 5, _) => 1 + rng.below(100),
                    _ => 1 + rng.below(1500),
                };
                let step = match (style, rng.below(100)) {
                    (_, 0..=19) => 0,
                    (0, _) => 1 + rng.below(3) as i64,
                    (1, 20..=89) => rng.below(2000) as i64,
                    (1, _) => 1_000_000 + rng.below(1_000_000_000) as i64,
                    (2, 20..=97) => rng.below(300) as i64,
                    // Huge gaps: the service saturates a u64, the span passes 2⁶².
                    (2, _) => (rng.next() >> rng.below(64)) as i64 >> 1,
                    (3, _) => 100 * rng.below(20) as i64,
                    // The server of 1 B/ns (and 2, 4 B/ns) empties exactly at the next packet.
                    (5, 20..=59) => size as i64,
                    (5, 60..=79) => size as i64 / 2,
                    (5, _) => size as i64 / 4,
                    (6, 20..=29) => -(rng.below(1000) as i64),
                    // A pair among many: full-size packets, each served before the next at
                    // k B/ns (periods as long as the longest, a nanosecond either side), or
                    // not (periods of several packets), and idle gaps.
                    (7, 20..=69) => 1500,
                    (7, 70..=74) => 1499,
                    (7, 75..=79) => 1501,
                    (7, 80..=84) => 749 + rng.below(3) as i64,
                    (7, 85..=89) => 500,
                    _ => rng.below(200_000) as i64,
                };
                ts = ts.saturating_add(step);
                (ts, size)
            })
            .collect()
    }
}
