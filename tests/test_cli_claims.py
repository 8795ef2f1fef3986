"""What the code says about itself, checked against what it does: every command's stated
defaults against its parser and the API, the advice of its errors followed literally, and the
figures its docstrings quote measured again."""

from __future__ import annotations

import argparse
import inspect
import io
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import burstcore
from burstcore import cli
from burstcore._units import DEFAULT_RATE_MULTIPLES
from burstcore.cli import words
from tests import oracles
from tests.conftest import shared_file
from tests.test_cli import BASE, run_cli, write_capture
from tests.test_cli_analyses import ok, one_line_error


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "gen.pcapng")


@pytest.fixture
def many_flows(tmp_path: Path) -> Path:
    """30 flows from 30 hosts to one, a packet each, 1 us apart."""
    frames = [oracles.eth_ipv4_udp(f"10.0.0.{k + 1}", "10.1.0.1", 1000 + k, 2, payload=50) for k in range(30)]
    path = tmp_path / "flows.pcapng"
    path.write_bytes(oracles.capture([BASE + k * 1000 for k in range(30)], [len(f) for f in frames], frames=frames))
    return path


# The API function each command calls, whose keyword defaults an option without a parser default
# takes (the command passes None on, or the API's default itself).
API = {
    "scan": burstcore.scan,
    "plot": burstcore.scan,
    "report": burstcore.scan,
    "flows": burstcore.flows,
    "matrix": burstcore.traffic_matrix,
    "iterations": burstcore.iterations,
    "bursts": burstcore.bursts,
    "sizes": burstcore.sizes,
    "gaps": burstcore.gaps,
    "superpose": burstcore.superpose,
    "shared": burstcore.shared_packets,
}


def _stated_defaults() -> list[tuple[str, argparse.Action, str]]:
    """(command, option, the default its help states) for every '(default: X)' whose X is one word."""
    parser = cli.build_parser()
    found = []
    for name, sub in words._subparsers(parser).items():
        for action in sub._actions:
            for stated in re.findall(r"\(default: ([^ ;)]+)\)", action.help or ""):
                found.append((name, action, stated))
    return found


def _api_default(command: str, keyword: str) -> Any:
    parameter = inspect.signature(API[command]).parameters.get(keyword)
    return None if parameter is None or parameter.default is inspect.Parameter.empty else parameter.default


def test_every_one_word_default_a_help_states_is_the_default_taken() -> None:
    checked = 0
    for name, action, stated in _stated_defaults():
        key = action.dest
        if action.default is not None:
            taken = action.default
        elif _api_default(name, key) is not None:
            taken = _api_default(name, key)
        else:
            continue  # a default the API too leaves to None ("all", "from -o"): no value to compare
        shown = f"{taken:,}" if isinstance(taken, int) and not isinstance(taken, bool) else str(taken)
        assert shown == stated, f"{name} {action.option_strings}: help says {stated}, takes {shown}"
        checked += 1
    # 39: --top of every command, --reorder-horizon of ten, --dpi, --bin, --gap, --seed, ...
    assert checked >= 35


@pytest.mark.parametrize("command", ["scan", "sizes", "gaps", "superpose"])
def test_the_advice_for_by_host_can_be_followed(cap: Path, command: str) -> None:
    # sizes and gaps group by one grouping at a time: "--by src,dst" was advised there too, and
    # refused when given.
    files = [cap, cap] if command == "superpose" else [cap]
    err = one_line_error(run_cli(command, *files, "--by", "host", "-q"), cli.EXIT_USAGE)
    assert "'host' is ambiguous: use src or dst" in err
    for advised in ["src", "dst", *re.findall(r"--by (\S+?)\)", err)]:
        ok(run_cli(command, *files, "--by", advised, "--format", "json", "-o", "-", "-q"))


def _no_api_keywords(err: str) -> None:
    """A message on the command line names options, not the API's keyword arguments."""
    assert not re.search(r"\b[a-z_]+=", err), err


def test_the_matrix_limit_names_the_options_to_give(many_flows: Path) -> None:
    err = one_line_error(run_cli("matrix", many_flows, "--max-pairs", "10", "-q"), cli.EXIT_CAPTURE)
    assert "raise --max-pairs" in err and "read fewer packets (--start/--end, --filter)" in err
    _no_api_keywords(err)
    ok(run_cli("matrix", many_flows, "--max-pairs", "30", "-q"))
    ok(run_cli("matrix", many_flows, "--max-pairs", "10", "--filter", "src net 10.0.0.0/29", "-q"))


def test_the_flow_limit_advises_a_longer_idle_timeout_only_when_one_was_given(many_flows: Path, tmp_path: Path) -> None:
    # Without --idle-timeout every key is one flow already: a timeout of any length makes more.
    err = one_line_error(run_cli("flows", many_flows, "--max-flows", "10", "-q"), cli.EXIT_CAPTURE)
    assert "idle" not in err and "raise --max-flows" in err and "(--start/--end, --filter)" in err
    _no_api_keywords(err)
    # One key, a packet every 1 us: an idle timeout of 500 ns splits it into 20 flows, and the
    # longer one advised makes it one again.
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=50)] * 20
    one_key = tmp_path / "one_key.pcapng"
    one_key.write_bytes(oracles.capture([BASE + k * 1000 for k in range(20)], [len(frames[0])] * 20, frames=frames))
    err = one_line_error(
        run_cli("flows", one_key, "--max-flows", "10", "--idle-timeout", "500ns", "-q"), cli.EXIT_CAPTURE
    )
    assert "or a longer --idle-timeout" in err
    _no_api_keywords(err)
    ok(run_cli("flows", one_key, "--max-flows", "10", "--idle-timeout", "1us", "-q"))


def _rates_scanned(monkeypatch: pytest.MonkeyPatch, argv: list[str], stdin: bytes | None = None) -> list[float]:
    """The rates (as multiples of the mean) the figure commands' scan measured B_max at."""
    seen: list[Any] = []
    scan = burstcore.scan

    def spy(source: Any, **kw: Any) -> Any:
        result = scan(source, **kw)
        seen.append(result)
        return result

    monkeypatch.setattr(burstcore, "scan", spy)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert cli.main([*argv, "-q", "--no-iterations"]) == 0
    (result,) = seen
    return result.backlog["rate_over_mean"].to_list()


@pytest.mark.parametrize("command", ["plot", "report"])
def test_the_figures_default_rates_are_those_their_help_states(
    cap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    out = str(tmp_path / ("f.png" if command == "plot" else "f.html"))
    help_text = " ".join(words._subparsers(cli.build_parser())[command].format_help().split())
    assert "24 multiples of the mean rate, 1.05 to 50" in help_text
    # stdin is read into memory first, so it gets the fine grid as a file does: the link speeds
    # were promised for it.
    for argv, stdin in (([command, str(cap), "-o", out], None), ([command, "-", "-o", out], cap.read_bytes())):
        rates = _rates_scanned(monkeypatch, argv, stdin)
        assert len(rates) == 24 and rates[0] == pytest.approx(1.05, rel=1e-6) and rates[-1] == pytest.approx(50)
    assert "stdin" not in help_text.split("--rates LIST")[1].split("--bins")[0]
    # A filter, a stretch or another size: the scan's own default, over what is measured.
    assert "with --filter, --start, --end or a --size other than wire, the mean rate of what is measured " in (
        help_text
    )
    # report chooses its rates through the same function as plot (`_scan_for_figures`): one case.
    extras = [["--filter", "src host 10.0.0.1"], ["--start", str(BASE + 5_000_000)], ["--size", "ip"]]
    for extra in extras if command == "plot" else extras[:1]:
        monkeypatch.undo()
        rates = _rates_scanned(monkeypatch, [command, str(cap), "-o", out, *extra])
        assert rates == pytest.approx(DEFAULT_RATE_MULTIPLES, rel=1e-5), extra


def test_the_lateness_the_scan_docstring_quotes_is_the_shipped_captures(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # "the shipped bridge captures step back up to ~N µs": it said ~74, the captures' README's
    # figure, where they step back by at most 55.6 µs.
    (stated,) = re.findall(r"shipped bridge captures step back up to ~(\d+) µs", burstcore.scan.__doc__ or "")
    most = 0
    for name in ("a_ring4_mlp5m_1g_bridge.pcapng.zst", "b_ps4_mlp5m_1g_bridge.pcapng.zst"):
        r = burstcore.scan(shared_file(f"captures/{name}"), windows=["1ms"], rates=["1Gbps"])
        most = max(most, r.summary["max_lateness_ns"][0])
    assert round(most / 1000) == int(stated)


def test_the_confidence_of_a_period_in_noise_is_as_the_help_states() -> None:
    # "a confidence from 0 (noise) ...: below about 0.05 treat it as a guess": Poisson arrivals,
    # which have no period, score above 0.05; what tells their period apart is the doubts.
    help_text = " ".join(words._subparsers(cli.build_parser())["iterations"].format_help().split())
    assert "0 (noise)" not in help_text
    lo, hi = map(float, re.findall(r"no period at all \(Poisson arrivals\) scores ([\d.]+)-([\d.]+)", help_text)[0])
    assert lo < 0.05 < hi
    above = 0
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        ts = (BASE + np.cumsum(rng.exponential(200_000, 20_000))).astype(np.int64).tolist()
        with pytest.warns(burstcore.CaptureWarning):
            it = burstcore.iterations(oracles.capture(ts, [1000] * len(ts)))
        assert it.period_ns is not None and lo <= it.confidence <= hi and it.period_doubts
        above += it.confidence > 0.05
    assert above == 2


def test_the_bytes_a_packet_limits_md_gives_timestamp_and_wire_len_are_theirs() -> None:
    # docs/limits.md said 16; the two columns hold 8 and 4 bytes a packet (12.0 held after a
    # read of 4 M packets, 13.0 on two threads).
    text = " ".join((Path(__file__).parents[1] / "docs" / "limits.md").read_text().split())
    (stated,) = re.findall(r"\((\d+) for `timestamp` and `wire_len` alone", text)
    frames = [oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=50)] * 1000
    data = oracles.capture([BASE + k * 1000 for k in range(1000)], [len(frames[0])] * 1000, frames=frames)
    df = burstcore.read_packets(data, columns=["timestamp", "wire_len"])
    assert df.estimated_size() / df.height == int(stated)


def test_a_doubted_period_never_advises_a_min_period_already_given() -> None:
    # On d's 45 ms job, a search from 7.5 ms (bin 3.75 ms) found iterations 3.75 ms apart, and
    # the warnings advised "give min_period= above 3.75ms": what had been given.
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    for bin_, lo in (("3.75ms", "7.5ms"), ("1ms", "5ms")):
        with pytest.warns(burstcore.CaptureWarning):
            it = burstcore.iterations(path, bin=bin_, min_period=lo, max_period="15ms")
        assert it.period_ns is not None and it.period_ns < burstcore.parse_duration(lo) and it.period_doubts
        for doubt in it.period_doubts:
            for advised in re.findall(r"min_period= above (\d[^\s;,)]*)", doubt):
                assert burstcore.parse_duration(advised) >= burstcore.parse_duration(lo), doubt
        assert any(f"closer than the min_period given, {lo}" in d for d in it.period_doubts)


def test_iterations_do_not_overlap() -> None:
    # Each iteration ends where the next segment starts ("end (start of the next segment)"). A
    # segment dropped between two kept ones, busy all through, was taken by both: on d's 45 ms
    # job searched from 7.5 to 15 ms in bins of 3.75 ms, iteration 2 started 7.5 ms before
    # iteration 1 ended.
    path = shared_file("captures/d_ring2_resnetsmall_noshape_bridge.pcapng")
    for bin_, lo, hi in (("3.75ms", "7.5ms", "15ms"), ("1ms", "5ms", "15ms"), ("1ms", "5ms", "2s")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            its = burstcore.iterations(path, bin=bin_, min_period=lo, max_period=hi).iterations
        starts, ends = its["start_ns"].to_list(), its["end_ns"].to_list()
        assert all(s < e for s, e in zip(starts, ends, strict=True)), (bin_, lo, hi)
        assert all(e <= s for e, s in zip(ends, starts[1:], strict=False)), (bin_, lo, hi, starts, ends)
