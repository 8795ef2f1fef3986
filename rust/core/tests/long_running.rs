//! A tool that embeds the core and scans every minute for weeks must not grow by a file
//! descriptor, a mapping, a thread or a few kB per call, on success or on error. Each entry point
//! and error path is called many times after a warm-up; the process's open descriptors, threads
//! and mappings must then be what they were, and its resident memory must not have grown by more
//! than allocator noise. One test in its own binary: other tests on parallel threads would open
//! files and start threads of their own meanwhile.
#![cfg(target_os = "linux")]

use burstcore::analysis::FlowOptions;
use burstcore::analyze::{self, OrderOptions};
use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::engine::{By, ScanConfig};
use burstcore::error::{Error, ErrorKind};
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::table;
use burstcore::writer::frames::TcpSegment;
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::write_capture;
use scratch::Scratch;

/// What a leak would make grow.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Held {
    fds: usize,
    threads: usize,
    maps: usize,
    rss_kib: u64,
}

fn held() -> Held {
    let count = |dir: &str| std::fs::read_dir(dir).expect(dir).count();
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    Held {
        fds: count("/proc/self/fd"),
        threads: count("/proc/self/task"),
        maps: maps.lines().count(),
        rss_kib,
    }
}

/// `calls` calls of `f` after a warm-up hold what the process held before them.
fn holds_nothing(what: &str, calls: usize, mut f: impl FnMut()) {
    for _ in 0..calls / 10 + 5 {
        f();
    }
    let before = held();
    for _ in 0..calls {
        f();
    }
    let after = held();
    assert_eq!(
        (after.fds, after.threads),
        (before.fds, before.threads),
        "{what}: descriptors and threads after {calls} calls (before: {before:?}, after: {after:?})"
    );
    // The allocator maps and unmaps large blocks of its own: a mapping or two either way is its
    // doing, one a call would be a hundred.
    assert!(
        after.maps <= before.maps + 4,
        "{what}: mappings after {calls} calls (before: {before:?}, after: {after:?})"
    );
    // A leak of a kB a call would show as a MB; the allocator's own drift is well below that.
    let grown = after.rss_kib.saturating_sub(before.rss_kib);
    assert!(
        grown < 2048,
        "{what}: resident memory grew by {grown} KiB over {calls} calls ({before:?} -> {after:?})"
    );
}

/// `n` TCP packets between 4 hosts, 2 µs apart; `back` steps packet n/2 back by 1 s.
fn capture(n: usize, pcapng: bool, back: bool) -> Vec<u8> {
    let frames: Vec<(i64, u32, Vec<u8>)> = (0..n)
        .map(|k| {
            let wire = 66 + (k % 7) as u32 * 20;
            let mut f = Vec::new();
            TcpSegment::between_hosts(
                (k % 4) as u16,
                ((k + 1) % 4) as u16,
                5000,
                6000 + k as u16 % 9,
            )
            .write_frame(wire, 65535, &mut f)
            .expect("frame");
            let mut ts = 1_700_000_000_000_000_000 + 2_000 * k as i64;
            if back && k == n / 2 {
                ts -= 1_000_000_000;
            }
            (ts, wire, f)
        })
        .collect();
    write_capture(&frames, pcapng, ByteOrder::Little, true)
}

fn reader(path: &Path, strict: bool) -> Result<CaptureReader, Error> {
    let options = ReadOptions::default().with_strict(strict);
    CaptureReader::new(input::open_path(path)?, options)
}

fn config(by: Vec<By>, max_groups: usize) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![100_000, 1_000_000])
        .with_rates_bps(vec![1_000_000_000])
        .with_bins_ns(vec![1_000_000])
        .with_by(by)
        .with_max_groups(max_groups)
}

fn scan(path: &Path, threads: usize, by: Vec<By>, max_groups: usize) -> Result<u64, Error> {
    let mut readers = [reader(path, false)?];
    let config = config(by, max_groups);
    let (_, acc) =
        pipeline::scan_threads(&mut readers, config, SizeKind::Wire, threads, &mut |_| {
            Ok(())
        })?;
    Ok(acc.counted)
}

#[test]
fn many_calls_hold_no_descriptor_mapping_thread_or_memory() {
    // Files this small are cut into chunks and ranges only when asked to: the chunked scans and
    // split reads, with their threads and shared mappings, are what is checked here.
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let dir = Scratch::new("long-running");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    };
    let ng = capture(2_000, true, false);
    let plain = write("a.pcapng", &ng);
    let pcap = write("a.pcap", &capture(2_000, false, false));
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&ng).expect("gzip");
        write("a.pcapng.gz", &e.finish().expect("gzip"))
    };
    let truncated = write("cut.pcapng", &ng[..ng.len() - 37]);
    let mut corrupt = ng.clone();
    // The second block's (the interface's) length, shorter than any block.
    let shb = u32::from_le_bytes(ng[4..8].try_into().unwrap()) as usize;
    corrupt[shb + 4..shb + 8].copy_from_slice(&10u32.to_le_bytes());
    let corrupt = write("corrupt.pcapng", &corrupt);
    let late = write("late.pcapng", &capture(2_000, true, true));
    // Past one progress call (every 65,536 packets).
    let large = write("large.pcapng", &capture(70_000, true, false));
    let missing = dir.join("missing.pcapng");
    let groups = || vec![By::All, By::Pair, By::Flow5];

    for (what, path) in [("pcapng", &plain), ("pcap", &pcap), ("gzip", &gz)] {
        for threads in [1, 2] {
            holds_nothing(&format!("scan of {what}, {threads} threads"), 100, || {
                assert_eq!(scan(path, threads, groups(), 1_000).unwrap(), 2_000);
            });
            holds_nothing(
                &format!("read_table of {what}, {threads} threads"),
                100,
                || {
                    let mut r = reader(path, false).unwrap();
                    let t = table::read_table_threads(&mut r, None, None, threads, &mut |_| Ok(()));
                    assert_eq!(t.unwrap().iter().map(|t| t.rows).sum::<usize>(), 2_000);
                },
            );
        }
        holds_nothing(&format!("info of {what}"), 100, || {
            let mut r = reader(path, false).unwrap();
            assert_eq!(
                pipeline::info(&mut r, &mut |_| Ok(())).unwrap().packets,
                2_000
            );
        });
        holds_nothing(&format!("flows of {what}"), 100, || {
            let got = analyze::flows(
                &mut [reader(path, false).unwrap()],
                FlowOptions::default(),
                &[1_000_000],
                OrderOptions::default(),
                &mut |_| Ok(()),
            );
            assert_eq!(got.unwrap().2.counted, 2_000);
        });
    }

    let fails = |what: &str, kind: ErrorKind, f: &dyn Fn() -> Result<u64, Error>| {
        holds_nothing(what, 100, || {
            let e = f().expect_err(what);
            assert_eq!(e.kind, kind, "{what}: {e}");
        });
    };
    fails("a missing file", ErrorKind::Io, &|| {
        scan(&missing, 2, groups(), 10)
    });
    fails("a truncated file, strict", ErrorKind::Truncated, &|| {
        let mut r = reader(&truncated, true)?;
        Ok(table::read_table_threads(&mut r, None, None, 2, &mut |_| Ok(()))?.len() as u64)
    });
    for threads in [1, 2] {
        fails("a corrupt block", ErrorKind::Corrupt, &|| {
            scan(&corrupt, threads, groups(), 1_000)
        });
        fails("too many groups", ErrorKind::LimitExceeded, &|| {
            scan(&plain, threads, groups(), 2)
        });
        fails("a late packet", ErrorKind::OutOfOrder, &|| {
            scan(&late, threads, groups(), 1_000)
        });
        // A caller's progress callback that stops the scan (as Python's Ctrl-C does).
        fails("a progress callback that stops", ErrorKind::Io, &|| {
            let mut readers = [reader(&large, false)?];
            let stop = |_: u64| Err(Error::new(ErrorKind::Io, "stopped by the caller"));
            let config = config(groups(), 1_000);
            pipeline::scan_threads(&mut readers, config, SizeKind::Wire, threads, &mut { stop })
                .map(|(_, acc)| acc.counted)
        });
    }
    // A truncated file read leniently still reads, with a warning, and holds nothing either.
    holds_nothing("a truncated file, lenient", 100, || {
        assert!(scan(&truncated, 2, groups(), 1_000).unwrap() < 2_000);
    });

    // Mappings are guarded in a fixed number of slots: a slot left taken by any of the calls
    // above would, after enough of them, leave files read unguarded or unmapped. The large file
    // is still mapped while it is read.
    let mut seen = false;
    let name = large.to_string_lossy().into_owned();
    let mut readers = [reader(&large, false).unwrap()];
    let config = config(vec![By::All], 10);
    pipeline::scan(&mut readers, config, SizeKind::Wire, &mut |_| {
        seen |= std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .contains(&name);
        Ok(())
    })
    .unwrap();
    assert!(seen, "the file is no longer mapped after many calls");
}
