//! Differential: `pipeline::scan_threads` with 2 to 4 threads against the single-threaded scan of
//! the same bytes, which it promises to reproduce exactly, on damaged and odd inputs where a chunk
//! reader's re-synchronisation is hardest.
//!
//! Tests are told to use as many threads and chunks as asked
//! (`chunked::use_as_many_threads_as_asked`), so a capture of a few hundred bytes is still cut
//! into one time chunk per thread, or its metrics shared out among the threads. The input is
//! written to a file (the chunked path needs a plain path); sometimes the threaded scan reads it
//! as a stream instead, which takes the metric split. Sometimes it is cut in two captures, the
//! second with the first's header blocks, scanned together: the files' merge in time order,
//! one after the other or overlapping.
//!
//! Checks: both scans succeed with identical output (every envelope, backlog, series, group and
//! reorder statistic, in the same order), accounting, interfaces and warnings of every reader,
//! or both fail with the same error (kind, offset, input and reason).
#![no_main]

use burstcore::capture::CaptureReader;
use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::pipeline::{self, Fcs, SizeKind};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};

#[path = "common.rs"]
mod common;
use common::{pick, BINS, ORIGINS, RATES, SIZES, WINDOWS};

const FILTERS: [&str; 4] = ["tcp", "not udp", "ip6 or arp", "less 100 and not icmp"];

/// Everything a caller sees of a scan: its result or error, and each reader's interfaces and
/// warnings afterwards (the Python bindings report both).
#[derive(Debug, PartialEq)]
enum Seen {
    Done {
        out: String,
        acc: pipeline::Accounting,
        readers: Vec<String>,
    },
    Failed {
        kind: burstcore::ErrorKind,
        offset: Option<u64>,
        input: Option<String>,
        reason: String,
    },
}

fn open(path: &Path, opts: burstcore::capture::ReadOptions, stream: bool) -> Option<CaptureReader> {
    let input = if stream {
        let bytes = std::fs::read(path).ok()?;
        let n = bytes.len() as u64;
        burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes)), Some(n)).ok()?
    } else {
        burstcore::input::open_path(path).ok()?
    };
    CaptureReader::new(input, opts).ok()
}

fn scan(
    paths: &[PathBuf],
    opts: burstcore::capture::ReadOptions,
    stream: bool,
    config: &ScanConfig,
    size: SizeKind,
    threads: usize,
) -> Option<Seen> {
    let mut readers = Vec::new();
    for p in paths {
        readers.push(open(p, opts, stream)?);
    }
    let r = pipeline::scan_threads(&mut readers, config.clone(), size, threads, &mut |_| Ok(()));
    Some(match r {
        Ok((out, acc)) => Seen::Done {
            out: format!("{out:?}"),
            acc,
            readers: readers
                .iter()
                .map(|r| {
                    let w: Vec<_> = r
                        .warnings()
                        .iter()
                        .map(|w| (w.kind, w.offset, w.reason.clone()))
                        .collect();
                    // The undeclared-FCS check too: time chunks take their frames in file
                    // order as one reader would, so the same frames are told on any path.
                    let fcs = r.undeclared_fcs().map(|w| w.reason);
                    format!("{:?} {:?} {:?}", r.interfaces(), w, fcs)
                })
                .collect(),
        },
        Err(e) => Seen::Failed {
            kind: e.kind,
            offset: e.offset,
            // A stream has no path to name: it is named by its place among the inputs.
            input: e.input.filter(|_| !stream),
            reason: e.reason,
        },
    })
}

/// Where the packets of `data` begin, when it reads as a capture: the header blocks end there.
fn header_len(data: &[u8], opts: burstcore::capture::ReadOptions) -> Option<usize> {
    let mut r = common::open(data.to_vec(), opts).ok()?;
    let p = r.next_packet().ok()??;
    usize::try_from(p.offset).ok().filter(|&n| n <= data.len())
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 256 << 10 {
        return;
    }
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let h = common::fnv(data);
    let g = common::fnv(&h.to_le_bytes());
    let opts = common::options(h);
    // Half the inputs get a configuration the time chunks take (aggregate or interface, all the
    // time, no filter); the others anything, which the metric split takes.
    let chunkable = g & 1 == 0;
    let mut by = if chunkable {
        pick(&[By::All, By::Interface], h >> 8)
    } else {
        match (h >> 4) % 4 {
            0 => vec![By::All],
            1 => By::EVERY.to_vec(),
            _ => pick(&By::EVERY, h >> 8),
        }
    };
    if by.is_empty() {
        by.push(By::All);
    }
    let filter = (!chunkable && h >> 56 & 1 == 1).then(|| {
        burstcore::Filter::parse(FILTERS[(h >> 57) as usize % FILTERS.len()])
            .expect("a valid filter")
    });
    let time_range = if !chunkable && g >> 1 & 3 == 0 {
        burstcore::TimeRange {
            start_ns: Some(1_000_000_000 * (g >> 3 & 0xffff) as i64),
            end_ns: None,
        }
    } else {
        burstcore::TimeRange::ALL
    };
    let mut config = ScanConfig::default()
        .with_windows_ns(pick(&WINDOWS, h >> 17))
        .with_closure(if h >> 23 & 1 == 0 {
            Closure::HalfOpen
        } else {
            Closure::Closed
        })
        .with_rates_bps(pick(&RATES, h >> 24))
        .with_bins_ns(pick(&BINS, h >> 29))
        .with_bin_origin(ORIGINS[(g >> 30) as usize % ORIGINS.len()])
        .with_by(by)
        .with_reorder_horizon_ns([0, 1_000, 10_000_000, i64::MAX][(h >> 34) as usize % 4])
        .with_late(if h >> 36 & 1 == 0 {
            LatePolicy::Drop
        } else {
            LatePolicy::Error
        })
        .with_max_groups(if h >> 37 & 3 == 0 { 2 } else { 1 << 20 })
        .with_time_range(time_range)
        .with_filter(None)
        .with_file_filters(Vec::new());
    let size = if chunkable {
        [
            SizeKind::Wire,
            SizeKind::Captured,
            SizeKind::L1(Fcs::Declared),
            SizeKind::L1(Fcs::Present),
        ][(h >> 40) as usize % 4]
    } else {
        SIZES[(h >> 40) as usize % SIZES.len()]
    };
    let threads = 2 + (g >> 20) as usize % 3;
    let stream = g >> 22 & 3 == 0;

    // One capture, or two: the first `cut` bytes, and the header blocks then the rest.
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let mut files = vec![(
        dir.join(format!("burstcore-fuzz-threads-{pid}-a.cap")),
        data.to_vec(),
    )];
    if g >> 24 & 1 == 1 {
        if let Some(head) = header_len(data, opts) {
            let rest = data.len() - head;
            if rest > 0 {
                let cut = head + (g >> 25) as usize % rest;
                let mut second = data[..head].to_vec();
                second.extend_from_slice(&data[cut..]);
                files[0].1.truncate(cut);
                files.push((
                    dir.join(format!("burstcore-fuzz-threads-{pid}-b.cap")),
                    second,
                ));
            }
        }
    }
    if files.len() == 1 && g >> 26 & 3 == 0 {
        // The same capture twice: files that overlap in time, every timestamp a tie.
        files.push((
            dir.join(format!("burstcore-fuzz-threads-{pid}-b.cap")),
            data.to_vec(),
        ));
    }
    if filter.is_some() {
        if files.len() > 1 && g >> 28 & 1 == 1 {
            let mut per_file = vec![None; files.len()];
            per_file[0] = filter;
            config.file_filters = per_file;
        } else {
            config.filter = filter;
        }
    }
    for (path, bytes) in &files {
        if std::fs::write(path, bytes).is_err() {
            return;
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();

    // Each scan with AVX2 or AVX-512 lanes (where the CPU has them): the same results either way.
    common::choose_lanes(h, 0);
    let one = scan(&paths, opts, false, &config, size, 1).map(|s| match s {
        Seen::Failed {
            kind,
            offset,
            input,
            reason,
        } => Seen::Failed {
            kind,
            offset,
            input: input.filter(|_| !stream),
            reason,
        },
        done => done,
    });
    common::choose_lanes(h, 1);
    let many = scan(&paths, opts, stream, &config, size, threads);
    for p in &paths {
        let _ = std::fs::remove_file(p);
    }
    let (Some(one), Some(many)) = (one, many) else {
        return;
    };
    assert_eq!(
        one, many,
        "{threads} threads (stream: {stream}) differ from one on {} file(s); by {:?}, size {size:?}",
        paths.len(),
        config.by
    );
});
