"""What an operator who mirrors switch ports reads off the terminal: when each burst was (to match
the switch's drop counters), which port by its name, and whether long frames are jumbo frames or
a host's offload. Checked against brute force over the packets the test writes."""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
import warnings
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import burstcore
from tests import oracles
from tests.conftest import tshark_fields
from tests.test_cli import run_cli

T0 = 1_780_000_000_000_000_000


def _iso(ns: int) -> str:
    s, frac = divmod(ns, 10**9)
    return dt.datetime.fromtimestamp(s, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def _l1(wire: int) -> int:
    # Ethernet without FCS on the capture: padded to 60 B, + FCS 4 B + preamble, SFD and IFG 20 B.
    return max(wire, 60) + 4 + 20


def _two_ports(tmp_path: Path) -> tuple[Path, dict[int, list[tuple[int, int]]]]:
    """Two named mirror ports: a steady 1000 B frame every 10 µs on each, and on swp1 a burst of
    40 frames back to back at 100 Gbit/s (1102 B on the wire take 88.16 ns), on swp2 one of 20
    jumbo frames at 25 Gbit/s."""
    per_port: dict[int, list[tuple[int, int]]] = {0: [], 1: []}
    for k in range(100):
        per_port[0].append((T0 + k * 10_000, 1000))
        per_port[1].append((T0 + k * 10_000 + 5_000, 1000))
    per_port[0] += [(T0 + 301_234 + (k * 8816 + 99) // 100, 1078) for k in range(40)]
    per_port[1] += [(T0 + 700_000 + (k * 132_416 + 99) // 100, 4114) for k in range(20)]
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    for name in ("swp1", "swp2"):
        w.interface(linktype=1, snaplen=0, resolution="1e-9", name=name)
    frames = {
        wire: oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 49152, 4791, payload=wire - 42)
        for wire in (1000, 1078, 4114)
    }
    for t, itf, wire in sorted((t, i, wl) for i, pk in per_port.items() for t, wl in pk):
        w.epb(itf, frames[wire], ts_ns=t)
    path = tmp_path / "ports.pcapng"
    path.write_bytes(w.getvalue())
    return path, per_port


def _first_window(ts: list[int], sizes: list[int], tau: int) -> tuple[int, int]:
    """(E(τ), the start of the first window [s, s+τ) that holds it), s over the packets."""
    best, at = -1, 0
    for s in sorted(set(ts)):
        b = sum(L for t, L in zip(ts, sizes, strict=True) if s <= t < s + tau)
        if b > best:
            best, at = b, s
    return best, at


def _peak(ts: list[int], sizes: list[int], rate_bps: int) -> tuple[Fraction, int]:
    """(B_max(r), the first instant t_j at which max over t_i ≤ t_j of A[t_i, t_j] − r·(t_j − t_i)
    reaches it)."""
    want = oracles.bmax(ts, sizes, rate_bps)
    for b in sorted(set(ts)):
        for a in sorted(set(ts)):
            if a <= b:
                got = sum(L for t, L in zip(ts, sizes, strict=True) if a <= t <= b)
                if got - Fraction(rate_bps * (b - a), 8 * 10**9) == want:
                    return want, b
    raise AssertionError("no instant reaches B_max")


def _table(out: str, heading: str) -> list[list[str]]:
    """The rows of the table under the first line that starts with `heading`, split on 2+ spaces
    (a note under it, one cell, is not a row)."""
    lines = out[out.index(heading) :].splitlines()[1:]
    width = len(re.split(r" {2,}", lines[0].strip()))
    rows = []
    for line in lines[1:]:
        cells = re.split(r" {2,}", line.strip())
        if not line.startswith("  ") or line[2:3] == " " or len(cells) != width:
            break
        rows.append(cells)
    return rows


def test_scan_tables_say_when_each_burst_was_and_name_the_port(tmp_path: Path) -> None:
    # The terminal's E(τ) and B_max(r) gave sizes without instants (only -o FILE had them), and
    # the port as if0/if1 where the capture named it swp1/swp2.
    path, per_port = _two_ports(tmp_path)
    windows, rates = [1_000, 5_000, 100_000], [25 * 10**9, 100 * 10**9]
    p = run_cli(
        "scan", path, "-q", "--size", "l1", "--by", "interface", "--windows", "1us,5us,100us",
        "--rates", "25Gbps,100Gbps",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    for itf, name in ((0, "swp1"), (1, "swp2")):
        ts = [t for t, _ in per_port[itf]]
        sizes = [_l1(w) for _, w in per_port[itf]]
        rows = _table(out, f"Envelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — interface if{itf} ({name})")
        assert [r[0] for r in rows] == ["1us", "5us", "100us"]
        for row, tau in zip(rows, windows, strict=True):
            e, start = _first_window(ts, sizes, tau)
            assert (row[1], row[-1]) == (f"{e:,}", _iso(start)), (tau, row)
        rows = _table(out, f"Backlog B_max(r) at a constant-rate server — interface if{itf} ({name})")
        for row, rate in zip(rows, rates, strict=True):
            b, at = _peak(ts, sizes, rate)
            assert (row[2], row[4]) == (f"{float(b):,.0f}", _iso(at)), (rate, row)
    # The burst at 100 Gbit/s starts where it was put.
    assert _table(out, "Envelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — interface if0 (swp1)")[0][-1] == _iso(T0 + 301_234)


def test_bursts_names_the_largest_and_when_it_began(tmp_path: Path) -> None:
    # The terminal listed the first 20 bursts (the steady frames); the largest, which an operator
    # looks for, was only in -o FILE.
    path, per_port = _two_ports(tmp_path)
    pk = sorted((t, w) for port in per_port.values() for t, w in port)
    runs: list[list[tuple[int, int]]] = []
    for t, w in pk:
        if runs and t - runs[-1][-1][0] <= 1_000:
            runs[-1].append((t, w))
        else:
            runs.append([(t, w)])
    k, big = max(enumerate(runs), key=lambda r: (sum(w for _, w in r[1]), -r[0]))
    p = run_cli("bursts", path, "-q", "--gap", "1us")
    assert p.returncode == 0, p.stderr
    want = (
        f"burst {k}: {sum(w for _, w in big):,} bytes, {len(big)} packets in "
        f"{(big[-1][0] - big[0][0]) / 1000:g}us, from {_iso(big[0][0])}"
    )
    assert re.search(r"^  largest +" + re.escape(want) + "$", p.stdout.decode(), re.M), (want, p.stdout.decode())


def test_info_tells_jumbo_frames_from_offload(tmp_path: Path) -> None:
    # A switch mirror of RoCE traffic holds 4,114-byte frames that were on the wire as they are;
    # info called them "TSO/GRO offload? burst sizes will be distorted". Past 9,216 B no Ethernet
    # carries a frame: that is offload.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=100)
    for longest, says, not_says in (
        (4_114, "jumbo frames, or a host's TSO/GRO offload", "will be distorted"),
        (9_216, "jumbo frames, or a host's TSO/GRO offload", "will be distorted"),
        (9_217, "TSO/GRO offload (frames over 9,216 B, the longest jumbo frame)?", "jumbo frames,"),
    ):
        cap = tmp_path / f"j{longest}.pcapng"
        cap.write_bytes(oracles.capture([1_000, 2_000], [142, longest], frames=[frame, frame]))
        p = run_cli("info", cap)
        assert p.returncode == 0, p.stderr
        line = next(x for x in p.stdout.decode().splitlines() if x.startswith("Over link MTU:"))
        assert f"1 frame (max {longest:,} B)  <- " in line and says in line and not_says not in line, line
        assert says in burstcore.info(str(cap)).over_mtu_hint()


def _fcs_captures(tmp_path: Path, ts: list[int], frame: bytes, fcs: bytes = b"\xde\xad\xbe\xef") -> dict[str, Path]:
    """The same frames with their 4-byte FCS kept, declared as pcapng's if_fcslen (an IDB laid
    out by hand, not by the writer) and as a pcap header's FCS bits (tshark shows it as eth.fcs
    in both), and without it."""
    ng = burstcore.CaptureWriter("pcapng")
    ng.section("little")
    # An IDB of Ethernet, snaplen 0, with if_tsresol 9 and if_fcslen 4, and EPBs on it.
    opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HHB3x", 13, 1, 4) + struct.pack("<HH", 0, 0)
    ng.raw_block(1, struct.pack("<HHI", 1, 0, 0) + opts)
    for t in ts:
        data = frame + fcs
        head = struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data))
        ng.raw_block(6, head + data + b"\x00" * (-len(data) % 4))
    pcap = burstcore.CaptureWriter("pcap", nanos=True, linktype=1)
    for t in ts:
        pcap.packet(t, frame + fcs)
    raw = bytearray(pcap.getvalue())
    struct.pack_into("<I", raw, 20, 1 | 0x0400_0000 | (2 << 28))  # FCS present: two 16-bit words
    paths = {"pcapng": tmp_path / "fcs.pcapng", "pcap": tmp_path / "fcs.pcap", "none": tmp_path / "none.pcapng"}
    paths["pcapng"].write_bytes(ng.getvalue())
    paths["pcap"].write_bytes(bytes(raw))
    paths["none"].write_bytes(oracles.capture(ts, [len(frame)] * len(ts), frames=[frame] * len(ts)))
    return paths


def _crc(frame: bytes) -> bytes:
    """Ethernet's FCS of `frame` as it follows it on the wire: zlib's CRC-32, least significant
    byte first (IEEE 802.3), an oracle apart from burstcore's own."""
    return struct.pack("<I", zlib.crc32(frame))


def test_l1_counts_a_declared_fcs_once(tmp_path: Path) -> None:
    # A switch's mirror may keep each frame's FCS and say so (pcapng if_fcslen, pcap FCS bits);
    # "l1" added another 4 B to it: 1,106 B for a 1,078-byte frame that takes 1,102 on the wire,
    # and 88 B for a minimum frame that takes 84 (4.8 % over line rate).
    for payload in (1036, 0):
        frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=payload)
        ts = [T0 + k * 100 for k in range(8)]
        want_l1 = _l1(len(frame))
        for kind, path in _fcs_captures(tmp_path, ts, frame).items():
            r = burstcore.scan(str(path), windows=["1us"], rates=["100Gbps"], size="l1")
            e, _ = oracles.envelope(ts, [want_l1] * len(ts), 1_000)
            assert r.envelope["bytes"].to_list() == [e], (kind, payload)
            assert r.backlog["bmax_bytes"].to_list() == [float(oracles.bmax(ts, [want_l1] * len(ts), 10**11))]
            # The wire length is the frame as tshark's frame.len has it, FCS and all.
            wire = burstcore.scan(str(path), windows=["1us"], rates=["100Gbps"]).summary["bytes"].item()
            assert wire == len(ts) * (len(frame) + (0 if kind == "none" else 4)), kind


def test_the_writer_declares_an_fcs_as_tshark_reads_it(tmp_path: Path) -> None:
    # CaptureWriter had no if_fcslen, nor pcap's FCS bits: a test had to lay the blocks out by
    # hand. Each frame here is exactly its IP datagram, so tshark takes an FCS (eth.fcs, the
    # frame's last 4 bytes) only where the file declares one, not by its trailer heuristic.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=100)
    files = {}
    for fcs_len in (0, 4):
        pcap = burstcore.CaptureWriter("pcap", nanos=True, fcs_len=fcs_len)
        pcap.packet(T0, frame)
        ng = burstcore.CaptureWriter("pcapng", nanos=True, fcs_len=fcs_len)
        ng.interface(linktype=1)
        ng.interface(linktype=1, fcs_len=4 - fcs_len)  # the interface's own overrides the default
        ng.epb(0, frame, ts_ns=T0)
        ng.epb(1, frame, ts_ns=T0 + 1)
        files[f"pcap{fcs_len}"] = (pcap.getvalue(), [fcs_len])
        files[f"pcapng{fcs_len}"] = (ng.getvalue(), [fcs_len, 4 - fcs_len])
    for name, (data, want) in files.items():
        path = tmp_path / f"{name}.cap"
        path.write_bytes(data)
        seen = tshark_fields(path, ["eth.fcs"])
        assert [row[0] == f"0x{frame[-4:][::-1].hex()}" for row in seen] == [n == 4 for n in want], (name, seen)
        assert [row[0] == "" for row in seen] == [n == 0 for n in want], (name, seen)
    # What pcap's field cannot say is refused, naming the argument.
    with pytest.raises(ValueError, match="fcs_len=3"):
        burstcore.CaptureWriter("pcap", fcs_len=3)
    with pytest.raises(OverflowError, match="fcs_len=256"):
        burstcore.CaptureWriter("pcapng").interface(fcs_len=256)


def test_info_shows_the_fcs_each_interface_declares(tmp_path: Path) -> None:
    # info showed no declared FCS (pcapng if_fcslen, a pcap header's FCS bits): a capture whose
    # l1 sizes lost 4 B a frame to it gave no sign why. tshark takes the frame's last 4 B as its
    # eth.fcs exactly where the file declares one (each frame is its IP datagram, no trailer):
    # the oracle for which interfaces declare it.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=100)
    ng = burstcore.CaptureWriter("pcapng", nanos=True, fcs_len=4)
    ng.interface(linktype=1)
    ng.interface(linktype=1, fcs_len=0)
    ng.epb(0, frame + _crc(frame), ts_ns=T0)
    ng.epb(1, frame, ts_ns=T0 + 1)
    pcap = burstcore.CaptureWriter("pcap", nanos=True, fcs_len=4)
    pcap.packet(T0, frame + _crc(frame))
    plain = burstcore.CaptureWriter("pcap", nanos=True)
    plain.packet(T0, frame)
    for name, data, want in (
        ("ng.pcapng", ng.getvalue(), [4, 0]),
        ("fcs.pcap", pcap.getvalue(), [4]),
        ("plain.pcap", plain.getvalue(), [0]),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        seen = [row[0] != "" for row in tshark_fields(path, ["eth.fcs"])]
        assert seen == [n > 0 for n in want], (name, seen)
        info = burstcore.info(str(path))
        assert [i["fcs_len"] for i in info.interfaces] == want, name
        assert [i["fcs_len"] for i in info.to_dict()["interfaces"]] == want, name
        lines = [x for x in str(info).splitlines() if x.startswith("  #")]
        assert [", FCS 4 B declared" in x for x in lines] == [n == 4 for n in want], lines
        assert [", FCS" in x for x in lines] == [n > 0 for n in want], lines
        p = run_cli("info", path)
        assert p.returncode == 0, p.stderr
        cli = [x for x in p.stdout.decode().splitlines() if x.startswith("  #")]
        assert cli == lines, (cli, lines)


def test_info_tells_an_undeclared_fcs_and_l1_counts_it_once_when_told(tmp_path: Path) -> None:
    # A switch mirror kept each frame's FCS without declaring it: l1 counted 4 B a frame too
    # many, and nothing said so. info checks the CRC now, and fcs="present" takes it off.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=1036)
    ts = [T0 + k * 100 for k in range(100)]
    kept = frame + _crc(frame)
    # The same frames, FCS kept and not declared; then declared; then a made-up one; then none.
    caps = {
        "kept": oracles.capture(ts, [len(kept)] * len(ts), frames=[kept] * len(ts)),
        "declared": _fcs_captures(tmp_path, ts, frame, fcs=_crc(frame))["pcap"].read_bytes(),
        "bad crc": oracles.capture(ts, [len(kept)] * len(ts), frames=[frame + b"\xde\xad\xbe\xef"] * len(ts)),
        "none": oracles.capture(ts, [len(frame)] * len(ts), frames=[frame] * len(ts)),
    }
    paths = {}
    for name, data in caps.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.cap"
        paths[name].write_bytes(data)
    # tshark checks the FCS itself (as good, 1) where it takes one: the oracle for the CRC.
    status = {r[0] for r in tshark_fields(paths["kept"], ["eth.fcs.status"], ["-o", "eth.check_fcs:TRUE"])}
    assert status == {"1"}, status
    for name, path in paths.items():
        info = burstcore.info(str(path))
        assert info.undeclared_fcs() == ([0] if name == "kept" else []), name
        i = info.interfaces[0]
        assert (i["fcs_sampled"], i["fcs_valid"]) == {
            "kept": (64, 64),
            "declared": (0, 0),
            "bad crc": (64, 0),
            "none": (64, 0),
        }[name], name
    p = run_cli("info", paths["kept"])
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.decode().splitlines() if x.startswith("Undeclared FCS:"))
    assert "interface #0: 64 of its first 64 whole frames end with a valid Ethernet FCS" in line, line
    assert "--fcs present" in line, line
    # l1 by each rule, against brute force: the frame on the wire is `frame`, FCS once.
    want = oracles.envelope(ts, [_l1(len(frame))] * len(ts), 1_000)[0]
    too_long = oracles.envelope(ts, [_l1(len(kept))] * len(ts), 1_000)[0]
    for name, fcs, e in (
        ("kept", "declared", too_long),
        ("kept", "present", want),
        ("declared", "declared", want),
        ("declared", "present", want),
        ("declared", "absent", too_long),
        ("none", "absent", want),
    ):
        r = burstcore.scan(str(paths[name]), windows=["1us"], rates=["100Gbps"], size="l1", fcs=fcs)
        assert r.envelope["bytes"].to_list() == [e], (name, fcs)
        assert r.config["fcs"] == fcs
    p = run_cli("scan", paths["kept"], "-q", "--size", "l1", "--fcs", "present", "--windows", "1us")
    assert p.returncode == 0, p.stderr
    assert _table(p.stdout.decode(), "Envelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — all traffic")[0][1] == f"{want:,}"
    sup = burstcore.superpose([str(paths["kept"])], windows=["1us"], rates=["100Gbps"], size="l1", fcs="present")
    assert sup.envelope.filter(pl.col("by") == "all")["bytes"].to_list() == [want]
    # fcs changes only l1: with another size it is refused, not ignored.
    with pytest.raises(ValueError, match="size='l1'"):
        burstcore.scan(str(paths["kept"]), windows=["1us"], fcs="present")
    with pytest.raises(ValueError, match="fcs="):
        burstcore.scan(str(paths["kept"]), windows=["1us"], size="l1", fcs="yes")


def test_report_headings_name_the_port_as_the_terminal_does(tmp_path: Path) -> None:
    # The terminal said "interface if0 (swp1)" where the HTML report's captions said "if0".
    from burstcore.report import render_report

    path, _ = _two_ports(tmp_path)
    r = burstcore.scan(str(path), by="interface", windows=["1us"], rates=["100Gbps"])
    page = render_report("ports", r)
    out = run_cli("scan", path, "-q", "--by", "interface", "--windows", "1us", "--rates", "100Gbps").stdout.decode()
    for itf, name in ((0, "swp1"), (1, "swp2")):
        assert f"interface if{itf} ({name})" in out
        assert f"<caption>E(τ) — interface: if{itf} ({name})</caption>" in page, itf
        assert f"<caption>B_max(r) — interface: if{itf} ({name})</caption>" in page, itf
    # Groupings of no interface have no name to add.
    page = render_report("ports", burstcore.scan(str(path), by=["all", "pair"], windows=["1us"], rates=["100Gbps"]))
    assert "<caption>E(τ) — all: all</caption>" in page
    assert "<caption>E(τ) — pair: 10.0.0.1&gt;10.0.0.2</caption>" in page


def test_a_peak_rate_over_line_rate_at_a_frames_time_is_explained(tmp_path: Path) -> None:
    # swp1's burst runs at 100 Gbit/s, swp2's at 25 Gbit/s, yet at τ of a frame's time on the
    # wire the tables showed 172 Gbit/s and 33 Gbit/s with no word why: each frame's bytes are
    # stamped at one instant, so a window shorter than the frame holds all of them.
    path, per_port = _two_ports(tmp_path)
    windows = [10, 100, 1_000, 100_000]
    p = run_cli(
        "scan", path, "-q", "--by", "interface", "--windows", "10ns,100ns,1us,100us", "--rates", "100Gbps"
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    from burstcore import report
    from burstcore._units import format_duration

    r = burstcore.scan(str(path), by="interface", windows=["10ns", "100ns", "1us", "100us"], rates=["100Gbps"])
    page = report.render_report("ports", r)
    for itf, name, line_rate, noted in ((0, "swp1", 100 * 10**9, 100), (1, "swp2", 25 * 10**9, 1_000)):
        ts = [t for t, _ in per_port[itf]]
        sizes = [w for _, w in per_port[itf]]
        # Brute force: the windows whose E(τ) holds one or two packets at 1 Gbit/s or more.
        few = []
        for tau in windows:
            e, start = _first_window(ts, sizes, tau)
            held = sum(1 for t in ts if start <= t < start + tau)
            if held <= 2 and 8 * e * 10**9 >= 10**9 * tau:
                few.append(tau)
                assert 8 * e * 10**9 / tau > line_rate, (itf, tau)  # over the line rate indeed
        assert max(few) == noted, (itf, few)
        heading = f"Envelope E(τ), peak rate 8·E(τ)/τ, PtM(τ) — interface if{itf} ({name})"
        rows = _table(out, heading)
        after = out[out.index(heading) :].splitlines()[2 + len(rows)]
        note = f"τ ≤ {format_duration(noted)}: E(τ) is one or two frames, each stamped at one instant"
        assert after.startswith("  " + note), after
        assert note in page
    # Long windows only: no note.
    out = run_cli("scan", path, "-q", "--windows", "100us,1ms", "--rates", "100Gbps").stdout.decode()
    assert "stamped at one instant" not in out


def _periodic_fcs_capture(fcs_len: int) -> tuple[bytes, list[int], list[bytes]]:
    """Twelve 10 ms iterations of 16 frames 1 µs apart, from two hosts to a third, each frame of
    60 B or more followed by its valid FCS: declared (pcapng if_fcslen) when `fcs_len` is 4, kept
    without a word (a switch's mirror) when 0. The timestamps and the frames without their FCS."""
    w = burstcore.CaptureWriter("pcapng", fcs_len=fcs_len)
    w.interface(linktype=1)
    ts, frames = [], []
    for it in range(12):
        for k in range(16):
            src = "10.0.0.1" if k % 2 else "10.0.0.3"
            frame = oracles.eth_ipv4_udp(src, "10.0.0.2", 1000 + k % 3, 4791, payload=(18, 100, 500, 1036)[k % 4])
            t = T0 + it * 10_000_000 + k * 1_000
            w.epb(0, frame + _crc(frame), ts_ns=t)
            ts.append(t)
            frames.append(frame)
    return w.getvalue(), ts, frames


@pytest.mark.parametrize("fcs_len", [0, 4])
def test_every_analysis_counts_l1_under_the_fcs_rule_as_scan(tmp_path: Path, fcs_len: int) -> None:
    # The analyses took size="l1" but no fcs=: on a mirror that kept its FCS unsaid, flows,
    # matrix, sizes, bursts and iterations counted 4 B a frame more than scan(fcs="present"),
    # with nothing to set it right. The oracle: each frame's l1 by hand, its FCS taken off or not.
    data, ts, frames = _periodic_fcs_capture(fcs_len)
    path = tmp_path / "mirror.pcapng"
    path.write_bytes(data)
    kept = {"declared": fcs_len > 0, "present": True, "absent": False}
    for rule, off in kept.items():
        l1 = [_l1(len(f) + 4 - (4 if off else 0)) for f in frames]
        total = sum(l1)
        r = burstcore.scan(str(path), windows=["1us"], size="l1", fcs=rule)
        assert r.summary["bytes"].item() == total, rule
        kw = {"size": "l1", "fcs": rule}
        assert burstcore.flows(str(path), **kw)["bytes"].sum() == total, rule
        assert burstcore.traffic_matrix(str(path), **kw)["bytes"].sum() == total, rule
        assert burstcore.host_volumes(str(path), **kw)["received_bytes"].sum() == total, rule
        d = burstcore.sizes(str(path), **kw)
        assert d.groups["bytes"].to_list() == [total], rule
        # Every size, counted: the histogram is the oracle's multiset.
        want = sorted({n: l1.count(n) for n in l1}.items())
        assert [(r["size"], r["packets"]) for r in d.histogram.sort("size").iter_rows(named=True)] == want, rule
        b = burstcore.bursts(str(path), gap="1ms", **kw)
        assert b.summary["bytes"].item() == total and b.bursts["bytes"].to_list() == [total // 12] * 12, rule
        it = burstcore.iterations(str(path), **kw)
        assert it.period_ns == 10_000_000, rule
        # Each iteration's bytes are its packets' l1 bytes, by the packets between its bounds.
        for row in it.iterations.iter_rows(named=True):
            got = sum(n for t, n in zip(ts, l1, strict=True) if row["start_ns"] <= t < row["end_ns"])
            assert row["bytes"] == got, (rule, row)
    # As scan, fcs changes only l1: with another size it is refused, not ignored.
    for analysis in (burstcore.flows, burstcore.traffic_matrix, burstcore.host_volumes, burstcore.sizes):
        with pytest.raises(ValueError, match="fcs='present' tells size='l1'"):
            analysis(str(path), size="ip", fcs="present")
    with pytest.raises(ValueError, match="fcs='absent' tells size='l1'"):
        burstcore.bursts(str(path), fcs="absent")
    with pytest.raises(ValueError, match="fcs='present' tells size='l1'"):
        burstcore.iterations(str(path), fcs="present")
    # The command line takes --fcs for each analysis, as scan does.
    for command, table in (("flows", "flows"), ("matrix", "matrix"), ("sizes", "groups"), ("bursts", "bursts")):
        out = tmp_path / f"{command}.json"
        p = run_cli(command, path, "--size", "l1", "--fcs", "present", "--format", "json", "-o", out)
        assert p.returncode == 0, (command, p.stderr)
        doc = json.loads(out.read_text())
        assert doc["config"]["fcs"] == "present", command
        assert sum(r["bytes"] for r in doc[table]) == sum(_l1(len(f)) for f in frames), command


FCS_UNSAID = "frames end with a valid Ethernet FCS the capture does not declare"


def _fcs_told(call: Any) -> list[Any]:
    """The undeclared-FCS warnings `call()` gives (the warning objects, with their kind)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w.message for w in caught if FCS_UNSAID in str(w.message)]


def test_l1_that_believes_the_capture_is_told_of_an_fcs_it_does_not_declare(tmp_path: Path) -> None:
    # scan(size="l1") with the default fcs="declared" counted 4 B a frame too many on a mirror
    # that kept the FCS unsaid, and said nothing (info told, the scan did not). Interface 1's
    # frames carry their FCS (zlib's CRC-32, the oracle), interface 0's none.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=500)
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1)
    w.interface(linktype=1)
    for k in range(200):
        w.epb(k % 2, frame + (_crc(frame) if k % 2 else b""), ts_ns=T0 + k * 1_000)
    path = tmp_path / "mixed.pcapng"
    path.write_bytes(w.getvalue())
    want = "interface 1: 64 of its first 64 whole frames"
    for threads in (1, 2):  # 2: time chunks, each read by a reader of its own
        told = _fcs_told(lambda t=threads: burstcore.scan(path, windows=["1us"], size="l1", threads=t))
        assert len(told) == 1 and want in str(told[0]) and "interface 0" not in str(told[0]), (threads, told)
        assert told[0].kind == "undeclared_fcs" and "give fcs='present'" in str(told[0]), str(told[0])
    # The analyses count l1 as scan does, and are told alike.
    for analysis in (burstcore.flows, burstcore.sizes, burstcore.iterations):
        assert len(_fcs_told(lambda a=analysis: a(path, size="l1"))) == 1, analysis
    # Told what to do, or not counting l1: nothing to tell.
    for kw in ({"size": "l1", "fcs": "present"}, {"size": "l1", "fcs": "absent"}, {"size": "wire"}, {}):
        assert _fcs_told(lambda k=kw: burstcore.scan(path, windows=["1us"], **k)) == [], kw
        assert _fcs_told(lambda k=kw: burstcore.flows(path, **k)) == [], kw
    # Frames whose last bytes are no FCS, or an FCS the capture declares: nothing to tell.
    for name, fcs in (("none", b""), ("bad crc", b"\xde\xad\xbe\xef")):
        data = oracles.capture([T0 + k for k in range(100)], [len(frame) + len(fcs)] * 100, frames=[frame + fcs] * 100)
        (tmp_path / "other.pcapng").write_bytes(data)
        assert _fcs_told(lambda: burstcore.scan(tmp_path / "other.pcapng", windows=["1us"], size="l1")) == [], name
    declared = _fcs_captures(tmp_path, [T0 + k for k in range(100)], frame, fcs=_crc(frame))
    for kind, p in declared.items():
        assert _fcs_told(lambda q=p: burstcore.scan(q, windows=["1us"], size="l1")) == [], kind
    # The command line says it in its options' words.
    p = run_cli("scan", path, "-q", "--size", "l1", "--windows", "1us", "-o", tmp_path / "r.json")
    err = p.stderr.decode()
    assert p.returncode == 0 and err.count(FCS_UNSAID) == 1, err
    assert "--size l1 counted each such frame 4 B too long; give --fcs present" in err and "fcs=" not in err, err


def test_an_interface_whose_first_frames_come_late_is_told_alike_on_any_number_of_threads(tmp_path: Path) -> None:
    # A time-chunked scan (threads=2) read the file's first 65,536 packets again for the check:
    # an interface whose frames all come after them (a mirror port quiet at first) was told on
    # one thread and not on two. The chunks' readers check their own frames now, followed in
    # file order: the same frames, the same counts, on every path.
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 4791, payload=100)
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1)
    w.interface(linktype=1)
    quiet = 70_000
    for k in range(quiet):
        w.epb(0, frame, ts_ns=T0 + k * 1_000)
    # Interface 1 first speaks after the others' 70,000: half its first 64 frames cut by a
    # snaplen, the rest whole and ending with their FCS (zlib's CRC-32 the oracle).
    for k in range(200):
        data = frame + _crc(frame)
        w.epb(1, data[:60] if k % 2 else data, ts_ns=T0 + (quiet + k) * 1_000, wire_len=len(data))
    path = tmp_path / "quiet_port.pcapng"
    path.write_bytes(w.getvalue())
    # Two captures of the same span (one per host): files that overlap in time are cut at
    # common instants, each chunk reading a piece of each.
    other = tmp_path / "other_host.pcapng"
    other.write_bytes(
        oracles.capture([T0 + k * 2_000 for k in range(40_000)], [len(frame)] * 40_000, frames=[frame] * 40_000)
    )
    want = "interface 1: 64 of its first 64 whole frames"
    for threads in (1, 2, 3):
        told = _fcs_told(lambda t=threads: burstcore.scan(path, windows=["1us"], size="l1", threads=t))
        assert [want in str(m) for m in told] == [True], (threads, told)
        both = _fcs_told(lambda t=threads: burstcore.scan([other, path], windows=["1us"], size="l1", threads=t))
        assert [want in str(m) and "quiet_port.pcapng" in str(m) for m in both] == [True], (threads, both)
    assert burstcore.info(path).undeclared_fcs() == [1]


@pytest.mark.parametrize(("linktype", "own_header"), [(101, 0), (228, 0), (0, 4), (113, 16), (1, 14)])
def test_fcs_present_takes_nothing_off_a_link_whose_records_hold_no_frame(linktype: int, own_header: int) -> None:
    # Raw IP and BSD loopback records hold a packet with no link frame around it, so no FCS can
    # end them: fcs="present" took 4 B off each all the same (1,660 B became 1,620 B on raw IP).
    # A frame's link (Ethernet, Linux cooked: a capture with rx-fcs) still has it taken off.
    packet = 1000
    ts = [T0 + k * 100 for k in range(10)]
    w = burstcore.CaptureWriter("pcap", nanos=True, linktype=linktype)
    for t in ts:
        w.packet(t, b"\x00" * min(own_header + packet, 64), wire_len=own_header + packet)
    data = w.getvalue()
    frame = 14 + packet  # the packet in an Ethernet frame, the FCS not counted yet
    kept = 4 if linktype in (1, 113) else 0
    want = oracles.envelope(ts, [_l1(frame - kept)] * len(ts), 1_000)[0]
    got = burstcore.scan(data, windows=["1us"], rates=["100Gbps"], size="l1", fcs="present")
    assert got.envelope["bytes"].to_list() == [want]
    declared = burstcore.scan(data, windows=["1us"], rates=["100Gbps"], size="l1")
    assert declared.envelope["bytes"].to_list() == [oracles.envelope(ts, [_l1(frame)] * len(ts), 1_000)[0]]
