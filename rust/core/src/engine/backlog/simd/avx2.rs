//! The u64 lanes four at a time in AVX2 registers, on x86-64 CPUs without AVX-512 (AMD Zen 3 and
//! older, many Intel client parts); the chunk's lanes (`chunk::simd::avx2`) share the loop. AVX2
//! has neither a 64-bit multiply nor unsigned 64-bit comparisons, so this path takes only the
//! packets on which both are easy, and those are nearly all of them:
//!
//! - a packet less than `min(dcap)` and 2³² ns after the one before: every lane's `rate × dt` is
//!   then below 2⁶³ (see [`Lane::dcap`]) and two 32-bit multiplies give it exactly;
//! - every queue and every served amount is then below 2⁶³, so signed comparisons order them as
//!   the scalar lanes' unsigned ones do; the busy-period bound, which may pass 2⁶³, is compared
//!   with its sign bit flipped.
//!
//! Any other packet, and any packet at which a lane closes a busy period that may be the
//! longest, goes through the scalar [`Lane::run`], which stays the reference: every result is
//! the scalar one bit for bit. A packet at which some queue would not fit a u64 stops the block
//! before it ([`overflows`]).
//!
//! A block is one vector, not two: a lane's state is nine vectors, which fit the sixteen
//! registers; eight lanes in one loop spilled (seen in the profile).

use super::super::{Held, Lane, Scaled, NARROW_LIMIT};
use std::arch::x86_64::*;

/// Lanes per vector, and so per block.
pub(in crate::engine::backlog) const WIDTH: usize = 4;

/// The sign bit of a u64: flipping it turns an unsigned comparison into a signed one.
pub(in crate::engine::backlog) const SIGN: u64 = 1 << 63;

/// One field of up to [`WIDTH`] lanes, `pad` past the last.
#[target_feature(enable = "avx2")]
pub(in crate::engine::backlog) fn load(fields: impl IntoIterator<Item = u64>, pad: u64) -> __m256i {
    let mut a = [pad; WIDTH];
    for (k, v) in fields.into_iter().take(WIDTH).enumerate() {
        a[k] = v;
    }
    // SAFETY: `a` holds exactly one vector's bytes; unaligned loads are allowed.
    unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
pub(in crate::engine::backlog) fn store(v: __m256i) -> [u64; WIDTH] {
    let mut a = [0u64; WIDTH];
    // SAFETY: `a` has room for exactly one vector; unaligned stores are allowed.
    unsafe { _mm256_storeu_si256(a.as_mut_ptr().cast(), v) };
    a
}

/// What does not change while the vector takes packets: the rates as the vector uses them, and
/// the longest busy period (it changes only in the scalar lanes). Lanes past the last: rate 0,
/// a queue kept at 0 (`active`), which never reaches a new maximum nor the longest period.
#[derive(Clone, Copy)]
pub(in crate::engine::backlog) struct Rates {
    /// Each rate, and its upper 32 bits in the lower ones: `rate × dt` for `dt` < 2³² is
    /// `lo(rate)·dt + (hi(rate)·dt << 32)`.
    rate: __m256i,
    rate_hi: __m256i,
    shift: __m256i,
    /// All ones in the lanes that are real.
    active: __m256i,
    /// The longest busy period, its sign bit flipped (see the module doc).
    longest: __m256i,
    /// The largest queue that a busy period of one packet can leave and be no longer than the
    /// longest: longest × rate, at most 2⁶³ − 1 (every queue here is below 2⁶³).
    qmax: __m256i,
    /// The packets the vector takes are closer than this to the one before.
    pub(in crate::engine::backlog) dt_limit: u64,
}

impl Rates {
    /// From each lane's (rate, dcap, shift, longest).
    #[target_feature(enable = "avx2")]
    pub(in crate::engine::backlog) fn load(lanes: impl Iterator<Item = [u64; 4]> + Clone) -> Self {
        let f = |i: usize| lanes.clone().map(move |l| l[i]);
        Rates {
            rate: load(f(0), 0),
            rate_hi: load(f(0).map(|r| r >> 32), 0),
            shift: load(f(2), 0),
            active: load(f(0).map(|_| u64::MAX), 0),
            longest: load(f(3).map(|l| l ^ SIGN), u64::MAX ^ SIGN),
            qmax: load(
                f(3).zip(f(0)).map(|(longest, rate)| {
                    let most = u128::from(longest) * u128::from(rate);
                    most.min(u128::from(NARROW_LIMIT - 1)) as u64
                }),
                NARROW_LIMIT - 1,
            ),
            dt_limit: f(1).fold(1 << 32, u64::min),
        }
    }
}

/// Per lane: the queue after the latest packet, the start of its busy period, the largest
/// queue and its time.
#[derive(Clone, Copy)]
pub(in crate::engine::backlog) struct Queues {
    pub(in crate::engine::backlog) q: __m256i,
    pub(in crate::engine::backlog) start: __m256i,
    best: __m256i,
    peak: __m256i,
}

/// One packet against the queues, before anything changes.
pub(in crate::engine::backlog) struct Step {
    /// q − served: what is left of the queue where positive, the service left over where not.
    pub(in crate::engine::backlog) d: __m256i,
    /// All ones where the queue is still busy when the packet comes (d > 0).
    pub(in crate::engine::backlog) more: __m256i,
    /// The queue once the packet is on it (sign bit set where it would not fit a u64).
    pub(in crate::engine::backlog) next: __m256i,
    /// Sign bit set where a lane closes a period that may be the longest or its queue would not
    /// fit a u64: the scalar lanes take the packet.
    pub(in crate::engine::backlog) rare: __m256i,
}

impl Queues {
    /// From each lane's (q, start, best, peak).
    #[target_feature(enable = "avx2")]
    pub(in crate::engine::backlog) fn load(lanes: impl Iterator<Item = [u64; 4]> + Clone) -> Self {
        let f = |i: usize| lanes.clone().map(move |l| l[i]);
        Queues {
            q: load(f(0), 0),
            start: load(f(1), 0),
            best: load(f(2), 0),
            peak: load(f(3), 0),
        }
    }

    /// Each lane's (q, start, best, peak).
    #[target_feature(enable = "avx2")]
    pub(in crate::engine::backlog) fn save(&self) -> [[u64; 4]; WIDTH] {
        let (q, start, best, peak) = (
            store(self.q),
            store(self.start),
            store(self.best),
            store(self.peak),
        );
        std::array::from_fn(|k| [q[k], start[k], best[k], peak[k]])
    }

    /// The packet of work `val`, `dt` (< `dt_limit`) after the one at `last` (broadcast).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(in crate::engine::backlog) fn step(
        &self,
        rates: &Rates,
        last: __m256i,
        dt: u64,
        val: u64,
    ) -> Step {
        let zero = _mm256_setzero_si256();
        let dt = _mm256_set1_epi64x(dt as i64);
        let q = self.q;
        let served = _mm256_add_epi64(
            _mm256_mul_epu32(rates.rate, dt),
            _mm256_slli_epi64::<32>(_mm256_mul_epu32(rates.rate_hi, dt)),
        );
        let d = _mm256_sub_epi64(q, served);
        let more = _mm256_cmpgt_epi64(d, zero);
        let rem = _mm256_and_si256(d, more);
        // q − 1 < served (unsigned) is 0 < q ≤ served.
        let ends = _mm256_andnot_si256(more, _mm256_cmpgt_epi64(q, zero));
        // bound = span + (q >> shift) + 1 > longest is span + (q >> shift) ≥ longest.
        let span = _mm256_sub_epi64(last, self.start);
        let bound = _mm256_add_epi64(span, _mm256_srlv_epi64(q, rates.shift));
        let sign = _mm256_set1_epi64x(SIGN as i64);
        let short = _mm256_cmpgt_epi64(rates.longest, _mm256_xor_si256(bound, sign));
        // A period of one packet (span 0) lasts exactly ⌈q/rate⌉, no longer than the longest
        // where q ≤ longest × rate. The bound overshoots by up to twice the drain time, so in a
        // group whose queues empty before nearly every packet (a host or pair among many) it
        // flagged nearly every packet for the scalar lanes.
        let single = _mm256_cmpeq_epi64(span, zero);
        let within = _mm256_andnot_si256(_mm256_cmpgt_epi64(q, rates.qmax), single);
        let closes = _mm256_andnot_si256(_mm256_or_si256(short, within), ends);
        let next = _mm256_add_epi64(rem, _mm256_set1_epi64x(val as i64));
        Step {
            d,
            more,
            next,
            // A queue at 2⁶³ or more has its sign bit set (both terms are below 2⁶³).
            rare: _mm256_or_si256(closes, next),
        }
    }

    /// Put the packet of `step`, at `ts` (broadcast), on the queues.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(in crate::engine::backlog) fn take(&mut self, rates: &Rates, step: &Step, ts: __m256i) {
        // A packet that finds its queue empty starts a busy period.
        self.start = _mm256_blendv_epi8(ts, self.start, step.more);
        self.q = _mm256_and_si256(step.next, rates.active);
        let higher = _mm256_cmpgt_epi64(self.q, self.best);
        self.best = _mm256_blendv_epi8(self.best, self.q, higher);
        self.peak = _mm256_blendv_epi8(self.peak, ts, higher);
    }
}

/// Whether any lane's sign bit is set.
#[target_feature(enable = "avx2")]
#[inline]
pub(in crate::engine::backlog) fn any(v: __m256i) -> bool {
    _mm256_movemask_pd(_mm256_castsi256_pd(v)) != 0
}

/// Put the packets of `held` on the queues, the one before the first being at `last`, up to the
/// first that the vector cannot take: one `dt_limit` or more after the one before, or one whose
/// step is rare or, with the sign bit of some lane of `also(step)` set, rare to the caller.
/// `then` sees each packet taken, with its step and the queues it left. Returns how many it
/// took; the scalar lanes take the next.
#[target_feature(enable = "avx2")]
#[inline]
pub(in crate::engine::backlog) fn take(
    rates: &Rates,
    queues: &mut Queues,
    mut last: i64,
    held: &[Held],
    also: impl Fn(&Step) -> __m256i,
    mut then: impl FnMut(&Step, &Queues, &Held),
) -> usize {
    // A copy in a local, not behind the reference: kept in registers across the loop.
    let mut s = *queues;
    let mut last_v = _mm256_set1_epi64x(last);
    let mut took = 0;
    for h in held {
        // Sorted input: the wrapped difference is the exact one.
        let dt = h.ts.wrapping_sub(last) as u64;
        if dt >= rates.dt_limit {
            break;
        }
        let step = s.step(rates, last_v, dt, h.val);
        if any(_mm256_or_si256(step.rare, also(&step))) {
            break;
        }
        let ts = _mm256_set1_epi64x(h.ts);
        s.take(rates, &step, ts);
        then(&step, &s, h);
        (last, last_v) = (h.ts, ts);
        took += 1;
    }
    *queues = s;
    took
}

/// Whether a packet of work `val`, `dt` after the one before, leaves a queue `q` of a lane of
/// `rate` (and `dcap`) at 2⁶³ or more: where the scalar lanes would stop (`Err`). Checked before
/// the scalar lanes take a rare packet, so that they take it all or none do.
pub(in crate::engine::backlog) fn overflows(
    rate: u64,
    dcap: u64,
    q: u64,
    dt: u64,
    val: u64,
) -> bool {
    let served = <u64 as Scaled>::served(rate, dt, dcap);
    <u64 as Scaled>::add(q.saturating_sub(served), val).is_none()
}

/// See [`super::run`]. The per-packet steps are those of [`Lane::run`], lane for lane.
#[target_feature(enable = "avx2")]
pub(super) fn run(lanes: &mut [Lane<u64>], last: i64, held: &[Held]) -> Result<(), usize> {
    debug_assert!(lanes.len() <= WIDTH);
    debug_assert!(lanes.iter().all(|l| l.q < NARROW_LIMIT));
    let mut i = 0;
    while i < held.len() {
        let rates = Rates::load(
            lanes
                .iter()
                .map(|l| [l.rate, l.dcap, u64::from(l.shift), l.longest_ns as u64]),
        );
        let mut queues = Queues::load(
            lanes
                .iter()
                .map(|l| [l.q, l.start_ns as u64, l.best_q, l.peak_ns as u64]),
        );
        let prev = if i == 0 { last } else { held[i - 1].ts };
        let none = |_: &Step| _mm256_setzero_si256();
        i += take(&rates, &mut queues, prev, &held[i..], none, |_, _, _| ());
        for (lane, [q, start, best, peak]) in lanes.iter_mut().zip(queues.save()) {
            (lane.q, lane.start_ns, lane.best_q, lane.peak_ns) =
                (q, start as i64, best, peak as i64);
        }
        let Some(h) = held.get(i) else {
            break;
        };
        // Rare: the scalar lanes take this packet, unless some queue would not fit a u64.
        let prev = if i == 0 { last } else { held[i - 1].ts };
        let dt = h.ts.wrapping_sub(prev) as u64;
        if lanes
            .iter()
            .any(|l| overflows(l.rate, l.dcap, l.q, dt, h.val))
        {
            return Err(i);
        }
        for lane in lanes.iter_mut() {
            // Cannot fail: the check above saw every queue this packet leaves.
            let _ = lane.run(prev, std::slice::from_ref(h));
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::super::test_traces::{rates, trace};
    use super::super::super::{BACKLOG_SCALE, NARROW_SIZE};
    use super::*;
    use crate::test_rng::Rng;

    /// Each lane run by itself up to the first packet at which any lane's queue would not fit
    /// a u64 (as a block stops), and that packet.
    fn scalar(lanes: &mut [Lane<u64>], last: i64, held: &[Held]) -> Result<(), usize> {
        let stop = lanes
            .iter()
            .filter_map(|l| l.clone().run(last, held).err())
            .min();
        for lane in lanes.iter_mut() {
            lane.run(last, &held[..stop.unwrap_or(held.len())])
                .expect("stops before the first failure");
        }
        stop.map_or(Ok(()), Err)
    }

    /// The AVX2 lanes against the scalar ones, bit for bit, on traces that take every rare
    /// path: queues emptying exactly, periods that may be the longest, gaps past `dt_limit`
    /// and past 2³² ns, queues outgrowing u64. Runs on any CPU with AVX2, whichever lanes
    /// `simd::run` picks.
    #[test]
    fn vector_lanes_match_the_scalar_lanes() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = Rng(11);
        let mut rare = 0;
        for round in 0..3000 {
            let style = [0, 1, 3, 4, 5, 7][round % 6];
            let n = 1 + rng.below(400) as usize;
            let mut packets = trace(&mut rng, n, style);
            if round % 3 == 0 {
                // Gaps around 2³² ns, where `rate × dt` no longer takes two 32-bit multiplies.
                let mut shift = 0i64;
                for p in &mut packets {
                    if rng.below(20) == 0 {
                        shift +=
                            (1 << 32) - 2 + rng.below(4) as i64 + rng.below(2) as i64 * (1 << 36);
                    }
                    p.0 = p.0.saturating_add(shift);
                }
            }
            let first = packets[0].0;
            // The u64 lanes see sizes up to NARROW_SIZE and spans below 2⁶².
            let held: Vec<Held> = packets
                .iter()
                .filter(|&&(t, s)| s <= NARROW_SIZE && t.abs_diff(first) < 1 << 61)
                .map(|&(ts, s)| Held {
                    ts,
                    val: s * BACKLOG_SCALE,
                })
                .collect();
            let r = rates(&mut rng, true);
            let r = &r[..r.len().min(WIDTH)];
            let mut want: Vec<Lane<u64>> = r.iter().map(|&r| Lane::new(r, first)).collect();
            let mut got = want.clone();
            let (mut at, mut last) = (0, first);
            while at < held.len() {
                let to = held.len().min(at + 1 + rng.below(300) as usize);
                let ctx = format!("round {round}, style {style}, rates {r:?}, at {at}..{to}");
                // SAFETY: the CPU has AVX2 (checked above).
                let ran = unsafe { run(&mut got, last, &held[at..to]) };
                let expected = scalar(&mut want, last, &held[at..to]);
                assert_eq!(ran, expected, "{ctx}");
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{ctx}");
                if ran.is_err() {
                    // `Lanes::run` goes on in u128, which this test leaves alone.
                    rare += 1;
                    break;
                }
                (at, last) = (to, held[to - 1].ts);
            }
        }
        assert!(rare > 0, "no trace made a queue outgrow u64");
    }
}
