//! IPv6 (RFC 8200): addresses, payload length, and the extension-header chain up to the
//! transport protocol.

use std::net::{IpAddr, Ipv6Addr};

use super::{array, be16, Headers, Segment, Uncaptured};

pub const HEADER_LEN: usize = 40;

const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const AUTH: u8 = 51;
const DEST_OPTS: u8 = 60;
const SHIM6: u8 = 140;

/// The headers walked through to the transport protocol. The Mobility (135) and HIP (139)
/// headers, though IANA lists them among the extension headers, are the packet's last: their
/// next-header field is 59 (RFC 6275, RFC 7401), and a message of their own is what they carry,
/// as tshark reads them (`ip_proto` names them). A Shim6 header (140) carries a payload on, as
/// tshark reads it.
#[inline(always)]
fn is_extension(next: u8) -> bool {
    matches!(
        next,
        HOP_BY_HOP | ROUTING | FRAGMENT | AUTH | DEST_OPTS | SHIM6
    )
}

/// Hop-by-Hop option type of a Jumbo Payload (RFC 2675), and its data length.
const JUMBO: u8 = 0xc2;
const JUMBO_LEN: u8 = 4;

/// Fill in the IPv6 fields and hand back the transport segment. ESP (50) and "no next header"
/// (59) end the chain like any transport protocol: `ip_proto` says which. `uncaptured` tells the
/// frame's length on the wire from the IP header on.
#[inline]
pub(super) fn decode<'a>(
    h: &mut Headers,
    packet: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<Segment<'a>> {
    // Another version is not IPv6, however many bytes follow (an IPv4 packet of 30 bytes under
    // the IPv6 EtherType is not one cut short).
    if packet.first().is_some_and(|b| b >> 4 != 6) {
        return None;
    }
    let Some(fixed) = array::<HEADER_LEN>(packet, 0) else {
        cut(h, packet, uncaptured);
        return None;
    };
    let payload_len = u16::from_be_bytes([fixed[4], fixed[5]]);
    // 40 bytes captured: the rest of the frame, if that is the length, is no shorter.
    let mut ip_len = ip_len_of(h, payload_len, packet, uncaptured)?;
    h.ip_len = Some(ip_len);
    h.src = array::<16>(&fixed, 8).map(|a| IpAddr::V6(Ipv6Addr::from(a)));
    h.dst = array::<16>(&fixed, 24).map(|a| IpAddr::V6(Ipv6Addr::from(a)));

    // Every extension header moves `at` forward by at least 8 bytes and must start inside the
    // captured bytes, so the walk ends within packet.len() / 8 steps.
    let mut next = fixed[6];
    let mut at = HEADER_LEN;
    while is_extension(next) {
        let ext_len = match next {
            AUTH => packet.get(at + 1).map(|&n| (usize::from(n) + 2) * 4),
            FRAGMENT => be16(packet, at + 2).map(|_| 8),
            _ => packet.get(at + 1).map(|&n| (usize::from(n) + 1) * 8),
        };
        let after = packet.get(at).copied();
        let Some(ext_len) = ext_len else {
            h.truncated = true;
            // The first byte alone still names the transport if the chain ends here.
            h.ip_proto = after.filter(|&n| !is_extension(n));
            return None;
        };
        // Present: ext_len needed later bytes.
        let after = after.unwrap_or_default();
        // Fragment offset is in the upper 13 bits; a non-first fragment has no transport header.
        if next == FRAGMENT && be16(packet, at + 2).unwrap_or_default() >> 3 != 0 {
            h.ip_proto = Some(after);
            h.fragment = true;
            return None;
        }
        if next == HOP_BY_HOP && at == HEADER_LEN && payload_len == 0 {
            let options = packet.get(at + 2..at + ext_len).unwrap_or_default();
            if let Some(jumbo) = jumbo_payload(options) {
                ip_len = jumbo.saturating_add(HEADER_LEN as u32);
                h.ip_len = Some(ip_len);
                h.ip_len_past_frame = uncaptured.exceeded_by(packet, ip_len);
            }
        }
        next = after;
        at += ext_len;
    }
    h.ip_proto = Some(next);
    // A chain that runs past the IP length was walked through bytes that are not this packet's
    // (padding, or damage): what follows it is no transport header, and no payload is left.
    let payload = ip_len.checked_sub(u32::try_from(at).ok()?)?;
    let Some(rest) = packet.get(at..) else {
        h.truncated = true;
        return None;
    };
    Some(Segment::new(rest, payload))
}

/// The IP length of a payload length field `payload_len`, `ip_len_past_frame` set by it.
#[inline(always)]
fn ip_len_of(
    h: &mut Headers,
    payload_len: u16,
    packet: &[u8],
    uncaptured: Uncaptured,
) -> Option<u32> {
    // A payload length of 0 is a jumbogram, whose Jumbo Payload option (see `decode`) says how
    // long it is, or a TSO/GRO or BIG TCP super-frame (each segment gets its own length on the
    // wire): the packet is then the rest of the frame, as for IPv4's total length 0, if that
    // holds the fixed header (a frame that ends inside it has no length to give).
    let len = match payload_len {
        0 => Some(uncaptured.on_wire(packet)).filter(|&n| n >= HEADER_LEN as u32)?,
        n => u32::from(n) + HEADER_LEN as u32,
    };
    h.ip_len_past_frame = uncaptured.exceeded_by(packet, len);
    Some(len)
}

/// A header cut before its 40th byte keeps each field whose bytes were captured, as tshark
/// shows them: the payload length and the protocol once the Next Header byte is there (the
/// protocol only where it is no extension header, whose chain cannot be followed), the source
/// from 24 bytes on. Off the common path: only a snaplen under 54 bytes (Ethernet) comes here.
#[cold]
fn cut(h: &mut Headers, packet: &[u8], uncaptured: Uncaptured) {
    h.truncated = true;
    let (Some(len), Some(&next)) = (be16(packet, 4), packet.get(6)) else {
        return;
    };
    h.ip_len = ip_len_of(h, len, packet, uncaptured);
    h.ip_proto = (!is_extension(next)).then_some(next);
    h.src = array::<16>(packet, 8).map(|a| IpAddr::V6(Ipv6Addr::from(a)));
}

/// The length a Jumbo Payload option among the Hop-by-Hop `options` gives (RFC 2675: the
/// packet's length after the IPv6 header), if there is one. Options are type-length-value,
/// but for Pad1, a lone zero byte.
fn jumbo_payload(mut options: &[u8]) -> Option<u32> {
    while let [kind, rest @ ..] = options {
        if *kind == 0 {
            options = rest;
            continue;
        }
        let [len, data @ ..] = rest else {
            return None;
        };
        if *kind == JUMBO && *len == JUMBO_LEN {
            return array::<4>(data, 0).map(u32::from_be_bytes);
        }
        options = data.get(usize::from(*len)..)?;
    }
    None
}
