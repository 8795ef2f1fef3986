//! The sliding-window envelope E(τ) of one group, for many τ at once.
//!
//! With integer-ns timestamps a half-open window `[s, s+τ)` holds exactly the packets of the closed
//! window `[s, s+τ−1]`, so both conventions reduce to one rule: when a packet arrives at `t`, the
//! window that ends at it holds the packets with `t − reach ≤ t_i ≤ t`, where `reach` is `τ−1`
//! (half-open) or `τ` (closed). The most bytes over all windows ending at a packet equals the most
//! bytes over all windows starting at a packet (the definition), because every maximising window
//! can be slid until its far edge touches a packet.
//!
//! The packets of the last max(reach) ns live in one ring shared by all windows of the group; each
//! window keeps a trailing pointer into it and a running sum, so a packet costs O(1) amortised per
//! window and nothing is allocated per packet.

use super::{By, Closure, EnvelopeRow, GroupKey};

/// Recent packets as two parallel arrays addressed by absolute sequence numbers: the low bits of a
/// sequence number pick the slot, so pointers into the ring survive growth without rebasing.
#[derive(Debug, Clone)]
struct Ring {
    ts: Vec<i64>,
    size: Vec<u64>,
    mask: u64,
    /// Oldest packet still needed (by the largest window).
    tail: u64,
    /// Sequence number the next packet gets.
    head: u64,
}

impl Ring {
    const INITIAL: usize = 16;

    fn new() -> Self {
        Ring {
            ts: vec![0; Self::INITIAL],
            size: vec![0; Self::INITIAL],
            mask: Self::INITIAL as u64 - 1,
            tail: 0,
            head: 0,
        }
    }

    fn len(&self) -> u64 {
        self.head.wrapping_sub(self.tail)
    }

    fn ts_at(&self, seq: u64) -> i64 {
        // The mask keeps the slot below the (power-of-two) length.
        self.ts[(seq & self.mask) as usize]
    }

    fn size_at(&self, seq: u64) -> u64 {
        self.size[(seq & self.mask) as usize]
    }

    fn push(&mut self, ts: i64, size: u64) {
        if self.len() == self.ts.len() as u64 {
            self.grow();
        }
        let slot = (self.head & self.mask) as usize;
        self.ts[slot] = ts;
        self.size[slot] = size;
        self.head = self.head.wrapping_add(1);
    }

    /// Double the capacity, moving every live packet to its slot under the new mask.
    fn grow(&mut self) {
        let cap = self.ts.len().saturating_mul(2);
        let mask = cap as u64 - 1;
        let mut ts = vec![0; cap];
        let mut size = vec![0; cap];
        let mut seq = self.tail;
        while seq != self.head {
            let slot = (seq & mask) as usize;
            ts[slot] = self.ts_at(seq);
            size[slot] = self.size_at(seq);
            seq = seq.wrapping_add(1);
        }
        self.ts = ts;
        self.size = size;
        self.mask = mask;
    }
}

/// One τ: the window ending at the latest packet, and the best seen so far.
#[derive(Debug, Clone)]
struct Window {
    tau: i64,
    reach: i64,
    /// First packet of the current window (sequence number in the ring).
    trail: u64,
    bytes: u128,
    packets: u64,
    best_bytes: u128,
    best_packets: u64,
    best_start: i64,
    max_packets: u64,
}

/// E(τ) for a sorted list of τ, over one group's packets.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    ring: Ring,
    /// Sorted by reach, so the last window is the one that decides what the ring must keep.
    windows: Vec<Window>,
    seen: bool,
}

impl Envelope {
    /// `windows_ns` must be sorted ascending, deduplicated and positive (the scanner ensures it).
    pub(crate) fn new(windows_ns: &[i64], closure: Closure) -> Self {
        let windows = windows_ns
            .iter()
            .map(|&tau| Window {
                tau,
                reach: match closure {
                    Closure::HalfOpen => tau.saturating_sub(1),
                    Closure::Closed => tau,
                },
                trail: 0,
                bytes: 0,
                packets: 0,
                best_bytes: 0,
                best_packets: 0,
                best_start: 0,
                max_packets: 0,
            })
            .collect();
        Envelope {
            ring: Ring::new(),
            windows,
            seen: false,
        }
    }

    /// Add a packet; packets must come in timestamp order.
    pub(crate) fn push(&mut self, ts: i64, size: u64) {
        if self.windows.is_empty() {
            return;
        }
        let first = !self.seen;
        self.seen = true;
        self.ring.push(ts, size);
        let ring = &self.ring;
        for w in &mut self.windows {
            // Work on locals: the compiler keeps them in registers through the trailing loop.
            let (mut trail, mut bytes, mut packets) = (w.trail, w.bytes, w.packets);
            bytes += u128::from(size);
            packets += 1;
            // reach ≥ 0, so the packet just pushed always stays in its own window and the loop
            // stops before the head.
            let bound = ts.saturating_sub(w.reach);
            while trail != ring.head && ring.ts_at(trail) < bound {
                bytes -= u128::from(ring.size_at(trail));
                packets -= 1;
                trail = trail.wrapping_add(1);
            }
            (w.trail, w.bytes, w.packets) = (trail, bytes, packets);
            if first || bytes > w.best_bytes {
                w.best_bytes = bytes;
                w.best_packets = packets;
                w.best_start = ring.ts_at(trail);
            } else if bytes == w.best_bytes && ring.ts_at(trail) == w.best_start {
                // Same start, more (zero-size) packets: the window starting there holds them too.
                w.best_packets = packets;
            }
            w.max_packets = w.max_packets.max(packets);
        }
        if let Some(largest) = self.windows.last() {
            self.ring.tail = largest.trail;
        }
    }

    /// One row per τ (none if the group saw no packet, which the scanner never asks for).
    pub(crate) fn rows(&self, by: By, group: GroupKey, out: &mut Vec<EnvelopeRow>) {
        if !self.seen {
            return;
        }
        out.extend(self.windows.iter().map(|w| EnvelopeRow {
            by,
            group,
            window_ns: w.tau,
            bytes: u64::try_from(w.best_bytes).unwrap_or(u64::MAX),
            packets_in_window: w.best_packets,
            start_ns: w.best_start,
            max_packets: w.max_packets,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_order_across_growth() {
        let mut ring = Ring::new();
        for i in 0..100i64 {
            ring.push(i, i as u64 * 3);
            if i % 3 == 0 {
                ring.tail = ring.tail.wrapping_add(1);
            }
        }
        let mut seq = ring.tail;
        let mut expect = ring.tail as i64;
        while seq != ring.head {
            assert_eq!(ring.ts_at(seq), expect);
            assert_eq!(ring.size_at(seq), expect as u64 * 3);
            seq += 1;
            expect += 1;
        }
        // Only the live packets (100 pushed, 34 released) bound the capacity.
        assert!(ring.ts.len() <= 128);
    }
}
