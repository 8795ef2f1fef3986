//! Several threads on one scan by splitting plain capture files into byte ranges (time chunks),
//! scanning each range on its own thread and merging the states exactly
//! ([`crate::engine::chunk`]); the result is identical to the single-threaded scan.
//!
//! Each file is cut into byte ranges ([`crate::capture::split`]), of equal size but for the first
//! of a file scanned alone, which takes a little more ([`LEADING_SHARE`]); a pool of threads scans
//! them; the calling thread only reports progress. Then, per file, the chunk readers must
//! have framed exactly the packets of a sequential read (their seams line up), and the files must
//! follow each other in time (every packet of one at or before the first of the next), because
//! the sequential scan merges files in timestamp order. Files that overlap in time are cut at
//! common instants instead, each chunk merging its pieces of all of them ([`overlap`]). Anything
//! else (a compressed or streamed input, chunks that overlap beyond what merging allows, an error
//! or warning in any chunk) gives `None`, and the caller scans another way: the sequential path
//! reproduces every error and warning exactly.

use crate::capture::split::{ChunkEnd, ChunkReader, SplitPlan};
use crate::capture::{CaptureReader, FcsSample, Interface, ReadOptions};
use crate::engine::chunk::{ChunkScanner, ChunkState, Edges, NotMergeable, DEFAULT_INSTANT_CAP};
use crate::engine::{ScanConfig, ScanOutput};
use crate::error::Result;
use crate::pipeline::{arrival, lean_arrival, Accounting, Fcs, Progress, SizeKind, Skip};
use crate::pool::Shared;
use std::sync::atomic::{AtomicBool, Ordering};

mod overlap;

/// Packets between two looks at the stop flag and two progress updates.
const CHECK_EVERY: u64 = 1 << 14;

/// How much of a file scanned alone the first chunk takes, against the others' `SHARE`. It
/// keeps no head and runs the sequential Lindley lanes (nothing merges before it), so its bytes
/// cost less: per-thread CPU time, two threads, even split, had the second chunk 1.01–1.44× the
/// first on the four benchmark captures, each run (benches/RESULTS.md, "Thirteenth landing").
/// 11 against 10 (52.4 % of a two-chunk file) brought them within the noise either way. Only
/// the balance depends on it, never a result.
const LEADING_SHARE: u64 = 11;
const SHARE: u64 = 10;

/// The fewest bytes of capture worth a chunk of its own. Every chunk costs more than its bytes:
/// a reader that finds its first record, a scanner set up for every window and rate, queues run
/// for a carried backlog (the first chunk runs the cheaper sequential lanes), heads and tails
/// kept for merging, and a merge on the calling thread once all chunks are done. Cut into as
/// many chunks as threads whatever its size, a 46 MB file took 1.09 s with `threads=1000`
/// against 39 ms with one. Measured by CPU time per chunk added (K to 2K chunks, 2 rates,
/// default windows): 2–6 ms on a 50 MB snaplen-128 pcap (7,000 packets a MB, scanned at about
/// 0.8 ms a MB), 0.3–0.9 ms on 46 MB of full frames (0.3 ms a MB). A chunk under a few MB thus
/// costs about what it saves; from 8 MiB its own scan (7 ms of dense packets) outweighs what it
/// adds. Only the speed depends on it, never a result.
pub const MIN_CHUNK_BYTES: u64 = 8 << 20;

/// Set by tests, so that captures of a few kilobytes still exercise the cuts, merges and
/// shares: as many chunks, ranges and threads as asked, whatever the size and the cores
/// ([`use_as_many_threads_as_asked`]).
static AS_ASKED: AtomicBool = AtomicBool::new(false);

/// From now on, in this process, use as many threads as asked, whatever the files' sizes and
/// the cores: a scan cut into as many chunks as threads ([`chunk_plan`] with no bound), its
/// metrics shared out among as many threads ([`share_out_threads`]), and `read_packets` in as
/// many ranges ([`plan_for`]). For tests, whose small captures would otherwise be scanned or
/// read whole, on a machine with few cores. Results are the same either way.
#[doc(hidden)]
pub fn use_as_many_threads_as_asked(on: bool) {
    AS_ASKED.store(on, Ordering::Relaxed);
}

/// The cores this process may use: its CPU affinity and cgroup quota, as
/// [`std::thread::available_parallelism`] counts them (one when it cannot tell).
pub fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How many of `threads` a scan that shares its metrics out ([`crate::parallel`]) may start:
/// no more than the cores this process may use. A thread beyond them only waits for a core,
/// and each costs its own reorder buffer and a copy of every batch: with `threads=1000`, a
/// 50 MB snaplen-128 capture read as a stream took 105 ms against 28 ms on one thread. Only the
/// speed depends on it, never a result.
pub fn share_out_threads(threads: usize) -> usize {
    if AS_ASKED.load(Ordering::Relaxed) {
        return threads.max(1);
    }
    threads.min(usable_cores()).max(1)
}

/// How a scan given some threads is cut: into `chunks` time chunks (at least one per file, so
/// several files may give more), scanned by `workers` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Time chunks.
    pub chunks: usize,
    /// Threads that scan them.
    pub workers: usize,
}

/// How `bytes` of capture are cut for `threads` threads on a machine where this process may
/// use `cores` cores: no more chunks than threads, than cores (a chunk beyond them runs only
/// once another is done, and adds a merge the calling thread waits for), nor than chunks of
/// [`MIN_CHUNK_BYTES`] (`min_chunk_bytes`); one at least. No more workers than threads or cores
/// either: a file too small to cut is not worth a thread each.
pub fn chunk_plan(bytes: u64, threads: usize, cores: usize, min_chunk_bytes: u64) -> ChunkPlan {
    let workers = threads.min(cores).max(1);
    let by_size = usize::try_from(bytes / min_chunk_bytes.max(1)).unwrap_or(usize::MAX);
    ChunkPlan {
        chunks: workers.min(by_size).max(1),
        workers,
    }
}

/// [`chunk_plan`] for this process (its [`usable_cores`]), or as many chunks as threads when
/// tests ask for it: how a scan cuts its files by time ([`MIN_CHUNK_BYTES`]), and
/// `read_packets` a file by bytes ([`crate::table::split::MIN_RANGE_BYTES`]).
pub fn plan_for(bytes: u64, threads: usize, min_chunk_bytes: u64) -> ChunkPlan {
    if AS_ASKED.load(Ordering::Relaxed) {
        return ChunkPlan {
            chunks: threads.max(1),
            workers: threads.max(1),
        };
    }
    chunk_plan(bytes, threads, usable_cores(), min_chunk_bytes)
}

/// One byte range of one file.
struct Job {
    file: usize,
    from: u64,
    to: u64,
    /// Nothing is merged before (after) this chunk: it keeps no head (tail).
    first: bool,
    last: bool,
    /// Most packets its reorder buffer may hold ([`crate::engine::reorder::chunk_share`]).
    share: usize,
    /// Most empty instants its keyed groups may keep ([`crate::engine::chunk::instant_share`]).
    instants: usize,
}

/// What scanning one range gave.
struct Done {
    state: ChunkState,
    end: ChunkEnd,
    acc: Accounting,
}

/// Whether scanning in time chunks is expected to pay off: when every grouping is the aggregate
/// or the interface. With groupings by key, each chunk also keeps every group's head and tail and
/// its own ring of the largest window, and the queues' empty instants: measured on the 1 GB
/// benchmark capture with a 1 s window and by all, pair and flow, 50 % more CPU time and 3× the
/// memory of the sequential scan, so the metric split serves those scans.
pub fn worthwhile(config: &ScanConfig) -> bool {
    // A time range leaves packets out before the engine, which the chunk workers' readers
    // do not do: such a scan reads in one stream (its metrics still shared among threads).
    !config.reads_headers()
        && config.time_range.is_all()
        && !config.has_filter()
        && !config.bins_from_first_packet()
}

/// Records up to this many bytes on average (captured bytes and record header) make a scan
/// split by function ([`by_function`]) rather than in time chunks. On the benchmark's captures
/// of 123–140 B records the split by function used 7 % less CPU time than the time chunks and
/// ran level or faster; on full frames (1,047 B) its reading thread, which frames and maps the
/// whole file, did 60 % of the work and could not be relieved of more (benches/RESULTS.md,
/// perf-da). Only the speed depends on it, never a result.
pub const SMALL_RECORDS: u64 = 512;

/// How much of a file's start [`by_function`] reads to tell its records' mean size.
const PROBE_BYTES: u64 = 1 << 20;

/// Whether a scan that [`worthwhile`] allows in time chunks is split by function instead
/// ([`crate::parallel::ParallelScanner::by_function`]): on two threads, one plain file not read
/// yet, the aggregate alone with windows and something else to share, and records of at most
/// [`SMALL_RECORDS`] bytes on average in the file's first [`PROBE_BYTES`]. There the envelope's
/// windows are half of a thread's work and the reading the other half, so that each thread takes
/// one, with no seam to replay and no second ring to fill. Read here, before any chunk: the
/// choice depends on the capture alone, never on a timing.
pub fn by_function(readers: &[CaptureReader], config: &ScanConfig, threads: usize) -> bool {
    let [reader] = readers else {
        return false;
    };
    let aggregate = config
        .clone()
        .normalized()
        .is_ok_and(|c| c.by == [crate::engine::By::All]);
    if share_out_threads(threads) != 2
        || !aggregate
        || reader.stats().packets > 0
        || crate::parallel::split_by_function(config, Default::default()).is_none()
    {
        return false;
    }
    let Some(path) = reader.plain_path() else {
        return false;
    };
    mean_record(path, reader.options()).is_some_and(|m| m <= SMALL_RECORDS)
}

/// The mean size of the records in the first [`PROBE_BYTES`] of the capture at `path` (the
/// file's header included, a few bytes); `None` if it cannot be read or holds no packet.
///
/// Read through a [`std::io::Read::take`] of those bytes: a reader asked for the next packet
/// reads on over anything else (a pcapng's custom, name or secrets blocks) to the next packet
/// or the end, which took the probe through the whole of a file with a few packets and
/// gigabytes of other blocks (read twice, the probe not interruptible). The record cut at the
/// end is not counted; the bytes before it are.
fn mean_record(path: &std::path::Path, options: ReadOptions) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    let head = std::io::Read::take(file, PROBE_BYTES);
    let input = crate::input::from_reader(Box::new(head), None).ok()?;
    // The cut at PROBE_BYTES ends the probe as the end of the file would, in strict mode too.
    let options = ReadOptions {
        strict: false,
        ..options
    };
    let mut reader = CaptureReader::new(input, options).ok()?;
    let mut packets = 0u64;
    while reader.next_packet().ok()?.is_some() {
        packets += 1;
    }
    (packets > 0).then(|| reader.position() / packets)
}

/// Scan `readers` (not read yet beyond their headers) with up to `threads` threads by time
/// chunks, as many as [`chunk_plan`] makes of their sizes and this process's cores, with the
/// accounting of [`crate::pipeline::scan`]. `Ok(None)`: not possible (a time range or a filter,
/// which the chunks do not apply, or a file too small to cut), scan another way.
/// Once done, each reader's interfaces are as a sequential read leaves them (their statistics
/// read by the chunks), so what is reported of them afterwards is the same either way.
/// `decode`: decode every packet's headers; those that `size` or a grouping of `config` reads
/// are decoded whatever it says. Under [`Fcs::Declared`] `l1` the readers check their frames for
/// an undeclared FCS ([`CaptureReader::check_fcs`]), as [`crate::pipeline::scan`] has them.
pub fn scan(
    readers: &mut [CaptureReader],
    config: &ScanConfig,
    size: SizeKind,
    decode: bool,
    threads: usize,
    progress: Progress<'_>,
) -> Result<Option<(ScanOutput, Accounting)>> {
    // An embedder's `false` for an IP size or a grouping by address left every frame unsized
    // or in no host's group, where the sequential scan works out what it decodes.
    let decode = decode || crate::pipeline::needs_headers(config, size);
    // As `pipeline::scan` does: `l1` believing the capture checks its frames for an FCS it does
    // not declare (the chunks do if the readers were asked to).
    if size == SizeKind::L1(Fcs::Declared) {
        readers.iter_mut().for_each(CaptureReader::check_fcs);
    }
    let Some((done, interfaces)) = in_chunks(readers, config, size, decode, threads, progress)?
    else {
        return Ok(None);
    };
    for (reader, (interfaces, fcs)) in readers.iter_mut().zip(interfaces) {
        reader.adopt_interfaces(interfaces);
        if let Some(fcs) = fcs {
            reader.adopt_fcs_sample(fcs);
        }
    }
    Ok(Some(done))
}

/// Each file's interfaces after a read of all its chunks ([`SplitPlan::read_whole`]), and the
/// frames checked for an FCS it does not declare, if they were ([`SplitPlan::fcs_after`]).
type Interfaces = Vec<(Vec<Interface>, Option<FcsSample>)>;

/// [`scan`], with each file's interfaces as its chunks left them.
///
/// A file that holds no packet takes no part in the chunks: it has nothing to cut or merge,
/// and no time span to order or cut the others by (it made every file be scanned another way).
/// Only its interfaces count, in the numbers of those of the files after it.
fn in_chunks(
    readers: &[CaptureReader],
    config: &ScanConfig,
    size: SizeKind,
    decode: bool,
    threads: usize,
    progress: Progress<'_>,
) -> Result<Option<((ScanOutput, Accounting), Interfaces)>> {
    // The chunks' readers apply neither a time range nor a filter: such a scan, even asked for
    // here directly by an embedder, is read another way rather than counted whole.
    if threads < 2
        || readers.is_empty()
        || config.bins_from_first_packet()
        || !config.time_range.is_all()
        || config.has_filter()
    {
        return Ok(None);
    }
    let mut plans = Vec::with_capacity(readers.len());
    // Per file: `None` if it is cut (its plan in `plans`), else its interfaces, read to its end.
    let mut empty: Vec<Option<Vec<Interface>>> = Vec::with_capacity(readers.len());
    let mut declared = Vec::with_capacity(readers.len());
    let mut empty_bytes = 0;
    for r in readers {
        let Some(path) = r.plain_path() else {
            return Ok(None);
        };
        if r.stats().packets > 0 {
            return Ok(None);
        }
        match SplitPlan::new(path, r.options()) {
            Ok(Some(mut plan)) => {
                // The chunks' readers check the frames the reader of the whole file would have.
                if r.fcs_sample().is_some() {
                    plan.check_fcs();
                }
                // Every interface is declared before the first packet (a chunk that meets a
                // later declaration refuses), so the file's count is known from its plan.
                declared.push(plan.interfaces());
                plans.push(plan);
                empty.push(None);
            }
            _ => match without_packets(path, r.options()) {
                Some((interfaces, bytes)) => {
                    declared.push(interfaces.len());
                    empty.push(Some(interfaces));
                    empty_bytes += bytes;
                }
                None => return Ok(None),
            },
        }
    }
    if plans.is_empty() {
        return Ok(None);
    }
    // Interfaces of later files are numbered after those of earlier ones, as in the sequential
    // merge, empty files' included.
    let bases: Vec<u32> = crate::pipeline::interface_bases(declared)
        .into_iter()
        .zip(&empty)
        .filter(|(_, e)| e.is_none())
        .map(|(b, _)| b)
        .collect();
    let Some((done, cut)) = cut_files(&plans, &bases, config, size, decode, threads, progress)?
    else {
        return Ok(None);
    };
    if empty_bytes > 0 {
        progress(plans.iter().map(|p| p.file_len()).sum::<u64>() + empty_bytes)?;
    }
    // Each file's interfaces, in the files' order.
    let mut cut = cut.into_iter();
    let interfaces = empty
        .into_iter()
        .map(|e| match e {
            Some(interfaces) => (interfaces, None),
            None => cut.next().unwrap_or_default(),
        })
        .collect();
    Ok(Some((done, interfaces)))
}

/// The interfaces of the capture at `path` and its length, when it holds no packet and reads to
/// its end without a warning (as a sequential read leaves them: the statistics of its ISBs
/// included); `None` otherwise.
fn without_packets(path: &std::path::Path, options: ReadOptions) -> Option<(Vec<Interface>, u64)> {
    let input = crate::input::open_path(path).ok()?;
    let mut reader = CaptureReader::new(input, options).ok()?;
    let none = matches!(reader.next_packet(), Ok(None));
    (none && reader.warnings().is_empty())
        .then(|| (reader.interfaces().to_vec(), reader.consumed()))
}

/// [`in_chunks`] of the files that hold packets, `bases` numbering their interfaces.
fn cut_files(
    plans: &[SplitPlan],
    bases: &[u32],
    config: &ScanConfig,
    size: SizeKind,
    decode: bool,
    threads: usize,
    progress: Progress<'_>,
) -> Result<Option<((ScanOutput, Accounting), Interfaces)>> {
    let total: u64 = plans.iter().map(|p| p.file_len()).sum();
    let cut = plan_for(total, threads, MIN_CHUNK_BYTES);
    // Files that overlap in time are cut at common instants instead of one after another: find
    // out from their ends.
    if plans.len() > 1 {
        let mut spans = Vec::with_capacity(plans.len());
        for plan in plans {
            match plan.time_span() {
                Ok(Some(span)) => spans.push(span),
                _ => return Ok(None),
            }
        }
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[0].1 > w[1].0) {
            return overlap::scan(plans, bases, config, size, decode, cut, progress);
        }
    }
    if cut.workers < 2 || (plans.len() == 1 && cut.chunks < 2) {
        // One core, or a file too small to be worth cutting: scanned another way.
        return Ok(None);
    }
    let threads = cut.workers;
    let jobs = jobs(plans, cut.chunks);
    let results = crate::pool::run(
        jobs.len(),
        threads,
        |i, shared| {
            let job = &jobs[i];
            run(
                &plans[job.file],
                job,
                bases[job.file],
                config,
                size,
                decode,
                shared,
            )
        },
        progress,
    )?;

    // Per file: chunks in order, seams lined up, states merged.
    let mut files: Vec<Vec<Done>> = (0..plans.len()).map(|_| Vec::new()).collect();
    for (job, r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(Some(done))) => files[job.file].push(done),
            // An error, a warning or a refusal: the sequential path gives the exact outcome.
            _ => return Ok(None),
        }
    }
    let mut acc = Accounting::default();
    let mut merged_files: Vec<(usize, ChunkState)> = Vec::new();
    let mut interfaces = Vec::with_capacity(plans.len());
    for (file, chunks) in files.into_iter().enumerate() {
        let Some(read) = plans[file].read_whole(chunks.iter().map(|d| &d.end)) else {
            return Ok(None);
        };
        interfaces.push((read, plans[file].fcs_after(chunks.iter().map(|d| &d.end))));
        for d in &chunks {
            acc.add(&d.acc);
        }
        match merge_in_order(chunks.into_iter().map(|d| d.state), threads) {
            Ok(Some(s)) => merged_files.push((file, s)),
            Ok(None) => {}
            Err(_) => return Ok(None),
        }
    }
    // Files in time order. The sequential merge breaks timestamp ties by file order: a file
    // cannot follow one listed after it when the two meet at the same timestamp.
    merged_files.sort_by_key(|(i, s)| (s.arrival_span().map(|x| x.0), *i));
    // The state so far, and the file its latest packet comes from.
    let mut state: Option<(usize, ChunkState)> = None;
    for (i, s) in merged_files {
        state = Some(match state {
            None => (i, s),
            Some((j, prev)) => {
                let span = s.arrival_span();
                if let (Some(a), Some(b)) = (prev.arrival_span(), span) {
                    if a.1 == b.0 && j > i {
                        return Ok(None);
                    }
                }
                match prev.merge_threads(s, threads) {
                    Ok(m) => (if span.is_some() { i } else { j }, m),
                    Err(_) => return Ok(None),
                }
            }
        });
    }
    let Some((_, state)) = state else {
        return Ok(None);
    };
    let Ok(out) = state.finish() else {
        return Ok(None);
    };
    progress(plans.iter().map(|p| p.file_len()).sum())?;
    Ok(Some((crate::pipeline::account(out, acc), interfaces)))
}

/// The byte ranges of files that follow each other in time, about `chunks` in all (at least
/// one per file), in proportion to the files' sizes. Every chunk may hold the same share of
/// the reorder limit, from the number of chunks actually cut (not the threads asked for).
fn jobs(plans: &[SplitPlan], chunks: usize) -> Vec<Job> {
    let total = plans.iter().map(|p| p.file_len()).sum::<u64>().max(1);
    let mut jobs = Vec::new();
    for (file, plan) in plans.iter().enumerate() {
        let share = (chunks as u64 * plan.file_len()).div_ceil(total).max(1);
        // With several files, their order in time is known only after scanning.
        let single = plans.len() == 1;
        let mut weights = vec![SHARE; share as usize];
        if single {
            weights[0] = LEADING_SHARE;
        }
        let ranges = plan.weighted_ranges(&weights);
        let k = ranges.len();
        for (i, (from, to)) in ranges.into_iter().enumerate() {
            jobs.push(Job {
                file,
                from,
                to,
                first: single && i == 0,
                last: single && i + 1 == k,
                share: 0,
                instants: 0,
            });
        }
    }
    let share = crate::engine::reorder::chunk_share(jobs.len());
    let instants = crate::engine::chunk::instant_share(jobs.iter().filter(|j| !j.first).count());
    for job in &mut jobs {
        job.share = share;
        job.instants = instants;
    }
    jobs
}

/// The states of consecutive chunks, each merged into what came before it (on `threads` threads
/// where a seam is long): `Ok(None)` if there are none, `Err` if a merge refuses.
fn merge_in_order(
    states: impl IntoIterator<Item = ChunkState>,
    threads: usize,
) -> std::result::Result<Option<ChunkState>, NotMergeable> {
    let mut states = states.into_iter();
    let Some(first) = states.next() else {
        return Ok(None);
    };
    states
        .try_fold(first, |s, next| s.merge_threads(next, threads))
        .map(Some)
}

/// The next packet of the chunk that reaches the engine, as `make` builds it from the packet
/// where the reader left it; the packets it skips are counted by reason.
// Always inlined: with a loop per size rule it was called out of line, 95 instructions a packet
// in a two-thread scan (cachegrind).
#[inline(always)]
fn next_arrival<T>(
    reader: &mut ChunkReader,
    acc: &mut Accounting,
    make: impl Fn(&crate::Packet<'_>) -> std::result::Result<T, Skip>,
) -> Result<Option<T>> {
    loop {
        // The packets kept are checked for an undeclared FCS, if the plan asked.
        let Some(made) = reader.next_kept(&make)? else {
            return Ok(None);
        };
        if let Some(t) = acc.read(made) {
            return Ok(Some(t));
        }
    }
}

/// Every packet left in the chunk that reaches the engine, without headers, its size as `size`
/// counts it, into `scanner` (interfaces numbered from `base`); `Ok(false)` when `look` says
/// to stop. Always inlined, so that a caller that names the rule has it as a constant.
#[inline(always)]
fn feed_lean(
    reader: &mut ChunkReader,
    acc: &mut Accounting,
    scanner: &mut ChunkScanner,
    base: u32,
    size: SizeKind,
    look: &mut impl FnMut(&ChunkReader) -> bool,
) -> Result<bool> {
    while let Some((ts, b, interface)) = next_arrival(reader, acc, |p| lean_arrival(p, size))? {
        scanner.push_lean(ts, b, interface.saturating_add(base))?;
        if !look(reader) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Scan one range. `Ok(None)` when the range cannot be read on its own.
fn run(
    plan: &SplitPlan,
    job: &Job,
    base: u32,
    config: &ScanConfig,
    size: SizeKind,
    decode: bool,
    shared: &Shared,
) -> Result<Option<Done>> {
    let Some(mut reader) = plan.open(job.from, job.to)? else {
        return Ok(None);
    };
    let edges = Edges {
        first: job.first,
        last: job.last,
    };
    let mut scanner = ChunkScanner::with_options(config.clone(), DEFAULT_INSTANT_CAP, edges)?
        .holding_at_most(job.share)
        .keeping_instants(job.instants);
    let mut acc = Accounting::default();
    let mut count = shared.range(job.from, job.to);
    let mut n = 0u64;
    // Every CHECK_EVERY packets: count the bytes read since the last look, and stop if asked to.
    let mut look = |reader: &ChunkReader| {
        n += 1;
        !n.is_multiple_of(CHECK_EVERY) || count.reached(reader.position())
    };
    // The loops of the sequential scan (`pipeline::feed`): only what the engine takes comes out
    // of the reader per packet, never the whole packet or a push's result (moving those made
    // the compiler copy them through the stack piecewise, 10 % of a two-thread scan's samples).
    if decode {
        while let Some(mut a) = next_arrival(&mut reader, &mut acc, |p| arrival(p, decode, size))? {
            a.interface = a.interface.saturating_add(base);
            scanner.push(&a)?;
            if !look(&reader) {
                return Ok(None);
            }
        }
    } else {
        // A scan that reads no header takes the packet without building an arrival around it,
        // in one loop per size rule as the sequential scan's (`ArrivalSource::drain_lean`):
        // `wire`, the default, apart, so that the rule's match leaves the per-packet path.
        let (r, a, s) = (&mut reader, &mut acc, &mut scanner);
        let went_on = match size {
            SizeKind::Wire => feed_lean(r, a, s, base, SizeKind::Wire, &mut look)?,
            size => feed_lean(r, a, s, base, size, &mut look)?,
        };
        if !went_on {
            return Ok(None);
        }
    }
    count.finish();
    // No out-of-range timestamp to tell apart from a missing one (`Accounting::out_of_range`):
    // the first one warns, and a chunk that met a warning has no seam, so the split is refused.
    let state = scanner.finish()?;
    Ok(Some(Done {
        state,
        end: reader.end(),
        acc,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::ReadOptions;
    use crate::engine::reorder::{MAX_HELD, RELEASE_EVERY};
    use crate::scratch::Scratch;
    use crate::writer::{PcapOptions, PcapWriter};

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_probe_reads_no_further_than_its_bytes() {
        // A small packet, 8 MiB of custom blocks, small packets: the probe stopped only at the
        // first packet after 1 MiB, 8 MiB on (a mean of 4 MiB a packet: its bytes read / 2).
        let dir = Scratch::new("probe_bound");
        let path = dir.join("custom.pcapng");
        let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut w = crate::writer::PcapNgWriter::new(file);
        w.section(crate::capture::ByteOrder::Little, None)
            .expect("shb");
        w.interface(1, 0, crate::capture::TsResolution::Pow10(9), 0, None)
            .expect("idb");
        let packet = |w: &mut crate::writer::PcapNgWriter<_>, i: i64| {
            let ts = 1_700_000_000_000_000_000 + 1_000 * i;
            w.enhanced_packet(0, ts, 100, &[0x5A; 60]).expect("epb");
        };
        packet(&mut w, 0);
        for _ in 0..128 {
            w.custom(true, 32473, &[0; 64 << 10]).expect("custom");
        }
        for i in 1..100 {
            packet(&mut w, i);
        }
        std::io::Write::flush(&mut w.finish().expect("finish")).expect("flush");
        let mean = mean_record(&path, ReadOptions::default()).expect("a packet");
        assert!(mean <= PROBE_BYTES, "{mean}");
        // A plain file of small records: their mean, in strict mode too (the cut record is the
        // probe's end, not an error).
        let small = write_pcap(&dir, "small.pcap", 4 * MIB);
        for strict in [false, true] {
            let options = ReadOptions {
                strict,
                ..ReadOptions::default()
            };
            assert_eq!(mean_record(&small, options), Some(144));
        }
    }

    #[test]
    fn chunks_are_bounded_by_threads_cores_and_size() {
        let plan = |bytes, threads, cores| chunk_plan(bytes, threads, cores, 8 * MIB);
        let cut = |chunks, workers| ChunkPlan { chunks, workers };
        // The report's case: 46 MB on 1000 threads was 1000 chunks of 46 kB.
        assert_eq!(plan(46_000_000, 1000, 2), cut(2, 2));
        assert_eq!(plan(46_000_000, 1000, 64), cut(5, 64));
        // Under two chunks' worth: one chunk (scanned another way), whatever the threads.
        assert_eq!(plan(16 * MIB - 1, 1000, 64).chunks, 1);
        assert_eq!(plan(16 * MIB, 1000, 64).chunks, 2);
        assert_eq!(plan(3 * MIB, 2, 2).chunks, 1);
        assert_eq!(plan(0, 8, 8).chunks, 1);
        // Large files: as many chunks as threads, up to the cores.
        assert_eq!(plan(2_000_000_000, 2, 2), cut(2, 2));
        assert_eq!(plan(2_000_000_000, 8, 64), cut(8, 8));
        assert_eq!(plan(2_000_000_000, 1000, 4), cut(4, 4));
        assert_eq!(plan(2_000_000_000, 1, 64), cut(1, 1));
        assert_eq!(plan(2_000_000_000, 4, 1), cut(1, 1));
        // Every bound holds, and none is tighter than it must be.
        for bytes in [0, MIB, 8 * MIB, 40 * MIB, 1 << 31, u64::MAX] {
            for threads in [1, 2, 3, 7, 1000] {
                for cores in [1, 2, 3, 64] {
                    let ChunkPlan { chunks, workers } = plan(bytes, threads, cores);
                    assert_eq!(workers, threads.min(cores));
                    assert!(chunks >= 1 && chunks <= workers);
                    assert!(chunks == 1 || chunks as u64 * 8 * MIB <= bytes);
                    assert!(chunks == workers || (chunks as u64 + 1) * 8 * MIB > bytes);
                }
            }
        }
    }

    /// A pcap of about `bytes` bytes, 144-byte records 1 µs apart.
    fn write_pcap(dir: &Scratch, name: &str, bytes: u64) -> std::path::PathBuf {
        let path = dir.join(name);
        let opts = PcapOptions {
            snaplen: 128,
            ..Default::default()
        };
        let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut w = PcapWriter::new(file, opts).expect("header");
        for i in 0..bytes / 144 {
            let ts = 1_700_000_000_000_000_000 + 1_000 * i as i64;
            w.write_packet(ts, 1514, &[0x5A; 128]).expect("packet");
        }
        std::io::Write::flush(&mut w.finish().expect("finish")).expect("flush");
        path
    }

    #[test]
    fn a_small_file_is_cut_into_few_chunks_that_share_the_reorder_limit() {
        let dir = Scratch::new("chunked");
        let path = write_pcap(&dir, "small.pcap", 3 * MIB + 1000);
        let plan = SplitPlan::new(&path, ReadOptions::default())
            .expect("plan")
            .expect("splittable");
        let len = plan.file_len();
        // With the default bound, 1000 threads on 3 MiB make one chunk.
        let one = chunk_plan(len, 1000, 64, MIN_CHUNK_BYTES);
        assert_eq!(one.chunks, 1);
        let whole = jobs(std::slice::from_ref(&plan), one.chunks);
        assert_eq!(whole.len(), 1);
        assert_eq!((whole[0].from, whole[0].to), (plan.data_start(), len));
        assert!(whole[0].first && whole[0].last);
        // With 512 KiB chunks, six, that cover the records one after another; each may hold
        // its share of the reorder limit for six chunks (not for the 1000 threads), and
        // together no more than the sequential scan.
        let six = chunk_plan(len, 1000, 64, MIB / 2);
        assert_eq!(
            six,
            ChunkPlan {
                chunks: 6,
                workers: 64
            }
        );
        let jobs = jobs(std::slice::from_ref(&plan), six.chunks);
        assert_eq!(jobs.len(), 6);
        assert_eq!(jobs[0].from, plan.data_start());
        assert_eq!(jobs[5].to, len);
        assert!(jobs
            .windows(2)
            .all(|w| w[0].to == w[1].from && w[0].from < w[0].to));
        assert!(jobs[0].first && jobs[5].last);
        assert!(jobs[1..5].iter().all(|j| !j.first && !j.last));
        let share = MAX_HELD / 6 - RELEASE_EVERY as usize;
        assert!(jobs.iter().all(|j| j.share == share));
        assert!(6 * (share + RELEASE_EVERY as usize) <= MAX_HELD);
        // The five chunks after the first share the empty instants of one scan.
        let kept = crate::engine::chunk::INSTANT_BUDGET / 5;
        assert!(jobs[0].instants == kept && jobs.iter().all(|j| j.instants == kept));
    }
}
