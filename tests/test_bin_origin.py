"""bin_origin=: the series counted from the epoch, the first packet, start= or any instant, against
brute-force binning of the exact ns (read_packets', tshark's) and pandas' resample(origin=...)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from burstcore import cli
from tests import oracles
from tests.conftest import epoch_ns, shared_file, tshark_fields

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
T0 = 1_700_000_000_000_000_000


def brute(ts: list[int], sizes: list[int], width: int, origin: int, lo: int | None = None, hi: int | None = None):
    """(start, bytes, packets) of every bin o + kΔ from the first non-empty one to the last, or
    from the bin holding lo to the one holding hi - 1; k = ⌊(t − o)/Δ⌋ in Python's integers."""
    acc: dict[int, list[int]] = {}
    for t, s in zip(ts, sizes, strict=True):
        cell = acc.setdefault((t - origin) // width, [0, 0])
        cell[0] += s
        cell[1] += 1
    if not acc:
        return []
    k0 = min(acc) if lo is None else (lo - origin) // width
    k1 = max(acc) if hi is None else (hi - 1 - origin) // width
    return [(max(origin + k * width, I64_MIN), *acc.get(k, [0, 0])) for k in range(k0, k1 + 1)]


def series_rows(r: burstcore.ScanResult, width: int) -> list[tuple[int, int, int]]:
    got = r.series.filter((pl.col("by") == "all") & (pl.col("bin_ns") == width))
    return got.select("start_ns", "bytes", "packets").rows()


def trace(seed: int, n: int = 400) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    ts = np.sort(T0 + rng.integers(0, 50_000_000, n)).tolist()
    sizes = rng.integers(60, 1500, n).tolist()
    return ts, sizes


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_every_origin_against_brute_force_over_read_packets(fmt: str, tmp_path: Path) -> None:
    ts, sizes = trace(1)
    path = tmp_path / f"c.{fmt}"
    path.write_bytes(oracles.capture(ts, sizes, fmt=fmt))
    # The exact ns the scan counts, read independently of the series.
    pk = burstcore.read_packets(path)
    t, s = pk["timestamp"].dt.epoch("ns").to_list(), pk["wire_len"].to_list()
    assert t == ts
    widths = [1_000_000, 3_333_333, 10_000_000]
    for given_origin, origin in [
        ("epoch", 0),
        ("start", ts[0]),
        (T0 + 123_456_789, T0 + 123_456_789),  # after the first packet: bins with k < 0 too
        ("2023-11-14T22:13:20.000000001Z", T0 + 1),
        (I64_MIN, I64_MIN),
        (I64_MAX, I64_MAX),
    ]:
        r = burstcore.scan(
            path, windows=["1ms"], rates=["1Gbps"], bins=[f"{w}ns" for w in widths], bin_origin=given_origin
        )
        assert r.config["bin_origin_ns"] == origin
        for w in widths:
            assert series_rows(r, w) == brute(t, s, w, origin), (given_origin, w)


def test_start_is_the_range_start_and_the_range_is_covered(tmp_path: Path) -> None:
    ts, sizes = trace(2)
    path = tmp_path / "c.pcapng"
    path.write_bytes(oracles.capture(ts, sizes))
    lo, hi = ts[50] - 777, ts[300] + 5
    keep = [(t, s) for t, s in zip(ts, sizes, strict=True) if lo <= t < hi]
    kt, ks = [t for t, _ in keep], [s for _, s in keep]
    for given_origin, origin in [("start", lo), ("epoch", 0), (ts[0], ts[0])]:
        r = burstcore.scan(path, rates=["1Gbps"], bins=["1ms", "7ms"], start=lo, end=hi, bin_origin=given_origin)
        assert r.config["bin_origin_ns"] == origin
        for w in (1_000_000, 7_000_000):
            want = brute(kt, ks, w, origin, lo, hi)
            assert series_rows(r, w) == want
            if given_origin == "start":
                # The bins tile the range from its start: the first begins at start= itself.
                assert want[0][0] == lo
        # Without the fill: only the non-empty bins, the same starts.
        sparse = burstcore.scan(
            path, rates=["1Gbps"], bins=["7ms"], start=lo, end=hi, bin_origin=given_origin, fill_empty_bins=False
        )
        assert series_rows(sparse, 7_000_000) == [b for b in brute(kt, ks, 7_000_000, origin) if b[2]]


def test_start_is_the_first_packet_counted_after_the_filter(tmp_path: Path) -> None:
    ts, sizes = trace(3, 200)
    pairs = [("10.0.0.1", "10.0.0.2") if i % 3 else ("10.0.0.3", "10.0.0.2") for i in range(len(ts))]
    frames = [oracles.eth_ipv4_udp(a, b, 1000, 2000) for a, b in pairs]
    path = tmp_path / "c.pcapng"
    path.write_bytes(oracles.capture(ts, sizes, frames=frames))
    r = burstcore.scan(
        path, rates=["1Gbps"], bins=["2ms"], by=["all", "src"], filter="src host 10.0.0.1", bin_origin="start"
    )
    kept = [(t, s) for i, (t, s) in enumerate(zip(ts, sizes, strict=True)) if i % 3]
    first = kept[0][0]
    assert first != ts[0]
    assert r.config["bin_origin_ns"] == first
    assert series_rows(r, 2_000_000) == brute([t for t, _ in kept], [s for _, s in kept], 2_000_000, first)
    # One origin for every group (here the only src), so the groups' bins line up.
    src = r.series.filter(pl.col("by") == "src").select("start_ns", "bytes", "packets").rows()
    assert src == series_rows(r, 2_000_000)


def test_pandas_resample_origin_start_and_an_instant(tmp_path: Path) -> None:
    ts, sizes = trace(4, 600)
    path = tmp_path / "c.pcap"
    path.write_bytes(oracles.capture(ts, sizes, fmt="pcap"))
    df = pd.DataFrame({"bytes": sizes}, index=pd.to_datetime(np.array(ts, dtype="datetime64[ns]")))
    for origin in ["start", pd.Timestamp(T0 + 4_321_987), "epoch"]:
        want = df["bytes"].resample("3ms", origin=origin).sum()
        r = burstcore.scan(
            path, rates=["1Gbps"], bins=["3ms"], bin_origin=origin.value if isinstance(origin, pd.Timestamp) else origin
        )
        got = r.series.select("start_ns", "bytes")
        assert got["start_ns"].to_list() == want.index.asi8.tolist(), origin
        assert got["bytes"].to_list() == want.to_list(), origin


def test_a_shared_capture_against_tshark_and_pandas() -> None:
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    rows = tshark_fields(path, ["frame.time_epoch", "frame.len"])
    ts = [epoch_ns(a) for a, _ in rows]
    sizes = [int(b) for _, b in rows]
    order = np.argsort(np.array(ts), kind="stable")
    df = pd.DataFrame(
        {"bytes": np.array(sizes)[order]}, index=pd.to_datetime(np.array(ts, dtype="datetime64[ns]")[order])
    )
    r = burstcore.scan(path, rates=["1Gbps"], bins=["100ms", "1s"], bin_origin="start")
    assert r.config["bin_origin_ns"] == min(ts)
    for label, w in (("100ms", 100_000_000), ("1s", 1_000_000_000)):
        want = df["bytes"].resample(label, origin="start").sum()
        got = r.series.filter(pl.col("bin_ns") == w).select("start_ns", "bytes")
        assert got["start_ns"].to_list() == want.index.asi8.tolist()
        assert got["bytes"].to_list() == want.to_list()
        assert got["bytes"].to_list() == [b[1] for b in brute(ts, sizes, w, min(ts))]


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_threads_and_time_chunks_bin_as_one_thread(threads: int, tmp_path: Path) -> None:
    ts, sizes = trace(5, 20_000)
    path = tmp_path / "c.pcap"
    path.write_bytes(oracles.capture(ts, sizes, fmt="pcap"))
    for origin in ["start", T0 + 999_999_937, "epoch"]:
        for by in (["all"], ["all", "src"]):  # time chunks / metrics shared out among threads
            kw = {"windows": ["10us", "1ms"], "rates": ["1Gbps"], "bins": ["1ms", "777us"], "by": by}
            one = burstcore.scan(path, threads=1, bin_origin=origin, **kw)
            many = burstcore.scan(path, threads=threads, bin_origin=origin, **kw)
            assert_frame_equal(many.series, one.series)
            assert many.config["bin_origin_ns"] == one.config["bin_origin_ns"]


@settings(max_examples=150, deadline=None)
@given(
    base=st.integers(-(10**15), 10**15),
    steps=st.lists(st.integers(0, 3000), min_size=1, max_size=60),
    width=st.sampled_from([1, 2, 3, 1000, 999_983, 10**9, 10**13]),
    origin=st.one_of(st.integers(I64_MIN, I64_MAX), st.integers(-(10**15), 10**15), st.just("start")),
    fill=st.booleans(),
)
def test_in_memory_columns_any_origin_and_width(
    base: int, steps: list[int], width: int, origin: int | str, fill: bool
) -> None:
    # A few hundred bins at most, so that the brute force can list every one.
    ts = sorted(base + u * (width // 7 + 1) for u in steps)
    sizes = [(t % 1400) + 1 for t in ts]
    o = ts[0] if origin == "start" else origin
    r = burstcore.scan(
        (np.array(ts, dtype=np.int64), np.array(sizes, dtype=np.uint64)),
        windows=["1us"],
        rates=["1Gbps"],
        bins=[f"{width}ns"],
        bin_origin=origin,
        fill_empty_bins=fill,
    )
    assert r.config["bin_origin_ns"] == o
    want = brute(ts, sizes, width, o)
    if not fill:
        want = [b for b in want if b[2]]
    assert series_rows(r, width) == want


def test_superpose_counts_its_bins_from_the_origin_too(tmp_path: Path) -> None:
    ts, sizes = trace(6, 300)
    path = tmp_path / "c.pcapng"
    path.write_bytes(oracles.capture(ts, sizes))
    sp = burstcore.superpose([path, path], offsets=["0s", "1500us"], rates=["1Gbps"], bins=["2ms"], bin_origin="start")
    merged = sorted([*ts, *(t + 1_500_000 for t in ts)])
    msizes = [
        s
        for _, s in sorted(
            [*zip(ts, sizes, strict=True), *((t + 1_500_000, s) for t, s in zip(ts, sizes, strict=True))]
        )
    ]
    assert sp.series.select("start_ns", "bytes", "packets").rows() == brute(merged, msizes, 2_000_000, ts[0])


def test_bad_origins_say_what_to_give(tmp_path: Path) -> None:
    ts, sizes = trace(7, 10)
    cols = (np.array(ts, dtype=np.int64), np.array(sizes, dtype=np.uint64))
    with pytest.raises(ValueError, match=r"bin_origin.*'epoch'.*'start'"):
        burstcore.scan(cols, rates=["1Gbps"], bins=["1ms"], bin_origin="first")
    with pytest.raises(TypeError, match="bin_origin"):
        burstcore.scan(cols, rates=["1Gbps"], bins=["1ms"], bin_origin=1.5)


def test_cli_bin_origin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ts, sizes = trace(8, 300)
    path = tmp_path / "c.pcapng"
    path.write_bytes(oracles.capture(ts, sizes))
    out = tmp_path / "series.csv"
    for origin, o in (("start", ts[0]), (str(T0 + 5), T0 + 5), ("epoch", 0)):
        code = cli.main(
            [
                "scan",
                str(path),
                "--rates",
                "1Gbps",
                "--bins",
                "2ms",
                "--bin-origin",
                origin,
                "-o",
                str(out),
                "--table",
                "series",
                "-q",
            ]
        )
        assert code == 0
        got = pl.read_csv(out).select("start_ns", "bytes", "packets").rows()
        assert got == brute(ts, sizes, 2_000_000, o), origin
    with pytest.raises(SystemExit):
        cli.main(["scan", str(path), "--bins", "2ms", "--bin-origin", "soon"])
    assert "--bin-origin" in capsys.readouterr().err
