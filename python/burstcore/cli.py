"""The ``burstcore`` command: info, scan, plot and report on packet captures, and the analyses
flows, matrix, iterations, bursts, sizes, gaps and superpose."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import io
import json
import os
import re
import select
import stat
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, NoReturn

import polars as pl

from ._units import format_number, format_quantile, plural, printable

EXIT_OK = 0
EXIT_CAPTURE = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_OUTPUT = 4
EXIT_INTERNAL = 5
EXIT_PIPE = 141
EXIT_INTERRUPTED = 130

EXIT_CODES = f"""exit codes:
  {EXIT_OK}    success
  {EXIT_CAPTURE}    the capture could not be read (not a capture, corrupt, truncated with --strict,
       out of order beyond --reorder-horizon, no permission to read it, an I/O error, ...),
       or a limit such as --max-flows was reached
  {EXIT_USAGE}    bad command line (unknown option, bad value such as --windows '5 parsecs')
  {EXIT_NOT_FOUND}    an input file does not exist (or is a directory)
  {EXIT_OUTPUT}    the output could not be written
  {EXIT_INTERNAL}    internal error (a bug: please report it with the output of --debug)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_PIPE}  standard output was closed early (e.g. piped into head)"""

MAIN_EXAMPLES = """examples:
  burstcore info trace.pcapng
  burstcore scan trace.pcapng --windows 1us,100us,5ms --rates 1Gbps,10Gbps
  burstcore scan a.pcap b.pcap --by pair -o envelope.csv
  burstcore scan trace.pcapng --filter 'net 10.1.0.0/16 and not port 22'
  dumpcap -w - | burstcore scan - --rates 10Gbps
  burstcore plot run1.pcapng run2.pcapng -o compare.png
  burstcore report trace.pcapng.zst -o report.html
  burstcore flows trace.pcapng --key biflow --idle-timeout 1s -o flows.parquet
  burstcore matrix trace.pcapng --hosts
  burstcore iterations trace.pcapng --min-period 10ms --max-period 1s
  burstcore bursts trace.pcapng --gap 100us -o bursts.csv
  burstcore sizes trace.pcapng --by src
  burstcore gaps trace.pcapng --by pair --quantiles 0.5,0.99
  burstcore superpose trace.pcapng trace.pcapng --offsets 0,-3ms --windows 100us,1ms
  burstcore shared host0.pcap host1.pcap host2.pcap   # captures holding the same packets?

Run 'burstcore COMMAND --help' for the options of a command."""

SCAN_EXAMPLES = """examples:
  burstcore scan trace.pcapng
  burstcore scan trace.pcapng --windows 1us,10us,5ms --rates 1Gbps,10Gbps --bins 1ms
  burstcore scan trace.pcapng --by src,pair --top 3
  burstcore scan trace.pcapng --by flow --max-groups 100000   # bound the memory of many flows
  burstcore scan trace.pcapng --filter 'tcp port 29500' --by pair   # tcpdump's filter language
  burstcore scan trace.pcapng -o result.json            # every table in one JSON object
  burstcore scan trace.pcapng -o backlog.csv --table backlog
  burstcore scan a.pcapng b.pcapng -o each.parquet --each   # one scan per file, a 'file' column
  tcpdump -w - | burstcore scan - --format json -o -

Machine formats: .json holds every table (rows as objects; times as ISO 8601 strings with ns,
durations as integer ns), the options, the warnings as text and warning_details (one object per
warning: message, category, kind, input, offset, limit; null where unknown); .csv and .parquet
hold one table (--table, default envelope). Parquet keeps the native types (Datetime ns UTC,
Duration ns). Every instant also has its integer ns column (start_ns, peak_ns, first_ns, ...).
With --by interface, the rows of interface groups say
which interface each is: capture (its place among the files, from 0), source (its path),
interface (its index within that file) and interface_name (pcapng if_name), after group (the
group numbers if0, if1, ... run on from one file's interfaces to the next's)."""

INFO_EXAMPLES = """examples:
  burstcore info trace.pcapng
  burstcore info *.pcap --json                 # or --format json, as every command writing JSON takes
  cat trace.pcap.gz | burstcore info -
  burstcore info trace.pcapng --start 2026-11-30T02:48:30Z --end 2026-11-30T02:48:31Z --filter tcp"""

PLOT_EXAMPLES = """examples:
  burstcore plot trace.pcapng -o trace.png
  burstcore plot ring.pcapng ps.pcapng -o compare.svg      # overlaid for comparison
  burstcore plot trace.pcapng -o trace.pdf --by pair --bins 10ms

Panels: E(τ) and PtM(τ) on log-log axes, B_max(r) against the server rate, and the binned
throughput with detected training iterations shaded (when burstcore can detect them)."""

REPORT_EXAMPLES = """examples:
  burstcore report trace.pcapng -o report.html
  burstcore report trace.pcapng.zst -o report.html --by pair --windows 10us,100us,1ms,5ms

The page is self-contained (figures embedded as data URIs): attach it to a mail or a ticket."""

# The analyses' machine outputs, as scan's: JSON holds every table, CSV and parquet one.
ANALYSIS_FORMATS = """Machine formats, as for scan: .json holds every table with the options, the warnings and
their warning_details (times as
ISO 8601 strings with ns, durations as integer ns); .csv and .parquet hold one table. Parquet keeps
the native types (Datetime ns UTC, Duration ns)."""

FLOWS_EXAMPLES = f"""examples:
  burstcore flows trace.pcapng
  burstcore flows trace.pcapng --key biflow --idle-timeout 1s --top 10
  burstcore flows trace.pcapng --windows 10us,1ms -o flows.parquet   # each flow's own E(τ)
  burstcore flows a.pcap b.pcap --start 2026-11-30T02:48:30Z -o flows.csv
  tcpdump -w - | burstcore flows - --format json -o -

The terminal shows the flows with the most bytes; -o FILE holds every flow, in order of its first
packet, with the columns of burstcore.flows().

{ANALYSIS_FORMATS}"""

MATRIX_EXAMPLES = f"""examples:
  burstcore matrix trace.pcapng                      # bytes per ordered host pair, heaviest first
  burstcore matrix trace.pcapng --hosts              # bytes each host sent and received
  burstcore matrix a.pcap b.pcap -o matrix.csv

Packets without IP addresses (ARP, ...) are the row without addresses, so the bytes add up to every
packet's.

{ANALYSIS_FORMATS}"""

ITERATIONS_EXAMPLES = f"""examples:
  burstcore iterations trace.pcapng
  burstcore iterations trace.pcapng --min-period 10ms --max-period 1s --bin 500us
  burstcore iterations trace.pcapng -o iterations.json  # period_ns, confidence beside the tables
  burstcore iterations trace.pcapng -o summary.csv --table summary

The period comes with a confidence from 0 to 1 (a clean square wave), the autocorrelation's
score times the share of the bytes in the iterations the period is measured over (0 when they
are under three): below about 0.05 treat it as a guess; traffic with no period at all (Poisson
arrivals) scores 0.04-0.14 too, so a confidence above 0.05 does not make a period real. Where
the iterations found do not bear the period out (a stretch of under three periods with fewer
than three whole iterations one period apart, a shorter lag repeating nearly as well whose own
iterations would bear it out, iterations of unequal bytes, few of them one period apart, or
holding under half the bytes) it is marked unsure and a warning says why and what to do; the
summary's period_unsure and periods_seen say so too.

{ANALYSIS_FORMATS}"""

BURSTS_EXAMPLES = f"""examples:
  burstcore bursts trace.pcapng                      # a quiet gap over 1ms ends a burst
  burstcore bursts trace.pcapng --gap 100us --top 50
  burstcore bursts trace.pcapng -o bursts.parquet
  burstcore bursts trace.pcapng -o quantiles.csv --table distributions
  burstcore bursts trace.pcapng --quantiles 0.5,0.99      # of burst sizes, lengths and gaps
  burstcore bursts trace.pcapng --by interface --size ip  # each link's bursts, in IP bytes

{ANALYSIS_FORMATS}"""

SIZES_EXAMPLES = f"""examples:
  burstcore sizes trace.pcapng                       # the quantiles of every packet's size
  burstcore sizes trace.pcapng --by src --top 5
  burstcore sizes trace.pcapng --size payload        # TCP/UDP payload bytes (IP packets only)
  burstcore sizes trace.pcapng --quantiles 0.5,0.9,0.99 -o sizes.json
  burstcore sizes trace.pcapng -o histogram.csv --table histogram   # one row per size seen

The quantiles are exact: the smallest size with at least q of the packets at or below it.

{ANALYSIS_FORMATS}"""

GAPS_EXAMPLES = f"""examples:
  burstcore gaps trace.pcapng                        # gaps between consecutive packets
  burstcore gaps trace.pcapng --by pair --quantiles 0.5,0.99
  burstcore gaps trace.pcapng -o histogram.parquet --table histogram   # log2 buckets

A gap's quantile lies in a log2 bucket [2^(k-1), 2^k - 1] ns narrowed by the exact min and max:
the terminal (lo, hi) and the quantiles table (lo_ns, hi_ns) give both bounds, both included;
the histogram's rows are the buckets, with the same columns lo_ns and hi_ns.

{ANALYSIS_FORMATS}"""

SUPERPOSE_EXAMPLES = f"""examples:
  burstcore superpose job1.pcapng job2.pcapng        # as recorded: offsets 0
  burstcore superpose trace.pcapng trace.pcapng --offsets 0,3ms --windows 100us,1ms
  burstcore superpose a.pcap b.pcap --offsets=-2s,0  # '=' is optional here; see below
  burstcore superpose t.pcapng t.pcapng t.pcapng --random-offsets --max-offset 100ms --seed 7
  burstcore superpose a.pcap b.pcap -o gain.csv      # the gain table; --table envelope for E(τ)
  burstcore superpose a.pcap b.pcap -o own.csv --table singles   # each capture's own E(τ)

Offsets shift each capture's own timestamps: captures recorded at different times need offsets
that bring them together (a warning names the offset that would align a capture that overlaps no
other). An offset list that starts below zero may be written --offsets -2s,0 or --offsets=-2s,0.
The terminal shows the offsets, the multiplexing gain per window (1: the captures' worst bursts
coincide; N for N captures: fully interleaved) and the merge measured as scan measures a capture.
The merge's tables have scan's columns, the interface columns of --by interface too (a file
given twice is two captures, each with its own interface groups).
The terminal and the warnings number the captures from 1, in the order of the FILEs, as every
command's messages do; the JSON, CSV and parquet tables give positions from 0 (singles' capture),
as in Python.

{ANALYSIS_FORMATS}"""

SHARED_EXAMPLES = f"""examples:
  burstcore shared host0.pcap host1.pcap host2.pcap host3.pcap
  burstcore shared /captures/*.pcapng --filter tcp     # each capture through one filter
  burstcore shared a.pcap b.pcap --filter 'src host 10.0.0.1' --filter 'src host 10.0.0.2'
  burstcore shared /captures/*.pcap -o shared.json     # pairs, captures, hosts and filters
  burstcore shared /captures/*.pcap --all-senders      # every packet read: no sender missed

Captures that hold the same packets (one traffic recorded on several hosts, a mirror port beside
a host, one file given twice) count each such packet twice when merged; scan and the analyses
warn about it before they merge. This command runs that check on its own, in milliseconds for
plain files whatever their size: each capture is sampled (1,024 packets) where the others run,
and the samples compared by each packet's identity (docs/filters.md, 'Captures that hold the
same packets'). It shows each capture's host, the pairs whose samples share packets, and the
--filter options under which a merge counts every packet once. The exit code is 0 whether or not
packets are shared: in the JSON, "told" marks the pairs a merge would warn about and "filters"
(null when they cannot be given whole) the filters to give; captures are numbered from 0 there
(a, b, capture), as in Python, and from 1 on the terminal and in the warnings, as every command
numbers them.

{ANALYSIS_FORMATS}"""

SCAN_TABLES = ("envelope", "backlog", "series", "groups", "summary")
DISTRIBUTION_TABLES = ("quantiles", "histogram", "groups", "summary")
SUPERPOSE_TABLES = ("gain", "singles", *SCAN_TABLES)
ITERATIONS_TABLES = ("iterations", "summary")
BURSTS_TABLES = ("bursts", "distributions", "summary")
SHARED_TABLES = ("pairs", "captures")
# Rows of a table the analyses show on the terminal (-o FILE gets them all).
ANALYSIS_TOP = 20
FIGURE_FORMATS = (".png", ".svg", ".pdf")
# Bin widths tried when none is given and the span is unknown (stdin): the plot picks one.
FALLBACK_BINS = ("100us", "1ms", "10ms", "100ms", "1s")


class UsageError(Exception):
    """A bad command line found after parsing (e.g. an output format we cannot write)."""


class _OutputError(Exception):
    """The output file could not be written."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (usage is one --help away)."""

    def error(self, message: str) -> NoReturn:
        # printable: the message may quote what was typed (an unrecognized argument, a file name).
        self.exit(EXIT_USAGE, f"{self.prog}: error: {printable(message)} (see '{self.prog} --help')\n")


# ---------------------------------------------------------------- option values


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
    from ._units import DURATION_FORMS, parse_duration

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
    from ._units import RATE_FORMS, parse_rate

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
    from ._scan import GROUPINGS

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
    from ._analysis import _quantiles

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


def _negative_values(argv: Sequence[str], valued: Collection[str]) -> list[str]:
    """`argv` with '--offsets -3ms,0' joined as '--offsets=-3ms,0', for each option in `valued`
    (those taking a value): argparse takes a value that starts with '-' and is no plain number
    for an option, and told '--windows -1ms' that --windows "expected one argument" instead of
    what is wrong with the value. A plain number ('--top -1') argparse reads itself."""
    out: list[str] = []
    for arg in argv:
        if (
            out
            and out[-1] in valued
            and arg[:1] == "-"
            and arg[1:2] in (*"0123456789", ".")
            and not _PLAIN_NEGATIVE.match(arg)
        ):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


# What argparse itself reads as a negative number, not an option (its _negative_number_matcher).
_PLAIN_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _valued_options(
    parser: argparse.ArgumentParser, command: str | None = None, short: bool = False
) -> dict[str, argparse.Action]:
    """The long options (and the short ones too if `short`) of every command (or of `command`
    alone) that take a value, each with its action."""
    commands = _subparsers(parser)
    parsers = (parser, *commands.values()) if command is None else (commands[command],)
    return {
        name: action
        for own in parsers
        for action in own._actions
        if action.nargs != 0
        for name in action.option_strings
        if short or name.startswith("--")
    }


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
    from ._units import INSTANT_FORMS, parse_instant

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
    return text if text in ("epoch", "start") else _instant(text)


def _instant_ns(value: int | str | None) -> int | None:
    """An instant as --start/--end took it (`_instant`), in ns since 1970 (for the JSON meta)."""
    from ._units import parse_instant

    return None if value is None else parse_instant(value, name="instant")


def _horizon(text: str) -> str:
    return _duration_ns(text, "reorder horizon", allow_zero=True)


def _ns(duration: str | None) -> int | None:
    """A duration parsed above ('<n>ns') as integer ns, for the JSON meta."""
    return None if duration is None else int(duration.removesuffix("ns"))


# ---------------------------------------------------------------- parser


MMAP_HELP = (
    "read plain capture files through a memory mapping (--mmap) or with read() (--no-mmap); same results. "
    "Default: mapped on Linux, where a file truncated meanwhile is an error rather than a crash, unless more "
    "than 8 files x threads are read at once; read() "
    "elsewhere, where --mmap is only for files nothing truncates meanwhile (that kills burstcore with SIGBUS). "
    "Compressed files and stdin are read with read()"
)


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("general")
    # Warnings stay: they say what the figures lack or count twice, as errors say why there are none.
    g.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar and no 'wrote FILE' line: nothing on stderr but warnings and errors",
    )
    g.add_argument("--debug", action="store_true", help="show the full traceback on errors")


def _read_options(g: Any, start_note: str = "") -> None:
    """How the packets are read and put in order: the options scan and the analyses share."""
    g.add_argument(
        "--reorder-horizon",
        type=_horizon,
        default="10ms",
        metavar="DURATION",
        help="how late a packet may arrive and still be put in order (default: 10ms)",
    )
    g.add_argument(
        "--on-late",
        choices=("error", "drop"),
        default="error",
        help="a packet later than the horizon: fail (error, default) or drop and count it",
    )
    g.add_argument(
        "--start",
        type=_instant,
        metavar="INSTANT",
        help="measure from this instant on: ISO 8601 (2026-11-30T02:48:30.98Z) or ns since 1970" + start_note,
    )
    g.add_argument(
        "--end",
        type=_instant,
        metavar="INSTANT",
        help="measure up to (not including) this instant, in the same forms as --start",
    )
    g.add_argument(
        "--filter",
        metavar="EXPR",
        action="append",
        help="read only the packets whose headers pass this tcpdump-style expression, e.g. "
        "'host 10.0.0.1 and tcp port 29500' or 'not port 22' (docs/filters.md); the others are "
        "counted as skipped_filtered. Given once, for every file; given once per file, each file "
        "its own, in order (one capture per host: --filter 'src host A' --filter 'src host B' "
        "counts a packet between them once)",
    )
    g.add_argument("--strict", action="store_true", help="fail on a capture cut off mid-block instead of warning")
    g.add_argument("--mmap", action=argparse.BooleanOptionalAction, default=None, help=MMAP_HELP)


def _output_options(p: argparse.ArgumentParser, tables: Sequence[str], top: int, top_help: str) -> Any:
    """-o, --format, --table (when there are several tables; the first is the default) and --top."""
    g = p.add_argument_group("output")
    g.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write to PATH: .json, .csv or .parquet, or .txt for the terminal's tables (another ending needs "
        "--format); '-' for stdout",
    )
    _format_options(g, ("table", "json", "csv", "parquet"), "output format (default: from -o)")
    if len(tables) > 1:
        g.add_argument(
            "--table",
            choices=tables,
            help=f"which table to write to .csv/.parquet (default: {tables[0]}); for JSON, only this one",
        )
    else:
        p.set_defaults(table=None)
    g.add_argument("--top", type=_positive_int, default=top, metavar="N", help=f"{top_help} (default: {top})")
    return g


def _format_options(g: Any, formats: Sequence[str], help: str) -> None:
    """--format, and --json for --format json: every command that writes JSON takes both
    spellings (info had only --json, the others only --format), and refuses the two together."""
    one = g.add_mutually_exclusive_group()
    one.add_argument("--format", choices=formats, help=help)
    one.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")


def _measure_options(g: Any, rates_default: str) -> None:
    """--windows, --rates, --bins, --by and --closed: what scan and superpose measure, and how."""
    g.add_argument(
        "--windows",
        type=_durations("window"),
        metavar="LIST",
        help="window lengths τ for E(τ) and PtM(τ), e.g. 1us,10us,5ms (default: 1us to 1s in 1-2-5 steps)",
    )
    g.add_argument(
        "--rates",
        type=_rates,
        metavar="LIST",
        help=f"server rates r for B_max(r), e.g. 1Gbps,10Gbps or 1.25GB/s (default: {rates_default})",
    )
    g.add_argument(
        "--bins", type=_durations("bin"), metavar="LIST", help="bin widths of the throughput series, e.g. 1ms"
    )
    # --bin was the unambiguous abbreviation of --bins until --bin-origin came: kept, unlisted.
    g.add_argument("--bin", dest="bins", type=_durations("bin"), help=argparse.SUPPRESS)
    g.add_argument(
        "--bin-origin",
        type=_bin_origin,
        default="epoch",
        metavar="ORIGIN",
        help="where the bins are counted from: epoch (default: multiples of the width since 1970), start "
        "(--start when given, else the first packet counted, as pandas resample(origin='start')), or an instant",
    )
    g.add_argument(
        "--by",
        type=_groupings,
        metavar="LIST",
        help="grouping(s): all, src, dst, pair, flow, flow4, interface, vlan, qp; comma-separated (default: all)",
    )
    g.add_argument(
        "--closed", choices=("left", "both"), default="left", help="windows [s, s+τ) (left, default) or [s, s+τ] (both)"
    )


def _size_option(g: Any) -> None:
    """--size and --fcs of scan and of the analyses that count bytes (all but gaps), which count a
    packet's bytes alike: an analysis's l1 totals are scan's under the same --fcs."""
    from ._scan import FCS_RULES, SIZES

    g.add_argument("--size", choices=SIZES, default="wire", help="bytes counted per packet (default: wire)")
    g.add_argument(
        "--fcs",
        choices=FCS_RULES,
        default="declared",
        help="whether frames end with their FCS, for --size l1: as the capture declares (default), present "
        "(a switch mirror that kept it unsaid; info tells) or absent",
    )


def _scan_options(p: argparse.ArgumentParser, figures: bool = False) -> None:
    from ._scan import DEFAULT_MAX_GROUPS

    g = p.add_argument_group("measurement")
    _measure_options(
        g,
        # plot and report draw B_max(r) as a curve: a finer grid of the mean rate's multiples. They
        # read stdin and pipes into memory first (`_rereadable`), so those get it too; the grid
        # comes from info's whole-capture mean, which a filter, a stretch or another size does not
        # fit, so those get scan's own default (`_scan_for_figures`).
        (
            "24 multiples of the mean rate, 1.05 to 50; with --filter, --start, --end or a --size other "
            "than wire, the mean rate of what is measured times 1.1 to 20"
            if figures
            else "the mean rate times 1.1 to 20; for stdin or a named pipe, which cannot be read twice, the "
            "link speeds 100Mbps to 400Gbps"
        ),
    )
    _size_option(g)
    _max_groups_option(g, DEFAULT_MAX_GROUPS, SCAN_GROUP_MEMORY)
    _read_options(g, start_note="; the mean rate is then over the stretch from it")
    g.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="threads to scan with; the results are the same for any N "
        "(default: one per core, at most 8; --threads 1 leaves the other cores free)",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="burstcore",
        description="Burstiness of packet captures (pcap/pcapng, plain, gzip or zstd) in one pass: "
        "empirical envelopes E(τ), peak-to-mean ratios PtM(τ), backlogs B_max(r), binned throughput; and the "
        "anatomy of training traffic: flows, traffic matrix, training iterations, ON/OFF bursts, packet sizes "
        "and gaps; and captures superposed, as jobs sharing a link. "
        "A FILE of '-' reads standard input. A command's FILEs and options come in any order (its options, "
        "with their values, may also come before it: burstcore -q -o x.csv scan a.pcap, or -qo x.csv); an option's "
        "value is "
        "the one word after it (a list is comma-separated: --windows 1ms,5ms; a filter or a file name of several "
        "words is quoted); after '--' every word is a FILE.",
        epilog=MAIN_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"burstcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "info",
        help="capture summary (like capinfos, with out-of-order and offload hints)",
        description="A capinfos-like summary of each capture: format, interfaces, packets, bytes, first/last "
        "timestamp, duration, mean rate, packets out of timestamp order, frames over the link MTU. With "
        "--start/--end or --filter, the packets, bytes, times and counts are those of the packets chosen (as "
        "read_packets lists them); the format, sections, interfaces, blocks and drop counters stay the file's.",
        epilog=INFO_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="capture file(s); '-' reads stdin")
    _format_options(
        p,
        ("table", "json"),
        "table (default) or json: a JSON list, one object per file, its warnings with warning_details "
        "({file, error, error_detail} for one that cannot be read)",
    )
    p.add_argument(
        "--start",
        type=_instant,
        metavar="INSTANT",
        help="sum up the packets from this instant on: ISO 8601 (2026-11-30T02:48:30.98Z) or ns since 1970",
    )
    p.add_argument(
        "--end",
        type=_instant,
        metavar="INSTANT",
        help="sum up the packets before (not at) this instant, in the same forms as --start",
    )
    p.add_argument(
        "--filter",
        metavar="EXPR",
        action="append",
        help="sum up only the packets whose headers pass this tcpdump-style expression (docs/filters.md). "
        "Given once, for every file; given once per file, each file its own, in order",
    )
    p.add_argument("--strict", action="store_true", help="fail on a capture cut off mid-block instead of warning")
    p.add_argument("--mmap", action=argparse.BooleanOptionalAction, default=None, help=MMAP_HELP)
    _common(p)

    p = sub.add_parser(
        "scan",
        help="E(τ), peak rate, PtM(τ) per window and B_max(r) per rate, as a table or a file",
        description="Measure burstiness in one pass. Several files are merged in timestamp order (as "
        "burstcore.scan([...])) unless --each is given.",
        epilog=SCAN_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="capture file(s); '-' reads stdin")
    _scan_options(p)
    g = _output_options(p, SCAN_TABLES, 5, "groups shown per grouping on the terminal")
    g.add_argument("--each", action="store_true", help="scan each file on its own instead of merging them")
    _common(p)

    p = sub.add_parser(
        "plot",
        help="figure of E(τ), PtM(τ), B_max(r) and the binned throughput (PNG, SVG, PDF)",
        description="Draw E(τ) and PtM(τ) (log-log), B_max(r) and the binned throughput with training "
        "iterations marked. Several files are scanned separately and overlaid.",
        epilog=PLOT_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="capture file(s); '-' reads stdin")
    _scan_options(p, figures=True)
    g = p.add_argument_group("output")
    g.add_argument("-o", "--output", required=True, metavar="PATH", help="figure file: .png, .svg or .pdf")
    g.add_argument(
        "--dpi",
        type=_dpi,
        default=120,
        help=f"resolution of a PNG, {MIN_DPI} to {MAX_DPI} dots per inch (default: 120)",
    )
    g.add_argument("--title", help="figure title (default: the file names)")
    g.add_argument("--top", type=_positive_int, default=8, metavar="N", help="groups drawn per file (default: 8)")
    g.add_argument("--no-iterations", action="store_true", help="do not detect and mark training iterations")
    _common(p)

    p = sub.add_parser(
        "report",
        help="one self-contained HTML page: summary, tables, figures",
        description="Write a single HTML page about one capture (summary, tables, figures embedded), "
        "fit to be mailed to a colleague.",
        epilog=REPORT_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("file", metavar="FILE", help="capture file; '-' reads stdin")
    _scan_options(p, figures=True)
    g = p.add_argument_group("output")
    g.add_argument("-o", "--output", required=True, metavar="PATH", help="the HTML file to write; '-' for stdout")
    g.add_argument("--top", type=_positive_int, default=5, metavar="N", help="groups shown per grouping (default: 5)")
    g.add_argument("--no-iterations", action="store_true", help="do not detect training iterations")
    _common(p)
    _analysis_parsers(sub)
    _shared_parser(sub)
    return parser


def _shared_parser(sub: Any) -> None:
    p = sub.add_parser(
        "shared",
        help="which of several captures hold the same packets (one traffic captured on several hosts), and "
        "the filters that count each packet once when merged",
        description="Sample the captures where they run together and tell which pairs hold the same packets, "
        "each capture's host, and the --filter options (one per file, 'src host <its host>') under which "
        "scan and the analyses count every packet once (burstcore.shared_packets()).",
        epilog=SHARED_EXAMPLES + "\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="two or more capture files; '-' reads stdin")
    g = p.add_argument_group("check")
    g.add_argument(
        "--filter",
        metavar="EXPR",
        action="append",
        help="compare the packets that pass this tcpdump-style expression, as scan would read them: once "
        "for every file, or once per file in order",
    )
    g.add_argument("--start", type=_instant, metavar="INSTANT", help="compare from this instant on, as scan --start")
    g.add_argument("--end", type=_instant, metavar="INSTANT", help="compare up to this instant, as scan --end")
    g.add_argument(
        "--strict",
        action="store_true",
        help="fail on a capture cut off mid-block where the samples (or, with --all-senders, the full read) meet "
        "the cut, instead of warning",
    )
    g.add_argument("--mmap", action=argparse.BooleanOptionalAction, default=None, help=MMAP_HELP)
    g.add_argument(
        "--all-senders",
        action="store_true",
        help="also read every packet of every file for its sender, so that the filters given account for every "
        "sender, not only those the samples saw: a full pass over the files (with a progress bar)",
    )
    _output_options(p, SHARED_TABLES, ANALYSIS_TOP, "pairs shown on the terminal, those told first")
    _common(p)


def _analysis_parser(sub: Any, name: str, summary: str, description: str, examples: str) -> tuple[Any, Any]:
    """A command of one of the analyses of burstcore's Python API; its own options go into the
    group it gives, before `_analysis_end` adds the read, output and general options."""
    p = sub.add_parser(
        name,
        help=summary,
        description=description + " Several files are merged in timestamp order (as a list of paths in Python).",
        epilog=examples + "\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="capture file(s); '-' reads stdin")
    return p, p.add_argument_group("analysis")


def _analysis_end(
    p: argparse.ArgumentParser, g: Any, tables: Sequence[str], rows: str, top: int = ANALYSIS_TOP
) -> None:
    _read_options(g)
    _output_options(p, tables, top, f"{rows} shown on the terminal")
    _common(p)


def _analysis_parsers(sub: Any) -> None:
    from ._analysis import DEFAULT_MAX_PAIRS, FLOW_KEYS
    from ._scan import DEFAULT_MAX_GROUPS

    p, g = _analysis_parser(
        sub,
        "flows",
        "flow records (NFStream/Zeek style), optionally with each flow's own E(τ)",
        "One row per flow: addresses, protocol, ports, first and last packet, packets, bytes and TCP "
        "retransmissions (burstcore.flows()).",
        FLOWS_EXAMPLES,
    )
    g.add_argument(
        "--key",
        choices=FLOW_KEYS,
        default="flow",
        help="flow: directional 5-tuple (default); flow4: (src, sport, dst, dport), protocol ignored, packets "
        "without ports in no flow (with --filter tcp, the CNSM study's flows); biflow: both directions of a "
        "5-tuple are one flow",
    )
    g.add_argument(
        "--idle-timeout",
        type=_duration("idle timeout", allow_zero=True),
        metavar="DURATION",
        help="a gap longer than this ends a flow, and the next packet opens a new one (default: none, one "
        "flow per key for the whole capture)",
    )
    g.add_argument(
        "--windows",
        type=_durations("window"),
        metavar="LIST",
        help="windows τ for each flow's own E(τ), in columns envelope_<τ>, e.g. 10us,1ms "
        "(--key flow or flow4, without --idle-timeout)",
    )
    g.add_argument(
        "--max-flows",
        type=_positive_int,
        default=DEFAULT_MAX_GROUPS,
        metavar="N",
        help=f"most flows, a few hundred bytes of memory each; one more is an error (default: {DEFAULT_MAX_GROUPS:,})",
    )
    _size_option(g)
    _analysis_end(p, g, ("flows",), "flows (those with the most bytes)")

    p, g = _analysis_parser(
        sub,
        "matrix",
        "traffic matrix: bytes and packets per host pair (or per host with --hosts)",
        "Bytes, packets and share of all bytes per ordered host pair (src, dst), heaviest first "
        "(burstcore.traffic_matrix()); with --hosts, bytes and packets each host sent and received "
        "(burstcore.host_volumes()).",
        MATRIX_EXAMPLES,
    )
    g.add_argument("--hosts", action="store_true", help="per host sent and received, instead of per pair")
    g.add_argument(
        "--max-pairs",
        type=_positive_int,
        default=DEFAULT_MAX_PAIRS,
        metavar="N",
        help=f"most host pairs, about 400 bytes of memory each; one more is an error (default: {DEFAULT_MAX_PAIRS:,})",
    )
    _size_option(g)
    _analysis_end(p, g, ("matrix",), "pairs (or hosts), heaviest first,")

    p, g = _analysis_parser(
        sub,
        "iterations",
        "training iteration period (with a confidence) and the trace cut into iterations",
        "Estimate the training iteration period from the traffic alone and segment the trace into "
        "iterations: start, end of the communication phase, end, bytes, packets, peak rate, whether "
        "it is whole (an iteration that --start/--end or the trace's edge cut is not, and is left out "
        "of the period) and whether it is in the run the period is the mean spacing of "
        "(burstcore.iterations()).",
        ITERATIONS_EXAMPLES,
    )
    g.add_argument(
        "--bin", type=_duration("bin"), default="1ms", metavar="DURATION", help="bin width of the rate (default: 1ms)"
    )
    g.add_argument(
        "--min-period",
        type=_duration("min period", allow_zero=True),
        default="5ms",
        metavar="DURATION",
        help="shortest period searched (default: 5ms)",
    )
    g.add_argument(
        "--max-period",
        type=_duration("max period"),
        default="2s",
        metavar="DURATION",
        help="longest period searched (default: 2s)",
    )
    _size_option(g)
    _analysis_end(p, g, ITERATIONS_TABLES, "iterations (the first ones)")

    p, g = _analysis_parser(
        sub,
        "bursts",
        "ON/OFF bursts: each burst, and the distributions of their sizes, lengths and gaps",
        "Split the trace into bursts, maximal runs of packets whose gaps are at most --gap: each "
        "burst's start, duration, bytes, packets and the OFF gap before it, with exact quantiles of "
        "each (burstcore.bursts()).",
        BURSTS_EXAMPLES,
    )
    g.add_argument(
        "--gap",
        type=_duration("gap", allow_zero=True),
        default="1ms",
        metavar="DURATION",
        help="a quiet gap longer than this ends a burst (default: 1ms)",
    )
    g.add_argument(
        "--by",
        type=_grouping,
        metavar="GROUPING",
        help="one grouping: all, src, dst, pair, flow, flow4, interface, vlan, qp; each group's packets are "
        "split into bursts of their own (default: none, the whole traffic only)",
    )
    _quantiles_option(g)
    _size_option(g)
    # Measured: bursts(by="flow") of 200,000 one-packet flows, 3.5 kB a flow in all (docs/limits.md).
    _max_groups_option(g, DEFAULT_MAX_GROUPS, "about 3.5 kB of memory each with the default quantiles")
    _analysis_end(p, g, BURSTS_TABLES, "bursts (the first ones)")

    _distribution_parser(
        sub,
        "sizes",
        "packet sizes: exact quantiles and histogram, overall and per group",
        "Packet sizes in wire bytes (or as --size counts them): exact quantiles and the histogram (one row per "
        "size), for all the traffic and per group of --by (burstcore.sizes()).",
        SIZES_EXAMPLES,
    )
    _distribution_parser(
        sub,
        "gaps",
        "gaps between consecutive packets: quantile bounds and log2 histogram, overall and per group",
        "Inter-arrival gaps between consecutive packets (of each group of --by, within it), in "
        "timestamp order: each quantile's bounds (its log2 bucket narrowed by the exact min and max) "
        "and the log2 histogram (burstcore.gaps()).",
        GAPS_EXAMPLES,
    )

    p, g = _analysis_parser(
        sub,
        "superpose",
        "several captures (or shifted copies of one) merged exactly: E(τ), B_max(r) and the multiplexing gain",
        "Merge captures exactly in timestamp order, capture k shifted by its offset, and measure the merge "
        "as scan does, with the multiplexing gain per window: the sum of each capture's own E(τ) over the "
        "merge's (burstcore.superpose()). A file may repeat: the same capture twice, one copy shifted, "
        "stands for two jobs sharing a link.",
        SUPERPOSE_EXAMPLES,
    )
    offsets = g.add_mutually_exclusive_group()
    offsets.add_argument(
        "--offsets",
        type=_offset_list,
        metavar="LIST",
        help="one duration per FILE, added to its timestamps, and below zero if need be: 0,-3ms or "
        "--offsets=-3ms,0 (default: 0 for each)",
    )
    offsets.add_argument(
        "--random-offsets",
        action="store_true",
        help="the first capture stays put, each other one is shifted by a random offset from 0 to --max-offset "
        "(numpy's PCG64 seeded by --seed: the same seed gives the same offsets everywhere)",
    )
    g.add_argument(
        "--max-offset",
        type=_duration("max offset", allow_zero=True),
        metavar="DURATION",
        help="largest random offset (default: 1s; one iteration period gives random phases)",
    )
    g.add_argument("--seed", type=_count, metavar="N", help="seed of the random offsets (default: 0)")
    _measure_options(g, "the link speeds 100Mbps to 400Gbps, so that one pass suffices")
    _size_option(g)
    _max_groups_option(g, DEFAULT_MAX_GROUPS, SCAN_GROUP_MEMORY)
    _analysis_end(p, g, SUPERPOSE_TABLES, "groups per grouping", top=5)


# Measured on 200,000 one-packet flows, by="flow", one thread, the frames included: 1.7 kB a
# group with 3 windows and 2 rates, 5.7 kB with the default 19 windows and 8 rates.
SCAN_GROUP_MEMORY = "about 1 to 1.8 kB of memory each with a few windows and rates, 5.5 kB with the defaults"


def _max_groups_option(g: Any, default: int, each: str) -> None:
    g.add_argument(
        "--max-groups",
        type=_positive_int,
        default=default,
        metavar="N",
        help=f"most groups of a grouping ({each}); one more is an error (default: {default:,})",
    )


def _quantiles_option(g: Any) -> None:
    """--quantiles of sizes, gaps and bursts, which take the same list with the same default."""
    from ._analysis import DEFAULT_QUANTILES

    g.add_argument(
        "--quantiles",
        type=_quantile_list,
        metavar="LIST",
        help="the quantiles q, numbers from 0 to 1, each once, read to the last digit written, e.g. "
        "0.5,0.9,0.99 (default: " + ",".join(map(format_quantile, DEFAULT_QUANTILES)) + ")",
    )


def _quantiles_asked(args: argparse.Namespace) -> list[float]:
    """The quantiles --quantiles gave, or the default ones, for a JSON meta: as the floats the
    tables' column q shows (a Decimal's digits past a float's are in the command line)."""
    from ._analysis import DEFAULT_QUANTILES

    return list(DEFAULT_QUANTILES) if args.quantiles is None else [float(q) for q in args.quantiles]


def _distribution_parser(sub: Any, name: str, summary: str, description: str, examples: str) -> None:
    """sizes or gaps: the same options, the same tables."""
    from ._analysis import DEFAULT_MAX_DISTRIBUTION_GROUPS

    p, g = _analysis_parser(sub, name, summary, description, examples)
    g.add_argument(
        "--by",
        type=_grouping,
        metavar="GROUPING",
        help="one grouping: all, src, dst, pair, flow, flow4, interface, vlan, qp (default: none, all the traffic "
        "only; the whole traffic is always the group 'all')",
    )
    _quantiles_option(g)
    if name == "sizes":
        # A gap has no bytes: gaps takes no --size.
        _size_option(g)
    _max_groups_option(g, DEFAULT_MAX_DISTRIBUTION_GROUPS, "a few hundred bytes to 512 KiB of memory each")
    _analysis_end(p, g, DISTRIBUTION_TABLES, "groups (those with the most packets)")


# ---------------------------------------------------------------- helpers


@contextlib.contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Any]:
    from ._progress import ProgressBar

    bar = ProgressBar(label, enabled=ProgressBar.wanted(quiet))
    try:
        yield bar
    finally:
        bar.close()


@dataclasses.dataclass(frozen=True)
class _Typed:
    """The command and the words typed after it, and the action of each of its options taking a
    value: a word that is no file may be the second word of an option's value (`_stray_value`).
    Kept with the parse's namespace (`main`), not in the module: two command lines run in one
    process (threads, a program calling main()) each see their own."""

    command: str = ""
    words: Sequence[str] = ()
    valued: Mapping[str, argparse.Action] = dataclasses.field(default_factory=dict)


def _check_streams(files: Sequence[str]) -> None:
    """A named pipe given twice is a usage error, as '-' twice is (`refuse_a_stream_twice`)."""
    from ._sources import refuse_a_stream_twice

    try:
        refuse_a_stream_twice(list(files))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _check_inputs(files: Sequence[str], typed: _Typed) -> None:
    if list(files).count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    _check_streams(files)
    if "-" in files and sys.stdin is None:
        raise UsageError("'-' reads a capture from stdin, which is closed: pipe one in (e.g. dumpcap -w - | ...)")
    if "-" in files and sys.stdin.isatty():
        # It would wait, silently, for a capture typed at the keyboard.
        raise UsageError("'-' reads a capture from stdin, which is a terminal: pipe one in (e.g. dumpcap -w - | ...)")
    from ._sources import check_path

    for f in files:
        if f == "-":
            continue
        try:
            check_path(f)
        except FileNotFoundError as e:
            stray = _stray_value(f, typed)
            if stray is None:
                raise
            raise FileNotFoundError(e.errno, f"{e.strerror}: {f!r}; {stray}", f) from None


# Endings of what is meant as a capture file, not as a word of a filter.
_CAPTURE_ENDINGS = (".pcap", ".pcapng", ".cap", ".gz", ".zst", ".zstd")


def _stray_value(word: str, typed: _Typed) -> str | None:
    """What a missing file typed right after an option's value likely is, and how to write it:
    files and options mix in any order (`_parse`), so '--windows 1ms 2ms', '--filter tcp port
    80' or '-o my results.csv' leave '2ms', 'port' or 'results.csv' to be read as a file. Only a
    word that reads as part of the value (an item of the list, a word of a filter or of an
    output's name rather than a capture) is told so."""
    import shlex

    words, valued = typed.words, typed.valued
    for at, here in enumerate(words):
        if here != word or at == 0:
            continue
        before = words[at - 1]
        option, value = before.split("=", 1) if before.startswith("--") and "=" in before else ("", before)
        if not option and at >= 2 and words[at - 2] in valued:
            option = words[at - 2]
        action = valued.get(option)
        if action is None:
            continue
        # The words of the value typed apart: this one and those after it that are no files either.
        rest = [word]
        for more in words[at + 1 :]:
            if more.startswith("-") or os.path.exists(more):
                break
            rest.append(more)
        if action.metavar == "LIST" and callable(action.type) and _reads_as(action.type, word):
            joined = ",".join([value, *rest])
            return f"it follows {option} {value}: a list is one word, comma-separated ({option} {joined})"
        if option == "--filter" and "/" not in word and not word.lower().endswith(_CAPTURE_ENDINGS):
            quoted = shlex.quote(" ".join([value, *rest]))
            return f"it follows --filter {value}: quote an expression of several words (--filter {quoted})"
        if action.dest == "output" and not word.lower().endswith(_CAPTURE_ENDINGS):
            if value.lower().endswith(_CAPTURE_ENDINGS):
                # 'scan -o a.pcap out.csv': the capture given as the output, the output as a capture.
                swapped = shlex.join(["burstcore", typed.command, value, option, word])
                return (
                    f"it follows {option} {value}, which names the file to write: give the capture without it "
                    f"({swapped})"
                )
            quoted = shlex.quote(" ".join([value, *rest]))
            return (
                f"it follows {option} {value}: {option} takes one path; quote a name of several words "
                f"({option} {quoted})"
            )
    return None


def _reads_as(parse: Callable[[str], Any], word: str) -> bool:
    try:
        parse(word)
    except (argparse.ArgumentTypeError, ValueError):
        return False
    return True


def _check_output(path: str | None, inputs: Sequence[str] = (), closed: str = "give -o FILE") -> None:
    """Fail before a long scan, not after it, when the output cannot be written, or would
    overwrite one of the captures read; `closed` says what to do when stdout is closed."""
    if path in (None, "-"):
        if sys.stdout is None:
            raise _OutputError(f"standard output is closed: {closed}")
        return
    assert path is not None
    if os.path.exists(path) and any(f != "-" and os.path.samefile(f, path) for f in inputs):
        raise _OutputError(f"-o {path!r} is the capture being read: give another file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _OutputError(f"cannot write {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise _OutputError(f"cannot write {path!r}: it is a folder; give a file name")
    if not os.access(folder, os.W_OK):
        raise _OutputError(f"cannot write {path!r}: no permission to write in {folder!r}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise _OutputError(f"cannot write {path!r}: the file exists and is read-only")


@contextlib.contextmanager
def _replacing(path: str, binary: bool = False) -> Iterator[Any]:
    """A file to write that becomes `path` only once all of it is written: a write that fails
    midway (a full disk, an error, Ctrl-C) leaves no half file and the old one, if any, intact.
    A device or a pipe given as `path` (/dev/stdout, a FIFO) is written directly."""
    target = os.path.realpath(path)
    encoding = None if binary else "utf-8"
    mode = "wb" if binary else "w"
    if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
        with open(target, mode, encoding=encoding) as f:
            yield f
        return
    folder, name = os.path.split(target)
    fd, part = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
    try:
        # The descriptor is owned by the file object at once, so that it is closed whatever
        # fails after (a filesystem that refuses chmod): else each such call kept one open.
        with os.fdopen(fd, mode, encoding=encoding) as f:
            # mkstemp makes the file private (0600); the output gets what open() would give it.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(part, 0o666 & ~umask)
            yield f
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        if path == "stdout":
            # What stays in its buffer would fail again at exit ("Exception ignored", exit 120).
            _silence_stdout()
        raise _OutputError(f"cannot write {path!r}: {e.strerror or e}") from e


def _silence_stdout() -> None:
    """Standard output pointed at /dev/null: after a failed write (a reader gone, a full disk),
    Python's own flush at exit finds nothing to fail on."""
    # Its descriptor first: a stdout without one (a StringIO, closed) has nothing to flush at exit.
    with contextlib.suppress(OSError, ValueError):
        target = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, target)
        finally:
            # The copy is all it takes: a program that calls main() again and again (its output
            # to a fresh pipe or file each time) must not be left one descriptor more each time.
            os.close(devnull)


def _label(f: str) -> str:
    """A file as the terminal, a figure or a report names it: its base name, shown safely (a name
    holding an ESC would drive the terminal it is printed to)."""
    return "stdin" if f == "-" else printable(_shown(os.path.basename(f)))


def _named(path: str) -> str:
    """A file as warnings and errors name it: its path as given ('stdin' for '-'), escaped when
    it is told (`_told`)."""
    return "stdin" if path == "-" else path


def _shown(path: str) -> str:
    """A file name as text: bytes that are no UTF-8 (kept by Python as lone surrogates, which
    open() takes but polars and an HTML file refuse) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _valid_text(value: Any) -> Any:
    """`value` (a JSON document's dicts, lists and strings) with every string as `_shown` gives
    it: a file name's bytes that are no UTF-8 came out as lone surrogate escapes ("\\udce9"),
    which strict parsers refuse (Rust's serde_json rejects the whole document) and others turn
    into U+FFFD, while the tables' `source` and `file` columns and the warnings had U+FFFD."""
    if isinstance(value, str):
        return _shown(value)
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid_text(v) for v in value]
    return value


def _rereadable(files: Sequence[str]) -> list[Any]:
    """Sources that can be read several times (info, scan, iterations): stdin, a named pipe or a
    shell's ``<(...)`` is read into memory once; a regular file is left to be opened each time."""
    from ._sources import is_rereadable

    def once(f: str) -> Any:
        if f == "-":
            return _read_whole(sys.stdin.buffer)
        if is_rereadable(f):
            return f
        with open(f, "rb") as stream:
            return _read_whole(stream)

    return [once(f) for f in files]


def _read_whole(stream: Any) -> bytes:
    """All of a stream that cannot be read twice, a chunk at a time, once its first bytes show
    a capture: what starts otherwise (/dev/zero, a text) is handed on as those bytes alone, for
    the reader to say what it is, instead of being read into memory without end."""
    from . import _burstcore as _core

    head = _read_some(stream)
    while head and len(head) < 4 and (more := _read_some(stream)):
        head += more
    if not _core.starts_like_capture(head):
        return head
    chunks = [head]
    while chunk := _read_some(stream):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_some(stream: Any) -> bytes:
    """The next bytes of a stream (empty at its end), after waiting for them in poll().

    Importing polars installs a SIGINT handler that restarts an interrupted read(), so a Ctrl-C
    would wait for the writer. poll() is never restarted, whatever the handler's flags, so the
    wait returns and Python raises KeyboardInterrupt; changing the flag instead
    (signal.siginterrupt) would outlive the command in a program that calls main(). read1 of
    more than the buffer reads the descriptor directly, so nothing waits in the buffer while
    poll() waits on the descriptor."""
    if not hasattr(stream, "read1"):
        return bytes(stream.read(1 << 20))
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no descriptor, or no poll()
        fd = stream.fileno()
        waiting = select.poll()
        waiting.register(fd, select.POLLIN | select.POLLPRI)
        waiting.poll()
    return bytes(stream.read1(1 << 20))


def _read_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The API's keywords for the read options (`_read_options`)."""
    return {
        "reorder_horizon": args.reorder_horizon,
        "on_late": args.on_late,
        "strict": args.strict,
        "mmap": args.mmap,
        "start": args.start,
        "end": args.end,
        "filter": args.filter,
    }


def _read_kwargs_asked(args: argparse.Namespace) -> dict[str, Any]:
    """`_read_kwargs` without the options left at their defaults: a call with none asked for
    stays the plain public one."""
    from ._scan import DEFAULT_HORIZON

    defaults = {"reorder_horizon": _horizon(DEFAULT_HORIZON), "on_late": "error", "strict": False}
    return {k: v for k, v in _read_kwargs(args).items() if v != defaults.get(k)}


def _scan_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "windows": args.windows,
        "rates": args.rates,
        "bins": args.bins,
        "bin_origin": args.bin_origin,
        "by": args.by,
        "size": args.size,
        "fcs": args.fcs,
        "closed": args.closed,
        "threads": args.threads,
        "max_groups": args.max_groups,
        **_read_kwargs(args),
    }


def _prepare_output(args: argparse.Namespace) -> str:
    """The output format, after checking the inputs and that the output can be written: before a
    long read, not after it."""
    _check_inputs(args.files, args.typed)
    _check_output(args.output, args.files)  # a folder is told as one, before its name's ending is looked at
    fmt = _output_format(args)
    if fmt == "parquet" and args.output in (None, "-") and sys.stdout is not None and sys.stdout.isatty():
        # Parquet is binary: on a terminal it is noise, and can leave the terminal in a bad state.
        raise UsageError("parquet is binary and standard output is a terminal: give -o FILE.parquet, or pipe it")
    if args.table and fmt == "table":
        raise UsageError(
            "--table chooses what goes into a .csv, .parquet or .json output (the terminal's tables "
            "show them all): give -o FILE with one of those endings, or --format"
        )
    return fmt


def _read_merged(args: argparse.Namespace, analyse: Callable[..., Any], **kwargs: Any) -> tuple[Any, Told]:
    """`analyse` (scan or an analysis) of args.files, several merged in timestamp order as the API
    merges a list of paths, with a progress bar; its result and the capture warnings it gave."""
    files = args.files
    src: Any = files[0] if len(files) == 1 else list(files)
    _reading_now(*files)
    label = files[0] if len(files) == 1 else f"{len(files)} files merged"
    with _progress(_label(label), args.quiet) as bar, _recorded_warnings() as told:
        result = analyse(src, progress=bar, **kwargs)
    return result, told


def _title(files: Sequence[str]) -> str:
    """What a terminal table is about: the file, stdin, or the files merged."""
    if len(files) == 1:
        return "stdin" if files[0] == "-" else printable(_shown(files[0]))
    return f"{len(files)} files merged: " + ", ".join(printable(_shown(f)) for f in files)


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


# The inputs being read, so a capture error can name them (the core's message gives only the
# offset). A context variable, set afresh by each `main`: a program that calls main() from
# several threads gets each command's own files named, and one that calls it again never gets
# the files of an earlier command.
_READING: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("_READING", default=())


def _reading_now(*files: str) -> None:
    _READING.set(files)


def _warn(message: str) -> None:
    # Through the warnings machinery, so that it reads as every other warning of the command
    # ("burstcore plot: warning: …", see `main`).
    warnings.warn(message, UserWarning, stacklevel=2)


# ---------------------------------------------------------------- machine formats


def machine_frame(df: pl.DataFrame) -> pl.DataFrame:
    """For CSV/JSON: times as ISO 8601 strings with ns, durations as integer ns (``<name>_ns``),
    NaN and infinities as null."""
    out = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Datetime):
            out.append(col.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").alias(name))
        elif isinstance(dtype, pl.Duration):
            if f"{name}_ns" not in df.columns:
                out.append(col.dt.total_nanoseconds().alias(f"{name}_ns"))
        elif dtype.is_float():
            # JSON has no NaN or infinity (the write failed halfway); null says "no value" in
            # JSON and CSV alike.
            out.append(pl.when(col.is_finite()).then(col).alias(name))
        else:
            out.append(col)
    return df.select(out)


def _tables(result: Any) -> dict[str, pl.DataFrame]:
    return {name: _with_interfaces(result, getattr(result, name)) for name in SCAN_TABLES}


def _with_file(results: Sequence[tuple[str, Any]]) -> dict[str, pl.DataFrame]:
    merged: dict[str, pl.DataFrame] = {}
    for name in SCAN_TABLES:
        frames = [
            _with_interfaces(r, getattr(r, name)).select(pl.lit(_shown(f)).alias("file"), pl.all()) for f, r in results
        ]
        merged[name] = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
    return merged


# What a written table adds after `group` for the groups by interface, from ScanResult.interfaces.
INTERFACE_COLUMNS = ("capture", "source", "interface", "interface_name")


def _with_interfaces(result: Any, df: pl.DataFrame) -> pl.DataFrame:
    """`df` (a table of `result` with `by` and `group` columns), for a file: with a scan by
    interface, each interface group's capture (from 0), its source (the path), the interface's
    index within it and its pcapng name, after `group` (null for the other groupings' rows).
    A file holds one table, and `if3` names no capture: what the terminal prints beside the
    tables (`_print_interface_captures`) goes into each row instead."""
    if "interface" not in (result.config.get("by") or ()) or not {"by", "group"} <= set(df.columns):
        return df
    ifs = result.interfaces.select(
        pl.lit("interface").alias("by"),
        "group",
        "capture",
        "source",
        "interface",
        pl.col("name").alias("interface_name"),
    )
    at = df.columns.index("group") + 1
    order = [*df.columns[:at], *INTERFACE_COLUMNS, *df.columns[at:]]
    # Rows in df's order through a row index, not join(maintain_order=): polars < 1.17 has no such
    # keyword and pyproject's floor is 1.10.
    row = "_row" + "_" * max((len(c) for c in df.columns), default=0)
    return df.with_row_index(row).join(ifs, on=["by", "group"], how="left").sort(row).select(order)


def _output_format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    if args.output is None:
        return "table"
    if args.output == "-":
        return "json"
    ext = os.path.splitext(args.output)[1].lower()
    formats = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".txt": "table"}
    if ext not in formats:
        raise UsageError(
            f"cannot tell the format of {args.output!r}: end it in .json, .csv, .parquet or .txt"
            " (the terminal's tables), or give --format"
        )
    return formats[ext]


def _emit(
    fmt: str,
    tables: dict[str, pl.DataFrame],
    meta: dict[str, Any],
    args: argparse.Namespace,
    show: Callable[[], None],
) -> int:
    """The result on the terminal (`show` prints it), or `tables` in a machine format."""
    if fmt == "table":
        _to_terminal(args.output, show)
    else:
        _write_machine(fmt, tables, meta, args)
    return EXIT_OK


def _to_terminal(output: str | None, show: Callable[[], None]) -> None:
    target = output if output not in (None, "-") else None
    with _writing(target or "stdout"), contextlib.ExitStack() as stack:
        if target is not None:
            # -o out.txt: the tables the terminal would show, into the file.
            out = stack.enter_context(_replacing(target))
            stack.enter_context(contextlib.redirect_stdout(out))
        show()
        if target is None:
            _flush_stdout()


def _write_machine(fmt: str, tables: dict[str, pl.DataFrame], meta: dict[str, Any], args: argparse.Namespace) -> None:
    """`tables` (in the order given; the first is the default --table) with `meta` (JSON only)."""
    target = args.output if args.output not in (None, "-") else None
    with _writing(target or "stdout"):
        _write_tables(fmt, tables, meta, args, target)


def _write_tables(
    fmt: str, tables: dict[str, pl.DataFrame], meta: dict[str, Any], args: argparse.Namespace, target: str | None
) -> None:
    if fmt in ("json", "csv"):
        chunks = _json_chunks(meta, tables, args) if fmt == "json" else _csv_chunks(_chosen(tables, args))
        if target is None:
            for text in chunks:
                _to_stdout(text.encode())
        else:
            with _replacing(target) as f:
                for text in chunks:
                    f.write(text)
        return
    df = _chosen(tables, args)
    if fmt == "parquet":
        # Into memory first: polars reports a failed write to a file (a full disk) as its own
        # ComputeError, which would read as burstcore's fault; open() raises OSError.
        buf = io.BytesIO()
        df.write_parquet(buf)
        if target is None:
            _to_stdout(buf.getvalue())
        else:
            with _replacing(target, binary=True) as f:
                f.write(buf.getvalue())


def _chosen(tables: dict[str, pl.DataFrame], args: argparse.Namespace) -> pl.DataFrame:
    """The table for a CSV or parquet file: --table, else the command's first."""
    return tables[args.table or next(iter(tables))]


# Rows turned into text at once: a scan by flow can have millions, and the whole document as
# Python objects took 14 GB for 1 M flows (a slice at a time holds a few MB).
_ROWS_AT_ONCE = 20_000


def _json_chunks(meta: dict[str, Any], tables: dict[str, pl.DataFrame], args: argparse.Namespace) -> Iterator[str]:
    """One JSON document, {meta..., table: [rows]}, in pieces of at most `_ROWS_AT_ONCE` rows:
    the text json.dumps gives for the whole document (", " and ": " between items, non-ASCII as
    \\u escapes, integers exact)."""
    chosen = [args.table] if args.table else list(tables)
    head = json.dumps(_valid_text(dict(meta)), allow_nan=False, default=str)
    yield head[:-1]  # the meta object, open for the tables
    sep = ", " if meta else ""
    for name in chosen:
        df = machine_frame(tables[name])
        yield f"{sep}{json.dumps(name)}: ["
        sep = ", "
        for at in range(0, df.height, _ROWS_AT_ONCE):
            text = ", ".join(_json_rows(df.slice(at, _ROWS_AT_ONCE)))
            yield text if at == 0 else ", " + text
        yield "]"
    yield "}\n"


def _json_rows(df: pl.DataFrame) -> list[str]:
    """Each row of `df` as json.dumps(row, allow_nan=False, default=str) writes it, built a column
    at a time by polars (a row at a time took 20 µs). A value whose text polars cannot give as
    json.dumps does (a string with a character to escape, a float written with an exponent, a
    list) leaves its row, or its table, to json.dumps."""
    parts: list[pl.Expr] = []
    odd: list[pl.Expr] = []
    for k, (name, dtype) in enumerate(df.schema.items()):
        expr = _json_value(pl.col(name), dtype)
        if expr is None:
            return [json.dumps(r, allow_nan=False, default=str) for r in df.to_dicts()]
        parts += [pl.lit(("{" if k == 0 else ", ") + json.dumps(name) + ": "), expr[0]]
        odd += expr[1:]
    if not parts:
        return ["{}"] * df.height
    built = df.select(pl.concat_str([*parts, pl.lit("}")]), pl.any_horizontal(pl.lit(False), *odd).alias("odd"))
    rows: list[str] = built.to_series(0).to_list()
    if built["odd"].any():
        at = built["odd"].arg_true().to_list()
        for i, r in zip(at, df[at].to_dicts(), strict=True):
            rows[i] = json.dumps(r, allow_nan=False, default=str)
    return rows


# Printable ASCII but '"' and '\': what json.dumps writes as it is in a string (ensure_ascii).
_JSON_AS_IS = r"^[ !#-\[\]-~]*$"


def _json_value(col: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr] | tuple[pl.Expr, pl.Expr] | None:
    """(the text json.dumps gives for each value, [where polars' text may differ]), or None for a
    type left to json.dumps."""
    if dtype.is_integer():
        return (col.cast(pl.String).fill_null("null"),)
    if dtype == pl.Boolean:
        return (pl.when(col).then(pl.lit("true")).when(col.not_()).then(pl.lit("false")).otherwise(pl.lit("null")),)
    if dtype == pl.Null:
        return (pl.lit("null"),)
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        text = col.cast(pl.String)
        return (
            pl.concat_str(pl.lit('"'), text, pl.lit('"')).fill_null("null"),
            ~text.str.contains(_JSON_AS_IS).fill_null(True),
        )
    if dtype.is_float():
        # Polars writes a finite float with the shortest digits that read back, as Python's repr
        # does, and in the same layout for magnitudes in [1e-4, 1e16) (checked on 7·10^6 values;
        # tests/test_cli_json.py keeps checking its bounds and every exponent);
        # repr writes the others with an exponent (1e-05, not 0.00001), and json.dumps raises for
        # NaN and infinities (machine_frame made them null).
        x = col.cast(pl.Float64)
        size = x.abs()
        plain = x.is_finite() & (((size >= 1e-4) & (size < 1e16)) | (size == 0))
        return (x.cast(pl.String).fill_null("null"), plain.not_().fill_null(False))
    return None


def _csv_chunks(df: pl.DataFrame) -> Iterator[str]:
    df = machine_frame(df)
    if df.height == 0:
        yield df.write_csv()
    for at in range(0, df.height, _ROWS_AT_ONCE):
        yield df.slice(at, _ROWS_AT_ONCE).write_csv(include_header=at == 0)


def _to_stdout(data: bytes) -> None:
    """All of `data` to stdout. Unbuffered (PYTHONUNBUFFERED), a large write into a pipe whose
    reader left (`| head`) returns short and raises nothing: write on until the pipe says it is
    broken, so that the command ends as `--help` says (exit 141)."""
    sys.stdout.flush()
    out = sys.stdout.buffer
    view = memoryview(data)
    while view:
        n = out.write(view)
        view = view[n if n is not None else len(view) :]
    out.flush()


# ---------------------------------------------------------------- terminal tables


def _print_result(title: str, result: Any, top: int) -> None:
    from .plot import top_groups
    from .report import (
        backlog_table,
        envelope_table,
        frame_rate_note,
        groups_table,
        interface_name,
        ratio_note,
        scan_summary_table,
        series_table,
        text_table,
    )

    print(f"== {title}")
    print(text_table(scan_summary_table(result)))
    for by in result.config.get("by") or ["all"]:
        groups = top_groups(result, by, top)
        n_all = result.groups.filter(pl.col("by") == by).height
        if by != "all":
            print(f"\nGroups by {by}: {n_all} (largest {len(groups)} shown; all of them with -o FILE)")
            print(text_table(groups_table(result, by, top)))
        if by == "interface":
            _print_interface_captures(result)
        for g in groups:
            name = "all traffic" if by == "all" else printable(f"{by} {g}" + interface_name(result, by, g))
            print(f"\nEnvelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — {name}")
            print(text_table(envelope_table(result, by, g)))
            _note(ratio_note(result, by, g, "PtM(τ)"))
            _note(frame_rate_note(result, by, g))
            bt = backlog_table(result, by, g)
            if bt[1]:
                print(f"\nBacklog B_max(r) at a constant-rate server — {name} (rates: {result.config.get('rates')})")
                print(text_table(bt))
                _note(ratio_note(result, by, g, "r/ρ"))
    st = series_table(result, top)
    if st[1]:
        print("\nBinned throughput (the bins themselves: -o FILE --table series)")
        print(text_table(st))
    print()


def _print_interface_captures(result: Any) -> None:
    """Which capture each interface group is of, when several captures were scanned as one: their
    labels (if0, if1, ...) run on from one capture to the next and name no file."""
    from .report import text_table

    ifs = result.interfaces
    if ifs["capture"].n_unique() < 2:
        return
    print("\nInterface groups of each capture (a capture's interfaces follow those of the captures before it)")
    rows = [
        [group, printable(source), str(interface), printable(name) if name is not None else "-"]
        for group, source, interface, name in ifs.select("group", "source", "interface", "name").iter_rows()
    ]
    print(text_table((["group", "capture", "interface", "name"], rows)))


def _note(note: str | None, indent: str = "  ") -> None:
    """A line under a table saying what its '-' cells lack and why, if they lack something."""
    if note:
        print(indent + printable(note))


# ---------------------------------------------------------------- commands


def cmd_info(args: argparse.Namespace) -> int:
    import burstcore
    from burstcore._packets import info_of

    several = len(args.files) > 1
    _check_output(None, closed="info writes only there, so redirect it (> FILE)")
    # Every file, or (several) only the rules for stdin: a missing file is then one result.
    _check_inputs(args.files if not several else [f for f in args.files if f == "-"], args.typed)
    _check_streams(args.files)
    # Each file on its own, as capinfos: one that cannot be read (or is missing) is reported (on
    # stderr, and in --json as {"file", "error"}) and the others still are; the exit code then
    # says so, the worst of them (a missing file over an unreadable one).
    infos: list[tuple[str, Any]] = []
    details: list[dict[str, Any]] = []  # each file's warning_details, or its error_detail
    worst = EXIT_OK
    for k, f in enumerate(args.files):
        _reading_now(f)
        try:
            if several:
                _check_inputs([f], args.typed)
            with _progress(_label(f), args.quiet) as bar, _named_warnings(f if several else None) as told:
                infos.append(
                    (
                        f,
                        info_of(
                            f,
                            strict=args.strict,
                            progress=bar,
                            mmap=args.mmap,
                            start=args.start,
                            end=args.end,
                            filter=_filter_for(args, k),
                            # A ring-buffer set's empty last file is a cut file, as scan has it.
                            one_of_several=several,
                        ),
                    )
                )
            # Its warnings as to_dict() has them (not in the options' spelling), each with its detail.
            ws = infos[-1][1].warnings
            found = told.details([_as_options(w) for w in ws])
            details.append({"warning_details": [{**d, "message": w} for w, d in zip(ws, found, strict=True)]})
        except (burstcore.CaptureError, OSError) as e:
            if not several:
                raise
            code, message = _classify(e)
            worst = max(worst, code)
            print(f"burstcore info: error: {_told(message)}", file=sys.stderr)
            infos.append((f, message))
            details.append({"error_detail": _error_detail(e)})
    # A failed write is the output's (exit 4, or 141 for a reader gone), not the capture's.
    with _writing("stdout"):
        if args.format == "json":
            doc = [
                {"file": f, "error": _as_options(i), **d} if isinstance(i, str) else {"file": f, **i.to_dict(), **d}
                for (f, i), d in zip(infos, details, strict=True)
            ]
            print(json.dumps(_valid_text(doc), default=str, allow_nan=False))
        else:
            for k, (f, i) in enumerate(infos):
                if several:
                    print(("\n" if k else "") + f"== {printable(_shown(f))}")
                print(f"error: {_told(i)}" if isinstance(i, str) else i)
        _flush_stdout()
    return worst


def _flush_stdout() -> None:
    """What print() left in stdout's buffer, written now: at exit, Python tells a write that
    fails (a reader gone, a full disk) as "Exception ignored ... BrokenPipeError" and exits 120,
    where the command would exit 141 or 4 (`main`). Only a block-buffered stdout (a pipe or a
    file, without PYTHONUNBUFFERED) holds anything by then."""
    sys.stdout.flush()


@contextlib.contextmanager
def _named_warnings(name: str | None) -> Iterator[Told]:
    """The capture warnings raised inside, each naming `name` (one of several files read), and
    the record of them `_recorded_warnings` gives."""
    with _recorded_warnings(name) as told:
        yield told


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


def cmd_scan(args: argparse.Namespace) -> int:
    import burstcore
    from burstcore._packets import info_of

    fmt = _prepare_output(args)
    kwargs = _scan_kwargs(args)
    results: list[tuple[str, Any]] = []
    told = Told()  # every warning's detail, by its text
    # --each, as stderr words them: in the options' spelling, each naming its file when several.
    each_told: list[str] = []
    if args.each:
        for k, f in enumerate(args.files):
            _reading_now(f)
            name = f if len(args.files) > 1 else None
            with _progress(_label(f), args.quiet) as bar, _named_warnings(name) as own_told:
                own = {**kwargs, "filter": _filter_for(args, k)}
                try:
                    results.append((f, burstcore.scan(f, progress=bar, **own)))
                except burstcore.NotACaptureError as e:
                    if name is None or e.offset != 0:
                        raise
                    # Of several files, one cut before its magic (a ring-buffer set's empty last
                    # file) is a cut file, as the merged scan has it: warned of (strict: refused,
                    # and junk still is), with no rows. info reads it as one of several.
                    info_of(f, strict=args.strict, mmap=args.mmap, one_of_several=True)
                    results_of_f = None
                else:
                    results_of_f = results[-1][1]
            told.by_text.update(own_told.by_text)
            if results_of_f is None:
                each_told += [f"{f}: {t}" for t in own_told]
            else:
                each_told += [_as_options(f"{f}: {w}" if name else w) for w in results_of_f.warnings]
    else:
        r, told = _read_merged(args, burstcore.scan, **kwargs)
        results.append((_title(args.files), r))

    def show() -> None:
        for label, r in results:
            _print_result(_title([label]) if args.each else label, r, args.top)

    if fmt == "table":
        return _emit(fmt, {}, {}, args, show)
    tables = _with_file(results) if args.each else _tables(results[0][1])
    meta = {
        "burstcore": burstcore.__version__,
        "command": args.command,
        "files": list(args.files),
        "merged": not args.each,
        # --each: one config per scan, in the order of "files" (a file given twice, through two
        # filters, is scanned twice; one cut before its magic has none, only its warning).
        # --mmap as given (null: the platform's default): the API's
        # config leaves it out, as it changes how the files are read, not what is measured.
        "config": {**results[0][1].config, "mmap": args.mmap}
        if not args.each
        else [{**r.config, "mmap": args.mmap} for _, r in results],
        # As stderr words them: in the options' spelling, and each naming its file when the
        # files were scanned one by one (a merged scan's warnings name theirs already).
        "warnings": each_told if args.each else [_as_options(w) for w in results[0][1].warnings],
    }
    meta["warning_details"] = told.details(meta["warnings"])
    return _emit(fmt, tables, meta, args, show)


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
    from .plot import plot_results, require_matplotlib

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
    from .plot import PANELS, TITLES, plot_result, require_matplotlib
    from .report import figure_png, generated_at, render_report

    require_matplotlib()
    generated_at()  # a malformed SOURCE_DATE_EPOCH is told now, not after the scan
    _check_inputs([args.file], args.typed)
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


# ---------------------------------------------------------------- the analyses


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


def _rows_line(noun: str, n_all: int, n_shown: int, which: str) -> str:
    """How many rows there are, and which the terminal shows."""
    if n_shown >= n_all:
        return f"{noun}: {n_all:,}" + (" (all shown)" if n_all else "")
    return f"{noun}: {n_all:,} ({which} {n_shown:,} shown; all of them with -o FILE)"


def _show_skipped(args: argparse.Namespace, summary: pl.DataFrame | None, rows: int) -> None:
    """What was read and left out, when something was; for results without a summary, a word
    when nothing passed the filter or the time range (rather than an empty table alone)."""
    from .report import skip_reasons

    if summary is not None and summary.height:
        s = summary.row(0, named=True)
        reasons = skip_reasons(s)
        if reasons:
            print(f"Packets read: {s['packets_read']:,}; skipped: {', '.join(reasons)}")
        return
    if rows == 0 and (args.filter or args.start is not None or args.end is not None):
        each = isinstance(args.filter, list)
        chosen = [f"the filter{'s' * each} {args.filter!r}"] if args.filter else []
        chosen += ["the time range"] if args.start is not None or args.end is not None else []
        print(f"No packet passed {' and '.join(chosen)}.")


def _many(n: int, noun: str) -> str:
    """'1 flow', '2 flows', '1,000 flows'."""
    return f"{n:,} {plural(n, noun)}"


def _show_table(title: str, table: Any) -> None:
    from .report import text_table

    if table[1]:
        print(title)
        print(text_table(table))


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
    from ._units import format_duration
    from .report import flows_table

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
    from .report import hosts_table, matrix_table

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
    from ._units import format_duration
    from .report import iteration_list_table, text_table

    df = it.iterations
    if it.period_ns is None:
        lo, hi = (format_duration(_ns(d) or 0) for d in (args.min_period, args.max_period))
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
    from ._units import _iso_ns, format_duration
    from .report import burst_quantiles_table, bursts_table, text_table

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
    from ._units import format_duration
    from .report import _counted, gap_quantiles_table, size_quantiles_table

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
    from ._units import format_duration
    from .report import gain_table, offsets_table

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
        from .report import _counted

        print(f"\nMultiplexing gain: none (no {_counted(r.summary.row(0, named=True))})")
    print()
    _print_result(f"the merge of the {n} captures, as scan measures a capture", r, args.top)


def cmd_shared(args: argparse.Namespace) -> int:
    import burstcore

    from ._units import per_capture

    fmt = _prepare_output(args)
    files = list(args.files)
    if len(files) < 2:
        raise UsageError(
            "shared compares captures with one another: give two or more (the same file twice, with a "
            "--filter each, compares two parts of one capture)"
        )
    _reading_now(*files)
    kw = {"filter": args.filter, "start": args.start, "end": args.end, "mmap": args.mmap, "strict": args.strict}
    senders: Literal["sampled", "all"] = "all" if args.all_senders else "sampled"
    label = f"{len(files)} files, every sender"
    with _progress(label, args.quiet or not args.all_senders) as bar, _recorded_warnings() as told:
        found = burstcore.shared_packets(_rereadable(files), senders=senders, progress=bar, **kw)
    pairs = found.pairs.with_columns(
        pl.Series("file_a", [_shown(files[a]) for a in found.pairs["a"]], dtype=pl.String),
        pl.Series("file_b", [_shown(files[b]) for b in found.pairs["b"]], dtype=pl.String),
    ).select("a", "b", "file_a", "file_b", pl.exclude("a", "b", "file_a", "file_b"))
    each = per_capture(args.filter, len(files))
    # Typed apart: mypy 1.10 (the test extra's floor) took the list for a list[str] in the dict.
    own: list[str | None] = list(found.filters) if found.filters else [None] * len(files)
    captures = pl.DataFrame(
        {
            "capture": list(range(len(files))),
            "file": [_shown(f) for f in files],
            "host": found.hosts,
            "filter": each,
            "own_filter": own,
            "first_ns": [None if sp is None else sp[0] for sp in found.spans],
            "last_ns": [None if sp is None else sp[1] for sp in found.spans],
        },
        schema={
            "capture": pl.UInt32,
            "file": pl.String,
            "host": pl.String,
            "filter": pl.String,
            "own_filter": pl.String,
            "first_ns": pl.Int64,
            "last_ns": pl.Int64,
        },
    )
    # Each instant as every other table has it: a Datetime, its exact integer ns beside it.
    at = pl.Datetime("ns", "UTC")
    captures = captures.with_columns(first=pl.col("first_ns").cast(at), last=pl.col("last_ns").cast(at)).select(
        pl.exclude("first_ns", "last", "last_ns"), "first_ns", "last", "last_ns"
    )
    meta = {
        "burstcore": burstcore.__version__,
        "command": args.command,
        "files": files,
        "hosts": found.hosts,
        "uncaptured": found.uncaptured,
        "filters": found.filters,
        "stretch_ns": found.stretch,
        "config": {
            "filter": args.filter,
            "start_ns": _instant_ns(args.start),
            "end_ns": _instant_ns(args.end),
            "senders": senders,
            "mmap": args.mmap,
            "strict": args.strict,
        },
        "warnings": told,
        "warning_details": told.details(),
    }
    tables = {"pairs": pairs, "captures": captures}
    return _emit(fmt, tables, meta, args, lambda: _show_shared(args, found, pairs, each))


def _show_shared(args: argparse.Namespace, found: Any, pairs: pl.DataFrame, each: list[str | None]) -> None:
    import shlex

    from .report import shared_captures_table, shared_pairs_table

    files = list(args.files)
    print(f"== {len(files)} captures: " + ", ".join(_label(f) if f == "-" else printable(_shown(f)) for f in files))
    _show_table(
        "Captures, each with its host (the one address in nearly all of its packets sampled; of a capture of "
        "one pair of hosts, the one whose packets it saw first)",
        shared_captures_table([_label(f) if f == "-" else f for f in files], found.hosts, found.spans),
    )
    told = pairs.filter(pl.col("told"))
    shown = pairs.sort("told", "a", "b", descending=[True, False, False]).head(args.top)
    _show_table(
        _rows_line("\nPairs whose samples share packets", pairs.height, shown.height, "those told first,"),
        shared_pairs_table(shown),
    )
    if told.is_empty():
        few = (
            f" ({_many(pairs.height, 'pair')} share too few to tell: a broadcast both heard, say)"
            if pairs.height
            else ""
        )
        print(f"\nNo two captures hold the same packets where they run together{few}: merged, each packet counts once.")
    else:
        print(
            f"\n{_many(told.height, 'pair')} of the {len(files)} captures {'holds' if told.height == 1 else 'hold'} "
            "the same packets: merged as they are, each such packet counts twice."
        )
    if found.filters is not None:
        if not told.is_empty():
            print("To count each once, read each capture through the packets its host sent, one --filter per file:")
            print("  " + " ".join(f"--filter {shlex.quote(f)}" for f in found.filters))
            _show_stretch(found.spans, found.stretch)
            if args.all_senders:
                print(
                    "Every IP sender in the files is one of these hosts (every packet read; packets without IP "
                    "pass no filter)."
                )
            else:
                print(
                    "Every sender in the samples is one of these hosts; one that sent only elsewhere in the files "
                    "would be in no filter: --all-senders reads every packet to be sure."
                )
    elif not told.is_empty():
        print("One filter per capture ('src host <its host>') counts each packet once, but cannot be spelled out here:")
        for reason in _why_no_filters(files, each, found.hosts, found.uncaptured):
            print(f"  - {reason}")
    print()


# Captures whose first (or last) packets are further apart than this are told to measure the
# stretch they all cover. Nearer, the difference is the time a packet takes from its sender's
# capture to its receiver's (tens of µs in a data centre): a host's first packet is stamped by
# its own capture before the others see it.
_SPANS_APART_NS = 1_000_000


def _show_stretch(spans: list[tuple[int, int | None] | None], stretch: tuple[int, int | None] | None) -> None:
    """A line when the captures do not all cover the same stretch, with the one they do."""
    from ._units import format_duration

    known = [sp for sp in spans if sp is not None]
    if stretch is None or not known:
        return
    starts = max(sp[0] for sp in known) - min(sp[0] for sp in known)
    ends = [sp[1] for sp in known if sp[1] is not None]
    apart = max(starts, max(ends) - min(ends) if ends else 0)
    if apart <= _SPANS_APART_NS:
        return
    from .report import _ts

    start, end = stretch
    bounds = f"--start {_ts(start)}" + ("" if end is None else f" --end {_ts(end)}")
    print(
        f"The captures do not cover the same stretch (their first or last packets up to {format_duration(apart)} "
        "apart): a host's packets from before its own capture began, or after it ended, are in the others' "
        f"only, and its filter leaves them out. Measure the stretch all of them cover: {bounds}"
    )


def _why_no_filters(
    files: list[str], each: list[str | None], hosts: list[str | None], uncaptured: list[str]
) -> list[str]:
    """Why each capture's 'src host' filter cannot be given (see `_shared.own_filters`)."""
    from ._shared import joined, same_files

    reasons = []
    unknown = [str(k + 1) for k, h in enumerate(hosts) if h is None]
    if unknown:
        reasons.append(
            f"no host is told for capture{'s' * (len(unknown) > 1)} {joined(unknown)}: no one address is in nearly "
            "all of its packets (a bridge's or a mirror port's capture of many hosts), or of one pair of hosts' "
            "traffic, it shares too few distinct packets each way with another capture to tell which end it was "
            "recorded at, or the captures it is compared with disagree (a bridge between two hosts' own)"
        )
    by_host: dict[str, list[int]] = {}
    for k, h in enumerate(hosts):
        if h is not None:
            by_host.setdefault(h, []).append(k + 1)
    same = {tuple(g) for g in same_files(list(files), each, list(range(len(files))))}
    reasons += [
        f"captures {joined([str(k + 1) for k in g])} are the same file ({printable(_shown(files[g[0]]))}): give it once"
        for g in same
    ]
    reasons += [
        f"captures {joined(list(map(str, ks)))} have the same host, {h}: give its filter to one of them"
        for h, ks in by_host.items()
        if len(ks) > 1 and tuple(k - 1 for k in ks) not in same
    ]
    if uncaptured:
        reasons.append(
            f"{', '.join(uncaptured[:8])}{' and more' if len(uncaptured) > 8 else ''} sent packets too and "
            f"{'is' if len(uncaptured) == 1 else 'are'} no capture's host: add each to the filter of the capture "
            "that should count it"
        )
    return reasons


COMMANDS = {
    "info": cmd_info,
    "scan": cmd_scan,
    "plot": cmd_plot,
    "report": cmd_report,
    "flows": cmd_flows,
    "matrix": cmd_matrix,
    "iterations": cmd_iterations,
    "bursts": cmd_bursts,
    "sizes": cmd_sizes,
    "gaps": cmd_gaps,
    "superpose": cmd_superpose,
    "shared": cmd_shared,
}


def _reading_where() -> str:
    """The input being read, as an error's message names it (' trace.pcap', ' from stdin'), or
    '' when none is known."""
    reading = _READING.get()
    if not reading:
        return ""
    if len(reading) == 1:
        return " from stdin" if reading[0] == "-" else f" {reading[0]}"
    # Hundreds of files listed in one line would bury the error itself.
    if len(reading) <= 4:
        return " (one of " + ", ".join(reading) + ")"
    return f" (one of the {len(reading)} files, {reading[0]} to {reading[-1]})"


def _os_told(e: OSError) -> str:
    """An OSError as Python shows it, without the "[Errno N]": its message, then the file (quoted,
    so that control characters in a name are shown, not printed), unless the message names it."""
    told = f"{e.strerror or e}"
    if e.filename is not None and str(e.filename) not in told:
        told += f": {e.filename!r}"
    return told


def _classify(e: BaseException) -> tuple[int, str]:
    import burstcore

    if isinstance(e, (FileNotFoundError, IsADirectoryError)):
        return EXIT_NOT_FOUND, _os_told(e)
    limit = getattr(e, "limit", None)
    if isinstance(e, burstcore.LimitExceededError) and limit != "capture":
        # A limit on the result (groups, flows, pairs): the capture is fine. Packets too many to
        # hold at once (reorder buffer, E(τ)'s ring) may be damaged timestamps: not called fine.
        # A limit on the capture's structure (a block larger than allowed, at a byte offset) is
        # damage, told as below. By `limit`, not by the message's words, which may change.
        fine = " (the capture itself is fine)" if limit == "result" else ""
        return EXIT_CAPTURE, f"stopped at a limit{fine}: {e}"
    if isinstance(e, burstcore.CaptureError):
        named = getattr(e, "input", None)
        if named:
            # One of several files: the error names it, so say it once, up front.
            msg = str(e).removesuffix(f" of {named}").removesuffix(f" (in {named})")
            return EXIT_CAPTURE, f"cannot read the capture {named}: {msg}"
        return EXIT_CAPTURE, f"cannot read the capture{_reading_where()}: {e}"
    if isinstance(e, UsageError):
        return EXIT_USAGE, str(e)
    if isinstance(e, _OutputError):
        return EXIT_OUTPUT, str(e)
    if isinstance(e, ImportError) and e.name == "matplotlib":
        # plot and report without the plot extra: what to install, not an internal error.
        return EXIT_USAGE, str(e)
    if isinstance(e, ValueError):
        # Values the API rejected (after parsing), e.g. a window not a whole number of ns.
        return EXIT_USAGE, str(e)
    if isinstance(e, OSError):
        # Every write of an output is wrapped as an _OutputError (`_writing`, `_check_output`):
        # an OSError left is the input's (no permission to read it, an I/O error, a file
        # truncated while it was read).
        where = _reading_where()
        reading = _READING.get()
        if e.filename is not None and len(reading) > 1 and str(e.filename) in reading:
            # Which of several: the error knows, as a capture error's `input` does.
            where = f" {e.filename}"
        # "cannot read the capture x.pcap: ..." names the file already.
        told = f"{e.strerror or e}" if e.filename is not None and where == f" {e.filename}" else _os_told(e)
        return EXIT_CAPTURE, f"cannot read the capture{where}: {told}"
    return EXIT_INTERNAL, f"internal error: {type(e).__name__}: {e} (please report it, with the output of --debug)"


def _one_filter_or_each(args: argparse.Namespace) -> argparse.Namespace:
    """``--filter`` given once (a string, for every file) or once per file (a list, in order)."""
    given = getattr(args, "filter", None)
    if given is None:
        return args
    files = getattr(args, "files", None) or [getattr(args, "file", None)]
    if len(given) == 1:
        args.filter = given[0]
    elif len(given) == len(files):
        args.filter = list(given)
    elif len(files) == 1:
        raise UsageError(f"{len(given)} --filter options for 1 file: give --filter once")
    else:
        raise UsageError(
            f"{len(given)} --filter options for {_many(len(files), 'file')}: give --filter once for "
            "every file, or once per file in the order of the files"
        )
    return args


def _filter_for(args: argparse.Namespace, k: int) -> str | None:
    """The filter of the k-th file when the files are read one at a time."""
    f = args.filter
    return f[k] if isinstance(f, list) else f


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_first(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` with the command first when only options of the command's own, with their values,
    stand before it (`burstcore -q scan a.pcap`, `burstcore -o x.csv scan a.pcap`, `burstcore -qo
    x.csv scan a.pcap`): the command's
    parser takes them wherever they stand, and the top level's plain parse refused them as
    "unrecognized arguments" or took a value for the command ("invalid choice: 'x.csv'"). The
    command is the first word that is neither such an option nor its value (`-o scan scan a.pcap`
    writes to 'scan'). A word that is no option of the command's (a file, a typo) or one of the
    top level's own (--help, --version) leaves `argv` as it is; an option whose value would be
    the command itself (`burstcore -o scan a.pcap`) is told as the command's parser tells one
    given without its value."""
    commands = _subparsers(parser)
    top = parser._option_string_actions
    valueless: tuple[argparse.ArgumentParser, argparse.Action] | None = None
    stray: tuple[str, str] | None = None
    for at, word in enumerate(argv):
        if word not in commands:
            continue
        if at == 0:
            return argv
        own = commands[word]
        told = _options_only(own, top, argv[:at])
        if told is True:
            return [word, *argv[:at], *argv[at + 1 :]]
        if isinstance(told, argparse.Action) and valueless is None:
            valueless = own, told
        if isinstance(told, str) and stray is None:
            stray = word, told
    if valueless is not None:
        own, action = valueless
        own.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
    if stray is not None:
        # Else "invalid choice" for the first word, which may be an option's value.
        command, word = stray
        parser.error(
            f"{word!r} stands before the command {command!r} and is no option of it nor an option's value: give "
            f"the files after the command (burstcore {command} FILE ...), and quote a value of several words"
        )
    return argv


def _options_only(
    own: argparse.ArgumentParser, top: Collection[str], words: Sequence[str]
) -> bool | argparse.Action | str:
    """Whether `words` are all options of `own` (none of them the top level's) with their values
    (True), such words but for the last option's value (that option), or not: a word that is no
    option (that word), an option `own` does not take or the top level's (False)."""
    options = own._option_string_actions
    at = 0
    while at < len(words):
        word = words[at]
        if not word.startswith("-") or word == "-":
            return word
        at += 1
        # The option whose value is the next word, if any.
        takes_next: argparse.Action | None
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            action = options.get(name)
            if action is None or name in top:
                return False
            takes_next = action if action.nargs is None and "=" not in word else None
        else:
            # Short options read as argparse reads them: flags clustered (-qv), the last of them
            # maybe one taking a value, attached (-qox.csv) or in the next word (-qo x.csv).
            takes_next = None
            for k in range(1, len(word)):
                name = "-" + word[k]
                action = options.get(name)
                if action is None or name in top:
                    return False
                if action.nargs != 0:
                    takes_next = action if action.nargs is None and k == len(word) - 1 else None
                    break
        if takes_next is not None:
            if at == len(words):
                return takes_next
            at += 1  # its value, whatever it is: the command's parser judges it as it would after the command
    return True


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The command line's namespace and what it did not recognize. A command's files may stand
    anywhere among its options, as tcpdump's and most tools' do (`scan a.pcap --windows 1ms
    b.pcap`): argparse's plain parse takes the files given before the first option and refuses
    the others as "unrecognized arguments". An option's value is still the one word after it (a
    list is one comma-separated word), so a path is never read as a value nor a value as a path.
    Anything else before the command (--version, --help, nothing) goes to the plain parse.

    After '--' every word is a file, even one starting with '-': argparse's intermixed parse
    drops the '--' in its first pass and then reads such a word as an option, so those words go
    through it as stand-ins that cannot look like one, and come back as they were typed."""
    argv = _command_first(parser, argv)
    own = _subparsers(parser).get(argv[0]) if argv else None
    if own is None:
        return parser.parse_known_args(argv)
    words = list(argv[1:])
    literal: dict[str, str] = {}
    if "--" in words:
        at = words.index("--")
        literal = {f"\0file {k}": word for k, word in enumerate(words[at + 1 :])}
        words = words[:at] + list(literal)
    # The command's parser alone: argparse cannot intermix the top level's subcommand argument.
    args, unknown = own.parse_known_intermixed_args(words)
    args.command = argv[0]
    for name in ("files", "file"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            setattr(args, name, [literal.get(v, v) for v in value])
        elif isinstance(value, str):
            setattr(args, name, literal.get(value, value))
    return args, [literal.get(v, v) for v in unknown]


class _Diagnostics:
    """sys.stderr while a command runs: warnings, errors and the progress bar are told there,
    and a stderr that cannot take them must not cost the result. A write that fails (a full
    disk, a reader of the pipe gone) is dropped: it raised, and the command exited 1 (a full
    disk, taken for an I/O error of the capture) or 141 (taken for stdout's reader gone), with
    its result unwritten. Every other attribute (isatty, fileno) is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _diagnostics() -> Iterator[None]:
    """`_Diagnostics` as sys.stderr for the command. A process started with its stderr closed
    has sys.stderr None, and print(file=None) writes to stdout: the warnings came out in the
    middle of the JSON or CSV a program was to parse. Then /dev/null takes its place, and its
    descriptor (2, the lowest free one) is no longer left for the capture or the output file."""
    before = sys.stderr
    devnull = open(os.devnull, "w", encoding="utf-8") if before is None else None
    sys.stderr = _Diagnostics(devnull if devnull is not None else before)  # type: ignore[assignment]
    try:
        yield
    finally:
        if isinstance(sys.stderr, _Diagnostics):
            sys.stderr.flush()
            sys.stderr = before
        if devnull is not None:
            devnull.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    with _diagnostics():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    typed = _command_first(parser, _negative_values(sys.argv[1:] if argv is None else argv, _valued_options(parser)))
    args, unknown = _parse(parser, typed)
    if args.command:
        args.typed = _Typed(args.command, typed[1:], _valued_options(parser, args.command, short=True))
    if unknown:
        # Told by the command's own parser, which points to its own --help.
        own: argparse.ArgumentParser = _subparsers(parser).get(args.command, parser)
        own.error(f"unrecognized arguments: {' '.join(unknown)}")
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    prog = f"burstcore {args.command}"

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"{prog}: warning: {_told(str(message))}", file=sys.stderr)

    # The command's warnings read as its own; a program that calls main() gets its own way of
    # showing warnings back when it returns, and no file of this command named by the next.
    shown_before = warnings.showwarning
    warnings.showwarning = show
    reading = _READING.set(())
    try:
        return COMMANDS[args.command](_one_filter_or_each(args))
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. '| head'); stop quietly, without a second error at exit.
        _silence_stdout()
        return EXIT_PIPE
    except Exception as e:
        code, message = _classify(e)
        if debug:
            traceback.print_exc()
        if getattr(args, "max_groups", None) is not None:
            # Where the command has it (iterations, flows and matrix have none: their messages
            # keep the API's keyword).
            message = message.replace("max_groups", "--max-groups")
        print(f"{prog}: error: {_told(message)}", file=sys.stderr)
        return code
    finally:
        _READING.reset(reading)
        # Unless something else replaced it meanwhile, which is then left as it is.
        if warnings.showwarning is show:
            warnings.showwarning = shown_before


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


if __name__ == "__main__":
    sys.exit(main())
