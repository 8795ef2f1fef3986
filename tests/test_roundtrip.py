"""Writer → reader round trips, exactly, for random mixes of sections, byte orders, interfaces with
any resolution and signed offset, and every block type. The expected packets are computed here from
the pcapng rules, independently of burstcore's conversions."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore

from . import oracles
from .conftest import tshark_fields

I64 = 2**63


@dataclass
class Iface:
    linktype: int
    snaplen: int
    resolution: str
    offset_s: int
    index: int  # global

    def units_per_second(self) -> int:
        kind, k = self.resolution[:2], int(self.resolution.split("-")[1])
        return 10**k if kind == "1e" else 2**k

    def ns(self, raw: int) -> int | None:
        # floor(raw · 10⁹ / units) + offset·10⁹; None when beyond i64 ns
        t = raw * 10**9 // self.units_per_second() + self.offset_s * 10**9
        return t if -I64 <= t < I64 else None


resolutions = st.one_of(
    st.integers(0, 12).map(lambda k: f"1e-{k}"),
    st.integers(0, 40).map(lambda k: f"2^-{k}"),
)
payload = st.binary(min_size=0, max_size=80)


@st.composite
def captures(draw):
    w = burstcore.CaptureWriter("pcapng")
    expected: list[tuple[int | None, int, int, int]] = []  # (ts_ns, interface, wire_len, cap_len)
    n_ifaces = 0
    for _ in range(draw(st.integers(1, 3))):
        w.section(draw(st.sampled_from(["little", "big"])))
        ifaces: list[Iface] = []
        for _ in range(draw(st.integers(1, 3))):
            i = Iface(
                linktype=draw(st.sampled_from([1, 101, 113, 0])),
                snaplen=draw(st.sampled_from([0, 64, 128, 65535])),
                resolution=draw(resolutions),
                offset_s=draw(st.integers(-(10**9), 10**9)),
                index=n_ifaces,
            )
            local = w.interface(linktype=i.linktype, snaplen=i.snaplen, resolution=i.resolution, ts_offset_s=i.offset_s)
            assert local == len(ifaces)
            ifaces.append(i)
            n_ifaces += 1
        for _ in range(draw(st.integers(0, 12))):
            kind = draw(st.sampled_from(["epb", "epb", "spb", "opb", "nrb", "isb", "dsb", "custom", "unknown"]))
            data = draw(payload)
            extra = draw(st.integers(0, 3000))
            if kind in ("epb", "opb"):
                i = ifaces[draw(st.integers(0, len(ifaces) - 1))]
                data = data[: i.snaplen or None]  # a record holds at most its interface's snaplen
            if kind == "epb":
                raw = draw(st.integers(0, 2**64 - 1) | st.integers(0, 2**40))
                w.epb(ifaces.index(i), data, ts_raw=raw, wire_len=len(data) + extra)
                expected.append((i.ns(raw), i.index, len(data) + extra, len(data)))
            elif kind == "opb":
                raw = draw(st.integers(0, 2**40))
                w.opb(ifaces.index(i), raw, data, wire_len=len(data) + extra)
                expected.append((i.ns(raw), i.index, len(data) + extra, len(data)))
            elif kind == "spb":
                i0 = ifaces[0]
                wire = len(data) + extra
                cap = min(wire, i0.snaplen) if i0.snaplen else wire
                # An SPB's captured length is min(original length, snaplen of interface 0).
                w.spb(bytes(cap), wire_len=wire)
                expected.append((None, i0.index, wire, cap))
            elif kind == "nrb":
                w.nrb([("10.0.0.1", "a.example"), ("2001:db8::1", "b.example")])
            elif kind == "isb":
                w.isb(draw(st.integers(0, len(ifaces) - 1)), draw(st.integers(0, 2**40)), if_recv=5, if_drop=1)
            elif kind == "dsb":
                w.dsb(0x544C534B, data)
            elif kind == "custom":
                w.custom(data, copyable=draw(st.booleans()))
            else:
                w.raw_block(draw(st.sampled_from([0x0B, 0x101, 0x7FFF_FFFF])), data)
    return w.getvalue(), expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(captures())
def test_pcapng_roundtrip(cap):
    data, expected = cap
    df = burstcore.read_packets(data, columns=["timestamp", "interface", "wire_len", "cap_len"])
    got = list(
        zip(
            df["timestamp"].dt.epoch("ns").to_list(),
            df["interface"].to_list(),
            df["wire_len"].to_list(),
            df["cap_len"].to_list(),
            strict=True,
        )
    )
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["little", "big"]),
    st.booleans(),
    st.lists(
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 10**9 - 1), payload, st.integers(0, 100)), max_size=15
    ),
)
def test_pcap_roundtrip(byte_order, nanos, pkts):
    w = burstcore.CaptureWriter("pcap", byte_order=byte_order, nanos=nanos, linktype=1)
    expected = []
    for sec, sub, data, extra in pkts:
        ts = sec * 10**9 + (sub if nanos else sub // 1000 * 1000)
        w.packet(ts, data, wire_len=len(data) + extra)
        expected.append((ts, len(data) + extra, len(data)))
    df = burstcore.read_packets(w.getvalue(), columns=["timestamp", "wire_len", "cap_len"])
    got = list(
        zip(df["timestamp"].dt.epoch("ns").to_list(), df["wire_len"].to_list(), df["cap_len"].to_list(), strict=True)
    )
    assert got == expected
    assert df.schema["timestamp"] == pl.Datetime("ns", "UTC")


def test_pcapng_writer_takes_the_constructors_defaults():
    # For pcapng the constructor's byte order, resolution, link type and snaplen are the
    # defaults of section() and interface(); an interface before any section gets one; what
    # section() and interface() are given wins.
    w = burstcore.CaptureWriter("pcapng", byte_order="big", nanos=True, linktype=101, snaplen=96)
    w.interface()
    w.interface(linktype=1, snaplen=0, resolution="1e-3")
    ip = b"\x45" + b"\x00" * 19
    w.epb(0, ip, ts_ns=1_700_000_000_123_456_789)
    w.section(byte_order="little")
    w.interface()
    w.epb(0, ip, ts_ns=1_700_000_000_000_000_001)
    d = burstcore.info(w.getvalue()).to_dict()
    assert [s["byte_order"] for s in d["sections"]] == ["big", "little"]
    got = [(i["section"], i["linktype"], i["snaplen"], i["resolution"]) for i in d["interfaces"]]
    assert got == [(0, 101, 96, "1e-9"), (0, 1, 0, "1e-3"), (1, 101, 96, "1e-9")]
    ts = burstcore.read_packets(w.getvalue())["timestamp"].dt.epoch("ns").to_list()
    assert ts == [1_700_000_000_123_456_789, 1_700_000_000_000_000_001]
    # Without arguments, as before: little-endian, Ethernet, no snaplen, microseconds.
    plain = burstcore.CaptureWriter("pcapng")
    plain.section()
    plain.interface()
    d = burstcore.info(plain.getvalue()).to_dict()
    assert d["sections"][0]["byte_order"] == "little"
    assert [(i["linktype"], i["snaplen"], i["resolution"]) for i in d["interfaces"]] == [(1, 0, "1e-6")]


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_oracle_captures_hold_the_sizes_asked_for(tmp_path, fmt):
    # oracles.capture(ts, sizes, frames=...) cuts a frame longer than its size: the pcap branch
    # recorded the frame's own length as the length on the wire (142, not 60), the pcapng branch
    # the size. tshark reads both.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)
    assert len(frame) == 142
    sizes = [60, 142, 200, 0]
    path = tmp_path / f"c.{fmt}"
    path.write_bytes(oracles.capture([1000, 2000, 3000, 4000], sizes, fmt=fmt, frames=[frame] * 4))
    rows = tshark_fields(path, ["frame.len", "frame.cap_len"])
    assert [(int(a), int(b)) for a, b in rows] == [(60, 60), (142, 142), (200, 142), (0, 0)]


@pytest.mark.parametrize("resolution", ["1e-+6", "2^-+30", "1e- 6", "1e-", "1e-20", "2^-64", "1e-6 ", "1E-6", "1e-٣"])
def test_a_resolution_not_written_as_the_docs_say_is_refused(resolution):
    """'1e-N' or '2^-N', N in digits: a sign or a space was taken by the integer parser ('1e-+6'
    was written as 1e-6), a resolution past 1e-19 or 2^-63 has no 64-bit tick count."""
    w = burstcore.CaptureWriter("pcapng")
    with pytest.raises(ValueError, match=r"use '1e-N' \(power of ten, N ≤ 19\) or '2\^-N'"):
        w.interface(resolution=resolution)


def test_every_resolution_the_docs_allow_is_written():
    w = burstcore.CaptureWriter("pcapng")
    for n in (0, 6, 9, 19):
        w.interface(resolution=f"1e-{n}")
    for n in (0, 10, 30, 63):
        w.interface(resolution=f"2^-{n}")
    got = [i["resolution"] for i in burstcore.info(w.getvalue()).interfaces]
    assert got == ["1e-0", "1e-6", "1e-9", "1e-19", "2^-0", "2^-10", "2^-30", "2^-63"]


# The width of every integer argument of CaptureWriter, from the field it fills in the pcap and
# pcapng specifications (draft-ietf-opsawg-pcap, -pcapng): link types are 16 bits in pcapng and
# the OPB's interface 16 bits; timestamps in ns and the offset in s are the writer's signed 64 bits.
U8 = (0, 2**8 - 1, "an 8-bit unsigned field")
U16 = (0, 2**16 - 1, "a 16-bit unsigned field")
U32 = (0, 2**32 - 1, "a 32-bit unsigned field")
U64 = (0, 2**64 - 1, "a 64-bit unsigned field")
S64 = (-(2**63), 2**63 - 1, "a 64-bit signed field")
FIELD_WIDTHS = {
    ("__new__", "linktype"): U16,
    ("__new__", "snaplen"): U32,
    # One that fits but that pcap's FCS bits cannot say (odd, over 30) is a ValueError.
    ("__new__", "fcs_len"): U8,
    ("packet", "ts_ns"): S64,
    ("packet", "wire_len"): U32,
    ("interface", "linktype"): U16,
    ("interface", "snaplen"): U32,
    ("interface", "ts_offset_s"): S64,
    ("interface", "fcs_len"): U8,
    ("epb", "interface"): U32,
    ("epb", "ts_ns"): S64,
    ("epb", "ts_raw"): U64,
    ("epb", "wire_len"): U32,
    ("spb", "wire_len"): U32,
    ("opb", "interface"): U16,
    ("opb", "ts_raw"): U64,
    ("opb", "wire_len"): U32,
    ("isb", "interface"): U32,
    ("isb", "ts_raw"): U64,
    **{("isb", c): U64 for c in ("if_recv", "if_drop", "os_drop", "fil_accept", "usr_deliv")},
    ("dsb", "secrets_type"): U32,
    ("custom", "pen"): U32,
    ("raw_block", "block_type"): U32,
}

# The other arguments of each call: valid, so that only the one under test can be wrong.
OTHERS = {
    "__new__": {"format": "pcap"},
    "packet": {"ts_ns": 0, "data": b""},
    "interface": {},
    "epb": {"interface": 0, "data": b"", "ts_ns": 0},
    "spb": {"data": b""},
    "opb": {"interface": 0, "ts_raw": 0, "data": b""},
    "isb": {"interface": 0, "ts_raw": 0},
    "dsb": {"secrets_type": 0, "data": b""},
    "custom": {"data": b""},
    "raw_block": {"block_type": 0, "body": b""},
}


def _call(method: str, arg: str, value: int) -> None:
    kwargs = {**OTHERS[method], arg: value}
    if method == "epb" and arg == "ts_raw":
        del kwargs["ts_ns"]
    if method == "__new__":
        burstcore.CaptureWriter(**kwargs)
        return
    w = burstcore.CaptureWriter("pcap" if method == "packet" else "pcapng")
    if method != "packet":
        w.interface()
    getattr(w, method)(**kwargs)


def test_every_integer_argument_of_the_writer_has_its_width_checked():
    """The table above covers every int parameter the stub declares, so a new one gets a case."""
    stub = ast.parse((Path(burstcore.__file__).parent / "_burstcore.pyi").read_text())
    cls = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "CaptureWriter")
    declared = {
        (f.name, a.arg)
        for f in cls.body
        if isinstance(f, ast.FunctionDef)
        for a in f.args.args + f.args.kwonlyargs
        if a.annotation is not None and ast.unparse(a.annotation) in ("int", "int | None")
    }
    assert declared == set(FIELD_WIDTHS)


@pytest.mark.parametrize(("method", "arg"), sorted(FIELD_WIDTHS))
def test_a_number_too_wide_for_its_field_names_the_argument(method, arg):
    """pyo3's own message, 'out of range integral type conversion attempted', named neither the
    value nor the field's range; then the value and the range, but not which argument it was
    (pyo3 names the argument of a TypeError only)."""
    lo, hi, what = FIELD_WIDTHS[(method, arg)]
    for value in (lo - 1, hi + 1, 2**200, -(2**200)):
        with pytest.raises(OverflowError) as e:
            _call(method, arg, value)
        assert str(e.value) == f"{arg}={value} does not fit {what}: give {lo} to {hi}"
    for value in (lo, hi):
        try:
            _call(method, arg, value)
        except OverflowError as e:
            raise AssertionError(f"{method}({arg}={value}) fits its field") from e
        except ValueError:
            pass  # fits the field, refused for what it means (a ts_ns past pcap's 2106, ...)


def test_a_number_given_by_position_is_named_too():
    w = burstcore.CaptureWriter("pcapng")
    w.interface()
    with pytest.raises(OverflowError, match=r"^interface=4294967296 does not fit a 32-bit unsigned field"):
        w.epb(2**32, b"", 0)
    with pytest.raises(OverflowError, match=r"^interface=65536 does not fit a 16-bit unsigned field"):
        w.opb(2**16, 0, b"")
    # Too long for str(): it printed an error of its own and showed "<unprintable int object>".
    with pytest.raises(OverflowError, match=r"^pen=<an integer of 20001 bits> does not fit a 32-bit unsigned field"):
        w.custom(b"", pen=2**20000)


def test_a_pcap_writer_constructor_says_what_fits():
    with pytest.raises(
        OverflowError, match=r"^snaplen=8589934592 does not fit a 32-bit unsigned field: give 0 to 4294967295$"
    ):
        burstcore.CaptureWriter("pcap", snaplen=2**33)
    with pytest.raises(OverflowError, match=r"^linktype=-1 does not fit a 16-bit unsigned field: give 0 to 65535$"):
        burstcore.CaptureWriter("pcap", linktype=-1)
    # What fits is still written: the largest values of each field.
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=65535, snaplen=2**32 - 1, ts_offset_s=0)
    w.epb(0, b"x", ts_raw=2**64 - 1)
    w.isb(0, 2**64 - 1, if_drop=2**64 - 1)
    with pytest.warns(burstcore.CaptureWarning, match="does not fit in 64-bit nanoseconds"):
        # 2^64 - 1 µs is past 2262: written as asked, read without a timestamp.
        assert burstcore.info(w.getvalue()).interfaces[0]["linktype"] == 65535
    with pytest.raises(TypeError, match="snaplen"):
        w.interface(snaplen=1.5)
