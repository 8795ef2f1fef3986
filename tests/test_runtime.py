"""burstcore inside a long-running process: calls on several threads whose file objects fail at
once, Ctrl-C while a file object's read() waits, and a late packet in a named pipe.

The captures are small, written by oracles.capture; what each test checks is where an exception
goes and that nothing waits forever, not the numbers.
"""

from __future__ import annotations

import io
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import burstcore

from .oracles import capture

ROOT = Path(__file__).resolve().parent.parent
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
