//! The sliding-window envelope E(τ) of one group, for many τ at once.
//!
//! With integer-ns timestamps a half-open window `[s, s+τ)` holds exactly the packets of the closed
//! window `[s, s+τ−1]`, so both conventions reduce to one rule: when a packet arrives at `t`, the
//! window that ends at it holds the packets with `t − reach ≤ t_i ≤ t`, where `reach` is `τ−1`
//! (half-open) or `τ` (closed). The most bytes over all windows ending at a packet equals the most
//! bytes over all windows starting at a packet (the definition), because every maximising window
//! can be slid until its far edge touches a packet.
//!
//! The packets of the last max(reach) ns live in one ring shared by all windows of the group, as
//! timestamps and prefix sums of bytes; each window keeps a trailing pointer into it, so a packet
//! costs O(1) amortised per window and nothing is allocated per packet. Most packets cost less:
//! a window's trail lags until the lagging window could beat the best, and the packets before
//! that point are skipped together, found by galloping over the prefix sums (see [`advance`]).

use super::chunk::Kept;
use super::search::first_where;
use super::{By, Closure, EnvelopeRow, GroupKey};
use crate::error::{Error, Limit, Result};
use std::ops::{Add, Sub};

/// The integer that running byte counts are kept in. Prefix sums of a group's bytes fit a u64 in
/// any real capture, and u64 arithmetic is what keeps the per-packet loop short; a group whose
/// bytes pass 2⁶⁴ − 1 (only in-memory columns can carry such sizes) moves to u128, where the
/// sums stay exact and only the reported E(τ) saturates.
trait Acc: Copy + Ord + Default + Add<Output = Self> + Sub<Output = Self> + std::fmt::Debug {
    fn saturating_u64(self) -> u64;
    fn checked_add(self, other: Self) -> Option<Self>;
}

impl Acc for u64 {
    #[inline(always)]
    fn checked_add(self, other: Self) -> Option<Self> {
        u64::checked_add(self, other)
    }

    #[inline(always)]
    fn saturating_u64(self) -> u64 {
        self
    }
}

impl Acc for u128 {
    #[inline(always)]
    fn checked_add(self, other: Self) -> Option<Self> {
        u128::checked_add(self, other)
    }

    #[inline(always)]
    fn saturating_u64(self) -> u64 {
        u64::try_from(self).unwrap_or(u64::MAX)
    }
}

/// How a slot of the ring holds its packet's timestamp. Only differences between held packets are
/// ever needed, and the ring never holds packets further apart than a stamp can tell apart (the
/// windows' trails are moved on first, see [`Windows::make_room`]), so the low 32 bits of the
/// nanoseconds do while every window is shorter than 2³² ns (4.29 s): the slot is then 12
/// bytes instead of 16, and the ring of a 1 s window of a fast link a quarter smaller. Longer
/// windows keep the whole timestamp.
trait Stamp: Copy + Default + std::fmt::Debug {
    /// The largest difference (ns) between two held packets that the stamps keep exact.
    const SPAN: u64;
    fn of(ts: i64) -> Self;
    /// Nanoseconds from the packet stamped `older` to the one stamped `newer`, which is not
    /// earlier and at most `SPAN` later.
    fn age(newer: Self, older: Self) -> u64;
}

impl Stamp for u32 {
    const SPAN: u64 = u32::MAX as u64;

    #[inline(always)]
    fn of(ts: i64) -> Self {
        ts as u32
    }

    #[inline(always)]
    fn age(newer: Self, older: Self) -> u64 {
        u64::from(newer.wrapping_sub(older))
    }
}

impl Stamp for i64 {
    const SPAN: u64 = u64::MAX;

    #[inline(always)]
    fn of(ts: i64) -> Self {
        ts
    }

    #[inline(always)]
    fn age(newer: Self, older: Self) -> u64 {
        newer.wrapping_sub(older) as u64
    }
}

/// The timestamp of a packet stamped `stamp`, counted back from the newest packet's.
#[inline]
fn time_of<S: Stamp>(newest: i64, stamp: S) -> i64 {
    newest.wrapping_sub(S::age(S::of(newest), stamp) as i64)
}

/// Recent packets, addressed by absolute sequence numbers: the low bits of a sequence number pick
/// the slot, so pointers into the ring survive growth without rebasing. A slot holds a packet's
/// timestamp (its [`Stamp`]) and the group's bytes up to and including it (a prefix sum), so any
/// window's bytes are one subtraction and a bound over a run of packets costs no more than one
/// packet. Timestamp and prefix share a slot (one cache line serves both), so each window's
/// trailing pointer is one sequential memory stream: with 20 windows, two arrays would mean 40
/// streams, more than the hardware prefetchers follow.
#[derive(Debug, Clone)]
struct Ring<A: Copy, S: Copy> {
    slots: Vec<Slot<A, S>>,
    /// Oldest packet still needed (by the largest window).
    tail: u64,
    /// Sequence number the next packet gets.
    head: u64,
    /// Bytes of every packet pushed so far.
    total: A,
    /// Timestamp of the newest packet: the stamps are read back from it.
    newest: i64,
    /// The latest timestamp the next packet can have with the tail still within `S::SPAN` of it
    /// (i64::MIN: not known, look at the next packet).
    deadline: i64,
    /// Most bytes the slots may take ([`MAX_RING_BYTES`]; less in tests).
    max_bytes: usize,
    /// The ring could not grow: later packets overwrote held ones (see [`Ring::push`]).
    full: bool,
}

/// Packed, so that a u32 stamp and a u64 sum take 12 bytes; the fields are only ever copied
/// (a reference into a packed struct may be misaligned), hence the impls by hand.
#[repr(C, packed(4))]
struct Slot<A, S> {
    stamp: S,
    /// Bytes of the group's packets up to and including this one.
    upto: A,
}

impl<A: Copy, S: Copy> Clone for Slot<A, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: Copy, S: Copy> Copy for Slot<A, S> {}

impl<A: Default, S: Default> Default for Slot<A, S> {
    fn default() -> Self {
        Slot {
            stamp: S::default(),
            upto: A::default(),
        }
    }
}

impl<A: Copy + std::fmt::Debug, S: Copy + std::fmt::Debug> std::fmt::Debug for Slot<A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (stamp, upto) = (self.stamp, self.upto);
        f.debug_struct("Slot")
            .field("stamp", &stamp)
            .field("upto", &upto)
            .finish()
    }
}

impl<A: Acc, S: Stamp> Ring<A, S> {
    const INITIAL: usize = 16;

    fn new() -> Self {
        Ring {
            slots: vec![Slot::default(); Self::INITIAL],
            tail: 0,
            head: 0,
            total: A::default(),
            newest: 0,
            deadline: i64::MIN,
            max_bytes: MAX_RING_BYTES,
            full: false,
        }
    }

    fn len(&self) -> u64 {
        self.head.wrapping_sub(self.tail)
    }

    #[inline(always)]
    fn at(&self, seq: u64) -> Slot<A, S> {
        // The length is a power of two: masking with len − 1 keeps the index in bounds, which
        // the compiler sees, so no bounds check is left in the loop.
        let slots = &self.slots[..];
        slots[(seq as usize) & (slots.len() - 1)]
    }

    /// The timestamp of a held packet.
    #[inline]
    fn time(&self, slot: Slot<A, S>) -> i64 {
        time_of(self.newest, slot.stamp)
    }

    /// The latest timestamp a packet can have with a packet at `oldest` still held exactly.
    fn deadline_after(oldest: i64) -> i64 {
        i64::try_from(S::SPAN).map_or(i64::MAX, |span| oldest.saturating_add(span))
    }

    /// A ring that may not grow (see [`Ring::grow`]) goes on over its oldest slots: what it
    /// holds is then wrong, and [`Windows::catch_up`] throws it away before reading any, so the
    /// per-packet path keeps its one test of a full ring.
    #[inline]
    fn push(&mut self, ts: i64, upto: A) {
        if self.len() == self.slots.len() as u64 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        self.slots[(self.head as usize) & mask] = Slot {
            stamp: S::of(ts),
            upto,
        };
        self.head = self.head.wrapping_add(1);
        self.total = upto;
        self.newest = ts;
    }

    /// Double the capacity, moving every live packet to its slot under the new mask.
    ///
    /// In place: the ring is full, so each slot holds one live packet, which either stays or
    /// moves to the new upper half. Growing the allocation itself is a `realloc`, which the
    /// allocator does by remapping pages when the ring is large: the old and the new ring never
    /// exist side by side, and a ring of hundreds of MB does not briefly need half as much again.
    ///
    /// Past [`MAX_RING_BYTES`], or when the memory cannot be had, the ring stays as it is and
    /// is marked `full` (a failed allocation would abort the process, where the scan can stop
    /// with an error).
    #[cold]
    fn grow(&mut self) {
        let old = self.slots.len();
        let cap = old.saturating_mul(2);
        if cap.saturating_mul(std::mem::size_of::<Slot<A, S>>()) > self.max_bytes
            || self.slots.try_reserve_exact(cap - old).is_err()
        {
            self.full = true;
            return;
        }
        self.slots.resize(cap, Slot::default());
        let mut seq = self.tail;
        while seq != self.head {
            let (from, to) = (seq as usize & (old - 1), seq as usize & (cap - 1));
            if from != to {
                self.slots[to] = self.slots[from];
            }
            seq = seq.wrapping_add(1);
        }
    }
}

impl<A: Acc, S: Stamp> Ring<A, S> {
    /// Whether [`Ring::shrink`] would move the packets to fewer slots.
    fn would_shrink(&self) -> bool {
        let (len, cap) = (self.len() as usize, self.slots.len());
        cap > TRIM_MIN && len.saturating_mul(4) <= cap
    }

    /// Halve the slots (or more) while at most a quarter of them hold packets, moving each held
    /// packet to its slot under the new mask; never below [`TRIM_MIN`].
    #[cold]
    fn shrink(&mut self) {
        if !self.would_shrink() {
            return;
        }
        let len = self.len() as usize;
        let new_cap = len.saturating_mul(2).next_power_of_two().max(TRIM_MIN);
        let mut slots = vec![Slot::default(); new_cap];
        let mut seq = self.tail;
        while seq != self.head {
            if let Some(to) = slots.get_mut(seq as usize & (new_cap - 1)) {
                *to = self.at(seq);
            }
            seq = seq.wrapping_add(1);
        }
        self.slots = slots;
    }
}

/// Slots a ring keeps however few packets it holds: 768 bytes of short stamps, less than the
/// rest of a group, so that a trim costs no more than the memory it gives back.
const TRIM_MIN: usize = 64;

/// Most bytes one group's ring may take: 2²⁸ packets of short stamps (3 GB), held because they
/// lie within the largest window of each other (a window longer than the capture holds all of
/// it). Past it, or when the memory cannot be had, the envelope gives up and the scan fails with
/// a `LimitExceeded` error ([`Envelope::rows`]) instead of the allocation aborting the process:
/// a forged capture of a few hundred kB can hold a billion packets at one instant.
const MAX_RING_BYTES: usize = 4 << 30;

/// One τ: the window ending at the latest packet the window has seen, and the best seen so far.
#[derive(Debug, Clone)]
struct Window<A> {
    tau: i64,
    reach: i64,
    /// First packet of the current window (sequence number in the ring).
    trail: u64,
    /// Bytes of the packets before `trail`: the window's bytes are `upto(last) − before`.
    before: A,
    best_bytes: A,
    best_packets: u64,
    best_start: i64,
    max_packets: u64,
}

/// The packets an envelope held at its end from some time on, in its own ring, handed over
/// instead of copied ([`Envelope::take_recent`]): a chunk's tail for merging, millions of
/// packets when a window is as long as the chunks.
#[derive(Debug, Clone)]
pub(crate) struct Recent {
    slots: Held,
    /// Sequence number of the first packet, and how many there are.
    start: u64,
    len: usize,
    /// Bytes up to the packet before the first.
    before: u64,
}

/// A ring's slots, with what their stamps are read back from.
#[derive(Debug, Clone)]
enum Held {
    Short {
        slots: Vec<Slot<u64, u32>>,
        newest: i64,
    },
    Long(Vec<Slot<u64, i64>>),
}

impl Recent {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Timestamp and prefix sum of packet `i` (< `len`).
    #[inline]
    fn slot(&self, i: usize) -> (i64, u64) {
        let seq = self.start.wrapping_add(i as u64) as usize;
        match &self.slots {
            Held::Short { slots, newest } => {
                let slot = slots[seq & (slots.len() - 1)];
                (time_of(*newest, slot.stamp), slot.upto)
            }
            Held::Long(slots) => {
                let slot = slots[seq & (slots.len() - 1)];
                (slot.stamp, slot.upto)
            }
        }
    }

    /// Bytes of the packets before packet `i` (≤ `len`), counted from `before`.
    #[inline]
    fn upto(&self, i: usize) -> u64 {
        i.checked_sub(1).map_or(self.before, |j| self.slot(j).1)
    }

    /// Timestamp and size of packet `i` (< `len`).
    #[inline]
    pub(crate) fn at(&self, i: usize) -> (i64, u64) {
        let (ts, upto) = self.slot(i);
        (ts, upto - self.upto(i))
    }

    /// Bytes of the packets `from..to` (≤ `len`): one subtraction of prefix sums.
    #[inline]
    pub(crate) fn bytes(&self, from: usize, to: usize) -> u128 {
        if from >= to {
            return 0;
        }
        u128::from(self.upto(to) - self.upto(from))
    }
}

/// Equal when they hold the same packets, wherever in the ring.
impl PartialEq for Recent {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (0..self.len).all(|i| self.at(i) == other.at(i))
    }
}

impl Eq for Recent {}

/// Where [`Envelope::recent`] puts the packets: told how many at most, then given each one.
pub(crate) trait Keep {
    fn reserve(&mut self, n: usize);
    fn keep(&mut self, ts: i64, size: u64);
}

/// E(τ) for a sorted list of τ, over one group's packets.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    inner: Width,
}

/// The same envelope over u64 or (past 2⁶⁴ − 1 bytes in the group) u128 sums, with short
/// stamps while every window is shorter than 2³² ns (see [`Stamp`]).
#[derive(Debug, Clone)]
enum Width {
    Short(Windows<u64, u32>),
    Long(Windows<u64, i64>),
    Wide(Windows<u128, i64>),
}

/// The same code on every width.
macro_rules! each {
    ($width:expr, $w:ident => $e:expr) => {
        match $width {
            Width::Short($w) => $e,
            Width::Long($w) => $e,
            Width::Wide($w) => $e,
        }
    };
}

/// Packets are pushed into the ring and the windows catch up in batches, one window at a time
/// over the whole batch: each window's loop then runs with its state in registers, and its
/// data-dependent branches follow one window's regular pattern instead of twenty windows'
/// interleaved ones, which the branch predictor cannot follow.
#[derive(Debug, Clone)]
struct Windows<A: Copy, S: Copy> {
    ring: Ring<A, S>,
    /// Sorted by reach, so the last window is the one that decides what the ring must keep.
    windows: Vec<Window<A>>,
    /// Sequence number of the first packet the windows have not seen yet.
    done: u64,
    /// Set when the ring could not grow: how many packets it held, and the largest window. The
    /// windows are dropped then, so that later packets cost nothing; `rows` tells.
    gave_up: Option<(u64, i64)>,
    /// The group's first packets kept for merging time chunks ([`Envelope::keep_head`]).
    head: Head,
}

/// A group's first packets, up to a timestamp, kept for merging time chunks: in the ring's own
/// first slots for as long as no later packet overwrites them, copied out only when one would
/// (or the ring is replaced). A chunk of a two-thread scan is about as long as a 1 s window, so
/// its ring never comes round and the head costs no memory of its own; copied as it came, it
/// was 7.5 K page faults of fresh memory in a two-thread scan of a 1 GB capture.
#[derive(Debug, Clone, Default)]
enum Head {
    /// None asked for.
    #[default]
    Unkept,
    /// Every packet pushed so far is in the head (timestamp ≤ `until`), packet `i` in slot `i`:
    /// the ring has not come round, as it cannot while every packet is within the largest
    /// window of the first (no trail leaves the first packet).
    Open { until: i64 },
    /// The first `len` packets, the last at `last`, still in slots `0..len`.
    Closed { len: u64, last: i64 },
    /// Copied out before the ring could overwrite them.
    Copied(Kept),
    /// Not known: the ring went before the head was complete (a ring that gave up, or sums
    /// past 2⁶⁴ − 1 bytes in the group's first window). Merging then refuses.
    Lost,
}

/// The largest t − s with packets at s and t in one window of length `tau` (see the module doc).
fn reach(tau: i64, closure: Closure) -> i64 {
    match closure {
        Closure::HalfOpen => tau.saturating_sub(1),
        Closure::Closed => tau,
    }
}

/// Packets pushed before the windows catch up: enough to amortise the per-window setup, few
/// enough (12 KB of ring slots) to stay in L1 cache. 1024 measured 3–4 % faster than 128.
const BATCH: u64 = 1024;

impl Envelope {
    /// `windows_ns` must be sorted ascending, deduplicated and positive (the scanner ensures it).
    pub(crate) fn new(windows_ns: &[i64], closure: Closure) -> Self {
        // Short stamps need every reach within their span (see `Windows::make_room`).
        let short = windows_ns
            .iter()
            .all(|&tau| reach(tau, closure) as u64 <= u32::SPAN);
        Envelope {
            inner: if short {
                Width::Short(Windows::new(windows_ns, closure))
            } else {
                Width::Long(Windows::new(windows_ns, closure))
            },
        }
    }

    /// Add a packet; packets must come in timestamp order.
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        let wide = match &mut self.inner {
            Width::Short(w) => w.push_or_widen(ts, size),
            Width::Long(w) => w.push_or_widen(ts, size),
            Width::Wide(w) => {
                let upto = w.ring.total.saturating_add(u128::from(size));
                w.push(ts, upto);
                None
            }
        };
        if let Some(wide) = wide {
            self.inner = Width::Wide(wide);
        }
    }

    /// [`Envelope::push`] for consecutive packets: the width is looked at once, not per packet.
    #[inline]
    pub(crate) fn push_run(&mut self, run: impl IntoIterator<Item = (i64, u64)>) {
        if self.keeps_nothing() {
            // Each push would return at once, after a look at the sum: the reading thread of a
            // scan split by function, which keeps no window, walked every run for nothing
            // (3 % of its time).
            return;
        }
        let mut run = run.into_iter();
        let overflow = match &mut self.inner {
            Width::Short(w) => w.push_narrow(&mut run),
            Width::Long(w) => w.push_narrow(&mut run),
            Width::Wide(_) => None,
        };
        // Past 2⁶⁴ − 1 bytes: that packet and the rest one by one, in u128.
        for (ts, size) in overflow.into_iter().chain(run) {
            self.push(ts, size);
        }
    }

    /// No window to keep packets for (none asked for, or a ring that gave up, which the scan
    /// reports at the next [`Envelope::check`]), in u64 sums: a push changes nothing.
    #[inline]
    fn keeps_nothing(&self) -> bool {
        match &self.inner {
            Width::Short(w) => w.windows.is_empty(),
            Width::Long(w) => w.windows.is_empty(),
            Width::Wide(_) => false,
        }
    }

    /// Every packet still held with a timestamp ≥ `from`, oldest first, into `to`. What is
    /// held is at least every packet within the largest reach of the latest one (merging time
    /// chunks needs them, see `engine::chunk`).
    pub(crate) fn recent(&mut self, from: i64, to: &mut impl Keep) {
        each!(&mut self.inner, w => w.recent(from, to))
    }

    /// [`Envelope::recent`] without a copy: the ring itself, from the first packet at or after
    /// `from`. `None` once the sums are u128 (then use `recent`). The envelope is spent: take
    /// its rows first.
    pub(crate) fn take_recent(&mut self, from: i64) -> Option<Recent> {
        let (slots, (start, before), head) = match &mut self.inner {
            Width::Short(w) => {
                let since = w.since(from)?;
                let newest = w.ring.newest;
                let slots = std::mem::take(&mut w.ring.slots);
                (Held::Short { slots, newest }, since, w.ring.head)
            }
            Width::Long(w) => {
                let since = w.since(from)?;
                let slots = std::mem::take(&mut w.ring.slots);
                (Held::Long(slots), since, w.ring.head)
            }
            Width::Wide(_) => return None,
        };
        Some(Recent {
            slots,
            start,
            len: head.wrapping_sub(start) as usize,
            before,
        })
    }

    /// Keep the group's packets with timestamps up to `until` for [`Envelope::take_head`]; before
    /// the group's first packet, which must be at or before `until`.
    pub(crate) fn keep_head(&mut self, until: i64) {
        each!(&mut self.inner, w => w.keep_head(until))
    }

    /// The packets [`Envelope::keep_head`] asked for, in the ring's own slots unless `copy` (or
    /// unless they had to be copied out already); `None` if none were asked for or they could
    /// not be kept. Without `copy` the envelope is spent: take its rows first.
    pub(crate) fn take_head(&mut self, copy: bool) -> Option<Kept> {
        let (len, last) = each!(&mut self.inner, w => match w.head_or_place(copy) {
            Ok(kept) => return kept,
            Err(place) => place,
        });
        let slots = match &mut self.inner {
            Width::Short(w) => Held::Short {
                slots: std::mem::take(&mut w.ring.slots),
                newest: last,
            },
            Width::Long(w) => Held::Long(std::mem::take(&mut w.ring.slots)),
            // A ring over u128 sums never holds a head (see `push_or_widen`).
            Width::Wide(_) => return None,
        };
        Some(Kept::Ring(Recent {
            slots,
            start: 0,
            len: len as usize,
            before: 0,
        }))
    }

    /// Let go of what no later packet can need, given that every later packet comes at `now`
    /// or after: a group whose newest packet is more than the largest reach before `now` has
    /// no held packet in any later window, and a ring that holds few packets for its slots is
    /// shrunk. Without it a ring keeps the slots of the busiest stretch its group ever had: a
    /// group that fell silent after a dense burst (a short flow) held that burst to the end of
    /// the scan, so a grouping's memory followed the capture's packets, not its windows.
    pub(crate) fn trim(&mut self, now: i64) {
        each!(&mut self.inner, w => w.trim(now))
    }

    /// Slots of the ring (each 12 or 16 bytes; 24 once the sums are u128).
    #[cfg(test)]
    pub(crate) fn held_slots(&self) -> usize {
        each!(&self.inner, w => w.ring.slots.len())
    }

    /// One row per τ (none if the group saw no packet, which the scanner never asks for); a
    /// `LimitExceeded` error if the packets within the largest window could not all be held.
    pub(crate) fn rows(
        &mut self,
        by: By,
        group: GroupKey,
        out: &mut Vec<EnvelopeRow>,
    ) -> Result<()> {
        each!(&mut self.inner, w => w.rows(by, group, out))
    }

    /// The `LimitExceeded` error [`Envelope::rows`] will give, as soon as the ring has given up
    /// (within [`BATCH`] packets of the growth that failed): the scanner stops there, rather
    /// than read an endless stream (stdin) to an end that never comes.
    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        each!(&self.inner, w => match w.gave_up {
            None => Ok(()),
            Some((held, largest)) => Err(gave_up_error(held, largest, w.ring.max_bytes)),
        })
    }
}

/// The error of a ring that could not hold the packets within the largest window of each other.
#[cold]
fn gave_up_error(held: u64, largest: i64, max_bytes: usize) -> Error {
    Error::limit_exceeded(
        Limit::HeldPackets,
        format!(
            "more than {held} packets of one group lie within the largest window \
             ({largest} ns) of each other, and E(τ) must hold them all: past \
             {} MB, or past the memory available. Give shorter windows or a \
             stretch (start=/end=); or the capture's timestamps are damaged \
             (many packets at one instant)",
            max_bytes >> 20
        ),
    )
}

impl<A: Acc, S: Stamp> Windows<A, S> {
    fn new(windows_ns: &[i64], closure: Closure) -> Self {
        let windows = windows_ns
            .iter()
            .map(|&tau| Window {
                tau,
                reach: reach(tau, closure),
                trail: 0,
                before: A::default(),
                best_bytes: A::default(),
                best_packets: 0,
                best_start: 0,
                max_packets: 0,
            })
            .collect();
        Windows {
            ring: Ring::new(),
            windows,
            done: 0,
            gave_up: None,
            head: Head::Unkept,
        }
    }

    #[inline]
    fn push(&mut self, ts: i64, upto: A) {
        if self.windows.is_empty() {
            return;
        }
        if ts > self.ring.deadline {
            self.make_room(ts);
        }
        self.ring.push(ts, upto);
        if self.ring.head.wrapping_sub(self.done) >= BATCH {
            self.catch_up();
        }
    }

    /// The ring could not grow: note it, and drop the windows and the ring, so that what the
    /// scanner still pushes before it looks ([`Envelope::check`], after the packet or run that
    /// gave up) costs no memory, and [`Windows::rows`] fails.
    #[cold]
    fn give_up(&mut self) {
        let largest = self.windows.iter().map(|w| w.tau).max().unwrap_or(0);
        self.gave_up = Some((self.ring.slots.len() as u64, largest));
        self.windows.clear();
        // The ring goes (and the scan fails): a head kept in it goes too.
        if !matches!(self.head, Head::Unkept | Head::Copied(_)) {
            self.head = Head::Lost;
        }
        self.ring = Ring {
            max_bytes: self.ring.max_bytes,
            ..Ring::new()
        };
    }

    /// Run every window over the packets pushed since the last call.
    fn catch_up(&mut self) {
        if self.ring.full {
            // What the ring holds was overwritten: read none of it.
            return self.give_up();
        }
        let ring = &self.ring;
        let (from, to) = (self.done, ring.head);
        for w in &mut self.windows {
            advance(w, ring, from, to);
        }
        self.done = to;
        self.keep_from_oldest_trail(None);
    }

    /// Trails lag lazily, so a shorter window's trail may be older than the largest one's: keep
    /// every packet any trail still points to, and note by when the next packet would be too far
    /// from the oldest of them for its stamp. With no packet held, that is counted from `next`,
    /// the packet about to be pushed, if known (else the next push looks).
    fn keep_from_oldest_trail(&mut self, next: Option<i64>) {
        let Some(oldest) = self.windows.iter().map(|w| w.trail).min() else {
            return;
        };
        let ring = &mut self.ring;
        ring.tail = oldest;
        let oldest_ts = if oldest == ring.head {
            next
        } else {
            Some(ring.time(ring.at(oldest)))
        };
        ring.deadline = oldest_ts.map_or(i64::MIN, Ring::<A, S>::deadline_after);
        if let Head::Open { until } = self.head {
            // The first packet past the head stops in `make_room`, which closes it.
            ring.deadline = ring.deadline.min(until);
        }
        // The next packets (at most a batch before the next look) could come round onto the
        // head's slots: copy it out first. While no trail has left the first packet the ring
        // grows instead of coming round, and growing moves no packet then. (An open head never
        // gets here: every packet is within the largest window of the first.)
        if matches!(self.head, Head::Open { .. } | Head::Closed { .. })
            && ring.tail != 0
            && ring.head.saturating_add(2 * BATCH) > ring.slots.len() as u64
        {
            debug_assert!(
                !matches!(self.head, Head::Open { .. }),
                "a trail left the first packet with the head open"
            );
            self.spill_head();
        }
    }

    /// See [`Envelope::keep_head`].
    fn keep_head(&mut self, until: i64) {
        self.head = if self.ring.head == 0 && self.gave_up.is_none() && !self.windows.is_empty() {
            Head::Open { until }
        } else {
            Head::Lost
        };
        self.ring.deadline = self.ring.deadline.min(until);
    }

    /// The head as it is to be handed over, or where it lies in the ring (how many packets, and
    /// the last one's timestamp) for the caller to hand over the slots.
    fn head_or_place(&mut self, copy: bool) -> std::result::Result<Option<Kept>, (u64, i64)> {
        let (len, last) = match std::mem::take(&mut self.head) {
            Head::Unkept | Head::Lost => return Ok(None),
            Head::Copied(kept) => return Ok(Some(kept)),
            Head::Open { .. } => (self.ring.head, self.ring.newest),
            Head::Closed { len, last } => (len, last),
        };
        if copy {
            return Ok(Some(self.copy_head(len, last)));
        }
        Err((len, last))
    }

    /// Copy the head out of the ring before the ring overwrites or replaces its slots; a head
    /// not yet complete cannot be (the packets still to come would be missed). Only widening to
    /// u128 sums meets an open head: no trail leaves packet 0 and no trim shrinks the ring while
    /// it is open (see `trim`).
    #[cold]
    fn spill_head(&mut self) {
        self.head = match std::mem::take(&mut self.head) {
            Head::Closed { len, last } => Head::Copied(self.copy_head(len, last)),
            Head::Open { .. } => Head::Lost,
            other => other,
        };
    }

    /// The first `len` packets, still in slots `0..len`, the last at `last`: every one lies
    /// within the largest reach of the first, so the stamps read back from `last` are exact.
    fn copy_head(&self, len: u64, last: i64) -> Kept {
        let mut kept = Kept::new();
        kept.reserve(len as usize);
        let mut prev = A::default();
        for seq in 0..len {
            let slot = self.ring.at(seq);
            // One packet's bytes: fits a u64.
            kept.keep(
                time_of(last, slot.stamp),
                (slot.upto - prev).saturating_u64(),
            );
            prev = slot.upto;
        }
        kept
    }

    /// Before a packet at `ts` that is more than `S::SPAN` after the oldest packet held: move
    /// every trail on past the packets more than `S::SPAN` before it, so that every stamp held
    /// stays exact. No window loses a packet it could still need, as every reach is at most
    /// `S::SPAN` (`Envelope::new` picks the stamps so); a trail only ever lags its window, and
    /// this merely lags it less.
    #[cold]
    fn make_room(&mut self, ts: i64) {
        if let Head::Open { until } = self.head {
            if ts > until {
                // Every packet before this one is in the head, and none after.
                self.head = Head::Closed {
                    len: self.ring.head,
                    last: self.ring.newest,
                };
            }
        }
        // The packets not seen yet are read against the stamps as they are.
        self.catch_up();
        let oldest_needed = ts.saturating_sub_unsigned(S::SPAN);
        let ring = &self.ring;
        for w in &mut self.windows {
            if w.trail != ring.head && ring.time(ring.at(w.trail)) < oldest_needed {
                let trail = first_past(ring, w.trail + 1, ring.head, |p| {
                    ring.time(p) >= oldest_needed
                });
                w.before = ring.at(trail - 1).upto;
                w.trail = trail;
            }
        }
        self.keep_from_oldest_trail(Some(ts));
    }

    fn trim(&mut self, now: i64) {
        // The common case, a small ring, costs one comparison: a sweep visits every group.
        if self.ring.slots.len() <= TRIM_MIN || self.windows.is_empty() {
            return;
        }
        // The packets not seen yet are read against the ring as it is (it may give up here).
        self.catch_up();
        if let Head::Open { until } = self.head {
            if now > until {
                // Every later packet is past the head.
                self.head = Head::Closed {
                    len: self.ring.head,
                    last: self.ring.newest,
                };
            }
        }
        let Some(reach) = self.windows.iter().map(|w| w.reach).max() else {
            return;
        };
        let ring = &self.ring;
        if ring.head != 0 && i128::from(now) - i128::from(ring.newest) > i128::from(reach) {
            // Every held packet is more than `reach` before any later one: each window's next
            // packet starts a window of its own, as after the group's first packet.
            let (head, total) = (ring.head, ring.total);
            for w in &mut self.windows {
                w.trail = head;
                w.before = total;
            }
            self.keep_from_oldest_trail(None);
        }
        if self.ring.would_shrink() {
            // Never an open head, which `spill_head` would lose: while it is open every packet
            // lies within the largest reach of the first (`make_room` closes it before one
            // past, the test above once `now` is past), so no trail has left packet 0 (nor did
            // the let-go above, which needs `now` more than the reach past the newest) and the
            // tail is 0; the ring, 16 slots when the head was asked for, grew only when full
            // and was never shrunk since (by induction), so it holds more than half its slots
            // past `TRIM_MIN`, and a shrink needs at most a quarter. Were this wrong, the head
            // would be lost and the merge refuse (a rescan), never a wrong result.
            debug_assert!(
                !matches!(self.head, Head::Open { .. }),
                "a shrink with the head open: {} packets in {} slots",
                self.ring.len(),
                self.ring.slots.len()
            );
            self.spill_head();
        }
        self.ring.shrink();
    }

    fn recent(&mut self, from: i64, to: &mut impl Keep) {
        let Some((mut seq, mut prev)) = self.since(from) else {
            return;
        };
        let head = self.ring.head;
        to.reserve(head.wrapping_sub(seq) as usize);
        while seq != head {
            let slot = self.ring.at(seq);
            // One packet's bytes: fits a u64.
            to.keep(self.ring.time(slot), (slot.upto - prev).saturating_u64());
            prev = slot.upto;
            seq = seq.wrapping_add(1);
        }
    }

    /// The first packet held with a timestamp ≥ `from` (or the head), and the bytes before it;
    /// `None` without windows.
    fn since(&mut self, from: i64) -> Option<(u64, A)> {
        self.catch_up();
        // The ring starts at the oldest trail; that window knows the prefix sum before it.
        let w = self.windows.iter().min_by_key(|w| w.trail)?;
        let (oldest, head) = (w.trail, self.ring.head);
        // Trails lag, so the ring may hold older packets than asked for: skip them at once.
        let ring = &self.ring;
        let mut seq = oldest;
        if seq != head && ring.time(ring.at(seq)) < from {
            seq = first_past(ring, seq + 1, head, |p| ring.time(p) >= from);
        }
        let before = if seq == oldest {
            w.before
        } else {
            ring.at(seq - 1).upto
        };
        Some((seq, before))
    }

    fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<EnvelopeRow>) -> Result<()> {
        // Sequence numbers count the packets pushed: none yet, no rows.
        if self.ring.head == 0 && self.gave_up.is_none() {
            return Ok(());
        }
        // First: it is where a ring that could not grow gives up.
        self.catch_up();
        if let Some((held, largest)) = self.gave_up {
            return Err(gave_up_error(held, largest, self.ring.max_bytes));
        }
        out.extend(self.windows.iter().map(|w| EnvelopeRow {
            by,
            group,
            window_ns: w.tau,
            bytes: w.best_bytes.saturating_u64(),
            packets_in_window: w.best_packets,
            start_ns: w.best_start,
            max_packets: w.max_packets,
        }));
        Ok(())
    }
}

impl<S: Stamp> Windows<u64, S> {
    /// Push a packet, or, if the group's bytes would pass 2⁶⁴ − 1, hand back the envelope over
    /// u128 sums with the packet pushed.
    #[inline]
    fn push_or_widen(&mut self, ts: i64, size: u64) -> Option<Windows<u128, i64>> {
        match self.ring.total.checked_add(size) {
            Some(upto) => {
                self.push(ts, upto);
                None
            }
            None => {
                // The wide ring has slots of its own, and whole stamps read back from the
                // newest packet's, which the head's may be too far from.
                self.spill_head();
                let mut wide = self.widen();
                wide.head = std::mem::take(&mut self.head);
                let upto = wide.ring.total + u128::from(size);
                wide.push(ts, upto);
                Some(wide)
            }
        }
    }

    /// Push packets until the group's bytes would pass 2⁶⁴ − 1; return that packet.
    #[inline]
    fn push_narrow(&mut self, run: &mut impl Iterator<Item = (i64, u64)>) -> Option<(i64, u64)> {
        if self.windows.is_empty() {
            return None;
        }
        for (ts, size) in run {
            let Some(upto) = self.ring.total.checked_add(size) else {
                return Some((ts, size));
            };
            self.push(ts, upto);
        }
        None
    }

    /// The same state over u128 sums (every u64 sum converts exactly) and whole timestamps.
    #[cold]
    fn widen(&self) -> Windows<u128, i64> {
        let ring = &self.ring;
        let slots = ring
            .slots
            .iter()
            .map(|&narrow| Slot {
                stamp: ring.time(narrow),
                upto: u128::from(narrow.upto),
            })
            .collect();
        Windows {
            ring: Ring {
                slots,
                tail: ring.tail,
                head: ring.head,
                total: u128::from(ring.total),
                newest: ring.newest,
                deadline: i64::MAX,
                max_bytes: ring.max_bytes,
                full: ring.full,
            },
            windows: self
                .windows
                .iter()
                .map(|w| Window {
                    tau: w.tau,
                    reach: w.reach,
                    trail: w.trail,
                    before: u128::from(w.before),
                    best_bytes: u128::from(w.best_bytes),
                    best_packets: w.best_packets,
                    best_start: w.best_start,
                    max_packets: w.max_packets,
                })
                .collect(),
            done: self.done,
            gave_up: self.gave_up,
            head: Head::Lost,
        }
    }
}

/// The first packet in `from..to` for which `past` holds, or `to` if none does; `past` must be
/// false and then true along the ring (see [`first_where`]). Galloping: a long window's trail
/// jumps over a run of packets reading a few slots of the ring instead of every one, which
/// matters when the trail is megabytes behind the head, out of cache.
#[inline]
fn first_past<A: Acc, S: Stamp>(
    ring: &Ring<A, S>,
    from: u64,
    to: u64,
    past: impl Fn(Slot<A, S>) -> bool,
) -> u64 {
    first_where(from, to, |seq| past(ring.at(seq)))
}

/// Trail steps taken one by one before the trail gallops.
const WALK: u32 = 8;

/// One window over the packets `from..to` of the ring (sequence numbers), in order.
///
/// The trail lags: between two packets that are looked at it stays where it was, so the window
/// from the trail to a packet holds at least that packet's true window. If even it cannot set a
/// new maximum of bytes (ties are looked at) or of packets, neither can the true window, and the
/// packet is skipped; prefix sums never decrease, so the skipped packets form one stretch, found
/// by galloping ([`first_past`]). Once the trail lags by as many packets as the window has
/// ever held, that bound always fails; the count from that many packets back then tells, a
/// stretch at a time, which packets change nothing ([`steady`]).
///
/// Times are compared as ages, the nanoseconds from an older packet to a newer one (see
/// [`Stamp`]): a packet is in the window ending at a later one when its age is at most `reach`.
#[inline]
fn advance<A: Acc, S: Stamp>(w: &mut Window<A>, ring: &Ring<A, S>, from: u64, to: u64) {
    let Window {
        reach,
        mut trail,
        mut before,
        mut best_bytes,
        mut best_packets,
        mut best_start,
        mut max_packets,
        ..
    } = *w;
    // reach ≥ 0 (the scanner ensures it).
    let reach = reach as u64;
    let mut seq = from;
    if trail == 0 && seq != to {
        // While the window still reaches back to the group's first packet (a τ longer than the
        // traffic so far), each packet's window is the one before plus that packet: only the
        // last such packet can set a maximum, and it sets every one the others would have (its
        // start is theirs, so an equal maximum takes its count).
        let first = ring.at(0).stamp;
        let end = first_past(ring, seq, to, |p| S::age(p.stamp, first) > reach);
        if end != seq {
            let last = end - 1;
            let bytes = ring.at(last).upto;
            let start = ring.time(ring.at(0));
            // The group's first packet always sets the maximum.
            if seq == 0 || bytes > best_bytes {
                best_bytes = bytes;
                best_packets = end;
                best_start = start;
            } else if bytes == best_bytes && start == best_start {
                best_packets = end;
            }
            max_packets = max_packets.max(end);
            seq = end;
        }
    }
    while seq != to {
        // The group's first packet always sets the maximum; max_packets ≥ 1 after it.
        if seq != 0 {
            // trail ≤ seq, and seq − trail < max_packets exactly below this limit.
            let limit = to.min(trail + max_packets);
            if seq < limit {
                seq = match before.checked_add(best_bytes) {
                    Some(need) => first_past(ring, seq, limit, |p| { p.upto } >= need),
                    // No prefix sum reaches past the accumulator's range.
                    None => limit,
                };
                if seq == to {
                    break;
                }
            }
        }
        // The trail is at least `max_packets` behind, so its bound on the count no longer
        // helps: try the count from `max_packets` packets back instead (see `steady`).
        if max_packets != 0 && seq >= trail + max_packets {
            let end = steady(ring, seq, to, max_packets, reach, best_bytes, best_start);
            if end != seq {
                // The window of packet end − 1 starts after packet end − 1 − max_packets.
                trail = end - max_packets;
                before = ring.at(trail - 1).upto;
                seq = end;
                continue;
            }
        }
        let Slot { stamp, upto } = ring.at(seq);
        // A packet always stays in its own window (age 0): the trail stops at it at the
        // latest, and needs no check against the head.
        let mut slot = ring.at(trail);
        let mut steps = 0;
        while S::age(stamp, slot.stamp) > reach {
            if steps == WALK {
                trail = first_past(ring, trail + 1, seq, |p| S::age(stamp, p.stamp) <= reach);
                before = ring.at(trail - 1).upto;
                slot = ring.at(trail);
                break;
            }
            before = slot.upto;
            trail = trail.wrapping_add(1);
            slot = ring.at(trail);
            steps += 1;
        }
        let bytes = upto - before;
        let packets = seq - trail + 1;
        // A new maximum takes the window (the group's first packet always does); at an equal
        // maximum with the same start, more (zero-size) packets: the window starting there
        // holds them too.
        if seq == 0 || bytes > best_bytes {
            best_bytes = bytes;
            best_packets = packets;
            best_start = ring.time(slot);
        } else if bytes == best_bytes && ring.time(slot) == best_start {
            best_packets = packets;
        }
        max_packets = max_packets.max(packets);
        seq = seq.wrapping_add(1);
    }
    *w = Window {
        trail,
        before,
        best_bytes,
        best_packets,
        best_start,
        max_packets,
        ..*w
    };
}

/// The end of the stretch of packets from `seq` on (before `to`) that provably change nothing:
/// each one's window holds at most `max_packets` packets (the packet `max_packets` back is out
/// of its reach), so it holds at most the bytes of those packets, and that bound is below the
/// best, or equal to it with every such window starting after `best_start` (a tie then changes
/// nothing, see [`advance`]). `seq − max_packets` must be held (at or after the trail), and
/// `max_packets` ≥ 1.
///
/// This is where a group sending at a steady rate spends its time: every window shorter than a
/// burst holds its most packets and bytes at every packet of it, so the lagging trail's bound
/// passes the best one packet after each look, and each look finds a tie. A pair of hosts in a
/// ring step looked at 11.5 packets per packet over 20 windows, against 1.7 for the aggregate
/// (benches/RESULTS.md, "Twenty-third landing"); this test reads two or three slots per packet
/// and moves no trail.
#[inline]
fn steady<A: Acc, S: Stamp>(
    ring: &Ring<A, S>,
    seq: u64,
    to: u64,
    max_packets: u64,
    reach: u64,
    best_bytes: A,
    best_start: i64,
) -> u64 {
    let mut p = seq;
    // The earliest start a packet's window can have, packet p − max_packets + 1, only moves on
    // with p: once it is after `best_start`, no later packet of the stretch can tie from it, and
    // the bound must exceed the best. Told once here, so that the loop tests ties only while
    // they can matter (a tie's test was a second unpredictable branch per packet).
    let ties = p < to && ring.time(ring.at(p - max_packets + 1)) <= best_start;
    while p < to {
        let (newest, back) = (ring.at(p), ring.at(p - max_packets));
        if S::age(newest.stamp, back.stamp) <= reach {
            break;
        }
        let bound = newest.upto - back.upto;
        if bound > best_bytes
            || (ties
                && bound == best_bytes
                && ring.time(ring.at(p - max_packets + 1)) <= best_start)
        {
            break;
        }
        p += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reference;

    #[test]
    fn a_ring_that_may_not_grow_stops_the_scan_with_an_error() {
        // Packets at one instant all lie within every window: the ring holds them all, up to
        // its limit (4 GB; 64 slots here), then tells instead of the allocation aborting.
        let at_limit = |n: u64| {
            let mut env = Envelope::new(&[1, 1_000], Closure::HalfOpen);
            if let Width::Short(w) = &mut env.inner {
                w.ring.max_bytes = 64 * std::mem::size_of::<Slot<u64, u32>>();
            }
            for _ in 0..n {
                env.push(5, 100);
            }
            let mut rows = Vec::new();
            env.rows(By::All, GroupKey::All, &mut rows).map(|()| rows)
        };
        let rows = at_limit(64).expect("64 packets fit");
        assert_eq!((rows[0].bytes, rows[0].packets_in_window), (6_400, 64));
        let e = at_limit(65).expect_err("the 65th does not");
        assert_eq!(e.kind, crate::ErrorKind::LimitExceeded);
        // Packets held in memory, not the size of the result nor the capture's structure.
        assert_eq!(e.limit, Some(Limit::HeldPackets));
        assert!(e.reason.contains("more than 64 packets"), "{e}");
        assert!(e.reason.contains("largest window (1000 ns)"), "{e}");
        // Packets after it cost nothing: the windows and the ring are gone.
        assert!(at_limit(100_000).is_err());
    }

    /// The envelope of `packets`, every row checked against the quadratic oracle; returned for
    /// checks of its state.
    fn matches_reference(
        packets: &[(i64, u64)],
        windows: &[i64],
        closure: Closure,
        ctx: &str,
    ) -> Envelope {
        let mut env = Envelope::new(windows, closure);
        for &(t, s) in packets {
            env.push(t, s);
        }
        let mut rows = Vec::new();
        env.rows(By::All, GroupKey::All, &mut rows).unwrap();
        assert_eq!(rows.len(), windows.len(), "{ctx}");
        for (row, &tau) in rows.iter().zip(windows) {
            let want = reference::envelope(packets, tau, closure).unwrap();
            let got = (
                u128::from(row.bytes),
                row.packets_in_window,
                row.start_ns,
                row.max_packets,
            );
            let want = (
                want.bytes,
                want.packets_in_window,
                want.start_ns,
                want.max_packets,
            );
            assert_eq!(got, want, "{ctx}, τ {tau}, {closure:?}");
        }
        env
    }

    #[test]
    fn batches_equal_brute_force_across_boundaries() {
        // Many batches of packets, with bursts, ties, equal and zero sizes, against the
        // quadratic oracle, for windows from below the packet spacing to above the span.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Lengths around and past two batches, so that windows carry their state across them.
        for trace in 0..3 {
            let n = [
                BATCH as usize - 1,
                BATCH as usize + 1,
                2 * BATCH as usize + 517,
            ][trace];
            let mut ts = -5_000i64;
            let packets: Vec<(i64, u64)> = (0..n)
                .map(|_| {
                    let r = next();
                    ts += match r % 7 {
                        0 => 0,
                        1..=4 => (r >> 8) as i64 % 120,
                        _ => (r >> 8) as i64 % 5_000,
                    };
                    let size = [0, 66, 1514, 1514, 9000][((r >> 40) % 5) as usize];
                    (ts, size)
                })
                .collect();
            // Without and with a window too long for short stamps.
            for windows in [
                &[1, 7, 100, 250, 1_000, 10_000][..],
                &[1, 7, 1_000, 1 << 40],
            ] {
                for closure in [Closure::HalfOpen, Closure::Closed] {
                    matches_reference(&packets, windows, closure, &format!("trace {trace}"));
                }
            }
        }
    }

    #[test]
    fn steady_stretches_change_nothing() {
        // `steady`'s promise, packet by packet against brute force: every packet it passes over
        // has a window of at most `max_packets` packets that neither beats the best bytes nor
        // ties them from `best_start`. States are drawn so that ties, equal starts and packets
        // at one instant are common.
        let mut rng = crate::test_rng::Rng(0x005E_AD1E_550F_7E57);
        let mut passed = 0;
        for case in 0..20_000 {
            let n = 2 + rng.below(40) as usize;
            let mut ring = Ring::<u64, i64>::new();
            let (mut ts, mut upto) = (0i64, 0u64);
            let mut packets = Vec::new();
            for _ in 0..n {
                ts += [0, 1, 1, 2, 5][rng.below(5) as usize];
                upto += [0, 1, 1, 1, 3][rng.below(5) as usize];
                ring.push(ts, upto);
                packets.push((ts, upto));
            }
            let reach = rng.below(8);
            let max_packets = 1 + rng.below(6);
            if max_packets >= n as u64 {
                continue;
            }
            let seq = max_packets + rng.below(n as u64 - max_packets);
            // Bytes and start of some window of `max_packets` packets, sometimes nudged.
            let q = max_packets + rng.below(n as u64 - max_packets);
            let best_bytes = (packets[q as usize].1 - packets[(q - max_packets) as usize].1)
                .saturating_add_signed(rng.below(3) as i64 - 1);
            let best_start = packets[(q - max_packets + 1) as usize].0 + rng.below(3) as i64 - 1;
            let end = steady(
                &ring,
                seq,
                n as u64,
                max_packets,
                reach,
                best_bytes,
                best_start,
            );
            for p in seq as usize..end as usize {
                let (t, sum) = packets[p];
                let first = packets[..=p]
                    .iter()
                    .position(|&(s, _)| t - s <= reach as i64)
                    .unwrap_or(p);
                let count = (p - first + 1) as u64;
                let bytes = sum - first.checked_sub(1).map_or(0, |b| packets[b].1);
                let start = packets[first].0;
                assert!(
                    count <= max_packets
                        && bytes <= best_bytes
                        && !(bytes == best_bytes && start == best_start),
                    "case {case}: packet {p} of {packets:?}, reach {reach}, max_packets \
                     {max_packets}, best {best_bytes} from {best_start}"
                );
                passed += 1;
            }
        }
        // The stretches are not all empty.
        assert!(passed > 1_000, "{passed}");
    }

    #[test]
    fn steady_streams_equal_brute_force() {
        // Packets at a steady rate keep every short window at its most packets and bytes, which
        // `steady` clears a stretch at a time: equal sizes at a fixed spacing, windows a
        // nanosecond either side of whole multiples of it, and now and then a small packet, a
        // zero-size one at the same instant, a slip of a nanosecond, or a pause.
        let mut rng = crate::test_rng::Rng(0x57EA_D1E5_7EAD_1E55);
        for trace in 0..24 {
            let spacing = [1, 3, 120, 1_230][trace % 4];
            let mut ts = 0i64;
            let packets: Vec<(i64, u64)> = (0..2 * BATCH as usize + 300)
                .map(|_| {
                    let size = match rng.below(40) {
                        0 if trace % 3 != 0 => 66,
                        1 if trace % 3 == 1 => 0,
                        _ => 1514,
                    };
                    ts += match rng.below(200) {
                        0 if trace >= 8 => spacing * 40,
                        1 if trace >= 16 => 1,
                        _ if size == 0 => 0,
                        _ => spacing,
                    };
                    (ts, size)
                })
                .collect();
            let windows: Vec<i64> = [1, 2, 5, 16]
                .iter()
                .flat_map(|&k| [k * spacing - 1, k * spacing, k * spacing + 1])
                .filter(|&w| w > 0)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            for closure in [Closure::HalfOpen, Closure::Closed] {
                matches_reference(&packets, &windows, closure, &format!("steady {trace}"));
            }
        }
    }

    #[test]
    fn sums_widen_exactly_past_u64() {
        // Sizes near 2⁶² make the group's bytes pass 2⁶⁴ − 1 mid-trace, with windows holding
        // packets from both sides of the switch; E(τ) saturates, everything else stays exact.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for trace in 0..20 {
            let mut ts = 0i64;
            let packets: Vec<(i64, u64)> = (0..3 * BATCH as usize / 2)
                .map(|_| {
                    let r = next();
                    ts += (r % 50) as i64;
                    let size = match r >> 60 {
                        0 => (1 << 62) + (r >> 20) % 1000,
                        1 => 0,
                        _ => (r >> 8) % 1500,
                    };
                    (ts, size)
                })
                .collect();
            let windows = [1, 10, 100, 1_000, 1 << 40];
            let mut env = Envelope::new(&windows, Closure::HalfOpen);
            for &(t, s) in &packets {
                env.push(t, s);
            }
            assert!(
                matches!(env.inner, Width::Wide(_)),
                "trace {trace} stayed narrow"
            );
            let mut rows = Vec::new();
            env.rows(By::All, GroupKey::All, &mut rows).unwrap();
            for (row, &tau) in rows.iter().zip(&windows) {
                let want = reference::envelope(&packets, tau, Closure::HalfOpen).unwrap();
                assert_eq!(row.bytes, u64::try_from(want.bytes).unwrap_or(u64::MAX));
                assert_eq!(row.max_packets, want.max_packets, "trace {trace}, τ {tau}");
                assert_eq!(
                    (row.packets_in_window, row.start_ns),
                    (want.packets_in_window, want.start_ns),
                    "trace {trace}, τ {tau}"
                );
            }
        }
    }

    #[test]
    fn skips_stay_exact_when_the_bound_passes_u64() {
        // A burst of three packets near 2⁶² sets the best, then thousands of small packets:
        // trail prefix plus best passes 2⁶⁴ − 1 while the group's bytes do not (the sums stay
        // narrow), so the skip can only rely on the packet count.
        let big = (1u64 << 62) - 7;
        let mut packets = vec![(0i64, big), (1, big), (2, big)];
        let mut ts = 10;
        for i in 0..3 * BATCH {
            ts += 1 + (i % 5) as i64 * 40;
            packets.push((ts, 1 + i % 3));
            if i % 700 == 0 {
                // A tight cluster: more packets in a short window than ever before.
                for _ in 0..(4 + i / 300) {
                    packets.push((ts, 0));
                }
            }
        }
        let windows = [1, 3, 50, 1_000, 100_000, 1 << 40];
        for closure in [Closure::HalfOpen, Closure::Closed] {
            let env = matches_reference(&packets, &windows, closure, "narrow");
            assert!(matches!(env.inner, Width::Long(_)));
        }
    }

    /// Packets with gaps from nanoseconds to hours, from before 0 to past several multiples of
    /// 2³² ns, so that short stamps wrap and trails must be moved on before a packet arrives.
    fn far_apart(seed: u64, n: usize) -> Vec<(i64, u64)> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut ts = -(5i64 << 32) - 12_345;
        (0..n)
            .map(|_| {
                let r = next();
                ts += match r % 11 {
                    0 => 0,
                    1..=5 => (r >> 8) as i64 % 200,
                    6 | 7 => (r >> 8) as i64 % 3_000_000_000,
                    8 => (u32::MAX as i64 - 2) + (r >> 8) as i64 % 5,
                    9 => 3_600_000_000_000,
                    _ => (r >> 8) as i64 % (1 << 34),
                };
                (ts, [0, 66, 1514, 9000][((r >> 40) % 4) as usize])
            })
            .collect()
    }

    #[test]
    fn short_stamps_stay_exact_across_long_gaps() {
        // Windows up to the longest that short stamps take (reach 2³² − 1), with gaps around
        // and far past 2³² ns: every row equals the oracle's, and the stamps stayed short.
        let longest_half_open = [1, 150, 2_000_000_000, 1 << 32];
        let longest_closed = [1, 150, 2_000_000_000, u32::MAX as i64];
        for seed in 1..13u64 {
            let packets = far_apart(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 3 * BATCH as usize);
            for (windows, closure) in [
                (&longest_half_open, Closure::HalfOpen),
                (&longest_closed, Closure::Closed),
            ] {
                let env = matches_reference(&packets, windows, closure, &format!("seed {seed}"));
                assert!(matches!(env.inner, Width::Short(_)), "seed {seed}");
            }
            // One nanosecond longer and the stamps are whole timestamps.
            let env = matches_reference(&packets, &[7, 1 + (1 << 32)], Closure::HalfOpen, "long");
            assert!(matches!(env.inner, Width::Long(_)));
        }
    }

    /// Collects what [`Envelope::recent`] keeps.
    impl Keep for Vec<(i64, u64)> {
        fn reserve(&mut self, n: usize) {
            Vec::reserve(self, n);
        }

        fn keep(&mut self, ts: i64, size: u64) {
            self.push((ts, size));
        }
    }

    #[test]
    fn recent_packets_read_back_exactly_from_short_stamps() {
        // What a chunk hands over at its end: the packets within the largest reach of the last
        // one, with their whole timestamps, copied or as the ring itself.
        for seed in 1..9u64 {
            let packets = far_apart(
                seed.wrapping_mul(0xD1B5_4A32_D192_ED03),
                2 * BATCH as usize + 77,
            );
            let windows = [10, 4_000_000_000];
            let mut env = Envelope::new(&windows, Closure::HalfOpen);
            env.push_run(packets.iter().copied());
            assert!(matches!(env.inner, Width::Short(_)));
            let last = packets.last().unwrap().0;
            let from = last - 3_999_999_999;
            let mut got = Vec::new();
            env.recent(from, &mut got);
            let want: Vec<(i64, u64)> = packets.iter().copied().filter(|p| p.0 >= from).collect();
            assert_eq!(got, want, "seed {seed}");
            let taken = env.take_recent(from).unwrap();
            let read: Vec<(i64, u64)> = (0..taken.len()).map(|i| taken.at(i)).collect();
            assert_eq!(read, want, "seed {seed}");
        }
    }

    #[test]
    fn ring_keeps_order_across_growth() {
        let mut ring = Ring::<u64, u32>::new();
        for i in 0..100i64 {
            ring.push(i, i as u64 * 3);
            if i % 3 == 0 {
                ring.tail = ring.tail.wrapping_add(1);
            }
        }
        let mut seq = ring.tail;
        let mut expect = ring.tail as i64;
        while seq != ring.head {
            assert_eq!(ring.time(ring.at(seq)), expect);
            assert_eq!({ ring.at(seq).upto }, expect as u64 * 3);
            seq += 1;
            expect += 1;
        }
        // Only the live packets (100 pushed, 34 released) bound the capacity.
        assert!(ring.slots.len() <= 128);
    }

    /// Bursts of 3,000 packets at most 1 ns apart (each fills a ring past [`TRIM_MIN`]), with
    /// quiet spells shorter and longer than the windows (past 2³² ns, long stamps) between them.
    fn bursts_and_silences(seed: u64) -> Vec<(i64, u64)> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut ts = 0i64;
        let mut packets = Vec::new();
        for burst in 0..7 {
            for _ in 0..3_000 {
                let r = next();
                ts += (r % 2) as i64;
                packets.push((ts, [0, 66, 1514][(r >> 20) as usize % 3]));
            }
            ts += [10, 900, 5_000, 2_000_000, 5_000_000_000][(burst + seed as usize) % 5];
        }
        packets
    }

    #[test]
    fn trimming_between_packets_keeps_the_envelope_exact() {
        // A trim between two packets, told the next one's time, changes no row: neither when
        // the group is idle past the largest reach (its held packets are let go) nor when the
        // ring merely holds few packets for its slots (shrunk). Compared with the envelope
        // untrimmed, which the tests above hold to the quadratic oracle.
        let rows_of = |env: &mut Envelope| {
            let mut rows = Vec::new();
            env.rows(By::All, GroupKey::All, &mut rows).unwrap();
            rows
        };
        for seed in 1..7u64 {
            let packets = bursts_and_silences(seed);
            for windows in [&[1, 50, 1_000][..], &[3, 4_000, (1 << 32) + 2]] {
                for closure in [Closure::HalfOpen, Closure::Closed] {
                    let mut plain = Envelope::new(windows, closure);
                    let mut env = Envelope::new(windows, closure);
                    let mut trimmed = 0;
                    for (i, &(t, size)) in packets.iter().enumerate() {
                        let quiet = i > 0 && t - packets[i - 1].0 > 500;
                        if i % 97 == 0 || quiet {
                            let before = env.held_slots();
                            env.trim(t);
                            trimmed += usize::from(env.held_slots() < before);
                        }
                        env.push(t, size);
                        plain.push(t, size);
                    }
                    let ctx = format!("seed {seed}, {windows:?}, {closure:?}");
                    assert!(trimmed > 0, "{ctx}: no trim let anything go");
                    assert_eq!(rows_of(&mut env), rows_of(&mut plain), "{ctx}");
                }
            }
        }
        // And the oracle itself on one trace, trimmed at every quiet spell.
        let packets = &bursts_and_silences(99)[..6_000];
        let mut env = Envelope::new(&[1_000], Closure::HalfOpen);
        for &(t, size) in packets {
            env.trim(t);
            env.push(t, size);
        }
        let row = rows_of(&mut env).remove(0);
        let want = reference::envelope(packets, 1_000, Closure::HalfOpen).unwrap();
        assert_eq!(
            (
                u128::from(row.bytes),
                row.packets_in_window,
                row.start_ns,
                row.max_packets
            ),
            (
                want.bytes,
                want.packets_in_window,
                want.start_ns,
                want.max_packets
            )
        );
    }

    #[test]
    fn an_idle_group_lets_its_burst_go() {
        // 100,000 packets 1 ns apart, then silence: without a trim the ring kept 131,072 slots
        // (1.5 MB) to the end of the scan, for every flow that ever had such a burst.
        let mut env = Envelope::new(&[1_000, 1_000_000], Closure::HalfOpen);
        for t in 0..100_000 {
            env.push(t, 100);
        }
        assert!(env.held_slots() >= 100_000);
        // Not yet: a packet at 1,099,998 still has the last one in its 1 ms window.
        env.trim(1_099_998);
        assert!(env.held_slots() >= 100_000);
        env.trim(1_100_000);
        assert!(env.held_slots() <= TRIM_MIN, "{}", env.held_slots());
        env.push(1_100_000, 7);
        let mut rows = Vec::new();
        env.rows(By::All, GroupKey::All, &mut rows).unwrap();
        assert_eq!((rows[0].bytes, rows[0].packets_in_window), (100_000, 1_000));
        assert_eq!(
            (rows[1].bytes, rows[1].packets_in_window),
            (10_000_000, 100_000)
        );
    }

    #[test]
    fn a_trim_closes_an_open_head_or_leaves_it_whole() {
        // A time chunk's head (`keep_head`) under trims. One at or before the head's end finds
        // every packet within the largest reach of the first: no trail has left packet 0 and
        // the ring is more than half full, so the trim neither lets go nor shrinks (either
        // would lose the open head, see `trim`). One past the end closes the head, whether it
        // then lets go and shrinks or not, and the group may go on. The head read back is the
        // packets up to its end, exactly; no row changes.
        let rows_of = |env: &mut Envelope| {
            let mut rows = Vec::new();
            env.rows(By::All, GroupKey::All, &mut rows).unwrap();
            rows
        };
        let mut rng = crate::test_rng::Rng(71);
        let (mut open_trims, mut closing_trims, mut shrunk) = (0, 0, 0);
        for case in 0..600 {
            let closure = [Closure::HalfOpen, Closure::Closed][case % 2];
            let long = 1 + rng.below(50_000) as i64;
            let windows = match case % 3 {
                0 => vec![1, long],
                1 => vec![long],
                _ => vec![3, long, (1 << 32) + rng.below(1_000) as i64],
            };
            let reach = reach(*windows.last().unwrap(), closure);
            let first = rng.below(1 << 40) as i64 - (1 << 39);
            let until = first + reach;
            let mut env = Envelope::new(&windows, closure);
            let mut plain = Envelope::new(&windows, closure);
            env.keep_head(until);
            let n = 1 + rng.below(3_000);
            let step = reach as u64 / n;
            let (mut ts, mut pushed) = (first, Vec::new());
            for i in 0..n {
                ts = until.min(ts + rng.below(step + 1) as i64);
                if i + 1 == n && rng.below(2) == 0 {
                    ts = until;
                }
                let size = rng.below(1_500);
                env.push(ts, size);
                plain.push(ts, size);
                pushed.push((ts, size));
                if rng.below(8) == 0 {
                    ts += rng.below((until - ts) as u64 + 1) as i64;
                    open_trims += usize::from(env.held_slots() > TRIM_MIN);
                    env.trim(ts);
                    each!(&env.inner, w => {
                        let (len, slots) = (w.ring.len() as usize, w.ring.slots.len());
                        assert!(matches!(w.head, Head::Open { .. }), "case {case}");
                        assert_eq!(w.ring.tail, 0, "case {case}");
                        assert!(slots == 16 || 2 * len > slots, "case {case}: {len} in {slots}");
                    });
                }
            }
            // Past the head's end: by one ns, or by more than the reach past the last packet.
            match rng.below(3) {
                0 => {}
                past => {
                    ts = if past == 1 { until + 1 } else { ts + reach + 1 };
                    let before = env.held_slots();
                    closing_trims += usize::from(before > TRIM_MIN);
                    env.trim(ts);
                    shrunk += usize::from(env.held_slots() < before);
                    // (A ring of few slots is not looked at: the next packet closes its head.)
                    each!(&env.inner, w => assert!(
                        before <= TRIM_MIN
                            || matches!(w.head, Head::Closed { .. } | Head::Copied(_)),
                        "case {case}: {:?}",
                        w.head
                    ));
                }
            }
            // The group goes on (or not), dense enough for its ring to come round.
            for _ in 0..rng.below(6_000) {
                ts += rng.below(1 + reach as u64 / 500) as i64;
                let size = rng.below(1_500);
                env.push(ts, size);
                plain.push(ts, size);
                pushed.push((ts, size));
                if rng.below(64) == 0 {
                    env.trim(ts);
                }
            }
            assert_eq!(rows_of(&mut env), rows_of(&mut plain), "case {case}");
            // Every packet up to the head's end, those after a head left open included.
            let head: Vec<(i64, u64)> = pushed.into_iter().filter(|p| p.0 <= until).collect();
            let got = match env.take_head(rng.below(2) == 0).expect("a head") {
                Kept::Ring(r) => (0..r.len()).map(|i| r.at(i)).collect(),
                Kept::Narrow { base, v } => v
                    .iter()
                    .map(|&(d, size)| (base + i64::from(d), u64::from(size)))
                    .collect(),
                Kept::Wide(v) => v,
            };
            assert!(
                got == head,
                "case {case}: {} packets for {}",
                got.len(),
                head.len()
            );
        }
        assert!(open_trims > 10_000 && closing_trims > 200 && shrunk > 100);
    }

    /// The envelope alone on a capture (ENVELOPE_BENCH=path) at the benchmark's 20 windows, in
    /// CPU time of this thread (best of 5): `cargo test --release envelope_bench -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn envelope_bench() {
        let Some(packets) = crate::bench_support::packets_of("ENVELOPE_BENCH") else {
            return;
        };
        let us = 1_000i64;
        // Only the windows from ENVELOPE_MIN_US to ENVELOPE_MAX_US, where set: what each costs.
        let bound = |var: &str, or: i64| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
                .map_or(or, |v| v.saturating_mul(us))
        };
        let windows: Vec<i64> = [
            1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000,
            100_000, 200_000, 500_000, 1_000_000,
        ]
        .iter()
        .map(|&w| w * us)
        .filter(|&w| w >= bound("ENVELOPE_MIN_US", 0) && w <= bound("ENVELOPE_MAX_US", i64::MAX))
        .collect();
        let cpu = crate::bench_support::thread_cpu_seconds;
        let mut best = f64::MAX;
        let mut rows = Vec::new();
        for _ in 0..5 {
            let t0 = cpu();
            let mut env = Envelope::new(&windows, Closure::HalfOpen);
            env.push_run(packets.iter().copied());
            rows.clear();
            env.rows(By::All, GroupKey::All, &mut rows).unwrap();
            best = best.min(cpu() - t0);
        }
        let check: u64 = rows.iter().map(|r| r.bytes).sum();
        println!(
            "{} packets, {} windows: {:.2} ns/packet (check {check})",
            packets.len(),
            windows.len(),
            best * 1e9 / packets.len() as f64
        );
    }
}
