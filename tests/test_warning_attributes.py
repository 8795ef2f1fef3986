"""A ``CaptureWarning`` says to a program what its text says: which kind of problem (in the words of
``CaptureError.kind``), at which byte offset, in which of several inputs, under which limit, so
that none has to parse the message. The offsets expected here are computed from the bytes the
tests write, not by burstcore."""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import burstcore
from burstcore import CaptureWarning

from . import oracles

FRAME = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)
# Another host's traffic: a capture of it shares no packet with one of FRAME (else the reads of
# both would also warn that they hold the same packets).
OTHER = oracles.eth_ipv4_udp("10.0.0.3", "10.0.0.4", 3, 4, payload=60)


def _pcap(packets: int, frame: bytes = FRAME) -> tuple[bytes, list[int]]:
    """A µs pcap written by hand, and the byte offset where each record starts."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    starts = []
    for i in range(packets):
        starts.append(len(out))
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(frame), len(frame)) + frame
    return bytes(out), starts


def _cut_pcap(packets: int = 10, cut_in: int = 7) -> tuple[bytes, int]:
    """A pcap cut in the middle of record `cut_in` (its header whole, part of its frame), and
    where that record starts."""
    data, starts = _pcap(packets)
    cut = starts[cut_in] + 16 + len(FRAME) // 2
    return data[:cut], starts[cut_in]


def _caught(call: Any) -> list[CaptureWarning]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w.message for w in caught if isinstance(w.message, CaptureWarning)]


def _the_one(call: Any) -> CaptureWarning:
    told = _caught(call)
    assert len(told) == 1, [str(w) for w in told]
    return told[0]


def test_a_cut_capture_warns_with_its_kind_and_the_offset_of_the_cut_record(tmp_path: Path) -> None:
    data, at = _cut_pcap()
    path = tmp_path / "cut.pcap"
    path.write_bytes(data)
    calls = {
        "read_packets": lambda: burstcore.read_packets(path),
        "read_packets of bytes": lambda: burstcore.read_packets(data),
        "info": lambda: burstcore.info(path),
        "scan": lambda: burstcore.scan(path, windows=["1ms"], rates=["1Gbps"]),
        "scan of bytes": lambda: burstcore.scan(data, windows=["1ms"], rates=["1Gbps"]),
        "flows": lambda: burstcore.flows(path),
        "traffic_matrix": lambda: burstcore.traffic_matrix(path),
        "host_volumes": lambda: burstcore.host_volumes(path),
        "sizes": lambda: burstcore.sizes(path),
        "gaps": lambda: burstcore.gaps(path),
        "bursts": lambda: burstcore.bursts(path),
    }
    for name, call in calls.items():
        w = _the_one(call)
        assert type(w) is CaptureWarning, name
        assert (w.kind, w.offset, w.input, w.limit) == ("truncated", at, None, None), (name, str(w))
        # The text is what it was: filters and `pytest.warns(match=...)` by message still hold.
        assert str(w).endswith(f"(file may still be being written) at byte offset {at}"), (name, str(w))
        # How much of the record is there: its header and half its frame.
        assert f"of which the input holds {16 + len(FRAME) // 2} bytes" in str(w), (name, str(w))
    # strict=True raises what the warning told, in the same words.
    with pytest.raises(burstcore.TruncatedCaptureError) as e:
        burstcore.read_packets(path, strict=True)
    assert (e.value.kind, e.value.offset) == ("truncated", at)


def test_a_damaged_block_length_mid_file_is_told_with_the_bytes_left_unread(tmp_path: Path) -> None:
    """A pcapng block whose length points past the end (under the block limit) reads as a cut
    capture: the warning's count of the bytes after its start tells a file still being written
    (a part of one block) from a damaged length (the rest of the file behind it)."""
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface()
    for i in range(2000):
        w.epb(0, FRAME, ts_ns=10**9 + 1000 * i)
    data = bytearray(w.getvalue())
    epb = data.index(struct.pack("<I", 6))  # the first Enhanced Packet Block
    block = struct.unpack_from("<I", data, epb + 4)[0]
    at = epb + 20 * block  # the 21st packet's block
    struct.pack_into("<I", data, at + 4, 40_000_000)
    with pytest.warns(CaptureWarning, match=f"of which the input holds {len(data) - at} bytes") as caught:
        assert burstcore.read_packets(bytes(data)).height == 20
    assert [m.message.offset for m in caught if isinstance(m.message, CaptureWarning)] == [at]


def test_several_inputs_name_the_cut_one(tmp_path: Path) -> None:
    whole, _ = _pcap(5, OTHER)
    data, at = _cut_pcap(packets=12, cut_in=9)
    a, b = tmp_path / "whole.pcap", tmp_path / "cut.pcap"
    a.write_bytes(whole)
    b.write_bytes(data)
    for name, call in {
        "scan": lambda: burstcore.scan([a, b], windows=["1ms"], rates=["1Gbps"]),
        "flows": lambda: burstcore.flows([a, b]),
    }.items():
        w = _the_one(call)
        assert (w.kind, w.offset, w.input) == ("truncated", at, str(b)), (name, str(w))
        assert str(w).endswith(f"at byte offset {at} of {b}"), (name, str(w))
    # Inputs that are no named file are named by their place among the others.
    w = _the_one(lambda: burstcore.scan([data, whole], windows=["1ms"], rates=["1Gbps"]))
    assert (w.kind, w.offset, w.input) == ("truncated", at, "input 1 of 2"), str(w)


def _lossy_pcapng(if_drop: int, frame: bytes = FRAME) -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9", name="eth0")
    t = 1_700_000_000_000_000_000
    for i in range(20):
        w.epb(0, frame, ts_ns=t + i * 1_000)
    w.isb(0, ts_raw=t + 20_000, if_recv=20, if_drop=if_drop)
    return w.getvalue()


def test_recorded_drops_warn_as_packets_lost(tmp_path: Path) -> None:
    lossy, quiet = tmp_path / "lossy.pcapng", tmp_path / "quiet.pcapng"
    lossy.write_bytes(_lossy_pcapng(if_drop=3))
    quiet.write_bytes(_lossy_pcapng(if_drop=0, frame=OTHER))
    for name, call in {
        "scan": lambda: burstcore.scan(lossy, windows=["1ms"], rates=["1Gbps"]),
        "read_packets": lambda: burstcore.read_packets(lossy),
        "flows": lambda: burstcore.flows(lossy),
    }.items():
        w = _the_one(call)
        # The counters are the file's, found at no one place in it: no offset.
        assert (w.kind, w.offset, w.input, w.limit) == ("packets_lost", None, None, None), (name, str(w))
        assert '(interface 0 "eth0": isb_ifdrop 3)' in str(w), name
    w = _the_one(lambda: burstcore.scan([quiet, lossy], windows=["1ms"], rates=["1Gbps"]))
    assert (w.kind, w.offset, w.input) == ("packets_lost", None, str(lossy)), str(w)


def test_an_error_filter_raises_the_warning_itself(tmp_path: Path) -> None:
    data, at = _cut_pcap()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        with pytest.raises(CaptureWarning) as e:
            burstcore.read_packets(data)
    assert type(e.value) is CaptureWarning
    assert (e.value.kind, e.value.offset) == ("truncated", at)
    # As `python -W error` runs a program.
    path = tmp_path / "cut.pcap"
    path.write_bytes(data)
    code = (
        "import sys, burstcore\n"
        "try:\n"
        f"    burstcore.scan({str(path)!r}, windows=['1ms'], rates=['1Gbps'])\n"
        "except burstcore.CaptureWarning as w:\n"
        "    print(type(w).__name__, w.kind, w.offset)\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["CaptureWarning", "truncated", str(at)], out.stderr


def test_a_warning_pickles_with_its_attributes() -> None:
    data, at = _cut_pcap()
    w = _the_one(lambda: burstcore.read_packets(data))
    again = pickle.loads(pickle.dumps(w))
    assert type(again) is CaptureWarning and str(again) == str(w)
    assert (again.kind, again.offset, again.input, again.limit) == ("truncated", at, None, None)


def test_warnings_of_the_python_side_have_no_core_attributes(tmp_path: Path) -> None:
    path = tmp_path / "one.pcap"
    path.write_bytes(_pcap(50)[0])
    # The same capture twice: the Python side's SharedPacketsWarning, a CaptureWarning.
    told = _caught(lambda: burstcore.scan([path, path], windows=["1ms"], rates=["1Gbps"]))
    shared = [w for w in told if isinstance(w, burstcore.SharedPacketsWarning)]
    assert shared, [str(w) for w in told]
    for w in shared:
        assert (w.kind, w.offset, w.input, w.limit) == (None, None, None, None)
    # Made by hand, as a user's code may: the message alone.
    w = CaptureWarning("something")
    assert (str(w), w.kind, w.offset, w.input, w.limit) == ("something", None, None, None, None)


def test_the_limits_that_let_a_read_go_on_warn_with_no_limit_attribute() -> None:
    """A guard (it passes before and after docs/limits.md called ``limit`` reserved): no core path
    issues a ``"limit_exceeded"`` warning (every ``LimitExceededError`` is raised), and the two
    limits that let a read go on, ``iterations``' last bin (2^24 bins) and its pooling past 65,536
    bins, warn from the Python side: ``kind`` and ``limit`` ``None``, as the docs say. A limit that
    later warns instead of failing must set both, and change this test and the docs."""
    t0, hour = 1_700_000_000_000_000_000, 3_600_000_000_000
    # 50 packets 1 ms apart, one 100 s later (100,000 bins of 1 ms: pooled to 2 ms) and one 5 h
    # later (past 16,777,216 bins: left out).
    ts = [t0 + i * 1_000_000 for i in range(50)] + [t0 + 100_000_000_000, t0 + 5 * hour]
    data = oracles.capture(ts, [len(FRAME)] * len(ts), frames=[FRAME] * len(ts))
    told = _caught(lambda: burstcore.iterations(data))
    assert len(told) == 2, [str(w) for w in told]
    beyond, pooled = told
    assert "1 packet comes more than 16777.216s (16,777,216 bins of 1ms) after the first" in str(beyond)
    assert "so they were analysed in bins of 2ms" in str(pooled)
    for w in told:
        assert (w.kind, w.offset, w.input, w.limit) == (None, None, None, None), str(w)


def test_the_result_lists_keep_the_texts(tmp_path: Path) -> None:
    data, at = _cut_pcap()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"])
        info = burstcore.info(data)
    for texts in (result.warnings, info.warnings):
        assert len(texts) == 1 and isinstance(texts[0], str) and texts[0].endswith(f"at byte offset {at}"), texts


def test_error_kinds_are_one_lowercase_word() -> None:
    with pytest.raises(burstcore.NotACaptureError) as e:
        burstcore.read_packets(b"definitely not a capture file")
    assert e.value.kind == "not_a_capture"
    # A block longer than max_block_len (the capture's structure): a limit.
    data, starts = _pcap(3)
    huge = bytearray(data)
    struct.pack_into("<II", huge, starts[1] + 8, 0x7FFF_FFFF, 0x7FFF_FFFF)
    with pytest.raises(burstcore.LimitExceededError) as limit:
        burstcore.read_packets(bytes(huge))
    assert (limit.value.kind, limit.value.limit, limit.value.offset) == ("limit_exceeded", "capture", starts[1])


def test_shared_packets_names_the_capture_it_read_on_its_own(tmp_path: Path) -> None:
    whole, _ = _pcap(5, OTHER)
    data, at = _cut_pcap()
    a, b = tmp_path / "whole.pcap", tmp_path / "cut.pcap"
    a.write_bytes(whole)
    b.write_bytes(data)
    told = _caught(lambda: burstcore.shared_packets([a, b], senders="all"))
    cut = [w for w in told if w.kind == "truncated"]
    assert cut, [str(w) for w in told]
    for w in cut:
        assert (w.offset, w.input) == (at, str(b)), str(w)
        assert str(w).startswith(f"{b}: "), str(w)
