"""Scans, reads and summaries from several Python threads at once give the same results as the
same calls made one after another (the GIL is released while reading: the threads really overlap)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import burstcore
from tests.test_hostile_gallery import pcapng_blocks

T0 = 1_700_000_000_000_000_000


def generated(seed: int, n: int = 20_000) -> bytes:
    """A bursty trace with several flows, deterministic per seed."""
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    x, t = seed * 7919 + 1, T0
    for i in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        t += (x >> 40) % 5000 if i % 50 else 200_000
        src = 1 + (x >> 20) % 4
        payload = 18 + (x >> 8) % 1400
        udp = (
            (1000 + src).to_bytes(2, "big") + b"\x00\x35" + (8 + payload).to_bytes(2, "big") + b"\0\0" + b"x" * payload
        )
        ip = (
            b"\x45\x00"
            + (20 + len(udp)).to_bytes(2, "big")
            + b"\0\0\0\0\x40\x11\0\0"
            + bytes([10, 0, 0, src])
            + bytes([10, 0, 1, 1])
        )
        w.epb(0, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp, ts_ns=t)
    return w.getvalue()


def sources(tmp: Path) -> list[Any]:
    out: list[Any] = []
    for seed in range(3):
        p = tmp / f"gen{seed}.pcapng"
        p.write_bytes(generated(seed))
        out.append(p)
    out.append(generated(5))  # bytes
    root = os.environ.get("BURSTCORE_SHARED")
    if root:
        f = Path(root) / "corpus" / "dpkt" / "examples" / "data" / "http.pcap"
        if not f.exists():
            pytest.fail(f"BURSTCORE_SHARED is set but {f} is missing")
        out.append(f)
    return out


def run_scan(src: Any) -> burstcore.ScanResult:
    return burstcore.scan(
        src, windows=["1us", "100us", "5ms"], rates=["1Gbps", "10Gbps"], bins=["1ms"], by=["all", "src", "flow"]
    )


def same(a: burstcore.ScanResult, b: burstcore.ScanResult) -> None:
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert_frame_equal(getattr(a, name), getattr(b, name))


def test_concurrent_scans_match_sequential(tmp_path: Path) -> None:
    srcs = sources(tmp_path)
    jobs = srcs * 3  # the same sources several times, interleaved
    sequential = [run_scan(s) for s in jobs]
    with ThreadPoolExecutor(max_workers=6) as pool:
        concurrent = list(pool.map(run_scan, jobs))
    for a, b in zip(sequential, concurrent, strict=True):
        same(a, b)
    assert sequential[0].summary["packets"][0] == 20_000


def test_concurrent_reads_and_info_match_sequential(tmp_path: Path) -> None:
    srcs = sources(tmp_path)

    def work(src: Any) -> tuple[pl.DataFrame, int, int]:
        df = burstcore.read_packets(src)
        i = burstcore.info(src)
        return df, i.packets, i.wire_bytes

    sequential = [work(s) for s in srcs * 2]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(work, srcs * 2))
    for (da, pa, ba), (db, pb, bb) in zip(sequential, concurrent, strict=True):
        assert_frame_equal(da, db)
        assert (pa, ba) == (pb, bb) == (da.height, int(da["wire_len"].sum()))


def test_merged_scans_in_threads(tmp_path: Path) -> None:
    srcs = [s for s in sources(tmp_path) if isinstance(s, Path)][:3]
    sequential = run_scan(srcs)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: run_scan(srcs), range(3)))
    for r in results:
        same(sequential, r)


# scan(threads=N) on plain files splits them into time chunks scanned apart and merged exactly
# (docs/metrics.md, "Parallel scans"); whatever the path taken, the frames equal threads=1.

KW: dict[str, Any] = dict(
    windows=["1us", "100us", "5ms", "50ms"],
    rates=["100Mbps", "1Gbps", "10Gbps"],
    bins=["1ms", "10ms"],
    by=["all", "src", "pair", "flow"],
)


def scan_same_for_threads(src: Any, keys_alone: bool = False, **extra: Any) -> burstcore.ScanResult:
    # Groupings by key split by grouping; the aggregate and interfaces alone take time chunks; keys
    # alone (no aggregate) have the reading thread reorder and look up keys for the workers.
    for by in (KW["by"], ["all", "interface"], *([["src", "pair"]] if keys_alone else [])):
        kw = {**KW, "by": by, **extra}
        one = burstcore.scan(src, threads=1, **kw)
        for threads in (2, 3, 4):
            same(one, burstcore.scan(src, threads=threads, **kw))
    return one


def test_threads_identical_on_plain_files(tmp_path: Path) -> None:
    for seed in range(3):
        p = tmp_path / f"plain{seed}.pcapng"
        p.write_bytes(generated(seed, n=30_000))
        r = scan_same_for_threads(str(p))
        assert r.summary["packets"][0] == 30_000
    # other sizes and the closed window convention
    first = str(tmp_path / "plain0.pcapng")
    for size in ("captured", "ip", "payload", "l1"):
        scan_same_for_threads(first, size=size, closed="both")
    # several files, in time order or listed out of it, and overlapping ones
    files = [str(tmp_path / f"plain{i}.pcapng") for i in range(3)]
    scan_same_for_threads(files)
    scan_same_for_threads(files[::-1])


# The seeds' traces share packets: merged, they are counted twice, as the warning says.
@pytest.mark.filterwarnings("ignore::burstcore.SharedPacketsWarning")
def test_threads_identical_on_small_files_by_the_default_plan(tmp_path: Path) -> None:
    # Outside the tests a file is cut into no more time chunks than cores and none under 8 MiB,
    # however many threads are asked for (the conftest fixture cuts as many as threads instead):
    # a file of 24 MB in two at most, one of 4 MB not at all (its metrics shared out), and
    # files that overlap in time by their total size.
    p = tmp_path / "mid.pcapng"
    p.write_bytes(generated(5, n=30_000))
    small = [tmp_path / f"small{i}.pcapng" for i in range(2)]
    for i, q in enumerate(small):
        q.write_bytes(generated(6 + i, n=5_000))
    burstcore._burstcore._use_as_many_threads_as_asked(False)
    try:
        for src in (str(p), str(small[0]), [str(p), *map(str, small)], list(map(str, small))):
            for by in (["all"], ["all", "interface"], KW["by"]):
                kw = {**KW, "by": by}
                one = burstcore.scan(src, threads=1, **kw)
                for threads in (2, burstcore.MAX_THREADS):
                    same(one, burstcore.scan(src, threads=threads, **kw))
    finally:
        burstcore._burstcore._use_as_many_threads_as_asked(True)


def test_threads_identical_by_key_with_a_single_metric(tmp_path: Path) -> None:
    # One window (or none) leaves no metrics to share out; a scan by key still splits by
    # grouping: the reading thread reads, the others look up the keys.
    p = tmp_path / "one_metric.pcapng"
    p.write_bytes(generated(11, n=20_000))
    for metrics in ({"windows": ["1ms"]}, {"rates": ["1Gbps"]}, {}):
        for by in (["flow"], ["all", "pair"], ["src", "dst"]):
            one = burstcore.scan(str(p), threads=1, by=by, **metrics)
            for threads in (2, 3):
                same(one, burstcore.scan(str(p), threads=threads, by=by, **metrics))


def test_threads_identical_on_pcap_with_reordering_and_late_packets(tmp_path: Path) -> None:
    w = burstcore.CaptureWriter("pcap", nanos=True)
    x, t = 12345, T0
    frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + b"\x45" + b"\0" * 40
    for i in range(40_000):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        t += (x >> 40) % 3000
        # now and then a packet a little earlier than the one before (within a 5 µs horizon),
        # rarely a much earlier one (late)
        back = 4_000 if i % 97 == 0 else (50_000_000 if i % 5_003 == 0 else 0)
        w.packet(t - back, frame)
    p = tmp_path / "reordered.pcap"
    p.write_bytes(w.getvalue())
    r = scan_same_for_threads(str(p), keys_alone=True, reorder_horizon="5us", on_late="drop")
    assert r.summary["reordered"][0] > 0 and r.summary["skipped_late"][0] > 0
    for th in (1, 2):
        for by in (KW["by"], ["all"], ["pair"]):
            with pytest.raises(burstcore.OutOfOrderError):
                burstcore.scan(str(p), threads=th, reorder_horizon="5us", **{**KW, "by": by})


def test_threads_identical_on_a_cut_file(tmp_path: Path) -> None:
    data = generated(7, n=10_000)
    p = tmp_path / "cut.pcapng"
    p.write_bytes(data[: len(data) - 37])
    kw = {**KW, "by": ["all"]}
    with pytest.warns(burstcore.CaptureWarning) as one:
        a = burstcore.scan(str(p), threads=1, **kw)
    with pytest.warns(burstcore.CaptureWarning) as two:
        b = burstcore.scan(str(p), threads=2, **kw)
    same(a, b)
    assert [str(w.message) for w in one] == [str(w.message) for w in two]


def test_threads_identical_on_training_captures(tmp_path: Path) -> None:
    root = os.environ.get("BURSTCORE_SHARED")
    if not root:
        pytest.skip("BURSTCORE_SHARED not set")
    import zstandard

    caps = sorted((Path(root) / "captures").glob("*.pcapng.zst"))
    assert caps
    for c in caps:
        plain = tmp_path / c.name.removesuffix(".zst")
        with open(c, "rb") as src, open(plain, "wb") as dst:
            zstandard.ZstdDecompressor().copy_stream(src, dst)
        scan_same_for_threads(str(plain))


def test_threads_report_the_first_error_of_the_one_thread_scan(tmp_path: Path) -> None:
    # Too many groups by src early on, then a corrupt block: one thread stops at the first, and
    # so must any other number of threads, even where the reading thread scans only the
    # aggregate and the keyed groupings run on the workers.
    data = bytearray(generated(3, n=12_000))
    at = next(off for off, _, _ in pcapng_blocks(bytes(data)) if off >= len(data) * 3 // 4)
    data[at + 4 : at + 8] = (7).to_bytes(4, "little")  # a length no block can have
    p = tmp_path / "limit_then_corrupt.pcapng"
    p.write_bytes(bytes(data))
    for by in (["all", "src"], ["all", "src", "flow"], ["src"]):
        kw = {**KW, "by": by, "max_groups": 2, "strict": True}
        with pytest.raises(burstcore.LimitExceededError) as one:
            burstcore.scan(str(p), threads=1, **kw)
        assert "more than 2 groups" in str(one.value)
        for threads in (2, 3):
            with pytest.raises(burstcore.CaptureError) as more:
                burstcore.scan(str(p), threads=threads, **kw)
            assert (type(more.value), str(more.value)) == (type(one.value), str(one.value)), (by, threads)
    # The same when the limit is met among the last packets before the corrupt block, which the
    # reading thread has not yet handed to the workers when it meets the block.
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    for i in range(3_000):
        src = 1 if i < 2_990 else 2 + i % 3
        ip = b"\x45\x00\x00\x1c" + b"\0\0\0\0\x40\x11\0\0" + bytes([10, 0, 0, src, 10, 0, 1, 1])
        w.epb(0, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + b"\0" * 8, ts_ns=T0 + 1_000 * i)
    late = bytearray(w.getvalue())
    last = pcapng_blocks(bytes(late))[-1][0]
    late[last + 4 : last + 8] = (7).to_bytes(4, "little")  # the last block's length
    q = tmp_path / "limit_at_the_end.pcapng"
    q.write_bytes(bytes(late))
    # No reorder horizon: a packet reaches the groupings as soon as it is read.
    for by in (["all", "src"], ["src"]):
        kw = {**KW, "by": by, "max_groups": 2, "strict": True, "reorder_horizon": "0ns"}
        with pytest.raises(burstcore.LimitExceededError) as one:
            burstcore.scan(str(q), threads=1, **kw)
        for threads in (2, 3):
            with pytest.raises(burstcore.CaptureError) as more:
                burstcore.scan(str(q), threads=threads, **kw)
            assert (type(more.value), str(more.value)) == (type(one.value), str(one.value)), (by, threads)
    # With room for every group, the corrupt block is the first error, whatever the threads.
    kw = {**KW, "by": ["all", "src"], "strict": True}
    with pytest.raises(burstcore.CorruptCaptureError) as one:
        burstcore.scan(str(p), threads=1, **kw)
    with pytest.raises(burstcore.CaptureError) as two:
        burstcore.scan(str(p), threads=2, **kw)
    assert (type(two.value), str(two.value)) == (type(one.value), str(one.value))
