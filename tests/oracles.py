"""Independent references for the tests: brute force from the definitions in docs/metrics.md,
written for clarity, not speed, and sharing no code with burstcore."""

from __future__ import annotations

import struct
from fractions import Fraction

import burstcore


def envelope(ts: list[int], sizes: list[int], tau: int, closed: str = "left") -> tuple[int, int]:
    """(E(τ), E_pkts(τ)) by trying a window starting at every packet."""
    best_b, best_p = 0, 0
    for s in ts:
        end = s + tau if closed == "left" else s + tau + 1  # [s, s+τ] = [s, s+τ+1) in integer ns
        inside = [(t, L) for t, L in zip(ts, sizes, strict=True) if s <= t < end]
        best_b = max(best_b, sum(L for _, L in inside))
        best_p = max(best_p, len(inside))
    return best_b, best_p


def bmax(ts: list[int], sizes: list[int], rate_bps: int) -> Fraction:
    """max over t_i ≤ t_j of A[t_i, t_j] − r·(t_j − t_i), exactly, in bytes."""
    best = Fraction(0)
    points = sorted(set(ts))
    for a in points:
        for b in points:
            if b < a:
                continue
            arrived = sum(L for t, L in zip(ts, sizes, strict=True) if a <= t <= b)
            best = max(best, arrived - Fraction(rate_bps * (b - a), 8 * 10**9))
    return best


def binned(ts: list[int], sizes: list[int], width: int) -> dict[int, tuple[int, int]]:
    """{bin start: (bytes, packets)} for epoch-aligned bins [kΔ, (k+1)Δ) (floor division)."""
    out: dict[int, tuple[int, int]] = {}
    for t, L in zip(ts, sizes, strict=True):
        k = (t // width) * width
        b, p = out.get(k, (0, 0))
        out[k] = (b + L, p + 1)
    return out


def eth_ipv4_udp(src: str, dst: str, sport: int, dport: int, payload: int = 0, proto: int = 17) -> bytes:
    """An Ethernet/IPv4/UDP (or TCP) frame built by hand, with consistent lengths."""

    def ip(a: str) -> bytes:
        return bytes(int(x) for x in a.split("."))

    l4 = (
        struct.pack("!HHHH", sport, dport, 8 + payload, 0)
        if proto == 17
        else struct.pack("!HHIIBBHHH", sport, dport, 0, 0, 5 << 4, 0x18, 1024, 0, 0)
    )
    total = 20 + len(l4) + payload
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, proto, 0, ip(src), ip(dst))
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    return eth + iph + l4 + b"\x00" * payload


def capture(ts: list[int], sizes: list[int], *, fmt: str = "pcapng", frames: list[bytes] | None = None) -> bytes:
    """A capture with these packets, written by burstcore's writer (ns resolution)."""
    if fmt == "pcap":
        w = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
        for i, (t, L) in enumerate(zip(ts, sizes, strict=True)):
            data = frames[i] if frames else b"\x00" * min(L, 14)
            w.packet(t, data[: max(L, 0)], wire_len=max(L, 0))
        return w.getvalue()
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=1, snaplen=0, resolution="1e-9")
    for i, (t, L) in enumerate(zip(ts, sizes, strict=True)):
        data = frames[i] if frames else b"\x00" * min(L, 14)
        w.epb(0, data[: max(L, 0)], ts_ns=t, wire_len=max(L, 0))
    return w.getvalue()


# 66,000 frames of 65,535 bytes: 4.33 GB of frames, past what 32 bits count.
PAST_4_GIB = (66_000, 65_535)


def capture_past_4_gib() -> bytes:
    """A pcap carrying PAST_4_GIB's frames, each captured at 14 bytes (a 2 MB file), 10 µs apart."""
    n, wire = PAST_4_GIB
    return capture([i * 10_000 for i in range(n)], [wire] * n, fmt="pcap")
