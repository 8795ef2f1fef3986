"""Option text into values (durations, rates, groupings, quantiles, counts, instants): each
parse raises argparse.ArgumentTypeError saying what is wrong and what to write instead."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from decimal import Decimal


def _split(text: str, example: str = "1us,10us,5ms") -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item; give a comma-separated list such as {example}")
    return items


# The forms a duration takes on the command line (the API's message lists Python types too).
CLI_DURATION_FORMS = "a number with a unit: ns, us, ms, s, min or h (e.g. 250us, 1.5ms, 2s)"


def _duration_ns(text: str, name: str, allow_zero: bool = False, signed: bool = False) -> str:
    """`text` as an exact duration string ('<n>ns'): the API reads a bare number as seconds.
    A bad value is an ArgumentTypeError saying what is wrong and what to write instead."""
    from .._units import DURATION_FORMS, parse_duration

    try:
        return f"{parse_duration(text, name=name, allow_zero=allow_zero, signed=signed)}ns"
    except ValueError as e:
        # argparse names the option already: "argument --gap: '5 parsecs' is not a duration; ..."
        message = str(e).replace(f"{name}=", "", 1).replace(DURATION_FORMS, CLI_DURATION_FORMS)
        raise argparse.ArgumentTypeError(message) from None


def _duration(name: str, allow_zero: bool = False) -> Callable[[str], str]:
    return lambda text: _duration_ns(text, name, allow_zero)


def _durations(name: str) -> Callable[[str], list[str]]:
    return lambda text: [_duration_ns(item, name) for item in _split(text)]


# The forms a rate takes on the command line: every value is a string, and a bare number is told
# its unit is missing (the API's message offers a number of bits per second too).
CLI_RATE_FORMS = (
    "a number with a unit, such as 10Gbps, 400Mbit/s, 1gbit (tc), 1.25GB/s, 100MB/s (B = bytes, b/bit = bits; "
    "k, M, G, T are powers of 1000, Ki, Mi, Gi, Ti powers of 1024)"
)


def _rates(text: str) -> list[int]:
    from .._units import RATE_FORMS, parse_rate

    out = []
    for item in _split(text, "1Gbps,10Gbps"):
        try:
            out.append(parse_rate(item, name="rate"))
        except ValueError as e:
            # argparse names the option already: "argument --rates: 'fast' is not a rate; ..."
            raise argparse.ArgumentTypeError(
                str(e).replace("rate=", "", 1).replace(RATE_FORMS, CLI_RATE_FORMS)
            ) from None
    return out


def _groupings(text: str, one: bool = False) -> list[str]:
    from .._scan import GROUPINGS

    out = []
    for item in _split(text, "all,pair"):
        if item == "host":
            # sizes, gaps and bursts take one grouping: "--by src,dst" would be refused there.
            both = "" if one else " (or both: --by src,dst)"
            raise argparse.ArgumentTypeError(f"'host' is ambiguous: use src or dst{both}")
        if item not in GROUPINGS:
            raise argparse.ArgumentTypeError(f"{item!r} is not a grouping; use one or more of {', '.join(GROUPINGS)}")
        out.append(item)
    return out


def _grouping(text: str) -> str:
    """One grouping: sizes and gaps group by one at a time."""
    names = _groupings(text, one=True)
    if len(names) != 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give one grouping (sizes, gaps and bursts group by one at a time)")
    return names[0]


def _quantile_list(text: str) -> list[float | Decimal]:
    """The q's as written: a float where it is the decimal written (0.07), else the Decimal
    (0.070000000000000000001, whose ranks a float's 0.07 would change)."""
    from .._analysis import _quantiles

    out: list[float | Decimal] = []
    for item in _split(text, "0.5,0.9,0.99"):
        try:
            q, exact = float(item), Decimal(item)
        except (ValueError, ArithmeticError):
            raise argparse.ArgumentTypeError(f"{item!r} is not a number from 0 to 1 (0.5 is the median)") from None
        out.append(q if not exact.is_finite() or exact == Decimal(repr(q)) else exact)
    try:
        _quantiles(out)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return out


def _offset_list(text: str) -> list[str]:
    """Durations that may be below zero ('-3ms'), as exact strings; a bare 0 needs no unit (as
    parse_duration reads it)."""
    return [_duration_ns(item, "offset", allow_zero=True, signed=True) for item in _split(text, "0,-3ms")]


# Counts pass through 64-bit integers (polars' head(), the core's limits).
_LARGEST_COUNT = 2**63 - 1


def _whole_number(text: str, minimum: int) -> int:
    try:
        n = int(text)
    except ValueError:
        n = minimum - 1
    if n < minimum:
        raise argparse.ArgumentTypeError(f"{text!r} is not a {'positive' if minimum else 'non-negative'} whole number")
    if n > _LARGEST_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {_LARGEST_COUNT:,})")
    return n


def _positive_int(text: str) -> int:
    return _whole_number(text, 1)


# The figure of four panels is 12.8 x 8.4 inches: at 1,200 dpi a PNG of 15,360 x 10,080 pixels
# (620 MB of RGBA while drawn), past what any print needs; 100,000 dpi failed in matplotlib only
# after the whole scan.
MIN_DPI, MAX_DPI = 10, 1200


def _dpi(text: str) -> int:
    n = _whole_number(text, 1)
    if not MIN_DPI <= n <= MAX_DPI:
        raise argparse.ArgumentTypeError(
            f"{n} dots per inch is outside {MIN_DPI} to {MAX_DPI} (a figure of {MAX_DPI} dpi is already 15,360 "
            "pixels wide)"
        )
    return n


def _count(text: str) -> int:
    return _whole_number(text, 0)


# The forms an instant takes on the command line (the API's message lists Python types too).
CLI_INSTANT_FORMS = "ISO 8601 (2026-11-30T02:48:30.98Z, UTC unless a zone is given) or integer nanoseconds since 1970"


def _instant(text: str) -> int | str:
    """An ISO 8601 instant ('2026-11-30T02:48:30.98Z', UTC when no zone is given), checked and
    kept as written, or integer ns since 1970 (as the training logs and burstcore's *_ns columns
    give them) as an int: the API tells a plain number far from the packets that was likely
    meant in seconds, never a date. A bad value is an ArgumentTypeError saying what is wrong: no
    instant, out of int64 ns, or finer than the ns."""
    from .._units import INSTANT_FORMS, parse_instant

    try:
        # isdecimal(), not isdigit(): int() refuses '²', a digit to isdigit().
        value: int | str = int(text) if text.strip().removeprefix("-").isdecimal() else text
        parse_instant(value, name="instant")
        return value
    except ValueError as e:
        # argparse names the option already: "argument --end: '9999-12-31' is outside int64 ..."
        message = str(e).replace("instant=", "", 1).replace(f"; give {INSTANT_FORMS}", f": give {CLI_INSTANT_FORMS}")
        raise argparse.ArgumentTypeError(message) from None


def _bin_origin(text: str) -> int | str:
    """--bin-origin: 'epoch', 'start', or an instant as --start takes it."""
    if text in ("epoch", "start"):
        return text
    try:
        return _instant(text)
    except argparse.ArgumentTypeError as e:
        # The instant's message alone left out the two words --bin-origin takes besides.
        raise argparse.ArgumentTypeError(f"{e}; or epoch (the default) or start") from None


def _instant_ns(value: int | str | None) -> int | None:
    """An instant as --start/--end took it (`_instant`), in ns since 1970 (for the JSON meta)."""
    from .._units import parse_instant

    return None if value is None else parse_instant(value, name="instant")


def _horizon(text: str) -> str:
    return _duration_ns(text, "reorder horizon", allow_zero=True)


def _ns(duration: str | None) -> int | None:
    """A duration parsed above ('<n>ns') as integer ns, for the JSON meta."""
    return None if duration is None else int(duration.removesuffix("ns"))
