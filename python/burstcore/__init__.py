"""burstcore: burstiness of packet captures, in one pass, exactly.

    >>> import burstcore
    >>> r = burstcore.scan("trace.pcapng", windows=["100us", "1ms", "5ms"], rates=["1Gbps", "10Gbps"])
    >>> r.envelope      # E(τ), peak rate, PtM(τ) per window (polars DataFrame)
    >>> r.backlog       # B_max(r) per server rate
    >>> burstcore.read_packets("trace.pcapng")   # one row per packet
    >>> for df in burstcore.iter_packets("huge.pcap"): ...   # the same, in batches
    >>> print(burstcore.info("trace.pcapng"))    # capinfos-like summary

Annotations: burstcore.Duration, Durations, Rate, Rates, Instant, Source (SingleSource, Columns,
Batches),
Grouping, Filters name what the functions take (burstcore._types says what each holds).

Definitions of every number: docs/metrics.md.
"""

from ._batches import DEFAULT_BATCH_ROWS, PACKET_SCHEMA, iter_packets, scan_packets
from ._burstcore import (
    MAX_THREADS,
    CaptureError,
    CaptureWriter,
    CorruptCaptureError,
    DecompressionError,
    InternalError,
    LimitExceededError,
    NotACaptureError,
    OutOfOrderError,
    TimestampRangeError,
    TruncatedCaptureError,
    UndeclaredInterfaceError,
    UnsupportedCaptureError,
    __version__,
    default_threads,
)
from ._bursts import Bursts, bursts
from ._distributions import Distribution, gaps, sizes
from ._flows import flows, host_volumes, traffic_matrix
from ._iterations import Iterations, iterations
from ._packets import CaptureInfo, CaptureWarning, ProgressCallback, info, read_packets
from ._scan import ScanResult, scan
from ._shared import SharedPackets, SharedPacketsWarning, shared_packets
from ._superpose import SuperposeResult, superpose
from ._types import (
    Batches,
    BinaryReader,
    Columns,
    Count,
    Duration,
    Durations,
    Filters,
    Grouping,
    Instant,
    Quantiles,
    Rate,
    Rates,
    SingleSource,
    Source,
)
from ._units import default_windows_ns, parse_duration, parse_rate

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "MAX_THREADS",
    "PACKET_SCHEMA",
    "Batches",
    "BinaryReader",
    "Bursts",
    "CaptureError",
    "CaptureInfo",
    "CaptureWarning",
    "CaptureWriter",
    "Columns",
    "CorruptCaptureError",
    "Count",
    "DecompressionError",
    "Distribution",
    "Duration",
    "Durations",
    "Filters",
    "Grouping",
    "Instant",
    "InternalError",
    "Iterations",
    "LimitExceededError",
    "NotACaptureError",
    "OutOfOrderError",
    "ProgressCallback",
    "Quantiles",
    "Rate",
    "Rates",
    "ScanResult",
    "SharedPackets",
    "SharedPacketsWarning",
    "SingleSource",
    "Source",
    "SuperposeResult",
    "TimestampRangeError",
    "TruncatedCaptureError",
    "UndeclaredInterfaceError",
    "UnsupportedCaptureError",
    "__version__",
    "bursts",
    "default_threads",
    "default_windows_ns",
    "flows",
    "gaps",
    "host_volumes",
    "info",
    "iter_packets",
    "iterations",
    "parse_duration",
    "parse_rate",
    "read_packets",
    "scan",
    "scan_packets",
    "shared_packets",
    "sizes",
    "superpose",
    "traffic_matrix",
]
