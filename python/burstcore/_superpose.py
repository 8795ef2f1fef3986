"""Captures laid over one another at offsets: the merge measured as ``scan`` does, and the
multiplexing gain."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._analysis import _DUR, _reading, _with_common_doc
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import (
    DEFAULT_HORIZON,
    DEFAULT_MAX_GROUPS,
    Grouping,
    ScanResult,
    _as_list,
    _build_result,
    _each,
    _parse_by,
    _parse_order,
    check_closed,
    check_fcs,
    check_size,
)
from ._shared import renamed_source
from ._sources import normalize, refuse_a_stream_twice
from ._types import Count, Duration, Durations, Filters, Instant, Rates, Source
from ._units import (
    LINK_SPEED_GRID_BPS,
    default_windows_ns,
    format_duration,
    parse_bin_origin,
    parse_count,
    parse_duration,
    parse_rate,
    plural,
    said,
)


@dataclass(eq=False)
class SuperposeResult(ScanResult):
    """``scan``'s result for the exact merge, plus:

    - ``multiplexing_gain``: per window τ: ``sum_single_bytes`` = Σ_k E_k(τ) of each capture alone,
      ``merged_bytes`` = E(τ) of the merge, ``gain`` = their ratio, the exact quotient rounded
      once, also past 2^53 bytes (1: the bursts of the jobs coincide in the worst window; k:
      fully interleaved). E_k does not depend on the offsets
      (unless ``start``/``end`` cut into a capture: the range applies to the shifted times).
    - ``singles``: each capture's own aggregate E(τ) (capture, window_ns, bytes, max_packets);
      ``capture`` is the capture's position in the list given, from 0, as in ``interfaces``
      (where ``source`` is its path). A capture that gives the merge no packet (empty, every
      packet filtered out or outside ``start``/``end``) has no E(τ) and so no rows here (not
      rows of 0 bytes), adds nothing to ``sum_single_bytes``, and is named in a warning; when
      no capture gives one, ``singles`` and ``multiplexing_gain`` have no rows and nothing is
      warned (the merge's own tables are those of an empty capture);
    - ``offsets_ns``: the offset added to each capture's timestamps;
    - ``interfaces``: which capture each interface group of the merge (``by="interface"``) is
      of, as ``ScanResult.interfaces`` (the same file given twice has two captures, each with
      its own groups).

    Its warnings number the captures from 1 (capture 1 is the first given), as every message
    of burstcore does ("input 2 of 3"); the frames' columns give positions from 0, as Python's.
    """

    multiplexing_gain: pl.DataFrame = field(default_factory=pl.DataFrame)
    singles: pl.DataFrame = field(default_factory=pl.DataFrame)
    offsets_ns: list[int] = field(default_factory=list)

    # Written out: @dataclass gives a subclass a repr of its own (every table, every option)
    # unless the class defines one, whatever the base class has.
    def __repr__(self) -> str:
        shown = ", ".join(_signed_duration(o) for o in self.offsets_ns[:3])
        more = f", … ({len(self.offsets_ns)} in all)" if len(self.offsets_ns) > 3 else ""
        return (
            f"SuperposeResult({len(self.offsets_ns)} {plural(len(self.offsets_ns), 'capture')} "
            f"at offsets {shown}{more}; {self._repr_body()}, {self.multiplexing_gain.height} multiplexing_gain rows)"
        )


def _ratio(num: int | None, den: int | None) -> float | None:
    """num / den rounded once to a float (Python's int / int; dividing the two as float64 rounds
    each first past 2^53); null if either is, and a zero den gives what a float division gives
    (inf, or NaN for 0 / 0)."""
    if num is None or den is None:
        return None
    if den == 0:
        return float("nan") if num == 0 else float("inf")
    return num / den


def _signed_duration(ns: int) -> str:
    return "-" + format_duration(-ns) if ns < 0 else format_duration(ns)


def _offsets(
    offsets: Iterable[Duration] | Literal["random"] | None, n: int, seed: Count, max_offset: Duration
) -> list[int]:
    if isinstance(offsets, str):
        if offsets != "random":
            raise ValueError(f"offsets={said(offsets)}: give a list of durations (one per capture) or 'random'")
        hi = parse_duration(max_offset, name="max_offset", allow_zero=True, scale=True)
        rng = np.random.Generator(np.random.PCG64(seed))
        # The first capture stays put: only relative phases matter.
        return [0] + [int(x) for x in rng.integers(0, hi, size=n - 1, endpoint=True)]
    vals = [0] * n if offsets is None else _as_list(offsets)
    if len(vals) != n:
        raise ValueError(
            f"{len(vals)} {plural(len(vals), 'offset')} for {n} {plural(n, 'capture')}: give one offset per capture"
        )
    return [parse_duration(v, name="offset", allow_zero=True, signed=True) for v in vals]


def _apart(spans: list[tuple[int, int] | None]) -> str | None:
    """A warning when a capture, after its offset, overlaps no other in time: the merge then
    plays the captures one after the other, and its multiplexing gain says nothing about jobs
    sharing a link (captures recorded at different times need offsets that align them)."""
    live = [(k, s) for k, s in enumerate(spans) if s is not None]
    if len(live) < 2:
        return None
    lonely = [(k, s) for k, s in live if not any(j != k and s[0] <= t[1] and t[0] <= s[1] for j, t in live)]
    if not lonely:
        return None
    k0, s0 = live[0]
    k, s = next(((k, s) for k, s in lonely if k != k0), live[1])
    d = s[0] - s0[0]
    # Numbered from 1, as every message numbers the captures ("input 2 of 3", shared_packets').
    return (
        f"{len(lonely)} of the {len(live)} captures {plural(len(lonely), 'overlaps', 'overlap')} no other in time "
        "after their offsets "
        f"(capture {k + 1} starts {format_duration(abs(d))} {'after' if d > 0 else 'before'} capture {k0 + 1}): "
        "the merge plays them one after the other, so its multiplexing gain says nothing about "
        f"sharing a link. Align them with offsets: adding '{'-' if d > 0 else ''}{format_duration(abs(d))}' "
        f"to capture {k + 1}'s offset starts it with capture {k0 + 1}"
    )


def _absent(spans: list[tuple[int, int] | None], acc: dict[str, Any]) -> str | None:
    """A warning when a capture gives the merge no packet at all (its gain then compares fewer
    captures than were given), saying why where the count tells: its offset moved its packets
    outside 1677-09-21 to 2262-04-11, what int64 ns hold."""
    missing = [k + 1 for k, s in enumerate(spans) if s is None]  # from 1, as in `_apart`
    if not missing or len(missing) == len(spans):
        return None
    shifted = int(acc.get("skipped_timestamp_out_of_range", 0))
    why = (
        f"; {shifted:,} {plural(shifted, 'packet was', 'packets were')} left out because "
        f"{plural(shifted, 'its', 'their')} time plus {plural(shifted, 'its', 'their')} capture's offset falls "
        "outside 1677-09-21 to 2262-04-11 (int64 ns): give smaller offsets"
        if shifted
        else " (empty, or every packet filtered out or outside start/end)"
    )
    return f"capture{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} gave the merge no packet{why}"


def superpose(
    source: Source | None = None,
    windows: Durations | None = None,
    rates: Rates | None = None,
    bins: Durations | None = None,
    by: Grouping | Sequence[Grouping] | None = None,
    *,
    offsets: Iterable[Duration] | Literal["random"] | None = None,
    seed: Count = 0,
    closed: Literal["left", "both"] = "left",
    size: Literal["wire", "captured", "ip", "payload", "l1"] = "wire",
    max_offset: Duration = "1s",
    reorder_horizon: Duration = DEFAULT_HORIZON,
    on_late: Literal["error", "drop"] = "error",
    max_groups: Count = DEFAULT_MAX_GROUPS,
    fill_empty_bins: bool = True,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    mmap: bool | None = None,
    start: Instant | None = None,
    end: Instant | None = None,
    filter: Filters | None = None,
    sources: Source | None = None,
    bin_origin: Instant | Literal["epoch", "start"] = "epoch",
    fcs: Literal["declared", "present", "absent"] = "declared",
) -> SuperposeResult:
    """Merge several captures (or copies of one) exactly in timestamp order, capture k shifted by
    ``offsets[k]``, and measure the merge as ``scan`` does, to extrapolate to jobs sharing a link.

    ``offsets``: one duration per capture (may be negative: "-3ms" or -0.003), None for all 0,
    or "random": capture 0 stays put and the others are shifted uniformly in [0, ``max_offset``]
    (default 1 s; pass one iteration period for random phases; as a window, a plain number of 1000
    or more is refused as most likely nanoseconds), drawn from numpy's PCG64 seeded
    with ``seed``, so a seed gives the same offsets everywhere. Offsets shift the captures'
    own timestamps: captures recorded at different times need offsets that bring them together,
    and a capture that overlaps no other after its offset gets a ``CaptureWarning`` naming the
    offset that would align it; so does a capture that gives the merge no packet (e.g. an
    offset moving its times past the year 2262). ``start``/``end`` and ``filter`` apply to every
    capture, ``start``/``end`` to the shifted times.

    ``source``: the captures, as ``scan`` takes several (paths, bytes, file objects; a path
    may repeat, a file object may not: it reads once). ``sources``: its old name, deprecated
    (a ``DeprecationWarning``). The arguments after ``source`` that ``scan`` also takes stand
    where ``scan`` has them (``windows``, ``rates``, ``bins``, ``by``); ``offsets``, ``seed`` and
    ``closed`` are keywords (``offsets`` and ``seed`` stood second and third before).

    ``windows``, ``rates``, ``bins``, ``bin_origin``, ``by``, ``closed``, ``size``,
    ``max_groups``, ``fill_empty_bins``: as in ``scan`` (``bin_origin="start"`` is the merge's
    first packet, after the offsets) (rates default to the link-speed grid 100 Mbit/s …
    400 Gbit/s, so one pass suffices). ``size`` counts each packet's bytes in the merge and in
    each capture's own envelope (``singles``, the multiplexing gain) alike: 'wire' (default),
    'captured', 'ip', 'payload' or 'l1'; a packet without the header it reads is left out and
    counted in ``summary.skipped_no_size``, as by ``scan``; ``fcs`` (whether frames end with their
    FCS, for 'l1') as in ``scan``. Returns a ``SuperposeResult``.
    """
    source = renamed_source(source, sources, "superpose")
    if isinstance(windows, str) and windows == "random":
        # superpose(captures, "random") gave the offsets before they became a keyword.
        raise ValueError("windows='random': offsets are a keyword now, superpose(captures, offsets='random')")
    if not isinstance(fill_empty_bins, (bool, np.bool_)):
        raise TypeError(f"fill_empty_bins={said(fill_empty_bins)}: give True (default) or False")
    raw = list(source) if isinstance(source, (list, tuple)) else [source]
    if not raw:
        raise ValueError("no capture given: pass a list of paths (a path may repeat), bytes or file objects")
    objs = [id(s) for s in raw if not isinstance(s, (str, bytes, bytearray)) and hasattr(s, "read")]
    if len(objs) != len(set(objs)):
        raise ValueError("the same file object appears twice: a stream reads once; pass its path or its bytes instead")
    refuse_a_stream_twice(raw)
    srcs = [normalize(s, listed=isinstance(source, (list, tuple))) for s in raw]
    seed = parse_count(seed, name="seed", minimum=0)
    max_groups = parse_count(max_groups, name="max_groups")
    offs = _offsets(offsets, len(srcs), seed, max_offset)
    windows_ns = (
        _each(windows, lambda w: parse_duration(w, name="window", scale=True), "window")
        if windows is not None
        else default_windows_ns()
    )
    if rates is not None:
        rates_bps = _each(rates, lambda r: parse_rate(r, name="rate"), "rate")
    else:
        rates_bps = list(LINK_SPEED_GRID_BPS)
    bins_ns = _each(bins, lambda b: parse_duration(b, name="bin", scale=True), "bin")
    by_names = _parse_by(by)
    closed = check_closed(closed)
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    # The multiplexing gain compares the merge's aggregate with each capture's: scanned whatever
    # `by` says, and its rows left out again if `by` did not ask for them.
    scanned = by_names if "all" in by_names else [*by_names, "all"]
    # Superposed captures are laid over one another on purpose, not merged as one traffic.
    read = _reading(srcs, mmap, start, end, filter, merged=False)
    origin_ns = parse_bin_origin(bin_origin, None if read["time_range"] is None else read["time_range"][0])
    out, warns = _core.superpose(
        srcs,
        offs,
        windows_ns,
        closed,
        rates_bps,
        bins_ns,
        scanned,
        horizon_ns,
        late,
        max_groups,
        strict,
        progress,
        **read,
        size=size,
        bin_origin_ns=origin_ns,
        fcs=fcs,
    )
    with _core.one_ctrl_c:
        texts = _warn(_with_range_note(warns, out["scan"]["accounting"], read["time_range"], (start, end)))
        for told in (_apart(out["spans"]), _absent(out["spans"], out["scan"]["accounting"])):
            if told:
                texts = [*texts, told]
                _warn([told])
        cfg = {
            "windows_ns": windows_ns,
            "rates_bps": rates_bps,
            "rates": "given" if rates is not None else "link-speed grid",
            "bins_ns": bins_ns,
            "by": by_names,
            "size": size,
            "fcs": fcs,
            "closed": closed,
            "reorder_horizon_ns": horizon_ns,
            "on_late": late,
            "strict": strict,
            "offsets_ns": offs,
            "max_groups": max_groups,
            "start_ns": None if (tr := read["time_range"]) is None else tr[0],
            "end_ns": None if tr is None else tr[1],
            "filter": read["filter"],
            "bin_origin_ns": origin_ns,
        }
        base = _build_result(out["scan"], texts, cfg, bool(fill_empty_bins))
        # "capture" as ScanResult.interfaces names a capture's position ("source" is its path there).
        singles = pl.DataFrame(out["singles"]).rename({"source": "capture"})
        merged = base.envelope.filter(pl.col("by") == "all").select("window_ns", pl.col("bytes").alias("merged_bytes"))
        if scanned is not by_names:
            asked = pl.col("by") != "all"
            base.envelope, base.backlog, base.groups = (
                f.filter(asked) for f in (base.envelope, base.backlog, base.groups)
            )
            if "by" in base.series.columns:
                base.series = base.series.filter(asked)
        gain = (
            singles.group_by("window_ns")
            .agg(sum_single_bytes=pl.col("bytes").sum().cast(pl.UInt64), sources=pl.len())
            .join(merged, on="window_ns", how="full", coalesce=True)
            .with_columns(window=pl.col("window_ns").cast(_DUR))
            .sort("window_ns")
        )
        gain = gain.with_columns(
            gain=pl.Series(
                "gain",
                [_ratio(s, m) for s, m in zip(gain["sum_single_bytes"], gain["merged_bytes"], strict=True)],
                dtype=pl.Float64,
            )
        ).select("window", "window_ns", "sum_single_bytes", "merged_bytes", "gain")
        return SuperposeResult(
            base.envelope,
            base.backlog,
            base.series,
            base.groups,
            base.summary,
            base.warnings,
            base.config,
            base.interfaces,
            multiplexing_gain=gain,
            singles=singles,
            offsets_ns=offs,
        )


_with_common_doc(superpose)
