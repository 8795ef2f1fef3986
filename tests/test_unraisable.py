"""one_ctrl_c's hook in sys.unraisablehook, seen by a program with a hook of its own: what its
hook got before it still gets, once, and its hook (or its deleting it) is back after."""

from __future__ import annotations

import queue
import random
import sys
import threading
from collections.abc import Iterator
from typing import Any

import polars as pl
import pytest

import burstcore

one_ctrl_c = burstcore._burstcore.one_ctrl_c


class _Dropped:
    """An exception sent to sys.unraisablehook: the one its __del__ raises."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


@pytest.fixture
def hooks() -> Iterator[dict[str, list[Any]]]:
    """The program's hook and CPython's own (``sys.__unraisablehook__``, what it calls where the
    hook is deleted or None), each recording what it is given."""
    given: dict[str, list[Any]] = {"program": [], "default": []}
    before, default = sys.__dict__.get("unraisablehook"), sys.__unraisablehook__
    sys.unraisablehook = given["program"].append
    sys.__unraisablehook__ = given["default"].append
    try:
        yield given
    finally:
        sys.__unraisablehook__ = default
        sys.unraisablehook = before


def _kinds(given: list[Any]) -> list[type[BaseException]]:
    return [type(u.exc_value) for u in given]


def test_blocks_of_two_threads_ending_in_turn_pile_no_hooks(hooks: dict[str, list[Any]]) -> None:
    # Two threads' blocks overlapping in turn (each ends while the other's, started later, is
    # open), as scans of batches on two threads do: one hook per block chained them, 2,000 of
    # them deep, and an unraisable exception then met RecursionError on its way to the
    # program's hook.
    orders: list[queue.Queue[str | None]] = [queue.Queue(), queue.Queue()]
    done: queue.Queue[BaseException | None] = queue.Queue()

    def worker(orders: queue.Queue[str | None]) -> None:
        while (order := orders.get()) is not None:
            try:
                if order == "start":
                    one_ctrl_c.__enter__()
                elif order == "end":
                    one_ctrl_c.__exit__(None, None, None)
                else:
                    _Dropped(ValueError(order))
                done.put(None)
            except BaseException as e:
                done.put(e)

    threads = [threading.Thread(target=worker, args=(q,)) for q in orders]
    for t in threads:
        t.start()

    def run(thread: int, order: str) -> None:
        orders[thread].put(order)
        assert done.get(timeout=10) is None

    try:
        run(0, "start")
        for k in range(2000):
            run(1 - k % 2, "start")
            run(k % 2, "end")
        run(0, "during")
        run(0, "end")
        run(1, "after")
    finally:
        for q in orders:
            q.put(None)
        for t in threads:
            t.join(10)
    assert [u.exc_value.args for u in hooks["program"]] == [("during",), ("after",)]
    assert hooks["default"] == [] and sys.unraisablehook == hooks["program"].append


@pytest.mark.parametrize("state", ["None", "deleted"])
def test_a_hook_none_or_deleted_stays_so_and_gets_cpythons_default(hooks: dict[str, list[Any]], state: str) -> None:
    # CPython writes the exception itself then (sys.__unraisablehook__); the block's hook called
    # None (a TypeError in its place, the ValueError lost) and put __unraisablehook__ in place
    # of a deleted hook.
    if state == "None":
        sys.unraisablehook = None  # type: ignore[assignment]
    else:
        del sys.unraisablehook
    dropped = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt) as caught:
        with one_ctrl_c:
            _Dropped(ValueError("not a Ctrl-C"))
            _Dropped(dropped)
    assert caught.value is dropped
    assert _kinds(hooks["default"]) == [ValueError] and hooks["program"] == []
    if state == "None":
        assert sys.__dict__["unraisablehook"] is None
    else:
        assert "unraisablehook" not in sys.__dict__


def test_four_threads_scanning_while_the_program_sets_its_hook(hooks: dict[str, list[Any]]) -> None:
    # Four threads scan batches (a block per batch) and drop exceptions in blocks of their own,
    # ending out of order; the main thread sets a hook of its own midway. Each ValueError
    # reaches one of the program's hooks once; each thread's KeyboardInterrupt is raised by its
    # block or, dropped after the program's hook took over, given to that hook: none lost,
    # none twice. The program's last hook is in place after.
    frames = [pl.DataFrame({"timestamp": [i * 1000, i * 1000 + 10], "size": [100, 60]}) for i in range(20)]
    later: list[Any] = []
    raised: list[str] = []
    started = threading.Barrier(5)
    lock = threading.Lock()

    def thread(n: int) -> None:
        rng = random.Random(n)
        started.wait(10)
        for k in range(30):
            burstcore.scan(iter(frames), windows=["1us"], rates=["1Gbps"])
            try:
                with one_ctrl_c:
                    _Dropped(ValueError(f"{n}.{k}"))
                    if rng.random() < 0.5:
                        _Dropped(KeyboardInterrupt(f"{n}.{k}"))
            except KeyboardInterrupt as e:
                with lock:
                    raised.append(e.args[0])

    threads = [threading.Thread(target=thread, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    started.wait(10)
    sys.unraisablehook = later.append
    for t in threads:
        t.join(60)
    given = hooks["program"] + later
    values = sorted(u.exc_value.args[0] for u in given if isinstance(u.exc_value, ValueError))
    assert values == sorted(f"{n}.{k}" for n in range(4) for k in range(30))
    interrupts = [u.exc_value.args[0] for u in given if isinstance(u.exc_value, KeyboardInterrupt)]
    assert len(set(raised + interrupts)) == len(raised + interrupts) > 0
    assert hooks["default"] == [] and sys.unraisablehook == later.append


def test_a_scan_inside_a_block_leaves_the_outer_block_its_own(hooks: dict[str, list[Any]]) -> None:
    # A progress callback or a warning's hook may call burstcore again on the same thread.
    first = KeyboardInterrupt("outer")
    frame = pl.DataFrame({"timestamp": [0, 10], "size": [100, 60]})
    with pytest.raises(KeyboardInterrupt) as caught:
        with one_ctrl_c:
            _Dropped(first)
            burstcore.scan([frame], windows=["1us"], rates=["1Gbps"])
            _Dropped(ValueError("after the inner scan"))
    assert caught.value is first
    assert _kinds(hooks["program"]) == [ValueError] and sys.unraisablehook == hooks["program"].append
