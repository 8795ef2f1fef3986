"""A capture read in batches: ``iter_packets`` (a generator of DataFrames) and ``scan_packets``
(a polars LazyFrame through an IO plugin), for captures larger than memory."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Generator, Iterator, Sequence
from typing import Any

import polars as pl

from . import _burstcore as _core
from ._packets import ProgressCallback, _warn, _with_range_note, checked_progress
from ._sources import is_rereadable, normalize
from ._types import Count, Instant, SingleSource
from ._units import parse_count, parse_filter, parse_time_range

DEFAULT_BATCH_ROWS: int = _core.DEFAULT_BATCH_ROWS
"""Rows a batch holds at most unless ``batch_rows=`` says otherwise: 2**20 (1,048,576), about
75 MB with every column (more with IPv6 or many distinct addresses), less with fewer."""

PACKET_SCHEMA: dict[str, pl.DataType] = {
    "timestamp": pl.Datetime("ns", "UTC"),
    "interface": pl.UInt32(),
    "wire_len": pl.UInt32(),
    "cap_len": pl.UInt32(),
    "linktype": pl.UInt16(),
    "src": pl.String(),
    "dst": pl.String(),
    "protocol": pl.UInt8(),
    "sport": pl.UInt16(),
    "dport": pl.UInt16(),
    "vlan": pl.UInt16(),
    "qp": pl.UInt32(),
    "ip_len": pl.UInt32(),
    "payload_len": pl.UInt32(),
    "tcp_flags": pl.UInt8(),
    "tcp_seq": pl.UInt32(),
}
"""Every column of ``read_packets`` and its dtype, in order: what ``scan_packets`` declares before
anything is read."""


READ_ONCE_MARK = "a file object, stdin or a pipe: read once (burstcore)"
"""The detail a ``scan_packets`` frame over a source read only once shows in
``LazyFrame.explain()``: ``scan`` finds it there."""

# A pcap header and no record: the smallest capture, to have the core check a filter.
_EMPTY_PCAP = bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000")


def _wanted(columns: Sequence[str] | str | None) -> list[str] | None:
    # One name is one column (not its letters); a column asked for twice comes once.
    if columns is None:
        return None
    return list(dict.fromkeys([columns] if isinstance(columns, str) else columns))


def iter_packets(
    source: SingleSource,
    columns: Sequence[str] | None = None,
    *,
    batch_rows: Count = DEFAULT_BATCH_ROWS,
    strict: bool = False,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: str | None = None,
    mmap: bool | None = None,
    progress: ProgressCallback | None = None,
) -> Generator[pl.DataFrame, None, None]:
    """Read a capture as polars DataFrames of at most ``batch_rows`` rows each, in file order:
    for captures too large to hold (``read_packets`` holds some 70 to 170 bytes a packet, this a
    batch's worth: docs/limits.md).

    ``source``: one capture, as ``read_packets`` takes it (a path, '-' for stdin, bytes, a binary
    file object; gzip and zstd recognised by content). The columns, their dtypes and the rows are
    ``read_packets``' with the same ``columns``, ``strict``, ``start``/``end``, ``filter`` and
    ``mmap``: ``pl.concat(list(iter_packets(...)))`` equals ``read_packets(...)``. ``src`` and
    ``dst`` are ``String`` in every batch, as there. ``batch_rows`` (default
    ``DEFAULT_BATCH_ROWS``, 2**20): every batch but the last holds exactly that many rows. The
    first batch is given even when no packet is chosen (an empty frame with the columns); after
    it, no empty batch.

    The capture is opened, and the arguments checked, when this is called: a missing file, an
    input that is not a capture, an unknown column or a bad filter raise here. The batches are
    then read one at a time as the loop asks for them, on the calling thread (no thread is
    started, nothing is read ahead), with the GIL released while reading. Ctrl-C while a batch is
    read raises ``KeyboardInterrupt`` within a second, as in ``read_packets``; like any exception
    out of a generator, it ends the iteration (the rows of the batch it cut short are not given,
    and a loop over the same generator afterwards sees no more batches): call ``iter_packets``
    again to read from the start.

    An error in the capture (a ``CaptureError`` such as ``CorruptCaptureError``, or
    ``TruncatedCaptureError`` with ``strict=True``; ``offset`` says where) is raised by the
    ``next()`` that reaches the batch it is in: the batches before it were given, and the
    iteration ends there. A ``CaptureWarning`` of the reader (a capture cut off mid-block, ...)
    is issued by the ``next()`` whose batch met it; those that need the whole capture read
    (packets its statistics record as lost, a ``start``/``end`` or ``filter`` that chose none of
    the packets) after the last batch, when the loop ends.

    ``scan`` takes the batches as they come, in the memory of one:
    ``scan(iter_packets(path, columns=["timestamp", "wire_len"]), rates=...)``. Give it a
    reader no batch was taken from: one a ``next()`` (or a loop left early) advanced would be
    scanned from a packet in the capture's middle, and is refused (``ValueError``); put the
    batches taken back in front (``itertools.chain([first], reader)``) or give a new one.

    Leaving the loop early (``break``), ``close()`` on the generator, or dropping it stops the
    reading and closes the input at once. ``progress`` as for ``read_packets``: called while
    batches are read, and once more at the end.
    """
    wanted = _wanted(columns)
    time_range = parse_time_range(start, end)
    rows = min(parse_count(batch_rows, name="batch_rows"), sys.maxsize)
    reader = _core.packet_batches(
        normalize(source),
        wanted,
        strict,
        checked_progress(progress),
        mmap=mmap,
        filter=parse_filter(filter),
        time_range=time_range,
        batch_rows=rows,
    )
    return _batches(reader, wanted, time_range, (start, end))


def _batches(
    reader: _core.PacketBatchReader,
    wanted: list[str] | None,
    time_range: tuple[int | None, int | None] | None,
    bounds: tuple[Any, Any],
) -> Generator[pl.DataFrame, None, None]:
    try:
        while (batch := reader.next_batch()) is not None:
            columns, warns = batch
            # Issued at the line of the loop that asked for this batch (stacklevel 3: _warn, this
            # generator, its caller).
            _warn(warns)
            df = pl.DataFrame([pl.Series(c) for c in columns])
            yield df if wanted is None or wanted == df.columns else df.select(wanted)
        drops, read = reader.finish()
        _warn(_with_range_note(drops, read, time_range, bounds))
    finally:
        reader.close()


def advanced_reader(source: Any) -> bool:
    """Whether ``source`` is an ``iter_packets`` generator that gave a batch already (a manual
    ``next()``, or a loop left early) and has more: a scan of it would see only the rest of
    the capture. Not one read to its end or closed (a scan of it finds no batch and says so)."""
    return getattr(source, "gi_code", None) is _batches.__code__ and (
        inspect.getgeneratorstate(source) == inspect.GEN_SUSPENDED
    )


def scan_packets(
    source: SingleSource,
    *,
    batch_rows: Count = DEFAULT_BATCH_ROWS,
    strict: bool = False,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: str | None = None,
    mmap: bool | None = None,
    progress: ProgressCallback | None = None,
) -> pl.LazyFrame:
    """A capture as a polars LazyFrame, read only when collected, in batches
    (``iter_packets``), through a polars IO plugin (``polars.io.plugins.register_io_source``,
    polars 1.10 or later; polars calls it unstable).

    ``source`` as for ``iter_packets``. The schema is ``read_packets``' (``PACKET_SCHEMA``). What
    the query needs is pushed into the read: only the columns it uses are decoded (as
    ``columns=``), a ``head``/``limit`` that polars pushes down stops reading once it has its
    rows, and a ``filter`` is applied to each batch as it is read (by polars' own expression, not
    translated into ``filter=``, so every packet is still decoded); polars' batch size, when it
    gives one (100,000 rows in polars 2.1), replaces ``batch_rows``. ``start``, ``end`` and
    ``filter`` (a tcpdump expression, docs/filters.md) choose the packets as ``read_packets``
    does, before the query sees them; ``strict`` and ``mmap`` as there, for each read.
    ``progress`` as there, once per read: each collect reads the capture from the start, so the
    callback starts again from its first bytes at every collect (and at each read of a query
    that reads the frame twice) and ends each with the bytes read; polars' streaming engine
    calls it from one of its threads.

    ``scan`` takes such a frame, with whatever the query derives, filters or joins, and
    collects it in batches (docs/limits.md, Memory).

    The arguments are checked when this is called (a missing file, a bad ``filter``,
    ``start``/``end`` or ``batch_rows`` raise here); the capture itself is opened when the frame
    is collected. Each collect reads the capture again from the start: ``source`` must be a path
    or bytes for a frame collected more than once, or read twice in one query (a file object or
    stdin is read once; ``scan`` of such a frame without ``rates`` gets the link-speed grid, as a
    streamed capture does, instead of a mean-rate pre-pass). Errors and
    warnings are ``iter_packets``': raised or issued while the frame is collected (polars 1.x
    may wrap the error in ``polars.exceptions.ComputeError``).

    Ctrl-C while the frame is collected raises ``KeyboardInterrupt`` within a second, also
    while the read waits on stdin or a pipe with no data coming and polars' streaming engine
    reads on a thread of its own (where Python runs no signal handler: burstcore counts SIGINT
    itself there, when Python's handler is the default one). A plain
    ``collect(engine="streaming")`` of polars 2.1 then raises a second ``KeyboardInterrupt`` at
    the next line run, as it does for any query, without burstcore too (polars raises its own
    and leaves Python's pending); ``scan(frame)`` and a loop over ``frame.collect_batches()``
    take the batches on the calling thread and raise one. ``scan`` also raises one for a Ctrl-C
    while it builds its result's frames, where polars does the same: burstcore drops the signal
    polars left pending.
    """
    try:
        from polars.io.plugins import register_io_source
    except ImportError:  # pragma: no cover - polars before 1.10
        raise ImportError(
            f"scan_packets needs polars 1.10 or later (polars.io.plugins.register_io_source); this is polars "
            f"{pl.__version__}: upgrade it (pip install -U polars), or use iter_packets"
        ) from None
    rows = min(parse_count(batch_rows, name="batch_rows"), sys.maxsize)
    time_range = parse_time_range(start, end)
    bounds = (start, end)
    checked_progress(progress)
    parsed_filter = parse_filter(filter)
    if parsed_filter is not None:
        # A bad filter is told here, at the line that wrote it (as iter_packets and read_packets
        # tell it), not at some collect later: the core parses it for a capture of no packet.
        _core.packet_batches(_EMPTY_PCAP, ["linktype"], filter=parsed_filter).close()
    given = normalize(source)
    # A file object, stdin or a pipe is gone once read: a second collect is refused, not given
    # an empty input to call "not a capture".
    once = not is_rereadable(given)
    collected = False

    def read(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, batch_size: int | None
    ) -> Iterator[pl.DataFrame]:
        per_batch = batch_size if batch_size else rows
        # polars gives n_rows as the rows to read, the predicate applied to them after (a head
        # that comes after a filter it does itself): no batch larger is needed.
        if n_rows is not None:
            per_batch = max(1, min(per_batch, n_rows))
        # The columns the predicate reads are decoded too, and dropped after it.
        wanted = None if with_columns is None else list(with_columns)
        read_cols = wanted
        if wanted is not None and predicate is not None:
            needed = predicate.meta.root_names()
            read_cols = [*wanted, *(c for c in needed if c not in wanted)]
        # A query of no column (a row count) still needs the rows: the cheapest column.
        if read_cols == []:
            read_cols = ["linktype"]
        left = n_rows
        if left == 0:
            # Nothing is read: a file object is still there for the next collect.
            yield pl.DataFrame(schema={c: PACKET_SCHEMA[c] for c in (PACKET_SCHEMA if wanted is None else wanted)})
            return
        nonlocal collected
        if once and collected:
            raise ValueError(
                "this scan_packets frame reads a file object, stdin or a pipe, which was read already "
                "(by an earlier collect, or by another part of this query, such as a join or concat of "
                "the frame with itself, or by the mean-rate pre-pass of a scan without rates=): collect "
                "the frame once (or .collect().lazy()) and query that, pass rates= to scan, or pass a "
                "path or bytes"
            )
        collected = True
        reader = _core.packet_batches(
            given,
            read_cols,
            strict,
            progress,
            mmap=mmap,
            filter=parsed_filter,
            time_range=time_range,
            batch_rows=per_batch,
        )
        batches = _batches(reader, read_cols, time_range, bounds)
        try:
            for df in batches:
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                if predicate is not None:
                    df = df.filter(predicate)
                if wanted == []:
                    # No column, and still the rows: select([]) would give a frame of height 0
                    # (polars counts them from what the scan gives: with_row_index, pl.len()).
                    df = df.drop(df.columns)
                elif wanted is not None and wanted != df.columns:
                    df = df.select(wanted)
                yield df
                if left == 0:
                    break
        finally:
            batches.close()

    # What scan() looks for in the plan to tell a frame that can be read twice (a mean-rate
    # pre-pass) from one that cannot: a polars before explain_name has no such mark, and then the
    # second read raises the error above. Told by the signature, not by trying: a TypeError of
    # the call may be anything, and making the frame again would hide it. polars reads the
    # schema's 16 dtypes here: a Ctrl-C then is the KeyboardInterrupt (`one_ctrl_c`).
    explained: dict[str, Any] = {}
    if "explain_name" in inspect.signature(register_io_source).parameters:
        explained = {
            "explain_name": "burstcore.scan_packets",
            "explain_detail": READ_ONCE_MARK if once else "read from the start at each collect",
        }
    with _core.one_ctrl_c:
        return register_io_source(read, schema=PACKET_SCHEMA, **explained)
