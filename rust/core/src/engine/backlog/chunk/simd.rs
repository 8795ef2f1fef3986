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
    use super::super::super::simd::avx512::{store, Queues, Rates};
    use super::{Batch, ChunkLane};
    use std::arch::x86_64::*;

    /// The queues of [`Queues`], plus what the chunk's lanes add: `need` (smax − D) per lane,
    /// and which lanes keep empty instants.
    struct State {
        queues: Queues,
        need: __m512i,
        keep: __mmask8,
    }

    impl State {
        #[target_feature(enable = "avx512f,avx512dq")]
        fn load(lanes: &[&mut ChunkLane]) -> Self {
            let queues = Queues::load(lanes.iter().map(|l| {
                let (start, peak) = (l.start_ns as u64, l.peak_ns as u64);
                [l.q, start, l.best_q, peak, l.longest]
            }));
            // Lanes past the last never pass it.
            let mut need = [u64::MAX; super::WIDTH];
            let mut keep = 0;
            for (k, lane) in lanes.iter().enumerate() {
                need[k] = lane.need;
                keep |= u8::from(!lane.truncated) << k;
            }
            // SAFETY: `need` holds exactly one vector's bytes; unaligned loads are allowed.
            let need = unsafe { _mm512_loadu_si512(need.as_ptr().cast()) };
            State { queues, need, keep }
        }

        /// Back into the lanes (`longest` and `keep` change only in the scalar lanes).
        #[target_feature(enable = "avx512f,avx512dq")]
        fn save(&self, lanes: &mut [&mut ChunkLane]) {
            let need = store(self.need);
            for (k, (lane, [q, start, best, peak])) in
                lanes.iter_mut().zip(self.queues.save()).enumerate()
            {
                (lane.q, lane.start_ns, lane.best_q, lane.peak_ns) =
                    (q, start as i64, best, peak as i64);
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
        let rates = Rates::load(lanes.iter().map(|l| [l.rate, l.dcap, u64::from(l.shift)]));
        let max = _mm512_set1_epi64(-1);
        let mut s = State::load(lanes);
        // The group's work before the packet: where a scalar lane takes one, it needs it.
        let mut before = batch.before;
        for (i, h) in batch.held.iter().enumerate() {
            let step = s.queues.step(&rates, last, h);
            if step.over {
                s.save(lanes);
                return Err(i);
            }
            // While a lane keeps instants, a queue that empties before the packet is one.
            let empties = _mm512_mask_cmplt_epu64_mask(s.keep, s.queues.q, step.served);
            if step.closes | empties != 0 {
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
                s.queues.take(&rates, &step);
                // need.saturating_add(service left over), then S's new maxima where Q passes.
                let left = _mm512_sub_epi64(step.served, step.least);
                let sum = _mm512_add_epi64(s.need, left);
                let need = _mm512_mask_mov_epi64(sum, _mm512_cmplt_epu64_mask(sum, s.need), max);
                let q = s.queues.q;
                let passed = _mm512_mask_cmpgt_epu64_mask(rates.active, q, need);
                if passed != 0 {
                    let (q, n) = (store(q), store(need));
                    for (k, lane) in lanes.iter_mut().enumerate() {
                        if passed & (1 << k) != 0 {
                            lane.smax += i128::from(q[k] - n[k]);
                            lane.smax_ns = h.ts;
                        }
                    }
                }
                s.need = _mm512_mask_mov_epi64(need, passed, q);
            }
            last = h.ts;
            before += u128::from(h.val);
        }
        s.save(lanes);
        Ok(())
    }
}
