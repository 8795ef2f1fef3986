"""Header decoding of hostile frames against tshark and tcpdump.

Each frame is built here with ``struct`` (VLAN stacks, PPPoE, MPLS, IPv4 options and bogus
lengths, fragments, IPv6 extension chains and jumbograms, tunnels, RoCEv2, Linux cooked, BSD
loopback, raw IP, 802.11 plain and behind radiotap, PPI, Prism and AVS headers, 802.11s mesh
data frames, PPI over other link types, Ethernet pseudowires under MPLS, runts, padding, bogus TCP
data offsets and UDP lengths) and written by burstcore's writer, one interface per link type.
``read_packets``' header columns must be what tshark reads (IP reassembly off), but where
docs/metrics.md says burstcore reads otherwise: those cases name the rule and give the
hand-decoded value. Filters must select what tcpdump selects on the same frames, but where
docs/filters.md says they differ.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import burstcore
from tests.conftest import shared_file, tshark_fields

T0 = 1_700_000_000_000_000_000
ETH = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
S4, D4 = "10.0.0.1", "10.0.0.2"
S6, D6 = "2001:db8::1", "2001:db8::2"


def tcp(sport: int = 1111, dport: int = 2222, off: int = 5, opts: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1000, 0, off << 4, 0x18, 1024, 0, 0) + opts


def udp(sport: int = 3333, dport: int = 4444, payload: int = 0, length: int | None = None) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + payload if length is None else length, 0)


def ip4(
    proto: int,
    l4: bytes,
    payload: int = 0,
    *,
    ihl: int = 5,
    total: int | None = None,
    frag: int = 0,
    src: str = S4,
    dst: str = D4,
    version: int = 4,
) -> bytes:
    opts = b"\x01" * (max(ihl, 5) * 4 - 20)
    n = 20 + len(opts) + len(l4) + payload if total is None else total
    a, b = ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed
    head = struct.pack("!BBHHHBBH4s4s", version << 4 | ihl, 0, n, 7, frag, 64, proto, 0, a, b)
    return head + opts + l4 + b"\xab" * payload


def ip6(nxt: int, body: bytes, payload: int = 0, plen: int | None = None) -> bytes:
    p = len(body) + payload if plen is None else plen
    a, b = ipaddress.IPv6Address(S6).packed, ipaddress.IPv6Address(D6).packed
    return struct.pack("!IHBB16s16s", 6 << 28, p, nxt, 64, a, b) + body + b"\xcd" * payload


def ext(nxt: int, units: int = 0) -> bytes:
    """A hop-by-hop, routing or destination options header of 8 * (units + 1) bytes."""
    return bytes([nxt, units]) + b"\x01\x04\x00\x00\x00\x00" + b"\x00" * (8 * units)


def frag6(nxt: int, offset: int, more: int) -> bytes:
    return struct.pack("!BBHI", nxt, 0, offset << 3 | more, 0x1234)


def ah(nxt: int) -> bytes:
    """An authentication header of (4 + 2) * 4 = 24 bytes."""
    return bytes([nxt, 4, 0, 0]) + b"\x00\x00\x01\x00\x00\x00\x00\x01" + b"\x00" * 12


def eth(ethertype: int, body: bytes) -> bytes:
    return ETH + struct.pack("!H", ethertype) + body


def tags(*tpid_vid: tuple[int, int]) -> bytes:
    return b"".join(struct.pack("!HH", t, v) for t, v in tpid_vid)


def pppoe(protocol: int, body: bytes, length: int | None = None) -> bytes:
    return b"\x11\x00\x00\x01" + struct.pack("!HH", len(body) + 2 if length is None else length, protocol) + body


def sll(protocol: int) -> bytes:
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\x00\x00", protocol)


def sll2(protocol: int) -> bytes:
    return struct.pack("!HHIHBB8s", protocol, 0, 3, 1, 0, 6, b"\x02" * 6 + b"\x00\x00")


def mpls(label: int, bottom: int) -> bytes:
    return struct.pack("!I", label << 12 | bottom << 8 | 64)


SNAP_IPV4 = b"\xaa\xaa\x03\x00\x00\x00\x08\x00"
SNAP_IPV6 = b"\xaa\xaa\x03\x00\x00\x00\x86\xdd"


def llc(body: bytes) -> bytes:
    """An IEEE 802.3 frame: a length field (counting ``body``) instead of an EtherType."""
    return ETH + struct.pack("!H", len(body)) + body


WLAN_DATA = b"\x08\x02\x00\x00" + b"\x02" * 6 + b"\x04" * 6 + b"\x06" * 6 + b"\x00\x00"


def wlan(fc: int, flags: int, *, qos: int | None = None, htc: bool = False, pad: int = 0) -> bytes:
    """An 802.11 header: Frame Control's two bytes, then the addresses (a fourth with To DS and
    From DS both set), a QoS Control field and an HT Control field where asked."""
    head = bytes([fc, flags]) + b"\x00\x00" + b"\x02" * 6 + b"\x04" * 6 + b"\x06" * 6 + b"\x10\x00"
    head += b"\x08" * 6 if flags & 3 == 3 else b""
    head += b"" if qos is None else bytes([qos, 0])
    return head + (b"\x00\x00\x00\x80" if htc else b"") + b"\x00" * pad


def radiotap(flags: int | None = None, *, tsft: bool = False, ext: bool = False) -> bytes:
    """A radiotap header with a TSFT (8-byte aligned), a Flags field, and an empty second
    presence word where asked."""
    present = [(1 if tsft else 0) | (0 if flags is None else 2) | (1 << 31 if ext else 0)] + ([0] if ext else [])
    fields = b"".join(struct.pack("<I", w) for w in present)
    if tsft:
        fields += b"\x00" * (-(4 + len(fields)) % 8) + struct.pack("<Q", 123456)
    if flags is not None:
        fields += bytes([flags])
    return struct.pack("<BBH", 0, 0, 4 + len(fields)) + fields


def ppi(fcs: bool | None, dlt: int = 105) -> bytes:
    """A PPI header over 802.11, with an 802.11-Common field (its flags' bit 0 an FCS) where
    asked."""
    common = b"" if fcs is None else struct.pack("<HHQHHHHHbb", 2, 20, 123456, int(fcs), 2, 2412, 0xA0, 0, -40, -90)
    return struct.pack("<BBHI", 0, 0, 8 + len(common), dlt) + common


def amsdu(body: bytes) -> bytes:
    """An A-MSDU subframe: destination, source, length, then the MSDU padded to 4 bytes."""
    return b"\x0a" * 6 + b"\x0b" * 6 + struct.pack("!H", len(body)) + body + b"\x00" * (-(14 + len(body)) % 4)


def prism(*, big_endian: bool = False, code: int = 0x44) -> bytes:
    """A Prism (wlan-ng) header: message code, length, device name, ten 12-byte items."""
    e = ">" if big_endian else "<"
    items = b"".join(struct.pack(e + "IHHI", 0x1041 + i, 0, 4, i) for i in range(10))
    return struct.pack(e + "II16s", code, 144, b"wlan0") + items


def avs(version: int = 1, length: int = 64) -> bytes:
    """An AVS radio header (big-endian): magic and version, its length, then the radio fields."""
    fields = struct.pack(">QQIIIIIIIIII", 1, 2, 1, 6, 20, 0, 0, 1, 0xFFFFFFC0, 0xFFFFFFA0, 0, 1)
    head = struct.pack(">II", 0x80211000 | version, length) + fields
    return head[:length] + b"\x00" * (length - len(head))


def mesh(mode: int, flags: int = 0) -> bytes:
    """An 802.11s Mesh Control field: flags (Address Extension Mode in bits 0-1), TTL, sequence
    number, then 6 bytes per extended address (mode 3, reserved, taken as three)."""
    return bytes([flags | mode, 31]) + struct.pack("<I", 77) + b"\x0c" * (6 * mode)


def mesh_qos(flags: int, *, amsdu: bool = False) -> bytes:
    """A QoS data frame's header whose QoS Control announces Mesh Control."""
    return wlan(0x88, flags, qos=0x80 if amsdu else 0)[:-2] + (b"\x80" if amsdu else b"\x00") + b"\x01"


# Two stations of assigned (vendor) addresses: Intel and Cisco OUIs.
PW_MACS = b"\x00\x1b\x21\x01\x02\x03" + b"\x00\x00\x0c\x04\x05\x06"
CW = b"\x00\x00\x00\x00"


WLAN_UDP = SNAP_IPV4 + ip4(17, udp(payload=2), 2)
JUMBO = 70_000

TCP6_FULL = tcp()
VXLAN = b"\x08\x00\x00\x00\x00\x00\x64\x00"
INNER = ip4(17, udp(payload=1), 1, src="192.168.0.1", dst="192.168.0.2")
BTH = struct.pack("!BBHI", 4, 0x40, 0xFFFF, 0xAB) + b"\x80\x00\x00\x01"

# Where burstcore reads a frame otherwise than tshark, by a rule of docs/metrics.md: the fields
# it gives instead, decoded by hand.
NO_PORTS = {"sport": None, "dport": None, "payload_len": None}
NO_IP = {"src": None, "dst": None, "sport": None, "dport": None, "ip_len": None, "payload_len": None}
PW_TCP = {"src": S4, "dst": D4, "sport": 1111, "dport": 2222, "ip_len": 40, "payload_len": 0}

# (name, link type, frame, length on the wire or None for the frame's, fields burstcore reads
# otherwise than tshark and why)
CASES: list[tuple[str, int, bytes, int | None, dict[str, Any]]] = [
    ("802.1Q", 1, ETH + tags((0x8100, 100)) + b"\x08\x00" + ip4(17, udp(payload=10), 10), None, {}),
    ("802.1ad+802.1Q", 1, ETH + tags((0x88A8, 200), (0x8100, 100)) + b"\x08\x00" + ip4(6, tcp(), 5), None, {}),
    ("0x9100+802.1Q", 1, ETH + tags((0x9100, 300), (0x8100, 101)) + b"\x86\xdd" + ip6(17, udp(payload=4), 4), None, {}),
    ("three tags", 1, ETH + tags((0x88A8, 1), (0x8100, 2), (0x8100, 3)) + b"\x08\x00" + ip4(17, udp()), None, {}),
    ("tag cut by the snaplen", 1, (ETH + tags((0x8100, 100)) + b"\x08\x00" + ip4(17, udp()))[:17], 146, {}),
    ("pppoe ipv4", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7))), None, {}),
    ("pppoe ipv6 under a tag", 1, ETH + tags((0x8100, 7)) + b"\x88\x64" + pppoe(0x0057, ip6(17, udp())), None, {}),
    ("pppoe lcp", 1, eth(0x8864, pppoe(0xC021, b"\x01\x01\x00\x04")), None, {}),
    ("pppoe length short", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7), length=10)), None, {}),
    ("pppoe length inside the tcp", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7), length=32)), None, {}),
    ("pppoe length past the frame", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7), length=500)), None, {}),
    ("pppoe length 1", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7), length=1)), None, {}),
    ("pppoe length 0", 1, eth(0x8864, pppoe(0x0021, ip4(6, tcp(), 7), length=0)), None, {}),
    ("pppoe padded", 1, eth(0x8864, pppoe(0x0021, ip4(17, udp(payload=1), 1))) + b"\x00" * 20, None, {}),
    ("ipv4 options", 1, eth(0x0800, ip4(6, tcp(), 3, ihl=6)), None, {}),
    ("ipv4 ihl 15", 1, eth(0x0800, ip4(17, udp(payload=3), 3, ihl=15)), None, {}),
    ("ipv4 ihl 4", 1, eth(0x0800, ip4(17, udp(payload=3), 3, ihl=4)), None, {}),
    ("ipv4 cut by the snaplen", 1, eth(0x0800, ip4(6, tcp(), 500))[:80], 554, {}),
    ("ipv4 total past the wire", 1, eth(0x0800, ip4(6, tcp(), 50, total=1000)), None,
     {"payload_len": 960}),  # the claim is kept; tshark's tcp.len counts what the frame holds
    ("ipv4 total inside the frame", 1, eth(0x0800, ip4(6, tcp(), 50, total=60)), None, {}),
    ("ipv4 total below the header", 1, eth(0x0800, ip4(6, tcp(), 50, total=12)), None,
     {"src": S4, "dst": D4}),  # the IP fields are kept, nothing after them read
    ("ipv4 total inside the tcp header", 1, eth(0x0800, ip4(6, tcp(), 50, total=30)), None, {}),
    ("ipv4 total 0", 1, eth(0x0800, ip4(6, tcp(), 50, total=0)), None, {}),
    ("ipv4 total 0 cut", 1, eth(0x0800, ip4(6, tcp(), 50, total=0))[:70], 9000, {}),
    ("ipv6 under 0x0800", 1, eth(0x0800, ip6(17, udp(payload=2), 2)), None, {}),
    ("ipv4 under 0x86dd", 1, eth(0x86DD, ip4(17, udp(payload=2), 2)), None, {}),
    ("ipv4 version 5", 1, eth(0x0800, ip4(17, udp(payload=2), 2, version=5)), None, {}),
    ("first fragment", 1, eth(0x0800, ip4(17, udp(dport=53, payload=100), 40, frag=0x2000)), None,
     {"payload_len": 40}),  # this fragment's, the UDP length (108) capped by the IP payload
    ("later fragment", 1, eth(0x0800, ip4(17, udp(payload=100), 40, frag=0x0005)), None, {}),
    ("don't fragment", 1, eth(0x0800, ip4(6, tcp(), 40, frag=0x4000)), None, {}),
    ("padded to 60", 1, eth(0x0800, ip4(17, udp(payload=2), 2)) + b"\x00" * 16, None, {}),
    ("tcp padded to 60", 1, eth(0x0800, ip4(6, tcp(), 0)) + b"\x00" * 6, None, {}),
    ("tcp data offset 4", 1, eth(0x0800, ip4(6, tcp(off=4), 20)), None,
     {"payload_len": None}),  # a bogus TCP header length is damage
    ("tcp data offset past the capture", 1, eth(0x0800, ip4(6, tcp(off=15), 60))[:64], 114, {}),
    ("tcp data offset past the ip payload", 1, eth(0x0800, ip4(6, tcp(off=15), 10)), None, {}),
    ("tcp cut between the ports", 1, eth(0x0800, ip4(6, tcp(), 10))[:37], 64,
     {"sport": 1111}),  # TCP fields are read as far as captured
    ("tcp cut after the ports", 1, eth(0x0800, ip4(6, tcp(), 10))[:38], 64,
     {"sport": 1111, "dport": 2222}),
    ("udp length past the ip payload", 1, eth(0x0800, ip4(17, udp(payload=10, length=500), 10)), None,
     {"payload_len": 10}),  # capped by the IP length
    ("udp length inside the ip payload", 1, eth(0x0800, ip4(17, udp(payload=10, length=12), 10)), None, {}),
    ("udp length below 8", 1, eth(0x0800, ip4(17, udp(payload=10, length=4), 10)), None, {}),
    ("udp length 0", 1, eth(0x0800, ip4(17, udp(payload=10, length=0), 10)), None, {}),
    ("udp length 0 over ipv6", 1, eth(0x86DD, ip6(17, udp(payload=10, length=0), 10)), None, {}),
    ("udp cut by the ip length", 1, eth(0x0800, ip4(17, udp(), 10, total=27)), None, {}),
    ("udp cut between the ports by the ip length", 1, eth(0x86DD, ip6(17, udp(), 10, plen=2)), None, {}),
    ("tcp cut between the ports by the ip length", 1, eth(0x0800, ip4(6, tcp(), 10, total=23)), None, {}),
    ("hop-by-hop", 1, eth(0x86DD, ip6(0, ext(17) + udp(payload=4), 4)), None, {}),
    ("routing", 1, eth(0x86DD, ip6(43, ext(6, 2) + tcp(), 4)), None, {}),
    ("ipv6 first fragment", 1, eth(0x86DD, ip6(44, frag6(17, 0, 1) + udp(payload=50), 20)), None,
     {"payload_len": 20}),
    ("ipv6 later fragment", 1, eth(0x86DD, ip6(44, frag6(17, 10, 0) + udp(payload=50), 20)), None, {}),
    ("destination options", 1, eth(0x86DD, ip6(60, ext(6, 1) + tcp(), 4)), None, {}),
    ("ah", 1, eth(0x86DD, ip6(51, ah(6) + tcp(), 4)), None, {}),
    ("esp", 1, eth(0x86DD, ip6(50, b"\x00\x00\x01\x00\x00\x00\x00\x01" + b"\x00" * 24)), None, {}),
    ("no next header", 1, eth(0x86DD, ip6(0, ext(59) + b"\x00" * 8)), None, {}),
    ("mobility", 1, eth(0x86DD, ip6(135, bytes([59, 1, 5, 0, 0, 0]) + b"\x00" * 10)), None, {}),
    ("mobility then tcp", 1, eth(0x86DD, ip6(135, bytes([6, 1, 5, 0, 0, 0]) + b"\x00" * 10 + tcp())), None, {}),
    ("hip then tcp", 1, eth(0x86DD, ip6(139, bytes([6, 4, 1, 0x11, 0, 0, 0, 0]) + b"\x00" * 32 + tcp())), None, {}),
    ("shim6 then tcp", 1, eth(0x86DD, ip6(140, bytes([6, 0, 0x80, 0, 0, 0, 0, 1]) + tcp(), 3)), None, {}),
    ("long chain", 1, eth(0x86DD, ip6(0, ext(60) + ext(43, 1) + frag6(51, 0, 0) + ah(60) + ext(6) + tcp())), None, {}),
    ("chain past the payload length", 1, eth(0x86DD, ip6(0, ext(6, 3) + tcp(), 0, plen=16)), None, {}),
    ("chain cut", 1, eth(0x86DD, ip6(0, ext(6, 3) + tcp(), 10))[:64], 116, {}),
    ("jumbogram", 1, eth(0x86DD, ip6(0, struct.pack("!BBBBI", 6, 0, 0xC2, 4, JUMBO) + tcp(), 20, plen=0))[:120],
     14 + 40 + JUMBO, {}),
    ("udp jumbogram", 1, eth(0x86DD, ip6(0, struct.pack("!BBBBI", 17, 0, 0xC2, 4, JUMBO) + udp(length=0), plen=0)),
     14 + 40 + JUMBO, {"payload_len": JUMBO - 8 - 8}),  # UDP length 0 over > 65,535 bytes
    ("ipv6 payload length 0", 1, eth(0x86DD, ip6(6, tcp(), 30, plen=0)), None,
     {"sport": 1111, "dport": 2222, "ip_len": 90, "payload_len": 30}),  # the rest of the frame, as for IPv4
    ("ipv6 payload length past the wire", 1, eth(0x86DD, ip6(17, udp(payload=10), 10, plen=900)), None, {}),
    ("gre", 1, eth(0x0800, ip4(47, b"\x00\x00\x08\x00" + ip4(6, tcp(), 3, src="192.168.0.1"))), None, NO_PORTS),
    ("vxlan", 1, eth(0x0800, ip4(17, udp(55555, 4789, 8 + 14 + len(INNER)) + VXLAN + eth(0x0800, INNER))), None, {}),
    ("ip in ip", 1, eth(0x0800, ip4(4, INNER)), None, NO_PORTS),  # outer keys only
    ("6in4", 1, eth(0x0800, ip4(41, ip6(17, udp(payload=1), 1))), None, NO_PORTS),
    ("4in6", 1, eth(0x86DD, ip6(4, INNER)), None, NO_PORTS),
    ("rocev2", 1, eth(0x0800, ip4(17, udp(49152, 4791, 12 + 16) + BTH, 16)), None, {}),
    ("rocev2 bth cut", 1, eth(0x0800, ip4(17, udp(49152, 4791, 12 + 16) + BTH, 16))[:48], 70, {}),
    ("13 bytes", 1, ETH + b"\x08", None, {}),
    ("no bytes", 1, b"", None, {}),
    ("ethertype ipv4 alone", 1, eth(0x0800, b""), None, {}),
    ("arp", 1, eth(0x0806, b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x00" * 20), None, {}),
    ("ipv4 cut in its source", 1, eth(0x0800, ip4(17, udp()))[:28], 42, {}),
    ("ipv4 cut in its destination", 1, eth(0x0800, ip4(17, udp()))[:32], 42, {}),
    ("ipv4 options cut by the snaplen", 1, eth(0x0800, ip4(17, udp(), ihl=6))[:36], 50,
     {"dst": D4}),  # its 4 bytes were captured (tshark stops at it when the options are cut)
    ("ipv6 cut in its destination", 1, eth(0x86DD, ip6(17, udp()))[:44], 62, {}),
    ("sll ipv4", 113, sll(0x0800) + ip4(6, tcp(), 5), None, {}),
    ("sll tagged", 113, sll(0x8100) + struct.pack("!HH", 55, 0x0800) + ip4(17, udp(payload=5), 5), None, {}),
    ("sll padded", 113, sll(0x0800) + ip4(17, udp(payload=1), 1) + b"\x00" * 20, None, {}),
    ("sll pppoe", 113, sll(0x8864) + pppoe(0x0021, ip4(6, tcp(), 7)), None, {}),
    ("sll cut", 113, sll(0x0800)[:10], None, {}),
    ("sll llc/snap", 113, sll(0x0004) + SNAP_IPV4 + ip4(17, udp(payload=2), 2), None, {}),
    ("sll llc spanning tree", 113, sll(0x0004) + b"\x42\x42\x03" + b"\x00" * 35, None, {}),
    ("sll llc/snap cut by the snaplen", 113, sll(0x0004) + SNAP_IPV4[:5], 60, {}),
    ("sll2 llc/snap ipv6", 276, sll2(0x0004) + SNAP_IPV6 + ip6(6, tcp(), 2), None, {}),
    ("sll2 ipv6", 276, sll2(0x86DD) + ip6(17, udp(payload=5), 5), None, {}),
    ("sll2 tagged", 276, sll2(0x8100) + struct.pack("!HH", 56, 0x86DD) + ip6(17, udp(payload=5), 5), None, {}),
    ("sll2 pppoe", 276, sll2(0x8864) + pppoe(0x0057, ip6(6, tcp(), 2)), None, {}),
    ("null little-endian", 0, struct.pack("<I", 2) + ip4(6, tcp(), 5), None, {}),
    ("null big-endian", 0, struct.pack(">I", 2) + ip4(6, tcp(), 5), None, {}),
    ("null ipv6 24", 0, struct.pack("<I", 24) + ip6(17, udp(payload=2), 2), None, {}),
    ("null ipv6 28", 0, struct.pack("<I", 28) + ip6(17, udp(payload=2), 2), None, {}),
    ("null ipv6 30 big-endian", 0, struct.pack(">I", 30) + ip6(17, udp(payload=2), 2), None, {}),
    ("null ethertype", 0, b"\x0f\x00\x08\x00" + ip4(17, udp(payload=2), 2), None, {}),
    ("null unknown family", 0, struct.pack("<I", 7) + ip4(17, udp(payload=2), 2), None, {}),
    ("null padded", 0, struct.pack("<I", 2) + ip4(17, udp(payload=2), 2) + b"\x00" * 9, None, {}),
    ("loop", 108, struct.pack(">I", 24) + ip6(6, tcp(), 5), None, {}),
    ("raw ipv4", 101, ip4(6, tcp(), 5), None, {}),
    ("raw ipv6", 101, ip6(17, udp(payload=3), 3), None, {}),
    ("raw neither", 101, b"\x55" * 30, None, {}),
    ("raw padded", 101, ip4(17, udp(payload=3), 3) + b"\x00" * 9, None, {}),
    ("raw 12", 12, ip4(17, udp(payload=3), 3), None, {}),
    ("raw 14", 14, ip6(17, udp(payload=3), 3), None, {}),
    ("ipv4 link", 228, ip4(17, udp(payload=3), 3), None, {}),
    ("ipv6 link", 229, ip6(6, tcp(), 3), None, {}),
    ("ipv6 on the ipv4 link", 228, ip6(6, tcp(), 3), None, {}),
    # IP that burstcore does not look for (docs/metrics.md, "Keys come from..."): tshark does.
    ("mpls", 1, eth(0x8847, mpls(100, 0) + mpls(200, 1) + ip4(6, tcp(), 5)), None, {}),
    ("mpls one label", 1, eth(0x8847, mpls(100, 1) + ip4(17, udp(payload=3), 3)), None, {}),
    ("mpls three labels ipv6", 1, eth(0x8847, mpls(1, 0) + mpls(2, 0) + mpls(3, 1) + ip6(6, tcp(), 9)), None, {}),
    ("mpls multicast", 1, eth(0x8848, mpls(100, 1) + ip6(17, udp())), None, {}),
    ("mpls explicit null ipv6", 1, eth(0x8847, mpls(0, 1) + ip6(17, udp(payload=1), 1)), None, {}),
    ("mpls under a tag", 1, ETH + tags((0x8100, 8)) + b"\x88\x47" + mpls(16, 1) + ip4(6, tcp(), 2), None, {}),
    # Ethernet pseudowires of locally administered (and, after the control word, known-looking)
    # addresses: tshark guesses at the control word by its manufacturer list, burstcore by what
    # follows the addresses (docs/metrics.md), and reads the IP tshark misses.
    ("mpls control word", 1, eth(0x8847, mpls(100, 1) + b"\x00" * 4 + eth(0x0800, ip4(6, tcp()))), None,
     PW_TCP),
    ("mpls ethernet", 1, eth(0x8847, mpls(100, 1) + eth(0x0800, ip4(6, tcp()))), None, PW_TCP),
    ("mpls pw control word", 1, eth(0x8847, mpls(100, 1) + CW + PW_MACS + b"\x08\x00" + ip4(17, udp(payload=2), 2)),
     None, {}),
    ("mpls pw no control word", 1, eth(0x8847, mpls(100, 1) + PW_MACS + b"\x08\x00" + ip4(6, tcp(), 3)), None, {}),
    ("mpls pw sequence number", 1, eth(0x8847, mpls(100, 1) + b"\x00\x00\x12\x34" + PW_MACS + b"\x08\x00"
     + ip4(17, udp(payload=2), 2)), None, {}),
    ("mpls pw two labels tagged ipv6", 1, eth(0x8847, mpls(16, 0) + mpls(100, 1) + CW + PW_MACS + tags((0x8100, 42))
     + b"\x86\xdd" + ip6(6, tcp(), 3)), None, {}),
    ("mpls pw 802.3 snap", 1, eth(0x8847, mpls(100, 1) + PW_MACS + struct.pack("!H", 8 + 30) + SNAP_IPV4
     + ip4(17, udp(payload=2), 2)), None, {}),
    ("mpls pw arp", 1, eth(0x8847, mpls(100, 1) + CW + PW_MACS + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04"
     + b"\x00" * 22), None, {}),
    ("mpls pw in a pw", 1, eth(0x8847, mpls(100, 1) + CW + PW_MACS + b"\x88\x47" + mpls(200, 1) + CW + PW_MACS
     + b"\x08\x00" + ip4(6, tcp(), 1)), None, {}),
    ("mpls pw nibble 0xa", 1, eth(0x8847, mpls(100, 1) + b"\xa0" + PW_MACS[1:] + b"\x08\x00" + ip4(6, tcp())),
     None, {}),
    ("mpls pw cut in the inner header", 1, eth(0x8847, mpls(100, 1) + CW + PW_MACS + b"\x08\x00" + ip4(6, tcp()))[:30],
     80, {}),
    ("mpls g-ach", 1, eth(0x8847, mpls(13, 1) + b"\x10\x00\x00\x21" + ip4(6, tcp())), None,
     NO_IP),  # tshark reads the IPv4 channel of a G-ACh header; only nibbles 4 and 6 are IP here
    ("mpls stack cut by the snaplen", 1, eth(0x8847, mpls(1, 0) + mpls(2, 1) + ip4(6, tcp()))[:20], 62, {}),
    ("sll mpls", 113, sll(0x8847) + mpls(100, 1) + ip4(17, udp(payload=2), 2), None, {}),
    ("llc/snap", 1, llc(SNAP_IPV4 + ip4(17, udp(payload=2), 2)), None, {}),
    ("llc/snap ipv6", 1, llc(SNAP_IPV6 + ip6(6, tcp(), 4)), None, {}),
    ("llc/snap oui 00-00-f8", 1, llc(b"\xaa\xaa\x03\x00\x00\xf8\x08\x00" + ip4(6, tcp())), None, {}),
    ("llc/snap under a tag", 1, ETH + tags((0x8100, 9)) + llc(SNAP_IPV4 + ip4(6, tcp(), 1))[12:], None, {}),
    ("llc/snap then a tag", 1, llc(b"\xaa\xaa\x03\x00\x00\x00\x81\x00" + tags((9, 0x0800)) + ip4(6, tcp())), None, {}),
    ("llc/snap mpls", 1, llc(b"\xaa\xaa\x03\x00\x00\x00\x88\x47" + mpls(5, 1) + ip4(6, tcp())), None, {}),
    ("llc/snap padded", 1, llc(SNAP_IPV4 + ip4(6, tcp(), 1)) + b"\x00" * 20, None, {}),
    ("llc/snap length short", 1, ETH + b"\x00\x1b" + SNAP_IPV4 + ip4(6, tcp(), 1), None,
     {}),  # the 802.3 length ends in the IPv4 destination: the source is read, as tshark reads it
    ("llc/snap length 0", 1, ETH + b"\x00\x00" + SNAP_IPV4 + ip4(6, tcp(), 1), None, {}),
    ("llc/snap length 1501", 1, ETH + b"\x05\xdd" + SNAP_IPV4 + ip4(6, tcp(), 1), None, {}),
    ("llc/snap cut by the snaplen", 1, llc(SNAP_IPV4 + ip4(6, tcp()))[:19], 62, {}),
    ("llc/snap cisco oui", 1, llc(b"\xaa\xaa\x03\x00\x00\x0c\x08\x00" + ip4(6, tcp())), None, {}),
    ("llc spanning tree", 1, llc(b"\x42\x42\x03" + ip4(6, tcp())), None, {}),
    ("radiotap", 127, struct.pack("<BBHI", 0, 0, 8, 0) + WLAN_DATA + SNAP_IPV4 + ip4(17, udp()), None, {}),
    ("802.11", 105, WLAN_DATA + WLAN_UDP, None, {}),
    ("802.11 from ds", 105, wlan(0x08, 0x02) + SNAP_IPV6 + ip6(6, tcp(), 3), None, {}),
    ("802.11 wds", 105, wlan(0x08, 0x03) + WLAN_UDP, None, {}),
    ("802.11 qos", 105, wlan(0x88, 0x01, qos=5) + WLAN_UDP, None, {}),
    ("802.11 qos wds", 105, wlan(0x88, 0x03, qos=0) + SNAP_IPV4 + ip4(6, tcp(), 4), None, {}),
    ("802.11 qos ht control", 105, wlan(0x88, 0x81, qos=0, htc=True) + WLAN_UDP, None, {}),
    ("802.11 order without qos", 105, wlan(0x08, 0x81) + WLAN_UDP, None, {}),
    ("802.11 a-msdu", 105, wlan(0x88, 0x01, qos=0x80) + amsdu(WLAN_UDP) + amsdu(SNAP_IPV4 + ip4(6, tcp())), None, {}),
    ("802.11 protected", 105, wlan(0x88, 0x41, qos=0) + b"\x00" * 8 + WLAN_UDP, None, {}),
    ("802.11 null", 105, wlan(0x48, 0x01), None, {}),
    ("802.11 null with bytes after it", 105, wlan(0x48, 0x01) + WLAN_UDP, None, {}),
    ("802.11 qos null", 105, wlan(0xC8, 0x01, qos=0), None, {}),
    ("802.11 beacon", 105, wlan(0x80, 0x00) + b"\x00" * 12 + WLAN_UDP, None, {}),
    ("802.11 eapol", 105, wlan(0x08, 0x02) + b"\xaa\xaa\x03\x00\x00\x00\x88\x8e" + b"\x01\x03\x00\x04" * 2, None, {}),
    ("802.11 other llc", 105, wlan(0x08, 0x02) + b"\x42\x42\x03" + b"\x00" * 40, None, {}),
    ("802.11 header cut", 105, wlan(0x88, 0x01, qos=0)[:20], 90, {}),
    ("802.11 snap cut", 105, (wlan(0x08, 0x01) + WLAN_UDP)[:28], 70, {}),
    ("radiotap flags", 127, radiotap(0x00) + wlan(0x88, 0x01, qos=0) + WLAN_UDP, None, {}),
    ("radiotap tsft and flags", 127, radiotap(0x02, tsft=True) + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("radiotap two presence words", 127, radiotap(0x00, tsft=True, ext=True) + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("radiotap fcs", 127, radiotap(0x10) + wlan(0x08, 0x02) + WLAN_UDP + b"\x12\x34\x56\x78", None, {}),
    ("radiotap fcs, ip length past it", 127, radiotap(0x10) + wlan(0x08, 0x02) + SNAP_IPV4
     + ip4(17, udp(payload=4), 4) + b"\x12\x34", None, {}),
    ("radiotap fcs cut by the snaplen", 127, (radiotap(0x10, tsft=True) + wlan(0x08, 0x02) + SNAP_IPV4
     + ip4(17, udp(payload=4), 4))[:77], 17 + 24 + 8 + 30 + 4, {}),  # the IP length (32) is past the frame
    ("radiotap data pad", 127, radiotap(0x20) + wlan(0x88, 0x01, qos=0, pad=2) + WLAN_UDP, None, {}),
    ("radiotap length past the frame", 127, struct.pack("<BBHI", 0, 0, 200, 0) + WLAN_DATA + WLAN_UDP, None, {}),
    ("ppi", 192, ppi(False) + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("ppi without 802.11-common", 192, ppi(None) + wlan(0x88, 0x01, qos=0) + SNAP_IPV6 + ip6(6, tcp(), 1), None, {}),
    ("ppi fcs", 192, ppi(True) + wlan(0x08, 0x02) + WLAN_UDP + b"\x12\x34\x56\x78", None, {}),
    ("ppi fcs, ip length past it", 192, ppi(True) + wlan(0x08, 0x02) + SNAP_IPV4
     + ip4(17, udp(payload=4), 4) + b"\x12\x34", None, {}),
    ("radiotap length below 8", 127, struct.pack("<BBHI", 0, 0, 4, 0) + WLAN_DATA + WLAN_UDP, None, {}),
    ("ppi ethernet", 192, ppi(None, dlt=1) + eth(0x0800, ip4(17, udp(payload=2), 2)), None, {}),
    ("ppi ethernet with 802.11-common", 192, ppi(False, dlt=1) + ETH + tags((0x8100, 5)) + b"\x86\xdd"
     + ip6(6, tcp(), 2), None, {}),
    ("ppi raw", 192, ppi(None, dlt=101) + ip4(6, tcp(), 4), None, {}),
    ("ppi linux cooked", 192, ppi(None, dlt=113) + sll(0x0800) + ip4(17, udp(payload=1), 1), None, {}),
    ("ppi radiotap", 192, ppi(None, dlt=127) + radiotap(0x10) + wlan(0x08, 0x02) + WLAN_UDP + b"\x12\x34\x56\x78",
     None, {}),
    ("ppi unknown dlt", 192, ppi(None, dlt=147) + eth(0x0800, ip4(6, tcp())), None, {}),
    ("ppi ethernet cut", 192, (ppi(None, dlt=1) + eth(0x0800, ip4(6, tcp())))[:30], 62, {}),
    ("prism", 119, prism() + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("prism big-endian qos", 119, prism(big_endian=True) + wlan(0x88, 0x01, qos=0) + SNAP_IPV6 + ip6(6, tcp(), 2),
     None, {}),
    ("prism message 0x41", 119, prism(code=0x41) + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("prism without its header", 119, wlan(0x08, 0x01) + WLAN_UDP, None, {}),
    ("prism carrying avs", 119, avs() + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("prism cut", 119, (prism() + wlan(0x08, 0x02) + WLAN_UDP)[:100], 220, {}),
    ("avs", 163, avs() + wlan(0x08, 0x02) + WLAN_UDP, None, {}),
    ("avs version 2", 163, avs(2, 80) + wlan(0x88, 0x01, qos=0) + WLAN_UDP, None, {}),
    ("avs longer header", 163, avs(1, 72) + wlan(0x08, 0x02) + SNAP_IPV6 + ip6(17, udp(payload=3), 3), None, {}),
    ("avs length past the frame", 163, avs(1, 64)[:4] + struct.pack(">I", 500) + avs()[8:] + wlan(0x08, 0x02)
     + WLAN_UDP, None, {}),
    ("avs cut", 163, avs()[:6], 100, {}),
    ("mesh", 105, mesh_qos(0x02) + mesh(0) + WLAN_UDP, None, {}),
    ("mesh bit to ds", 105, mesh_qos(0x01) + mesh(0) + WLAN_UDP, None, {}),
    ("mesh one address", 105, mesh_qos(0x03) + mesh(1) + WLAN_UDP, None, {}),
    ("mesh two addresses", 105, mesh_qos(0x02) + mesh(2) + SNAP_IPV6 + ip6(6, tcp(), 5), None, {}),
    ("mesh mode 3", 105, mesh_qos(0x03) + mesh(3) + WLAN_UDP, None, {}),
    ("mesh bit without mesh control", 105, mesh_qos(0x03) + WLAN_UDP, None, {}),
    ("mesh reserved flags", 105, mesh_qos(0x02) + mesh(0, flags=0x04) + WLAN_UDP, None, {}),
    ("mesh a-msdu", 105, mesh_qos(0x03, amsdu=True) + amsdu(mesh(0) + WLAN_UDP), None, {}),
    ("mesh control before an a-msdu", 105, mesh_qos(0x03, amsdu=True) + mesh(0) + amsdu(WLAN_UDP), None, {}),
    ("mesh radiotap", 127, radiotap(0x00) + mesh_qos(0x03) + mesh(1) + WLAN_UDP, None, {}),
    ("mesh cut", 105, (mesh_qos(0x02) + mesh(2) + WLAN_UDP)[:34], 80, {}),
]  # fmt: skip


def write(path: Path, cases: list[tuple[str, int, bytes, int | None, dict[str, Any]]], fmt: str = "pcapng") -> None:
    if fmt == "pcap":
        (linktype,) = {c[1] for c in cases}
        pw = burstcore.CaptureWriter("pcap", nanos=True, linktype=linktype)
        for i, (_, _, data, wire, _) in enumerate(cases):
            pw.packet(T0 + i * 1000, data, wire_len=len(data) if wire is None else wire)
        path.write_bytes(pw.getvalue())
        return
    linktypes = list(dict.fromkeys(c[1] for c in cases))
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    for lt in linktypes:
        w.interface(linktype=lt, snaplen=0, resolution="1e-9")
    for i, (_, lt, data, wire, _) in enumerate(cases):
        w.epb(linktypes.index(lt), data, ts_ns=T0 + i * 1000, wire_len=len(data) if wire is None else wire)
    path.write_bytes(w.getvalue())


FIELDS = [
    "frame.protocols",
    "ip.src",
    "ip.dst",
    "ipv6.src",
    "ipv6.dst",
    "tcp.srcport",
    "tcp.dstport",
    "udp.srcport",
    "udp.dstport",
    "ip.len",
    "ipv6.plen",
    "ipv6.opt.jumbo",
    "tcp.len",
    "udp.length",
    "udp.checksum",
    "udp.payload",
]


def tshark_reading(row: list[str]) -> dict[str, Any]:
    """The columns as tshark's fields give them: the outermost IP header's addresses and
    lengths, the first TCP or UDP header's ports."""
    f = dict(zip(FIELDS, row, strict=True))
    layers = f["frame.protocols"].split(":")
    # tshark's IPv4 dissector hands a version-6 header on (no ip.len) without a layer of its own.
    v4_first = bool(f["ip.len"]) and ("ipv6" not in layers or layers.index("ip") < layers.index("ipv6"))
    num = lambda k: int(f[k]) if f[k] else None  # noqa: E731
    if v4_first:
        ip_len = num("ip.len")
    elif f["ipv6.plen"]:
        plen, jumbo = num("ipv6.plen"), num("ipv6.opt.jumbo")
        ip_len = 40 + (jumbo if plen == 0 and jumbo is not None else plen or 0)
    else:
        ip_len = None
    on_tcp = layers.index("tcp") < layers.index("udp") if "tcp" in layers and "udp" in layers else "tcp" in layers
    if on_tcp:
        sport, dport, payload = num("tcp.srcport"), num("tcp.dstport"), num("tcp.len")
    else:
        udp_len = num("udp.length")
        sport, dport = num("udp.srcport"), num("udp.dstport")
        if udp_len is None or not f["udp.checksum"]:  # the header is not whole inside the IP length
            payload = None
        elif udp_len >= 8:
            payload = udp_len - 8
        elif udp_len == 0 and not v4_first:  # tshark reads the IP payload, with a warning
            payload = len(f["udp.payload"]) // 2
        else:  # "Bad length value"
            payload = None
    return {
        "src": (f["ip.src"] if v4_first else f["ipv6.src"]) or None,
        "dst": (f["ip.dst"] if v4_first else f["ipv6.dst"]) or None,
        "sport": sport,
        "dport": dport,
        "ip_len": ip_len,
        "payload_len": payload,
    }


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "hostile.pcapng"
    write(path, CASES)
    return path


def test_header_columns_are_what_tshark_reads(gallery: Path) -> None:
    rows = tshark_fields(gallery, FIELDS, ["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"])
    cols = ["src", "dst", "sport", "dport", "ip_len", "payload_len"]
    got = burstcore.read_packets(gallery, columns=cols).to_dicts()
    assert len(got) == len(rows) == len(CASES)
    wrong = []
    for (name, _, _, _, otherwise), g, r in zip(CASES, got, rows, strict=True):
        want = tshark_reading(r) | otherwise
        if g != want:
            wrong.append(f"{name}: burstcore {g}, expected {want} (tshark {tshark_reading(r)})")
    assert not wrong, "\n".join(wrong)
    # The rules above are each met by some frame (the gallery is not accidentally tame).
    differ = [name for (name, *_, otherwise), r in zip(CASES, rows, strict=True) if otherwise]
    assert len(differ) >= 15


# Corpus captures of what the gallery's newer cases decode: an Ethernet pseudowire with a control
# word under MPLS (and an MPLS stack under two tags), PPI over 802.11, 802.11 mesh management.
CORPUS = [
    "pcapplusplus/Tests/Packet++Test/PacketExamples/MplsPackets.pcap",
    "libpcap/tests/filter/http_PPI.pcap",
    "tcpdump/tests/ieee802.11_meshid.pcap",
]


@pytest.mark.parametrize("rel", CORPUS)
def test_corpus_header_columns_are_what_tshark_reads(rel: str) -> None:
    path = shared_file("corpus/" + rel)
    rows = tshark_fields(path, FIELDS, ["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"])
    cols = ["src", "dst", "sport", "dport", "ip_len", "payload_len"]
    got = burstcore.read_packets(path, columns=cols).to_dicts()
    assert len(got) == len(rows) > 0
    for i, (g, r) in enumerate(zip(got, rows, strict=True)):
        assert g == tshark_reading(r), (i, r)
    if "Mpls" in rel:  # the pseudowire's inner IP is there to be read (the test is not vacuous)
        assert sum(r[0].count(":pwethcw:") for r in rows) == 1 and all(g["src"] for g in got)


def test_sizes_of_a_scan_follow_the_columns(gallery: Path) -> None:
    # size="ip"/"payload" count the columns' lengths, skipping a packet without one and a
    # packet whose IP length claims more than its frame carried on the wire.
    df = burstcore.read_packets(gallery, columns=["ip_len", "payload_len", "wire_len", "linktype"])
    link = {1: 14, 113: 16, 276: 20, 0: 4, 108: 4, 101: 0, 12: 0, 14: 0, 228: 0, 229: 0}
    # The link header up to the IP header, by hand: tags and PPPoE are the frames' own.
    # The IP packet's bytes on the wire: the frame's but the link header in front (`front`), an
    # FCS behind (`trailer`), and those past a PPPoE length (`limit`).
    front, trailer, limits = [], [], []
    for name, lt, data, _, _ in CASES:
        extra = 0
        limit = None
        trailer.append(4 if "fcs" in name else 0)
        if lt in (105, 127, 192, 119, 163):  # the IP packet follows a SNAP header where there is one
            at = max(data.find(SNAP_IPV4), data.find(SNAP_IPV6))
            front.append(at + 8 if at >= 0 else 0)
            limits.append(None)
            continue
        if lt in (1, 113, 276):
            at = link[lt] - 2
            ty = struct.unpack_from("!H", data, at)[0] if len(data) >= at + 2 else None
            while ty in (0x8100, 0x88A8, 0x9100) and len(data) >= at + 6:
                extra += 4
                at += 4
                ty = struct.unpack_from("!H", data, at)[0]
            if lt == 1 and ty is not None and ty <= 1500 and data[at + 2 : at + 5] == SNAP_IPV4[:3]:
                limit = ty - 8  # the 802.3 length counts the SNAP header and the IP packet
                extra += 8
                at += 8
                ty = struct.unpack_from("!H", data, at)[0] if len(data) >= at + 2 else None
                while ty == 0x8100 and len(data) >= at + 6:  # the one frame with a tag after SNAP
                    extra += 4
                    at += 4
                    ty = struct.unpack_from("!H", data, at)[0]
            if ty == 0x8864 and len(data) >= at + 8:
                extra += 8
                limit = struct.unpack_from("!H", data, at + 6)[0] - 2
            if ty in (0x8847, 0x8848):
                while len(data) >= at + 6:
                    extra += 4
                    at += 4
                    if data[at] & 1:  # the entry just skipped: its third byte holds the bottom bit
                        break
        front.append(link.get(lt, 0) + extra)
        limits.append(limit)
    fits = [
        ip is not None and ip <= wire - f - t and (lim is None or ip <= lim)
        for ip, wire, f, t, lim in zip(
            df["ip_len"].to_list(), df["wire_len"].to_list(), front, trailer, limits, strict=True
        )
    ]
    for size, col in (("ip", "ip_len"), ("payload", "payload_len")):
        vals = [v for v, ok in zip(df[col].to_list(), fits, strict=True) if ok and v is not None]
        s = burstcore.scan(gallery, windows=["1s"], size=size).groups.filter(pl.col("by") == "all").row(0, named=True)
        assert (s["packets"], s["bytes"]) == (len(vals), sum(vals)), size


# ------------------------------------------------------------------------------ filters, tcpdump

# Frames on which burstcore's filters read otherwise than tcpdump by docs/filters.md, "Where it
# differs from tcpdump" (tags and PPPoE looked through, IPv6 extension headers followed, the IP
# version read from the header, IPv6 payload length 0 and cut chains
# read on), and link types tcpdump has no filters for here.
TCPDUMP_OTHERWISE = {
    "802.1Q", "802.1ad+802.1Q", "0x9100+802.1Q", "three tags", "pppoe ipv4", "pppoe ipv6 under a tag",
    "ipv4 ihl 4", "ipv4 version 5", "ipv6 under 0x0800", "ipv4 total below the header",
    "hop-by-hop", "routing", "ipv6 first fragment", "destination options", "ah", "long chain",
    "no next header", "chain past the payload length", "chain cut", "jumbogram", "udp jumbogram",
    "tag cut by the snaplen", "shim6 then tcp",
    "tcp cut between the ports by the ip length",  # BPF reads the ports the capture holds
    "no bytes",  # tcpdump's printer shows no line for it
    # MPLS and LLC/SNAP are looked through (tcpdump reads them only after 'mpls' or at offsets).
    *(name for name, *_ in CASES if name.startswith(("mpls", "llc", "pppoe"))),
}  # fmt: skip

EXPRESSIONS = [
    "ip",
    "ip6",
    "tcp",
    "udp",
    "port 2222",
    "not port 2222",
    "src port 1111",
    "not dst port 2222",
    "port 53",
    "port 4791",
    "host 10.0.0.1",
    "not host 10.0.0.2",
    "host 2001:db8::1",
    "host 192.168.0.1",
    "ip proto 47",
    "ip proto 4",
    "ip6 proto 135",
    "ip6 proto 139",
    "net 10.0.0.0/8",
    "vlan",
    "less 60",
    "greater 61",
    "arp",
    "icmp",
]


def _tcpdump_stamps(path: Path, expr: str) -> set[int]:
    exe = shutil.which("tcpdump")
    if exe is None:
        pytest.fail("tcpdump is not installed (bash .ci/setup installs it)")
    out = subprocess.run(
        [exe, "--time-stamp-precision=nano", "-nn", "-tt", "-r", str(path), expr],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        assert "expression rejects all packets" in out.stderr, out.stderr
        return set()
    return {
        int(m[1]) * 10**9 + int(m[2]) for line in out.stdout.splitlines() if (m := re.match(r"(\d+)\.(\d{9}) ", line))
    }


def test_filters_select_what_tcpdump_selects(tmp_path: Path) -> None:
    # One classic pcap of the Ethernet frames tcpdump and burstcore read alike, and one with the
    # frames whose filters the review found wrong: a TCP header cut between its ports, a tag cut
    # by the snaplen, short non-IP packets under IP EtherTypes.
    ether = [c for c in CASES if c[1] == 1 and c[0] not in TCPDUMP_OTHERWISE]
    path = tmp_path / "ether.pcap"
    write(path, ether, fmt="pcap")
    names = {T0 + i * 1000: c[0] for i, c in enumerate(ether)}
    wrong = []
    for expr in [*EXPRESSIONS, "vlan 100", "not vlan 200 and less 100"]:
        want = _tcpdump_stamps(path, expr)
        df = burstcore.read_packets(path, columns=["timestamp"], filter=expr)
        got = set(df["timestamp"].dt.epoch("ns").to_list())
        wrong += [f"{expr!r} {names[t]}: tcpdump {t in want}, burstcore {t in got}" for t in sorted(want ^ got)]
    assert not wrong, "\n".join(wrong)


# 802.11 frames whose IP libpcap's filters do not find, where tshark and tcpdump's own printer
# read it (docs/filters.md): BPF skips a 24-byte header and a QoS Control field only (no fourth
# address, no HT Control, no radiotap data pad), reads an A-MSDU's subframe header as LLC and a
# Null frame's bytes as a body, and a frame without a body ends its program, `not` tests too.
WIFI_TCPDUMP_OTHERWISE = {
    "802.11 wds", "802.11 qos wds", "802.11 qos ht control", "radiotap data pad", "802.11 a-msdu",
    "802.11 null with bytes after it", "802.11 null", "802.11 qos null",
    # BPF skips no Mesh Control field (and these are 4-address or A-MSDU frames besides).
    *(name for name, *_ in CASES if name.startswith("mesh")),
    # libpcap presumes a Prism header before every frame (tshark and burstcore look for one).
    "prism without its header",
    # libpcap's PPI programs reject every frame whose DLT is not 802.11's, `less` tests too.
    *(name for name, lt, data, *_ in CASES if lt == 192 and data[4] != 105),
}  # fmt: skip


def test_filters_read_wifi_frames_as_tcpdump_reads_them(tmp_path: Path) -> None:
    # One classic pcap per 802.11 link type: libpcap skips the radiotap, PPI, Prism or AVS header
    # and the 802.11 header of the common data frames as burstcore does.
    wrong = []
    for linktype in (105, 127, 192, 119, 163):
        cases = [c for c in CASES if c[1] == linktype and c[0] not in WIFI_TCPDUMP_OTHERWISE]
        path = tmp_path / f"wifi{linktype}.pcap"
        write(path, cases, fmt="pcap")
        names = {T0 + i * 1000: c[0] for i, c in enumerate(cases)}
        # tcpdump refuses 'vlan' on PPI ("no VLAN support for Per-Packet Information").
        for expr in [e for e in EXPRESSIONS if linktype != 192 or e != "vlan"]:
            want = _tcpdump_stamps(path, expr)
            df = burstcore.read_packets(path, columns=["timestamp"], filter=expr)
            got = set(df["timestamp"].dt.epoch("ns").to_list())
            wrong += [f"{expr!r} {names[t]}: tcpdump {t in want}, burstcore {t in got}" for t in sorted(want ^ got)]
    assert not wrong, "\n".join(wrong)


def test_mobility_and_hip_headers_end_the_ipv6_chain(gallery: Path) -> None:
    # tshark's protocol after the fixed header is the Next Header it names, and it reads no
    # transport header after a Mobility or HIP header; Shim6 it walks through.
    rows = tshark_fields(gallery, ["ipv6.nxt", "frame.protocols"])
    got = burstcore.read_packets(gallery, columns=["protocol"])["protocol"].to_list()
    seen = 0
    for (name, *_), (nxt, layers), proto in zip(CASES, rows, got, strict=True):
        if name.startswith(("mobility", "hip")):
            assert proto == int(nxt) and layers.split(":")[-1] in ("mipv6", "hip"), name
            seen += 1
        elif name.startswith("shim6"):
            assert proto == 6 and layers.split(":")[3:5] == ["shim6", "tcp"], name
            seen += 1
    assert seen == 4


def test_a_tag_cut_by_the_snaplen_is_read_as_tcpdump_reads_it(tmp_path: Path) -> None:
    # tcpdump's 'vlan 100' reads the first tag only: the frame whose second tag was cut off is
    # one both keep; 'vlan 5' (no tag says it) tcpdump drops and burstcore cannot tell.
    frame = ETH + tags((0x8100, 100), (0x8100, 5)) + b"\x08\x00" + ip4(17, udp())
    cases = [(f"cut at {n}", 1, frame[:n], len(frame), {}) for n in (16, 17, 18, 20, 21)]
    path = tmp_path / "tags.pcap"
    write(path, cases, fmt="pcap")  # type: ignore[arg-type]
    for expr, want in [("vlan 100", {16, 17, 18, 20, 21}), ("vlan", {16, 17, 18, 20, 21})]:
        assert _tcpdump_stamps(path, expr) == {T0 + i * 1000 for i, n in enumerate((16, 17, 18, 20, 21)) if n in want}
        got = burstcore.read_packets(path, columns=["cap_len"], filter=expr)["cap_len"].to_list()
        assert set(got) == want, expr
    # Cut before the second tag's id: burstcore's 'vlan 5' asks of both tags, and cannot tell.
    got = burstcore.read_packets(path, columns=["cap_len"], filter="not vlan 5")["cap_len"].to_list()
    assert got == [], got


def test_filters_look_through_mpls_and_snap_as_tshark_reads_them(tmp_path: Path) -> None:
    # tcpdump reads no IP under MPLS or SNAP without its own words, so tshark's display filters
    # are the oracle here: the same selection on the frames read alike (docs/filters.md).
    cases = [
        c
        for c in CASES
        if c[0].startswith(("mpls", "llc"))
        and not c[4]
        and "cut" not in c[0]
        and c[0] not in ("mpls g-ach", "llc/snap length short")  # a display filter has no "unknown"
    ]
    path = tmp_path / "shims.pcapng"
    write(path, cases)
    wrong = []
    for expr, display in [
        ("host 10.0.0.1", "ip.addr == 10.0.0.1"),
        ("not host 10.0.0.2", "!(ip.addr == 10.0.0.2)"),
        ("ip6", "ipv6"),
        ("tcp port 2222", "tcp.port == 2222"),
        ("udp", "udp"),
        ("host 2001:db8::2 and tcp", "ipv6.addr == 2001:db8::2 && tcp"),
    ]:
        want = {T0 + (int(r[0]) - 1) * 1000 for r in tshark_fields(path, ["frame.number"], ["-Y", display])}
        got = set(burstcore.read_packets(path, columns=["timestamp"], filter=expr)["timestamp"].dt.epoch("ns"))
        wrong += [f"{expr!r} {cases[(t - T0) // 1000][0]}: tshark {t in want}" for t in sorted(want ^ got)]
    assert not wrong, "\n".join(wrong)
    # A label stack or SNAP header the snaplen cut is a cut frame: no address test can tell.
    cut = [c for c in CASES if c[0] in ("mpls stack cut by the snaplen", "llc/snap cut by the snaplen")]
    write(path, cut)
    for expr in ("host 10.0.0.1", "not host 10.0.0.1", "vlan", "less 100"):
        got = burstcore.read_packets(path, columns=["cap_len"], filter=expr)["cap_len"].to_list()
        assert got == ([20, 19] if expr == "less 100" else []), expr


# ------------------------------------------------------------------ headers cut at every length

# Frames cut by a snaplen at every length from the Ethernet header's end to the transport ports'.
CUT_FRAMES = {
    "ipv4 tcp": eth(0x0800, ip4(6, tcp(), 10)),
    "ipv4 udp": eth(0x0800, ip4(17, udp(payload=10), 10, src="192.168.7.9", dst="172.16.0.3")),
    "ipv4 later fragment": eth(0x0800, ip4(17, udp(payload=100), 40, frag=0x0005)),
    "ipv6 tcp": eth(0x86DD, ip6(6, tcp(), 10)),
    "ipv6 udp": eth(0x86DD, ip6(17, udp(payload=2), 2)),
    "vlan ipv4 tcp": ETH + tags((0x8100, 100)) + b"\x08\x00" + ip4(6, tcp(), 10),
    "vlan ipv6 udp": ETH + tags((0x8100, 100)) + b"\x86\xdd" + ip6(17, udp(payload=2), 2),
}


def _cut_cases(kinds: list[str]) -> list[tuple[str, int, bytes, int | None, dict[str, Any]]]:
    return [
        (f"{kind} cut at {n}", 1, frame[:n], len(frame), {})
        for kind in kinds
        for frame in [CUT_FRAMES[kind]]
        for n in range(14, len(frame) - 10 + 1)
    ]


def _ports_start(kind: str) -> int:
    return 14 + (4 if kind.startswith("vlan") else 0) + (40 if "ipv6" in kind else 20)


def test_a_header_cut_at_any_length_has_the_fields_tshark_shows(tmp_path: Path) -> None:
    # Each IP field is there once its bytes are (IPv4: the total length from 4 bytes of the
    # header, the protocol from 10, the source from 16, the destination from 20; IPv6: the
    # payload length and the protocol from 7, the source from 24, the destination from 40).
    cases = _cut_cases(list(CUT_FRAMES))
    path = tmp_path / "cut.pcapng"
    write(path, cases)
    rows = tshark_fields(path, [*FIELDS, "ip.proto", "ipv6.nxt", "vlan.id"], ["-o", "ip.defragment:FALSE"])
    cols = ["src", "dst", "sport", "dport", "ip_len", "protocol", "vlan"]
    got = burstcore.read_packets(path, columns=cols).to_dicts()
    assert len(got) == len(rows) == len(cases)
    wrong, partial = [], 0
    for (name, _, data, _, _), g, r in zip(cases, got, rows, strict=True):
        kind = name.split(" cut at ")[0]
        proto, nxt, vlan = r[len(FIELDS) :]
        want = tshark_reading(r[: len(FIELDS)]) | {
            "protocol": int(proto or nxt) if proto or nxt else None,
            "vlan": int(vlan) if vlan else None,
        }
        if len(data) in (_ports_start(kind) + 2, _ports_start(kind) + 3):
            want["sport"] = struct.unpack_from("!H", data, _ports_start(kind))[0]  # docs/metrics.md
        if "fragment" in kind:  # tshark reads the first bytes of a cut later fragment as UDP's
            want["sport"] = want["dport"] = None
        # The payload length (once TCP's data offset is captured, docs/metrics.md; tshark gives
        # none for a TCP header cut) is no field of the IP header: the gallery covers it.
        del want["payload_len"]
        if g != want:
            wrong.append(f"{name}: burstcore {g}, tshark {want}")
        partial += g["ip_len"] is not None and g["dst"] is None
    assert not wrong, "\n".join(wrong)
    assert partial >= 40  # headers cut inside themselves have fields here (not vacuous)


# Expressions on every IP field of the cut frames: tcpdump's BPF rejects a packet at a load past
# the captured bytes, so a field not captured matches no test, `not` of it included.
CUT_EXPRESSIONS = [
    *EXPRESSIONS,
    "src host 10.0.0.1",
    "dst host 10.0.0.2",
    "not src host 10.0.0.9",
    "not dst host 10.0.0.9",
    "src and dst host 10.0.0.1",
    "not host 172.16.0.3",
    "src host 2001:db8::1",
    "not dst host 2001:db8::9",
    "src net 192.168.0.0/16",
    "ip proto 6",
    "not tcp",
    "not udp",
    "not src port 1",
    "src and dst port 1111",
    "not port 4444",
    "src port 80 or dst port 2222 or src port 3333",
]


def test_filters_on_a_header_cut_at_any_length_select_what_tcpdump_selects(tmp_path: Path) -> None:
    cases = _cut_cases([k for k in CUT_FRAMES if not k.startswith("vlan")])
    path = tmp_path / "cut.pcap"
    write(path, cases, fmt="pcap")
    names = {T0 + i * 1000: c[0] for i, c in enumerate(cases)}
    wrong, kept = [], 0
    for expr in CUT_EXPRESSIONS:
        want = _tcpdump_stamps(path, expr)
        got = set(burstcore.read_packets(path, columns=["timestamp"], filter=expr)["timestamp"].dt.epoch("ns"))
        wrong += [f"{expr!r} {names[t]}: tcpdump {t in want}, burstcore {t in got}" for t in sorted(want ^ got)]
        kept += len(want)
    assert not wrong, "\n".join(wrong)
    assert kept > 1000
    # Tagged frames: tcpdump reads past a tag only after 'vlan' (burstcore reads through it).
    cases = _cut_cases([k for k in CUT_FRAMES if k.startswith("vlan")])
    write(path, cases, fmt="pcap")
    names = {T0 + i * 1000: c[0] for i, c in enumerate(cases)}
    for expr in CUT_EXPRESSIONS:
        if expr in ("vlan", "less 60", "greater 61", "arp"):
            continue
        tagged = f"vlan and ({expr})"
        want = _tcpdump_stamps(path, tagged)
        got = set(burstcore.read_packets(path, columns=["timestamp"], filter=tagged)["timestamp"].dt.epoch("ns"))
        wrong += [f"{tagged!r} {names[t]}: tcpdump {t in want}, burstcore {t in got}" for t in sorted(want ^ got)]
    assert not wrong, "\n".join(wrong)
