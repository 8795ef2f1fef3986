"""The analyses on the real training captures against their ground truth (rank logs, meta.json),
and flows/conversations against tshark's `-z conv` tables on corpus files."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import warnings
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

import burstcore

CAPTURES = [
    ("a_ring4_mlp5m_1g_bridge", "pcapng.zst"),
    ("b_ps4_mlp5m_1g_bridge", "pcapng.zst"),
    ("d_ring2_resnetsmall_noshape_bridge", "pcapng"),
]


@pytest.fixture(scope="module")
def shared() -> Path:
    env = os.environ.get("BURSTCORE_SHARED")
    if env is None:
        pytest.skip("BURSTCORE_SHARED not set")
    p = Path(env)
    assert (p / "captures").is_dir(), f"BURSTCORE_SHARED={env} but {p / 'captures'} is missing"
    return p


def _load(shared: Path, stem: str, ext: str) -> tuple[Path, dict, list[dict]]:
    d = shared / "captures"
    path = d / f"{stem}.{ext}"
    assert path.is_file(), f"{path} missing"
    meta = json.loads((d / f"{stem}.meta.json").read_text())
    logs = []
    for k in range(meta["n_workers"]):
        with open(d / f"{stem}.rank{k}.jsonl") as f:
            logs.append([json.loads(line) for line in f if line.strip()])
    return path, meta, logs


def _truth_period(meta: dict) -> float:
    """Mean spacing of logged iteration starts, iteration 0 (different in ring mode) left out."""
    s = [it["t_iter_start_ns_min"] for it in meta["iterations"]]
    return (s[-1] - s[1]) / (len(s) - 2)


_results: dict[str, dict] = {}


@pytest.mark.parametrize(("stem", "ext"), CAPTURES)
def test_iteration_period_and_bytes_match_training_logs(shared, stem, ext):
    path, meta, logs = _load(shared, stem, ext)
    it = burstcore.iterations(str(path))
    truth = _truth_period(meta)
    assert it.period_ns is not None, f"{stem}: no period found"
    assert abs(it.period_ns / truth - 1) <= 0.03, f"{stem}: period {it.period_ns} vs logged {truth:.0f}"
    assert it.confidence > 0.05
    # Read whole, the period is borne out: nothing to doubt, nothing said.
    assert not it.period_doubts, (stem, it.period_doubts)
    assert it.periods_seen is not None and it.periods_seen > 4, (stem, it.periods_seen)
    # Read whole, no iteration of the training loop is cut; the period is the mean spacing over
    # exactly the iterations marked in_period.
    assert it.iterations["whole"].all(), stem
    chain = it.iterations.filter(pl.col("in_period"))["start_ns"]
    assert chain.len() >= 2 and it.period_ns == (chain[-1] - chain[0]) // (chain.len() - 1), stem

    # Which logged iteration each detected one is: the one whose logged communication window
    # (earliest comm start to latest comm end over the ranks) overlaps its communication phase
    # most. Not the logged iteration starts: those mark the forward pass, and in d iteration 0's
    # phase runs past them. Every detected iteration must be one of them: the parameter broadcast
    # before training (a and d: half an iteration's bytes, 0.5-1 s before iteration 0) is not.
    its = meta["iterations"]
    windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
    # Iteration 0 differs in ring mode (README: DDP's first all-reduce is one bucket, warm-up
    # brings extra ACKs), so it is left out there, as in the period.
    first = 1 if meta["mode"] == "ring" else 0
    per_logged: dict[int, list[int]] = defaultdict(list)
    for a, b, nbytes in it.iterations.select("start_ns", "comm_end_ns", "bytes").iter_rows():
        overlaps = [(min(b, hi) - max(a, lo), k) for k, (lo, hi) in enumerate(windows)]
        best, k = max(overlaps)
        assert best > 0, f"{stem}: an iteration detected at {a}, outside the training loop"
        per_logged[k].append(nbytes)
    assert it.iterations.height == len(its), f"{stem}: {it.iterations.height} iterations, {len(its)} logged"
    rows = it.iterations.select("start_ns", "comm_end_ns", "end_ns", "duration_ns").iter_rows()
    assert all(a <= c <= e and d == e - a for a, c, e, d in rows), stem
    for k in range(first, len(its)):
        assert len(per_logged[k]) == 1, f"{stem}: logged iteration {k} matches detected {per_logged[k]}"
    # Over the same iterations (in_period, matched as above), the period against the logged one.
    # The logged comm starts, not the iteration starts: the phase starts are what is detected,
    # and in d the forward pass before them lengthens by 1.2 ms an iteration (-2.5 % against the
    # iteration starts, +0.1 % against the comm starts).
    ks = [
        max((min(b, hi) - max(a, lo), k) for k, (lo, hi) in enumerate(windows))[1]
        for a, b in it.iterations.filter(pl.col("in_period")).select("start_ns", "comm_end_ns").iter_rows()
    ]
    assert ks == list(range(ks[0], ks[0] + len(ks))), f"{stem}: in_period are logged iterations {ks}"
    same = (its[ks[-1]]["t_comm_start_ns_min"] - its[ks[0]]["t_comm_start_ns_min"]) / (len(ks) - 1)
    assert abs(it.period_ns / same - 1) <= 0.01, f"{stem}: period {it.period_ns} vs logged {same:.0f} over {ks}"
    mean = sum(per_logged[k][0] for k in range(first, len(its))) / (len(its) - first)

    # Logged gradient traffic per iteration, from the rank logs: in a ring all-reduce each rank
    # sends 2(n-1)/n of its gradient to its neighbour; with a parameter server every other rank
    # sends its gradient to rank 0 and gets the sum back.
    n = meta["n_workers"]
    grads = {(e["rank"], e["iter"]): e["grad_bytes"] for log in logs for e in log if e["event"] == "iter"}
    per_iter = [
        sum(grads[r, k] * 2 * (n - 1) // n for r in range(n))
        if meta["mode"] == "ring"
        else sum(2 * grads[r, k] for r in range(1, n))
        for k in range(first, len(its))
    ]
    payload = sum(per_iter) / len(per_iter)
    assert payload == meta["expected_payload_bytes_per_iter"]["all_links_total"]

    # Overhead model: gloo's TCP segments carry MSS = 1448 B of payload in 1514 B frames
    # (Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12 = 66 B), and every data frame brings
    # its share of 66 B pure ACKs, at the ACK:data ratio counted over the measured iterations.
    pk = burstcore.read_packets(str(path), columns=["timestamp", "wire_len", "payload_len", "protocol"])
    ts = pl.col("timestamp").dt.epoch("ns")
    loop = pk.filter(
        (ts >= windows[first][0])
        & (ts <= its[-1]["t_step_end_ns_max"])
        & (pl.col("protocol") == 6)
        & pl.col("payload_len").is_not_null()
    )
    # Together the iterations hold the training loop's traffic, from the first logged
    # communication start to the last end, iteration 0 included: its phase is longer than the
    # 1.3 periods a segment may span in d, and a boundary inside it had left 9 % of it (555 kB)
    # in no iteration (98.8 % of the loop).
    in_loop = pk.filter((ts >= windows[0][0]) & (ts <= windows[-1][1]))["wire_len"].cast(pl.UInt64).sum()
    held = it.iterations["bytes"].sum()
    assert abs(held / in_loop - 1) <= 0.001, f"{stem}: iterations hold {held} B, the loop {in_loop} B"
    data = loop.filter(pl.col("payload_len") > 0).height
    acks = loop.filter(pl.col("payload_len") == 0).height
    model = payload / 1448 * (1514 + 66 * acks / data)
    assert abs(mean / model - 1) <= 0.05, f"{stem}: bytes/iteration {mean:.0f} vs model {model:.0f}"
    _results[stem] = {"period": it.period_ns, "truth": truth, "bytes": mean, "model": model}


# 2.5 and 5 s stretches of b, from iteration 0's logged start: each begins and ends inside a
# communication phase. 2.5 s from 0.5 s gave iterations of 74, 126 and 104 MB, all counted as
# whole, and a period of 827 ms against 1,051. (Stretches where the boundaries fell between the
# push and the pull half of an iteration, e.g. 2.2-7.0 s: the test after this one.)
B_STRETCHES = [(0.5, 3.0), (0.3, 2.8), (1.5, 6.5), (0.5, 5.5)]


@pytest.mark.parametrize(("lo_s", "hi_s"), B_STRETCHES)
def test_iterations_cut_by_a_stretch_are_not_whole(shared, lo_s, hi_s):
    path, meta, _ = _load(shared, *CAPTURES[1])
    its = meta["iterations"]
    t0 = its[0]["t_iter_start_ns_min"]
    lo, hi = t0 + int(lo_s * 1e9), t0 + int(hi_s * 1e9)
    windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
    it = burstcore.iterations(str(path), start=lo, end=hi)
    # Bytes of a whole iteration: the logged payload in 1514 B frames of 1448 B, plus its pure ACKs
    # (the ACK:data ratio of the stretch), as in the test above.
    pk = burstcore.read_packets(str(path), columns=["payload_len", "protocol"], start=lo, end=hi)
    tcp = pk.filter((pl.col("protocol") == 6) & pl.col("payload_len").is_not_null())
    ratio = tcp.filter(pl.col("payload_len") == 0).height / tcp.filter(pl.col("payload_len") > 0).height
    model = meta["expected_payload_bytes_per_iter"]["all_links_total"] / 1448 * (1514 + 66 * ratio)
    whole, chain = [], []
    for a, b, nbytes, is_whole, in_period in it.iterations.select(
        "start_ns", "comm_end_ns", "bytes", "whole", "in_period"
    ).iter_rows():
        _, k = max((min(b, w_hi) - max(a, w_lo), k) for k, (w_lo, w_hi) in enumerate(windows))
        cut = windows[k][0] < lo or windows[k][1] > hi
        assert not (cut and is_whole), f"{lo_s}-{hi_s} s: logged iteration {k} is cut, reported whole"
        if is_whole:
            whole.append(k)
            assert abs(nbytes / model - 1) <= 0.05, f"{lo_s}-{hi_s} s: iteration {k}: {nbytes} B vs {model:.0f}"
        assert is_whole or not in_period
        if in_period:
            chain.append(k)
    # Every logged iteration inside the stretch is reported whole, once.
    assert whole == [k for k, (w_lo, w_hi) in enumerate(windows) if lo <= w_lo and w_hi <= hi], whole
    assert it.period_ns is not None
    if len(chain) >= 2:
        truth = (its[chain[-1]]["t_comm_start_ns_min"] - its[chain[0]]["t_comm_start_ns_min"]) / (len(chain) - 1)
    else:
        # One whole iteration: no spacing to measure, the autocorrelation's period stands.
        assert it.period_ns == it.acf_period_ns
        truth = _truth_period(meta)
    assert abs(it.period_ns / truth - 1) <= 0.03, f"{lo_s}-{hi_s} s: period {it.period_ns} vs {truth:.0f}"


def test_iterations_of_short_stretches_of_b_keep_push_and_pull_together(shared):
    """Stretches of b of 2 to 5 periods, from several points of an iteration: every iteration
    reported whole is one logged iteration, push and pull together, as over the whole capture.
    On few periods, with no long quiet at the stretch's edges to hold them in step, the
    boundaries fell between the push and the pull half (2.2-7.0 s after iteration 0: iterations
    of 96 and 90 MB against 127, starting 354-608 ms off the logged communication starts, and a
    period of 869 ms), in 43 of 113 stretches of a grid of 2-10 periods. The oracle is the rank
    logs: the logged communication windows, the logged payload (bytes as in the tests above)."""
    path, meta, _ = _load(shared, *CAPTURES[1])
    its = meta["iterations"]
    windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
    period = (windows[-1][0] - windows[0][0]) / (len(windows) - 1)
    pk = burstcore.read_packets(str(path), columns=["timestamp", "payload_len", "protocol"])
    ts = pl.col("timestamp").dt.epoch("ns")
    loop = ts.is_between(windows[0][0], windows[-1][1])
    tcp = pk.filter((pl.col("protocol") == 6) & pl.col("payload_len").is_not_null() & loop)
    ratio = tcp.filter(pl.col("payload_len") == 0).height / tcp.filter(pl.col("payload_len") > 0).height
    model = meta["expected_payload_bytes_per_iter"]["all_links_total"] / 1448 * (1514 + 66 * ratio)
    t0 = its[0]["t_iter_start_ns_min"]
    stretches = [
        (t0 + int((k + off) * period), t0 + int((k + off + length) * period))
        for k in (0, 2, 4)
        for off in (0.1, 0.5, 0.85)
        for length in (2, 3, 5)
        if k + off + length <= len(its)
    ]
    assert (t0 + int(2.2e9), t0 + int(7.0e9)) not in stretches
    stretches.append((t0 + int(2.2e9), t0 + int(7.0e9)))
    for lo, hi in stretches:
        case = f"{(lo - t0) / 1e9:.2f}-{(hi - t0) / 1e9:.2f} s"
        it = burstcore.iterations(str(path), start=lo, end=hi)
        whole = []
        for a, b, nbytes, is_whole in it.iterations.select("start_ns", "comm_end_ns", "bytes", "whole").iter_rows():
            _, k = max((min(b, w_hi) - max(a, w_lo), k) for k, (w_lo, w_hi) in enumerate(windows))
            assert not (is_whole and (windows[k][0] < lo or windows[k][1] > hi)), f"{case}: iteration {k} is cut"
            if is_whole:
                whole.append(k)
                assert abs(nbytes / model - 1) <= 0.05, f"{case}: iteration {k}: {nbytes} B vs {model:.0f}"
                # Whole, the capture's phases start up to 72 ms after the logged communication
                # starts (the first rank's push waits for the server's pull to the last one).
                err = a - windows[k][0]
                assert abs(err) <= 0.1 * period, f"{case}: iteration {k} starts {err / 1e6:+.0f} ms off"
        inside = [k for k, (w_lo, w_hi) in enumerate(windows) if lo <= w_lo and w_hi <= hi]
        # The first and last iteration inside are left out when no pause is seen at the edge.
        assert set(inside[1:-1]) <= set(whole) <= set(inside) and len(set(whole)) == len(whole), (case, whole)
        assert it.acf_period_ns is not None and abs(it.acf_period_ns / period - 1) <= 0.1, (case, it.acf_period_ns)
        chain = [
            max((min(b, w_hi) - max(a, w_lo), k) for k, (w_lo, w_hi) in enumerate(windows))[1]
            for a, b in it.iterations.filter(pl.col("in_period")).select("start_ns", "comm_end_ns").iter_rows()
        ]
        if len(chain) >= 2:
            truth = (windows[chain[-1]][0] - windows[chain[0]][0]) / (len(chain) - 1)
            assert abs(it.period_ns / truth - 1) <= 0.03, f"{case}: period {it.period_ns} vs {truth:.0f}"


# Below this confidence a period is a guess (the CLI's help and the report say so).
GUESS = 0.05


@pytest.mark.parametrize(("stem", "ext"), CAPTURES)
def test_every_host_and_pair_finds_the_period_or_says_it_cannot(shared, stem, ext):
    """Each capture read whole, and through `src host` of each rank and `src host and dst host`
    of each ordered pair of ranks (the ranks from meta.json): the period is within 10 % of the
    logged spacings of the communication starts, or the result says it cannot find it: a
    warning (`period_doubts`, each one also a `CaptureWarning`) and a confidence under 0.05.
    A ring edge carries a ring's steps inside each phase (about 57 ms apart in a) and a pair that
    carries no gradients only ACKs and set-up: before, a's edge 10.99.0.11 to .14 stepped down
    from its 615 ms peak to a step of 57 ms, doubted at a confidence of 0.115, and a's other
    edges and hosts took a step at 0.08-0.14; b's pairs between workers took 79-485 ms at
    0.25-0.41. The ring's edges and ranks now find it (the test below); the pairs off a ring
    and b's pairs between workers do not, doubted at a confidence under 0.005."""
    path, meta, _ = _load(shared, stem, ext)
    starts = [x["t_comm_start_ns_min"] for x in meta["iterations"]]
    spacings = [b - a for a, b in itertools.pairwise(starts)]
    ips = [r["ip"] for r in meta["ranks"]]
    views = (
        [None] + [f"src host {a}" for a in ips] + [f"src host {a} and dst host {b}" for a in ips for b in ips if a != b]
    )
    found = {}
    for flt in views:
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(str(path), filter=flt)
        said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
        assert all(d in said for d in it.period_doubts), (flt, it.period_doubts, said)
        p = it.period_ns
        right = p is not None and 0.9 * min(spacings) <= p <= 1.1 * max(spacings)
        found[flt] = (p, round(it.confidence, 3), it.period_doubts)
        assert right or p is None or (it.period_doubts and it.confidence < GUESS), (stem, flt, found[flt])
    # The one edge the report came from, and every capture read whole, find it.
    if stem.startswith("a"):
        edge = found["src host 10.99.0.11 and dst host 10.99.0.14"][0]
        assert edge is not None and 0.9 * min(spacings) <= edge <= 1.1 * max(spacings), found
    whole = found[None][0]
    assert whole is not None and 0.9 * min(spacings) <= whole <= 1.1 * max(spacings), found


RINGS = [c for c in CAPTURES if c[0].startswith(("a_", "d_"))]


@pytest.mark.parametrize(("stem", "ext"), RINGS)
def test_each_ring_edge_and_rank_of_a_ring_finds_the_iteration_period(shared, stem, ext):
    """A ring all-reduce read through each rank's `src host` and each ring edge (the pairs of
    ranks carrying gradients: at least 4/5 of the payload meta.json expects each rank to send
    over the logged iterations). An edge carries one burst per ring step, a dozen steps tens of
    ms apart a phase, grouped once per iteration with a compute pause barely longer than the
    gaps between steps. The period is the iteration's: within 10 % of the logged spacings of the
    communication starts, the confidence is at least 0.05, and no shorter lag is doubted. On
    each edge, too, the iterations marked in_period are distinct logged iterations (by their
    communication windows), three at least, and from iteration 1 on their starts are as far
    apart on average as the logged ones within 3 % (not on a rank's view: a's rank 10.99.0.12
    counts the parameter broadcast before training as a ninth iteration, in_period). Before, three of a's four edges
    and two of its ranks took a ring step of 53-61 ms (confidence 0.015-0.041), and a's rank
    10.99.0.11 and edge .11 to .14, right, were doubted for a lag of 321 ms repeating half as
    deep (a step within 8 % of half the period)."""
    path, meta, _ = _load(shared, stem, ext)
    its = meta["iterations"]
    windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
    spacings = [b[0] - a[0] for a, b in itertools.pairwise(windows)]
    ips = [r["ip"] for r in meta["ranks"]]
    sent = meta["expected_payload_bytes_per_iter"]["per_rank_sent"]["every rank"] * len(its)
    m = burstcore.traffic_matrix(str(path), size="payload")
    edges = [
        (a, b) for a, b, n in m.select("src", "dst", "bytes").iter_rows() if a in ips and b in ips and n >= 0.8 * sent
    ]
    assert len(edges) == len(ips), (stem, edges)
    views = [f"src host {a}" for a in ips] + [f"src host {a} and dst host {b}" for a, b in edges]
    found = {}
    for flt in views:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", burstcore.CaptureWarning)
            it = burstcore.iterations(str(path), filter=flt)
        found[flt] = (it.period_ns, round(it.confidence, 3), it.period_doubts)
        assert it.period_ns is not None and 0.9 * min(spacings) <= it.period_ns <= 1.1 * max(spacings), found
        assert it.confidence >= GUESS, found
        assert not any("repeats at" in d for d in it.period_doubts), found
        if " and dst host " not in flt:
            continue
        chain = [
            max((min(b, hi) - max(a, lo), k) for k, (lo, hi) in enumerate(windows))
            for a, b in it.iterations.filter(pl.col("in_period")).select("start_ns", "comm_end_ns").iter_rows()
        ]
        assert all(o > 0 for o, _ in chain) and len({k for _, k in chain}) == len(chain) >= 3, (flt, chain)
        # Iteration 0 left out, as in the whole capture's test: DDP sends it as one bucket, and
        # rank .11's view of a finds its phase 257 ms late (a piece, 22 MB of 32).
        starts = it.iterations.filter(pl.col("in_period"))["start_ns"].to_list()
        later = [(t, k) for t, (_, k) in zip(starts, chain, strict=True) if k >= 1]
        found_p = (later[-1][0] - later[0][0]) / (len(later) - 1)
        truth = (windows[later[-1][1]][0] - windows[later[0][1]][0]) / (len(later) - 1)
        assert abs(found_p / truth - 1) <= 0.03, (flt, found_p, truth)


# Per capture, of its stretches of 2, 2.5, 3 and 4 periods (the grid below, 186 in all): how
# many must find the period, by the rank logs. Measured: a 63 of 64, b 65 of 65, d 50 of 57.
# Before the step down to the fundamental kept to the best peak's own curve: 60, 65 and 49.
SHORT_RIGHT = {"a": 63, "b": 65, "d": 50}


@pytest.mark.parametrize(("stem", "ext"), CAPTURES)
def test_short_stretches_find_the_period_or_say_it_is_unsure(shared, stem, ext):
    """Stretches of 2, 2.5, 3 and 4 periods (the median logged iteration period) from 0.1, 0.5
    and 0.85 periods after each logged communication start: a capture of a few iterations.
    Right means within 10 % of the logged spacings of the communication starts the stretch
    touches (d's drift from 32 to 68 ms). With the period at half a 2-period stretch's length and
    lags looked for up to half of it, a took 22-188 ms for 650 on 8 of 18 stretches of 2
    periods. A period not right is never given as sure: 12 of the 186 were, without a word (a:
    44, 158, 18 and 269 ms for about 630; d: 43, 36, 23, 41, 41, 4, 19 and 41 ms for about 50).
    Where the stretch holds four periods, a period found right is not doubted either."""
    path, meta, _ = _load(shared, stem, ext)
    starts = [x["t_comm_start_ns_min"] for x in meta["iterations"]]
    median = meta["iteration_period_s"]["median"] * 1e9
    end = meta["iterations"][-1]["t_comm_end_ns_max"] + 0.3 * median
    cases = [
        (starts[k] + int(off * median), starts[k] + int((off + length) * median), length)
        for length in (2, 2.5, 3, 4)
        for k in range(6)
        for off in (0.1, 0.5, 0.85)
    ]
    right, wrong = 0, []
    for lo, hi, length in [c for c in cases if c[1] <= end]:
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            it = burstcore.iterations(str(path), start=lo, end=hi)
        said = [str(m.message) for m in told if issubclass(m.category, burstcore.CaptureWarning)]
        # Every doubt in the result is told, and every doubt told is in the result.
        assert sorted(it.period_doubts) == sorted(d for d in said if d in it.period_doubts), (it.period_doubts, said)
        spacings = [b - a for a, b in itertools.pairwise(starts) if b > lo and a < hi]
        p = it.period_ns
        case = ((lo - starts[0]) / 1e9, (hi - starts[0]) / 1e9, p, it.period_doubts)
        if p is not None and 0.9 * min(spacings) <= p <= 1.1 * max(spacings):
            right += 1
            assert length < 4 or not it.period_doubts, case
        else:
            assert it.period_doubts, case
            wrong.append(case)
    assert right >= SHORT_RIGHT[stem[0]], (stem, right, wrong)


@pytest.mark.parametrize(("stem", "ext"), CAPTURES)
def test_traffic_matrix_shape_and_totals(shared, stem, ext):
    path, meta, _ = _load(shared, stem, ext)
    m = burstcore.traffic_matrix(str(path))
    cap = meta["capture"]["files"][0]
    # Totals: capinfos's data bytes (sum of frame lengths) and packets.
    assert int(m["bytes"].sum()) == cap["capinfos"]["data_bytes"]
    assert int(m["packets"].sum()) == cap["capinfos"]["packets"]
    ips = [r["ip"] for r in meta["ranks"]]
    cell = {(s, d): b for s, d, b in m.select("src", "dst", "bytes").iter_rows()}
    n = len(ips)
    between = sum(cell.get((a, b), 0) for a in ips for b in ips)
    if meta["mode"] == "ring":
        for k, a in enumerate(ips):
            heaviest = max(range(n), key=lambda j: cell.get((a, ips[j]), 0))
            assert heaviest in ((k + 1) % n, (k - 1) % n), f"{stem}: rank {k} sends most to rank {heaviest}"
        ring = sum(cell.get((ips[k], ips[(k + 1) % n]), 0) for k in range(n))
        if n > 2:
            ring += sum(cell.get((ips[k], ips[(k - 1) % n]), 0) for k in range(n))
        assert ring >= 0.9 * between
    else:
        with0 = sum(b for (s, d), b in cell.items() if ips[0] in (s, d))
        assert with0 >= 0.95 * between
    hv = burstcore.host_volumes(str(path))
    assert int(hv["sent_bytes"].sum()) == int(hv["received_bytes"].sum()) == cap["capinfos"]["data_bytes"]


@pytest.mark.parametrize(("stem", "ext"), CAPTURES)
def test_flows_match_tshark_records(shared, stem, ext):
    path, meta, _ = _load(shared, stem, ext)
    df = burstcore.flows(str(path))
    rows = {
        f"{s}:{sp} -> {d}:{dp}": (n, b)
        for s, d, sp, dp, n, b in df.filter(pl.col("protocol") == 6)
        .select("src", "dst", "sport", "dport", "packets", "bytes")
        .iter_rows()
    }
    recorded = meta["capture"]["files"][0]["tshark"]["tcp_flows"]
    assert recorded
    for f in recorded:
        assert rows.get(f["flow"]) == (f["frames"], f["bytes"]), f["flow"]


def test_superposition_of_a_capture_with_itself(shared):
    path, _, _ = _load(shared, *CAPTURES[2])
    ws = ["100us", "1ms", "5ms", "50ms"]
    single = burstcore.scan(str(path), windows=ws, rates=["1Gbps"])
    e1 = dict(single.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows())
    same = burstcore.superpose([str(path)] * 2, offsets=[0, 0], windows=ws, rates=["1Gbps"])
    assert dict(same.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows()) == {
        w: 2 * b for w, b in e1.items()
    }
    span = int(single.summary["span_ns"][0])
    with pytest.warns(burstcore.CaptureWarning, match="overlap no other"):
        apart = burstcore.superpose([str(path)] * 2, offsets=[0, f"{span + 10**9}ns"], windows=ws, rates=["1Gbps"])
    assert dict(apart.envelope.filter(pl.col("by") == "all").select("window_ns", "bytes").iter_rows()) == e1
    assert apart.summary["packets"][0] == 2 * single.summary["packets"][0]


# ------------------------------------------------------------------ tshark -z conv on the corpus

_TUNNELS = {"gre", "mpls", "geneve", "vxlan", "ah", "esp", "ppp", "pppoes", "sctp", "icmp", "icmpv6"}
_ANY_ORDER = "9000000000s"
_BROKEN = re.compile(r"malformed|invalid|bad|bogus|trunc|corrupt|crash|overflow|oobr|fuzz|heapoverflow|-cve|poc|macsec")
_CONV = re.compile(r"^(\S+)\s+<->\s+(\S+)\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s")


json_totals: dict[Path, int] = {}


def _sample(shared: Path) -> list[Path]:
    """Corpus files tshark reads cleanly whose IP traffic is not tunnelled, fragmented or wrapped
    in ICMP errors (there tshark counts the inner headers as conversations too), and whose packets
    all have timestamps (burstcore skips, and accounts for, packets without one)."""
    out = []
    with open(shared / "corpus" / "index.jsonl") as f:
        for line in f:
            d = json.loads(line)
            c = d.get("content") or {}
            if (
                d["tshark_exit"] == 0
                and d.get("capinfos_exit") == 0
                and (d.get("packets_tshark") or 0) > 0
                and d["linktypes"] == [1]
                and not d.get("packets_without_timestamp")
                and (c.get("ipv4_pkts") or 0) > 0
                and not (c.get("ipv4_frag_pkts") or c.get("ipv6_frag_pkts") or c.get("vlan_pkts"))
                and not c.get("ipv6_pkts")  # IPv6 beside IPv4 here is 6in4 tunnels (inner headers)
                and not (_TUNNELS & set(c.get("tags", [])))
                and d["size"] < 400_000
                # Deliberately broken headers (and MACsec, which burstcore does not decode): tshark drops
                # what it deems invalid, burstcore keeps what it can decode (both account for every
                # frame; conversations differ).
                and not _BROKEN.search(d["path"].lower())
                and not any(t in d["path"].lower() for t in _TUNNELS | {"tunnel", "vxlan", "6in4", "ipip"})
            ):
                out.append(shared / "corpus" / d["path"])
                json_totals[out[-1]] = d["sum_origlen_tshark"]
    return out[::6]


def _tshark_conv(path: Path) -> dict[str, dict[tuple[str, str], tuple[int, int]]]:
    """{table: {(a, b): (frames a->b, frames b->a)}} from tshark's conv tables."""
    res = subprocess.run(
        ["tshark", "-n", "-r", str(path), "-q", "-z", "conv,tcp", "-z", "conv,udp", "-z", "conv,ip"],
        capture_output=True,
        text=True,
        check=True,
    )
    tables: dict[str, dict] = {}
    current = None
    for line in res.stdout.splitlines():
        if line.endswith("Conversations"):
            current = line.split()[0]
            tables[current] = {}
        elif current and (m := _CONV.match(line)):
            a, b, back, fwd, _ = m.groups()
            tables[current][(a, b)] = (int(fwd), int(back))
    return tables


def _ep(ip: str, port: int) -> str:
    return f"{ip}:{port}"  # tshark writes IPv6 endpoints without brackets too


def test_flow_and_conversation_counts_equal_tshark(shared):
    if shutil.which("tshark") is None:
        pytest.fail("tshark is the oracle of this test: install it (bash .ci/setup does)")
    files = _sample(shared)
    assert len(files) >= 15, f"only {len(files)} corpus files in the sample"
    checked = 0
    for path in files:
        tables = _tshark_conv(path)
        # tshark keeps file order; an unbounded horizon keeps every packet of the odd files whose
        # timestamps jump back by years (the files are small, so holding them all is fine).
        bi = burstcore.flows(str(path), key="biflow", reorder_horizon=_ANY_ORDER)
        for proto, table in ((6, "TCP"), (17, "UDP")):
            ours = {}
            for s, d, sp, dp, a2b, b2a in (
                bi.filter(pl.col("protocol") == proto)
                .select("src", "dst", "sport", "dport", "src2dst_packets", "dst2src_packets")
                .iter_rows()
            ):
                ours[frozenset([_ep(s, sp), _ep(d, dp)])] = (_ep(s, sp), a2b, b2a)
            theirs = tables.get(table, {})
            assert len(ours) == len(theirs), f"{path}: {table} conversations {len(ours)} vs tshark {len(theirs)}"
            for (a, b), (fwd, back) in theirs.items():
                first, a2b, b2a = ours[frozenset([a, b])]
                assert (fwd, back) == ((a2b, b2a) if first == a else (b2a, a2b)), f"{path}: {a} <-> {b}"
        m = burstcore.traffic_matrix(str(path), reorder_horizon=_ANY_ORDER)
        assert int(m["bytes"].sum() or 0) == json_totals[path], f"{path}: matrix total vs tshark's frame.len sum"
        pairs: dict = defaultdict(lambda: [0, 0])
        for s, d, n in m.filter(pl.col("src").is_not_null()).select("src", "dst", "packets").iter_rows():
            if ":" in s:
                continue  # conv,ip is IPv4 only
            key = tuple(sorted([s, d]))
            pairs[key][0 if (s, d) == key else 1] += n
        theirs = tables.get("IPv4", {})
        assert len(pairs) == len(theirs), f"{path}: IPv4 conversations {len(pairs)} vs tshark {len(theirs)}"
        for (a, b), (fwd, back) in theirs.items():
            key = tuple(sorted([a, b]))
            got = pairs[key]
            assert (fwd, back) == ((got[0], got[1]) if (a, b) == key else (got[1], got[0])), f"{path}: {a} <-> {b}"
        checked += 1
    assert checked == len(files)
