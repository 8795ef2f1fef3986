//! The core as a Rust tool embeds it, without the Python layer in front: arguments the bindings
//! check before calling are checked by the core too, and errors print as a user would expect.

use burstcore::analysis::FlowOptions;
use burstcore::analyze::{self, OrderOptions};
use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::{ErrorKind, TimeRange};
use std::io::Cursor;

/// Ten TCP packets between two hosts, 1 µs apart.
fn reader() -> CaptureReader {
    let options = PcapOptions {
        snaplen: 65535,
        ..Default::default()
    };
    let mut w = PcapWriter::new(Vec::new(), options).unwrap();
    let mut frame = Vec::new();
    for k in 0..10 {
        TcpSegment::between_hosts(0, 1, 1000, 80)
            .write_frame(100, 0, &mut frame)
            .unwrap();
        w.write_packet(1_000 * k, 100, &frame).unwrap();
    }
    let bytes = w.finish().unwrap();
    let input = burstcore::input::from_reader(Box::new(Cursor::new(bytes)), None).unwrap();
    CaptureReader::new(input, ReadOptions::default()).unwrap()
}

/// The defaults an embedding tool gets without naming them, checked against the pcap file
/// header's layout (draft-ietf-opsawg-pcap): ns magic written little-endian, version 2.4,
/// snaplen 262,144, link type 1 (Ethernet).
#[test]
fn pcap_options_default_to_a_little_endian_ns_ethernet_capture() {
    let header = PcapWriter::new(Vec::new(), PcapOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
    assert_eq!(header.len(), 24);
    assert_eq!(word(0), 0xa1b2_3c4d);
    assert_eq!(&header[4..8], &[2, 0, 4, 0]);
    assert_eq!((word(16), word(20)), (262_144, 1));
}

#[test]
fn analyses_refuse_a_time_range_that_ends_before_it_starts() {
    for (start, end) in [(10, 5), (5, 5), (i64::MAX, 0)] {
        let order = OrderOptions {
            time_range: TimeRange {
                start_ns: Some(start),
                end_ns: Some(end),
            },
            ..OrderOptions::default()
        };
        let got = analyze::traffic_matrix(&mut [reader()], 10, order.clone(), &mut |_| Ok(()));
        let err = got.expect_err("an empty stretch is refused, as by a scan");
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
        assert!(err.reason.contains("start"), "{err}");
        let got = analyze::flows(
            &mut [reader()],
            FlowOptions::default(),
            &[],
            order,
            &mut |_| Ok(()),
        );
        assert_eq!(got.unwrap_err().kind, ErrorKind::InvalidArgument);
    }
    // A range that holds packets is still read.
    let order = OrderOptions {
        time_range: TimeRange {
            start_ns: Some(0),
            end_ns: Some(5_000),
        },
        ..OrderOptions::default()
    };
    let (m, acc) = analyze::traffic_matrix(&mut [reader()], 10, order, &mut |_| Ok(())).unwrap();
    assert_eq!((m.total_packets, acc.skipped_outside_range), (5, 5));
}

#[test]
fn flows_refuse_a_negative_idle_timeout() {
    let opts = FlowOptions {
        idle_timeout_ns: Some(-5),
        ..FlowOptions::default()
    };
    let got = analyze::flows(
        &mut [reader()],
        opts,
        &[],
        OrderOptions::default(),
        &mut |_| Ok(()),
    );
    let err = got.expect_err("a negative idle timeout made every packet its own flow");
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    // Zero is a timeout (every gap ends a flow), as in Python.
    let opts = FlowOptions {
        idle_timeout_ns: Some(0),
        ..FlowOptions::default()
    };
    let (report, _, _) = analyze::flows(
        &mut [reader()],
        opts,
        &[],
        OrderOptions::default(),
        &mut |_| Ok(()),
    )
    .unwrap();
    assert_eq!(report.flows.len(), 10);
}

#[test]
fn error_kinds_display_their_names() {
    assert_eq!(ErrorKind::Corrupt.to_string(), "corrupt");
    assert_eq!(format!("{}: x", ErrorKind::OutOfOrder), "out of order: x");
}

#[test]
fn tables_refuse_a_time_range_that_ends_before_it_starts() {
    let select = burstcore::table::Selection {
        range: TimeRange {
            start_ns: Some(5),
            end_ns: Some(5),
        },
        filter: None,
    };
    for threads in [None, Some(2)] {
        let mut r = reader();
        let got = match threads {
            None => burstcore::table::read_table_where(&mut r, None, None, select, &mut |_| Ok(()))
                .map(|_| ()),
            Some(t) => burstcore::table::read_table_threads_where(
                &mut r,
                None,
                None,
                t,
                select,
                &mut |_| Ok(()),
            )
            .map(|_| ()),
        };
        assert_eq!(got.unwrap_err().kind, ErrorKind::InvalidArgument);
    }
}

/// A tool keeps the readers, writers and scanners in structs of its own that derive Debug (a
/// daemon's state, a CLI's options): each must be Debug without its sink or source being so.
#[test]
fn public_types_are_debug_whatever_their_source_or_sink() {
    use burstcore::analysis::{BurstDetector, FlowTable, IterationAnalyzer};
    use burstcore::engine::{ScanConfig, Scanner};
    use burstcore::pipeline::ColumnScan;
    use burstcore::table::batches::PacketBatches;
    use burstcore::writer::PcapNgWriter;
    use std::fmt::Debug;

    /// A sink that is not Debug, as a socket wrapper of a tool's own may not be.
    struct Opaque(Vec<u8>);
    impl std::io::Write for Opaque {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    fn shown(x: &impl Debug) -> String {
        format!("{x:?}")
    }

    let mut r = reader();
    r.next_packet().unwrap();
    let text = shown(&r);
    assert!(text.starts_with("CaptureReader {"), "{text}");
    assert!(text.contains("compression: None"), "{text}");
    assert!(text.contains("packets: 1"), "{text}");
    let text = shown(&PcapWriter::new(Opaque(Vec::new()), PcapOptions::default()).unwrap());
    assert!(text.contains("written: 24"), "{text}");
    assert!(shown(&PcapNgWriter::new(Opaque(Vec::new()))).contains("written: 0"));
    let input = burstcore::input::from_reader(Box::new(Cursor::new(vec![0u8; 4])), Some(4));
    assert!(shown(&input.unwrap()).contains("file_len: Some(4)"));
    let text = shown(&Scanner::new(ScanConfig::default()).unwrap());
    assert!(text.contains("by: [All]"), "{text}");
    let cols = ["timestamp".to_string()];
    let batches = PacketBatches::new(
        reader(),
        Some(&cols[..]),
        TimeRange::default(),
        None,
        4,
        None,
    );
    assert!(shown(&batches.unwrap()).starts_with("PacketBatches {"));
    shown(&ColumnScan::new(ScanConfig::default()).unwrap());
    shown(&BurstDetector::new(1_000));
    shown(&FlowTable::new(FlowOptions::default()));
    shown(&IterationAnalyzer::new(Default::default()));
}

/// The daemon's shape: readers moved to worker threads, a config and errors shared between
/// them, errors boxed into `Box<dyn Error + Send + Sync>` (anyhow's bound).
#[test]
fn readers_move_between_threads_and_errors_cross_them() {
    fn send<T: Send>() {}
    fn shared<T: Send + Sync + 'static>() {}
    fn boxed<T: std::error::Error + Send + Sync + 'static>() {}
    send::<CaptureReader>();
    send::<burstcore::table::batches::PacketBatches>();
    send::<burstcore::engine::Scanner>();
    send::<PcapWriter<std::fs::File>>();
    shared::<burstcore::engine::ScanConfig>();
    shared::<burstcore::engine::ScanOutput>();
    shared::<burstcore::pipeline::Accounting>();
    shared::<burstcore::Filter>();
    shared::<burstcore::Warning>();
    boxed::<burstcore::Error>();

    let config = burstcore::engine::ScanConfig {
        windows_ns: vec![1_000, 2_000],
        ..Default::default()
    };
    let counted: Vec<u64> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (r, config) = (reader(), config.clone());
                s.spawn(move || {
                    let size = burstcore::pipeline::SizeKind::Wire;
                    let got = burstcore::pipeline::scan(&mut [r], config, size, &mut |_| Ok(()));
                    got.map(|(out, acc)| (out.envelope[1].bytes, acc.counted))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                let (e2, counted) = w.join().unwrap().unwrap();
                // Two 100-byte packets 1 µs apart in any 2 µs window.
                assert_eq!(e2, 200);
                counted
            })
            .collect()
    });
    assert_eq!(counted, [10, 10]);
}

/// `TrafficMatrix::default()` is what `new()` is: its derived default held no pair at all
/// (`max_pairs` 0), so that the first packet was refused with "more than 0 host pairs".
#[test]
fn a_default_traffic_matrix_takes_packets() {
    use burstcore::analysis::TrafficMatrix;
    use burstcore::engine::Arrival;
    use burstcore::wire::Headers;
    let host = |k: u8| Some(std::net::IpAddr::from([10, 0, 0, k]));
    let arrival = Arrival {
        ts_ns: 0,
        size: 100,
        interface: 0,
        headers: Headers {
            src: host(1),
            dst: host(2),
            ..Headers::default()
        },
    };
    let mut m = TrafficMatrix::default();
    assert_eq!(m.max_pairs, TrafficMatrix::new().max_pairs);
    m.try_push(&arrival).expect("the first pair fits");
    assert_eq!(m.finish().unwrap().pair(host(1), host(2)), (100, 1));
}
