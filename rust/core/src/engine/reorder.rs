//! The bounded reorder buffer: almost-sorted arrivals in, sorted arrivals out.
//!
//! A packet may arrive up to `horizon` ns earlier than the latest timestamp seen so far; later
//! than that it is late (an error, or dropped and counted). Every packet that is not late has a
//! timestamp ≥ latest − horizon, so a buffered packet can be released as soon as its timestamp is
//! ≤ latest − horizon: nothing that can still come sorts before it. Equal timestamps keep arrival
//! order (the sort key is (timestamp, arrival number)).
//!
//! Most captures are sorted, so packets that arrive in order go to the back of a FIFO, which stays
//! sorted by construction; only packets that arrive out of order go to a binary heap. Release takes
//! the smaller of the two fronts. Memory is bounded by the packets inside the horizon (and one
//! batch of [`RELEASE_EVERY`]).
//!
//! Every packet passes through here, so what is buffered is generic: the scanner buffers only
//! timestamp, size and interface when no grouping needs headers (a fifth of a full [`Arrival`]).

use super::{Arrival, By, GroupKey, LatePolicy, ReorderStats};
use crate::error::{Error, ErrorKind, Limit, Result};
use crate::printable::{duration_text, iso_ns};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// What the buffer holds: anything with a timestamp.
pub(crate) trait Timed: Copy {
    fn ts_ns(&self) -> i64;
}

impl Timed for Arrival {
    #[inline(always)]
    fn ts_ns(&self) -> i64 {
        self.ts_ns
    }
}

/// Where released packets go: one at a time, or a run of consecutive ones in order. A run lets
/// the destination take a FIFO's worth of sorted packets in one call, each metric in a loop of
/// its own, instead of every metric at every packet. After an error the packets of its run
/// count as released: a scan that fails is over.
pub(crate) trait Drain<T> {
    /// Whether runs are worth waiting for: then even a buffer with no horizon holds sorted
    /// packets for a batch (see [`RELEASE_EVERY`]) instead of passing each on at once.
    const RUNS: bool = false;

    fn one(&mut self, a: &T) -> Result<()>;

    fn run(&mut self, run: &[T]) -> Result<()> {
        run.iter().try_for_each(|a| self.one(a))
    }
}

impl<T, F: FnMut(&T) -> Result<()>> Drain<T> for F {
    #[inline(always)]
    fn one(&mut self, a: &T) -> Result<()> {
        self(a)
    }
}

/// A packet that arrived out of order, keyed by (timestamp, arrival order among such packets).
///
/// The FIFO's packets need no such number: every packet that enters the FIFO after an
/// out-of-order one has a later timestamp (it is at least the latest, which the out-of-order one
/// is not), so an out-of-order packet can only tie with FIFO packets that arrived before it, and
/// a tie goes to the FIFO. The FIFO thus stays a plain queue of packets, as small as they are.
#[derive(Debug, Clone, Copy)]
struct Entry<T> {
    seq: u64,
    arrival: T,
}

impl<T: Timed> Entry<T> {
    fn key(&self) -> (i64, u64) {
        (self.arrival.ts_ns(), self.seq)
    }
}

impl<T: Timed> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<T: Timed> Eq for Entry<T> {}
impl<T: Timed> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Timed> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

#[derive(Debug)]
pub(crate) struct Reorder<T> {
    horizon: i64,
    late: LatePolicy,
    /// Most packets left waiting after a release (see [`MAX_HELD`]).
    max_held: usize,
    latest: Option<i64>,
    /// Out-of-order packets so far (their tie-breaker).
    seq: u64,
    in_order: VecDeque<T>,
    out_of_order: BinaryHeap<Reverse<Entry<T>>>,
    /// In-order packets pushed since the FIFO was last released (see [`RELEASE_EVERY`]).
    unreleased: u32,
    stats: ReorderStats,
}

/// While the input is sorted, the FIFO is released every this many packets rather than after
/// each one. Releasing later than possible changes nothing but when the groupings see a packet
/// (the order is the same), and it turns the per-packet look at the FIFO's front, a load from
/// a horizon's worth of packets back, into one search per batch.
pub(crate) const RELEASE_EVERY: u32 = 1024;

/// Most packets a reorder buffer may leave waiting after a release: packets within the horizon
/// of the latest one. A real capture holds a few hundred thousand in a 10 ms horizon (at 100
/// Gbit/s of small frames, 1.5 M); a damaged or forged one can put millions at one instant,
/// all of which would wait, and a 200 kB zstd file had held gigabytes until the allocation
/// failed and the process aborted. Past this, the scan stops with a `LimitExceeded` error
/// ([`too_many_waiting`]). 2²³ packets are 128 MB of (timestamp, size) and 1 GB of whole
/// arrivals.
pub const MAX_HELD: usize = 1 << 23;

/// What each of `chunks` chunks of one scan may hold ([`crate::engine::chunk::ChunkScanner::holding_at_most`]),
/// so that a scan by chunks passes only where the sequential scan would: the packets waiting in
/// the sequential buffer after a release are, in chunks merged in time order, among those
/// waiting in the chunks' own buffers at their latest releases (plus fewer than
/// [`RELEASE_EVERY`] pushed since), so no chunk over its share means the sequential scan under
/// [`MAX_HELD`]. A chunk over its share gives up, and the scan is read sequentially, which
/// tells exactly.
pub(crate) fn chunk_share(chunks: usize) -> usize {
    (MAX_HELD / chunks.max(1)).saturating_sub(RELEASE_EVERY as usize)
}

impl<T: Timed> Reorder<T> {
    /// `horizon` must be ≥ 0 (the scanner ensures it).
    pub(crate) fn new(horizon: i64, late: LatePolicy) -> Self {
        Reorder {
            horizon,
            late,
            max_held: MAX_HELD,
            latest: None,
            seq: 0,
            in_order: VecDeque::new(),
            out_of_order: BinaryHeap::new(),
            unreleased: 0,
            stats: ReorderStats::default(),
        }
    }

    /// The buffer with at most `max_held` packets waiting after a release instead of
    /// [`MAX_HELD`] (a chunk's share, see `chunked`).
    pub(crate) fn holding_at_most(mut self, max_held: usize) -> Self {
        self.max_held = max_held;
        self
    }

    pub(crate) fn stats(&self) -> &ReorderStats {
        &self.stats
    }

    /// Take one arrival and hand every packet that can no longer be overtaken to `sink`, in order.
    pub(crate) fn push<D: Drain<T>>(&mut self, a: &T, mut sink: D) -> Result<()> {
        let ts = a.ts_ns();
        match self.latest {
            Some(latest) if ts < latest => {
                let lateness = latest.abs_diff(ts);
                let lateness_ns = i64::try_from(lateness).unwrap_or(i64::MAX);
                self.stats.max_lateness_ns = self.stats.max_lateness_ns.max(lateness_ns);
                if lateness > self.horizon.unsigned_abs() {
                    return self.late_packet(ts, latest, lateness);
                }
                self.stats.reordered += 1;
                self.out_of_order.push(Reverse(Entry {
                    seq: self.seq,
                    arrival: *a,
                }));
                self.seq = self.seq.wrapping_add(1);
            }
            _ => {
                self.latest = Some(ts);
                if !D::RUNS
                    && self.horizon == 0
                    && self.in_order.is_empty()
                    && self.out_of_order.is_empty()
                {
                    // Strictly sorted input with no horizon: nothing to wait for.
                    return sink.one(a);
                }
                self.in_order.push_back(*a);
            }
        }
        if !release_due(&mut self.unreleased, self.out_of_order.is_empty()) {
            return Ok(());
        }
        let latest = self.latest.unwrap_or(ts);
        self.release(latest.saturating_sub(self.horizon), &mut sink)
    }

    /// Release everything left, in order.
    pub(crate) fn flush(&mut self, mut sink: impl Drain<T>) -> Result<()> {
        self.release(i64::MAX, &mut sink)
    }

    fn late_packet(&mut self, ts: i64, latest: i64, lateness: u64) -> Result<()> {
        match self.late {
            LatePolicy::Drop => {
                self.stats.dropped_late += 1;
                Ok(())
            }
            LatePolicy::Error => Err(late_error(ts, latest, lateness, self.horizon)),
        }
    }

    /// Hand over, in (timestamp, arrival) order, every buffered packet with timestamp ≤ `bound`;
    /// then more than `max_held` left waiting is an error.
    fn release(&mut self, bound: i64, sink: &mut impl Drain<T>) -> Result<()> {
        self.release_upto(bound, sink)?;
        let held = self.in_order.len() + self.out_of_order.len();
        if held > self.max_held {
            let latest = self.latest.unwrap_or(bound);
            return Err(too_many_waiting(self.max_held, self.horizon, latest));
        }
        // Room for what can come before the next release, by reservations that fail (the
        // allocator's refusal inside a push would abort the process): at most RELEASE_EVERY
        // packets in order, and one out of order, which releases at once. Once a batch, and
        // amortised: the pushes themselves stay as they were.
        let room = self.in_order.try_reserve(RELEASE_EVERY as usize).is_ok()
            && self.out_of_order.try_reserve(1).is_ok();
        if !room {
            let latest = self.latest.unwrap_or(bound);
            return Err(no_memory_to_hold(held, self.horizon, latest));
        }
        Ok(())
    }

    fn release_upto(&mut self, bound: i64, sink: &mut impl Drain<T>) -> Result<()> {
        if self.out_of_order.is_empty() {
            // Sorted input, the common case: only the FIFO to look at, and it is sorted.
            let (front, back) = self.in_order.as_slices();
            let in_front = front.partition_point(|a| a.ts_ns() <= bound);
            let in_back = if in_front == front.len() {
                back.partition_point(|a| a.ts_ns() <= bound)
            } else {
                0
            };
            let outcome = sink
                .run(&front[..in_front])
                .and_then(|()| sink.run(&back[..in_back]));
            self.in_order.drain(..in_front + in_back);
            return outcome;
        }
        loop {
            // Ties go to the FIFO, whose packet arrived first (see `Entry`).
            let from_heap = match (self.in_order.front(), self.out_of_order.peek()) {
                (Some(f), Some(Reverse(h))) => h.arrival.ts_ns() < f.ts_ns(),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => return Ok(()),
            };
            let next = if from_heap {
                match self.out_of_order.peek() {
                    Some(Reverse(h)) if h.arrival.ts_ns() <= bound => {
                        self.out_of_order.pop().map(|Reverse(e)| e.arrival)
                    }
                    _ => None,
                }
            } else {
                match self.in_order.front() {
                    Some(f) if f.ts_ns() <= bound => self.in_order.pop_front(),
                    _ => None,
                }
            };
            match next {
                Some(a) => sink.one(&a)?,
                None => return Ok(()),
            }
        }
    }
}

/// After a packet that is not late went into a buffer: whether to release now. While only
/// in-order packets wait, every [`RELEASE_EVERY`] pushes (counted in `unreleased`), else at once.
/// A worker's buffer of places (`parallel::in_place`) decides here too, so that its decisions
/// stay a scanner's own.
#[inline]
pub(crate) fn release_due(unreleased: &mut u32, in_order_only: bool) -> bool {
    if in_order_only {
        *unreleased += 1;
        if *unreleased < RELEASE_EVERY {
            return false;
        }
    }
    *unreleased = 0;
    true
}

/// The error for more than `max_held` packets waiting within `horizon` of the latest one, at
/// `latest`: after a release, so the count is that of the packets within the horizon, whenever
/// the buffer releases (a scan's threads make the same decisions, see `parallel::in_place`).
pub(crate) fn too_many_waiting(max_held: usize, horizon: i64, latest: i64) -> Error {
    Error::limit_exceeded(
        Limit::HeldPackets,
        format!(
            "more than {max_held} packets within the reorder horizon ({horizon} ns) of the latest, \
             at timestamp {latest} ns: ordering them would hold them all in memory. A capture \
             this dense has damaged timestamps (many packets at one instant) or a horizon far \
             longer than its disorder: lower reorder_horizon (0 for a capture written in order)"
        ),
    )
}

/// The error for a buffer whose memory for more packets, beside the `held` ones within
/// `horizon` of the latest (at `latest`), cannot be had.
#[cold]
fn no_memory_to_hold(held: usize, horizon: i64, latest: i64) -> Error {
    Error::limit_exceeded(
        Limit::HeldPackets,
        format!(
            "out of memory for the reorder buffer holding {held} packets within the reorder \
             horizon ({}) of the latest, at timestamp {latest} ns: lower reorder_horizon (0 for \
             a capture written in order; with on_late='drop' the packets later than it are \
             dropped and counted), or read fewer packets (start=/end=, filter=)",
            duration_text(horizon.unsigned_abs())
        ),
    )
}

/// The error for a packet at `ts` that came after one `lateness` ns later, at `latest`, beyond
/// `horizon`. It ends with the late packet's instant, so that the offset the error is given
/// (" at byte offset N", the late packet's) reads as that packet's.
pub(crate) fn late_error(ts: i64, latest: i64, lateness: u64, horizon: i64) -> Error {
    let step = duration_text(lateness);
    let before = iso_ns(latest);
    // Past a second, a step back is a clock that jumped or a stray timestamp rather than
    // capture jitter, and a horizon that long would hold a second of packets. The stray may be
    // the packet read before, far ahead: dropping the late ones then drops every good packet
    // after it (tcpdump's kday2.pcap keeps 2 of its 5), where `end` leaves out the stray alone.
    let advice = if lateness > 1_000_000_000 {
        format!(
            "a step back this long is a damaged timestamp or a clock that jumped. If the packet \
             read before is the damaged one, leave it out with end='{before}' (the packets from \
             then on go with it); if this one is, drop late packets (on_late='drop'); if the \
             step back is real, raise reorder_horizon to at least {step}"
        )
    } else {
        format!("raise reorder_horizon to at least {step}, or drop late packets (on_late='drop')")
    };
    Error::new(
        ErrorKind::OutOfOrder,
        format!(
            "a packet {step} earlier than one read before it (of {before}), beyond the reorder \
             horizon of {}: {advice}. The late packet: {}",
            duration_text(horizon.unsigned_abs()),
            iso_ns(ts)
        ),
    )
}

/// Where released packets go: the groupings of a scan, each of which asks `key` for the packet's
/// group in it (only keyed groupings ask).
pub(crate) trait Release {
    fn release(&mut self, ts_ns: i64, size: u64, key: impl Fn(By) -> GroupKey) -> Result<()>;

    /// Consecutive packets, in order, of a scan of the aggregate alone (what is buffered bare).
    fn release_run(&mut self, run: &[Bare]) -> Result<()> {
        run.iter()
            .try_for_each(|b| self.release(b.ts_ns, b.size, |_| GroupKey::All))
    }
}

/// The aggregate's packets to a [`Release`], in runs where the buffer has them.
struct BareTo<'a, R>(&'a mut R);

impl<R: Release> Drain<Bare> for BareTo<'_, R> {
    const RUNS: bool = true;

    #[inline]
    fn one(&mut self, b: &Bare) -> Result<()> {
        self.0.release(b.ts_ns, b.size, |_| GroupKey::All)
    }

    #[inline]
    fn run(&mut self, run: &[Bare]) -> Result<()> {
        self.0.release_run(run)
    }
}

/// A scan's reorder buffer. It holds what the groupings read and no more: whole arrivals when a
/// grouping needs headers, (timestamp, size, interface) when only the aggregate and the
/// interface grouping are asked for, (timestamp, size) for the aggregate alone. Packets are
/// copied twice and held for a whole horizon, megabytes at line rate: small entries matter.
pub(crate) enum Buffered {
    Full(Reorder<Arrival>),
    Lean(Reorder<Lean>),
    Bare(Reorder<Bare>),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Lean {
    ts_ns: i64,
    size: u64,
    interface: u32,
}

impl Timed for Lean {
    #[inline(always)]
    fn ts_ns(&self) -> i64 {
        self.ts_ns
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Bare {
    pub(crate) ts_ns: i64,
    pub(crate) size: u64,
}

impl Timed for Bare {
    #[inline(always)]
    fn ts_ns(&self) -> i64 {
        self.ts_ns
    }
}

impl Buffered {
    /// The smallest buffer the groupings `by` can work from.
    pub(crate) fn new(by: &[By], horizon: i64, late: LatePolicy) -> Self {
        if by == [By::All] {
            Buffered::Bare(Reorder::new(horizon, late))
        } else if !by.iter().any(|b| b.reads_headers()) {
            Buffered::Lean(Reorder::new(horizon, late))
        } else {
            Buffered::Full(Reorder::new(horizon, late))
        }
    }

    /// See [`Reorder::holding_at_most`].
    pub(crate) fn holding_at_most(self, max_held: usize) -> Self {
        match self {
            Buffered::Full(r) => Buffered::Full(r.holding_at_most(max_held)),
            Buffered::Lean(r) => Buffered::Lean(r.holding_at_most(max_held)),
            Buffered::Bare(r) => Buffered::Bare(r.holding_at_most(max_held)),
        }
    }

    pub(crate) fn stats(&self) -> &ReorderStats {
        match self {
            Buffered::Full(r) => r.stats(),
            Buffered::Lean(r) => r.stats(),
            Buffered::Bare(r) => r.stats(),
        }
    }

    /// Take one arrival (any order within the horizon); release what can no longer be overtaken.
    #[inline]
    pub(crate) fn push(&mut self, a: &Arrival, to: &mut impl Release) -> Result<()> {
        match self {
            Buffered::Full(r) => {
                r.push(a, |a: &Arrival| to.release(a.ts_ns, a.size, |by| by.key(a)))
            }
            _ => self.push_lean(a.ts_ns, a.size, a.interface, to),
        }
    }

    /// [`Buffered::push`] for a packet known only by timestamp, size and interface: a grouping
    /// by a header field sees it as lacking the field.
    #[inline]
    pub(crate) fn push_lean(
        &mut self,
        ts_ns: i64,
        size: u64,
        interface: u32,
        to: &mut impl Release,
    ) -> Result<()> {
        match self {
            Buffered::Bare(r) => r.push(&Bare { ts_ns, size }, BareTo(to)),
            Buffered::Lean(r) => r.push(
                &Lean {
                    ts_ns,
                    size,
                    interface,
                },
                |l: &Lean| release_lean(to, l),
            ),
            Buffered::Full(r) => r.push(
                &Arrival {
                    ts_ns,
                    size,
                    interface,
                    headers: crate::wire::Headers::default(),
                },
                |a: &Arrival| to.release(a.ts_ns, a.size, |by| by.key(a)),
            ),
        }
    }

    /// Release everything left, in order.
    pub(crate) fn flush(&mut self, to: &mut impl Release) -> Result<()> {
        match self {
            Buffered::Full(r) => r.flush(|a: &Arrival| to.release(a.ts_ns, a.size, |by| by.key(a))),
            Buffered::Lean(r) => r.flush(|l: &Lean| release_lean(to, l)),
            Buffered::Bare(r) => r.flush(BareTo(to)),
        }
    }
}

/// The aggregate's buffer on its own, for a holder that knows it buffers (timestamp, size):
/// a two-thread scan's reading thread pushes every packet through it, where [`Buffered`]'s
/// dispatch on what it holds kept the push out of line (the reading loop's call, and the
/// result returned through memory, at every packet).
impl Reorder<Bare> {
    #[inline]
    pub(crate) fn push_bare(&mut self, ts_ns: i64, size: u64, to: &mut impl Release) -> Result<()> {
        self.push(&Bare { ts_ns, size }, BareTo(to))
    }

    /// Release everything left, in order.
    pub(crate) fn flush_bare(&mut self, to: &mut impl Release) -> Result<()> {
        self.flush(BareTo(to))
    }
}

#[inline]
fn release_lean(to: &mut impl Release, l: &Lean) -> Result<()> {
    to.release(l.ts_ns, l.size, |by| match by {
        By::Interface => GroupKey::Interface(l.interface),
        _ => GroupKey::All,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct P {
        ts: i64,
        id: usize,
    }

    impl Timed for P {
        fn ts_ns(&self) -> i64 {
            self.ts
        }
    }

    /// Pushes `ts` in order into a buffer holding at most `max_held`; the error, if any, and
    /// after which packet.
    fn flood(ts: &[i64], horizon: i64, max_held: usize) -> Option<(usize, Error)> {
        let mut r = Reorder::new(horizon, LatePolicy::Error).holding_at_most(max_held);
        for (i, &t) in ts.iter().enumerate() {
            if let Err(e) = r.push(&P { ts: t, id: i }, |_: &P| Ok(())) {
                return Some((i, e));
            }
        }
        None
    }

    #[test]
    fn packets_past_the_limit_within_the_horizon_are_an_error() {
        // A forged capture's packets all at one instant: every one waits, so the buffer stops
        // at the first release that leaves more than its limit waiting, not when memory ends.
        let n = 5 * RELEASE_EVERY as usize;
        let (at, e) = flood(&vec![7; n], 10, 2_000).expect("an error");
        assert_eq!(e.kind, ErrorKind::LimitExceeded);
        // Packets held in memory, not the size of the result nor the capture's structure.
        assert_eq!(e.limit, Some(Limit::HeldPackets));
        assert!(e
            .reason
            .contains("more than 2000 packets within the reorder horizon (10 ns)"));
        assert!(e.reason.contains("lower reorder_horizon"), "{e}");
        // At the first release past 2,000 packets: the 2,048th.
        assert_eq!(at, 2 * RELEASE_EVERY as usize - 1);
        // With no horizon, packets at one instant wait for nothing.
        assert!(flood(&vec![7; n], 0, 2_000).is_none());
        // Packets further apart than the horizon are released: the limit is on what waits.
        let spread: Vec<i64> = (0..n as i64).map(|i| i * 11).collect();
        assert!(flood(&spread, 10, 2_000).is_none());
        // One over the limit, counted after the release that came with an out-of-order packet.
        let mut late = vec![100; 2_001];
        late.push(99);
        let (at, e) = flood(&late, 10, 2_000).expect("an error");
        assert_eq!(
            (at, e.kind, e.limit),
            (2_001, ErrorKind::LimitExceeded, Some(Limit::HeldPackets))
        );
        let at_limit = [vec![100; 1_999], vec![99]].concat();
        assert!(flood(&at_limit, 10, 2_000).is_none());
    }

    #[test]
    fn a_chunks_share_leaves_room_for_the_others() {
        for chunks in [1, 2, 3, 64, 1024] {
            let share = chunk_share(chunks);
            assert!(
                chunks * (share + RELEASE_EVERY as usize) <= MAX_HELD,
                "{chunks}"
            );
            assert!(share > 0, "{chunks}");
        }
    }

    #[test]
    fn release_order_is_a_stable_sort_by_timestamp() {
        // Few distinct timestamps, so that out-of-order packets tie with in-order ones all the
        // time: the output must be the arrivals sorted by timestamp, ties in arrival order. One
        // case in ten is long and mostly sorted, so that the FIFO is released in batches
        // (RELEASE_EVERY) between the out-of-order packets.
        let mut x: u64 = 0x0DDB_1A5E_5BAD_5EED;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..2_000 {
            let horizon = (next() % 6) as i64;
            let (n, disorder) = if case % 10 == 0 {
                (3 * RELEASE_EVERY as u64 + next() % 2_000, 700)
            } else {
                (next() % 60, 3)
            };
            let mut t = 0i64;
            let arrivals: Vec<P> = (0..n as usize)
                .map(|id| {
                    t += (next() % 3) as i64;
                    let back = (next() % (horizon as u64 + 1)) as i64;
                    P {
                        ts: t - if next() % disorder == 0 { back } else { 0 },
                        id,
                    }
                })
                .collect();
            // The latest timestamp up to each packet.
            let latest: Vec<i64> = arrivals
                .iter()
                .scan(i64::MIN, |m, p| {
                    *m = (*m).max(p.ts);
                    Some(*m)
                })
                .collect();
            let mut r = Reorder::new(horizon, LatePolicy::Error);
            let mut out = Vec::new();
            for (i, a) in arrivals.iter().enumerate() {
                r.push(a, |p: &P| {
                    out.push(*p);
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("case {case}: {e}"));
                // Memory stays bounded. The buffer was last released at most RELEASE_EVERY
                // packets ago, at a latest timestamp of at least that of packet k: what it
                // holds came since, or may still have been overtaken then.
                let k = i.saturating_sub(RELEASE_EVERY as usize);
                let then = latest[k];
                // Packets before j can only be later than `then − horizon` while the latest
                // before them is.
                let open = (i - k)
                    + (0..=k)
                        .rev()
                        .take_while(|&j| latest[j] > then - horizon)
                        .filter(|&j| arrivals[j].ts > then - horizon)
                        .count();
                let held = r.in_order.len() + r.out_of_order.len();
                assert!(
                    held <= open,
                    "case {case}: {held} held after packet {i}, {open} that may be"
                );
            }
            r.flush(|p: &P| {
                out.push(*p);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
            let mut want = arrivals.clone();
            want.sort_by_key(|p| p.ts);
            assert_eq!(out, want, "case {case}, horizon {horizon}");
        }
    }

    #[test]
    fn a_late_packet_is_told_with_its_instants_and_what_to_do() {
        let short = late_error(5_000_000, 20_000_000, 15_000_000, 10_000_000).reason;
        assert_eq!(
            short,
            "a packet 15ms earlier than one read before it (of 1970-01-01T00:00:00.020000000Z), beyond \
             the reorder horizon of 10ms: raise reorder_horizon to at least 15ms, or drop late \
             packets (on_late='drop'). The late packet: 1970-01-01T00:00:00.005000000Z"
        );
        // kday2.pcap's second packet, 24 days ahead of the three after it.
        let (ts, latest) = (1_416_849_573_684_826_000, 1_418_946_725_672_232_000);
        let long = late_error(ts, latest, latest.abs_diff(ts), 10_000_000).reason;
        assert!(
            long.contains("leave it out with end='2014-12-18T23:52:05.672232000Z'"),
            "{long}"
        );
        assert!(
            long.contains("raise reorder_horizon to at least 2097151.987406s"),
            "{long}"
        );
        assert!(
            long.ends_with("The late packet: 2014-11-24T17:19:33.684826000Z"),
            "{long}"
        );
    }
}
