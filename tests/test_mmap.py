"""Reading plain files through a memory mapping (``mmap=True``, the default on Linux) changes
nothing but speed: every function gives the same frames, warnings and errors as the buffered read
(``mmap=False``), which is the oracle here; what cannot be mapped (compressed files, bytes, file
objects) is read normally; ``--mmap``/``--no-mmap`` on the command line give the same output. A
file truncated by another process while mapped raises ``OSError`` and the process lives on; a
fault in a mapping that burstcore did not make still kills the process, as without burstcore."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import burstcore
from burstcore import cli
from tests import oracles

BASE = 1_700_000_000_000_000_000
KW: dict[str, Any] = {
    "windows": ["1us", "100us", "5ms"],
    "rates": ["1Gbps", "10Gbps"],
    "bins": ["1ms"],
    "by": ["all", "pair", "flow"],
}


def generated(n: int = 3000, fmt: str = "pcapng") -> bytes:
    ts, frames = [], []
    t = BASE
    for k in range(n):
        t += 700 + (k * 7919) % 40_000
        src, dst = f"10.0.0.{1 + k % 3}", f"10.0.0.{4 + k % 2}"
        frames.append(oracles.eth_ipv4_udp(src, dst, 5000 + k % 4, 6000, payload=60 + (k * 31) % 1400))
        ts.append(t)
    return oracles.capture(ts, [len(f) for f in frames], fmt=fmt, frames=frames)


def outcome(call: Any) -> tuple[str, Any, list[str]]:
    """What a call gives: ('ok', value, warnings) or ('error', (type, offset, message), warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except burstcore.CaptureError as e:
            return "error", (type(e).__name__, e.offset, str(e)), [str(w.message) for w in caught]
    return "ok", value, [str(w.message) for w in caught]


def same_outcome(a: tuple[str, Any, list[str]], b: tuple[str, Any, list[str]], path: str) -> bool:
    """Assert that both calls succeeded or failed alike, with the same warnings (and, failing,
    the same error); True when both succeeded, for the caller to compare the values."""
    assert a[0] == b[0] and a[2] == b[2], path
    if a[0] == "error":
        assert a[1] == b[1], path
        return False
    return True


def assert_same_scan(path: str, **kw: Any) -> None:
    a = outcome(lambda: burstcore.scan(path, **KW, mmap=False, **kw))
    b = outcome(lambda: burstcore.scan(path, **KW, mmap=True, **kw))
    if not same_outcome(a, b, path):
        return
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert_frame_equal(getattr(a[1], name), getattr(b[1], name))


def assert_same_read(path: str) -> None:
    a = outcome(lambda: burstcore.read_packets(path, mmap=False))
    b = outcome(lambda: burstcore.read_packets(path, mmap=True))
    if same_outcome(a, b, path):
        assert_frame_equal(a[1], b[1])
    a = outcome(lambda: burstcore.info(path, mmap=False))
    b = outcome(lambda: burstcore.info(path, mmap=True))
    if same_outcome(a, b, path):
        da, db = a[1].to_dict(), b[1].to_dict()
        assert da.pop("mapped") is False
        db.pop("mapped")
        assert da == db, path


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_generated_capture_same_with_and_without_mmap(tmp_path: Path, fmt: str) -> None:
    p = tmp_path / f"gen.{fmt}"
    p.write_bytes(generated(fmt=fmt))
    assert burstcore.info(str(p), mmap=True).details["mapped"] is True
    assert burstcore.info(str(p)).details["mapped"] is (sys.platform == "linux")
    for threads in (1, 2):
        assert_same_scan(str(p), threads=threads)
    assert_same_read(str(p))
    for fn in (burstcore.flows, burstcore.traffic_matrix, burstcore.sizes, burstcore.bursts):
        a, b = fn(str(p), mmap=False), fn(str(p), mmap=True)  # type: ignore[operator]
        if hasattr(a, "equals"):
            assert_frame_equal(a, b)
        else:
            # Field by field: a result's repr is one line of counts, not its tables.
            for f in dataclasses.fields(a):
                x, y = getattr(a, f.name), getattr(b, f.name)
                if isinstance(x, pl.DataFrame):
                    assert_frame_equal(x, y)
                else:
                    assert x == y, f.name


def test_damaged_copies_give_the_same_warnings_and_errors(tmp_path: Path) -> None:
    good = generated(500)
    # Cut inside a block (a warning; an error with strict), a corrupt block length (an error at
    # its offset), and bytes that are not a capture at all.
    bad_len = bytearray(good)
    second_block = int.from_bytes(good[4:8], "little")  # the section header's length
    bad_len[second_block + 4 : second_block + 8] = (13).to_bytes(4, "little")
    cases = {"cut": good[: len(good) - 37], "badlen": bytes(bad_len), "junk": b"\x42" * 4096}
    for name, data in cases.items():
        p = tmp_path / f"{name}.pcapng"
        p.write_bytes(data)
        assert_same_read(str(p))
        assert_same_scan(str(p))
        assert_same_scan(str(p), strict=True)
    kinds = [outcome(lambda n=n: burstcore.read_packets(str(tmp_path / f"{n}.pcapng"), mmap=True)) for n in cases]
    assert kinds[0][0] == "ok" and kinds[0][2]  # the cut: packets and a warning
    assert kinds[1][0] == "error" and kinds[1][1][0] == "CorruptCaptureError" and kinds[1][1][1] == second_block
    assert kinds[2][0] == "error" and kinds[2][1][0] == "NotACaptureError"


def test_what_cannot_be_mapped_is_read_normally(tmp_path: Path) -> None:
    data = generated(800)
    gz = tmp_path / "gen.pcapng.gz"
    gz.write_bytes(gzip.compress(data))
    want = burstcore.scan(data, **KW, mmap=False)
    for src in (str(gz), data, io.BytesIO(data)):
        got = burstcore.scan(src, **KW, mmap=True)
        for name in ("envelope", "backlog", "series", "groups", "summary"):
            assert_frame_equal(getattr(got, name), getattr(want, name))
    assert burstcore.info(str(gz), mmap=True).details["mapped"] is False


def mapped_now(paths: list[str]) -> set[str]:
    """Which of `paths` this process has mapped at the moment (Linux)."""
    maps = Path("/proc/self/maps").read_text()
    return {p for p in paths if maps.count(p)}


@pytest.mark.skipif(sys.platform != "linux", reason="files are mapped by default on Linux only")
@pytest.mark.parametrize(
    ("files", "threads", "mapped"),
    [(2, 1, True), (8, 1, True), (9, 1, False), (4, 2, True), (5, 2, False), (8, 2, False)],
)
def test_many_files_scanned_at_once_are_read_rather_than_mapped(
    tmp_path: Path, files: int, threads: int, mapped: bool
) -> None:
    # Each mapped reader holds a few MiB of its file: past 8 readers (files × threads), the
    # default reads with read(), so that memory does not grow with the number of files. Same
    # results either way; mmap=True still maps them all.
    data = generated(400, fmt="pcap")
    paths = []
    for k in range(files):
        p = tmp_path / f"host{k}.pcap"
        p.write_bytes(data)
        paths.append(os.path.realpath(p))
    seen: dict[bool | None, set[str]] = {}
    results = {}
    for mmap in (None, True, False):
        looks: set[str] = set()

        # The last progress call comes before the readers (and any mapping) are dropped.
        def look(done: int, total: int | None, looks: set[str] = looks) -> None:
            looks.update(mapped_now(paths))

        results[mmap] = burstcore.scan(paths, **KW, threads=threads, mmap=mmap, progress=look)
        seen[mmap] = looks
    assert seen[None] == (set(paths) if mapped else set())
    assert seen[True] == set(paths)
    assert seen[False] == set()
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert_frame_equal(getattr(results[None], name), getattr(results[False], name))
        assert_frame_equal(getattr(results[True], name), getattr(results[False], name))


def corpus_files() -> list[Path]:
    root = os.environ.get("BURSTCORE_SHARED")
    if not root:
        pytest.skip("BURSTCORE_SHARED not set")
    files = sorted(p for p in (Path(root) / "corpus").rglob("*") if p.suffix in (".pcap", ".pcapng", ".cap"))
    assert files, f"no captures under {root}/corpus"
    # A spread of the corpus (valid, truncated and broken files) rather than all of it.
    return files[::25]


def test_corpus_files_same_with_and_without_mmap() -> None:
    files = corpus_files()
    for f in files:
        assert_same_read(str(f))
        assert_same_scan(str(f), on_late="drop")


def test_cli_mmap_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "gen.pcapng"
    p.write_bytes(generated())
    args = ["scan", str(p), "--windows", "1us,5ms", "--rates", "10Gbps", "--by", "all,pair", "-q"]
    outs = []
    for extra in (["--no-mmap"], ["--mmap"], []):
        out = tmp_path / f"r{len(outs)}.json"
        assert cli.main([*args, *extra, "-o", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    # The config says how the files were read, as asked; everything else is the same.
    assert [o["config"].pop("mmap") for o in outs] == [False, True, None]
    assert outs[0] == outs[1] == outs[2] and outs[0]["envelope"]
    docs = []
    for extra in (["--no-mmap"], ["--mmap"], []):
        assert cli.main(["info", str(p), "--json", "-q", *extra]) == 0
        docs.append(json.loads(capsys.readouterr().out)[0])
    mapped = [d.pop("mapped") for d in docs]
    assert mapped == [False, True, sys.platform == "linux"]
    assert docs[0] == docs[1] == docs[2]
    for cmd in ("info", "scan", "plot", "report"):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        helptext = capsys.readouterr().out
        assert "--mmap" in helptext and "SIGBUS" in helptext, cmd


def small_packets(n: int) -> bytes:
    """A nanosecond pcap of `n` 14-byte Ethernet frames 1 µs apart, built at once with numpy."""
    rec = np.dtype([("sec", "<u4"), ("nsec", "<u4"), ("incl", "<u4"), ("orig", "<u4"), ("data", "V14")])
    ts = BASE + 1000 * np.arange(n, dtype=np.int64)
    a = np.zeros(n, dtype=rec)
    a["sec"], a["nsec"] = ts // 1_000_000_000, ts % 1_000_000_000
    a["incl"], a["orig"] = 14, 1514
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    return header + a.tobytes()


def run_child(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(sys.platform != "linux", reason="mappings are guarded on Linux only")
@pytest.mark.parametrize("handler", ["none", "faulthandler first", "faulthandler after the guard"])
def test_a_file_truncated_while_mapped_raises_and_the_process_lives(tmp_path: Path, handler: str) -> None:
    # The progress callback truncates the file at its first call inside the file's first half:
    # the scan has most of the file still to read, through the default mapping. Rates are given,
    # so that the scan reads the file once (no pre-pass for the mean rate, at whose end or at the
    # start of the second read a call would truncate a file not yet mapped: a cut file, not a
    # shrunk one); eight of them make the read last well past the first call. In a child process, so that a SIGBUS would
    # show as its death rather than this test run's. With Python's faulthandler installed first,
    # the guard chains to it; installed after the guard (which it then replaces), the next
    # mapping installs the guard again, chained to faulthandler.
    # Progress is reported after 100 ms at the earliest: 4 M packets make the scan last longer.
    p = tmp_path / "big.pcap"
    p.write_bytes(small_packets(4_000_000))
    flags = ("-X", "faulthandler") if handler == "faulthandler first" else ()
    late = handler == "faulthandler after the guard"
    code = f"""
        import faulthandler, os, burstcore
        path = {str(p)!r}
        size = os.path.getsize(path)
        if {late!r}:
            assert burstcore.info(path).details["mapped"]
            faulthandler.enable()
        windows = [f"{{2**k}}us" for k in range(20)]
        rates = [f"{{k}}Gbps" for k in range(1, 9)]
        cut = []
        def progress(done, total):
            if not cut and 0 < done < size // 2:
                cut.append(done)
                # At a page boundary: no zeros of a partial last page to stop the framing first,
                # so the reader must fault past the cut.
                os.truncate(path, size // 2 // 65536 * 65536)
        try:
            burstcore.scan(path, windows=windows, rates=rates, threads=1, progress=progress)
        except OSError as e:
            print("raised:", e)
        else:
            print("no error")
        print("cut at", cut, "alive")
    """
    r = run_child(code, *flags)
    assert r.returncode == 0, r.stderr
    assert "raised:" in r.stdout and "shrank while it was being read" in r.stdout, r.stdout
    assert "alive" in r.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="mappings are guarded on Linux only")
def test_a_fault_in_a_mapping_burstcore_did_not_make_still_kills(tmp_path: Path) -> None:
    # After a mapped read has installed the guard, a truncated mapping made with Python's own
    # mmap module must fault as it would without burstcore: the guard hides only its own faults.
    cap, other = tmp_path / "gen.pcap", tmp_path / "other.bin"
    cap.write_bytes(generated(100, fmt="pcap"))
    other.write_bytes(b"x" * 65536)
    code = f"""
        import mmap, os, burstcore
        assert burstcore.info({str(cap)!r}).details["mapped"]
        f = open({str(other)!r}, "rb")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        os.truncate({str(other)!r}, 0)
        print("guard installed", flush=True)
        print("survived", m[40000])
    """
    r = run_child(code)
    assert "guard installed" in r.stdout, r.stderr
    assert "survived" not in r.stdout
    assert r.returncode == -7, (r.returncode, r.stderr)
