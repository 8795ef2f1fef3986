"""Packets already in memory, as ``scan`` takes them: columns whole (a DataFrame, a mapping, a
pair of arrays), or column batches (an iterable of DataFrames or mappings, or a polars LazyFrame
collected in batches) fed to one scan a batch at a time, so that only a batch is held at once."""

from __future__ import annotations

import os
import weakref
from collections.abc import Generator, Iterator, Mapping
from typing import Any

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._arrow import arrow_series
from ._arrow_table import arrow_table, is_arrow_table
from ._batches import READ_ONCE_MARK, advanced_reader
from ._units import numpy_times_ns

Arrays = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]


def is_columns(source: Any) -> bool:
    # A pair of captures (paths, bytes, file objects) is two sources, not two columns: columns
    # are sequences of numbers, never one of those. Anything exporting Arrow (but pandas) is
    # taken for a table, so that one of another type is told so rather than taken for a capture.
    return (
        isinstance(source, (pl.DataFrame, Mapping))
        or is_arrow_table(source)
        or (
            isinstance(source, tuple)
            and len(source) == 2
            and not any(
                isinstance(s, (str, bytes, bytearray, memoryview, os.PathLike)) or hasattr(s, "read") for s in source
            )
        )
    )


def _pandas_times(column: Any) -> Any:
    """A pandas Series or Index of datetimes (naive, or aware: their instants in UTC) or of
    timedeltas as the numpy array of its own unit (a pyarrow-backed one as its Arrow column);
    else ``column``. polars takes those only through pyarrow (an ImportError without it), and
    a unit of seconds unchecked."""
    dtype = getattr(column, "dtype", None)
    kind = getattr(dtype, "kind", "")
    if not type(column).__module__.startswith("pandas") or kind not in ("M", "m") or not hasattr(column, "to_numpy"):
        return column
    if hasattr(dtype, "pyarrow_dtype"):
        # pyarrow-backed (an ArrowDtype: read_parquet(dtype_backend="pyarrow")), which numpy
        # cannot interpret: its own Arrow column, read as one (a unit of seconds refused).
        if hasattr(column, "__arrow_c_stream__"):
            return _ArrowColumnOf(column)
        raise ValueError(
            f"timestamps of pandas {dtype} (pyarrow-backed) in a pandas {type(column).__name__}: give them as a "
            "Series (pd.Series(index)), or as pyarrow's pa.array(index)"
        )
    unit = getattr(dtype, "unit", None) or np.datetime_data(dtype)[0]  # type: ignore[arg-type]
    return column.to_numpy(dtype=f"{'datetime64' if kind == 'M' else 'timedelta64'}[{unit}]")


class _ArrowColumnOf:
    """A pandas Series' Arrow export alone, so that it is read as an Arrow column is."""

    def __init__(self, series: Any) -> None:
        self.series = series

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.series.__arrow_c_stream__(requested_schema)


def _columns(source: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(timestamps in ns, sizes, interfaces) from a DataFrame/dict with 'timestamp' and 'size'
    (or 'wire_len') columns, or a (timestamps, sizes) tuple; numpy, polars or Arrow arrays (any
    object with ``__arrow_c_array__`` or ``__arrow_c_stream__``, in a tuple or a mapping); or an
    Arrow table (a struct by either), whose columns are then taken as a mapping's."""

    def exact(ts: Any) -> Any:
        # numpy datetime64/timedelta64 as int ns before polars sees them: it takes only D, ms, us, ns.
        ts = _pandas_times(ts)
        return numpy_times_ns(ts, "timestamps") if isinstance(ts, np.ndarray) and ts.dtype.kind in "mM" else ts

    iface = None
    if isinstance(source, tuple):
        ts, size = source
        ts, size = arrow_series("timestamp", exact(ts), times=True), arrow_series("size", size)
    else:
        if not isinstance(source, pl.DataFrame):
            # Only the columns a scan reads: the others are neither imported, copied nor checked.
            given = dict(source) if isinstance(source, Mapping) else arrow_table(source)
            size_key = "size" if "size" in given else "wire_len"
            source = {
                k: arrow_series(k, exact(v) if k == "timestamp" else v, times=k == "timestamp")
                for k, v in given.items()
                if k in ("timestamp", size_key, "interface")
            }
        df = source if isinstance(source, pl.DataFrame) else pl.DataFrame(source)
        if "timestamp" not in df.columns:
            raise ValueError("in-memory input needs a 'timestamp' column (int64 ns or Datetime)")
        size_col = "size" if "size" in df.columns else "wire_len" if "wire_len" in df.columns else None
        if size_col is None:
            raise ValueError("in-memory input needs a 'size' (or 'wire_len') column of byte counts")
        ts, size = df["timestamp"], df[size_col]
        if "interface" in df.columns:
            col = df["interface"]
            whole = col.null_count() == 0 and col.dtype.is_integer()
            if not whole or (col.len() and not (col.min() >= 0 and col.max() <= 2**32 - 1)):  # type: ignore[operator]
                raise ValueError("the 'interface' column must hold integers from 0 to 2^32 - 1, without nulls")
            iface = np.ascontiguousarray(col.cast(pl.UInt32).to_numpy())
    ts_s = pl.Series(ts) if not isinstance(ts, pl.Series) else ts
    if ts_s.null_count() or pl.Series(size).null_count():
        raise ValueError("in-memory timestamps and sizes must not contain nulls")
    if ts_s.dtype == pl.Datetime or ts_s.dtype == pl.Duration:
        ts_s = _series_ns(ts_s)
    if not ts_s.dtype.is_integer():
        raise ValueError(f"timestamps must be integer nanoseconds or Datetime, not {ts_s.dtype}")
    sz = pl.Series(size)
    if not sz.dtype.is_integer() or (sz.len() and sz.min() < 0):  # type: ignore[operator]
        raise ValueError("sizes must be non-negative integers (bytes)")
    return (
        np.ascontiguousarray(ts_s.cast(pl.Int64).to_numpy()),
        np.ascontiguousarray(sz.cast(pl.UInt64).to_numpy()),
        iface,
    )


_UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000}


def _series_ns(times: pl.Series) -> pl.Series:
    """A Datetime or Duration Series (no nulls) as int64 ns, exactly: polars' own cast
    (``dt.cast_time_unit``) of a ms value past int64 ns panics rather than raise."""
    raw = times.to_physical()
    scale = _UNIT_NS[times.dtype.time_unit]  # type: ignore[attr-defined]
    if scale == 1 or not raw.len():
        return raw
    lo, hi = raw.min(), raw.max()
    if lo < -(2**63 // scale) or hi > (2**63 - 1) // scale:  # type: ignore[operator]
        raise ValueError(
            f"timestamps of {times.dtype} are outside int64 nanoseconds since 1970 (1677-09-21 to 2262-04-11)"
        )
    # Exact within int64: every product is in range (checked above on its ends).
    return raw * scale


def columns_of(source: Any) -> Arrays:
    """``_columns``, with what polars cannot convert (objects, mixed types) said as the caller's
    input it is, not a bug."""
    try:
        # polars' casts read dtypes: a Ctrl-C there is a KeyboardInterrupt, not polars' TypeError
        # (nor a scan's "batch k: ..." of it): `_core.one_ctrl_c`.
        with _core.one_ctrl_c:
            return _columns(source)
    except pl.exceptions.PolarsError as e:
        raise ValueError(
            f"cannot use these in-memory columns ({e}); give integer ns (or Datetime) timestamps "
            "and non-negative integer sizes"
        ) from e


def is_batches(source: Any) -> bool:
    """A LazyFrame, a list or tuple of DataFrames, mappings or Arrow tables (``table.to_batches()``),
    or any other iterator that is no file object (a generator, ``iter_packets``,
    ``collect_batches()``): column batches. A list of paths stays several captures, and a pair
    of arrays (Arrow ones too: a tuple of two, not a list) one batch of columns."""
    if isinstance(source, pl.LazyFrame):
        return True
    if isinstance(source, (list, tuple)):
        arrow = isinstance(source, list) or len(source) != 2
        return bool(source) and all(
            isinstance(b, (pl.DataFrame, Mapping)) or (arrow and is_arrow_table(b)) for b in source
        )
    return isinstance(source, Iterator) and not hasattr(source, "read")


def batches_rereadable(source: Any) -> bool:
    """Whether the batches can be taken twice (a pre-pass for the default rates): a list or a
    tuple (unless one of them is an iterator, a RecordBatchReader, which a pre-pass would use
    up), or a LazyFrame (its query run again) unless its plan reads a ``scan_packets`` source
    that is read once (a file object, stdin, a pipe); not an iterator, which is gone once read."""
    if isinstance(source, pl.LazyFrame):
        try:
            plan = source.explain(optimized=False)
        except Exception:  # a plan polars cannot show: taken as re-readable, as before
            return True
        return READ_ONCE_MARK not in plan
    return isinstance(source, (list, tuple)) and not any(isinstance(b, Iterator) for b in source)


def _frames(source: Any) -> Generator[Any, None, None]:
    """The batches of ``source``, in order. A LazyFrame: only the columns a scan reads (so that
    a ``scan_packets`` frame decodes no others), through ``LazyFrame.collect_batches`` (polars'
    streaming engine, in order, a batch at a time) where polars has it; an older polars collects
    the frame whole and gives it in slices. A frame that gives no batch (no row) gives its empty
    head, so that its columns are checked as a DataFrame's are."""
    if not isinstance(source, pl.LazyFrame):
        yield from source
        return
    names = source.collect_schema().names()
    size = "size" if "size" in names else "wire_len" if "wire_len" in names else None
    wanted = [c for c in ("timestamp", size, "interface") if c is not None and c in names]
    lf = source.select(wanted) if wanted else source
    collect_batches = getattr(lf, "collect_batches", None)
    given = False
    if collect_batches is not None:
        for df in collect_batches(maintain_order=True):
            given = True
            yield df
    else:
        # A polars before collect_batches: no streaming to batches, the frame is held whole.
        for df in lf.collect().iter_slices(_core.DEFAULT_BATCH_ROWS):
            given = True
            yield df
    if not given:
        yield lf.head(0).collect()


def scan_batches(source: Any, *config: Any) -> dict[str, Any]:
    """One scan (``_core.ColumnScanner(*config)``) over the batches of ``source``, each checked
    as in-memory columns are and pushed before the next is taken: the output of
    ``_core.scan_columns`` over them concatenated. Errors name the batch, from 0."""
    scanner = _core.ColumnScanner(*config)
    # An iterator (a generator, iter_packets, a RecordBatchReader) is read once: given again after
    # a scan took from it, it would give the rest (none, or those after an error, scanned as if
    # they were the whole).
    # An iterator whose ``iter()`` gives a fresh one (an iterable that also has ``__next__``)
    # gives its batches afresh each time, as a list does: not read once.
    arrow = is_arrow_table(source)
    batches = source if isinstance(source, pl.LazyFrame) else iter(source)
    read_once = arrow or (batches is source and isinstance(source, Iterator))
    if read_once and _was_read(source):
        # polars' collect_batches() is an Arrow stream too, but of a LazyFrame, not of a table.
        polars = type(source).__module__.split(".")[0] == "polars"
        again = (
            "give a new one (lf.collect_batches()), or the LazyFrame"
            if polars
            else "give a new one (e.g. table.to_reader()), or the table"
            if arrow
            else "give a new one, or a list"
        )
        raise ValueError(
            f"this {type(source).__name__} was read by an earlier scan (to its end, or to the error that "
            f"stopped it): an iterator is read once; {again}"
        )
    if advanced_reader(source):
        # Its batches from the one after those taken: a scan of part of the capture, from a
        # packet in its middle, reported as if it were the whole.
        raise ValueError(
            "this iter_packets reader gave batches before this scan (a next() on it, or a loop left early): "
            "the scan would see only the packets after them, part of the capture; give the path (or a new "
            "iter_packets(...)) to scan the whole, or put the batches taken back in front: "
            "itertools.chain([first], reader)"
        )
    if read_once:
        _mark_read(source)
    with_interfaces: bool | None = None
    k = -1
    it = _frames(batches)
    try:
        for k, batch in enumerate(it):
            # An Arrow table too: ``iter(reader)`` scans a RecordBatchReader a batch at a time.
            if not (isinstance(batch, (pl.DataFrame, Mapping)) or is_arrow_table(batch)):
                capture = isinstance(batch, (str, bytes, bytearray, memoryview, os.PathLike)) or hasattr(batch, "read")
                raise TypeError(
                    f"batch {k} is a {type(batch).__name__}, not a DataFrame, a mapping of columns or an Arrow "
                    "table: an iterator gives scan batches of 'timestamp' and 'size' columns"
                    # A generator of paths: read once and in no stated order, so not taken.
                    + ("; several captures go in a list or a tuple (list(...) of these)" if capture else "")
                )
            try:
                ts, sz, ifc = columns_of(batch)
            except ValueError as e:
                raise ValueError(f"batch {k}: {e}") from e
            except TypeError as e:  # an Arrow array or stream of another type than a struct
                raise TypeError(f"batch {k}: {e}") from e
            if with_interfaces is None:
                with_interfaces = ifc is not None
            elif with_interfaces != (ifc is not None):
                had = "had" if with_interfaces else "had no"
                raise ValueError(
                    f"batch {k} {'has no' if with_interfaces else 'has an'} 'interface' column, where the batches "
                    f"before it {had}: give it in every batch or in none"
                )
            scanner.push(ts, sz, ifc)
    finally:
        # An error, or Ctrl-C, leaves the batches untaken: a generator's (iter_packets') input is
        # closed now, not when it is collected.
        it.close()
    if k < 0 and arrow:
        # No batch: a table of no rows, scanned as that table is (its columns checked).
        scanner.push(*columns_of(source))
    elif k < 0:
        # An iterator that cannot be remembered (``iter(list)``) may have been used up elsewhere.
        used = "; an iterator is used up once read (by list(...), or an earlier scan)" if read_once else ""
        raise ValueError(
            f"no batches: the iterable of column batches gave none{used}; give at least one DataFrame "
            "(an empty one, with its 'timestamp' and 'size' columns, scans to an empty result)"
        )
    out: dict[str, Any] = scanner.finish()
    return out


# The iterators (Arrow streams among them) a scan took batches from, by identity: id -> a weak
# reference to it, dropped when it dies. Given again such an iterator gives the batches left,
# none if it was read to its end (as an Arrow stream of an empty table does): this tells them
# apart. By identity, not in a WeakSet, whose membership is by ``==`` and hash: a fresh iterator
# equal to a read one was refused, and one with ``__hash__ = None`` never remembered. Those that
# cannot be weakly referred to (``iter(list)``, ``itertools.chain``) are not remembered.
_READ: dict[int, weakref.ref[Any]] = {}


def _was_read(source: Any) -> bool:
    ref = _READ.get(id(source))
    return ref is not None and ref() is source


def _mark_read(source: Any) -> None:
    key = id(source)

    def forget(dead: weakref.ref[Any]) -> None:
        # Only this entry: another iterator may since hold the same id.
        if _READ.get(key) is dead:
            _READ.pop(key, None)

    try:
        _READ[key] = weakref.ref(source, forget)
    except TypeError:  # not weakly referable
        pass
