//! Ethernet II with any stack of 802.1Q / 802.1ad / 0x9100 VLAN tags, and what an EtherType can
//! put between them and IP: a PPPoE session or an MPLS label stack.
//!
//! A type field of 1500 or less is an IEEE 802.3 length: the frame carries LLC, followed (as
//! tshark follows it) only when it is SNAP with an EtherType, read from then on as Ethernet II.
//! MPLS label stacks and the pseudowires under them are [`mpls`]'s.

use super::{be16, mpls, Headers};

pub const HEADER_LEN: usize = 14;
pub const MIN_ETHERTYPE: u16 = 0x0600;
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
        return llc(h, ty, payload);
    }
    network(h, ty, payload)
}

/// The network layer under EtherType `ty` (VLAN tags already skipped). PPPoE and MPLS share the
/// 0x88 high byte, so IP and the other common types pay one test for both, as they paid for
/// PPPoE alone.
#[inline]
pub(super) fn network<'a>(h: &mut Headers, ty: u16, payload: &'a [u8]) -> Option<&'a [u8]> {
    if ty >> 8 == 0x88 {
        return shim(h, ty, payload);
    }
    h.ethertype = Some(ty);
    Some(payload)
}

#[inline(never)]
fn shim<'a>(h: &mut Headers, ty: u16, payload: &'a [u8]) -> Option<&'a [u8]> {
    match ty {
        PPPOE_SESSION => pppoe_session(h, payload),
        mpls::UNICAST | mpls::MULTICAST => mpls::decode(h, ty, payload),
        _ => {
            h.ethertype = Some(ty);
            Some(payload)
        }
    }
}

/// IEEE 802.3 with a length field `len`: SNAP (DSAP and SSAP 0xAA, UI control 0x03) whose OUI is
/// 00-00-00 (RFC 1042) or 00-00-F8 (Cisco's, which tshark reads the same way) carries an
/// EtherType, read on as Ethernet II's (tags, PPPoE and MPLS included). Other LLC (spanning
/// tree, IPX, NetBIOS, SNAP of other OUIs) carries no network layer here. As tshark does, the
/// bytes are those the length counts (the padding of a short frame is not the packet's); a
/// length from 1501 to 1535 is neither a length nor an EtherType, and is not read.
pub const IEEE_802_3_MAX_LEN: u16 = 1500;
const SNAP_LEN: usize = 8;
const SNAP_HEAD: [u8; 5] = [0xaa, 0xaa, 0x03, 0x00, 0x00];

#[inline(never)]
fn llc<'a>(h: &mut Headers, len: u16, payload: &'a [u8]) -> Option<&'a [u8]> {
    let (ty, rest) = llc_type(h, len, payload)?;
    network(h, ty, rest)
}

/// The EtherType (tags skipped) and its bytes under an 802.3 frame's LLC, as [`llc`] reads it.
pub(super) fn llc_type<'a>(
    h: &mut Headers,
    len: u16,
    payload: &'a [u8],
) -> Option<(u16, &'a [u8])> {
    if len > IEEE_802_3_MAX_LEN {
        return None;
    }
    let len = usize::from(len);
    let llc = payload.get(..len).unwrap_or(payload);
    snap_type(h, llc, llc.len() < len)
}

/// The network layer under an LLC header `llc` (its bytes to the end of the frame or of the
/// length that counts them), read when it is SNAP as [`llc`] says; `cut` tells that the capture
/// ended before those bytes did, so that a short SNAP header is truncation, not damage. 802.11
/// data frames and Linux cooked captures' LLC protocol carry the same header.
pub(super) fn snap<'a>(h: &mut Headers, llc: &'a [u8], cut: bool) -> Option<&'a [u8]> {
    let (ty, rest) = snap_type(h, llc, cut)?;
    network(h, ty, rest)
}

/// The EtherType (tags skipped) and its bytes under a SNAP header, as [`snap`] reads it.
fn snap_type<'a>(h: &mut Headers, llc: &'a [u8], cut: bool) -> Option<(u16, &'a [u8])> {
    let Some(ty) = super::be16(llc, SNAP_LEN - 2) else {
        if cut && is_snap(llc) {
            h.truncated = true;
        }
        return None;
    };
    if !is_snap(llc) {
        return None;
    }
    let (ty, rest) = vlan_tags(h, ty, &llc[SNAP_LEN..])?;
    if ty < MIN_ETHERTYPE {
        return None;
    }
    Some((ty, rest))
}

/// Whether `b` starts as a SNAP header with an EtherType does (as much of it as is there).
pub(super) fn is_snap(b: &[u8]) -> bool {
    b.iter().zip(SNAP_HEAD).all(|(&x, y)| x == y)
        && b.get(5).is_none_or(|&oui| oui == 0x00 || oui == 0xf8)
}

/// PPPoE session stage (RFC 2516), as DSL access links carry IP: a 6-byte PPPoE header, then
/// PPP's 2-byte protocol. IP inside is read as if the frame carried it directly (its EtherType
/// in `ethertype`); other PPP protocols (LCP, IPCP, ...) carry no network layer. As tshark does,
/// the bytes are those the PPPoE length counts (from the PPP protocol on): a length shorter than
/// the IP packet cuts it (one that ends inside the IP header leaves the fields before it), one below 2
/// leaves no PPP protocol, and a longer one than the frame changes nothing.
pub const PPPOE_SESSION: u16 = 0x8864;
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;

#[inline]
pub(super) fn pppoe_session<'a>(h: &mut Headers, rest: &'a [u8]) -> Option<&'a [u8]> {
    let (Some(len), Some(protocol), Some(packet)) = (be16(rest, 4), be16(rest, 6), rest.get(8..))
    else {
        h.truncated = true;
        return None;
    };
    let ty = match (len, protocol) {
        (0 | 1, _) => None,
        (_, PPP_IPV4) => Some(super::ETHERTYPE_IPV4),
        (_, PPP_IPV6) => Some(super::ETHERTYPE_IPV6),
        _ => None,
    };
    h.ethertype = Some(ty.unwrap_or(PPPOE_SESSION));
    ty?;
    Some(packet.get(..usize::from(len) - 2).unwrap_or(packet))
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
