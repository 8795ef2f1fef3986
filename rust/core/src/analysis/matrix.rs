//! Traffic matrix: bytes and packets per ordered (src, dst) host pair, and per host sent/received.
//!
//! Packets without IP addresses are kept under the `None` host so the matrix total is always the
//! sum of all packet sizes.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::engine::Arrival;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostTotals {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub received_bytes: u64,
    pub received_packets: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrafficMatrix {
    /// (bytes, packets) per ordered (src, dst) pair; `None` where the packet has no address.
    pub pairs: BTreeMap<(Option<IpAddr>, Option<IpAddr>), (u64, u64)>,
    pub hosts: BTreeMap<Option<IpAddr>, HostTotals>,
    pub total_bytes: u64,
    pub total_packets: u64,
}

impl TrafficMatrix {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, a: &Arrival) {
        let (src, dst) = (a.headers.src, a.headers.dst);
        let cell = self.pairs.entry((src, dst)).or_default();
        cell.0 = cell.0.saturating_add(a.size);
        cell.1 = cell.1.saturating_add(1);
        let s = self.hosts.entry(src).or_default();
        s.sent_bytes = s.sent_bytes.saturating_add(a.size);
        s.sent_packets = s.sent_packets.saturating_add(1);
        let d = self.hosts.entry(dst).or_default();
        d.received_bytes = d.received_bytes.saturating_add(a.size);
        d.received_packets = d.received_packets.saturating_add(1);
        self.total_bytes = self.total_bytes.saturating_add(a.size);
        self.total_packets = self.total_packets.saturating_add(1);
    }

    /// Bytes from `src` to `dst` (0 if never seen).
    pub fn bytes(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> u64 {
        self.pairs.get(&(src, dst)).map_or(0, |c| c.0)
    }

    pub fn packets(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> u64 {
        self.pairs.get(&(src, dst)).map_or(0, |c| c.1)
    }
}
