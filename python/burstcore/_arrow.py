"""Columns given as Arrow arrays by the PyCapsule interface (pyarrow, nanoarrow, arro3, ...:
``__arrow_c_array__``, or ``__arrow_c_stream__`` for a chunked array), imported as polars
Series after a look at their Arrow type (the C data interface's format string), which polars'
import does not keep: it reads a timestamp or duration in seconds as milliseconds, multiplying
without a range check, so that a time past 2262 would come out wrapped, as another time. A
column of timestamps in seconds is therefore read here, from its buffers, and scaled to ns with
a range check."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import polars as pl


class _Schema(ctypes.Structure):
    # struct ArrowSchema of the Arrow C data interface (its ABI is fixed by the specification).
    pass


_Schema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.POINTER(_Schema)),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Schema))),
    ("private_data", ctypes.c_void_p),
]


class _Array(ctypes.Structure):
    # struct ArrowArray of the Arrow C data interface.
    pass


_Array._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Array))),
    ("private_data", ctypes.c_void_p),
]


class _Stream(ctypes.Structure):
    # struct ArrowArrayStream, with its callbacks typed so that a producer's can be called.
    pass


_Stream._fields_ = [
    ("get_schema", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Schema))),
    ("get_next", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Array))),
    ("get_last_error", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_Stream))),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Stream))),
    ("private_data", ctypes.c_void_p),
]


_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.restype = ctypes.c_void_p
_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _formats(schema: _Schema) -> list[str]:
    """The format of ``schema`` and of its dictionary's values, if it is dictionary-encoded."""
    out = [(schema.format or b"").decode("utf-8", "replace")]
    if schema.dictionary:
        out.append((schema.dictionary.contents.format or b"").decode("utf-8", "replace"))
    return out


class _ExportedArray:
    """What a producer exported once (a schema and an array capsule), handed on to polars."""

    def __init__(self, pair: tuple[object, object]) -> None:
        self.pair = pair

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        return self.pair


class _ExportedStream:
    """A stream capsule, taken once from its producer (a stream may be one that can be read only
    once), handed on to polars."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.capsule


def _pointer(capsule: object, name: bytes) -> int | None:
    """The struct in ``capsule``; None if it is no capsule of that name (polars, given it, says so)."""
    try:
        return _GetPointer(capsule, name)  # type: ignore[no-any-return]
    except (ValueError, TypeError):
        return None


def _taken(column: Any) -> tuple[_ExportedArray | _ExportedStream, list[str]]:
    """``column`` exported (once), and its Arrow format strings (none if they cannot be read)."""
    formats: list[str] = []
    if hasattr(column, "__arrow_c_array__"):
        pair = column.__arrow_c_array__()
        address = _pointer(pair[0], b"arrow_schema") if isinstance(pair, tuple) and len(pair) == 2 else None
        if address:
            formats = _formats(_Schema.from_address(address))
        return _ExportedArray(pair), formats
    capsule = column.__arrow_c_stream__()
    address = _pointer(capsule, b"arrow_array_stream")
    stream = _Stream.from_address(address) if address else None
    # A released stream (release NULL) has no schema to give: polars refuses it.
    if stream is not None and stream.release and stream.get_schema:
        schema = _Schema()
        if stream.get_schema(ctypes.byref(stream), ctypes.byref(schema)) == 0:
            formats = _formats(schema)
            if schema.release:
                schema.release(ctypes.byref(schema))
    return _ExportedStream(capsule), formats


def arrow_series(name: str, column: Any, times: bool = False) -> Any:
    """``column`` as a polars Series if it is an Arrow array by the PyCapsule interface; else as
    given (a DataFrame built from a mapping of those holds each whole as one Object, whereas
    ``pl.Series`` imports it). ``times``: the column of timestamps, where one in seconds is read
    here (``_seconds_as_ns``), polars' import of it being unchecked."""
    if isinstance(column, (pl.Series, np.ndarray)) or type(column).__module__.startswith("pandas"):
        # pandas exports Arrow only through pyarrow: polars reads a numpy-backed Series without.
        return column
    if not (hasattr(column, "__arrow_c_array__") or hasattr(column, "__arrow_c_stream__")):
        return column
    exported, formats = _taken(column)
    seconds = [f for f in formats if f.startswith(("tss:", "tDs"))]
    if times and formats and seconds[:1] == formats[:1]:
        return _seconds_as_ns(name, exported, formats[0])
    if times and seconds:
        # Dictionary-encoded (seconds its values' type): rare enough to be given in ns.
        kind = "timestamp" if seconds[0].startswith("tss") else "duration"
        raise ValueError(
            f"the {name!r} column is an Arrow {kind} in seconds ({seconds[0]!r}), which polars reads as "
            "milliseconds without a range check (a time past 2262 would come out as another): give it in "
            f"ms, us or ns, e.g. pyarrow's column.cast(pa.{kind}('ns')), which checks the range, or as int64 ns"
        )
    what = "integer ns or a timestamp in s, ms, us or ns" if times else "integers"
    if any(f == "+r" for f in formats):
        # polars' import of a run-end encoded array panics (through __arrow_c_array__) or fails
        # without saying what to do.
        raise ValueError(
            f"the {name!r} column is a run-end encoded Arrow array ('+r'), which polars cannot import: "
            f"give it decoded (pyarrow.compute.run_end_decode(column)), as {what}"
        )
    try:
        return pl.Series(name, exported)
    except pl.exceptions.PolarsError as e:
        zoned = [f for f in formats if f.startswith("ts") and f[4:]]
        if not zoned:
            raise
        # A fixed offset ('+05:30') is an Arrow time zone that polars does not take.
        raise ValueError(
            f"the {name!r} column's Arrow time zone {zoned[0][4:]!r} is one polars cannot read "
            f"({str(e).splitlines()[0]}): its instants are the same in UTC, give it so, e.g. pyarrow's "
            f"column.cast(pa.timestamp('{_UNITS[zoned[0][2]]}', 'UTC'))"
        ) from e
    except BaseException as e:
        # polars' import panics (a pyo3 PanicException, no Exception) on some Arrow types it has no
        # dtype for (decimal256): said as the column's type, not as a crash.
        if type(e).__name__ != "PanicException":
            raise
        given = f" ({formats[0]!r})" if formats else ""
        raise ValueError(
            f"the {name!r} column is of an Arrow type{given} that polars cannot import "
            f"({str(e).splitlines()[0] if str(e) else 'it panicked'}): give it as {what}"
        ) from e


_UNITS = {"s": "s", "m": "ms", "u": "us", "n": "ns"}

# The seconds whose ns fit int64: 1677-09-21T00:12:44 to 2262-04-11T23:47:16 UTC.
_S_MIN = -(2**63 // 10**9)
_S_MAX = (2**63 - 1) // 10**9


def _seconds_as_ns(name: str, exported: _ExportedArray | _ExportedStream, fmt: str) -> pl.Series:
    """An Arrow timestamp ('tss:<zone>') or duration ('tDs') in seconds as a polars Series in
    ns, each value times 10^9 in int64 where it fits: past 1677-09-21 to 2262-04-11 it is a
    ``ValueError`` naming the value, where polars' own import multiplies unchecked (2^62 s came
    out as 0 ms). Read from the array's int64 buffer (a stream's arrays one by one, each
    released once copied); nulls stay nulls."""
    chunks: list[tuple[np.ndarray, np.ndarray | None]] = []
    if isinstance(exported, _ExportedArray):
        address = _pointer(exported.pair[1], b"arrow_array") if isinstance(exported.pair, tuple) else None
        if not address:
            raise ValueError(f"the {name!r} column exports no Arrow array ({fmt!r}) that can be read")
        chunks.append(_int64_buffer(_Array.from_address(address)))
    else:
        address = _pointer(exported.capsule, b"arrow_array_stream")
        stream = _Stream.from_address(address) if address else None
        if stream is None or not stream.release:
            raise ValueError(f"the {name!r} column's Arrow stream ({fmt!r}) was released: give a new one")
        k = 0
        while True:
            array = _Array()
            code = stream.get_next(ctypes.byref(stream), ctypes.byref(array))
            if code != 0:
                said = stream.get_last_error(ctypes.byref(stream)) if stream.get_last_error else None
                why = ctypes.string_at(said).decode("utf-8", "replace") if said else f"error {code}"
                raise ValueError(f"the {name!r} column's Arrow stream failed giving batch {k}: {why}")
            if not array.release:  # the end of the stream
                break
            try:
                chunks.append(_int64_buffer(array))
            finally:
                array.release(ctypes.byref(array))
            k += 1
    values = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, dtype=np.int64)
    valid = np.concatenate([np.ones(len(c[0]), bool) if c[1] is None else c[1] for c in chunks]) if chunks else None
    if valid is not None and valid.all():
        valid = None
    checked = values if valid is None else values[valid]
    if len(checked) and (checked.min() < _S_MIN or checked.max() > _S_MAX):
        bad = int(checked.min() if checked.min() < _S_MIN else checked.max())
        raise ValueError(
            f"timestamps of the {name!r} column, an Arrow {'timestamp' if fmt.startswith('tss') else 'duration'} "
            f"in seconds ({fmt!r}), are outside int64 nanoseconds since 1970 (1677-09-21 to 2262-04-11): "
            f"{bad:,} s is one"
        )
    ns = np.where(valid, values, 0) * 10**9 if valid is not None else values * 10**9
    # A zone changes how an instant is shown, never which it is: the values are UTC's.
    dtype = pl.Duration("ns") if fmt.startswith("tD") else pl.Datetime("ns", "UTC" if fmt[4:] else None)
    series = pl.Series(name, ns, dtype=pl.Int64).cast(dtype)
    return series if valid is None else series.scatter(np.flatnonzero(~valid), None)


def _int64_buffer(array: _Array) -> tuple[np.ndarray, np.ndarray | None]:
    """A primitive 64-bit Arrow array's values (copied) and validity (None: no nulls)."""
    n, offset = int(array.length), int(array.offset)
    if array.n_buffers != 2:
        raise ValueError(f"an Arrow array of seconds with {array.n_buffers} buffers, not 2")
    if n == 0:
        return np.zeros(0, dtype=np.int64), None
    data = array.buffers[1]
    values = np.ctypeslib.as_array((ctypes.c_int64 * (offset + n)).from_address(data))[offset:].copy()
    bitmap = array.buffers[0]
    if array.null_count == 0 or not bitmap:
        return values, None
    bits = np.ctypeslib.as_array((ctypes.c_uint8 * ((offset + n + 7) // 8)).from_address(bitmap))
    return values, np.unpackbits(bits, bitorder="little")[offset : offset + n].astype(bool)
