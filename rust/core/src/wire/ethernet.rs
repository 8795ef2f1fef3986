//! Ethernet II with any stack of 802.1Q / 802.1ad / 0x9100 VLAN tags.
//!
//! A type field below 0x0600 is an IEEE 802.3 length: the frame carries LLC (or SNAP), which this
//! decoder does not follow, so it yields no network layer and no EtherType.

use super::{be16, Headers};

pub const HEADER_LEN: usize = 14;
const MIN_ETHERTYPE: u16 = 0x0600;
pub const TPID_8021Q: u16 = 0x8100;
pub const TPID_8021AD: u16 = 0x88a8;
pub const TPID_QINQ: u16 = 0x9100;

#[inline]
pub(super) fn decode<'a>(h: &mut Headers, frame: &'a [u8]) -> Option<&'a [u8]> {
    let (Some(ty), Some(rest)) = (be16(frame, 12), frame.get(HEADER_LEN..)) else {
        h.truncated = true;
        return None;
    };
    let (ty, payload) = vlan_tags(h, ty, rest)?;
    if ty < MIN_ETHERTYPE {
        return None;
    }
    if ty == PPPOE_SESSION {
        return pppoe_session(h, payload);
    }
    h.ethertype = Some(ty);
    Some(payload)
}

/// PPPoE session stage (RFC 2516), as DSL access links carry IP: a 6-byte PPPoE header, then
/// PPP's 2-byte protocol. IP inside is read as if the frame carried it directly (its EtherType
/// in `ethertype`); other PPP protocols (LCP, IPCP, ...) carry no network layer.
pub const PPPOE_SESSION: u16 = 0x8864;
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;

#[inline]
pub(super) fn pppoe_session<'a>(h: &mut Headers, rest: &'a [u8]) -> Option<&'a [u8]> {
    let (Some(protocol), Some(packet)) = (be16(rest, 6), rest.get(8..)) else {
        h.truncated = true;
        return None;
    };
    h.ethertype = Some(match protocol {
        PPP_IPV4 => super::ETHERTYPE_IPV4,
        PPP_IPV6 => super::ETHERTYPE_IPV6,
        _ => {
            h.ethertype = Some(PPPOE_SESSION);
            return None;
        }
    });
    Some(packet)
}

/// Skip VLAN tags starting at `rest` (the bytes after a type field `ty`), keeping the first
/// (outer) id in `vlan` and the second in `vlan_inner`; returns the type and payload after them.
#[inline]
pub(super) fn vlan_tags<'a>(
    h: &mut Headers,
    mut ty: u16,
    mut rest: &'a [u8],
) -> Option<(u16, &'a [u8])> {
    while matches!(ty, TPID_8021Q | TPID_8021AD | TPID_QINQ) {
        let Some(tci) = be16(rest, 0) else {
            h.truncated = true;
            return None;
        };
        let id = Some(tci & 0x0fff);
        if h.vlan.is_none() {
            h.vlan = id;
        } else if h.vlan_inner.is_none() {
            h.vlan_inner = id;
        }
        let (Some(next), Some(after)) = (be16(rest, 2), rest.get(4..)) else {
            h.truncated = true;
            return None;
        };
        ty = next;
        rest = after;
    }
    Some((ty, rest))
}
