//! Flow table: per flow first/last timestamp, packets and bytes, in the NFStream/Zeek style.
//!
//! A flow is keyed by a directional 5-tuple, the CNSM study's directional 4-tuple, or a
//! bidirectional 5-tuple in canonical order. Without an idle timeout a key is one flow for the
//! whole trace (the CNSM study's count); with one, a gap longer than the timeout closes the flow
//! and the next packet opens a new one. Non-IP packets have no key: they are counted apart.
//! TCP flows count their retransmitted segments ([`super::retransmissions`]), each direction of
//! a row on its own.

use std::collections::HashMap;
use std::net::IpAddr;

use super::retransmissions::SeqTracker;
use crate::engine::Arrival;
use crate::error::{Error, Limit, Result};
use crate::wire::IP_PROTO_TCP;

/// What makes packets one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlowKey {
    /// Directional (proto, src, dst, sport, dport).
    #[default]
    Flow5,
    /// Directional (src, sport, dst, dport), protocol ignored (the CNSM study's flow count).
    Flow4,
    /// Bidirectional 5-tuple: both directions are one flow; the first packet's sender is `src`.
    BiFlow5,
}

/// How [`FlowTable`] cuts the packets into flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowOptions {
    /// The key a flow is told by (`Flow5` by default).
    pub key: FlowKey,
    /// A gap strictly longer than this (ns) ends a flow; `None`: flows never expire.
    pub idle_timeout_ns: Option<i64>,
    /// Most flows (all of them, those closed by the idle timeout too: every one is reported)
    /// before `push` fails with LimitExceeded.
    pub max_flows: usize,
}

crate::builders!([] FlowOptions {
    key: FlowKey => with_key,
    idle_timeout_ns: Option<i64> => with_idle_timeout_ns,
    max_flows: usize => with_max_flows,
});

impl Default for FlowOptions {
    fn default() -> Self {
        FlowOptions {
            key: FlowKey::Flow5,
            idle_timeout_ns: None,
            max_flows: crate::engine::ScanConfig::DEFAULT_MAX_GROUPS,
        }
    }
}

/// One flow. Ports are 0 when the packet has none (ICMP, fragments; never for Flow4, which leaves
/// such packets out); `protocol` is 0 for Flow4.
/// For BiFlow5 the src/dst fields name the sender of the flow's first packet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowRecord {
    /// Source host (the first packet's sender for `BiFlow5`).
    pub src_ip: IpAddr,
    /// Destination host.
    pub dst_ip: IpAddr,
    /// IP protocol number (0 for `Flow4`).
    pub protocol: u8,
    /// Source port (0 where there is none).
    pub src_port: u16,
    /// Destination port (0 where there is none).
    pub dst_port: u16,
    /// The flow's first packet, ns.
    pub first_seen_ns: i64,
    /// Its last packet, ns.
    pub last_seen_ns: i64,
    /// `last_seen_ns − first_seen_ns`.
    pub duration_ns: i64,
    /// Packets of the flow.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Packets from `src` to `dst`.
    pub src2dst_packets: u64,
    /// Their bytes.
    pub src2dst_bytes: u64,
    /// Packets from `dst` to `src` (only `BiFlow5` has any).
    pub dst2src_packets: u64,
    /// Their bytes.
    pub dst2src_bytes: u64,
    /// TCP segments of the flow (both directions for BiFlow5) that resent sequence space
    /// already seen ([`SeqTracker::segment`]), and their bytes as `bytes` counts them. `None`
    /// when no packet of the flow is TCP.
    pub retransmitted_packets: Option<u64>,
    /// Their bytes (see `retransmitted_packets`).
    pub retransmitted_bytes: Option<u64>,
}

/// Flows plus the packets that could not belong to any flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowReport {
    /// Sorted by (first_seen_ns, then key order of appearance).
    pub flows: Vec<FlowRecord>,
    /// Packets in no flow: not IP, or (Flow4) without transport ports.
    pub no_flow_packets: u64,
    /// Their bytes.
    pub no_flow_bytes: u64,
}

/// Key as stored: for BiFlow5 the endpoints are put in canonical (smaller first) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    a: IpAddr,
    b: IpAddr,
    proto: u8,
    pa: u16,
    pb: u16,
}

/// A key's flow now (an idle timeout opens a new one) and what each direction of the key has
/// sent, in the key's own order (canonical for a biflow): the connection's, whichever flow of it
/// is live.
#[derive(Debug, Default)]
struct Live {
    record: usize,
    seq: [SeqTracker; 2],
}

/// The flows of a trace as it is read: push every packet in time order, then
/// [`FlowTable::finish`].
#[derive(Debug)]
pub struct FlowTable {
    opts: FlowOptions,
    /// The live flow of each key seen.
    live: HashMap<Key, Live>,
    records: Vec<FlowRecord>,
    /// Flows closed by the idle timeout, so `live` stays bounded by the active set.
    closed: usize,
    no_flow_packets: u64,
    no_flow_bytes: u64,
}

impl FlowTable {
    /// An empty table.
    pub fn new(opts: FlowOptions) -> Self {
        FlowTable {
            opts,
            live: HashMap::new(),
            records: Vec::new(),
            closed: 0,
            no_flow_packets: 0,
            no_flow_bytes: 0,
        }
    }

    /// One packet (in time order); a new flow past `max_flows` is a
    /// [`crate::ErrorKind::LimitExceeded`] error.
    pub fn push(&mut self, a: &Arrival) -> Result<()> {
        let h = &a.headers;
        // The CNSM study's 4-tuple comes from the TCP ports: ICMP, IGMP or a later fragment is
        // in no flow4, as a packet without addresses is in no flow at all. A 5-tuple needs the
        // protocol: an IPv6 packet whose extension chain the snaplen cut has addresses and no
        // protocol, and is in no flow, as in scan(by="flow") (counted as protocol 0, it claimed
        // Hop-by-Hop and its row found no E(τ) of its own).
        let keyed = match self.opts.key {
            FlowKey::Flow4 => h.sport.is_some() && h.dport.is_some(),
            FlowKey::Flow5 | FlowKey::BiFlow5 => h.ip_proto.is_some(),
        };
        let (src, dst) = match (h.src, h.dst) {
            (Some(s), Some(d)) if keyed => (s, d),
            _ => {
                self.no_flow_packets = self.no_flow_packets.saturating_add(1);
                self.no_flow_bytes = self.no_flow_bytes.saturating_add(a.size);
                return Ok(());
            }
        };
        let proto = h.ip_proto.unwrap_or(0);
        let sport = h.sport.unwrap_or(0);
        let dport = h.dport.unwrap_or(0);
        let (key, forward) = match self.opts.key {
            FlowKey::Flow5 => (
                Key {
                    a: src,
                    b: dst,
                    proto,
                    pa: sport,
                    pb: dport,
                },
                true,
            ),
            FlowKey::Flow4 => (
                Key {
                    a: src,
                    b: dst,
                    proto: 0,
                    pa: sport,
                    pb: dport,
                },
                true,
            ),
            FlowKey::BiFlow5 => {
                if (src, sport) <= (dst, dport) {
                    (
                        Key {
                            a: src,
                            b: dst,
                            proto,
                            pa: sport,
                            pb: dport,
                        },
                        true,
                    )
                } else {
                    (
                        Key {
                            a: dst,
                            b: src,
                            proto,
                            pa: dport,
                            pb: sport,
                        },
                        false,
                    )
                }
            }
        };
        let existing = self.live.get(&key).map(|l| l.record);
        let idx = match existing {
            Some(i) if !self.expired(i, a.ts_ns) => i,
            _ => {
                // Every flow is kept for the report, those an idle timeout closed too: the bound
                // is on all of them (64 keys with idle_timeout=0 made 25 M records, 7.9 GB).
                if self.records.len() >= self.opts.max_flows {
                    // Only an idle timeout splits a key into several flows: without one, a
                    // timeout of any length would make more flows, not fewer.
                    let or_longer = if self.opts.idle_timeout_ns.is_some() {
                        ", or a longer idle_timeout"
                    } else {
                        ", or read fewer packets (start=/end=, filter=)"
                    };
                    return Err(Error::limit_exceeded(
                        Limit::Result,
                        format!(
                            "more than {} flow{}: raise max_flows (each flow holds a few hundred \
                             bytes, about 1.2 kB with windows){or_longer}",
                            self.opts.max_flows,
                            if self.opts.max_flows == 1 { "" } else { "s" }
                        ),
                    ));
                }
                // Room first, by reservations that fail: the allocator's refusal inside `push` or
                // `entry` would abort the process, where the read can stop with an error.
                let no_room = self.records.try_reserve(1).is_err()
                    || (existing.is_none() && self.live.try_reserve(1).is_err());
                if no_room {
                    return Err(Error::limit_exceeded(
                        Limit::Result,
                        format!(
                            "out of memory for the flow table after {} flow{}: lower max_flows, \
                             or read fewer packets (start=/end=, filter=)",
                            self.records.len(),
                            if self.records.len() == 1 { "" } else { "s" }
                        ),
                    ));
                }
                if existing.is_some() {
                    self.closed = self.closed.saturating_add(1);
                }
                let i = self.records.len();
                self.records.push(FlowRecord {
                    src_ip: src,
                    dst_ip: dst,
                    protocol: if self.opts.key == FlowKey::Flow4 {
                        0
                    } else {
                        proto
                    },
                    src_port: sport,
                    dst_port: dport,
                    first_seen_ns: a.ts_ns,
                    last_seen_ns: a.ts_ns,
                    duration_ns: 0,
                    packets: 0,
                    bytes: 0,
                    src2dst_packets: 0,
                    src2dst_bytes: 0,
                    dst2src_packets: 0,
                    dst2src_bytes: 0,
                    retransmitted_packets: None,
                    retransmitted_bytes: None,
                });
                // A flow the timeout opens goes on with its key's sequence state: a resend after
                // a silence (a timeout retransmission) is one.
                self.live.entry(key).or_default().record = i;
                i
            }
        };
        if let Some(r) = self.records.get_mut(idx) {
            r.last_seen_ns = r.last_seen_ns.max(a.ts_ns);
            r.duration_ns = r.last_seen_ns.saturating_sub(r.first_seen_ns);
            r.packets = r.packets.saturating_add(1);
            r.bytes = r.bytes.saturating_add(a.size);
            // Direction relative to the flow's first packet, not to the canonical key order.
            let same_dir = if self.opts.key == FlowKey::BiFlow5 {
                r.src_ip == src && r.src_port == sport
            } else {
                forward
            };
            if same_dir {
                r.src2dst_packets = r.src2dst_packets.saturating_add(1);
                r.src2dst_bytes = r.src2dst_bytes.saturating_add(a.size);
            } else {
                r.dst2src_packets = r.dst2src_packets.saturating_add(1);
                r.dst2src_bytes = r.dst2src_bytes.saturating_add(a.size);
            }
            if h.ip_proto == Some(IP_PROTO_TCP) {
                let resent = self
                    .live
                    .get_mut(&key)
                    .is_some_and(|l| l.seq[usize::from(!forward)].segment(h));
                let (n, b) = (u64::from(resent), if resent { a.size } else { 0 });
                let p = r.retransmitted_packets.get_or_insert(0);
                *p = p.saturating_add(n);
                let by = r.retransmitted_bytes.get_or_insert(0);
                *by = by.saturating_add(b);
            }
        }
        Ok(())
    }

    fn expired(&self, idx: usize, ts: i64) -> bool {
        match (self.opts.idle_timeout_ns, self.records.get(idx)) {
            (Some(t), Some(r)) => ts.saturating_sub(r.last_seen_ns) > t,
            _ => false,
        }
    }

    /// Flows seen so far (live and closed).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no flow was seen.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// All flows in order of their first packet (ties: order of creation).
    pub fn finish(self) -> Vec<FlowRecord> {
        self.finish_report().flows
    }

    /// All flows plus the non-IP tally.
    pub fn finish_report(self) -> FlowReport {
        let mut flows = self.records;
        // Stable: flows created at the same ns keep their creation order. Flows come in time
        // order when the packets do, and then the sort (and its scratch memory, half the
        // records) is skipped.
        if !flows.is_sorted_by_key(|r| r.first_seen_ns) {
            flows.sort_by_key(|r| r.first_seen_ns);
        }
        FlowReport {
            flows,
            no_flow_packets: self.no_flow_packets,
            no_flow_bytes: self.no_flow_bytes,
        }
    }

    /// Packets and bytes in no flow so far (see [`FlowReport::no_flow_packets`]).
    pub fn no_flow(&self) -> (u64, u64) {
        (self.no_flow_packets, self.no_flow_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ScanConfig;
    use crate::wire::{Headers, IP_PROTO_UDP};

    const ACK: u8 = 0x10;

    /// A packet from 10.0.0.`from`:`from` to 10.0.0.`to`:`to`.
    fn packet(ts_ns: i64, proto: u8, from: u8, to: u8, seq: u32, len: u32) -> Arrival {
        let ip = |n: u8| Some(IpAddr::from([10, 0, 0, n]));
        let tcp = proto == IP_PROTO_TCP;
        Arrival {
            ts_ns,
            size: u64::from(len) + 54,
            interface: 0,
            headers: Headers {
                src: ip(from),
                dst: ip(to),
                ip_proto: Some(proto),
                sport: Some(u16::from(from)),
                dport: Some(u16::from(to)),
                payload_len: Some(len),
                tcp_flags: tcp.then_some(ACK),
                tcp_seq: tcp.then_some(seq),
                ..Headers::default()
            },
        }
    }

    fn flows(opts: FlowOptions, packets: &[Arrival]) -> Vec<FlowRecord> {
        let mut t = FlowTable::new(opts);
        for a in packets {
            t.push(a).unwrap();
        }
        t.finish()
    }

    fn resent(r: &FlowRecord) -> (Option<u64>, Option<u64>) {
        (r.retransmitted_packets, r.retransmitted_bytes)
    }

    #[test]
    fn retransmissions_per_flow_and_null_without_tcp() {
        let t = IP_PROTO_TCP;
        let packets = [
            packet(0, t, 1, 2, 0, 100),
            packet(1, t, 2, 1, 5000, 0),
            packet(2, t, 1, 2, 100, 100),
            packet(3, t, 1, 2, 100, 100),
            packet(4, IP_PROTO_UDP, 1, 2, 0, 100),
            packet(5, IP_PROTO_UDP, 1, 2, 0, 100),
            // The other direction's sequence numbers are its own: 100 is far below 5000.
            packet(6, t, 2, 1, 100, 10),
        ];
        let directional = flows(FlowOptions::default(), &packets);
        let got: Vec<_> = directional.iter().map(resent).collect();
        assert_eq!(
            got,
            [(Some(1), Some(154)), (Some(1), Some(64)), (None, None)]
        );
        let bi = flows(
            FlowOptions {
                key: FlowKey::BiFlow5,
                ..FlowOptions::default()
            },
            &packets,
        );
        let got: Vec<_> = bi.iter().map(resent).collect();
        assert_eq!(got, [(Some(2), Some(218)), (None, None)]);
        // Flow4 ignores the protocol: one row with TCP in it, counting only the TCP segments.
        let four = flows(
            FlowOptions {
                key: FlowKey::Flow4,
                ..FlowOptions::default()
            },
            &packets,
        );
        let got: Vec<_> = four.iter().map(resent).collect();
        assert_eq!(got, [(Some(1), Some(154)), (Some(1), Some(64))]);
    }

    #[test]
    fn a_flow_an_idle_timeout_opens_goes_on_with_its_connections_sequence_state() {
        let t = IP_PROTO_TCP;
        let packets = [
            packet(0, t, 1, 2, 0, 100),
            packet(1, t, 1, 2, 100, 100),
            // A new flow after the silence: a resend of what the connection sent before it.
            packet(100, t, 1, 2, 0, 100),
            packet(101, t, 1, 2, 200, 100),
            packet(102, t, 1, 2, 100, 100),
        ];
        let opts = FlowOptions {
            idle_timeout_ns: Some(10),
            ..FlowOptions::default()
        };
        let got: Vec<_> = flows(opts, &packets).iter().map(resent).collect();
        assert_eq!(got, [(Some(0), Some(0)), (Some(2), Some(308))]);
    }

    /// The advice at `max_flows` is one that can be followed: a longer idle timeout makes fewer
    /// flows only where an idle timeout split keys into several (it was given without one too,
    /// where any timeout makes more).
    #[test]
    fn the_flow_limit_advises_a_longer_idle_timeout_only_when_one_was_given() {
        let advice = |idle_timeout_ns: Option<i64>| {
            let mut t = FlowTable::new(FlowOptions {
                idle_timeout_ns,
                max_flows: 1,
                ..FlowOptions::default()
            });
            t.push(&packet(0, IP_PROTO_UDP, 1, 2, 0, 10)).unwrap();
            t.push(&packet(100, IP_PROTO_UDP, 1, 3, 0, 10))
                .unwrap_err()
                .reason
        };
        let without = advice(None);
        assert!(!without.contains("idle_timeout"), "{without}");
        assert!(
            without.contains("raise max_flows") && without.contains("read fewer packets"),
            "{without}"
        );
        let with = advice(Some(10));
        assert!(with.contains("or a longer idle_timeout"), "{with}");
    }

    /// The default limit is the 1,000,000 the docs and Python state (it was 2^20 here).
    #[test]
    fn the_default_flow_limit_is_a_million() {
        let mut t = FlowTable::new(FlowOptions::default());
        let mut a = packet(0, IP_PROTO_UDP, 1, 2, 0, 10);
        for i in 0..1_000_000u32 {
            (a.headers.sport, a.headers.dport) = (Some((i >> 16) as u16), Some(i as u16));
            t.push(&a).unwrap();
        }
        a.headers.src = Some(IpAddr::from([10, 0, 0, 9]));
        let e = t.push(&a).unwrap_err();
        assert!(e.reason.starts_with("more than 1000000 flows"), "{e}");
        assert_eq!(ScanConfig::DEFAULT_MAX_GROUPS, 1_000_000);
    }
}
