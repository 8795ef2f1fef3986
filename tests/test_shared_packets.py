"""The warning for captures that hold the same packets (``SharedPacketsWarning``): one traffic
recorded on several hosts and merged counts each packet between two captured hosts twice. The
overlap is known by construction (generated captures: each packet in its sender's and its
receiver's file) and, on a real training capture, made by tshark (each host's file cut from the
bridge capture with ``ip.addr==``): warned about when merged as they are, not through ``src host``
filters, not for captures of different traffic, and never for superposed ones."""

from __future__ import annotations

import json
import shlex
import shutil
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from burstcore import SharedPacketsWarning
from burstcore._units import parse_instant
from tests import oracles
from tests.conftest import shared_file
from tests.test_filter import run_cli
from tests.test_filter_each import Packet, traffic


def host(h: int, net: int = 0) -> str:
    return f"10.0.{net}.{h + 1}"


def tcp_frame(src: str, dst: str, seq: int, ack: int, ident: int, payload: int) -> bytes:
    """Ethernet/IPv4/TCP whose IP identification and sequence and acknowledgement numbers advance
    as a real stack's do, so that no two packets of a capture are alike."""
    ip = [bytes(int(x) for x in a.split(".")) for a in (src, dst)]
    tcp = struct.pack("!HHIIBBHHH", 40000, 29500, seq, ack, 5 << 4, 0x18, 1024, 0, 0)
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, ident, 0x4000, 64, 6, 0, *ip)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + iph + tcp + b"\x00" * payload


def frames_of(packets: list[Packet], net: int = 0) -> dict[int, bytes]:
    """Each packet's frame, by its index: sequence numbers per direction, identification per
    sender."""
    seq: dict[tuple[int, int], int] = {}
    ident = [0] * 256
    frames = {}
    for i, (_, s, d, p, _) in enumerate(packets):
        at = seq.setdefault((s, d), 1000 * (s + 1))
        seq[(s, d)] = at + p
        ident[s] += 1
        frames[i] = tcp_frame(host(s, net), host(d, net), at, seq.get((d, s), 0), ident[s], p)
    return frames


def write(path: Path, stamped: list[tuple[int, bytes]]) -> Path:
    stamped = sorted(stamped)
    path.write_bytes(
        oracles.capture([t for t, _ in stamped], [len(f) for _, f in stamped], frames=[f for _, f in stamped])
    )
    return path


def per_host(tmp: Path, packets: list[Packet], hosts: int, net: int = 0) -> list[Path]:
    """One capture per host: what it sent (at the send time) and received (the delay later)."""
    frames = frames_of(packets, net)
    return [
        write(
            tmp / f"net{net}-host{h}.pcapng",
            [(t, frames[i]) for i, (t, s, _, _, _) in enumerate(packets) if s == h]
            + [(t + late, frames[i]) for i, (t, _, d, _, late) in enumerate(packets) if d == h],
        )
        for h in range(hosts)
    ]


def own_filters(hosts: int, net: int = 0) -> list[str | None]:
    return [f"src host {host(h, net)}" for h in range(hosts)]


def shared_warnings(call: object, *args: object, **kwargs: object) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kwargs)  # type: ignore[operator]
    return [w for w in caught if issubclass(w.category, SharedPacketsWarning)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return per_host(tmp_path_factory.mktemp("shared"), traffic(7), 3)


def test_one_capture_per_host_merged_as_it_is_is_warned_about_naming_each_files_host(files: list[Path]) -> None:
    told = shared_warnings(burstcore.scan, files, windows=["1ms"], rates=["1Gbps"])
    assert len(told) == 1
    message = str(told[0].message)
    assert message.startswith("3 pairs of the 3 captures hold the same packets (captures 1 and 2: ")
    assert "each such packet counts twice" in message
    # The hint is the fix, with each file's own host found from its packets.
    assert "one per capture in their order: " + ", ".join(map(repr, own_filters(3))) + " (in Python" in message
    # It points at the caller's line, as every warning of the API does.
    assert told[0].filename == __file__
    # The warning is a CaptureWarning: a filter for those silences this one too.
    assert issubclass(SharedPacketsWarning, burstcore.CaptureWarning)


def test_src_host_filters_keep_each_packet_once_and_are_not_warned_about(files: list[Path]) -> None:
    assert shared_warnings(burstcore.scan, files, windows=["1ms"], rates=["1Gbps"], filter=own_filters(3)) == []
    # `host` keeps both directions: still every packet between two captured hosts twice.
    both = [f"host {host(h)}" for h in range(3)]
    told = shared_warnings(burstcore.scan, files, windows=["1ms"], rates=["1Gbps"], filter=both)
    assert len(told) == 1
    assert "hold the same packets through their filters" in str(told[0].message)
    # A filter for all captures is kept in the hint.
    told = shared_warnings(burstcore.scan, files, windows=["1ms"], rates=["1Gbps"], filter="tcp")
    hint = [f"(tcp) and src host {host(h)}" for h in range(3)]
    assert ", ".join(map(repr, hint)) in str(told[0].message)


def test_every_analysis_that_merges_captures_warns_at_the_callers_line(files: list[Path]) -> None:
    calls = {
        "flows": lambda: burstcore.flows(files),
        "traffic_matrix": lambda: burstcore.traffic_matrix(files),
        "host_volumes": lambda: burstcore.host_volumes(files),
        "sizes": lambda: burstcore.sizes(files),
        "gaps": lambda: burstcore.gaps(files),
        "bursts": lambda: burstcore.bursts(files),
        "iterations": lambda: burstcore.iterations(files),
    }
    for name, call in calls.items():
        told = shared_warnings(call)
        assert len(told) == 1, name
        assert told[0].filename == __file__, name
        assert shared_warnings(lambda n=name: getattr(burstcore, n)(files, filter=own_filters(3))) == [], name
    # Superposed captures are laid over one another on purpose.
    assert shared_warnings(burstcore.superpose, files, windows=["1ms"], rates=["1Gbps"]) == []


def test_captures_of_different_traffic_or_one_capture_are_not_warned_about(tmp_path: Path) -> None:
    # Other hosts, at the same times: nothing in common.
    a = per_host(tmp_path, traffic(7), 2, net=0)
    b = per_host(tmp_path, traffic(7), 2, net=1)
    assert shared_warnings(burstcore.scan, [a[0], b[0]], windows=["1ms"], rates=["1Gbps"]) == []
    # One traffic cut in two files, one after the other (a rotating capture).
    packets = traffic(8)
    frames = frames_of(packets)
    halves = [packets[:2000], packets[2000:]]
    cut = [
        write(tmp_path / f"part{k}.pcapng", [(t, frames[i + 2000 * k]) for i, (t, *_) in enumerate(half)])
        for k, half in enumerate(halves)
    ]
    assert shared_warnings(burstcore.scan, cut, windows=["1ms"], rates=["1Gbps"]) == []
    # A single capture, and one file with a stream that is read once (left out of the check).
    assert shared_warnings(burstcore.scan, a[0], windows=["1ms"], rates=["1Gbps"]) == []
    with open(a[1], "rb") as stream:
        assert shared_warnings(burstcore.scan, [a[0], stream], windows=["1ms"], rates=["1Gbps"]) == []


def test_the_same_file_twice_is_named_as_such(files: list[Path]) -> None:
    told = shared_warnings(burstcore.scan, [files[0], str(files[0]), files[1]], windows=["1ms"], rates=["1Gbps"])
    assert [str(w.message) for w in told] == [
        f"captures 1 and 2 are the same file ({files[0]}), read through the same filter: merged, each of its "
        "packets counts once per copy. Give it once."
    ]
    told = shared_warnings(burstcore.scan, [files[0]] * 3, windows=["1ms"], rates=["1Gbps"])
    assert str(told[0].message).startswith("captures 1, 2 and 3 are the same file")
    # One file read through filters that split it: nothing in common, nothing told.
    split = ["src host 10.0.0.1", "not src host 10.0.0.1"]
    assert shared_warnings(burstcore.scan, [files[0]] * 2, windows=["1ms"], rates=["1Gbps"], filter=split) == []
    # Bytes are sampled.
    data = files[0].read_bytes()
    told = shared_warnings(burstcore.scan, [data, data], windows=["1ms"], rates=["1Gbps"])
    assert len(told) == 1
    assert str(told[0].message).startswith("captures 1 and 2 hold the same packets (1,024 of 1,024 packets sampled")


def test_the_warning_is_listed_with_the_scans_own(files: list[Path], tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = burstcore.scan(files, windows=["1ms"], rates=["1Gbps"])
    assert [w for w in r.warnings if "hold the same packets" in w] == r.warnings != []
    out = tmp_path / "scan.json"
    p = run_cli("scan", *files, "--windows", "1ms", "--rates", "1Gbps", "-o", out)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("hold the same packets") == 1
    assert any("hold the same packets" in w for w in json.loads(out.read_text())["warnings"])


def test_no_filters_are_spelled_out_unless_every_captures_host_is_known(tmp_path: Path) -> None:
    # A capture of all the traffic (a bridge's) beside two hosts' own: its host cannot be told.
    packets = traffic(10, hosts=3)
    frames = frames_of(packets)
    bridge = write(tmp_path / "bridge.pcapng", [(t, frames[i]) for i, (t, *_) in enumerate(packets)])
    own = per_host(tmp_path, packets, 3)[:2]
    told = shared_warnings(burstcore.scan, [bridge, *own], windows=["1ms"], rates=["1Gbps"])
    assert len(told) == 1
    assert "'src host <the first capture's host>', 'src host <the second's>', ..." in str(told[0].message)


def test_a_time_range_outside_the_overlap_is_not_warned_about(files: list[Path]) -> None:
    # Two captures of one traffic that overlap only in their middle: read up to where the second
    # starts, nothing is counted twice.
    packets = traffic(9, hosts=2)
    frames = frames_of(packets)
    tmp = files[0].parent
    first = write(tmp / "first.pcapng", [(t, frames[i]) for i, (t, *_) in enumerate(packets[:3000])])
    second = write(tmp / "second.pcapng", [(t, frames[i + 1500]) for i, (t, *_) in enumerate(packets[1500:])])
    kw = {"windows": ["1ms"], "rates": ["1Gbps"]}
    assert len(shared_warnings(burstcore.scan, [first, second], **kw)) == 1
    assert shared_warnings(burstcore.scan, [first, second], end=packets[1500][0], **kw) == []


def test_the_command_line_tells_it_on_stderr(files: list[Path]) -> None:
    names = [str(f) for f in files]
    r = run_cli("scan", *names, "--windows", "1ms", "--rates", "1Gbps", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "burstcore scan: warning: 3 pairs of the 3 captures hold the same packets" in r.stderr
    filters = [a for f in own_filters(3) for a in ("--filter", str(f))]
    r = run_cli("scan", *names, *filters, "--windows", "1ms", "--rates", "1Gbps", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "same packets" not in r.stderr


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), hosts=st.integers(2, 5), n=st.integers(200, 3000))
def test_per_host_captures_warn_unless_read_through_their_own_hosts(
    tmp_path: Path, seed: int, hosts: int, n: int
) -> None:
    paths = per_host(tmp_path, traffic(seed, hosts, n), hosts)
    kw = {"windows": ["1ms"], "rates": ["1Gbps"]}
    # Every packet is in two files; trains of packets 0.5-3 ms apart put many of them past the
    # instant where both files run, well inside the first 1,024 packets of each from there.
    assert len(shared_warnings(burstcore.scan, paths, **kw)) == 1
    assert shared_warnings(burstcore.scan, paths, filter=own_filters(hosts), **kw) == []


def test_real_per_host_captures_cut_by_tshark(tmp_path: Path) -> None:
    """Capture d (two hosts training over a bridge) cut into each host's view by tshark."""
    capture = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    if shutil.which("tshark") is None:
        pytest.fail("tshark is needed (installed by .ci/setup)")
    hosts = ["10.99.0.11", "10.99.0.12"]
    paths = []
    for h in hosts:
        out = tmp_path / f"{h}.pcapng"
        subprocess.run(["tshark", "-r", str(capture), "-Y", f"ip.addr=={h}", "-w", str(out)], check=True)
        paths.append(out)
    kw = {"windows": ["5ms"], "rates": ["1Gbps"]}
    told = shared_warnings(burstcore.scan, paths, **kw)
    assert len(told) == 1
    assert "captures 1 (" in str(told[0].message)
    assert shared_warnings(burstcore.scan, paths, filter=[f"src host {h}" for h in hosts], **kw) == []
    # Merged through src host, the two views are the capture itself (tshark's oracle of every
    # packet once), less the one packet from 0.0.0.0.
    merged = burstcore.scan(paths, filter=[f"src host {h}" for h in hosts], **kw)
    whole = burstcore.scan(capture, filter="src host 10.99.0.11 or src host 10.99.0.12", **kw)
    assert merged.envelope.equals(whole.envelope)


def test_real_captures_of_two_hosts_are_named_by_when_each_saw_the_packets(tmp_path: Path) -> None:
    """Capture d's two hosts, each host's view made with tshark, editcap and mergecap: what it
    sent as the bridge stamped it, what it received 30 µs later; the second host's clock 7 ms
    ahead. Both addresses are in every packet of either view: the host of each is the one whose
    packets it saw first, against the other view."""
    capture = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    for tool in ("tshark", "editcap", "mergecap"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed (installed with tshark by .ci/setup)")
    hosts = ["10.99.0.11", "10.99.0.12"]

    def run(*args: object) -> None:
        subprocess.run([str(a) for a in args], check=True, capture_output=True)

    views = []
    for h in hosts:
        sent, got, late, view = (tmp_path / f"{h}.{part}.pcapng" for part in ("sent", "got", "late", "view"))
        run("tshark", "-r", capture, "-Y", f"ip.src=={h}", "-w", sent)
        run("tshark", "-r", capture, "-Y", f"ip.dst=={h} && !(ip.src=={h})", "-w", got)
        run("editcap", "-t", "0.00003", got, late)
        run("mergecap", "-w", view, sent, late)
        views.append(view)
    ahead = tmp_path / "ahead.pcapng"
    run("editcap", "-t", "0.007", views[1], ahead)
    own = [f"src host {h}" for h in hosts]
    for pair in (views, [views[0], ahead]):
        found = burstcore.shared_packets(pair)
        assert found.hosts == hosts
        assert found.filters == own
        told = shared_warnings(burstcore.scan, pair, windows=["5ms"], rates=["1Gbps"])
        assert ", ".join(map(repr, own)) + " (in Python" in str(told[0].message)
        assert burstcore.shared_packets(pair[::-1]).hosts == hosts[::-1]
    # Through those filters each packet is counted once, at its sender's time: the capture.
    kw = {"windows": ["100us", "5ms"], "rates": ["1Gbps"]}
    merged = burstcore.scan(views, filter=own, **kw)
    whole = burstcore.scan(capture, filter=" or ".join(own), **kw)
    assert merged.envelope.equals(whole.envelope)


def test_shared_packets_gives_what_the_warning_is_made_of(files: list[Path], tmp_path: Path) -> None:
    found = burstcore.shared_packets(files)
    assert found.pairs.columns == ["a", "b", "from", "from_ns", "shared", "sampled_a", "sampled_b", "told"]
    assert found.pairs.select("a", "b").rows() == [(0, 1), (0, 2), (1, 2)]
    assert found.pairs["told"].all()
    assert (found.pairs["shared"] <= found.pairs["sampled_a"]).all()
    assert found.hosts == [host(h) for h in range(3)]
    assert found.uncaptured == []
    # The instant both were sampled from is where the later of them starts: one anchor for all.
    first = [burstcore.read_packets(f, columns=["timestamp"])["timestamp"].min() for f in files]
    assert found.pairs["from"].unique().to_list() == [max(first)]
    # Through each host's own filter: nothing shared, an empty frame of the same columns.
    alone = burstcore.shared_packets(files, filter=own_filters(3))
    assert alone.pairs.is_empty() and alone.pairs.columns == found.pairs.columns
    # A stretch, bytes, and what cannot be read.
    assert burstcore.shared_packets(files, start=max(first)).pairs.height == 3
    assert burstcore.shared_packets([f.read_bytes() for f in files]).pairs.height == 3
    with open(files[0], "rb") as stream, pytest.raises(ValueError, match="capture 2 is a stream"):
        burstcore.shared_packets([files[1], stream])
    with pytest.raises(FileNotFoundError):
        burstcore.shared_packets([files[0], tmp_path / "missing.pcap"])
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all" * 20)
    with pytest.raises(burstcore.NotACaptureError):
        burstcore.shared_packets([files[0], junk])


def test_shared_packets_gives_the_filters_that_count_each_packet_once(files: list[Path], tmp_path: Path) -> None:
    found = burstcore.shared_packets(files)
    assert found.filters == own_filters(3)
    # Given back, they share nothing: the merge counts each packet once.
    assert not burstcore.shared_packets(files, filter=found.filters).pairs["told"].any()
    # A filter of the caller's is kept in each.
    assert burstcore.shared_packets(files, filter="tcp").filters == [f"(tcp) and src host {host(h)}" for h in range(3)]
    # Not given when they cannot be whole: a bridge's capture has no one host, and the hosts it
    # saw beyond the two captured ones are in no capture's filter.
    packets = traffic(10, hosts=3)
    frames = frames_of(packets)
    bridge = write(tmp_path / "bridge.pcapng", [(t, frames[i]) for i, (t, *_) in enumerate(packets)])
    beside = burstcore.shared_packets([bridge, *per_host(tmp_path, packets, 3)[:2]])
    assert beside.hosts[0] is None and beside.filters is None
    # Two captures of one host (the same file twice) cannot each count that host's packets.
    assert burstcore.shared_packets([files[0], files[0]]).filters is None


def test_the_shared_command_tells_the_pairs_and_the_filters_to_give(files: list[Path]) -> None:
    names = [str(f) for f in files]
    r = run_cli("shared", *names)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert (
        "3 pairs of the 3 captures hold the same packets: merged as they are, each such packet counts twice." in lines
    )
    # Each pair's row: the captures, the packets both samples hold of the smaller, told.
    found = burstcore.shared_packets(files)
    for a, b, shared, sampled in found.pairs.select("a", "b", "shared", "sampled_a").rows():
        row = next(x for x in lines if x.startswith(f"  {a + 1} and {b + 1} "))
        assert row.split()[-4:] == [f"{shared:,}", "of", f"{sampled:,}", "yes"]
    # The options it prints, given to scan, are taken as they are and leave nothing counted twice.
    options = shlex.split(lines[lines.index(next(x for x in lines if x.startswith("To count each once"))) + 1])
    assert options == [a for f in own_filters(3) for a in ("--filter", f)]
    scanned = run_cli("scan", *names, *options, "--windows", "1ms", "--rates", "1Gbps", "--format", "json")
    assert scanned.returncode == 0, scanned.stderr
    assert "same packets" not in scanned.stderr
    api = burstcore.scan(files, filter=own_filters(3), windows=["1ms"], rates=["1Gbps"])
    assert [e["bytes"] for e in json.loads(scanned.stdout)["envelope"]] == api.envelope["bytes"].to_list()
    # Through those filters, the command finds nothing shared.
    again = run_cli("shared", *names, *options)
    assert again.returncode == 0, again.stderr
    assert "No two captures hold the same packets where they run together" in again.stdout
    # JSON: the API's frame with each pair's files, each capture's host and the filters.
    doc = json.loads(run_cli("shared", *names, "-o", "-").stdout)
    assert [(p["a"], p["b"], p["shared"], p["told"]) for p in doc["pairs"]] == found.pairs.select(
        "a", "b", "shared", "told"
    ).rows()
    assert [(p["file_a"], p["file_b"]) for p in doc["pairs"]] == [
        (names[0], names[1]),
        (names[0], names[2]),
        (names[1], names[2]),
    ]
    assert doc["hosts"] == [c["host"] for c in doc["captures"]] == found.hosts
    assert doc["filters"] == [c["own_filter"] for c in doc["captures"]] == own_filters(3)


def test_the_shared_command_says_why_it_cannot_give_filters_and_what_is_wrong(tmp_path: Path) -> None:
    packets = traffic(10, hosts=3)
    frames = frames_of(packets)
    bridge = write(tmp_path / "bridge.pcapng", [(t, frames[i]) for i, (t, *_) in enumerate(packets)])
    own = per_host(tmp_path, packets, 3)[:2]
    r = run_cli("shared", bridge, *own)
    assert r.returncode == 0, r.stderr
    assert "cannot be spelled out here" in r.stdout
    assert "no host is told for capture 1: no one address is in nearly all of its packets" in r.stdout
    assert "--filter '" not in r.stdout
    twice = run_cli("shared", own[0], own[0])
    assert twice.returncode == 0, twice.stderr
    assert f"captures 1 and 2 are the same file ({own[0]}): give it once" in twice.stdout
    # What cannot be run is an error, with the exit code of its kind.
    one = run_cli("shared", own[0])
    assert one.returncode == 2 and "give two or more" in one.stderr
    missing = run_cli("shared", own[0], tmp_path / "missing.pcap")
    assert missing.returncode == 3 and "no such capture file" in missing.stderr
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all" * 20)
    bad = run_cli("shared", own[0], junk)
    assert bad.returncode == 1 and f"cannot read the capture {junk}" in bad.stderr


def test_every_sender_is_read_when_asked_and_a_late_one_withholds_the_filters(tmp_path: Path) -> None:
    # Host 3 (10.0.0.4) talks with host 0 only after all the rest: in no sample of the first
    # three hosts' captures, so the samples' filters leave what it sent out of every capture.
    packets = traffic(11, hosts=3, n=6000)
    after = packets[-1][0] + 1_000_000
    late = [
        p
        for k in range(40)
        for p in ((after + k * 50_000, 3, 0, 200, 5_000), (after + k * 50_000 + 9_000, 0, 3, 0, 5_000))
    ]
    paths = per_host(tmp_path, packets + late, 4)
    three = paths[:3]
    sampled = burstcore.shared_packets(three)
    assert sampled.uncaptured == [] and sampled.filters == own_filters(3)
    kw = {"windows": ["1ms"], "rates": ["1Gbps"]}
    merged = burstcore.scan(three, filter=sampled.filters, **kw)
    assert merged.summary["packets"][0] == len(packets) + 40  # host 3's 40 are in no filter
    ticks: list[tuple[int, int | None]] = []
    every = burstcore.shared_packets(three, senders="all", progress=lambda d, t: ticks.append((d, t)))
    assert every.uncaptured == ["10.0.0.4"] and every.filters is None
    assert every.hosts == sampled.hosts and every.pairs.equals(sampled.pairs)
    # One bar over all the files: never back, ending at their size in all.
    total = sum(p.stat().st_size for p in three)
    assert [d for d, _ in ticks] == sorted(d for d, _ in ticks) and {t for _, t in ticks} == {total}
    assert ticks[-1][0] == total
    # With host 3's own capture too, every sender is a capture's host: the filters count all.
    complete = burstcore.shared_packets(paths, senders="all")
    assert complete.filters == own_filters(4)
    assert burstcore.scan(paths, filter=complete.filters, **kw).summary["packets"][0] == len(packets + late)
    with pytest.raises(ValueError, match="senders='some'"):
        burstcore.shared_packets(three, senders="some")  # type: ignore[arg-type]
    # The command line: what it checked, and why it gives no filters.
    r = run_cli("shared", *three, "--all-senders")
    assert r.returncode == 0, r.stderr
    assert "10.0.0.4 sent packets too and is no capture's host" in r.stdout
    r = run_cli("shared", *paths, "--all-senders")
    assert "Every IP sender in the files is one of these hosts (every packet read;" in r.stdout
    assert json.loads(run_cli("shared", *three, "--all-senders", "-o", "-").stdout)["config"]["senders"] == "all"


def test_captures_that_cover_different_stretches_are_told_the_stretch_they_all_cover(tmp_path: Path) -> None:
    # Host 2's capture starts half-way: its packets from before are in the others' captures
    # only (as received), and its own filter cannot count them.
    packets = traffic(12, hosts=3, n=6000)
    half = packets[len(packets) // 2][0]
    frames = frames_of(packets)
    paths = per_host(tmp_path, packets, 3)[:2]
    own = [(t, frames[i]) for i, (t, s, _, _, _) in enumerate(packets) if s == 2 and t >= half]
    own += [(t + late, frames[i]) for i, (t, _, d, _, late) in enumerate(packets) if d == 2 and t + late >= half]
    paths.append(write(tmp_path / "late-host2.pcapng", own))
    found = burstcore.shared_packets(paths)
    assert found.filters == own_filters(3)
    firsts = [burstcore.read_packets(p, columns=["timestamp"])["timestamp"].dt.epoch("ns") for p in paths]
    assert found.spans == [(int(f.min()), int(f.max())) for f in firsts]
    start, end = found.stretch or (0, 0)
    assert start == max(int(f.min()) for f in firsts) and end == min(int(f.max()) for f in firsts) + 1
    kw = {"windows": ["1ms"], "rates": ["1Gbps"]}
    # Through the filters alone, host 2's early packets are lost; inside the stretch every
    # packet sent in it is counted once, at its sender's time.
    whole = burstcore.scan(paths, filter=found.filters, **kw).summary["packets"][0]
    assert whole == len(packets) - sum(1 for t, s, *_ in packets if s == 2 and t < half)
    inside = burstcore.scan(paths, filter=found.filters, start=start, end=end, **kw).summary["packets"][0]
    assert inside == sum(1 for t, *_ in packets if start <= t < end)
    r = run_cli("shared", *paths)
    assert r.returncode == 0, r.stderr
    assert "The captures do not cover the same stretch" in r.stdout
    bounds = r.stdout.split("Measure the stretch all of them cover: ")[1].splitlines()[0].split()
    assert [parse_instant(b, name="bound") for b in bounds[1::2]] == [start, end]
    # Captures that cover the same stretch are not told to narrow it.
    assert "do not cover the same stretch" not in run_cli("shared", *per_host(tmp_path, packets, 3)).stdout


def test_reading_every_sender_names_the_capture_it_warns_or_fails_on(files: list[Path], tmp_path: Path) -> None:
    data = files[1].read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:-50])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        burstcore.shared_packets([files[0], cut], senders="all")
    told = [w for w in caught if str(w.message).startswith(f"{cut}: capture ends inside")]
    assert len(told) == 1 and told[0].filename == __file__
    # A block whose length is damaged near the end (past every stretch sampled).
    at = len(data) * 9 // 10
    block = data.index(b"\x06\x00\x00\x00", at)  # an enhanced packet block's type
    bad = tmp_path / "bad.pcapng"
    bad.write_bytes(data[: block + 4] + b"\xf0\xff\xff\x7f" + data[block + 8 :])
    with pytest.raises(burstcore.CaptureError) as raised:
        burstcore.shared_packets([files[0], bad], senders="all")
    assert raised.value.input == str(bad)  # type: ignore[attr-defined]
    r = run_cli("shared", files[0], bad, "--all-senders")
    assert r.returncode == 1 and f"cannot read the capture {bad}: " in r.stderr


def bridge_beside_late_hosts(tmp: Path) -> tuple[Path, list[Path], list[tuple[int, int, int, int, int]]]:
    """A bridge capture of three hosts' traffic, then of host 0 alone with the two others, beside
    the captures of hosts 1 and 2, which begin with that second part: where they run, the
    bridge's every packet is host 0's, and only its first part tells it is no host's own."""
    first = traffic(3, hosts=3, n=6000)
    gap = first[-1][0] + 10_000_000 - first[0][0]
    second = [(t + gap, s, d, p, late) for t, s, d, p, late in traffic(5, hosts=3, n=6000) if 0 in (s, d)]
    packets = first + second
    frames = frames_of(packets)
    bridge = write(tmp / "bridge.pcapng", [(t, frames[i]) for i, (t, *_) in enumerate(packets)])
    off = len(first)
    own = [
        write(
            tmp / f"late-host{h}.pcapng",
            [(t, frames[off + i]) for i, (t, s, _, _, _) in enumerate(second) if s == h]
            + [(t + late, frames[off + i]) for i, (t, _, d, _, late) in enumerate(second) if d == h],
        )
        for h in (1, 2)
    ]
    return bridge, own, packets


def test_a_capture_gives_the_same_answer_as_a_path_bytes_or_stdin(tmp_path: Path) -> None:
    bridge, own, packets = bridge_beside_late_hosts(tmp_path)
    # By construction: the bridge is no host's capture, and host 0, seen only by it, is no
    # capture's host; each capture's span is its first and last packet.
    bridge_span = (min(t for t, *_ in packets), max(t for t, *_ in packets))
    for sources in ([bridge, *own], [bridge.read_bytes(), *own], [f.read_bytes() for f in (bridge, *own)]):
        found = burstcore.shared_packets(sources)
        assert found.hosts == [None, host(1), host(2)], type(sources[0])
        assert found.uncaptured == [host(0)]
        assert found.filters is None
        assert found.spans[0] == bridge_span
    # The command line, the bridge from stdin: as from its file.
    names = [str(f) for f in own]
    from_file = json.loads(run_cli("shared", bridge, *names, "-o", "-").stdout)
    with bridge.open("rb") as stdin:
        p = subprocess.run(
            [sys.executable, "-m", "burstcore", "shared", "-", *names, "-o", "-"],
            stdin=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert p.returncode == 0, p.stderr
    from_stdin = json.loads(p.stdout)
    assert from_stdin["hosts"] == from_file["hosts"] == [None, host(1), host(2)]
    assert from_stdin["uncaptured"] == from_file["uncaptured"] == [host(0)]
    drop = ("file_a", "file_b")
    assert [{k: v for k, v in x.items() if k not in drop} for x in from_stdin["pairs"]] == [
        {k: v for k, v in x.items() if k not in drop} for x in from_file["pairs"]
    ]
    assert [c["last_ns"] for c in from_stdin["captures"]] == [c["last_ns"] for c in from_file["captures"]]
    # On the terminal, stdin is named as such, on the first line as in the table.
    with bridge.open("rb") as stdin:
        shown = subprocess.run(
            [sys.executable, "-m", "burstcore", "shared", "-", *names],
            stdin=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert shown.stdout.splitlines()[0] == "== 3 captures: stdin, " + ", ".join(names)


def test_a_stream_read_only_in_part_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from burstcore import _shared

    bridge, own, _ = bridge_beside_late_hosts(tmp_path)
    monkeypatch.setattr(_shared, "STREAM_PACKETS", 1000)
    told = r"capture 1, given as bytes or compressed, holds more than 1,000 packets: read only that far"
    with pytest.warns(burstcore.CaptureWarning, match=told):
        found = burstcore.shared_packets([bridge.read_bytes(), *own])
    assert found.spans[0] is not None and found.spans[0][1] is None
    # Its end unknown, so is the end of the stretch all of them cover: it may end first.
    assert found.stretch == (max(sp[0] for sp in found.spans if sp is not None), None)
    # A file is not read as a stream: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        burstcore.shared_packets([bridge, *own])


def test_drop_counters_are_told_when_every_packet_is_read(tmp_path: Path) -> None:
    from tests.test_recorded_drops import LOST, _dropping_capture

    # Its last statistics block, at its end, counts 7 (and 2 by the OS); one a third of the way
    # in counts 1. The samples read neither; reading every sender reads both, and tells the last.
    lost = tmp_path / "lost.pcapng"
    lost.write_bytes(_dropping_capture(if_drop=7, os_drop=2))
    quiet = tmp_path / "quiet.pcapng"
    quiet.write_bytes(_dropping_capture(if_drop=0))
    for sources in ([quiet, lost], [quiet.read_bytes(), lost.read_bytes()]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            burstcore.shared_packets(sources, senders="all")
        told = [str(w.message) for w in caught if LOST in str(w.message)]
        name = str(lost) if isinstance(sources[1], Path) else "input 2 of 2"  # as scan names it
        assert len(told) == 1 and told[0].startswith(f"{name}: "), told
        assert '(interface 0 "eth0": isb_ifdrop 7, isb_osdrop 2)' in told[0]


def test_a_compressed_capture_gives_what_its_plain_file_gives(tmp_path: Path) -> None:
    """Capture a as shared (zstd, its frame without its content size: read a second time once
    its length is known) and gzipped (its ISIZE announces the length): each is read for its host
    where its plain file is, at a third and two thirds of its length, not near there. Before,
    both named host 10.99.0.11, which the plain file's stretches do not bear out (capture a is
    a bridge of four ranks). Several gzip members and zstd frames: rust/core/tests."""
    import gzip

    import zstandard

    zst = shared_file("captures/a_ring4_mlp5m_1g_bridge.pcapng.zst")
    plain = tmp_path / "a.pcapng"
    with zst.open("rb") as src, plain.open("wb") as dst:
        zstandard.ZstdDecompressor().copy_stream(src, dst)
    data = plain.read_bytes()
    gz = tmp_path / "a.pcapng.gz"
    gz.write_bytes(gzip.compress(data, compresslevel=1))
    copy = tmp_path / "copy.pcapng"
    copy.write_bytes(data)

    def told(found: burstcore.SharedPackets) -> tuple[object, ...]:
        return (found.hosts, found.uncaptured, found.filters, found.spans, found.pairs.rows())

    # The plain file's own answer, as capture a is a bridge of four ranks: no host.
    expected = burstcore.shared_packets([plain])
    assert expected.hosts == [None]
    assert expected.filters is None
    for compressed in (zst, gz):
        assert told(burstcore.shared_packets([compressed])) == told(expected), compressed.name
    # Two copies of it: the pair shares its whole sample, at the same anchor; still no host.
    twice = burstcore.shared_packets([plain, copy])
    assert twice.pairs.height == 1
    assert told(burstcore.shared_packets([zst, gz])) == told(twice)


def test_the_written_captures_table_gives_each_instant_as_every_table_does(tmp_path: Path) -> None:
    # shared's captures table gave its first and last packets as first_ns and last_ns alone; every
    # other table gives an instant as ISO 8601 (a Datetime in Parquet) with its integer ns beside it.
    import numpy as np
    import polars as pl

    base = 1_780_000_000_123_456_789
    spans = [(base, base + 2_000_000_007), (base + 5, base + 3_000_000_001)]
    files = [
        write(
            tmp_path / f"c{k}.pcapng",
            [(t, tcp_frame(host(k), host(1 - k), t % 1000, 0, j, 10)) for j, t in enumerate(sp)],
        )
        for k, sp in enumerate(spans)
    ]

    def iso(ns: int) -> str:
        return f"{np.datetime_as_string(np.datetime64(ns, 'ns'), unit='ns')}Z"

    doc = json.loads(run_cli("shared", *files, "--format", "json", "-q").stdout)["captures"]
    assert [(c["first"], c["first_ns"], c["last"], c["last_ns"]) for c in doc] == [
        (iso(a), a, iso(b), b) for a, b in spans
    ]
    out = tmp_path / "captures.parquet"
    assert run_cli("shared", *files, "--table", "captures", "-o", out, "-q").returncode == 0
    df = pl.read_parquet(out)
    assert df.columns[-4:] == ["first", "first_ns", "last", "last_ns"]
    assert df.schema["first"] == pl.Datetime("ns", "UTC")
    assert df["first"].dt.epoch("ns").to_list() == [a for a, _ in spans]
    assert df["last"].dt.epoch("ns").to_list() == [b for _, b in spans]


def _told(call: object, *args: object, **kwargs: object) -> list[burstcore.CaptureWarning]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kwargs)  # type: ignore[operator]
    return [w.message for w in caught if isinstance(w.message, burstcore.CaptureWarning)]


@pytest.mark.parametrize("cut_by", [7, 50_000])
def test_a_cut_capture_is_told_as_a_scan_of_it_tells_it(files: list[Path], tmp_path: Path, cut_by: int) -> None:
    """Not strict, the samples ended at the cut without a word (strict, it raised): a capture cut
    mid-block is told with the warning a scan of the same captures gives (same kind, offset, input
    and text), from a file (its last megabyte, read for its span, meets the cut) or from bytes
    (read through). Cut inside its last block, and 50 kB before its end."""
    data = files[1].read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:-cut_by])
    for sources in ([files[0], cut], [files[0].read_bytes(), cut.read_bytes()]):
        # The oracle: what scan, an entry point that always told it, says of the same captures.
        scanned = [w for w in _told(burstcore.scan, sources, windows=["1ms"]) if w.kind == "truncated"]
        assert len(scanned) == 1
        want = scanned[0]
        told = [w for w in _told(burstcore.shared_packets, sources) if w.kind == "truncated"]
        assert [(str(w), w.offset, w.input) for w in told] == [(str(want), want.offset, want.input)]
        with pytest.raises(burstcore.TruncatedCaptureError) as raised:
            burstcore.shared_packets(sources, strict=True)
        assert raised.value.offset == want.offset  # type: ignore[attr-defined]
        # Reading every sender meets the same cut: told once, naming the capture as scan does
        # (bytes were "capture 2", where scan says "input 2 of 2").
        told = [w for w in _told(burstcore.shared_packets, sources, senders="all") if w.kind == "truncated"]
        assert [(w.offset, w.input) for w in told] == [(want.offset, want.input)]
        assert str(told[0]).startswith(f"{want.input}: ") and "capture 2" not in str(told[0])
    # A whole capture is told nothing.
    assert _told(burstcore.shared_packets, files[:2]) == []


def test_a_sender_whose_packets_came_late_is_still_read(tmp_path: Path) -> None:
    """With senders="all" a packet later than the 10 ms reorder horizon was dropped from the read
    of senders, and a host that sent only such packets went missing from `uncaptured` (and the
    filters then left its packets out of every capture). Host 10.0.0.9's three packets are
    written at the end of host 0's capture, stamped 50 ms before its last packet. The oracle:
    read_packets, which reads every packet in file order, none late."""
    packets = traffic(7)
    paths = per_host(tmp_path, packets, 3)
    frames = frames_of(packets)
    own = sorted(
        [(t, frames[i]) for i, (t, s, _, _, _) in enumerate(packets) if s == 0]
        + [(t + late, frames[i]) for i, (t, _, d, _, late) in enumerate(packets) if d == 0]
    )
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1, resolution="1e-9")
    for t, frame in own:
        w.epb(0, frame, ts_ns=t)
    for j in range(3):
        w.epb(0, tcp_frame("10.0.0.9", host(0), 5 + j, 0, j, 100), ts_ns=own[-1][0] - 50_000_000 + j * 1_000)
    late = tmp_path / "late.pcapng"
    late.write_bytes(w.getvalue())
    captures = [late, *paths[1:]]
    # The read that drops late packets does not see the sender: what the check relied on.
    assert "10.0.0.9" not in set(burstcore.host_volumes(late, on_late="drop")["host"])
    every: set[str] = set()
    for f in captures:
        every |= set(burstcore.read_packets(f, columns=["src"])["src"].drop_nulls())
    assert "10.0.0.9" in every
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = burstcore.shared_packets(captures, senders="all")
    assert found.hosts == [host(h) for h in range(3)]
    assert set(found.uncaptured) == every - set(found.hosts) == {"10.0.0.9"}
    assert found.filters is None
    # Too many senders for one filter to leave out: the late packets' senders are not read
    # again, and a warning says how many packets went unread and what to do.
    from burstcore import _shared

    with pytest.MonkeyPatch.context() as m:
        m.setattr(_shared, "_FILTER_HOSTS", 1)
        with pytest.warns(burstcore.CaptureWarning, match=r"late.pcapng: 3 packets came later than the 10 ms"):
            found = burstcore.shared_packets(captures, senders="all")
    assert found.uncaptured == []
