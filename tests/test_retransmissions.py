"""TCP retransmissions per flow (``flows()``'s retransmitted_packets/bytes): against a brute-force
reading of the definition in docs/metrics.md over ``read_packets``' columns, on hand-built and
hypothesis-built segment sequences, and against tshark's analysis flags on a real capture."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from tests.conftest import shared_file, tshark_fields

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
WRAP = 1 << 32
HALF = 1 << 31
HEADERS = 14 + 20 + 20  # Ethernet, IPv4, TCP without options
SNAPLEN = 64


# ------------------------------------------------------------------------------ the reference


def _unwrap(value: int, near: int | None) -> int:
    """The integer ≡ value (mod 2^32) in [near − 2^31, near + 2^31): serial-number arithmetic
    made plain integers (`near` is None for the first one)."""
    if near is None:
        return value
    return near - HALF + (value - (near - HALF)) % WRAP


def resent_frames(packets: pl.DataFrame) -> list[int]:
    """Indices (file order) of the packets the definition counts: in time order, per direction, a
    segment occupying sequence space whose end is not past the highest end of the earlier ones,
    keep-alives and cut headers aside; a SYN with a new sequence number begins a new connection
    (the earlier segments are forgotten). Sequence numbers are unwrapped into plain integers."""
    out = []
    highest: dict[tuple, int] = {}
    syn_of: dict[tuple, int] = {}
    ordered = packets.with_row_index("i").sort("timestamp", "i")
    for p in ordered.iter_rows(named=True):
        seq, flags, length = p["tcp_seq"], p["tcp_flags"], p["payload_len"]
        if p["protocol"] != 6 or p["src"] is None or seq is None or flags is None or length is None:
            continue
        direction = (p["src"], p["sport"], p["dst"], p["dport"])
        occupied = length + (1 if flags & SYN else 0) + (1 if flags & FIN else 0)
        if flags & SYN and syn_of.get(direction) != seq:
            syn_of[direction] = seq
            highest[direction] = seq + occupied
            continue
        before = highest.get(direction)
        end = _unwrap((seq + occupied) % WRAP, before)
        highest[direction] = end if before is None else max(before, end)
        if before is None or end > before or occupied == 0:
            continue
        keep_alive = length <= 1 and not flags & (SYN | FIN | RST) and end - length == before - 1
        if not keep_alive:
            out.append(p["i"])
    return out


def reference(packets: pl.DataFrame, row_of: Callable[[dict], object]) -> dict[object, tuple[int, int] | None]:
    """{row: (retransmitted packets, bytes), or None for a row without TCP} from ``resent_frames``."""
    rows: dict[object, tuple[int, int] | None] = {}
    for p in packets.iter_rows(named=True):
        # A flow needs both addresses: a header cut inside its destination has its source only
        # (read as tshark reads it) and belongs to no flow.
        if p["src"] is not None and p["dst"] is not None:
            row = row_of(p)
            rows[row] = rows.get(row) or ((0, 0) if p["protocol"] == 6 else None)
    for i in resent_frames(packets):
        p = packets.row(i, named=True)
        n, b = rows[row_of(p)] or (0, 0)
        rows[row_of(p)] = (n + 1, b + p["wire_len"])
    return rows


def directional(p: dict) -> object:
    return (p["src"], p["dst"], p["protocol"], p["sport"] or 0, p["dport"] or 0)


def both_ways(p: dict) -> object:
    return (p["protocol"], frozenset([(p["src"], p["sport"] or 0), (p["dst"], p["dport"] or 0)]))


def ours(source: object, key: str) -> dict[object, tuple[int, int] | None]:
    df = burstcore.flows(source, key=key)
    out: dict[object, tuple[int, int] | None] = {}
    for r in df.iter_rows(named=True):
        p = {
            "src": r["src"],
            "dst": r["dst"],
            "protocol": r["protocol"],
            "sport": r["sport"],
            "dport": r["dport"],
        }
        row = both_ways(p) if key == "biflow" else directional(p)
        packets, size = r["retransmitted_packets"], r["retransmitted_bytes"]
        assert (packets is None) == (size is None)
        out[row] = None if packets is None else (packets, size)
    return out


COLUMNS = ["timestamp", "src", "dst", "protocol", "sport", "dport", "tcp_flags", "tcp_seq", "payload_len", "wire_len"]


def packets_of(source: object) -> pl.DataFrame:
    return burstcore.read_packets(source, COLUMNS).with_columns(pl.col("timestamp").dt.epoch("ns"))


def check(source: object) -> None:
    packets = packets_of(source)
    assert ours(source, "flow") == reference(packets, directional)
    assert ours(source, "biflow") == reference(packets, both_ways)


# ------------------------------------------------------------------------------ the captures


def frame(src: int, dst: int, seq: int, flags: int, payload: int, proto: int = 6) -> bytes:
    """Ethernet/IPv4/TCP (or UDP) from 10.0.0.src:src to 10.0.0.dst:dst, payload of zeros."""
    sport, dport = 40_000 + src, 40_000 + dst
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq % WRAP, 0, 5 << 4, flags, 1024, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + payload, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4) + payload, 0, 0, 64, proto, 0,
                     bytes([10, 0, 0, src]), bytes([10, 0, 0, dst]))  # fmt: skip
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + l4 + b"\x00" * payload


def write(packets: list[tuple[int, bytes, int]]) -> bytes:
    """A pcap of (ts_ns, frame, bytes captured) in the order given, cut at the snaplen."""
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for ts, data, kept in packets:
        w.packet(ts, data[: min(kept, SNAPLEN)], wire_len=len(data))
    return w.getvalue()


def test_hand_built_sequences_match_the_reference_and_the_expected_counts():
    base = WRAP - 3000  # the data wraps past 2^32
    seg = [
        (1, 2, base, SYN, 0),
        (2, 1, 77, SYN | ACK, 0),
        (1, 2, base, SYN, 0),  # SYN resent
        (1, 2, base + 1, ACK, 1448),
        (1, 2, base + 1449, ACK, 1448),
        (1, 2, base + 2897, ACK, 1448),  # past 2^32
        (1, 2, base + 1449, ACK, 1448),  # resent across the wrap
        (1, 2, base + 4344, ACK, 0),  # keep-alive: the byte before the next one, no data
        (1, 2, base + 4344, ACK, 1),  # keep-alive with its garbage byte
        (2, 1, 78, ACK, 100),
        (1, 2, base + 4345, FIN | ACK, 0),
        (1, 2, base + 4345, FIN | ACK, 0),  # FIN resent
        (2, 1, 78, ACK, 100),
    ]
    packets = [(i * 1000, frame(*s), SNAPLEN) for i, s in enumerate(seg)]
    # A header cut before its sequence number counts nowhere.
    packets.append((20_000, frame(1, 2, base + 1, ACK, 1448), 14 + 20 + 6))
    packets.append((21_000, frame(1, 2, 0, 0, 30, proto=17), SNAPLEN))
    data = write(packets)
    check(data)
    got = ours(data, "flow")
    tcp = 1448 + HEADERS
    assert got[("10.0.0.1", "10.0.0.2", 6, 40_001, 40_002)] == (3, HEADERS + tcp + HEADERS)
    assert got[("10.0.0.2", "10.0.0.1", 6, 40_002, 40_001)] == (1, 100 + HEADERS)
    assert got[("10.0.0.1", "10.0.0.2", 17, 40_001, 40_002)] is None
    biflow = burstcore.flows(data, key="biflow")
    assert biflow["retransmitted_packets"].to_list() == [4, None]


def test_arrivals_are_taken_in_time_order_not_file_order():
    # Written late in the file, but earlier in time: the first segment, then the second is new.
    later, earlier = frame(1, 2, 1000, ACK, 100), frame(1, 2, 900, ACK, 100)
    data = write([(2000, later, SNAPLEN), (1000, earlier, SNAPLEN)])
    check(data)
    assert burstcore.flows(data)["retransmitted_packets"].to_list() == [0]


def test_a_resend_after_a_silence_counts_in_the_flow_the_silence_opens():
    # A retransmission timeout: 50 ms of silence, then the unacknowledged segment again.
    seg = [(0, (1, 2, 0, ACK, 1000)), (1_000, (1, 2, 1000, ACK, 1000)), (51_000_000, (1, 2, 1000, ACK, 1000))]
    data = write([(t, frame(*s), SNAPLEN) for t, s in seg])
    got = burstcore.flows(data, idle_timeout="10ms", key="biflow")
    assert got["packets"].to_list() == [2, 1]
    assert got["retransmitted_packets"].to_list() == [0, 1]


@pytest.mark.parametrize("timeout", ["100us", "1ms", "20ms"])
def test_an_idle_timeout_splits_flows_but_not_their_retransmissions(timeout: str) -> None:
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    for key in ("flow", "biflow"):
        whole = burstcore.flows(path, key=key)
        split = burstcore.flows(path, key=key, idle_timeout=timeout)
        assert split.height > whole.height
        for col in ("retransmitted_packets", "retransmitted_bytes"):
            assert split[col].sum() == whole[col].sum() > 0


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[int, bytes, int]]:
    """Two directions of a TCP connection: new data, resends, jumps either way, keep-alives,
    SYNs (again, or with a new ISN as a reused port), FINs, RSTs, pure ACKs and cut headers,
    with sequence numbers starting anywhere (near 2^32 often), some packets written out of
    time order within the reorder horizon."""
    isn = [draw(st.one_of(st.integers(0, WRAP - 1), st.integers(WRAP - 5000, WRAP - 1))) for _ in range(2)]
    nxt = [s + 1 for s in isn]
    sent: list[list[tuple[int, int, int]]] = [[], []]
    out = []
    for i in range(draw(st.integers(1, 40))):
        d = draw(st.integers(0, 1))
        op = draw(st.sampled_from(["data", "data", "resend", "jump", "keepalive", "syn", "fin", "ack", "rst"]))
        length = draw(st.sampled_from([0, 1, 2, 100, 1448]))
        if op == "data":
            seg = (nxt[d], ACK, length)
            nxt[d] += length
        elif op == "resend" and sent[d]:
            seg = draw(st.sampled_from(sent[d]))
        elif op == "jump":
            seg = (nxt[d] + draw(st.integers(-3000, 3000)), ACK | PSH, length)
        elif op == "keepalive":
            seg = (nxt[d] - 1, ACK, draw(st.integers(0, 1)))
        elif op == "syn":
            if draw(st.booleans()):
                isn[d] = draw(st.integers(0, WRAP - 1))
                nxt[d] = isn[d] + 1
            seg = (isn[d], SYN | (ACK if d else 0), 0)
        elif op == "fin":
            seg = (nxt[d], FIN | ACK, length)
            nxt[d] += length + 1
        else:
            seg = (nxt[d], RST if op == "rst" else ACK, 0)
        sent[d].append(seg)
        kept = draw(st.sampled_from([SNAPLEN] * 6 + [30, 14 + 20 + 7, 14 + 20 + 8, 14 + 20 + 13, 14 + 20 + 14]))
        src, dst = (1, 2) if d == 0 else (2, 1)
        out.append((i * 1000, frame(src, dst, seg[0], seg[1], seg[2]), kept))
    # Neighbours swapped in the file: the flows still see them in time order.
    for j in draw(st.lists(st.integers(0, max(len(out) - 2, 0)), max_size=5)):
        if j + 1 < len(out):
            out[j], out[j + 1] = out[j + 1], out[j]
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_conversations_match_the_reference(packets):
    check(write(packets))


# ------------------------------------------------------------------------------ tshark


TSHARK_FLAGGED = (
    "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"
    " || tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order"
)


def tshark_flagged(path: Path) -> dict[int, bool]:
    """{frame index (0-based): flagged as a spurious retransmission} of the frames tshark flags."""
    fields = ["frame.number", "tcp.analysis.spurious_retransmission"]
    return {int(r[0]) - 1: r[1] != "" for r in tshark_fields(path, fields, ["-Y", TSHARK_FLAGGED])}


def test_tcp_seq_column_equals_tsharks():
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    theirs = [int(r[0]) if r[0] else None for r in tshark_fields(path, ["tcp.seq_raw"])]
    assert burstcore.read_packets(str(path), ["tcp_seq"])["tcp_seq"].to_list() == theirs


@pytest.mark.parametrize(
    "rel",
    [
        "captures/d_ring2_resnetsmall_noshape_bridge.pcapng",
        "captures/a_ring4_mlp5m_1g_bridge.pcapng.zst",
        "captures/b_ps4_mlp5m_1g_bridge.pcapng.zst",
    ],
)
def test_real_captures_match_tshark_frame_by_frame(rel: str, tmp_path: Path) -> None:
    """tshark analyses in file order, flows in time order: tshark reads a copy sorted by time
    (reordercap), whose packets are the flows' in their order. Then every frame is flagged by
    both or by neither, but for tshark's spurious retransmissions of new data (docs/metrics.md):
    the receiver's ACK is stamped before the data it acknowledges."""
    path = shared_file(rel)
    if shutil.which("reordercap") is None:
        pytest.fail("reordercap is not installed (bash .ci/setup installs Wireshark's tools)")
    ordered = tmp_path / "ordered.pcapng"
    subprocess.run(["reordercap", str(path), str(ordered)], check=True, capture_output=True)
    packets = packets_of(str(ordered))
    ours_frames = set(resent_frames(packets))
    assert ours(str(ordered), "flow") == reference(packets, directional)
    # The flows take the packets in time order whatever the file's: the same counts.
    assert ours(str(path), "flow") == ours(str(ordered), "flow")
    theirs = tshark_flagged(ordered)
    assert len(theirs) > 0, "the capture has retransmissions to compare"
    assert ours_frames - set(theirs) == set()
    explained = {i for i in set(theirs) - ours_frames if theirs[i]}
    assert set(theirs) - ours_frames == explained
    assert len(explained) <= 0.001 * len(theirs), explained
