"""The undeclared-FCS check of an `l1` count looks at the frames the numbers are made of: those
in the time range (`start=`/`end=`) that pass the `filter=`, not every frame read. Checked
against an oracle that takes the sample from the frames the test writes, with zlib's CRC-32."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import burstcore
from tests import oracles
from tests.test_operator import _crc, _fcs_told

T0 = 1_780_000_000_000_000_000
STEP = 1_000
PER_PORT = 200
HALF = T0 + PER_PORT * STEP  # interface 0's frame 100 and interface 1's frame 100 lie on each side
PORTS = (53, 4791)


def _frames() -> list[tuple[int, int, bytes]]:
    """(timestamp, interface, frame) in file order. Interface 0 (UDP port 53): its first 100
    frames without an FCS, its last 100 ending with one; interface 1 (UDP port 4791) the other
    way round. Every frame captured whole."""
    out = []
    for k in range(PER_PORT):
        for itf in (0, 1):
            frame = oracles.eth_ipv4_udp("10.0.0.1", "10.0.0.2", 1, PORTS[itf], payload=100 + itf)
            with_fcs = (k >= PER_PORT // 2) == (itf == 0)
            out.append((T0 + (2 * k + itf) * STEP, itf, frame + _crc(frame) if with_fcs else frame))
    return out


def _expected(kept: Callable[[int, int], bool]) -> dict[int, tuple[int, int]]:
    """Per interface told of, (valid, checked): the first 64 frames `kept(ts, interface)`
    keeps, and how many end with the CRC-32 (zlib) of the bytes before them; told when more
    than half do."""
    checked: dict[int, list[bool]] = {0: [], 1: []}
    for ts, itf, data in _frames():
        if kept(ts, itf) and len(checked[itf]) < 64:
            checked[itf].append(zlib.crc32(data[:-4]).to_bytes(4, "little") == data[-4:])
    counts = {i: (sum(c), len(c)) for i, c in checked.items()}
    return {i: (v, n) for i, (v, n) in counts.items() if 2 * v > n}


# (scan keywords, which frames they keep)
CASES: list[tuple[dict[str, Any], Callable[[int, int], bool]]] = [
    ({}, lambda ts, i: True),
    ({"start": HALF}, lambda ts, i: ts >= HALF),
    ({"end": HALF}, lambda ts, i: ts < HALF),
    ({"filter": "udp port 53"}, lambda ts, i: i == 0),
    ({"filter": "udp port 4791"}, lambda ts, i: i == 1),
    ({"filter": "udp port 53", "start": HALF}, lambda ts, i: i == 0 and ts >= HALF),
    ({"filter": "udp port 4791", "start": HALF}, lambda ts, i: i == 1 and ts >= HALF),
]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    w = burstcore.CaptureWriter("pcapng")
    w.interface(linktype=1)
    w.interface(linktype=1)
    for ts, itf, data in _frames():
        w.epb(itf, data, ts_ns=ts)
    d = tmp_path_factory.mktemp("fcs_kept")
    path = d / "mirror.pcapng"
    path.write_bytes(w.getvalue())
    # Another host's capture of the same span, without FCSs: files that overlap in time.
    frame = oracles.eth_ipv4_udp("10.0.0.3", "10.0.0.4", 1, 53, payload=300)
    ts = [T0 + k * 3 * STEP for k in range(300)]
    other = d / "other.pcapng"
    other.write_bytes(oracles.capture(ts, [len(frame)] * len(ts), frames=[frame] * len(ts)))
    return path, other


def _told_of(messages: list[Any]) -> dict[int, tuple[int, int]]:
    """Per interface named in the warnings, (valid, checked) as they say it."""
    out = {}
    for m in messages:
        for i in (0, 1):
            for n in range(1, 65):
                for v in range(n + 1):
                    if f"interface {i}: {v} of its first {n} whole frames" in str(m):
                        out[i] = (v, n)
    return out


@pytest.mark.parametrize(("kw", "kept"), CASES, ids=[str(c[0]) for c in CASES])
def test_an_l1_scan_is_told_of_the_fcs_of_the_frames_it_counts(
    mirror: tuple[Path, Path], kw: dict[str, Any], kept: Callable[[int, int], bool]
) -> None:
    # Frames the range or filter left out counted towards the sample: an interface filtered
    # out entirely was still told of, and one whose kept frames end with an FCS was not when
    # those left out before them had none.
    path, other = mirror
    want = _expected(kept)
    for threads in (1, 2, 3):
        told = _fcs_told(lambda t=threads: burstcore.scan(path, windows=["1us"], size="l1", threads=t, **kw))
        assert len(told) == (1 if want else 0), (threads, told)
        assert _told_of(told) == want, (threads, told)
        # Two files: the warning names the file whose frames it checked, by its own interfaces.
        both = _fcs_told(lambda t=threads: burstcore.scan([other, path], windows=["1us"], size="l1", threads=t, **kw))
        assert len(both) == (1 if want else 0), (threads, both)
        assert all("mirror.pcapng" in str(m) for m in both), both
        assert _told_of(both) == want, (threads, both)
    # An analysis counting l1 is told alike, and info tells the same interfaces.
    assert _told_of(_fcs_told(lambda: burstcore.flows(path, size="l1", **kw))) == want
    assert burstcore.info(path, **kw).undeclared_fcs() == sorted(want)
