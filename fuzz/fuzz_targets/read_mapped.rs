//! The memory-mapped read (`ReadOptions::mmap`), and with it the chase of record headers ahead
//! of the framing (`capture/chase.rs`), against the buffered read of the same file.
//!
//! The other targets read in-memory bytes, which are never mapped, and the chase only works on a
//! mapped file, in windows of 1 MiB (at least 256 KiB): far more than a fuzz input should be. So
//! an input here describes a file rather than being one. Its first 6 bytes choose a clean capture
//! to build (pcap or pcapng, byte order, resolution, record sizes, contents, timestamps, other
//! pcapng blocks and sections) of 0.6–3 MiB, rarely 17.5 MiB (to pass the 16 MiB that a dense
//! window sends to line prefetch, and the 8 MiB page hand-back); the rest is a list of damages
//! (overwrite, insert, delete, copy, truncate, a record's length nudged). If the first byte asks
//! for it, the file is instead a built header followed by the input's own bytes, repeated:
//! arbitrary bytes after a valid header. An input that starts with a capture's magic, as every
//! seed of `run-ci` does (the corpus's captures under 64 KiB; its gzip and zstd files become
//! parameters and damages), is repeated to about 600 KiB, one window and more: a pcap's records
//! after its one file header, a pcapng whole, section after section (or its blocks after the
//! first section header).
//!
//! The file goes to /dev/shm (else the temporary directory) and is read through the public API
//! mapped and buffered, with strictness and limits from a hash of the input, as the other
//! targets. Checks: the mapped read really maps (else the comparison says nothing), and both give
//! exactly the same packets, ending (error kind and offset), warnings and statistics; for some
//! inputs, the chunk readers of a split file (which jump to their range, so the chase starts
//! over) agree mapped and buffered too.
#![no_main]

use burstcore::capture::split::SplitPlan;
use burstcore::capture::ReadOptions;
use burstcore::{Error, Warning};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

#[path = "common.rs"]
mod common;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
/// Bytes of the input that choose the capture built.
const PARAMS: usize = 6;
/// Damages applied at most, and of those, at most this many that move the rest of the file.
const MAX_OPS: usize = 64;
const MAX_MOVES: usize = 8;

const PCAP_MAGICS: [u32; 3] = [0xa1b2_c3d4, 0xa1b2_3c4d, 0xa1b2_cd34];
const SHB: u32 = 0x0A0D_0D0A;

/// Executions, and how many of them read a mapping: `-print_final_stats` does not show these,
/// so they are printed every 2^k executions (a target that never maps checks nothing).
static RUNS: AtomicU64 = AtomicU64::new(0);
static MAPPED: AtomicU64 = AtomicU64::new(0);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }
    /// `n` random bytes: a stretch of one random MiB, as generating them one by one under the
    /// fuzzer's instrumentation took most of an execution.
    fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        static POOL: OnceLock<Vec<u8>> = OnceLock::new();
        let pool = POOL.get_or_init(|| {
            let mut rng = Rng(0x5eed);
            (0..MIB / 8)
                .flat_map(|_| rng.next().to_le_bytes())
                .collect()
        });
        let n = n.min(pool.len());
        let at = self.below((pool.len() - n + 1) as u64) as usize;
        out.extend_from_slice(&pool[at..at + n]);
    }
}

/// The file being built, in its current byte order.
struct Out {
    bytes: Vec<u8>,
    big: bool,
}

impl Out {
    fn u16(&mut self, v: u16) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// What the first `PARAMS` bytes of an input choose.
struct Plan {
    pcapng: bool,
    big: bool,
    /// Nanosecond pcap, or nanosecond pcapng interfaces.
    fine: bool,
    /// pcap: the "modified" variant (24-byte record headers); pcapng: other blocks between the
    /// packets, and now and then a new section.
    extra: bool,
    /// Record sizes (see `caplen`).
    mix: u8,
    /// A built header, then the rest of the input repeated.
    raw: bool,
    size: usize,
    long: bool,
    content: u8,
    chunks: bool,
    clock: u8,
    interfaces: usize,
    /// Where the chunk reader starts, in 16ths of the records (odd: a few bytes into one).
    cut: u64,
    seed: u64,
}

fn plan(p: [u8; PARAMS]) -> Plan {
    let mix = (p[0] >> 4) & 7;
    let long = p[1] & 15 == 15 && p[1] & 0x40 != 0;
    let clock = p[2] & 3;
    let mut size = 640 * KIB + usize::from(p[1] & 15) * 176 * KIB;
    if matches!(mix, 2 | 7) {
        // Small records: one window finds them dense; more of them only costs executions.
        size = 640 * KIB + (size - 640 * KIB) / 8;
    }
    if clock == 3 {
        // Random seconds: each cursor's guess scans its whole piece, header by header (7/8 of
        // the window): a window is enough.
        size = 640 * KIB;
    }
    Plan {
        pcapng: p[0] & 1 != 0,
        big: p[0] & 2 != 0,
        fine: p[0] & 4 != 0,
        extra: p[0] & 8 != 0,
        mix,
        raw: p[0] & 0x80 != 0,
        size: if long { 17 * MIB + MIB / 2 } else { size },
        long,
        content: (p[1] >> 4) & 3,
        chunks: p[1] & 0x80 != 0,
        clock,
        interfaces: 1 + usize::from((p[2] >> 2) & 3),
        cut: u64::from(p[2] >> 4),
        seed: u64::from(p[3]) | u64::from(p[4]) << 8 | u64::from(p[5]) << 16,
    }
}

/// Captured length of the next record, `at` bytes into the file.
fn caplen(plan: &Plan, rng: &mut Rng, at: usize) -> usize {
    if plan.long {
        // A dense first window, then large records until past the 16 MiB of line prefetch it
        // buys, then ordinary ones for the window that looks again.
        return if at < MIB {
            rng.range(40, 200)
        } else if at < 17 * MIB {
            rng.range(16 * KIB, 64 * KIB)
        } else {
            rng.range(512, 1514)
        };
    }
    match plan.mix {
        0 => rng.range(512, 1514),
        1 => {
            if rng.below(8) == 0 {
                rng.range(40, 128)
            } else {
                rng.range(512, 1514)
            }
        }
        2 => rng.range(40, 200),
        // Stretches of large and of small records, so windows change their mind.
        3 => {
            if (at / (384 * KIB)).is_multiple_of(2) {
                rng.range(512, 1514)
            } else {
                rng.range(40, 160)
            }
        }
        // Jumbo frames, and records longer than a cursor's piece of the window.
        4 => {
            if rng.below(64) == 0 {
                rng.range(100 * KIB, 300 * KIB)
            } else {
                rng.range(1514, 9000)
            }
        }
        // Around the 512 bytes per record where a window counts as dense.
        5 => rng.range(400, 640),
        6 => 1514,
        _ => rng.range(0, 40),
    }
}

/// Seconds and sub-second units (of `max_sub` per second) of record `i`.
fn clock(plan: &Plan, rng: &mut Rng, base: u32, i: usize, max_sub: u32) -> (u32, u32) {
    match plan.clock {
        0 => (
            base + (i / 1000) as u32,
            (i % 1000) as u32 * (max_sub / 1000),
        ),
        // Jumps of more than an hour: a cursor's guess must be near the window's first record.
        1 => (
            base + rng.below(4 * 3600) as u32,
            rng.below(u64::from(max_sub)) as u32,
        ),
        2 => (base, rng.below(u64::from(max_sub)) as u32),
        _ => (rng.next() as u32, rng.next() as u32),
    }
}

/// A record header that makes sense, for a record that is not there (its first `.1` bytes).
type Fake<'a> = Option<&'a dyn Fn(&mut Rng) -> ([u8; 28], usize)>;

/// The `n` bytes of a record's contents.
fn contents(plan: &Plan, rng: &mut Rng, o: &mut Out, n: usize, fake: Fake) {
    let start = o.len();
    match plan.content {
        0 => rng.fill(&mut o.bytes, n),
        1 => o.bytes.resize(start + n, 0),
        // Record headers that make sense, where there is no record: wrong guesses.
        2 => {
            rng.fill(&mut o.bytes, n);
            let Some(fake) = fake else { return };
            let mut at = start + rng.range(0, 256);
            while at + 32 <= start + n {
                let (h, k) = fake(rng);
                o.bytes[at..at + k].copy_from_slice(&h[..k]);
                at += rng.range(16, 512);
            }
        }
        // Bytes of the file so far: a capture inside the capture, real headers out of place.
        _ => {
            if start > n {
                let from = rng.below((start - n) as u64) as usize;
                o.bytes.extend_from_within(from..from + n);
            } else {
                rng.fill(&mut o.bytes, n);
            }
        }
    }
}

/// Seven 32-bit words in a byte order.
fn words(v: [u32; 7], big: bool) -> [u8; 28] {
    let mut out = [0u8; 28];
    for (chunk, v) in out.chunks_exact_mut(4).zip(v) {
        chunk.copy_from_slice(&if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    out
}

/// Two 16-bit halves of a 32-bit word as they lie in the file (an option's code and length).
fn halves(first: u16, second: u16, big: bool) -> u32 {
    if big {
        u32::from(first) << 16 | u32::from(second)
    } else {
        u32::from(second) << 16 | u32::from(first)
    }
}

fn pcap_header(o: &mut Out, plan: &Plan) {
    let magic = if plan.extra {
        PCAP_MAGICS[2]
    } else if plan.fine {
        PCAP_MAGICS[1]
    } else {
        PCAP_MAGICS[0]
    };
    o.u32(magic);
    o.u16(2);
    o.u16(4);
    o.u32(0);
    o.u32(0);
    o.u32(262_144);
    o.u32(1);
}

/// Units per second of interface `k` of a section.
fn units(plan: &Plan, k: usize) -> (u8, u64) {
    match k % 3 {
        0 if plan.fine => (9, 1_000_000_000),
        2 => (0x94, 1 << 20),
        _ => (6, 1_000_000),
    }
}

fn section(o: &mut Out, plan: &Plan) {
    o.u32(SHB);
    o.u32(28);
    o.u32(0x1A2B_3C4D);
    o.u16(1);
    o.u16(0);
    o.u32(u32::MAX);
    o.u32(u32::MAX);
    o.u32(28);
    for k in 0..plan.interfaces {
        o.u32(1);
        o.u32(32);
        o.u16(1);
        o.u16(0);
        o.u32(262_144);
        // if_tsresol, then the end of options.
        o.u16(9);
        o.u16(1);
        o.bytes.extend_from_slice(&[units(plan, k).0, 0, 0, 0]);
        o.u32(0);
        o.u32(32);
    }
}

/// A pcapng block of `kind` whose body is `body` then `n` bytes of contents, padded.
fn block(o: &mut Out, kind: u32, body: &[u32], n: usize, plan: &Plan, rng: &mut Rng) {
    let len = 12 + 4 * body.len() + n.next_multiple_of(4);
    o.u32(kind);
    o.u32(len as u32);
    for &v in body {
        o.u32(v);
    }
    contents(plan, rng, o, n, None);
    o.bytes.resize(o.len() + n.next_multiple_of(4) - n, 0);
    o.u32(len as u32);
}

/// A clean capture as `plan` says, of at least `size` bytes (just the header for 0), and where
/// each record (pcapng: block) starts.
fn build(plan: &Plan, size: usize) -> (Vec<u8>, Vec<usize>) {
    let mut rng = Rng(plan.seed);
    let mut o = Out {
        bytes: Vec::with_capacity(size + 320 * KIB),
        big: plan.big,
    };
    let mut records = Vec::new();
    let base = 1_600_000_000 + rng.below(200_000_000) as u32;
    if plan.pcapng {
        section(&mut o, plan);
    } else {
        pcap_header(&mut o, plan);
    }
    let modified = !plan.pcapng && plan.extra;
    let max_sub: u32 = if !plan.pcapng && plan.fine && !modified {
        1_000_000_000
    } else {
        1_000_000
    };
    let mut i = 0;
    while o.len() < size {
        let n = caplen(plan, &mut rng, o.len());
        let (secs, sub) = clock(plan, &mut rng, base, i, max_sub);
        let wire = n + rng.range(0, 3) * rng.range(0, 64);
        records.push(o.len());
        i += 1;
        let big = o.big;
        if !plan.pcapng {
            for v in [secs, sub, n as u32, wire as u32] {
                o.u32(v);
            }
            if modified {
                o.u32(rng.next() as u32);
                o.u16(0x0800);
                o.bytes.extend_from_slice(&[0, 0]);
            }
            let fake = move |rng: &mut Rng| {
                let c = rng.range(0, 1514) as u32;
                let sub = rng.below(u64::from(max_sub)) as u32;
                (words([secs, sub, c, c, 0, 0, 0], big), 16)
            };
            contents(plan, &mut rng, &mut o, n, Some(&fake));
            continue;
        }
        if plan.extra && rng.below(16) == 0 {
            let id = rng.below(plan.interfaces as u64 + 1) as u32;
            let m = rng.range(0, 600);
            match rng.below(8) {
                0 => block(&mut o, 3, &[wire as u32], n, plan, &mut rng),
                1 => {
                    let t = u64::from(secs) * 1_000_000;
                    // Interface statistics with if_recv, then the end of options.
                    let opt = halves(4, 8, o.big);
                    let body = [id, (t >> 32) as u32, t as u32, opt, 0, 7, 0];
                    block(&mut o, 5, &body, 0, plan, &mut rng)
                }
                2 => block(&mut o, 4, &[0], m, plan, &mut rng),
                3 => block(&mut o, 0x0BAD, &[32473], m, plan, &mut rng),
                4 => block(&mut o, 0x0A, &[0x544c_534b, m as u32], m, plan, &mut rng),
                5 => {
                    let t = u64::from(secs) * 1_000_000;
                    // The obsolete block's interface is 16 bits, then a drop count.
                    let id = halves(id as u16, 0, o.big);
                    let body = [id, (t >> 32) as u32, t as u32, n as u32, wire as u32];
                    block(&mut o, 2, &body, n, plan, &mut rng);
                }
                6 => {
                    // A new section, as often as not of the other byte order.
                    o.big ^= rng.below(2) == 1;
                    section(&mut o, plan);
                }
                _ => block(&mut o, 0x777, &[], m, plan, &mut rng),
            }
            continue;
        }
        let id = rng.below(plan.interfaces as u64) as usize;
        let t =
            u64::from(secs) * units(plan, id).1 + u64::from(sub) * units(plan, id).1 / 1_000_000;
        let flags = rng.below(4) == 0;
        let len = 32 + n.next_multiple_of(4) + if flags { 12 } else { 0 };
        for v in [
            6,
            len as u32,
            id as u32,
            (t >> 32) as u32,
            t as u32,
            n as u32,
        ] {
            o.u32(v);
        }
        o.u32(wire as u32);
        let fake = move |rng: &mut Rng| {
            let c = rng.range(0, 1514) as u32;
            let l = 32 + c.next_multiple_of(4);
            (words([6, l, 0, (t >> 32) as u32, t as u32, c, c], big), 28)
        };
        contents(plan, &mut rng, &mut o, n, Some(&fake));
        o.bytes.resize(o.len() + n.next_multiple_of(4) - n, 0);
        if flags {
            // epb_flags, then the end of options.
            o.u16(2);
            o.u16(4);
            o.u32(1);
            o.u32(0);
        }
        o.u32(len as u32);
    }
    (o.bytes, records)
}

/// Reads the damage list. A damage whose last bytes are missing is not applied: were they read
/// as zeros, most inputs would end by damaging the file's first bytes.
struct Ops<'a>(&'a [u8]);

impl Ops<'_> {
    fn uint(&mut self, n: usize) -> Option<u64> {
        let (bytes, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(bytes.iter().fold(0, |v, &b| v << 8 | u64::from(b)))
    }
    fn byte(&mut self) -> Option<u8> {
        self.uint(1).map(|b| b as u8)
    }
    /// A position in `HEADER..=len`, scaled so that every part of the file is reachable. The
    /// file's first bytes are left alone: a damaged header ends the read before any chase, and
    /// the other targets damage headers all the time.
    fn at(&mut self, len: usize) -> Option<usize> {
        const HEADER: usize = 24;
        let keep = HEADER.min(len);
        Some(keep + ((self.uint(3)? * ((len - keep) as u64 + 1)) >> 24) as usize)
    }
}

/// Apply the damages `ops` describes to `file`, whose records start at `records` (before the
/// damages: a damage after an insertion or deletion hits another place, which is damage too).
fn damage(file: &mut Vec<u8>, records: &[usize], pcapng: bool, big: bool, ops: &[u8]) {
    let mut ops = Ops(ops);
    let mut moves = 0;
    let mut truncated = false;
    for _ in 0..MAX_OPS {
        if damage_one(
            file,
            records,
            pcapng,
            big,
            &mut ops,
            &mut moves,
            &mut truncated,
        )
        .is_none()
        {
            break;
        }
    }
}

fn damage_one(
    file: &mut Vec<u8>,
    records: &[usize],
    pcapng: bool,
    big: bool,
    ops: &mut Ops,
    moves: &mut usize,
    truncated: &mut bool,
) -> Option<()> {
    let put = |file: &mut Vec<u8>, at: usize, v: u32| {
        let b = if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        if let Some(s) = file.get_mut(at..at.saturating_add(4)) {
            s.copy_from_slice(&b);
        }
    };
    let get = |file: &[u8], at: usize| -> u32 {
        let b: [u8; 4] = file
            .get(at..at.saturating_add(4))
            .and_then(|s| s.try_into().ok())
            .unwrap_or_default();
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let record = |ops: &mut Ops| -> Option<Option<usize>> {
        let k = (ops.uint(2)? as usize * records.len()) >> 16;
        Some(records.get(k).copied())
    };
    let op = ops.byte()?;
    let arg = usize::from(op >> 3);
    let mut may_move = || {
        *moves += 1;
        *moves <= MAX_MOVES
    };
    match op & 7 {
        0 => {
            let at = ops.at(file.len())?;
            let (bytes, rest) = ops.0.split_at_checked(arg + 1)?;
            ops.0 = rest;
            let n = bytes.len().min(file.len() - at);
            file[at..at + n].copy_from_slice(&bytes[..n]);
        }
        // One of a record's header fields set to a value.
        1 => {
            let r = record(ops)?;
            let v = ops.uint(4)? as u32;
            if let Some(r) = r {
                put(file, r + 4 * (arg % 8), v);
            }
        }
        // A record's length (or its original/trailing length) off by a little.
        2 => {
            let r = record(ops)?;
            let delta = ops.byte()? as i8 as i32 as u32;
            if let Some(r) = r {
                let field = match (pcapng, arg & 1 == 1) {
                    (false, false) => r + 8,
                    (false, true) => r + 12,
                    (true, false) => r + 4,
                    (true, true) => (r + get(file, r + 4) as usize).saturating_sub(4),
                };
                let v = get(file, field).wrapping_add(delta);
                put(file, field, v);
            }
        }
        3 => {
            let at = ops.at(file.len())?;
            let n = ops.uint(2)? as usize;
            let fill = match arg {
                0 => 0,
                1 => 0xFF,
                x => x as u8,
            };
            if may_move() {
                file.splice(at..at, std::iter::repeat_n(fill, n));
            }
        }
        4 => {
            let at = ops.at(file.len())?;
            let n = (ops.uint(2)? as usize) << (arg & 3);
            if may_move() {
                file.drain(at..file.len().min(at + n));
            }
        }
        // Only the first cut counts: more would leave most inputs a short file.
        5 => {
            let at = ops.at(file.len())?;
            if !*truncated {
                *truncated = true;
                file.truncate(at);
            }
        }
        // A stretch of the file copied elsewhere, over it or (moving the rest) into it.
        6 => {
            let from = ops.at(file.len())?;
            let to = ops.at(file.len())?;
            let n = (ops.uint(2)? as usize).min(file.len() - from);
            if arg & 1 == 0 {
                let n = n.min(file.len() - to);
                file.copy_within(from..from + n, to);
            } else if may_move() {
                let span = file[from..from + n].to_vec();
                file.splice(to..to, span);
            }
        }
        // A run of one byte value over the file.
        _ => {
            let at = ops.at(file.len())?;
            let n = (ops.uint(2)? as usize).min(file.len() - at);
            let v = [0, 0xFF, 0x20, 0x06][arg & 3];
            file[at..at + n].fill(v);
        }
    }
    Some(())
}

/// `data` followed by `data[skip..]` again and again, to at least `size` bytes (whole copies).
fn repeated(data: &[u8], skip: usize, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + data.len());
    out.extend_from_slice(data);
    let period = data.len() - skip;
    if period == 0 {
        return out;
    }
    // Doubling what is there already: the copies stay whole.
    while out.len() < size {
        let have = out.len() - skip;
        let n = have.min((size - out.len()).div_ceil(period) * period);
        out.extend_from_within(skip..skip + n);
    }
    out
}

fn is_capture_magic(data: &[u8]) -> Option<bool> {
    let m: [u8; 4] = data.get(..4)?.try_into().ok()?;
    if m == SHB.to_be_bytes() {
        return Some(true);
    }
    let pcap = PCAP_MAGICS
        .iter()
        .any(|&x| m == x.to_be_bytes() || m == x.to_le_bytes());
    pcap.then_some(false)
}

/// The file an input stands for, and where a chunk reader starts in it, if one is compared.
fn file_of(data: &[u8], h: u64) -> (Vec<u8>, Option<u64>) {
    if let Some(pcapng) = is_capture_magic(data) {
        // Seeds are mostly small packets, found dense in the first window: one is enough.
        let size = 600 * KIB + (h >> 24) as usize % (64 * KIB);
        let skip = if !pcapng {
            24.min(data.len())
        } else if h >> 12 & 1 == 1 {
            // After the first section header: its interfaces and packets again and again.
            let l = data
                .get(4..8)
                .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or_default()));
            let l = if data.get(8..12) == Some(&[0x1A, 0x2B, 0x3C, 0x4D]) {
                l.swap_bytes()
            } else {
                l
            } as usize;
            if (12..=data.len()).contains(&l) {
                l
            } else {
                0
            }
        } else {
            0
        };
        // No chunks: where no chain of records passes the split's checks (a timestamp an hour
        // off, a captured length above the original one, as many seeds have, or the seams
        // between copies), its search reads the rest of the file byte by byte, twice.
        return (repeated(data, skip, size), None);
    }
    let mut p = [0u8; PARAMS];
    for (x, &b) in p.iter_mut().zip(data) {
        *x = b;
    }
    let plan = plan(p);
    let rest = data.get(PARAMS..).unwrap_or(&[]);
    // Where the split finds no chain of records (pcap seconds an hour or more apart, or a first
    // packet's far from the rest), it searches on to the end of the file (up to 64 MiB) byte
    // by byte, twice: most of a second for 3 MiB under the sanitizer, and over 20 s in the
    // 17.5 MiB file (RESULTS.md, finding 5).
    let chunks = plan.chunks && !plan.long && (plan.clock == 0 || plan.clock == 2 || plan.pcapng);
    if plan.raw {
        let (header, _) = build(&plan, 0);
        let mut file = header.clone();
        file.extend_from_slice(rest);
        return (repeated(&file, header.len(), plan.size), None);
    }
    let (mut file, records) = build(&plan, plan.size);
    damage(&mut file, &records, plan.pcapng, plan.big, rest);
    // At a record (before the damage), or a few bytes into one: the split's search for the
    // next record then stops soon.
    let from = records
        .get(records.len() * plan.cut as usize / 16)
        .map(|&r| (r + (plan.cut as usize & 1) * (1 + plan.seed as usize % 64)) as u64);
    (file, from.filter(|_| chunks))
}

const SCRATCH: &str = "burstcore-fuzz-read_mapped-";

/// The file every execution writes (and removes), one per process.
fn scratch() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        sweep(&dir);
        let path = dir.join(format!("{SCRATCH}{}.cap", std::process::id()));
        // libfuzzer-sys's panic hook aborts before any unwinding, so no destructor would
        // remove the file of a failing input.
        let hook = std::panic::take_hook();
        let file = path.clone();
        std::panic::set_hook(Box::new(move |info| {
            let _ = std::fs::remove_file(&file);
            hook(info);
        }));
        path
    })
}

/// Remove the files of processes that are gone (a timeout or a sanitizer's report ends the
/// process without a panic), so that they do not pile up in memory-backed /dev/shm.
fn sweep(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH))
            .and_then(|n| n.strip_suffix(".cap"))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes the scratch file when the execution ends.
struct Remove<'a>(&'a Path);

impl Drop for Remove<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// What a chunk reader read: packets as (offset, timestamp, interface, link type, original
/// length, data), how it ended, its warnings, counters, position and seam.
type Chunk = (
    Vec<(u64, Option<i64>, u32, u16, u32, Vec<u8>)>,
    Option<Error>,
    Vec<Warning>,
    burstcore::capture::ReadStats,
    u64,
    Option<(u64, u64)>,
);

fn read_chunk(plan: &SplitPlan, from: u64, to: u64) -> Result<Option<(Chunk, bool)>, Error> {
    let Some(mut c) = plan.open(from, to)? else {
        return Ok(None);
    };
    let mut packets = Vec::new();
    let error = loop {
        match c.next_packet() {
            Ok(Some(p)) => packets.push((
                p.offset,
                p.ts_ns,
                p.interface,
                p.linktype,
                p.wire_len,
                p.data.to_vec(),
            )),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let r = c.reader();
    let chunk = (
        packets,
        error,
        r.warnings().to_vec(),
        r.stats().clone(),
        c.position(),
        c.seam(),
    );
    Ok(Some((chunk, c.is_mapped())))
}

/// The chunk of a split from `from`, mapped and buffered: its reader frames the file's header,
/// then jumps to the chunk. Only 512 KiB of records (two chase windows at least): the rest would
/// be the whole read again.
fn compare_chunks(path: &Path, opts: ReadOptions, from: u64) {
    let buffered = SplitPlan::new(path, opts.with_mmap(false));
    let mapped = SplitPlan::new(path, opts.with_mmap(true));
    let (buffered, mapped) = match (buffered, mapped) {
        (Ok(Some(b)), Ok(Some(m))) => (b, m),
        (b, m) => {
            assert_eq!(
                m.map(|p| p.is_some()),
                b.map(|p| p.is_some()),
                "split plans differ"
            );
            return;
        }
    };
    assert!(!buffered.is_mapped());
    assert!(mapped.is_mapped(), "a split of a regular file did not map");
    assert_eq!(mapped.data_start(), buffered.data_start());
    assert_eq!(mapped.file_len(), buffered.file_len());
    assert_eq!(mapped.interfaces(), buffered.interfaces());
    let len = buffered.file_len();
    let to = len.min(from + 512 * KIB as u64);
    let b = read_chunk(&buffered, from, to);
    let m = read_chunk(&mapped, from, to);
    let ctx = format!("chunk {from}..{to} of {len}");
    match (m, b) {
        (Ok(Some((m, m_mapped))), Ok(Some((b, b_mapped)))) => {
            assert!(m_mapped, "{ctx}: the chunk reader did not map");
            assert!(!b_mapped);
            assert_eq!(m.0.len(), b.0.len(), "{ctx}: packets framed");
            if let Some(k) = (0..m.0.len()).find(|&k| m.0[k] != b.0[k]) {
                panic!(
                    "{ctx}: packet {k} differs (at {} and {})",
                    m.0[k].0, b.0[k].0
                );
            }
            assert_eq!(m.1, b.1, "{ctx}: the ending");
            assert_eq!(m.2, b.2, "{ctx}: the warnings");
            assert_eq!(m.3, b.3, "{ctx}: the statistics");
            assert_eq!((m.4, m.5), (b.4, b.5), "{ctx}: the position and seam");
        }
        (m, b) => assert_eq!(
            m.map(|c| c.is_some()),
            b.map(|c| c.is_some()),
            "{ctx}: whether a chunk reader opens"
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let h = common::fnv(data);
    let opts = common::options(h);
    let (file, chunks) = file_of(data, h);
    let path = scratch();
    std::fs::write(path, &file).expect("write the scratch file");
    let _remove = Remove(path);

    let mapped = common::read_path(path, opts.with_mmap(true));
    let buffered = common::read_path(path, opts.with_mmap(false));
    assert!(!buffered.mapped);
    // Every file starts with a capture's magic (damage spares the first bytes), never gzip's or
    // zstd's: one that opens is plain, and maps where mappings are guarded.
    if mapped.opened && burstcore::capture::mapping::GUARDED {
        assert!(
            mapped.mapped,
            "a {}-byte capture file did not map",
            file.len()
        );
    }
    let runs = RUNS.fetch_add(1, Ordering::Relaxed) + 1;
    let maps =
        MAPPED.fetch_add(u64::from(mapped.mapped), Ordering::Relaxed) + u64::from(mapped.mapped);
    if runs.is_power_of_two() && runs >= 1024 {
        eprintln!("read_mapped: {maps} of {runs} executions read a mapping");
    }
    assert_eq!(
        mapped.packets.len(),
        buffered.packets.len(),
        "mapped and buffered reads framed different numbers of packets"
    );
    if let Some(k) = (0..mapped.packets.len()).find(|&k| mapped.packets[k] != buffered.packets[k]) {
        panic!(
            "packet {k} differs: mapped at {}, buffered at {}",
            mapped.packets[k].offset, buffered.packets[k].offset
        );
    }
    assert_eq!(
        mapped.error, buffered.error,
        "mapped and buffered reads end differently"
    );
    assert_eq!(
        mapped.warnings, buffered.warnings,
        "mapped and buffered reads warn differently"
    );
    assert_eq!(
        mapped.stats, buffered.stats,
        "mapped and buffered reads count differently"
    );

    if let Some(from) = chunks {
        compare_chunks(path, opts, from);
    }
});
