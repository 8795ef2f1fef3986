//! TCP (RFC 9293): ports, sequence number, flags, and the payload length the IP length implies.

use super::{array, Headers, Segment};

pub const MIN_HEADER_LEN: usize = 20;

#[inline]
pub(super) fn decode(h: &mut Headers, seg: Segment<'_>) {
    let b = seg.bytes;
    (h.sport, h.dport) = seg.ports();
    h.tcp_seq = array::<4>(b, 4).map(u32::from_be_bytes);
    h.tcp_flags = b.get(13).copied();
    let header_len = b.get(12).map_or(0, |&x| usize::from(x >> 4) * 4);
    // A data offset below 5, or one reaching past the IP payload, is damage (tshark: "bogus TCP
    // header length"): the segment has no payload length, as an IP length below its header's.
    if header_len >= MIN_HEADER_LEN {
        h.payload_len = seg.len.checked_sub(header_len as u32);
    }
    seg.check(h, header_len.max(MIN_HEADER_LEN));
}
