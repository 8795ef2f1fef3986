# Type stubs for the compiled extension (checked by tests/test_stubs.py with mypy.stubtest).
from collections.abc import Callable
from typing import Any, Literal, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_MAX_GROUPS",
    "MAX_THREADS",
    "ArrowColumn",
    "CaptureError",
    "CaptureWriter",
    "ColumnScanner",
    "CorruptCaptureError",
    "DecompressionError",
    "InternalError",
    "LimitExceededError",
    "NotACaptureError",
    "OneCtrlC",
    "OutOfOrderError",
    "PacketBatchReader",
    "TimestampRangeError",
    "TruncatedCaptureError",
    "UndeclaredInterfaceError",
    "UnsupportedCaptureError",
    "__version__",
    # Private, for the tests only; pyo3 puts every function it adds in the module's __all__.
    "_use_as_many_threads_as_asked",
    "bursts",
    "capture_info",
    "default_threads",
    "flows",
    "histograms",
    "iterations",
    "one_ctrl_c",
    "packet_batches",
    "read_table",
    "scan",
    "scan_columns",
    "shared_packets",
    "starts_like_capture",
    "superpose",
    "traffic_matrix",
]

__version__: str
MAX_THREADS: int

@final
class OneCtrlC:
    def __enter__(self) -> None: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> Literal[False]: ...

one_ctrl_c: OneCtrlC
DEFAULT_BATCH_ROWS: int
DEFAULT_MAX_GROUPS: int

class CaptureError(ValueError):
    offset: int | None
    reason: str
    # The core's ErrorKind as one lowercase word: "io", "not_a_capture", "unsupported_version",
    # "truncated", "corrupt", "undeclared_interface", "limit_exceeded", "decompression",
    # "timestamp_out_of_range", "out_of_order" (CaptureWarning.kind uses the same words, and
    # "packets_lost", "oversized_record" and "undeclared_fcs", which are only ever warnings).
    kind: str
    input: str | None

class NotACaptureError(CaptureError): ...
class UnsupportedCaptureError(CaptureError): ...
class TruncatedCaptureError(CaptureError): ...
class CorruptCaptureError(CaptureError): ...
class UndeclaredInterfaceError(CaptureError): ...

class LimitExceededError(CaptureError):
    # Which kind of limit (docs/limits.md): "capture" (the capture's own structure, at `offset`:
    # most likely damage), "held_packets" (packets held in memory at once: the reorder buffer,
    # E(τ)'s ring) or "result" (the size of the result: groups, flows, host pairs).
    limit: Literal["capture", "held_packets", "result"] | None

class DecompressionError(CaptureError): ...
class TimestampRangeError(CaptureError): ...
class OutOfOrderError(CaptureError): ...
class InternalError(RuntimeError): ...

_Progress = Callable[[int, int | None], object] | None

# A warning of the core: (message, kind, offset, input, limit), issued as a CaptureWarning with
# these attributes (capture_info's "warnings" holds them too). kind as CaptureError.kind.
_Warning = tuple[str, str, int | None, str | None, Literal["capture", "held_packets", "result"] | None]

# (start_ns, end_ns) of a time range, either None for open; None for all of time.
_Span = tuple[int | None, int | None] | None

def default_threads() -> int: ...
def _use_as_many_threads_as_asked(on: bool) -> None: ...
def starts_like_capture(head: bytes) -> bool: ...
def read_table(
    source: Any,
    columns: list[str] | None = None,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    threads: int = 1,
    filter: str | None = None,
    time_range: _Span = None,
    # The accounting (third) as scan's: packets read, the rows ("counted"), those the time range
    # and the filter left out, and "ts_span", the earliest and latest timestamp read when a time
    # range is given (else None).
) -> tuple[list[list[ArrowColumn]], list[_Warning], dict[str, Any]]: ...
def capture_info(
    source: Any,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | None = None,
    one_of_several: bool = False,
) -> dict[str, Any]: ...
def packet_batches(
    source: Any,
    columns: list[str] | None = None,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    filter: str | None = None,
    time_range: _Span = None,
    batch_rows: int = ...,
) -> PacketBatchReader: ...

@final
class PacketBatchReader:
    """The batches of one capture (``packet_batches``): read one at a time, on the calling thread."""

    # The next batch's columns and the reader's warnings met since the last one; None once ended.
    def next_batch(self) -> tuple[list[ArrowColumn], list[_Warning]] | None: ...
    # Once ended: the warnings known only then (packets lost) and the accounting, as read_table's.
    def finish(self) -> tuple[list[_Warning], dict[str, Any]]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

def scan(
    sources: list[Any],
    windows_ns: list[int],
    closed: str,
    rates_bps: list[int],
    bins_ns: list[int],
    by: list[str],
    size: str,
    horizon_ns: int,
    on_late: str,
    max_groups: int,
    strict: bool = False,
    progress: _Progress = None,
    threads: int = 1,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    # the instant bins are counted from (bin k starts at origin + k·bin), None: the first packet counted
    bin_origin_ns: int | None = ...,
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def shared_packets(
    sources: list[Any],
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    errors: bool = False,
    read_through: bool = False,
    max_packets: int | None = None,
    strict: bool = False,
) -> (
    # pairs, hosts, uncaptured, each capture's first and last instant in the time range, then
    # whatever the range (the last None where unknown), then per capture the warnings of its
    # being found cut short (not read strictly)
    tuple[
        list[tuple[int, int, int, int, int, int]],
        list[str | None],
        list[str],
        list[tuple[int, int | None] | None],
        list[tuple[int, int | None] | None],
        list[list[_Warning]],
    ]
    | None
): ...
def scan_columns(
    ts_ns: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.uint64],
    interfaces: npt.NDArray[np.uint32] | None,
    windows_ns: list[int],
    closed: str,
    rates_bps: list[int],
    bins_ns: list[int],
    by: list[str],
    horizon_ns: int,
    on_late: str,
    max_groups: int,
    # the instant bins are counted from (bin k starts at origin + k·bin), None: the first packet counted
    bin_origin_ns: int | None = ...,
) -> dict[str, Any]: ...

@final
class ColumnScanner:
    """One scan of in-memory columns fed batch by batch (``scan`` of batches)."""

    def __new__(
        cls,
        windows_ns: list[int],
        closed: str,
        rates_bps: list[int],
        bins_ns: list[int],
        by: list[str],
        horizon_ns: int,
        on_late: str,
        max_groups: int,
        # the instant bins are counted from (bin k starts at origin + k·bin), None: the first packet counted
        bin_origin_ns: int | None = ...,
    ) -> ColumnScanner: ...
    # The next batch; an error in it names the batch and row, and ends the scan.
    def push(
        self,
        ts_ns: npt.NDArray[np.int64],
        sizes: npt.NDArray[np.uint64],
        interfaces: npt.NDArray[np.uint32] | None,
    ) -> None: ...
    @property
    def batches(self) -> int: ...
    def finish(self) -> dict[str, Any]: ...

def flows(
    sources: list[Any],
    key: str,
    idle_timeout_ns: int | None,
    windows_ns: list[int],
    max_flows: int,
    horizon_ns: int,
    on_late: str,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def traffic_matrix(
    sources: list[Any],
    max_pairs: int,
    horizon_ns: int,
    on_late: str,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def histograms(
    sources: list[Any],
    what: Literal["sizes", "gaps"],
    by: str | None,
    quantiles: list[tuple[float, int, int]],
    max_groups: int,
    horizon_ns: int,
    on_late: str,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def bursts(
    sources: list[Any],
    gap_ns: int,
    horizon_ns: int,
    on_late: str,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    by: str | None = None,
    max_groups: int = ...,
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def iterations(
    sources: list[Any],
    bin_ns: int,
    min_period_ns: int,
    max_period_ns: int,
    horizon_ns: int,
    on_late: str,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...
def superpose(
    sources: list[Any],
    offsets_ns: list[int],
    windows_ns: list[int],
    closed: str,
    rates_bps: list[int],
    bins_ns: list[int],
    by: list[str],
    horizon_ns: int,
    on_late: str,
    max_groups: int,
    strict: bool = False,
    progress: _Progress = None,
    mmap: bool | None = None,
    time_range: _Span = None,
    filter: str | list[str | None] | None = None,
    size: str = "wire",
    # the instant bins are counted from (bin k starts at origin + k·bin), None: the first packet counted
    bin_origin_ns: int | None = ...,
    fcs: str = "declared",
) -> tuple[dict[str, Any], list[_Warning]]: ...

@final
class ArrowColumn:
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...

@final
class CaptureWriter:
    """Write a pcap or pcapng capture block by block, into memory; ``getvalue()`` returns the bytes.

    For pcap the constructor sets the file's byte order, resolution (``nanos``), link type and
    snaplen (default 262144). For pcapng it sets the defaults of ``section()`` (byte order) and
    ``interface()`` (link type, snaplen (else 0, no limit), resolution 1e-9 with ``nanos``, else
    1e-6); an interface declared before any section header gets one first. A snaplen of 0 is no
    limit in pcap too: libpcap reads it as its largest snaplen for the link type (262144 for
    Ethernet), tshark and capinfos as "not set". ``fcs_len``: bytes of FCS that end each frame (a
    switch's mirror may keep it), declared in pcap's link-type field (its FCS bits: an even count
    up to 30) or as each pcapng interface's ``if_fcslen`` (``interface(fcs_len=...)`` overrides
    it); 0, the norm, declares none. The data given must hold it.

    A record's data may not be longer than its wire length, nor than the snaplen of its file or
    interface when that is not 0 (libpcap would cut or refuse it), nor than libpcap takes for its
    link type whatever the snaplen: 262144 bytes, but 128 MiB for D-Bus (231), 8 MiB for EBHSCR
    (279) and 1 MiB for USBPCAP (249); tcpdump stops reading the file at a longer record and
    tshark refuses it. ``allow_oversized_records=True`` writes them all the same, for a file only
    burstcore (which reads them with a ``CaptureWarning`` of kind ``"oversized_record"``) is to
    read. ``raw_block`` writes malformed pcapng for tests. Timestamps are floored to the
    resolution: a µs pcap (the default without ``nanos``) keeps 1500 ns as 1 µs.

    An integer too wide for its field raises OverflowError naming the argument
    (``snaplen=1099511627776 does not fit a 32-bit unsigned field: give 0 to 4294967295``). A
    string (``user_appl``, ``name``, the names of ``nrb``) is written as UTF-8 of at most 65535
    bytes, without a NUL: tshark and capinfos would end it there; ValueError otherwise.
    """

    def __new__(
        cls,
        format: str = "pcapng",
        byte_order: str = "little",
        nanos: bool = False,
        linktype: int = 1,
        snaplen: int | None = None,
        allow_oversized_records: bool = False,
        fcs_len: int = 0,
    ) -> CaptureWriter: ...
    def packet(self, ts_ns: int, data: bytes, wire_len: int | None = None) -> None: ...
    def section(self, byte_order: str | None = None, user_appl: str | None = None) -> None: ...
    def interface(
        self,
        linktype: int | None = None,
        snaplen: int | None = None,
        resolution: str | None = None,
        ts_offset_s: int = 0,
        name: str | None = None,
        fcs_len: int | None = None,
    ) -> int: ...
    def epb(
        self,
        interface: int,
        data: bytes,
        ts_ns: int | None = None,
        ts_raw: int | None = None,
        wire_len: int | None = None,
    ) -> None: ...
    def spb(self, data: bytes, wire_len: int | None = None) -> None: ...
    def opb(self, interface: int, ts_raw: int, data: bytes, wire_len: int | None = None) -> None: ...
    def nrb(self, records: list[tuple[str, str]]) -> None: ...
    def isb(
        self,
        interface: int,
        ts_raw: int,
        if_recv: int | None = None,
        if_drop: int | None = None,
        os_drop: int | None = None,
        fil_accept: int | None = None,
        usr_deliv: int | None = None,
    ) -> None: ...
    def dsb(self, secrets_type: int, data: bytes) -> None: ...
    def custom(self, data: bytes, pen: int = 32473, copyable: bool = True) -> None: ...
    def raw_block(self, block_type: int, body: bytes) -> None: ...
    def getvalue(self) -> bytes: ...
    # One line: the format, what has been written (sections, interfaces, packets) and its bytes.
    def __repr__(self) -> str: ...
