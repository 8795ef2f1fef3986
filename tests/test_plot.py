"""Figures: each panel rendered, its axes scales and labelled units, and the plotted points equal
the result frames (and, for E(τ), the brute-force envelope)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

import burstcore
from burstcore import cli
from burstcore.plot import PANELS, plot_result, plot_results
from tests import oracles
from tests.test_cli import run_cli, shared_path, training_like, write_capture

WINDOWS = ["1us", "10us", "100us", "1ms", "5ms"]
RATES = ["500Mbps", "1Gbps", "2Gbps", "10Gbps"]
UNITS = re.compile(r"\((s|bytes|bit/s|ratio)\)$")


@pytest.fixture(scope="module")
def result() -> burstcore.ScanResult:
    ts, frames = training_like()
    data = oracles.capture(ts, [len(f) for f in frames], frames=frames)
    return burstcore.scan(data, windows=WINDOWS, rates=RATES, bins=["1ms"], by=["all", "pair"])


def _data_lines(ax):  # type: ignore[no-untyped-def]
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def _axes(fig: Figure) -> dict[str, object]:
    return {panel: ax for panel, ax in zip(PANELS, fig.axes, strict=False)}


def test_panels_scales_labels_units(result: burstcore.ScanResult) -> None:
    fig = result.plot()
    assert isinstance(fig, Figure)
    ax = _axes(fig)
    for panel in ("envelope", "ptm", "backlog"):
        assert ax[panel].get_xscale() == "log" and ax[panel].get_yscale() == "log", panel  # type: ignore[attr-defined]
    assert ax["series"].get_xscale() == "linear"  # type: ignore[attr-defined]
    for panel, a in ax.items():
        assert UNITS.search(a.get_xlabel()), (panel, a.get_xlabel())  # type: ignore[attr-defined]
        assert UNITS.search(a.get_ylabel()), (panel, a.get_ylabel())  # type: ignore[attr-defined]
        assert a.get_title()  # type: ignore[attr-defined]
    assert "τ" in ax["envelope"].get_xlabel() and "bit/s" in ax["backlog"].get_xlabel()  # type: ignore[attr-defined]
    for fmt, magic in (("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")):
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        assert buf.getvalue().startswith(magic)


def test_envelope_and_ptm_data_equal_frames_and_brute_force(result: burstcore.ScanResult) -> None:
    ts, frames = training_like()
    sizes = [len(f) for f in frames]
    ax = _axes(result.plot(by="all"))
    (env_line,) = _data_lines(ax["envelope"])
    expect = result.envelope.filter(pl.col("by") == "all").sort("window_ns")
    np.testing.assert_allclose(env_line.get_xdata(), expect["window_ns"].to_numpy() / 1e9, rtol=1e-15)
    np.testing.assert_array_equal(env_line.get_ydata(), expect["bytes"].to_numpy())
    brute = [oracles.envelope(ts, sizes, burstcore.parse_duration(w))[0] for w in WINDOWS]
    assert list(env_line.get_ydata()) == brute
    (ptm_line,) = _data_lines(ax["ptm"])
    np.testing.assert_allclose(ptm_line.get_ydata(), expect["ptm"].to_numpy(), rtol=0)
    # PtM(τ) = E(τ)/(ρ·τ) with ρ over the span, from first principles.
    rho = sum(sizes) / ((max(ts) - min(ts)) / 1e9)
    np.testing.assert_allclose(ptm_line.get_ydata(), np.array(brute) / (rho * expect["window_ns"].to_numpy() / 1e9))


def test_backlog_and_series_data_equal_frames(result: burstcore.ScanResult) -> None:
    ax = _axes(result.plot(by="all"))
    (bl_line,) = _data_lines(ax["backlog"])
    bl = result.backlog.filter((pl.col("by") == "all") & (pl.col("bmax_bytes") > 0)).sort("rate_bps")
    np.testing.assert_array_equal(bl_line.get_xdata(), bl["rate_bps"].cast(pl.Float64).to_numpy())
    np.testing.assert_array_equal(bl_line.get_ydata(), bl["bmax_bytes"].to_numpy())
    (se_line,) = _data_lines(ax["series"])
    se = result.series.filter(pl.col("by") == "all").sort("start_ns")
    first = min(training_like()[0])
    np.testing.assert_allclose(se_line.get_xdata(), (se["start_ns"].to_numpy() - first) / 1e9, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(se_line.get_ydata(), se["rate_bps"].to_numpy())
    # Throughput of a bin = 8·bytes/Δ, checked against the brute-force bins.
    ts, frames = training_like()
    bins = oracles.binned(ts, [len(f) for f in frames], 1_000_000)
    got = dict(zip(se["start_ns"].to_list(), se_line.get_ydata(), strict=True))
    for start, (b, _) in bins.items():
        assert got[start] == pytest.approx(8 * b / 1e-3)


def test_groups_get_a_line_each(result: burstcore.ScanResult) -> None:
    ax = _axes(result.plot(by="pair"))
    pairs = result.groups.filter(pl.col("by") == "pair")
    lines = {ln.get_label(): ln for ln in _data_lines(ax["envelope"])}
    assert set(lines) == set(pairs["group"])
    for g, ln in lines.items():
        e = result.envelope.filter((pl.col("by") == "pair") & (pl.col("group") == g)).sort("window_ns")
        np.testing.assert_array_equal(ln.get_ydata(), e["bytes"].to_numpy())
    assert len(_data_lines(_axes(result.plot(by="pair", max_groups=1))["envelope"])) == 1


def test_iterations_marked_on_throughput(result: burstcore.ScanResult) -> None:
    first = min(training_like()[0])
    starts = [first + k * 10_000_000 for k in range(6)]
    iters = pl.DataFrame(
        {"start": starts, "end": [s + 2_000_000 for s in starts]}, schema={"start": pl.Int64, "end": pl.Int64}
    ).with_columns(pl.all().cast(pl.Datetime("ns", "UTC")))
    ax = _axes(plot_result(result, iterations=iters))["series"]
    (coll,) = [c for c in ax.collections if c.get_label().startswith("iterations")]  # type: ignore[attr-defined]
    assert coll.get_label() == "iterations (6)"
    spans = sorted((p.vertices[:, 0].min(), p.vertices[:, 0].max()) for p in coll.get_paths())
    np.testing.assert_allclose(spans, [(k * 0.01, k * 0.01 + 0.002) for k in range(6)], atol=1e-12)


def test_overlay_of_several_results(tmp_path: Path) -> None:
    a = burstcore.scan(str(write_capture(tmp_path / "a.pcapng", n_iter=3)), windows=WINDOWS, rates=RATES, bins="1ms")
    b = burstcore.scan(
        str(write_capture(tmp_path / "b.pcapng", n_iter=6, per_burst=80)), windows=WINDOWS, rates=RATES, bins="1ms"
    )
    fig = plot_results([("a", a), ("b", b)])
    for panel, ax in _axes(fig).items():
        labels = [ln.get_label() for ln in _data_lines(ax)]
        assert labels == ["a", "b"], panel
        assert ax.get_legend() is not None  # type: ignore[attr-defined]
    la, lb = _data_lines(_axes(fig)["envelope"])
    assert list(la.get_ydata()) == a.envelope["bytes"].to_list()
    assert list(lb.get_ydata()) == b.envelope["bytes"].to_list()
    assert la.get_color() != lb.get_color()


def test_missing_series_says_how_to_get_it() -> None:
    ts, frames = training_like(n_iter=2)
    r = burstcore.scan(oracles.capture(ts, [len(f) for f in frames], frames=frames), windows=WINDOWS, rates=RATES)
    ax = _axes(r.plot())["series"]
    assert not _data_lines(ax)
    assert any("bins=" in t.get_text() for t in ax.texts)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="panels"):
        r.plot(panels=["pie"])


@pytest.mark.parametrize("ext,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_cli_plot_writes_each_format(tmp_path: Path, ext: str, magic: bytes) -> None:
    cap = write_capture(tmp_path / "c.pcapng")
    out = tmp_path / f"fig{ext}"
    p = run_cli("plot", cap, cap, "-o", out, "--windows", "1us,1ms", "--rates", "1Gbps")
    assert p.returncode == 0, p.stderr
    assert out.read_bytes().startswith(magic)


def test_cli_plot_shared_capture(tmp_path: Path) -> None:
    out = tmp_path / "d.png"
    p = run_cli("plot", shared_path(), "-o", out)
    assert p.returncode == 0, p.stderr
    from matplotlib.image import imread

    img = imread(out)
    assert img.shape[0] > 400 and img.shape[1] > 800
    assert img[..., :3].std() > 0.05  # something was drawn


def test_what_was_not_scanned_is_refused_not_drawn_empty() -> None:
    base = 1_700_000_000_000_000_000
    data = oracles.capture([base, base + 1000, base + 5000], [100, 200, 300])
    r = burstcore.scan(data, windows=["1us"], rates=["1Gbps"], bins=["1us", "10us"], by=["all"])
    with pytest.raises(ValueError, match="by='pair' was not scanned; the scan's groupings: all"):
        r.plot(by="pair")
    with pytest.raises(ValueError, match="bin='5us' was not scanned; the scan's bin widths: 1us, 10us"):
        r.plot(bin="5us")
    fig = r.plot(panels="ptm", bin="10us")  # one panel by name, not its letters
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 1


def test_dollar_signs_in_names_and_titles_are_drawn_as_written(result: burstcore.ScanResult) -> None:
    # A file named cost_$x^$.pcapng or a title '$\frac$' failed the drawing (mathtext), after
    # the whole scan.
    import io

    fig = plot_results([("cost_$x^$.pcapng", result), ("b$", result)], title=r"$\frac$ run")
    fig.savefig(io.BytesIO(), format="png")
    # Figure.get_suptitle is matplotlib 3.8+; on 3.7 (the plot extra's floor) too, the suptitle
    # is one of the figure's texts.
    assert r"\$\frac\$ run" in [t.get_text() for t in fig.texts]
    labels = [ln.get_label() for ln in _data_lines(_axes(fig)["envelope"])]
    assert labels == [r"cost_\$x^\$.pcapng", r"b\$"]


def test_bytes_that_are_no_utf8_in_names_and_titles_are_drawn_as_replacement_characters(
    result: burstcore.ScanResult,
) -> None:
    # Python keeps a byte of a file name or an argument that is no UTF-8 as a lone surrogate;
    # matplotlib's text layout raised TypeError on it, after the whole scan.
    import io

    fig = plot_results([("run\udcff.pcapng", result), ("b", result)], title="a\udcffb")
    fig.savefig(io.BytesIO(), format="png")
    assert "a\ufffdb" in [t.get_text() for t in fig.texts]
    labels = [ln.get_label() for ln in _data_lines(_axes(fig)["envelope"])]
    assert labels == ["run\ufffd.pcapng", "b"]
    fig = result.plot(title="a\udcffb")
    fig.savefig(io.BytesIO(), format="png")
    # A surrogate that stands for no byte (half a pair, as JSON's "\ud83d" decodes) raised
    # UnicodeEncodeError.
    fig = plot_results([("run\ud83d", result), ("b", result)], title="a\ud83db\udc00")
    fig.savefig(io.BytesIO(), format="png")
    assert "a\ufffdb\ufffd" in [t.get_text() for t in fig.texts]
    assert [ln.get_label() for ln in _data_lines(_axes(fig)["envelope"])] == ["run\ufffd", "b"]


def test_without_matplotlib_the_extra_to_install_is_named(tmp_path: Path) -> None:
    # plot and report without matplotlib said "internal error" (exit 5), and only after the scan;
    # ScanResult.plot() raised a bare ModuleNotFoundError.
    cap = write_capture(tmp_path / "t.pcapng")
    hide = "import sys; sys.modules['matplotlib'] = None; "
    for command in (
        ["plot", str(cap), "-o", str(tmp_path / "f.png")],
        ["report", str(cap), "-o", str(tmp_path / "r.html")],
    ):
        p = subprocess.run(
            [sys.executable, "-c", hide + f"from burstcore.cli import main; sys.exit(main({command!r}))"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert p.returncode == cli.EXIT_USAGE, (command, p.stderr)
        assert b"pip install 'burstcore[plot]'" in p.stderr and b"internal error" not in p.stderr, p.stderr
        assert not list(tmp_path.glob("f.png")) and not list(tmp_path.glob("r.html"))
    code = hide + "import burstcore; burstcore.scan(sys.argv[1], windows=['1ms'], rates=['1Gbps']).plot()"
    p = subprocess.run([sys.executable, "-c", code, str(cap)], capture_output=True, timeout=120, check=False)
    assert p.returncode == 1 and b"ImportError: figures need matplotlib" in p.stderr, p.stderr
