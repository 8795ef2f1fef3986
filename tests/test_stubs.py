"""The type stubs describe the compiled extension exactly (mypy.stubtest), and the package type-checks."""

import subprocess
import sys


def test_stubs_match_the_extension():
    # Without --ignore-missing-stub: every name the runtime exports (pyo3 puts each function it
    # adds in __all__) is in the stub's __all__. The extension only: stubtest over the .py modules
    # reports false positives on mypy 1.10 (the test extra's floor) for their imported names.
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "burstcore._burstcore"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_importing_main_runs_no_command_line():
    # Tools that import every module of a package (stubtest, pydoc, pkgutil.walk_packages) must
    # not have the CLI run and the process exit; `python -m burstcore` still runs it.
    r = subprocess.run(
        [sys.executable, "-c", "import burstcore.__main__; print('imported')"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout == "imported\n", r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "burstcore", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage:" in r.stdout, r.stdout + r.stderr


GOOD = """\
import datetime
import gzip
import io
import pathlib
import sys

import numpy as np
import polars as pl

import burstcore


def bar(done: int, total: int | None) -> bool | None:
    return None


r = burstcore.scan("t.pcapng", windows=["5ms"], by=["src", "pair"], progress=bar, start=0)
s = burstcore.sizes("t.pcapng", by="pair")
m = burstcore.traffic_matrix("t.pcapng", max_pairs=10)
# Every form of a source: paths (str, pathlib, lists of either), bytes, buffers, file objects.
paths: list[str] = ["a.pcap", "b.pcap"]
burstcore.scan(paths, windows=np.array([1e-3, 5e-3]), rates=["1Gbps", 10e9], bins="1ms")
burstcore.scan(pathlib.Path("t.pcapng"), windows=np.logspace(-6, 0, 7), rates=np.array([1e9, 1e10]))
burstcore.scan([pathlib.Path("a.pcap"), pathlib.Path("b.pcap")], windows=(0.001, 5))
burstcore.scan(("a.pcap", pathlib.Path("b.pcap")), rates=10_000_000_000)
burstcore.scan(b"...", windows=5e-3, reorder_horizon=np.timedelta64(1, "ms"))
burstcore.scan(bytearray(b"..."), bins=[datetime.timedelta(milliseconds=1)])
burstcore.scan(memoryview(b"..."), windows=pl.Series([1_000_000], dtype=pl.Duration("ns")))
burstcore.scan(sys.stdin.buffer, rates=[np.int64(10**9), np.float64(1e10)])
burstcore.scan(io.BytesIO(b"..."), windows=[np.timedelta64(5, "ms"), "1ms", 1, np.float32(0.5)])
burstcore.scan(gzip.open("t.pcap.gz"), windows=(w for w in ["1ms", "2ms"]))
with open("t.pcapng", "rb") as f:
    burstcore.scan(f)
    burstcore.read_packets(f, columns=["timestamp"])
burstcore.info(pathlib.Path("t.pcapng"))
burstcore.info(b"...")
# In-memory columns, for scan.
burstcore.scan(pl.DataFrame({"timestamp": [0], "size": [60]}))
burstcore.scan({"timestamp": np.array([0]), "size": np.array([60])})
burstcore.scan((np.array([0]), np.array([60])))
# Instants: datetime (a pandas.Timestamp is one), numpy.datetime64, ISO 8601, int ns.
t0 = datetime.datetime(2026, 11, 30, 2, 48, tzinfo=datetime.UTC)
burstcore.scan("t.pcapng", start=t0, end=np.datetime64("2026-11-30T03:00:00"))
burstcore.flows("t.pcapng", idle_timeout="1s", windows=("10us", "1ms"), start="2026-11-30T02:48:30Z")
burstcore.traffic_matrix("t.pcapng", start=np.int64(0), end=2**62)
burstcore.bursts(memoryview(b"..."), gap=np.timedelta64(100, "us"))
burstcore.gaps(bytearray(b"..."), by="src", reorder_horizon=0.01, quantiles=[0.5, 0.99])
burstcore.iterations("t.pcapng", bin="500us", min_period=datetime.timedelta(milliseconds=4), max_period=1)
burstcore.superpose(["a.pcap", "a.pcap"], offsets=["0s", "-3ms"], windows=["1ms"], by="pair")
burstcore.superpose(("a.pcap", "b.pcap"), offsets="random", seed=1, max_offset=np.timedelta64(1, "s"))
burstcore.superpose([pathlib.Path("a.pcap"), b"..."], offsets=[0, -0.003], rates="10Gbps")
r.ptm("1ms")
r.ptm(datetime.timedelta(milliseconds=5), by="src")
# Counts and quantiles as numpy gives them; a filter.
burstcore.scan("t.pcapng", threads=np.int64(2), max_groups=np.int64(10), filter="tcp port 29500")
burstcore.sizes("t.pcapng", quantiles=[0.5, np.float32(0.9)], max_groups=np.int32(100))
burstcore.superpose(["a.pcap", "a.pcap"], offsets="random", seed=np.int64(3))
burstcore.read_packets("t.pcapng", threads=np.int64(1), filter="not arp")
# A filter per capture.
burstcore.scan(["a.pcap", "b.pcap"], filter=["src host 10.0.0.1", None])
burstcore.flows(("a.pcap", "b.pcap"), filter=("src host 10.0.0.1", "src host 10.0.0.2"))
each: burstcore.Filters = ["tcp", None]
burstcore.superpose(["a.pcap", "b.pcap"], offsets=[0, "1ms"], filter=each)
burstcore.read_packets("t.pcapng", ["timestamp"], start="2026-11-30T02:48:30Z", end=np.datetime64(0, "ns"))
burstcore.bursts("t.pcapng", quantiles=(0.5, np.float64(0.99)))
# What one call gives, fed to the next as documented: shared_packets' filters (a list[str]) as
# filter=, a list of groupings built in code as by=.
found = burstcore.shared_packets(["a.pcap", "b.pcap"])
burstcore.scan(["a.pcap", "b.pcap"], filter=found.filters)
burstcore.flows(["a.pcap", "b.pcap"], filter=found.filters or "tcp")
groupings: list[burstcore.Grouping] = ["src"]
groupings.append("pair")
burstcore.scan("t.pcapng", by=groupings)
burstcore.gaps("t.pcapng", by=groupings[0])


def typed(src: burstcore.Source, w: burstcore.Durations, r: burstcore.Rates, t: burstcore.Instant) -> float:
    result: burstcore.ScanResult = burstcore.scan(src, windows=w, rates=r, start=t)
    return float(result.envelope["bytes"].sum())


one: burstcore.Duration = "5ms"
rate: burstcore.Rate = "10Gbps"
typed(["a.pcap"], [one, 0.001], [rate], t0)
"""

# Each line a call the runtime refuses, which mypy --strict must flag.
BAD = [
    "burstcore.scan('t.pcapng', by='pairs')",
    "burstcore.scan('t.pcapng', windows=object())",
    "burstcore.scan('t.pcapng', rates=datetime.timedelta(seconds=1))",
    "burstcore.scan(object())",
    "burstcore.scan(open('t.txt'))",
    "burstcore.flows('t.pcapng', start=1.5)",
    "burstcore.bursts('t.pcapng', gap=None)",
    "burstcore.read_packets(['a.pcap', 'b.pcap'])",
    "burstcore.superpose(['a.pcap', 'b.pcap'], offsets='random', max_offset=[1])",
    "burstcore.sizes('t.pcapng', quantiles='0.5')",
    "burstcore.read_packets('t.pcapng', filter=['tcp'])",
    "burstcore.scan('t.pcapng', filter=[6])",
    "burstcore.read_packets('t.pcapng', start=1.5)",
]


def test_a_users_typed_script_is_checked(tmp_path):
    # What a typed caller gets from the annotations: the documented calls pass mypy --strict
    # (a tqdm-like callback returning a value among them, and every form of a source, a
    # duration, a rate and an instant that the runtime accepts), and calls it refuses do not.
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    bad = tmp_path / "bad.py"
    bad.write_text("import datetime\n\nimport burstcore\n\n" + "\n".join(BAD) + "\n")
    run = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
    ok = subprocess.run([*run, str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    no = subprocess.run([*run, str(bad)], capture_output=True, text=True)
    assert no.returncode == 1 and 'Argument "by" to "scan" has incompatible type' in no.stdout, no.stdout
    flagged = {int(line.split(":")[1]) for line in no.stdout.splitlines() if ": error:" in line}
    for k, call in enumerate(BAD):
        assert k + 5 in flagged, f"not flagged: {call}\n{no.stdout}"


def test_read_tables_accounting_is_in_its_stub(tmp_path):
    # read_table gives its accounting (the packets a time range left out) third: read_packets
    # tells a range that holds none of the packets from it, as scan does.
    from burstcore import _burstcore
    from tests import oracles

    got = _burstcore.read_table(oracles.capture([5, 9], [100, 100]), None, time_range=(6, None))
    assert len(got) == 3 and got[2]["skipped_outside_range"] == 1 and got[2]["ts_span"] == (5, 9)
    script = tmp_path / "table.py"
    script.write_text(
        "from burstcore import _burstcore\n\n"
        "chunks, warns, read = _burstcore.read_table(b'', None, time_range=(0, None))\n"
        "left_out: int = read['skipped_outside_range']\n"
    )
    run = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
    r = subprocess.run([*run, str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
