"""A filter per capture (``filter=[...]``, ``--filter`` once per file): one capture per host holds
every packet between two captured hosts twice, once as each host saw it; reading each file through
``src host <its host>`` keeps every packet once, at its sender's timestamp. The oracle is the
capture the generator writes of every packet once, stamped when it was sent."""

from __future__ import annotations

import json
import random
import re
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from tests import oracles
from tests.test_filter import analyses_equal, frames_equal, run_cli, same_scan

BASE = 1_700_000_000_000_000_000
WINDOWS = ["10us", "100us", "1ms", "10ms"]
RATES = ["100Mbps", "1Gbps", "10Gbps"]
BY = ["all", "src", "pair", "flow"]

# (sent at ns, src host, dst host, TCP payload bytes, receiver's delay in ns)
Packet = tuple[int, int, int, int, int]


def host(h: int) -> str:
    return f"10.0.0.{h + 1}"


def traffic(seed: int, hosts: int = 3, n: int = 3000) -> list[Packet]:
    """Training-like bursts: trains of MTU segments to a neighbour, each answered by an ACK, idle
    gaps between trains; the receiver stamps each packet 2-40 µs after its sender did."""
    rng = random.Random(seed)
    t, out = BASE, []
    while len(out) < n:
        t += rng.randrange(500_000, 3_000_000)
        for _ in range(rng.randrange(5, 40)):
            s = rng.randrange(hosts)
            d = (s + 1 + rng.randrange(hosts - 1)) % hosts
            t += rng.randrange(1_200, 12_000)
            out.append((t, s, d, 1448, rng.randrange(2_000, 40_000)))
            out.append((t + rng.randrange(1, 900), d, s, 0, rng.randrange(2_000, 40_000)))
    return sorted(out)


def write(path: Path, stamped: list[tuple[int, int, int, int]]) -> Path:
    """A pcapng of (stamp, src, dst, payload) in stamp order, by the project's writer."""
    stamped = sorted(stamped)
    frames = [
        oracles.eth_ipv4_udp(host(s), host(d), 40000 + s, 50000 + d, payload=p, proto=6) for _, s, d, p in stamped
    ]
    path.write_bytes(oracles.capture([t for t, *_ in stamped], [len(f) for f in frames], frames=frames))
    return path


def per_host(tmp: Path, packets: list[Packet], hosts: int) -> tuple[Path, list[Path]]:
    """The capture of every packet once at its send time, and one capture per host of what it
    sent (at the send time) and received (at the send time plus the delay)."""
    wire = write(tmp / "wire.pcapng", [(t, s, d, p) for t, s, d, p, _ in packets])
    files = []
    for h in range(hosts):
        own = [(t, s, d, p) for t, s, d, p, _ in packets if s == h]
        own += [(t + late, s, d, p) for t, s, d, p, late in packets if d == h]
        files.append(write(tmp / f"host{h}.pcapng", own))
    return wire, files


def own_filters(hosts: int) -> list[str | None]:
    return [f"src host {host(h)}" for h in range(hosts)]


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return per_host(tmp_path_factory.mktemp("per_host"), traffic(7), 3)


def test_per_host_captures_through_their_own_filters_scan_as_the_wire_does(
    captures: tuple[Path, list[Path]],
) -> None:
    wire, files = captures
    kw = {"windows": WINDOWS, "rates": RATES, "by": BY, "bins": ["1ms"]}
    want = burstcore.scan(wire, **kw)  # type: ignore[arg-type]
    doubled = burstcore.scan(files, **kw)  # type: ignore[arg-type]
    # Merged as they are, every packet counts twice (the problem this solves).
    assert doubled.summary["packets"][0] == 2 * want.summary["packets"][0]
    for threads in (1, 2):
        got = burstcore.scan(files, filter=own_filters(3), threads=threads, **kw)  # type: ignore[arg-type]
        same_scan(got, want)
        s = got.summary.row(0, named=True)
        assert s["packets"] == want.summary["packets"][0]
        assert s["skipped_filtered"] == s["packets_read"] - s["packets"] == s["packets"]
        assert got.config["filter"] == own_filters(3)


def test_every_analysis_reads_each_capture_through_its_own_filter(captures: tuple[Path, list[Path]]) -> None:
    wire, files = captures
    each = own_filters(3)

    def by_key(f: pl.DataFrame) -> pl.DataFrame:
        # Flows first seen at one instant come in file order, which the two readings do not share.
        return f.sort(f.columns[:6])

    frames_equal(by_key(burstcore.flows(files, filter=each)), by_key(burstcore.flows(wire)))
    analyses_equal(files, wire, filter=each)
    # superpose: each capture through its own filter, shifted by its own offset.
    sa = burstcore.superpose(files[:2], offsets=[0, "3ms"], windows=WINDOWS, rates=RATES, filter=each[:2])
    cut = [write(files[k].with_suffix(f".own{k}.pcapng"), _sent_by(files[k], k)) for k in range(2)]
    sb = burstcore.superpose(cut, offsets=[0, "3ms"], windows=WINDOWS, rates=RATES)
    frames_equal(sa.multiplexing_gain, sb.multiplexing_gain)
    same_scan(sa, sb)


def _sent_by(path: Path, h: int) -> list[tuple[int, int, int, int]]:
    """The packets of a capture that host h sent, read back as (stamp, src, dst, payload)."""
    p = burstcore.read_packets(path, ["timestamp", "src", "dst", "payload_len"])
    rows = p.filter(pl.col("src") == host(h)).with_columns(pl.col("timestamp").dt.epoch("ns"))
    return [(t, int(s.rsplit(".", 1)[1]) - 1, int(d.rsplit(".", 1)[1]) - 1, n) for t, s, d, n in rows.iter_rows()]


def test_none_reads_a_capture_whole_and_a_filter_for_all_still_applies(captures: tuple[Path, list[Path]]) -> None:
    wire, files = captures
    kw = {"windows": WINDOWS, "rates": RATES}
    got = burstcore.scan([wire, files[0]], filter=[None, "src host 10.0.0.1"], **kw)  # type: ignore[arg-type]
    sent = write(files[0].with_suffix(".sent.pcapng"), _sent_by(files[0], 0))
    same_scan(got, burstcore.scan([wire, sent], **kw))  # type: ignore[arg-type]
    # One string is every capture's filter, as before.
    one = burstcore.scan(files, filter="dst host 10.0.0.2", **kw)  # type: ignore[arg-type]
    listed = burstcore.scan(files, filter=["dst host 10.0.0.2"] * 3, **kw)  # type: ignore[arg-type]
    same_scan(one, listed)
    # A tuple is a list; one capture with a list of one is that capture's filter.
    same_scan(
        burstcore.scan(files, filter=tuple(own_filters(3)), **kw),  # type: ignore[arg-type]
        burstcore.scan(files, filter=own_filters(3), **kw),  # type: ignore[arg-type]
    )
    same_scan(
        burstcore.scan(files[0], filter=["tcp"], **kw),  # type: ignore[arg-type]
        burstcore.scan(files[0], filter="tcp", **kw),  # type: ignore[arg-type]
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), hosts=st.integers(2, 4), n=st.integers(1, 400))
def test_any_per_host_traffic_counts_each_packet_once(tmp_path: Path, seed: int, hosts: int, n: int) -> None:
    # A directory of its own for each run: hypothesis may run one example twice (6.100 replays it
    # to check it is not flaky), and tmp_path is the same for every example.
    tmp = Path(tempfile.mkdtemp(prefix=f"{seed}-{hosts}-{n}-", dir=tmp_path))
    wire, files = per_host(tmp, traffic(seed, hosts, n), hosts)
    kw = {"windows": ["1us", "50us", "2ms"], "rates": ["1Gbps", "25Gbps"], "by": ["all", "pair"]}
    same_scan(burstcore.scan(files, filter=own_filters(hosts), **kw), burstcore.scan(wire, **kw))  # type: ignore[arg-type]


def test_a_filter_list_that_does_not_fit_the_captures_is_refused_saying_what_to_give(
    captures: tuple[Path, list[Path]],
) -> None:
    wire, files = captures
    with pytest.raises(ValueError, match=r"^2 filters for 3 captures: give one filter for every capture"):
        burstcore.scan(files, filter=own_filters(2))
    with pytest.raises(ValueError, match=r"^1 filter for 3 captures"):
        burstcore.flows(files, filter=["tcp"])
    with pytest.raises(ValueError, match=r"^4 filters for 2 captures"):
        burstcore.superpose(files[:2], offsets=[0, "1ms"], filter=own_filters(4))
    with pytest.raises(ValueError, match=r"^2 filters for 1 capture:"):
        burstcore.bursts(wire, filter=["tcp", "udp"])
    # Each expression is checked, and a bad one names its capture.
    with pytest.raises(ValueError, match=r"capture 2 of 3 \(\S+host1.pcapng\): filter \"src hots 10.0.0.2\""):
        burstcore.scan(files, filter=["src host 10.0.0.1", "src hots 10.0.0.2", None])
    with pytest.raises(ValueError, match=r"capture 3 of 3 \(\S+host2.pcapng\): filter \"\" is empty"):
        burstcore.iterations(files, filter=["tcp", None, ""])
    # A capture without a path is told by its place alone.
    with pytest.raises(ValueError, match=r"capture 2 of 2: filter \"tcp port http\""):
        burstcore.flows([files[0], files[1].read_bytes()], filter=[None, "tcp port http"])
    with pytest.raises(TypeError, match=r"a list of one per capture"):
        burstcore.scan(files, filter=["tcp", 6, None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"a list of one per capture"):
        burstcore.flows(files, filter={"a": "tcp"})  # type: ignore[arg-type]
    # read_packets reads one capture: one filter, a string.
    with pytest.raises(TypeError, match=r"this reads one capture"):
        burstcore.read_packets(wire, filter=["tcp"])  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- the command line


def test_filter_once_per_file_on_the_command_line_gives_the_apis_numbers(captures: tuple[Path, list[Path]]) -> None:
    wire, files = captures
    flags = [a for f in own_filters(3) for a in ("--filter", f)]
    out = run_cli("scan", *files, *flags, "--windows", "100us,1ms", "--rates", "1Gbps", "-o", "-", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    api = burstcore.scan(wire, windows=["100us", "1ms"], rates=["1Gbps"])
    assert doc["config"]["filter"] == own_filters(3)
    assert [r["bytes"] for r in doc["envelope"]] == api.envelope["bytes"].to_list()
    assert doc["summary"][0]["packets"] == api.summary["packets"][0]
    # The terminal says which filter each file was read through.
    out = run_cli("scan", *files, *flags, "--windows", "1ms", "--rates", "1Gbps")
    assert out.returncode == 0, out.stderr
    for k in (1, 2, 3):
        assert re.search(rf"filter {k}\s+src host 10.0.0.{k}\n", out.stdout), out.stdout
    # An analysis the same way.
    out = run_cli("matrix", *files, *flags, "-o", "-", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    want = burstcore.traffic_matrix(wire)
    assert [r["bytes"] for r in doc["matrix"]] == want["bytes"].to_list()


def test_scan_each_reads_every_file_through_its_own_filter(captures: tuple[Path, list[Path]]) -> None:
    _, files = captures
    out = run_cli(
        "scan", *files[:2], "--each", "--filter", "tcp", "--filter", "src host 10.0.0.2", "-o", "-", "--format", "json"
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    counted = {row["file"]: row["packets"] for row in doc["summary"]}
    assert counted == {
        str(files[0]): burstcore.scan(files[0], filter="tcp").summary["packets"][0],
        str(files[1]): burstcore.scan(files[1], filter="src host 10.0.0.2").summary["packets"][0],
    }
    assert counted[str(files[1])] < burstcore.info(files[1]).packets


def test_a_filter_count_that_fits_neither_way_is_a_usage_error(captures: tuple[Path, list[Path]]) -> None:
    _, files = captures
    out = run_cli("flows", *files, "--filter", "tcp", "--filter", "udp")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "2 --filter options for 3 files: give --filter once for every file, or once per file" in lines[0]
    # A bad expression of one file names the file.
    out = run_cli("scan", *files[:2], "--filter", "tcp", "--filter", "src hots 10.0.0.2")
    assert out.returncode == 2, out.stderr
    assert f"capture 2 of 2 ({files[1]}): filter" in out.stderr
    # A command of one file takes one.
    out = run_cli("report", files[0], "--filter", "tcp", "--filter", "udp", "-o", files[0].with_suffix(".html"))
    assert out.returncode == 2, out.stderr
    assert "2 --filter options for 1 file: give --filter once" in out.stderr


def test_plot_draws_each_file_through_its_own_filter(
    captures: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from burstcore import cli

    _, files = captures
    seen: list[object] = []
    real_scan, real_iterations = burstcore.scan, burstcore.iterations

    def scan(src: object, **kw: object) -> burstcore.ScanResult:
        seen.append(("scan", kw.get("filter")))
        return real_scan(src, **kw)  # type: ignore[arg-type]

    def iterations(src: object, **kw: object) -> object:
        seen.append(("iterations", kw.get("filter")))
        return real_iterations(src, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(burstcore, "scan", scan)
    monkeypatch.setattr(burstcore, "iterations", iterations)
    a, b = own_filters(2)
    out = tmp_path / "each.png"
    argv = ["plot", *map(str, files[:2]), "--filter", a, "--filter", b, "-o", str(out), "-q", "--windows", "1ms"]
    assert cli.main(argv) == 0
    assert out.stat().st_size > 0
    assert seen == [("scan", a), ("iterations", a), ("scan", b), ("iterations", b)]
