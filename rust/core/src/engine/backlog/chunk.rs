//! The backlog of one time chunk, in a form that merges exactly with its neighbours (max-plus
//! algebra of the Lindley queue): what `engine::chunk` keeps per group and rate.

use super::{
    busy_len, dcap_of, longer, ratio_to_f64, shift_of, BacklogRow, By, GroupKey, Period, Scaled,
    BACKLOG_SCALE, NARROW_LIMIT, NARROW_SIZE, SPAN_LIMIT,
};

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

impl EmptyInstant {
    /// The chunk's first packet, at `ts`: D = 0, with nothing before it.
    fn chunk_start(ts: i64) -> Self {
        EmptyInstant {
            d: 0,
            prev_ns: ts,
            prev_q: 0,
            prev_s: 0,
            best: None,
        }
    }
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

/// One rate of [`ChunkBacklog`] once its group left the u64 range: the per-packet u128
/// recursion, with overflow checks.
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
    /// The group's first packet, at `ts`, of scaled size `work`.
    fn first(&mut self, ts: i64, work: u128) {
        self.q = work;
        self.last_ns = ts;
        self.seg_best = work;
        self.seg_ns = ts;
        self.peak_ns = ts;
        self.busy_start = (work > 0).then_some(ts);
        self.instants.push(EmptyInstant::chunk_start(ts));
    }

    /// A later packet; `None` once a value left the range where merging is exact.
    fn push(&mut self, ts: i64, work: u128, cap: usize, budget: &mut usize) -> Option<()> {
        let served = u128::from(self.rate) * u128::from(ts.abs_diff(self.last_ns));
        let out = if self.q <= served {
            self.empty_instant(ts, served, work, cap, budget)
        } else {
            let next = (self.q - served).checked_add(work);
            self.q = next.unwrap_or(u128::MAX);
            if self.q > self.seg_best {
                self.seg_best = self.q;
                self.seg_ns = ts;
            }
            next.map(|_| ())
        };
        self.last_ns = ts;
        out
    }

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
    fn empty_instant(
        &mut self,
        ts: i64,
        served: u128,
        work: u128,
        cap: usize,
        budget: &mut usize,
    ) -> Option<()> {
        if let Some(start) = self.busy_start.take() {
            if let Some(last) = self.instants.last_mut() {
                // A bound without the division (a rate is at least 2^⌊log2 rate⌋) rules most
                // periods out; only one that may be the longest is measured exactly.
                let bound =
                    u128::from(self.last_ns.abs_diff(start)) + (self.q >> self.rate.ilog2()) + 1;
                if last
                    .best
                    .is_none_or(|(len, _)| bound >= len.unsigned_abs().into())
                {
                    let len = busy_len(start, self.last_ns, self.q, self.rate);
                    last.best = longer(last.best, Some((len, start)));
                }
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

/// One rate of [`ChunkBacklog`] while the queue stays below 2⁶³ ([`NARROW_LIMIT`]) and the group
/// spans less than 2⁶² ns ([`SPAN_LIMIT`]): the same recursion as [`ChunkQueue`], without
/// overflow checks. In this range D (never above 0, since the queue a packet finds empty is at
/// most what the server did meanwhile, and at least −r·span > −2¹²⁶) and S = D + Q (below 2⁶³)
/// fit an i128 with room to spare, and the service that decides whether the queue empties is
/// computed in u64 as in [`Lane::served`].
#[derive(Debug, Clone)]
struct NarrowQueue {
    // What every packet reads: the queue, the service, the segment's maximum.
    q: u64,
    rate: u64,
    /// ⌈2⁶³ / rate⌉ (see [`Lane::dcap`]).
    dcap: u64,
    seg_best: u64,
    seg_ns: i64,
    // What an empty instant reads.
    /// Start of the open busy period; meaningful only while `q` > 0.
    start_ns: i64,
    shift: u32,
    truncated: bool,
    d: i128,
    smax: i128,
    best_q: u64,
    peak_ns: i64,
    smax_ns: i64,
    /// The `best` of the latest kept instant, held here (and stored into the list when the next
    /// instant is kept, or on leaving this representation) so that a closing period does not
    /// reach into the list.
    cur: Option<Period>,
    instants: Vec<EmptyInstant>,
}

impl NarrowQueue {
    fn new(rate: u64) -> Self {
        NarrowQueue {
            q: 0,
            rate,
            dcap: dcap_of(rate),
            seg_best: 0,
            seg_ns: 0,
            start_ns: 0,
            shift: shift_of(rate),
            truncated: false,
            d: 0,
            smax: i128::MIN,
            best_q: 0,
            peak_ns: 0,
            smax_ns: 0,
            cur: None,
            instants: Vec::new(),
        }
    }

    /// The group's first packet (`work` below 2⁶³).
    fn first(&mut self, ts: i64, work: u64) {
        self.q = work;
        self.seg_best = work;
        self.seg_ns = ts;
        self.peak_ns = ts;
        self.start_ns = ts;
        self.instants.push(EmptyInstant::chunk_start(ts));
    }

    /// The packet at `ts` (`dt` ns after the previous one, at `last`) of scaled size `work`
    /// finds the queue empty: [`ChunkQueue::empty_instant`] in this range.
    #[inline]
    fn empty_instant(
        &mut self,
        ts: i64,
        last: i64,
        dt: u64,
        work: u64,
        cap: usize,
        budget: &mut usize,
    ) {
        if self.q > 0 {
            let start = self.start_ns;
            let bound = u64::bound(last.abs_diff(start), self.q.drain_bound(self.shift));
            // Periods are never negative.
            if self.cur.is_none_or(|(len, _)| bound >= len as u64) {
                let len = busy_len(start, last, u128::from(self.q), self.rate);
                self.cur = longer(self.cur, Some((len, start)));
            }
        }
        let s = self.d + i128::from(self.seg_best);
        if s > self.smax {
            self.smax = s;
            self.smax_ns = self.seg_ns;
        }
        if self.seg_best > self.best_q {
            self.best_q = self.seg_best;
            self.peak_ns = self.seg_ns;
        }
        let prev_s = self.d + i128::from(self.q);
        // Below 2¹²⁶ (dt < 2⁶²): exact as an i128.
        let d = prev_s - (u128::from(self.rate) * u128::from(dt)) as i128;
        // D never increases from one empty instant to the next, and until the list is
        // truncated its latest entry holds the current D: this is the recursion's `d < min`.
        if d < self.d && !self.truncated {
            if self.instants.len() < cap && *budget > 0 {
                *budget -= 1;
                if let Some(e) = self.instants.last_mut() {
                    e.best = self.cur.take();
                }
                self.instants.push(EmptyInstant {
                    d,
                    prev_ns: last,
                    prev_q: u128::from(self.q),
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
        self.start_ns = ts;
    }

    /// The same state for the u128 recursion, whose latest packet was at `last_ns`.
    fn widen(mut self, last_ns: i64) -> ChunkQueue {
        if let Some(e) = self.instants.last_mut() {
            e.best = self.cur.take();
        }
        ChunkQueue {
            rate: self.rate,
            q: u128::from(self.q),
            last_ns,
            d: self.d,
            seg_best: u128::from(self.seg_best),
            seg_ns: self.seg_ns,
            best_q: u128::from(self.best_q),
            peak_ns: self.peak_ns,
            smax: self.smax,
            smax_ns: self.smax_ns,
            busy_start: (self.q > 0).then_some(self.start_ns),
            instants: self.instants,
            truncated: self.truncated,
        }
    }
}

/// [`Backlog`] for a time chunk: the same queue, plus what merging with the chunks before and
/// after needs (see [`RateChunk`]). The extra work happens only when the queue empties. The
/// rates run in u64 ([`NarrowQueue`]) until a packet's work, a queue or the group's span leaves
/// that range, then in u128 ([`ChunkQueue`]) for good; the results are the same bit for bit.
///
/// Unlike [`Backlog`], the rates take each packet in turn rather than one rate over a batch: the
/// rates must take from the shared budget in packet order, and even the rates whose lists are
/// truncated (which could run later) measured no faster run one at a time over held packets
/// (on the benchmark's traffic, with branches or without), probably because a queue that
/// empties at one rate empties at every faster one, which the branch predictor can use only
/// when the rates are interleaved.
#[derive(Debug, Clone)]
pub(crate) struct ChunkBacklog {
    /// The rates while `narrow` (then `wide` is empty), with the latest packet at `last_ns`.
    queues: Vec<NarrowQueue>,
    wide: Vec<ChunkQueue>,
    last_ns: i64,
    /// SPAN_LIMIT after the first packet while the rates are in `queues`, else i64::MIN.
    narrow_end: i64,
    /// A packet has come and the rates are still in `queues`.
    narrow: bool,
    seen: bool,
    /// False once a value left the range where merging is exact (then the chunk cannot merge).
    exact: bool,
    cap: usize,
}

impl ChunkBacklog {
    /// `rates_bps` positive; `cap` (≥ 1) bounds the empty instants kept per rate.
    pub(crate) fn new(rates_bps: &[u64], cap: usize) -> Self {
        ChunkBacklog {
            queues: rates_bps.iter().map(|&r| NarrowQueue::new(r)).collect(),
            wide: Vec::new(),
            last_ns: 0,
            narrow_end: i64::MIN,
            narrow: false,
            seen: false,
            exact: true,
            cap: cap.max(1),
        }
    }

    /// Add a packet; packets must come in timestamp order. `budget`: empty instants that may
    /// still be kept, shared by every group of the chunk (each kept one takes one).
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64, budget: &mut usize) {
        // In order, and less than SPAN_LIMIT after the first packet (`narrow_end` is i64::MIN
        // unless the rates are u64).
        if size <= NARROW_SIZE && ts >= self.last_ns && ts < self.narrow_end {
            self.push_narrow(ts, size * BACKLOG_SCALE, budget);
        } else {
            self.push_other(ts, size, budget);
        }
    }

    #[inline]
    fn push_narrow(&mut self, ts: i64, work: u64, budget: &mut usize) {
        let last = self.last_ns;
        // In order (see `push`): below SPAN_LIMIT.
        let dt = ts.wrapping_sub(last) as u64;
        let cap = self.cap;
        for (k, n) in self.queues.iter_mut().enumerate() {
            let served = u64::served(n.rate, dt, n.dcap);
            if n.q <= served {
                n.empty_instant(ts, last, dt, work, cap, budget);
            } else {
                // Both terms below 2⁶³: no wrap.
                let q = n.q - served + work;
                if q >= NARROW_LIMIT {
                    self.widen(k, ts, u128::from(work), budget);
                    return;
                }
                n.q = q;
                if q > n.seg_best {
                    n.seg_best = q;
                    n.seg_ns = ts;
                }
            }
        }
        self.last_ns = ts;
    }

    /// The first packet, a packet outside the u64 range, or any packet once the rates are u128.
    #[cold]
    #[inline(never)]
    fn push_other(&mut self, ts: i64, size: u64, budget: &mut usize) {
        let work = u128::from(size) * u128::from(BACKLOG_SCALE);
        if !self.seen {
            self.seen = true;
            self.last_ns = ts;
            if size <= NARROW_SIZE {
                self.narrow = true;
                self.narrow_end = ts.saturating_add(SPAN_LIMIT as i64);
                for n in &mut self.queues {
                    n.first(ts, size * BACKLOG_SCALE);
                }
            } else {
                self.wide = std::mem::take(&mut self.queues)
                    .into_iter()
                    .map(|n| n.widen(0))
                    .collect();
                for q in &mut self.wide {
                    q.first(ts, work);
                }
            }
        } else if self.narrow {
            self.widen(0, ts, work, budget);
        } else {
            self.push_wide(0, ts, work, budget);
        }
    }

    /// Move every rate to u128 at the packet at `ts`, which the rates before `k` have taken,
    /// and let the others take it.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, k: usize, ts: i64, work: u128, budget: &mut usize) {
        let last = self.last_ns;
        self.wide = std::mem::take(&mut self.queues)
            .into_iter()
            .enumerate()
            .map(|(j, n)| n.widen(if j < k { ts } else { last }))
            .collect();
        self.narrow = false;
        self.narrow_end = i64::MIN;
        self.push_wide(k, ts, work, budget);
    }

    /// The u128 recursion at one packet, for the rates from `k` on.
    fn push_wide(&mut self, k: usize, ts: i64, work: u128, budget: &mut usize) {
        for q in self.wide.iter_mut().skip(k) {
            if q.push(ts, work, self.cap, budget).is_none() {
                self.exact = false;
            }
        }
        self.last_ns = ts;
    }

    /// The mergeable state per rate; `None` when some value left the exact range (or no packet).
    pub(crate) fn finish(self) -> Option<Vec<RateChunk>> {
        if !self.exact || !self.seen {
            return None;
        }
        let queues = if self.narrow {
            let last = self.last_ns;
            self.queues.into_iter().map(|n| n.widen(last)).collect()
        } else {
            self.wide
        };
        let mut out = Vec::with_capacity(queues.len());
        for mut q in queues {
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

#[cfg(test)]
mod tests {
    //! [`ChunkBacklog`] (u64 rates, moving to u128) against the per-packet u128 recursion it
    //! replaced, kept here as the reference: the same [`RateChunk`]s, bit for bit, and the same
    //! use of the shared budget.

    use super::super::test_traces::{rates, trace};
    use super::*;
    use crate::test_rng::Rng;

    /// One rate of the reference: the recursion in u128 with overflow checks, as the chunk
    /// scanner ran it before the u64 rates.
    #[derive(Debug, Clone)]
    struct RefQueue {
        rate: u64,
        q: u128,
        last_ns: i64,
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

    impl RefQueue {
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

        fn empty_instant(
            &mut self,
            ts: i64,
            served: u128,
            work: u128,
            cap: usize,
            budget: &mut usize,
        ) -> Option<()> {
            if let Some(start) = self.busy_start.take() {
                if let Some(last) = self.instants.last_mut() {
                    // Always measured exactly (no bound): an independent check of the bound.
                    let len = busy_len(start, self.last_ns, self.q, self.rate);
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

    #[derive(Debug, Clone)]
    struct Reference {
        queues: Vec<RefQueue>,
        seen: bool,
        exact: bool,
        cap: usize,
    }

    impl Reference {
        fn new(rates: &[u64], cap: usize) -> Self {
            let queues = rates
                .iter()
                .map(|&rate| RefQueue {
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
            Reference {
                queues,
                seen: false,
                exact: true,
                cap: cap.max(1),
            }
        }

        fn push(&mut self, ts: i64, size: u64, budget: &mut usize) {
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

        fn finish(self) -> Option<Vec<RateChunk>> {
            if !self.exact || !self.seen {
                return None;
            }
            let mut out = Vec::new();
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

    /// Feed `groups` backlogs (and their references) the packets, each to one group, sharing a
    /// budget; compare the budget after every packet, and finish() at `reads` and at the end.
    fn check(
        rates: &[u64],
        cap: usize,
        budget: usize,
        groups: usize,
        packets: &[(i64, u64, usize)],
        reads: &[usize],
        ctx: &str,
    ) {
        let mut got: Vec<ChunkBacklog> =
            (0..groups).map(|_| ChunkBacklog::new(rates, cap)).collect();
        let mut want: Vec<Reference> = (0..groups).map(|_| Reference::new(rates, cap)).collect();
        let (mut b_got, mut b_want) = (budget, budget);
        for (i, &(t, s, g)) in packets.iter().enumerate() {
            if reads.contains(&i) {
                assert_eq!(
                    got[g].clone().finish(),
                    want[g].clone().finish(),
                    "{ctx}: group {g} before packet {i}"
                );
            }
            got[g].push(t, s, &mut b_got);
            want[g].push(t, s, &mut b_want);
            assert_eq!(b_got, b_want, "{ctx}: budget after packet {i}");
        }
        for (g, (a, b)) in got.into_iter().zip(want).enumerate() {
            assert_eq!(a.finish(), b.finish(), "{ctx}: group {g}");
        }
    }

    #[test]
    fn u64_rates_match_the_u128_recursion() {
        let mut rng = Rng(0xC4A2);
        let (mut narrow_end, mut widened, mut refused) = (0, 0, 0);
        for round in 0..3000 {
            let n = 1 + rng.below(if round % 4 == 0 { 2000 } else { 200 }) as usize;
            let style = rng.below(7);
            let rates = rates(&mut rng, true);
            let groups = 1 + rng.below(3) as usize;
            let packets: Vec<(i64, u64, usize)> = trace(&mut rng, n, style)
                .into_iter()
                .map(|(t, s)| (t, s, rng.below(groups as u64) as usize))
                .collect();
            let (cap, budget) = match rng.below(4) {
                0 => (1 + rng.below(5) as usize, usize::MAX),
                1 => (1 + rng.below(50) as usize, rng.below(60) as usize),
                2 => (DEFAULT_CAP, rng.below(20) as usize),
                _ => (DEFAULT_CAP, usize::MAX),
            };
            let reads: Vec<usize> = (0..rng.below(3))
                .map(|_| rng.below(n as u64) as usize)
                .collect();
            check(
                &rates,
                cap,
                budget,
                groups,
                &packets,
                &reads,
                &format!("round {round}, style {style}, n {n}, cap {cap}, budget {budget}, rates {rates:?}"),
            );
            // How often each path was taken, over the first group.
            let mut b = ChunkBacklog::new(&rates, cap);
            let mut spare = usize::MAX;
            for &(t, s, g) in &packets {
                if g == 0 {
                    b.push(t, s, &mut spare);
                }
            }
            match (b.narrow, b.seen, b.finish().is_some()) {
                (true, _, _) => narrow_end += 1,
                (false, true, true) => widened += 1,
                (false, true, false) => refused += 1,
                _ => {}
            }
        }
        // Both paths are exercised: u64 to the end, and moved to u128 (then, rarely, out of
        // the exact range: see `leaving_the_exact_range_refuses`).
        assert!(
            narrow_end > 100 && widened > 100,
            "{narrow_end} {widened} {refused}"
        );
    }

    const DEFAULT_CAP: usize = 1 << 14;

    #[test]
    fn queue_outgrows_u64_at_each_rate() {
        // ~1 GB packets at equal timestamps pile the queue past 2⁶³ scaled units at a different
        // packet for each rate (the switch happens part-way through a packet's rates), then the
        // queues drain over a long idle gap and empty exactly at 1 B/ns.
        let rates = [BACKLOG_SCALE, 1, u64::MAX, 1_000_000_000, 4 * BACKLOG_SCALE];
        for at in [0, 1, 2, 7] {
            let mut packets: Vec<(i64, u64, usize)> =
                (0..at).map(|i| (i as i64 * 100, 700, 0)).collect();
            let t0 = at as i64 * 100;
            packets.extend((0..40).map(|i| (t0 + i as i64 / 4, 1_000_000_000 + i as u64, 0)));
            let mut t = t0 + 1_000_000_000_000;
            for i in 0..50 {
                let size = 1 + (i * 37) % 1500;
                packets.push((t, size, 0));
                t += size as i64;
            }
            for cap in [1, 3, DEFAULT_CAP] {
                check(
                    &rates,
                    cap,
                    usize::MAX,
                    1,
                    &packets,
                    &[at + 3, at + 39],
                    &format!("at {at}, cap {cap}"),
                );
            }
        }
    }

    #[test]
    fn leaving_the_exact_range_refuses() {
        // The service over the whole i64 range at the fastest rate is about 2¹²⁸: D leaves the
        // i128 range (after the rates moved to u128, as the span passes 2⁶²).
        let rates = [1 << 20, u64::MAX];
        let far = vec![(i64::MIN, 1, 0), (0, 1, 0), (i64::MAX, 1, 0)];
        check(
            &rates,
            DEFAULT_CAP,
            usize::MAX,
            1,
            &far,
            &[1, 2],
            "far apart",
        );
        let mut b = ChunkBacklog::new(&rates, DEFAULT_CAP);
        let mut spare = usize::MAX;
        for &(t, s, _) in &far {
            b.push(t, s, &mut spare);
        }
        assert!(b.finish().is_none());
    }

    /// Time [`ChunkBacklog`] against the reference on a capture (the benchmark's 8 rates):
    /// `BACKLOG_BENCH=FILE cargo test -p burstcore --release --lib chunk_backlog_bench --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn chunk_backlog_bench() {
        use crate::capture::{CaptureReader, ReadOptions};
        let Ok(path) = std::env::var("BACKLOG_BENCH") else {
            return;
        };
        let input = crate::input::open_path(path.as_ref()).expect("open");
        let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
        let mut packets = Vec::new();
        while let Some(p) = r.next_packet().expect("read") {
            packets.push((p.ts_ns.unwrap_or(0), u64::from(p.wire_len)));
        }
        let mean = 33_165_083_973f64;
        let rates: Vec<u64> = [1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
            .iter()
            .map(|m| (mean * m) as u64)
            .collect();
        // Half the capture, as one chunk of a two-thread scan sees it.
        packets.truncate(packets.len() / 2);
        let cpu = || {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
                .map_or(0.0, |ns| ns / 1e9)
        };
        let n = packets.len() as f64;
        let (mut new, mut old) = (f64::MAX, f64::MAX);
        let (mut a, mut b) = (None, None);
        for _ in 0..3 {
            let t0 = cpu();
            let mut budget = 1 << 20;
            let mut x = ChunkBacklog::new(&rates, DEFAULT_CAP);
            for &(t, s) in &packets {
                x.push(t, s, &mut budget);
            }
            a = x.finish();
            new = new.min(cpu() - t0);
            let t0 = cpu();
            let mut budget = 1 << 20;
            let mut y = Reference::new(&rates, DEFAULT_CAP);
            for &(t, s) in &packets {
                y.push(t, s, &mut budget);
            }
            b = y.finish();
            old = old.min(cpu() - t0);
        }
        assert_eq!(a, b);
        println!(
            "{n} packets, 8 rates: ChunkBacklog {:.2} ns/packet, reference {:.2} ns/packet",
            new * 1e9 / n,
            old * 1e9 / n
        );
    }
}
