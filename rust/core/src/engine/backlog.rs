//! The backlog of a constant-rate FIFO server fed by one group, for many rates at once (Lindley).
//!
//! Exactness: the queue is kept in units of bit·ns/s, i.e. bytes × 8·10⁹, so the work a server of
//! r bit/s does in Δt ns is the integer r·Δt and no rounding ever happens while streaming. A u128
//! holds 2⁹⁷ per packet of 2⁶⁴ bytes, so it only saturates after 2³¹ such packets in one busy
//! period. The byte value is rounded to f64 once, at the end.
//!
//! Busy periods: a packet that finds the queue empty (everything before it fully served at or
//! before its arrival) and is not empty itself starts a busy period. The period ends at the exact
//! instant its last packet's queue is served, `t_last + Q_last/r`; the reported length is
//! `t_last − t_start + ⌈Q_last/r⌉` ns, so a period is never reported shorter than it is. A
//! zero-size packet never starts one. With no busy period at all (every packet empty) the longest
//! is 0 ns starting at the group's first packet.

use super::{BacklogRow, By, GroupKey};

/// Units of the exact queue: bytes × this = bit·ns/s.
pub const BACKLOG_SCALE: u64 = 8_000_000_000;

/// One server rate.
#[derive(Debug, Clone)]
struct Queue {
    rate: u64,
    /// Queue just after the latest packet, in bytes × BACKLOG_SCALE.
    q: u128,
    last_ns: i64,
    best_q: u128,
    peak_ns: i64,
    busy_start: Option<i64>,
    longest_ns: i64,
    longest_start_ns: i64,
}

impl Queue {
    /// Close the open busy period (if any), which drains after the packet at `last_ns`.
    fn close_busy(&mut self) {
        if let Some(start) = self.busy_start.take() {
            // A 128-bit division is a slow library call; the queue nearly always fits 64 bits.
            let drain_ns = match u64::try_from(self.q) {
                Ok(q) => u128::from(q.div_ceil(self.rate)),
                Err(_) => self.q.div_ceil(u128::from(self.rate)),
            };
            let len = u128::from(self.last_ns.abs_diff(start)).saturating_add(drain_ns);
            let len = i64::try_from(len).unwrap_or(i64::MAX);
            if len > self.longest_ns {
                self.longest_ns = len;
                self.longest_start_ns = start;
            }
        }
    }
}

/// B_max(r) of one group for a sorted list of rates.
#[derive(Debug, Clone)]
pub(crate) struct Backlog {
    queues: Vec<Queue>,
    seen: bool,
}

impl Backlog {
    /// `rates_bps` must be positive (the scanner ensures it).
    pub(crate) fn new(rates_bps: &[u64]) -> Self {
        let queues = rates_bps
            .iter()
            .map(|&rate| Queue {
                rate,
                q: 0,
                last_ns: 0,
                best_q: 0,
                peak_ns: 0,
                busy_start: None,
                longest_ns: 0,
                longest_start_ns: 0,
            })
            .collect();
        Backlog {
            queues,
            seen: false,
        }
    }

    /// Add a packet; packets must come in timestamp order.
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        let work = u128::from(size) * u128::from(BACKLOG_SCALE);
        if !self.seen {
            self.seen = true;
            for q in &mut self.queues {
                q.q = work;
                q.last_ns = ts;
                q.best_q = work;
                q.peak_ns = ts;
                q.busy_start = (work > 0).then_some(ts);
                q.longest_start_ns = ts;
            }
            return;
        }
        for q in &mut self.queues {
            // Sorted input: ts ≥ last_ns, and the difference of two i64 always fits a u64.
            let served = u128::from(q.rate) * u128::from(ts.abs_diff(q.last_ns));
            if q.q <= served {
                q.close_busy();
                q.q = 0;
            } else {
                q.q -= served;
            }
            q.q = q.q.saturating_add(work);
            q.last_ns = ts;
            if q.q > 0 && q.busy_start.is_none() {
                q.busy_start = Some(ts);
            }
            if q.q > q.best_q {
                q.best_q = q.q;
                q.peak_ns = ts;
            }
        }
    }

    /// Exact B_max per rate, in bytes × BACKLOG_SCALE (for tests and exact merging).
    pub(crate) fn exact(&self) -> impl Iterator<Item = (u64, u128)> + '_ {
        self.queues.iter().map(|q| (q.rate, q.best_q))
    }

    /// One row per rate; closes the busy periods still open.
    pub(crate) fn rows(&mut self, by: By, group: GroupKey, out: &mut Vec<BacklogRow>) {
        if !self.seen {
            return;
        }
        for q in &mut self.queues {
            q.close_busy();
            out.push(BacklogRow {
                by,
                group,
                rate_bps: q.rate,
                bmax_bytes: ratio_to_f64(q.best_q, BACKLOG_SCALE),
                peak_ns: q.peak_ns,
                longest_busy_ns: q.longest_ns,
                longest_busy_start_ns: q.longest_start_ns,
            });
        }
    }
}

/// `n / d` rounded once to the nearest f64 (ties to even); 0 when `d` is 0.
///
/// The quotient is computed with at least 55 significant bits plus a sticky bit for the remainder,
/// which is all one correct rounding to 53 bits needs.
pub fn ratio_to_f64(n: u128, d: u64) -> f64 {
    if n == 0 || d == 0 {
        return 0.0;
    }
    let d = u128::from(d);
    let n_bits = 128 - n.leading_zeros() as i32;
    let d_bits = 128 - d.leading_zeros() as i32;
    // n < 2^n_bits and d ≥ 2^(d_bits−1): shifting n to d_bits + 56 bits (≤ 120) gives a quotient
    // of at least 2^55 without overflow.
    let shift = (d_bits + 56 - n_bits).max(0);
    let n = n << shift;
    let q = n / d;
    let sticky = n % d != 0;
    let q_bits = 128 - q.leading_zeros() as i32;
    let drop = q_bits - 53;
    let mut keep = q >> drop;
    let rest = q & ((1u128 << drop) - 1);
    let half = 1u128 << (drop - 1);
    if rest > half || (rest == half && (sticky || keep & 1 == 1)) {
        keep += 1;
    }
    // keep ≤ 2^53 is exact in f64, and so is the power of two, so the product is exact.
    keep as f64 * 2f64.powi(drop - shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_matches_ieee_division_where_that_is_exact() {
        // Both operands below 2^53 convert exactly, and IEEE division rounds once: an oracle.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x >> (x % 40)) & ((1 << 53) - 1);
            let d = ((x.rotate_left(17) >> (x % 50)) & ((1 << 53) - 1)).max(1);
            assert_eq!(
                ratio_to_f64(u128::from(n), d),
                n as f64 / d as f64,
                "{n}/{d}"
            );
        }
        assert_eq!(ratio_to_f64(0, 7), 0.0);
        assert_eq!(ratio_to_f64(7, 0), 0.0);
    }

    #[test]
    fn ratio_rounds_wide_numerators_once() {
        // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: to even, down. Plus a tiny remainder: up.
        let d = BACKLOG_SCALE;
        let n = ((1u128 << 53) + 1) * u128::from(d);
        assert_eq!(ratio_to_f64(n, d), 9007199254740992.0);
        assert_eq!(ratio_to_f64(n + 1, d), 9007199254740994.0);
        assert_eq!(ratio_to_f64(u128::MAX, 1), 2f64.powi(128));
    }

    #[test]
    fn lindley_by_hand() {
        // 1500 B at t=0 and t=1000 ns on 8 Gbit/s: the server does 1000 B per µs.
        let mut b = Backlog::new(&[8_000_000_000]);
        b.push(0, 1500);
        b.push(1000, 1500);
        let mut rows = Vec::new();
        b.rows(By::All, GroupKey::All, &mut rows);
        assert_eq!(rows[0].bmax_bytes, 2000.0);
        assert_eq!(rows[0].peak_ns, 1000);
        // Busy from 0 until 1000 + 2000 B / (1 B/ns) = 3000.
        assert_eq!(rows[0].longest_busy_ns, 3000);
        assert_eq!(rows[0].longest_busy_start_ns, 0);
    }
}
