"""The commands of the analyses: flows, matrix, iterations, bursts, sizes, gaps and superpose."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import polars as pl

from .._units import plural
from .errors import UsageError
from .inputs import _read_kwargs, _read_merged, _shown
from .messages import Told, _many
from .output import _emit, _prepare_output, _tables
from .terminal import _note, _print_result, _rows_line, _show_skipped, _show_table, _title
from .values import _instant_ns, _ns


def _quantiles_asked(args: argparse.Namespace) -> list[float]:
    """The quantiles --quantiles gave, or the default ones, for a JSON meta: as the floats the
    tables' column q shows (a Decimal's digits past a float's are in the command line)."""
    from .._analysis import DEFAULT_QUANTILES

    return list(DEFAULT_QUANTILES) if args.quantiles is None else [float(q) for q in args.quantiles]


def _meta(args: argparse.Namespace, config: dict[str, Any], told: Told, **extra: Any) -> dict[str, Any]:
    """The JSON meta of an analysis: what was read, with which options, and what it warned."""
    import burstcore

    read = {
        "reorder_horizon_ns": _ns(args.reorder_horizon),
        "on_late": args.on_late,
        "start_ns": _instant_ns(args.start),
        "end_ns": _instant_ns(args.end),
        "filter": args.filter,
        "strict": args.strict,
        "mmap": args.mmap,
    }
    return {
        "burstcore": burstcore.__version__,
        "command": args.command,
        "files": list(args.files),
        "merged": True,
        **extra,
        "config": {**config, **read},
        "warnings": told,
        "warning_details": told.details(),
    }


def cmd_flows(args: argparse.Namespace) -> int:
    import burstcore

    fmt = _prepare_output(args)
    kw = {"key": args.key, "idle_timeout": args.idle_timeout, "windows": args.windows, "max_flows": args.max_flows}
    df, told = _read_merged(args, burstcore.flows, **kw, size=args.size, fcs=args.fcs, **_read_kwargs(args))
    config = {
        "key": args.key,
        "idle_timeout_ns": _ns(args.idle_timeout),
        "windows_ns": sorted({int(w.removesuffix("ns")) for w in args.windows or []}),
        "max_flows": args.max_flows,
        "size": args.size,
        "fcs": args.fcs,
    }
    return _emit(fmt, {"flows": df}, _meta(args, config, told), args, lambda: _show_flows(args, df))


def _show_flows(args: argparse.Namespace, df: pl.DataFrame) -> None:
    from .._units import format_duration
    from ..report import flows_table

    timeout = "none" if args.idle_timeout is None else format_duration(_ns(args.idle_timeout) or 0)
    print(f"== {_title(args.files)}")
    print(f"{_many(df.height, 'flow')} (key {args.key}, idle timeout {timeout}): ", end="")
    print(f"{_many(int(df['packets'].sum()), 'packet')}, {_many(int(df['bytes'].sum()), 'byte')}")
    _show_skipped(args, None, df.height)
    shown = df.sort("bytes", "first_seen_ns", descending=[True, False], maintain_order=True).head(args.top)
    _show_table(_rows_line("\nFlows", df.height, shown.height, "the largest"), flows_table(shown, args.key))
    print()


def cmd_matrix(args: argparse.Namespace) -> int:
    import burstcore

    fmt = _prepare_output(args)
    analyse = burstcore.host_volumes if args.hosts else burstcore.traffic_matrix
    kw = {"max_pairs": args.max_pairs, "size": args.size, "fcs": args.fcs}
    df, told = _read_merged(args, analyse, **kw, **_read_kwargs(args))
    name = "hosts" if args.hosts else "matrix"
    meta = _meta(args, {"hosts": args.hosts, **kw}, told)
    return _emit(fmt, {name: df}, meta, args, lambda: _show_matrix(args, df))


def _show_matrix(args: argparse.Namespace, df: pl.DataFrame) -> None:
    from ..report import hosts_table, matrix_table

    print(f"== {_title(args.files)}")
    _show_skipped(args, None, df.height)
    shown = df.head(args.top)
    if args.hosts:
        sent, packets = int(df["sent_bytes"].sum()), int(df["sent_packets"].sum())
        print(f"Host volumes: {_many(df.height, 'host')}; {_many(packets, 'packet')}, {_many(sent, 'byte')} sent")
        _show_table(_rows_line("\nHosts", df.height, shown.height, "the heaviest senders"), hosts_table(shown))
    else:
        total, packets = int(df["bytes"].sum()), int(df["packets"].sum())
        print(f"Traffic matrix: {_many(df.height, 'host pair')}; {_many(packets, 'packet')}, {_many(total, 'byte')}")
        _show_table(_rows_line("\nPairs", df.height, shown.height, "the heaviest"), matrix_table(shown))
    print()


def cmd_iterations(args: argparse.Namespace) -> int:
    import burstcore

    fmt = _prepare_output(args)
    kw = {"bin": args.bin, "min_period": args.min_period, "max_period": args.max_period}
    it, told = _read_merged(args, burstcore.iterations, **kw, size=args.size, fcs=args.fcs, **_read_kwargs(args))
    config = {
        "bin_ns": it.bin_ns,
        "min_period_ns": _ns(args.min_period),
        "max_period_ns": _ns(args.max_period),
        "size": args.size,
        "fcs": args.fcs,
    }
    found = {"period_ns": it.period_ns, "confidence": it.confidence, "acf_period_ns": it.acf_period_ns}
    # The period found heads the summary table too: a CSV or parquet of it stands on its own.
    found_row = pl.DataFrame(
        {k: pl.Series([v], dtype=pl.Float64 if k == "confidence" else pl.Int64) for k, v in found.items()}
    ).with_columns(
        bin_ns=pl.lit(it.bin_ns, dtype=pl.Int64),
        periods_seen=pl.lit(it.periods_seen, dtype=pl.Float64),
        period_unsure=pl.lit(bool(it.period_doubts)),
    )
    tables = {"iterations": it.iterations, "summary": found_row.hstack(it.summary)}
    meta = _meta(args, config, told, **found, periods_seen=it.periods_seen, period_doubts=it.period_doubts)
    return _emit(fmt, tables, meta, args, lambda: _show_iterations(args, it))


def _show_iterations(args: argparse.Namespace, it: Any) -> None:
    from .._units import format_duration
    from ..report import iteration_list_table, text_table

    df = it.iterations
    if it.period_ns is None:
        lo_ns, hi = _ns(args.min_period) or 0, format_duration(_ns(args.max_period) or 0)
        # The core searches from 2 bins up: '--bin 100ms' searched from 200ms, not from 5ms.
        lo = format_duration(lo_ns) if lo_ns >= 2 * it.bin_ns else f"{format_duration(2 * it.bin_ns)} (2 bins)"
        period = f"none found between {lo} and {hi}"
    else:
        # Exact, as every other duration the command line shows (and as the report shows it).
        period = format_duration(it.period_ns)
    guess = " (below 0.05: treat the period as a guess)" if it.period_ns is not None and it.confidence < 0.05 else ""
    per = df["bytes"]
    # Unsure: the reasons are the warnings printed above; the table says which way to read it.
    unsure = " (unsure: see the warnings)" if it.period_doubts else ""
    rows = [
        ["period", period + unsure],
        ["confidence", f"{it.confidence:.3f}{guess}"],
        ["iterations", f"{df.height:,}"],
        [
            "bytes per iteration",
            f"mean {per.mean():,.0f}, median {per.median():,.0f}" if df.height else "none (no iterations)",
        ],
    ]
    # Which iterations the period is the mean spacing over, and which an edge of the stretch cut
    # (their bytes are a piece's): a period can then be checked against logged iterations.
    chain = df.filter(pl.col("in_period"))["iteration"]
    if chain.len() >= 2:
        rows.insert(1, ["period over", f"iterations {chain[0]}-{chain[-1]} ({chain.len()})"])
    if it.periods_seen is not None:
        rows.insert(1, ["periods in stretch", f"{it.periods_seen:.1f}"])
    cut = df.filter(~pl.col("whole"))["iteration"].to_list()
    if cut:
        listed = ", ".join(str(k) for k in cut)
        rows.append(
            [
                "cut by an edge",
                f"{len(cut)} ({plural(len(cut), 'iteration')} {listed}: not whole, left out of the period)",
            ]
        )
    print(f"== {_title(args.files)}")
    print(text_table((["", ""], rows)))
    _show_skipped(args, it.summary, df.height)
    shown = df.head(args.top)
    _show_table(_rows_line("\nIterations", df.height, shown.height, "the first"), iteration_list_table(shown))
    print()


def cmd_bursts(args: argparse.Namespace) -> int:
    import burstcore

    fmt = _prepare_output(args)
    kw = {"by": args.by, "quantiles": args.quantiles, "size": args.size, "fcs": args.fcs, "max_groups": args.max_groups}
    b, told = _read_merged(args, burstcore.bursts, gap=args.gap, **kw, **_read_kwargs(args))
    tables = {"bursts": b.bursts, "distributions": b.distributions, "summary": b.summary}
    qs = _quantiles_asked(args)
    config = {"gap_ns": b.gap_ns, "by": args.by, "quantiles": qs, **{k: kw[k] for k in ("size", "fcs", "max_groups")}}
    meta = _meta(args, config, told)
    return _emit(fmt, tables, meta, args, lambda: _show_bursts(args, b))


def _show_bursts(args: argparse.Namespace, b: Any) -> None:
    from .._units import _iso_ns, format_duration
    from ..report import burst_quantiles_table, bursts_table, text_table

    s = b.summary.row(0, named=True)
    per_group = None
    if b.by is not None:
        # The terminal shows the whole traffic's bursts, and one line per group; the files hold
        # every group's rows.
        per_group = (
            b.bursts.filter(pl.col("group") != "all")
            .group_by("group")
            .agg(bursts=pl.len(), packets=pl.col("packets").sum(), bytes=pl.col("bytes").sum())
            .sort("bytes", "group", descending=[True, False])
        )
        b = dataclasses.replace(
            b,
            bursts=b.bursts.filter(pl.col("group") == "all").drop("group"),
            distributions=b.distributions.filter(pl.col("group") == "all").drop("group"),
        )
    rows = [
        ["gap", f"{format_duration(b.gap_ns)} (a quiet gap longer than this ends a burst)"],
        ["bursts", f"{s['bursts']:,}"],
        ["packets", f"{s['packets']:,}"],
        ["bytes", f"{s['bytes']:,}"],
    ]
    if b.bursts.height:
        # The table below lists the first bursts; the one to match against a switch's drop
        # counters is the largest, and when it was.
        big = b.bursts.sort(["bytes", "burst"], descending=[True, False]).row(0, named=True)
        rows.append(
            [
                "largest",
                f"burst {big['burst']:,}: {big['bytes']:,} bytes, {big['packets']:,} "
                f"{plural(big['packets'], 'packet')} in {format_duration(big['duration_ns'])}, "
                f"from {_iso_ns(big['start_ns'])}",
            ]
        )
    print(f"== {_title(args.files)}")
    print(text_table((["", ""], rows)))
    _show_skipped(args, b.summary, s["bursts"])
    if s["bursts"]:
        _show_table("\nDistributions over the bursts (exact quantiles)", burst_quantiles_table(b.distributions))
        if s["bursts"] == 1:
            _note("OFF gap: none (a single burst: no gap between two)")
    shown = b.bursts.head(args.top)
    _show_table(_rows_line("\nBursts", b.bursts.height, shown.height, "the first"), bursts_table(shown))
    if per_group is not None and args.by != "all":
        top = per_group.head(args.top)
        rows = [[g, f"{n:,}", f"{p:,}", f"{y:,}"] for g, n, p, y in top.iter_rows()]
        title = _rows_line(f"\nGroups by {args.by}", per_group.height, top.height, "the largest")
        _show_table(
            title + " (each group's packets in bursts of their own)", (["group", "bursts", "packets", "bytes"], rows)
        )
    print()


def cmd_sizes(args: argparse.Namespace) -> int:
    return _cmd_distribution(args, "sizes")


def cmd_gaps(args: argparse.Namespace) -> int:
    return _cmd_distribution(args, "gaps")


def _cmd_distribution(args: argparse.Namespace, what: str) -> int:
    import burstcore

    fmt = _prepare_output(args)
    analyse = burstcore.sizes if what == "sizes" else burstcore.gaps
    kw = {"by": args.by, "quantiles": args.quantiles, "max_groups": args.max_groups}
    config = {"by": args.by, "quantiles": _quantiles_asked(args), "max_groups": args.max_groups}
    if what == "sizes":
        kw["size"] = config["size"] = args.size
        kw["fcs"] = config["fcs"] = args.fcs
    d, told = _read_merged(args, analyse, **kw, **_read_kwargs(args))
    tables = {"quantiles": d.quantiles, "histogram": d.histogram, "groups": d.groups, "summary": d.summary}
    meta = _meta(args, config, told)
    return _emit(fmt, tables, meta, args, lambda: _show_distribution(args, d, what))


def _show_distribution(args: argparse.Namespace, d: Any, what: str) -> None:
    from .._units import format_duration
    from ..report import _counted, gap_quantiles_table, size_quantiles_table

    whole = d.groups.filter(pl.col("group") == "all").row(0, named=True)
    # What there is none of, when nothing was counted: packets, or packets counted of those read.
    none = f"none (no {_counted(d.summary.row(0, named=True))})" if d.summary.height else "none (no packets)"
    print(f"== {_title(args.files)}")
    if what == "sizes":
        print(f"Packet sizes ({args.size} bytes): {_many(whole['packets'], 'packet')}, {_many(whole['bytes'], 'byte')}")
    elif whole["gaps"]:
        lo, hi = (format_duration(v) for v in (whole["min_ns"], whole["max_ns"]))
        print(f"Gaps between consecutive packets: {_many(whole['gaps'], 'gap')} (min {lo}, max {hi})")
    else:
        why = none if not whole["packets"] else "none (a single packet: no gap between two)"
        print(f"Gaps between consecutive packets: {why}")
    _show_skipped(args, d.summary, whole["packets"])
    # The whole traffic first, then the groups with the most packets.
    groups = d.groups.filter(pl.col("group") != "all").sort("packets", "group", descending=[True, False])
    shown = groups.head(args.top)
    if args.by not in (None, "all"):
        within = "" if what == "sizes" else "; a group's gaps are between its own consecutive packets"
        print(_rows_line(f"Groups by {args.by}", groups.height, shown.height, "the largest") + within)
    names = ["all", *shown["group"]]
    if what == "sizes" and not whole["packets"]:
        # Not a row of '-' per quantile: there is nothing to take quantiles of.
        print(f"\nQuantiles of the packet size: {none}")
    elif what == "sizes":
        title = (
            "\nQuantiles of the packet size in bytes (exact, sizes above 65,535 too: the smallest size with at least "
            "q of the packets ≤ it)"
        )
        _show_table(title, size_quantiles_table(d.quantiles, d.groups, names))
    elif whole["gaps"]:
        # (With none, the line above said why: no table of '-' per quantile.)
        title = "\nQuantiles of the gap: each lies in [lo, hi] (a log2 bucket narrowed by the exact min and max)"
        _show_table(title, gap_quantiles_table(d.quantiles, d.groups, names))
    print()


def cmd_superpose(args: argparse.Namespace) -> int:
    import burstcore

    fmt = _prepare_output(args)
    if len(args.files) < 2:
        raise UsageError(
            "superpose merges two captures or more: give the same file twice to superpose a capture "
            "with a shifted copy of itself (--offsets 0,3ms)"
        )
    if not args.random_offsets and (args.max_offset is not None or args.seed is not None):
        raise UsageError("--max-offset and --seed are for random offsets: add --random-offsets")
    if args.offsets is not None and len(args.offsets) != len(args.files):
        raise UsageError(
            f"--offsets gives {len(args.offsets)} offset{'s' if len(args.offsets) > 1 else ''} for "
            f"{len(args.files)} files: give one per FILE, in order"
        )
    seed = 0 if args.seed is None else args.seed
    max_offset = "1s" if args.max_offset is None else args.max_offset
    kw = {
        "offsets": "random" if args.random_offsets else args.offsets,
        "seed": seed,
        "max_offset": max_offset,
        "windows": args.windows,
        "rates": args.rates,
        "bins": args.bins,
        "bin_origin": args.bin_origin,
        "by": args.by,
        "closed": args.closed,
        "size": args.size,
        "fcs": args.fcs,
        "max_groups": args.max_groups,
    }
    r, told = _read_merged(args, burstcore.superpose, **kw, **_read_kwargs(args))
    # Each capture's own E(τ), which the gain sums: its position from 0 as in Python (capture), and
    # its file, as shared's tables name theirs.
    singles = r.singles.select(
        "capture",
        pl.Series("file", [_shown(args.files[k]) for k in r.singles["capture"]], dtype=pl.String),
        pl.exclude("capture"),
    )
    tables = {"gain": r.multiplexing_gain, "singles": singles, **_tables(r)}
    random = {"seed": seed, "max_offset_ns": _ns(max_offset)} if args.random_offsets else {}
    config = {**r.config, "random_offsets": args.random_offsets, **random}
    return _emit(fmt, tables, _meta(args, config, told), args, lambda: _show_superpose(args, r, seed, max_offset))


def _show_superpose(args: argparse.Namespace, r: Any, seed: int, max_offset: str) -> None:
    from .._units import format_duration
    from ..report import gain_table, offsets_table

    if args.random_offsets:
        how = f"random from 0 to {format_duration(_ns(max_offset) or 0)}, seed {seed}; the first stays put"
    else:
        how = "as given" if args.offsets is not None else "none given: the captures as recorded"
    print(f"== {_title(args.files)}")
    _show_table(f"Offsets added to each capture's timestamps ({how})", offsets_table(args.files, r.offsets_ns))
    n = len(args.files)
    _show_table(
        "\nMultiplexing gain per window τ: the sum of each capture's own E(τ) over the merge's E(τ), in bytes "
        f"(1: their worst bursts coincide; {n}: fully interleaved; each capture's own: -o FILE --table singles)",
        gain_table(r.multiplexing_gain),
    )
    if not r.multiplexing_gain.height:
        from ..report import _counted

        print(f"\nMultiplexing gain: none (no {_counted(r.summary.row(0, named=True))})")
    print()
    _print_result(f"the merge of the {n} captures, as scan measures a capture", r, args.top)
