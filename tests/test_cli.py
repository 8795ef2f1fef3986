"""The command line through a subprocess: its machine output parses and equals the Python API's,
its terminal tables show the API's numbers, and errors give one line and a distinct exit code."""

from __future__ import annotations

import calendar
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import burstcore
from burstcore import cli
from burstcore.cli import output, values
from tests import oracles

BASE = 1_700_000_000_000_000_000
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
SHARED_NAME = "captures/d_ring2_resnetsmall_noshape_bridge.pcapng"


def training_like(n_iter: int = 6, per_burst: int = 40) -> tuple[list[int], list[bytes]]:
    """Bursts of back-to-back frames between three hosts, 10 ms apart, with small replies."""
    ts, frames = [], []
    for it in range(n_iter):
        t = BASE + it * 10_000_000
        for k in range(per_burst):
            src, dst = HOSTS[k % 2], HOSTS[2]
            frames.append(oracles.eth_ipv4_udp(src, dst, 5000 + k % 2, 6000, payload=1000 + 37 * (k % 5)))
            ts.append(t)
            t += 850 + (k % 3)
            if k % 8 == 7:
                frames.append(oracles.eth_ipv4_udp(dst, src, 6000, 5000, payload=10, proto=6))
                ts.append(t + 3)
    return ts, frames


def write_capture(path: Path, fmt: str = "pcapng", **kw: int) -> Path:
    ts, frames = training_like(**kw)
    path.write_bytes(oracles.capture(ts, [len(f) for f in frames], fmt=fmt, frames=frames))
    return path


def run_cli(
    *args: object, stdin: bytes | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "burstcore", *map(str, args)],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def run_cli_on_terminal(*args: object, terminal: str) -> subprocess.CompletedProcess[bytes]:
    """The command line with its `terminal` ("stdin" or "stdout") a pseudo-terminal."""
    leader, follower = pty.openpty()
    streams: dict[str, Any] = {"stdin": follower, "stdout": subprocess.PIPE}
    if terminal == "stdout":
        streams = {"stdout": follower}
    try:
        return subprocess.run(
            [sys.executable, "-m", "burstcore", *map(str, args)],
            **streams,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(leader)
        os.close(follower)


def shared_path(name: str = SHARED_NAME) -> Path:
    root = os.environ.get("BURSTCORE_SHARED")
    if not root:
        pytest.skip("BURSTCORE_SHARED is not set")
    p = Path(root) / name
    assert p.exists(), f"{p} is missing (BURSTCORE_SHARED={root})"
    return p


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "gen.pcapng")


SCAN_ARGS = ["--windows", "1us,10us,100us,5ms", "--rates", "1Gbps,10Gbps", "--bins", "1ms", "--by", "all,pair"]
API_KW = {
    "windows": ["1us", "10us", "100us", "5ms"],
    "rates": ["1Gbps", "10Gbps"],
    "bins": ["1ms"],
    "by": ["all", "pair"],
}


def _rows(df: pl.DataFrame, key: list[str], cols: list[str]) -> dict[tuple[object, ...], tuple[object, ...]]:
    return {tuple(r[: len(key)]): tuple(r[len(key) :]) for r in df.select(*key, *cols).iter_rows()}


def test_scan_json_equals_api(cap: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_cli("scan", cap, *SCAN_ARGS, "-o", out)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    api = burstcore.scan(str(cap), **API_KW)
    env = pl.DataFrame(doc["envelope"])
    key = ["by", "group", "window_ns"]
    cols = ["bytes", "packets", "max_packets", "peak_rate_bps", "ptm"]
    assert _rows(env, key, cols) == _rows(api.envelope, key, cols)
    # Times in ISO 8601 with every nanosecond.
    starts = env.select([*key, "start"]).with_columns(
        pl.col("start").str.to_datetime("%Y-%m-%dT%H:%M:%S%.9fZ", time_unit="ns", time_zone="UTC")
    )
    assert _rows(starts, key, ["start"]) == _rows(api.envelope, key, ["start"])
    bl = pl.DataFrame(doc["backlog"])
    assert _rows(bl, ["by", "group", "rate_bps"], ["bmax_bytes", "rate_over_mean", "longest_busy_ns"]) == _rows(
        api.backlog.with_columns(longest_busy_ns=pl.col("longest_busy").dt.total_nanoseconds()),
        ["by", "group", "rate_bps"],
        ["bmax_bytes", "rate_over_mean", "longest_busy_ns"],
    )
    se = pl.DataFrame(doc["series"])
    assert _rows(se, ["by", "group", "start_ns"], ["bytes", "packets"]) == _rows(
        api.series, ["by", "group", "start_ns"], ["bytes", "packets"]
    )
    assert doc["summary"][0]["packets"] == api.summary["packets"][0]
    assert doc["config"]["windows_ns"] == [1_000, 10_000, 100_000, 5_000_000]


def test_threads_option_reaches_the_scan_and_changes_nothing(cap: Path) -> None:
    docs = []
    for n in ("1", "3"):
        p = run_cli("scan", cap, *SCAN_ARGS, "--threads", n, "--format", "json", "-o", "-")
        assert p.returncode == 0, p.stderr
        docs.append(json.loads(p.stdout))
    assert [d["config"]["threads"] for d in docs] == [1, 3]
    for table in ("envelope", "backlog", "series", "summary", "groups"):
        assert docs[0][table] == docs[1][table], table


def test_max_groups_option_reaches_the_scan(cap: Path) -> None:
    # A limit of one group less than the host pairs is one too few, in the API as on the line.
    pairs = burstcore.scan(str(cap), **API_KW).groups.filter(pl.col("by") == "pair").height
    assert pairs >= 2
    with pytest.raises(burstcore.LimitExceededError, match="max_groups") as e:
        burstcore.scan(str(cap), **API_KW, max_groups=pairs - 1)
    assert e.value.limit == "result"
    p = run_cli("scan", cap, *SCAN_ARGS, "--max-groups", pairs - 1)
    assert p.returncode == cli.EXIT_CAPTURE, p.stderr
    err = _one_line_error(p)
    assert "raise --max-groups" in err and "max_groups" not in err, err
    p = run_cli("scan", cap, *SCAN_ARGS, "--max-groups", pairs, "--format", "json", "-o", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    api = burstcore.scan(str(cap), **API_KW, max_groups=pairs)
    assert (
        pl.DataFrame(doc["groups"])
        .select("by", "group", "packets", "bytes")
        .equals(api.groups.select("by", "group", "packets", "bytes"))
    )
    # The JSON says which limit the scan ran under, as the result's config does.
    assert doc["config"]["max_groups"] == api.config["max_groups"] == pairs
    # plot and report scan with the same options.
    for command in ("plot", "report"):
        assert "--max-groups N" in run_cli(command, "--help").stdout.decode(), command


def test_scan_values_match_brute_force(cap: Path, tmp_path: Path) -> None:
    """Beyond agreeing with the API: E(τ) on the command line is the brute-force maximum."""
    ts, frames = training_like()
    sizes = [len(f) for f in frames]
    p = run_cli("scan", cap, "--windows", "1us,10us,100us", "--rates", "1Gbps", "--format", "json", "-o", "-")
    assert p.returncode == 0, p.stderr
    env = {r["window_ns"]: r["bytes"] for r in json.loads(p.stdout)["envelope"]}
    for w in (1_000, 10_000, 100_000):
        assert env[w] == oracles.envelope(ts, sizes, w)[0]


def test_scan_of_a_time_range(cap: Path) -> None:
    """--start/--end as the API's start/end: ns since 1970 or ISO 8601, the rest counted."""
    ts, frames = training_like()
    sizes = [len(f) for f in frames]
    lo, hi = ts[len(ts) // 4], ts[len(ts) // 2]
    iso = str(np.datetime64(lo, "ns")) + "Z"
    for start in (str(lo), iso):
        p = run_cli(
            "scan",
            cap,
            "--windows",
            "10us",
            "--rates",
            "1Gbps",
            "--start",
            start,
            "--end",
            hi,
            "--format",
            "json",
            "-o",
            "-",
        )
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        keep = [i for i, t in enumerate(ts) if lo <= t < hi]
        assert doc["summary"][0]["skipped_outside_range"] == len(ts) - len(keep)
        want = oracles.envelope([ts[i] for i in keep], [sizes[i] for i in keep], 10_000)[0]
        assert doc["envelope"][0]["bytes"] == want
    p = run_cli("scan", cap, "--start", "noon")
    assert p.returncode == 2 and "argument --start: 'noon' is not an instant: give ISO 8601" in p.stderr.decode(), (
        p.stderr
    )


def test_scan_parquet_and_csv_equal_api(cap: Path, tmp_path: Path) -> None:
    api = burstcore.scan(str(cap), **API_KW)
    for table in ("envelope", "backlog", "series", "groups"):
        pq = tmp_path / f"{table}.parquet"
        p = run_cli("scan", cap, *SCAN_ARGS, "-o", pq, "--table", table)
        assert p.returncode == 0, p.stderr
        assert pl.read_parquet(pq).equals(getattr(api, table)), table
    csv = tmp_path / "env.csv"
    p = run_cli("scan", cap, *SCAN_ARGS, "-o", csv)
    assert p.returncode == 0, p.stderr
    got = pl.read_csv(csv)
    key, cols = ["by", "group", "window_ns"], ["bytes", "packets", "peak_rate_bps", "ptm"]
    assert _rows(got, key, cols) == _rows(api.envelope, key, cols)
    assert "window" not in got.columns  # the Duration became window_ns, already present


def test_json_and_csv_written_a_slice_at_a_time_are_the_whole(
    cap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written whole, a scan by flow of 1 M flows took 14 GB as Python objects; in slices of a
    # few rows here (the rows of every table span several), the same document and the same CSV.
    whole = {}
    for fmt in ("json", "csv"):
        whole[fmt] = tmp_path / f"whole.{fmt}"
        assert cli.main(["scan", str(cap), *SCAN_ARGS, "-q", "--format", fmt, "-o", str(whole[fmt])]) == 0
    monkeypatch.setattr(output, "_ROWS_AT_ONCE", 3)
    # The patch takes where the writers read it: 7 rows are 3 pieces.
    assert len(list(output._csv_chunks(pl.DataFrame({"x": range(7)})))) == 3
    for fmt in ("json", "csv"):
        sliced = tmp_path / f"sliced.{fmt}"
        assert cli.main(["scan", str(cap), *SCAN_ARGS, "-q", "--format", fmt, "-o", str(sliced)]) == 0
        if fmt == "json":
            doc = json.loads(sliced.read_text())
            assert doc == json.loads(whole[fmt].read_text())
            assert len(doc["envelope"]) > 3 and len(doc["series"]) > 3
        else:
            assert sliced.read_text() == whole[fmt].read_text()


def test_scan_terminal_table_shows_api_values(cap: Path) -> None:
    p = run_cli("scan", cap, *SCAN_ARGS)
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    api = burstcore.scan(str(cap), **API_KW)
    all_env = api.envelope.filter(pl.col("by") == "all")
    lines = text.splitlines()
    for label in ("1us", "10us", "100us", "5ms"):
        w_ns = burstcore.parse_duration(label)
        expect = all_env.filter(pl.col("window_ns") == w_ns).row(0, named=True)
        # The first table is the aggregate ('all traffic'); its row for this window.
        hit = next(ln.split() for ln in lines if ln.split()[:1] == [label])
        assert int(hit[1].replace(",", "")) == expect["bytes"]
        assert int(hit[2].replace(",", "")) == expect["packets"]
        assert float(hit[-2]) == pytest.approx(expect["ptm"], rel=1e-3)
        # When the window that holds E(τ) began, as the JSON's start has it.
        assert hit[-1] == expect["start"].strftime("%Y-%m-%dT%H:%M:%S.") + f"{expect['start_ns'] % 10**9:09d}Z"
    bmax = api.backlog.filter((pl.col("by") == "all") & (pl.col("rate_bps") == 10**9))["bmax_bytes"][0]
    assert f"{bmax:,.0f}" in text
    for g in ("10.0.0.1>10.0.0.3", "10.0.0.2>10.0.0.3"):
        assert g in text


def test_several_files_merged_or_each(tmp_path: Path) -> None:
    a = write_capture(tmp_path / "a.pcapng", n_iter=3)
    b = write_capture(tmp_path / "b.pcap", fmt="pcap", n_iter=5)
    p = run_cli("scan", a, b, "--windows", "10us,5ms", "--rates", "1Gbps", "-o", tmp_path / "m.json")
    assert p.returncode == 0, p.stderr
    merged = json.loads((tmp_path / "m.json").read_text())
    api = burstcore.scan([str(a), str(b)], windows=["10us", "5ms"], rates=["1Gbps"])
    assert merged["merged"] is True
    assert [r["bytes"] for r in merged["envelope"]] == api.envelope["bytes"].to_list()
    assert merged["summary"][0]["packets"] == api.summary["packets"][0]

    p = run_cli("scan", a, b, "--each", "--windows", "10us,5ms", "--rates", "1Gbps", "-o", tmp_path / "e.parquet")
    assert p.returncode == 0, p.stderr
    each = pl.read_parquet(tmp_path / "e.parquet")
    for f in (a, b):
        one = burstcore.scan(str(f), windows=["10us", "5ms"], rates=["1Gbps"]).envelope
        assert each.filter(pl.col("file") == str(f)).drop("file").equals(one)
    # One file twice, through a filter each: both configs are kept, in the order of "files" (keyed
    # by file name, the first was lost).
    p = run_cli(
        "scan", a, a, "--each", "--rates", "1Gbps", "--filter", "tcp", "--filter", "udp", "-o", tmp_path / "e.json"
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["files"] == [str(a), str(a)]
    assert [c["filter"] for c in doc["config"]] == ["tcp", "udp"]


def test_stdin_equals_path(cap: Path) -> None:
    p = run_cli("scan", "-", "--windows", "1us,5ms", "--rates", "10Gbps", "--format", "json", stdin=cap.read_bytes())
    assert p.returncode == 0, p.stderr
    api = burstcore.scan(str(cap), windows=["1us", "5ms"], rates=["10Gbps"])
    doc = json.loads(p.stdout)
    assert [r["bytes"] for r in doc["envelope"]] == api.envelope["bytes"].to_list()
    assert [r["bmax_bytes"] for r in doc["backlog"]] == api.backlog["bmax_bytes"].to_list()


def test_info_reports_every_file_it_can(cap: Path, tmp_path: Path) -> None:
    # As capinfos: a file that cannot be read is reported and the others still are (exit 1);
    # a warning says which of several files it is about.
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(cap.read_bytes()[:-10])
    p = run_cli("info", cut, text, cap, "--json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert [d["file"] for d in doc] == [str(cut), str(text), str(cap)]
    assert "not a pcap or pcapng file" in doc[1]["error"] and "error" not in doc[0] and "error" not in doc[2]
    assert doc[2] == {"file": str(cap), **burstcore.info(str(cap)).to_dict(), "warning_details": []}
    err = p.stderr.decode()
    assert f"warning: {cut}: capture ends inside" in err and f"cannot read the capture {text}" in err, err
    p = run_cli("info", cut, cap)
    assert p.returncode == 0 and p.stdout.decode().count("== ") == 2, p.stderr


def test_figures_tell_a_warning_once(cap: Path, tmp_path: Path) -> None:
    # plot and report read a capture three times (info, scan, iterations): its warning is told
    # once, naming it by its path, as every warning and error of the commands does (the base
    # name, which the figure shows, is ambiguous: each host's capture may have the same name).
    (tmp_path / "host1").mkdir()
    cut = tmp_path / "host1" / "cut.pcapng"
    cut.write_bytes(cap.read_bytes()[:-10])
    for command, out in (("plot", "f.png"), ("report", "r.html")):
        p = run_cli(command, cut, "-o", tmp_path / out)
        err = p.stderr.decode()
        assert p.returncode == 0, err
        assert err.count("capture ends inside") == 1, err
        assert f"burstcore {command}: warning: {cut}: capture ends inside" in err, err
    # As scan names it among several files.
    p = run_cli("scan", cut, cap, "--each", "-q")
    assert f"burstcore scan: warning: {cut}: capture ends inside" in p.stderr.decode(), p.stderr


def test_errors_give_advice_in_options(tmp_path: Path) -> None:
    # The API's advice names keyword arguments; the command line's names its options.
    for step, first in ((50_000_000, "--reorder-horizon"), (5 * 10**9, "--on-late drop")):
        late = tmp_path / f"late{step}.pcap"
        late.write_bytes(oracles.capture([BASE, BASE + step, BASE + 1], [100] * 3, fmt="pcap"))
        p = run_cli("scan", late, "--windows", "1ms", "--rates", "1Gbps", "-q")
        err = p.stderr.decode()
        assert p.returncode == 1, err
        assert "--reorder-horizon" in err and "--on-late drop" in err and "on_late" not in err, err
        # Past a second, dropping comes first: a horizon that long holds a second of packets.
        assert err.index(first) < err.index("--on-late drop" if first != "--on-late drop" else "--reorder-horizon")
        assert err.rstrip().endswith("at byte offset 84"), err
    p = run_cli("scan", tmp_path / "late50000000.pcap", "--threads", "2000")
    assert p.returncode == 2 and "--threads 2000" in p.stderr.decode() and "threads=" not in p.stderr.decode()


def test_a_reader_that_leaves_early_ends_the_command_with_141(cap: Path) -> None:
    # `burstcore scan ... -o - | head`: a large output into a pipe whose reader left must end
    # with EXIT_PIPE, buffered stdout or not (unbuffered, one large write returned short and
    # raised nothing, and the command exited 0).
    argv = [sys.executable, "-m", "burstcore", "scan", str(cap), "--by", "flow", "--bins", "1us"]
    argv += ["--windows", "1ms", "--rates", "1Gbps", "--table", "series", "-o", "-", "--format", "csv", "-q"]
    for unbuffered in ("1", ""):
        env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
        if not unbuffered:
            env.pop("PYTHONUNBUFFERED")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert p.stdout is not None
        head = p.stdout.read(100)
        p.stdout.close()
        assert p.wait(timeout=60) == cli.EXIT_PIPE, (unbuffered, p.stderr.read() if p.stderr else b"")
        assert head.startswith(b"by,group,")
    whole = run_cli(*argv[3:])
    assert whole.returncode == 0 and len(whole.stdout) > 1_000_000, len(whole.stdout)


def test_stdin_and_folders_are_told_apart(cap: Path, tmp_path: Path) -> None:
    # An output that is a folder says so (exit 4), whatever its name ends in.
    folder = tmp_path / "out.csv"
    folder.mkdir()
    p = run_cli("scan", cap, "-o", folder)
    assert p.returncode == cli.EXIT_OUTPUT and b"it is a folder" in p.stderr, p.stderr
    # An empty stdin is named as stdin, not "-".
    p = run_cli("scan", "-", "--rates", "1Gbps", stdin=b"")
    assert p.returncode == cli.EXIT_CAPTURE and b"cannot read the capture from stdin: empty input" in p.stderr
    # stdin a terminal: refused at once, rather than waiting for a capture typed in.
    q = run_cli_on_terminal("scan", "-", "--rates", "1Gbps", terminal="stdin")
    assert q.returncode == cli.EXIT_USAGE and b"stdin, which is a terminal" in q.stderr, q.stderr


def test_tables_go_to_the_output_file_asked_for(cap: Path, tmp_path: Path) -> None:
    # -o out.txt (or --format table -o FILE) writes the terminal's tables there, not to stdout.
    shown = run_cli("scan", cap, *SCAN_ARGS, "-q")
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) > 10, shown
    for out, extra in ((tmp_path / "out.txt", []), (tmp_path / "tables.csv", ["--format", "table"])):
        p = run_cli("scan", cap, *SCAN_ARGS, "-q", "-o", out, *extra)
        assert p.returncode == 0, p.stderr
        assert p.stdout == b"" and out.read_bytes() == shown.stdout, out.name
    p = run_cli("scan", cap, *SCAN_ARGS, "-q", "--table", "backlog", "-o", tmp_path / "b.txt")
    assert p.returncode == 2 and b"--table chooses" in p.stderr, p.stderr


def test_a_named_pipe_is_read_once(cap: Path, tmp_path: Path) -> None:
    # A FIFO (or a shell's <(...)) is a path that reads once: the mean rate's pre-pass must not
    # read it first (scan opened it again and waited for a writer forever), and plot, which
    # reads a capture three times, holds it in memory. The result is the stream's.
    import threading

    data = cap.read_bytes()
    for argv in (["scan", "--windows", "1us,5ms", "--format", "json"], ["plot", "-o", str(tmp_path / "p.png")]):
        fifo = tmp_path / "f.pcapng"
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)

        def feed(fifo: Path = fifo) -> None:
            with open(fifo, "wb") as w:
                w.write(data)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        p = run_cli(argv[0], fifo, *argv[1:], timeout=60)
        writer.join(5)
        assert p.returncode == 0, (argv[0], p.stderr)
        if argv[0] == "scan":
            api = burstcore.scan(data, windows=["1us", "5ms"], rates=["1Gbps"])
            doc = json.loads(p.stdout)
            assert [r["bytes"] for r in doc["envelope"]] == api.envelope["bytes"].to_list()
            # A stream's default rates are the link-speed grid, not the mean's multiples.
            assert {r["rate_bps"] for r in doc["backlog"]} == {10**8, 10**9, 10**10, 25 * 10**9} | {
                4 * 10**10,
                10**11,
                2 * 10**11,
                4 * 10**11,
            }


def test_a_named_pipe_given_twice_is_refused(tmp_path: Path) -> None:
    # A FIFO (or a shell's <(...)) given twice was opened twice: the two readers shared one
    # stream (the second "not a pcap or pcapng file (starts with a0 00 00 00)", the first cut
    # mid-block), or, with no writer yet or the stream read whole by the first, the second
    # opening waited for a writer forever (info, plot, shared). Now told at once, as '-' twice.
    fifo = tmp_path / "live.pcapng"
    os.mkfifo(fifo)
    told = b"('" + str(fifo).encode() + b"' and '"
    for argv in (
        ["scan", fifo, "--windows", "1ms", fifo],
        ["info", fifo, "--json", tmp_path / "missing.pcap", fifo],
        ["superpose", fifo, "--offsets", "0,0,3ms", "--", tmp_path / "missing.pcap", f"{tmp_path}/./live.pcapng"],
        ["shared", fifo, tmp_path / "missing.pcap", fifo],
    ):
        p = run_cli(*argv, timeout=30)
        assert p.returncode == cli.EXIT_USAGE, (argv, p.stderr)
        assert told in p.stderr and b"are the same pipe" in p.stderr, (argv, p.stderr)
        assert (b"captures 1 and 2 " if argv[0] == "scan" else b"captures 1 and 3 ") in p.stderr, p.stderr
        assert p.stdout == b""
    # '-' and /dev/stdin name one pipe too.
    p = run_cli("flows", "-", "/dev/stdin", stdin=b"")
    assert p.returncode == cli.EXIT_USAGE and b"captures 1 and 2 (stdin and '/dev/stdin')" in p.stderr, p.stderr
    # The API refuses it as well, rather than waiting (in a child: the old code never returned).
    code = (
        "import burstcore, sys\n"
        "for f in (burstcore.scan, burstcore.flows, burstcore.superpose):\n"
        "    try:\n"
        "        f([sys.argv[1], sys.argv[1]])\n"
        "    except ValueError as e:\n"
        "        assert 'the same pipe, which reads once' in str(e), e\n"
        "    else:\n"
        "        raise AssertionError(f)\n"
    )
    q = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, timeout=30, check=False)
    assert q.returncode == 0, q.stderr
    # A character device streams too, but is no pipe: /dev/null twice was called "the same pipe".
    p = run_cli("scan", "/dev/null", "/dev/null", "--windows", "1ms")
    assert p.returncode == cli.EXIT_USAGE and b"are the same device, which reads once" in p.stderr, p.stderr


def test_stdin_named_twice_is_refused_when_it_is_a_regular_file(tmp_path: Path) -> None:
    # '-' beside /dev/stdin, stdin redirected from a file: both were read (the file's packets
    # counted twice, with no word), where the same pair on a pipe is refused and '-' twice is.
    data = oracles.capture([k * 1_000_000 for k in range(10)], [60] * 10, fmt="pcap")
    path = tmp_path / "c.pcap"
    path.write_bytes(data)

    def with_stdin(*argv: object) -> subprocess.CompletedProcess[bytes]:
        with open(path, "rb") as f:
            return subprocess.run(
                [sys.executable, "-m", "burstcore", *map(str, argv)],
                stdin=f,
                capture_output=True,
                timeout=120,
                check=False,
            )

    for argv in (["flows", "-", "/dev/stdin"], ["scan", "--windows", "1ms", "/dev/stdin", "-"]):
        p = with_stdin(*argv)
        assert p.returncode == cli.EXIT_USAGE and b"both name stdin, which is read once" in p.stderr, (argv, p.stderr)
        assert p.stdout == b""
    # Either name alone reads the file; its own path twice is read twice, with the warning that
    # its packets count once per copy (guards: so they were).
    for argv in (["scan", "--windows", "1ms", "--json", "-"], ["scan", "--windows", "1ms", "--json", "/dev/stdin"]):
        p = with_stdin(*argv)
        assert p.returncode == 0 and json.loads(p.stdout)["summary"][0]["packets_read"] == 10, (argv, p.stderr)
    p = with_stdin("scan", "--windows", "1ms", "--json", path, path)
    assert p.returncode == 0 and json.loads(p.stdout)["summary"][0]["packets_read"] == 20, p.stderr
    assert b"the same file" in p.stderr
    # The API refuses it as well.
    code = (
        "import burstcore\n"
        "try:\n"
        "    burstcore.scan(['-', '/dev/stdin'], windows=['1ms'])\n"
        "except ValueError as e:\n"
        "    assert 'both name stdin' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('read twice')\n"
    )
    with open(path, "rb") as f:
        q = subprocess.run([sys.executable, "-c", code], stdin=f, capture_output=True, timeout=60, check=False)
    assert q.returncode == 0, q.stderr


def test_stdin_named_twice_is_refused_whatever_sys_stdin_holds(tmp_path: Path) -> None:
    # The readers read fd 0, but the check asked sys.stdin.fileno(): with sys.stdin replaced by
    # an object that has no file number (a notebook's, IDLE's) or None (pythonw, fd 0 closed at
    # start), '-' twice and '-' beside /dev/stdin were read twice without a word (scan), where
    # superpose alone had its own '-' twice check.
    data = oracles.capture([k * 1_000_000 for k in range(10)], [60] * 10, fmt="pcap")
    path = tmp_path / "c.pcap"
    path.write_bytes(data)
    code = (
        "import io, sys, burstcore\n"
        "sys.stdin = io.StringIO('') if sys.argv[1] == 'text' else None\n"
        "for fn in (burstcore.scan, burstcore.superpose, burstcore.flows):\n"
        "    for pair in (['-', '-'], ['-', '/dev/stdin'], ['/dev/fd/0', '-']):\n"
        "        try:\n"
        "            fn(pair, windows=['1ms']) if fn is not burstcore.flows else fn(pair)\n"
        "        except ValueError as e:\n"
        "            assert 'read only once' in str(e) or 'both name stdin' in str(e), e\n"
        "        else:\n"
        "            raise AssertionError(f'{fn.__name__} read {pair} twice')\n"
    )
    for how in ("text", "none"):
        with open(path, "rb") as f:
            q = subprocess.run(
                [sys.executable, "-c", code, how], stdin=f, capture_output=True, timeout=120, check=False
            )
        assert q.returncode == 0, (how, q.stderr)
    # A Python object with bytes in sys.stdin is what '-' reads: /dev/stdin beside it (fd 0) is
    # another input, read as well (guard); '-' twice is still refused.
    code = (
        "import io, sys, burstcore\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(open(sys.argv[1], 'rb').read()))\n"
        "s = burstcore.scan(['-', '/dev/stdin'], windows=['1ms']).summary\n"
        "assert s['packets_read'].to_list() == [20], s\n"
        "try:\n"
        "    burstcore.scan(['-', '-'], windows=['1ms'])\n"
        "except ValueError as e:\n"
        "    assert 'read only once' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('- read twice')\n"
    )
    with open(path, "rb") as f:
        q = subprocess.run(
            [sys.executable, "-c", code, str(path)], stdin=f, capture_output=True, timeout=120, check=False
        )
    assert q.returncode == 0, q.stderr


def test_a_file_name_that_is_not_utf8_is_valid_json(cap: Path, tmp_path: Path) -> None:
    # A name whose bytes are no UTF-8 (a Latin-1 'é') was written to the JSON's "files" (and
    # info's "file") as a lone surrogate escape, "caf\udce9.pcapng": Rust's serde_json refuses
    # the whole document, and the same document's tables (`source`) and warnings had U+FFFD.
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.pcapng")
    with open(name, "wb") as f:
        f.write(cap.read_bytes())
    path = os.fsdecode(name)
    shown = "caf\ufffd.pcapng"
    for argv in (
        ["scan", path, "--by", "interface", "--windows", "1ms", "--json", "-o", "-"],
        ["flows", path, "--json", "-o", "-"],
        ["superpose", path, path, "--windows", "1ms", "--json", "-o", "-"],
        ["info", path, "--json"],
    ):
        p = subprocess.run([sys.executable, "-m", "burstcore", *argv], capture_output=True, timeout=120, check=False)
        assert p.returncode == 0, (argv[0], p.stderr)
        doc = json.loads(p.stdout)
        # What a strict parser takes: every string is valid UTF-8 (no lone surrogate).
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
        if argv[0] == "info":
            assert [os.path.basename(d["file"]) for d in doc] == [shown]
            continue
        assert [os.path.basename(f) for f in doc["files"]] == [shown] * (2 if argv[0] == "superpose" else 1)
        if argv[0] == "scan":
            assert {os.path.basename(r["source"]) for r in doc["envelope"]} == {shown}


def test_a_stderr_that_takes_nothing_costs_no_result(cap: Path, tmp_path: Path) -> None:
    # A cut capture warns. With stderr closed (2>&-), sys.stderr is None and print(file=None)
    # wrote the warning to stdout, ahead of the JSON (exit 0, output no parser takes); with
    # stderr a full disk the warning's write failed and the command exited 1, taken for the
    # capture's error; with stderr a pipe whose reader had gone, 141, taken for stdout's. In
    # each the result was lost. Now the diagnostics are dropped and the result is written.
    data = cap.read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[: len(data) - 10])
    with pytest.warns(burstcore.CaptureWarning, match="capture ends inside"):
        want = burstcore.scan(str(cut), windows=["1ms"], rates=["1Gbps"])
    argv = [
        sys.executable,
        "-m",
        "burstcore",
        "scan",
        str(cut),
        "--windows",
        "1ms",
        "--rates",
        "1Gbps",
        "--json",
        "-o",
        "-",
    ]
    gone_r, gone_w = os.pipe()
    os.close(gone_r)
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        for how, extra in (
            ("closed", {"preexec_fn": lambda: os.close(2)}),
            ("full", {"stderr": full}),
            ("reader gone", {"stderr": gone_w}),
        ):
            p = subprocess.run(argv, stdout=subprocess.PIPE, timeout=120, check=False, **extra)
            assert p.returncode == cli.EXIT_OK, (how, p.returncode, p.stdout[:200])
            doc = json.loads(p.stdout)
            assert [r["bytes"] for r in doc["envelope"]] == want.envelope["bytes"].to_list(), how
            assert doc["summary"][0]["packets"] == want.summary["packets"][0], how
            assert doc["warnings"] and "capture ends inside" in doc["warnings"][0], how
    finally:
        os.close(gone_w)
        os.close(full)
    # An error with stderr closed: its exit code alone, and nothing on stdout.
    p = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", str(tmp_path / "missing.pcap")],
        stdout=subprocess.PIPE,
        preexec_fn=lambda: os.close(2),
        timeout=120,
        check=False,
    )
    assert p.returncode == cli.EXIT_NOT_FOUND and p.stdout == b"", (p.returncode, p.stdout)


def test_info_json_and_text(cap: Path) -> None:
    p = run_cli("info", cap, "--json")
    assert p.returncode == 0, p.stderr
    (doc,) = json.loads(p.stdout)
    ref = burstcore.info(str(cap))
    ts, frames = training_like()
    assert doc["packets"] == ref.packets == len(frames)
    assert doc["wire_bytes"] == ref.wire_bytes == sum(len(f) for f in frames)
    assert doc["first_ns"] == min(ts) and doc["max_ns"] == max(ts)
    p = run_cli("info", cap, "-", stdin=cap.read_bytes())
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    assert text.count(f"Packets:             {len(frames):,}") == 2 and "== -" in text


def test_shared_capture_scan_equals_api(tmp_path: Path) -> None:
    path = shared_path()
    p = run_cli(
        "scan", path, "--windows", "10us,1ms,5ms", "--rates", "1Gbps", "--by", "pair", "-o", tmp_path / "d.json"
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    api = burstcore.scan(str(path), windows=["10us", "1ms", "5ms"], rates=["1Gbps"], by="pair")
    key, cols = ["group", "window_ns"], ["bytes", "packets", "peak_rate_bps", "ptm"]
    assert _rows(pl.DataFrame(doc["envelope"]), key, cols) == _rows(api.envelope, key, cols)
    # Ground truth from the capture's README: 36,932 packets.
    assert doc["summary"][0]["packets_read"] == 36_932
    p = run_cli("info", path)
    assert p.returncode == 0 and b"Packets:             36,932\n" in p.stdout


# ---------------------------------------------------------------- errors and exit codes


def _one_line_error(p: subprocess.CompletedProcess[bytes]) -> str:
    err = p.stderr.decode().strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


def test_missing_file(tmp_path: Path) -> None:
    for cmd in ("info", "scan", "plot", "report"):
        extra = ["-o", tmp_path / "x.png"] if cmd == "plot" else ["-o", tmp_path / "x.html"] if cmd == "report" else []
        p = run_cli(cmd, tmp_path / "nope.pcap", *extra)
        assert p.returncode == cli.EXIT_NOT_FOUND == 3
        assert "nope.pcap" in _one_line_error(p)


def test_corrupt_file(tmp_path: Path, cap: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture at all" * 10)
    p = run_cli("scan", bad)
    assert p.returncode == cli.EXIT_CAPTURE == 1
    err = _one_line_error(p)
    assert "bad.pcap" in err and "not a pcap or pcapng" in err
    # A block with an impossible length in the middle of a real capture.
    data = bytearray(cap.read_bytes())
    shb = int.from_bytes(data[4:8], "little")
    idb = int.from_bytes(data[shb + 4 : shb + 8], "little")
    first_epb = shb + idb
    second_epb = first_epb + int.from_bytes(data[first_epb + 4 : first_epb + 8], "little")
    data[second_epb + 4 : second_epb + 8] = (0x7FFFFFF0).to_bytes(4, "little")
    bad.write_bytes(bytes(data))
    p = run_cli("scan", bad, "--strict")
    assert p.returncode == 1
    _one_line_error(p)
    p = run_cli("scan", bad, "--strict", "--debug")
    assert p.returncode == 1 and b"Traceback" in p.stderr
    # Among several files, the message names the damaged one (once), not a list of candidates.
    p = run_cli("scan", cap, bad, "--strict")
    assert p.returncode == 1
    err = _one_line_error(p)
    assert f"cannot read the capture {bad}: " in err and err.count(str(bad)) == 1 and str(cap) not in err, err
    assert err.endswith(f"at byte offset {second_epb}"), err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--windows", "5 parsecs"], "5 parsecs"),
        (["--windows", "1.5ns"], "whole number of nanoseconds"),
        (["--rates", "fast"], "not a rate"),
        (["--bins", "1ms,"], "empty item"),
        (["--by", "pair,"], "such as all,pair"),
        (["--rates", ",1Gbps"], "such as 1Gbps,10Gbps"),
        (["--by", "host"], "ambiguous"),
        (["--by", "planet"], "not a grouping"),
        (["--size", "huge"], "invalid choice"),
        (["-o", "out.xlsx"], "cannot tell the format"),
        (["--table", "backlog"], "give -o FILE"),
        (["--frobnicate"], "unrecognized arguments"),
        (["--threads", "0"], "not a positive whole number"),
        (["--threads", "5000"], "more than the 1024 burstcore will start"),
        (["--max-groups", "0"], "argument --max-groups: '0' is not a positive whole number"),
        (["--max-groups", "many"], "argument --max-groups: 'many' is not a positive whole number"),
        (["--max-groups", "1.5"], "'1.5' is not a positive whole number"),
        (["--max-groups", str(2**63)], "is too large"),
        # An exponent past Decimal's context was a traceback (decimal.Overflow).
        (["--windows", "1e9999999999s"], "argument --windows: '1e9999999999s' is longer than 292 years"),
        (["--rates", "1e99999999999bps"], "'1e99999999999bps' is beyond 2^64 bit/s"),
        # Instants past int64 ns were wrapped (to 1816-03-30, 1677-09-21) and a 10th digit too.
        (
            ["--end", "9999-12-31T23:59:59Z"],
            "argument --end: '9999-12-31T23:59:59Z' is outside int64 nanoseconds since 1970 (1677-09-21 to 2262-04-11)",
        ),
        (["--end", "2262-04-12"], "argument --end: '2262-04-12' is outside int64 nanoseconds"),
        (["--start", "2026-01-01T00:00:01.5000000001Z"], "has more than nanosecond precision"),
    ],
)
def test_bad_option_values(cap: Path, args: list[str], needle: str) -> None:
    p = run_cli("scan", cap, *args)
    assert p.returncode == cli.EXIT_USAGE == 2, p.stderr
    assert needle in _one_line_error(p)


def test_plot_bad_extension_and_unwritable_output(cap: Path, tmp_path: Path) -> None:
    p = run_cli("plot", cap, "-o", tmp_path / "fig.bmp")
    assert p.returncode == 2 and ".png, .svg or .pdf" in _one_line_error(p)
    p = run_cli("scan", cap, "-o", tmp_path / "no" / "such" / "dir" / "r.json")
    assert p.returncode == cli.EXIT_OUTPUT == 4
    _one_line_error(p)


def test_help_has_examples_and_exit_codes() -> None:
    for cmd in ([], ["scan"], ["info"], ["plot"], ["report"]):
        p = run_cli(*cmd, "--help")
        assert p.returncode == 0
        out = p.stdout.decode()
        assert "examples:" in out and "exit codes:" in out and "130" in out
    p = run_cli()
    assert p.returncode == 2


# ---------------------------------------------------------------- progress and interrupt


def _slow_stdin_run(cap: Path, args: list[str], *, interrupt: bool) -> tuple[int, bytes]:
    """Run with stdin fed in two halves 0.6 s apart and stderr on a pseudo-terminal."""
    data = cap.read_bytes()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "burstcore", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    assert proc.stdin is not None
    proc.stdin.write(data[: len(data) // 2])
    proc.stdin.flush()
    time.sleep(0.6)
    if interrupt:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
    try:
        proc.stdin.write(data[len(data) // 2 :])
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, err


def test_progress_bar_on_a_terminal_only(cap: Path) -> None:
    code, err = _slow_stdin_run(cap, ["scan", "-", "--rates", "1Gbps"], interrupt=False)
    assert code == 0, err
    assert b"\r" in err and b"/s" in err  # bytes read and the rate, redrawn in place
    code, err = _slow_stdin_run(cap, ["scan", "-", "--rates", "1Gbps", "--quiet"], interrupt=False)
    assert code == 0 and b"/s" not in err
    p = run_cli("scan", cap, "--rates", "1Gbps")  # stderr is a pipe here: no bar
    assert p.returncode == 0 and p.stderr == b""


def test_interrupt_exits_130(cap: Path) -> None:
    code, err = _slow_stdin_run(cap, ["scan", "-", "--rates", "1Gbps"], interrupt=True)
    assert code == cli.EXIT_INTERRUPTED == 130
    assert b"interrupted" in err and b"Traceback" not in err


def test_progress_bar_render() -> None:
    from burstcore._progress import ProgressBar

    bar = ProgressBar("x.pcap", enabled=True)
    line = bar.render(25_000_000, 100_000_000, 2.0)
    assert "25.0%" in line and "25 MB / 100 MB" in line and "12.5 MB/s" in line and "ETA 6s" in line
    assert "ETA" not in bar.render(5_000, None, 1.0)
    assert not ProgressBar.wanted(True)


def test_plot_and_report_use_iterations_when_available(cap: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """With burstcore.iterations present (API: .iterations frame with start/end), the figure
    and the report mark the detected iterations; a failing detector only warns."""
    from types import SimpleNamespace

    import burstcore.plot as plot_mod

    ts, _ = training_like()
    starts = [min(ts) + k * 10_000_000 for k in range(6)]
    frame = pl.DataFrame({"start": starts, "end": [s + 40_000 for s in starts]}).with_columns(
        pl.all().cast(pl.Datetime("ns", "UTC"))
    )
    seen: list[object] = []
    monkeypatch.setattr(
        burstcore, "iterations", lambda src: seen.append(src) or SimpleNamespace(iterations=frame), raising=False
    )
    drawn: list[object] = []
    real = plot_mod.plot_results
    monkeypatch.setattr(plot_mod, "plot_results", lambda *a, **k: drawn.append(k.get("iterations")) or real(*a, **k))
    assert cli.main(["plot", str(cap), "-o", str(tmp_path / "f.png"), "-q"]) == 0
    # The detector's result is handed on whole (the report shows its period), its frame drawn.
    assert seen == [str(cap)] and drawn[0][0].iterations.equals(frame)  # type: ignore[index]
    assert cli.main(["report", str(cap), "-o", str(tmp_path / "r.html"), "-q"]) == 0
    assert "Training iterations (6 detected)" in (tmp_path / "r.html").read_text()

    def broken(src: object) -> object:
        raise ValueError("no periodic traffic")

    monkeypatch.setattr(burstcore, "iterations", broken, raising=False)
    assert cli.main(["plot", str(cap), "-o", str(tmp_path / "g.png"), "-q"]) == 0
    assert (tmp_path / "g.png").stat().st_size > 0
    # Named by its path on stderr, as every warning is; the page names it as its title does.
    told = f"{cap}: training iterations not detected (ValueError: no periodic traffic)"
    assert told in capsys.readouterr().err
    assert cli.main(["report", str(cap), "-o", str(tmp_path / "n.html"), "-q"]) == 0
    assert told in capsys.readouterr().err
    assert "gen.pcapng: training iterations not detected" in (tmp_path / "n.html").read_text()

    # A stretch drawn (--start/--end) shades the iterations of that stretch, found over it alone.
    asked: list[dict[str, object]] = []
    monkeypatch.setattr(
        burstcore, "iterations", lambda src, **kw: asked.append(kw) or SimpleNamespace(iterations=frame), raising=False
    )
    lo, hi = starts[1], starts[-1]
    assert cli.main(["plot", str(cap), "-o", str(tmp_path / "h.png"), "-q", "--start", str(lo), "--end", str(hi)]) == 0
    assert asked == [{"start": lo, "end": hi}]


def test_plot_and_report_find_iterations_with_the_scans_read_options(
    cap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    asked: list[dict[str, object]] = []
    monkeypatch.setattr(
        burstcore, "iterations", lambda src, **kw: asked.append(kw) or SimpleNamespace(iterations=None), raising=False
    )
    opts = ["--reorder-horizon", "50ms", "--on-late", "drop", "--strict", "--no-mmap", "--filter", "udp"]
    assert cli.main(["plot", str(cap), "-o", str(tmp_path / "f.png"), "-q", *opts]) == 0
    assert cli.main(["report", str(cap), "-o", str(tmp_path / "r.html"), "-q", *opts]) == 0
    want = {"reorder_horizon": "50000000ns", "on_late": "drop", "strict": True, "mmap": False, "filter": "udp"}
    assert asked == [want, want]
    # A default given explicitly is left out, as the defaults are.
    asked.clear()
    assert cli.main(["plot", str(cap), "-o", str(tmp_path / "g.png"), "-q", "--reorder-horizon", "10ms"]) == 0
    assert asked == [{}]


def test_a_late_packet_dropped_by_the_scan_is_dropped_for_the_iterations(tmp_path: Path) -> None:
    # One packet 30 ms late: past the default 10 ms horizon. With --on-late drop the scan drops
    # it, and the iterations shaded on the figure are found with the same option (they used to
    # be read with the default, fail on the packet and be left out with a warning).
    ts, frames = training_like()
    ts[100] -= 30_000_000
    late = tmp_path / "late.pcapng"
    late.write_bytes(oracles.capture(ts, [len(f) for f in frames], frames=frames))
    for command, out in (("plot", "f.png"), ("report", "r.html")):
        p = run_cli(command, late, "-o", tmp_path / out, "-q", "--on-late", "drop")
        assert p.returncode == 0, p.stderr
        assert b"OutOfOrderError" not in p.stderr, p.stderr
        assert b"later than" not in p.stderr, p.stderr
    p = run_cli("plot", late, "-o", tmp_path / "g.png", "-q")
    assert p.returncode == cli.EXIT_CAPTURE, p.stderr


def test_the_rates_message_offers_what_the_command_line_takes(cap: Path) -> None:
    # The API's forms end "or a number of bits per second", which the command line refuses.
    err = _one_line_error(run_cli("scan", cap, "--rates", "fast"))
    assert "argument --rates: 'fast' is not a rate; give a number with a unit, such as 10Gbps" in err, err
    assert "a number of bits per second" not in err, err
    assert "'5' has no unit: write e.g. '5bps'" in _one_line_error(run_cli("scan", cap, "--rates", "5"))
    # The API takes a number still, and says so.
    assert burstcore.parse_rate(5) == 5
    with pytest.raises(ValueError, match="or a number of bits per second"):
        burstcore.parse_rate("fast")


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-01-01T01:00:01-05", (2026, 1, 1, 6, 0, 1, 0)),
        ("2026-01-01T00:00:01.5z", (2026, 1, 1, 0, 0, 1, 500_000_000)),
        ("2026-01-01T01:00:01.500000001+01:00", (2026, 1, 1, 0, 0, 1, 500_000_001)),
    ],
)
def test_instants_in_any_zone_on_the_command_line(cap: Path, text: str, utc: tuple[int, ...]) -> None:
    # numpy's "UserWarning: no explicit representation of timezones" reached the user, with its
    # source line, and an offset dropped the ns below the µs.
    *civil, ns = utc
    want = calendar.timegm((*civil, 0, 0, 0)) * 10**9 + ns
    # Kept as written (a date, never told as a number in the wrong unit), read exactly.
    assert values._instant(text) == text and values._instant_ns(values._instant(text)) == want
    p = run_cli("scan", cap, "--windows", "1ms", "--rates", "1Gbps", "--start", text, "--format", "json", "-o", "-")
    assert p.returncode == 0, p.stderr
    # Nothing on stderr but, for an instant after every packet, the note that the range holds none.
    read = burstcore.info(cap).packets
    left_out = sum(t >= want for t in burstcore.read_packets(cap, ["timestamp"])["timestamp"].dt.epoch("ns")) == 0
    expected = f"holds none of the {read:,} packets read" if left_out else None
    lines = p.stderr.decode().splitlines()
    assert (lines == []) if expected is None else (len(lines) == 1 and expected in lines[0]), p.stderr


@pytest.mark.parametrize("cmd", ["scan", "info", "plot", "report"])
def test_a_damaged_file_is_named_by_its_path_whatever_the_command(tmp_path: Path, cmd: str) -> None:
    # plot and report named it by its base name alone, which says less than the path typed when
    # files of one name sit in several directories (one capture per host).
    bad = tmp_path / "host1" / "bad.pcap"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not a capture at all" * 10)
    extra = {"plot": ["-o", tmp_path / "x.png"], "report": ["-o", tmp_path / "x.html"]}.get(cmd, [])
    p = run_cli(cmd, bad, *extra)
    assert p.returncode == cli.EXIT_CAPTURE
    err = _one_line_error(p)
    assert str(bad) in err and "not a pcap or pcapng" in err, err


@pytest.mark.filterwarnings("ignore::burstcore.SharedPacketsWarning")
def test_scan_of_several_captures_by_interface_says_which_capture_each_group_is_of(tmp_path: Path) -> None:
    from tests.test_multi_file import captures_with_named_interfaces

    files, _ = captures_with_named_interfaces(tmp_path)
    paths = files[:3]
    p = run_cli("scan", *paths, "--by", "interface", "-q")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    heading = "Interface groups of each capture"
    assert out.count(heading) == 1
    rows = [line.split() for line in out.split(heading)[1].split("\n\n")[0].splitlines()[2:]]
    want = [("if0", paths[0], "0", "eth0"), ("if1", paths[0], "1", "eth1")]
    want += [("if2", paths[1], "0", "-"), ("if3", paths[2], "0", "eth9")]
    assert [tuple(r) for r in rows] == want
    # One capture, or another grouping: no such table.
    assert heading not in run_cli("scan", paths[0], "--by", "interface", "-q").stdout.decode()
    assert heading not in run_cli("scan", *paths, "--by", "src", "-q").stdout.decode()


@pytest.mark.filterwarnings("ignore::burstcore.SharedPacketsWarning")
def test_written_tables_of_a_scan_by_interface_say_which_capture_each_group_is_of(tmp_path: Path) -> None:
    # A CSV or parquet file holds one table: each interface group's row says which file and
    # interface it is (the labels if0, if1, ... run on from one file to the next), checked
    # against what each file was written with.
    from tests.test_multi_file import captures_with_named_interfaces

    files, written = captures_with_named_interfaces(tmp_path)
    paths = files[:3]
    want = {
        "if0": (0, paths[0], 0, "eth0"),
        "if1": (0, paths[0], 1, "eth1"),
        "if2": (1, paths[1], 0, None),
        "if3": (2, paths[2], 0, "eth9"),
    }
    cols = ["capture", "source", "interface", "interface_name"]
    opts = ["--windows", "1ms", "--rates", "1Gbps", "--bins", "1ms", "--by", "all,interface", "-q"]
    for command in ("scan", "superpose"):
        tables: dict[str, pl.DataFrame] = {}
        for table in ("envelope", "backlog", "series", "groups"):
            csv, pq = tmp_path / f"{command}-{table}.csv", tmp_path / f"{command}-{table}.parquet"
            for out in (csv, pq):
                p = run_cli(command, *paths, *opts, "-o", out, "--table", table)
                assert p.returncode == 0, p.stderr
            df = pl.read_parquet(pq)
            assert df.columns[df.columns.index("group") + 1 :][:4] == cols, df.columns
            # CSV gives durations as their ns columns alone: the columns up to them are the same.
            assert pl.read_csv(csv).columns[:6] == df.columns[:6]
            tables[table] = df
            rows = df.filter(by="interface").select("group", *cols).unique().rows()
            assert sorted(rows) == sorted((g, *w) for g, w in want.items() if g != "if3"), rows
            assert df.filter(by="all").select(cols).null_count().row(0) == (df.filter(by="all").height,) * 4
        counted = tables["groups"].filter(by="interface").select("source", "interface", "packets").rows()
        assert {(s, i): n for s, i, n in counted} == {k: v for k, v in written.items() if k[0] in paths}
        doc = json.loads(run_cli(command, *paths, *opts, "-o", "-").stdout)
        got = {(r["group"], r["capture"], r["source"], r["interface"], r["interface_name"]) for r in doc["envelope"]}
        assert got == {(g, *w) for g, w in want.items() if g != "if3"} | {("all", None, None, None, None)}
    # The terminal of superpose, as of scan, says it beside the tables.
    text = run_cli("superpose", *paths, *opts).stdout.decode()
    assert "Interface groups of each capture" in text
    # Another grouping: no such columns.
    p = run_cli("scan", *paths, "--by", "src", "-o", tmp_path / "src.csv", "-q")
    assert p.returncode == 0 and not set(cols) & set(pl.read_csv(tmp_path / "src.csv").columns)


def test_gaps_name_their_bounds_alike_in_every_output(tmp_path: Path) -> None:
    # One name for a gap's bounds: lo_ns and hi_ns in each written table, lo and hi on the
    # terminal (the histogram's file had gap_lo_ns and gap_hi_ns, the terminal from and to).
    data = oracles.capture([BASE, BASE + 10, BASE + 1000], [100] * 3)
    cap = tmp_path / "three.pcapng"
    cap.write_bytes(data)
    for table, head in (
        ("histogram", ["group", "lo_ns", "hi_ns", "gaps"]),
        ("quantiles", ["group", "q", "lo_ns", "hi_ns"]),
    ):
        out = tmp_path / f"{table}.csv"
        assert run_cli("gaps", cap, "-o", out, "--table", table).returncode == 0
        df = pl.read_csv(out)
        assert df.columns == head
    # The two gaps (10 ns and 990 ns), each in its log2 bucket [2^(k-1), 2^k - 1].
    assert pl.read_csv(tmp_path / "histogram.csv").select("lo_ns", "hi_ns").rows() == [(8, 15), (512, 1023)]
    text = run_cli("gaps", cap, "--quantiles", "0.5").stdout.decode()
    assert ["group", "gaps", "q", "lo", "hi"] in [line.split() for line in text.splitlines()], text
    assert "each lies in [lo, hi]" in text
