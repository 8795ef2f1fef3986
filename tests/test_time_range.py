"""start=/end=: a scan or an analysis of [start, end) is that of the capture cut to it, its ρ is
over the stretch itself, and every packet left out is counted."""

from __future__ import annotations

import calendar
import datetime as dt
import json
import re
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from burstcore._units import parse_instant, parse_time_range
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
    # The series: the cut capture's bins, and zero bins out to the edges of the range, which ρ is
    # over too (from the bin holding start, to the one holding end - 1 ns).
    busy = pl.col("bytes") > 0
    assert_frame_equal(r.series.filter(busy), cut.series.filter(busy))
    w = 1_000_000
    for (by, group), rows in r.series.group_by("by", "group"):
        own = cut.series.filter((pl.col("by") == by) & (pl.col("group") == group))["start_ns"]
        lo_k = own.min() // w if lo is None else lo // w
        hi_k = own.max() // w if hi is None else (hi - 1) // w
        assert sorted(rows["start_ns"].to_list()) == [k * w for k in range(lo_k, hi_k + 1)]
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


@st.composite
def iso_instants(draw):
    """An instant anywhere in int64 ns, and an ISO 8601 string of it written with datetime and
    divmod: in a zone of any offset (Z, z, ±hh, ±hhmm, ±hh:mm or none), extended or basic, with
    the fractional digits it needs and maybe more zeros."""
    ns = draw(st.integers(-(2**63), 2**63 - 1))
    zone = draw(st.sampled_from(["", "Z", "z", "hh", "hhmm", "hh:mm"]))
    if zone in ("", "Z", "z"):
        minutes = 0
    elif zone == "hh":
        minutes = 60 * draw(st.integers(-23, 23))
    else:
        minutes = draw(st.integers(-(24 * 60 - 1), 24 * 60 - 1))
    seconds, fraction = divmod(ns + minutes * 60 * 10**9, 10**9)
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    text = local.strftime(draw(st.sampled_from(["%Y-%m-%dT%H:%M:%S", "%Y%m%dT%H%M%S"])))
    text = text.replace("T", draw(st.sampled_from(["T", "t", " "])))
    digits = f"{fraction:09d}".rstrip("0") + "0" * draw(st.integers(0, 12))
    if digits:
        text += draw(st.sampled_from([".", ","])) + digits
    if zone in ("Z", "z"):
        text += zone
    elif zone:
        h, m = divmod(abs(minutes), 60)
        sign = "-" if minutes < 0 else "+"
        text += {"hh": f"{sign}{h:02d}", "hhmm": f"{sign}{h:02d}{m:02d}", "hh:mm": f"{sign}{h:02d}:{m:02d}"}[zone]
    return text, ns


@settings(max_examples=300, deadline=None)
@given(iso_instants())
def test_iso_instants_are_exact_to_the_ns_in_any_zone(case):
    # An offset dropped the ns below the µs (datetime read it), ±hh and a lowercase z reached
    # numpy, which warned (UserWarning: no explicit representation of timezones) or refused.
    text, ns = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_instant(text, name="start") == ns
        assert parse_time_range(text, None) == (ns, None)


def test_instants_with_a_zone_keep_every_ns():
    cases = [
        ("2026-01-01T01:00:01.500000001+01:00", (2026, 1, 1, 0, 0, 1, 500_000_001)),  # was ...01.5Z
        ("2026-01-01T01:00:01-05", (2026, 1, 1, 6, 0, 1, 0)),  # numpy warned
        ("2026-01-01T00:00:01.5z", (2026, 1, 1, 0, 0, 1, 500_000_000)),  # refused
        ("2025-12-31T23:30:00.000000007-0130", (2026, 1, 1, 1, 0, 0, 7)),
        ("2024-02-29t12:00", (2024, 2, 29, 12, 0, 0, 0)),
        ("2026-W01-4T00:00:00+00:00", (2026, 1, 1, 0, 0, 0, 0)),  # the week of 1 January, Thursday
        ("2026-01-01Z", (2026, 1, 1, 0, 0, 0, 0)),
    ]
    for text, (*civil, ns) in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert parse_instant(text, name="start") == calendar.timegm((*civil, 0, 0, 0)) * 10**9 + ns, text


OUTSIDE = r"is outside int64 nanoseconds since 1970 \(1677-09-21 to 2262-04-11\)"


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59Z",  # was read as 1816-03-30
        "2262-04-12",  # was read as 1677-09-21
        "2262-04-11T23:47:16.854775808Z",  # int64's highest ns plus one
        "2262-04-11T23:47:16.854775807-00:01",  # int64's highest ns plus a minute, in UTC
        "1677-09-21T00:12:43.145224191Z",  # int64's lowest ns minus one
        "1677-09-21T00:12:43.145224192+00:01",
        "+10000-01-01",
        "0000-01-01",
        "-0001-01-01",
        "+" + "9" * 5000,  # past int()'s 4300 digits
        np.datetime64("9999-12-31"),
        np.datetime64(18_446_744_074, "s"),  # 2^64 ns and 0.29 s: astype('M8[ns]') wrapped it to 1970
        np.datetime64(10**17, "Y"),
        np.datetime64(-(10**16), "M"),
    ],
)
def test_instants_outside_int64_ns_are_refused_not_wrapped(value):
    with pytest.raises(ValueError, match=rf"end={re.escape(repr(value)[:50])}.* {OUTSIDE}"):
        parse_time_range(None, value)


def test_pandas_timestamps_outside_int64_ns_are_refused():
    import pandas as pd

    # Timestamp.value raised OverflowError where the unit is coarser than ns.
    for t in (pd.Timestamp("9999-12-31"), pd.Timestamp("2262-04-12").as_unit("s")):
        with pytest.raises(ValueError, match=OUTSIDE):
            parse_instant(t, name="end")
    assert parse_instant(pd.Timestamp("2262-04-11").as_unit("s"), name="end") == 2**63 - 2**63 % (86_400 * 10**9)
    assert parse_instant(pd.Timestamp("2026-01-01T00:00:00.000000001+01:00"), name="end") == (
        calendar.timegm((2025, 12, 31, 23, 0, 0, 0, 0, 0)) * 10**9 + 1
    )


def test_a_scan_refuses_an_end_past_2262():
    data = _capture([BASE, BASE + 10], [100, 100], [("10.0.0.1", "10.0.0.2")] * 2)
    # The end was read as 1816-03-30: a scan of nothing, without a word.
    with pytest.raises(ValueError, match=rf"end='9999-12-31T23:59:59Z' {OUTSIDE}"):
        burstcore.scan(data, windows="1us", rates="1Gbps", end="9999-12-31T23:59:59Z")


def test_int64s_edges_are_instants_in_every_form():
    lo, hi = -(2**63), 2**63 - 1
    assert parse_instant("1677-09-21T00:12:43.145224192Z", name="start") == lo  # numpy's NaT
    assert parse_instant("1677-09-21T01:12:43.145224192+01:00", name="start") == lo
    assert parse_instant("2262-04-11T23:47:16.854775807Z", name="end") == hi
    assert parse_instant(np.datetime64(hi, "ns"), name="end") == hi
    assert parse_instant(lo, name="start") == lo
    for bad in (hi + 1, lo - 1, np.uint64(2**64 - 1), dt.datetime(9999, 12, 31)):
        with pytest.raises(ValueError, match=OUTSIDE):
            parse_instant(bad, name="end")
    # The empty range's message names int64's lowest ns, not NaT.
    with pytest.raises(ValueError, match=r"start \(1677-09-21T00:12:43.145224192Z\) is not before end"):
        parse_time_range(lo, lo)


def test_digits_below_the_ns_are_refused_not_rounded():
    # Refused, not rounded: burstcore is exact to the ns, and a range cut a fraction of a ns off
    # another is none of its own. A 10th digit was wrapped (to 1969-11-19), ps truncated.
    finer = "has more than nanosecond precision; burstcore works in integer ns"
    for value in (
        "2026-01-01T00:00:01.5000000001Z",
        "2026-01-01T01:00:01.0000000000001+01:00",
        np.datetime64(1500, "ps"),
    ):
        with pytest.raises(ValueError, match=re.escape(finer)):
            parse_instant(value, name="start")
    # Zeros below the ns are the same instant.
    assert parse_instant("2026-01-01T00:00:01.500000001000000Z", name="start") == 1_767_225_601_500_000_001
    assert parse_instant(np.datetime64(2000, "ps"), name="start") == 2
    assert parse_instant(np.datetime64(3, "10s"), name="start") == 30 * 10**9


def test_no_such_instant():
    cases = [
        ("2026-02-29", "is no date and time of day"),
        ("2026-01-01T24:00:00", "is no date and time of day"),
        ("2026-12-31T23:59:60Z", "is no date and time of day"),  # ns since 1970 count no leap second
        ("2026-01-01T00:00:00+24:00", "is no date and time of day"),
        ("now", "is not an instant"),  # numpy's, to the second
        ("1767225600000000000", "is not an instant"),  # not a year: ns are an int
        ("2026-01-01T00.5", "is not an instant"),
        ("2026-01-01+01:00", "is not an instant"),
    ]
    for value, message in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=re.escape(f"start={value!r} {message}; give a datetime")):
                parse_instant(value, name="start")


def test_nat_is_no_instant():
    import pandas as pd

    # pandas' NaT is a datetime whose .value is int64's lowest: it was read as 1677-09-21.
    for nat in (pd.NaT, np.datetime64("NaT"), np.datetime64("NaT", "ns")):
        with pytest.raises(ValueError, match="is NaT, not an instant"):
            parse_instant(nat, name="start")


# int64's lowest and highest ns since 1970, written out by hand (pandas' Timestamp.min and .max).
LOWEST_TEXT = "1677-09-21T00:12:43.145224192"
HIGHEST_TEXT = "2262-04-11T23:47:16.854775807"


def test_instants_shown_exactly_at_int64_ends():
    from burstcore._units import format_instant

    assert format_instant(-(2**63)) == LOWEST_TEXT
    assert format_instant(2**63 - 1) == HIGHEST_TEXT
    assert format_instant(-1) == "1969-12-31T23:59:59.999999999"
    assert format_instant(0) == "1970-01-01T00:00:00.000000000"
    assert format_instant(1_796_006_910_984_800_000) == "2026-11-30T02:48:30.984800000"


def test_lowest_instant_is_shown_not_nat(tmp_path):
    """A pcapng offset of -9223372037 s and 145224192 ns ticks is int64's lowest, a real instant
    (1677): the summaries showed it as 'NaT', numpy's name for that int64."""
    offset_s, ticks = -9_223_372_037, 145_224_192
    assert offset_s * 10**9 + ticks == -(2**63)
    w = burstcore.CaptureWriter("pcapng")
    w.interface(resolution="1e-9", ts_offset_s=offset_s)
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=18)
    w.epb(0, frame, ts_raw=ticks)
    w.epb(0, frame, ts_raw=ticks + 1)
    path = tmp_path / "lowest.pcapng"
    path.write_bytes(w.getvalue())

    text = str(burstcore.info(str(path)))
    assert f"First packet:        {LOWEST_TEXT}Z" in text, text
    assert "NaT" not in text

    from tests.test_cli import run_cli

    for command in ("scan", "bursts", "flows"):
        out = run_cli(command, path).stdout.decode()
        assert LOWEST_TEXT in out and "NaT" not in out, (command, out)


def test_info_names_the_interface_offset():
    """Every time of an interface with an if_tsoffset has it added: the summary says so, with its
    sign (an offset is signed), and says nothing for the usual 0."""
    w = burstcore.CaptureWriter("pcapng")
    w.interface(resolution="1e-9", ts_offset_s=-5)
    w.interface(resolution="2^-30", ts_offset_s=1_700_000_000)
    w.interface(resolution="1e-6")
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000)
    for k in range(3):
        w.epb(k, frame, ts_raw=10**9)
    lines = str(burstcore.info(w.getvalue())).splitlines()
    ifaces = [line for line in lines if line.startswith("  #")]
    assert "resolution 1e-9, if_tsoffset -5 s (added), 1 packet" in ifaces[0], ifaces
    assert "resolution 2^-30, if_tsoffset +1700000000 s (added), 1 packet" in ifaces[1], ifaces
    assert "if_tsoffset" not in ifaces[2], ifaces


def test_numpy_time_arrays_of_any_unit_as_columns():
    """In-memory timestamps as numpy datetime64 of any fixed unit are read exactly: polars refused
    all but D, ms, us and ns ('incorrect NumPy datetime resolution' for s, ps, ...)."""
    secs = [calendar.timegm((2026, 11, 30, 2, 48, 30)), calendar.timegm((2026, 11, 30, 2, 48, 31))]
    expected = [s * 10**9 for s in secs]
    sizes = np.array([100, 200], dtype=np.uint64)
    as_s = np.array(secs, dtype="datetime64[s]")
    for src in ((as_s, sizes), {"timestamp": as_s, "size": sizes}):
        r = burstcore.scan(src, windows=["1s"], rates=["1Gbps"])
        assert r.summary.select(pl.col("first", "last").dt.epoch("ns")).row(0) == tuple(expected)
    # 1,500,000 ps is 1,500 ns; a tenth of a ns more is below what burstcore keeps.
    r = burstcore.scan(
        (np.array([1_500_000, 3_000_000], dtype="datetime64[ps]"), sizes), windows=["1us"], rates=["1Gbps"]
    )
    assert r.summary.select(pl.col("first", "last").dt.epoch("ns")).row(0) == (1_500, 3_000)
    refused = [
        (np.array([1_500_100, 3_000_000], dtype="datetime64[ps]"), "more than nanosecond precision"),
        (np.array(["2000-01-01", "3000-01-01"], dtype="datetime64[s]"), "outside int64 nanoseconds"),
        (np.array(["2026-01", "2026-02"], dtype="datetime64[M]"), "no fixed unit of time"),
        (np.array(["2026-01-01", "NaT"], dtype="datetime64[s]"), "must not contain NaT"),
    ]
    for ts, message in refused:
        with pytest.raises(ValueError, match=message):
            burstcore.scan((ts, sizes), windows=["1s"], rates=["1Gbps"])


# ------------------------------------------- a range that holds none of the packets is told

# A capture recorded on 2013-05-02, and the stretch its user meant in seconds, given as plain
# ints: ns since 1970, so [1.367526033 s, 1.367526040 s) of 1970.
SECONDS_LO, SECONDS_HI = 1_367_526_033, 1_367_526_040
RECORDED = SECONDS_LO * 10**9


def _recorded_capture(n: int, *, spb: int = 0) -> bytes:
    """`n` UDP packets 1 ms apart from RECORDED (written with CaptureWriter), then `spb` Simple
    Packet Blocks, which have no timestamp and are in no range."""
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=1, snaplen=0, resolution="1e-9")
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=100)
    for k in range(n):
        w.epb(0, frame, ts_ns=RECORDED + k * 1_000_000)
    for _ in range(spb):
        w.spb(frame)
    return w.getvalue()


# Every public function that takes start=/end= and reads captures, each as (name, call).
ENTRY_POINTS = [
    ("scan", lambda cap, **kw: burstcore.scan(cap, windows=["1ms"], **kw)),
    ("flows", lambda cap, **kw: burstcore.flows(cap, **kw)),
    ("traffic_matrix", lambda cap, **kw: burstcore.traffic_matrix(cap, **kw)),
    ("host_volumes", lambda cap, **kw: burstcore.host_volumes(cap, **kw)),
    ("sizes", lambda cap, **kw: burstcore.sizes(cap, **kw)),
    ("gaps", lambda cap, **kw: burstcore.gaps(cap, **kw)),
    ("bursts", lambda cap, **kw: burstcore.bursts(cap, **kw)),
    ("iterations", lambda cap, **kw: burstcore.iterations(cap, **kw)),
]


def _capture_warnings(call, *args, **kw) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kw)
    return [w for w in caught if issubclass(w.category, burstcore.CaptureWarning)]


def _range_notes(call, *args, **kw) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kw)
    return [w for w in caught if "holds none of the" in str(w.message) or "does not hold the one" in str(w.message)]


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
def test_a_range_in_seconds_is_told_to_hold_no_packet(name, call):
    n = 37
    notes = _range_notes(call, _recorded_capture(n), start=SECONDS_LO, end=SECONDS_HI)
    assert len(notes) == 1, [str(w.message) for w in notes]
    w = notes[0]
    assert issubclass(w.category, burstcore.CaptureWarning)
    text = str(w.message)
    assert f"none of the {n} packets read" in text
    # The range as it was taken, to the ns, and what to give instead.
    assert "[1970-01-01T00:00:01.367526033Z, 1970-01-01T00:00:01.367526040Z)" in text
    assert "ns since 1970" in text and "ISO 8601" in text
    # Told at the user's line: this file, not burstcore's.
    assert w.filename == __file__


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
def test_a_range_that_keeps_packets_is_not_told(name, call):
    cap = _recorded_capture(37)
    # In ns, holding packets 3 to 9; and open at one end.
    assert not _capture_warnings(call, cap, start=RECORDED + 3_000_000, end=RECORDED + 10_000_000)
    assert not _capture_warnings(call, cap, start=RECORDED + 3_000_000)
    # No range: nothing to tell, even of packets outside every range.
    assert not _capture_warnings(call, cap)


def test_superpose_tells_a_range_holding_none_of_its_captures():
    a, b = _recorded_capture(5), _recorded_capture(8)
    notes = _range_notes(burstcore.superpose, [a, b], start=SECONDS_LO, end=SECONDS_HI)
    assert len(notes) == 1
    assert "none of the 13 packets read" in str(notes[0].message)
    assert notes[0].filename == __file__
    # One capture shifted into the range: the merge holds its packets.
    assert not _range_notes(burstcore.superpose, [a, b], offsets=[0, "1ms"], start=RECORDED + 5_500_000)


def test_the_note_is_among_a_scans_warnings():
    with pytest.warns(burstcore.CaptureWarning, match="none of the 4 packets read"):
        r = burstcore.scan(_recorded_capture(4), windows=["1ms"], start=SECONDS_LO, end=SECONDS_HI)
    assert r.summary["skipped_outside_range"].item() == 4
    assert any("none of the 4 packets read" in w for w in r.warnings)


def test_the_note_counts_the_packets_with_a_timestamp():
    # Simple Packet Blocks are in no range; the range left out every packet it could hold.
    notes = _range_notes(burstcore.bursts, _recorded_capture(6, spb=3), end=SECONDS_HI)
    assert len(notes) == 1
    assert "none of the 6 packets with a timestamp" in str(notes[0].message)
    assert "[…, 1970-01-01T00:00:01.367526040Z)" in str(notes[0].message)
    one = _range_notes(burstcore.sizes, _recorded_capture(1), start=RECORDED + 1)
    assert len(one) == 1 and "does not hold the one packet read" in str(one[0].message)


def test_a_filter_does_not_hide_a_range_that_holds_nothing():
    # The range is tested first: a filter that would also have left everything out changes nothing.
    notes = _range_notes(burstcore.flows, _recorded_capture(9), start=SECONDS_LO, end=SECONDS_HI, filter="tcp")
    assert len(notes) == 1 and "none of the 9 packets read" in str(notes[0].message)
    # Packets in the range that the filter leaves out are the filter's doing: not told.
    assert not _range_notes(burstcore.flows, _recorded_capture(9), start=RECORDED, filter="tcp")


def test_shared_packets_reading_every_sender_tells_it_per_capture():
    a, b = _recorded_capture(5), _recorded_capture(7)
    notes = _range_notes(burstcore.shared_packets, [a, b], start=SECONDS_LO, end=SECONDS_HI, senders="all")
    assert sorted(int(re.search(r"none of the (\d+) packets", str(w.message)).group(1)) for w in notes) == [5, 7]


def test_the_command_line_tells_it_in_its_options(tmp_path):
    from tests.test_cli import run_cli

    path = tmp_path / "x.pcapng"
    path.write_bytes(_recorded_capture(21))
    for command in ("scan", "flows", "bursts"):
        p = run_cli(command, path, "--start", SECONDS_LO, "--end", SECONDS_HI, "-q")
        assert p.returncode == 0, p.stderr
        err = p.stderr.decode()
        assert err.count("none of the 21 packets read") == 1, err
        assert "--start/--end [1970-01-01T00:00:01.367526033Z" in err
        assert "seconds * 10**9" not in err and "ISO 8601" in err
        p = run_cli(command, path, "--start", RECORDED + 5_000_000, "--end", RECORDED + 9_000_000, "-q")
        assert p.returncode == 0, p.stderr
        assert "none of the" not in p.stderr.decode()


# ------------------------------------ a plain number far from the packets, meant in another unit


def _iso(ns: int) -> str:
    """ns since 1970 as ISO 8601 UTC with every ns, written with datetime (not burstcore)."""
    seconds, fraction = divmod(ns, 10**9)
    return f"{dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


# The span of _recorded_capture(37): RECORDED to 36 ms later.
SPAN_37 = f"({_iso(RECORDED)} to {_iso(RECORDED + 36_000_000)})"

READERS = [*ENTRY_POINTS, ("read_packets", lambda cap, **kw: burstcore.read_packets(cap, **kw))]


@pytest.mark.parametrize("name, call", READERS, ids=[n for n, _ in READERS])
def test_a_start_in_seconds_that_keeps_every_packet_is_told(name, call):
    # start alone in seconds was 1970-01-01T00:00:01.367526033Z: every packet kept, not a word.
    told = _capture_warnings(call, _recorded_capture(37), start=SECONDS_LO)
    assert len(told) == 1, [str(w.message) for w in told]
    text = str(told[0].message)
    assert text.startswith(f"start={SECONDS_LO} is ns since 1970, {_iso(SECONDS_LO)}, long before the 37 packets read")
    assert SPAN_37 in text and "so it leaves none of them out" in text
    assert f"read as seconds it is {_iso(RECORDED)}, among them" in text
    # What to write instead, in both forms.
    assert f"give start='2013-05-02T20:20:33Z' (ISO 8601) or start={RECORDED} (ns)" in text
    assert told[0].filename == __file__


@pytest.mark.parametrize(
    "given, unit",
    [
        (SECONDS_LO * 10**3, "milliseconds"),
        (np.int64(SECONDS_LO * 10**6), "microseconds"),
        (np.uint64(SECONDS_LO), "seconds"),
        # The seconds of a bound a minute before the capture (a round minute): told all the same.
        (SECONDS_LO - 33, "seconds"),
    ],
)
def test_a_start_in_other_units_is_told_in_that_unit(given, unit):
    told = _capture_warnings(burstcore.flows, _recorded_capture(37), start=given)
    assert len(told) == 1, [str(w.message) for w in told]
    per = {"seconds": 10**9, "milliseconds": 10**6, "microseconds": 10**3}[unit]
    meant = int(given) * per
    where = "among" if meant >= RECORDED else "next to"
    assert f"read as {unit} it is {_iso(meant)}, {where} them: if {unit} were meant" in str(told[0].message)
    assert f"start={meant} (ns)" in str(told[0].message)


def test_an_end_in_seconds_is_told_in_seconds():
    # The range holds nothing: one note, which now says what the end is in seconds.
    notes = _range_notes(burstcore.gaps, _recorded_capture(37), end=SECONDS_HI)
    assert len(notes) == 1
    text = str(notes[0].message)
    assert f"holds none of the 37 packets read {SPAN_37}, all outside it" in text
    assert f"read as seconds, end={SECONDS_HI} is {_iso(SECONDS_HI * 10**9)}, next to the packets" in text
    assert f"give end='2013-05-02T20:20:40Z' (ISO 8601) or end={SECONDS_HI * 10**9} (ns)" in text


def test_a_bound_given_as_a_date_or_close_to_the_packets_is_not_told():
    import pandas as pd

    cap = _recorded_capture(37)
    # The plain number is told ...
    assert len(_capture_warnings(burstcore.flows, cap, start=SECONDS_LO)) == 1
    # ... but the very instant it was read as, given as a date, was meant: not told.
    for date in (
        _iso(SECONDS_LO),
        dt.datetime(1970, 1, 1, 0, 0, 1, 367526),
        np.datetime64(SECONDS_LO, "ns"),
        pd.Timestamp(SECONDS_LO, unit="ns"),
    ):
        assert not _capture_warnings(burstcore.flows, cap, start=date), date
    # Plain ns close to the packets (before them by half a second; 0, which is 1970 in any unit;
    # a day before them) were meant as ns.
    for ns in (RECORDED - 500_000_000, 0, RECORDED - 86_400 * 10**9):
        assert not _capture_warnings(burstcore.flows, cap, start=ns), ns
    # A capture of the first seconds of 1970 (as tests write them): plain ns are what they say.
    early = oracles.capture([10**9 + k * 1000 for k in range(20)], [100] * 20)
    for ns in (10**9 - 5, 10**9 + 3000, 1, 10**6):
        assert not _capture_warnings(burstcore.flows, early, start=ns), ns


def test_a_range_given_as_dates_that_misses_names_the_packets_span():
    # The hint about plain numbers was given for dates too; the span the range missed was not.
    cap = _recorded_capture(37)
    for start in ("2020-01-01T00:00:00Z", dt.datetime(2020, 1, 1), np.datetime64("2020-01-01")):
        notes = _range_notes(burstcore.traffic_matrix, cap, start=start)
        assert len(notes) == 1, start
        text = str(notes[0].message)
        assert f"holds none of the 37 packets read {SPAN_37}, all outside it, so nothing was measured" in text
        assert "plain number" not in text and "seconds" not in text, text
    # Plain ns just past the packets were meant as ns: the span, without the hint.
    notes = _range_notes(burstcore.traffic_matrix, cap, start=RECORDED + 10**9)
    assert len(notes) == 1 and SPAN_37 in str(notes[0].message)
    assert "plain number" not in str(notes[0].message)
    # Plain ns far from the packets in no unit that fits: the general hint stays.
    notes = _range_notes(burstcore.traffic_matrix, cap, end=5)
    assert "a plain number is ns since 1970: for seconds give" in str(notes[0].message)


def test_one_packet_is_at_one_instant():
    notes = _range_notes(burstcore.sizes, _recorded_capture(1), start="2013-05-03")
    assert len(notes) == 1
    assert f"does not hold the one packet read (at {_iso(RECORDED)}), so nothing" in str(notes[0].message)


def test_superpose_tells_a_bound_against_the_captures_as_offset():
    # Offset by an hour, the second capture runs 1 h after the first: a start 30 minutes in,
    # given in seconds, is among the merged packets (before the offset, 30 minutes away from
    # either capture, it is told as "about 30 minutes after them").
    a, b = _recorded_capture(5), _recorded_capture(8)
    caught = _capture_warnings(burstcore.superpose, [a, b], offsets=[0, "1h"], start=SECONDS_LO + 1800)
    # (The captures an hour apart are told as such too.)
    told = [w for w in caught if "is ns since 1970" in str(w.message)]
    assert len(told) == 1, [str(w.message) for w in caught]
    text = str(told[0].message)
    assert f"long before the 13 packets read ({_iso(RECORDED)} to {_iso(RECORDED + 3600 * 10**9 + 7_000_000)})" in text
    assert f"read as seconds it is {_iso((SECONDS_LO + 1800) * 10**9)}, among them" in text
    assert told[0].filename == __file__


def test_read_packets_tells_a_range_that_holds_none_of_the_packets(tmp_path):
    # The read counted no packet left out: its empty frame came without a word.
    path = tmp_path / "x.pcapng"
    path.write_bytes(_recorded_capture(37, spb=4))
    for threads in (1, 3):
        with pytest.warns(burstcore.CaptureWarning) as told:
            df = burstcore.read_packets(path, start=SECONDS_LO, end=SECONDS_HI, threads=threads)
        assert df.height == 0
        notes = [str(w.message) for w in told if "holds none" in str(w.message)]
        assert len(notes) == 1, [str(w.message) for w in told]
        assert f"holds none of the 37 packets with a timestamp {SPAN_37}" in notes[0]
        assert f"give start='2013-05-02T20:20:33Z' (ISO 8601) or start={RECORDED} (ns)" in notes[0]
        assert told[0].filename == __file__
        # Read in 3 ranges, start alone: every packet with a timestamp kept, and told.
        with pytest.warns(burstcore.CaptureWarning, match=f"start={SECONDS_LO} is ns since 1970"):
            df = burstcore.read_packets(path, ["timestamp"], start=SECONDS_LO, threads=threads)
        assert df.height == 37 and df.n_chunks() == threads
    # A range that keeps some rows, and none: nothing to tell.
    assert not _capture_warnings(burstcore.read_packets, path, start=RECORDED + 5_000_000, threads=3)
    assert not _capture_warnings(burstcore.read_packets, path)


def test_read_tables_count_what_the_range_and_the_filter_leave_out(tmp_path):
    from burstcore import _burstcore

    ts = [RECORDED + k * 1_000_000 for k in range(37)]
    path = tmp_path / "x.pcapng"
    path.write_bytes(_recorded_capture(37, spb=4))
    lo, hi = ts[5], ts[20]
    for threads in (1, 3):
        _, _, acc = _burstcore.read_table(str(path), None, threads=threads, time_range=(lo, hi), filter="tcp")
        kept = sum(lo <= t < hi for t in ts)
        assert acc["packets_read"] == 41 and acc["skipped_no_timestamp"] == 4
        assert acc["skipped_outside_range"] == 37 - kept
        # UDP all: the filter leaves out every packet in the range.
        assert acc["skipped_filtered"] == kept and acc["counted"] == 0
        assert acc["ts_span"] == (min(ts), max(ts))
        _, _, acc = _burstcore.read_table(str(path), None, threads=threads)
        assert (acc["packets_read"], acc["counted"], acc["ts_span"]) == (41, 41, None)


def test_read_tables_tell_a_timestamp_outside_int64_from_none(tmp_path):
    # A packet whose timestamp does not fit int64 ns comes out of the reader without one, and a
    # range left it out as skipped_no_timestamp, where a scan says skipped_timestamp_out_of_range.
    from burstcore import _burstcore

    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=1, snaplen=0, resolution="1e-9")
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=100)
    for k in range(10):
        w.epb(0, frame, ts_ns=RECORDED + k * 1_000_000)
        if k in (2, 5, 7):
            w.epb(0, frame, ts_raw=2**63 + k)  # past 2262-04-11
    w.spb(frame)
    w.spb(frame)
    path = tmp_path / "x.pcapng"
    path.write_bytes(w.getvalue())
    lo, hi = RECORDED + 3_000_000, RECORDED + 8_000_000
    with pytest.warns(burstcore.CaptureWarning, match="does not fit in 64-bit nanoseconds"):
        summary = burstcore.scan(path, windows=["1ms"], start=lo, end=hi).summary
    assert (summary["skipped_no_timestamp"][0], summary["skipped_timestamp_out_of_range"][0]) == (2, 3)
    for threads in (1, 3):
        _, _, acc = _burstcore.read_table(str(path), None, threads=threads, time_range=(lo, hi))
        assert (acc["skipped_no_timestamp"], acc["skipped_timestamp_out_of_range"]) == (2, 3), acc
        assert (acc["packets_read"], acc["counted"], acc["skipped_outside_range"]) == (15, 5, 5), acc
        # Without a range they are rows, with a null timestamp: nothing left out.
        _, _, acc = _burstcore.read_table(str(path), None, threads=threads)
        assert (acc["packets_read"], acc["counted"], acc["skipped_timestamp_out_of_range"]) == (15, 15, 0), acc
    # A file of 9.6 MB, which two threads read in two byte ranges: the range holding them meets
    # the reader's warning, and the sequential read counts them.
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1, snaplen=0, resolution="1e-9")
    big = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=1400)
    for k in range(6000):
        w.epb(0, big, ts_ns=RECORDED + k * 1000)
        if k in (4000, 5000):
            w.epb(0, big, ts_raw=2**63 + k)
    path.write_bytes(w.getvalue())
    for threads in (1, 2):
        _, _, acc = _burstcore.read_table(str(path), ["wire_len"], threads=threads, time_range=(RECORDED, None))
        assert (acc["packets_read"], acc["counted"]) == (6002, 6000), acc
        assert (acc["skipped_no_timestamp"], acc["skipped_timestamp_out_of_range"]) == (0, 2), acc


def test_the_command_line_tells_a_bound_in_seconds_in_its_options(tmp_path):
    from tests.test_cli import run_cli

    path = tmp_path / "x.pcapng"
    path.write_bytes(_recorded_capture(21))
    span = f"({_iso(RECORDED)} to {_iso(RECORDED + 20_000_000)})"
    for command in ("scan", "flows", "bursts"):
        p = run_cli(command, path, "--start", SECONDS_LO, "-q")
        assert p.returncode == 0, p.stderr
        err = p.stderr.decode()
        assert err.count("is ns since 1970") == 1, err
        assert f"--start {SECONDS_LO} is ns since 1970, {_iso(SECONDS_LO)}, long before the 21 packets read" in err
        assert f"give --start 2013-05-02T20:20:33Z (ISO 8601) or --start {RECORDED} (ns)" in err
        assert "start=" not in err, err
        # The same instant as a date was meant: not told.
        p = run_cli(command, path, "--start", _iso(SECONDS_LO), "-q")
        assert p.returncode == 0 and "ns since 1970" not in p.stderr.decode(), p.stderr
        # A date that misses the capture: its span, and nothing of plain numbers.
        p = run_cli(command, path, "--start", "2020-01-01T00:00:00Z", "-q")
        err = p.stderr.decode()
        assert p.returncode == 0, err
        assert f"--start/--end [2020-01-01T00:00:00.000000000Z, …) holds none of the 21 packets read {span}" in err
        assert "plain number" not in err and "seconds" not in err, err


@pytest.mark.parametrize("as_path", [False, True], ids=["bytes", "path"])
def test_shared_packets_tells_a_range_per_capture_from_its_span(tmp_path, as_path):
    # The samples count no packets: shared_packets said nothing of a range that held none of
    # the captures' packets, nor of a start in seconds that held them all.
    caps: list = [_recorded_capture(5), _recorded_capture(8)]
    if as_path:
        for k, data in enumerate(caps):
            (tmp_path / f"{k}.pcapng").write_bytes(data)
        caps = [str(tmp_path / f"{k}.pcapng") for k in range(2)]
    spans = [f"({_iso(RECORDED)} to {_iso(RECORDED + (n - 1) * 1_000_000)})" for n in (5, 8)]

    def told(**kw):
        return [str(w.message) for w in _capture_warnings(burstcore.shared_packets, caps, **kw)]

    notes = told(start=SECONDS_LO, end=SECONDS_HI)
    assert len(notes) == 2, notes
    names = caps if as_path else ["input 1 of 2", "input 2 of 2"]  # as scan names them
    for k, note in enumerate(notes):
        assert note.startswith(f"{names[k]}: start/end [{_iso(SECONDS_LO)}, {_iso(SECONDS_HI)}) holds none")
        assert f"holds none of its packets {spans[k]}, all outside it" in note
        assert f"give start='2013-05-02T20:20:33Z' (ISO 8601) or start={RECORDED} (ns)" in note
    notes = told(start=SECONDS_LO)
    assert len(notes) == 2, notes
    for k, note in enumerate(notes):
        assert note.startswith(f"{names[k]}: start={SECONDS_LO} is ns since 1970, {_iso(SECONDS_LO)}")
        assert f"long before its packets {spans[k]}, so it leaves none of them out" in note
    notes = told(start="2013-05-03")
    assert len(notes) == 2 and all("plain number" not in n and "holds none of its packets" in n for n in notes)
    # In ns, among the packets: nothing to tell.
    assert not told(start=RECORDED + 2_000_000)
    assert not told()


# ------------------------- a plain number no one means as ns: the first 36.6 minutes of 1970


# A bound in seconds 6,033 s (100.55 minutes) before the first packet of _recorded_capture.
HOURS_BEFORE = SECONDS_LO - 6033


@pytest.mark.parametrize("name, call", READERS, ids=[n for n, _ in READERS])
def test_a_start_in_seconds_hours_from_a_short_capture_is_told(name, call):
    # Further from the capture than a minute or its span, it was 1970-01-01T00:00:01.36752Z as
    # ns, kept every packet, and nothing was said.
    told = _capture_warnings(call, _recorded_capture(37), start=HOURS_BEFORE)
    assert len(told) == 1, [str(w.message) for w in told]
    text = str(told[0].message)
    assert text.startswith(
        f"start={HOURS_BEFORE} is ns since 1970, {_iso(HOURS_BEFORE)}, long before the 37 packets read {SPAN_37}"
    )
    assert f"read as seconds it is {_iso(HOURS_BEFORE * 10**9)}, about {round(6033 / 60)} minutes before them" in text
    assert f"give start='2013-05-02T18:40:00Z' (ISO 8601) or start={HOURS_BEFORE * 10**9} (ns)" in text
    assert told[0].filename == __file__


@pytest.mark.parametrize(
    "given, unit, where",
    [
        # Three hours after the capture's start (3 h less its 36 ms after its end): as seconds,
        # a start that leaves every packet out, and it kept them all.
        (SECONDS_LO + 3 * 3600, "seconds", "about 3 hours after"),
        (SECONDS_LO - 3 * 86_400, "seconds", "about 3 days before"),
        (HOURS_BEFORE * 1000, "milliseconds", "about 101 minutes before"),
        (np.int64(SECONDS_LO - 10 * 86_400), "seconds", "about 10 days before"),
    ],
)
def test_a_start_in_seconds_or_ms_far_from_the_capture_is_told_in_that_unit(given, unit, where):
    told = _capture_warnings(burstcore.flows, _recorded_capture(37), start=given)
    assert len(told) == 1, [str(w.message) for w in told]
    meant = int(given) * {"seconds": 10**9, "milliseconds": 10**6}[unit]
    assert f"read as {unit} it is {_iso(meant)}, {where} them: if {unit} were meant" in str(told[0].message)


def test_an_end_in_seconds_hours_from_the_capture_is_told_in_seconds():
    # The range holds nothing, so the note was there, with the general advice only.
    notes = _range_notes(burstcore.sizes, _recorded_capture(37), end=HOURS_BEFORE)
    assert len(notes) == 1
    text = str(notes[0].message)
    assert (
        f"read as seconds, end={HOURS_BEFORE} is {_iso(HOURS_BEFORE * 10**9)}, about 101 minutes before the packets"
        in text
    )
    assert "seconds * 10**9" not in text


@pytest.mark.parametrize("given", [5, 10**9, SECONDS_LO - 3 * 365 * 86_400, 2**41 - 1])
def test_a_plain_number_in_the_first_minutes_of_1970_is_told_in_no_unit(given):
    # An offset into the capture (5 s), or seconds of no date near it (2001, 2010): no unit
    # brings it a thousand times nearer the packets than ns do (for 2013, within about 15 days
    # of them), so the general advice.
    told = _capture_warnings(burstcore.gaps, _recorded_capture(37), start=given)
    assert len(told) == 1, [str(w.message) for w in told]
    text = str(told[0].message)
    assert text.startswith(f"start={given} is ns since 1970, {_iso(given)}, long before the 37 packets read")
    assert "so it leaves none of them out: a plain number is ns since 1970, not seconds nor an offset" in text
    assert "read as" not in text


def test_plain_numbers_meant_as_ns_are_not_told():
    cap = _recorded_capture(37)
    # 2**41 ns and later (36.6 minutes into 1970) is not told, nor 0 (1970 in any unit).
    for ns in (2**41, 0):
        assert not _capture_warnings(burstcore.flows, cap, start=ns), ns
    # A capture of a clock never set (under a day into 1970) takes every number as ns.
    for first in (10**9, 3600 * 10**9, 86_399 * 10**9):
        early = oracles.capture([first + k * 1000 for k in range(20)], [100] * 20)
        for ns in (1, 10**6, 10**9 - 5, 2**41 - 1):
            if ns < first:
                assert not _capture_warnings(burstcore.flows, early, start=ns), (first, ns)


def test_the_command_line_tells_a_start_in_seconds_hours_away(tmp_path):
    from tests.test_cli import run_cli

    path = tmp_path / "x.pcapng"
    path.write_bytes(_recorded_capture(21))
    p = run_cli("scan", path, "--start", HOURS_BEFORE, "-q")
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    assert err.count("is ns since 1970") == 1, err
    assert f"--start {HOURS_BEFORE} is ns since 1970" in err and "about 101 minutes before them" in err
    assert f"give --start 2013-05-02T18:40:00Z (ISO 8601) or --start {HOURS_BEFORE * 10**9} (ns)" in err


@pytest.mark.parametrize("seconds", [1796006913.0027, 1700000000.5, 1700000000.000001])
def test_seconds_as_a_float_are_refused_with_the_instant_they_are(seconds):
    """A training log's stamps (time.time(): the CNSM study's train_history.log) are float
    seconds: refused (which unit?), with the instant they are as seconds, ready to give back."""
    from decimal import Decimal

    want_ns = int(Decimal(repr(seconds)) * 10**9)
    iso = str(np.datetime64(want_ns, "ns")) + "Z"
    data = _capture([want_ns - 1, want_ns, want_ns + 1], [100, 200, 300], [("10.0.0.1", "10.0.0.2")] * 3)
    with pytest.raises(ValueError, match=rf"is {re.escape(iso)}: give '{re.escape(iso)}'\)$"):
        burstcore.scan(data, start=seconds)
    assert parse_instant(iso, name="start") == want_ns
    assert burstcore.scan(data, windows=["1us"], rates=[], start=iso).summary["bytes"][0] == 500
    # The command line gets the same advice for the same digits.
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", "-", "--start", repr(seconds)], input=data, capture_output=True
    )
    assert p.returncode == 2 and f"is {iso}: give '{iso}')" in p.stderr.decode(), p.stderr


def test_numbers_that_are_no_seconds_get_no_instant():
    for value in (1.7e18, 5.5, 1e300):
        with pytest.raises(ValueError, match=r"is not an instant; give .* since 1970 \(as the \*_ns columns\)$"):
            parse_instant(value, name="start")
    with pytest.raises(ValueError, match=r"as the \*_ns columns\)$"):
        parse_instant("1700000000.0000000001", name="start")  # below the ns: no instant to name
