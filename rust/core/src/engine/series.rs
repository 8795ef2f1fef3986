//! Binned (tumbling-window) series of one group, for many bin widths at once.
//!
//! Bins are `[kΔ, (k+1)Δ)` in epoch ns with k = ⌊t/Δ⌋ (floor, so negative timestamps land in the
//! right bin), which aligns the bins of different files. Only non-empty bins are kept; the open
//! bin is flushed when a packet of a later bin arrives. The one bin whose start lies before
//! i64::MIN (possible only for a timestamp within Δ of i64::MIN) reports i64::MIN as its start.

use super::{By, GroupKey, SeriesRow};

#[derive(Debug, Clone)]
struct Binner {
    width: i64,
    /// Open bin: index k, bytes, packets.
    open: Option<(i64, u64, u64)>,
    /// Closed bins: start, bytes, packets.
    done: Vec<(i64, u64, u64)>,
}

impl Binner {
    #[inline]
    fn push(&mut self, ts: i64, size: u64) {
        // width > 0, so div_euclid is the floor and cannot overflow.
        let k = ts.div_euclid(self.width);
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
            self.done.push((bin_start(k, self.width), bytes, packets));
        }
    }
}

/// Start of bin k: kΔ, clamped to i64::MIN for the one bin that starts before it.
pub(crate) fn bin_start(k: i64, width: i64) -> i64 {
    k.checked_mul(width).unwrap_or(i64::MIN)
}

#[derive(Debug, Clone)]
pub(crate) struct Series {
    binners: Vec<Binner>,
}

impl Series {
    /// `bins_ns` must be positive (the scanner ensures it).
    pub(crate) fn new(bins_ns: &[i64]) -> Self {
        let binners = bins_ns
            .iter()
            .map(|&width| Binner {
                width,
                open: None,
                done: Vec::new(),
            })
            .collect();
        Series { binners }
    }

    /// Add a packet; packets must come in timestamp order.
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        for b in &mut self.binners {
            b.push(ts, size);
        }
    }

    /// [`Series::push`] for consecutive packets, one width at a time.
    #[inline]
    pub(crate) fn push_run(&mut self, run: impl Iterator<Item = (i64, u64)> + Clone) {
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
