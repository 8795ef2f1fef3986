//! ON/OFF trains: a burst is a maximal run of packets whose consecutive gaps are ≤ g.
//!
//! Streaming: only the open burst is held; closed bursts are appended to the report (their number
//! is at most the packet count, and usually far smaller). A caller that wants only distributions
//! can set `keep_bursts = false` and read the totals and the histograms of the closed bursts.

use crate::engine::Arrival;

/// One burst: a maximal run of packets each at most the gap threshold after the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Burst {
    /// Timestamp of the burst's first packet.
    pub start_ns: i64,
    /// Timestamp of the burst's last packet.
    pub end_ns: i64,
    /// `end_ns − start_ns`.
    pub duration_ns: i64,
    /// Bytes of its packets.
    pub bytes: u64,
    /// Its packets.
    pub packets: u64,
}

/// The bursts of a trace ([`BurstDetector::finish`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BurstReport {
    /// The gap threshold used (a negative one given is 0).
    pub gap_threshold_ns: i64,
    /// The bursts in time order (empty unless kept: [`BurstDetector::with_options`]).
    pub bursts: Vec<Burst>,
    /// OFF gaps: start of burst k+1 minus end of burst k (each > threshold).
    pub off_gaps_ns: Vec<i64>,
    /// Bursts found, kept or not.
    pub total_bursts: u64,
}

/// Cuts a trace into bursts (ON) and the gaps between them (OFF): push every packet in time
/// order, then [`BurstDetector::finish`].
#[derive(Debug)]
pub struct BurstDetector {
    threshold_ns: i64,
    keep: bool,
    open: Option<Burst>,
    report: BurstReport,
}

impl BurstDetector {
    /// `gap_threshold_ns` < 0 is treated as 0 (only packets at the same ns form a burst).
    pub fn new(gap_threshold_ns: i64) -> Self {
        Self::with_options(gap_threshold_ns, true)
    }

    /// As [`BurstDetector::new`]; `keep_bursts` false keeps only `total_bursts` (no list of
    /// bursts or gaps), for a trace of very many.
    pub fn with_options(gap_threshold_ns: i64, keep_bursts: bool) -> Self {
        let threshold_ns = gap_threshold_ns.max(0);
        BurstDetector {
            threshold_ns,
            keep: keep_bursts,
            open: None,
            report: BurstReport {
                gap_threshold_ns: threshold_ns,
                ..Default::default()
            },
        }
    }

    /// One packet (in time order).
    pub fn push(&mut self, a: &Arrival) {
        self.push_raw(a.ts_ns, a.size);
    }

    /// The same as `push` for a bare (timestamp, size).
    pub fn push_raw(&mut self, ts_ns: i64, size: u64) {
        if let Some(b) = self.open.as_mut() {
            if ts_ns.saturating_sub(b.end_ns) <= self.threshold_ns {
                b.end_ns = b.end_ns.max(ts_ns);
                b.duration_ns = b.end_ns.saturating_sub(b.start_ns);
                b.bytes = b.bytes.saturating_add(size);
                b.packets = b.packets.saturating_add(1);
                return;
            }
            let closed = *b;
            self.close(closed);
            if self.keep {
                self.report
                    .off_gaps_ns
                    .push(ts_ns.saturating_sub(closed.end_ns));
            }
        }
        self.open = Some(Burst {
            start_ns: ts_ns,
            end_ns: ts_ns,
            duration_ns: 0,
            bytes: size,
            packets: 1,
        });
    }

    fn close(&mut self, b: Burst) {
        self.report.total_bursts = self.report.total_bursts.saturating_add(1);
        if self.keep {
            self.report.bursts.push(b);
        }
    }

    /// The bursts, the last one closed.
    pub fn finish(mut self) -> BurstReport {
        if let Some(b) = self.open.take() {
            self.close(b);
        }
        self.report
    }
}
