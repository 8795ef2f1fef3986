//! LINKTYPE_PPI (192): a Per-Packet Information header, then a frame of the link type its DLT
//! field names, read as that link type's frames are (as tshark reads them). Over 802.11 its
//! 802.11-Common field tells of the FCS, taken off as radiotap's is.

use super::{array, ieee802_11, linktype, Headers, Uncaptured};

/// The fixed header: version, flags, length (little-endian), DLT of what follows (likewise).
const FIXED: usize = 8;
/// Field header: type, length (both little-endian).
const FIELD_HEADER: usize = 4;
const FIELD_80211_COMMON: u16 = 2;
/// 802.11-Common: TSFT (8 bytes), then its flags (little-endian), bit 0 an FCS.
const COMMON_FLAGS_AT: usize = 8;
const FLAG_FCS: u16 = 0x0001;

#[inline(never)]
pub(super) fn decode<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: &mut Uncaptured,
) -> Option<&'a [u8]> {
    let Some(fixed) = array::<FIXED>(frame, 0) else {
        h.truncated = true;
        return None;
    };
    let len = usize::from(u16::from_le_bytes([fixed[2], fixed[3]]));
    let dlt = u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    if len < FIXED {
        return None;
    }
    let (Some(ppi), Some(rest)) = (frame.get(..len), frame.get(len..)) else {
        h.truncated = true;
        return None;
    };
    match u16::try_from(dlt) {
        Ok(linktype::IEEE802_11) => {
            let fcs = has_fcs(ppi);
            let rest = ieee802_11::without_fcs(rest, fcs, uncaptured);
            ieee802_11::data_frame(h, rest, false, *uncaptured)
        }
        // PPI inside PPI is no frame anyone writes; not following it keeps the walk flat.
        Ok(linktype::PPI) | Err(_) => None,
        Ok(inner) => {
            let packet = super::link(h, inner, rest, uncaptured);
            // The DLT names the frame's link type, not the capture's: one this decoder does
            // not know leaves the packet without a network layer, not the link unknown.
            h.unknown_link = false;
            packet
        }
    }
}

/// Whether the 802.11-Common field says an FCS ends the frame. Fields are type-length-value;
/// each takes at least its 4-byte header, so the walk ends with the PPI header at the latest.
fn has_fcs(ppi: &[u8]) -> bool {
    let mut at = FIXED;
    while let (Some(ty), Some(field_len)) = (le16(ppi, at), le16(ppi, at + 2)) {
        let data = at + FIELD_HEADER;
        if ty == FIELD_80211_COMMON {
            return le16(ppi, data + COMMON_FLAGS_AT).is_some_and(|f| f & FLAG_FCS != 0);
        }
        at = data + usize::from(field_len);
    }
    false
}

fn le16(data: &[u8], at: usize) -> Option<u16> {
    array::<2>(data, at).map(u16::from_le_bytes)
}
