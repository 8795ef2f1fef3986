"""The analyses (flows, matrix, sizes, gaps, bursts, superpose, iterations) against brute-force
references on random traces written with burstcore's own writer and read back."""

from __future__ import annotations

import datetime
import itertools
import random
import re
import struct
import warnings
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import burstcore
from tests import oracles
from tests.test_cli import run_cli

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASE = 1_700_000_000_000_000_000
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


@st.composite
def traces(draw, max_n: int = 30):
    """(ts, sizes, packets) with packets (src, dst, proto, sport, dport) or None (non-IP); proto 1
    (ICMP) has no ports."""
    n = draw(st.integers(0, max_n))
    gaps = draw(st.lists(st.sampled_from([0, 1, 10, 999, 1000, 1001, 10**5, 10**6, 3 * 10**6]), min_size=n, max_size=n))
    ts, t = [], BASE + draw(st.integers(0, 10**6))
    for g in gaps:
        t += g
        ts.append(t)
    pkts = []
    for _ in range(n):
        kind = draw(st.integers(0, 11))
        if kind == 0:
            pkts.append(None)
        elif kind == 1:
            # ICMP: no ports (0 in 'flow' and 'biflow', in no 'flow4' flow)
            pkts.append((draw(st.sampled_from(HOSTS)), draw(st.sampled_from(HOSTS)), 1, 0, 0))
        else:
            pkts.append(
                (
                    draw(st.sampled_from(HOSTS)),
                    draw(st.sampled_from(HOSTS)),
                    draw(st.sampled_from([6, 17])),
                    draw(st.sampled_from([1000, 1001])),
                    draw(st.sampled_from([1000, 2000])),
                )
            )
    sizes = [draw(st.integers(60, 1600)) for _ in range(n)]
    return ts, sizes, pkts


def _frames(pkts):
    out = []
    for p in pkts:
        if p is None:
            out.append(b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\x00" * 28)  # ARP
        else:
            src, dst, proto, sp, dp = p
            out.append(oracles.eth_ipv4_udp(src, dst, sp, dp, proto=proto))
    return out


def _capture(ts, sizes, pkts) -> bytes:
    return oracles.capture(ts, sizes, frames=_frames(pkts))


def _ref_flows(ts, sizes, pkts, key, timeout):
    """Flows by brute force: {(src, dst, proto, sport, dport): [(first, last, packets, bytes)]}."""
    live: dict = {}
    done: list = []
    for t, L, p in zip(ts, sizes, pkts, strict=True):
        if p is None:
            continue
        src, dst, proto, sp, dp = p
        if key == "flow":
            k, rec_id = (src, dst, proto, sp, dp), (src, dst, proto, sp, dp)
        elif key == "flow4":
            if proto == 1:
                continue
            k, rec_id = (src, dst, sp, dp), (src, dst, 0, sp, dp)
        else:
            k = (proto, *sorted([(src, sp), (dst, dp)]))
            rec_id = None
        f = live.get(k)
        if f is not None and timeout is not None and t - f["last"] > timeout:
            done.append(f)
            f = None
        if f is None:
            f = {"id": rec_id or (src, dst, proto, sp, dp), "first": t, "last": t, "packets": 0, "bytes": 0}
            live[k] = f
        f["last"] = t
        f["packets"] += 1
        f["bytes"] += L
    done.extend(live.values())
    return sorted((*f["id"], f["first"], f["last"], f["packets"], f["bytes"]) for f in done)


@SETTINGS
@given(traces(), st.sampled_from(["flow", "flow4", "biflow"]), st.sampled_from([None, 0, 1000, 10**6]))
def test_flows_equal_brute_force(trace, key, timeout):
    ts, sizes, pkts = trace
    df = burstcore.flows(_capture(ts, sizes, pkts), key=key, idle_timeout=None if timeout is None else f"{timeout}ns")
    got = sorted(
        df.select(
            "src", "dst", "protocol", "sport", "dport", "first_seen_ns", "last_seen_ns", "packets", "bytes"
        ).iter_rows()
    )
    assert got == _ref_flows(ts, sizes, pkts, key, timeout)
    assert (df["duration_ns"] == df["last_seen_ns"] - df["first_seen_ns"]).all()
    assert (df["src2dst_bytes"] + df["dst2src_bytes"] == df["bytes"]).all()


@SETTINGS
@given(traces())
def test_per_flow_envelope_equals_brute_force(trace):
    ts, sizes, pkts = trace
    windows = [1, 1000, 10**6]
    df = burstcore.flows(_capture(ts, sizes, pkts), windows=[f"{w}ns" for w in windows])
    per: dict = defaultdict(lambda: ([], []))
    for t, L, p in zip(ts, sizes, pkts, strict=True):
        if p is not None:
            per[p][0].append(t)
            per[p][1].append(L)
    # Every flow is there once (the loop below checks only the rows it is given).
    keys = df.select("src", "dst", "protocol", "sport", "dport").rows()
    assert sorted(keys) == sorted(per)
    for row in df.iter_rows(named=True):
        k = (row["src"], row["dst"], row["protocol"], row["sport"], row["dport"])
        for w in windows:
            col = f"envelope_{burstcore._units.format_duration(w)}"
            assert row[col] == oracles.envelope(*per[k], w)[0], (k, w)


@SETTINGS
@given(traces())
def test_traffic_matrix_and_volumes_equal_brute_force(trace):
    ts, sizes, pkts = trace
    data = _capture(ts, sizes, pkts)
    m = burstcore.traffic_matrix(data)
    ref: dict = defaultdict(lambda: [0, 0])
    for L, p in zip(sizes, pkts, strict=True):
        k = (None, None) if p is None else (p[0], p[1])
        ref[k][0] += L
        ref[k][1] += 1
    assert {(s, d): [b, n] for s, d, b, n in m.select("src", "dst", "bytes", "packets").iter_rows()} == dict(ref)
    assert int(m["bytes"].sum() or 0) == sum(sizes)
    h = burstcore.host_volumes(data)
    # One row for every host that sent or received (None: the non-IP frames), no other.
    hosts = [p[k] if p else None for p in pkts for k in (0, 1)]
    assert sorted(h["host"].to_list(), key=str) == sorted(set(hosts), key=str)
    for host, sent, n_sent, recv, n_recv in h.select(
        "host", "sent_bytes", "sent_packets", "received_bytes", "received_packets"
    ).iter_rows():
        tx = [L for L, p in zip(sizes, pkts, strict=True) if (p[0] if p else None) == host]
        rx = [L for L, p in zip(sizes, pkts, strict=True) if (p[1] if p else None) == host]
        assert (sent, n_sent, recv, n_recv) == (sum(tx), len(tx), sum(rx), len(rx)), host


QS = [0.0, 0.1, 0.5, 0.9, 0.99, 1.0]


def _order_stat(values, q):
    v = sorted(values)
    rank = min(max(int(np.ceil(q * len(v))), 1), len(v))
    return v[rank - 1]


@SETTINGS
@given(traces(), st.sampled_from([None, "src", "pair"]))
def test_sizes_and_gaps_equal_brute_force(trace, by):
    ts, sizes, pkts = trace
    data = _capture(ts, sizes, pkts)
    s = burstcore.sizes(data, by=by, quantiles=QS)
    g = burstcore.gaps(data, by=by, quantiles=QS)
    groups: dict = defaultdict(lambda: ([], []))
    for t, L, p in zip(ts, sizes, pkts, strict=True):
        groups["all"][0].append(t)
        groups["all"][1].append(L)
        if by is not None:
            label = "(none)" if p is None else (p[0] if by == "src" else f"{p[0]}>{p[1]}")
            groups[label][0].append(t)
            groups[label][1].append(L)
    if not ts:
        assert s.histogram.height == 0
        return
    assert set(s.groups["group"]) == set(groups)
    for label, (gts, gsz) in groups.items():
        hist = dict(s.histogram.filter(pl.col("group") == label).select("size", "packets").iter_rows())
        assert hist == {k: gsz.count(k) for k in set(gsz)}
        qv = dict(s.quantiles.filter(pl.col("group") == label).select("q", "value").iter_rows())
        for q in QS:
            assert qv[q] == _order_stat(gsz, q)
        diffs = [b - a for a, b in itertools.pairwise(gts)]
        gq = g.quantiles.filter(pl.col("group") == label)
        for q, lo, hi in gq.select("q", "lo_ns", "hi_ns").iter_rows():
            if not diffs:
                assert lo is None and hi is None
            else:
                assert lo <= _order_stat(diffs, q) <= hi
        gh = g.histogram.filter(pl.col("group") == label)
        assert int(gh["gaps"].sum() or 0) == len(diffs)
        for lo, hi, n in gh.select("lo_ns", "hi_ns", "gaps").iter_rows():
            assert n == sum(1 for d in diffs if lo <= d <= hi)


@SETTINGS
@given(traces(), st.sampled_from([0, 1, 1000, 10**6]))
def test_bursts_equal_brute_force(trace, gap):
    ts, sizes, pkts = trace
    b = burstcore.bursts(_capture(ts, sizes, pkts), gap=f"{gap}ns")
    ref: list[list[int]] = []
    for t, L in zip(ts, sizes, strict=True):
        if ref and t - ref[-1][1] <= gap:
            ref[-1][1] = t
            ref[-1][2] += L
            ref[-1][3] += 1
        else:
            ref.append([t, t, L, 1])
    got = [list(r) for r in b.bursts.select("start_ns", "end_ns", "bytes", "packets").iter_rows()]
    assert got == ref
    offs = b.bursts["off_before_ns"].to_list()[1:]
    assert offs == [ref[i + 1][0] - ref[i][1] for i in range(len(ref) - 1)]
    assert all(o > gap for o in offs)
    assert b.summary["bursts"][0] == len(ref)


def test_bursts_refuse_a_plain_gap_that_means_nanoseconds():
    # Packets 2 ms apart: with a 1 ms gap each is its own burst. A plain 1_000_000 (the gap_ns
    # the result reports, meant as ns) was read as 1,000,000 s, and the trace became one burst.
    ts = [BASE + k * 2_000_000 for k in range(5)]
    data = oracles.capture(ts, [100] * 5)
    with pytest.raises(ValueError, match=r"read in seconds.*'1000000ns'"):
        burstcore.bursts(data, gap=1_000_000)
    for gap in (0.001, "1ms", np.timedelta64(1, "ms")):
        b = burstcore.bursts(data, gap=gap)
        assert b.gap_ns == 1_000_000
        assert b.bursts["start_ns"].to_list() == ts


WINDOWS = [1, 10, 1000, 10**6]


# Offsets in every form the docstring names, negative ones included: a string, seconds as a
# float or a numpy integer, a timedelta, a numpy.timedelta64.
OFFSET_FORMS = [
    lambda ns: f"{ns}ns",
    lambda ns: ns / 1e9,
    lambda ns: np.timedelta64(ns, "ns"),
    lambda ns: datetime.timedelta(microseconds=ns // 1000) if ns % 1000 == 0 else f"{ns}ns",
    lambda ns: np.int64(ns // 10**9) if ns % 10**9 == 0 else f"{ns}ns",
]


@SETTINGS
@pytest.mark.filterwarnings("ignore:.*overlap no other in time")  # random offsets: often apart
@given(
    traces(max_n=20),
    traces(max_n=20),
    st.one_of(st.integers(-(10**6), 10**6), st.integers(-5, 5).map(lambda k: k * 10**9)),
    st.sampled_from(OFFSET_FORMS),
)
def test_superpose_equals_brute_force_merge(t1, t2, offset, form):
    (ts1, s1, p1), (ts2, s2, p2) = t1, t2
    offsets = [0, form(offset)]
    r = burstcore.superpose(
        [_capture(ts1, s1, p1), _capture(ts2, s2, p2)],
        offsets=offsets,
        windows=[f"{w}ns" for w in WINDOWS],
        rates=["1Gbps"],
    )
    mts = [*ts1, *(t + offset for t in ts2)]
    msz = [*s1, *s2]
    order = sorted(range(len(mts)), key=lambda i: mts[i])
    mts, msz = [mts[i] for i in order], [msz[i] for i in order]
    env = dict(r.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows())
    gain = {
        w: (s, m) for w, s, m in r.multiplexing_gain.select("window_ns", "sum_single_bytes", "merged_bytes").iter_rows()
    }
    for w in WINDOWS:
        if mts:
            assert env[w] == oracles.envelope(mts, msz, w)[0]
            single = (oracles.envelope(ts1, s1, w)[0] if ts1 else 0) + (oracles.envelope(ts2, s2, w)[0] if ts2 else 0)
            assert gain[w] == (single, env[w])
    assert r.summary["packets"][0] == len(mts)


@SETTINGS
@given(traces(max_n=25))
def test_superpose_with_itself(trace):
    ts, sizes, pkts = trace
    if not ts:
        return
    data = _capture(ts, sizes, pkts)
    ws = [f"{w}ns" for w in WINDOWS]
    single = burstcore.scan(data, windows=ws, rates=["1Gbps"]).envelope.filter(pl.col("by") == "all")
    e1 = dict(single.select("window_ns", "bytes").iter_rows())
    same = burstcore.superpose([data, data], offsets=[0, 0], windows=ws, rates=["1Gbps"])
    e0 = dict(same.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows())
    assert e0 == {w: 2 * b for w, b in e1.items()}
    assert (same.multiplexing_gain["gain"] == 1.0).all()
    far = ts[-1] - ts[0] + max(WINDOWS)  # beyond the span plus the widest window: no window sees both
    # Captures that never overlap are no superposition: said, with the offset that aligns them.
    shift = re.escape(burstcore._units.format_duration(far))
    with pytest.warns(burstcore.CaptureWarning, match=f"2 of the 2 captures overlap no other .* adding '-{shift}'"):
        apart = burstcore.superpose([data, data], offsets=[0, f"{far}ns"], windows=ws, rates=["1Gbps"])
    assert dict(apart.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows()) == e1
    assert (apart.multiplexing_gain["gain"] == 2.0).all()


SIZE_KINDS = ["wire", "captured", "ip", "payload", "l1"]


@pytest.mark.filterwarnings(
    "ignore:.*overlap no other in time", "ignore:.*gave the merge no packet", "ignore::burstcore.SharedPacketsWarning"
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(max_n=20), traces(max_n=20))
def test_superpose_counts_each_size_as_a_scan_of_the_same_captures(t1, t2):
    # superpose counted wire lengths whatever was wanted: it had no size=. The oracle for every
    # kind is scan of the same captures (offsets 0 lay them over one another as a scan merges
    # them): the merge's frames and accounting, and each capture's own E(τ) in `singles` as a
    # scan of that capture alone. The frames are shorter than their wire length (captured), ARP
    # has no IP length (skipped for ip and payload), ICMP no transport payload.
    caps = [_capture(*t1), _capture(*t2)]
    if not (t1[0] or t2[0]):
        return
    kw = dict(windows=[f"{w}ns" for w in WINDOWS], rates=["1Gbps", "10Mbps"], bins=["1ms"], by=["all", "src"])
    for kind in SIZE_KINDS:
        r = burstcore.superpose(caps, offsets=[0, 0], size=kind, **kw)
        want = burstcore.scan(caps, size=kind, **kw)
        for name in ("envelope", "backlog", "series", "groups"):
            assert getattr(r, name).equals(getattr(want, name)), (kind, name)
        assert r.summary.equals(want.summary), kind
        assert r.config["size"] == kind
        for k, cap in enumerate(caps):
            own = burstcore.scan(cap, size=kind, windows=kw["windows"], rates=["1Gbps"]).envelope
            got = r.singles.filter(pl.col("capture") == k).select("window_ns", "bytes").rows()
            assert got == own.select("window_ns", "bytes").rows(), (kind, k)


def test_superpose_size_on_the_command_line(tmp_path):
    # superpose had no --size: it counted wire lengths. The oracle: scan --size of the same files.
    import json

    pkts = [("10.0.0.1", "10.0.0.2", 6, 1000, 2000), None, ("10.0.0.2", "10.0.0.1", 17, 1001, 1000)]
    paths = []
    for k in range(2):
        path = tmp_path / f"{k}.pcapng"
        path.write_bytes(_capture([BASE + k * 7 + i * 400 for i in range(3)], [900, 64, 1500], pkts))
        paths.append(path)
    opts = ["--windows", "1us,1ms", "--rates", "1Gbps", "-q", "-o", "-"]
    for kind in ("payload", "l1"):
        scanned = json.loads(run_cli("scan", *paths, "--size", kind, *opts).stdout)
        superposed = json.loads(run_cli("superpose", *paths, "--size", kind, *opts).stdout)
        for table in ("envelope", "backlog"):
            assert superposed[table] == scanned[table], (kind, table)
    wire = json.loads(run_cli("superpose", *paths, *opts).stdout)["envelope"]
    assert wire != superposed["envelope"]


def test_superpose_refuses_a_wrong_size_as_scan_does():
    data = _capture([BASE, BASE + 10], [100, 100], [None, None])
    for wrong in ("frame", "WIRE", 3):
        with pytest.raises(Exception) as scanned:
            burstcore.scan([data, data], size=wrong)
        with pytest.raises(type(scanned.value), match=re.escape(str(scanned.value))):
            burstcore.superpose([data, data], size=wrong)
    # The command line: superpose --size as scan --size.
    for command in ("scan", "superpose"):
        p = run_cli(command, "/dev/null", "/dev/null", "--size", "frame")
        assert p.returncode == 2 and b"--size: invalid choice: 'frame'" in p.stderr, p.stderr


def test_superpose_by_key_alone_still_measures_the_gain():
    # The gain compares aggregates: by="pair" alone gives the gain of by=["pair", "all"], and
    # the frames hold only the pair rows asked for.
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=p) for p in (1000, 400, 1400, 100)]
    ts = [BASE + t for t in (0, 3_000, 4_000, 9_000)]
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    kw = dict(offsets=[0, "2us"], windows=["1us", "5us"], rates=["1Gbps"], bins=["5us"])
    pair = burstcore.superpose([data, data], by="pair", **kw)
    both = burstcore.superpose([data, data], by=["pair", "all"], **kw)
    assert pair.multiplexing_gain.equals(both.multiplexing_gain)
    assert pair.multiplexing_gain["merged_bytes"].null_count() == 0
    for name in ("envelope", "backlog", "series", "groups"):
        got, full = getattr(pair, name), getattr(both, name)
        assert set(got["by"]) == {"pair"}, name
        assert got.equals(full.filter(pl.col("by") == "pair")), name


def test_superpose_an_empty_capture_has_no_singles_rows():
    # SuperposeResult's docstring: no rows (not rows of 0 bytes), nothing added to the sum, a
    # warning naming it; every capture empty: no rows in either table, and no warning.
    a = oracles.capture([BASE + i * 1000 for i in range(10)], [100] * 10)
    empty = oracles.capture([], [])
    kw: dict = {"windows": ["1us", "10us"], "rates": ["1Gbps"]}
    alone = burstcore.scan(a, **kw).envelope.select("window_ns", "bytes")
    with pytest.warns(burstcore.CaptureWarning, match=r"^capture 1 gave the merge no packet \(empty"):
        r = burstcore.superpose([empty, a], **kw)
    assert r.singles["capture"].to_list() == [1, 1]
    assert r.multiplexing_gain.select("window_ns", "sum_single_bytes").rows() == alone.rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = burstcore.superpose([empty, empty], **kw)
    assert r.singles.height == 0 and r.multiplexing_gain.height == 0 and r.summary["packets"][0] == 0


def _pcap_of_sizes(sizes: np.ndarray, sec: int) -> bytes:
    """A nanosecond pcap of one captured byte a record, wire lengths ``sizes``, 1 ns apart from
    ``sec``: millions of records at numpy's speed."""
    rec = np.zeros(len(sizes), dtype=[("sec", "<u4"), ("ns", "<u4"), ("incl", "<u4"), ("orig", "<u4"), ("d", "u1")])
    rec["sec"], rec["ns"], rec["incl"], rec["orig"] = sec, np.arange(len(sizes)), 1, sizes
    return struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1) + rec.tobytes()


def test_superpose_gain_past_2_53_bytes_is_the_quotient_rounded_once(tmp_path):
    # The gain divided the two UInt64 columns cast to Float64: past 2^53 each was rounded before
    # the division (as traffic_matrix's share was). Capture a: 2^21 + 5 records of 4 GiB - 1
    # (E(1 s) just past 2^53), b: one record 100 s later, so merged = E_a and the sum E_a + E_b.
    big, n, b_bytes = 2**32 - 1, 2**21 + 5, 12_345

    def twice_off(e_a: int) -> bool:
        return float(e_a + b_bytes) / float(e_a) != float(Fraction(e_a + b_bytes, e_a))

    # Capture a's last record picked so that the two roundings differ.
    last = next(k for k in range(1, 1000) if twice_off((n - 1) * big + k))
    sizes = np.full(n, big, dtype=np.uint32)
    sizes[-1] = last
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    a.write_bytes(_pcap_of_sizes(sizes, 1_700_000_000))
    b.write_bytes(_pcap_of_sizes(np.array([b_bytes], dtype=np.uint32), 1_700_000_100))
    with pytest.warns(burstcore.CaptureWarning, match="overlap no other in time"):
        r = burstcore.superpose([str(a), str(b)], windows=["1s", "1ns"], rates=["1Gbps"])
    rows = r.multiplexing_gain.select("sum_single_bytes", "merged_bytes", "gain").rows()
    e_a = (n - 1) * big + last
    assert rows[1][:2] == (e_a + b_bytes, e_a)
    assert [g for _, _, g in rows] == [float(Fraction(s, m)) for s, m, _ in rows]


def test_superpose_random_offsets_are_reproducible():
    ts = [BASE + i * 100_000 for i in range(50)]  # 4.9 ms: every shift overlaps the others
    data = oracles.capture(ts, [100] * 50)
    a = burstcore.superpose([data] * 3, offsets="random", seed=7, max_offset="1ms", windows=["1us"], rates=["1Gbps"])
    b = burstcore.superpose([data] * 3, offsets="random", seed=7, max_offset="1ms", windows=["1us"], rates=["1Gbps"])
    assert a.offsets_ns == b.offsets_ns and a.offsets_ns[0] == 0
    assert not a.warnings  # overlapping: nothing to say
    assert all(0 <= o <= 1_000_000 for o in a.offsets_ns)
    assert a.envelope.equals(b.envelope)
    assert a.summary["packets"][0] == 150


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(20, 200), st.integers(0, 2**32), st.integers(2, 4))
def test_iterations_find_the_period_of_a_synthetic_job(period_ms, seed, ranks):
    """A synthetic data-parallel job: each iteration a compute pause, then every rank sends a
    burst to the next (ring), with jitter and ACKs back; the truth is the generator's period."""
    rng = random.Random(seed)
    hosts = [f"10.1.0.{i + 1}" for i in range(ranks)]
    period = period_ms * 1_000_000
    pk: list[tuple[int, int, bytes]] = []
    t0 = BASE
    for it in range(25):
        start = t0 + it * period + rng.randrange(0, period // 50)
        comm = start + period // 2  # compute, then communicate for a third of the period
        for r in range(ranks):
            src, dst = hosts[r], hosts[(r + 1) % ranks]
            data = oracles.eth_ipv4_udp(src, dst, 5000 + r, 6000, payload=1400, proto=6)
            ack = oracles.eth_ipv4_udp(dst, src, 6000, 5000 + r, payload=0, proto=6)
            for k in range(60):
                t = comm + k * (period // 3) // 60 + rng.randrange(0, 1000)
                pk.append((t, len(data), data))
                pk.append((t + 20_000, len(ack), ack))
    pk.sort(key=lambda x: x[0])
    cap = oracles.capture([p[0] for p in pk], [p[1] for p in pk], frames=[p[2] for p in pk])
    it = burstcore.iterations(cap)
    assert it.period_ns is not None
    assert abs(it.period_ns / period - 1) < 0.03
    assert it.confidence > 0.05
    # Every iteration's bytes: 60 data frames and 60 ACKs per rank.
    per_iter = sum(p[1] for p in pk) // 25
    inner = it.iterations["bytes"].to_list()[1:-1]
    assert inner and all(abs(b / per_iter - 1) < 0.05 for b in inner)


def _job(hosts: list[str], period: int, n: int, frames: int, seed: int) -> tuple[list[tuple[int, bytes]], list[int]]:
    """A synthetic data-parallel job as above (ring, ACKs back): its packets and its phase starts."""
    rng = random.Random(seed)
    pk: list[tuple[int, bytes]] = []
    starts = []
    for it in range(n):
        comm = BASE + it * period + rng.randrange(0, period // 50) + period // 2
        starts.append(comm)
        for r, src in enumerate(hosts):
            dst = hosts[(r + 1) % len(hosts)]
            data = oracles.eth_ipv4_udp(src, dst, 5000 + r, 6000, payload=1400, proto=6)
            ack = oracles.eth_ipv4_udp(dst, src, 6000, 5000 + r, payload=0, proto=6)
            for k in range(frames):
                t = comm + k * (period // 3) // frames + rng.randrange(0, 1000)
                pk += [(t, data), (t + 20_000, ack)]
    return pk, starts


def _jobs_capture(pk: list[tuple[int, bytes]]) -> bytes:
    pk = sorted(pk, key=lambda p: p[0])
    return oracles.capture([p[0] for p in pk], [len(p[1]) for p in pk], frames=[p[1] for p in pk])


@pytest.mark.parametrize(("share", "light_hosts"), [(0.05, 4), (0.15, 4), (0.30, 4), (0.15, 2), (0.30, 2)])
def test_iterations_the_heavier_of_two_jobs_sets_the_period(share, light_hosts):
    """A 50 ms job on two hosts beside a 37 ms job carrying `share` of the bytes: the period is the
    heavy job's. Each host's autocorrelation was normalised to 1 and then averaged, so a light job
    on more hosts outvoted the heavy one: with 4.3 % of the bytes on four hosts the period came out
    as 120.9 ms (confidence 0.62), near the common multiple 148-150 ms, and 113-139 ms from 15 %."""
    heavy, starts = _job(["10.1.0.1", "10.1.0.2"], 50_000_000, 40, 60, seed=1)
    heavy_bytes = sum(len(f) for _, f in heavy)
    per_frame = (heavy_bytes / len(heavy)) * 2  # a data frame and its ACK
    frames = max(1, round(share / (1 - share) * heavy_bytes / (54 * light_hosts * per_frame)))
    light, _ = _job([f"10.2.0.{i + 1}" for i in range(light_hosts)], 37_000_000, 54, frames, seed=2)
    light_bytes = sum(len(f) for _, f in light)
    assert abs(light_bytes / (heavy_bytes + light_bytes) - share) < 0.02
    # The oracle: the heavy job's own phase starts; each job alone is found at its own period.
    truth = (starts[-1] - starts[0]) / (len(starts) - 1)
    for alone, period in ((heavy, 50_000_000), (light, 37_000_000)):
        found = burstcore.iterations(_jobs_capture(alone)).period_ns
        assert found is not None and abs(found / period - 1) < 0.01, (period, found)
    it = burstcore.iterations(_jobs_capture(heavy + light))
    assert it.period_ns is not None and abs(it.period_ns / truth - 1) < 0.01, (it, it.acf_period_ns, truth)
    assert it.acf_period_ns == 50_000_000, it.acf_period_ns


def _ps_job(seed: int, n: int = 12, frames: int = 1500) -> tuple[bytes, list[tuple[int, int]], int]:
    """A parameter server and three workers: each iteration a compute pause, the workers' push
    to the server, a pause while it sums, the server's pull back; both pauses 2-6 ms, drawn
    alike, so that quiet alone cannot tell them apart. Frames at 1 Gbit/s (one per 12 µs). Its
    capture (burstcore's writer), each iteration's (push start, pull end), its bytes."""
    rng = random.Random(seed)
    server, workers = "10.3.0.1", [f"10.3.0.{i + 2}" for i in range(3)]
    push = [oracles.eth_ipv4_udp(w, server, 5000 + i, 6000, payload=1448, proto=6) for i, w in enumerate(workers)]
    pull = [oracles.eth_ipv4_udp(server, w, 6000, 5000 + i, payload=1448, proto=6) for i, w in enumerate(workers)]
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    spans = []
    t = BASE
    for _ in range(n):
        t += rng.randrange(2_000_000, 6_000_000)
        first = t
        for half in (push, pull):
            if half is pull:
                t += rng.randrange(2_000_000, 6_000_000)
            for k in range(3 * frames):
                w.packet(t, half[k % 3])
                t += 12_000
        spans.append((first, t))
    return w.getvalue(), spans, 3 * frames * (len(push[0]) + len(pull[0]))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_iterations_of_a_parameter_server_keep_push_and_pull_together(seed):
    """A parameter server's iteration is two halves, the push to the server and the pull back,
    with a pause between them as long as the one between iterations. On stretches of a few
    periods, with no long quiet at their edges, the boundaries fell between the halves: of
    capture b read from 2.2 to 7.0 s after iteration 0, iterations of 96 and 90 MB against 127.
    The oracle is the construction: every iteration reported whole is one push and its pull
    (its bytes, its start within the 5 ms a phase start may lag), every iteration inside the
    stretch but the first and last (which, in traffic that never falls quiet, are left out) is
    reported whole once, and the period is the mean spacing of those reported."""
    cap, spans, per_iter = _ps_job(seed)
    starts = [a for a, _ in spans]
    period = (starts[-1] - starts[0]) // (len(starts) - 1)
    stretches = [
        (starts[0] + int((k + off) * period), starts[0] + int((k + off + length) * period))
        for k in (0, 2, 4, 6)
        for off in (0.1, 0.3, 0.5, 0.7, 0.9)
        for length in (4, 5, 6)
        if k + off + length <= len(spans)
    ]
    # Not 3 periods: there the autocorrelation may take the halves, alike in this job, for the
    # period (58 of 116 ms, on 2 of the 60 stretches of 3 periods of seeds 0-3).
    for lo, hi in [(None, None), *stretches]:
        it = burstcore.iterations(cap, start=lo, end=hi)
        case = f"seed {seed}, stretch {lo and (lo - BASE) / 1e6} - {hi and (hi - BASE) / 1e6} ms"
        assert it.acf_period_ns is not None and abs(it.acf_period_ns / period - 1) < 0.1, (case, it)
        inside = [k for k, (a, b) in enumerate(spans) if (lo is None or lo <= a) and (hi is None or b <= hi)]
        got = []
        for start, nbytes in it.iterations.filter(pl.col("whole")).select("start_ns", "bytes").iter_rows():
            k = min(range(len(starts)), key=lambda j: abs(starts[j] - start))
            assert abs(start - starts[k]) < 5_000_000 and abs(nbytes / per_iter - 1) < 0.05, (case, k, start, nbytes)
            got.append(k)
        assert set(inside[1:-1]) <= set(got) <= set(inside) and len(got) == len(set(got)), (case, got, inside)
        # The period over the chain, within what the phase starts at its two ends may lag.
        chain = it.iterations.filter(pl.col("in_period"))["start_ns"]
        assert chain.len() >= 2, (case, it.iterations)
        ks = [min(range(len(starts)), key=lambda j: abs(starts[j] - s)) for s in (chain[0], chain[-1])]
        gaps = ks[1] - ks[0]
        assert gaps == chain.len() - 1, (case, ks)
        assert abs(it.period_ns * gaps - (starts[ks[1]] - starts[ks[0]])) < 10_000_000, (case, it.period_ns)


def _ring_steps_job(n: int, seed: int, period: int = 160_000_000) -> tuple[bytes, list[int]]:
    """A ring all-reduce whose phase is 12 steps 6 ms apart, each step a burst of 150 frames from
    every one of 4 ranks to the next, then a compute pause of about 88 ms: written with
    burstcore's writer; its capture and its phase starts (the oracle)."""
    rng = random.Random(seed)
    hosts = [f"10.4.0.{i + 1}" for i in range(4)]
    frames = [
        oracles.eth_ipv4_udp(h, hosts[(i + 1) % 4], 5000 + i, 6000, payload=1448, proto=6) for i, h in enumerate(hosts)
    ]
    pk, starts = [], []
    for it in range(n):
        comm = BASE + it * period + rng.randrange(0, period // 50)
        starts.append(comm)
        for step in range(12):
            for k in range(150):
                pk += [(comm + step * 6_000_000 + k * 12_000 + r * 3_000, frames[r]) for r in range(4)]
    pk.sort(key=lambda p: p[0])
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for t, f in pk:
        w.packet(t, f)
    return w.getvalue(), starts


@pytest.mark.parametrize(("periods", "seed"), [(2, 0), (2, 1), (3, 2), (20, 3)])
def test_iterations_do_not_take_the_steps_inside_a_phase_for_the_period(periods, seed):
    """The steps of a ring all-reduce repeat a dozen times a phase, far more regularly than the
    iterations over two or three periods (or even twenty, here): the autocorrelation's best lag
    is a step, and the period came out as 6 ms for 160, every iteration cut into 6 ms slices.
    An iteration is its compute pause plus its phase, so a period shorter than pauses recurring
    inside the iterations is a fraction of the real one: the best lag longer than the pauses and
    matching their spacing is taken, and a warning says the first was set aside. The oracle is
    the generator's phase starts."""
    cap, starts = _ring_steps_job(periods + 1, seed)
    truth = (starts[-1] - starts[0]) / periods
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        it = burstcore.iterations(cap)
    said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
    assert it.period_ns is not None and abs(it.period_ns / truth - 1) < 0.01, (it, it.acf_period_ns)
    assert it.iterations.height == periods + 1, it.iterations
    if (periods, seed) == (3, 2):
        # Here the step down from the best peak no longer reaches a step, as it did before: not
        # every multiple of 6 ms up to that peak is a peak as deep (`pick_period`). The period
        # is right at once: nothing was set aside, nothing is said.
        assert said == [], said
    else:
        assert len(said) == 1 and "best period (6ms) was shorter than quiet runs" in said[0], said


def test_iterations_bytes_run_from_an_unreported_boundary_for_the_first_and_from_end_after():
    """docs/metrics.md: an iteration's bytes run from its segment's start boundary to its end:
    the previous iteration's end after a kept one; for the first, a bin's start not reported,
    0.7-1.3 acf periods before its end, with the traffic between it and ``start`` counted and
    the traffic before it in no iteration. A light trickle of 100 B frames every 0.5 ms for
    300 ms before the first phase makes every bin edge a different byte count."""
    period = 50_000_000
    pk, starts = _job(["10.1.0.1", "10.1.0.2"], period, 12, 40, 1)
    small = oracles.eth_ipv4_udp("10.1.0.9", "10.1.0.8", 1, 2, payload=100)
    pk += [(starts[0] - 300_000_000 + i * 500_000, small) for i in range(600)]
    it = burstcore.iterations(_jobs_capture(pk))
    assert it.period_ns == period and it.acf_period_ns == period
    rows = it.iterations.rows(named=True)
    t = np.array(sorted(p[0] for p in pk), dtype=np.int64)
    size = np.array([len(p[1]) for p in sorted(pk, key=lambda p: p[0])], dtype=np.int64)

    def between(lo: int, hi: int) -> int:
        return int(size[(t >= lo) & (t < hi)].sum())

    first = rows[0]
    edges = range(int(t[0]) // it.bin_ns * it.bin_ns, first["start_ns"] + 1, it.bin_ns)
    boundary = [b for b in edges if between(b, first["end_ns"]) == first["bytes"]]
    assert len(boundary) == 1, boundary
    b = boundary[0]
    assert b < first["start_ns"] and between(b, first["start_ns"]) > 0  # trickle before start, counted
    assert 0.7 * period <= first["end_ns"] - b <= 1.3 * period
    assert between(int(t[0]), b) > 0  # the trickle before it: in no iteration
    assert sum(r["bytes"] for r in rows) == between(b, rows[-1]["end_ns"]) < between(int(t[0]), rows[-1]["end_ns"] + 1)
    for prev, r in itertools.pairwise(rows):
        assert r["bytes"] == between(prev["end_ns"], r["end_ns"]), r


def test_iterations_find_the_period_of_two_pulses_apart():
    """Three pulses 100 ms apart span two periods: the autocorrelation looked at lags up to half
    the series only, where the period lies on the edge, and found none (period None). The
    oracle is the construction."""
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=1458)
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for k in range(3):
        for j in range(10):
            w.packet(BASE + 300_000 + k * 100_000_000 + j * 12_000, frame)
    it = burstcore.iterations(w.getvalue())
    assert it.period_ns == 100_000_000, it
    assert it.iterations.height == 3, it.iterations


# 2,000 pulses 5 ms apart in 100 µs bins are 100,000 bins: analysed in 200 µs ones, and told.
@pytest.mark.filterwarnings("ignore:the packets span more than 65,536 bins")
@pytest.mark.parametrize(
    ("period_ms", "burst", "payload", "n", "kw"),
    [
        (20, 10, 1458, 500, {}),
        (5, 1, 18, 2000, {"bin": "1ms", "min_period": "2ms"}),
        (5, 1, 18, 2000, {"bin": "100us", "min_period": "2ms"}),
        (5, 1, 1458, 2000, {"bin": "1ms", "min_period": "2ms"}),
        (5, 1, 1458, 2000, {"bin": "100us", "min_period": "2ms"}),
    ],
)
def test_iterations_of_a_pulse_train_are_its_pulses(period_ms, burst, payload, n, kw):
    """Strictly periodic bursts, each one iteration. Every multiple of the period is an
    autocorrelation peak as high as the period's own: 20 ms came out as 80 ms (125 iterations),
    and 5 ms as 14 ms or 10.4 ms, the smoothing window a whole period long."""
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=payload)
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for k in range(n):
        for j in range(burst):
            w.packet(BASE + k * period_ms * 1_000_000 + j * 12_000, frame)
    it = burstcore.iterations(w.getvalue(), **kw)
    assert it.period_ns == period_ms * 1_000_000, it
    assert it.acf_period_ns == period_ms * 1_000_000, it
    assert it.iterations.height == n, it
    assert (it.iterations["bytes"] == burst * len(frame)).all()


def test_iterations_say_when_they_analysed_coarser_bins_than_asked(tmp_path):
    """Past 65,536 bins the series is pooled for the autocorrelation. A stray packet 100 s before
    a 20 ms pulse train makes 104,000 bins of 1 ms, so 2 ms ones are analysed: bin_ns said 1 ms
    while every instant was on the 2 ms grid, and nothing told (an hour before, a 45 ms period
    was not found at all)."""
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=1458)
    pulses = [BASE + 100 * 10**9 + 300_000 + k * 20_000_000 for k in range(200)]
    for stray in (False, True):
        w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
        if stray:
            w.packet(BASE, frame)
        for t in pulses:
            w.packet(t, frame)
        origin = (BASE if stray else pulses[0]) // 1_000_000 * 1_000_000  # the first packet's bin
        width = 2_000_000 if stray else 1_000_000
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(w.getvalue(), bin="1ms")
        said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
        assert it.bin_ns == width
        if stray:
            assert len(said) == 1 and "analysed in bins of 2ms" in said[0] and "start=/end=" in said[0], said
        else:
            assert not said
        assert it.period_ns == 20_000_000
        if stray:
            # The command line says it in its options' words.
            cap = tmp_path / "stray.pcap"
            cap.write_bytes(w.getvalue())
            p = run_cli("iterations", cap, "--bin", "1ms")
            err = p.stderr.decode()
            assert p.returncode == 0, err
            assert "give the training's stretch with --start/--end (or a --filter) to analyse it at 1ms" in err, err
            assert "bin_ns" not in err and "start=" not in err, err
        # Each pulse starts its iteration, in the bin of the width analysed that holds it.
        want = [origin + (t - origin) // width * width for t in pulses]
        assert it.iterations["start_ns"].to_list() == want


def test_errors_say_what_to_do(tmp_path):
    data = oracles.capture([BASE, BASE + 1], [100, 100])
    with pytest.raises(ValueError, match="key="):
        burstcore.flows(data, key="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="idle_timeout"):
        burstcore.flows(data, idle_timeout="1ms", windows=["1ms"])
    with pytest.raises(ValueError, match="biflow"):
        burstcore.flows(data, key="biflow", windows=["1ms"])
    with pytest.raises(ValueError, match="one offset per capture"):
        burstcore.superpose([data, data], offsets=["1ms"])
    with pytest.raises(ValueError, match="file object"):
        import io

        f = io.BytesIO(data)
        burstcore.superpose([f, f])
    with pytest.raises(FileNotFoundError):
        burstcore.bursts(str(tmp_path / "missing.pcap"))
    with pytest.raises(ValueError, match="grouping"):
        burstcore.sizes(data, by="host")


def test_a_bin_too_coarse_for_the_periods_searched_is_refused(tmp_path):
    """A bin that leaves no lag between min_period and max_period searched nothing, and said
    only that no period was found. The core searches lags of max(min_period/bin, 2) to
    max_period/bin whole bins, and needs two or more between them: with max_period 500 ms and
    min_period 5 ms, bins up to 125 ms (4 of them) leave one."""
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=1458)
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for k in range(40):
        w.packet(BASE + k * 100_000_000, frame)
    data = w.getvalue()
    it = burstcore.iterations(data, bin="125ms", max_period="500ms")
    assert it.bin_ns == 125_000_000
    with pytest.raises(ValueError) as e:
        burstcore.iterations(data, bin="125000001ns", max_period="500ms")
    assert str(e.value) == (
        "bin 125.000001ms leaves no period to search between min_period (5ms) and max_period (500ms): periods are "
        "searched in whole bins, from min_period (and 2 bins at least) to max_period, with 2 bins or more between "
        "them; give a bin of 125ms or less, or a wider range"
    )
    # min_period 400 ms: 400/b and 500/b whole bins must differ by 2, so b = 500/7 ms at most.
    with pytest.raises(ValueError, match=r"give a bin of 71\.428571ms or less"):
        burstcore.iterations(data, bin="80ms", min_period="400ms", max_period="500ms")
    burstcore.iterations(data, bin="71428571ns", min_period="400ms", max_period="500ms")
    with pytest.raises(ValueError, match=r"give a wider range$"):
        burstcore.iterations(data, bin="1ns", min_period="5ns", max_period="6ns")
    cap = tmp_path / "pulses.pcap"
    cap.write_bytes(data)
    p = run_cli("iterations", cap, "--bin", "1s", "--max-period", "500ms")
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "between --min-period (5ms) and --max-period (500ms)" in err and "give a bin of 125ms or less" in err, err


def test_out_of_order_packets_are_put_in_order_or_reported():
    ts = [BASE + 1000, BASE, BASE + 2000]
    data = oracles.capture(ts, [100, 200, 300])
    b = burstcore.bursts(data, gap="0ns")
    assert b.bursts["start_ns"].to_list() == sorted(ts)
    assert b.summary["reordered"][0] == 1
    with pytest.raises(burstcore.OutOfOrderError, match="reorder_horizon"):
        burstcore.bursts(data, reorder_horizon="100ns")
    d = burstcore.bursts(data, reorder_horizon="100ns", on_late="drop")
    assert d.summary["skipped_late"][0] == 1 and d.summary["packets"][0] == 2


def test_analyses_refuse_bad_arguments_alike():
    data = oracles.capture([BASE, BASE + 10], [100, 200])
    for call in (burstcore.sizes, burstcore.gaps, burstcore.bursts):
        for q in (-1, 1.5, "half", float("nan"), True):
            with pytest.raises(ValueError, match="must be a number from 0 to 1"):
                call(data, quantiles=[q])
    for call in (burstcore.sizes, burstcore.gaps):
        with pytest.raises(ValueError, match="max_groups=0 must be a positive integer"):
            call(data, by="pair", max_groups=0)
        with pytest.raises(ValueError, match="ambiguous: use the grouping 'src' or 'dst'"):
            call(data, by="host")


def test_histograms_stop_at_the_first_group_too_many():
    # Three pairs, 30,000 packets more (past the reader's read-ahead and the reorder horizon),
    # then a record that cannot be read: the third pair ends the read with the limit error
    # before the bad record is reached (it used to come after the whole read, here the bad
    # record's error).
    more = 30_000
    frames = [oracles.eth_ipv4_udp("10.0.0.1", f"10.0.0.{d}", 1, 2) for d in (2, 3, 4)]
    frames += frames[:1] * more
    ts = [BASE, BASE + 10, BASE + 20] + [BASE + 1_000_000 * k for k in range(1, more + 1)]
    data = oracles.capture(ts, [100] * len(ts), fmt="pcap", frames=frames)
    bad = data + struct.pack("<IIII", 0, 0, 0xFFFFFFF0, 0xFFFFFFF0)
    for call in (burstcore.sizes, burstcore.gaps):
        with pytest.raises(burstcore.LimitExceededError, match=f"at byte offset {len(data)}") as e:
            call(bad, by="pair")
        assert e.value.limit == "capture"  # the record's length: the capture's structure
        with pytest.raises(burstcore.LimitExceededError, match="more than 2 groups: raise max_groups") as e:
            call(bad, by="pair", max_groups=2)
        assert e.value.limit == "result"
        assert call(data, by="pair", max_groups=3).groups.height == 4  # "all" and three pairs


def _eth_ipv6_udp(src: int, dst: int) -> bytes:
    ip = struct.pack("!IHBB", 6 << 28, 8, 17, 64) + src.to_bytes(16, "big") + dst.to_bytes(16, "big")
    return b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd" + ip + struct.pack("!HHHH", 1, 2, 8, 0)


def test_traffic_matrix_and_host_volumes_equal_counts_over_read_packets():
    # Thousands of pairs over IPv4, IPv6 and frames without addresses, in random order: every
    # pair's and host's totals as read_packets' rows add them up (the matrix's tables changed
    # from ordered maps to hash tables sorted at the end; this holds them to the packets).
    rng = np.random.default_rng(7)
    n = 6000
    v4 = [f"10.{a}.0.{b}" for a in range(3) for b in range(1, 30)]
    frames = []
    for k in rng.integers(0, 10, n):
        if k == 0:
            frames.append(b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28)  # ARP
        elif k <= 2:
            frames.append(_eth_ipv6_udp(int(rng.integers(1, 40)), int(rng.integers(1, 40))))
        else:
            s, d = rng.choice(len(v4), 2)
            frames.append(oracles.eth_ipv4_udp(v4[s], v4[d], 1, 2))
    ts = sorted(BASE + int(t) for t in rng.integers(0, 10**9, n))
    sizes = [int(x) for x in rng.integers(60, 1500, n)]
    data = oracles.capture(ts, sizes, frames=frames)
    rows = burstcore.read_packets(data, columns=["wire_len", "src", "dst"]).rows()
    pairs: dict = defaultdict(lambda: [0, 0])
    hosts: dict = defaultdict(lambda: [0, 0, 0, 0])
    for size, src, dst in rows:
        pairs[src, dst][0] += size
        pairs[src, dst][1] += 1
        hosts[src][0] += size
        hosts[src][1] += 1
        hosts[dst][2] += size
        hosts[dst][3] += 1
    m = burstcore.traffic_matrix(data)
    assert len(pairs) > 1000 and m.height == len(pairs)
    assert {(s, d): [b, k] for s, d, b, k in m.select("src", "dst", "bytes", "packets").iter_rows()} == pairs
    # Heaviest first, ties by (src, dst) with the pair without addresses last.
    key = [(-b, s is None, s or "", d is None, d or "") for s, d, b in m.select("src", "dst", "bytes").iter_rows()]
    assert key == sorted(key)
    h = burstcore.host_volumes(data)
    assert {r[0]: list(r[1:]) for r in h.iter_rows()} == hosts
    key = [(-b, x is None, x or "") for x, b in h.select("host", "sent_bytes").iter_rows()]
    assert key == sorted(key)


def test_traffic_matrix_and_host_volumes_stop_at_max_pairs():
    # A pair per packet (spoofed or scanning traffic) held 385 B a pair without a bound.
    frames = [oracles.eth_ipv4_udp("10.0.0.1", f"10.0.0.{d}", 1, 2) for d in (2, 3, 4)]
    data = oracles.capture([BASE, BASE + 10, BASE + 20], [100] * 3, frames=frames)
    for call in (burstcore.traffic_matrix, burstcore.host_volumes):
        with pytest.raises(burstcore.LimitExceededError, match="more than 2 host pairs: raise max_pairs") as e:
            call(data, max_pairs=2)
        assert e.value.limit == "result"
    assert burstcore.traffic_matrix(data, max_pairs=np.int64(3)).height == 3
    assert burstcore.host_volumes(data, max_pairs=3).height == 4


def test_traffic_matrix_share_past_2_53_bytes_is_the_quotient_rounded_once(monkeypatch):
    # numpy divided float64s: a count or total past 2^53 was rounded before the division, so the
    # share was rounded twice (18 of these 45 came out an ulp off). A capture of 2^53 bytes takes
    # 2 million 4 GiB records, so the core's answer is given directly; the division is Python's.
    from burstcore import _flows

    rng = random.Random(5)
    counts = [2**62 + 3, 2**53 + 1, 2**40 + 7, 5, 0] + [rng.randrange(2**54, 2**57) for _ in range(40)]
    total = sum(counts)
    assert total < 2**64  # the core's u64
    addresses = [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(len(counts) + 1)]
    pairs = {
        "src": np.zeros(len(counts), dtype=np.uint32),
        "dst": np.arange(1, len(counts) + 1, dtype=np.uint32),
        "addresses": addresses,
        "bytes": np.array(counts, dtype=np.uint64),
        "packets": np.ones(len(counts), dtype=np.uint64),
    }
    monkeypatch.setattr(_flows, "_matrix", lambda *a, **k: {"pairs": pairs, "total_bytes": total})
    m = burstcore.traffic_matrix(b"unused")
    exact = {b: float(Fraction(b, total)) for b in counts}
    assert [exact[b] for b in m["bytes"]] == m["share"].to_list()
    # The inputs do tell the two apart: one rounding of each float64 before dividing is off.
    twice = sum(float(b) / float(total) != exact[b] for b in counts)
    assert twice == 18
    # Within 2^53 numpy's quotient is the exact one, and a total of 0 gives null shares.
    pairs["bytes"] = np.array([78, 80], dtype=np.uint64)
    pairs["src"], pairs["dst"] = pairs["src"][:2], pairs["dst"][:2]
    pairs["packets"] = pairs["packets"][:2]
    monkeypatch.setattr(_flows, "_matrix", lambda *a, **k: {"pairs": pairs, "total_bytes": 158})
    assert burstcore.traffic_matrix(b"unused")["share"].to_list() == [80 / 158, 78 / 158]
    monkeypatch.setattr(_flows, "_matrix", lambda *a, **k: {"pairs": pairs, "total_bytes": 0})
    assert burstcore.traffic_matrix(b"unused")["share"].to_list() == [None, None]


def test_traffic_matrix_rows_of_equal_bytes_go_by_src_then_dst_as_strings():
    # The docstring's order: equal bytes by src, then dst, compared as strings ("10.0.0.10" before
    # "10.0.0.9", not as addresses), the row without addresses last; the sizes are all equal.
    pairs = [("10.0.0.9", "10.0.0.1"), ("10.0.0.10", "10.0.0.2"), (None, None), ("10.0.0.10", "10.0.0.1")]
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28
    frames = [arp if s is None else oracles.eth_ipv4_udp(s, d, 1, 2) for s, d in pairs]
    data = oracles.capture([BASE + 10 * i for i in range(4)], [100] * 4, frames=frames)
    m = burstcore.traffic_matrix(data)
    assert m["bytes"].to_list() == [100] * 4
    assert m.select("src", "dst").rows() == [
        ("10.0.0.10", "10.0.0.1"),
        ("10.0.0.10", "10.0.0.2"),
        ("10.0.0.9", "10.0.0.1"),
        (None, None),
    ]


def test_default_max_groups_is_one_number_with_rust():
    # Python's scan/flows default and Rust's ScanConfig::DEFAULT_MAX_GROUPS were 1,000,000 and
    # 2^20: the Rust crate's embedders met a different limit than the docs state.
    from burstcore import _burstcore, _scan

    assert _scan.DEFAULT_MAX_GROUPS == _burstcore.DEFAULT_MAX_GROUPS == 1_000_000


def test_max_flows_bounds_the_flows_an_idle_timeout_closed_too():
    # One key, a gap past the idle timeout between every two packets: a flow per packet, each
    # a row of the report (64 keys with idle_timeout=0 made 25 M rows, 7.9 GB, unbounded).
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2)] * 5
    data = oracles.capture([BASE + k * 1000 for k in range(5)], [100] * 5, frames=frames)
    assert burstcore.flows(data, idle_timeout="1ns", max_flows=5).height == 5
    with pytest.raises(burstcore.LimitExceededError, match=r"more than 4 flows: raise max_flows .* idle_timeout") as e:
        burstcore.flows(data, idle_timeout="1ns", max_flows=4)
    assert e.value.limit == "result"
    assert burstcore.flows(data, max_flows=1).height == 1


def test_iterations_say_which_packets_they_left_out():
    # 2^24 bins of 1 us reach 16.8 s past the first packet: the one 20 s on was counted in the
    # summary's packets yet analysed nowhere, without a word.
    data = oracles.capture([BASE, BASE + 1000, BASE + 20 * 10**9], [100] * 3)
    with pytest.warns(burstcore.CaptureWarning, match=r"1 packet comes more than 16\.777216s .* bins of 1us"):
        it = burstcore.iterations(data, bin="1us", min_period="2us", max_period="1ms")
    assert it.summary["beyond_bins"][0] == 1 and it.summary["packets"][0] == 3


def test_sizes_and_gaps_return_their_own_rows():
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2)] * 3
    data = oracles.capture([BASE, BASE + 10, BASE + 1000], [100, 200, 300], frames=frames)
    s, g = burstcore.sizes(data, by="pair"), burstcore.gaps(data, by="pair")
    assert s.histogram.columns == ["group", "size", "packets"]
    # A gap's bounds have one name in every table (the histogram's were gap_lo_ns/gap_hi_ns).
    assert g.histogram.columns == ["group", "lo_ns", "hi_ns", "gaps"]
    assert g.quantiles.columns == ["group", "q", "lo_ns", "hi_ns"]
    assert g.groups.columns == ["group", "packets", "gaps", "min_ns", "max_ns"]
    for group in ("all", s.groups["group"][1]):
        assert s.histogram.filter(group=group).sort("size").rows() == [(group, z, 1) for z in (100, 200, 300)]
        assert g.histogram.filter(group=group).sort("lo_ns").rows() == [(group, 8, 15, 1), (group, 512, 1023, 1)]


def test_flow4_leaves_out_packets_without_ports():
    # The CNSM study's flow count is of TCP port pairs: an IGMP/ICMP packet is in no flow4.
    frames = [
        oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, proto=6),
        oracles.eth_ipv4_udp("10.0.0.1", "224.0.0.22", 0, 0, proto=2),  # IGMP
        oracles.eth_ipv4_udp("10.0.0.2", "10.0.0.1", 2000, 1000, proto=6),
    ]
    data = oracles.capture([BASE, BASE + 10, BASE + 20], [100, 60, 100], frames=frames)
    f4 = burstcore.flows(data, key="flow4")
    assert f4.select("src", "sport", "dst", "dport").rows() == [
        ("10.0.0.1", 1000, "10.0.0.2", 2000),
        ("10.0.0.2", 2000, "10.0.0.1", 1000),
    ]
    assert burstcore.flows(data, key="flow").height == 3
    g = burstcore.scan(data, windows="1ms", rates="1Gbps", by="flow4").groups
    assert sorted(g.select("group", "packets").rows()) == [
        ("(none)", 1),
        ("10.0.0.1:1000>10.0.0.2:2000", 1),
        ("10.0.0.2:2000>10.0.0.1:1000", 1),
    ]


def test_capture_warnings_point_at_the_callers_line():
    import warnings

    cut = oracles.capture([BASE, BASE + 10, BASE + 20], [100, 200, 300])[:-5]
    calls = (burstcore.traffic_matrix, burstcore.host_volumes, burstcore.flows, burstcore.sizes, burstcore.gaps)
    for call in (*calls, burstcore.bursts, burstcore.iterations):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(cut)
        assert caught and all(w.filename == __file__ for w in caught), (call.__name__, [w.filename for w in caught])


def test_a_packet_whose_protocol_the_snaplen_cut_is_in_no_5_tuple_flow():
    # Ethernet + IPv6 whose next header is a Fragment header (44) the snaplen cut off whole: the
    # addresses are there, the transport protocol is not (tshark: "IPv6 Fragment truncated").
    # scan(by="flow") puts it in '(none)'; flows() made it a flow of protocol 0 (Hop-by-Hop),
    # whose E(τ) column was null for 86 bytes.
    a, b = bytes(15) + b"\x01", bytes(15) + b"\x02"
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd"
    cut = eth + struct.pack("!IHBB", 6 << 28, 32, 44, 64) + a + b  # 54 of 86 bytes captured
    udp = eth + struct.pack("!IHBB", 6 << 28, 8, 17, 64) + a + b + struct.pack("!HHHH", 5, 6, 8, 0)
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    w.epb(0, cut, ts_ns=BASE, wire_len=len(cut) + 32)
    w.epb(0, udp, ts_ns=BASE + 10)
    data = w.getvalue()
    udp_row = ("::1", "::2", 17, 5, 6, 1, len(udp))
    for key in ("flow", "biflow"):
        f = burstcore.flows(data, key=key)
        assert f.select("src", "dst", "protocol", "sport", "dport", "packets", "bytes").rows() == [udp_row]
    f = burstcore.flows(data, windows="1ms")
    assert f["envelope_1ms"].to_list() == [len(udp)]
    g = burstcore.scan(data, windows="1ms", rates="1Gbps", by="flow").groups
    assert sorted(g.select("group", "packets", "bytes").rows()) == [
        ("(none)", 1, len(cut) + 32),
        ("udp [::1]:5>[::2]:6", 1, len(udp)),
    ]


def test_idle_timeout_boundary_and_a_late_packet_by_hand():
    # One TCP connection, T = 1 ms. A gap of exactly T keeps a flow (only a gap strictly longer
    # ends it). The packet at 3T arrives after the one at 4T and is put back in time order (10 ms
    # horizon) before flows are cut: in file order the gap 2T..4T would have ended the flow.
    T = 1_000_000
    fwd = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 40000, 80, proto=6)
    rev = oracles.eth_ipv4_udp("10.0.0.2", "10.0.0.1", 80, 40000, proto=6)
    arrivals = [(0, fwd), (T, rev), (2 * T, fwd), (4 * T, fwd), (3 * T, rev), (5 * T + 1, rev), (5 * T + 1, fwd)]
    ts = [BASE + t for t, _ in arrivals]
    frames = [f for _, f in arrivals]
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    cols = ("src", "first_seen_ns", "last_seen_ns", "packets", "src2dst_packets", "dst2src_packets")
    rows = burstcore.flows(data, key="biflow", idle_timeout=f"{T}ns").select(cols).rows()
    # In time order 0, T, 2T, 3T, 4T (gaps of T), then 5T+1 twice (a gap of T+1: a new flow,
    # whose first packet in file order, the reply, names its source).
    assert rows == [
        ("10.0.0.1", BASE, BASE + 4 * T, 5, 3, 2),
        ("10.0.0.2", BASE + 5 * T + 1, BASE + 5 * T + 1, 2, 1, 1),
    ]
    one_less = burstcore.flows(data, key="biflow", idle_timeout=f"{T - 1}ns")
    assert one_less["packets"].to_list() == [1, 1, 1, 1, 1, 2]


def _twins_checked(name: str, df: pl.DataFrame) -> None:
    """Every Datetime and Duration column of `df` has its integer twin `<column>_ns` beside it,
    holding the same instants and durations in ns."""
    for col, dtype in df.schema.items():
        if isinstance(dtype, (pl.Datetime, pl.Duration)):
            twin = f"{col}_ns"
            assert twin in df.columns, f"{name}.{col} has no {twin}: {df.columns}"
            assert df.schema[twin] in (pl.Int64, pl.UInt64), (name, twin, df.schema[twin])
            as_ns = df[col].dt.epoch("ns") if isinstance(dtype, pl.Datetime) else df[col].dt.total_nanoseconds()
            assert as_ns.to_list() == df[twin].to_list(), (name, col)


def test_every_instant_and_duration_has_its_integer_ns_column():
    # Exactness: integer ns beside every Datetime (and Duration) of every table, as the
    # analyses' tables had and scan's did not (envelope.start, backlog.peak, groups.first, ...).
    ts, frames = [], []
    for it in range(6):
        for k in range(30):
            ts.append(BASE + it * 10_000_000 + k * 900)
            frames.append(oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=1000))
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    kw = {"windows": ["1ms", "5ms"], "rates": ["1Gbps", "10Gbps"], "bins": ["1ms"], "by": ["all", "pair"]}
    r = burstcore.scan(data, **kw)
    sp = burstcore.superpose([data, data], offsets=[0, "3ms"], **kw)
    tables = {f"scan.{n}": getattr(r, n) for n in ("envelope", "backlog", "series", "groups", "summary")}
    tables |= {f"superpose.{n}": getattr(sp, n) for n in ("envelope", "backlog", "series", "groups", "summary")}
    tables["superpose.multiplexing_gain"] = sp.multiplexing_gain
    tables["flows"] = burstcore.flows(data)
    b = burstcore.bursts(data, gap="1ms")
    tables |= {"bursts.bursts": b.bursts, "bursts.summary": b.summary}
    tables["iterations"] = burstcore.iterations(data).iterations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same packets twice: told, as it should be
        tables["shared_packets.pairs"] = burstcore.shared_packets([data, data]).pairs
    for name, df in tables.items():
        _twins_checked(name, df)
    # The instants themselves, from the packets written: E(5ms) of one 30-packet burst (26.1 µs
    # long) starts at a burst's first packet, and the groups run from the first to the last.
    env = r.envelope.filter(by="all", window_ns=5_000_000)
    assert env["start_ns"][0] in ts[::30]
    g = r.groups.filter(by="all").row(0, named=True)
    assert (g["first_ns"], g["last_ns"]) == (ts[0], ts[-1])
    s = r.summary.row(0, named=True)
    assert (s["first_ns"], s["last_ns"]) == (ts[0], ts[-1])
    assert tables["shared_packets.pairs"]["from_ns"].to_list() == [ts[0]]


def _stepped_job(period: int, n: int, steps: int, jitter: int, missing: int | None, seed: int) -> bytes:
    """A ring job of `n` iterations `period` apart (each start jittered by up to `jitter` ns): a
    compute pause of 40 % of the period, then a phase of `steps` bursts from each of 3 ranks to
    the next, evenly spread over 60 % of the period (the harmonics: a burst repeats `steps` times
    an iteration), 120 frames per rank per iteration. Iteration `missing` (if any) is left out, a
    stall. Written with burstcore's writer: its capture."""
    rng = random.Random(seed)
    hosts = [f"10.5.0.{i + 1}" for i in range(3)]
    frames = [
        oracles.eth_ipv4_udp(h, hosts[(i + 1) % 3], 5000 + i, 6000, payload=1448, proto=6) for i, h in enumerate(hosts)
    ]
    per_step = 120 // steps
    phase = period * 3 // 5
    pk = []
    for it in range(n):
        if it == missing:
            continue
        comm = BASE + it * period + period * 2 // 5 + rng.randrange(0, jitter + 1)
        for s in range(steps):
            at = comm + s * phase // steps
            for k in range(per_step):
                pk += [(at + k * 36_000 + r * 12_000, frames[r]) for r in range(3)]
    pk.sort(key=lambda p: p[0])
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for t, f in pk:
        w.packet(t, f)
    return w.getvalue()


# Of the 40 pulse trains below, found right: 35 (30 before the pauses between pulses were told
# from those inside an iteration; of the 5 left, 3 merge the last two pulses into one iteration
# and are told as unequal iterations, 2 come out as 570 ms, told since a shorter lag that
# repeats at least half as deep is: before, not told).
RIGHT_PULSES = 35


def test_a_jittered_pulse_train_is_not_set_aside_for_its_own_pauses():
    """Nine pulses 285 ms apart, each start jittered by up to 3 %: the pause between two pulses,
    the spacing less the pulse, can pass the mean spacing, and was taken for a quiet run inside
    an iteration: the period found (right) was set aside for 666-857 ms on 5 seeds of 40. A
    quiet run is inside the iterations only if longer than every spacing of those that give the
    period. The oracle is the construction: the period must be right (within 5 %), said to be
    unsure: a whole multiple of it (570 ms on 2 of the 40) was given as sure before."""
    period = 285_000_000
    right = 0
    for seed in range(40):
        cap = _stepped_job(period, 9, 1, int(0.03 * period), None, seed)
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(cap, max_period="1s")
        case = (seed, it.period_ns, it.acf_period_ns, it.period_doubts)
        assert it.period_ns is not None and not any("was set aside" in d for d in it.period_doubts), case
        assert all(d in [str(m.message) for m in told] for d in it.period_doubts), case
        ratio = it.period_ns / period
        right += abs(ratio - 1) <= 0.05
        assert abs(ratio - 1) <= 0.05 or it.period_doubts, case
    assert right >= RIGHT_PULSES, right


def _pulse_family(seed: int) -> tuple[bytes, int]:
    """A seeded job of the family below, written with burstcore's writer: 6-15 iterations
    20-400 ms apart, each start jittered by up to 4 %, 1-6 bursts a phase (as `_stepped_job`),
    at times one or two iterations missing, an idle gap of 3-4 periods half-way, and Poisson
    background packets from another pair of hosts (50 or 400 a second). Its capture and period."""
    rng = random.Random(seed)
    period = rng.randrange(20, 400) * 1_000_000
    n = rng.randrange(6, 16)
    steps = rng.choice([1, 1, 2, 3, 6])
    jitter = int(rng.uniform(0, 0.04) * period)
    missing = set(rng.sample(range(1, n - 1), rng.choice([0, 0, 1, 2])))
    idle = rng.choice([0, 0, 3 * period + rng.randrange(period)])
    noise = rng.choice([0, 0, 50, 400])
    hosts = [f"10.5.0.{i + 1}" for i in range(3)]
    frames = [
        oracles.eth_ipv4_udp(h, hosts[(i + 1) % 3], 5000 + i, 6000, payload=1448, proto=6) for i, h in enumerate(hosts)
    ]
    background = oracles.eth_ipv4_udp("10.9.0.1", "10.9.0.2", 1, 2, payload=200, proto=17)
    per_step, phase = 120 // steps, period * 3 // 5
    pk = []
    for it in range(n):
        if it in missing:
            continue
        comm = BASE + it * period + period * 2 // 5 + rng.randrange(0, jitter + 1) + (idle if it > n // 2 else 0)
        for s in range(steps):
            at = comm + s * phase // steps
            for k in range(per_step):
                pk += [(at + k * 36_000 + r * 12_000, frames[r]) for r in range(3)]
    t, end = BASE, BASE + n * period + idle
    while noise and t < end:
        t += int(rng.expovariate(noise) * 1e9)
        pk.append((t, background))
    pk.sort(key=lambda p: p[0])
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for at, f in pk:
        w.packet(at, f)
    return w.getvalue(), period


# One iteration of a ring edge as capture a's 10.99.0.12 > .11 carried it (its rank logs'
# iteration 3, 646 ms): each burst's start (ms into the iteration), length (ms) and MB.
RING_EDGE_STEPS = [
    (12, 9, 1.0), (24, 9, 1.0), (57, 10, 1.0), (87, 14, 1.6), (104, 5, 0.5), (132, 19, 2.1), (184, 7, 0.8),
    (199, 11, 1.0), (220, 20, 2.1), (253, 12, 1.0), (284, 18, 2.1), (316, 10, 1.0), (346, 7, 0.7), (361, 9, 0.9),
    (378, 21, 2.1), (416, 9, 1.0), (431, 16, 1.2), (449, 11, 1.0), (463, 12, 1.0), (485, 8, 0.9), (500, 9, 1.0),
    (569, 19, 2.1), (618, 26, 3.1),
]  # fmt: skip


def _ring_edge(seed: int, n: int = 12, period_ms: int = 646) -> tuple[bytes, list[int]]:
    """A ring edge: the bursts above, each start jittered by up to 3 ms, iterations `period_ms`
    apart jittered by up to 25 ms. Its capture and the iteration starts."""
    rng = random.Random(seed)
    frame = oracles.eth_ipv4_udp("10.7.0.2", "10.7.0.1", 5000, 6000, payload=1448, proto=6)
    pk, starts, t = [], [], BASE
    for _ in range(n):
        starts.append(t)
        for off, length, mb in RING_EDGE_STEPS:
            at = t + (off + rng.uniform(-3, 3)) * 1e6
            frames = int(mb * 1e6 / len(frame))
            pk += [int(at + k * length * 1e6 / frames) for k in range(frames)]
        t += int((period_ms + rng.uniform(-25, 25)) * 1e6)
    pk.sort()
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for at in pk:
        w.packet(at, frame)
    return w.getvalue(), starts


def test_a_ring_edge_is_not_doubted_for_a_step_dividing_its_period():
    """10 seeded ring edges (`_ring_edge`): the period is right (within 5 % of the mean spacing
    of the iteration starts) or doubted, and a right one is never doubted for a shorter lag
    repeating half as deep: some step lies near a third of the period (about 200 ms here; near
    half, 321 ms, on capture a's edge 10.99.0.11 > .14), and the iterations at that lag would
    differ in bytes. Before, seeds 0, 1, 2 and 4 more of 20 were doubted so; seed 7 (347 ms,
    22 iterations of unequal bytes) is wrong, told, before and now."""
    right = 0
    for seed in range(10):
        cap, starts = _ring_edge(seed)
        period = (starts[-1] - starts[0]) / (len(starts) - 1)
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(cap)
        case = (seed, it.period_ns, it.acf_period_ns, it.period_doubts)
        assert all(d in [str(m.message) for m in told] for d in it.period_doubts), case
        ok = it.period_ns is not None and abs(it.period_ns / period - 1) <= 0.05
        assert ok or it.period_doubts, case
        assert not ok or not any("repeats at" in d for d in it.period_doubts), case
        right += ok
    assert right >= 9, right


def test_a_family_of_jittered_jobs_finds_the_period_or_says_it_is_unsure():
    """60 seeded jobs (`_pulse_family`): jitter, idle gaps, missing iterations, background noise.
    The period is right (within 5 % of the construction's) or a warning says it may not be:
    every doubt is a `CaptureWarning`. Before, seed 35 (300 ms, 11 single bursts jittered by
    3 %) came out as 600 ms, sure: the 300 ms peak was smeared by the jitter to 0.5-0.8 of the
    600 ms one's depth, too shallow to step down to, and nothing said so."""
    for seed in range(60):
        cap, period = _pulse_family(seed)
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(cap, max_period="2s")
        said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
        case = (seed, period, it.period_ns, it.confidence, it.period_doubts)
        assert all(d in said for d in it.period_doubts), case
        right = it.period_ns is not None and abs(it.period_ns / period - 1) <= 0.05
        assert right or it.period_doubts, case


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    period_ms=st.integers(20, 300),
    n=st.integers(3, 10),
    steps=st.sampled_from([1, 2, 3, 6, 12]),
    jitter=st.floats(0, 0.04),
    missing=st.booleans(),
    seed=st.integers(0, 2**32),
)
# 5 iterations 20 ms apart, the third missing: the period came out as 60 ms, borne out by the 2
# iterations 60 ms apart only (confidence 0), and was not doubted.
@example(period_ms=20, n=5, steps=12, jitter=0.0, missing=True, seed=0)
# 7 iterations 46 ms apart, the fourth missing, jittered by 3 %: the iterations at the lag of 47 ms
# were not borne out for the stall (3 of 6 one period apart), and the next lag tried, 90 ms, was
# taken, sure (confidence 0.257): 1.91 times the lag, past the 3 % that ended the search at a
# multiple of one looked at, yet twice the 46 ms the iterations at that lag lay apart. Now 46 ms,
# doubted for the stall.
@example(period_ms=46, n=7, steps=12, jitter=0.03125, missing=True, seed=1)
# 7 iterations, the fourth missing: the best lag was 1.7-1.8 periods (69 ms read as 119.67 ms,
# confidence 0.629, sure), its iterations each 1.5 of the job's, within 12 % of one another, each
# phase holding the job's compute pause (33 ms) where 5 ms lay between them. Now doubted for it.
@example(period_ms=52, n=7, steps=6, jitter=0.0, missing=True, seed=2652716202)
@example(period_ms=162, n=7, steps=6, jitter=0.0012, missing=True, seed=51108741)
@example(period_ms=181, n=7, steps=12, jitter=0.0, missing=True, seed=549882081)
@example(period_ms=69, n=7, steps=6, jitter=0.0, missing=True, seed=0)
def test_iterations_say_when_the_period_is_unsure(period_ms, n, steps, jitter, missing, seed):
    """Synthetic ring jobs of 2-10 iterations with bursts inside each phase (harmonics of the
    period), jitter and at times an iteration missing (a stall). The period reported is right
    (within 5 % of the construction's) or the result says it is unsure: `period_doubts` names the
    reason and a `CaptureWarning` gives it. On a few periods the autocorrelation may take a burst
    or a lag between two spacings for the period (the shared captures: 12 of 186 stretches of 2-4
    periods, none told). Where the job runs 6 iterations or more, none missing, the period is
    right and every iteration reported is one of the job's, nothing is said. The oracle is the construction."""
    period = period_ms * 1_000_000
    gone = n // 2 if missing and n >= 4 else None
    cap = _stepped_job(period, n, steps, int(jitter * period), gone, seed)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        it = burstcore.iterations(cap, max_period="1s")
    said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
    right = it.period_ns is not None and abs(it.period_ns / period - 1) <= 0.05
    case = (it, it.acf_period_ns, it.periods_seen, it.period_doubts, said)
    assert right or it.period_doubts or it.period_ns is None, case
    assert all(d in said for d in it.period_doubts), case
    # The best lag set aside for one matching the quiet runs' spacing is said whether or not the
    # one taken is right (the test of the ring's steps above): that is not what is tested here.
    set_aside = any("was set aside" in d for d in it.period_doubts)
    # Nor is a boundary missed, which is told as unequal iterations (not fixed: of 6 pulses
    # jittered by 4 %, the last two came out as one iteration).
    each_one = (
        it.iterations["bytes"] == 360 * len(oracles.eth_ipv4_udp("10.5.0.1", "10.5.0.2", 1, 1, payload=1448))
    ).all()
    if right and each_one and n >= 6 and gone is None and not set_aside:
        assert not it.period_doubts, case


def _instants_beside_their_ns(df: pl.DataFrame) -> list[tuple[str, str | None]]:
    """Each Datetime column with the column after it: its own `_ns` in a table as README has it."""
    cols = df.columns
    return [
        (c, cols[k + 1] if k + 1 < len(cols) else None)
        for k, c in enumerate(cols)
        if isinstance(df.schema[c], pl.Datetime)
    ]


def test_the_bursts_table_has_each_instant_beside_its_ns(tmp_path) -> None:
    # start and end came last, after off_before_ns, far from start_ns and end_ns.
    ts = [BASE + t for t in (0, 10, 20, 5_000_000, 5_000_030, 9_000_000)]
    frames = [oracles.eth_ipv4_udp(HOSTS[k % 2], HOSTS[2], 1000, 80, 58) for k in range(len(ts))]
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    for by in (None, "src"):
        b = burstcore.bursts(data, gap="1ms", by=by)
        pairs = _instants_beside_their_ns(b.bursts)
        assert pairs == [("start", "start_ns"), ("end", "end_ns")], b.bursts.columns
        assert b.bursts["start"].dt.epoch("ns").to_list() == b.bursts["start_ns"].to_list()
        assert b.bursts["end"].dt.epoch("ns").to_list() == b.bursts["end_ns"].to_list()
    path = tmp_path / "b.pcap"
    path.write_bytes(data)
    p = run_cli("bursts", path, "--gap", "1ms", "--json", "-o", "-")
    assert p.returncode == 0, p.stderr
    import json

    row = json.loads(p.stdout)["bursts"][0]
    keys = list(row)
    assert keys[keys.index("start") + 1] == "start_ns" and keys[keys.index("end") + 1] == "end_ns", keys


@pytest.mark.parametrize("call", ["sizes", "gaps", "bursts"])
def test_a_quantile_given_twice_is_refused(tmp_path, call: str) -> None:
    # sizes --quantiles 0.5,0.5 gave the median's row twice.
    data = oracles.capture([BASE, BASE + 10, BASE + 30], [100] * 3)
    kw = {"gap": "1ms"} if call == "bursts" else {}
    for qs in ([0.5, 0.5], [0.1, 1, 1.0], [0, 0.0]):
        with pytest.raises(ValueError, match=r"is given twice: give each quantile once"):
            getattr(burstcore, call)(data, quantiles=qs, **kw)
    path = tmp_path / "q.pcap"
    path.write_bytes(data)
    p = run_cli(call, path, "--quantiles", "0.5,0.9,0.5")
    assert p.returncode == 2 and b"quantile 0.5 is given twice: give each quantile once" in p.stderr, p.stderr
    # Each once: one row per q (a guard).
    assert getattr(burstcore, call)(data, quantiles=[0.5, 0.9], **kw) is not None


def test_a_fine_grid_of_quantiles_is_checked_in_linear_time() -> None:
    # Each q was looked for among those before it in a list: 20,001 q's (0.005 % apart), 200
    # million Fraction comparisons, minutes; by dict, a fraction of a second. The bound is loose
    # (a loaded machine); the quadratic check took 3 s already at 4,000.
    import time

    data = oracles.capture([BASE + i for i in range(200)], list(range(60, 260)))
    qs = np.linspace(0, 1, 20_001)
    t = time.monotonic()
    d = burstcore.sizes(data, quantiles=qs)
    assert time.monotonic() - t < 20
    assert d.quantiles["q"].to_list() == qs.tolist()
    with pytest.raises(ValueError, match=r"quantile 1.0 is given twice"):
        burstcore.sizes(data, quantiles=[*qs, 1.0])
    with pytest.raises(ValueError, match=r"quantiles 0.5 and Fraction\(18014398509481985, 36028797018963968\) differ"):
        burstcore.sizes(data, quantiles=[*qs, Fraction(2**54 + 1, 2**55)])


# q just past 7/100, by a digit a float cannot hold: its float is 0.07, whose rank of 100 is the
# 7th; its own rank is the 8th.
_PAST_7 = "0.070000000000000000001"


def _seven_low(n: int = 100) -> tuple[list[int], list[int]]:
    """n values (n ≥ 8) of which the 7 smallest differ from the rest: (sizes, gaps) both so."""
    return [60] * 7 + [100] * (n - 7), [1] * 7 + [10**6] * (n - 7)


@pytest.mark.parametrize(
    ("q", "eighth"),
    [
        (Decimal(_PAST_7), True),
        (Fraction(7, 100), False),
        (Decimal("0.07"), False),
        (Fraction(7 * 10**40 + 1, 10**42), True),  # a denominator past Rust's 2^126
        (Fraction(1, 12), True),  # ⌈100/12⌉ = 9: the 9th of 100, with the rest
    ],
)
def test_a_decimal_or_fraction_quantile_is_read_exactly(tmp_path, q, eighth):
    # A Fraction or Decimal q was refused ("give float(q)"), though the rank ⌈q·n⌉ is of q as
    # written and these are exactly what was written: sizes, gaps (Rust's ranks) and bursts
    # (Python's) each rank q itself; the column q shows its float.
    sizes, gaps = _seven_low()
    ts = [BASE + sum(gaps[:i]) for i in range(len(gaps) + 1)]
    s = burstcore.sizes(oracles.capture([BASE + 10 * i for i in range(100)], sizes), quantiles=[q])
    assert s.quantiles.select("q", "value").rows() == [(float(q), 100 if eighth else 60)]
    g = burstcore.gaps(oracles.capture(ts, [100] * len(ts)), quantiles=[q])
    assert g.quantiles.select("lo_ns", "hi_ns").row(0) == ((524_288, 10**6) if eighth else (1, 1))
    data = oracles.capture([BASE + 10**7 * i for i in range(100)], sizes)
    b = burstcore.bursts(data, gap="1ms", quantiles=[q]).distributions.filter(pl.col("metric") == "bytes")
    assert b.select("q", "value").rows() == [(float(q), 100 if eighth else 60)]
    # The command line reads the digits written, past a float's.
    path = tmp_path / "s.pcap"
    path.write_bytes(oracles.capture([BASE + 10 * i for i in range(100)], sizes))
    if isinstance(q, Decimal):
        p = run_cli("sizes", path, "--quantiles", str(q), "-o", "-", "--table", "quantiles", "--format", "csv")
        assert p.returncode == 0, p.stderr
        assert pl.read_csv(p.stdout)["value"].to_list() == [100 if eighth else 60]


def test_a_decimal_or_fraction_quantile_outside_0_1_is_refused_as_a_float_is():
    data = oracles.capture([BASE, BASE + 10], [100, 200])
    for call in (burstcore.sizes, burstcore.gaps, burstcore.bursts):
        for q in (Decimal("1.5"), Fraction(3, 2), Decimal("-0.1"), Fraction(-1, 10), Decimal("NaN"), Decimal("Inf")):
            with pytest.raises(ValueError, match=re.escape(f"quantile {q!r} must be a number from 0 to 1")):
                call(data, quantiles=[q])
        # Two q's that differ but would be one value in the column q, and one q given twice.
        with pytest.raises(ValueError, match=r"quantiles 0.07 and Decimal\('0.070000000000000000001'\) differ"):
            call(data, quantiles=[0.07, Decimal(_PAST_7)])
        with pytest.raises(ValueError, match="is given twice"):
            call(data, quantiles=[Fraction(1, 2), Decimal("0.50")])
        with pytest.raises(ValueError, match="more than 1,000 decimal places"):
            call(data, quantiles=[Decimal("1e-999999999")])


def test_a_quantile_past_rusts_denominators_ranks_as_itself_at_every_count():
    # A q of denominator past 2^126 reaches Rust as the mediant of its neighbours among the
    # fractions of denominator < 2^64: no k/n of a uint64 n lies between them, so the ranks agree.
    from burstcore._distributions import _same_ranks

    rng = random.Random(3)
    for _ in range(200):
        den = rng.randrange(2**127, 2**200)
        q = Fraction(rng.randrange(0, den + 1), den)
        r = _same_ranks(q)
        assert r.denominator <= 2**65
        ns = [rng.randrange(1, 2**64) for _ in range(50)] + [1, 2, 2**64 - 1]
        # Where r is near q's ceiling flips: the n's just around q's closest approaches.
        ns += [x.denominator for x in (q.limit_denominator(2**64 - 1), r) if x.denominator < 2**64]
        for n in ns:
            assert -(-q.numerator * n // q.denominator) == -(-r.numerator * n // r.denominator), (q, n)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1), st.just(2**64 - 1)), max_size=8),
        min_size=1,
        max_size=40,
    )
)
@example([[2**64 - 1, 0], [5]])  # 64 bits of value and one of group: lexsort's turn
@example([[2**64 - 1, 3, 0]])  # one group: all 64 bits the value's
def test_values_sorted_within_groups_as_by_sorting_each_group(runs):
    """Bursts' order statistics sort every group's values at once (one key, group above value,
    where both fit in 64 bits; else lexsort): as sorting each group's own."""
    from burstcore._bursts import _sorted_within_groups

    values = np.array([v for run in runs for v in run], dtype=np.uint64)
    group = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    got = _sorted_within_groups(values, group, len(runs))
    assert got.dtype == np.uint64
    assert got.tolist() == [v for run in runs for v in sorted(run)]
