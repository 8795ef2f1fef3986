"""An Arrow table given by the PyCapsule interface: an object whose ``__arrow_c_stream__`` gives a
stream of struct arrays (pyarrow's Table, RecordBatch and RecordBatchReader, duckdb and nanoarrow
results), or whose ``__arrow_c_array__`` gives one struct array, taken as a mapping of the
columns a scan reads. Their child arrays are moved out of each batch, as the Arrow C data
interface allows (the batch is released at once, with the columns not read, never imported),
and each column is handed on as a stream of its own, which ``arrow_series`` then checks (its
Arrow format, a unit of seconds refused) and imports as it does a column given alone: a column
of one batch stays one chunk, not copied."""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

from ._arrow import _Array, _pointer, _Schema, _Stream

# What a scan reads of a table: the others are released unread.
_WANTED = ("timestamp", "size", "wire_len", "interface")


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# Called from a capsule's destructor, which has the capsule as a bare pointer.
_CapsulePointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
# The capsule keeps a pointer to its name: this buffer lives as long as the module.
_STREAM_NAME = ctypes.create_string_buffer(b"arrow_array_stream")


def _is_released(struct: ctypes.Structure) -> bool:
    return not struct.release  # type: ignore[attr-defined]


def _mark_released(struct: ctypes.Structure) -> None:
    # A NULL release callback is the interface's mark of a released (or moved-out) struct.
    field = type(struct).release  # type: ignore[attr-defined]
    ctypes.c_void_p.from_address(ctypes.addressof(struct) + field.offset).value = None


def _release_arrays(arrays: list[_Array]) -> None:
    """Releases those of ``arrays`` not released (nor moved out) already."""
    for array in arrays:
        if not _is_released(array):
            array.release(ctypes.byref(array))


def _text(raw: bytes | None) -> str:
    return (raw or b"").decode("utf-8", "replace")


def is_arrow_table(source: Any) -> bool:
    """Whether ``source`` is to be read as an Arrow table: anything exporting Arrow by the
    PyCapsule interface but a pandas object (which exports only through pyarrow; scan says
    what to do with a pandas DataFrame)."""
    if type(source).__module__.startswith("pandas"):
        return False
    return hasattr(source, "__arrow_c_stream__") or hasattr(source, "__arrow_c_array__")


class _TableSchema:
    """The table's struct schema, kept (and released) until the last column stream is done,
    as the columns' own schemas are its children."""

    def __init__(self, schema: _Schema, owner: object | None) -> None:
        # ``owner``: the producer's schema capsule, which releases it; else it is ours to release.
        self.schema = schema
        self.owner = owner

    def child(self, i: int) -> int:
        children = ctypes.cast(self.schema.children, ctypes.POINTER(ctypes.POINTER(_Schema)))
        return ctypes.addressof(children[i].contents)

    def names(self) -> list[str]:
        children = ctypes.cast(self.schema.children, ctypes.POINTER(ctypes.POINTER(_Schema)))
        return [_text(children[i].contents.name) for i in range(self.schema.n_children)]

    def __del__(self) -> None:
        if self.owner is None and not _is_released(self.schema):
            self.schema.release(ctypes.byref(self.schema))


class _ColumnStream:
    """One column of the table (its child arrays, one a batch, moved out of their parents) as a
    stream, exported once."""

    def __init__(self, table: _TableSchema, index: int, arrays: list[_Array]) -> None:
        self.table = table
        self.index = index
        self.arrays = arrays

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        if self.table is None:
            raise ValueError("this column of an Arrow table was exported already")
        shell = _Stream(_get_schema, _get_next, _get_last_error, _release, None)
        key = next(_KEYS)
        shell.private_data = key
        _LIVE[key] = (self.table, self.index, self.arrays)
        _SHELLS[ctypes.addressof(shell)] = shell
        self.table, self.arrays = None, []  # type: ignore[assignment]
        return _PyCapsule_New(ctypes.addressof(shell), _STREAM_NAME, ctypes.cast(_capsule_gone, ctypes.c_void_p))

    def release(self) -> None:
        """Releases the arrays not exported (a column the scan did not get to)."""
        _release_arrays(self.arrays)
        self.arrays = []

    def __del__(self) -> None:
        self.release()


# The streams handed out and not yet released, by their private_data, and the structs their
# capsules point to: the consumer moves the struct out and calls ``_release`` on its own copy.
_KEYS = itertools.count(1)
_LIVE: dict[int, tuple[_TableSchema, int, list[_Array]]] = {}
_SHELLS: dict[int, _Stream] = {}


@ctypes.CFUNCTYPE(None, ctypes.POINTER(_Schema))
def _release_schema_copy(schema: Any) -> None:
    # A copy of a column's schema: its strings and children stay the table schema's.
    _mark_released(schema.contents)


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Schema))
def _get_schema(stream: Any, out: Any) -> int:
    entry = _LIVE.get(stream.contents.private_data)
    if entry is None:
        return 22  # EINVAL: released
    table, index, _ = entry
    ctypes.memmove(out, table.child(index), ctypes.sizeof(_Schema))
    out.contents.release = _release_schema_copy
    return 0


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Array))
def _get_next(stream: Any, out: Any) -> int:
    entry = _LIVE.get(stream.contents.private_data)
    if entry is None:
        return 22
    arrays = entry[2]
    if arrays:
        # Moved to the consumer, who releases it.
        ctypes.memmove(out, ctypes.byref(arrays.pop(0)), ctypes.sizeof(_Array))
    else:
        ctypes.memset(out, 0, ctypes.sizeof(_Array))  # the end of the stream: a released array
    return 0


@ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_Stream))
def _get_last_error(stream: Any) -> None:
    return None


def _release_stream(address: int) -> None:
    stream = _Stream.from_address(address)
    entry = _LIVE.pop(stream.private_data, None)
    _mark_released(stream)
    if entry is not None:
        _release_arrays(entry[2])


@ctypes.CFUNCTYPE(None, ctypes.POINTER(_Stream))
def _release(stream: Any) -> None:
    _release_stream(ctypes.addressof(stream.contents))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_gone(capsule: int) -> None:
    address = _CapsulePointer(capsule, _STREAM_NAME)
    shell = _SHELLS.pop(address, None)
    if shell is not None and not _is_released(shell):
        _release_stream(address)  # never taken by a consumer


def _not_a_table(what: str) -> TypeError:
    return TypeError(
        f"an Arrow {what} is no table: give a table (an Arrow struct of columns, e.g. a "
        "pyarrow Table, RecordBatch or RecordBatchReader), or the columns in a mapping or a (timestamps, sizes) tuple"
    )


def _moved_children(batch: _Array, indexes: list[int], n_children: int, k: int) -> list[_Array]:
    """The children ``indexes`` of ``batch`` (a struct array), moved out of it, each made the
    slice of the struct's rows; ``batch`` is released."""
    try:
        if batch.n_children != n_children:
            raise ValueError(
                f"batch {k} of the Arrow table has {batch.n_children} columns where its schema has {n_children}"
            )
        # A null row of a struct would be a null in every column: tables have none.
        if batch.null_count != 0 and batch.n_buffers and batch.buffers[0]:
            raise ValueError(f"batch {k} of the Arrow table has null rows (a struct array with nulls, not a table)")
        out = []
        for i in indexes:
            child = batch.children[i].contents
            moved = _Array()
            ctypes.memmove(ctypes.byref(moved), ctypes.byref(child), ctypes.sizeof(_Array))
            _mark_released(child)
            # The struct's offset applies to its children: row j is the child's row offset + j.
            moved.offset += batch.offset
            moved.length = batch.length
            out.append(moved)
        return out
    finally:
        # The interface's rule for children moved out: the parent is released at once.
        batch.release(ctypes.byref(batch))


def _stream_error(stream: _Stream, code: int, doing: str) -> ValueError:
    raw = stream.get_last_error(ctypes.byref(stream)) if stream.get_last_error else None
    said = _text(ctypes.string_at(raw)) if raw else f"error code {code}"
    return ValueError(f"the Arrow table's stream failed {doing}: {said}")


def _table_of(source: Any) -> tuple[_TableSchema, list[_Array]]:
    """The schema and the batches (struct arrays, ours to release) of ``source``."""
    if not hasattr(source, "__arrow_c_stream__"):
        pair = source.__arrow_c_array__()
        ok = isinstance(pair, tuple) and len(pair) == 2
        schema_at = _pointer(pair[0], b"arrow_schema") if ok else None
        array_at = _pointer(pair[1], b"arrow_array") if ok else None
        if not (schema_at and array_at):
            raise TypeError(f"{type(source).__name__}.__arrow_c_array__() gave no Arrow schema and array capsules")
        table = _TableSchema(_Schema.from_address(schema_at), owner=pair[0])
        given = _Array.from_address(array_at)
        if _is_released(given):
            raise ValueError("the Arrow array was released already (its capsule was read before)")
        batch = _Array()
        ctypes.memmove(ctypes.byref(batch), ctypes.byref(given), ctypes.sizeof(_Array))
        _mark_released(given)
        return table, [batch]
    capsule = source.__arrow_c_stream__()
    address = _pointer(capsule, b"arrow_array_stream")
    if not address:
        raise TypeError(f"{type(source).__name__}.__arrow_c_stream__() gave no Arrow stream capsule")
    stream = _Stream.from_address(address)
    if _is_released(stream):
        raise ValueError(
            "the Arrow stream was released already: a stream (a RecordBatchReader, a query's result) "
            "can be read once; give a new one, or the table it came from"
        )
    schema = _Schema()
    code = stream.get_schema(ctypes.byref(stream), ctypes.byref(schema))
    if code != 0:
        raise _stream_error(stream, code, "giving its schema")
    table = _TableSchema(schema, owner=None)
    batches: list[_Array] = []
    try:
        if _text(schema.format) != "+s":
            return table, batches  # not a table: no batch of it is read
        while True:
            batch = _Array()
            code = stream.get_next(ctypes.byref(stream), ctypes.byref(batch))
            if code != 0:
                raise _stream_error(stream, code, f"giving batch {len(batches)}")
            if _is_released(batch):
                return table, batches
            batches.append(batch)
    except BaseException:
        _release_arrays(batches)
        raise
    finally:
        stream.release(ctypes.byref(stream))


def arrow_table(source: Any) -> dict[str, _ColumnStream]:
    """Of the Arrow table ``source``, its columns ``timestamp``, ``size``, ``wire_len`` and
    ``interface`` that it has, each a stream of its batches' arrays; the others released.
    The table is read whole here: a stream (a RecordBatchReader) is used up."""
    table, batches = _table_of(source)
    fmt = _text(table.schema.format)
    if fmt != "+s":
        _release_arrays(batches)
        raise _not_a_table(f"{'stream' if hasattr(source, '__arrow_c_stream__') else 'array'} of {fmt!r}")
    names = table.names()
    for name in _WANTED:
        if names.count(name) > 1:
            _release_arrays(batches)
            raise ValueError(f"the Arrow table has {names.count(name)} columns named {name!r}: give it one")
    indexes = [names.index(n) for n in _WANTED if n in names]
    if "timestamp" not in names:
        _release_arrays(batches)
        shown = ", ".join(repr(n) for n in names[:10]) + (", ..." if len(names) > 10 else "")
        raise ValueError(
            f"the Arrow table has no 'timestamp' column (int64 ns or a timestamp), its columns: {shown or 'none'}"
        )
    columns: list[list[_Array]] = [[] for _ in indexes]
    for k, batch in enumerate(batches):
        try:
            moved = _moved_children(batch, indexes, len(names), k)
        except BaseException:
            _release_arrays(batches[k + 1 :])
            for column in columns:
                _release_arrays(column)
            raise
        for column, array in zip(columns, moved, strict=True):
            column.append(array)
    return {names[i]: _ColumnStream(table, i, column) for i, column in zip(indexes, columns, strict=True)}
