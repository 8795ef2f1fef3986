//! `ReadOptions::mmap` must be invisible except for speed: a plain file read through a memory
//! mapping gives exactly the packets, offsets, errors, warnings, statistics, interfaces and
//! sections of the same file read through `read()`, on generated captures and on damaged copies
//! (cut inside a record, corrupt lengths, random damage), strict or not; and anything that
//! cannot be mapped (gzip, zstd, a reader, a special file, an empty file) is read buffered with
//! the same result. The buffered read is the oracle.
//!
//! The same holds for the chunk readers of a split file (`SplitPlan` with `mmap`, which share one
//! mapping): every chunk, at any range, frames exactly what the buffered chunk reader frames,
//! and a parallel scan of a mapped file really reads its chunks through the mapping.

use burstcore::capture::split::{chunks_line_up, mapped_chunk_readers, SplitPlan};
use burstcore::capture::TsResolution;
use burstcore::capture::{ByteOrder, CaptureReader, Interface, ReadOptions, ReadStats, Section};
use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::error::Error;
use burstcore::error::ErrorKind;
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::io::{Cursor, Write};
use std::path::Path;

mod engine_util;
mod reader_util;
#[cfg(target_os = "linux")]
mod resident;
mod scratch;
use engine_util::Rng;
use reader_util::{read_opened, run_child_test, shared_dir, write_capture, Read};
#[cfg(target_os = "linux")]
use resident::{cache_afresh, resident_kib};
use scratch::Scratch;

/// Everything a reader of `input` reports, and whether it read through a mapping (kept apart, so
/// that a mapped and a buffered read compare equal when they agree on everything else).
fn read_input(input: burstcore::error::Result<input::Input>, options: ReadOptions) -> (Read, bool) {
    let mut read = read_opened(input, options);
    let mapped = std::mem::take(&mut read.mapped);
    (read, mapped)
}

fn options(strict: bool, mmap: bool) -> ReadOptions {
    ReadOptions::default().with_strict(strict).with_mmap(mmap)
}

/// Read `path` buffered and mapped (strict and not); both must agree. Returns the buffered
/// outcome (non-strict) and whether the mapped read really used a mapping.
fn both(path: &Path, ctx: &str) -> (Read, bool) {
    let mut first = None;
    let mut mapped_any = false;
    for strict in [false, true] {
        let (buffered, was_mapped) = read_input(input::open_path(path), options(strict, false));
        assert!(!was_mapped, "{ctx}: mapped without the option");
        let (mapped, was_mapped) = read_input(input::open_path(path), options(strict, true));
        assert_eq!(mapped, buffered, "{ctx}, strict {strict}");
        mapped_any |= was_mapped;
        first.get_or_insert(buffered);
    }
    (first.expect("read twice"), mapped_any)
}

fn frame(rng: &mut Rng, wire: u32, snaplen: u32) -> Vec<u8> {
    let mut f = Vec::new();
    let (s, d) = (rng.below(4) as u16, rng.below(4) as u16);
    TcpSegment::between_hosts(s, d, 5000, 6000)
        .write_frame(wire, snaplen, &mut f)
        .expect("frame");
    f
}

fn gen_pcap(rng: &mut Rng, n: usize) -> Vec<u8> {
    let order = if rng.below(2) == 0 {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    let nanos = rng.below(2) == 0;
    gen_pcap_as(rng, n, order, nanos)
}

fn gen_pcap_as(rng: &mut Rng, n: usize, byte_order: ByteOrder, nanos: bool) -> Vec<u8> {
    let snaplen = [65535, 96][rng.below(2) as usize];
    let opts = PcapOptions::default()
        .with_byte_order(byte_order)
        .with_nanos(nanos)
        .with_linktype(1)
        .with_snaplen(snaplen)
        .with_fcs_len(0);
    let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..n {
        ts += rng.below(50_000) as i64;
        let wire = 66 + rng.below(1449) as u32;
        let f = frame(rng, wire, snaplen);
        w.write_packet(ts, wire, &f).expect("packet");
    }
    w.finish().expect("finish")
}

fn gen_pcapng(rng: &mut Rng, n: usize) -> Vec<u8> {
    let sections = 1 + rng.below(2) as usize;
    gen_pcapng_as(rng, n, None, sections)
}

/// `order`: of every section, else random per section.
fn gen_pcapng_as(rng: &mut Rng, n: usize, order: Option<ByteOrder>, sections: usize) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new());
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..sections {
        let order = order.unwrap_or(if rng.below(2) == 0 {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        });
        w.section(order, Some("mmap test")).expect("shb");
        let res = [TsResolution::Pow10(6), TsResolution::Pow10(9)][rng.below(2) as usize];
        w.interface(1, 0, res, 0, Some("eth0")).expect("idb");
        w.interface(1, 128, res, 0, Some("eth1")).expect("idb");
        for _ in 0..n {
            ts += rng.below(50_000) as i64;
            let kind = rng.below(20);
            // Simple packets belong to interface 0 (no snaplen).
            let iface = if kind == 0 { 0 } else { rng.below(2) as u32 };
            let wire = 66 + rng.below(1449) as u32;
            let f = frame(rng, wire, if iface == 1 { 128 } else { 0 });
            match kind {
                0 => w.simple_packet(wire, &f).expect("spb"),
                1 => w
                    .interface_statistics(iface, 0, &Default::default())
                    .expect("isb"),
                2 => w.custom(true, 32473, &f[..8]).expect("custom"),
                _ => w.enhanced_packet(iface, ts, wire, &f).expect("epb"),
            }
        }
    }
    w.finish().expect("finish")
}

/// Offsets of the records (pcap) or blocks (pcapng) after the file header.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let rd = |at: usize, big: bool| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let mut out = Vec::new();
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        let mut at = 0;
        let mut big = false;
        while let Some(kind) = rd(at, false) {
            if kind == 0x0a0d_0d0a {
                big = bytes.get(at + 8..at + 12) == Some(&[0x1a, 0x2b, 0x3c, 0x4d][..]);
            }
            let Some(len) = rd(at + 4, big) else { break };
            out.push(at);
            at += len as usize;
        }
    } else {
        let big = bytes.starts_with(&[0xa1, 0xb2]);
        let mut at = 24;
        while let Some(caplen) = rd(at + 8, big) {
            out.push(at);
            at += 16 + caplen as usize;
        }
    }
    out
}

#[test]
fn mapped_reads_equal_buffered_reads_on_generated_and_damaged_files() {
    let dir = Scratch::new("mmap");
    let mut rng = Rng(0x3a9);
    let (mut truncated, mut corrupt, mut mapped, mut packets) = (0, 0, 0, 0);
    for case in 0..40 {
        let pcapng = case % 2 == 0;
        // Some files far larger than the 256 KiB read buffer, so that the buffered read compacts
        // and refills while the mapped one never does.
        let n = if case % 5 == 0 {
            6000
        } else {
            1 + rng.below(300) as usize
        };
        let good = if pcapng {
            gen_pcapng(&mut rng, n)
        } else {
            gen_pcap(&mut rng, n)
        };
        let offsets = record_offsets(&good);
        assert!(offsets.len() > 1, "case {case}: no records found");
        let mut variants: Vec<(String, Vec<u8>)> = vec![("intact".into(), good.clone())];
        variants.extend(damaged(&mut rng, &good, pcapng, &offsets, 3));
        // And a cut inside the file header.
        variants.push((
            "cut in header".into(),
            good[..1 + rng.below(20) as usize].to_vec(),
        ));
        for (i, (what, bytes)) in variants.into_iter().enumerate() {
            let path = dir.join(format!("case{case}-{i}.cap"));
            std::fs::write(&path, &bytes).expect("write");
            let ctx = format!(
                "case {case} ({}), {what}",
                if pcapng { "pcapng" } else { "pcap" }
            );
            let (out, was_mapped) = both(&path, &ctx);
            mapped += usize::from(was_mapped);
            packets += out.packets.len();
            truncated += usize::from(out.warnings.iter().any(|w| w.kind == ErrorKind::Truncated));
            corrupt += usize::from(
                out.opened
                    && matches!(
                        &out.error,
                        Some(e) if matches!(e.kind, ErrorKind::Corrupt | ErrorKind::LimitExceeded)
                    ),
            );
            std::fs::remove_file(&path).expect("remove");
        }
    }
    // The cases must reach the mapping, the packets, truncation and corrupt lengths.
    assert!(mapped >= 190, "mapped {mapped} times");
    assert!(packets > 50_000, "{packets} packets");
    assert!(truncated >= 40, "{truncated} truncation warnings");
    assert!(corrupt >= 30, "{corrupt} corrupt-length errors");
}

/// Files of full frames, several MiB long: the mapped reader chases their records ahead of the
/// framing with several cursors, each from a guessed start (`capture/chase.rs`), and takes
/// none of the guesses for a record. Intact, cut, with a bad length, and with many random
/// bytes (which spoil guesses and break chains), in both byte orders: the mapped read equals
/// the buffered one, packet for packet, warning for warning, error for error.
#[test]
fn mapped_reads_of_large_records_equal_buffered_reads() {
    let dir = Scratch::new("mmap-large");
    let mut rng = Rng(0x51d);
    let mut packets = 0;
    for case in 0..8 {
        let pcapng = case % 2 == 0;
        let order = if case % 4 < 2 {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        };
        let mut ts = 1_700_000_000_000_000_000i64;
        let frames: Vec<(i64, u32, Vec<u8>)> = (0..4000)
            .map(|_| {
                ts += rng.below(20_000) as i64;
                let wire = [1514, 1514, 66, 66 + rng.below(1449) as u32][rng.below(4) as usize];
                (ts, wire, frame(&mut rng, wire, 65535))
            })
            .collect();
        let good = write_capture(&frames, pcapng, order, case % 3 == 0);
        assert!(good.len() > 3 << 20, "case {case}: {} bytes", good.len());
        let offsets = record_offsets(&good);
        let mut variants: Vec<(String, Vec<u8>)> = vec![("intact".into(), good.clone())];
        variants.extend(damaged(&mut rng, &good, pcapng, &offsets, 500));
        for (i, (what, bytes)) in variants.into_iter().enumerate() {
            let path = dir.join(format!("large{case}-{i}.cap"));
            std::fs::write(&path, &bytes).expect("write");
            let ctx = format!("large case {case} (pcapng {pcapng}), {what}");
            let (out, was_mapped) = both(&path, &ctx);
            assert!(was_mapped, "{ctx}");
            if what == "intact" {
                assert_eq!(out.packets.len(), 4000, "{ctx}");
                assert!(out.error.is_none() && out.warnings.is_empty(), "{ctx}");
            }
            packets += out.packets.len();
            std::fs::remove_file(&path).expect("remove");
        }
    }
    assert!(packets > 8 * 4000, "{packets} packets");
}

/// Damaged copies of `good`, whose records start at `offsets` (more than one): cut inside a
/// record (header or body); a length that cannot be right (pcapng total length not a multiple
/// of 4 or too big, pcap captured length above the limit); `flips` random bytes changed.
fn damaged(
    rng: &mut Rng,
    good: &[u8],
    pcapng: bool,
    offsets: &[usize],
    flips: usize,
) -> Vec<(String, Vec<u8>)> {
    let pick = |rng: &mut Rng| offsets[1 + rng.below(offsets.len() as u64 - 1) as usize];
    let mut variants = Vec::new();
    let at = pick(rng) + 1 + rng.below(20) as usize;
    variants.push((
        format!("cut at {at}"),
        good[..at.min(good.len() - 1)].to_vec(),
    ));
    let at = pick(rng);
    let mut bad = good.to_vec();
    let field = if pcapng { at + 4 } else { at + 8 };
    let value: u32 = [13, 0xffff_fff0, 70 << 20][rng.below(3) as usize];
    let raw = if bytes_big(good, pcapng, at) {
        value.to_be_bytes()
    } else {
        value.to_le_bytes()
    };
    bad[field..field + 4].copy_from_slice(&raw);
    variants.push((format!("bad length at {at}"), bad));
    let mut bad = good.to_vec();
    for _ in 0..flips {
        let i = rng.below(bad.len() as u64) as usize;
        bad[i] = rng.next() as u8;
    }
    variants.push(("random bytes".into(), bad));
    variants
}

/// The byte order of the block at `at` (pcapng) or of the file (pcap).
fn bytes_big(bytes: &[u8], pcapng: bool, at: usize) -> bool {
    if !pcapng {
        return bytes.starts_with(&[0xa1, 0xb2]);
    }
    // The byte-order magic of the last section header before `at`.
    record_offsets(bytes)
        .into_iter()
        .take_while(|&o| o <= at)
        .filter(|&o| bytes.get(o..o + 4) == Some(&[0x0a, 0x0d, 0x0d, 0x0a][..]))
        .last()
        .is_some_and(|o| bytes.get(o + 8..o + 12) == Some(&[0x1a, 0x2b, 0x3c, 0x4d][..]))
}

#[test]
fn what_cannot_be_mapped_is_read_buffered_with_the_same_result() {
    let dir = Scratch::new("mmap");
    let mut rng = Rng(77);
    let plain = gen_pcapng(&mut rng, 2000);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let zst = zstd::stream::encode_all(Cursor::new(&plain), 1).expect("zstd");
    let (want, _) = read_input(
        input::from_reader(Box::new(Cursor::new(plain.clone())), None),
        options(false, false),
    );
    assert!(want.packets.len() > 1000);
    for (name, bytes) in [("gz", &gz), ("zst", &zst)] {
        let path = dir.join(format!("fallback.pcapng.{name}"));
        std::fs::write(&path, bytes).expect("write");
        let (got, was_mapped) = read_input(input::open_path(&path), options(false, true));
        assert!(!was_mapped, "{name} file mapped");
        assert_eq!(got, want, "{name}");
        // A compressed file cut short: the same warning as without the option.
        std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
        let (cut, was_mapped) = read_input(input::open_path(&path), options(false, true));
        assert!(!was_mapped);
        assert_eq!(
            cut,
            read_input(input::open_path(&path), options(false, false)).0
        );
        assert!(
            cut.warnings.iter().any(|w| w.kind == ErrorKind::Truncated),
            "{name}"
        );
    }
    // A reader (stdin, a socket, a Python file object): nothing to map.
    let (got, was_mapped) = read_input(
        input::from_reader(Box::new(Cursor::new(plain.clone())), None),
        options(false, true),
    );
    assert!(!was_mapped);
    assert_eq!(got, want);
    // A special file and an empty file: the same error either way.
    let empty = dir.join("empty.pcap");
    std::fs::write(&empty, b"").expect("write");
    for path in [Path::new("/dev/null"), empty.as_path()] {
        let (a, _) = read_input(input::open_path(path), options(false, false));
        let (b, was_mapped) = read_input(input::open_path(path), options(false, true));
        assert!(!was_mapped);
        assert_eq!(a, b, "{}", path.display());
        assert!(!a.opened);
        assert_eq!(
            a.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::NotACapture)
        );
    }
    // A file that is not a capture at all: same error, same offset.
    let junk = dir.join("junk.pcap");
    std::fs::write(&junk, vec![0x42u8; 5000]).expect("write");
    let (a, _) = both(&junk, "junk");
    assert!(!a.opened && a.error.is_some());
}

#[test]
fn scans_of_a_mapped_file_equal_buffered_scans() {
    let dir = Scratch::new("mmap");
    let mut rng = Rng(5);
    for (i, pcapng) in [(0, true), (1, false)] {
        let bytes = if pcapng {
            gen_pcapng(&mut rng, 20_000)
        } else {
            gen_pcap(&mut rng, 20_000)
        };
        let path = dir.join(format!("scan{i}.cap"));
        std::fs::write(&path, bytes).expect("write");
        // By pair, a parallel scan shares out the metrics; by all and interface, it splits the
        // file into time chunks.
        for by in [
            vec![By::All, By::Pair, By::Interface],
            vec![By::All, By::Interface],
        ] {
            let config = scan_config(by);
            let want = scan_file(&path, &config, false, 1);
            assert!(want.1.counted > 10_000);
            for threads in [1, 2, 3] {
                for mmap in [false, true] {
                    let got = scan_file(&path, &config, mmap, threads);
                    let ctx = format!("{i} {threads} mmap {mmap} {:?}", config.by);
                    assert_eq!(got.0.envelope, want.0.envelope, "{ctx}");
                    assert_eq!(got.0.backlog, want.0.backlog, "{ctx}");
                    assert_eq!(got.0.series, want.0.series, "{ctx}");
                    assert_eq!(got.0.groups, want.0.groups, "{ctx}");
                    assert_eq!(got.1, want.1, "{ctx}");
                }
            }
        }
        // The chunks such a scan reads line up, and are mapped.
        let plan = SplitPlan::new(&path, options(false, true))
            .expect("plan")
            .expect("splittable");
        assert!(plan.is_mapped());
        let mut seams = Vec::new();
        for (from, to) in plan.ranges(2) {
            let mut c = plan.open(from, to).expect("open").expect("boundary");
            assert!(c.is_mapped() && c.reader().is_mapped());
            while c.next_packet().expect("read").is_some() {}
            seams.push(c.seam());
        }
        assert!(chunks_line_up(&plan, &seams), "{i}");
    }
}

fn scan_config(by: Vec<By>) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 100_000, 10_000_000, 1_000_000_000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![1_000_000_000, 10_000_000_000])
        .with_bins_ns(vec![1_000_000])
        .with_by(by)
        .with_reorder_horizon_ns(0)
        .with_late(LatePolicy::Error)
}

fn scan_file(
    path: &Path,
    config: &ScanConfig,
    mmap: bool,
    threads: usize,
) -> (burstcore::engine::ScanOutput, pipeline::Accounting) {
    let reader = CaptureReader::new(input::open_path(path).expect("open"), options(false, mmap))
        .expect("reader");
    assert_eq!(reader.is_mapped(), mmap);
    pipeline::scan_threads(
        &mut [reader],
        config.clone(),
        SizeKind::Wire,
        threads,
        &mut |_| Ok(()),
    )
    .expect("scan")
}

/// Bytes this process has read through `read()` and the like (Linux), `None` if unknown.
fn bytes_read() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A 2-thread scan by time chunks of a mapped file opens its chunk readers on the mapping and
/// reads (almost) nothing through `read()`; the buffered one reads the whole file. Measured in a
/// child process running only [`chunk_scan_read_probe`], as the counters are the process's.
#[test]
fn a_parallel_scan_of_a_mapped_file_reads_its_chunks_from_the_mapping() {
    if bytes_read().is_none() {
        eprintln!("/proc/self/io not readable: skipped");
        return;
    }
    let (status, text) = run_child_test("chunk_scan_read_probe", "BURSTCORE_CHUNK_PROBE");
    assert!(status.success(), "{text}");
    assert!(text.contains("probe done"), "the probe did not run: {text}");
}

#[test]
#[ignore = "run by a_parallel_scan_of_a_mapped_file_reads_its_chunks_from_the_mapping"]
fn chunk_scan_read_probe() {
    if std::env::var("BURSTCORE_CHUNK_PROBE").is_err() {
        return;
    }
    // Files of a few MB, cut into chunks all the same.
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let dir = Scratch::new("mmap");
    let mut rng = Rng(41);
    for (i, bytes) in [
        gen_pcap(&mut rng, 30_000),
        gen_pcapng_as(&mut rng, 30_000, None, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("probe{i}.cap"));
        std::fs::write(&path, &bytes).expect("write");
        let size = bytes.len() as u64;
        let config = scan_config(vec![By::All, By::Interface]);
        let want = scan_file(&path, &config, false, 1);
        for mmap in [false, true] {
            let (read0, chunks0) = (bytes_read().expect("rchar"), mapped_chunk_readers());
            let got = scan_file(&path, &config, mmap, 2);
            let (read, chunks) = (
                bytes_read().expect("rchar") - read0,
                mapped_chunk_readers() - chunks0,
            );
            eprintln!("file {i} ({size} bytes), mmap {mmap}: {read} bytes read, {chunks} mapped chunk readers");
            assert_eq!(got.0.envelope, want.0.envelope);
            assert_eq!(got.0.backlog, want.0.backlog);
            assert_eq!(got.1, want.1);
            if mmap {
                // Only the header and first packet of the sequential reader handed to the scan,
                // which the plan reads again from its mapping: nothing of the chunks.
                assert!(chunks >= 2, "{chunks} mapped chunk readers");
                assert!(read < size / 20, "{read} of {size} bytes read");
            } else {
                // The probe sees the reads of a buffered scan: the chunks (or a sequential
                // read) take the whole file, plus the plan's header reads and boundary search.
                assert_eq!(chunks, 0);
                assert!(read >= size, "{read} of {size} bytes read");
            }
        }
        std::fs::remove_file(&path).expect("remove");
    }
    eprintln!("probe done");
}

/// A scan given far more threads than its file is worth cuts it into few chunks: none for a
/// file under two chunks' worth ([`burstcore::chunked::MIN_CHUNK_BYTES`]), at most one per
/// core and per such worth above that. Given 1000 threads, a 46 MB file had been cut into 1000
/// chunks, 27 times as slow as one thread. `read_packets` (`read_table_threads`) cuts its byte
/// ranges the same way, none under [`burstcore::table::split::MIN_RANGE_BYTES`] (it had read in
/// as many as threads), and a scan that shares its metrics
/// out among threads (a stream) starts no more threads than cores (it had started one per
/// window, rate and bin, up to the threads asked). Counted in a child process running only
/// [`few_chunks_probe`], as the counts of chunk readers and threads are the process's.
#[test]
fn many_threads_on_a_small_file_cut_it_into_few_chunks() {
    let (status, text) = run_child_test("few_chunks_probe", "BURSTCORE_FEW_CHUNKS_PROBE");
    assert!(status.success(), "{text}");
    assert!(text.contains("probe done"), "the probe did not run: {text}");
}

#[test]
#[ignore = "run by many_threads_on_a_small_file_cut_it_into_few_chunks"]
fn few_chunks_probe() {
    if std::env::var("BURSTCORE_FEW_CHUNKS_PROBE").is_err() {
        return;
    }
    let dir = Scratch::new("mmap");
    // Full frames: records of small ones would be split by function on two cores, not cut
    // (`chunked::by_function`).
    let opts = PcapOptions::default().with_snaplen(1514);
    let f = frame(&mut Rng(43), 1514, 1514);
    let least = burstcore::chunked::MIN_CHUNK_BYTES;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    // Under one chunk's worth, just under two, and five and a half.
    for bytes in [least / 3, 2 * least - 4096, 5 * least + least / 2] {
        let path = dir.join("few.pcap");
        let mut w = PcapWriter::new(
            std::io::BufWriter::new(std::fs::File::create(&path).expect("create")),
            opts,
        )
        .expect("header");
        for i in 0..(bytes - 24) / (16 + f.len() as u64) {
            w.write_packet(1_700_000_000_000_000_000 + 700 * i as i64, 1514, &f)
                .expect("packet");
        }
        w.finish().expect("finish").flush().expect("flush");
        let config = scan_config(vec![By::All]);
        let want = scan_file(&path, &config, true, 1);
        for threads in [2, 1000] {
            let before = mapped_chunk_readers();
            let got = scan_file(&path, &config, true, threads);
            let chunks = mapped_chunk_readers() - before;
            eprintln!("{bytes} bytes, {threads} threads: {chunks} chunk readers");
            assert_eq!(got.0.envelope, want.0.envelope);
            assert_eq!(got.0.backlog, want.0.backlog);
            assert_eq!(got.1, want.1);
            let by_size = bytes / least;
            if by_size < 2 || cores < 2 {
                assert_eq!(chunks, 0, "{bytes} bytes, {threads} threads");
            } else {
                let most = (threads as u64).min(cores).min(by_size);
                assert!(
                    chunks >= 2 && chunks <= most,
                    "{bytes} bytes, {threads} threads: {chunks} chunks, {most} at most"
                );
            }
            let open = || {
                CaptureReader::new(input::open_path(&path).expect("open"), options(false, true))
                    .expect("reader")
            };
            let tables =
                burstcore::table::read_table_threads(&mut open(), None, None, threads, &mut |_| {
                    Ok(())
                })
                .expect("read");
            let by_size = bytes / burstcore::table::split::MIN_RANGE_BYTES;
            let want = (threads as u64).min(cores).min(by_size).max(1) as usize;
            assert_eq!(
                tables.len(),
                want,
                "{bytes} bytes, {threads} threads: ranges"
            );
        }
        std::fs::remove_file(&path).expect("remove");
    }
    // A stream cannot be cut: its 40 windows are shared out among threads, no more than cores.
    // The reading thread reports progress once it has read everything, before the workers
    // finish: the threads the process has then are all it started.
    let config = scan_config(vec![By::All]).with_windows_ns((1..=40).map(|k| 1_000 * k).collect());
    let bytes = gen_pcap(&mut Rng(44), 20_000);
    let threads_now = || {
        std::fs::read_dir("/proc/self/task")
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = threads_now();
    let stream = |threads| {
        let input = input::from_reader(Box::new(Cursor::new(bytes.clone())), None).expect("input");
        let mut readers = [CaptureReader::new(input, ReadOptions::default()).expect("reader")];
        let mut most = 0;
        let got = pipeline::scan_threads(
            &mut readers,
            config.clone(),
            SizeKind::Wire,
            threads,
            &mut |_| {
                most = most.max(threads_now());
                Ok(())
            },
        )
        .expect("scan");
        (got, most)
    };
    let (want, _) = stream(1);
    let (got, most) = stream(1000);
    assert_eq!(got.0.envelope, want.0.envelope);
    assert_eq!(got.0.backlog, want.0.backlog);
    if before > 0 {
        // The calling thread is one of the cores' worth.
        let started = most.saturating_sub(before);
        assert!(
            started < cores as usize,
            "{started} threads started for a stream, {cores} cores"
        );
        assert!(
            cores < 2 || started >= 1,
            "the stream's metrics were not shared out"
        );
    }
    eprintln!("probe done");
}

/// A packet's offset, timestamp, interface, original length and captured bytes.
type Row = (u64, Option<i64>, u32, u32, Vec<u8>);

/// Everything one chunk reader reports.
#[derive(Debug, PartialEq)]
struct ChunkRead {
    packets: Vec<Row>,
    error: Option<Error>,
    warnings: Vec<burstcore::Warning>,
    stats: ReadStats,
    interfaces: Vec<Interface>,
    sections: Vec<Section>,
    position: u64,
    seam: Option<(u64, u64)>,
}

/// Read the chunk `from..to` of `plan` to its end; `Ok(None)` when it found no boundary.
fn read_chunk(
    plan: &SplitPlan,
    from: u64,
    to: u64,
) -> burstcore::error::Result<Option<(ChunkRead, bool)>> {
    let Some(mut c) = plan.open(from, to)? else {
        return Ok(None);
    };
    let mut out = ChunkRead {
        packets: Vec::new(),
        error: None,
        warnings: Vec::new(),
        stats: ReadStats::default(),
        interfaces: Vec::new(),
        sections: Vec::new(),
        position: 0,
        seam: None,
    };
    loop {
        match c.next_packet() {
            Ok(Some(p)) => {
                out.packets
                    .push((p.offset, p.ts_ns, p.interface, p.wire_len, p.data.to_vec()))
            }
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    let r = c.reader();
    out.warnings = r.warnings().to_vec();
    out.interfaces = r.interfaces().to_vec();
    out.sections = r.sections().to_vec();
    out.stats = r.stats().clone();
    out.position = r.position();
    out.seam = c.seam();
    Ok(Some((out, c.is_mapped())))
}

/// Tallies of what the chunk comparisons reached.
#[derive(Default, Debug)]
struct Reached {
    chunks: usize,
    packets: usize,
    errors: usize,
    warnings: usize,
    no_boundary: usize,
    lined_up: usize,
    refused: usize,
}

/// Split `path` buffered and mapped and compare: the plans, then the chunks of `k` equal
/// ranges for k in 2..=7, and chunks at random ranges (mostly starting and ending inside
/// records).
fn compare_splits(path: &Path, rng: &mut Rng, ctx: &str, reached: &mut Reached) {
    let buffered = SplitPlan::new(path, options(false, false));
    let mapped = SplitPlan::new(path, options(false, true));
    let (buffered, mapped) = match (buffered, mapped) {
        (Ok(Some(b)), Ok(Some(m))) => (b, m),
        (b, m) => {
            assert_eq!(
                b.map(|p| p.is_some()),
                m.map(|p| p.is_some()),
                "{ctx}: plans differ"
            );
            return;
        }
    };
    assert!(!buffered.is_mapped());
    assert!(mapped.is_mapped(), "{ctx}: a regular file did not map");
    assert_eq!(mapped.data_start(), buffered.data_start(), "{ctx}");
    assert_eq!(mapped.file_len(), buffered.file_len(), "{ctx}");
    assert_eq!(mapped.interfaces(), buffered.interfaces(), "{ctx}");
    assert_eq!(
        mapped.time_span().ok(),
        buffered.time_span().ok(),
        "{ctx}: time span"
    );
    let len = buffered.file_len();
    let mut splits: Vec<Vec<(u64, u64)>> = (2..=7).map(|k| buffered.ranges(k)).collect();
    for _ in 0..6 {
        let mut cuts: Vec<u64> = (0..1 + rng.below(6)).map(|_| rng.below(len + 1)).collect();
        cuts.sort_unstable();
        let mut bounds = vec![buffered.data_start()];
        bounds.extend(cuts.iter().map(|&c| c.max(buffered.data_start())));
        bounds.push(len);
        splits.push(bounds.windows(2).map(|w| (w[0], w[1])).collect());
    }
    for ranges in splits {
        let mut seams = Vec::new();
        for &(from, to) in &ranges {
            let ctx = format!("{ctx}: chunk {from}..{to}");
            let b = read_chunk(&buffered, from, to);
            let m = read_chunk(&mapped, from, to);
            match (b, m) {
                (Ok(Some((b, b_mapped))), Ok(Some((m, m_mapped)))) => {
                    assert!(!b_mapped, "{ctx}");
                    assert!(m_mapped, "{ctx}: chunk reader not mapped");
                    assert_eq!(m, b, "{ctx}");
                    reached.chunks += 1;
                    reached.packets += b.packets.len();
                    reached.errors += usize::from(b.error.is_some());
                    reached.warnings += usize::from(!b.warnings.is_empty());
                    seams.push(if b.error.is_some() { None } else { b.seam });
                }
                (Ok(None), Ok(None)) => {
                    reached.no_boundary += 1;
                    seams.push(None);
                }
                (Err(b), Err(m)) => {
                    assert_eq!(m, b, "{ctx}");
                    seams.push(None);
                }
                (b, m) => panic!(
                    "{ctx}: buffered {:?}, mapped {:?}",
                    b.map(|c| c.is_some()),
                    m.map(|c| c.is_some())
                ),
            }
        }
        let up = chunks_line_up(&buffered, &seams);
        assert_eq!(chunks_line_up(&mapped, &seams), up, "{ctx}");
        if up {
            reached.lined_up += 1;
        } else {
            reached.refused += 1;
        }
    }
}

#[test]
fn mapped_chunk_readers_equal_buffered_chunk_readers() {
    let dir = Scratch::new("mmap");
    let mut rng = Rng(0x5b1);
    let mut reached = Reached::default();
    let mut case = 0;
    // Sizes from a few records to several buffers' worth (the buffered chunk readers then refill
    // and compact while the mapped ones never do).
    for n in [1, 3, 40, 700, 9000] {
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for nanos in [false, true] {
                files.push((
                    format!("pcap {order:?} nanos {nanos} n {n}"),
                    gen_pcap_as(&mut rng, n, order, nanos),
                ));
            }
            files.push((
                format!("pcapng {order:?} n {n}"),
                gen_pcapng_as(&mut rng, n, Some(order), 1),
            ));
        }
        // A second section: the split refuses, the same way both ways.
        files.push((
            format!("pcapng 2 sections n {n}"),
            gen_pcapng_as(&mut rng, n, None, 2),
        ));
        for (name, good) in files {
            let offsets = record_offsets(&good);
            let mut variants: Vec<(String, Vec<u8>)> = vec![("intact".into(), good.clone())];
            if offsets.len() > 1 {
                // A cut inside a record leaves the last chunk with a truncation warning.
                let pcapng = name.starts_with("pcapng");
                variants.extend(damaged(&mut rng, &good, pcapng, &offsets, 4));
            }
            for (what, bytes) in variants {
                case += 1;
                let path = dir.join(format!("chunks{case}.cap"));
                std::fs::write(&path, &bytes).expect("write");
                compare_splits(&path, &mut rng, &format!("{name}, {what}"), &mut reached);
                std::fs::remove_file(&path).expect("remove");
            }
        }
    }
    eprintln!("{reached:?}");
    // The comparisons must reach packets, errors, warnings, refusals and accepted splits.
    assert!(reached.chunks > 2000, "{reached:?}");
    assert!(reached.packets > 300_000, "{reached:?}");
    assert!(reached.errors >= 20, "{reached:?}");
    assert!(reached.warnings >= 20, "{reached:?}");
    assert!(reached.lined_up >= 100, "{reached:?}");
    assert!(reached.refused >= 50, "{reached:?}");
}

/// The shared corpus (1,100 captures, many of them odd or damaged) split mapped and buffered.
#[test]
fn mapped_chunk_readers_equal_buffered_ones_on_the_corpus() {
    let Some(shared) = shared_dir() else {
        eprintln!("shared corpus not found: skipped");
        return;
    };
    let mut stack = vec![shared.join("corpus")];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| {
                x == "pcap" || x == "pcapng" || x == "cap" || x == "ntar" || x == "gz"
            }) {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut rng = Rng(0xc0);
    let mut reached = Reached::default();
    for path in &files {
        compare_splits(path, &mut rng, &path.display().to_string(), &mut reached);
    }
    eprintln!("{} files: {reached:?}", files.len());
    assert!(reached.chunks > 1000, "{reached:?}");
    assert!(reached.lined_up > 100, "{reached:?}");
}

/// A mapped read keeps a few MiB of the file resident whatever its size: the reader hands back
/// the pages it has passed, in whole 2 MiB stretches of the address space. Without that, the
/// mapping's RSS grows to the file's size (48 MiB here). Every packet's bytes are read, as a
/// decoding caller does: a packet that straddles a stretch's end must not have its first bytes
/// handed back before the caller reads them (the read would map that stretch again, for good:
/// 2 MiB at once where the kernel maps the file in 2 MiB entries).
#[cfg(target_os = "linux")]
#[test]
fn a_mapped_read_keeps_only_a_few_mib_of_the_file_resident() {
    let dir = Scratch::new("mmap");
    let path = dir.join("resident.pcap");
    let opts = PcapOptions::default().with_snaplen(65535);
    let mut w = PcapWriter::new(
        std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        opts,
    )
    .expect("header");
    let f = frame(&mut Rng(7), 1514, 65535);
    let n = (48 << 20) / (16 + f.len());
    for i in 0..n {
        w.write_packet(1_700_000_000_000_000_000 + 1_000 * i as i64, 1514, &f)
            .expect("packet");
    }
    w.finish().expect("finish").flush().expect("flush");
    cache_afresh(&path);
    let mut r = CaptureReader::new(input::open_path(&path).expect("open"), options(false, true))
        .expect("reader");
    assert!(r.is_mapped(), "not mapped");
    let (mut read, mut most, mut bytes) = (0, 0, 0u64);
    while let Some(p) = r.next_packet().expect("read") {
        bytes += u64::from(p.data[0]) + u64::from(p.data[p.data.len() - 1]);
        read += 1;
        if read % 1024 == 0 {
            most = most.max(resident_kib(&path));
        }
    }
    assert_eq!(read, n);
    let first_and_last = u64::from(f[0]) + u64::from(f[f.len() - 1]);
    assert_eq!(bytes, first_and_last * n as u64);
    // Sampled while mapped: a look that found no mapping would pass for nothing.
    assert!(most > 0, "the mapping was never seen resident");
    // The 8 MiB handed back at a time, the 2 MiB stretch being read, and the next one.
    assert!(most <= 12 << 10, "{most} KiB of a 48 MiB file resident");
}

/// Files scanned together (one capture per host, overlapping in time) each keep less of
/// themselves mapped than a file read alone: their readers hand pages back every 2 MiB stretch,
/// not every 8 MiB (`CaptureReader::share_residency`). Without that, four files on two threads
/// held some 10 MiB each per thread (8 readers); a scan of 64 files would hold most of a GB.
#[cfg(target_os = "linux")]
#[test]
fn files_scanned_together_each_keep_less_resident() {
    let dir = Scratch::new("mmap");
    let opts = PcapOptions::default().with_snaplen(128);
    let f = frame(&mut Rng(11), 1514, 128);
    let files = 4usize;
    let per_file = (32 << 20) / (16 + f.len());
    let paths: Vec<_> = (0..files)
        .map(|k| {
            let path = dir.join(format!("host{k}.pcap"));
            let mut w = PcapWriter::new(
                std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
                opts,
            )
            .expect("header");
            for i in 0..per_file {
                // The hosts send at once: their packets interleave one by one.
                let ts = 1_700_000_000_000_000_000 + 1_000 * (files * i + k) as i64;
                w.write_packet(ts, 1514, &f).expect("packet");
            }
            w.finish().expect("finish").flush().expect("flush");
            path
        })
        .collect();
    let config = scan_config(vec![By::All]);
    for threads in [1, 2] {
        for p in &paths {
            cache_afresh(p);
        }
        let mut readers: Vec<CaptureReader> = paths
            .iter()
            .map(|p| {
                CaptureReader::new(input::open_path(p).expect("open"), options(false, true))
                    .expect("reader")
            })
            .collect();
        assert!(readers.iter().all(CaptureReader::is_mapped));
        // Looked at from beside the scan, every millisecond.
        let done = std::sync::atomic::AtomicBool::new(false);
        let (acc, most, looks) = std::thread::scope(|s| {
            let watch = s.spawn(|| {
                let (mut most, mut looks) = (0u64, 0u32);
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    most = most.max(paths.iter().map(|p| resident_kib(p)).sum());
                    looks += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                (most, looks)
            });
            let scanned = pipeline::scan_threads(
                &mut readers,
                config.clone(),
                SizeKind::Wire,
                threads,
                &mut |_| Ok(()),
            );
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            let (most, looks) = watch.join().expect("watch");
            (scanned.expect("scan").1, most, looks)
        });
        assert_eq!(acc.counted, (files * per_file) as u64);
        assert!(most > 0, "{looks} looks saw nothing mapped");
        // Per reader: the stretch being read, the next one its chase reaches into, and up to
        // one handed back at a time (4 MiB seen, 8 without sharing). On two threads, placing
        // the instants also leaves each file's first stretches mapped (at most 4 MiB: the
        // probes' own test, in chunked/overlap.rs).
        let readers = (files * threads) as u64;
        let probes = if threads > 1 {
            files as u64 * (4 << 10)
        } else {
            0
        };
        assert!(
            most <= readers * (5 << 10) + probes,
            "{threads} threads: {most} KiB of {files} files of 32 MiB resident"
        );
    }
}
