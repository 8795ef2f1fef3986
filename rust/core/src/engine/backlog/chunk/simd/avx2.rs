//! The chunk's u64 lanes four at a time in AVX2 registers, as `backlog::simd::avx2` runs the
//! sequential ones, with the same per-packet step and the same limits (only packets closer than
//! `dt_limit` to the one before; comparisons as that module explains). What the chunk's lanes
//! add: `need` per lane, which may be any u64 and so is compared with its sign bit flipped; S's
//! new maxima, kept in vectors as the AVX-512 lanes keep them ([`Smax`]); and the packets at
//! which a lane that keeps instants empties. At those and every other rare packet the lanes
//! concerned run their rare step one by one ([`Block::rare`]); a packet after a long gap, or one
//! that some queue would not fit, goes through the scalar [`ChunkLane::run`] whole.

use super::super::super::simd::avx2::{
    any, load, overflows, store, take, Queues, Rates, Step, SIGN, WIDTH,
};
use super::super::super::{Held, Scaled};
use super::{lanes, lanes_mut, Batch, Rate};
use std::arch::x86_64::*;

/// S's maximum as the lanes see it: `need` (smax − D) per lane, and S's new maxima since the
/// lanes last saw them: how far smax rose (`gain`) and when it last did (`ns`). In vectors, not
/// added lane by lane: Q passes `need` in about one packet in eight, at no pattern a branch
/// predicts.
#[derive(Clone, Copy)]
struct Smax {
    need: __m256i,
    /// Below 2⁶³, so it never wraps: S = D + Q with D never rising, so from where the lanes
    /// last saw it S rises by less than the largest queue (< 2⁶³), and smax with it.
    gain: __m256i,
    ns: __m256i,
}

impl Smax {
    /// After the packet `h` of `step`, which left the queues `s`: need.saturating_add(the
    /// service left over), then S's new maxima where Q passes it.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn pass(self, step: &Step, s: &Queues, h: &Held) -> Self {
        let (zero, sign) = (_mm256_setzero_si256(), _mm256_set1_epi64x(SIGN as i64));
        let left = _mm256_andnot_si256(step.more, _mm256_sub_epi64(zero, step.d));
        let sum = _mm256_add_epi64(self.need, left);
        let need_x = _mm256_xor_si256(self.need, sign);
        let wrapped = _mm256_cmpgt_epi64(need_x, _mm256_xor_si256(sum, sign));
        let sum = _mm256_or_si256(sum, wrapped);
        let passed = _mm256_cmpgt_epi64(_mm256_xor_si256(s.q, sign), _mm256_xor_si256(sum, sign));
        let rise = _mm256_and_si256(passed, _mm256_sub_epi64(s.q, sum));
        let gain = _mm256_add_epi64(self.gain, rise);
        debug_assert!(!any(gain), "gain below 2⁶³");
        Smax {
            need: _mm256_blendv_epi8(sum, s.q, passed),
            gain,
            ns: _mm256_blendv_epi8(self.ns, _mm256_set1_epi64x(h.ts), passed),
        }
    }
}

/// The block's vectors: those of the sequential lanes, S's maximum, and `keep` (all ones where
/// the lane keeps instants) per lane. Not handed by value, as the AVX-512 lanes' state is: the
/// loop over packets (`take`) already holds copies in locals, kept in registers, and the block
/// (about 450 bytes) handed in and out of the rare step went through `memcpy` at every rare
/// packet (cachegrind, two threads on the 60 MB prefix: 515.3 M instructions against 500.4 M).
struct Block {
    rates: Rates,
    queues: Queues,
    smax: Smax,
    keep: __m256i,
}

impl Block {
    #[target_feature(enable = "avx2")]
    fn load(block: &[Rate]) -> Self {
        Block {
            rates: Rates::load(
                lanes(block).map(|l| [l.rate, l.dcap, u64::from(l.shift), l.longest]),
            ),
            queues: Queues::load(
                lanes(block).map(|l| [l.q, l.start_ns as u64, l.best_q, l.peak_ns as u64]),
            ),
            smax: Smax {
                // Lanes past the last never pass it.
                need: load(lanes(block).map(|l| l.need), u64::MAX),
                gain: _mm256_setzero_si256(),
                ns: load(lanes(block).map(|l| l.smax_ns as u64), 0),
            },
            keep: load(
                lanes(block).map(|l| u64::from(!l.truncated).wrapping_neg()),
                0,
            ),
        }
    }

    /// Back into the lanes (`longest` and `keep` change only in the scalar lanes).
    #[target_feature(enable = "avx2")]
    fn save(&self, block: &mut [Rate]) {
        let (need, gain, ns) = (
            store(self.smax.need),
            store(self.smax.gain),
            store(self.smax.ns),
        );
        for (k, (lane, [q, start, best, peak])) in
            lanes_mut(block).zip(self.queues.save()).enumerate()
        {
            (lane.q, lane.start_ns, lane.best_q, lane.peak_ns) =
                (q, start as i64, best, peak as i64);
            lane.need = need[k];
            lane.smax += i128::from(gain[k]);
            lane.smax_ns = ns[k] as i64;
        }
    }

    /// Put the packets of `held` on the queues, the one before the first being at `last`, up
    /// to the first that the vector cannot take (see the module doc). Returns how many it took.
    #[target_feature(enable = "avx2")]
    fn take(&mut self, last: i64, held: &[Held]) -> usize {
        let zero = _mm256_setzero_si256();
        let keep = self.keep;
        // While a lane keeps instants, a queue that empties before the packet is one.
        let empties = |step: &Step| _mm256_and_si256(keep, _mm256_cmpgt_epi64(zero, step.d));
        // A copy in a local, not behind `self`: kept in registers across the loop.
        let mut smax = self.smax;
        let then = |step: &Step, s: &Queues, h: &Held| smax = smax.pass(step, s, h);
        let took = take(&self.rates, &mut self.queues, last, held, empties, then);
        self.smax = smax;
        took
    }

    /// The packet `h`, `dt` (< `dt_limit`) after the one at `last`, at which some lane closes a
    /// period that may be the longest or keeps an empty instant (`before`: the group's work
    /// before it). The lanes concerned do that one by one, as `ChunkLane::run_from` does (the
    /// others would find nothing to do there), and the vector then takes the packet as any
    /// other. False, with nothing changed, where some queue would not fit a u64.
    #[target_feature(enable = "avx2")]
    #[inline(never)]
    #[cold]
    fn rare(
        &mut self,
        block: &mut [Rate],
        (last, dt): (i64, u64),
        h: &Held,
        before: u128,
        budget: &mut usize,
    ) -> bool {
        let step = self
            .queues
            .step(&self.rates, _mm256_set1_epi64x(last), dt, h.val);
        if any(step.next) {
            return false;
        }
        let (q, start) = (store(self.queues.q), store(self.queues.start));
        let mut changed = false;
        for (k, lane) in lanes_mut(block).enumerate() {
            let served = <u64 as Scaled>::served(lane.rate, dt, lane.dcap);
            // A period ends, or the queue empties strictly before the packet: `empty_instant`
            // tells whether that closes the longest period or keeps the instant.
            if q[k] <= served && (q[k] > 0 || q[k] < served && !lane.truncated) {
                let (longest, truncated) = (lane.longest, lane.truncated);
                lane.longest = lane.empty_instant(
                    (q[k], start[k] as i64),
                    (last, h.ts),
                    served,
                    before,
                    longest,
                    budget,
                );
                changed |= lane.longest != longest || lane.truncated != truncated;
            }
        }
        if changed {
            // The vectors that hold `longest` and `keep`; the queues and S's maximum are
            // current only here, not in the lanes.
            let fresh = Block::load(block);
            (self.rates, self.keep) = (fresh.rates, fresh.keep);
        }
        self.queues
            .take(&self.rates, &step, _mm256_set1_epi64x(h.ts));
        self.smax = self.smax.pass(&step, &self.queues, h);
        true
    }
}

/// See [`super::run`]. The per-packet steps are those of `ChunkLane::run`, lane for lane.
#[target_feature(enable = "avx2")]
pub(super) fn run(
    block: &mut [Rate],
    last: i64,
    batch: Batch,
    budget: &mut usize,
) -> Result<(), usize> {
    debug_assert!(block.len() <= WIDTH);
    // The group's work before packet `at`, summed up to there (only rare packets need it).
    let (mut at, mut before) = (0, batch.before);
    let mut s = Block::load(block);
    let mut i = 0;
    while i < batch.held.len() {
        let prev = if i == 0 { last } else { batch.held[i - 1].ts };
        i += s.take(prev, &batch.held[i..]);
        let Some(h) = batch.held.get(i) else {
            break;
        };
        let prev = if i == 0 { last } else { batch.held[i - 1].ts };
        before += batch.held[at..i]
            .iter()
            .map(|h| u128::from(h.val))
            .sum::<u128>();
        at = i;
        let dt = h.ts.wrapping_sub(prev) as u64;
        if dt >= s.rates.dt_limit || !s.rare(block, (prev, dt), h, before, budget) {
            // Rarer still (a long gap, or a queue that would not fit): the scalar lanes take
            // this packet, unless some queue would not fit a u64.
            s.save(block);
            if lanes(block).any(|l| overflows(l.rate, l.dcap, l.q, dt, h.val)) {
                return Err(i);
            }
            let one_packet = Batch {
                held: std::slice::from_ref(h),
                before,
            };
            for lane in lanes_mut(block) {
                // Cannot fail: the check above saw every queue this packet leaves.
                let _ = lane.run(prev, one_packet, budget);
            }
            s = Block::load(block);
        }
        i += 1;
    }
    s.save(block);
    Ok(())
}
