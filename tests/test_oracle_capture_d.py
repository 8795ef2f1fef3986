"""The analyses on a real training capture (capture d of /work/shared/captures) against a brute
force over tshark's reading of it (`tshark -T fields`, an independent reader): flows' every
counter under each key and idle timeout, the traffic matrix and host volumes, sizes, gaps and
bursts per group. The brute force is tests/test_oracle_generated.py's, which follows
docs/metrics.md; this file only feeds it the packets as tshark reads them."""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from functools import cache

import polars as pl
import pytest

import burstcore
from tests.conftest import epoch_ns, shared_file, tshark_fields
from tests.test_oracle_generated import (
    FLOW_COLUMNS,
    QS,
    Packet,
    assert_gaps_equal_brute_force,
    by_group,
    in_time_order,
    order_stat,
    ref_bursts,
    ref_flows,
)

CAPTURE = "captures/d_ring2_resnetsmall_noshape_bridge.pcapng"
FIELDS = ["frame.time_epoch", "frame.len", "ip.src", "ip.dst", "ip.proto"]
PORTS = ["tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport"]


@cache
def tshark_packets() -> list[Packet]:
    """(t, wire length, (src, dst, proto, sport, dport) or None) per frame, in file order."""
    out: list[Packet] = []
    for row in tshark_fields(shared_file(CAPTURE), FIELDS + PORTS):
        t, length, src, dst, proto, *ports = row
        tsp, tdp, usp, udp = (int(p) if p else None for p in ports)
        key = None
        if src:
            sp, dp = (tsp, tdp) if tsp is not None else (usp, udp) if usp is not None else (0, 0)
            key = (src, dst, int(proto), sp, dp)
        out.append((epoch_ns(t), int(length), key))
    assert len(out) == 36_932  # the capture's README
    return out


@pytest.fixture(scope="module")
def capture():
    return shared_file(CAPTURE)


def test_tsharks_reading_steps_back_in_time_so_the_order_is_tested(capture):
    pk = tshark_packets()
    back = sum(1 for a, b in itertools.pairwise(pk) if b[0] < a[0])
    # The README: bridge captures step back by up to ~74 µs; the oracle sorts them itself.
    assert back > 0
    assert burstcore.flows(capture).height > 0


@pytest.mark.parametrize("key", ["flow", "flow4", "biflow"])
@pytest.mark.parametrize("timeout", [None, 0, 1_000, 1_000_000, 100_000_000])
def test_flows_every_counter_equals_brute_force_over_tsharks_reading(capture, key, timeout):
    df = burstcore.flows(capture, key=key, idle_timeout=None if timeout is None else f"{timeout}ns")
    want = ref_flows(tshark_packets(), key, timeout)
    assert df.height == len(want)
    assert df.select(FLOW_COLUMNS).rows() == want


def test_matrix_and_host_volumes_equal_brute_force_over_tsharks_reading(capture):
    pairs: dict = defaultdict(lambda: [0, 0])
    hosts: dict = defaultdict(lambda: [0, 0, 0, 0])
    for _, L, key in tshark_packets():
        src, dst = (None, None) if key is None else key[:2]
        pairs[(src, dst)][0] += L
        pairs[(src, dst)][1] += 1
        for host, at in ((src, 0), (dst, 2)):
            hosts[host][at] += L
            hosts[host][at + 1] += 1
    m = burstcore.traffic_matrix(capture)
    total = sum(b for b, _ in pairs.values())
    got = {
        (s, d): [b, n, share] for s, d, b, n, share in m.select("src", "dst", "bytes", "packets", "share").iter_rows()
    }
    assert got == {k: [b, n, b / total] for k, (b, n) in pairs.items()}
    assert m["bytes"].is_sorted(descending=True)
    h = burstcore.host_volumes(capture)
    cols = ["host", "sent_bytes", "sent_packets", "received_bytes", "received_packets"]
    assert {r[0]: list(r[1:]) for r in h.select(cols).iter_rows()} == dict(hosts)


@pytest.mark.parametrize("by", [None, "src", "pair", "flow"])
def test_sizes_equal_brute_force_over_tsharks_reading(capture, by):
    s = burstcore.sizes(capture, by=by, quantiles=QS)
    groups = by_group(tshark_packets(), by)
    assert set(s.groups["group"]) == set(groups)
    for name, gp in groups.items():
        sizes = [L for _, L, _ in gp]
        assert max(sizes) <= 65_535  # no super-frame here (those: test_oracle_generated.py)
        hist = s.histogram.filter(pl.col("group") == name).select("size", "packets").rows()
        assert hist == sorted((x, sizes.count(x)) for x in set(sizes)), name
        got = s.quantiles.filter(pl.col("group") == name).select("q", "value").rows()
        assert got == [(q, order_stat(sizes, q)) for q in QS], name
        row = s.groups.filter(pl.col("group") == name).select("packets", "bytes", "over_65535").row(0)
        assert row == (len(sizes), sum(sizes), 0)


@pytest.mark.parametrize("by", [None, "src", "pair", "flow"])
def test_gaps_equal_brute_force_over_tsharks_reading(capture, by):
    g = burstcore.gaps(capture, by=by, quantiles=QS)
    assert_gaps_equal_brute_force(g, by_group(tshark_packets(), by))


@pytest.mark.parametrize("gap", [0, 10_000, 1_000_000, 50_000_000])
@pytest.mark.parametrize("by", [None, "pair"])
def test_bursts_equal_brute_force_over_tsharks_reading(capture, gap, by):
    b = burstcore.bursts(capture, gap=f"{gap}ns", by=by, quantiles=QS)
    pk = tshark_packets()
    table = b.bursts if by is not None else b.bursts.with_columns(group=pl.lit("all"))
    dist = b.distributions if by is not None else b.distributions.with_columns(group=pl.lit("all"))
    for name, gp in by_group(pk, by).items():
        ref = ref_bursts(gp, gap)
        got = table.filter(pl.col("group") == name)
        assert got.select("start_ns", "end_ns", "bytes", "packets").rows() == [tuple(r) for r in ref], name
        offs = [ref[i + 1][0] - ref[i][1] for i in range(len(ref) - 1)]
        assert got["off_before_ns"].to_list() == [None, *offs], name
        metrics = {
            "bytes": [r[2] for r in ref],
            "packets": [r[3] for r in ref],
            "duration_ns": [r[1] - r[0] for r in ref],
            "off_ns": offs,
        }
        for metric, values in metrics.items():
            rows = dist.filter((pl.col("group") == name) & (pl.col("metric") == metric)).select("q", "value").rows()
            assert rows == [(q, order_stat(values, q) if values else None) for q in QS], (name, metric)
    whole = ref_bursts(in_time_order(pk), gap)
    assert b.summary.select("gap_ns", "bursts", "packets", "bytes").row(0) == (
        gap,
        len(whole),
        len(pk),
        sum(L for _, L, _ in pk),
    )


def test_iterations_bytes_packets_and_peak_rate_equal_brute_force_over_tsharks_reading(capture):
    """iterations()' docstring: an iteration's bytes and packets are everything from its
    segment's boundary (the previous iteration's ``end``) to its ``end``; ``peak_rate_bps`` is
    the busiest bin of its phase [start, comm_end). The first iteration's boundary is not
    reported, so it is left out. (Its period and phases: test_analysis_captures.py, against the
    training logs.)"""
    pk = in_time_order(tshark_packets())
    ts = [t for t, _, _ in pk]
    it = burstcore.iterations(capture)
    rows = it.iterations.select("start_ns", "comm_end_ns", "end_ns", "bytes", "packets", "peak_rate_bps").rows()
    assert len(rows) == 8  # the training log's 8 iterations (test_analysis_captures.py)
    for (_, _, boundary, *_), (start, comm_end, end, nbytes, packets, peak) in itertools.pairwise(rows):
        inside = pk[bisect.bisect_left(ts, boundary) : bisect.bisect_left(ts, end)]
        assert (nbytes, packets) == (sum(L for _, L, _ in inside), len(inside)), start
        assert boundary <= start < comm_end <= end
        assert start % it.bin_ns == 0 and comm_end % it.bin_ns == 0  # the phase is whole bins
        bins: dict[int, int] = defaultdict(int)
        for t, L, _ in pk[bisect.bisect_left(ts, start) : bisect.bisect_left(ts, comm_end)]:
            bins[t // it.bin_ns] += L
        assert peak == pytest.approx(8 * max(bins.values()) * 1e9 / it.bin_ns, rel=1e-12), start
