"""The command line's outputs and inputs at their edges, each case a defect a hostile review
found: results without a value written as JSON, outputs that would overwrite the capture or be
left half written, reads that Ctrl-C must stop, inputs that are no capture, closed streams."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import polars as pl
import pytest

import burstcore
from burstcore import cli
from burstcore.cli import errors, output
from tests import oracles
from tests.test_cli import _one_line_error, run_cli, run_cli_on_terminal, write_capture


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "t.pcapng")


def _acks_only(tmp_path: Path) -> Path:
    """Pure TCP ACKs: no payload bytes over a span, so ρ = 0 with size="payload"."""
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, 0, proto=6) for _ in range(3)]
    path = tmp_path / "acks.pcapng"
    path.write_bytes(oracles.capture([1_000, 2_000, 5_000], [len(f) for f in frames], frames=frames))
    return path


def test_a_ratio_without_value_is_null_in_json_and_csv(tmp_path: Path) -> None:
    # PtM and r/ρ of a trace of no bytes: the JSON write failed halfway ("Out of range float
    # values are not JSON compliant", exit 2, a truncated file), and the CSV said NaN and inf.
    acks = _acks_only(tmp_path)
    args = ["scan", acks, "--size", "payload", "--windows", "1us", "--rates", "1Gbps"]
    p = run_cli(*args, "-o", tmp_path / "r.json")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(r["bytes"], r["ptm"]) for r in doc["envelope"]] == [(0, None)]
    assert [(r["bmax_bytes"], r["rate_over_mean"]) for r in doc["backlog"]] == [(0.0, None)]
    for table in ("envelope", "backlog"):
        p = run_cli(*args, "--table", table, "-o", tmp_path / f"{table}.csv")
        assert p.returncode == 0, p.stderr
        text = (tmp_path / f"{table}.csv").read_text()
        assert "nan" not in text.lower() and "inf" not in text.lower(), text
    column = pl.read_csv(tmp_path / "envelope.csv")["ptm"]
    assert column.null_count() == 1
    # The terminal shows ρ as what it is: 0 bit/s over a span, not "zero span".
    p = run_cli(*args)
    assert p.returncode == 0 and "zero span" not in p.stdout.decode()


def test_machine_frame_has_no_value_that_json_cannot_hold() -> None:
    df = pl.DataFrame({"x": [1.5, float("nan"), float("inf"), -float("inf"), None]})
    assert cli.machine_frame(df)["x"].to_list() == [1.5, None, None, None, None]


def test_an_output_is_never_the_capture_read(cap: Path, tmp_path: Path) -> None:
    # `report v.pcapng -o v.pcapng` replaced the capture with HTML, and exited 0.
    before = cap.read_bytes()
    link = tmp_path / "same.csv"
    link.symlink_to(cap)
    for args in (
        ["report", cap, "-o", cap],
        ["scan", cap, "--format", "csv", "-o", cap],
        ["scan", cap, "--format", "csv", "-o", link],
        ["plot", cap, "-o", link.with_suffix(".png")],
    ):
        if args[0] == "plot":
            link.with_suffix(".png").symlink_to(cap)
        p = run_cli(*args, "-q")
        assert p.returncode == cli.EXIT_OUTPUT, p.stderr
        assert "is the capture being read" in _one_line_error(p)
        assert cap.read_bytes() == before


def test_a_failed_write_leaves_no_half_file(cap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A write that fails midway leaves the earlier file as it was and no part file beside it.
    out = tmp_path / "r.json"
    out.write_text("earlier")

    def chunks(*_: object) -> object:
        yield '{"envelope": ['
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "_json_chunks", chunks)
    assert cli.main(["scan", str(cap), "--windows", "1ms", "-q", "-o", str(out)]) == cli.EXIT_OUTPUT
    assert out.read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "t.pcapng"]


def test_written_files_get_the_usual_permissions(cap: Path, tmp_path: Path) -> None:
    # Written through a private temporary file, the output still gets what open() gives.
    umask = os.umask(0o022)
    try:
        assert cli.main(["scan", str(cap), "--windows", "1ms", "-q", "-o", str(tmp_path / "r.csv")]) == 0
    finally:
        os.umask(umask)
    assert (tmp_path / "r.csv").stat().st_mode & 0o777 == 0o644


def test_report_to_stdout(cap: Path, tmp_path: Path) -> None:
    # `-o -` wrote a file named "-" in the working folder.
    p = subprocess.run(
        [sys.executable, "-m", "burstcore", "report", str(cap), "-o", "-", "-q", "--no-iterations"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(b"<!DOCTYPE html>") and p.stdout.rstrip().endswith(b"</html>")
    assert not (tmp_path / "-").exists()


def test_dpi_is_bounded_before_the_scan(cap: Path, tmp_path: Path) -> None:
    # 100000 dpi ran the whole scan, then failed in matplotlib with exit 5.
    for dpi in ("100000", "5"):
        p = run_cli("plot", cap, "-o", tmp_path / "x.png", "--dpi", dpi)
        assert p.returncode == cli.EXIT_USAGE
        assert f"{dpi} dots per inch is outside 10 to 1200" in _one_line_error(p)


def test_an_unknown_option_points_to_its_commands_help(cap: Path) -> None:
    p = run_cli("scan", cap, "--bogus")
    assert p.returncode == cli.EXIT_USAGE
    assert _one_line_error(p) == (
        "burstcore scan: error: unrecognized arguments: --bogus (see 'burstcore scan --help')"
    )


@pytest.mark.parametrize("command", ["plot", "report", "shared"])
def test_what_is_no_capture_is_not_read_whole(command: str, cap: Path, tmp_path: Path) -> None:
    # /dev/zero through plot, report or shared: read into memory without end (MemoryError under
    # a ulimit). Now its first bytes are told, as info and scan tell them.
    args = {"plot": ["-o", tmp_path / "z.png"], "report": ["-o", tmp_path / "z.html"], "shared": [cap]}[command]
    p = run_cli(command, "/dev/zero", *args, "-q", timeout=60)
    assert p.returncode == cli.EXIT_CAPTURE
    assert "not a pcap or pcapng file (starts with 00 00 00 00)" in _one_line_error(p)


def test_ctrl_c_stops_a_figure_waiting_on_a_named_pipe(cap: Path, tmp_path: Path) -> None:
    # polars' SIGINT handler restarts an interrupted read(): plot waited for the pipe's writer.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "burstcore", "plot", "-q", str(fifo), "-o", str(tmp_path / "f.png")],
        stderr=subprocess.PIPE,
    )
    with open(fifo, "wb") as writer:  # held open, silent: the read blocks
        writer.write(cap.read_bytes()[:100])
        writer.flush()
        time.sleep(2.0)
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        took = time.monotonic() - asked
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert code == cli.EXIT_INTERRUPTED, err
    assert took < 1.0 and b"interrupted" in err and b"Traceback" not in err


_SIGACTION_FLAGS = """
import ctypes, signal, sys
from burstcore import cli

libc = ctypes.CDLL(None, use_errno=True)


def restarts() -> bool:
    # glibc's struct sigaction: handler (8 bytes), mask (128), then the int sa_flags.
    buf = ctypes.create_string_buffer(256)
    assert libc.sigaction(signal.SIGINT, None, buf) == 0
    return bool(int.from_bytes(buf.raw[136:140], sys.byteorder) & 0x10000000)  # SA_RESTART


signal.siginterrupt(signal.SIGINT, False)  # as polars leaves it, or a host program chose
before = restarts()
code = cli.main(sys.argv[1:])
print(before, restarts(), code, file=sys.stderr)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads glibc's struct sigaction")
@pytest.mark.parametrize("command", ["plot", "report", "shared"])
def test_reading_stdin_leaves_the_signal_flags_as_they_were(command: str, cap: Path, tmp_path: Path) -> None:
    # Reading stdin turned SA_RESTART off for SIGINT (signal.siginterrupt) for good: a program
    # calling main() in-process found its interrupted reads failing with EINTR afterwards.
    args = {"plot": ["-o", tmp_path / "f.png"], "report": ["-o", tmp_path / "r.html"], "shared": [cap]}[command]
    with open(cap, "rb") as stdin:
        p = subprocess.run(
            [sys.executable, "-c", _SIGACTION_FLAGS, command, "-", *map(str, args), "-q"],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert p.stderr.split()[-3:] == [b"True", b"True", b"0"], p.stderr


def test_closed_streams_are_told(cap: Path) -> None:
    def run(args: list[str], closed: int) -> subprocess.CompletedProcess[bytes]:
        """With stdin (0) or stdout (1) closed in the child, as the shell's `<&-` or `>&-`."""
        return subprocess.run(
            [sys.executable, "-m", "burstcore", *args],
            stdin=subprocess.DEVNULL if closed else None,
            stdout=None if closed else subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.close(closed),
            timeout=120,
            check=False,
        )

    # An AttributeError (exit 5) for stdin; a lost table or an AttributeError for stdout.
    p = run(["scan", "-"], 0)
    assert p.returncode == cli.EXIT_USAGE and "stdin, which is closed" in _one_line_error(p)
    for args in (["scan", str(cap), "--windows", "1ms", "--format", "csv"], ["scan", str(cap)], ["info", str(cap)]):
        p = run(args, 1)
        assert p.returncode == cli.EXIT_OUTPUT, p.stderr
        assert "standard output is closed" in _one_line_error(p)


def test_an_input_that_cannot_be_read_is_the_captures_fault() -> None:
    # An OSError left unwrapped is the input's (output writes are wrapped): it was told as
    # "the output could not be written" (exit 4).
    code, message = errors._classify(PermissionError(13, "Permission denied"))
    assert code == cli.EXIT_CAPTURE and "cannot read the capture" in message
    code, _ = errors._classify(OSError(5, "Input/output error"))
    assert code == cli.EXIT_CAPTURE


_Limit = Literal["capture", "held_packets", "result"]


def test_a_limit_is_told_by_its_kind_not_by_its_words() -> None:
    # The kind of limit decides what the line says: a limit on the result leaves the capture
    # fine, packets too many to hold at once may be damaged timestamps, a limit on the capture's
    # structure is damage. It went by the message ("more than N packets" meant held packets),
    # which a reworded message or a result limit counted in packets would fool.
    def limit_error(message: str, limit: _Limit, offset: int | None = None) -> burstcore.LimitExceededError:
        e = burstcore.LimitExceededError(message)
        e.limit, e.offset, e.reason, e.input = limit, offset, message, None
        return e

    result = limit_error("more than 3 packets in one group: raise max_packets", "result")
    assert errors._classify(result) == (
        cli.EXIT_CAPTURE,
        "stopped at a limit (the capture itself is fine): more than 3 packets in one group: raise max_packets",
    )
    held = limit_error("too many packets waiting: lower reorder_horizon", "held_packets")
    assert errors._classify(held) == (
        cli.EXIT_CAPTURE,
        "stopped at a limit: too many packets waiting: lower reorder_horizon",
    )
    structure = limit_error("pcap record of 70000000 captured bytes is too large at byte offset 24", "capture", 24)
    code, message = errors._classify(structure)
    assert code == cli.EXIT_CAPTURE and message.startswith("cannot read the capture"), message


def test_a_file_name_that_is_no_utf8(cap: Path, tmp_path: Path) -> None:
    # Such a name opened fine but failed in report's HTML and shared's table (exit 2).
    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"bad\xffname.pcapng"))
    Path(odd).write_bytes(cap.read_bytes())
    p = run_cli("report", odd, "-o", tmp_path / "r.html", "-q", "--no-iterations")
    assert p.returncode == 0, p.stderr
    assert "bad\ufffdname.pcapng" in (tmp_path / "r.html").read_text(encoding="utf-8")
    p = run_cli("shared", odd, cap, "-q", "-o", tmp_path / "s.json")
    assert p.returncode == 0, p.stderr
    files = [c["file"] for c in json.loads((tmp_path / "s.json").read_text())["captures"]]
    assert files == [str(tmp_path / "bad\ufffdname.pcapng"), str(cap)]


def test_parquet_is_not_written_to_a_terminal(cap: Path, tmp_path: Path) -> None:
    # --format parquet without -o wrote binary onto the terminal; piped, it is still written.
    p = run_cli_on_terminal("scan", cap, "--rates", "1Gbps", "--format", "parquet", terminal="stdout")
    assert p.returncode == cli.EXIT_USAGE and b"standard output is a terminal" in p.stderr, p.stderr
    piped = run_cli("scan", cap, "--rates", "1Gbps", "--format", "parquet")
    assert piped.returncode == 0, piped.stderr
    out = tmp_path / "piped.parquet"
    out.write_bytes(piped.stdout)
    # The table whole, as the API gives it (scan's first table).
    assert pl.read_parquet(out).equals(burstcore.scan(str(cap), rates=["1Gbps"]).envelope)
