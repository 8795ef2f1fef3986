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
    // A UDP length of 0 over an IP payload longer than its field can say (a jumbogram or a GSO
    // super-frame) means "the IP payload" (RFC 2675).
    h.payload_len = be16(b, 4).map(|n| {
        let udp_len = match n {
            0 if seg.len > u32::from(u16::MAX) => seg.len,
            n => u32::from(n).min(seg.len),
        };
        udp_len.saturating_sub(HEADER_LEN as u32)
    });
    seg.check(h, HEADER_LEN);
    if h.dport == Some(roce::UDP_PORT) {
        roce::decode(h, &seg, b.get(HEADER_LEN..).unwrap_or_default());
    }
}
