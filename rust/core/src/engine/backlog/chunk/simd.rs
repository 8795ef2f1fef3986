//! The chunk's u64 lanes eight at a time in AVX-512 registers, as `backlog::simd` runs the
//! sequential ones. [`ChunkLane::run`] stays the reference: it takes every packet at which some
//! lane does something rare (a busy period that may be the longest ends or, while the lane keeps
//! empty instants, its queue empties), so every state is the scalar one bit for bit. A new
//! maximum of S, kept in i128 outside the vectors, is added lane by lane.

use super::super::simd::available;
pub(super) use super::super::simd::WIDTH;
use super::{Batch, ChunkLane};

/// Run `lanes` (at most [`WIDTH`]) over `batch`, the lanes' latest packet being at `last`, as
/// [`ChunkLane::run`] runs each. `Err(i)`: a queue would not fit a u64 at `held[i]`; every lane is
/// left as it was before that packet. `None` (nothing ran): this CPU has no vector lanes, or
/// `budget` could run out within the batch, where the order in which lanes keep instants would
/// then matter (one by one, lane after lane, is the order of record).
pub(super) fn run(
    lanes: &mut [&mut ChunkLane],
    last: i64,
    batch: Batch,
    budget: &mut usize,
) -> Option<Result<(), usize>> {
    debug_assert!(lanes.len() <= WIDTH);
    // At most one instant per lane and packet.
    let most = lanes.len().saturating_mul(batch.held.len());
    if lanes.is_empty() || *budget < most {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512F and AVX-512DQ (checked just above; the check is cached).
        return Some(unsafe { avx512::run(lanes, last, batch, budget) });
    }
    let _ = (last, batch);
    None
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::super::simd::avx512::{gather, lanes_mask, load, store};
    use super::super::super::NARROW_LIMIT;
    use super::{Batch, ChunkLane};
    use std::arch::x86_64::*;

    /// The lanes' changing state, one vector per field, and which lanes keep empty instants.
    struct State {
        q: __m512i,
        start: __m512i,
        best: __m512i,
        peak: __m512i,
        longest: __m512i,
        need: __m512i,
        keep: __mmask8,
    }

    impl State {
        #[target_feature(enable = "avx512f,avx512dq")]
        fn load(lanes: &[&mut ChunkLane]) -> Self {
            let lanes = || lanes.iter().map(|l| &**l);
            let mut keep = 0;
            for (k, lane) in lanes().enumerate() {
                keep |= u8::from(!lane.truncated) << k;
            }
            // Padding lanes: an empty queue that never reaches a new maximum, a longest period
            // or S's maximum (their masks are off as well).
            State {
                q: load(&gather(lanes(), 0, |l| l.q)),
                start: load(&gather(lanes(), 0, |l| l.start_ns as u64)),
                best: load(&gather(lanes(), u64::MAX, |l| l.best_q)),
                peak: load(&gather(lanes(), 0, |l| l.peak_ns as u64)),
                longest: load(&gather(lanes(), u64::MAX, |l| l.longest)),
                need: load(&gather(lanes(), u64::MAX, |l| l.need)),
                keep,
            }
        }

        /// Back into the lanes (`longest` and `keep` change only in the scalar lanes).
        #[target_feature(enable = "avx512f,avx512dq")]
        fn save(&self, lanes: &mut [&mut ChunkLane]) {
            let (q, start, best, peak, need) = (
                store(self.q),
                store(self.start),
                store(self.best),
                store(self.peak),
                store(self.need),
            );
            for (k, lane) in lanes.iter_mut().enumerate() {
                lane.q = q[k];
                lane.start_ns = start[k] as i64;
                lane.best_q = best[k];
                lane.peak_ns = peak[k] as i64;
                lane.need = need[k];
            }
        }
    }

    /// See [`super::run`]. The per-packet steps are those of `ChunkLane::run_from`.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) fn run(
        lanes: &mut [&mut ChunkLane],
        mut last: i64,
        batch: Batch,
        budget: &mut usize,
    ) -> Result<(), usize> {
        let active = lanes_mask(lanes.len());
        let rate = load(&gather(lanes.iter().map(|l| &**l), 0, |l| l.rate));
        let dcap = load(&gather(lanes.iter().map(|l| &**l), 0, |l| l.dcap));
        let shift = load(&gather(lanes.iter().map(|l| &**l), 0, |l| {
            u64::from(l.shift)
        }));
        let (zero, one) = (_mm512_setzero_si512(), _mm512_set1_epi64(1));
        let (limit, max) = (
            _mm512_set1_epi64(NARROW_LIMIT as i64),
            _mm512_set1_epi64(-1),
        );
        let mut s = State::load(lanes);
        // The group's work before the packet: where a scalar lane takes one, it needs it.
        let mut before = batch.before;
        for (i, h) in batch.held.iter().enumerate() {
            let ts = _mm512_set1_epi64(h.ts);
            let val = _mm512_set1_epi64(h.val as i64);
            // Sorted input below SPAN_LIMIT: the wrapped difference is the exact one.
            let dt = _mm512_set1_epi64(h.ts.wrapping_sub(last));
            let served = _mm512_mullo_epi64(rate, _mm512_min_epu64(dt, dcap));
            let span = _mm512_sub_epi64(_mm512_set1_epi64(last), s.start);
            let drain = _mm512_add_epi64(_mm512_srlv_epi64(s.q, shift), one);
            let bound = _mm512_add_epi64(span, drain);
            let closes = _mm512_mask_cmpgt_epu64_mask(active, bound, s.longest)
                & _mm512_cmplt_epu64_mask(_mm512_sub_epi64(s.q, one), served);
            let empties = _mm512_mask_cmplt_epu64_mask(s.keep, s.q, served);
            // The queue left, and the packet on it (the scalar lanes' rare steps change neither).
            let least = _mm512_min_epu64(s.q, served);
            let rem = _mm512_sub_epi64(s.q, least);
            let next = _mm512_add_epi64(rem, val);
            if _mm512_mask_cmpge_epu64_mask(active, next, limit) != 0 {
                s.save(lanes);
                return Err(i);
            }
            if closes | empties != 0 {
                // Rare: the scalar lanes take this packet.
                s.save(lanes);
                let one_packet = Batch {
                    held: std::slice::from_ref(h),
                    before,
                };
                for lane in lanes.iter_mut() {
                    // Cannot fail: the check above saw every queue this packet leaves.
                    let _ = lane.run(last, one_packet, budget);
                }
                s = State::load(lanes);
            } else {
                // The service left over, 0 unless the queue empties.
                let left = _mm512_sub_epi64(served, least);
                let empty = _mm512_cmpeq_epu64_mask(rem, zero);
                s.start = _mm512_mask_mov_epi64(s.start, empty, ts);
                s.q = _mm512_maskz_mov_epi64(active, next);
                let higher = _mm512_cmpgt_epu64_mask(s.q, s.best);
                s.best = _mm512_mask_mov_epi64(s.best, higher, s.q);
                s.peak = _mm512_mask_mov_epi64(s.peak, higher, ts);
                // need.saturating_add(left), then S's new maxima where Q passes it.
                let sum = _mm512_add_epi64(s.need, left);
                let need = _mm512_mask_mov_epi64(sum, _mm512_cmplt_epu64_mask(sum, s.need), max);
                let passed = _mm512_mask_cmpgt_epu64_mask(active, s.q, need);
                if passed != 0 {
                    let (q, n) = (store(s.q), store(need));
                    for (k, lane) in lanes.iter_mut().enumerate() {
                        if passed & (1 << k) != 0 {
                            lane.smax += i128::from(q[k] - n[k]);
                            lane.smax_ns = h.ts;
                        }
                    }
                }
                s.need = _mm512_mask_mov_epi64(need, passed, s.q);
            }
            last = h.ts;
            before += u128::from(h.val);
        }
        s.save(lanes);
        Ok(())
    }
}
