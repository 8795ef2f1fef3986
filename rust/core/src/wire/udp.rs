//! UDP (RFC 768): ports and the payload length from the UDP length field (capped by the IP
//! length); RoCEv2 behind 4791.

use super::{be16, roce, Headers, Segment};

pub const HEADER_LEN: usize = 8;

#[inline]
pub(super) fn decode(h: &mut Headers, seg: Segment<'_>) {
    let b = seg.bytes;
    h.sport = be16(b, 0);
    h.dport = be16(b, 2);
    // A UDP length beyond the IP payload is damage: never count more than the IP length holds.
    // Where the IP length says nothing (a jumbogram or a GSO super-frame), a UDP length of 0
    // says nothing either (RFC 2675): the payload length is unknown.
    h.payload_len = match (be16(b, 4), seg.len) {
        (Some(0), None) | (None, _) => None,
        (Some(n), len) => {
            let udp_len = u32::from(n).min(len.unwrap_or(u32::MAX));
            Some(udp_len.saturating_sub(HEADER_LEN as u32))
        }
    };
    seg.check(h, HEADER_LEN);
    if h.dport == Some(roce::UDP_PORT) {
        roce::decode(h, &seg, b.get(HEADER_LEN..).unwrap_or_default());
    }
}
