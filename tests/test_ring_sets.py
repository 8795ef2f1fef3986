"""Ring-buffer sets (`dumpcap -b filesize:...`) whose last file its writer left before writing a
header (killed at a file switch): empty, or the first bytes of a magic number. Among several
captures such a file is a cut file (a CaptureWarning naming it; strict: an error), as a file cut
inside its header is; alone it stays refused (tests/test_edges.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import burstcore
from tests.oracles import eth_ipv4_udp

BASE = 1_700_000_000_000_000_000
MS = 1_000_000


def _ring(tmp_path: Path, last: bytes, files: int = 3) -> list[str]:
    """`files` pcapng files of one session, 40 packets each, 10 ms apart, then `last` as the set's
    last file."""
    paths = []
    for k in range(files):
        w = burstcore.CaptureWriter("pcapng")
        w.section()
        w.interface()
        for i in range(40):
            src, dst = f"10.0.0.{1 + i % 3}", f"10.0.0.{4 + i % 2}"
            w.epb(0, eth_ipv4_udp(src, dst, 1000 + i % 5, 80, 100 + 10 * (i % 7), 17), ts_ns=BASE + (k * 40 + i) * MS)
        path = tmp_path / f"ring_{k:05d}.pcapng"
        path.write_bytes(w.getvalue())
        paths.append(str(path))
    cut = tmp_path / f"ring_{files:05d}.pcapng"
    cut.write_bytes(last)
    return [*paths, str(cut)]


def _caught(call: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, caught


# Every entry point that takes a list of captures, with what to compare of its result.
LISTS: dict[str, Callable[[list[str], dict[str, Any]], Any]] = {
    "scan": lambda s, kw: burstcore.scan(s, windows=["1ms", "10ms"], rates=["1Gbps"], bins=["5ms"], **kw),
    "scan_threads": lambda s, kw: burstcore.scan(s, windows=["1ms", "10ms"], rates=["1Gbps"], threads=2, **kw),
    "flows": lambda s, kw: burstcore.flows(s, **kw),
    "traffic_matrix": lambda s, kw: burstcore.traffic_matrix(s, **kw),
    "host_volumes": lambda s, kw: burstcore.host_volumes(s, **kw),
    "sizes": lambda s, kw: burstcore.sizes(s, **kw),
    "gaps": lambda s, kw: burstcore.gaps(s, **kw),
    "bursts": lambda s, kw: burstcore.bursts(s, gap="2ms", **kw),
    "iterations": lambda s, kw: burstcore.iterations(s, **kw),
    "superpose": lambda s, kw: burstcore.superpose(s, windows=["1ms"], rates=["1Gbps"], **kw),
    "shared_packets": lambda s, kw: burstcore.shared_packets(s, **kw),
}

# Left by a writer stopped before its header: nothing, or the first bytes of a magic number.
CUT_BEFORE_MAGIC = {
    "empty": b"",
    "pcapng_1": b"\x0a",
    "pcapng_3": b"\x0a\x0d\x0d",
    "pcap_2": b"\xd4\xc3",
    "gzip_1": b"\x1f",
}


def _frames(result: Any) -> list[pl.DataFrame]:
    """The result's tables without the packet accounting's count of warnings-free reads."""
    if isinstance(result, pl.DataFrame):
        return [result]
    return [v for v in vars(result).values() if isinstance(v, pl.DataFrame)]


@pytest.mark.parametrize("entry", sorted(LISTS))
def test_an_empty_last_file_of_a_ring_set_is_a_cut_file(tmp_path: Path, entry: str) -> None:
    # It was NotACaptureError ("empty input"), and the whole set went unread.
    files = _ring(tmp_path, b"")
    call = LISTS[entry]
    got, caught = _caught(lambda: call(files, {}))
    # Oracle: the set without the empty file, which reads as ever.
    want, _ = _caught(lambda: call(files[:-1], {}))
    cut = [w.message for w in caught if isinstance(w.message, burstcore.CaptureWarning) and w.message.kind]
    assert [(w.kind, w.offset, w.input) for w in cut] == [("truncated", 0, files[-1])], [str(w) for w in cut]
    assert "an empty file" in str(cut[0]) and files[-1] in str(cut[0])
    for g, w in zip(_frames(got), _frames(want), strict=True):
        # Tables naming the files (the interfaces' sources) have the empty one's name nowhere.
        assert g.equals(w), (entry, g, w)
    with pytest.raises(burstcore.TruncatedCaptureError) as err:
        call(files, {"strict": True})
    assert (err.value.kind, err.value.offset, err.value.input) == ("truncated", 0, files[-1])


@pytest.mark.parametrize("name", sorted(CUT_BEFORE_MAGIC))
def test_a_member_cut_inside_its_magic_number_is_a_cut_file_anywhere_in_the_list(tmp_path: Path, name: str) -> None:
    files = _ring(tmp_path, CUT_BEFORE_MAGIC[name], files=2)
    # First, in the middle and last: the reader does not care where the writer stopped.
    for order in (files, [files[2], files[0], files[1]], [files[0], files[2], files[1]]):
        r, caught = _caught(lambda order=order: burstcore.scan(order, windows=["1ms"], rates=["1Gbps"]))
        assert r.summary["packets"][0] == 80
        (w,) = [c.message for c in caught if isinstance(c.message, burstcore.CaptureWarning)]
        assert (w.kind, w.offset, w.input) == ("truncated", 0, files[2]), str(w)  # type: ignore[union-attr]
    words = "an empty file" if name == "empty" else "inside its 4-byte magic number"
    assert words in str(w)


def test_a_member_of_a_few_bytes_that_begin_no_capture_is_still_refused(tmp_path: Path) -> None:
    # Not a file cut before its header: nothing a capture writer starts with.
    for junk in (b"ab", b"\x00", b"PK\x03"):
        files = _ring(tmp_path, junk, files=1)
        with pytest.raises(burstcore.NotACaptureError, match="too short for a pcap or pcapng file") as err:
            burstcore.scan(files)
        assert err.value.input == files[-1]


def test_one_empty_capture_alone_is_still_refused(tmp_path: Path) -> None:
    # Guard (passes on the old code too): a single capture with nothing in it is an error.
    (tmp_path / "e.pcapng").write_bytes(b"")
    for call in (burstcore.scan, burstcore.sizes, burstcore.info, burstcore.read_packets):
        with pytest.raises(burstcore.NotACaptureError, match="empty input"):
            call(str(tmp_path / "e.pcapng"))
    with pytest.raises(burstcore.NotACaptureError, match="empty input"):
        burstcore.scan([str(tmp_path / "e.pcapng")])


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "burstcore", *args], cwd=cwd, capture_output=True, timeout=120, check=False
    )


def _strict_json(data: bytes) -> Any:
    """`data` as a strict parser takes it: UTF-8, no NaN or Infinity, no key twice in an object."""

    def no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), keys
        return dict(pairs)

    def refuse(word: str) -> Any:
        raise AssertionError(f"not JSON: {word}")

    return json.loads(data.decode("utf-8", errors="strict"), object_pairs_hook=no_twice, parse_constant=refuse)


# Every subcommand that writes JSON, on the set.
JSON_COMMANDS = {
    "scan": ["scan", "--windows", "1ms"],
    "scan_each": ["scan", "--each", "--windows", "1ms"],
    "flows": ["flows"],
    "matrix": ["matrix"],
    "matrix_hosts": ["matrix", "--hosts"],
    "iterations": ["iterations"],
    "bursts": ["bursts", "--gap", "2ms"],
    "sizes": ["sizes"],
    "gaps": ["gaps"],
    "superpose": ["superpose", "--windows", "1ms"],
    "shared": ["shared"],
}


@pytest.mark.parametrize("last", ["empty", "cut_record"])
@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
def test_the_json_of_every_command_gives_each_warning_s_detail(tmp_path: Path, command: str, last: str) -> None:
    # Its warnings were text only: a CI job had to search it for a cut file. (A last file cut
    # inside a record was read before too: that case fails on the old code for the details only.)
    files = _ring(tmp_path, b"", files=2)
    offset = 0
    if last == "cut_record":
        whole = Path(files[0]).read_bytes()
        Path(files[-1]).write_bytes(whole[:-7])
        with pytest.warns(burstcore.CaptureWarning) as caught:
            burstcore.read_packets(files[-1])
        (w,) = [c.message for c in caught]
        offset = w.offset  # type: ignore[union-attr]
        assert offset and offset > 0
    names = [Path(f).name for f in files]
    p = _cli(*JSON_COMMANDS[command], *names, "--json", "-o", "-", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert names[-1].encode() in p.stderr and (b"an empty file" in p.stderr or last != "empty")
    doc = _strict_json(p.stdout)
    details = doc["warning_details"]
    assert [d["message"] for d in details] == doc["warnings"]
    cut = [d for d in details if d["kind"] == "truncated"]
    assert len(cut) == 1, details
    for d in cut:
        assert d == {
            "message": d["message"],
            "category": "CaptureWarning",
            "kind": "truncated",
            "input": names[-1],
            "offset": offset,
            "limit": None,
        }
        assert names[-1] in d["message"]
    if shutil.which("jq"):
        # The README's query.
        q = subprocess.run(
            ["jq", "-r", '.warning_details[] | select(.kind == "truncated") | .input'],
            input=p.stdout,
            capture_output=True,
            check=True,
        )
        assert q.stdout.decode().split() == [names[-1]] * len(cut)
    # shared had no --strict (a usage error, exit 2): it read what it could of every capture.
    strict = _cli(*JSON_COMMANDS[command], *names, "--json", "-o", "-", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and not strict.stdout, strict.stderr
    assert names[-1].encode() in strict.stderr


def test_info_of_a_ring_set_sums_up_its_empty_last_file_as_cut(tmp_path: Path) -> None:
    # It was {"file", "error"} and exit 1; the error's words alone said why.
    files = _ring(tmp_path, b"", files=1)
    names = [Path(f).name for f in files]
    p = _cli("info", "--json", *names, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    first, last = _strict_json(p.stdout)
    assert first["packets"] == 40 and first["warnings"] == [] and first["warning_details"] == []
    assert last["packets"] == 0 and "error" not in last
    (d,) = last["warning_details"]
    assert d["message"] == last["warnings"][0] and "an empty file" in d["message"]
    assert (d["category"], d["kind"], d["offset"], d["input"]) == ("CaptureWarning", "truncated", 0, names[-1])
    strict = _cli("info", "--json", "--strict", *names, cwd=tmp_path)
    assert strict.returncode == 1, strict.stderr
    first, last = _strict_json(strict.stdout)
    assert last["error_detail"] == {
        "category": "TruncatedCaptureError",
        "kind": "truncated",
        "offset": 0,
        "reason": last["error_detail"]["reason"],
        "input": None,
        "limit": None,
    }
    assert "an empty file" in last["error_detail"]["reason"] and "error" in last
    # One file alone: still refused (a guard: so it was).
    alone = _cli("info", names[-1], cwd=tmp_path)
    assert alone.returncode == 1 and b"empty input" in alone.stderr


def test_info_s_error_detail_of_a_file_not_there_and_of_one_not_a_capture(tmp_path: Path) -> None:
    files = _ring(tmp_path, b"text, not a capture", files=1)
    names = [Path(f).name for f in files]
    p = _cli("info", "--json", *names, "missing.pcap", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    _, junk, missing = _strict_json(p.stdout)
    assert junk["error_detail"]["category"] == "NotACaptureError"
    assert (junk["error_detail"]["kind"], junk["error_detail"]["offset"]) == ("not_a_capture", 0)
    assert missing["error_detail"] == {"category": "FileNotFoundError", "errno": 2, "filename": "missing.pcap"}


@pytest.mark.parametrize("name", sorted(CUT_BEFORE_MAGIC))
def test_info_of_a_member_cut_before_its_magic_names_no_format(tmp_path: Path, name: str) -> None:
    # It said "pcapng", the reader's placeholder, of an empty file or of two bytes of a pcap magic.
    files = _ring(tmp_path, CUT_BEFORE_MAGIC[name], files=1)
    names = [Path(f).name for f in files]
    p = _cli("info", "--json", *names, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    first, last = _strict_json(p.stdout)
    assert (first["format"], last["format"], last["packets"]) == ("pcapng", None, 0)
    text = _cli("info", *names, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.decode().splitlines()
    formats = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Format:")]
    assert formats == ["pcapng", "unknown (no magic number)"], text.stdout
    # A file cut inside its header, past the magic, has the format its magic names (a guard).
    Path(files[-1]).write_bytes(Path(files[0]).read_bytes()[:10])
    first, last = _strict_json(_cli("info", "--json", *names, cwd=tmp_path).stdout)
    assert (last["format"], last["packets"]) == ("pcapng", 0)
