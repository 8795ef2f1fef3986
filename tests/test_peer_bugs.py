"""Bugs found in other pcap/pcapng readers and traffic tools, as regression tests: each test builds
the capture that exposed the peer's bug and checks burstcore against an independent oracle (the
arithmetic of the bytes written here by hand, and tshark's reading of the same file where tshark
is exact). The peers' bugs that other tests already cover are named there, not repeated here:

- signed if_tsoffset (libpcap PR #1240): rust reader_fixtures `negative_ts_offset_and_nanosecond_resolution`,
  tests/test_roundtrip.py `test_pcapng_roundtrip` (offsets of ±10^9 s);
- scaling of every resolution without overflow (libpcap #349/#396, pcap-parser's u32 fraction):
  rust capture/timestamp.rs `matches_exact_rational_floor`, `test_pcapng_roundtrip`;
- several IDBs, SPB and obsolete PB packets, orig_len (dpkt #681 and its dropped blocks,
  PyPCAPKit #347): `test_pcapng_roundtrip`, rust `mixed_byte_order_sections_number_interfaces_globally`;
- ns kept end to end (NFStream #231, python-pcapng #26): tests/test_analysis.py
  `test_flows_equal_brute_force`, `test_every_instant_and_duration_has_its_integer_ns_column`;
- window semantics (peers B.5): tests/test_scan_oracles.py `test_envelope_equals_polars_rolling_sum_by`,
  `test_envelope_and_backlog_equal_brute_force`, `test_invariants` (B_max = sup E(τ) − rτ).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import burstcore

from . import oracles
from .conftest import epoch_ns, tshark_fields

# 2019-11-15 15:00:16.444223380 UTC, the instant of scapy #2342's ProfiShark capture. As float64
# seconds it is 1573830016.4442234 (a step of 238 ns): the 24 ns scapy was off by.
PROFISHARK_NS = 1_573_830_016_444_223_380


def _block(kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", kind, n) + body + struct.pack("<I", n)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + bytes(-len(value) % 4)


SHB = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(linktype: int, options: list[bytes]) -> bytes:
    end = _opt(0, b"") if options else b""
    return _block(1, struct.pack("<HHI", linktype, 0, 0) + b"".join(options) + end)


def _epb(interface: int, raw: int, data: bytes) -> bytes:
    return _block(6, struct.pack("<IIIII", interface, raw >> 32, raw & 0xFFFF_FFFF, len(data), len(data)) + data)


def _spb(data: bytes) -> bytes:
    return _block(3, struct.pack("<I", len(data)) + data)


FRAME = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000, 2000, payload=18)
RAW_IP = FRAME[14:]  # the same packet on a raw-IP interface (link type 101)


def _ns(raw: int, units_per_s: int, offset_s: int = 0) -> int:
    return raw * 10**9 // units_per_s + offset_s * 10**9


def _read_ns(data: bytes) -> list[int]:
    return burstcore.read_packets(data, columns=["timestamp"])["timestamp"].dt.epoch("ns").to_list()


# tsresol byte → (units per second, how info() names it, whether tshark 4.0 converts it exactly:
# docs/metrics.md, it is exact up to 10^-10 and 2^-34).
TSRESOL = {
    0x10: (10**16, "1e-16", False),
    0x11: (10**17, "1e-17", False),
    0x13: (10**19, "1e-19", False),
    0x0A: (10**10, "1e-10", True),
    0x9E: (2**30, "2^-30", True),
    0xA0: (2**32, "2^-32", True),
    0xBF: (2**63, "2^-63", False),
}


@pytest.mark.parametrize("tsresol", sorted(TSRESOL))
def test_if_tsresol_is_told_apart_by_its_high_bit_alone(tmp_path: Path, tsresol: int) -> None:
    """pcap-parser #16 told a binary resolution by the mask 0x70 rather than 0x80, so decimal
    bytes 0x10-0x7F (10^-16 and finer) were read as powers of two; pcap-parser's time.rs then
    tested the raw byte (≥ 128) against 63, so no power-of-two resolution was ever read.
    Endace DAG writes 2^-32 (libpcap #117), ProfiShark a binary one too (libpcap #577)."""
    units, name, tshark_exact = TSRESOL[tsresol]
    # A realistic epoch where it fits 64 bits; else the largest raw value, near the i64 ns limit.
    raw = min(PROFISHARK_NS * units // 10**9, 2**64 - 1 - 12_345)
    raws = [raw, raw + 1, raw + 12_345]
    data = SHB + _idb(1, [_opt(9, bytes([tsresol])), _opt(14, struct.pack("<q", -7))])
    data += b"".join(_epb(0, r, FRAME) for r in raws)
    assert _read_ns(data) == [_ns(r, units, -7) for r in raws]
    assert burstcore.info(data).interfaces[0]["resolution"] == name
    if tshark_exact:
        path = tmp_path / "tsresol.pcapng"
        path.write_bytes(data)
        assert [epoch_ns(t) for (t,) in tshark_fields(path, ["frame.time_epoch"])] == _read_ns(data)


@pytest.mark.parametrize("tsresol", [9, 0x9E])
def test_a_profishark_style_interface_keeps_every_nanosecond(tmp_path: Path, tsresol: int) -> None:
    """scapy #2342: on a ProfiShark capture scapy's times were 10^3 too large and 24 ns off (the
    float); libpcap #577 read the same files' binary if_tsresol wrong. ProfiShark's IDB holds
    if_tsresol among other options, after the interface's name, description and speed."""
    units = 10**9 if tsresol == 9 else 2**30
    options = [
        _opt(2, b"ProfiShark port A"),
        _opt(3, b"ProfiShark 1G+"),
        _opt(8, struct.pack("<Q", 10**9)),
        _opt(9, bytes([tsresol])),
        _opt(12, b"ProfiShark Manager"),
    ]
    raws = [PROFISHARK_NS * units // 10**9 + k for k in (0, 1, 7)]
    data = SHB + _idb(1, options) + b"".join(_epb(0, r, FRAME) for r in raws)
    want = [_ns(r, units) for r in raws]
    assert _read_ns(data) == want
    if tsresol == 9:
        assert want[0] == PROFISHARK_NS and round(PROFISHARK_NS / 1e9 * 1e9) != PROFISHARK_NS  # float64 could not
    path = tmp_path / "profishark.pcapng"
    path.write_bytes(data)
    assert [epoch_ns(t) for (t,) in tshark_fields(path, ["frame.time_epoch"])] == want
    flows = burstcore.flows(data)
    assert flows.select("first_seen_ns", "last_seen_ns").row(0) == (want[0], want[-1])


def test_an_interface_declared_after_packets_keeps_its_own_clock_and_link(tmp_path: Path) -> None:
    """dpkt #681 read only the first IDB: packets of an interface declared later were read with
    another's resolution, or lost. Here interface 1 (raw IP, ns, if_tsoffset -1 s) is declared
    after interface 0's packets (Ethernet, µs), and both interleave after it."""
    base_us = 1_700_000_000_000_000
    data = SHB + _idb(1, [])
    want: list[tuple[int, int, int]] = []  # (ns, interface, wire length)
    for k in range(40):
        data += _epb(0, base_us + 3 * k, FRAME)
        want.append(((base_us + 3 * k) * 1000, 0, len(FRAME)))
    data += _idb(101, [_opt(9, bytes([9])), _opt(14, struct.pack("<q", -1))])
    for k in range(40):
        raw = (base_us + 200) * 1000 + 10**9 + 333 * k  # minus the 1 s of its offset
        data += _epb(1, raw, RAW_IP)
        want.append((raw - 10**9, 1, len(RAW_IP)))
        data += _epb(0, base_us + 200 + k, FRAME)
        want.append(((base_us + 200 + k) * 1000, 0, len(FRAME)))
    df = burstcore.read_packets(data, columns=["timestamp", "interface", "wire_len", "linktype", "src"])
    got = list(zip(df["timestamp"].dt.epoch("ns"), df["interface"], df["wire_len"], strict=True))
    assert got == want
    assert set(zip(df["interface"], df["linktype"], df["src"], strict=True)) == {
        (0, 1, "10.0.0.1"),
        (1, 101, "10.0.0.1"),
    }
    path = tmp_path / "late-idb.pcapng"
    path.write_bytes(data)
    fields = tshark_fields(path, ["frame.time_epoch", "frame.interface_id", "frame.len"])
    assert [(epoch_ns(t), int(i), int(n)) for t, i, n in fields] == want
    # Scanned on one thread or cut in time chunks, from the same packets in time order.
    ts, sizes = zip(*sorted((t, n) for t, _, n in want), strict=True)
    windows = [1, 1000, 5000, 300_000]
    for threads in (1, 2, 3):
        r = burstcore.scan(data, windows=[f"{w}ns" for w in windows], rates=["1Gbps"], threads=threads)
        got_env = r.envelope.sort("window_ns")["bytes"].to_list()
        assert got_env == [oracles.envelope(list(ts), list(sizes), w)[0] for w in windows], threads


def test_a_packet_before_its_interface_says_which_block_and_what_went_wrong(tmp_path: Path) -> None:
    """libpcap refuses a packet block before any IDB, and numbers interfaces afresh in each
    section (tshark too). burstcore refused alike but told an SPB (which names no interface) that
    it "names interface 0", and a section without an IDB that it "declares only 0", without
    saying what that means for the file. tshark's complaint about the same bytes is the oracle."""
    cases = [
        # (capture, offset of the bad block, words, tshark's complaint)
        (SHB + _spb(FRAME), len(SHB), "simple packet block belongs to interface 0", "SPB appeared before any IDBs"),
        (
            SHB + _idb(1, []) + _epb(0, 5, FRAME) + SHB + _spb(FRAME),
            len(SHB + _idb(1, []) + _epb(0, 5, FRAME) + SHB),
            "its section declares no interface before it",
            "SPB appeared before any IDBs",
        ),
        (
            SHB + _idb(1, []) + _idb(1, []) + _epb(1, 5, FRAME) + SHB + _idb(1, []) + _epb(1, 6, FRAME),
            len(SHB + _idb(1, []) + _idb(1, []) + _epb(1, 5, FRAME) + SHB + _idb(1, [])),
            "enhanced packet block names interface 1, but its section declares only interface 0",
            "interface index 1 is not less than section interface count 1",
        ),
        (
            SHB
            + _idb(1, [])
            + _idb(1, [])
            + _block(2, struct.pack("<HHII", 2, 0, 0, 1) + struct.pack("<II", len(FRAME), len(FRAME)) + FRAME),
            len(SHB + _idb(1, []) + _idb(1, [])),
            "packet block names interface 2, but its section declares only interfaces 0 to 1",
            "interface index 2 is not less than section interface count 2",
        ),
    ]
    if shutil.which("tshark") is None:
        pytest.fail("tshark is not installed (bash .ci/setup installs it)")
    for k, (data, at, words, theirs) in enumerate(cases):
        with pytest.raises(burstcore.UndeclaredInterfaceError) as e:
            burstcore.read_packets(data)
        assert e.value.offset == at  # type: ignore[attr-defined]
        assert words in str(e.value) and "damaged" in str(e.value), str(e.value)
        path = tmp_path / f"undeclared-{k}.pcapng"
        path.write_bytes(data)
        out = subprocess.run(["tshark", "-n", "-r", str(path)], capture_output=True, text=True, check=False)
        assert theirs in out.stderr, out.stderr


def test_a_sliding_window_sees_the_burst_a_tumbling_bin_cuts_in_two() -> None:
    """tshark's io,stat, FMADIO's buckets and WhiteOwl's "sliding" 10 ms windows are aligned
    slots: a burst across a slot edge shows as two halves, up to 2× under E(τ) (peers B.1, B.3).
    A guard: burstcore's E(τ) slides, and its binned series stays the aligned slots it says."""
    edge = 1_700_000_000_010_000_000  # a multiple of 10 ms
    ts = [edge + 10_000 * k for k in range(-400, 400)]  # 4 ms either side of the edge
    sizes = [100] * len(ts)
    r = burstcore.scan(oracles.capture(ts, sizes), windows=["10ms"], rates=["1Gbps"], bins=["10ms"])
    assert r.envelope["bytes"].to_list() == [sum(sizes)] == [oracles.envelope(ts, sizes, 10_000_000)[0]]
    bins = oracles.binned(ts, sizes, 10_000_000)
    assert max(b for b, _ in bins.values()) == sum(sizes) // 2
    assert dict(r.series.filter(r.series["bytes"] > 0).select("start_ns", "bytes").iter_rows()) == {
        k: b for k, (b, _) in bins.items()
    }
