//! Traffic matrix: bytes and packets per ordered (src, dst) host pair, and per host sent/received.
//!
//! Packets without IP addresses are kept under the `None` host so the matrix total is always the
//! sum of all packet sizes.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::engine::Arrival;
use crate::error::{Error, Limit, Result};

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
    /// Most pairs before [`TrafficMatrix::try_push`] refuses a new one (about 400 bytes each,
    /// pair and hosts): a capture of spoofed or scanning traffic has a pair per packet.
    pub max_pairs: usize,
}

impl TrafficMatrix {
    pub const DEFAULT_MAX_PAIRS: usize = 1_000_000;

    pub fn new() -> Self {
        Self::with_max_pairs(Self::DEFAULT_MAX_PAIRS)
    }

    pub fn with_max_pairs(max_pairs: usize) -> Self {
        TrafficMatrix {
            max_pairs,
            ..Self::default()
        }
    }

    /// [`TrafficMatrix::push`], refusing a pair past `max_pairs` with a `LimitExceeded` error.
    pub fn try_push(&mut self, a: &Arrival) -> Result<()> {
        let key = (a.headers.src, a.headers.dst);
        if self.pairs.len() >= self.max_pairs && !self.pairs.contains_key(&key) {
            return Err(Error::limit_exceeded(
                Limit::Result,
                format!(
                    "more than {} host pair{}: raise max_pairs (each pair holds about 400 bytes)",
                    self.max_pairs,
                    if self.max_pairs == 1 { "" } else { "s" }
                ),
            ));
        }
        self.push(a);
        Ok(())
    }

    /// One packet, whatever the number of pairs.
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
