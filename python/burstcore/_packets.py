"""Packets as a polars DataFrame, and the capinfos-like summary."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._sources import normalize
from ._types import Count, Instant, SingleSource
from ._units import (
    _I64_MAX,
    _iso_ns,
    format_bytes,
    format_duration,
    format_instant,
    format_rate,
    format_span,
    no_mean_rate,
    parse_count,
    parse_filter,
    parse_time_range,
    plural,
    printable,
    said,
)

ProgressCallback = Callable[[int, "int | None"], object]
"""``progress(bytes_done, bytes_total)``: called from the reading loop at most every 100 ms (also while
a slow stream trickles in, a packet at a time), and once more when everything is read (then
``bytes_done == bytes_total``); what it returns is ignored (a tqdm ``update`` will do).
``bytes_total`` is the input's size in bytes as stored (compressed, for a .gz or .zst): a file's
size, or what a seekable file object holds from its position on; ``None`` for a stream (stdin, a
pipe, a file object that cannot seek to its end). An exception it raises stops the read and
propagates; a callback that is not callable is a ``TypeError`` at once."""


def checked_progress(progress: ProgressCallback | None) -> ProgressCallback | None:
    """``progress`` as given, refused at once if it cannot be called, in the words the core uses:
    where it is wrapped (a scan's pre-pass and main pass, a capture's part of several) the core
    sees a callable, and the first call raised Python's bare "'int' object is not callable"."""
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress={said(progress)} is not callable: pass a function called as "
            "progress(bytes_done, bytes_total_or_None), or None"
        )
    return progress


class CaptureWarning(UserWarning):
    """The capture was read but something is off (e.g. cut off mid-block while being written).

    Beside its message, what a program goes by, as a ``CaptureError`` carries it:

    - ``kind``: what is off, as the core names it (``CaptureError.kind`` uses the same words):
      ``"truncated"`` (the capture ends inside a block or record), ``"packets_lost"`` (its pcapng
      statistics count packets dropped while it was recorded), ``"timestamp_out_of_range"``,
      ``"oversized_record"`` (a record longer than libpcap takes for its link type, which
      burstcore reads and tcpdump and tshark refuse), ``"undeclared_fcs"`` (frames that end with
      an FCS the capture does not declare, found by ``size='l1'`` with ``fcs='declared'``, which
      counts each 4 B too long: give ``fcs='present'``); ``None`` for a warning of the Python side
      (pooled bins, captures that share packets, ...).
    - ``offset``: the byte offset (in the decompressed stream) where it was found, or ``None``.
    - ``input``: which input, when several are read at once (a file's path, or ``"input k of
      n"``), else ``None``.
    - ``limit``: reserved, as ``LimitExceededError.limit``, and ``None`` on every warning today:
      a limit raises ``LimitExceededError``, and those that let the read go on (``iterations``'
      last bin and pooled bins) warn from the Python side, ``kind`` ``None``.

    ``python -W error`` (or a ``"error"`` filter) raises the warning itself, attributes and all.

    The message is text for people, and Python prints it as it is: control characters (ESC,
    which starts a terminal's escape sequences, line breaks) and bidirectional overrides in it
    are escaped as Python escapes them (``\\x1b``, ``\\n``, ``\\u202e``): whoever made the file
    names, interface names and filters it quotes chose their characters. ``input`` keeps the
    name as given, for a program to match.
    """

    kind: str | None
    offset: int | None
    input: str | None
    limit: str | None

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        offset: int | None = None,
        input: str | None = None,
        limit: str | None = None,
    ) -> None:
        super().__init__(printable(message))
        self.kind = kind
        self.offset = offset
        self.input = input
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:
        # The attributes are keywords, which pickling through ``args`` alone would lose (a
        # warning recorded in a worker process comes back whole).
        return (_rebuilt, (type(self), str(self), self.kind, self.offset, self.input, self.limit))


def _rebuilt(
    cls: type[CaptureWarning], message: str, kind: str | None, offset: int | None, input: str | None, limit: str | None
) -> CaptureWarning:
    return cls(message, kind=kind, offset=offset, input=input, limit=limit)


CoreWarning = tuple[str, str, int | None, str | None, str | None]
"""A warning as the core hands it over: ``(message, kind, offset, input, limit)``."""


def _as_warning(m: CoreWarning | str) -> CaptureWarning:
    """A core warning as the ``CaptureWarning`` it is issued as; a text of the Python side
    (pooled bins, ...) with none of the core's attributes."""
    if isinstance(m, str):
        return CaptureWarning(m)
    message, kind, offset, input, limit = m
    return CaptureWarning(message, kind=kind, offset=offset, input=input, limit=limit)


def _warn(messages: Sequence[CoreWarning | str], stacklevel: int = 3) -> list[str]:
    """Issue the capture's warnings (at ``stacklevel`` counted from the caller's caller's line:
    the user's call to the public function that calls this) and give their texts."""
    told = [_as_warning(m) for m in messages]
    for w in told:
        warnings.warn(w, stacklevel=stacklevel)
    return [str(w) for w in told]


# The units a plain number given for start=/end= is most often meant in, as ns per unit.
_UNITS = ((10**9, "seconds"), (10**6, "milliseconds"), (10**3, "microseconds"))


def _is_plain_number(value: Any) -> bool:
    """An instant given as a bare integer (ns since 1970), not as a date: where a number of
    seconds, ms or µs slips through as ns."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _short_iso(ns: int) -> str:
    """An instant as ISO 8601 UTC without the fraction's trailing zeros, to give as an example."""
    text = format_instant(ns).rstrip("0").removesuffix(".")
    return text + "Z"


def _likely_unit(ns: int, span: tuple[int, int]) -> tuple[int, str] | None:
    """``(ns per unit, name)`` of the unit a plain number ``ns`` given as an instant was most
    likely meant in, or None. When, read as ns, it lies far from ``span`` (the earliest and
    latest timestamp read: further than the span is long, and over a second), while read in that
    unit it lands in the span or near it (within the span's length, or 60 of the unit: whole
    seconds or a round minute). Times far apart by a factor of 1000 do not happen by chance: a
    capture of a real date read with a bound in seconds has that bound, as ns, in January 1970.
    And when it cannot have been meant as ns at all (``_implausible_ns``): the unit that brings
    it nearest the packets, if that is a thousand times nearer than as ns (a bound in seconds
    hours or days from the capture; another unit lands decades away)."""
    fitting = [(per, unit) for per, unit in _UNITS if -(2**63) <= ns * per < 2**63]
    if _far(ns, span):
        for per, unit in fitting:
            if _near(ns * per, span, max(span[1] - span[0], 60 * per)):
                return per, unit
    if _implausible_ns(ns, span) and fitting:
        gap, per, unit = min((_gap(ns * per, span), per, unit) for per, unit in fitting)
        if gap * 1000 <= _gap(ns, span):
            return per, unit
    return None


# A plain number under 2**41, read as ns, is an instant in the first 36.6 minutes of 1970, which
# nobody means for packets recorded a day or more later (their instants in ns are 8.64e13 or
# more); seconds since 1970 (up to year 71,700) and ms (up to 2039) are under it.
_IMPLAUSIBLE_NS = 2**41
_DAY_NS = 86_400 * 10**9


def _implausible_ns(ns: int, span: tuple[int, int]) -> bool:
    """A plain number that cannot have been meant as ns: an instant in the first 2**41 ns of 1970
    (36.6 minutes) for packets from 1970-01-02 on; not 0, which is 1970 in any unit (and a start
    "from the beginning"). A capture of the first minutes of 1970 (a clock never set, a test's
    timestamps from 0) takes such numbers as ns, and is not told."""
    return 0 < ns < _IMPLAUSIBLE_NS and span[0] >= _DAY_NS


def _gap(t: int, span: tuple[int, int]) -> int:
    """How far the instant ``t`` lies from ``span`` (0 inside it)."""
    return max(span[0] - t, t - span[1], 0)


def _near(t: int, span: tuple[int, int], slack: int) -> bool:
    return span[0] - slack <= t <= span[1] + slack


def _far(ns: int, span: tuple[int, int]) -> bool:
    """An instant further from ``span`` than the span is long, and over a second: not a bound
    meant in ns that merely missed the packets."""
    return not _near(ns, span, max(span[1] - span[0], 10**9))


def _where(t: int, span: tuple[int, int], per: int) -> str:
    """Where the instant ``t`` (a bound read in the unit of ``per`` ns) lies from ``span``, said of
    "them" (the packets): among them, next to them (within the span's length or 60 of the unit),
    or about how long before or after."""
    if span[0] <= t <= span[1]:
        return "among"
    if _near(t, span, max(span[1] - span[0], 60 * per)):
        return "next to"
    side = "before" if t < span[0] else "after"
    return f"about {_about(_gap(t, span))} {side}"


def _about(ns: int) -> str:
    """A length of time in the largest unit that keeps it at 2 or more, rounded."""
    seconds = ns / 10**9
    for size, unit in ((365.25 * 86_400, "years"), (86_400, "days"), (3600, "hours"), (60, "minutes")):
        if seconds >= 2 * size:
            return f"{round(seconds / size):,} {unit}"
    return f"{round(seconds)} seconds"


def _unit_hints(
    bounds: tuple[Any, Any], time_range: tuple[int | None, int | None], span: tuple[int, int], packets: str | None
) -> list[str]:
    """For each bound given as a plain number that was most likely meant in another unit: what
    it is in that unit and what to give instead; with ``packets`` (the packets read, named for
    a note that has not said where they are), first how it was read and what it did, and so
    too for a bound that cannot have been meant as ns in any unit (``_implausible_ns``: a number
    of seconds far from the capture, or an offset into it), with the general advice. (Without
    ``packets``, the note that the range holds none of them gives that advice itself.)"""
    hints = []
    for name, given, ns in zip(("start", "end"), bounds, time_range, strict=True):
        if ns is None or not _is_plain_number(given):
            continue
        found = _likely_unit(ns, span)
        if found is None and (packets is None or not _implausible_ns(ns, span)):
            continue
        if found is None:
            advice = (
                "a plain number is ns since 1970, not seconds nor an offset into the capture: give a datetime, "
                "an ISO 8601 string or an int of ns since 1970 (seconds * 10**9)"
            )
        else:
            per, unit = found
            meant = ns * per
            advice = f"if {unit} were meant, give {name}='{_short_iso(meant)}' (ISO 8601) or {name}={meant} (ns)"
        if packets is None:
            hint = f"read as {unit}, {name}={ns} is {_iso_ns(meant)}, {_where(meant, span, per)} the packets: {advice}"
        else:
            side = "before" if ns < span[0] else "after"
            # A start before the packets, or an end after them, cuts none off; the others cut all.
            cuts = "none" if (name == "start") == (side == "before") else "all"
            hint = (
                f"{name}={ns} is ns since 1970, {_iso_ns(ns)}, long {side} {packets}, so it leaves {cuts} of them out"
            )
            if found is None:
                hint += f": {advice}"
            else:
                hint += f"; read as {unit} it is {_iso_ns(meant)}, {_where(meant, span, per)} them: {advice}"
        hints.append(hint)
    return hints


def _with_range_note(
    messages: Sequence[CoreWarning | str],
    acc: dict[str, Any],
    time_range: tuple[int | None, int | None] | None,
    bounds: tuple[Any, Any] = (None, None),
    packets: str | None = None,
) -> list[CoreWarning | str]:
    """``messages`` and a note when ``start``/``end`` (as given: ``bounds``; as read:
    ``time_range``) left out every packet read that has a timestamp, or when a bound given as a
    plain number lies far from the packets while read in seconds (ms, µs) it would be among
    them: a plain int is ns since 1970, so a bound meant in seconds lands in 1970, and an
    analysis of nothing, or of everything, was otherwise returned without a word. The range is
    tested before anything else (filter, size, order) in the core, so the packets with a
    timestamp are exactly those it saw; ``acc["ts_span"]`` is the earliest and latest of them.
    ``packets`` names them where they were not counted (else "the 37 packets read")."""
    messages = [*messages, *_filter_note(acc), *_size_note(acc)]
    if time_range is None:
        return list(messages)
    outside = int(acc["skipped_outside_range"])
    timed = (
        int(acc["packets_read"]) - int(acc["skipped_no_timestamp"]) - int(acc.get("skipped_timestamp_out_of_range", 0))
    )
    span = None if timed == 0 or acc.get("ts_span") is None else (int(acc["ts_span"][0]), int(acc["ts_span"][1]))
    noun = plural(timed, "packet") + (" read" if timed == int(acc["packets_read"]) else " with a timestamp")
    if span is None:
        seen = ""
    else:
        seen = f" (at {_iso_ns(span[0])})" if span[0] == span[1] else f" ({_iso_ns(span[0])} to {_iso_ns(span[1])})"
    one = packets is None and timed == 1
    if packets is None:
        packets = f"the one {noun}" if one else f"the {timed:,} {noun}"
    if outside == 0 or outside != timed:
        # The range kept packets, yet a bound far from them was most likely meant in another unit.
        hints = [] if span is None else _unit_hints(bounds, time_range, span, packets + seen)
        return [*messages, "; ".join(hints)] if hints else list(messages)
    lo, hi = (("…" if t is None else _iso_ns(t)) for t in time_range)
    if one:
        held = f"does not hold {packets}{seen}"
    else:
        held = f"holds none of {packets}{seen}, all outside it"
    note = f"start/end [{lo}, {hi}) {held}, so nothing was measured"
    hints = [] if span is None else _unit_hints(bounds, time_range, span, None)
    # The general hint for a plain number far from the packets (or from packets of no known
    # span): one close to them was meant in ns, and the range merely missed them.
    far = any(
        _is_plain_number(b) and t is not None and (span is None or _far(t, span))
        for b, t in zip(bounds, time_range, strict=True)
    )
    if hints:
        note += "; a plain number is ns since 1970: " + "; ".join(hints)
    elif far:
        note += (
            "; a plain number is ns since 1970: for seconds give a datetime, an ISO 8601 string or an int of ns "
            "(seconds * 10**9)"
        )
    return [*messages, note]


def _filter_note(acc: dict[str, Any]) -> list[str]:
    """A note when ``filter=`` passed none of the packets it was given: as for a range that holds
    none, an empty result (an analysis of nothing, "period none") was otherwise returned without
    a word, though a host or port mistyped is the likely cause. Only the filter skips packets as
    ``skipped_filtered``, so a count there means one was given; packets that passed it and were
    left out later (no size, late) mean it passed some."""
    tested = int(acc.get("skipped_filtered", 0))
    passed = int(acc.get("counted", 0)) + int(acc.get("skipped_no_size", 0)) + int(acc.get("skipped_late", 0))
    if tested == 0 or passed:
        return []
    return [
        f"filter= passed none of the {tested:,} {plural(tested, 'packet')} it was given (skipped_filtered), so "
        "nothing was measured: check its hosts, nets and ports against the capture's (read_packets or "
        "host_volumes without the filter lists them; docs/filters.md)"
    ]


def _size_note(acc: dict[str, Any]) -> list[str]:
    """A note when ``size=`` ('ip', 'payload': the sizes read from a header) found its header in
    none of the packets that reached it: an empty result (no flows, "period none") was otherwise
    returned without a word, as for a filter that passes none. The packets left out before
    (range, filter: told by their own notes) or after (late) do not count."""
    lacking = int(acc.get("skipped_no_size", 0))
    if lacking == 0 or int(acc.get("counted", 0)) or int(acc.get("skipped_late", 0)):
        return []
    return [
        f"size= found the header it counts in none of the {lacking:,} {plural(lacking, 'packet')} it was given "
        "(skipped_no_size), so nothing was measured: 'ip' counts IP packets and 'payload' TCP/UDP ones; "
        "'wire' or 'l1' counts every frame"
    ]


def read_packets(
    source: SingleSource,
    columns: Sequence[str] | None = None,
    *,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    threads: Count | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: str | None = None,
) -> pl.DataFrame:
    """Read a capture into a polars DataFrame, one row per packet, in file order.

    Columns: ``timestamp`` (Datetime ns, UTC; null for packets without one), ``interface``,
    ``wire_len``, ``cap_len``, ``linktype``, ``src``, ``dst`` (IP addresses as strings),
    ``protocol``, ``sport``, ``dport``, ``vlan``, ``qp`` (RoCEv2 destination QP), ``ip_len``,
    ``payload_len``, ``tcp_flags``, ``tcp_seq`` (the raw TCP sequence number, ``UInt32``).
    ``interface`` numbers the file's interfaces in the order they are declared, across all
    its pcapng sections (the second section's first interface follows the first section's
    last), so that it names one interface in the whole file; tshark's ``frame.interface_id``
    restarts at 0 in each section. Header fields are null where a packet lacks them (or its
    capture cut them off); which link types and encapsulations are read, and where a field
    says damage: docs/metrics.md. ``ip_len``
    is the IP header's length (IPv4 total length, IPv6 payload length + 40); where that is 0, as
    in TSO/GRO and BIG TCP super-frames, it is an IPv6 Jumbo Payload option's length + 40, else
    the rest of the frame on the wire (as tshark presumes for IPv4); ``payload_len`` follows from it.
    ``columns`` selects a subset (faster: headers are decoded only if asked for). The frame holds
    every packet chosen (docs/limits.md): for a capture larger than memory, ``iter_packets``
    gives the same rows in batches, and ``scan_packets`` as a LazyFrame.

    ``timestamp`` has no ``timestamp_ns`` twin, unlike the instants of the analyses' tables: this
    frame is the large one, and such a column would add 8 bytes a packet to it and to every file
    and copy made of it. ``df["timestamp"].dt.epoch("ns")`` gives the exact integer ns (``Int64``,
    nulls kept) as a view of the same buffer, copying nothing.

    The lengths (``wire_len``, ``cap_len``, ``ip_len``, ``payload_len``) are ``UInt32``, as in
    the capture formats. polars sums a ``UInt32`` column in 32 bits, so a total past 4 GiB
    wraps without a word (numpy and pandas sum in 64 bits): cast before summing,
    ``pl.col("wire_len").cast(pl.UInt64).sum()``. ``scan`` and the other analyses count in
    64 bits whatever they are given.

    ``source``: a path ('-' for stdin), bytes, or a binary file object; gzip and zstd are
    recognised by content. A capture cut off mid-block gives the packets before the cut and a
    ``CaptureWarning``; ``strict=True`` raises ``TruncatedCaptureError`` instead. ``progress``:
    called as ``progress(bytes_done, bytes_total_or_None)``, as ``scan`` calls it. Columns that
    cannot have the memory they grow into raise ``LimitExceededError`` (``limit == "result"``,
    ``offset`` where the read stopped) instead of the process aborting: ask for fewer
    ``columns``, a ``start``/``end`` stretch or a ``filter`` (docs/limits.md).

    ``mmap`` as for ``scan``: by default (``None``) a plain capture file given by path is read
    through a memory mapping on Linux (a file truncated meanwhile raises ``OSError``) and with
    ``read()`` elsewhere; ``False`` always reads with ``read()``. Compressed files, stdin, pipes
    and file objects are read with ``read()`` whatever ``mmap`` says.

    ``threads`` (default: the cores this process may use, at most 8): a plain capture file given
    by path is cut into byte ranges read side by side (no more than ``threads`` or the cores, none
    under 4 MiB: a smaller file is read whole), which become the chunks of the frame (see
    ``DataFrame.n_chunks``; ``rechunk()`` joins them, at the cost of a copy). The rows are those
    of the sequential read whatever the number; 1 reads on the calling thread into one chunk.
    More than ``burstcore.MAX_THREADS`` (1024) raises ``ValueError``.

    ``start``, ``end``: only the packets of the stretch [start, end), as ``scan`` reads it: a
    timestamp at or after ``start`` and before ``end`` (either may be left open). A packet
    without a timestamp (a pcapng Simple Packet Block, or a timestamp outside int64 ns) is in
    no stretch, so it is left out whenever one is given, as ``scan`` leaves it out. The same
    forms as ``scan``: a ``datetime`` (naive ones are UTC), ``numpy.datetime64``,
    ``pandas.Timestamp``, ISO 8601 string, or int of ns since 1970; ``start`` not before
    ``end`` raises ``ValueError``. The rows are those of the whole read whose timestamp is in
    the stretch, in file order (out-of-order packets are not sorted), for any ``threads``; the
    time range is looked at before the headers, so a packet outside it costs no decoding. As
    ``scan`` and the analyses do, a ``CaptureWarning`` tells a range that holds none of the
    packets with a timestamp (an empty frame), naming their span, and a bound given as a plain
    number that lies far from them while read in seconds (ms, µs) it would be among them, or
    that no one means as ns (docs/metrics.md; a number of seconds taken for ns is in 1970).

    ``filter``: only the packets whose headers pass this expression in tcpdump's language, as
    ``scan`` takes it (docs/filters.md), e.g. ``"tcp port 29500"``; the rows are the passing
    packets in file order. Every packet's headers are decoded to test it, whatever ``columns``
    asks for. A filter that passes none of them gets a ``CaptureWarning`` saying so (an empty
    frame).
    """
    # One name is one column (not its letters); a column asked for twice comes once.
    wanted = list(dict.fromkeys([columns] if isinstance(columns, str) else columns)) if columns is not None else None
    time_range = parse_time_range(start, end)
    chunks, warns, read = _core.read_table(
        normalize(source),
        wanted,
        strict,
        progress,
        mmap=mmap,
        threads=thread_count(threads),
        filter=parse_filter(filter),
        time_range=time_range,
    )
    _warn(_with_range_note(warns, read, time_range, (start, end)))
    # Each column through the Arrow PyCapsule interface: polars adopts the Rust buffers (values,
    # validity bitmaps, address strings) without a copy, and concatenating without rechunking
    # keeps each range's buffers as a chunk of the column.
    # One Ctrl-C, one KeyboardInterrupt, if polars takes it while building (`_core.one_ctrl_c`).
    with _core.one_ctrl_c:
        frames = [pl.DataFrame([pl.Series(c) for c in cols]) for cols in chunks]
        df = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=False)
        return df if wanted is None or wanted == df.columns else df.select(wanted)


def thread_count(threads: Count | None) -> int:
    """``threads`` as given, or the default (the cores this process may use: its CPU affinity and
    cgroup quota, at most 8); checked."""
    if threads is None:
        threads = _core.default_threads()
    threads = parse_count(threads, name="threads")
    if threads > _core.MAX_THREADS:
        raise ValueError(
            f"threads={threads} is more than the {_core.MAX_THREADS} burstcore will start; results do not depend "
            "on the count, so leave threads=None (one per core, at most 8) or give at most the number of cores"
        )
    return threads


@dataclass
class CaptureInfo:
    """A capinfos-like summary of one capture (see ``burstcore.info``); ``print(info)`` shows it
    as capinfos would, ``to_dict()`` gives it for JSON.

    - ``format`` ('pcap', 'pcap (modified)' or 'pcapng'; None for one file of several cut
      before its magic number, an empty last file of a ring-buffer set, which has none),
      ``compression`` ('none', 'gzip', 'zstd');
    - ``packets``; ``wire_bytes`` and ``captured_bytes``: the packets' lengths on the wire and as
      captured (``snapped``: packets captured shorter than on the wire, by the snaplen);
    - ``first_ns``, ``last_ns``: the first and last packet's timestamp in file order;
      ``min_ns``, ``max_ns``: the earliest and latest (int ns since 1970, UTC; None without a
      packet with a timestamp); ``duration_ns`` = ``max_ns − min_ns`` (0 for one timed
      packet; None past int64, more than 292 years, as ``scan``'s ``span_ns`` and every ``*_ns``
      length: ``mean_rate_bps`` and the printed duration still use the exact span);
    - ``packets_without_timestamp`` (Simple Packet Blocks, and timestamps outside int64 ns,
      counted in ``timestamps_out_of_range`` too);
    - ``out_of_order``: packets stamped earlier than the packet before them in the file,
      ``max_step_back_ns`` the largest such step;
    - ``over_mtu_frames``: frames longer than their link's 1500-byte MTU (jumbo frames, or TSO/GRO
      offload when longer than 9,216 B),
      ``max_wire_len`` the longest frame;
    - ``sections`` and ``interfaces``: one dict per pcapng section (byte order, version,
      hardware, os, user_appl) and per interface (link type, snaplen, resolution, name,
      packets, bytes, counters ``if_recv``, ``if_drop`` / ``os_drop`` of its last statistics
      block (None where no block gives one, or where it is all ones, Wireshark's tools' "not
      known": never a count of 2^64 − 1), ``fcs_len``: the bytes of FCS it declares end each
      frame (pcapng ``if_fcslen``, a pcap header's FCS bits; 0, the norm, when it declares
      none), ``fcs_sampled`` / ``fcs_valid``: the first 64 whole Ethernet frames (among its first
      4,096) of an interface that declares no FCS, and how many of them end with a valid one all
      the same, as ``scan(size='l1')`` checks them, see
      ``undeclared_fcs()``);
    - ``blocks``: blocks read per pcapng block type; ``file_bytes``: the input's size as stored
      (None for a stream); ``warnings``: the texts of the warnings issued;
      ``details``: the rest (``mapped``: read through a memory mapping; ``timed_wire_bytes``;
      ``read``: the packets read and those a time range or filter left out, by reason;
      ``chosen``: the ``start``, ``end`` and ``filter`` given, when one was).
    """

    format: str | None
    compression: str
    packets: int
    wire_bytes: int
    captured_bytes: int
    first_ns: int | None
    last_ns: int | None
    min_ns: int | None
    max_ns: int | None
    packets_without_timestamp: int
    timestamps_out_of_range: int
    out_of_order: int
    max_step_back_ns: int
    over_mtu_frames: int
    max_wire_len: int
    snapped: int
    sections: list[dict[str, Any]]
    interfaces: list[dict[str, Any]]
    blocks: dict[str, int]
    file_bytes: int | None
    warnings: list[str]
    details: dict[str, Any] = field(default_factory=dict)

    def over_mtu_hint(self) -> str:
        """What frames over the 1500-byte MTU suggest. A switch port's mirror of RoCE or storage
        traffic carries jumbo frames (up to 9,216 B on most switches) that were on the wire as
        they are; only longer ones are surely a host's TSO/GRO super-frames, which no wire
        carried, and which make bursts look bigger and fewer than they were."""
        if self.max_wire_len <= JUMBO_FRAME_MAX:
            return "jumbo frames, or a host's TSO/GRO offload (whose burst sizes would be distorted)?"
        return (
            f"TSO/GRO offload (frames over {JUMBO_FRAME_MAX:,} B, the longest jumbo frame)? "
            "burst sizes will be distorted"
        )

    @property
    def duration_ns(self) -> int | None:
        """Span from the earliest to the latest timestamp: None without a timed packet, and where
        it passes int64 (more than 292 years, which only damaged timestamps give), as ``scan``'s
        ``span_ns``; 0 for one instant."""
        span = self._span_ns()
        return span if span is None or span <= _I64_MAX else None

    def _span_ns(self) -> int | None:
        """``max_ns − min_ns``, exact whatever its size (a Python int)."""
        if self.min_ns is None or self.max_ns is None:
            return None
        return self.max_ns - self.min_ns

    @property
    def mean_rate_bps(self) -> float | None:
        """Wire bits per second of the packets with a timestamp over their span, as ``scan``'s ρ
        (with ``size='wire'``; also over a span past int64); None when the span is zero (one
        instant)."""
        d = self._span_ns()
        if not d:
            return None
        return int(self.details.get("timed_wire_bytes", self.wire_bytes)) * 8 * 1e9 / d

    def _no_span(self) -> tuple[int, str]:
        """The packets with a timestamp (those the duration and the mean rate are of), and what
        there is none of when there is no duration: packets, or packets with a timestamp."""
        return self.packets - self.packets_without_timestamp, "packet has a timestamp" if self.packets else "packets"

    def duration_text(self) -> str:
        """The duration for people to read, saying why there is none, or that it is one instant;
        the exact span also where ``duration_ns`` is None past int64, which it says."""
        text = format_span(self._span_ns(), *self._no_span())
        return text if self.duration_ns is not None or self._span_ns() is None else f"{text} (over 292 years)"

    def mean_rate_text(self) -> str:
        """The mean rate for people to read, or why there is none."""
        rate = self.mean_rate_bps
        return format_rate(rate) if rate is not None else no_mean_rate(*self._no_span())

    @property
    def drops(self) -> int | None:
        """Sum of the interfaces' ``isb_ifdrop`` counters from their last Interface Statistics
        Blocks, if any (the pcapng spec's drops by the interface; dumpcap puts the OS capture
        buffer's drops there); ``os_drops`` sums their ``isb_osdrop``. A counter of all ones
        ("not known" to Wireshark's tools) is None in ``interfaces`` and left out."""
        return self._sum_of("if_drop")

    @property
    def os_drops(self) -> int | None:
        """Sum of the interfaces' ``isb_osdrop`` counters (the pcapng spec's drops by the
        operating system) from their last Interface Statistics Blocks, if any; apart from
        ``drops``, never added to it: a capturing tool may count one loss in both."""
        return self._sum_of("os_drop")

    def _sum_of(self, counter: str) -> int | None:
        # A counter that is not known (absent, or all ones) is None here already.
        known = [int(i[counter]) for i in self.interfaces if i.get(counter) is not None]
        return sum(known) if known else None

    def drops_text(self) -> str | None:
        """The statistics blocks' drops for people to read, each counter apart (None without
        one): the spec has the interface's drops in ``isb_ifdrop`` and the OS's in
        ``isb_osdrop``, but dumpcap puts the OS buffer's in ``isb_ifdrop``, and a tool may count
        one loss in both, so a sum could count it twice."""
        counted = [
            f"{n:,} by the {who} ({field})"
            for n, who, field in ((self.drops, "interface", "isb_ifdrop"), (self.os_drops, "OS", "isb_osdrop"))
            if n is not None
        ]
        return ", ".join(counted) if counted else None

    def undeclared_fcs_text(self, index: int) -> str:
        """What ``undeclared_fcs()`` found on interface ``index``, and what to do about it."""
        i = next(x for x in self.interfaces if x["index"] == index)
        return (
            f"interface #{index}: {i['fcs_valid']:,} of its first {i['fcs_sampled']:,} whole frames end with a valid "
            "Ethernet FCS the capture does not declare (a switch mirror may keep it): size 'l1' counts each "
            "4 B long unless told (--fcs present, fcs='present')"
        )

    def undeclared_fcs(self) -> list[int]:
        """The interfaces whose Ethernet frames end with a valid FCS (the CRC-32 of the frame
        before it) that the capture does not declare, going by the first frames of each captured
        whole (``fcs_sampled`` of them, ``fcs_valid`` with one): a switch's mirror that kept the
        FCS without saying so. ``size='l1'`` counts such frames 4 B too long unless given
        ``fcs='present'``. A frame without an FCS ends with its CRC once in 2^32, so more than
        half of them is the FCS (a mirror also forwards the odd frame with a bad one)."""
        return [
            int(i["index"])
            for i in self.interfaces
            if i.get("fcs_valid", 0) and 2 * int(i["fcs_valid"]) > int(i["fcs_sampled"])
        ]

    def __repr__(self) -> str:
        # One line of the headline figures: the dataclass's own repr held every section's and
        # interface's options (a line of any length); ``print(info)`` gives the whole summary.
        n = len(self.interfaces)
        return (
            f"CaptureInfo({self.format_text()}"
            + f", {self.packets} {plural(self.packets, 'packet')}, {self.wire_bytes} wire bytes, "
            f"{n} {plural(n, 'interface')}, duration {self.duration_text()}"
            + (f", {len(self.warnings)} {plural(len(self.warnings), 'warning')}" if self.warnings else "")
            + ")"
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain dict, for JSON: the fields, the ``details`` (``mapped``,
        ``timed_wire_bytes``, ...) beside them, and ``duration_ns``, ``mean_rate_bps`` and
        ``drops``."""
        d = {k: v for k, v in self.__dict__.items() if k != "details"}
        d.update(self.details)
        d["duration_ns"] = self.duration_ns
        d["mean_rate_bps"] = self.mean_rate_bps
        d["drops"] = self.drops
        d["os_drops"] = self.os_drops
        return d

    def format_text(self) -> str:
        """The format and its compression for people to read; 'unknown' for a file cut before its
        magic number (``format`` None)."""
        name = self.format if self.format is not None else "unknown (no magic number)"
        return name + (f" ({self.compression})" if self.compression != "none" else "")

    def _instant_text(self, ns: int | None) -> str:
        """The first or the last packet's instant for people to read, or why there is none (in
        the words of the duration and the mean rate)."""
        return _iso_ns(ns) if ns is not None else f"none (no {self._no_span()[1]})"

    def __str__(self) -> str:
        ts = self._instant_text
        lines = [
            f"Format:              {self.format_text()}",
            f"Sections:            {len(self.sections) or 1}",
            f"Interfaces:          {len(self.interfaces)}",
        ]
        for i in self.interfaces:
            lines.append(
                f"  #{i['index']}: {i['linktype_name']} ({i['linktype']}), snaplen {i['snaplen']}, "
                f"resolution {i['resolution']}"
                # if_tsoffset moves every time of the interface: say that it was added.
                + (f", if_tsoffset {i['ts_offset_s']:+d} s (added)" if i.get("ts_offset_s") else "")
                + f", {i['packets']:,} {plural(i['packets'], 'packet')}"
                # The capture's own text: an ESC in it would drive the terminal it is printed to.
                + (f", name {printable(i['name'])}" if i.get("name") else "")
                + _declared_fcs_text(i)
                + (f", dropped {i['if_drop']:,}" if i.get("if_drop") is not None else "")
                + (f", dropped by the OS {i['os_drop']:,}" if i.get("os_drop") is not None else "")
            )
        chosen = self.details.get("chosen")
        if chosen is not None:
            # The figures below are of the packets chosen, not the file's: said before them.
            read = int(self.details["read"]["packets_read"])
            how = [
                f"[{'…' if chosen['start'] is None else _iso_ns(chosen['start'])}, "
                f"{'…' if chosen['end'] is None else _iso_ns(chosen['end'])})"
                if chosen["start"] is not None or chosen["end"] is not None
                else "",
                f"filter {printable(chosen['filter'])}" if chosen.get("filter") is not None else "",
            ]
            lines.append(
                f"Chosen:              {self.packets:,} of the {read:,} {plural(read, 'packet')} read, by "
                + ", ".join(h for h in how if h)
            )
        lines += [
            f"Packets:             {self.packets:,}",
            f"Data (wire):         {self.wire_bytes:,} {plural(self.wire_bytes, 'byte')} "
            f"({format_bytes(self.wire_bytes)})",
            f"Data (captured):     {self.captured_bytes:,} {plural(self.captured_bytes, 'byte')}",
            f"First packet:        {ts(self.first_ns)}",
            f"Last packet:         {ts(self.last_ns)}",
            f"Duration:            {self.duration_text()}",
            f"Mean rate:           {self.mean_rate_text()}",
            f"Out of order:        {self.out_of_order:,} {plural(self.out_of_order, 'packet')} (largest step back "
            f"{format_duration(self.max_step_back_ns) if self.max_step_back_ns else '0ns'})",
            f"Over link MTU:       {self.over_mtu_frames:,} {plural(self.over_mtu_frames, 'frame')}"
            # The longest frame, where there is one (an empty capture has none, not one of 0 B).
            + (f" (max {self.max_wire_len:,} B)" if self.packets else "")
            + (f"  <- {self.over_mtu_hint()}" if self.over_mtu_frames else ""),
            f"Snapped (cap<wire):  {self.snapped:,} {plural(self.snapped, 'packet')}",
        ]
        if self.packets_without_timestamp:
            # Out-of-range timestamps are counted among the packets without one.
            # timestamps_out_of_range is the file's: a filter may have left some of them out.
            spb = max(0, self.packets_without_timestamp - self.timestamps_out_of_range)
            kinds = [f"{spb:,} in Simple Packet Blocks"] if spb else []
            outside = min(self.timestamps_out_of_range, self.packets_without_timestamp)
            if outside:
                kinds.append(f"{outside:,} out of the int64 ns range")
            lines.append(f"Without timestamp:   {self.packets_without_timestamp:,} ({', '.join(kinds)})")
        dropped = self.drops_text()
        if dropped is not None:
            lines.append(f"Dropped (ISB):       {dropped}")
        for k in self.undeclared_fcs():
            lines.append(f"Undeclared FCS:      {self.undeclared_fcs_text(k)}")
        unknown = self.blocks.get("unknown", 0)
        if unknown:
            # Skipped as the pcapng spec asks; a damaged block type reads as one, and its packet
            # is then missing: worth a look.
            lines.append(f"Unknown blocks:      {unknown} (skipped; a damaged block type also reads as one)")
        for w in self.warnings:
            lines.append(f"Warning:             {w}")
        return "\n".join(lines)


# The longest frame switches take (a 9,000-byte MTU's frame with room for tags): a longer one
# was never on an Ethernet wire.
JUMBO_FRAME_MAX = 9216


def info(
    source: SingleSource,
    *,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: str | None = None,
) -> CaptureInfo:
    """A capinfos-like summary: format, sections, interfaces (link type, resolution, snaplen,
    drop counters), packets, bytes, first/last timestamp, duration, mean rate, packets out of
    timestamp order, and frames longer than the link MTU (jumbo frames up to 9,216 B, a hint of
    TSO/GRO offload beyond).

    ``out_of_order`` counts the packets stamped earlier than the packet just before them in the
    file (a step back; ``max_step_back_ns`` the largest). A scan's ``summary.reordered`` counts
    those stamped earlier than the latest seen so far, so it is at least as large: after a packet
    stamped 1 ms ahead of its neighbours, every packet until the clock catches up is reordered
    for the scan, but only the first is a step back here.

    ``source``: one capture, as ``read_packets`` takes it (a path, '-' for stdin, bytes, a binary
    file object). ``strict``: a capture cut off mid-block raises ``TruncatedCaptureError``
    instead of being summed up to the cut with a ``CaptureWarning``. ``progress``: called as
    ``progress(bytes_done, bytes_total_or_None)``, as ``scan`` calls it. Returns a
    ``CaptureInfo``.

    ``mmap`` as for ``scan``: by default (``None``) a plain capture file given by path is read
    through a memory mapping on Linux (a file truncated meanwhile raises ``OSError``) and with
    ``read()`` elsewhere; ``False`` always reads with ``read()``. Compressed files, stdin, pipes
    and file objects are read with ``read()`` whatever ``mmap`` says; ``details["mapped"]`` tells
    whether the mapping was used.

    ``start``/``end`` (a half-open range [start, end), as ``scan`` takes it) and ``filter`` (a
    tcpdump expression, docs/filters.md) choose the packets summed up, exactly those
    ``read_packets`` with the same keywords lists (a packet without a timestamp is in no range):
    the packets, bytes, timestamps, duration, mean rate, steps back, over-MTU and snapped counts,
    and each interface's ``packets`` and ``bytes``, are those of the packets chosen, and
    ``out_of_order`` compares each with the chosen packet before it. The format, sections,
    interfaces, ``blocks``, drop counters, ``file_bytes`` and ``timestamps_out_of_range`` stay the
    file's. ``details["read"]`` says how many packets were read and why each left out was
    (``skipped_outside_range``, ``skipped_filtered``, ...), as ``scan``'s ``summary``; a range
    or filter that chose none of the packets is warned of, as there.
    """
    return info_of(source, strict=strict, progress=progress, mmap=mmap, start=start, end=end, filter=filter)


def info_of(
    source: SingleSource,
    *,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: str | None = None,
    one_of_several: bool = False,
) -> CaptureInfo:
    """``info``; with ``one_of_several``, of one file of a set summed up one by one (the
    command line's ``info`` of several files): a file cut off before its 4-byte magic number
    (empty, as a ring-buffer set's last file when dumpcap was killed) is summed up as no packets
    and a ``CaptureWarning``, as a file cut inside its header is, instead of being refused."""
    time_range = parse_time_range(start, end)
    parsed_filter = parse_filter(filter)
    d = dict(
        _core.capture_info(
            normalize(source),
            strict,
            progress,
            mmap=mmap,
            time_range=time_range,
            filter=parsed_filter,
            one_of_several=one_of_several,
        )
    )
    d["warnings"] = _warn(_with_range_note(d["warnings"], d["read"], time_range, (start, end)))
    if time_range is not None or parsed_filter is not None:
        d["chosen"] = {"start": time_range[0] if time_range else None, "end": time_range[1] if time_range else None}
        d["chosen"]["filter"] = parsed_filter
    names = set(CaptureInfo.__dataclass_fields__) - {"details"}
    base = {k: d.pop(k) for k in list(d) if k in names}
    return CaptureInfo(**base, details=d)


def _declared_fcs_text(interface: dict[str, Any]) -> str:
    """What an interface line says of the FCS it declares its frames end with (``, FCS 4 B
    declared``; size 'l1' then counts it once), else nothing: declaring none is the norm."""
    n = int(interface.get("fcs_len") or 0)
    return f", FCS {n} B declared" if n else ""
