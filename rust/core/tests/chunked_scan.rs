//! Scans of plain capture files split into time chunks (threads 2, 3, 4) against the
//! single-threaded scan of the same files: every row and the accounting identical. Generated
//! captures (the project's writer) and the shared training captures (decompressed to plain files).

use burstcore::capture::{ByteOrder, CaptureReader, TsResolution};
use burstcore::engine::{BinOrigin, By, Closure, LatePolicy, ScanConfig, ScanOutput};
use burstcore::pipeline::{self, Accounting, SizeKind};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::path::{Path, PathBuf};

mod engine_util;
mod reader_util;
mod scratch;
use engine_util::Rng;
use reader_util::open_for_chunks;
use scratch::Scratch;

/// Bursty TCP traffic between a few hosts: trains of back-to-back frames, idle gaps, ties;
/// `shuffle` swaps neighbours (reordering within a few µs).
fn packets(rng: &mut Rng, n: usize, shuffle: bool) -> Vec<(i64, u16, u16, u32)> {
    let mut ts = 1_700_000_000_000_000_000i64 + rng.below(1 << 30) as i64;
    let mut out: Vec<(i64, u16, u16, u32)> = (0..n)
        .map(|i| {
            ts += match (i % 200, rng.below(10)) {
                (0, _) => 2_000_000 + rng.below(20_000_000) as i64,
                (_, 0) => 0,
                _ => 100 + rng.below(2000) as i64,
            };
            let src = rng.below(4) as u16;
            let dst = (src + 1 + rng.below(3) as u16) % 4;
            let len = if rng.below(4) == 0 {
                66
            } else {
                66 + rng.below(1449) as u32
            };
            (ts, src, dst, len)
        })
        .collect();
    if shuffle {
        for _ in 0..n / 10 {
            let i = rng.below(n as u64 - 1) as usize;
            out.swap(i, i + 1);
        }
    }
    out
}

/// A TCP segment of `len` bytes on the wire from host `s` to host `d`, cut to `snaplen`.
fn tcp_frame((s, d, len): (u16, u16, u32), snaplen: u32, frame: &mut Vec<u8>) {
    frame.clear();
    TcpSegment::between_hosts(s, d, 5000 + s, 6000 + d)
        .write_frame(len, snaplen, frame)
        .expect("frame");
}

/// A pcapng writer with one section and an Ethernet interface (ns stamps) per name.
fn pcapng(names: &[Option<&str>], snaplen: u32) -> PcapNgWriter<Vec<u8>> {
    let mut w = PcapNgWriter::new(Vec::new());
    w.section(ByteOrder::Little, None).expect("shb");
    for &name in names {
        w.interface(1, snaplen, TsResolution::Pow10(9), 0, name)
            .expect("idb");
    }
    w
}

fn write(path: &Path, pkts: &[(i64, u16, u16, u32)], as_pcapng: bool, snaplen: u32) {
    let mut frame = Vec::new();
    if as_pcapng {
        let mut w = pcapng(&[None, None], snaplen);
        for (i, &(ts, s, d, len)) in pkts.iter().enumerate() {
            tcp_frame((s, d, len), snaplen, &mut frame);
            w.enhanced_packet((i % 2) as u32, ts, len, &frame)
                .expect("epb");
        }
        std::fs::write(path, w.finish().expect("finish")).expect("write");
    } else {
        let opts = PcapOptions::default()
            .with_byte_order(ByteOrder::Big)
            .with_snaplen(snaplen);
        let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
        for &(ts, s, d, len) in pkts {
            tcp_frame((s, d, len), snaplen, &mut frame);
            w.write_packet(ts, len, &frame).expect("packet");
        }
        std::fs::write(path, w.finish().expect("finish")).expect("write");
    }
}

fn config(windows: &[i64], horizon: i64) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(windows.to_vec())
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![
            100_000_000,
            1_000_000_000,
            10_000_000_000,
            40_000_000_000,
        ])
        .with_bins_ns(vec![1_000_000, 100_000_000])
        .with_by(vec![By::All, By::Src, By::Pair, By::Flow5, By::Interface])
        .with_reorder_horizon_ns(horizon)
        .with_late(LatePolicy::Drop)
}

fn scan(paths: &[&Path], config: &ScanConfig, threads: usize) -> (ScanOutput, Accounting) {
    scan_sized(paths, config, threads, SizeKind::Wire)
}

fn scan_sized(
    paths: &[&Path],
    config: &ScanConfig,
    threads: usize,
    size: SizeKind,
) -> (ScanOutput, Accounting) {
    let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open_for_chunks(p)).collect();
    pipeline::scan_threads(&mut readers, config.clone(), size, threads, &mut |_| Ok(()))
        .expect("scan")
}

/// The chunked path alone (no fallback): `None` when it refuses.
fn chunked(
    paths: &[&Path],
    config: &ScanConfig,
    threads: usize,
) -> Option<(ScanOutput, Accounting)> {
    chunked_sized(paths, config, threads, SizeKind::Wire)
}

fn chunked_sized(
    paths: &[&Path],
    config: &ScanConfig,
    threads: usize,
    size: SizeKind,
) -> Option<(ScanOutput, Accounting)> {
    let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open_for_chunks(p)).collect();
    // As `scan_threads` decides.
    let decode = config.reads_headers() || matches!(size, SizeKind::Ip | SizeKind::Payload);
    burstcore::chunked::scan(&mut readers, config, size, decode, threads, &mut |_| Ok(()))
        .expect("chunked scan")
}

fn assert_same(a: &(ScanOutput, Accounting), b: &(ScanOutput, Accounting), ctx: &str) {
    assert_eq!(a.0.envelope, b.0.envelope, "envelope, {ctx}");
    assert_eq!(a.0.backlog, b.0.backlog, "backlog, {ctx}");
    assert_eq!(a.0.series, b.0.series, "series, {ctx}");
    assert_eq!(a.0.groups, b.0.groups, "groups, {ctx}");
    assert_eq!(a.0.reorder, b.0.reorder, "reorder, {ctx}");
    assert_eq!(a.1, b.1, "accounting, {ctx}");
}

#[test]
fn generated_files_scan_the_same_in_chunks() {
    let dir = Scratch::new("chunked");
    let mut rng = Rng(11);
    let mut used = 0;
    for case in 0..12 {
        let pcapng = case % 2 == 0;
        let shuffle = case % 3 == 0;
        let n = 2000 + rng.below(20_000) as usize;
        let path = dir.join(format!(
            "gen{case}.{}",
            if pcapng { "pcapng" } else { "pcap" }
        ));
        let snaplen = if case % 4 == 1 { 96 } else { 0 };
        write(&path, &packets(&mut rng, n, shuffle), pcapng, snaplen);
        // Windows from below the packet spacing to a large part of the trace.
        let windows = [1_000, 50_000, 1_000_000, 30_000_000, 500_000_000];
        let horizon = if shuffle { 5_000 } else { 0 };
        let c = config(&windows, horizon);
        let want = scan(&[&path], &c, 1);
        for threads in [2, 3, 4] {
            let ctx = format!("case {case}, {threads} threads");
            assert_same(&scan(&[&path], &c, threads), &want, &ctx);
            if let Some(got) = chunked(&[&path], &c, threads) {
                used += 1;
                assert_same(&got, &want, &ctx);
            }
        }
    }
    // Sorted files always split (shuffled ones may refuse at a seam).
    assert!(used >= 24, "chunked path used {used} times");
}

#[test]
fn bins_from_an_origin_scan_the_same_in_chunks_and_threads() {
    let dir = Scratch::new("chunked");
    let mut rng = Rng(21);
    for case in 0..4 {
        let path = dir.join(format!("origin{case}.pcap"));
        let n = 3000 + rng.below(6000) as usize;
        let pkts = packets(&mut rng, n, false);
        write(&path, &pkts, false, 0);
        let first = pkts.iter().map(|p| p.0).min().expect("packets");
        // Aggregate only, so that the chunked path is the one `scan_threads` takes.
        let base = ScanConfig::default()
            .with_windows_ns(vec![1_000, 1_000_000])
            .with_rates_bps(vec![1_000_000_000])
            .with_bins_ns(vec![7, 1_000_000, 100_000_003]);
        for origin in [
            BinOrigin::At(first + 123_457),
            BinOrigin::At(-(rng.below(1 << 62) as i64)),
            BinOrigin::At(i64::MAX),
        ] {
            let c = base.clone().with_bin_origin(origin);
            let want = scan(&[&path], &c, 1);
            for threads in [2, 3] {
                let ctx = format!("case {case}, {origin:?}, {threads} threads");
                let got = chunked(&[&path], &c, threads).expect("a sorted pcap splits");
                assert_same(&got, &want, &ctx);
            }
        }
        // From the first packet: the same bins as from its instant, on one thread or several
        // (never in time chunks: a later chunk would not know the first packet).
        let c = base.clone().with_bin_origin(BinOrigin::FirstPacket);
        let at_first = base.clone().with_bin_origin(BinOrigin::At(first));
        let want = scan(&[&path], &at_first, 1);
        assert!(want.0.series.iter().any(|r| r.start_ns == first));
        for threads in [1, 2, 3] {
            let ctx = format!("case {case}, first packet, {threads} threads");
            assert_same(&scan(&[&path], &c, threads), &want, &ctx);
            assert!(chunked(&[&path], &c, threads).is_none(), "{ctx}");
        }
    }
}

#[test]
fn several_files_in_time_order_scan_the_same_in_chunks() {
    let dir = Scratch::new("chunked");
    let mut rng = Rng(12);
    let all = packets(&mut rng, 12_000, false);
    // Three consecutive pieces, listed out of time order; one pcap among pcapng.
    let (a, rest) = all.split_at(3000);
    let (b, c) = rest.split_at(5000);
    let pa = dir.join("multi_a.pcapng");
    let pb = dir.join("multi_b.pcap");
    let pc = dir.join("multi_c.pcapng");
    write(&pa, a, true, 0);
    write(&pb, b, false, 0);
    write(&pc, c, true, 0);
    let cfg = config(&[1_000, 1_000_000, 100_000_000], 0);
    for order in [[&pa, &pb, &pc], [&pc, &pa, &pb], [&pb, &pc, &pa]] {
        let paths: Vec<&Path> = order.iter().map(|p| p.as_path()).collect();
        let want = scan(&paths, &cfg, 1);
        for threads in [2, 4] {
            let got = chunked(&paths, &cfg, threads).expect("files in time order split");
            assert_same(&got, &want, &format!("{threads} threads"));
            assert_same(&scan(&paths, &cfg, threads), &want, "scan_threads");
        }
    }
    // A file that overlaps another: cut at common instants instead (see the next test).
    let pd = dir.join("multi_d.pcapng");
    write(&pd, &all[2000..4000], true, 0);
    let paths = [pa.as_path(), pd.as_path()];
    let want = scan(&paths, &cfg, 1);
    let got = chunked(&paths, &cfg, 2).expect("overlapping files split");
    assert_same(&got, &want, "overlapping files");
    assert_same(
        &scan(&paths, &cfg, 2),
        &want,
        "overlapping files, scan_threads",
    );
}

#[test]
fn every_size_rule_scans_the_same_in_chunks() {
    // The chunks' loops without headers have a copy for `wire` and one for the other rules
    // (`chunked::run`, `overlap::Scan::run`): each rule, through one file cut in time and
    // through files that overlap in time, against the one-thread scan with the same rule.
    // Snapped frames (96 bytes) and pcap among pcapng, so that `captured` and `l1` differ from
    // `wire`.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(23);
    let all = packets(&mut rng, 20_000, false);
    let mut hosts = Vec::new();
    for h in 0..2 {
        let mine: Vec<_> = all
            .iter()
            .copied()
            .filter(|p| usize::from(p.1) % 2 == h)
            .collect();
        let ext = if h == 0 { "pcapng" } else { "pcap" };
        let path = dir.join(format!("sized{h}.{ext}"));
        write(&path, &mine, h == 0, 96);
        hosts.push(path);
    }
    let one = [hosts[0].as_path()];
    let both = [hosts[0].as_path(), hosts[1].as_path()];
    let windows = [1_000, 50_000, 1_000_000, 30_000_000];
    let lean = config(&windows, 0).with_by(vec![By::All, By::Interface]);
    let mut bytes = Vec::new();
    for size in [
        SizeKind::Wire,
        SizeKind::Captured,
        SizeKind::L1(Default::default()),
        SizeKind::Ip,
    ] {
        for paths in [&one[..], &both[..]] {
            let want = scan_sized(paths, &lean, 1, size);
            let ctx = format!("{size:?}, {} files", paths.len());
            let got = chunked_sized(paths, &lean, 2, size)
                .unwrap_or_else(|| panic!("{ctx}: sorted files did not split"));
            assert_same(&got, &want, &ctx);
            assert_same(&scan_sized(paths, &lean, 3, size), &want, &ctx);
        }
        bytes.push(scan_sized(&both, &lean, 1, size).0.groups[0].bytes);
    }
    // Each rule counted something of its own.
    assert!(
        (1..bytes.len()).all(|i| !bytes[..i].contains(&bytes[i])),
        "{bytes:?}"
    );
}

#[test]
fn files_that_overlap_in_time_scan_the_same_in_chunks() {
    // One capture per host of the same traffic (each host's packets, by sender), as the hosts
    // of a training job record them: the files overlap all along. Each file is cut at common
    // instants and each chunk merges its pieces in (timestamp, file) order, as the sequential
    // scan merges the whole files. Ties across files (packets of two hosts at one instant),
    // packets out of order within a file and late ones dropped, pcap among pcapng, 2 to 4
    // files on 2 to 4 threads.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(19);
    let mut used = 0;
    for case in 0..6 {
        let shuffle = case % 2 == 1;
        let all = packets(&mut rng, 30_000, shuffle);
        let hosts = 2 + case % 3;
        let mut files = Vec::new();
        for h in 0..hosts {
            let mine: Vec<_> = all
                .iter()
                .copied()
                .filter(|p| usize::from(p.1) % hosts == h)
                .collect();
            let pcapng = (h + case) % 2 == 0;
            let ext = if pcapng { "pcapng" } else { "pcap" };
            let path = dir.join(format!("host{case}_{h}.{ext}"));
            write(&path, &mine, pcapng, if h == 1 { 96 } else { 0 });
            files.push(path);
        }
        let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let horizon = if shuffle { 5_000 } else { 0 };
        let windows = [1_000, 50_000, 1_000_000, 30_000_000, 500_000_000];
        let by_key = config(&windows, horizon);
        // The aggregate and interfaces alone: packets merged without their headers.
        let lean = by_key.clone().with_by(vec![By::All, By::Interface]);
        for c in [by_key, lean] {
            let want = scan(&paths, &c, 1);
            assert!(want.1.counted > 20_000, "case {case}");
            for threads in [2, 3, 4] {
                let ctx = format!("case {case}, {hosts} files, {threads} threads, {:?}", c.by);
                assert_same(&scan(&paths, &c, threads), &want, &ctx);
                match chunked(&paths, &c, threads) {
                    Some(got) => {
                        used += 1;
                        assert_same(&got, &want, &ctx);
                    }
                    // Packets out of order near a cut may defeat it; sorted files always split.
                    None => assert!(shuffle, "{ctx}: sorted files did not split"),
                }
            }
        }
    }
    eprintln!("chunked path used {used} times of 36");
    assert!(used >= 18, "chunked path used {used} times");
}

#[test]
fn damage_in_one_of_overlapping_files_is_reported_as_sequentially() {
    // A record in the middle of one of two overlapping files claims a GiB: the scan fails at
    // that record on any number of threads, with the error the sequential scan gives, whether
    // the damage lies in a chunk's range or where the instants were being placed.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(23);
    let all = packets(&mut rng, 20_000, false);
    let (a, b): (Vec<_>, Vec<_>) = all.iter().partition(|p| p.1 % 2 == 0);
    let pa = dir.join("damaged_a.pcap");
    let pb = dir.join("damaged_b.pcap");
    write(&pa, &a, false, 0);
    write(&pb, &b, false, 128);
    let clean = std::fs::read(&pb).expect("read");
    let c = config(&[1_000, 1_000_000, 100_000_000], 0);
    // Per mille of the file: around the middle, where two threads' instant falls, densely.
    for share in [300, 800].into_iter().chain((440..=620).step_by(15)) {
        // The first record at or after that point.
        let mut bytes = clean.clone();
        let mut at = 24;
        while at < bytes.len() * share / 1000 {
            let incl = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            at += 16 + incl;
        }
        bytes[at + 8..at + 12].copy_from_slice(&0x4000_0000u32.to_be_bytes());
        std::fs::write(&pb, &bytes).expect("write");
        let paths = [pa.as_path(), pb.as_path()];
        let one = |threads| {
            let mut readers: Vec<CaptureReader> =
                paths.iter().map(|p| open_for_chunks(p)).collect();
            pipeline::scan_threads(
                &mut readers,
                c.clone(),
                SizeKind::Wire,
                threads,
                &mut |_| Ok(()),
            )
            .expect_err("damaged file")
            .to_string()
        };
        let want = one(1);
        assert!(want.contains(&at.to_string()), "{want} (record at {at})");
        // An offset alone would not say in which of the files.
        assert!(
            want.ends_with(&format!("of {}", pb.display())),
            "{want} names no file"
        );
        assert!(chunked(&paths, &c, 2).is_none(), "share {share}");
        for threads in [2, 3] {
            assert_eq!(one(threads), want, "share {share}, {threads} threads");
        }
    }
}

#[test]
fn shared_training_captures_scan_the_same_in_chunks() {
    let Ok(root) = std::env::var("BURSTCORE_SHARED") else {
        eprintln!("BURSTCORE_SHARED not set: skipped");
        return;
    };
    let dir = Scratch::new("chunked");
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(&root).join("captures"))
        .expect("captures dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".pcapng.zst") || p.to_string_lossy().ends_with(".pcapng")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let c = config(
        &[100_000, 1_000_000, 5_000_000, 50_000_000, 500_000_000],
        10_000_000,
    );
    let mut used = 0;
    for f in files {
        // The chunked path needs a plain file: decompress to a temporary one.
        let plain = dir
            .join(f.file_name().expect("name"))
            .with_extension("plain");
        let mut out = std::fs::File::create(&plain).expect("create");
        let mut input = burstcore::input::open_path(&f).expect("open");
        std::io::copy(&mut input.reader, &mut out).expect("decompress");
        drop(out);
        let want = scan(&[&plain], &c, 1);
        for threads in [2, 4] {
            let ctx = format!("{}, {threads} threads", f.display());
            assert_same(&scan(&[&plain], &c, threads), &want, &ctx);
            if let Some(got) = chunked(&[&plain], &c, threads) {
                used += 1;
                assert_same(&got, &want, &ctx);
            }
        }
        let _ = std::fs::remove_file(&plain);
    }
    eprintln!("chunked path used {used} times");
    assert!(used > 0);
}

#[test]
fn shared_training_captures_by_sender_scan_the_same_in_chunks() {
    // Each training capture dealt into one file per sending host, as if every rank had recorded
    // what it sent: files that overlap all along, with the real captures' timestamps, which step
    // back by up to ~56 µs. Two to four threads against one; the chunked path must be taken.
    let Ok(root) = std::env::var("BURSTCORE_SHARED") else {
        eprintln!("BURSTCORE_SHARED not set: skipped");
        return;
    };
    let dir = Scratch::new("chunked");
    let c = config(
        &[100_000, 1_000_000, 5_000_000, 50_000_000, 500_000_000],
        10_000_000,
    );
    for name in [
        "a_ring4_mlp5m_1g_bridge.pcapng.zst",
        "d_ring2_resnetsmall_noshape_bridge.pcapng",
    ] {
        let path = Path::new(&root).join("captures").join(name);
        let mut reader = open_for_chunks(&path);
        let mut hosts: Vec<std::net::IpAddr> = Vec::new();
        let mut writers: Vec<PcapNgWriter<Vec<u8>>> = Vec::new();
        while let Some(p) = reader.next_packet().expect("read") {
            let src = burstcore::wire::decode_frame(p.linktype, p.data, p.wire_len).src;
            // Packets of no IP sender go with the first host's.
            let h = match src {
                Some(ip) => hosts.iter().position(|&x| x == ip).unwrap_or_else(|| {
                    hosts.push(ip);
                    hosts.len() - 1
                }),
                None => 0,
            };
            while writers.len() < hosts.len().max(1) {
                let mut w = PcapNgWriter::new(Vec::new());
                w.section(ByteOrder::Little, None).expect("shb");
                w.interface(p.linktype, 128, TsResolution::Pow10(9), 0, None)
                    .expect("idb");
                writers.push(w);
            }
            let ts = p.ts_ns.expect("timestamp");
            writers[h]
                .enhanced_packet(0, ts, p.wire_len, p.data)
                .expect("epb");
        }
        assert!(writers.len() >= 2, "{name}: {} senders", writers.len());
        let files: Vec<PathBuf> = writers
            .into_iter()
            .enumerate()
            .map(|(h, w)| {
                let f = dir.join(format!("{name}.host{h}.pcapng"));
                std::fs::write(&f, w.finish().expect("finish")).expect("write");
                f
            })
            .collect();
        let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let want = scan(&paths, &c, 1);
        for threads in [2, 4] {
            let ctx = format!("{name}, {} files, {threads} threads", paths.len());
            let got = chunked(&paths, &c, threads).unwrap_or_else(|| panic!("{ctx}: not split"));
            assert_same(&got, &want, &ctx);
            assert_same(&scan(&paths, &c, threads), &want, &ctx);
        }
        for f in files {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[test]
fn a_timestamp_out_of_range_sends_the_scan_the_sequential_way() {
    // A timestamp past i64 ns comes out of the reader as none, with a warning: the chunked path
    // refuses (the sequential path places every warning exactly), and the scan still counts it
    // as out of range, not as a packet without a timestamp, on any number of threads.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(13);
    let pkts = packets(&mut rng, 20_000, false);
    let path = dir.join("out_of_range.pcapng");
    let mut w = pcapng(&[None], 0);
    let mut frame = Vec::new();
    let mut far = 0;
    for (i, &(ts, s, d, len)) in pkts.iter().enumerate() {
        tcp_frame((s, d, len), 0, &mut frame);
        if i % 997 == 500 {
            w.enhanced_packet_raw(0, u64::MAX, len, &frame)
                .expect("epb");
            far += 1;
        } else {
            w.enhanced_packet(0, ts, len, &frame).expect("epb");
        }
    }
    std::fs::write(&path, w.finish().expect("finish")).expect("write");
    let c = config(&[1_000, 1_000_000, 100_000_000], 0);
    let want = scan(&[&path], &c, 1);
    assert_eq!(want.1.skipped_timestamp_out_of_range, far);
    assert_eq!(want.1.skipped_no_timestamp, 0);
    for threads in [2, 3] {
        assert!(chunked(&[&path], &c, threads).is_none());
        assert_same(
            &scan(&[&path], &c, threads),
            &want,
            &format!("{threads} threads"),
        );
    }
}

#[test]
fn a_first_packet_stamped_1970_still_scans_in_chunks() {
    // A capture started before its host's clock was set: the first packet is stamped 1970, the
    // rest 2023. The split's boundary search looks for records near the first packets' median
    // second, so the file still splits on 2 and 3 threads, with the one-thread rows; with the
    // first packet's second as the reference, every chunk's search failed and the scan went
    // the sequential way.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(17);
    let mut pkts = packets(&mut rng, 20_000, false);
    pkts[0].0 = 1_000;
    let path = dir.join("clock_unset.pcap");
    write(&path, &pkts, false, 0);
    let c = config(&[1_000, 1_000_000, 100_000_000], 0);
    let want = scan(&[&path], &c, 1);
    for threads in [2, 3] {
        let ctx = format!("{threads} threads");
        let got = chunked(&[&path], &c, threads).unwrap_or_else(|| panic!("{ctx}: not split"));
        assert_same(&got, &want, &ctx);
        assert_same(&scan(&[&path], &c, threads), &want, &ctx);
    }
}

#[test]
fn a_filtered_scan_equals_the_scan_of_the_packets_that_pass() {
    let dir = Scratch::new("filtered");
    let mut rng = Rng(29);
    let all = packets(&mut rng, 20_000, true);
    // Host 0 is 10.0.0.1 and sends from port 5000; host 2 listens on 6002 (see `write`).
    let filter =
        burstcore::Filter::parse("src host 10.0.0.1 and tcp dst port 6002").expect("filter");
    let kept: Vec<_> = all
        .iter()
        .copied()
        .filter(|&(_, s, d, _)| s == 0 && d == 2)
        .collect();
    assert!(kept.len() > 1000 && kept.len() < all.len() / 4);
    let (whole, cut) = (dir.join("all.pcap"), dir.join("kept.pcap"));
    write(&whole, &all, false, 0);
    write(&cut, &kept, false, 0);
    let plain = config(&[1_000, 50_000, 1_000_000, 30_000_000], 5_000);
    let filtered = plain.clone().with_filter(Some(filter.clone()));
    let want = scan(&[&cut], &plain, 1);
    for threads in [1, 2] {
        let got = scan(&[&whole], &filtered, threads);
        let ctx = format!("{threads} threads");
        assert_eq!(got.0.envelope, want.0.envelope, "envelope, {ctx}");
        assert_eq!(got.0.backlog, want.0.backlog, "backlog, {ctx}");
        assert_eq!(got.0.series, want.0.series, "series, {ctx}");
        assert_eq!(got.0.groups, want.0.groups, "groups, {ctx}");
        assert_eq!(got.1.counted, want.1.counted, "{ctx}");
        assert_eq!(
            got.1.skipped_filtered,
            (all.len() - kept.len()) as u64,
            "{ctx}"
        );
        assert_eq!(got.1.packets_read, all.len() as u64, "{ctx}");
    }
    // The analyses read through the same filter.
    let order = burstcore::analyze::OrderOptions::default()
        .with_reorder_horizon_ns(5_000)
        .with_filter(Some(filter));
    let flows = |path: &Path, order: burstcore::analyze::OrderOptions| {
        let opts = burstcore::analysis::FlowOptions::default();
        burstcore::analyze::flows(&mut [open_for_chunks(path)], opts, &[], order, &mut |_| {
            Ok(())
        })
        .expect("flows")
    };
    let (got, _, acc) = flows(&whole, order);
    let (want, _, _) = flows(
        &cut,
        burstcore::analyze::OrderOptions::default().with_reorder_horizon_ns(5_000),
    );
    assert_eq!(got.flows, want.flows);
    assert_eq!(acc.skipped_filtered, (all.len() - kept.len()) as u64);
}

#[test]
fn per_host_captures_through_their_own_filters_scan_as_one_capture_of_every_packet() {
    // One capture per host holds what the host sent and received, so a packet between two
    // captured hosts is in two files. Each file read through `src host <its host>` keeps it once.
    let dir = Scratch::new("per_host");
    let mut rng = Rng(31);
    // In time order: a late packet's fate depends on what else its file holds.
    let all = packets(&mut rng, 20_000, false);
    let wire = dir.join("wire.pcap");
    write(&wire, &all, false, 0);
    let hosts: Vec<PathBuf> = (0..4u16)
        .map(|h| {
            let path = dir.join(format!("host{h}.pcapng"));
            let own: Vec<_> = all
                .iter()
                .copied()
                .filter(|&(_, s, d, _)| s == h || d == h)
                .collect();
            write(&path, &own, true, 0);
            path
        })
        .collect();
    let paths: Vec<&Path> = hosts.iter().map(PathBuf::as_path).collect();
    let own_filters: Vec<Option<burstcore::Filter>> = (0..4)
        .map(|h| Some(burstcore::Filter::parse(&format!("src host 10.0.0.{}", h + 1)).unwrap()))
        .collect();
    // Interfaces are numbered per file, so the interface grouping differs by design.
    let plain = config(&[1_000, 50_000, 1_000_000, 30_000_000], 5_000).with_by(vec![
        By::All,
        By::Src,
        By::Pair,
        By::Flow5,
    ]);
    let per_host = plain.clone().with_file_filters(own_filters.clone());
    let want = scan(&[&wire], &plain, 1);
    let twice = scan(&paths, &plain, 1);
    assert_eq!(
        twice.1.counted,
        2 * want.1.counted,
        "every packet is in two files"
    );
    for threads in [1, 2] {
        let ctx = format!("{threads} threads");
        let got = scan(&paths, &per_host, threads);
        assert_eq!(got.0.envelope, want.0.envelope, "envelope, {ctx}");
        assert_eq!(got.0.backlog, want.0.backlog, "backlog, {ctx}");
        assert_eq!(got.0.series, want.0.series, "series, {ctx}");
        assert_eq!(got.0.groups, want.0.groups, "groups, {ctx}");
        assert_eq!(got.1.counted, want.1.counted, "{ctx}");
        assert_eq!(got.1.skipped_filtered, want.1.counted, "{ctx}");
    }

    // A filter for all files goes with each file's own: both must pass.
    let tcp_to_2 = burstcore::Filter::parse("dst host 10.0.0.3").unwrap();
    let both = per_host.clone().with_filter(Some(tcp_to_2.clone()));
    let only = plain.clone().with_filter(Some(tcp_to_2));
    let got = scan(&paths, &both, 1);
    let want_to_2 = scan(&[&wire], &only, 1);
    assert_eq!(got.0.envelope, want_to_2.0.envelope);
    assert_eq!(got.1.counted, want_to_2.1.counted);

    // The analyses read each file through its own filter too.
    let order = |file_filters| {
        burstcore::analyze::OrderOptions::default()
            .with_reorder_horizon_ns(5_000)
            .with_file_filters(file_filters)
    };
    let flows = |paths: &[&Path], order: burstcore::analyze::OrderOptions| {
        let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open_for_chunks(p)).collect();
        let opts = burstcore::analysis::FlowOptions::default();
        burstcore::analyze::flows(&mut readers, opts, &[], order, &mut |_| Ok(())).expect("flows")
    };
    let (mut got, _, acc) = flows(&paths, order(own_filters.clone()));
    let (mut want_flows, _, want_acc) = flows(&[&wire], order(Vec::new()));
    // Flows first seen at one instant come in file order, which the two readings do not share.
    for f in [&mut got.flows, &mut want_flows.flows] {
        f.sort_by_key(|r| (r.first_seen_ns, r.src_ip, r.dst_ip));
    }
    assert_eq!(got.flows, want_flows.flows);
    assert_eq!(acc.counted, want_acc.counted);

    // Not one filter per file: refused before anything is read, saying what to give.
    for (filters, paths) in [
        (&own_filters[..3], &paths[..]),
        (&own_filters[..], &paths[..2]),
    ] {
        let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open_for_chunks(p)).collect();
        let config = plain.clone().with_file_filters(filters.to_vec());
        let err = pipeline::scan(&mut readers, config, SizeKind::Wire, &mut |_| Ok(()))
            .expect_err("a filter count that is not the file count");
        let text = err.to_string();
        let counts = format!("{} filters for {} captures", filters.len(), paths.len());
        assert!(text.contains(&counts), "{text}");
        assert!(text.contains("one filter for every capture"), "{text}");
        let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open_for_chunks(p)).collect();
        let opts = burstcore::analysis::FlowOptions::default();
        let order = order(filters.to_vec());
        let err = burstcore::analyze::flows(&mut readers, opts, &[], order, &mut |_| Ok(()))
            .expect_err("a filter count that is not the file count");
        assert!(err.to_string().contains(&counts), "{err}");
    }
}

/// A pcapng capture of `pkts` on two interfaces with Interface Statistics Blocks among the
/// packets: interface 0 counts isb_ifdrop 5 and isb_osdrop 4 a sixth of the way in, then
/// isb_ifdrop 9 alone a third of the way in (its last block, so a chunk before the last one
/// holds it; the 4 stands, as a read keeps a counter a later block leaves out); interface 1
/// counts isb_osdrop 3 at the end.
fn write_with_statistics(path: &Path, pkts: &[(i64, u16, u16, u32)]) {
    use burstcore::capture::InterfaceStats;
    let mut w = pcapng(&[Some("eth0"), None], 0);
    let stats = |if_drop, os_drop| {
        InterfaceStats::default()
            .with_if_recv(Some(pkts.len() as u64))
            .with_if_drop(if_drop)
            .with_os_drop(os_drop)
    };
    let mut frame = Vec::new();
    for (i, &(ts, s, d, len)) in pkts.iter().enumerate() {
        tcp_frame((s, d, len), 0, &mut frame);
        w.enhanced_packet((i % 2) as u32, ts, len, &frame)
            .expect("epb");
        let raw = ts as u64;
        if i == pkts.len() / 6 {
            w.interface_statistics(0, raw, &stats(Some(5), Some(4)))
                .expect("isb");
        }
        if i == pkts.len() / 3 {
            w.interface_statistics(0, raw, &stats(Some(9), None))
                .expect("isb");
        }
    }
    let last = pkts.last().map_or(0, |p| p.0 as u64);
    w.interface_statistics(1, last, &stats(Some(0), Some(3)))
        .expect("isb");
    std::fs::write(path, w.finish().expect("finish")).expect("write");
}

#[test]
fn the_drops_a_capture_records_are_told_alike_however_it_is_read() {
    // A capture's own statistics of what it lost are read by whichever reader meets them: in a
    // scan by time chunks and in a split read of its rows, a chunk's reader. Afterwards the
    // reader reports them as a sequential read does, alone and beside a file that overlaps it.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(23);
    let all = packets(&mut rng, 24_000, false);
    let path = dir.join("dropped.pcapng");
    write_with_statistics(&path, &all);
    let other = dir.join("beside.pcapng");
    write(&other, &all[5000..15_000], true, 0);
    let mut seq = open_for_chunks(&path);
    while seq.next_packet().expect("read").is_some() {}
    let told = seq.recorded_drops().expect("drops told").to_string();
    assert!(
        told.contains(
            "(interface 0 \"eth0\": isb_ifdrop 9, isb_osdrop 4; interface 1: isb_osdrop 3)"
        ),
        "{told}"
    );
    let stats =
        |r: &CaptureReader| -> Vec<_> { r.interfaces().iter().map(|i| i.stats.clone()).collect() };
    assert_eq!(stats(&seq)[0].isb_count, 2);
    let c = config(&[1_000, 1_000_000], 0);
    let lean = c.clone().with_by(vec![By::All]);
    for threads in [2, 3, 4] {
        for paths in [vec![path.as_path()], vec![path.as_path(), other.as_path()]] {
            let mut readers: Vec<CaptureReader> =
                paths.iter().map(|p| open_for_chunks(p)).collect();
            let done = burstcore::chunked::scan(
                &mut readers,
                &lean,
                SizeKind::Wire,
                false,
                threads,
                &mut |_| Ok(()),
            )
            .expect("scan");
            assert!(
                done.is_some(),
                "{threads} threads, {} files: split",
                paths.len()
            );
            let ctx = format!("chunks, {threads} threads, {} files", paths.len());
            assert_eq!(stats(&readers[0]), stats(&seq), "{ctx}");
            assert_eq!(readers[0].recorded_drops(), seq.recorded_drops(), "{ctx}");
            assert_eq!(
                readers.get(1).and_then(|r| r.recorded_drops()),
                None,
                "{ctx}"
            );
            // Every way a scan can go (here, by keys: the metrics shared among threads).
            let mut readers: Vec<CaptureReader> =
                paths.iter().map(|p| open_for_chunks(p)).collect();
            pipeline::scan_threads(
                &mut readers,
                c.clone(),
                SizeKind::Wire,
                threads,
                &mut |_| Ok(()),
            )
            .expect("scan");
            assert_eq!(stats(&readers[0]), stats(&seq), "scan_threads, {ctx}");
        }
        let mut reader = open_for_chunks(&path);
        let tables =
            burstcore::table::read_table_threads(&mut reader, None, None, threads, &mut |_| Ok(()))
                .expect("read");
        assert!(tables.len() > 1, "{threads} threads: a split read");
        assert_eq!(stats(&reader), stats(&seq), "rows, {threads} threads");
    }
}

#[test]
fn a_capture_without_packets_takes_no_part_in_the_time_chunks() {
    // A capture of headers alone (an idle host's, or one cut short) among others: the scan is
    // still cut into time chunks, its interfaces still numbered before those of the captures
    // after it. It made the chunked scan give up for every file (the same result, on one
    // stream). Files in time order and overlapping, the empty one first, between and last;
    // pcapng with two named interfaces, and a pcap.
    let dir = Scratch::new("chunked");
    let mut rng = Rng(23);
    let all = packets(&mut rng, 12_000, false);
    let (a, b) = all.split_at(5000);
    let pa = dir.join("full_a.pcapng");
    let pb = dir.join("full_b.pcapng");
    let pd = dir.join("full_d.pcap");
    write(&pa, a, true, 0);
    write(&pb, b, true, 0);
    write(&pd, &all[2000..4000], false, 0);
    let empty_ng = dir.join("empty.pcapng");
    let w = pcapng(&[Some("eth0"), Some("eth1")], 0);
    std::fs::write(&empty_ng, w.finish().expect("finish")).expect("write");
    let empty_pcap = dir.join("empty.pcap");
    write(&empty_pcap, &[], false, 0);
    let lean = config(&[1_000, 1_000_000, 100_000_000], 0).with_by(vec![By::All, By::Interface]);
    let mut cases = 0;
    for empty in [&empty_ng, &empty_pcap] {
        for others in [[&pa, &pb], [&pa, &pd]] {
            for at in 0..3 {
                let mut files = vec![others[0].as_path(), others[1].as_path()];
                files.insert(at, empty.as_path());
                let want = scan(&files, &lean, 1);
                let ctx = format!("{files:?}");
                let got = chunked(&files, &lean, 2).unwrap_or_else(|| panic!("not cut: {ctx}"));
                assert_same(&got, &want, &ctx);
                assert_same(&scan(&files, &lean, 2), &want, &ctx);
                // What the readers report afterwards (interfaces and their statistics) too.
                let interfaces = |threads| {
                    let mut readers: Vec<CaptureReader> =
                        files.iter().map(|p| open_for_chunks(p)).collect();
                    let progress = &mut |_| Ok(());
                    pipeline::scan_threads(
                        &mut readers,
                        lean.clone(),
                        SizeKind::Wire,
                        threads,
                        progress,
                    )
                    .expect("scan");
                    readers
                        .iter()
                        .map(|r| r.interfaces().to_vec())
                        .collect::<Vec<_>>()
                };
                assert_eq!(interfaces(2), interfaces(1), "{ctx}");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 12);
    // Captures of no packet at all: nothing to cut, scanned the other way.
    let files = [empty_ng.as_path(), empty_pcap.as_path()];
    assert!(chunked(&files, &lean, 2).is_none());
    assert_same(&scan(&files, &lean, 2), &scan(&files, &lean, 1), "empty");
}
