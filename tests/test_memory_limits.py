"""Reads that need more memory than the process may have fail with a typed error, not an abort:
run in a child process under an address-space cap (RLIMIT_AS), on captures made for it."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

from tests.oracles import capture as capture_of
from tests.oracles import eth_ipv4_udp

resource = pytest.importorskip("resource")

# Address space the child may have: the interpreter with polars and burstcore takes about
# 0.5 GB of it, which leaves about 0.75 GB for the read.
CAP = 1280 << 20
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


def distinct_flows(path: Path, packets: int) -> None:
    """A pcap of `packets` UDP packets between two hosts, each with its own pair of ports (so
    each its own flow), 1 µs apart (so that the reorder horizon holds few), zstd-compressed."""
    frame = np.frombuffer(eth_ipv4_udp("10.0.0.1", "10.0.0.2", 0, 0), dtype="u1")
    i = np.arange(packets, dtype=np.uint32)
    frames = np.tile(frame, (packets, 1))
    frames[:, 34:36] = (i >> 16).astype(">u2").view("u1").reshape(packets, 2)
    frames[:, 36:38] = (i & 0xFFFF).astype(">u2").view("u1").reshape(packets, 2)
    records = np.zeros((packets, 4), "<u4")
    records[:, 0], records[:, 1], records[:, 2:] = 1_600_000_000 + i // 10**6, i % 10**6 * 1000, len(frame)
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    body = np.concatenate([records.view("u1"), frames], axis=1).tobytes()
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(header + body))


def test_flows_out_of_memory_raises_and_the_process_lives_on(tmp_path: Path) -> None:
    # 4 M flows with max_flows above them: their records and key table (a few hundred bytes a
    # flow) do not fit under the cap. Before, the growth of either aborted the process.
    packets = 4 << 20
    capture = tmp_path / "flows.pcap.zst"
    distinct_flows(capture, packets)
    code = (
        "import sys, burstcore\n"
        "try:\n"
        "    burstcore.flows(sys.argv[1], max_flows=20_000_000)\n"
        "except burstcore.LimitExceededError as e:\n"
        "    print(e.limit)\n"
        "    print(e)\n"
        "print(burstcore.flows(sys.argv[1], end=1_600_000_000_001_000_000).height)\n"
    )
    py = capped(code, str(capture))
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    limit, message, after = py.stdout.splitlines()
    assert limit == "result", py.stdout
    assert message.startswith("out of memory for the flow table after "), message
    held = int(message.split("after ")[1].split(" flow")[0])
    assert 0 < held < packets, message
    assert "max_flows" in message and "start=/end=" in message and "filter=" in message, message
    # The process goes on, and a read that fits gives a flow a packet (the first 1,000 µs).
    assert after == "1000", after


def test_scan_of_an_endless_stream_stops_when_a_ring_gives_up(tmp_path: Path) -> None:
    # A pcap header and then zeros for ever on stdin: empty records at one instant, all within
    # every window of each other. With reorder_horizon=0 nothing waits to be ordered, so the
    # envelope's ring holds them all until its memory cannot be had. Before, the ring gave up
    # quietly and the scan read on, to report it at an end of input that never came.
    header = tmp_path / "header.pcap"
    header.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    command = f"cat {header} /dev/zero | {sys.executable} -m burstcore scan - --reorder-horizon 0"
    p = subprocess.Popen(
        ["sh", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
        start_new_session=True,
    )
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail("the scan read on after its ring gave up")
    assert p.returncode == 1, err[-2000:]
    (line,) = err.splitlines()
    assert line.startswith("burstcore scan: error: stopped at a limit: more than "), line
    assert "packets of one group lie within the largest window" in line, line


def distinct_pairs(path: Path, packets: int) -> None:
    """A pcap of `packets` UDP packets, each from a new host to a new host (a new host pair
    every packet, as spoofed or scanning traffic has), 1 µs apart, zstd-compressed."""
    frame = np.frombuffer(eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2), dtype="u1")
    i = np.arange(packets, dtype=np.uint32)
    frames = np.tile(frame, (packets, 1))
    frames[:, 26:30] = (0x0A000000 + i).astype(">u4").view("u1").reshape(packets, 4)
    frames[:, 30:34] = (0x0B000000 + i).astype(">u4").view("u1").reshape(packets, 4)
    records = np.zeros((packets, 4), "<u4")
    records[:, 0], records[:, 1], records[:, 2:] = 1_600_000_000 + i // 10**6, i % 10**6 * 1000, len(frame)
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    body = np.concatenate([records.view("u1"), frames], axis=1).tobytes()
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(header + body))


def test_traffic_matrix_out_of_memory_raises_and_the_process_lives_on(tmp_path: Path) -> None:
    # 4 M pairs of 8 M hosts with max_pairs above them: the tables (about 230 bytes a pair
    # while reading) do not fit under the cap. Before, the pairs' and hosts' ordered maps could
    # not grow fallibly and the process aborted ("memory allocation of N bytes failed").
    packets = 4 << 20
    capture = tmp_path / "pairs.pcap.zst"
    distinct_pairs(capture, packets)
    code = (
        "import sys, burstcore\n"
        "try:\n"
        "    burstcore.traffic_matrix(sys.argv[1], max_pairs=20_000_000)\n"
        "except burstcore.LimitExceededError as e:\n"
        "    print(e.limit, e.offset, sep='\\n')\n"
        "    print(e)\n"
        "print(burstcore.host_volumes(sys.argv[1], end=1_600_000_000_001_000_000).height)\n"
    )
    py = capped(code, str(capture))
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    limit, offset, message, after = py.stdout.splitlines()
    assert limit == "result", py.stdout
    assert message.startswith("out of memory for the traffic matrix after "), message
    held = int(message.split("after ")[1].split(" host pair")[0])
    hosts = int(message.split("(")[1].split(" host")[0])
    assert 0 < held < packets and hosts == 2 * held, message
    # The offset is where the read had got to: past the pairs held (58-byte records), and
    # not far past them (the reorder horizon holds the next 10 ms, 10,000 packets, and the
    # reader some more).
    assert 24 + 58 * held < int(offset) <= 24 + 58 * (held + 20_000), (offset, held)
    assert f"at byte offset {offset}" in message, message
    assert "max_pairs" in message and "start=/end=" in message and "filter=" in message, message
    # The process goes on: the first 1,000 µs, 1,000 pairs of 2,000 hosts, fit.
    assert after == "2000", after


def test_reorder_buffer_out_of_memory_raises_and_the_process_lives_on(tmp_path: Path) -> None:
    # 5 M packets of one flow, 1 ns apart: all within the default 10 ms horizon, so the reorder
    # buffer holds them all (below its 2^23 packet limit), as whole arrivals of 120 bytes: its
    # growth past 2^22 of them (1 GB beside the 0.5 GB it had) does not fit under the cap.
    # Before, the growth aborted the process.
    packets = 5 << 20
    frame = np.frombuffer(eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2), dtype="u1")
    records = np.zeros((packets, 4), "<u4")
    records[:, 0], records[:, 1], records[:, 2:] = 1_600_000_000, np.arange(packets), len(frame)
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    body = np.concatenate([records.view("u1"), np.tile(frame, (packets, 1))], axis=1).tobytes()
    capture = tmp_path / "dense.pcap.zst"
    capture.write_bytes(zstandard.ZstdCompressor(level=1).compress(header + body))
    code = (
        "import sys, burstcore\n"
        "try:\n"
        "    burstcore.flows(sys.argv[1])\n"
        "except burstcore.LimitExceededError as e:\n"
        "    print(e.limit)\n"
        "    print(e)\n"
        "print(burstcore.flows(sys.argv[1], reorder_horizon=0)['packets'].to_list())\n"
    )
    py = capped(code, str(capture))
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    limit, message, after = py.stdout.splitlines()
    assert limit == "held_packets", py.stdout
    assert message.startswith("out of memory for the reorder buffer holding "), message
    held = int(message.split("holding ")[1].split(" packets")[0])
    assert 1 << 20 < held < packets, message
    assert "reorder horizon (10ms)" in message, message
    for remedy in ("lower reorder_horizon", "on_late='drop'", "start=/end=", "filter="):
        assert remedy in message, message
    # The process goes on, and the read in order holds nothing back.
    assert after == f"[{packets}]", after


def new_addresses(path: Path, packets: int) -> None:
    """A zstd pcap of `packets` UDP packets, each from and to two addresses never seen before
    (10.0.0.0 + 2i to 10.0.0.1 + 2i): the most distinct addresses a packet can bring."""
    frame = np.frombuffer(eth_ipv4_udp("10.0.0.1", "10.0.0.2", 5, 6), dtype="u1")
    i = np.arange(packets, dtype=np.uint32)
    frames = np.tile(frame, (packets, 1))
    frames[:, 26:30] = (0x0A000000 + 2 * i).astype(">u4").view("u1").reshape(packets, 4)
    frames[:, 30:34] = (0x0A000001 + 2 * i).astype(">u4").view("u1").reshape(packets, 4)
    records = np.zeros((packets, 4), "<u4")
    records[:, 0], records[:, 1], records[:, 2:] = 1_600_000_000, i, len(frame)
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    body = np.concatenate([records.view("u1"), frames], axis=1).tobytes()
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(header + body))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_read_packets_of_new_addresses_is_bounded_and_keeps_no_lookup(tmp_path: Path) -> None:
    # src and dst of 2^20 packets that each bring two new addresses. The columns are 33 bytes a
    # packet (a 16-byte view and a validity bit each); the lookup that encodes them took about
    # 100 bytes per address and column while reading (24-byte slots, two to four an address)
    # and stayed with the frame for as long as it lived. Now 4-byte slots, given back at the
    # end. Measured: peak 237 -> 127 bytes a packet, held after the read 235 -> 44 (a zstd file,
    # so no mapping of the capture counts).
    packets = 1 << 20
    capture = tmp_path / "new.pcap.zst"
    new_addresses(capture, packets)
    # VmHWM, not ru_maxrss: the latter survives exec, so a child starts at its parent's peak.
    code = (
        "import sys, burstcore\n"
        "def status(key):\n"
        "    with open('/proc/self/status') as f:\n"
        "        return next(int(l.split()[1]) for l in f if l.startswith(key + ':'))\n"
        "rss, anon = status('VmRSS'), status('RssAnon')\n"
        "t = burstcore.read_packets(sys.argv[1], columns=['src', 'dst'], threads=1)\n"
        "n, peak, held = len(t), status('VmHWM') - rss, status('RssAnon') - anon\n"
        "print(n, t['src'][n - 1], t['dst'].n_unique(), t['src'].null_count())\n"
        "print(peak * 1024 // n, held * 1024 // n)\n"
    )
    py = subprocess.run([sys.executable, "-c", code, str(capture)], capture_output=True, text=True, timeout=120)
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    first, second = py.stdout.splitlines()
    assert first == f"{packets} 10.31.255.254 {packets} 0", first
    peak, held = map(int, second.split())
    assert peak <= 170, f"{peak} bytes a packet at the peak"
    assert held <= 80, f"{held} bytes a packet held by the frame"


# The start of a child process that reads its own peak RSS: burstcore cutting a scan into as many
# time chunks as asked, whatever the file's size and the cores, and `status` of /proc/self/status
# in kB.
CHILD_PEAK = (
    "import sys, burstcore\n"
    "burstcore._burstcore._use_as_many_threads_as_asked(True)\n"
    "def status(key):\n"
    "    with open('/proc/self/status') as f:\n"
    "        return next(int(l.split()[1]) for l in f if l.startswith(key + ':'))\n"
)


def interfaces_in_turn(path: Path, turns: list[int]) -> None:
    """A pcapng whose interfaces take turns: interface i sends `turns[i]` packets 1 µs apart
    (µs stamps, nothing captured, 100 bytes on the wire), then falls silent for good."""
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 0, 20)
    n = sum(turns)
    ts = 1_600_000_000_000_000 + np.arange(n, dtype=np.int64)
    blocks = np.zeros((n, 8), "<u4")
    blocks[:, 0], blocks[:, 1], blocks[:, 7] = 6, 32, 32
    blocks[:, 2] = np.repeat(np.arange(len(turns)), turns)
    blocks[:, 3], blocks[:, 4] = ts >> 32, ts & 0xFFFFFFFF
    blocks[:, 6] = 100
    with path.open("wb") as f:
        f.write(shb + idb * len(turns))
        f.write(blocks.data)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_time_chunks_let_go_of_interfaces_fallen_silent(tmp_path: Path) -> None:
    # A scan by interface in two time chunks, with a 20 ms window, of 256 interfaces that take
    # turns of 2^14 packets (16 ms) and fall silent, then one more whose turn of 2^22 packets
    # fills the second chunk. The sequential scan lets go of a group's ring once the group is
    # silent for longer than the window; the first chunk kept all 256 rings to its end (12 to
    # 16 bytes a packet). The peak is read against the same scan with a 1 µs window, whose
    # rings stay small, each in a child process of its own. Measured, bytes per packet of the
    # short turns: 9.0 to 10.8 before, 0.03 to 0.56 after. What is left after is about 2 MB
    # whatever the number of turns (the rings of the turns within a window, the second chunk's
    # head), plus the spread of two threads' peaks, up to 4.4 MB seen; so the turns are many
    # enough (2^22 packets) that the spread is about a byte a packet, far from the bound and
    # from the old code's 10 (with 64 turns a clean clone's run once measured 4.2).
    capture = tmp_path / "turns.pcapng"
    short = [1 << 14] * 256
    interfaces_in_turn(capture, [*short, sum(short)])
    code = CHILD_PEAK + (
        "start = status('VmHWM')\n"
        "r = burstcore.scan(sys.argv[1], windows=[sys.argv[2]], by='interface', threads=2)\n"
        "print(r.groups.height, (status('VmHWM') - start) * 1024)\n"
    )
    peaks = {}
    for window in ("1us", "20ms"):
        py = subprocess.run(
            [sys.executable, "-c", code, str(capture), window], capture_output=True, text=True, timeout=120
        )
        assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
        groups, peak = map(int, py.stdout.split())
        assert groups == len(short) + 1, py.stdout
        peaks[window] = peak
    per_packet = (peaks["20ms"] - peaks["1us"]) / sum(short)
    assert per_packet <= 4, f"{per_packet:.1f} bytes a packet more with a 20 ms window: {peaks}"


def interfaces_in_rotation(path: Path, interfaces: int, packets: int) -> None:
    """A pcapng of `packets` packets 1 µs apart (µs stamps, nothing captured, 100 bytes on the
    wire), sent by `interfaces` interfaces in rotation."""
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 0, 20)
    ts = 1_600_000_000_000_000 + np.arange(packets, dtype=np.int64)
    blocks = np.zeros((packets, 8), "<u4")
    blocks[:, 0], blocks[:, 1], blocks[:, 7] = 6, 32, 32
    blocks[:, 2] = np.arange(packets) % interfaces
    blocks[:, 3], blocks[:, 4] = ts >> 32, ts & 0xFFFFFFFF
    blocks[:, 6] = 100
    path.write_bytes(shb + idb * interfaces + blocks.tobytes())


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_time_chunks_share_one_budget_of_empty_instants(tmp_path: Path) -> None:
    # A scan by interface in eight time chunks of 2^20 packets from 16 interfaces, at eight
    # rates far above each interface's 50 Mbit/s: every packet finds its queue empty at a new
    # minimum, which every chunk but the first keeps for the merge (80 bytes a packet and
    # rate). Each chunk kept up to 2^20 of them, and all are held until the merge: 7 x 80 MB.
    # The chunks now share that budget. The peak is read against the same scan without rates,
    # each in a child process of its own. Measured: 602 MiB more before, 113 MiB after.
    capture = tmp_path / "rotation.pcapng"
    interfaces_in_rotation(capture, 16, 1 << 20)
    code = CHILD_PEAK + (
        "rates = [f'{g}Gbps' for g in range(1, 9)] if sys.argv[2] == 'rates' else []\n"
        "threads = int(sys.argv[3])\n"
        "start = status('VmHWM')\n"
        "r = burstcore.scan(sys.argv[1], windows=['1ms'], rates=rates, by='interface', threads=threads)\n"
        "print((status('VmHWM') - start) * 1024)\n"
        "print(r.backlog.sort('group', 'rate_bps').rows())\n"
    )
    runs = {}
    for rates, threads in (("none", 8), ("rates", 8), ("rates", 1)):
        py = subprocess.run(
            [sys.executable, "-c", code, str(capture), rates, str(threads)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
        peak, backlog = py.stdout.splitlines()
        runs[rates, threads] = int(peak), backlog
    assert runs["rates", 8][1] == runs["rates", 1][1], "eight chunks and one thread differ"
    more = runs["rates", 8][0] - runs["none", 8][0]
    assert more <= 160 << 20, f"{more >> 20} MB more with eight rates in eight chunks"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_bursts_by_flow_cost_their_rows_not_a_frame_per_group(tmp_path: Path) -> None:
    # 20,000 flows of one packet each, by flow: 20,001 bursts and 40 rows of distributions per
    # group (4 metrics x 10 quantiles), about 2 kB a flow with its share of the reading. Before,
    # each group's two frames were built on their own, with a pass over every burst to find its
    # rows: 22 kB a flow and 31 s (40,000 flows: 817 MB, 47 s; the default max_groups of a
    # million, tens of GB and hours). Measured after: about 4.5 kB a flow, under 2 s.
    flows = 20_000
    capture = tmp_path / "flows.pcap.zst"
    distinct_flows(capture, flows)
    code = (
        "import sys, burstcore\n"
        "def status(key):\n"
        "    with open('/proc/self/status') as f:\n"
        "        return next(int(l.split()[1]) for l in f if l.startswith(key + ':'))\n"
        "start = status('VmHWM')\n"
        "b = burstcore.bursts(sys.argv[1], by='flow')\n"
        "print(b.bursts.height, b.distributions.height, (status('VmHWM') - start) * 1024 // int(sys.argv[2]))\n"
    )
    py = subprocess.run(
        [sys.executable, "-c", code, str(capture), str(flows)], capture_output=True, text=True, timeout=300
    )
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    bursts, rows, per_flow = map(int, py.stdout.split())
    assert (bursts, rows) == (flows + 1, 40 * (flows + 1)), py.stdout
    assert per_flow <= 10_000, f"{per_flow} bytes a flow at the peak"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_iterations_of_a_few_packets_hours_apart_hold_no_empty_bins(tmp_path: Path) -> None:
    # 40 packets: 20 hosts send one each, and again 4 hours later. The analysis kept every 1 ms
    # bin in between for each of its 18 series (16 hosts, the pool, and the totals), 8 bytes
    # each: 2.2 GB for a 7 kB file (and so did `report` and `plot`, which call it). Now only
    # the bins near packets; the pooled bins of the analysis (65,536 at most) are what is left.
    t0, later = 1_700_000_000_000_000_000, 4 * 3600 * 10**9
    packets = sorted(
        (t0 + end + h, eth_ipv4_udp(f"10.0.0.{h + 1}", "10.0.1.1", 1, 2, 100)) for h in range(20) for end in (0, later)
    )
    capture = tmp_path / "apart.pcap"
    capture.write_bytes(
        capture_of([t for t, _ in packets], [len(f) for _, f in packets], frames=[f for _, f in packets])
    )
    code = CHILD_PEAK + (
        "import warnings\n"
        "start = status('VmHWM')\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    it = burstcore.iterations(sys.argv[1])\n"
        "print(it.summary['packets'][0], it.summary['beyond_bins'][0], it.bin_ns, (status('VmHWM') - start) >> 10)\n"
    )
    py = subprocess.run([sys.executable, "-c", code, str(capture)], capture_output=True, text=True, timeout=300)
    assert py.returncode == 0, (py.returncode, py.stderr[-2000:])
    n, beyond, bin_ns, peak_mb = map(int, py.stdout.split())
    # Every packet analysed, in bins pooled to at most 65,536 over the 4 hours.
    assert (n, beyond, bin_ns) == (40, 0, -(-(later // 10**6 + 1) // 65_536) * 10**6), py.stdout
    assert peak_mb <= 100, f"{peak_mb} MB at the peak"
