"""The help's examples and notes under each command's options, and the exit codes."""

from __future__ import annotations

from .errors import (
    EXIT_CAPTURE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_PIPE,
    EXIT_USAGE,
)

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
iterations would bear it out, iterations of unequal bytes, few of them one period apart, a
quiet run inside every phase over twice the pause between iterations, or iterations holding
under half the bytes) it is marked unsure and a warning says why and what to do; the summary's
period_unsure and periods_seen say so too. A period set aside for quiet runs recurring inside
its iterations is said the same way. docs/limits.md (The period of training iterations) gives
each doubt, what to do about it, and how often the period is right on real captures.

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
