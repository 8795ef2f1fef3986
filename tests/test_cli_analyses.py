"""The analyses on the command line (flows, matrix, iterations, bursts) through a subprocess: their
machine outputs parse and equal the Python API's frames row for row, their terminal tables show
the API's numbers, their options reach the API, and errors give one line and a distinct exit code."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import burstcore
from burstcore import cli
from burstcore._analysis import DEFAULT_QUANTILES
from burstcore.cli import output
from tests import oracles
from tests.test_cli import BASE, run_cli, training_like, write_capture

ISO_NS = "%Y-%m-%dT%H:%M:%S%.9fZ"


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "gen.pcapng")


def two_way(path: Path, n: int = 30) -> Path:
    """UDP both ways between two port pairs (a request, then a reply 200 µs later), 1 ms apart:
    two directional flows make one biflow."""
    ts, frames = [], []
    for k in range(n):
        a, b = ("10.0.0.1", "10.0.0.2") if k % 2 else ("10.0.0.3", "10.0.0.4")
        frames += [oracles.eth_ipv4_udp(a, b, 4000, 53, payload=100 + k), oracles.eth_ipv4_udp(b, a, 53, 4000, 400)]
        ts += [BASE + k * 1_000_000, BASE + k * 1_000_000 + 200_000]
    path.write_bytes(oracles.capture(ts, [len(f) for f in frames], frames=frames))
    return path


def ok(p: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[bytes]:
    assert p.returncode == 0, p.stderr.decode()
    return p


def one_line_error(p: subprocess.CompletedProcess[bytes], code: int) -> str:
    err = p.stderr.decode().strip()
    assert p.returncode == code, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def assert_text_rows_equal(got: pl.DataFrame, api: pl.DataFrame) -> None:
    """A table read back from JSON or CSV equals the API's frame, row for row and column for column:
    times as ISO 8601 strings with every ns, a duration as its `<name>_ns` in integer ns."""
    assert got.height == api.height
    expected_cols = set()
    for name, dtype in api.schema.items():
        if isinstance(dtype, pl.Duration):
            expected_cols.add(f"{name}_ns")
            assert got[f"{name}_ns"].to_list() == api[name].dt.total_nanoseconds().to_list(), name
        elif isinstance(dtype, pl.Datetime):
            expected_cols.add(name)
            back = got[name].cast(pl.String).str.to_datetime(ISO_NS, time_unit="ns", time_zone="UTC")
            assert back.to_list() == api[name].to_list(), name
        else:
            expected_cols.add(name)
            assert got[name].to_list() == api[name].to_list(), name
    assert set(got.columns) == expected_cols


def json_table(doc: dict[str, Any], name: str) -> pl.DataFrame:
    return pl.DataFrame(doc[name], infer_schema_length=None)


# (command line, the API's tables for the same options, what the JSON meta must say)
Case = tuple[list[str], Callable[[Any], dict[str, pl.DataFrame]], Callable[[Any], dict[str, Any]]]


def _iterations(src: Any) -> Any:
    return burstcore.iterations(src, bin="500us", min_period="4ms", max_period="50ms")


def _iteration_summary(it: Any) -> pl.DataFrame:
    """The CLI's summary table: the period found, then the API's summary (the packet accounting)."""
    found = pl.DataFrame(
        {
            "period_ns": pl.Series([it.period_ns], dtype=pl.Int64),
            "confidence": pl.Series([it.confidence], dtype=pl.Float64),
            "acf_period_ns": pl.Series([it.acf_period_ns], dtype=pl.Int64),
            "bin_ns": pl.Series([it.bin_ns], dtype=pl.Int64),
            "periods_seen": pl.Series([it.periods_seen], dtype=pl.Float64),
            "period_unsure": pl.Series([bool(it.period_doubts)], dtype=pl.Boolean),
        }
    )
    return found.hstack(it.summary)


CASES: dict[str, Case] = {
    "flows": (
        ["flows", "--windows", "10us,1ms"],
        lambda src: {"flows": burstcore.flows(src, windows=["10us", "1ms"])},
        lambda src: {"config": {"windows_ns": [10_000, 1_000_000], "key": "flow"}},
    ),
    "flows-biflow": (
        ["flows", "--key", "biflow", "--idle-timeout", "2ms"],
        lambda src: {"flows": burstcore.flows(src, key="biflow", idle_timeout="2ms")},
        lambda src: {"config": {"key": "biflow", "idle_timeout_ns": 2_000_000}},
    ),
    "matrix": (
        ["matrix"],
        lambda src: {"matrix": burstcore.traffic_matrix(src)},
        lambda src: {},
    ),
    "hosts": (
        ["matrix", "--hosts"],
        lambda src: {"hosts": burstcore.host_volumes(src)},
        lambda src: {"config": {"hosts": True}},
    ),
    "iterations": (
        ["iterations", "--bin", "500us", "--min-period", "4ms", "--max-period", "50ms"],
        lambda src: {"iterations": (it := _iterations(src)).iterations, "summary": _iteration_summary(it)},
        lambda src: {
            "period_ns": (it := _iterations(src)).period_ns,
            "confidence": it.confidence,
            "config": {"bin_ns": 500_000, "min_period_ns": 4_000_000, "max_period_ns": 50_000_000},
        },
    ),
    "bursts": (
        ["bursts", "--gap", "100us"],
        lambda src: {"bursts": (b := burstcore.bursts(src, gap="100us")).bursts, **_rest(b)},
        lambda src: {"config": {"gap_ns": 100_000, "quantiles": list(DEFAULT_QUANTILES)}},
    ),
    "bursts-quantiles": (
        ["bursts", "--gap", "100us", "--quantiles", "0.5,0.99,1"],
        lambda src: {"bursts": (b := burstcore.bursts(src, gap="100us", quantiles=[0.5, 0.99, 1])).bursts, **_rest(b)},
        lambda src: {"config": {"gap_ns": 100_000, "quantiles": [0.5, 0.99, 1.0]}},
    ),
}


def _rest(b: Any) -> dict[str, pl.DataFrame]:
    return {"distributions": b.distributions, "summary": b.summary}


def _check_meta(doc: dict[str, Any], want: dict[str, Any]) -> None:
    for k, v in want.items():
        if isinstance(v, dict):
            _check_meta(doc[k], v)
        else:
            assert doc[k] == v, k


@pytest.mark.parametrize("case", list(CASES))
def test_json_csv_parquet_equal_api(case: str, cap: Path, tmp_path: Path) -> None:
    argv, api_tables, meta = CASES[case]
    api = api_tables(str(cap))
    assert all(df.height > 0 for df in api.values()), case  # something to compare
    doc = json.loads(ok(run_cli(*argv, cap, "-q", "--format", "json")).stdout)
    assert [k for k in doc if k in api] == list(api)  # every table, in the order of --table's choices
    for name, df in api.items():
        assert_text_rows_equal(json_table(doc, name), df)
    assert doc["files"] == [str(cap)] and doc["command"] == argv[0] and doc["warnings"] == []
    _check_meta(doc, meta(str(cap)))
    first = next(iter(api))
    for name, df in api.items():
        table = ["--table", name] if len(api) > 1 else []
        csv, pq = tmp_path / f"{name}.csv", tmp_path / f"{name}.parquet"
        ok(run_cli(*argv, cap, "-q", "-o", csv, *table))
        assert_text_rows_equal(pl.read_csv(csv, infer_schema_length=None), df)
        ok(run_cli(*argv, cap, "-q", "-o", pq, *table))
        assert pl.read_parquet(pq).equals(df), name  # native types, every column
    if len(api) > 1:
        # Without --table, a CSV holds the first table; with it, JSON holds that one only.
        ok(run_cli(*argv, cap, "-q", "-o", tmp_path / "default.csv"))
        assert_text_rows_equal(pl.read_csv(tmp_path / "default.csv", infer_schema_length=None), api[first])
        last = list(api)[-1]
        one = json.loads(ok(run_cli(*argv, cap, "-q", "--format", "json", "--table", last)).stdout)
        assert [k for k in one if k in api] == [last]


def test_flows_terminal_shows_the_largest_and_how_many_there_are(cap: Path) -> None:
    api = burstcore.flows(str(cap), idle_timeout="2ms")
    assert api.height == 18
    text = ok(run_cli("flows", cap, "--idle-timeout", "2ms", "--top", "3")).stdout.decode()
    assert "Flows: 18 (the largest 3 shown; all of them with -o FILE)" in text, text
    assert f"18 flows (key flow, idle timeout 2ms): {api['packets'].sum():,} packets, {api['bytes'].sum():,} bytes" in (
        text
    )
    rows = [ln.split() for ln in text.splitlines() if " > " in ln]
    assert len(rows) == 3
    heaviest = api.sort("bytes", "first_seen_ns", descending=[True, False]).head(3)
    for row, flow in zip(rows, heaviest.iter_rows(named=True), strict=True):
        assert row[:3] == [f"{flow['src']}:{flow['sport']}", ">", f"{flow['dst']}:{flow['dport']}"]
        resent = flow["retransmitted_packets"]
        assert row[-3:] == [f"{flow['packets']:,}", f"{flow['bytes']:,}", "-" if resent is None else f"{resent:,}"]
        assert row[4] == str(np.datetime64(flow["first_seen_ns"], "ns")) + "Z"
    # Every flow fits: no truncation to tell.
    text = ok(run_cli("flows", cap)).stdout.decode()
    assert "Flows: 3 (all shown)" in text and "-o FILE" not in text


def test_flows_key_reaches_the_api(tmp_path: Path) -> None:
    path = two_way(tmp_path / "two_way.pcapng")
    docs = {k: json.loads(ok(run_cli("flows", path, "--key", k, "-o", "-")).stdout) for k in ("flow", "biflow")}
    assert len(docs["flow"]["flows"]) == 4 and len(docs["biflow"]["flows"]) == 2
    biflow = burstcore.flows(str(path), key="biflow")
    assert_text_rows_equal(json_table(docs["biflow"], "flows"), biflow)
    # Each biflow holds both directions: the replies' 400-byte payloads are its dst→src bytes.
    assert all(r["dst2src_packets"] == 15 for r in docs["biflow"]["flows"])
    text = ok(run_cli("flows", path, "--key", "biflow")).stdout.decode()
    assert "<>" in text and "src→dst bytes" in text and f"{biflow['dst2src_bytes'][0]:,}" in text


def test_matrix_terminal_shows_the_heaviest_pair(cap: Path) -> None:
    api = burstcore.traffic_matrix(str(cap))
    text = ok(run_cli("matrix", cap, "--top", "1")).stdout.decode()
    top = api.row(0, named=True)
    row = next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [top["src"]])
    assert row == [top["src"], top["dst"], f"{top['bytes']:,}", f"{top['packets']:,}", f"{100 * top['share']:.2f}%"]
    assert "Pairs: 3 (the heaviest 1 shown; all of them with -o FILE)" in text, text
    assert f"{api['bytes'].sum():,} bytes" in text
    text = ok(run_cli("matrix", cap, "--hosts")).stdout.decode()
    header = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith("host "))
    assert re.split(r"\s{2,}", header) == ["host", "sent bytes", "sent packets", "received bytes", "received packets"]
    hosts = burstcore.host_volumes(str(cap))
    for h in hosts.iter_rows(named=True):
        row = next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [h["host"]])
        assert row[1:] == [f"{h[c]:,}" for c in ("sent_bytes", "sent_packets", "received_bytes", "received_packets")]


def test_hosts_output_has_the_host_columns(cap: Path) -> None:
    doc = json.loads(ok(run_cli("matrix", cap, "--hosts", "-o", "-")).stdout)
    assert "matrix" not in doc
    assert list(doc["hosts"][0]) == ["host", "sent_bytes", "sent_packets", "received_bytes", "received_packets"]
    # Every byte sent is received by a host of the capture (no packet without addresses here).
    assert sum(r["sent_bytes"] for r in doc["hosts"]) == sum(r["received_bytes"] for r in doc["hosts"])


def test_iterations_terminal_shows_the_period(cap: Path) -> None:
    api = burstcore.iterations(str(cap))
    assert api.period_ns == 10_000_000 and api.iterations.height == 6
    text = ok(run_cli("iterations", cap, "--top", "2")).stdout.decode()
    lines = [" ".join(ln.split()) for ln in text.splitlines()]
    assert "period 10ms" in lines
    assert f"confidence {api.confidence:.3f}" in lines
    assert "iterations 6" in lines
    b = api.iterations["bytes"]
    assert f"bytes per iteration mean {b.mean():,.0f}, median {b.median():,.0f}" in lines
    assert "Iterations: 6 (the first 2 shown; all of them with -o FILE)" in text
    rows = [ln.split() for ln in text.splitlines() if ln.split()[:1] in (["0"], ["1"], ["2"])]
    assert [r[0] for r in rows] == ["0", "1"]
    first = api.iterations.row(0, named=True)
    assert rows[0][1] == str(np.datetime64(first["start_ns"], "ns")) + "Z" and rows[0][4] == f"{first['bytes']:,}"


def test_iterations_terminal_shows_the_cut_ones_and_the_periods_run(cap: Path) -> None:
    """A stretch that begins and ends inside a burst: the table marks the two pieces "cut" and the
    summary names them and the iterations the period is the mean spacing over; -o carries the
    whole and in_period columns as the API gives them."""
    ts, _ = training_like()
    lo, hi = ts[60], ts[-20]  # inside the second burst and inside the last one
    api = burstcore.iterations(str(cap), start=lo, end=hi)
    assert api.iterations["whole"].to_list() == [False, True, True, True, False]
    assert api.iterations["in_period"].to_list() == [False, True, True, True, False]
    assert api.period_ns == 10_000_000
    text = ok(run_cli("iterations", cap, "--start", lo, "--end", hi)).stdout.decode()
    lines = [" ".join(ln.split()) for ln in text.splitlines()]
    assert "period over iterations 1-3 (3)" in lines
    assert "cut by an edge 2 (iterations 0, 4: not whole, left out of the period)" in lines
    rows = {r[0]: r[-2:] for r in (ln.split() for ln in text.splitlines()) if r[:1] in (["0"], ["1"], ["4"])}
    assert rows == {"0": ["cut", "no"], "1": ["yes", "yes"], "4": ["cut", "no"]}
    doc = json.loads(ok(run_cli("iterations", cap, "--start", lo, "--end", hi, "-o", "-")).stdout)
    assert [(r["whole"], r["in_period"]) for r in doc["iterations"]] == list(
        zip(api.iterations["whole"], api.iterations["in_period"], strict=True)
    )


def test_iterations_options_reach_the_api(cap: Path) -> None:
    # A search range without the 10 ms period finds none, as the API does; the meta says so.
    doc = json.loads(ok(run_cli("iterations", cap, "--min-period", "1s", "--max-period", "2s", "-o", "-")).stdout)
    api = burstcore.iterations(str(cap), min_period="1s", max_period="2s")
    assert doc["period_ns"] is api.period_ns is None and doc["confidence"] == api.confidence
    assert doc["iterations"] == []
    text = ok(run_cli("iterations", cap, "--min-period", "1s", "--max-period", "2s")).stdout.decode()
    assert "none found between 1s and 2s" in text and f"confidence {api.confidence:.3f}" in " ".join(text.split())


def test_a_capture_without_packets(tmp_path: Path) -> None:
    # Nothing to show is no error: zero rows, the tables' columns all the same.
    empty = tmp_path / "empty.pcapng"
    empty.write_bytes(oracles.capture([], []))
    for command, api, said in (
        ("flows", {"flows": burstcore.flows(str(empty))}, "0 flows (key flow, idle timeout none): 0 packets, 0 bytes"),
        ("matrix", {"matrix": burstcore.traffic_matrix(str(empty))}, "Traffic matrix: 0 host pairs; 0 packets"),
        ("bursts", _bursts_tables(burstcore.bursts(str(empty))), "bursts 0"),
        ("iterations", {"iterations": burstcore.iterations(str(empty)).iterations}, "none found between 5ms and 2s"),
    ):
        text = ok(run_cli(command, empty)).stdout.decode()
        assert said in " ".join(text.split()), text
        doc = json.loads(ok(run_cli(command, empty, "-o", "-")).stdout)
        assert doc.get(command, doc.get("matrix")) == []
        for name, df in api.items():
            got = json_table(doc, name) if doc[name] else pl.DataFrame()
            assert got.height == df.height, name
            if df.height:
                assert_text_rows_equal(got, df)
        header = ok(run_cli(command, empty, "--format", "csv")).stdout.decode().strip()
        first = next(iter(api.values()))
        assert header.split(",") == [c for c in cli.machine_frame(first).columns]


def test_bursts_terminal_shows_the_distributions_and_the_first_bursts(cap: Path) -> None:
    api = burstcore.bursts(str(cap), gap="100us")
    text = ok(run_cli("bursts", cap, "--gap", "100us", "--top", "4")).stdout.decode()
    lines = [ln.split() for ln in text.splitlines()]
    s = api.summary.row(0, named=True)
    assert ["bursts", f"{s['bursts']:,}"] in lines and ["bytes", f"{s['bytes']:,}"] in lines
    median = dict(api.distributions.filter(pl.col("q") == 0.5).select("metric", "value").iter_rows())
    assert ["0.5", f"{median['bytes']:,}", f"{median['packets']:,}"] == next(r[:3] for r in lines if r[:1] == ["0.5"])
    assert f"Bursts: {s['bursts']} (the first 4 shown; all of them with -o FILE)" in text
    first = api.bursts.row(0, named=True)
    row = next(r for r in lines if r[:2] == ["0", str(np.datetime64(first["start_ns"], "ns")) + "Z"])
    assert row[3:5] == [f"{first['bytes']:,}", f"{first['packets']:,}"] and row[5] == "-"


def test_bursts_terminal_shows_the_quantiles_asked_for(cap: Path) -> None:
    api = burstcore.bursts(str(cap), gap="100us", quantiles=[0.25, 0.75])
    text = ok(run_cli("bursts", cap, "--gap", "100us", "--quantiles", "0.25,0.75")).stdout.decode()
    rows = {r[0]: r[1:3] for r in (ln.split() for ln in text.splitlines()) if r[:1] in (["0.25"], ["0.5"], ["0.75"])}
    assert list(rows) == ["0.25", "0.75"]
    for q, (size, packets) in rows.items():
        want = dict(api.distributions.filter(pl.col("q") == float(q)).select("metric", "value").iter_rows())
        assert [size, packets] == [f"{want['bytes']:,}", f"{want['packets']:,}"], q


def test_time_range_reaches_every_analysis(cap: Path) -> None:
    ts, _ = training_like()
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    iso = str(np.datetime64(lo, "ns")) + "Z"
    calls = {
        "flows": lambda: {"flows": burstcore.flows(str(cap), start=lo, end=hi)},
        "matrix": lambda: {"matrix": burstcore.traffic_matrix(str(cap), start=lo, end=hi)},
        "bursts": lambda: _bursts_tables(burstcore.bursts(str(cap), start=lo, end=hi)),
        "iterations": lambda: {"summary": _iteration_summary(burstcore.iterations(str(cap), start=lo, end=hi))},
    }
    for command, call in calls.items():
        doc = json.loads(ok(run_cli(command, cap, "--start", iso, "--end", hi, "-o", "-")).stdout)
        assert doc["config"]["start_ns"] == lo and doc["config"]["end_ns"] == hi
        for name, df in call().items():
            assert_text_rows_equal(json_table(doc, name), df)
    doc = json.loads(ok(run_cli("bursts", cap, "--start", lo, "--end", hi, "-o", "-")).stdout)
    assert doc["summary"][0]["skipped_outside_range"] == sum(1 for t in ts if not lo <= t < hi) > 0


def _bursts_tables(b: Any) -> dict[str, pl.DataFrame]:
    return {"bursts": b.bursts, "distributions": b.distributions, "summary": b.summary}


def test_reorder_options_reach_the_api(tmp_path: Path) -> None:
    late = tmp_path / "late.pcap"
    late.write_bytes(oracles.capture([BASE, BASE + 50_000_000, BASE + 1], [100] * 3, fmt="pcap"))
    err = one_line_error(run_cli("bursts", late), cli.EXIT_CAPTURE)
    assert "--reorder-horizon" in err and "--on-late drop" in err and "on_late" not in err, err
    doc = json.loads(ok(run_cli("bursts", late, "--on-late", "drop", "-o", "-")).stdout)
    api = burstcore.bursts(str(late), on_late="drop")
    assert doc["summary"][0]["skipped_late"] == api.summary["skipped_late"][0] == 1
    doc = json.loads(ok(run_cli("flows", late, "--reorder-horizon", "60ms", "-o", "-")).stdout)
    assert doc["config"]["reorder_horizon_ns"] == 60_000_000 and doc["warnings"] == []


def test_several_files_merged_and_stdin(tmp_path: Path) -> None:
    a = write_capture(tmp_path / "a.pcapng", n_iter=3)
    b = write_capture(tmp_path / "b.pcap", fmt="pcap", n_iter=5)
    both = [str(a), str(b)]
    apis = {
        "flows": lambda: {"flows": burstcore.flows(both)},
        "matrix": lambda: {"matrix": burstcore.traffic_matrix(both)},
        "bursts": lambda: _bursts_tables(burstcore.bursts(both)),
        "iterations": lambda: {"iterations": burstcore.iterations(both).iterations},
    }
    for command, call in apis.items():
        api = call()
        merged = json.loads(ok(run_cli(command, a, b, "-o", "-")).stdout)
        piped = json.loads(ok(run_cli(command, a, "-", "-o", "-", stdin=b.read_bytes())).stdout)
        assert merged["files"] == both and piped["files"] == [str(a), "-"]
        for name, df in api.items():
            assert_text_rows_equal(json_table(merged, name), df)
            assert_text_rows_equal(json_table(piped, name), df)
    # The two captures overlap in time: merged, each pair carries the sum of both.
    one = [burstcore.traffic_matrix(str(f)) for f in (a, b)]
    assert apis["matrix"]()["matrix"]["bytes"][0] == one[0]["bytes"][0] + one[1]["bytes"][0]
    text = ok(run_cli("matrix", a, "-", stdin=b.read_bytes())).stdout.decode()
    assert text.startswith(f"== 2 files merged: {a}, -")


def test_missing_file_bad_values_and_unwritable_output(cap: Path, tmp_path: Path) -> None:
    for command in ("flows", "matrix", "iterations", "bursts"):
        err = one_line_error(run_cli(command, cap, tmp_path / "nope.pcap"), cli.EXIT_NOT_FOUND)
        assert "nope.pcap" in err
        err = one_line_error(run_cli(command, cap, "-o", tmp_path / "no" / "such" / "r.json"), cli.EXIT_OUTPUT)
        assert "does not exist" in err
    folder = tmp_path / "out.csv"
    folder.mkdir()
    assert "it is a folder" in one_line_error(run_cli("bursts", cap, "-o", folder), cli.EXIT_OUTPUT)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["flows", "--idle-timeout", "5 parsecs"], ["--idle-timeout: '5 parsecs' is not a duration", "e.g. 250us"]),
        (["flows", "--idle-timeout", "5"], ["'5' has no unit: write e.g. '5s' or '5ms'"]),
        (["flows", "--windows", "1ms,"], ["empty item"]),
        (["flows", "--key", "biflow", "--windows", "1ms"], ["use --key flow or flow4 with --windows"]),
        (["flows", "--idle-timeout", "1s", "--windows", "1ms"], ["drop --idle-timeout to get --windows"]),
        (["flows", "--key", "host"], ["invalid choice"]),
        (["flows", "--max-flows", "0"], ["not a positive whole number"]),
        (["matrix", "--max-pairs", "lots"], ["not a positive whole number"]),
        (["bursts", "--gap", "1 fortnight"], ["--gap: '1 fortnight' is not a duration", "ns, us, ms, s, min or h"]),
        # An exponent past Decimal's context was a traceback (decimal.Overflow).
        (["bursts", "--gap", "1e9999999999s"], ["--gap: '1e9999999999s' is longer than 292 years"]),
        (["iterations", "--bin", "0ms"], ["--bin: '0ms' must be > 0"]),
        (
            ["iterations", "--min-period", "10ms", "--max-period", "5ms"],
            ["--max-period (5ms) must exceed --min-period"],
        ),
        (["iterations", "--top", "-1"], ["--top: '-1' is not a positive whole number"]),
        (["bursts", "--start", "noon"], ["'noon' is not an instant"]),
        (["bursts", "--table", "summary"], ["--table chooses", "give -o FILE"]),
        (["matrix", "--table", "matrix"], ["unrecognized arguments"]),
        (["bursts", "-o", "out.xlsx"], ["cannot tell the format"]),
    ],
)
def test_bad_values_exit_2_with_one_line(cap: Path, argv: list[str], needles: list[str]) -> None:
    err = one_line_error(run_cli(*argv[:1], cap, *argv[1:]), cli.EXIT_USAGE)
    for needle in needles:
        assert needle in err, err


def test_a_limit_reached_names_its_option(cap: Path) -> None:
    err = one_line_error(run_cli("flows", cap, "--max-flows", "2"), cli.EXIT_CAPTURE)
    assert err.startswith(
        "burstcore flows: error: stopped at a limit (the capture itself is fine): more than 2 flows"
    ), err
    assert "raise --max-flows" in err and "max_flows" not in err.replace("--max-flows", "")
    err = one_line_error(run_cli("matrix", cap, "--max-pairs", "1"), cli.EXIT_CAPTURE)
    assert "raise --max-pairs" in err, err


def test_tables_to_a_text_file_and_json_in_slices(cap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = ok(run_cli("bursts", cap, "-q")).stdout
    ok(run_cli("bursts", cap, "-q", "-o", tmp_path / "bursts.txt"))
    assert (tmp_path / "bursts.txt").read_bytes() == shown
    # Rows written a slice at a time (here 4; 20,000 by default) make the same document.
    whole = tmp_path / "whole.json"
    argv = ["flows", str(cap), "--idle-timeout", "2ms", "-q", "--format", "json"]
    assert cli.main([*argv, "-o", str(whole)]) == 0
    monkeypatch.setattr(output, "_ROWS_AT_ONCE", 4)
    # The patch takes where the writers read it: 9 rows are 3 pieces.
    assert len(list(output._csv_chunks(pl.DataFrame({"x": range(9)})))) == 3
    sliced = tmp_path / "sliced.json"
    assert cli.main([*argv, "-o", str(sliced)]) == 0
    doc = json.loads(sliced.read_text())
    assert doc == json.loads(whole.read_text()) and len(doc["flows"]) == 18


def test_help_of_the_analyses() -> None:
    main = ok(run_cli("--help")).stdout.decode()
    for command in ("flows", "matrix", "iterations", "bursts"):
        assert f"  burstcore {command} trace.pcapng" in main, command
        out = ok(run_cli(command, "--help")).stdout.decode()
        assert "examples:" in out and "exit codes:" in out and "--reorder-horizon" in out and "--top N" in out
        assert "(default: 20)" in out and "SIGBUS" in out, command


def test_one_of_a_kind_is_said_in_the_singular(tmp_path: Path) -> None:
    one = tmp_path / "one.pcapng"
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 4000, 53, payload=10)
    one.write_bytes(oracles.capture([BASE], [len(frame)], frames=[frame]))
    out = ok(run_cli("matrix", one)).stdout.decode()
    assert f"Traffic matrix: 1 host pair; 1 packet, {len(frame)} bytes" in out
    out = ok(run_cli("flows", one)).stdout.decode()
    assert "1 flow (key flow" in out and "1 packet," in out
