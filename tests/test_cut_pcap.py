"""benches/cut_pcap.py: the prefix it writes ends at a record, the last one that fits.

The oracle is the test's own record boundaries (it writes the capture byte by byte), and
burstcore reading the cut file whole (strict: a cut record would raise).
"""

from __future__ import annotations

import importlib.util
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import burstcore

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benches" / "cut_pcap.py"
_spec = importlib.util.spec_from_file_location("cut_pcap", SCRIPT)
assert _spec is not None and _spec.loader is not None
cut_pcap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cut_pcap)


def capture(order: str, nanos: bool, lengths: list[int]) -> tuple[bytes, list[int]]:
    """A classic pcap (Ethernet) with records of these captured lengths, and the file length
    after each record (the header's end first)."""
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = bytearray(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1))
    ends = [len(out)]
    for k, n in enumerate(lengths):
        out += struct.pack(order + "IIII", 1_700_000_000 + k, 7 * k, n, n + 4)
        out += bytes((k + i) % 256 for i in range(n))
        ends.append(len(out))
    return bytes(out), ends


def cut(src: Path, dst: Path, limit: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(src), str(dst), str(limit)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_the_prefix_ends_at_the_last_whole_record(tmp_path: Path, order: str, nanos: bool) -> None:
    rng = random.Random(7)
    lengths = [rng.choice([0, 1, 14, 60, 128, 1514]) for _ in range(40)]
    data, ends = capture(order, nanos, lengths)
    src, dst = tmp_path / "in.pcap", tmp_path / "out.pcap"
    src.write_bytes(data)
    # Every boundary, a byte either side of it, and past the file's end.
    limits = sorted({e + d for e in ends for d in (-1, 0, 1) if e + d >= 24} | {len(data) + 100})
    for limit in limits:
        want = max(e for e in ends if e <= limit)
        records = ends.index(want)
        assert cut_pcap.cut(data[:limit]) == (want, records), limit
    # The command itself, at a limit inside a record: the file it writes is read whole.
    limit = ends[-8] - 3
    want = max(e for e in ends if e <= limit)
    records = ends.index(want)
    done = cut(src, dst, limit)
    assert done.returncode == 0, done.stderr
    assert dst.read_bytes() == data[:want]
    assert done.stdout.split() == [str(want), "bytes,", str(records), "packets"]
    packets = burstcore.read_packets(str(dst), ["cap_len"], strict=True)
    assert packets["cap_len"].to_list() == lengths[:records]


def test_pcapng_is_refused_with_a_reason(tmp_path: Path) -> None:
    src = tmp_path / "in.pcapng"
    src.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(60))
    done = cut(src, tmp_path / "out", 1000)
    assert done.returncode != 0
    assert "not a classic pcap file" in done.stderr and "pcapng" in done.stderr
