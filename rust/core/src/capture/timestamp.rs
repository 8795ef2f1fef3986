//! Raw timestamp ticks to nanoseconds since the epoch, exactly.
//!
//! A tick count `raw` in units of 10^-k or 2^-k seconds becomes floor(raw * 10^9 / unit) ns, plus
//! the interface's if_tsoffset in whole seconds. The products are taken in 128 bits, so nothing
//! overflows before the final check that the result fits i64. Resolutions finer than 1 ns are
//! rounded toward -inf (the raw value is unsigned and the offset is a whole number of ns, so
//! truncating the division is the floor).
//!
//! Limits: 10^-k with k > 19 and 2^-k with k > 63 are rejected as corrupt; no real clock ticks
//! faster than that and such values are far more likely to be damage.

use super::TsResolution;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// Coarser than (or equal to) 1 ns: multiply by this many ns per tick.
    Mul(u64),
    /// Finer than 1 ns (decimal): divide by this many ticks per ns.
    Div(u64),
    /// 2^-k: (raw * 10^9) >> k.
    Shift(u32),
}

/// Precomputed conversion for one interface.
///
/// `raw < fast_end` is the common case (10^-k, k <= 9, with a timestamp that fits): there the
/// result is `raw * mul + offset` in plain 64-bit arithmetic, exact because `fast_end` is chosen
/// so that it cannot overflow. Everything else takes the 128-bit path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TsConv {
    fast_end: u64,
    mul: u64,
    fast_offset_ns: i64,
    scale: Scale,
    offset_ns: i128,
}

const NS_PER_S: u64 = 1_000_000_000;

impl TsConv {
    /// `None` when the resolution is beyond the documented limits.
    pub(crate) fn new(res: TsResolution, offset_s: i64) -> Option<TsConv> {
        let scale = match res {
            TsResolution::Pow10(k) if k <= 9 => Scale::Mul(10u64.pow(9 - u32::from(k))),
            TsResolution::Pow10(k) if k <= 19 => Scale::Div(10u64.pow(u32::from(k) - 9)),
            TsResolution::Pow2(k) if k <= 63 => Scale::Shift(u32::from(k)),
            _ => return None,
        };
        let offset_ns = i128::from(offset_s) * i128::from(NS_PER_S);
        // For raw <= limit, raw * m <= i64::MAX - offset <= u64::MAX and the sum lies in
        // [offset, i64::MAX]: no step of the fast path can overflow.
        let (fast_end, mul, fast_offset_ns) = match (scale, i64::try_from(offset_ns)) {
            (Scale::Mul(m), Ok(off)) => {
                let limit = (i128::from(i64::MAX) - i128::from(off)) / i128::from(m);
                let end = u64::try_from(limit).map_or(u64::MAX, |l| l.saturating_add(1));
                (end, m, off)
            }
            _ => (0, 0, 0),
        };
        Some(TsConv {
            fast_end,
            mul,
            fast_offset_ns,
            scale,
            offset_ns,
        })
    }

    /// Nanoseconds since the epoch, `None` if the result does not fit i64.
    #[inline(always)]
    pub(crate) fn to_ns(self, raw: u64) -> Option<i64> {
        if raw < self.fast_end {
            // The product fits u64 and the true sum fits i64 (see `new`); the sum is taken
            // modulo 2^64, which gives that true sum exactly even when the product alone
            // exceeds i64::MAX (negative offset).
            return Some((raw.wrapping_mul(self.mul) as i64).wrapping_add(self.fast_offset_ns));
        }
        self.to_ns_general(raw)
    }

    #[inline(never)]
    fn to_ns_general(self, raw: u64) -> Option<i64> {
        let ns: u128 = match self.scale {
            Scale::Mul(m) => u128::from(raw) * u128::from(m),
            Scale::Div(d) => u128::from(raw / d),
            Scale::Shift(k) => (u128::from(raw) * u128::from(NS_PER_S)) >> k,
        };
        // ns < 2^94 and |offset| < 2^94: the sum fits i128.
        i64::try_from(ns as i128 + self.offset_ns).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force reference: exact rational arithmetic on big enough integers.
    fn reference(res: TsResolution, offset_s: i64, raw: u64) -> Option<i64> {
        let (num, den): (i128, i128) = match res {
            TsResolution::Pow10(k) => (1_000_000_000, 10i128.pow(u32::from(k))),
            TsResolution::Pow2(k) => (1_000_000_000, 1i128 << k),
        };
        let v = (raw as i128 * num).div_euclid(den) + offset_s as i128 * 1_000_000_000;
        i64::try_from(v).ok()
    }

    #[test]
    fn matches_exact_rational_floor() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut resolutions: Vec<TsResolution> = (0..=19).map(TsResolution::Pow10).collect();
        resolutions.extend((0..=63).map(TsResolution::Pow2));
        for &res in &resolutions {
            for offset in [0i64, 1, -1, -1_700_000_000, 9_000_000_000, i64::MIN / 2] {
                let conv = TsConv::new(res, offset).unwrap();
                for raw in [0u64, 1, u64::MAX, u64::MAX / 1000, 1_340_954_905_298_858] {
                    assert_eq!(
                        conv.to_ns(raw),
                        reference(res, offset, raw),
                        "{res:?} {offset} {raw}"
                    );
                }
                for _ in 0..200 {
                    let raw = next() >> (next() % 64);
                    assert_eq!(
                        conv.to_ns(raw),
                        reference(res, offset, raw),
                        "{res:?} {offset} {raw}"
                    );
                }
            }
        }
    }

    /// The 64-bit fast path must agree with the reference right at its boundary, for offsets
    /// near the ends of the range and resolutions whose products come close to 2^64.
    #[test]
    fn fast_path_boundary_is_exact() {
        let offsets = [
            0i64,
            1,
            -1,
            1_700_000_000,
            -1_700_000_000,
            9_223_372_036,
            -9_223_372_036,
            9_223_372_037,
            -9_223_372_037,
            i64::MAX,
            i64::MIN,
        ];
        for k in 0..=19u8 {
            let res = TsResolution::Pow10(k);
            for offset in offsets {
                let conv = TsConv::new(res, offset).unwrap();
                let mut raws = vec![0u64, 1, u64::MAX - 1, u64::MAX];
                for d in 0..3u64 {
                    raws.push(conv.fast_end.wrapping_sub(d));
                    raws.push(conv.fast_end.saturating_add(d));
                }
                for raw in raws {
                    assert_eq!(
                        conv.to_ns(raw),
                        reference(res, offset, raw),
                        "{res:?} {offset} {raw}"
                    );
                }
            }
        }
    }

    #[test]
    fn absurd_resolutions_are_refused() {
        assert!(TsConv::new(TsResolution::Pow10(20), 0).is_none());
        assert!(TsConv::new(TsResolution::Pow2(64), 0).is_none());
        assert!(TsConv::new(TsResolution::Pow2(127), 0).is_none());
    }
}
