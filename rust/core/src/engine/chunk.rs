//! Time chunks: scan consecutive pieces of a trace independently, then merge their states into
//! exactly what one sequential scan of the whole trace reports.
//!
//! A [`ChunkScanner`] scans one chunk (its own reorder buffer, its own groups) into a
//! [`ChunkState`]; [`ChunkState::merge`] joins the state of a chunk with the state of the chunk
//! right after it. Merging is associative, so chunks can be merged in any tree (threads now,
//! machines later). Per group and metric, a state holds:
//!
//! - envelope: per τ the chunk's own best window (bytes, packets, start, most packets), plus the
//!   group's packets of the first and of the last max(τ) ns of the chunk (head and tail). A window
//!   that crosses the boundary starts in the tail of the first chunk and ends in the head of the
//!   second: merging replays those starts exactly. A best window that does not cross keeps its
//!   value; the tie rule (earliest start) holds because starts that cross come after those that do
//!   not, and before the starts of the second chunk;
//! - backlog: see [`super::backlog::RateChunk`] (max-plus algebra of the Lindley queue);
//! - series: the bins add (only the boundary bin can be shared);
//! - summaries: counts add, first and last come from the ends.
//!
//! Merging needs the chunks in time order: every packet of the first at or before every packet of
//! the second, and the reorder buffer of the second must have taken the same decisions as a
//! sequential scan (its first arrival no earlier than the latest of the first chunk). When this or
//! anything else cannot be guaranteed, the merge says so ([`NotMergeable`]) and the caller scans
//! sequentially instead; it never returns a result that differs from the sequential one.
//!
//! ```
//! use burstcore::engine::chunk::{ChunkScanner, ChunkState};
//! use burstcore::engine::{ScanConfig, Scanner};
//!
//! let config = ScanConfig::default()
//!     .with_windows_ns(vec![1_000])
//!     .with_rates_bps(vec![8_000_000_000]);
//! let packets = [(0, 1000), (500, 1000), (900, 1000), (1_400, 1000)];
//! // Two chunks, scanned apart (on two threads or two machines), then merged in time order.
//! let mut states = Vec::new();
//! for chunk in packets.chunks(2) {
//!     let mut c = ChunkScanner::new(config.clone())?;
//!     for &(ts_ns, size) in chunk {
//!         c.push_lean(ts_ns, size, 0)?;
//!     }
//!     states.push(c.finish()?);
//! }
//! let second = states.pop().unwrap();
//! let merged = states.pop().unwrap().merge(second).expect("chunks in time order");
//! let merged = merged.finish().expect("mergeable");
//!
//! let mut s = Scanner::new(config)?;
//! for &(ts_ns, size) in &packets {
//!     s.push_lean(ts_ns, size, 0)?;
//! }
//! let sequential = s.finish()?;
//! assert_eq!(merged.envelope, sequential.envelope);
//! assert_eq!(merged.envelope[0].bytes, 3000); // [500, 1500) crosses the seam
//! assert_eq!(merged.backlog, sequential.backlog);
//! # Ok::<(), burstcore::Error>(())
//! ```

use super::backlog::{ChunkRates, RateChunk, BATCH, KEYED_BATCH};
use super::envelope::{Envelope, Keep, Recent};
use super::group::{Ringed, Slots, Tally};
use super::reorder::{Bare, Buffered, Release};
use super::scanner::ExactBacklog;
use super::search::first_where;
use super::series::Series;
use super::{
    Arrival, BinOrigin, By, Closure, EnvelopeRow, GroupKey, GroupSummary, LatePolicy, ReorderStats,
    ScanConfig, ScanOutput, SeriesRow,
};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Why two chunk states cannot be merged exactly (the caller then scans sequentially).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotMergeable {
    /// Why, in words.
    pub reason: &'static str,
}

impl std::fmt::Display for NotMergeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "time chunks cannot be merged exactly: {}", self.reason)
    }
}

fn not(reason: &'static str) -> NotMergeable {
    NotMergeable { reason }
}

/// Empty instants kept per group and rate (see `RateChunk`): a carried busy period that outlives
/// this many new minima cannot be merged. At rates near the mean rate a carried queue can take
/// thousands of them to drain; 64 bytes each.
pub const DEFAULT_INSTANT_CAP: usize = 1 << 14;

/// Empty instants kept by one chunk over the groups of its groupings by key (80 bytes each): a
/// grouping by flow can have a million groups, each adding up to one instant per packet and rate.
/// Past the budget, lists stop growing (truncated), which only matters to a merge that needs more
/// of them: it then refuses and the scan runs sequentially. The aggregate has only its cap.
/// The chunks of one scan share it ([`instant_share`]).
pub const INSTANT_BUDGET: usize = 1 << 20;

/// What each of `kept` chunks of one scan that keep instants (all but a leading one) may keep
/// of [`INSTANT_BUDGET`] ([`ChunkScanner::keeping_instants`]). Each chunk's states are held
/// until all are merged: with the whole budget each, a scan by interface with 8 rates held
/// 80 MB per chunk, 702 MB over the process start in eight chunks of a 307 MB capture.
pub(crate) fn instant_share(kept: usize) -> usize {
    INSTANT_BUDGET / kept.max(1)
}

/// Packets at a seam (tail plus head) from which merging replays the windows on several threads.
const PARALLEL_SEAM: usize = 1 << 16;

/// Packets of spent seam buffers (over all groups) from which a merge frees them on a thread
/// of its own.
const FREE_ASIDE: usize = 1 << 16;

/// The normalised configuration shared by every chunk of one scan.
#[derive(Debug, PartialEq)]
struct Spec {
    windows: Vec<i64>,
    /// Per window, the largest t − s with s and t in one window (τ − 1 half-open, τ closed).
    reaches: Vec<i64>,
    max_reach: Option<i64>,
    closure: Closure,
    rates: Vec<u64>,
    bins: Vec<i64>,
    /// The instant the bins are counted from: every chunk must bin alike to merge.
    bin_origin: i64,
    by: Vec<By>,
    max_groups: usize,
    horizon: i64,
    late: LatePolicy,
    cap: usize,
}

impl Spec {
    fn new(config: &ScanConfig, cap: usize) -> Result<Self> {
        // The sequential scanner's checks and order, so that both refuse and sort alike.
        let config = config.clone().normalized()?;
        let bin_origin =
            match config.bin_origin {
                BinOrigin::At(o) => o,
                // Only the first chunk sees the first packet ([`ScanConfig::bins_from_first_packet`]).
                BinOrigin::FirstPacket if config.bins_ns.is_empty() => 0,
                BinOrigin::FirstPacket => return Err(Error::invalid(
                    "bins counted from the first packet need a sequential scan: a chunk scanner \
                     takes them from an instant (BinOrigin::At)",
                )),
            };
        let reaches: Vec<i64> = config
            .windows_ns
            .iter()
            .map(|&tau| match config.closure {
                Closure::HalfOpen => tau.saturating_sub(1),
                Closure::Closed => tau,
            })
            .collect();
        Ok(Spec {
            max_reach: reaches.iter().copied().max(),
            windows: config.windows_ns,
            reaches,
            closure: config.closure,
            rates: config.rates_bps,
            bins: config.bins_ns,
            bin_origin,
            by: config.by,
            max_groups: config.max_groups,
            horizon: config.reorder_horizon_ns,
            late: config.late,
            cap: cap.max(1),
        })
    }
}

/// Where a chunk lies among the chunks it will be merged with: the first needs no head (nothing
/// merges before it), the last no tail. Keeping neither halves what a two-chunk scan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Edges {
    /// The chunk is the first: it keeps no head.
    pub first: bool,
    /// The chunk is the last: it keeps no tail.
    pub last: bool,
}

/// A group's packets kept for a seam, in time order: 8 bytes each while their offsets from the
/// first one and their sizes fit 32 bits (always, for windows up to 4 s and real packets), else
/// 16 bytes. A chunk's tail, and its head unless the ring came round onto it, are the
/// envelope's own ring instead (`Ring`, see `Envelope::keep_head`), handed over when the chunk
/// ends; it becomes one of the others if packets are added (merging more than two chunks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kept {
    Narrow { base: i64, v: Vec<(u32, u32)> },
    Wide(Vec<(i64, u64)>),
    Ring(Recent),
}

impl Kept {
    pub(super) fn new() -> Self {
        Kept::Narrow {
            base: 0,
            v: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Kept::Narrow { v, .. } => v.len(),
            Kept::Wide(v) => v.len(),
            Kept::Ring(r) => r.len(),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> (i64, u64) {
        match self {
            Kept::Narrow { base, v } => {
                let (d, size) = v[i];
                (base + i64::from(d), u64::from(size))
            }
            Kept::Wide(v) => v[i],
            Kept::Ring(r) => r.at(i),
        }
    }

    #[inline]
    fn push(&mut self, ts: i64, size: u64) {
        if let Kept::Narrow { base, v } = self {
            if v.is_empty() {
                *base = ts;
            }
            let d = i128::from(ts) - i128::from(*base);
            if let (Ok(d), Ok(s)) = (u32::try_from(d), u32::try_from(size)) {
                v.push((d, s));
                return;
            }
            self.widen();
        }
        if let Kept::Ring(_) = self {
            self.materialize();
            return self.push(ts, size);
        }
        if let Kept::Wide(v) = self {
            v.push((ts, size));
        }
    }

    /// A ring's packets as a list of their own, to add to.
    #[cold]
    fn materialize(&mut self) {
        self.drop_front(0);
    }

    #[cold]
    fn widen(&mut self) {
        let wide = (0..self.len()).map(|i| self.at(i)).collect();
        *self = Kept::Wide(wide);
    }

    /// Index of the first packet for which `before(ts)` is false (it holds on a prefix).
    fn partition_point(&self, before: impl Fn(i64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.at(mid).0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Drop the first `n` packets (a ring's become a list even when `n` is 0).
    fn drop_front(&mut self, n: usize) {
        if n == 0 && !matches!(self, Kept::Ring(_)) {
            return;
        }
        let rest: Vec<(i64, u64)> = (n..self.len()).map(|i| self.at(i)).collect();
        *self = Kept::new();
        for (t, s) in rest {
            self.push(t, s);
        }
    }
}

impl Keep for Kept {
    fn reserve(&mut self, n: usize) {
        match self {
            Kept::Narrow { v, .. } => v.reserve_exact(n),
            Kept::Wide(v) => v.reserve_exact(n),
            Kept::Ring(_) => {}
        }
    }

    #[inline]
    fn keep(&mut self, ts: i64, size: u64) {
        self.push(ts, size);
    }
}

impl Ringed for GroupScan {
    fn envelope_mut(&mut self) -> &mut Envelope {
        &mut self.envelope
    }
}

/// One group while its chunk is scanned.
#[derive(Debug)]
struct GroupScan {
    envelope: Envelope,
    backlog: ChunkRates,
    series: Series,
    tally: Tally,
    /// Keep the packets of the first max(reach) ns (unless no chunk comes before): the envelope
    /// keeps them ([`Envelope::keep_head`]); those of the last max(reach) ns (that a trim left)
    /// are taken from the envelope's ring at the end too.
    keep_head: bool,
    keep_tail: bool,
}

impl GroupScan {
    /// `aggregate`: the one group of the aggregate, whose backlog holds a full batch; a group
    /// among many holds a small one, as in the sequential scan.
    fn new(spec: &Spec, edges: Edges, aggregate: bool) -> Self {
        let windows = spec.max_reach.is_some();
        GroupScan {
            envelope: Envelope::new(&spec.windows, spec.closure),
            backlog: ChunkRates::new(
                &spec.rates,
                spec.cap,
                if aggregate { BATCH } else { KEYED_BATCH },
                edges.first,
            ),
            series: Series::new(&spec.bins, Some(spec.bin_origin)),
            tally: Tally::default(),
            keep_head: windows && !edges.first,
            keep_tail: windows && !edges.last,
        }
    }

    #[inline]
    fn push(&mut self, ts: i64, size: u64, max_reach: Option<i64>, budget: &mut usize) {
        if self.tally.packets == 0 {
            self.bound_head(ts, max_reach);
        }
        self.tally.add(ts, size);
        self.envelope.push(ts, size);
        self.backlog.push(ts, size, budget);
        self.series.push(ts, size);
    }

    /// At the group's first packet (at `ts`), before the envelope has it: where its head ends,
    /// if it keeps one.
    fn bound_head(&mut self, ts: i64, max_reach: Option<i64>) {
        if let (true, Some(reach)) = (self.keep_head, max_reach) {
            self.envelope.keep_head(ts.saturating_add(reach));
        }
    }

    /// [`GroupScan::push`] for consecutive packets, each part of the group over all of them.
    #[inline]
    fn push_run(&mut self, run: &[Bare], max_reach: Option<i64>, budget: &mut usize) {
        let Some(first) = run.first() else {
            return;
        };
        if self.tally.packets == 0 {
            self.bound_head(first.ts_ns, max_reach);
        }
        self.tally.add_run(run);
        let packets = run.iter().map(|b| (b.ts_ns, b.size));
        self.envelope.push_run(packets.clone());
        for b in run {
            self.backlog.push(b.ts_ns, b.size, budget);
        }
        self.series.push_run(packets);
    }

    fn finish(
        mut self,
        spec: &Spec,
        budget: &mut usize,
    ) -> std::result::Result<ChunkGroup, NotMergeable> {
        let mut rows = Vec::new();
        if self
            .envelope
            .rows(By::All, GroupKey::All, &mut rows)
            .is_err()
        {
            // The ring could not hold the packets within the largest window: the sequential
            // scan, which holds at least as many, tells.
            return Err(not(
                "the packets within the largest window could not all be held",
            ));
        }
        // After the rows: taking the ring spends the envelope. The head goes first, a copy if
        // the ring goes on to be the tail.
        let head = match (self.keep_head, spec.max_reach) {
            (true, Some(_)) => Some(
                self.envelope
                    .take_head(self.keep_tail)
                    .ok_or(not("the packets at the seam were not kept"))?,
            ),
            _ => None,
        };
        let tail = match spec.max_reach {
            Some(reach) if self.keep_tail => {
                let from = self.tally.last_ns.saturating_sub(reach);
                Some(match self.envelope.take_recent(from) {
                    Some(ring) => Kept::Ring(ring),
                    None => {
                        let mut tail = Kept::new();
                        self.envelope.recent(from, &mut tail);
                        tail
                    }
                })
            }
            _ => None,
        };
        let mut env = Vec::with_capacity(rows.len());
        for r in rows {
            if r.bytes == u64::MAX {
                // Possibly saturated: the exact sum is not known.
                return Err(not("a window holds 2^64 bytes or more"));
            }
            env.push(Best {
                bytes: u128::from(r.bytes),
                packets: r.packets_in_window,
                start: r.start_ns,
                max_packets: r.max_packets,
            });
        }
        let backlog = if spec.rates.is_empty() {
            Vec::new()
        } else {
            self.backlog
                .finish(budget)
                .ok_or(not("a queue left the range of exact merging"))?
        };
        let mut srows = Vec::new();
        self.series.rows(By::All, GroupKey::All, &mut srows);
        let mut series: Vec<Vec<(i64, u64, u64)>> = vec![Vec::new(); spec.bins.len()];
        for r in srows {
            if let Some(i) = spec.bins.iter().position(|&b| b == r.bin_ns) {
                series[i].push((r.start_ns, r.bytes, r.packets));
            }
        }
        Ok(ChunkGroup {
            packets: self.tally.packets,
            bytes: self.tally.bytes,
            first_ns: self.tally.first_ns,
            last_ns: self.tally.last_ns,
            env,
            backlog,
            series,
            head,
            tail,
        })
    }
}

/// The best window of one τ among the windows starting in a chunk (counting its packets only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Best {
    bytes: u128,
    packets: u64,
    start: i64,
    max_packets: u64,
}

/// The mergeable state of one group over one chunk (at least one packet).
#[derive(Debug, Clone, PartialEq)]
struct ChunkGroup {
    packets: u64,
    bytes: u64,
    first_ns: i64,
    last_ns: i64,
    env: Vec<Best>,
    backlog: Vec<RateChunk>,
    /// Per bin width: non-empty bins (start, bytes, packets), by start.
    series: Vec<Vec<(i64, u64, u64)>>,
    /// `None` when not kept (nothing will be merged before, or after) or not known. The tail
    /// lacks the packets a trim let go (see `Groups::push`): none a window reaching the next
    /// chunk can hold.
    head: Option<Kept>,
    tail: Option<Kept>,
}

impl ChunkGroup {
    /// `a` followed by `b` (all of `a`'s packets at or before `b`'s, `a`'s first on ties). The
    /// packets of the seam that the merged group does not keep go to `spent`.
    fn merge(
        a: ChunkGroup,
        b: ChunkGroup,
        spec: &Spec,
        threads: usize,
        spent: &mut Vec<Kept>,
    ) -> std::result::Result<Self, NotMergeable> {
        let env = match (spec.max_reach, &a.tail, &b.head) {
            (None, _, _) => Vec::new(),
            (Some(_), Some(tail), Some(head)) => {
                let one = |w: usize| {
                    cross(
                        &a.env[w],
                        &b.env[w],
                        tail,
                        head,
                        spec.reaches[w],
                        a.last_ns,
                        b.first_ns,
                    )
                };
                let n = spec.reaches.len();
                // A long seam (a window as long as the chunks) costs tens of milliseconds per
                // window: replay the windows on several threads then.
                let threads = threads.min(n);
                if threads > 1 && tail.len() + head.len() >= PARALLEL_SEAM {
                    // Longest window first, each to whichever thread is free: the replays cost
                    // about their reach, so the longest dominates.
                    let next = AtomicUsize::new(0);
                    std::thread::scope(|scope| {
                        let parts: Vec<_> = (0..threads)
                            .map(|_| {
                                scope.spawn(|| {
                                    let mut rows = Vec::new();
                                    loop {
                                        let k = next.fetch_add(1, Ordering::Relaxed);
                                        if k >= n {
                                            return rows;
                                        }
                                        rows.push((n - 1 - k, one(n - 1 - k)));
                                    }
                                })
                            })
                            .collect();
                        let mut env = vec![None; n];
                        for p in parts {
                            // A replay has no panicking path; a panic would surface here.
                            if let Ok(rows) = p.join() {
                                for (w, best) in rows {
                                    env[w] = Some(best);
                                }
                            }
                        }
                        env.into_iter()
                            .collect::<Option<Vec<Best>>>()
                            .ok_or(not("a seam replay failed"))
                    })?
                } else {
                    (0..n).map(one).collect()
                }
            }
            _ => return Err(not("the packets at the seam were not kept")),
        };
        let mut backlog = Vec::with_capacity(a.backlog.len());
        for (ra, rb) in a.backlog.into_iter().zip(&b.backlog) {
            backlog.push(
                RateChunk::merge(ra, rb, a.last_ns, b.first_ns, spec.cap)
                    .ok_or(not("a busy period carried across chunks ends too far away"))?,
            );
        }
        let series = a
            .series
            .into_iter()
            .zip(b.series)
            .map(|(mut sa, sb)| {
                let mut rest = sb.into_iter().peekable();
                if let (Some(last), Some(first)) = (sa.last_mut(), rest.peek()) {
                    if last.0 == first.0 {
                        last.1 = last.1.saturating_add(first.1);
                        last.2 += first.2;
                        rest.next();
                    }
                }
                sa.extend(rest);
                sa
            })
            .collect();
        let (head, tail) = match spec.max_reach {
            Some(reach) => {
                // The head of `a` then `b` reaches into `b` only when `a` is shorter than the
                // reach; likewise the tail into `a`.
                let until = a.first_ns.saturating_add(reach);
                let head = match (a.head, &b.head) {
                    (Some(mut h), Some(bh)) => {
                        for i in 0..bh.partition_point(|t| t <= until) {
                            let (t, s) = bh.at(i);
                            h.push(t, s);
                        }
                        Some(h)
                    }
                    (Some(h), None) if b.first_ns > until => Some(h),
                    (h, _) => {
                        spent.extend(h);
                        None
                    }
                };
                spent.extend(b.head);
                let from = b.last_ns.saturating_sub(reach);
                let tail = match (a.tail, b.tail) {
                    (Some(mut t), Some(bt)) => {
                        t.drop_front(t.partition_point(|ts| ts < from));
                        for i in 0..bt.len() {
                            let (ts, s) = bt.at(i);
                            t.push(ts, s);
                        }
                        spent.push(bt);
                        Some(t)
                    }
                    (None, Some(bt)) if a.last_ns < from => Some(bt),
                    (t, bt) => {
                        spent.extend(t);
                        spent.extend(bt);
                        None
                    }
                };
                (head, tail)
            }
            None => (None, None),
        };
        Ok(ChunkGroup {
            packets: a.packets + b.packets,
            bytes: a.bytes.saturating_add(b.bytes),
            first_ns: a.first_ns,
            last_ns: b.last_ns,
            env,
            backlog,
            series,
            head,
            tail,
        })
    }

    fn rows(&self, by: By, group: GroupKey, spec: &Spec, out: &mut ScanOutput) {
        for (&tau, e) in spec.windows.iter().zip(&self.env) {
            out.envelope.push(EnvelopeRow {
                by,
                group,
                window_ns: tau,
                bytes: u64::try_from(e.bytes).unwrap_or(u64::MAX),
                packets_in_window: e.packets,
                start_ns: e.start,
                max_packets: e.max_packets,
            });
        }
        for r in &self.backlog {
            out.backlog
                .push(r.row(by, group, self.first_ns, self.last_ns));
        }
        for (&bin_ns, bins) in spec.bins.iter().zip(&self.series) {
            out.series
                .extend(bins.iter().map(|&(start_ns, bytes, packets)| SeriesRow {
                    by,
                    group,
                    bin_ns,
                    start_ns,
                    bytes,
                    packets,
                }));
        }
        out.groups.push(GroupSummary {
            by,
            group,
            packets: self.packets,
            bytes: self.bytes,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
        });
    }
}

/// Free the seam buffers a merge is done with, all groups' together (one thread, however many
/// interfaces). Large ones go to a thread of their own, which nothing waits for: giving tens of
/// megabytes back to the kernel (unmapping them, and the TLB flush that sends to the other
/// cores) was a quarter to a third of the serial merge of two chunks on the benchmark's 2 GB
/// captures, which freeing aside took from a median of 20 to 16 ms on full frames and from 33 to
/// 21 ms at snaplen 128 (benches/RESULTS.md, "Nineteenth landing").
fn free_aside(spent: Vec<Kept>) {
    if spent.iter().map(Kept::len).sum::<usize>() < FREE_ASIDE {
        return;
    }
    // When no thread can be started, the closure is dropped here, and the buffers with it.
    let _ = std::thread::Builder::new()
        .name("burstcore-free".into())
        .spawn(move || drop(spent));
}

/// The best window of one τ over `a` then `b`: `a`'s best if it ends before `b` starts, every
/// start of `a`'s tail whose window reaches into `b` (replayed exactly), and `b`'s best if it
/// starts after `a`'s last packet. Candidates come in increasing start order, so keeping only
/// strictly better ones keeps the earliest start among equals, as the sequential scan does.
fn cross(
    ea: &Best,
    eb: &Best,
    tail: &Kept,
    head: &Kept,
    reach: i64,
    a_last: i64,
    b_first: i64,
) -> Best {
    // One loop per storage pair, so that the replay reads plain slices.
    match (tail, head) {
        (Kept::Narrow { base: tb, v: t }, Kept::Narrow { base: hb, v: h }) => replay(
            ea,
            eb,
            &(*tb, &t[..]),
            &(*hb, &h[..]),
            reach,
            a_last,
            b_first,
        ),
        (Kept::Narrow { base: tb, v: t }, Kept::Wide(h)) => {
            replay(ea, eb, &(*tb, &t[..]), &&h[..], reach, a_last, b_first)
        }
        (Kept::Wide(t), Kept::Narrow { base: hb, v: h }) => {
            replay(ea, eb, &&t[..], &(*hb, &h[..]), reach, a_last, b_first)
        }
        (Kept::Wide(t), Kept::Wide(h)) => replay(ea, eb, &&t[..], &&h[..], reach, a_last, b_first),
        (Kept::Ring(t), Kept::Narrow { base: hb, v: h }) => {
            replay(ea, eb, &t, &(*hb, &h[..]), reach, a_last, b_first)
        }
        (Kept::Ring(t), Kept::Wide(h)) => replay(ea, eb, &t, &&h[..], reach, a_last, b_first),
        (Kept::Narrow { base: tb, v: t }, Kept::Ring(h)) => {
            replay(ea, eb, &(*tb, &t[..]), &h, reach, a_last, b_first)
        }
        (Kept::Wide(t), Kept::Ring(h)) => replay(ea, eb, &&t[..], &h, reach, a_last, b_first),
        (Kept::Ring(t), Kept::Ring(h)) => replay(ea, eb, &t, &h, reach, a_last, b_first),
    }
}

/// Packets in time order, read by index.
trait Seam {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> (i64, u64);
    /// Bytes of the packets `from..to`.
    #[inline(always)]
    fn bytes(&self, from: usize, to: usize) -> u128 {
        (from..to).map(|k| u128::from(self.at(k).1)).sum()
    }
}

impl Seam for (i64, &[(u32, u32)]) {
    #[inline(always)]
    fn len(&self) -> usize {
        self.1.len()
    }
    #[inline(always)]
    fn at(&self, i: usize) -> (i64, u64) {
        let (d, size) = self.1[i];
        (self.0 + i64::from(d), u64::from(size))
    }
}

impl Seam for &Recent {
    #[inline(always)]
    fn len(&self) -> usize {
        Recent::len(self)
    }
    #[inline(always)]
    fn at(&self, i: usize) -> (i64, u64) {
        Recent::at(self, i)
    }
    #[inline(always)]
    fn bytes(&self, from: usize, to: usize) -> u128 {
        Recent::bytes(self, from, to)
    }
}

impl Seam for &Kept {
    fn len(&self) -> usize {
        Kept::len(self)
    }
    fn at(&self, i: usize) -> (i64, u64) {
        Kept::at(self, i)
    }
}

impl Seam for &[(i64, u64)] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[(i64, u64)]>::len(self)
    }
    #[inline(always)]
    fn at(&self, i: usize) -> (i64, u64) {
        self[i]
    }
}

/// Starts of a seam replay taken together (see [`replay`]).
const SEAM_BLOCK: usize = 64;

/// [`cross`] over one storage pair.
///
/// The starts are taken in blocks: every window of a block holds at most the tail from the
/// block's first start plus the head up to its last start's reach, and when even that cannot
/// beat the best so far (nor the most packets), the block is skipped with two branch-free sums
/// instead of a step per start. A window as long as the chunks replays millions of starts, and
/// the per-start step, whose head pointer moves by a different count each time, costs a
/// mispredicted branch at most of them.
fn replay<T: Seam, H: Seam>(
    ea: &Best,
    eb: &Best,
    tail: &T,
    head: &H,
    reach: i64,
    a_last: i64,
    b_first: i64,
) -> Best {
    // Candidates come in increasing start order; only a strictly better one replaces.
    let mut best: Option<(u128, u64, i64)> = None;
    let consider = |best: &mut Option<(u128, u64, i64)>, bytes: u128, packets: u64, start: i64| {
        if best.is_none_or(|b| bytes > b.0) {
            *best = Some((bytes, packets, start));
        }
    };
    let mut max_packets = ea.max_packets.max(eb.max_packets);
    if ea.start.saturating_add(reach) < b_first {
        consider(&mut best, ea.bytes, ea.packets, ea.start);
    }
    // The first start whose window reaches `b` (times are sorted: bisect).
    let (mut lo, mut hi) = (0, tail.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if tail.at(mid).0.saturating_add(reach) < b_first {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let from = lo;
    let mut sum_a = tail.bytes(from, tail.len());
    let mut n_a = (tail.len() - from) as u64;
    let (mut sum_b, mut n_b, mut j) = (0u128, 0u64, 0usize);
    let mut i = from;
    while i < tail.len() {
        // A block ends where a run of equal timestamps does: a start is its run's first packet.
        let mut q = (i + SEAM_BLOCK).min(tail.len());
        while q < tail.len() && tail.at(q).0 == tail.at(q - 1).0 {
            q += 1;
        }
        if let Some(b) = best {
            let end = tail.at(q - 1).0.saturating_add(reach);
            let j_end = first_after(head, j, end);
            let add_b = head.bytes(j, j_end);
            let n_end = n_a + n_b + (j_end - j) as u64;
            if sum_a + sum_b + add_b <= b.0 && n_end <= max_packets {
                sum_a -= tail.bytes(i, q);
                n_a -= (q - i) as u64;
                (sum_b, n_b, j) = (sum_b + add_b, n_b + (j_end - j) as u64, j_end);
                i = q;
                continue;
            }
        }
        while i < q {
            let s = tail.at(i).0;
            let end = s.saturating_add(reach);
            while j < head.len() && head.at(j).0 <= end {
                sum_b += u128::from(head.at(j).1);
                n_b += 1;
                j += 1;
            }
            consider(&mut best, sum_a + sum_b, n_a + n_b, s);
            max_packets = max_packets.max(n_a + n_b);
            while i < q && tail.at(i).0 == s {
                sum_a -= u128::from(tail.at(i).1);
                n_a -= 1;
                i += 1;
            }
        }
    }
    if eb.start > a_last {
        consider(&mut best, eb.bytes, eb.packets, eb.start);
    }
    // `a` has a packet, so either its best does not cross or the replay saw a start.
    let (bytes, packets, start) = best.unwrap_or((ea.bytes, ea.packets, ea.start));
    Best {
        bytes,
        packets,
        start,
        max_packets,
    }
}

/// The first packet of `seam` from `from` on with a timestamp after `end` (`seam.len()` if
/// none), galloping from `from`: the block's head pointer moves a little past the last one.
fn first_after<H: Seam>(seam: &H, from: usize, end: i64) -> usize {
    first_where(from as u64, seam.len() as u64, |i| {
        seam.at(i as usize).0 > end
    }) as usize
}

/// Reorder decisions and the time range of a chunk, to check that chunks line up.
#[derive(Debug, Clone, Default, PartialEq)]
struct Meta {
    /// Timestamp of the chunk's first arrival (in input order), and the latest of all.
    first_arrival: Option<i64>,
    latest: Option<i64>,
    /// Earliest and latest timestamp that went into the metrics.
    min_out: Option<i64>,
    max_out: Option<i64>,
    stats: ReorderStats,
}

/// The mergeable result of scanning one chunk (or several adjacent chunks, merged).
#[derive(Debug, Clone)]
pub struct ChunkState {
    spec: Arc<Spec>,
    meta: Meta,
    groupings: Vec<(By, BTreeMap<GroupKey, ChunkGroup>)>,
    /// Set when the state cannot be merged or reported exactly (the caller must rescan).
    broken: Option<NotMergeable>,
}

impl ChunkState {
    /// The state of this chunk followed by `next` (the chunk right after it in time).
    pub fn merge(self, next: ChunkState) -> std::result::Result<ChunkState, NotMergeable> {
        self.merge_threads(next, 1)
    }

    /// [`ChunkState::merge`], replaying long seams on up to `threads` threads.
    pub fn merge_threads(
        mut self,
        next: ChunkState,
        threads: usize,
    ) -> std::result::Result<ChunkState, NotMergeable> {
        if let Some(e) = self.broken.or(next.broken) {
            return Err(e);
        }
        if self.spec != next.spec {
            return Err(not("the chunks were scanned with different configurations"));
        }
        let (a, b) = (&self.meta, &next.meta);
        if a.first_arrival.is_none() {
            let mut out = next;
            add_stats(&mut out.meta.stats, &self.meta.stats);
            return Ok(out);
        }
        if b.first_arrival.is_none() {
            add_stats(&mut self.meta.stats, &next.meta.stats);
            return Ok(self);
        }
        // The sequential reorder buffer would have taken other decisions, or sorted packets of
        // one chunk among those of the other.
        if a.latest > b.first_arrival {
            return Err(not(
                "a chunk starts before the latest packet of the one before",
            ));
        }
        if let (Some(x), Some(y)) = (a.max_out, b.min_out) {
            if x > y {
                return Err(not("the packets of adjacent chunks overlap in time"));
            }
        }
        let mut meta = Meta {
            first_arrival: a.first_arrival,
            latest: b.latest.max(a.latest),
            min_out: a.min_out.or(b.min_out),
            max_out: b.max_out.or(a.max_out),
            stats: a.stats.clone(),
        };
        add_stats(&mut meta.stats, &b.stats);
        let spec = self.spec;
        let mut groupings = Vec::with_capacity(self.groupings.len());
        let mut spent = Vec::new();
        for ((by, mut ga), (_, gb)) in self.groupings.into_iter().zip(next.groupings) {
            for (key, b) in gb {
                let merged = match ga.remove(&key) {
                    Some(a) => ChunkGroup::merge(a, b, &spec, threads, &mut spent)?,
                    None => b,
                };
                ga.insert(key, merged);
            }
            if ga.len() > spec.max_groups {
                return Err(not(
                    "too many groups (the sequential scan reports the error)",
                ));
            }
            groupings.push((by, ga));
        }
        free_aside(spent);
        Ok(ChunkState {
            spec,
            meta,
            groupings,
            broken: None,
        })
    }

    /// The rows of the sequential scan, in its order.
    pub fn finish(self) -> std::result::Result<ScanOutput, NotMergeable> {
        self.finish_exact().map(|(out, _)| out)
    }

    /// [`ChunkState::finish`], plus B_max of every group and rate as an exact integer, as
    /// [`Scanner::finish_exact`](crate::engine::Scanner::finish_exact) gives them.
    pub fn finish_exact(
        self,
    ) -> std::result::Result<(ScanOutput, Vec<ExactBacklog>), NotMergeable> {
        if let Some(e) = self.broken {
            return Err(e);
        }
        let mut out = ScanOutput {
            reorder: self.meta.stats.clone(),
            ..Default::default()
        };
        let mut exact = Vec::new();
        for (by, groups) in &self.groupings {
            for (&key, g) in groups {
                g.rows(*by, key, &self.spec, &mut out);
                exact.extend(g.backlog.iter().map(|r| ExactBacklog {
                    by: *by,
                    group: key,
                    rate_bps: r.rate(),
                    bmax_scaled: r.bmax(),
                }));
            }
        }
        Ok((out, exact))
    }

    /// Timestamps of the first arrival (in input order) and of the latest one; `None` without
    /// arrivals.
    pub fn arrival_span(&self) -> Option<(i64, i64)> {
        self.meta.first_arrival.zip(self.meta.latest)
    }

    /// Packets of the groups' heads and tails held for merging, over all groupings (what the
    /// envelope merge costs in memory: 8 to 16 bytes each, or 12 to 16 in the slots of a ring
    /// handed over, which the chunk's envelope held anyway).
    pub fn retained_packets(&self) -> usize {
        self.groupings
            .iter()
            .flat_map(|(_, g)| g.values())
            .map(|g| g.head.as_ref().map_or(0, Kept::len) + g.tail.as_ref().map_or(0, Kept::len))
            .sum()
    }
}

#[cfg(test)]
impl ChunkState {
    /// Empty instants of the groups' queues held for merging, over all groupings and rates
    /// (80 bytes each).
    pub(crate) fn retained_instants(&self) -> usize {
        self.groupings
            .iter()
            .flat_map(|(_, g)| g.values())
            .flat_map(|g| &g.backlog)
            .map(RateChunk::kept_instants)
            .sum()
    }
}

fn add_stats(to: &mut ReorderStats, from: &ReorderStats) {
    to.reordered += from.reordered;
    to.dropped_late += from.dropped_late;
    to.max_lateness_ns = to.max_lateness_ns.max(from.max_lateness_ns);
}

/// One grouping of a chunk: groups in order of appearance, found by key.
#[derive(Debug)]
struct Groups {
    slots: Slots<GroupScan>,
    edges: Edges,
}

impl Groups {
    #[inline]
    fn push(
        &mut self,
        key: GroupKey,
        ts: i64,
        size: u64,
        spec: &Spec,
        budget: &mut usize,
    ) -> Result<()> {
        let by = self.slots.by;
        let mut own = usize::MAX;
        let budget = budget_of(by, budget, &mut own);
        self.group(key, spec)?
            .push(ts, size, spec.max_reach, budget);
        // As the sequential scan does: a group fallen silent (an interface gone quiet) held
        // its busiest stretch to the chunk's end. What a trim lets go lies more than the
        // largest reach before `ts`, so before every later packet of this chunk and of the
        // chunks after it (merged only when they follow in time): no window that crosses a
        // seam holds it, and the tail need not keep it.
        if by != By::All {
            self.slots.trim_now_and_then(ts);
        }
        Ok(())
    }

    /// Consecutive packets of the aggregate (only the aggregate is buffered bare, so every
    /// packet is in the group of key `All`).
    #[inline]
    fn push_run(&mut self, run: &[Bare], spec: &Spec, budget: &mut usize) -> Result<()> {
        let by = self.slots.by;
        let mut own = usize::MAX;
        let budget = budget_of(by, budget, &mut own);
        self.group(GroupKey::All, spec)?
            .push_run(run, spec.max_reach, budget);
        Ok(())
    }

    /// The group of `key`, made if it is new.
    #[inline]
    fn group(&mut self, key: GroupKey, spec: &Spec) -> Result<&mut GroupScan> {
        let (by, edges) = (self.slots.by, self.edges);
        self.slots
            .get(key, || GroupScan::new(spec, edges, by == By::All))
    }
}

/// The budget of kept instants a group of grouping `by` takes from: the one `shared` by the
/// chunk's groups, or for the aggregate its `own` (unlimited). The aggregate's lists are bounded
/// by the cap alone: it is the group whose queues carry the most.
fn budget_of<'a>(by: By, shared: &'a mut usize, own: &'a mut usize) -> &'a mut usize {
    if by == By::All {
        own
    } else {
        shared
    }
}

struct Sink {
    spec: Arc<Spec>,
    groupings: Vec<Groups>,
    min_out: Option<i64>,
    max_out: Option<i64>,
    /// Empty instants that may still be kept (see [`INSTANT_BUDGET`]).
    budget: usize,
}

impl Release for Sink {
    #[inline]
    fn release(&mut self, ts: i64, size: u64, key: impl Fn(By) -> GroupKey) -> Result<()> {
        if self.min_out.is_none() {
            self.min_out = Some(ts);
        }
        self.max_out = Some(ts);
        let spec = &*self.spec;
        for g in &mut self.groupings {
            let k = if g.slots.by == By::All {
                GroupKey::All
            } else {
                key(g.slots.by)
            };
            g.push(k, ts, size, spec, &mut self.budget)?;
        }
        Ok(())
    }

    #[inline]
    fn release_run(&mut self, run: &[Bare]) -> Result<()> {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return Ok(());
        };
        if self.min_out.is_none() {
            self.min_out = Some(first.ts_ns);
        }
        self.max_out = Some(last.ts_ns);
        let spec = &*self.spec;
        for g in &mut self.groupings {
            g.push_run(run, spec, &mut self.budget)?;
        }
        Ok(())
    }
}

/// Scans one time chunk into a [`ChunkState`]. Feed it the chunk's arrivals in input order.
pub struct ChunkScanner {
    buffer: Buffered,
    sink: Sink,
    first_arrival: Option<i64>,
    latest: Option<i64>,
}

/// As [`Scanner`](crate::engine::Scanner)'s: where the chunk stands, not its held packets.
impl std::fmt::Debug for ChunkScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkScanner")
            .field("first_arrival", &self.first_arrival)
            .field("latest", &self.latest)
            .finish_non_exhaustive()
    }
}

impl ChunkScanner {
    /// Same configuration (and same errors) as [`Scanner::new`](crate::engine::Scanner::new).
    pub fn new(config: ScanConfig) -> Result<Self> {
        Self::with_cap(config, DEFAULT_INSTANT_CAP)
    }

    /// [`ChunkScanner::new`] keeping at most `cap` empty instants per group and rate (tests use
    /// small caps to exercise the refusals).
    pub fn with_cap(config: ScanConfig, cap: usize) -> Result<Self> {
        Self::with_options(config, cap, Edges::default())
    }

    /// [`ChunkScanner::with_cap`] for a chunk at the given edges (see [`Edges`]).
    pub fn with_options(config: ScanConfig, cap: usize, edges: Edges) -> Result<Self> {
        let spec = Arc::new(Spec::new(&config, cap)?);
        let buffer = Buffered::new(&spec.by, spec.horizon, spec.late);
        let groupings = spec
            .by
            .iter()
            .map(|&by| Groups {
                slots: Slots::new(by, spec.max_groups),
                edges,
            })
            .collect();
        Ok(ChunkScanner {
            buffer,
            sink: Sink {
                spec,
                groupings,
                min_out: None,
                max_out: None,
                budget: INSTANT_BUDGET,
            },
            first_arrival: None,
            latest: None,
        })
    }

    /// Keep at most `budget` empty instants over all groups (tests of the refusals).
    #[cfg(test)]
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.sink.budget = budget;
    }

    /// The scanner with at most `max_held` packets waiting in its reorder buffer instead of
    /// [`crate::MAX_HELD`]: past it, a push fails with a `LimitExceeded` error. The chunks of one
    /// capture merged in time order hold together at most what the sequential scan holds (plus
    /// fewer than 1,024 each), so a share of `MAX_HELD / chunks − 1024` each guarantees that no
    /// merge passes where the sequential scan would stop.
    pub fn holding_at_most(mut self, max_held: usize) -> Self {
        self.buffer = self.buffer.holding_at_most(max_held);
        self
    }

    /// The scanner with at most `budget` empty instants kept over the groups of its
    /// groupings by key instead of [`INSTANT_BUDGET`]. Past it, lists stop growing: a merge
    /// that needs more refuses, and the caller scans sequentially. Only memory and whether a
    /// merge is possible depend on it, never a result.
    pub fn keeping_instants(mut self, budget: usize) -> Self {
        self.sink.budget = budget;
        self
    }

    /// Feed one arrival (any order within the reorder horizon).
    pub fn push(&mut self, a: &Arrival) -> Result<()> {
        self.arrived(a.ts_ns);
        self.buffer.push(a, &mut self.sink)
    }

    /// [`ChunkScanner::push`] for a packet known only by timestamp, size and interface (as
    /// [`Scanner::push_lean`](crate::engine::Scanner::push_lean)).
    pub fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        self.arrived(ts_ns);
        self.buffer
            .push_lean(ts_ns, size, interface, &mut self.sink)
    }

    #[inline]
    fn arrived(&mut self, ts_ns: i64) {
        if self.first_arrival.is_none() {
            self.first_arrival = Some(ts_ns);
        }
        self.latest = Some(self.latest.map_or(ts_ns, |l| l.max(ts_ns)));
    }

    /// Flush the reorder buffer and build the mergeable state.
    pub fn finish(mut self) -> Result<ChunkState> {
        self.buffer.flush(&mut self.sink)?;
        let stats = self.buffer.stats().clone();
        let Sink {
            spec,
            groupings,
            min_out,
            max_out,
            mut budget,
        } = self.sink;
        let mut broken = None;
        let mut out = Vec::with_capacity(groupings.len());
        for g in groupings {
            let mut groups = BTreeMap::new();
            for (key, state) in g.slots.keys.into_iter().zip(g.slots.states) {
                let mut own = usize::MAX;
                match state.finish(&spec, budget_of(g.slots.by, &mut budget, &mut own)) {
                    Ok(cg) => {
                        groups.insert(key, cg);
                    }
                    Err(e) => broken = Some(e),
                }
            }
            out.push((g.slots.by, groups));
        }
        Ok(ChunkState {
            spec,
            meta: Meta {
                first_arrival: self.first_arrival,
                latest: self.latest,
                min_out,
                max_out,
                stats,
            },
            groupings: out,
            broken,
        })
    }
}

#[cfg(test)]
mod tests;
