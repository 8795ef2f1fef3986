//! The u64 lanes eight at a time, in AVX-512 registers (x86-64 CPUs that have AVX-512F and DQ,
//! checked at run time; elsewhere the lanes run one by one).
//!
//! One by one, each rate's loop is a chain of dependent operations per packet (the queue is
//! served, then the packet's work is added), about 1.4 ns per packet and rate on the benchmark
//! machine. Here one packet updates eight queues with a handful of vector instructions. The
//! scalar [`Lane::run`] stays the reference: a packet at which some lane closes a busy period
//! that may be the longest (rare once the longest is long) goes through it, lane by lane, so
//! every result is the scalar one bit for bit.

use super::{Held, Lane, NARROW_LIMIT};

/// Lanes per vector.
pub(super) const WIDTH: usize = 8;

/// Whether this CPU runs the vector lanes.
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Run up to [`WIDTH`] lanes over `held`, the lanes' latest packet being at `last`, as
/// [`Lane::run`] runs each. `Err(i)`: a queue would not fit a u64 at `held[i]`; every lane is
/// left as it was before that packet. `None`: this CPU has no vector lanes (nothing ran).
pub(super) fn run(lanes: &mut [Lane<u64>], last: i64, held: &[Held]) -> Option<Result<(), usize>> {
    debug_assert!(lanes.len() <= WIDTH);
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512F and AVX-512DQ (checked just above; the check is cached).
        return Some(unsafe { avx512::run(lanes, last, held) });
    }
    let _ = (lanes, last, held);
    None
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use super::{Held, Lane, NARROW_LIMIT, WIDTH};
    use std::arch::x86_64::*;

    /// One field of every lane, for one vector; lanes past the last get `pad`.
    #[inline(always)]
    pub(in crate::engine::backlog) fn gather<L>(
        lanes: impl IntoIterator<Item = L>,
        pad: u64,
        field: impl Fn(L) -> u64,
    ) -> [u64; WIDTH] {
        let mut v = [pad; WIDTH];
        for (slot, lane) in v.iter_mut().zip(lanes) {
            *slot = field(lane);
        }
        v
    }

    #[target_feature(enable = "avx512f,avx512dq")]
    #[inline]
    pub(in crate::engine::backlog) fn load(a: &[u64; WIDTH]) -> __m512i {
        // SAFETY: `a` holds exactly one vector's bytes; unaligned loads are allowed.
        unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx512f,avx512dq")]
    #[inline]
    pub(in crate::engine::backlog) fn store(v: __m512i) -> [u64; WIDTH] {
        let mut a = [0u64; WIDTH];
        // SAFETY: `a` has room for exactly one vector; unaligned stores are allowed.
        unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), v) };
        a
    }

    /// The lanes' changing state, one vector per field.
    struct State {
        q: __m512i,
        start: __m512i,
        best: __m512i,
        peak: __m512i,
        longest: __m512i,
    }

    impl State {
        #[target_feature(enable = "avx512f,avx512dq")]
        fn load(lanes: &[Lane<u64>]) -> Self {
            // Padding lanes: an empty queue that never reaches a new maximum nor a longest
            // period (their masks are off as well).
            State {
                q: load(&gather(lanes, 0, |l| l.q)),
                start: load(&gather(lanes, 0, |l| l.start_ns as u64)),
                best: load(&gather(lanes, u64::MAX, |l| l.best_q)),
                peak: load(&gather(lanes, 0, |l| l.peak_ns as u64)),
                longest: load(&gather(lanes, u64::MAX, |l| l.longest_ns as u64)),
            }
        }

        /// Back into the lanes (`longest` is never changed by the vectors: the scalar lanes
        /// keep it).
        #[target_feature(enable = "avx512f,avx512dq")]
        fn save(&self, lanes: &mut [Lane<u64>]) {
            let (q, start, best, peak) = (
                store(self.q),
                store(self.start),
                store(self.best),
                store(self.peak),
            );
            for (k, lane) in lanes.iter_mut().enumerate() {
                lane.q = q[k];
                lane.start_ns = start[k] as i64;
                lane.best_q = best[k];
                lane.peak_ns = peak[k] as i64;
            }
        }
    }

    /// Lanes `0..n` of a vector, as a mask.
    pub(in crate::engine::backlog) fn lanes_mask(n: usize) -> __mmask8 {
        debug_assert!(n <= WIDTH);
        ((1u32 << n) - 1) as __mmask8
    }

    /// See [`super::run`]. The per-packet steps are those of [`Lane::run`], lane for lane.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) fn run(lanes: &mut [Lane<u64>], mut last: i64, held: &[Held]) -> Result<(), usize> {
        let active = lanes_mask(lanes.len());
        let rate = load(&gather(&*lanes, 0, |l| l.rate));
        let dcap = load(&gather(&*lanes, 0, |l| l.dcap));
        let shift = load(&gather(&*lanes, 0, |l| u64::from(l.shift)));
        let (zero, one) = (_mm512_setzero_si512(), _mm512_set1_epi64(1));
        let limit = _mm512_set1_epi64(NARROW_LIMIT as i64);
        let mut s = State::load(lanes);
        for (i, h) in held.iter().enumerate() {
            let ts = _mm512_set1_epi64(h.ts);
            let val = _mm512_set1_epi64(h.val as i64);
            // Sorted input: the wrapped difference is the exact one.
            let dt = _mm512_set1_epi64(h.ts.wrapping_sub(last));
            let served = _mm512_mullo_epi64(rate, _mm512_min_epu64(dt, dcap));
            // A busy period that may beat the longest ends here (bound without division).
            let span = _mm512_sub_epi64(_mm512_set1_epi64(last), s.start);
            let bound =
                _mm512_add_epi64(span, _mm512_add_epi64(_mm512_srlv_epi64(s.q, shift), one));
            let closes = _mm512_mask_cmpgt_epu64_mask(active, bound, s.longest)
                & _mm512_cmplt_epu64_mask(_mm512_sub_epi64(s.q, one), served);
            // Where it does, that lane starts the packet from an empty queue.
            let q = _mm512_mask_mov_epi64(s.q, closes, zero);
            let rem = _mm512_sub_epi64(q, _mm512_min_epu64(q, served));
            let next = _mm512_add_epi64(rem, val);
            if _mm512_mask_cmpge_epu64_mask(active, next, limit) != 0 {
                s.save(lanes);
                return Err(i);
            }
            if closes != 0 {
                // Rare: the scalar lanes take this packet, closing the periods themselves.
                s.save(lanes);
                for lane in lanes.iter_mut() {
                    // Cannot fail: the check above saw every queue this packet leaves.
                    let _ = lane.run(last, std::slice::from_ref(h));
                }
                s = State::load(lanes);
            } else {
                let empty = _mm512_cmpeq_epu64_mask(rem, zero);
                s.start = _mm512_mask_mov_epi64(s.start, empty, ts);
                s.q = _mm512_maskz_mov_epi64(active, next);
                let higher = _mm512_cmpgt_epu64_mask(s.q, s.best);
                s.best = _mm512_mask_mov_epi64(s.best, higher, s.q);
                s.peak = _mm512_mask_mov_epi64(s.peak, higher, ts);
            }
            last = h.ts;
        }
        s.save(lanes);
        Ok(())
    }
}
