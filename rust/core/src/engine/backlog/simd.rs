//! The u64 lanes eight at a time, in AVX-512 registers (x86-64 CPUs that have AVX-512F and DQ,
//! checked at run time), or four at a time in AVX2 registers (`avx2`, x86-64 CPUs without
//! AVX-512; the chunk's lanes too); elsewhere the lanes run one by one.
//!
//! One by one, each rate's loop is a chain of dependent operations per packet (the queue is
//! served, then the packet's work is added), about 1.4 ns per packet and rate on the benchmark
//! machine. Here one packet updates eight queues with a handful of vector instructions. The
//! scalar [`Lane::run`] stays the reference: a packet at which some lane closes a busy period
//! longer than the longest (rare once the longest is long) goes through it, lane by lane, so
//! every result is the scalar one bit for bit.

use super::{Held, Lane, NARROW_LIMIT};

/// Lanes per vector.
pub(super) const WIDTH: usize = 8;

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2;

/// Lanes [`run`] takes at a time on this CPU (one where it has no vector lanes).
pub(super) fn width() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if available() {
            return WIDTH;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::WIDTH;
        }
    }
    1
}

#[cfg(test)]
thread_local! {
    static AVX512_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `f` run as on a CPU without AVX-512, so that the AVX2 lanes are tested on CPUs that have it.
#[cfg(test)]
pub(super) fn without_avx512<R>(f: impl FnOnce() -> R) -> R {
    AVX512_OFF.with(|off| off.set(true));
    let r = f();
    AVX512_OFF.with(|off| off.set(false));
    r
}

/// Whether this CPU runs the AVX-512 lanes.
pub(super) fn available() -> bool {
    #[cfg(test)]
    if AVX512_OFF.with(|off| off.get()) {
        return false;
    }
    // A fuzz target turns it per input, so that an AVX-512 host fuzzes the AVX2 lanes too.
    #[cfg(fuzzing)]
    if crate::fuzzing::avx512_off() {
        return false;
    }
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

/// Run up to [`width`] lanes over `held`, the lanes' latest packet being at `last`, as
/// [`Lane::run`] runs each. `Err(i)`: a queue would not fit a u64 at `held[i]`; every lane is
/// left as it was before that packet. `None`: this CPU has no vector lanes (nothing ran).
pub(super) fn run(lanes: &mut [Lane<u64>], last: i64, held: &[Held]) -> Option<Result<(), usize>> {
    debug_assert!(lanes.len() <= WIDTH);
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512F and AVX-512DQ (checked just above; the check is cached).
        return Some(unsafe { avx512::run(lanes, last, held) });
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the check is cached).
        return Some(unsafe { avx2::run(lanes, last, held) });
    }
    let _ = (lanes, last, held);
    None
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    //! The per-packet steps shared by the sequential lanes ([`run`]) and the chunk's
    //! (`chunk::simd`): [`Rates`] and [`Queues`] hold one field of up to eight lanes per vector.

    use super::{Held, Lane, NARROW_LIMIT, WIDTH};
    use std::arch::x86_64::*;

    /// Fields of up to [`WIDTH`] lanes, one array per field, for vectors, and how many lanes
    /// there were; lanes past the last get the field's `pad`.
    #[inline(always)]
    fn fields<const F: usize>(
        lanes: impl IntoIterator<Item = [u64; F]>,
        pad: [u64; F],
    ) -> ([[u64; WIDTH]; F], usize) {
        let mut out = [[0u64; WIDTH]; F];
        for (f, &p) in pad.iter().enumerate() {
            out[f] = [p; WIDTH];
        }
        let mut n = 0;
        for (k, lane) in lanes.into_iter().take(WIDTH).enumerate() {
            for (f, v) in lane.into_iter().enumerate() {
                out[f][k] = v;
            }
            n = k + 1;
        }
        (out, n)
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

    /// The lanes' rates, the constants derived from them, and which lanes are real.
    pub(in crate::engine::backlog) struct Rates {
        rate: __m512i,
        dcap: __m512i,
        pub(in crate::engine::backlog) active: __mmask8,
    }

    impl Rates {
        /// From each lane's (rate, dcap).
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn load(lanes: impl IntoIterator<Item = [u64; 2]>) -> Self {
            let ([rate, dcap], n) = fields(lanes, [0; 2]);
            let active = ((1u32 << n) - 1) as __mmask8;
            Rates {
                rate: load(&rate),
                dcap: load(&dcap),
                active,
            }
        }
    }

    /// Per lane: the queue after the latest packet, the start of its busy period, the largest
    /// queue and its time, and the longest busy period so far (as the scalar lane's test
    /// compares it).
    #[derive(Clone, Copy)]
    pub(in crate::engine::backlog) struct Queues {
        pub(in crate::engine::backlog) q: __m512i,
        pub(in crate::engine::backlog) start: __m512i,
        best: __m512i,
        peak: __m512i,
        longest: __m512i,
    }

    /// One packet against the queues, before anything changes.
    pub(in crate::engine::backlog) struct Step {
        pub(in crate::engine::backlog) served: __m512i,
        /// Lanes where a busy period longer than the longest ends.
        pub(in crate::engine::backlog) closes: __mmask8,
        /// min(q, served): the part of the queue served before the packet.
        pub(in crate::engine::backlog) least: __m512i,
        /// The queue once the packet is on it, and what is left of it before.
        next: __m512i,
        rem: __m512i,
        /// Some queue would not fit a u64.
        pub(in crate::engine::backlog) over: bool,
        ts: __m512i,
    }

    impl Queues {
        /// From each lane's (q, start, best, peak, longest). Lanes past the last: an empty
        /// queue that never reaches a new maximum nor a longest period.
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn load(lanes: impl IntoIterator<Item = [u64; 5]>) -> Self {
            let ([q, start, best, peak, longest], _) = fields(lanes, [0, 0, u64::MAX, 0, u64::MAX]);
            Queues {
                q: load(&q),
                start: load(&start),
                best: load(&best),
                peak: load(&peak),
                longest: load(&longest),
            }
        }

        /// Each lane's (q, start, best, peak); `longest` changes only in the scalar lanes.
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn save(&self) -> [[u64; 4]; WIDTH] {
            let (q, start, best, peak) = (
                store(self.q),
                store(self.start),
                store(self.best),
                store(self.peak),
            );
            std::array::from_fn(|k| [q[k], start[k], best[k], peak[k]])
        }

        /// Each lane's longest busy period, from `longest` (lanes past the last keep theirs):
        /// where a lane closed one or kept an empty instant outside the vector.
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn set_longest(
            &mut self,
            longest: impl Iterator<Item = u64>,
        ) {
            let mut a = store(self.longest);
            for (k, l) in longest.take(WIDTH).enumerate() {
                a[k] = l;
            }
            self.longest = load(&a);
        }

        /// The packet `h` after one at `last` (sorted: the wrapped difference is the exact
        /// one), as the scalar lanes see it.
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn step(&self, rates: &Rates, last: i64, h: &Held) -> Step {
            let one = _mm512_set1_epi64(1);
            let dt = _mm512_set1_epi64(h.ts.wrapping_sub(last));
            let served = _mm512_mullo_epi64(rates.rate, _mm512_min_epu64(dt, rates.dcap));
            // A busy period ends (0 < q ≤ served) and lasts longer than the longest:
            // span + ⌈q/rate⌉ > longest, that is span > longest or q > (longest − span) × rate.
            // The product is exact up to dcap (rate × dcap < 2⁶⁴); from dcap on it is at least
            // 2⁶³, beyond every u64 queue, and so is rate × dcap. The scalar lanes' bound
            // without division overshoots by up to the drain time, which flagged every packet
            // of a group whose queues empty between packets (a pair among many): each period
            // of one full-size packet is as long as the longest.
            let span = _mm512_sub_epi64(_mm512_set1_epi64(last), self.start);
            let ends =
                _mm512_mask_cmplt_epu64_mask(rates.active, _mm512_sub_epi64(self.q, one), served);
            let within = _mm512_min_epu64(_mm512_sub_epi64(self.longest, span), rates.dcap);
            let longer = _mm512_cmpgt_epu64_mask(span, self.longest)
                | _mm512_cmpgt_epu64_mask(self.q, _mm512_mullo_epi64(within, rates.rate));
            let closes = ends & longer;
            // A closing lane's queue is at most `served`: it leaves nothing either way.
            let least = _mm512_min_epu64(self.q, served);
            let rem = _mm512_sub_epi64(self.q, least);
            let next = _mm512_add_epi64(rem, _mm512_set1_epi64(h.val as i64));
            let limit = _mm512_set1_epi64(NARROW_LIMIT as i64);
            Step {
                served,
                closes,
                least,
                next,
                rem,
                over: _mm512_mask_cmpge_epu64_mask(rates.active, next, limit) != 0,
                ts: _mm512_set1_epi64(h.ts),
            }
        }

        /// Put the packet of `step` on the queues (no lane closes a period that may be the
        /// longest, none overflows).
        #[target_feature(enable = "avx512f,avx512dq")]
        pub(in crate::engine::backlog) fn take(&mut self, rates: &Rates, step: &Step) {
            let empty = _mm512_cmpeq_epu64_mask(step.rem, _mm512_setzero_si512());
            self.start = _mm512_mask_mov_epi64(self.start, empty, step.ts);
            self.q = _mm512_maskz_mov_epi64(rates.active, step.next);
            let higher = _mm512_cmpgt_epu64_mask(self.q, self.best);
            self.best = _mm512_mask_mov_epi64(self.best, higher, self.q);
            self.peak = _mm512_mask_mov_epi64(self.peak, higher, step.ts);
        }
    }

    fn queues(lanes: &[Lane<u64>]) -> impl Iterator<Item = [u64; 5]> + '_ {
        lanes.iter().map(|l| {
            let (start, peak) = (l.start_ns as u64, l.peak_ns as u64);
            [l.q, start, l.best_q, peak, l.longest_ns as u64]
        })
    }

    #[target_feature(enable = "avx512f,avx512dq")]
    fn save(s: &Queues, lanes: &mut [Lane<u64>]) {
        for (lane, [q, start, best, peak]) in lanes.iter_mut().zip(s.save()) {
            (lane.q, lane.start_ns, lane.best_q, lane.peak_ns) =
                (q, start as i64, best, peak as i64);
        }
    }

    /// See [`super::run`]. The per-packet steps are those of [`Lane::run`], lane for lane.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) fn run(lanes: &mut [Lane<u64>], mut last: i64, held: &[Held]) -> Result<(), usize> {
        let rates = Rates::load(lanes.iter().map(|l| [l.rate, l.dcap]));
        let mut s = Queues::load(queues(lanes));
        for (i, h) in held.iter().enumerate() {
            let step = s.step(&rates, last, h);
            if step.over {
                save(&s, lanes);
                return Err(i);
            }
            if step.closes != 0 {
                // Rare: the scalar lanes take this packet, closing the periods themselves.
                save(&s, lanes);
                for lane in lanes.iter_mut() {
                    // Cannot fail: the check above saw every queue this packet leaves.
                    let _ = lane.run(last, std::slice::from_ref(h));
                }
                s = Queues::load(queues(lanes));
            } else {
                s.take(&rates, &step);
            }
            last = h.ts;
        }
        save(&s, lanes);
        Ok(())
    }
}
