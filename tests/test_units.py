"""Parsing of durations and rates: exact, and every bad value named in its error."""

import datetime as dt
import re

import numpy as np
import pytest
from hypothesis import given
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
