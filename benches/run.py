#!/usr/bin/env python3
"""burstcore against its peers, on training-like captures written by burstcore's own writer.

    .venv/bin/python benches/run.py            # ~2 GB captures, writes benches/RESULTS.md
    .venv/bin/python benches/run.py --smoke    # seconds: tiny captures, for CI (no timings asserted)

One run generates the captures (pcap and pcapng; full frames and snaplen 128; plus a ~1 GB and a
~4 GB snaplen-128 pcap of the same traffic for the memory check), then measures, on page-cached
files (each file's cached pages are dropped and read back once before it is measured, see
``warm``):

- ``cat``: the machine's read limit;
- ``burstcore.scan`` with 20 windows and 8 rates on the aggregate, and the Rust framing alone;
- the issue's yardstick, a plain C loop doing the same job (``reference_loop.c``; pcap only);
- the floor under burstcore's mapped reader (``map_touch.c``): every cache line of the mapped
  file loaded (what the reader's prefetch pulls where records are small), with its 8 MiB hand-backs, on one thread and
  on two; and one load per page, the kernel's part alone;
- ``burstcore.read_packets`` (all columns, and timestamp + wire_len only);
- polars ``rolling_sum_by`` (E(τ)) and cumulative sums (B_max) on ``read_packets`` output;
- ``tshark -T fields`` + numpy, dpkt + numpy, scapy + numpy: the same 20 E(τ) and 8 B_max(r),
  on the first packets of the file when the whole file would take too long (then extrapolated
  from their packet rate, and marked so).

Each measurement runs in its own process: its time is taken inside that process around the work
(interpreter start and imports excluded), its peak memory is the process's max RSS from wait4
(which covers the processes it waited for, e.g. tshark). Every tool's E(τ) is kept, so the
report says whether each peer agrees with burstcore on the packets it read.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NS = 1_000_000_000
# The 19 default windows (1 µs … 1 s, 1-2-5 per decade) plus 250 µs: 20 windows.
WINDOWS_NS = sorted(
    {m * 10**e for e in range(3, 9) for m in (1, 2, 5)} | {NS, 250_000},
)
# The default rate grid: multiples of the trace's mean rate (found once, before timing).
RATE_MULTIPLES = (1.1, 1.25, 1.5, 2, 3, 5, 10, 20)
# The smoke run's scapy slice (packets), smaller than any of its captures.
SMOKE_SLICE = 1000
TARGETS = {"full_gbps": 8.0, "snap_mpps": 25.0, "read_mpps": 10.0, "peak_mb": 256.0, "speedup": 1.8}


# ---------------------------------------------------------------------------------------------
# Metrics as peers compute them: numpy on (timestamps, sizes) arrays.


def numpy_metrics(ts: Any, size: Any, windows_ns: list[int], rates_bps: list[int]) -> dict[str, Any]:
    """E(τ) (exact, int64) and B_max(r) (float64, the usual way) of sorted int ns timestamps."""
    import numpy as np

    ts = np.asarray(ts, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    if len(ts) == 0:
        return {"envelope": [0] * len(windows_ns), "bmax": [0.0] * len(rates_bps), "last_ns": 0}
    order = np.argsort(ts, kind="stable")
    ts, size = ts[order], size[order]
    cum = np.concatenate(([0], np.cumsum(size)))
    env = []
    for w in windows_ns:
        # The window (t − τ, t] ending at each packet = the half-open window [t − τ + 1, t + 1).
        lo = np.searchsorted(ts, ts - w, side="right")
        env.append(int((cum[1:] - cum[lo]).max()))
    t = (ts - ts[0]).astype(np.float64)
    bmax = []
    for r in rates_bps:
        rb = r / 8e9  # bytes per ns
        # Q_j = max over i ≤ j of (A_j − A_{i−1}) − r·(t_j − t_i): a running minimum, no loop.
        x = cum[1:] - rb * t
        y = cum[:-1] - rb * t
        bmax.append(float((x - np.minimum.accumulate(y)).max()))
    # The last instant read: where burstcore's reference for a slice stops (see `check`).
    return {"envelope": env, "bmax": bmax, "last_ns": int(ts[-1])}


# ---------------------------------------------------------------------------------------------
# Child side: one tool, one file; prints one JSON line.


class Clock:
    """Wall time and CPU time (user + system, this process and the children it waited for)."""

    @staticmethod
    def _cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), self._cpu()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, self._cpu() - self.cpu


def _child(tool: str, path: str, limit: int, windows: list[int], rates: list[int]) -> dict[str, Any]:
    if tool == "import":
        import polars as pl

        import burstcore

        return {"seconds": 0.0, "cpu": 0.0, "packets": 0, "versions": [burstcore.__version__, pl.__version__]}
    if tool == "scan_pair":
        import burstcore

        # The memory check's decoding scan: grouping by pair reads every packet's headers.
        clock = Clock()
        r = burstcore.scan(path, windows=[f"{w}ns" for w in windows], rates=rates, by=["all", "pair"])
        dt, cpu = clock.stop()
        s = r.summary.row(0, named=True)
        return {"seconds": dt, "cpu": cpu, "packets": s["packets_read"], "wire_bytes": s["bytes"]}
    if tool in ("scan", "scan2", "scan_buffered"):
        import burstcore

        clock = Clock()
        # "scan" is the one-core figure of issue 7 (on Linux it reads through the default memory
        # mapping); "scan2" uses both cores (identical results); "scan_buffered" is "scan" with
        # read() into a buffer instead (mmap=False).
        threads = 2 if tool == "scan2" else 1
        mmap = False if tool == "scan_buffered" else None
        # Several files (one per host) come joined by os.pathsep, and are scanned together.
        src: str | list[str] = path.split(os.pathsep) if os.pathsep in path else path
        r = burstcore.scan(src, windows=[f"{w}ns" for w in windows], rates=rates, threads=threads, mmap=mmap)
        dt, cpu = clock.stop()
        s = r.summary.row(0, named=True)
        env = r.envelope.sort("window_ns")["bytes"].to_list()
        bmax = r.backlog.sort("rate_bps")["bmax_bytes"].to_list()
        return {
            "seconds": dt,
            "cpu": cpu,
            "packets": s["packets_read"],
            "wire_bytes": s["bytes"],
            "envelope": env,
            "bmax": bmax,
        }
    if tool in ("read_packets", "read_packets2", "read_packets_ts"):
        import polars as pl

        import burstcore

        # "read_packets" is the one-core figure; "read_packets2" the default, which reads a plain
        # file in byte ranges on all the cores (both here), judged by wall time.
        cols = ["timestamp", "wire_len"] if tool == "read_packets_ts" else None
        clock = Clock()
        df = burstcore.read_packets(path, columns=cols, threads=None if tool == "read_packets2" else 1)
        dt, cpu = clock.stop()
        # UInt32 sums in 32 bits in polars: the 2 GB snaplen-128 captures carry 16.7 GB of frames.
        wire = int(df["wire_len"].cast(pl.UInt64).sum())
        return {"seconds": dt, "cpu": cpu, "packets": df.height, "wire_bytes": wire}
    if tool == "polars":
        import polars as pl

        import burstcore

        clock = Clock()
        df = burstcore.read_packets(path, columns=["timestamp", "wire_len"])
        df = df.with_columns(pl.col("wire_len").cast(pl.Int64)).sort("timestamp")
        exprs = [
            pl.col("wire_len").rolling_sum_by("timestamp", window_size=f"{w}ns", closed="right").max().alias(f"w{i}")
            for i, w in enumerate(windows)
        ]
        t_rel = (pl.col("timestamp") - pl.col("timestamp").first()).dt.total_nanoseconds().cast(pl.Float64)
        cum = pl.col("wire_len").cum_sum()
        for i, rate in enumerate(rates):
            rb = rate / 8e9
            x = cum - rb * t_rel
            y = cum - pl.col("wire_len") - rb * t_rel
            exprs.append((x - y.cum_min()).max().alias(f"r{i}"))
        row = df.select(exprs).row(0)
        dt, cpu = clock.stop()
        return {
            "seconds": dt,
            "cpu": cpu,
            "packets": df.height,
            "wire_bytes": int(df["wire_len"].sum()),
            "envelope": [int(v) for v in row[: len(windows)]],
            "bmax": [float(v) for v in row[len(windows) :]],
        }
    if tool == "tshark":
        import numpy as np

        # tshark's own start (registering its dissectors) is inside its time, unlike Python's
        # start and imports: measured apart, on one packet, so the report can say its share.
        clock = Clock()
        one = ["tshark", "-n", "-r", path, "-c", "1", "-T", "fields", "-e", "frame.len"]
        subprocess.run(one, check=True, capture_output=True)
        _, startup_cpu = clock.stop()
        clock = Clock()
        cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len"]
        if limit:
            cmd[1:1] = ["-c", str(limit)]
        out = subprocess.run(cmd, check=True, capture_output=True).stdout.split()
        # Exact ns from the decimal text (tshark prints 9 digits for a nanosecond capture).
        secs, _, frac = np.char.partition(np.array(out[0::2]), b".").T
        ts = secs.astype(np.int64) * NS + np.char.ljust(frac, 9, b"0").astype(np.int64)
        size = np.array(out[1::2]).astype(np.int64)
        m = numpy_metrics(ts, size, windows, rates)
        dt, cpu = clock.stop()
        return {
            "seconds": dt,
            "cpu": cpu,
            "packets": len(ts),
            "wire_bytes": int(size.sum()),
            "startup_cpu": startup_cpu,
            **m,
        }
    if tool == "dpkt":
        from decimal import Decimal

        import dpkt
        import numpy as np

        clock = Clock()
        ts_l: list[Any] = []
        size_l: list[int] = []
        with open(path, "rb") as f:
            reader = dpkt.pcap.UniversalReader(f)
            # dpkt's pcapng (and microsecond pcap) reader divides the integer timestamp by a float
            # divisor: at today's epoch a double holds ~240 ns steps, which on the smoke captures
            # changed 5-10 of the 20 E(τ) and B_max by up to 3×. A Decimal divisor (as dpkt's own
            # nanosecond pcap reader has) keeps every ns: the peer done right, at its own cost.
            reader._divisor = Decimal(int(reader._divisor))
            for i, (t, buf) in enumerate(reader):
                if limit and i >= limit:
                    break
                eth = dpkt.ethernet.Ethernet(buf)
                ip = eth.data
                # dpkt gives the captured bytes only: the wire size comes from the IP header.
                size_l.append(ip.len + 14 if isinstance(ip, dpkt.ip.IP) else len(buf))
                ts_l.append(t)
        # Decimal seconds (the divisor above): exact ns.
        ts = np.array([round(t * NS) for t in ts_l], dtype=np.int64)
        size = np.array(size_l, dtype=np.int64)
        m = numpy_metrics(ts, size, windows, rates)
        dt, cpu = clock.stop()
        return {"seconds": dt, "cpu": cpu, "packets": len(ts), "wire_bytes": int(size.sum()), **m}
    if tool == "scapy":
        import numpy as np
        from scapy.all import rdpcap

        clock = Clock()
        pkts = rdpcap(path, count=limit or -1)
        ts = np.array([int(p.time * NS) for p in pkts], dtype=np.int64)  # EDecimal: exact ns
        size = np.array([p.wirelen or len(p) for p in pkts], dtype=np.int64)
        m = numpy_metrics(ts, size, windows, rates)
        dt, cpu = clock.stop()
        return {"seconds": dt, "cpu": cpu, "packets": len(ts), "wire_bytes": int(size.sum()), **m}
    raise SystemExit(f"unknown tool {tool!r}")


# ---------------------------------------------------------------------------------------------
# Parent side.


@dataclass
class Capture:
    name: str
    path: Path
    format: str
    snaplen: int
    file_bytes: int = 0
    packets: int = 0
    role: str = "main"  # or "memory", or "hosts": one file per host of the same traffic
    hosts: int = 0

    @property
    def files(self) -> list[Path]:
        """The files measured: one, or per host `NAME.hostK.EXT` (gen_training --per-host)."""
        if self.role != "hosts":
            return [self.path]
        return [self.path.with_name(f"{self.path.stem}.host{h}{self.path.suffix}") for h in range(self.hosts)]

    @property
    def source(self) -> str:
        """What a child process is given: the path, or the hosts' paths joined by os.pathsep."""
        return os.pathsep.join(str(f) for f in self.files)


@dataclass
class Result:
    capture: str
    tool: str
    seconds: float  # wall
    cpu: float  # user + system
    packets: int
    file_bytes: float  # bytes of the file the tool went through (estimated for a slice)
    peak_rss: int  # bytes
    sliced: bool = False
    runs: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    # Rates per CPU-second: on a shared machine, what one dedicated core would do.
    @property
    def gbps(self) -> float:
        return self.file_bytes / self.cpu / 1e9 if self.cpu > 0 else float("inf")

    @property
    def mpps(self) -> float:
        return self.packets / self.cpu / 1e6 if self.cpu > 0 else float("inf")

    @property
    def mpps_wall(self) -> float:
        return self.packets / self.seconds / 1e6 if self.seconds > 0 else float("inf")


TIME = Path("/usr/bin/time")


def run_measured(argv: list[str]) -> tuple[bytes, float, float, int]:
    """Run a process under GNU time; return its stdout, wall seconds, CPU seconds and peak RSS in
    bytes.

    Linux carries a process's peak RSS at fork (and exec) into the max RSS of the forked child,
    so wait4 on a child of this (large) Python process reports at least this process's size:
    `cat` of a 2 MB file, run from a parent holding 600 MB, "peaked" at 697 MB. GNU time is
    small: a child forked from it reports its own peak.
    """
    t0 = time.perf_counter()
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        cmd = [str(TIME), "-f", "%U %S %M", "-o", rss_file.name, *argv]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        assert p.stdout is not None
        out = p.stdout.read()
        _, status, _ = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed with exit code {p.returncode}")
        user, system, rss_kb = rss_file.read().split()[-3:]
    return out, wall, float(user) + float(system), int(rss_kb) * 1024


def c_binary(data: Path, name: str, log: list[str], *flags: str) -> Path | None:
    """Compile benches/NAME.c for this machine, or None (and a line in the log) without a C
    compiler."""
    out = data / name
    cmd = ["cc", "-O2", "-march=native", *flags, "-o", str(out), str(ROOT / "benches" / f"{name}.c")]
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        log.append(f"{name} not built ({' '.join(cmd)}): {getattr(e, 'stderr', e)}")
        return None
    return out


def cargo_example(name: str) -> Path:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "burstcore", "--example", name], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples" / name


def parse_size(s: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    s = s.strip().upper().rstrip("B")
    return int(float(s[:-1]) * units[s[-1]]) if s and s[-1] in units else int(s)


def generate(gen: Path, cap: Capture, size: int, hosts: int, log: list[str], packets: int = 0) -> None:
    """Write a capture unless one with the same parameters is already there: `size` bytes of
    file, or exactly `packets` packets if given (the per-host files: the traffic of one capture,
    whose file headers would otherwise make the bytes cut it a packet short)."""
    stamp = cap.path.with_suffix(cap.path.suffix + ".json")
    params: dict[str, Any] = {"size": size, "format": cap.format, "snaplen": cap.snaplen, "hosts": hosts, "gen": 1}
    if cap.role == "hosts":
        params |= {"per_host": True, "packets": packets}
        cap.hosts = hosts
    done = all(f.exists() for f in cap.files)
    if done and stamp.exists() and json.loads(stamp.read_text()).get("params") == params:
        meta = json.loads(stamp.read_text())
    else:
        argv = [str(gen), "--out", str(cap.path), "--format", cap.format, "--snaplen", str(cap.snaplen)]
        argv += ["--packets", str(packets)] if packets else ["--bytes", str(size)]
        argv += ["--hosts", str(hosts), "--mode", "ring", "--seed", "1"]
        if cap.role == "hosts":
            argv.append("--per-host")
        t0 = time.perf_counter()
        err = subprocess.run(argv, check=True, capture_output=True, text=True).stderr
        log.append(f"generated {cap.path.name} in {time.perf_counter() - t0:.1f} s: {err.strip()}")
        packets = int(err.split("gen_training: ")[1].split(" packets")[0])
        meta = {"params": params, "packets": packets}
        stamp.write_text(json.dumps(meta))
    cap.file_bytes = sum(f.stat().st_size for f in cap.files)
    cap.packets = meta["packets"]


def warm(path: Path) -> None:
    """Put the file in the page cache afresh, so that every tool finds it there alike.

    Its cached pages are dropped (`POSIX_FADV_DONTNEED`), then read back. On the benchmark VM,
    pages a file had kept cached for hours read slower, and unevenly: `dd` over the 2 GB
    snaplen-128 capture, generated 19 hours before, read 1.2–3.6 GB/s over its first 250 MB and
    6.0–6.6 over its last; dropped and read back, 7.3–8.4 GB/s everywhere. Every tool then read
    some slow pages, and the two-thread scan's first chunk took 2–14 % longer than its second (it
    was 3 % faster on a fresh copy): the host's memory behind those pages, not the readers.
    Dirty pages of a file just generated are not dropped; they are fresh anyway.
    """
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        buf = bytearray(8 << 20)
        while f.readinto(buf):
            pass


def measure(
    cap: Capture,
    tool: str,
    limit: int,
    windows: list[int],
    rates: list[int],
    repeat: int,
    count_bin: Path | None = None,
    yardstick_bin: Path | None = None,
    mapping_bin: Path | None = None,
) -> Result:
    """Best of `repeat` runs (least CPU time; the largest peak memory of all runs). For the
    two-thread scan, the two-thread floor (`lines2`) and the default (all-core) `read_packets`,
    whose figures are their wall times, the least wall time. Each run of a two-thread tool also
    follows a run of its one-thread form, and the ratios of those pairs are kept in
    `extra["pairs"]`: on a machine whose speed drifts from minute to minute, a pair run seconds
    apart tells the speed-up better than two best runs taken minutes apart."""
    best: Result | None = None
    peak = 0
    pairs: list[float] = []
    walls: list[float] = []

    def once(tool: str) -> Result:
        if tool == "cat":
            _, wall, cpu, rss = run_measured(["sh", "-c", f"cat {shlex.quote(str(cap.path))} >/dev/null"])
            return Result(cap.name, tool, wall, cpu, cap.packets, cap.file_bytes, rss)
        if tool in ("framing", "framing_mapped"):
            assert count_bin is not None
            # `scan` reads through the mapping by default; `count` reads with read() unless told.
            env = ["env", "MMAP=1"] if tool == "framing_mapped" else []
            out, wall, cpu, rss = run_measured([*env, str(count_bin), str(cap.path)])
            # "PATH: N packets, ...": the packets it framed, which must be the file's.
            framed = int(re.findall(r": (\d+) packets, ", out.decode())[-1])
            return Result(cap.name, tool, wall, cpu, framed, cap.file_bytes, rss)
        if tool == "yardstick":
            assert yardstick_bin is not None
            argv = [str(yardstick_bin), str(cap.path), ",".join(map(str, windows)), ",".join(map(str, rates))]
            out, wall, cpu, rss = run_measured(argv)
            d = json.loads(out)
            return Result(cap.name, tool, wall, cpu, d["packets"], cap.file_bytes, rss, extra=d)
        if tool in MAP_TOUCH:
            assert mapping_bin is not None
            threads, stride = MAP_TOUCH[tool]
            out, _, _, rss = run_measured([str(mapping_bin), str(cap.path), str(threads), str(stride)])
            d = json.loads(out)
            if d["bytes"] != cap.file_bytes:
                raise RuntimeError(f"map_touch went through {d['bytes']} bytes of {cap.path}, not {cap.file_bytes}")
            # Its own clocks: it takes a few hundredths of a second, finer than GNU time's 10 ms.
            # Its packets are the file's: the rate a mapped reader could at best feed them at.
            extra = {**d, "path": str(cap.path)}
            return Result(cap.name, tool, d["seconds"], d["cpu"], cap.packets, cap.file_bytes, rss, extra=extra)
        return child(cap, tool, limit, windows, rates)

    for _ in range(repeat):
        one = once(PAIRED[tool]) if tool in PAIRED else None
        res = once(tool)
        if one is not None:
            pairs.append(one.seconds / res.seconds)
        peak = max(peak, res.peak_rss)
        walls.append(res.seconds)
        if best is None or (res.seconds < best.seconds if tool in BY_WALL else res.cpu < best.cpu):
            best = res
    assert best is not None
    best.peak_rss, best.runs = peak, repeat
    # The least wall time of all runs (the kept run is the least CPU time's, for one-thread tools).
    best.extra["best_wall"] = min(walls)
    if pairs:
        best.extra["pairs"] = pairs
    return best


# Two-thread tools, each run right after its one-thread form.
PAIRED = {"scan2": "scan", "lines2": "lines"}
# Tools whose figure is their wall time: the two-thread ones and the all-core read.
BY_WALL = {*PAIRED, "read_packets2"}
# map_touch.c's runs: (threads, stride): every cache line, or one load per page.
MAP_TOUCH = {"lines": (1, 64), "lines2": (2, 64), "pages": (1, 4096)}


def child(cap: Capture, tool: str, limit: int, windows: list[int], rates: list[int]) -> Result:
    """One run of `tool` in a fresh Python process (see `_child`)."""
    argv = [sys.executable, __file__, "child", tool, cap.source, "--limit", str(limit)]
    argv += ["--windows", ",".join(map(str, windows)), "--rates", ",".join(map(str, rates))]
    out, _, _, rss = run_measured(argv)
    d = json.loads(out.decode().strip().splitlines()[-1])
    sliced = d["packets"] < cap.packets
    fbytes = cap.file_bytes * d["packets"] / cap.packets if cap.packets else 0
    return Result(cap.name, tool, d["seconds"], d["cpu"], d["packets"], fbytes, rss, sliced, extra=d)


# B_max from float64 cumulative sums (the peers' way) against burstcore's: float rounding stays
# far below this (≤ 3e-12 relative on the 2 GB captures); a wrong timestamp or size does not.
BMAX_REL, BMAX_ABS = 1e-6, 1.0


def slice_reference(
    path: str, packets: int, last_ns: int | None, windows: list[int], rates: list[int]
) -> dict[str, Any]:
    """burstcore's E(τ) and B_max on the first `packets` packets of a file: what a peer that read
    only those (a slice) must have found. burstcore's reader reads up to the slice's last instant
    (a later packet with the same timestamp is cut off by taking the first `packets` in file
    order, as the peer read them), and `scan` measures those columns. A peer that does not say
    where it stopped (`last_ns` None: the C yardstick, polars) read the whole file."""
    import burstcore

    end = None if last_ns is None else last_ns + 1
    df = burstcore.read_packets(path, columns=["timestamp", "wire_len"], end=end).head(packets)
    ts = df["timestamp"].dt.epoch("ns").to_numpy()
    r = burstcore.scan((ts, df["wire_len"].to_numpy()), windows=[f"{w}ns" for w in windows], rates=rates, threads=1)
    return {
        "packets": df.height,
        "envelope": r.envelope.sort("window_ns")["bytes"].to_list(),
        "bmax": r.backlog.sort("rate_bps")["bmax_bytes"].to_list(),
    }


def check(r: Result, ref: dict[str, Any], against: str) -> dict[str, Any]:
    """Compare a tool's E(τ) (exactly) and B_max (to float precision) with burstcore's on the same
    packets; kept in `extra["check"]`, shown in the report, and a failed run's exit status."""
    env_bad = sum(a != b for a, b in zip(r.extra["envelope"], ref["envelope"], strict=True))
    bmax_bad = sum(
        abs(a - b) > max(BMAX_ABS, BMAX_REL * abs(b)) for a, b in zip(r.extra["bmax"], ref["bmax"], strict=True)
    )
    ok = ref["packets"] == r.packets and env_bad == 0 and bmax_bad == 0
    return {
        "against": against,
        "packets": ref["packets"],
        "envelope_differ": env_bad,
        "bmax_differ": bmax_bad,
        "ok": ok,
    }


def check_text(r: Result) -> str:
    """The report's cell for a tool's agreement with burstcore."""
    c = r.extra.get("check")
    if c is None:
        return "—"
    n_env, n_bmax = len(r.extra["envelope"]), len(r.extra["bmax"])
    if not c["ok"]:
        what = []
        if c["packets"] != r.packets:
            what.append(f"burstcore read {c['packets']:,} packets")
        if c["envelope_differ"]:
            what.append(f"E(τ) {c['envelope_differ']} of {n_env}")
        if c["bmax_differ"]:
            what.append(f"B_max {c['bmax_differ']} of {n_bmax}")
        return f"**NO**: {', '.join(what)} differ"
    on = f" (burstcore on the same first {r.packets:,} packets)" if c["against"] == "slice" else ""
    return f"yes, {n_env} E(τ) and {n_bmax} B_max{on}"


def machine() -> dict[str, str]:
    def first(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "n/a"

    # A VM may name its CPU only "AMD EPYC": family and model tell the generation, and the vector
    # extensions which of burstcore's vector lanes run (AVX-512 or AVX2, see backlog/simd.rs).
    info: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
        if not line.strip():
            break
    flags = set(info.get("flags", "").split())
    vectors = [f for f in ("avx2", "avx512f", "avx512dq") if f in flags]
    cpu = (
        f"{info.get('model name', 'n/a')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')};"
        f" {', '.join(vectors) or 'no AVX2'})"
    )
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    import dpkt
    import numpy
    import polars
    import scapy

    import burstcore

    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "RAM": f"{mem_kb / 2**20:.1f} GiB",
        "kernel": platform.release(),
        "OS": first(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "Python": platform.python_version(),
        "burstcore": f"{burstcore.__version__} (git {first(['git', '-C', str(ROOT), 'rev-parse', '--short', 'HEAD'])})",
        "rustc": first(["rustc", "--version"]),
        "polars": polars.__version__,
        "numpy": numpy.__version__,
        "dpkt": dpkt.__version__,
        "scapy": scapy.VERSION,
        "tshark": first(["tshark", "--version"]),
        "cat": first(["cat", "--version"]),
    }


def pair_range(pairs: list[float]) -> str:
    """The median and range of sorted paired speed-ups."""
    if not pairs:
        return "—"
    return f"{statistics.median(pairs):.2f}× ({pairs[0]:.2f}–{pairs[-1]:.2f}, {len(pairs)} pairs)"


def fmt_rate(x: float, decimals: int) -> str:
    """A rate with `decimals` decimals, or 2 significant digits where those would show 0.00."""
    return f"{x:.{decimals}f}" if x >= 10 ** (1 - decimals) else f"{x:.2g}"


def fmt_ratio(x: float) -> str:
    return f"{x:,.0f}×" if x >= 100 else f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


def report(
    import_rss: int,
    results: list[Result],
    caps: list[Capture],
    mach: dict[str, str],
    load: tuple[str, str],
    args: argparse.Namespace,
    log: list[str],
    total_s: float,
) -> str:
    by = {(r.capture, r.tool): r for r in results}
    names = {
        "cat": "`cat` (read limit)",
        "framing": "burstcore framing only (Rust `count` example, read())",
        "framing_mapped": "burstcore framing only, mapped as `scan` reads (`count`, `MMAP=1`)",
        "scan": "**burstcore `scan`** (20 windows, 8 rates, 1 thread)",
        "scan_buffered": "burstcore `scan` (read(), `mmap=False`)",
        "scan2": "burstcore `scan`, 2 threads (same results)",
        "yardstick": "the issue's yardstick: a plain C loop (pcap only, see reference_loop.c)",
        "lines": "the floor: every cache line of the mapped file loaded, no work (map_touch.c)",
        "lines2": "the same floor, 2 threads (wall clock)",
        "pages": "the kernel's part: one load per page of the mapped file (map_touch.c)",
        "read_packets": "burstcore `read_packets` (all columns, 1 thread)",
        "read_packets2": "burstcore `read_packets` (all columns, default: both cores; wall clock)",
        "read_packets_ts": "burstcore `read_packets` (timestamp, wire_len, 1 thread)",
        "polars": "polars `rolling_sum_by` + cum_sum on `read_packets`",
        "tshark": "`tshark -T fields` + numpy",
        "dpkt": "dpkt + numpy",
        "scapy": "scapy `rdpcap` + numpy",
    }
    L: list[str] = ["# burstcore benchmark results", ""]
    L.append(
        f"Generated by `{' '.join(['.venv/bin/python', 'benches/run.py', *sys.argv[1:]])}` on "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')} in {total_s / 60:.1f} min. Method: benches/README.md."
    )
    L += ["", "## Machine", "", "| | |", "|---|---|"]
    L += [f"| {k} | {v} |" for k, v in mach.items()]
    L.append(f"| load average (start / end) | {load[0]} / {load[1]} |")
    L += [
        "",
        "Other work shared the machine's 2 cores during the run (see the load average), so wall",
        "times say little: every rate below is per CPU-second (user + system time of the tool's",
        "processes, including tshark under its driver), i.e. what one dedicated core does; wall-clock",
        "packets/s are shown in parentheses. Cache and memory-bandwidth contention remain, so the",
        f"figures are lower bounds for an idle machine. burstcore's tools and polars: best of {args.repeat} runs",
        "(least CPU time; the two-thread ones: least wall time); tshark, dpkt and scapy, whose runs take",
        "seconds: one run.",
        "",
        "## Captures",
        "",
        "Distributed-training-like traffic from `gen_training` (burstcore's writer and traffic model):",
        f"ring all-reduce among {args.hosts} hosts on 10 Gbit/s links, 200 ms iterations (45 % compute gap,",
        "40 % communication in bursts of 1514 B frames, one 66 B ACK per 2 frames, idle tail).",
        "",
        "| capture | format | snaplen | file | packets | mean packet in file |",
        "|---|---|---|---|---|---|",
    ]
    for c in caps:
        files = f" in {len(c.files)} files (one per host)" if c.role == "hosts" else ""
        L.append(
            f"| {c.name} | {c.format} | {c.snaplen or 'full'} | {c.file_bytes / 1e9:.2f} GB{files} | "
            f"{c.packets:,} | {c.file_bytes / max(c.packets, 1):.0f} B |"
        )
    main_caps = [c for c in caps if c.role == "main"]
    # Targets.
    L += ["", "## Targets (issue 7)", "", "| target | measured | met |", "|---|---|---|"]
    full = [by[(c.name, "scan")] for c in main_caps if c.snaplen == 0 and (c.name, "scan") in by]
    snap = [by[(c.name, "scan")] for c in main_caps if c.snaplen and (c.name, "scan") in by]
    # read_packets is judged in packets/s where packets are small: 10 M full frames a second
    # would be 15 GB/s, more than `cat` reads here. Full frames are listed, not judged.
    small = {c.name for c in main_caps if c.snaplen}
    reads = [by[(c.name, "read_packets")] for c in main_caps if (c.name, "read_packets") in by]
    reads2 = [by[(c.name, "read_packets2")] for c in main_caps if (c.name, "read_packets2") in by]
    read_label = "read_packets ≥ 10 M packets/s at snaplen 128"
    for label, rs, key, unit, tgt, judged in (
        ("scan, full frames ≥ 8 GB/s", full, "gbps", "GB/s", TARGETS["full_gbps"], None),
        ("scan, snaplen 128 ≥ 25 M packets/s", snap, "mpps", "M packets/s", TARGETS["snap_mpps"], None),
        (f"{read_label}, 1 thread (per CPU s)", reads, "mpps", "M packets/s", TARGETS["read_mpps"], small),
        (f"{read_label}, default: both cores (wall)", reads2, "mpps_wall", "M packets/s", TARGETS["read_mpps"], small),
    ):
        vals = [getattr(r, key) for r in rs if judged is None or r.capture in judged]
        if vals:
            detail = ", ".join(
                f"{r.capture} {getattr(r, key):.2f}{'' if judged is None or r.capture in judged else ' (not judged)'}"
                for r in rs
            )
            met = "yes" if min(vals) >= tgt else f"no (worst {min(vals) / tgt:.0%} of target)"
            L.append(f"| {label} | {detail} {unit} | {met} |")
    sticks = [(s, y) for c in main_caps if (s := by.get((c.name, "scan"))) and (y := by.get((c.name, "yardstick")))]
    if sticks:
        detail = "; ".join(
            f"{y.capture} {y.gbps:.2f} GB/s, {y.mpps:.2f} M packets/s (scan is {fmt_ratio(s.mpps / y.mpps)} faster)"
            for s, y in sticks
        )
        L.append(f"| (for scale) the issue's C yardstick, measured here | {detail} | — |")
    # The floor under the mapped reader, and how far it scales on two cores.
    floors = [(c, f, by.get((c.name, "lines2"))) for c in main_caps if (f := by.get((c.name, "lines")))]
    if floors:
        detail = "; ".join(
            f"{c.name} {f.gbps:.2f} GB/s"
            + (f", 2 threads {statistics.median(f2.extra['pairs']):.2f}×" if f2 and f2.extra.get("pairs") else "")
            for c, f, f2 in floors
        )
        L.append(
            "| (for scale) every cache line of the mapped file loaded "
            "(what the reader's prefetch pulls where records are small), "
            f"no work (map_touch.c; 1 thread per CPU s, 2 threads median of pairs) | {detail} | — |"
        )
    pages = [p for c in main_caps if (p := by.get((c.name, "pages")))]
    if pages:
        detail = ", ".join(f"{p.capture} {p.gbps:.1f}" for p in pages)
        L.append(f"| (for scale) the kernel's part: one load per page of the mapped file | {detail} GB/s | — |")
    # One capture file each (the per-host files are several readers at once).
    single = {c.name for c in caps if c.role != "hosts"}
    scan_peaks = [r.peak_rss for r in results if r.tool == "scan" and r.capture in single]
    if scan_peaks:
        pk = max(scan_peaks) / 1e6
        met = "yes" if pk <= 256 else "no"
        L.append(f"| scan peak memory ≤ 256 MB | {pk:.0f} MB (largest of all 1-thread scans) | {met} |")
    both = [
        (c, a, b)
        for c in caps
        if c.role != "memory"
        and (a := by.get((c.name, "scan"))) is not None
        and (b := by.get((c.name, "scan2"))) is not None
    ]
    # Each capture's paired ratios, sorted: the target row takes their medians, the table below
    # their medians and ranges.
    pairs_of = {c.name: sorted(b.extra["pairs"]) for c, _, b in both if b.extra.get("pairs")}
    paired = [(c, statistics.median(pairs_of[c.name])) for c, _, _ in both if c.name in pairs_of]
    if paired:
        worst = min(m for _, m in paired)
        detail = ", ".join(f"{c.name} {m:.2f}×" for c, m in paired)
        met = "yes" if worst >= TARGETS["speedup"] else f"no (worst {worst / TARGETS['speedup']:.0%} of target)"
        L.append(f"| 2 threads ≥ 1.8× one (median of the pairs) | {detail} | {met} |")
    if both:
        L += ["", "## Both cores", ""]
        L += [
            "`scan(threads=2)` splits a plain capture file into time chunks scanned on both cores and",
            "merged exactly (docs/metrics.md, Parallel scans). Wall-clock, so the machine's other load",
            'weighs on it. "speed-up" divides the best runs of each, taken minutes apart; "paired"',
            "runs a one-thread scan right before each two-thread one and gives the median (and range)",
            "of those ratios, which the machine's drift from minute to minute affects less. The last",
            "column pairs the floor the same way (map_touch.c: every cache line of the mapped file",
            "loaded, no work): how far streaming the file from memory scales on this machine.",
            f"`hosts-…` is the traffic of `snap128-pcap-…` as {args.hosts} files, one per host (the packets",
            "each sends), scanned together as one capture: files that overlap in time are cut at common",
            "instants, each chunk merging its pieces of all of them.",
            "",
            "| capture | 1 thread (wall) | 2 threads (wall) | speed-up | paired speed-up | identical E(τ) and "
            "B_max | peak RSS, 2 threads | every line loaded, paired |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c, a, b in both:
            same = a.extra.get("envelope") == b.extra.get("envelope") and a.extra.get("bmax") == b.extra.get("bmax")
            floor = by.get((c.name, "lines2"))
            # The best one-thread wall time: the kept one-thread run is the least CPU time's.
            a_wall = a.extra.get("best_wall", a.seconds)
            L.append(
                f"| {c.name} | {a_wall:.3f} s | {b.seconds:.3f} s | {a_wall / b.seconds:.2f}× | "
                f"{pair_range(pairs_of.get(c.name, []))} | {'yes' if same else 'NO'} | {b.peak_rss / 1e6:.0f} MB | "
                f"{pair_range(sorted(floor.extra.get('pairs', []))) if floor else '—'} |"
            )
        L.append("")
    # Per capture tables.
    for c in main_caps:
        s = by.get((c.name, "scan"))
        L += ["", f"## {c.name}: {c.format}, {'full frames' if not c.snaplen else f'snaplen {c.snaplen}'}"]
        L += [f"{c.file_bytes / 1e9:.2f} GB, {c.packets:,} packets.", ""]
        L += [
            "| tool | packets read | wall | CPU | file GB/s | M packets/s | (M packets/s, wall) | peak RSS "
            "| scan is faster by | agrees with burstcore on the packets it read |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for tool in names:
            r = by.get((c.name, tool))
            if r is None:
                continue
            ratio = "—" if tool == "scan" or s is None else fmt_ratio(s.mpps / r.mpps)
            agree = check_text(r)
            slice_note = f" (slice of the file's {c.packets:,}, extrapolated)" if r.sliced else ""
            L.append(
                f"| {names[tool]} | {r.packets:,}{slice_note} | {r.seconds:.3f} s | {r.cpu:.3f} s | "
                f"{fmt_rate(r.gbps, 2)} | {fmt_rate(r.mpps, 3)} | ({fmt_rate(r.mpps_wall, 3)}) | "
                f"{r.peak_rss / 1e6:.0f} MB | {ratio} | {agree} |"
            )
    # Memory check.
    mem = [c for c in caps if c.role == "memory"]
    if mem:
        L += [
            "",
            "## Memory check (issue 3): scan's peak memory does not grow with the file",
            "",
            "The same traffic (same seed, the smaller file is a prefix of the larger), snaplen 128 pcap;",
            "`scan` with the 20 windows (the largest, 1 s, holds the most packets) and 8 rates; and the",
            "same scan by all and by pair, which decodes every packet's headers (reads its bytes).",
            "",
            "| capture | file | packets | peak RSS | CPU time | peak RSS, by all and pair | CPU time |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in mem:
            r = by.get((c.name, "scan"))
            p = by.get((c.name, "scan_pair"))
            if r:
                pair = f"{p.peak_rss / 1e6:.1f} MB | {p.cpu:.2f} s" if p else "— | —"
                L.append(
                    f"| {c.name} | {c.file_bytes / 1e9:.2f} GB | {c.packets:,} | "
                    f"{r.peak_rss / 1e6:.1f} MB | {r.cpu:.2f} s | {pair} |"
                )
        for tool in ("scan", "scan_pair"):
            rs = [by[(c.name, tool)] for c in mem if (c.name, tool) in by]
            if len(rs) == 2:
                L += [
                    "",
                    f"Peak RSS ratio of `{tool}`, larger file / smaller file: {rs[1].peak_rss / rs[0].peak_rss:.3f}.",
                ]
    starts = [r for r in results if r.tool == "tshark" and "startup_cpu" in r.extra]
    tshark_start = (
        [
            "- tshark's own start-up is inside its time (Python's start and imports are not): measured",
            "  apart (`tshark -c 1` on the same file) at "
            + ", ".join(f"{r.extra['startup_cpu']:.2f} s CPU ({r.extra['startup_cpu'] / r.cpu:.0%})" for r in starts)
            + " of its runs, in the order of the tables; on a whole file it would be a smaller share.",
        ]
        if starts
        else []
    )
    L += [
        "",
        "## Notes",
        "",
        "- Times are taken inside each tool's process around the work (Python start and imports",
        "  excluded); `cat` and the Rust framing loop are timed by themselves. Peak RSS is the max RSS",
        "  of the tool's process as GNU `time` reports it (the largest single process: tshark or its",
        "  Python driver), including the interpreter and imported libraries: Python with polars and",
        f"  burstcore imported, before reading anything, peaks at {import_rss / 1e6:.0f} MB.",
        "- A slice is the first N packets of the file; its GB/s assumes the file's mean bytes per packet,",
        "  and its packets/s is what the tool would keep up over the whole file (extrapolated).",
        *tshark_start,
        "- GB, MB: 10⁹, 10⁶ bytes (RAM: GiB, 2³⁰); GB/s is file bytes per second (for a slice, its share",
        "  of the file at the file's mean bytes per packet), M packets/s 10⁶ packets per second.",
        "- The peers compute the same 20 E(τ) (exact int64 numpy / polars) and 8 B_max(r) (float64",
        "  cumulative sums, the usual vectorised way), from exact ns timestamps (tshark's decimal text,",
        "  dpkt's and scapy's Decimal seconds; dpkt's pcapng reader is given a Decimal divisor, as its",
        "  float one loses sub-µs detail).",
        "- Every tool that computes the metrics is checked in the run against burstcore on the packets",
        "  it read: its 20 E(τ) exactly, its 8 B_max to 1e-6 relative (float64 sums); on a whole file",
        "  against the timed `scan`, on a slice against burstcore on the same first N packets",
        "  (`read_packets` up to the slice's last instant, then `scan` of those columns; not timed).",
        "  A disagreement is marked **NO** in the tables, and the run exits with an error.",
        "- polars and `read_packets` hold the whole capture in memory; `scan` holds only the packets",
        "  of its largest window.",
        "- `read_packets` reads on one thread unless marked: by default it reads a plain file in byte",
        "  ranges on all cores (both here), so that row is judged by wall time, as the two-thread scan;",
        "  the polars peer calls it with that default, as a user would.",
        "- `scan` reads the file through a read-only memory mapping (the default on Linux, guarded",
        "  against truncation) and hands the pages it has passed back to the kernel, so its peak RSS",
        "  does not grow with the file; `scan (read(), mmap=False)` copies the file into a buffer with",
        "  `read()` instead, as on other systems.",
        "- Before a file is measured, its cached pages are dropped and read back, so that every tool",
        "  reads freshly cached pages: on this VM, pages cached for hours read up to 3× slower, and",
        "  unevenly along the file (see `warm` in benches/run.py).",
    ]
    if log:
        L += ["", "## Generation log", "", "```", *log, "```"]
    return "\n".join(L) + "\n"


# The first section written by hand in RESULTS.md: it and all after it are kept by a new run.
HAND_WRITTEN = re.compile(r"^## .*\(written by hand\)", re.MULTILINE)


def write_report(out: Path, text: str) -> None:
    """Write the generated report, keeping the sections written by hand that follow the last
    one (each landing's measurements and reasons, which no run can regenerate)."""
    old = out.read_text() if out.exists() else ""
    hand = HAND_WRITTEN.search(old)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + ("\n" + old[hand.start() :] if hand else ""))


def main_plan(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(tool, slice in packets (0: whole file), runs) on each main capture, in order."""
    return [
        ("cat", 0, args.repeat),
        ("framing", 0, args.repeat),
        ("framing_mapped", 0, args.repeat),
        ("scan", 0, args.repeat),
        ("scan_buffered", 0, args.repeat),
        ("scan2", 0, args.pairs),
        ("yardstick", 0, args.repeat),
        ("lines", 0, args.repeat),
        ("lines2", 0, args.pairs),
        ("pages", 0, args.repeat),
        ("read_packets", 0, args.repeat),
        ("read_packets2", 0, args.repeat),
        ("read_packets_ts", 0, args.repeat),
        # polars is the one peer as fast as burstcore's tools, so it gets their best of N: its
        # ratio to scan's best is then not one run's noise against the best of several.
        ("polars", 0, args.repeat),
        ("tshark", args.tshark_packets, 1),
        ("dpkt", args.dpkt_packets, 1),
        ("scapy", args.scapy_packets, 1),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    ch = sub.add_parser("child", help="internal: measure one tool on one file")
    ch.add_argument("tool")
    ch.add_argument("path")
    ch.add_argument("--limit", type=int, default=0)
    ch.add_argument("--windows", required=True)
    ch.add_argument("--rates", required=True)
    ap.add_argument("--size", default="2G", help="size of each main capture (default 2G)")
    ap.add_argument("--memory-sizes", default="1G,4G", help="the two sizes of the memory check ('' to skip)")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--data", type=Path, default=ROOT / "benches" / "data")
    ap.add_argument(
        "--out", type=Path, help="the report (default benches/RESULTS.md; with --smoke, RESULTS.md in --data)"
    )
    ap.add_argument("--json", type=Path, help="also write every measurement as JSON here")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the fast tools (best is kept)")
    ap.add_argument(
        "--pairs", type=int, default=5, help="two-thread scans, each right after a one-thread scan (default 5)"
    )
    ap.add_argument("--tshark-packets", type=int, default=200_000)
    ap.add_argument("--dpkt-packets", type=int, default=300_000)
    ap.add_argument("--scapy-packets", type=int, default=20_000)
    ap.add_argument(
        "--smoke", action="store_true", help="tiny captures, whole files but scapy's slice, one run each (for CI)"
    )
    ap.add_argument("--only", help="comma-separated tools to run (default: all)")
    args = ap.parse_args()

    if args.cmd == "child":
        windows = [int(w) for w in args.windows.split(",")]
        rates = [int(r) for r in args.rates.split(",")]
        print(json.dumps(_child(args.tool, args.path, args.limit, windows, rates)))
        return

    if not TIME.exists():
        # Without it every peak memory would be this process's size or more (see run_measured).
        sys.exit(f"error: GNU time ({TIME}) measures each tool's own peak memory; install the `time` package")
    if args.out is None:
        # A smoke run's tiny-capture figures never replace the real ones.
        args.out = args.data / "RESULTS.md" if args.smoke else ROOT / "benches" / "RESULTS.md"
    if args.smoke:
        args.size, args.memory_sizes, args.repeat, args.pairs = "2M", "1M,4M", 1, 1
        # Whole files, but scapy (the slowest) on a slice: CI then runs the slice's extrapolation
        # and its check against burstcore on the same first packets.
        args.tshark_packets = args.dpkt_packets = 0
        args.scapy_packets = SMOKE_SLICE
    started = time.perf_counter()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    args.data.mkdir(parents=True, exist_ok=True)
    gen = cargo_example("gen_training")
    count_bin = cargo_example("count")
    size = parse_size(args.size)
    tag = args.size.lower()
    caps = [
        Capture(f"full-pcap-{tag}", args.data / f"full-{tag}.pcap", "pcap", 0),
        Capture(f"full-pcapng-{tag}", args.data / f"full-{tag}.pcapng", "pcapng", 0),
        Capture(f"snap128-pcap-{tag}", args.data / f"snap128-{tag}.pcap", "pcap", 128),
        Capture(f"snap128-pcapng-{tag}", args.data / f"snap128-{tag}.pcapng", "pcapng", 128),
    ]
    # A comprehension, not filter(None, ...): mypy 1.10 (the floor) cannot infer filter()'s type.
    for m in [part for part in args.memory_sizes.split(",") if part]:
        t = m.strip().lower()
        caps.append(Capture(f"snap128-pcap-{t}", args.data / f"snap128-{t}.pcap", "pcap", 128, role="memory"))
    # Several files at once: the same traffic as one file per host, scanned together.
    hosts_path = args.data / f"hosts-snap128-{tag}.pcap"
    caps.append(Capture(f"hosts-snap128-pcap-{tag}", hosts_path, "pcap", 128, role="hosts"))
    log: list[str] = []
    yardstick_bin = c_binary(args.data, "reference_loop", log)
    mapping_bin = c_binary(args.data, "map_touch", log, "-pthread")
    for c in caps:
        # The per-host files hold the packets of the main snaplen-128 pcap.
        same = next((m.packets for m in caps if m.name == f"snap128-pcap-{tag}"), 0) if c.role == "hosts" else 0
        generate(gen, c, size if c.role != "memory" else parse_size(c.name.rsplit("-", 1)[1]), args.hosts, log, same)
        print(f"capture {c.name}: {c.file_bytes / 1e9:.2f} GB, {c.packets:,} packets", flush=True)

    # The rate grid: the mean rate of the traffic, found once (not timed), times the multiples.
    import burstcore

    inf = burstcore.info(str(caps[0].path))
    mean = inf.mean_rate_bps or 1e10
    rates = sorted({max(1, round(mean * m)) for m in RATE_MULTIPLES})

    only = set(args.only.split(",")) if args.only else None
    plan = main_plan(args)
    results: list[Result] = []
    disagree: list[str] = []
    # What Python + polars + burstcore take before reading anything (part of every peak below).
    base = measure(caps[0], "import", 0, WINDOWS_NS, rates, 1)
    for c in caps:
        for f in c.files:
            warm(f)
        tools = {
            "main": plan,
            "memory": [("scan", 0, 1), ("scan_pair", 0, 1)],
            "hosts": [("scan", 0, args.repeat), ("scan2", 0, args.pairs)],
        }[c.role]
        for tool, limit, rep in tools:
            if only and tool not in only:
                continue
            if tool == "yardstick" and (c.format != "pcap" or yardstick_bin is None):
                continue  # the yardstick frames pcap only
            if tool in MAP_TOUCH and mapping_bin is None:
                continue
            r = measure(c, tool, limit, WINDOWS_NS, rates, rep, count_bin, yardstick_bin, mapping_bin)
            results.append(r)
            # Every tool that computes the metrics itself is checked against burstcore on the
            # packets it read: `scan` itself on a whole file, burstcore on the same first packets
            # for a slice (not timed).
            if tool != "scan" and "envelope" in r.extra and c.role == "main":
                one = next((x for x in results if x.capture == c.name and x.tool == "scan"), None)
                if one is not None and not r.sliced:
                    r.extra["check"] = check(r, {"packets": one.packets, **one.extra}, "scan")
                else:
                    ref = slice_reference(str(c.path), r.packets, r.extra.get("last_ns"), WINDOWS_NS, rates)
                    r.extra["check"] = check(r, ref, "slice" if r.sliced else "whole")
                if not r.extra["check"]["ok"]:
                    disagree.append(f"{c.name} {tool}: {check_text(r)}")
            print(
                f"{c.name:24} {tool:16} {r.seconds:8.3f} s wall {r.cpu:8.3f} s CPU "
                f"{r.gbps:7.2f} GB/s {r.mpps:8.3f} Mpkt/s "
                f"{r.peak_rss / 1e6:7.0f} MB{' (slice)' if r.sliced else ''}",
                flush=True,
            )
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    text = report(
        base.peak_rss,
        results,
        caps,
        machine(),
        (" ".join(load_start), " ".join(load_end)),
        args,
        log,
        time.perf_counter() - started,
    )
    write_report(args.out, text)
    if args.json:
        rows = [{**r.__dict__, "gbps": r.gbps, "mpps": r.mpps} for r in results]
        args.json.write_text(json.dumps({"rates_bps": rates, "windows_ns": WINDOWS_NS, "results": rows}, indent=1))
    print(f"wrote {args.out}")
    if disagree:
        # Written first, so the figures can be looked at; but a run in which a tool and burstcore
        # disagree on the same packets compares nothing, and says so by failing.
        sys.exit("error: these tools disagree with burstcore on the same packets:\n  " + "\n  ".join(disagree))


if __name__ == "__main__":
    main()
