//! Chunk readers against a sequential read of the same file: generated files split at every
//! offset, files whose packets carry copies of records (false boundaries), the shared corpus.

use super::*;
use crate::capture::{ByteOrder, TsResolution};
use crate::writer::{PcapNgWriter, PcapOptions, PcapWriter};

type Row = (u64, Option<i64>, u32, u32, Vec<u8>);

use crate::scratch::Scratch;
use crate::test_rng::Rng;

fn sequential(path: &Path) -> Vec<Row> {
    let input = crate::input::open_path(path).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().expect("read") {
        out.push((p.offset, p.ts_ns, p.interface, p.wire_len, p.data.to_vec()));
    }
    out
}

/// The packets of the chunks cut at `cuts`, if they line up.
fn chunked(plan: &SplitPlan, cuts: &[u64]) -> Option<Vec<Row>> {
    let mut bounds = vec![plan.data_start()];
    bounds.extend(cuts.iter().map(|&c| c.max(plan.data_start())));
    bounds.push(plan.file_len());
    let mut out = Vec::new();
    let mut seams = Vec::new();
    for w in bounds.windows(2) {
        let Some(mut c) = plan.open(w[0], w[1]).expect("open chunk") else {
            seams.push(None);
            continue;
        };
        // A chunk that started at a false boundary may walk into an error: a refusal too.
        loop {
            match c.next_packet() {
                Ok(Some(p)) => {
                    out.push((p.offset, p.ts_ns, p.interface, p.wire_len, p.data.to_vec()))
                }
                Ok(None) => break,
                Err(_) => return None,
            }
        }
        seams.push(c.seam());
    }
    chunks_line_up(plan, &seams).then_some(out)
}

/// Random packets; `echo` makes some payloads copies of the file's own earlier bytes, so that
/// valid-looking record chains appear inside packets.
fn payload(rng: &mut Rng, so_far: &[u8], echo: bool) -> Vec<u8> {
    if echo && so_far.len() > 64 && rng.below(3) == 0 {
        let a = rng.below(so_far.len() as u64 / 2) as usize;
        let n = (so_far.len() - a).min(200 + rng.below(400) as usize);
        return so_far[a..a + n].to_vec();
    }
    let n = match rng.below(4) {
        0 => 0,
        1 => rng.below(8) as usize,
        _ => rng.below(300) as usize,
    };
    (0..n).map(|_| rng.next() as u8).collect()
}

fn write_pcap(rng: &mut Rng, n: usize, order: ByteOrder, nanos: bool, echo: bool) -> Vec<u8> {
    let opts = PcapOptions {
        byte_order: order,
        nanos,
        snaplen: 65535,
        ..Default::default()
    };
    let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..n {
        ts += rng.below(3_000_000) as i64 * 1000;
        let data = payload(rng, w.get_ref(), echo);
        let wire = data.len() as u32 + rng.below(3) as u32;
        w.write_packet(ts, wire, &data).expect("packet");
    }
    w.finish().expect("finish")
}

fn write_pcapng(rng: &mut Rng, n: usize, order: ByteOrder, echo: bool) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new());
    w.section(order, Some("split test")).expect("shb");
    w.interface(1, 0, TsResolution::Pow10(9), 0, Some("a"))
        .expect("idb");
    w.interface(1, 0, TsResolution::Pow10(6), 0, None)
        .expect("idb");
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..n {
        ts += rng.below(3_000_000) as i64 * 1000;
        let data = payload(rng, w.get_ref(), echo);
        match rng.below(10) {
            0 => w.name_resolution(&[]).expect("nrb"),
            1 => w.custom(true, 32473, &data).expect("cb"),
            _ => {}
        }
        let iface = rng.below(2) as u32;
        w.enhanced_packet(iface, ts, data.len() as u32, &data)
            .expect("epb");
    }
    w.finish().expect("finish")
}

fn files(rng: &mut Rng, n: usize, echo: bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for order in [ByteOrder::Little, ByteOrder::Big] {
        for nanos in [false, true] {
            out.push((
                format!("pcap {order:?} nanos {nanos}"),
                write_pcap(rng, n, order, nanos, echo),
            ));
        }
        out.push((
            format!("pcapng {order:?}"),
            write_pcapng(rng, n, order, echo),
        ));
    }
    out
}

fn temp(dir: &Scratch, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name.replace(' ', "_"));
    std::fs::write(&path, bytes).expect("write");
    path
}

/// The plan of a file that must split, mapped or read with `read()`.
fn plan_of(path: &Path, mmap: bool) -> SplitPlan {
    let options = ReadOptions {
        mmap,
        ..ReadOptions::default()
    };
    SplitPlan::new(path, options)
        .expect("plan")
        .expect("splittable")
}

#[test]
fn every_cut_of_small_files_reads_like_a_sequential_read() {
    let dir = Scratch::new("split");
    let mut rng = Rng(1);
    for (name, bytes) in files(&mut rng, 40, false) {
        let path = temp(&dir, &name, &bytes);
        let want = sequential(&path);
        let plan = SplitPlan::new(&path, ReadOptions::default())
            .expect("plan")
            .expect("splittable");
        for cut in 0..=bytes.len() as u64 {
            let got = chunked(&plan, &[cut]).unwrap_or_else(|| panic!("{name}: cut {cut}"));
            assert_eq!(got, want, "{name}: cut {cut}");
        }
        // Three and five chunks at random cuts.
        for _ in 0..300 {
            let mut cuts: Vec<u64> = (0..2 + rng.below(3))
                .map(|_| rng.below(bytes.len() as u64 + 1))
                .collect();
            cuts.sort_unstable();
            let got = chunked(&plan, &cuts).unwrap_or_else(|| panic!("{name}: cuts {cuts:?}"));
            assert_eq!(got, want, "{name}: cuts {cuts:?}");
        }
    }
}

#[test]
fn records_inside_packets_never_give_other_packets() {
    let dir = Scratch::new("split");
    // Payloads that copy earlier records make false boundaries: a split may then refuse, but
    // whatever it accepts equals the sequential read.
    let mut rng = Rng(2);
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..4 {
        for (name, bytes) in files(&mut rng, 60, true) {
            let name = format!("{name} echo {round}");
            let path = temp(&dir, &name, &bytes);
            let want = sequential(&path);
            let plan = SplitPlan::new(&path, ReadOptions::default())
                .expect("plan")
                .expect("splittable");
            for cut in (0..=bytes.len() as u64).step_by(3) {
                match chunked(&plan, &[cut]) {
                    Some(got) => {
                        accepted += 1;
                        assert_eq!(got, want, "{name}: cut {cut}");
                    }
                    None => refused += 1,
                }
            }
        }
    }
    eprintln!("echo: {accepted} accepted, {refused} refused");
    assert!(accepted > refused);
}

#[test]
fn a_second_section_or_a_late_interface_refuses_the_split() {
    let dir = Scratch::new("split");
    let mut rng = Rng(3);
    let mut w = PcapNgWriter::new(Vec::new());
    w.section(ByteOrder::Little, None).expect("shb");
    w.interface(1, 0, TsResolution::Pow10(9), 0, None)
        .expect("idb");
    let mut ts = 1_700_000_000_000_000_000i64;
    for i in 0..60 {
        if i == 30 {
            w.interface(1, 0, TsResolution::Pow10(6), 0, None)
                .expect("idb");
        }
        if i == 45 {
            w.section(ByteOrder::Big, None).expect("shb");
            w.interface(1, 0, TsResolution::Pow10(9), 0, None)
                .expect("idb");
        }
        ts += 1000 + rng.below(100_000) as i64;
        let data = payload(&mut rng, &[], false);
        w.enhanced_packet(0, ts, data.len() as u32, &data)
            .expect("epb");
    }
    let bytes = w.finish().expect("finish");
    let path = temp(&dir, "sections.pcapng", &bytes);
    let want = sequential(&path);
    let plan = SplitPlan::new(&path, ReadOptions::default())
        .expect("plan")
        .expect("splittable");
    let mut accepted = 0;
    for cut in 0..=bytes.len() as u64 {
        if let Some(got) = chunked(&plan, &[cut]) {
            // Only possible if no chunk but the first... never: the first chunk or the second
            // meets the later blocks.
            accepted += 1;
            assert_eq!(got, want, "cut {cut}");
        }
    }
    assert_eq!(accepted, 0);
}

#[test]
fn shared_corpus_splits_like_a_sequential_read() {
    let Ok(root) = std::env::var("BURSTCORE_SHARED") else {
        eprintln!("BURSTCORE_SHARED not set: skipped");
        return;
    };
    let mut stack = vec![PathBuf::from(root).join("corpus")];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap" || x == "ntar")
            {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut rng = Rng(4);
    let (mut checked, mut refused) = (0, 0);
    for path in files {
        // Files a sequential read rejects or warns about are not split (the caller reads them
        // sequentially, and so does this test).
        let Ok(input) = crate::input::open_path(&path) else {
            continue;
        };
        let Ok(mut r) = CaptureReader::new(input, ReadOptions::default()) else {
            continue;
        };
        let mut want = Vec::new();
        let mut bad = false;
        loop {
            match r.next_packet() {
                Ok(Some(p)) => {
                    want.push((p.offset, p.ts_ns, p.interface, p.wire_len, p.data.to_vec()))
                }
                Ok(None) => break,
                Err(_) => {
                    bad = true;
                    break;
                }
            }
        }
        if bad || !r.warnings().is_empty() {
            continue;
        }
        let Ok(Some(plan)) = SplitPlan::new(&path, ReadOptions::default()) else {
            continue;
        };
        for _ in 0..20 {
            let mut cuts: Vec<u64> = (0..1 + rng.below(4))
                .map(|_| rng.below(plan.file_len() + 1))
                .collect();
            cuts.sort_unstable();
            match chunked(&plan, &cuts) {
                Some(got) => {
                    checked += 1;
                    assert_eq!(got, want, "{}: cuts {cuts:?}", path.display());
                }
                None => refused += 1,
            }
        }
    }
    eprintln!("corpus: {checked} splits equal, {refused} refused");
    assert!(checked > 0);
}

#[test]
fn weighted_ranges_cover_the_records_in_proportion() {
    let dir = Scratch::new("split");
    let mut rng = Rng(5);
    for (name, bytes) in files(&mut rng, 400, false) {
        let path = temp(&dir, &name, &bytes);
        let plan = SplitPlan::new(&path, ReadOptions::default())
            .expect("plan")
            .expect("splittable");
        let (start, end) = (plan.data_start(), plan.file_len());
        for weights in [vec![1], vec![11, 10], vec![3, 1, 0, 2], vec![0, 0], vec![]] {
            let ranges = plan.weighted_ranges(&weights);
            assert_eq!(ranges.len(), weights.len().max(1), "{name} {weights:?}");
            // Contiguous, from the first record to the end of the file.
            assert_eq!(
                ranges.first().map(|r| r.0),
                Some(start),
                "{name} {weights:?}"
            );
            assert_eq!(ranges.last().map(|r| r.1), Some(end), "{name} {weights:?}");
            assert!(
                ranges.windows(2).all(|w| w[0].1 == w[1].0),
                "{name} {weights:?}"
            );
            // Each within one byte of its share.
            let total: u64 = weights.iter().sum();
            for (r, &w) in ranges.iter().zip(&weights).filter(|_| total > 0) {
                let share = (end - start) as f64 * w as f64 / total as f64;
                assert!(
                    ((r.1 - r.0) as f64 - share).abs() <= 1.0,
                    "{name} {weights:?}"
                );
            }
        }
        // Equal weights are the equal split.
        assert_eq!(plan.weighted_ranges(&[7, 7, 7]), plan.ranges(3), "{name}");
    }
}

/// A read search (no mapping) over a stretch where every 16th byte starts a record header whose
/// next record would lie 3 MiB on: each such candidate's chain runs far past the search's window
/// and fails there. The chain's reads go to a window of their own, so the search still reads
/// the file a few times, not twice per candidate (8,192 reads of up to 1 MiB here, minutes on a
/// longer stretch), and finds the real records after it.
#[test]
fn chains_that_run_far_do_not_move_the_search_window() {
    const FAKES: usize = 4096;
    let secs = 1_700_000_000u32;
    let le = |out: &mut Vec<u8>, words: &[u32]| {
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    };
    let record = |out: &mut Vec<u8>, i: u32| {
        le(out, &[secs, i, 100, 100]);
        out.extend_from_slice(&[0xAB; 100]);
    };
    let mut file = Vec::new();
    le(&mut file, &[0xa1b2_c3d4, 0x0004_0002, 0, 0, 65_535, 1]);
    for i in 0..10 {
        record(&mut file, i);
    }
    let fakes = file.len() as u64;
    for _ in 0..FAKES {
        le(&mut file, &[secs, 0, 3 << 20, 3 << 20]);
    }
    // Where every chain from a fake header lands: zeros, no record (seconds 0 are a day and
    // more before the first packet's).
    file.resize(file.len() + (3 << 20) + (64 << 10), 0);
    let real = file.len() as u64;
    for i in 0..20 {
        record(&mut file, i);
    }
    let dir = Scratch::new("split-far");
    let path = temp(&dir, "far.pcap", &file);
    let plan = plan_of(&path, false);
    let mut peek = Peek::read(File::open(&path).expect("open"), plan.file_len());
    assert_eq!(plan.resync(&mut peek, fakes).expect("search"), Some(real));
    let Peek::Read { reads, .. } = peek else {
        panic!("a read search")
    };
    // The search's window moves on 4 times over the 3.1 MiB; the chains read 16 stretches of
    // 4 KiB near their far ends.
    assert!(reads <= 32, "{reads} reads");
}

/// A pcap whose first packet is stamped 1970 (its host's clock not yet set) and every later one
/// in 2023: the boundary search expects records near the first packets' median, not near the
/// first one alone, so every chunk still finds its start. With the first packet's seconds as
/// the reference, no chunk past the first found one, and the scan went to one thread.
#[test]
fn a_first_packet_stamped_1970_still_splits() {
    let dir = Scratch::new("split");
    let mut rng = Rng(5);
    for stamped in [1, 2, 7] {
        let opts = PcapOptions {
            nanos: false,
            snaplen: 65535,
            ..Default::default()
        };
        let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
        let mut ts = 1_700_000_000_000_000_000i64;
        for i in 0..2_000 {
            ts += rng.below(3_000_000) as i64 * 1000;
            let data = payload(&mut rng, w.get_ref(), false);
            // The first `stamped` packets are early: up to 7 of the 15 the reference looks at,
            // fewer than half, so their median is a 2023 second.
            let at = if i < stamped {
                (i as i64 + 1) * 1_000
            } else {
                ts
            };
            w.write_packet(at, data.len() as u32, &data)
                .expect("packet");
        }
        let bytes = w.finish().expect("finish");
        let path = temp(&dir, &format!("clock-{stamped}"), &bytes);
        let want = sequential(&path);
        for mmap in [false, true] {
            let plan = plan_of(&path, mmap);
            let len = bytes.len() as u64;
            for cut in [len / 4, len / 2, len * 3 / 4] {
                assert!(
                    plan.open(cut, len).expect("open").is_some(),
                    "{stamped} early packets, mmap {mmap}: no start found after {cut}"
                );
            }
            let got = chunked(&plan, &[len / 3, len * 2 / 3]).expect("chunks line up");
            assert_eq!(got, want, "{stamped} early packets, mmap {mmap}");
        }
    }
}

#[test]
fn a_chunk_reports_damage_at_its_offset_in_the_file() {
    // A chunk reads the header and then the file from its range on, as one stream: an error
    // must still name the damaged record's offset in the file, as a sequential read does.
    let mut rng = Rng(41);
    let dir = Scratch::new("split");
    for (name, clean) in files(&mut rng, 300, false) {
        let path = temp(&dir, &name, &clean);
        let offsets: Vec<u64> = sequential(&path).iter().map(|r| r.0).collect();
        let damaged = offsets[offsets.len() * 3 / 4] as usize;
        let mut bytes = clean.clone();
        // The record's captured length (pcap) or the block's length (pcapng): huge either way
        // round.
        let field = if name.starts_with("pcapng") { 4 } else { 8 };
        bytes[damaged + field..damaged + field + 4].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xF0]);
        std::fs::write(&path, &bytes).expect("write");
        let input = crate::input::open_path(&path).expect("open");
        let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
        let want = loop {
            match r.next_packet() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{name}: damage not met"),
                Err(e) => break e,
            }
        };
        assert_eq!(want.offset, Some(damaged as u64), "{name}: {want}");
        for mmap in [false, true] {
            let plan = plan_of(&path, mmap);
            for &from in &offsets[offsets.len() / 4..offsets.len() / 2] {
                let mut c = plan
                    .open(from, plan.file_len())
                    .expect("open chunk")
                    .expect("chunk");
                let got = loop {
                    match c.next_packet() {
                        Ok(Some(_)) => {}
                        Ok(None) => panic!("{name}: chunk at {from} met no damage"),
                        Err(e) => break e,
                    }
                };
                assert_eq!(got.to_string(), want.to_string(), "{name}: chunk at {from}");
            }
        }
    }
}
