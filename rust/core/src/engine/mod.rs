//! The one-pass engine: a bounded reorder buffer, then per group an envelope E(τ) for many τ, a
//! Lindley queue for many rates, and binned series for many bin widths. All arithmetic on
//! timestamps and byte counts is exact integer arithmetic.
//! Definitions: docs/metrics.md.
//!
//! The data path, top to bottom:
//! - [`scanner`]: validates the configuration and drives everything below;
//! - [`reorder`]: the bounded reorder buffer that turns "almost sorted" input into sorted input;
//! - [`group`]: group keys and the per-grouping maps from key to per-group state;
//! - [`envelope`], [`backlog`], [`series`]: the three streaming metrics of one group;
//! - [`chunk`]: time chunks scanned apart whose states merge exactly into the sequential result;
//! - [`reference`](mod@reference): brute-force oracles (quadratic, for tests and benchmarks only).

use crate::wire::Headers;

mod backlog;
pub mod chunk;
mod envelope;
mod group;
// Not API: the brute-force oracles the tests and fuzz targets check the engine against.
#[doc(hidden)]
pub mod reference;
pub(crate) mod reorder;
mod scanner;
mod search;
mod series;

pub use backlog::{ratio_to_f64, BACKLOG_SCALE};
pub use scanner::{ExactBacklog, Scanner};

/// Window boundary convention for E(τ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Closure {
    /// `[s, s+τ)`: the default.
    #[default]
    HalfOpen,
    /// `[s, s+τ]`.
    Closed,
}

/// What to do with a packet older than the reorder horizon allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatePolicy {
    /// Stop with an [`crate::ErrorKind::OutOfOrder`] error: the default.
    #[default]
    Error,
    /// Drop it and count it in the summary.
    Drop,
}

/// A grouping of packets; every grouping in a scan is computed in the same pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum By {
    /// Every packet in one group (the aggregate).
    All,
    /// The outermost IP header's source host.
    Src,
    /// The outermost IP header's destination host.
    Dst,
    /// Ordered (src, dst) host pair.
    Pair,
    /// Directional 5-tuple (proto, src, dst, sport, dport).
    Flow5,
    /// Directional 4-tuple (src, sport, dst, dport), as counted by the CNSM study.
    Flow4,
    /// The capture's interface; captures read together are numbered one after another.
    Interface,
    /// The outer 802.1Q/802.1ad tag.
    Vlan,
    /// RoCEv2 destination QP (with destination host).
    Qp,
}

/// One packet as the engine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Arrival {
    /// When it arrived, ns since the epoch.
    pub ts_ns: i64,
    /// Bytes counted for this packet (wire length by default; chosen by the pipeline).
    pub size: u64,
    /// Its interface (numbered among all captures read together).
    pub interface: u32,
    /// The header fields groupings and filters read ([`Headers::default`] when none are).
    pub headers: Headers,
}

impl Arrival {
    /// An arrival of `size` bytes at `ts_ns`, on interface 0 and without headers; the
    /// `with_…` builders set the rest.
    pub fn new(ts_ns: i64, size: u64) -> Self {
        Arrival {
            ts_ns,
            size,
            interface: 0,
            headers: Headers::default(),
        }
    }
}

crate::builders!([] Arrival {
    interface: u32 => with_interface,
    headers: Headers => with_headers,
});

/// The instant the bins of the series are counted from: bin k of width Δ is
/// `[o + kΔ, o + (k+1)Δ)`, k = ⌊(t − o)/Δ⌋ (k may be negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOrigin {
    /// This instant, in ns since the epoch; `At(0)`, the default, aligns every file's bins.
    At(i64),
    /// The first packet the scan counts (after the filter and time range, and put in timestamp
    /// order): the same origin for every group, as pandas' `resample(origin="start")` takes the
    /// first row. A scan with it is never cut into time chunks (a chunk would not know it).
    FirstPacket,
}

impl Default for BinOrigin {
    fn default() -> Self {
        BinOrigin::At(0)
    }
}

/// What a scan measures and how it reads: every metric for every window, rate and bin width
/// of every grouping, in one pass. [`ScanConfig::default`] measures nothing but the groups'
/// totals; name the windows, rates and bins wanted.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScanConfig {
    /// Window lengths τ in ns (> 0), any order, duplicates removed.
    pub windows_ns: Vec<i64>,
    /// Whether a window holds its end instant ([`Closure::HalfOpen`] by default).
    pub closure: Closure,
    /// Server rates r in bit/s (> 0).
    pub rates_bps: Vec<u64>,
    /// Bin widths Δ in ns (> 0); bins start at `bin_origin` + kΔ.
    pub bins_ns: Vec<i64>,
    /// Where the bins are counted from (the epoch by default).
    pub bin_origin: BinOrigin,
    /// The groupings, each computed for every metric (`[By::All]` by default; empty means the
    /// same).
    pub by: Vec<By>,
    /// Packets may arrive up to this many ns earlier than the latest seen so far (≥ 0; 0 means
    /// sorted input, equal timestamps allowed). A packet more than this much earlier is late.
    pub reorder_horizon_ns: i64,
    /// What a late packet does: stop the scan (the default) or be dropped and counted.
    pub late: LatePolicy,
    /// Most groups per grouping before a LimitExceeded error.
    pub max_groups: usize,
    /// The packets read: those outside are skipped and counted by the pipeline that reads the
    /// captures ([`crate::pipeline::scan`]), before they reach a scanner; a [`Scanner`] fed
    /// by hand takes every arrival it is given.
    pub time_range: crate::TimeRange,
    /// Only the packets whose headers pass this filter are read ([`crate::Filter`]); the others
    /// are skipped and counted by the pipeline, as packets outside `time_range` are.
    pub filter: Option<crate::Filter>,
    /// One filter per capture, in the order the captures are given, each read through its own
    /// (and through `filter`); empty for none. For one capture per host, where a packet between
    /// two captured hosts is in both files: `src host H` for H's file counts each packet once.
    pub file_filters: Vec<Option<crate::Filter>>,
}

crate::builders!([] ScanConfig {
    windows_ns: Vec<i64> => with_windows_ns,
    closure: Closure => with_closure,
    rates_bps: Vec<u64> => with_rates_bps,
    bins_ns: Vec<i64> => with_bins_ns,
    bin_origin: BinOrigin => with_bin_origin,
    by: Vec<By> => with_by,
    reorder_horizon_ns: i64 => with_reorder_horizon_ns,
    late: LatePolicy => with_late,
    max_groups: usize => with_max_groups,
    time_range: crate::TimeRange => with_time_range,
    filter: Option<crate::Filter> => with_filter,
    file_filters: Vec<Option<crate::Filter>> => with_file_filters,
});

impl ScanConfig {
    /// Whether any grouping of this scan reads packet headers ([`By::reads_headers`]).
    pub fn reads_headers(&self) -> bool {
        self.by.iter().any(|b| b.reads_headers())
    }

    /// Whether bins are counted from the first packet: a scan that time chunks cannot make, as
    /// only the first chunk would see that packet.
    pub fn bins_from_first_packet(&self) -> bool {
        self.bin_origin == BinOrigin::FirstPacket && !self.bins_ns.is_empty()
    }

    /// Whether some packets are chosen by their headers (a filter for all captures or for one).
    pub fn has_filter(&self) -> bool {
        self.filter.is_some() || self.file_filters.iter().any(Option::is_some)
    }

    /// The filter each of `captures` captures is read through: [`ScanConfig::filter`] together
    /// with its own from [`ScanConfig::file_filters`]. An error if there are file filters, but
    /// not one per capture.
    pub fn filter_per_capture(
        &self,
        captures: usize,
    ) -> crate::error::Result<Vec<Option<crate::Filter>>> {
        crate::filter::per_capture(self.filter.as_ref(), &self.file_filters, captures)
    }
}

/// Key of one group within a grouping. `None` marks packets that lack the field (e.g. non-IP
/// packets when grouping by host), so every packet belongs to exactly one group of each grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupKey {
    /// The one group of [`By::All`].
    All,
    /// The packets that lack the grouping's field.
    None,
    /// A host ([`By::Src`], [`By::Dst`]).
    Host(std::net::IpAddr),
    /// A (source, destination) pair ([`By::Pair`]).
    Pair(std::net::IpAddr, std::net::IpAddr),
    /// A directional 5-tuple ([`By::Flow5`]); ports are 0 where there are none.
    Flow5 {
        /// IP protocol number (6 TCP, 17 UDP, ...).
        proto: u8,
        /// Source host.
        src: std::net::IpAddr,
        /// Destination host.
        dst: std::net::IpAddr,
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
    /// A directional 4-tuple ([`By::Flow4`]): packets with both transport ports only.
    Flow4 {
        /// Source host.
        src: std::net::IpAddr,
        /// Source port.
        sport: u16,
        /// Destination host.
        dst: std::net::IpAddr,
        /// Destination port.
        dport: u16,
    },
    /// An interface number ([`By::Interface`]).
    Interface(u32),
    /// A VLAN id ([`By::Vlan`]).
    Vlan(u16),
    /// A RoCEv2 queue pair ([`By::Qp`]).
    Qp {
        /// Destination host.
        dst: std::net::IpAddr,
        /// Destination QP number.
        qp: u32,
    },
}

/// E(τ) of one group for one window length.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvelopeRow {
    /// The grouping.
    pub by: By,
    /// The group within it.
    pub group: GroupKey,
    /// The window length τ, ns.
    pub window_ns: i64,
    /// E(τ): most bytes in any window of length τ.
    pub bytes: u64,
    /// Packets in the maximising window that starts earliest (among windows with `bytes` bytes),
    /// counting every packet of that window, zero-size ones included.
    pub packets_in_window: u64,
    /// Timestamp of the first packet of that window.
    pub start_ns: i64,
    /// E_pkts(τ): most packets in any window of length τ (possibly another window).
    pub max_packets: u64,
}

/// B_max(r) of one group for one server rate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BacklogRow {
    /// The grouping.
    pub by: By,
    /// The group within it.
    pub group: GroupKey,
    /// The server rate r, bit/s.
    pub rate_bps: u64,
    /// B_max(r) in bytes: exact rational value rounded to the nearest f64.
    pub bmax_bytes: f64,
    /// Time of the packet at which the backlog peaked.
    pub peak_ns: i64,
    /// Longest busy period (queue non-empty), in ns, and when it started: from the first packet that
    /// finds the queue empty and leaves it non-empty, to the exact instant the queue drains,
    /// rounded up to whole ns (`t_last − t_start + ⌈Q_last/r⌉`). Ties keep the earlier period;
    /// 0 ns at the first packet when every packet has size 0.
    pub longest_busy_ns: i64,
    /// When that busy period started (its first packet's time).
    pub longest_busy_start_ns: i64,
}

/// One non-empty bin of one group's series.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SeriesRow {
    /// The grouping.
    pub by: By,
    /// The group within it.
    pub group: GroupKey,
    /// The bin width Δ, ns.
    pub bin_ns: i64,
    /// o + kΔ with k = ⌊(t − o)/Δ⌋ for the origin o ([`ScanConfig::bin_origin`]); the one bin
    /// that would start before i64::MIN reports i64::MIN.
    pub start_ns: i64,
    /// Bytes of the group's packets in the bin.
    pub bytes: u64,
    /// The group's packets in the bin.
    pub packets: u64,
}

/// One group's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupSummary {
    /// The grouping.
    pub by: By,
    /// The group within it.
    pub group: GroupKey,
    /// Packets counted in the group.
    pub packets: u64,
    /// Their bytes (as the scan's size counts them).
    pub bytes: u64,
    /// The group's earliest packet, ns.
    pub first_ns: i64,
    /// The group's latest packet, ns.
    pub last_ns: i64,
}

/// What the reorder buffer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReorderStats {
    /// Packets that arrived with a timestamp earlier than one already seen and were put back in
    /// order (late packets are not counted here, only in `dropped_late`).
    pub reordered: u64,
    /// Packets dropped because they were later than the horizon (LatePolicy::Drop).
    pub dropped_late: u64,
    /// Largest step backwards seen, ns (late packets included; saturates at i64::MAX).
    pub max_lateness_ns: i64,
}

/// What a scan measured: a row per group and window, rate or non-empty bin, the groups'
/// totals, and what the reorder buffer did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ScanOutput {
    /// E(τ): a row per group and window.
    pub envelope: Vec<EnvelopeRow>,
    /// B_max(r): a row per group and rate.
    pub backlog: Vec<BacklogRow>,
    /// Only non-empty bins.
    pub series: Vec<SeriesRow>,
    /// A row per group of every grouping.
    pub groups: Vec<GroupSummary>,
    /// What the reorder buffer did.
    pub reorder: ReorderStats,
}
