//! The backlog of one time chunk, in a form that merges exactly with its neighbours (max-plus
//! algebra of the Lindley queue): what `engine::chunk` keeps per group and rate.

use super::{
    busy_len, dcap_of, longer, outlasts, ratio_to_f64, record, shift_of, Backlog, BacklogRow, By,
    GroupKey, Held, Lane, Lanes, Period, Scaled, BACKLOG_SCALE, NARROW_SIZE, SPAN_LIMIT,
};

mod simd;

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
    /// The chunk starts its group's packets: nothing is ever merged before it, so no queue is
    /// carried into it and S and D were not followed (see [`RateChunk::leading`]). It merges
    /// only with what follows it.
    leading: bool,
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
    /// A rate whose group's first packet is too large for u64 work (see [`ChunkQueue::first`]).
    fn new(rate: u64) -> Self {
        ChunkQueue {
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
        }
    }

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

    /// The state after the latest packet; `None` when a value left the exact range.
    fn finish(mut self) -> Option<RateChunk> {
        self.fold_segment()?;
        let s_end = self.d.checked_add(i128::try_from(self.q).ok()?)?;
        Some(RateChunk {
            rate: self.rate,
            q_end: self.q,
            open: self.busy_start,
            bmax: self.best_q,
            peak_ns: self.peak_ns,
            smax: self.smax,
            smax_ns: self.smax_ns,
            s_end,
            instants: self.instants,
            truncated: self.truncated,
            leading: false,
        })
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

/// One rate of [`ChunkBacklog`] while its queue stays below 2⁶³
/// ([`NARROW_LIMIT`](super::NARROW_LIMIT)) and the group spans less than 2⁶² ns
/// ([`SPAN_LIMIT`]): the loop of the sequential lanes (`Lane::run`), run over held packets one
/// rate at a time, plus what merging needs. Same results as [`ChunkQueue`], bit for bit.
///
/// S (see [`RateChunk`]) is D + Q within a busy segment, and D only falls, at empty instants, by
/// the service left over. So S passes its maximum exactly where the queue passes smax − D, which
/// the lane keeps in a u64 beside the queue: a comparison per packet, and an addition where the
/// queue empties. S itself, and D at a kept instant, are exact i128 values computed from the
/// group's running work (see [`Batch`]) only where they are needed.
#[derive(Debug, Clone)]
struct ChunkLane {
    rate: u64,
    /// floor(log2(rate)) and ⌈2⁶³ / rate⌉, as in `Lane`.
    shift: u32,
    dcap: u64,
    /// The group's first packet in the chunk: S and D count the service from it.
    first_ns: i64,
    q: u64,
    /// Start of the open busy period; meaningful only while `q` > 0.
    start_ns: i64,
    best_q: u64,
    peak_ns: i64,
    /// The longest busy period closed since the latest kept instant (0: none yet), and its
    /// start: the `best` that instant gets when the next one is kept.
    longest: u64,
    longest_start: i64,
    /// smax − D, D at the latest empty instant: the queue at which S passes its maximum. It is
    /// at least the queue (S ≤ smax), and grows only at empty instants, by the service left
    /// over, until S passes smax; so once past 2⁶³ (no u64 queue reaches it) it stays so, and
    /// u64::MAX stands for any such value. A capped service (see `Lane::dcap`) is at least 2⁶³:
    /// the capped sum is past 2⁶³ as the exact one is, so the cap changes nothing.
    need: u64,
    smax: i128,
    smax_ns: i64,
    truncated: bool,
    instants: Vec<EmptyInstant>,
    /// Instants kept at most.
    cap: usize,
}

/// Held packets as a lane sees them: their times and work, and the group's work before them
/// (exact, below 2⁹⁷).
#[derive(Clone, Copy)]
struct Batch<'a> {
    held: &'a [Held],
    before: u128,
}

impl Batch<'_> {
    /// Work up to the packet before `held[i]`: summed where asked, which is only where an
    /// instant is kept (at most the cap per rate) or a queue leaves u64. A prefix sum kept for
    /// every batch cost more: the rates near the mean rate keep a handful of instants in a
    /// chunk, but keep keeping.
    fn upto_before(&self, i: usize) -> u128 {
        self.held[..i]
            .iter()
            .fold(self.before, |w, h| w + u128::from(h.val))
    }
}

impl ChunkLane {
    /// A lane before the group's first packet, at `first_ns` (which it then takes like any).
    /// S is 0 before it, and that first packet's S is its work.
    fn new(rate: u64, first_ns: i64, cap: usize) -> Self {
        ChunkLane {
            rate,
            shift: shift_of(rate),
            dcap: dcap_of(rate),
            first_ns,
            q: 0,
            start_ns: first_ns,
            best_q: 0,
            peak_ns: first_ns,
            longest: 0,
            longest_start: first_ns,
            need: 0,
            smax: 0,
            smax_ns: first_ns,
            truncated: false,
            instants: vec![EmptyInstant::chunk_start(first_ns)],
            cap,
        }
    }

    /// W − r·(t − t₁) for the group's work `w` up to some packet and a time `t`: S at that
    /// packet (its own time), D at the next (the next one's time). Exact: W < 2⁹⁷ and
    /// r·(t − t₁) < 2¹²⁶.
    fn s_at(&self, w: u128, t: i64) -> i128 {
        w as i128 - i128::from(self.rate) * i128::from(t.wrapping_sub(self.first_ns))
    }

    /// Run the lane over the batch (its latest packet was at `last`), keeping new minima of D
    /// while the list is below its cap and `budget` lasts. `Err(i)`: the queue would not fit a
    /// u64 at `held[i]`; the lane is left as it was before that packet.
    fn run(&mut self, last: i64, batch: Batch, budget: &mut usize) -> Result<(), usize> {
        let mut from = 0;
        if !self.truncated {
            from = self.run_from::<true>(last, batch, 0, budget)?;
        }
        if from < batch.held.len() {
            let last = from.checked_sub(1).map_or(last, |j| batch.held[j].ts);
            self.run_from::<false>(last, batch, from, budget)?;
        }
        Ok(())
    }

    /// [`ChunkLane::run`] from `held[from]`. With `KEEP` (the list is not truncated) it stops
    /// where the list becomes truncated and returns where the rest starts; without, it skips
    /// that test, which is then always false.
    #[inline(never)]
    fn run_from<const KEEP: bool>(
        &mut self,
        mut last: i64,
        batch: Batch,
        from: usize,
        budget: &mut usize,
    ) -> Result<usize, usize> {
        let (rate, dcap, shift) = (self.rate, self.dcap, self.shift);
        let (mut q, mut start, mut best, mut peak) =
            (self.q, self.start_ns, self.best_q, self.peak_ns);
        let (mut longest, mut need) = (self.longest, self.need);
        let mut out = Ok(batch.held.len());
        let mut i = from;
        while let Some(h) = batch.held.get(i) {
            // Sorted input below SPAN_LIMIT: the wrapped difference is the exact one.
            let dt = h.ts.wrapping_sub(last) as u64;
            let served = u64::served(rate, dt, dcap);
            // Rare once the list is full: a busy period that may be the longest ends (as in
            // `Lane::run`), or, while instants are kept, the queue empties strictly before the
            // packet, which is where D reaches a new minimum (D falls by the service left over).
            let bound = u64::bound(last.wrapping_sub(start) as u64, q.drain_bound(shift));
            if (bound > longest && q.wrapping_sub(1) < served) || (KEEP && q < served) {
                let w = batch.upto_before(i);
                longest = self.empty_instant((q, start), (last, h.ts), served, w, longest, budget);
                if KEEP && self.truncated {
                    // Without it, the packet is taken by the loop that no longer keeps any.
                    self.longest = longest;
                    out = Ok(i);
                    break;
                }
            }
            // The queue left, and the service left over (0 unless the queue empties).
            let (rem, left) = (q.saturating_sub(served), served.saturating_sub(q));
            // A packet that overflows finds the queue busy: the branch above did not run for it.
            let Some(next) = u64::add(rem, h.val) else {
                out = Err(i);
                break;
            };
            start = if rem == 0 { h.ts } else { start };
            q = next;
            if q > best {
                (best, peak) = record(q, h.ts);
            }
            // S = D + Q within a busy segment, and D falls at each empty instant by the service
            // left over, so S passes its maximum exactly where Q passes smax − D (see `need`).
            need = need.saturating_add(left);
            if q > need {
                // A new maximum of S: Q passed the old one by q − need.
                self.smax += i128::from(q - need);
                self.smax_ns = h.ts;
                need = q;
            }
            last = h.ts;
            i += 1;
        }
        self.q = q;
        self.start_ns = start;
        self.best_q = best;
        self.peak_ns = peak;
        self.longest = longest;
        self.need = need;
        out
    }

    /// The packet at `ts` finds the queue `q` left by the one at `last` served (`q ≤ served`);
    /// `w` is the group's work before it. Close the busy period (the longest is kept, the
    /// earlier at equal lengths), and keep the instant if D reaches a new minimum
    /// (`q < served`). Returns the longest period since the latest kept instant.
    #[cold]
    #[inline(never)]
    fn empty_instant(
        &mut self,
        (q, start): (u64, i64),
        (last, ts): (i64, i64),
        served: u64,
        w: u128,
        mut longest: u64,
        budget: &mut usize,
    ) -> u64 {
        if q > 0 && outlasts(start, last, u128::from(q), self.rate, longest) {
            // Never negative.
            let len = busy_len(start, last, u128::from(q), self.rate) as u64;
            if len > longest {
                longest = len;
                self.longest_start = start;
            }
        }
        if !self.truncated && q < served {
            if self.instants.len() < self.cap && *budget > 0 {
                *budget -= 1;
                if let Some(e) = self.instants.last_mut() {
                    e.best = period(longest, self.longest_start);
                }
                longest = 0;
                self.instants.push(EmptyInstant {
                    d: self.s_at(w, ts),
                    prev_ns: last,
                    prev_q: u128::from(q),
                    prev_s: self.s_at(w, last),
                    best: None,
                });
            } else {
                self.truncated = true;
            }
        }
        longest
    }

    /// The list with its latest instant's period filled in, for the state after the lane.
    fn settle(&mut self) -> Vec<EmptyInstant> {
        let mut instants = std::mem::take(&mut self.instants);
        if let Some(e) = instants.last_mut() {
            e.best = period(self.longest, self.longest_start);
        }
        instants
    }

    /// The state after the latest packet, at `last_ns`, with the group's work `w` up to it.
    fn finish(mut self, last_ns: i64, w: u128) -> RateChunk {
        RateChunk {
            rate: self.rate,
            q_end: u128::from(self.q),
            open: (self.q > 0).then_some(self.start_ns),
            bmax: u128::from(self.best_q),
            peak_ns: self.peak_ns,
            smax: self.smax,
            smax_ns: self.smax_ns,
            s_end: self.s_at(w, last_ns),
            instants: self.settle(),
            truncated: self.truncated,
            leading: false,
        }
    }

    /// The same state for the u128 recursion, after the packet at `last_ns` with the group's
    /// work `w` up to it. Its segment starts over at that packet: the maxima before are in
    /// `smax` and `best_q` already.
    fn widen(&mut self, last_ns: i64, w: u128) -> ChunkQueue {
        let q = u128::from(self.q);
        ChunkQueue {
            rate: self.rate,
            q,
            last_ns,
            // S = D + Q within a segment.
            d: self.s_at(w, last_ns) - q as i128,
            seg_best: q,
            seg_ns: last_ns,
            best_q: u128::from(self.best_q),
            peak_ns: self.peak_ns,
            smax: self.smax,
            smax_ns: self.smax_ns,
            busy_start: (self.q > 0).then_some(self.start_ns),
            instants: self.settle(),
            truncated: self.truncated,
        }
    }
}

/// A busy period of `len` ns from `start`; none for 0 (a period lasts at least 1 ns).
fn period(len: u64, start: i64) -> Option<Period> {
    (len > 0).then_some((len as i64, start))
}

/// One rate of [`ChunkBacklog`]: u64 while its queue fits, then u128 for good.
#[derive(Debug, Clone)]
enum Rate {
    Narrow(ChunkLane),
    Wide(ChunkQueue),
}

/// [`Backlog`](super::Backlog) for a time chunk: the same queue, plus what merging with the
/// chunks before and after needs (see [`RateChunk`]). Like it, packets are held and each rate
/// runs over them in turn ([`ChunkLane`]), in u64 until a packet's work, a queue or the group's
/// span leaves that range, then in u128 ([`ChunkQueue`]); the results are the same bit for bit.
///
/// The groups of a chunk's groupings by key take kept instants from one shared budget in the
/// order their batches run, not in packet order: where the budget runs out, which instants were
/// kept depends on the batching, but never the results, since a merge that needs instants not
/// kept refuses (and the scan runs sequentially). The budget only bounds memory. Holding one
/// packet at a time would keep packet order, at 2× the cost per packet of the whole loop.
#[derive(Debug, Clone)]
pub(crate) struct ChunkBacklog {
    rates_bps: Vec<u64>,
    /// Empty until the first packet.
    rates: Vec<Rate>,
    /// Packets the rates have not run over: their work (while the group is in the u64 range).
    held: Vec<Held>,
    batch: usize,
    /// The group's work up to the latest packet the rates have run over (exact: below 2⁹⁷).
    work: u128,
    /// The latest packet the rates have run over, and the latest packet pushed.
    last_ns: i64,
    latest_ns: i64,
    /// SPAN_LIMIT after the first packet while packets are held, else i64::MIN.
    narrow_end: i64,
    seen: bool,
    /// False once a value left the range where merging is exact (then the chunk cannot merge).
    exact: bool,
    cap: usize,
    /// Eight u64 lanes at a time where the CPU can (see `simd`); off only in tests of the
    /// lanes one by one.
    simd: bool,
}

impl ChunkBacklog {
    /// `rates_bps` positive; `cap` (≥ 1) bounds the empty instants kept per rate; `batch` (≥ 1)
    /// packets are held before the rates run.
    pub(crate) fn new(rates_bps: &[u64], cap: usize, batch: usize) -> Self {
        ChunkBacklog {
            rates_bps: rates_bps.to_vec(),
            rates: Vec::new(),
            held: Vec::new(),
            batch: batch.max(1),
            work: 0,
            last_ns: 0,
            latest_ns: 0,
            narrow_end: i64::MIN,
            seen: false,
            exact: true,
            cap: cap.max(1),
            simd: true,
        }
    }

    /// Add a packet; packets must come in timestamp order. `budget`: empty instants that may
    /// still be kept, shared by every group of the chunk (each kept one takes one).
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64, budget: &mut usize) {
        // In order, and less than SPAN_LIMIT after the first packet (`narrow_end` is i64::MIN
        // unless packets are held).
        if size <= NARROW_SIZE && ts >= self.latest_ns && ts < self.narrow_end {
            self.hold(ts, size * BACKLOG_SCALE, budget);
        } else if !self.rates_bps.is_empty() {
            self.push_other(ts, size, budget);
        }
    }

    #[inline(always)]
    fn hold(&mut self, ts: i64, work: u64, budget: &mut usize) {
        self.held.push(Held { ts, val: work });
        self.latest_ns = ts;
        if self.held.len() >= self.batch {
            self.catch_up(budget);
        }
    }

    /// The first packet, a packet outside the u64 range, or any packet once the rates are u128.
    #[cold]
    #[inline(never)]
    fn push_other(&mut self, ts: i64, size: u64, budget: &mut usize) {
        let work = u128::from(size) * u128::from(BACKLOG_SCALE);
        if !self.seen {
            self.seen = true;
            self.last_ns = ts;
            self.latest_ns = ts;
            let cap = self.cap;
            if size <= NARROW_SIZE {
                self.narrow_end = ts.saturating_add(SPAN_LIMIT as i64);
                let lanes = self.rates_bps.iter().map(|&r| ChunkLane::new(r, ts, cap));
                self.rates = lanes.map(Rate::Narrow).collect();
                self.hold(ts, size * BACKLOG_SCALE, budget);
            } else {
                let queues = self.rates_bps.iter().map(|&r| {
                    let mut q = ChunkQueue::new(r);
                    q.first(ts, work);
                    Rate::Wide(q)
                });
                self.rates = queues.collect();
            }
            return;
        }
        if self.narrow_end != i64::MIN {
            self.widen(budget);
        }
        // Every rate is u128 now, and nothing is held.
        for rate in &mut self.rates {
            if let Rate::Wide(q) = rate {
                self.exact &= q.push(ts, work, self.cap, budget).is_some();
            }
        }
        self.last_ns = ts;
        self.latest_ns = ts;
    }

    /// Move every rate to u128 after the held packets (the packet that needs it comes next).
    #[cold]
    #[inline(never)]
    fn widen(&mut self, budget: &mut usize) {
        self.catch_up(budget);
        let (last, work) = (self.last_ns, self.work);
        for rate in &mut self.rates {
            if let Rate::Narrow(lane) = rate {
                *rate = Rate::Wide(lane.widen(last, work));
            }
        }
        self.narrow_end = i64::MIN;
    }

    /// Run every rate over the held packets: u64 lanes eight at a time where the CPU can (see
    /// `simd`), the others one at a time.
    fn catch_up(&mut self, budget: &mut usize) {
        let Some(latest) = self.held.last().map(|h| h.ts) else {
            return;
        };
        let (last, cap) = (self.last_ns, self.cap);
        let batch = Batch {
            held: &self.held,
            before: self.work,
        };
        let mut exact = self.exact;
        for block in self.rates.chunks_mut(simd::width()) {
            let ran = if self.simd {
                simd::run(block, last, batch, budget)
            } else {
                None
            };
            match ran {
                Some(Ok(())) => {}
                // Every lane of the block stopped before packet i.
                Some(Err(i)) => {
                    for rate in block {
                        exact &= widen_at(rate, i, last, batch, cap, budget);
                    }
                }
                None => {
                    for rate in block {
                        exact &= run_one(rate, last, batch, cap, budget);
                    }
                }
            }
        }
        self.exact = exact;
        self.last_ns = latest;
        self.work = batch.upto_before(batch.held.len());
        self.held.clear();
    }

    /// The mergeable state per rate; `None` when some value left the exact range (or no packet).
    pub(crate) fn finish(mut self, budget: &mut usize) -> Option<Vec<RateChunk>> {
        self.catch_up(budget);
        if !self.exact || !self.seen {
            return None;
        }
        let (last, work) = (self.last_ns, self.work);
        self.rates
            .into_iter()
            .map(|rate| match rate {
                Rate::Narrow(lane) => Some(lane.finish(last, work)),
                Rate::Wide(queue) => queue.finish(),
            })
            .collect()
    }
}

/// What a chunk keeps of a group's backlog. The chunk that starts the trace has nothing merged
/// before it, so no queue is ever carried into it: the sequential lanes serve, without S, D and
/// the empty instants that only a carried queue reads ([`ChunkBacklog`] cost 1.7–2.7× as much a
/// packet in `chunk_backlog_bench`). Its state then merges only with what follows it.
#[derive(Debug, Clone)]
pub(crate) enum ChunkRates {
    Mergeable(ChunkBacklog),
    Leading(Backlog),
}

impl ChunkRates {
    /// See [`ChunkBacklog::new`]; `leading` for a chunk that nothing is merged before.
    pub(crate) fn new(rates_bps: &[u64], cap: usize, batch: usize, leading: bool) -> Self {
        if leading {
            ChunkRates::Leading(Backlog::with_batch(rates_bps, batch))
        } else {
            ChunkRates::Mergeable(ChunkBacklog::new(rates_bps, cap, batch))
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64, budget: &mut usize) {
        match self {
            ChunkRates::Mergeable(b) => b.push(ts, size, budget),
            ChunkRates::Leading(b) => b.push(ts, size),
        }
    }

    /// The mergeable state per rate; `None` when some value left the exact range (or no packet).
    pub(crate) fn finish(self, budget: &mut usize) -> Option<Vec<RateChunk>> {
        match self {
            ChunkRates::Mergeable(b) => b.finish(budget),
            ChunkRates::Leading(b) => b.into_leading(),
        }
    }
}

impl Backlog {
    /// The state of a chunk that starts its group's packets ([`RateChunk::leading`]); `None`
    /// before any packet, as [`ChunkBacklog::finish`].
    fn into_leading(mut self) -> Option<Vec<RateChunk>> {
        if !self.seen {
            return None;
        }
        self.catch_up();
        let first = self.first_ns;
        Some(match &self.lanes {
            Lanes::Narrow(lanes) => lanes.iter().map(|l| l.leading(first)).collect(),
            Lanes::Wide(lanes) => lanes.iter().map(|l| l.leading(first)).collect(),
        })
    }
}

impl<Q: Scaled> Lane<Q> {
    /// This lane's [`RateChunk::leading`], for a chunk whose first packet was at `first_ns`.
    fn leading(&self, first_ns: i64) -> RateChunk {
        RateChunk::leading(
            self.rate,
            first_ns,
            (self.q.wide(), self.start_ns),
            (self.best_q.wide(), self.peak_ns),
            period(self.longest_ns.unsigned_abs(), self.longest_start_ns),
        )
    }
}

/// One rate over the held packets; false once a value left the exact range.
fn run_one(rate: &mut Rate, last: i64, batch: Batch, cap: usize, budget: &mut usize) -> bool {
    match rate {
        Rate::Narrow(lane) => match lane.run(last, batch, budget) {
            Ok(()) => true,
            Err(i) => widen_at(rate, i, last, batch, cap, budget),
        },
        Rate::Wide(queue) => batch.held.iter().fold(true, |exact, h| {
            exact & queue.push(h.ts, u128::from(h.val), cap, budget).is_some()
        }),
    }
}

/// A u64 lane whose queue outgrew u64 at `held[i]` (it ran up to there): the rest in u128.
fn widen_at(
    rate: &mut Rate,
    i: usize,
    last: i64,
    batch: Batch,
    cap: usize,
    budget: &mut usize,
) -> bool {
    let Rate::Narrow(lane) = rate else {
        return true;
    };
    let held = batch.held;
    let before = i.checked_sub(1).map_or(last, |j| held[j].ts);
    let mut queue = lane.widen(before, batch.upto_before(i));
    let mut exact = true;
    for h in &held[i..] {
        exact &= queue.push(h.ts, u128::from(h.val), cap, budget).is_some();
    }
    *rate = Rate::Wide(queue);
    exact
}

impl RateChunk {
    /// The state of a chunk that starts its group's packets, from what the sequential lanes
    /// keep: the queue after its last packet (scaled) and the start of the busy period still
    /// open, B_max and the earliest packet reaching it, and the longest busy period closed
    /// within it. No queue is ever carried into it, so S and D never matter: they stay 0, and
    /// the one instant, the chunk's first packet, holds the longest period, where `row` and
    /// `merge` look for it.
    fn leading(
        rate: u64,
        first_ns: i64,
        (q_end, start_ns): (u128, i64),
        (bmax, peak_ns): (u128, i64),
        longest: Option<Period>,
    ) -> Self {
        RateChunk {
            rate,
            q_end,
            open: (q_end > 0).then_some(start_ns),
            bmax,
            peak_ns,
            smax: 0,
            smax_ns: first_ns,
            s_end: 0,
            instants: vec![EmptyInstant {
                best: longest,
                ..EmptyInstant::chunk_start(first_ns)
            }],
            truncated: false,
            leading: true,
        }
    }

    /// Empty instants held (for a merge with what comes before, or their longest periods).
    #[cfg(test)]
    pub(crate) fn kept_instants(&self) -> usize {
        self.instants.len()
    }

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
        // Something before a leading chunk would carry a queue into it, which it cannot take.
        if a.rate != b.rate || b_first < a_last || b.leading {
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
        if let (Some(k), true) = (from, a.leading) {
            // Nothing merges before a leading state (`b.leading` refuses), so its instants are
            // only ever read for their longest period: fold `b`'s into its one instant, as
            // `row` would. Copying them all made the merge of two chunks hold every kept
            // instant twice (the copies and `b`'s lists not yet freed): 8 rates by 16
            // interfaces, 84 of a two-thread scan's 133 MB at its peak.
            if let Some(last) = instants.last_mut() {
                last.best = b.instants[k..]
                    .iter()
                    .fold(last.best, |x, e| longer(x, e.best));
            }
        } else if let Some(k) = from {
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
            leading: a.leading,
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
                    leading: false,
                });
            }
            Some(out)
        }
    }

    /// Feed `groups` backlogs (and their references) the packets, each to one group, sharing a
    /// budget; compare the budget after every packet (one packet held at a time) or at the end
    /// (a batch held: then the budget must not run out, since the order it goes in differs),
    /// and finish() at `reads` and at the end.
    #[allow(clippy::too_many_arguments)]
    fn check(
        rates: &[u64],
        cap: usize,
        budget: usize,
        batch: usize,
        groups: usize,
        packets: &[(i64, u64, usize)],
        reads: &[usize],
        simd: bool,
        ctx: &str,
    ) {
        assert!(batch == 1 || budget == usize::MAX, "{ctx}");
        let mut got: Vec<ChunkBacklog> = (0..groups)
            .map(|_| ChunkBacklog {
                simd,
                ..ChunkBacklog::new(rates, cap, batch)
            })
            .collect();
        let mut want: Vec<Reference> = (0..groups).map(|_| Reference::new(rates, cap)).collect();
        let (mut b_got, mut b_want) = (budget, budget);
        for (i, &(t, s, g)) in packets.iter().enumerate() {
            if reads.contains(&i) {
                assert_eq!(
                    got[g].clone().finish(&mut b_got.clone()),
                    want[g].clone().finish(),
                    "{ctx}: group {g} before packet {i}"
                );
            }
            got[g].push(t, s, &mut b_got);
            want[g].push(t, s, &mut b_want);
            if batch == 1 {
                assert_eq!(b_got, b_want, "{ctx}: budget after packet {i}");
            }
        }
        for (g, (a, b)) in got.into_iter().zip(want).enumerate() {
            assert_eq!(a.finish(&mut b_got), b.finish(), "{ctx}: group {g}");
        }
        assert_eq!(b_got, b_want, "{ctx}: budget at the end");
    }

    #[test]
    fn u64_rates_match_the_u128_recursion() {
        let mut rng = Rng(0xC4A2);
        let (mut narrow_end, mut widened, mut refused) = (0, 0, 0);
        for round in 0..3000 {
            let n = 1 + rng.below(if round % 4 == 0 { 2000 } else { 200 }) as usize;
            let style = rng.below(8);
            let mut rates = rates(&mut rng, true);
            if round % 8 == 0 {
                // More rates than one vector holds: blocks of eight lanes and a partial one.
                while rates.len() < 9 {
                    rates.extend(super::super::test_traces::rates(&mut rng, true));
                }
            }
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
            let batch = match rng.below(4) {
                _ if budget != usize::MAX => 1,
                0 => 1,
                1 => 2 + rng.below(8) as usize,
                _ => super::super::BATCH,
            };
            // The u64 lanes in the widest vectors this CPU has, in AVX2 ones (where it has
            // them), or one by one.
            let mode = rng.below(3);
            let simd = mode != 0;
            let run = || {
                check(
                &rates,
                cap,
                budget,
                batch,
                groups,
                &packets,
                &reads,
                simd,
                &format!("round {round}, style {style}, n {n}, cap {cap}, budget {budget}, batch {batch}, simd mode {mode}, rates {rates:?}"),
            )
            };
            if mode == 2 {
                super::super::simd::without_avx512(run);
            } else {
                run();
            }
            // How often each path was taken, over the first group.
            let mut b = ChunkBacklog::new(&rates, cap, batch);
            let mut spare = usize::MAX;
            for &(t, s, g) in &packets {
                if g == 0 {
                    b.push(t, s, &mut spare);
                }
            }
            b.catch_up(&mut spare);
            let narrow = b.rates.iter().all(|r| matches!(r, Rate::Narrow(_)));
            match (narrow, b.seen, b.finish(&mut spare).is_some()) {
                (true, true, _) => narrow_end += 1,
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
        let five = [BACKLOG_SCALE, 1, u64::MAX, 1_000_000_000, 4 * BACKLOG_SCALE];
        // Also more rates than one vector holds, so that one block of eight lanes moves to u128
        // while the other stays, and a block mixes both.
        let twelve: Vec<u64> = (0..12).map(|i| 1u64 << (i * 5)).rev().collect();
        for rates in [&five[..], &twelve[..]] {
            queue_outgrows_u64(rates);
        }
    }

    fn queue_outgrows_u64(rates: &[u64]) {
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
                // One packet held at a time, or the switch part-way through a batch.
                for (batch, simd) in [1, 5, super::super::BATCH]
                    .into_iter()
                    .flat_map(|b| [(b, true), (b, false)])
                {
                    check(
                        rates,
                        cap,
                        usize::MAX,
                        batch,
                        1,
                        &packets,
                        &[at + 3, at + 39],
                        simd,
                        &format!("at {at}, cap {cap}, batch {batch}, simd {simd}"),
                    );
                }
            }
        }
    }

    #[test]
    fn a_leading_chunk_merges_only_with_what_follows() {
        let rates = [1_000_000_000u64, 40_000_000_000];
        let chunk = |leading, from: i64| {
            let mut b = ChunkRates::new(&rates, DEFAULT_CAP, super::super::BATCH, leading);
            let mut budget = 1 << 20;
            for i in 0..10 {
                b.push(from + 100 * i, 1500, &mut budget);
            }
            b.finish(&mut budget).expect("finish")
        };
        let (lead, next) = (chunk(true, 0), chunk(false, 1_000));
        for (a, b) in lead.iter().zip(&next) {
            let merged = RateChunk::merge(a.clone(), b, 900, 1_000, DEFAULT_CAP).expect("merge");
            assert!(merged.leading, "a leading chunk's merge leads");
        }
        // Behind a chunk, a leading one would have a queue carried into it.
        let (before, lead) = (chunk(false, 0), chunk(true, 1_000));
        for (a, b) in before.into_iter().zip(&lead) {
            assert!(RateChunk::merge(a, b, 900, 1_000, DEFAULT_CAP).is_none());
        }
    }

    #[test]
    fn leaving_the_exact_range_refuses() {
        // The service over the whole i64 range at the fastest rate is about 2¹²⁸: D leaves the
        // i128 range (after the rates moved to u128, as the span passes 2⁶²).
        let rates = [1 << 20, u64::MAX];
        let far = vec![(i64::MIN, 1, 0), (0, 1, 0), (i64::MAX, 1, 0)];
        for simd in [true, false] {
            check(
                &rates,
                DEFAULT_CAP,
                usize::MAX,
                4,
                1,
                &far,
                &[1, 2],
                simd,
                "far apart",
            );
        }
        let mut b = ChunkBacklog::new(&rates, DEFAULT_CAP, 1);
        let mut spare = usize::MAX;
        for &(t, s, _) in &far {
            b.push(t, s, &mut spare);
        }
        assert!(b.finish(&mut spare).is_none());
    }

    /// Time [`ChunkBacklog`] against the reference on a capture (the benchmark's 8 rates):
    /// `BACKLOG_BENCH=FILE cargo test -p burstcore --release --lib chunk_backlog_bench --
    /// --ignored --nocapture`. With `BACKLOG_BENCH_AVX2=1` every lane runs as on a CPU without
    /// AVX-512 (the AVX2 lanes, which valgrind runs too); the variable is read here, once.
    #[test]
    #[ignore]
    fn chunk_backlog_bench() {
        let Some(packets) = crate::bench_support::packets_of("BACKLOG_BENCH") else {
            return;
        };
        if std::env::var("BACKLOG_BENCH_AVX2").is_ok_and(|v| v == "1") {
            super::super::simd::without_avx512(|| time_chunk_backlog(packets, "AVX2"));
        } else {
            time_chunk_backlog(packets, "as this CPU picks");
        }
    }

    /// [`chunk_backlog_bench`]'s timings, the lanes being `lanes`.
    fn time_chunk_backlog(mut packets: Vec<(i64, u64)>, lanes: &str) {
        let mean = 33_165_083_973f64;
        let rates: Vec<u64> = [1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
            .iter()
            .map(|m| (mean * m) as u64)
            .collect();
        // Half the capture, as one chunk of a two-thread scan sees it.
        packets.truncate(packets.len() / 2);
        let cpu = crate::bench_support::thread_cpu_seconds;
        let n = packets.len() as f64;
        let (mut new, mut old, mut seq) = (f64::MAX, f64::MAX, f64::MAX);
        let (mut a, mut b) = (None, None);
        for _ in 0..3 {
            let t0 = cpu();
            let mut budget = 1 << 20;
            let mut x = ChunkBacklog::new(&rates, DEFAULT_CAP, super::super::BATCH);
            for &(t, s) in &packets {
                x.push(t, s, &mut budget);
            }
            a = x.finish(&mut budget);
            new = new.min(cpu() - t0);
            let t0 = cpu();
            let mut budget = 1 << 20;
            let mut y = Reference::new(&rates, DEFAULT_CAP);
            for &(t, s) in &packets {
                y.push(t, s, &mut budget);
            }
            b = y.finish();
            old = old.min(cpu() - t0);
            let t0 = cpu();
            let mut z = super::super::Backlog::new(&rates);
            for &(t, s) in &packets {
                z.push(t, s);
            }
            let mut rows = Vec::new();
            z.rows(By::All, GroupKey::All, &mut rows);
            seq = seq.min(cpu() - t0);
        }
        assert_eq!(a, b);
        println!(
            "{n} packets, 8 rates, lanes {lanes}: ChunkBacklog {:.2} ns/packet, reference {:.2}, sequential Backlog {:.2}",
            new * 1e9 / n,
            old * 1e9 / n,
            seq * 1e9 / n
        );
    }
}
