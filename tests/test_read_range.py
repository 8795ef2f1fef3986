"""read_packets(start=, end=): the rows of the whole read whose timestamp is in [start, end), in
file order, on one thread or several, with or without a filter; chosen as scan chooses its
packets (packets without a timestamp are in no range)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from tests import oracles

T0 = 1_700_000_000_000_000_000
N = 20_000
# Where the ranges below start and end: instants several packets share (see `_stamps`).
LO, HI = T0 + 1_000 * 5_000, T0 + 1_000 * 15_000


def _stamps(n: int) -> list[int]:
    """1 µs apart in runs of four equal timestamps, with a packet 3 ms late every 997: the rows
    stay in file order, and a bound falls on several packets at once."""
    ts = [T0 + 1_000 * (i - i % 4) for i in range(n)]
    for i in range(500, n, 997):
        ts[i] -= 3_000_000
    return ts


def _frame(i: int) -> bytes:
    src, dst = f"10.0.0.{1 + i % 5}", f"10.0.1.{1 + i % 3}"
    return oracles.eth_ipv4_udp(src, dst, 1000 + i % 7, 2000, payload=i % 200, proto=(17, 6)[i % 3 == 0])


def _capture(fmt: str, n: int = N, untimed: bool = False) -> bytes:
    """pcap or pcapng; with ``untimed``, every 101st packet a Simple Packet Block (no timestamp)."""
    ts = _stamps(n)
    if fmt == "pcap":
        w = burstcore.CaptureWriter("pcap", nanos=True)
        for i, t in enumerate(ts):
            w.packet(t, _frame(i))
        return w.getvalue()
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    for i, t in enumerate(ts):
        if untimed and i % 101 == 3:
            w.spb(_frame(i))
        else:
            w.epb(0, _frame(i), ts_ns=t)
    return w.getvalue()


def _in_range(df: pl.DataFrame, lo: int | None, hi: int | None) -> pl.DataFrame:
    """What a range should keep of a whole read, by polars: a timestamp, at or after lo, before hi."""
    ns = pl.col("timestamp").dt.epoch("ns")
    keep = pl.col("timestamp").is_not_null()
    if lo is not None:
        keep &= ns >= lo
    if hi is not None:
        keep &= ns < hi
    return df.filter(keep)


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("read-range")
    out = {}
    for name, data in (
        ("t.pcap", _capture("pcap")),
        ("t.pcapng", _capture("pcapng")),
        ("u.pcapng", _capture("pcapng", untimed=True)),
    ):
        (d / name).write_bytes(data)
        out[name] = d / name
    return out


RANGES = [(LO, HI), (None, HI), (LO, None), (LO, LO + 1), (HI - 1, HI), (T0 - 10**9, T0 - 1)]


@pytest.mark.parametrize("name", ["t.pcap", "t.pcapng", "u.pcapng"])
@pytest.mark.parametrize("filter", [None, "tcp and src host 10.0.0.2"])
def test_a_range_keeps_the_rows_of_the_whole_read_in_it(captures: dict[str, Path], name: str, filter: Any) -> None:
    path = str(captures[name])
    whole = burstcore.read_packets(path, threads=1, filter=filter)
    for lo, hi in RANGES:
        want = _in_range(whole, lo, hi)
        for threads in (1, 2):
            got = burstcore.read_packets(path, threads=threads, start=lo, end=hi, filter=filter)
            assert_frame_equal(got, want)
            if name == "t.pcap" and threads == 2 and (lo, hi) == (LO, HI):
                assert got.n_chunks() == 2, "read in byte ranges for real"
    # The bounds fall on four packets each: those at start are in, those at end are out.
    ns = burstcore.read_packets(path, columns=["timestamp"], start=LO, end=HI)["timestamp"].dt.epoch("ns")
    if filter is None:
        assert (ns == LO).sum() == 4 and (ns == HI).sum() == 0
        assert (ns == HI - 4_000).sum() == 4


def test_packets_without_a_timestamp_are_in_no_range(captures: dict[str, Path]) -> None:
    path = str(captures["u.pcapng"])
    whole = burstcore.read_packets(path)
    untimed = whole["timestamp"].null_count()
    assert untimed == len(range(3, N, 101))
    # All of time but one instant before the first packet: only the untimed packets are left out.
    everything = burstcore.read_packets(path, start=T0 - 10**12)
    assert len(everything) == N - untimed
    assert everything["timestamp"].null_count() == 0
    # As scan leaves them out (it reads no packet without a timestamp, ranged or not).
    for lo, hi in RANGES:
        for filter in (None, "tcp"):
            rows = len(burstcore.read_packets(path, columns=["wire_len"], start=lo, end=hi, filter=filter))
            s = burstcore.scan(path, windows="1ms", rates="1Gbps", start=lo, end=hi, filter=filter).summary
            assert s["packets"][0] == rows, (lo, hi, filter)


def test_columns_without_the_timestamp_are_ranged_by_it(captures: dict[str, Path]) -> None:
    path = str(captures["t.pcapng"])
    both = burstcore.read_packets(path, columns=["timestamp", "dport", "wire_len"], start=LO, end=HI)
    lean = burstcore.read_packets(path, columns=["wire_len", "dport"], start=LO, end=HI)
    assert_frame_equal(lean, both.select("wire_len", "dport"))


def test_a_range_takes_every_form_scan_takes(captures: dict[str, Path]) -> None:
    path = str(captures["t.pcap"])
    lo = T0 + 2_500  # between the packets at T0 and T0 + 4 µs
    want = burstcore.read_packets(path, columns=["timestamp"], start=lo, end=HI)
    forms: list[Any] = [
        np.int64(lo),
        np.datetime64(lo, "ns"),
        "2023-11-14T22:13:20.0000025Z",
        dt.datetime.fromtimestamp(lo // 10**9, dt.UTC).replace(microsecond=3),
        "2023-11-14T23:13:20.000003+01:00",
    ]
    for f in forms:
        assert_frame_equal(burstcore.read_packets(path, columns=["timestamp"], start=f, end=HI), want)


def test_bad_ranges_are_told_as_scan_tells_them(captures: dict[str, Path]) -> None:
    path = str(captures["t.pcap"])
    empty = r"start \(.*Z\) is not before end \(.*Z\): the range \[start, end\) would be empty"
    with pytest.raises(ValueError, match=empty):
        burstcore.read_packets(path, start=LO, end=LO)
    with pytest.raises(ValueError, match=r"start=1.7e\+18 is not an instant; give a datetime"):
        burstcore.read_packets(path, start=1.7e18)
    with pytest.raises(ValueError, match="end='yesterday' is not an instant"):
        burstcore.read_packets(path, end="yesterday")


def test_a_range_that_leaves_most_out_still_reports_progress_to_the_end(captures: dict[str, Path]) -> None:
    path = captures["t.pcap"]
    size = path.stat().st_size
    width = len(burstcore.read_packets(str(path), threads=1).columns)
    seen: list[tuple[int, int | None]] = []

    def progress(done: int, total: int | None) -> None:
        seen.append((done, total))

    for threads in (1, 2):
        seen.clear()
        df = burstcore.read_packets(str(path), start=T0 - 2, end=T0 - 1, threads=threads, progress=progress)
        assert df.height == 0 and df.width == width
        assert seen[-1] == (size, size)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 60),
    fmt=st.sampled_from(["pcap", "pcapng"]),
    lo=st.one_of(st.none(), st.integers(-3_000_010, 70_000)),
    width=st.one_of(st.none(), st.integers(1, 80_000)),
)
def test_any_range_of_a_small_capture(n: int, fmt: str, lo: int | None, width: int | None) -> None:
    data = _capture(fmt, n, untimed=True)
    start = None if lo is None else T0 + lo
    end = None if width is None else (T0 + lo + width if lo is not None else T0 + width)
    got = burstcore.read_packets(data, start=start, end=end)
    want = burstcore.read_packets(data)
    assert_frame_equal(got, want if start is None and end is None else _in_range(want, start, end))
