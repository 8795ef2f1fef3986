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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TsConv {
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
        Some(TsConv {
            scale,
            offset_ns: i128::from(offset_s) * i128::from(NS_PER_S),
        })
    }

    /// Nanoseconds since the epoch, `None` if the result does not fit i64.
    #[inline]
    pub(crate) fn to_ns(self, raw: u64) -> Option<i64> {
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

    #[test]
    fn absurd_resolutions_are_refused() {
        assert!(TsConv::new(TsResolution::Pow10(20), 0).is_none());
        assert!(TsConv::new(TsResolution::Pow2(64), 0).is_none());
        assert!(TsConv::new(TsResolution::Pow2(127), 0).is_none());
    }
}
