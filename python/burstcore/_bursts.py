"""ON/OFF bursts: maximal runs of packets whose gaps are within a threshold, and their
distributions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._analysis import _DT, _first, _one_grouping, _quantiles, _reading, _summary, _with_common_doc
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import DEFAULT_HORIZON, DEFAULT_MAX_GROUPS, Grouping, _parse_order, check_fcs, check_size
from ._sources import normalize_each
from ._types import Count, Duration, Filters, Instant, Quantiles, Source
from ._units import _I64_MAX, FramesEqual, format_duration, parse_count, parse_duration, plural, typed_counts


@dataclass(eq=False)
class Bursts(FramesEqual):
    """ON/OFF trains: a burst is a maximal run of packets whose consecutive gaps are ≤ ``gap``.

    - ``bursts``: one row per burst: burst, start (Datetime, ns, UTC) and start_ns, end and
      end_ns (its last packet), duration_ns, bytes, packets, off_before_ns (the OFF gap since
      the previous burst; null for the first). A length past int64 (more than 292 years between
      two timestamps, which only damaged ones are) is null, as every ``*_ns`` length is.
    - ``distributions``: (metric, q, value) for metric in bytes, packets, duration_ns, off_ns,
      exact order statistics (the smallest value with at least ceil(q·n) values ≤ it, q as
      written: 0.07 of 100 is the 7th; null where that length passes int64).
    - ``summary``: one row: gap_ns (the threshold), bursts, packets, bytes (of the whole
      trace), and the packet accounting. ``gap_ns``: the threshold, also as an attribute.
    - ``by``: the grouping, or None; with one, ``bursts`` and ``distributions`` begin with a
      ``group`` column (the whole trace's rows are group 'all', first).
    """

    gap_ns: int
    bursts: pl.DataFrame
    distributions: pl.DataFrame
    summary: pl.DataFrame
    by: str | None = None

    def __repr__(self) -> str:
        # The whole trace's bursts: grouped, the table also holds each group's.
        n = _first(self.summary, "bursts")
        n = self.bursts.height if n is None else n
        packets = _first(self.summary, "packets")
        return (
            f"Bursts(gap {format_duration(self.gap_ns)}"
            + (f" by {self.by}" if self.by else "")
            + f", {n} {plural(n, 'burst')}"
            + ("" if packets is None else f", {packets} packets")
            + ")"
        )


def _unsigned_lengths(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``last − first`` of int64 instants with first ≤ last, exact as uint64 (modular
    subtraction lands back in [0, 2^64))."""
    return last.view(np.uint64) - first.view(np.uint64)


def _as_ns(lengths: np.ndarray) -> pl.Series:
    """Lengths (uint64) as an Int64 column: null past int64."""
    fits = lengths <= np.uint64(_I64_MAX)
    return pl.Series(np.where(fits, lengths, 0).astype(np.int64), dtype=pl.Int64).scatter(np.flatnonzero(~fits), None)


def _order_stats(values: np.ndarray, first: np.ndarray, counts: np.ndarray, qs: list[Fraction]) -> np.ndarray:
    """Each group's order statistics at ``qs`` (rank ``ceil(q·n)``, at least 1): ``values`` are
    the groups' runs one after another, group g's ``counts[g]`` of them from ``first[g]``; an
    array of (groups, len(qs)), whose rows of groups without a value are meaningless."""
    group = np.repeat(np.arange(len(counts)), counts)
    v = _sorted_within_groups(values, group, len(counts))
    at = np.minimum(first[:, None] + _ranks(counts, qs) - 1, max(len(v) - 1, 0))
    return v[at] if len(v) else np.zeros(at.shape, dtype=np.uint64)


def _sorted_within_groups(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``values`` sorted within each group at once (one sort for all groups, not one per group).
    Unsigned values whose bits and the group's fit in 64 sort as one key, group above value:
    np.lexsort's two keys took 3 to 6 times as long (4.2-4.8 s against 0.8-1.6 s for 8 M values
    in 4,000 groups). Others, by lexsort."""
    if len(values) and values.dtype.kind == "u":
        vbits = int(values.max()).bit_length()
        if vbits + max(n_groups - 1, 0).bit_length() <= 64:
            key = (group.astype(np.uint64) << np.uint64(vbits)) | values.astype(np.uint64)
            key.sort()
            return (key & np.uint64((1 << vbits) - 1)).astype(values.dtype, copy=False)
    return values[np.lexsort((values, group))]


def _ranks(counts: np.ndarray, qs: list[Fraction]) -> np.ndarray:
    """(groups, len(qs)) 1-based ranks ⌈q·n⌉ (at least 1, at most n) of n = ``counts``, q exact
    as ``_quantiles`` reads it (a float as the decimal it is written as), as the Rust histograms
    read it: the float product 0.07 · 100 is 7.000000000000001, whose ceiling is the 8th value,
    not the 7th. Exact in Python integers, once per distinct count (a million groups have few)."""
    distinct, inverse = np.unique(counts, return_inverse=True)
    table = np.ones((len(distinct), len(qs)), dtype=np.int64)
    for j, f in enumerate(qs):
        for i, n in enumerate(distinct.tolist()):
            table[i, j] = min(max(-(-f.numerator * n // f.denominator), 1), max(n, 1))
    return table[inverse.reshape(-1)]


def _burst_tables(
    group: np.ndarray,
    labels: list[str],
    starts: np.ndarray,
    ends: np.ndarray,
    nbytes: np.ndarray,
    packets: np.ndarray,
    qs: list[Fraction],
    grouped: bool,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The bursts' table and the distributions of their bytes, packets, lengths and OFF gaps,
    each group's rows after the previous group's. Built for all groups at once: a frame per
    group cost about 20 kB and a pass over every burst, so 40,000 flows took 817 MB and 47 s
    (a million, as ``max_groups`` allows, some 20 GB and hours)."""
    if len(group) and np.any(group[1:] < group[:-1]):
        order = np.argsort(group, kind="stable")
        group, starts, ends, nbytes, packets = (a[order] for a in (group, starts, ends, nbytes, packets))
    n_groups = len(labels)
    counts = np.bincount(group, minlength=n_groups).astype(np.int64)
    first = np.cumsum(counts) - counts
    n = len(starts)
    # Lengths from the instants, in unsigned 64-bit (exact for any two int64 in order), not the
    # core's int64 ones, which stop at int64's end: past 292 years (only damaged timestamps) a
    # length is null, as every *_ns length is, never a wrong number.
    duration = _unsigned_lengths(starts, ends)
    # The OFF gap before a burst, within its group: none before a group's first.
    opens = np.zeros(n, dtype=bool)
    opens[first[counts > 0]] = True
    off_all = np.zeros(n, dtype=np.uint64)
    if n > 1:
        off_all[1:] = _unsigned_lengths(ends[:-1], starts[1:])
    off = off_all[~opens]
    off_counts = np.maximum(counts - 1, 0)
    off_before = _as_ns(np.where(opens, np.uint64(0), off_all)).scatter(np.flatnonzero(opens), None)
    df = pl.DataFrame(
        {
            "burst": (np.arange(n, dtype=np.int64) - np.repeat(first, counts)).astype(np.uint64),
            "start_ns": starts,
            "end_ns": ends,
            "duration_ns": _as_ns(duration),
            "bytes": nbytes,
            "packets": packets,
            "off_before_ns": off_before,
        }
    ).with_columns(start=pl.col("start_ns").cast(_DT), end=pl.col("end_ns").cast(_DT))
    # Each instant beside its exact ns, as in every other table (README).
    df = df.select("burst", "start", "start_ns", "end", "end_ns", "duration_ns", "bytes", "packets", "off_before_ns")
    stats, empty = [], []
    for vals, c in ((nbytes, counts), (packets, counts), (duration, counts), (off, off_counts)):
        stats.append(_order_stats(vals, np.cumsum(c) - c, c, qs))
        empty.append(np.broadcast_to((c == 0)[:, None], (n_groups, len(qs))))
    # Rows in the order group, metric, q; the repeated words and q's gathered from one copy each
    # (numpy's string arrays took seconds and their own copy per row).
    nq = len(qs)
    value = np.stack(stats, axis=1).reshape(-1)
    null = np.stack(empty, axis=1).reshape(-1) | (value > np.uint64(_I64_MAX))
    value[null] = 0
    dist = pl.DataFrame(
        {
            "metric": pl.Series(["bytes", "packets", "duration_ns", "off_ns"], dtype=pl.String).gather(
                np.tile(np.repeat(np.arange(4, dtype=np.uint32), nq), n_groups)
            ),
            "q": pl.Series([float(q) for q in qs], dtype=pl.Float64).gather(
                np.tile(np.arange(nq, dtype=np.uint32), 4 * n_groups)
            ),
            "value": pl.Series(value.view(np.int64), dtype=pl.Int64),
        }
    ).with_columns(value=pl.when(pl.Series(null)).then(None).otherwise(pl.col("value")))
    if grouped:
        names = pl.Series("group", labels, dtype=pl.String)
        df = df.select(names.gather(group), pl.all())
        dist = dist.select(names.gather(np.repeat(np.arange(n_groups, dtype=np.uint32), 4 * nq)), pl.all())
    return df, dist


def bursts(
    source: Source,
    gap: Duration = "1ms",
    *,
    by: Grouping | Sequence[Grouping] | None = None,
    quantiles: Quantiles | None = None,
    size: Literal["wire", "captured", "ip", "payload", "l1"] = "wire",
    fcs: Literal["declared", "present", "absent"] = "declared",
    max_groups: Count = DEFAULT_MAX_GROUPS,
    reorder_horizon: Duration = DEFAULT_HORIZON,
    on_late: Literal["error", "drop"] = "error",
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: Filters | None = None,
) -> Bursts:
    """Split the trace into bursts separated by gaps longer than ``gap`` (default 1 ms). A plain
    number is seconds, as for windows; one of 1,000 or more is refused as most likely ns (give
    ``f"{gap_ns}ns"``).

    ``by``: one of scan's groupings ('interface', 'src', 'pair', 'flow', ...): each group's
    packets are then split into bursts of their own, whatever the other groups send meanwhile
    (one link's ON/OFF pattern, with 'interface'). ``bursts`` and ``distributions`` then begin
    with a ``group`` column: the whole trace's rows (group 'all') first, then each group's in
    key order, ``burst`` and ``off_before_ns`` counted within the group; ``summary`` stays the
    whole trace's. ``max_groups``: most groups (default 1,000,000); one more is a
    ``LimitExceededError`` (``limit == "result"``) at once.

    ``size``: what each packet's bytes count, as in ``scan``: 'wire' (default), 'captured',
    'ip', 'payload' or 'l1' (docs/metrics.md); a packet without the header it reads is left out
    (it neither extends nor splits a burst) and counted in ``summary.skipped_no_size``; ``fcs``
    (whether frames end with their FCS, for 'l1') as in ``scan``.

    ``quantiles``: the q's of ``distributions`` (default 0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9,
    0.99, 0.999, 1), each a number from 0 to 1, each once, read as for ``sizes`` (a ``Fraction``
    or ``Decimal`` exactly). Returns a ``Bursts``."""
    # A threshold like a window: a plain 1_000_000 (meant as ns, as gap_ns reports it) was read
    # as 11.6 days and silently made the whole trace one burst.
    gap_ns = parse_duration(gap, name="gap", allow_zero=True, scale=True)
    qs = _quantiles(quantiles)
    grouping = _one_grouping(by, "bursts")
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    max_groups = parse_count(max_groups, name="max_groups")
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    srcs = normalize_each(source)
    out, warns = _core.bursts(
        srcs,
        gap_ns,
        horizon_ns,
        late,
        strict,
        progress,
        **(read := _reading(srcs, mmap, start, end, filter)),
        size=size,
        # The group "all" is always there: by='all' adds no grouping.
        by=None if grouping in (None, "all") else grouping,
        max_groups=max_groups,
        fcs=fcs,
    )
    with _core.one_ctrl_c:
        _warn(_with_range_note(warns, out["accounting"], read["time_range"], (start, end)))
        df, dists = _burst_tables(
            np.asarray(out["group"], dtype=np.uint32),
            out["labels"],
            np.asarray(out["start_ns"], dtype=np.int64),
            np.asarray(out["end_ns"], dtype=np.int64),
            np.asarray(out["bytes"], dtype=np.uint64),
            np.asarray(out["packets"], dtype=np.uint64),
            qs,
            grouping is not None,
        )
        # The whole trace's bursts come first (group 0).
        whole = df.slice(0, int(np.count_nonzero(np.asarray(out["group"], dtype=np.uint32) == 0)))
        n = whole.height
        summary = typed_counts(
            pl.DataFrame(
                {
                    "gap_ns": [out["gap_threshold_ns"]],
                    "bursts": [n],
                    "packets": [int(whole["packets"].sum()) if n else 0],
                    "bytes": [int(whole["bytes"].sum()) if n else 0],
                }
            ).hstack(_summary(out["accounting"]).drop("packets"))
        )
        return Bursts(out["gap_threshold_ns"], df, dists, summary, grouping)


_with_common_doc(bursts)
