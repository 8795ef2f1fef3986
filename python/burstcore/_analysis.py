"""What the analyses share: how they read packets, their packet accounting, the quantiles and
the grouping they take, and the help text of the keywords they share with ``scan``. The analyses:
``_flows`` (flows, traffic matrix, host volumes), ``_distributions`` (sizes and gaps), ``_bursts``,
``_iterations`` and ``_superpose``. Each is one pass in the Rust core; results are polars frames.

Every function takes the same sources as ``burstcore.scan`` (a path, a list of paths merged in
timestamp order, bytes, a binary file object), counts wire lengths (pcap ``orig_len``) unless its
``size`` says otherwise (all but ``gaps``, whose gaps have no bytes), and puts packets in
timestamp order with the same bounded reorder buffer (``reorder_horizon``, ``on_late``).

Every function also takes ``strict`` and ``mmap`` as ``scan`` does: by default plain capture files
given by path are read through a memory mapping on Linux (same results, faster; a file truncated
meanwhile raises ``OSError``), with ``read()`` elsewhere; ``mmap=False`` always reads with ``read()``.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np
import polars as pl

from ._scan import GROUPINGS, _as_list
from ._shared import warn_if_shared
from ._types import Filters, Instant
from ._units import WrongTypeError, parse_filters, parse_time_range, said, typed_counts

# Each function builds its frames inside `with _core.one_ctrl_c:`: polars counts SIGINT itself
# and, for a Ctrl-C while it computes, raises its own KeyboardInterrupt yet leaves Python's
# pending, which raised a second one at the caller's next line (9 of 60 SIGINTs into short
# `flows` calls); the block drops that second one (its __exit__, in Rust, says how), and adds
# no frame to the warnings' stacklevel.
_DT = pl.Datetime("ns", "UTC")
_DUR = pl.Duration("ns")
DEFAULT_QUANTILES = (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0)


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


def _first(frame: pl.DataFrame, column: str) -> Any:
    """A one-row frame's value of ``column``, or None if it has no such row or column."""
    return frame[column][0] if column in frame.columns and frame.height else None


def _percent(q: Any, divide: int = 1) -> str:
    """``q`` / ``divide`` written exactly, as decimals where they end: 99.9 / 100 is 0.999."""
    if isinstance(q, (int, np.integer)):
        exact: Any = Decimal(int(q)) / divide
    elif isinstance(q, Decimal):
        exact = q / divide
    elif isinstance(q, Rational):
        return str(Fraction(q) / divide)
    elif isinstance(q, np.floating) and q.dtype.itemsize != 8:
        # By its digits, as `_quantiles` reads it: float32's 99.9 is 99.9000015258789 as a float.
        exact = Decimal(str(q)) / divide
    else:
        exact = Decimal(repr(float(q))) / divide
    return f"{exact.normalize():f}"


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
            # 50 or 99.9: a percentile, likely, written where its fraction was meant.
            finite = not isinstance(q, Decimal) or q.is_finite()  # a NaN Decimal raises as it compares
            percentile = (
                f": for percentile {_percent(q)} give {_percent(q, 100)}" if finite and 1 < value <= 100 else ""
            )
            raise ValueError(f"quantile {said(q)} must be a number from 0 to 1 (0.5 is the median){percentile}")
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


def _with_common_doc(*functions: Any) -> None:
    """Each analysis's help() ends with the keywords it shares with scan."""
    for f in functions:
        f.__doc__ = (f.__doc__ or "").rstrip() + "\n" + _COMMON_DOC
