"""Packet sizes and inter-arrival gaps: histograms with exact quantiles, overall and per group."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import polars as pl

from . import _burstcore as _core
from ._analysis import _first, _one_grouping, _quantiles, _reading, _summary, _with_common_doc
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import DEFAULT_HORIZON, Grouping, _parse_order, check_fcs, check_size
from ._sources import normalize_each
from ._types import Count, Duration, Filters, Instant, Quantiles, Source
from ._units import FramesEqual, parse_count, plural

# Groups of sizes and gaps before a LimitExceededError: a hundred times fewer than scan's
# DEFAULT_MAX_GROUPS, as a group's histogram can cost 512 KiB (one counter per size once it has
# seen 32,768 of them) where a scan's group costs 1-1.8 kB: 10,000 of the worst hold 5 GB.
DEFAULT_MAX_DISTRIBUTION_GROUPS = 10_000


@dataclass(eq=False)
class Distribution(FramesEqual):
    """A histogram with its quantiles, for the whole trace (group 'all') and per group.

    - ``histogram``: sizes: (group, size, packets), exact, one row per size seen (above 65,535 B
      too); gaps: (group, lo_ns, hi_ns, gaps), one
      row per non-empty log2 bucket, both bounds inclusive: [2^(k-1), 2^k − 1] ns (gap 0 alone
      in its bucket). ``lo_ns``/``hi_ns`` name a gap's bounds here and in the quantiles of
      ``gaps`` (its ``groups`` give the exact ``min_ns`` and ``max_ns``).
    - ``quantiles``: (group, q, value) for sizes (exact: the smallest size with at least
      ceil(q·n) packets ≤ it, q as written: 0.07 of 100 is the 7th); for gaps (group, q,
      lo_ns, hi_ns): the bucket holding the quantile (bounds inclusive), narrowed by the exact
      min and max.
    - ``groups``: for sizes (group, packets, bytes, over_65535: the packets above 65,535 B,
      TSO/GRO and BIG TCP super-frames); for
      gaps (group, packets, gaps, min_ns, max_ns: the number of gaps and the exact min and max).
    - ``summary``: one row, the packet accounting (``packets_read``, ``packets``, the
      ``skipped_*`` columns, ``reordered``, ``max_lateness_ns``); ``by``: the grouping, or None.
    Gaps within a group are between consecutive packets of that group. A gap past int64 (more
    than 292 years, which only damaged timestamps give) is counted, exact, in the bucket
    [2^63, 2^64 − 1]; as every ``*_ns``, its bounds, and a min, max or quantile bound past
    int64, are null.
    """

    histogram: pl.DataFrame
    quantiles: pl.DataFrame
    groups: pl.DataFrame
    by: str | None = None
    summary: pl.DataFrame = field(default_factory=pl.DataFrame)

    def __repr__(self) -> str:
        # One line: the dataclass's own repr printed every table (thousands of characters).
        what = "gaps" if "lo_ns" in self.histogram.columns else "sizes"
        packets = _first(self.summary, "packets")
        return (
            f"Distribution({what}" + (f" by {self.by}" if self.by else "") + f", {self.groups.height} "
            f"{plural(self.groups.height, 'group')}, {self.histogram.height} histogram rows, "
            f"{self.quantiles.height} quantile rows" + ("" if packets is None else f", {packets} packets") + ")"
        )


def _core_quantiles(qs: list[Fraction]) -> list[tuple[float, int, int]]:
    """The q's for the Rust histograms: the float their column shows and the ratio their ranks
    read, which Rust takes up to a denominator of 2^126 (a Decimal of 38 digits passes it)."""
    out = []
    for q in qs:
        r = q if q.denominator <= 1 << 126 else _same_ranks(q)
        out.append((float(q), r.numerator, r.denominator))
    return out


def _same_ranks(q: Fraction) -> Fraction:
    """A fraction with a denominator of at most 2^65 whose ranks ⌈r·n⌉ are q's for every n of a
    uint64. q's neighbours a/b < q < c/d among the fractions of denominators up to N = 2^64 - 1
    (the two bounds Fraction.limit_denominator picks between) have no k/n with n ≤ N between
    them, so every r strictly between them, like their mediant (a + c)/(b + d), gives the same
    ⌈r·n⌉ for every n ≤ N. For q's of denominator past N only."""
    limit = (1 << 64) - 1
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = q.numerator, q.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > limit:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (limit - q0) // q1
    return Fraction(p0 + (k + 1) * p1, q0 + (k + 1) * q1)


def _hist_table(table: dict[str, Any], labels: pl.Series) -> pl.DataFrame:
    """One of the histograms' tables: its group column from indices into ``labels`` (one string
    per group, not per row), and each optional column nulled where its ``_valid`` mask is off."""
    df = pl.DataFrame({k: v for k, v in table.items() if not k.endswith("_valid")})
    df = df.with_columns(group=labels.gather(df["group"]))
    masks = {k.removesuffix("_valid"): v for k, v in table.items() if k.endswith("_valid")}
    return df.with_columns(
        pl.when(pl.Series(mask)).then(pl.col(name)).otherwise(None).alias(name) for name, mask in masks.items()
    )


def _distribution(
    what: Literal["sizes", "gaps"],
    source: Source,
    by: Any,
    quantiles: Any,
    max_groups: Any,
    reorder_horizon: Duration,
    on_late: str,
    strict: bool,
    progress: Any,
    mmap: bool | None,
    start: Instant | None,
    end: Instant | None,
    filter: Filters | None,
    size: Any = "wire",
    fcs: Any = "declared",
) -> Distribution:
    """``sizes`` or ``gaps``: one pass of the histograms, and the frames of the kind asked for."""
    by = _one_grouping(by, "sizes and gaps")
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    max_groups = parse_count(max_groups, name="max_groups")
    qs = _quantiles(quantiles)
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    # The group "all" is always there: by='all' adds no grouping (it repeated every row).
    core_by = None if by == "all" else by
    srcs = normalize_each(source)
    out, warns = _core.histograms(
        srcs,
        what,
        core_by,
        _core_quantiles(qs),
        max_groups,
        horizon_ns,
        late,
        strict,
        progress,
        **(read := _reading(srcs, mmap, start, end, filter, depth=1)),
        size=size,
        fcs=fcs,
    )
    with _core.one_ctrl_c:
        _warn(_with_range_note(warns, out["accounting"], read["time_range"], (start, end)), stacklevel=4)
        labels = pl.Series(out["labels"], dtype=pl.String)
        hist = _hist_table(out[what], labels)
        q = _hist_table(out["quantiles"], labels)
        groups = _hist_table(out["groups"], labels)
        if what == "sizes":
            q = q.select("group", "q", pl.col("size").cast(pl.UInt64).alias("value"))
            groups = groups.select("group", "packets", "bytes", "over_65535")
        else:
            q = q.select(
                "group",
                "q",
                pl.col("lo_ns").cast(pl.Int64),
                pl.col("hi_ns").cast(pl.Int64),
            )
            groups = groups.select(
                "group",
                "packets",
                "gaps",
                pl.col("min_ns").cast(pl.Int64),
                pl.col("max_ns").cast(pl.Int64),
            )
        return Distribution(hist, q, groups, by, _summary(out["accounting"]))


def sizes(
    source: Source,
    by: Grouping | Sequence[Grouping] | None = None,
    *,
    quantiles: Quantiles | None = None,
    max_groups: Count = DEFAULT_MAX_DISTRIBUTION_GROUPS,
    reorder_horizon: Duration = DEFAULT_HORIZON,
    on_late: Literal["error", "drop"] = "error",
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: Filters | None = None,
    size: Literal["wire", "captured", "ip", "payload", "l1"] = "wire",
    fcs: Literal["declared", "present", "absent"] = "declared",
) -> Distribution:
    """Packet sizes (wire bytes, or as ``size`` counts them): exact histogram and quantiles, overall
    and per group of ``by``
    (one of scan's groupings: 'src', 'dst', 'pair', 'flow', ...). Sizes above 65,535 bytes
    (TSO/GRO and BIG TCP super-frames, counted in ``groups.over_65535``) are exact too, a row
    each; their distinct sizes count against ``max_groups``: every 16,384 of them, over the
    whole trace and the groups, past the first 16,384, count as one group (docs/limits.md).

    ``quantiles``: the q's asked for (default 0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1),
    each once (a q given twice is a ``ValueError``): a float as the decimal it is written as, a
    ``Fraction`` or ``Decimal`` exactly (docs/metrics.md); the column ``q`` shows each as a float.
    ``max_groups``: most groups of ``by`` (default 10,000; a few hundred bytes each, more for
    groups of many sizes, docs/limits.md); one more is a ``LimitExceededError``
    (``limit == "result"``) at once. The default is a hundred times below ``scan``'s 1,000,000
    on purpose: a group's histogram can grow to 512 KiB (one counter per size, once it has seen
    32,768 distinct sizes) where a scan's group costs 1-1.8 kB, so 10,000 such groups already
    hold 5 GB; raise it for many light groups (1,000,000 flows of 2 packets hold 584 MB).

    ``size``: what a packet's size is, as in ``scan``: 'wire' (default), 'captured', 'ip',
    'payload' or 'l1' (docs/metrics.md); a packet without the header it reads is left out and
    counted in ``summary.skipped_no_size``; ``fcs`` (whether frames end with their FCS, for 'l1') as in ``scan``."""
    return _distribution(
        "sizes",
        source,
        by,
        quantiles,
        max_groups,
        reorder_horizon,
        on_late,
        strict,
        progress,
        mmap,
        start,
        end,
        filter,
        size,
        fcs,
    )


def gaps(
    source: Source,
    by: Grouping | Sequence[Grouping] | None = None,
    *,
    quantiles: Quantiles | None = None,
    max_groups: Count = DEFAULT_MAX_DISTRIBUTION_GROUPS,
    reorder_horizon: Duration = DEFAULT_HORIZON,
    on_late: Literal["error", "drop"] = "error",
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: Filters | None = None,
) -> Distribution:
    """Inter-arrival gaps (ns, in timestamp order): log2 histogram and quantile bounds, overall
    and per group of ``by``. ``quantiles`` and ``max_groups`` as for ``sizes``. Every packet
    read counts, with no ``size``: a gap has no bytes (``filter="ip"`` keeps the IP packets alone)."""
    return _distribution(
        "gaps", source, by, quantiles, max_groups, reorder_horizon, on_late, strict, progress, mmap, start, end, filter
    )


_with_common_doc(sizes, gaps)
