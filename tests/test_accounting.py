"""Every packet is counted in the metrics or reported in ``ScanResult.summary`` as skipped, with
its reason; the counts add up to the packets in the file, as counted by tshark (independent
reader) and by ``burstcore.info``."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

import burstcore

T0 = 1_700_000_000_000_000_000
MAC = b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb"


def ipv4(proto: int, payload: bytes) -> bytes:
    return (
        struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, b"\x0a\0\0\x01", b"\x0a\0\0\x02")
        + payload
    )


def udp(n: int) -> bytes:
    return MAC + b"\x08\x00" + ipv4(17, struct.pack(">HHHH", 1, 2, 8 + n, 0) + b"u" * n)


def icmp() -> bytes:
    return MAC + b"\x08\x00" + ipv4(1, b"\x08\x00\x00\x00\x00\x01\x00\x01" + b"p" * 32)


def arp() -> bytes:
    return MAC + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\0" * 20


def ip_header_cut() -> bytes:
    """Ethernet announcing IPv4, captured before the IP header."""
    return MAC + b"\x08\x00" + b"\x45\x00"


def tshark_count(path: Path) -> int:
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, check=True
    )
    return len(out.stdout.split())


def need_tshark() -> None:
    if not shutil.which("tshark"):
        if os.environ.get("BURSTCORE_SHARED"):
            pytest.fail("tshark is missing (CI installs it with .ci/setup)")
        pytest.skip("tshark not installed")


# What goes into the hand-made capture, and how many of each kind (the oracle for the reasons).
KINDS = {"udp": 9, "icmp": 2, "arp": 3, "cut": 2, "spb": 4, "ts_out_of_range": 1, "late": 2}


def mixed_capture() -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    t = T0
    frames = [udp(10 + i) for i in range(KINDS["udp"])]
    frames += [icmp()] * KINDS["icmp"] + [arp()] * KINDS["arp"] + [ip_header_cut()] * KINDS["cut"]
    for i, f in enumerate(frames):
        t += 1000
        w.epb(0, f, ts_ns=t)
        if i == 4:
            # Two packets well behind the latest timestamp: late for a zero reorder horizon.
            for back in range(KINDS["late"]):
                w.epb(0, udp(3), ts_ns=t - 500 - back)
    for _ in range(KINDS["spb"]):
        w.spb(udp(5))
    # 2^64 - 1 ns after 1970 does not fit in int64 nanoseconds.
    for _ in range(KINDS["ts_out_of_range"]):
        w.epb(0, udp(6), ts_raw=2**64 - 1)
    w.epb(0, udp(7), ts_ns=t + 1000)
    return w.getvalue()


TOTAL = sum(KINDS.values()) + 1


def skipped_total(s: dict[str, Any]) -> int:
    return sum(v for k, v in s.items() if k.startswith("skipped_"))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("acct") / "mixed.pcapng"
    p.write_bytes(mixed_capture())
    return p


def test_the_file_holds_what_we_think(mixed: Path) -> None:
    need_tshark()
    assert tshark_count(mixed) == TOTAL
    assert burstcore.info(mixed).packets == TOTAL


@pytest.mark.parametrize("size", ["wire", "captured", "l1", "ip", "payload"])
@pytest.mark.parametrize("on_late", ["drop", "error"])
def test_reasons_add_up(mixed: Path, size: str, on_late: str) -> None:
    horizon = 0 if on_late == "drop" else "1ms"
    r = burstcore.scan(mixed, windows=["1us"], rates=["1Gbps"], size=size, reorder_horizon=horizon, on_late=on_late)  # type: ignore[arg-type]
    s = r.summary.row(0, named=True)
    assert s["packets_read"] == TOTAL
    assert s["packets"] + skipped_total(s) == TOTAL
    assert s["skipped_no_timestamp"] == KINDS["spb"]
    assert s["skipped_timestamp_out_of_range"] == KINDS["ts_out_of_range"]
    assert s["skipped_late"] == (KINDS["late"] if on_late == "drop" else 0)
    # Headers a size needs: ARP has no IP header, the cut frames lose it; ICMP has no UDP/TCP payload.
    no_size = {"ip": KINDS["arp"] + KINDS["cut"], "payload": KINDS["arp"] + KINDS["cut"] + KINDS["icmp"]}
    assert s["skipped_no_size"] == no_size.get(size, 0)
    # The counted packets are the ones every grouping sees.
    assert r.groups.filter(by="all")["packets"].sum() == s["packets"]


def test_scan_with_groupings_still_adds_up(mixed: Path) -> None:
    r = burstcore.scan(
        mixed,
        windows=["1us"],
        rates=["1Gbps"],
        by=["src", "flow", "vlan"],
        size="payload",
        reorder_horizon=0,
        on_late="drop",
    )
    s = r.summary.row(0, named=True)
    assert s["packets"] + skipped_total(s) == TOTAL
    for by in ("src", "flow", "vlan"):
        assert r.groups.filter(by=by)["packets"].sum() == s["packets"]


def test_every_path_keeps_the_reasons_apart(mixed: Path) -> None:
    """The reader hands out a timestamp that does not fit int64 ns as no timestamp: the analyses'
    own reading loop tells it apart from a Simple Packet Block too, and so does a two-thread scan
    (its warning sends the scan the sequential way)."""
    one = burstcore.scan(mixed, windows=["1us"], rates=["1Gbps"], reorder_horizon=0, on_late="drop").summary
    two = burstcore.scan(mixed, windows=["1us"], rates=["1Gbps"], reorder_horizon=0, on_late="drop", threads=2)
    assert two.summary.equals(one)
    dist = burstcore.sizes(mixed, reorder_horizon=0, on_late="drop").summary.row(0, named=True)
    for s in (one.row(0, named=True), dist):
        assert s["packets_read"] == TOTAL
        assert s["skipped_no_timestamp"] == KINDS["spb"]
        assert s["skipped_timestamp_out_of_range"] == KINDS["ts_out_of_range"]
        assert s["packets"] + skipped_total(s) == TOTAL


def shared() -> Path | None:
    root = os.environ.get("BURSTCORE_SHARED")
    return Path(root) if root else None


def corpus_entries() -> list[dict[str, Any]]:
    root = shared()
    if root is None:
        return []
    index = root / "corpus" / "index.jsonl"
    if not index.exists():
        pytest.fail(f"BURSTCORE_SHARED is set but {index} is missing")
    rows = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    return [
        r
        for r in rows
        if r["tshark_exit"] == 0
        and r["strict_walk_error"] is None
        and r["format"] in ("pcap", "pcapng")
        and r["size"] <= 300_000
        and r["packets_tshark"] is not None
    ]


@pytest.mark.filterwarnings("ignore::burstcore.CaptureWarning")
def test_corpus_counts_add_up_to_tshark() -> None:
    """On the public corpus: scanning for transport payload with a zero horizon drops and skips
    plenty; everything still adds up to tshark's count and to info()."""
    root = shared()
    if root is None:
        pytest.skip("BURSTCORE_SHARED not set")
    entries = corpus_entries()
    assert len(entries) > 500
    failures = []
    for e in entries:
        path = root / "corpus" / e["path"]
        try:
            r = burstcore.scan(
                path, windows=["1ms"], rates=["1Gbps"], size="payload", reorder_horizon=0, on_late="drop"
            )
        except burstcore.CaptureError as exc:
            failures.append((e["path"], repr(exc)))
            continue
        s = r.summary.row(0, named=True)
        ok = (
            s["packets_read"] == e["packets_tshark"]
            and s["packets"] + skipped_total(s) == s["packets_read"]
            and s["skipped_no_timestamp"] == (e["packets_without_timestamp"] or 0)
        )
        if not ok:
            failures.append((e["path"], s))
    assert not failures, failures[:5]
