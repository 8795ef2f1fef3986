//! From captures to the analyses of [`crate::analysis`]: read, decode, put each capture in
//! timestamp order (bounded reorder buffer), merge several captures exactly (with per-capture
//! time offsets, for superposition), and account for every packet as `pipeline` does (counted, or
//! skipped with a reason), so an analysis's totals always add up to the packets in the files.
//!
//! Sizes are wire lengths (pcap `orig_len`) unless [`OrderOptions::size`] asks for another
//! count, as a scan's `size` does: the analyses compare against tshark's `frame.len` and the
//! ground-truth logs, which count frames on the wire.

use std::collections::{HashMap, VecDeque};

use crate::analysis::{
    BurstDetector, BurstReport, FlowKey, FlowOptions, FlowReport, FlowTable, GroupedHistograms,
    IterationAnalyzer, IterationOptions, IterationReport, MatrixReport, TrafficMatrix,
};
use crate::capture::CaptureReader;
use crate::engine::reorder::Reorder;
use crate::engine::{
    Arrival, By, EnvelopeRow, GroupKey, LatePolicy, ScanConfig, ScanOutput, Scanner,
};
use crate::error::{Error, Limit, Result};
use crate::pipeline::merge::{self, Renumber, Streams};
use crate::pipeline::{chosen_size, widened, Accounting, Progress, SizeKind};
use crate::wire;
use crate::{Filter, TimeRange};

const PROGRESS_EVERY: u64 = 1 << 16;

/// Which packets an analysis reads and how out-of-order ones are handled (the same knobs as a
/// scan).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OrderOptions {
    /// Packets may arrive up to this many ns earlier than the latest seen in their capture.
    pub reorder_horizon_ns: i64,
    /// What a late packet does: stop with an error (the default) or be dropped and counted.
    pub late: LatePolicy,
    /// Packets outside (after any offset) are skipped and counted.
    pub time_range: TimeRange,
    /// Only packets whose headers pass it are read; the others are skipped and counted.
    pub filter: Option<Filter>,
    /// One filter per capture, in the order the captures are given, each read through its own
    /// (and through `filter`); empty for none. See [`ScanConfig::file_filters`].
    pub file_filters: Vec<Option<Filter>>,
    /// What each packet's size counts, as a scan's `size`: a packet without the header it
    /// reads is skipped and counted in `skipped_no_size`.
    pub size: SizeKind,
}

crate::builders!([] OrderOptions {
    reorder_horizon_ns: i64 => with_reorder_horizon_ns,
    late: LatePolicy => with_late,
    time_range: TimeRange => with_time_range,
    filter: Option<Filter> => with_filter,
    file_filters: Vec<Option<Filter>> => with_file_filters,
    size: SizeKind => with_size,
});

impl Default for OrderOptions {
    fn default() -> Self {
        OrderOptions {
            reorder_horizon_ns: ScanConfig::DEFAULT_REORDER_HORIZON_NS,
            late: LatePolicy::Error,
            time_range: TimeRange::ALL,
            filter: None,
            file_filters: Vec::new(),
            size: SizeKind::Wire,
        }
    }
}

/// One capture as arrivals in timestamp order (the engine's bounded reorder buffer), shifted by
/// `offset_ns`.
struct Ordered<'r> {
    reader: &'r mut CaptureReader,
    offset_ns: i64,
    reorder: Reorder<Arrival>,
    /// Arrivals the reorder buffer has released, not yet handed out.
    ready: VecDeque<Arrival>,
    done: bool,
    packets_read: u64,
    no_timestamp: u64,
    /// Packets whose timestamp plus the offset leaves the i64 range: left out, as the reader
    /// leaves out timestamps it cannot represent (pinned to i64::MIN/MAX they would make a
    /// burst at one instant).
    shifted_out: u64,
    time_range: TimeRange,
    /// Packets outside `time_range`.
    outside: u64,
    /// Earliest and latest timestamp read (offset applied), when there is a `time_range`.
    ts_span: Option<(i64, i64)>,
    filter: Option<&'r Filter>,
    /// Packets `filter` left out.
    filtered: u64,
    /// What each arrival's size counts.
    size: SizeKind,
    /// Packets without the header `size` reads (size "ip" or "payload").
    no_size: u64,
    /// The last `None` of [`Ordered::next`] was a pause, not the end: it read 65,536 packets
    /// without one to give (all left out, or held for reordering), or read a while
    /// ([`CaptureReader::due`]); the caller looks for a stop, then asks again.
    paused: bool,
    /// The reader's FCS sample ([`CaptureReader::check_fcs`]), borrowed while reading: the
    /// frames kept are checked, as a scan checks them, not those the range or filter leaves out.
    fcs: Option<Box<crate::capture::FcsSample>>,
}

impl Drop for Ordered<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.fcs.take() {
            self.reader.keep_fcs_sample(s);
        }
    }
}

impl<'r> Ordered<'r> {
    fn new(
        reader: &'r mut CaptureReader,
        offset_ns: i64,
        order: &OrderOptions,
        filter: Option<&'r Filter>,
    ) -> Self {
        // As a scan: l1 believing the capture is told of frames that kept their FCS unsaid.
        if order.size == SizeKind::L1(crate::pipeline::Fcs::Declared) {
            reader.check_fcs();
        }
        Ordered {
            fcs: reader.lend_fcs_sample(),
            reader,
            offset_ns,
            reorder: Reorder::new(order.reorder_horizon_ns, order.late),
            ready: VecDeque::new(),
            done: false,
            packets_read: 0,
            no_timestamp: 0,
            shifted_out: 0,
            time_range: order.time_range,
            outside: 0,
            ts_span: None,
            filter,
            filtered: 0,
            size: order.size,
            no_size: 0,
            paused: false,
        }
    }

    /// Whether the last `None` was a pause ([`Ordered::paused`]), which it then ends.
    fn resume(&mut self) -> bool {
        std::mem::take(&mut self.paused)
    }

    /// The next arrival in (timestamp, file order), offset applied; interface numbers local.
    fn next(&mut self) -> Result<Option<Arrival>> {
        let mut read = 0u64;
        loop {
            if let Some(mut a) = self.ready.pop_front() {
                let Some(ts_ns) = a.ts_ns.checked_add(self.offset_ns) else {
                    self.shifted_out += 1;
                    continue;
                };
                a.ts_ns = ts_ns;
                return Ok(Some(a));
            }
            if self.done {
                return Ok(None);
            }
            if read == PROGRESS_EVERY || (read > 0 && self.reader.due()) {
                self.paused = true;
                return Ok(None);
            }
            read += 1;
            let ready = &mut self.ready;
            let Some(p) = self.reader.next_packet()? else {
                self.done = true;
                self.reorder.flush(|a: &Arrival| {
                    ready.push_back(*a);
                    Ok(())
                })?;
                continue;
            };
            self.packets_read += 1;
            let Some(ts_ns) = p.ts_ns else {
                self.no_timestamp += 1;
                continue;
            };
            // Outside the range (after the offset): left out before it is decoded or ordered,
            // as a scan leaves it out, so that it is never late nor reordered. A time the
            // offset takes out of i64 is counted as such once released.
            if let (false, Some(t)) = (self.time_range.is_all(), ts_ns.checked_add(self.offset_ns))
            {
                self.ts_span = widened(self.ts_span, Some((t, t)));
                if !self.time_range.contains(t) {
                    self.outside += 1;
                    continue;
                }
            }
            let headers = wire::decode_frame(p.linktype, p.data, p.wire_len);
            // Left out before it is ordered, as a scan leaves it out (the filter first).
            if self
                .filter
                .is_some_and(|f| !f.matches(&headers, p.wire_len))
            {
                self.filtered += 1;
                continue;
            }
            let Some(size) = chosen_size(&p, self.size, Some(&headers)) else {
                self.no_size += 1;
                continue;
            };
            if let Some(s) = self.fcs.as_deref_mut() {
                s.see(&p);
            }
            let arrival = Arrival {
                ts_ns,
                size,
                interface: p.interface,
                headers,
            };
            let offset = p.offset;
            self.reorder
                .push(&arrival, |a: &Arrival| {
                    ready.push_back(*a);
                    Ok(())
                })
                .map_err(|mut e| {
                    // The buffer knows times, not files: say where the late packet is.
                    e.offset = e.offset.or(Some(offset));
                    e
                })?;
        }
    }
}

/// The captures of [`for_each_ordered`], merged in (timestamp, capture) order by the merge a
/// scan of several files uses, and where their arrivals go.
struct Captures<'s, 'r, 'f> {
    sources: &'s mut [Ordered<'r>],
    sink: &'f mut dyn FnMut(usize, &Arrival) -> Result<()>,
    progress: Progress<'f>,
    taken: u64,
    interfaces: merge::Interfaces,
}

impl Streams for Captures<'_, '_, '_> {
    type Item = Arrival;

    fn next(&mut self, k: usize) -> Result<Option<Arrival>> {
        let n = self.sources.len();
        loop {
            let s = &mut self.sources[k];
            match s.next() {
                Ok(None) if s.resume() => self.look()?,
                Ok(got) => return Ok(got),
                Err(e) => return Err(s.reader.named(e, k, n)),
            }
        }
    }

    fn take(&mut self, mut a: Arrival, k: usize) -> Result<bool> {
        if self.sources.len() > 1 {
            a.interface = self.interfaces.id(k, a.interface);
        }
        (self.sink)(k, &a)?;
        self.taken += 1;
        if self.taken.is_multiple_of(PROGRESS_EVERY) || self.sources[k].reader.due() {
            self.look()?;
        }
        Ok(true)
    }
}

impl Captures<'_, '_, '_> {
    /// Progress, with the bytes all captures have read; and a look for a stop.
    fn look(&mut self) -> Result<()> {
        let read = self.sources.iter_mut().map(|s| s.reader.looked()).sum();
        (self.progress)(read)
    }
}

/// Read `readers` in one pass, merged in timestamp order after adding `offsets_ns[k]` (missing
/// offsets are 0) to every timestamp of capture k, and hand each arrival with its capture index
/// to `sink`, its size counted as `order.size` asks. Ties go to the earlier capture, so the
/// merge is deterministic. The interfaces of several captures are kept apart, each numbered
/// when its first packet is met; what comes back with the accounting renumbers them so that a
/// capture's follow all those of the captures before it (the numbers reported;
/// [`merge::Interfaces`]).
pub fn for_each(
    readers: &mut [CaptureReader],
    offsets_ns: &[i64],
    order: OrderOptions,
    progress: Progress<'_>,
    sink: &mut dyn FnMut(usize, &Arrival) -> Result<()>,
) -> Result<(Accounting, Renumber)> {
    for_each_ordered(readers, offsets_ns, order, progress, sink)
        .map_err(|e| crate::capture::explain(readers, e))
}

fn for_each_ordered(
    readers: &mut [CaptureReader],
    offsets_ns: &[i64],
    order: OrderOptions,
    progress: Progress<'_>,
    sink: &mut dyn FnMut(usize, &Arrival) -> Result<()>,
) -> Result<(Accounting, Renumber)> {
    if order.reorder_horizon_ns < 0 {
        return Err(Error::invalid(format!(
            "reorder horizon must be ≥ 0 ns, got {} ns",
            order.reorder_horizon_ns
        )));
    }
    order.time_range.check()?;
    let filters =
        crate::filter::per_capture(order.filter.as_ref(), &order.file_filters, readers.len())?;
    if readers.len() > 1 {
        readers.iter_mut().for_each(CaptureReader::share_residency);
    }
    let mut sources: Vec<Ordered<'_>> = readers
        .iter_mut()
        .zip(&filters)
        .enumerate()
        .map(|(k, (r, f))| {
            let offset_ns = offsets_ns.get(k).copied().unwrap_or(0);
            Ordered::new(r, offset_ns, &order, f.as_ref())
        })
        .collect();
    let mut captures = Captures {
        interfaces: merge::Interfaces::new(sources.len()),
        sources: &mut sources,
        sink,
        progress: &mut *progress,
        taken: 0,
    };
    merge::merge(captures.sources.len(), &mut captures)?;
    let declared: Vec<usize> = captures
        .sources
        .iter()
        .map(|s| s.reader.interfaces().len())
        .collect();
    let renumber = if declared.len() > 1 {
        captures.interfaces.numbers(&declared)
    } else {
        Renumber::default()
    };
    progress(sources.iter().map(|s| s.reader.consumed()).sum())?;
    let mut acc = Accounting::default();
    for s in &sources {
        acc.packets_read += s.packets_read;
        acc.skipped_no_timestamp += s.no_timestamp;
        acc.out_of_range(s.reader);
        acc.skipped_timestamp_out_of_range += s.shifted_out;
        acc.skipped_outside_range += s.outside;
        acc.ts_span = widened(acc.ts_span, s.ts_span);
        acc.skipped_filtered += s.filtered;
        acc.skipped_no_size += s.no_size;
        let st = s.reorder.stats();
        acc.skipped_late += st.dropped_late;
        acc.reordered += st.reordered;
        acc.max_lateness_ns = acc.max_lateness_ns.max(st.max_lateness_ns);
    }
    acc.counted = acc.packets_read
        - acc.skipped_no_timestamp
        - acc.skipped_timestamp_out_of_range
        - acc.skipped_outside_range
        - acc.skipped_filtered
        - acc.skipped_no_size
        - acc.skipped_late;
    Ok((acc, renumber))
}

/// Per-flow E(τ), one row per (flow key, window), from the engine grouped by flow.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FlowEnvelopes {
    /// Index into `FlowReport::flows`, window, E(τ) bytes, most packets in a window.
    pub rows: Vec<(usize, i64, u64, u64)>,
}

/// Flows of the merged captures; with `windows_ns` non-empty, each flow's own E(τ) too.
///
/// E(τ) is computed per flow key by the engine, so it needs the directional keys and no idle
/// timeout (a key would then stand for several flows).
pub fn flows(
    readers: &mut [CaptureReader],
    opts: FlowOptions,
    windows_ns: &[i64],
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(FlowReport, FlowEnvelopes, Accounting)> {
    let by =
        match (opts.key, windows_ns.is_empty()) {
            (_, true) => None,
            (FlowKey::Flow5, false) => Some(By::Flow5),
            (FlowKey::Flow4, false) => Some(By::Flow4),
            (FlowKey::BiFlow5, false) => return Err(Error::invalid(
                "per-flow E(τ) is computed for directional flows: use key='flow' or 'flow4' with \
                 windows, or drop windows for key='biflow'",
            )),
        };
    if let Some(t) = opts.idle_timeout_ns.filter(|t| *t < 0) {
        return Err(Error::invalid(format!(
            "idle timeout must be ≥ 0 ns, got {t} ns"
        )));
    }
    if by.is_some() && opts.idle_timeout_ns.is_some() {
        return Err(Error::invalid(
            "per-flow E(τ) is computed per flow key over the whole capture: drop idle_timeout \
             to get windows, or drop windows to split flows by idle timeout",
        ));
    }
    let mut table = FlowTable::new(opts);
    let mut scanner = match by {
        Some(b) => Some(Scanner::new(ScanConfig {
            windows_ns: windows_ns.to_vec(),
            by: vec![b],
            reorder_horizon_ns: 0,
            max_groups: opts.max_flows,
            ..ScanConfig::default()
        })?),
        None => None,
    };
    let (acc, _) = for_each(readers, &[], order, progress, &mut |_, a| {
        table.push(a)?;
        if let Some(s) = scanner.as_mut() {
            s.push(a)?;
        }
        Ok(())
    })?;
    let report = table.finish_report();
    let mut env = FlowEnvelopes::default();
    if let Some(s) = scanner {
        let out = s.finish()?;
        let mut by_key: HashMap<GroupKey, Vec<&EnvelopeRow>> = HashMap::new();
        for r in &out.envelope {
            by_key.entry(r.group).or_default().push(r);
        }
        for (i, f) in report.flows.iter().enumerate() {
            let key = match opts.key {
                FlowKey::Flow4 => GroupKey::Flow4 {
                    src: f.src_ip,
                    sport: f.src_port,
                    dst: f.dst_ip,
                    dport: f.dst_port,
                },
                _ => GroupKey::Flow5 {
                    proto: f.protocol,
                    src: f.src_ip,
                    dst: f.dst_ip,
                    sport: f.src_port,
                    dport: f.dst_port,
                },
            };
            for r in by_key.get(&key).map_or(&[][..], Vec::as_slice) {
                env.rows.push((i, r.window_ns, r.bytes, r.max_packets));
            }
        }
    }
    Ok((report, env, acc))
}

/// The traffic matrix of the merged captures. A pair it cannot hold (past `max_pairs`, or out of
/// memory) stops the read with an error at the byte offset reached in the capture that brought it.
pub fn traffic_matrix(
    readers: &mut [CaptureReader],
    max_pairs: usize,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(MatrixReport, Accounting)> {
    let mut m = TrafficMatrix::with_max_pairs(max_pairs);
    let mut refused = None;
    let read = for_each(readers, &[], order, progress, &mut |k, a| {
        m.try_push(a).inspect_err(|_| refused = Some(k))
    });
    let (acc, _) = read.map_err(|mut e| match refused {
        Some(k) => {
            e.offset = e.offset.or(Some(readers[k].position()));
            readers[k].named(e, k, readers.len())
        }
        None => e,
    })?;
    Ok((m.finish()?, acc))
}

/// Size and gap histograms of the whole trace and, with `by`, per group of that grouping.
pub fn histograms(
    readers: &mut [CaptureReader],
    by: Option<By>,
    max_groups: usize,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(GroupedHistograms<GroupKey>, Accounting)> {
    let mut h = GroupedHistograms::new(max_groups);
    // The first packet of one group too many ends the read: the result would be refused anyway,
    // and a many-GB capture should not be read to the end to say so.
    let (acc, renumber) = for_each(readers, &[], order, progress, &mut |_, a| {
        h.push(a, by.map(|b| b.key(a)));
        if h.over_limit() {
            return Err(if h.groups_used() > h.groups.len() {
                too_many_large_sizes(max_groups, h.large_sizes)
            } else {
                too_many_groups(max_groups)
            });
        }
        Ok(())
    })?;
    if by == Some(By::Interface) {
        h.groups = h
            .groups
            .into_iter()
            .map(|(k, v)| (renumber.key(k), v))
            .collect();
    }
    Ok((h, acc))
}

/// Bursts of packets closer than `gap_ns` to the one before ([`BurstDetector`]), over the
/// captures merged in time order, as a whole; `gap_ns` < 0 is an
/// [`crate::ErrorKind::InvalidArgument`] error.
pub fn bursts(
    readers: &mut [CaptureReader],
    gap_ns: i64,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(BurstReport, Accounting)> {
    let (b, acc) = bursts_by(readers, gap_ns, None, usize::MAX, order, progress)?;
    Ok((b.all, acc))
}

/// The bursts of the whole trace and of each group of one grouping, in key order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GroupedBursts {
    /// The whole trace's bursts.
    pub all: BurstReport,
    /// Each group's own bursts, in key order.
    pub groups: Vec<(GroupKey, BurstReport)>,
}

/// ON/OFF bursts of the whole trace and, with `by`, of each group apart: a group's bursts are
/// runs of its own packets, whatever the other groups send meanwhile (one link's bursts, when
/// grouped by interface). A group past `max_groups` ends the read, as for [`histograms`].
pub fn bursts_by(
    readers: &mut [CaptureReader],
    gap_ns: i64,
    by: Option<By>,
    max_groups: usize,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(GroupedBursts, Accounting)> {
    if gap_ns < 0 {
        return Err(Error::invalid(format!(
            "burst gap must be ≥ 0 ns, got {gap_ns} ns"
        )));
    }
    let mut all = BurstDetector::new(gap_ns);
    let mut groups: HashMap<GroupKey, BurstDetector> = HashMap::new();
    let (acc, renumber) = for_each(readers, &[], order, progress, &mut |_, a| {
        all.push(a);
        let Some(b) = by else { return Ok(()) };
        let key = b.key(a);
        if let Some(d) = groups.get_mut(&key) {
            d.push(a);
        } else if groups.len() >= max_groups {
            // Read on, the result would be refused anyway: a many-GB capture is not read to
            // its end to say so.
            return Err(too_many_groups(max_groups));
        } else {
            let mut d = BurstDetector::new(gap_ns);
            d.push(a);
            groups.insert(key, d);
        }
        Ok(())
    })?;
    let mut groups: Vec<(GroupKey, BurstReport)> = groups
        .into_iter()
        .map(|(k, d)| (renumber.key(k), d.finish()))
        .collect();
    groups.sort_unstable_by_key(|g| g.0);
    Ok((
        GroupedBursts {
            all: all.finish(),
            groups,
        },
        acc,
    ))
}

fn too_many_groups(max_groups: usize) -> Error {
    Error::limit_exceeded(
        Limit::Result,
        format!(
            "more than {max_groups} group{}: raise max_groups or choose a coarser grouping",
            if max_groups == 1 { "" } else { "s" }
        ),
    )
}

/// `histograms`' sizes above 65535 past their share of `max_groups`
/// ([`GroupedHistograms::groups_used`]).
fn too_many_large_sizes(max_groups: usize, large: usize) -> Error {
    Error::limit_exceeded(
        Limit::Result,
        format!(
            "more than {max_groups} group{}: {large} distinct sizes above 65,535 are held, and \
             every {} past the first {} count as one group: raise max_groups",
            if max_groups == 1 { "" } else { "s" },
            crate::analysis::LARGE_PER_GROUP,
            crate::analysis::LARGE_PER_GROUP,
        ),
    )
}

/// The training iterations of the captures merged in time order ([`IterationAnalyzer`]); the
/// iterations are cut by `order`'s time range unless `opts` names another.
pub fn iterations(
    readers: &mut [CaptureReader],
    opts: IterationOptions,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<(IterationReport, Accounting)> {
    // The stretch read is the one the iterations are cut by (unless the caller gave another).
    let opts = IterationOptions {
        range_start_ns: opts.range_start_ns.or(order.time_range.start_ns),
        range_end_ns: opts.range_end_ns.or(order.time_range.end_ns),
        ..opts
    };
    let mut an = IterationAnalyzer::new(opts);
    let (acc, _) = for_each(readers, &[], order, progress, &mut |_, a| {
        an.push(a);
        Ok(())
    })?;
    Ok((an.finish(), acc))
}

/// The exact merge of the captures (capture k shifted by `offsets_ns[k]`) scanned with `config`,
/// plus each capture's own envelope (aggregate, same windows) for the multiplexing gain.
#[derive(Debug)]
#[non_exhaustive]
pub struct Superposition {
    /// The scan of all the captures merged, each shifted by its offset.
    pub merged: ScanOutput,
    /// Per capture, its aggregate E(τ) rows (window order).
    pub singles: Vec<Vec<EnvelopeRow>>,
    /// Per capture, its first and last counted packet's time after its offset (None: no packet),
    /// to tell captures that never overlap, whose merge is no superposition.
    pub spans: Vec<Option<(i64, i64)>>,
    /// The packets read and left out, over all captures.
    pub accounting: Accounting,
}

/// Each packet counts `order.size` bytes (as a scan with that size counts it), in the merge and
/// in each capture's own envelope.
pub fn superpose(
    readers: &mut [CaptureReader],
    offsets_ns: &[i64],
    config: ScanConfig,
    order: OrderOptions,
    progress: Progress<'_>,
) -> Result<Superposition> {
    if offsets_ns.len() != readers.len() {
        return Err(Error::invalid(format!(
            "{} offsets for {} captures: give one offset per capture",
            offsets_ns.len(),
            readers.len()
        )));
    }
    let single_cfg = ScanConfig {
        windows_ns: config.windows_ns.clone(),
        closure: config.closure,
        reorder_horizon_ns: 0,
        ..ScanConfig::default()
    };
    // Arrivals come out of the merge in order: the scanners need no reorder buffer of their own.
    let mut merged = Scanner::new(ScanConfig {
        reorder_horizon_ns: 0,
        ..config
    })?;
    let mut singles = readers
        .iter()
        .map(|_| Scanner::new(single_cfg.clone()))
        .collect::<Result<Vec<_>>>()?;
    let (acc, renumber) = for_each(readers, offsets_ns, order, progress, &mut |k, a| {
        merged.push(a)?;
        if let Some(s) = singles.get_mut(k) {
            s.push(a)?;
        }
        Ok(())
    })?;
    let mut out = merged.finish()?;
    renumber.apply(&mut out);
    out.reorder.reordered = acc.reordered;
    out.reorder.dropped_late = acc.skipped_late;
    out.reorder.max_lateness_ns = acc.max_lateness_ns;
    let outs = singles
        .into_iter()
        .map(Scanner::finish)
        .collect::<Result<Vec<_>>>()?;
    let spans = outs
        .iter()
        .map(|o| {
            o.groups
                .iter()
                .find(|g| g.packets > 0)
                .map(|g| (g.first_ns, g.last_ns))
        })
        .collect();
    Ok(Superposition {
        merged: out,
        singles: outs.into_iter().map(|o| o.envelope).collect(),
        spans,
        accounting: acc,
    })
}
