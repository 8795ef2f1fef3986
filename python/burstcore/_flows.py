"""Flows, the traffic matrix and host volumes: who sends how much to whom."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._analysis import _DT, _DUR, _reading, _with_common_doc
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import DEFAULT_HORIZON, DEFAULT_MAX_GROUPS, _each, _parse_order, check_fcs, check_size
from ._sources import normalize_each
from ._types import Count, Duration, Durations, Filters, Instant, Source
from ._units import check_choice, format_duration, length_ns, parse_count, parse_duration

# Host pairs of traffic_matrix and host_volumes before a LimitExceededError (about 400 B each).
DEFAULT_MAX_PAIRS = 1_000_000
FLOW_KEYS = ("flow", "flow4", "biflow")
# The core's names of a flow's addresses and ports, and the API's (as read_packets has them).
_FLOW_NAMES = {"src_ip": "src", "dst_ip": "dst", "src_port": "sport", "dst_port": "dport"}


# --------------------------------------------------------------------------------------- flows


def flows(
    source: Source,
    key: Literal["flow", "flow4", "biflow"] = "flow",
    idle_timeout: Duration | None = None,
    windows: Durations | None = None,
    *,
    max_flows: Count = DEFAULT_MAX_GROUPS,
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
) -> pl.DataFrame:
    """One row per flow, in order of first packet, with NFStream-style columns.

    ``key``: 'flow' = directional 5-tuple (protocol, src, dst, ports); 'flow4' = directional
    (src, sport, dst, dport) with the protocol ignored (``protocol`` is 0; packets without
    transport ports, such as ICMP, IGMP and later fragments, are in no flow4). The CNSM study
    counted TCP port pairs alone: with ``filter="tcp"`` the row count is its flow count, while
    UDP's port pairs count too without it (271 against 132 on a capture with DNS and other UDP
    traffic); 'biflow' = both directions of a 5-tuple are one
    flow, ``src`` and ``sport`` naming the sender of its first packet (``src2dst_*``/``dst2src_*`` split it
    by direction). For 'flow' and 'biflow', ports are 0 for packets without them. Non-IP packets
    belong to no flow (``traffic_matrix`` counts them, in its row without addresses), nor, for
    'flow' and 'biflow', an IPv6 packet whose extension headers the snaplen cut before its
    transport protocol (``scan(by="flow")``'s group '(none)').

    ``idle_timeout``: a gap strictly longer than this ends a flow and the next packet opens a new
    one (None: one flow per key for the whole capture, as tshark's conversations). Gaps are
    taken in time order, after the reorder buffer, and nothing else ends a flow: a TCP FIN or RST
    followed by packets of the same key within the timeout stays in one row. As for windows,
    a plain number of 1000 or more is refused as most likely nanoseconds: write '1000s' or '20min'.

    ``max_flows``: most flows reported (default 1,000,000), each a row (a few hundred bytes, about 1.2 kB with
    ``windows``); one more is a ``LimitExceededError`` (``limit == "result"``) at once, as is a
    flow whose memory cannot be had (the process does not abort: lower ``max_flows``). A short
    idle timeout splits a busy key into many flows: all count.

    ``windows``: durations τ; each flow then gets its own E(τ) in columns ``envelope_<τ>`` (most
    bytes of that flow in any window of length τ), from the same engine as ``scan(by="flow")``.
    Needs key 'flow' or 'flow4' and no idle timeout.

    ``size``: what each packet's bytes count, in every byte column and envelope, as in ``scan``:
    'wire' (default), 'captured', 'ip', 'payload' or 'l1' (docs/metrics.md); a packet without
    the header it reads is left out of every flow (and of its packet counts), as ``scan`` leaves
    it out; ``fcs`` (whether frames end with their FCS, for 'l1') as in ``scan``, so that the
    bytes add up to ``scan``'s under the same rule.

    Columns: src, dst (addresses as strings), protocol, sport, dport (named as ``read_packets``
    and ``traffic_matrix`` name them; ``src_ip``, ``dst_ip``, ``src_port`` and ``dst_port``
    before), first_seen, last_seen (Datetime ns UTC), duration (Duration ns), first_seen_ns,
    last_seen_ns, duration_ns (null past int64, as every ``*_ns`` length), packets, bytes,
    src2dst_packets, src2dst_bytes, dst2src_packets, dst2src_bytes, retransmitted_packets,
    retransmitted_bytes.

    ``retransmitted_packets`` / ``retransmitted_bytes``: the flow's TCP segments that resend
    sequence space its sender had already sent (all of it: a segment whose end is not past the
    highest end seen before it in time, serial-number arithmetic, keep-alives aside), and their
    bytes counted as ``bytes`` counts them; each direction of a 'biflow' row is tracked on its
    own. This is tshark's retransmission, fast retransmission, spurious retransmission and
    out-of-order together (docs/metrics.md says where it differs). Null for a flow with no TCP
    packet. A new flow after an idle timeout goes on with its connection's sequence state, so a
    resend after the silence counts.
    """
    key = check_choice(key, name="key", choices=FLOW_KEYS, message=f"use one of {', '.join(FLOW_KEYS)}")  # type: ignore[assignment]
    timeout_ns = (
        None if idle_timeout is None else parse_duration(idle_timeout, name="idle_timeout", allow_zero=True, scale=True)
    )
    windows_ns = _each(windows, lambda w: parse_duration(w, name="window", scale=True), "window")
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    max_flows = parse_count(max_flows, name="max_flows")
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    srcs = normalize_each(source)
    out, warns = _core.flows(
        srcs,
        key,
        timeout_ns,
        windows_ns,
        max_flows,
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
        env = out.pop("envelope")
        for k in ("no_flow_packets", "no_flow_bytes", "accounting"):
            out.pop(k)
        labels = pl.Series(out.pop("addresses"), dtype=pl.String)
        masks = {k.removesuffix("_valid"): out.pop(k) for k in [k for k in out if k.endswith("_valid")]}
        df = pl.DataFrame({k: (labels.gather(v).alias(k) if k in ("src_ip", "dst_ip") else v) for k, v in out.items()})
        df = df.with_columns(pl.when(pl.Series(m)).then(pl.col(k)).otherwise(None).alias(k) for k, m in masks.items())
        # Named as read_packets, traffic_matrix and the groupings ('src', 'dst') name them.
        df = df.rename(_FLOW_NAMES)
        df = df.with_columns(
            first_seen=pl.col("first_seen_ns").cast(_DT),
            last_seen=pl.col("last_seen_ns").cast(_DT),
            duration_ns=length_ns(df["first_seen_ns"], df["last_seen_ns"], "duration_ns"),
        ).with_columns(duration=pl.col("duration_ns").cast(_DUR))
        df = df.select(
            "src",
            "dst",
            "protocol",
            "sport",
            "dport",
            "first_seen",
            "last_seen",
            "duration",
            "first_seen_ns",
            "last_seen_ns",
            "duration_ns",
            "packets",
            "bytes",
            "src2dst_packets",
            "src2dst_bytes",
            "dst2src_packets",
            "dst2src_bytes",
            "retransmitted_packets",
            "retransmitted_bytes",
        )
        if windows_ns:
            e = pl.DataFrame(env)
            idx = pl.DataFrame({"flow": np.arange(df.height, dtype=np.uint64)})
            for w in windows_ns:
                col = f"envelope_{format_duration(w)}"
                ew = e.filter(pl.col("window_ns") == w).select("flow", pl.col("bytes").alias(col))
                # Sorted by flow: the joined rows go beside the flows by position, and a join's row
                # order is unspecified (join's maintain_order came in polars 1.17, newer than our floor).
                df = df.with_columns(idx.join(ew, on="flow", how="left").sort("flow")[col])
        return df


# ------------------------------------------------------------------------------ traffic matrix


def _matrix(
    source: Source,
    max_pairs: Any,
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
) -> dict[str, Any]:
    horizon_ns, late = _parse_order(reorder_horizon, on_late)
    max_pairs = parse_count(max_pairs, name="max_pairs")
    size = check_size(size)
    fcs = check_fcs(fcs, size)
    srcs = normalize_each(source)
    out, warns = _core.traffic_matrix(
        srcs,
        max_pairs,
        horizon_ns,
        late,
        strict,
        progress,
        **(read := _reading(srcs, mmap, start, end, filter, depth=1)),
        size=size,
        fcs=fcs,
    )
    _warn(_with_range_note(warns, out["accounting"], read["time_range"], (start, end)), stacklevel=4)
    return out


def traffic_matrix(
    source: Source,
    *,
    max_pairs: Count = DEFAULT_MAX_PAIRS,
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
) -> pl.DataFrame:
    """Bytes and packets per ordered host pair (src, dst), heaviest first, with each pair's share of
    all bytes. Packets without IP addresses (ARP, ...) are the row with null src and dst, so the
    bytes column sums to the wire bytes of every packet with a timestamp (those without one
    cannot be put in order, and are counted in the capture's ``info`` only). For throughput per
    pair over time, use ``scan(source, by="pair", bins=...)``.

    Columns: ``src``, ``dst`` (addresses as strings), ``bytes``, ``packets`` (UInt64) and
    ``share`` (of all bytes, Float64: the exact quotient rounded once, also past 2^53 bytes).
    Rows go by ``bytes``, heaviest first; rows of equal bytes by ``src``, then ``dst``, as strings
    (so "10.0.0.10" before "10.0.0.9"), the row without addresses last. ``max_pairs``: most host
    pairs (default 1,000,000, up to about 400 B each); one more is a ``LimitExceededError``
    (``limit == "result"``) at once, as is a pair whose memory cannot be had (the process does not
    abort: lower ``max_pairs``).

    ``size``: what each packet's bytes count, as in ``scan``: 'wire' (default), 'captured',
    'ip', 'payload' or 'l1' (docs/metrics.md). With 'ip' or 'payload' a packet without the
    header it reads (ARP, ...) is left out, so the row without addresses is gone and ``bytes``
    sums to the IP (payload) bytes of the IP packets; ``fcs`` (whether frames end with their
    FCS, for 'l1') as in ``scan``."""
    out = _matrix(source, max_pairs, reorder_horizon, on_late, strict, progress, mmap, start, end, filter, size, fcs)
    with _core.one_ctrl_c:
        p = out["pairs"]
        labels = pl.Series(p["addresses"], dtype=pl.String)
        df = pl.DataFrame(
            {
                "src": labels.gather(p["src"]),
                "dst": labels.gather(p["dst"]),
                "bytes": p["bytes"],
                "packets": p["packets"],
            }
        )
        return df.with_columns(share=_shares(df["bytes"], int(out["total_bytes"]))).sort(
            "bytes", "src", "dst", descending=[True, False, False], nulls_last=True
        )


def _shares(nbytes: pl.Series, total: int) -> pl.Series:
    """Each count's share of ``total``, the exact quotient rounded once to Float64 (null if
    ``total`` is 0). Polars divides a column by a number as a product with its reciprocal, an ulp
    off (78/158 gave 0.49367088607594933), so numpy divides; but only while the total (and so
    every count) is a float exactly: past 2^53 numpy would round both before dividing, and
    Python's int / int, correctly rounded, divides instead."""
    if not total:
        return pl.Series("share", [None] * nbytes.len(), dtype=pl.Float64)
    if total <= _FLOAT_EXACT:
        return pl.Series("share", np.asarray(nbytes.to_numpy(), dtype=np.float64) / total, dtype=pl.Float64)
    return pl.Series("share", [b / total for b in nbytes.to_list()], dtype=pl.Float64)


# Every integer up to 2^53 is a float64 exactly.
_FLOAT_EXACT = 1 << 53


def host_volumes(
    source: Source,
    *,
    max_pairs: Count = DEFAULT_MAX_PAIRS,
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
) -> pl.DataFrame:
    """Per host: bytes and packets sent and received (null host: packets without an address),
    heaviest sender first.

    Columns: ``host`` (an address as a string), ``sent_bytes``, ``sent_packets``,
    ``received_bytes``, ``received_packets`` (UInt64). ``max_pairs``, ``size`` and ``fcs`` as for
    ``traffic_matrix``: the hosts are counted from the host pairs."""
    out = _matrix(source, max_pairs, reorder_horizon, on_late, strict, progress, mmap, start, end, filter, size, fcs)
    with _core.one_ctrl_c:
        h = out["hosts"]
        df = pl.DataFrame(
            {
                "host": pl.Series(h["host"], dtype=pl.String),
                "sent_bytes": h["sent_bytes"],
                "sent_packets": h["sent_packets"],
                "received_bytes": h["received_bytes"],
                "received_packets": h["received_packets"],
            }
        )
        return df.sort("sent_bytes", "host", descending=[True, False], nulls_last=True)


_with_common_doc(flows, traffic_matrix, host_volumes)
