"""The analyses' ``size=`` and ``bursts(by=)``, against brute force over ``read_packets``'
columns (whose lengths test_packets_columns.py checks against tshark) and against tshark's own
reading of a corpus capture: every analysis that counts bytes counts them as ``scan`` does, and
a group's bursts are runs of its own packets."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from tests import oracles
from tests.conftest import epoch_ns, tshark_fields

SIZES = ("wire", "captured", "ip", "payload", "l1")
HOSTS = ("10.0.0.1", "10.0.0.2", "10.0.0.3")
# An ARP-like frame: Ethernet without IP, so no "ip" or "payload" size and no address.
NON_IP = b"\xff" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\x00" * 28


@st.composite
def captures(draw: Any) -> bytes:
    """A pcapng of 0-60 packets on three interfaces, in time order with ties: UDP and TCP
    between three hosts (some cut by a snaplen, so captured < wire) and non-IP frames."""
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    for _ in range(3):
        w.interface(linktype=1, snaplen=0, resolution="1e-9")
    t = 1_700_000_000_000_000_000
    for _ in range(draw(st.integers(0, 60))):
        t += draw(st.sampled_from([0, 1, 500, 999, 1_000, 1_001, 5_000, 40_000]))
        kind = draw(st.sampled_from(["udp", "tcp", "other"]))
        if kind == "other":
            frame = NON_IP
        else:
            src, dst = draw(st.sampled_from(HOSTS)), draw(st.sampled_from(HOSTS))
            payload = draw(st.integers(0, 1400))
            frame = oracles.eth_ipv4_udp(src, dst, 5000, 6000, payload, proto=17 if kind == "udp" else 6)
        cut = draw(st.sampled_from([len(frame), len(frame), 54]))
        w.epb(draw(st.integers(0, 2)), frame[:cut], ts_ns=t, wire_len=len(frame))
    return w.getvalue()


def sized(source: Any, size: str) -> pl.DataFrame:
    """The packets as ``size`` counts them (those without the header it reads left out), in
    timestamp order: timestamp (ns), size, interface label and src (``(none)`` without one)."""
    df = burstcore.read_packets(source).with_columns(pl.col("timestamp").dt.epoch("ns"))
    lengths = {
        "wire": pl.col("wire_len"),
        "captured": pl.col("cap_len"),
        "ip": pl.col("ip_len"),
        "payload": pl.col("payload_len"),
        # docs/metrics.md: the Ethernet frame padded to 60 B, plus the FCS and 20 B of preamble,
        # SFD and inter-frame gap.
        "l1": pl.max_horizontal(pl.col("wire_len"), pl.lit(60)) + 24,
    }
    return (
        df.select(
            "timestamp",
            lengths[size].cast(pl.UInt64).alias("size"),
            ("if" + pl.col("interface").cast(pl.String)).alias("interface"),
            pl.col("src").fill_null("(none)"),
            pl.col("dst"),
        )
        .drop_nulls(["timestamp", "size"])
        .sort("timestamp", maintain_order=True)
    )


def runs(ts: np.ndarray, sizes: np.ndarray, gap_ns: int) -> list[tuple[int, int, int, int]]:
    """Brute force: (start, end, bytes, packets) of each maximal run whose gaps are ≤ gap_ns."""
    out: list[list[int]] = []
    for t, s in zip(ts.tolist(), sizes.tolist(), strict=True):
        if out and t - out[-1][1] <= gap_ns:
            out[-1][1:] = [t, out[-1][2] + s, out[-1][3] + 1]
        else:
            out.append([t, t, s, 1])
    return [(a, b, c, d) for a, b, c, d in out]


def expected_bursts(packets: pl.DataFrame, gap_ns: int, by: str) -> list[tuple[Any, ...]]:
    rows = [("all", *r) for r in runs(packets["timestamp"].to_numpy(), packets["size"].to_numpy(), gap_ns)]
    for (key,), g in sorted(packets.group_by(by, maintain_order=True), key=lambda kg: str(kg[0][0])):
        rows += [(key, *r) for r in runs(g["timestamp"].to_numpy(), g["size"].to_numpy(), gap_ns)]
    return rows


def got_bursts(b: Any) -> list[tuple[Any, ...]]:
    return list(b.bursts.select("group", "start_ns", "end_ns", "bytes", "packets").iter_rows())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(captures(), st.sampled_from(SIZES), st.sampled_from(["interface", "src"]), st.sampled_from([0, 999, 1_000]))
def test_bursts_by_a_grouping_are_each_groups_own_runs(data: bytes, size: str, by: str, gap_ns: int) -> None:
    packets = sized(data, size)
    b = burstcore.bursts(data, f"{gap_ns}ns", by=by, size=size)
    assert got_bursts(b) == expected_bursts(packets, gap_ns, by)
    assert b.by == by
    # Within a group, bursts count from 0 and the OFF gap is from the group's previous burst.
    for _, g in b.bursts.group_by("group"):
        assert g["burst"].to_list() == list(range(g.height))
        assert g["off_before_ns"][1:].to_list() == (g["start_ns"][1:] - g["end_ns"][:-1]).to_list()
    # Each group's distributions are the order statistics (rank ceil(q·n)) of its own bursts.
    qs = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1]
    for key in b.bursts["group"].unique(maintain_order=True):
        g = b.bursts.filter(pl.col("group") == key)
        lengths = (g["end_ns"] - g["start_ns"]).to_list()
        offs = (g["start_ns"][1:] - g["end_ns"][:-1]).to_list()
        for metric, values in (
            ("bytes", g["bytes"].to_list()),
            ("packets", g["packets"].to_list()),
            ("duration_ns", lengths),
            ("off_ns", offs),
        ):
            ranked = sorted(values)
            want = [ranked[min(max(math.ceil(q * len(ranked)), 1), len(ranked)) - 1] if ranked else None for q in qs]
            got = b.distributions.filter((pl.col("group") == key) & (pl.col("metric") == metric))
            assert got["q"].to_list() == qs and got["value"].to_list() == want, (key, metric)
    whole = burstcore.bursts(data, f"{gap_ns}ns", size=size)
    assert b.bursts.filter(pl.col("group") == "all").drop("group").equals(whole.bursts)
    assert b.summary.equals(whole.summary)
    assert whole.summary["skipped_no_size"][0] == burstcore.read_packets(data).height - packets.height


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(captures(), st.sampled_from(SIZES))
def test_every_analysis_counts_the_size_asked_for(data: bytes, size: str) -> None:
    packets = sized(data, size)
    skipped = burstcore.read_packets(data).height - packets.height
    # sizes: the histogram is the sizes' counts, per interface too.
    d = burstcore.sizes(data, by="interface", size=size)
    want = packets.group_by("size").len().sort("size")
    got = d.histogram.filter(pl.col("group") == "all").select("size", pl.col("packets").cast(pl.UInt32).alias("len"))
    assert got.rows() == want.rows()
    for (key,), g in packets.group_by("interface"):
        row = d.groups.filter(pl.col("group") == key).row(0, named=True)
        assert (row["packets"], row["bytes"]) == (g.height, g["size"].sum())
    assert d.summary["skipped_no_size"][0] == skipped
    # traffic_matrix: each host pair's bytes; packets without addresses are the row of nulls.
    m = burstcore.traffic_matrix(data, size=size)
    pairs = packets.with_columns(pl.col("src").replace("(none)", None)).group_by("src", "dst").agg(pl.col("size").sum())
    assert sorted(m.select("src", "dst", "bytes").rows(), key=str) == sorted(pairs.rows(), key=str)
    hosts = burstcore.host_volumes(data, size=size)
    assert hosts["sent_bytes"].sum() == packets["size"].sum()
    # flows: every IP packet is in a 5-tuple flow here (all have a protocol).
    f = burstcore.flows(data, size=size)
    ip = packets.filter(pl.col("dst").is_not_null())
    assert (f["packets"].sum(), f["bytes"].sum()) == (ip.height, ip["size"].sum())
    # iterations: what it reads and what it leaves out.
    with warnings.catch_warnings():
        # Random packets have no period to speak of, and are told so.
        warnings.simplefilter("ignore", burstcore.CaptureWarning)
        it = burstcore.iterations(data, bin="1us", min_period="5us", max_period="100us", size=size)
    assert (it.summary["packets"][0], it.summary["skipped_no_size"][0]) == (packets.height, skipped)
    # scan agrees on every total.
    groups = burstcore.scan(data, windows=["1ms"], size=size).groups
    assert groups.select("packets", "bytes").rows() == (
        [(packets.height, packets["size"].sum())] if packets.height else []
    )


def test_iteration_bytes_are_the_sizes_of_their_packets() -> None:
    # Eight bursts of 10 packets, 100 µs apart inside, 20 ms between bursts: iterations of 20 ms,
    # whose bytes are the IP bytes of the packets they hold when size="ip".
    ts, frames = [], []
    t0 = 1_700_000_000_000_000_000
    for k in range(8):
        for i in range(10):
            ts.append(t0 + k * 20_000_000 + i * 100_000)
            frames.append(oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, 100 + 10 * i))
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    for size in ("wire", "ip"):
        packets = sized(data, size)
        it = burstcore.iterations(data, bin="100us", min_period="5ms", max_period="50ms", size=size)
        # The construction: every burst an iteration of its own, whole, 20 ms after the one before.
        burst = sum(len(f) - (14 if size == "ip" else 0) for f in frames[:10])
        assert it.period_ns == 20_000_000, size
        assert it.iterations.select("packets", "bytes").rows() == [(10, burst)] * 8, size
        assert [t - t0 for t in it.iterations["start_ns"]] == [k * 20_000_000 for k in range(8)], size
        for r in it.iterations.iter_rows(named=True):
            inside = packets.filter(pl.col("timestamp").is_between(r["start_ns"], r["end_ns"], closed="left"))
            assert (r["bytes"], r["packets"]) == (inside["size"].sum(), inside.height), (size, r)


@pytest.fixture(scope="module")
def three_links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pcapng of 600 packets on three interfaces: UDP and TCP of many sizes between three
    hosts (a tenth cut at 54 bytes captured), non-IP frames, gaps from 0 to 3 ms."""
    rng = random.Random(7)
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    for _ in range(3):
        w.interface(linktype=1, snaplen=0, resolution="1e-9")
    t = 1_700_000_000_000_000_000
    for _ in range(600):
        t += rng.choice([0, 1_000, 50_000, 400_000, 1_500_000, 3_000_000])
        if rng.random() < 0.1:
            frame = NON_IP
        else:
            src, dst = rng.sample(HOSTS, 2)
            frame = oracles.eth_ipv4_udp(src, dst, 5000, 6000, rng.randrange(0, 1400), proto=rng.choice([6, 17]))
        cut = 54 if rng.random() < 0.1 else len(frame)
        w.epb(rng.randrange(3), frame[:cut], ts_ns=t, wire_len=len(frame))
    path = tmp_path_factory.mktemp("links") / "three_links.pcapng"
    path.write_bytes(w.getvalue())
    return path


def test_bursts_by_interface_match_tsharks_reading(three_links: Path) -> None:
    # tshark's frame times, interfaces and lengths, brute-forced into bursts per interface.
    rows = tshark_fields(
        three_links, ["frame.time_epoch", "frame.interface_id", "ip.len", "frame.len", "frame.cap_len"]
    )
    tshark = pl.DataFrame(
        {
            "timestamp": [epoch_ns(r[0]) for r in rows],
            "interface": [f"if{r[1]}" for r in rows],
            "ip": [int(r[2]) if r[2] else None for r in rows],
            "wire": [int(r[3]) for r in rows],
            "captured": [int(r[4]) for r in rows],
        },
        schema_overrides={"ip": pl.UInt64, "wire": pl.UInt64, "captured": pl.UInt64},
    ).sort("timestamp", maintain_order=True)
    assert tshark.height == 600 and tshark["interface"].n_unique() == 3 and 0 < tshark["ip"].null_count() < 100
    for size in ("wire", "captured", "ip"):
        packets = tshark.select("timestamp", pl.col(size).alias("size"), "interface").drop_nulls()
        for gap_ns in (0, 1_000_000, 2_000_000):
            b = burstcore.bursts(three_links, f"{gap_ns}ns", by="interface", size=size)
            assert got_bursts(b) == expected_bursts(packets, gap_ns, "interface"), (size, gap_ns)
        d = burstcore.sizes(three_links, by="interface", size=size)
        got = d.histogram.select("group", "size", "packets").sort("group", "size").rows()
        want = (
            pl.concat([packets.with_columns(interface=pl.lit("all")), packets])
            .group_by("interface", "size")
            .len()
            .sort("interface", "size")
            .rows()
        )
        assert got == want, size


def test_bursts_by_interface_number_merged_captures_as_scan_does(three_links: Path) -> None:
    both = [str(three_links), str(three_links)]
    with warnings.catch_warnings():
        # The same file twice holds the same packets: said, and meant here.
        warnings.simplefilter("ignore", burstcore.SharedPacketsWarning)
        b = burstcore.bursts(both, "1ms", by="interface", size="ip")
        s = burstcore.scan(both, windows=["1ms"], by="interface", size="ip").groups
    got = b.bursts.filter(pl.col("group") != "all").group_by("group").agg(pl.col("packets", "bytes").sum())
    assert sorted(got.rows()) == sorted(s.select("group", "packets", "bytes").rows())
    assert sorted(got["group"]) == [f"if{k}" for k in range(6)]


def test_bursts_grouping_and_limits_are_checked() -> None:
    data = oracles.capture([1, 2, 3], [60, 60, 60], frames=[oracles.eth_ipv4_udp(h, "10.0.0.9", 1, 2) for h in HOSTS])
    with pytest.raises(ValueError, match="one grouping at a time"):
        burstcore.bursts(data, by=["src", "dst"])
    with pytest.raises(ValueError, match="ambiguous"):
        burstcore.bursts(data, by="host")
    with pytest.raises(ValueError, match="size"):
        burstcore.bursts(data, size="bits")
    with pytest.raises(burstcore.LimitExceededError, match="more than 2 groups"):
        burstcore.bursts(data, by="src", max_groups=2)
    assert burstcore.bursts(data, by="src", max_groups=3).bursts["group"].to_list() == ["all", *HOSTS]
    # by="all" adds the group column and no group beside 'all'.
    assert burstcore.bursts(data, by="all").bursts["group"].to_list() == ["all"]
    assert "by src" in repr(burstcore.bursts(data, by="src"))


def test_cli_takes_size_and_bursts_by(three_links: Path) -> None:
    path = str(three_links)

    def cli(*args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "burstcore", *args, path, "-q", "--format", "json", "-o", "-"],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)

    j = cli("bursts", "--by", "interface", "--size", "ip", "--table", "bursts")
    assert (j["config"]["by"], j["config"]["size"]) == ("interface", "ip")
    api = burstcore.bursts(path, by="interface", size="ip").bursts
    assert [(r["group"], r["bytes"]) for r in j["bursts"]] == api.select("group", "bytes").rows()
    for command in ("sizes", "flows", "matrix", "iterations"):
        assert cli(command, "--size", "payload")["config"]["size"] == "payload", command
    q = cli("sizes", "--size", "ip", "--table", "groups")["groups"][0]
    assert q["bytes"] == sized(path, "ip")["size"].sum()
    # A gap has no bytes: gaps takes no --size.
    out = subprocess.run(
        [sys.executable, "-m", "burstcore", "gaps", path, "--size", "ip"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "--size" in out.stderr


@pytest.mark.parametrize("size", ["ip", "payload"])
def test_a_size_whose_header_no_packet_has_is_told_not_returned_empty(size: str) -> None:
    # Non-IP frames only: every analysis by size='ip'/'payload' counted nothing and said nothing
    # (no flows, an empty matrix, "period none"); scan's summary alone held skipped_no_size.
    data = oracles.capture([1_000 * k for k in range(30)], [len(NON_IP)] * 30, frames=[NON_IP] * 30)
    calls = {
        "scan": lambda: burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], size=size),
        "flows": lambda: burstcore.flows(data, size=size),
        "traffic_matrix": lambda: burstcore.traffic_matrix(data, size=size),
        "host_volumes": lambda: burstcore.host_volumes(data, size=size),
        "sizes": lambda: burstcore.sizes(data, size=size),
        "bursts": lambda: burstcore.bursts(data, size=size),
        "iterations": lambda: burstcore.iterations(data, size=size),
        "superpose": lambda: burstcore.superpose([data, data], windows=["1ms"], size=size),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            call()
        texts = [str(w.message) for w in told if "size= found the header" in str(w.message)]
        assert texts, (name, [str(w.message) for w in told])
        assert "none of the 30 packets" in texts[0] or name == "superpose", (name, texts)
        assert "'wire' or 'l1' counts every frame" in texts[0], texts
    # One packet that has it: no note (the others are counted in summary.skipped_no_size).
    ip = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, 100)
    mixed = oracles.capture([0, 1_000], [len(NON_IP), len(ip)], frames=[NON_IP, ip])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert burstcore.scan(mixed, windows=["1ms"], rates=["1Gbps"], size=size).summary["skipped_no_size"][0] == 1
        assert burstcore.flows(mixed, size=size)["packets"].sum() == 1
    # The command line names the option.
    cli = subprocess.run(
        [sys.executable, "-m", "burstcore", "flows", "-", "--size", size, "-q"],
        input=data,
        capture_output=True,
    )
    assert cli.returncode == 0 and b"--size found the header it counts in none" in cli.stderr
