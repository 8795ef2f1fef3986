"""The tables a command shows on the terminal (or writes to -o FILE.txt)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import polars as pl

from .._units import printable
from .inputs import _shown


def _title(files: Sequence[str]) -> str:
    """What a terminal table is about: the file, stdin, or the files merged."""
    if len(files) == 1:
        return "stdin" if files[0] == "-" else printable(_shown(files[0]))
    return f"{len(files)} files merged: " + ", ".join(printable(_shown(f)) for f in files)


def _print_result(title: str, result: Any, top: int) -> None:
    from ..plot import top_groups
    from ..report import (
        backlog_table,
        envelope_table,
        frame_rate_note,
        groups_table,
        interface_name,
        ratio_note,
        scan_summary_table,
        series_table,
        text_table,
    )

    print(f"== {title}")
    print(text_table(scan_summary_table(result)))
    for by in result.config.get("by") or ["all"]:
        groups = top_groups(result, by, top)
        n_all = result.groups.filter(pl.col("by") == by).height
        if by != "all":
            print(f"\nGroups by {by}: {n_all} (largest {len(groups)} shown; all of them with -o FILE)")
            print(text_table(groups_table(result, by, top)))
        if by == "interface":
            _print_interface_captures(result)
        for g in groups:
            name = "all traffic" if by == "all" else printable(f"{by} {g}" + interface_name(result, by, g))
            print(f"\nEnvelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — {name}")
            print(text_table(envelope_table(result, by, g)))
            _note(ratio_note(result, by, g, "PtM(τ)"))
            _note(frame_rate_note(result, by, g))
            bt = backlog_table(result, by, g)
            if bt[1]:
                print(f"\nBacklog B_max(r) at a constant-rate server — {name} (rates: {result.config.get('rates')})")
                print(text_table(bt))
                _note(ratio_note(result, by, g, "r/ρ"))
    st = series_table(result, top)
    if st[1]:
        print("\nBinned throughput (the bins themselves: -o FILE --table series)")
        print(text_table(st))
    print()


def _print_interface_captures(result: Any) -> None:
    """Which capture each interface group is of, when several captures were scanned as one: their
    labels (if0, if1, ...) run on from one capture to the next and name no file."""
    from ..report import text_table

    ifs = result.interfaces
    if ifs["capture"].n_unique() < 2:
        return
    print("\nInterface groups of each capture (a capture's interfaces follow those of the captures before it)")
    rows = [
        [group, printable(source), str(interface), printable(name) if name is not None else "-"]
        for group, source, interface, name in ifs.select("group", "source", "interface", "name").iter_rows()
    ]
    print(text_table((["group", "capture", "interface", "name"], rows)))


def _note(note: str | None, indent: str = "  ") -> None:
    """A line under a table saying what its '-' cells lack and why, if they lack something."""
    if note:
        print(indent + printable(note))


def _rows_line(noun: str, n_all: int, n_shown: int, which: str) -> str:
    """How many rows there are, and which the terminal shows."""
    if n_shown >= n_all:
        return f"{noun}: {n_all:,}" + (" (all shown)" if n_all else "")
    return f"{noun}: {n_all:,} ({which} {n_shown:,} shown; all of them with -o FILE)"


def _show_skipped(args: argparse.Namespace, summary: pl.DataFrame | None, rows: int) -> None:
    """What was read and left out, when something was; for results without a summary, a word
    when nothing passed the filter or the time range (rather than an empty table alone)."""
    from ..report import skip_reasons

    if summary is not None and summary.height:
        s = summary.row(0, named=True)
        reasons = skip_reasons(s)
        if reasons:
            print(f"Packets read: {s['packets_read']:,}; skipped: {', '.join(reasons)}")
        return
    if rows == 0 and (args.filter or args.start is not None or args.end is not None):
        each = isinstance(args.filter, list)
        chosen = [f"the filter{'s' * each} {args.filter!r}"] if args.filter else []
        chosen += ["the time range"] if args.start is not None or args.end is not None else []
        print(f"No packet passed {' and '.join(chosen)}.")


def _show_table(title: str, table: Any) -> None:
    from ..report import text_table

    if table[1]:
        print(title)
        print(text_table(table))
