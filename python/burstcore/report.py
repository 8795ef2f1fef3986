"""Human-readable tables of a scan, and the one-page HTML report.

The report is a single self-contained file: styles inline, figures embedded as PNG data URIs,
no external fetches, so it can be mailed or attached to a ticket and opened anywhere.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ._interruptible import interruptible
from ._units import (
    _iso_ns,
    format_bytes,
    format_duration,
    format_number,
    format_quantile,
    format_rate,
    format_share,
    format_span,
    no_mean_rate,
    no_span_why,
    plural,
    printable,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ._iterations import Iterations
    from ._packets import CaptureInfo
    from ._scan import ScanResult

Table = tuple[list[str], list[list[str]]]


def _int(n: Any) -> str:
    """A count, or '-' in a cell that has none (as every table marks a missing value)."""
    return "-" if n is None else f"{int(n):,}"


def _ratio(x: Any) -> str:
    """A ratio, or '-' where there is none: the tables that show one say why under them
    (`ratio_note`), once, rather than in every cell."""
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format_number(x)


def _counted(summary: dict[str, Any]) -> str:
    """What a scan that counted no packet had none of: packets, or packets that passed (the
    filter, the time range, ...) of those it read."""
    return "packets counted" if summary["packets_read"] else "packets"


def _mean_rate(summary: dict[str, Any]) -> str:
    """ρ, or why there is none: 0 bit/s is a rate (no bytes over a span, e.g. payload bytes of ACKs)."""
    if summary["mean_rate_bps"] is not None:
        return format_rate(summary["mean_rate_bps"])
    why = no_mean_rate(summary["packets"], _counted(summary))
    # The envelope's PtM(τ) and the backlog's r/ρ divide by ρ: their cells read '-' too.
    return why[:-1] + ", so no PtM(τ) or r/ρ either)" if summary["packets"] else why


def _ts(ns: int | None) -> str:
    """An instant as every table, the terminal's and the report's, shows one: ISO 8601 to the ns,
    Z for UTC, as the JSON and CSV outputs write it and --start/--end read it."""
    return "-" if ns is None else _iso_ns(int(ns))


def ratio_note(result: ScanResult, by: str, group: str, ratio: str) -> str | None:
    """Why `group`'s `ratio` (PtM(τ) or r/ρ, which both divide by its mean rate ρ) is '-' in its
    table, said once under the table; None when ρ is above 0 and every row has its ratio."""
    rows = result.groups.filter((pl.col("by") == by) & (pl.col("group") == group))
    if rows.height == 0:
        return None
    g = rows.row(0, named=True)
    if g["mean_rate_bps"] is None:
        # The whole traffic's packets may be those a filter or a time range let through.
        packets = _counted(result.summary.row(0, named=True)) if by == "all" else "packets"
        return f"{ratio}: none, as there is no mean rate ρ ({no_span_why(g['packets'], packets)})"
    if g["mean_rate_bps"] == 0:
        size = result.config.get("size", "wire")
        return (
            f"{ratio}: none, as the mean rate ρ is 0 bit/s (0 {size} bytes over {format_duration(int(g['span_ns']))})"
        )
    return None


def interface_name(result: ScanResult, by: str, group: str) -> str:
    """' (swp1)' after an interface group's label where the capture named it (pcapng if_name), in
    the terminal's headings and the report's alike: an operator who captured several switch
    ports knows them by name, not by if0, if1."""
    if by != "interface":
        return ""
    names = result.interfaces.filter(pl.col("group") == group)["name"].drop_nulls()
    return f" ({names[0]})" if len(names) else ""


# A window's peak rate from at most this many packets is mostly one frame's bytes over τ ...
_FEW_PACKETS = 2
# ... and worth a note from this rate on: slower, no link it could be mistaken for is passed.
_NOTED_PEAK_BPS = 10**9


def frame_rate_note(result: ScanResult, by: str, group: str) -> str | None:
    """Why a short window's peak rate may pass the line rate, said once under `group`'s E(τ)
    table where some window's E(τ) holds one or two packets at 1 Gbit/s or more; None
    otherwise. A capture stamps a frame's bytes at one instant, so a window shorter than the
    frame's time on the wire holds all of them, and 8·E(τ)/τ is that frame over τ, not a rate
    any link ran at (docs/metrics.md, Envelope)."""
    d = result.envelope.filter(
        (pl.col("by") == by)
        & (pl.col("group") == group)
        & (pl.col("packets") <= _FEW_PACKETS)
        & (pl.col("peak_rate_bps") >= _NOTED_PEAK_BPS)
    )
    if d.height == 0:
        return None
    longest = int(d["window_ns"].max())  # type: ignore[arg-type]
    return (
        f"τ ≤ {format_duration(longest)}: E(τ) is one or two frames, each stamped at one instant, so the peak "
        "rate may pass the line rate (the frame took longer than τ on the wire)"
    )


def envelope_table(result: ScanResult, by: str, group: str) -> Table:
    """E(τ), its packets, the peak rate 8·E(τ)/τ, PtM(τ) and when the window that holds E(τ)
    began, one row per window: a burst's size is of use against a switch's drop counters only
    with its instant."""
    d = result.envelope.filter((pl.col("by") == by) & (pl.col("group") == group)).sort("window_ns")
    rows = [
        [format_duration(w), _int(b), _int(p), format_rate(r), _ratio(m), _ts(s)]
        for w, b, p, r, m, s in d.select(
            "window_ns", "bytes", "packets", "peak_rate_bps", "ptm", "start_ns"
        ).iter_rows()
    ]
    return ["window τ", "E(τ) bytes", "packets", "peak rate", "PtM(τ)", "from (UTC)"], rows


def backlog_table(result: ScanResult, by: str, group: str) -> Table:
    """B_max(r) per server rate r, with r/ρ, the instant the queue reached it (the packet that
    brought it there) and the longest busy period."""
    d = result.backlog.filter((pl.col("by") == by) & (pl.col("group") == group)).sort("rate_bps")
    rows = [
        [format_rate(r), _ratio(m), f"{b:,.0f}", format_bytes(b), _ts(at), format_duration(int(lb)) if lb else "0ns"]
        for r, m, b, at, lb in d.select(
            "rate_bps", "rate_over_mean", "bmax_bytes", "peak_ns", pl.col("longest_busy").dt.total_nanoseconds()
        ).iter_rows()
    ]
    return ["rate r", "r/ρ", "B_max bytes", "B_max", "at (UTC)", "longest busy"], rows


def groups_table(result: ScanResult, by: str, limit: int) -> Table:
    d = result.groups.filter(pl.col("by") == by).sort(["bytes", "group"], descending=[True, False]).head(limit)
    rows = [
        [g, _int(p), _int(b), format_span(s, p), format_rate(r) if r is not None else no_mean_rate(p)]
        for g, p, b, s, r in d.select("group", "packets", "bytes", "span_ns", "mean_rate_bps").iter_rows()
    ]
    return ["group", "packets", "bytes", "span", "mean rate ρ"], rows


@interruptible
def series_table(result: ScanResult, top: int | None = None) -> Table:
    """Per grouping, group and bin width: bins, busiest bin and the share of empty bins; with
    ``top``, for the ``top`` groups of each grouping with the most bytes only (as the other
    tables: a scan by flow has a row per flow, and a report of a million of them is no report).

    Counted over every bin from the group's first busy bin to its last, from the rows' bounds and
    sums: the series holds the empty ones only where it is dense (up to 20 M rows)."""
    if result.series.height == 0:
        return [], []
    series = result.series
    if top is not None:
        from .plot import top_groups

        shown = pl.DataFrame(
            [(by, g) for by in result.config.get("by") or ["all"] for g in top_groups(result, by, top)],
            schema={"by": pl.String, "group": pl.String},
            orient="row",
        )
        series = series.join(shown, on=["by", "group"], how="semi")
    width = pl.col("bin").dt.total_nanoseconds()
    d = (
        series.group_by("by", "group", "bin", maintain_order=True)
        .agg(
            bins=(pl.col("start_ns").max() - pl.col("start_ns").min()) // width.first() + 1,
            busy=(pl.col("packets") > 0).sum(),
            total=pl.col("bytes").sum(),
            peak=pl.col("rate_bps").max(),
        )
        .with_columns(
            empty=pl.col("bins") - pl.col("busy"),
            mean=pl.col("total").cast(pl.Float64)
            * 8e9
            / (pl.col("bins").cast(pl.Float64) * pl.col("bin").dt.total_nanoseconds().cast(pl.Float64)),
        )
        .sort("by", "group", "bin")
    )
    rows = [
        [
            f"{by}: {g}",
            format_duration(int(w)),
            _int(n),
            f"{100 * e / n:.1f}%",  # n >= 1: from the first busy bin to the last
            format_rate(p),
            format_rate(m),
        ]
        for by, g, w, n, e, p, m in d.select(
            "by", "group", pl.col("bin").dt.total_nanoseconds(), "bins", "empty", "peak", "mean"
        ).iter_rows()
    ]
    return ["group", "bin Δ", "bins", "empty", "busiest bin", "mean over bins"], rows


def scan_summary_table(result: ScanResult) -> Table:
    s = result.summary.row(0, named=True)
    first = result.summary.select(pl.col("first").dt.epoch("ns")).item()
    last = result.summary.select(pl.col("last").dt.epoch("ns")).item()
    skipped = sum(s[k] for k in s if k.startswith("skipped_"))
    reasons = skip_reasons(s)
    rows = [
        ["packets read", _int(s["packets_read"])],
        ["packets counted", _int(s["packets"])],
        ["packets skipped", _int(skipped) + (f" ({', '.join(reasons)})" if reasons else "")],
        ["bytes (" + str(result.config.get("size", "wire")) + ")", f"{_int(s['bytes'])} ({format_bytes(s['bytes'])})"],
        ["first packet", _ts(first) if first is not None else f"none (no {_counted(s)})"],
        ["last packet", _ts(last) if last is not None else f"none (no {_counted(s)})"],
        ["span", format_span(s["span_ns"], s["packets"], _counted(s))],
        ["mean rate ρ", _mean_rate(s)],
        [
            "reordered",
            f"{_int(s['reordered'])} {plural(s['reordered'], 'packet came', 'packets came')} after a later one "
            f"and {plural(s['reordered'], 'was', 'were')} put in order "
            f"(largest lateness {format_duration(s['max_lateness_ns'] or 0)})",
        ],
    ]
    given = result.config.get("filter")
    if isinstance(given, list):
        # One row per capture, in the order given: on one line they would widen every row.
        rows[3:3] = [[f"filter {k + 1}", f or "none (read whole)"] for k, f in enumerate(given)]
    elif given:
        rows.insert(3, ["filter", str(given)])
    start, end = result.config.get("start_ns"), result.config.get("end_ns")
    if start is not None or end is not None:
        stretch = f"from {_ts(start) if start is not None else 'the first packet'} to "
        stretch += f"{_ts(end) + ' (excluded)' if end is not None else 'the last packet'}"
        rows.insert(3, ["time range", stretch])
    return ["", ""], rows


def skip_reasons(summary: dict[str, Any]) -> list[str]:
    """Why packets were skipped, for the reasons that apply: '12 failed the filter', ... (from a
    summary row; the frame has every count)."""
    return [f"{_int(summary[k])} {why}" for k, why in _SKIP_REASONS if summary.get(k)]


# The summary's skip counts, as the terminal names them.
_SKIP_REASONS = (
    ("skipped_filtered", "failed the filter"),
    ("skipped_outside_range", "outside the time range"),
    ("skipped_no_timestamp", "without a timestamp"),
    ("skipped_timestamp_out_of_range", "with a timestamp outside 1677-2262"),
    ("skipped_no_size", "without the header their size is read from"),
    ("skipped_late", "later than the reorder horizon, dropped"),
)


def info_table(info: CaptureInfo) -> Table:
    rows = [
        ["format", info.format_text()],
        ["interfaces", str(len(info.interfaces))],
        ["packets", _int(info.packets)],
        ["wire bytes", f"{_int(info.wire_bytes)} ({format_bytes(info.wire_bytes)})"],
        ["captured bytes", _int(info.captured_bytes)],
        ["first packet", info._instant_text(info.first_ns)],
        ["last packet", info._instant_text(info.last_ns)],
        ["duration", info.duration_text()],
        ["mean rate", info.mean_rate_text()],
        [
            "out of order",
            f"{_int(info.out_of_order)} {plural(info.out_of_order, 'packet')} earlier than the one just before "
            f"{plural(info.out_of_order, 'it', 'them')} in the file "
            f"(largest step back {format_duration(info.max_step_back_ns)})",
        ],
        [
            "over link MTU",
            f"{_int(info.over_mtu_frames)} (max {info.max_wire_len} B)"
            + (f" — {info.over_mtu_hint()}" if info.over_mtu_frames else ""),
        ],
        ["snapped (cap < wire)", _int(info.snapped)],
    ]
    dropped = info.drops_text()
    if dropped is not None:
        rows.append(["dropped (ISB)", dropped])
    rows += [["undeclared FCS", info.undeclared_fcs_text(k)] for k in info.undeclared_fcs()]
    for i in info.interfaces:
        rows.append(
            [
                f"interface #{i['index']}",
                f"{i['linktype_name']} ({i['linktype']}), snaplen {i['snaplen']}, resolution {i['resolution']}, "
                f"{_int(i['packets'])} {plural(i['packets'], 'packet')}"
                + (f", name {printable(i['name'])}" if i.get("name") else "")
                + (f", FCS {i['fcs_len']} B declared" if i.get("fcs_len") else ""),
            ]
        )
    return ["", ""], rows


# Iterations listed in the report (burstcore iterations -o FILE gives them all).
_ITERATIONS_SHOWN = 30


def iteration_period_table(it: Iterations) -> Table:
    """The period ``burstcore.iterations`` found, its confidence and the iterations it is the
    mean spacing over (the headline of a training capture, which the list of iterations alone
    does not give)."""
    if it.period_ns is None:
        period = "none found"
    else:
        period = format_duration(it.period_ns) + (
            " (unsure: " + "; ".join(it.period_doubts) + ")" if it.period_doubts else ""
        )
    rows = [
        ["period", period],
        [
            "confidence",
            f"{it.confidence:.3f}"
            + (" (below 0.05: a guess)" if it.confidence < 0.05 and it.period_ns is not None else ""),
        ],
    ]
    chain = it.iterations.filter(pl.col("in_period"))["iteration"]
    if len(chain) >= 2:
        rows.append(["period over", f"iterations {chain[0]}-{chain[-1]} ({len(chain)})"])
    return ["", ""], rows


# ---------------------------------------------------------------- the analyses, for the terminal

PROTOCOLS = {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}


def _endpoint(ip: str | None, port: int) -> str:
    if ip is None:
        return "(no address)"
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _host(ip: str | None) -> str:
    return "(no IP address)" if ip is None else ip


def shared_captures_table(
    files: Sequence[str], hosts: Sequence[str | None], spans: Sequence[tuple[int, int | None] | None]
) -> Table:
    """``burstcore.shared_packets``' captures, numbered from 1 as its warning names them, with
    their first and last packets (a stream's last is not read)."""
    rows = [
        [
            f,
            str(k + 1),
            "unknown" if h is None else h,
            "-" if sp is None else _ts(sp[0]),
            "-" if sp is None else "(not read)" if sp[1] is None else _ts(sp[1]),
        ]
        for k, (f, h, sp) in enumerate(zip(files, hosts, spans, strict=True))
    ]
    return ["file", "capture", "host", "first packet (UTC)", "last packet (UTC)"], rows


def shared_pairs_table(pairs: pl.DataFrame) -> Table:
    """``burstcore.shared_packets``' pairs: the captures (from 1), where both were sampled from,
    the packets both samples hold of the smaller sample, and whether a merge warns."""
    rows = [
        [f"{a + 1} and {b + 1}", _ts(t), f"{_int(sh)} of {_int(min(sa, sb))}", "yes" if told else "no"]
        for a, b, t, sh, sa, sb, told in pairs.select(
            "a", "b", pl.col("from").dt.epoch("ns"), "shared", "sampled_a", "sampled_b", "told"
        ).iter_rows()
    ]
    return ["captures", "sampled from (UTC)", "packets in both", "told"], rows


def flows_table(flows: pl.DataFrame, key: str) -> Table:
    """One row per flow of ``burstcore.flows``: the flow, its protocol, first packet, duration,
    packets and bytes (both directions of a biflow apart), TCP retransmitted packets ('-' for a
    flow without TCP), and its E(τ) per window if asked."""
    envelopes = [c for c in flows.columns if c.startswith("envelope_")]
    header = ["flow", "proto", "first seen (UTC)", "duration", "packets", "bytes"]
    if key == "biflow":
        header += ["src→dst bytes", "dst→src bytes"]
    header += ["retransmitted"]
    header += [f"E({c.removeprefix('envelope_')})" for c in envelopes]
    arrow = " <> " if key == "biflow" else " > "
    rows = []
    for r in flows.iter_rows(named=True):
        proto = "-" if key == "flow4" else PROTOCOLS.get(r["protocol"], str(r["protocol"]))
        row = [
            _endpoint(r["src"], r["sport"]) + arrow + _endpoint(r["dst"], r["dport"]),
            proto,
            _ts(r["first_seen_ns"]),
            format_duration(r["duration_ns"]),
            _int(r["packets"]),
            _int(r["bytes"]),
        ]
        if key == "biflow":
            row += [_int(r["src2dst_bytes"]), _int(r["dst2src_bytes"])]
        resent = r["retransmitted_packets"]
        row.append("-" if resent is None else _int(resent))
        rows.append(row + [_int(r[c]) for c in envelopes])
    return header, rows


def matrix_table(matrix: pl.DataFrame) -> Table:
    """``burstcore.traffic_matrix``'s rows: bytes, packets and share of all bytes per host pair."""
    rows = [
        [_host(s), _host(d), _int(b), _int(p), format_share(f)]
        for s, d, b, p, f in matrix.select("src", "dst", "bytes", "packets", "share").iter_rows()
    ]
    return ["src", "dst", "bytes", "packets", "share"], rows


def hosts_table(hosts: pl.DataFrame) -> Table:
    """``burstcore.host_volumes``'s rows: bytes and packets each host sent and received."""
    cols = ["sent_bytes", "sent_packets", "received_bytes", "received_packets"]
    rows = [[_host(h), *(_int(v) for v in vals)] for h, *vals in hosts.select("host", *cols).iter_rows()]
    return ["host", "sent bytes", "sent packets", "received bytes", "received packets"], rows


_ITERATION_COLUMNS = (
    "iteration",
    "start_ns",
    "comm_end_ns",
    "end_ns",
    "bytes",
    "packets",
    "peak_rate_bps",
    "whole",
    "in_period",
)


def _frame_table(frame: pl.DataFrame) -> Table:
    """Any frame of iterations (one a caller made, with only some of burstcore's columns), its
    first 8 columns shown as the other tables show their values: instants as `_ts`, durations as
    `format_duration`, rates in bit/s units, numbers without exponents."""
    cols = [c for c in frame.columns if frame.schema[c] != pl.Object][:8]
    exact = frame.select(
        pl.col(c).dt.epoch("ns")
        if isinstance(frame.schema[c], pl.Datetime)
        else pl.col(c).dt.total_nanoseconds()
        if isinstance(frame.schema[c], pl.Duration)
        else pl.col(c)
        for c in cols
    )
    shows: list[Callable[[Any], str]] = []
    for c in cols:
        dtype = frame.schema[c]
        if isinstance(dtype, pl.Datetime):
            shows.append(_ts)
        elif isinstance(dtype, pl.Duration):
            shows.append(format_duration)
        elif c.endswith("_bps"):
            shows.append(format_rate)
        elif dtype == pl.Boolean:
            shows.append(lambda v: "yes" if v else "no")
        elif dtype.is_integer():
            shows.append(_int)
        elif dtype.is_float():
            shows.append(_ratio)
        else:
            shows.append(str)
    rows = [["-" if v is None else show(v) for show, v in zip(shows, row, strict=True)] for row in exact.iter_rows()]
    head = [f"{c} (UTC)" if isinstance(frame.schema[c], pl.Datetime) else c for c in cols]
    return head, rows


def iteration_list_table(iters: pl.DataFrame) -> Table:
    """``burstcore.iterations``' rows: start, communication phase, length, bytes, packets, peak,
    whether it is whole ("cut": an edge of the stretch read cut it) and in the period's run."""
    rows = [
        [
            str(k),
            _ts(s),
            format_duration(c - s),
            format_duration(e - s),
            _int(b),
            _int(p),
            format_rate(r),
            "yes" if w else "cut",
            "yes" if ip else "no",
        ]
        for k, s, c, e, b, p, r, w, ip in iters.select(_ITERATION_COLUMNS).iter_rows()
    ]
    head = [
        "iteration",
        "start (UTC)",
        "communication",
        "length",
        "bytes",
        "packets",
        "peak rate",
        "whole",
        "in period",
    ]
    return head, rows


def bursts_table(bursts: pl.DataFrame) -> Table:
    """``burstcore.bursts``' rows: start, duration, bytes, packets and the OFF gap before."""
    rows = [
        [str(k), _ts(s), format_duration(d), _int(b), _int(p), "-" if off is None else format_duration(off)]
        for k, s, d, b, p, off in bursts.select(
            "burst", "start_ns", "duration_ns", "bytes", "packets", "off_before_ns"
        ).iter_rows()
    ]
    return ["burst", "start (UTC)", "duration", "bytes", "packets", "OFF before"], rows


def burst_quantiles_table(distributions: pl.DataFrame) -> Table:
    """``Bursts.distributions`` as one row per quantile q, a column per metric."""
    metrics = (("bytes", _int), ("packets", _int), ("duration_ns", format_duration), ("off_ns", format_duration))
    by_metric = {
        m: dict(distributions.filter(pl.col("metric") == m).select("q", "value").iter_rows()) for m, _ in metrics
    }
    qs = distributions.filter(pl.col("metric") == "bytes")["q"].to_list()
    rows = [
        [format_quantile(q), *("-" if by_metric[m].get(q) is None else show(by_metric[m][q]) for m, show in metrics)]
        for q in qs
    ]
    return ["q", "bytes", "packets", "duration", "OFF gap"], rows


def _by_group(quantiles: pl.DataFrame, values: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """Each group's quantiles, in the order asked for: {group: {"q": [...], value: [...]}}."""
    rows = quantiles.group_by("group", maintain_order=True).agg("q", *values)
    return {r["group"]: r for r in rows.iter_rows(named=True)}


def size_quantiles_table(quantiles: pl.DataFrame, groups: pl.DataFrame, shown: Sequence[str]) -> Table:
    """``burstcore.sizes``' quantiles: a row per group of ``shown`` (its packets, then its size at
    each q), a column per q."""
    per = _by_group(quantiles, ["value"])
    packets = dict(groups.select("group", "packets").iter_rows())
    qs = next(iter(per.values()))["q"] if per else []
    rows = [[g, _int(packets.get(g)), *(_int(v) for v in per[g]["value"])] for g in shown if g in per]
    return ["group", "packets", *(format_quantile(q) for q in qs)], rows


def _duration(ns: int | None) -> str:
    return "-" if ns is None else format_duration(ns)


def gap_quantiles_table(quantiles: pl.DataFrame, groups: pl.DataFrame, shown: Sequence[str]) -> Table:
    """``burstcore.gaps``' quantiles: per group of ``shown`` (named, with its number of gaps, on
    its first row) a row per q with the bounds of the gap's quantile, both included; a group
    without a gap (a single packet) one row of '-', not a row of them per q."""
    per = _by_group(quantiles, ["lo_ns", "hi_ns"])
    gaps = dict(groups.select("group", "gaps").iter_rows())
    rows = []
    for g in shown:
        if g not in per:
            continue
        if not gaps.get(g):
            rows.append([g, _int(gaps.get(g)), "-", "-", "-"])
            continue
        for k, (q, lo, hi) in enumerate(zip(per[g]["q"], per[g]["lo_ns"], per[g]["hi_ns"], strict=True)):
            rows.append(
                [
                    g if k == 0 else "",
                    _int(gaps.get(g)) if k == 0 else "",
                    format_quantile(q),
                    _duration(lo),
                    _duration(hi),
                ]
            )
    return ["group", "gaps", "q", "lo", "hi"], rows


def signed_duration(ns: int) -> str:
    """A duration that may be below zero: -3000000 -> '-3ms'."""
    return "-" + format_duration(-ns) if ns < 0 else format_duration(ns)


def offsets_table(files: Sequence[str], offsets_ns: Sequence[int]) -> Table:
    """``burstcore.superpose``' offsets, one row per capture, numbered from 1 as its warnings (and
    every message and terminal table of burstcore) number them."""
    rows = [
        [f"{k}: {'stdin' if f == '-' else f}", signed_duration(o)]
        for k, (f, o) in enumerate(zip(files, offsets_ns, strict=True), start=1)
    ]
    return ["capture", "offset"], rows


def gain_table(gain: pl.DataFrame) -> Table:
    """``SuperposeResult.multiplexing_gain``: per window, the captures' own E(τ) summed, the
    merge's E(τ), and their ratio."""
    rows = [
        [format_duration(w), _int(s), _int(m), _ratio(g)]
        for w, s, m, g in gain.select("window_ns", "sum_single_bytes", "merged_bytes", "gain").iter_rows()
    ]
    return ["window τ", "sum of singles", "merged", "gain"], rows


def _safe(table: Table) -> Table:
    """`table` with every cell printable: cells name files (shared, superpose), echo the filters
    given and carry what a capture holds, strings whoever made them chose (`printable`)."""
    header, rows = table
    return [printable(h) for h in header], [[printable(c) for c in r] for r in rows]


def text_table(table: Table, indent: str = "  ") -> str:
    """A plain-text table, numbers right-aligned."""
    header, rows = _safe(table)
    if not rows:
        return ""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

    def fmt(cells: Sequence[str], first_left: bool = True) -> str:
        out = []
        for k, (c, w) in enumerate(zip(cells, widths, strict=True)):
            out.append(c.ljust(w) if k == 0 and first_left else c.rjust(w))
        return indent + "  ".join(out).rstrip()

    lines = [fmt(header)] if any(header) else []
    lines += [fmt(r) for r in rows]
    return "\n".join(lines)


def html_table(table: Table, caption: str | None = None, css_class: str = "") -> str:
    header, rows = _safe(table)
    cap = f"<caption>{html.escape(printable(caption))}</caption>" if caption else ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header) if any(header) else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    cls = f' class="{css_class}"' if css_class else ""
    return f"<table{cls}>{cap}" + (f"<thead><tr>{head}</tr></thead>" if head else "") + f"<tbody>{body}</tbody></table>"


def _html_note(note: str | None) -> str:
    """A line under a table saying what its '-' cells lack and why ('' when none)."""
    return f'<p class="note">{html.escape(printable(note))}</p>' if note else ""


def figure_png(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0 1.2em}caption{text-align:left;font-weight:600;padding:.2em 0}
td,th{padding:.15em .7em;border-bottom:1px solid #eee;text-align:right;font-variant-numeric:tabular-nums}
td:first-child,th:first-child{text-align:left}
.kv td:first-child{color:#555}
figure{margin:1em 0}img{max-width:100%}figcaption{color:#555;font-size:.9em}
.warn{color:#8a4b00}.meta{color:#666;font-size:.9em}.note{color:#555;font-size:.9em;margin-top:-.9em}
"""

# Records whether each embedded figure decoded (its natural width) on the img element, so a
# headless browser's DOM dump shows that every figure really loaded.
_SCRIPT = """
function burstcoreMark(){document.querySelectorAll('img').forEach(function(i){
  i.setAttribute('data-natural-width', String(i.naturalWidth));});}
window.addEventListener('load', burstcoreMark);
"""


def generated_at() -> str:
    """When the report says it was generated: now, or SOURCE_DATE_EPOCH's instant when set (the
    reproducible-builds.org variable), so that a report made again from the same capture is the
    same bytes (everything else on the page already is)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        when = _dt.datetime.now(_dt.UTC)
    else:
        try:
            when = _dt.datetime.fromtimestamp(int(epoch.strip()), _dt.UTC)
        except (ValueError, OverflowError, OSError):
            raise ValueError(
                f"SOURCE_DATE_EPOCH={epoch!r}: give the report's date as whole seconds since 1970-01-01 UTC "
                "(e.g. SOURCE_DATE_EPOCH=$(date +%s)), or unset it to use the current time"
            ) from None
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


@interruptible
def render_report(
    name: str,
    result: ScanResult,
    *,
    info: CaptureInfo | None = None,
    iterations: Iterations | pl.DataFrame | None = None,
    figures: Sequence[tuple[str, bytes]] = (),
    max_groups: int = 8,
    notes: Sequence[str] = (),
) -> str:
    """The HTML page for one capture: summary, tables and PNG figures (as data URIs).

    ``iterations``: ``burstcore.iterations``' result (its period is then shown), or its frame."""
    from . import __version__

    now = generated_at()
    cfg = result.config
    name = printable(name)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>burstcore report: {html.escape(name)}</title>",
        f"<style>{_CSS}</style><script>{_SCRIPT}</script></head><body>",
        f"<h1>Burstiness of <code>{html.escape(name)}</code></h1>",
        f'<p class="meta">burstcore {html.escape(__version__)} · generated {now} · sizes counted: '
        f"{html.escape(str(cfg.get('size', 'wire')))} · windows "
        f"{html.escape(str(cfg.get('closed', 'left')))}-closed · rates: {html.escape(str(cfg.get('rates', '')))}. "
        "E(τ) is the most bytes in any sliding window of length τ; PtM(τ) = E(τ)/(ρ·τ); B_max(r) is "
        "the largest backlog of a constant-rate server of rate r fed by the trace.</p>",
    ]
    # The info pass and the scan read the same capture and meet the same damage: told once.
    warns = list(dict.fromkeys([*result.warnings, *(info.warnings if info else []), *notes]))
    if warns:
        items = "".join(f'<li class="warn">{html.escape(printable(w))}</li>' for w in warns)
        parts.append(f"<h2>Warnings</h2><ul>{items}</ul>")
    parts.append('<h2 id="summary">Summary</h2>')
    if info is not None:
        parts.append(html_table(info_table(info), "Capture", "kv"))
    parts.append(html_table(scan_summary_table(result), "Scan accounting", "kv"))

    if figures:
        parts.append('<h2 id="figures">Figures</h2>')
        for caption, png in figures:
            uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            parts.append(
                f'<figure><img src="{uri}" alt="{html.escape(caption)}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )

    by_list: list[str] = list(cfg.get("by") or ["all"])
    parts.append('<h2 id="envelope">Envelope, peak rate and peak-to-mean ratio per window</h2>')
    for by in by_list:
        from .plot import top_groups

        groups = top_groups(result, by, max_groups)
        n_all = result.groups.filter(pl.col("by") == by).height
        if by != "all":
            parts.append(
                html_table(groups_table(result, by, max_groups), f"Groups by {by} (largest {len(groups)} of {n_all})")
            )
        for g in groups:
            label = f"{by}: {g}{interface_name(result, by, g)}"
            parts.append(html_table(envelope_table(result, by, g), f"E(τ) — {label}", "envelope"))
            parts.append(_html_note(ratio_note(result, by, g, "PtM(τ)")))
            parts.append(_html_note(frame_rate_note(result, by, g)))
    parts.append('<h2 id="backlog">Backlog B_max(r) per server rate</h2>')
    for by in by_list:
        from .plot import top_groups

        for g in top_groups(result, by, max_groups):
            label = f"{by}: {g}{interface_name(result, by, g)}"
            parts.append(html_table(backlog_table(result, by, g), f"B_max(r) — {label}", "backlog"))
            parts.append(_html_note(ratio_note(result, by, g, "r/ρ")))
    st = series_table(result, max_groups)
    if st[1]:
        parts.append('<h2 id="series">Binned throughput</h2>' + html_table(st, None, "series"))
    if iterations is not None:
        frame = iterations if isinstance(iterations, pl.DataFrame) else iterations.iterations
        parts.append(f'<h2 id="iterations">Training iterations ({frame.height} detected)</h2>')
        # Not a bare frame (nor a stand-in holding only one): the period is told.
        if not isinstance(iterations, pl.DataFrame) and hasattr(iterations, "period_ns"):
            parts.append(html_table(iteration_period_table(iterations), None, "kv period"))
        if frame.height:
            # The terminal's table: instants to the ns and in UTC, the phases as durations.
            shown = frame.head(_ITERATIONS_SHOWN)
            more = f"The first {shown.height} of {frame.height}" if shown.height < frame.height else None
            whole = set(_ITERATION_COLUMNS) <= set(frame.columns)
            parts.append(html_table(iteration_list_table(shown) if whole else _frame_table(shown), more, "iterations"))
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
