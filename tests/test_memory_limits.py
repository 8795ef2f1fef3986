"""Reads that need more memory than the process may have fail with a typed error, not an abort:
run in a child process under an address-space cap (RLIMIT_AS), on captures made for it."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

resource = pytest.importorskip("resource")

# Address space the child may have: the interpreter with polars and burstcore takes about
# 0.5 GB of it, which leaves about 1 GB for the read.
CAP = 1536 << 20
ZEROS = 16 << 20


def zero_bomb(path: Path, packets: int) -> None:
    """A pcap of `packets` empty records (16 zero bytes each: timestamp 0, no data), as
    identical zstd frames of 16 MiB each: a few hundred kB on disk."""
    assert packets * 16 % ZEROS == 0
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    frame = zstandard.ZstdCompressor(level=3).compress(b"\0" * ZEROS)
    with path.open("wb") as f:
        f.write(zstandard.ZstdCompressor().compress(header))
        for _ in range(packets * 16 // ZEROS):
            f.write(frame)


def capped(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, preexec_fn=limit, timeout=120
    )


def test_read_packets_out_of_memory_raises_and_the_process_lives_on(tmp_path: Path) -> None:
    # 2^25 packets: all columns would take about 1.8 GB (16 bytes a row for each address
    # column, even null, 8 for the timestamp, 14 for the rest), more than the cap leaves. Before,
    # a column's growth failed inside the allocator, which aborted the process (SIGABRT, "memory
    # allocation of N bytes failed"); the timestamps alone (0.27 GB) fit.
    packets = 1 << 25
    bomb = tmp_path / "bomb.pcap.zst"
    zero_bomb(bomb, packets)
    code = (
        "import sys, burstcore\n"
        "try:\n"
        "    burstcore.read_packets(sys.argv[1])\n"
        "except burstcore.LimitExceededError as e:\n"
        "    print(e.limit, e.offset, sep='\\n')\n"
        "    print(e)\n"
        "t = burstcore.read_packets(sys.argv[1], columns=['timestamp'])\n"
        "print(len(t), t['timestamp'].null_count(), t['timestamp'].dt.epoch('ns').max())\n"
    )
    py = capped(code, str(bomb))
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    limit, offset, message, after = py.stdout.splitlines()
    assert limit == "result", py.stdout
    # The offset is where the reading stopped, in the decompressed capture: past the 24-byte
    # header, on a record boundary, before the end.
    assert 24 < int(offset) < 24 + 16 * packets and (int(offset) - 24) % 16 == 0, offset
    assert "out of memory for the packet table: after " in message, message
    read = int(message.split("after ")[1].split(" packet")[0])
    assert 0 < read < packets and read <= (int(offset) - 24) // 16, message
    asked = int(message.split("could not have ")[1].split(" bytes")[0])
    assert asked > 0, message
    for remedy in ("columns=", "start=/end=", "filter="):
        assert remedy in message, message
    # The failed read gave its memory back: one column of the same capture still fits.
    assert after == f"{packets} 0 0", after
