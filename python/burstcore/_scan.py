"""``burstcore.scan``: envelopes, peak-to-mean ratios, backlogs and binned series in one pass."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._columns import batches_rereadable, columns_of, is_batches, is_columns, scan_batches
from ._packets import ProgressCallback, _warn, _with_range_note, checked_progress, thread_count
from ._shared import warn_if_shared
from ._sources import is_rereadable, normalize_each
from ._types import Batches, Columns, Count, Duration, Durations, Filters, Grouping, Instant, Rates, Source
from ._units import (
    DEFAULT_RATE_MULTIPLES,
    LINK_SPEED_GRID_BPS,
    FramesEqual,
    WrongTypeError,
    check_choice,
    default_windows_ns,
    format_duration,
    length_ns,
    parse_bin_origin,
    parse_count,
    parse_duration,
    parse_filters,
    parse_rate,
    parse_time_range,
    said,
    typed_counts,
)

# polars' own copy of the numpy crate sets up numpy's C API on the first numpy array polars is
# given, running numpy's version check (`numpy.lib.NumpyVersion`) in Python: a Ctrl-C landing
# there, in a process's first scan, made it panic ("Failed to access NumPy array API capsule").
# Set up here, at import, where a KeyboardInterrupt is only that.
pl.Series(np.zeros(0, dtype=np.uint32))

GROUPINGS = ("all", "src", "dst", "pair", "flow", "flow4", "interface", "vlan", "qp")
SIZES = ("wire", "captured", "ip", "payload", "l1")
# Whether frames end with their FCS, for size="l1" (docs/metrics.md, Size).
FCS_RULES = ("declared", "present", "absent")
DEFAULT_HORIZON = "10ms"
# One number with Rust's ScanConfig::DEFAULT_MAX_GROUPS (1,000,000), for a scan and flows.
DEFAULT_MAX_GROUPS: int = _core.DEFAULT_MAX_GROUPS
# Dense series (empty bins filled with zeros) only below this many rows; sparse above.
DENSE_SERIES_LIMIT = 20_000_000


@dataclass(eq=False)
class ScanResult(FramesEqual):
    """What ``scan`` found. Every attribute that is a table is a polars DataFrame.

    - ``envelope``: per group and window τ: ``bytes`` = E(τ), the most bytes in any window of
      length τ; ``packets`` in that window and its ``start``; ``max_packets`` = the most packets in
      any window of length τ; ``peak_rate_bps`` = 8·E(τ)/τ; ``ptm`` = E(τ)/(ρ·τ).
    - ``backlog``: per group and server rate r: ``bmax_bytes`` = B_max(r), when it ``peak``-ed, the
      ``longest_busy`` period and its start, and ``rate_over_mean`` = r/ρ.
    - ``series``: per group and bin width Δ, bytes and packets per bin [kΔ, (k+1)Δ) (epoch-aligned).
    - ``groups``: per group: packets, bytes, first, last, span, mean rate ρ.
    - ``summary``: one row for the whole scan, with every packet accounted for.
    - ``config``: the options the scan ran with, as plain values (``windows_ns``, ``rates_bps``,
      ``rates``: how the rates were chosen, ``bins_ns``, ``by``, ``size``, ``strict``, ``threads``, ...);
      ``warnings``: the text of each warning the scan issued.
    - ``interfaces``: which capture each interface group (``by="interface"``, ``if0``, ``if1``,
      ...) is of, one row per interface the captures declared: ``group``, ``capture`` (its place
      among the captures given, from 0), ``source`` (its path, else ``input k of n``),
      ``interface`` (its index within that capture) and ``name`` (pcapng ``if_name``, if any).
      Of several captures, the interfaces of each follow all those of the captures before it.
      Empty for in-memory columns.

    Every instant (a Datetime in UTC) and every duration has its exact integer twin beside it,
    named ``<column>_ns`` (``start`` and ``start_ns``, ``longest_busy`` and ``longest_busy_ns``),
    as the analyses' tables have. One rule for the integer columns of every result: every
    ``*_ns`` column is Int64 (as polars' Datetime and Duration are underneath; ``span_ns`` too,
    null for a span past int64, 292 years, where ``mean_rate_bps`` is still given), every count
    and byte count UInt64 (the ``summary`` tables' too).

    ``repr`` is one line of counts (a notebook shows it for a bare result; the tables are its
    attributes). Two results are ``==`` when every table (by ``DataFrame.equals``) and every other
    attribute is; so are those of the analyses (``Distribution``, ``Bursts``, ``Iterations``,
    ``SharedPackets``).
    """

    envelope: pl.DataFrame
    backlog: pl.DataFrame
    series: pl.DataFrame
    groups: pl.DataFrame
    summary: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    interfaces: pl.DataFrame = field(default_factory=lambda: _interfaces_frame(None))

    def ptm(self, window: Duration = "5ms", by: Grouping = "all") -> pl.DataFrame:
        """PtM(τ) for one window, one row per group of the grouping ``by`` (one of them, default
        'all'): columns ``group``, ``bytes`` = E(τ), ``peak_rate_bps`` and ``ptm``. ``window`` is
        a duration as ``scan`` takes it ('5ms', seconds, ``timedelta``; the envelope's
        ``window_ns`` as f"{ns}ns"). A window or a grouping the scan did not measure raises
        ``ValueError`` naming those it did (an empty frame would read as a trace without
        traffic); a list of groupings raises ``TypeError`` (a ``ValueError`` too)."""
        if not isinstance(by, str):
            # Said as such: "by=['all'] was not scanned" when 'all' was.
            raise WrongTypeError(f"by={said(by)}: ptm takes one grouping, e.g. by='src'; call it once per grouping")
        w = parse_duration(window, name="window", scale=True)
        scanned = self.config.get("windows_ns", [])
        if w not in scanned:
            shown = ", ".join(format_duration(x) for x in scanned) or "none"
            raise ValueError(f"window={said(window)} was not scanned; the scan's windows: {shown}")
        groupings = self.config.get("by", [])
        if by not in groupings:
            raise ValueError(f"by={said(by)} was not scanned; the scan's groupings: {', '.join(groupings) or 'none'}")
        return self.envelope.filter((pl.col("window_ns") == w) & (pl.col("by") == by)).select(
            "group", "bytes", "peak_rate_bps", "ptm"
        )

    def plot(self, **kwargs: Any) -> Any:
        """E(τ), PtM(τ), B_max(r) and the binned series as a matplotlib Figure."""
        from .plot import plot_result

        return plot_result(self, **kwargs)

    def __repr__(self) -> str:
        return f"ScanResult({self._repr_body()})"

    def _repr_body(self) -> str:
        """One line, whatever the size of the result (a notebook shows it for a bare ``r``): the
        counts, and where the tables are; never the tables themselves."""
        s = self.summary.row(0, named=True) if self.summary.height else {}
        span = (
            f"span {s['span_ns']} ns"
            if s.get("span_ns") is not None
            # A span past int64 (null in span_ns) still has its mean rate.
            else "span over 292 years"
            if s.get("mean_rate_bps") is not None
            else "no span"
        )
        told = len(self.warnings)
        return (
            f"{s.get('packets', 0)} packets, {s.get('bytes', 0)} bytes, {span}, "
            f"{self.envelope.height} envelope rows, {self.backlog.height} backlog rows, "
            f"{self.series.height} series rows" + (f", {told} {'warning' if told == 1 else 'warnings'}" if told else "")
        )


def _as_list(x: Any) -> list[Any]:
    """One value or many: any iterable but a string or a mapping is many (a list, a set, a numpy
    array, a polars or pandas Series, a generator)."""
    if x is None:
        return []
    if isinstance(x, (str, bytes, Mapping)) or not isinstance(x, Iterable):
        return [x]
    if isinstance(x, pl.Series) and x.dtype == pl.Duration:
        # Its elements come out as datetime.timedelta, which stops at microseconds.
        x = x.to_numpy()
    return list(x)


def _each(values: Any, parse: Callable[[Any], int], name: str) -> list[int]:
    """Each of ``values`` (one or many, as `_as_list` takes them) parsed, sorted, once each. A
    string of several, comma-separated as the command line takes them ('1ms,5ms'), was told it is
    "not a duration" with every form of one, though each of them is one: it is told to be a list."""
    out = set()
    for value in _as_list(values):
        try:
            out.add(parse(value))
        except ValueError as e:
            items = [item.strip() for item in value.split(",")] if isinstance(value, str) else []
            if len(items) < 2 or isinstance(e, WrongTypeError):
                raise
            bad: list[ValueError] = []
            for item in items:
                try:
                    parse(item)
                except ValueError as item_error:
                    bad.append(item_error)
            if len(bad) == len(items):
                raise e from None
            # The command line names the item that is wrong ('5x' is not a duration): so does this.
            wrong = f"; of them, {bad[0]}" if bad else ""
            raise ValueError(
                f"{name}={said(value)} is several values in one string: give them as a list, {items!r}{wrong}"
            ) from None
    return sorted(out)


def _parse_by(by: Any) -> list[str]:
    names = _as_list(by) or ["all"]
    out: list[str] = []
    for n in names:
        if not isinstance(n, str):
            raise WrongTypeError(
                f"by={said(n)} ({type(n).__name__}) is not a grouping's name: "
                f"give one or a list of {', '.join(GROUPINGS)}"
            )
        if n == "host":
            raise ValueError("by='host' is ambiguous: use 'src' or 'dst' (or both: by=['src', 'dst'])")
        items = [item.strip() for item in n.split(",")]
        if n not in GROUPINGS and len(items) > 1 and all(item in GROUPINGS for item in items):
            raise ValueError(f"by={said(n)} is several groupings in one string: give them as a list, {items!r}")
        if n not in GROUPINGS:
            raise ValueError(f"by={said(n)} is not a grouping; use one or a list of {', '.join(GROUPINGS)}")
        if n not in out:
            # A numpy or pandas string as the str it equals: config["by"] is plain values.
            out.append(str(n))
    return out


def _parse_order(reorder_horizon: Duration, on_late: str) -> tuple[int, Literal["error", "drop"]]:
    """The reorder horizon in ns and the late-packet policy, as scans and analyses take them."""
    late: Literal["error", "drop"] = check_choice(  # type: ignore[assignment]
        on_late, name="on_late", choices=("error", "drop"), message="use 'error' (default) or 'drop'"
    )
    return parse_duration(reorder_horizon, name="reorder_horizon", allow_zero=True, scale=True), late


def check_size(size: Any) -> Literal["wire", "captured", "ip", "payload", "l1"]:
    """``size=`` as scan takes it: one of ``SIZES``."""
    return check_choice(size, name="size", choices=SIZES, message=f"use one of {', '.join(SIZES)}")  # type: ignore[return-value]


def check_fcs(fcs: Any, size: str) -> Literal["declared", "present", "absent"]:
    """``fcs=`` as scan takes it: one of ``FCS_RULES``, and other than 'declared' only with
    ``size='l1'``, the one size that adds an FCS (given with another, it would change nothing)."""
    rule = check_choice(
        fcs,
        name="fcs",
        choices=FCS_RULES,
        message="use 'declared' (default: as the capture says), 'present' (every frame ends with its FCS) "
        "or 'absent' (none does)",
    )
    if rule != "declared" and size != "l1":
        raise ValueError(
            f"fcs={said(rule)} tells size='l1' whether frames hold their FCS; "
            f"size={said(size)} counts none of its own: "
            "give size='l1', or leave fcs out"
        )
    return rule  # type: ignore[return-value]


def check_closed(closed: Any) -> Literal["left", "both"]:
    """``closed=`` as scan takes it: 'left' or 'both'."""
    return check_choice(  # type: ignore[return-value]
        closed,
        name="closed",
        choices=("left", "both"),
        message="use 'left' for [s, s+τ) (default) or 'both' for [s, s+τ]",
    )


def scan(
    source: Source | Columns | Batches,
    windows: Durations | None = None,
    rates: Rates | None = None,
    bins: Durations | None = None,
    by: Grouping | Sequence[Grouping] | None = None,
    size: Literal["wire", "captured", "ip", "payload", "l1"] = "wire",
    closed: Literal["left", "both"] = "left",
    *,
    reorder_horizon: Duration = DEFAULT_HORIZON,
    on_late: Literal["error", "drop"] = "error",
    max_groups: Count = DEFAULT_MAX_GROUPS,
    fill_empty_bins: bool = True,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    threads: Count | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: Filters | None = None,
    bin_origin: Instant | Literal["epoch", "start"] = "epoch",
    fcs: Literal["declared", "present", "absent"] = "declared",
) -> ScanResult:
    """Measure burstiness at many time scales in one pass over a capture.

    Parameters
    ----------
    source:
        A capture path ('-' for stdin), a list of paths (merged exactly in timestamp order; their
        interfaces numbered one after another), bytes (the capture's contents: bytes naming a
        file raise ``TypeError``, give a path as a str), a binary file object, or in-memory columns:
        a polars DataFrame / dict (any mapping) with ``timestamp`` (int64 ns or Datetime) and ``size`` columns, or
        a ``(timestamps_ns, sizes)`` tuple; the columns numpy, polars or Arrow arrays (any object
        with ``__arrow_c_array__``, or ``__arrow_c_stream__`` for a chunked array: pyarrow,
        nanoarrow, arro3). Or an Arrow table: any object whose ``__arrow_c_stream__`` gives a
        stream of structs (a pyarrow Table or RecordBatchReader, a duckdb or nanoarrow result)
        or whose ``__arrow_c_array__`` gives a struct (a RecordBatch), its columns checked as a
        mapping's are; a stream (a query's result) is read whole, once: given again it raises
        ``ValueError`` if its producer marks it used, else it may come out empty. A pyarrow
        RecordBatchReader, its own iterator of record batches, is scanned as batches (below):
        one of no batch scans as its empty table, one a scan has read from (to its end, or
        to an error) raises ``ValueError`` when given again, not scanning the batches left.
        An Arrow stream or array of another type (a chunked array, a polars Series) raises
        ``TypeError``. Of a mapping or a table only ``timestamp``, ``size`` (else ``wire_len``)
        and ``interface`` are taken; its other columns are not read. Timestamps may also be a
        numpy datetime64 array of any fixed unit (s, ms, ..., ps) or a pandas datetime (an
        aware one as its UTC instants) or timedelta Series, read exactly (a pyarrow-backed
        one, of an ArrowDtype, as the Arrow column it holds), or a Datetime/Duration
        in ms, us or ns, or an Arrow timestamp or duration in seconds (read from its buffer and
        scaled to ns with a range check, as polars' own import does not check; an Arrow type
        polars cannot import, run-end encoded or decimal256, or seconds dictionary-encoded, is a
        ``ValueError``); a time outside int64 ns (1677 to 2262) raises ``ValueError``.

        Or such columns in batches, scanned one batch at a time (memory: the scan's own plus one
        batch, docs/limits.md): a list or tuple of DataFrames or mappings, a list of Arrow
        tables (``table.to_batches()``; a tuple of two Arrow arrays is a pair of columns), any
        other iterator of them or of Arrow tables (a generator, ``iter_packets(path,
        columns=["timestamp", "wire_len"])``, a pyarrow RecordBatchReader), or a polars
        ``LazyFrame`` (of ``scan_packets``, say, with columns derived, rows filtered by an
        expression, a table of job ids joined), of which only ``timestamp``, ``size`` (else
        ``wire_len``) and ``interface`` are collected, by ``LazyFrame.collect_batches`` (polars'
        streaming engine, in order; a polars without it, as some above the 1.10 floor are, collects the frame whole).
        The batches are one stream, in time order within the reorder horizon across batches as
        within one: the result equals that of ``scan(pl.concat(batches))``, every table and
        ``config``, with one exception: with no ``rates`` given, an iterator (which cannot be
        read twice) gets the link-speed grid, as does a LazyFrame over a ``scan_packets`` of a
        file object, stdin or a pipe (read once) or a list holding a RecordBatchReader (which a
        pre-pass would use up), where a list, a tuple or another LazyFrame
        (whose query is then run twice) gets multiples of the mean rate from a pre-pass, as a
        DataFrame does. Each batch is checked as columns are; an error names the batch (from 0): one
        missing a column or of a wrong dtype (``ValueError``; ``TypeError`` for a batch that
        is no DataFrame, mapping or Arrow table), an ``interface`` column in some batches but not all, a
        packet later than the horizon (``OutOfOrderError``, with its row in the batch), and an
        iterable that gives no batch at all (``ValueError``; an empty DataFrame scans to an
        empty result). An iterator is read once: given again after a scan took from it (to its
        end, or to the error that stopped it), it is refused (``ValueError``), as the batches it
        has left are not the capture (known by identity, not by ``==``); one that cannot be
        remembered (weakly referred to, as ``iter(list)``, ``itertools.chain`` or ``map``) gives
        the rest, or none. An iterable whose ``iter()`` gives a fresh iterator each time is
        read as a list is, not refused.
    windows:
        Window lengths τ for the envelope E(τ). Default: 1 µs to 1 s in 1-2-5 steps per decade
        (19 windows, 5 ms among them). Strings with units ("5ms", "250us", "1.5s"), numbers in
        seconds, ``timedelta``, ``numpy.timedelta64`` or ``pandas.Timedelta``. A plain number of
        1000 or more raises ``ValueError``, as it is most likely ns fed back as seconds: write
        "1000s" or "1000ns".
    rates:
        Server rates r for B_max(r): "10Gbps", "400Mbit/s", "1.25GB/s", or numbers in bit/s.
        Default: the trace's mean rate ρ times 1.1, 1.25, 1.5, 2, 3, 5, 10 and 20. On a re-readable
        source (a path or bytes) ρ (by the same ``size``) comes from a quick pre-pass; on a
        stream (stdin, a file object) the default is the link-speed grid 100 Mbit/s … 400 Gbit/s. Pass rates to keep
        strictly to one pass.
    bins:
        Bin widths Δ for the binned series (same forms as windows). Default: none. Bin k of
        width Δ is [o + kΔ, o + (k+1)Δ) for the origin o (``bin_origin``), k = ⌊(t − o)/Δ⌋.
    by:
        Grouping(s), all computed in the same pass: 'all' (default), 'src', 'dst', 'pair'
        (ordered src>dst), 'flow' (directional 5-tuple), 'flow4' (directional src:sport>dst:dport),
        'interface', 'vlan', 'qp' (RoCEv2 destination QP), or a list of them. Packets that lack the
        field (e.g. non-IP by 'src') form the group '(none)', so every grouping covers every packet.
    size:
        Bytes counted per packet: 'wire' (default; original length, immune to snaplen),
        'captured', 'ip' (IP total length), 'payload' (TCP/UDP payload), 'l1' (Ethernet frame padded
        to 60 B + FCS 4 B + preamble/SFD/IFG 20 B). Packets lacking the needed header are skipped
        and counted in ``summary`` (a ``CaptureWarning`` when none of them has it). An IP length
        of 0 (TSO/GRO or BIG TCP super-frames captured on a host) counts the rest of the frame on
        the wire, or an IPv6 Jumbo Payload option's length, as tshark does; one longer than the
        frame on the wire is damage, and the packet is skipped (docs/metrics.md, Packets).
    fcs:
        Whether each frame ends with its 4-byte FCS, for ``size='l1'``, which adds one: 'declared'
        (default) as the capture says (pcapng ``if_fcslen``, pcap's FCS bits; none unless it
        says so); 'present': every frame does (a switch mirror that keeps the FCS without saying
        so, which ``info`` detects and tells; not on raw IP or loopback links, which hold no
        frame); 'absent': none does, whatever the capture says. With 'l1' and 'declared', the
        first 64 whole Ethernet frames (among its first 4,096) of each interface that declares
        no FCS are checked as they are counted: those ``start``/``end`` and ``filter`` keep, not
        those they leave out. When more than half end with a valid one, a ``CaptureWarning``
        (kind ``"undeclared_fcs"``) says so and names ``fcs='present'``. The analyses that take
        ``size`` take ``fcs`` and check alike.
    closed:
        'left' (default): half-open windows [s, s+τ); 'both': closed windows [s, s+τ].
    reorder_horizon:
        How far back in time a packet may arrive and still be put in order (default 10 ms; the
        shipped bridge captures step back up to ~56 µs). Packets earlier than the horizon allows
        raise ``OutOfOrderError`` unless ``on_late='drop'`` (then counted in ``summary``).
        The packets within it wait in memory: more than 2^23 at once (only damaged timestamps,
        such as millions at one instant, come near) raise ``LimitExceededError`` with
        ``limit == "held_packets"``; 0 waits for nothing (docs/limits.md, Memory). A plain number
        of 1000 or more raises ``ValueError``, as for ``windows``.
    on_late:
        'error' (default): a packet later than the horizon raises ``OutOfOrderError``; 'drop':
        it is left out and counted in ``summary.skipped_late``. The error's ``offset`` is the
        late packet's byte offset where the one capture can be read again: a path, bytes, or a
        file object whose ``seekable()`` is true (read again from where it stood, offsets
        counted from there, then left where the scan left it); of several captures, each a path
        or bytes, ``input`` names the one that holds it. From a stream (stdin, a pipe, a file
        object that cannot seek), or several captures one of which is such, ``offset`` is None.
    max_groups:
        Most groups per grouping (default 1,000,000, about 1–1.8 kB each with a few windows
        and rates, 5.5 kB with the default ones, result included); one more is a
        ``LimitExceededError`` (``limit == "result"``) at once. Lower it to bound a scan by flow of a capture of
        millions of short flows.
    fill_empty_bins:
        Fill the series with zero rows for empty bins, from each group's first non-empty bin
        to its last, or, with ``start``/``end``, from the bin holding ``start`` and to the one
        holding the last ns before ``end`` (the span ρ is over, so the mean of a filled series'
        ``rate_bps`` is ρ when the range is whole bins), up to 20 M rows in all: the bin widths
        needing the fewest rows are filled first, each for all its groups, and a width that
        would pass the limit stays sparse (non-empty bins only) with a ``UserWarning`` naming
        it. ``False``: non-empty bins only. A bool, as ``strict`` and ``mmap`` are: anything else raises ``TypeError``.
    strict:
        A capture cut off mid-block (still being written) raises ``TruncatedCaptureError``
        instead of giving the packets before the cut and a ``CaptureWarning``.
    progress:
        Called as ``progress(bytes_done, bytes_total_or_None)`` at most every 100 ms (spaced
        more after a slow call) and once at the end; an exception it raises stops the scan and
        propagates. Bytes as stored (compressed ones for .gz/.zst); no total for a stream. The
        count never goes back: a threaded scan whose time chunks give up and start over (see
        ``threads``) goes on calling it with the count reached, so Ctrl-C still stops it; so does
        the read of a compressed file, whose last compressed bytes are taken in well before the
        packets in them are read: the same count may come several times. A scan
        that reads its sources twice (no ``rates`` given: a pre-pass finds the mean rate) counts
        the bytes of both passes, out of twice the total.
    threads:
        Threads for a capture scan (default: the cores this process may use, by its CPU
        affinity and cgroup quota, at most 8). Plain capture files given by path, grouped by
        ``all``/``interface`` only, are cut into time chunks scanned on separate threads and
        merged exactly (several files that overlap in time, such as one capture per host, are
        cut at common instants); on two threads, a scan of ``all`` alone of one file of small
        records (snaplen-cut), or one the time chunks do not take, is split by function (one
        thread reads and reorders, the other scans the windows); other scans share the windows,
        rates and bins out among threads that all see the same packets (docs/metrics.md,
        Parallel scans). Either way the result is identical
        whatever the number; 1 keeps everything on the calling thread. More than 1024
        (``burstcore.MAX_THREADS``) raises ``ValueError``. Time chunks are no more than the
        cores this process may use, nor smaller than 8 MiB, each chunk costing a merge on top of
        its bytes: a file under 16 MiB is not cut (its metrics may still be shared out), and
        threads beyond the cores, or beyond a chunk each, are not started for chunks.
    mmap:
        Read plain (uncompressed) capture files given by path through a read-only memory mapping
        (``True``) or with ``read()`` into a buffer (``False``): the same result, the mapping
        without the kernel's copy (measured figures in docs/metrics.md). ``None`` (default):
        mapped on Linux, where burstcore guards its mappings, so that a file truncated by another
        process while it is read raises ``OSError`` ("the file shrank while it was being read")
        instead of killing the process with SIGBUS; buffered elsewhere, where ``True`` maps
        unguarded (only for files nothing truncates meanwhile). Many files at once (more than
        8 files × threads) are read buffered by default too: each mapped reader holds a few MiB
        of its file resident. Compressed files, stdin, pipes and
        file objects are read buffered whatever this says; a scan split into time chunks
        (``threads`` > 1) maps the file once and frames every chunk from it.

    start, end:
        The stretch of the capture to measure, [start, end): packets before ``start`` or at or
        after ``end`` are skipped (counted in ``summary.skipped_outside_range``), and the span of
        ρ is the stretch itself: from ``start`` (else the group's first packet) to ``end`` (else
        its last packet). A ``datetime`` (naive ones are UTC), ``numpy.datetime64``,
        ``pandas.Timestamp``, ISO 8601 string, or int of ns since 1970 (as the ``*_ns`` columns
        and training logs give them), read exactly to the ns; an ISO string's zone may be Z, z,
        ±hh, ±hhmm or ±hh:mm (none: UTC). An instant outside int64 ns since 1970 (years
        1677-09-21 to 2262-04-11) or with digits below the ns raises ``ValueError``: it is never wrapped nor
        rounded. Not for in-memory columns: filter those first. A scan of
        a time range reads the capture in one stream (not split into time chunks). A plain
        int is ns: ``start=1367526033`` meant as seconds is 1.37 s into 1970. A range that
        holds none of the packets read with a timestamp gets a ``CaptureWarning`` saying so
        and naming the earliest and latest of them, and so does a bound given as a plain
        number far from them that read as seconds (ms, µs) would be among them, or that no one
        means as ns (under 2**41, the first 36.6 minutes of 1970, for packets from 1970-01-02
        on; docs/metrics.md), with what to give instead; it is also in ``warnings``. A date is
        never told as a slip of unit.
    filter:
        Read only the packets whose headers pass this expression, in tcpdump's language (a
        subset of pcap-filter): e.g. ``"host 10.0.0.1 and tcp port 29500"``, ``"not arp"``,
        ``"src net 10.1.0.0/16 or vlan 100"``. The others are skipped, counted in
        ``summary.skipped_filtered``, and ρ is the rate of the packets that pass; a filter that
        passes none of the packets it is given gets a ``CaptureWarning`` saying so. The words, and
        where they differ from tcpdump's: docs/filters.md. A bad expression raises ``ValueError``
        saying where and what. Not for in-memory columns (filter those first). A filtered scan
        decodes every packet's headers and is not split into time chunks. Several captures:
        one expression for all, or a list of one per capture in the same order (``None`` for a
        capture read whole). One capture per host holds a packet between two captured hosts
        twice, once as each host saw it: ``filter=["src host 10.0.0.1", "src host 10.0.0.2"]``
        keeps each packet once, at its sender's timestamp. Captures (paths or bytes) that hold
        the same packets through their filters are warned about (``SharedPacketsWarning``, with
        the filters to give), from a sample of each: docs/filters.md.

    bin_origin:
        Where the bins are counted from. "epoch" (default): 1970-01-01 UTC, so bins are
        multiples of Δ and line up across captures. "start": ``start`` when a range is given (the
        bins tile the range from its start), else the first packet counted (after the filter, in
        timestamp order), one origin for all groups: pandas' ``resample(origin="start")`` on the
        packets counted. Or an instant (same forms as ``start``); bins before it have k < 0. The
        origin used is ``config["bin_origin_ns"]`` (None when no packet was counted from "start").

    Returns a ``ScanResult``; its ``summary`` accounts for every packet: ``packets_read`` =
    ``packets`` (counted) + the ``skipped_*`` columns.

    Conventions: timestamps are integer ns since the epoch (UTC). ρ of a group = its bytes / its
    span (first to last packet, or the ``start``/``end`` given), so PtM(τ) = E(τ)/(ρ·τ) → ~1 as
    τ approaches the span; with a zero span ρ and PtM are null, and with no bytes over a span ρ
    is 0 and PtM and r/ρ are null. B_max uses exact integer
    arithmetic (bits·ns), rounded once to a float of bytes at the end.
    """
    windows_ns = (
        _each(windows, lambda w: parse_duration(w, name="window", scale=True), "window")
        if windows is not None
        else default_windows_ns()
    )
    bins_ns = _each(bins, lambda b: parse_duration(b, name="bin", scale=True), "bin")
    by_names = _parse_by(by)
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    closed = check_closed(closed)
    horizon_ns, on_late = _parse_order(reorder_horizon, on_late)
    max_groups = parse_count(max_groups, name="max_groups")
    progress = checked_progress(progress)
    if not isinstance(fill_empty_bins, (bool, np.bool_)):
        # As strict= and mmap= are checked (in Rust): fill_empty_bins="no" was taken as true.
        raise TypeError(f"fill_empty_bins={said(fill_empty_bins)}: give True (default) or False")
    threads = thread_count(threads)
    time_range = parse_time_range(start, end)
    filters = parse_filters(filter)
    origin_ns = parse_bin_origin(bin_origin, None if time_range is None else time_range[0])

    batched = is_batches(source)
    in_memory = batched or is_columns(source)
    if in_memory and time_range is not None:
        raise ValueError(
            "start/end select packets of a capture; in-memory columns are yours to filter "
            "(e.g. df.filter(pl.col('timestamp').is_between(start, end, closed='left')))"
        )
    if in_memory and filters is not None:
        raise ValueError(
            "filter= selects packets of a capture by their headers; in-memory columns have none: filter "
            "the rows first (e.g. df.filter(pl.col('src') == '10.0.0.1'))"
        )
    if in_memory and size != "wire":
        # The columns carry their sizes: a size to count from the headers has nothing to read.
        raise ValueError(
            f"size={said(size)} reads captured packets; in-memory columns carry their own sizes (leave size out)"
        )
    shared: str | None = None  # what the captures hold twice, if they do
    if batched:
        sources: list[Any] = []
    elif in_memory:
        sources = []
        ts, sz, ifc = columns_of(source)
    else:
        sources = normalize_each(source)
        filters = parse_filters(filters, captures=len(sources))
        shared = warn_if_shared(sources, filters, time_range, mmap, stacklevel=2)

    # No rates given: a pre-pass over sources that can be read again finds the mean rate.
    read_twice = rates is None and not in_memory and all(is_rereadable(s) for s in sources)
    rates_note = "given"
    if rates is not None:
        rates_bps = _each(rates, lambda r: parse_rate(r, name="rate"), "rate")
    elif batched and not batches_rereadable(source):
        # An iterator's batches are gone once scanned, as is a scan_packets frame's file object:
        # no pre-pass, as for a streamed capture.
        rates_bps = list(LINK_SPEED_GRID_BPS)
        rates_note = (
            "link-speed grid (LazyFrame reading a stream once)"
            if isinstance(source, pl.LazyFrame)
            else "link-speed grid (iterator of batches)"
        )
    elif batched:
        counted = scan_batches(source, [], closed, [], [], ["all"], horizon_ns, on_late, 1)
        rates_bps, rates_note = _rates_from_mean(*_total_and_span(counted), "mean-rate multiples")
    elif in_memory:
        # The packets the scan counts, not every row: on_late="drop" leaves some out.
        counted = _core.scan_columns(ts, sz, ifc, [], closed, [], [], ["all"], horizon_ns, on_late, 1)
        rates_bps, rates_note = _rates_from_mean(*_total_and_span(counted), "mean-rate multiples")
    elif read_twice and (
        (pre := _prepass(sources, size, horizon_ns, on_late, strict, threads, mmap, time_range, filters, progress, fcs))
        is not None
    ):
        rates_bps, rates_note = _rates_from_mean(*pre, "mean-rate multiples (pre-pass)")
    else:
        rates_bps = list(LINK_SPEED_GRID_BPS)
        rates_note = "link-speed grid (streamed source)"

    if read_twice:
        # The pre-pass read them once (even if it failed): the main pass counts on from there.
        progress = _second_of_two(progress)
    if batched:
        out = scan_batches(
            source, windows_ns, closed, rates_bps, bins_ns, by_names, horizon_ns, on_late, max_groups, origin_ns
        )
        warns: list[str] = []
    elif in_memory:
        out = _core.scan_columns(
            ts, sz, ifc, windows_ns, closed, rates_bps, bins_ns, by_names, horizon_ns, on_late, max_groups, origin_ns
        )
        warns = []
    else:
        out, core_warns = _core.scan(
            sources,
            windows_ns,
            closed,
            rates_bps,
            bins_ns,
            by_names,
            size,
            horizon_ns,
            on_late,
            max_groups,
            strict,
            progress,
            threads,
            mmap=mmap,
            time_range=time_range,
            filter=filters,
            bin_origin_ns=origin_ns,
            fcs=fcs,
        )
        # scan → _warn → warnings.warn: told at the caller's line.
        warns = _warn(_with_range_note(core_warns, out["accounting"], time_range, (start, end)), stacklevel=3)
        # Told already (as a SharedPacketsWarning); listed with the capture's own.
        warns = [*warns, *([shared] if shared else [])]
    cfg = {
        "windows_ns": windows_ns,
        "rates_bps": rates_bps,
        "rates": rates_note,
        "bins_ns": bins_ns,
        "by": by_names,
        "size": size,
        "fcs": fcs,
        "closed": closed,
        "reorder_horizon_ns": horizon_ns,
        "on_late": on_late,
        "strict": strict,
        "threads": threads,
        "max_groups": max_groups,
        "start_ns": None if time_range is None else time_range[0],
        "end_ns": None if time_range is None else time_range[1],
        "filter": filters,
        "bin_origin_ns": origin_ns,
    }
    # polars' own KeyboardInterrupt for a Ctrl-C while the frames are built, with Python's left
    # pending: one Ctrl-C, one KeyboardInterrupt (`_core.one_ctrl_c` says how).
    with _core.one_ctrl_c:
        return _build_result(out, warns, cfg, fill_empty_bins)


def _rates_from_mean(total_bytes: int, span_ns: int, note: str) -> tuple[list[int], str]:
    """The default rates and what they are: multiples of ρ, or the link-speed grid where ρ is
    undefined (no packet, or all at one instant) or 0 bit/s (no bytes counted: payload sizes of
    bare ACKs), having then no multiples to take."""
    if span_ns <= 0:
        return list(LINK_SPEED_GRID_BPS), "link-speed grid (no mean rate ρ: no span to average over)"
    if total_bytes <= 0:
        return list(LINK_SPEED_GRID_BPS), "link-speed grid (mean rate ρ 0 bit/s: no multiples of it)"
    rho_bps = total_bytes * 8 * 10**9 / span_ns
    return sorted({max(1, round(rho_bps * m)) for m in DEFAULT_RATE_MULTIPLES}), note


def _prepass(
    sources: list[Any],
    size: str,
    horizon_ns: int,
    on_late: str,
    strict: bool,
    threads: int,
    mmap: bool | None,
    time_range: tuple[int | None, int | None] | None,
    filter: str | list[str | None] | None,
    progress: ProgressCallback | None = None,
    fcs: str = "declared",
) -> tuple[int, int] | None:
    """ΣL_i and the span T of the packets the main pass will count, by its own size and order
    rules (a scan with no window, rate or bin), so that the default rates are multiples of the ρ
    that ``rate_over_mean`` divides by: with ``size="payload"`` the wire bytes would put the lowest
    rates below ρ. None if the sources cannot be read: the main pass then meets the same damage
    and raises, naming the input among several (``CaptureError.input``)."""
    try:
        out, _ = _core.scan(
            sources,
            [],
            "left",
            [],
            [],
            ["all"],
            size,
            horizon_ns,
            on_late,
            1,
            strict,
            _first_of_two(progress),
            threads,
            mmap=mmap,
            time_range=time_range,
            filter=filter,
            fcs=fcs,
        )
    except _core.CaptureError:
        return None
    return _total_and_span(out, time_range)


# A scan that finds its default rates by a pre-pass reads its sources twice: the caller's
# progress then counts the bytes of both passes, out of twice the total, so that a bar moves
# through the first pass and never goes back.
def _first_of_two(progress: ProgressCallback | None) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda done, total: progress(done, None if total is None else 2 * total)


def _second_of_two(progress: ProgressCallback | None) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda done, total: progress(done if total is None else total + done, None if total is None else 2 * total)


def _total_and_span(out: dict[str, Any], time_range: tuple[int | None, int | None] | None = None) -> tuple[int, int]:
    """ΣL_i and the span of the aggregate of a scan by "all" (over the time range, if given)."""
    g = out["groups"]
    if not len(g["packets"]) or int(g["packets"][0]) == 0:
        return 0, 0
    lo, hi = time_range or (None, None)
    first = int(g["first_ns"][0]) if lo is None else lo
    last = int(g["last_ns"][0]) if hi is None else hi
    return int(g["bytes"][0]), last - first


_DT = pl.Datetime("ns", "UTC")


def _build_result(out: dict[str, Any], warns: list[str], cfg: dict[str, Any], fill: bool) -> ScanResult:
    g = out["groups"]
    # A time range given is the span; else each group's first to last packet.
    span_from, span_to = _or(cfg.get("start_ns"), g["first_ns"]), _or(cfg.get("end_ns"), g["last_ns"])
    groups = pl.DataFrame(
        {
            "gid": pl.Series(np.arange(len(g["by"]), dtype=np.uint32)),
            "by": pl.Series(g["by"], dtype=pl.String),
            "group": pl.Series(g["group"], dtype=pl.String),
            "packets": g["packets"],
            "bytes": g["bytes"],
            "first_ns": g["first_ns"],
            "last_ns": g["last_ns"],
            "span_ns": length_ns(span_from, span_to, "span_ns"),
            # ρ's divisor: a span can pass i64::MAX (packets from 1677 to 2262), where span_ns is
            # null; as u64 it is exact, since unsigned arithmetic wraps back into [0, 2^64).
            "span_u64": _span_u64(span_from, span_to),
        }
    )
    groups = groups.with_columns(
        mean_rate_bps=pl.when(pl.col("span_u64") > 0)
        .then(pl.col("bytes").cast(pl.Float64) * 8e9 / pl.col("span_u64").cast(pl.Float64))
        .otherwise(None),
        first=pl.col("first_ns").cast(_DT),
        last=pl.col("last_ns").cast(_DT),
    )
    # What PtM and r/ρ divide by: ρ where it is above 0. A group of no bytes over a span (an
    # ACK-only direction with size="payload") has ρ = 0, and its ratios are null like those of a
    # zero span, never NaN or inf (which polars sorts above every number).
    keys = groups.select(
        "gid", "by", "group", mean_rate_bps=pl.when(pl.col("mean_rate_bps") > 0).then(pl.col("mean_rate_bps"))
    )

    env = pl.DataFrame(out["envelope"]).join(keys, on="gid", how="left")
    env = env.with_columns(
        window=pl.col("window_ns").cast(pl.Duration("ns")),
        start=pl.col("start_ns").cast(_DT),
        peak_rate_bps=pl.col("bytes").cast(pl.Float64) * 8e9 / pl.col("window_ns").cast(pl.Float64),
    ).with_columns(ptm=pl.col("peak_rate_bps") / pl.col("mean_rate_bps"))
    env = env.select(
        "by",
        "group",
        "window",
        "window_ns",
        "bytes",
        "packets",
        "start",
        "start_ns",
        "max_packets",
        "peak_rate_bps",
        "ptm",
    )

    bl = pl.DataFrame(out["backlog"]).join(keys, on="gid", how="left")
    bl = bl.with_columns(
        peak=pl.col("peak_ns").cast(_DT),
        longest_busy=pl.col("longest_busy_ns").cast(pl.Duration("ns")),
        longest_busy_start=pl.col("longest_busy_start_ns").cast(_DT),
        rate_over_mean=pl.col("rate_bps").cast(pl.Float64) / pl.col("mean_rate_bps"),
    ).select(
        "by",
        "group",
        "rate_bps",
        "rate_over_mean",
        "bmax_bytes",
        "peak",
        "peak_ns",
        "longest_busy",
        "longest_busy_ns",
        "longest_busy_start",
        "longest_busy_start_ns",
    )

    agg = groups.filter(pl.col("by") == cfg["by"][0])
    first: int | None = int(agg["first_ns"].min()) if agg.height else None  # type: ignore[arg-type]
    if "bin_origin_ns" in cfg and cfg["bin_origin_ns"] is None:
        # Counted from the first packet: every grouping holds every packet counted.
        cfg["bin_origin_ns"] = first
    se = pl.DataFrame(out["series"])
    if fill and se.height:
        # Over the stretch asked for, as its span is ρ's: zero bins at its idle edges too.
        origin = cfg.get("bin_origin_ns") or 0
        se, sparse = _fill_bins(se, cfg.get("start_ns"), cfg.get("end_ns"), origin)
        if sparse:
            note = _sparse_note(sparse)
            # scan → _build_result → here: told at the caller's line.
            warnings.warn(note, UserWarning, stacklevel=3)
            warns = [*warns, note]
    se = se.join(keys.select("gid", "by", "group"), on="gid", how="left").with_columns(
        bin=pl.col("bin_ns").cast(pl.Duration("ns")),
        start=pl.col("start_ns").cast(_DT),
        rate_bps=pl.col("bytes").cast(pl.Float64) * 8e9 / pl.col("bin_ns").cast(pl.Float64),
    )
    se = se.select("by", "group", "bin", "bin_ns", "start", "start_ns", "bytes", "packets", "rate_bps")

    acc = out["accounting"]
    total_bytes = int(agg["bytes"].sum()) if agg.height else 0
    last: int | None = int(agg["last_ns"].max()) if agg.height else None  # type: ignore[arg-type]
    lo = cfg.get("start_ns") if cfg.get("start_ns") is not None else first
    hi = cfg.get("end_ns") if cfg.get("end_ns") is not None else last
    span = (hi - lo) if lo is not None and hi is not None and agg.height else None
    summary = typed_counts(
        pl.DataFrame(
            {
                "packets_read": [acc["packets_read"]],
                "packets": [acc["counted"]],
                "bytes": [total_bytes],
                "first": pl.Series([first], dtype=pl.Int64).cast(_DT),
                "first_ns": pl.Series([first], dtype=pl.Int64),
                "last": pl.Series([last], dtype=pl.Int64).cast(_DT),
                "last_ns": pl.Series([last], dtype=pl.Int64),
                "span_ns": pl.Series([span if span is None or span <= 2**63 - 1 else None], dtype=pl.Int64),
                "mean_rate_bps": pl.Series([total_bytes * 8e9 / span if span else None], dtype=pl.Float64),
                "reordered": [acc["reordered"]],
                "max_lateness_ns": [acc["max_lateness_ns"]],
                "skipped_no_timestamp": [acc["skipped_no_timestamp"]],
                "skipped_timestamp_out_of_range": [acc["skipped_timestamp_out_of_range"]],
                "skipped_outside_range": [acc["skipped_outside_range"]],
                "skipped_filtered": [acc["skipped_filtered"]],
                "skipped_no_size": [acc["skipped_no_size"]],
                "skipped_late": [acc["skipped_late"]],
            }
        )
    )
    groups = groups.select(
        "by", "group", "packets", "bytes", "first", "first_ns", "last", "last_ns", "span_ns", "mean_rate_bps"
    )
    return ScanResult(env, bl, se, groups, summary, list(warns), cfg, _interfaces_frame(out.get("interfaces")))


def _interfaces_frame(ifs: dict[str, Any] | None) -> pl.DataFrame:
    """``ScanResult.interfaces`` from the core's columns (None: no capture, no interface)."""
    ifs = ifs or {"number": [], "capture": [], "source": [], "interface": [], "name": []}
    return pl.DataFrame(
        {
            "group": pl.Series([f"if{n}" for n in ifs["number"]], dtype=pl.String),
            "capture": pl.Series(ifs["capture"], dtype=pl.UInt32),
            "source": pl.Series(ifs["source"], dtype=pl.String),
            "interface": pl.Series(ifs["interface"], dtype=pl.UInt32),
            "name": pl.Series(ifs["name"], dtype=pl.String),
        }
    )


def _or(instant: int | None, per_group: Any) -> Any:
    """The instant given for every group, else each group's own."""
    if instant is None:
        return per_group
    return np.full(len(per_group), instant, dtype=np.int64)


def _span_u64(first_ns: Any, last_ns: Any) -> np.ndarray:
    """last − first per row, exact as u64 for any two i64 with first ≤ last."""
    first = np.asarray(first_ns, dtype=np.int64).view(np.uint64)
    last = np.asarray(last_ns, dtype=np.int64).view(np.uint64)
    return last - first


def _sparse_note(widths: list[int]) -> str:
    """What a series left sparse by the row limit means, and what to do."""
    names = ", ".join(format_duration(w) for w in widths)
    return (
        f"the series of bin width {names} is left sparse (only its non-empty bins): filling its empty "
        f"bins would pass {DENSE_SERIES_LIMIT:,} rows in all, so a mean or quantile of its rate_bps "
        "over rows is over busy bins only; give a coarser bin or a stretch (start=/end=), or "
        "count the empty bins from its first and last start"
    )


def _fill_bins(
    se: pl.DataFrame, start_ns: int | None = None, end_ns: int | None = None, origin_ns: int = 0
) -> tuple[pl.DataFrame, list[int]]:
    """Zero rows for empty bins between each (group, width)'s first and last non-empty bin, and
    the widths left sparse. Bins are counted from ``origin_ns`` as the scan counted them (bin k
    starts at origin + kΔ). A time range's ``start_ns`` (``end_ns``, exclusive) moves every
    segment's first (last) bin out to the one holding it, so that a filled series covers the span
    its ρ is over: its mean rate is then ρ whenever the range is whole bins.

    A width is filled for all its groups or for none, so that each width's series is one thing
    or the other. The widths that need the fewest rows are filled first, as long as the total
    stays within ``DENSE_SERIES_LIMIT``: a fine width over a long capture leaves only itself
    sparse, not the coarse widths beside it.

    Built with numpy into the final columns (which polars then takes without a copy): an
    ``int_ranges`` + explode + join did the same with several frames of the filled size alive at
    once, 2.4 GB above the result for 18 M rows, and seconds in which Ctrl-C waited."""
    if se.height == 0:
        return se, []
    key = ("gid", "bin_ns", "start_ns")
    srt = se if _sorted_by_key(se) else se.sort(*key)
    gid = srt["gid"].to_numpy()
    w = srt["bin_ns"].to_numpy()
    s = srt["start_ns"].to_numpy()
    n = len(s)
    u64 = np.uint64

    # One segment per (group, width), rows in bin order within it.
    brk = np.flatnonzero((gid[1:] != gid[:-1]) | (w[1:] != w[:-1])) + 1
    # Arrays, not [0] and [n], to concatenate: numpy 1.24's stubs (the floor) refuse a list beside one.
    seg_start = np.concatenate((np.zeros(1, dtype=np.int64), brk)).astype(np.int64)
    counts = np.diff(seg_start, append=n)
    seg_w = w[seg_start]
    # Only the origin mod Δ matters (the phase): bin k starts at kΔ + phase. A bin's index is
    # found as the scan finds it, without forming t − origin (which could overflow), and is exact
    # where its start is not: the one bin before 1677 has its start clamped to i64::MIN, and
    # still lands in its k. hi − lo is exact in u64 for any two i64 with lo ≤ hi.
    phase_of = np.int64(origin_ns) % w
    seg_phase = phase_of[seg_start]
    lo_k = _bin_index(s[seg_start], seg_w, seg_phase)
    hi_k = _bin_index(s[seg_start + counts - 1], seg_w, seg_phase)
    # Every packet lies in [start, end), so these only widen a segment.
    if start_ns is not None:
        lo_k = np.minimum(lo_k, _bin_index(np.int64(start_ns), seg_w, seg_phase))
    if end_ns is not None:
        hi_k = np.maximum(hi_k, _bin_index(np.int64(end_ns) - 1, seg_w, seg_phase))
    span = hi_k.view(u64) - lo_k.view(u64)

    # Rows per width. A segment of DENSE_SERIES_LIMIT bins or more (span + 1 may even wrap to 0)
    # puts its width past the limit whatever the rest, so its count is only capped.
    widths = np.unique(seg_w)
    over = span >= DENSE_SERIES_LIMIT
    rows_of: dict[int, int] = {}
    for wd in widths:
        mine = seg_w == wd
        if over[mine].any():
            rows_of[int(wd)] = DENSE_SERIES_LIMIT + 1
        else:
            rows_of[int(wd)] = int(span[mine].sum()) + int(np.count_nonzero(mine))
    filled: set[int] = set()
    total = 0
    for wd, rows in sorted(rows_of.items(), key=lambda item: (item[1], item[0])):
        if total + rows > DENSE_SERIES_LIMIT:
            break
        filled.add(wd)
        total += rows
    sparse = sorted(set(rows_of) - filled)
    if not filled:
        return se, sparse

    dense = np.isin(seg_w, np.array(sorted(filled), dtype=np.int64))
    # A dense segment's rows are its bins lo..hi; a sparse one keeps its own rows.
    sizes = np.where(dense, span.astype(np.int64) + 1, counts)
    out_off = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    total_rows = int(out_off[-1] + sizes[-1])

    gid_out = np.repeat(gid[seg_start], sizes)
    w_out = np.repeat(seg_w, sizes)
    # k of every row as a running sum in place (no other array of the filled size): 1 from row to
    # row, and at each segment's first row the step from the previous segment's last k to this
    # one's first. Wrapping u64 arithmetic is exact here, since every k fits in an i64.
    k = np.ones(total_rows, dtype=u64)
    last_k = lo_k.view(u64) + sizes.astype(u64) - u64(1)
    steps = lo_k.view(u64).copy()
    steps[1:] -= last_k[:-1]
    k[out_off] = steps
    np.cumsum(k, out=k)
    k *= w_out.view(u64)
    if seg_phase.any():
        k += np.repeat(seg_phase, sizes).view(u64)
    start_out = k.view(np.int64)
    # kΔ + phase, clamped to i64::MIN as the scan clamps the one bin that starts before it: only
    # a segment's first bin can be that one. kΔ + phase < −2^63 ⇔ k < −⌊(2^63 + phase)/Δ⌋,
    # in u64 (2^63 + phase < 2^64); the bound for Δ = 1 wraps to −2^63, which no k is below.
    bound = ((u64(2**63) + seg_phase.view(u64)) // seg_w.view(u64)).view(np.int64)
    before = dense & (lo_k < -bound)
    start_out[out_off[before]] = np.iinfo(np.int64).min
    del k, last_k, steps

    # Where each non-empty row lands: a dense segment's row at its bin's offset from lo, a sparse
    # one's at its own rank. Its start goes too, so a sparse width's rows are exactly its own.
    base = np.where(dense, lo_k.view(u64) - out_off.view(u64), seg_start.view(u64) - out_off.view(u64))
    pos = np.where(np.repeat(dense, counts), _bin_index(s, w, phase_of).view(u64), np.arange(n, dtype=u64))
    pos -= np.repeat(base, counts)
    bytes_out = np.zeros(total_rows, dtype=u64)
    packets_out = np.zeros(total_rows, dtype=u64)
    start_out[pos] = s
    bytes_out[pos] = srt["bytes"].to_numpy()
    packets_out[pos] = srt["packets"].to_numpy()
    del pos, base

    out = pl.DataFrame(
        {
            "gid": pl.Series("gid", gid_out, dtype=pl.UInt32),
            "bin_ns": pl.Series("bin_ns", w_out, dtype=pl.Int64),
            "start_ns": pl.Series("start_ns", start_out, dtype=pl.Int64),
            "bytes": pl.Series("bytes", bytes_out, dtype=pl.UInt64),
            "packets": pl.Series("packets", packets_out, dtype=pl.UInt64),
        }
    )
    return out.select(se.columns), sparse


def _bin_index(t: Any, width: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """⌊(t − phase)/Δ⌋ as the scan finds it: the epoch bin's index, one less where t lies before
    that bin's start plus the phase (numpy's // and % floor, as Rust's div_euclid does for Δ > 0)."""
    return (t // width - (t % width < phase)).astype(np.int64)


def _sorted_by_key(se: pl.DataFrame) -> bool:
    """Whether the rows are in (gid, bin_ns, start_ns) order, as the scan gives them."""
    gid = se["gid"].to_numpy()
    w = se["bin_ns"].to_numpy()
    s = se["start_ns"].to_numpy()
    same_g = gid[1:] == gid[:-1]
    same_w = same_g & (w[1:] == w[:-1])
    up = (gid[1:] > gid[:-1]) | (same_g & (w[1:] > w[:-1])) | (same_w & (s[1:] > s[:-1]))
    return bool(up.all())
