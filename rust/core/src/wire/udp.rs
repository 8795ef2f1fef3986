//! UDP (RFC 768): ports and the payload length from the UDP length field (capped by the IP
//! length); RoCEv2 behind 4791.

use std::net::IpAddr;

use super::{be16, roce, Headers, Segment};

pub const HEADER_LEN: usize = 8;

#[inline]
pub(super) fn decode(h: &mut Headers, seg: Segment<'_>) {
    let b = seg.bytes;
    (h.sport, h.dport) = seg.ports();
    // A UDP length beyond the IP payload is damage: never count more than the IP length holds.
    // A UDP length of 0 means "the IP payload" over IPv6 (RFC 2675's jumbograms; tshark reads
    // it so whatever the payload's size) and over an IPv4 payload longer than the field can
    // say (a GSO super-frame); any other length below the header's own is damage (tshark: "Bad
    // length value"): the ports are kept, the payload length is not, as for a bogus TCP data
    // offset.
    h.payload_len = be16(b, 4).and_then(|n| {
        let udp_len = match n {
            0 if seg.len > u32::from(u16::MAX) || matches!(h.src, Some(IpAddr::V6(_))) => seg.len,
            n => u32::from(n).min(seg.len),
        };
        udp_len.checked_sub(HEADER_LEN as u32)
    });
    seg.check(h, HEADER_LEN);
    if h.dport == Some(roce::UDP_PORT) {
        roce::decode(h, &seg, b.get(HEADER_LEN..).unwrap_or_default());
    }
}
