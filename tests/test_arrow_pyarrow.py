"""Arrow tables and columns from a real producer, pyarrow, as a scan's source: read by the
ctypes code of ``_arrow_table.py`` and ``_arrow.py``, which was tested elsewhere only with
polars' exports and hand-made structs. Every source scans as the same numbers given as numpy
arrays (an independent path) do, E(τ) checked by brute force; what cannot be read is refused
saying what to give. Then the hostile side: lifetimes (the source collected mid-way, a capsule
dropped unread, an error after the export), leaks (pyarrow's own count of the bytes it holds,
exact), two threads on one table, a producer failing mid-stream, a reader given twice."""

from __future__ import annotations

import gc
import threading
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from polars.testing import assert_frame_equal

import burstcore
from burstcore import _arrow_table
from burstcore._arrow_table import arrow_table
from tests import oracles

OPTS: dict[str, Any] = dict(windows=["1us", "10us", "100us"], rates=["1Gbps", "10Gbps"], bins=["50us"])
TAUS = [1_000, 10_000, 100_000]
UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _packets(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    ts = 1_700_000_000_000_000_000 + np.cumsum(rng.integers(0, 3_000, n)).astype(np.int64)
    return ts, rng.integers(60, 1_515, n).astype(np.uint64)


def _same(a: burstcore.ScanResult, b: burstcore.ScanResult) -> None:
    for name in ("envelope", "backlog", "series", "groups", "summary", "interfaces"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


def _want(ts: np.ndarray, sz: np.ndarray, ifc: np.ndarray | None = None, **opts: Any) -> burstcore.ScanResult:
    """The scan of the same numbers as numpy columns, its E(τ) checked by brute force."""
    opts = opts or OPTS
    if ifc is None:
        want = burstcore.scan((ts, sz), **opts)
    else:
        want = burstcore.scan({"timestamp": ts, "size": sz, "interface": ifc}, **opts)
    if len(ts) and opts.get("windows") == OPTS["windows"] and "by" not in opts:
        for tau, row in zip(TAUS, want.envelope.iter_rows(named=True), strict=True):
            assert row["bytes"] == oracles.envelope(ts.tolist(), sz.tolist(), tau)[0]
    return want


def _nested(n: int) -> dict[str, pa.Array]:
    """Columns of nested and large types that a scan never reads."""
    return {
        "tags": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
        "meta": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        "blob": pa.array([b"x" * (i % 5) for i in range(n)], pa.large_binary()),
        "name": pa.array([f"h{i % 7}" for i in range(n)], pa.large_string()).dictionary_encode(),
        "view": pa.array(["v"] * n, pa.string_view()),
    }


def _table(ts: np.ndarray, sz: np.ndarray, **more: Any) -> pa.Table:
    return pa.table({**_nested(len(ts)), "timestamp": ts, "size": sz, **more})


@pytest.mark.parametrize("form", ["table", "table_3_chunks", "record_batch", "reader", "struct_array"])
def test_every_pyarrow_table_form_scans_as_its_numpy_columns(form: str) -> None:
    ts, sz = _packets()
    t = _table(ts, sz)
    if form == "table_3_chunks":
        t = pa.concat_tables([t.slice(0, 90), t.slice(90, 1), t.slice(91)])
        assert t.column("timestamp").num_chunks == 3
    source: Any = {
        "table": t,
        "table_3_chunks": t,
        "record_batch": t.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=70)),
        "struct_array": pa.StructArray.from_arrays([pa.array(ts), pa.array(sz)], names=["timestamp", "size"]),
    }[form]
    _same(burstcore.scan(source, **OPTS), _want(ts, sz))


def test_a_table_with_interfaces_and_wire_len_scans_as_its_numpy_columns() -> None:
    ts, sz = _packets()
    ifc = (np.arange(len(ts)) % 3).astype(np.uint32)
    by = dict(OPTS, by=["all", "interface"])
    t = pa.table({"timestamp": ts, "wire_len": pa.array(sz, pa.uint32()), "interface": ifc})
    _same(burstcore.scan(t, **by), _want(ts, sz, ifc, **by))
    _same(burstcore.scan(t.to_batches(max_chunksize=50)[2], **by), _want(ts[100:150], sz[100:150], ifc[100:150], **by))


@pytest.mark.parametrize(("start", "stop"), [(0, 300), (17, 217), (299, 300), (150, 150)])
def test_slices_at_an_offset_scan_as_their_rows(start: int, stop: int) -> None:
    """A sliced Table, RecordBatch and column: the Arrow offset (the struct's, added to its
    children's own) picks the rows."""
    ts, sz = _packets()
    t = _table(ts, sz)
    want = _want(ts[start:stop], sz[start:stop])
    _same(burstcore.scan(t.slice(start, stop - start), **OPTS), want)
    _same(burstcore.scan(t.to_batches()[0].slice(start, stop - start), **OPTS), want)
    # Columns each sliced on their own, then made a table (offsets in the children only).
    cols = pa.table({"timestamp": pa.array(ts)[start:stop], "size": pa.array(sz)[start:stop]})
    _same(burstcore.scan(cols, **OPTS), want)
    # And a slice of that: both offsets at once.
    if stop - start > 2:
        _same(burstcore.scan(cols.slice(1), **OPTS), _want(ts[start + 1 : stop], sz[start + 1 : stop]))


def test_dictionary_and_other_integer_types_scan_as_int64() -> None:
    ts, sz = _packets()
    for ts_col, sz_col in [
        (pa.array(ts).dictionary_encode(), pa.array(sz, pa.uint16()).dictionary_encode()),
        (pa.array(ts, pa.int64()), pa.array(sz, pa.int32())),
        (pa.chunked_array([ts[:10], ts[10:]]), pa.chunked_array([sz[:200], sz[200:]])),
    ]:
        _same(burstcore.scan(pa.table({"timestamp": ts_col, "size": sz_col}), **OPTS), _want(ts, sz))
        # The same Arrow columns given in a mapping and in a pair (``_arrow.py``'s path).
        _same(burstcore.scan({"timestamp": ts_col, "size": sz_col}, **OPTS), _want(ts, sz))
        _same(burstcore.scan((ts_col, sz_col), **OPTS), _want(ts, sz))


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris", "America/St_Johns"])
def test_timestamps_of_every_unit_and_zone_are_their_instants(unit: str, tz: str | None) -> None:
    ts, sz = _packets()
    whole = ts // UNIT_NS[unit] * UNIT_NS[unit]
    column = pa.array(ts // UNIT_NS[unit]).cast(pa.timestamp(unit, tz))
    _same(burstcore.scan(pa.table({"timestamp": column, "size": sz}), **OPTS), _want(whole, sz))
    _same(burstcore.scan((column, sz), **OPTS), _want(whole, sz))
    duration = pa.array(ts // UNIT_NS[unit]).cast(pa.duration(unit))
    _same(burstcore.scan(pa.table({"timestamp": duration, "size": sz}), **OPTS), _want(whole, sz))


@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Tokyo", "+05:30"])
def test_seconds_are_read_exactly_in_every_zone_and_as_a_duration(tz: str | None) -> None:
    """Refused before (polars' import of seconds multiplies unchecked): read exactly now, as a
    table's column, alone, in a mapping, in chunks, up to the last second int64 ns hold; a
    second past it refused with the range."""
    ts, sz = _packets()
    opts = {"windows": ["1s"], "rates": ["1Gbps"]}
    top = (2**63 - 1) // 10**9
    for secs in (ts // 10**9, np.array([top - 1] * (len(ts) - 1) + [top], dtype=np.int64)):
        want = burstcore.scan((secs * 10**9, sz), **opts)
        for column in (pa.array(secs).cast(pa.timestamp("s", tz)), pa.array(secs).cast(pa.duration("s"))):
            chunked = pa.chunked_array([column[:7], column[7:]])
            for source in (
                pa.table({"timestamp": column, "size": sz}),
                pa.table({"timestamp": chunked, "size": sz}),
                (column, sz),
                (chunked, sz),
                {"timestamp": column, "size": sz},
            ):
                _same(burstcore.scan(source, **opts), want)
    past = pa.array(np.array([1, 2, top + 1], dtype=np.int64)).cast(pa.timestamp("s", tz))
    for source in (pa.table({"timestamp": past, "size": sz[:3]}), (past, sz[:3])):
        with pytest.raises(
            ValueError, match=r"in seconds .* are outside int64 nanoseconds since 1970 .*9,223,372,037 s"
        ):
            burstcore.scan(source, **opts)


def test_a_fixed_offset_zone_says_to_give_utc() -> None:
    ts, sz = _packets()
    column = pa.array(ts // 1_000).cast(pa.timestamp("us", "+05:30"))
    with pytest.raises(
        ValueError, match=r"time zone '\+05:30' is one polars cannot read.*pa\.timestamp\('us', 'UTC'\)"
    ):
        burstcore.scan(pa.table({"timestamp": column, "size": sz}), **OPTS)
    # As it says: the same instants in UTC.
    _same(
        burstcore.scan(pa.table({"timestamp": column.cast(pa.timestamp("us", "UTC")), "size": sz}), **OPTS),
        _want(ts // 1_000 * 1_000, sz),
    )


def test_nulls_strings_and_floats_are_refused_saying_what_to_give() -> None:
    ts, sz = _packets()
    null_ts = pa.array([*ts.tolist()[:-1], None], pa.int64())
    null_sz = pa.array([None, *sz.tolist()[1:]], pa.uint64())
    for table in (pa.table({"timestamp": null_ts, "size": sz}), pa.table({"timestamp": ts, "size": null_sz})):
        with pytest.raises(ValueError, match="must not contain nulls"):
            burstcore.scan(table, **OPTS)
    with pytest.raises(ValueError, match=r"timestamps must be integer nanoseconds or Datetime, not String"):
        burstcore.scan(pa.table({"timestamp": pa.array([str(t) for t in ts]), "size": sz}), **OPTS)
    with pytest.raises(ValueError, match=r"timestamps must be integer nanoseconds or Datetime, not Float64"):
        burstcore.scan(pa.table({"timestamp": ts.astype(float), "size": sz}), **OPTS)
    with pytest.raises(ValueError, match=r"no 'timestamp' column .*its columns: 'time', 'size'"):
        burstcore.scan(pa.table({"time": ts, "size": sz}), **OPTS)
    with pytest.raises(TypeError, match=r"an Arrow stream of 'l' is no table"):
        burstcore.scan(pa.chunked_array([ts]), **OPTS)
    masked = pa.StructArray.from_arrays(
        [pa.array(ts), pa.array(sz)], names=["timestamp", "size"], mask=pa.array([False] * (len(ts) - 1) + [True])
    )
    with pytest.raises(ValueError, match=r"has null rows"):
        burstcore.scan(masked, **OPTS)


def test_no_rows_scans_to_the_empty_result_in_every_form() -> None:
    """Fails on the old code for the reader: a RecordBatchReader of an empty table gives no
    batch, and "no batches: ... give at least one DataFrame" was raised, where the table
    itself scans to the empty result."""
    empty = pa.table({"timestamp": pa.array([], pa.int64()), "size": pa.array([], pa.uint64())})
    want = burstcore.scan((np.array([], np.int64), np.array([], np.uint64)), **OPTS)
    assert want.envelope.is_empty()
    for source in (empty, pa.RecordBatch.from_pylist([], schema=empty.schema), empty.to_reader()):
        _same(burstcore.scan(source, **OPTS), want)
    # Its columns are still checked, as the table's are.
    no_time = pa.RecordBatchReader.from_batches(pa.schema([("time", pa.int64()), ("size", pa.int64())]), [])
    with pytest.raises(ValueError, match=r"no 'timestamp' column"):
        burstcore.scan(no_time, **OPTS)


def test_a_reader_scanned_twice_says_it_was_read() -> None:
    """Fails on the old code: the second scan raised "no batches: the iterable of column batches
    gave none; give at least one DataFrame", about no DataFrame the user gave."""
    ts, sz = _packets()
    t = _table(ts, sz)
    reader = t.to_reader(max_chunksize=100)
    _same(burstcore.scan(reader, **OPTS), _want(ts, sz))
    with pytest.raises(ValueError, match=r"RecordBatchReader was read by an earlier scan \(to its end.*to_reader"):
        burstcore.scan(reader, **OPTS)
    # A fresh one scans; a table can be scanned any number of times.
    _same(burstcore.scan(t.to_reader(), **OPTS), _want(ts, sz))
    _same(burstcore.scan(t, **OPTS), burstcore.scan(t, **OPTS))


def test_a_reader_a_scan_stopped_in_is_not_scanned_from_where_it_stopped() -> None:
    """Fails on the old code: after a scan stopped at batch 1 (a packet too late for the reorder
    horizon), the same reader given again (the horizon widened) gave its batches from 2 on,
    and the scan counted those alone, as if they were every packet."""
    ts, sz = _packets()
    late = ts.copy()
    late[100:200] -= 50_000_000  # batch 1 is 50 ms before batch 0
    t = pa.table({"timestamp": late, "size": sz})
    reader = t.to_reader(max_chunksize=100)
    with pytest.raises(burstcore.OutOfOrderError):
        burstcore.scan(reader, **OPTS, reorder_horizon="1ms")
    with pytest.raises(
        ValueError, match=r"was read by an earlier scan \(to its end, or to the error that stopped it\)"
    ):
        burstcore.scan(reader, **OPTS, reorder_horizon="100ms")
    want = burstcore.scan((late, sz), **OPTS, reorder_horizon="100ms")
    for tau, row in zip(TAUS, want.envelope.iter_rows(named=True), strict=True):
        assert row["bytes"] == oracles.envelope(late.tolist(), sz.tolist(), tau)[0]
    _same(burstcore.scan(t.to_reader(max_chunksize=100), **OPTS, reorder_horizon="100ms"), want)


def _failing_reader(schema: pa.Schema, good: pa.RecordBatch) -> pa.RecordBatchReader:
    def batches() -> Any:
        yield good
        raise RuntimeError("the disk went away at batch 1")

    return pa.RecordBatchReader.from_batches(schema, batches())


class _StreamOnly:
    """Only the capsule of its producer: read as an Arrow table, whole (not as batches)."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.producer.__arrow_c_stream__(requested_schema)


def test_a_producer_failing_mid_stream_is_an_error_naming_its_cause() -> None:
    ts, sz = _packets()
    t = pa.table({"timestamp": ts, "size": sz})
    good = t.to_batches()[0].slice(0, 10)
    with pytest.raises(RuntimeError, match="the disk went away at batch 1"):
        burstcore.scan(_failing_reader(t.schema, good), **OPTS)
    # Through the C stream interface: get_next's error code and get_last_error's message.
    with pytest.raises(ValueError, match=r"the Arrow table's stream failed giving batch 1: .*disk went away"):
        burstcore.scan(_StreamOnly(_failing_reader(t.schema, good)), **OPTS)


def _pool_table(n: int, kind: str = "int") -> pa.Table:
    """A table whose every buffer pyarrow's pool allocated (computed, not wrapped numpy), so
    that ``pa.total_allocated_bytes()`` counts one kept alive by a lost release."""
    ts = pc.add(pa.array(np.arange(n, dtype=np.int64) * 1_000 + 1_700_000_000_000_000_000), 0)
    sz = pc.add(pa.array((np.arange(n) % 1_400 + 60).astype(np.uint64)), 0)
    if kind == "seconds":
        ts = pc.divide(ts, 10**9).cast(pa.timestamp("s"))
    elif kind == "late":  # the last packet a second early: the scan's OutOfOrderError, after the import
        ts = pa.concat_arrays([ts[:-1], pc.subtract(ts[-1:], 10**9)])
    elif kind == "string":
        ts = ts.cast(pa.string())
    return pa.table({"timestamp": ts, "size": sz, "other": pc.add(sz, 1)})


def _pool_after(make: Any, times: int = 5) -> int:
    """The bytes pyarrow's pool holds more after ``make()`` ran ``times`` times; and none of the
    column streams ``_arrow_table`` handed out is still listed as live."""
    gc.collect()
    base = pa.total_allocated_bytes()
    for _ in range(times):
        make()
        gc.collect()
        assert not _arrow_table._LIVE and not _arrow_table._SHELLS
    return pa.total_allocated_bytes() - base


@pytest.mark.parametrize("kind", ["int", "seconds", "string", "late"])
def test_every_buffer_is_released_after_a_scan_or_its_error(kind: str) -> None:
    """Leaks counted exactly: the bytes pyarrow holds come back to where they were after each
    scan (one batch, three, a reader, a RecordBatch), after a refused column and after the
    scan's own error once the columns were imported."""

    def scans() -> None:
        t = _pool_table(50_000, kind)
        sources = [t, pa.concat_tables([t.slice(0, 100), t.slice(100)]), t.to_reader(max_chunksize=20_000)]
        sources.append(t.combine_chunks().to_batches()[0])
        for source in sources:
            if kind in ("int", "seconds"):
                burstcore.scan(source, windows=["10us"], rates=["1Gbps"])
            else:
                error = burstcore.OutOfOrderError if kind == "late" else ValueError
                with pytest.raises(error, match=r"packet|String"):
                    burstcore.scan(source, windows=["10us"], rates=["1Gbps"])

    assert _pool_after(scans) == 0


def test_columns_outlive_their_source_and_unread_ones_are_released() -> None:
    """The column streams hold their arrays (moved out): the table collected before they are
    read, they still read right; dropped unread, or a capsule dropped unexported, nothing stays."""
    n = 20_000
    want = np.arange(n, dtype=np.int64) * 1_000 + 1_700_000_000_000_000_000
    columns = arrow_table(pa.concat_tables([_pool_table(n).slice(0, 7), _pool_table(n).slice(7)]))
    gc.collect()
    assert np.array_equal(pl.Series("t", columns["timestamp"]).to_numpy(), want)
    del columns

    def unread() -> None:
        arrow_table(_pool_table(n))  # every column dropped unread
        _pool_table(n).__arrow_c_stream__()  # the producer's capsule dropped unread
        columns = arrow_table(_pool_table(n))
        columns["timestamp"].__arrow_c_stream__()  # our capsule dropped unread
        with pytest.raises(ValueError, match="exported already"):
            columns["timestamp"].__arrow_c_stream__()

    assert _pool_after(unread) == 0


def test_two_threads_scanning_one_table_get_its_numbers() -> None:
    ts, sz = _packets(3_000)
    t = pa.concat_tables([_table(ts, sz).slice(0, 1_000), _table(ts, sz).slice(1_000)])
    opts = dict(windows=["10us"], rates=["1Gbps"])
    want = burstcore.scan((ts, sz), **opts)
    results: list[bool] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(15):
                got = burstcore.scan(t, **opts)
                results.append(got.envelope.equals(want.envelope) and got.backlog.equals(want.backlog))
        except BaseException as e:  # seen by the test, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert results == [True] * 30


def test_a_list_of_record_batches_or_tables_is_scanned_as_batches() -> None:
    """``table.to_batches()`` is a list of RecordBatches: each a batch of the scan. Fails on the
    old code ("cannot read a capture from RecordBatch: pass a path, ...")."""
    ts, sz = _packets()
    t = _table(ts, sz)
    batches = t.to_batches(max_chunksize=70)
    assert isinstance(batches, list) and len(batches) == 5
    _same(burstcore.scan(batches, **OPTS), _want(ts, sz))
    _same(burstcore.scan([t.slice(0, 100), t.slice(100)], **OPTS), _want(ts, sz))
    _same(burstcore.scan((t.slice(0, 10), t.slice(10, 10), t.slice(20)), **OPTS), _want(ts, sz))
    # No rates: a list is read twice (a pre-pass for the mean rate), as the whole table is.
    whole = burstcore.scan(t, windows=["10us"])
    _same(burstcore.scan(batches, windows=["10us"]), whole)
    assert burstcore.scan(batches, windows=["10us"]).config == whole.config
    # A reader in the list would be used up by a pre-pass: none, the link-speed grid, every packet.
    mixed = burstcore.scan([batches[0], pa.RecordBatchReader.from_batches(t.schema, batches[1:])], windows=["10us"])
    assert mixed.config["rates"] == "link-speed grid (iterator of batches)"
    _same(mixed, burstcore.scan((ts, sz), windows=["10us"], rates=mixed.config["rates_bps"]))
    # A pair of Arrow arrays stays a pair of columns; a list of them is no batches of tables.
    _same(burstcore.scan((pa.array(ts), pa.array(sz)), **OPTS), _want(ts, sz))
    with pytest.raises(TypeError, match=r"^batch 0: an Arrow array of 'l' is no table"):
        burstcore.scan([pa.array(ts), pa.array(sz)], **OPTS)


@pytest.mark.parametrize("column", ["timestamp", "size"])
def test_arrow_types_polars_cannot_import_are_a_value_error_not_a_panic(column: str) -> None:
    """Fails on the old code: polars' import panicked, a pyo3 PanicException (no Exception) out of
    scan, for a run-end encoded array given by ``__arrow_c_array__`` and for a decimal256 in
    every form; a run-end encoded stream raised polars' bare "The datatype "+r" is still not
    supported". Both now say what to give, and leave nothing held."""
    ts, sz = _packets()
    what = "integer ns or a timestamp in s, ms, us or ns" if column == "timestamp" else "integers"

    def sources(bad: pa.Array) -> list[Any]:
        cols = {"timestamp": pa.array(ts), "size": pa.array(sz), column: bad}
        return [pa.table(cols), cols, (cols["timestamp"], cols["size"]), [pa.table(cols)]]

    def refused() -> None:
        values = ts if column == "timestamp" else sz.astype(np.int64)
        for source in sources(pc.run_end_encode(pc.add(pa.array(values), 0))):
            with pytest.raises(
                ValueError, match=rf"the '{column}' column is a run-end encoded .*run_end_decode.*{what}"
            ):
                burstcore.scan(source, **OPTS)
        for source in sources(pc.add(pa.array(values), 0).cast(pa.decimal256(40, 0))):
            with pytest.raises(
                ValueError, match=rf"'{column}' column is of an Arrow type \('d:40,0,256'\) that polars"
            ):
                burstcore.scan(source, **OPTS)

    assert _pool_after(refused, times=2) == 0
    # As it says: decoded, the same column scans.
    decoded = pc.run_end_decode(pc.run_end_encode(pa.array(ts if column == "timestamp" else sz)))
    _same(burstcore.scan(pa.table({"timestamp": ts, "size": sz, column: decoded}), **OPTS), _want(ts, sz))


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Kolkata"])
def test_pyarrow_backed_pandas_timestamps_are_read_as_their_arrow_column(unit: str, tz: str | None) -> None:
    """A pandas Series of an ArrowDtype (``read_parquet(..., dtype_backend="pyarrow")``) holds an
    Arrow column: read as one, exactly, seconds too, as an Arrow column's are. Fails on the
    old code: numpy was asked for its unit, "TypeError: Cannot interpret 'timestamp[ms][pyarrow]'
    as a data type"."""
    pd = pytest.importorskip("pandas")
    ts, sz = _packets()
    whole = ts // UNIT_NS[unit] * UNIT_NS[unit]

    def series(unit: str, kind: str = "timestamp") -> Any:
        arrow_type = pa.timestamp(unit, tz) if kind == "timestamp" else pa.duration(unit)
        return pd.Series(pa.array(ts // UNIT_NS[unit]).cast(arrow_type), dtype=pd.ArrowDtype(arrow_type))

    for column in (series(unit), series(unit, "duration")):
        _same(burstcore.scan((column, sz), **OPTS), _want(whole, sz))
        _same(
            burstcore.scan({"timestamp": column, "size": pd.Series(sz, dtype="uint64[pyarrow]")}, **OPTS),
            _want(whole, sz),
        )
    # Seconds: read exactly, as an Arrow column's are.
    secs = ts // 10**9 * 10**9
    _same(burstcore.scan((series("s"), sz), **OPTS), _want(secs, sz))
    _same(burstcore.scan({"timestamp": series("s", "duration"), "size": sz}, **OPTS), _want(secs, sz))
    with pytest.raises(ValueError, match=r"\(pyarrow-backed\) in a pandas Index: give them as a Series"):
        burstcore.scan((pd.Index(series(unit)), sz), **OPTS)


def test_the_tools_that_read_a_capture_say_only_scan_takes_an_arrow_table() -> None:
    """Fails on the old code: "cannot read a capture from Table: pass a path, ..." alone, where a
    polars DataFrame is told that only scan() measures columns."""
    t = pa.table({"timestamp": [1], "size": [60]})
    for source in (t, t.to_batches()[0], t.to_reader()):
        for tool in (burstcore.read_packets, burstcore.flows, burstcore.info):
            with pytest.raises(TypeError, match=r"only scan\(\) measures packets already in columns"):
                tool(source)
