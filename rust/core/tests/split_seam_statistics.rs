//! An Interface Statistics Block in the seam between two chunks of a split read. A chunk reads
//! on past its range's end up to the packet it stops at, so a block that lies between that end
//! and that packet is read by both that chunk and the next one (which starts at the first block
//! at or after the range's end and meets it before its first packet). The merged statistics
//! must count it once, as a sequential read does. Mutation testing (`k == 0` made `k != 0` in
//! `SplitPlan::interfaces_after`, which then counted such a block twice) showed no test put a
//! statistics block there.
//!
//! Oracle: the sequential reader of the whole file, at every 4-byte cut of a small capture.

use burstcore::capture::split::SplitPlan;
use burstcore::capture::{CaptureReader, InterfaceStats, ReadOptions};
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::{pcapng_with_blocks, read_in_two};
use scratch::Scratch;

const PACKETS: usize = 40;
/// The statistics block comes after this packet.
const ISB_AFTER: usize = 19;

/// A one-interface pcapng of `PACKETS` zero frames with one statistics block among them; its
/// bytes and the statistics block's offset.
fn capture() -> (Vec<u8>, u64) {
    let bytes = pcapng_with_blocks(PACKETS, |i, ts, w| {
        if i == ISB_AFTER {
            let stats = InterfaceStats::default()
                .with_if_recv(Some(50))
                .with_if_drop(Some(7));
            w.interface_statistics(0, ts as u64, &stats).expect("isb");
        }
    });
    // Walk the blocks (type, total length) to find the statistics block (type 5).
    let mut at = 0usize;
    let mut isb = None;
    while at + 8 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes"));
        if kind == 5 {
            isb = Some(at as u64);
        }
        at += len as usize;
    }
    (bytes, isb.expect("the capture has a statistics block"))
}

fn sequential_stats(path: &Path) -> Vec<InterfaceStats> {
    let input = burstcore::input::open_path(path).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    while r.next_packet().expect("read").is_some() {}
    r.interfaces().iter().map(|i| i.stats.clone()).collect()
}

/// The interfaces' statistics of a read in two chunks cut at `cut`; `None` when the chunks do
/// not line up (the caller would then read sequentially).
fn split_stats(plan: &SplitPlan, cut: u64) -> Option<Vec<InterfaceStats>> {
    let (_, interfaces) = read_in_two(plan, cut)?;
    Some(interfaces.iter().map(|i| i.stats.clone()).collect())
}

#[test]
fn a_statistics_block_in_the_seam_is_counted_once() {
    let dir = Scratch::new("split_seam_statistics");
    let (bytes, isb_at) = capture();
    let path = dir.join("isb.pcapng");
    std::fs::write(&path, &bytes).expect("write");
    let want = sequential_stats(&path);
    assert_eq!(want.len(), 1);
    assert_eq!(want[0].isb_count, 1);
    assert_eq!(want[0].if_drop, Some(7));

    let plan = SplitPlan::new(&path, ReadOptions::default())
        .expect("plan")
        .expect("splittable");
    // Cut right at the statistics block: the first chunk stops at the packet after it (reading
    // the block on the way), the second starts at the block and reads it before that packet.
    let at_block = split_stats(&plan, isb_at).expect("the chunks cut at the block line up");
    assert_eq!(at_block, want, "cut at the statistics block ({isb_at})");

    // Every other cut that lines up gives the sequential read's statistics too.
    let mut lined_up = 0;
    for cut in (plan.data_start()..=plan.file_len()).step_by(4) {
        if let Some(got) = split_stats(&plan, cut) {
            assert_eq!(got, want, "cut at {cut}");
            lined_up += 1;
        }
    }
    assert!(lined_up > PACKETS, "only {lined_up} cuts lined up");
}
