"""iter_packets and scan_packets: a capture read in batches gives, batch after batch, exactly the
rows of read_packets with the same arguments (and its warnings and errors); stopping early frees
everything; the LazyFrame's pushed-down projection, slice and predicate give what the eager
frame gives, and a head reads no more than it needs."""

from __future__ import annotations

import gc
import gzip
import io
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from tests.conftest import shared_dir

T0 = 1_700_000_000_000_000_000


def frame(i: int) -> bytes:
    """An Ethernet frame: IPv4 UDP or TCP, IPv6 UDP (an address longer than a string view holds
    inline), or ARP (no IP fields), by i."""
    udp = (4000 + i % 7).to_bytes(2, "big") + b"\x12\xb7\x00\x10\x00\x00" + b"p" * 8
    kind = i % 4
    if kind == 0:
        return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\x00\x01" + b"\x00" * 26
    if kind == 1:
        src = bytes.fromhex("20010db8000000000000000000000000")[:-1] + bytes([i % 29])
        dst = bytes.fromhex("fe800000000000000000000000001234")
        ip = b"\x60\0\0\0" + len(udp).to_bytes(2, "big") + b"\x11\x40" + src + dst
        return b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd" + ip + udp
    proto = 6 if kind == 2 else 17
    l4 = (
        (80).to_bytes(2, "big") + b"\x12\xb7" + i.to_bytes(4, "big") + b"\0\0\0\0\x50\x18" + b"\0" * 6
        if proto == 6
        else udp
    )
    ip = b"\x45\0" + (20 + len(l4)).to_bytes(2, "big") + b"\0\0\0\0\x40" + bytes([proto]) + b"\0\0"
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + bytes([10, 0, 0, i % 5, 10, 0, 1, 1]) + l4


def pcap(n: int, byte_order: str = "little", nanos: bool = True) -> bytes:
    w = burstcore.CaptureWriter("pcap", byte_order=byte_order, nanos=nanos)
    for i in range(n):
        w.packet(T0 + 1000 * i, frame(i))
    return w.getvalue()


def pcapng(n: int, byte_order: str = "big") -> bytes:
    """Three interfaces of different resolutions, packets spread over them, and a Simple Packet
    Block (no timestamp) now and then."""
    w = burstcore.CaptureWriter("pcapng", byte_order=byte_order)
    w.section()
    ifaces = [w.interface(resolution="1e-9"), w.interface(resolution="1e-6"), w.interface(resolution="1e-9")]
    for i in range(n):
        if i % 97 == 13:
            w.spb(frame(i))
        else:
            w.epb(ifaces[i % 3], frame(i), ts_ns=T0 + 3000 * i)
    return w.getvalue()


def concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]


def batches(source: Any, batch_rows: int, **kw: Any) -> pl.DataFrame:
    """Every batch of iter_packets checked against its bound, and their concatenation."""
    got = list(burstcore.iter_packets(source, batch_rows=batch_rows, **kw))
    assert got, "at least one batch"
    assert all(df.height == batch_rows for df in got[:-1]), [df.height for df in got]
    assert 0 < got[-1].height <= batch_rows or len(got) == 1
    return concat(got)


def same_as_read_packets(make: Any, batch_rows: int, **kw: Any) -> pl.DataFrame:
    """read_packets' frame, and that iter_packets gives it; ``make()`` gives the source anew (a
    file object is read once)."""
    want = burstcore.read_packets(make(), threads=1, **kw)
    got = batches(make(), batch_rows, **kw)
    assert_frame_equal(got, want)
    return want


CAPTURES = {
    "le.pcap": lambda: pcap(700),
    "be-us.pcap": lambda: pcap(700, "big", nanos=False),
    "three-interfaces-be.pcapng": lambda: pcapng(700),
    "three-interfaces-le.pcapng": lambda: pcapng(700, "little"),
}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_batches_concatenated_equal_read_packets(name: str, tmp_path: Path) -> None:
    data = CAPTURES[name]()
    path = tmp_path / name
    path.write_bytes(data)
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(data, mtime=0))
    zst = tmp_path / (name + ".zst")
    zst.write_bytes(zstandard.ZstdCompressor().compress(data))
    opened: list[io.BufferedReader] = []

    def file_object() -> io.BufferedReader:
        opened.append(open(path, "rb"))
        return opened[-1]

    for make in (
        lambda: str(path),
        lambda: data,
        lambda: io.BytesIO(data),
        lambda: str(gz),
        lambda: str(zst),
        file_object,
    ):
        for batch_rows in (1, 7, 512, 700, 10**6):
            df = same_as_read_packets(make, batch_rows)
            assert df.height == 700
    for f in opened:
        f.close()
    # Columns (in the order asked, one asked twice), a stretch, a filter.
    for kw in (
        {"columns": ["dst", "timestamp", "dst", "sport"]},
        {"columns": "src"},
        {"start": T0 + 50_000, "end": T0 + 1_500_000},
        {"filter": "udp"},
        {"filter": "tcp", "start": T0 + 90_000, "columns": ["tcp_seq", "wire_len"]},
    ):
        for batch_rows in (1, 3, 100):
            same_as_read_packets(lambda: str(path), batch_rows, **kw)


@settings(max_examples=40, deadline=None)
@given(batch_rows=st.integers(min_value=1, max_value=900), n=st.integers(min_value=0, max_value=800))
def test_any_batch_size_gives_the_whole_read(batch_rows: int, n: int) -> None:
    data = pcapng(n) if n % 2 else pcap(n)
    want = burstcore.read_packets(data)
    got = list(burstcore.iter_packets(data, batch_rows=batch_rows))
    # Full batches, then the rest if any; one empty batch for a capture of no packet.
    full, rest = divmod(n, batch_rows)
    assert [df.height for df in got] == ([batch_rows] * full + [rest] if rest or n == 0 else [batch_rows] * full)
    assert_frame_equal(concat(got), want)


def test_no_packet_chosen_gives_one_empty_batch_with_the_schema_and_the_note() -> None:
    data = pcap(50)
    with pytest.warns(burstcore.CaptureWarning, match="holds none of the 50 packets"):
        want = burstcore.read_packets(data, start=T0 + 10**12)
    with pytest.warns(burstcore.CaptureWarning, match="holds none of the 50 packets"):
        got = list(burstcore.iter_packets(data, start=T0 + 10**12))
    assert len(got) == 1
    assert_frame_equal(got[0], want)
    assert got[0].schema == burstcore.PACKET_SCHEMA
    assert burstcore.read_packets(data).schema == burstcore.PACKET_SCHEMA


def test_shared_corpus_reads_the_same_in_batches() -> None:
    root = shared_dir()
    if root is None:
        pytest.skip("shared data not available (set BURSTCORE_SHARED)")
    files = sorted(
        p for p in (root / "corpus").rglob("*") if p.suffix in {".pcap", ".pcapng", ".cap", ".ntar", ".gz", ".zst"}
    )
    assert len(files) > 100
    checked = errors = 0
    for p in files:
        with warnings.catch_warnings(record=True) as told_whole:
            warnings.simplefilter("always")
            try:
                want = burstcore.read_packets(p, threads=1)
            except (burstcore.CaptureError, OSError) as e:
                want = e
        with warnings.catch_warnings(record=True) as told_batches:
            warnings.simplefilter("always")
            try:
                got: pl.DataFrame | Exception = batches(p, 5)
            except (burstcore.CaptureError, OSError) as e:
                got = e
        if isinstance(want, Exception):
            errors += 1
            # The same error where the read stopped; if it was met while opening, at once.
            assert type(got) is type(want), (p, got, want)
            assert str(got) == str(want)
            assert getattr(got, "offset", None) == getattr(want, "offset", None)
        else:
            assert isinstance(got, pl.DataFrame), (p, got)
            assert_frame_equal(got, want)
        assert [str(w.message) for w in told_batches] == [str(w.message) for w in told_whole], p
        checked += 1
    assert checked > 100 and errors > 0, (checked, errors)


def damaged(n: int = 1000, at_packet: int = 600) -> tuple[bytes, int]:
    """A pcap whose record `at_packet` claims a length no record can have, and its offset."""
    data = bytearray(pcap(n))
    at = 24 + sum(16 + len(frame(i)) for i in range(at_packet))
    data[at + 8 : at + 12] = (0x7FFF0000).to_bytes(4, "little")
    return bytes(data), at


@pytest.mark.parametrize("strict", [False, True])
def test_damage_raises_at_its_batch_with_the_offset(strict: bool) -> None:
    data, at = damaged()
    with pytest.raises(burstcore.LimitExceededError) as whole:
        burstcore.read_packets(data, strict=strict)
    assert whole.value.offset == at
    given_rows = 0
    it = burstcore.iter_packets(data, batch_rows=100, strict=strict)
    with pytest.raises(burstcore.LimitExceededError) as e:
        for df in it:
            given_rows += df.height
    # Batches 1 to 6 (packets 0 to 599) were given; the seventh met the damage.
    assert given_rows == 600
    assert e.value.offset == at and str(e.value) == str(whole.value)
    assert list(it) == []


def test_a_cut_capture_warns_at_the_batch_that_meets_the_cut() -> None:
    data = pcap(300)
    cut = data[:-5]
    with pytest.warns(burstcore.CaptureWarning) as whole:
        want = burstcore.read_packets(cut)
    it = burstcore.iter_packets(cut, batch_rows=100)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        first = [next(it), next(it)]
        assert told == [], "nothing is off in the first 200 packets"
        rest = list(it)
    assert [str(w.message) for w in told] == [str(w.message) for w in whole]
    assert told[0].filename == __file__, "issued at the loop's line"
    assert_frame_equal(concat(first + rest), want)
    with pytest.raises(burstcore.TruncatedCaptureError):
        list(burstcore.iter_packets(cut, batch_rows=100, strict=True))


def test_arguments_and_inputs_are_checked_when_called(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        burstcore.iter_packets(tmp_path / "missing.pcap")
    with pytest.raises(burstcore.NotACaptureError):
        burstcore.iter_packets(b"hello, this is not a capture at all")
    with pytest.raises(ValueError, match="colour"):
        burstcore.iter_packets(pcap(3), ["colour"])
    with pytest.raises(ValueError, match="batch_rows"):
        burstcore.iter_packets(pcap(3), batch_rows=0)
    with pytest.raises(ValueError, match="filter"):
        burstcore.iter_packets(pcap(3), filter="tcp port")
    with pytest.raises(TypeError, match="progress"):
        burstcore.iter_packets(pcap(3), progress=42)
    # scan_packets checks what it can before anything is collected, a filter's words included.
    with pytest.raises(ValueError, match="after 'port' is missing"):
        burstcore.scan_packets(pcap(3), filter="tcp port")
    with pytest.raises(ValueError, match="batch_rows"):
        burstcore.scan_packets(pcap(3), batch_rows=-1)
    good = burstcore.scan_packets(pcap(3), filter="tcp port 80").collect()
    assert_frame_equal(good, burstcore.read_packets(pcap(3), filter="tcp port 80"))
    assert good.height == 1


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(sys.platform != "linux", reason="counts /proc/self descriptors and threads")
def test_abandoned_iterators_free_their_inputs(tmp_path: Path) -> None:
    path = tmp_path / "big.pcap"
    path.write_bytes(pcap(3000))
    for mmap in (None, False):
        list(burstcore.iter_packets(path, batch_rows=1000, mmap=mmap))  # warm up
        gc.collect()
        fds, threads = open_descriptors(), os_threads()
        for k in range(200):
            it = burstcore.iter_packets(path, batch_rows=1000, mmap=mmap)
            assert next(it).height == 1000
            if k % 3 == 0:
                it.close()
            elif k % 3 == 1:
                for _ in it:
                    break
            del it  # the third way: dropped mid-way
        gc.collect()
        assert open_descriptors() == fds
        assert os_threads() == threads


def test_a_generator_closed_early_closes_the_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    path.write_bytes(pcap(300))
    fds = open_descriptors()
    it = burstcore.iter_packets(path, batch_rows=10, mmap=False)
    next(it)
    assert open_descriptors() == fds + 1
    it.close()
    assert open_descriptors() == fds


def test_the_gil_is_released_while_a_batch_is_read(tmp_path: Path) -> None:
    # A writer thread of this process feeds the named pipe the second batch waits on: were the
    # GIL held while it waits, the writer could never run and the read would never end.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = pcap(40)
    head = 24 + sum(16 + len(frame(i)) for i in range(10))

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(data[:head])
            f.flush()
            time.sleep(0.5)
            f.write(data[head:])

    t = threading.Thread(target=writer)
    t.start()
    it = burstcore.iter_packets(str(fifo), batch_rows=30)
    got = list(it)
    t.join()
    assert_frame_equal(concat(got), burstcore.read_packets(data))


STDIN_CHILD = """
import sys, burstcore
try:
    it = burstcore.iter_packets("-", batch_rows=10)
    print("first", next(it).height, flush=True)
    next(it)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_while_waiting_for_a_batch_raises_keyboard_interrupt() -> None:
    data = pcap(15)
    p = subprocess.Popen([sys.executable, "-c", STDIN_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdin is not None
    try:
        p.stdin.write(data)  # 15 packets: the second batch of 10 waits for more, the pipe open
        p.stdin.flush()
        assert p.stdout.readline().strip() == b"first 10"
        time.sleep(0.5)
        assert p.poll() is None
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        assert p.stdout.readline().strip() == b"interrupted"
        assert time.perf_counter() - t0 < 1.0
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


POLARS_CHILD = """
import sys, time, burstcore
lf = burstcore.scan_packets(sys.argv[1], batch_rows=10)
outcome = "finished"
try:
    try:
        print("collecting", flush=True)
        lf.collect(engine="streaming")
    except KeyboardInterrupt:
        outcome = "interrupted"
        # polars 2.1 raises its own KeyboardInterrupt and leaves Python's pending, which comes
        # as a second one at the next line run (pola-rs/polars, without burstcore as well).
        time.sleep(0.5)
except KeyboardInterrupt:
    outcome = "interrupted"
print(outcome, flush=True)
"""


def test_ctrl_c_stops_a_streaming_collect_waiting_on_a_pipe(tmp_path: Path) -> None:
    """polars' streaming engine reads the frame on a thread of its own, where Python never runs
    signal handlers: the read of a pipe with no data coming waited for ever, and the collect
    with it, whatever the Ctrl-Cs. It raises KeyboardInterrupt now (the bound is generous: the
    read looks ten times a second)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    p = subprocess.Popen(
        [sys.executable, "-c", POLARS_CHILD, str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert p.stdout is not None
    try:
        assert p.stdout.readline().strip() == b"collecting"
        with open(fifo, "wb") as f:
            f.write(pcap(15))  # the second batch of 10 waits for more, the pipe open
            f.flush()
            time.sleep(0.5)
            assert p.poll() is None
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=10)
        assert out.strip() == b"interrupted", err.decode()
        assert p.returncode == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# scan_packets


class CountingReader(io.RawIOBase):
    """A file object that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        b = self.inner.read(n)
        self.read_bytes += len(b)
        return b


def test_lazy_queries_equal_the_eager_frame(tmp_path: Path) -> None:
    path = tmp_path / "l.pcapng"
    path.write_bytes(pcapng(3000))
    eager = burstcore.read_packets(path)
    lazy = burstcore.scan_packets(path, batch_rows=257)
    assert lazy.collect_schema() == pl.Schema(burstcore.PACKET_SCHEMA)
    queries = [
        lambda f: f,
        lambda f: f.select("dst", "sport"),
        lambda f: f.filter(pl.col("protocol") == 17).select("src", "wire_len"),
        lambda f: f.filter((pl.col("sport") > 4002) & pl.col("timestamp").is_not_null()),
        lambda f: f.head(10),
        lambda f: f.select("timestamp").head(1000),
        lambda f: f.filter(pl.col("protocol") == 6).head(7),
        lambda f: f.head(100).filter(pl.col("protocol") == 6),
        lambda f: f.slice(500, 20),
        lambda f: f.head(0),
        lambda f: f.select("src", "qp").head(0),
        lambda f: f.select(pl.len()),
        lambda f: f.group_by("interface").agg(pl.col("wire_len").cast(pl.UInt64).sum()).sort("interface"),
    ]
    for k, q in enumerate(queries):
        assert_frame_equal(q(lazy).collect(), q(eager.lazy()).collect(), check_row_order=True), k
    # The stretch and the tcpdump filter of the call choose the packets before the query.
    kw: dict[str, Any] = {"start": T0 + 30_000, "end": T0 + 6_000_000, "filter": "udp"}
    assert_frame_equal(burstcore.scan_packets(path, **kw).collect(), burstcore.read_packets(path, **kw))


def test_a_query_of_no_column_keeps_the_rows(tmp_path: Path) -> None:
    # polars asks the scan for no column at all when the query needs only the rows (a row index,
    # pl.len() in an expression, every column dropped); the frames it gets must still have them.
    path = tmp_path / "n.pcapng"
    path.write_bytes(pcapng(1000))
    eager = burstcore.read_packets(path).lazy()
    lazy = burstcore.scan_packets(path, batch_rows=64)
    queries = [
        lambda f: f.with_row_index().select("index").tail(2),
        lambda f: f.select(pl.int_range(pl.len())),
        lambda f: f.drop(pl.all()).with_row_index(),
        lambda f: f.filter(pl.col("src").is_null()).with_row_index().select("index"),
        lambda f: f.with_row_index().select("index").head(70),
    ]
    for k, q in enumerate(queries):
        for engine in ("in-memory", "streaming"):
            assert_frame_equal(q(lazy).collect(engine=engine), q(eager).collect(engine=engine)), (k, engine)


def test_a_head_reads_only_what_it_needs() -> None:
    data = pcap(100_000)  # 7 MB, many times the reader's buffer
    src = CountingReader(data)
    got = burstcore.scan_packets(src).head(10).collect()
    assert_frame_equal(got, burstcore.read_packets(data).head(10))
    assert 0 < src.read_bytes < len(data) // 10, (src.read_bytes, len(data))
    # Projected: only the columns asked for are decoded, and still few bytes read.
    src = CountingReader(data)
    got = burstcore.scan_packets(src).select("wire_len").head(3).collect()
    assert got.columns == ["wire_len"] and got.height == 3
    assert src.read_bytes < len(data) // 10


def test_a_file_object_scanned_is_collected_once() -> None:
    lazy = burstcore.scan_packets(io.BytesIO(pcap(20)))
    # A head of no row reads nothing: the file object is still whole for the collect after it.
    assert lazy.head(0).collect().height == 0
    assert lazy.collect().height == 20
    with pytest.raises(Exception, match="collect the frame once"):
        lazy.collect()
    # One query that reads the frame twice is told so, not sent to an earlier collect it never had.
    lazy = burstcore.scan_packets(io.BytesIO(pcap(20)))
    with pytest.raises(Exception, match="another part of this query, such as a join"):
        lazy.join(lazy, on="timestamp").collect()


def test_progress_ends_full_and_never_goes_back(tmp_path: Path) -> None:
    path = tmp_path / "p.pcap"
    data = pcap(5000)
    path.write_bytes(data)
    calls: list[tuple[int, int | None]] = []
    n = sum(
        df.height for df in burstcore.iter_packets(path, batch_rows=600, progress=lambda d, t: calls.append((d, t)))
    )
    assert n == 5000
    assert calls and calls[-1] == (len(data), len(data))
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(calls))


def test_scan_packets_calls_progress_once_per_read_from_the_start(tmp_path: Path) -> None:
    # Each collect reads the capture from the start (as documented): the calls of each collect
    # never go back, and each ends with the whole file read.
    path = tmp_path / "p.pcap"
    data = pcap(5000)
    path.write_bytes(data)
    calls: list[tuple[int, int | None]] = []
    lazy = burstcore.scan_packets(path, batch_rows=600, progress=lambda d, t: calls.append((d, t)))
    runs = []
    for engine in ("in-memory", "streaming"):
        calls.clear()
        assert lazy.collect(engine=engine).height == 5000
        runs.append(list(calls))
    for run in runs:
        assert run and run[-1] == (len(data), len(data))
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(run))


class FailingReader(CountingReader):
    """A file object whose read() raises once `after` bytes have been read."""

    def __init__(self, data: bytes, after: int) -> None:
        super().__init__(data)
        self.after = after

    def read(self, n: int = -1) -> bytes:
        if self.read_bytes > self.after:
            raise TimeoutError("upstream timed out")
        return super().read(n)


def test_a_file_objects_own_exception_reaches_the_batch_that_met_it() -> None:
    # The reader was opened by the call of iter_packets and is read on by each next(): the
    # exception its read() raised comes out of the next() as itself, not as an OSError about it.
    data = pcap(100_000)
    src = FailingReader(data, after=len(data) // 2)
    given = 0
    with pytest.raises(TimeoutError, match="upstream timed out") as e:
        for df in burstcore.iter_packets(src, batch_rows=10_000):
            given += df.height
    assert 10_000 <= given < 100_000
    assert any("burstcore" in n and "byte offset" in n for n in getattr(e.value, "__notes__", []))
