//! The chunk's u64 lanes eight at a time in AVX-512 registers (or four in AVX2 ones, `avx2`),
//! as `backlog::simd` runs the sequential ones. [`ChunkLane::run_from`] stays the reference:
//! at a packet where some lane does something rare (a busy period longer than the longest
//! ends or, while the lane keeps empty instants, its queue empties), the lanes concerned run
//! its rare step ([`ChunkLane::empty_instant`]) one by one, and the vector then takes the
//! packet as any other, so every state is the scalar one bit for bit. S's maximum is kept in
//! i128 outside the vectors: the lanes (AVX-512 and AVX2 alike) sum its rises in a u64 vector and
//! add them where they hand their state back to the scalar lanes.

use super::super::simd::available;
pub(super) use super::super::simd::{width, WIDTH};

#[cfg(target_arch = "x86_64")]
mod avx2;
use super::{Batch, ChunkLane, Rate};

/// Run the rates of `block` (at most [`width`]) over `batch`, the lanes' latest packet being at
/// `last`, as [`ChunkLane::run`] runs each. `Err(i)`: a queue would not fit a u64 at `held[i]`;
/// every lane is left as it was before that packet. `None` (nothing ran): a rate is in u128
/// already, this CPU has no vector lanes, or `budget` could run out within the batch, where the
/// order in which lanes keep instants would then matter (one by one, lane after lane, is the
/// order of record).
pub(super) fn run(
    block: &mut [Rate],
    last: i64,
    batch: Batch,
    budget: &mut usize,
) -> Option<Result<(), usize>> {
    debug_assert!(block.len() <= WIDTH);
    // At most one instant per lane and packet.
    let most = block.len().saturating_mul(batch.held.len());
    let narrow = block.iter().all(|r| matches!(r, Rate::Narrow(_)));
    if block.is_empty() || !narrow || *budget < most {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512F and AVX-512DQ (checked just above; the check is cached).
        return Some(unsafe { avx512::run(block, last, batch, budget) });
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the check is cached).
        return Some(unsafe { avx2::run(block, last, batch, budget) });
    }
    let _ = (last, batch);
    None
}

/// The u64 lanes of `block` (every rate of it, once [`run`] checked that none is u128).
fn lanes(block: &[Rate]) -> impl Iterator<Item = &ChunkLane> + Clone {
    block.iter().filter_map(|r| match r {
        Rate::Narrow(lane) => Some(lane),
        Rate::Wide(_) => None,
    })
}

fn lanes_mut(block: &mut [Rate]) -> impl Iterator<Item = &mut ChunkLane> {
    block.iter_mut().filter_map(|r| match r {
        Rate::Narrow(lane) => Some(lane),
        Rate::Wide(_) => None,
    })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::super::simd::avx512::{load, store, Queues, Rates};
    use super::{lanes, lanes_mut, Batch, Rate};
    use std::arch::x86_64::*;

    /// The queues of [`Queues`], plus what the chunk's lanes add: `need` (smax − D) per lane,
    /// which lanes keep empty instants, and S's new maxima since the lanes last saw them: how
    /// far smax rose (`gain`) and when it last did (`smax_ns`). Handed by value to what runs
    /// out of line: a reference to the loop's state that escaped into a call kept it on the
    /// stack, loaded and stored at every packet.
    #[derive(Clone, Copy)]
    struct State {
        queues: Queues,
        need: __m512i,
        keep: __mmask8,
        /// Below 2⁶³, so it never wraps: S = D + Q with D never rising, so from where the lanes
        /// last saw it S rises by less than the largest queue (< 2⁶³), and smax with it.
        gain: __m512i,
        smax_ns: __m512i,
    }

    impl State {
        #[target_feature(enable = "avx512f,avx512dq")]
        fn load(block: &[Rate]) -> Self {
            let queues = Queues::load(lanes(block).map(|l| {
                let (start, peak) = (l.start_ns as u64, l.peak_ns as u64);
                [l.q, start, l.best_q, peak, l.longest]
            }));
            // Lanes past the last never pass it.
            let mut need = [u64::MAX; super::WIDTH];
            let mut smax_ns = [0; super::WIDTH];
            let mut keep = 0;
            for (k, lane) in lanes(block).enumerate() {
                need[k] = lane.need;
                smax_ns[k] = lane.smax_ns as u64;
                keep |= u8::from(!lane.truncated) << k;
            }
            State {
                queues,
                need: load(&need),
                keep,
                gain: _mm512_setzero_si512(),
                smax_ns: load(&smax_ns),
            }
        }

        /// Back into the lanes (`longest` and `keep` change only in the scalar lanes).
        #[target_feature(enable = "avx512f,avx512dq")]
        #[inline(never)]
        fn save(self, block: &mut [Rate]) {
            let (need, gain, smax_ns) = (store(self.need), store(self.gain), store(self.smax_ns));
            for (k, (lane, [q, start, best, peak])) in
                lanes_mut(block).zip(self.queues.save()).enumerate()
            {
                (lane.q, lane.start_ns, lane.best_q, lane.peak_ns) =
                    (q, start as i64, best, peak as i64);
                lane.need = need[k];
                lane.smax += i128::from(gain[k]);
                lane.smax_ns = smax_ns[k] as i64;
            }
        }

        /// The packet at `ts`, after one at `last`, served `served`, at which the lanes of
        /// `rare` close a period that may be the longest or keep an empty instant (`before`:
        /// the group's work before it): they do that one by one, as `ChunkLane::run_from` does
        /// (the others would find nothing to do there). Going through the scalar lanes whole,
        /// every lane and a reload each time, cost 3× the vector loop.
        #[target_feature(enable = "avx512f,avx512dq")]
        #[inline(never)]
        #[cold]
        fn rare(
            mut self,
            block: &mut [Rate],
            rare: __mmask8,
            served: [u64; super::WIDTH],
            (last, ts): (i64, i64),
            before: u128,
            budget: &mut usize,
        ) -> Self {
            let (q, start) = (store(self.queues.q), store(self.queues.start));
            for (k, lane) in lanes_mut(block).enumerate() {
                if rare & (1 << k) != 0 {
                    lane.longest = lane.empty_instant(
                        (q[k], start[k] as i64),
                        (last, ts),
                        served[k],
                        before,
                        lane.longest,
                        budget,
                    );
                    self.keep &= !(u8::from(lane.truncated) << k);
                }
            }
            self.queues.set_longest(lanes(block).map(|l| l.longest));
            self
        }
    }

    /// See [`super::run`]. The per-packet steps are those of `ChunkLane::run_from`.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) fn run(
        block: &mut [Rate],
        mut last: i64,
        batch: Batch,
        budget: &mut usize,
    ) -> Result<(), usize> {
        let rates = Rates::load(lanes(block).map(|l| [l.rate, l.dcap]));
        let max = _mm512_set1_epi64(-1);
        let mut s = State::load(block);
        // The group's work before the packet: where a scalar lane takes one, it needs it.
        let mut before = batch.before;
        for (i, h) in batch.held.iter().enumerate() {
            let step = s.queues.step(&rates, last, h);
            if step.over {
                s.save(block);
                return Err(i);
            }
            // While a lane keeps instants, a queue that empties before the packet is one.
            let empties = _mm512_mask_cmplt_epu64_mask(s.keep, s.queues.q, step.served);
            let rare = step.closes | empties;
            if rare != 0 {
                // Rare: the lanes concerned close their period or keep the instant, and the
                // vector then takes the packet as any other.
                s = s.rare(
                    block,
                    rare,
                    store(step.served),
                    (last, h.ts),
                    before,
                    budget,
                );
            }
            s.queues.take(&rates, &step);
            // need.saturating_add(service left over), then S's new maxima where Q passes.
            let left = _mm512_sub_epi64(step.served, step.least);
            let sum = _mm512_add_epi64(s.need, left);
            let need = _mm512_mask_mov_epi64(sum, _mm512_cmplt_epu64_mask(sum, s.need), max);
            let q = s.queues.q;
            let passed = _mm512_mask_cmpgt_epu64_mask(rates.active, q, need);
            // In the vectors, not lane by lane: Q passes in about one packet in eight, at no
            // pattern a branch predicts.
            s.gain = _mm512_mask_add_epi64(s.gain, passed, s.gain, _mm512_sub_epi64(q, need));
            s.smax_ns = _mm512_mask_mov_epi64(s.smax_ns, passed, _mm512_set1_epi64(h.ts));
            debug_assert_eq!(_mm512_movepi64_mask(s.gain), 0, "gain below 2⁶³");
            s.need = _mm512_mask_mov_epi64(need, passed, q);
            last = h.ts;
            before += u128::from(h.val);
        }
        s.save(block);
        Ok(())
    }
}
