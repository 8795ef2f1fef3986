"""read_packets and info against tshark's and capinfos' reading of the same files, and every kind
of source (path, bytes, file object, stdin, gzip/zstd) giving the same packets."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import zstandard

import burstcore
from tests import oracles
from tests.conftest import epoch_ns, shared_dir, shared_file, tshark_fields

# A spread of formats, byte orders, resolutions, link types, compression and content.
SAMPLE = [
    "dpkt/examples/data/http.pcap",
    "dpkt/examples/data/nb6-http.pcap",
    "pcapplusplus/Tests/Pcap++Test/PcapExamples/pcapng-example.pcapng",
    "pcapplusplus/Tests/Pcap++Test/PcapExamples/nanosecs_big_endian.pcap",
    "pcapplusplus/Tests/Pcap++Test/PcapExamples/sll.pcap",
    "pcapplusplus/Tests/Pcap++Test/PcapExamples/four_ipv6_http_streams.pcap",
    "pcapplusplus/Tests/Pcap++Test/PcapExamples/null_loopback.pcap",
    "pcapplusplus/Tests/Packet++Test/PacketExamples/QinQ_802.1_AD.pcapng",
    "pcapplusplus/Tests/Packet++Test/PacketExamples/Sll2Packet.pcap",
    "pcapng-test-generator/output_be/difficult/test202.pcapng",
    "pcapng-test-generator/output_le/basic/test008.pcapng",
    "gopacket/pcapgo/tests/le/test902.pcapng",
    "tcpdump/tests/802.1ad_QinQ.pcap",
    "scapy/test/pcaps/pfcp.pcap",
]


def _existing(rel: str) -> Path:
    return shared_file(f"corpus/{rel}")


def _ints(x: str) -> int | None:
    return int(x) if x else None


@pytest.mark.parametrize("rel", SAMPLE)
def test_packets_equal_tshark(rel):
    path = _existing(rel)
    rows = tshark_fields(
        path,
        [
            "frame.time_epoch",
            "frame.len",
            "frame.cap_len",
            "ip.src",
            "ipv6.src",
            "ip.dst",
            "ipv6.dst",
            "tcp.srcport",
            "udp.srcport",
        ],
        ["-Y", "frame.encap_type != -1"],  # tshark lists pcapng custom blocks as frames; they are not packets
    )
    df = burstcore.read_packets(str(path))
    # Simple Packet Blocks have no timestamp: tshark prints an empty time for them.
    assert df.height == len(rows)
    got_ts = df["timestamp"].dt.epoch("ns").to_list()
    for i, r in enumerate(rows):
        want = epoch_ns(r[0]) if r[0] else None
        if want is not None and not -(2**63) <= want < 2**63:
            want = None  # beyond i64 ns: read without a timestamp, and warned about (docs/metrics.md)
        assert got_ts[i] == want, (rel, i)
        assert df["wire_len"][i] == int(r[1]) and df["cap_len"][i] == int(r[2]), (rel, i)
        src = r[3] or r[4] or None
        dst = r[5] or r[6] or None
        # Every packet tshark finds an address in has it here too (until the thirty-first
        # landing, the PPPoE of nb6-http.pcap and an Ethertype in null_loopback.pcap's BSD
        # loopback header were not read). tshark may decode further (tunnels); the outermost
        # address is the first occurrence.
        if src is not None:
            assert df["src"][i] == src and df["dst"][i] == dst, (rel, i, df["src"][i], src)
        # The outer transport's port: tshark's tcp.srcport may be a tunnel's inner TCP (L2TP in
        # nb6-http.pcap carries PPP, IPv6 and TCP inside UDP).
        tcp, udp = _ints(r[7]), _ints(r[8])
        sport = (udp or tcp) if df["protocol"][i] == 17 else (tcp or udp)
        if sport is not None and df["sport"][i] is not None:
            assert df["sport"][i] == sport, (rel, i)


def test_every_kind_of_source_gives_the_same_packets(tmp_path):
    path = _existing("dpkt/examples/data/http.pcap")
    ref = burstcore.read_packets(str(path))
    data = path.read_bytes()
    assert burstcore.read_packets(data).equals(ref)
    assert burstcore.read_packets(bytearray(data)).equals(ref)
    assert burstcore.read_packets(path).equals(ref)  # PathLike
    with open(path, "rb") as f:
        assert burstcore.read_packets(f).equals(ref)
    assert burstcore.read_packets(io.BytesIO(gzip.compress(data))).equals(ref)
    zpath = tmp_path / "capture.bin"  # a name that says nothing: content decides
    zpath.write_bytes(zstandard.ZstdCompressor().compress(data))
    assert burstcore.read_packets(str(zpath)).equals(ref)
    # stdin, through a child process
    code = (
        "import sys, burstcore; df = burstcore.read_packets('-', columns=['timestamp','wire_len']);"
        "print(df.height, int(df['wire_len'].sum()), df['timestamp'].dt.epoch('ns').max())"
    )
    out = (
        subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True)
        .stdout.decode()
        .split()
    )
    assert out == [str(ref.height), str(int(ref["wire_len"].sum())), str(ref["timestamp"].dt.epoch("ns").max())]


def test_compressed_corpus_files_equal_their_plain_twins():
    z = _existing("pcapplusplus/Tests/Pcap++Test/PcapExamples/file_heuristics/pcapng-example.pcapng.zst")
    plain = _existing("pcapplusplus/Tests/Pcap++Test/PcapExamples/pcapng-example.pcapng")
    assert burstcore.read_packets(str(z)).equals(burstcore.read_packets(str(plain)))


def test_columns_subset_and_order():
    path = _existing("dpkt/examples/data/http.pcap")
    df = burstcore.read_packets(str(path), columns=["wire_len", "timestamp"])
    assert df.columns == ["wire_len", "timestamp"]
    assert df.schema["timestamp"] == pl.Datetime("ns", "UTC")
    with pytest.raises(ValueError, match='unknown column "bogus"'):
        burstcore.read_packets(str(path), columns=["bogus"])


def capinfos(path: Path) -> dict[str, str]:
    out = subprocess.run(
        ["capinfos", "-M", "-T", "-r", "-S", "-c", "-d", "-a", "-e", str(path)], capture_output=True, text=True
    )
    cols = out.stdout.strip().split("\t")
    names = ["file", "packets", "bytes", "first", "last"]
    return dict(zip(names, cols, strict=False))


@pytest.mark.parametrize(
    "rel",
    [
        "dpkt/examples/data/http.pcap",
        "pcapng-test-generator/output_le/basic/test013.pcapng",
        "gopacket/pr1042/pcapgo/tests/le/test301.pcapng",
    ],
)
def test_info_agrees_with_capinfos(rel):
    path = _existing(rel)
    ci = capinfos(path)
    inf = burstcore.info(str(path))
    assert inf.packets == int(ci["packets"])
    assert inf.wire_bytes == int(ci["bytes"])
    if ci.get("first") and ci["first"] not in ("n/a", ""):
        assert inf.min_ns == epoch_ns(ci["first"])
        assert inf.max_ns == epoch_ns(ci["last"])
    text = str(inf)
    assert f"Packets:             {inf.packets:,}" in text


def test_info_reports_drops_out_of_order_and_offload():
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9", name="eth0")
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)
    w.epb(0, frame, ts_ns=2_000)
    w.epb(0, frame, ts_ns=1_000)  # one step back by 1 µs
    w.epb(0, frame[:64], ts_ns=3_000, wire_len=9000)  # a GRO super-frame
    w.isb(0, ts_raw=4_000, if_recv=10, if_drop=7)
    inf = burstcore.info(w.getvalue())
    assert inf.packets == 3 and inf.out_of_order == 1 and inf.max_step_back_ns == 1_000
    assert inf.over_mtu_frames == 1 and inf.drops == 7
    assert inf.interfaces[0]["name"] == "eth0" and inf.interfaces[0]["resolution"] == "1e-9"
    assert "TSO/GRO" in str(inf)
    json.dumps(inf.to_dict())  # plain data, serialisable


def test_missing_and_wrong_sources_say_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such capture file"):
        burstcore.read_packets(str(tmp_path / "nope.pcap"))
    with pytest.raises(IsADirectoryError):
        burstcore.scan(str(tmp_path))
    (tmp_path / "x.pcap").write_bytes(b"PK\x03\x04 this is a zip file, not a capture")
    with pytest.raises(burstcore.NotACaptureError) as e:
        burstcore.info(str(tmp_path / "x.pcap"))
    assert e.value.offset == 0 and "50 4b 03 04" in str(e.value)
    with pytest.raises(TypeError, match="cannot read a capture from int"):
        burstcore.read_packets(42)
    with open(tmp_path / "x.pcap") as text_file, pytest.raises(ValueError, match="text mode"):
        burstcore.read_packets(text_file)


def test_polars_columns_handed_to_a_tool_that_reads_headers_point_to_scan():
    import polars as pl

    frame = pl.DataFrame({"timestamp": [1, 2], "size": [100, 100]})
    for tool in (burstcore.bursts, burstcore.flows, burstcore.info, burstcore.read_packets):
        for columns in (frame, frame.lazy()):
            with pytest.raises(TypeError, match=r"only scan\(\) measures packets already in") as e:
                tool(columns)
            # Not the hint for an iterable of paths, which a frame also is.
            assert "list or a tuple" not in str(e.value)


def test_an_error_among_several_inputs_names_the_input(tmp_path):
    # Per-host captures scanned together: a byte offset alone would not say which file is
    # damaged, so the error (and any warning) names it; a single input needs no name.
    base = 1_700_000_000_000_000_000
    good = oracles.capture([base + 1000 * i for i in range(600)], [100] * 600, fmt="pcap")
    other = oracles.capture([base + 1000 * i + 500 for i in range(600)], [100] * 600, fmt="pcap")
    record = 24 + (16 + 14) * 300  # the 301st record: 14 captured bytes each
    damaged = bytearray(other)
    damaged[record + 8 : record + 12] = (0x4000_0000).to_bytes(4, "little")
    a, b = tmp_path / "host0.pcap", tmp_path / "host1.pcap"
    a.write_bytes(good)
    b.write_bytes(bytes(damaged))
    calls = {
        "scan": lambda srcs, **kw: burstcore.scan(srcs, windows=["1ms"], **kw),
        "scan, 2 threads": lambda srcs, **kw: burstcore.scan(srcs, windows=["1ms"], threads=2, **kw),
        "flows": burstcore.flows,
        "traffic_matrix": burstcore.traffic_matrix,
    }
    for name, call in calls.items():
        for sources, label in (([str(a), str(b)], str(b)), ([good, bytes(damaged)], "input 2 of 2")):
            with pytest.raises(burstcore.LimitExceededError) as e:
                call(sources)
            assert e.value.offset == record and e.value.input == label, name
            assert e.value.limit == "capture", name
            assert str(e.value).endswith(f"at byte offset {record} of {label}"), (name, str(e.value))
        with pytest.raises(burstcore.LimitExceededError) as e:
            call(str(b))
        assert e.value.input is None and str(e.value).endswith(f"at byte offset {record}"), name
    # Not a capture at all, among several.
    with pytest.raises(burstcore.NotACaptureError) as e:
        burstcore.scan([str(a), b"not a capture"], windows=["1ms"])
    assert e.value.input == "input 2 of 2" and e.value.offset == 0
    # A warning names its input too.
    (tmp_path / "cut.pcap").write_bytes(good[:-5])
    with pytest.warns(burstcore.CaptureWarning, match=f"of {tmp_path / 'cut.pcap'}$"):
        burstcore.scan([str(a), str(tmp_path / "cut.pcap")], windows=["1ms"])


def test_shared_dir_is_set_in_ci():
    import os

    if os.environ.get("CI"):
        assert os.environ.get("BURSTCORE_SHARED") and shared_dir() is not None


def test_file_object_that_returns_more_than_asked_loses_nothing():
    data = _existing("dpkt/examples/data/http.pcap").read_bytes()

    class Generous:
        """read(n) hands back up to 3n bytes, as some file-likes do."""

        def __init__(self, b: bytes) -> None:
            self.b, self.at = b, 0

        def read(self, n: int) -> bytes:
            out = self.b[self.at : self.at + 3 * n + 1]
            self.at += len(out)
            return out

    assert burstcore.read_packets(Generous(data)).equals(burstcore.read_packets(data))


def test_lengths_past_4_gib_count_in_64_bits() -> None:
    # The lengths are UInt32 (as in the formats), which polars sums in 32 bits; scan counts in
    # 64 bits, from the file and from read_packets' frame alike (its default rates come from
    # that total, so they agree too).
    n, wire = oracles.PAST_4_GIB
    data = oracles.capture_past_4_gib()
    df = burstcore.read_packets(data)
    assert df["wire_len"].dtype == pl.UInt32
    assert int(df["wire_len"].cast(pl.UInt64).sum()) == n * wire > 2**32
    results = [burstcore.scan(src, windows=["1s"]) for src in (data, df)]
    for r in results:
        assert r.summary["bytes"][0] == n * wire
        assert (r.envelope["bytes"][0], r.envelope["packets"][0]) == (n * wire, n)
    assert results[0].backlog.equals(results[1].backlog)
