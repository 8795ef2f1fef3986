"""Hypothesis fuzzing of ``scan``'s parameters and sources: whatever is passed, only the documented
exceptions come out (ValueError — CaptureError and its subclasses are ValueErrors —, TypeError,
OSError), never a crash, an InternalError, or another exception type."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import burstcore

pytestmark = pytest.mark.filterwarnings("ignore::burstcore.CaptureWarning")  # odd sources warn, as documented
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOCUMENTED = (ValueError, TypeError, OSError)
T0 = 1_700_000_000_000_000_000


def capture() -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    for i in range(40):
        ip = b"\x45\x00\x00\x30\0\0\0\0\x40\x11\0\0" + bytes([10, 0, 0, 1 + i % 3]) + bytes([10, 0, 1, 1])
        udp = b"\x04\x00\x00\x35\x00\x1c\0\0" + b"z" * 20
        w.epb(0, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp, ts_ns=T0 + i * 997 + (i % 7) * 3)
    return w.getvalue()


CAPTURE = capture()

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["5ms", "1us", "0ns", "-1ms", "1.5ns", "1e3s", "10Gbps", "1.25GB/s", "0bps", "1e30bps", "1 h", "µs"]
    ),
    st.binary(max_size=8),
    st.timedeltas(min_value=dt.timedelta(days=-2), max_value=dt.timedelta(days=2)),
    st.builds(np.timedelta64, st.integers(-(2**62), 2**62), st.sampled_from(["ns", "us", "s", "D"])),
    st.builds(np.int64, st.integers(-(2**63), 2**63 - 1)),
    st.builds(np.float32, st.floats(width=32)),
    st.just(object()),
    st.just(np.datetime64("NaT")),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.tuples(scalars, scalars),
    st.sets(st.sampled_from(["1ms", "2ms", 3])),
    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
    st.builds(np.array, st.lists(st.integers(0, 10**6), max_size=3)),
    st.builds(pl.Series, st.lists(st.integers(1, 10**6), max_size=3)),
)
groupings = st.one_of(
    values,
    st.lists(
        st.sampled_from(["all", "src", "dst", "pair", "flow", "flow4", "interface", "vlan", "qp", "host", "x"]),
        max_size=5,
    ),
)


def call(**kwargs: Any) -> None:
    try:
        burstcore.scan(**kwargs)
    except burstcore.InternalError:
        raise
    except DOCUMENTED:
        pass


@SETTINGS
@given(windows=values, rates=values, bins=values)
def test_windows_rates_bins(windows: Any, rates: Any, bins: Any) -> None:
    call(source=CAPTURE, windows=windows, rates=rates, bins=bins)


@SETTINGS
@given(
    by=groupings,
    size=st.one_of(st.sampled_from(["wire", "captured", "ip", "payload", "l1", "L1", "bytes", ""]), scalars),
    closed=st.one_of(st.sampled_from(["left", "both", "right"]), scalars),
    horizon=values,
    on_late=st.one_of(st.sampled_from(["error", "drop", "ignore"]), scalars),
    max_groups=st.one_of(st.integers(-5, 2**70), scalars),
    fill=st.one_of(st.booleans(), scalars),
)
def test_other_parameters(
    by: Any, size: Any, closed: Any, horizon: Any, on_late: Any, max_groups: Any, fill: Any
) -> None:
    call(
        source=CAPTURE,
        windows=["1us", "1ms"],
        rates=["1Gbps"],
        bins=["1ms"],
        by=by,
        size=size,
        closed=closed,
        reorder_horizon=horizon,
        on_late=on_late,
        max_groups=max_groups,
        fill_empty_bins=fill,
    )


sources = st.one_of(
    scalars,
    st.binary(max_size=64),
    st.binary(max_size=64).map(bytearray),
    st.binary(max_size=64).map(lambda b: CAPTURE[: len(b)] + b),
    st.binary(max_size=64).map(io.BytesIO),
    st.text(max_size=20).map(io.StringIO),
    st.sampled_from(["/nonexistent/x.pcap", "/", "", "-x", "/proc/self/mem"]),
    st.lists(st.sampled_from([CAPTURE, b"", b"\x0a\x0d\x0d\x0a", CAPTURE[:100]]), max_size=3),
    st.dictionaries(st.sampled_from(["timestamp", "size", "wire_len", "interface"]), values, max_size=3),
    st.tuples(values, values),
    st.builds(
        lambda ts, sz: pl.DataFrame({"timestamp": ts, "size": sz}),
        st.lists(st.integers(-(2**63), 2**63 - 1), min_size=2, max_size=2),
        st.lists(st.integers(0, 2**63), min_size=2, max_size=2),
    ),
)


@SETTINGS
@given(source=sources, strict=st.booleans())
def test_sources_of_odd_types(source: Any, strict: bool) -> None:
    assume(not (isinstance(source, str) and source == "-"))  # stdin: would wait for input
    call(source=source, windows=["1us"], rates=["1Gbps"], strict=strict)
    for f in (burstcore.read_packets, burstcore.info):
        if isinstance(source, io.IOBase):
            source.seek(0)
        try:
            f(source, strict=strict)
        except burstcore.InternalError:
            raise
        except DOCUMENTED:
            pass


def test_a_valid_call_still_works() -> None:
    r = burstcore.scan(CAPTURE, windows=["1us", "1ms"], rates=["1Gbps"], by=["src"])
    assert r.summary["packets"][0] == 40
    assert r.groups["packets"].sum() == 40
