"""The command line's JSON output, built a column at a time, against its definition: the text
json.dumps gives for the whole document with each table's rows as dicts (what it wrote a row at a
time, 20 µs a row): same separators, key order, exact integers past 2^53, null, \\u escapes,
Python's float layout, and the same error for a value JSON cannot hold."""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import math
import struct
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burstcore import cli
from burstcore.cli import output
from tests.test_cli import write_capture


def _written(meta: dict[str, Any], tables: dict[str, pl.DataFrame], table: str | None = None) -> str:
    return "".join(output._json_chunks(meta, tables, argparse.Namespace(table=table)))


def _dumped(meta: dict[str, Any], tables: dict[str, pl.DataFrame], table: str | None = None) -> str:
    chosen = [table] if table else list(tables)
    doc = {**meta, **{name: cli.machine_frame(tables[name]).to_dicts() for name in chosen}}
    return json.dumps(doc, allow_nan=False, default=str) + "\n"


def _same(meta: dict[str, Any], tables: dict[str, pl.DataFrame], table: str | None = None) -> None:
    try:
        expected = _dumped(meta, tables, table)
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)):
            _written(meta, tables, table)
        return
    assert _written(meta, tables, table) == expected


U64 = 2**64 - 1
EDGE_FRAMES = {
    "ints": pl.DataFrame(
        {
            "u64": pl.Series([0, U64, 2**53 + 1, None], dtype=pl.UInt64),
            "i64": pl.Series([-(2**63), 2**63 - 1, -(2**53) - 1, None], dtype=pl.Int64),
            "u8": pl.Series([0, 255, None, 7], dtype=pl.UInt8),
            "i8": pl.Series([-128, 127, None, 0], dtype=pl.Int8),
        }
    ),
    "floats": pl.DataFrame(
        {
            "f": [0.0, -0.0, 1e-5, 1e-4, 9.99e-5, 1e16, 1e15 + 0.5, 0.1, math.nan, math.inf, -math.inf, None, 5e-324],
            "f32": pl.Series(
                [0.1, 1e-6, 3e38, -0.0, None, 1.5, math.nan, 7.0, 1e20, 2.5e-5, 0.3, 1e-4, 16777217.0]
            ).cast(pl.Float32),
        }
    ),
    "strings": pl.DataFrame(
        {
            "s": [
                "",
                "plain",
                'q"uote',
                "back\\slash",
                "tab\tnl\n",
                "\x00\x1f\x7f",
                "é ü",
                "日本",
                "😀",
                None,
                "\u2028",
                "~ !#[]",
            ],
            "c": pl.Series(["x", "é", "x", None, "y", "y", "😀", "x", "x", "x", "x", "x"], dtype=pl.Categorical),
        }
    ),
    "booleans": pl.DataFrame({"b": [True, False, None]}),
    "nulls": pl.DataFrame({"n": pl.Series([None, None], dtype=pl.Null), "s": pl.Series([None, None], dtype=pl.String)}),
    "lists": pl.DataFrame(
        {
            "l": pl.Series([[1, 2], [], None, [2**63]], dtype=pl.List(pl.UInt64)),
            "s": [["a", "é"], None, [None], ["x"]],
            "f": [[1.5, None], [0.1], [], None],
        }
    ),
    "nan in a list": pl.DataFrame({"f": [[1.5, math.nan]]}),
    "struct": pl.DataFrame({"st": [{"a": 1, "b": "é"}, None, {"a": None, "b": "x"}]}),
    "others": pl.DataFrame(
        {
            "date": [datetime.date(2024, 1, 2), None],
            "time": [datetime.time(1, 2, 3, 4), None],
            "binary": [b"\x00ab", None],
            "decimal": pl.Series([decimal.Decimal("1.50"), None], dtype=pl.Decimal(10, 2)),
            "datetime": [datetime.datetime(2024, 1, 1, 0, 0, 0, 123456), None],
            "duration": [datetime.timedelta(microseconds=5), None],
            "array": pl.Series([[1, 2], [3, 4]], dtype=pl.Array(pl.Int32, 2)),
            "enum": pl.Series(["a", "é"], dtype=pl.Enum(["a", "é"])),
        }
    ),
    "empty": pl.DataFrame({"a": pl.Series([], dtype=pl.UInt64), "b": pl.Series([], dtype=pl.String)}),
    "no columns": pl.DataFrame(),
    'odd "names"': pl.DataFrame({'k"ey': [1], "é": [2], "": [3]}),
}


@pytest.mark.parametrize("meta", [{}, {"burstcore": "1", "files": ["é.pcap"], "config": {"w": [1, 2]}, "warnings": []}])
@pytest.mark.parametrize("name", list(EDGE_FRAMES))
def test_each_kind_of_value_is_written_as_json_dumps_writes_it(name: str, meta: dict[str, Any]) -> None:
    _same(meta, {name: EDGE_FRAMES[name]})
    _same(meta, {name: EDGE_FRAMES[name], "ints again": EDGE_FRAMES["ints"]})
    _same(meta, {**EDGE_FRAMES}, table=name)


def test_floats_of_every_magnitude_are_laid_out_as_python_writes_them() -> None:
    # Polars' digits are used in [1e-4, 1e16) only: every exponent of a double, and both sides
    # of the bounds where Python's repr turns to an exponent.
    values = [struct.unpack("<d", struct.pack("<Q", bits))[0] for bits in range(0, 2**64, 2**64 // 40_009)]
    for bound in (1e-4, 1e16, 1e15, 1.0):
        x = y = bound
        for _ in range(30):
            values += [x, y, -x]
            x, y = math.nextafter(x, 0), math.nextafter(y, math.inf)
    values += [n / 7 for n in range(-2000, 2000)] + [float(10**k) for k in range(-12, 22)]
    df = pl.DataFrame({"f": values, "f32": pl.Series(values).cast(pl.Float32)})
    _same({}, {"floats": df})


@st.composite
def _frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 12))
    kinds = {
        "u64": (st.integers(0, U64), pl.UInt64),
        "i64": (st.integers(-(2**63), 2**63 - 1), pl.Int64),
        "f64": (st.floats(), pl.Float64),
        "f32": (st.floats(width=32), pl.Float32),
        "str": (st.text(st.characters(exclude_categories=["Cs"]), max_size=6), pl.String),
        "bool": (st.booleans(), pl.Boolean),
    }
    columns = draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=5))
    data = {}
    for k, kind in enumerate(columns):
        values, dtype = kinds[kind]
        data[f"{kind}{k}"] = pl.Series(draw(st.lists(st.none() | values, min_size=n, max_size=n)), dtype=dtype)
    return pl.DataFrame(data)


@settings(max_examples=300, deadline=None)
@given(_frames(), st.integers(1, 5))
def test_random_tables_are_written_as_json_dumps_writes_them(df: pl.DataFrame, at_once: int) -> None:
    # A few rows at a time, so that the pieces' joints are tested too.
    old = output._ROWS_AT_ONCE
    output._ROWS_AT_ONCE = at_once
    try:
        # Set where the writers read it: one row more than a piece is two pieces.
        assert len(list(output._csv_chunks(pl.DataFrame({"x": range(at_once + 1)})))) == 2
        _same({"m": 1}, {"t": df, "u": df.head(2)})
    finally:
        output._ROWS_AT_ONCE = old


def test_a_large_table_is_not_written_a_row_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # json.dumps a row at a time took 20 µs a row (36 s for 10^6 flows); now a call per column
    # and slice, and one per row only for a row with a value polars cannot write as it does.
    n = 3 * output._ROWS_AT_ONCE + 5
    df = pl.DataFrame(
        {
            "n": pl.Series(range(n), dtype=pl.UInt64),
            "f": [k / 3 for k in range(n)],
            "s": ["é" if k == 7 else f"h{k}" for k in range(n)],
            "b": [k % 2 == 0 for k in range(n)],
        }
    )
    expected = _dumped({"m": 1}, {"t": df})
    calls = 0
    dumps = json.dumps

    def counted(*args: Any, **kwargs: Any) -> str:
        nonlocal calls
        calls += 1
        return dumps(*args, **kwargs)

    monkeypatch.setattr(json, "dumps", counted)
    assert _written({"m": 1}, {"t": df}) == expected
    assert calls <= 4 * df.width + 10


COMMANDS = [
    ["scan"],
    ["scan", "--by", "src,dst,flow,interface", "--bin", "1ms"],
    ["scan", "--each", "SECOND"],
    ["flows"],
    ["flows", "--windows", "1ms,10ms"],
    ["matrix"],
    ["matrix", "--hosts"],
    ["iterations"],
    ["bursts"],
    ["sizes", "--by", "src"],
    ["gaps"],
    ["superpose", "SECOND"],
    ["shared", "SECOND"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_commands_json_file_is_what_json_dumps_writes(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = write_capture(tmp_path / "a.pcapng")
    second = write_capture(tmp_path / "b.pcapng", fmt="pcap")
    given: list[tuple[dict[str, Any], dict[str, pl.DataFrame], str | None]] = []
    chunks = output._json_chunks

    def recorded(meta: dict[str, Any], tables: dict[str, pl.DataFrame], args: argparse.Namespace) -> Any:
        given.append((meta, tables, args.table))
        return chunks(meta, tables, args)

    monkeypatch.setattr(output, "_json_chunks", recorded)
    out = tmp_path / "out.json"
    argv = [command[0], str(cap), *(str(second) if a == "SECOND" else a for a in command[1:])]
    assert cli.main([*argv, "-q", "-o", str(out)]) == 0
    [(meta, tables, table)] = given
    assert sum(df.height for df in tables.values()) > 0
    assert out.read_text() == _dumped(meta, tables, table)
