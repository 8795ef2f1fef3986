//! The traffic matrix's per-host totals against sums worked out here over the packets. Found by
//! mutation testing: crediting a packet's bytes as received to its sender instead of its
//! receiver passed every Rust test (only a Python test caught it).

use burstcore::analysis::TrafficMatrix;
use burstcore::engine::Arrival;
use burstcore::wire::Headers;
use std::net::{IpAddr, Ipv4Addr};

fn host(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

fn arrival(ts_ns: i64, size: u64, src: Option<u8>, dst: Option<u8>) -> Arrival {
    Arrival::new(ts_ns, size).with_interface(0).with_headers(
        Headers::default()
            .with_src(src.map(host))
            .with_dst(dst.map(host)),
    )
}

#[test]
fn hosts_send_and_receive_what_the_pairs_carry() {
    // 1 → 2 twice, 2 → 1 once, 3 → 1 once, one packet with no addresses.
    let packets = [
        (0, 100, Some(1), Some(2)),
        (10, 200, Some(1), Some(2)),
        (20, 40, Some(2), Some(1)),
        (30, 1000, Some(3), Some(1)),
        (40, 7, None, None),
    ];
    let mut m = TrafficMatrix::new();
    for &(ts, size, src, dst) in &packets {
        m.push(&arrival(ts, size, src, dst));
    }
    assert_eq!((m.total_bytes, m.total_packets), (1347, 5));
    assert_eq!(m.bytes(Some(host(1)), Some(host(2))), 300);
    assert_eq!(m.packets(Some(host(1)), Some(host(2))), 2);
    assert_eq!(m.bytes(Some(host(2)), Some(host(1))), 40);
    assert_eq!(m.bytes(Some(host(1)), Some(host(3))), 0);
    // (sent bytes, sent packets, received bytes, received packets), worked out from the list.
    let m = m.finish().unwrap();
    let totals = |h: Option<IpAddr>| {
        let t = m.host(h).unwrap();
        (
            t.sent_bytes,
            t.sent_packets,
            t.received_bytes,
            t.received_packets,
        )
    };
    assert_eq!(totals(Some(host(1))), (300, 2, 1040, 2));
    assert_eq!(totals(Some(host(2))), (40, 1, 300, 2));
    assert_eq!(totals(Some(host(3))), (1000, 1, 0, 0));
    assert_eq!(totals(None), (7, 1, 7, 1));
    // Every byte is sent once and received once.
    let (sent, received) = m
        .host_totals
        .iter()
        .fold((0, 0), |(s, r), t| (s + t.sent_bytes, r + t.received_bytes));
    assert_eq!((sent, received), (1347, 1347));
}
