"""Where a result goes: the output checked before the read, its format, and the writing of the
tables as JSON, CSV or parquet (a slice of rows at a time, into a file that appears whole) or of
the terminal's tables."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import polars as pl

from .errors import EXIT_OK, UsageError, _OutputError
from .inputs import _check_inputs, _shown
from .messages import _warn

SCAN_TABLES = ("envelope", "backlog", "series", "groups", "summary")
DISTRIBUTION_TABLES = ("quantiles", "histogram", "groups", "summary")
SUPERPOSE_TABLES = ("gain", "singles", *SCAN_TABLES)
ITERATIONS_TABLES = ("iterations", "summary")
BURSTS_TABLES = ("bursts", "distributions", "summary")
SHARED_TABLES = ("pairs", "captures")


def _check_output(path: str | None, inputs: Sequence[str] = (), closed: str = "give -o FILE") -> None:
    """Fail before a long scan, not after it, when the output cannot be written, or would
    overwrite one of the captures read; `closed` says what to do when stdout is closed."""
    if path in (None, "-"):
        if sys.stdout is None:
            raise _OutputError(f"standard output is closed: {closed}")
        return
    assert path is not None
    if not path:
        # Else told as "cannot write 'stdout': Is a directory", after the whole scan for --format.
        raise UsageError("-o is empty: give a file name, or '-' for standard output")
    if os.path.exists(path) and any(f != "-" and os.path.samefile(f, path) for f in inputs):
        raise _OutputError(f"-o {path!r} is the capture being read: give another file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _OutputError(f"cannot write {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise _OutputError(f"cannot write {path!r}: it is a folder; give a file name")
    if not os.access(folder, os.W_OK):
        raise _OutputError(f"cannot write {path!r}: no permission to write in {folder!r}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise _OutputError(f"cannot write {path!r}: the file exists and is read-only")


@contextlib.contextmanager
def _replacing(path: str, binary: bool = False) -> Iterator[Any]:
    """A file to write that becomes `path` only once all of it is written: a write that fails
    midway (a full disk, an error, Ctrl-C) leaves no half file and the old one, if any, intact.
    A device or a pipe given as `path` (/dev/stdout, a FIFO) is written directly."""
    target = os.path.realpath(path)
    encoding = None if binary else "utf-8"
    mode = "wb" if binary else "w"
    if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
        with open(target, mode, encoding=encoding) as f:
            yield f
        return
    folder, name = os.path.split(target)
    fd, part = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
    try:
        # The descriptor is owned by the file object at once, so that it is closed whatever
        # fails after (a filesystem that refuses chmod): else each such call kept one open.
        with os.fdopen(fd, mode, encoding=encoding) as f:
            # mkstemp makes the file private (0600); the output gets what open() would give it.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(part, 0o666 & ~umask)
            yield f
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        if path == "stdout":
            # What stays in its buffer would fail again at exit ("Exception ignored", exit 120).
            _silence_stdout()
        raise _OutputError(f"cannot write {path!r}: {e.strerror or e}") from e


def _silence_stdout() -> None:
    """Standard output pointed at /dev/null: after a failed write (a reader gone, a full disk),
    Python's own flush at exit finds nothing to fail on."""
    # Its descriptor first: a stdout without one (a StringIO, closed) has nothing to flush at exit.
    with contextlib.suppress(OSError, ValueError):
        target = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, target)
        finally:
            # The copy is all it takes: a program that calls main() again and again (its output
            # to a fresh pipe or file each time) must not be left one descriptor more each time.
            os.close(devnull)


def _valid_text(value: Any) -> Any:
    """`value` (a JSON document's dicts, lists and strings) with every string as `_shown` gives
    it: a file name's bytes that are no UTF-8 came out as lone surrogate escapes ("\\udce9"),
    which strict parsers refuse (Rust's serde_json rejects the whole document) and others turn
    into U+FFFD, while the tables' `source` and `file` columns and the warnings had U+FFFD."""
    if isinstance(value, str):
        return _shown(value)
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid_text(v) for v in value]
    return value


def _prepare_output(args: argparse.Namespace) -> str:
    """The output format, after checking the inputs and that the output can be written: before a
    long read, not after it."""
    _check_inputs(args.files, args.typed)
    _check_output(args.output, args.files)  # a folder is told as one, before its name's ending is looked at
    fmt = _output_format(args)
    ext = os.path.splitext(args.output or "")[1]
    if args.format and args.output != "-" and OUTPUT_FORMATS.get(ext.lower(), fmt) != fmt:
        # Written as asked all the same: a name of another format's ending is likely a slip.
        _warn(f"-o {args.output} ends in {ext} but holds {fmt}, as --format {fmt} asks")
    if fmt == "parquet" and args.output in (None, "-") and sys.stdout is not None and sys.stdout.isatty():
        # Parquet is binary: on a terminal it is noise, and can leave the terminal in a bad state.
        raise UsageError("parquet is binary and standard output is a terminal: give -o FILE.parquet, or pipe it")
    if args.table and fmt == "table":
        raise UsageError(
            "--table chooses what goes into a .csv, .parquet or .json output (the terminal's tables "
            "show them all): give -o FILE with one of those endings, or --format"
        )
    return fmt


def machine_frame(df: pl.DataFrame) -> pl.DataFrame:
    """For CSV/JSON: times as ISO 8601 strings with ns, durations as integer ns (``<name>_ns``),
    NaN and infinities as null."""
    out = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Datetime):
            out.append(col.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").alias(name))
        elif isinstance(dtype, pl.Duration):
            if f"{name}_ns" not in df.columns:
                out.append(col.dt.total_nanoseconds().alias(f"{name}_ns"))
        elif dtype.is_float():
            # JSON has no NaN or infinity (the write failed halfway); null says "no value" in
            # JSON and CSV alike.
            out.append(pl.when(col.is_finite()).then(col).alias(name))
        else:
            out.append(col)
    return df.select(out)


def _tables(result: Any) -> dict[str, pl.DataFrame]:
    return {name: _with_interfaces(result, getattr(result, name)) for name in SCAN_TABLES}


def _with_file(results: Sequence[tuple[str, Any]]) -> dict[str, pl.DataFrame]:
    merged: dict[str, pl.DataFrame] = {}
    for name in SCAN_TABLES:
        frames = [
            _with_interfaces(r, getattr(r, name)).select(pl.lit(_shown(f)).alias("file"), pl.all()) for f, r in results
        ]
        merged[name] = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
    return merged


# What a written table adds after `group` for the groups by interface, from ScanResult.interfaces.
INTERFACE_COLUMNS = ("capture", "source", "interface", "interface_name")


def _with_interfaces(result: Any, df: pl.DataFrame) -> pl.DataFrame:
    """`df` (a table of `result` with `by` and `group` columns), for a file: with a scan by
    interface, each interface group's capture (from 0), its source (the path), the interface's
    index within it and its pcapng name, after `group` (null for the other groupings' rows).
    A file holds one table, and `if3` names no capture: what the terminal prints beside the
    tables (`_print_interface_captures`) goes into each row instead."""
    if "interface" not in (result.config.get("by") or ()) or not {"by", "group"} <= set(df.columns):
        return df
    ifs = result.interfaces.select(
        pl.lit("interface").alias("by"),
        "group",
        "capture",
        "source",
        "interface",
        pl.col("name").alias("interface_name"),
    )
    at = df.columns.index("group") + 1
    order = [*df.columns[:at], *INTERFACE_COLUMNS, *df.columns[at:]]
    # Rows in df's order through a row index, not join(maintain_order=): polars < 1.17 has no such
    # keyword and pyproject's floor is 1.10.
    row = "_row" + "_" * max((len(c) for c in df.columns), default=0)
    return df.with_row_index(row).join(ifs, on=["by", "group"], how="left").sort(row).select(order)


# The format each ending of -o FILE asks for.
OUTPUT_FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".txt": "table"}


def _output_format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    if args.output is None:
        return "table"
    if args.output == "-":
        return "json"
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in OUTPUT_FORMATS:
        raise UsageError(
            f"cannot tell the format of {args.output!r}: end it in .json, .csv, .parquet or .txt"
            " (the terminal's tables), or give --format"
        )
    return OUTPUT_FORMATS[ext]


def _emit(
    fmt: str,
    tables: dict[str, pl.DataFrame],
    meta: dict[str, Any],
    args: argparse.Namespace,
    show: Callable[[], None],
) -> int:
    """The result on the terminal (`show` prints it), or `tables` in a machine format."""
    if fmt == "table":
        _to_terminal(args.output, show)
    else:
        _write_machine(fmt, tables, meta, args)
    return EXIT_OK


def _to_terminal(output: str | None, show: Callable[[], None]) -> None:
    target = output if output not in (None, "-") else None
    with _writing(target or "stdout"), contextlib.ExitStack() as stack:
        if target is not None:
            # -o out.txt: the tables the terminal would show, into the file.
            out = stack.enter_context(_replacing(target))
            stack.enter_context(contextlib.redirect_stdout(out))
        show()
        if target is None:
            _flush_stdout()


def _write_machine(fmt: str, tables: dict[str, pl.DataFrame], meta: dict[str, Any], args: argparse.Namespace) -> None:
    """`tables` (in the order given; the first is the default --table) with `meta` (JSON only)."""
    target = args.output if args.output not in (None, "-") else None
    with _writing(target or "stdout"):
        _write_tables(fmt, tables, meta, args, target)


def _write_tables(
    fmt: str, tables: dict[str, pl.DataFrame], meta: dict[str, Any], args: argparse.Namespace, target: str | None
) -> None:
    if fmt in ("json", "csv"):
        chunks = _json_chunks(meta, tables, args) if fmt == "json" else _csv_chunks(_chosen(tables, args))
        if target is None:
            for text in chunks:
                _to_stdout(text.encode())
        else:
            with _replacing(target) as f:
                for text in chunks:
                    f.write(text)
        return
    df = _chosen(tables, args)
    if fmt == "parquet":
        # Into memory first: polars reports a failed write to a file (a full disk) as its own
        # ComputeError, which would read as burstcore's fault; open() raises OSError.
        buf = io.BytesIO()
        df.write_parquet(buf)
        if target is None:
            _to_stdout(buf.getvalue())
        else:
            with _replacing(target, binary=True) as f:
                f.write(buf.getvalue())


def _chosen(tables: dict[str, pl.DataFrame], args: argparse.Namespace) -> pl.DataFrame:
    """The table for a CSV or parquet file: --table, else the command's first."""
    return tables[args.table or next(iter(tables))]


# Rows turned into text at once: a scan by flow can have millions, and the whole document as
# Python objects took 14 GB for 1 M flows (a slice at a time holds a few MB).
_ROWS_AT_ONCE = 20_000


def _json_chunks(meta: dict[str, Any], tables: dict[str, pl.DataFrame], args: argparse.Namespace) -> Iterator[str]:
    """One JSON document, {meta..., table: [rows]}, in pieces of at most `_ROWS_AT_ONCE` rows:
    the text json.dumps gives for the whole document (", " and ": " between items, non-ASCII as
    \\u escapes, integers exact)."""
    chosen = [args.table] if args.table else list(tables)
    head = json.dumps(_valid_text(dict(meta)), allow_nan=False, default=str)
    yield head[:-1]  # the meta object, open for the tables
    sep = ", " if meta else ""
    for name in chosen:
        df = machine_frame(tables[name])
        yield f"{sep}{json.dumps(name)}: ["
        sep = ", "
        for at in range(0, df.height, _ROWS_AT_ONCE):
            text = ", ".join(_json_rows(df.slice(at, _ROWS_AT_ONCE)))
            yield text if at == 0 else ", " + text
        yield "]"
    yield "}\n"


def _json_rows(df: pl.DataFrame) -> list[str]:
    """Each row of `df` as json.dumps(row, allow_nan=False, default=str) writes it, built a column
    at a time by polars (a row at a time took 20 µs). A value whose text polars cannot give as
    json.dumps does (a string with a character to escape, a float written with an exponent, a
    list) leaves its row, or its table, to json.dumps."""
    parts: list[pl.Expr] = []
    odd: list[pl.Expr] = []
    for k, (name, dtype) in enumerate(df.schema.items()):
        expr = _json_value(pl.col(name), dtype)
        if expr is None:
            return [json.dumps(r, allow_nan=False, default=str) for r in df.to_dicts()]
        parts += [pl.lit(("{" if k == 0 else ", ") + json.dumps(name) + ": "), expr[0]]
        odd += expr[1:]
    if not parts:
        return ["{}"] * df.height
    built = df.select(pl.concat_str([*parts, pl.lit("}")]), pl.any_horizontal(pl.lit(False), *odd).alias("odd"))
    rows: list[str] = built.to_series(0).to_list()
    if built["odd"].any():
        at = built["odd"].arg_true().to_list()
        for i, r in zip(at, df[at].to_dicts(), strict=True):
            rows[i] = json.dumps(r, allow_nan=False, default=str)
    return rows


# Printable ASCII but '"' and '\': what json.dumps writes as it is in a string (ensure_ascii).
_JSON_AS_IS = r"^[ !#-\[\]-~]*$"


def _json_value(col: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr] | tuple[pl.Expr, pl.Expr] | None:
    """(the text json.dumps gives for each value, [where polars' text may differ]), or None for a
    type left to json.dumps."""
    if dtype.is_integer():
        return (col.cast(pl.String).fill_null("null"),)
    if dtype == pl.Boolean:
        return (pl.when(col).then(pl.lit("true")).when(col.not_()).then(pl.lit("false")).otherwise(pl.lit("null")),)
    if dtype == pl.Null:
        return (pl.lit("null"),)
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        text = col.cast(pl.String)
        return (
            pl.concat_str(pl.lit('"'), text, pl.lit('"')).fill_null("null"),
            ~text.str.contains(_JSON_AS_IS).fill_null(True),
        )
    if dtype.is_float():
        # Polars writes a finite float with the shortest digits that read back, as Python's repr
        # does, and in the same layout for magnitudes in [1e-4, 1e16) (checked on 7·10^6 values;
        # tests/test_cli_json.py keeps checking its bounds and every exponent);
        # repr writes the others with an exponent (1e-05, not 0.00001), and json.dumps raises for
        # NaN and infinities (machine_frame made them null).
        x = col.cast(pl.Float64)
        size = x.abs()
        plain = x.is_finite() & (((size >= 1e-4) & (size < 1e16)) | (size == 0))
        return (x.cast(pl.String).fill_null("null"), plain.not_().fill_null(False))
    return None


def _csv_chunks(df: pl.DataFrame) -> Iterator[str]:
    df = machine_frame(df)
    if df.height == 0:
        yield df.write_csv()
    for at in range(0, df.height, _ROWS_AT_ONCE):
        yield df.slice(at, _ROWS_AT_ONCE).write_csv(include_header=at == 0)


def _to_stdout(data: bytes) -> None:
    """All of `data` to stdout. Unbuffered (PYTHONUNBUFFERED), a large write into a pipe whose
    reader left (`| head`) returns short and raises nothing: write on until the pipe says it is
    broken, so that the command ends as `--help` says (exit 141)."""
    sys.stdout.flush()
    out = sys.stdout.buffer
    view = memoryview(data)
    while view:
        n = out.write(view)
        view = view[n if n is not None else len(view) :]
    out.flush()


def _flush_stdout() -> None:
    """What print() left in stdout's buffer, written now: at exit, Python tells a write that
    fails (a reader gone, a full disk) as "Exception ignored ... BrokenPipeError" and exits 120,
    where the command would exit 141 or 4 (`main`). Only a block-buffered stdout (a pipe or a
    file, without PYTHONUNBUFFERED) holds anything by then."""
    sys.stdout.flush()
