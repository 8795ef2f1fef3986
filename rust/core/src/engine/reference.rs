//! Brute-force oracles, straight from the definitions in docs/metrics.md, for tests and benchmarks.
//! Quadratic in the number of packets: use them on small traces only.
//!
//! Every function takes the packets of one group as `(timestamp ns, size bytes)` sorted by
//! timestamp (equal timestamps in any order) and uses wide integers (i128/u128), never the
//! streaming tricks of the engine.

use super::{Closure, BACKLOG_SCALE};

/// E(τ) and what goes with it, as the engine reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeRef {
    /// Most bytes in a window (u128: no saturation).
    pub bytes: u128,
    /// Packets in the earliest-starting window with that many bytes.
    pub packets_in_window: u64,
    /// Its start: the timestamp of its first packet.
    pub start_ns: i64,
    /// Most packets in any window.
    pub max_packets: u64,
}

/// E(τ) by trying a window starting at every packet: `[t_i, t_i+τ)` or `[t_i, t_i+τ]`. Ties on
/// bytes go to the earliest start. `None` for no packets. τ = 0 is allowed here (empty half-open
/// windows).
pub fn envelope(packets: &[(i64, u64)], tau: i64, closure: Closure) -> Option<EnvelopeRef> {
    let mut best: Option<EnvelopeRef> = None;
    let mut max_packets = 0u64;
    for &(s, _) in packets {
        let s = i128::from(s);
        let end = s + i128::from(tau);
        let inside = |t: i64| {
            let t = i128::from(t);
            t >= s
                && match closure {
                    Closure::HalfOpen => t < end,
                    Closure::Closed => t <= end,
                }
        };
        let (mut bytes, mut count) = (0u128, 0u64);
        for &(t, size) in packets {
            if inside(t) {
                bytes += u128::from(size);
                count += 1;
            }
        }
        max_packets = max_packets.max(count);
        if best.is_none_or(|b| bytes > b.bytes) {
            best = Some(EnvelopeRef {
                bytes,
                packets_in_window: count,
                start_ns: s as i64,
                max_packets: 0,
            });
        }
    }
    best.map(|b| EnvelopeRef { max_packets, ..b })
}

/// B_max(r) with what goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogRef {
    /// B_max in bytes × BACKLOG_SCALE.
    pub bmax_scaled: u128,
    /// Earliest end t_j of a maximising interval.
    pub peak_ns: i64,
    /// Longest busy period, as [`crate::engine::BacklogRow::longest_busy_ns`].
    pub longest_busy_ns: i64,
    /// When it started.
    pub longest_busy_start_ns: i64,
}

/// `8·10⁹·A[s, e] − r·(e − s)` for the closed interval, or `None` when negative.
fn surplus(packets: &[(i64, u64)], s: i64, e: i64, rate: u64) -> Option<u128> {
    let bytes: u128 = packets
        .iter()
        .filter(|&&(t, _)| s <= t && t <= e)
        .map(|&(_, size)| u128::from(size))
        .sum();
    let work = bytes * u128::from(BACKLOG_SCALE);
    let served = u128::from(rate) * u128::from(e.abs_diff(s));
    work.checked_sub(served)
}

/// Work left (bytes × scale) just after packet `m` (by position): by the max-plus form of
/// Lindley's recursion, the largest surplus of the packets `k..=m` over the service in
/// `[t_k, t_m]`, or 0.
fn workload_after(packets: &[(i64, u64)], m: usize, rate: u64) -> u128 {
    let (tm, _) = packets[m];
    let mut best = 0u128;
    let mut work = 0u128;
    for k in (0..=m).rev() {
        let (tk, size) = packets[k];
        work += u128::from(size) * u128::from(BACKLOG_SCALE);
        let served = u128::from(rate) * u128::from(tm.abs_diff(tk));
        if let Some(left) = work.checked_sub(served) {
            best = best.max(left);
        }
    }
    best
}

/// B_max(r) as the sup over pairs of packet times s ≤ e of `A[s, e] − r(e − s)`; busy periods
/// from the closed form of the workload (see `backlog.rs` for their definition). `None` for no
/// packets; `rate` must be > 0.
pub fn backlog(packets: &[(i64, u64)], rate: u64) -> Option<BacklogRef> {
    let first = packets.first()?.0;
    let mut bmax = 0u128;
    let mut peak_ns = first;
    // Scanning e in increasing time and requiring a strict improvement finds the earliest end.
    let mut ends: Vec<i64> = packets.iter().map(|p| p.0).collect();
    ends.dedup();
    for &e in &ends {
        for &s in ends.iter().take_while(|&&s| s <= e) {
            if let Some(v) = surplus(packets, s, e, rate) {
                if v > bmax {
                    bmax = v;
                    peak_ns = e;
                }
            }
        }
    }

    // Busy periods: packet i opens one when the work left before it has been served by t_i and
    // the work after it is positive; the period runs to the packet before the next opening.
    let rate_wide = u128::from(rate);
    let mut longest_ns = 0i64;
    let mut longest_start = first;
    let mut open: Option<i64> = None;
    for i in 0..packets.len() {
        let (ti, _) = packets[i];
        let empty_before = i == 0 || {
            let (tp, _) = packets[i - 1];
            workload_after(packets, i - 1, rate) <= rate_wide * u128::from(ti.abs_diff(tp))
        };
        if empty_before {
            if let Some(start) = open.take() {
                let (tp, _) = packets[i - 1];
                let len = busy_len(start, tp, workload_after(packets, i - 1, rate), rate);
                if len > longest_ns {
                    longest_ns = len;
                    longest_start = start;
                }
            }
        }
        if open.is_none() && workload_after(packets, i, rate) > 0 {
            open = Some(ti);
        }
    }
    if let Some(start) = open {
        let m = packets.len() - 1;
        let len = busy_len(start, packets[m].0, workload_after(packets, m, rate), rate);
        if len > longest_ns {
            longest_ns = len;
            longest_start = start;
        }
    }
    Some(BacklogRef {
        bmax_scaled: bmax,
        peak_ns,
        longest_busy_ns: longest_ns,
        longest_busy_start_ns: longest_start,
    })
}

/// ⌈(t_last − start) + W/r⌉ in ns, saturating at i64::MAX.
fn busy_len(start: i64, last: i64, work: u128, rate: u64) -> i64 {
    let rate = u128::from(rate);
    let span = u128::from(last.abs_diff(start));
    // ⌈(span·r + W)/r⌉ without the product overflowing: span + ⌈W/r⌉ is the same number.
    let drain = work / rate + u128::from(!work.is_multiple_of(rate));
    i64::try_from(span + drain).unwrap_or(i64::MAX)
}

/// Non-empty bins `[kΔ, (k+1)Δ)` as (start, bytes, packets), by start; a start before i64::MIN is
/// reported as i64::MIN. Bytes are not saturated (u128).
pub fn bins(packets: &[(i64, u64)], width: i64) -> Vec<(i64, u128, u64)> {
    bins_from(packets, width, 0)
}

/// [`bins`] counted from `origin`: bins `[o + kΔ, o + (k+1)Δ)`, k = ⌊(t − o)/Δ⌋, t − o formed in
/// i128 (the engine never forms it).
pub fn bins_from(packets: &[(i64, u64)], width: i64, origin: i64) -> Vec<(i64, u128, u64)> {
    let mut map = std::collections::BTreeMap::<i128, (u128, u64)>::new();
    let w = i128::from(width);
    let o = i128::from(origin);
    for &(t, size) in packets {
        let t = i128::from(t) - o;
        // Floor division written out, not div_euclid, to be independent of the engine.
        let k = if t >= 0 { t / w } else { -((-t + w - 1) / w) };
        let e = map.entry(k).or_insert((0, 0));
        e.0 += u128::from(size);
        e.1 += 1;
    }
    map.into_iter()
        .map(|(k, (bytes, n))| {
            let start = (o + k * w).max(i128::from(i64::MIN));
            (start as i64, bytes, n)
        })
        .collect()
}
