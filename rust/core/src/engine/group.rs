//! Groupings: which group a packet belongs to, and the state kept per group.
//!
//! Every packet belongs to exactly one group of each grouping; packets lacking the field (no IP
//! header, no RoCEv2 header, ...) go to `GroupKey::None`. The aggregate grouping needs no key at
//! all and takes a path without hashing.

use super::backlog::{Backlog, KEYED_BATCH};
use super::envelope::Envelope;
use super::reorder::Bare;
use super::series::Series;
use super::{Arrival, BacklogRow, By, Closure, EnvelopeRow, GroupKey, GroupSummary, SeriesRow};
use crate::error::{Error, Limit, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::IpAddr;

impl By {
    /// Every grouping, in the order rows are reported.
    pub const EVERY: [By; 9] = [
        By::All,
        By::Src,
        By::Dst,
        By::Pair,
        By::Flow5,
        By::Flow4,
        By::Interface,
        By::Vlan,
        By::Qp,
    ];

    /// The grouping as one word, as Python and the command line name it ("all", "src", "flow",
    /// ...).
    pub fn name(self) -> &'static str {
        match self {
            By::All => "all",
            By::Src => "src",
            By::Dst => "dst",
            By::Pair => "pair",
            By::Flow5 => "flow",
            By::Flow4 => "flow4",
            By::Interface => "interface",
            By::Vlan => "vlan",
            By::Qp => "qp",
        }
    }

    /// The inverse of [`By::name`]; also accepts "flow5", "aggregate" and "if".
    pub fn parse(name: &str) -> Result<By> {
        let lower = name.trim().to_ascii_lowercase();
        let by = match lower.as_str() {
            "aggregate" => By::All,
            "flow5" => By::Flow5,
            "if" => By::Interface,
            other => match By::EVERY.iter().find(|by| by.name() == other) {
                Some(&by) => by,
                None => {
                    let names: Vec<&str> = By::EVERY.iter().map(|by| by.name()).collect();
                    return Err(Error::invalid(format!(
                        "unknown grouping {name:?}; expected one of {}",
                        names.join(", ")
                    )));
                }
            },
        };
        Ok(by)
    }

    /// Whether this grouping's keys come from packet headers. The aggregate and the interface
    /// need only a packet's time, size and interface: that is what lets a scan skip decoding,
    /// buffer lean arrivals, cut a file into time chunks and scan in-memory columns.
    pub fn reads_headers(self) -> bool {
        !matches!(self, By::All | By::Interface)
    }

    /// Position in [`By::EVERY`], the order of the output.
    pub(crate) fn rank(self) -> usize {
        By::EVERY
            .iter()
            .position(|&by| by == self)
            .unwrap_or(usize::MAX)
    }

    /// The group of a packet in this grouping. Flows need addresses and a protocol (5-tuple) or
    /// addresses (4-tuple); a missing port (ICMP, non-first fragment) counts as port 0.
    pub fn key(self, a: &Arrival) -> GroupKey {
        let h = &a.headers;
        let key = match self {
            By::All => Some(GroupKey::All),
            By::Src => h.src.map(GroupKey::Host),
            By::Dst => h.dst.map(GroupKey::Host),
            By::Pair => h.src.zip(h.dst).map(|(s, d)| GroupKey::Pair(s, d)),
            By::Flow5 => match (h.ip_proto, h.src, h.dst) {
                (Some(proto), Some(src), Some(dst)) => Some(GroupKey::Flow5 {
                    proto,
                    src,
                    dst,
                    sport: h.sport.unwrap_or(0),
                    dport: h.dport.unwrap_or(0),
                }),
                _ => None,
            },
            // The CNSM study's 4-tuple comes from the TCP ports: a packet without transport
            // ports (ICMP, IGMP, a later fragment) belongs to no such flow.
            By::Flow4 => match (h.src, h.dst, h.sport, h.dport) {
                (Some(src), Some(dst), Some(sport), Some(dport)) => Some(GroupKey::Flow4 {
                    src,
                    sport,
                    dst,
                    dport,
                }),
                _ => None,
            },
            By::Interface => Some(GroupKey::Interface(a.interface)),
            By::Vlan => h.vlan.map(GroupKey::Vlan),
            By::Qp => h
                .dst
                .zip(h.roce_qp)
                .map(|(dst, qp)| GroupKey::Qp { dst, qp }),
        };
        key.unwrap_or(GroupKey::None)
    }
}

impl GroupKey {
    /// A short text for tables: "10.0.0.1", "10.0.0.1>10.0.0.2", "tcp 10.0.0.1:5000>10.0.0.2:6000",
    /// "10.0.0.1:5000>10.0.0.2:6000", "if0", "vlan100", "10.0.0.2 qp 17", "all", "(none)".
    pub fn label(&self) -> String {
        match *self {
            GroupKey::All => "all".to_string(),
            GroupKey::None => "(none)".to_string(),
            GroupKey::Host(ip) => ip.to_string(),
            GroupKey::Pair(src, dst) => format!("{src}>{dst}"),
            GroupKey::Flow5 {
                proto,
                src,
                dst,
                sport,
                dport,
            } => format!(
                "{} {}>{}",
                proto_name(proto),
                endpoint(src, sport),
                endpoint(dst, dport)
            ),
            GroupKey::Flow4 {
                src,
                sport,
                dst,
                dport,
            } => {
                format!("{}>{}", endpoint(src, sport), endpoint(dst, dport))
            }
            GroupKey::Interface(i) => format!("if{i}"),
            GroupKey::Vlan(v) => format!("vlan{v}"),
            GroupKey::Qp { dst, qp } => format!("{dst} qp {qp}"),
        }
    }
}

fn endpoint(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

fn proto_name(proto: u8) -> String {
    match proto {
        1 => "icmp".to_string(),
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        58 => "icmpv6".to_string(),
        132 => "sctp".to_string(),
        other => format!("proto{other}"),
    }
}

/// Everything measured for one group. Each part is a pure function of the group's sorted packets,
/// so two adjacent time chunks can later be merged part by part.
#[derive(Debug, Clone)]
pub(crate) struct GroupState {
    envelope: Envelope,
    backlog: Backlog,
    series: Series,
    tally: Tally,
}

/// A group's packets and bytes, and the timestamps of its first and last packet.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tally {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    pub(crate) first_ns: i64,
    pub(crate) last_ns: i64,
}

impl Tally {
    #[inline]
    pub(crate) fn add(&mut self, ts: i64, size: u64) {
        if self.packets == 0 {
            self.first_ns = ts;
        }
        self.packets += 1;
        self.bytes = self.bytes.saturating_add(size);
        self.last_ns = ts;
    }

    /// [`Tally::add`] for consecutive packets, in order.
    #[inline]
    pub(crate) fn add_run(&mut self, run: &[Bare]) {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return;
        };
        if self.packets == 0 {
            self.first_ns = first.ts_ns;
        }
        self.packets += run.len() as u64;
        self.last_ns = last.ts_ns;
        for b in run {
            self.bytes = self.bytes.saturating_add(b.size);
        }
    }
}

/// What a new group is built from.
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    pub(crate) windows_ns: Vec<i64>,
    pub(crate) closure: Closure,
    pub(crate) rates_bps: Vec<u64>,
    pub(crate) bins_ns: Vec<i64>,
    /// The instant the bins are counted from; `None` until the first packet when that packet is
    /// the origin ([`super::BinOrigin::FirstPacket`]): the scanner sets it then, before any
    /// group is made but the aggregate, whose series places itself at the same packet.
    pub(crate) bin_origin_ns: Option<i64>,
}

impl GroupState {
    /// `keyed`: one group among many (see [`KEYED_BATCH`]).
    fn new(m: &Metrics, keyed: bool) -> Self {
        GroupState {
            envelope: Envelope::new(&m.windows_ns, m.closure),
            backlog: if keyed {
                Backlog::with_batch(&m.rates_bps, KEYED_BATCH)
            } else {
                Backlog::new(&m.rates_bps)
            },
            series: Series::new(&m.bins_ns, m.bin_origin_ns),
            tally: Tally::default(),
        }
    }

    fn push(&mut self, ts: i64, size: u64) {
        self.tally.add(ts, size);
        self.envelope.push(ts, size);
        self.backlog.push(ts, size);
        self.series.push(ts, size);
    }

    fn push_run(&mut self, run: &[Bare]) {
        self.tally.add_run(run);
        let packets = run.iter().map(|b| (b.ts_ns, b.size));
        self.envelope.push_run(packets.clone());
        // A share of a scan split among threads may have no rate (the worker of a split by
        // function): then each push would look and do nothing.
        if !self.backlog.is_empty() {
            for b in run {
                self.backlog.push(b.ts_ns, b.size);
            }
        }
        self.series.push_run(packets);
    }

    pub(crate) fn packets(&self) -> u64 {
        self.tally.packets
    }

    pub(crate) fn exact_backlog(&self) -> impl Iterator<Item = (u64, u128)> + '_ {
        self.backlog.exact()
    }

    fn rows(&mut self, by: By, group: GroupKey, out: &mut Rows) -> Result<()> {
        self.envelope.rows(by, group, &mut out.envelope)?;
        self.backlog.rows(by, group, &mut out.backlog);
        self.series.rows(by, group, &mut out.series);
        out.groups.push(GroupSummary {
            by,
            group,
            packets: self.tally.packets,
            bytes: self.tally.bytes,
            first_ns: self.tally.first_ns,
            last_ns: self.tally.last_ns,
        });
        Ok(())
    }
}

/// Output rows being collected.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub(crate) envelope: Vec<EnvelopeRow>,
    pub(crate) backlog: Vec<BacklogRow>,
    pub(crate) series: Vec<SeriesRow>,
    pub(crate) groups: Vec<GroupSummary>,
}

/// FxHash (as in rustc) with a final mix: group keys are short and hashed once per packet per
/// grouping, where SipHash would dominate the cost. The number of groups is capped, which bounds
/// the harm of deliberately colliding keys.
///
/// A multiply carries a word's bits only upwards, and the table takes its bucket from a hash's
/// low bits: the low bits of FxHash's last product see only the low bits of the last word, which
/// for an IPv4 address (first octet lowest) or an IPv6 one (last octets highest) are the octets
/// that hosts of one network share. `finish` folds the high half down, multiplies, and folds
/// again, so that every bit of the key reaches the low bits.
#[derive(Default)]
struct FxHasher {
    hash: u64,
}

impl FxHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut word = [0u8; 8];
        let rest = chunks.remainder();
        word[..rest.len()].copy_from_slice(rest);
        if !rest.is_empty() {
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        let h = (self.hash ^ (self.hash >> 32)).wrapping_mul(Self::K);
        h ^ (h >> 32)
    }
}

/// One grouping of the scan: its groups, created as packets reveal them.
#[derive(Debug)]
pub(crate) enum Grouping {
    /// The aggregate: one group, no key to compute or look up.
    All(Box<GroupState>),
    Keyed(Slots<GroupState>),
}

/// The groups of one keyed grouping, in order of appearance, found by key: the sequential
/// scanner's (`S` = [`GroupState`]) and a time chunk's (see `engine::chunk`).
#[derive(Debug)]
pub(crate) struct Slots<S> {
    pub(crate) by: By,
    index: HashMap<GroupKey, usize, BuildHasherDefault<FxHasher>>,
    pub(crate) keys: Vec<GroupKey>,
    pub(crate) states: Vec<S>,
    /// The group of the previous packet: consecutive packets often share a flow or host.
    last: Option<(GroupKey, usize)>,
    max_groups: usize,
    /// Packets since the groups' rings were last trimmed (see [`Slots::trim_now_and_then`]).
    since_trim: usize,
}

impl<S> Slots<S> {
    pub(crate) fn new(by: By, max_groups: usize) -> Self {
        Slots {
            by,
            index: HashMap::default(),
            keys: Vec::new(),
            states: Vec::new(),
            last: None,
            max_groups,
            since_trim: 0,
        }
    }

    /// The state of group `key`, made by `make` if the group is new.
    #[inline]
    pub(crate) fn get(&mut self, key: GroupKey, make: impl FnOnce() -> S) -> Result<&mut S> {
        let slot = match self.last {
            Some((last, slot)) if last == key => slot,
            _ => {
                let slot = match self.index.get(&key) {
                    Some(&slot) => slot,
                    None => {
                        if self.states.len() >= self.max_groups {
                            return Err(Error::limit_exceeded(
                                Limit::Result,
                                format!(
                                    "more than {} group{} when grouping by {}; raise \
                                     max_groups or choose a coarser grouping",
                                    self.max_groups,
                                    if self.max_groups == 1 { "" } else { "s" },
                                    self.by.name()
                                ),
                            ));
                        }
                        self.states.push(make());
                        self.keys.push(key);
                        let slot = self.states.len() - 1;
                        self.index.insert(key, slot);
                        slot
                    }
                };
                self.last = Some((key, slot));
                slot
            }
        };
        self.states
            .get_mut(slot)
            .ok_or_else(|| Error::invalid("group index out of step with its states"))
    }
}

/// Packets between two trims of a grouping's rings, at the least: a trim visits every group.
#[cfg(not(fuzzing))]
const TRIM_EVERY: usize = 1 << 16;
/// In fuzz builds, often enough for inputs of a few thousand packets (at most 256 KiB) to trim
/// rings in every state, a time chunk's open head among them; not a power of two, so that trims
/// also meet rings that have just grown (a ring's slots double from 16).
#[cfg(fuzzing)]
const TRIM_EVERY: usize = 24;

/// A group that keeps its packets in an envelope's ring: the sequential scanner's and a time
/// chunk's ([`Slots::trim_now_and_then`] serves both).
pub(crate) trait Ringed {
    fn envelope_mut(&mut self) -> &mut Envelope;
}

impl Ringed for GroupState {
    fn envelope_mut(&mut self) -> &mut Envelope {
        &mut self.envelope
    }
}

impl<S: Ringed> Slots<S> {
    /// After a packet at `now` (packets come in order): now and then, every group lets go of
    /// the packets no later window can hold ([`Envelope::trim`]), so that the groups hold the
    /// packets within the largest window of the latest packet, not every group's busiest
    /// stretch. A trim visits every group, so it comes once per as many packets as there are
    /// groups (and at least [`TRIM_EVERY`]): a few ns a packet.
    #[inline]
    pub(crate) fn trim_now_and_then(&mut self, now: i64) {
        self.since_trim += 1;
        if self.since_trim >= self.states.len().max(TRIM_EVERY) {
            self.trim(now);
        }
    }

    #[cold]
    fn trim(&mut self, now: i64) {
        self.since_trim = 0;
        for state in &mut self.states {
            state.envelope_mut().trim(now);
        }
    }
}

impl std::fmt::Debug for FxHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FxHasher")
    }
}

impl Grouping {
    pub(crate) fn new(by: By, metrics: &Metrics, max_groups: usize) -> Self {
        match by {
            By::All => Grouping::All(Box::new(GroupState::new(metrics, false))),
            _ => Grouping::Keyed(Slots::new(by, max_groups)),
        }
    }

    pub(crate) fn by(&self) -> By {
        match self {
            Grouping::All(_) => By::All,
            Grouping::Keyed(k) => k.by,
        }
    }

    /// Add a packet (in timestamp order) to its group, creating the group if it is new; `key`
    /// gives the packet's key (called only when the grouping has keys).
    #[inline]
    pub(crate) fn push_key(
        &mut self,
        key: impl FnOnce() -> GroupKey,
        ts_ns: i64,
        size: u64,
        metrics: &Metrics,
    ) -> Result<()> {
        match self {
            Grouping::All(state) => {
                state.push(ts_ns, size);
                state.envelope.check()
            }
            Grouping::Keyed(k) => {
                let state = k.get(key(), || GroupState::new(metrics, true))?;
                state.push(ts_ns, size);
                state.envelope.check()?;
                k.trim_now_and_then(ts_ns);
                Ok(())
            }
        }
    }

    /// Consecutive packets of the aggregate (only the aggregate is buffered bare).
    #[inline]
    pub(crate) fn push_run(&mut self, run: &[Bare], metrics: &Metrics) -> Result<()> {
        match self {
            Grouping::All(state) => {
                state.push_run(run);
                state.envelope.check()?;
            }
            Grouping::Keyed(_) => {
                for b in run {
                    self.push_key(|| GroupKey::All, b.ts_ns, b.size, metrics)?;
                }
            }
        }
        Ok(())
    }

    /// Append this grouping's rows, groups sorted by key, each group shown to `visit` first.
    /// The aggregate reports one row set even for an empty trace only through its summary; the
    /// scanner drops it when no packet came.
    pub(crate) fn rows(
        self,
        out: &mut Rows,
        mut visit: impl FnMut(GroupKey, &GroupState),
    ) -> Result<()> {
        match self {
            Grouping::All(mut state) => {
                visit(GroupKey::All, &state);
                if state.tally.packets > 0 {
                    state.rows(By::All, GroupKey::All, out)?;
                }
            }
            Grouping::Keyed(k) => {
                let by = k.by;
                // (key, index) pairs sorted, not the states: a (key, state) pair is about
                // 450 bytes, and the sort's moves of them cost 13 % of a scan by pair of
                // 100,000 groups (callgrind). Each state is still dropped once its rows are out.
                let mut order: Vec<(GroupKey, usize)> = k.keys.into_iter().zip(0..).collect();
                // Keys are distinct: an unstable sort gives the one order.
                order.sort_unstable();
                let mut states: Vec<Option<GroupState>> = k.states.into_iter().map(Some).collect();
                for (key, i) in order {
                    if let Some(mut state) = states.get_mut(i).and_then(Option::take) {
                        visit(key, &state);
                        state.rows(by, key, out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn groups_that_fell_silent_hold_no_packets() {
        // 40 hosts, each a burst of 5,000 packets 1 ns apart and then silence, one after the
        // other 2 s apart: the groups' rings must hold the last burst (and small rings for the
        // others), not all 200,000 packets. Before the trims they held 40 rings of 8,192 slots.
        let metrics = Metrics {
            windows_ns: vec![1_000, 1_000_000_000],
            closure: Closure::HalfOpen,
            rates_bps: vec![],
            bins_ns: vec![],
            bin_origin_ns: Some(0),
        };
        let mut g = Grouping::new(By::Src, &metrics, 1_000);
        for host in 0..40u32 {
            let key = GroupKey::Host(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + host)));
            for i in 0..5_000i64 {
                g.push_key(|| key, i64::from(host) * 2_000_000_000 + i, 100, &metrics)
                    .unwrap();
            }
        }
        let Grouping::Keyed(k) = &g else {
            panic!("a grouping by host has keys")
        };
        let slots: Vec<usize> = k.states.iter().map(|s| s.envelope.held_slots()).collect();
        let held: usize = slots.iter().sum();
        // The last trim came at packet 196,608: hosts 0-38 idle (64 slots each), 39 busy.
        assert!(held <= 39 * 64 + 8_192, "{held} slots: {slots:?}");
        let mut rows = Rows::default();
        g.rows(&mut rows, |_, _| {}).unwrap();
        assert_eq!(rows.envelope.len(), 80);
        for r in &rows.envelope {
            let want = if r.window_ns == 1_000 { 1_000 } else { 5_000 };
            assert_eq!((r.packets_in_window, r.bytes), (want, want * 100), "{r:?}");
        }
    }

    /// How many of a table's 2^16 buckets the keys start in: the standard library's table takes
    /// a hash's low bits as the bucket, so keys that agree there make one long probe run, and
    /// every look-up compares keys along it.
    fn buckets_used(keys: impl Iterator<Item = GroupKey>) -> usize {
        let build = BuildHasherDefault::<FxHasher>::default();
        keys.map(|k| build.hash_one(k) & 0xffff)
            .collect::<HashSet<_>>()
            .len()
    }

    /// Real groups differ in the low octets of their addresses, or in one port: 10.0.0.0/16 had
    /// every host in one bucket (a scan by src of 100,000 hosts took 5 µs a packet, 54 % of it
    /// comparing keys, against 0.7 by pair). A random hash fills about 63 % of the buckets.
    #[test]
    fn keys_that_differ_only_in_high_bytes_spread_over_the_buckets() {
        let n = 1u32 << 16;
        let v4 = |i: u32| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | i));
        let v6 = |i: u32| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16));
        let cases: Vec<(&str, Vec<GroupKey>)> = vec![
            (
                "ipv4 hosts",
                (0..n).map(|i| GroupKey::Host(v4(i))).collect(),
            ),
            (
                "ipv6 hosts",
                (0..n).map(|i| GroupKey::Host(v6(i))).collect(),
            ),
            (
                "pairs",
                (0..n).map(|i| GroupKey::Pair(v4(1), v4(i))).collect(),
            ),
            (
                "flows by source port",
                (0..n)
                    .map(|i| GroupKey::Flow5 {
                        proto: 6,
                        src: v6(1),
                        dst: v6(2),
                        sport: i as u16,
                        dport: 29500,
                    })
                    .collect(),
            ),
            (
                "queue pairs",
                (0..n)
                    .map(|i| GroupKey::Qp {
                        dst: v4(1),
                        qp: i << 8,
                    })
                    .collect(),
            ),
        ];
        let crowded: Vec<String> = cases
            .into_iter()
            .map(|(what, keys)| (what, buckets_used(keys.into_iter())))
            .filter(|&(_, used)| used <= (n as usize) / 2)
            .map(|(what, used)| format!("{what}: {used}"))
            .collect();
        assert!(
            crowded.is_empty(),
            "{n} keys start in only so many of 65536 buckets: {crowded:?}"
        );
    }
}
