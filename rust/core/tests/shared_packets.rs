//! The check for captures that hold the same packets (`analysis::shared`), on generated
//! captures whose overlap is known by construction: one capture per host (each packet in its
//! sender's and its receiver's file), the same file twice, files of different traffic, rotated
//! files, a capture that starts late in a long one, a bridge capture beside per-host ones, and a
//! packet edited the ways a network edits it in flight. Each as plain files (read from where an
//! anchor lies) and as streams (read on from the start).

use burstcore::analysis::{shared_packets, SharedOptions, SharedPackets};
use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::writer::frames::{host_ipv4, ipv4_checksum, TcpSegment, ETHERNET_LEN};
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::Filter;
use std::net::IpAddr;

mod engine_util;
mod scratch;
use engine_util::Rng;
use scratch::Scratch;

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
    let options = PcapOptions::default().with_snaplen(256);
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

/// How the check gets the captures.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Plain files by path: bisected to each anchor.
    Files,
    /// In memory: read on from the start.
    Streams,
}

const MODES: [Mode; 2] = [Mode::Files, Mode::Streams];

fn check_with(
    mode: Mode,
    files: &[Vec<u8>],
    filters: &[Option<Filter>],
    options: &SharedOptions,
) -> SharedPackets {
    let dir = Scratch::new("shared");
    let mut readers: Vec<CaptureReader> = files
        .iter()
        .enumerate()
        .map(|(k, f)| match mode {
            Mode::Streams => reader(f),
            Mode::Files => {
                let path = dir.join(format!("{k}.pcap"));
                std::fs::write(&path, f).expect("write");
                let input = burstcore::input::open_path(&path).expect("open");
                CaptureReader::new(input, ReadOptions::default()).expect("reader")
            }
        })
        .collect();
    shared_packets(&mut readers, filters, options).expect("check")
}

fn check(mode: Mode, files: &[Vec<u8>], filters: &[Option<Filter>]) -> SharedPackets {
    check_with(mode, files, filters, &SharedOptions::default())
}

/// Each host's capture: what it sent (at the send time) and what it received (`delay` later).
fn per_host(all: &[Pkt], hosts: u16, delay: i64) -> Vec<Vec<u8>> {
    per_host_clocks(all, hosts, delay, |_| 0)
}

/// [`per_host`] with host `h`'s clock `clock(h)` ns ahead.
fn per_host_clocks(
    all: &[Pkt],
    hosts: u16,
    delay: i64,
    clock: impl Fn(u16) -> i64,
) -> Vec<Vec<u8>> {
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
            capture(&own, clock(h), |_| {})
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
    let first = |h: u16| {
        let own = all.iter().filter(|p| p.src == h || p.dst == h);
        own.map(|p| p.ts + if p.dst == h { 7_000 } else { 0 }).min()
    };
    for mode in MODES {
        let found = check(mode, &files, &[]);
        let pairs: Vec<(usize, usize)> = found.pairs.iter().map(|p| (p.a, p.b)).collect();
        assert_eq!(pairs, [(0, 1), (0, 2), (1, 2)], "{mode:?}");
        // Captures that run together: one anchor, the latest first instant.
        let latest = (0..3).filter_map(first).max();
        assert_eq!(found.anchors, Vec::from_iter(latest), "{mode:?}");
        for p in &found.pairs {
            // About half of each host's packets are with the other host of the pair; within
            // one sample's stretch most of those are in both samples.
            assert!(
                p.shared * 4 >= p.sampled_a.min(p.sampled_b),
                "{mode:?} {p:?}"
            );
            assert_eq!(Some(p.from_ns), latest, "{mode:?} {p:?}");
        }
        assert_eq!(found.hosts, [ip(0), ip(1), ip(2)], "{mode:?}");
        assert!(found.uncaptured.is_empty(), "{mode:?}");
        // Each capture's first instant and its last, a stream's too (read through).
        for (h, span) in found.spans.iter().enumerate() {
            let (first_ts, last_ts) = span.expect("packets");
            assert_eq!(Some(first_ts), first(h as u16), "{mode:?}");
            let own = all
                .iter()
                .filter(|p| p.src == h as u16 || p.dst == h as u16);
            let last = own
                .map(|p| p.ts + if p.dst == h as u16 { 7_000 } else { 0 })
                .max();
            assert_eq!(Some(last_ts), last, "{mode:?}");
        }
    }
}

#[test]
fn src_host_filters_keep_each_packet_once() {
    let all = traffic(&mut Rng(2), 20_000, 4, T0);
    let files = per_host(&all, 4, 7_000);
    let own: Vec<Option<Filter>> = (0..4)
        .map(|h| Some(Filter::parse(&format!("src host {}", host_ipv4(h))).unwrap()))
        .collect();
    // Through `host` filters (both directions) every pair still shares.
    let both: Vec<Option<Filter>> = (0..4)
        .map(|h| Some(Filter::parse(&format!("host {}", host_ipv4(h))).unwrap()))
        .collect();
    for mode in MODES {
        assert_eq!(check(mode, &files, &own).pairs, [], "{mode:?}");
        assert_eq!(check(mode, &files, &both).pairs.len(), 6, "{mode:?}");
    }
}

#[test]
fn the_same_file_twice_shares_its_whole_sample() {
    let all = traffic(&mut Rng(3), 5_000, 4, T0);
    let file = capture(&all, 0, |_| {});
    let small = capture(&all[..10], 0, |_| {});
    for mode in MODES {
        let found = check(mode, &[file.clone(), file.clone()], &[]);
        let [p] = found.pairs[..] else {
            panic!("{mode:?} {:?}", found.pairs)
        };
        assert_eq!((p.a, p.b, p.from_ns), (0, 1, all[0].ts), "{mode:?}");
        assert_eq!(
            (p.shared, p.sampled_a, p.sampled_b),
            (1024, 1024, 1024),
            "{mode:?}"
        );
        // A small file: all of it.
        let found = check(mode, &[small.clone(), small.clone()], &[]);
        assert_eq!(found.pairs[0].shared, 10, "{mode:?}");
    }
}

#[test]
fn different_traffic_or_different_times_share_nothing() {
    // The same hosts and ports at the same times, other sequence numbers.
    let a = traffic(&mut Rng(4), 5_000, 4, T0);
    let b = traffic(&mut Rng(5), 5_000, 4, T0);
    // One traffic cut in two files one after the other (a rotating capture): the first file has
    // ended where the second starts.
    let whole = traffic(&mut Rng(6), 10_000, 4, T0);
    let (first, second) = whole.split_at(5_000);
    let rotated = [capture(first, 0, |_| {}), capture(second, 0, |_| {})];
    for mode in MODES {
        let found = check(mode, &[capture(&a, 0, |_| {}), capture(&b, 0, |_| {})], &[]);
        assert_eq!(found.pairs, [], "{mode:?}");
        let found = check(mode, &rotated, &[]);
        assert_eq!(found.pairs, [], "{mode:?}");
        // Known not to overlap, a stream once read through too: sampled nowhere.
        assert_eq!(found.anchors, [], "{mode:?}");
    }
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
    for mode in MODES {
        let found = check(mode, &files, &[]);
        let [p] = found.pairs[..] else {
            panic!("{mode:?} {:?}", found.pairs)
        };
        assert_eq!((p.a, p.b), (0, 1), "{mode:?}");
        assert!(p.shared > 900, "{mode:?} {p:?}");
    }
}

#[test]
fn a_capture_that_starts_late_in_a_long_one_is_found_by_bisecting_the_file() {
    // 300,000 packets (20 MB); the second capture holds the last 50,000 of them. A stream is
    // read on to its anchor, at most `max_packets`; a plain file is bisected to it.
    let all = traffic(&mut Rng(11), 300_000, 4, T0);
    let files = [
        capture(&all, 0, |_| {}),
        capture(&all[250_000..], 0, |_| {}),
    ];
    for mode in MODES {
        let found = check(mode, &files, &[]);
        assert_eq!(found.anchors, [all[250_000].ts], "{mode:?}");
        assert_eq!(found.pairs.len(), 1, "{mode:?}");
        assert_eq!(found.pairs[0].shared, 1024, "{mode:?}");
    }
    let short = SharedOptions::default().with_max_packets(100_000);
    assert_eq!(check_with(Mode::Files, &files, &[], &short).pairs.len(), 1);
    assert_eq!(check_with(Mode::Streams, &files, &[], &short).pairs, []);
    // A time range that starts past most of the file: the same file twice, sampled there.
    let file = capture(&all, 0, |_| {});
    let from = SharedOptions::default().with_time_range(burstcore::TimeRange {
        start_ns: Some(all[280_000].ts),
        end_ns: None,
    });
    for mode in MODES {
        let found = check_with(mode, &[file.clone(), file.clone()], &[], &from);
        assert_eq!(found.anchors, [all[280_000].ts], "{mode:?}");
        assert_eq!(found.pairs[0].shared, 1024, "{mode:?}");
    }
}

#[test]
fn the_order_of_the_captures_does_not_change_what_is_found() {
    let big = traffic(&mut Rng(12), 200_000, 4, T0);
    let later = traffic(&mut Rng(13), 20_000, 3, big[150_000].ts);
    let mut files = vec![capture(&big, 0, |_| {}), capture(&big[1_000..], 0, |_| {})];
    files.extend(per_host(&later, 3, 5_000));
    let order = [4, 2, 0, 3, 1];
    let reordered: Vec<Vec<u8>> = order.iter().map(|&k| files[k].clone()).collect();
    for mode in MODES {
        let pairs = |found: SharedPackets, names: &[usize]| {
            let mut p: Vec<_> = found
                .pairs
                .iter()
                .map(|p| {
                    let (a, b) = (names[p.a], names[p.b]);
                    (a.min(b), a.max(b), p.shared)
                })
                .collect();
            p.sort_unstable();
            p
        };
        let straight = pairs(check(mode, &files, &[]), &[0, 1, 2, 3, 4]);
        assert_eq!(straight.len(), 4, "{mode:?} {straight:?}");
        assert_eq!(
            pairs(check(mode, &reordered, &[]), &order),
            straight,
            "{mode:?}"
        );
    }
}

/// Every packet between host 0 and another host (a job's rendezvous): a capture of these alone
/// is host 0's.
fn with_host_0(pkts: Vec<Pkt>) -> Vec<Pkt> {
    pkts.into_iter()
        .map(|p| Pkt {
            src: if p.dst == 0 { p.src.max(1) } else { 0 },
            dst: if p.dst == 0 { 0 } else { p.dst.max(1) },
            ..p
        })
        .collect()
}

#[test]
fn a_bridge_capture_beside_per_host_ones_is_not_named_a_host() {
    // Every host first talks to host 0 (a job's rendezvous), then the ring runs: a bridge
    // capture's first packets are all with host 0, its later ones are not.
    let mut rng = Rng(14);
    let mut all = with_host_0(traffic(&mut rng, 3_000, 4, T0));
    let start = all.last().unwrap().ts;
    all.extend(traffic(&mut rng, 60_000, 4, start));
    let mut files = vec![capture(&all, 0, |_| {})];
    files.extend(per_host(&all, 4, 5_000).into_iter().skip(1));
    // In memory too: a stream is read through for the stretches a plain file is probed at.
    for mode in MODES {
        let found = check(mode, &files, &[]);
        assert_eq!(found.hosts, [None, ip(1), ip(2), ip(3)], "{mode:?}");
        // Host 0's packets would be in no `src host` filter of the hosts named.
        assert_eq!(found.uncaptured, Vec::from_iter(ip(0)), "{mode:?}");
        assert_eq!(found.pairs.len(), 6, "{mode:?}");
    }
    // Compressed, its length unknown until its end: probed near the thirds, still no host.
    let gz = gzip(&files[0]);
    let mut readers: Vec<CaptureReader> = std::iter::once(reader(&gz))
        .chain(files[1..].iter().map(|f| reader(f)))
        .collect();
    let found = shared_packets(&mut readers, &[], &SharedOptions::default()).expect("check");
    assert_eq!(found, check(Mode::Files, &files, &[]));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).expect("gzip");
    z.finish().expect("gzip")
}

#[test]
fn the_same_bytes_give_the_same_answer_as_a_file_or_a_stream() {
    // Each capture's span, the anchors, the pairs, their counts and the hosts: a stream is
    // read through once and sampled where a plain file is, wherever the captures overlap.
    // Here a long capture of 3 hosts, then host 0 alone with the two others, captured by
    // those two only from when it begins: the bridge's sample is all with host 0, its first
    // third is not.
    let mut rng = Rng(21);
    let mut all = traffic(&mut rng, 40_000, 3, T0);
    let later = traffic(&mut rng, 20_000, 3, all.last().unwrap().ts + 1_000_000);
    let later: Vec<Pkt> = later
        .into_iter()
        .map(|p| Pkt {
            src: if p.dst == 0 { p.src.max(1) } else { 0 },
            dst: if p.dst == 0 { 0 } else { p.dst.max(1) },
            ..p
        })
        .collect();
    all.extend(later.iter().copied());
    let bridge = capture(&all, 0, |_| {});
    let own: Vec<Vec<u8>> = per_host(&later, 3, 5_000).into_iter().skip(1).collect();
    let files: Vec<Vec<u8>> = std::iter::once(bridge).chain(own).collect();
    let from_files = check(Mode::Files, &files, &[]);
    assert_eq!(from_files.hosts, [None, ip(1), ip(2)]);
    assert_eq!(from_files.uncaptured, Vec::from_iter(ip(0)));
    for options in [
        SharedOptions::default(),
        SharedOptions::default().with_time_range(burstcore::TimeRange {
            start_ns: Some(later[5_000].ts),
            end_ns: Some(later[15_000].ts),
        }),
    ] {
        let files_found = check_with(Mode::Files, &files, &[], &options);
        // Each capture's span whatever the range: its span when there is none (what a range
        // that misses a capture, or a bound far from it, is told against).
        assert_eq!(files_found.whole_spans, from_files.spans);
        assert!(files_found
            .spans
            .iter()
            .all(|s| s.is_some_and(|(_, l)| l < i64::MAX)));
        assert_eq!(
            check_with(Mode::Streams, &files, &[], &options),
            files_found
        );
    }
    // And the late capture of the long one, the order of the captures changed.
    let long = traffic(&mut Rng(22), 100_000, 4, T0);
    let pair = [
        capture(&long[60_000..], 0, |_| {}),
        capture(&long, 0, |_| {}),
    ];
    assert_eq!(
        check(Mode::Streams, &pair, &[]),
        check(Mode::Files, &pair, &[])
    );
}

/// `all` with host 1's packets made pure ACKs with IP identification 0 (nothing in them tells
/// one from the next but the sequence number `seq` gives each).
fn anonymous_acks(all: &[Pkt], seq: impl Fn(&Pkt) -> u32) -> Vec<Pkt> {
    all.iter()
        .map(|p| match p.src {
            1 => Pkt {
                id: 0,
                len: 66,
                seq: seq(p),
                ..*p
            },
            _ => *p,
        })
        .collect()
}

#[test]
fn a_capture_of_one_pair_of_hosts_is_named_by_when_it_saw_their_packets() {
    // Two hosts: both addresses are in every packet of either capture. Each host's own packets
    // are stamped 40 µs before the other's capture stamps them; the clocks differ by far more.
    let all = traffic(&mut Rng(16), 20_000, 2, T0);
    for skew in [-3_000_000, 0, 5_000_000] {
        let files = per_host_clocks(&all, 2, 40_000, |h| i64::from(h) * skew);
        for mode in MODES {
            let found = check(mode, &files, &[]);
            assert_eq!(found.hosts, [ip(0), ip(1)], "{mode:?} {skew}");
            assert!(found.uncaptured.is_empty(), "{mode:?} {skew}");
            let backwards = check(mode, &[files[1].clone(), files[0].clone()], &[]);
            assert_eq!(backwards.hosts, [ip(1), ip(0)], "{mode:?} {skew}");
        }
    }
    let files = per_host(&all, 2, 40_000);
    // A bridge between them sees each packet 20 µs after its sender: nearer host 1 than host
    // 0's capture is, nearer host 0 than host 1's is, so neither; the hosts' own still are.
    let bridge = capture(&all, 20_000, |_| {});
    let found = check(
        Mode::Files,
        &[files[0].clone(), bridge, files[1].clone()],
        &[],
    );
    assert_eq!(found.hosts, [ip(0), None, ip(1)]);
    // Two captures at one point (one file twice) see every packet at once: no host.
    let found = check(Mode::Files, &[files[0].clone(), files[0].clone()], &[]);
    assert_eq!(found.hosts, [None, None]);
    assert_eq!(found.uncaptured, [ip(0).unwrap(), ip(1).unwrap()]);
    // A copy of one capture shifted by 500 ns, or cut to microseconds: both ways alike, no host.
    let own0: Vec<Pkt> = all
        .iter()
        .map(|p| Pkt {
            ts: if p.dst == 0 { p.ts + 40_000 } else { p.ts },
            ..*p
        })
        .collect();
    let cut: Vec<Pkt> = own0
        .iter()
        .map(|p| Pkt {
            ts: p.ts / 1_000 * 1_000,
            ..*p
        })
        .collect();
    for copy in [capture(&own0, 500, |_| {}), capture(&cut, 0, |_| {})] {
        let found = check(Mode::Files, &[files[0].clone(), copy], &[]);
        assert_eq!(found.hosts, [None, None]);
    }
    // Host 1 answers with pure ACKs that look alike (IP identification 0, one of 8 sequence
    // numbers, as 8 connections' ACKs would): each capture's first of each after the anchor
    // need not be the same packet, and host 0's clock is 1 ms ahead, so timing them would swap
    // the hosts. Not timed: no host.
    let alike = anonymous_acks(&all, |p| (p.ts % 8) as u32);
    let found = check(
        Mode::Files,
        &per_host_clocks(&alike, 2, 40_000, |h| if h == 0 { 1_000_000 } else { 0 }),
        &[],
    );
    assert_eq!(found.hosts, [None, None]);
    // The same ACKs each with a sequence number of its own, so each is once in a sample: still
    // not timed, as nothing in them tells one from the next of their flow in general (a UDP
    // datagram of IPv6 is like that), and the way they go tells nothing: no host.
    let anonymous = anonymous_acks(&all, |p| p.seq);
    let found = check(Mode::Files, &per_host(&anonymous, 2, 40_000), &[]);
    assert_eq!(found.hosts, [None, None]);
    // One way only (host 1 only ever sends): nothing to compare the other way with.
    let one_way: Vec<Pkt> = all
        .iter()
        .map(|p| Pkt {
            src: 1,
            dst: 0,
            ..*p
        })
        .collect();
    let found = check(Mode::Files, &per_host(&one_way, 2, 40_000), &[]);
    assert_eq!(found.hosts, [None, None]);
}

#[test]
fn many_captures_that_run_together_need_one_anchor() {
    let all = traffic(&mut Rng(15), 3_000, 4, T0);
    let files: Vec<Vec<u8>> = (0..60).map(|k| capture(&all, k * 1_000, |_| {})).collect();
    for mode in MODES {
        let found = check(mode, &files, &[]);
        assert_eq!(found.anchors, [all[0].ts + 59_000], "{mode:?}");
        assert_eq!(found.pairs.len(), 60 * 59 / 2, "{mode:?}");
    }
}

#[test]
fn what_a_network_changes_in_flight_still_matches_and_what_it_does_not_change_does_not() {
    let all = traffic(&mut Rng(9), 3_000, 4, T0);
    let sent = capture(&all, 0, |_| {});
    // A VLAN tag the sender's NIC adds, a router's TTL and checksum, an ECN mark, the TCP
    // checksum the NIC fills in, a snaplen of 64: the same packet.
    let received = capture(&all, 4_000, |f| {
        let ip = ETHERNET_LEN;
        f[ip + 1] = 0x03; // ECN CE
        f[ip + 8] -= 1; // TTL
        f[ip + 10..ip + 12].fill(0);
        let sum = ipv4_checksum(&f[ip..ip + 20]);
        f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
        f[ip + 20 + 16..ip + 20 + 18].copy_from_slice(&[0xbe, 0xef]);
        f.splice(12..12, [0x81, 0x00, 0x00, 0x64]);
        f.truncate(64);
    });
    // Sampled from the received copy's first instant: the sent file's sample starts at the
    // first packet sent from then on.
    let skip = all.iter().position(|p| p.ts >= all[0].ts + 4_000).unwrap();
    // What the two ends see alike differs: not the same packet.
    let edits = [
        ("identification", ETHERNET_LEN + 5),
        ("source address", ETHERNET_LEN + 15),
        ("sequence number", ETHERNET_LEN + 20 + 7),
        ("destination port", ETHERNET_LEN + 20 + 3),
    ];
    for mode in MODES {
        let found = check(mode, &[sent.clone(), received.clone()], &[]);
        assert_eq!(found.pairs.len(), 1, "{mode:?}");
        assert_eq!(found.pairs[0].shared, 1024 - skip, "{mode:?}");
        for (what, at) in edits {
            let other = capture(&all, 4_000, |f| f[at] ^= 0x5a);
            let found = check(mode, &[sent.clone(), other], &[]);
            assert_eq!(found.pairs, [], "{mode:?} {what}");
        }
    }
    // Cut inside the sequence number: not sampled.
    let cut = capture(&all, 4_000, |f| f.truncate(ETHERNET_LEN + 20 + 6));
    assert_eq!(check(Mode::Files, &[sent, cut], &[]).pairs, []);
}

/// A capture of traffic all with host 0 (its host, were it the only one), but for 256 packets
/// among the other hosts that begin exactly at the first record at or after a third, and at two
/// thirds, of its length: its plain file, read there, names no host; stretches read a little
/// off those offsets name host 0.
fn host_hidden_at_the_thirds() -> Vec<u8> {
    let mut all = with_host_0(traffic(&mut Rng(31), 30_000, 4, T0));
    let offsets = |bytes: &[u8]| {
        let mut r = reader(bytes);
        let mut out = Vec::new();
        while let Some(p) = r.next_packet().expect("packet") {
            out.push(p.offset);
        }
        out
    };
    let plain = capture(&all, 0, |_| {});
    let at = offsets(&plain);
    let (start, len) = (at[0], plain.len() as u64);
    let third = (len - start) / 3;
    for target in [start + third, start + 2 * third] {
        let first = at.partition_point(|&o| o < target);
        for (k, p) in all[first..first + 256].iter_mut().enumerate() {
            // Same lengths: the records stay where they were.
            (p.src, p.dst) = (1 + k as u16 % 3, 1 + (k as u16 + 1) % 3);
        }
    }
    let hidden = capture(&all, 0, |_| {});
    assert_eq!(offsets(&hidden), at);
    hidden
}

fn zstd_sized(bytes: &[u8]) -> Vec<u8> {
    // One call with the whole input: the frame declares its content size.
    let z = zstd::bulk::compress(bytes, 1).expect("zstd");
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(&z).ok(),
        Some(Some(bytes.len() as u64))
    );
    z
}

fn zstd_streamed(bytes: &[u8]) -> Vec<u8> {
    // As `zstd` in a pipe writes it: the frame does not declare its content size.
    let z = zstd::stream::encode_all(bytes, 1).expect("zstd");
    assert_eq!(zstd::zstd_safe::get_frame_content_size(&z).ok(), Some(None));
    z
}

/// The compressed forms a capture can come in, each from pieces of `bytes` compressed on their
/// own and concatenated (several zstd frames, several gzip members).
fn compressed_forms(bytes: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let (a, rest) = bytes.split_at(bytes.len() / 3);
    let (b, c) = rest.split_at(rest.len() / 2);
    // A skippable frame of 9 bytes of user data: the decoder passes over it.
    let mut skippable = vec![0x5A, 0x2A, 0x4D, 0x18, 9, 0, 0, 0];
    skippable.extend([7u8; 9]);
    vec![
        ("zstd, content size", zstd_sized(bytes)),
        ("zstd, no content size", zstd_streamed(bytes)),
        (
            "zstd, three frames and a skippable one, each its content size",
            [
                zstd_sized(a),
                skippable.clone(),
                zstd_sized(b),
                zstd_sized(c),
            ]
            .concat(),
        ),
        (
            "zstd, three frames, one without its content size",
            [zstd_sized(a), zstd_streamed(b), skippable, zstd_sized(c)].concat(),
        ),
        ("gzip, one member", gzip(bytes)),
        (
            "gzip, three members: the last one's length is not the stream's",
            [gzip(a), gzip(b), gzip(c)].concat(),
        ),
    ]
}

/// `bytes` written to a file and checked from there, alone or beside `others` (plain files).
fn check_compressed(
    bytes: &[u8],
    others: &[Vec<u8>],
    options: &SharedOptions,
) -> Result<SharedPackets, burstcore::Error> {
    let dir = Scratch::new("shared-compressed");
    let path = dir.join("capture.pcap.z");
    std::fs::write(&path, bytes).expect("write");
    let input = burstcore::input::open_path(&path).expect("open");
    let mut readers = vec![CaptureReader::new(input, ReadOptions::default())?];
    readers.extend(others.iter().enumerate().map(|(k, f)| {
        let path = dir.join(format!("{k}.pcap"));
        std::fs::write(&path, f).expect("write");
        let input = burstcore::input::open_path(&path).expect("open");
        CaptureReader::new(input, ReadOptions::default()).expect("reader")
    }));
    shared_packets(&mut readers, &[], options)
}

#[test]
fn a_compressed_file_is_read_at_its_plain_files_thirds() {
    // Read through, a compressed file gives what its plain file gives: the host its stretches
    // at the thirds tell, read where the length its headers announce puts them, or, when they
    // do not announce it (or announce a length the stream does not have), where a second read
    // finds them once the first has found the length. Before, the stretches nearest the thirds
    // of evenly spaced ones named host 0.
    let hidden = host_hidden_at_the_thirds();
    let plain = check(Mode::Files, std::slice::from_ref(&hidden), &[]);
    assert_eq!(plain.hosts, [None]);
    let others = per_host(&traffic(&mut Rng(32), 5_000, 3, T0), 3, 5_000);
    let files: Vec<Vec<u8>> = std::iter::once(hidden.clone())
        .chain(others.iter().cloned())
        .collect();
    let plain_with_others = check(Mode::Files, &files, &[]);
    for (form, bytes) in compressed_forms(&hidden) {
        let found = check_compressed(&bytes, &[], &SharedOptions::default()).expect(form);
        assert_eq!(found, plain, "{form}");
        let found = check_compressed(&bytes, &others, &SharedOptions::default()).expect(form);
        assert_eq!(found, plain_with_others, "{form}");
    }
}

#[test]
fn a_compressed_stream_without_a_path_is_still_read_near_its_thirds() {
    // Bytes in memory cannot be read again: without a length announced, the evenly spaced
    // stretches nearest the thirds, as before (here they tell host 0, which the plain file's
    // thirds do not).
    let hidden = host_hidden_at_the_thirds();
    let mut readers = vec![reader(&zstd_streamed(&hidden))];
    let found = shared_packets(&mut readers, &[], &SharedOptions::default()).expect("check");
    assert_eq!(found.hosts, [ip(0)]);
    assert_eq!(found.spans, check(Mode::Files, &[hidden], &[]).spans);
}

#[test]
fn a_compressed_file_whose_header_lies_is_an_error_not_a_wrong_answer() {
    // A gzip trailer's length and a zstd frame's content size that the data do not have: the
    // decompressor finds the mismatch at the end, and the check reports that damage, as a read
    // of the capture would; nothing is sampled at a length the stream does not have.
    let hidden = host_hidden_at_the_thirds();
    let mut gz = gzip(&hidden);
    let n = gz.len();
    gz[n - 4..].copy_from_slice(&((hidden.len() as u32) / 2).to_le_bytes());
    let mut zs = zstd_sized(&hidden);
    // The frame header: magic, descriptor, window, then the 4-byte content size.
    assert_eq!(
        zs[4] & 0xE3,
        0x80,
        "a window byte, then a 4-byte content size"
    );
    zs[6..10].copy_from_slice(&((hidden.len() as u32) - 1000).to_le_bytes());
    for (form, bytes) in [("gzip", gz), ("zstd", zs)] {
        let err = check_compressed(&bytes, &[], &SharedOptions::default()).unwrap_err();
        assert_eq!(
            err.kind,
            burstcore::ErrorKind::Decompression,
            "{form}: {err}"
        );
    }
}
