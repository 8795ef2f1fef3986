//! IPv4 (RFC 791): addresses, protocol, total length, fragments.

use std::net::{IpAddr, Ipv4Addr};

use super::{array, Headers, Segment, Uncaptured};

pub const MIN_HEADER_LEN: usize = 20;

/// Fill in the IPv4 fields and hand back the transport segment, unless this is a non-first
/// fragment (its payload has no transport header) or the header is bogus or cut. `uncaptured`
/// tells the frame's length on the wire from the IP header on.
#[inline]
pub(super) fn decode<'a>(
    h: &mut Headers,
    packet: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<Segment<'a>> {
    // A wrong version or a header shorter than its fixed part is not IPv4 at all (tshark agrees),
    // however many bytes follow: told by the first byte, before any cut could be.
    let Some(&first) = packet.first() else {
        h.truncated = true;
        return None;
    };
    let header_len = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || header_len < MIN_HEADER_LEN {
        return None;
    }
    let Some(fixed) = array::<MIN_HEADER_LEN>(packet, 0) else {
        cut(h, packet, uncaptured);
        return None;
    };
    h.ip_len = ip_len_of(h, [fixed[2], fixed[3]], packet, uncaptured);
    h.ip_proto = Some(fixed[9]);
    h.src = Some(IpAddr::V4(Ipv4Addr::new(
        fixed[12], fixed[13], fixed[14], fixed[15],
    )));
    h.dst = Some(IpAddr::V4(Ipv4Addr::new(
        fixed[16], fixed[17], fixed[18], fixed[19],
    )));
    if u16::from_be_bytes([fixed[6], fixed[7]]) & 0x1fff != 0 {
        h.fragment = true;
        return None;
    }
    let Some(rest) = packet.get(header_len..) else {
        h.truncated = true;
        return None;
    };
    // A total length below the header's own is damage: what follows the header is no transport
    // header (tshark: "Bogus IP length"), as with an IPv6 extension chain longer than its packet.
    let payload_len = h.ip_len?.checked_sub(header_len as u32)?;
    Some(Segment::new(rest, payload_len))
}

/// The IP length of a total length field `field`, `ip_len_past_frame` set by it.
#[inline(always)]
fn ip_len_of(
    h: &mut Headers,
    field: [u8; 2],
    packet: &[u8],
    uncaptured: Uncaptured,
) -> Option<u32> {
    // A total length of 0 is what a TSO/GRO or BIG TCP super-frame carries (each segment gets
    // its own on the wire): the packet is then the rest of the frame, as tshark presumes, if
    // that holds the fixed header (a frame that ends inside it has no length to give).
    let len = match u16::from_be_bytes(field) {
        0 => Some(uncaptured.on_wire(packet)).filter(|&n| n >= MIN_HEADER_LEN as u32)?,
        n => u32::from(n),
    };
    h.ip_len_past_frame = uncaptured.exceeded_by(packet, len);
    Some(len)
}

/// A header cut before its 20th byte keeps each field whose bytes were captured, as tshark
/// shows them and BPF loads them: the total length from 4 bytes on, the fragment offset from 8,
/// the protocol from 10, the source from 16. Off the common path: only a snaplen under 34 bytes
/// (Ethernet) comes here.
#[cold]
fn cut(h: &mut Headers, packet: &[u8], uncaptured: Uncaptured) {
    h.truncated = true;
    if let Some(field) = array::<2>(packet, 2) {
        h.ip_len = ip_len_of(h, field, packet, uncaptured);
    }
    if let Some(frag) = array::<2>(packet, 6) {
        h.fragment = u16::from_be_bytes(frag) & 0x1fff != 0;
    }
    h.ip_proto = packet.get(9).copied();
    h.src = array::<4>(packet, 12).map(|a| IpAddr::V4(Ipv4Addr::from(a)));
}
