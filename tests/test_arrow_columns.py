"""In-memory columns given as Arrow arrays, without pyarrow: through the Arrow PyCapsule interface
that pyarrow, nanoarrow, arro3 and polars export. ``__arrow_c_array__`` is made here by hand
(ctypes structs over numpy buffers, per the Arrow C data interface), so the import is checked
against a producer that is not polars; ``__arrow_c_stream__`` (a chunked array) is polars' own
export of a Series, one stream batch per chunk. Every form scans as the same numbers in numpy
arrays do, in a tuple, a mapping (with an interface column) and batches of mappings; nulls and
wrong types are refused, saying what to give."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import burstcore
from tests import oracles
from tests.arrow_c import _Array, _PyCapsule_New, _Schema


# The consumer calls `release` on the struct it moved out; the buffers stay owned by the
# producer object below (kept alive by the test), so releasing only marks the struct released.
@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release_schema(p: int) -> None:
    ctypes.cast(p, ctypes.POINTER(_Schema)).contents.release = None


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release_array(p: int) -> None:
    ctypes.cast(p, ctypes.POINTER(_Array)).contents.release = None


_FORMATS = {
    np.dtype(np.int8): b"c",
    np.dtype(np.uint8): b"C",
    np.dtype(np.int16): b"s",
    np.dtype(np.uint16): b"S",
    np.dtype(np.int32): b"i",
    np.dtype(np.uint32): b"I",
    np.dtype(np.int64): b"l",
    np.dtype(np.uint64): b"L",
    np.dtype(np.float64): b"g",
}


class CArray:
    """A primitive Arrow array exported by hand through ``__arrow_c_array__``; ``valid`` (one bool
    a value) gives it a validity bitmap, ``fmt`` overrides its format (``b"tsu:"``: µs stamps),
    ``offset`` makes it the slice of ``values`` from there (a slice of a parent array)."""

    def __init__(
        self, values: np.ndarray, valid: list[bool] | None = None, fmt: bytes | None = None, offset: int = 0
    ) -> None:
        self.values = np.ascontiguousarray(values)
        self.offset = offset
        self.fmt = fmt or _FORMATS[self.values.dtype]
        self.bitmap = None if valid is None else np.packbits(np.array(valid, dtype=bool), bitorder="little")
        self.nulls = 0 if valid is None else valid.count(False)
        self.held: list[Any] = []

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        schema = _Schema(self.fmt, b"", None, 2, 0, None, None, ctypes.cast(_release_schema, ctypes.c_void_p).value)
        buffers = (ctypes.c_void_p * 2)(
            None if self.bitmap is None else self.bitmap.ctypes.data, self.values.ctypes.data
        )
        array = _Array(
            len(self.values) - self.offset,
            # Unknown (-1) in a slice with a bitmap, as a producer may leave it; none without.
            -1 if self.offset and self.bitmap is not None else self.nulls if not self.offset else 0,
            self.offset,
            2,
            0,
            ctypes.cast(buffers, ctypes.c_void_p).value,
            None,
            None,
            ctypes.cast(_release_array, ctypes.c_void_p).value,
            None,
        )
        self.held.append((schema, buffers, array))
        return (
            _PyCapsule_New(ctypes.addressof(schema), b"arrow_schema", None),
            _PyCapsule_New(ctypes.addressof(array), b"arrow_array", None),
        )


class CStream:
    """Only ``__arrow_c_stream__``, as a chunked array gives it: polars' export of ``series``."""

    def __init__(self, series: pl.Series) -> None:
        self.series = series

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.series.__arrow_c_stream__(requested_schema)


def _chunked(values: np.ndarray) -> CStream:
    s = pl.Series(values)
    cut = len(s) // 3
    s = pl.concat([s[:cut], s[cut : 2 * cut], s[2 * cut :]], rechunk=False)
    assert s.n_chunks() == 3
    return CStream(s)


def _packets() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    ts = 1_700_000_000_000_000_000 + np.cumsum(rng.integers(0, 3_000, 300)).astype(np.int64)
    return ts, rng.integers(60, 1_515, 300).astype(np.uint64), rng.integers(0, 3, 300).astype(np.uint32)


OPTS: dict[str, Any] = dict(windows=["1us", "10us", "100us"], rates=["1Gbps", "10Gbps"], bins=["50us"])
FORMS = {
    "c_array": lambda a: CArray(a),
    "c_stream": lambda a: CStream(pl.Series(a)),
    "c_stream_chunked": _chunked,
}


def _same(a: burstcore.ScanResult, b: burstcore.ScanResult) -> None:
    for name in ("envelope", "backlog", "series", "groups", "summary", "interfaces"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


@pytest.mark.parametrize("form", FORMS)
def test_arrow_columns_scan_as_their_numpy_twins(form: str) -> None:
    ts, sz, ifc = _packets()
    arrow = FORMS[form]
    want = burstcore.scan((ts, sz), **OPTS)
    # E(τ) of the packets by brute force, so that the twin itself is checked.
    for tau, row in zip([1_000, 10_000, 100_000], want.envelope.iter_rows(named=True), strict=True):
        assert row["bytes"] == oracles.envelope(ts.tolist(), sz.tolist(), tau)[0]
    _same(burstcore.scan((arrow(ts), arrow(sz)), **OPTS), want)
    _same(burstcore.scan({"timestamp": arrow(ts), "size": arrow(sz)}, **OPTS), want)
    _same(burstcore.scan({"timestamp": arrow(ts), "wire_len": arrow(sz)}, **OPTS), want)
    by_if = dict(OPTS, by=["all", "interface"])
    want_if = burstcore.scan({"timestamp": ts, "size": sz, "interface": ifc}, **by_if)
    assert want_if.groups.height > 1
    _same(burstcore.scan({"timestamp": arrow(ts), "size": arrow(sz), "interface": arrow(ifc)}, **by_if), want_if)
    # Batches of mappings of Arrow arrays: one stream, as the numpy columns whole.
    batches = [{"timestamp": arrow(ts[a:b]), "size": arrow(sz[a:b])} for a, b in ((0, 100), (100, 300))]
    _same(burstcore.scan(batches, **OPTS), want)


def test_arrow_timestamps_in_microseconds_are_read_exactly() -> None:
    us = np.array([1_700_000_000_000_000, 1_700_000_000_000_003, 1_700_000_000_000_010], dtype=np.int64)
    sz = np.array([100, 200, 300], dtype=np.uint64)
    want = burstcore.scan((us * 1_000, sz), **OPTS)
    _same(burstcore.scan((CArray(us, fmt=b"tsu:"), CArray(sz)), **OPTS), want)
    _same(burstcore.scan({"timestamp": CArray(us, fmt=b"tsu:"), "size": CArray(sz)}, **OPTS), want)


@pytest.mark.parametrize("container", ["tuple", "mapping"])
def test_nulls_and_wrong_types_in_arrow_columns_are_refused(container: str) -> None:
    ts, sz, _ = _packets()

    def scan(t: Any, s: Any) -> None:
        burstcore.scan((t, s) if container == "tuple" else {"timestamp": t, "size": s}, **OPTS)

    valid = [i != 5 for i in range(len(ts))]
    with pytest.raises(ValueError, match="must not contain nulls"):
        scan(CArray(ts, valid), CArray(sz))
    with pytest.raises(ValueError, match="must not contain nulls"):
        scan(CArray(ts), CArray(sz, valid))
    # A null in a later chunk of a chunked array.
    late = pl.concat([pl.Series(ts[:10]), pl.Series([None, *ts[11:]], dtype=pl.Int64)], rechunk=False)
    with pytest.raises(ValueError, match="must not contain nulls"):
        scan(CStream(late), CArray(sz))
    with pytest.raises(ValueError, match="timestamps must be integer nanoseconds or Datetime, not Float64"):
        scan(CArray(ts.astype(np.float64)), CArray(sz))
    with pytest.raises(ValueError, match="timestamps must be integer nanoseconds or Datetime, not String"):
        scan(CStream(pl.Series([str(t) for t in ts])), CArray(sz))
    with pytest.raises(ValueError, match="sizes must be non-negative integers"):
        scan(CArray(ts), CArray(sz.astype(np.float64)))
    # Columns of two lengths: polars' words for a mapping (a DataFrame is built of it), as for numpy.
    short = (
        r"timestamp and size columns differ in length \(300 vs 299\)"
        if container == "tuple"
        else r"height of column 'size' \(299\) does not match height of column 'timestamp' \(300\)"
    )
    with pytest.raises(ValueError, match=short):
        scan(CArray(ts), CArray(sz[:-1]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_arrow_integers_of_every_width_scan_as_int64(dtype: str) -> None:
    # Guard: every Arrow integer type is read as its values, timestamps and sizes alike.
    ts = np.array([1, 5, 9, 100, 120], dtype=dtype)
    sz = np.array([1, 2, 4, 8, 16], dtype=dtype)
    want = burstcore.scan((ts.astype(np.int64), sz.astype(np.uint64)), **OPTS)
    _same(burstcore.scan({"timestamp": CArray(ts), "size": CArray(sz)}, **OPTS), want)
    _same(burstcore.scan((CArray(ts), CArray(sz)), **OPTS), want)


def test_a_sliced_arrow_array_is_its_slice() -> None:
    # Guard: an array at an offset into its parent's buffers (pyarrow's arr[k:]), a null before it.
    ts, sz, _ = _packets()
    valid = [i != 2 for i in range(len(ts))]
    want = burstcore.scan((ts[7:], sz[7:]), **OPTS)
    got = burstcore.scan({"timestamp": CArray(ts, valid, offset=7), "size": CArray(sz, offset=7)}, **OPTS)
    _same(got, want)


def test_arrow_timestamps_in_seconds_are_read_exactly_or_refused_past_int64_ns() -> None:
    """polars imports an Arrow timestamp (or duration) in seconds as milliseconds, multiplying
    without a check: 2^62 s came out as 0 ns, the scan's first packet at 1970 with no word said;
    then such a column was refused. Now it is read from its buffer and scaled to ns with a range
    check: up to the last second int64 ns hold exactly (a slice, a null refused as any null),
    one second past it (either end) and 2^62 s refused with the range."""
    sz = np.array([100, 200, 300], dtype=np.uint64)
    opts = {"windows": ["1s"], "rates": ["1Gbps"]}  # seconds apart, 584 years at most: no bins
    top, bottom = (2**63 - 1) // 10**9, -(2**63 // 10**9)
    formats = ((b"tss:", "timestamp"), (b"tss:UTC", "timestamp"), (b"tss:+05:30", "timestamp"), (b"tDs", "duration"))
    for values in ([1_700_000_000, 1_700_000_001, 1_700_000_003], [top - 2, top - 1, top], [bottom, bottom + 1, 0]):
        raw = np.array(values, dtype=np.int64)
        want = burstcore.scan((raw * 10**9, sz), **opts)
        for fmt, _ in formats:
            for src in ((CArray(raw, fmt=fmt), CArray(sz)), {"timestamp": CArray(raw, fmt=fmt), "size": CArray(sz)}):
                _same(burstcore.scan(src, **opts), want)
        sliced = np.array([2**62, *values], dtype=np.int64)  # the value before the slice is not read
        _same(burstcore.scan((CArray(sliced, fmt=b"tss:", offset=1), CArray(sz)), **opts), want)
    outside = r"Arrow (timestamp|duration) in seconds .* are outside int64 nanoseconds since 1970 \(1677-09-21"
    for values in ([1, 2, top + 1], [bottom - 1, 0, 1], [2**62, 2**62 + 1, 2**62 + 2]):
        raw = np.array(values, dtype=np.int64)
        for fmt, kind in formats:
            for src in ((CArray(raw, fmt=fmt), CArray(sz)), {"timestamp": CArray(raw, fmt=fmt), "size": CArray(sz)}):
                with pytest.raises(ValueError, match=outside) as e:
                    burstcore.scan(src, **opts)
                assert f"Arrow {kind} in seconds" in str(e.value)
    with pytest.raises(ValueError, match="must not contain nulls"):
        burstcore.scan((CArray(np.array([1, 2**62, 3]), [True, False, True], fmt=b"tss:"), CArray(sz)), **opts)
    # Sizes in seconds are no sizes: refused as such, whatever the unit.
    with pytest.raises(ValueError, match="sizes must be non-negative integers"):
        burstcore.scan((CArray(sz.astype(np.int64)), CArray(sz.astype(np.int64), fmt=b"tss:")), **opts)


def test_a_stream_is_asked_for_its_arrow_type_once_and_still_scanned() -> None:
    # The format of a stream (read by get_schema, no batch taken) as polars exports it.
    from burstcore._arrow import _taken

    s = pl.Series([1, 2, 3], dtype=pl.Datetime("us", "UTC"))
    exported, formats = _taken(CStream(s))
    assert formats == ["tsu:UTC"]
    assert pl.Series("t", exported).to_list() == s.to_list()

    class Once(CStream):
        calls = 0

        def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
            Once.calls += 1
            if Once.calls > 1:
                raise RuntimeError("a stream read twice")
            return super().__arrow_c_stream__(requested_schema)

    ts, sz, _ = _packets()
    _same(
        burstcore.scan({"timestamp": Once(pl.Series(ts)), "size": CArray(sz)}, **OPTS), burstcore.scan((ts, sz), **OPTS)
    )


def test_times_past_int64_ns_are_a_value_error_with_the_range_not_a_panic() -> None:
    """polars' own ms -> ns cast of a time past 2262 panicked (pyo3's PanicException, no
    Exception); µs said polars' words. Now each says the range, and the last µs that fits is
    read exactly."""
    sz = np.array([100, 200], dtype=np.uint64)
    outside = (
        r"timestamps of (Datetime|Duration).* are outside int64 nanoseconds since 1970 \(1677-09-21 to 2262-04-11\)"
    )
    for unit, scale in (("ms", 10**6), ("us", 10**3)):
        top = (2**63 - 1) // scale
        bottom = -(2**63 // scale)
        for dtype in (pl.Datetime(unit), pl.Datetime(unit, "UTC"), pl.Duration(unit)):  # type: ignore[arg-type]
            fits = burstcore.scan(
                # 584 years apart: the bins left sparse.
                {"timestamp": pl.Series([bottom, top]).cast(dtype), "size": sz},
                **OPTS,
                fill_empty_bins=False,
            )
            assert fits.summary["first"].dt.epoch("ns").to_list() == [bottom * scale]
            assert fits.summary["last"].dt.epoch("ns").to_list() == [top * scale]
            for past in ([bottom, top + 1], [bottom - 1, top], [2**62, 2**62 + 1]):
                with pytest.raises(ValueError, match=outside):
                    burstcore.scan({"timestamp": pl.Series(past).cast(dtype), "size": sz}, **OPTS)
        arrow = b"tsm:" if unit == "ms" else b"tsu:"
        with pytest.raises(ValueError, match=outside):
            burstcore.scan((CArray(np.array([0, top + 1], dtype=np.int64), fmt=arrow), CArray(sz)), **OPTS)


def test_an_arrow_time_zone_polars_cannot_read_says_to_give_utc() -> None:
    # A fixed offset is an Arrow time zone polars refuses: its words alone said to give integers.
    us = np.array([1_700_000_000_000_000, 1_700_000_000_000_003], dtype=np.int64)
    with pytest.raises(
        ValueError, match=r"'timestamp' column's Arrow time zone '\+05:30'.*pa\.timestamp\('us', 'UTC'\)"
    ):
        burstcore.scan({"timestamp": CArray(us, fmt=b"tsu:+05:30"), "size": CArray(us)}, **OPTS)


def test_only_the_columns_a_scan_reads_are_taken_from_a_mapping() -> None:
    """A mapping's other columns (a source address, a payload) were all imported and built into
    one DataFrame: one of another length, or that polars cannot import, failed the scan, and
    each was converted (numpy strings copied) for nothing. Now they are not touched."""

    class Untouchable:
        def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
            raise AssertionError("a column the scan does not read was exported")

    ts, sz, ifc = _packets()
    want = burstcore.scan((ts, sz), **OPTS)
    others = {"src": np.array(["10.0.0.1"] * 7), "payload": Untouchable(), "wire_len": CArray(sz[:5])}
    _same(burstcore.scan({"timestamp": CArray(ts), "size": CArray(sz), **others}, **OPTS), want)
    # With an interface column, and pandas, numpy and polars beside Arrow in one mapping.
    pd = pytest.importorskip("pandas")
    by_if = dict(OPTS, by=["all", "interface"])
    mixed = {"timestamp": pd.Series(ts), "size": CArray(sz), "interface": pl.Series(ifc), **others}
    _same(burstcore.scan(mixed, **by_if), burstcore.scan({"timestamp": ts, "size": sz, "interface": ifc}, **by_if))


def test_pandas_datetimes_are_read_exactly_without_pyarrow() -> None:
    """polars converts a pandas datetime Series only through pyarrow: without it every pandas
    datetime, naive or aware, raised ImportError. They are read as numpy's, exactly, never
    handed to polars (so that pyarrow, installed for tests/test_arrow_pyarrow.py, plays no part):
    an aware one as its UTC instants, a unit of seconds checked against int64 ns, NaT refused."""
    pd = pytest.importorskip("pandas")
    secs = np.array([1_700_000_000, 1_700_000_001, 1_700_000_003], dtype=np.int64)
    sz = np.array([100, 200, 300], dtype=np.uint64)
    want = burstcore.scan((secs * 10**9, sz), **OPTS)
    naive = pd.Series(secs.astype("datetime64[s]"))
    aware = pd.Series(pd.to_datetime(secs, unit="s", utc=True)).dt.tz_convert("Asia/Kolkata")
    for ts in (naive, aware, pd.DatetimeIndex(aware), pd.Series(secs.astype("timedelta64[s]"))):
        _same(burstcore.scan((ts, sz), **OPTS), want)
        _same(burstcore.scan({"timestamp": ts, "size": pd.Series(sz)}, **OPTS), want)
    with pytest.raises(ValueError, match=r"timestamps of numpy datetime64\[s\] are outside int64 nanoseconds"):
        burstcore.scan((pd.Series(np.array([0, 2**40], dtype="datetime64[s]")), sz[:2]), **OPTS)
    with pytest.raises(ValueError, match="must not contain NaT"):
        burstcore.scan({"timestamp": pd.Series(pd.to_datetime([1, None], unit="s")), "size": sz[:2]}, **OPTS)
