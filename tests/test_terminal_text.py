"""What the command line and the report print for people to read: names chosen by whoever made a
file shown escaped wherever they appear, counts with their noun in the right number, captures
without a mean rate saying why, instants that say they are UTC, and numbers without exponents.

Every expected string is written out here by hand, not taken from burstcore's output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import oracles
from tests.test_cli import run_cli, write_capture
from tests.test_report import _Page as TablePage
from tests.test_report_hostile import _report

# A name that clears the screen, breaks the line and reverses what follows it.
HOSTILE = "a\x1b[2Jb\nc\u202ed.pcapng"
# How it must read: Python's own escapes, written out by hand.
ESCAPED = r"a\x1b[2Jb\nc\u202ed.pcapng"
# Anything that must not reach a terminal raw: C0 controls but the line break, DEL, C1 controls,
# bidirectional overrides and isolates.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _clean(text: str) -> None:
    assert not RAW.search(text), text


def _lines_clean(text: str) -> None:
    """No raw control character, and no line broken by the name's newline: a line that starts
    with 'c' would be the name's second half."""
    _clean(text)
    assert not [x for x in text.splitlines() if x.startswith("c\u202e") or x.startswith("c\\u202e")], text


def _truncated(path: Path) -> Path:
    """A capture cut off mid-block: read, with a warning naming it."""
    good = write_capture(path.with_name("whole.pcapng"))
    path.write_bytes(good.read_bytes()[:-37])
    good.unlink()
    return path


def _run(*args: object) -> tuple[int, str, str]:
    p = run_cli(*args)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def test_warnings_of_one_of_several_files_name_it_escaped(tmp_path: Path) -> None:
    # info and scan --each tell each file's warnings prefixed with its name; a merged scan's
    # warnings name it inside ("... at byte offset N of NAME", "captures 1 (NAME) and 2 ...").
    cap = _truncated(tmp_path / HOSTILE)
    other = write_capture(tmp_path / "ok.pcapng")
    for command in (["info", "-q"], ["scan", "-q", "--each", "--windows", "1ms", "--rates", "1Gbps"]):
        code, out, err = _run(*command, cap, other)
        assert code == 0, err
        _lines_clean(out + err)
        assert f"warning: {tmp_path}/{ESCAPED}: capture ends inside" in err, err
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap, other)
    assert code == 0, err
    _lines_clean(out + err)
    assert f"captures 1 ({tmp_path}/{ESCAPED}) and 2 ({other})" in err
    assert err.count(f"of {tmp_path}/{ESCAPED}") == 1


@pytest.mark.parametrize("command", ["info", "scan", "flows", "iterations", "superpose"])
def test_a_file_that_is_no_capture_is_named_escaped(tmp_path: Path, command: str) -> None:
    bad = tmp_path / HOSTILE
    bad.write_bytes(b"not a capture, only text....")
    other = write_capture(tmp_path / "ok.pcapng")
    code, out, err = _run(command, "-q", bad, other)
    assert code == 1
    _lines_clean(out + err)
    assert f"burstcore {command}: error: cannot read the capture " in err
    assert f"{ESCAPED}: not a pcap or pcapng file" in err
    if command == "info":
        # info goes on with the other file, and lists the one it could not read on stdout too.
        assert f"== {tmp_path}/{ESCAPED}\nerror: cannot read the capture {tmp_path}/{ESCAPED}: not a pcap" in out


def test_file_names_in_tables_and_notices_are_escaped(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / HOSTILE)
    # shared: the captures' line, the table of captures, and the advice naming a file given twice.
    code, out, err = _run("shared", "-q", cap, cap)
    assert code == 0, err
    _lines_clean(out + err)
    assert f"== 2 captures: {tmp_path}/{ESCAPED}, {tmp_path}/{ESCAPED}" in out
    assert f"are the same file ({tmp_path}/{ESCAPED}): give it once" in out
    assert out.count(f"  {tmp_path}/{ESCAPED}  ") == 2
    # superpose: the offsets table names each capture.
    code, out, err = _run("superpose", "-q", "--windows", "1ms", "--rates", "1Gbps", cap, cap)
    assert code == 0, err
    _lines_clean(out + err)
    assert f"1: {tmp_path}/{ESCAPED}" in out and f"2: {tmp_path}/{ESCAPED}" in out
    # report and plot: "wrote NAME" on stderr.
    for command, ext in (("report", ".html"), ("plot", ".png")):
        target = tmp_path / f"out\x1b[2J\u202e{ext}"
        code, out, err = _run(command, "--no-iterations", "--windows", "1ms", cap, "-o", target)
        assert code == 0, err
        _lines_clean(out + err)
        assert f"wrote {tmp_path}/out\\x1b[2J\\u202e{ext}" in err


def test_what_was_typed_is_echoed_escaped(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / "ok.pcapng")
    # A filter with a line break in it is valid (whitespace), and the summary echoes it.
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap, "--filter", "udp\nor tcp")
    assert code == 0, err
    _lines_clean(out + err)
    assert re.search(r"^  filter +udp\\nor tcp$", out, re.MULTILINE), out
    # An argument argparse does not know is quoted back in its error.
    code, out, err = _run("scan", "-q", cap, "--x\x1b[2J\u202e")
    assert code == 2
    _clean(err)
    assert "unrecognized arguments: --x\\x1b[2J\\u202e (see 'burstcore scan --help')" in err


FRAME = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=100)


def test_one_of_a_thing_is_no_things(tmp_path: Path) -> None:
    # Four packets, the third 1 µs earlier than the second (one out of order), the second
    # 9,000 bytes on the wire (one frame over the Ethernet MTU).
    cap = tmp_path / "o.pcapng"
    cap.write_bytes(oracles.capture([1_000, 3_000, 2_000, 4_000], [142, 9_000, 142, 142], frames=[FRAME] * 4))
    code, out, err = _run("info", cap)
    assert code == 0, err
    assert "\nOut of order:        1 packet (largest step back 1us)\n" in out
    assert "\nOver link MTU:       1 frame (max 9,000 B)  <- jumbo frames, or a host's TSO/GRO offload" in out
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap)
    assert code == 0, err
    assert re.search(
        r"^  reordered +1 packet came after a later one and was put in order \(largest lateness 1us\)$", out, re.M
    )
    _, page = _report(cap, tmp_path)
    assert "1 packet earlier than the one just before it in the file (largest step back 1us)" in page.cells
    assert "1 packet came after a later one and was put in order (largest lateness 1us)" in page.cells
    one = tmp_path / "1.pcapng"
    one.write_bytes(oracles.capture([5], [142], frames=[FRAME]))
    code, out, err = _run("info", one)
    assert code == 0, err
    assert "  #0: ETHERNET (1), snaplen 0, resolution 1e-9, 1 packet\n" in out
    _, page = _report(one, tmp_path)
    assert [c for c in page.cells if c.endswith("resolution 1e-9, 1 packet")], page.cells


def test_one_capture_apart_from_the_others_overlaps(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / "t.pcapng")
    code, _, err = _run(
        "superpose", "-q", "--windows", "1ms", "--rates", "1Gbps", cap, cap, cap, "--offsets", "0,0,10s"
    )
    assert code == 0, err
    assert "warning: 1 of the 3 captures overlaps no other in time after their offsets" in err, err


# What each capture without a mean rate must say about it, in info (and the report's Capture
# table), and in scan's summary (and the report's Scan accounting), which adds what else is
# missing for want of a mean rate.
NO_RATE = {
    (): ("none (no packets)", "none (no packets)", "none (no packets)", "none (no packets)"),
    (5,): (
        "0ns (one instant)",
        "none (a single packet: no span to average over)",
        "0ns (one instant)",
        "none (a single packet: no span to average over, so no PtM(τ) or r/ρ either)",
    ),
    (7, 7, 7): (
        "0ns (one instant)",
        "none (all 3 packets at one instant: no span to average over)",
        "0ns (one instant)",
        "none (all 3 packets at one instant: no span to average over, so no PtM(τ) or r/ρ either)",
    ),
}


@pytest.mark.parametrize("times", list(NO_RATE), ids=["empty", "one packet", "one instant"])
def test_a_capture_without_a_mean_rate_says_why(tmp_path: Path, times: tuple[int, ...]) -> None:
    duration, rate, span, rho = NO_RATE[times]
    # The first packet: none, or the instant written out by hand (ns after 1970-01-01T00:00:00Z).
    first = f"1970-01-01T00:00:00.00000000{times[0]}Z" if times else "none (no packets)"
    cap = tmp_path / "d.pcapng"
    cap.write_bytes(oracles.capture(list(times), [142] * len(times), frames=[FRAME] * len(times)))
    code, out, err = _run("info", cap)
    assert code == 0, err
    assert f"\nFirst packet:        {first}\nLast packet:         {first}\n" in out, out
    assert f"\nDuration:            {duration}\nMean rate:           {rate}\n" in out
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap)
    assert code == 0, err
    assert re.search(rf"^  first packet +{re.escape(first)}$", out, re.M), out
    assert re.search(rf"^  span +{re.escape(span)}$", out, re.M), out
    assert re.search(rf"^  mean rate ρ +{re.escape(rho)}$", out, re.M), out
    assert "n/a" not in out
    _, page = _report(cap, tmp_path)
    for label, shown in (("duration", duration), ("mean rate", rate), ("span", span), ("mean rate ρ", rho)):
        assert page.cells[page.cells.index(label) + 1] == shown
    # Both tables, the capture's and the scan's, show the first packet, or say why there is none.
    assert [page.cells[k + 1] for k, c in enumerate(page.cells) if c == "first packet"] == [first, first]


def test_a_scan_that_counted_nothing_says_so(tmp_path: Path) -> None:
    # Packets read, none passing the filter: none counted, which is not a capture of no packets.
    cap = write_capture(tmp_path / "t.pcapng")
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap, "--filter", "icmp")
    assert code == 0, err
    assert re.search(r"^  span +none \(no packets counted\)$", out, re.M), out
    assert re.search(r"^  first packet +none \(no packets counted\)$", out, re.M), out
    assert re.search(r"^  mean rate ρ +none \(no packets counted\)$", out, re.M), out


# write_capture's first packet: 1,700,000,000 s after 1970-01-01T00:00:00Z, worked out by hand
# (19,675 days = 1,699,920,000 s to 2023-11-14, then 80,000 s = 22:13:20).
FIRST = "2023-11-14T22:13:20.000000000Z"
# Its iterations start every 10 ms from it.
SECOND = "2023-11-14T22:13:20.010000000Z"


def test_instants_are_iso_8601_utc_everywhere(tmp_path: Path) -> None:
    # The report's iterations read '22:13:20.000000': no date, no zone; the terminal's tables had
    # no Z in their cells (only the header said UTC) and the summaries wrote ' UTC' after them.
    cap = write_capture(tmp_path / "t.pcapng")
    code, out, err = _run("iterations", "-q", cap)
    assert code == 0, err
    assert re.search(r"^  iteration +start \(UTC\) +communication +length ", out, re.M), out
    assert re.search(rf"^  0 +{FIRST} +1ms +5ms ", out, re.M), out
    assert re.search(rf"^  1 +{SECOND} +1ms +5ms ", out, re.M), out
    _, page = _report(cap, tmp_path)
    tables = TablePage()
    tables.feed((tmp_path / "report.html").read_text(encoding="utf-8"))
    (rows,) = [t["rows"] for t in tables.tables if t["class"] == "iterations"]
    assert rows[0][:4] == ["iteration", "start (UTC)", "communication", "length"]  # type: ignore[index]
    assert rows[1][:4] == ["0", FIRST, "1ms", "5ms"] and rows[2][:2] == ["1", SECOND]  # type: ignore[index]
    assert page.cells[page.cells.index("first packet") + 1] == FIRST
    code, out, err = _run("info", cap)
    assert code == 0 and f"\nFirst packet:        {FIRST}\n" in out, out
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", cap)
    assert code == 0 and re.search(rf"^  first packet +{FIRST}$", out, re.M), out
    code, out, err = _run("bursts", "-q", "--gap", "1ms", cap)
    assert code == 0 and re.search(rf"^  0 +{FIRST} ", out, re.M), out
    code, out, err = _run("flows", "-q", cap)
    assert code == 0 and "first seen (UTC)" in out and f" {FIRST} " in out, out


def test_numbers_without_exponents() -> None:
    from burstcore._units import format_bytes, format_number, format_quantile, format_rate

    assert format_rate(3.2e-5) == "0.000032 bit/s"
    assert format_bytes(1.5e-5) == "0.000015 B" and format_bytes(0) == "0 B"
    assert format_number(189_155.47) == "189,200" and format_number(189_155.47, 3) == "189,000"
    assert format_number(1.5768e15) == "1,577,000,000,000,000"
    assert format_number(0.000833912) == "0.0008339" and format_number(8.339) == "8.339"
    assert format_number(1234.4) == "1234" and format_number(1.0) == "1"
    assert format_quantile(1e-5) == "0.00001" and format_quantile(0.99999) == "0.99999"


def test_a_century_of_two_packets_reads_without_exponents(tmp_path: Path) -> None:
    # Two packets of 1,042 bytes 100 years (3,153,600,000 s) apart: ρ = 16,672 bit / 3,153,600,000 s
    # = 0.000005287 bit/s; E(1 µs) = 1,042 B, a peak of 8.336 Gbit/s, PtM = 8.336e9 / ρ =
    # 1.5768e15; at r = 1 bit/s, r/ρ = 3,153,600,000 / 16,672 = 189,155.5. It read 5.287e-06
    # bit/s, 1.577e+15 and 1.892e+05.
    cap = tmp_path / "c.pcapng"
    frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=1000)
    cap.write_bytes(oracles.capture([0, 100 * 365 * 86_400 * 10**9], [1042, 1042], frames=[frame] * 2))
    code, out, err = _run("scan", "-q", "--windows", "1us", "--rates", "1bps", cap)
    assert code == 0, err
    assert re.search(r"^  mean rate ρ +0\.000005287 bit/s$", out, re.M), out
    epoch = r"1970-01-01T00:00:00\.000000000Z"
    assert re.search(rf"^  1us +1,042 +1 +8\.336 Gbit/s +1,577,000,000,000,000 +{epoch}$", out, re.M), out
    assert re.search(r"^  1 bit/s +189,200 +1,042 +1\.042 kB ", out, re.M), out
    assert not re.search(r"\d[eE][+-]?\d", out), out
    _, page = _report(cap, tmp_path, "--windows", "1us", "--rates", "1bps")
    assert "1,577,000,000,000,000" in page.cells and "189,200" in page.cells
    assert page.cells[page.cells.index("mean rate ρ") + 1] == "0.000005287 bit/s"
    code, out, err = _run("sizes", "-q", "--quantiles", "0.00001,0.5", cap)
    assert code == 0, err
    assert re.search(r"^  group +packets +0\.00001 +0\.5$", out, re.M), out


def test_report_tells_a_warning_once(tmp_path: Path) -> None:
    # The info pass and the scan both met the cut-off block: the page listed it twice.
    cap = _truncated(tmp_path / "t.pcapng")
    text, _ = _report(cap, tmp_path, "--no-iterations")
    assert text.count('<li class="warn">capture ends inside a ') == 1, text


def test_report_of_iterations_found_elsewhere_shows_their_instants(tmp_path: Path) -> None:
    # A frame of iterations with only some of burstcore's columns (a caller's own detector):
    # shown as it is, its instants as every other instant.
    import polars as pl

    import burstcore
    from burstcore.report import render_report

    result = burstcore.scan(str(write_capture(tmp_path / "t.pcapng")), windows=["1ms"], rates=["1Gbps"])
    start = 1_700_000_000_000_000_000
    frame = pl.DataFrame({"start": [start], "end": [start + 1_500]}).cast(pl.Datetime("ns", "UTC"))
    page = render_report("t.pcapng", result, iterations=frame)
    assert "<th>start (UTC)</th><th>end (UTC)</th>" in page
    assert f"<td>{FIRST}</td><td>2023-11-14T22:13:20.000001500Z</td>" in page


def test_limits_of_one_and_a_file_of_one_byte(tmp_path: Path) -> None:
    cap = write_capture(tmp_path / "t.pcapng")
    code, _, err = _run("flows", "-q", cap, "--max-flows", "1")
    assert code == 1 and "more than 1 flow: raise --max-flows" in err, err
    code, _, err = _run("matrix", "-q", cap, "--max-pairs", "1")
    assert code == 1 and "more than 1 host pair: raise --max-pairs" in err, err
    tiny = tmp_path / "x.pcap"
    tiny.write_bytes(b"x")
    code, _, err = _run("info", tiny)
    assert code == 1 and "is only 1 byte (78): too short for a pcap or pcapng file" in err, err


# What the tables of PtM(τ) and r/ρ say once under them when the group has no mean rate ρ to
# divide by, in the words of the summary's "mean rate ρ" line.
ONE_PACKET = "no mean rate ρ (a single packet: no span to average over)"


def _ratio_rows(out: str, header: str) -> list[list[str]]:
    """The rows of every table of `out` whose header starts with `header`, split on spaces."""
    rows, inside = [], False
    for line in out.splitlines():
        if line.startswith("  " + header):
            inside = True
        elif inside and line.startswith("  ") and line[2:3] != " " and not line.startswith(("  PtM", "  r/ρ")):
            rows.append(line.split())
        else:
            inside = False
    return rows


def test_ratios_without_a_mean_rate_say_why_once(tmp_path: Path) -> None:
    # PtM(τ) and r/ρ read a bare n/a in every row, with nothing saying why.
    one = tmp_path / "one.pcapng"
    one.write_bytes(oracles.capture([5], [142], frames=[FRAME]))
    code, out, err = _run("scan", "-q", "--windows", "1ms,2ms,5ms", "--rates", "1Gbps,10Gbps", one)
    assert code == 0, err
    assert "n/a" not in out
    assert [r[-2] for r in _ratio_rows(out, "window τ")] == ["-", "-", "-"]
    assert [r[2] for r in _ratio_rows(out, "rate r")] == ["-", "-"]
    assert re.findall(r"^  PtM\(τ\): .*$", out, re.M) == [f"  PtM(τ): none, as there is {ONE_PACKET}"]
    assert re.findall(r"^  r/ρ: .*$", out, re.M) == [f"  r/ρ: none, as there is {ONE_PACKET}"]
    # The report: a line under each of the two tables.
    text, _ = _report(one, tmp_path, "--windows", "1ms", "--rates", "1Gbps")
    assert text.count(f'<p class="note">PtM(τ): none, as there is {ONE_PACKET}</p>') == 1
    assert text.count(f'<p class="note">r/ρ: none, as there is {ONE_PACKET}</p>') == 1
    # The report's figures are inlined as base64 PNG, whose text can hold "n/a" by chance.
    assert "n/a" not in re.sub(r"data:image/[^\"']+", "", text)
    # superpose measures its merge as scan does: the two copies' packets at one instant.
    code, out, err = _run("superpose", "-q", "--windows", "1ms", "--rates", "1Gbps", one, one)
    assert code == 0, err
    merged = "no mean rate ρ (all 2 packets at one instant: no span to average over)"
    assert f"\n  PtM(τ): none, as there is {merged}\n" in out and f"\n  r/ρ: none, as there is {merged}\n" in out


def test_a_group_without_a_mean_rate_says_why_in_its_own_tables(tmp_path: Path) -> None:
    # Two flows: one of 2 packets 1 ms apart (ρ = 2 * 142 * 8 bit / 1 ms = 2.272 Mbit/s, PtM at
    # 1 ms = 1,136,000 / 2,272,000 = 0.5), one of a single packet (none). The group's table said
    # "none (one instant)" for a single packet, unlike every other table.
    other = oracles.eth_ipv4_udp("10.0.0.3", "10.0.0.4", 3, 4, payload=100)
    cap = tmp_path / "f.pcapng"
    cap.write_bytes(oracles.capture([0, 10**6, 5], [142] * 3, frames=[FRAME, FRAME, other]))
    code, out, err = _run("scan", "-q", "--windows", "1ms", "--rates", "1Gbps", "--by", "flow", cap)
    assert code == 0, err
    assert re.search(
        r"^  udp 10\.0\.0\.3:3>10\.0\.0\.4:4 +1 +142 +0ns \(one instant\) +none \(a single packet: ", out, re.M
    )
    lone = out[out.index("— flow udp 10.0.0.3:3>10.0.0.4:4") :]
    assert lone.count(f"PtM(τ): none, as there is {ONE_PACKET}") == 1
    assert lone.count(f"r/ρ: none, as there is {ONE_PACKET}") == 1
    pair = out[out.index("— flow udp 10.0.0.1:1>10.0.0.2:2") : out.index("— flow udp 10.0.0.3")]
    assert re.search(r"^  1ms +142 +1 +1\.136 Mbit/s +0\.5 +1970-01-01T00:00:00\.000000000Z$", pair, re.M), pair
    assert "none, as" not in pair


def test_a_mean_rate_of_zero_says_so_under_the_ratios(tmp_path: Path) -> None:
    # Three UDP packets without payload over 5 µs: ρ of the payload bytes is 0 bit/s, a rate,
    # which PtM(τ) and r/ρ cannot divide by; the default rates, no multiples of it, said "no span".
    bare = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=0)
    cap = tmp_path / "z.pcapng"
    cap.write_bytes(oracles.capture([0, 1_000, 5_000], [42] * 3, frames=[bare] * 3))
    code, out, err = _run("scan", "-q", "--windows", "1us", "--size", "payload", cap)
    assert code == 0, err
    assert re.search(r"^  mean rate ρ +0 bit/s$", out, re.M), out
    assert "\n  PtM(τ): none, as the mean rate ρ is 0 bit/s (0 payload bytes over 5us)\n" in out
    assert "\n  r/ρ: none, as the mean rate ρ is 0 bit/s (0 payload bytes over 5us)\n" in out
    assert "(rates: link-speed grid (mean rate ρ 0 bit/s: no multiples of it))" in out
    assert "no span" not in out.replace("no span to average over", "")


def test_analyses_of_nothing_say_why(tmp_path: Path) -> None:
    # Each said n/a, and the quantile tables a row of n/a per quantile.
    empty, one = tmp_path / "empty.pcapng", tmp_path / "one.pcapng"
    empty.write_bytes(oracles.capture([], []))
    one.write_bytes(oracles.capture([5], [142], frames=[FRAME]))
    outs = {}
    for name, args in {
        "gaps empty": ("gaps", empty),
        "gaps one": ("gaps", one),
        "gaps filtered": ("gaps", one, "--filter", "tcp"),
        "sizes empty": ("sizes", empty),
        "bursts one": ("bursts", one),
        "iterations one": ("iterations", one),
        "superpose empty": ("superpose", "--windows", "1ms", empty, empty),
        "superpose filtered": ("superpose", "--windows", "1ms", one, one, "--filter", "tcp"),
    }.items():
        code, out, err = _run(args[0], "-q", *args[1:])
        assert code == 0, err
        assert "n/a" not in out, (name, out)
        outs[name] = out
    assert "\nGaps between consecutive packets: none (no packets)\n" in outs["gaps empty"]
    assert "\nGaps between consecutive packets: none (a single packet: no gap between two)\n" in outs["gaps one"]
    assert "\nGaps between consecutive packets: none (no packets counted)\n" in outs["gaps filtered"]
    for out in (outs["gaps empty"], outs["gaps one"]):
        assert "Quantiles" not in out
    assert "\nQuantiles of the packet size: none (no packets)\n" in outs["sizes empty"]
    bursts = outs["bursts one"]
    assert [ln.split()[-1] for ln in bursts.splitlines() if re.match(r"  (0|1|0\.\d+) +142 ", ln)] == ["-"] * 10
    assert bursts.count("\n  OFF gap: none (a single burst: no gap between two)\n") == 1
    assert re.search(r"^  bytes per iteration +none \(no iterations\)$", outs["iterations one"], re.M)
    assert "\nMultiplexing gain: none (no packets)\n" in outs["superpose empty"]
    assert "\nMultiplexing gain: none (no packets counted)\n" in outs["superpose filtered"]


def test_a_group_without_gaps_is_one_row(tmp_path: Path) -> None:
    # A flow of one packet beside one of three (two gaps of 1 µs): a single row of '-' for it,
    # not one of n/a per quantile.
    other = oracles.eth_ipv4_udp("10.0.0.3", "10.0.0.4", 3, 4, payload=100)
    cap = tmp_path / "g.pcapng"
    cap.write_bytes(oracles.capture([0, 1_000, 2_000, 5], [142] * 4, frames=[FRAME] * 3 + [other]))
    code, out, err = _run("gaps", "-q", "--by", "flow", "--quantiles", "0.5,1", cap)
    assert code == 0, err
    assert "n/a" not in out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert ["udp", "10.0.0.3:3>10.0.0.4:4", "0", "-", "-", "-"] in rows, out
    assert ["udp", "10.0.0.1:1>10.0.0.2:2", "2", "0.5", "1us", "1us"] in rows, out


def test_shares_never_read_as_none_or_all_when_they_are_not(tmp_path: Path) -> None:
    # 20,000 packets of 1,442 bytes from one pair and one of 42 from another: shares of
    # 28,840,000 / 28,840,042 = 99.99985% and 42 / 28,840,042 = 0.00015%, which read 100.00%
    # and 0.00%.
    big = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, 2, payload=1400)
    small = oracles.eth_ipv4_udp("10.0.0.3", "10.0.0.4", 1, 2, payload=0)
    n = 20_000
    cap = tmp_path / "m.pcapng"
    cap.write_bytes(
        oracles.capture(list(range(0, (n + 1) * 1_000, 1_000)), [1442] * n + [42], frames=[big] * n + [small])
    )
    code, out, err = _run("matrix", "-q", cap)
    assert code == 0, err
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  10.")]
    assert rows == [
        ["10.0.0.1", "10.0.0.2", "28,840,000", "20,000", ">99.99%"],
        ["10.0.0.3", "10.0.0.4", "42", "1", "<0.01%"],
    ], out
    # All of it is 100.00%, exactly.
    whole = tmp_path / "w.pcapng"
    whole.write_bytes(oracles.capture([0, 1_000], [1442] * 2, frames=[big] * 2))
    code, out, err = _run("matrix", "-q", whole)
    assert code == 0 and re.search(r"^  10\.0\.0\.1 +10\.0\.0\.2 +2,884 +2 +100\.00%$", out, re.M), out


def test_format_share() -> None:
    from burstcore._units import format_share

    assert [format_share(x) for x in (0.0, 1e-7, 0.00004999, 0.0001, 0.5, 0.99994, 0.9999999, 1.0)] == [
        "0.00%",
        "<0.01%",
        "<0.01%",
        "0.01%",
        "50.00%",
        "99.99%",
        ">99.99%",
        "100.00%",
    ]
    assert format_share(None) == "-"


# A Python program printing the API's warnings as Python does (to stderr, unfiltered), and
# what each warning carries for a program.
_SHOW = """
import sys, warnings, burstcore
warnings.simplefilter("always")
cut, other, lossy = sys.argv[1:4]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    burstcore.scan([other, cut], windows=["1ms"], rates=["1Gbps"])
for w in caught:
    print(repr(w.message.input), file=sys.stdout)
    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
burstcore.scan(lossy, windows=["1ms"], rates=["1Gbps"])
burstcore.shared_packets([other, cut], senders="all")
burstcore.info(cut)
"""


def _lossy(path: Path, name: str, packets: int) -> Path:
    """A pcapng of `packets` frames 1 µs apart on one interface named `name`, whose statistics
    count 2 more it dropped: read, with the warning of packets lost that names the interface."""
    import burstcore

    w = burstcore.CaptureWriter("pcapng")
    w.section()
    w.interface(linktype=1, resolution="1e-9", name=name)
    for i in range(packets):
        w.epb(0, FRAME, ts_ns=10**18 + i * 1_000)
    w.isb(0, ts_raw=10**18 + 10_000, if_recv=packets, if_drop=2)
    path.write_bytes(w.getvalue())
    return path


def test_api_warnings_show_names_escaped_and_keep_them_as_given(tmp_path: Path) -> None:
    import subprocess
    import sys

    cut = _truncated(tmp_path / HOSTILE)
    # Other hosts' traffic: no packet shared with the cut capture, so no warning of that.
    far = oracles.eth_ipv4_udp("10.9.0.1", "10.9.0.2", 7, 8, payload=60)
    other = tmp_path / "ok.pcapng"
    other.write_bytes(oracles.capture([10**18, 10**18 + 1_000], [102, 102], frames=[far, far]))
    lossy = _lossy(tmp_path / "lossy.pcapng", "eth0", 5)
    p = subprocess.run(
        [sys.executable, "-c", _SHOW, str(cut), str(other), str(lossy)], capture_output=True, check=False
    )
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, err
    _lines_clean(err)
    # The cut capture named in the merged scan's warning, in shared_packets' (its prefix) and
    # in neither info's (one capture, no name) nor the lossy one's.
    assert err.count("at byte offset") == 3, err
    assert err.count(f"of {tmp_path}/{ESCAPED}\n") == 1, err
    assert err.count(f"CaptureWarning: {tmp_path}/{ESCAPED}: capture ends inside") == 1, err
    # For a program: the name as given.
    assert repr(str(cut)) in out.splitlines(), out


def test_api_errors_show_names_escaped_and_keep_them_as_given(tmp_path: Path) -> None:
    import burstcore

    bad = tmp_path / HOSTILE
    bad.write_bytes(b"hello world, not a capture at all")
    other = write_capture(tmp_path / "ok.pcapng")
    with pytest.raises(burstcore.NotACaptureError) as e:
        burstcore.scan([other, bad], windows=["1ms"])
    # The message as a traceback shows it: escaped by hand here, as the CLI escapes it.
    assert str(e.value).endswith(f"at byte offset 0 of {tmp_path}/{ESCAPED}"), str(e.value)
    _clean(str(e.value))
    # For a program: the name as given.
    assert e.value.input == str(bad)


def test_interface_names_in_lost_packet_warnings_read_as_python_escapes_them(tmp_path: Path) -> None:
    import burstcore

    lossy = _lossy(tmp_path / "lossy.pcapng", "eth\x1b[31m0\n", 3)
    with pytest.warns(burstcore.CaptureWarning) as told:
        burstcore.scan(lossy, windows=["1ms"])
    text = " ".join(str(x.message) for x in told)
    # Not Rust's escapes ("\u{1b}"): the same as every other name in burstcore's text.
    assert 'interface 0 "eth\\x1b[31m0\\n": isb_ifdrop 2' in text, text
    _clean(text)


def test_info_counts_read_with_separators_and_an_empty_capture_has_no_longest_frame(tmp_path: Path) -> None:
    # 1,200 packets of 142 bytes, every third 1 µs earlier than the one before it.
    times = [k * 1_000 - (1_500 if k % 3 == 2 else 0) for k in range(1_200)]
    cap = tmp_path / "many.pcapng"
    cap.write_bytes(oracles.capture(times, [142] * 1_200, frames=[FRAME] * 1_200))
    code, out, err = _run("info", cap)
    assert code == 0, err
    assert "\nPackets:             1,200\n" in out, out
    assert "\nData (wire):         170,400 bytes (" in out, out
    assert "\nOut of order:        400 packets" in out, out
    assert ", 1,200 packets\n" in out, out
    empty = tmp_path / "empty.pcapng"
    empty.write_bytes(oracles.capture([], [], frames=[]))
    code, out, err = _run("info", empty)
    assert code == 0, err
    # No frame, so no longest one: not "(max 0 B)".
    assert "\nOver link MTU:       0 frames\n" in out, out
