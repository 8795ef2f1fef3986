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
    let options = PcapOptions::default().with_snaplen(65535);
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
        let order = OrderOptions::default().with_time_range(TimeRange {
            start_ns: Some(start),
            end_ns: Some(end),
        });
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
    let order = OrderOptions::default().with_time_range(TimeRange {
        start_ns: Some(0),
        end_ns: Some(5_000),
    });
    let (m, acc) = analyze::traffic_matrix(&mut [reader()], 10, order, &mut |_| Ok(())).unwrap();
    assert_eq!((m.total_packets, acc.skipped_outside_range), (5, 5));
}

#[test]
fn flows_refuse_a_negative_idle_timeout() {
    let opts = FlowOptions::default().with_idle_timeout_ns(Some(-5));
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
    let opts = FlowOptions::default().with_idle_timeout_ns(Some(0));
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
    let select = burstcore::table::Selection::default()
        .with_range(TimeRange {
            start_ns: Some(5),
            end_ns: Some(5),
        })
        .with_filter(None);
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

    let config = burstcore::engine::ScanConfig::default().with_windows_ns(vec![1_000, 2_000]);
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
    let arrival = Arrival::new(0, 100)
        .with_interface(0)
        .with_headers(Headers::default().with_src(host(1)).with_dst(host(2)));
    let mut m = TrafficMatrix::default();
    assert_eq!(m.max_pairs, TrafficMatrix::new().max_pairs);
    m.try_push(&arrival).expect("the first pair fits");
    assert_eq!(m.finish().unwrap().pair(host(1), host(2)), (100, 1));
}

/// Each `with_<field>` builder of a struct an embedder builds does what setting that field on
/// the default does, and nothing else (compared through Debug, which shows every field); each
/// value differs from the default, so a builder that set nothing, or another field, fails.
macro_rules! same_as_setting {
    ($start:expr; $($with:ident($field:ident = $v:expr)),+ $(,)?) => {{
        $(
            let mut want = $start;
            want.$field = $v;
            let got = $start.$with($v);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), stringify!($with));
            assert_ne!(format!("{got:?}"), format!("{:?}", $start), stringify!($with));
        )+
    }};
}

#[test]
fn every_config_is_built_from_its_default_with_its_builders() {
    use burstcore::analysis::{FlowKey, IterationOptions, SharedOptions};
    use burstcore::capture::{ByteOrder, InterfaceStats, Limits};
    use burstcore::engine::{Arrival, BinOrigin, By, Closure, LatePolicy, ScanConfig};
    use burstcore::pipeline::SizeKind;
    use burstcore::table::Selection;
    use burstcore::wire::Headers;
    use burstcore::Filter;

    let tcp = Filter::parse("tcp").unwrap();
    let range = TimeRange {
        start_ns: Some(5),
        end_ns: Some(9),
    };
    same_as_setting!(ScanConfig::default();
        with_windows_ns(windows_ns = vec![1_000, 2_000]),
        with_closure(closure = Closure::Closed),
        with_rates_bps(rates_bps = vec![10_000_000_000]),
        with_bins_ns(bins_ns = vec![1_000_000]),
        with_bin_origin(bin_origin = BinOrigin::FirstPacket),
        with_by(by = vec![By::All, By::Flow5]),
        with_reorder_horizon_ns(reorder_horizon_ns = 7),
        with_late(late = LatePolicy::Drop),
        with_max_groups(max_groups = 3),
        with_time_range(time_range = range),
        with_filter(filter = Some(tcp.clone())),
        with_file_filters(file_filters = vec![None, Some(tcp.clone())]),
    );
    same_as_setting!(OrderOptions::default();
        with_reorder_horizon_ns(reorder_horizon_ns = 7),
        with_late(late = LatePolicy::Drop),
        with_time_range(time_range = range),
        with_filter(filter = Some(tcp.clone())),
        with_file_filters(file_filters = vec![Some(tcp.clone())]),
        with_size(size = SizeKind::Captured),
    );
    same_as_setting!(Limits::default();
        with_max_block_len(max_block_len = 1 << 10),
        with_max_interfaces(max_interfaces = 2),
        with_max_sections(max_sections = 3),
        with_max_options(max_options = 4),
    );
    let small = Limits::default().with_max_options(4);
    same_as_setting!(ReadOptions::default();
        with_strict(strict = true),
        with_limits(limits = small),
        with_mmap(mmap = !ReadOptions::default().mmap),
    );
    same_as_setting!(PcapOptions::default();
        with_byte_order(byte_order = ByteOrder::Big),
        with_nanos(nanos = false),
        with_linktype(linktype = 113),
        with_snaplen(snaplen = 65535),
        with_fcs_len(fcs_len = 4),
    );
    same_as_setting!(InterfaceStats::default();
        with_isb_count(isb_count = 1),
        with_if_recv(if_recv = Some(1)),
        with_if_drop(if_drop = Some(2)),
        with_os_drop(os_drop = Some(3)),
        with_fil_accept(fil_accept = Some(4)),
        with_usr_deliv(usr_deliv = Some(5)),
        with_start_ns(start_ns = Some(6)),
        with_end_ns(end_ns = Some(7)),
    );
    same_as_setting!(FlowOptions::default();
        with_key(key = FlowKey::BiFlow5),
        with_idle_timeout_ns(idle_timeout_ns = Some(1_000)),
        with_max_flows(max_flows = 5),
    );
    same_as_setting!(IterationOptions::default();
        with_bin_ns(bin_ns = 10),
        with_max_lag_ns(max_lag_ns = 11),
        with_min_lag_ns(min_lag_ns = 12),
        with_ack_max_size(ack_max_size = 13),
        with_max_channels(max_channels = 14),
        with_max_bins(max_bins = 15),
        with_range_start_ns(range_start_ns = Some(16)),
        with_range_end_ns(range_end_ns = Some(17)),
    );
    same_as_setting!(SharedOptions::default();
        with_sample(sample = 3),
        with_max_packets(max_packets = 4),
        with_time_range(time_range = range),
        with_read_through(read_through = false),
    );
    same_as_setting!(Selection::default();
        with_range(range = range),
        with_filter(filter = Some(&tcp)),
    );
    let a = "10.0.0.1".parse().unwrap();
    same_as_setting!(Headers::default();
        with_vlan(vlan = Some(1)),
        with_vlan_inner(vlan_inner = Some(2)),
        with_ethertype(ethertype = Some(0x0800)),
        with_src(src = Some(a)),
        with_dst(dst = Some(a)),
        with_ip_proto(ip_proto = Some(6)),
        with_ip_len(ip_len = Some(40)),
        with_sport(sport = Some(80)),
        with_dport(dport = Some(443)),
        with_payload_len(payload_len = Some(0)),
        with_tcp_flags(tcp_flags = Some(0x10)),
        with_tcp_seq(tcp_seq = Some(1)),
        with_roce_opcode(roce_opcode = Some(4)),
        with_roce_qp(roce_qp = Some(5)),
        with_fragment(fragment = true),
        with_ip_len_past_frame(ip_len_past_frame = true),
        with_truncated(truncated = true),
        with_unknown_link(unknown_link = true),
    );
    let arrival = Arrival::new(1_000, 1500);
    assert_eq!(
        (arrival.ts_ns, arrival.size, arrival.interface),
        (1_000, 1500, 0)
    );
    assert_eq!(arrival.headers, Headers::default());
    same_as_setting!(Arrival::new(1_000, 1500);
        with_interface(interface = 2),
        with_headers(headers = Headers::default().with_sport(Some(80))),
    );
}
