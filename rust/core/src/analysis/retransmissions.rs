//! TCP retransmissions of one direction of a connection, from sequence numbers alone.
//!
//! A segment is retransmitted when everything it occupies of the sequence space was seen
//! before: its end (seq + payload, +1 for SYN, +1 for FIN) is not after the highest end seen so
//! far, compared as serial numbers (RFC 1982) so that wrapping past 2^32 is no jump back. That
//! is tshark's retransmission, fast retransmission, spurious retransmission and out-of-order in
//! one, as those differ only by timing heuristics; docs/metrics.md says where it parts from
//! tshark.

use crate::wire::Headers;

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;

/// `a` is after `b` in sequence space (the half of the 2^32 circle ahead of `b`).
#[inline]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// What one direction has sent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqTracker {
    /// Highest sequence end seen: what the sender is expected to send next.
    next: Option<u32>,
    /// The SYN's sequence number: another SYN with the same one is a retransmission, one with a
    /// different one opens a new connection on the same ports (the state starts over, as
    /// tshark's port reuse does).
    syn: Option<u32>,
}

impl SeqTracker {
    /// Take in a segment of this direction, in time order; true when it is retransmitted. A
    /// segment whose header was cut before the flags (no sequence number or flags known) is
    /// neither counted nor remembered.
    #[inline]
    pub fn segment(&mut self, h: &Headers) -> bool {
        let (Some(seq), Some(flags), Some(len)) = (h.tcp_seq, h.tcp_flags, h.payload_len) else {
            return false;
        };
        let syn = flags & SYN != 0;
        let fin = flags & FIN != 0;
        let end = seq
            .wrapping_add(len)
            .wrapping_add(u32::from(syn))
            .wrapping_add(u32::from(fin));
        if syn && self.syn != Some(seq) {
            *self = SeqTracker {
                next: Some(end),
                syn: Some(seq),
            };
            return false;
        }
        let Some(next) = self.next else {
            self.next = Some(end);
            return false;
        };
        if after(end, next) {
            self.next = Some(end);
            return false;
        }
        let occupies = len > 0 || syn || fin;
        // A keep-alive resends the byte before the next one (or none) to get an ACK back: no
        // data is resent that a receiver lacked, and tshark does not flag it either.
        let keep_alive = len <= 1 && flags & (SYN | FIN | RST) == 0 && seq == next.wrapping_sub(1);
        occupies && !keep_alive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACK: u8 = 0x10;

    fn seg(seq: u32, flags: u8, len: u32) -> Headers {
        Headers {
            tcp_seq: Some(seq),
            tcp_flags: Some(flags),
            payload_len: Some(len),
            ..Headers::default()
        }
    }

    /// Which of the segments are retransmitted, fed in order to one tracker.
    fn marks(segments: &[Headers]) -> Vec<bool> {
        let mut t = SeqTracker::default();
        segments.iter().map(|h| t.segment(h)).collect()
    }

    #[test]
    fn serial_comparison() {
        assert!(after(1, 0));
        assert!(after(0, u32::MAX));
        assert!(after(5, u32::MAX - 5));
        assert!(!after(0, 0));
        assert!(!after(u32::MAX, 0));
        assert!(!after(u32::MAX - 5, 5));
    }

    #[test]
    fn first_segment_only_sets_the_state() {
        assert_eq!(marks(&[seg(1000, ACK, 100)]), [false]);
        // Data below the first segment seen is earlier data: counted, as tshark does.
        assert_eq!(
            marks(&[seg(1000, ACK, 100), seg(900, ACK, 100)]),
            [false, true]
        );
    }

    #[test]
    fn in_order_data_then_a_resend() {
        let s = [
            seg(0, ACK, 100),
            seg(100, ACK, 100),
            seg(200, ACK, 100),
            seg(100, ACK, 100),
            seg(300, ACK, 100),
            seg(0, ACK, 300),
        ];
        assert_eq!(marks(&s), [false, false, false, true, false, true]);
    }

    #[test]
    fn out_of_order_arrivals() {
        // 100..200 lost before the capture, arrives after 200..300: counted as tshark's
        // out-of-order. A resend reaching past the highest end brings new bytes: not counted.
        let s = [
            seg(0, ACK, 100),
            seg(200, ACK, 100),
            seg(100, ACK, 100),
            seg(250, ACK, 100),
        ];
        assert_eq!(marks(&s), [false, false, true, false]);
    }

    #[test]
    fn wraps_around_two_to_the_32() {
        let near = u32::MAX - 149;
        let s = [
            seg(near, ACK, 100),
            seg(near.wrapping_add(100), ACK, 100), // ends at 50 past the wrap
            seg(50, ACK, 100),
            seg(near.wrapping_add(100), ACK, 100),
            seg(near, ACK, 100),
            seg(140, ACK, 20), // overlaps, but brings 10 new bytes
        ];
        assert_eq!(marks(&s), [false, false, false, true, true, false]);
    }

    #[test]
    fn syn_and_its_retransmission() {
        let s = [
            seg(7, SYN, 0),
            seg(7, SYN, 0),
            seg(8, ACK, 0),
            seg(8, ACK, 10),
            seg(7, SYN, 0),
        ];
        assert_eq!(marks(&s), [false, true, false, false, true]);
    }

    #[test]
    fn a_syn_with_another_sequence_number_starts_over() {
        // Ports reused for a new connection: its ISN may lie anywhere, below the old data too.
        let s = [
            seg(1_000_000, SYN, 0),
            seg(1_000_001, ACK, 500),
            seg(3, SYN, 0),
            seg(4, ACK, 100),
            seg(3, SYN, 0),
        ];
        assert_eq!(marks(&s), [false, false, false, false, true]);
    }

    #[test]
    fn fin_occupies_one_and_is_resent() {
        let s = [
            seg(0, ACK, 100),
            seg(100, FIN | ACK, 0),
            seg(100, FIN | ACK, 0),
            seg(101, ACK, 0),
        ];
        assert_eq!(marks(&s), [false, false, true, false]);
        // Data and FIN in one segment, resent as such.
        assert_eq!(
            marks(&[seg(0, FIN | ACK, 10), seg(0, FIN | ACK, 10)]),
            [false, true]
        );
    }

    #[test]
    fn keep_alives_are_not_retransmissions() {
        let s = [
            seg(0, ACK, 100),
            seg(99, ACK, 0),
            seg(99, ACK, 1),
            seg(99, ACK, 1),
            seg(98, ACK, 1),  // not the byte before the next one: resent data
            seg(99, RST, 1),  // a RST is no keep-alive
            seg(99, ACK, 2),  // more than one byte, reaching one past the highest end
            seg(99, ACK, 2),  // ... and resent
            seg(101, ACK, 0), // a pure ACK occupies nothing
            seg(50, ACK, 0),
        ];
        assert_eq!(
            marks(&s),
            [false, false, false, false, true, true, false, true, false, false]
        );
    }

    #[test]
    fn a_cut_header_is_neither_counted_nor_remembered() {
        let cut = Headers {
            tcp_seq: None,
            ..seg(0, ACK, 100)
        };
        let no_flags = Headers {
            tcp_flags: None,
            ..seg(0, ACK, 100)
        };
        assert_eq!(
            marks(&[cut, no_flags, seg(0, ACK, 100), cut, seg(0, ACK, 100)]),
            [false, false, false, false, true]
        );
    }
}
