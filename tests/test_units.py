"""Parsing of durations and rates: exact, and every bad value named in its error."""

import datetime as dt
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import burstcore
from burstcore import parse_duration, parse_rate
from burstcore._units import default_windows_ns, format_duration
from tests import oracles

BASE = 1_700_000_000_000_000_000


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("5ms", 5_000_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("250μs", 250_000),
        ("1.5s", 1_500_000_000),
        ("10ns", 10),
        (" 2 ms ", 2_000_000),
        ("1e-3s", 1_000_000),
        ("1min", 60_000_000_000),
        ("0.000001s", 1_000),
        (0.005, 5_000_000),
        (1, 1_000_000_000),
        (dt.timedelta(microseconds=250), 250_000),
        (np.timedelta64(7, "us"), 7_000),
        (np.timedelta64(3, "ns"), 3),
    ],
)
def test_durations_are_exact(text, ns):
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    "bad", ["5 parsecs", "5", "ms", "-5ms", "0s", "1.5ns", "5m", "", None, True, float("nan"), [1]]
)
def test_bad_durations_name_the_value_and_forms(bad):
    with pytest.raises(ValueError) as e:
        parse_duration(bad, name="window")
    assert repr(bad) in str(e.value)
    assert "window" in str(e.value)
    if bad in ("-5ms", "0s"):
        # A duration, but not a positive one: say that, not that it is no duration.
        assert "must be > 0" in str(e.value)


@pytest.mark.parametrize("bare", ["5", " 0.5", "1e9", "-5"])
def test_numbers_in_strings_are_told_their_unit_is_missing(bare):
    # A command line gives every value as a string: "5" is seconds from Python, not from a shell.
    with pytest.raises(ValueError, match="has no unit"):
        parse_duration(bare, name="window")
    with pytest.raises(ValueError, match="has no unit"):
        parse_rate(bare, name="rate")


@pytest.mark.parametrize("zero", ["0", " 0 ", "0.0", "-0", "+0.000"])
def test_a_bare_zero_is_zero_in_every_unit(zero):
    # An offset list "0,-3ms" needs no unit on its zero; where zero is not allowed, that is said.
    assert parse_duration(zero, name="offset", allow_zero=True) == 0
    with pytest.raises(ValueError, match="must be > 0"):
        parse_duration(zero, name="window")
    # A rate of zero is none in any unit: say that, not that a unit is missing.
    with pytest.raises(ValueError, match="must be > 0"):
        parse_rate(zero, name="rate")


@pytest.mark.parametrize(
    ("offset", "ns"),
    [("-3ms", -3_000_000), ("+3ms", 3_000_000), (" -1.5us ", -1_500), ("-0", 0), ("-0s", 0), (-0.5, -500_000_000)],
)
def test_an_offset_takes_one_sign(offset, ns):
    assert parse_duration(offset, name="offset", allow_zero=True, signed=True) == ns


def test_an_offset_of_int64s_lowest_is_refused_as_its_opposite_is():
    # -2^63 ns fits an int64 but has no opposite, and numpy reads it as NaT.
    for v in ("-9223372036854775808ns", "9223372036854775808ns"):
        with pytest.raises(ValueError, match="longer than 292 years"):
            parse_duration(v, name="offset", allow_zero=True, signed=True)
    assert parse_duration("-9223372036854775807ns", name="offset", signed=True) == -(2**63 - 1)


@pytest.mark.parametrize("bad", ["--0", "--0s", "-+3ms", "+-3ms", "- 3ms", "-nan", "+nan", "-inf", "nan", "-", ""])
def test_an_offset_with_two_signs_or_no_number_is_no_duration(bad):
    with pytest.raises(ValueError, match=re.escape(f"offset={bad!r} is not a duration")):
        parse_duration(bad, name="offset", allow_zero=True, signed=True)


def test_superpose_takes_a_bare_zero_offset_as_the_command_line_does(tmp_path):
    path = tmp_path / "t.pcapng"
    path.write_bytes(oracles.capture([10**18 + k * 1_000 for k in range(50)], [100] * 50))
    a = burstcore.superpose([path, path], offsets=["0", "10us"], windows=["1ms"], rates=["1Gbps"])
    b = burstcore.superpose([path, path], offsets=[0, "10us"], windows=["1ms"], rates=["1Gbps"])
    assert a.offsets_ns == b.offsets_ns == [0, 10_000]
    assert a.envelope.equals(b.envelope)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Gbps", 10_000_000_000),
        ("400Mbit/s", 400_000_000),
        ("1.25GB/s", 10_000_000_000),
        ("100MB/s", 800_000_000),
        ("1Kibps", 1024),
        ("1e9", None),
        (1e9, 1_000_000_000),
        (2_500_000_000, 2_500_000_000),
    ],
)
def test_rates_are_exact(text, bps):
    if bps is None:
        with pytest.raises(ValueError):
            parse_rate(text)
    else:
        assert parse_rate(text) == bps


@pytest.mark.parametrize("bad", ["10 furlongs", "fast", "0bps", "-1Gbps", "0.1bps", True, None])
def test_bad_rates(bad):
    with pytest.raises(ValueError) as e:
        parse_rate(bad)
    assert repr(bad) in str(e.value)


@given(st.integers(min_value=1, max_value=10**15))
def test_duration_format_roundtrip(ns):
    assert parse_duration(format_duration(ns)) == ns


def test_default_windows():
    w = default_windows_ns()
    assert w[0] == 1_000 and w[-1] == 1_000_000_000
    assert 5_000_000 in w
    assert w == sorted(w) and len(w) == 19


def test_pandas_and_polars_durations_keep_their_nanoseconds():
    import pandas as pd
    import polars as pl

    assert parse_duration(pd.Timedelta("1500ns")) == 1500
    assert parse_duration(pd.Timedelta("500ns")) == 500
    assert parse_duration(pd.Timedelta(days=1, nanoseconds=7)) == 86_400 * 10**9 + 7
    data = oracles.capture([BASE, BASE + 1000, BASE + 2500], [100, 200, 300])
    for windows in (pl.Series([1500, 2500], dtype=pl.Duration("ns")), pd.Series(pd.to_timedelta([1500, 2500], "ns"))):
        assert burstcore.scan(data, windows=windows, rates="1Gbps").config["windows_ns"] == [1500, 2500]


def test_floats_are_rounded_to_the_nanosecond():
    # Binary floats are inexact: 0.009000000000000001 s is 9 ms, and log-spaced windows work.
    assert [parse_duration(x) for x in np.arange(0.001, 0.011, 0.001)] == [k * 10**6 for k in range(1, 11)]
    assert [parse_duration(x) for x in np.logspace(-6, 0, 13)] == [round(10 ** (k / 2 + 3)) for k in range(13)]
    assert parse_rate(1.1 * 1e9) == 1_100_000_000
    with pytest.raises(ValueError, match="must be > 0"):
        parse_duration(1e-10)  # 0.1 ns rounds to nothing
    # A string is exact: a fraction of a ns is refused, not rounded.
    with pytest.raises(ValueError, match="not a whole number of nanoseconds"):
        parse_duration("1.5ns")


@pytest.mark.parametrize("ns_value", [1000, 5_000_000, np.int64(10**9), 2.5e6])
def test_nanoseconds_fed_back_as_plain_windows_are_refused(ns_value):
    # default_windows_ns() and config["windows_ns"] are ns; a plain number is seconds.
    with pytest.raises(ValueError, match=r"read in seconds .* write '.*ns'"):
        parse_duration(ns_value, name="window", scale=True)
    with pytest.raises(ValueError, match="read in seconds"):
        burstcore.scan(oracles.capture([BASE], [100]), windows=burstcore.default_windows_ns())
    assert parse_duration(999, name="window", scale=True) == 999 * 10**9
    assert parse_duration(ns_value, name="offset") == int(ns_value * 10**9)  # not a time scale


def test_tc_rates():
    assert parse_rate("1gbit") == parse_rate("1Gbit") == 10**9
    assert parse_rate("100mbit") == 10**8 and parse_rate("64kbit") == 64_000


def test_many_values_in_any_iterable_and_counts_of_any_integer_type():
    data = oracles.capture([BASE, BASE + 1000, BASE + 2500], [100, 200, 300])
    r = burstcore.scan(data, windows={"1us", "2us"}, rates=(r for r in ["1Gbps"]), threads=np.int64(1))
    assert r.config["windows_ns"] == [1000, 2000]
    assert burstcore.sizes(data, by=["pair"], max_groups=np.uint8(3)).groups.height == 2
    with pytest.raises(ValueError, match=r"threads=2.0 \(float\) must be a positive integer"):
        burstcore.scan(data, threads=2.0)


def test_a_pandas_frame_is_pointed_to_polars() -> None:
    import pandas as pd

    with pytest.raises(TypeError, match=r"pl.from_pandas\(df\)"):
        burstcore.scan(pd.DataFrame({"timestamp": [1], "size": [60]}))  # type: ignore[arg-type]


def _offset(text):
    return parse_duration(text, name="offset", signed=True)


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (_offset, "1e9999999999s", "offset='1e9999999999s' is longer than 292 years, the range of int64 nanoseconds"),
        (_offset, "1e99999999999999999999ms", "is longer than 292 years"),
        (_offset, "-1e9999999999ms", "is longer than 292 years"),
        (_offset, "1e" + "9" * 5000 + "s", "is longer than 292 years"),  # past int()'s 4300 digits
        (_offset, "1e-9999999999s", "is not a whole number of nanoseconds"),  # a fraction of a ns, not 0
        (parse_rate, "1e99999999999bps", "rate='1e99999999999bps' is beyond 2^64 bit/s"),
        (parse_rate, "1e9999999999gbit", "is beyond 2^64 bit/s"),
        (parse_rate, "1e99999999999999999999B/s", "is beyond 2^64 bit/s"),
        (parse_rate, "1e-99999999999bps", "is not a whole number of bits per second"),
    ],
)
def test_an_exponent_of_any_size_is_read_as_the_other_values_are(parse, text, message):
    # Decimal's context overflowed past 10^999999 (decimal.Overflow, a traceback on the command
    # line) or refused an exponent past 10^18 (decimal.InvalidOperation), where 1e400s was told
    # it is too long: the same one-line ValueError now, or that it is no whole ns or bit/s.
    with pytest.raises(ValueError, match=re.escape(message)):
        parse(text)


def test_a_bare_zero_with_any_exponent_is_zero():
    assert parse_duration("0e99999999999999999999", name="offset", allow_zero=True) == 0
    with pytest.raises(ValueError, match="must be > 0"):
        parse_rate("0e99999999999999999999")


def test_long_numerals_are_read_exactly():
    # Decimal's default context rounded to 28 digits: 1 ns and a 10^-29 of one was read as 1 ns.
    for text in ("1.00000000000000000000000000001ns", "1.0000000000000000000000000000001s", "0." + "1" * 5000 + "s"):
        with pytest.raises(ValueError, match="is not a whole number of nanoseconds"):
            parse_duration(text)
        with pytest.raises(ValueError, match="is not a whole number of bits per second"):
            parse_rate(text.removesuffix("ns").removesuffix("s") + "Gbps")
    assert parse_duration("1." + "0" * 5000 + "s") == 10**9
    assert parse_duration("0." + "0" * 5000 + "1e5009ns") == 10**8
    assert parse_rate("0.125Bps") == 1  # bytes are 8 bits before the whole bit/s is checked
    assert parse_rate("1.00000000000000000000000000000000Gbps") == 10**9


@st.composite
def numerals(draw):
    """A decimal numeral of up to 45 digits, the point anywhere, an exponent or not, a sign or not."""
    digits = draw(st.text("0123456789", min_size=1, max_size=45))
    point = draw(st.integers(0, len(digits)))
    body = digits[:point] + "." + digits[point:] if point < len(digits) else digits
    exponent = draw(st.one_of(st.just(""), st.integers(-30, 30).map(lambda e: f"e{e:+d}")))
    return draw(st.sampled_from(["", "-", "+"])) + body + exponent


UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}


@given(numerals(), st.sampled_from(sorted(UNIT_NS)))
@example("1.00000000000000000000000000001", "ns")  # Decimal's 28 digits read it as 1 ns
@example("123456789012345678901234567890.5", "ns")  # and as a whole number
def test_durations_are_exact_against_fractions(numeral, unit):
    # fractions.Fraction reads a numeral exactly: the duration is that times the unit, whole and
    # within int64 ns, or refused saying which.
    want = Fraction(numeral) * UNIT_NS[unit]
    if want.denominator != 1:
        with pytest.raises(ValueError, match="not a whole number of nanoseconds"):
            parse_duration(numeral + unit, name="offset", allow_zero=True, signed=True)
    elif abs(want) >= 2**63:
        with pytest.raises(ValueError, match="longer than 292 years"):
            parse_duration(numeral + unit, name="offset", allow_zero=True, signed=True)
    else:
        assert parse_duration(numeral + unit, name="offset", allow_zero=True, signed=True) == want


@given(numerals().map(lambda n: n.lstrip("+-")), st.sampled_from(["bps", "kbit/s", "MB/s", "Gibps", "TB/s", "gbit"]))
@example("1.00000000000000000000000000001", "bps")
def test_rates_are_exact_against_fractions(numeral, unit):
    scale = {"bps": 1, "kbit/s": 10**3, "MB/s": 8 * 10**6, "Gibps": 2**30, "TB/s": 8 * 10**12, "gbit": 10**9}[unit]
    want = Fraction(numeral) * scale
    if want.denominator != 1:
        with pytest.raises(ValueError, match="not a whole number of bits per second"):
            parse_rate(numeral + unit)
    elif want == 0:
        with pytest.raises(ValueError, match="must be > 0"):
            parse_rate(numeral + unit)
    elif want >= 2**64:
        with pytest.raises(ValueError, match="beyond 2"):
            parse_rate(numeral + unit)
    else:
        assert parse_rate(numeral + unit) == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # 18446744074 s is 2^64 ns and 290448384 ns: astype('m8[ns]') wrapped it to 0.29 s.
        (np.timedelta64(18_446_744_074, "s"), "longer than 292 years, the range of int64 nanoseconds$"),
        (np.timedelta64(10**10, "s"), "longer than 292 years"),  # wrapped below 0: "must be > 0"
        (np.timedelta64(1500, "ps"), "not a whole number of nanoseconds"),  # truncated to 1 ns
        (np.timedelta64(5), "has no unit"),  # numpy's unitless timedelta, read as 5 ns
    ],
)
def test_numpy_durations_are_neither_wrapped_nor_truncated(value, message):
    with pytest.raises(ValueError, match=message):
        parse_duration(value, name="window")


def test_numpy_and_pandas_durations_of_any_unit_are_exact():
    import pandas as pd

    assert parse_duration(np.timedelta64(2000, "ps")) == 2
    assert parse_duration(np.timedelta64(3, "10s")) == 30 * 10**9
    assert parse_duration(np.timedelta64(1, "W")) == 7 * 86_400 * 10**9
    assert parse_duration(np.timedelta64(1, "Y")) == 31_556_952 * 10**9  # numpy's mean year, as its astype()
    assert parse_duration(pd.Timedelta(days=2).as_unit("s")) == 2 * 86_400 * 10**9
    # pandas raised OverflowError (from .value) where the unit is coarser than ns. Made from
    # seconds: pandas 2.0 (the floor) builds Timedelta(days=...) in ns, past int64 here.
    with pytest.raises(ValueError, match="longer than 292 years"):
        parse_duration(pd.Timedelta(np.timedelta64(200_000 * 86_400, "s")))


@pytest.mark.parametrize("ns_value", [1000, 1_000_000, np.int64(10**9), 2.5e6])
def test_every_time_scale_refuses_nanoseconds_fed_back(ns_value):
    # idle_timeout, reorder_horizon and max_offset as windows, bins, gaps and periods do: a plain
    # number of 1000 or more is most likely ns (every *_ns value burstcore gives is), not an idle
    # timeout of 11.6 days.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=50)
    data = oracles.capture([BASE, BASE + 1000, BASE + 2500], [len(frame)] * 3, frames=[frame] * 3)
    calls = {
        "idle_timeout": lambda v: burstcore.flows(data, idle_timeout=v),
        "reorder_horizon": lambda v: burstcore.scan(data, windows=["1us"], rates=["1Gbps"], reorder_horizon=v),
        "max_offset": lambda v: burstcore.superpose([data, data], offsets="random", max_offset=v),
    }
    for name, call in calls.items():
        with pytest.raises(
            ValueError,
            match=rf"{re.escape(f'{name}={ns_value}')} as a plain number is read in seconds .* write '.*ns'",
        ):
            call(ns_value)
    # Below 1000 a plain number is seconds, as for every duration; with its unit, the value is
    # what it says: a flow ends at a gap (1000 ns, then 1500 ns) longer than the timeout.
    assert burstcore.flows(data, idle_timeout=999).height == 1
    want = 1 + sum(gap > int(ns_value) for gap in (1000, 1500))
    assert burstcore.flows(data, idle_timeout=f"{int(ns_value)}ns").height == want
    burstcore.scan(data, windows=["1us"], rates=["1Gbps"], reorder_horizon=999)


@pytest.mark.parametrize(
    "call, shown",
    [
        (lambda: parse_duration(np.float64(-0.5)), "=-0.5 must be"),
        (lambda: parse_duration(np.float32(np.inf)), "=inf is not a finite duration"),
        (lambda: parse_rate(np.int64(0)), "=0 must be > 0"),
        (lambda: parse_rate(np.float64(-1.0)), "=-1.0 must be > 0"),
        (lambda: burstcore.sizes(b"", quantiles=[np.float64(1.5)]), "quantile 1.5 must be"),
        (lambda: burstcore.sizes(b"", quantiles=[np.float32(0.07), 0.07]), "quantile 0.07 is given twice"),
        (lambda: burstcore.sizes(b"", max_groups=np.int64(-1)), "max_groups=-1 must be"),
        (lambda: burstcore.sizes(b"", by=np.str_("hst")), "by='hst' is not a grouping"),
        (lambda: burstcore.scan(b"", windows=[np.float64(0.001), np.float64(-2.0)]), "=-2.0 must be"),
    ],
)
def test_messages_show_numpy_scalars_as_the_numbers_they_are(call, shown):
    """numpy 2 writes its scalars np.float64(0.5): a message echoing a user's value showed that
    (window=np.float64(-2.0) must be > 0) where the number was meant."""
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert shown in str(e.value) and "np." not in str(e.value), str(e.value)


def test_messages_show_python_values_as_before():
    from burstcore._units import said

    for v in [0.5, 1e-20, 3, "1ms", b"x", None, [0.5, "2s"], (1,), Fraction(1, 3)]:
        assert said(v) == repr(v)
    assert said([np.float64(0.5), (np.int32(2),), np.True_]) == "[0.5, (2,), True]"
    # A timedelta64's repr names its unit, which its str does not: kept.
    assert said(np.timedelta64(5, "ms")) == repr(np.timedelta64(5, "ms"))
