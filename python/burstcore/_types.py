"""What burstcore's functions take, as type aliases for annotated code and notebooks.

    >>> import burstcore
    >>> import polars as pl
    >>> def envelope_at(path: burstcore.Source, windows: burstcore.Durations) -> pl.DataFrame:
    ...     return burstcore.scan(path, windows=windows).envelope

Each alias is what the runtime accepts (``burstcore._units`` parses and checks the values; a value
of the right type can still be refused, e.g. a negative duration or ``"5 parsecs"``):

- ``Duration``: a string with a unit ('250us', '1.5ms', '2s'), a number of seconds (int or
  float, numpy's too), ``datetime.timedelta`` (``pandas.Timedelta`` is one, to the ns), or
  ``numpy.timedelta64``. ``Durations``: one, or any iterable of them (a list, a numpy array,
  a polars Duration Series, a generator).
- ``Rate``: a string ('10Gbps', '1.25GB/s', '1gbit') or a number of bits per second.
  ``Rates``: one, or any iterable of them.
- ``Grouping``: one of ``scan``'s groupings by name ('all', 'src', 'dst', 'pair', 'flow', 'flow4',
  'interface', 'vlan', 'qp'), for ``by=``; a list built in code is ``list[burstcore.Grouping]``
  (a ``list[str]`` could hold 'pairs', which the runtime refuses).
- ``Count``: an int or a numpy integer (``threads``, ``max_groups``, ``max_flows``, ``seed``).
- ``Quantiles``: q's in [0, 1], one or an iterable of them (floats, numpy's of any precision,
  long double too, each the decimal it is written as; ints; or a ``Fraction`` or ``Decimal``,
  read exactly).
- ``Instant``: ``datetime.datetime`` (naive ones are UTC; ``pandas.Timestamp`` is one),
  ``numpy.datetime64``, an ISO 8601 string, or an int of ns since 1970.
- ``SingleSource``: one capture: a path (str or ``os.PathLike``, '-' for stdin), its bytes
  (``bytes``, ``bytearray``, ``memoryview``: always the contents, never a path; bytes that name
  a file, such as ``os.fsencode(path)``, raise ``TypeError``) or a binary file object (anything with
  ``read(n)`` returning bytes: ``open(path, "rb")``, ``io.BytesIO``, ``gzip.open``, ``sys.stdin.buffer``).
  ``Source``: one, or a sequence of them (a list or tuple), merged in timestamp order.
- ``Filters``: which packets of the captures are read, by their headers: one tcpdump-style
  expression for all of them ('tcp port 29500'), or a list or tuple of one per capture in the order
  the captures are given (``None`` where a capture has none of its own), e.g.
  ``["src host 10.0.0.1", "src host 10.0.0.2"]`` for one capture per host, or
  ``shared_packets(...).filters`` (a ``list[str]``) as it is.
- ``Columns``: packets already in memory, for ``scan`` only: a polars DataFrame or a mapping with
  'timestamp' and 'size' columns, a ``(timestamps_ns, sizes)`` pair of arrays, or an Arrow table
  by the PyCapsule interface (``__arrow_c_stream__`` giving a stream of structs, as a pyarrow
  Table or RecordBatchReader does, or ``__arrow_c_array__`` giving a struct, as a RecordBatch
  does; the type checker cannot tell a struct from an array of another type, the runtime does).
- ``Batches``: such packets a batch at a time, for ``scan`` only: an iterable of DataFrames or
  mappings (a list or tuple of them, a generator, ``iter_packets(...)``), a list or an iterator
  of Arrow tables (``table.to_batches()``, a RecordBatchReader), or a polars LazyFrame.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
import polars as pl

# Real objects at run time too (not strings), so that typing.get_type_hints, pydantic or
# typeguard can evaluate an annotation that names them.
Duration: TypeAlias = str | int | float | np.integer[Any] | np.floating[Any] | datetime.timedelta | np.timedelta64
Durations: TypeAlias = Duration | Iterable[Duration]
Rate: TypeAlias = str | int | float | np.integer[Any] | np.floating[Any]
Rates: TypeAlias = Rate | Iterable[Rate]
# The groupings by name, for type checkers: `by="pairs"` is caught before the call is run.
Grouping: TypeAlias = Literal["all", "src", "dst", "pair", "flow", "flow4", "interface", "vlan", "qp"]
Instant: TypeAlias = str | int | np.integer[Any] | datetime.datetime | np.datetime64
# A count (threads, max_groups, seed, ...): any integer, numpy's too (not a bool, by the runtime).
Count: TypeAlias = int | np.integer[Any]
# Quantiles q in [0, 1]: one, or any iterable of them; a Fraction or Decimal is read exactly.
Quantiles: TypeAlias = (
    float | np.floating[Any] | Fraction | Decimal | Iterable[float | np.floating[Any] | Fraction | Decimal]
)


class BinaryReader(Protocol):
    """A binary file object, as burstcore reads it: ``read(n)`` returns up to ``n`` bytes (``b""``
    at the end). ``typing.BinaryIO``, ``io.BufferedReader``, ``io.BytesIO`` and ``gzip.GzipFile``
    all are."""

    def read(self, size: int, /) -> bytes | bytearray | memoryview:
        """Up to ``size`` bytes of the capture, ``b""`` at its end."""
        ...


class _ArrowStreamTable(Protocol):
    """A table exported as an Arrow stream of structs (pyarrow Table, RecordBatchReader, ...)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """An ``arrow_array_stream`` PyCapsule."""
        ...


class _ArrowArrayTable(Protocol):
    """A table exported as one Arrow struct array (pyarrow RecordBatch, ...)."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """An ``arrow_schema`` and an ``arrow_array`` PyCapsule."""
        ...


SingleSource: TypeAlias = str | os.PathLike[str] | os.PathLike[bytes] | bytes | bytearray | memoryview | BinaryReader
Source: TypeAlias = SingleSource | Sequence[SingleSource]
Columns: TypeAlias = pl.DataFrame | Mapping[str, Any] | tuple[Any, Any] | _ArrowStreamTable | _ArrowArrayTable
Batches: TypeAlias = pl.LazyFrame | Iterable[pl.DataFrame | Mapping[str, Any] | _ArrowStreamTable | _ArrowArrayTable]
# list[str] beside list[str | None]: a list is invariant, so shared_packets' `filters` (a
# list[str]) would not be a list[str | None] to a type checker, though it is what filter= takes.
Filters: TypeAlias = str | list[str] | list[str | None] | tuple[str | None, ...]

__all__ = [
    "Batches",
    "BinaryReader",
    "Columns",
    "Count",
    "Duration",
    "Durations",
    "Filters",
    "Grouping",
    "Instant",
    "Quantiles",
    "Rate",
    "Rates",
    "SingleSource",
    "Source",
]
