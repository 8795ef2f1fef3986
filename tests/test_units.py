"""Parsing of durations and rates: exact, and every bad value named in its error."""

import datetime as dt

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burstcore import parse_duration, parse_rate
from burstcore._units import default_windows_ns, format_duration


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
