//! Header decoding, tolerant of truncation: whatever could be decoded is kept, the rest is `None`.
//! CONTRACT (filled in by the wire work).

use std::net::IpAddr;

/// Decoded header fields of one packet. All `None` when the link type is unknown or the frame is
/// too short; a truncated header never makes an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers {
    /// Outer and inner 802.1Q / 802.1ad VLAN ids (QinQ gives both).
    pub vlan: Option<u16>,
    pub vlan_inner: Option<u16>,
    /// EtherType (or SLL protocol) of the network layer.
    pub ethertype: Option<u16>,
    pub src: Option<IpAddr>,
    pub dst: Option<IpAddr>,
    /// Transport protocol number (after IPv6 extension headers).
    pub ip_proto: Option<u8>,
    /// IPv4 total length, or IPv6 payload length + 40: from the header, not the captured bytes.
    pub ip_len: Option<u32>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    /// Transport payload length, from the IP length minus the IP and transport headers.
    pub payload_len: Option<u32>,
    pub tcp_flags: Option<u8>,
    /// RoCEv2 (UDP dport 4791) Base Transport Header: opcode and destination QP (24 bits).
    pub roce_opcode: Option<u8>,
    pub roce_qp: Option<u32>,
    /// A non-first IP fragment (no transport header).
    pub fragment: bool,
    /// Decoding stopped because the captured bytes ended inside a header.
    pub truncated: bool,
    /// The link type is not one this decoder knows.
    pub unknown_link: bool,
}

/// Decode the headers of a frame of the given LINKTYPE_*.
pub fn decode(linktype: u16, data: &[u8]) -> Headers {
    let _ = (linktype, data);
    todo!()
}

/// Largest frame a link type carries without offload (Ethernet: 1514 + 4 per VLAN tag), used to
/// flag TSO/GRO super-frames; `None` where no MTU makes sense.
pub fn link_mtu_frame(linktype: u16) -> Option<u32> {
    let _ = linktype;
    todo!()
}
