"""info with start/end and filter: every figure of the packets chosen equals what a brute force
over read_packets with the same keywords computes (and tshark's own reading with a display
filter), while the file's structure (interfaces, blocks) stays the file's."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import burstcore
from tests.conftest import shared_file, tshark_fields
from tests.test_iter_packets import T0, frame


def shuffled_pcapng(n: int, seed: int) -> bytes:
    """Two interfaces, timestamps that step back now and then, a Simple Packet Block (no
    timestamp) now and then, frames of every kind of test_iter_packets (ARP, IPv4 TCP/UDP, IPv6),
    some cut short by the snaplen."""
    rng = random.Random(seed)
    w = burstcore.CaptureWriter("pcapng")
    w.section()
    ifaces = [w.interface(resolution="1e-9"), w.interface(resolution="1e-6")]
    t = T0
    for i in range(n):
        t += rng.randrange(-3_000, 9_000) * 1000  # µs steps, some back
        f = frame(rng.randrange(40))
        if rng.random() < 0.05:
            w.spb(f)
        elif rng.random() < 0.1:
            w.epb(ifaces[i % 2], f[:30], ts_ns=t, wire_len=len(f))
        else:
            w.epb(ifaces[i % 2], f, ts_ns=t)
    return w.getvalue()


def brute(data: bytes, **kw: Any) -> dict[str, Any]:
    """What info should say of the packets read_packets chooses with `kw`."""
    df = burstcore.read_packets(data, **kw)
    ts = [None if t is None else int(t) for t in df["timestamp"].dt.epoch("ns").to_list()]
    timed = [t for t in ts if t is not None]
    back = [q - t for q, t in zip(_timed_prev(ts), ts, strict=True) if q is not None and t is not None and t < q]
    per_iface: dict[int, tuple[int, int]] = {}
    for i, w in zip(df["interface"].to_list(), df["wire_len"].to_list(), strict=True):
        n, b = per_iface.get(i, (0, 0))
        per_iface[i] = (n + 1, b + w)
    return {
        "packets": df.height,
        "wire_bytes": int(df["wire_len"].sum()),
        "captured_bytes": int(df["cap_len"].sum()),
        "first_ns": timed[0] if timed else None,
        "last_ns": timed[-1] if timed else None,
        "min_ns": min(timed) if timed else None,
        "max_ns": max(timed) if timed else None,
        "packets_without_timestamp": len(ts) - len(timed),
        "out_of_order": len(back),
        "max_step_back_ns": max(back, default=0),
        "snapped": int((df["cap_len"] < df["wire_len"]).sum()),
        "max_wire_len": int(df["wire_len"].max() or 0),
        "per_interface": per_iface,
    }


def _timed_prev(ts: list[int | None]) -> list[int | None]:
    """For each packet, the timestamp of the timed packet before it in the file (info compares
    each with the previous packet that has one)."""
    out: list[int | None] = []
    prev = None
    for t in ts:
        out.append(prev)
        if t is not None:
            prev = t
    return out


def check(data: bytes, **kw: Any) -> burstcore.CaptureInfo:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inf = burstcore.info(data, **kw)
        want = brute(data, **kw)
    per_iface = want.pop("per_interface")
    got = {k: getattr(inf, k) for k in want}
    assert got == want, kw
    for i in inf.interfaces:
        assert (i["packets"], i["bytes"]) == per_iface.get(i["index"], (0, 0)), (kw, i)
    whole = burstcore.info(data)
    # The file's structure stays the file's, and every packet read is told for.
    assert inf.interfaces[0]["snaplen"] == whole.interfaces[0]["snaplen"] and inf.blocks == whole.blocks
    read = inf.details["read"]
    assert read["packets_read"] == whole.packets and read["counted"] == inf.packets
    left_out = read["skipped_no_timestamp"] + read["skipped_outside_range"] + read["skipped_filtered"]
    assert inf.packets + left_out + read["skipped_timestamp_out_of_range"] == whole.packets
    return inf


FILTERS = [None, "udp", "tcp", "ip6", "not ip", "host 10.0.0.3", "port 4002 or port 80"]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    lo=st.one_of(st.none(), st.integers(0, 300)),
    width=st.one_of(st.none(), st.integers(1, 300)),
    filt=st.sampled_from(FILTERS),
)
def test_info_of_a_range_and_filter_is_the_brute_force_over_read_packets(
    seed: int, lo: int | None, width: int | None, filt: str | None
) -> None:
    data = shuffled_pcapng(300, seed)
    start = None if lo is None else T0 + lo * 3_000_000
    end = None if width is None else (start if start is not None else T0) + width * 3_000_000
    check(data, start=start, end=end, filter=filt)


def test_without_range_or_filter_nothing_changes() -> None:
    data = shuffled_pcapng(500, 7)
    inf = check(data)
    assert "chosen" not in inf.details and "Chosen:" not in str(inf)
    assert inf.details["read"]["skipped_outside_range"] == 0


def test_a_range_leaves_out_packets_without_timestamp_and_says_what_it_chose() -> None:
    data = shuffled_pcapng(500, 11)
    whole = burstcore.info(data)
    assert whole.packets_without_timestamp > 0
    inf = check(data, start=T0, filter="udp")
    assert inf.packets_without_timestamp == 0
    assert inf.details["read"]["skipped_no_timestamp"] == whole.packets_without_timestamp
    assert inf.details["chosen"] == {"start": T0, "end": None, "filter": "udp"}
    text = str(inf)
    assert f"Chosen:              {inf.packets:,} of the {whole.packets:,} packets read, by [" in text
    assert "filter udp" in text
    json.dumps(inf.to_dict())


def test_a_range_that_holds_no_packet_is_warned_of_as_read_packets_does() -> None:
    data = shuffled_pcapng(100, 3)
    with pytest.warns(UserWarning, match="holds none of") as told:
        inf = burstcore.info(data, start=T0 - 10**12, end=T0 - 10**11)
    assert inf.packets == 0 and inf.min_ns is None
    assert any("holds none of" in w for w in inf.warnings), told
    with pytest.warns(UserWarning, match="filter= passed none"):
        assert burstcore.info(data, filter="host 192.0.2.99").packets == 0


def test_bad_arguments_are_refused_before_reading() -> None:
    data = shuffled_pcapng(10, 1)
    with pytest.raises(ValueError, match="filter"):
        burstcore.info(data, filter="tcp port")
    with pytest.raises(ValueError, match="before"):
        burstcore.info(data, start=T0 + 10, end=T0)


def test_info_of_a_range_and_filter_agrees_with_tshark() -> None:
    """tshark's own reading of a public capture (its display filter for port 80, its frame
    lengths and epoch times), the range applied to its times: count, bytes, first and last."""
    path = shared_file("corpus/dpkt/examples/data/http.pcap")
    rows = [
        (int(Decimal(t) * 1_000_000_000), int(n))
        for t, n in tshark_fields(path, ["frame.time_epoch", "frame.len"], ["-Y", "tcp.port == 80"])
    ]
    times = sorted(t for t, _ in rows)
    start, end = times[len(times) // 3], times[2 * len(times) // 3]
    chosen = [(t, n) for t, n in rows if start <= t < end]
    assert 2 <= len(chosen) < len(rows)
    inf = burstcore.info(path, start=start, end=end, filter="tcp port 80")
    assert (inf.packets, inf.wire_bytes) == (len(chosen), sum(n for _, n in chosen))
    assert (inf.first_ns, inf.last_ns) == (chosen[0][0], chosen[-1][0])
    assert (inf.min_ns, inf.max_ns) == (min(t for t, _ in chosen), max(t for t, _ in chosen))
    check(path.read_bytes(), start=start, end=end, filter="tcp port 80")


def test_cli_info_takes_start_end_and_filter(tmp_path: Path) -> None:
    data = shuffled_pcapng(400, 5)
    path = tmp_path / "c.pcapng"
    path.write_bytes(data)
    start, end = T0 + 50 * 3_000_000, T0 + 250 * 3_000_000
    argv = ["info", str(path), "--start", str(start), "--end", str(end), "--filter", "udp", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "burstcore", *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    (doc,) = json.loads(out.stdout)
    want = check(data, start=start, end=end, filter="udp")
    assert (doc["packets"], doc["wire_bytes"], doc["min_ns"]) == (want.packets, want.wire_bytes, want.min_ns)
    assert doc["chosen"] == {"start": start, "end": end, "filter": "udp"}
    text = subprocess.run(
        [sys.executable, "-m", "burstcore", "info", str(path), "--filter", "tcp"], capture_output=True, text=True
    ).stdout
    assert f"Packets:             {burstcore.info(data, filter='tcp').packets:,}" in text and "Chosen:" in text
