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

use super::search::first_where;
use super::{By, Closure, EnvelopeRow, GroupKey};
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

/// Recent packets, addressed by absolute sequence numbers: the low bits of a sequence number pick
/// the slot, so pointers into the ring survive growth without rebasing. A slot holds a packet's
/// timestamp and the group's bytes up to and including it (a prefix sum), so any window's bytes
/// are one subtraction and a bound over a run of packets costs no more than one packet. Timestamp
/// and prefix share a slot (one cache line serves both), so each window's trailing pointer is one
/// sequential memory stream: with 20 windows, two arrays would mean 40 streams, more than the
/// hardware prefetchers follow.
#[derive(Debug, Clone)]
struct Ring<A> {
    slots: Vec<Slot<A>>,
    /// Oldest packet still needed (by the largest window).
    tail: u64,
    /// Sequence number the next packet gets.
    head: u64,
    /// Bytes of every packet pushed so far.
    total: A,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot<A> {
    ts: i64,
    /// Bytes of the group's packets up to and including this one.
    upto: A,
}

impl<A: Acc> Ring<A> {
    const INITIAL: usize = 16;

    fn new() -> Self {
        Ring {
            slots: vec![Slot::default(); Self::INITIAL],
            tail: 0,
            head: 0,
            total: A::default(),
        }
    }

    fn len(&self) -> u64 {
        self.head.wrapping_sub(self.tail)
    }

    #[inline(always)]
    fn at(&self, seq: u64) -> Slot<A> {
        // The length is a power of two: masking with len − 1 keeps the index in bounds, which
        // the compiler sees, so no bounds check is left in the loop.
        let slots = &self.slots[..];
        slots[(seq as usize) & (slots.len() - 1)]
    }

    #[inline]
    fn push(&mut self, ts: i64, upto: A) {
        if self.len() == self.slots.len() as u64 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        self.slots[(self.head as usize) & mask] = Slot { ts, upto };
        self.head = self.head.wrapping_add(1);
        self.total = upto;
    }

    /// Double the capacity, moving every live packet to its slot under the new mask.
    ///
    /// In place: the ring is full, so each slot holds one live packet, which either stays or
    /// moves to the new upper half. Growing the allocation itself is a `realloc`, which the
    /// allocator does by remapping pages when the ring is large: the old and the new ring never
    /// exist side by side, and a ring of hundreds of MB does not briefly need half as much again.
    #[cold]
    fn grow(&mut self) {
        let old = self.slots.len();
        let cap = old.saturating_mul(2);
        self.slots.reserve_exact(cap - old);
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
    slots: Vec<Slot<u64>>,
    /// Sequence number of the first packet, and how many there are.
    start: u64,
    len: usize,
    /// Bytes up to the packet before the first.
    before: u64,
}

impl Recent {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Packet `i` (< `len`) in its slot of the ring.
    #[inline]
    fn slot(&self, i: usize) -> Slot<u64> {
        let mask = self.slots.len() - 1;
        self.slots[self.start.wrapping_add(i as u64) as usize & mask]
    }

    /// Bytes of the packets before packet `i` (≤ `len`), counted from `before`.
    #[inline]
    fn upto(&self, i: usize) -> u64 {
        i.checked_sub(1).map_or(self.before, |j| self.slot(j).upto)
    }

    /// Timestamp and size of packet `i` (< `len`).
    #[inline]
    pub(crate) fn at(&self, i: usize) -> (i64, u64) {
        let slot = self.slot(i);
        (slot.ts, slot.upto - self.upto(i))
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

/// The same envelope over u64 or (past 2⁶⁴ − 1 bytes in the group) u128 sums.
#[derive(Debug, Clone)]
enum Width {
    Narrow(Windows<u64>),
    Wide(Windows<u128>),
}

/// Packets are pushed into the ring and the windows catch up in batches, one window at a time
/// over the whole batch: each window's loop then runs with its state in registers, and its
/// data-dependent branches follow one window's regular pattern instead of twenty windows'
/// interleaved ones, which the branch predictor cannot follow.
#[derive(Debug, Clone)]
struct Windows<A> {
    ring: Ring<A>,
    /// Sorted by reach, so the last window is the one that decides what the ring must keep.
    windows: Vec<Window<A>>,
    /// Sequence number of the first packet the windows have not seen yet.
    done: u64,
}

/// Packets pushed before the windows catch up: enough to amortise the per-window setup, few
/// enough (16 KB of ring slots) to stay in L1 cache. 1024 measured 3–4 % faster than 128.
const BATCH: u64 = 1024;

impl Envelope {
    /// `windows_ns` must be sorted ascending, deduplicated and positive (the scanner ensures it).
    pub(crate) fn new(windows_ns: &[i64], closure: Closure) -> Self {
        Envelope {
            inner: Width::Narrow(Windows::new(windows_ns, closure)),
        }
    }

    /// Add a packet; packets must come in timestamp order.
    #[inline]
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        match &mut self.inner {
            Width::Narrow(w) => match w.ring.total.checked_add(size) {
                Some(upto) => w.push(ts, upto),
                None => {
                    let mut wide = w.widen();
                    let upto = wide.ring.total + u128::from(size);
                    wide.push(ts, upto);
                    self.inner = Width::Wide(wide);
                }
            },
            Width::Wide(w) => {
                let upto = w.ring.total.saturating_add(u128::from(size));
                w.push(ts, upto)
            }
        }
    }

    /// [`Envelope::push`] for consecutive packets: the width is looked at once, not per packet.
    #[inline]
    pub(crate) fn push_run(&mut self, run: impl IntoIterator<Item = (i64, u64)>) {
        let mut run = run.into_iter();
        if let Width::Narrow(w) = &mut self.inner {
            if w.windows.is_empty() {
                return;
            }
            for (ts, size) in run.by_ref() {
                let Some(upto) = w.ring.total.checked_add(size) else {
                    // Past 2⁶⁴ − 1 bytes: this packet and the rest one by one, in u128.
                    self.push(ts, size);
                    break;
                };
                w.push(ts, upto);
            }
        }
        for (ts, size) in run {
            self.push(ts, size);
        }
    }

    /// Every packet still held with a timestamp ≥ `from`, oldest first, into `to`. What is
    /// held is at least every packet within the largest reach of the latest one (merging time
    /// chunks needs them, see `engine::chunk`).
    pub(crate) fn recent(&mut self, from: i64, to: &mut impl Keep) {
        match &mut self.inner {
            Width::Narrow(w) => w.recent(from, to),
            Width::Wide(w) => w.recent(from, to),
        }
    }

    /// [`Envelope::recent`] without a copy: the ring itself, from the first packet at or after
    /// `from`. `None` once the sums are u128 (then use `recent`). The envelope is spent: take
    /// its rows first.
    pub(crate) fn take_recent(&mut self, from: i64) -> Option<Recent> {
        let Width::Narrow(w) = &mut self.inner else {
            return None;
        };
        let (start, before) = w.since(from)?;
        let len = w.ring.head.wrapping_sub(start) as usize;
        Some(Recent {
            slots: std::mem::take(&mut w.ring.slots),
            start,
            len,
            before,
        })
    }

    /// One row per τ (none if the group saw no packet, which the scanner never asks for).
    pub(crate) fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<EnvelopeRow>) {
        match &mut self.inner {
            Width::Narrow(w) => w.rows(by, group, out),
            Width::Wide(w) => w.rows(by, group, out),
        }
    }
}

impl<A: Acc> Windows<A> {
    fn new(windows_ns: &[i64], closure: Closure) -> Self {
        let windows = windows_ns
            .iter()
            .map(|&tau| Window {
                tau,
                reach: match closure {
                    Closure::HalfOpen => tau.saturating_sub(1),
                    Closure::Closed => tau,
                },
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
        }
    }

    #[inline]
    fn push(&mut self, ts: i64, upto: A) {
        if self.windows.is_empty() {
            return;
        }
        self.ring.push(ts, upto);
        if self.ring.head.wrapping_sub(self.done) >= BATCH {
            self.catch_up();
        }
    }

    /// Run every window over the packets pushed since the last call.
    fn catch_up(&mut self) {
        let ring = &self.ring;
        let (from, to) = (self.done, ring.head);
        for w in &mut self.windows {
            advance(w, ring, from, to);
        }
        self.done = to;
        // Trails lag lazily, so a shorter window's trail may be older than the largest one's:
        // keep every packet any trail still points to.
        if let Some(oldest) = self.windows.iter().map(|w| w.trail).min() {
            self.ring.tail = oldest;
        }
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
            to.keep(slot.ts, (slot.upto - prev).saturating_u64());
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
        let mut seq = oldest;
        if seq != head && self.ring.at(seq).ts < from {
            seq = seek(&self.ring, seq, head, from);
        }
        let before = if seq == oldest {
            w.before
        } else {
            self.ring.at(seq - 1).upto
        };
        Some((seq, before))
    }

    fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<EnvelopeRow>) {
        // Sequence numbers count the packets pushed: none yet, no rows.
        if self.ring.head == 0 {
            return;
        }
        self.catch_up();
        out.extend(self.windows.iter().map(|w| EnvelopeRow {
            by,
            group,
            window_ns: w.tau,
            bytes: w.best_bytes.saturating_u64(),
            packets_in_window: w.best_packets,
            start_ns: w.best_start,
            max_packets: w.max_packets,
        }));
    }
}

impl Windows<u64> {
    /// The same state over u128 sums (every u64 sum converts exactly).
    #[cold]
    fn widen(&self) -> Windows<u128> {
        let ring = &self.ring;
        let mut slots = vec![Slot::default(); ring.slots.len()];
        for (wide, narrow) in slots.iter_mut().zip(&ring.slots) {
            *wide = Slot {
                ts: narrow.ts,
                upto: u128::from(narrow.upto),
            };
        }
        Windows {
            ring: Ring {
                slots,
                tail: ring.tail,
                head: ring.head,
                total: u128::from(ring.total),
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
        }
    }
}

/// The first packet in `from..=to` with a timestamp ≥ `bound`, given that `from` is earlier and
/// `to` is not (or is the head). Galloping (see [`first_where`]): a long window's trail jumps
/// over a run of packets reading a few slots of the ring instead of every one, which matters
/// when the trail is megabytes behind the head, out of cache.
#[inline]
fn seek<A: Acc>(ring: &Ring<A>, from: u64, to: u64, bound: i64) -> u64 {
    first_past(ring, from + 1, to, |p| p.ts >= bound)
}

/// The first packet in `from..to` for which `past` holds, or `to` if none does; `past` must be
/// false and then true along the ring (see [`first_where`]).
#[inline]
fn first_past<A: Acc>(ring: &Ring<A>, from: u64, to: u64, past: impl Fn(Slot<A>) -> bool) -> u64 {
    first_where(from, to, |seq| past(ring.at(seq)))
}

/// Trail steps taken one by one before the trail gallops (see [`seek`]).
const WALK: u32 = 8;

/// One window over the packets `from..to` of the ring (sequence numbers), in order.
///
/// The trail lags: between two packets that are looked at it stays where it was, so the window
/// from the trail to a packet holds at least that packet's true window. If even it cannot set a
/// new maximum of bytes (ties are looked at) or of packets, neither can the true window, and the
/// packet is skipped; prefix sums never decrease, so the skipped packets form one stretch, found
/// by galloping ([`first_past`]).
#[inline]
fn advance<A: Acc>(w: &mut Window<A>, ring: &Ring<A>, from: u64, to: u64) {
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
    let mut seq = from;
    if trail == 0 && seq != to {
        // While the window still reaches back to the group's first packet (a τ longer than the
        // traffic so far), each packet's window is the one before plus that packet: only the
        // last such packet can set a maximum, and it sets every one the others would have (its
        // start is theirs, so an equal maximum takes its count).
        let last_in = ring.at(0).ts.saturating_add(reach);
        let end = first_past(ring, seq, to, |p| p.ts > last_in);
        if end != seq {
            let last = end - 1;
            let bytes = ring.at(last).upto;
            let start = ring.at(0).ts;
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
                    Some(need) => first_past(ring, seq, limit, |p| p.upto >= need),
                    // No prefix sum reaches past the accumulator's range.
                    None => limit,
                };
                if seq == to {
                    break;
                }
            }
        }
        let Slot { ts, upto } = ring.at(seq);
        // reach ≥ 0, so a packet always stays in its own window: the trail stops at it at the
        // latest, and needs no check against the head.
        let bound = ts.saturating_sub(reach);
        let mut slot = ring.at(trail);
        let mut steps = 0;
        while slot.ts < bound {
            if steps == WALK {
                trail = seek(ring, trail, seq, bound);
                before = ring.at(trail - 1).upto;
                slot = ring.at(trail);
                break;
            }
            before = slot.upto;
            trail = trail.wrapping_add(1);
            slot = ring.at(trail);
            steps += 1;
        }
        let start = slot.ts;
        let bytes = upto - before;
        let packets = seq - trail + 1;
        // A new maximum takes the window (the group's first packet always does); at an equal
        // maximum with the same start, more (zero-size) packets: the window starting there
        // holds them too.
        if seq == 0 || bytes > best_bytes {
            best_bytes = bytes;
            best_packets = packets;
            best_start = start;
        } else if bytes == best_bytes && start == best_start {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reference;

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
        env.rows(By::All, GroupKey::All, &mut rows);
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
            let windows = [1, 7, 100, 250, 1_000, 10_000, 1 << 40];
            for closure in [Closure::HalfOpen, Closure::Closed] {
                matches_reference(&packets, &windows, closure, &format!("trace {trace}"));
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
            env.rows(By::All, GroupKey::All, &mut rows);
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
            assert!(matches!(env.inner, Width::Narrow(_)));
        }
    }

    #[test]
    fn ring_keeps_order_across_growth() {
        let mut ring = Ring::<u64>::new();
        for i in 0..100i64 {
            ring.push(i, i as u64 * 3);
            if i % 3 == 0 {
                ring.tail = ring.tail.wrapping_add(1);
            }
        }
        let mut seq = ring.tail;
        let mut expect = ring.tail as i64;
        while seq != ring.head {
            assert_eq!(ring.at(seq).ts, expect);
            assert_eq!(ring.at(seq).upto, expect as u64 * 3);
            seq += 1;
            expect += 1;
        }
        // Only the live packets (100 pushed, 34 released) bound the capacity.
        assert!(ring.slots.len() <= 128);
    }
}
