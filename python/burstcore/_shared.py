"""A warning for captures that hold the same packets: one traffic recorded at several places
(a capture on each host, a host and a mirror port, a file given twice) and merged, so that each
such packet counts twice. The Rust core samples the captures (``analysis::shared``)."""

from __future__ import annotations

import ipaddress
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._packets import CaptureWarning, CoreWarning, ProgressCallback, _warn, _with_range_note, checked_progress
from ._sources import is_rereadable, normalize_each
from ._types import Filters, Instant, Source
from ._units import FramesEqual, check_choice, parse_filters, parse_time_range, per_capture, printable, said

# A pair is told when at least this share of the smaller sample is in both, and at least
# MIN_SHARED packets (half the smaller sample when that is less). Captures of different traffic
# share no packet at all (a packet's identity holds its addresses, IP identification and TCP
# sequence number); a TSO sender and its receiver share only the ACKs, still far above this; and
# two small captures that heard one broadcast are not told for that packet alone.
MIN_SHARE = 0.01
MIN_SHARED = 8
# Pairs named in the message; the rest are counted.
NAMED_PAIRS = 3
# Senders one filter leaves out when the senders of packets that came late are read again (a
# filter holds up to 1,000 primitives; the rest are left to the capture's own filter).
_FILTER_HOSTS = 900
# Most packets read from a capture given as bytes or compressed (SharedOptions::max_packets).
STREAM_PACKETS = 1 << 22


class SharedPacketsWarning(CaptureWarning):
    """Two or more of the captures read together hold the same packets (one traffic recorded at
    several places): merged, each such packet counts twice. Read each capture through a filter of
    its own (``filter=["src host A", "src host B", ...]``), or silence this warning with
    ``warnings.filterwarnings("ignore", category=burstcore.SharedPacketsWarning)``."""


@dataclass(frozen=True, eq=False)
class SharedPackets(FramesEqual):
    """What ``shared_packets`` found.

    ``pairs``: one row per pair of captures whose samples share at least one packet, in order:
    ``a``, ``b`` (positions among the captures, from 0), ``from`` (the instant both were sampled
    from, UTC; ``from_ns`` the same in integer ns), ``shared`` (distinct packets in both
    samples), ``sampled_a``, ``sampled_b`` (distinct packets in each), ``told`` (enough to warn:
    what ``scan`` would tell).
    ``hosts``: per capture, the host it was recorded on where one address is in nearly all of
    its packets (of a capture of one pair of hosts' traffic, the one whose packets it saw first,
    against the captures it shares packets with), else None. ``uncaptured``: senders seen that are no capture's host.
    ``filters``: one filter per capture, each the packets its host sent (within the capture's own
    filter, if it had one), to give as ``filter=`` so that a merge counts every packet once; None
    when they cannot be given whole (a capture's host unknown, two captures of one host, or a
    sender that is no capture's host). Senders are those of the samples: one that sent only
    elsewhere in the captures would be in no filter (``host_volumes`` lists every sender).
    ``spans``: per capture, its first and last instant in ns (in the time range; the last None
    for a stream of more than 2^22 packets, read only that far, with a ``CaptureWarning``),
    None when it has no packet there. ``stretch``: the stretch all captures cover,
    ``(start_ns, end_ns)`` with the end excluded (None when a stream's end is unknown), or None
    when they do not all overlap. Per-host captures read
    through ``filters`` count each packet once only inside it: a host's packets from before its
    own capture began are in the others' only, and its filter leaves them out; give it as
    ``start=``/``end=`` when the spans differ."""

    pairs: pl.DataFrame
    hosts: list[str | None]
    uncaptured: list[str]
    filters: list[str] | None
    spans: list[tuple[int, int | None] | None]
    stretch: tuple[int, int | None] | None

    def __repr__(self) -> str:
        # One line, however many captures: the dataclass's own repr listed every host, span and
        # filter and printed the pairs' table.
        n = len(self.hosts)
        pairs = "pair shares" if self.pairs.height == 1 else "pairs share"
        told = int(self.pairs["told"].sum()) if "told" in self.pairs.columns else 0
        shown = ", ".join("unknown" if h is None else h for h in self.hosts[:4]) + (", …" if n > 4 else "")
        return (
            f"SharedPackets({n} {'capture' if n == 1 else 'captures'}, {self.pairs.height} "
            f"{pairs} packets ({told} told), hosts {shown or 'none'}, "
            f"{len(self.uncaptured)} uncaptured {'sender' if len(self.uncaptured) == 1 else 'senders'}, "
            + ("no filters" if self.filters is None else "filters given")
            + ")"
        )


def renamed_source(source: Any, sources: Any, function: str) -> Any:
    """The captures given as ``source``, or as ``sources``, the old name of ``superpose``'s and
    ``shared_packets``' first argument (every other function's is ``source``), with a
    ``DeprecationWarning`` at the caller of ``function``."""
    if sources is None:
        if source is None:
            raise TypeError(f"{function}() missing the captures: give them as its first argument, source")
        return source
    if source is not None:
        raise TypeError(f"{function}() got the captures twice, as source and as sources: give source only")
    warnings.warn(
        f"{function}(sources=...) is now {function}(source=...), as every burstcore function names it; "
        "sources= will be removed",
        DeprecationWarning,
        stacklevel=3,
    )
    return sources


def shared_packets(
    source: Source | None = None,
    *,
    filter: Filters | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    mmap: bool | None = None,
    strict: bool = False,
    senders: Literal["sampled", "all"] = "sampled",
    progress: ProgressCallback | None = None,
    sources: Source | None = None,
) -> SharedPackets:
    """Which of several captures hold the same packets: the check ``scan`` and the analyses run
    before they merge captures (``SharedPacketsWarning``), on its own, with all it found.
    ``source``: two or more captures, as ``scan`` takes several (paths or bytes); ``sources``:
    its old name, deprecated (a ``DeprecationWarning``). Returns a ``SharedPackets``.

    ``strict``: a capture cut off mid-block raises ``TruncatedCaptureError`` where its sample (or,
    with ``senders="all"``, the read of every packet) meets the cut, as ``scan(strict=True)``
    does; by default the cut ends the capture, as it ends a scan's read of it, with the
    ``CaptureWarning`` (kind ``"truncated"``) a scan of the same captures gives (a plain file's
    last megabyte is read for its span, so a cut there is always met). There is no
    ``reorder_horizon`` nor ``on_late``: the samples are compared as sets of packets, never put
    in time order, so no packet is late (with ``senders="all"``, see below).

    Each capture is sampled where the others run (docs/filters.md, "Captures that hold the same
    packets"): milliseconds for plain files, whatever their sizes. ``filter``, ``start``,
    ``end`` and ``mmap`` as ``scan`` takes them. Captures must be readable twice: paths or bytes
    (a stream is refused with ``ValueError``). Bytes and compressed files are read through once
    (up to 2^22 packets each; past that, a ``CaptureWarning``), sampled where the same capture
    as an uncompressed file would be: the same bytes give the same answer (a compressed file
    whose headers do not announce its length is read a second time, up to two thirds of it, for
    the stretches read for its host; compressed bytes, which cannot be, are read near those
    stretches, not at them). A capture that cannot be read raises its error.

    ``senders``: ``"sampled"`` (default) takes the senders the samples saw, so a host that sent
    only elsewhere in the captures is in neither ``uncaptured`` nor any of ``filters``;
    ``"all"`` also reads every packet of every capture (through its filter and the time range,
    as ``host_volumes`` does; the senders of packets later than its 10 ms reorder horizon, which
    that read drops, are read again in file order, from the packets of senders not found yet:
    a second pass over a capture that holds any; past 900 senders found, which one filter
    cannot leave out, a ``CaptureWarning`` says how many packets went unread) for its sender, so that
    ``uncaptured`` and ``filters`` account for every one: a full pass over the captures, with
    ``progress`` called as ``progress(bytes_done, bytes_total)`` over all of them (the samples
    take milliseconds: without ``senders="all"``, ``progress`` is not called). The samples do
    not read the captures' drop counters (pcapng Interface Statistics Blocks): only with
    ``senders="all"`` is a capture that counts packets lost warned about, as its scan would.

    A ``start``/``end`` that holds none of a capture's packets, or a bound given as a plain number
    far from them that read as seconds (ms, µs) would be among them or that no one means as ns
    (docs/metrics.md), gets a ``CaptureWarning``
    per capture, as ``scan`` tells it: from the capture's first and last instant, since the
    samples count no packets (with ``senders="all"``, from the read of every packet instead;
    nothing for a stream whose end is unknown)."""
    source = renamed_source(source, sources, "shared_packets")
    senders = check_choice(  # type: ignore[assignment]
        senders,
        name="senders",
        choices=("sampled", "all"),
        message="give 'sampled' (the samples' senders) or 'all' (read every packet)",
    )
    if not isinstance(strict, (bool, np.bool_)):
        # As the core checks scan's strict=: strict="no" would read strictly.
        raise TypeError(f"argument 'strict': {said(strict)} is not a bool: give True or False")
    progress = checked_progress(progress)
    srcs = normalize_each(source)
    for k, s in enumerate(srcs):
        if not is_rereadable(s):
            raise ValueError(
                f"capture {k + 1} is a stream ({type(s).__name__}): shared_packets reads each capture at "
                "several places; give a path to a file or the bytes"
            )
    filters = parse_filters(filter, captures=len(srcs))
    time_range = parse_time_range(start, end)
    found = _core.shared_packets(
        srcs,
        mmap=mmap,
        time_range=time_range,
        filter=filters,
        errors=True,
        read_through=True,
        max_packets=STREAM_PACKETS,
        strict=bool(strict),
    )
    no_host: list[str | None] = [None] * len(srcs)
    no_span: list[tuple[int, int | None] | None] = [None] * len(srcs)
    cuts: Sequence[Sequence[CoreWarning]] = [[] for _ in srcs]
    if found is not None:
        pairs, hosts, uncaptured, spans, whole, cuts = found
    else:
        pairs, hosts, uncaptured, spans, whole = [], no_host, [], no_span, no_span
    if time_range is not None and senders == "sampled":
        # Reading every packet (senders="all") tells it per capture as host_volumes does.
        for k, note in _range_notes(whole, spans, time_range, (start, end)):
            # Named as a read of every sender names each capture (`_every_sender`).
            name = _capture_name(srcs[k], k, len(srcs))
            warnings.warn(CaptureWarning(f"{name}: {note}", input=name), stacklevel=2)
    cut = [k for k, sp in enumerate(spans) if sp is not None and sp[1] is None]
    if cut:
        names = joined([str(k + 1) for k in cut])
        warnings.warn(
            f"capture{'s' * (len(cut) > 1)} {names}, given as bytes or compressed, "
            f"{'hold' if len(cut) > 1 else 'holds'} more than {STREAM_PACKETS:,} packets: read only that far, "
            f"{'their' if len(cut) > 1 else 'its'} end is unknown and the others are compared with "
            f"{'them' if len(cut) > 1 else 'it'} only there (a host may be told that the rest would not bear out). "
            "Give each as the path of an uncompressed file to have it sampled wherever the others run",
            CaptureWarning,
            stacklevel=2,
        )
    rows = [(a, b, t, sh, sa, sb, _enough(sh, min(sa, sb))) for a, b, t, sh, sa, sb in pairs]
    schema = {
        "a": pl.UInt32,
        "b": pl.UInt32,
        "from": pl.Int64,
        "shared": pl.UInt64,
        "sampled_a": pl.UInt64,
        "sampled_b": pl.UInt64,
        "told": pl.Boolean,
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row").select(
        "a",
        "b",
        pl.col("from").cast(pl.Datetime("ns", "UTC")),
        pl.col("from").alias("from_ns"),
        "shared",
        "sampled_a",
        "sampled_b",
        "told",
    )
    each = per_capture(filters, len(srcs))
    told: set[tuple[int, str, int | None]] = set()
    if senders == "all":
        every, told = _every_sender(srcs, each, start, end, mmap, bool(strict), progress)
        uncaptured = sorted(set(uncaptured) | (every - {h for h in hosts if h}), key=_address_order)
    # A capture cut short, as a read of it tells it (and with strict=True raises), unless the
    # read of every sender told the same cut already.
    _warn([w for k, ws in enumerate(cuts) for w in ws if (k, w[1], w[2]) not in told], stacklevel=3)
    filters_given = own_filters(hosts, each, uncaptured)
    return SharedPackets(frame, list(hosts), list(uncaptured), filters_given, list(spans), _stretch(spans))


def _capture_name(source: Any, k: int, n: int) -> str:
    """How shared_packets' warnings name the `k`-th (from 0) of `n` captures: its path, else its
    place, in the words of a read of several inputs (scan's "input 2 of 2")."""
    return str(source) if isinstance(source, (str, os.PathLike)) else f"input {k + 1} of {n}"


def _range_notes(
    whole: list[tuple[int, int | None] | None],
    spans: list[tuple[int, int | None] | None],
    time_range: tuple[int | None, int | None],
    bounds: tuple[Any, Any],
) -> list[tuple[int, str]]:
    """Per capture (its position), the note a scan of it would give of ``start``/``end``: the
    samples count no packet, but each capture's first and last instant are known (``whole``,
    whatever the range), and whether any instant of it is in the range (``spans``)."""
    notes = []
    for k, (span, kept) in enumerate(zip(whole, spans, strict=True)):
        if span is None or span[1] is None:
            continue  # no packet with a timestamp, or a stream whose end is unknown
        first, last = span[0], span[1]
        # As the accounting of a read of it: all outside the range, or none; counted as 2
        # packets (or 1 at one instant), which the note says of its packets without a number.
        timed = 1 if first == last else 2
        acc = {
            "packets_read": timed,
            "skipped_no_timestamp": 0,
            "skipped_outside_range": timed if kept is None else 0,
            "ts_span": (first, last),
        }
        for note in _with_range_note([], acc, time_range, bounds, packets="its packets"):
            notes.append((k, str(note)))
    return notes


def _stretch(spans: list[tuple[int, int | None] | None]) -> tuple[int, int | None] | None:
    """The stretch every capture covers, the end excluded (None if any capture's end is unknown:
    it may end before the others do)."""
    if not spans or None in spans:
        return None
    start = max(s[0] for s in spans if s is not None)
    ends = [s[1] for s in spans if s is not None]
    end = None if None in ends else min(e for e in ends if e is not None) + 1
    return None if end is not None and end <= start else (start, end)


def _every_sender(
    sources: list[Any],
    each: list[str | None],
    start: Instant | None,
    end: Instant | None,
    mmap: bool | None,
    strict: bool,
    progress: ProgressCallback | None,
) -> tuple[set[str], set[tuple[int, str, int | None]]]:
    """The source address of every packet of every capture, each read through its own filter;
    and what was warned of each capture, as (its position, kind, offset).

    A packet later than the reorder horizon is dropped by that read: its sender is then looked
    for in a read of the packets (in no order) of senders not found yet."""
    from ._flows import DEFAULT_MAX_PAIRS, _matrix
    from ._scan import DEFAULT_HORIZON

    sizes = [len(s) if isinstance(s, (bytes, bytearray, memoryview)) else _stored_size(s) for s in sources]
    total = None if None in sizes else sum(s for s in sizes if s is not None)
    out: set[str] = set()
    told: set[tuple[int, str, int | None]] = set()
    done = 0
    for k, (source, f, size) in enumerate(zip(sources, each, sizes, strict=True)):
        tick = None if progress is None else _offset_progress(progress, done, total)
        # Each capture is read on its own: what it warns or raises names it, as a read of all
        # of them at once would.
        name = _capture_name(source, k, len(sources))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                found = _matrix(source, DEFAULT_MAX_PAIRS, DEFAULT_HORIZON, "drop", strict, tick, mmap, start, end, f)
        except _core.CaptureError as e:
            if getattr(e, "input", None) is None:
                e.input = name
                e.add_note(f"reading {name} for its senders")
            raise
        for w in caught:
            # At the caller of shared_packets, naming the capture in the text and, for a
            # program, as the input a read of several names.
            text = f"{name}: {w.message}"
            m = w.message
            if isinstance(m, CaptureWarning) and m.kind is not None:
                told.add((k, m.kind, m.offset))
            if isinstance(m, CaptureWarning):
                named = type(m)(
                    text, kind=m.kind, offset=m.offset, input=name if m.input is None else m.input, limit=m.limit
                )
                warnings.warn(named, stacklevel=3)
            else:
                # Not a CaptureWarning, which escapes its text itself: the name is escaped here.
                warnings.warn(printable(text), w.category, stacklevel=3)
        hosts = found["hosts"]
        sent = {h for h, n in zip(hosts["host"], hosts["sent_packets"], strict=True) if h is not None and n > 0}
        late = int(found["accounting"]["skipped_late"])
        if late:
            sent |= _late_senders(source, f, start, end, mmap, strict, sent, late, name)
        out |= sent
        done += size or 0
    return out, told


def _late_senders(
    source: Any,
    own: str | None,
    start: Instant | None,
    end: Instant | None,
    mmap: bool | None,
    strict: bool,
    known: set[str],
    late: int,
    name: str,
) -> set[str]:
    """The senders of a capture's IP packets that are not among ``known``: a second read, in no
    order (nothing is late), for the ``late`` packets the read of every sender dropped as later
    than its reorder horizon, whose senders it did not see. A filter can name only so many
    hosts: past that, a ``CaptureWarning`` says how many packets' senders went unread."""
    from ._packets import read_packets

    others = " or ".join(f"src host {h}" for h in sorted(known, key=_address_order))
    parts = [f"({own})" if own else None, "(ip or ip6)", f"not ({others})" if others else None]
    unknown = " and ".join(p for p in parts if p)
    if len(known) <= _FILTER_HOSTS:
        try:
            with warnings.catch_warnings():
                # The first read told what the capture holds; this one reads it again.
                warnings.simplefilter("ignore")
                packets = read_packets(
                    source, columns=["src"], filter=unknown, start=start, end=end, mmap=mmap, strict=strict
                )
            return set(packets["src"].drop_nulls())
        except ValueError as e:
            # The capture's own filter and the senders together past what a filter holds.
            if "more than 1000 primitives" not in str(e):
                raise
    warnings.warn(
        CaptureWarning(
            f"{name}: {late:,} packets came later than the 10 ms reorder horizon of the read of every "
            f"sender and were dropped, and the {len(known):,} senders found are too many for a filter "
            "that would read the others again: a host that sent only those packets is missing from "
            "uncaptured and the filters. Sort the capture by time (reordercap) and check it again",
            kind="out_of_order",
            input=name,
        ),
        stacklevel=4,
    )
    return set()


def _stored_size(path: Any) -> int | None:
    try:
        return os.stat(path).st_size
    except (OSError, TypeError):
        return None


def _offset_progress(progress: ProgressCallback, before: int, total: int | None) -> ProgressCallback:
    """One capture's progress as a part of all of them: the bytes of those read before it first."""
    return lambda done, _total: progress(before + done, total)


def _address_order(address: str) -> tuple[int, int]:
    """IPv4 before IPv6, each in numeric order, as the core sorts them."""
    ip = ipaddress.ip_address(address)
    return ip.version, int(ip)


def warn_if_shared(
    sources: list[Any],
    filters: str | list[str | None] | None,
    time_range: tuple[int | None, int | None] | None,
    mmap: bool | None,
    stacklevel: int,
) -> str | None:
    """Warn (``SharedPacketsWarning``, at ``stacklevel`` counted from the caller) when captures of
    ``sources`` share packets through the filters they are read with, and return the message.
    Streams (stdin, pipes, file objects) are read once, by the call itself, and are left out."""
    message = _shared(sources, filters, time_range, mmap)
    if message is not None:
        warnings.warn(message, SharedPacketsWarning, stacklevel=stacklevel + 1)
    return message


def _shared(
    sources: list[Any],
    filters: str | list[str | None] | None,
    time_range: tuple[int | None, int | None] | None,
    mmap: bool | None,
) -> str | None:
    each = per_capture(filters, len(sources))
    again = [k for k, s in enumerate(sources) if is_rereadable(s)]
    if len(again) < 2:
        return None
    same = same_files(sources, each, again)
    if same:
        k = same[0][0]
        names = joined([str(i + 1) for i in same[0]])
        more = f" (and {len(same) - 1} more such files)" if len(same) > 1 else ""
        return (
            f"captures {names} are the same file ({sources[k]}){more}, read through the same filter: "
            "merged, each of its packets counts once per copy. Give it once."
        )
    found = _core.shared_packets(
        [sources[k] for k in again], mmap=mmap, time_range=time_range, filter=[each[k] for k in again]
    )
    if found is None:
        return None
    # The scan or analysis that checks tells a capture cut short itself.
    pairs, hosts, uncaptured, _spans, _whole, _cuts = found
    told = [
        (again[a], again[b], shared, min(sampled_a, sampled_b))
        for a, b, _from, shared, sampled_a, sampled_b in pairs
        if _enough(shared, min(sampled_a, sampled_b))
    ]
    if not told:
        return None
    host_of = {again[k]: h for k, h in enumerate(hosts)}
    return _message(sources, told, [host_of.get(k) for k in range(len(sources))], each, uncaptured)


def _enough(shared: int, sampled: int) -> bool:
    return shared >= max(math.ceil(MIN_SHARE * sampled), min(MIN_SHARED, math.ceil(sampled / 2)))


def same_files(sources: list[Any], each: list[str | None], again: list[int]) -> list[list[int]]:
    """Groups of the paths among ``again`` that name one file read through one filter (one file
    read through different filters may be split on purpose, and is left to the sampling)."""
    groups: dict[tuple[int, int, str | None], list[int]] = {}
    for k in again:
        if isinstance(sources[k], str):
            try:
                st = os.stat(sources[k])
            except OSError:
                continue
            groups.setdefault((st.st_dev, st.st_ino, each[k]), []).append(k)
    return [g for g in groups.values() if len(g) > 1]


def joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def own_filters(hosts: list[str | None], each: list[str | None], uncaptured: list[str]) -> list[str] | None:
    """Each capture's filter of the packets its host sent, within its own filter if it has one;
    None unless they can be given whole: every capture's own host known, and every sender one of
    them (else its packets would be in no capture's filter)."""
    if not (all(hosts) and len(set(hosts)) == len(hosts) and not uncaptured):
        return None
    return [f"({f}) and src host {h}" if f else f"src host {h}" for f, h in zip(each, hosts, strict=True)]


def _message(
    sources: list[Any],
    told: list[tuple[int, int, int, int]],
    hosts: list[str | None],
    each: list[str | None],
    uncaptured: list[str],
) -> str:
    a, b, shared, sampled = told[0]
    through = " through their filters" if any(each) else ""
    sample = f"{shared:,} of {sampled:,} packets sampled where both run are in both"
    if len(told) == 1:
        names = [f"{k + 1} ({sources[k]})" if isinstance(sources[k], str) else f"{k + 1}" for k in (a, b)]
        head = f"captures {names[0]} and {names[1]} hold the same packets{through} ({sample})"
    else:
        also = [f"{a + 1} and {b + 1}" for a, b, _, _ in told[1:NAMED_PAIRS]]
        more = len(told) - NAMED_PAIRS
        also += [f"{more} more"] if more > 0 else []
        head = (
            f"{len(told)} pairs of the {len(sources)} captures hold the same packets{through} (captures "
            f"{a + 1} and {b + 1}: {sample}; also {', '.join(also)})"
        )
    own = own_filters(hosts, each, uncaptured)
    if own is not None:
        hint = ", ".join(map(repr, own))
    else:
        hint = "'src host <the first capture's host>', 'src host <the second's>', ..."
        if uncaptured:
            senders = joined(uncaptured[:4]) + (" and more" if len(uncaptured) > 4 else "")
            hint += (
                f" ({senders} sent packets too and {'is' if len(uncaptured) == 1 else 'are'} no capture's "
                "host: add each to the filter of the capture that should count it)"
            )
    return (
        f"{head}: merged, each such packet counts twice. If they are captures of one traffic on several "
        f"hosts, read each through a filter of the packets its host sent, one per capture in their order: "
        f"{hint} (in Python a list for filter=, on the command line --filter once per file); see "
        "docs/filters.md, 'One filter per capture'"
    )
