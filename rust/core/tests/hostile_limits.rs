//! Hostile lengths and counts: every documented limit (docs/limits.md) turns into a clear error,
//! and memory never follows a length the input has not backed with bytes.
//!
//! Peak memory is measured with a counting allocator, per thread (tests run in parallel).

use burstcore::capture::{CaptureReader, Limits, ReadOptions};
use burstcore::engine::{Arrival, By, ScanConfig, Scanner};
use burstcore::input;
use burstcore::wire::Headers;
use burstcore::{ErrorKind, Limit};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;

struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(n: usize) {
    let _ = LIVE.try_with(|l| {
        let v = l.get() + n;
        l.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

fn note_free(n: usize) {
    let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(n)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_free(layout.size());
        note_alloc(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes allocated at the peak of `f`, above what was live when it started (this thread only).
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(|p| p.get()) - base)
}

const MIB: usize = 1 << 20;

// ---- hand-made pcapng (little-endian) ----

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len()) as u32;
    assert_eq!(len % 4, 0);
    let mut b = kind.to_le_bytes().to_vec();
    b.extend(len.to_le_bytes());
    b.extend(body);
    b.extend(len.to_le_bytes());
    b
}

fn shb() -> Vec<u8> {
    let mut body = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    body.extend(1u16.to_le_bytes());
    body.extend(0u16.to_le_bytes());
    body.extend((-1i64).to_le_bytes());
    block(0x0A0D_0D0A, &body)
}

fn idb_with(options: &[u8]) -> Vec<u8> {
    let mut body = 1u16.to_le_bytes().to_vec(); // Ethernet
    body.extend(0u16.to_le_bytes());
    body.extend(0u32.to_le_bytes());
    body.extend(options);
    block(1, &body)
}

fn epb(iface: u32, ts: u64, data: &[u8]) -> Vec<u8> {
    let mut body = iface.to_le_bytes().to_vec();
    body.extend(((ts >> 32) as u32).to_le_bytes());
    body.extend((ts as u32).to_le_bytes());
    body.extend((data.len() as u32).to_le_bytes());
    body.extend((data.len() as u32).to_le_bytes());
    body.extend(data);
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    block(6, &body)
}

fn pcap_header() -> Vec<u8> {
    let mut h = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    h.extend(2u16.to_le_bytes());
    h.extend(4u16.to_le_bytes());
    h.extend([0u8; 8]);
    h.extend(65535u32.to_le_bytes());
    h.extend(1u32.to_le_bytes());
    h
}

fn pcap_record(secs: u32, caplen: u32, wire: u32, data: &[u8]) -> Vec<u8> {
    let mut r = secs.to_le_bytes().to_vec();
    r.extend(0u32.to_le_bytes());
    r.extend(caplen.to_le_bytes());
    r.extend(wire.to_le_bytes());
    r.extend(data);
    r
}

struct Read {
    packets: usize,
    error: Option<burstcore::Error>,
    warnings: Vec<burstcore::Warning>,
}

fn read(bytes: Vec<u8>, opts: ReadOptions) -> Read {
    let n = bytes.len() as u64;
    let input = input::from_reader(Box::new(Cursor::new(bytes)), Some(n)).unwrap();
    let mut r = match CaptureReader::new(input, opts) {
        Ok(r) => r,
        Err(e) => {
            return Read {
                packets: 0,
                error: Some(e),
                warnings: vec![],
            }
        }
    };
    let mut packets = 0;
    let error = loop {
        match r.next_packet() {
            Ok(Some(_)) => packets += 1,
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    Read {
        packets,
        error,
        warnings: r.warnings().to_vec(),
    }
}

fn strict() -> ReadOptions {
    ReadOptions::default().with_strict(true)
}

#[test]
fn huge_pcapng_block_length_is_a_limit_error_without_allocation() {
    let mut f = shb();
    f.extend(idb_with(&[]));
    f.extend(epb(0, 1, b"abcd"));
    let at = f.len() as u64;
    // A block header claiming ~4 GiB, then nothing.
    f.extend(6u32.to_le_bytes());
    f.extend(0xFFFF_FFF0u32.to_le_bytes());
    f.extend([0u8; 24]);
    let (r, peak) = peak_during(|| read(f, ReadOptions::default()));
    let e = r.error.expect("an error");
    // A limit on the capture's structure, not on what is held or on the result.
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Capture))
    );
    assert_eq!(e.offset, Some(at));
    assert!(e.to_string().contains("max_block_len"), "{e}");
    assert!(e.to_string().contains(&format!("byte offset {at}")), "{e}");
    assert_eq!(
        r.packets, 1,
        "the packet before the bad block is still read"
    );
    assert!(peak < 12 * MIB, "peak {peak} bytes");
}

#[test]
fn block_length_within_the_limit_but_not_backed_by_bytes_allocates_little() {
    // 60 MiB claimed (under the 64 MiB default limit), 40 bytes present.
    for strictness in [false, true] {
        let mut f = shb();
        let at = f.len() as u64;
        f.extend(6u32.to_le_bytes());
        f.extend((60 * MIB as u32).to_le_bytes());
        f.extend([0u8; 32]);
        let opts = ReadOptions::default().with_strict(strictness);
        let (r, peak) = peak_during(|| read(f, opts));
        if strictness {
            let e = r.error.expect("strict read fails");
            assert_eq!(e.kind, ErrorKind::Truncated);
            assert_eq!(e.offset, Some(at));
        } else {
            assert!(r.error.is_none());
            assert_eq!(r.warnings.len(), 1);
            assert_eq!(r.warnings[0].kind, ErrorKind::Truncated);
            assert_eq!(r.warnings[0].offset, Some(at));
        }
        // The read buffer (256 KiB) plus small change: not the 60 MiB the header claims.
        assert!(peak < 12 * MIB, "peak {peak} bytes for a 68-byte file");
    }
}

#[test]
fn huge_pcap_caplen_is_a_limit_error_and_unbacked_caplen_allocates_little() {
    let mut f = pcap_header();
    f.extend(pcap_record(1, 4, 4, b"abcd"));
    let at = f.len() as u64;
    f.extend(pcap_record(2, u32::MAX, u32::MAX, b"xx"));
    let (r, peak) = peak_during(|| read(f, ReadOptions::default()));
    let e = r.error.expect("an error");
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Capture))
    );
    assert_eq!(e.offset, Some(at));
    assert_eq!(r.packets, 1);
    assert!(peak < 12 * MIB, "peak {peak}");

    let mut f = pcap_header();
    f.extend(pcap_record(2, 50 * MIB as u32, 60, b"xx"));
    let (r, peak) = peak_during(|| read(f, ReadOptions::default()));
    assert!(r.error.is_none());
    assert_eq!(r.warnings[0].kind, ErrorKind::Truncated);
    assert_eq!(r.warnings[0].offset, Some(24));
    assert!(peak < 12 * MIB, "peak {peak}");
}

#[test]
fn a_real_block_larger_than_the_read_buffer_is_still_read() {
    // The buffer grows with the bytes: a genuine 20 MiB packet (under the limit) reads fine.
    let data = vec![0x5a; 20 * MIB];
    let mut f = shb();
    f.extend(idb_with(&[]));
    f.extend(epb(0, 7, &data));
    f.extend(epb(0, 8, b"tail"));
    let r = read(f, ReadOptions::default());
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.packets, 2);
}

#[test]
fn configured_block_limit_applies_to_both_formats() {
    let limits = Limits::default().with_max_block_len(1024);
    let opts = ReadOptions::default()
        .with_strict(false)
        .with_limits(limits);
    let mut f = shb();
    f.extend(idb_with(&[]));
    f.extend(epb(0, 1, &[1u8; 2000]));
    let e = read(f, opts).error.expect("limit");
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Capture))
    );
    let mut f = pcap_header();
    f.extend(pcap_record(1, 2000, 2000, &[1u8; 2000]));
    let e = read(f, opts).error.expect("limit");
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Capture))
    );
    assert_eq!(e.offset, Some(24));
}

fn option(code: u16, value: &[u8]) -> Vec<u8> {
    let mut o = code.to_le_bytes().to_vec();
    o.extend((value.len() as u16).to_le_bytes());
    o.extend(value);
    while !o.len().is_multiple_of(4) {
        o.push(0);
    }
    o
}

#[test]
fn too_many_options_in_one_block() {
    // The default limit (4096) and one option past it; each option is a 4-byte empty comment.
    at_and_past(Limits::default().max_options, "max_options", |n| {
        let opts: Vec<u8> = (0..n).flat_map(|_| option(1, b"")).collect();
        let mut f = shb();
        let at = f.len() as u64;
        f.extend(idb_with(&opts));
        (f, at)
    });
}

/// A file built by `build(n)` (which says where the block of the `n`th item starts) reads its
/// one packet at `max` items, and stops with a `limit` error at that block at `max + 1`.
fn at_and_past(max: u32, limit: &str, build: impl Fn(usize) -> (Vec<u8>, u64)) {
    let max = max as usize;
    for (n, ok) in [(max, true), (max + 1, false)] {
        let (mut f, at) = build(n);
        f.extend(epb(0, 1, b"abcd"));
        let r = read(f, ReadOptions::default());
        if ok {
            assert!(r.error.is_none(), "{:?}", r.error);
            assert_eq!(r.packets, 1);
        } else {
            let e = r.error.expect("limit");
            assert_eq!(
                (e.kind, e.limit),
                (ErrorKind::LimitExceeded, Some(Limit::Capture))
            );
            assert_eq!(e.offset, Some(at));
            assert!(e.reason.contains(limit), "{e}");
        }
    }
}

#[test]
fn an_option_longer_than_its_block_is_corrupt() {
    let mut bad = 2u16.to_le_bytes().to_vec(); // if_name
    bad.extend(0xFFF0u16.to_le_bytes());
    bad.extend(b"eth0");
    let mut f = shb();
    let at = f.len() as u64;
    f.extend(idb_with(&bad));
    let e = read(f, ReadOptions::default()).error.expect("corrupt");
    assert_eq!(e.kind, ErrorKind::Corrupt);
    assert_eq!(e.offset, Some(at));
    assert!(e.reason.contains("overruns"), "{e}");
    // So is an end of options that claims more than its block holds, as tshark reads it ("Not
    // enough data to handle option"); one that fits ends the options as before.
    for (len, corrupt) in [(0xFFFFu16, true), (0, false), (4, false)] {
        let mut end = 0u16.to_le_bytes().to_vec();
        end.extend(len.to_le_bytes());
        end.extend([0u8; 4]);
        let mut f = shb();
        let at = f.len() as u64;
        f.extend(idb_with(&end));
        f.extend(epb(0, 1, b"abcd"));
        let r = read(f, ReadOptions::default());
        match r.error {
            Some(e) => {
                assert!(corrupt, "length {len}: {e}");
                assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, Some(at)));
            }
            None => assert!(!corrupt && r.packets == 1, "length {len}"),
        }
    }
}

#[test]
fn too_many_interfaces() {
    // The default limit, counted over the whole file; one IDB past it fails at that IDB.
    let max = Limits::default().max_interfaces as usize;
    let one = idb_with(&[]);
    let mut f = shb();
    for _ in 0..max {
        f.extend(&one);
    }
    f.extend(epb(max as u32 - 1, 1, b"last"));
    let at = f.len() as u64;
    f.extend(&one);
    let (r, peak) = peak_during(|| read(f, ReadOptions::default()));
    let e = r.error.expect("limit");
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Capture))
    );
    assert_eq!(e.offset, Some(at));
    assert!(e.reason.contains("max_interfaces"), "{e}");
    assert_eq!(r.packets, 1);
    // Interface tables for 65,536 interfaces: bounded by the limit, far below the file's
    // claimed sizes; a generous ceiling that still catches per-interface buffers.
    assert!(peak < 64 * MIB, "peak {peak}");
}

#[test]
fn absurd_if_tsresol_is_corrupt_not_a_wrong_clock() {
    // The resolution is named as users write it, not as the enum's Debug form (`Pow10(20)`).
    for (tsresol, shown) in [
        (20u8, "1e-20 s"),
        (0x7f, "1e-127 s"),
        (0x80 | 64, "2^-64 s"),
        (0xff, "2^-127 s"),
    ] {
        let mut f = shb();
        let at = f.len() as u64;
        f.extend(idb_with(&option(9, &[tsresol])));
        f.extend(epb(0, 1, b"abcd"));
        let e = read(f, ReadOptions::default()).error.expect("corrupt");
        assert_eq!(e.kind, ErrorKind::Corrupt, "tsresol {tsresol:#x}");
        assert_eq!(e.offset, Some(at));
        assert!(
            e.reason
                .contains(&format!("resolution {shown} (if_tsresol)")),
            "{e}"
        );
        assert!(!e.reason.contains("Pow"), "{e}");
    }
    // The finest supported resolutions still read.
    for tsresol in [19u8, 0x80 | 63] {
        let mut f = shb();
        f.extend(idb_with(&option(9, &[tsresol])));
        f.extend(epb(0, 1, b"abcd"));
        let r = read(f, strict());
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.packets, 1);
    }
}

#[test]
fn too_many_groups_is_a_limit_error() {
    let config = ScanConfig::default()
        .with_by(vec![By::Interface])
        .with_max_groups(1000);
    let mut s = Scanner::new(config).unwrap();
    let mut err = None;
    for i in 0..2000u32 {
        let a = Arrival::new(i64::from(i), 100)
            .with_interface(i)
            .with_headers(Headers::default());
        if let Err(e) = s.push(&a) {
            err = Some((i, e));
            break;
        }
    }
    // The reorder buffer may hold the 1001st packet back for up to the horizon; a flush sees it.
    let e = match err {
        Some((i, e)) => {
            assert!(i >= 1000, "failed at packet {i}, before the limit");
            e
        }
        None => s.finish().expect_err("limit at finish"),
    };
    // A limit on the size of the result: the capture is fine.
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Result))
    );
    assert!(e.reason.contains("1000"), "{e}");
    assert!(e.reason.contains("max_groups"), "{e}");
}

/// A few kB of zstd can declare millions of empty sections (28 bytes each), every one kept for
/// `sections()`: past `max_sections` the read stops with a limit error at that section.
#[test]
fn too_many_sections() {
    at_and_past(Limits::default().max_sections, "max_sections", |n| {
        let f: Vec<u8> = (0..n).flat_map(|_| shb()).collect();
        let at = (f.len() - shb().len()) as u64;
        let mut f = f;
        f.extend(idb_with(&[]));
        (f, at)
    });
}

/// String options are kept to 256 bytes: 65,536 interfaces with two 64 KiB strings each would
/// otherwise hold 8 GiB.
#[test]
fn long_option_strings_are_cut() {
    let long = "é".repeat(40_000); // 80,000 bytes: past an option's 65,535, so 32,000 of them
    let value = &long.as_bytes()[..64_001]; // a character cut in two at the end, as a writer may
    let mut f = shb();
    f.extend(idb_with(
        &[option(2, value), option(3, b"eth0 uplink"), option(0, b"")].concat(),
    ));
    f.extend(epb(0, 1, b"abcd"));
    let n = f.len() as u64;
    let input = input::from_reader(Box::new(Cursor::new(f)), Some(n)).unwrap();
    let mut r = CaptureReader::new(input, ReadOptions::default()).unwrap();
    while r.next_packet().unwrap().is_some() {}
    let ifc = &r.interfaces()[0];
    let name = ifc.name.as_deref().expect("name");
    assert_eq!(name, format!("{}…", "é".repeat(128)));
    assert_eq!(ifc.description.as_deref(), Some("eth0 uplink"));
}
