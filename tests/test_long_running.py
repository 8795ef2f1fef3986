"""A service or a notebook that embeds burstcore calls it every minute for weeks: no call may
leave behind an open file, a mapping, a thread or process-wide state (docs/limits.md, In a
long-running process)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from burstcore import cli
from tests.oracles import capture, eth_ipv4_udp

TS = [1_700_000_000_000_000_000 + 1_000 * k for k in range(50)]


def _capture(tmp_path: Path) -> Path:
    path = tmp_path / "a.pcap"
    path.write_bytes(capture(TS, [100] * len(TS), fmt="pcap"))
    return path


def test_main_gives_back_the_programs_own_warning_display(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # main() showed its warnings as "burstcore info: warning: ..." by replacing
    # warnings.showwarning, and left it replaced: every later warning of the program that called
    # it (numpy's, its own) was then printed as burstcore's, with the name of a command long done.
    path = _capture(tmp_path)
    shown: list[str] = []

    def own(message: object, *args: object, **kwargs: object) -> None:
        shown.append(str(message))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = own
        assert cli.main(["info", str(path)]) == 0
        assert warnings.showwarning is own
        warnings.warn("the program's own warning", UserWarning, stacklevel=1)
    assert shown == ["the program's own warning"]
    assert "warning" not in capsys.readouterr().err


def test_main_still_shows_its_warnings_as_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(_capture(tmp_path).read_bytes()[:-20])
    assert cli.main(["info", str(cut)]) == 0
    assert "burstcore info: warning:" in capsys.readouterr().err


def test_command_lines_on_two_threads_each_name_their_own_capture(tmp_path: Path) -> None:
    # The files a command reads, which its capture errors name, were one list in the module:
    # a second command line run meanwhile on another thread (as a program calling main() may)
    # replaced them, and the first one's error named the second one's file.
    first, second = tmp_path / "first.pcap", tmp_path / "second.pcap"
    os.mkfifo(first)
    os.mkfifo(second)
    codes: dict[str, int] = {}
    err = io.StringIO()
    saved = sys.stderr, sys.stdout
    sys.stderr = sys.stdout = err
    try:
        a = threading.Thread(target=lambda: codes.__setitem__("first", cli.main(["info", str(first), "-q"])))
        a.start()
        # Each open for writing returns once that command has opened its pipe, so after it has
        # named the file it reads.
        wa = open(first, "wb")  # closed by hand below, to time the first command's error
        b = threading.Thread(target=lambda: codes.__setitem__("second", cli.main(["info", str(second), "-q"])))
        b.start()
        with open(second, "wb") as wb:
            wa.write(b"this is no capture at all")
            wa.close()
            a.join(timeout=30)
            wb.write(capture(TS, [100] * len(TS), fmt="pcap"))
        b.join(timeout=30)
    finally:
        sys.stderr, sys.stdout = saved
    told = err.getvalue()
    assert codes == {"first": cli.EXIT_CAPTURE, "second": 0}, told
    errors = [line for line in told.splitlines() if ": error:" in line]
    assert len(errors) == 1 and str(first) in errors[0] and str(second) not in errors[0], told


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="writes to /dev/full")
@pytest.mark.parametrize("output", ["full disk", "reader gone"])
def test_main_whose_output_fails_leaves_no_descriptor_open(tmp_path: Path, output: str) -> None:
    # On a failed write to stdout, main() points stdout at /dev/null (so that the interpreter's
    # flush at exit has nothing left to fail on) and kept the descriptor of /dev/null it opened
    # for that: a program that called main() with its output to a fresh file or pipe each time
    # was left one more open descriptor by each call, until it could open no more.
    path = _capture(tmp_path)
    saved = sys.stdout, sys.stderr

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    codes = set()
    for _ in range(20):
        if output == "full disk":
            out = open("/dev/full", "w")  # closed in the finally below, after main() wrote to it
        else:
            r, w = os.pipe()
            os.close(r)
            out = open(w, "w")
        try:
            sys.stdout, sys.stderr = out, io.StringIO()
            codes.add(cli.main(["info", str(path)]))
        finally:
            sys.stdout, sys.stderr = saved
            out.close()
    assert codes == ({cli.EXIT_OUTPUT} if output == "full disk" else {cli.EXIT_PIPE})
    assert open_fds() == before


def test_an_output_whose_permissions_cannot_be_set_leaves_no_descriptor_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The output is written to a temporary file first, whose permissions are then set as open()
    # would set them; where that failed (a filesystem that refuses chmod), the temporary file's
    # descriptor was never closed: one more open descriptor per call.
    path = _capture(tmp_path)

    def refuses(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    def scan() -> int:
        return cli.main(["scan", str(path), "-q", "-o", str(tmp_path / "out.csv")])

    saved = sys.stderr
    try:
        sys.stderr = io.StringIO()
        scan()  # What a first scan opens for good (polars' and the core's own), not counted.
        monkeypatch.setattr(os, "chmod", refuses)
        before = len(os.listdir("/proc/self/fd"))
        codes = {scan() for _ in range(10)}
        after = len(os.listdir("/proc/self/fd"))
    finally:
        sys.stderr = saved
    assert codes == {cli.EXIT_OUTPUT}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pcap", "out.csv"]


# Run in a process of its own, after a warm-up: what each kind of call holds must be back to
# what it was after many calls, on success and on every error path.
_CALLS = """
import gc, json, os, sys, warnings
import burstcore

warnings.simplefilter("ignore")
good, cut, late, corrupt = sys.argv[1:5]
W = dict(windows=["1ms"], rates=["1Gbps"])


def raises(exc, f):
    try:
        f()
    except exc:
        return
    raise AssertionError(f"{exc.__name__} not raised")


def stop(done, total):
    raise RuntimeError("stopped")


calls = [
    lambda: burstcore.scan(good, by=["pair", "flow"], threads=2, **W),
    lambda: burstcore.read_packets(good, threads=2),
    lambda: burstcore.flows([good, good]),
    lambda: burstcore.info(cut),
    lambda: raises(FileNotFoundError, lambda: burstcore.scan(good + ".missing", **W)),
    lambda: raises(burstcore.TruncatedCaptureError, lambda: burstcore.read_packets(cut, strict=True, threads=2)),
    lambda: raises(burstcore.CaptureError, lambda: burstcore.scan(corrupt, threads=2, **W)),
    lambda: raises(burstcore.OutOfOrderError, lambda: burstcore.scan(late, threads=2, **W)),
    lambda: raises(burstcore.LimitExceededError, lambda: burstcore.scan(good, by="flow", max_groups=1, **W)),
    lambda: raises(ValueError, lambda: burstcore.scan(good, filter="tcp port", **W)),
    lambda: raises(RuntimeError, lambda: burstcore.scan(good, progress=stop, **W)),
]


def held():
    return (
        len(os.listdir("/proc/self/fd")),
        len(os.listdir("/proc/self/task")),
        sum(1 for _ in open("/proc/self/maps")),
    )


for _ in range(20):
    for f in calls:
        f()
gc.collect()
before = held()
for _ in range(60):
    for f in calls:
        f()
gc.collect()
print(json.dumps([before, held()]))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts /proc/self's descriptors and mappings")
def test_many_calls_and_their_errors_hold_no_descriptor_thread_or_mapping(tmp_path: Path) -> None:
    # Five flows, so that a limit of one group is exceeded.
    frames = [eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1000 + k % 5, 2000, payload=150) for k in range(len(TS))]
    sizes = [len(f) for f in frames]
    good = tmp_path / "good.pcapng"
    good.write_bytes(capture(TS, sizes, frames=frames))
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(good.read_bytes()[:-30])
    late = tmp_path / "late.pcapng"
    late.write_bytes(capture([*TS[:25], TS[0] - 10**9, *TS[26:]], sizes, frames=frames))
    corrupt = tmp_path / "corrupt.pcapng"
    data = bytearray(good.read_bytes())
    shb = int.from_bytes(data[4:8], "little")
    data[shb + 4 : shb + 8] = (0x7FFF_FFF0).to_bytes(4, "little")
    corrupt.write_bytes(bytes(data))
    out = subprocess.run(
        [sys.executable, "-c", _CALLS, str(good), str(cut), str(late), str(corrupt)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (fds, threads, maps), (fds_after, threads_after, maps_after) = json.loads(out.stdout)
    assert (fds_after, threads_after) == (fds, threads), "descriptors and threads before and after 660 calls"
    # The allocator maps and unmaps large blocks of its own: a mapping or two either way is its
    # doing, one per call would be hundreds.
    assert maps_after <= maps + 4, f"{maps} mappings before 660 calls, {maps_after} after"
