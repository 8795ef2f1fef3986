//! A worker's reorder buffer for whole arrivals that leaves them where they came.
//!
//! A scanner's own buffer copies every whole arrival (112 bytes) in and out; in a two-thread
//! scan by all and pair, the worker's buffer took an eighth of its samples. The worker already
//! holds the batches the arrivals came in, so this buffer keeps only where each one is: the
//! packets that came in order are the arrivals from `start` to `end` but those it noted as out
//! of order or dropped, and only the out-of-order ones get an entry of their own (a heap of
//! timestamp and place). It orders by the batch's packed timestamps, so each arrival is read
//! once, when released; each batch is kept until none of its arrivals is waiting.
//!
//! It makes every decision of a scanner's own buffer ([`Reorder`]) with the same horizon and
//! policy, at the same packets (the test below compares the two): the same packets are released
//! in the same order after the same pushes, and a late packet is the same error. So the
//! scanners it feeds meet their errors where their own buffers would have.
//!
//! [`Reorder`]: crate::engine::reorder

use super::{Batch, Full};
use crate::engine::reorder::{late_error, release_due, too_many_waiting, MAX_HELD};
use crate::engine::{Arrival, LatePolicy};
use crate::error::Result;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// An arrival that came out of order: ordered by timestamp, then by when it came among such
/// arrivals (the FIFO's packets win ties, as in a scanner's own buffer), and found by `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Early {
    ts_ns: i64,
    order: u64,
    seq: u64,
}

/// A batch of arrivals, from the oldest with arrivals still waiting on.
struct Held {
    /// Let go once none of its arrivals waits (`left` is 0), even if an older batch is still
    /// held: a packet that waits for long (say, one far ahead in time, behind which every packet
    /// is dropped as late) then keeps its own batch, not every batch after it.
    batch: Option<Arc<Batch>>,
    /// Number of its first arrival, and how many it has.
    first: u64,
    len: u64,
    /// Its arrivals not released or dropped yet.
    left: usize,
}

impl Held {
    fn arrivals(&self) -> &[Arrival] {
        match self.batch.as_deref() {
            Some(Batch::Full(f)) => &f.arrivals,
            _ => &[],
        }
    }
}

pub(super) struct InPlace {
    horizon: i64,
    late: LatePolicy,
    latest: Option<i64>,
    /// Out-of-order arrivals so far (their tie-breaker).
    order: u64,
    early: BinaryHeap<Reverse<Early>>,
    /// The in-order packets waiting: arrivals `start..end` but those in the runs `skipped`
    /// (ascending, half-open), runs so that a flood of late packets dropped behind one that
    /// waits takes one entry, not one each.
    start: u64,
    end: u64,
    skipped: VecDeque<(u64, u64)>,
    /// How many in-order packets wait.
    in_order: usize,
    unreleased: u32,
    held: VecDeque<Held>,
    /// How long batches are but the last: an arrival's batch is then found at once (else
    /// searched for).
    batch_len: u64,
    /// Most packets left waiting after a release, as in a scanner's own buffer.
    max_held: usize,
}

impl InPlace {
    pub(super) fn new(horizon: i64, late: LatePolicy, batch_len: usize) -> Self {
        InPlace {
            horizon,
            late,
            latest: None,
            order: 0,
            early: BinaryHeap::new(),
            start: 0,
            end: 0,
            skipped: VecDeque::new(),
            in_order: 0,
            unreleased: 0,
            held: VecDeque::new(),
            batch_len: batch_len.max(1) as u64,
            max_held: MAX_HELD,
        }
    }

    /// Every arrival of a batch of whole arrivals; what can no longer be overtaken to `to`.
    pub(super) fn push(
        &mut self,
        batch: &Arc<Batch>,
        to: &mut impl FnMut(&Arrival) -> Result<()>,
    ) -> Result<()> {
        let Batch::Full(Full { lean, .. }) = &**batch else {
            return Ok(());
        };
        self.hold(batch);
        // The timestamps from the packed copy: the arrivals themselves are read once, when
        // released.
        for &(ts, ..) in lean {
            self.push_one(ts, to)?;
        }
        self.retire();
        Ok(())
    }

    /// Keep a batch whose arrivals are about to be pushed.
    fn hold(&mut self, batch: &Arc<Batch>) {
        let len = match &**batch {
            Batch::Full(f) => f.arrivals.len(),
            _ => 0,
        };
        self.held.push_back(Held {
            batch: Some(Arc::clone(batch)),
            first: self.end,
            len: len as u64,
            left: len,
        });
    }

    /// Forget the oldest batches once none of their arrivals waits.
    fn retire(&mut self) {
        while self.held.front().is_some_and(|h| h.left == 0) {
            self.held.pop_front();
        }
    }

    /// What `Reorder::push` does, for the arrival numbered `end`.
    #[inline]
    fn push_one(&mut self, ts: i64, to: &mut impl FnMut(&Arrival) -> Result<()>) -> Result<()> {
        let seq = self.end;
        self.end += 1;
        match self.latest {
            Some(latest) if ts < latest => {
                let lateness = latest.abs_diff(ts);
                if lateness > self.horizon.unsigned_abs() {
                    return match self.late {
                        LatePolicy::Drop => {
                            self.skip(seq);
                            self.done(seq);
                            Ok(())
                        }
                        LatePolicy::Error => Err(late_error(ts, latest, lateness, self.horizon)),
                    };
                }
                self.early.push(Reverse(Early {
                    ts_ns: ts,
                    order: self.order,
                    seq,
                }));
                self.order += 1;
                self.skip(seq);
            }
            _ => {
                self.latest = Some(ts);
                if self.horizon == 0 && self.in_order == 0 && self.early.is_empty() {
                    // Strictly sorted input with no horizon: nothing to wait for. Every arrival
                    // before this one is out of the buffer, so the in-order ones start after it.
                    self.start = self.end;
                    self.skipped.clear();
                    return self.release_one(seq, to);
                }
                self.in_order += 1;
            }
        }
        if !release_due(&mut self.unreleased, self.early.is_empty()) {
            return Ok(());
        }
        let latest = self.latest.unwrap_or(ts);
        self.release(latest.saturating_sub(self.horizon), to)?;
        if self.in_order + self.early.len() > self.max_held {
            return Err(too_many_waiting(self.max_held, self.horizon, latest));
        }
        Ok(())
    }

    /// Release everything left, in order.
    pub(super) fn flush(&mut self, to: &mut impl FnMut(&Arrival) -> Result<()>) -> Result<()> {
        self.release(i64::MAX, to)
    }

    /// Hand over, in (timestamp, arrival) order, every waiting packet with timestamp ≤ `bound`.
    fn release(&mut self, bound: i64, to: &mut impl FnMut(&Arrival) -> Result<()>) -> Result<()> {
        if self.early.is_empty() {
            return self.release_in_order(bound, to);
        }
        loop {
            let front = self.front();
            // Ties go to the in-order packet, which arrived first.
            let from_heap = match (front, self.early.peek()) {
                (Some((_, ts)), Some(Reverse(e))) => e.ts_ns < ts,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => return Ok(()),
            };
            if from_heap {
                match self.early.peek() {
                    Some(&Reverse(e)) if e.ts_ns <= bound => {
                        self.early.pop();
                        self.release_one(e.seq, to)?;
                    }
                    _ => return Ok(()),
                }
            } else {
                match front {
                    Some((seq, ts)) if ts <= bound => {
                        self.start = seq + 1;
                        self.in_order -= 1;
                        self.release_one(seq, to)?;
                    }
                    _ => return Ok(()),
                }
            }
        }
    }

    /// [`InPlace::release`] with no out-of-order packet waiting, the common case: the in-order
    /// packets a batch at a time, with no search per packet.
    fn release_in_order(
        &mut self,
        bound: i64,
        to: &mut impl FnMut(&Arrival) -> Result<()>,
    ) -> Result<()> {
        while self.in_order > 0 {
            self.pass_skipped();
            let Some((i, _)) = self.at(self.start) else {
                return Ok(());
            };
            let (first, len) = (self.held[i].first, self.held[i].len);
            let Some(batch) = self.held[i].batch.clone() else {
                return Ok(());
            };
            let Batch::Full(Full { arrivals, .. }) = &*batch else {
                return Ok(());
            };
            // Up to the next noted arrival, which the next round passes over.
            let stop = self.skipped.front().map_or(u64::MAX, |run| run.0);
            let mut released = 0;
            let mut outcome = Ok(());
            for (seq, a) in (first..stop.min(first + len))
                .zip(arrivals)
                .skip((self.start - first) as usize)
            {
                if a.ts_ns > bound {
                    break;
                }
                self.start = seq + 1;
                self.in_order -= 1;
                released += 1;
                outcome = to(a);
                if outcome.is_err() || self.in_order == 0 {
                    break;
                }
            }
            self.done_with(i, released);
            outcome?;
            if self.start < stop.min(first + len) {
                // Stopped at the bound, or with nothing left.
                return Ok(());
            }
        }
        Ok(())
    }

    /// Move `start` past the noted arrivals it has reached.
    #[inline]
    fn pass_skipped(&mut self) {
        while let Some(&(from, to)) = self.skipped.front() {
            if from > self.start {
                break;
            }
            self.skipped.pop_front();
            self.start = to;
        }
    }

    /// The first in-order packet waiting (its number and timestamp), past the noted ones.
    #[inline]
    fn front(&mut self) -> Option<(u64, i64)> {
        if self.in_order == 0 {
            return None;
        }
        self.pass_skipped();
        Some((self.start, self.at(self.start)?.1.ts_ns))
    }

    /// The batch holding arrival `seq` (its index in `held`), and the arrival.
    #[inline]
    fn at(&self, seq: u64) -> Option<(usize, &Arrival)> {
        let front = self.held.front()?;
        let guess = (seq.checked_sub(front.first)? / self.batch_len) as usize;
        let holds = |h: &Held| seq >= h.first && seq - h.first < h.len;
        let i = if self.held.get(guess).is_some_and(holds) {
            guess
        } else {
            self.held.partition_point(|h| h.first + h.len <= seq)
        };
        let h = self.held.get(i)?;
        Some((i, h.arrivals().get((seq - h.first) as usize)?))
    }

    /// Arrival `seq`, the newest, is not an in-order packet: the in-order ones pass over it.
    #[inline]
    fn skip(&mut self, seq: u64) {
        if self.in_order == 0 {
            // None waits: the next one comes after this.
            self.start = seq + 1;
            self.skipped.clear();
        } else if let Some(run) = self.skipped.back_mut().filter(|r| r.1 == seq) {
            run.1 = seq + 1;
        } else {
            self.skipped.push_back((seq, seq + 1));
        }
    }

    /// Arrival `seq` no longer waits.
    #[inline]
    fn done(&mut self, seq: u64) {
        if let Some((i, _)) = self.at(seq) {
            self.done_with(i, 1);
        }
    }

    /// `n` more arrivals of batch `i` no longer wait.
    #[inline]
    fn done_with(&mut self, i: usize, n: usize) {
        let h = &mut self.held[i];
        h.left -= n;
        if h.left == 0 {
            h.batch = None;
        }
    }

    #[inline]
    fn release_one(&mut self, seq: u64, to: &mut impl FnMut(&Arrival) -> Result<()>) -> Result<()> {
        let Some((i, a)) = self.at(seq) else {
            return Ok(());
        };
        to(a)?;
        self.done_with(i, 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reorder::{Reorder, RELEASE_EVERY};
    use crate::wire::Headers;
    use std::cell::Cell;

    /// Arrivals numbered by their size.
    fn arrival(ts_ns: i64, id: u64) -> Arrival {
        Arrival {
            ts_ns,
            size: id,
            interface: 0,
            headers: Headers::default(),
        }
    }

    /// (push after which it came out, arrival number) of every release, and the error, if any.
    type Trace = (Vec<(usize, u64)>, Option<String>);

    fn through_reorder(
        arrivals: &[Arrival],
        horizon: i64,
        late: LatePolicy,
        max_held: usize,
    ) -> Trace {
        let mut reorder = Reorder::<Arrival>::new(horizon, late).holding_at_most(max_held);
        let pushed = Cell::new(0);
        let mut out = Vec::new();
        let mut error = None;
        for a in arrivals {
            pushed.set(pushed.get() + 1);
            let r = reorder.push(a, |a: &Arrival| {
                out.push((pushed.get(), a.size));
                Ok(())
            });
            if let Err(e) = r {
                error = Some(e.to_string());
                return (out, error);
            }
        }
        pushed.set(usize::MAX);
        if let Err(e) = reorder.flush(|a: &Arrival| {
            out.push((pushed.get(), a.size));
            Ok(())
        }) {
            error = Some(e.to_string());
        }
        (out, error)
    }

    /// `hint`: the batch length the buffer is told (a wrong one only slows it down).
    fn in_place(
        arrivals: &[Arrival],
        horizon: i64,
        late: LatePolicy,
        batch: usize,
        hint: usize,
        max_held: usize,
    ) -> Trace {
        let mut buffer = InPlace::new(horizon, late, hint);
        buffer.max_held = max_held;
        let pushed = Cell::new(0);
        let mut out = Vec::new();
        for chunk in arrivals.chunks(batch) {
            let batch = Arc::new(Batch::Full(Full {
                arrivals: chunk.to_vec(),
                lean: chunk
                    .iter()
                    .map(|a| (a.ts_ns, a.size, a.interface))
                    .collect(),
            }));
            // One arrival at a time, so that each release is seen after its push.
            buffer.hold(&batch);
            for a in chunk {
                pushed.set(pushed.get() + 1);
                let r = buffer.push_one(a.ts_ns, &mut |a: &Arrival| {
                    out.push((pushed.get(), a.size));
                    Ok(())
                });
                if let Err(e) = r {
                    return (out, Some(e.to_string()));
                }
            }
            buffer.retire();
            // What is held starts at the oldest arrival still waiting.
            let waiting = buffer.in_order + buffer.early.len();
            let counted: usize = buffer.held.iter().map(|h| h.left).sum();
            assert_eq!(counted, waiting);
            assert!(buffer
                .held
                .iter()
                .all(|h| (h.left > 0) == h.batch.is_some()));
        }
        pushed.set(usize::MAX);
        let error = buffer
            .flush(&mut |a: &Arrival| {
                out.push((pushed.get(), a.size));
                Ok(())
            })
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some() || buffer.held.iter().all(|h| h.left == 0));
        (out, error)
    }

    #[test]
    fn makes_the_decisions_of_a_scanners_own_buffer() {
        // Few distinct timestamps, so that out-of-order packets tie with in-order ones, late
        // packets under both policies, no horizon and short ones, batches of every size, and
        // one case in ten long and mostly sorted (the FIFO released every RELEASE_EVERY).
        let mut rng = crate::test_rng::Rng(0x1_2A7E_D5EE_D0FF);
        let mut limited = 0;
        for case in 0..3_000 {
            let horizon = rng.below(6) as i64;
            let late = if rng.below(2) == 0 {
                LatePolicy::Drop
            } else {
                LatePolicy::Error
            };
            let (n, disorder) = if case % 10 == 0 {
                (3 * RELEASE_EVERY as u64 + rng.below(2_000), 700)
            } else {
                (rng.below(60), 3)
            };
            let mut t = 0i64;
            let arrivals: Vec<Arrival> = (0..n)
                .map(|id| {
                    t += rng.below(3) as i64;
                    let back = if rng.below(disorder) == 0 {
                        rng.below(9) as i64
                    } else {
                        0
                    };
                    arrival(t - back, id)
                })
                .collect();
            let batch = 1 + rng.below(70) as usize;
            // One case in four with a limit on what waits that some cases pass.
            let max_held = if case % 4 == 0 {
                1 + rng.below(40) as usize
            } else {
                MAX_HELD
            };
            let want = through_reorder(&arrivals, horizon, late, max_held);
            let hint = if case % 3 == 0 {
                1 + rng.below(70) as usize
            } else {
                batch
            };
            let got = in_place(&arrivals, horizon, late, batch, hint, max_held);
            assert_eq!(
                got, want,
                "case {case}, horizon {horizon}, {late:?}, batch {batch}, hint {hint}, \
                 max_held {max_held}"
            );
            limited += usize::from(want.1.as_deref().is_some_and(|e| e.contains("more than")));
        }
        // The limit was met, and met alike, in some cases.
        assert!(limited > 20, "{limited} cases stopped at the limit");
    }

    #[test]
    fn a_flood_of_late_packets_behind_one_that_waits_holds_nothing_more() {
        // One packet far ahead waits in the buffer until the end; every packet after it is late
        // and dropped. A scanner's own buffer holds that one packet; so must this one, not the
        // batches or one note per dropped packet.
        let mut buffer = InPlace::new(5, LatePolicy::Drop, 64);
        let mut released = Vec::new();
        let mut seq = 0;
        for round in 0..1_000 {
            let chunk: Vec<Arrival> = (0..64)
                .map(|i| {
                    seq += 1;
                    let ts = if round == 0 && i == 1 { 1_000_000 } else { 0 };
                    arrival(ts, seq)
                })
                .collect();
            let batch = Arc::new(Batch::Full(Full {
                lean: chunk
                    .iter()
                    .map(|a| (a.ts_ns, a.size, a.interface))
                    .collect(),
                arrivals: chunk,
            }));
            buffer
                .push(&batch, &mut |a: &Arrival| {
                    released.push(a.size);
                    Ok(())
                })
                .unwrap();
            assert!(buffer.skipped.len() <= 1, "round {round}");
            let with_data = buffer.held.iter().filter(|h| h.batch.is_some()).count();
            assert!(with_data <= 1, "round {round}: {with_data} batches kept");
        }
        buffer
            .flush(&mut |a: &Arrival| {
                released.push(a.size);
                Ok(())
            })
            .unwrap();
        assert_eq!(released, vec![1, 2]);
    }
}
