"""scan of column batches: an iterable of DataFrames or mappings, or a polars LazyFrame, is one
stream of packets scanned a batch at a time, with the result of a scan of the batches
concatenated (every table, and config), whatever the cuts; and of the capture the columns were
read from. Errors name the batch."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import burstcore
from tests import oracles
from tests.test_iter_packets import pcap, pcapng

RATES = ["100Mbps", "1Gbps", "10Gbps"]
WINDOWS = ["1us", "7us", "100us"]
BINS = ["5us", "1ms"]


@st.composite
def packets_and_cuts(draw: Any) -> tuple[pl.DataFrame, list[int]]:
    """Packets mostly in time order, some a little (within a 10 µs horizon) or a lot (past it)
    earlier than the one before; on 0-2 interfaces; and cuts into batches anywhere, empty
    batches among them."""
    n = draw(st.integers(0, 120))
    steps = draw(st.lists(st.integers(-30_000, 5_000), min_size=n, max_size=n))
    t, ts = 1_700_000_000_000_000_000, []
    for s in steps:
        # Mostly forward; now and then back by 20-30 µs (past the horizon: dropped) or by up to
        # 5 µs (within it: put in order), as a real capture's.
        t += s if s < -20_000 or s >= 0 else s + 15_000 if s < -15_000 else -s // 10
        ts.append(t)
    sizes = draw(st.lists(st.integers(0, 9000), min_size=n, max_size=n))
    ifs = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    df = pl.DataFrame(
        {
            "timestamp": pl.Series(ts, dtype=pl.Int64),
            "size": pl.Series(sizes, dtype=pl.UInt32),
            "interface": pl.Series(ifs, dtype=pl.UInt32),
        }
    )
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    return df, cuts


def split(df: pl.DataFrame, cuts: list[int]) -> list[pl.DataFrame]:
    bounds = [0, *cuts, df.height]
    return [df.slice(a, b - a) for a, b in itertools.pairwise(bounds)]


def assert_results_equal(a: burstcore.ScanResult, b: burstcore.ScanResult) -> None:
    for name in ("envelope", "backlog", "series", "groups", "summary", "interfaces"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert a.warnings == b.warnings
    assert a.config == b.config
    assert a == b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    packets_and_cuts(),
    st.sampled_from([["all"], ["interface"], ["all", "interface"]]),
    st.booleans(),
    st.sampled_from(["left", "both"]),
)
def test_batches_cut_anywhere_scan_as_the_frame_concatenated(
    data: tuple[pl.DataFrame, list[int]], by: list[str], with_rates: bool, closed: str
) -> None:
    df, cuts = data
    batches = split(df, cuts)
    opts: dict[str, Any] = dict(
        windows=WINDOWS, bins=BINS, by=by, closed=closed, reorder_horizon="10us", on_late="drop"
    )
    if with_rates:
        opts["rates"] = RATES
    whole = burstcore.scan(df, **opts)
    # A list (read twice when the rates are the default), as mappings too, and a generator.
    assert_results_equal(burstcore.scan(batches, **opts), whole)
    assert_results_equal(burstcore.scan(tuple(b.to_dict() for b in batches), **opts), whole)
    if with_rates:
        assert_results_equal(burstcore.scan(iter(batches), **opts), whole)
    # The frame's query collected in batches: the same.
    assert_results_equal(burstcore.scan(df.lazy(), **opts), whole)


@settings(max_examples=30, deadline=None)
@given(packets_and_cuts())
def test_batched_envelope_is_the_brute_force_one(data: tuple[pl.DataFrame, list[int]]) -> None:
    """Not only equal to the concatenated scan: E(τ) of the batches is the brute-force maximum
    over the packets in time order (none dropped: a horizon longer than any step back)."""
    df, cuts = data
    r = burstcore.scan(iter(split(df, cuts)), windows=WINDOWS, rates=RATES, reorder_horizon="1ms", on_late="error")
    s = df.sort("timestamp", maintain_order=True)
    ts, sizes = s["timestamp"].to_list(), s["size"].to_list()
    for w in WINDOWS:
        tau = burstcore._units.parse_duration(w, name="window")
        want = oracles.envelope(ts, sizes, tau)[0] if ts else None
        got = r.envelope.filter(pl.col("window_ns") == tau)["bytes"].to_list()
        assert got == ([] if want is None else [want])


COLUMNS = ["timestamp", "wire_len", "interface"]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 700), st.integers(0, 900))
def test_batches_of_iter_packets_scan_as_the_capture(batch_rows: int, n: int) -> None:
    """Columns read by iter_packets, batch by batch, scan as the capture itself does (every
    table but the interfaces, which columns do not have, and the config, which says how the
    capture was read)."""
    data = pcap(n)
    opts: dict[str, Any] = dict(windows=WINDOWS, rates=RATES, bins=BINS, by=["all", "interface"])
    of_file = burstcore.scan(data, **opts)
    batches = burstcore.iter_packets(data, columns=COLUMNS, batch_rows=batch_rows)
    of_batches = burstcore.scan(batches, **opts)
    for name in ("envelope", "backlog", "series", "groups", "summary"):
        assert_frame_equal(getattr(of_batches, name), getattr(of_file, name), check_exact=True)
    assert of_batches == burstcore.scan(burstcore.read_packets(data, columns=COLUMNS), **opts)


def test_an_iter_packets_reader_advanced_by_hand_is_refused() -> None:
    """A next() on it (to look at the first batch) and then a scan: the scan saw only the batches
    after it, a scan of part of the capture from a packet in its middle, without a word. Refused,
    saying what to give; the batch put back in front scans the whole, as the path does."""
    data = pcap(250)
    opts: dict[str, Any] = dict(windows=WINDOWS, rates=RATES)
    whole = burstcore.scan(burstcore.iter_packets(data, columns=COLUMNS, batch_rows=100), **opts)
    assert_frame_equal(whole.envelope, burstcore.scan(data, **opts).envelope, check_exact=True)
    reader = burstcore.iter_packets(data, columns=COLUMNS, batch_rows=100)
    first = next(reader)
    assert first.height == 100
    with pytest.raises(
        ValueError, match=r"^this iter_packets reader gave batches before this scan .*part of the capture"
    ):
        burstcore.scan(reader, **opts)
    # Refused before any batch was taken: the rest is still there, and with the first in front
    # the scan is the capture's.
    assert burstcore.scan(itertools.chain([first], reader), **opts) == whole
    # A loop left early leaves it the same.
    reader = burstcore.iter_packets(data, columns=COLUMNS, batch_rows=100)
    for _ in reader:
        break
    with pytest.raises(ValueError, match=r"^this iter_packets reader gave batches before this scan"):
        burstcore.scan(reader, **opts)
    # Read to its end by hand: no batch left, and the scan says so rather than give an empty result.
    reader = burstcore.iter_packets(data, columns=COLUMNS, batch_rows=100)
    assert sum(b.height for b in reader) == 250
    with pytest.raises(ValueError, match=r"^no batches: "):
        burstcore.scan(reader, **opts)
    # A generator of one's own, advanced by hand, is scanned from where it is (docs/limits.md):
    # what it gives is the caller's to say.
    own = (b for b in burstcore.iter_packets(data, columns=COLUMNS, batch_rows=100))
    next(own)
    assert burstcore.scan(own, **opts).summary["packets"][0] == 150


def test_a_lazyframe_with_a_derived_size_and_an_expression_filter_scans_as_its_eager_twin() -> None:
    """What tcpdump's language cannot say (an even port, a size from IP length) done in polars
    on scan_packets: the same result as the eager frame of read_packets with the same query,
    default rates (from a pre-pass: the query is run twice) included."""
    data = pcapng(3000)

    def query(frame: Any) -> Any:
        return (
            frame.filter(pl.col("timestamp").is_not_null())
            .filter((pl.col("dport") % 2 == 0) | pl.col("protocol").is_null())
            .with_columns(size=pl.col("ip_len").fill_null(pl.col("wire_len") - 14).cast(pl.UInt64) + 38)
        )

    lazy = query(burstcore.scan_packets(data, batch_rows=257))
    eager = query(burstcore.read_packets(data))
    assert 0 < eager.height < 3000
    opts: dict[str, Any] = dict(windows=WINDOWS, bins=BINS, by=["all", "interface"])
    assert_results_equal(burstcore.scan(lazy, **opts), burstcore.scan(eager, **opts))
    # Not the wire sizes: the derived ones were counted.
    assert burstcore.scan(lazy, **opts).summary["bytes"][0] == int(eager["size"].sum())


def test_an_empty_lazyframe_scans_to_the_empty_result() -> None:
    df = pl.DataFrame({"timestamp": pl.Series([], dtype=pl.Int64), "size": pl.Series([], dtype=pl.UInt64)})
    assert_results_equal(burstcore.scan(df.lazy().filter(pl.col("size") > 0)), burstcore.scan(df))


def good(n: int = 3, t0: int = 0) -> pl.DataFrame:
    return pl.DataFrame({"timestamp": [t0 + 1000 * i for i in range(n)], "size": [100] * n})


@pytest.mark.parametrize(
    ("batches", "error", "match"),
    [
        ([good(), good(t0=10_000), good(t0=20_000).drop("timestamp")], ValueError, r"^batch 2: .*'timestamp' column"),
        ([good(), good(t0=10_000).drop("size")], ValueError, r"^batch 1: .*'size' \(or 'wire_len'\) column"),
        (
            [good(), good(t0=10_000).with_columns(pl.col("timestamp") * 1.0)],
            ValueError,
            r"^batch 1: timestamps must be integer",
        ),
        ([good(), good(t0=10_000).with_columns(size=pl.lit(-1))], ValueError, r"^batch 1: sizes must be non-negative"),
        ([good(), {"timestamp": [20_000], "size": ["x"]}], ValueError, r"^batch 1: "),
        ([good(), "trace.pcap"], TypeError, r"^batch 1 is a str, not a DataFrame"),
        (
            [good().with_columns(interface=pl.lit(1, pl.UInt32)), good(t0=10_000)],
            ValueError,
            r"^batch 1 has no 'interface' column, where the batches before it had",
        ),
    ],
)
def test_a_bad_batch_is_named(batches: list[Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        burstcore.scan(iter(batches), rates=RATES)


def test_time_going_back_across_batches_names_the_batch_and_row() -> None:
    batches = [good(3, t0=50_000_000), good(2, t0=50_010_000), good(4, t0=10_000)]
    with pytest.raises(burstcore.OutOfOrderError, match=r"^batch 2, row 0: a packet 50.001ms earlier"):
        burstcore.scan(iter(batches), rates=RATES)
    # Within the horizon across the cut, or dropped: taken as the concatenated frame takes them.
    dropped = burstcore.scan(iter(batches), rates=RATES, on_late="drop")
    assert dropped == burstcore.scan(pl.concat(batches), rates=RATES, on_late="drop")
    assert dropped.summary["skipped_late"][0] == 4


def test_no_batch_at_all_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^no batches: the iterable of column batches gave none"):
        burstcore.scan(iter([]), rates=RATES)


def test_an_error_closes_the_batches_at_once() -> None:
    """The scan stops taking batches at the bad one, and closes the generator there (an
    iter_packets reader's input with it), not when it is collected."""
    taken: list[int] = []
    closed: list[bool] = []

    def gen() -> Iterator[pl.DataFrame]:
        try:
            for k in range(5):
                taken.append(k)
                yield good(t0=10_000 * k) if k != 1 else good().drop("size")
        finally:
            closed.append(True)

    it = gen()
    with pytest.raises(ValueError, match=r"^batch 1: "):
        burstcore.scan(it, rates=RATES)
    assert taken == [0, 1] and closed == [True]


class _Batches:
    """An iterator of batches that is not a generator (nothing closes it) and can be remembered."""

    def __init__(self, batches: list[pl.DataFrame]) -> None:
        self._left = iter(batches)

    def __iter__(self) -> _Batches:
        return self

    def __next__(self) -> pl.DataFrame:
        return next(self._left)


def test_an_iterator_a_scan_stopped_in_is_not_scanned_again() -> None:
    """Given again, it would give only the batches after the bad one: scanned as if they were the
    whole capture (a class iterator), or none (a generator, closed by the error). Refused, both."""
    batches = [good(3), good(3, t0=10_000).drop("size"), good(4, t0=20_000), good(2, t0=30_000)]
    with_rest = _Batches(batches)
    with pytest.raises(ValueError, match=r"^batch 1: "):
        burstcore.scan(with_rest, rates=RATES)
    assert burstcore.scan(pl.concat(batches[2:]), rates=RATES).summary["packets"][0] == 6  # what it would scan
    with pytest.raises(ValueError, match=r"^this _Batches was read by an earlier scan .*give a new one, or a list$"):
        burstcore.scan(with_rest, rates=RATES)

    def gen() -> Iterator[pl.DataFrame]:
        yield from batches

    closed = gen()
    with pytest.raises(ValueError, match=r"^batch 1: "):
        burstcore.scan(closed, rates=RATES)
    with pytest.raises(ValueError, match=r"^this generator was read by an earlier scan \(to its end, or to the error"):
        burstcore.scan(closed, rates=RATES)


def test_an_iterator_read_to_its_end_is_not_scanned_again() -> None:
    """The second scan of a used-up iterator says so, where the iterator can be remembered; where it
    cannot (``iter(list)``), the message for no batches names the likely cause."""
    done = (b for b in [good(3)])
    first = burstcore.scan(done, rates=RATES)
    assert first == burstcore.scan(good(3), rates=RATES)
    with pytest.raises(ValueError, match=r"^this generator was read by an earlier scan"):
        burstcore.scan(done, rates=RATES)
    plain = iter([good(3)])
    burstcore.scan(plain, rates=RATES)
    with pytest.raises(ValueError, match=r"^no batches: .*gave none; an iterator is used up once read \(by list"):
        burstcore.scan(plain, rates=RATES)


class _EqualBatches(_Batches):
    """Every one equal to every other, as a class with a value-like ``__eq__`` may be."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _EqualBatches)

    def __hash__(self) -> int:
        return 0


class _UnhashableBatches(_Batches):
    """``__eq__`` defined and ``__hash__`` None: no set can hold it."""

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = None  # type: ignore[assignment]


class _Reiterable(_Batches):
    """An iterable that is also an iterator, whose ``iter()`` gives a fresh one each time."""

    def __init__(self, batches: list[pl.DataFrame]) -> None:
        super().__init__([])
        self._batches = batches

    def __iter__(self) -> Iterator[pl.DataFrame]:  # type: ignore[override]
        return iter(self._batches)


def test_an_iterator_is_remembered_by_identity_not_by_equality() -> None:
    """A fresh iterator equal to a read one is scanned (it was refused); one that cannot be hashed
    is remembered (it was not: given again after an error, its batches after the bad one were
    scanned as the whole)."""
    batches = [good(3), good(4, t0=10_000)]
    whole = burstcore.scan(pl.concat(batches), rates=RATES)
    assert burstcore.scan(_EqualBatches(batches), rates=RATES) == whole
    assert burstcore.scan(_EqualBatches(batches), rates=RATES) == whole
    bad = [good(3), good(3, t0=10_000).drop("size"), good(4, t0=20_000)]
    unhashable = _UnhashableBatches(bad)
    with pytest.raises(ValueError, match=r"^batch 1: "):
        burstcore.scan(unhashable, rates=RATES)
    with pytest.raises(ValueError, match=r"^this _UnhashableBatches was read by an earlier scan"):
        burstcore.scan(unhashable, rates=RATES)


def test_an_iterable_whose_iter_is_fresh_is_scanned_again() -> None:
    """It has ``__next__``, but a scan takes ``iter()`` of it, a new iterator each time: its batches
    are all there again, as a list's are, and it is not refused."""
    batches = [good(3), good(4, t0=10_000)]
    whole = burstcore.scan(pl.concat(batches), rates=RATES)
    again = _Reiterable(batches)
    assert burstcore.scan(again, rates=RATES) == whole
    assert burstcore.scan(again, rates=RATES) == whole


def test_collect_batches_read_once_is_refused_naming_the_lazyframe() -> None:
    """polars' collect_batches() is an Arrow stream: refused when given again, and told to give the
    LazyFrame (not "table.to_reader()", which a LazyFrame has not)."""
    lf = pl.LazyFrame(good(3))
    batches = lf.collect_batches()
    assert burstcore.scan(batches, rates=RATES) == burstcore.scan(lf, rates=RATES)
    with pytest.raises(ValueError, match=r"read by an earlier scan .*\(lf\.collect_batches\(\)\), or the LazyFrame$"):
        burstcore.scan(batches, rates=RATES)


def test_an_iterator_without_rates_gets_the_link_speed_grid() -> None:
    """It cannot be read twice for the mean rate: the grid, as for a streamed capture, and said."""
    r = burstcore.scan(iter([good(), good(t0=10_000)]))
    assert r.config["rates"] == "link-speed grid (iterator of batches)"
    assert r.config["rates_bps"] == list(burstcore._scan.LINK_SPEED_GRID_BPS)


def test_a_lazyframe_over_a_file_object_without_rates_gets_the_link_speed_grid() -> None:
    """A scan_packets frame over a file object is read once: no mean-rate pre-pass (whose read
    would leave the main pass nothing), the grid instead; the result is the capture's scan."""
    import io

    data = pcap(2000)
    lazy = burstcore.scan_packets(io.BytesIO(data)).filter(pl.col("protocol") == 17)
    r = burstcore.scan(lazy)
    assert r.config["rates"] == "link-speed grid (LazyFrame reading a stream once)"
    assert r.config["rates_bps"] == list(burstcore._scan.LINK_SPEED_GRID_BPS)
    want = burstcore.scan(data, filter="udp", rates=r.config["rates_bps"])
    assert_frame_equal(r.envelope, want.envelope)
    assert_frame_equal(r.backlog, want.backlog)
    # A path is read again: the pre-pass and its multiples of the mean rate, as for the capture.
    path_lazy = burstcore.scan_packets(data)
    assert burstcore.scan(path_lazy).config["rates_bps"] == burstcore.scan(data).config["rates_bps"]


def test_the_column_scanner_takes_nothing_after_it_ends() -> None:
    scanner = burstcore._burstcore.ColumnScanner([1000], "left", [10**9], [], ["all"], 0, "error", 10)
    ts, sz = np.array([5, 6], dtype=np.int64), np.array([1, 2], dtype=np.uint64)
    scanner.push(ts, sz, None)
    assert scanner.batches == 1
    out = scanner.finish()
    assert list(out["envelope"]["bytes"]) == [3]
    with pytest.raises(RuntimeError, match="has ended"):
        scanner.push(ts, sz, None)
    with pytest.raises(RuntimeError, match="has ended"):
        scanner.finish()


def test_a_list_of_paths_is_still_several_captures(tmp_path: Any) -> None:
    a = tmp_path / "a.pcap"
    a.write_bytes(pcap(5))
    with pytest.warns(burstcore.SharedPacketsWarning):
        assert burstcore.scan([str(a), str(a)], rates=RATES).summary["packets"][0] == 10


def test_a_polars_without_collect_batches_still_scans_a_lazyframe(monkeypatch: Any) -> None:
    """Below polars' collect_batches the frame is collected whole and given in slices: the same
    result (in the memory of the whole frame, as docs/limits.md says)."""
    df = pl.DataFrame({"timestamp": [1000 * i for i in range(50)], "size": [60 + i for i in range(50)]})
    lazy = df.lazy().with_columns(size=pl.col("size") * 2)
    want = burstcore.scan(lazy.collect(), windows=WINDOWS)
    monkeypatch.delattr(pl.LazyFrame, "collect_batches", raising=False)
    assert not hasattr(lazy, "collect_batches")
    assert_results_equal(burstcore.scan(lazy, windows=WINDOWS), want)


def test_scan_packets_asks_polars_for_a_plan_mark_only_where_it_takes_one(monkeypatch: Any) -> None:
    """polars 1.10's register_io_source has no explain_name: told by its signature, one call,
    the frame reads the capture. A TypeError polars raises is the user's, not a cue to make the
    frame again without the mark (which hid it, and could lose a Ctrl-C's KeyboardInterrupt)."""
    import polars.io.plugins as plugins

    real = plugins.register_io_source
    calls: list[dict[str, Any]] = []

    def polars_1_10(callable: Any, schema: Any) -> pl.LazyFrame:
        calls.append({"schema": schema})
        return real(callable, schema=schema)

    monkeypatch.setattr(plugins, "register_io_source", polars_1_10)
    data = pcap(30)
    lazy = burstcore.scan_packets(data)
    assert len(calls) == 1
    assert_frame_equal(lazy.collect(), burstcore.read_packets(data))

    def refusing(callable: Any, *, schema: Any, explain_name: str, explain_detail: str) -> pl.LazyFrame:
        calls.append({"explain_name": explain_name})
        raise TypeError("a schema this polars does not take")

    monkeypatch.setattr(plugins, "register_io_source", refusing)
    calls.clear()
    with pytest.raises(TypeError, match="a schema this polars does not take"):
        burstcore.scan_packets(data)
    assert calls == [{"explain_name": "burstcore.scan_packets"}]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets_and_cuts(), st.sampled_from(["epoch", "start", 1_700_000_000_000_003_333, -7]))
def test_batches_count_bins_from_the_origin_the_frame_does(
    data: tuple[pl.DataFrame, list[int]], origin: str | int
) -> None:
    # bin_origin and batches landed side by side: the batched scan must take the origin too
    # (left at the epoch, a "start" or an instant would give the frame's bins only by chance).
    df, cuts = data
    opts: dict[str, Any] = dict(
        windows=WINDOWS, bins=["3us", "1ms"], rates=RATES, reorder_horizon="10us", on_late="drop", bin_origin=origin
    )
    whole = burstcore.scan(df, **opts)
    assert_results_equal(burstcore.scan(iter(split(df, cuts)), **opts), whole)
    assert_results_equal(burstcore.scan(split(df, cuts), **opts), whole)
