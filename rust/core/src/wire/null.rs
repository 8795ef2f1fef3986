//! BSD loopback encapsulations: a 4-byte address family before the IP packet.
//!
//! LINKTYPE_NULL stores it in the capturing host's byte order, which the file does not record:
//! real families are small, so a value with its upper half set must be the other byte order.
//! LINKTYPE_LOOP (OpenBSD) always uses network byte order. IPv6's family differs per OS
//! (24 NetBSD/OpenBSD, 28 FreeBSD, 30 Darwin); all three are accepted.

use super::{array, Headers, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

pub const HEADER_LEN: usize = 4;

#[inline]
pub(super) fn decode_null<'a>(h: &mut Headers, frame: &'a [u8]) -> Option<&'a [u8]> {
    let Some(af) = array::<4>(frame, 0) else {
        h.truncated = true;
        return None;
    };
    let le = u32::from_le_bytes(af);
    let family_or_swapped = if le > 0xffff { le.swap_bytes() } else { le };
    if let Some(packet) = family(h, family_or_swapped, frame) {
        return Some(packet);
    }
    // Some writers put an Ethertype in the header's last two bytes instead (tshark reads it so:
    // pcapplusplus's null_loopback.pcap has 0f 00 08 00); taken unless the packet's IP version
    // disagrees (a capture cut right after the header shows none), as no family reads that way.
    let ethertype = u16::from_be_bytes([af[2], af[3]]);
    let version = frame.get(HEADER_LEN).map(|b| b >> 4);
    match (ethertype, version) {
        (ETHERTYPE_IPV4, None | Some(4)) | (ETHERTYPE_IPV6, None | Some(6)) => {
            h.ethertype = Some(ethertype);
            frame.get(HEADER_LEN..)
        }
        _ => None,
    }
}

#[inline]
pub(super) fn decode_loop<'a>(h: &mut Headers, frame: &'a [u8]) -> Option<&'a [u8]> {
    let Some(af) = array::<4>(frame, 0) else {
        h.truncated = true;
        return None;
    };
    family(h, u32::from_be_bytes(af), frame)
}

#[inline]
fn family<'a>(h: &mut Headers, af: u32, frame: &'a [u8]) -> Option<&'a [u8]> {
    h.ethertype = match af {
        2 => Some(ETHERTYPE_IPV4),
        24 | 28 | 30 => Some(ETHERTYPE_IPV6),
        _ => None,
    };
    h.ethertype?;
    frame.get(HEADER_LEN..)
}
