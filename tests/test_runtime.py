"""burstcore inside a long-running process: calls on several threads whose file objects fail at
once, Ctrl-C while a file object's read() waits, and a late packet in a named pipe.

The captures are small, written by oracles.capture; what each test checks is where an exception
goes and that nothing waits forever, not the numbers.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import burstcore

from .oracles import capture

DATA = capture([1_000 * k for k in range(20_000)], [100] * 20_000, fmt="pcap")


class _Stalls(Exception):
    """The exception of one call's file object, told apart from the others' by its argument."""


class _FailsAfter:
    """A file object over DATA whose read() raises `_Stalls(tag)` once 100 kB are read."""

    def __init__(self, tag: int) -> None:
        self.f = io.BytesIO(DATA)
        self.tag = tag

    def read(self, n: int = -1) -> bytes:
        if self.f.tell() >= 100_000:
            raise _Stalls(self.tag)
        return self.f.read(n)


def test_each_thread_gets_its_own_file_objects_exception() -> None:
    # Before, one slot for the whole process held the exception between read() and the call's
    # return: of 4,000 calls on 8 threads, ~20 raised another call's exception and ~20 an
    # OSError in its place.
    def call(tag: int) -> str:
        try:
            burstcore.info(_FailsAfter(tag))
        except _Stalls as e:
            return "own" if e.args == (tag,) else "another call's"
        except Exception as e:  # any other type is what the test looks for
            return type(e).__name__
        return "no exception"

    with ThreadPoolExecutor(8) as pool:
        got = Counter(pool.map(call, range(3_000)))
    assert got == {"own": 3_000}, got


def test_a_file_objects_exception_is_not_left_for_the_next_call() -> None:
    # A progress callback that calls burstcore again (a notebook redrawing from the same
    # capture) nests a call inside a call: each raises its own file object's exception, and
    # none is kept for a later call.
    seen: list[str] = []

    def progress(done: int, total: int | None) -> None:
        if not seen:
            try:
                burstcore.info(_FailsAfter(2))
            except _Stalls as e:
                seen.append(f"inner {e.args[0]}")

    burstcore.info(DATA, progress=progress)
    with pytest.raises(_Stalls) as e:
        burstcore.info(_FailsAfter(3))
    assert seen == ["inner 2"] and e.value.args == (3,)


WAITING_CHILD = """
import io, socket, sys, threading, burstcore
data = open(sys.argv[1], "rb").read()
if sys.argv[2] == "socket":
    a, b = socket.socketpair()
    # All of it, then nothing more with b kept open: recv() waits.
    threading.Thread(target=b.sendall, args=(data,), daemon=True).start()
    source = a.makefile("rb")
else:
    class Waits:
        def __init__(self):
            self.f = io.BytesIO(data)
        def read(self, n=-1):
            got = self.f.read(n)
            if not got:
                threading.Event().wait()
            return got
    source = Waits()
print("reading", flush=True)
try:
    burstcore.scan(source, windows=["1ms"], rates=["1Gbps"])
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
# The next call works.
print(burstcore.info(data).packets, flush=True)
"""


@pytest.mark.parametrize("source", ["socket", "waiting read()"])
def test_ctrl_c_stops_a_file_object_whose_read_waits(tmp_path: Path, source: str) -> None:
    # A capture streamed over a socket that went quiet. polars installs its SIGINT handler with
    # SA_RESTART, and the kernel resumed the waiting recv() after each Ctrl-C: before, the scan
    # waited for ever.
    path = tmp_path / "c.pcap"
    path.write_bytes(DATA)
    p = subprocess.Popen(
        [sys.executable, "-c", WAITING_CHILD, str(path), source], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert p.stdout is not None
    try:
        assert p.stdout.readline().strip() == b"reading"
        time.sleep(1.0)
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        elapsed = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.split() == [b"interrupted", b"20000"], (out, err[-500:])
    assert elapsed < 2.0, elapsed


def test_a_late_packet_in_a_named_pipe_is_reported_not_waited_for(tmp_path: Path) -> None:
    # A late packet's offset is found by reading the capture again; a named pipe given by path
    # was opened again for that, and the scan waited for a writer that had gone (until Ctrl-C,
    # which it then swallowed, raising the OutOfOrderError).
    late = capture([1_000 * k for k in range(1_000)] + [0], [100] * 1_001, fmt="pcap")
    fifo = tmp_path / "live"
    os.mkfifo(fifo)
    code = (
        "import sys, burstcore\n"
        "try:\n"
        "    burstcore.scan(sys.argv[1], windows=['1ms'], rates=['1Gbps'], reorder_horizon=0)\n"
        "except burstcore.OutOfOrderError as e:\n"
        "    print('late', e.offset, flush=True)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code, str(fifo)], stdout=subprocess.PIPE)

    def write() -> None:
        with open(fifo, "wb") as w:
            w.write(late)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        out, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        writer.join(timeout=5)
    # A stream is not read again: the error has no offset, and comes at once.
    assert out.strip() == b"late None", out
