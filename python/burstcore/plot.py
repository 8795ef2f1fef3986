"""Figures of a scan: E(τ) and PtM(τ) on log-log axes, B_max(r), and the binned throughput with
training iterations marked. Several results can be overlaid for comparison.

Figures are built on matplotlib's Agg canvas directly (not pyplot), so nothing ever opens a
window or touches the user's pyplot state; ``fig.savefig`` writes PNG, SVG or PDF.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from ._interruptible import interruptible
from ._units import format_duration, said

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ._iterations import Iterations
    from ._scan import ScanResult

PANELS = ("envelope", "ptm", "backlog", "series")
# Aim for a readable throughput plot: the finest bin width giving at most this many bins.
MAX_BINS_SHOWN = 2000
LINESTYLES = ("-", "--", ":", "-.")

LABELS = {
    "envelope": ("window τ (s)", "E(τ), most bytes in any window (bytes)"),
    "ptm": ("window τ (s)", "PtM(τ) = E(τ) / (ρ·τ) (ratio)"),
    "backlog": ("server rate r (bit/s)", "B_max(r), largest backlog (bytes)"),
    "series": ("time since first packet (s)", "throughput (bit/s)"),
}
TITLES = {
    "envelope": "Empirical envelope E(τ)",
    "ptm": "Peak-to-mean ratio PtM(τ)",
    "backlog": "Backlog at a constant-rate server B_max(r)",
    "series": "Binned throughput",
}


def require_matplotlib() -> None:
    """Raise ImportError naming what to install when matplotlib is missing: the command line
    asks before its scan, so a missing extra is told at once rather than after minutes of reading."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(
            "figures need matplotlib, which is not installed: pip install 'burstcore[plot]' (or matplotlib)",
            name="matplotlib",
        )


def _new_figure(n_panels: int, size: tuple[float, float] | None) -> Figure:
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 1 if n_panels == 1 else 2
    rows = (n_panels + cols - 1) // cols
    fig = Figure(figsize=size or (6.4 * cols, 4.2 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def top_groups(result: ScanResult, by: str, max_groups: int) -> list[str]:
    """The groups of grouping ``by`` with the most bytes, largest first."""
    g = result.groups.filter(pl.col("by") == by).sort(["bytes", "group"], descending=[True, False])
    return g["group"].head(max_groups).to_list()


def choose_bin(series: pl.DataFrame) -> int | None:
    """The finest bin width whose series has at most MAX_BINS_SHOWN bins per group (else the widest)."""
    if series.height == 0:
        return None
    counts = (
        series.with_columns(bin_ns=pl.col("bin").dt.total_nanoseconds())
        .group_by("bin_ns", "by", "group")
        .len()
        .group_by("bin_ns")
        .agg(pl.col("len").max())
        .sort("bin_ns")
    )
    for width, n in counts.iter_rows():
        if n <= MAX_BINS_SHOWN:
            return int(width)
    return int(counts["bin_ns"][-1])


def _literal(text: str) -> str:
    """`text` drawn as written: matplotlib reads a pair of '$' as mathematics, and its text layout
    raised TypeError on a byte that is no UTF-8 (a lone surrogate, as Python keeps such a byte of
    a file name or an argument), drawn as U+FFFD instead."""
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        # A surrogate that stands for no byte: half of a pair, as json.loads('"\\ud83d"') gives.
        text = re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text.replace("$", r"\$")


def _line_label(file_label: str, by: str, group: str, n_results: int) -> str:
    if n_results == 1:
        return group if by != "all" else "all traffic"
    return file_label if by == "all" else f"{file_label}: {group}"


def _origin_ns(result: ScanResult) -> int | None:
    first = result.summary["first"][0]
    if first is None:
        return None
    return int(result.summary.select(pl.col("first").dt.epoch("ns")).item())


def _no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4", wrap=True)


@interruptible
def plot_results(
    results: Sequence[tuple[str, ScanResult]],
    *,
    iterations: Sequence[Iterations | pl.DataFrame | None] | None = None,
    by: str | None = None,
    max_groups: int = 8,
    panels: Sequence[str] = PANELS,
    bin: Any = None,
    title: str | None = None,
    size: tuple[float, float] | None = None,
) -> Figure:
    """One figure overlaying several labelled results (e.g. one per capture file).

    ``iterations``: per result, a DataFrame with ``start``/``end`` Datetime columns (as from
    ``burstcore.iterations``) drawn as shaded spans on the throughput panel. ``by``: which
    grouping to draw (default: each result's first); the ``max_groups`` groups with the most
    bytes get a line each. ``bin``: the bin width of the throughput panel (default: the finest
    of the scanned widths with at most 2000 bins).
    """
    from ._units import parse_duration

    if isinstance(panels, str):
        panels = [panels]  # one panel by name, not its letters
    unknown = [p for p in panels if p not in PANELS]
    if unknown or not panels:
        raise ValueError(f"panels={said(list(panels))}: choose from {', '.join(PANELS)}")
    if not results:
        raise ValueError("nothing to plot: pass at least one result")
    iters_given = list(iterations) if iterations is not None else [None] * len(results)
    if len(iters_given) != len(results):
        raise ValueError("give one iterations frame (or None) per result")
    # An Iterations result, or its frame.
    iters: list[pl.DataFrame | None] = [
        it if it is None or isinstance(it, pl.DataFrame) else it.iterations for it in iters_given
    ]
    want_bin = parse_duration(bin, name="bin", scale=True) if bin is not None else None
    # What was not scanned is a mistake to say, as ScanResult.ptm says it, not an empty panel.
    for label, r in results:
        where = f" in {said(label)}" if label else ""
        scanned_by = r.config.get("by") or ["all"]
        if by is not None and by not in scanned_by:
            raise ValueError(f"by={said(by)} was not scanned{where}; the scan's groupings: {', '.join(scanned_by)}")
        scanned_bins = r.config.get("bins_ns") or []
        if want_bin is not None and "series" in panels and want_bin not in scanned_bins:
            shown = ", ".join(format_duration(b) for b in scanned_bins) or "none (scan with bins=...)"
            raise ValueError(f"bin={said(bin)} was not scanned{where}; the scan's bin widths: {shown}")

    # File names and titles are text, not mathtext: a '$' in them failed the drawing.
    results = [(_literal(label), r) for label, r in results]
    title = _literal(title) if title else title
    fig = _new_figure(len(panels), size)
    axes = fig.subplots(*((len(panels), 1) if len(panels) == 1 else ((len(panels) + 1) // 2, 2)), squeeze=False)
    flat = list(axes.flat)
    for extra in flat[len(panels) :]:
        extra.set_visible(False)
    n = len(results)
    bins_used: set[int] = set()
    for panel, ax in zip(panels, flat, strict=False):
        x_label, y_label = LABELS[panel]
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.set_title(TITLES[panel])
        ax.grid(True, which="major", alpha=0.3)
        drew = False
        for i, ((file_label, result), it) in enumerate(zip(results, iters, strict=True)):
            g_by = by or (result.config.get("by") or ["all"])[0]
            for j, group in enumerate(top_groups(result, g_by, max_groups)):
                label = _line_label(file_label, g_by, group, n)
                # Overlaid files: one colour per file, one line style per group.
                style: dict[str, Any] = {"color": f"C{i % 10}", "ls": LINESTYLES[j % 4]} if n > 1 else {}
                if panel in ("envelope", "ptm"):
                    col = "bytes" if panel == "envelope" else "ptm"
                    d = (
                        result.envelope.filter((pl.col("by") == g_by) & (pl.col("group") == group))
                        .filter(pl.col(col).is_not_null() & (pl.col(col) > 0))
                        .sort("window_ns")
                    )
                    if d.height:
                        x = (d["window_ns"].cast(pl.Float64) / 1e9).to_numpy()
                        ax.plot(x, d[col].cast(pl.Float64).to_numpy(), marker="o", ms=3, label=label, **style)
                        drew = True
                elif panel == "backlog":
                    d = (
                        result.backlog.filter((pl.col("by") == g_by) & (pl.col("group") == group))
                        .filter(pl.col("bmax_bytes") > 0)
                        .sort("rate_bps")
                    )
                    if d.height:
                        x = d["rate_bps"].cast(pl.Float64).to_numpy()
                        ax.plot(x, d["bmax_bytes"].to_numpy(), marker="o", ms=3, label=label, **style)
                        drew = True
                else:
                    se = result.series.filter((pl.col("by") == g_by) & (pl.col("group") == group))
                    width = want_bin if want_bin is not None else choose_bin(result.series)
                    origin = _origin_ns(result)
                    if width is None or origin is None:
                        continue
                    d = se.filter(pl.col("bin").dt.total_nanoseconds() == width).sort("start_ns")
                    if d.height:
                        bins_used.add(width)
                        x = ((d["start_ns"] - origin).cast(pl.Float64) / 1e9).to_numpy()
                        ax.plot(x, d["rate_bps"].to_numpy(), drawstyle="steps-post", lw=0.8, label=label, **style)
                        drew = True
            if panel == "series" and it is not None and it.height:
                origin = _origin_ns(result)
                if origin is not None:
                    spans = it.select(
                        s=(pl.col("start").dt.epoch("ns") - origin).cast(pl.Float64) / 1e9,
                        e=(pl.col("end").dt.epoch("ns") - pl.col("start").dt.epoch("ns")).cast(pl.Float64) / 1e9,
                    )
                    ax.broken_barh(
                        list(spans.iter_rows()),
                        (0, 1),
                        transform=ax.get_xaxis_transform(),
                        alpha=0.15,
                        color=f"C{i % 10}" if n > 1 else "tab:orange",
                        label=f"iterations ({it.height})" if n == 1 else f"{file_label}: iterations ({it.height})",
                    )
        if panel in ("envelope", "ptm"):
            ax.set_xscale("log")
            ax.set_yscale("log")
            if panel == "ptm" and drew:
                ax.axhline(1.0, color="0.5", lw=0.8, ls="--", label="_mean rate")
        elif panel == "backlog":
            ax.set_xscale("log")
            ax.set_yscale("log")
        elif bins_used:
            from matplotlib.ticker import EngFormatter

            ax.yaxis.set_major_formatter(EngFormatter())
            ax.set_title(f"{TITLES['series']} per {', '.join(format_duration(b) for b in sorted(bins_used))} bin")
        if not drew:
            hint = {
                "series": "no binned series: scan with bins=... (CLI: --bins 1ms)",
                "backlog": "no positive backlog at these rates",
            }.get(panel, "no data")
            _no_data(ax, hint)
        elif len(ax.get_legend_handles_labels()[0]) > 1 or n > 1 or panel == "series":
            ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def plot_result(
    result: ScanResult,
    *,
    label: str = "",
    iterations: Iterations | pl.DataFrame | None = None,
    by: str | None = None,
    max_groups: int = 8,
    panels: Sequence[str] = PANELS,
    bin: Any = None,
    title: str | None = None,
    size: tuple[float, float] | None = None,
) -> Figure:
    """E(τ), PtM(τ), B_max(r) and the binned throughput of one result as a matplotlib Figure
    (see ``plot_results`` for the options)."""
    return plot_results(
        [(label, result)],
        iterations=[iterations],
        by=by,
        max_groups=max_groups,
        panels=panels,
        bin=bin,
        title=title,
        size=size,
    )
