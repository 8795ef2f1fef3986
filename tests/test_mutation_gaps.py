"""Tests written after a round of hand mutation testing: each one kills a plausible bug that the
rest of the suite let through, and checks burstcore against numbers worked out here from the
packets (by hand or by brute force), never against burstcore itself."""

from __future__ import annotations

import pytest

import burstcore
from tests import oracles

BASE = 1_700_000_000_000_000_000


def test_summary_mean_rate_is_bytes_over_the_span() -> None:
    # ρ = ΣL·8·10⁹ / (t_last − t_first): the span is a difference of instants, not a count of ns
    # (an off-by-one "+1" here is invisible to every self-consistency check).
    ts = [BASE, BASE + 250, BASE + 1000]
    sizes = [100, 300, 600]
    r = burstcore.scan(oracles.capture(ts, sizes), windows=["100ns"], rates=["8Gbps"])
    s = r.summary.row(0, named=True)
    assert s["span_ns"] == 1000
    assert s["mean_rate_bps"] == 1000 * 8e9 / 1000
    g = r.groups.row(0, named=True)
    assert (g["span_ns"], g["mean_rate_bps"]) == (1000, 1000 * 8e9 / 1000)
    # PtM and r/ρ divide by that ρ: E(100 ns) = 600 bytes (one packet) → 48 Gbit/s → 6ρ.
    assert r.envelope["bytes"][0] == 600
    assert r.envelope["ptm"][0] == pytest.approx(600 * 8e9 / 100 / (1000 * 8e9 / 1000))
    assert r.backlog["rate_over_mean"][0] == pytest.approx(8e9 / (1000 * 8e9 / 1000))
    # Over a time range the stretch is the span: [BASE − 1000, BASE + 3000) holds every packet.
    r = burstcore.scan(
        oracles.capture(ts, sizes), windows=["100ns"], rates=["8Gbps"], start=BASE - 1000, end=BASE + 3000
    )
    s = r.summary.row(0, named=True)
    assert s["span_ns"] == 4000
    assert s["mean_rate_bps"] == 1000 * 8e9 / 4000
