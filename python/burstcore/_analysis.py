"""The anatomy of training traffic: flows, traffic matrix, sizes and gaps, ON/OFF bursts,
iterations, and superposed jobs. Each is one pass in the Rust core; results are polars frames.

Every function takes the same sources as ``burstcore.scan`` (a path, a list of paths merged in
timestamp order, bytes, a binary file object), counts wire lengths (pcap ``orig_len``) unless its
``size`` says otherwise (all but ``gaps``, whose gaps have no bytes), and puts packets in
timestamp order with the same bounded reorder buffer (``reorder_horizon``, ``on_late``).

Every function also takes ``strict`` and ``mmap`` as ``scan`` does: by default plain capture files
given by path are read through a memory mapping on Linux (same results, faster; a file truncated
meanwhile raises ``OSError``), with ``read()`` elsewhere; ``mmap=False`` always reads with ``read()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from numbers import Rational
from typing import Any, Literal

import numpy as np
import polars as pl

from . import _burstcore as _core
from ._packets import ProgressCallback, _warn, _with_range_note
from ._scan import (
    DEFAULT_HORIZON,
    DEFAULT_MAX_GROUPS,
    GROUPINGS,
    Grouping,
    ScanResult,
    _as_list,
    _build_result,
    _parse_by,
    _parse_order,
    check_closed,
    check_fcs,
    check_size,
)
from ._shared import renamed_source, warn_if_shared
from ._sources import normalize, normalize_each, refuse_a_stream_twice
from ._types import Count, Duration, Durations, Filters, Instant, Quantiles, Rates, Source
from ._units import (
    _I64_MAX,
    LINK_SPEED_GRID_BPS,
    FramesEqual,
    WrongTypeError,
    check_choice,
    default_windows_ns,
    format_duration,
    length_ns,
    parse_bin_origin,
    parse_count,
    parse_duration,
    parse_filters,
    parse_rate,
    parse_time_range,
    plural,
    said,
    typed_counts,
)

# Each function builds its frames inside `with _core.one_ctrl_c:`: polars counts SIGINT itself
# and, for a Ctrl-C while it computes, raises its own KeyboardInterrupt yet leaves Python's
# pending, which raised a second one at the caller's next line (9 of 60 SIGINTs into short
# `flows` calls); the block drops that second one (its __exit__, in Rust, says how), and adds
# no frame to the warnings' stacklevel.
_DT = pl.Datetime("ns", "UTC")
_DUR = pl.Duration("ns")
# Host pairs of traffic_matrix and host_volumes before a LimitExceededError (about 400 B each).
DEFAULT_MAX_PAIRS = 1_000_000
# Groups of sizes and gaps before a LimitExceededError: a hundred times fewer than scan's
# DEFAULT_MAX_GROUPS, as a group's histogram can cost 512 KiB (one counter per size once it has
# seen 32,768 of them) where a scan's group costs 1-1.8 kB: 10,000 of the worst hold 5 GB.
DEFAULT_MAX_DISTRIBUTION_GROUPS = 10_000
DEFAULT_QUANTILES = (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0)
FLOW_KEYS = ("flow", "flow4", "biflow")
# The core's names of a flow's addresses and ports, and the API's (as read_packets has them).
_FLOW_NAMES = {"src_ip": "src", "dst_ip": "dst", "src_port": "sport", "dst_port": "dport"}


def _reading(
    sources: list[Any],
    mmap: bool | None,
    start: Instant | None,
    end: Instant | None,
    filter: Filters | None,
    depth: int = 0,
    merged: bool = True,
) -> dict[str, Any]:
    """The keywords every core analysis takes for how and which packets of `sources` (as
    `normalize_each` gives them) are read, checked (a filter per capture: one for each of them). Captures
    `merged` into one traffic are checked for packets they share (a warning pointing at the user's
    call, `depth` helpers below the public function)."""
    time_range = parse_time_range(start, end)
    filters = parse_filters(filter, captures=len(sources))
    if merged:
        warn_if_shared(sources, filters, time_range, mmap, stacklevel=3 + depth)
    return {"mmap": mmap, "time_range": time_range, "filter": filters}


def _summary(acc: dict[str, Any]) -> pl.DataFrame:
    """One row: every packet read is counted or skipped for one reason (the span of the
    timestamps a time range was tested against is for its note, not a count)."""
    return typed_counts(pl.DataFrame({k: [v] for k, v in acc.items() if k != "ts_span"}).rename({"counted": "packets"}))


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
    windows_ns = sorted({parse_duration(w, name="window", scale=True) for w in _as_list(windows)})
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


def _ratio(num: int | None, den: int | None) -> float | None:
    """num / den rounded once to a float (Python's int / int; dividing the two as float64 rounds
    each first past 2^53); null if either is, and a zero den gives what a float division gives
    (inf, or NaN for 0 / 0)."""
    if num is None or den is None:
        return None
    if den == 0:
        return float("nan") if num == 0 else float("inf")
    return num / den


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


# ---------------------------------------------------------------------------- sizes and gaps


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


def _first(frame: pl.DataFrame, column: str) -> Any:
    """A one-row frame's value of ``column``, or None if it has no such row or column."""
    return frame[column][0] if column in frame.columns and frame.height else None


def _quantiles(quantiles: Any) -> list[Fraction]:
    """The quantiles asked for (default DEFAULT_QUANTILES), each a number in [0, 1], each once,
    exactly as written: the ranks are ⌈q·n⌉ of that (docs/metrics.md). A float is the decimal
    its ``repr`` writes (0.07, not the binary 0.07000000000000000666); a numpy float of another
    precision (float16, float32, longdouble) the decimal numpy writes it as in that precision
    (its shortest form: ``np.float32(0.07)`` is 0.07, not its float64 value 0.07000000029802322,
    whose ceiling of 0.07 · 100 is the 8th value; ``np.longdouble(1) / 3`` is
    0.33333333333333333334 where x86's 80-bit long double holds it, the 2nd of 3 values, where
    read as a float64, 0.3333333333333333, it was the 1st). Not a long double's binary value
    (``as_integer_ratio()``), for the same reason as a float's: ``np.longdouble("0.07")`` of 100
    would then be the 8th; and ``np.longdouble(0.1)`` is float64's 0.1 widened, written
    0.10000000000000000555: give ``np.longdouble("0.1")``. A ``Fraction`` or ``Decimal`` (any
    rational number) is its exact value. A q given twice
    would be a duplicate row (and is more likely a typo, 0.5,0.5 for 0.5,0.95), so it is refused
    rather than dropped, as are two that the Float64 column ``q`` would show as one."""
    qs: list[Fraction] = []
    # Each q given so far by its exact value and by its float (dicts: 10,001 q's, a percentile
    # grid of 0.01 %, were 50 million comparisons in lists, a minute and a half).
    seen: set[Fraction] = set()
    shown: dict[float, Any] = {}
    for q in _as_list(quantiles) if quantiles is not None else DEFAULT_QUANTILES:
        if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating, Decimal, Rational)):
            raise WrongTypeError(
                f"quantile {said(q)} ({type(q).__name__}) must be a number from 0 to 1 (0.5 is the median)"
            )
        # A NaN or infinite Decimal has no Fraction (and compares by raising): refused as a NaN is.
        value: Any = q
        if (isinstance(q, Decimal) and not q.is_finite()) or not 0 <= value <= 1:
            raise ValueError(f"quantile {said(q)} must be a number from 0 to 1 (0.5 is the median)")
        if isinstance(q, np.floating) and q.dtype.itemsize != 8:
            # Not through float: a long double's digits past float64's were lost there.
            exact = Fraction(str(q))
        elif isinstance(q, (float, np.floating)):
            exact = Fraction(repr(float(q)))
        elif isinstance(q, Decimal):
            # 10^digits, Fraction's denominator, would take minutes past a million digits.
            if q and int(q.as_tuple().exponent) < -_MAX_PLACES:
                raise ValueError(
                    f"quantile {said(q)} has more than {_MAX_PLACES:,} decimal places: round it (every q under "
                    "10^-20 is the first value: q·n < 1 for every count)"
                )
            exact = Fraction(q)
        elif isinstance(q, (int, np.integer)):
            exact = Fraction(int(q))
        else:
            exact = Fraction(int(q.numerator), int(q.denominator))
        if exact in seen:
            raise ValueError(f"quantile {said(q)} is given twice: give each quantile once")
        if float(exact) in shown:
            raise ValueError(
                f"quantiles {said(shown[float(exact)])} and {said(q)} differ but are the same float64, "
                f"{said(float(exact))}, in the column q: give one of them"
            )
        qs.append(exact)
        seen.add(exact)
        shown[float(exact)] = q
    return qs


# The most decimal places of a Decimal q read exactly.
_MAX_PLACES = 1000


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


def _one_grouping(by: Any, what: str) -> str | None:
    """``by`` of an analysis that groups by one grouping at a time (``what`` names it in the
    message): a grouping's name, a list of one, or None."""
    if not isinstance(by, str) and by is not None:
        names = _as_list(by)
        if len(names) != 1:
            raise ValueError(f"by={said(by)}: {what} group by one grouping at a time; call them once per grouping")
        by = names[0]  # scan takes a list of groupings; a list of one is fine here too
    if by is not None and not isinstance(by, str):
        raise WrongTypeError(
            f"by={said(by)} ({type(by).__name__}) is not a grouping's name: "
            f"give one of {', '.join(GROUPINGS)} (or None)"
        )
    if by == "host":
        raise ValueError("by='host' is ambiguous: use the grouping 'src' or 'dst'")
    if by is not None and by not in GROUPINGS:
        raise ValueError(f"by={said(by)} is not a grouping; use one of {', '.join(GROUPINGS)} (or None)")
    return None if by is None else str(by)  # a numpy or pandas string as the str it equals


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


# ------------------------------------------------------------------------------------- bursts


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


# --------------------------------------------------------------------------------- iterations


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
    as well, unequal iterations, few of them one period apart, or little of the traffic in them), a
    ``CaptureWarning`` says why and what to do: a longer stretch, or ``min_period``/``max_period``
    around the period.

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


# ------------------------------------------------------------------------------ superposition


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
        raise ValueError(f"{len(vals)} offsets for {n} captures: give one offset per capture")
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
        sorted({parse_duration(w, name="window", scale=True) for w in _as_list(windows)})
        if windows is not None
        else default_windows_ns()
    )
    if rates is not None:
        rates_bps = sorted({parse_rate(r, name="rate") for r in _as_list(rates)})
    else:
        rates_bps = list(LINK_SPEED_GRID_BPS)
    bins_ns = sorted({parse_duration(b, name="bin", scale=True) for b in _as_list(bins)})
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


# The keywords every analysis shares with scan, described once and shown by help() on each.
_COMMON_DOC = """
    Common keywords, as ``scan`` takes them: ``source`` is a capture path ('-' for stdin), a list
    of paths (merged exactly in timestamp order), bytes or a binary file object.
    ``reorder_horizon`` (default 10 ms) and ``on_late`` ('error' raises ``OutOfOrderError`` for
    a packet later than the horizon, 'drop' leaves it out and counts it in ``summary``).
    ``strict`` raises on a capture cut off mid-block instead of warning. ``progress`` is called
    as ``progress(bytes_done, bytes_total_or_None)`` at most every 100 ms and once at the end.
    ``mmap`` reads plain files through a guarded mapping (``None``: on Linux) or with read().
    ``start``/``end`` read only the packets in [start, end) (a datetime, numpy.datetime64, ISO
    8601 string or int ns since 1970); the others are counted in ``summary.skipped_outside_range``,
    and a range holding none of the packets read with a timestamp gets a ``CaptureWarning``
    naming their span, as does a plain number far from them that read as seconds (ms, µs)
    would be among them, or that no one means as ns (docs/metrics.md; a plain int is ns, so
    seconds given as one land in 1970).
    ``filter`` reads only the packets whose headers pass a tcpdump-style expression, e.g.
    ``"host 10.0.0.1 and tcp port 29500"`` (docs/filters.md); the others are counted in
    ``summary.skipped_filtered``, and a filter that passes none of them gets a ``CaptureWarning``
    saying so. Several captures take one expression for all, or a list of one
    per capture (``None`` for one read whole): one capture per host counts a packet between two
    captured hosts once with ``["src host 10.0.0.1", "src host 10.0.0.2", ...]``.
"""

for _f in (flows, traffic_matrix, host_volumes, sizes, gaps, bursts, iterations, superpose):
    _f.__doc__ = (_f.__doc__ or "").rstrip() + "\n" + _COMMON_DOC
