//! The scanner: checks the configuration, then feeds every packet through the reorder buffer to
//! every grouping, in one pass.

use super::group::{Grouping, Metrics, Rows};
use super::reorder::{Bare, Buffered, Release};
use super::{Arrival, BinOrigin, By, Closure, GroupKey, LatePolicy, ScanConfig, ScanOutput};
use crate::error::{Error, Result};

impl ScanConfig {
    /// Reorder horizon used when the caller gives none: 10 ms covers interfaces merged by a capture
    /// tool and multi-queue NICs without holding many packets.
    pub const DEFAULT_REORDER_HORIZON_NS: i64 = 10_000_000;
    /// Groups per grouping used when the caller gives no limit, and flows of
    /// [`crate::analysis::FlowOptions`]: the round number the docs and Python state (Python takes
    /// it from here), not 2^20, which was 5% more under the same name.
    pub const DEFAULT_MAX_GROUPS: usize = 1_000_000;
}

impl Default for ScanConfig {
    /// No metric, aggregate only, default horizon and group limit, late packets are errors.
    fn default() -> Self {
        ScanConfig {
            windows_ns: Vec::new(),
            closure: Closure::HalfOpen,
            rates_bps: Vec::new(),
            bins_ns: Vec::new(),
            bin_origin: BinOrigin::default(),
            by: vec![By::All],
            reorder_horizon_ns: Self::DEFAULT_REORDER_HORIZON_NS,
            late: LatePolicy::Error,
            max_groups: Self::DEFAULT_MAX_GROUPS,
            time_range: crate::TimeRange::ALL,
            filter: None,
            file_filters: Vec::new(),
        }
    }
}

/// B_max(r) of one group exactly, in bytes × [`super::BACKLOG_SCALE`] (bit·ns/s).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExactBacklog {
    /// The grouping the group belongs to.
    pub by: By,
    /// The group, as in the rows of [`ScanOutput`].
    pub group: GroupKey,
    /// The server rate r, bit/s.
    pub rate_bps: u64,
    /// B_max(r) × [`super::BACKLOG_SCALE`]: an integer, so exact (the rows' `bmax_bytes` is
    /// this divided, rounded to the nearest f64).
    pub bmax_scaled: u128,
}

/// The one-pass engine fed by hand: arrivals in (almost) timestamp order, one [`ScanOutput`] at
/// the end. Windows and bins are i64 ns, rates u64 bit/s, sizes u64 bytes.
///
/// ```
/// use burstcore::engine::{ScanConfig, Scanner};
///
/// let mut s = Scanner::new(
///     ScanConfig::default()
///         .with_windows_ns(vec![1_000])           // τ = 1 µs
///         .with_rates_bps(vec![8_000_000_000]),   // r = 8 Gbit/s = 1 byte/ns
/// )?;
/// for (ts_ns, size) in [(0, 1000), (500, 1000), (1_000, 1000)] {
///     s.push_lean(ts_ns, size, 0)?; // interface 0
/// }
/// let out = s.finish()?;
/// // [0, 1000) holds the first two packets; [1000, 2000) only the third.
/// assert_eq!(out.envelope[0].bytes, 2000);
/// // 1000 B at 0; by 500 ns 500 B served, 1000 B more: 1500 B; at 1000 ns, 1000 + 1000 B.
/// assert_eq!(out.backlog[0].bmax_bytes, 2000.0);
/// # Ok::<(), burstcore::Error>(())
/// ```
pub struct Scanner {
    reorder: Buffered,
    metrics: Metrics,
    groupings: Vec<Grouping>,
}

impl ScanConfig {
    /// The configuration checked (every length and rate positive, a horizon ≥ 0, a group limit)
    /// and put in the one form the engine works with: windows, rates and bins sorted without
    /// repeats (the largest window, last, decides what each group's ring keeps), groupings in
    /// the order of [`By::EVERY`] and the aggregate when none is given. The sequential and the
    /// chunk scanners both start from it, so they refuse and order alike.
    pub(crate) fn normalized(self) -> Result<Self> {
        let ScanConfig {
            mut windows_ns,
            closure,
            mut rates_bps,
            mut bins_ns,
            bin_origin,
            mut by,
            reorder_horizon_ns,
            late,
            max_groups,
            time_range,
            filter,
            file_filters,
        } = self;
        time_range.check()?;
        if let Some(bad) = windows_ns.iter().find(|&&w| w <= 0) {
            return Err(Error::invalid(format!(
                "window length must be > 0 ns, got {bad} ns"
            )));
        }
        if rates_bps.contains(&0) {
            return Err(Error::invalid("server rate must be > 0 bit/s, got 0"));
        }
        if let Some(bad) = bins_ns.iter().find(|&&b| b <= 0) {
            return Err(Error::invalid(format!(
                "bin width must be > 0 ns, got {bad} ns"
            )));
        }
        if reorder_horizon_ns < 0 {
            return Err(Error::invalid(format!(
                "reorder horizon must be ≥ 0 ns, got {reorder_horizon_ns} ns"
            )));
        }
        if max_groups == 0 {
            return Err(Error::invalid("max_groups must be at least 1"));
        }
        windows_ns.sort_unstable();
        windows_ns.dedup();
        rates_bps.sort_unstable();
        rates_bps.dedup();
        bins_ns.sort_unstable();
        bins_ns.dedup();
        if by.is_empty() {
            by.push(By::All);
        }
        by.sort_by_key(|b| b.rank());
        by.dedup();
        Ok(ScanConfig {
            windows_ns,
            closure,
            rates_bps,
            bins_ns,
            bin_origin,
            by,
            reorder_horizon_ns,
            late,
            max_groups,
            time_range,
            filter,
            file_filters,
        })
    }
}

/// The metrics' state is large (a ring of packets per group and window): Debug names what the
/// scanner groups by, not every held packet.
impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let by: Vec<By> = self.groupings.iter().map(Grouping::by).collect();
        f.debug_struct("Scanner")
            .field("by", &by)
            .finish_non_exhaustive()
    }
}

impl Scanner {
    /// A scanner for `config`, checked first: an [`crate::ErrorKind::InvalidArgument`] error
    /// for a window, rate or bin that is not > 0, a negative horizon, `max_groups` 0, or a time
    /// range that ends before it starts.
    pub fn new(config: ScanConfig) -> Result<Self> {
        let ScanConfig {
            windows_ns,
            closure,
            rates_bps,
            bins_ns,
            bin_origin,
            by,
            reorder_horizon_ns,
            late,
            max_groups,
            // Applied by the pipeline that reads the packets, before they reach a scanner.
            time_range: _,
            filter: _,
            file_filters: _,
        } = config.normalized()?;
        let metrics = Metrics {
            windows_ns,
            closure,
            rates_bps,
            bins_ns,
            bin_origin_ns: match bin_origin {
                BinOrigin::At(o) => Some(o),
                BinOrigin::FirstPacket => None,
            },
        };
        let groupings = by
            .iter()
            .map(|&b| Grouping::new(b, &metrics, max_groups))
            .collect();
        let reorder = Buffered::new(&by, reorder_horizon_ns, late);
        Ok(Scanner {
            reorder,
            metrics,
            groupings,
        })
    }

    /// Feed one packet (any order within the reorder horizon).
    #[inline]
    pub fn push(&mut self, arrival: &Arrival) -> Result<()> {
        let Scanner {
            reorder,
            metrics,
            groupings,
        } = self;
        reorder.push(arrival, &mut Feed { groupings, metrics })
    }

    /// [`Scanner::push`] for a packet known only by timestamp, size and interface: what scans
    /// that group by nothing else need. Grouping by a header field sees it as lacking the field.
    #[inline]
    pub fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        let Scanner {
            reorder,
            metrics,
            groupings,
        } = self;
        reorder.push_lean(ts_ns, size, interface, &mut Feed { groupings, metrics })
    }

    /// Packets already put in order by a reorder buffer elsewhere (a parallel scan's reading
    /// thread's, for the aggregate alone: [`super::reorder::Buffered::new`] with the same
    /// horizon and policy), consecutive: what this scanner's own buffer would release as a run.
    /// Its own buffer then stays empty, and its reorder statistics with it.
    #[inline]
    pub(crate) fn push_ordered(&mut self, run: &[Bare]) -> Result<()> {
        let Scanner {
            metrics, groupings, ..
        } = self;
        Feed { groupings, metrics }.release_run(run)
    }

    /// A packet already put in order by a reorder buffer elsewhere (a parallel scan's reading
    /// thread's, built by [`super::reorder::Buffered::new`] for the same groupings, horizon and
    /// policy), with its key in each grouping: what [`Scanner::push`] does once its own buffer
    /// releases the packet. This scanner's own buffer then stays empty, and its reorder
    /// statistics with it.
    #[inline]
    pub(crate) fn push_released(
        &mut self,
        ts_ns: i64,
        size: u64,
        key: impl Fn(By) -> GroupKey,
    ) -> Result<()> {
        let Scanner {
            metrics, groupings, ..
        } = self;
        Feed { groupings, metrics }.release(ts_ns, size, key)
    }

    /// Whether a grouping of this scan reads packet headers (else it reads only a packet's
    /// timestamp, size and interface, and [`Scanner::push_lean`] serves).
    pub(crate) fn reads_headers(&self) -> bool {
        self.groupings.iter().any(|g| g.by().reads_headers())
    }

    /// Flush the reorder buffer and return all rows, sorted by (by, group, window/rate/bin).
    /// Groupings come in the order of [`By::EVERY`], groups in key order; an empty trace gives no
    /// rows at all.
    pub fn finish(self) -> Result<ScanOutput> {
        self.finish_exact().map(|(out, _)| out)
    }

    /// [`Scanner::finish`], plus B_max of every group and rate as an exact integer.
    pub fn finish_exact(mut self) -> Result<(ScanOutput, Vec<ExactBacklog>)> {
        {
            let Scanner {
                reorder,
                metrics,
                groupings,
            } = &mut self;
            reorder.flush(&mut Feed { groupings, metrics })?;
        }
        let mut exact = Vec::new();
        let mut rows = Rows::default();
        for grouping in self.groupings {
            let by = grouping.by();
            grouping.rows(&mut rows, |group, state| {
                if state.packets() > 0 {
                    exact.extend(state.exact_backlog().map(|(rate_bps, bmax_scaled)| {
                        ExactBacklog {
                            by,
                            group,
                            rate_bps,
                            bmax_scaled,
                        }
                    }));
                }
            })?;
        }
        let out = ScanOutput {
            envelope: rows.envelope,
            backlog: rows.backlog,
            series: rows.series,
            groups: rows.groups,
            reorder: self.reorder.stats().clone(),
        };
        Ok((out, exact))
    }
}

/// The groupings of a scan, as the reorder buffer's destination.
struct Feed<'a> {
    groupings: &'a mut [Grouping],
    metrics: &'a mut Metrics,
}

impl Feed<'_> {
    /// The first packet released is the bins' origin when no instant was given.
    #[inline]
    fn place(&mut self, ts_ns: i64) {
        if self.metrics.bin_origin_ns.is_none() {
            self.metrics.bin_origin_ns = Some(ts_ns);
        }
    }
}

impl Release for Feed<'_> {
    #[inline]
    fn release(&mut self, ts_ns: i64, size: u64, key: impl Fn(By) -> GroupKey) -> Result<()> {
        self.place(ts_ns);
        for g in self.groupings.iter_mut() {
            let by = g.by();
            g.push_key(|| key(by), ts_ns, size, self.metrics)?;
        }
        Ok(())
    }

    #[inline]
    fn release_run(&mut self, run: &[Bare]) -> Result<()> {
        if let Some(first) = run.first() {
            self.place(first.ts_ns);
        }
        for g in self.groupings.iter_mut() {
            g.push_run(run, self.metrics)?;
        }
        Ok(())
    }
}
