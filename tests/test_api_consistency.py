"""One API: the same names, options, dtypes and exceptions wherever a function takes or gives the
same thing (the review of the public API found each of these differing between functions)."""

from __future__ import annotations

import inspect
import json
import re
import warnings
from pathlib import Path

import polars as pl
import pytest

import burstcore
from tests import oracles

pytestmark = pytest.mark.filterwarnings("ignore::burstcore.CaptureWarning")

T0 = 1_700_000_000_000_000_000


def capture(hosts: int = 4, packets: int = 400, step_ns: int = 10_000) -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1, resolution="1e-9")
    for i in range(packets):
        h = i % hosts
        frame = oracles.eth_ipv4_udp(f"10.0.{h}.1", "10.9.9.9", 1000 + h, 29500, payload=100 + i % 300)
        # Gaps of a few bins now and then, so that a binned series has empty bins to fill.
        w.epb(0, frame, ts_ns=T0 + i * step_ns + (i // 50) * 3_000_000)
    return w.getvalue()


DATA = capture()


# ------------------------------------------------------------------ 1. source= everywhere


def test_every_reading_function_calls_its_captures_source():
    for fn in (burstcore.superpose, burstcore.shared_packets, burstcore.scan, burstcore.flows, burstcore.info):
        assert next(iter(inspect.signature(fn).parameters)) == "source", fn.__name__


def test_superpose_takes_scans_arguments_where_scan_has_them():
    # superpose(source, offsets, seed, windows, ...) put two arguments of its own before scan's.
    scan_params = list(inspect.signature(burstcore.scan).parameters)[:5]
    assert list(inspect.signature(burstcore.superpose).parameters)[:5] == scan_params
    kinds = inspect.signature(burstcore.superpose).parameters
    assert kinds["offsets"].kind is inspect.Parameter.KEYWORD_ONLY
    assert kinds["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    positional = burstcore.superpose([DATA, DATA], ["1ms"], ["1Gbps"], ["1ms"], "src", offsets=[0, "3ms"])
    keywords = burstcore.superpose(
        [DATA, DATA], windows=["1ms"], rates=["1Gbps"], bins=["1ms"], by="src", offsets=[0, "3ms"]
    )
    assert positional == keywords
    # The old place of offsets is told, not read as a window named "random".
    with pytest.raises(ValueError, match=r"offsets are a keyword now, superpose\(captures, offsets='random'\)"):
        burstcore.superpose([DATA, DATA], "random")


@pytest.mark.parametrize("fn", [burstcore.superpose, burstcore.shared_packets])
def test_the_old_sources_keyword_still_works_with_a_deprecation_warning(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = fn(source=[DATA, DATA])
    with pytest.warns(
        DeprecationWarning, match=rf"{fn.__name__}\(sources=\.\.\.\) is now {fn.__name__}\(source=\.\.\.\)"
    ) as told:
        old = fn(sources=[DATA, DATA])
    assert old == new
    # Told at the caller's line, not inside burstcore.
    assert [Path(w.filename).name for w in told if w.category is DeprecationWarning] == [Path(__file__).name]
    with pytest.raises(TypeError, match="got the captures twice"):
        fn([DATA, DATA], sources=[DATA, DATA])
    with pytest.raises(TypeError, match="missing the captures"):
        fn()


# ------------------------------------------------------------------ 2. the same options


def test_superpose_fills_empty_bins_or_not_as_scan_does():
    # The oracle: scan of the same merge (no offsets) with the same option.
    kw = {"windows": ["1ms"], "rates": ["1Gbps"], "bins": ["1ms"], "by": "src"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", burstcore.SharedPacketsWarning)
        scanned = {fill: burstcore.scan([DATA, DATA], fill_empty_bins=fill, **kw).series for fill in (True, False)}
    for fill in (True, False):
        merged = burstcore.superpose([DATA, DATA], fill_empty_bins=fill, **kw).series
        assert merged.equals(scanned[fill]), fill
    sparse, dense = scanned[False], scanned[True]
    assert sparse.height < dense.height and sparse["bytes"].min() > 0 and dense["bytes"].min() == 0
    with pytest.raises(TypeError, match=r"fill_empty_bins='no': give True \(default\) or False"):
        burstcore.superpose([DATA, DATA], fill_empty_bins="no")  # type: ignore[arg-type]


def test_shared_packets_reads_strictly_as_the_analyses_do():
    cut = DATA[:-7]  # the last block cut off mid-way
    # The oracle: a strict read of the same bytes by a function that had strict= already.
    with pytest.raises(burstcore.TruncatedCaptureError):
        burstcore.host_volumes(cut, strict=True)
    for senders in ("sampled", "all"):
        with pytest.raises(burstcore.TruncatedCaptureError):
            burstcore.shared_packets([cut, cut], strict=True, senders=senders)
        # Not strict: the cut ends the capture, as it ends a read.
        found = burstcore.shared_packets([cut, cut], senders=senders)
        assert found.pairs.height == 1 and found.pairs["told"][0]
    with pytest.raises(TypeError, match="argument 'strict'"):
        burstcore.shared_packets([DATA, DATA], strict="no")  # type: ignore[arg-type]


# ------------------------------------------------------------------ 3. max_groups' defaults


def test_the_max_groups_defaults_are_documented_with_their_reason():
    limits = (Path(__file__).parents[1] / "docs" / "limits.md").read_text()
    default = inspect.signature(burstcore.sizes).parameters["max_groups"].default
    assert default == inspect.signature(burstcore.gaps).parameters["max_groups"].default == 10_000
    assert inspect.signature(burstcore.scan).parameters["max_groups"].default == 1_000_000
    assert re.search(rf"\| `max_groups` of `sizes`/`gaps` \| {default:,} \|.*512 KiB", limits)
    assert "a hundred times below ``scan``'s 1,000,000" in (burstcore.sizes.__doc__ or "")


# ------------------------------------------------------------------ 4. one rule of dtypes


def _frames() -> dict[str, pl.DataFrame]:
    many = [DATA] * 3
    results = {
        "scan": burstcore.scan(DATA, by=["all", "src", "interface"], bins="1ms", rates="1Gbps", windows="1ms"),
        "superpose": burstcore.superpose(many, by="src", bins="1ms", windows="1ms", rates="1Gbps"),
        "sizes": burstcore.sizes(DATA, by="flow"),
        "gaps": burstcore.gaps(DATA, by="src"),
        "bursts": burstcore.bursts(DATA, gap="1us"),
        "iterations": burstcore.iterations(DATA),
        "shared_packets": burstcore.shared_packets(many),
    }
    frames = {
        "flows": burstcore.flows(DATA, windows="1ms"),
        "traffic_matrix": burstcore.traffic_matrix(DATA),
        "host_volumes": burstcore.host_volumes(DATA),
    }
    for name, r in results.items():
        frames |= {f"{name}.{k}": v for k, v in vars(r).items() if isinstance(v, pl.DataFrame)}
    return frames


COUNTS = {"packets", "bytes", "packets_read", "reordered", "bursts", "beyond_bins", "gaps", "shared"}


def test_every_ns_column_is_int64_and_every_count_uint64():
    wrong = []
    for name, frame in _frames().items():
        for column, dtype in frame.schema.items():
            if column.endswith("_ns") and dtype != pl.Int64:
                wrong.append(f"{name}.{column}: {dtype}")
            count = column in COUNTS or column.startswith(("skipped_", "sent_", "received_", "sampled_"))
            if count and dtype != pl.UInt64:
                wrong.append(f"{name}.{column}: {dtype}")
    assert not wrong, wrong


def _at(ts_ns: list[int]) -> bytes:
    """Packets of one UDP flow at exactly these instants (an offset brings any int64 in)."""
    off_s = min(ts_ns) // 10**9 - 1
    w = burstcore.CaptureWriter("pcapng")
    i = w.interface(resolution="1e-9", ts_offset_s=off_s)
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=18)
    for t in ts_ns:
        w.epb(i, frame, ts_raw=t - off_s * 10**9)
    return w.getvalue()


def test_a_length_of_time_past_int64_is_null_never_wrapped():
    # 1684 to 2255: 1.8e19 ns, past int64. As UInt64 span_ns held it; Int64 cannot, and an Int64
    # subtraction wrapped the flow's duration_ns to a negative length.
    first, last = -(9 * 10**18), 9 * 10**18
    data = _at([first, last])
    flow = burstcore.flows(data).row(0, named=True)
    assert (flow["first_seen_ns"], flow["last_seen_ns"], flow["duration_ns"]) == (first, last, None)
    r = burstcore.scan(data, windows=["1s"], rates=["1Gbps"])
    assert r.summary["span_ns"][0] is None and r.groups["span_ns"][0] is None
    # ρ is still exact from the first and last instants.
    rho = 2 * 60 * 8e9 / (last - first)
    assert r.summary["mean_rate_bps"][0] == pytest.approx(rho) and r.groups["mean_rate_bps"][0] == pytest.approx(rho)
    assert "span over 292 years" in repr(r)
    # A length within int64 is exact to the ns.
    near = _at([first, first + 2**63 - 1])
    assert burstcore.flows(near)["duration_ns"][0] == 2**63 - 1
    assert burstcore.scan(near, windows=["1s"], rates=["1Gbps"]).summary["span_ns"][0] == 2**63 - 1


def test_every_length_an_analysis_computes_is_null_past_int64_never_stopped_or_wrapped():
    # Three packets 1684, 1970 and 2255: each gap 9e18 ns fits int64, the whole 1.8e19 does not.
    # bursts' duration_ns (from the core) stopped at 2^63 - 1, a wrong length; so did a gap of
    # 1.8e19 in gaps and an OFF gap in bursts. The oracle: the instants themselves, in Python's
    # integers, as every table gives them exact.
    first, mid, last = -(9 * 10**18), 0, 9 * 10**18
    three, two = _at([first, mid, last]), _at([first, last])
    one = burstcore.bursts(three, gap=f"{9 * 10**18}ns")
    b = one.bursts.row(0, named=True)
    assert (b["start_ns"], b["end_ns"], b["packets"]) == (first, last, 3)
    assert b["duration_ns"] is None
    durations = one.distributions.filter(metric="duration_ns")["value"]
    assert durations.len() > 0 and durations.null_count() == durations.len()
    apart = burstcore.bursts(two, gap="1ms")
    assert apart.bursts["start_ns"].to_list() == [first, last]
    assert apart.bursts["duration_ns"].to_list() == [0, 0]
    assert apart.bursts["off_before_ns"].to_list() == [None, None]  # first: none; then 1.8e19
    offs = apart.distributions.filter(metric="off_ns")["value"]
    assert offs.len() > 0 and offs.null_count() == offs.len()
    # Lengths within int64 are exact to the ns.
    near = burstcore.bursts(_at([first, mid, first + 2**63 - 1]), gap=f"{9 * 10**18}ns").bursts
    assert near["duration_ns"].to_list() == [2**63 - 1]
    assert burstcore.bursts(_at([first, first + 2**63 - 1]), gap="1ms").bursts["off_before_ns"][1] == 2**63 - 1
    # gaps: the gap of 1.8e19 is in the bucket [2^63, 2^64 - 1], whose bounds int64 cannot hold.
    g = burstcore.gaps(two)
    assert g.groups.select("gaps", "min_ns", "max_ns").row(0) == (1, None, None)
    assert g.histogram.select("lo_ns", "hi_ns", "gaps").row(0) == (None, None, 1)
    assert g.quantiles["lo_ns"].null_count() == g.quantiles.height == g.quantiles["hi_ns"].null_count()
    g = burstcore.gaps(three)
    assert g.groups.select("min_ns", "max_ns").row(0) == (9 * 10**18, 9 * 10**18)
    assert g.histogram.select("lo_ns", "hi_ns", "gaps").row(0) == (2**62, 2**63 - 1, 2)
    # The others hold no length past int64, or give it null already (checked here so that none
    # comes back): flows, iterations, the scan's and superpose's span_ns; instants stay exact.
    assert burstcore.flows(two)["duration_ns"].to_list() == [None]
    s = burstcore.superpose([two, two], windows=["1s"], rates=["1Gbps"])
    assert s.summary["span_ns"][0] is None and s.summary["last_ns"][0] == last
    assert burstcore.info(two).duration_ns is None and burstcore.info(two).max_ns == last


@pytest.mark.parametrize(
    "instants",
    [
        [],
        [1_700_000_000 * 10**9],
        [1_700_000_000 * 10**9, 1_700_000_000 * 10**9 + 1000],
        [-(9 * 10**18), -(9 * 10**18) + 2**63 - 1],  # the longest length int64 holds
        [-(9 * 10**18), 0, 9 * 10**18],  # past int64
    ],
)
def test_info_duration_is_scans_span_in_every_form(tmp_path: Path, instants: list[int], capsys) -> None:
    # info gave a span past int64 as a Python int (1.8e19) in duration_ns, to_dict() and
    # `burstcore info --json`, where scan's span_ns (API and JSON) is null as every *_ns length.
    # The oracle: the instants themselves, in Python's integers.
    from burstcore import cli

    path = tmp_path / "c.pcapng"
    path.write_bytes(_at(instants) if instants else oracles.capture([], []))
    exact = max(instants) - min(instants) if instants else None
    want = exact if exact is None or exact < 2**63 else None
    i = burstcore.info(path)
    assert cli.main(["info", "--json", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a scan of nothing says so
        s = burstcore.scan(path, windows=["1s"], rates=["1Gbps"]).summary.row(0, named=True)
        assert cli.main(["scan", str(path), "--windows", "1s", "--rates", "1Gbps", "--json", "-q", "-o", "-"]) == 0
    scanned = json.loads(capsys.readouterr().out)["summary"][0]
    got = (i.duration_ns, i.to_dict()["duration_ns"], shown["duration_ns"], s["span_ns"], scanned["span_ns"])
    assert got == (want,) * 5, got
    # The mean rate is over the exact span wherever there is one, as scan's ρ.
    rates = (i.mean_rate_bps, shown["mean_rate_bps"], s["mean_rate_bps"], scanned["mean_rate_bps"])
    if exact:
        assert rates == pytest.approx((len(instants) * 60 * 8e9 / exact,) * 4), rates
    else:
        assert rates == (None,) * 4, rates
    if exact is not None and want is None:
        assert "Duration:            18000000000s (over 292 years)" in str(i)


# ------------------------------------------------------------------ 5. and 6. one set of names


def test_flows_name_their_endpoints_as_read_packets_does():
    flows = burstcore.flows(DATA)
    assert flows.columns[:5] == ["src", "dst", "protocol", "sport", "dport"]
    # The oracle: the packets' own columns, counted per 5-tuple.
    key = ["src", "dst", "protocol", "sport", "dport"]
    packets = burstcore.read_packets(DATA).group_by(key).agg(packets=pl.len().cast(pl.UInt64)).sort(key)
    assert flows.select(*key, "packets").sort(key).equals(packets)
    assert burstcore.traffic_matrix(DATA).columns[:2] == ["src", "dst"]


def test_a_captures_position_is_capture_in_every_table():
    r = burstcore.superpose([DATA, DATA], windows=["1ms", "2ms"], rates=["1Gbps"], by="interface")
    assert r.singles.columns[0] == "capture" and "source" not in r.singles.columns
    assert r.singles["capture"].to_list() == [0, 0, 1, 1]
    assert r.interfaces["capture"].to_list() == [0, 1]
    # Each capture alone, as the oracle of its row.
    alone = burstcore.scan(DATA, windows=["1ms", "2ms"], rates=["1Gbps"]).envelope.sort("window_ns")["bytes"]
    for k in (0, 1):
        assert r.singles.filter(pl.col("capture") == k).sort("window_ns")["bytes"].equals(alone)


# ------------------------------------------------------------------ 7. TypeError for types


WRONG_TYPES = [
    ("window", lambda: burstcore.scan(DATA, windows=[None], rates="1Gbps")),
    ("window", lambda: burstcore.scan(DATA, windows=True, rates="1Gbps")),
    ("rate", lambda: burstcore.scan(DATA, rates=[[1]])),
    ("rate", lambda: burstcore.scan(DATA, rates=False)),
    ("by", lambda: burstcore.scan(DATA, rates="1Gbps", by=5)),
    ("by", lambda: burstcore.sizes(DATA, by=5)),
    ("by", lambda: burstcore.gaps(DATA, by=1.5)),
    ("size", lambda: burstcore.scan(DATA, rates="1Gbps", size=1)),
    ("closed", lambda: burstcore.scan(DATA, rates="1Gbps", closed=None)),
    ("closed", lambda: burstcore.superpose([DATA, DATA], closed=0)),
    ("on_late", lambda: burstcore.flows(DATA, on_late=False)),
    ("reorder_horizon", lambda: burstcore.bursts(DATA, reorder_horizon=[1])),
    ("key", lambda: burstcore.flows(DATA, key=None)),
    ("senders", lambda: burstcore.shared_packets([DATA, DATA], senders=1)),
    ("max_groups", lambda: burstcore.scan(DATA, rates="1Gbps", max_groups="10")),
    ("max_flows", lambda: burstcore.flows(DATA, max_flows=2.0)),
    ("threads", lambda: burstcore.read_packets(DATA, threads=True)),
    ("quantile", lambda: burstcore.sizes(DATA, quantiles=["0.5"])),
    ("start", lambda: burstcore.scan(DATA, rates="1Gbps", start=1.5)),
    ("end", lambda: burstcore.read_packets(DATA, end=[1])),
    ("gap", lambda: burstcore.bursts(DATA, gap=None)),
    ("offset", lambda: burstcore.superpose([DATA, DATA], offsets=[0, None])),
    ("by", lambda: burstcore.scan(DATA, rates="1Gbps").ptm("1ms", by=["all"])),
]


@pytest.mark.parametrize(("name", "call"), WRONG_TYPES, ids=[f"{n}-{k}" for k, (n, _) in enumerate(WRONG_TYPES)])
def test_a_wrong_type_is_a_type_error_that_old_code_catches_as_value_error(name, call):
    with pytest.raises(TypeError, match=name) as raised:
        call()
    # Caught by an `except ValueError` written when these raised ValueError.
    assert isinstance(raised.value, ValueError)


WRONG_VALUES = [
    lambda: burstcore.scan(DATA, windows=["5 parsecs"], rates="1Gbps"),
    lambda: burstcore.scan(DATA, rates="-1Gbps"),
    lambda: burstcore.scan(DATA, rates="1Gbps", by="pairs"),
    lambda: burstcore.scan(DATA, rates="1Gbps", size="frame"),
    lambda: burstcore.scan(DATA, rates="1Gbps", closed="right"),
    lambda: burstcore.flows(DATA, key="flow5"),
    lambda: burstcore.flows(DATA, on_late="ignore"),
    lambda: burstcore.sizes(DATA, quantiles=[1.5]),
    lambda: burstcore.scan(DATA, rates="1Gbps", max_groups=0),
    lambda: burstcore.shared_packets([DATA, DATA], senders="every"),
    lambda: burstcore.scan(DATA, rates="1Gbps", start="yesterday"),
]


@pytest.mark.parametrize("call", WRONG_VALUES)
def test_a_wrong_value_of_the_right_type_is_a_value_error_only(call):
    with pytest.raises(ValueError) as raised:
        call()
    assert not isinstance(raised.value, TypeError), raised.value


# ------------------------------------------------------------------ 8. CaptureWriter's repr


def test_a_capture_writer_shows_what_it_has_written():
    w = burstcore.CaptureWriter("pcapng")
    assert repr(w) == "CaptureWriter(pcapng, 0 sections, 0 interfaces, 0 packets, 0 bytes)"
    w.interface(name="eth0")
    w.interface()
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=10)
    for k in range(3):
        w.epb(k % 2, frame, ts_ns=T0 + k)
    w.spb(frame)
    written = repr(w)
    data = w.getvalue()
    assert written == f"CaptureWriter(pcapng, 1 section, 2 interfaces, 4 packets, {len(data)} bytes)"
    assert repr(w) == f"CaptureWriter(pcapng, 1 section, 2 interfaces, 4 packets, {len(data)} bytes, finished)"
    # The oracle of the counts: the capture read back.
    assert burstcore.info(data).packets == 4 and len(burstcore.info(data).interfaces) == 2
    p = burstcore.CaptureWriter("pcap", nanos=True, linktype=101)
    p.packet(T0, b"\x45" + bytes(27))
    assert repr(p) == f"CaptureWriter(pcap, ns, linktype 101, 1 packet, {24 + 16 + 28} bytes)"
    # A failed write counts nothing.
    with pytest.raises(ValueError):
        p.packet(T0, bytes(10), wire_len=5)
    assert "1 packet," in repr(p) and "\n" not in repr(p)
