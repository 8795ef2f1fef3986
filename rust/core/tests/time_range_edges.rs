//! A scan's time range is half-open, [start, end): a packet at exactly `end` is left out and
//! counted as outside, one at exactly `start` is in. Found by mutation testing: an inclusive end
//! passed every Rust test but one that only checks an error message (a Python test caught it).

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::ScanConfig;
use burstcore::pipeline::{scan, SizeKind};
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::TimeRange;

/// A pcap of 60-byte frames, each `(ns, wire length)`, in the order given.
fn pcap_of(frames: impl IntoIterator<Item = (i64, u32)>) -> Vec<u8> {
    let options = PcapOptions::default().with_snaplen(65535);
    let mut w = PcapWriter::new(Vec::new(), options).expect("writer");
    for (t, wire) in frames {
        w.write_packet(t, wire, &[0u8; 60]).expect("frame");
    }
    w.finish().expect("capture")
}

/// Frames of 100, 200, 400, 800 bytes at 0, 1000, 2000, 3000 ns.
fn capture() -> Vec<u8> {
    pcap_of((0..4u32).map(|k| (i64::from(k) * 1000, 100 << k)))
}

/// (packets counted, skipped outside the range, bytes, E(10 µs)).
fn scan_range(range: TimeRange) -> (u64, u64, u64, u64) {
    let data = capture();
    let len = data.len() as u64;
    let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(data)), Some(len))
        .expect("input");
    let mut readers = [CaptureReader::new(input, ReadOptions::default()).expect("reader")];
    let config = ScanConfig::default()
        .with_windows_ns(vec![10_000])
        .with_time_range(range);
    let (out, acc) = scan(&mut readers, config, SizeKind::Wire, &mut |_done| Ok(())).expect("scan");
    let bytes = out.groups.first().map_or(0, |g| g.bytes);
    let e = out.envelope.first().map_or(0, |r| r.bytes);
    (acc.counted, acc.skipped_outside_range, bytes, e)
}

#[test]
fn the_range_holds_its_start_and_not_its_end() {
    let range = |start_ns, end_ns| TimeRange { start_ns, end_ns };
    // [1000, 3000): the packets at 1000 and 2000.
    assert_eq!(scan_range(range(Some(1000), Some(3000))), (2, 2, 600, 600));
    // [1000, 3001): the one at 3000 too.
    assert_eq!(
        scan_range(range(Some(1000), Some(3001))),
        (3, 1, 1400, 1400)
    );
    // [1001, 2000): none of them.
    assert_eq!(scan_range(range(Some(1001), Some(2000))), (0, 4, 0, 0));
    // [2000, 2001): the one at 2000 alone; open ends take the rest.
    assert_eq!(scan_range(range(Some(2000), Some(2001))), (1, 3, 400, 400));
    assert_eq!(scan_range(range(None, Some(1000))), (1, 3, 100, 100));
    assert_eq!(scan_range(range(Some(3000), None)), (1, 3, 800, 800));
}

/// Frames at 3000, 0, 2000 and 1000 ns, in that file order.
fn shuffled() -> Vec<u8> {
    pcap_of([3000, 0, 2000, 1000].map(|t| (t, 100)))
}

fn reader_of(data: Vec<u8>) -> CaptureReader {
    let len = data.len() as u64;
    let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(data)), Some(len))
        .expect("input");
    CaptureReader::new(input, ReadOptions::default()).expect("reader")
}

/// The earliest and latest timestamp read, which a range that kept none of the packets (or one
/// far from them) is told against: whatever the range kept, in a scan, an analysis (with its
/// offset) and a table read; not looked for without a range.
#[test]
fn every_read_with_a_range_gives_the_span_of_the_timestamps_read() {
    let kept_one = TimeRange {
        start_ns: Some(2500),
        end_ns: None,
    };
    let none = TimeRange {
        start_ns: None,
        end_ns: Some(-5),
    };
    for (range, span) in [
        (kept_one, Some((0, 3000))),
        (none, Some((0, 3000))),
        (TimeRange::ALL, None),
    ] {
        let config = ScanConfig::default()
            .with_windows_ns(vec![10_000])
            .with_time_range(range);
        let mut readers = [reader_of(shuffled())];
        let (_, acc) =
            scan(&mut readers, config, SizeKind::Wire, &mut |_done| Ok(())).expect("scan");
        assert_eq!(acc.ts_span, span, "scan of {range:?}");

        let order = burstcore::analyze::OrderOptions::default().with_time_range(range);
        let mut readers = [reader_of(shuffled())];
        let (acc, _) = burstcore::analyze::for_each(
            &mut readers,
            &[7],
            order,
            &mut |_| Ok(()),
            &mut |_, _| Ok(()),
        )
        .expect("analysis");
        // The offset moves every timestamp before the range sees it.
        assert_eq!(
            acc.ts_span,
            span.map(|(a, b)| (a + 7, b + 7)),
            "analysis of {range:?}"
        );

        let select = burstcore::table::Selection::default()
            .with_range(range)
            .with_filter(None);
        let mut reader = reader_of(shuffled());
        let t =
            burstcore::table::read_table_where(&mut reader, None, None, select, &mut |_| Ok(()))
                .expect("table");
        assert_eq!(t.read.ts_span, span, "table of {range:?}");
        let outside = if range == kept_one {
            3
        } else if range == none {
            4
        } else {
            0
        };
        assert_eq!(
            (
                t.read.packets_read,
                t.read.counted,
                t.read.skipped_outside_range
            ),
            (4, 4 - outside, outside)
        );
    }
}
