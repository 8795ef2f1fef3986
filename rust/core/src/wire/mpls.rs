//! MPLS (RFC 3032): a label stack, then IP or an Ethernet pseudowire (RFC 4448), with or without
//! its control word (RFC 4385).

use super::ethernet::{self, vlan_tags, IEEE_802_3_MAX_LEN, MIN_ETHERTYPE};
use super::{be16, Headers, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// MPLS's EtherTypes (RFC 5332).
pub const UNICAST: u16 = 0x8847;
pub const MULTICAST: u16 = 0x8848;
const BOTTOM_OF_STACK: u8 = 0x01;
const ENTRY_LEN: usize = 4;
const CONTROL_WORD_LEN: usize = 4;

/// 4-byte label stack entries up to the one with the bottom-of-stack bit, then a payload whose
/// first nibble tells it, as tshark tells it by default: 4 is IPv4, 6 is IPv6 (read as if the
/// frame carried them directly, their EtherType in `ethertype`), 0 an Ethernet pseudowire (see
/// [`pseudowire`]). Anything else (1: a G-ACh channel header) carries no network layer here,
/// its EtherType left MPLS's. A stack the capture cut is truncation, as a cut VLAN tag is.
///
/// A pseudowire whose frame is MPLS again goes round the loop rather than back through
/// [`ethernet::network`], so that a frame of nested stacks costs no stack depth.
#[inline(never)]
pub(super) fn decode<'a>(h: &mut Headers, ty: u16, mut rest: &'a [u8]) -> Option<&'a [u8]> {
    loop {
        loop {
            // Each entry consumes 4 bytes: the walk ends with the frame at the latest.
            let (Some(entry), Some(after)) =
                (super::array::<ENTRY_LEN>(rest, 0), rest.get(ENTRY_LEN..))
            else {
                h.truncated = true;
                return None;
            };
            rest = after;
            if entry[2] & BOTTOM_OF_STACK != 0 {
                break;
            }
        }
        let Some(&first) = rest.first() else {
            h.truncated = true;
            return None;
        };
        match first >> 4 {
            4 => {
                h.ethertype = Some(ETHERTYPE_IPV4);
                return Some(rest);
            }
            6 => {
                h.ethertype = Some(ETHERTYPE_IPV6);
                return Some(rest);
            }
            0 => {}
            _ => {
                h.ethertype = Some(ty);
                return None;
            }
        }
        let frame = pseudowire(rest);
        let (Some(inner), Some(payload)) = (be16(frame, 12), frame.get(ethernet::HEADER_LEN..))
        else {
            h.truncated = true;
            return None;
        };
        let (inner, payload) = vlan_tags(h, inner, payload)?;
        let (inner, payload) = if inner < MIN_ETHERTYPE {
            ethernet::llc_type(h, inner, payload)?
        } else {
            (inner, payload)
        };
        if !matches!(inner, UNICAST | MULTICAST) {
            return ethernet::network(h, inner, payload);
        }
        rest = payload;
    }
}

/// The Ethernet frame of a pseudowire payload `pw` (first nibble 0): after a 4-byte control
/// word, unless the frame reads as Ethernet without one and not with one.
///
/// tshark decides by its manufacturer list (no control word when both MAC addresses' OUIs are
/// known to it, else one); without that list, burstcore decides by what follows the addresses:
/// an EtherType it reads on (IP whose version nibble agrees, a VLAN tag, MPLS, PPPoE) or an
/// 802.3 length with a SNAP header. Both agree on stations with assigned addresses; for
/// locally administered ones or a control word before a known-looking address they differ
/// (docs/metrics.md).
fn pseudowire(pw: &[u8]) -> &[u8] {
    let after_cw = pw.get(CONTROL_WORD_LEN..).unwrap_or(&[]);
    if reads_on(pw) && !reads_on(after_cw) {
        pw
    } else {
        after_cw
    }
}

/// Whether `frame` is an Ethernet frame whose network layer [`ethernet::network`] or an 802.3
/// frame's SNAP header would follow.
fn reads_on(frame: &[u8]) -> bool {
    let version = frame.get(ethernet::HEADER_LEN).map(|b| b >> 4);
    match be16(frame, 12) {
        Some(ETHERTYPE_IPV4) => version == Some(4),
        Some(ETHERTYPE_IPV6) => version == Some(6),
        Some(
            ethernet::TPID_8021Q
            | ethernet::TPID_8021AD
            | ethernet::TPID_QINQ
            | UNICAST
            | MULTICAST
            | ethernet::PPPOE_SESSION,
        ) => true,
        Some(len) if len <= IEEE_802_3_MAX_LEN => frame
            .get(ethernet::HEADER_LEN..)
            .is_some_and(|llc| llc.len() >= 3 && ethernet::is_snap(llc)),
        _ => false,
    }
}
