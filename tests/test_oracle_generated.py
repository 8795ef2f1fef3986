"""The analyses' columns that no test compared with an independent oracle, recomputed by brute
force from the packets a capture was generated from (burstcore's writer, frames built by hand in
tests/oracles.py), following docs/metrics.md: flows' per-direction counters, row order and idle
timeouts; sizes' histogram, quantiles and groups past 65,535 B; gaps' exact log2 buckets,
narrowed quantile bounds and min/max; bursts' distributions and summary; superpose's gain and
singles. The packets are written out of time order (within the reorder horizon) and with equal
timestamps, so the oracle's own time order (a stable sort of the file order) is tested too."""

from __future__ import annotations

import itertools
import math
import random
import warnings
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from tests import oracles

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASE = 1_700_000_000_000_000_000
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
# 0.28 and 0.56: of 25 values, f64 products just past 7 and 14 (test_a_quantile_is_the_rank_...).
QS = [0.0, 0.01, 0.1, 0.25, 0.28, 0.3, 0.5, 0.56, 0.7, 0.75, 0.9, 0.99, 0.999, 1.0]
# A packet: (t, L, key) with key (src, dst, proto, sport, dport), or None for an ARP frame.
Packet = tuple[int, int, Any]


@st.composite
def packets(draw: Any, max_n: int = 30, big: bool = False) -> list[Packet]:
    """Packets in file order: timestamps with repeats, and neighbours swapped (a step back of at
    most 3 ms, inside the default 10 ms reorder horizon)."""
    n = draw(st.integers(0, max_n))
    gaps = draw(
        st.lists(st.sampled_from([0, 1, 2, 3, 7, 8, 1000, 1001, 10**5, 10**6, 3 * 10**6]), min_size=n, max_size=n)
    )
    ts = list(itertools.accumulate(gaps, initial=BASE + draw(st.integers(0, 10**6))))[1:]
    out: list[Packet] = []
    for t in ts:
        kind = draw(st.integers(0, 9))
        if kind == 0:
            key = None
        elif kind == 1:
            key = (draw(st.sampled_from(HOSTS)), draw(st.sampled_from(HOSTS)), 1, 0, 0)
        else:
            key = (
                draw(st.sampled_from(HOSTS)),
                draw(st.sampled_from(HOSTS)),
                draw(st.sampled_from([6, 17])),
                draw(st.sampled_from([1000, 1001])),
                draw(st.sampled_from([1000, 2000])),
            )
        # Across 65,535, and repeats of BIG TCP's sizes up to 512 KiB.
        huge = st.one_of(st.integers(65_530, 200_000), st.sampled_from([65_536, 65_537, 262_144, 524_288]))
        size = draw(st.integers(60, 1600)) if not big or draw(st.booleans()) else draw(huge)
        out.append((t, size, key))
    for i in range(len(out) - 1):
        if draw(st.integers(0, 4)) == 0 and out[i + 1][0] - out[i][0] <= 3 * 10**6:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def write(pk: list[Packet]) -> bytes:
    frames = [
        b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\x00" * 28
        if key is None
        else oracles.eth_ipv4_udp(key[0], key[1], key[3], key[4], proto=key[2])
        for _, _, key in pk
    ]
    return oracles.capture([t for t, _, _ in pk], [L for _, L, _ in pk], frames=frames)


def in_time_order(pk: list[Packet]) -> list[Packet]:
    """docs/metrics.md, Order: timestamp order, equal timestamps in arrival (file) order."""
    return sorted(pk, key=lambda p: p[0])


def label(key: Any, by: str | None) -> str:
    if by is None:
        return "all"
    if key is None:
        return "(none)"
    src, dst, proto, sp, dp = key
    names = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}
    return {
        "src": src,
        "dst": dst,
        "pair": f"{src}>{dst}",
        "flow": f"{names.get(proto, f'proto{proto}')} {src}:{sp}>{dst}:{dp}",
    }[by]


def by_group(pk: list[Packet], by: str | None) -> dict[str, list[Packet]]:
    """Group 'all' always, and each group of `by` (docs/metrics.md, Groups), in time order."""
    groups: dict[str, list[Packet]] = defaultdict(list)
    groups["all"] = []  # there even when no packet is
    for p in in_time_order(pk):
        groups["all"].append(p)
        if by is not None:
            groups[label(p[2], by)].append(p)
    return groups


def order_stat(values: list[int], q: float) -> int:
    """Rank ⌈q·n⌉ (at least 1) among the n sorted values, q read as the decimal it is written as."""
    v = sorted(values)
    rank = min(max(math.ceil(Fraction(repr(q)) * len(v)), 1), len(v))
    return v[rank - 1]


# ------------------------------------------------------------------------------------- flows


def ref_flows(pk: list[Packet], key: str, timeout: int | None) -> list[tuple[Any, ...]]:
    """Every column of flows() but the datetimes and retransmissions, rows in order of first
    packet (time order), by brute force from the definitions in flows()' docstring."""
    live: dict[Any, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for t, L, p in in_time_order(pk):
        if p is None:
            continue
        src, dst, proto, sp, dp = p
        if key == "flow":
            k: Any = p
        elif key == "flow4":
            if proto not in (6, 17):  # no transport ports (ICMP, IGMP): in no flow4
                continue
            k = (src, dst, sp, dp)
        else:
            k = (proto, *sorted([(src, sp), (dst, dp)]))
        f = live.get(k)
        if f is not None and timeout is not None and t - f["last"] > timeout:
            f = None  # strictly longer than the timeout ends the flow
        if f is None:
            f = {
                "id": (src, dst, 0 if key == "flow4" else proto, sp, dp),
                "first": t,
                "last": t,
                "n": [0, 0],
                "b": [0, 0],
            }
            live[k] = f
            rows.append(f)
        forward = (src, sp, dst, dp) == (f["id"][0], f["id"][3], f["id"][1], f["id"][4])
        f["last"] = t
        f["n"][0 if forward else 1] += 1
        f["b"][0 if forward else 1] += L
    return [
        (
            *f["id"],
            f["first"],
            f["last"],
            f["last"] - f["first"],
            sum(f["n"]),
            sum(f["b"]),
            f["n"][0],
            f["b"][0],
            f["n"][1],
            f["b"][1],
        )
        for f in rows
    ]


FLOW_COLUMNS = [
    "src",
    "dst",
    "protocol",
    "sport",
    "dport",
    "first_seen_ns",
    "last_seen_ns",
    "duration_ns",
    "packets",
    "bytes",
    "src2dst_packets",
    "src2dst_bytes",
    "dst2src_packets",
    "dst2src_bytes",
]


@SETTINGS
@given(packets(), st.sampled_from(["flow", "flow4", "biflow"]), st.sampled_from([None, 0, 1, 1000, 10**6]))
def test_flows_every_counter_and_the_row_order_equal_brute_force(pk, key, timeout):
    df = burstcore.flows(write(pk), key=key, idle_timeout=None if timeout is None else f"{timeout}ns")
    assert df.select(FLOW_COLUMNS).rows() == ref_flows(pk, key, timeout)
    # Datetimes are their ns twins; UDP and ICMP flows have no retransmission count.
    assert df["first_seen"].dt.epoch("ns").to_list() == df["first_seen_ns"].to_list()
    assert df["duration"].dt.total_nanoseconds().to_list() == df["duration_ns"].to_list()
    tcp = df["protocol"] == 6 if key != "flow4" else None
    if tcp is not None:
        assert df.filter(~tcp)["retransmitted_packets"].null_count() == int((~tcp).sum())


# ------------------------------------------------------------------------------------- sizes


@SETTINGS
@given(packets(big=True), st.sampled_from([None, "src", "pair", "flow"]))
def test_sizes_histogram_quantiles_and_groups_past_65535_equal_brute_force(pk, by):
    s = burstcore.sizes(write(pk), by=by, quantiles=QS)
    groups = by_group(pk, by)
    assert set(s.groups["group"]) == set(groups)
    for name, gp in groups.items():
        sizes = [L for _, L, _ in gp]
        over = [L for L in sizes if L > 65_535]
        # docstring: one row per size seen, above 65,535 B too (they shared one row before).
        hist = s.histogram.filter(pl.col("group") == name).select("size", "packets").rows()
        assert hist == sorted((x, sizes.count(x)) for x in set(sizes)), name
        # Exact order statistics, above 65,535 too (one there was the largest size before).
        qv = s.quantiles.filter(pl.col("group") == name).select("q", "value").rows()
        assert qv == [(q, order_stat(sizes, q) if sizes else None) for q in QS], name
        row = s.groups.filter(pl.col("group") == name).select("packets", "bytes", "over_65535").row(0)
        assert row == (len(sizes), sum(sizes), len(over)), name


# -------------------------------------------------------------------------------------- gaps


def bucket(gap: int) -> tuple[int, int]:
    """docs/metrics.md: log2 buckets [2^(k−1), 2^k − 1] ns, a gap of 0 alone in its own."""
    if gap == 0:
        return 0, 0
    k = gap.bit_length()
    return 1 << (k - 1), (1 << k) - 1


@SETTINGS
@given(packets(), st.sampled_from([None, "src", "dst", "pair", "flow"]))
def test_gaps_buckets_quantile_bounds_and_extremes_equal_brute_force(pk, by):
    assert_gaps_equal_brute_force(burstcore.gaps(write(pk), by=by, quantiles=QS), by_group(pk, by))


def assert_gaps_equal_brute_force(g: Any, groups: dict[Any, list[Packet]]) -> None:
    """``g`` (gaps with quantiles QS) against the packets of each group, in time order."""
    assert set(g.groups["group"]) == set(groups)
    for name, gp in groups.items():
        diffs = [b[0] - a[0] for a, b in itertools.pairwise(gp)]
        want: dict[tuple[int, int], int] = defaultdict(int)
        for d in diffs:
            want[bucket(d)] += 1
        hist = g.histogram.filter(pl.col("group") == name).select("lo_ns", "hi_ns", "gaps").rows()
        assert hist == sorted((lo, hi, n) for (lo, hi), n in want.items()), name
        row = g.groups.filter(pl.col("group") == name).select("packets", "gaps", "min_ns", "max_ns").row(0)
        assert row == (len(gp), len(diffs), min(diffs, default=None), max(diffs, default=None)), name
        # The bucket holding the order statistic, narrowed by the exact min and max: exactly
        # those bounds, not merely bounds around it.
        got = g.quantiles.filter(pl.col("group") == name).select("q", "lo_ns", "hi_ns").rows()
        if not diffs:
            assert got == [(q, None, None) for q in QS], name
            continue
        expect = []
        for q in QS:
            lo, hi = bucket(order_stat(diffs, q))
            expect.append((q, max(lo, min(diffs)), min(hi, max(diffs))))
        assert got == expect, name


# ------------------------------------------------------------------------------------ bursts


def ref_bursts(gp: list[Packet], gap: int) -> list[list[int]]:
    """[start, end, bytes, packets] of each maximal run whose consecutive gaps are ≤ gap."""
    out: list[list[int]] = []
    for t, L, _ in gp:
        if out and t - out[-1][1] <= gap:
            out[-1][1] = t
            out[-1][2] += L
            out[-1][3] += 1
        else:
            out.append([t, t, L, 1])
    return out


@SETTINGS
@given(packets(), st.sampled_from([0, 1, 999, 1000, 10**6]), st.sampled_from([None, "src", "pair"]))
def test_bursts_table_distributions_and_summary_equal_brute_force(pk, gap, by):
    b = burstcore.bursts(write(pk), gap=f"{gap}ns", by=by, quantiles=QS)
    groups = by_group(pk, by)
    table = b.bursts if by is not None else b.bursts.with_columns(group=pl.lit("all"))
    dist = b.distributions if by is not None else b.distributions.with_columns(group=pl.lit("all"))
    for name, gp in groups.items():
        ref = ref_bursts(gp, gap)
        got = table.filter(pl.col("group") == name)
        assert got.select("start_ns", "end_ns", "bytes", "packets").rows() == [tuple(r) for r in ref], name
        assert got["burst"].to_list() == list(range(len(ref)))
        assert got["duration_ns"].to_list() == [e - s for s, e, _, _ in ref]
        offs = [ref[i + 1][0] - ref[i][1] for i in range(len(ref) - 1)]
        assert got["off_before_ns"].to_list() == [None, *offs][: len(ref)]
        metrics = {
            "bytes": [r[2] for r in ref],
            "packets": [r[3] for r in ref],
            "duration_ns": [r[1] - r[0] for r in ref],
            "off_ns": offs,
        }
        d = dist.filter(pl.col("group") == name)
        for metric, values in metrics.items():
            rows = d.filter(pl.col("metric") == metric).select("q", "value").rows()
            assert rows == [(q, order_stat(values, q) if values else None) for q in QS], (name, metric)
    whole = ref_bursts(in_time_order(pk), gap)
    summary = b.summary.select("gap_ns", "bursts", "packets", "bytes").row(0)
    assert summary == (gap, len(whole), len(pk), sum(L for _, L, _ in pk))
    assert b.gap_ns == gap


# --------------------------------------------------------------------------------- superpose


@SETTINGS
@pytest.mark.filterwarnings("ignore:.*overlap no other in time")  # random offsets: often apart
@pytest.mark.filterwarnings("ignore:.*gave the merge no packet")  # an empty capture is drawn too
@given(packets(max_n=15), packets(max_n=15), st.integers(-(10**6), 10**6))
def test_superpose_gain_and_singles_equal_brute_force(p1, p2, offset):
    windows = [1, 1000, 10**6]
    r = burstcore.superpose(
        [write(p1), write(p2)], offsets=[0, f"{offset}ns"], windows=[f"{w}ns" for w in windows], rates=["1Gbps"]
    )
    merged = sorted([(t, L) for t, L, _ in p1] + [(t + offset, L) for t, L, _ in p2])
    singles = r.singles.select("capture", "window_ns", "bytes", "max_packets").rows()
    want_singles = []
    for k, pk in enumerate((p1, p2)):
        # A capture without packets has no envelope of its own, so no rows (and adds 0 to the sum).
        tp = in_time_order(pk)
        for w in windows if tp else []:
            e, n = oracles.envelope([t for t, _, _ in tp], [L for _, L, _ in tp], w)
            want_singles.append((k, w, e, n))
    assert sorted(singles) == sorted(want_singles)
    gain = r.multiplexing_gain.select("window_ns", "sum_single_bytes", "merged_bytes", "gain").rows()
    if not merged:
        assert gain == []
        return
    assert [w for w, *_ in gain] == windows
    for w, total, m, ratio in gain:
        e = oracles.envelope([t for t, _ in merged], [L for _, L in merged], w)[0]
        s = sum(x[2] for x in want_singles if x[1] == w)
        # docs: gain = Σ_k E_k(τ) / E_merge(τ), the merge's E(τ) never above the sum.
        assert (total, m, ratio) == (s, e, s / e), w
        assert 1.0 <= ratio <= 2.0


# --------------------------------------------------------------------------- matrix and hosts


@SETTINGS
@given(packets())
def test_traffic_matrix_shares_and_row_order_equal_brute_force(pk):
    """Per ordered pair (null, null for the frames without IP): bytes, packets and the share of
    all bytes, heaviest first (ties: by src, then dst, as strings, nulls last; the docstring
    says only 'heaviest first'); per host, sent and received, the heaviest sender first."""
    data = write(pk)
    cells: dict[Any, list[int]] = defaultdict(lambda: [0, 0])
    for _, L, p in pk:
        k = (None, None) if p is None else (p[0], p[1])
        cells[k][0] += L
        cells[k][1] += 1
    total = sum(L for _, L, _ in pk)
    want = sorted(
        ((s, d, b, n, b / total) for (s, d), (b, n) in cells.items()),
        key=lambda r: (-r[2], r[0] is None, r[0] or "", r[1] is None, r[1] or ""),
    )
    assert burstcore.traffic_matrix(data).rows() == want
    hosts: dict[Any, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for _, L, p in pk:
        src, dst = (None, None) if p is None else p[:2]
        hosts[src][0] += L
        hosts[src][1] += 1
        hosts[dst][2] += L
        hosts[dst][3] += 1
    rows = sorted(((h, *v) for h, v in hosts.items()), key=lambda r: (-r[1], r[0] is None, r[0] or ""))
    assert burstcore.host_volumes(data).rows() == rows


def test_sizes_of_a_group_past_32768_distinct_sizes_equal_brute_force():
    """A group's histogram turns dense (one counter per size) past 32,768 distinct sizes: the
    tests above, of a few dozen packets, stay sparse. 80,000 packets of random sizes, a tenth
    past 65,535 B (about 8,000 distinct ones), in two groups (each sparse still), checked whole."""
    rng = random.Random(54)
    pk: list[Packet] = []
    for i in range(80_000):
        size = rng.randrange(65_536, 300_000) if rng.random() < 0.1 else rng.randrange(60, 65_536)
        key = (HOSTS[i % 2], HOSTS[2], 17, 1000, 2000)
        pk.append((BASE + i * 1_000 + rng.randrange(0, 3), size, key))
    s = burstcore.sizes(write(pk), by="src", quantiles=QS)
    for name, gp in by_group(pk, "src").items():
        sizes = [L for _, L, _ in gp]
        over = [L for L in sizes if L > 65_535]
        hist = s.histogram.filter(pl.col("group") == name).select("size", "packets").rows()
        assert hist == sorted(Counter(sizes).items()), name
        got = s.quantiles.filter(pl.col("group") == name).select("q", "value").rows()
        assert got == [(q, order_stat(sizes, q)) for q in QS], name
        row = s.groups.filter(pl.col("group") == name).select("packets", "bytes", "over_65535").row(0)
        assert row == (len(sizes), sum(sizes), len(over)), name
    assert len({L for _, L, _ in pk if L <= 65_535}) > 32_768  # the whole trace's group is dense


def test_distinct_sizes_above_65535_count_against_max_groups():
    """docs/limits.md: every 16,384 distinct sizes above 65,535 past the first 16,384 count as
    one group, so a forged capture of millions of them is refused instead of filling memory.
    33,000 distinct sizes: two groups' worth; the read ends at the first one past the limit.
    Before, they shared one bucket: one row."""
    n = 33_000
    pk: list[Packet] = [(BASE + i, 65_536 + (i * 7919) % n, None) for i in range(n)]
    data = write(pk)
    with pytest.raises(burstcore.LimitExceededError, match="32769 distinct sizes above 65,535 are held") as e:
        burstcore.sizes(data, max_groups=1)
    assert e.value.limit == "result"
    s = burstcore.sizes(data, max_groups=2, quantiles=QS)
    assert s.histogram.select("size", "packets").rows() == [(65_536 + i, 1) for i in range(n)]
    sizes = [L for _, L, _ in pk]
    assert s.quantiles.select("q", "value").rows() == [(q, order_stat(sizes, q)) for q in QS]
    assert s.groups.select("packets", "over_65535").row(0) == (n, n)


FILTERS = {
    None: lambda p: True,
    "udp": lambda p: p is not None and p[2] == 17,
    "src host 10.0.0.1": lambda p: p is not None and p[0] == "10.0.0.1",
    "not icmp": lambda p: p is None or p[2] != 1,
}


@SETTINGS
@given(
    packets(max_n=20),
    packets(max_n=20),
    st.sampled_from(list(FILTERS)),
    st.one_of(st.none(), st.integers(0, 4 * 10**6)),
    st.one_of(st.none(), st.integers(1, 8 * 10**6)),
)
def test_analyses_of_two_captures_through_a_filter_and_a_range_equal_brute_force(p1, p2, flt, lo, hi):
    """Two captures merged (ties to the earlier file), read through a filter and a time range
    [start, end): every analysis counts the packets left, as if the captures held only them."""
    start = None if lo is None else BASE + lo
    end = None if hi is None else BASE + (lo or 0) + hi
    data = [write(p1), write(p2)]
    kept = [
        p
        for p in in_time_order(in_time_order(p1) + in_time_order(p2))
        if FILTERS[flt](p[2]) and (start is None or p[0] >= start) and (end is None or p[0] < end)
    ]
    read = {"filter": flt, "start": start, "end": end}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", burstcore.CaptureWarning)  # an empty range is told
        df = burstcore.flows(data, key="biflow", idle_timeout="1000ns", **read)
        assert df.select(FLOW_COLUMNS).rows() == ref_flows(kept, "biflow", 1000)
        b = burstcore.bursts(data, gap="1000ns", by="pair", quantiles=QS, **read)
        for name, gp in by_group(kept, "pair").items():
            got = b.bursts.filter(pl.col("group") == name).select("start_ns", "end_ns", "bytes", "packets").rows()
            assert got == [tuple(r) for r in ref_bursts(gp, 1000)], name
        g = burstcore.gaps(data, by="src", quantiles=QS, **read)
        s = burstcore.sizes(data, by="src", quantiles=QS, **read)
        for name, gp in by_group(kept, "src").items():
            diffs = [y[0] - x[0] for x, y in itertools.pairwise(gp)]
            row = g.groups.filter(pl.col("group") == name).select("packets", "gaps", "min_ns", "max_ns").row(0)
            assert row == (len(gp), len(diffs), min(diffs, default=None), max(diffs, default=None)), name
            sizes = [L for _, L, _ in gp]
            got = s.quantiles.filter(pl.col("group") == name).select("q", "value").rows()
            assert got == [(q, order_stat(sizes, q) if sizes else None) for q in QS], name
        for acc in (b.summary, g.summary, s.summary):
            assert acc["packets"][0] == len(kept)
            assert acc["packets_read"][0] == len(p1) + len(p2)


# q·n whose f64 product rounds up past a whole number: 0.07 · 100 = 7.000000000000001 (rank 8
# by its ceiling), 0.035 · 200, 0.28 · 25 = 7.000000000000001, 0.017 · 3000 = 51.00000000000001;
# and 0.57 · 100 = 56.99999999999999, whose ceiling was right.
FLOAT_TRAPS = [(0.07, 100), (0.035, 200), (0.017, 3000), (0.28, 25), (0.57, 100)]


def test_a_quantile_is_the_rank_of_q_as_written_not_of_its_float_product():
    """docs/metrics.md: the value of rank ⌈q·n⌉: for q = 0.07 among 100 values, the 7th. The
    ranks were the float product's ceiling, the 8th, in sizes, gaps and bursts alike."""
    for q, n in FLOAT_TRAPS:
        assert math.ceil(q * n) in (n * Fraction(repr(q)), math.ceil(n * Fraction(repr(q))) + 1)
        # n packets of sizes 100, 101, ... one µs apart but for gaps of 1, 2, 3, ... ns after
        # the first, so that sizes, gaps and bursts (a gap of 0: each packet a burst) each have
        # n (or n − 1) distinct values, the rank visible in the value.
        ts = list(itertools.accumulate(range(n), initial=BASE))[1:]
        pk: list[Packet] = [(t, 100 + i, None) for i, t in enumerate(ts)]
        data = write(pk)
        rank = math.ceil(n * Fraction(repr(q)))
        assert burstcore.sizes(data, quantiles=[q]).quantiles["value"].to_list() == [100 + rank - 1], (q, n)
        b = burstcore.bursts(data, gap="0ns", quantiles=[q]).distributions
        assert b.filter(pl.col("metric") == "bytes")["value"].to_list() == [100 + rank - 1], (q, n)
        gaps = sorted(y - x for x, y in itertools.pairwise(ts))
        g = burstcore.gaps(data, quantiles=[q]).quantiles.select("lo_ns", "hi_ns").row(0)
        want = order_stat(gaps, q)
        assert g[0] <= want <= g[1] and (g[0], g[1]) == (max(bucket(want)[0], gaps[0]), min(bucket(want)[1], gaps[-1]))


def _ranked(n: int) -> bytes:
    """n packets of sizes 100, 101, ... 1 µs apart: each a burst at gap 0, the rank visible in the
    value of sizes (the Rust histograms' ranks) and of bursts' bytes (Python's)."""
    return write([(BASE + 1000 * i, 100 + i, None) for i in range(n)])


def _rank_as_written(q: float, n: int) -> int:
    """⌈q·n⌉ (in [1, n]) of q's shortest decimal as numpy's Dragon4 writes it (not Python's repr)."""
    return min(max(math.ceil(Fraction(np.format_float_scientific(q, unique=True)) * n), 1), n)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.floats(0, 1),
        st.sampled_from([5e-324, 1e-15, 0.1 + 0.2, 1 / 3, 1 - 2**-53, 1 - 2**-52, 0.07, 0.28]),
        st.integers(1, 999).map(lambda i: i / 1000),
    ),
    st.integers(1, 400),
)
def test_sizes_and_bursts_rank_any_q_alike_and_as_written(q, n):
    """The Rust ranks (sizes) and the Python ones (bursts' distributions) agree for any float q,
    subnormal or a hair under 1, and are ⌈q·n⌉ of its shortest decimal."""
    data = _ranked(n)
    rank = _rank_as_written(q, n)
    assert burstcore.sizes(data, quantiles=[q]).quantiles["value"].to_list() == [100 + rank - 1]
    b = burstcore.bursts(data, gap="0ns", quantiles=[q]).distributions
    assert b.filter(pl.col("metric") == "bytes")["value"].to_list() == [100 + rank - 1]


def test_a_numpy_float32_quantile_is_the_decimal_it_is_written_as():
    """np.float32(0.07) is 0.07000000029802322 as a float64, whose product with 100 has the 8th
    value for its ceiling: read as numpy writes it, 0.07, it is the 7th, in sizes and bursts, and
    the q column says 0.07."""
    data = _ranked(100)
    for q in (np.float32(0.07), np.float16(0.07)):
        s = burstcore.sizes(data, quantiles=[q]).quantiles
        assert s["value"].to_list() == [106] and s["q"].to_list() == [0.07]
        b = burstcore.bursts(data, gap="0ns", quantiles=[q]).distributions.filter(pl.col("metric") == "bytes")
        assert b["value"].to_list() == [106] and b["q"].to_list() == [0.07]
    with pytest.raises(ValueError, match=r"quantile 0\.5 is given twice"):
        burstcore.sizes(data, quantiles=[0.5, np.float32(0.5)])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_a_long_double_quantile_keeps_its_digits_past_float64():
    """np.longdouble(1) / 3 is written 0.33333333333333333334 (x86's 80-bit long double): of 3
    values the 2nd, where read as a float64, 0.3333333333333333, it was the 1st. It is the decimal
    numpy writes, not its binary value: np.longdouble("0.07") of 100 is the 7th, as 0.07 is."""
    third = np.longdouble(1) / 3
    assert str(third) == "0.33333333333333333334"
    for n, q, rank in [(3, third, 2), (100, np.longdouble("0.07"), 7), (3, np.longdouble(2) / 3, 3)]:
        data = _ranked(n)
        s = burstcore.sizes(data, quantiles=[q]).quantiles
        assert s["value"].to_list() == [100 + rank - 1] and s["q"].to_list() == [float(q)], q
        b = burstcore.bursts(data, gap="0ns", quantiles=[q]).distributions.filter(pl.col("metric") == "bytes")
        assert b["value"].to_list() == [100 + rank - 1], q
    with pytest.raises(ValueError, match=r"quantiles 0\.3333333333333333 and 0\.33333333333333333334 differ"):
        burstcore.sizes(_ranked(3), quantiles=[1 / 3, third])


@SETTINGS
@given(packets())
def test_per_flow4_envelopes_equal_brute_force(pk):
    """flows(windows=) under key 'flow4' (test_analysis.py checks 'flow'): each row's E(τ) over
    its own packets in time order, the protocol ignored."""
    windows = [1, 1000, 10**6]
    df = burstcore.flows(write(pk), key="flow4", windows=[f"{w}ns" for w in windows])
    per: dict[Any, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for t, L, p in in_time_order(pk):
        if p is not None and p[2] in (6, 17):
            per[(p[0], p[1], p[3], p[4])][0].append(t)
            per[(p[0], p[1], p[3], p[4])][1].append(L)
    assert sorted(df.select("src", "dst", "sport", "dport").rows()) == sorted(per)
    for row in df.iter_rows(named=True):
        k = (row["src"], row["dst"], row["sport"], row["dport"])
        for w in windows:
            col = f"envelope_{burstcore._units.format_duration(w)}"
            assert row[col] == oracles.envelope(*per[k], w)[0], (k, w)
