"""Every column of read_packets, row by row, against tshark's reading of the same capture.

The capture is written by burstcore's writer from a seeded mix of packets: IPv4/TCP, IPv6/UDP,
802.1Q, RoCEv2 (UDP 4791), ARP and ICMP (no ports), packets cut by a snaplen inside their payload,
TSO/GRO super-frames (IPv4 total length 0) and IPv6 jumbograms (a Jumbo Payload option) far longer
on the wire than captured, Simple Packet Blocks (no timestamp) and a second, raw-IP interface.
More than one batch of rows with nulls at every offset, so the validity bitmaps and the address
views are exercised across byte and batch boundaries. The link type has no tshark field: the
oracle there is the interface each packet was written to. Also: column subsets equal the same
columns of the full read, and a scan's "ip" and "payload" sizes are the columns' lengths.
"""

from __future__ import annotations

import ipaddress
import random
import struct
from pathlib import Path

import polars as pl
import pytest

import burstcore
from tests.conftest import epoch_ns, tshark_fields

V4 = ["10.0.0.1", "10.0.0.2", "192.168.100.200", "172.16.254.254", "8.8.8.8"]
V6 = ["2001:db8::1", "2001:db8:85a3::8a2e:370:7334", "fe80::1", "::ffff:10.0.0.1"]
ETH = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
LINKTYPES = {0: 1, 1: 101}  # interface -> LINKTYPE_ETHERNET, LINKTYPE_RAW


def _ipv4(src: str, dst: str, proto: int, l4: bytes, payload: int) -> bytes:
    total = 20 + len(l4) + payload
    a, b = ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, proto, 0, a, b) + l4 + b"\xab" * payload


def _ipv6(src: str, dst: str, nxt: int, l4: bytes, payload: int) -> bytes:
    a, b = ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed
    return struct.pack("!IHBB16s16s", 6 << 28, len(l4) + payload, nxt, 64, a, b) + l4 + b"\xcd" * payload


def _tcp(sport: int, dport: int, flags: int, seq: int = 1) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 1024, 0, 0)


def _udp(sport: int, dport: int, payload: int) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + payload, 0)


def _mix(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=LINKTYPES[0], snaplen=0, resolution="1e-9")
    w.interface(linktype=LINKTYPES[1], snaplen=0, resolution="1e-6")
    t = 1_700_000_000_000_000_000
    for _ in range(n):
        t += rng.randrange(1, 5000)
        kind = rng.choice(["tcp4", "udp6", "vlan", "roce", "arp", "icmp", "cut", "tso", "jumbo", "spb", "raw"])
        payload = rng.randrange(0, 300)
        v4 = (rng.choice(V4), rng.choice(V4))
        if kind == "tcp4":
            tcp = _tcp(rng.randrange(65536), rng.randrange(65536), rng.randrange(256), rng.randrange(1 << 32))
            w.epb(0, ETH + b"\x08\x00" + _ipv4(*v4, 6, tcp, payload), ts_ns=t)
        elif kind == "udp6":
            udp = _udp(rng.randrange(65536), rng.randrange(4792, 65536), payload)
            w.epb(0, ETH + b"\x86\xdd" + _ipv6(rng.choice(V6), rng.choice(V6), 17, udp, payload), ts_ns=t)
        elif kind == "vlan":
            tag = struct.pack("!HH", 0x8100, rng.randrange(4096))
            w.epb(0, ETH + tag + b"\x08\x00" + _ipv4(*v4, 17, _udp(1000, 2000, payload), payload), ts_ns=t)
        elif kind == "roce":
            bth = struct.pack("!BBHI", 4, 0x40, 0xFFFF, rng.randrange(1 << 24)) + b"\x80\x00\x00\x01"
            w.epb(0, ETH + b"\x08\x00" + _ipv4(*v4, 17, _udp(49152, 4791, 12 + payload) + bth, payload), ts_ns=t)
        elif kind == "arp":
            w.epb(0, ETH + b"\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x00" * 20, ts_ns=t)
        elif kind == "icmp":
            w.epb(0, ETH + b"\x08\x00" + _ipv4(*v4, 1, b"\x08\x00\x00\x00\x00\x01\x00\x01", payload), ts_ns=t)
        elif kind == "cut":  # snapped inside the payload: headers whole, cap_len < wire_len
            f = ETH + b"\x08\x00" + _ipv4(*v4, 6, _tcp(80, 443, 0x10), 200 + payload)
            w.epb(0, f[:64], ts_ns=t, wire_len=len(f))
        elif kind == "tso":  # a host's capture of a TSO/GRO (or BIG TCP) super-frame: total length 0
            f = ETH + b"\x08\x00" + _ipv4(*v4, 6, _tcp(80, 443, 0x18), payload)
            f = f[:16] + b"\x00\x00" + f[18:]
            w.epb(0, f[:96], ts_ns=t, wire_len=max(len(f), rng.randrange(1515, 200_000)))
        elif kind == "jumbo":  # IPv6 payload length 0, the length in a hop-by-hop Jumbo Payload option
            jumbo = rng.randrange(65_536, 200_000)
            hbh = struct.pack("!BBBBI", 6, 0, 0xC2, 4, jumbo)
            ip = _ipv6(rng.choice(V6), rng.choice(V6), 0, hbh + _tcp(81, 444, 0x10), payload)
            f = ETH + b"\x86\xdd" + ip[:4] + b"\x00\x00" + ip[6:]
            w.epb(0, f[:96], ts_ns=t, wire_len=14 + 40 + jumbo)
        elif kind == "spb":  # no timestamp, interface 0
            w.spb(ETH + b"\x08\x00" + _ipv4(*v4, 6, _tcp(1, 2, 2), payload))
        else:  # raw IP on interface 1, microsecond resolution
            w.epb(1, _ipv4(*v4, 6, _tcp(5, 6, 0x18), payload), ts_ns=t - t % 1000)
    path.write_bytes(w.getvalue())


FIELDS = [
    "frame.time_epoch",
    "frame.interface_id",
    "frame.len",
    "frame.cap_len",
    "ip.src",
    "ipv6.src",
    "ip.dst",
    "ipv6.dst",
    "ip.proto",
    "ipv6.nxt",
    "tcp.srcport",
    "udp.srcport",
    "tcp.dstport",
    "udp.dstport",
    "vlan.id",
    "infiniband.bth.destqp",
    "ip.len",
    "ipv6.plen",
    "tcp.len",
    "udp.length",
    "tcp.flags",
    "ipv6.opt.jumbo",
    "ipv6.hopopts.nxt",
    "tcp.seq_raw",
]


def _int(x: str) -> int | None:
    return int(x, 0) if x else None


def _ipv6_len(plen: int | None, jumbo: int | None) -> int | None:
    if plen == 0 and jumbo is not None:
        return jumbo + 40
    return plen + 40 if plen is not None else None


def _expected(row: list[str]) -> dict[str, object]:
    f = dict(zip(FIELDS, row, strict=True))
    plen = _int(f["ipv6.plen"])
    udp_len = _int(f["udp.length"])
    return {
        "timestamp": epoch_ns(f["frame.time_epoch"]) if f["frame.time_epoch"] else None,
        "interface": int(f["frame.interface_id"]),
        "wire_len": int(f["frame.len"]),
        "cap_len": int(f["frame.cap_len"]),
        "linktype": LINKTYPES[int(f["frame.interface_id"])],
        "src": f["ip.src"] or f["ipv6.src"] or None,
        "dst": f["ip.dst"] or f["ipv6.dst"] or None,
        # The transport protocol, past an IPv6 hop-by-hop header (the jumbograms') if there is one.
        "protocol": _int(f["ip.proto"]) if f["ip.proto"] else _int(f["ipv6.hopopts.nxt"] or f["ipv6.nxt"]),
        "sport": _int(f["tcp.srcport"]) if f["tcp.srcport"] else _int(f["udp.srcport"]),
        "dport": _int(f["tcp.dstport"]) if f["tcp.dstport"] else _int(f["udp.dstport"]),
        "vlan": _int(f["vlan.id"]),
        "qp": _int(f["infiniband.bth.destqp"]),
        "ip_len": _int(f["ip.len"]) if f["ip.len"] else _ipv6_len(plen, _int(f["ipv6.opt.jumbo"])),
        "payload_len": _int(f["tcp.len"]) if f["tcp.len"] else (udp_len - 8 if udp_len is not None else None),
        "tcp_flags": _int(f["tcp.flags"]),
        "tcp_seq": _int(f["tcp.seq_raw"]),
    }


SCHEMA = {
    "timestamp": pl.Datetime("ns", "UTC"),
    "interface": pl.UInt32,
    "wire_len": pl.UInt32,
    "cap_len": pl.UInt32,
    "linktype": pl.UInt16,
    "src": pl.String,
    "dst": pl.String,
    "protocol": pl.UInt8,
    "sport": pl.UInt16,
    "dport": pl.UInt16,
    "vlan": pl.UInt16,
    "qp": pl.UInt32,
    "ip_len": pl.UInt32,
    "payload_len": pl.UInt32,
    "tcp_flags": pl.UInt8,
    "tcp_seq": pl.UInt32,
}


@pytest.fixture(scope="module")
def mix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mix") / "mix.pcapng"
    _mix(path, 1300, seed=7)
    return path


def test_every_column_equals_tshark(mix: Path) -> None:
    rows = tshark_fields(mix, FIELDS)
    df = burstcore.read_packets(mix)
    assert dict(df.schema) == SCHEMA
    assert df.height == len(rows) == 1300
    got = df.with_columns(pl.col("timestamp").dt.epoch("ns")).to_dicts()
    for i, (g, r) in enumerate(zip(got, rows, strict=True)):
        assert g == _expected(r), (i, r)
    # Every kind of null and value occurs (the mix is not accidentally uniform).
    for name in SCHEMA:
        assert df[name].n_unique() > 1, name


def test_scan_counts_the_lengths_the_columns_hold(mix: Path) -> None:
    # size="ip" and "payload" in a scan are the columns' lengths (checked against tshark above),
    # the super-frames' lengths from the wire, not from the 96 bytes captured, included.
    df = burstcore.read_packets(mix, columns=["timestamp", "ip_len", "payload_len", "wire_len", "cap_len"])
    # Only the super-frames and jumbograms are longer than 1500 bytes, and only on the wire.
    assert df.filter((pl.col("ip_len") > 1500) & (pl.col("cap_len") <= 96)).height > 100
    for size, col in (("ip", "ip_len"), ("payload", "payload_len")):
        held = df.filter(pl.col("timestamp").is_not_null() & pl.col(col).is_not_null())
        for threads in (1, 2):
            groups = burstcore.scan(mix, windows=["1s"], size=size, threads=threads).groups
            row = groups.filter(pl.col("by") == "all").row(0, named=True)
            assert (row["packets"], row["bytes"]) == (held.height, held[col].cast(pl.UInt64).sum()), (size, threads)


def test_subsets_equal_the_full_read(mix: Path) -> None:
    full = burstcore.read_packets(mix)
    rng = random.Random(3)
    names = list(SCHEMA)
    for _ in range(12):
        cols = rng.sample(names, rng.randrange(1, len(names)))
        assert burstcore.read_packets(mix, columns=cols).equals(full.select(cols)), cols
    assert burstcore.read_packets(mix, columns=[]).shape == (0, 0)
    # One name is one column, not its letters; a column named twice comes once, where first named.
    assert burstcore.read_packets(mix, columns="wire_len").equals(full.select("wire_len"))
    twice = burstcore.read_packets(mix, columns=["src", "dst", "src"])
    assert twice.equals(full.select("src", "dst"))


def test_columns_outlive_the_reader(mix: Path) -> None:
    # The frame owns the Rust buffers (released through the Arrow release callback): reading many
    # times and dropping all but the last must leave that one intact.
    ref = burstcore.read_packets(mix).to_dicts()
    frames = [burstcore.read_packets(mix) for _ in range(5)]
    last = frames[-1]
    del frames
    assert last.to_dicts() == ref
    ((src,),), _, _ = burstcore._burstcore.read_table(str(mix), ["src"])  # one thread: one chunk
    assert pl.Series(src).to_list() == [r["src"] for r in ref]
    # Two threads: a list of columns per byte range, whose rows in order are the file's.
    chunks, _, _ = burstcore._burstcore.read_table(str(mix), ["src"], threads=2)
    assert len(chunks) == 2
    assert [a for (c,) in chunks for a in pl.Series(c).to_list()] == [r["src"] for r in ref]
    with pytest.raises(ValueError, match="already handed over"):
        src.__arrow_c_array__()
    # Columns are released one by one: a frame keeping one column keeps only that one's memory
    # (and never-consumed columns are released with their capsules).
    kept = burstcore.read_packets(mix).select("dst")
    burstcore._burstcore.read_table(str(mix), None)
    assert kept.to_series().to_list() == [r["dst"] for r in ref]


def test_the_timestamps_integer_ns_are_a_view_not_a_column(mix: Path) -> None:
    # read_packets has no timestamp_ns column (8 bytes a packet more); the docstring and README
    # give df["timestamp"].dt.epoch("ns") instead, as exact and copying nothing. The oracle for the
    # values is tshark's (test_every_column_equals_tshark); here, the packets with a timestamp
    # (start= leaves the others out: numpy takes no view of a column with nulls) in one chunk.
    df = burstcore.read_packets(mix, columns=["timestamp"], threads=1, start=0)
    assert df.columns == ["timestamp"] and df.n_chunks() == 1 and df.height > 1000
    ts = df["timestamp"]
    ns = ts.dt.epoch("ns")
    assert ns.dtype == pl.Int64
    view = ns.to_numpy(allow_copy=False)
    held = ts.to_physical().to_numpy(allow_copy=False)
    assert view.__array_interface__["data"][0] == held.__array_interface__["data"][0]
