"""Two threads on one plain file of small records, the aggregate alone, split by function
(rust/core/src/chunked.rs `by_function`): everything the user sees is what one thread gives:
the frames, the warnings, the progress, the errors and their offsets, Ctrl-C."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polars.testing import assert_frame_equal

import burstcore
from tests.test_hostile_gallery import pcapng_blocks

T0 = 1_700_000_000_000_000_000
# Windows on both sides of the split (the reading thread keeps the shortest), rates and bins.
KW: dict[str, Any] = {
    "windows": ["1us", "10us", "100us", "1ms", "10ms", "1s"],
    "rates": ["100Mbps", "1Gbps", "10Gbps"],
    "bins": ["100us", "1ms"],
    "by": ["all"],
}


def frame(payload: int, src: int = 1) -> bytes:
    """An Ethernet/IPv4/UDP frame of 42 + payload bytes."""
    udp = b"\x04\x00\x00\x35" + (8 + payload).to_bytes(2, "big") + b"\0\0" + b"x" * payload
    ip = b"\x45\x00" + (20 + len(udp)).to_bytes(2, "big") + b"\0\0\0\0\x40\x11\0\0"
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + bytes([10, 0, 0, src, 10, 0, 1, 1]) + udp


def trace(n: int, seed: int, payload: Callable[[int], int] = lambda i: 60) -> list[tuple[int, bytes]]:
    """n packets of a bursty trace: (timestamp ns, frame)."""
    x, t, out = seed * 7919 + 1, T0, []
    for i in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        t += (x >> 40) % 3000 if i % 64 else 150_000
        out.append((t, frame(payload(i), 1 + i % 3)))
    return out


def pcap(packets: list[tuple[int, bytes]], snaplen: int | None = None, nanos: bool = True) -> bytes:
    w = burstcore.CaptureWriter("pcap", nanos=nanos)
    for ts, data in packets:
        cut = data if snaplen is None else data[:snaplen]
        w.packet(ts, cut, wire_len=len(data))
    return w.getvalue()


def write(tmp: Path, name: str, data: bytes) -> str:
    p = tmp / name
    p.write_bytes(data)
    return str(p)


def outcome(src: Any, threads: int, **kw: Any) -> tuple[Any, list[tuple[type, str]], list[tuple[int, int | None]]]:
    """The result (or the error's type and message), the warnings and the progress calls."""
    calls: list[tuple[int, int | None]] = []

    def progress(done: int, total: int | None = None) -> None:
        calls.append((done, total))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r: Any = burstcore.scan(src, threads=threads, progress=progress, **{**KW, **kw})
        except burstcore.CaptureError as e:
            r = (type(e), str(e), getattr(e, "offset", None))
    return r, [(w.category, str(w.message)) for w in caught], calls


def same_for_two_threads(src: Any, **kw: Any) -> Any:
    one, w1, p1 = outcome(src, 1, **kw)
    two, w2, p2 = outcome(src, 2, **kw)
    if isinstance(one, tuple) or isinstance(two, tuple):
        assert one == two
    else:
        for name in ("envelope", "backlog", "series", "groups", "summary", "interfaces"):
            assert_frame_equal(getattr(one, name), getattr(two, name))
        assert one.warnings == two.warnings
    assert w1 == w2
    assert p1 == p2
    assert p2 == sorted(p2)
    # A whole file's progress ends at its size (a cut one's at the last record read).
    if p2 and p2[-1][1] is not None and not isinstance(two, tuple) and not w2:
        assert p2[-1][0] == p2[-1][1]
    return one


def test_small_records_pcap_sizes_and_closure(tmp_path: Path) -> None:
    src = write(tmp_path, "small.pcap", pcap(trace(30_000, 1)))
    r = same_for_two_threads(src)
    assert r.summary["packets"][0] == 30_000
    for size in ("wire", "captured", "l1"):
        for closed in ("left", "both"):
            same_for_two_threads(src, size=size, closed=closed)
    for origin in ("epoch", T0 + 12_345):
        same_for_two_threads(src, bin_origin=origin, fill_empty_bins=False)
    for fcs in ("present", "absent"):
        same_for_two_threads(src, size="l1", fcs=fcs)
    # microseconds, and a list of the one file
    micro = write(tmp_path, "micro.pcap", pcap(trace(30_000, 1), nanos=False))
    same_for_two_threads(micro)
    same_for_two_threads([micro])


def test_reordering_late_packets_and_equal_timestamps(tmp_path: Path) -> None:
    packets = trace(30_000, 2)
    out = []
    for i, (ts, data) in enumerate(packets):
        back = 4_000 if i % 97 == 0 else (50_000_000 if i % 4_999 == 0 else 0)
        out.append((ts - back, data))
        if i % 211 == 0:
            out.append((ts - back, data))  # the same timestamp twice
    src = write(tmp_path, "late.pcap", pcap(out))
    r = same_for_two_threads(src, reorder_horizon="5us", on_late="drop")
    assert r.summary["reordered"][0] > 0 and r.summary["skipped_late"][0] > 0
    same_for_two_threads(src, reorder_horizon="0ns", on_late="drop")
    one = same_for_two_threads(src, reorder_horizon="5us", on_late="error")
    assert isinstance(one, tuple) and one[0] is burstcore.OutOfOrderError


def test_one_packet_and_files_under_a_mib(tmp_path: Path) -> None:
    same_for_two_threads(write(tmp_path, "one.pcap", pcap(trace(1, 3))))
    same_for_two_threads(write(tmp_path, "few.pcap", pcap(trace(500, 3))))
    same_for_two_threads(write(tmp_path, "none.pcap", pcap([])))


def test_mixed_record_sizes(tmp_path: Path) -> None:
    # The first MiB small records and the rest full frames, and the other way round.
    n = 40_000
    small_first = trace(n, 4, lambda i: 40 if i < n // 2 else 1_400)
    big_first = trace(n, 5, lambda i: 1_400 if i < 1_000 else 40)
    for name, packets in (("small_first", small_first), ("big_first", big_first)):
        same_for_two_threads(write(tmp_path, f"{name}.pcap", pcap(packets)))
    same_for_two_threads(write(tmp_path, "snap.pcap", pcap(trace(n, 6, lambda i: 1_400), snaplen=96)))


def test_cut_files(tmp_path: Path) -> None:
    data = pcap(trace(30_000, 7))
    # Cut mid-record just before 1 MiB (the probe's end) and near the end of the file.
    for cut in (1 << 20, (1 << 20) - 7, len(data) - 13):
        src = write(tmp_path, f"cut{cut}.pcap", data[:cut])
        same_for_two_threads(src)
        same_for_two_threads(src, strict=True)


def test_corrupt_record_mid_file(tmp_path: Path) -> None:
    data = bytearray(pcap(trace(30_000, 8)))
    # The 20,000th record's captured length: larger than the snaplen and the file.
    at, k = 24, 0
    while k < 20_000:
        at += 16 + int.from_bytes(data[at + 8 : at + 12], "little")
        k += 1
    data[at + 8 : at + 12] = (1 << 30).to_bytes(4, "little")
    src = write(tmp_path, "corrupt.pcap", bytes(data))
    same_for_two_threads(src)
    one = same_for_two_threads(src, strict=True)
    assert isinstance(one, tuple) and issubclass(one[0], burstcore.CaptureError)


def test_pcapng_interfaces_and_resolutions(tmp_path: Path) -> None:
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    ifaces = [w.interface(linktype=1, resolution=r) for r in ("1e-9", "1e-6", "2^-20")]
    for i, (ts, data) in enumerate(trace(30_000, 9)):
        w.epb(ifaces[i % 3], data, ts_ns=ts - ts % 1_000)
    src = write(tmp_path, "ifaces.pcapng", w.getvalue())
    same_for_two_threads(src)
    same_for_two_threads(src, reorder_horizon="1ms")
    # `interface` grouping excluded from the split: still the same.
    same_for_two_threads(src, by=["all", "interface"])
    # pcapng cut in the middle of its blocks
    blocks = pcapng_blocks(w.getvalue())
    same_for_two_threads(write(tmp_path, "cut.pcapng", w.getvalue()[: blocks[len(blocks) // 2][0] + 10]))


def test_pcapng_sections_byte_orders_snaplens_and_late_sections(tmp_path: Path) -> None:
    # Three sections (big-endian between little), each with a µs and a ns interface, the second
    # cut to 80 bytes; each later section's times a second earlier: dropped as late.
    w = burstcore.CaptureWriter("pcapng")
    packets = trace(30_000, 12)
    for s, order in enumerate(("little", "big", "little")):
        w.section(byte_order=order)
        micro = w.interface(linktype=1, resolution="1e-6")
        cut = w.interface(linktype=1, resolution="1e-9", snaplen=80)
        for ts, data in packets[s * 10_000 : (s + 1) * 10_000]:
            if ts % 2:
                w.epb(micro, data, ts_ns=ts - ts % 1_000 - s * 10**9)
            else:
                w.epb(cut, data[:80], ts_ns=ts - s * 10**9, wire_len=len(data))
    src = write(tmp_path, "sections.pcapng", w.getvalue())
    r = same_for_two_threads(src, reorder_horizon="10ms", on_late="drop")
    assert r.summary["skipped_late"][0] == 20_000
    same_for_two_threads(src, size="captured")
    big = burstcore.CaptureWriter("pcap", nanos=False, byte_order="big")
    for ts, data in packets:
        big.packet(ts - ts % 1_000, data)
    same_for_two_threads(write(tmp_path, "big.pcap", big.getvalue()))
