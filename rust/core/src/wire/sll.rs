//! Linux "cooked" captures: SLL (LINKTYPE_LINUX_SLL, 16 bytes) and SLL2 (LINKTYPE_LINUX_SLL2,
//! 20 bytes). Their protocol field is an EtherType for ordinary interfaces; for netlink sockets it
//! is a netlink family instead, so those frames carry no network layer. Protocol 4 (ETH_P_802_2)
//! is an 802.2 LLC frame, read when it is SNAP as an 802.3 frame is (as tshark reads it).

use super::{be16, ethernet, Headers, Uncaptured};

pub const SLL_HEADER_LEN: usize = 16;
pub const SLL2_HEADER_LEN: usize = 20;
const ARPHRD_NETLINK: u16 = 824;
const LLC: u16 = 0x0004;

#[inline]
pub(super) fn decode_v1<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    // pkttype(2) hatype(2) halen(2) addr(8) protocol(2)
    cooked(
        h,
        be16(frame, 2),
        be16(frame, 14),
        frame.get(SLL_HEADER_LEN..),
        uncaptured,
    )
}

#[inline]
pub(super) fn decode_v2<'a>(
    h: &mut Headers,
    frame: &'a [u8],
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    // protocol(2) reserved(2) ifindex(4) hatype(2) pkttype(1) halen(1) addr(8)
    cooked(
        h,
        be16(frame, 8),
        be16(frame, 0),
        frame.get(SLL2_HEADER_LEN..),
        uncaptured,
    )
}

#[inline]
fn cooked<'a>(
    h: &mut Headers,
    hatype: Option<u16>,
    protocol: Option<u16>,
    rest: Option<&'a [u8]>,
    uncaptured: Uncaptured,
) -> Option<&'a [u8]> {
    let (Some(hatype), Some(protocol), Some(rest)) = (hatype, protocol, rest) else {
        h.truncated = true;
        return None;
    };
    if hatype == ARPHRD_NETLINK {
        return None;
    }
    if protocol == LLC {
        // No length field: the frame ends where it ends on the wire.
        return ethernet::snap(h, rest, uncaptured.0 > 0);
    }
    let (ty, payload) = ethernet::vlan_tags(h, protocol, rest)?;
    // `tcpdump -i any` on the Ethernet interface under a PPPoE link gives its sessions this way,
    // and MPLS the same (protocol 0x8847/0x8848, the label stack following).
    ethernet::network(h, ty, payload)
}
