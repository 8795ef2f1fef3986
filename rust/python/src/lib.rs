//! Python bindings: a thin layer over the `burstcore` crate. Everything friendly (unit parsing,
//! defaults, polars frames) lives in the Python package; this module moves columns across as numpy
//! arrays that own Rust's buffers (no copy), maps errors to typed exceptions, releases the GIL
//! while reading, and keeps every panic inside Rust.

mod analysis;
mod arrow;
mod batches;
mod column_scan;
mod columns;
mod errors;
mod sigint;
mod source;
mod unraisable;
mod writer;

use arrow::Column;
use burstcore::analysis::{shared_packets as shared_packets_of, SharedOptions};
use burstcore::capture::{CaptureReader, Format, ReadOptions};
use burstcore::engine::{BinOrigin, By, Closure, LatePolicy, ScanConfig, ScanOutput};
use burstcore::pipeline::{self, Accounting, Fcs, SizeKind};
use burstcore::table::{self, PacketTable};
use burstcore::{Error, ErrorKind, TimeRange};
use columns::col;
use errors::{guard, to_py};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::mem::take;
use std::time::{Duration, Instant};

/// Least time between two progress calls (and checks for signals).
const TICK: Duration = Duration::from_millis(100);

/// Progress and interrupt checks from inside a GIL-free loop: 100 ms apart at least (more after a
/// slow callback, see `gap`), take the GIL,
/// let Python handle signals (Ctrl-C becomes KeyboardInterrupt) and call the user's callback;
/// and once when everything is read (`done` = `total`), however soon, so that a progress bar
/// ends full even after a scan shorter than 100 ms.
pub(crate) struct Control {
    callback: Option<Py<PyAny>>,
    total: Option<u64>,
    last: Instant,
    /// Time from the callback's return to its next call: 100 ms, or 4× what the callback took
    /// last, so that a slow callback takes at most a fifth of the time.
    gap: Duration,
    /// The latest `done` the callback was given, and the latest it was told of.
    shown: Option<u64>,
    latest: Option<u64>,
    pending: Option<PyErr>,
    /// SIGINTs counted when the work began ([`sigint`]).
    signals: u64,
}

impl Control {
    /// A callback that cannot be called is refused here, before the read, not at its first
    /// call 100 ms into it with Python's bare "'int' object is not callable".
    pub(crate) fn new(
        py: Python<'_>,
        callback: Option<Py<PyAny>>,
        total: Option<u64>,
    ) -> PyResult<Self> {
        if let Some(cb) = &callback {
            let cb = cb.bind(py);
            if !cb.is_callable() {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "progress={} is not callable: pass a function called as \
                     progress(bytes_done, bytes_total_or_None), or None",
                    cb.repr()?
                )));
            }
        }
        Ok(Control {
            callback,
            total,
            last: Instant::now(),
            gap: TICK,
            shown: None,
            latest: None,
            pending: None,
            signals: sigint::mark(py)?,
        })
    }
    pub(crate) fn tick(&mut self, done: u64) -> burstcore::error::Result<()> {
        self.latest = Some(done);
        let end = self.total == Some(done) && self.shown != Some(done);
        if !end && self.last.elapsed() < self.gap {
            return Ok(());
        }
        self.shown = Some(done);
        let r = Python::attach(|py| -> PyResult<()> {
            py.check_signals()?;
            sigint::check_foreign_thread(py, self.signals)?;
            let called = Instant::now();
            if let Some(cb) = &self.callback {
                cb.call1(py, (done, self.total))?;
            }
            self.gap = TICK.max(called.elapsed() * 4);
            Ok(())
        });
        self.last = Instant::now();
        r.map_err(|e| {
            self.pending = Some(e);
            Error::new(ErrorKind::Interrupted, "interrupted")
        })
    }
    /// Once the work is done: the callback's last call, with what was read in the end, unless
    /// it had it already: a stream's end is known only now, as it has no total to reach.
    pub(crate) fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        // A signal that came while the work was too short to tick (waiting on a stream while
        // opening it, say) is raised here, before any Python code runs for the result.
        py.check_signals()?;
        match (&self.callback, self.latest) {
            (Some(cb), Some(done)) if self.shown != Some(done) => {
                self.shown = Some(done);
                cb.call1(py, (done, self.total)).map(|_| ())
            }
            _ => Ok(()),
        }
    }
    /// The Python exception that stopped the loop, if it was one.
    pub(crate) fn take(&mut self, e: Error) -> PyErr {
        match (e.kind, self.pending.take()) {
            (ErrorKind::Interrupted, Some(py_err)) => py_err,
            _ => to_py(e),
        }
    }
}

/// `mmap`: `None` is the core's default for a scan of `files` files on `threads` threads (mapped
/// where the mapping is guarded against truncation, unless the files are many). Among several
/// files, one cut off before its magic (a ring-buffer set's empty last file) is a cut file.
fn read_options(strict: bool, mmap: Option<bool>, files: usize, threads: usize) -> ReadOptions {
    let default = ReadOptions::for_scan(files, threads);
    default
        .with_strict(strict)
        .with_mmap(mmap.unwrap_or(default.mmap))
        .with_one_of_several(files > 1)
}

/// The readers' warnings, each naming its input when there are several; then the packets a
/// capture records it lost, and frames that end with an FCS it does not declare (checked for
/// an l1 size that believes it), once it has been read. Each as `errors::warning` gives it.
fn warnings_of(readers: &[CaptureReader]) -> Vec<errors::WarningOut> {
    let n = readers.len();
    readers
        .iter()
        .enumerate()
        .flat_map(|(k, r)| {
            r.warnings()
                .iter()
                .cloned()
                .chain(r.recorded_drops())
                .chain(r.undeclared_fcs())
                .map(move |w| errors::warning(&w, (n > 1).then(|| r.label(k, n))))
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(crate) fn open_all(
    py: Python<'_>,
    sources: &[Bound<'_, PyAny>],
    strict: bool,
    mmap: Option<bool>,
    threads: usize,
) -> PyResult<(Vec<CaptureReader>, Option<u64>)> {
    open_with(
        py,
        sources,
        read_options(strict, mmap, sources.len(), threads),
    )
}

/// [`open_all`] with the options given.
fn open_with(
    py: Python<'_>,
    sources: &[Bound<'_, PyAny>],
    options: ReadOptions,
) -> PyResult<(Vec<CaptureReader>, Option<u64>)> {
    let mut readers = Vec::with_capacity(sources.len());
    let mut total = Some(0u64);
    let n = sources.len();
    for (k, s) in sources.iter().enumerate() {
        let input = source::open(py, s)?;
        let label = burstcore::capture::label(input.path.as_deref(), k, n);
        total = match (total, input.file_len) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        let path = input.path.clone();
        let reader = py
            .detach(|| CaptureReader::new(input, options))
            .map_err(|e| {
                let e = if n > 1 { e.in_input(label) } else { e };
                match &path {
                    Some(path) => errors::to_py_at(e, path),
                    None => to_py(e),
                }
            })?;
        readers.push(reader);
    }
    Ok((readers, total))
}

/// What `read_table` hands to Python: the columns of each range read, the warnings, and the
/// accounting.
type Table<'py> = (
    Vec<Vec<arrow::ArrowColumn>>,
    Vec<errors::WarningOut>,
    Bound<'py, PyDict>,
);

/// Read packets into columns, each handed over as an Arrow array (see `arrow`): each wanted
/// column once, in the order first asked for. With `threads` > 1 a plain file may be read in
/// byte ranges side by side: then there is one list of columns per range, whose rows, taken in
/// order, are those of the sequential read. `time_range` and `filter` choose the packets as a
/// scan does; the accounting (third) says how many packets each left out, and the span of the
/// timestamps read when there is a time range.
#[pyfunction]
#[pyo3(signature = (source, columns=None, strict=false, progress=None, mmap=None, threads=1, filter=None, time_range=None))]
#[allow(clippy::too_many_arguments)]
fn read_table<'py>(
    py: Python<'py>,
    source: Bound<'py, PyAny>,
    columns: Option<Vec<String>>,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    threads: usize,
    filter: Option<String>,
    time_range: Span,
) -> PyResult<Table<'py>> {
    guard(py, || {
        let filter = parse_filter(filter.as_deref())?;
        let (mut readers, total) =
            open_all(py, std::slice::from_ref(&source), strict, mmap, threads)?;
        let mut reader = readers.pop().expect("one source");
        let mut ctl = Control::new(py, progress, total)?;
        let res = py.detach(|| {
            let select = table::Selection::default()
                .with_range(crate::time_range(time_range))
                .with_filter(filter.as_ref());
            let columns = columns.as_deref();
            table::read_table_threads_where(
                &mut reader,
                columns,
                total,
                threads,
                select,
                &mut |d| ctl.tick(d),
            )
        });
        let tables = res.map_err(|e| ctl.take(e))?;
        ctl.finish(py)?;
        let warnings = warnings_of(std::slice::from_ref(&reader));
        let read = table::read_of(&tables);
        let chunks = tables
            .into_iter()
            .map(|t| table_columns(py, t))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((chunks, warnings, accounting(py, &read)?))
    })
}

/// The wanted columns of `t` as Arrow arrays: each once, in the order first asked for.
pub(crate) fn table_columns(
    py: Python<'_>,
    mut t: PacketTable,
) -> PyResult<Vec<arrow::ArrowColumn>> {
    let mut out: Vec<Column> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let names = std::mem::take(&mut t.columns);
    for c in &names {
        if seen.contains(&c.as_str()) {
            continue;
        }
        seen.push(c);
        out.push(match c.as_str() {
            "timestamp" => Column::nullable(c, "tsn:UTC", take(&mut t.timestamp))?,
            "interface" => Column::plain(c, "I", take(&mut t.interface))?,
            "wire_len" => Column::plain(c, "I", take(&mut t.wire_len))?,
            "cap_len" => Column::plain(c, "I", take(&mut t.cap_len))?,
            "linktype" => Column::plain(c, "S", take(&mut t.linktype))?,
            "src" => Column::addresses(c, take(&mut t.src))?,
            "dst" => Column::addresses(c, take(&mut t.dst))?,
            "protocol" => Column::nullable(c, "C", take(&mut t.protocol))?,
            "sport" => Column::nullable(c, "S", take(&mut t.sport))?,
            "dport" => Column::nullable(c, "S", take(&mut t.dport))?,
            "vlan" => Column::nullable(c, "S", take(&mut t.vlan))?,
            "qp" => Column::nullable(c, "I", take(&mut t.qp))?,
            "ip_len" => Column::nullable(c, "I", take(&mut t.ip_len))?,
            "payload_len" => Column::nullable(c, "I", take(&mut t.payload_len))?,
            "tcp_flags" => Column::nullable(c, "C", take(&mut t.tcp_flags))?,
            "tcp_seq" => Column::nullable(c, "I", take(&mut t.tcp_seq))?,
            other => {
                return Err(PyValueError::new_err(format!("unknown column {other:?}")));
            }
        });
    }
    if let Some(c) = out.iter().find(|c| c.len() != t.rows) {
        return Err(PyValueError::new_err(format!(
            "a column has {} rows, not {}",
            c.len(),
            t.rows
        )));
    }
    out.into_iter()
        .map(|c| arrow::ArrowColumn::new(py, c))
        .collect()
}

/// A capinfos-like summary as a plain dict, of the packets in `time_range` that pass `filter`
/// (the file's sections, interfaces and blocks whatever they are). `one_of_several`: the source
/// is one file of a set summed up one by one, read as [`ReadOptions::one_of_several`] says.
#[pyfunction]
#[pyo3(signature = (source, strict=false, progress=None, mmap=None, time_range=None, filter=None, one_of_several=false))]
#[allow(clippy::too_many_arguments)]
fn capture_info<'py>(
    py: Python<'py>,
    source: Bound<'py, PyAny>,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<String>,
    one_of_several: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(py, || {
        let filter = parse_filter(filter.as_deref())?;
        let select = burstcore::table::Selection::default()
            .with_range(crate::time_range(time_range))
            .with_filter(filter.as_ref());
        let options = read_options(strict, mmap, 1, 1).with_one_of_several(one_of_several);
        let (mut readers, total) = open_with(py, std::slice::from_ref(&source), options)?;
        let mut reader = readers.pop().expect("one source");
        let mut ctl = Control::new(py, progress, total)?;
        let inf = py
            .detach(|| pipeline::info_where(&mut reader, select, &mut |d| ctl.tick(d)))
            .map_err(|e| ctl.take(e))?;
        ctl.finish(py)?;
        let d = PyDict::new(py);
        match reader.format() {
            // One of several files cut before its magic number: no format to name.
            None => {
                d.set_item("format", py.None())?;
            }
            Some(Format::Pcap {
                version,
                byte_order,
                nanos,
                modified,
            }) => {
                d.set_item("format", if *modified { "pcap (modified)" } else { "pcap" })?;
                d.set_item("version", format!("{}.{}", version.0, version.1))?;
                d.set_item("byte_order", format!("{byte_order:?}").to_lowercase())?;
                d.set_item("resolution", if *nanos { "1e-9" } else { "1e-6" })?;
            }
            Some(Format::PcapNg) => {
                d.set_item("format", "pcapng")?;
            }
        }
        d.set_item("compression", reader.compression().name())?;
        d.set_item("mapped", reader.is_mapped())?;
        let sections = PyList::empty(py);
        for s in reader.sections() {
            let sd = PyDict::new(py);
            sd.set_item("index", s.index)?;
            sd.set_item("offset", s.offset)?;
            sd.set_item("byte_order", format!("{:?}", s.byte_order).to_lowercase())?;
            sd.set_item("version", format!("{}.{}", s.version.0, s.version.1))?;
            sd.set_item("hardware", s.hardware.clone())?;
            sd.set_item("os", s.os.clone())?;
            sd.set_item("user_appl", s.user_appl.clone())?;
            sections.append(sd)?;
        }
        d.set_item("sections", sections)?;
        let ifaces = PyList::empty(py);
        for i in reader.interfaces() {
            let id = PyDict::new(py);
            id.set_item("index", i.index)?;
            id.set_item("section", i.section)?;
            id.set_item("linktype", i.linktype)?;
            id.set_item("linktype_name", burstcore::wire::linktype_name(i.linktype))?;
            id.set_item("snaplen", i.snaplen)?;
            id.set_item("resolution", i.resolution.to_string())?;
            id.set_item("ts_offset_s", i.ts_offset_s)?;
            id.set_item("name", i.name.clone())?;
            id.set_item("description", i.description.clone())?;
            id.set_item(
                "packets",
                inf.per_interface_packets
                    .get(i.index as usize)
                    .copied()
                    .unwrap_or(0),
            )?;
            id.set_item(
                "bytes",
                inf.per_interface_bytes
                    .get(i.index as usize)
                    .copied()
                    .unwrap_or(0),
            )?;
            id.set_item("fcs_len", i.fcs_len)?;
            // A counter of all ones is Wireshark's tools' "not known" (the drops warning leaves
            // it out too): None, as a counter the capture does not give, never a count of 2^64 - 1.
            let known = |c: Option<u64>| c.filter(|&n| n != u64::MAX);
            id.set_item("if_recv", known(i.stats.if_recv))?;
            id.set_item("if_drop", known(i.stats.if_drop))?;
            id.set_item("os_drop", known(i.stats.os_drop))?;
            id.set_item("isb_count", i.stats.isb_count)?;
            let at = |v: &[u32]| v.get(i.index as usize).copied().unwrap_or(0);
            id.set_item("fcs_sampled", at(&inf.fcs_sampled))?;
            id.set_item("fcs_valid", at(&inf.fcs_valid))?;
            ifaces.append(id)?;
        }
        d.set_item("interfaces", ifaces)?;
        d.set_item("packets", inf.packets)?;
        d.set_item("wire_bytes", inf.wire_bytes)?;
        d.set_item("timed_wire_bytes", inf.timed_wire_bytes)?;
        d.set_item("captured_bytes", inf.captured_bytes)?;
        d.set_item("first_ns", inf.first_ns)?;
        d.set_item("last_ns", inf.last_ns)?;
        d.set_item("min_ns", inf.min_ns)?;
        d.set_item("max_ns", inf.max_ns)?;
        d.set_item("packets_without_timestamp", inf.packets_without_timestamp)?;
        d.set_item(
            "timestamps_out_of_range",
            reader.stats().timestamps_out_of_range,
        )?;
        d.set_item("out_of_order", inf.out_of_order)?;
        d.set_item("max_step_back_ns", inf.max_step_back_ns)?;
        d.set_item("over_mtu_frames", inf.over_mtu_frames)?;
        d.set_item("max_wire_len", inf.max_wire_len)?;
        d.set_item("snapped", inf.snapped)?;
        d.set_item("read", accounting(py, &inf.read)?)?;
        let st = reader.stats();
        let blocks = PyDict::new(py);
        blocks.set_item("enhanced_packet", st.enhanced_packet_blocks)?;
        blocks.set_item("simple_packet", st.simple_packet_blocks)?;
        blocks.set_item("obsolete_packet", st.obsolete_packet_blocks)?;
        blocks.set_item("name_resolution", st.name_resolution_blocks)?;
        blocks.set_item("interface_statistics", st.interface_statistics_blocks)?;
        blocks.set_item("decryption_secrets", st.decryption_secrets_blocks)?;
        blocks.set_item("custom", st.custom_blocks)?;
        blocks.set_item("unknown", st.unknown_blocks)?;
        d.set_item("blocks", blocks)?;
        d.set_item("file_bytes", total)?;
        let w: Vec<errors::WarningOut> = inf
            .warnings
            .iter()
            .map(|w| errors::warning(w, None))
            .collect();
        d.set_item("warnings", w)?;
        Ok(d)
    })
}

fn parse_by(names: &[String]) -> PyResult<Vec<By>> {
    names.iter().map(|n| By::parse(n).map_err(to_py)).collect()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn config(
    windows_ns: Vec<i64>,
    closed: &str,
    rates_bps: Vec<u64>,
    bins_ns: Vec<i64>,
    by: Vec<String>,
    horizon_ns: i64,
    on_late: &str,
    max_groups: usize,
) -> PyResult<ScanConfig> {
    let closure = match closed {
        "left" => Closure::HalfOpen,
        "both" => Closure::Closed,
        other => {
            return Err(to_py(Error::invalid(format!(
                "closed={other:?}: use 'left' for half-open windows [s, s+τ) (default) or 'both' for [s, s+τ]"
            ))))
        }
    };
    let late = late_policy(on_late)?;
    Ok(ScanConfig::default()
        .with_windows_ns(windows_ns)
        .with_closure(closure)
        .with_rates_bps(rates_bps)
        .with_bins_ns(bins_ns)
        .with_by(parse_by(&by)?)
        .with_reorder_horizon_ns(horizon_ns)
        .with_late(late)
        .with_max_groups(max_groups))
}

/// The bins' origin as Python gives it: an instant in ns, or `None` for the first packet counted.
pub(crate) fn bin_origin(origin_ns: Option<i64>) -> BinOrigin {
    origin_ns.map_or(BinOrigin::FirstPacket, BinOrigin::At)
}

/// The time range a scan or an analysis reads, as Python gives it: `(start_ns, end_ns)`, either
/// `None` for open, or `None` for all of time.
pub(crate) type Span = Option<(Option<i64>, Option<i64>)>;

pub(crate) fn time_range(span: Span) -> TimeRange {
    let (start_ns, end_ns) = span.unwrap_or((None, None));
    TimeRange { start_ns, end_ns }
}

/// A filter expression as Python gives it (`None`: every packet); a bad one is a `ValueError`
/// saying where and what.
pub(crate) fn parse_filter(text: Option<&str>) -> PyResult<Option<burstcore::Filter>> {
    text.map(|t| burstcore::Filter::parse(t).map_err(to_py))
        .transpose()
}

/// `filter=` of a call that reads several captures: one expression for all of them, or one per
/// capture (`None` where a capture has none).
#[derive(FromPyObject)]
pub(crate) enum Filters {
    All(String),
    Each(Vec<Option<String>>),
}

/// The filter for all captures and each capture's own ([`burstcore::ScanConfig::file_filters`]);
/// a bad expression of one of `sources` says which, by its path if it has one.
pub(crate) fn parse_filters(
    filters: Option<Filters>,
    sources: &[Bound<'_, PyAny>],
) -> PyResult<(Option<burstcore::Filter>, Vec<Option<burstcore::Filter>>)> {
    match filters {
        None => Ok((None, Vec::new())),
        Some(Filters::All(text)) => Ok((parse_filter(Some(&text))?, Vec::new())),
        Some(Filters::Each(texts)) => {
            let each = texts
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    t.as_deref()
                        .map(burstcore::Filter::parse)
                        .transpose()
                        .map_err(|mut e| {
                            let path = sources
                                .get(k)
                                .and_then(|s| s.extract::<String>().ok())
                                .filter(|p| p != "-")
                                .map_or(String::new(), |p| format!(" ({p})"));
                            let n = texts.len();
                            e.reason = format!("capture {} of {n}{path}: {}", k + 1, e.reason);
                            to_py(e)
                        })
                })
                .collect::<PyResult<_>>()?;
            Ok((None, each))
        }
    }
}

/// What to do with a packet later than the reorder horizon, as scans and analyses take it.
pub(crate) fn late_policy(on_late: &str) -> PyResult<LatePolicy> {
    match on_late {
        "error" => Ok(LatePolicy::Error),
        "drop" => Ok(LatePolicy::Drop),
        other => Err(to_py(Error::invalid(format!(
            "on_late={other:?}: use 'error' or 'drop'"
        )))),
    }
}

/// Scan output as columns: one dict per frame, with `gid` indexing into the groups table.
pub(crate) fn output_to_py<'py>(
    py: Python<'py>,
    out: ScanOutput,
    acc: Accounting,
) -> PyResult<Bound<'py, PyDict>> {
    use burstcore::engine::GroupKey;
    use std::collections::HashMap;
    let gids: HashMap<(By, GroupKey), u32> = out
        .groups
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.by, s.group), i as u32))
        .collect();
    let gid = |by: By, key: GroupKey| gids.get(&(by, key)).copied().unwrap_or(u32::MAX);

    let g = PyDict::new(py);
    g.set_item(
        "by",
        out.groups.iter().map(|s| s.by.name()).collect::<Vec<_>>(),
    )?;
    g.set_item(
        "group",
        out.groups
            .iter()
            .map(|s| s.group.label())
            .collect::<Vec<_>>(),
    )?;
    col(&g, "packets", out.groups.iter().map(|s| s.packets))?;
    col(&g, "bytes", out.groups.iter().map(|s| s.bytes))?;
    col(&g, "first_ns", out.groups.iter().map(|s| s.first_ns))?;
    col(&g, "last_ns", out.groups.iter().map(|s| s.last_ns))?;

    let e = PyDict::new(py);
    let env = &out.envelope;
    col(&e, "gid", env.iter().map(|r| gid(r.by, r.group)))?;
    col(&e, "window_ns", env.iter().map(|r| r.window_ns))?;
    col(&e, "bytes", env.iter().map(|r| r.bytes))?;
    col(&e, "packets", env.iter().map(|r| r.packets_in_window))?;
    col(&e, "start_ns", env.iter().map(|r| r.start_ns))?;
    col(&e, "max_packets", env.iter().map(|r| r.max_packets))?;

    let bl = PyDict::new(py);
    let back = &out.backlog;
    col(&bl, "gid", back.iter().map(|r| gid(r.by, r.group)))?;
    col(&bl, "rate_bps", back.iter().map(|r| r.rate_bps))?;
    col(&bl, "bmax_bytes", back.iter().map(|r| r.bmax_bytes))?;
    col(&bl, "peak_ns", back.iter().map(|r| r.peak_ns))?;
    col(
        &bl,
        "longest_busy_ns",
        back.iter().map(|r| r.longest_busy_ns),
    )?;
    col(
        &bl,
        "longest_busy_start_ns",
        back.iter().map(|r| r.longest_busy_start_ns),
    )?;

    let se = PyDict::new(py);
    let ser = &out.series;
    col(&se, "gid", ser.iter().map(|r| gid(r.by, r.group)))?;
    col(&se, "bin_ns", ser.iter().map(|r| r.bin_ns))?;
    col(&se, "start_ns", ser.iter().map(|r| r.start_ns))?;
    col(&se, "bytes", ser.iter().map(|r| r.bytes))?;
    col(&se, "packets", ser.iter().map(|r| r.packets))?;

    let d = PyDict::new(py);
    d.set_item("groups", g)?;
    d.set_item("envelope", e)?;
    d.set_item("backlog", bl)?;
    d.set_item("series", se)?;
    d.set_item("accounting", accounting(py, &acc)?)?;
    Ok(d)
}

/// Every packet read, counted or skipped with its reason.
pub(crate) fn accounting<'py>(py: Python<'py>, acc: &Accounting) -> PyResult<Bound<'py, PyDict>> {
    let a = PyDict::new(py);
    a.set_item("packets_read", acc.packets_read)?;
    a.set_item("counted", acc.counted)?;
    a.set_item("skipped_no_timestamp", acc.skipped_no_timestamp)?;
    a.set_item(
        "skipped_timestamp_out_of_range",
        acc.skipped_timestamp_out_of_range,
    )?;
    a.set_item("skipped_outside_range", acc.skipped_outside_range)?;
    a.set_item("skipped_filtered", acc.skipped_filtered)?;
    a.set_item("skipped_no_size", acc.skipped_no_size)?;
    a.set_item("skipped_late", acc.skipped_late)?;
    a.set_item("reordered", acc.reordered)?;
    a.set_item("max_lateness_ns", acc.max_lateness_ns)?;
    a.set_item("ts_span", acc.ts_span)?;
    Ok(a)
}

/// One pass over one or more captures (merged in timestamp order).
#[pyfunction]
#[pyo3(signature = (sources, windows_ns, closed, rates_bps, bins_ns, by, size, horizon_ns, on_late, max_groups, strict=false, progress=None, threads=1, mmap=None, time_range=None, filter=None, bin_origin_ns=Some(0), fcs="declared"))]
#[allow(clippy::too_many_arguments)]
fn scan<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    windows_ns: Vec<i64>,
    closed: &str,
    rates_bps: Vec<u64>,
    bins_ns: Vec<i64>,
    by: Vec<String>,
    size: &str,
    horizon_ns: i64,
    on_late: &str,
    max_groups: usize,
    strict: bool,
    progress: Option<Py<PyAny>>,
    threads: usize,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    bin_origin_ns: Option<i64>,
    fcs: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<errors::WarningOut>)> {
    guard(py, || {
        let range = crate::time_range(time_range);
        let (filter, file_filters) = parse_filters(filter, &sources)?;
        let cfg = config(
            windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups,
        )?
        .with_bin_origin(bin_origin(bin_origin_ns))
        .with_time_range(range)
        .with_filter(filter)
        .with_file_filters(file_filters);
        let size = SizeKind::parse(size)
            .and_then(|s| Ok(s.with_fcs(Fcs::parse(fcs)?)))
            .map_err(to_py)?;
        let cfg_filter = cfg.filter_per_capture(sources.len());
        // Where a seekable file object starts, to look for a late packet there again.
        let start = match &sources[..] {
            [one] => source::seekable_position(one),
            _ => None,
        };
        let (mut readers, total) = open_all(py, &sources, strict, mmap, threads)?;
        let mut ctl = Control::new(py, progress, total)?;
        let res = py.detach(|| {
            pipeline::scan_threads(&mut readers, cfg, size, threads, &mut |d| ctl.tick(d))
        });
        let (out, acc) = res.map_err(|e| {
            // Each capture's filter, to read it again as the scan read it.
            let filters = cfg_filter.unwrap_or_default();
            let chosen = (range, &filters[..]);
            match locate_late(
                py, &sources, start, e, size, horizon_ns, chosen, strict, mmap,
            ) {
                Ok(e) => ctl.take(e),
                // Ctrl-C during the second look: the caller asked to stop, not for the offset.
                Err(stop) => stop,
            }
        })?;
        ctl.finish(py)?;
        let d = output_to_py(py, out, acc)?;
        d.set_item("interfaces", interfaces_of(py, &readers)?)?;
        Ok((d, warnings_of(&readers)))
    })
}

/// Every interface the captures declared, as columns: the number its group is reported under
/// (`if{number}`, [`pipeline::interface_bases`]), its capture (from 0) and how errors name that
/// capture (its path, else its place among them), its index within the capture and its name.
/// Read once the scan is done, when each reader holds all the interfaces its capture declared.
pub(crate) fn interfaces_of<'py>(
    py: Python<'py>,
    readers: &[CaptureReader],
) -> PyResult<Bound<'py, PyDict>> {
    let bases = pipeline::interface_bases(readers.iter().map(|r| r.interfaces().len()));
    let (mut number, mut capture, mut source, mut index, mut name) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (k, (r, &base)) in readers.iter().zip(&bases).enumerate() {
        for (i, inf) in r.interfaces().iter().enumerate() {
            number.push(base.saturating_add(i as u32));
            capture.push(k as u32);
            source.push(r.label(k, readers.len()));
            index.push(i as u32);
            name.push(inf.name.clone());
        }
    }
    let d = PyDict::new(py);
    d.set_item("number", number)?;
    d.set_item("capture", capture)?;
    d.set_item("source", source)?;
    d.set_item("interface", index)?;
    d.set_item("name", name)?;
    Ok(d)
}

/// A late packet's error, `e`, given the offset of the packet (see
/// [`pipeline::late_packet_offset`]) when the one capture scanned can be read again: bytes, the
/// path of a regular file, or a file object that can seek (`seekable()`), which stood at `start`
/// when the scan began: it is read again from there, then put back where the scan left it. Not
/// a stream (stdin, a file object that cannot seek, a named pipe given by path: opened again, it
/// would wait for a writer that has gone), whose bytes are gone. Several captures, each a path
/// or bytes, are merged again as the scan merged them ([`pipeline::late_packet_among`]), and
/// the error names the one that holds the packet, as the analyses' errors do. The second look
/// may read whole files again, so it looks for Ctrl-C as the scan did; an exception raised by a
/// signal handler meanwhile is the `Err`. `filters`: each capture's.
#[allow(clippy::too_many_arguments)]
fn locate_late(
    py: Python<'_>,
    sources: &[Bound<'_, PyAny>],
    start: Option<u64>,
    mut e: Error,
    size: SizeKind,
    horizon_ns: i64,
    (range, filters): (TimeRange, &[Option<burstcore::Filter>]),
    strict: bool,
    mmap: Option<bool>,
) -> PyResult<Error> {
    if e.kind != ErrorKind::OutOfOrder || e.offset.is_some() {
        return Ok(e);
    }
    if sources.len() > 1 {
        return locate_late_among(
            py,
            sources,
            e,
            size,
            horizon_ns,
            (range, filters),
            strict,
            mmap,
        );
    }
    let [source] = sources else { return Ok(e) };
    let filter = filters.first().and_then(Option::as_ref);
    let again = can_read_again(source);
    // A file object: where the failed scan left it, to put it back there afterwards.
    let left_at = match start {
        Some(_) if !again => match source::seekable_position(source) {
            Some(at) => Some(at),
            None => return Ok(e),
        },
        _ => None,
    };
    let rewound = match (start, left_at) {
        (Some(start), Some(_)) => source::seek_to(source, start),
        _ => again,
    };
    let mut stop: Option<PyErr> = None;
    let found = if rewound {
        sigint::ok_keeping_ctrl_c(py, source::open(py, source)).map(|input| {
            let options = read_options(strict, mmap, 1, 1);
            py.detach(|| {
                let mut reader = CaptureReader::new(input, options)?;
                pipeline::late_packet_offset(
                    &mut reader,
                    size,
                    horizon_ns,
                    range,
                    filter,
                    &mut signals_only(&mut stop),
                )
            })
        })
    } else {
        None
    };
    if let Some(at) = left_at {
        // An exception the file object's read() raised while looking again belongs to no
        // call of the caller's: the scan's own error is the one to raise.
        if !matches!(found, Some(Ok(_))) {
            let _ = source::take_raised();
        }
        source::seek_to(source, at);
    }
    if let Some(stop) = stop {
        return Err(stop);
    }
    if let Some(Ok(Some(offset))) = found {
        e.offset = Some(offset);
    }
    Ok(e)
}

/// The progress of a second look at the input after a failed read: no callback (the caller's
/// progress ended with the failure), only Ctrl-C, every [`TICK`]; its exception lands in `stop`.
fn signals_only(
    stop: &mut Option<PyErr>,
) -> impl FnMut(u64) -> burstcore::error::Result<()> + Send + '_ {
    let mut last = Instant::now();
    move |_| {
        if last.elapsed() < TICK {
            return Ok(());
        }
        last = Instant::now();
        Python::attach(|py| py.check_signals()).map_err(|err| {
            *stop = Some(err);
            Error::new(ErrorKind::Interrupted, "interrupted")
        })
    }
}

/// A path of a regular file (not '-', not a pipe) or bytes: a source read again from its start.
fn can_read_again(source: &Bound<'_, PyAny>) -> bool {
    match source.cast::<pyo3::types::PyString>() {
        Ok(p) => p.extract::<std::path::PathBuf>().is_ok_and(|p| {
            p.as_os_str() != "-" && std::fs::metadata(&p).is_ok_and(|m| m.is_file())
        }),
        Err(_) => {
            source.is_instance_of::<pyo3::types::PyBytes>()
                || source.is_instance_of::<pyo3::types::PyByteArray>()
        }
    }
}

/// [`locate_late`] for several captures, when every one can be read again from its start.
#[allow(clippy::too_many_arguments)]
fn locate_late_among(
    py: Python<'_>,
    sources: &[Bound<'_, PyAny>],
    mut e: Error,
    size: SizeKind,
    horizon_ns: i64,
    (range, filters): (TimeRange, &[Option<burstcore::Filter>]),
    strict: bool,
    mmap: Option<bool>,
) -> PyResult<Error> {
    if !sources.iter().all(can_read_again) {
        return Ok(e);
    }
    let Ok(inputs) = sources
        .iter()
        .map(|s| source::open(py, s))
        .collect::<PyResult<Vec<_>>>()
    else {
        return Ok(e);
    };
    let n = inputs.len();
    let options = read_options(strict, mmap, n, 1);
    let mut stop: Option<PyErr> = None;
    let found = py.detach(|| -> burstcore::error::Result<Option<(String, u64)>> {
        let mut readers = inputs
            .into_iter()
            .map(|input| CaptureReader::new(input, options))
            .collect::<burstcore::error::Result<Vec<_>>>()?;
        let at = pipeline::late_packet_among(
            &mut readers,
            size,
            horizon_ns,
            range,
            filters,
            &mut signals_only(&mut stop),
        )?;
        Ok(at.map(|(k, offset)| (readers[k].label(k, n), offset)))
    });
    if let Some(stop) = stop {
        return Err(stop);
    }
    if let Ok(Some((input, offset))) = found {
        e.offset = Some(offset);
        e = e.in_input(input);
    }
    Ok(e)
}

/// What `shared_packets` hands to Python: pairs, hosts, senders that are no capture's host,
/// and each capture's first and last instant in the time range, then whatever the range (the
/// last `None` for a stream whose end is unknown); then, per capture, the warnings of its
/// being found cut short, each naming it as a read of several does.
type SharedFound = (
    Vec<(usize, usize, i64, usize, usize, usize)>,
    Vec<Option<String>>,
    Vec<String>,
    Vec<Option<(i64, Option<i64>)>>,
    Vec<Option<(i64, Option<i64>)>>,
    Vec<Vec<errors::WarningOut>>,
);

/// Pairs of `sources` that hold the same packets (see [`burstcore::analysis::shared`]), each
/// read through its filter, as `(a, b, from_ns, shared, sampled_a, sampled_b)`, the host each
/// capture was recorded on where one stands out, and the senders that are no capture's host.
/// With `errors`, a source that cannot be opened or read raises its error (the public
/// `burstcore.shared_packets`); without, it gives `None` (the check before a read, which reports
/// it then). With `read_through`, a compressed stream is read through, as its plain file would
/// be sampled (the public call); without, only as far as its samples (the check before a read:
/// see `SharedOptions::read_through`). `max_packets`: most packets read from a stream.
/// `strict`: a capture cut off mid-block raises where its sample meets the cut, as a strict read
/// of it does (else the cut ends its sample).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, as the analyses' bindings
#[pyo3(signature = (sources, mmap=None, time_range=None, filter=None, errors=false, read_through=false, max_packets=None, strict=false))]
fn shared_packets<'py>(
    py: Python<'py>,
    sources: Vec<Bound<'py, PyAny>>,
    mmap: Option<bool>,
    time_range: Span,
    filter: Option<Filters>,
    errors: bool,
    read_through: bool,
    max_packets: Option<u64>,
    strict: bool,
) -> PyResult<Option<SharedFound>> {
    guard(py, || {
        let (filter, file_filters) = parse_filters(filter, &sources)?;
        let config = ScanConfig::default()
            .with_filter(filter)
            .with_file_filters(file_filters);
        let filters = config.filter_per_capture(sources.len()).map_err(to_py)?;
        let (mut readers, _) = match open_all(py, &sources, strict, mmap, 1) {
            Ok(opened) => opened,
            Err(e) if errors => return Err(e),
            Err(_) => return Ok(None),
        };
        let defaults = SharedOptions::default();
        let options = defaults
            .with_time_range(crate::time_range(time_range))
            .with_read_through(read_through)
            .with_max_packets(max_packets.unwrap_or(defaults.max_packets));
        let found = match py.detach(|| shared_packets_of(&mut readers, &filters, &options)) {
            Ok(found) => found,
            Err(e) if errors => return Err(to_py(e)),
            Err(_) => return Ok(None),
        };
        let pairs = found
            .pairs
            .iter()
            .map(|p| (p.a, p.b, p.from_ns, p.shared, p.sampled_a, p.sampled_b))
            .collect();
        let hosts = found
            .hosts
            .iter()
            .map(|h| h.map(|h| h.to_string()))
            .collect();
        let uncaptured = found.uncaptured.iter().map(|h| h.to_string()).collect();
        let known = |spans: &[Option<(i64, i64)>]| {
            spans
                .iter()
                .map(|s| s.map(|(first, last)| (first, (last != i64::MAX).then_some(last))))
                .collect()
        };
        let (spans, whole_spans) = (known(&found.spans), known(&found.whole_spans));
        let n = readers.len();
        let told = found
            .warnings
            .iter()
            .enumerate()
            .map(|(k, ws)| {
                let label = (n > 1).then(|| readers[k].label(k, n));
                ws.iter()
                    .map(|w| errors::warning(w, label.clone()))
                    .collect()
            })
            .collect();
        Ok(Some((pairs, hosts, uncaptured, spans, whole_spans, told)))
    })
}

/// The same engine over in-memory columns (timestamps in ns, sizes in bytes).
#[pyfunction]
#[pyo3(signature = (ts_ns, sizes, interfaces, windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups, bin_origin_ns=Some(0)))]
#[allow(clippy::too_many_arguments)]
fn scan_columns<'py>(
    py: Python<'py>,
    ts_ns: PyReadonlyArray1<'py, i64>,
    sizes: PyReadonlyArray1<'py, u64>,
    interfaces: Option<PyReadonlyArray1<'py, u32>>,
    windows_ns: Vec<i64>,
    closed: &str,
    rates_bps: Vec<u64>,
    bins_ns: Vec<i64>,
    by: Vec<String>,
    horizon_ns: i64,
    on_late: &str,
    max_groups: usize,
    bin_origin_ns: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(py, || {
        let cfg = config(
            windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups,
        )?
        .with_bin_origin(bin_origin(bin_origin_ns));
        let ts = ts_ns.as_slice()?;
        let sz = sizes.as_slice()?;
        let ifs = match &interfaces {
            Some(a) => Some(a.as_slice()?),
            None => None,
        };
        let mut ctl = Control::new(py, None, Some(ts.len() as u64))?;
        let res = py.detach(|| pipeline::scan_columns(ts, sz, ifs, cfg, &mut |d| ctl.tick(d)));
        let (out, acc) = res.map_err(|e| ctl.take(e))?;
        output_to_py(py, out, acc)
    })
}

/// The default number of threads: the cores this process may run on (CPU affinity and cgroup
/// quota), at most 8.
#[pyfunction]
fn default_threads() -> usize {
    burstcore::default_threads()
}

/// For tests: from now on, in this process, use as many threads as asked, whatever the files'
/// sizes and the cores (time chunks of a scan, threads sharing out its metrics, ranges of
/// `read_packets`), so that captures of a few kilobytes exercise the cuts, merges and shares
/// (`burstcore::chunked::use_as_many_threads_as_asked`).
#[pyfunction]
fn _use_as_many_threads_as_asked(on: bool) {
    burstcore::chunked::use_as_many_threads_as_asked(on);
}

/// Whether bytes start a capture the reader takes (pcap, pcapng, gzip or zstd), for the command
/// line, which holds a pipe whole in memory to read it twice.
#[pyfunction]
fn starts_like_capture(head: &[u8]) -> bool {
    burstcore::capture::starts_like_capture(head)
}

#[pymodule]
fn _burstcore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // numpy's C API and the numpy crate's borrow checking now, not on the first result: set up
    // lazily, they would run while a KeyboardInterrupt may be pending, and the numpy crate
    // panics if they fail. Only finding numpy's version runs Python code (`NumpyVersion`), and
    // `get_array_module` does it first with its failure an error (at import), not a panic.
    numpy::get_array_module(m.py())?;
    drop(numpy::PyArrayMethods::readonly(
        &numpy::PyArray1::<u8>::zeros(m.py(), 0, false),
    ));
    errors::register(m)?;
    analysis::register(m)?;
    m.add_function(wrap_pyfunction!(read_table, m)?)?;
    m.add_function(wrap_pyfunction!(capture_info, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan_columns, m)?)?;
    m.add_function(wrap_pyfunction!(shared_packets, m)?)?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_use_as_many_threads_as_asked, m)?)?;
    m.add_function(wrap_pyfunction!(starts_like_capture, m)?)?;
    m.add_class::<writer::CaptureWriter>()?;
    m.add_class::<arrow::ArrowColumn>()?;
    m.add_class::<sigint::OneCtrlC>()?;
    m.add("one_ctrl_c", sigint::OneCtrlC)?;
    batches::register(m)?;
    column_scan::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_THREADS", burstcore::MAX_THREADS)?;
    m.add(
        "DEFAULT_MAX_GROUPS",
        burstcore::engine::ScanConfig::DEFAULT_MAX_GROUPS,
    )?;
    Ok(())
}
