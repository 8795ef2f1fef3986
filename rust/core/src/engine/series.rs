//! Binned (tumbling-window) series of one group, for many bin widths at once.
//!
//! Bins are `[o + kΔ, o + (k+1)Δ)` in epoch ns with k = ⌊(t − o)/Δ⌋ for the origin o
//! ([`super::BinOrigin`]: the epoch unless asked otherwise, which aligns the bins of different
//! files). Only o mod Δ matters, so each width keeps that phase and k is found without forming
//! t − o, which could overflow. Only non-empty bins are kept; the open bin is flushed when a
//! packet of a later bin arrives. The one bin whose start lies before i64::MIN (possible only
//! for a timestamp within Δ of i64::MIN) reports i64::MIN as its start.

use super::{By, GroupKey, SeriesRow};

#[derive(Debug, Clone)]
struct Binner {
    width: i64,
    /// The origin mod width, in [0, width).
    phase: i64,
    /// Open bin: index k, bytes, packets.
    open: Option<(i64, u64, u64)>,
    /// Closed bins: start, bytes, packets.
    done: Vec<(i64, u64, u64)>,
}

impl Binner {
    #[inline]
    fn push(&mut self, ts: i64, size: u64) {
        // width > 0, so div_euclid is the floor and cannot overflow; one bin less where ts lies
        // before its epoch-aligned bin's start plus the phase. phase > 0 only when width ≥ 2,
        // so k stays above i64::MIN.
        let k = ts.div_euclid(self.width) - i64::from(ts.rem_euclid(self.width) < self.phase);
        match &mut self.open {
            Some((open_k, bytes, packets)) if *open_k == k => {
                *bytes = bytes.saturating_add(size);
                *packets += 1;
            }
            _ => {
                self.flush();
                self.open = Some((k, size, 1));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((k, bytes, packets)) = self.open.take() {
            self.done
                .push((bin_start(k, self.width, self.phase), bytes, packets));
        }
    }
}

/// Start of bin k: kΔ + phase, clamped to i64::MIN for the one bin that starts before it (it
/// never passes i64::MAX: a bin starts at or before a packet in it).
pub(crate) fn bin_start(k: i64, width: i64, phase: i64) -> i64 {
    let start = i128::from(k) * i128::from(width) + i128::from(phase);
    i64::try_from(start.max(i128::from(i64::MIN))).unwrap_or(i64::MIN)
}

#[derive(Debug, Clone)]
pub(crate) struct Series {
    binners: Vec<Binner>,
    /// Whether each width's phase is set: false until the first packet when the origin is the
    /// first packet itself.
    placed: bool,
}

impl Series {
    /// `bins_ns` must be positive (the scanner ensures it). `origin_ns`: the instant the bins
    /// are counted from, or `None` for this series' own first packet.
    pub(crate) fn new(bins_ns: &[i64], origin_ns: Option<i64>) -> Self {
        let binners = bins_ns
            .iter()
            .map(|&width| Binner {
                width,
                phase: origin_ns.map_or(0, |o| o.rem_euclid(width)),
                open: None,
                done: Vec::new(),
            })
            .collect();
        Series {
            binners,
            placed: origin_ns.is_some(),
        }
    }

    #[inline]
    fn place(&mut self, first_ns: i64) {
        if !self.placed {
            self.placed = true;
            for b in &mut self.binners {
                b.phase = first_ns.rem_euclid(b.width);
            }
        }
    }

    /// Add a packet; packets must come in timestamp order.
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        self.place(ts);
        for b in &mut self.binners {
            b.push(ts, size);
        }
    }

    /// [`Series::push`] for consecutive packets, one width at a time.
    #[inline]
    pub(crate) fn push_run(&mut self, run: impl Iterator<Item = (i64, u64)> + Clone) {
        if let Some((first, _)) = run.clone().next() {
            self.place(first);
        }
        for b in &mut self.binners {
            for (ts, size) in run.clone() {
                b.push(ts, size);
            }
        }
    }

    /// All non-empty bins, by width then start.
    pub(crate) fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<SeriesRow>) {
        for b in &mut self.binners {
            b.flush();
            out.extend(b.done.iter().map(|&(start_ns, bytes, packets)| SeriesRow {
                by,
                group,
                bin_ns: b.width,
                start_ns,
                bytes,
                packets,
            }));
        }
    }
}
