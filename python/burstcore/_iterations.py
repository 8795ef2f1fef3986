"""Training iterations found in the traffic alone: the period, the iterations, and why the period
may be wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._analysis import _DT, _reading, _summary, _with_common_doc
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import DEFAULT_HORIZON, _parse_order, check_fcs, check_size
from ._sources import normalize_each
from ._types import Duration, Filters, Instant, Source
from ._units import FramesEqual, format_duration, length_ns, parse_duration, plural


@dataclass(eq=False)
class Iterations(FramesEqual):
    """Training iterations found in the traffic alone.

    - ``period_ns``: the dominant iteration period: the mean spacing of the starts of the
      iterations marked ``in_period`` (the longest run of whole iterations each about one period
      after the previous), ``acf_period_ns`` when fewer than two are, None when no periodicity
      was found;
    - ``confidence`` in [0, 1]: how far the autocorrelation's best peak rises above its
      surroundings (near 1: a clean square wave) times the share of the bytes analysed that the
      iterations marked ``in_period`` carry, when they are three or more (else 0: two iterations
      are one spacing, which any two bursts show); below ~0.05 treat the period as a guess.
      Traffic with no period at all (Poisson arrivals) scores 0.04-0.14 too: ``period_doubts``,
      not the confidence, tells such a period apart. The period is that peak's fundamental: on
      strictly periodic traffic every multiple of the period is a peak, and the shortest lag
      dividing the best one that repeats nearly as well (4/5 of its depth), with a peak at least
      half as deep near each of its multiples in between, is taken. A period that few iterations
      follow, or whose iterations hold little of the traffic, scores near 0 however high its
      peak. Where the iterations one period apart hold under half the bytes (a ring edge's best
      peak is often a ring step: about 58 ms for 630), longer lags are tried, and the first whose
      iterations bear it out (three or more one period apart, two thirds of the whole ones,
      bytes within 12 %, half the traffic), whose period is within 15 % of its lag and which
      scores higher is taken, the period and the score then that lag's; not one twice to four
      times a lag tried before (a multiple of the period): where the lag tried bears it out but
      for one stall (its whole iterations in two runs one period apart, an iteration missing),
      that lag is taken, with a doubt. On the shared capture a every ring
      edge and rank so finds its iteration period (0.08-0.12);
    - ``iterations``: one row per iteration: iteration, start (start of the communication
      phase), comm_end (its end), end (start of the next segment), bytes and packets (everything
      from the iteration's segment boundary to ``end``, ACKs included: after an iteration kept
      just before it, that boundary is the previous one's ``end``; for the first iteration, and
      one after a segment dropped, it is not reported: the start of the bin where the
      segmentation placed it, at the quietest point of the smoothed rate 0.7-1.3
      ``acf_period_ns`` before the next boundary, or the first packet's bin for the trace's first
      segment, moved back over busy bins (5 % of its segment's busiest) that run on into it from
      a dropped segment.
      Traffic between that boundary and ``start`` counts in the iteration's bytes, traffic
      before it in none), peak_rate_bps (busiest
      bin of the phase), start_ns, comm_end_ns, end_ns (the same instants as int ns), and
      duration_ns (``end_ns − start_ns``: from the phase's start to the next segment's, the
      terminal table's "length"; iterations start a period apart, so this is shorter than the
      period by the quiet time before the next phase), ``whole`` (False: the phase may have
      been cut by an edge of the stretch analysed, so its start, end and bytes are those of a
      piece; see ``iterations``) and ``in_period`` (True for the iterations ``period_ns`` is the
      mean spacing over: compare it with a logged period over the same iterations);
    - ``acf_period_ns``: the autocorrelation's own estimate of the period, before the
      refinement on the phase starts (None when no periodicity was found); ``bin_ns``: the bin
      width of the rate analysed: ``bin``, or a multiple of it when the packets span more than
      65,536 bins of ``bin`` (a ``CaptureWarning`` then says so), to which the instants, the
      period and the peak rate are rounded;
    - ``summary``: the packet accounting, and ``beyond_bins``: packets counted but more than
      2^24 bins after the first (4.66 h at the default 1 ms bin), left out of the analysis (a
      ``CaptureWarning`` says so);
    - ``periods_seen``: the stretch analysed (``start`` to ``end``, else the first packet's bin to
      the last's) over ``period_ns`` (None without a period): how often the iteration can have
      repeated in it;
    - ``period_doubts``: why the period may be wrong, each reason also given as a
      ``CaptureWarning`` with what to do (empty when the iterations bear the period out): the
      autocorrelation's best lag set aside; fewer than three periods in the stretch and fewer
      than three whole iterations one period apart (``in_period``: the confidence is 0); a
      shorter lag dividing the period that repeats at least half as deep and at which the
      iterations would bear a period out too (the period may be a whole multiple of the
      iteration's: jitter smears each multiple's peak); whole iterations
      whose bytes differ by more than 12 % (coefficient of variation); fewer than two thirds of
      the whole iterations one period apart; iterations holding under half the bytes analysed;
      every whole iteration's phase holding a quiet run at least twice the median pause between
      them (the job's own pause, cut through: a lag of 1.7-1.8 periods on a stalled job).
      On stretches of a few periods the autocorrelation may take a burst inside a phase or a lag
      between two unequal spacings for the period, with nothing in ``confidence`` to tell
      (docs/limits.md, The period of training iterations, gives each doubt, what to do and the
      rates measured).
    """

    period_ns: int | None
    confidence: float
    iterations: pl.DataFrame
    acf_period_ns: int | None = None
    bin_ns: int = 1_000_000
    summary: pl.DataFrame = field(default_factory=pl.DataFrame)
    periods_seen: float | None = None
    period_doubts: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        p = "none" if self.period_ns is None else format_duration(self.period_ns)
        n = self.iterations.height
        unsure = ", unsure" if self.period_doubts else ""
        return f"Iterations(period {p}{unsure}, confidence {self.confidence:.3f}, {n} {plural(n, 'iteration')})"


def _lags_to_search(bin_ns: int, lo: int, hi: int) -> bool:
    """Whether bins of `bin_ns` leave a lag to search in [lo, hi], as the core counts them: from
    max(lo / bin, 2) to hi / bin bins (whole ones), with more than one between them."""
    return hi // bin_ns >= max(lo // bin_ns, 2) + 2


def _coarsest_bin(lo: int, hi: int) -> int | None:
    """The widest bin that leaves a lag to search in [lo, hi], or None if not even 1 ns does."""
    if not _lags_to_search(1, lo, hi):
        return None
    # Whole-bin counts fall as the bin widens, their difference nearly so: bisect, then make sure.
    ok, bad = 1, hi
    while bad - ok > 1:
        mid = (ok + bad) // 2
        ok, bad = (mid, bad) if _lags_to_search(mid, lo, hi) else (ok, mid)
    return ok


def _unsure_period(out: dict[str, Any]) -> list[str]:
    """A warning when the autocorrelation's best period was set aside: over a few periods it sees
    the iteration repeat once or twice and the bursts inside a phase (a ring's steps) dozens of
    times, and may take one of those. The period reported then rests on weaker evidence."""
    rejected, period = out["rejected_period_ns"], out["period_ns"]
    if rejected is None or period is None:
        return []
    return [
        f"the autocorrelation's best period ({format_duration(rejected)}) was shorter than quiet runs "
        f"of up to {format_duration(out['rejected_pause_ns'])} recurring inside its iterations, so it "
        f"was set aside for the best longer one that matches their spacing ({format_duration(period)}), "
        "on weaker evidence: check it on a longer stretch"
    ]


# A training iteration moves the same gradients every time: in the shared captures the whole
# iterations of a stretch differ by 1.3 % at most (coefficient of variation of their bytes, 193
# stretches of 1.5-5 periods); a second job carrying 30 % of the bytes at another period spreads
# them by 10-11 % (the synthetic two-job test). Bursts inside a phase taken for the period
# differ by 15-71 % in the shared captures (and by 6 % in three stretches of 1.5 periods, not
# told).
_UNEQUAL_ITERATIONS = 0.12
# Under this share of the bytes analysed in the iterations found, the period is a burst inside
# a phase: segments of other lengths were dropped as lighter or heavier than the median (capture
# d: 0.4-44 % where 8-23 ms was taken for about 50; 70 % at the least where right).
_LOW_COVERAGE = 0.5
# Whole iterations not in the longest run of them one period apart: where a third or more are
# not, the period is likely a burst inside a phase (the shared captures: 13 stretches of 1.5-3.5
# periods, all wrong; a whole capture leaves out at most a ring's first iteration, 1 of 8).
# Periods in the stretch under which a period that under `_BORNE_OUT` whole iterations one
# period apart bear out rests on the autocorrelation alone, which has seen the iteration repeat
# once or twice. On longer ones the iterations cut by its edges often leave under three whole
# ones where the period is right (12 of the 37 right stretches of 4 periods of the shared
# captures), and their confidence of 0 says enough.
_FEW_PERIODS = 3.0
# Iterations one period apart (`in_period`) from which they bear the period out; under it the
# confidence is 0 (rust/core/src/analysis/iterations.rs).
_BORNE_OUT = 3


def _pause_inside_phases(out: dict[str, Any], whole: np.ndarray, p: str) -> list[str]:
    """A doubt when every whole iteration's communication phase holds a quiet run at least twice
    the median pause between consecutive whole iterations: in a right segmentation the pause
    between iterations is the longest quiet of an iteration (a job's compute pause), so a longer
    one inside every phase is that pause, cut through. A lag of 1.7-1.8 periods does that on a
    stalled job (7 iterations, the 4th missing: 52 ms read as 90 ms, each iteration 1.5 of the
    job's, within 12 % of one another, sure), which every other mark lets through. Where the
    phases abut (no pause between iterations: a parameter server's pull running into the next
    push, capture b) nothing is said, nor where the phases' quiet is under twice the pause: a
    parameter server's pause between its push and pull halves is about as long as the one between
    iterations (a synthetic one, right at 114-117 ms: 3 ms inside, 1.5-2.5 ms between), nor where
    it is under an eighth of the period found (that one's 3 ms is 1/38): a compute pause is a
    sizeable part of an iteration. Wrong, 5 times the pause or more and 0.24 of the period or
    more (36 of 2,700 random jobs of the test's ranges, no right one)."""
    starts = np.asarray(out["start_ns"], dtype=np.int64)
    ends = np.asarray(out["comm_end_ns"], dtype=np.int64)
    inner = np.asarray(out["phase_quiet_ns"], dtype=np.int64)[whole]
    pairs = whole[:-1] & whole[1:]
    gaps = (starts[1:] - ends[:-1])[pairs]
    if inner.size < 2 or gaps.size == 0:
        return []
    # The median: a stall between two iterations is a far longer pause than the others.
    between = int(np.median(gaps))
    least = int(inner.min())
    if between <= 0 or least < 2 * between or 8 * least < int(out["period_ns"]):
        return []
    return [
        f"each of the {inner.size} whole iterations at the period found ({p}) holds inside its communication "
        f"phase a quiet run of {format_duration(least)} or more, over twice the pause between iterations "
        f"({format_duration(between)}, the median): that quiet is likely the job's own pause between "
        "iterations, and the period found a lag between one and two iterations (often where one is missing); "
        f"read a longer stretch, or give min_period= above {format_duration(least)} and max_period= below {p}"
    ]


def _period_doubts(out: dict[str, Any], min_period_ns: int) -> tuple[float | None, list[str]]:
    """How many periods the stretch analysed holds, and why the period may be wrong (empty
    when the iterations bear it out). On a stretch of a few periods the autocorrelation's best
    lag may be a burst inside a phase, half the period, or a lag between two irregular spacings,
    with nothing in its score to tell (docs/limits.md, The period of training iterations); what the
    iterations found at that lag look like does tell."""
    period, span = out["period_ns"], int(out["span_ns"])
    if period is None or period <= 0:
        return None, []
    seen = span / period
    whole = np.asarray(out["whole"], dtype=bool)
    nbytes = np.asarray(out["bytes"], dtype=np.float64)
    chained = int(np.count_nonzero(np.asarray(out["in_period"], dtype=bool)))
    p = format_duration(period)
    # The iterations found may lie closer together than the min_period searched (the lag it found
    # is at least that): then "above the period" is what was given already.
    above = (
        f"give min_period= above {p}"
        if period >= min_period_ns
        else f"give min_period=/max_period= around the period if you know it roughly (the iterations found lie "
        f"{p} apart, closer than the min_period given, {format_duration(min_period_ns)})"
    )
    doubts = []
    kept = nbytes[whole]
    # Under three iterations one period apart the confidence is 0: two are one spacing, which any
    # two bursts show (a job of 5 iterations 20 ms apart, the third missing, read as 60 ms on the
    # 2 iterations 60 ms apart in its 92 ms, was not doubted).
    alone = chained < _BORNE_OUT and seen < _FEW_PERIODS
    if alone:
        follow = (
            f"only {chained} whole iterations lie one period apart"
            if chained >= 2
            else "no two whole iterations lie one period apart"
        )
        doubts.append(
            f"the period ({p}) rests on the autocorrelation alone (confidence 0): the stretch analysed "
            f"({format_duration(span)}) holds {seen:.1f} periods of it, and {follow}, where it takes three to "
            "bear a period out; read a longer stretch (four periods or more), or give min_period=/max_period= "
            "around the period if you know it roughly"
        )
    if kept.size >= 2 and kept.mean() > 0:
        cv = float(kept.std() / kept.mean())
        if cv > _UNEQUAL_ITERATIONS:
            doubts.append(
                f"the {kept.size} whole iterations at the period found ({p}) differ in bytes by {cv:.0%} "
                "(coefficient of variation), where a training iteration moves the same gradients each time: "
                "the period is likely a burst inside a communication phase or a fraction of the iteration; "
                f"read a longer stretch, or {above}"
            )
    if not alone and kept.size >= 2 and 3 * chained < 2 * kept.size:
        doubts.append(
            f"only {chained} of the {kept.size} whole iterations at the period found ({p}) follow one another "
            "one period apart: the period is likely a burst inside a communication phase (or the job "
            "stalled); read a longer stretch, or give min_period= above the period if it is longer"
        )
    doubts += _pause_inside_phases(out, whole, p)
    shorter = out.get("shorter_period_ns")
    if shorter:
        k = round(period / shorter)
        doubts.append(
            f"the autocorrelation repeats at {format_duration(shorter)} too, about 1/{k} of the period found "
            f"({p}), nearly as strongly, and the iterations at it would follow one another as well: the period "
            f"may be {k} iterations, whose peaks jitter smeared; give max_period= between "
            f"{format_duration(shorter)} and {p} to see the iterations at the shorter one"
        )
    total = int(out["analysed_bytes"])
    share = float(nbytes.sum()) / total if total else 1.0
    if share < _LOW_COVERAGE:
        doubts.append(
            f"the iterations at the period found ({p}) hold only {share:.0%} of the bytes analysed: the "
            f"period is likely a burst inside a communication phase; read a longer stretch, or {above}"
        )
    return seen, doubts


def iterations(
    source: Source,
    *,
    bin: Duration = "1ms",
    min_period: Duration = "5ms",
    max_period: Duration = "2s",
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
) -> Iterations:
    """Estimate the iteration period from the traffic and segment the trace into iterations.

    Robust to start-up and idle tails (high-passed autocorrelation), ACK streams (pure ACKs are
    left out of the period search) and concurrent jobs (the dominant period wins; lighter
    segments are dropped, and so are bursts about one period from no other iteration, such as
    the parameter broadcast before training). The period searched lies in [min_period,
    max_period].

    Boundaries sit at the minima of the data rate smoothed over one typical compute pause (the
    longest quiet run of each period, byte-weighted median; the window fits inside the pause, so
    it is always shorter than the period), spaced 0.7-1.3 periods apart: the pause between
    iterations is longer than any gap between gradient buckets inside a phase, so those gaps are
    filled by the smoothing and never cut an iteration in two. A parameter server's push and pull
    halves are told apart by who sends (many hosts, then one): no boundary falls where the
    senders become fewer.

    ``bin`` (default 1 ms): the width of the bins the rate is analysed in (pooled to a multiple
    of it past 65,536 bins, with a ``CaptureWarning``); ``min_period`` and ``max_period``
    (default 5 ms and 2 s): the periods searched. A bin that leaves no lag between them to
    search raises ``ValueError``. Returns an ``Iterations``.

    An iteration cut by an edge of the stretch analysed is reported with ``whole`` False and
    left out of the period: the first (last) iteration when no pause is seen between ``start``
    and its communication phase (between the phase and ``end``), a pause being a quiet run
    longer than every gap inside the phases found or as long as the smoothing window; at the
    trace's own first or last packet (a capture may begin with a whole phase, or in the middle
    of one) only if it also carries under 9/10 of the median segment's bytes; at ``start``/``end``
    one that light is cut even after a pause (the one between a push and its pull). A piece under half
    the median is dropped, as any light segment is. In traffic that never falls quiet (a
    parameter server) the first and last iteration of a stretch are thus always flagged.
    ``period_ns`` is the mean spacing of the phase starts over the longest run of whole
    iterations about one period apart, marked ``in_period``.

    On a stretch of two or three periods the period may be another lag (bursts inside a phase, or
    half the period: docs/limits.md, The period of training iterations, has the rates measured on
    real captures); read four periods or more to be sure. When quiet runs as long as the
    autocorrelation's best period recur inside its iterations, that period cannot be right, and the
    best longer one matching their spacing is taken, with a ``CaptureWarning`` saying so. When the
    iterations one period apart hold under half the bytes (a ring edge's best peak is often a ring
    step), a longer lag whose iterations bear it out is taken (``Iterations.confidence`` says how).
    Where the iterations found do not bear the period out (``Iterations.period_doubts``: too few
    periods and fewer than three whole iterations one period apart, a shorter lag repeating nearly
    as well, unequal iterations, few of them one period apart, a quiet run inside every phase over
    twice the pause between iterations, or little of the traffic in them), a ``CaptureWarning``
    says why and what to do: a longer stretch, or ``min_period``/``max_period`` around the period.

    ``size``: what each packet's bytes count in the rate and in ``bytes``, as in ``scan``:
    'wire' (default), 'captured', 'ip', 'payload' or 'l1' (docs/metrics.md); a packet without
    the header it reads is left out and counted in ``summary.skipped_no_size``; ``fcs`` (whether
    frames end with their FCS, for 'l1') as in ``scan``.
    """
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    bin_ns = parse_duration(bin, name="bin", scale=True)
    lo = parse_duration(min_period, name="min_period", allow_zero=True, scale=True)
    hi = parse_duration(max_period, name="max_period", scale=True)
    if hi <= lo:
        raise ValueError(f"max_period ({format_duration(hi)}) must exceed min_period ({format_duration(lo)})")
    if not _lags_to_search(bin_ns, lo, hi):
        # Else nothing is searched and "no period found" is all the caller would learn.
        finer = _coarsest_bin(lo, hi)
        raise ValueError(
            f"bin {format_duration(bin_ns)} leaves no period to search between min_period "
            f"({format_duration(lo)}) and max_period ({format_duration(hi)}): periods are searched in whole "
            "bins, from min_period (and 2 bins at least) to max_period, with 2 bins or more between them; "
            + (f"give a bin of {format_duration(finer)} or less, or a wider range" if finer else "give a wider range")
        )
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    srcs = normalize_each(source)
    out, warns = _core.iterations(
        srcs,
        bin_ns,
        lo,
        hi,
        horizon_ns,
        late,
        strict,
        progress,
        **(read := _reading(srcs, mmap, start, end, filter)),
        size=size,
        fcs=fcs,
    )
    with _core.one_ctrl_c:
        _warn(_with_range_note(warns, out["accounting"], read["time_range"], (start, end)))
        beyond = int(out["beyond_bins"])
        if beyond:
            # Counted (the summary's packets), yet in no bin: say so rather than leave them out quietly.
            _warn(
                [
                    f"{beyond:,} {plural(beyond, 'packet comes', 'packets come')} more than "
                    f"{format_duration(out['max_bins'] * bin_ns)} "
                    f"({out['max_bins']:,} bins of {format_duration(bin_ns)}) "
                    f"after the first and {plural(beyond, 'is', 'are')} left out of "
                    "the period and the iterations: give a coarser bin= or a stretch with start=/end="
                ]
            )
        if out["bin_ns"] > bin_ns:
            # Pooled so that the autocorrelation stays fast: every instant, the period and the peak
            # rate are then at the coarser width. One stray packet an hour from the job does it (a
            # 45 ms period was then not found at all), so say so and how to avoid it.
            _warn(
                [
                    f"the packets span more than {out['acf_bins']:,} bins of {format_duration(bin_ns)} from the "
                    f"first to the last, so they were analysed in bins of {format_duration(out['bin_ns'])} "
                    "(bin_ns): periods of only a few of those are not told apart, and the instants are "
                    "to that width; give the training's stretch with start=/end= (or a filter=) to analyse "
                    f"it at {format_duration(bin_ns)}"
                ]
            )
        seen, doubts = _period_doubts(out, lo)
        doubts = _unsure_period(out) + doubts
        _warn(doubts)
        n = len(out["start_ns"])
        df = pl.DataFrame(
            {
                "iteration": np.arange(n, dtype=np.uint64),
                "start_ns": out["start_ns"],
                "comm_end_ns": out["comm_end_ns"],
                "end_ns": out["end_ns"],
                "bytes": out["bytes"],
                "packets": out["packets"],
                "peak_rate_bps": out["peak_rate_bps"],
                "whole": out["whole"],
                "in_period": out["in_period"],
            }
        ).with_columns(
            start=pl.col("start_ns").cast(_DT),
            comm_end=pl.col("comm_end_ns").cast(_DT),
            end=pl.col("end_ns").cast(_DT),
            duration_ns=length_ns(out["start_ns"], out["end_ns"], "duration_ns"),
        )
        df = df.select(
            "iteration",
            "start",
            "comm_end",
            "end",
            "bytes",
            "packets",
            "peak_rate_bps",
            "whole",
            "in_period",
            "start_ns",
            "comm_end_ns",
            "end_ns",
            "duration_ns",
        )
        summary = _summary(out["accounting"]).with_columns(beyond_bins=pl.lit(beyond, dtype=pl.UInt64))
        return Iterations(
            out["period_ns"],
            float(out["confidence"]),
            df,
            out["acf_period_ns"],
            out["bin_ns"],
            summary,
            periods_seen=seen,
            period_doubts=doubts,
        )


_with_common_doc(iterations)
