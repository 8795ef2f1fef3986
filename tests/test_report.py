"""The HTML report opened in headless Chromium: every embedded figure decoded, the tables are
there and carry the API's numbers, and nothing is fetched from outside the file."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

import burstcore
from tests.test_cli import run_cli, shared_path, write_capture


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[dict[str, str | None]] = []
        self.tables: list[dict[str, object]] = []
        self.links: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        for k in ("src", "href"):
            if tag != "img" and a.get(k):
                self.links.append(str(a[k]))
        if tag == "table":
            self.tables.append({"class": a.get("class") or "", "caption": "", "rows": []})
        elif tag == "caption":
            self._caption = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)  # type: ignore[attr-defined]
            self._row = None
        elif tag == "caption" and self._caption is not None:
            self.tables[-1]["caption"] = "".join(self._caption)
            self._caption = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)


def _chromium_dom(page: Path, tmp_path: Path) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed; bash .ci/setup installs Debian's chromium")
    p = subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return p.stdout.decode()


def _check_page(dom: str) -> _Page:
    page = _Page()
    page.feed(dom)
    assert len(page.imgs) == 4
    for img in page.imgs:
        assert str(img["src"]).startswith("data:image/png;base64,")
        # Written by the page's own script after load: 0 would mean the image did not decode.
        assert int(str(img.get("data-natural-width"))) > 100, img.get("alt")
    assert not [u for u in page.links if not u.startswith(("data:", "#"))]  # self-contained
    classes = [t["class"] for t in page.tables]
    for needed in ("kv", "envelope", "backlog"):
        assert needed in classes, classes
    return page


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / "gen.pcapng")
    out = tmp_path / "report.html"
    p = run_cli("report", cap, "-o", out, "--windows", "1us,10us,5ms", "--rates", "1Gbps,10Gbps", "--by", "all,pair")
    assert p.returncode == 0, p.stderr
    page = _check_page(_chromium_dom(out, tmp_path))
    api = burstcore.scan(str(cap), windows=["1us", "10us", "5ms"], rates=["1Gbps", "10Gbps"], by=["all", "pair"])
    env = next(t for t in page.tables if t["class"] == "envelope" and "all: all" in str(t["caption"]))
    rows = env["rows"][1:]  # type: ignore[index]
    expect = api.envelope.filter(pl.col("by") == "all").sort("window_ns")
    assert [int(r[1].replace(",", "")) for r in rows] == expect["bytes"].to_list()
    assert [int(r[2].replace(",", "")) for r in rows] == expect["packets"].to_list()
    pair_tables = [t for t in page.tables if t["class"] == "envelope" and "pair:" in str(t["caption"])]
    assert len(pair_tables) == api.groups.filter(pl.col("by") == "pair").height
    kv = {r[0]: r[1] for t in page.tables if t["class"] == "kv" for r in t["rows"]}  # type: ignore[attr-defined]
    assert kv["packets"] == f"{burstcore.info(str(cap)).packets:,}"


def test_report_of_shared_capture(tmp_path: Path) -> None:
    out = tmp_path / "d.html"
    p = run_cli("report", shared_path(), "-o", out)
    assert p.returncode == 0, p.stderr
    page = _check_page(_chromium_dom(out, tmp_path))
    kv = {r[0]: r[1] for t in page.tables if t["class"] == "kv" for r in t["rows"]}  # type: ignore[attr-defined]
    assert kv["packets"] == "36,932"  # the capture's README
    assert out.stat().st_size < 2_000_000  # small enough to mail


def test_series_summary_counts_every_bin_dense_or_sparse() -> None:
    # Packets at 1, 5 and 100 ns in 10 ns bins: bins 0..10, 2 busy, 1,610 bytes. A sparse series
    # (no rows for empty bins, as past 20 M rows) gives the same summary as a dense one.
    from burstcore.report import series_table
    from tests import oracles

    data = oracles.capture([1, 5, 100], [1500, 100, 10])
    want = ["all: all", "10ns", "11", f"{100 * 9 / 11:.1f}%", "1.28 Tbit/s", "117.1 Gbit/s"]
    for fill in (True, False):
        r = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], bins=["10ns"], fill_empty_bins=fill)
        assert r.series.height == (11 if fill else 2)
        assert series_table(r)[1] == [want], fill


def test_series_summary_keeps_to_the_top_groups() -> None:
    # A report by flow had a series row per flow (142 MB of HTML for 1 M flows) while every
    # other table keeps to --top.
    from burstcore.report import series_table
    from tests import oracles

    frames = [oracles.eth_ipv4_udp("10.0.0.1", f"10.0.0.{d}", 1, 2) for d in (2, 3, 3, 4, 4, 4)]
    data = oracles.capture([10, 20, 30, 40, 50, 60], [100] * 6, frames=frames)
    r = burstcore.scan(data, windows=["1ms"], rates=["1Gbps"], bins=["10ns"], by=["all", "pair"])
    assert len(series_table(r)[1]) == 4
    assert [row[0] for row in series_table(r, top=1)[1]] == ["all: all", "pair: 10.0.0.1>10.0.0.4"]
    assert [row[0] for row in series_table(r, top=2)[1]] == [
        "all: all",
        "pair: 10.0.0.1>10.0.0.3",
        "pair: 10.0.0.1>10.0.0.4",
    ]
