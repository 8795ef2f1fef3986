"""A warning for captures that hold the same packets: one traffic recorded at several places
(a capture on each host, a host and a mirror port, a file given twice) and merged, so that each
such packet counts twice. The Rust core samples the captures (``analysis::shared``)."""

from __future__ import annotations

import os
import warnings
from typing import Any

from . import _burstcore as _core
from ._packets import CaptureWarning
from ._sources import is_rereadable

# A pair is told when at least this share of the smaller sample is in both. Captures of different
# traffic share no packet at all (a packet's identity holds its addresses, IP identification and
# TCP sequence and acknowledgement numbers); a TSO sender and its receiver share only the ACKs,
# still far above this.
MIN_SHARE = 0.01
# Pairs named in the message; the rest are counted.
NAMED_PAIRS = 3


class SharedPacketsWarning(CaptureWarning):
    """Two or more of the captures read together hold the same packets (one traffic recorded at
    several places): merged, each such packet counts twice. Read each capture through a filter of
    its own (``filter=["src host A", "src host B", ...]``), or silence this warning with
    ``warnings.filterwarnings("ignore", category=burstcore.SharedPacketsWarning)``."""


def warn_if_shared(
    sources: list[Any],
    filters: str | list[str | None] | None,
    time_range: tuple[int | None, int | None] | None,
    mmap: bool | None,
    stacklevel: int,
) -> None:
    """Warn (``SharedPacketsWarning``, at ``stacklevel`` counted from the caller) when captures of
    ``sources`` share packets through the filters they are read with. Streams (stdin, pipes, file
    objects) are read once, by the call itself, and are left out of the check."""
    again = [k for k, s in enumerate(sources) if is_rereadable(s)]
    if len(again) < 2:
        return
    each = [filters[k] for k in again] if isinstance(filters, list) else filters
    found = _core.shared_packets([sources[k] for k in again], mmap=mmap, time_range=time_range, filter=each)
    if found is None:
        return
    pairs, hosts = found
    told = [
        (again[a], again[b], shared, min(sampled_a, sampled_b))
        for a, b, _from, shared, sampled_a, sampled_b in pairs
        if shared >= MIN_SHARE * min(sampled_a, sampled_b)
    ]
    if told:
        host_of = {again[k]: h for k, h in enumerate(hosts)}
        warnings.warn(_message(sources, told, host_of, filters), SharedPacketsWarning, stacklevel=stacklevel + 1)


def _message(
    sources: list[Any],
    told: list[tuple[int, int, int, int]],
    host_of: dict[int, str | None],
    filters: str | list[str | None] | None,
) -> str:
    a, b, shared, sampled = told[0]
    if len(told) == 1 and _same_file(sources[a], sources[b]):
        return (
            f"captures {a + 1} and {b + 1} are the same file ({sources[a]}): merged, each of its packets counts "
            "twice. Give it once."
        )
    through = " through their filters" if isinstance(filters, list) else ""
    sample = f"{shared:,} of {sampled:,} packets sampled where both run are in both"
    if len(told) == 1:
        names = [f"{k + 1} ({sources[k]})" if isinstance(sources[k], str) else f"{k + 1}" for k in (a, b)]
        head = f"captures {names[0]} and {names[1]} hold the same packets{through} ({sample})"
    else:
        also = [f"{a + 1} and {b + 1}" for a, b, _, _ in told[1:NAMED_PAIRS]]
        more = len(told) - NAMED_PAIRS
        also += [f"{more} more"] if more > 0 else []
        head = (
            f"{len(told)} pairs of the {len(sources)} captures hold the same packets{through} (captures "
            f"{a + 1} and {b + 1}: {sample}; also {', '.join(also)})"
        )
    involved = sorted({k for a, b, _, _ in told for k in (a, b)})
    hosts = [host_of.get(k) for k in involved]
    if all(hosts) and len(set(hosts)) == len(hosts):
        common = f"({filters}) and " if isinstance(filters, str) else ""
        each = [f"'{common}src host {h}'" if (h := host_of.get(k)) else "None" for k in range(len(sources))]
        hint = ", ".join(each)
    else:
        hint = "'src host <the first capture's host>', 'src host <the second's>', ..."
    return (
        f"{head}: merged, each such packet counts twice. If they are captures of one traffic on several "
        f"hosts, read each through a filter of the packets its host sent, one per capture in their order: "
        f"{hint} (in Python a list for filter=, on the command line --filter once per file); see "
        "docs/filters.md, 'One filter per capture'"
    )


def _same_file(a: Any, b: Any) -> bool:
    try:
        return isinstance(a, str) and isinstance(b, str) and os.path.samefile(a, b)
    except OSError:
        return False
