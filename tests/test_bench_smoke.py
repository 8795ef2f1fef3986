"""The benchmark harness on tiny captures: it runs end to end and its output is sane.

Timings are never asserted (CI machines vary); what is checked is that every tool read the
packets the writer wrote, and that the peers' E(τ), computed independently (tshark's decimal
timestamps and polars' rolling sums, exact integers), equals burstcore's on every window.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The tools compared with burstcore, each computing the 20 E(τ) and 8 B_max itself.
PEERS = ("polars", "tshark", "dpkt", "scapy")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if shutil.which("tshark") is None:
        pytest.fail("tshark is needed (installed by .ci/setup)")
    tmp = tmp_path_factory.mktemp("bench")
    out, js = tmp / "RESULTS.md", tmp / "results.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benches" / "run.py"),
            "--smoke",
            "--data",
            str(tmp),
            "--out",
            str(out),
            "--json",
            str(js),
        ],
        check=True,
        timeout=600,
    )
    return {"md": out.read_text(), **json.loads(js.read_text())}


def test_every_tool_reads_every_packet(smoke: dict) -> None:
    results = smoke["results"]
    main = [
        r
        for r in results
        if (not r["capture"].startswith("snap128-pcap-") or r["capture"].endswith("-2m"))
        and not r["capture"].startswith("hosts-")
    ]
    tools = {r["tool"] for r in main}
    assert tools == {
        "cat",
        "framing",
        "framing_mapped",
        "scan",
        "scan_buffered",
        "scan2",
        "yardstick",
        "lines",
        "lines2",
        "pages",
        "read_packets",
        "read_packets2",
        "read_packets_ts",
        "polars",
        "tshark",
        "dpkt",
        "scapy",
    }
    by_capture: dict[str, list[dict]] = {}
    for r in main:
        by_capture.setdefault(r["capture"], []).append(r)
    assert len(by_capture) == 4  # pcap/pcapng × full/snaplen 128
    for capture, rs in by_capture.items():
        # The C yardstick frames pcap only.
        assert ("yardstick" in {r["tool"] for r in rs}) == ("-pcap-" in capture), capture
        packets = {r["tool"]: r["packets"] for r in rs}
        # The smoke run reads whole files (no slices): every tool sees the same packets.
        assert len(set(packets.values())) == 1, (capture, packets)
        assert packets["scan"] > 1000
        wire = {r["tool"]: r["extra"]["wire_bytes"] for r in rs if "wire_bytes" in r["extra"]}
        assert len(set(wire.values())) == 1, (capture, wire)
        for r in rs:
            assert r["seconds"] > 0 and r["peak_rss"] > 0 and not r["sliced"]


def test_independent_envelopes_equal_burstcore(smoke: dict) -> None:
    windows = smoke["windows_ns"]
    assert len(windows) == 20 and len(smoke["rates_bps"]) == 8
    for capture in {r["capture"] for r in smoke["results"]}:
        rs = {r["tool"]: r for r in smoke["results"] if r["capture"] == capture}
        if "tshark" not in rs:
            continue  # memory-check captures are scanned only
        env = rs["scan"]["extra"]["envelope"]
        assert len(env) == 20 and env == sorted(env)
        # Exact oracles: tshark's decimal ns timestamps, dpkt's and scapy's exact ns (pcap and
        # pcapng alike), with int64 numpy; polars rolling sums.
        for peer in PEERS:
            assert rs[peer]["extra"]["envelope"] == env, (capture, peer)
        # The buffered read (mmap=False): exactly the same numbers.
        assert rs["scan_buffered"]["extra"]["envelope"] == env, capture
        assert rs["scan_buffered"]["extra"]["bmax"] == rs["scan"]["extra"]["bmax"], capture
        # Two threads: exactly the same numbers.
        assert rs["scan2"]["extra"]["envelope"] == env, capture
        assert rs["scan2"]["extra"]["bmax"] == rs["scan"]["extra"]["bmax"], capture
        # Each two-thread run was paired with a one-thread run just before it.
        pairs = rs["scan2"]["extra"]["pairs"]
        assert len(pairs) == 1 and pairs[0] > 0, capture
        # The C yardstick (walked trails, integer Lindley in bit-ns) on pcap: the same
        # E(τ), and B_max to the last digits of a double.
        if "yardstick" in rs:
            assert rs["yardstick"]["extra"]["envelope"] == env, capture
            for a, b in zip(rs["yardstick"]["extra"]["bmax"], rs["scan"]["extra"]["bmax"], strict=True):
                assert a == pytest.approx(b, rel=1e-12), capture
        # The floors loaded one byte of every cache line (of every page) of the whole file: their
        # sum, checked here from the file's bytes. Each two-thread run was paired.
        for tool, stride in (("lines", 64), ("lines2", 64), ("pages", 4096)):
            got = rs[tool]["extra"]
            data = Path(got["path"]).read_bytes()
            assert got["stride"] == stride and got["bytes"] == len(data), (capture, tool)
            assert got["sum"] == sum(data[::stride]), (capture, tool)
        assert len(rs["lines2"]["extra"]["pairs"]) == 1, capture
        # B_max from float cumulative sums (the peers' way) agrees to float precision.
        for peer in PEERS:
            for a, b in zip(rs[peer]["extra"]["bmax"], rs["scan"]["extra"]["bmax"], strict=True):
                assert a == pytest.approx(b, rel=1e-6, abs=1.0), (capture, peer)


def test_per_host_files_scan_as_the_single_capture(smoke: dict) -> None:
    # The same traffic written as one file per host (gen_training --per-host), scanned together
    # on one thread and on two: the packets, bytes, E(τ) and B_max of the single capture.
    rs = {(r["capture"], r["tool"]): r for r in smoke["results"]}
    single = rs[("snap128-pcap-2m", "scan")]
    for tool in ("scan", "scan2"):
        r = rs[("hosts-snap128-pcap-2m", tool)]
        for key in ("packets", "wire_bytes", "envelope", "bmax"):
            got = r["packets"] if key == "packets" else r["extra"][key]
            want = single["packets"] if key == "packets" else single["extra"][key]
            assert got == want, (tool, key)
    assert len(rs[("hosts-snap128-pcap-2m", "scan2")]["extra"]["pairs"]) == 1
    assert "| hosts-snap128-pcap-2m |" in smoke["md"]


def test_report_has_machine_targets_and_memory_check(smoke: dict) -> None:
    md = smoke["md"]
    for needle in (
        "## Machine",
        "| CPU |",
        "| kernel |",
        "## Targets (issue 7)",
        "## Memory check",
        "scan is faster by",
        "paired speed-up",
        "| 2 threads ≥ 1.8× one (median of the pairs) |",
        "| (for scale) the issue's C yardstick, measured here |",
        "| (for scale) every cache line of the mapped file loaded",
        "| (for scale) the kernel's part: one load per page",
        "every line loaded, paired",
    ):
        assert needle in md, needle
    mem = [r for r in smoke["results"] if r["capture"] in ("snap128-pcap-1m", "snap128-pcap-4m")]
    assert [r["tool"] for r in mem] == ["scan", "scan_pair", "scan", "scan_pair"]
    assert mem[2]["packets"] > 3 * mem[0]["packets"]
    assert mem[1]["packets"] == mem[0]["packets"] and mem[3]["packets"] == mem[2]["packets"]
    assert "peak RSS, by all and pair" in md


def test_read_packets_total_past_4_gib_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # polars sums a UInt32 column in 32 bits: the harness's total of `read_packets`' wire
    # lengths must not wrap (the 2 GB snaplen-128 benchmark captures carry 16.7 GB of frames).
    import importlib.util

    from tests.oracles import PAST_4_GIB, capture_past_4_gib

    n, wire = PAST_4_GIB
    path = tmp_path / "jumbo.pcap"
    path.write_bytes(capture_past_4_gib())
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benches" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up there; only for this test.
    monkeypatch.setitem(sys.modules, "bench_run", run)
    spec.loader.exec_module(run)
    for tool in ("read_packets", "read_packets_ts"):
        d = run._child(tool, str(path), 0, [1_000_000], [10**9])
        assert (d["packets"], d["wire_bytes"]) == (n, n * wire), tool
    assert n * wire > 2**32


def test_no_gnu_time_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without GNU time every peak RSS would be the harness's own size or more (wait4 on a child
    # of a large process): the run refuses, saying what to install, before building anything.
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benches" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_run", run)
    spec.loader.exec_module(run)
    monkeypatch.setattr(run, "TIME", tmp_path / "no-time")
    monkeypatch.setattr(sys, "argv", ["run.py", "--smoke", "--data", str(tmp_path / "data")])
    with pytest.raises(SystemExit, match="install the `time` package"):
        run.main()
    assert not (tmp_path / "data").exists()
