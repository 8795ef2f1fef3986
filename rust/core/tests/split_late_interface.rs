//! An Interface Description Block after the first packet, in a capture of one section whose
//! packets all stay on the interface declared up front. Every chunk of a split read starts from
//! the interfaces before the first packet, so a chunk that meets the late description is the
//! only one to know it, and the read of the whole file the chunks make
//! (`SplitPlan::read_whole`) would report one interface where a sequential read reports two.
//! Such a chunk has no seam, and the split is refused. Mutation testing (the interface count
//! dropped from `ChunkReader::seam`) showed the one test with a late interface also had a
//! second section, which refused every cut on its own.
//!
//! Oracle: the sequential reader of the whole file, at every 4-byte cut of a small capture.

use burstcore::capture::split::SplitPlan;
use burstcore::capture::{CaptureReader, ReadOptions, TsResolution};
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::{pcapng_with_blocks, read_in_two};
use scratch::Scratch;

const PACKETS: usize = 40;
/// The second interface is declared after this packet.
const LATE_AFTER: usize = 19;

fn capture() -> Vec<u8> {
    pcapng_with_blocks(PACKETS, |i, _, w| {
        if i == LATE_AFTER {
            w.interface(1, 0, TsResolution::Pow10(6), 0, Some("eth1"))
                .expect("late idb");
        }
    })
}

/// Packets (offset, time) and interface names.
type Read = (Vec<(u64, Option<i64>)>, Vec<Option<String>>);

fn sequential(path: &Path) -> Read {
    let input = burstcore::input::open_path(path).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    let mut packets = Vec::new();
    while let Some(p) = r.next_packet().expect("read") {
        packets.push((p.offset, p.ts_ns));
    }
    let names = r.interfaces().iter().map(|i| i.name.clone()).collect();
    (packets, names)
}

/// What a read in two chunks cut at `cut` gives; `None` when the chunks do not line up (the
/// caller would then read sequentially).
fn split(plan: &SplitPlan, cut: u64) -> Option<Read> {
    let (packets, interfaces) = read_in_two(plan, cut)?;
    Some((packets, interfaces.iter().map(|i| i.name.clone()).collect()))
}

#[test]
fn a_late_interface_description_refuses_the_split() {
    let dir = Scratch::new("split_late_interface");
    let path = dir.join("late.pcapng");
    std::fs::write(&path, capture()).expect("write");
    let want = sequential(&path);
    assert_eq!(want.0.len(), PACKETS);
    assert_eq!(want.1, [Some("eth0".to_string()), Some("eth1".to_string())]);

    let plan = SplitPlan::new(&path, ReadOptions::default())
        .expect("plan")
        .expect("splittable");
    assert_eq!(plan.interfaces(), 1);
    // Whatever the cut, one chunk or the other reads the late description: the first reads on
    // to the packet after its range's end, the second from the first block at or after it.
    for cut in (plan.data_start()..=plan.file_len()).step_by(4) {
        let got = split(&plan, cut);
        assert_eq!(got, None, "cut at {cut} lined up; sequential: {want:?}");
    }
}
