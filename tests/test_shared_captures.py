"""The real training captures: burstcore's E(τ)/PtM(τ) and binned series against an independent
computation from tshark's reading of the same files (numpy over tshark's fields)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import burstcore
from tests.conftest import epoch_ns, shared_file, tshark_fields

CAPTURES = [
    "captures/a_ring4_mlp5m_1g_bridge.pcapng.zst",
    "captures/b_ps4_mlp5m_1g_bridge.pcapng.zst",
    "captures/d_ring2_resnetsmall_noshape_bridge.pcapng",
]
WINDOWS_NS = [10_000, 100_000, 1_000_000, 5_000_000, 50_000_000, 500_000_000]


@cache
def tshark_trace(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = tshark_fields(path, ["frame.time_epoch", "frame.len"])
    ts = np.array([epoch_ns(r[0]) for r in rows], dtype=np.int64)
    size = np.array([int(r[1]) for r in rows], dtype=np.int64)
    return ts, size


def envelope_numpy(ts: np.ndarray, size: np.ndarray, tau: int) -> int:
    """E(τ) for half-open windows: for each packet i, the bytes in [t_i, t_i + τ), by bisection."""
    order = np.argsort(ts, kind="stable")
    t, s = ts[order], size[order]
    csum = np.concatenate([[0], np.cumsum(s)])
    end = np.searchsorted(t, t + tau, side="left")
    return int((csum[end] - csum[np.arange(len(t))]).max())


@pytest.mark.parametrize("rel", CAPTURES)
def test_envelope_and_ptm_match_tshark_reading(rel):
    path = shared_file(rel)
    ts, size = tshark_trace(path)
    r = burstcore.scan(str(path), windows=[f"{w}ns" for w in WINDOWS_NS], rates=["1Gbps"])
    s = r.summary.row(0, named=True)
    assert s["packets"] == len(ts) and s["bytes"] == int(size.sum())
    span = int(ts.max() - ts.min())
    assert s["span_ns"] == span
    env = dict(r.envelope.select("window_ns", "bytes").iter_rows())
    ptm = dict(r.envelope.select("window_ns", "ptm").iter_rows())
    for w in WINDOWS_NS:
        e = envelope_numpy(ts, size, w)
        assert env[w] == e, (rel, w)
        assert ptm[w] == pytest.approx(e * span / (int(size.sum()) * w), rel=1e-12)
    # These captures step backwards (bridge batching): the scan put them in order and said so.
    assert s["reordered"] == int(np.sum(ts[1:] < np.maximum.accumulate(ts)[:-1]))


def tshark_io_stat(path: Path, interval_s: str) -> list[tuple[int, int]]:
    """(frames, bytes) per interval of `tshark -z io,stat`, whose intervals start at the first packet."""
    out = subprocess.run(
        ["tshark", "-n", "-q", "-r", str(path), "-z", f"io,stat,{interval_s}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"^\|\s*[\d.]+\s*<>\s*(?:[\d.]+|Dur)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2))))
    return rows


@pytest.mark.parametrize(
    "rel",
    [
        "captures/d_ring2_resnetsmall_noshape_bridge.pcapng",
        "corpus/dpkt/examples/data/http.pcap",
        "corpus/pcapplusplus/Tests/Pcap++Test/PcapExamples/example.pcap",
        "corpus/gopacket/pr1042/pcapgo/tests/le/test301.pcapng",
    ],
)
def test_binned_series_match_tshark_io_stat(rel):
    """tshark bins from the first packet (relative time floored to µs, then to the interval, which
    for whole-µs intervals equals flooring the ns directly); burstcore bins from epoch multiples of
    Δ. burstcore's 1 ns bins re-aggregated onto tshark's origin must give tshark's table."""
    path = shared_file(rel)
    ts, _ = tshark_trace(path)
    r = burstcore.scan(str(path), windows=["1ms"], rates=["1Gbps"], bins=["1ns"], fill_empty_bins=False)
    t0 = int(ts.min())
    for interval_ms in (10, 100, 1000):
        width = interval_ms * 1_000_000
        fine = r.series.select(((pl.col("start_ns") - t0) // width).alias("k"), "bytes", "packets")
        agg = fine.group_by("k").agg(pl.col("packets").sum(), pl.col("bytes").sum()).sort("k")
        tshark = tshark_io_stat(path, f"{interval_ms / 1000:g}")  # tshark 4.0 dies of SIGFPE on "1.0"
        dense = dict.fromkeys(range(len(tshark)), (0, 0))
        for k, p, b in agg.iter_rows():
            dense[k] = (p, b)
        assert [dense[k] for k in range(len(tshark))] == tshark
        # and the epoch-aligned coarse bins of burstcore agree with its own fine bins
        r2 = burstcore.scan(
            str(path), windows=["1ms"], rates=["1Gbps"], bins=[f"{interval_ms}ms"], fill_empty_bins=False
        )
        coarse = (
            r.series.select((pl.col("start_ns") // width * width).alias("s"), "bytes")
            .group_by("s")
            .agg(pl.col("bytes").sum())
        )
        assert dict(coarse.iter_rows()) == dict(r2.series.select("start_ns", "bytes").iter_rows())


def test_ptm_table_of_ring_capture_is_what_the_readme_shows():
    """The README quotes this table; keep it true."""
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    r = burstcore.scan(str(path), windows=["100us", "1ms", "5ms", "50ms", "500ms"], rates=["1Gbps"])
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for w, ptm in r.envelope.select("window_ns", "ptm").iter_rows():
        needle = f"| {burstcore._units.format_duration(w)} | {ptm:.1f} |"
        assert needle in readme, needle


def test_per_pair_series_over_a_stretch_covers_it_as_its_mean_rate_does():
    """The CNSM study's throughput tables (mean of fixed bins over a stretch, per host pair) on
    the training of d, with half a second of idle either side: every pair's series holds every
    bin of [start, end), zeros included, each equal to tshark's sum of frame.len in it, and the
    mean of its rate_bps is the pair's ρ over the stretch. Before, the series stopped at the
    pair's first and last busy bins, and its mean (756 Mbit/s for all traffic) tripled ρ (252)."""
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    rows = tshark_fields(path, ["frame.time_epoch", "frame.len", "ip.src", "ip.dst"])
    width = 100_000_000
    start, end = 1_796_006_912_500_000_000, 1_796_006_914_000_000_000  # 15 whole bins
    want: dict[tuple[str, int], int] = {}
    for t_text, n, src, dst in rows:
        t = epoch_ns(t_text)
        if start <= t < end:
            for group in ("all", f"{src}>{dst}" if src else None):
                if group is not None:
                    want[(group, t // width)] = want.get((group, t // width), 0) + int(n)
    r = burstcore.scan(str(path), windows=["5ms"], rates=[], bins=["100ms"], by=["all", "pair"], start=start, end=end)
    groups = sorted({g for g, _ in want})
    assert sorted(r.groups["group"].to_list()) == groups
    for g in groups:
        s = r.series.filter(pl.col("group") == g).sort("start_ns")
        assert s["start_ns"].to_list() == list(range(start, end, width)), g
        assert s["bytes"].to_list() == [want.get((g, k // width), 0) for k in range(start, end, width)], g
        rho = r.groups.filter(pl.col("group") == g)["mean_rate_bps"][0]
        assert s["rate_bps"].mean() == pytest.approx(rho, rel=1e-12), g
        assert rho == pytest.approx(sum(s["bytes"].to_list()) * 8e9 / (end - start), rel=1e-12), g


def test_flow4_counts_as_the_cnsm_study_with_a_tcp_filter():
    """The CNSM study counted distinct (ip.src, ip.dst, tcp.srcport, tcp.dstport) from tshark's
    fields: its groupby drops the UDP packets, whose tcp ports are empty. flow4 ignores the
    protocol, so on a capture with UDP it counts more (271 against 132 here); filter='tcp' gives
    the study's count, as the docs say. A guard of the docs: it passes on the old code too."""
    path = shared_file("corpus/pcapplusplus/Tests/Pcap++Test/PcapExamples/example.pcap")
    fields = ["ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport"]
    rows = tshark_fields(path, fields, ["-Y", "ip"])
    tcp = {(s, d, int(a), int(b)) for s, d, a, b, _, _ in rows if a}
    udp = {(s, d, int(a), int(b)) for s, d, _, _, a, b in rows if a}
    assert tcp and udp
    study = burstcore.flows(str(path), key="flow4", filter="tcp")
    assert set(study.select("src", "dst", "sport", "dport").iter_rows()) == tcp
    assert burstcore.flows(str(path), key="flow4").height == len(tcp | udp)
