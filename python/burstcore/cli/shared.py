"""The command shared: which captures hold the same packets, and the filters that count each once."""

from __future__ import annotations

import argparse
from typing import Any, Literal

import polars as pl

from .._units import printable
from .errors import UsageError, _reading_now
from .inputs import _label, _progress, _rereadable, _shown
from .messages import _many, _recorded_warnings
from .output import _emit, _prepare_output
from .terminal import _rows_line, _show_table
from .values import _instant_ns


def cmd_shared(args: argparse.Namespace) -> int:
    import burstcore

    from .._units import per_capture

    fmt = _prepare_output(args)
    files = list(args.files)
    if len(files) < 2:
        raise UsageError(
            "shared compares captures with one another: give two or more (the same file twice, with a "
            "--filter each, compares two parts of one capture)"
        )
    _reading_now(*files)
    kw = {"filter": args.filter, "start": args.start, "end": args.end, "mmap": args.mmap, "strict": args.strict}
    senders: Literal["sampled", "all"] = "all" if args.all_senders else "sampled"
    label = f"{len(files)} files, every sender"
    with _progress(label, args.quiet or not args.all_senders) as bar, _recorded_warnings() as told:
        found = burstcore.shared_packets(_rereadable(files), senders=senders, progress=bar, **kw)
    pairs = found.pairs.with_columns(
        pl.Series("file_a", [_shown(files[a]) for a in found.pairs["a"]], dtype=pl.String),
        pl.Series("file_b", [_shown(files[b]) for b in found.pairs["b"]], dtype=pl.String),
    ).select("a", "b", "file_a", "file_b", pl.exclude("a", "b", "file_a", "file_b"))
    each = per_capture(args.filter, len(files))
    # Typed apart: mypy 1.10 (the test extra's floor) took the list for a list[str] in the dict.
    own: list[str | None] = list(found.filters) if found.filters else [None] * len(files)
    captures = pl.DataFrame(
        {
            "capture": list(range(len(files))),
            "file": [_shown(f) for f in files],
            "host": found.hosts,
            "filter": each,
            "own_filter": own,
            "first_ns": [None if sp is None else sp[0] for sp in found.spans],
            "last_ns": [None if sp is None else sp[1] for sp in found.spans],
        },
        schema={
            "capture": pl.UInt32,
            "file": pl.String,
            "host": pl.String,
            "filter": pl.String,
            "own_filter": pl.String,
            "first_ns": pl.Int64,
            "last_ns": pl.Int64,
        },
    )
    # Each instant as every other table has it: a Datetime, its exact integer ns beside it.
    at = pl.Datetime("ns", "UTC")
    captures = captures.with_columns(first=pl.col("first_ns").cast(at), last=pl.col("last_ns").cast(at)).select(
        pl.exclude("first_ns", "last", "last_ns"), "first_ns", "last", "last_ns"
    )
    meta = {
        "burstcore": burstcore.__version__,
        "command": args.command,
        "files": files,
        "hosts": found.hosts,
        "uncaptured": found.uncaptured,
        "filters": found.filters,
        "stretch_ns": found.stretch,
        "config": {
            "filter": args.filter,
            "start_ns": _instant_ns(args.start),
            "end_ns": _instant_ns(args.end),
            "senders": senders,
            "mmap": args.mmap,
            "strict": args.strict,
        },
        "warnings": told,
        "warning_details": told.details(),
    }
    tables = {"pairs": pairs, "captures": captures}
    return _emit(fmt, tables, meta, args, lambda: _show_shared(args, found, pairs, each))


def _show_shared(args: argparse.Namespace, found: Any, pairs: pl.DataFrame, each: list[str | None]) -> None:
    import shlex

    from ..report import shared_captures_table, shared_pairs_table

    files = list(args.files)
    print(f"== {len(files)} captures: " + ", ".join(_label(f) if f == "-" else printable(_shown(f)) for f in files))
    _show_table(
        "Captures, each with its host (the one address in nearly all of its packets sampled; of a capture of "
        "one pair of hosts, the one whose packets it saw first)",
        shared_captures_table([_label(f) if f == "-" else f for f in files], found.hosts, found.spans),
    )
    told = pairs.filter(pl.col("told"))
    shown = pairs.sort("told", "a", "b", descending=[True, False, False]).head(args.top)
    _show_table(
        _rows_line("\nPairs whose samples share packets", pairs.height, shown.height, "those told first,"),
        shared_pairs_table(shown),
    )
    if told.is_empty():
        few = (
            f" ({_many(pairs.height, 'pair')} share too few to tell: a broadcast both heard, say)"
            if pairs.height
            else ""
        )
        print(f"\nNo two captures hold the same packets where they run together{few}: merged, each packet counts once.")
    else:
        print(
            f"\n{_many(told.height, 'pair')} of the {len(files)} captures {'holds' if told.height == 1 else 'hold'} "
            "the same packets: merged as they are, each such packet counts twice."
        )
    if found.filters is not None:
        if not told.is_empty():
            print("To count each once, read each capture through the packets its host sent, one --filter per file:")
            print("  " + " ".join(f"--filter {shlex.quote(f)}" for f in found.filters))
            _show_stretch(found.spans, found.stretch)
            if args.all_senders:
                print(
                    "Every IP sender in the files is one of these hosts (every packet read; packets without IP "
                    "pass no filter)."
                )
            else:
                print(
                    "Every sender in the samples is one of these hosts; one that sent only elsewhere in the files "
                    "would be in no filter: --all-senders reads every packet to be sure."
                )
    elif not told.is_empty():
        print("One filter per capture ('src host <its host>') counts each packet once, but cannot be spelled out here:")
        for reason in _why_no_filters(files, each, found.hosts, found.uncaptured):
            print(f"  - {reason}")
    print()


# Captures whose first (or last) packets are further apart than this are told to measure the
# stretch they all cover. Nearer, the difference is the time a packet takes from its sender's
# capture to its receiver's (tens of µs in a data centre): a host's first packet is stamped by
# its own capture before the others see it.
_SPANS_APART_NS = 1_000_000


def _show_stretch(spans: list[tuple[int, int | None] | None], stretch: tuple[int, int | None] | None) -> None:
    """A line when the captures do not all cover the same stretch, with the one they do."""
    from .._units import format_duration

    known = [sp for sp in spans if sp is not None]
    if stretch is None or not known:
        return
    starts = max(sp[0] for sp in known) - min(sp[0] for sp in known)
    ends = [sp[1] for sp in known if sp[1] is not None]
    apart = max(starts, max(ends) - min(ends) if ends else 0)
    if apart <= _SPANS_APART_NS:
        return
    from ..report import _ts

    start, end = stretch
    bounds = f"--start {_ts(start)}" + ("" if end is None else f" --end {_ts(end)}")
    print(
        f"The captures do not cover the same stretch (their first or last packets up to {format_duration(apart)} "
        "apart): a host's packets from before its own capture began, or after it ended, are in the others' "
        f"only, and its filter leaves them out. Measure the stretch all of them cover: {bounds}"
    )


def _why_no_filters(
    files: list[str], each: list[str | None], hosts: list[str | None], uncaptured: list[str]
) -> list[str]:
    """Why each capture's 'src host' filter cannot be given (see `_shared.own_filters`)."""
    from .._shared import joined, same_files

    reasons = []
    unknown = [str(k + 1) for k, h in enumerate(hosts) if h is None]
    if unknown:
        reasons.append(
            f"no host is told for capture{'s' * (len(unknown) > 1)} {joined(unknown)}: no one address is in nearly "
            "all of its packets (a bridge's or a mirror port's capture of many hosts), or of one pair of hosts' "
            "traffic, it shares too few distinct packets each way with another capture to tell which end it was "
            "recorded at, or the captures it is compared with disagree (a bridge between two hosts' own)"
        )
    by_host: dict[str, list[int]] = {}
    for k, h in enumerate(hosts):
        if h is not None:
            by_host.setdefault(h, []).append(k + 1)
    same = {tuple(g) for g in same_files(list(files), each, list(range(len(files))))}
    reasons += [
        f"captures {joined([str(k + 1) for k in g])} are the same file ({printable(_shown(files[g[0]]))}): give it once"
        for g in same
    ]
    reasons += [
        f"captures {joined(list(map(str, ks)))} have the same host, {h}: give its filter to one of them"
        for h, ks in by_host.items()
        if len(ks) > 1 and tuple(k - 1 for k in ks) not in same
    ]
    if uncaptured:
        reasons.append(
            f"{', '.join(uncaptured[:8])}{' and more' if len(uncaptured) > 8 else ''} sent packets too and "
            f"{'is' if len(uncaptured) == 1 else 'are'} no capture's host: add each to the filter of the capture "
            "that should count it"
        )
    return reasons
