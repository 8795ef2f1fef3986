//! A chunk whose boundary search passes over real records. The search trusts a candidate only
//! when the records chained after it lie within an hour of each other, so in a pcap with a gap
//! of two hours between two packets, a chunk whose range starts in the last few records before
//! the gap starts after the gap: the records between its range's start and the gap are read by
//! no chunk. The chunk before stops at the first of them, the chunk after starts past them, and
//! the split must be refused there (the caller then reads sequentially); were it not, the
//! skipped packets would vanish from the read without a word. A guard, not a gap: with
//! `first != expect` dropped from `chunks_line_up`, the random test of false boundaries
//! (`split::tests::records_inside_packets_never_give_other_packets`) failed too, on chunks that
//! started at a false boundary inside a packet; this pins the case of a search that passes over
//! real records, as an idle hour in a capture makes it.
//!
//! Oracle: the sequential reader of the whole file, at every byte cut of a small capture.

use burstcore::capture::split::SplitPlan;
use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::writer::{PcapOptions, PcapWriter};
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::read_in_two;
use scratch::Scratch;

const PACKETS: usize = 30;
/// The gap comes before this packet.
const GAP_BEFORE: usize = 15;
const FRAME: usize = 60;
/// pcap file header, record header.
const FILE_HEADER: u64 = 24;
const RECORD: u64 = 16 + FRAME as u64;

/// Packets 1 ms apart but for a gap of two hours before packet `GAP_BEFORE`.
fn capture() -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), PcapOptions::default()).expect("header");
    let frame = [0x5au8; FRAME];
    let mut ts = 1_700_000_000_000_000_000i64;
    for i in 0..PACKETS {
        ts += if i == GAP_BEFORE {
            7_200_000_000_000
        } else {
            1_000_000
        };
        w.write_packet(ts, FRAME as u32, &frame).expect("packet");
    }
    w.finish().expect("finish")
}

type Row = (u64, Option<i64>);

fn sequential(path: &Path) -> Vec<Row> {
    let input = burstcore::input::open_path(path).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().expect("read") {
        out.push((p.offset, p.ts_ns));
    }
    out
}

/// The packets of a read in two chunks cut at `cut`; `None` when the chunks do not line up.
fn split(plan: &SplitPlan, cut: u64) -> Option<Vec<Row>> {
    read_in_two(plan, cut).map(|(packets, _)| packets)
}

#[test]
fn records_the_search_passes_over_refuse_the_split() {
    let dir = Scratch::new("split_skipped_records");
    let bytes = capture();
    assert_eq!(bytes.len() as u64, FILE_HEADER + PACKETS as u64 * RECORD);
    let path = dir.join("gap.pcap");
    std::fs::write(&path, &bytes).expect("write");
    let want = sequential(&path);
    assert_eq!(want.len(), PACKETS);

    let plan = SplitPlan::new(&path, ReadOptions::default())
        .expect("plan")
        .expect("splittable");
    // A cut at packet 10: its chain of 8 records (10..17) crosses the gap, as do those of 11..14,
    // so the second chunk starts at packet 15 and packets 10..14 are read by neither chunk.
    let at_10 = FILE_HEADER + 10 * RECORD;
    assert_eq!(split(&plan, at_10), None, "cut at packet 10 ({at_10})");

    // Every cut that lines up reads the sequential read's packets; cuts well before the gap
    // and after it do line up.
    let mut lined_up = 0;
    for cut in plan.data_start()..=plan.file_len() {
        if let Some(got) = split(&plan, cut) {
            assert_eq!(got, want, "cut at {cut}");
            lined_up += 1;
        }
    }
    assert!(
        lined_up > 10 * RECORD as usize,
        "only {lined_up} cuts lined up"
    );
}
