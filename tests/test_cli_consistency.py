"""The command line's commands held to one another, each case an inconsistency a hostile review
found: messages in the options' spelling wherever the command tells them (stderr and a JSON
output alike), and the JSON outputs of every command shaped alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from burstcore import cli
from tests.test_cli import run_cli, write_capture
from tests.test_cli_analyses import one_line_error


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
    # Capture 1 through a filter that no packet passes: "... or outside start/end" named the
    # API's keywords.
    p = run_cli("superpose", cap, cap, "--filter", "udp", "--filter", "host 192.0.2.1", "-q")
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    assert "capture 1 gave the merge no packet" in err and "outside --start/--end" in err, err
