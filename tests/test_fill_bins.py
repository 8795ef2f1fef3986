"""The empty-bin fill against a brute-force fill: a dict over every bin of each (group, width)."""

import struct
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import burstcore
from burstcore import _scan

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
SCHEMA = {"gid": pl.UInt32, "bin_ns": pl.Int64, "start_ns": pl.Int64, "bytes": pl.UInt64, "packets": pl.UInt64}


def brute_fill(
    rows: list[tuple[int, int, int, int, int]],
    limit: int,
    start: int | None = None,
    end: int | None = None,
    origin: int = 0,
) -> tuple[list[tuple[int, ...]], list[int]]:
    """Every bin o + k·Δ (i64::MIN for the one before 1677) from each segment's first to last, or
    from the bin holding start (to the one holding end - 1) where a time range is given; k by
    Python's exact integers."""
    seg: dict[tuple[int, int], dict[int, tuple[int, int, int]]] = {}
    for g, w, s, b, p in rows:
        seg.setdefault((g, w), {})[(s - origin) // w] = (s, b, p)

    def lo(w: int, bins: dict[int, tuple[int, int, int]]) -> int:
        return min(bins) if start is None else (start - origin) // w

    def hi(w: int, bins: dict[int, tuple[int, int, int]]) -> int:
        return max(bins) if end is None else (end - 1 - origin) // w

    need: dict[int, int] = {}
    for (_, w), bins in seg.items():
        need[w] = need.get(w, 0) + hi(w, bins) - lo(w, bins) + 1
    filled, total = set(), 0
    for w, n in sorted(need.items(), key=lambda item: (item[1], item[0])):
        if total + n > limit:
            break
        filled.add(w)
        total += n
    out = []
    for (g, w), bins in sorted(seg.items()):
        ks = range(lo(w, bins), hi(w, bins) + 1) if w in filled else sorted(bins)
        for k in ks:
            s, b, p = bins.get(k, (max(origin + k * w, I64_MIN), 0, 0))
            out.append((g, w, s, b, p))
    return out, sorted(set(need) - filled)


def random_rows(rng: np.random.Generator, origin: int = 0) -> list[tuple[int, int, int, int, int]]:
    widths = sorted({int(x) for x in rng.choice([1, 3, 7, 110, 1000, 10**9], rng.integers(1, 4))})
    base = int(rng.choice([0, -(10**6), 1_700_000_000 * 10**9, I64_MIN, I64_MAX - 2000]))
    rows = {}
    for g in range(int(rng.integers(1, 5))):
        for w in widths:
            if rng.random() < 0.2:
                continue
            reach = int(rng.choice([1, 3, 60, 400]))
            for k in rng.integers(0, reach, rng.integers(1, 12)):
                s = max(origin + ((base - origin) // w + int(k)) * w, I64_MIN)
                if s <= I64_MAX:
                    rows[(g, w, s)] = (int(rng.integers(1, 2000)), int(rng.integers(1, 5)))
    return [(*key, *val) for key, val in rows.items()]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("origins", ["epoch", "any"])
def test_fill_matches_brute_force(seed: int, origins: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    limit = int(rng.choice([20_000_000, 40, 300]))
    monkeypatch.setattr(_scan, "DENSE_SERIES_LIMIT", limit)
    for _ in range(25):
        # Bins counted from an instant (bin_origin=): near the rows, far from them, at int64's ends.
        origin = (
            0
            if origins == "epoch"
            else int(
                rng.choice([I64_MIN, I64_MAX, -1, 1_700_000_000 * 10**9 + 123_457, int(rng.integers(-(2**62), 2**62))])
            )
        )
        rows = random_rows(rng, origin)
        se = pl.DataFrame(rows, schema=SCHEMA, orient="row")
        if rng.random() < 0.3:
            se = se.sample(fraction=1.0, shuffle=True, seed=seed)
        # A time range around the rows, at times (as scan's start=/end= give): every row is in it.
        ts = [r[2] for r in rows] or [0]
        start = max(min(ts) - int(rng.integers(0, 3000)), I64_MIN) if rng.random() < 0.3 else None
        # (No end past a packet at the last ns of time: nothing can be read before such an end.)
        end = min(max(ts) + int(rng.integers(1, 3000)), I64_MAX) if rng.random() < 0.3 and max(ts) < I64_MAX else None
        got, sparse = _scan._fill_bins(se, start, end, origin)
        want, want_sparse = brute_fill(rows, limit, start, end, origin)
        assert sparse == want_sparse
        assert got.schema == se.schema
        if not want_sparse or len(want_sparse) < len({r[1] for r in rows}):
            assert got.rows() == want
        else:
            # Nothing filled: the series is left as it came.
            assert got.equals(se)


def test_fill_edge_cases() -> None:
    empty = pl.DataFrame([], schema=SCHEMA, orient="row")
    assert _scan._fill_bins(empty) == (empty, [])
    for rows in (
        [(0, 10, 50, 7, 1)],  # one row
        [(0, 10, 50, 7, 1), (1, 10, 0, 1, 1), (1, 10, 90, 2, 1)],  # a group with a single bin
        [(0, 1, I64_MAX, 3, 1), (0, 1, I64_MAX - 4, 2, 1)],  # the last bin of time
        [(0, 7, I64_MIN, 3, 1), (0, 7, (I64_MIN // 7 + 3) * 7, 2, 1)],  # the clamped first bin
    ):
        got, sparse = _scan._fill_bins(pl.DataFrame(rows, schema=SCHEMA, orient="row"))
        assert (got.rows(), sparse) == brute_fill(rows, _scan.DENSE_SERIES_LIMIT)


@pytest.mark.parametrize(
    ("start", "end"), [(None, None), (1_000, 60_000), (25_000, 25_001), (-5_000, None), (None, 200_000)]
)
def test_scan_series_filled_against_brute_force(start: int | None, end: int | None, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    ts = np.sort(rng.integers(0, 100_000, 300))
    sizes = rng.integers(60, 1500, 300)
    # A nanosecond pcap of Ethernet frames: start/end select packets of a capture only.
    cap = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
    for t, n in zip(ts.tolist(), sizes.tolist(), strict=True):
        cap += struct.pack("<IIII", t // 10**9, t % 10**9, 14, n) + bytes(14)
    path = tmp_path / "c.pcap"
    path.write_bytes(bytes(cap))
    res = burstcore.scan(str(path), windows=["1us"], rates=["1Gbps"], bins=["1us", "333ns"], start=start, end=end)
    keep = (ts >= (start or 0)) & (ts < (end if end is not None else 2**62))
    for w in (1_000, 333):
        got = res.series.filter(pl.col("bin").dt.total_nanoseconds() == w)
        acc: dict[int, list[int]] = {}
        for t, s in zip(ts[keep].tolist(), sizes[keep].tolist(), strict=True):
            cell = acc.setdefault(t // w, [0, 0])
            cell[0] += s
            cell[1] += 1
        # From the bin holding start to the one holding end - 1 ns: the span ρ is over.
        lo = min(acc) if start is None else start // w
        hi = max(acc) if end is None else (end - 1) // w
        want = [(k * w, *acc.get(k, [0, 0])) for k in range(lo, hi + 1)] if acc else []
        assert got.select("start_ns", "bytes", "packets").rows() == want
