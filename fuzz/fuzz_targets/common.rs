//! Helpers shared by the fuzz targets: read a capture to the end and keep what it said, so targets
//! can compare two reads of the same bytes (plain vs compressed, mapped vs buffered) or check
//! accounting.

#![allow(dead_code)] // each target uses a different part of this file

use burstcore::capture::{CaptureReader, Limits, ReadOptions, ReadStats};
use burstcore::engine::BinOrigin;
use burstcore::input;
use burstcore::pipeline::{Fcs, SizeKind};
use burstcore::ErrorKind;
use std::io::Cursor;
use std::path::Path;

/// A packet as owned values, to compare reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub ts_ns: Option<i64>,
    pub interface: u32,
    pub linktype: u16,
    pub wire_len: u32,
    pub data: Vec<u8>,
    pub offset: u64,
}

#[derive(Debug)]
pub struct Outcome {
    pub packets: Vec<Seen>,
    /// Kind and offset of the error that ended the read (None: clean end).
    pub error: Option<(ErrorKind, Option<u64>)>,
    pub warnings: Vec<(ErrorKind, Option<u64>)>,
    pub opened: bool,
    /// The reader framed from a memory mapping (only ever for a path).
    pub mapped: bool,
    /// The reader's counters at the end, when it opened.
    pub stats: Option<ReadStats>,
}

/// Cheap deterministic hash of the input, to derive options without eating input bytes (so the
/// seeds stay valid captures).
pub fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Before an input's `k`th scan (k < 64): half the time (from the input's hash `h`), run the
/// Lindley lanes as on a CPU without AVX-512, so that an AVX-512 host fuzzes the AVX2 lanes too,
/// and scans of the same input may run different lanes.
pub fn choose_lanes(h: u64, k: u32) {
    burstcore::fuzzing::without_avx512(fnv(&(!h).to_le_bytes()) >> k & 1 == 1);
}

pub fn options(h: u64) -> ReadOptions {
    let strict = h & 1 != 0;
    // Sometimes small limits, to walk the limit paths with small inputs.
    let limits = if h & 6 == 6 {
        Limits::default()
            .with_max_block_len(4096)
            .with_max_interfaces(3)
            .with_max_options(4)
            .with_max_sections(3)
    } else {
        Limits::default()
    };
    // In-memory bytes are never mapped: the mapping needs a path (and is tested elsewhere).
    ReadOptions::default()
        .with_strict(strict)
        .with_limits(limits)
        // Sometimes one of several files, where a file cut before its magic is a cut file.
        .with_one_of_several(h & (1 << 33) != 0)
}

pub fn open(bytes: Vec<u8>, opts: ReadOptions) -> Result<CaptureReader, burstcore::Error> {
    let n = bytes.len() as u64;
    let input = input::from_reader(Box::new(Cursor::new(bytes)), Some(n))?;
    CaptureReader::new(input, opts)
}

/// Read everything, checking the reader's own invariants on the way.
pub fn read_all(bytes: Vec<u8>, opts: ReadOptions) -> Outcome {
    drain(open(bytes, opts), opts)
}

/// [`read_all`] of the file at `path`, opened as an application opens one: with `opts.mmap`, a
/// plain regular file is framed from a mapping of it.
pub fn read_path(path: &Path, opts: ReadOptions) -> Outcome {
    drain(
        input::open_path(path).and_then(|i| CaptureReader::new(i, opts)),
        opts,
    )
}

fn drain(opened: Result<CaptureReader, burstcore::Error>, opts: ReadOptions) -> Outcome {
    let mut out = Outcome {
        packets: Vec::new(),
        error: None,
        warnings: Vec::new(),
        opened: false,
        mapped: false,
        stats: None,
    };
    let mut r = match opened {
        Ok(r) => r,
        Err(e) => {
            check_error(&e, opts);
            out.error = Some((e.kind, e.offset));
            return out;
        }
    };
    out.opened = true;
    out.mapped = r.is_mapped();
    let max = opts.limits.max_block_len as usize;
    let mut last_offset = None;
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                assert!(p.data.len() <= max, "packet larger than the block limit");
                if let Some(prev) = last_offset {
                    assert!(p.offset > prev, "packet offsets must increase");
                }
                last_offset = Some(p.offset);
                out.packets.push(Seen {
                    ts_ns: p.ts_ns,
                    interface: p.interface,
                    linktype: p.linktype,
                    wire_len: p.wire_len,
                    data: p.data.to_vec(),
                    offset: p.offset,
                });
            }
            Ok(None) => break,
            Err(e) => {
                check_error(&e, opts);
                out.error = Some((e.kind, e.offset));
                break;
            }
        }
    }
    // After the end (or an error) the reader stays finished.
    assert!(matches!(r.next_packet(), Ok(None)));
    for p in &out.packets {
        assert!(
            (p.interface as usize) < r.interfaces().len(),
            "packet on interface {} of {}",
            p.interface,
            r.interfaces().len()
        );
    }
    assert!(r.interfaces().len() <= opts.limits.max_interfaces.max(1) as usize);
    assert_eq!(r.stats().packets, out.packets.len() as u64);
    for w in r.warnings() {
        assert!(!w.reason.is_empty());
        if w.kind == ErrorKind::Truncated {
            assert!(!opts.strict, "a strict read warned about truncation");
        }
        out.warnings.push((w.kind, w.offset));
    }
    out.stats = Some(r.stats().clone());
    out
}

fn check_error(e: &burstcore::Error, opts: ReadOptions) {
    assert!(!e.reason.is_empty(), "error without a reason");
    assert!(
        !e.reason.ends_with('.'),
        "reasons carry no trailing period: {}",
        e.reason
    );
    if e.kind == ErrorKind::Truncated {
        assert!(opts.strict, "non-strict read failed with Truncated: {e}");
    }
    // Every error about the input names where it was found.
    if !matches!(e.kind, ErrorKind::Io | ErrorKind::InvalidArgument) {
        assert!(e.offset.is_some(), "input error without an offset: {e}");
    }
}

/// What the scan targets choose their settings from (by bits of a hash of the input), so that
/// the single-threaded scan and its differential check explore the same settings; groupings
/// from `By::EVERY`.
pub const WINDOWS: [i64; 6] = [1, 1_000, 999_999, 5_000_000, 1_000_000_000, i64::MAX];
pub const RATES: [u64; 5] = [1, 8_000, 1_000_000_000, 400_000_000_000, u64::MAX];
pub const BINS: [i64; 5] = [1, 1_000, 1_000_000, 3_600_000_000_000, i64::MAX];
/// The bins' origins: the epoch (the default), the first packet counted, an instant whose phase
/// is odd against every bin width, and the earliest instant (phases computed without t − origin).
pub const ORIGINS: [BinOrigin; 4] = [
    BinOrigin::At(0),
    BinOrigin::FirstPacket,
    BinOrigin::At(1_234_567),
    BinOrigin::At(i64::MIN),
];
pub const SIZES: [SizeKind; 7] = [
    SizeKind::Wire,
    SizeKind::Captured,
    SizeKind::Ip,
    SizeKind::Payload,
    SizeKind::L1(Fcs::Declared),
    SizeKind::L1(Fcs::Present),
    SizeKind::L1(Fcs::Absent),
];

/// The items of `all` whose bit is set in `mask`.
pub fn pick<T: Copy>(all: &[T], mask: u64) -> Vec<T> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| mask >> i & 1 != 0)
        .map(|(_, &v)| v)
        .collect()
}
