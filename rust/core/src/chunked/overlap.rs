//! Several files that overlap in time (one capture per host of a training job) scanned in time
//! chunks: every file is cut at the same instants, and each chunk merges its pieces of all the
//! files in timestamp order, as the sequential scan merges the whole files.
//!
//! Why the pieces give the sequential order. The sequential scan merges files by always taking
//! the smallest head, keyed by (timestamp, file). Cut every file somewhere; if every packet
//! before the cuts in file f has a smaller key than the first packet after the cut in any other
//! file g, then while any file still has packets before its cut, the smallest head is one of
//! those: so the sequential merge hands out exactly the merge of the pieces before the cuts,
//! then the merge of the pieces after them. That condition is checked on the packets each chunk
//! really read (per file, the largest timestamp and the first one); the cuts themselves only
//! aim at it: at the first record with a timestamp at or after the chunk's instant. Out-of-order
//! records near a cut can defeat the aim, and then the scan goes the sequential way, as for any
//! other refusal. What the reorder buffer does across the chunk boundary is the chunk merge's
//! own business ([`ChunkState::merge`]), as for the chunks of one file.

use super::{merge_in_order, next_arrival, CHECK_EVERY, LEADING_SHARE, SHARE};
use crate::capture::split::{ChunkEnd, ChunkReader, SplitPlan};
use crate::engine::chunk::{ChunkScanner, ChunkState, Edges, DEFAULT_INSTANT_CAP};
use crate::engine::{ScanConfig, ScanOutput};
use crate::error::Result;
use crate::pipeline::merge::{self, Stamped, Streams};
use crate::pipeline::{arrival, lean_arrival, Accounting, Progress, SizeKind, Skip};
use crate::pool::Shared;

/// Points per file at which the time it has reached is sampled to place the instants: the
/// chunks' sizes are then right within about a 32nd of a file. Each sample reads a little of
/// the file (a MiB, read through a buffer), so many files get fewer each, down to 4
/// ([`samples_per_file`]).
const SAMPLES: u64 = 32;
/// Samples over all files, at most (but 4 per file at least).
const ALL_SAMPLES: u64 = 256;

fn samples_per_file(files: usize) -> u64 {
    (ALL_SAMPLES / files.max(1) as u64).clamp(4, SAMPLES)
}

/// Below this many bytes between a record known to be before an instant and one known to be at
/// or after it, the cut is found by reading the records in between rather than by halving.
const WALK: u64 = 256 << 10;
/// How far that reading goes before the cut is given up (the scan then goes another way).
const GIVE_UP: u64 = 64 << 20;

/// Scan `plans` (files that overlap in time; `bases` numbers their interfaces) in time chunks
/// as `cut` says. `Ok(None)`: not possible (or fewer than two chunks), scan another way.
pub(super) fn scan(
    plans: &[SplitPlan],
    bases: &[u32],
    config: &ScanConfig,
    size: SizeKind,
    decode: bool,
    cut: super::ChunkPlan,
    progress: Progress<'_>,
) -> Result<Option<((ScanOutput, Accounting), super::Interfaces)>> {
    if cut.chunks < 2 || cut.workers < 2 {
        return Ok(None);
    }
    let threads = cut.workers;
    // An error here (damage the sampling ran into) is the sequential scan's to report, exactly.
    let Ok(Some(cuts)) = cuts(plans, cut.chunks) else {
        return Ok(None);
    };
    let jobs = cuts.len() - 1;
    let scan = Scan {
        plans,
        bases,
        config,
        size,
        decode,
        share: crate::engine::reorder::chunk_share(jobs),
        // All but the first chunk keep instants.
        instants: crate::engine::chunk::instant_share(jobs - 1),
    };
    let results = crate::pool::run(
        jobs,
        threads,
        |j, shared| {
            let ranges: Vec<(u64, u64)> = cuts[j]
                .iter()
                .copied()
                .zip(cuts[j + 1].iter().copied())
                .collect();
            let edges = Edges {
                first: j == 0,
                last: j + 1 == jobs,
            };
            scan.run(&ranges, edges, shared)
        },
        progress,
    )?;
    let mut chunks = Vec::with_capacity(jobs);
    for r in results {
        match r {
            Some(Ok(Some(chunk))) => chunks.push(chunk),
            // An error, a warning or a refusal: the sequential path gives the exact outcome.
            _ => return Ok(None),
        }
    }
    let (states, pieces): (Vec<(ChunkState, Accounting)>, Vec<Vec<Piece>>) = chunks
        .into_iter()
        .map(|c| ((c.state, c.acc), c.files))
        .unzip();
    let mut interfaces = Vec::with_capacity(plans.len());
    for (f, plan) in plans.iter().enumerate() {
        let Some(read) = plan.read_whole(pieces.iter().map(|files| &files[f].end)) else {
            return Ok(None);
        };
        interfaces.push((
            read,
            plan.fcs_after(pieces.iter().map(|files| &files[f].end)),
        ));
    }
    if !in_merge_order(&pieces) {
        return Ok(None);
    }
    let mut acc = Accounting::default();
    for (_, a) in &states {
        acc.add(a);
    }
    let Ok(Some(state)) = merge_in_order(states.into_iter().map(|(s, _)| s), threads) else {
        return Ok(None);
    };
    let Ok(out) = state.finish() else {
        return Ok(None);
    };
    progress(plans.iter().map(SplitPlan::file_len).sum())?;
    Ok(Some((crate::pipeline::account(out, acc), interfaces)))
}

/// What one chunk read from one file.
#[derive(Debug, Clone, Default)]
struct Piece {
    /// Where its reader framed, and what it read of the interfaces.
    end: ChunkEnd,
    /// Timestamps of its first packet that reached the engine, and the largest among them.
    first: Option<i64>,
    latest: Option<i64>,
}

/// What scanning one chunk gave.
struct Chunk {
    state: ChunkState,
    acc: Accounting,
    files: Vec<Piece>,
}

/// Whether the sequential merge of the whole files hands out the chunks' packets chunk by chunk
/// (see the module documentation), given what each chunk read of each file: at every boundary,
/// each packet before it has a smaller (timestamp, file) key than the first packet after it of
/// every other file.
fn in_merge_order(chunks: &[Vec<Piece>]) -> bool {
    let files = chunks.first().map_or(0, Vec::len);
    // Per file, the largest timestamp before the boundary.
    let mut before: Vec<Option<i64>> = vec![None; files];
    for (c, pieces) in chunks.iter().enumerate() {
        for (f, piece) in pieces.iter().enumerate() {
            before[f] = before[f].max(piece.latest);
        }
        for g in 0..files {
            // The first packet of file g after this boundary.
            let Some(next) = chunks[c + 1..].iter().find_map(|later| later[g].first) else {
                continue;
            };
            let ordered = before
                .iter()
                .enumerate()
                .filter(|&(f, _)| f != g)
                .all(|(f, latest)| latest.is_none_or(|t| (t, f) < (next, g)));
            if !ordered {
                return false;
            }
        }
    }
    true
}

/// Per chunk boundary (and the two ends), the offset in each file where it is cut: `chunks`
/// chunks of about equal bytes over all files, the first a little larger ([`LEADING_SHARE`]).
/// `None` when a file could not be sampled.
fn cuts(plans: &[SplitPlan], chunks: usize) -> Result<Option<Vec<Vec<u64>>>> {
    let mut samples = Vec::with_capacity(plans.len());
    let n = samples_per_file(plans.len());
    for plan in plans {
        match sample(plan, n)? {
            // A file with no timestamp at all could not be cut: each cut would read it all.
            Some(s) if !s.is_empty() => samples.push(s),
            _ => return Ok(None),
        }
    }
    let (Some(lo), Some(hi)) = (
        samples.iter().filter_map(|s| s.first()).map(|p| p.1).min(),
        samples.iter().filter_map(|s| s.last()).map(|p| p.1).max(),
    ) else {
        return Ok(None);
    };
    let total: u64 = plans.iter().map(|p| p.file_len() - p.data_start()).sum();
    let mut weights = vec![SHARE; chunks.max(1)];
    weights[0] = LEADING_SHARE;
    let weight: u64 = weights.iter().sum();
    let mut cuts = vec![plans.iter().map(SplitPlan::data_start).collect::<Vec<_>>()];
    let mut sum = 0;
    for &w in &weights[..weights.len() - 1] {
        sum += w;
        let want = (u128::from(total) * u128::from(sum) / u128::from(weight)) as u64;
        let at = instant(&samples, plans, want, lo, hi);
        let mut row = Vec::with_capacity(plans.len());
        for (f, plan) in plans.iter().enumerate() {
            let Some(cut) = cut(plan, at)? else {
                return Ok(None);
            };
            // Never before the previous cut of the same file.
            row.push(cut.max(cuts[cuts.len() - 1][f]));
        }
        cuts.push(row);
    }
    cuts.push(plans.iter().map(SplitPlan::file_len).collect());
    Ok(Some(cuts))
}

/// The instant by which about `want` bytes of all the files lie before it, going by the samples.
fn instant(samples: &[Vec<(u64, i64)>], plans: &[SplitPlan], want: u64, lo: i64, hi: i64) -> i64 {
    let before = |t: i64| -> u64 {
        samples
            .iter()
            .zip(plans)
            .map(|(s, p)| bytes_before(s, p, t))
            .sum()
    };
    // The least t with at least `want` bytes before it (the estimate never decreases in t).
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) >= want {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Bytes of a file before instant `t`, interpolated between the samples around it.
fn bytes_before(samples: &[(u64, i64)], plan: &SplitPlan, t: i64) -> u64 {
    let start = plan.data_start();
    let i = samples.partition_point(|&(_, ts)| ts < t);
    let (to, t1) = match samples.get(i) {
        Some(&s) => s,
        None => return plan.file_len() - start,
    };
    let Some(&(from, t0)) = i.checked_sub(1).and_then(|j| samples.get(j)) else {
        return to - start;
    };
    // t0 < t ≤ t1, so the span is positive.
    let share = (i128::from(t) - i128::from(t0)) as f64 / (i128::from(t1) - i128::from(t0)) as f64;
    from - start + ((to - from) as f64 * share) as u64
}

/// The offsets and timestamps of the first record with a timestamp at or after `n` evenly
/// spaced points of the file, in increasing time (a sample earlier than one before it is left
/// out: the estimate only places instants). `None` when a point has no record the split can
/// find.
fn sample(plan: &SplitPlan, n: u64) -> Result<Option<Vec<(u64, i64)>>> {
    let (start, len) = (plan.data_start(), plan.file_len());
    let mut out: Vec<(u64, i64)> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let at = start + (u128::from(len - start) * u128::from(i) / u128::from(n)) as u64;
        match first_stamped(plan, at)? {
            Probe::At(off, ts) => {
                if out.last().is_none_or(|&(_, last)| ts > last) {
                    out.push((off, ts));
                }
            }
            Probe::End => break,
            Probe::Lost => return Ok(None),
        }
    }
    Ok(Some(out))
}

enum Probe {
    /// The first record at or after the offset asked for that has a timestamp: its offset and
    /// timestamp.
    At(u64, i64),
    /// No such record before the end of the file.
    End,
    /// No record boundary found.
    Lost,
}

fn first_stamped(plan: &SplitPlan, from: u64) -> Result<Probe> {
    let Some(mut reader) = plan.open(from, plan.file_len())? else {
        return Ok(Probe::Lost);
    };
    let mut found = Probe::End;
    while let Some(p) = reader.next_packet()? {
        if let Some(ts) = p.ts_ns {
            found = Probe::At(p.offset, ts);
            break;
        }
    }
    hand_back(plan, from, &reader);
    Ok(found)
}

/// Hand back what a probe's or a finished chunk's reader mapped: what it read and the window its
/// chase ran ahead.
fn hand_back(plan: &SplitPlan, from: u64, reader: &ChunkReader) {
    const CHASED: u64 = 2 << 20;
    plan.hand_back(from, reader.position().saturating_add(CHASED));
}

/// Where to cut a file for instant `t`: the offset of its first record with a timestamp at or
/// after `t` (the file's length if none), found by halving the file and then reading the
/// records of the last stretch. In a file whose records are out of order this is only an
/// estimate, which [`in_merge_order`] checks. `None` when a record boundary could not be found.
fn cut(plan: &SplitPlan, t: i64) -> Result<Option<u64>> {
    // `lo` is a record boundary before which no record reaches `t`, as far as the halving
    // saw; `hi` is where the halving stops looking.
    let (mut lo, mut hi) = (plan.data_start(), plan.file_len());
    while hi.saturating_sub(lo) > WALK {
        let mid = lo + (hi - lo) / 2;
        match first_stamped(plan, mid)? {
            Probe::At(off, ts) if ts < t => lo = off,
            // The cut may lie a little past `mid`: the walk below goes on until it finds it.
            Probe::At(..) | Probe::End => hi = mid,
            Probe::Lost => return Ok(None),
        }
    }
    let Some(mut reader) = plan.open(lo, plan.file_len())? else {
        return Ok(None);
    };
    let mut found = Some(plan.file_len());
    while let Some(p) = reader.next_packet()? {
        if p.ts_ns.is_some_and(|ts| ts >= t) {
            found = Some(p.offset);
            break;
        }
        // Only a file far out of order gets here: give up rather than read it all.
        if p.offset.saturating_sub(lo) > GIVE_UP {
            found = None;
            break;
        }
    }
    hand_back(plan, lo, &reader);
    Ok(found)
}

/// What every chunk of one scan shares.
struct Scan<'a> {
    plans: &'a [SplitPlan],
    /// Added to each file's interface numbers.
    bases: &'a [u32],
    config: &'a ScanConfig,
    size: SizeKind,
    decode: bool,
    /// Most packets each chunk's reorder buffer may hold ([`crate::engine::reorder::chunk_share`]).
    share: usize,
    /// Most empty instants each chunk may keep ([`crate::engine::chunk::instant_share`]).
    instants: usize,
}

impl Scan<'_> {
    /// Scan one chunk: the range `ranges[f]` of every file `f`, merged in (timestamp, file)
    /// order. `Ok(None)` when a range cannot be read on its own.
    fn run(&self, ranges: &[(u64, u64)], edges: Edges, shared: &Shared) -> Result<Option<Chunk>> {
        let Scan {
            plans,
            bases,
            size,
            decode,
            ..
        } = *self;
        let mut scanner =
            ChunkScanner::with_options(self.config.clone(), DEFAULT_INSTANT_CAP, edges)?
                .holding_at_most(self.share)
                .keeping_instants(self.instants);
        let merged = if decode {
            read_merged(
                plans,
                ranges,
                shared,
                |p| arrival(p, decode, size),
                |a, f| {
                    let mut a = *a;
                    a.interface = a.interface.saturating_add(bases[f]);
                    scanner.push(&a)
                },
            )?
        } else {
            let push = |&(ts, b, interface): &(i64, u64, u32), f: usize| {
                scanner.push_lean(ts, b, interface.saturating_add(bases[f]))
            };
            // One merge per size rule, `wire` (the default) apart, as in `super::run`.
            match size {
                SizeKind::Wire => read_merged(
                    plans,
                    ranges,
                    shared,
                    |p| lean_arrival(p, SizeKind::Wire),
                    push,
                )?,
                size => read_merged(plans, ranges, shared, |p| lean_arrival(p, size), push)?,
            }
        };
        let Some((acc, files)) = merged else {
            return Ok(None);
        };
        let state = scanner.finish()?;
        Ok(Some(Chunk { state, acc, files }))
    }
}

/// One file's piece of a chunk, being read.
struct Source<'a> {
    reader: ChunkReader,
    acc: Accounting,
    count: crate::pool::RangeCount<'a>,
    piece: Piece,
}

/// The pieces of one chunk, merged into a scanner by `push`.
struct Pieces<'a, M, P> {
    sources: Vec<Source<'a>>,
    make: M,
    push: P,
    taken: u64,
}

impl<T, M, P> Streams for Pieces<'_, M, P>
where
    T: Stamped,
    M: Fn(&crate::Packet<'_>) -> std::result::Result<T, Skip> + Copy,
    P: FnMut(&T, usize) -> Result<()>,
{
    type Item = T;

    fn next(&mut self, f: usize) -> Result<Option<T>> {
        let s = &mut self.sources[f];
        next_arrival(&mut s.reader, &mut s.acc, self.make)
    }

    fn take(&mut self, a: T, f: usize) -> Result<bool> {
        let s = &mut self.sources[f];
        let ts = a.ts();
        s.piece.first.get_or_insert(ts);
        s.piece.latest = Some(s.piece.latest.map_or(ts, |l| l.max(ts)));
        (self.push)(&a, f)?;
        self.taken += 1;
        // Now and then: count the bytes read, and stop if asked to.
        Ok(!self.taken.is_multiple_of(CHECK_EVERY) || s.count.reached(s.reader.position()))
    }
}

/// Read the ranges of all files, handing `push` their packets in (timestamp, file) order, as the
/// sequential scan merges whole files ([`crate::pipeline`]). Returns the chunk's accounting and
/// each file's piece; `None` when a range cannot be read on its own or the scan was stopped.
fn read_merged<T: Stamped>(
    plans: &[SplitPlan],
    ranges: &[(u64, u64)],
    shared: &Shared,
    make: impl Fn(&crate::Packet<'_>) -> std::result::Result<T, Skip> + Copy,
    push: impl FnMut(&T, usize) -> Result<()>,
) -> Result<Option<(Accounting, Vec<Piece>)>> {
    let mut sources = Vec::with_capacity(plans.len());
    for (plan, &(from, to)) in plans.iter().zip(ranges) {
        let Some(mut reader) = plan.open(from, to)? else {
            return Ok(None);
        };
        reader.share_residency();
        sources.push(Source {
            reader,
            acc: Accounting::default(),
            count: shared.range(from, to),
            piece: Piece::default(),
        });
    }
    let mut pieces = Pieces {
        sources,
        make,
        push,
        taken: 0,
    };
    if !merge::merge(plans.len(), &mut pieces)? {
        return Ok(None);
    }
    let mut acc = Accounting::default();
    let mut out = Vec::with_capacity(plans.len());
    for ((mut s, plan), &(from, _)) in pieces.sources.into_iter().zip(plans).zip(ranges) {
        s.count.finish();
        // What the reader still holds mapped would otherwise stay so until the whole scan ends
        // (the mapping is the plan's): about 4 MiB per file for each chunk done.
        hand_back(plan, from, &s.reader);
        acc.add(&s.acc);
        s.piece.end = s.reader.end();
        out.push(s.piece);
    }
    Ok(Some((acc, out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{ByteOrder, ReadOptions};
    use crate::scratch::Scratch;
    use crate::writer::{PcapOptions, PcapWriter};

    fn piece(first: i64, latest: i64) -> Piece {
        Piece {
            first: Some(first),
            latest: Some(latest),
            ..Piece::default()
        }
    }

    #[test]
    fn merge_order_is_checked_against_every_other_file() {
        // Two files, two chunks: the second chunk starts after everything of the first.
        assert!(in_merge_order(&[
            vec![piece(0, 10), piece(1, 11)],
            vec![piece(12, 20), piece(13, 21)]
        ]));
        // File 1's piece before the boundary reaches past file 0's first packet after it.
        assert!(!in_merge_order(&[
            vec![piece(0, 10), piece(1, 15)],
            vec![piece(12, 20), piece(16, 21)]
        ]));
        // Within one file a packet after the boundary may be earlier than one before it (the
        // file's own order decides); here only file 0 is out of order.
        assert!(in_merge_order(&[
            vec![piece(0, 10), piece(1, 5)],
            vec![piece(8, 20), piece(13, 21)]
        ]));
        // A tie across files: the earlier file goes first in the sequential merge, so file 0's
        // packet at 10 after the boundary must not follow file 1's at 10 before it ...
        assert!(!in_merge_order(&[
            vec![piece(0, 9), piece(1, 10)],
            vec![piece(10, 20), piece(13, 21)]
        ]));
        // ... while file 1's at 10 after the boundary may follow file 0's at 10.
        assert!(in_merge_order(&[
            vec![piece(0, 10), piece(1, 9)],
            vec![piece(12, 20), piece(10, 21)]
        ]));
    }

    #[test]
    fn merge_order_looks_past_empty_pieces() {
        // File 1 has nothing in the second chunk: its first packet after the first boundary is
        // the third chunk's, which file 0's packets of the second chunk pass.
        assert!(!in_merge_order(&[
            vec![piece(0, 10), piece(1, 9)],
            vec![piece(11, 30), Piece::default()],
            vec![piece(31, 40), piece(25, 41)]
        ]));
        assert!(in_merge_order(&[
            vec![piece(0, 10), piece(1, 9)],
            vec![piece(11, 30), Piece::default()],
            vec![piece(31, 40), piece(32, 41)]
        ]));
        // A file with no packets at all constrains nothing.
        assert!(in_merge_order(&[
            vec![piece(0, 10), Piece::default()],
            vec![piece(11, 30), Piece::default()]
        ]));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn probes_leave_little_of_the_file_mapped() {
        // Placing the instants opens a reader at some 40 points of each file and reads a record
        // or a stretch there. Each reader maps what it reads and the window its chase runs
        // ahead, 2 MiB at a time where the kernel maps the file in 2 MiB entries, and leaves it
        // mapped when dropped: without handing that back, the probes mapped most of this
        // 48 MiB file (and 880 MB over 8 files of the benchmark).
        use std::io::Write;
        let dir = Scratch::new("overlap");
        let path = dir.join("probed.pcap");
        let opts = PcapOptions {
            snaplen: 128,
            ..Default::default()
        };
        let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut w = PcapWriter::new(file, opts).expect("header");
        let frame = [0x5Au8; 128];
        let n = (48 << 20) / (16 + frame.len());
        for i in 0..n {
            w.write_packet(1_700_000_000_000_000_000 + 100 * i as i64, 1514, &frame)
                .expect("packet");
        }
        w.finish().expect("finish").flush().expect("flush");
        // As a capture read before is cached: in large folios, mapped 2 MiB at a time.
        crate::resident::cache_afresh(&path);
        let plan = SplitPlan::new(&path, ReadOptions::default())
            .expect("plan")
            .expect("splittable");
        assert!(plan.is_mapped());
        let samples = sample(&plan, SAMPLES).expect("sample").expect("samples");
        assert_eq!(samples.len(), SAMPLES as usize);
        for k in 1..8 {
            let t = samples[0].1 + (samples[SAMPLES as usize - 1].1 - samples[0].1) * k / 8;
            let at = cut(&plan, t).expect("cut").expect("found");
            // The cut is the first record at or after t: records are 144 bytes apart, 100 ns.
            let i = (at - plan.data_start()) / 144;
            assert_eq!((at - plan.data_start()) % 144, 0);
            assert!(
                100 * i as i64 + 1_700_000_000_000_000_000 >= t
                    && 100 * (i as i64 - 1) + 1_700_000_000_000_000_000 < t
            );
        }
        let kib = crate::resident::resident_kib(&path);
        // The file header's stretch, and what the kernel maps around it.
        assert!(
            kib <= 4 << 10,
            "{kib} KiB of a 48 MiB file still mapped after the probes"
        );
    }

    #[test]
    fn damage_met_while_placing_the_instants_is_reported_as_sequentially() {
        // The walk that finds a file's cut reads the records before it: a record there that
        // claims a GiB is an error in `cuts`, which must make the chunked scan refuse, so that
        // the sequential scan reports the damage it meets first, exactly (the damage tests of
        // tests/chunked_scan meet theirs in the chunks instead). Two files of 5.8 MB: cut in
        // two as asked, not scanned whole as too small.
        super::super::use_as_many_threads_as_asked(true);
        let dir = Scratch::new("overlap");
        let opts = PcapOptions {
            byte_order: ByteOrder::Big,
            snaplen: 128,
            ..Default::default()
        };
        let frame = [0x5Au8; 128];
        let per_file = 40_000usize;
        let paths: Vec<_> = (0..2)
            .map(|k| {
                let path = dir.join(format!("host{k}.pcap"));
                let mut w = PcapWriter::new(std::fs::File::create(&path).expect("create"), opts)
                    .expect("header");
                for i in 0..per_file {
                    let ts = 1_700_000_000_000_000_000 + 1_000 * (2 * i + k) as i64;
                    w.write_packet(ts, 1514, &frame).expect("packet");
                }
                w.finish().expect("finish");
                path
            })
            .collect();
        let plans = |paths: &[std::path::PathBuf]| -> Vec<SplitPlan> {
            paths
                .iter()
                .map(|p| {
                    SplitPlan::new(p, ReadOptions::default())
                        .expect("plan")
                        .expect("splittable")
                })
                .collect()
        };
        let at = cuts(&plans(&paths), 2).expect("cuts").expect("placed")[1][1];
        // The first file is damaged early on, where the sequential merge meets it first: the
        // error the chunked scan must give is that one, not the one its walk ran into.
        let early = 24 + 144 * 100;
        let mut first = std::fs::read(&paths[0]).expect("read");
        first[early + 8..early + 12].copy_from_slice(&0x4000_0000u32.to_be_bytes());
        std::fs::write(&paths[0], &first).expect("write");
        let clean = std::fs::read(&paths[1]).expect("read");
        let config = ScanConfig {
            windows_ns: vec![1_000, 1_000_000],
            rates_bps: vec![10_000_000_000],
            ..ScanConfig::default()
        };
        let scan = |threads| {
            let mut readers: Vec<_> = paths
                .iter()
                .map(|p| {
                    let input = crate::input::open_path(p).expect("open");
                    crate::capture::CaptureReader::new(input, ReadOptions::default())
                        .expect("reader")
                })
                .collect();
            crate::pipeline::scan_threads(
                &mut readers,
                config.clone(),
                SizeKind::Wire,
                threads,
                &mut |_| Ok(()),
            )
            .expect_err("damaged file")
            .to_string()
        };
        // Records 144 bytes each: damage one of the records the walk reads before the cut.
        let mut met = 0;
        for back in (1..=1024).step_by(64) {
            let record = at as usize - 144 * back;
            let mut bytes = clean.clone();
            bytes[record + 8..record + 12].copy_from_slice(&0x4000_0000u32.to_be_bytes());
            std::fs::write(&paths[1], &bytes).expect("write");
            if cuts(&plans(&paths), 2).is_err() {
                met += 1;
                let want = scan(1);
                assert!(
                    want.contains(&early.to_string()),
                    "{want} (record at {early})"
                );
                assert_eq!(scan(2), want, "{back} records before the cut");
            }
        }
        assert!(met > 0, "no damage was met while placing the instants");
    }
}
