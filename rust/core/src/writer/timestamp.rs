//! Exact conversion between i64 nanoseconds since the epoch and an interface's raw timestamp units.
//!
//! A pcapng timestamp is a u64 count of units of 10^-n or 2^-n seconds since
//! `if_tsoffset` seconds after the epoch. The reader maps it to `floor(raw·10^9 / units) + offset·10^9`
//! ns. The writer starts from `R = floor((ns − offset·10^9)·units / 10^9)` and takes `R + 1` instead
//! when `R` reads back below `ns` and `R + 1` reads back exactly `ns`: with units finer than 1 ns
//! (or 2^-n units that fall between whole ns) the floor alone would read back 1 ns early. So the
//! written tick is the first one that reads back as `ns` when there is one, the tick before `ns`
//! otherwise. Everything is done in i128 with checked operations: no float, no silent wrap.

use crate::capture::TsResolution;
use crate::error::{Error, Result};

const NS_PER_S: i128 = 1_000_000_000;

/// Units per second of a resolution, or `None` when it does not fit in a u128
/// (10^n with n > 38, 2^n with n > 127).
pub fn units_per_second(resolution: TsResolution) -> Option<u128> {
    match resolution {
        TsResolution::Pow10(n) => 10u128.checked_pow(u32::from(n)),
        TsResolution::Pow2(n) => 1u128.checked_shl(u32::from(n)),
    }
}

/// The `if_tsresol` option byte for a resolution: n for 10^-n, 0x80 | n for 2^-n.
pub fn tsresol_byte(resolution: TsResolution) -> Result<u8> {
    match resolution {
        TsResolution::Pow10(n) if n < 0x80 => Ok(n),
        TsResolution::Pow2(n) if n < 0x80 => Ok(0x80 | n),
        _ => Err(Error::invalid(format!(
            "timestamp resolution {resolution} s has no if_tsresol encoding (exponent above 127)"
        ))),
    }
}

/// Raw units of an interface for `ts_ns`, floored: `floor((ts_ns − offset_s·10^9)·units / 10^9)`.
/// An error if the result is negative or does not fit in the u64 of a pcapng timestamp.
pub fn ns_to_raw(ts_ns: i64, resolution: TsResolution, offset_s: i64) -> Result<u64> {
    // Fast path (the writer's hot loop): units of 10^-n s with n ≤ 9 are whole ns, so the floor
    // is always the answer and i64 arithmetic is enough.
    if let TsResolution::Pow10(n @ 0..=9) = resolution {
        let since_offset = offset_s
            .checked_mul(1_000_000_000)
            .and_then(|o| ts_ns.checked_sub(o));
        if let Some(x) = since_offset {
            if let Ok(raw) = u64::try_from(x.div_euclid(10i64.pow(9 - u32::from(n)))) {
                return Ok(raw);
            }
        }
    }
    let unit = format!("{resolution} s");
    let units = units_per_second(resolution)
        .and_then(|u| i128::try_from(u).ok())
        .ok_or_else(|| {
            Error::invalid(format!(
                "timestamp resolution {unit} is too fine to convert (2^127 ticks a second or more)"
            ))
        })?;
    let since_offset = i128::from(ts_ns) - i128::from(offset_s) * NS_PER_S;
    if since_offset < 0 {
        return Err(Error::invalid(format!(
            "timestamp {ts_ns} ns is before the interface's if_tsoffset of {offset_s} s, where \
             its ticks start: declare the interface with an offset at or before its first packet"
        )));
    }
    let too_late = || {
        let span_s = u128::from(u64::MAX) / units.unsigned_abs();
        Error::invalid(format!(
            "timestamp {ts_ns} ns is {since_offset} ns after the interface's if_tsoffset of \
             {offset_s} s, past the 2^64 ticks of {unit} a pcapng timestamp holds (about \
             {span_s} s): use a coarser resolution or an offset closer to the packets"
        ))
    };
    let scaled = since_offset.checked_mul(units).ok_or_else(too_late)?;
    let floor = scaled.div_euclid(NS_PER_S);
    let reads_back = |r: i128| r.checked_mul(NS_PER_S).map(|v| v.div_euclid(units));
    let raw =
        if reads_back(floor) != Some(since_offset) && reads_back(floor + 1) == Some(since_offset) {
            floor + 1
        } else {
            floor
        };
    u64::try_from(raw).map_err(|_| too_late())
}

/// Nanoseconds for raw units, floored (the reader's direction), or `None` if outside i64: the
/// tests' check that a written tick reads back as it should.
#[cfg(test)]
pub fn raw_to_ns(raw: u64, resolution: TsResolution, offset_s: i64) -> Option<i64> {
    let units = i128::try_from(units_per_second(resolution)?).ok()?;
    let ns = i128::from(raw).checked_mul(NS_PER_S)?.div_euclid(units);
    i64::try_from(ns.checked_add(i128::from(offset_s) * NS_PER_S)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(state: &mut u64) -> u64 {
        // SplitMix64
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    const RESOLUTIONS: [TsResolution; 9] = [
        TsResolution::Pow10(0),
        TsResolution::Pow10(3),
        TsResolution::Pow10(6),
        TsResolution::Pow10(9),
        TsResolution::Pow10(12),
        TsResolution::Pow2(0),
        TsResolution::Pow2(10),
        TsResolution::Pow2(30),
        TsResolution::Pow2(40),
    ];

    /// Read-back of raw units relative to the offset, as the reader defines it.
    fn read(raw: i128, units: i128) -> i128 {
        (raw * 1_000_000_000).div_euclid(units)
    }

    /// The written tick reads back at or before ns, the next one after ns unless this one is
    /// exact, and it is the first tick that reads back as ns.
    #[test]
    fn ns_to_raw_picks_the_first_tick_that_reads_back() {
        let mut s = 7u64;
        for _ in 0..20_000 {
            let res = RESOLUTIONS[(rng(&mut s) % RESOLUTIONS.len() as u64) as usize];
            let offset = (rng(&mut s) % 4_000_000_000) as i64 - 2_000_000_000;
            let ts = (rng(&mut s) >> 2) as i64 - (1 << 61);
            let units = units_per_second(res).unwrap() as i128;
            let x = ts as i128 - offset as i128 * 1_000_000_000;
            match ns_to_raw(ts, res, offset) {
                Ok(raw) => {
                    let raw = raw as i128;
                    let ctx = format!("{ts} {res:?} {offset} -> {raw}");
                    assert!(read(raw, units) <= x, "{ctx}");
                    assert!(read(raw, units) == x || read(raw + 1, units) > x, "{ctx}");
                    assert!(raw == 0 || read(raw - 1, units) < x, "{ctx}");
                }
                Err(_) => assert!(
                    x < 0 || (x * units).div_euclid(1_000_000_000) > u64::MAX as i128,
                    "{ts} {res:?} {offset}"
                ),
            }
        }
    }

    #[test]
    fn fine_resolutions_round_trip_exactly() {
        let mut s = 11u64;
        for _ in 0..20_000 {
            let res = [
                TsResolution::Pow10(9),
                TsResolution::Pow2(30),
                TsResolution::Pow10(12),
            ][(rng(&mut s) % 3) as usize];
            let offset = (rng(&mut s) % 2_000_000) as i64 - 1_000_000;
            let ts = (rng(&mut s) % (1 << 62)) as i64;
            if let Ok(raw) = ns_to_raw(ts, res, offset) {
                assert_eq!(raw_to_ns(raw, res, offset), Some(ts));
            }
        }
    }

    /// The errors say which limit was passed, in the resolution's usual notation, and what to do.
    #[test]
    fn unrepresentable_timestamps_say_why() {
        let msg = |ts, res, off| ns_to_raw(ts, res, off).unwrap_err().to_string();
        let before = msg(0, TsResolution::Pow10(9), 5);
        assert!(
            before.contains("before the interface's if_tsoffset of 5 s"),
            "{before}"
        );
        let before = msg(-1, TsResolution::Pow2(30), 0);
        assert!(
            before.contains("before the interface's if_tsoffset of 0 s"),
            "{before}"
        );
        // 2^64 ticks of 1e-19 s are 1.84 s.
        let late = msg(2_000_000_000, TsResolution::Pow10(19), 0);
        assert!(
            late.contains("past the 2^64 ticks of 1e-19 s")
                && late.contains("about 1 s")
                && late.contains("coarser resolution"),
            "{late}"
        );
        let late = msg(i64::MAX, TsResolution::Pow2(63), -3);
        assert!(late.contains("2^64 ticks of 2^-63 s"), "{late}");
        let bad = tsresol_byte(TsResolution::Pow2(200))
            .unwrap_err()
            .to_string();
        assert!(bad.contains("2^-200 s has no if_tsresol encoding"), "{bad}");
    }

    #[test]
    fn resolution_bytes_follow_the_spec() {
        assert_eq!(tsresol_byte(TsResolution::Pow10(9)).unwrap(), 9);
        assert_eq!(tsresol_byte(TsResolution::Pow2(10)).unwrap(), 0x8A);
        assert!(tsresol_byte(TsResolution::Pow10(128)).is_err());
        assert!(ns_to_raw(0, TsResolution::Pow10(60), 0).is_err());
        assert!(ns_to_raw(-1, TsResolution::Pow10(9), 0).is_err());
        assert_eq!(
            ns_to_raw(-1_000_000_000, TsResolution::Pow10(0), -1).unwrap(),
            0
        );
    }
}
