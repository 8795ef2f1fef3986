"""Every example a user copies runs: the fenced python and shell blocks of README.md and docs/*.md,
the ``>>>`` examples of the package's docstrings and the "examples:" of the CLI's --help.

The capture names the examples use are files this test writes with burstcore's own writer (a small
ring all-reduce, as scripts/demo writes a large one) in a scratch folder the examples run in, or
shared captures through BURSTCORE_SHARED. Blocks that cannot run as written are listed below with
the reason; a block that appears or changes without being listed runs like the others. Where a
block states an output (a column list, a printed line, an error message) it is compared.
"""

from __future__ import annotations

import ast
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import zstandard

import burstcore

from .conftest import REPO, shared_file

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PACKAGE = REPO / "python" / "burstcore"

# Shell lines that cannot run here as written, with why: each command without its comment.
NOT_RUN = {
    "bash scripts/demo": "sets the project up (.ci/setup: apt, rustup, a venv) before it runs; it is the demo",
    "bash .ci/run": "sets up and runs the whole test suite, this file included",
    "pip install burstcore": "installs from the package index",
    "pip install 'burstcore[plot]'": "installs from the package index",
    "bash .ci/setup && .venv/bin/python benches/run.py": "the benchmark: sets up, then reads GBs for minutes",
}

# Words of shell lines that need a live capture or a path of the user's, and what stands in for them.
REWRITES = [
    # A live capture needs an interface and privileges: the generated capture is piped instead.
    ("dumpcap -w - |", "cat trace.pcapng |"),
    ("tcpdump -w - |", "cat trace.pcapng |"),
    # The user's folder of captures: one in the scratch folder.
    ("/captures/", "captures/"),
]

# Names a Python block uses for a capture of the user's, bound before it runs to a shared file.
PLACEHOLDERS = {
    # The page reproduces the studies' findings on the shared captures: the ring capture stands in.
    "docs/training-traffic.md": {"path": "captures/d_ring2_resnetsmall_noshape_bridge.pcapng"},
}

# Warnings an example gives by design, with why; any other CaptureWarning fails its example.
EXPECTED_WARNINGS = [
    # b.pcapng is cut inside its last packet, for docs/limits.md's example of kind "truncated".
    "capture ends inside",
    # Per-host captures merged as they are hold the same packets: what the examples of `shared`
    # and of one filter per capture are about.
    "hold the same packets",
    "holds the same packets",
]

# Warnings one example gives by design, with why.
EXPECTED_LINE_WARNINGS = {
    # The example shows how to write an offset list that starts below zero; a.pcap and b.pcap are
    # two hosts' captures of one stretch (as the `shared` examples need), which -2s sets apart.
    "burstcore superpose a.pcap b.pcap --offsets=-2s,0": "overlap no other in time",
}


def _frame_of(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


# What the examples' comments say they write, checked on what they wrote (command without comment).
STATED_OUTPUTS = {
    "burstcore scan trace.pcapng -o result.json": lambda p: (
        {"envelope", "backlog", "series", "groups", "summary"} <= set(json.loads(p.read_text()))
    ),
    "burstcore scan a.pcapng b.pcapng -o each.parquet --each": lambda p: _frame_of(p).columns[0] == "file",
    "burstcore flows trace.pcapng --windows 10us,1ms -o flows.parquet": lambda p: (
        {"envelope_10us", "envelope_1ms"} <= set(_frame_of(p).columns)
    ),
    "burstcore iterations trace.pcapng -o iterations.json": lambda p: (
        {"period_ns", "confidence"} <= set(json.loads(p.read_text()))
    ),
    "burstcore sizes trace.pcapng -o histogram.csv --table histogram": lambda p: (
        not _frame_of(p).select("group", "size").is_duplicated().any()
    ),
    "burstcore gaps trace.pcapng -o histogram.parquet --table histogram": lambda p: (
        _frame_of(p)
        .select(ok=(pl.col("hi_ns") + 1 == 2 * pl.col("lo_ns")) | (pl.col("lo_ns") == pl.col("hi_ns")))["ok"]
        .all()
    ),
    "burstcore superpose a.pcap b.pcap -o gain.csv": lambda p: "gain" in _frame_of(p).columns,
    "burstcore superpose a.pcap b.pcap -o own.csv --table singles": lambda p: (
        {"capture", "bytes"} <= set(_frame_of(p).columns)
    ),
    "burstcore shared captures/*.pcap -o shared.json": lambda p: (
        {"pairs", "captures", "hosts", "filters"} <= set(json.loads(p.read_text()))
    ),
}


# --- the captures -------------------------------------------------------------------------------

RANKS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.1.0.5"]  # the docs' filters name these hosts
T0 = 1_796_006_910_100_000_000  # 2026-11-30T02:48:30.1Z: after the --start of an example
PERIOD, COMPUTE, FRAMES, MSS = 20_000_000, 12_000_000, 60, 1448
NS_PER_FRAME = (14 + 20 + 20 + MSS) * 8 // 10  # 10 Gbit/s


def _ip(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def _frame(src: str, dst: str, sport: int, dport: int, payload: int, flags: int, seq: int) -> tuple[bytes, int]:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, 1, 5 << 4, flags, 65535, 0, 0)
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, seq % 65536, 0x4000, 64, 6, 0, _ip(src), _ip(dst))
    eth = b"\x02\x00\x00\x00\x00" + _ip(dst)[3:] + b"\x02\x00\x00\x00\x00" + _ip(src)[3:] + b"\x08\x00"
    head = eth + iph + tcp
    return head + b"\x00" * min(payload, 128 - len(head)), len(head) + payload


Packet = tuple[int, str, str, tuple[bytes, int]]


def _training(ranks: list[str], iterations: int = 12, ssh: bool = True) -> list[Packet]:
    """A ring all-reduce over TCP port 29500 (acks every second frame) and an SSH session beside it."""
    packets: list[Packet] = []
    for it in range(iterations):
        start = T0 + it * PERIOD + COMPUTE
        for r, src in enumerate(ranks):
            dst = ranks[(r + 1) % len(ranks)]
            t = start + r * 1_700
            for k in range(FRAMES):
                seq = (it * FRAMES + k) * MSS
                packets.append((t, src, dst, _frame(src, dst, 40000 + r, 29500, MSS, 0x18, seq)))
                if k % 2:
                    packets.append((t + 15_000, dst, src, _frame(dst, src, 29500, 40000 + r, 0, 0x10, seq)))
                t += NS_PER_FRAME
        if ssh:
            t = T0 + it * PERIOD + 3_000_000
            packets.append((t, ranks[0], ranks[-1], _frame(ranks[0], ranks[-1], 51000, 22, 100, 0x18, it)))
    packets.sort(key=lambda p: p[0])
    return packets


def _write(path: Path, packets: list[Packet], fmt: str = "pcapng", cut: int = 0) -> None:
    w = burstcore.CaptureWriter(fmt, nanos=True, snaplen=128)
    if fmt == "pcapng":
        w.section("little", user_appl="tests/test_doc_examples.py")
        w.interface(linktype=1, snaplen=128, resolution="1e-9", name=path.stem)
    for t, _, _, (data, wire) in sorted(packets, key=lambda p: p[0]):
        if fmt == "pcapng":
            w.epb(0, data, ts_ns=t, wire_len=wire)
        else:
            w.packet(t, data, wire_len=wire)
    raw = w.getvalue()
    path.write_bytes(raw[: len(raw) - cut])


def _host_view(packets: list[Packet], host: str, delay: int = 5_000) -> list[Packet]:
    """What a capture on one host records: what it sent, and what it received `delay` ns later."""
    return [p for p in packets if p[1] == host] + [(t + delay, s, d, f) for t, s, d, f in packets if d == host]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch folder the examples run in, with every capture name they use."""
    d = tmp_path_factory.mktemp("doc_examples")
    packets = _training(RANKS)
    _write(d / "trace.pcapng", packets)
    _write(d / "trace.pcap", packets, "pcap")
    (d / "trace.pcap.gz").write_bytes(gzip.compress((d / "trace.pcap").read_bytes()))
    (d / "trace.pcapng.zst").write_bytes(zstandard.ZstdCompressor().compress((d / "trace.pcapng").read_bytes()))
    for name in ["run1", "run2", "ring", "ps", "job", "job1", "job2", "t", "a"]:
        shutil.copy(d / "trace.pcapng", d / f"{name}.pcapng")
    shutil.copy(d / "trace.pcap", d / "huge.pcap")
    # b.pcapng: another job, cut inside its last packet (docs/limits.md's example finds it).
    other = _training(["10.2.0.1", "10.2.0.2"], iterations=3, ssh=False)
    _write(d / "b.pcapng", other, cut=10)
    # One capture per host: host0..3.pcap, h1..h3.pcapng (hosts 10.0.0.1..3), a.pcap and b.pcap.
    for i, host in enumerate(RANKS):
        _write(d / f"host{i}.pcap", _host_view(packets, host), "pcap")
    for i, host in enumerate(RANKS[:3]):
        _write(d / f"h{i + 1}.pcapng", _host_view(packets, host))
    shutil.copy(d / "host0.pcap", d / "a.pcap")
    shutil.copy(d / "host1.pcap", d / "b.pcap")
    (d / "captures").mkdir()
    for i in range(2):
        shutil.copy(d / f"host{i}.pcap", d / "captures" / f"host{i}.pcap")
        shutil.copy(d / f"h{i + 1}.pcapng", d / "captures" / f"h{i + 1}.pcapng")
    # The command line as installed: `burstcore` runs this interpreter's package.
    (d / "bin").mkdir()
    shim = d / "bin" / "burstcore"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m burstcore "$@"\n')
    shim.chmod(0o755)
    return d


@pytest.fixture
def in_workdir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(workdir)
    yield workdir


# --- the examples -------------------------------------------------------------------------------

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _blocks(langs: set[str]) -> list[tuple[str, int, str, str]]:
    """(file, line, language, text) of every fenced block of the docs in one of `langs`."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) in langs:
                line = text.count("\n", 0, m.start()) + 1
                found.append((str(doc.relative_to(REPO)), line, m.group(1), m.group(2)))
    return found


PYTHON_BLOCKS = _blocks({"python"})
SHELL_BLOCKS = _blocks({"sh", "bash", "console", "shell"})


def _shell_lines(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", "", text)
    lines = [line.removeprefix("$ ") for line in joined.splitlines()]
    return [re.sub(r"\s+#.*", "", line).strip() for line in lines if line.strip() and not line.startswith("#")]


def _docstring_examples() -> list[tuple[str, int, str]]:
    """(module, line, code) of every run of `>>>` lines in the package's docstrings."""
    found = []
    for path in sorted([*PACKAGE.glob("*.py"), *PACKAGE.glob("*.pyi")]):
        tree = ast.parse(path.read_text())
        nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef))]
        for node in nodes:
            doc = ast.get_docstring(node, clean=True)
            if not doc or ">>>" not in doc:
                continue
            code: list[str] = []
            for line in [*doc.splitlines(), ""]:
                s = line.strip()
                if s.startswith((">>> ", "... ")) or s in (">>>", "..."):
                    code.append(s[4:])
                elif code:
                    found.append((path.name, getattr(node, "lineno", 1), "\n".join(code)))
                    code = []
    return found


DOCSTRING_EXAMPLES = _docstring_examples()


def _cli_examples() -> list[tuple[str, str]]:
    """(command, line) of the "examples:" of `burstcore --help` and of every command's --help."""
    from burstcore import cli

    found = []
    for h in _help_texts(cli.build_parser()):
        found += [(h.split()[1], line) for line in _examples_of(h)]
    return found


def _help_texts(parser: object) -> Iterator[str]:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    yield parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for sub in action.choices.values():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield sub.format_help()


def _examples_of(help_text: str) -> list[str]:
    m = re.search(r"^examples:\n((?:  .*\n)+)", help_text + "\n", re.M)
    assert m, f"no examples in:\n{help_text}"
    return [line.strip() for line in m.group(1).splitlines()]


def _run_python(code: str, ns: dict[str, object]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(code, "<example>", "exec"), ns)
    return list(caught)


def _unexpected(caught: list[warnings.WarningMessage]) -> list[str]:
    texts = [str(w.message) for w in caught if isinstance(w.message, burstcore.CaptureWarning)]
    return [t for t in texts if not any(e in t for e in EXPECTED_WARNINGS)]


def _rewritten(line: str) -> str:
    for old, new in REWRITES:
        line = line.replace(old, new)
    return line


def _run_shell(line: str, workdir: Path) -> tuple[int, str, str]:
    """A shell line as a user runs it: bash, and `burstcore` the console script of this package."""
    env = dict(os.environ, PATH=f"{workdir / 'bin'}:{os.environ['PATH']}", COLUMNS="120")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), os.environ.get("PYTHONPATH")]))
    out = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], cwd=workdir, env=env, capture_output=True, text=True, timeout=60
    )
    return out.returncode, out.stdout, out.stderr


def _run_in_process(line: str, workdir: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """A plain `burstcore ...` line through cli.main in this process, its globs expanded as bash would.

    A new interpreter per line (a second and more each, polars and matplotlib imported anew) would
    take minutes for the 80 lines; the lines with pipes, and `burstcore --help`, go through bash.
    """
    from burstcore import cli

    argv: list[str] = []
    for word in shlex.split(line, comments=True)[1:]:
        matched = sorted(glob.glob(word, root_dir=workdir)) if any(c in word for c in "*?[") else []
        argv += matched or [word]
    capfd.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out, err = capfd.readouterr()
    return code, out, err


def _check_shell(line: str, workdir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    line = _rewritten(line)
    through_bash = "|" in line or not line.startswith("burstcore ") or line.split("#")[0].strip() == "burstcore --help"
    if through_bash:
        code, out, err = _run_shell(line, workdir)
    else:
        old = os.getcwd()
        os.chdir(workdir)
        try:
            code, out, err = _run_in_process(line, workdir, capfd)
        finally:
            os.chdir(old)
    assert code == 0, f"{line!r} exited {code}:\n{err}"
    expected = [*EXPECTED_WARNINGS, *(w for start, w in EXPECTED_LINE_WARNINGS.items() if line.startswith(start))]
    bad = [w for w in err.splitlines() if "warning:" in w and not any(e in w for e in expected)]
    assert not bad, f"{line!r} warned:\n{err}"
    words = shlex.split(line, comments=True)
    written = [words[i + 1] for i, w in enumerate(words[:-1]) if re.fullmatch(r"-q?o", w)]
    if written and written[-1] != "-":
        out_file = workdir / written[-1]
        assert out_file.exists() and out_file.stat().st_size > 0, f"{line!r} wrote no {out_file.name}"
        if out_file.suffix == ".json":
            json.loads(out_file.read_text())
        stated = STATED_OUTPUTS.get(re.sub(r"\s+#.*", "", line).strip())
        assert stated is None or stated(out_file), f"{line!r} wrote {out_file.name} other than its comment says"
        out_file.unlink()
    else:
        assert out.strip(), f"{line!r} printed nothing"
        if "--json" in words or "json" in words:
            json.loads(out)


@pytest.mark.parametrize(
    ("doc", "line", "code"),
    [(d, n, c) for d, n, _, c in PYTHON_BLOCKS],
    ids=[f"{d}:{n}" for d, n, _, _ in PYTHON_BLOCKS],
)
def test_python_block(doc: str, line: int, code: str, in_workdir: Path) -> None:
    bound = {name: str(shared_file(rel)) for name, rel in PLACEHOLDERS.get(doc, {}).items()}
    ns: dict[str, object] = {"__name__": "__doc_example__", **bound}
    caught = _run_python(code, ns)
    assert not _unexpected(caught), _unexpected(caught)
    if doc == "README.md" and "r.envelope" in code:
        # The block's comments list the frames' columns.
        r = ns["r"]
        stated = re.search(r"r\.envelope\s+# (.*)", code)
        assert stated
        assert r.envelope.columns == [c.split(" = ")[0] for c in stated.group(1).split(", ")]  # type: ignore[attr-defined]
        stated = re.search(r"r\.backlog\s+# (.*), \.\.\.", code)
        assert stated
        named = stated.group(1).split(", ")
        assert r.backlog.columns[: len(named)] == named  # type: ignore[attr-defined]
        # "one row per packet, timestamps as Datetime(ns, UTC)"
        rows = burstcore.read_packets("trace.pcapng")
        assert rows.height == len(_training(RANKS))
        assert rows.schema["timestamp"] == pl.Datetime("ns", "UTC")


def test_limits_warning_example_prints_the_cut(in_workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/limits.md's loop over the warnings prints the cut capture and where its cut block starts."""
    (_, _, _, code) = next(b for b in PYTHON_BLOCKS if b[0] == "docs/limits.md" and "truncated" in b[3])
    _run_python(code, {"__name__": "__doc_example__"})
    # Walk b.pcapng's blocks by their length fields: the last one starts where the file runs out.
    raw = (in_workdir / "b.pcapng").read_bytes()
    start = 0
    while start + struct.unpack_from("<I", raw, start + 4)[0] <= len(raw):
        start += struct.unpack_from("<I", raw, start + 4)[0]
    assert 0 < start < len(raw)
    assert capsys.readouterr().out == f"b.pcapng is cut at byte {start}\n"


@pytest.mark.parametrize(
    ("doc", "line", "text"),
    [(d, n, t) for d, n, _, t in SHELL_BLOCKS],
    ids=[f"{d}:{n}" for d, n, _, _ in SHELL_BLOCKS],
)
def test_shell_block(doc: str, line: int, text: str, workdir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    for cmd in _shell_lines(text):
        if cmd in NOT_RUN:
            continue
        _check_shell(cmd, workdir, capfd)


def test_not_run_lines_are_still_in_the_docs() -> None:
    """Every line listed as not runnable is in a block still: a stale entry would hide a new line."""
    lines = {cmd for _, _, _, t in SHELL_BLOCKS for cmd in _shell_lines(t)}
    assert set(NOT_RUN) <= lines, set(NOT_RUN) - lines


@pytest.mark.parametrize(
    ("module", "line", "code"), DOCSTRING_EXAMPLES, ids=[f"{m}:{n}" for m, n, _ in DOCSTRING_EXAMPLES]
)
def test_docstring_example(module: str, line: int, code: str, in_workdir: Path) -> None:
    ns: dict[str, object] = {"__name__": "__doc_example__"}
    caught = _run_python(code, ns)
    assert not _unexpected(caught), _unexpected(caught)
    for name, value in list(ns.items()):
        if callable(value) and getattr(value, "__module__", None) == "__doc_example__":
            # A function the example defines is called on the generated capture.
            frame = value("trace.pcapng", ["1ms"])
            assert isinstance(frame, pl.DataFrame) and frame.height == 1, name


def test_docstring_examples_found() -> None:
    assert {m for m, _, _ in DOCSTRING_EXAMPLES} >= {"__init__.py", "_types.py"}


CLI_EXAMPLES = _cli_examples()


@pytest.mark.parametrize("line", [line for _, line in CLI_EXAMPLES], ids=[line for _, line in CLI_EXAMPLES])
def test_cli_example(line: str, workdir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _check_shell(line, workdir, capfd)


def test_cli_examples_found() -> None:
    """Every command's --help has examples, this test reads them all, and every stated output is one of them."""
    assert len(CLI_EXAMPLES) >= 50, len(CLI_EXAMPLES)
    commands = {_rewritten(re.sub(r"\s+#.*", "", line).strip()) for _, line in CLI_EXAMPLES}
    assert set(STATED_OUTPUTS) <= commands, set(STATED_OUTPUTS) - commands


FILTER_ERRORS = next(t for d, _, lang, t in _blocks({""}) if d == "docs/filters.md" and t.startswith("filter "))


@pytest.mark.parametrize("stated", FILTER_ERRORS.splitlines())
def test_filter_error_messages_are_as_stated(stated: str, in_workdir: Path) -> None:
    expr = re.match(r'filter "(.*?)" ', stated)
    assert expr
    with pytest.raises(ValueError) as e:
        burstcore.scan("trace.pcapng", filter=expr.group(1))
    assert str(e.value) == stated


SHARED_WARNING = next(t for d, _, _, t in _blocks({""}) if d == "docs/filters.md" and "hold the same packets" in t)


def test_shared_packets_warning_is_as_stated(workdir: Path) -> None:
    """docs/filters.md's SharedPacketsWarning: four hosts' captures of all-to-all traffic, merged as they are.

    The figure of packets sampled in both depends on the traffic: it is the one word compared by pattern.
    """
    hosts = [f"10.99.0.{11 + i}" for i in range(4)]
    packets: list[Packet] = []
    for it in range(8):
        for i, src in enumerate(hosts):
            for j, dst in enumerate(hosts):
                if i != j:
                    t = T0 + it * PERIOD + (4 * i + j) * 50_000
                    for k in range(40):
                        seq = (it * 40 + k) * MSS
                        frame = _frame(src, dst, 40000 + j, 29500, MSS, 0x18, seq)
                        packets.append((t + k * NS_PER_FRAME, src, dst, frame))
    paths = []
    for i, host in enumerate(hosts):
        paths.append(workdir / f"mesh{i}.pcapng")
        _write(paths[-1], _host_view(packets, host))
    with pytest.warns(burstcore.SharedPacketsWarning) as caught:
        burstcore.scan(paths)
    stated = " ".join(SHARED_WARNING.split())
    pattern = re.escape(stated).replace("892", r"[\d,]+")
    said = [str(w.message) for w in caught if isinstance(w.message, burstcore.SharedPacketsWarning)]
    assert len(said) == 1 and re.fullmatch(pattern, said[0]), (stated, said)
