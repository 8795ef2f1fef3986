//! What a packet counts for each size kind, on frames captured short of their wire length, checked
//! against lengths worked out here by hand. Found by mutation testing: counting the wire length
//! for `SizeKind::Captured` passed every Rust test (only a Python test caught it).

use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::engine::ScanConfig;
use burstcore::pipeline::{scan, SizeKind};
use burstcore::writer::{PcapOptions, PcapWriter};

/// (timestamp ns, wire length, captured length): every frame cut at the 64-byte snaplen but one.
const FRAMES: [(i64, u32, usize); 4] = [
    (0, 1500, 64),
    (1_000, 60, 60),
    (2_000, 9000, 64),
    (2_500, 100, 64),
];

fn capture(big: bool) -> Vec<u8> {
    let mut w = PcapWriter::new(
        Vec::new(),
        PcapOptions::default()
            .with_byte_order(if big {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            })
            .with_nanos(true)
            .with_linktype(1)
            .with_snaplen(64)
            .with_fcs_len(0),
    )
    .expect("writer");
    for (ts, wire, cap) in FRAMES {
        w.write_packet(ts, wire, &vec![0u8; cap]).expect("frame");
    }
    w.finish().expect("capture")
}

/// (E(τ) for τ = 1 ns, 1 µs, 3 µs (half-open), bytes of the group "all").
fn envelope(data: Vec<u8>, size: SizeKind) -> (Vec<u64>, u64) {
    let len = data.len() as u64;
    let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(data)), Some(len))
        .expect("input");
    let mut readers = [CaptureReader::new(input, ReadOptions::default()).expect("reader")];
    let config = ScanConfig::default().with_windows_ns(vec![1, 1_000, 3_000]);
    let (out, accounting) = scan(&mut readers, config, size, &mut |_done| Ok(())).expect("scan");
    assert_eq!(accounting.counted, FRAMES.len() as u64);
    (
        out.envelope.iter().map(|r| r.bytes).collect(),
        out.groups[0].bytes,
    )
}

#[test]
fn wire_captured_and_l1_sizes_of_snapped_frames() {
    for big in [false, true] {
        // Wire: the original lengths. [2000, 3000) holds 9000 + 100.
        assert_eq!(
            envelope(capture(big), SizeKind::Wire),
            (vec![9000, 9100, 10_660], 10_660),
            "big-endian {big}"
        );
        // Captured: what the file holds, at most the snaplen. [0, 1000) holds one frame of 64
        // bytes; [1000, 2000) 60; [2000, 3000) 64 + 64.
        assert_eq!(
            envelope(capture(big), SizeKind::Captured),
            (vec![64, 128, 252], 252),
            "big-endian {big}"
        );
        // L1: the wire frame (at least 60 bytes) plus FCS, preamble, SFD and inter-frame gap.
        let l1 = |wire: u64| wire.max(60) + 24;
        assert_eq!(
            envelope(capture(big), SizeKind::L1(Default::default())),
            (
                vec![
                    l1(9000),
                    l1(9000) + l1(100),
                    l1(1500) + l1(60) + l1(9000) + l1(100)
                ],
                l1(1500) + l1(60) + l1(9000) + l1(100)
            ),
            "big-endian {big}"
        );
    }
}
