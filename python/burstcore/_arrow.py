"""Columns given as Arrow arrays by the PyCapsule interface (pyarrow, nanoarrow, arro3, ...:
``__arrow_c_array__``, or ``__arrow_c_stream__`` for a chunked array), imported as polars
Series after a look at their Arrow type (the C data interface's format string), which polars'
import does not keep: it reads a timestamp or duration in seconds as milliseconds, multiplying
without a range check, so that a time past 2262 would come out wrapped, as another time."""

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
    ``pl.Series`` imports it). ``times``: the column of timestamps, where one in seconds is
    refused, polars' import of it being unchecked."""
    if isinstance(column, (pl.Series, np.ndarray)) or type(column).__module__.startswith("pandas"):
        # pandas exports Arrow only through pyarrow: polars reads a numpy-backed Series without.
        return column
    if not (hasattr(column, "__arrow_c_array__") or hasattr(column, "__arrow_c_stream__")):
        return column
    exported, formats = _taken(column)
    seconds = [f for f in formats if f.startswith(("tss:", "tDs"))]
    if times and seconds:
        kind = "timestamp" if seconds[0].startswith("tss") else "duration"
        raise ValueError(
            f"the {name!r} column is an Arrow {kind} in seconds ({seconds[0]!r}), which polars reads as "
            "milliseconds without a range check (a time past 2262 would come out as another): give it in "
            f"ms, us or ns, e.g. pyarrow's column.cast(pa.{kind}('ns')), which checks the range, or as int64 ns"
        )
    what = "integer ns or a timestamp in ms, us or ns" if times else "integers"
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
