"""The command line's conventions, held across its commands, each case a leftover a review found:
files and options in any order, one numbering of the captures, --json and --format json alike,
-q quiet, every option in the JSON's config, one style of duration, every table writable."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from burstcore import cli
from burstcore.cli import inputs, output
from tests.test_cli import run_cli, write_capture
from tests.test_cli_analyses import ok, one_line_error


@pytest.fixture
def caps(tmp_path: Path) -> tuple[Path, Path]:
    return write_capture(tmp_path / "a.pcapng"), write_capture(tmp_path / "b.pcapng", n_iter=4)


# ---------------------------------------------------------------- files among the options


@pytest.mark.parametrize(
    "command, options",
    [
        ("scan", ["--windows", "1ms,5ms", "--rates", "1Gbps", "-o", "-"]),
        ("flows", ["--key", "biflow", "-o", "-"]),
        ("superpose", ["--offsets", "0,-3ms", "--windows", "1ms", "-o", "-"]),
        ("shared", ["--filter", "udp", "-o", "-"]),
        ("info", ["--no-mmap", "--json"]),
    ],
)
def test_files_may_stand_among_the_options(caps: tuple[Path, Path], command: str, options: list[str]) -> None:
    # `scan a.pcap --windows 1ms b.pcap` was refused: "unrecognized arguments: b.pcap". The files
    # given first, which argparse always took, are the oracle.
    a, b = caps
    first = ok(run_cli(command, a, b, *options, "-q")).stdout
    for argv in ([a, options[0], options[1], b, *options[2:]], [*options, a, b], [a, *options, "-q", b]):
        assert ok(run_cli(command, *argv, "-q")).stdout == first, argv
    doc = json.loads(first)
    assert (doc["files"] if command != "info" else [d["file"] for d in doc]) == [str(a), str(b)]


def test_report_takes_its_file_after_its_options(caps: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = caps
    out = tmp_path / "r.html"
    ok(run_cli("report", "--no-iterations", "-o", out, "--windows", "1ms", a, "-q"))
    assert out.stat().st_size > 0


def test_after_a_double_dash_every_word_is_a_file(caps: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = caps
    dashed = tmp_path / "-x.pcapng"
    dashed.write_bytes(a.read_bytes())
    argv = ["--windows", "1ms", "--rates", "1Gbps", "-q", "-o", "-"]
    doc = json.loads(ok(run_cli("scan", a, *argv, "--", dashed.name, cwd=tmp_path)).stdout)
    assert doc["files"] == [str(a), "-x.pcapng"]
    # An option after '--' is a file too: missing, and told as such.
    err = one_line_error(run_cli("scan", a, "-q", "--", "--top", cwd=tmp_path), cli.EXIT_NOT_FOUND)
    assert err == "burstcore scan: error: no such capture file (check the path): '--top'", err


def test_an_unknown_option_among_files_is_still_told(caps: tuple[Path, Path]) -> None:
    a, b = caps
    err = one_line_error(run_cli("scan", a, "--bogus", b), cli.EXIT_USAGE)
    assert "unrecognized arguments: --bogus" in err, err
    err = one_line_error(run_cli("report", a, "-o", "x.html", b), cli.EXIT_USAGE)
    assert f"unrecognized arguments: {b}" in err, err


@pytest.mark.parametrize(
    "before",
    [["-q"], ["--by=pair", "-q"], ["--quiet", "--no-mmap"]],
)
def test_the_commands_own_options_may_stand_before_it(caps: tuple[Path, Path], before: list[str]) -> None:
    # `burstcore -q scan a.pcap` was refused, "unrecognized arguments: -q (see 'burstcore scan
    # --help')", though scan takes -q. The same options after the command are the oracle.
    a, _ = caps
    after = ["--windows", "1ms", "--rates", "1Gbps", "-o", "-"]
    first = ok(run_cli("scan", *before, a, *after)).stdout
    assert ok(run_cli(*before, "scan", a, *after)).stdout == first


@pytest.mark.parametrize(
    "before",
    [
        ["-o", "-"],
        ["--windows", "1ms", "-q", "--rates", "1Gbps", "-o", "-"],
        ["-q", "--output", "-", "--top", "2"],
        # Short options clustered, the last one's value apart or attached: `-qo x.csv` was told
        # "argument COMMAND: invalid choice: 'x.csv'".
        ["-qo", "-"],
        ["-qo-", "--top", "2"],
    ],
)
def test_the_commands_options_with_values_may_stand_before_it(caps: tuple[Path, Path], before: list[str]) -> None:
    # `burstcore -o x.csv scan a.pcap` was told "argument COMMAND: invalid choice: 'x.csv'": the
    # value given apart was taken for the command. The same words after the command are the oracle.
    a, _ = caps
    after = ["--windows", "1ms", "--rates", "1Gbps", "-o", "-"]
    first = ok(run_cli("scan", a, *after, *before)).stdout
    assert ok(run_cli(*before, "scan", a, *after)).stdout == first


def test_a_value_before_the_command_may_be_named_as_a_command(caps: tuple[Path, Path], tmp_path: Path) -> None:
    # The command is the first word that is no option nor an option's value: `-o scan` writes to
    # a file named 'scan'.
    a, _ = caps
    ok(run_cli("-o", "scan", "scan", a, "--windows", "1ms", "--rates", "1Gbps", "--json", "-q", cwd=tmp_path))
    assert json.loads((tmp_path / "scan").read_text())["files"] == [str(a)]


@pytest.mark.parametrize(
    "typed, told",
    [
        # An option the command does not take is told as before; one whose value is missing was
        # given the word after the command ("-o scan a.pcap": "the following arguments are
        # required: FILE"; "--windows scan a.pcap": "'a.pcap' is not a duration").
        (["--bogus", "scan"], "unrecognized arguments: --bogus"),
        # A word that is no option was told "invalid choice" (here 'my', -o's value).
        (
            ["-o", "my", "results.csv", "scan"],
            "burstcore: error: 'results.csv' stands before the command 'scan' and is no option of it nor an option's "
            "value: give the files after the command (burstcore scan FILE ...), and quote a value of several words",
        ),
        (["-o", "scan"], "burstcore scan: error: argument -o/--output: expected one argument"),
        (["-qo", "scan"], "burstcore scan: error: argument -o/--output: expected one argument"),
        (["-qz", "scan"], "unrecognized arguments: -qz"),
        (["--windows", "scan"], "burstcore scan: error: argument --windows: expected one argument"),
    ],
)
def test_other_words_before_the_command_are_still_told(caps: tuple[Path, Path], typed: list[str], told: str) -> None:
    a, _ = caps
    err = one_line_error(run_cli(*typed, a), cli.EXIT_USAGE)
    assert told in err, err


@pytest.mark.parametrize(
    "typed, told",
    [
        (
            ["--windows", "1ms", "2ms", "5ms"],
            "'2ms'; it follows --windows 1ms: a list is one word, comma-separated (--windows 1ms,2ms,5ms)",
        ),
        (
            ["--windows=1ms", "2ms"],
            "'2ms'; it follows --windows 1ms: a list is one word, comma-separated (--windows 1ms,2ms)",
        ),
        (
            ["--filter", "tcp", "port", "80"],
            "'port'; it follows --filter tcp: quote an expression of several words (--filter 'tcp port 80')",
        ),
    ],
)
def test_a_value_typed_as_several_words_is_told_so(caps: tuple[Path, Path], typed: list[str], told: str) -> None:
    # With files among the options, the second word of a value is taken for a file: the error
    # says which option it follows and how to write the value (it said only "no such capture file").
    a, _ = caps
    err = one_line_error(run_cli("scan", a, *typed), cli.EXIT_NOT_FOUND)
    assert err == f"burstcore scan: error: no such capture file (check the path): {told}", err


@pytest.mark.parametrize(
    "typed, told",
    [
        (
            ["-o", "my", "results.csv"],
            "'results.csv'; it follows -o my: -o takes one path; quote a name of several words (-o 'my results.csv')",
        ),
        (
            ["--output", "my", "results.csv"],
            "'results.csv'; it follows --output my: --output takes one path; quote a name of several words "
            "(--output 'my results.csv')",
        ),
        (
            ["-o", "CAPTURE", "out.csv"],
            "'out.csv'; it follows -o CAPTURE, which names the file to write: give the capture without it "
            "(burstcore scan CAPTURE -o out.csv)",
        ),
    ],
)
def test_a_word_after_the_output_is_told_so(caps: tuple[Path, Path], typed: list[str], told: str) -> None:
    # A word after -o's value was told only "no such capture file".
    a, b = caps
    typed = [str(b) if x == "CAPTURE" else x for x in typed]
    err = one_line_error(run_cli("scan", a, *typed, cwd=a.parent), cli.EXIT_NOT_FOUND)
    told = told.replace("CAPTURE", str(b))
    assert err == f"burstcore scan: error: no such capture file (check the path): {told}", err


def test_two_command_lines_in_one_process_keep_their_own_words(
    caps: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The words typed were kept in module-level lists that each main() reset: a second main() in
    # the same process (another thread, a program embedding the command line) parsed between the
    # first's parse and its check of the files replaced the first's words, and the first's hint
    # was lost ("no such capture file: '2ms'" alone).
    a, _ = caps
    paused, other_done = threading.Event(), threading.Event()
    check = inputs._check_inputs

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "first":
            paused.set()
            other_done.wait(60)
        return check(*args, **kwargs)

    # Where scan looks it up: it checks its files through output._prepare_output. (held pausing
    # the first command is what `paused` waits for: a patch that did not take fails below.)
    monkeypatch.setattr(output, "_check_inputs", held)
    codes: dict[str, int] = {}
    first = threading.Thread(
        target=lambda: codes.setdefault("first", cli.main(["scan", str(a), "--windows", "1ms", "2ms", "-q"])),
        name="first",
    )
    first.start()
    assert paused.wait(60)
    codes["second"] = cli.main(["info", str(tmp_path / "nothere.pcap"), "-q"])
    other_done.set()
    first.join(60)
    assert codes == {"first": cli.EXIT_NOT_FOUND, "second": cli.EXIT_NOT_FOUND}
    err = capsys.readouterr().err
    told = "'2ms'; it follows --windows 1ms: a list is one word, comma-separated (--windows 1ms,2ms)"
    assert f"burstcore scan: error: no such capture file (check the path): {told}" in err.splitlines(), err


@pytest.mark.parametrize(
    "typed",
    [
        ["--windows", "1ms", "MISSING"],
        ["--filter", "tcp", "MISSING"],
        ["--top", "3", "MISSING"],
        ["-o", "out.csv", "MISSING"],
        ["MISSING"],
    ],
)
def test_a_missing_file_is_told_as_before(caps: tuple[Path, Path], tmp_path: Path, typed: list[str]) -> None:
    # A path after an option's value is a file meant as one: no word about the value.
    a, _ = caps
    missing = tmp_path / "nothere.pcap"
    argv = [str(missing) if x == "MISSING" else x for x in typed]
    err = one_line_error(run_cli("scan", a, *argv), cli.EXIT_NOT_FOUND)
    assert err == f"burstcore scan: error: no such capture file (check the path): '{missing}'", err


# ---------------------------------------------------------------- one numbering of the captures


def test_superpose_numbers_its_captures_from_1_as_shared_does(caps: tuple[Path, Path]) -> None:
    # superpose's offsets table and warnings numbered from 0 ("0: a.pcapng", "capture 1 starts
    # 10s after capture 0"), shared's table and warnings and every error ("input 2 of 3") from 1.
    a, b = caps
    p = ok(run_cli("superpose", a, b, "--offsets", "0,10s", "--windows", "1ms", "--rates", "1Gbps", "-q"))
    out, err = p.stdout.decode(), p.stderr.decode()
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("1: ", "2: "))]
    assert rows == [["1:", str(a), "0ns"], ["2:", str(b), "10s"]], out
    assert "(capture 2 starts 10s after capture 1)" in err, err
    assert "adding '-10s' to capture 2's offset starts it with capture 1" in err, err
    shared = ok(run_cli("shared", a, b, "-q")).stdout.decode()
    numbered = [line.split()[:2] for line in shared.splitlines() if line.startswith(("  " + str(a), "  " + str(b)))]
    assert numbered == [[str(a), "1"], [str(b), "2"]], shared


# ---------------------------------------------------------------- --json and --format json

JSON_COMMANDS = [
    ["info"],
    ["scan", "--windows", "1ms", "--rates", "1Gbps"],
    ["flows"],
    ["matrix"],
    ["iterations"],
    ["bursts"],
    ["sizes"],
    ["gaps"],
    ["superpose", "SECOND", "--windows", "1ms"],
    ["shared", "SECOND"],
]


@pytest.mark.parametrize("argv", JSON_COMMANDS, ids=lambda a: a[0])
def test_json_and_format_json_are_one_option_everywhere(caps: tuple[Path, Path], argv: list[str]) -> None:
    # info took only --json, the others only --format json: each refused the other spelling as
    # "unrecognized arguments".
    a, b = caps
    files = [a, b] if "SECOND" in argv else [a]
    options = [x for x in argv[1:] if x != "SECOND"]
    flags = (["--json"], ["--format", "json"])
    spelled = [ok(run_cli(argv[0], *files, *options, *flag, "-q")).stdout for flag in flags]
    assert spelled[0] == spelled[1]
    json.loads(spelled[0])
    err = one_line_error(run_cli(argv[0], *files, *options, "--json", "--format", "table"), cli.EXIT_USAGE)
    assert "argument --format: not allowed with argument --json" in err, err


# ---------------------------------------------------------------- -q: nothing but warnings and errors

OUTPUTS = [
    ["scan", "--windows", "1ms", "--rates", "1Gbps", "-o", "OUT.json"],
    ["flows", "-o", "OUT.csv"],
    ["matrix", "-o", "OUT.json"],
    ["iterations", "-o", "OUT.txt"],
    ["bursts", "-o", "OUT.parquet"],
    ["sizes", "-o", "OUT.json"],
    ["gaps", "-o", "OUT.json"],
    ["superpose", "SECOND", "--windows", "1ms", "-o", "OUT.json"],
    ["shared", "SECOND", "-o", "OUT.json"],
    ["plot", "--no-iterations", "--windows", "1ms", "-o", "OUT.png"],
    ["report", "--no-iterations", "--windows", "1ms", "-o", "OUT.html"],
]


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda a: a[0])
def test_quiet_writes_nothing_on_stderr_but_warnings(caps: tuple[Path, Path], tmp_path: Path, argv: list[str]) -> None:
    # plot and report said "wrote out.png" under -q.
    a, _ = caps
    files = [a, a] if "SECOND" in argv else [a]
    out = tmp_path / argv[-1]
    options = [str(out) if x == argv[-1] else x for x in argv[1:] if x != "SECOND"]
    p = ok(run_cli(argv[0], *files, *options, "-q"))
    assert out.stat().st_size > 0 and p.stderr == b"", p.stderr
    if argv[0] in ("plot", "report"):
        # Without -q the line is still there.
        assert ok(run_cli(argv[0], *files, *options)).stderr.decode().startswith(f"wrote {out}")


# ---------------------------------------------------------------- every option in the JSON's config


@pytest.mark.parametrize("argv", [*JSON_COMMANDS[1:], ["scan", "--each"]], ids=" ".join)
def test_json_config_holds_strict_and_mmap(caps: tuple[Path, Path], argv: list[str]) -> None:
    # scan's config lacked --strict (the analyses' had it), and no command's said --no-mmap.
    a, b = caps
    files = [a, b] if "SECOND" in argv else [a]
    options = [x for x in argv[1:] if x != "SECOND"]
    strict = [] if argv[0] == "shared" else ["--strict"]  # shared takes no --strict
    for given, mmap in (([*strict, "--no-mmap"], False), ([], None)):
        doc = json.loads(ok(run_cli(argv[0], *files, *options, *given, "--format", "json", "-q")).stdout)
        configs = doc["config"] if isinstance(doc["config"], list) else [doc["config"]]
        for config in configs:
            assert config["mmap"] is mmap, config
            if strict:
                assert config["strict"] is bool(given[:-1]), config


def test_scan_json_config_holds_every_keyword_scan_was_called_with(caps: tuple[Path, Path]) -> None:
    a, _ = caps
    argv = ["scan", str(a), "--windows", "1ms", "--rates", "1Gbps", "--strict", "--threads", "1", "--size", "ip"]
    doc = json.loads(ok(run_cli(*argv, "--format", "json", "-q")).stdout)
    parser = cli.build_parser()
    args = parser.parse_args(argv)
    called = set(inputs._scan_kwargs(args))
    assert called == {
        "windows",
        "rates",
        "bins",
        "bin_origin",
        "by",
        "size",
        "fcs",
        "closed",
        "threads",
        "max_groups",
        "reorder_horizon",
        "on_late",
        "strict",
        "mmap",
        "start",
        "end",
        "filter",
    }
    named = {k: next((n for n in (k, f"{k}_ns", f"{k}_bps") if n in doc["config"]), None) for k in called}
    assert None not in named.values(), named
    assert doc["config"]["strict"] is True and doc["config"]["threads"] == 1 and doc["config"]["size"] == "ip"


# ---------------------------------------------------------------- one style of duration


def test_iterations_shows_its_period_once_and_exactly(tmp_path: Path) -> None:
    # The period was shown in two styles side by side, rounded and exact: "12.286 ms (12.285714ms)".
    from decimal import Decimal

    import burstcore
    from tests import oracles
    from tests.test_cli import BASE

    ts, frames = [], []
    for it in range(8):
        t = BASE + it * 12_345_678
        for _ in range(40):
            frames.append(oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 5000, 6000, payload=1000))
            ts.append(t)
            t += 900
    cap = tmp_path / "p.pcapng"
    cap.write_bytes(oracles.capture(ts, [len(f) for f in frames], fmt="pcapng", frames=frames))
    period_ns = burstcore.iterations(str(cap)).period_ns
    assert period_ns is not None and period_ns % 1_000 != 0  # a period no rounding to µs shows whole
    text = ok(run_cli("iterations", cap, "-q")).stdout.decode()
    (shown,) = [w[1:] for w in map(str.split, text.splitlines()) if w[:1] == ["period"] and w[1:2] != ["over"]]
    assert len(shown) == 1 and shown[0].endswith("ms"), shown  # one value, in one unit
    assert Decimal(shown[0].removesuffix("ms")) * 1_000_000 == period_ns, shown


# ---------------------------------------------------------------- every table writable


@pytest.mark.parametrize("ending", [".csv", ".parquet", ".json"])
def test_superpose_singles_table_is_writable(caps: tuple[Path, Path], tmp_path: Path, ending: str) -> None:
    # superpose's singles (each capture's own E(τ), what the gain sums) had no --table choice.
    import polars as pl

    import burstcore

    a, b = caps
    out = tmp_path / f"singles{ending}"
    windows = "100us,1ms,5ms"
    ok(run_cli("superpose", a, b, "--offsets", "0,2ms", "--windows", windows, "-o", out, "--table", "singles", "-q"))
    if ending == ".json":
        doc = json.loads(out.read_text())
        assert [k for k in doc if isinstance(doc[k], list) and k not in ("files", "warnings", "warning_details")] == [
            "singles"
        ]
        got = pl.DataFrame(doc["singles"])
    else:
        got = pl.read_csv(out) if ending == ".csv" else pl.read_parquet(out)
    assert got.columns == ["capture", "file", "window_ns", "bytes", "max_packets"]
    # Oracle: each file scanned alone; positions from 0 as the API's, each with its file.
    for k, f in enumerate((a, b)):
        alone = burstcore.scan(str(f), windows=windows.split(","), rates=["1Gbps"]).envelope
        own = got.filter(pl.col("capture") == k).sort("window_ns")
        assert own["file"].to_list() == [str(f)] * 3
        assert (
            own.select("window_ns", "bytes", "max_packets").rows()
            == alone.sort("window_ns").select("window_ns", "bytes", "max_packets").rows()
        )


# ---------------------------------------------------------------- --fcs without --size l1


# The analyses that take --size took no --fcs before (argparse's "unrecognized arguments").
@pytest.mark.parametrize(
    "command", ["scan", "superpose", "plot", "report", "flows", "matrix", "sizes", "bursts", "iterations"]
)
def test_fcs_without_size_l1_is_refused_in_the_options_words(caps: tuple[Path, Path], command: str) -> None:
    # The API's words reached the terminal: "fcs='present' tells size='l1' ...; size='ip'
    # counts none of its own: give size='l1', or leave fcs out", keywords the command line has not.
    a, b = caps
    files = [a, b] if command == "superpose" else [a]
    out = a.parent / ("x.png" if command == "plot" else "x.html" if command == "report" else "x.json")
    err = one_line_error(run_cli(command, *files, "--size", "ip", "--fcs", "present", "-o", out), 2)
    assert (
        f"burstcore {command}: error: --fcs present tells --size l1 whether frames hold their FCS; "
        "--size ip counts none of its own: give --size l1, or leave --fcs out"
    ) == err, err
    assert "fcs=" not in err and "size=" not in err
