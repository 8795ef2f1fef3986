//! Both cores on one scan, with results identical to the single-threaded run by construction.
//!
//! The work is split, not the capture: every worker sees the same ordered stream of arrivals
//! (the same reorder buffer decisions, the same groups) and computes its share. A scan with
//! groupings by key leaves them to the workers, and the caller's thread at most the aggregate
//! ([`plan`]); with keys alone, the caller's thread runs the one reorder buffer and looks up each
//! packet's keys, which it hands on with the packets in order, so that no worker repeats either.
//! With the aggregate too, each thread reorders for itself, a worker's keyed groupings through
//! one buffer that leaves the arrivals in the batches they came in ([`in_place`]).
//! Otherwise the windows, rates and bins are shared out, and the caller's thread, which reads,
//! frames and decodes, computes a share smaller the more reading costs it (full frames: often
//! none). Rows are then concatenated and put in the single-threaded order.
//!
//! Splitting the capture into time chunks whose states merge exactly is the other way
//! ([`crate::chunked`], tried first for plain files); this one serves everything else, and, for
//! the aggregate alone, one plain file of small records on two threads, a split by function
//! ([`ParallelScanner::by_function`], chosen by [`crate::chunked::by_function`]). The aggregate
//! alone on two threads is split by function too where the time chunks do not go (a time range,
//! a filter, compressed or streamed input: [`orders_once`]).

use crate::engine::reorder::{Bare, Buffered, Release, Reorder};
use crate::engine::{Arrival, By, GroupKey, LatePolicy, ScanConfig, ScanOutput, Scanner};
use crate::error::{Error, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;

mod in_place;
use in_place::InPlace;

/// Arrivals handed to workers at a time: large enough that channel traffic is negligible, small
/// enough that a worker never waits long for its first batch.
const BATCH: usize = 4096;
/// Batches in flight per worker: bounds memory while letting the reader run ahead a little.
const IN_FLIGHT: usize = 8;

/// Rough costs, in ns per packet on the benchmark machine (benches/RESULTS.md, profile), that
/// decide how much of the metrics the reading thread can take on besides reading. Only the
/// balance depends on them, never a result.
mod cost {
    /// Reading and framing a packet, plus this much per captured byte (the page-cache copy).
    pub const READ: f64 = 25.0;
    pub const READ_PER_BYTE: f64 = 0.15;
    /// When a grouping needs headers: decoding them, and handing every worker the whole
    /// arrival. Scans by all and pair, and by flow, of the 1 GB snaplen-128 benchmark capture
    /// on two threads ran fastest with 40–60 (benches/RESULTS.md, "Nineteenth landing"); with
    /// none, the reading thread kept 13 of the 20 windows and did two thirds of the work, and
    /// two threads were no faster than one.
    pub const DECODE: f64 = 50.0;
    /// In a split by grouping with the aggregate, what the reading thread pays besides: queuing
    /// each whole arrival with its packed fields for the workers. Since the workers' keyed
    /// groupings got cheaper (their windows clear steady stretches, their reorder buffer leaves
    /// arrivals in place), the reading thread was the slower (56–57 % of the samples); with
    /// this at 60 and `KEYED` at 1, by all and pair and by all and flow on two threads ran 6–7 %
    /// faster than with neither, and level with 90 ("Twenty-third landing").
    pub const HAND_OVER: f64 = 60.0;
    /// Decompressing a gzip or zstd stream, per byte of the capture inside it (16 bytes of
    /// record header per packet besides the captured bytes): framing the 1 GB snaplen-128 pcap
    /// took 0.36 s more from zstd than from the plain file, and the 2 GB full-frame pcap 0.87 s
    /// more from gzip (the `count` example).
    pub const INFLATE_PER_BYTE: f64 = 0.4;
    pub const RECORD_HEADER: f64 = 16.0;
    /// Reorder buffer and dispatch, paid by every thread.
    pub const PER_THREAD: f64 = 20.0;
    /// A grouping by key costs this many times the aggregate for the same metrics (hashing,
    /// per-group state). It was 1.5 (118 against 80 ns per packet by pair and by all, 20
    /// windows and 8 rates, on the 1 GB snaplen-128 benchmark capture) until a pair's windows
    /// stopped looking at every packet of a steady stretch; see `HAND_OVER` for the two
    /// together.
    pub const KEYED: f64 = 1.0;
    /// A window whose ring of packets fits in cache, and one that does not (≥ 100 ms).
    pub const WINDOW: f64 = 3.0;
    pub const LONG_WINDOW: f64 = 12.0;
    pub const LONG_WINDOW_NS: i64 = 100_000_000;
    pub const RATE: f64 = 3.0;
    pub const BIN: f64 = 1.0;
}

/// Whether `config` splits among `threads` threads at all (else a scan runs on one thread):
/// with a grouping by key, always (the reading thread hands it on); otherwise when there are
/// two windows, rates or bins to share out.
pub fn splits(config: &ScanConfig, threads: usize) -> bool {
    threads >= 2 && (config.reads_headers() || shares(config, threads) >= 2)
}

/// How many threads the metrics of `config` can be shared among (at most `threads`): one per
/// window, rate or bin.
pub fn shares(config: &ScanConfig, threads: usize) -> usize {
    let units = config.windows_ns.len() + config.rates_bps.len() + config.bins_ns.len();
    threads.min(units)
}

/// What the calling thread does per packet besides framing it, which decides how much of the
/// metrics it can take on. Only the balance depends on it, never a result.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    /// Captured bytes per packet (measured on the first batch).
    pub captured_per_packet: f64,
    /// It decodes every packet's headers (for a grouping by key, or `size="ip"`/`"payload"`).
    pub decodes: bool,
    /// It decompresses the capture (gzip, zstd) on the way.
    pub inflates: bool,
}

impl Reading {
    /// Its cost per packet, in the units of [`cost`].
    fn cost(&self) -> f64 {
        let bytes = self.captured_per_packet.max(0.0);
        let decode = if self.decodes { cost::DECODE } else { 0.0 };
        let inflate = if self.inflates {
            cost::INFLATE_PER_BYTE * (bytes + cost::RECORD_HEADER)
        } else {
            0.0
        };
        cost::READ + cost::READ_PER_BYTE * bytes + decode + inflate
    }
}

/// Who scans what: the calling thread one config, each worker one or more (all fed the same
/// arrivals).
#[derive(Debug, Clone)]
pub struct Plan {
    /// `None`: the calling thread only reads (and hands the arrivals on).
    pub local: Option<ScanConfig>,
    /// Per worker thread, the metrics it computes (a config each).
    pub workers: Vec<Vec<ScanConfig>>,
}

/// How the work of `config` is shared among `threads` threads; `None` when there is too little
/// to split. `reading` tells how busy reading keeps the calling thread.
///
/// With a grouping by key, the groupings are split: the workers scan the keyed groupings
/// (sharing out their metrics when there are several workers), and the aggregate's metrics, if
/// asked for, are dealt so that the threads end level, the calling thread's first (none, when
/// reading keeps it busy enough). The keyed groupings' lookups and per-group state then cost the
/// reading thread nothing, and no thread repeats them (without the aggregate, the calling thread
/// does the lookups and the reordering for all, see [`ParallelScanner`]). Otherwise (the
/// aggregate and interfaces) every thread scans every grouping for its share of the metrics
/// ([`split_config`]).
///
/// Errors stay those of the single-threaded scan: the only errors a scanner raises are a late
/// packet and too many groups, which the aggregate never has. Every worker scans every keyed
/// grouping. A late packet is met by every thread alike, or, in a scan by keys alone, by the
/// calling thread's reorder buffer before the packet releases anything (as in a scanner's own),
/// the workers having the packets released before it. So a worker meets every error the
/// single-threaded scan would meet first, at the same packet or earlier
/// ([`ParallelScanner::fail`]).
pub fn plan(config: &ScanConfig, threads: usize, reading: Reading) -> Option<Plan> {
    if threads >= 2 && config.reads_headers() {
        // A grouping that reads headers has the reading loop decode every packet.
        let reading = Reading {
            decodes: true,
            ..reading
        };
        return Some(split_groupings(config, threads, reading.cost()));
    }
    let mut parts = split_config(config, threads, reading)?;
    let local = parts.remove(0);
    Some(Plan {
        local: Some(local),
        workers: parts.into_iter().map(|p| vec![p]).collect(),
    })
}

/// Whether a scan of `config` on `threads` threads (after the cap to cores) that the time
/// chunks do not take is split by function ([`ParallelScanner::by_function`]) rather than by
/// [`plan`]: the aggregate alone on two threads, with windows and something else to share.
/// There the metric split had each thread reorder every packet for itself (about 8 % of each
/// thread's time) and gave the reading thread the shortest windows, the dearest per packet, so
/// that two threads were hardly faster than one (benches/RESULTS.md, perf-da and perf-df).
pub fn orders_once(config: &ScanConfig, threads: usize) -> bool {
    threads == 2
        && config.clone().normalized().is_ok_and(|c| c.by == [By::All])
        && split_by_function(config, Reading::default()).is_some()
}

/// The shares of a scan split by function ([`ParallelScanner::by_function`]: one plain file
/// of small records, chosen by [`crate::chunked::by_function`], or a scan the time chunks do
/// not take, chosen by [`orders_once`]), or `None` when there is nothing to share: every window
/// to the worker, and the rates, then the bins, each to whichever thread is the less loaded
/// (ties: the worker). Only the balance depends on it, never a result.
///
/// The reading thread keeps no window. On the snaplen-128 pcap (mapped, the benchmark's 20
/// windows and 8 rates), with the two shortest it did 0.95–1.07 s of CPU to the worker's
/// 0.72–0.80, with none (and its per-packet path inlined) 0.77–0.89 to 0.80–0.91; on a time
/// range or stdin 0.80–0.97 to 0.64–0.70 against 0.70–0.87 to 0.74–0.81 (benches/RESULTS.md,
/// perf-dh and perf-df). With the costs of `parallel::cost` it keeps the
/// rates at snaplen 128 (61 + 24 against 96), and gives them to the worker on full frames or
/// when it inflates, where reading alone outweighs the envelope.
pub fn split_by_function(config: &ScanConfig, reading: Reading) -> Option<Plan> {
    if config.windows_ns.is_empty() || shares(config, 2) < 2 {
        return None;
    }
    let mut local = ScanConfig {
        windows_ns: vec![],
        ..without_metrics(config)
    };
    let mut worker = ScanConfig {
        windows_ns: config.windows_ns.clone(),
        ..without_metrics(config)
    };
    // The worker neither reads nor reorders.
    let mut load = [cost::PER_THREAD + reading.cost(), work(&worker)];
    for &r in &config.rates_bps {
        let t = usize::from(load[0] >= load[1]);
        [&mut local, &mut worker][t].rates_bps.push(r);
        load[t] += cost::RATE;
    }
    for &b in &config.bins_ns {
        let t = usize::from(load[0] >= load[1]);
        [&mut local, &mut worker][t].bins_ns.push(b);
        load[t] += cost::BIN;
    }
    Some(Plan {
        local: Some(local),
        workers: vec![vec![worker]],
    })
}

/// [`plan`] for a scan with a grouping by key; `reading` is the calling thread's cost.
fn split_groupings(config: &ScanConfig, threads: usize, reading: f64) -> Plan {
    let rest = ScanConfig {
        by: config
            .by
            .iter()
            .copied()
            .filter(|&b| b != By::All)
            .collect(),
        ..config.clone()
    };
    // The workers do not read: their shares of the keyed groupings are sized with no reading.
    let keyed = split_config(&rest, threads - 1, Reading::default()).unwrap_or_else(|| vec![rest]);
    if !config.by.contains(&By::All) {
        // Groupings by key alone: reading and decoding are the calling thread's share.
        return Plan {
            local: None,
            workers: keyed.into_iter().map(|k| vec![k]).collect(),
        };
    }
    let mut base = vec![cost::PER_THREAD + reading + cost::HAND_OVER];
    base.extend(
        keyed
            .iter()
            .map(|p| cost::PER_THREAD + cost::KEYED * p.by.len() as f64 * work(p)),
    );
    let aggregate = ScanConfig {
        by: vec![By::All],
        ..config.clone()
    };
    let mut shares = deal(&aggregate, base).into_iter();
    let local = shares.next().unwrap_or_else(|| without_metrics(&aggregate));
    let workers = keyed
        .into_iter()
        .zip(shares)
        // A worker left none of the aggregate's metrics scans only its keyed groupings.
        .map(|(k, a)| if work(&a) > 0.0 { vec![k, a] } else { vec![k] })
        .collect();
    Plan {
        local: Some(local),
        workers,
    }
}

/// One scan config per thread, each with a share of the windows, rates and bins; `None` when
/// there is too little to split. `reading` as for [`plan`]; the calling thread computes
/// `parts[0]`.
pub fn split_config(
    config: &ScanConfig,
    threads: usize,
    reading: Reading,
) -> Option<Vec<ScanConfig>> {
    let n = shares(config, threads);
    if n < 2 {
        return None;
    }
    let mut base = vec![cost::PER_THREAD; n];
    base[0] += reading.cost();
    Some(deal(config, base))
}

fn window_cost(w: i64) -> f64 {
    if w >= cost::LONG_WINDOW_NS {
        cost::LONG_WINDOW
    } else {
        cost::WINDOW
    }
}

/// The per-packet cost of `config`'s metrics on one grouping.
fn work(config: &ScanConfig) -> f64 {
    config
        .windows_ns
        .iter()
        .map(|&w| window_cost(w))
        .sum::<f64>()
        + cost::RATE * config.rates_bps.len() as f64
        + cost::BIN * config.bins_ns.len() as f64
}

fn without_metrics(config: &ScanConfig) -> ScanConfig {
    ScanConfig {
        windows_ns: vec![],
        rates_bps: vec![],
        bins_ns: vec![],
        ..config.clone()
    }
}

/// `config`'s windows, rates and bins dealt among threads that start with the loads `base`
/// (the first is the calling thread's), so that they end as level as the costs allow.
fn deal(config: &ScanConfig, mut load: Vec<f64>) -> Vec<ScanConfig> {
    let n = load.len();
    let mut parts: Vec<ScanConfig> = (0..n).map(|_| without_metrics(config)).collect();
    let mut windows = config.windows_ns.clone();
    windows.sort_unstable();
    let target = (load.iter().sum::<f64>() + work(config)) / n as f64;

    // Windows in runs of neighbouring lengths, shortest to the caller: each thread keeps the
    // packets of its own largest window, so only one thread holds the longest ones.
    let mut t = 0;
    for &w in &windows {
        let c = window_cost(w);
        // Move on once this thread is full, but leave no thread without a chance of work.
        while t + 1 < n && load[t] + c / 2.0 > target {
            t += 1;
        }
        parts[t].windows_ns.push(w);
        load[t] += c;
    }
    // Rates and bins to whichever thread is least loaded (ties: the later thread, so that the
    // reading thread takes work last).
    let least = |load: &[f64]| {
        (0..n)
            .rev()
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .unwrap_or(0)
    };
    for &r in &config.rates_bps {
        let t = least(&load);
        parts[t].rates_bps.push(r);
        load[t] += cost::RATE;
    }
    for &b in &config.bins_ns {
        let t = least(&load);
        parts[t].bins_ns.push(b);
        load[t] += cost::BIN;
    }
    parts
}

/// What the workers get, each thread's own reorder buffer taking it: whole arrivals when a
/// grouping needs headers (a worker's keyed scanners then share one buffer, [`Worker`]), else
/// only the fields the aggregate and interface groupings read (a fifth of the bytes to copy and
/// share). Or, in a scan by keys alone, where the reading thread scans nothing itself: the
/// packets as its reorder buffer released them, in order, with their keys, so that the buffer
/// and the lookups in the headers are paid once, by a thread that would otherwise wait.
enum Batch {
    Full(Full),
    Lean(Vec<(i64, u64, u32)>),
    Released(Released),
    Ordered(Vec<Bare>),
}

/// Whole arrivals, and apart from them each one's (timestamp, size, interface): all that the
/// aggregate's and interfaces' scanners read, and the timestamps that a worker's shared buffer
/// orders by ([`InPlace`]), packed into about a fifth of the bytes, which is what another core
/// reads.
#[derive(Default)]
struct Full {
    arrivals: Vec<Arrival>,
    lean: Vec<(i64, u64, u32)>,
}

impl Full {
    fn new() -> Self {
        Full {
            arrivals: Vec::with_capacity(BATCH),
            lean: Vec::with_capacity(BATCH),
        }
    }
}

/// Packets released in order, and `by.len()` keys for each (one per grouping, in `by`'s order).
/// The capacity is one batch's.
struct Released {
    by: Arc<[By]>,
    packets: Vec<(i64, u64)>,
    keys: Vec<GroupKey>,
}

impl Released {
    fn new(by: Arc<[By]>) -> Self {
        Released {
            packets: Vec::with_capacity(BATCH),
            keys: Vec::with_capacity(BATCH * by.len()),
            by,
        }
    }
}

impl Release for Released {
    #[inline]
    fn release(&mut self, ts_ns: i64, size: u64, key: impl Fn(By) -> GroupKey) -> Result<()> {
        self.packets.push((ts_ns, size));
        self.keys.extend(self.by.iter().map(|&by| key(by)));
        Ok(())
    }
}

/// The aggregate's packets as the reading thread's reorder buffer releases them, in order.
impl Release for Vec<Bare> {
    #[inline]
    fn release(&mut self, ts_ns: i64, size: u64, _: impl Fn(By) -> GroupKey) -> Result<()> {
        self.push(Bare { ts_ns, size });
        Ok(())
    }

    #[inline]
    fn release_run(&mut self, run: &[Bare]) -> Result<()> {
        self.extend_from_slice(run);
        Ok(())
    }
}

impl Batch {
    fn feed(&self, scanner: &mut Scanner) -> Result<()> {
        match self {
            Batch::Ordered(run) => scanner.push_ordered(run),
            Batch::Full(f) if scanner.reads_headers() => {
                f.arrivals.iter().try_for_each(|a| scanner.push(a))
            }
            Batch::Full(Full { lean: v, .. }) | Batch::Lean(v) => v
                .iter()
                .try_for_each(|&(ts, size, interface)| scanner.push_lean(ts, size, interface)),
            Batch::Released(r) => {
                // The normalized groupings: never empty.
                let keys = r.keys.chunks_exact(r.by.len().max(1));
                r.packets
                    .iter()
                    .zip(keys)
                    .try_for_each(|(&(ts, size), keys)| {
                        scanner.push_released(ts, size, |by| {
                            // Every grouping of every share is one of the whole scan's.
                            r.by.iter()
                                .position(|&b| b == by)
                                .map_or(GroupKey::None, |i| keys[i])
                        })
                    })
            }
        }
    }
}

/// The arrivals not handed on yet, in the form the workers will get them ([`Batch`]).
enum Queued {
    Full(Full),
    Lean(Vec<(i64, u64, u32)>),
    /// A scan by keys alone: the one reorder buffer, and what it released.
    Released {
        reorder: Buffered,
        batch: Released,
    },
    /// The aggregate alone, split by function: the one reorder buffer, and what it released.
    Ordered {
        reorder: Reorder<Bare>,
        batch: Vec<Bare>,
    },
}

impl Queued {
    fn len(&self) -> usize {
        match self {
            Queued::Full(f) => f.arrivals.len(),
            Queued::Lean(v) => v.len(),
            Queued::Released { batch, .. } => batch.packets.len(),
            Queued::Ordered { batch, .. } => batch.len(),
        }
    }

    fn push(&mut self, a: &Arrival) -> Result<()> {
        match self {
            Queued::Full(f) => {
                f.arrivals.push(*a);
                f.lean.push((a.ts_ns, a.size, a.interface));
            }
            Queued::Lean(v) => v.push((a.ts_ns, a.size, a.interface)),
            Queued::Released { reorder, batch } => reorder.push(a, batch)?,
            Queued::Ordered { reorder, batch } => reorder.push_bare(a.ts_ns, a.size, batch)?,
        }
        Ok(())
    }

    /// The queued arrivals as a batch, leaving an empty queue of the same form.
    fn take(&mut self) -> Batch {
        match self {
            Queued::Full(f) => Batch::Full(std::mem::replace(f, Full::new())),
            Queued::Lean(v) => Batch::Lean(std::mem::replace(v, Vec::with_capacity(BATCH))),
            Queued::Released { batch, .. } => {
                let next = Released::new(Arc::clone(&batch.by));
                Batch::Released(std::mem::replace(batch, next))
            }
            Queued::Ordered { batch, .. } => {
                Batch::Ordered(std::mem::replace(batch, Vec::with_capacity(2 * BATCH)))
            }
        }
    }
}

/// A sink for arrivals that scans with several threads; `push` from the reading thread.
///
/// The shares are dealt when the first batch is full (or at the end), once the bytes per packet
/// tell how much reading costs; until then arrivals only queue.
pub struct ParallelScanner<'scope, 'env, 'c> {
    scope: &'scope thread::Scope<'scope, 'env>,
    config: ScanConfig,
    threads: usize,
    /// Captured bytes read so far (kept by the reading loop).
    captured: &'c Cell<u64>,
    /// What the reading loop does (its bytes per packet are filled in on the first batch).
    reading: Reading,
    started: Option<Started<'scope>>,
    queued: Queued,
    /// Packets pushed so far.
    pushed: u64,
}

struct Started<'scope> {
    local: Option<Scanner>,
    senders: Vec<SyncSender<Arc<Batch>>>,
    /// Set before the senders are dropped on a failed scan: the workers then stop without
    /// flushing their reorder buffers (see [`Worker::run`]).
    aborted: Arc<AtomicBool>,
    workers: Vec<thread::ScopedJoinHandle<'scope, Result<Vec<ScanOutput>>>>,
}

/// Its threads and queues are no use to print: the configuration and the count of packets.
impl std::fmt::Debug for ParallelScanner<'_, '_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelScanner")
            .field("config", &self.config)
            .field("threads", &self.threads)
            .field("pushed", &self.pushed)
            .finish_non_exhaustive()
    }
}

impl<'scope, 'env, 'c> ParallelScanner<'scope, 'env, 'c> {
    /// Checks the configuration now, so that its errors surface before any packet is read.
    /// `reading`: what the reading loop does besides framing (its bytes per packet are measured
    /// through `captured`; [`plan`] knows that a grouping that reads headers implies decoding).
    pub fn new(
        scope: &'scope thread::Scope<'scope, 'env>,
        config: ScanConfig,
        threads: usize,
        captured: &'c Cell<u64>,
        reading: Reading,
    ) -> Result<Self> {
        Self::with_split(scope, config, threads, captured, reading, false)
    }

    /// [`ParallelScanner::new`] split by function, for the aggregate alone (any other scan is
    /// split as `new` splits it): the calling thread reorders the packets once, scans the
    /// rates and bins, and hands the packets on in order, in runs, to one worker that scans
    /// the windows ([`split_by_function`]). No thread repeats the reorder buffer, and the
    /// worker's scanner needs none. Two threads at most.
    pub fn by_function(
        scope: &'scope thread::Scope<'scope, 'env>,
        config: ScanConfig,
        captured: &'c Cell<u64>,
        reading: Reading,
    ) -> Result<Self> {
        Self::with_split(scope, config, 2, captured, reading, true)
    }

    fn with_split(
        scope: &'scope thread::Scope<'scope, 'env>,
        config: ScanConfig,
        threads: usize,
        captured: &'c Cell<u64>,
        reading: Reading,
        by_function: bool,
    ) -> Result<Self> {
        Scanner::new(config.clone())?;
        // The scanners' own form of the groupings, horizon and policy (checked just above).
        let normal = config.clone().normalized()?;
        let queued = if by_function && normal.by == [By::All] {
            Queued::Ordered {
                reorder: Reorder::new(normal.reorder_horizon_ns, normal.late),
                batch: Vec::with_capacity(2 * BATCH),
            }
        } else if !normal.reads_headers() {
            Queued::Lean(Vec::new())
        } else if normal.by.contains(&By::All) {
            Queued::Full(Full::default())
        } else {
            // Keys alone: the reading thread scans nothing itself (see `plan`), so it has room
            // to reorder and look up keys for all.
            Queued::Released {
                reorder: Buffered::new(&normal.by, normal.reorder_horizon_ns, normal.late),
                batch: Released::new(normal.by.into()),
            }
        };
        Ok(ParallelScanner {
            scope,
            config,
            threads,
            captured,
            reading,
            started: None,
            queued,
            pushed: 0,
        })
    }

    /// [`ParallelScanner::push`] for a packet known only by timestamp, size and interface.
    ///
    /// A scan split by function goes straight to its reorder buffer, inlined into the reading
    /// loop: this is every packet's path on the reading thread, which bounds the scan, and the
    /// call with its dispatch and its result returned through memory cost 8 % of that thread's
    /// time (benches/RESULTS.md, perf-dh).
    #[inline]
    pub fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        if let Queued::Ordered { reorder, batch } = &mut self.queued {
            reorder.push_bare(ts_ns, size, batch)?;
            self.pushed += 1;
            // The buffer releases a run at a time: the batch may pass BATCH by one run.
            return if batch.len() >= BATCH {
                self.flush()
            } else {
                Ok(())
            };
        }
        self.push_lean_other(ts_ns, size, interface)
    }

    /// [`ParallelScanner::push_lean`] of a scan not split by function.
    fn push_lean_other(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        match &mut self.queued {
            Queued::Lean(v) => v.push((ts_ns, size, interface)),
            queued => queued.push(&Arrival {
                ts_ns,
                size,
                interface,
                headers: crate::wire::Headers::default(),
            })?,
        }
        self.pushed_one()
    }

    /// Hand on one arrival (in input order).
    pub fn push(&mut self, a: &Arrival) -> Result<()> {
        self.queued.push(a)?;
        self.pushed_one()
    }

    /// Count a packet pushed, and hand the queue on once it holds a batch (a reorder buffer may
    /// release several packets at a time).
    fn pushed_one(&mut self) -> Result<()> {
        self.pushed += 1;
        if self.queued.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn start(&mut self) -> Result<&mut Started<'scope>> {
        if self.started.is_none() {
            // Per packet read, not per packet in the first batch: the reorder buffer may still
            // hold many of those read.
            let reading = Reading {
                captured_per_packet: self.captured.get() as f64 / self.pushed.max(1) as f64,
                ..self.reading
            };
            let plan = match self.queued {
                Queued::Ordered { .. } => split_by_function(&self.config, reading),
                _ => plan(&self.config, self.threads, reading),
            };
            let plan = plan.unwrap_or_else(|| Plan {
                local: Some(self.config.clone()),
                workers: vec![],
            });
            let local = plan.local.map(Scanner::new).transpose()?;
            let mut senders = Vec::new();
            let mut workers = Vec::new();
            let aborted = Arc::new(AtomicBool::new(false));
            for configs in plan.workers {
                let worker =
                    Worker::new(configs, self.config.reorder_horizon_ns, self.config.late)?;
                let (tx, rx) = sync_channel::<Arc<Batch>>(IN_FLIGHT);
                senders.push(tx);
                let aborted = Arc::clone(&aborted);
                workers.push(self.scope.spawn(move || worker.run(rx, &aborted)));
            }
            self.started = Some(Started {
                local,
                senders,
                aborted,
                workers,
            });
        }
        self.started
            .as_mut()
            .ok_or_else(|| Error::invalid("parallel scan failed to start"))
    }

    fn flush(&mut self) -> Result<()> {
        if self.queued.len() == 0 {
            return Ok(());
        }
        let batch = Arc::new(self.queued.take());
        let started = self.start()?;
        let mut stopped = false;
        for tx in &started.senders {
            stopped |= tx.send(Arc::clone(&batch)).is_err();
        }
        if stopped {
            // A worker stopped on an error in an earlier batch: the scan's first error.
            return Err(self.stop().unwrap_or_else(|| {
                Error::new(crate::ErrorKind::Io, "a scan worker thread stopped early")
            }));
        }
        match &mut started.local {
            Some(local) => batch.feed(local),
            None => Ok(()),
        }
    }

    /// Close the workers' queues and wait for them; the first worker's error, if any.
    fn stop(&mut self) -> Option<Error> {
        let started = self.started.as_mut()?;
        // Before the senders go: a worker that sees its queue closed must know it is not the end.
        started.aborted.store(true, Ordering::SeqCst);
        started.senders.clear();
        let mut first = None;
        for w in started.workers.drain(..) {
            let error = match w.join() {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some(panicked()),
            };
            first = first.or(error);
        }
        first
    }

    /// The error to report for a scan that failed with `e` on the calling thread (reading,
    /// interrupted, or scanning its share): what a single-threaded scan would have reported.
    /// The arrivals still queued came before `e`, so they are scanned first, and a worker's error
    /// comes before the calling thread's (see [`plan`]).
    pub fn fail(&mut self, e: Error) -> Error {
        let flushed = self.flush();
        match (self.stop(), flushed) {
            (Some(worker), _) => worker,
            (None, Err(queued)) => queued,
            (None, Ok(())) => e,
        }
    }

    /// Finish every share and merge the rows into the single-threaded order.
    pub fn finish(mut self) -> Result<ScanOutput> {
        // What the reorder buffer still holds goes last, as a scanner's own buffer flushes.
        let (flushed, stats) = match &mut self.queued {
            Queued::Released { reorder, batch } => {
                (reorder.flush(batch), Some(reorder.stats().clone()))
            }
            Queued::Ordered { reorder, batch } => {
                (reorder.flush_bare(batch), Some(reorder.stats().clone()))
            }
            _ => (Ok(()), None),
        };
        let flushed = flushed.and_then(|_| self.flush());
        let Started {
            local,
            senders,
            workers,
            ..
        } = match self.started.take() {
            Some(s) => s,
            // Not one packet: the single-threaded scanner gives the empty result.
            None => return flushed.and_then(|_| Scanner::new(self.config)?.finish()),
        };
        drop(senders);
        let local = flushed.and_then(|_| local.map(Scanner::finish).transpose());
        let mut outs = Vec::with_capacity(workers.len());
        for w in workers {
            outs.push(w.join().map_err(|_| panicked())?);
        }
        // A worker's error comes first: it meets every error of the calling thread's at the
        // same packet or earlier (see [`plan`]).
        let outs = outs.into_iter().collect::<Result<Vec<_>>>()?;
        let mut outs = local?.into_iter().chain(outs.into_iter().flatten());
        let mut merged = outs
            .next()
            .ok_or_else(|| Error::invalid("a parallel scan without a scanner"))?;
        if let Some(stats) = stats {
            // The shares' own buffers saw nothing.
            merged.reorder = stats;
        }
        for o in outs {
            merged.envelope.extend(o.envelope);
            merged.backlog.extend(o.backlog);
            merged.series.extend(o.series);
            // Threads that share a grouping give the same summary of its groups: keep one.
            let known: Vec<By> = merged.groups.iter().map(|g| g.by).collect();
            merged
                .groups
                .extend(o.groups.into_iter().filter(|g| !known.contains(&g.by)));
        }
        merged.groups.sort_by_key(|a| (a.by.rank(), a.group));
        merged.envelope.sort_by(|a, b| {
            (a.by.rank(), a.group, a.window_ns).cmp(&(b.by.rank(), b.group, b.window_ns))
        });
        merged.backlog.sort_by(|a, b| {
            (a.by.rank(), a.group, a.rate_bps).cmp(&(b.by.rank(), b.group, b.rate_bps))
        });
        merged.series.sort_by(|a, b| {
            (a.by.rank(), a.group, a.bin_ns, a.start_ns).cmp(&(
                b.by.rank(),
                b.group,
                b.bin_ns,
                b.start_ns,
            ))
        });
        Ok(merged)
    }
}

fn panicked() -> Error {
    Error::new(crate::ErrorKind::Io, "a scan worker thread panicked")
}

/// A worker thread's scanners, all fed the same batches. Those that read headers get whole
/// arrivals and share one reorder buffer that leaves them in their batches ([`InPlace`]) rather
/// than each copying them into its own; the others (the aggregate's and interfaces', whose own
/// buffers hold a few fields) are fed as they are.
struct Worker {
    keyed: Vec<Scanner>,
    plain: Vec<Scanner>,
    in_place: InPlace,
}

impl Worker {
    /// `horizon` and `late`: the scan's, which every config shares.
    fn new(configs: Vec<ScanConfig>, horizon: i64, late: LatePolicy) -> Result<Self> {
        let (mut keyed, mut plain) = (Vec::new(), Vec::new());
        for config in configs {
            if config.reads_headers() {
                keyed.push(Scanner::new(config)?);
            } else {
                plain.push(Scanner::new(config)?);
            }
        }
        Ok(Worker {
            keyed,
            plain,
            in_place: InPlace::new(horizon, late, BATCH),
        })
    }

    /// Scan the batches until the queue closes, then finish, unless the scan was `aborted`: an
    /// error of the reading thread (a damaged record, a late packet, ...) ends a single-threaded
    /// scan with the packets its reorder buffer still holds never scanned, so a worker must not
    /// flush its buffers either, where it would meet errors (too many groups) on packets that scan
    /// never reached, and report them instead of the reading thread's.
    fn run(mut self, rx: Receiver<Arc<Batch>>, aborted: &AtomicBool) -> Result<Vec<ScanOutput>> {
        let Worker {
            keyed,
            plain,
            in_place,
        } = &mut self;
        for batch in rx {
            // The keyed scanners first: they meet every error the others meet (a late packet,
            // at the same packet) and more (too many groups).
            match &*batch {
                Batch::Full(_) if !keyed.is_empty() => {
                    in_place.push(&batch, &mut |a| released(keyed, a))?
                }
                _ => {
                    for scanner in keyed.iter_mut() {
                        batch.feed(scanner)?;
                    }
                }
            }
            for scanner in plain.iter_mut() {
                batch.feed(scanner)?;
            }
        }
        if aborted.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        in_place.flush(&mut |a| released(keyed, a))?;
        self.keyed
            .into_iter()
            .chain(self.plain)
            .map(Scanner::finish)
            .collect()
    }
}

/// An arrival released by a worker's [`InPlace`] buffer, to its keyed scanners.
#[inline]
fn released(keyed: &mut [Scanner], a: &Arrival) -> Result<()> {
    keyed
        .iter_mut()
        .try_for_each(|s| s.push_released(a.ts_ns, a.size, |by| by.key(a)))
}
