"""A gallery of broken captures, made with ``burstcore.CaptureWriter`` and by hand with ``struct``:
each must give its exact exception class or ``CaptureWarning``, with a message that names the
byte offset where the damage is. The expected packets and offsets come from walking the files
with ``struct`` here, not from burstcore's reader."""

from __future__ import annotations

import gzip
import io
import re
import struct
import warnings
import zlib
from typing import Any

import pytest
import zstandard
from polars.testing import assert_frame_equal

import burstcore
from burstcore import (
    CaptureError,
    CaptureWarning,
    CorruptCaptureError,
    DecompressionError,
    LimitExceededError,
    NotACaptureError,
    TruncatedCaptureError,
    UndeclaredInterfaceError,
)

T0 = 1_700_000_000_000_000_000


def udp_frame(i: int, payload: int = 20) -> bytes:
    """Ethernet + IPv4 + UDP, ``payload`` bytes of data."""
    udp = struct.pack(">HHHH", 1000 + i, 2000, 8 + payload, 0) + bytes([i & 0xFF]) * payload
    ip = struct.pack(
        ">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    )
    return b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00" + ip + udp


def small_pcapng(n: int = 3) -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    for i in range(n):
        w.epb(0, udp_frame(i, 10 + 7 * i), ts_ns=T0 + i * 1000)
    return w.getvalue()


def small_pcap(n: int = 3) -> bytes:
    w = burstcore.CaptureWriter("pcap", nanos=True)
    for i in range(n):
        w.packet(T0 + i * 1000, udp_frame(i, 10 + 7 * i))
    return w.getvalue()


def pcapng_blocks(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, type, length) of every block, by walking the lengths (little-endian files)."""
    out, off = [], 0
    while off < len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        assert struct.unpack_from("<I", data, off + blen - 4)[0] == blen
        out.append((off, btype, blen))
        off += blen
    assert off == len(data)
    return out


def pcap_records(data: bytes) -> list[tuple[int, int]]:
    """(offset, length incl. header) of every record of a little-endian pcap."""
    out, off = [], 24
    while off < len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        out.append((off, 16 + caplen))
        off += 16 + caplen
    assert off == len(data)
    return out


def block(btype: int, body: bytes) -> bytes:
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def shb() -> bytes:
    return block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(options: bytes = b"") -> bytes:
    return block(1, struct.pack("<HHI", 1, 0, 0) + options)


def epb(iface: int, ts: int, data: bytes) -> bytes:
    pad = b"\0" * (-len(data) % 4)
    return block(6, struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + data + pad)


def offset_in(message: str) -> int:
    m = re.search(r"at byte offset (\d+)", message)
    assert m, f"message does not name a byte offset: {message!r}"
    return int(m.group(1))


def read(data: bytes, strict: bool = False) -> tuple[int, list[str]]:
    """(packets, warning messages) of a read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = burstcore.read_packets(data, strict=strict)
    ours = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
    return df.height, ours


def raises_at(exc: type[CaptureError], data: bytes, offset: int, words: str, strict: bool = False) -> None:
    with pytest.raises(exc) as info:
        burstcore.read_packets(data, strict=strict)
    assert type(info.value) is exc
    msg = str(info.value)
    assert offset_in(msg) == offset, msg
    assert info.value.offset == offset  # type: ignore[attr-defined]
    assert words in msg, msg
    # info() and scan() read through the same reader and fail the same way.
    with pytest.raises(exc):
        burstcore.info(data, strict=strict)
    with pytest.raises(exc):
        burstcore.scan(data, windows=["1us"], rates=["1Gbps"], strict=strict)


def test_zero_block_length() -> None:
    good = small_pcapng()
    raises_at(CorruptCaptureError, good + struct.pack("<II", 6, 0) + b"\0" * 8, len(good), "invalid length 0")


def test_block_length_not_a_multiple_of_four() -> None:
    good = small_pcapng()
    raises_at(CorruptCaptureError, good + struct.pack("<II", 6, 33) + b"\0" * 40, len(good), "invalid length 33")


def test_huge_block_length() -> None:
    good = small_pcapng()
    raises_at(LimitExceededError, good + struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 8, len(good), "max_block_len")


def test_huge_pcap_record_length() -> None:
    good = small_pcap()
    rec = struct.pack("<IIII", 1, 0, 0xFFFFFFF0, 60)
    raises_at(LimitExceededError, good + rec, len(good), "max_block_len")


def test_mismatched_trailing_length() -> None:
    good = small_pcapng()
    bad = bytearray(epb(0, 5, udp_frame(9)))
    struct.pack_into("<I", bad, len(bad) - 4, len(bad) + 4)
    raises_at(CorruptCaptureError, good + bytes(bad), len(good), "lengths differ")


def test_packet_on_an_undeclared_interface() -> None:
    head = shb() + idb()
    data = head + epb(0, 1, udp_frame(0)) + epb(1, 2, udp_frame(1))
    where = len(head) + len(epb(0, 1, udp_frame(0)))
    raises_at(UndeclaredInterfaceError, data, where, "interface 1")


def test_packet_before_any_interface() -> None:
    raises_at(UndeclaredInterfaceError, shb() + epb(0, 1, udp_frame(0)), len(shb()), "declares no interface before it")


@pytest.mark.parametrize("tsresol", [20, 100, 0x7F, 0x80 | 64, 0xFF])
def test_absurd_if_tsresol(tsresol: int) -> None:
    opt = struct.pack("<HHB3x", 9, 1, tsresol)
    data = shb() + idb(opt) + epb(0, 1, udp_frame(0))
    raises_at(CorruptCaptureError, data, len(shb()), "resolution")


def test_writer_made_pcapng_with_a_cut_trailer_block() -> None:
    # A CaptureWriter file plus a hand-made block whose trailing length is missing.
    good = small_pcapng()
    cut = epb(0, 9, udp_frame(5))[:-4]
    n, warns = read(good + cut)
    assert n == 3
    assert len(warns) == 1 and offset_in(warns[0]) == len(good)
    raises_at(TruncatedCaptureError, good + cut, len(good), "capture ends", strict=True)


def expected_after_cut(bounds: list[tuple[int, int, bool]], cut: int) -> tuple[int, int | None]:
    """(packets wholly before the cut, offset of the record the cut falls in or None)."""
    packets = sum(1 for off, n, is_packet in bounds if is_packet and off + n <= cut)
    inside = [off for off, n, _ in bounds if off < cut < off + n]
    return packets, (inside[0] if inside else None)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_truncation_at_every_offset(fmt: str) -> None:
    data = small_pcap() if fmt == "pcap" else small_pcapng()
    if fmt == "pcap":
        bounds = [(0, 24, False)] + [(off, n, True) for off, n in pcap_records(data)]
    else:
        bounds = [(off, n, t == 6) for off, t, n in pcapng_blocks(data)]
    for cut in range(len(data) + 1):
        part = data[:cut]
        if cut < 4:
            # Not even a magic number: refused whatever the strictness.
            for strict in (False, True):
                with pytest.raises(NotACaptureError) as info:
                    burstcore.read_packets(part, strict=strict)
                assert offset_in(str(info.value)) == 0
            continue
        packets, inside = expected_after_cut(bounds, cut)
        n, warns = read(part)
        assert n == packets, (fmt, cut)
        if inside is None:
            assert warns == [], (fmt, cut, warns)
            assert read(part, strict=True)[0] == packets
        else:
            assert len(warns) == 1, (fmt, cut, warns)
            assert offset_in(warns[0]) == inside, (fmt, cut, warns)
            assert "capture ends" in warns[0]
            with pytest.raises(TruncatedCaptureError) as info:
                burstcore.read_packets(part, strict=True)
            assert offset_in(str(info.value)) == inside, (fmt, cut)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_garbage_after_a_valid_file(fmt: str) -> None:
    good = small_pcap() if fmt == "pcap" else small_pcapng()
    # Too short for a record header: the packets, then a truncation warning at the garbage.
    n, warns = read(good + b"garbage")
    assert n == 3 and len(warns) == 1 and offset_in(warns[0]) == len(good)
    raises_at(TruncatedCaptureError, good + b"garbage", len(good), "capture ends", strict=True)
    # All-ones: an impossible length (pcapng: not a multiple of 4; pcap: over the size limit).
    exc: type[CaptureError] = CorruptCaptureError if fmt == "pcapng" else LimitExceededError
    raises_at(exc, good + b"\xff" * 32, len(good), "length" if fmt == "pcapng" else "max_block_len")
    # Text after the file: its bytes read as a block/record header that cannot be right.
    text = b"this is not part of the capture, sorry\n" * 4
    with pytest.raises(CaptureError) as info:
        burstcore.read_packets(good + text)
    assert offset_in(str(info.value)) == len(good)


def decompressed_prefix(compressed: bytes, kind: str) -> bytes:
    """What an independent decoder can recover from a compressed stream cut short."""
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(compressed)
    out = bytearray()
    dec = zstandard.ZstdDecompressor().decompressobj()
    try:
        out += dec.decompress(compressed)
    except zstandard.ZstdError:
        pass
    return bytes(out)


def zstd_in_blocks(data: bytes) -> bytes:
    """A zstd frame flushed every 40 bytes, so that a cut stream still decodes up to the cut."""
    c = zstandard.ZstdCompressor(level=3).compressobj()
    out = b"".join(
        c.compress(data[i : i + 40]) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) for i in range(0, len(data), 40)
    )
    return out + c.flush()


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_compressed_stream_cut_short(kind: str, fmt: str) -> None:
    data = small_pcap(6) if fmt == "pcap" else small_pcapng(6)
    if fmt == "pcap":
        bounds = [(0, 24, False)] + [(off, n, True) for off, n in pcap_records(data)]
    else:
        bounds = [(off, n, t == 6) for off, t, n in pcapng_blocks(data)]
    whole = gzip.compress(data, mtime=0) if kind == "gzip" else zstd_in_blocks(data)
    assert burstcore.read_packets(whole).height == 6
    checked = 0
    for cut in range(1, len(whole)):
        part = whole[:cut]
        prefix = decompressed_prefix(part, kind)
        if len(prefix) < 4:
            # Not enough of the capture inside to recognise it; once the compression is
            # recognised (its magic number whole), the message says the file is cut off.
            match = f"the {kind} stream ends early" if cut >= (2 if kind == "gzip" else 4) else None
            with pytest.raises(NotACaptureError, match=match):
                burstcore.read_packets(part)
            continue
        packets, inside = expected_after_cut(bounds, len(prefix))
        n, warns = read(part)
        assert n == packets, (kind, fmt, cut, len(prefix))
        # Always a warning: even a cut at a record boundary loses the stream's end marker.
        assert len(warns) == 1, (kind, cut, warns)
        assert f"the {kind} stream ends early" in warns[0], warns[0]
        assert offset_in(warns[0]) == (inside if inside is not None else len(prefix)), (kind, cut, warns)
        with pytest.raises(TruncatedCaptureError) as info:
            burstcore.read_packets(part, strict=True)
        assert f"the {kind} stream ends early" in str(info.value)
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_damaged_compressed_stream(kind: str) -> None:
    data = small_pcapng(6)
    if kind == "gzip":
        bad = bytearray(gzip.compress(data, mtime=0))
        bad[-8] ^= 0xFF  # the CRC-32 of the content
    else:
        bad = bytearray(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data))
        bad[-1] ^= 0xFF  # the content checksum
    with pytest.raises(DecompressionError) as info:
        burstcore.read_packets(bytes(bad))
    assert type(info.value) is DecompressionError
    assert kind in str(info.value)
    offset_in(str(info.value))


def test_empty_and_tiny_inputs() -> None:
    with pytest.raises(NotACaptureError, match="empty input"):
        burstcore.read_packets(b"")
    with pytest.raises(NotACaptureError, match="too short"):
        burstcore.read_packets(b"\xd4\xc3")
    with pytest.raises(NotACaptureError, match="empty input inside the gzip stream"):
        burstcore.read_packets(gzip.compress(b"", mtime=0))


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_damage_in_a_long_compressed_stream_is_told_near_it(kind: str) -> None:
    # The decoder was asked for the reader's 256 KiB at once, and what it had decoded before the
    # damage was lost with the failed read: a 394 kB capture damaged at 184 kB was told at
    # offset 0. Now within 32 KiB before what an independent decoder delivers, and the message
    # says how to confirm the damage and keep what precedes it.
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9")
    for i in range(2_000):
        w.epb(0, bytes([i & 0xFF]) * (60 + i % 200) + i.to_bytes(4, "big"), ts_ns=10**18 + i * 1000)
    plain = w.getvalue()
    if kind == "gzip":
        whole = gzip.compress(plain, mtime=0)
    else:
        whole = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(plain)
    blocks = [off for off, _, _ in pcapng_blocks(plain)]
    told = 0
    for frac in (0.3, 0.5, 0.7):
        bad = bytearray(whole)
        bad[int(len(bad) * frac)] ^= 0x10
        # The oracle: Python's own decoder of the same bytes, how far it gets and what it gives.
        delivered = bytearray()
        intact = True
        try:
            if kind == "gzip":
                reader: Any = gzip.GzipFile(fileobj=io.BytesIO(bytes(bad)))
            else:
                reader = zstandard.ZstdDecompressor().stream_reader(bytes(bad))
            while chunk := reader.read(4096):
                delivered += chunk
        except (OSError, EOFError, zlib.error, zstandard.ZstdError):
            intact = False
        case = (kind, frac)
        if intact:
            # A flip the format's checks let through (zstd at 0.7): it decodes to the same bytes.
            assert delivered == plain, case
            assert_frame_equal(burstcore.read_packets(bytes(bad)), burstcore.read_packets(plain))
            continue
        with pytest.raises(CaptureError) as info:
            burstcore.read_packets(bytes(bad))
        at = offset_in(str(info.value))
        if type(info.value) is DecompressionError:
            assert len(delivered) - 32 * 1024 <= at <= len(plain), (case, at, len(delivered))
            assert f"`{kind} -dc FILE > part`" in str(info.value) and "within its first" in str(info.value)
            told += 1
        else:
            # The damage decoded to bytes the reader tells as a damaged block first: the block
            # that holds the first byte the decoder got wrong.
            wrong = next((i for i, (a, b) in enumerate(zip(delivered, plain, strict=False)) if a != b), None)
            assert wrong is not None, (case, "only garbage may be told as a damaged block", str(info.value))
            assert at == max(b for b in blocks if b <= wrong), (case, at, wrong, str(info.value))
            assert type(info.value) is CorruptCaptureError, (case, str(info.value))
    assert told >= 1
