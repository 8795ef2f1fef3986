"""The argparse parser: each command's options, grouped as its --help shows them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from .._units import format_quantile, printable
from .epilogs import (
    BURSTS_EXAMPLES,
    EXIT_CODES,
    FLOWS_EXAMPLES,
    GAPS_EXAMPLES,
    INFO_EXAMPLES,
    ITERATIONS_EXAMPLES,
    MAIN_EXAMPLES,
    MATRIX_EXAMPLES,
    PLOT_EXAMPLES,
    REPORT_EXAMPLES,
    SCAN_EXAMPLES,
    SHARED_EXAMPLES,
    SIZES_EXAMPLES,
    SUPERPOSE_EXAMPLES,
)
from .errors import EXIT_USAGE
from .output import BURSTS_TABLES, DISTRIBUTION_TABLES, ITERATIONS_TABLES, SCAN_TABLES, SHARED_TABLES, SUPERPOSE_TABLES
from .values import (
    MAX_DPI,
    MIN_DPI,
    _bin_origin,
    _count,
    _dpi,
    _duration,
    _durations,
    _grouping,
    _groupings,
    _horizon,
    _instant,
    _offset_list,
    _positive_int,
    _quantile_list,
    _rates,
)

# Rows of a table the analyses show on the terminal (-o FILE gets them all).
ANALYSIS_TOP = 20


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (usage is one --help away)."""

    def error(self, message: str) -> NoReturn:
        # printable: the message may quote what was typed (an unrecognized argument, a file name).
        self.exit(EXIT_USAGE, f"{self.prog}: error: {printable(message)} (see '{self.prog} --help')\n")


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


class _OneList(argparse._StoreAction):
    """An option taking a list, given once, or again with the same list: argparse keeps the last
    of several, and '--windows 1ms --windows 5ms' measured 5ms alone, though the user meant both.
    Told by the namespace, which is each parse's own (their default is None): state kept on the
    parser refused a program's second command line parsed by one parser (build_parser is public)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None and earlier != values:
            # Named as listed: --bin, the hidden old name of --bins, is the same option.
            parser.error(f"--{self.dest} given twice: give all its values in one comma-separated list")
        setattr(namespace, self.dest, values)


def _measure_options(g: Any, rates_default: str) -> None:
    """--windows, --rates, --bins, --by and --closed: what scan and superpose measure, and how."""
    g.add_argument(
        "--windows",
        type=_durations("window"),
        metavar="LIST",
        action=_OneList,
        help="window lengths τ for E(τ) and PtM(τ), e.g. 1us,10us,5ms (default: 1us to 1s in 1-2-5 steps)",
    )
    g.add_argument(
        "--rates",
        type=_rates,
        metavar="LIST",
        action=_OneList,
        help=f"server rates r for B_max(r), e.g. 1Gbps,10Gbps or 1.25GB/s (default: {rates_default})",
    )
    g.add_argument(
        "--bins",
        type=_durations("bin"),
        metavar="LIST",
        action=_OneList,
        help="bin widths of the throughput series, e.g. 1ms",
    )
    # --bin was the unambiguous abbreviation of --bins until --bin-origin came: kept, unlisted.
    g.add_argument("--bin", dest="bins", type=_durations("bin"), action=_OneList, help=argparse.SUPPRESS)
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
        action=_OneList,
        help="grouping(s): all, src, dst, pair, flow, flow4, interface, vlan, qp; comma-separated (default: all)",
    )
    g.add_argument(
        "--closed", choices=("left", "both"), default="left", help="windows [s, s+τ) (left, default) or [s, s+τ] (both)"
    )


def _size_option(g: Any) -> None:
    """--size and --fcs of scan and of the analyses that count bytes (all but gaps), which count a
    packet's bytes alike: an analysis's l1 totals are scan's under the same --fcs."""
    from .._scan import FCS_RULES, SIZES

    g.add_argument("--size", choices=SIZES, default="wire", help="bytes counted per packet (default: wire)")
    g.add_argument(
        "--fcs",
        choices=FCS_RULES,
        default="declared",
        help="whether frames end with their FCS, for --size l1: as the capture declares (default), present "
        "(a switch mirror that kept it unsaid; info tells) or absent",
    )


def _scan_options(p: argparse.ArgumentParser, figures: bool = False) -> None:
    from .._scan import DEFAULT_MAX_GROUPS

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
    from .. import __version__

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
    from .._flows import DEFAULT_MAX_PAIRS, FLOW_KEYS
    from .._scan import DEFAULT_MAX_GROUPS

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
        action=_OneList,
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
        action=_OneList,
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
    from .._analysis import DEFAULT_QUANTILES

    g.add_argument(
        "--quantiles",
        type=_quantile_list,
        metavar="LIST",
        action=_OneList,
        help="the quantiles q, numbers from 0 to 1, each once, read to the last digit written, e.g. "
        "0.5,0.9,0.99 (default: " + ",".join(map(format_quantile, DEFAULT_QUANTILES)) + ")",
    )


def _distribution_parser(sub: Any, name: str, summary: str, description: str, examples: str) -> None:
    """sizes or gaps: the same options, the same tables."""
    from .._distributions import DEFAULT_MAX_DISTRIBUTION_GROUPS

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
