"""Valid captures at the edges of the i64 nanosecond range, and sources at the edges of what
the API takes: each case a defect a review found, checked against numbers worked out by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import dpkt
import numpy as np
import polars as pl
import pytest

import burstcore

from . import oracles
from .conftest import tshark_fields

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
FRAME = bytes(60)


def _at(ts_ns: list[int]) -> bytes:
    """A pcapng capture of 60-byte frames at exactly these times (an offset brings any i64 in)."""
    off_s = min(ts_ns) // 10**9 - 1
    w = burstcore.CaptureWriter("pcapng")
    i = w.interface(resolution="1e-9", ts_offset_s=off_s)
    for t in ts_ns:
        w.epb(i, FRAME, ts_raw=t - off_s * 10**9)
    return w.getvalue()


def test_a_span_of_centuries_is_exact() -> None:
    # 1684 to 2255: the span passes i64::MAX ns, which span_ns (Int64, as every *_ns column) does
    # not hold: null there, never wrapped, and ρ is still computed from the exact span.
    ts = [-(9 * 10**18), 9 * 10**18]
    with pytest.warns(UserWarning, match="bin width 1s is left sparse"):
        r = burstcore.scan(_at(ts), windows=["1s"], rates=["1Gbps"], bins=["1s"])
    assert r.summary["span_ns"][0] is None and r.summary["last_ns"][0] - r.summary["first_ns"][0] == 18 * 10**18
    assert r.groups["span_ns"][0] is None
    assert r.summary["mean_rate_bps"][0] == pytest.approx(120 * 8e9 / 18e18)
    assert r.groups["mean_rate_bps"][0] == pytest.approx(120 * 8e9 / 18e18)
    # Filling 1.8e10 empty bins is refused (sparse result), not attempted.
    assert r.series.height == 2 and r.series["bytes"].to_list() == [60, 60]


def test_filled_bins_near_1677_keep_every_packet() -> None:
    # The first 1 s bin starts before i64::MIN (its start is clamped there): the filled grid
    # counts bins by index, so the bin 3.5 s later is still on it.
    ts = [I64_MIN + 1, I64_MIN + 3_500_000_000]
    r = burstcore.scan(_at(ts), windows=["1s"], bins=["1s"])
    s = r.series.filter(pl.col("bytes") > 0)
    assert s["start_ns"].to_list() == [I64_MIN, (ts[1] // 10**9) * 10**9]
    assert r.series["bytes"].sum() == 120
    assert r.series.height == 4  # bins k = -9223372037 .. -9223372034
    assert r.series["start_ns"].to_list()[1:] == [k * 10**9 for k in range(-9223372036, -9223372033)]


def test_superpose_leaves_out_shifted_times_past_2262() -> None:
    # Pinned to i64::MAX, the shifted copy's 100 packets made one burst of 6000 bytes.
    ts = [I64_MAX - 10**9 + k * 10**7 for k in range(100)]
    d = _at(ts)
    # The one shifted packet left comes after the first capture's last: they do not overlap.
    with pytest.warns(burstcore.CaptureWarning, match="overlap no other in time"):
        s = burstcore.superpose([d, d], offsets=[0, "1s"], windows=["1ms"], rates=["1Gbps"])
    assert s.envelope["bytes"].to_list() == [60]
    assert s.summary["skipped_timestamp_out_of_range"][0] == 99
    assert s.summary["packets"][0] == 101


def test_in_memory_default_rates_follow_the_packets_counted() -> None:
    # One packet dropped as late (past the 10 ms horizon) of five: the mean rate behind the
    # default rates is that of the four counted, as for a file.
    ts = np.array([0, 100, 50, 20_000_000, 5], dtype=np.int64)
    sz = np.array([1, 2, 3, 4, 5], dtype=np.uint64)
    r = burstcore.scan((ts, sz), windows=["1us"], on_late="drop")
    assert r.summary["skipped_late"][0] == 1
    assert r.backlog["rate_over_mean"].to_list() == pytest.approx([1.1, 1.25, 1.5, 2, 3, 5, 10, 20])


def test_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    data = _at([0, 1000])
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.pcapng")
    with open(name, "wb") as f:
        f.write(data)
    want = burstcore.scan(data, windows=["1us"])
    for path in (os.fsdecode(name), Path(os.fsdecode(name))):
        assert burstcore.scan(path, windows=["1us"]).envelope.equals(want.envelope)
        assert burstcore.read_packets(path).height == 2
        assert burstcore.info(path).packets == 2


def test_a_finished_writer_says_so() -> None:
    w = burstcore.CaptureWriter("pcap")
    w.packet(0, FRAME)
    w.getvalue()
    with pytest.raises(ValueError, match="finished"):
        w.packet(1, FRAME)


def test_the_writer_refuses_records_past_the_snaplen() -> None:
    # libpcap cuts a pcap record longer than the file's snaplen to it, and refuses such a pcapng
    # block ("bigger than snaplen"), while tshark and burstcore read it whole: the writer wrote
    # them without a word, so a test could pass on a file tcpdump reads otherwise.
    w = burstcore.CaptureWriter("pcap", nanos=True, snaplen=64)
    with pytest.raises(ValueError, match="65 captured bytes are more than the file's snaplen of 64"):
        w.packet(0, bytes(65), wire_len=100)
    w.packet(0, bytes(64), wire_len=100)
    ng = burstcore.CaptureWriter("pcapng")
    ng.interface(snaplen=0)
    ng.interface(snaplen=64)
    ng.epb(0, bytes(65), ts_ns=0)  # 0: no limit
    with pytest.raises(ValueError, match="65 captured bytes are more than interface 1's snaplen of 64"):
        ng.epb(1, bytes(65), ts_ns=0, wire_len=100)
    with pytest.raises(ValueError, match="interface 1's snaplen of 64"):
        ng.opb(1, 0, bytes(65), wire_len=100)


def test_a_pcap_of_snaplen_0_is_read_whole_by_every_reader(tmp_path: Path) -> None:
    # A pcap header's snaplen 0 is "not set": libpcap takes its largest snaplen for the link type
    # (262144 for Ethernet), tshark and capinfos no limit, dpkt does not look at it. So the writer
    # keeps snaplen=0 as it keeps it for a pcapng interface: no limit to the records it writes.
    sizes = [60, 1500, 65535, 200000]
    w = burstcore.CaptureWriter("pcap", nanos=True, snaplen=0)
    for k, n in enumerate(sizes):
        w.packet(k, bytes(n))
    data = w.getvalue()
    assert data[16:20] == bytes(4)
    path = tmp_path / "snaplen0.pcap"
    path.write_bytes(data)
    assert [[int(a), int(b)] for a, b in tshark_fields(path, ["frame.len", "frame.cap_len"])] == [[n, n] for n in sizes]
    ci = subprocess.run(["capinfos", "-l", "-c", str(path)], capture_output=True, text=True, check=True).stdout
    assert "Packet size limit:   file hdr: (not set)" in ci and "Number of packets:   4" in ci, ci
    with path.open("rb") as f:
        assert [len(buf) for _, buf in dpkt.pcap.Reader(f)] == sizes
    td = subprocess.run(["tcpdump", "-n", "-r", str(path)], capture_output=True, text=True, check=True)
    assert "snapshot length 262144" in td.stderr and len(td.stdout.splitlines()) == 4, td
    assert burstcore.read_packets(path)["cap_len"].to_list() == sizes
    assert burstcore.info(path).interfaces[0]["snaplen"] == 0


# libpcap's largest record per link type, whatever the snaplen (max_snaplen_for_dlt): Ethernet,
# raw IP and every other 262144; USBPCAP (249) 1 MiB, EBHSCR (279) 8 MiB, D-Bus (231) 128 MiB.
RECORD_MAX = {1: 262_144, 101: 262_144, 253: 262_144, 249: 1 << 20, 279: 8 << 20, 231: 128 << 20}


def _with_record(fmt: str, linktype: int, n: int, allow: bool = False) -> bytes:
    """Three records 1 µs apart: 60 bytes, `n` bytes, 60 bytes (snaplen 0: no limit)."""
    w = burstcore.CaptureWriter(fmt, nanos=True, linktype=linktype, snaplen=0, allow_oversized_records=allow)
    if fmt == "pcapng":
        w.interface()
    for k, size in enumerate((60, n, 60)):
        if fmt == "pcap":
            w.packet(10**18 + k * 1000, bytes(size))
        else:
            w.epb(0, bytes(size), ts_ns=10**18 + k * 1000)
    return w.getvalue()


def _pcapng_blocks(data: bytes) -> list[int]:
    """The offset of each block of a little-endian pcapng file, from the lengths it writes."""
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += int.from_bytes(data[at + 4 : at + 8], "little")
    return offsets


def _tools_read(path: Path) -> tuple[int, int]:
    """How many packets tcpdump and tshark print of a capture before they stop at a record they
    refuse (each says so on stderr: "invalid packet capture length", "bigger than maximum" or
    "larger than")."""
    td = subprocess.run(["tcpdump", "-nn", "-r", str(path)], capture_output=True, text=True, check=False)
    ts = subprocess.run(["tshark", "-n", "-r", str(path)], capture_output=True, text=True, check=False)
    return len(td.stdout.splitlines()), len(ts.stdout.splitlines())


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("linktype", [1, 101, 253, 249, 279])
def test_the_writer_refuses_a_record_tcpdump_and_tshark_refuse(tmp_path: Path, fmt: str, linktype: int) -> None:
    # A record over libpcap's maximum for its link type was written whenever the snaplen let it
    # (snaplen 0: always): tcpdump stopped there and tshark called the file damaged.
    top = RECORD_MAX[linktype]
    path = tmp_path / f"at_max.{fmt}"
    path.write_bytes(_with_record(fmt, linktype, top))
    # The longest the writer takes, every tool reads whole (tcpdump prints a hex dump of the
    # link types it does not decode: more lines than packets).
    td, ts = _tools_read(path)
    assert td >= 3 and ts == 3, (td, ts)
    with pytest.raises(ValueError, match=f"{top + 1} captured bytes are more than the {top} libpcap takes"):
        _with_record(fmt, linktype, top + 1)
    path = tmp_path / f"past_max.{fmt}"
    data = _with_record(fmt, linktype, top + 1, allow=True)
    path.write_bytes(data)
    td, ts = _tools_read(path)
    td_first = subprocess.run(["tcpdump", "-nn", "-c", "1", "-r", str(path)], capture_output=True, text=True)
    # tcpdump stops after the first packet; tshark too, but for USBPCAP, where it takes more.
    assert td == len(td_first.stdout.splitlines()), td
    assert ts == (3 if linktype == 249 else 1), ts
    # burstcore reads every record and tells the one it read past the maximum.
    with pytest.warns(burstcore.CaptureWarning) as told:
        df = burstcore.read_packets(data, ["cap_len"])
    assert df["cap_len"].to_list() == [60, top + 1, 60]
    assert len(told) == 1
    w = told[0].message
    # The second record: after the pcap file header and the first record, or the pcapng
    # blocks' lengths walked to the second Enhanced Packet Block.
    offset = 24 + 16 + 60 if fmt == "pcap" else _pcapng_blocks(data)[3]
    assert (w.kind, w.offset, w.input) == ("oversized_record", offset, None), str(w)
    assert f"a record of {top + 1} captured bytes, more than the {top} libpcap takes for link type {linktype}" in str(w)
    assert "tcpdump stops reading the file there" in str(w) and f"at byte offset {offset}" in str(w)


def test_a_record_past_the_maximum_is_told_once_per_capture(tmp_path: Path) -> None:
    # 40 records of 262144 bytes and two past it: a file large enough to be read in byte ranges.
    w = burstcore.CaptureWriter("pcap", nanos=True, snaplen=0, allow_oversized_records=True)
    sizes = [262_144] * 20 + [262_145] + [262_144] * 20 + [300_000, 60]
    for k, n in enumerate(sizes):
        w.packet(10**18 + k * 10**6, bytes(n))
    path = tmp_path / "big.pcap"
    path.write_bytes(w.getvalue())
    first = 24 + sum(16 + n for n in sizes[:20])
    for threads in (1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = burstcore.read_packets(path, ["cap_len"], threads=threads)
            r = burstcore.scan(path, windows=["1ms"], threads=threads)
        assert df["cap_len"].to_list() == sizes
        assert r.summary["packets"][0] == len(sizes)
        told = [c.message for c in caught if isinstance(c.message, burstcore.CaptureWarning)]
        assert [(m.kind, m.offset) for m in told] == [("oversized_record", first)] * 2, [str(m) for m in told]
    # A record of exactly the maximum is nothing to tell.
    w = burstcore.CaptureWriter("pcapng", snaplen=0)
    w.interface()
    w.epb(0, bytes(262_144), ts_ns=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert burstcore.read_packets(w.getvalue())["cap_len"].to_list() == [262_144]


def test_every_packet_block_refuses_a_record_past_the_maximum() -> None:
    w = burstcore.CaptureWriter("pcapng", snaplen=0)
    w.interface()
    for write in (
        lambda data: w.epb(0, data, ts_ns=0),
        lambda data: w.opb(0, 0, data),
        lambda data: w.spb(data),
    ):
        write(bytes(262_144))
        with pytest.raises(ValueError, match="262145 captured bytes are more than the 262144 libpcap takes"):
            write(bytes(262_145))


def _idb_named(name: bytes) -> bytes:
    """An Interface Description Block's body by hand: Ethernet, snaplen 0, if_name, end."""
    opt = (2).to_bytes(2, "little") + len(name).to_bytes(2, "little") + name + bytes(-len(name) % 4)
    return (1).to_bytes(2, "little") + bytes(2) + bytes(4) + opt + bytes(4)


def test_a_nul_in_a_string_option_ends_it_for_tshark_not_for_burstcore(tmp_path: Path) -> None:
    # Why the writer refuses a NUL in a string (below): readers disagree on such a file.
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.raw_block(1, _idb_named(b"a\0b"))
    epb = bytes(4) + bytes(8) + (14).to_bytes(4, "little") * 2 + bytes(14)
    w.raw_block(6, epb)
    path = tmp_path / "nul.pcapng"
    path.write_bytes(w.getvalue())
    assert tshark_fields(path, ["frame.interface_name"]) == [["a"]]
    assert burstcore.info(path).interfaces[0]["name"] == "a\x00b"


@pytest.mark.parametrize(
    ("arg", "value", "at"), [("user_appl", "a\0b", 1), ("name", "eth0\0", 4), ("user_appl", "\0", 0)]
)
def test_a_string_option_with_a_nul_is_refused(arg: str, value: str, at: int) -> None:
    # It was written: tshark and capinfos showed the string up to the NUL, burstcore all of it.
    w = burstcore.CaptureWriter("pcapng")
    call = w.section if arg == "user_appl" else w.interface
    with pytest.raises(ValueError) as e:
        call(**{arg: value})
    shown = '"' + value.replace("\0", "\\0") + '"'
    assert str(e.value) == (
        f"{arg}={shown} has a NUL character at byte {at}, where tshark and capinfos would end it: leave the NUL out"
    )
    # Refused before anything was written, even the section header interface() starts with.
    w.section(byte_order="big")
    assert [s["byte_order"] for s in burstcore.info(w.getvalue()).sections] == ["big"]


@pytest.mark.parametrize("text", ["dumpcap (Wireshark) 4.0.17", "é€😀 ünïcode", "tab\there, 'quotes\"", "x" * 300])
def test_string_options_read_back_as_written_in_tshark_and_capinfos(tmp_path: Path, text: str) -> None:
    w = burstcore.CaptureWriter("pcapng")
    w.section(user_appl=text)
    w.interface(name=text)
    w.epb(0, FRAME, ts_ns=0)
    path = tmp_path / "strings.pcapng"
    path.write_bytes(w.getvalue())
    ci = subprocess.run(["capinfos", str(path)], capture_output=True, text=True, check=True).stdout
    assert f"Capture application: {text}\n" in ci and f"Name = {text}\n" in ci, ci
    assert tshark_fields(path, ["frame.interface_name"]) == [[text.replace("\t", "\\t")]]
    # burstcore's info keeps the first 256 bytes of a string (docs/limits.md).
    shown = text if len(text) <= 256 else text[:256] + "…"
    info = burstcore.info(path)
    assert (info.sections[0]["user_appl"], info.interfaces[0]["name"]) == (shown, shown)


def test_a_string_utf8_cannot_encode_is_refused_by_its_name() -> None:
    # A lone surrogate raised UnicodeEncodeError without saying which argument held it.
    w = burstcore.CaptureWriter("pcapng")
    with pytest.raises(ValueError, match=r"^user_appl='\\ud800' has a lone surrogate at index 0, which UTF-8"):
        w.section(user_appl="\ud800")
    with pytest.raises(ValueError, match=r"^name='eth\\udfff' has a lone surrogate at index 3"):
        w.interface(name="eth\udfff")
    w.section()
    with pytest.raises(ValueError, match=r"^records\[1\]\[1\]='h\\ud800' has a lone surrogate at index 1"):
        w.nrb([("10.0.0.1", "a"), ("10.0.0.2", "h\ud800")])


def test_a_name_record_that_is_not_an_address_says_which() -> None:
    # It said '"10.0.0.300" is not an IP address', not which record nor what to give.
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    with pytest.raises(ValueError, match=r"^records\[1\]: \"10.0.0.300\" is not an IP address: give one such as"):
        w.nrb([("10.0.0.1", "a"), ("10.0.0.300", "b")])


def test_a_pcapng_block_asked_of_a_pcap_writer_says_so() -> None:
    # It said "this block needs a pcapng writer that is not finished", of a writer not finished.
    w = burstcore.CaptureWriter("pcap")
    for call in (w.section, w.interface, lambda: w.spb(b"")):
        with pytest.raises(ValueError, match=r"this writer is pcap: use packet\(\), or CaptureWriter\(\"pcapng\"\)"):
            call()
    w.getvalue()
    with pytest.raises(ValueError, match="the writer is finished"):
        w.section()


def test_an_empty_pcapng_writer_gives_a_capture_of_no_packets(tmp_path: Path) -> None:
    # It gave zero bytes, which burstcore refuses ("empty input: not a pcap or pcapng file")
    # and capinfos takes for an "Endace ERF capture", while an empty pcap writer gives its
    # 24-byte header: now a section header in the constructor's byte order.
    for order, bom in (("little", b"\x4d\x3c\x2b\x1a"), ("big", b"\x1a\x2b\x3c\x4d")):
        data = burstcore.CaptureWriter("pcapng", byte_order=order).getvalue()
        assert data[:4] == b"\x0a\x0d\x0d\x0a" and data[8:12] == bom, data
        path = tmp_path / f"{order}.pcapng"
        path.write_bytes(data)
        assert burstcore.read_packets(path).height == 0
        p = subprocess.run(["capinfos", "-t", "-c", str(path)], capture_output=True, text=True, check=True)
        assert "pcapng" in p.stdout and "Number of packets:   0" in p.stdout, p.stdout
    assert len(burstcore.CaptureWriter("pcap").getvalue()) == 24


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "burstcore", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_info_of_several_files_reports_past_a_missing_one(tmp_path: Path) -> None:
    (tmp_path / "a.pcapng").write_bytes(_at([0, 1000]))
    p = _cli("info", "--json", "a.pcapng", "missing.pcap", "a.pcapng", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    import json

    doc = json.loads(p.stdout)
    assert [d["file"] for d in doc] == ["a.pcapng", "missing.pcap", "a.pcapng"]
    assert doc[0]["packets"] == 2 and "no such capture file" in doc[1]["error"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a full disk)")
def test_a_parquet_write_to_a_full_disk_is_an_output_error(tmp_path: Path) -> None:
    (tmp_path / "a.pcapng").write_bytes(_at([0, 1000]))
    p = _cli("scan", "a.pcapng", "--format", "parquet", "-o", "/dev/full", cwd=tmp_path)
    assert p.returncode == 4, p.stderr
    assert "No space left" in p.stderr and "internal error" not in p.stderr


def test_in_memory_captures_of_every_buffer_type_read_alike() -> None:
    # bytes are read in place; a bytearray or memoryview (whose memory may change) is copied.
    data = _at([k * 1000 for k in range(1000)])
    want = burstcore.scan(data, windows=["1us", "10us"], rates=["1Gbps"])
    for source in (bytearray(data), memoryview(data)):
        got = burstcore.scan(source, windows=["1us", "10us"], rates=["1Gbps"])
        assert got.envelope.equals(want.envelope) and got.backlog.equals(want.backlog)
        assert burstcore.read_packets(source).height == 1000
        assert burstcore.info(source).packets == 1000


def test_a_fine_bin_left_sparse_leaves_the_coarse_ones_filled() -> None:
    # Packets 25 ms apart, in 1 ms and 1 ns bins: the 1 ns series would need 25 M rows and stays
    # sparse, told so; the 1 ms series beside it is filled as when asked for alone (it was left
    # sparse with it, its mean rate 13x too high).
    ts, sizes = [0, 7_000_123, 25_000_000], [100, 300, 200]
    data = oracles.capture(ts, sizes)
    alone = burstcore.scan(data, windows=["1ms"], bins=["1ms"]).series
    with pytest.warns(UserWarning, match=r"bin width 1ns is left sparse .* 20,000,000 rows") as told:
        both = burstcore.scan(data, windows=["1ms"], bins=["1ns", "1ms"])
    assert len(told) == 1 and told[0].filename == __file__
    assert [w for w in both.warnings if "left sparse" in w] == [str(told[0].message)]
    ms = both.series.filter(pl.col("bin") == pl.duration(milliseconds=1))
    assert ms.equals(alone)
    want = oracles.binned(ts, sizes, 10**6)
    assert ms["start_ns"].to_list() == [k * 10**6 for k in range(26)]
    assert ms.select("bytes", "packets").rows() == [want.get(k * 10**6, (0, 0)) for k in range(26)]
    ns = both.series.filter(pl.col("bin") == pl.duration(nanoseconds=1))
    assert ns.select("start_ns", "bytes").rows() == list(zip(ts, sizes, strict=True))
    # Within the limit, every width is filled and nothing is told.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = burstcore.scan(data, windows=["1ms"], bins=["1us", "1ms"])
    assert r.series.filter(pl.col("bin") == pl.duration(microseconds=1)).height == 25_001
    assert not r.warnings


def test_a_filled_1ns_bin_at_the_end_of_time() -> None:
    # The last bin is k = i64::MAX: the filled range's exclusive end passed i64 and the series
    # came back empty.
    ts = [I64_MAX - 10, I64_MAX]
    r = burstcore.scan(_at(ts), windows=["1ns"], rates=[8], bins=["1ns"])
    assert r.series["start_ns"].to_list() == list(range(I64_MAX - 10, I64_MAX + 1))
    assert r.series["bytes"].to_list() == [60] + [0] * 9 + [60]


def test_ratios_of_a_group_without_bytes_are_null() -> None:
    # With size="payload" the ACK-only direction has ρ = 0 over a span: PtM and r/ρ were NaN and
    # inf, which sort above every number.
    def tcp(src: str, dst: str, payload: int, flags: int) -> bytes:
        frame = oracles.eth_ipv4_udp(src, dst, 1, 2, payload, proto=6)
        return frame[:47] + bytes([flags]) + frame[48:]

    a, b = "10.0.0.1", "10.0.0.2"
    frames = [tcp(a, b, 1000, 0x18), tcp(b, a, 0, 0x10)] * 2
    ts = [1000, 2000, 3000, 4000]
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    r = burstcore.scan(data, windows=["1us"], rates=["1Gbps"], by="pair", size="payload")
    assert r.groups.sort("group").select("group", "bytes", "mean_rate_bps").rows() == [
        (f"{a}>{b}", 2000, 2000 * 8e9 / 2000),
        (f"{b}>{a}", 0, 0.0),
    ]
    ptm = dict(r.envelope.select("group", "ptm").iter_rows())
    over = dict(r.backlog.select("group", "rate_over_mean").iter_rows())
    assert ptm[f"{b}>{a}"] is None and over[f"{b}>{a}"] is None
    # E(1 us) is one data packet's 1000 B of payload, and ρ·τ = 2000 B / 2000 ns · 1000 ns.
    assert ptm[f"{a}>{b}"] == 1.0


@pytest.mark.parametrize(
    "name", ["tcpdump/tests/ipv6-too-long-jumbo.pcap", "tcpdump/tests/quic_32_bit_pointer_overflow.pcap"]
)
def test_an_ip_length_past_the_frame_is_no_size(name: str) -> None:
    # A 490-byte frame whose jumbo option claims 3,858,694,250 bytes made E(1 s) and B_max
    # 3.86 GB with size="ip". tshark flags such a packet ("IPv6 payload length exceeds framing
    # length"); the packets it flags are those the scan leaves out as having no size.
    from tests.conftest import shared_file

    path = shared_file(f"corpus/{name}")
    flagged = subprocess.run(
        ["tshark", "-r", str(path), "-Y", "ipv6.plen_exceeds_framing", "-T", "fields", "-e", "frame.number"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(flagged) == 1
    for size in ("ip", "payload"):
        r = burstcore.scan(str(path), windows=["1s"], rates=["1Gbps"], size=size)
        assert r.summary["skipped_no_size"][0] >= len(flagged), size
        assert (r.envelope["bytes"].max() or 0) < 65_536, size
    whole = burstcore.scan(str(path), windows=["1s"], rates=["1Gbps"])
    assert whole.summary["skipped_no_size"][0] == 0
    # The row keeps what the header claims, as tshark's fields do.
    rows = burstcore.read_packets(str(path), columns=["ip_len", "wire_len"])
    assert (rows["ip_len"].cast(pl.Int64) > rows["wire_len"].cast(pl.Int64)).sum() == len(flagged)


def test_an_ipv4_total_length_past_the_frame_is_no_size() -> None:
    # A 60-byte frame whose IPv4 header claims 60,000 bytes, between two sound ones.
    sound = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)
    bad = bytearray(oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=18))
    bad[16:18] = (60_000).to_bytes(2, "big")
    frames = [sound, bytes(bad), sound]
    data = oracles.capture([1_000, 2_000, 3_000], [len(f) for f in frames], frames=frames)
    r = burstcore.scan(data, windows=["10us"], rates=["1Gbps"], size="ip")
    assert r.summary.select("packets", "skipped_no_size").row(0) == (2, 1)
    assert r.envelope["bytes"][0] == 2 * 128  # two IP packets of 20 + 8 + 100 bytes
    assert burstcore.scan(data, windows=["10us"], size="payload").envelope["bytes"][0] == 200
    # Cut by a snaplen, with its length on the wire recorded, the same header is sound.
    cut = oracles.capture([1_000], [14 + 60_000], frames=[bytes(bad)])
    assert burstcore.scan(cut, windows=["10us"], size="ip").envelope["bytes"][0] == 60_000


# The reorder buffer's limit (rust/core/src/engine/reorder.rs, MAX_HELD): packets left waiting
# within the horizon after a release.
MAX_HELD = 2**23


def test_packets_at_one_instant_past_the_reorder_limit_stop_with_an_error(tmp_path: Path) -> None:
    # A damaged or forged capture with millions of packets at one instant: each waits in the
    # reorder buffer, and a 180 kB zstd file of them had made the process abort ("memory
    # allocation of 4026531840 bytes failed", no exception) in iterations() and scan().
    w = burstcore.CaptureWriter(format="pcap")
    w.packet(ts_ns=1_000, data=b"", wire_len=60)
    one = w.getvalue()
    header, record = one[:24], one[24:]
    n = MAX_HELD + 2**20
    path = tmp_path / "instant.pcap"
    path.write_bytes(header + record * n)
    told = []
    for threads in (1, 2):
        with pytest.raises(burstcore.LimitExceededError, match="lower reorder_horizon") as e:
            burstcore.scan(str(path), windows=["1ms"], rates=["1Gbps"], threads=threads)
        told.append(str(e.value))
        # Packets held at once, not the size of the result: a program tells them apart so.
        assert (e.value.limit, e.value.offset) == ("held_packets", None)
    # By time chunks, each chunk held less than the sequential limit: the scan read again
    # sequentially, and told the same.
    assert told[0] == told[1] and f"more than {MAX_HELD} packets within the reorder horizon" in told[0]
    with pytest.raises(burstcore.LimitExceededError, match=f"more than {MAX_HELD} packets") as e:
        burstcore.iterations(str(path))
    assert e.value.limit == "held_packets"
    # With no horizon nothing waits, and E(τ) holds them all (they lie within every window).
    for threads in (1, 2):
        r = burstcore.scan(str(path), windows=["1ns", "1ms"], rates=["1Gbps"], reorder_horizon=0, threads=threads)
        assert r.envelope.select("bytes", "packets").rows() == [(60 * n, n)] * 2
    # The command line does not call such a capture fine, as it does a limit on the result.
    p = subprocess.run(
        [sys.executable, "-m", "burstcore", "scan", str(path), "--rates", "1Gbps"], capture_output=True, check=False
    )
    assert p.returncode == 1 and b"stopped at a limit: more than" in p.stderr, p.stderr
    assert b"lower --reorder-horizon" in p.stderr
