"""Human-friendly durations and rates, parsed exactly.

Durations become integer nanoseconds and rates integer bits per second, with integer arithmetic
on every digit written (never binary floats, nor Decimal's 28 digits), so "1.5s" is exactly
1_500_000_000 ns and "1.25GB/s" exactly 10 Gbit/s.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import operator
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

_DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
}

DURATION_FORMS = (
    "a string with a unit ('250ns', '5us', '5µs', '1.5ms', '2s', '1min', '1h'), a number of seconds, "
    "a datetime.timedelta, a numpy.timedelta64 or a pandas.Timedelta"
)

# A time scale (a window, a bin, a period, a gap, an idle timeout, the reorder horizon, the
# largest random offset) given as a plain number is read in seconds, and burstcore hands
# out nanoseconds (default_windows_ns(), config["windows_ns"], every *_ns column, whose smallest
# default is 1000 ns): a plain number this large is far more likely nanoseconds fed back than a
# window of a quarter of an hour or more, which can be written '1000s' or '1h'.
_PLAIN_SCALE_MAX_S = 1000

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_BARE_RE = re.compile(rf"^\s*[-+]?{_NUMBER}\s*$")
# A sign is read so that "-5ms" is told it must be positive rather than that it is no duration.
_DURATION_RE = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zµμ]+)\s*$")


_NS_PER_S = 1_000_000_000


class WrongTypeError(TypeError, ValueError):
    """An argument of a type burstcore does not take (a duration given as a list, a rate as
    None, a grouping as an int): a ``TypeError``, as Python's convention has it, and still a
    ``ValueError``, which these raised before they were made TypeErrors, so that an ``except
    ValueError`` written for them still catches them. A value of the right type that is wrong
    ("5 parsecs", -1, by="pairs") raises a plain ``ValueError``."""


def check_choice(value: Any, *, name: str, choices: tuple[str, ...], message: str) -> str:
    """``value``, one of ``choices`` (strings) as the str it equals; a value of another type is a
    ``WrongTypeError``, a string that is none of them a ``ValueError``, both with ``message``."""
    if not isinstance(value, str):
        raise WrongTypeError(f"{name}={said(value)} ({type(value).__name__}) is not a string: {message}")
    if value not in choices:
        raise ValueError(f"{name}={said(value)}: {message}")
    # A numpy or pandas string as the str it equals: configs hold plain values.
    return str(value)


# A decimal numeral's parts: sign, digits before and after the point, exponent.
_NUMERAL_RE = re.compile(r"\s*([-+]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?\s*")
# Past every range here (2^64 < 10^20, and what is held at ±10^_FAR stays past it in any unit).
_FAR = 40
# A numeral with more significant digits than this (zeros at either end aside) and below 10^_FAR
# has more than 60 of them after the point, more than the 43 factors of 2 and 12 of 5 of any unit
# here (Ti times 8, T): no whole ns or bit/s. Digits past it are cut, then a 1 keeps it not whole.
_DIGITS = 100


def _exponent(text: str | None) -> int:
    """A numeral's exponent; one of more than 30 digits is held at ±10^30, past any numeral's
    digits (int() would refuse one of more than 4300)."""
    digits = (text or "0").lstrip("+-").lstrip("0") or "0"
    e = int(digits) if len(digits) <= 30 else 10**30
    return -e if (text or "").startswith("-") else e


def _times(numeral: str, unit: int) -> Fraction:
    """``numeral`` (what ``_NUMBER`` matched, with a sign or not) times ``unit``, exactly, with
    integers: Decimal's default context rounded it to 28 digits ('1.00000000000000000000000000001ns'
    was read as 1 ns) and overflowed past 10^999999 ('1e9999999999s' raised decimal.Overflow). A
    magnitude past 10^_FAR, out of every range here, comes back as ±10^_FAR and one below 10^-_FAR as
    ±10^-_FAR (no whole number in any unit), so no power of ten of billions of digits is built."""
    m = _NUMERAL_RE.fullmatch(numeral)
    assert m, numeral
    sign, whole, fraction, exponent = m.groups()
    fraction = fraction or ""
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return Fraction(0)
    significant = digits.rstrip("0")
    power = _exponent(exponent) - len(fraction) + len(digits) - len(significant)
    top = power + len(significant)  # 10^(top-1) <= |numeral| < 10^top
    s = -1 if sign == "-" else 1
    if top > _FAR:
        return Fraction(s * 10**_FAR)
    if top < -_FAR:
        return Fraction(s, 10**_FAR)
    if len(significant) > _DIGITS:
        significant, power = significant[:_DIGITS] + "1", power + len(significant) - _DIGITS - 1
    return s * int(significant) * unit * Fraction(10) ** power


# Nanoseconds in one tick of numpy's time units of fixed length; a timedelta64's Y and M are its
# mean year and month (365.2425 days, and a 12th of that), as its astype() takes them.
_NUMPY_UNIT_NS: dict[str, Fraction] = {
    "Y": Fraction(31_556_952 * _NS_PER_S),
    "M": Fraction(2_629_746 * _NS_PER_S),
    "W": Fraction(7 * 86_400 * _NS_PER_S),
    "D": Fraction(86_400 * _NS_PER_S),
    "h": Fraction(3_600 * _NS_PER_S),
    "m": Fraction(60 * _NS_PER_S),
    "s": Fraction(_NS_PER_S),
    "ms": Fraction(1_000_000),
    "us": Fraction(1_000),
    "ns": Fraction(1),
    "ps": Fraction(1, 1_000),
    "fs": Fraction(1, 1_000_000),
    "as": Fraction(1, 1_000_000_000),
}


def _numpy_ticks(value: np.datetime64 | np.timedelta64) -> tuple[int, str]:
    """A datetime64's or timedelta64's count of its unit (since 1970 for a datetime), as a Python
    int, and that unit: astype('[ns]') wraps past int64 silently and truncates ps, fs and as."""
    unit, count = np.datetime_data(value.dtype)
    return int(value.view(np.int64)) * count, unit


def numpy_times_ns(values: np.ndarray, name: str) -> np.ndarray:
    """A numpy datetime64 (since 1970) or timedelta64 array of any fixed unit as int64 ns,
    exactly: polars takes only D, ms, us and ns, and ``astype('M8[ns]')`` wraps past int64 and
    truncates ps, fs and as. A value out of int64 ns, below the ns or NaT is refused."""
    unit, count = np.datetime_data(values.dtype)
    if unit in ("Y", "M", "generic"):
        # Calendar years and months have no fixed length in ns.
        raise ValueError(f"{name} of numpy {values.dtype} have no fixed unit of time: give datetime64[ns] or int ns")
    raw = values.view(np.int64)
    if np.isnat(values).any():
        raise ValueError(f"{name} must not contain NaT")
    scale = _NUMPY_UNIT_NS[unit] * count
    if not raw.size:
        return raw.astype(np.int64)
    if scale.denominator != 1 and (raw % scale.denominator).any():
        raise ValueError(
            f"{name} of numpy {values.dtype} have more than nanosecond precision; burstcore works in integer ns"
        )
    lo, hi = int(raw.min()), int(raw.max())
    if not (-(2**63) <= lo * scale and hi * scale < 2**63):
        raise ValueError(
            f"{name} of numpy {values.dtype} are outside int64 nanoseconds since 1970 (1677-09-21 to 2262-04-11)"
        )
    # Exact within int64: every product is in range (checked above on its ends).
    return (raw // scale.denominator) * np.int64(scale.numerator)


def _pandas_scalar(value: Any) -> np.datetime64 | np.timedelta64 | None:
    """A pandas.Timestamp's or Timedelta's (or NaT's) numpy value in its own unit (``.asm8``; UTC
    for an aware Timestamp): ``.value`` raises OverflowError past int64 ns where the unit is
    coarser, and NaT's is int64's lowest, an instant. None for anything else."""
    asm8 = getattr(value, "asm8", None)
    return asm8 if isinstance(asm8, (np.datetime64, np.timedelta64)) else None


def _timedelta64_ns(value: np.timedelta64, what: Any, name: str) -> int:
    if np.isnat(value):
        raise ValueError(f"{name}={said(what)} is NaT, not a duration")
    ticks, unit = _numpy_ticks(value)
    if unit not in _NUMPY_UNIT_NS:
        # numpy.timedelta64(5): numpy lends it the unit of what it meets; a plain 5 is seconds here.
        raise ValueError(f"{name}={said(what)} has no unit: give e.g. numpy.timedelta64(5, 'ms')")
    return _exact_ns(ticks * _NUMPY_UNIT_NS[unit], what, name)


def _exact_ns(value: Fraction, what: Any, name: str) -> int:
    if value.denominator != 1:
        raise ValueError(f"{name}={said(what)} is not a whole number of nanoseconds; burstcore works in integer ns")
    return int(value)


def parse_duration(
    value: Any, *, name: str = "duration", allow_zero: bool = False, scale: bool = False, signed: bool = False
) -> int:
    """Return ``value`` as integer nanoseconds.

    Accepts "5ms", "250us", "250µs", "1.5s", "10ns", "1min", "1h" (exact: a fraction of a ns is
    refused); ints and floats (seconds; a float is rounded to the nearest ns, as binary floats
    such as ``np.logspace``'s are inexact anyway); ``datetime.timedelta``; ``numpy.timedelta64``;
    ``pandas.Timedelta`` (to the ns). A value of another type (a bool among them) raises
    ``TypeError`` (a ``WrongTypeError``, a ``ValueError`` too), a string that is no duration
    ``ValueError``, naming the value and the accepted forms. With ``scale`` (every duration of
    the API but an offset and an instant: a window, a bin, a period, a gap, an idle timeout, a
    reorder horizon, ``max_offset``), a plain
    number of 1000 seconds or more is refused as most likely nanoseconds: write it with a unit
    ('1000s', '1h'). An offset (``superpose``'s ``offsets``) is not refused: a capture hours off
    (another time zone) may be moved by 3600. With
    ``signed`` (an offset), one sign is read and the duration may be below zero ("-3ms").
    ``name`` is the argument's name in the messages; ``allow_zero`` takes 0 (else it must be
    above 0). The functions' own checks are those of ``scale=True``: here it is off by default,
    so ``parse_duration(5000)`` is 5000 s.
    """
    if isinstance(value, bool):
        raise WrongTypeError(f"{name}={said(value)} is not a duration; give {DURATION_FORMS}")
    if isinstance(value, np.timedelta64):
        ns = _timedelta64_ns(value, value, name)
    elif isinstance(value, _dt.timedelta) and isinstance(td := _pandas_scalar(value), np.timedelta64):
        ns = _timedelta64_ns(td, value, name)  # to the ns, below the µs of its timedelta base class
    elif isinstance(value, _dt.timedelta):
        ns = (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1_000
    elif isinstance(value, (int, np.integer, float, np.floating)):
        if isinstance(value, (float, np.floating)) and not np.isfinite(value):
            raise ValueError(f"{name}={said(value)} is not a finite duration; give {DURATION_FORMS}")
        if scale and float(value) >= _PLAIN_SCALE_MAX_S:
            raise ValueError(
                f"{name}={said(value)} as a plain number is read in seconds ({value / 3600:,.2f} hours); "
                f"burstcore's *_ns values are nanoseconds: write '{value}ns' (or "
                f"numpy.timedelta64({value}, 'ns')), or '{value}s' if seconds are meant"
            )
        if isinstance(value, (int, np.integer)):
            ns = int(value) * 1_000_000_000
        else:
            # repr() gives the shortest decimal that round-trips, so 0.005 means exactly 5 ms;
            # what is left below a ns (0.009000000000000001 s) is the float's error.
            ns = int((Decimal(repr(float(value))) * 1_000_000_000).to_integral_value())
    elif isinstance(value, str):
        m = _DURATION_RE.match(value)
        bare = not m and _is_bare_number(value)
        if bare and _times(value, 1) == 0:
            # Zero is zero in every unit (an offset of "0" beside "-3ms").
            m = _DURATION_RE.match(value.strip() + "s")
        elif bare:
            # From a command line every value is a string: say what is missing.
            raise ValueError(f"{name}={said(value)} has no unit: write e.g. '{value.strip()}s' or '{value.strip()}ms'")
        if not m and (low := _DURATION_RE.match(value.lower())) and low.group(2) in _DURATION_UNITS:
            # '5MS', '1S': the units are lower case (M would be mega, and ms milli).
            raise ValueError(f"{name}={said(value)}: write the unit in lower case, '{value.strip().lower()}'")
        if not m or m.group(2) not in _DURATION_UNITS:
            raise ValueError(f"{name}={said(value)} is not a duration; give {DURATION_FORMS}")
        ns = _exact_ns(_times(m.group(1), _DURATION_UNITS[m.group(2)]), value, name)
    else:
        raise WrongTypeError(f"{name}={said(value)} ({type(value).__name__}) is not a duration; give {DURATION_FORMS}")
    if ns == 0 and not allow_zero and isinstance(value, (float, np.floating)) and value > 0:
        # "must be > 0" of a value that is: it rounds to the nearest ns.
        raise ValueError(f"{name}={said(value)} (seconds) rounds to 0 ns, and must be > 0: give 1ns or more")
    if not signed and (ns < 0 or (ns == 0 and not allow_zero)):
        raise ValueError(f"{name}={said(value)} must be {'≥' if allow_zero else '>'} 0")
    # Symmetric: -2^63 ns is int64's but has no opposite, and numpy reads it as NaT.
    if abs(ns) >= 2**63:
        hint = (
            " (a plain number is read in seconds: write nanoseconds as '…ns')"
            if isinstance(value, (int, np.integer)) and not isinstance(value, np.timedelta64)  # an np.integer
            else ""
        )
        raise ValueError(f"{name}={said(value)} is longer than 292 years, the range of int64 nanoseconds{hint}")
    return ns


_RATE_PREFIX: dict[str, int] = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_RATE_RE = re.compile(rf"^\s*{_NUMBER}\s*(|k|K|M|G|T|Ki|Mi|Gi|Ti)(bps|bit/s|b/s|bits/s|Bps|B/s|byte/s|bytes/s)\s*$")
# tc's own spelling ("1gbit", "100mbit", "10Mbit"): bits per second, any case, powers of 1000.
# Not tc's "bps", which tc reads as bytes per second and burstcore (and most papers) as bits.
_TC_RATE_RE = re.compile(rf"^\s*{_NUMBER}\s*([kKmMgGtT]?)bit\s*$")
RATE_FORMS = (
    "a string such as '10Gbps', '400Mbit/s', '1gbit' (tc), '1.25GB/s', '100MB/s' (B = bytes, b/bit = "
    "bits; k, M, G, T are powers of 1000, Ki, Mi, Gi, Ti powers of 1024) or a number of bits per second"
)


def parse_rate(value: Any, *, name: str = "rate") -> int:
    """Return ``value`` as integer bits per second ("10Gbps", "400Mbit/s", "1gbit" (tc),
    "1.25GB/s", or a number in bit/s, a float rounded to the nearest); it must be above 0 and
    below 2^64. A value of another type raises ``TypeError`` (a ``WrongTypeError``, a
    ``ValueError`` too), anything else ``ValueError``, naming the value (``name`` is the argument's
    name in the message) and the accepted forms."""
    if isinstance(value, bool):
        raise WrongTypeError(f"{name}={said(value)} is not a rate; give {RATE_FORMS}")
    if isinstance(value, (int, np.integer)):
        bps = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise ValueError(f"{name}={said(value)} is not a finite rate; give {RATE_FORMS}")
        # Rounded to the bit/s: 1.1 * 1e9 is 1100000000.0000002, the float's error.
        bps = Fraction(Decimal(repr(float(value))).to_integral_value())
    elif isinstance(value, str) and (tc := _TC_RATE_RE.match(value)):
        bps = _times(tc.group(1), _RATE_PREFIX[tc.group(2).upper().replace("K", "k")])
    elif isinstance(value, str):
        m = _RATE_RE.match(value)
        if not m and _is_bare_number(value) and _times(value, 1) == 0:
            # Zero is no rate in any unit.
            raise ValueError(f"{name}={said(value)} must be > 0")
        if not m and _is_bare_number(value):
            raise ValueError(
                f"{name}={said(value)} has no unit: write e.g. '{value.strip()}bps' (bits) or 'Gbps', 'MB/s'"
            )
        if not m:
            raise _no_rate(value, name)
        # Bytes are 8 bits before the whole bit/s is checked: 0.125Bps is 1 bit/s.
        bps = _times(
            m.group(1), _RATE_PREFIX[m.group(2)] * (8 if m.group(3) in ("Bps", "B/s", "byte/s", "bytes/s") else 1)
        )
    else:
        raise WrongTypeError(f"{name}={said(value)} ({type(value).__name__}) is not a rate; give {RATE_FORMS}")
    if bps.denominator != 1:
        raise ValueError(f"{name}={said(value)} is not a whole number of bits per second")
    if bps <= 0:
        raise ValueError(f"{name}={said(value)} must be > 0")
    if bps >= 2**64:
        raise ValueError(f"{name}={said(value)} is beyond 2^64 bit/s")
    return int(bps)


# "10gbps", "100mbit/s": a prefix of bits per second in lower case, refused (m is milli), and in
# tc a "gbps" is gigabytes per second.
_LOWER_PREFIX_RE = re.compile(rf"^\s*{_NUMBER}\s*([mgt])(bps|bit/s|b/s|bits/s)\s*$")


def _no_rate(value: str, name: str) -> ValueError:
    """What is wrong with a string that is no rate: a sign, a prefix in lower case, or all of it."""
    rest = value.strip().removeprefix("-")
    if rest != value.strip() and any(form.match(rest) for form in (_RATE_RE, _TC_RATE_RE, _LOWER_PREFIX_RE)):
        return ValueError(f"{name}={said(value)} must be > 0")
    if m := _LOWER_PREFIX_RE.match(value):
        number, prefix, unit = m.groups()
        tc = (
            f"; tc reads '{prefix}bps' as bytes per second: for those write '{number}{prefix.upper()}B/s'"
            if unit == "bps"
            else ""
        )
        return ValueError(
            f"{name}={said(value)}: write the prefix in upper case, '{number}{prefix.upper()}{unit}' (bits per "
            f"second; tc's '{number}{prefix}bit' is the same){tc}"
        )
    return ValueError(f"{name}={said(value)} is not a rate; give {RATE_FORMS}")


INSTANT_FORMS = (
    "a datetime.datetime (naive ones are UTC), a numpy.datetime64, a pandas.Timestamp, an ISO 8601 "
    "string ('2026-11-30T02:48:30.9848Z') or an int of nanoseconds since 1970 (as the *_ns columns)"
)

# date.toordinal() of 1970-01-01 (ordinals count days from 0001-01-01).
_EPOCH_ORDINAL = 719_163

# ISO 8601, read here to the ns with Python ints: numpy wrapped a year outside 1677-2262 or a 10th
# fractional digit into another instant silently and warned of any zone but Z, and datetime keeps
# µs only. A date extended (2026-11-30), basic (20261130), by week (2026-W48-1) or reduced (2026-11,
# 2026); a time to the hour, minute or second, a fraction of a second after '.' or ','; then a
# zone: Z or z, ±hh, ±hhmm or ±hh:mm (none: UTC), or Z after a date alone.
_ISO_RE = re.compile(
    r"""
    (?P<year>[0-9]{4}|[-+][0-9]{4,})
    (?:-(?P<month>[0-9]{2})(?:-(?P<day>[0-9]{2}))?
      |(?P<bmonth>[0-9]{2})(?P<bday>[0-9]{2})
      |-?W(?P<week>[0-9]{2})(?:-?(?P<weekday>[1-7]))?
    )?
    (?:[Tt\ ]
       (?P<hour>[0-9]{2})
       (?::(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]+))?)?
         |(?P<bminute>[0-9]{2})(?:(?P<bsecond>[0-9]{2})(?:[.,](?P<bfraction>[0-9]+))?)?
       )?
       (?:[Zz]|(?P<sign>[-+])(?P<zhour>[0-9]{2})(?::?(?P<zminute>[0-9]{2}))?)?
      |[Zz]
    )?
    """,
    re.VERBOSE,
)


def _outside(value: Any, name: str) -> ValueError:
    return ValueError(f"{name}={said(value)} is outside int64 nanoseconds since 1970 (1677-09-21 to 2262-04-11)")


def _finer_than_ns(value: Any, name: str) -> ValueError:
    # Refused, not rounded: burstcore is exact to the ns, and a range cut 1 ns off is another range.
    return ValueError(f"{name}={said(value)} has more than nanosecond precision; burstcore works in integer ns")


def _iso_year(text: str) -> int | None:
    """An ISO year ('2026', '+02026', '-0044'), None where datetime.date has none (1-9999)."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 4 or text.startswith("-"):  # no int() of thousands of digits either
        return None
    year = int(digits or "0")
    return year if year >= 1 else None


def _iso_days(year: int, g: dict[str, str]) -> int:
    """Days from 1970-01-01 to the date of ``_ISO_RE``'s groups ``g`` (year 1-9999, where
    datetime.date is exact); ValueError where there is no such date (2026-02-30)."""
    if "week" in g:
        day = _dt.date.fromisocalendar(year, int(g["week"]), int(g.get("weekday", "1")))
    else:
        day = _dt.date(year, int(g.get("month", g.get("bmonth", "1"))), int(g.get("day", g.get("bday", "1"))))
    return day.toordinal() - _EPOCH_ORDINAL


def _iso_seconds(g: dict[str, str]) -> int | None:
    """Seconds from midnight of the time of day, less the zone's offset east of UTC; None past
    23:59:59 (no 24:00, and no leap second: ns since 1970 count none, as POSIX time) or an offset
    past 23:59."""
    hour, minute, second = (int(g.get(k, g.get("b" + k, "0"))) for k in ("hour", "minute", "second"))
    zone_h, zone_m = int(g.get("zhour", "0")), int(g.get("zminute", "0"))
    if hour > 23 or minute > 59 or second > 59 or zone_h > 23 or zone_m > 59:
        return None
    offset = (zone_h * 3_600 + zone_m * 60) * (-1 if g.get("sign") == "-" else 1)
    return hour * 3_600 + minute * 60 + second - offset


def _iso_instant_ns(text: str, name: str) -> int:
    """An ISO 8601 string as integer ns since 1970 UTC, exactly: out of range is refused before
    any conversion could wrap, and every digit down to the ns is kept (and none below it lost)."""
    m = _ISO_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{name}={said(text)} is not an instant; give {INSTANT_FORMS}{_as_seconds(text)}")
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    year = _iso_year(g["year"])
    if year is None:
        raise _outside(text, name)
    try:
        days: int | None = _iso_days(year, g)
    except ValueError:
        days = None
    seconds = _iso_seconds(g)
    if days is None or seconds is None:
        raise ValueError(f"{name}={said(text)} is no date and time of day; give {INSTANT_FORMS}")
    fraction = g.get("fraction", g.get("bfraction", ""))
    if fraction[9:].strip("0"):
        raise _finer_than_ns(text, name)
    ns = (days * 86_400 + seconds) * _NS_PER_S + int(fraction[:9].ljust(9, "0"))
    return _in_range(ns, text, name)


_DECIMAL_SECONDS_RE = re.compile(r"\d+\.\d+")


def _as_seconds(text: str) -> str:
    """What a decimal number of seconds since 1970 (time.time(), a training log's stamps, tshark's
    frame.time_epoch) is as an instant, to add to the refusal of it: '' for anything else, or a
    time outside 1970-01-02 to 2262."""
    text = text.strip()
    if not _DECIMAL_SECONDS_RE.fullmatch(text):
        return ""
    whole, fraction = text.split(".")
    if fraction[9:].strip("0") or not 86_400 <= int(whole) < (2**63 - 1) // _NS_PER_S:
        return ""
    iso = _iso_ns(int(whole) * _NS_PER_S + int(fraction[:9].ljust(9, "0")))
    return f" (read as seconds since 1970, {text} is {iso}: give '{iso}')"


def _in_range(ns: int, value: Any, name: str) -> int:
    if not -(2**63) <= ns < 2**63:
        raise _outside(value, name)
    return ns


def _datetime64_ns(value: np.datetime64, what: Any, name: str) -> int:
    if np.isnat(value):
        raise ValueError(f"{name}={said(what)} is NaT, not an instant")
    ticks, unit = _numpy_ticks(value)
    if unit in ("Y", "M"):
        return _in_range(_month_ns(ticks * 12 if unit == "Y" else ticks, what, name), what, name)
    if unit not in _NUMPY_UNIT_NS:
        raise ValueError(f"{name}={said(what)} has no unit of time; give {INSTANT_FORMS}")
    ns = ticks * _NUMPY_UNIT_NS[unit]
    if ns.denominator != 1:
        raise _finer_than_ns(what, name)
    return _in_range(int(ns), what, name)


def _month_ns(months: int, what: Any, name: str) -> int:
    """The start of the month ``months`` after 1970-01 (a datetime64's Y or M: calendar years and
    months, of no fixed length) in ns since 1970."""
    year, month = divmod(months, 12)
    if not 1 <= 1970 + year <= 9999:
        raise _outside(what, name)
    return (_dt.date(1970 + year, month + 1, 1).toordinal() - _EPOCH_ORDINAL) * 86_400 * _NS_PER_S


def parse_instant(value: Any, *, name: str) -> int:
    """``value`` as integer nanoseconds since 1970-01-01 UTC, exactly (a float is refused: which
    unit would it be in?). Out of int64 ns (1677-09-21 to 2262-04-11) or finer than the ns is refused,
    never wrapped or rounded."""
    if isinstance(value, bool):
        raise WrongTypeError(f"{name}={said(value)} is not an instant; give {INSTANT_FORMS}")
    if isinstance(value, (float, np.floating)):
        raise WrongTypeError(
            f"{name}={said(value)} is not an instant; give {INSTANT_FORMS}{_as_seconds(repr(float(value)))}"
        )
    if isinstance(value, (int, np.integer)):
        return _in_range(int(value), value, name)
    if isinstance(value, _dt.datetime) and isinstance(asm8 := _pandas_scalar(value), np.datetime64):
        return _datetime64_ns(asm8, value, name)  # since 1970 UTC, whatever zone the Timestamp shows
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
        d = aware - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        return _in_range((d.days * 86_400 + d.seconds) * _NS_PER_S + d.microseconds * 1_000, value, name)
    if isinstance(value, np.datetime64):
        return _datetime64_ns(value, value, name)
    if isinstance(value, str):
        return _iso_instant_ns(value, name)
    raise WrongTypeError(f"{name}={said(value)} ({type(value).__name__}) is not an instant; give {INSTANT_FORMS}")


def format_instant(ns: int) -> str:
    """An instant in ns since 1970 as its UTC date and time with every ns, no zone written
    ('2026-11-30T02:48:30.984800000'). Not str(numpy.datetime64(ns, 'ns')): numpy takes int64's
    lowest, an instant a pcapng offset can give (1677-09-21T00:12:43.145224192), for NaT."""
    seconds, fraction = divmod(ns, _NS_PER_S)
    t = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{fraction:09d}"


def _iso_ns(ns: int) -> str:
    """An instant in ns since 1970 as ISO 8601 UTC with every ns."""
    return format_instant(ns) + "Z"


def parse_time_range(start: Any, end: Any) -> tuple[int | None, int | None] | None:
    """``start``/``end`` as the ``(start_ns, end_ns)`` the core takes (None: all of time)."""
    if start is None and end is None:
        return None
    lo = None if start is None else parse_instant(start, name="start")
    hi = None if end is None else parse_instant(end, name="end")
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(
            f"start ({_iso_ns(lo)}) is not before end ({_iso_ns(hi)}): the range [start, end) would be empty"
        )
    return lo, hi


def parse_bin_origin(value: Any, start_ns: int | None) -> int | None:
    """``bin_origin`` as the instant the core counts bins from, in ns; None for the first packet
    counted. "epoch" is 0; "start" is ``start=``'s instant when a range is given (the bins then
    tile the range from its start, wherever its first packet falls), else the first packet; any
    other value is an instant as ``start=`` takes it."""
    if isinstance(value, str) and value in ("epoch", "start"):
        if value == "epoch":
            return 0
        return start_ns
    try:
        return parse_instant(value, name="bin_origin")
    except (ValueError, TypeError) as e:
        raise type(e)(f"{e} (or bin_origin='epoch', the default, or 'start')") from None


def parse_count(value: Any, *, name: str, minimum: int = 1) -> int:
    """``value`` as a Python int of at least ``minimum``: any integer type (numpy's too), not a
    bool, a float or a string."""
    kind = {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, f"an integer ≥ {minimum}")
    if isinstance(value, bool):
        raise WrongTypeError(f"{name}={said(value)} must be {kind}")
    try:
        n = operator.index(value)
    except TypeError:
        raise WrongTypeError(f"{name}={said(value)} ({type(value).__name__}) must be {kind}") from None
    if n >= minimum:
        return n
    raise ValueError(f"{name}={said(value)} must be {kind}")


def _is_bare_number(text: str) -> bool:
    """A number written without a unit ("5", "-0.5", "1e9"; not "nan", "-inf" or "1_000", which
    no unit after them would make a duration or a rate)."""
    return _BARE_RE.match(text) is not None


def default_windows_ns() -> list[int]:
    """1 µs to 1 s in 1-2-5 steps per decade (5 ms, the seed study's window, is among them)."""
    out = []
    for exp in range(3, 9):
        for m in (1, 2, 5):
            out.append(m * 10**exp)
    out.append(10**9)
    return out


# Multiples of the trace's mean rate ρ for the default rate grid: from barely above ρ (where
# backlogs are large) to far above it (where only the sharpest bursts queue).
DEFAULT_RATE_MULTIPLES = (1.1, 1.25, 1.5, 2, 3, 5, 10, 20)

# Common link speeds, 100 Mbit/s to 400 Gbit/s (bit/s): the default rates where ρ is not known
# before the scan (a stream, superpose) or is undefined (no span).
LINK_SPEED_GRID_BPS = (10**8, 10**9, 10**10, 25 * 10**9, 4 * 10**10, 10**11, 2 * 10**11, 4 * 10**11)


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`noun` in the number `n` asks for: 'packet' for 1, 'packets' (or `nouns`) otherwise."""
    return noun if n == 1 else nouns or noun + "s"


def no_mean_rate(timed: int, packets: str = "packets") -> str:
    """Why `timed` packets (those with a timestamp) have no mean rate: there are none (no
    `packets`), or they are all at one instant, which is no span to divide their bytes by."""
    return f"none ({no_span_why(timed, packets)})"


def no_span_why(timed: int, packets: str = "packets") -> str:
    """`no_mean_rate`'s reason alone, for the texts that say what else is missing for want of a
    mean rate (PtM(τ), r/ρ)."""
    if timed == 0:
        return f"no {packets}"
    if timed == 1:
        return "a single packet: no span to average over"
    return f"all {timed:,} packets at one instant: no span to average over"


def format_span(ns: int | None, timed: int, packets: str = "packets") -> str:
    """The span from the first packet to the last, saying why there is none or why it is 0."""
    if ns is None:
        return f"none (no {packets})"
    return f"{format_duration(ns)} (one instant)" if ns == 0 and timed else format_duration(ns)


def format_share(share: float | None) -> str:
    """A share of a whole as a percentage to 0.01%, which never reads as none of it (0.00%) when
    it is some, nor as all of it (100.00%) when it is not: '<0.01%', '>99.99%'. None (a whole of
    0 bytes, of which nothing is a share) reads '-'."""
    if share is None:
        return "-"
    shown = f"{100 * share:.2f}%"
    if shown == "0.00%" and share > 0:
        return "<0.01%"
    if shown == "100.00%" and share < 1:
        return ">99.99%"
    return shown


def format_duration(ns: int) -> str:
    """The shortest exact rendering: 5000000 -> '5ms', 1500 -> '1.5us'."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            d = Decimal(ns) / scale
            return f"{d.normalize():f}{unit}"
    return f"{ns}ns"


# Characters that change how the text around them shows rather than showing themselves: the
# bidirectional overrides and isolates (U+202E turns "exe.txt" into what reads as "txt.exe").
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def said(value: Any) -> str:
    """A user's value as a message echoes it: its ``repr``, but a numpy scalar as the number (or
    string) it is, not numpy 2's ``np.float64(0.5)``: a float as numpy writes it in its own
    precision (``np.float32(0.07)`` is 0.07, as ``str`` gives it), and the items of a list or
    tuple alike. Other values (Python's ints, floats, strings; numpy's datetime64 and
    timedelta64, whose repr names the unit) are their ``repr``."""
    if isinstance(value, (np.number, np.bool_)) and not isinstance(value, np.timedelta64):
        return str(value)
    if isinstance(value, np.str_):
        return repr(str(value))
    if type(value) is list:
        return "[" + ", ".join(said(v) for v in value) + "]"
    if type(value) is tuple:
        return "(" + ", ".join(said(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def printable(text: str) -> str:
    """`text` safe to show on a terminal or in a table cell: control characters (ESC, which starts
    a terminal's escape sequences, NUL, newlines, C1 controls) and bidirectional overrides are
    written as Python writes them escaped (\\x1b, \\n, \\u202e). For the strings a capture or a
    file name carries: whoever made the file chose them."""
    if text.isprintable():
        return text  # the common case, kept fast
    return "".join(repr(c)[1:-1] if c in _BIDI_CONTROLS or ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c for c in text)


def format_number(x: float, digits: int = 4) -> str:
    """`x` to `digits` significant digits without an exponent: '0.000032' (not 3.2e-05),
    '189,200' with separators from 10,000 on (not 1.892e+05), '1.5', '1234'. For the ratios and
    the values below a unit's smallest that people read; the machine outputs keep every digit."""
    rounded = float(f"{x:.{digits}g}")
    if abs(rounded) >= 10_000:
        return f"{rounded:,.0f}"
    # repr is the shortest string that reads back as the float: its digits are the rounded ones.
    return f"{Decimal(repr(rounded)).normalize():f}"


def format_quantile(q: float) -> str:
    """A quantile as given, exactly, without an exponent: 0.99999, 0.00001 (not 1e-05)."""
    return f"{Decimal(repr(float(q))).normalize():f}"


def _scaled(value: float, units: tuple[tuple[str, float], ...], smallest: str, small_digits: int) -> str:
    """`value` in the largest unit it reaches once rounded (999,960 bit/s is "1 Mbit/s", not
    "1000 kbit/s"), and past the largest unit in plain digits ("12,000 Tbit/s", not "1.2e+04")."""
    rounded = float(f"{value:.4g}")
    for unit, scale in units:
        if rounded >= scale:
            shown = rounded / scale
            return f"{shown:,.0f} {unit}" if shown >= 10_000 else f"{shown:.4g} {unit}"
    return f"{format_number(value, small_digits)} {smallest}"


def format_rate(bps: float) -> str:
    return _scaled(bps, (("Tbit/s", 1e12), ("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)), "bit/s", 4)


def format_bytes(n: float) -> str:
    return _scaled(n, (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)), "B", 6)


def _text_filter(value: str) -> str:
    """``value``, refused where it holds a lone surrogate: a byte that was no UTF-8 where it came
    from (an argument of the command line, a file name), which Python keeps as a surrogate and
    the core, taking UTF-8, could not be given (a TypeError of pyo3's, the command line's exit 5
    'internal error'). Told as the core tells any character outside the filter language."""
    for at, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(
                f"filter {said(value)} at character {at + 1}: {ch!r} is a byte that is not UTF-8 text, and not "
                "part of the filter language (primitives such as 'host 10.0.0.1' or 'tcp port 29500', joined by "
                "and, or, not, parentheses)"
            )
    return value


def parse_filter(value: Any) -> str | None:
    """A filter expression, checked to be a string (the core parses it and says what is wrong)."""
    if isinstance(value, str):
        return _text_filter(value)
    if value is None:
        return value
    each = " (this reads one capture: one filter for it)" if _one_per_capture(value) else ""
    raise TypeError(
        f"filter={said(value)}: give the expression as a string, e.g. filter='host 10.0.0.1 and tcp port 29500'{each}"
    )


def _one_per_capture(value: Any) -> bool:
    """Whether ``value`` has the form of a filter per capture: a list or tuple of str or None."""
    return isinstance(value, (list, tuple)) and all(v is None or isinstance(v, str) for v in value)


def per_capture(filters: str | list[str | None] | None, captures: int) -> list[str | None]:
    """What ``parse_filters`` gave, one filter per capture (None where a capture has none)."""
    return filters if isinstance(filters, list) else [filters] * captures


def parse_filters(value: Any, captures: int | None = None) -> str | list[str | None] | None:
    """``filter=`` of a call that reads several captures: one expression (a string) for all of them,
    or a list or tuple of one per capture (``None`` where a capture has none of its own), of which
    there must be ``captures`` when that is given."""
    if isinstance(value, str):
        return _text_filter(value)
    if value is None:
        return value
    if not _one_per_capture(value):
        raise TypeError(
            f"filter={said(value)}: give one expression (a string) for every capture, e.g. "
            "filter='host 10.0.0.1 and tcp port 29500', or a list of one per capture (None where a "
            "capture has none), e.g. filter=['src host 10.0.0.1', 'src host 10.0.0.2']"
        )
    if captures is not None and len(value) != captures:
        f, c = len(value), captures
        raise ValueError(
            f"{f} filter{'s' * (f != 1)} for {c} capture{'s' * (c != 1)}: give one filter for every "
            "capture, in the same order (None where a capture has none of its own), or a single "
            "filter (a string) for all of them"
        )
    return [None if v is None else _text_filter(v) for v in value]


_I64_MAX = 2**63 - 1
# The one rule of the results' integer columns: instants and lengths of time (``*_ns``) Int64,
# as polars' Datetime and Duration are underneath; counts and bytes UInt64. The accountings
# ("summary" tables) are built from Python ints, which polars makes Int64: these are cast.
_COUNT_COLUMNS = (
    "packets_read",
    "packets",
    "bytes",
    "bursts",
    "reordered",
    "beyond_bins",
    "skipped_no_timestamp",
    "skipped_timestamp_out_of_range",
    "skipped_outside_range",
    "skipped_filtered",
    "skipped_no_size",
    "skipped_late",
)


def typed_counts(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (a summary) with its count and byte columns UInt64 and its ``*_ns`` columns
    Int64, by the results' one rule."""
    return frame.with_columns(
        pl.col(c).cast(pl.UInt64 if c in _COUNT_COLUMNS else pl.Int64)
        for c, t in frame.schema.items()
        if (c in _COUNT_COLUMNS or c.endswith("_ns")) and t.is_integer()
    )


def length_ns(first_ns: Any, last_ns: Any, name: str) -> pl.Series:
    """``last − first`` per row as an Int64 column called ``name``, as every ``*_ns`` column of the
    results is (polars' Datetime and Duration are int64 ns underneath). Exact: computed in
    unsigned 64-bit arithmetic, which wraps back into [0, 2^64) for any two int64 with first ≤
    last, and null where it passes int64 (more than 292 years between two timestamps, which only
    damaged ones are), never wrapped into a negative length as an Int64 subtraction does. Null
    where either end is."""
    first = pl.Series(first_ns, dtype=pl.Int64)
    last = pl.Series(last_ns, dtype=pl.Int64)
    known = (first.is_not_null() & last.is_not_null()).to_numpy()
    lo = first.fill_null(0).to_numpy().view(np.uint64)
    hi = last.fill_null(0).to_numpy().view(np.uint64)
    length = hi - lo
    fits = known & (length <= np.uint64(_I64_MAX))
    return pl.Series(name, length.view(np.int64), dtype=pl.Int64).scatter(np.flatnonzero(~fits), None)


class FramesEqual:
    """``==`` for the results that hold polars frames (with ``@dataclass(eq=False)``): field by
    field, each frame by ``DataFrame.equals``. The dataclass's own ``==`` compared the frames with
    theirs, which is per element, and Python asked that frame for its truth: "the truth value of
    a DataFrame is ambiguous" for two results of the same capture. Unhashable, as a result with
    frames is."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, pl.DataFrame) or isinstance(theirs, pl.DataFrame):
                if not (isinstance(mine, pl.DataFrame) and isinstance(theirs, pl.DataFrame) and mine.equals(theirs)):
                    return False
            elif mine != theirs:
                return False
        return True
