//! A capture read through a memory mapping (the default for plain files on Linux) that another
//! process truncates while it is read gives an `Io` error naming the truncation, never a crash
//! (SIGBUS) and never a result made of the zeros that stand in for the vanished bytes: the packets
//! read before the error are the file's own, as the buffered read of the intact file shows, up to
//! the page that holds the cut (whoever gets an error keeps nothing read). And a
//! fault in a mapping that burstcore did not make still takes the default action: the guard
//! hides nothing but its own mappings' faults.
#![cfg(target_os = "linux")]

use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::error::{Error, ErrorKind};
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::frames::TcpSegment;
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::{run_child_test, write_capture};
use scratch::Scratch;

/// `n` packets of 66–1514 bytes, 0–50 µs apart, in timestamp order.
fn generate(n: usize, pcapng: bool) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut frames = Vec::with_capacity(n);
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..n {
        ts += next(50_000) as i64;
        let wire = 66 + next(1449) as u32;
        let mut f = Vec::new();
        TcpSegment::between_hosts(next(4) as u16, next(4) as u16, 5000, 6000)
            .write_frame(wire, 65535, &mut f)
            .expect("frame");
        frames.push((ts, wire, f));
    }
    write_capture(&frames, pcapng, ByteOrder::Little, true)
}

fn reader(path: &Path, mmap: bool) -> CaptureReader {
    let options = ReadOptions::default().with_mmap(mmap);
    CaptureReader::new(input::open_path(path).expect("open"), options).expect("reader")
}

type Row = (u64, Option<i64>, u32, Vec<u8>);

fn row(p: &burstcore::packet::Packet<'_>) -> Row {
    (p.offset, p.ts_ns, p.wire_len, p.data.to_vec())
}

fn shrink(path: &Path, to: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open to truncate")
        .set_len(to)
        .expect("truncate");
}

fn is_shrank(e: &Error) -> bool {
    e.kind == ErrorKind::Io && e.reason.contains("shrank while it was being read")
}

#[test]
fn a_mapped_file_truncated_while_read_is_an_error_with_the_packets_before_it_intact() {
    assert!(
        ReadOptions::default().mmap,
        "plain files are mapped by default on Linux"
    );
    let dir = Scratch::new("shrink");
    for pcapng in [false, true] {
        let bytes = generate(12_000, pcapng);
        let len = bytes.len() as u64;
        // Into a page not reached yet (aligned and not), behind the reader, and within the
        // mapping's last page (no fault at all: only the file's length tells).
        for cut in [len / 2 / 4096 * 4096, len / 2 + 1234, 100_000, len - 100] {
            let ctx = format!("pcapng {pcapng}, cut at {cut} of {len}");
            let path = dir.join(format!("cut-{pcapng}-{cut}.cap"));
            std::fs::write(&path, &bytes).expect("write");
            let mut want = Vec::new();
            let mut r = reader(&path, false);
            while let Some(p) = r.next_packet().expect("intact") {
                want.push(row(&p));
            }

            let mut r = reader(&path, true);
            assert!(r.is_mapped(), "{ctx}");
            let (mut got, mut cut_done) = (Vec::new(), false);
            let outcome = loop {
                if !cut_done && r.position() > 200_000 {
                    shrink(&path, cut);
                    cut_done = true;
                }
                match r.next_packet() {
                    Ok(Some(p)) => got.push(row(&p)),
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            let err = outcome.expect_err(&ctx);
            assert!(is_shrank(&err), "{ctx}: {err}");
            assert!(err.offset.is_some(), "{ctx}");
            // The packets are the file's up to the page holding the cut: the rest of that page
            // reads as zeros (the kernel's, no fault), which may be framed as records before
            // the next page faults, or the end notices the file's length. The error follows.
            let intact = got.iter().zip(&want).take_while(|(g, w)| g == w).count();
            assert!(intact > 0, "{ctx}");
            let page_end = (cut + 1).next_multiple_of(4096);
            for g in &got[intact..] {
                assert!(
                    g.0 < page_end,
                    "{ctx}: a packet at {} after the cut's page",
                    g.0
                );
            }
            // Done after the error, as after any other.
            assert!(matches!(r.next_packet(), Ok(None)), "{ctx}");
            std::fs::remove_file(&path).expect("remove");
        }
    }
}

fn config() -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 100_000, 10_000_000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![1_000_000_000, 10_000_000_000])
        .with_by(vec![By::All])
        .with_reorder_horizon_ns(0)
        .with_late(LatePolicy::Error)
}

/// A scan whose progress callback truncates the file: sequentially the rest of the file is
/// read after the cut, so the error is certain; with two threads the chunks may be done by
/// then, and the scan is either that error or the intact file's exact result.
#[test]
fn a_scan_of_a_file_truncated_under_it_fails_cleanly() {
    let bytes = generate(200_000, false);
    let len = bytes.len() as u64;
    let dir = Scratch::new("shrink");
    // Inside a page (its zeros may be framed first) and at a page boundary (only the fault
    // tells).
    for (threads, to) in [1, 2]
        .into_iter()
        .flat_map(|t| [(t, len / 3), (t, len / 3 / 65536 * 65536)])
    {
        let path = dir.join(format!("scan-{threads}-{to}.pcap"));
        std::fs::write(&path, &bytes).expect("write");
        let want = pipeline::scan_threads(
            &mut [reader(&path, false)],
            config(),
            SizeKind::Wire,
            1,
            &mut |_| Ok(()),
        )
        .expect("intact scan");
        let mut cut = false;
        let got = pipeline::scan_threads(
            &mut [reader(&path, true)],
            config(),
            SizeKind::Wire,
            threads,
            &mut |_| {
                if !cut {
                    cut = true;
                    shrink(&path, to);
                }
                Ok(())
            },
        );
        assert!(cut, "threads {threads}: no progress reported");
        match got {
            Err(e) => assert!(is_shrank(&e), "threads {threads}, cut at {to}: {e}"),
            Ok(out) => {
                assert!(
                    threads > 1,
                    "the sequential scan read past the cut without error"
                );
                assert_eq!(out.0.envelope, want.0.envelope);
                assert_eq!(out.0.backlog, want.0.backlog);
            }
        }
        std::fs::remove_file(&path).expect("remove");
    }
}

/// The guard is installed (a mapped read happened first), then a mapping of burstcore's own
/// making is not what faults: a file mapped by the child itself, truncated, then read. The
/// child must die of SIGBUS as it would without burstcore, not hang or carry on.
#[test]
fn a_fault_in_a_foreign_mapping_still_kills() {
    use std::os::unix::process::ExitStatusExt;
    let (status, text) = run_child_test("foreign_fault_child", "BURSTCORE_FOREIGN_FAULT");
    assert!(
        text.contains("guard installed"),
        "the child did not run: {text}"
    );
    assert!(!text.contains("survived"), "{text}");
    assert_eq!(status.signal(), Some(7), "SIGBUS expected: {text}");
}

#[test]
#[ignore = "run by a_fault_in_a_foreign_mapping_still_kills"]
fn foreign_fault_child() {
    if std::env::var("BURSTCORE_FOREIGN_FAULT").is_err() {
        return;
    }
    let dir = Scratch::new("shrink");
    let ours = dir.join("ours.pcap");
    std::fs::write(&ours, generate(10, false)).expect("write");
    let mut r = reader(&ours, true);
    assert!(r.is_mapped());
    while r.next_packet().expect("read").is_some() {}
    eprintln!("guard installed");
    let theirs = dir.join("theirs.bin");
    std::fs::write(&theirs, vec![7u8; 1 << 16]).expect("write");
    let file = std::fs::File::open(&theirs).expect("open");
    // SAFETY: the point of the test is the fault this mapping raises once truncated.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("map");
    shrink(&theirs, 0);
    // The fault kills this process before any Drop runs: remove the files now (the mappings
    // outlive their names).
    drop(dir);
    let byte = unsafe { std::ptr::read_volatile(map.as_ptr().add(1 << 15)) };
    eprintln!("survived, read {byte}");
}
