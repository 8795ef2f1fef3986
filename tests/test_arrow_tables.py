"""An Arrow table as a scan's source, without pyarrow: an object exposing only
``__arrow_c_stream__`` (a stream of struct arrays: pyarrow's Table or RecordBatchReader, duckdb
and nanoarrow results) or only ``__arrow_c_array__`` (one struct array: a RecordBatch). Producers
here are polars' own export of a DataFrame, wrapped so that only the capsule is seen, and structs
made by hand with ctypes over numpy buffers (per the Arrow C data interface), which give formats
polars never exports (a timestamp in seconds) and count each column's release. Every table scans
as the same numbers in numpy arrays do; its other columns are released unread; a stream is read
once; what is no table, or a table without a timestamp, is refused saying what to give."""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from burstcore._columns import columns_of
from tests import oracles
from tests.arrow_c import _Array, _PyCapsule_New, _Schema, _Stream

# Each child array's release is counted by its private_data, an id that moves with it (its buffers
# stay owned by the producer object, kept alive by the test): a column released twice, or never,
# is seen.
RELEASED: dict[int, int] = {}

_IDS = iter(range(1, 2**62))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release_schema(p: int) -> None:
    ctypes.cast(p, ctypes.POINTER(_Schema)).contents.release = None


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release_child(p: int) -> None:
    child = ctypes.cast(p, ctypes.POINTER(_Array)).contents
    RELEASED[child.private_data] = RELEASED.get(child.private_data, 0) + 1
    child.release = None


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release_struct(p: int) -> None:
    # As the interface's parents do: the children not moved out (release not NULL) with it.
    struct = ctypes.cast(p, ctypes.POINTER(_Array)).contents
    children = ctypes.cast(struct.children, ctypes.POINTER(ctypes.c_void_p))
    for i in range(struct.n_children):
        child = ctypes.cast(children[i], ctypes.POINTER(_Array)).contents
        if child.release:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(child.release)(children[i])
    struct.release = None


_FORMATS = {np.dtype(np.int64): b"l", np.dtype(np.uint64): b"L", np.dtype(np.uint32): b"I"}


class CStruct:
    """A struct array (a record batch) made by hand, exported through ``__arrow_c_array__``:
    ``columns`` maps a name to its values (and optionally its Arrow format); ``offset`` makes it
    the struct's rows from there (a sliced batch, its children whole)."""

    def __init__(
        self, columns: dict[str, Any] | list[tuple[str, Any]], offset: int = 0, null_rows: bool = False
    ) -> None:
        items = columns.items() if isinstance(columns, dict) else columns
        self.columns = [
            (k, *((np.ascontiguousarray(v[0]), v[1]) if isinstance(v, tuple) else (np.ascontiguousarray(v), None)))
            for k, v in items
        ]
        self.offset = offset
        self.null_rows = null_rows
        self.held: list[Any] = []
        self.children: list[int] = []  # the ids of the last export's child arrays

    def export(self) -> tuple[_Schema, _Array]:
        schemas, arrays = [], []
        rows = len(self.columns[0][1])
        for name, values, fmt in self.columns:
            schemas.append(
                _Schema(
                    fmt or _FORMATS[values.dtype],
                    name.encode(),
                    None,
                    2,
                    0,
                    None,
                    None,
                    ctypes.cast(_release_schema, ctypes.c_void_p).value,
                )
            )
            buffers = (ctypes.c_void_p * 2)(None, values.ctypes.data)
            self.held.append(buffers)
            arrays.append(
                _Array(
                    len(values),
                    0,
                    0,
                    2,
                    0,
                    ctypes.cast(buffers, ctypes.c_void_p).value,
                    None,
                    None,
                    ctypes.cast(_release_child, ctypes.c_void_p).value,
                    next(_IDS),
                )
            )
        schema_ptrs = (ctypes.c_void_p * len(schemas))(*[ctypes.addressof(s) for s in schemas])
        array_ptrs = (ctypes.c_void_p * len(arrays))(*[ctypes.addressof(a) for a in arrays])
        self.children = [a.private_data for a in arrays]
        schema = _Schema(
            b"+s",
            b"",
            None,
            0,
            len(schemas),
            ctypes.cast(schema_ptrs, ctypes.c_void_p).value,
            None,
            ctypes.cast(_release_schema, ctypes.c_void_p).value,
            None,
        )
        bitmap = np.packbits(np.arange(rows) != 1, bitorder="little") if self.null_rows else None
        buffers = (ctypes.c_void_p * 1)(None if bitmap is None else bitmap.ctypes.data)
        array = _Array(
            rows - self.offset,
            1 if self.null_rows else 0,
            self.offset,
            1,
            len(arrays),
            ctypes.cast(buffers, ctypes.c_void_p).value,
            ctypes.cast(array_ptrs, ctypes.c_void_p).value,
            None,
            ctypes.cast(_release_struct, ctypes.c_void_p).value,
            None,
        )
        self.held.append((schemas, arrays, schema_ptrs, array_ptrs, schema, buffers, bitmap, array))
        return schema, array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        schema, array = self.export()
        return (
            _PyCapsule_New(ctypes.addressof(schema), b"arrow_schema", None),
            _PyCapsule_New(ctypes.addressof(array), b"arrow_array", None),
        )


class CStructStream:
    """A stream of hand-made struct arrays (record batches) through ``__arrow_c_stream__``, read
    once as a RecordBatchReader is: a second call gives the same, released, stream. Its schema is
    that of ``template``, else of the first batch."""

    def __init__(self, batches: list[CStruct], template: CStruct | None = None) -> None:
        self.batches = batches
        self.calls = 0
        self.capsule: object | None = None
        self.given = 0

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        def get_schema(stream: int, out: int) -> int:
            ctypes.memmove(out, ctypes.addressof((template or batches[0]).export()[0]), ctypes.sizeof(_Schema))
            return 0

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        def get_next(stream: int, out: int) -> int:
            if self.given == len(batches):
                ctypes.memset(out, 0, ctypes.sizeof(_Array))
            else:
                ctypes.memmove(out, ctypes.addressof(batches[self.given].export()[1]), ctypes.sizeof(_Array))
                self.given += 1
            return 0

        @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        def release(stream: int) -> None:
            ctypes.cast(stream, ctypes.POINTER(_Stream)).contents.release = None

        self.callbacks = (get_schema, get_next, release)
        self.stream = _Stream(
            *(ctypes.cast(f, ctypes.c_void_p).value for f in (get_schema, get_next)),
            None,
            ctypes.cast(release, ctypes.c_void_p).value,
            None,
        )

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        self.calls += 1
        if self.capsule is None:
            self.capsule = _PyCapsule_New(ctypes.addressof(self.stream), b"arrow_array_stream", None)
        return self.capsule


class Exported:
    """Only ``__arrow_c_stream__`` of a polars object (a DataFrame: a stream of record batches,
    one a chunk), as a library other than polars would show it."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def _packets(n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    ts = 1_700_000_000_000_000_000 + np.cumsum(rng.integers(0, 3_000, n)).astype(np.int64)
    return ts, rng.integers(60, 1_515, n).astype(np.uint64), rng.integers(0, 3, n).astype(np.uint32)


OPTS: dict[str, Any] = dict(windows=["1us", "10us", "100us"], rates=["1Gbps", "10Gbps"], bins=["50us"])
BY_IF = dict(OPTS, by=["all", "interface"])


def _same(a: burstcore.ScanResult, b: burstcore.ScanResult) -> None:
    for name in ("envelope", "backlog", "series", "groups", "summary", "interfaces"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


def _want(ts: np.ndarray, sz: np.ndarray, ifc: np.ndarray | None = None, **opts: Any) -> burstcore.ScanResult:
    """The scan of the same numbers as numpy columns, its E(τ) checked by brute force."""
    if ifc is None:
        want = burstcore.scan((ts, sz), **(opts or OPTS))
    else:
        want = burstcore.scan({"timestamp": ts, "size": sz, "interface": ifc}, **(opts or BY_IF))
    if len(ts) and ifc is None:
        for tau, row in zip([1_000, 10_000, 100_000], want.envelope.iter_rows(named=True), strict=True):
            assert row["bytes"] == oracles.envelope(ts.tolist(), sz.tolist(), tau)[0]
    return want


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_polars_tables_arrow_stream_scans_as_its_numpy_columns(chunks: int) -> None:
    """Fails on the old code: an object with only ``__arrow_c_stream__`` was taken for a capture
    ("cannot read a capture from Exported: pass a path, ...")."""
    ts, sz, ifc = _packets()
    df = pl.DataFrame(
        {
            "src": ["10.0.0.1"] * len(ts),
            "timestamp": ts,
            "size": sz,
            "interface": ifc,
            "payload": [b"x" * (i % 7) for i in range(len(ts))],
        }
    )
    cut = len(ts) // chunks
    df = pl.concat([df[i * cut : (i + 1) * cut if i < chunks - 1 else None] for i in range(chunks)], rechunk=False)
    assert df.n_chunks() == chunks
    _same(burstcore.scan(Exported(df), **BY_IF), _want(ts, sz, ifc))
    _same(burstcore.scan(Exported(df.drop("interface")), **OPTS), _want(ts, sz))
    _same(burstcore.scan(Exported(df.drop("interface").rename({"size": "wire_len"})), **OPTS), _want(ts, sz))
    # Datetime timestamps (µs, UTC), as polars exports them: read exactly, as the Series is.
    us = df.drop("interface").with_columns((pl.col("timestamp") // 1_000).cast(pl.Datetime("us", "UTC")))
    _same(burstcore.scan(Exported(us), **OPTS), _want(ts // 1_000 * 1_000, sz))
    # With the default rates (a pre-pass over the columns, imported once).
    _same(burstcore.scan(Exported(df), windows=["1us"]), burstcore.scan((ts, sz), windows=["1us"]))


def test_a_one_chunk_table_is_scanned_in_place() -> None:
    # Guard for the no-copy path: the arrays scanned are the producer's buffers, not copies.
    ts, sz, _ = _packets()
    df = pl.DataFrame({"timestamp": ts, "size": sz})
    got_ts, got_sz, _ = columns_of(Exported(df))
    assert got_ts.ctypes.data == df["timestamp"].to_numpy().ctypes.data
    assert got_sz.ctypes.data == df["size"].to_numpy().ctypes.data


@pytest.mark.parametrize("form", ["array", "stream"])
def test_hand_made_record_batches_scan_as_their_numpy_columns_and_the_rest_is_released(form: str) -> None:
    """Fails on the old code (taken for a capture). A struct made by ctypes, not polars: sliced
    (the struct's offset applies to its columns), with a column the scan does not read, which
    is released with its batch; every column is released once."""
    ts, sz, ifc = _packets()
    other = np.arange(len(ts), dtype=np.int64)
    whole = {"other": other, "size": sz, "timestamp": ts, "interface": ifc}
    if form == "array":
        batches = [CStruct(whole, offset=7)]
        source: Any = batches[0]
        want = _want(ts[7:], sz[7:], ifc[7:])
    else:
        cut = [0, 100, 101, 300]
        batches = [CStruct({k: v[a:b] for k, v in whole.items()}) for a, b in itertools.pairwise(cut)]
        batches.append(CStruct({k: v[:0] for k, v in whole.items()}))  # an empty batch, as streams may give
        source = CStructStream(batches)
        want = _want(ts, sz, ifc)
    RELEASED.clear()
    _same(burstcore.scan(source, **BY_IF), want)
    for b in batches:
        assert all(RELEASED.get(c) == 1 for c in b.children), (RELEASED, b.children)
    if form == "stream":
        assert source.calls == 1


def test_a_table_with_no_rows_scans_to_an_empty_result() -> None:
    ts, sz, _ = _packets(0)
    want = burstcore.scan((ts, sz), **OPTS)
    _same(burstcore.scan(Exported(pl.DataFrame({"timestamp": ts, "size": sz})), **OPTS), want)
    _same(burstcore.scan(CStruct({"timestamp": ts, "size": sz}), **OPTS), want)
    # A stream of no batch at all: its columns' types from its schema alone.
    _same(burstcore.scan(CStructStream([], template=CStruct({"timestamp": ts, "size": sz})), **OPTS), want)
    with pytest.raises(ValueError, match="sizes must be non-negative integers"):
        burstcore.scan(CStructStream([], template=CStruct({"timestamp": ts, "size": (ts, b"tsn:")})), **OPTS)


def test_seconds_in_a_tables_timestamp_column_are_read_or_refused_past_int64_ns() -> None:
    """As for a column given alone: polars would read seconds as milliseconds, unchecked (2^62 s
    as 0), so they are read here, exactly, and refused past int64 ns. The child's format is read
    from the struct's schema, array or stream."""
    sz = np.array([100, 200, 300], dtype=np.uint64)
    raw = np.array([2**62, 2**62 + 1, 2**62 + 2], dtype=np.int64)
    secs = np.array([1_700_000_000, 1_700_000_001, 1_700_000_004], dtype=np.int64)
    opts = {"windows": ["1s"], "rates": ["1Gbps"]}
    for fmt, kind in ((b"tss:", "timestamp"), (b"tss:UTC", "timestamp"), (b"tDs", "duration")):
        batch = CStruct({"timestamp": (raw, fmt), "size": sz})
        for src in (batch, CStructStream([batch])):
            RELEASED.clear()
            with pytest.raises(
                ValueError,
                match=rf"'timestamp' column, an Arrow {kind} in seconds .* are outside int64 nanoseconds since 1970",
            ):
                burstcore.scan(src, **OPTS)
            # Both columns released, the one refused and the one not yet imported.
            assert [RELEASED.get(c) for c in batch.children] == [1, 1]
        good = CStruct({"timestamp": (secs, fmt), "size": sz})
        for src in (good, CStructStream([good])):
            _same(burstcore.scan(src, **opts), burstcore.scan((secs * 10**9, sz), **opts))
    # In ms: read, as the same instants in ns.
    ms = {"timestamp": (raw // 2**20, b"tsm:"), "size": sz}
    _same(burstcore.scan(CStructStream([CStruct(ms)]), **OPTS), _want(raw // 2**20 * 1_000_000, sz))


def test_what_is_no_table_is_refused_saying_what_to_give() -> None:
    ts, sz, _ = _packets()
    df = pl.DataFrame({"timestamp": ts, "size": sz})
    # A stream of int64 (a polars Series, a chunked array) given as the source.
    for src in (pl.Series(ts), Exported(pl.Series(ts))):
        with pytest.raises(TypeError, match=r"^an Arrow stream of 'l' is no table: give a table"):
            burstcore.scan(src, **OPTS)
    with pytest.raises(ValueError, match=r"Arrow table has no 'timestamp' column .*its columns: 'size', 'src'"):
        burstcore.scan(Exported(df.drop("timestamp").with_columns(src=pl.lit("a"))), **OPTS)
    with pytest.raises(ValueError, match=r"needs a 'size' \(or 'wire_len'\) column"):
        burstcore.scan(Exported(df.drop("size")), **OPTS)
    with pytest.raises(ValueError, match=r"has 2 columns named 'timestamp'"):
        burstcore.scan(CStruct([("timestamp", ts), ("size", sz), ("timestamp", ts)]), **OPTS)
    with pytest.raises(ValueError, match="null rows"):
        burstcore.scan(CStruct({"timestamp": ts, "size": sz}, null_rows=True), **OPTS)
    with pytest.raises(ValueError, match="sizes must be non-negative integers"):
        burstcore.scan(Exported(df.with_columns(pl.col("size").cast(pl.Float64))), **OPTS)


def test_a_pandas_frame_is_still_told_to_go_through_polars() -> None:
    # Guard (passes on the old code too): a pandas DataFrame exports Arrow only through pyarrow,
    # so it is not taken for an Arrow table; scan says what to do with it, as before.
    pd = pytest.importorskip("pandas")
    ts, sz, _ = _packets()
    with pytest.raises(TypeError, match=r"scan\(pl\.from_pandas\(df\)\)"):
        burstcore.scan(pd.DataFrame({"timestamp": ts, "size": sz}), **OPTS)


def test_a_stream_read_once_says_so_when_given_again() -> None:
    ts, sz, _ = _packets()
    stream = CStructStream([CStruct({"timestamp": ts, "size": sz})])
    _same(burstcore.scan(stream, **OPTS), _want(ts, sz))
    with pytest.raises(ValueError, match=r"released already: a stream .* can be read once"):
        burstcore.scan(stream, **OPTS)


def test_an_iterator_of_record_batches_is_scanned_a_batch_at_a_time() -> None:
    """``iter(reader)`` of a RecordBatchReader gives record batches: each is a batch of the
    scan, as a DataFrame is, seconds read (and checked) in it too. Fails on the old code ("batch 0 is a
    CStruct, not a DataFrame or a mapping of columns")."""
    ts, sz, ifc = _packets()
    whole = {"timestamp": ts, "size": sz, "interface": ifc, "other": ts}
    cut = [0, 120, 300]
    batches = [CStruct({k: v[a:b] for k, v in whole.items()}) for a, b in itertools.pairwise(cut)]
    _same(burstcore.scan(iter(batches), **BY_IF), _want(ts, sz, ifc))
    frames = pl.DataFrame(whole)
    _same(burstcore.scan((Exported(frames[a:b]) for a, b in itertools.pairwise(cut)), **BY_IF), _want(ts, sz, ifc))
    seconds = [
        CStruct({"timestamp": ts[:5], "size": sz[:5]}),
        CStruct({"timestamp": (ts[5:9], b"tss:"), "size": sz[5:9]}),
    ]
    # Seconds read as such: ns values taken for seconds are past 2262.
    with pytest.raises(
        ValueError, match=r"^batch 1: timestamps of the 'timestamp' column, an Arrow timestamp in second"
    ):
        burstcore.scan(iter(seconds), **OPTS)
    with pytest.raises(TypeError, match=r"^batch 0: an Arrow stream of 'l' is no table"):
        burstcore.scan(iter([pl.Series(ts)]), **OPTS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gaps=st.lists(st.sampled_from([0, 1, 999, 1_000, 1_001, 40_000]), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    offset=st.integers(0, 5),
    wire_len=st.booleans(),
)
def test_any_split_into_record_batches_scans_as_the_numpy_columns(
    gaps: list[int], cuts: list[int], offset: int, wire_len: bool
) -> None:
    # Property: a stream of batches, each a struct sliced at an offset into its columns, scans
    # as the rows it holds given as numpy; each column's release seen once.
    ts = 1_000_000 + np.cumsum(np.array(gaps, dtype=np.int64))
    sz = (np.arange(len(ts), dtype=np.uint64) * 37) % 1_500 + 60
    bounds = sorted({0, len(ts), *(c for c in cuts if c <= len(ts))})
    name = "wire_len" if wire_len else "size"
    batches = []
    for a, b in itertools.pairwise(bounds):
        # ``offset`` rows of another value before the batch's own, which the struct's offset skips.
        padded = {
            k: np.concatenate([np.full(offset, 7, dtype=v.dtype), v[a:b]]) for k, v in (("timestamp", ts), (name, sz))
        }
        batches.append(CStruct({"other": padded["timestamp"], **padded}, offset=offset))
    RELEASED.clear()
    got = burstcore.scan(
        CStructStream(batches, template=CStruct({"other": ts[:0], "timestamp": ts[:0], name: sz[:0]})), **OPTS
    )
    _same(got, burstcore.scan((ts, sz), **OPTS))
    assert all(RELEASED.get(c) == 1 for b in batches for c in b.children)
