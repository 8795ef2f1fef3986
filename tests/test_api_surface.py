"""The public API as a notebook user meets it: what a bare result shows, what a wrong argument
says, and names that are exported as they are documented."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import burstcore
from tests import oracles

pytestmark = pytest.mark.filterwarnings("ignore::burstcore.CaptureWarning")

T0 = 1_700_000_000_000_000_000
HOSTS = 40


def many_hosts() -> bytes:
    """Packets from many hosts, flows and interfaces, so that every table has many rows."""
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    for k in range(HOSTS):
        w.interface(linktype=1, snaplen=0, resolution="1e-9", name=f"interface-with-a-long-name-{k:04d}")
    for i in range(2000):
        h = i % HOSTS
        frame = oracles.eth_ipv4_udp(f"10.0.{h}.1", "10.9.9.9", 1000 + h, 29500, payload=100 + i % 700)
        w.epb(h, frame, ts_ns=T0 + i * 10_000 + (i % 13) * 997)
    return w.getvalue()


DATA = many_hosts()
# Ethernet, IPv4 and UDP headers, and each packet's payload.
WIRE_BYTES = sum(14 + 20 + 8 + 100 + i % 700 for i in range(2000))


def results() -> dict[str, object]:
    many = [DATA] * 12
    return {
        "scan": burstcore.scan(DATA, by=["all", "src", "flow", "interface"], bins="1ms"),
        "scan of nothing": burstcore.scan(DATA, filter="host 192.0.2.1", rates="1Gbps"),
        "superpose": burstcore.superpose(many, offsets="random", by="src", bins="1ms"),
        "sizes": burstcore.sizes(DATA, by="flow"),
        "gaps": burstcore.gaps(DATA, by="src"),
        "bursts": burstcore.bursts(DATA, gap="1us"),
        "iterations": burstcore.iterations(DATA),
        "shared_packets": burstcore.shared_packets(many),
        "info": burstcore.info(DATA),
    }


def test_every_result_shows_as_one_short_line():
    # A notebook shows a bare result by its repr: a line of what it holds, never its tables (the
    # dataclass repr of a SuperposeResult, a Distribution, a Bursts or a SharedPackets printed
    # every frame and list, thousands of characters; CaptureInfo's every interface's options).
    for name, result in results().items():
        text = repr(result)
        assert "\n" not in text and len(text) <= 300, f"{name}: {len(text)} characters\n{text}"
        assert text.startswith(type(result).__name__ + "("), f"{name}: {text}"


def test_the_one_line_says_what_the_result_holds():
    r = results()
    scan, superposed = r["scan"], r["superpose"]
    assert isinstance(scan, burstcore.ScanResult) and isinstance(superposed, burstcore.SuperposeResult)
    assert f"{scan.summary['packets'][0]} packets" in repr(scan)
    assert f"{scan.envelope.height} envelope rows" in repr(scan)
    # A scan that counted nothing has no span, rather than "span None ns".
    assert "no span" in repr(r["scan of nothing"]) and "None" not in repr(r["scan of nothing"])
    # Twelve captures: the first offsets, and how many there are.
    assert repr(superposed).startswith("SuperposeResult(12 captures at offsets 0ns, ")
    assert "(12 in all)" in repr(superposed)
    assert f"{superposed.multiplexing_gain.height} multiplexing_gain rows" in repr(superposed)
    assert repr(r["sizes"]).startswith(f"Distribution(sizes by flow, {HOSTS + 1} groups")
    assert repr(r["gaps"]).startswith(f"Distribution(gaps by src, {HOSTS + 1} groups")
    bursts = r["bursts"]
    assert isinstance(bursts, burstcore.Bursts)
    assert repr(bursts) == f"Bursts(gap 1us, {bursts.bursts.height} bursts, 2000 packets)"
    assert repr(r["info"]).startswith(f"CaptureInfo(pcapng, 2000 packets, {WIRE_BYTES} wire bytes, {HOSTS} interfaces")
    assert repr(r["shared_packets"]).startswith("SharedPackets(12 captures, ")


def test_all_is_exact():
    # __all__ lists every public name of the package (modules aside) and nothing it lacks, so
    # that `from burstcore import *` and the documentation's names agree.
    modules = {n for n in dir(burstcore) if isinstance(getattr(burstcore, n), types.ModuleType)}
    public = {n for n in dir(burstcore) if not n.startswith("_")} - modules
    assert sorted(public | {"__version__"}) == sorted(burstcore.__all__)
    assert burstcore.Grouping is not None and "pair" in burstcore.Grouping.__args__


def test_bytes_that_name_a_file_are_told_to_be_a_path(tmp_path):
    # Bytes are a capture's contents; a path as bytes (os.fsencode, os.listdir(b".")) was read
    # as one and called "not a pcap or pcapng file (starts with 2f 74 6d 70, text?)".
    path = tmp_path / "trace.pcapng"
    path.write_bytes(DATA)
    for given in (bytes(path), bytearray(bytes(path)), bytes(tmp_path), b"missing.pcap"):
        for call in (burstcore.scan, burstcore.read_packets, burstcore.info, burstcore.flows):
            with pytest.raises(TypeError, match=r"bytes are read as a capture's contents, .* give the path as a str"):
                call(given)
    # The same path as a str reads, and bytes that name nothing are still no capture.
    assert burstcore.info(str(path)).packets == 2000
    with pytest.raises(burstcore.NotACaptureError):
        burstcore.info(b"hello, not a capture")


@pytest.mark.parametrize(
    "call",
    [
        lambda p: burstcore.scan(DATA, progress=p),  # a pre-pass finds the default rates
        lambda p: burstcore.scan(DATA, rates="1Gbps", progress=p),
        lambda p: burstcore.shared_packets([DATA, DATA], progress=p),
        lambda p: burstcore.shared_packets([DATA, DATA], senders="all", progress=p),
    ],
)
def test_a_progress_that_cannot_be_called_is_named(call):
    # Wrapped for a scan's two passes or one capture's part of several, a non-callable
    # progress raised Python's bare "'int' object is not callable" at its first call, or was
    # taken without a word where the samples alone call it never.
    with pytest.raises(TypeError, match=r"^progress=5 is not callable: pass a function called as progress\("):
        call(5)


def test_ptm_takes_one_grouping():
    r = burstcore.scan(DATA, windows="1ms", rates="1Gbps", by=["all", "src"])
    with pytest.raises(ValueError, match=r"by=\['all'\]: ptm takes one grouping, e.g. by='src'"):
        r.ptm("1ms", by=["all"])  # type: ignore[arg-type]
    assert r.ptm("1ms", by="src").height == HOSTS


def test_groupings_given_as_numpy_strings_are_plain_strings():
    by = np.array(["src", "all"])
    r = burstcore.scan(DATA, windows="1ms", rates="1Gbps", by=by)
    assert r.config["by"] == ["src", "all"] and all(type(b) is str for b in r.config["by"])
    assert type(burstcore.sizes(DATA, by=by[0]).by) is str


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ((p for p in [DATA]), "several captures go in a list or a tuple"),
        ({DATA}, "several captures go in a list or a tuple"),
        (np.frombuffer(DATA, dtype=np.uint8), r"goes as memoryview\(a\) or a.tobytes\(\)"),
    ],
)
def test_a_source_of_the_wrong_kind_says_what_to_give(given, hint):
    with pytest.raises(TypeError, match=hint):
        burstcore.scan(given)


def test_a_list_where_one_capture_goes_is_not_told_to_be_a_list():
    # info, read_packets, scan_packets read one capture: a list of two was told "several
    # captures go in a list or a tuple", the very thing given; a list inside scan's list too.
    for call in (burstcore.info, burstcore.read_packets, burstcore.scan_packets):
        with pytest.raises(TypeError, match="this reads one capture: give one, or call it once for each") as e:
            call([DATA, DATA])
        assert "go in a list" not in str(e.value)
    for call in (burstcore.scan, burstcore.flows, burstcore.superpose):
        with pytest.raises(TypeError, match=r"each item of the list is one capture \(a list in it is not taken\)"):
            call([[DATA], DATA])


NOWHERE = "host 192.0.2.77"  # TEST-NET-1: in no capture here


@pytest.mark.parametrize(
    "call",
    [
        lambda f: burstcore.scan(DATA, filter=f, rates="1Gbps"),
        lambda f: burstcore.read_packets(DATA, filter=f),
        lambda f: burstcore.flows(DATA, filter=f),
        lambda f: burstcore.traffic_matrix(DATA, filter=f),
        lambda f: burstcore.host_volumes(DATA, filter=f),
        lambda f: burstcore.sizes(DATA, filter=f),
        lambda f: burstcore.gaps(DATA, filter=f),
        lambda f: burstcore.bursts(DATA, filter=f),
        lambda f: burstcore.iterations(DATA, filter=f),
        lambda f: burstcore.superpose([DATA, DATA], filter=f),
    ],
)
def test_a_filter_that_passes_nothing_is_told(call):
    # As a start/end that holds none of the packets is: a mistyped host gave an empty result
    # ("period none", no rows) without a word.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(NOWHERE)
    told = [w.message for w in caught if isinstance(w.message, burstcore.CaptureWarning)]
    assert len(told) == 1, [str(w) for w in told]
    assert re.match(
        r"filter= passed none of the [\d,]+ packets it was given \(skipped_filtered\), so nothing", str(told[0])
    )
    # A filter that passes packets is not told about.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call("udp")
    assert not [w for w in caught if "filter=" in str(w.message)]


def test_the_filter_note_counts_what_the_filter_was_given():
    # The packets the time range left out never reached the filter.
    ts = burstcore.read_packets(DATA, columns=["timestamp"])["timestamp"].sort()
    start = ts[1000]
    kept = int((ts >= start).sum())
    with pytest.warns(burstcore.CaptureWarning, match=rf"passed none of the {kept:,} packets it was given"):
        r = burstcore.scan(DATA, filter=NOWHERE, start=start, rates="1Gbps")
    assert r.summary["skipped_filtered"][0] == kept and r.summary["skipped_outside_range"][0] == 2000 - kept


def test_the_command_line_tells_it_in_its_options(tmp_path):
    path = tmp_path / "t.pcapng"
    path.write_bytes(DATA)
    run = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", str(path), "--filter", NOWHERE, "--rates", "1Gbps"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "warning: --filter passed none of the 2,000 packets it was given" in run.stderr, run.stderr
    assert "burstcore matrix --hosts without --filter lists them" in run.stderr and "filter=" not in run.stderr


def test_every_public_function_class_and_method_says_what_it_does():
    # help() in a notebook: CaptureWriter's spb, opb, isb, dsb, custom and raw_block, and
    # CaptureInfo.to_dict, showed nothing.
    missing = []
    for name in burstcore.__all__:
        obj = getattr(burstcore, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue  # a value or a type alias
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and (callable(member) or isinstance(member, property)):
                    if not inspect.getdoc(member):
                        missing.append(f"{name}.{attr}")
    assert not missing, missing
    # CaptureError names every attribute it carries.
    for attr in ("offset", "reason", "kind", "input"):
        assert f"`{attr}`" in (burstcore.CaptureError.__doc__ or ""), attr


@pytest.mark.parametrize("given", ["no", 0, None])
def test_fill_empty_bins_is_a_bool_as_strict_is(given):
    # Checked as strict= and mmap= are: fill_empty_bins="no" filled the bins.
    with pytest.raises(TypeError, match=rf"fill_empty_bins={re.escape(repr(given))}: give True \(default\) or False"):
        burstcore.scan(DATA, bins="1ms", rates="1Gbps", fill_empty_bins=given)
    with pytest.raises(TypeError, match="argument 'strict'"):
        burstcore.scan(DATA, rates="1Gbps", strict=given)
    sparse = burstcore.scan(DATA, bins="1ms", rates="1Gbps", fill_empty_bins=np.bool_(False))
    assert sparse.series.height == len(burstcore.read_packets(DATA)["timestamp"].dt.truncate("1ms").unique())


def test_every_parameter_is_named_in_its_functions_docstring():
    # help(burstcore.bursts) said nothing of quantiles, help(burstcore.info) nothing of strict or
    # progress, help(burstcore.superpose) nothing of max_groups.
    unnamed = []
    for name in burstcore.__all__:
        fn = getattr(burstcore, name)
        if not inspect.isfunction(fn):
            continue
        doc = inspect.getdoc(fn) or ""
        forms = ("``{}``", "{}:", "``{}=")
        unnamed += [
            f"{name}({p})" for p in inspect.signature(fn).parameters if not any(f.format(p) in doc for f in forms)
        ]
    assert not unnamed, unnamed


def test_results_compare_by_their_tables():
    # The dataclasses' own == compared their frames with polars' ==, per element, whose truth
    # Python then asked for: "the truth value of a DataFrame is ambiguous" for two scans.
    first, again = results(), results()
    for name, result in first.items():
        assert result == again[name], name
        assert not (result != again[name]), name
    scan = first["scan"]
    assert isinstance(scan, burstcore.ScanResult)
    other = burstcore.scan(DATA, by=["all", "src", "flow", "interface"], bins="2ms")
    assert scan != other and scan != first["superpose"] and scan != "ScanResult"
    assert burstcore.sizes(DATA) != burstcore.gaps(DATA)
    assert burstcore.bursts(DATA, gap="1us") != burstcore.bursts(DATA, gap="2us")
