"""Several captures read as one, against mergecap's merge of them (an independent tool) and
against what the files were written with."""

from __future__ import annotations

import gzip
import random
import shutil
import struct
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import zstandard

import burstcore
from tests.oracles import eth_ipv4_udp

BASE = 1_700_000_000_000_000_000
MS = 1_000_000
HOSTS = [f"10.0.0.{i}" for i in range(1, 7)]


def traffic(seed: int, n: int, t0: int) -> list[tuple[int, bytes]]:
    """Bursts 20 ms apart of packets between a few hosts, each frame unique (its IP ID and TTL),
    so that no two files look like captures of the same packets."""
    rng = random.Random(seed)
    out: list[tuple[int, bytes]] = []
    k = 0
    while len(out) < n:
        t = t0 + k * 20 * MS
        for _ in range(rng.randint(20, 60)):
            if len(out) == n:
                break
            t += rng.choice([0, 0, 1, 7, 100, 1200, 5000])
            src, dst = rng.sample(HOSTS, 2)
            frame = bytearray(
                eth_ipv4_udp(src, dst, rng.randint(1000, 1005), 80, rng.choice([0, 100, 1400]), rng.choice([6, 17]))
            )
            frame[18:20] = (seed * 7919 + len(out)).to_bytes(4, "big")[2:]
            frame[22] = 64 - seed % 32
            out.append((t, bytes(frame)))
        k += 1
    return out


def pcapng(pkts: list[tuple[int, bytes]], *, res: str = "1e-9", linktype: int = 1, tsoff: int = 0) -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=linktype, resolution=res, ts_offset_s=tsoff)
    for t, f in pkts:
        w.epb(0, f, ts_ns=t)
    return w.getvalue()


def pcap(
    pkts: list[tuple[int, bytes]],
    *,
    nanos: bool = True,
    linktype: int = 1,
    snaplen: int | None = None,
    big: bool = False,
) -> bytes:
    w = burstcore.CaptureWriter(
        "pcap", byte_order="big" if big else "little", nanos=nanos, linktype=linktype, snaplen=snaplen
    )
    for t, f in pkts:
        w.packet(t, f[:snaplen] if snaplen else f, wire_len=len(f))
    return w.getvalue()


def hostile_mix(d: Path) -> tuple[list[Path], list[Path]]:
    """Files of every kind read together, and each one's uncompressed twin for mergecap: pcap
    in µs, big-endian ns pcap of raw IP cut at 64 bytes, pcapng at 1e-6 with an if_tsoffset,
    gzip pcapng at 1e-7, zstd pcap, a file inside another's span stamped with its very
    timestamps, files of headers only, and one out of order within the reorder horizon."""
    a = traffic(1, 600, BASE)
    swapped = traffic(8, 400, BASE + 6 * MS)
    for i in range(10, len(swapped), 23):
        if swapped[i][0] - swapped[i - 1][0] < MS:
            swapped[i - 1], swapped[i] = swapped[i], swapped[i - 1]
    plain = {
        "a.pcapng": pcapng(a),
        "b_us.pcap": pcap(traffic(2, 400, BASE + 8 * MS), nanos=False),
        "c_raw.pcap": pcap(
            [(t, f[14:]) for t, f in traffic(3, 300, BASE + 11 * MS)], linktype=101, snaplen=64, big=True
        ),
        "d_off.pcapng": pcapng(traffic(4, 300, BASE + 50 * MS), res="1e-6", tsoff=1_699_999_000),
        "e.pcapng.gz": pcapng(traffic(5, 300, BASE + 9 * MS), res="1e-7"),
        "f.pcap.zst": pcap(traffic(6, 300, BASE + 13 * MS)),
        "g_same_times.pcapng": pcapng(
            [(t, f) for (t, _), (_, f) in zip(a[100:200], traffic(7, 100, BASE), strict=True)]
        ),
        "h_headers.pcap": pcap([]),
        "i_headers.pcapng": pcapng([]),
        "j_swapped.pcapng": pcapng(swapped),
    }
    files, twins = [], []
    for name, data in plain.items():
        twin = d / f"plain_{name.removesuffix('.gz').removesuffix('.zst')}"
        twin.write_bytes(data)
        twins.append(twin)
        p = d / name
        if name.endswith(".gz"):
            p.write_bytes(gzip.compress(data))
        elif name.endswith(".zst"):
            p.write_bytes(zstandard.ZstdCompressor(level=1).compress(data))
        else:
            p = twin
        files.append(p)
    return files, twins


def mergecap(out: Path, files: list[Path]) -> Path:
    """mergecap's chronological merge, every interface kept (-I none). mergecap 4.0 gives a tie
    to the file listed later (its is_earlier() holds on equal times), burstcore to the file
    listed first: handed the files in reverse order, it merges in burstcore's order, and numbers
    the interfaces from the last file on."""
    if shutil.which("mergecap") is None:
        pytest.fail("mergecap is not installed (it comes with tshark: bash .ci/setup installs it)")
    subprocess.run(["mergecap", "-I", "none", "-w", str(out), *map(str, files[::-1])], check=True)
    return out


def reversed_interfaces(df: pl.DataFrame, n: int) -> pl.DataFrame:
    """Interface groups of mergecap's merge (one interface per file, last file first) under
    the numbers of the files in their own order."""
    if "group" not in df.columns:
        return df
    ifaces = pl.col("group").str.starts_with("if")
    if "by" in df.columns:
        ifaces = ifaces & (pl.col("by") == "interface")
    renamed = pl.lit("if") + (n - 1 - pl.col("group").str.slice(2).cast(pl.Int64, strict=False)).cast(pl.String)
    return df.with_columns(pl.when(ifaces).then(renamed).otherwise(pl.col("group")).alias("group"))


def in_order(df: pl.DataFrame) -> pl.DataFrame:
    keys = [
        c for c in ("by", "group", "window_ns", "rate_bps", "bin_ns", "start", "size", "q", "lo_ns") if c in df.columns
    ]
    return df.sort(keys, maintain_order=True) if "group" in df.columns else df


def everything(src: Any, threads: int) -> dict[str, Any]:
    by = ["all", "interface", "src", "pair"]
    r = burstcore.scan(
        src,
        windows=["1us", "100us", "1ms", "5ms", "100ms"],
        rates=["100Mbps", "1Gbps"],
        bins=["1ms", "7ms"],
        by=by,
        threads=threads,
    )
    out: dict[str, Any] = {k: getattr(r, k) for k in ("envelope", "backlog", "series", "groups", "summary")}
    out["default_rates"] = burstcore.scan(src, windows=["5ms"], threads=threads).backlog
    out["flows"] = burstcore.flows(src, windows=["1ms"])
    out["biflows"] = burstcore.flows(src, key="biflow", idle_timeout="3ms")
    out["matrix"] = burstcore.traffic_matrix(src)
    out["hosts"] = burstcore.host_volumes(src)
    for name, fn, grouping in (("sizes", burstcore.sizes, "src"), ("gaps", burstcore.gaps, "interface")):
        dist = fn(src, by=grouping)
        for part in ("histogram", "quantiles", "groups", "summary"):
            out[f"{name}.{part}"] = getattr(dist, part)
    b = burstcore.bursts(src, gap="2ms")
    out["bursts"], out["bursts.summary"] = b.bursts, b.summary
    with warnings.catch_warnings():
        # The mix is no training job: whatever period it shows is doubted (the same read either
        # way, compared below), which is not the warning the callers look for.
        warnings.filterwarnings("ignore", category=burstcore.CaptureWarning, message=".*period")
        it = burstcore.iterations(src)
    out["iterations"], out["iterations.summary"] = it.iterations, it.summary
    out["period"] = (it.period_ns, it.confidence, tuple(it.period_doubts))
    return out


def test_several_files_read_as_mergecaps_merge_of_them(tmp_path: Path) -> None:
    files, twins = hostile_mix(tmp_path)
    merged = mergecap(tmp_path / "merged.pcapng", twins)
    n = len(files)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no file shares packets with another: no warning
        for threads in (1, 2):
            got = everything([str(f) for f in files], threads)
            want = everything(str(merged), threads)
            assert got["summary"]["packets"][0] == 2_700
            for key, value in got.items():
                if isinstance(value, pl.DataFrame):
                    expected = in_order(reversed_interfaces(want[key], n))
                    assert in_order(value).equals(expected), f"{key}, {threads} threads"
                else:
                    assert value == want[key], key


def two_sections_then_one(d: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """A pcapng whose second section (with its own interface) begins after the other file's
    packets have come, and that file: the interface groups the files were written with."""
    frame = eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, 100)
    w = burstcore.CaptureWriter("pcapng")
    for times in ((1, 30, 60), (90, 95)):
        w.section()
        w.interface(resolution="1e-9")
        for t in times:
            w.epb(0, frame, ts_ns=BASE + t * MS)
    first = d / "two_sections.pcapng"
    first.write_bytes(w.getvalue())
    second = d / "one.pcapng"
    second.write_bytes(pcapng([(BASE + t * MS, frame) for t in (2, 40, 70, 80, 100, 110, 120)]))
    return [str(first), str(second)], [("if0", 3), ("if1", 2), ("if2", 7)]


@pytest.mark.filterwarnings("ignore::burstcore.SharedPacketsWarning")
def test_an_interface_declared_late_keeps_its_own_number(tmp_path: Path) -> None:
    # Interfaces were numbered from those declared so far: the second file's took the number
    # the first file's second section would give its interface, and moved up in mid-read
    # (groups of 3, 4 and 5 packets, none of them an interface's).
    files, want = two_sections_then_one(tmp_path)
    for horizon in (0, "10ms"):
        for threads in (1, 2):
            r = burstcore.scan(
                files, windows=["1ms"], rates=["1Gbps"], by="interface", reorder_horizon=horizon, threads=threads
            )
            assert r.groups.select("group", "packets").rows() == want
            assert r.envelope["group"].to_list() == [g for g, _ in want]
        for fn in (burstcore.sizes, burstcore.gaps):
            groups = fn(files, by="interface", reorder_horizon=horizon).groups
            assert groups.filter(pl.col("group") != "all").select("group", "packets").rows() == want
        s = burstcore.superpose(
            files, offsets=[0, 0], windows=["1ms"], rates=["1Gbps"], by="interface", reorder_horizon=horizon
        )
        assert s.groups.select("group", "packets").rows() == want


def test_more_captures_than_files_may_be_open_say_which_and_what_to_raise(tmp_path: Path) -> None:
    # Each capture read together stays open to the end: past the limit on open files, the one
    # that could not be opened is named with the limit to raise, in Python and on the command
    # line (which listed every file given, 40 here, hundreds for a large job, before the file).
    files = []
    for k in range(40):
        p = tmp_path / f"host{k:02d}.pcapng"
        p.write_bytes(pcapng(traffic(k, 5, BASE + k)))
        files.append(str(p))
    limit = 32

    def limited() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    code = (
        "import errno, sys, burstcore\n"
        "try:\n"
        "    burstcore.scan(sys.argv[1:], windows=['1ms'], rates=['1Gbps'], threads=1)\n"
        "except OSError as e:\n"
        "    print(e.errno == errno.EMFILE, e.filename, e.strerror, sep='\\n')\n"
    )
    py = subprocess.run(
        [sys.executable, "-c", code, *files], capture_output=True, text=True, preexec_fn=limited, check=True
    )
    emfile, name, told = py.stdout.splitlines()
    assert emfile == "True" and name in files, py.stdout + py.stderr
    assert "too many files open at once" in told and f"(ulimit -n, now {limit})" in told, told
    cli = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", *files, "--windows", "1ms"],
        capture_output=True,
        text=True,
        preexec_fn=limited,
    )
    assert cli.returncode == 1, cli.stderr
    (line,) = cli.stderr.splitlines()
    assert line.startswith(f"burstcore scan: error: cannot read the capture {name}: cannot open it: too many"), line
    assert f"(ulimit -n, now {limit})" in line and files[0] not in line.replace(name, ""), line


def epb_offsets(data: bytes) -> list[int]:
    """The byte offset of each Enhanced Packet Block of a little-endian pcapng, by its framing."""
    out, at = [], 0
    while at < len(data):
        kind, length = struct.unpack_from("<II", data, at)
        if kind == 6:
            out.append(at)
        at += length
    return out


def first_late(captures: list[list[int]], horizon: int) -> tuple[int, int] | None:
    """(capture, packet index) of the first packet more than `horizon` behind the latest before
    it, the captures' packets merged as docs/metrics.md says: the least (timestamp, capture) of
    the captures' next packets, each capture read in its own order."""
    at = [0] * len(captures)
    latest = None
    while True:
        heads = [(c[at[k]], k) for k, c in enumerate(captures) if at[k] < len(c)]
        if not heads:
            return None
        t, k = min(heads)
        if latest is not None and latest - t > horizon:
            return k, at[k]
        latest = t if latest is None else max(latest, t)
        at[k] += 1


def test_a_late_packet_among_several_captures_is_named_with_its_offset(tmp_path: Path) -> None:
    # The scan's reorder buffer knows times, not files: among several captures its error had
    # neither an input nor an offset, where the analyses and a scan of one capture give both.
    late = traffic(21, 200, BASE + 3 * MS)
    late[120], late[30] = late[30], late[120]  # ~40 ms ahead at 30: the packets after it are late
    # The first file's own late packet is one its filter leaves out: only the second's counts.
    first = traffic(20, 200, BASE)
    icmp = eth_ipv4_udp("10.0.0.9", "10.0.0.8", 0, 0, 10, proto=1)
    first.insert(20, (first[19][0] - 50 * MS, icmp))
    third = traffic(22, 200, BASE + MS)
    files = {"first.pcapng": pcapng(first), "second.pcapng": pcapng(late), "third.pcapng": pcapng(third)}
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    times = [[t for t, _ in c] for c in (first, late, third)]
    udp_tcp = [[t for t, f in first if f != icmp], times[1], times[2]]
    k, i = first_late(udp_tcp, 10 * MS) or (-1, -1)
    assert k == 1
    at = epb_offsets(files["second.pcapng"])[i]
    for threads in (1, 2):
        with pytest.raises(burstcore.OutOfOrderError) as e:
            burstcore.scan(paths, windows=["1ms"], rates=["1Gbps"], threads=threads, filter=["not icmp", None, None])
        assert (e.value.input, e.value.offset) == (paths[1], at)
        assert str(e.value).endswith(f"at byte offset {at} of {paths[1]}")
    with pytest.raises(burstcore.OutOfOrderError) as e:
        burstcore.scan(list(files.values()), windows=["1ms"], rates=["1Gbps"], filter=["not icmp", None, None])
    assert (e.value.input, e.value.offset) == ("input 2 of 3", at)
    # As the analyses say it (each capture ordered on its own there: the same packet).
    with pytest.raises(burstcore.OutOfOrderError) as e:
        burstcore.flows(paths, filter=["not icmp", None, None])
    assert (e.value.input, e.value.offset) == (paths[1], at)
    # Without the filters, the late packet the merge meets first, wherever it is.
    k, i = first_late(times, 10 * MS) or (-1, -1)
    assert k == 0
    at = epb_offsets(files[list(files)[k]])[i]
    cli = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", *paths, "--windows", "1ms"], capture_output=True, text=True
    )
    assert cli.returncode == 1
    assert f"cannot read the capture {paths[k]}: " in cli.stderr, cli.stderr
    assert cli.stderr.rstrip().endswith(f"at byte offset {at}"), cli.stderr


def captures_with_named_interfaces(d: Path) -> tuple[list[Any], dict[tuple[str, int], int]]:
    """A pcapng with two named interfaces, a pcap, a pcapng of headers alone with one interface
    and a pcapng given as bytes with an unnamed one and a named one it sends nothing on; and how
    many packets each (capture as named, interface index) was written with."""
    frame = eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, 100)
    written: dict[tuple[str, int], int] = {}

    def ng(times: list[tuple[int, int]], names: list[str | None]) -> bytes:
        w = burstcore.CaptureWriter("pcapng")
        w.section()
        for name in names:
            w.interface(resolution="1e-9", name=name)
        for t, i in times:
            w.epb(i, frame, ts_ns=BASE + t * MS)
        return w.getvalue()

    first = d / "host_a.pcapng"
    first.write_bytes(ng([(1, 0), (2, 1), (3, 1), (50, 0), (51, 1)], ["eth0", "eth1"]))
    written |= {(str(first), 0): 2, (str(first), 1): 3}
    second = d / "host_b.pcap"
    second.write_bytes(pcap([(BASE + t * MS, frame) for t in (4, 5, 6, 7)]))
    written[(str(second), 0)] = 4
    third = d / "idle.pcapng"
    third.write_bytes(ng([], ["eth9"]))
    fourth = ng([(8, 0), (60, 0)], [None, "lo"])
    written[("input 4 of 4", 0)] = 2
    return [str(first), str(second), str(third), fourth], written


def interface_rows(files: list[str]) -> list[tuple[str, int, str, int, str | None]]:
    """ScanResult.interfaces of the captures of `captures_with_named_interfaces`, as written:
    (group, capture, source, interface, name); the fourth capture is given as bytes."""
    return [
        ("if0", 0, files[0], 0, "eth0"),
        ("if1", 0, files[0], 1, "eth1"),
        ("if2", 1, files[1], 0, None),
        ("if3", 2, files[2], 0, "eth9"),
        ("if4", 3, "input 4 of 4", 0, None),
        ("if5", 3, "input 4 of 4", 1, "lo"),
    ]


@pytest.mark.filterwarnings("ignore::burstcore.SharedPacketsWarning")
def test_interface_groups_of_several_captures_say_which_capture_they_are_of(tmp_path: Path) -> None:
    # The labels if0, if1, ... run on from one capture to the next: ScanResult.interfaces tells
    # which capture (and which interface of it) each is, checked against what each file was
    # written with, however many threads (the time chunks number them apart).
    files, written = captures_with_named_interfaces(tmp_path)
    for threads in (1, 2):
        r = burstcore.scan(files, windows=["1ms"], rates=["1Gbps"], by="interface", threads=threads)
        assert r.interfaces.rows() == interface_rows(files)
        counted = r.groups.join(r.interfaces, on="group").select("source", "interface", "packets").rows()
        assert {(s, i): p for s, i, p in counted} == written
    # One capture: its own interfaces; in-memory columns: none.
    one = burstcore.scan(files[0], windows=["1ms"], rates=["1Gbps"], by="interface")
    assert one.interfaces.select("group", "interface", "name").rows() == [("if0", 0, "eth0"), ("if1", 1, "eth1")]
    cols = burstcore.scan({"timestamp": [BASE], "size": [100]}, windows=["1ms"], rates=["1Gbps"], by="interface")
    assert cols.interfaces.height == 0 and cols.interfaces.columns == one.interfaces.columns


def test_superpose_by_interface_says_which_capture_each_group_is_of(tmp_path: Path) -> None:
    # The merge numbers interface groups as a scan of the same captures does (one after another):
    # SuperposeResult.interfaces tells which capture each is, checked against what each file was
    # written with. The same file given twice is two captures, each with its own groups.
    files, written = captures_with_named_interfaces(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", burstcore.CaptureWarning)  # the captures barely overlap
        r = burstcore.superpose(files, windows=["1ms"], rates=["1Gbps"], by="interface")
    assert r.interfaces.rows() == interface_rows(files)
    counted = r.groups.join(r.interfaces, on="group").select("source", "interface", "packets").rows()
    assert {(s, i): p for s, i, p in counted} == written
    twice = burstcore.superpose([files[0], files[0]], offsets=[0, "1ms"], windows=["1ms"], by="interface")
    assert twice.interfaces.select("group", "capture", "interface").rows() == [
        ("if0", 0, 0),
        ("if1", 0, 1),
        ("if2", 1, 0),
        ("if3", 1, 1),
    ]
    counted = twice.groups.join(twice.interfaces, on="group").select("capture", "interface", "packets").rows()
    assert {(c, i): p for c, i, p in counted} == {(c, i): written[(files[0], i)] for c in (0, 1) for i in (0, 1)}
