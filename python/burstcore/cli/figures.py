"""The commands plot and report: scans with plot-friendly defaults, and the iterations shaded."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

import polars as pl

from .._units import format_number, printable
from .errors import EXIT_OK, UsageError, _reading_now
from .inputs import _check_inputs, _label, _named, _progress, _read_kwargs_asked, _rereadable, _scan_kwargs, _shown
from .messages import _warn
from .output import OUTPUT_FORMATS, _check_output, _replacing, _to_stdout, _writing
from .words import _filter_for

FIGURE_FORMATS = (".png", ".svg", ".pdf")
# Bin widths tried when none is given and the span is unknown (stdin): the plot picks one.
FALLBACK_BINS = ("100us", "1ms", "10ms", "100ms", "1s")


def _auto_bin_ns(span_ns: int | None) -> list[str]:
    """A 1-2-5 width giving ~400-1000 bins over the span, or several widths when it is unknown."""
    if not span_ns:
        return list(FALLBACK_BINS)
    width = 1_000
    steps = (1, 2, 5)
    k = 0
    while span_ns // width > 1000:
        k += 1
        width = steps[k % 3] * 10 ** (3 + k // 3)
    return [f"{width}ns"]


def _plot_rates(mean_bps: float | None) -> list[int] | None:
    """A finer grid than scan's default for a smooth B_max(r) curve: 1.05ρ to 50ρ, 24 points."""
    import numpy as np

    if not mean_bps:
        return None
    return sorted({max(1, round(mean_bps * m)) for m in np.geomspace(1.05, 50.0, 24)})


def _iterations(source: Any, enabled: bool, args: argparse.Namespace) -> tuple[Any, str | None]:
    """(the iterations found or None, why none were found: a note for the caller to name the
    capture in)."""
    import burstcore

    if not enabled or not hasattr(burstcore, "iterations"):
        return None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the capture's warnings were told by its first pass
            # The scan's read options, so that every part of the figure reads the capture the same
            # way: the shaded iterations are those of the stretch drawn, a packet the scan drops as
            # late is dropped here too, and a horizon wide enough for the scan is for this pass.
            found = burstcore.iterations(source, **_read_kwargs_asked(args))
        # The whole result, not only its frame: the report shows the period too.
        return (found if isinstance(found.iterations, pl.DataFrame) else None), None
    except Exception as e:  # detection is a bonus; the figure is still worth drawing without it
        return None, f"training iterations not detected ({type(e).__name__}: {e})"


def _scan_for_figures(args: argparse.Namespace, src: Any, label: str, path: str) -> tuple[Any, Any]:
    """(info or None, result) with the plot-friendly defaults: a fine rate grid, a bin width
    matched to the span. `label` names the capture on the figure, `path` in errors and warnings
    (as every command names the file it was reading)."""
    import burstcore

    kwargs = _scan_kwargs(args)
    _reading_now(path)
    cap = None
    if not isinstance(src, str) or src != "-":
        with _progress(f"{label} (info)", args.quiet) as bar, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # told just below, once, naming the capture
            cap = burstcore.info(src, strict=args.strict, progress=bar, mmap=args.mmap)
        for w in cap.warnings:
            _warn(f"{_named(path)}: {w}")
    # info's mean rate is the whole capture's: a filter or a time range reads less, and the scan's
    # own default (from a pre-pass over what it reads) fits that instead.
    whole = args.filter is None and args.start is None and args.end is None
    chosen_rates = kwargs["rates"] is None and cap is not None and args.size == "wire" and whole
    if chosen_rates:
        kwargs["rates"] = _plot_rates(cap.mean_rate_bps if cap is not None else None)
    if kwargs["bins"] is None:
        kwargs["bins"] = _auto_bin_ns(cap.duration_ns if cap is not None else None)
    with _progress(label, args.quiet) as bar, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # told just below, those the info pass has not told
        result = burstcore.scan(src, progress=bar, **kwargs)
    # The info pass tells what the reader met; the scan also tells what only a whole read
    # knows (the packets the capture records it lost), and stdin has no info pass.
    told = set(cap.warnings) if cap is not None else set()
    for w in result.warnings:
        if w not in told:
            _warn(f"{_named(path)}: {w}")
    if chosen_rates and kwargs["rates"] and cap is not None and cap.mean_rate_bps:
        # The grid's own ends: rates are whole bit/s, so below ~20 bit/s the multiples round
        # together (a 100-year capture of two packets got one rate of 1 bit/s = 189,000ρ).
        rates, rho = kwargs["rates"], cap.mean_rate_bps
        lo, hi = (format_number(r / rho, 3) for r in (rates[0], rates[-1]))
        result.config["rates"] = f"{len(rates)} rates, {lo}ρ to {hi}ρ" if len(rates) > 1 else f"1 rate, {lo}ρ"
    return cap, result


def cmd_plot(args: argparse.Namespace) -> int:
    from ..plot import plot_results, require_matplotlib

    require_matplotlib()
    _check_inputs(args.files, args.typed)
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in FIGURE_FORMATS:
        raise UsageError(f"cannot write a figure to {args.output!r}: end it in .png, .svg or .pdf")
    _check_output(args.output, args.files)
    sources = _rereadable(args.files)
    results, iters = [], []
    for k, (f, src) in enumerate(zip(args.files, sources, strict=True)):
        # Each file is drawn on its own, through its own filter if each has one.
        own = argparse.Namespace(**{**vars(args), "filter": _filter_for(args, k)})
        _, r = _scan_for_figures(own, src, _label(f), f)
        it, note = _iterations(src, not args.no_iterations, own)
        if note:
            _warn(f"{_named(f)}: {note}")
        results.append((_label(f), r))
        iters.append(it)
    # A byte of the title that is no UTF-8 is drawn as U+FFFD by plot_results itself (`_literal`).
    title = args.title or ", ".join(label for label, _ in results)
    fig = plot_results(results, iterations=iters, max_groups=args.top, title=title)
    import matplotlib

    # matplotlib dates an SVG or PDF from SOURCE_DATE_EPOCH when set, but salts an SVG's ids at
    # random: with the variable set (asking for the same bytes each time), a fixed salt.
    fixed = os.environ.get("SOURCE_DATE_EPOCH") is not None
    salt: dict[Any, Any] = {"svg.hashsalt": "burstcore"} if fixed else {}
    with _writing(args.output), _replacing(args.output, binary=True) as f, matplotlib.rc_context(salt):
        fig.savefig(f, format=ext[1:], dpi=args.dpi)
    if not args.quiet:
        print(f"wrote {printable(_shown(args.output))}", file=sys.stderr)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from ..plot import PANELS, TITLES, plot_result, require_matplotlib
    from ..report import figure_png, generated_at, render_report

    require_matplotlib()
    generated_at()  # a malformed SOURCE_DATE_EPOCH is told now, not after the scan
    _check_inputs([args.file], args.typed)
    ext = os.path.splitext(args.output)[1].lower()
    if ext in (*FIGURE_FORMATS, *OUTPUT_FORMATS):
        # The page was written into x.png all the same: a file no viewer of its name would open.
        other = "plot" if ext in FIGURE_FORMATS else "scan"
        raise UsageError(
            f"report writes an HTML page, not {ext[1:]}: end -o {args.output!r} in .html (burstcore {other} -o "
            f"FILE{ext} writes {'a figure' if other == 'plot' else 'the tables'})"
        )
    _check_output(args.output, [args.file])
    label = _label(args.file)
    (src,) = _rereadable([args.file])
    cap, result = _scan_for_figures(args, src, label, args.file)
    iters, note = _iterations(src, not args.no_iterations, args)
    # The page names its capture by its label, as its title does; stderr by its path.
    notes = [f"{label}: {note}"] if note else []
    if note:
        _warn(f"{_named(args.file)}: {note}")
    figures = []
    for panel in PANELS:
        fig = plot_result(result, iterations=iters, panels=[panel], max_groups=args.top, size=(7.5, 4.2))
        figures.append((TITLES[panel], figure_png(fig)))
    page = render_report(label, result, info=cap, iterations=iters, figures=figures, max_groups=args.top, notes=notes)
    if args.output == "-":
        with _writing("stdout"):
            _to_stdout(page.encode())
        return EXIT_OK
    with _writing(args.output), _replacing(args.output) as f:
        f.write(page)
    if not args.quiet:
        print(f"wrote {printable(_shown(args.output))} ({len(page.encode()) / 1e6:.2f} MB)", file=sys.stderr)
    return EXIT_OK
