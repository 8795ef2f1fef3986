//! Traffic matrix: bytes and packets per ordered (src, dst) host pair, and per host sent/received.
//!
//! Packets without IP addresses are kept under the `None` host so the matrix total is always the
//! sum of all packet sizes.
//!
//! Memory: a capture of spoofed or scanning traffic has a new pair, and up to two new hosts, in
//! every packet, so the tables are kept small and grow by reservations that can fail (a
//! `LimitExceeded` error, not the allocator's abort). Hosts are numbered as they are first seen
//! and a pair is two numbers; the per-host totals are worked out from the pairs at the end, so a
//! host costs its address and its number only while the capture is read.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::engine::Arrival;
use crate::error::{Error, Limit, Result};

/// Peak memory per pair that `max_pairs`' error quotes (docs/limits.md): measured on captures
/// where each packet is a new pair of two new hosts (the worst case), 1 M against 4 M pairs,
/// about 230 bytes while reading and 375 at the peak of Python's `traffic_matrix` with its frame.
pub const BYTES_PER_PAIR: usize = 400;

/// What one host sent and received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostTotals {
    /// Bytes it sent.
    pub sent_bytes: u64,
    /// Packets it sent.
    pub sent_packets: u64,
    /// Bytes it received.
    pub received_bytes: u64,
    /// Packets it received.
    pub received_packets: u64,
}

/// The traffic matrix as it is read: see [`TrafficMatrix::finish`] for the result.
#[derive(Debug, Clone)]
pub struct TrafficMatrix {
    /// Each host, by the number it got when first seen.
    hosts: Vec<Option<IpAddr>>,
    numbers: HashMap<Option<IpAddr>, u32>,
    /// (bytes, packets) per ordered (src, dst) pair of host numbers.
    pairs: HashMap<(u32, u32), (u64, u64)>,
    /// Bytes of every packet pushed.
    pub total_bytes: u64,
    /// Packets pushed.
    pub total_packets: u64,
    /// Most pairs before [`TrafficMatrix::try_push`] refuses a new one: a capture of spoofed or
    /// scanning traffic has a pair per packet.
    pub max_pairs: usize,
}

/// The result: hosts in address order (`None` first, then IPv4 before IPv6, each by its bytes),
/// pairs in (src, dst) order of those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MatrixReport {
    /// The hosts (`None`: packets without IP addresses).
    pub hosts: Vec<Option<IpAddr>>,
    /// What `hosts[i]` sent and received.
    pub host_totals: Vec<HostTotals>,
    /// (src, dst, bytes, packets): src and dst index `hosts`.
    pub pairs: Vec<(u32, u32, u64, u64)>,
    /// Bytes of every packet.
    pub total_bytes: u64,
    /// Packets.
    pub total_packets: u64,
}

impl MatrixReport {
    /// ((src, dst), (bytes, packets)) per pair, in (src, dst) order.
    pub fn pair_totals(
        &self,
    ) -> impl Iterator<Item = ((Option<IpAddr>, Option<IpAddr>), (u64, u64))> + '_ {
        self.pairs
            .iter()
            .map(|&(s, d, b, p)| ((self.hosts[s as usize], self.hosts[d as usize]), (b, p)))
    }

    /// What `host` sent and received (`None` if never seen).
    pub fn host(&self, host: Option<IpAddr>) -> Option<&HostTotals> {
        let i = self.hosts.binary_search(&host).ok()?;
        Some(&self.host_totals[i])
    }

    /// (bytes, packets) from `src` to `dst` ((0, 0) if never seen).
    pub fn pair(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> (u64, u64) {
        let (Ok(s), Ok(d)) = (
            self.hosts.binary_search(&src),
            self.hosts.binary_search(&dst),
        ) else {
            return (0, 0);
        };
        let (s, d) = (s as u32, d as u32);
        self.pairs
            .binary_search_by_key(&(s, d), |p| (p.0, p.1))
            .map_or((0, 0), |i| (self.pairs[i].2, self.pairs[i].3))
    }
}

/// As [`TrafficMatrix::new`]: a derived default held no pair at all (`max_pairs` 0), so that
/// the first packet was refused.
impl Default for TrafficMatrix {
    fn default() -> Self {
        Self::new()
    }
}

impl TrafficMatrix {
    /// Pairs a matrix holds unless told otherwise, as [`crate::engine::ScanConfig::max_groups`]
    /// groups.
    pub const DEFAULT_MAX_PAIRS: usize = 1_000_000;

    /// An empty matrix of at most [`TrafficMatrix::DEFAULT_MAX_PAIRS`] pairs.
    pub fn new() -> Self {
        Self::with_max_pairs(Self::DEFAULT_MAX_PAIRS)
    }

    /// An empty matrix of at most `max_pairs` pairs.
    pub fn with_max_pairs(max_pairs: usize) -> Self {
        TrafficMatrix {
            hosts: Vec::new(),
            numbers: HashMap::new(),
            pairs: HashMap::new(),
            total_bytes: 0,
            total_packets: 0,
            max_pairs,
        }
    }

    /// Pairs seen so far.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether no pair was seen.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// One packet. A new pair past `max_pairs`, or one whose memory cannot be had, is a
    /// `LimitExceeded` error (limit `Result`) and leaves the matrix as it was.
    pub fn try_push(&mut self, a: &Arrival) -> Result<()> {
        let (src, dst) = (a.headers.src, a.headers.dst);
        let known = (
            self.numbers.get(&src).copied(),
            self.numbers.get(&dst).copied(),
        );
        if let (Some(s), Some(d)) = known {
            if let Some(cell) = self.pairs.get_mut(&(s, d)) {
                cell.0 = cell.0.saturating_add(a.size);
                cell.1 = cell.1.saturating_add(1);
                self.total_bytes = self.total_bytes.saturating_add(a.size);
                self.total_packets = self.total_packets.saturating_add(1);
                return Ok(());
            }
        }
        if self.pairs.len() >= self.max_pairs {
            return Err(Error::limit_exceeded(
                Limit::Result,
                format!(
                    "more than {} host pair{}: raise max_pairs (each pair holds up to about \
                     {BYTES_PER_PAIR} bytes), or read fewer packets (start=/end=, filter=)",
                    self.max_pairs,
                    if self.max_pairs == 1 { "" } else { "s" }
                ),
            ));
        }
        // Room first, by reservations that fail: the allocator's refusal inside an insert would
        // abort the process, where the read can stop with an error.
        let new_hosts =
            usize::from(known.0.is_none()) + usize::from(known.1.is_none() && src != dst);
        // u32 numbers hold every host while the pairs fit in memory at all (each host is in a
        // pair, and 2^31 pairs would take hundreds of GB).
        let numbered = u32::try_from(self.hosts.len() + new_hosts).is_ok();
        if !numbered
            || self.pairs.try_reserve(1).is_err()
            || self.hosts.try_reserve(new_hosts).is_err()
            || self.numbers.try_reserve(new_hosts).is_err()
        {
            return Err(self.no_memory());
        }
        let s = self.number(src);
        let d = self.number(dst);
        self.pairs.insert((s, d), (a.size, 1));
        self.total_bytes = self.total_bytes.saturating_add(a.size);
        self.total_packets = self.total_packets.saturating_add(1);
        Ok(())
    }

    /// One packet, whatever the number of pairs (tests and callers that bound the pairs
    /// themselves); panics where [`TrafficMatrix::try_push`] would fail for memory.
    pub fn push(&mut self, a: &Arrival) {
        let max = std::mem::replace(&mut self.max_pairs, usize::MAX);
        let pushed = self.try_push(a);
        self.max_pairs = max;
        pushed.expect("the traffic matrix's memory");
    }

    /// The number of `host`, given it here if it is new (room reserved by the caller).
    fn number(&mut self, host: Option<IpAddr>) -> u32 {
        let hosts = &mut self.hosts;
        *self.numbers.entry(host).or_insert_with(|| {
            hosts.push(host);
            (hosts.len() - 1) as u32
        })
    }

    #[cold]
    fn no_memory(&self) -> Error {
        Error::limit_exceeded(
            Limit::Result,
            format!(
                "out of memory for the traffic matrix after {} host pair{} ({} host{}): lower \
                 max_pairs, or read fewer packets (start=/end=, filter=)",
                self.pairs.len(),
                if self.pairs.len() == 1 { "" } else { "s" },
                self.hosts.len(),
                if self.hosts.len() == 1 { "" } else { "s" },
            ),
        )
    }

    /// (bytes, packets) from `src` to `dst` so far ((0, 0) if never seen).
    pub fn pair(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> (u64, u64) {
        match (self.numbers.get(&src), self.numbers.get(&dst)) {
            (Some(&s), Some(&d)) => self.pairs.get(&(s, d)).copied().unwrap_or((0, 0)),
            _ => (0, 0),
        }
    }

    /// Bytes from `src` to `dst` (0 if never seen).
    pub fn bytes(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> u64 {
        self.pair(src, dst).0
    }

    /// Packets from `src` to `dst` (0 if never seen).
    pub fn packets(&self, src: Option<IpAddr>, dst: Option<IpAddr>) -> u64 {
        self.pair(src, dst).1
    }

    /// The report, sorted, with each host's totals summed from its pairs. Its memory (24 bytes a
    /// pair and 57 a host, beside the tables until they are dropped) is reserved fallibly too.
    pub fn finish(self) -> Result<MatrixReport> {
        let n = self.hosts.len();
        let (mut order, mut rank, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut host_totals, mut hosts) = (Vec::new(), Vec::new());
        let reserved = order.try_reserve_exact(n).is_ok()
            && rank.try_reserve_exact(n).is_ok()
            && pairs.try_reserve_exact(self.pairs.len()).is_ok()
            && host_totals.try_reserve_exact(n).is_ok()
            && hosts.try_reserve_exact(n).is_ok();
        if !reserved {
            return Err(Error::limit_exceeded(
                Limit::Result,
                format!(
                    "out of memory for the traffic matrix's report of {} host pairs ({} hosts): \
                     lower max_pairs, or read fewer packets (start=/end=, filter=)",
                    self.pairs.len(),
                    n
                ),
            ));
        }
        // Numbers in order of first sight become ranks in address order.
        order.extend(0..n as u32);
        order.sort_unstable_by_key(|&i| self.hosts[i as usize]);
        rank.resize(n, 0u32);
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        drop(self.numbers);
        pairs.extend(
            self.pairs
                .into_iter()
                .map(|((s, d), (b, p))| (rank[s as usize], rank[d as usize], b, p)),
        );
        pairs.sort_unstable_by_key(|p| (p.0, p.1));
        host_totals.resize(n, HostTotals::default());
        for &(s, d, b, p) in &pairs {
            let t = &mut host_totals[s as usize];
            t.sent_bytes = t.sent_bytes.saturating_add(b);
            t.sent_packets = t.sent_packets.saturating_add(p);
            let t = &mut host_totals[d as usize];
            t.received_bytes = t.received_bytes.saturating_add(b);
            t.received_packets = t.received_packets.saturating_add(p);
        }
        hosts.extend(order.iter().map(|&i| self.hosts[i as usize]));
        Ok(MatrixReport {
            hosts,
            host_totals,
            pairs,
            total_bytes: self.total_bytes,
            total_packets: self.total_packets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Headers;
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn arrival(size: u64, src: Option<IpAddr>, dst: Option<IpAddr>) -> Arrival {
        Arrival {
            ts_ns: 0,
            size,
            interface: 0,
            headers: Headers {
                src,
                dst,
                ..Default::default()
            },
        }
    }

    /// The report against the ordered maps the matrix used to be (a brute force here): same
    /// pairs, hosts, values and order, over IPv4, IPv6 and missing addresses.
    #[test]
    fn report_is_what_ordered_maps_give() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let host = |v: u64| match v % 9 {
            0 => None,
            1..=5 => Some(IpAddr::V4(Ipv4Addr::from(
                (v >> 8) as u32 % 7 * 0x0100_0001,
            ))),
            _ => Some(IpAddr::V6(Ipv6Addr::from(u128::from((v >> 8) % 5)))),
        };
        let mut m = TrafficMatrix::new();
        let mut pairs = BTreeMap::<_, (u64, u64)>::new();
        let mut hosts = BTreeMap::<_, HostTotals>::new();
        for _ in 0..5000 {
            let (s, d, size) = (host(next()), host(next()), next() % 1500);
            m.try_push(&arrival(size, s, d)).unwrap();
            let c = pairs.entry((s, d)).or_default();
            (c.0, c.1) = (c.0 + size, c.1 + 1);
            let t = hosts.entry(s).or_default();
            (t.sent_bytes, t.sent_packets) = (t.sent_bytes + size, t.sent_packets + 1);
            let t = hosts.entry(d).or_default();
            (t.received_bytes, t.received_packets) =
                (t.received_bytes + size, t.received_packets + 1);
        }
        let r = m.finish().unwrap();
        assert!(pairs.len() > 100 && hosts.len() > 10);
        assert_eq!(
            r.pair_totals().collect::<Vec<_>>(),
            pairs.into_iter().collect::<Vec<_>>()
        );
        assert_eq!(r.hosts, hosts.keys().copied().collect::<Vec<_>>());
        assert_eq!(r.host_totals, hosts.values().copied().collect::<Vec<_>>());
    }

    #[test]
    fn a_pair_past_max_pairs_is_refused_and_changes_nothing() {
        let h = |i: u8| Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i)));
        let mut m = TrafficMatrix::with_max_pairs(2);
        m.try_push(&arrival(10, h(1), h(2))).unwrap();
        m.try_push(&arrival(20, h(2), h(1))).unwrap();
        let e = m.try_push(&arrival(30, h(1), h(3))).unwrap_err();
        assert_eq!(e.limit, Some(Limit::Result));
        assert!(
            e.reason
                .starts_with("more than 2 host pairs: raise max_pairs"),
            "{e}"
        );
        m.try_push(&arrival(40, h(1), h(2))).unwrap();
        assert_eq!((m.len(), m.total_bytes, m.total_packets), (2, 70, 3));
        assert_eq!(m.pair(h(1), h(2)), (50, 2));
        // The refused packet's new host is not kept either.
        assert_eq!(m.finish().unwrap().hosts, [h(1), h(2)]);
    }
}
