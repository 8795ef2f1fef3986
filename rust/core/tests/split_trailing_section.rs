//! A Section Header Block with no interface and no packet after it, at the end of a pcapng. A
//! sequential read reports two sections; a split read reports the sections its plan saw before
//! the first packet, so a chunk that meets the later section has no seam and the split is
//! refused. Every other late section declares an interface before its packets, which the
//! interface count of `ChunkReader::seam` catches on its own: mutation testing (the section
//! count dropped from `ChunkReader::seam`) showed no test had a section without one.
//!
//! Oracle: the sequential reader of the whole file, at every 4-byte cut of a small capture.

use burstcore::capture::split::SplitPlan;
use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};

mod reader_util;
mod scratch;
use reader_util::pcapng_with_blocks;
use scratch::Scratch;

const PACKETS: usize = 30;

fn capture() -> Vec<u8> {
    pcapng_with_blocks(PACKETS, |i, _, w| {
        if i + 1 == PACKETS {
            w.section(ByteOrder::Little, Some("empty"))
                .expect("trailing shb");
        }
    })
}

#[test]
fn a_trailing_section_refuses_the_split() {
    let dir = Scratch::new("split_trailing_section");
    let path = dir.join("trailing.pcapng");
    std::fs::write(&path, capture()).expect("write");
    let input = burstcore::input::open_path(&path).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    let mut packets = 0;
    while r.next_packet().expect("read").is_some() {
        packets += 1;
    }
    assert_eq!((packets, r.sections().len()), (PACKETS, 2));

    let plan = SplitPlan::new(&path, ReadOptions::default())
        .expect("plan")
        .expect("splittable");
    // The last chunk always reads on to the end of the file, through the trailing section.
    for cut in (plan.data_start()..=plan.file_len()).step_by(4) {
        let mut ends = Vec::new();
        for (from, to) in [(plan.data_start(), cut), (cut, plan.file_len())] {
            let mut c = plan.open(from, to).expect("open").expect("a boundary");
            while c.next_packet().expect("read").is_some() {}
            ends.push(c.end());
        }
        assert!(
            plan.read_whole(&ends).is_none(),
            "cut at {cut} lined up, past a section a sequential read reports"
        );
    }
}
