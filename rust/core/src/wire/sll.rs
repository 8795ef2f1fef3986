//! Linux "cooked" captures: SLL (LINKTYPE_LINUX_SLL, 16 bytes) and SLL2 (LINKTYPE_LINUX_SLL2,
//! 20 bytes). Their protocol field is an EtherType for ordinary interfaces; for netlink sockets it
//! is a netlink family instead, so those frames carry no network layer.

use super::{be16, ethernet, Headers};

pub const SLL_HEADER_LEN: usize = 16;
pub const SLL2_HEADER_LEN: usize = 20;
const ARPHRD_NETLINK: u16 = 824;

#[inline]
pub(super) fn decode_v1<'a>(h: &mut Headers, frame: &'a [u8]) -> Option<&'a [u8]> {
    // pkttype(2) hatype(2) halen(2) addr(8) protocol(2)
    cooked(
        h,
        be16(frame, 2),
        be16(frame, 14),
        frame.get(SLL_HEADER_LEN..),
    )
}

#[inline]
pub(super) fn decode_v2<'a>(h: &mut Headers, frame: &'a [u8]) -> Option<&'a [u8]> {
    // protocol(2) reserved(2) ifindex(4) hatype(2) pkttype(1) halen(1) addr(8)
    cooked(
        h,
        be16(frame, 8),
        be16(frame, 0),
        frame.get(SLL2_HEADER_LEN..),
    )
}

#[inline]
fn cooked<'a>(
    h: &mut Headers,
    hatype: Option<u16>,
    protocol: Option<u16>,
    rest: Option<&'a [u8]>,
) -> Option<&'a [u8]> {
    let (Some(hatype), Some(protocol), Some(rest)) = (hatype, protocol, rest) else {
        h.truncated = true;
        return None;
    };
    if hatype == ARPHRD_NETLINK {
        return None;
    }
    let (ty, payload) = ethernet::vlan_tags(h, protocol, rest)?;
    // `tcpdump -i any` on the Ethernet interface under a PPPoE link gives its sessions this way,
    // and MPLS the same (protocol 0x8847/0x8848, the label stack following).
    ethernet::network(h, ty, payload)
}
