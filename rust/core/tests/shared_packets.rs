//! The check for captures that hold the same packets (`analysis::shared`), on generated
//! captures whose overlap is known by construction: one capture per host (each packet in its
//! sender's and its receiver's file), the same file twice, files of different traffic, rotated
//! files, and a packet edited the ways a network edits it in flight.

use burstcore::analysis::{shared_packets, SharedOptions, SharedPackets};
use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
use burstcore::writer::frames::{host_ipv4, ipv4_checksum, TcpSegment, ETHERNET_LEN};
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::Filter;
use std::net::IpAddr;

mod engine_util;
use engine_util::Rng;

const T0: i64 = 1_700_000_000_000_000_000;

/// One TCP segment of generated traffic between hosts numbered as `host_ipv4` numbers them.
#[derive(Clone, Copy)]
struct Pkt {
    ts: i64,
    src: u16,
    dst: u16,
    seq: u32,
    ack: u32,
    len: u32,
    /// IPv4 identification, counting per sender as Linux counts it per socket.
    id: u16,
}

/// `n` segments among `hosts` hosts starting at `start`, 1–20 µs apart: data and ACKs whose
/// sequence and acknowledgement numbers advance per direction, as a real connection's do.
fn traffic(rng: &mut Rng, n: usize, hosts: u16, start: i64) -> Vec<Pkt> {
    let mut next_seq = std::collections::HashMap::new();
    let mut ids = vec![0u16; usize::from(hosts)];
    let mut ts = start;
    (0..n)
        .map(|_| {
            ts += 1_000 + rng.below(19_000) as i64;
            let src = rng.below(u64::from(hosts)) as u16;
            let dst = (src + 1 + rng.below(u64::from(hosts) - 1) as u16) % hosts;
            let len = if rng.below(3) == 0 { 66 } else { 1514 };
            let seq = next_seq
                .entry((src, dst))
                .or_insert(rng.below(1 << 32) as u32);
            let at = *seq;
            *seq = seq.wrapping_add(len - 66);
            let ack = *next_seq.get(&(dst, src)).unwrap_or(&0);
            let id = &mut ids[usize::from(src)];
            *id = id.wrapping_add(1);
            Pkt {
                id: *id,
                ts,
                src,
                dst,
                seq: at,
                ack,
                len,
            }
        })
        .collect()
}

fn frame(p: &Pkt) -> Vec<u8> {
    let mut seg = TcpSegment::between_hosts(p.src, p.dst, 40_000 + p.src, 29_500);
    seg.seq = p.seq;
    seg.ack = p.ack;
    let mut out = Vec::new();
    seg.write_frame(p.len, 128, &mut out).expect("frame");
    let ip = &mut out[ETHERNET_LEN..ETHERNET_LEN + 20];
    ip[4..6].copy_from_slice(&p.id.to_be_bytes());
    ip[10..12].fill(0);
    let sum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    out
}

/// A pcap (Ethernet, snaplen 128) of `pkts`, each frame passed through `edit` and stamped
/// `delay` ns after its time.
fn capture(pkts: &[Pkt], delay: i64, edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let options = PcapOptions {
        byte_order: ByteOrder::Little,
        nanos: true,
        linktype: 1,
        snaplen: 256,
    };
    let mut w = PcapWriter::new(Vec::new(), options).expect("header");
    for p in pkts {
        let mut f = frame(p);
        edit(&mut f);
        let wire = p.len + (f.len() as u32).saturating_sub(128.min(p.len));
        w.write_packet(p.ts + delay, wire, &f).expect("packet");
    }
    w.finish().expect("finish")
}

fn reader(bytes: &[u8]) -> CaptureReader {
    let input = burstcore::input::from_reader(
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        Some(bytes.len() as u64),
    )
    .expect("input");
    CaptureReader::new(input, ReadOptions::default()).expect("reader")
}

fn check(files: &[Vec<u8>], filters: &[Option<Filter>]) -> SharedPackets {
    let mut readers: Vec<CaptureReader> = files.iter().map(|f| reader(f)).collect();
    shared_packets(&mut readers, filters, &SharedOptions::default()).expect("check")
}

/// Each host's capture: what it sent (at the send time) and what it received (`delay` later).
fn per_host(all: &[Pkt], hosts: u16, delay: i64) -> Vec<Vec<u8>> {
    (0..hosts)
        .map(|h| {
            let own: Vec<Pkt> = all
                .iter()
                .filter(|p| p.src == h || p.dst == h)
                .map(|p| Pkt {
                    ts: if p.dst == h { p.ts + delay } else { p.ts },
                    ..*p
                })
                .collect();
            capture(&own, 0, |_| {})
        })
        .collect()
}

fn ip(h: u16) -> Option<IpAddr> {
    Some(IpAddr::V4(host_ipv4(h)))
}

#[test]
fn one_capture_per_host_shares_packets_and_names_each_host() {
    let all = traffic(&mut Rng(1), 20_000, 3, T0);
    let files = per_host(&all, 3, 7_000);
    let found = check(&files, &[]);
    let pairs: Vec<(usize, usize)> = found.pairs.iter().map(|p| (p.a, p.b)).collect();
    assert_eq!(pairs, [(0, 1), (0, 2), (1, 2)]);
    let first = |h: u16| {
        let own = all.iter().filter(|p| p.src == h || p.dst == h);
        own.map(|p| p.ts + if p.dst == h { 7_000 } else { 0 }).min()
    };
    for p in &found.pairs {
        // About half of each host's packets are with the other host of the pair; within one
        // sample's stretch most of those are in both samples.
        assert!(p.shared * 4 >= p.sampled_a.min(p.sampled_b), "{p:?}");
        let (a, b) = (p.a as u16, p.b as u16);
        assert_eq!(Some(p.from_ns), first(a).max(first(b)), "{p:?}");
    }
    assert_eq!(found.hosts, [ip(0), ip(1), ip(2)]);
}

#[test]
fn src_host_filters_keep_each_packet_once() {
    let all = traffic(&mut Rng(2), 20_000, 4, T0);
    let files = per_host(&all, 4, 7_000);
    let own: Vec<Option<Filter>> = (0..4)
        .map(|h| Some(Filter::parse(&format!("src host {}", host_ipv4(h))).unwrap()))
        .collect();
    let found = check(&files, &own);
    assert_eq!(found.pairs, []);
    // Through `host` filters (both directions) every pair still shares.
    let both: Vec<Option<Filter>> = (0..4)
        .map(|h| Some(Filter::parse(&format!("host {}", host_ipv4(h))).unwrap()))
        .collect();
    assert_eq!(check(&files, &both).pairs.len(), 6);
}

#[test]
fn the_same_file_twice_shares_its_whole_sample() {
    let all = traffic(&mut Rng(3), 5_000, 4, T0);
    let file = capture(&all, 0, |_| {});
    let found = check(&[file.clone(), file], &[]);
    let [p] = found.pairs[..] else {
        panic!("{:?}", found.pairs)
    };
    assert_eq!((p.a, p.b, p.from_ns), (0, 1, all[0].ts));
    assert_eq!((p.shared, p.sampled_a, p.sampled_b), (1024, 1024, 1024));
    // A small file: all of it.
    let small = capture(&all[..10], 0, |_| {});
    let found = check(&[small.clone(), small], &[]);
    assert_eq!(found.pairs[0].shared, 10);
}

#[test]
fn different_traffic_or_different_times_share_nothing() {
    // The same hosts and ports at the same times, other sequence numbers.
    let a = traffic(&mut Rng(4), 5_000, 4, T0);
    let b = traffic(&mut Rng(5), 5_000, 4, T0);
    let found = check(&[capture(&a, 0, |_| {}), capture(&b, 0, |_| {})], &[]);
    assert_eq!(found.pairs, []);
    // One traffic cut in two files one after the other (a rotating capture): the first file has
    // ended where the second starts.
    let whole = traffic(&mut Rng(6), 10_000, 4, T0);
    let (first, second) = whole.split_at(5_000);
    let found = check(
        &[capture(first, 0, |_| {}), capture(second, 0, |_| {})],
        &[],
    );
    assert_eq!(found.pairs, []);
    assert_eq!(found.packets_read, [5_000, 1_024]);
}

#[test]
fn captures_that_start_apart_are_compared_where_both_run() {
    // The second capture of the same traffic starts 30 ms in; a third, of other traffic,
    // starts later still.
    let all = traffic(&mut Rng(7), 20_000, 4, T0);
    let late = all.iter().position(|p| p.ts >= T0 + 30_000_000).unwrap();
    let other = traffic(&mut Rng(8), 5_000, 4, all[late + 2_000].ts);
    let files = [
        capture(&all, 0, |_| {}),
        capture(&all[late..], 3_000, |_| {}),
        capture(&other, 0, |_| {}),
    ];
    let found = check(&files, &[]);
    let [p] = found.pairs[..] else {
        panic!("{:?}", found.pairs)
    };
    assert_eq!((p.a, p.b, p.from_ns), (0, 1, all[late].ts + 3_000));
    assert!(p.shared > 900, "{p:?}");
}

#[test]
fn what_a_network_changes_in_flight_still_matches_and_what_it_does_not_change_does_not() {
    let all = traffic(&mut Rng(9), 3_000, 4, T0);
    let sent = capture(&all, 0, |_| {});
    // A VLAN tag the sender's NIC adds, a router's TTL and checksum, an ECN mark, the TCP
    // checksum the NIC fills in: the same packet.
    let received = capture(&all, 4_000, |f| {
        let ip = ETHERNET_LEN;
        f[ip + 1] = 0x03; // ECN CE
        f[ip + 8] -= 1; // TTL
        f[ip + 10..ip + 12].fill(0);
        let sum = ipv4_checksum(&f[ip..ip + 20]);
        f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
        f[ip + 20 + 16..ip + 20 + 18].copy_from_slice(&[0xbe, 0xef]);
        f.splice(12..12, [0x81, 0x00, 0x00, 0x64]);
    });
    let found = check(&[sent.clone(), received], &[]);
    // Sampled from the received copy's first instant: the sent file's sample starts at the
    // first packet sent from then on.
    let skip = all.iter().position(|p| p.ts >= all[0].ts + 4_000).unwrap();
    assert_eq!(found.pairs.len(), 1);
    assert_eq!(found.pairs[0].shared, 1024 - skip);
    // What the two ends see alike differs: not the same packet.
    for (what, at) in [
        ("identification", ETHERNET_LEN + 5),
        ("source address", ETHERNET_LEN + 15),
        ("sequence number", ETHERNET_LEN + 20 + 7),
        ("acknowledgement number", ETHERNET_LEN + 20 + 11),
        ("window", ETHERNET_LEN + 20 + 15),
    ] {
        let other = capture(&all, 4_000, |f| f[at] ^= 0x5a);
        let found = check(&[sent.clone(), other], &[]);
        assert_eq!(found.pairs, [], "{what}");
    }
}

#[test]
fn the_budget_bounds_the_reading() {
    let all = traffic(&mut Rng(10), 20_000, 4, T0);
    let files = per_host(&all, 4, 7_000);
    let mut readers: Vec<CaptureReader> = files.iter().map(|f| reader(f)).collect();
    let options = SharedOptions {
        max_total_packets: 3_000,
        ..SharedOptions::default()
    };
    let found = shared_packets(&mut readers, &[], &options).expect("check");
    assert_eq!(found.packets_read.iter().sum::<u64>(), 3_000);
    // The first files were read; the pair of them is found, the rest is not looked at.
    assert_eq!(found.packets_read[3], 1);
    assert!(found.pairs.iter().any(|p| (p.a, p.b) == (0, 1)));
    assert!(found.pairs.iter().all(|p| p.b < 3));
}
