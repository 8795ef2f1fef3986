//! Multi-threaded scans against the single-threaded scan of the same bytes, on the inputs where
//! differential fuzzing (fuzz/fuzz_targets/scan_threads.rs) found them to differ; each input is
//! built here, small, with the project's writer.

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::{By, ScanConfig};
use burstcore::pipeline::{self, SizeKind};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::ErrorKind;

const WIRE: u32 = 100;
const RECORD: u64 = 16 + WIRE as u64;

/// A pcap of TCP segments of 100 bytes, one per `(ts, source host)`, all to host 9.
fn pcap(packets: &[(i64, u16)]) -> Vec<u8> {
    let to_9: Vec<_> = packets.iter().map(|&(ts, src)| (ts, src, 9)).collect();
    pcap_between(&to_9)
}

/// A pcap of TCP segments of 100 bytes, one per `(ts, source host, destination host)`.
fn pcap_between(packets: &[(i64, u16, u16)]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), PcapOptions::default()).expect("header");
    let mut frame = Vec::new();
    for &(ts, src, dst) in packets {
        TcpSegment::between_hosts(src, dst, 1000, 2000)
            .write_frame(WIRE, 0, &mut frame)
            .expect("frame");
        w.write_packet(ts, WIRE, &frame).expect("packet");
    }
    w.finish().expect("finish")
}

/// `(kind, offset, reason)` of the error a scan of `bytes` (read as a stream: the metrics are
/// shared out among threads) ends with, or `None` if it succeeds.
fn scan_error(
    bytes: &[u8],
    config: &ScanConfig,
    strict: bool,
    threads: usize,
) -> Option<(ErrorKind, Option<u64>, String)> {
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let input = burstcore::input::from_reader(
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        Some(bytes.len() as u64),
    )
    .expect("input");
    let opts = ReadOptions::default().with_strict(strict);
    let mut readers = vec![CaptureReader::new(input, opts).expect("reader")];
    pipeline::scan_threads(
        &mut readers,
        config.clone(),
        SizeKind::Wire,
        threads,
        &mut |_| Ok(()),
    )
    .err()
    .map(|e| (e.kind, e.offset, e.reason))
}

/// A capture cut inside its fourth record, after three packets from three hosts that the reorder
/// buffer still holds (all within the horizon): the single-threaded scan stops at the cut, and
/// never scans the three, so never meets a third group beyond `max_groups=2`. The workers that
/// share the groupings out used to flush their buffers when the reading thread stopped, met the
/// third group and reported it instead of the damage.
#[test]
fn a_read_error_with_packets_held_for_reordering_is_the_error_on_every_thread_count() {
    let t = 1_700_000_000_000_000_000i64;
    let mut bytes = pcap(&[(t, 1), (t + 10, 2), (t + 20, 3), (t + 30, 4)]);
    bytes.truncate(24 + 3 * RECORD as usize + 10);
    for by in [
        vec![By::All, By::Src],
        vec![By::Src],
        vec![By::All, By::Src, By::Pair],
    ] {
        let config = ScanConfig::default()
            .with_windows_ns(vec![1_000, 1_000_000])
            .with_rates_bps(vec![1_000_000_000])
            .with_by(by.clone())
            .with_reorder_horizon_ns(1_000_000_000)
            .with_max_groups(2);
        // Strict: the cut is an error (not a warning) at the fourth record's header.
        let want = (ErrorKind::Truncated, Some(24 + 3 * RECORD));
        let one = scan_error(&bytes, &config, true, 1).expect("the cut fails the scan");
        assert_eq!((one.0, one.1), want, "one thread, by {by:?}: {}", one.2);
        for threads in 2..=4 {
            let many = scan_error(&bytes, &config, true, threads).expect("fails");
            assert_eq!(many, one, "{threads} threads, by {by:?}");
        }
        // The same packets, not cut: the third source is too many groups on any thread count.
        let whole = pcap(&[(t, 1), (t + 10, 2), (t + 20, 3), (t + 30, 4)]);
        for threads in 1..=4 {
            let e = scan_error(&whole, &config, true, threads).expect("too many groups");
            assert_eq!(e.0, ErrorKind::LimitExceeded, "{threads} threads: {}", e.2);
        }
    }
}

/// Two groupings, each with too many groups, the one at an earlier packet than the other: the
/// single-threaded scan reports the first packet's, whichever thread scans each grouping.
#[test]
fn the_earliest_packet_over_max_groups_names_the_grouping_on_every_thread_count() {
    let t = 1_700_000_000_000_000_000i64;
    // A third destination at the third packet, a third source at the fifth; then the reverse.
    let dst_first = [(1, 1), (1, 2), (1, 3), (2, 1), (3, 1)];
    let src_first = [(1, 1), (2, 1), (3, 1), (1, 2), (1, 3)];
    for (hosts, want) in [
        (dst_first, "grouping by dst"),
        (src_first, "grouping by src"),
    ] {
        let packets: Vec<_> = (0..)
            .zip(hosts)
            .map(|(i, (s, d))| (t + 1_000 * i, s, d))
            .collect();
        let bytes = pcap_between(&packets);
        for by in [vec![By::Src, By::Dst], vec![By::All, By::Src, By::Dst]] {
            for horizon in [0, 1_000_000_000] {
                let config = ScanConfig::default()
                    .with_windows_ns(vec![1_000, 1_000_000])
                    .with_rates_bps(vec![1_000_000_000])
                    .with_by(by.clone())
                    .with_reorder_horizon_ns(horizon)
                    .with_max_groups(2);
                let one = scan_error(&bytes, &config, false, 1).expect("too many groups");
                assert_eq!(one.0, ErrorKind::LimitExceeded);
                assert!(one.2.contains(want), "one thread, by {by:?}: {}", one.2);
                for threads in 2..=4 {
                    let many = scan_error(&bytes, &config, false, threads).expect("fails");
                    assert_eq!(many, one, "{threads} threads, by {by:?}, horizon {horizon}");
                }
            }
        }
    }
}
