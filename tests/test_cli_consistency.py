"""The command line's commands held to one another, each case an inconsistency a hostile review
found: messages in the options' spelling wherever the command tells them (stderr and a JSON
output alike), and the JSON outputs of every command shaped alike."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from burstcore import cli
from tests.test_cli import run_cli, write_capture
from tests.test_cli_analyses import ok, one_line_error


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "t.pcapng")


@pytest.mark.parametrize("command", ["scan", "flows", "bursts", "shared"])
def test_an_empty_range_is_told_with_the_options(cap: Path, command: str) -> None:
    # The API names its bounds start and end ("start (…) is not before end (…): the range
    # [start, end) would be empty"); the command line was given --start and --end.
    files = [cap, cap] if command == "shared" else [cap]
    argv = [command, *files, "--start", "2023-11-14T22:13:21Z", "--end", "2023-11-14T22:13:20Z"]
    err = one_line_error(run_cli(*argv), cli.EXIT_USAGE)
    assert (
        "--start (2023-11-14T22:13:21.000000000Z) is not before --end (2023-11-14T22:13:20.000000000Z): "
        "the range [--start, --end) would be empty"
    ) in err, err


def test_superpose_tells_a_capture_left_empty_by_the_options(cap: Path) -> None:
    # Capture 2 (the second) through a filter that no packet passes: "... or outside start/end" named the
    # API's keywords.
    p = run_cli("superpose", cap, cap, "--filter", "udp", "--filter", "host 192.0.2.1", "-q")
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    assert "capture 2 gave the merge no packet" in err and "outside --start/--end" in err, err


def _stderr_warnings(p: object) -> list[str]:
    lines = p.stderr.decode().splitlines()  # type: ignore[attr-defined]
    return [line.split(": warning: ", 1)[1] for line in lines if ": warning: " in line]


@pytest.mark.parametrize("command", ["scan", "bursts", "superpose", "shared"])
def test_json_warnings_are_worded_as_on_stderr(cap: Path, command: str) -> None:
    # A bound in seconds where ns are read: stderr said "--start 1700000000 is ns since 1970 ...
    # give --start 2023-11-14T22:13:20Z", the JSON's "warnings" the API's "start=1700000000 ...
    # give start='2023-11-14T22:13:20Z'".
    files = [cap, cap] if command in ("superpose", "shared") else [cap]
    p = run_cli(command, *files, "--start", "1700000000", "-q", "-o", "-")
    assert p.returncode == 0, p.stderr
    told = json.loads(p.stdout)["warnings"]
    assert told and all("start=" not in w for w in told), told
    assert told == _stderr_warnings(p)


def test_scan_each_json_warnings_name_their_file(cap: Path, tmp_path: Path) -> None:
    # Scanned one by one, a file's warning on stderr starts with its name; the JSON's did not say
    # which of the files it was about.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(b"\xd4\xc3\xb2\xa1")  # a pcap cut off inside its file header
    p = run_cli("scan", cap, cut, "--each", "-q", "-o", "-")
    assert p.returncode == 0, p.stderr
    told = json.loads(p.stdout)["warnings"]
    assert len(told) == 1 and told[0].startswith(f"{cut}: capture ends inside"), told
    assert told == _stderr_warnings(p)


def test_info_json_errors_are_worded_as_on_stderr(cap: Path, tmp_path: Path) -> None:
    # A record longer than the reader's limit: stderr left out the core's advice to Rust callers
    # ("a Rust caller can raise ReadOptions::limits.max_block_len"), info --json kept it.
    huge = tmp_path / "huge.pcap"
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    huge.write_bytes(header + struct.pack("<IIII", 1, 0, 0x7FFFFFFF, 60))
    p = run_cli("info", huge, cap, "--json", "-q")
    assert p.returncode == cli.EXIT_CAPTURE, p.stderr
    error = json.loads(p.stdout)[0]["error"]
    assert "larger than the limit" in error and "ReadOptions" not in error, error
    assert p.stderr.decode() == f"burstcore info: error: {error}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["scan"],
        ["scan", "--each"],
        ["flows"],
        ["matrix"],
        ["iterations"],
        ["bursts"],
        ["sizes"],
        ["gaps"],
        ["superpose", "SECOND"],
        ["shared", "SECOND"],
    ],
)
def test_every_json_output_says_what_made_it(cap: Path, argv: list[str]) -> None:
    # The analyses' and shared's JSON named their command; scan's alone did not, so a folder of
    # outputs could not be told apart by it.
    files = [cap, cap] if "SECOND" in argv else [cap]
    doc = json.loads(ok(run_cli(argv[0], *files, *[a for a in argv[1:] if a != "SECOND"], "-q", "-o", "-")).stdout)
    meta = {k: doc[k] for k in ("burstcore", "command", "files", "config", "warnings")}
    assert meta["command"] == argv[0] and meta["files"] == [str(f) for f in files], meta


def _buffered_env() -> dict[str, str]:
    """The environment of a shell: stdout block-buffered into a pipe or a file (the test runner
    may set PYTHONUNBUFFERED, under which every print() writes at once)."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    return env


TERMINAL_COMMANDS = [
    ["info"],
    ["info", "--json"],
    ["scan"],
    ["flows"],
    ["matrix"],
    ["iterations"],
    ["bursts"],
    ["sizes"],
    ["gaps"],
    ["superpose", "SECOND"],
    ["shared", "SECOND"],
]


def _argv(cap: Path, argv: list[str]) -> list[str]:
    files = [cap, cap] if "SECOND" in argv else [cap]
    return [sys.executable, "-m", "burstcore", argv[0], *map(str, files), *[a for a in argv[1:] if a != "SECOND"], "-q"]


@pytest.mark.parametrize("argv", TERMINAL_COMMANDS, ids=" ".join)
def test_terminal_tables_into_a_pipe_whose_reader_left_exit_141(cap: Path, argv: list[str]) -> None:
    # `burstcore matrix t.pcap | head -1`, the tables smaller than stdout's buffer: they were
    # written at exit, where Python said "Exception ignored ... BrokenPipeError" and exited 120.
    read, write = os.pipe()
    os.close(read)  # the reader has left before the command writes
    try:
        p = subprocess.run(_argv(cap, argv), stdout=write, stderr=subprocess.PIPE, env=_buffered_env(), timeout=120)
    finally:
        os.close(write)
    assert (p.returncode, p.stderr) == (cli.EXIT_PIPE, b"")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [*TERMINAL_COMMANDS, ["bursts", "-o", "-"]], ids=" ".join)
def test_a_full_disk_under_stdout_exits_4(cap: Path, argv: list[str]) -> None:
    # info's tables to a full disk said "cannot read the capture t.pcapng: No space left on
    # device" (exit 1: the input's fault); every command's small tables failed at exit (120).
    with open("/dev/full", "wb") as full:
        p = subprocess.run(_argv(cap, argv), stdout=full, stderr=subprocess.PIPE, env=_buffered_env(), timeout=120)
    assert p.returncode == cli.EXIT_OUTPUT, p.stderr
    assert p.stderr.decode() == f"burstcore {argv[0]}: error: cannot write 'stdout': No space left on device\n"


def test_info_with_stdout_closed_gives_advice_it_can_take(cap: Path) -> None:
    # info has no -o; it was told "give -o FILE".
    p = subprocess.run(
        _argv(cap, ["info"]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
        timeout=120,
    )
    err = one_line_error(p, cli.EXIT_OUTPUT)
    assert "standard output is closed" in err and "-o" not in err and "> FILE" in err, err
