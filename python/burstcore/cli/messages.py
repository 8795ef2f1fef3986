"""What the command tells on stderr and in a JSON output's meta: the API's messages in the options'
spelling (--start, not start=), the warnings of a read recorded with their details, an error's
details."""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from .._units import plural, printable


def _warn(message: str) -> None:
    # Through the warnings machinery, so that it reads as every other warning of the command
    # ("burstcore plot: warning: …", see `main`).
    warnings.warn(message, UserWarning, stacklevel=2)


class Told(list[str]):
    """The warnings of a read, in the words stderr gives them, and each one's detail as a JSON
    output's ``warning_details`` lists it (`_warning_detail`), by its text."""

    def __init__(self) -> None:
        super().__init__()
        self.by_text: dict[str, dict[str, Any]] = {}

    def details(self, texts: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """One detail per text of `texts` (default: these warnings), in their order."""
        return [self.by_text.get(t) or _warning_detail(t, None) for t in (self if texts is None else texts)]


def _warning_detail(text: str, w: Warning | str | None, name: str | None = None) -> dict[str, Any]:
    """What a program goes by in a warning, beside its text (`text`, as in "warnings"): the
    attributes a CaptureWarning carries (null where unknown, or for a warning of the Python side),
    its class, and `input`, the file it names (`name` when the command read the files one by one)."""
    given = getattr(w, "input", None)
    return {
        "message": text,
        "category": type(w).__name__ if isinstance(w, Warning) else "UserWarning",
        "kind": getattr(w, "kind", None),
        "input": given if given is not None else name,
        "offset": getattr(w, "offset", None),
        "limit": getattr(w, "limit", None),
    }


def _error_detail(e: BaseException) -> dict[str, Any]:
    """An error as info's JSON gives it beside its text ("error"): its class, and the attributes
    a CaptureError (kind, offset, reason, input) or an OSError (errno, filename) carries."""
    detail: dict[str, Any] = {"category": type(e).__name__}
    if isinstance(e, OSError):
        detail.update(errno=e.errno, filename=None if e.filename is None else str(e.filename))
    else:
        for k in ("kind", "offset", "reason", "input", "limit"):
            detail[k] = getattr(e, k, None)
    return detail


@contextlib.contextmanager
def _recorded_warnings(name: str | None = None) -> Iterator[Told]:
    """The warnings raised inside, told when it ends (naming `name` if given), and listed in the
    list it gives (filled then) for a JSON output's meta, in the words stderr gives them (the
    options' spelling: --start 1700000000, not start=1700000000), each with its detail."""
    caught: list[warnings.WarningMessage] = []
    told = Told()
    try:
        with warnings.catch_warnings(record=True) as caught:  # type: ignore[assignment]
            warnings.simplefilter("always")
            yield told
    finally:
        # Outside the recording: told again, each once.
        for w in caught:
            text = _as_options(str(w.message))
            told.append(text)
            told.by_text.setdefault(text, _warning_detail(text, w.message, name))
            if name is not None:
                named = f"{name}: {text}"
                told.by_text.setdefault(named, _warning_detail(named, w.message, name))
            warnings.warn_explicit(f"{name}: {w.message}" if name else w.message, w.category, w.filename, w.lineno)


def _many(n: int, noun: str) -> str:
    """'1 flow', '2 flows', '1,000 flows'."""
    return f"{n:,} {plural(n, noun)}"


# The API's advice names its keyword arguments; on the command line they are options.
_OPTION_SPELLING = (
    ("on_late='drop'", "--on-late drop"),
    ("key='flow' or 'flow4' with windows", "--key flow or flow4 with --windows"),
    ("drop windows for key='biflow'", "drop --windows for --key biflow"),
    ("drop idle_timeout to get windows", "drop --idle-timeout to get --windows"),
    ("drop windows", "drop --windows"),
    ("idle_timeout", "--idle-timeout"),
    ("max_flows", "--max-flows"),
    ("max_pairs", "--max-pairs"),
    ("max_period", "--max-period"),
    ("min_period", "--min-period"),
    ("reorder_horizon", "--reorder-horizon"),
    ("leave threads=None", "leave --threads out"),
    ("threads=", "--threads "),
    ("strict=True", "--strict"),
    ("a coarser bin= or a stretch with start=/end=", "a coarser --bin or a stretch with --start/--end"),
    ("a coarser bin or a stretch (start=/end=)", "a coarser --bins or a stretch (--start/--end)"),
    ("with start=/end= (or a filter=)", "with --start/--end (or a --filter)"),
    ("read fewer packets (start=/end=, filter=)", "read fewer packets (--start/--end, --filter)"),
    ("Give shorter windows or a stretch (start=/end=)", "Give shorter --windows or a stretch (--start/--end)"),
    (" (bin_ns):", ":"),
    ("or with mmap=False", "or with --no-mmap"),
    ("filter= passed none", "--filter passed none"),
    (
        "(read_packets or host_volumes without the filter lists them;",
        "(burstcore matrix --hosts without --filter lists them;",
    ),
    ("start/end [", "--start/--end ["),
    ("size= found the header", "--size found the header"),
    # The undeclared FCS warning of an l1 size (Rust's words).
    ("size='l1' counted each", "--size l1 counted each"),
    ("give fcs='present' if every frame", "give --fcs present if every frame"),
    ("outside start/end", "outside --start/--end"),
    (
        "for seconds give a datetime, an ISO 8601 string or an int of ns (seconds * 10**9)",
        "for seconds give ISO 8601 (2026-11-30T02:48:30.98Z) or ns (the seconds followed by nine 0s)",
    ),
    ("; a Rust caller can raise ReadOptions::limits.max_block_len", ""),
)


# A bound the range note names or suggests, as the API writes it (start=1367526033,
# end='2013-05-02T20:20:40Z'): on the command line, the option and its value.
_BOUND_RE = re.compile(r"\b(start|end)=(?:'([^']*)'|(-?\d+\b))")
# A range whose start is not before its end, as the API names its bounds: "start (2026-…Z) is not
# before end (2026-…Z): the range [start, end) would be empty".
_EMPTY_RANGE_RE = re.compile(r"^start (\([^)]*\)) is not before end (\([^)]*\)): the range \[start, end\)")
# fcs= with a size other than l1, as check_fcs refuses it: "fcs='present' tells size='l1' whether
# frames hold their FCS; size='wire' counts none of its own: give size='l1', or leave fcs out".
_FCS_SIZE_RE = re.compile(
    r"^fcs='(\w+)' tells size='l1' (whether frames hold their FCS); size='(\w+)' (counts none of its own): "
    r"give size='l1', or leave fcs out"
)


def _as_options(message: str) -> str:
    for api, option in _OPTION_SPELLING:
        message = message.replace(api, option)
    message = _EMPTY_RANGE_RE.sub(r"--start \1 is not before --end \2: the range [--start, --end)", message)
    message = _FCS_SIZE_RE.sub(
        r"--fcs \1 tells --size l1 \2; --size \3 \4: give --size l1, or leave --fcs out", message
    )
    return _BOUND_RE.sub(lambda m: f"--{m[1]} {m[2] if m[2] is not None else m[3]}", message)


def _told(message: str) -> str:
    """A warning's or an error's message as the terminal is given it: in the options' spelling,
    with control characters and bidirectional overrides escaped. The messages name the files read
    (as their prefix, or inside: "captures 1 (x.pcap) and 2 ...", "... of x.pcap"), and whoever
    named a file chose its characters: an ESC in it would drive the terminal. No message holds a
    line break of its own, so the whole of it is escaped, wherever in it a name stands."""
    return printable(_as_options(message))
