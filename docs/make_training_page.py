"""Regenerate docs/training-traffic.md (and its figures) from the shipped training captures.

    BURSTCORE_SHARED=/work/shared .venv/bin/python docs/make_training_page.py

Every number on the page comes from this script: burstcore's analyses on the captures, set
against the ground truth shipped with them (meta.json and the rank logs).
`tests/test_training_page.py` regenerates the page of capture d alone (a few seconds; the whole
page takes about a minute) and checks that each of its lines is the committed page's.
"""

from __future__ import annotations

import itertools
import json
import os
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl

import burstcore

HERE = Path(__file__).resolve().parent
CAPS = [
    ("a_ring4_mlp5m_1g_bridge", "pcapng.zst", "a: ring, 4 ranks, 1 Gbit/s"),
    ("b_ps4_mlp5m_1g_bridge", "pcapng.zst", "b: parameter server, 4 ranks, 1 Gbit/s"),
    ("d_ring2_resnetsmall_noshape_bridge", "pcapng", "d: ring, 2 ranks, unshaped"),
]
WINDOWS = ["10us", "100us", "1ms", "5ms", "10ms", "50ms", "100ms"]


def _stretches(path: str, its: list[dict], model: float, first: int) -> tuple:
    """Short stretches of the capture against its rank logs (the page's table of them)."""
    windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
    # The logged period as in the table above: iteration 0, longer in ring mode, left out there.
    period = (windows[-1][0] - windows[first][0]) / (len(windows) - 1 - first)
    t0 = its[0]["t_iter_start_ns_min"]
    spans = [
        (t0 + int((k + off) * period), t0 + int((k + off + length) * period))
        for k in (0, 2, 4)
        for off in (0.1, 0.5, 0.85)
        for length in (2, 3, 5)
        if k + off + length <= len(its)
    ]
    if "b_ps4" in path:
        spans.append((t0 + int(2.2e9), t0 + int(7.0e9)))
    # The logged spacings drift (d's from 32 to 68 ms, iteration 0's the longest): a period off
    # the mean spacing may still be right against the spacings the stretch itself touches.
    spacings = [(w_lo, nxt - w_lo) for (w_lo, _), (nxt, _) in itertools.pairwise(windows)]
    found, ratios, errs, others, wrong = 0, [], [], [], []
    for lo, hi in spans:
        it = burstcore.iterations(path, start=lo, end=hi)
        if it.period_ns is None or abs(it.period_ns / period - 1) > 0.1:
            others.append(it.period_ns or 0)
            touched = [gap for at, gap in spacings if at < hi and at + gap > lo]
            if not (it.period_ns and touched and 0.9 * min(touched) <= it.period_ns <= 1.1 * max(touched)):
                wrong.append(it.period_ns or 0)
            continue
        found += 1
        rows = it.iterations.filter(pl.col("whole")).select("start_ns", "comm_end_ns", "bytes").iter_rows()
        for a, e, nbytes in rows:
            _, k = max((min(e, w_hi) - max(a, w_lo), k) for k, (w_lo, w_hi) in enumerate(windows))
            errs.append(a - windows[k][0])
            if k >= first:
                ratios.append(nbytes / model)
    worst = max(errs, key=abs, default=0)
    off = sum(abs(r - 1) > 0.05 for r in ratios)
    other = _ms_range(others) if others else "-"
    drift = (min(g for _, g in spacings), max(g for _, g in spacings))
    return (
        (len(spans), found, len(errs), min(ratios, default=0), max(ratios, default=0), worst, off, other),
        (len(others) - len(wrong), wrong, drift),
    )


def _count_word(n: int) -> str:
    return ["no", "one", "two", "three", "four", "five"][n] if n < 6 else f"{n:,}"


def _ms_range(periods: list[int]) -> str:
    """'9-65', or one figure where they all round alike."""
    lo, hi = (f"{x / 1e6:.0f}" for x in (min(periods, default=0), max(periods, default=0)))
    return lo if lo == hi else f"{lo}-{hi}"


# The two studies' metrics and the calls that give them (static: no capture is read for it).
STUDY_METRICS = [
    (
        "E(τ), most bytes in any window of length τ",
        '`scan(path, windows=[...]).envelope["bytes"]` (half-open `[s, s+τ)`; `closed="both"` for `[s, s+τ]`)',
    ),
    (
        "PtM(τ)",
        '`envelope["ptm"]`, ρ from the first packet to the last; of one phase: `start=`/`end=`',
    ),
    (
        "B_max(r)",
        '`scan(path, rates=[...]).backlog["bmax_bytes"]` (`rate_over_mean`: r/ρ)',
    ),
    (
        "bursts once per iteration",
        "`iterations(path)`: one segment per iteration; `bursts(path, gap=...)` splits at the"
        " gaps inside a phase too (table above)",
    ),
    (
        "M1 bytes sent per worker",
        '`host_volumes(path)["sent_bytes"]` (wire bytes, `frame.len`, as the study)',
    ),
    (
        "M2 traffic matrix",
        "`traffic_matrix(path)`",
    ),
    (
        "M3, M4 throughput, all and per pair",
        '`scan(path, by=["all", "pair"], bins=["1ms", "10ms"]).series["rate_bps"]` (bins from'
        ' the epoch, as pandas\' `resample` by default; `bin_origin="start"` for its'
        ' `origin="start"`)',
    ),
    (
        "M5 flows, directional 4-tuples, no timeout",
        '`flows(path, key="flow4", filter="tcp").height` (the study counted TCP only)',
    ),
    (
        "M6, M7 flow sizes, first and last packet",
        "`flows(...)` columns `bytes`, `first_seen`, `last_seen`",
    ),
    (
        "M8 flow activity in 10 s bins",
        '`scan(path, by="flow4", bins=["10s"], bin_origin="start").series`: bins from the first'
        ' packet, as the study\'s (`resample(origin="start")`); the default counts them from the epoch',
    ),
    (
        "M9, M10 mean throughput of a stretch",
        '`scan(path, bins=["1s"], start=..., end=...).series`: every bin of the stretch, idle'
        " ones as zeros, so its mean is ρ over whole bins",
    ),
    (
        "M11 data per training step",
        '`iterations(path).iterations["bytes"]`; the study\'s total bytes × step time / '
        "capture length counts the idle head and tail (0.48 MB a step on d, against 5.9 MB an"
        " iteration)",
    ),
    (
        "M12, M13 accuracy and training time",
        "the training log, not the traffic",
    ),
]


def main(out_dir: Path = HERE, shared: Path | None = None, caps: list[tuple[str, str, str]] = CAPS) -> None:
    """The page (and its figure) into ``out_dir``, of ``caps`` (a test gives fewer captures: then
    only their rows and their notes are the committed page's)."""
    if shared is None:
        shared = Path(os.environ.get("BURSTCORE_SHARED", HERE.parent.parent / "shared"))
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    out: list[str] = []
    w = out.append
    w("# The anatomy of training traffic\n")
    w("Generated by `docs/make_training_page.py` from the captures in `shared/captures` (see their")
    w("README): real PyTorch DDP training over gloo/TCP, with per-rank logs as ground truth.\n")

    ptm_rows, it_rows, burst_rows, stretch_rows = [], [], [], []
    stretch_notes: list[str] = []
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for stem, ext, label in caps:
        path = str(shared / "captures" / f"{stem}.{ext}")
        meta = json.loads((shared / "captures" / f"{stem}.meta.json").read_text())
        starts = [x["t_iter_start_ns_min"] for x in meta["iterations"]]
        loop = (starts[1], meta["iterations"][-1]["t_step_end_ns_max"])
        r = burstcore.scan(path, windows=WINDOWS, rates=["1Gbps"])
        env = r.envelope.filter(pl.col("by") == "all")
        ptm_rows.append((label, [float(x) for x in env["ptm"]]))
        ax.loglog(env["window_ns"].to_list(), env["ptm"].to_list(), marker="o", label=label)

        it = burstcore.iterations(path)
        # Each detected iteration is the logged one whose communication window overlaps its
        # phase most; iteration 0 is left out in ring mode (it differs there).
        its = meta["iterations"]
        windows = [(x["t_comm_start_ns_min"], x["t_comm_end_ns_max"]) for x in its]
        first = 1 if meta["mode"] == "ring" else 0
        per_logged: dict[int, list[int]] = {}
        chain: list[int] = []  # the logged iterations the detected period is the mean spacing over
        for a, e, nbytes, in_period in it.iterations.select(
            "start_ns", "comm_end_ns", "bytes", "in_period"
        ).iter_rows():
            overlap, k = max((min(e, hi) - max(a, lo), k) for k, (lo, hi) in enumerate(windows))
            if overlap > 0 and in_period:
                chain.append(k)
            if overlap > 0 and k >= first:
                per_logged.setdefault(k, []).append(nbytes)
        # The logged period over the same iterations: from their iteration starts (forward pass)
        # and from their communication starts (what the detector sees begin).
        span = len(chain) - 1
        truth = (starts[chain[-1]] - starts[chain[0]]) / span
        comm_starts = [x["t_comm_start_ns_min"] for x in its]
        truth_comm = (comm_starts[chain[-1]] - comm_starts[chain[0]]) / span
        d_leads = [comm_starts[k] - starts[k] for k in (chain[0], chain[-1])]
        matched = [v[0] for v in per_logged.values() if len(v) == 1]
        pk = burstcore.read_packets(path, columns=["timestamp", "payload_len", "protocol"])
        ts = pl.col("timestamp").dt.epoch("ns")
        tl = pk.filter(
            (ts >= windows[first][0])
            & (ts <= its[-1]["t_step_end_ns_max"])
            & (pl.col("protocol") == 6)
            & pl.col("payload_len").is_not_null()
        )
        data = tl.filter(pl.col("payload_len") > 0).height
        acks = tl.filter(pl.col("payload_len") == 0).height
        payload = meta["expected_payload_bytes_per_iter"]["all_links_total"]
        model = payload / 1448 * (1514 + 66 * acks / data)
        mean_bytes = sum(matched) / max(len(matched), 1)
        it_rows.append(
            (
                label,
                it.period_ns or 0,
                f"{chain[0]}-{chain[-1]}",
                truth,
                truth_comm,
                it.confidence,
                len(matched),
                len(its) - first,
                mean_bytes,
                model,
                acks / data,
            )
        )

        row, (local, others, drift) = _stretches(path, its, model, first)
        stretch_rows.append((label, row))
        if local:
            name = label.split(":")[0]
            found_locally = row[1] + local
            rest = " and ".join(f"{p / 1e6:.0f}" for p in sorted(others))
            inside = all(0 < p < drift[0] * 0.9 for p in others)
            many = len(others) > 1
            note = (
                f"{name}'s iterations drift from {drift[0] / 1e6:.0f} to {drift[1] / 1e6:.0f} ms, so against the"
                " logged spacings the stretch itself touches (within 10 % of the shortest to the longest)"
                f" {found_locally} of its {row[0]} stretches find the period"
                + (f"; the other {_count_word(len(others)) if many else ''} took {rest} ms" if others else "")
                + ((", bursts inside a phase." if many else ", a burst inside a phase.") if others and inside else ".")
            )
            stretch_notes.append(textwrap.fill(note.replace("other  took", "other took"), width=100))

        b = burstcore.bursts(path, gap="1ms")
        bl = b.bursts.filter((pl.col("start_ns") >= loop[0]) & (pl.col("start_ns") <= loop[1]))
        big = bl.filter(pl.col("bytes") >= 100_000)
        n_it = len(starts) - 1
        median = big["duration_ns"].median()  # None without big bursts
        median_ns = float(median) if isinstance(median, int | float) else 0.0
        burst_rows.append((label, bl.height / n_it, big.height / n_it, median_ns))

        if stem.startswith(("a_", "b_")):
            m = burstcore.traffic_matrix(path)
            ips = [x["ip"] for x in meta["ranks"]]
            cell = {(s, d): v for s, d, v in m.select("src", "dst", "bytes").iter_rows()}
            w(f"## Traffic matrix, {label}\n")
            w("Bytes sent from row to column over the whole capture (MB); rank 0 first.\n")
            w("| from \\ to | " + " | ".join(f"rank {j}" for j in range(len(ips))) + " |")
            w("|---" * (len(ips) + 1) + "|")
            for i, a in enumerate(ips):
                w(f"| rank {i} | " + " | ".join(f"{cell.get((a, c), 0) / 1e6:.1f}" for c in ips) + " |")
            w("")
            total = int(m["bytes"].sum())
            data_bytes = meta["capture"]["files"][0]["capinfos"]["data_bytes"]
            w(f"Matrix total {total:,} B = capinfos data bytes {data_bytes:,} B.\n")

    ax.set_xlabel("window τ (ns)")
    ax.set_ylabel("PtM(τ)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(fig_dir / "training-ptm.png", dpi=80)
    plt.close(fig)

    w("## Peak-to-mean ratio PtM(τ), ring vs parameter server\n")
    w("![PtM(τ)](figures/training-ptm.png)\n")
    w("| capture | " + " | ".join(WINDOWS) + " |")
    w("|---" * (len(WINDOWS) + 1) + "|")
    for label, v in ptm_rows:
        w(f"| {label} | " + " | ".join(f"{x:.1f}" for x in v) + " |")
    w("")
    w("The 1 Gbit/s shaped jobs (a, b) keep the link busy for most of each iteration, so their PtM at")
    w("5 ms stays in the low single digits; the unshaped job d shows the short-burst, long-idle shape")
    w("of the published measurements. PtM here is over the whole capture, from its first packet to its")
    w("last, start-up and idle tail included (the study's choice of span for ρ is not known). On d that")
    w("choice decides the figure: its first packet is a stray IGMP report 1.72 s before the job's, and")
    w("training fills 0.40 s of the 5.29 s, so PtM(5 ms) is 61.8 over the capture, 41.6 over the job's")
    w("TCP traffic and 4.6 over the logged training iterations 1-7 (4.9 with iteration 0, from its start;")
    w("iteration period 46 ms, which bounds it near 9). To measure one phase, give its stretch:")
    w("`scan(path, start=..., end=...)` reads only")
    w("[start, end) and takes ρ over it (`tests/test_time_range.py` checks the training phase of d).\n")

    w("## Iterations: detected period vs ground truth\n")
    w(
        "| capture | detected period (ms) | over logged iterations | logged, comm starts (ms) | error "
        "| logged, iteration starts (ms) | error | confidence "
        "| iterations found / logged | bytes per iteration (MB) | model (MB) | ratio |"
    )
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, p, over, t, tc, c, nf, nl, mb, mo, _ in it_rows:
        w(
            f"| {label} | {p / 1e6:.2f} | {over} | {tc / 1e6:.2f} | {100 * (p / tc - 1):+.1f} % "
            f"| {t / 1e6:.2f} | {100 * (p / t - 1):+.1f} % | {c:.3f} | {nf} / {nl} "
            f"| {mb / 1e6:.3f} | {mo / 1e6:.3f} | {mb / mo:.3f} |"
        )
    w("")
    d_row = it_rows[-1]
    d_lead = [lead / 1e6 for lead in d_leads]
    w("The detected period is the mean spacing of the detected phase starts over the iterations")
    w("marked `in_period` (the longest run of whole iterations about one period apart); the ground")
    w("truth is the mean spacing over the same logged iterations (the column after the period), of")
    w("their logged communication starts (earliest over the ranks: what the detector sees begin)")
    w("and of their iteration starts. The two differ where the time from an iteration's start to its")
    w(f"first communication drifts: in d it goes from {d_lead[0]:.1f} to {d_lead[-1]:.1f} ms over the run, so the")
    w(
        f"error is {100 * (d_row[1] / d_row[4] - 1):+.1f} % against the communication starts and "
        f"{100 * (d_row[1] / d_row[3] - 1):+.1f} % against"
    )
    w("the iteration starts. In a and b the run includes iteration 0; in d it does not: iteration 0")
    w("(all gradients in one bucket) lasts longer, and its phase starts more than 1.5")
    w("autocorrelation periods before the next one's. Each detected iteration is matched to the")
    w("logged iteration whose communication window (earliest comm start to latest comm end over the")
    w('ranks) overlaps its communication phase most; "found" counts logged iterations matched by')
    w("exactly one detected iteration (iteration 0 left out in ring mode, where it differs), and the")
    w("bytes per iteration are the mean over those. Every detected iteration is a logged one: a burst")
    w("about one period from no other segment is not reported, which sets apart the parameter broadcast")
    w("before training (in a and d half an iteration's bytes, 0.5–1 s before iteration 0; it was")
    w("reported as an extra first iteration until the thirty-first landing). Overhead model for bytes per iteration:")
    w("gloo's payload (the logged gradient bytes: 2(n-1)/n of each rank's gradient in a ring,")
    w("twice each worker's gradient with a parameter server; `expected_payload_bytes_per_iter`)")
    w("travels in MSS-sized TCP")
    w("segments of 1448 B inside 1514 B frames (Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12 = 66 B),")
    w("so data frames weigh payload × 1514/1448; each data frame adds its share of 66 B pure ACKs at")
    w(
        "the ACK:data frame ratio counted over the measured iterations ("
        + ", ".join(f"{x[0][:1]}: {x[10]:.2f}" for x in it_rows)
        + ")."
    )
    w("An iteration's bytes are everything between its segment boundaries (ACKs included).\n")
    w("How the trace is cut into iterations: an iteration is a compute pause followed by a")
    w("communication phase, and the phase itself pauses between gradient buckets or ring steps (in d")
    w("for up to 8 ms inside a 20-32 ms phase). The two kinds of quiet differ in length: the compute")
    w("pause is the longest quiet run of its period. burstcore measures the typical compute pause")
    w("(byte-weighted median, over period-long chunks, of each chunk's longest run of bins carrying")
    w("at most 5 % of the median busy bin) and places the boundaries, by dynamic programming, at the")
    w("minima of the data rate smoothed over a window of that length (at least period/32, at most")
    w("the pause itself, so always shorter than the period), spaced 0.7-1.3 periods apart. At a")
    w("pause's centre the smoothed rate is zero, while gaps inside a phase are filled by the traffic")
    w("around them; a window a whole period long would smooth a strictly periodic trace to a")
    w("constant. The period is then the mean spacing of the detected phase starts.\n")
    w("A parameter server's iteration has two halves, the workers' gradients to the server (push)")
    w("and the sums back (pull), and in b the quiet between them (3-4 ms) is as deep as the compute")
    w("pause between iterations (0-23 ms: the first rank's push overlaps the server's pull to the")
    w("last). Over the whole capture the long quiet before iteration 0 and after iteration 7 holds")
    w("the boundaries in step; on a stretch of a few periods nothing did, and they fell between the")
    w("halves (b from 2.2 to 7.0 s after iteration 0: iterations of 96 and 90 MB against 127, a")
    w("period of 869 ms). What tells the halves apart is who sends: the push comes from many hosts,")
    w("the pull from one. burstcore counts the sending hosts (effective number, (Σ bytes)² / Σ bytes²")
    w("over the per-host data bytes) on either side of each bin: a point where, over a quarter")
    w("period, the senders after are at most 2/3 of those before is half-way through an iteration,")
    w("and its dip does not count; elsewhere the smoothed rate is weighed by sqrt(senders before /")
    w("senders after) over the smoothing window, which keeps the boundary at the turn from the pull")
    w("to the next push. In a ring the same hosts send on both sides and nothing changes. The table")
    w("below reads stretches (`start=`/`end=`) of 2, 3 and 5 periods (the mean spacing of the logged")
    w("communication starts, as in the table above), from 0.1, 0.5 and 0.85 periods after the start")
    w("of iterations 0, 2 and 4, b's 2.2-7.0 s as well: the stretches whose period is within 10 % of")
    w("the logged one,")
    w("the iterations reported whole there, their bytes against the model (iteration 0 left out in")
    w("ring mode), and their starts against the logged communication starts. The first and last")
    w("iteration of a stretch are whole only when a pause is seen between them and its edge, so in b")
    w("they are left out (docs/limits.md, The period of training iterations).\n")
    w(
        "| capture | stretches | period found (±10 %) | iterations whole | bytes / model | "
        "worst start error (ms) | whole with bytes off by > 5 % | period of the others (ms) |"
    )
    w("|---|---|---|---|---|---|---|---|")
    for label, (n, found, whole, lo, hi, err, off, other) in stretch_rows:
        w(f"| {label} | {n} | {found} | {whole} | {lo:.3f}-{hi:.3f} | {err / 1e6:+.1f} | {off} | {other} |")
    w("")
    w("On the other stretches another lag was taken for the period: finding the period on a few")
    w("periods is a weakness of its own (docs/limits.md, The period of training iterations), apart")
    w("from where the boundaries fall.")
    for note in stretch_notes:
        w(note)
    # A measurement of the code before the lags past half the stretch (not rerun by this script).
    w("Before the autocorrelation looked at lags beyond half the stretch (docs/limits.md, The period")
    w("of training iterations), a found 21 and d 10 (17 against their own spacings).")
    w("A period not borne out is marked unsure (`period_doubts`, and a `CaptureWarning` giving the")
    w("reason and what to do): on the 186 stretches of 2, 2.5, 3 and 4 periods of")
    w("`tests/test_analysis_captures.py` every period not within 10 % of the logged spacings is (8),")
    w("and so are 113 of the 178 right ones, all on stretches under four periods, where under three whole")
    w("iterations one period apart bear the autocorrelation out (docs/limits.md, The period of")
    w("training iterations, which lists each doubt and what to do).\n")

    w("## Bursts per iteration (ON/OFF trains, gap 1 ms)\n")
    w("| capture | bursts per iteration | bursts ≥ 100 kB per iteration | median duration of those (ms) |")
    w("|---|---|---|---|")
    for label, n, nb, d in burst_rows:
        w(f"| {label} | {n:.1f} | {nb:.1f} | {d / 1e6:.2f} |")
    w("")
    w("## The two studies' metrics, call by call\n")
    w("| study's metric | burstcore |")
    w("|---|---|")
    for metric, call in STUDY_METRICS:
        w(f"| {metric} | {call} |")
    w("")
    w("## How to reproduce\n")
    # Formatted as `ruff format` leaves it, so that the page passes a format check of its code.
    w("```python\nimport burstcore\n\nit = burstcore.iterations(path)  # .period_ns, .confidence, .iterations")
    w('burstcore.traffic_matrix(path)\nburstcore.flows(path, key="biflow")\nburstcore.bursts(path, gap="1ms")')
    w(
        'burstcore.superpose([path, path], offsets="random", seed=0, '
        "max_offset=it.period_ns / 1e9).multiplexing_gain\n```\n"
    )
    (out_dir / "training-traffic.md").write_text("\n".join(out))


if __name__ == "__main__":
    main()
