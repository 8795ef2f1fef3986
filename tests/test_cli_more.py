"""sizes, gaps and superpose on the command line through a subprocess: their machine outputs equal
the Python API's frames row for row, their terminal tables show the API's numbers, their options
reach the API, and errors give one line and a distinct exit code."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import burstcore
from burstcore import cli
from burstcore._analysis import DEFAULT_QUANTILES
from burstcore._units import format_duration
from burstcore.cli import words
from tests import oracles
from tests.test_cli import BASE, run_cli, training_like, write_capture
from tests.test_cli_analyses import _check_meta, assert_text_rows_equal, json_table, ok, one_line_error


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "gen.pcapng")


def _distribution_tables(d: Any) -> dict[str, pl.DataFrame]:
    return {"quantiles": d.quantiles, "histogram": d.histogram, "groups": d.groups, "summary": d.summary}


def _superpose_tables(r: Any) -> dict[str, pl.DataFrame]:
    tables = {"gain": r.multiplexing_gain}
    return tables | {name: getattr(r, name) for name in ("envelope", "backlog", "series", "groups", "summary")}


SUPERPOSE_KW: dict[str, Any] = {"offsets": ["0ns", "-3ms"], "windows": ["10us", "1ms", "5ms"], "bins": ["1ms"]}

# (command line before the files, how many times the capture is given, the API's tables for the
# same options, what the JSON meta must say)
Case = tuple[list[str], int, Callable[[str], dict[str, pl.DataFrame]], dict[str, Any]]

CASES: dict[str, Case] = {
    "sizes": (
        ["sizes"],
        1,
        lambda src: _distribution_tables(burstcore.sizes(src)),
        {"config": {"by": None, "quantiles": list(DEFAULT_QUANTILES), "max_groups": 10_000}},
    ),
    "sizes-by-pair": (
        ["sizes", "--by", "pair", "--quantiles", "0.5,0.9,1"],
        1,
        lambda src: _distribution_tables(burstcore.sizes(src, by="pair", quantiles=[0.5, 0.9, 1])),
        {"config": {"by": "pair", "quantiles": [0.5, 0.9, 1.0]}},
    ),
    "gaps-by-src": (
        ["gaps", "--by", "src", "--quantiles", "0,0.25,0.99"],
        1,
        lambda src: _distribution_tables(burstcore.gaps(src, by="src", quantiles=[0, 0.25, 0.99])),
        {"config": {"by": "src", "quantiles": [0.0, 0.25, 0.99]}},
    ),
    "superpose": (
        ["superpose", "--offsets", "0,-3ms", "--windows", "10us,1ms,5ms", "--bins", "1ms"],
        2,
        lambda src: _superpose_tables(burstcore.superpose([src, src], **SUPERPOSE_KW)),
        {"config": {"offsets_ns": [0, -3_000_000], "windows_ns": [10_000, 1_000_000, 5_000_000]}},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_json_csv_parquet_equal_api(case: str, cap: Path, tmp_path: Path) -> None:
    argv, copies, api_tables, meta = CASES[case]
    files = [cap] * copies
    api = api_tables(str(cap))
    assert all(df.height > 0 for df in api.values()), case  # something to compare
    doc = json.loads(ok(run_cli(*argv, *files, "-q", "--format", "json")).stdout)
    assert [k for k in doc if k in api] == list(api)  # every table, in the order of --table's choices
    for name, df in api.items():
        assert_text_rows_equal(json_table(doc, name), df)
    assert doc["files"] == [str(f) for f in files] and doc["command"] == argv[0] and doc["warnings"] == []
    _check_meta(doc, meta)
    for name, df in api.items():
        csv, pq = tmp_path / f"{name}.csv", tmp_path / f"{name}.parquet"
        ok(run_cli(*argv, *files, "-q", "-o", csv, "--table", name))
        assert_text_rows_equal(pl.read_csv(csv, infer_schema_length=None), df)
        ok(run_cli(*argv, *files, "-q", "-o", pq, "--table", name))
        assert pl.read_parquet(pq).equals(df), name  # native types, every column
    # Without --table, a CSV holds the first table; with it, JSON holds that one only.
    first, last = next(iter(api)), list(api)[-1]
    ok(run_cli(*argv, *files, "-q", "-o", tmp_path / "default.csv"))
    assert_text_rows_equal(pl.read_csv(tmp_path / "default.csv", infer_schema_length=None), api[first])
    one = json.loads(ok(run_cli(*argv, *files, "-q", "--format", "json", "--table", last)).stdout)
    assert [k for k in one if k in api] == [last]


def assert_table(doc: dict[str, Any], name: str, api: pl.DataFrame) -> None:
    """The JSON's table `name` is the API's frame (an empty one: no rows, whose columns JSON cannot say)."""
    if api.height == 0:
        assert doc[name] == [], name
    else:
        assert_text_rows_equal(json_table(doc, name), api)


def _lines(text: str) -> list[list[str]]:
    return [ln.split() for ln in text.splitlines()]


def test_sizes_terminal_shows_the_quantiles_of_the_largest_groups(cap: Path) -> None:
    api = burstcore.sizes(str(cap), by="pair")
    text = ok(run_cli("sizes", cap, "--by", "pair", "--top", "2")).stdout.decode()
    whole = api.groups.row(0, named=True)
    assert f"Packet sizes (wire bytes): {whole['packets']:,} packets, {whole['bytes']:,} bytes" in text
    assert "Groups by pair: 3 (the largest 2 shown; all of them with -o FILE)" in text, text
    lines = _lines(text)
    header = next(r for r in lines if r[:2] == ["group", "packets"])
    assert header[2:] == [f"{q:g}" for q in DEFAULT_QUANTILES]
    # The whole traffic first, then the two pairs with the most packets (a tie: by name).
    largest = api.groups.filter(pl.col("group") != "all").sort("packets", "group", descending=[True, False])
    shown = ["all", *largest["group"].head(2)]
    rows = [r for r in lines if r[:1] and r[0] in api.groups["group"].to_list()]
    assert [r[0] for r in rows] == shown
    for row in rows:
        g = api.groups.filter(pl.col("group") == row[0]).row(0, named=True)
        values = api.quantiles.filter(pl.col("group") == row[0])["value"].to_list()
        assert row[1:] == [f"{g['packets']:,}", *(f"{v:,}" for v in values)], row
    assert largest["group"][2] not in text
    # Without --by: the whole traffic alone, no line about groups.
    text = ok(run_cli("sizes", cap, "--quantiles", "0.5")).stdout.decode()
    median = burstcore.sizes(str(cap), quantiles=[0.5]).quantiles["value"][0]
    assert ["all", f"{whole['packets']:,}", f"{median:,}"] in _lines(text) and "Groups by" not in text


def test_gaps_terminal_shows_the_bounds_as_durations(cap: Path) -> None:
    api = burstcore.gaps(str(cap), by="src", quantiles=[0.5, 0.99])
    text = ok(run_cli("gaps", cap, "--by", "src", "--quantiles", "0.5,0.99")).stdout.decode()
    whole = api.groups.filter(pl.col("group") == "all").row(0, named=True)
    lo, hi = format_duration(whole["min_ns"]), format_duration(whole["max_ns"])
    assert f"Gaps between consecutive packets: {whole['gaps']:,} gaps (min {lo}, max {hi})" in text, text
    assert "Groups by src: 3 (all shown)" in text
    lines = _lines(text)
    for g in api.groups.iter_rows(named=True):
        q = api.quantiles.filter(pl.col("group") == g["group"])
        at = lines.index(
            [g["group"], f"{g['gaps']:,}", "0.5", format_duration(q["lo_ns"][0]), format_duration(q["hi_ns"][0])]
        )
        assert lines[at + 1] == ["0.99", format_duration(q["lo_ns"][1]), format_duration(q["hi_ns"][1])]


def test_superpose_terminal_shows_offsets_gain_and_the_merge(cap: Path) -> None:
    api = burstcore.superpose([str(cap), str(cap)], **SUPERPOSE_KW)
    text = ok(run_cli("superpose", cap, cap, "--offsets", "0,-3ms", "--windows", "10us,1ms,5ms")).stdout.decode()
    lines = _lines(text)
    assert "Offsets added to each capture's timestamps (as given)" in text
    # Numbered from 1, as the warnings and every other command number the captures.
    assert ["1:", str(cap), "0ns"] in lines and ["2:", str(cap), "-3ms"] in lines
    assert "(1: their worst bursts coincide; 2: fully interleaved;" in text
    gains = [r for r in lines if r[:1] in (["10us"], ["1ms"], ["5ms"]) and len(r) == 4]
    assert len(gains) == 3
    for row, g in zip(gains, api.multiplexing_gain.iter_rows(named=True), strict=True):
        assert row == [
            format_duration(g["window_ns"]),
            f"{g['sum_single_bytes']:,}",
            f"{g['merged_bytes']:,}",
            f"{g['gain']:.4g}",
        ]
    assert [g[3] for g in gains] == ["2", "2", "1"]  # the copies' bursts interleave below 3 ms
    # The merge, measured as scan measures a capture: its E(τ) per window.
    assert "== the merge of the 2 captures, as scan measures a capture" in text
    env = api.envelope.filter(pl.col("window_ns") == 1_000_000).row(0, named=True)
    assert any(r[:3] == ["1ms", f"{env['bytes']:,}", f"{env['packets']:,}"] for r in lines)


def test_superpose_random_offsets_are_the_apis(cap: Path) -> None:
    api = burstcore.superpose([str(cap)] * 3, offsets="random", max_offset="5ms", seed=7, windows=["1ms"])
    argv = ["superpose", cap, cap, cap, "--random-offsets", "--max-offset", "5ms", "--seed", "7", "--windows", "1ms"]
    doc = json.loads(ok(run_cli(*argv, "-o", "-")).stdout)
    assert doc["config"]["offsets_ns"] == api.offsets_ns and api.offsets_ns[0] == 0 and len(set(api.offsets_ns)) == 3
    assert doc["config"]["random_offsets"] is True
    assert doc["config"]["seed"] == 7 and doc["config"]["max_offset_ns"] == 5_000_000
    assert_text_rows_equal(json_table(doc, "gain"), api.multiplexing_gain)
    text = ok(run_cli(*argv)).stdout.decode()
    assert "(random from 0 to 5ms, seed 7; the first stays put)" in text
    for k, off in enumerate(api.offsets_ns, start=1):
        assert [f"{k}:", str(cap), format_duration(off)] in _lines(text)
    # Another seed, other offsets; none given, all 0.
    other = json.loads(ok(run_cli(*argv[:-4], "--seed", "8", "-o", "-")).stdout)
    assert other["config"]["offsets_ns"] != api.offsets_ns
    plain = json.loads(ok(run_cli("superpose", cap, cap, "-o", "-")).stdout)
    assert plain["config"]["offsets_ns"] == [0, 0] and plain["config"]["random_offsets"] is False


def test_an_offset_list_that_starts_below_zero(cap: Path) -> None:
    api = burstcore.superpose([str(cap), str(cap)], offsets=["-3ms", 0], windows=["1ms"])
    for spelling in (["--offsets", "-3ms,0"], ["--offsets=-3ms,0"], ["--offsets", "-0.003s,+0"]):
        doc = json.loads(ok(run_cli("superpose", cap, cap, *spelling, "--windows", "1ms", "-o", "-")).stdout)
        assert doc["config"]["offsets_ns"] == [-3_000_000, 0] == api.offsets_ns, spelling
        assert_text_rows_equal(json_table(doc, "gain"), api.multiplexing_gain)
    # Only an offset is joined to its option: a negative number elsewhere is still argparse's.
    valued = words._valued_options(cli.build_parser())
    assert words._negative_values(["superpose", "a", "--offsets", "-1ms,0", "--top", "-1"], valued) == [
        "superpose",
        "a",
        "--offsets=-1ms,0",
        "--top",
        "-1",
    ]
    # Any option's value that starts with '-' is read as its value and told what is wrong with it
    # (argparse said --windows "expected one argument").
    p = run_cli("scan", cap, "--windows", "-1ms")
    assert p.returncode == cli.EXIT_USAGE and b"argument --windows: '-1ms' must be > 0" in p.stderr, p.stderr
    p = run_cli("scan", cap, "--bins", "-.5ms", "--rates", "1Gbps")
    assert p.returncode == cli.EXIT_USAGE and b"argument --bins: '-.5ms' must be > 0" in p.stderr, p.stderr


def test_superpose_measurement_options_reach_the_api(cap: Path) -> None:
    kw: dict[str, Any] = {
        "offsets": [0, "1ms"],
        "windows": ["100us"],
        "rates": ["1Gbps"],
        "by": ["all", "pair"],
        "closed": "both",
    }
    api = burstcore.superpose([str(cap), str(cap)], **kw)
    argv = ["--offsets", "0,1ms", "--windows", "100us", "--rates", "1Gbps", "--by", "all,pair", "--closed", "both"]
    doc = json.loads(ok(run_cli("superpose", cap, cap, *argv, "-o", "-")).stdout)
    for name, df in _superpose_tables(api).items():
        assert_table(doc, name, df)
    assert doc["config"]["rates_bps"] == [10**9] and doc["config"]["by"] == ["all", "pair"]
    assert doc["config"]["closed"] == "both"
    text = ok(run_cli("superpose", cap, cap, *argv, "--top", "1")).stdout.decode()
    assert "Groups by pair: 3 (largest 1 shown; all of them with -o FILE)" in text


def test_time_range_and_filter_reach_every_command(cap: Path) -> None:
    ts, _ = training_like()
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    read = {"start": lo, "end": hi, "filter": "src host 10.0.0.1 or src host 10.0.0.3"}
    argv = ["--start", str(lo), "--end", str(hi), "--filter", read["filter"]]
    calls: dict[str, tuple[list[Any], Callable[[], dict[str, pl.DataFrame]]]] = {
        "sizes": ([cap], lambda: _distribution_tables(burstcore.sizes(str(cap), by="src", **read))),
        "gaps": ([cap], lambda: _distribution_tables(burstcore.gaps(str(cap), by="src", **read))),
        "superpose": (
            [cap, cap, "--offsets", "0,2ms"],
            lambda: _superpose_tables(burstcore.superpose([str(cap)] * 2, offsets=[0, "2ms"], by="src", **read)),
        ),
    }
    for command, (files, call) in calls.items():
        doc = json.loads(ok(run_cli(command, *files, "--by", "src", *argv, "-o", "-")).stdout)
        assert doc["config"]["start_ns"] == lo and doc["config"]["end_ns"] == hi
        assert doc["config"]["filter"] == read["filter"]
        for name, df in call().items():
            assert_table(doc, name, df)
        summary = doc["summary"][0]
        assert summary["skipped_outside_range"] > 0 and summary["skipped_filtered"] > 0, command
        assert "10.0.0.2" not in {g["group"] for g in doc["groups"]}


def test_several_files_merged_and_stdin(tmp_path: Path) -> None:
    a = write_capture(tmp_path / "a.pcapng", n_iter=3)
    b = write_capture(tmp_path / "b.pcap", fmt="pcap", n_iter=5)
    for command, analyse in (("sizes", burstcore.sizes), ("gaps", burstcore.gaps)):
        api = _distribution_tables(analyse([str(a), str(b)], by="pair"))
        merged = json.loads(ok(run_cli(command, a, b, "--by", "pair", "-o", "-")).stdout)
        piped = json.loads(ok(run_cli(command, a, "-", "--by", "pair", "-o", "-", stdin=b.read_bytes())).stdout)
        assert piped["files"] == [str(a), "-"]
        for name, df in api.items():
            assert_text_rows_equal(json_table(merged, name), df)
            assert_text_rows_equal(json_table(piped, name), df)
    api = burstcore.superpose([str(a), str(b)], offsets=[0, "1ms"], windows=["1ms"])
    doc = json.loads(
        ok(
            run_cli("superpose", a, "-", "--offsets", "0,1ms", "--windows", "1ms", "-o", "-", stdin=b.read_bytes())
        ).stdout
    )
    assert_text_rows_equal(json_table(doc, "gain"), api.multiplexing_gain)
    text = ok(run_cli("superpose", a, "-", stdin=b.read_bytes())).stdout.decode()
    assert "2: stdin" in text and text.startswith(f"== 2 files merged: {a}, -")


def test_a_capture_without_packets(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pcapng"
    empty.write_bytes(oracles.capture([], []))
    text = ok(run_cli("sizes", empty)).stdout.decode()
    assert "Packet sizes (wire bytes): 0 packets, 0 bytes" in text
    assert "Quantiles of the packet size: none (no packets)" in text and "n/a" not in text
    text = ok(run_cli("gaps", empty, "--quantiles", "0.5")).stdout.decode()
    assert "Gaps between consecutive packets: none (no packets)" in text and "n/a" not in text
    doc = json.loads(ok(run_cli("gaps", empty, "-o", "-")).stdout)
    assert doc["histogram"] == [] and {r["lo_ns"] for r in doc["quantiles"]} == {None}
    doc = json.loads(ok(run_cli("superpose", empty, empty, "--windows", "1ms", "-o", "-")).stdout)
    api = burstcore.superpose([str(empty)] * 2, windows=["1ms"])
    for name, df in _superpose_tables(api).items():
        assert_table(doc, name, df)
    text = ok(run_cli("superpose", empty, empty, "--windows", "1ms")).stdout.decode()
    assert "Multiplexing gain: none (no packets)" in text


def test_a_limit_reached_names_its_option(cap: Path) -> None:
    err = one_line_error(run_cli("sizes", cap, "--by", "pair", "--max-groups", "2"), cli.EXIT_CAPTURE)
    assert "raise --max-groups" in err and "max_groups" not in err, err
    err = one_line_error(run_cli("superpose", cap, cap, "--by", "pair", "--max-groups", "2"), cli.EXIT_CAPTURE)
    assert "raise --max-groups" in err, err
    ok(run_cli("gaps", cap, "--by", "pair", "--max-groups", "3"))


def test_missing_file_and_unwritable_output(cap: Path, tmp_path: Path) -> None:
    for command in ("sizes", "gaps", "superpose"):
        err = one_line_error(run_cli(command, cap, tmp_path / "nope.pcap"), cli.EXIT_NOT_FOUND)
        assert "nope.pcap" in err
        err = one_line_error(run_cli(command, cap, cap, "-o", tmp_path / "no" / "such" / "r.json"), cli.EXIT_OUTPUT)
        assert "does not exist" in err


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["sizes", "--by", "src,dst"], ["--by: 'src,dst': give one grouping"]),
        (["sizes", "--by", "host"], ["'host' is ambiguous"]),
        (["gaps", "--by", "pairs"], ["'pairs' is not a grouping"]),
        (["sizes", "--quantiles", "0.5,1.5"], ["--quantiles: quantile 1.5 must be a number from 0 to 1"]),
        (["gaps", "--quantiles", "median"], ["'median' is not a number from 0 to 1"]),
        (["gaps", "--quantiles", "0.5,,0.9"], ["empty item"]),
        (["bursts", "--quantiles", "0.5,1.5"], ["--quantiles: quantile 1.5 must be a number from 0 to 1"]),
        (["bursts", "--quantiles", "p99"], ["--quantiles: 'p99' is not a number from 0 to 1"]),
        (["bursts", "--quantiles", ","], ["empty item", "0.5,0.9,0.99"]),
        (["sizes", "--max-groups", "0"], ["not a positive whole number"]),
        (["gaps", "--table", "quantiles"], ["--table chooses", "give -o FILE"]),
        (["sizes", "--windows", "1ms"], ["unrecognized arguments"]),
        (["superpose", "--offsets", "0,5"], ["--offsets: '5' has no unit"]),
        (["superpose", "--offsets", "0,1e9999999999s"], ["--offsets: '1e9999999999s' is longer than 292 years"]),
        (["superpose", "--rates", "1e99999999999bps"], ["'1e99999999999bps' is beyond 2^64 bit/s"]),
        (["superpose", "--offsets", "0,3 parsecs"], ["'3 parsecs' is not a duration", "e.g. 250us"]),
        (["superpose", "--offsets", "0"], ["--offsets gives 1 offset for 2 files"]),
        (["superpose", "--offsets", "0,1ms", "--random-offsets"], ["not allowed with argument --offsets"]),
        (["superpose", "--seed", "3"], ["--max-offset and --seed are for random offsets: add --random-offsets"]),
        (["superpose", "--random-offsets", "--seed", "-1"], ["--seed: '-1' is not a non-negative whole number"]),
        (["superpose", "--random-offsets", "--max-offset=-1s"], ["--max-offset: '-1s' must be ≥ 0"]),
        (["superpose", "--windows", "1ms,"], ["empty item"]),
        (["superpose", "--rates", "fast"], ["'fast' is not a rate"]),
        (["superpose", "--by", "host"], ["'host' is ambiguous"]),
        (["superpose", "--table", "flows"], ["invalid choice"]),
        (["superpose", "--start", "noon"], ["'noon' is not an instant"]),
        (["superpose", "--filter", "port"], ["filter"]),
    ],
)
def test_bad_values_exit_2_with_one_line(cap: Path, argv: list[str], needles: list[str]) -> None:
    files = [cap, cap] if argv[0] == "superpose" else [cap]
    err = one_line_error(run_cli(*argv[:1], *files, *argv[1:]), cli.EXIT_USAGE)
    for needle in needles:
        assert needle in err, err


def test_superpose_needs_two_captures(cap: Path) -> None:
    err = one_line_error(run_cli("superpose", cap), cli.EXIT_USAGE)
    assert "superpose merges two captures or more" in err and "--offsets 0,3ms" in err


def test_help_of_the_commands() -> None:
    main = ok(run_cli("--help")).stdout.decode()
    for command in ("sizes", "gaps", "superpose"):
        assert re.search(rf"^  burstcore {command} trace\.pcapng", main, re.M), command
        out = ok(run_cli(command, "--help")).stdout.decode()
        assert "examples:" in out and "exit codes:" in out and "--reorder-horizon" in out and "--filter EXPR" in out
        assert "--top N" in out and "--max-groups N" in out, command
    assert "(default: 20)" in ok(run_cli("sizes", "--help")).stdout.decode()
    out = ok(run_cli("superpose", "--help")).stdout.decode()
    assert (
        "--offsets=-2s,0" in out
        and "(default: 5)" in out
        and "{gain,singles,envelope,backlog,series,groups,summary}" in out
    )


def test_review_fixes_sizes_above_65535_superpose_past_2262_and_messages(tmp_path: Path) -> None:
    import warnings as _w

    # A quantile above 65,535 is the exact size (it was shown as the range 65,536–100,000 of
    # the one bucket all such sizes shared).
    big = tmp_path / "gro.pcap"
    big.write_bytes(oracles.capture([BASE, BASE + 1000, BASE + 2000], [60, 70_000, 100_000], fmt="pcap"))
    out = run_cli("sizes", big, "--quantiles", "0,0.5,1")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.decode().splitlines() if line.strip().startswith("all"))
    assert row.split()[2:] == ["60", "70,000", "100,000"], row
    # A capture moved past 2262 by its offset is said to be missing from the merge.
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        r = burstcore.superpose([str(big), str(big)], offsets=[0, "2500000h"], windows=["1ms"], rates=["1Gbps"])
    told = [str(w.message) for w in caught]
    # The second capture, numbered from 1 as every message numbers them.
    assert any("capture 2 gave the merge no packet" in t and "1677-09-21 to 2262-04-11" in t for t in told), told
    assert r.summary["skipped_timestamp_out_of_range"][0] == 3
    # superpose parses max_groups as the others do.
    with pytest.raises(ValueError, match="max_groups"):
        burstcore.superpose([str(big), str(big)], max_groups="10")  # type: ignore[arg-type]
    # sizes/gaps group by one grouping at a time, and say so.
    with pytest.raises(ValueError, match="one grouping at a time"):
        burstcore.sizes(str(big), by=["src", "dst"])
    # An empty time range names its instants, not raw ns.
    with pytest.raises(ValueError, match=r"start \(2000-01-01T00:00:00.000000000Z\) is not before end"):
        burstcore.scan(str(big), start="2000-01-01T00:00:00Z", end="1999-01-01T00:00:00Z")
