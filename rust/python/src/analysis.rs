//! Bindings for the analyses of training traffic (flows, traffic matrix, size and gap
//! histograms, bursts, iterations, superposition): each one pass in Rust with the GIL released,
//! results handed over as columns (numpy arrays that own Rust's buffers) for polars.

use crate::columns::{col, opt_col, Addresses};
use crate::errors::{guard, to_py, WarningOut};
use crate::{accounting, late_policy, parse_filters, time_range, Filters, Span};
use crate::{config, interfaces_of, open_all, output_to_py, warnings_of, Control};
use burstcore::analysis::{
    BurstReport, FlowKey, FlowOptions, GapHistogram, IterationOptions, Quantile, SizeHistogram,
    ACF_BINS,
};
use burstcore::analyze::{self, OrderOptions};
use burstcore::capture::CaptureReader;
use burstcore::engine::{By, GroupKey};
use burstcore::pipeline::{Fcs, SizeKind};
use burstcore::Error;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flows, m)?)?;
    m.add_function(wrap_pyfunction!(traffic_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(histograms, m)?)?;
    m.add_function(wrap_pyfunction!(bursts, m)?)?;
    m.add_function(wrap_pyfunction!(iterations, m)?)?;
    m.add_function(wrap_pyfunction!(superpose, m)?)?;
    Ok(())
}

fn order(
    horizon_ns: i64,
    on_late: &str,
    range: Span,
    filter: Option<Filters>,
    sources: &[Bound<'_, PyAny>],
    size: &str,
    fcs: &str,
) -> PyResult<OrderOptions> {
    let (filter, file_filters) = parse_filters(filter, sources)?;
    Ok(OrderOptions::default()
        .with_reorder_horizon_ns(horizon_ns)
        .with_late(late_policy(on_late)?)
        .with_time_range(time_range(range))
        .with_filter(filter)
        .with_file_filters(file_filters)
        // The FCS rule is l1's; the Python layer refuses it with another size.
        .with_size(
            SizeKind::parse(size)
                .and_then(|s| Ok(s.with_fcs(Fcs::parse(fcs)?)))
                .map_err(to_py)?,
        ))
}

/// Run `f` over the opened sources without the GIL; progress, interrupts and warnings handled.
fn run<'py, T: Send>(
    py: Python<'py>,
    sources: &[Bound<'py, PyAny>],
    strict: bool,
    mmap: Option<bool>,
    progress: Option<Py<PyAny>>,
    f: impl FnOnce(
            &mut [CaptureReader],
            burstcore::pipeline::Progress<'_>,
        ) -> burstcore::error::Result<T>
        + Send,
) -> PyResult<(T, Vec<WarningOut>)> {
    let (out, warnings, _) = run_keeping(py, sources, strict, mmap, progress, f)?;
    Ok((out, warnings))
}

/// [`run`], also giving back the readers: what they learnt of their captures by the end of the
/// read (the interfaces each declared) is part of some results.
fn run_keeping<'py, T: Send>(
    py: Python<'py>,
    sources: &[Bound<'py, PyAny>],
    strict: bool,
    mmap: Option<bool>,
    progress: Option<Py<PyAny>>,
    f: impl FnOnce(
            &mut [CaptureReader],
            burstcore::pipeline::Progress<'_>,
        ) -> burstcore::error::Result<T>
        + Send,
) -> PyResult<(T, Vec<WarningOut>, Vec<CaptureReader>)> {
    // The analyses read on one thread.
    let (mut readers, total) = open_all(py, sources, strict, mmap, 1)?;
    let mut ctl = Control::new(py, progress, total)?;
    let res = py.detach(|| f(&mut readers, &mut |d| ctl.tick(d)));
    let out = res.map_err(|e| ctl.take(e))?;
    ctl.finish(py)?;
    let warnings = warnings_of(&readers);
    Ok((out, warnings, readers))
}

/// Flow records as columns, plus per-flow E(τ) rows when windows are given.
#[pyfunction]
#[pyo3(signature = (sources, key, idle_timeout_ns, windows_ns, max_flows, horizon_ns, on_late, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn flows<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    key: &str,
    idle_timeout_ns: Option<i64>,
    windows_ns: Vec<i64>,
    max_flows: usize,
    horizon_ns: i64,
    on_late: &str,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        let key = match key {
            "flow" | "flow5" => FlowKey::Flow5,
            "flow4" => FlowKey::Flow4,
            "biflow" => FlowKey::BiFlow5,
            other => {
                return Err(to_py(Error::invalid(format!(
                    "key={other:?}: use 'flow' (directional 5-tuple), 'flow4' (directional src:sport>dst:dport) or 'biflow' (both directions one flow)"
                ))))
            }
        };
        if let Some(t) = idle_timeout_ns.filter(|t| *t < 0) {
            return Err(to_py(Error::invalid(format!(
                "idle_timeout must be ≥ 0, got {t} ns"
            ))));
        }
        let opts = FlowOptions::default()
            .with_key(key)
            .with_idle_timeout_ns(idle_timeout_ns)
            .with_max_flows(max_flows);
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let ((rep, env, acc), warnings) = run(py, &sources, strict, mmap, progress, |r, p| {
            analyze::flows(r, opts, &windows_ns, ord, p)
        })?;
        let d = PyDict::new(py);
        let f = &rep.flows;
        let mut addresses = Addresses::default();
        addresses.col(&d, "src_ip", f.iter().map(|r| Some(r.src_ip)))?;
        addresses.col(&d, "dst_ip", f.iter().map(|r| Some(r.dst_ip)))?;
        addresses.labels(&d, "addresses")?;
        col(&d, "protocol", f.iter().map(|r| r.protocol))?;
        col(&d, "src_port", f.iter().map(|r| r.src_port))?;
        col(&d, "dst_port", f.iter().map(|r| r.dst_port))?;
        col(&d, "first_seen_ns", f.iter().map(|r| r.first_seen_ns))?;
        col(&d, "last_seen_ns", f.iter().map(|r| r.last_seen_ns))?;
        col(&d, "packets", f.iter().map(|r| r.packets))?;
        col(&d, "bytes", f.iter().map(|r| r.bytes))?;
        col(&d, "src2dst_packets", f.iter().map(|r| r.src2dst_packets))?;
        col(&d, "src2dst_bytes", f.iter().map(|r| r.src2dst_bytes))?;
        col(&d, "dst2src_packets", f.iter().map(|r| r.dst2src_packets))?;
        col(&d, "dst2src_bytes", f.iter().map(|r| r.dst2src_bytes))?;
        opt_col(
            &d,
            "retransmitted_packets",
            f.iter().map(|r| r.retransmitted_packets),
        )?;
        opt_col(
            &d,
            "retransmitted_bytes",
            f.iter().map(|r| r.retransmitted_bytes),
        )?;
        let e = PyDict::new(py);
        col(&e, "flow", env.rows.iter().map(|r| r.0 as u64))?;
        col(&e, "window_ns", env.rows.iter().map(|r| r.1))?;
        col(&e, "bytes", env.rows.iter().map(|r| r.2))?;
        col(&e, "max_packets", env.rows.iter().map(|r| r.3))?;
        d.set_item("envelope", e)?;
        d.set_item("no_flow_packets", rep.no_flow_packets)?;
        d.set_item("no_flow_bytes", rep.no_flow_bytes)?;
        d.set_item("accounting", accounting(py, &acc)?)?;
        Ok((d, warnings))
    })
}

/// Bytes and packets per ordered host pair and per host (None where a packet has no address).
#[pyfunction]
#[pyo3(signature = (sources, max_pairs, horizon_ns, on_late, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn traffic_matrix<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    max_pairs: usize,
    horizon_ns: i64,
    on_late: &str,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let ((m, acc), warnings) = run(py, &sources, strict, mmap, progress, |r, p| {
            analyze::traffic_matrix(r, max_pairs, ord, p)
        })?;
        // The report's hosts are the labels both tables index: one string per host, shared.
        let labels = PyList::new(py, m.hosts.iter().map(|h| h.map(|h| h.to_string())))?;
        let pairs = PyDict::new(py);
        col(&pairs, "src", m.pairs.iter().map(|p| p.0))?;
        col(&pairs, "dst", m.pairs.iter().map(|p| p.1))?;
        pairs.set_item("addresses", &labels)?;
        col(&pairs, "bytes", m.pairs.iter().map(|p| p.2))?;
        col(&pairs, "packets", m.pairs.iter().map(|p| p.3))?;
        drop(m.pairs);
        let t = &m.host_totals;
        let hosts = PyDict::new(py);
        hosts.set_item("host", &labels)?;
        col(&hosts, "sent_bytes", t.iter().map(|h| h.sent_bytes))?;
        col(&hosts, "sent_packets", t.iter().map(|h| h.sent_packets))?;
        col(&hosts, "received_bytes", t.iter().map(|h| h.received_bytes))?;
        col(
            &hosts,
            "received_packets",
            t.iter().map(|h| h.received_packets),
        )?;
        let d = PyDict::new(py);
        d.set_item("pairs", pairs)?;
        d.set_item("hosts", hosts)?;
        d.set_item("total_bytes", m.total_bytes)?;
        d.set_item("total_packets", m.total_packets)?;
        d.set_item("accounting", accounting(py, &acc)?)?;
        Ok((d, warnings))
    })
}

/// Columns of size histograms (non-empty sizes), gap histograms (non-empty log2 buckets) and
/// quantiles, for "all" and each group. A row's group is an index into `labels`: a million
/// groups' rows would otherwise be a Python string each.
#[derive(Default)]
struct HistCols {
    labels: Vec<String>,
    size_group: Vec<u32>,
    size: Vec<u64>,
    size_count: Vec<u64>,
    gap_group: Vec<u32>,
    gap_lo: Vec<Option<i64>>,
    gap_hi: Vec<Option<i64>>,
    gap_count: Vec<u64>,
    q_group: Vec<u32>,
    q: Vec<f64>,
    q_size: Vec<Option<u64>>,
    q_gap_lo: Vec<Option<i64>>,
    q_gap_hi: Vec<Option<i64>>,
    s_group: Vec<u32>,
    s_packets: Vec<u64>,
    s_bytes: Vec<u64>,
    s_oversize: Vec<u64>,
    s_gaps: Vec<u64>,
    s_gap_min: Vec<Option<i64>>,
    s_gap_max: Vec<Option<i64>>,
}

impl HistCols {
    /// One group's rows; `what` picks the histogram rows built, as `gaps()` has no use for the
    /// size rows a group can have (65,536 and more).
    fn add(
        &mut self,
        what: Hist,
        label: String,
        s: &SizeHistogram,
        g: &GapHistogram,
        qs: &[(f64, Quantile)],
    ) {
        let at = u32::try_from(self.labels.len()).unwrap_or(u32::MAX);
        self.labels.push(label);
        if what == Hist::Sizes {
            self.add_sizes(at, s);
        } else {
            self.add_gaps(at, g);
        }
        for &(shown, q) in qs {
            self.q_group.push(at);
            self.q.push(shown);
            self.q_size.push(s.quantile(q));
            let b = g.quantile_bounds(q);
            self.q_gap_lo.push(b.and_then(|x| ns(x.0)));
            self.q_gap_hi.push(b.and_then(|x| ns(x.1)));
        }
        self.s_group.push(at);
        self.s_packets.push(s.count);
        self.s_bytes.push(s.bytes);
        self.s_oversize.push(s.overflow);
        self.s_gaps.push(g.count);
        self.s_gap_min.push(g.min_ns.and_then(ns));
        self.s_gap_max.push(g.max_ns.and_then(ns));
    }

    fn add_sizes(&mut self, at: u32, s: &SizeHistogram) {
        for (size, c) in s.nonzero() {
            self.size_group.push(at);
            self.size.push(size);
            self.size_count.push(c);
        }
    }

    fn add_gaps(&mut self, at: u32, g: &GapHistogram) {
        for (b, c) in g.nonzero() {
            let (lo, hi) = GapHistogram::bucket_bounds(b);
            self.gap_group.push(at);
            self.gap_lo.push(ns(lo));
            self.gap_hi.push(ns(hi));
            self.gap_count.push(c);
        }
    }
}

/// A gap as every `*_ns` is handed over: int64, null past it (more than 292 years, which only
/// damaged timestamps give).
fn ns(gap: u64) -> Option<i64> {
    i64::try_from(gap).ok()
}

/// Which histogram's rows a call returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hist {
    Sizes,
    Gaps,
}

#[pyfunction]
#[pyo3(signature = (sources, what, by, quantiles, max_groups, horizon_ns, on_late, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn histograms<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    what: &str,
    by: Option<String>,
    quantiles: Vec<(f64, u128, u128)>,
    max_groups: usize,
    horizon_ns: i64,
    on_late: &str,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        // Each q as the float its column shows and the exact ratio its ranks read (Python's
        // Fraction of what the user wrote).
        let quantiles = quantiles
            .into_iter()
            .map(|(shown, num, den)| match Quantile::ratio(num, den) {
                Some(q) if (0.0..=1.0).contains(&shown) => Ok((shown, q)),
                _ => Err(to_py(Error::invalid(format!(
                    "quantile {num}/{den} ({shown}) is outside [0, 1] or its denominator past 2^126"
                )))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let what = match what {
            "sizes" => Hist::Sizes,
            "gaps" => Hist::Gaps,
            _ => {
                return Err(to_py(Error::invalid(format!(
                    "what={what:?}: use 'sizes' or 'gaps'"
                ))))
            }
        };
        let by = by.map(|b| By::parse(&b)).transpose().map_err(to_py)?;
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let ((h, acc), warnings) = run(py, &sources, strict, mmap, progress, |r, p| {
            analyze::histograms(r, by, max_groups, ord, p)
        })?;
        let mut cols = HistCols::default();
        cols.add(
            what,
            "all".to_string(),
            &h.all_sizes,
            &h.all_gaps,
            &quantiles,
        );
        let mut groups: Vec<(&GroupKey, _)> = h.groups.iter().collect();
        groups.sort_by_key(|(k, _)| **k);
        for (k, (s, g)) in groups {
            cols.add(what, k.label(), s, g, &quantiles);
        }
        let d = PyDict::new(py);
        d.set_item("labels", cols.labels)?;
        let sz = PyDict::new(py);
        sz.set_item("group", cols.size_group.into_pyarray(py))?;
        sz.set_item("size", cols.size.into_pyarray(py))?;
        sz.set_item("packets", cols.size_count.into_pyarray(py))?;
        let gp = PyDict::new(py);
        gp.set_item("group", cols.gap_group.into_pyarray(py))?;
        opt_col(&gp, "lo_ns", cols.gap_lo)?;
        opt_col(&gp, "hi_ns", cols.gap_hi)?;
        gp.set_item("gaps", cols.gap_count.into_pyarray(py))?;
        let qd = PyDict::new(py);
        qd.set_item("group", cols.q_group.into_pyarray(py))?;
        qd.set_item("q", cols.q.into_pyarray(py))?;
        opt_col(&qd, "size", cols.q_size)?;
        opt_col(&qd, "lo_ns", cols.q_gap_lo)?;
        opt_col(&qd, "hi_ns", cols.q_gap_hi)?;
        let sd = PyDict::new(py);
        sd.set_item("group", cols.s_group.into_pyarray(py))?;
        sd.set_item("packets", cols.s_packets.into_pyarray(py))?;
        sd.set_item("bytes", cols.s_bytes.into_pyarray(py))?;
        sd.set_item("over_65535", cols.s_oversize.into_pyarray(py))?;
        sd.set_item("gaps", cols.s_gaps.into_pyarray(py))?;
        opt_col(&sd, "min_ns", cols.s_gap_min)?;
        opt_col(&sd, "max_ns", cols.s_gap_max)?;
        d.set_item("sizes", sz)?;
        d.set_item("gaps", gp)?;
        d.set_item("quantiles", qd)?;
        d.set_item("groups", sd)?;
        d.set_item("by", by.map(|b| b.name()))?;
        d.set_item("accounting", accounting(py, &acc)?)?;
        Ok((d, warnings))
    })
}

/// Bursts as columns: those of the whole trace first (group 0, "all"), then each group's, in
/// key order; a row's group is an index into `labels`.
#[pyfunction]
#[pyo3(signature = (sources, gap_ns, horizon_ns, on_late, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", by=None, max_groups=usize::MAX, fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn bursts<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    gap_ns: i64,
    horizon_ns: i64,
    on_late: &str,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    by: Option<String>,
    max_groups: usize,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        let by = by.map(|b| By::parse(&b)).transpose().map_err(to_py)?;
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let ((rep, acc), warnings) = run(py, &sources, strict, mmap, progress, |r, p| {
            analyze::bursts_by(r, gap_ns, by, max_groups, ord, p)
        })?;
        let all = std::iter::once(("all".to_string(), &rep.all));
        let reports: Vec<(String, &BurstReport)> = all
            .chain(rep.groups.iter().map(|(k, b)| (k.label(), b)))
            .collect();
        let b = || {
            reports
                .iter()
                .enumerate()
                .flat_map(|(g, (_, r))| r.bursts.iter().map(move |x| (g as u32, x)))
        };
        let d = PyDict::new(py);
        d.set_item(
            "labels",
            reports.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        )?;
        col(&d, "group", b().map(|(g, _)| g))?;
        col(&d, "start_ns", b().map(|(_, x)| x.start_ns))?;
        col(&d, "end_ns", b().map(|(_, x)| x.end_ns))?;
        col(&d, "duration_ns", b().map(|(_, x)| x.duration_ns))?;
        col(&d, "bytes", b().map(|(_, x)| x.bytes))?;
        col(&d, "packets", b().map(|(_, x)| x.packets))?;
        d.set_item("gap_threshold_ns", rep.all.gap_threshold_ns)?;
        d.set_item("accounting", accounting(py, &acc)?)?;
        Ok((d, warnings))
    })
}

#[pyfunction]
#[pyo3(signature = (sources, bin_ns, min_period_ns, max_period_ns, horizon_ns, on_late, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn iterations<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    bin_ns: i64,
    min_period_ns: i64,
    max_period_ns: i64,
    horizon_ns: i64,
    on_late: &str,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        if bin_ns <= 0 || min_period_ns < 0 || max_period_ns <= min_period_ns {
            return Err(to_py(Error::invalid(format!(
                "need bin > 0 and 0 ≤ min_period < max_period; got bin {bin_ns} ns, periods {min_period_ns}..{max_period_ns} ns"
            ))));
        }
        let opts = IterationOptions::default()
            .with_bin_ns(bin_ns)
            .with_min_lag_ns(min_period_ns)
            .with_max_lag_ns(max_period_ns);
        let max_bins = opts.max_bins;
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let ((rep, acc), warnings) = run(py, &sources, strict, mmap, progress, |r, p| {
            analyze::iterations(r, opts, ord, p)
        })?;
        let it = &rep.iterations;
        let d = PyDict::new(py);
        d.set_item("period_ns", rep.period_ns)?;
        d.set_item("acf_period_ns", rep.acf_period_ns)?;
        d.set_item("confidence", rep.confidence)?;
        d.set_item("bin_ns", rep.bin_ns)?;
        d.set_item("beyond_bins", rep.beyond_bins)?;
        d.set_item("rejected_period_ns", rep.rejected_period_ns)?;
        d.set_item("rejected_pause_ns", rep.rejected_pause_ns)?;
        d.set_item("shorter_period_ns", rep.shorter_period_ns)?;
        d.set_item("span_ns", rep.span_ns)?;
        d.set_item("analysed_bytes", rep.bytes)?;
        d.set_item("max_bins", max_bins)?;
        d.set_item("acf_bins", ACF_BINS)?;
        col(&d, "start_ns", it.iter().map(|x| x.start_ns))?;
        col(&d, "comm_end_ns", it.iter().map(|x| x.comm_end_ns))?;
        col(&d, "end_ns", it.iter().map(|x| x.end_ns))?;
        col(&d, "bytes", it.iter().map(|x| x.bytes))?;
        col(&d, "packets", it.iter().map(|x| x.packets))?;
        col(&d, "peak_rate_bps", it.iter().map(|x| x.peak_rate_bps))?;
        col(&d, "phase_quiet_ns", rep.phase_quiet_ns.iter().copied())?;
        col(&d, "whole", it.iter().map(|x| x.whole))?;
        col(&d, "in_period", it.iter().map(|x| x.in_period))?;
        d.set_item("accounting", accounting(py, &acc)?)?;
        Ok((d, warnings))
    })
}

/// Scan of the exact merge (in `scan`'s output layout) plus each capture's aggregate E(τ).
#[pyfunction]
#[pyo3(signature = (sources, offsets_ns, windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups, strict=false, progress=None, mmap=None, time_range=None, filter=None, size="wire", bin_origin_ns=Some(0), fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn superpose<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    offsets_ns: Vec<i64>,
    windows_ns: Vec<i64>,
    closed: &str,
    rates_bps: Vec<u64>,
    bins_ns: Vec<i64>,
    by: Vec<String>,
    horizon_ns: i64,
    on_late: &str,
    max_groups: usize,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    size: &str,
    bin_origin_ns: Option<i64>,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<WarningOut>)> {
    guard(py, || {
        let cfg = config(
            windows_ns, closed, rates_bps, bins_ns, by, 0, on_late, max_groups,
        )?
        .with_bin_origin(crate::bin_origin(bin_origin_ns));
        let ord = order(horizon_ns, on_late, time_range, filter, &sources, size, fcs)?;
        let (sp, warnings, readers) = run_keeping(py, &sources, strict, mmap, progress, |r, p| {
            analyze::superpose(r, &offsets_ns, cfg, ord, p)
        })?;
        let (mut src, mut win, mut bytes, mut pk) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (k, rows) in sp.singles.iter().enumerate() {
            for r in rows {
                src.push(k as u32);
                win.push(r.window_ns);
                bytes.push(r.bytes);
                pk.push(r.max_packets);
            }
        }
        let singles = PyDict::new(py);
        singles.set_item("source", src.into_pyarray(py))?;
        singles.set_item("window_ns", win.into_pyarray(py))?;
        singles.set_item("bytes", bytes.into_pyarray(py))?;
        singles.set_item("max_packets", pk.into_pyarray(py))?;
        let d = PyDict::new(py);
        let merged = output_to_py(py, sp.merged, sp.accounting)?;
        // The merge numbers interface groups as a scan of the same captures does.
        merged.set_item("interfaces", interfaces_of(py, &readers)?)?;
        d.set_item("scan", merged)?;
        d.set_item("singles", singles)?;
        d.set_item("spans", sp.spans)?;
        Ok((d, warnings))
    })
}
