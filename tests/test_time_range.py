"""start=/end=: a scan or an analysis of [start, end) is that of the capture cut to it, its ρ is
over the stretch itself, and every packet left out is counted."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from tests import oracles
from tests.conftest import shared_file

BASE = 1_700_000_000_000_000_000
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


@st.composite
def cut_traces(draw):
    """Packets (ts, size, src, dst), and a range [lo, hi) drawn around them (either end open)."""
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.sampled_from([0, 1, 7, 1000, 10**5, 3 * 10**6]), min_size=n, max_size=n))
    ts, t = [], BASE
    for g in gaps:
        t += g
        ts.append(t)
    sizes = [draw(st.integers(60, 1500)) for _ in range(n)]
    pairs = [(draw(st.sampled_from(HOSTS)), draw(st.sampled_from(HOSTS))) for _ in range(n)]
    around = st.one_of(st.none(), st.sampled_from(ts), st.integers(ts[0] - 10, ts[-1] + 10))
    lo, hi = draw(around), draw(around)
    if lo is not None and hi is not None and lo >= hi:
        lo, hi = hi, lo + 1 if lo == hi else lo
    return ts, sizes, pairs, lo, hi


def _capture(ts, sizes, pairs, fmt="pcapng"):
    frames = [oracles.eth_ipv4_udp(s, d, 1000, 2000) for s, d in pairs]
    return oracles.capture(ts, sizes, fmt=fmt, frames=frames)


def _inside(lo, hi, t):
    return (lo is None or t >= lo) and (hi is None or t < hi)


KW = dict(windows=["1us", "1ms"], rates=["1Gbps", "10Gbps"], bins=["1ms"], by=["all", "pair"])


@SETTINGS
@given(cut_traces(), st.sampled_from(["pcap", "pcapng"]), st.sampled_from([1, 2]))
def test_a_range_scans_as_the_capture_cut_to_it(trace, fmt, threads):
    ts, sizes, pairs, lo, hi = trace
    keep = [i for i, t in enumerate(ts) if _inside(lo, hi, t)]
    whole = _capture(ts, sizes, pairs, fmt)
    r = burstcore.scan(whole, start=lo, end=hi, threads=threads, **KW)
    s = r.summary.row(0, named=True)
    assert s["packets_read"] == len(ts)
    assert s["skipped_outside_range"] == len(ts) - len(keep)
    assert s["packets"] == len(keep)
    if not keep:
        assert r.envelope.height == 0
        return
    cut = burstcore.scan(_capture([ts[i] for i in keep], [sizes[i] for i in keep], [pairs[i] for i in keep], fmt), **KW)
    for name in ("series",):
        assert_frame_equal(getattr(r, name), getattr(cut, name))
    for name in ("envelope", "backlog"):
        # Same E(τ) and B_max; PtM and rate_over_mean differ only by the span of ρ (below).
        got = getattr(r, name).drop("ptm", "rate_over_mean", strict=False)
        assert_frame_equal(got, getattr(cut, name).drop("ptm", "rate_over_mean", strict=False))
    # ρ is over the stretch: from start (else the group's first packet) to end (else its last).
    g = r.groups.filter(pl.col("by") == "all").row(0, named=True)
    first_ns = ts[keep[0]] if lo is None else lo
    last_ns = ts[keep[-1]] if hi is None else hi
    assert g["span_ns"] == last_ns - first_ns
    want = sum(sizes[i] for i in keep) * 8e9 / (last_ns - first_ns) if last_ns > first_ns else None
    assert g["mean_rate_bps"] == want
    assert r.summary["span_ns"][0] == last_ns - first_ns


@SETTINGS
@given(cut_traces())
def test_analyses_of_a_range_are_those_of_the_cut_capture(trace):
    ts, sizes, pairs, lo, hi = trace
    keep = [i for i, t in enumerate(ts) if _inside(lo, hi, t)]
    whole = _capture(ts, sizes, pairs)
    cut = _capture([ts[i] for i in keep], [sizes[i] for i in keep], [pairs[i] for i in keep])
    rng = dict(start=lo, end=hi)
    assert burstcore.flows(whole, **rng).equals(burstcore.flows(cut))
    assert burstcore.traffic_matrix(whole, **rng).equals(burstcore.traffic_matrix(cut))
    assert burstcore.host_volumes(whole, **rng).equals(burstcore.host_volumes(cut))
    assert burstcore.sizes(whole, by="pair", **rng).histogram.equals(burstcore.sizes(cut, by="pair").histogram)
    assert burstcore.gaps(whole, **rng).histogram.equals(burstcore.gaps(cut).histogram)
    b, c = burstcore.bursts(whole, gap="1us", **rng), burstcore.bursts(cut, gap="1us")
    assert b.bursts.equals(c.bursts)
    assert b.summary["skipped_outside_range"][0] == len(ts) - len(keep)
    assert b.summary["packets"][0] == len(keep)


def test_a_range_takes_every_form_of_an_instant():
    ts = [BASE + k * 1000 for k in range(10)]
    data = _capture(ts, [100] * 10, [("10.0.0.1", "10.0.0.2")] * 10)
    lo = BASE + 2500
    forms = [
        lo,
        np.int64(lo),
        np.datetime64(lo, "ns"),
        "2023-11-14T22:13:20.0000025Z",
        dt.datetime.fromtimestamp(lo // 10**9, dt.UTC).replace(microsecond=2),  # 2 µs: not 2.5
        "2023-11-14T23:13:20.000003+01:00",  # 3 µs, in another zone
    ]
    got = [burstcore.scan(data, windows="1us", rates="1Gbps", start=f).summary["packets"][0] for f in forms]
    assert got == [7, 7, 7, 7, 8, 7]


def test_bad_ranges_say_what_is_wrong():
    data = _capture([BASE, BASE + 10], [100, 100], [("10.0.0.1", "10.0.0.2")] * 2)
    empty = r"start \(.*Z\) is not before end \(.*Z\): the range \[start, end\) would be empty"
    with pytest.raises(ValueError, match=empty):
        burstcore.scan(data, start=BASE + 5, end=BASE + 5)
    with pytest.raises(ValueError, match=r"start=1.7e\+18 is not an instant; give a datetime"):
        burstcore.flows(data, start=1.7e18)
    with pytest.raises(ValueError, match="end='yesterday' is not an instant"):
        burstcore.traffic_matrix(data, end="yesterday")
    with pytest.raises(ValueError, match="in-memory columns are yours to filter"):
        burstcore.scan((np.array([BASE], dtype=np.int64), np.array([100], dtype=np.uint64)), start=BASE)


def test_a_range_of_a_training_capture_measures_its_iterations():
    # Capture d's PtM(5 ms) over the whole capture is made by its idle head and tail; over the
    # logged training iterations it is bounded by P/τ (seed-papers.md, claim 12).
    meta = json.loads(shared_file("captures/d_ring2_resnetsmall_noshape_bridge.meta.json").read_text())
    its = meta["iterations"]
    lo, hi = its[1]["t_iter_start_ns_min"], its[-1]["t_step_end_ns_max"]
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    whole = burstcore.scan(path, windows="5ms", rates="1Gbps").ptm("5ms")["ptm"][0]
    train = burstcore.scan(path, windows="5ms", rates="1Gbps", start=lo, end=hi)
    period = (its[-1]["t_iter_start_ns_min"] - its[1]["t_iter_start_ns_min"]) / (len(its) - 2)
    ptm = train.ptm("5ms")["ptm"][0]
    assert whole > 60 and 1 < ptm <= period / 5e6
    assert train.summary["span_ns"][0] == hi - lo


def test_a_late_packet_outside_the_range_is_left_out_before_ordering():
    # 100 ms late, past the 10 ms horizon, but before start: the scan and every analysis leave
    # it out as outside, never as late (the analyses had ordered it first and raised).
    ts = [BASE + 100_000_000, BASE, BASE + 200_000_000]
    data = _capture(ts, [100] * 3, [("10.0.0.1", "10.0.0.2")] * 3)
    with pytest.raises(burstcore.OutOfOrderError):
        burstcore.flows(data)
    rng = dict(start=BASE + 50_000_000)
    assert burstcore.scan(data, windows="1ms", rates="1Gbps", **rng).summary["skipped_outside_range"][0] == 1
    assert burstcore.flows(data, **rng)["packets"].to_list() == [2]
    b = burstcore.bursts(data, **rng).summary.row(0, named=True)
    assert (b["skipped_outside_range"], b["reordered"], b["packets"]) == (1, 0, 2)
