"""Control of long scans: several Python threads at once, progress, and Ctrl-C.

The capture is written by burstcore's own writer (the gen_training example): ~500k packets of
training-like traffic at snaplen 128, scanned several times over (a list of the same path) when
a scan must last long.
"""

from __future__ import annotations

import collections
import io
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import burstcore

ROOT = Path(__file__).resolve().parent.parent
WINDOWS = ["1us", "10us", "100us", "1ms", "5ms", "100ms"]
RATES = ["40Gbps", "100Gbps"]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "burstcore", "--example", "gen_training"], cwd=ROOT, check=True
    )
    gen = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "examples" / "gen_training"
    path = tmp_path_factory.mktemp("control") / "train.pcap"
    subprocess.run(
        [str(gen), "--out", str(path), "--snaplen", "128", "--packets", "500000", "--hosts", "8"],
        check=True,
        capture_output=True,
    )
    return path


def _scan(source: object) -> burstcore.ScanResult:
    return burstcore.scan(source, windows=WINDOWS, rates=RATES, bins=["1ms"])


def test_threads_scanning_at_once_give_identical_results(capture: Path) -> None:
    alone = _scan(str(capture))
    assert alone.summary["packets"][0] == 500_000
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    def run(_: int) -> burstcore.ScanResult:
        t0 = time.perf_counter()
        r = _scan([str(capture)] * 3)
        with lock:
            spans.append((t0, time.perf_counter()))
        return r

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    merged = _scan([str(capture)] * 3)
    for r in results:
        for name in ("envelope", "backlog", "series", "groups", "summary"):
            assert getattr(r, name).equals(getattr(merged, name)), name
    # Three copies of the trace merged: three times the packets of each window, same windows.
    env = alone.envelope.sort("window_ns")
    env3 = merged.envelope.sort("window_ns")
    assert (env3["max_packets"] == 3 * env["max_packets"]).all()
    # The GIL is released while scanning: the threads' scans overlap in time (with the GIL held
    # throughout, each scan would run alone from start to end).
    spans.sort()
    assert any(b_start < a_end for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_progress_is_called_with_increasing_byte_counts(capture: Path) -> None:
    # 12 M packets: long enough for reports on the way (at most one per 100 ms) on any machine
    # this runs on; the last report says everything was read.
    calls: list[tuple[int, int | None]] = []
    paths = [str(capture)] * 24
    r = burstcore.scan(paths, windows=WINDOWS, rates=RATES, progress=lambda done, total: calls.append((done, total)))
    total = 24 * capture.stat().st_size
    assert r.summary["packets"][0] == 24 * 500_000
    done = [d for d, _ in calls]
    # Never back; a count may be told again while the work goes on without reading.
    assert done == sorted(done) and len(set(done)) >= 3, done
    assert all(t == total for _, t in calls)
    # The first report may still say 0: on a loaded machine 100 ms can pass before any chunk
    # has counted its bytes. What matters is that counts are told on the way, and the end.
    assert any(0 < d < total for d in done), done
    assert done[-1] == total


def test_progress_counts_both_passes_of_a_scan_that_finds_its_rates(capture: Path) -> None:
    # Without rates, a pre-pass over the file finds the mean rate that the default rates are
    # multiples of: the file is read twice. Both passes are told, out of twice the file, so a
    # bar moves through the first one too (it called nothing before) and never goes back.
    size = capture.stat().st_size
    calls: list[tuple[int, int | None]] = []

    def progress(done: int, total: int | None) -> None:
        calls.append((done, total))

    for threads in (1, 2):
        calls.clear()
        r = burstcore.scan(capture, windows=WINDOWS, threads=threads, progress=progress)
        assert r.config["rates"] == "mean-rate multiples (pre-pass)"
        done = [d for d, _ in calls]
        assert all(t == 2 * size for _, t in calls), calls
        assert done == sorted(done), done
        assert size in done, done  # the end of the pre-pass, told once at its end
        assert done[-1] == 2 * size
        # Rates given: one pass, told out of the file's own size.
        calls.clear()
        burstcore.scan(capture, windows=WINDOWS, rates=RATES, threads=threads, progress=progress)
        assert all(t == size for _, t in calls) and calls[-1][0] == size, calls


def test_a_scan_that_starts_over_still_calls_progress(capture: Path, tmp_path: Path) -> None:
    # A capture cut off mid-record (still being written) makes the time chunks of threads=2
    # give up after reading it all, and the scan starts over. That second pass called nothing:
    # the count it reported stayed below the one shown, so the callback, and the look for
    # Ctrl-C that goes with each call, waited for its end (1.85 s on a 4.3 GB file).
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(capture.read_bytes()[:-7])
    # 400 windows: a second pass of several tenths of a second, past the 100 ms between calls.
    windows = [f"{k}us" for k in range(1, 4001, 10)]
    calls: list[int] = []

    class Stop(Exception):
        pass

    def progress(done: int, total: int | None) -> None:
        calls.append(done)
        if calls.count(max(calls)) == 2:  # called again after the count reached its last
            raise Stop

    # By interface too: the aggregate alone, on records this small, would be split by function
    # and read once (docs/metrics.md, Parallel scans).
    with pytest.raises(Stop):
        burstcore.scan(
            cut,
            windows=windows,
            rates=RATES,
            by=["all", "interface"],
            threads=2,
            progress=progress,
        )
    assert calls == sorted(calls), calls
    # What made the chunks give up: the warning that every read of the file gives.
    with pytest.warns(burstcore.CaptureWarning, match="capture ends inside a 144-byte record"):
        burstcore.scan(cut, windows=["1ms"], rates=RATES, threads=1)


def test_progress_ends_full_even_for_a_short_scan(capture: Path) -> None:
    # Shorter than the 100 ms between reports (or not: either way one report, the last, is full).
    calls: list[tuple[int, int | None]] = []
    burstcore.scan(capture, rates=RATES, progress=lambda done, total: calls.append((done, total)))
    size = capture.stat().st_size
    assert calls and calls[-1] == (size, size), calls
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.mark.parametrize(("threads", "by"), [(1, "all"), (2, "all"), (2, ["all", "interface"])])
def test_progress_of_a_file_cut_mid_record_ends_full(capture: Path, tmp_path: Path, threads: int, by: object) -> None:
    # The reader stops at the cut record (a warning) with its bytes read: the last call said
    # 7 bytes short of the total, and a progress bar never reached 100 %. Two threads on the
    # aggregate split by function; by interface too, time chunks that give up and a second pass.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(capture.read_bytes()[:-7])
    size = cut.stat().st_size
    calls: list[tuple[int, int | None]] = []
    with pytest.warns(burstcore.CaptureWarning, match="capture ends inside"):
        burstcore.scan(
            cut,
            windows=["1ms"],
            rates=RATES,
            by=by,
            threads=threads,
            progress=lambda done, total: calls.append((done, total)),
        )
    assert calls and calls[-1] == (size, size), calls[-3:]
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_progress_counts_a_compressed_file_in_its_own_bytes(capture: Path, tmp_path: Path) -> None:
    # The total is the file's size on disk, so the counts are compressed bytes too (counted in
    # decompressed bytes, a progress bar stood at 100 % a third of the way through), and the
    # last call is (size, size) for every kind of reading.
    import gzip

    import zstandard

    data = capture.read_bytes()
    gz, zst = tmp_path / "t.pcap.gz", tmp_path / "t.pcap.zst"
    gz.write_bytes(gzip.compress(data, compresslevel=1))
    zst.write_bytes(zstandard.ZstdCompressor(level=1).compress(data))
    reads = {
        "scan": lambda src, cb: burstcore.scan(src, windows=["1ms"], rates=RATES, progress=cb),
        "read_packets": lambda src, cb: burstcore.read_packets(src, columns=["timestamp"], progress=cb),
        "info": lambda src, cb: burstcore.info(src, progress=cb),
        "flows": lambda src, cb: burstcore.flows(src, progress=cb),
    }
    for path in (gz, zst):
        size = path.stat().st_size
        assert size < len(data) // 2
        for name, read in reads.items():
            calls: list[tuple[int, int | None]] = []
            read(str(path), lambda done, total, calls=calls: calls.append((done, total)))
            assert calls and calls[-1] == (size, size), (path.name, name, calls)
            # Never back, but the same count may come again: the decompressor takes in the last
            # compressed bytes long before the packets in them are read, and each tick calls
            # the callback (so that raising from it, or Ctrl-C, still stops the read).
            done = [d for d, _ in calls]
            assert done == sorted(done) and all(t == size for _, t in calls), (path.name, name, calls)


class _Stream:
    """A file object that cannot seek, as a socket's or a pipe's."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb")

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()


def test_progress_ends_once_a_stream_is_read(capture: Path) -> None:
    # A stream has no total; the callback still hears of the end, with every byte read. A file
    # object that can seek (an opened file, a BytesIO) has one: what it holds from where it is.
    size = capture.stat().st_size
    reads = {
        "scan": lambda src, cb: burstcore.scan(src, windows=["1ms"], rates=RATES, progress=cb),
        "read_packets": lambda src, cb: burstcore.read_packets(src, columns=["timestamp"], progress=cb),
        "info": lambda src, cb: burstcore.info(src, progress=cb),
        "traffic_matrix": lambda src, cb: burstcore.traffic_matrix(src, progress=cb),
    }
    for name, read in reads.items():
        calls: list[tuple[int, int | None]] = []
        with _Stream(capture) as f:
            read(f, lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and calls[-1] == (size, None), (name, calls)
        calls.clear()
        with open(capture, "rb") as f:
            read(f, lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and all(t == size for _, t in calls) and calls[-1] == (size, size), (name, calls)
        calls.clear()
        with io.BytesIO(b"junk" + capture.read_bytes()) as b:
            b.seek(4)
            read(b, lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and calls[-1] == (size, size), (name, calls)
        calls.clear()
        read(capture.read_bytes(), lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and calls[-1] == (size, size), (name, calls)


def test_a_progress_that_cannot_be_called_is_refused_before_the_read(capture: Path) -> None:
    for call in (
        lambda p: burstcore.scan(capture, windows=["1ms"], rates=RATES, progress=p),
        lambda p: burstcore.read_packets(capture, progress=p),
        lambda p: burstcore.info(capture, progress=p),
        lambda p: burstcore.flows(capture, progress=p),
    ):
        with pytest.raises(TypeError, match=r"progress=42 is not callable: pass a function"):
            call(42)


CHILD = """
import sys, time, burstcore
paths = [sys.argv[1]] * 200
print("scanning", flush=True)
try:
    burstcore.scan(paths, windows=["1us", "1ms", "100ms"], rates=["40Gbps"])
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def _interrupt_within_a_second(p: subprocess.Popen[bytes]) -> None:
    """Ctrl-C to a child that is still at work: it must print "interrupted" within a second
    and exit cleanly."""
    assert p.stdout is not None
    try:
        assert p.poll() is None
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        elapsed = time.perf_counter() - t0
        assert line == b"interrupted", line
        assert elapsed < 1.0, f"took {elapsed:.2f} s to stop"
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_ctrl_c_stops_a_long_scan_within_a_second(capture: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(capture)], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"scanning"
    time.sleep(1.0)  # well inside the scan of 100 M packets
    _interrupt_within_a_second(p)


# Scans of a few tens of ms, over and over: the SIGINT may also land while polars builds a
# result frame, where polars raises a second KeyboardInterrupt a moment after the first (polars
# 2.1, as `scan_packets`' docstring says), which the child takes as the same Ctrl-C.
ONE_FILE_CHILD = """
import sys, burstcore
print("scanning", flush=True)
try:
    for _ in range(10_000):
        burstcore.scan(sys.argv[1], windows=["1us", "1ms", "100ms"], rates=["40Gbps"], threads=2)
    print("finished", flush=True)
except KeyboardInterrupt:
    try:
        print("interrupted", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


def test_ctrl_c_stops_two_threads_split_by_function_within_a_second(capture: Path) -> None:
    # One file of small records, the aggregate, two threads: split by function (a reading
    # thread and a worker; docs/metrics.md, Parallel scans), scanned over and over.
    p = subprocess.Popen([sys.executable, "-c", ONE_FILE_CHILD, str(capture)], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"scanning"
    time.sleep(1.0)
    _interrupt_within_a_second(p)


STDIN_CHILD = """
import sys, burstcore
print("reading", flush=True)
try:
    burstcore.scan("-", windows=["1ms"], rates=["1Gbps"])
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize("sent", ["nothing", "half a capture"])
def test_ctrl_c_stops_a_scan_waiting_for_stdin(capture: Path, sent: str) -> None:
    # A live capture on a quiet link (dumpcap -w - | burstcore scan -): the scan waits for data
    # with the pipe still open, and Ctrl-C must stop it there too.
    p = subprocess.Popen([sys.executable, "-c", STDIN_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdin is not None
    assert p.stdout.readline().strip() == b"reading"
    if sent != "nothing":
        data = capture.read_bytes()
        p.stdin.write(data[: len(data) // 2])
        p.stdin.flush()
    time.sleep(1.0)
    _interrupt_within_a_second(p)


def test_thread_results_equal_polars_oracle(capture: Path) -> None:
    # An independent check of the numbers the threads agree on: E(τ) from polars rolling sums.
    r = _scan(str(capture))
    df = burstcore.read_packets(str(capture), columns=["timestamp", "wire_len"]).with_columns(
        pl.col("wire_len").cast(pl.Int64)
    )
    for w, e in zip(r.envelope.sort("window_ns")["window_ns"], r.envelope.sort("window_ns")["bytes"], strict=True):
        want = df.select(pl.col("wire_len").rolling_sum_by("timestamp", window_size=f"{w}ns").max()).item()
        assert e == want, w


FIFO_CHILD = """
import sys, burstcore
print("reading", flush=True)
try:
    burstcore.scan(sys.argv[1], windows=["1ms"], rates=["1Gbps"])
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize("writer", ["none yet", "quiet"])
def test_ctrl_c_stops_a_scan_waiting_on_a_named_pipe(capture: Path, tmp_path: Path, writer: str) -> None:
    # A named pipe given by path (a live capture through mkfifo, or <(...)): the scan waits for
    # a writer, or for data from one that went quiet, and Ctrl-C must stop it there as on stdin.
    fifo = tmp_path / "live"
    os.mkfifo(fifo)
    p = subprocess.Popen([sys.executable, "-c", FIFO_CHILD, str(fifo)], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"reading"
    held = None
    try:
        if writer == "quiet":
            # Kept open, and silent, until the child has stopped.
            held = open(fifo, "wb")
            held.write(capture.read_bytes()[:100_000])
            held.flush()
        time.sleep(1.0)
        _interrupt_within_a_second(p)
    finally:
        if held is not None:
            held.close()


class _Reader:
    """A file object over bytes whose read() returns what `wrap` makes of each chunk."""

    def __init__(self, data: bytes, wrap: object = bytes) -> None:
        import io

        self.f = io.BytesIO(data)
        self.wrap = wrap

    def read(self, n: int = -1) -> object:
        return self.wrap(self.f.read(n))  # type: ignore[operator]


def test_a_file_objects_own_exception_reaches_the_caller(capture: Path) -> None:
    data = capture.read_bytes()

    class Failing(_Reader):
        def read(self, n: int = -1) -> object:
            if self.f.tell() > 1_000_000:
                raise TimeoutError("upstream timed out")
            return super().read(n)

    # Its own type and message, not an OSError about it; where the capture stopped as a note.
    with pytest.raises(TimeoutError, match="upstream timed out") as e:
        burstcore.scan(Failing(data), windows=["1ms"], rates=["1Gbps"])
    assert any("burstcore" in n and "byte offset" in n for n in getattr(e.value, "__notes__", []))
    with pytest.raises(OSError, match="returned None"):
        burstcore.scan(_Reader(data, lambda b: None), windows=["1ms"])
    # Anything with the buffer protocol is bytes enough.
    want = burstcore.scan(data[:2_000_000], windows=["1ms"], rates=["1Gbps"])
    for wrap in (bytearray, memoryview):
        got = burstcore.scan(_Reader(data[:2_000_000], wrap), windows=["1ms"], rates=["1Gbps"])
        assert got.envelope.equals(want.envelope) and got.backlog.equals(want.backlog)


def test_progress_calls_leave_the_scan_most_of_the_time(capture: Path) -> None:
    # A slow callback (a notebook widget redrawing) is spaced by 4× its own time: before, the
    # next call came as soon as one returned, and the callback took ~90 % of the scan.
    spent = []

    def slow(done: int, total: int | None) -> None:
        t0 = time.perf_counter()
        time.sleep(0.05)
        spent.append(time.perf_counter() - t0)

    # 16 copies, 8 M packets: 4 of them were read in about the 100 ms before the first call at
    # times, and the one call left was the last (the clean clone's run saw it once).
    t0 = time.perf_counter()
    burstcore.scan([capture] * 16, windows=WINDOWS, rates=RATES, progress=slow)
    wall = time.perf_counter() - t0
    assert len(spent) >= 2
    # The last call comes at the end whatever the spacing: leave it out.
    assert sum(spent[:-1]) < 0.5 * wall, (len(spent), sum(spent), wall)


# A SIGINT that came while a call's Rust code held the GIL is handled by the next Python code
# run: a file object's seekable() or tell(), asked where it stands, or threading's
# current_thread(), asked which thread scans. Each dropped a failure there as "unknown", and
# the KeyboardInterrupt with it: the call ran to its end. `_thread.interrupt_main` notes a
# SIGINT as a signal handler does, with nothing run after it, whatever the machine's load.
class _SigintFromTell(io.BytesIO):
    # A C function, no Python frame: the SIGINT is still pending when the call goes on.
    tell = staticmethod(__import__("_thread").interrupt_main)


class _SigintInTell(io.BytesIO):
    def tell(self) -> int:
        __import__("_thread").interrupt_main()  # raised here, inside tell()
        return super().tell()


class _SigintInSeekable(io.BytesIO):
    def seekable(self) -> bool:
        __import__("_thread").interrupt_main()
        return True


def _small_capture() -> bytes:
    w = burstcore.CaptureWriter("pcap", nanos=True)
    for i in range(300):
        w.packet(1_700_000_000_000_000_000 + 1000 * i, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + b"\0" * 46)
    return w.getvalue()


@pytest.mark.parametrize("source", [_SigintFromTell, _SigintInTell, _SigintInSeekable])
@pytest.mark.parametrize(
    "call",
    [
        lambda src: burstcore.scan(src, windows=["1ms"], rates=["1Gbps"], progress=lambda done, total: None),
        lambda src: burstcore.read_packets(src),
        lambda src: burstcore.flows(src),
    ],
    ids=["scan", "read_packets", "flows"],
)
def test_a_sigint_handled_while_the_call_asks_the_file_object_raises_from_the_call(source: type, call: Any) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("interrupt_main reaches the main thread only")
    data = _small_capture()
    # (A run where the shell left SIGINT ignored gets Python's handler: tests/conftest.py.)
    with pytest.raises(KeyboardInterrupt):
        call(source(data))


# The calls the child processes below make, by name, on a capture's path.
CALLS = """
calls = {
    "scan": lambda path: burstcore.scan(path, windows=["1us", "1ms"], rates=["1Gbps"], bins=["1ms"]),
    "flows": lambda path: burstcore.flows(path, windows=["1ms"]),
    "read_packets": burstcore.read_packets,
    "traffic_matrix": burstcore.traffic_matrix,
    "host_volumes": burstcore.host_volumes,
    "sizes": burstcore.sizes,
    "gaps": burstcore.gaps,
    "bursts": lambda path: burstcore.bursts(path, gap="10us"),
}
"""

# Short scans over and over until a SIGINT stops them, then a moment of the caller's own code:
# the KeyboardInterrupts one SIGINT raised, in the call and after it.
ONE_SIGINT_CHILD = (
    """
import sys, time, burstcore
"""
    + CALLS
    + """
call = calls[sys.argv[3]]
for _ in range(int(sys.argv[2])):
    raised = 0
    print("scanning", flush=True)
    try:
        try:
            # Bounded: a SIGINT lost (none raised) must not hang the test.
            until = time.monotonic() + 30
            while time.monotonic() < until:
                call(sys.argv[1])
        except KeyboardInterrupt:
            raised += 1
        except TypeError as e:
            # polars 2.1's own for a SIGINT handled while it reads a dtype object in Rust
            # (`Expr.cast`): "'<unprintable str object>' ...", which must not reach the caller.
            if "is not a Polars data type" not in str(e):
                raise
            raised = -1
        time.sleep(0.05)
    except KeyboardInterrupt:
        raised += 1
    print(raised, flush=True)
"""
)


@pytest.mark.parametrize(
    ("function", "sigints"),
    [("scan", 200), ("flows", 60), ("read_packets", 60), ("traffic_matrix", 60), ("sizes", 60), ("bursts", 60)],
)
def test_no_sigint_is_lost_among_short_scans(tmp_path: Path, function: str, sigints: int) -> None:
    # A SIGINT that landed before the scan's Rust code asked threading which thread it was on
    # was handled there and dropped: no KeyboardInterrupt, the scans went on (6 SIGINTs lost in
    # 500 on main, in 4 runs of 5 of 100). Sent at random moments, 200 SIGINTs most likely hit
    # such a moment; wherever they land, each must raise a KeyboardInterrupt, and only one: for a
    # SIGINT while polars built a result's frame, polars raised its own KeyboardInterrupt and
    # left Python's pending, raised again at the caller's next line (62 doubles in 500 SIGINTs
    # on main; 0 in 1,600 since).
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    p = subprocess.Popen(
        [sys.executable, "-c", ONE_SIGINT_CHILD, str(path), str(sigints), function], stdout=subprocess.PIPE
    )
    assert p.stdout is not None
    rng = random.Random(7)
    try:
        counts = []
        for _ in range(sigints):
            assert p.stdout.readline().strip() == b"scanning"
            time.sleep(rng.uniform(0.0, 0.03))
            p.send_signal(signal.SIGINT)
            counts.append(int(p.stdout.readline()))
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # -1: polars' TypeError instead (4 of 800 SIGINTs into scan on main; see
    # test_a_sigint_while_polars_reads_a_data_type_is_a_keyboard_interrupt).
    assert set(counts) == {1}, f"KeyboardInterrupts a SIGINT raised: {collections.Counter(counts)}"


# The first numpy array polars is given sets up numpy's C API in polars' copy of the numpy
# crate, which runs numpy's version check in Python; a KeyboardInterrupt raised there (a SIGINT
# landing in a process's first scan) made it panic: PanicException, "Failed to access NumPy
# array API capsule". Here the check raises it every time it runs after the import.
FIRST_CALL_CHILD = """
import sys, numpy.lib, burstcore

def sigint_here(*args):
    raise KeyboardInterrupt

numpy.lib.NumpyVersion = sigint_here
path = sys.argv[1]
burstcore.scan(path, windows=["1us", "1ms"], rates=["1Gbps"], bins=["1ms"])
for analysis in (burstcore.read_packets, burstcore.flows, burstcore.traffic_matrix, burstcore.host_volumes,
                 burstcore.sizes, burstcore.gaps, burstcore.bursts):
    analysis(path)
print("done", flush=True)
"""


def test_no_numpy_setup_is_left_to_the_first_scan(tmp_path: Path) -> None:
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    r = subprocess.run([sys.executable, "-c", FIRST_CALL_CHILD, str(path)], capture_output=True, timeout=120)
    assert r.stdout.strip() == b"done", r.stderr.decode()[-2000:]


# The same at random moments of a process's first scan, with numpy's version check slowed as a
# cold disk would (on main, 19 of 36 such first scans ended in a PanicException, in 3 runs).
FIRST_SCAN_CHILD = """
import sys, time, numpy.lib, burstcore

version = numpy.lib.NumpyVersion

def slow_version(*args):
    time.sleep(0.05)
    return version(*args)

numpy.lib.NumpyVersion = slow_version
print("ready", flush=True)
try:
    try:
        burstcore.scan(sys.argv[1], windows=["1us", "1ms"], rates=["1Gbps"], bins=["1ms"])
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    except BaseException as e:
        print(type(e).__name__, flush=True)
except KeyboardInterrupt:
    pass  # the SIGINT came after the scan: not this test's
"""


def test_a_sigint_in_a_first_scan_raises_no_panic(tmp_path: Path) -> None:
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    rng = random.Random(11)
    seen = []
    for _ in range(12):
        p = subprocess.Popen([sys.executable, "-c", FIRST_SCAN_CHILD, str(path)], stdout=subprocess.PIPE)
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
            time.sleep(rng.uniform(0.0, 0.12))
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        seen.append(out.strip().decode() or "after the scan")
    assert set(seen) <= {"finished", "interrupted", "after the scan"}, collections.Counter(seen)


# polars panics on a KeyboardInterrupt raised in Python code it calls while it builds a frame
# (a dtype's __init__, as a SIGINT landing there does; 1 SIGINT in ~1,500 of the test above):
# PanicException reached the caller (on main, every run of this test).
PANIC_CHILD = """
import sys, polars as pl, burstcore

init = pl.Datetime.__init__
calls = []

def sigint_once(self, *args, **kwargs):
    if not calls:
        calls.append(1)
        raise KeyboardInterrupt
    init(self, *args, **kwargs)

pl.Datetime.__init__ = sigint_once
try:
    burstcore.scan(sys.argv[1], windows=["1us", "1ms"], rates=["1Gbps"], bins=["1ms"])
    print("finished" if calls else "not called", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
except BaseException as e:
    print(type(e).__name__, flush=True)
"""


def test_polars_panic_on_a_keyboard_interrupt_is_that_keyboard_interrupt(tmp_path: Path) -> None:
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    r = subprocess.run([sys.executable, "-c", PANIC_CHILD, str(path)], capture_output=True, timeout=120)
    assert r.stdout.strip() == b"interrupted", (r.stdout, r.stderr.decode()[-2000:])


# polars reads a data type object given to it (`Expr.cast`, `Series.cast`) in Rust, and first
# takes str() of its type's __qualname__; CPython's str() runs pending signal handlers first, so
# a SIGINT landing just before raised its KeyboardInterrupt there, which polars dropped (to
# sys.unraisablehook) for "TypeError: '<unprintable str object>' is not a Polars data type"
# (about 1 SIGINT in 200 of test_no_sigint_is_lost_among_short_scans). Here that str() raises
# KeyboardInterrupt at each such read in turn, for every read each call makes: every one must
# come out as the KeyboardInterrupt (on main, all 104 reads came out as that TypeError).
# Also scan_packets, whose 16 dtypes polars reads when the frame is made (not at a collect):
# polars' TypeError there was taken for a polars without explain_name by scan_packets, which
# made the frame again without it, the Ctrl-C lost (all 16 reads of each scan_packets call below
# ended "finished" before fix-ds; with "other_handler", where that TypeError alone does not tell
# a Ctrl-C, again before one_ctrl_c kept the KeyboardInterrupt polars dropped); and scan's
# in-memory columns, 2 or 3 casts a batch, whose TypeError came out as it was or, of batches,
# as scan's own "batch 0: ..." (on main, 2 of the 37 reads of scan_of_columns and of
# scan_of_iter_packets, and 3 of scan_of_scan_packets' 54). On polars 1.10 every read of every
# call ended in a TypeError before (pyo3's "argument 'dtype': ..." in front of polars'
# message). argv[2] "signal": a real SIGINT at that read (Python's handler raising it there),
# as well as the KeyboardInterrupt raised directly; "other_handler": with every read's
# TypeError left as it was by the TypeError's own test (`only_ctrl_c_raises`), 0 of 296 reads
# were a KeyboardInterrupt before.
BATCH_CALLS = """
calls.update({
    "scan_packets": burstcore.scan_packets,
    "collect": lambda path: burstcore.scan_packets(path).collect(),
    "collect_streaming": lambda path: burstcore.scan_packets(path).collect(engine="streaming"),
    "filter_head": lambda path: burstcore.scan_packets(path).filter(pl.col("wire_len") > 10).head(3).collect(),
    "scan_of_scan_packets": lambda path: burstcore.scan(burstcore.scan_packets(path), windows=["1us"], rates=["1Gbps"]),
    "scan_of_columns": lambda path: burstcore.scan(
        burstcore.read_packets(path, columns=["timestamp", "wire_len"]), windows=["1us"], rates=["1Gbps"]
    ),
    "scan_of_iter_packets": lambda path: burstcore.scan(
        burstcore.iter_packets(path, columns=["timestamp", "wire_len"]), windows=["1us"], rates=["1Gbps"]
    ),
})
"""
# Every read polars makes of a data type's name counted (`reads`), the `sigint_at`-th raising
# KeyboardInterrupt as a SIGINT's handler would there; `count_reads` makes each read of each
# call raise in turn and prints, per call, how the calls ended: `label` of what one returned
# ("finished" by default), "interrupted", or the exception (argv[2] "signal": by a real SIGINT;
# "other_handler": with a handler in Python of SIGTERM, which might have raised what polars
# dropped as far as its TypeError tells, but one_ctrl_c saw the KeyboardInterrupt dropped).
RAISING_DTYPE_READS = """
import builtins, collections, json, signal, sys, polars as pl
from polars.datatypes.classes import DataTypeClass
reads = 0
sigint_at = 0

class str(builtins.str):  # Python's name, so that polars' message is the one a SIGINT gives
    def __str__(self):
        global reads
        reads += 1
        if reads == sigint_at:
            if sys.argv[2] == "signal":
                signal.raise_signal(signal.SIGINT)
            raise KeyboardInterrupt
        return builtins.str.__str__(self)

def subclasses(c):
    for s in c.__subclasses__():
        yield s
        yield from subclasses(s)

def raising_dtype_reads():
    for c in (DataTypeClass, *subclasses(pl.DataType)):
        c.__qualname__ = str(c.__qualname__)
    sys.unraisablehook = lambda u: None
    if sys.argv[2] == "other_handler":
        signal.signal(signal.SIGTERM, lambda *args: None)

def count_reads(calls, label=lambda returned: "finished"):
    global reads, sigint_at
    raising_dtype_reads()
    for name, call in calls.items():
        reads, sigint_at = 0, 0
        call()
        seen = collections.Counter()
        for k in range(1, reads + 1):
            reads, sigint_at = 0, k
            try:
                seen[label(call())] += 1
            except KeyboardInterrupt:
                seen["interrupted"] += 1
            except BaseException as e:
                seen[f"{type(e).__name__}: {e}"] += 1
        print(json.dumps([name, seen]), flush=True)
"""

EVERY_DTYPE_READ_CHILD = (
    """
import sys, polars as pl, burstcore
"""
    + CALLS
    + BATCH_CALLS
    + RAISING_DTYPE_READS
    + """
count_reads({name: lambda call=call: call(sys.argv[1]) for name, call in calls.items()})
"""
)


@pytest.mark.parametrize("how", ["raise", "signal", "other_handler"])
def test_a_sigint_while_polars_reads_a_data_type_is_a_keyboard_interrupt(tmp_path: Path, how: str) -> None:
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    r = subprocess.run([sys.executable, "-c", EVERY_DTYPE_READ_CHILD, str(path), how], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    seen = dict(json.loads(line) for line in r.stdout.decode().splitlines())
    calls = ["scan", "flows", "read_packets", "traffic_matrix", "host_volumes", "sizes", "gaps", "bursts"]
    calls += ["scan_packets", "collect", "collect_streaming", "filter_head"]
    assert set(seen) == {*calls, "scan_of_scan_packets", "scan_of_columns", "scan_of_iter_packets"}
    # The reads counted are those of these calls today (0 for read_packets and host_volumes):
    # enough that the test tries them, none that ends otherwise than in a KeyboardInterrupt.
    assert sum(s.get("interrupted", 0) for s in seen.values()) >= 50, seen
    assert all(seen[name].get("interrupted", 0) >= 16 for name in ("scan_packets", "collect", "filter_head")), seen
    assert all(set(s) <= {"interrupted"} for s in seen.values()), seen


# The same for the command line (its tables, JSON and CSV, figures: polars calls of its own,
# outside the API's) and for the figures and the HTML page called from Python. argv[1]: the
# capture, argv[3]: a folder for the outputs.
CLI_EVERY_DTYPE_READ_CHILD = (
    """
import contextlib, io, sys, burstcore
import matplotlib
matplotlib.use("Agg")
from burstcore import cli
from burstcore.plot import plot_results
from burstcore.report import render_report, series_table, text_table

p, out = sys.argv[1], sys.argv[3]
commands = {
    "scan": ["scan", p, "--windows", "1us,1ms", "--rates", "1Gbps"],
    "scan_json": ["scan", p, "--windows", "1us,1ms", "-o", f"{out}/x.json"],
    "scan_csv": ["scan", p, "--windows", "1us,1ms", "-o", f"{out}/x.csv"],
    "info": ["info", p],
    "flows": ["flows", p],
    "matrix": ["matrix", p],
    "iterations": ["iterations", p],
    "bursts": ["bursts", p, "--gap", "10us"],
    "sizes": ["sizes", p],
    "gaps": ["gaps", p],
    "superpose": ["superpose", p, p, "--windows", "1ms"],
    "shared": ["shared", p, p],
    "plot": ["plot", p, "-o", f"{out}/x.svg", "-q"],
    "report": ["report", p, "-o", f"{out}/x.html", "-q"],
}
# Computed before any read raises: only the figures' and the page's own reads are counted.
result = burstcore.scan(p, windows=["1us", "1ms"], rates=["1Gbps"], bins=["1ms"])
iters, info = burstcore.iterations(p), burstcore.info(p)
calls = {
    "ScanResult.plot": lambda: result.plot(iterations=iters),
    "plot_results": lambda: plot_results([("a", result), ("b", result)], iterations=[iters, None]),
    "render_report": lambda: render_report("a", result, info=info, iterations=iters),
    # burstcore.report's one other helper that reads data types, called by a program of its own.
    "series_table": lambda: text_table(series_table(result, 3)),
}
for name, argv in commands.items():
    def command(argv=argv):
        told = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(told):
            code = cli.main(argv)
        if code not in (0, 130):
            raise SystemExit(f"exit {code}: {told.getvalue().strip()}")
        return code
    calls[name] = command
"""
    + RAISING_DTYPE_READS
    + """
count_reads(calls, lambda code: "exit 130" if code == 130 else "finished")
"""
)


@pytest.mark.parametrize("how", ["raise", "signal"])
def test_a_sigint_while_the_command_line_or_a_figure_reads_a_data_type_is_an_interrupt(
    tmp_path: Path, how: str
) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "short.pcap"
    path.write_bytes(_small_capture())
    argv = [sys.executable, "-c", CLI_EVERY_DTYPE_READ_CHILD, str(path), how, str(tmp_path)]
    r = subprocess.run(argv, capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    seen = dict(json.loads(line) for line in r.stdout.decode().splitlines())
    commands = ["scan", "scan_json", "scan_csv", "info", "flows", "matrix", "iterations", "bursts", "sizes", "gaps"]
    commands += ["superpose", "shared", "plot", "report"]
    figures = ["ScanResult.plot", "plot_results", "render_report", "series_table"]
    assert set(seen) == {*commands, *figures}
    # Each command a Ctrl-C stops with exit 130, each figure or page with a KeyboardInterrupt,
    # wherever it lands; before, 75 of the commands' 412 reads (scan -o x.json, iterations,
    # shared, plot, report: their own casts) ended in exit 5, "internal error", and all 23 of
    # the figures' and the page's in polars' TypeError.
    assert all(set(seen[name]) <= {"exit 130"} for name in commands), seen
    assert all(set(seen[name]) <= {"interrupted"} for name in figures), seen
    # Enough reads that the test tries them (0 for info's, today).
    assert sum(sum(s.values()) for s in seen.values()) >= 300, seen
    for name in ("scan_json", "shared", "plot", "report", *figures):
        assert sum(seen[name].values()) >= 3, seen


def test_a_type_error_of_a_command_is_still_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from burstcore import cli

    raised: list[BaseException] = []

    def command(args: Any) -> int:
        raise raised[-1]

    monkeypatch.setitem(cli.COMMANDS, "info", command)

    class Mine(pl.DataType):
        pass

    def own_bad_data_type(args: Any) -> int:
        pl.Series([1]).cast(Mine())
        return 0

    for error in (TypeError("argument 'dtype': 'Foo' is not a Polars data type"), TypeError(LOST_NAMING, 1)):
        raised.append(error)
        assert cli.main(["info", "x.pcap"]) == cli.EXIT_INTERNAL
        assert f"internal error: TypeError: {error}" in capsys.readouterr().err
    monkeypatch.setitem(cli.COMMANDS, "info", own_bad_data_type)
    assert cli.main(["info", "x.pcap"]) == cli.EXIT_INTERNAL
    assert "Mine' is not a Polars data type" in capsys.readouterr().err
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set from the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("Python's own SIGINT handler is not the default one here")
    # polars' message for a name it could not read: an interrupt, unless a handler of another
    # signal may have raised what it dropped (as in `one_ctrl_c`).
    monkeypatch.setitem(cli.COMMANDS, "info", command)
    raised.append(TypeError(LOST_NAMING))
    assert cli.main(["info", "x.pcap"]) == cli.EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err
    previous = signal.signal(signal.SIGTERM, lambda *args: None)
    try:
        assert cli.main(["info", "x.pcap"]) == cli.EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert f"internal error: TypeError: {LOST_NAMING}" in capsys.readouterr().err


LOST_NAMING = "'<unprintable str object>' is not a Polars data type"


def _exit_with(exc: BaseException) -> BaseException | None:
    try:
        with burstcore._burstcore.one_ctrl_c:
            raise exc
    except BaseException as e:
        return e
    return None


def test_only_polars_type_error_for_a_lost_ctrl_c_becomes_a_keyboard_interrupt() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set from the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("Python's own SIGINT handler is not the default one here")
    lost = TypeError(LOST_NAMING)
    e = _exit_with(lost)
    assert isinstance(e, KeyboardInterrupt) and e.__cause__ is lost
    # polars 1.x: the same, named as a function's argument by pyo3 (all 104 reads of
    # EVERY_DTYPE_READ_CHILD's first 8 calls ended in it on polars 1.10, before).
    for naming in ("argument 'dtype': ", "argument 'schema': "):
        as_argument = TypeError(naming + LOST_NAMING)
        e = _exit_with(as_argument)
        assert isinstance(e, KeyboardInterrupt) and e.__cause__ is as_argument
    # A user's own bad data type, or any other TypeError, is left as it is.
    others = [TypeError("'Foo' is not a Polars data type"), TypeError(LOST_NAMING, 1), ValueError(LOST_NAMING)]
    others += [TypeError(f"{p}{LOST_NAMING}") for p in ("argument '': ", "argument 'a b': ", "x argument 'dtype': ")]
    others += [TypeError("argument 'dtype': 'Foo' is not a Polars data type")]
    for other in others:
        assert _exit_with(other) is other

    class Mine(pl.DataType):
        pass

    with pytest.raises(TypeError, match="Mine' is not a Polars data type"):
        with burstcore._burstcore.one_ctrl_c:
            pl.Series([1]).cast(Mine())
    # A handler in Python of another signal may have raised what polars dropped: not a
    # Ctrl-C's for sure, so the TypeError stays.
    previous = signal.signal(signal.SIGTERM, lambda *args: None)
    try:
        assert _exit_with(lost) is lost
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert isinstance(_exit_with(lost), KeyboardInterrupt)


# The same with a SIGINT handler of the caller's own, which may raise anything: in a child, as
# setting SIGINT's handler here would put Python's over polars' (at the C level) for later tests.
OWN_SIGINT_HANDLER_CHILD = f"""
import signal, burstcore
signal.signal(signal.SIGINT, lambda *args: None)
try:
    with burstcore._burstcore.one_ctrl_c:
        raise TypeError({LOST_NAMING!r})
except BaseException as e:
    print(type(e).__name__, flush=True)
"""


def test_with_a_sigint_handler_of_its_own_polars_type_error_stays() -> None:
    r = subprocess.run([sys.executable, "-c", OWN_SIGINT_HANDLER_CHILD], capture_output=True, timeout=60)
    assert r.stdout.strip() == b"TypeError", (r.stdout, r.stderr.decode()[-2000:])


class _Dropped:
    """An exception sent to sys.unraisablehook, as polars sends a KeyboardInterrupt it met: the
    one its __del__ raises."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


@pytest.fixture
def unraisable() -> Iterator[list[Any]]:
    """What reaches the hook one_ctrl_c finds (and must give back once its block is over)."""
    given: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = given.append
    try:
        yield given
    finally:
        sys.unraisablehook = previous


def _raised_by(block: Callable[[], object]) -> BaseException | None:
    try:
        with burstcore._burstcore.one_ctrl_c:
            block()
    except BaseException as e:
        return e
    return None


def test_one_ctrl_c_keeps_only_a_dropped_keyboard_interrupt_of_its_own(unraisable: list[Any]) -> None:
    given = unraisable
    # Another exception dropped meanwhile is the hook's it found, not raised here.
    assert _raised_by(lambda: _Dropped(ValueError("not a Ctrl-C"))) is None
    assert [type(u.exc_value) for u in given] == [ValueError]
    # A KeyboardInterrupt dropped on another thread too.
    given.clear()

    def on_another_thread() -> None:
        t = threading.Thread(target=lambda: _Dropped(KeyboardInterrupt()))
        t.start()
        t.join()

    assert _raised_by(on_another_thread) is None
    assert [type(u.exc_value) for u in given] == [KeyboardInterrupt]
    given.clear()
    # This thread's, dropped in a block that ends normally: raised on the way out, the first of
    # two (a second Ctrl-C before Python's handler runs merges with the first).
    dropped, second = KeyboardInterrupt(), KeyboardInterrupt()

    def twice() -> None:
        _Dropped(dropped)
        _Dropped(second)

    assert _raised_by(twice) is dropped
    assert given == [] and sys.unraisablehook == given.append
    # With polars' TypeError for the name it could not read, or any other exception: the
    # Ctrl-C came first, that exception its cause.
    for error in (TypeError(LOST_NAMING), ValueError("a bad capture")):

        def failing(error: BaseException = error) -> None:
            _Dropped(dropped)
            raise error

        e = _raised_by(failing)
        assert e is dropped and e.__cause__ is error
    # A KeyboardInterrupt raised in the block stands for it.
    raised = KeyboardInterrupt()

    def interrupted() -> None:
        _Dropped(dropped)
        raise raised

    assert _raised_by(interrupted) is raised
    assert given == [] and sys.unraisablehook == given.append

    # A hook another thread set meanwhile stays, and what it gives the one it replaced (this
    # block's) goes on to the hook before once the block is over.
    def swapped() -> None:
        inner = sys.unraisablehook
        sys.unraisablehook = lambda u: inner(u)

    assert _raised_by(swapped) is None
    assert sys.unraisablehook != given.append
    _Dropped(KeyboardInterrupt())
    assert [type(u.exc_value) for u in given] == [KeyboardInterrupt]


def test_nested_one_ctrl_c_each_keeps_what_was_dropped_in_it(unraisable: list[Any]) -> None:
    # The command line runs render_report inside one_ctrl_c, which runs more inside its own.
    one_ctrl_c = burstcore._burstcore.one_ctrl_c
    first, inner, after = KeyboardInterrupt("first"), KeyboardInterrupt("inner"), KeyboardInterrupt("after")
    with pytest.raises(KeyboardInterrupt) as caught:
        with one_ctrl_c:
            outer = sys.unraisablehook
            assert outer != unraisable.append
            with pytest.raises(KeyboardInterrupt) as caught_inner:
                with one_ctrl_c:
                    _Dropped(inner)
            assert caught_inner.value is inner and sys.unraisablehook is outer
            with one_ctrl_c:  # one dropped in the outer block before stays the outer's
                _Dropped(first)
            assert sys.unraisablehook is outer
            _Dropped(after)
    assert caught.value is first
    assert unraisable == [] and sys.unraisablehook == unraisable.append


def test_one_ctrl_c_on_two_threads_at_once(unraisable: list[Any]) -> None:
    # Two threads' blocks (scan_packets on both, say), the first to start ending first while
    # the other's hook is on top: each keeps its own thread's KeyboardInterrupt, whichever hook
    # is on top when it is dropped, and the hook found is back once both are over (not a pile
    # of hooks of blocks long over).
    one_ctrl_c = burstcore._burstcore.one_ctrl_c

    def blocks(first_drops: bool, second_drops: bool) -> dict[str, BaseException | None]:
        raised: dict[str, BaseException | None] = {}
        started, second_started = threading.Event(), threading.Event()

        def run(name: str, wait: threading.Event | None, block: Callable[[], None]) -> None:
            if wait is not None:
                assert wait.wait(10)
            try:
                with one_ctrl_c:
                    block()
                raised[name] = None
            except BaseException as e:
                raised[name] = e

        def first() -> None:
            started.set()
            assert second_started.wait(10)
            if first_drops:
                _Dropped(KeyboardInterrupt("first"))

        def second() -> None:
            second_started.set()
            t1.join(10)
            if second_drops:
                _Dropped(KeyboardInterrupt("second"))

        t1 = threading.Thread(target=run, args=("first", None, first))
        t2 = threading.Thread(target=run, args=("second", started, second))
        t1.start()
        t2.start()
        t2.join(10)
        return raised

    for first_drops, second_drops in itertools.product([True, False], repeat=2):
        for _ in range(3):
            raised = blocks(first_drops, second_drops)
            assert set(raised) == {"first", "second"}
            for name, drops in (("first", first_drops), ("second", second_drops)):
                e = raised[name]
                assert (isinstance(e, KeyboardInterrupt) and e.args == (name,)) if drops else e is None, raised
            assert unraisable == [] and sys.unraisablehook == unraisable.append
