//! The backlog of a constant-rate FIFO server fed by one group, for many rates at once (Lindley).
//!
//! Exactness: the queue is kept in units of bit·ns/s, i.e. bytes × 8·10⁹, so the work a server of
//! r bit/s does in Δt ns is the integer r·Δt and no rounding ever happens while streaming. A u128
//! holds 2⁹⁷ per packet of 2⁶⁴ bytes, so it only saturates after 2³¹ such packets in one busy
//! period. The byte value is rounded to f64 once, at the end.
//!
//! Busy periods: a packet that finds the queue empty (everything before it fully served at or
//! before its arrival) and is not empty itself starts a busy period. The period ends at the exact
//! instant its last packet's queue is served, `t_last + Q_last/r`; the reported length is
//! `t_last − t_start + ⌈Q_last/r⌉` ns, so a period is never reported shorter than it is. A
//! zero-size packet never starts one. With no busy period at all (every packet empty) the longest
//! is 0 ns starting at the group's first packet.

use super::{BacklogRow, By, GroupKey};

/// Units of the exact queue: bytes × this = bit·ns/s.
pub const BACKLOG_SCALE: u64 = 8_000_000_000;

/// One server rate.
#[derive(Debug, Clone)]
struct Queue {
    rate: u64,
    /// Queue just after the latest packet, in bytes × BACKLOG_SCALE.
    q: u128,
    last_ns: i64,
    best_q: u128,
    peak_ns: i64,
    busy_start: Option<i64>,
    longest_ns: i64,
    longest_start_ns: i64,
}

impl Queue {
    /// Close the open busy period (if any), which drains after the packet at `last_ns`.
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

/// B_max(r) of one group for a sorted list of rates.
#[derive(Debug, Clone)]
pub(crate) struct Backlog {
    queues: Vec<Queue>,
    seen: bool,
}

impl Backlog {
    /// `rates_bps` must be positive (the scanner ensures it).
    pub(crate) fn new(rates_bps: &[u64]) -> Self {
        let queues = rates_bps
            .iter()
            .map(|&rate| Queue {
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
        Backlog {
            queues,
            seen: false,
        }
    }

    /// Add a packet; packets must come in timestamp order.
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
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
            // Sorted input: ts ≥ last_ns, and the difference of two i64 always fits a u64.
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

    /// Exact B_max per rate, in bytes × BACKLOG_SCALE (for tests and exact merging).
    pub(crate) fn exact(&self) -> impl Iterator<Item = (u64, u128)> + '_ {
        self.queues.iter().map(|q| (q.rate, q.best_q))
    }

    /// One row per rate; closes the busy periods still open.
    pub(crate) fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<BacklogRow>) {
        if !self.seen {
            return;
        }
        for q in &mut self.queues {
            q.close_busy();
            out.push(BacklogRow {
                by,
                group,
                rate_bps: q.rate,
                bmax_bytes: ratio_to_f64(q.best_q, BACKLOG_SCALE),
                peak_ns: q.peak_ns,
                longest_busy_ns: q.longest_ns,
                longest_busy_start_ns: q.longest_start_ns,
            });
        }
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

/// Positive part of a signed scaled queue.
fn pos(x: i128) -> u128 {
    u128::try_from(x).unwrap_or(0)
}

/// An empty instant of a chunk scanned alone (its first packet, or a packet that finds the queue
/// empty) at which D reaches a new minimum, where D = A[t₁, tᵢ) − r(tᵢ − t₁) is the work before the
/// packet minus the service since the chunk's first packet (scaled).
///
/// With a queue c > 0 carried in from earlier chunks, the queue of the chunk is
/// max(Q_alone, c + S) where S = A[t₁, tᵢ] − r(tᵢ − t₁), so the carried busy period ends at the first
/// empty instant with D ≤ −c: always one of these new minima.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EmptyInstant {
    d: i128,
    /// The packet before it (unused for the chunk's first packet): time, queue alone, and S.
    prev_ns: i64,
    prev_q: u128,
    prev_s: i128,
    /// Longest busy period closed within the chunk that starts at or after this instant and
    /// before the next one kept.
    best: Option<Period>,
}

/// The mergeable backlog state of one group and one rate over a chunk of its packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RateChunk {
    rate: u64,
    /// Queue after the last packet, and the start of the busy period still open (iff q_end > 0).
    q_end: u128,
    open: Option<i64>,
    /// B_max of the chunk alone, and the earliest packet reaching it.
    bmax: u128,
    peak_ns: i64,
    /// max S and the earliest packet reaching it; S at the last packet.
    smax: i128,
    smax_ns: i64,
    s_end: i128,
    /// Never empty: the first entry is the chunk's first packet (D = 0).
    instants: Vec<EmptyInstant>,
    /// The list is a prefix: later new minima were not kept (cap), their periods folded into the
    /// last entry kept. A carry that ends beyond the kept ones cannot be merged.
    truncated: bool,
}

/// One rate of [`ChunkBacklog`] while streaming.
#[derive(Debug, Clone)]
struct ChunkQueue {
    rate: u64,
    q: u128,
    last_ns: i64,
    /// D at the current segment's first packet (the latest empty instant): within a segment
    /// S = D + Q, so the maxima of S are found per segment, at its end, not per packet.
    d: i128,
    seg_best: u128,
    seg_ns: i64,
    best_q: u128,
    peak_ns: i64,
    smax: i128,
    smax_ns: i64,
    busy_start: Option<i64>,
    instants: Vec<EmptyInstant>,
    truncated: bool,
}

impl ChunkQueue {
    /// Fold the finished segment into the maxima (strictly greater: the earliest is kept).
    fn fold_segment(&mut self) -> Option<()> {
        let s = self.d.checked_add(i128::try_from(self.seg_best).ok()?)?;
        if s > self.smax {
            self.smax = s;
            self.smax_ns = self.seg_ns;
        }
        if self.seg_best > self.best_q {
            self.best_q = self.seg_best;
            self.peak_ns = self.seg_ns;
        }
        Some(())
    }

    /// A packet at `ts` of scaled size `work` finds the queue empty (`served` ≥ the queue).
    #[inline]
    fn empty_instant(
        &mut self,
        ts: i64,
        served: u128,
        work: u128,
        cap: usize,
        budget: &mut usize,
    ) -> Option<()> {
        if let Some(start) = self.busy_start.take() {
            let len = busy_len(start, self.last_ns, self.q, self.rate);
            if let Some(last) = self.instants.last_mut() {
                last.best = longer(last.best, Some((len, start)));
            }
        }
        self.fold_segment()?;
        let q = i128::try_from(self.q).ok()?;
        let prev_s = self.d.checked_add(q)?;
        let d = prev_s.checked_sub(i128::try_from(served).ok()?)?;
        let min = self.instants.last().map_or(i128::MAX, |e| e.d);
        if d < min && !self.truncated {
            if self.instants.len() < cap && *budget > 0 {
                *budget -= 1;
                self.instants.push(EmptyInstant {
                    d,
                    prev_ns: self.last_ns,
                    prev_q: self.q,
                    prev_s,
                    best: None,
                });
            } else {
                self.truncated = true;
            }
        }
        self.d = d;
        self.q = work;
        self.seg_best = work;
        self.seg_ns = ts;
        self.busy_start = (work > 0).then_some(ts);
        Some(())
    }
}

/// [`Backlog`] for a time chunk: the same queue, plus what merging with the chunks before and
/// after needs (see [`RateChunk`]). Costs the same per packet; the extra work happens only when
/// the queue empties.
#[derive(Debug, Clone)]
pub(crate) struct ChunkBacklog {
    queues: Vec<ChunkQueue>,
    seen: bool,
    /// False once a value left the range where merging is exact (then the chunk cannot merge).
    exact: bool,
    cap: usize,
}

impl ChunkBacklog {
    /// `rates_bps` positive; `cap` (≥ 1) bounds the empty instants kept per rate.
    pub(crate) fn new(rates_bps: &[u64], cap: usize) -> Self {
        let queues = rates_bps
            .iter()
            .map(|&rate| ChunkQueue {
                rate,
                q: 0,
                last_ns: 0,
                d: 0,
                seg_best: 0,
                seg_ns: 0,
                best_q: 0,
                peak_ns: 0,
                smax: i128::MIN,
                smax_ns: 0,
                busy_start: None,
                instants: Vec::new(),
                truncated: false,
            })
            .collect();
        ChunkBacklog {
            queues,
            seen: false,
            exact: true,
            cap: cap.max(1),
        }
    }

    /// Add a packet; packets must come in timestamp order. `budget`: empty instants that may
    /// still be kept, shared by every group of the chunk (each kept one takes one).
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64, budget: &mut usize) {
        let work = u128::from(size) * u128::from(BACKLOG_SCALE);
        if !self.seen {
            self.seen = true;
            for q in &mut self.queues {
                q.q = work;
                q.last_ns = ts;
                q.seg_best = work;
                q.seg_ns = ts;
                q.peak_ns = ts;
                q.busy_start = (work > 0).then_some(ts);
                q.instants.push(EmptyInstant {
                    d: 0,
                    prev_ns: ts,
                    prev_q: 0,
                    prev_s: 0,
                    best: None,
                });
            }
            return;
        }
        for q in &mut self.queues {
            let served = u128::from(q.rate) * u128::from(ts.abs_diff(q.last_ns));
            if q.q <= served {
                if q.empty_instant(ts, served, work, self.cap, budget)
                    .is_none()
                {
                    self.exact = false;
                }
            } else {
                match (q.q - served).checked_add(work) {
                    Some(v) => q.q = v,
                    None => {
                        q.q = u128::MAX;
                        self.exact = false;
                    }
                }
                if q.q > q.seg_best {
                    q.seg_best = q.q;
                    q.seg_ns = ts;
                }
            }
            q.last_ns = ts;
        }
    }

    /// The mergeable state per rate; `None` when some value left the exact range (or no packet).
    pub(crate) fn finish(self) -> Option<Vec<RateChunk>> {
        if !self.exact || !self.seen {
            return None;
        }
        let mut out = Vec::with_capacity(self.queues.len());
        for mut q in self.queues {
            q.fold_segment()?;
            let s_end = q.d.checked_add(i128::try_from(q.q).ok()?)?;
            out.push(RateChunk {
                rate: q.rate,
                q_end: q.q,
                open: q.busy_start,
                bmax: q.best_q,
                peak_ns: q.peak_ns,
                smax: q.smax,
                smax_ns: q.smax_ns,
                s_end,
                instants: q.instants,
                truncated: q.truncated,
            });
        }
        Some(out)
    }
}

impl RateChunk {
    pub(crate) fn rate(&self) -> u64 {
        self.rate
    }

    /// Exact B_max, bytes × BACKLOG_SCALE.
    pub(crate) fn bmax(&self) -> u128 {
        self.bmax
    }

    /// The row of the sequential scan, for a group whose first and last packets are given.
    pub(crate) fn row(&self, by: By, group: GroupKey, first_ns: i64, last_ns: i64) -> BacklogRow {
        let mut best = self.instants.iter().fold(None, |b, e| longer(b, e.best));
        if let Some(start) = self.open {
            best = longer(
                best,
                Some((busy_len(start, last_ns, self.q_end, self.rate), start)),
            );
        }
        let (longest_busy_ns, longest_busy_start_ns) = best.unwrap_or((0, first_ns));
        BacklogRow {
            by,
            group,
            rate_bps: self.rate,
            bmax_bytes: ratio_to_f64(self.bmax, BACKLOG_SCALE),
            peak_ns: self.peak_ns,
            longest_busy_ns,
            longest_busy_start_ns,
        }
    }

    /// The state of `a` followed by `b` (same rate; every packet of `a` at or before every packet
    /// of `b`), given the first and last packet times of each. Keeps at most `cap` instants.
    /// `None` when the result is not exactly known: a carried busy period that ends past the
    /// instants `b` kept, or a value out of range.
    pub(crate) fn merge(
        a: RateChunk,
        b: &RateChunk,
        a_last: i64,
        b_first: i64,
        cap: usize,
    ) -> Option<RateChunk> {
        if a.rate != b.rate || b_first < a_last {
            return None;
        }
        let rate = a.rate;
        let served = u128::from(rate) * u128::from(b_first.abs_diff(a_last));
        // S of `b`'s packets seen from `a`'s first packet is S_b + off.
        let off = a.s_end.checked_sub(i128::try_from(served).ok()?)?;
        let mut instants = a.instants;
        let mut truncated = a.truncated;
        let close_into = |instants: &mut Vec<EmptyInstant>, p: Period| {
            if let Some(last) = instants.last_mut() {
                last.best = longer(last.best, Some(p));
            }
        };
        let (c, q_end, open, from) = if a.q_end <= served {
            // `b`'s first packet finds the queue empty: `a`'s open period ends as it did alone.
            if let Some(start) = a.open {
                close_into(
                    &mut instants,
                    (busy_len(start, a_last, a.q_end, rate), start),
                );
            }
            (0u128, b.q_end, b.open, Some(0))
        } else {
            let c = a.q_end - served;
            let neg_c = i128::try_from(c).ok()?.checked_neg()?;
            match b.instants.iter().position(|e| e.d <= neg_c) {
                Some(k) => {
                    let e = &b.instants[k];
                    let prev_q = e
                        .prev_q
                        .max(pos(i128::try_from(c).ok()?.checked_add(e.prev_s)?));
                    let start = a.open?;
                    close_into(
                        &mut instants,
                        (busy_len(start, e.prev_ns, prev_q, rate), start),
                    );
                    (c, b.q_end, b.open, Some(k))
                }
                None if b.truncated => return None,
                None => {
                    let carried = pos(i128::try_from(c).ok()?.checked_add(b.s_end)?);
                    (c, b.q_end.max(carried), a.open, None)
                }
            }
        };
        let ci = i128::try_from(c).ok()?;
        if let Some(k) = from {
            for (j, e) in b.instants.iter().enumerate().skip(k) {
                let d = off.checked_add(e.d)?;
                let min = instants.last().map_or(i128::MAX, |l| l.d);
                if !truncated && d < min && instants.len() < cap {
                    let (prev_ns, prev_q, prev_s) = if j == 0 {
                        // `b`'s first packet: the packet before is `a`'s last.
                        (a_last, a.q_end, a.s_end)
                    } else {
                        (
                            e.prev_ns,
                            e.prev_q.max(pos(ci.checked_add(e.prev_s)?)),
                            off.checked_add(e.prev_s)?,
                        )
                    };
                    instants.push(EmptyInstant {
                        d,
                        prev_ns,
                        prev_q,
                        prev_s,
                        best: e.best,
                    });
                } else {
                    if d < min {
                        truncated = true;
                    }
                    if let Some(last) = instants.last_mut() {
                        last.best = longer(last.best, e.best);
                    }
                }
            }
            truncated |= b.truncated;
        }
        // `b`'s queue is max(Q_b, c + S_b): its maximum is the larger of the two maxima.
        let cs = ci.checked_add(b.smax)?;
        let (mb, mb_ns) = match pos(cs).cmp(&b.bmax) {
            std::cmp::Ordering::Less => (b.bmax, b.peak_ns),
            std::cmp::Ordering::Greater => (pos(cs), b.smax_ns),
            std::cmp::Ordering::Equal => (b.bmax, b.peak_ns.min(b.smax_ns)),
        };
        let (bmax, peak_ns) = if a.bmax >= mb {
            (a.bmax, a.peak_ns)
        } else {
            (mb, mb_ns)
        };
        let bs = off.checked_add(b.smax)?;
        let (smax, smax_ns) = if a.smax >= bs {
            (a.smax, a.smax_ns)
        } else {
            (bs, b.smax_ns)
        };
        Some(RateChunk {
            rate,
            q_end,
            open,
            bmax,
            peak_ns,
            smax,
            smax_ns,
            s_end: off.checked_add(b.s_end)?,
            instants,
            truncated,
        })
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
    let sticky = n % d != 0;
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
