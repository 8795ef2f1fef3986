"""The report, the figures and the terminal given captures whose strings were chosen by whoever
made them (interface names, section options, comments, file names), and degenerate captures.

The pcapng blocks are written by hand here (the writer cannot set every option, nor write bytes
that are no UTF-8): an option is code, length, value padded to 4 bytes."""

from __future__ import annotations

import os
import re
import struct
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

import burstcore
from tests import oracles
from tests.test_cli import run_cli, write_capture
from tests.test_report import _chromium_dom
from tests.test_report import _Page as TablePage

FRAME = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _block(kind: int, body: bytes) -> bytes:
    return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def hostile_pcapng(text: bytes, times: tuple[int, ...] = (1_000_000_000, 1_000_001_000, 1_000_002_000)) -> bytes:
    """One section, one interface, `times`' packets; `text` as every string option: the section's
    comment, hardware, OS and application, the interface's comment, name and description, and
    each packet's comment."""
    strings = b"".join(_opt(code, text) for code in (1, 2, 3, 4))
    shb = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + strings + _opt(0, b"")
    idb = struct.pack("<HHI", 1, 0, 0) + b"".join(_opt(c, text) for c in (1, 2, 3)) + _opt(9, b"\x09") + _opt(0, b"")
    out = _block(0x0A0D0D0A, shb) + _block(1, idb)
    pad = b"\0" * (-len(FRAME) % 4)
    for t in times:
        head = struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(FRAME), len(FRAME))
        out += _block(6, head + FRAME + pad + _opt(1, text) + _opt(0, b""))
    return out


# What each name must read as, written out here rather than computed by the code under test.
CONTROLS = [
    (b"\x1b[2J\x1b[31mRED", r"\x1b[2J\x1b[31mRED"),
    (b"a\0b", r"a\x00b"),
    (b"line1\nline2\r", r"line1\nline2\r"),
    ("\u202etxt.exe".encode(), r"\u202etxt.exe"),
    (b"c1\xc2\x9bx", r"c1\x9bx"),  # U+009B, the one-byte CSI of 8-bit terminals
]
MARKUP = [
    b"<script>alert(1)</script>",
    b'"><img src=x onerror="document.title=\'pwned\'">',
    b"</style><b>x</b>",
    b"]]><!--",
]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.cells: list[str] = []
        self.title = ""
        self._in: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("td", "title", "script"):
            self._in, self._text = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            text = "".join(self._text)
            {"td": self.cells.append, "script": self.scripts.append}.get(tag, lambda t: None)(text)
            if tag == "title":
                self.title = text
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)


def _report(path: Path, tmp_path: Path, *extra: str) -> tuple[str, _Page]:
    out = tmp_path / "report.html"
    p = run_cli("report", path, "-o", out, "-q", *extra)
    assert p.returncode == 0, p.stderr.decode()
    assert b"Traceback" not in p.stderr
    page = _Page()
    text = out.read_text(encoding="utf-8")
    page.feed(text)
    return text, page


def _only_own_markup(text: str, page: _Page) -> None:
    from burstcore.report import _SCRIPT

    assert page.scripts == [_SCRIPT]
    assert [t for t, _ in page.tags if t in ("script", "style")] == ["style", "script"]
    imgs = [a for t, a in page.tags if t == "img"]
    assert len(imgs) == 4 and all(str(a["src"]).startswith("data:image/png;base64,") for a in imgs)
    assert not [a for _, a in page.tags if any(k.startswith("on") for k in a)]
    assert not [t for t, _ in page.tags if t == "b"]
    # No control character but the page's own line breaks, and no bidirectional override.
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)


@pytest.mark.parametrize("name", MARKUP)
def test_report_escapes_markup_in_capture_strings(tmp_path: Path, name: bytes) -> None:
    cap = tmp_path / "m.pcapng"
    cap.write_bytes(hostile_pcapng(name))
    text, page = _report(cap, tmp_path)
    _only_own_markup(text, page)
    assert f"3 packets, name {name.decode()}" in [c.split("resolution 1e-9, ")[-1] for c in page.cells]


@pytest.mark.parametrize(("name", "shown"), CONTROLS)
def test_report_and_info_show_control_characters_escaped(tmp_path: Path, name: bytes, shown: str) -> None:
    # An ESC printed raw by `info` drives the terminal (here: clears it); in the report it was
    # raw bytes in the page, and U+202E reversed what the cell shows.
    cap = tmp_path / "c.pcapng"
    cap.write_bytes(hostile_pcapng(name))
    text, page = _report(cap, tmp_path)
    _only_own_markup(text, page)
    assert any(c.endswith(f"3 packets, name {shown}") for c in page.cells)
    p = run_cli("info", cap)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out)
    (line,) = [x for x in out.splitlines() if x.startswith("  #0:")]
    assert line.endswith(f"3 packets, name {shown}")


def test_long_and_undecodable_strings(tmp_path: Path) -> None:
    # The longest option (64 KiB) is kept to 256 bytes; bytes that are no UTF-8 show as U+FFFD.
    for name, cell in ((b"X" * 65_532, "X" * 256 + "…"), (b"\xff\xfe(\xc3", "\ufffd\ufffd(\ufffd")):
        cap = tmp_path / "l.pcapng"
        cap.write_bytes(hostile_pcapng(name))
        text, page = _report(cap, tmp_path)
        _only_own_markup(text, page)
        assert any(c.endswith(f"3 packets, name {cell}") for c in page.cells)
        assert len(text) < 400_000


def test_report_in_chromium_runs_no_script_of_the_capture(tmp_path: Path) -> None:
    # The browser's own parser: an injected onerror would have renamed the page.
    name = MARKUP[1] + b"<script>document.title='pwned'</script>"
    cap = tmp_path / "x<y&\"z'.pcapng"
    cap.write_bytes(hostile_pcapng(name))
    out = tmp_path / "r.html"
    assert run_cli("report", cap, "-o", out, "-q").returncode == 0
    dom = _chromium_dom(out, tmp_path)
    page = _Page()
    page.feed(dom)
    assert page.title == "burstcore report: x<y&\"z'.pcapng"
    assert [a["src"][:22] for t, a in page.tags if t == "img"] == ["data:image/png;base64,"] * 4  # type: ignore[index]


def test_file_name_with_controls_is_shown_escaped(tmp_path: Path) -> None:
    cap = tmp_path / "a\x1b[2J<b>&\u202e.pcapng"
    cap.write_bytes(hostile_pcapng(b"eth0"))
    text, page = _report(cap, tmp_path)
    _only_own_markup(text, page)
    assert page.title == r"burstcore report: a\x1b[2J<b>&\u202e.pcapng"
    for command in (["info", cap, cap], ["scan", cap, "--windows", "1ms", "--rates", "1Gbps"]):
        p = run_cli(*command)
        assert p.returncode == 0, p.stderr.decode()
        assert b"\x1b" not in p.stdout and "\u202e".encode() not in p.stdout
        assert rb"a\x1b[2J<b>&\u202e.pcapng" in p.stdout


def _parse_duration(text: str) -> int:
    """'637.714285ms' -> 637714285, an oracle for the report's durations."""
    m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", text)
    assert m, text
    return int(Decimal(m[1]) * {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}[m[2]])


def test_report_shows_the_iteration_period(tmp_path: Path) -> None:
    # 30 bursts of 50 packets, one every 100 ms: the period is 100 ms by construction. The
    # report showed how many iterations, not their period.
    ts = [k * 100_000_000 + j * 10_000 for k in range(30) for j in range(50)]
    cap = tmp_path / "p.pcapng"
    cap.write_bytes(oracles.capture(ts, [len(FRAME)] * len(ts), frames=[FRAME] * len(ts)))
    text, page = _report(cap, tmp_path)
    it = burstcore.iterations(str(cap))
    period = page.cells[page.cells.index("period") + 1]
    assert _parse_duration(period) == it.period_ns == 100_000_000
    assert page.cells[page.cells.index("confidence") + 1] == f"{it.confidence:.3f}"
    # The iterations' rows: counts with separators, the peak in bit/s units (it read 3.5968e+08).
    tables = TablePage()
    tables.feed(text)
    (rows,) = [t["rows"] for t in tables.tables if t["class"] == "iterations"]
    head, first = rows[0], rows[1]  # type: ignore[index]
    want = it.iterations.row(0, named=True)
    assert first[head.index("bytes")] == f"{want['bytes']:,}"
    number, unit = first[head.index("peak rate")].split(" ")
    peak = float(number) * {"kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}[unit]
    assert abs(peak - want["peak_rate_bps"]) <= 5e-4 * want["peak_rate_bps"]
    assert first[head.index("whole")] == ("yes" if want["whole"] else "cut")


def test_units_at_a_boundary_and_past_the_largest() -> None:
    from burstcore._units import format_bytes, format_rate

    # Rounded to 4 digits first: 999,960 bit/s is 1.000 Mbit/s, not "1000 kbit/s".
    assert format_rate(999_960) == "1 Mbit/s"
    assert format_rate(999.96) == "1 kbit/s"
    assert format_rate(999_949) == "999.9 kbit/s"
    assert format_bytes(999_960) == "1 MB"
    assert format_bytes(999.75) == "999.75 B"
    # A thousand bursts stamped at one instant, per µs: digits, not "1.2e+04 Tbit/s".
    assert format_rate(1.2e16) == "12,000 Tbit/s"
    assert format_bytes(1.5e13) == "15,000 GB"
    assert format_rate(8_336_000_000) == "8.336 Gbit/s" and format_bytes(1042) == "1.042 kB"


def test_report_is_the_same_bytes_with_source_date_epoch(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / "g.pcapng")
    pages = []
    for k in range(2):
        out = tmp_path / f"{k}.html"
        p = run_cli_env({"SOURCE_DATE_EPOCH": "86400"}, "report", cap, "-o", out, "-q")
        assert p.returncode == 0, p.stderr.decode()
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]
    assert b"generated 1970-01-02 00:00:00 UTC" in pages[0]
    # Self-contained: nothing the browser would fetch.
    assert b"http://" not in pages[0] and b"https://" not in pages[0]
    assert set(re.findall(rb'(?:src|href)="([a-z]+:)', pages[0])) == {b"data:"}
    p = run_cli_env({"SOURCE_DATE_EPOCH": "yesterday"}, "report", cap, "-o", tmp_path / "bad.html")
    assert p.returncode == 2 and b"SOURCE_DATE_EPOCH='yesterday'" in p.stderr
    assert not (tmp_path / "bad.html").exists()


def run_cli_env(env: dict[str, str], *args: object) -> object:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "burstcore", *map(str, args)],
        capture_output=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )


def _degenerate(kind: str) -> bytes:
    w = burstcore.CaptureWriter("pcapng")
    w.section("little")
    w.interface(linktype=1, snaplen=0, resolution="1e-9")
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=1000)
    times = {
        "empty": [],
        "one": [5],
        "same instant": [7] * 1000,
        "a century": [0, 100 * 365 * 86_400 * 10**9],
        "not IP": [1, 2, 3],
    }[kind]
    for t in times:
        w.epb(0, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\0" * 28 if kind == "not IP" else frame, ts_ns=t)
    return w.getvalue()


@pytest.mark.parametrize("kind", ["empty", "one", "same instant", "a century", "not IP"])
def test_degenerate_captures_report_without_nan(tmp_path: Path, kind: str) -> None:
    cap = tmp_path / "d.pcapng"
    cap.write_bytes(_degenerate(kind))
    text, page = _report(cap, tmp_path, "--by", "all,pair")
    _only_own_markup(text, page)
    assert not [c for c in page.cells if re.search(r"\b(nan|inf)\b", c, re.IGNORECASE)]
    if kind == "a century":
        # ρ = 5.3e-6 bit/s: the rate grid of whole bit/s is one rate, 1 bit/s; the page said
        # "1 mean-rate multiples, 1.05ρ to 50ρ", then "1.89e+05ρ" (1/ρ = 189,155).
        assert "rates: 1 rate, 189,000ρ." in text
    fig = tmp_path / "d.png"
    p = run_cli("plot", cap, "-o", fig, "-q", "--by", "all,pair")
    assert p.returncode == 0 and fig.stat().st_size > 1000, p.stderr.decode()


def test_report_numbers_equal_the_api(tmp_path: Path) -> None:
    # Every number of the summary, envelope and backlog tables against scan's own columns, and
    # the rendered rates and sizes in decimal units (1 kB = 1000 B, rates in bit/s).
    cap = write_capture(tmp_path / "g.pcapng")
    windows, rates = ["1us", "10us", "100us", "1ms"], ["1Mbps", "100Mbps", "1Gbps", "10Gbps"]
    _report(cap, tmp_path, "--windows", ",".join(windows), "--rates", ",".join(rates), "--by", "all,pair")
    api = burstcore.scan(str(cap), windows=windows, rates=rates, by=["all", "pair"])
    units = {"bit/s": 1, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9, "Tbit/s": 1e12, "B": 1, "kB": 1e3, "MB": 1e6}

    def value(text: str) -> float:
        number, unit = text.split(" ")
        return float(number) * units[unit]

    def near(shown: float, exact: float) -> bool:
        return abs(shown - exact) <= 5e-4 * abs(exact)  # 4 significant digits

    tables = TablePage()
    tables.feed((tmp_path / "report.html").read_text(encoding="utf-8"))

    def table(css: str, caption: str) -> list[list[str]]:
        (t,) = [t for t in tables.tables if t["class"] == css and t["caption"] == caption]
        return t["rows"][1:]  # type: ignore[no-any-return]

    s = api.summary.row(0, named=True)
    kv = {r[0]: r[1] for t in tables.tables if t["class"] == "kv" for r in t["rows"]}  # type: ignore[attr-defined]
    rho = s["bytes"] * 8e9 / s["span_ns"]
    assert kv["packets counted"] == f"{s['packets']:,}"
    assert kv["bytes (wire)"] == f"{s['bytes']:,} ({s['bytes'] / 1000:.4g} kB)"
    assert near(value(kv["mean rate ρ"]), rho)
    env = api.envelope.filter(pl.col("by") == "all").sort("window_ns")
    rows = table("envelope", "E(τ) — all: all")
    assert len(rows) == env.height == len(windows)
    for row, e in zip(rows, env.iter_rows(named=True), strict=True):
        assert _parse_duration(row[0]) == e["window_ns"]
        assert int(row[1].replace(",", "")) == e["bytes"] and int(row[2].replace(",", "")) == e["packets"]
        assert near(value(row[3]), e["bytes"] * 8e9 / e["window_ns"])
        assert near(float(row[4]), e["bytes"] * 8e9 / e["window_ns"] / rho)
    backlog = api.backlog.filter(pl.col("by") == "all").sort("rate_bps")
    rows = table("backlog", "B_max(r) — all: all")
    assert len(rows) == backlog.height == len(rates)
    for row, b in zip(rows, backlog.iter_rows(named=True), strict=True):
        assert near(value(row[0]), b["rate_bps"]) and near(float(row[1]), b["rate_bps"] / rho)
        assert abs(float(row[2].replace(",", "")) - b["bmax_bytes"]) <= 0.5
        assert row[3] == ("0 B" if not b["bmax_bytes"] else row[3]) and (
            not b["bmax_bytes"] or near(value(row[3]), b["bmax_bytes"])
        )


@pytest.mark.parametrize("ext", ["svg", "pdf", "png"])
def test_plot_is_the_same_bytes_with_source_date_epoch(tmp_path: Path, ext: str) -> None:
    # matplotlib dates SVG and PDF from SOURCE_DATE_EPOCH itself; the SVG's ids were salted at
    # random, so two SVGs of one capture differed.
    cap = tmp_path / "g.pcapng"
    cap.write_bytes(hostile_pcapng(b"eth0"))
    figures = []
    for k in range(2):
        out = tmp_path / f"{k}.{ext}"
        p = run_cli_env({"SOURCE_DATE_EPOCH": "86400"}, "plot", cap, "-o", out, "-q", "--no-iterations")
        assert p.returncode == 0, p.stderr.decode()
        figures.append(out.read_bytes())
    assert figures[0] == figures[1]
