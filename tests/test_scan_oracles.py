"""scan() against brute-force references, polars rolling_sum_by, and the invariants of
docs/metrics.md, on random traces written with burstcore's own writer and read back."""

from __future__ import annotations

import io
import itertools
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from tests import oracles

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Timestamps clustered so ties, exact-τ gaps and bursts are common.
BASE = 1_700_000_000_000_000_000


# Gaps past 2**32 ns, where the envelope's ring must move its trails on before a packet (its
# 12-byte slots keep the low 32 bits of each timestamp; see engine/envelope.rs).
FAR_GAPS = [2**32 - 1, 2**32, 2**32 + 1, 5 * 10**9, 3600 * 10**9]


@st.composite
def traces(draw, max_n: int = 25, far: bool = False):
    n = draw(st.integers(0, max_n))
    near = [0, 0, 1, 7, 10, 100, 999, 1000, 1001, 5000, 10**6]
    gaps = draw(st.lists(st.sampled_from(near + FAR_GAPS if far else near), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n))
    ts, t = [], BASE + draw(st.integers(0, 10**6))
    for g in gaps:
        t += g
        ts.append(t)
    return ts, sizes


WINDOWS = [1, 7, 10, 100, 1000, 1001, 10**6]
RATES = [8, 1000, 8 * 10**9, 10**10, 10**12]


def _env(r: burstcore.ScanResult) -> dict[int, tuple[int, int, int]]:
    rows = r.envelope.filter(pl.col("by") == "all")
    return {w: (b, p, m) for w, b, p, m in rows.select("window_ns", "bytes", "packets", "max_packets").iter_rows()}


@SETTINGS
@given(traces(), st.sampled_from(["left", "both"]), st.sampled_from(["pcap", "pcapng"]))
def test_envelope_and_backlog_equal_brute_force(trace, closed, fmt):
    ts, sizes = trace
    data = oracles.capture(ts, sizes, fmt=fmt)
    r = burstcore.scan(data, windows=[f"{w}ns" for w in WINDOWS], rates=RATES, closed=closed)
    if not ts:
        assert r.envelope.height == 0 and r.summary["packets"][0] == 0
        return
    env = _env(r)
    for w in WINDOWS:
        eb, ep = oracles.envelope(ts, sizes, w, closed)
        assert env[w][0] == eb, (w, closed)
        assert env[w][2] == ep, (w, closed)
    bl = dict(r.backlog.filter(pl.col("by") == "all").select("rate_bps", "bmax_bytes").iter_rows())
    for rate in RATES:
        assert bl[rate] == pytest.approx(float(oracles.bmax(ts, sizes, rate)), rel=1e-12, abs=1e-9)


@SETTINGS
@given(
    traces(max_n=40, far=True),
    st.sampled_from(["left", "both"]),
    st.sampled_from([[], [2**32 - 1], [2**32], [2**32, 10**10]]),
    st.sampled_from(["pcap", "pcapng"]),
)
def test_envelope_equals_brute_force_across_gaps_past_2_32_ns(trace, closed, longest, fmt):
    # Windows up to the longest that short stamps take (reach 2**32 - 1) and past it, on traces
    # whose gaps reach past 2**32 ns: exact whichever stamps the ring keeps.
    ts, sizes = trace
    windows = [1, 1000, 10**6, 3 * 10**9, *longest]
    r = burstcore.scan(oracles.capture(ts, sizes, fmt=fmt), windows=[f"{w}ns" for w in windows], closed=closed)
    if not ts:
        return
    env = _env(r)
    for w in windows:
        assert (env[w][0], env[w][2]) == oracles.envelope(ts, sizes, w, closed), (w, closed)


@SETTINGS
@given(traces(max_n=40))
def test_reported_window_is_real(trace):
    """The reported start and packet count describe a window that really holds E(τ) bytes."""
    ts, sizes = trace
    r = burstcore.scan(oracles.capture(ts, sizes), windows=[f"{w}ns" for w in WINDOWS], rates=[10**9])
    starts = r.envelope.select("window_ns", pl.col("start").dt.epoch("ns").alias("s"), "bytes", "packets")
    for w, s, b, p in starts.iter_rows():
        inside = [L for t, L in zip(ts, sizes, strict=True) if s <= t < s + w]
        if b:
            assert sum(inside) == b and len(inside) == p
            assert s in ts


@SETTINGS
@given(traces(max_n=40), st.sampled_from(["left", "both"]))
def test_envelope_equals_polars_rolling_sum_by(trace, closed):
    ts, sizes = trace
    if not ts:
        return
    df = pl.DataFrame({"t": pl.Series(ts).cast(pl.Datetime("ns")), "L": sizes})
    r = burstcore.scan(
        (pl.Series(ts), pl.Series(sizes)), windows=[f"{w}ns" for w in WINDOWS], rates=[10**9], closed=closed
    )
    env = _env(r)
    for w in WINDOWS:
        # (t−τ, t] is a half-open window of length τ in integer ns; [t−τ, t] a closed one.
        rolled = df.select(
            pl.col("L").rolling_sum_by("t", window_size=f"{w}ns", closed="right" if closed == "left" else "both")
        )
        assert env[w][0] == rolled["L"].max()


@SETTINGS
@given(traces(max_n=40), st.sampled_from([1, 10, 1000, 10**6]))
def test_series_equal_direct_binning(trace, width):
    ts, sizes = trace
    r = burstcore.scan(
        oracles.capture(ts, sizes), windows=["1us"], rates=[10**9], bins=[f"{width}ns"], fill_empty_bins=False
    )
    got = {s: (b, p) for s, b, p in r.series.select("start_ns", "bytes", "packets").iter_rows()}
    assert got == oracles.binned(ts, sizes, width)


@SETTINGS
@given(traces(max_n=40))
def test_invariants(trace):
    ts, sizes = trace
    if len(ts) < 2:
        return
    windows = sorted({1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10**4, 10**5, 10**6, 10**7})
    rates = [10**6, 10**7, 10**8, 10**9, 10**10, 10**11]
    r = burstcore.scan(oracles.capture(ts, sizes), windows=[f"{w}ns" for w in windows], rates=rates, closed="both")
    env = _env(r)
    e = [env[w][0] for w in windows]
    assert e == sorted(e), "E non-decreasing"
    for a in windows:
        for b in windows:
            if a + b in env:
                assert env[a + b][0] <= env[a][0] + env[b][0], "sub-additive"
    span = max(ts) - min(ts)
    for w in windows:
        if w > span:
            assert env[w][0] == sum(sizes)
    bl = [v for _, v in sorted(r.backlog.select("rate_bps", "bmax_bytes").iter_rows())]
    assert all(x >= y - 1e-9 for x, y in itertools.pairwise(bl)), "B_max non-increasing in r"
    assert all(b >= max(sizes) - 1e-9 for b in bl), "B_max ≥ L_max"
    slopes = [(b2 - b1) / (r2 - r1) for (r1, b1), (r2, b2) in itertools.pairwise(zip(rates, bl, strict=True))]
    assert all(s1 <= s2 + 1e-9 for s1, s2 in itertools.pairwise(slopes)), "B_max convex in r"
    if span > 0 and sum(sizes) > 0:
        near = burstcore.scan(oracles.capture(ts, sizes), windows=[f"{span + 1}ns"], rates=[10**9])
        assert near.envelope["ptm"][0] == pytest.approx(span / (span + 1)), "PtM → 1 as τ → span"
    # B_max(r) = sup_τ (E_closed(τ) − rτ), exact over the pairwise gaps.
    gaps = sorted({b - a for a in ts for b in ts if b >= a})
    r2 = burstcore.scan(
        oracles.capture(ts, sizes), windows=[f"{g}ns" for g in gaps if g > 0], rates=rates, closed="both"
    )
    env2 = _env(r2)
    e_at = {0: max(sum(L for t, L in zip(ts, sizes, strict=True) if t == x) for x in ts)}
    e_at.update({g: env2[g][0] for g in gaps if g > 0})
    for rate, b in zip(rates, bl, strict=True):
        sup = max(Fraction(e_at[g]) - Fraction(rate * g, 8 * 10**9) for g in gaps)
        assert b == pytest.approx(float(sup), rel=1e-12, abs=1e-9)


@SETTINGS
@given(traces(max_n=30), st.randoms(use_true_random=False))
def test_out_of_order_within_horizon_equals_sorted(trace, rnd):
    ts, sizes = trace
    pairs = list(zip(ts, sizes, strict=True))
    shuffled = pairs[:]
    # Displace packets by less than the horizon.
    shuffled.sort(key=lambda p: p[0] + rnd.randint(0, 500))
    sts, ssz = [p[0] for p in shuffled], [p[1] for p in shuffled]
    kw = dict(windows=["1ns", "100ns", "1us", "1ms"], rates=[10**9, 10**10], bins=["1us"], reorder_horizon="1us")
    a = burstcore.scan(oracles.capture(ts, sizes), **kw)
    b = burstcore.scan(oracles.capture(sts, ssz), **kw)
    assert a.envelope.drop("start", "packets").equals(b.envelope.drop("start", "packets"))
    assert a.backlog.equals(b.backlog) or a.backlog.drop("peak").equals(b.backlog.drop("peak"))
    assert a.series.equals(b.series)
    out_of_order = sum(1 for i in range(1, len(sts)) if sts[i] < max(sts[:i]))
    assert b.summary["reordered"][0] == out_of_order


def test_late_packet_raises_or_is_dropped_and_counted():
    ts = [BASE, BASE + 10**9, BASE + 10**6]  # the last is 999 ms late
    data = oracles.capture(ts, [100, 100, 100])
    with pytest.raises(burstcore.OutOfOrderError) as e:
        burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], reorder_horizon="10ms")
    # By how much the packet read before it is later, and the two instants as start=/end= take
    # them (as ISO 8601 to the ns, the late packet's last, where the offset follows it).
    assert str(e.value) == (
        f"a packet 999ms earlier than one read before it (of {_iso(BASE + 10**9)}), beyond the reorder horizon of "
        "10ms: raise reorder_horizon to at least 999ms, or drop late packets (on_late='drop'). The late packet: "
        f"{_iso(BASE + 10**6)} at byte offset {e.value.offset}"
    )
    # The duration it names is enough.
    r = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], reorder_horizon="999ms")
    assert r.summary["packets"][0] == 3
    r = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], reorder_horizon="10ms", on_late="drop")
    s = r.summary.row(0, named=True)
    assert s["skipped_late"] == 1 and s["packets"] == 2 and s["packets_read"] == 3


def _iso(ns: int) -> str:
    """An instant as ISO 8601 to the ns, from numpy's calendar (not burstcore's)."""
    return f"{np.datetime_as_string(np.datetime64(ns, 'ns'), unit='ns')}Z"


def test_a_stray_packet_far_ahead_is_told_how_to_leave_out():
    # tcpdump's kday2.pcap: one packet 24 days ahead of the four around it. on_late='drop', the
    # old message's first advice, drops the three good packets after it and keeps the stray;
    # end= at the stray's instant, which the message now names, keeps the four good ones.
    good = [BASE, BASE + 21_000, BASE + 40_000, BASE + 41_000]
    stray = BASE + 2_097_152 * 10**9
    data = oracles.capture([good[0], stray, *good[1:]], [100] * 5, fmt="pcap")
    with pytest.raises(burstcore.OutOfOrderError) as e:
        burstcore.scan(data, windows=["1ms"], rates=["1Gbps"])
    told = str(e.value)
    assert f"leave it out with end='{_iso(stray)}'" in told, told
    # The third record: after the 24-byte file header, two of 16 + 14 bytes (14 captured).
    assert told.endswith(f"The late packet: {_iso(good[1])} at byte offset 84"), told
    dropped = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], on_late="drop").summary.row(0, named=True)
    assert (dropped["packets"], dropped["skipped_late"]) == (2, 3)
    r = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], end=_iso(stray)).summary.row(0, named=True)
    assert (r["packets"], r["skipped_outside_range"], r["first_ns"], r["last_ns"]) == (4, 1, good[0], good[-1])


def test_a_late_packet_is_found_at_its_offset(tmp_path):
    # 200,000 packets 1 µs apart (long enough for threads to split the scan), one of them 50 ms
    # early; each pcap record is 16 + 14 bytes after the 24-byte file header. Whichever way the
    # scan runs, the error says where that packet is.
    n, k = 200_000, 123_457
    ts = [BASE + i * 1000 for i in range(n)]
    ts[k] -= 50_000_000
    data = oracles.capture(ts, [100] * n, fmt="pcap")
    path = tmp_path / "late.pcap"
    path.write_bytes(data)
    for source in (str(path), data):
        for threads in (1, 2):
            with pytest.raises(burstcore.OutOfOrderError) as e:
                burstcore.scan(source, windows=["1ms", "1s"], rates=["1Gbps"], threads=threads)
            assert e.value.offset == 24 + 30 * k, (type(source), threads, str(e.value))
            assert str(e.value).endswith(f"at byte offset {24 + 30 * k}")


class _Unseekable(io.RawIOBase):
    """A stream over a file object that cannot seek (as a pipe or a socket): read() only."""

    def __init__(self, inner: io.BufferedIOBase) -> None:
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        data = self.inner.read(len(b))
        b[: len(data)] = data
        return len(data)


def test_a_late_packet_in_a_seekable_file_object_is_found_at_its_offset(tmp_path):
    # As test_a_late_packet_is_found_at_its_offset, from a file object that stands after 100
    # bytes of something else: one that can seek is read again from there (offsets count from
    # where it stood, as every error's do), then left where the failed scan left it, as a
    # stream that cannot seek is left, which gives no offset.
    n, k = 200_000, 123_457
    ts = [BASE + i * 1000 for i in range(n)]
    ts[k] -= 50_000_000
    data = oracles.capture(ts, [100] * n, fmt="pcap")
    prefix = b"\xee" * 100
    path = tmp_path / "late-after-100.bin"
    path.write_bytes(prefix + data)
    kw = dict(windows=["1ms", "1s"], rates=["1Gbps"])
    for threads in (1, 2):
        for opened in (lambda: io.BytesIO(prefix + data), lambda: open(path, "rb")):
            with opened() as f:
                f.seek(100)
                with pytest.raises(burstcore.OutOfOrderError) as stream:
                    burstcore.scan(_Unseekable(f), threads=threads, **kw)
                assert stream.value.offset is None
                left = f.tell()
            with opened() as f:
                f.seek(100)
                assert f.seekable()
                with pytest.raises(burstcore.OutOfOrderError) as e:
                    burstcore.scan(f, threads=threads, **kw)
                assert e.value.offset == 24 + 30 * k, (type(f), threads, str(e.value))
                assert str(e.value).endswith(f"at byte offset {24 + 30 * k}")
                assert f.tell() == left > 100
                # The error is the same as without the second look, but for the offset.
                assert str(e.value).startswith(str(stream.value))

    class OnlyOnce(io.BytesIO):
        """Seekable, but its read() raises once it is asked to read from the start again."""

        def read(self, n: int | None = -1) -> bytes:
            if self.tell() == 0 and getattr(self, "done", False):
                raise RuntimeError("read twice")
            self.done = True
            return super().read(n)

    # A second look that fails leaves the scan's own error, without an offset.
    with pytest.raises(burstcore.OutOfOrderError) as e:
        burstcore.scan(OnlyOnce(data), **kw)
    assert e.value.offset is None


def test_empty_and_single_packet():
    r = burstcore.scan(oracles.capture([], []), windows=["1ms"], rates=["1Gbps"])
    assert r.summary["packets"][0] == 0 and r.envelope.height == 0
    r = burstcore.scan(oracles.capture([BASE], [1500]), windows=["1ms"], rates=["1Gbps"])
    row = r.envelope.row(0, named=True)
    assert row["bytes"] == 1500 and row["ptm"] is None  # zero span: ρ undefined, no division by zero
    assert r.backlog["bmax_bytes"][0] == 1500
    # No span, no ρ: the default rates are the link-speed grid, and say so.
    d = burstcore.scan(oracles.capture([BASE], [1500]), windows=["1ms"])
    assert d.config["rates"].startswith("link-speed grid") and d.config["rates_bps"][:2] == [10**8, 10**9]


HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5000), st.sampled_from(HOSTS), st.sampled_from(HOSTS), st.integers(0, 800)),
        max_size=30,
    )
)
def test_groups_equal_brute_force_per_group(pkts):
    pkts.sort(key=lambda p: p[0])
    frames = [oracles.eth_ipv4_udp(s, d, 1000, 2000, payload=pl_) for _, s, d, pl_ in pkts]
    ts = [BASE + p[0] for p in pkts]
    sizes = [len(f) for f in frames]
    r = burstcore.scan(
        oracles.capture(ts, sizes, frames=frames), windows=["1us", "100ns"], rates=[10**9], by=["src", "pair", "all"]
    )
    for by, keyf in (("src", lambda p: p[1]), ("pair", lambda p: f"{p[1]}>{p[2]}"), ("all", lambda p: "all")):
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(pkts):
            groups.setdefault(keyf(p), []).append(i)
        env = r.envelope.filter(pl.col("by") == by)
        assert set(env["group"]) == set(groups)
        for g, idx in groups.items():
            gts, gsz = [ts[i] for i in idx], [sizes[i] for i in idx]
            for w in (100, 1000):
                row = env.filter((pl.col("group") == g) & (pl.col("window_ns") == w))
                assert row["bytes"][0] == oracles.envelope(gts, gsz, w)[0]
        gsum = r.groups.filter(pl.col("by") == by)
        assert gsum["packets"].sum() == len(pkts)


def test_several_files_merge_exactly_in_time_order():
    a_ts, b_ts = [BASE + 10, BASE + 30, BASE + 50], [BASE + 20, BASE + 30, BASE + 60]
    a = oracles.capture(a_ts, [100, 200, 300])
    b = oracles.capture(b_ts, [1, 2, 3], fmt="pcap")
    kw = dict(windows=["10ns", "11ns", "100ns"], rates=[8 * 10**9], bins=["20ns"], by=["all", "interface"])
    merged = burstcore.scan([a, b], **kw)
    ts = a_ts + b_ts
    sizes = [100, 200, 300, 1, 2, 3]
    for w in (10, 11, 100):
        row = merged.envelope.filter((pl.col("by") == "all") & (pl.col("window_ns") == w))
        assert row["bytes"][0] == oracles.envelope(ts, sizes, w)[0]
    # interfaces of the second file are numbered after those of the first
    per_if = dict(merged.groups.filter(pl.col("by") == "interface").select("group", "bytes").iter_rows())
    assert per_if == {"if0": 600, "if1": 6}
    cols = burstcore.scan((pl.Series(ts), pl.Series(sizes)), **{**kw, "by": ["all"]})
    assert_frame_equal(cols.envelope, merged.envelope.filter(pl.col("by") == "all"))
    assert_frame_equal(cols.backlog, merged.backlog.filter(pl.col("by") == "all"))


def test_l1_counts_the_ethernet_frame_of_any_link():
    # The same IP packets captured on Ethernet, Linux cooked (v1, v2), raw IP and BSD loopback:
    # each takes its Ethernet frame on an Ethernet wire (the 14-byte header, padding to 60 B, FCS,
    # preamble and gap), whatever header the capture put in front.
    ips = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=p)[14:] for p in (0, 10, 18, 19, 1000)]
    want = sum(max(len(ip) + 14, 60) + 4 + 20 for ip in ips)
    links = {1: b"\x02" * 12 + b"\x08\x00", 113: b"\x00" * 14 + b"\x08\x00", 276: b"\x08\x00" + b"\x00" * 18}
    links |= {101: b"", 0: (2).to_bytes(4, "little")}
    for linktype, header in links.items():
        w = burstcore.CaptureWriter("pcapng")
        w.section("little")
        w.interface(linktype=linktype, snaplen=0, resolution="1e-9")
        for i, ip in enumerate(ips):
            w.epb(0, header + ip, ts_ns=BASE + i * 1000)
        r = burstcore.scan(w.getvalue(), windows=["1ms"], rates=["1Gbps"], size="l1")
        assert r.summary["bytes"][0] == want, linktype
        assert r.summary["packets"][0] == len(ips), linktype


def test_a_pair_of_captures_is_two_captures_not_two_columns(tmp_path):
    a = oracles.capture([BASE + 10, BASE + 50], [100, 300])
    b = oracles.capture([BASE + 20, BASE + 60], [1, 3], fmt="pcap")
    (tmp_path / "a.pcapng").write_bytes(a)
    (tmp_path / "b.pcap").write_bytes(b)
    kw = dict(windows=["10ns", "100ns"], rates=[8 * 10**9])
    want = burstcore.scan([a, b], **kw)
    paths = (tmp_path / "a.pcapng", tmp_path / "b.pcap")
    with open(paths[0], "rb") as fa, open(paths[1], "rb") as fb:
        for pair in (paths, tuple(map(str, paths)), (a, b), (bytearray(a), b), (fa, fb)):
            got = burstcore.scan(pair, **kw)
            assert_frame_equal(got.envelope, want.envelope)
            assert got.summary["packets"][0] == 4


def test_in_memory_columns_refuse_what_they_cannot_mean():
    df = pl.DataFrame({"timestamp": [1, 2, 3], "size": [100, 200, 300], "interface": [0, 1, 1]})
    assert burstcore.scan(df, windows=["1us"], rates=["1Gbps"], by="interface").groups.height == 2
    for bad in ([0, None, 1], [0, -1, 1], [0, 2**32, 1], [0.5, 1.0, 1.0]):
        with pytest.raises(ValueError, match="'interface' column must hold integers"):
            burstcore.scan(df.with_columns(interface=pl.Series(bad)), windows=["1us"], rates=["1Gbps"])
    # Sizes read from headers need packets: columns carry their own.
    with pytest.raises(ValueError, match="in-memory columns carry their own sizes"):
        burstcore.scan(df, windows=["1us"], rates=["1Gbps"], size="ip")


def test_in_memory_columns_accept_numpy_polars_and_datetimes():
    import numpy as np

    ts = np.array([5, 1, 9, 12], dtype=np.int64) + BASE
    sz = np.array([10, 20, 30, 40], dtype=np.uint32)
    a = burstcore.scan((ts, sz), windows=["4ns"], rates=["1Gbps"])
    b = burstcore.scan(
        pl.DataFrame({"timestamp": pl.Series(ts).cast(pl.Datetime("ns")), "size": sz}), windows=["4ns"], rates=["1Gbps"]
    )
    assert a.envelope.equals(b.envelope)
    assert a.envelope["bytes"][0] == oracles.envelope(sorted(ts.tolist()), [20, 10, 30, 40], 4)[0]
    assert a.summary["reordered"][0] == 1
    with pytest.raises(ValueError, match="'size'"):
        burstcore.scan({"timestamp": ts}, windows=["1ms"])
    with pytest.raises(ValueError, match="in-memory columns carry no headers"):
        burstcore.scan((ts, sz), windows=["1ms"], rates=["1Gbps"], by="src")


@settings(max_examples=25, deadline=None)
@given(
    st.one_of(traces(max_n=60), traces(max_n=60, far=True)),
    st.integers(2, 5),
    st.sampled_from(["left", "both"]),
)
def test_threads_give_identical_results(trace, threads, closed):
    ts, sizes = trace
    frames = [
        oracles.eth_ipv4_udp("10.0.0.1", f"10.0.0.{2 + i % 3}", 1000 + i % 2, 2000, payload=8) for i in range(len(ts))
    ]
    data = oracles.capture(ts, [len(f) + s for f, s in zip(frames, sizes, strict=True)], frames=frames)
    kw = dict(
        windows=["1ns", "10ns", "1us", "1ms"],
        rates=[10**6, 10**9, 10**10],
        bins=["100ns", "1us"],
        by=["all", "pair", "flow"],
    )
    one = burstcore.scan(data, threads=1, closed=closed, **kw)
    many = burstcore.scan(data, threads=threads, closed=closed, **kw)
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert getattr(one, name).equals(getattr(many, name)), name


def test_threads_identical_on_a_real_capture():
    from tests.conftest import shared_file

    path = str(shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng"))
    kw = dict(rates=["1Gbps", "10Gbps", "40Gbps"], bins=["1ms"], by=["all", "src", "flow"])
    one = burstcore.scan(path, threads=1, **kw)
    two = burstcore.scan(path, threads=2, **kw)
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert getattr(one, name).equals(getattr(two, name)), name
    # a late packet stops both in the same way
    late = oracles.capture([BASE, BASE + 10**9, BASE], [1, 1, 1])
    for th in (1, 2):
        with pytest.raises(burstcore.OutOfOrderError):
            burstcore.scan(late, windows=["1ms", "2ms"], rates=["1Gbps"], threads=th)


def test_default_rates_are_multiples_of_the_mean_rate_of_the_size_counted():
    # Non-IP frames first and last (no "ip" or "payload" size: skipped, and outside those sizes'
    # span), UDP frames between, some captured short: each size has its own ΣL and span.
    arp = b"\xff" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\x00" * 28
    udp = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=p) for p in (1000, 40, 1400, 0, 600)]
    frames = [arp, *udp, arp]
    ts = [BASE + t for t in (0, 5_000, 7_000, 20_000, 21_000, 40_000, 90_000)]
    snap = 200
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=1, snaplen=snap, resolution="1e-9")
    for t, f in zip(ts, frames, strict=True):
        w.epb(0, f[:snap], ts_ns=t, wire_len=len(f))
    data = w.getvalue()
    per_size = {
        "wire": [(t, len(f)) for t, f in zip(ts, frames, strict=True)],
        "captured": [(t, min(len(f), snap)) for t, f in zip(ts, frames, strict=True)],
        "l1": [(t, max(len(f), 60) + 4 + 20) for t, f in zip(ts, frames, strict=True)],
        "ip": [(t, len(f) - 14) for t, f in zip(ts[1:-1], udp, strict=True)],
        "payload": [(t, len(f) - 14 - 20 - 8) for t, f in zip(ts[1:-1], udp, strict=True)],
    }
    for size, pkts in per_size.items():
        total, span = sum(L for _, L in pkts), pkts[-1][0] - pkts[0][0]
        rho = total * 8 * 10**9 / span
        r = burstcore.scan(data, windows=["1us"], size=size)
        assert r.summary["packets"][0] == len(pkts), size
        assert r.backlog["rate_bps"].to_list() == [round(rho * m) for m in (1.1, 1.25, 1.5, 2, 3, 5, 10, 20)], size
        assert r.backlog["rate_over_mean"].to_list() == pytest.approx([1.1, 1.25, 1.5, 2, 3, 5, 10, 20]), size


def test_ptm_of_one_window_and_what_was_not_scanned():
    ts = [BASE + i * 1000 for i in range(20)]
    r = burstcore.scan(
        oracles.capture(ts, [100] * 20), windows=["5us", "1ms"], rates=["1Gbps"], by=["all", "interface"]
    )
    got = r.ptm("5us")
    row = r.envelope.filter((pl.col("by") == "all") & (pl.col("window_ns") == 5000))
    assert got.to_dicts() == row.select("group", "bytes", "peak_rate_bps", "ptm").to_dicts()
    assert r.ptm("5us", by="interface")["group"].to_list() == ["if0"]
    with pytest.raises(ValueError, match="was not scanned; the scan's windows: 5us, 1ms"):
        r.ptm("5ms")
    with pytest.raises(ValueError, match="by='pair' was not scanned; the scan's groupings: all, interface"):
        r.ptm("5us", by="pair")


def test_info_mean_rate_is_scans_and_says_why_packets_lack_a_time():
    # Two timed packets, one Simple Packet Block (no timestamp) and one timestamp past the int64
    # ns range: info's mean rate is the timed packets' (scan's ρ), and the text tells the two
    # kinds of untimed packets apart.
    w = burstcore.CaptureWriter("pcapng")
    w.interface(resolution="1e-9")
    w.epb(0, b"\x00" * 60, ts_ns=BASE)
    w.spb(b"\x00" * 500)
    w.epb(0, b"\x00" * 70, ts_raw=2**63 + 5)
    w.epb(0, b"\x00" * 100, ts_ns=BASE + 1000)
    data = w.getvalue()
    i = burstcore.info(data)
    assert (i.packets, i.packets_without_timestamp, i.timestamps_out_of_range) == (4, 2, 1)
    assert i.mean_rate_bps == pytest.approx((60 + 100) * 8 * 1e9 / 1000)
    r = burstcore.scan(data, windows=["1us"], rates=["1Gbps"])
    assert i.mean_rate_bps == pytest.approx(r.groups["mean_rate_bps"][0])
    assert "Without timestamp:   2 (1 in Simple Packet Blocks, 1 out of the int64 ns range)" in str(i)


def test_info_tells_of_unknown_blocks():
    # Skipped, as the pcapng spec asks; a damaged block type reads as one, so info says so.
    w = burstcore.CaptureWriter("pcapng")
    w.interface()
    w.epb(0, b"\x00" * 60, ts_ns=BASE)
    w.raw_block(0x1234, b"\x00" * 8)
    i = burstcore.info(w.getvalue())
    assert i.blocks["unknown"] == 1 and i.packets == 1
    assert "Unknown blocks:      1 (skipped" in str(i)
    plain = burstcore.CaptureWriter("pcapng")
    plain.interface()
    assert "Unknown blocks" not in str(burstcore.info(plain.getvalue()))


def test_info_counts_steps_back_where_scan_counts_packets_behind_the_latest():
    # One packet stamped ahead of its neighbours: one step back in the file, three packets that
    # came after a later one for the scan (as info's and scan's docs say).
    data = oracles.capture([1000, 5000, 2000, 3000, 4000, 6000], [100] * 6)
    i = burstcore.info(data)
    assert (i.out_of_order, i.max_step_back_ns) == (1, 3000)
    s = burstcore.scan(data, windows=["1us"], rates=["1Gbps"]).summary
    assert (s["reordered"][0], s["max_lateness_ns"][0]) == (3, 3000)
