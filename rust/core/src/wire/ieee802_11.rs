//! IEEE 802.11 (Wi-Fi) data frames: LINKTYPE_IEEE802_11 (105: the frame alone, without an FCS,
//! as tshark and libpcap presume), LINKTYPE_IEEE802_11_RADIOTAP (127: a radiotap header first,
//! whose flags tell whether an FCS ends the frame and whether padding follows the 802.11 header),
//! LINKTYPE_IEEE802_11_PRISM (119) and LINKTYPE_IEEE802_11_AVS (163), whose radio headers say
//! nothing of an FCS (none is presumed, as for 105); PPI (192) over 802.11 is [`super::ppi`]'s.
//! A data frame's body is LLC/SNAP, read as an 802.3 frame's is ([`ethernet::snap`]), after an
//! 802.11s Mesh Control field where the QoS Control field announces one; of an A-MSDU, the
//! first subframe's. Management and control frames, data frames without a body (Null, QoS Null,
//! CF-Ack, CF-Poll) and protected frames (whose body is encrypted) carry no network layer here,
//! nor in tshark without keys.

use super::{array, be16, ethernet, Headers, Uncaptured};

/// Frame Control, first byte: protocol version (bits 0-1) 0 and type (bits 2-3) 2, data.
const VERSION_AND_TYPE: u8 = 0x0f;
const DATA: u8 = 0x08;
/// Subtype bits (4-7) of data frames: no body (bit 2), QoS (bit 3).
const SUBTYPE_NO_DATA: u8 = 0x40;
const SUBTYPE_QOS: u8 = 0x80;
/// Frame Control, second byte.
const TO_DS: u8 = 0x01;
const FROM_DS: u8 = 0x02;
const PROTECTED: u8 = 0x40;
/// In a QoS data frame, an HT Control field follows the QoS Control field.
const ORDER: u8 = 0x80;
/// QoS Control, first byte: the body is an A-MSDU.
const AMSDU: u8 = 0x80;

/// QoS Control, second byte: a Mesh Control field starts the body (802.11s mesh data frames).
const MESH_CONTROL_PRESENT: u8 = 0x01;
/// Mesh Control: flags (its Address Extension Mode in bits 0-1, the others reserved), TTL,
/// sequence number, then 6 bytes per address the mode extends by.
const MESH_FLAGS_ADDRESS_EXTENSION: u8 = 0x03;
const MESH_CONTROL_LEN: usize = 6;
const MESH_ADDRESS_LEN: usize = 6;

/// Frame Control, Duration, three addresses, Sequence Control; a fourth address between two
/// distribution systems (To DS and From DS both set).
const HEADER_LEN: usize = 24;
const ADDR4_LEN: usize = 6;
const QOS_LEN: usize = 2;
const HT_CONTROL_LEN: usize = 4;
/// An A-MSDU subframe's header: destination, source, length of its MSDU (big-endian).
const AMSDU_SUBFRAME_LEN: usize = 14;

/// LINKTYPE_IEEE802_11: the network layer of a data frame, as [`super::link`] hands it on.
#[inline(never)]
pub(super) fn decode<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    data_frame(h, frame, false, uncaptured)
}

/// Radiotap's fixed part: version, padding, length (little-endian), first presence word.
const RADIOTAP_FIXED: usize = 8;
const PRESENT_TSFT: u32 = 1 << 0;
const PRESENT_FLAGS: u32 = 1 << 1;
/// Another presence word follows.
const PRESENT_EXT: u32 = 1 << 31;
const FLAG_FCS: u8 = 0x10;
const FLAG_DATAPAD: u8 = 0x20;
const FCS_LEN: u32 = 4;

/// LINKTYPE_IEEE802_11_RADIOTAP. The FCS its flags announce is the frame's last 4 bytes on the
/// wire: `uncaptured` loses those the capture did not hold, and the bytes handed on lose those
/// it held, so that the IP packet's length on the wire is told without them.
#[inline(never)]
pub(super) fn decode_radiotap<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: &mut Uncaptured,
) -> Option<&'a [u8]> {
    let Some(fixed) = array::<RADIOTAP_FIXED>(frame, 0) else {
        h.truncated = true;
        return None;
    };
    let len = usize::from(u16::from_le_bytes([fixed[2], fixed[3]]));
    if len < RADIOTAP_FIXED {
        return None;
    }
    let (Some(radiotap), Some(rest)) = (frame.get(..len), frame.get(len..)) else {
        h.truncated = true;
        return None;
    };
    let flags = radiotap_flags(radiotap);
    let rest = without_fcs(rest, flags & FLAG_FCS != 0, uncaptured);
    data_frame(h, rest, flags & FLAG_DATAPAD != 0, *uncaptured)
}

/// `frame` without the FCS that ends it on the wire, if `fcs`: `uncaptured` loses those of its
/// 4 bytes the capture did not hold, the bytes handed back lose those it held.
pub(super) fn without_fcs<'a>(frame: &'a [u8], fcs: bool, uncaptured: &mut Uncaptured) -> &'a [u8] {
    if !fcs {
        return frame;
    }
    let beyond = uncaptured.0.min(FCS_LEN);
    uncaptured.0 -= beyond;
    &frame[..frame.len().saturating_sub((FCS_LEN - beyond) as usize)]
}

/// The radiotap Flags field, 0 where the header has none. Fields follow the last presence word
/// (each with bit 31 set names one more), each aligned to its size from the header's start: the
/// TSFT (8 bytes) is the only one before Flags.
fn radiotap_flags(radiotap: &[u8]) -> u8 {
    let Some(present) = array::<4>(radiotap, 4).map(u32::from_le_bytes) else {
        return 0;
    };
    let mut at = RADIOTAP_FIXED;
    let mut word = present;
    // Each word takes 4 more bytes of the header: the walk ends with the header at the latest.
    while word & PRESENT_EXT != 0 {
        let Some(next) = array::<4>(radiotap, at) else {
            return 0;
        };
        word = u32::from_le_bytes(next);
        at += 4;
    }
    if present & PRESENT_FLAGS == 0 {
        return 0;
    }
    if present & PRESENT_TSFT != 0 {
        at = at.next_multiple_of(8) + 8;
    }
    radiotap.get(at).copied().unwrap_or(0)
}

/// The 802.11 header's length follows from its Frame Control: the Address 4 of a frame between
/// two distribution systems, a QoS data frame's QoS Control and its HT Control (when the Order
/// flag is set), and with radiotap's data-pad flag, padding to a multiple of 4 bytes.
pub(super) fn data_frame<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    datapad: bool,
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    let Some([fc, flags]) = array::<2>(frame, 0) else {
        h.truncated = true;
        return None;
    };
    if fc & VERSION_AND_TYPE != DATA || fc & SUBTYPE_NO_DATA != 0 || flags & PROTECTED != 0 {
        return None;
    }
    let mut len = HEADER_LEN;
    if flags & (TO_DS | FROM_DS) == TO_DS | FROM_DS {
        len += ADDR4_LEN;
    }
    let mut amsdu = false;
    let mut mesh = false;
    if fc & SUBTYPE_QOS != 0 {
        let Some([qos, qos_high]) = array::<QOS_LEN>(frame, len) else {
            h.truncated = true;
            return None;
        };
        amsdu = qos & AMSDU != 0;
        mesh = qos_high & MESH_CONTROL_PRESENT != 0 && flags & FROM_DS != 0 && !amsdu;
        len += QOS_LEN;
        if flags & ORDER != 0 {
            len += HT_CONTROL_LEN;
        }
    }
    if datapad {
        len = len.next_multiple_of(4);
    }
    let Some(mut body) = frame.get(len..) else {
        h.truncated = true;
        return None;
    };
    if mesh {
        body = without_mesh_control(h, body)?;
    }
    // The frame went on past the captured bytes: a short header in them is truncation.
    let cut = uncaptured.0 > 0;
    if !amsdu {
        return ethernet::snap(h, body, cut);
    }
    let (Some(msdu_len), Some(msdu)) = (be16(body, 12), body.get(AMSDU_SUBFRAME_LEN..)) else {
        h.truncated = true;
        return None;
    };
    let msdu_len = usize::from(msdu_len);
    let first = msdu.get(..msdu_len).unwrap_or(msdu);
    ethernet::snap(h, first, cut && first.len() < msdu_len)
}

/// The body of a QoS data frame whose QoS Control announces Mesh Control, without that field:
/// 6 bytes and 6 per address its Address Extension Mode extends by (0, 1 or 2). As tshark does,
/// the field is taken to be there only in a frame from a mesh station's distribution system
/// (From DS set) whose mesh flags' reserved bits are 0 and whose mode is not 3 (reserved); else
/// the bit is a non-mesh station's and the body is read as it stands. Nor is it looked for in
/// an A-MSDU, whose subframes carry it each (tshark reads no IP in those either).
fn without_mesh_control<'a>(h: &mut Headers, body: &'a [u8]) -> Option<&'a [u8]> {
    let Some(&flags) = body.first() else {
        h.truncated = true;
        return None;
    };
    let mode = flags & MESH_FLAGS_ADDRESS_EXTENSION;
    if flags & !MESH_FLAGS_ADDRESS_EXTENSION != 0 || mode == MESH_FLAGS_ADDRESS_EXTENSION {
        return Some(body);
    }
    let len = MESH_CONTROL_LEN + MESH_ADDRESS_LEN * usize::from(mode);
    let Some(rest) = body.get(len..) else {
        h.truncated = true;
        return None;
    };
    Some(rest)
}

/// The length of a Prism (wlan-ng) header: a message code, its length (which tshark ignores,
/// as this does), a device name and ten 12-byte items.
const PRISM_LEN: usize = 144;
/// The message codes of a Prism sniff frame, in either byte order.
const PRISM_MSGCODES: [u32; 2] = [0x44, 0x41];
/// The big-endian first word of an AVS header: its magic and version (1 or 2) in the low byte.
const AVS_MAGIC: u32 = 0x8021_1000;
const AVS_MAGIC_MASK: u32 = 0xffff_ff00;
/// AVS: version, then the header's length (big-endian).
const AVS_LEN_AT: usize = 4;

/// LINKTYPE_IEEE802_11_PRISM, read as tshark reads it: a Prism header when the first word is a
/// Prism message code in either byte order; else an AVS header when it is AVS's magic; else
/// the 802.11 frame itself (some drivers put a radio header on some frames only).
#[inline(never)]
pub(super) fn decode_prism<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    let Some(word) = array::<4>(frame, 0) else {
        return data_frame(h, frame, false, uncaptured);
    };
    if u32::from_be_bytes(word) & AVS_MAGIC_MASK == AVS_MAGIC {
        return decode_avs(h, frame, uncaptured);
    }
    let code = |w: u32| PRISM_MSGCODES.contains(&w);
    if !code(u32::from_le_bytes(word)) && !code(u32::from_be_bytes(word)) {
        return data_frame(h, frame, false, uncaptured);
    }
    let Some(rest) = frame.get(PRISM_LEN..) else {
        h.truncated = true;
        return None;
    };
    data_frame(h, rest, false, uncaptured)
}

/// LINKTYPE_IEEE802_11_AVS: the 802.11 frame follows after the length the AVS header gives
/// (its magic not checked, as tshark does not).
#[inline(never)]
pub(super) fn decode_avs<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    let Some(len) = array::<4>(frame, AVS_LEN_AT).map(u32::from_be_bytes) else {
        h.truncated = true;
        return None;
    };
    let Some(rest) = usize::try_from(len).ok().and_then(|len| frame.get(len..)) else {
        h.truncated = true;
        return None;
    };
    data_frame(h, rest, false, uncaptured)
}
