//! Packets that two captures both hold: one traffic recorded at two places (a capture on each
//! host, a host and a switch's mirror port, the same file given twice). Merged, each such packet
//! counts twice, in every envelope, rate, flow and matrix, and nothing else shows it.
//!
//! Found by sampling, not by reading everything: at the first instant of each capture (the
//! *anchors*), every capture that has started by then gives the next [`SharedOptions::sample`]
//! packets' fingerprints, and two captures are compared at the later of their two first
//! instants, where both run. Reading stops at a budget of packets per capture and in all, so
//! the check costs milliseconds whatever the files' sizes; captures that start far apart (rotated
//! files) are read up to that budget and, having nothing in common at the anchor, report nothing.
//!
//! A fingerprint is of the IP packet's identity, not of its bytes as captured: the addresses,
//! the protocol, the IPv4 identification and length (IPv6: flow label and payload length), and
//! the transport header up to what the two ends see alike (TCP: ports, sequence and
//! acknowledgement numbers, flags and window; UDP: ports and length, then the first 16 payload
//! bytes, which hold a RoCE packet's sequence number). Left out is what changes between the two
//! places a packet is seen: the link layer (VLAN tags stripped by the NIC), the TTL or hop limit
//! and the IPv4 checksum (routers), the DSCP/ECN byte (a switch marks congestion), and the TCP
//! and UDP checksums (a sender's capture holds them before the NIC fills them in). A TSO
//! super-frame on the sender and its segments on the receiver do not match; their ACKs do,
//! which is enough to tell.
//!
//! Non-IP packets, packets without a timestamp and those outside the time range are not
//! sampled; each capture's filter applies, so captures read through `src host` filters that
//! keep each packet once share nothing.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::capture::CaptureReader;
use crate::error::Result;
use crate::filter::Filter;
use crate::packet::{Packet, TimeRange};
use crate::wire;

/// How much of each capture the check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedOptions {
    /// Packets read from each capture at each anchor (default 1,024).
    pub sample: usize,
    /// Most packets read from one capture (default 2^20).
    pub max_packets: u64,
    /// Most packets read from all captures together (default 2^22): past it, captures not yet
    /// read are not sampled.
    pub max_total_packets: u64,
    /// Only packets in this range are sampled, as a scan of it reads them.
    pub time_range: TimeRange,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            sample: 1024,
            max_packets: 1 << 20,
            max_total_packets: 1 << 22,
            time_range: TimeRange::ALL,
        }
    }
}

/// Two captures that hold the same packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedPair {
    /// Their indices among the readers, `a` < `b`.
    pub a: usize,
    pub b: usize,
    /// The instant from which both were sampled (the later of their first timestamps).
    pub from_ns: i64,
    /// Distinct packets (fingerprints) found in both samples.
    pub shared: usize,
    /// Distinct packets sampled from each.
    pub sampled_a: usize,
    pub sampled_b: usize,
}

/// What [`shared_packets`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedPackets {
    /// Every pair of captures with at least one packet in common, in order of (a, b).
    pub pairs: Vec<SharedPair>,
    /// Per capture, the address that is the source or the destination of at least 90 % of its
    /// sampled packets, more than any other: the host it was recorded on, whose `src host`
    /// filter keeps each packet once. `None` where no address stands out (a capture of a
    /// single pair of hosts names both alike).
    pub hosts: Vec<Option<IpAddr>>,
    /// Packets read from each capture by the check.
    pub packets_read: Vec<u64>,
}

/// Sample `readers` (positioned at their first packet) and report the pairs that share packets.
/// `filters` holds each reader's filter (an empty slice: none); see
/// [`crate::engine::ScanConfig::filter_per_capture`]. A truncated tail ends a capture's sample
/// (with a warning in the reader, or an error if it reads strictly); damage is the error, of
/// the first capture found damaged: a read of them all would fail with it too, and what they
/// share is then moot.
pub fn shared_packets(
    readers: &mut [CaptureReader],
    filters: &[Option<Filter>],
    options: &SharedOptions,
) -> Result<SharedPackets> {
    let n = readers.len();
    let mut budget = Budget {
        left_total: options.max_total_packets,
        read: vec![0; n],
        each: options.max_packets,
    };
    // First, each capture's first instant (its first packet in range, sampled later).
    let mut firsts: Vec<Option<(i64, Option<Sample>)>> = Vec::with_capacity(n);
    for (k, reader) in readers.iter_mut().enumerate() {
        let filter = filters.get(k).and_then(Option::as_ref);
        let mut first = None;
        while first.is_none() && budget.allows(k) {
            let Some(p) = reader.next_packet()? else {
                break;
            };
            budget.count(k);
            first = p
                .ts_ns
                .filter(|&t| options.time_range.contains(t))
                .map(|t| (t, sample(&p, filter)));
        }
        firsts.push(first);
    }
    let mut anchors: Vec<i64> = firsts.iter().flatten().map(|&(t, _)| t).collect();
    anchors.sort_unstable();
    anchors.dedup();

    let mut samples: Vec<Sampled> = Vec::with_capacity(n);
    let mut hosts = Vec::with_capacity(n);
    for (k, reader) in readers.iter_mut().enumerate() {
        let filter = filters.get(k).and_then(Option::as_ref);
        let mut sampler = Sampler::new(&anchors, options.sample);
        if let Some((t, s)) = firsts[k].take() {
            sampler.feed(t, s);
            while !sampler.done() && budget.allows(k) {
                let Some(p) = reader.next_packet()? else {
                    break;
                };
                budget.count(k);
                let Some(t) = p.ts_ns.filter(|&t| options.time_range.contains(t)) else {
                    continue;
                };
                if sampler.wants(t) {
                    sampler.feed(t, sample(&p, filter));
                }
            }
        }
        hosts.push(sampler.host());
        samples.push(Sampled {
            first: sampler.first,
            sets: sampler.sets,
        });
    }

    let mut pairs = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (Some(fa), Some(fb)) = (samples[a].first, samples[b].first) else {
                continue;
            };
            let at = fa.max(fb);
            // A capture that ended (or ran out of budget) before `at` has an empty sample there.
            let (sa, sb) = (&samples[a].sets[at], &samples[b].sets[at]);
            let shared = sa.intersection(sb).count();
            if shared > 0 {
                pairs.push(SharedPair {
                    a,
                    b,
                    from_ns: anchors[at],
                    shared,
                    sampled_a: sa.len(),
                    sampled_b: sb.len(),
                });
            }
        }
    }
    Ok(SharedPackets {
        pairs,
        hosts,
        packets_read: budget.read,
    })
}

/// One capture's fingerprints per anchor, from its own first anchor on (those before stay
/// empty, as do those it never reached).
struct Sampled {
    first: Option<usize>,
    sets: Vec<HashSet<u64>>,
}

struct Budget {
    left_total: u64,
    read: Vec<u64>,
    each: u64,
}

impl Budget {
    /// One more packet of capture `k` may be read.
    fn allows(&self, k: usize) -> bool {
        self.left_total > 0 && self.read[k] < self.each
    }

    fn count(&mut self, k: usize) {
        self.left_total -= 1;
        self.read[k] += 1;
    }
}

/// One capture's samples: a set of fingerprints per anchor from the capture's first on. Each
/// anchor's sample is the first `sample` packets at or after it, whether or not a later anchor
/// comes first (samples of anchors close together overlap).
struct Sampler<'a> {
    anchors: &'a [i64],
    /// The capture's own anchor (its first instant's); `None` before its first packet.
    first: Option<usize>,
    /// Anchors before `started` have begun; those before `lo` are full.
    started: usize,
    lo: usize,
    /// Packets taken at each anchor (sampled or not: filtered-out packets fill a sample too, so
    /// that every capture's sample spans about the same stretch of its traffic).
    taken: Vec<usize>,
    sample: usize,
    sets: Vec<HashSet<u64>>,
    addresses: HashMap<IpAddr, u32>,
    ip_packets: u32,
}

impl<'a> Sampler<'a> {
    fn new(anchors: &'a [i64], sample: usize) -> Self {
        Sampler {
            anchors,
            first: None,
            started: 0,
            lo: 0,
            taken: vec![0; anchors.len()],
            sample,
            sets: vec![HashSet::new(); anchors.len()],
            addresses: HashMap::new(),
            ip_packets: 0,
        }
    }

    /// Every anchor from the capture's own on has its whole sample.
    fn done(&self) -> bool {
        self.first.is_some() && self.lo == self.anchors.len()
    }

    /// A packet at `t` would be sampled (else it is skipped without decoding): a begun
    /// anchor's sample is not full, or `t` reaches the next anchor.
    fn wants(&self, t: i64) -> bool {
        self.first.is_none()
            || self.lo < self.started
            || self
                .anchors
                .get(self.started)
                .is_some_and(|&next| t >= next)
    }

    fn feed(&mut self, t: i64, s: Option<Sample>) {
        if self.first.is_none() {
            // The capture's first packet, whose instant is an anchor.
            let own = self.anchors.partition_point(|&x| x <= t).saturating_sub(1);
            (self.first, self.lo, self.started) = (Some(own), own, own);
        }
        while self
            .anchors
            .get(self.started)
            .is_some_and(|&next| t >= next)
        {
            self.started += 1;
        }
        let mut sampled = false;
        for a in self.lo..self.started {
            // A packet stamped before a begun anchor (out of order) is not in its sample.
            if self.anchors[a] > t || self.taken[a] >= self.sample {
                continue;
            }
            self.taken[a] += 1;
            if let Some(s) = &s {
                sampled |= self.sets[a].insert(s.fingerprint);
            }
        }
        while self.lo < self.started && self.taken[self.lo] >= self.sample {
            self.lo += 1;
        }
        if let (true, Some(s)) = (sampled, s) {
            self.ip_packets += 1;
            for host in s.hosts {
                *self.addresses.entry(host).or_insert(0) += 1;
            }
        }
    }

    fn host(&self) -> Option<IpAddr> {
        let mut counts: Vec<(u32, IpAddr)> = self.addresses.iter().map(|(&h, &c)| (c, h)).collect();
        counts.sort_unstable_by(|x, y| y.cmp(x));
        let (best, host) = *counts.first()?;
        let runner_up = counts.get(1).map_or(0, |c| c.0);
        (u64::from(best) * 10 >= u64::from(self.ip_packets) * 9 && best > runner_up).then_some(host)
    }
}

/// A sampled packet: its fingerprint and its two addresses.
struct Sample {
    fingerprint: u64,
    hosts: [IpAddr; 2],
}

/// The packet's sample, `None` when it is not IP or its capture's filter leaves it out.
fn sample(p: &Packet, filter: Option<&Filter>) -> Option<Sample> {
    if let Some(f) = filter {
        let h = wire::decode_frame(p.linktype, p.data, p.wire_len);
        if !f.matches(&h, p.wire_len) {
            return None;
        }
    }
    fingerprint(wire::ip_packet(p.linktype, p.data)?)
}

/// See the module's documentation for what is hashed and why.
fn fingerprint(ip: &[u8]) -> Option<Sample> {
    let mut h = DefaultHasher::new();
    let (proto, transport, hosts) = match ip.first()? >> 4 {
        4 => {
            let header = ip.get(..20)?;
            let ihl = usize::from(header[0] & 0x0f) * 4;
            h.write(&header[2..8]); // total length, identification, flags and fragment offset
            h.write_u8(header[9]);
            h.write(&header[12..20]);
            let src = Ipv4Addr::from(<[u8; 4]>::try_from(&header[12..16]).ok()?);
            let dst = Ipv4Addr::from(<[u8; 4]>::try_from(&header[16..20]).ok()?);
            let transport = ip.get(ihl.max(20)..).unwrap_or(&[]);
            (header[9], transport, [IpAddr::V4(src), IpAddr::V4(dst)])
        }
        6 => {
            let header = ip.get(..40)?;
            h.write_u8(header[1] & 0x0f); // the flow label's top bits, not the traffic class
            h.write(&header[2..7]); // the rest of the flow label, payload length, next header
            h.write(&header[8..40]);
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&header[8..24]).ok()?);
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&header[24..40]).ok()?);
            (header[6], &ip[40..], [IpAddr::V6(src), IpAddr::V6(dst)])
        }
        _ => return None,
    };
    let upto = |end: usize| &transport[..end.min(transport.len())];
    match proto {
        wire::IP_PROTO_TCP => h.write(upto(16)),
        wire::IP_PROTO_UDP => {
            h.write(upto(6));
            h.write(
                transport
                    .get(8..)
                    .map_or(&[][..], |p| &p[..16.min(p.len())]),
            );
        }
        // ICMP and ICMPv6: type and code, then past the checksum.
        1 | 58 => {
            h.write(upto(2));
            h.write(transport.get(4..).map_or(&[][..], |p| &p[..4.min(p.len())]));
        }
        _ => h.write(upto(8)),
    }
    Some(Sample {
        fingerprint: h.finish(),
        hosts,
    })
}
