"""A hostile user's mistakes, on the command line and in the API: each is told what was wrong and
what to do instead, in one line and with a usage exit code, never as an internal error."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

import burstcore
from tests.test_cli import run_cli, write_capture
from tests.test_cli_analyses import one_line_error

# A byte that is not UTF-8, as a terminal in a UTF-8 locale hands it to Python: a lone surrogate.
NOT_UTF8 = os.fsdecode(b"\xff")


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "gen.pcapng")


def test_a_filter_with_a_byte_that_is_not_utf8_is_a_bad_filter_not_an_internal_error(cap: Path) -> None:
    # It reached the core as pyo3's TypeError ("failed to extract enum Filters"): exit 5.
    err = one_line_error(run_cli("scan", cap, "--filter", f"host {NOT_UTF8}"), 2)
    assert "at character 6" in err and "not UTF-8" in err and "host 10.0.0.1" in err
    for call in (
        lambda f: burstcore.scan(cap, filter=f),
        lambda f: burstcore.read_packets(cap, filter=f),
        lambda f: burstcore.info(cap, filter=f),
        lambda f: burstcore.flows([cap, cap], filter=[None, f]),
    ):
        with pytest.raises(ValueError, match=re.escape("at character 6: '\\udcff' is a byte that is not UTF-8")):
            call(f"host {NOT_UTF8}")


def test_a_plot_title_with_a_byte_that_is_not_utf8_is_drawn_not_an_internal_error(cap: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "fig.svg"
    p = run_cli("plot", cap, "-q", "-o", out, "--title", f"run {NOT_UTF8}7", "--no-iterations")
    assert p.returncode == 0, p.stderr.decode()
    assert "run \ufffd7" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("bad", "told"),
    [
        # Refused as "not a rate" with the list of forms: which part was wrong went unsaid.
        ("-5Gbps", "must be > 0"),
        ("-1gbit", "must be > 0"),
        (
            "10gbps",
            "write the prefix in upper case, '10Gbps' (bits per second; tc's '10gbit' is the same); tc "
            "reads 'gbps' as bytes per second: for those write '10GB/s'",
        ),
        ("100mbit/s", "write the prefix in upper case, '100Mbit/s'"),
    ],
)
def test_a_rate_with_a_sign_or_a_lower_case_prefix_is_told_what_to_write(cap: Path, bad: str, told: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"rate={bad!r}")) as e:
        burstcore.parse_rate(bad)
    assert told in str(e.value) and "is not a rate" not in str(e.value)
    err = one_line_error(run_cli("scan", cap, "--rates", bad), 2)
    assert f"argument --rates: {bad!r}" in err and told in err


@pytest.mark.parametrize(("name", "told"), [("page.png", "burstcore plot -o FILE.png"), ("page.CSV", "burstcore scan")])
def test_report_refuses_to_write_its_page_under_another_formats_name(
    cap: Path, tmp_path: Path, name: str, told: str
) -> None:
    # The HTML went into page.png, exit 0.
    out = tmp_path / name
    err = one_line_error(run_cli("report", cap, "-q", "-o", out), 2)
    assert "report writes an HTML page" in err and "in .html" in err and told in err
    assert not out.exists()


@pytest.mark.parametrize("command", [["scan", "--format", "csv"], ["flows"], ["report"]])
def test_an_empty_output_name_is_told_as_empty(cap: Path, command: list[str]) -> None:
    # Was "cannot write 'stdout': Is a directory" (scan --format), "cannot write '': Is a
    # directory" (report, after the whole scan), exit 4.
    err = one_line_error(run_cli(command[0], cap, *command[1:], "-q", "-o", ""), 2)
    assert "-o is empty: give a file name, or '-' for standard output" in err


def test_a_file_whose_name_starts_with_a_dash_is_told_how_to_give_it(cap: Path, tmp_path: Path) -> None:
    # Was "the following arguments are required: FILE", the file given not named.
    (tmp_path / "-x.pcapng").write_bytes(cap.read_bytes())
    err = one_line_error(run_cli("info", "-x.pcapng", cwd=tmp_path), 2)
    assert "'-x.pcapng' is read as an option" in err and "burstcore info -- -x.pcapng" in err and "./-x.pcapng" in err
    for words in (["--", "-x.pcapng"], ["./-x.pcapng"]):
        p = run_cli("info", *words, cwd=tmp_path)
        assert p.returncode == 0, p.stderr.decode()
    # A name with a space argparse reads as a file: it was, and is again (refused as an option).
    (tmp_path / "-my run.pcapng").write_bytes(cap.read_bytes())
    p = run_cli("info", "-my run.pcapng", cwd=tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    # An option is still an option, a file of its name or not.
    (tmp_path / "-q").write_bytes(b"")
    assert run_cli("scan", cap, "-q", "--windows", "1ms", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(
    ("call", "told"),
    [
        (lambda src: burstcore.scan(src, windows="1ms,5ms"), "window='1ms,5ms'"),
        (lambda src: burstcore.scan(src, rates="1Gbps, 10Gbps"), "rate='1Gbps, 10Gbps'"),
        (lambda src: burstcore.scan(src, bins=["1ms,2ms"]), "bin='1ms,2ms'"),
        (lambda src: burstcore.flows(src, windows="1ms,5ms"), "window='1ms,5ms'"),
        (lambda src: burstcore.superpose([src, src], windows="1ms,5ms"), "window='1ms,5ms'"),
        (lambda src: burstcore.scan(src, by="pair,src"), "by='pair,src' is several groupings"),
    ],
)
def test_the_command_lines_comma_separated_list_given_to_the_api_is_told_to_be_a_list(
    cap: Path, call: Any, told: str
) -> None:
    # Was "window='1ms,5ms' is not a duration; give a string with a unit (...)", though each is one.
    with pytest.raises(ValueError, match=re.escape(told)) as e:
        call(cap)
    assert "in one string: give them as a list" in str(e.value) and "is not a" not in str(e.value)
    # A list of them is what it asks for.
    assert burstcore.scan(cap, windows=["1ms", "5ms"], rates=["1Gbps"], by=["pair", "src"]).envelope.height > 0


def test_a_comma_separated_string_with_a_bad_item_is_told_about_that_item(cap: Path) -> None:
    # It was told "window='1ms, 5 parsecs' is not a duration", the bad item unnamed (the command
    # line names it).
    told = "window='1ms, 5 parsecs' is several values in one string: give them as a list, ['1ms', '5 parsecs']; "
    with pytest.raises(ValueError, match=re.escape(told + "of them, window='5 parsecs' is not a duration; give")):
        burstcore.scan(cap, windows="1ms, 5 parsecs")
    # No item of it a duration: told as one value that is none.
    with pytest.raises(ValueError, match=re.escape("window='5x,6y' is not a duration; give")):
        burstcore.scan(cap, windows="5x,6y")


def test_a_bad_bin_origin_is_told_the_words_it_takes_besides_an_instant(cap: Path) -> None:
    # The API's message named them; the command line's gave the instant's forms alone.
    err = one_line_error(run_cli("scan", cap, "--bins", "1ms", "--bin-origin", "yesterday"), 2)
    assert "'yesterday' is not an instant" in err and "or epoch (the default) or start" in err


@pytest.mark.parametrize(
    "words",
    [
        ["scan", "--windows", "1ms", "--windows", "5ms"],
        ["scan", "--bins", "1ms", "--bin", "5ms"],  # --bin: the old name of --bins
        ["scan", "--windows", "1ms", "--wind", "5ms"],  # an abbreviation is the option
        ["sizes", "--quantiles", "0.5", "--quantiles", "0.9"],
    ],
)
def test_a_list_option_given_twice_is_refused_not_cut_to_its_last_list(cap: Path, words: list[str]) -> None:
    # argparse kept the last: '--windows 1ms --windows 5ms' measured 5ms alone, exit 0.
    err = one_line_error(run_cli(words[0], cap, *words[1:]), 2)
    assert "given twice: give all its values in one comma-separated list" in err
    # In one process too, each command line on its own: a second one is not told the first's.
    assert burstcore.cli.main([words[0], str(cap), "-q", "-o", os.devnull, "--format", "csv", *words[1:3]]) == 0


def test_a_value_given_to_a_flag_is_told_the_flag_takes_none(cap: Path) -> None:
    # Was "no such capture file (check the path): '5ms'", no more.
    err = one_line_error(run_cli("superpose", cap, cap, "--random-offsets", "5ms"), 3)
    assert "'5ms'; it follows --random-offsets, which takes no value (the largest is --max-offset 5ms)" in err
    # A missing capture after a flag is only a missing capture.
    err = one_line_error(run_cli("scan", cap, "-q", "2.pcap"), 3)
    assert err.endswith("no such capture file (check the path): '2.pcap'")


def test_iterations_none_found_names_the_range_searched_not_the_one_asked(cap: Path) -> None:
    # The search starts at 2 bins: with --bin 30ms, at 60ms; it said "between 5ms and 2s".
    p = run_cli("iterations", cap, "--bin", "30ms", "-q")
    assert p.returncode == 0, p.stderr.decode()
    assert "none found between 60ms (2 bins) and 2s" in p.stdout.decode()


@pytest.mark.parametrize(
    ("words", "told"),
    [
        (
            ["info", "-o", "i.json"],
            "(-o is an option of scan, plot, report and 8 more, not of info; info writes to "
            "standard output: redirect it, > FILE)",
        ),
        (["info", "--threads=2"], "(--threads is an option of scan, plot and report, not of info)"),
        (["sizes", "--seed", "2"], "(--seed is an option of superpose, not of sizes)"),
    ],
)
def test_an_option_of_another_command_is_told_whose_it_is(cap: Path, words: list[str], told: str) -> None:
    # Was "unrecognized arguments: -o i.json" alone.
    err = one_line_error(run_cli(words[0], cap, *words[1:]), 2)
    assert f"unrecognized arguments: {' '.join(words[1:])} {told}" in err
    # An option of no command is told as before.
    assert "unrecognized arguments: --bogus (see" in one_line_error(run_cli("info", cap, "--bogus"), 2)


def test_a_positive_float_duration_below_half_a_nanosecond_is_told_it_rounds_to_zero(cap: Path) -> None:
    # Was "window=4e-10 must be > 0", of a value above 0.
    with pytest.raises(ValueError, match=re.escape("window=4e-10 (seconds) rounds to 0 ns, and must be > 0")):
        burstcore.scan(cap, windows=[4e-10])
    assert burstcore.parse_duration(6e-10) == 1
    with pytest.raises(ValueError, match=re.escape("window=-1e-10 must be > 0")):
        burstcore.parse_duration(-1e-10, name="window")


def test_superposes_count_of_offsets_is_told_in_good_english(cap: Path) -> None:
    # Was "1 offsets for 2 captures".
    with pytest.raises(ValueError, match=r"^1 offset for 2 captures: give one offset per capture$"):
        burstcore.superpose([cap, cap], offsets=[0])
    with pytest.raises(ValueError, match=r"^2 offsets for 1 capture: "):
        burstcore.superpose([cap], offsets=[0, 1])


def test_an_output_named_for_another_format_than_the_one_asked_is_warned_of(cap: Path, tmp_path: Path) -> None:
    # Written as --format asks, silently, before: CSV in a .json file.
    out = tmp_path / "x.json"
    p = run_cli("scan", cap, "-q", "-o", out, "--format", "csv")
    assert p.returncode == 0
    assert f"warning: -o {out} ends in .json but holds csv, as --format csv asks" in p.stderr.decode()
    assert out.read_text().startswith("by,group,")
    # A name of the same format, or of none burstcore knows, is not.
    for name in ("x.csv", "x.out"):
        p = run_cli("scan", cap, "-q", "-o", tmp_path / name, "--format", "csv")
        assert p.returncode == 0 and p.stderr == b""


@pytest.mark.parametrize(("bad", "meant"), [("5MS", "5ms"), ("1S", "1s"), ("2Min", "2min")])
def test_a_duration_with_its_unit_in_upper_case_is_told_to_write_it_in_lower_case(
    cap: Path, bad: str, meant: str
) -> None:
    # Was "'5MS' is not a duration; give a number with a unit: ns, us, ms, ...".
    with pytest.raises(ValueError, match=re.escape(f"window={bad!r}: write the unit in lower case, {meant!r}")):
        burstcore.scan(cap, windows=[bad])
    err = one_line_error(run_cli("scan", cap, "--windows", bad), 2)
    assert f"argument --windows: {bad!r}: write the unit in lower case, {meant!r}" in err


def test_a_list_option_given_twice_with_the_same_list_is_taken(cap: Path) -> None:
    # Nothing is lost: the command line of test_cli_conventions gives --windows 1ms before and after.
    p = run_cli("scan", cap, "-q", "--windows", "1ms", "--windows", "1ms", "--rates", "1Gbps")
    assert p.returncode == 0, p.stderr.decode()


@pytest.mark.parametrize(
    ("q", "told"),
    [(50, "for percentile 50 give 0.5"), (99.9, "for percentile 99.9 give 0.999"), ("99", "give 0.99")],
)
def test_a_quantile_written_as_a_percentile_is_told_its_fraction(cap: Path, q: Any, told: str) -> None:
    # 'must be a number from 0 to 1' alone, of a value that is most likely a percentile.
    if isinstance(q, str):
        assert told in one_line_error(run_cli("sizes", cap, "--quantiles", f"0.5,{q}"), 2)
        return
    with pytest.raises(ValueError, match=re.escape(told)):
        burstcore.sizes(cap, quantiles=[q])
    with pytest.raises(ValueError, match=r"from 0 to 1 \(0\.5 is the median\)$"):
        burstcore.sizes(cap, quantiles=[250])


def test_one_parser_parses_two_command_lines_with_different_lists() -> None:
    # The lists given are the parse's, not the parser's for ever: a program that builds the
    # parser once (build_parser is public) was refused its second command line's list.
    from burstcore.cli import build_parser
    from burstcore.cli.words import _parse

    parser = build_parser()
    first, _ = _parse(parser, ["scan", "a.pcap", "--windows", "1ms"])
    second, _ = _parse(parser, ["scan", "a.pcap", "--windows", "5ms"])
    assert (first.windows, second.windows) == (["1000000ns"], ["5000000ns"])


@pytest.mark.parametrize("words", [["info", "--", "123"], ["scan", "-oout.csv", "5ms"]])
def test_a_missing_file_after_no_flag_is_not_told_it_follows_one(cap: Path, tmp_path: Path, words: list[str]) -> None:
    # '--' and '-oout.csv' (-o out.csv) were each told "it follows ..., which takes no value".
    err = one_line_error(run_cli(*words, cap, cwd=tmp_path), 3)
    assert err.endswith(f"no such capture file (check the path): {words[-1]!r}")


def test_a_value_starting_with_a_dash_is_told_to_be_joined_to_its_option(cap: Path, tmp_path: Path) -> None:
    # A file of that name being here, it was told to give it after '--', where it is a capture;
    # else argparse said the option "expected one argument".
    (tmp_path / "-results.csv").write_bytes(b"")
    for short in ("-o", "--output"):
        err = one_line_error(run_cli("scan", cap, "-q", short, "-results.csv", cwd=tmp_path), 2)
        assert err.startswith(
            "burstcore scan: error: argument --output: '-results.csv' is read as an option, not as its value: "
            "give it as --output=-results.csv"
        )
    p = run_cli("scan", cap, "-q", "--output=-results.csv", "--format", "csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert (tmp_path / "-results.csv").read_text().startswith("by,group,")
    err = one_line_error(run_cli("plot", cap, "-q", "-o", "f.svg", "--title", "-draft", cwd=tmp_path), 2)
    assert "argument --title: '-draft' is read as an option, not as its value: give it as --title=-draft" in err
    # An option after one is still that option's error, and a negative number a value.
    assert "expected one argument" in one_line_error(run_cli("scan", cap, "-q", "--output", "--json"), 2)
    assert "'-1' is not a positive whole number" in one_line_error(run_cli("flows", cap, "--top", "-1"), 2)


def test_a_percentile_of_a_float_narrower_than_float64_is_told_by_its_digits(cap: Path) -> None:
    # float32's 99.9 is read as 99.9 (as any float32 quantile is), but was told
    # "for percentile 99.9000015258789 give 0.999000015258789".
    import numpy as np

    with pytest.raises(ValueError, match=re.escape("for percentile 99.9 give 0.999") + "$"):
        burstcore.sizes(cap, quantiles=[np.float32(99.9)])


def test_the_public_parsers_own_parse_args_takes_a_second_command_lines_list() -> None:
    # The lists given were kept on the parser (cleared by the command line's own parse alone):
    # build_parser().parse_args of a second command line was refused "--windows given twice".
    from burstcore.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["scan", "a.pcap", "--windows", "1ms"]).windows == ["1000000ns"]
    assert parser.parse_args(["scan", "a.pcap", "--windows", "5ms"]).windows == ["5000000ns"]
    with pytest.raises(SystemExit):
        parser.parse_args(["scan", "a.pcap", "--bins", "5ms", "--bin", "1ms"])
