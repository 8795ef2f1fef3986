//! Header decoding, tolerant of truncation: whatever could be decoded is kept, the rest is `None`.
//!
//! The data path reads top to bottom: a link decoder ([`ethernet`] with [`mpls`], [`sll`],
//! [`null`], [`ieee802_11`], [`ppi`], raw IP) finds the network-layer EtherType and its bytes,
//! [`ipv4`] / [`ipv6`] find the transport protocol and its bytes, and [`tcp`] / [`udp`] (with
//! [`roce`] behind UDP 4791) finish the job.
//! Every step borrows from the frame: nothing is copied or allocated, and a short frame only
//! stops the walk early (setting [`Headers::truncated`]) instead of failing.

use std::net::IpAddr;

mod ethernet;
pub(crate) mod fcs;
mod ieee802_11;
mod ipv4;
mod ipv6;
pub mod linktype;
mod mpls;
mod null;
mod ppi;
mod roce;
mod sll;
mod tcp;
mod udp;

pub use linktype::linktype_name;

/// EtherTypes the network step understands.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// IP protocol numbers the transport step understands.
pub const IP_PROTO_TCP: u8 = 6;
/// UDP.
pub const IP_PROTO_UDP: u8 = 17;

/// Decoded header fields of one packet. All `None` when the link type is unknown or the frame is
/// too short; a truncated header never makes an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Headers {
    /// Outer and inner 802.1Q / 802.1ad VLAN ids (QinQ gives both).
    pub vlan: Option<u16>,
    /// The inner tag of QinQ.
    pub vlan_inner: Option<u16>,
    /// EtherType (or SLL protocol) of the network layer.
    pub ethertype: Option<u16>,
    /// Source address of the outermost IP header.
    pub src: Option<IpAddr>,
    /// Its destination address.
    pub dst: Option<IpAddr>,
    /// Transport protocol number (after IPv6 extension headers).
    pub ip_proto: Option<u8>,
    /// IPv4 total length, or IPv6 payload length + 40: from the header, not the captured bytes.
    /// Where the header's length is 0 (a TSO/GRO or BIG TCP super-frame, whose segments the
    /// NIC or the stack fills in), the IPv6 Jumbo Payload option's length + 40, else the rest
    /// of the frame on the wire from the IP header on (as tshark presumes for IPv4).
    pub ip_len: Option<u32>,
    /// TCP/UDP source port.
    pub sport: Option<u16>,
    /// TCP/UDP destination port.
    pub dport: Option<u16>,
    /// Transport payload length, from the IP length minus the IP and transport headers.
    pub payload_len: Option<u32>,
    /// The TCP flags byte (FIN 0x01 ... CWR 0x80).
    pub tcp_flags: Option<u8>,
    /// TCP sequence number (raw, not relative to the connection's first), when its 4 bytes
    /// were captured.
    pub tcp_seq: Option<u32>,
    /// RoCEv2 (UDP dport 4791) Base Transport Header: opcode and destination QP (24 bits).
    pub roce_opcode: Option<u8>,
    /// Its destination QP.
    pub roce_qp: Option<u32>,
    /// A non-first IP fragment (no transport header).
    pub fragment: bool,
    /// The IP length claims more bytes than the frame carried on the wire from the IP header on
    /// (damage: tshark's "exceeds framing length"). `ip_len` and `payload_len` keep the claim;
    /// a size taken from them is no size for this packet.
    pub ip_len_past_frame: bool,
    /// Decoding stopped because the captured bytes ended inside a header.
    pub truncated: bool,
    /// The link type is not one this decoder knows.
    pub unknown_link: bool,
}

crate::builders!([] Headers {
    vlan: Option<u16> => with_vlan,
    vlan_inner: Option<u16> => with_vlan_inner,
    ethertype: Option<u16> => with_ethertype,
    src: Option<IpAddr> => with_src,
    dst: Option<IpAddr> => with_dst,
    ip_proto: Option<u8> => with_ip_proto,
    ip_len: Option<u32> => with_ip_len,
    sport: Option<u16> => with_sport,
    dport: Option<u16> => with_dport,
    payload_len: Option<u32> => with_payload_len,
    tcp_flags: Option<u8> => with_tcp_flags,
    tcp_seq: Option<u32> => with_tcp_seq,
    roce_opcode: Option<u8> => with_roce_opcode,
    roce_qp: Option<u32> => with_roce_qp,
    fragment: bool => with_fragment,
    ip_len_past_frame: bool => with_ip_len_past_frame,
    truncated: bool => with_truncated,
    unknown_link: bool => with_unknown_link,
});

/// Decode the headers of a frame of the given LINKTYPE_*, captured whole (see
/// [`decode_frame`] for a frame cut by a snaplen).
///
/// `truncated` is set when the frame ends before a header the previous layer announced is
/// complete (including when none of it is present, e.g. an Ethernet frame of exactly 14 bytes
/// with EtherType IPv4). A frame that announces something this decoder does not parse (ARP,
/// LLC other than SNAP, an unknown address family) just stops: that is not truncation.
#[inline]
pub fn decode(linktype: u16, data: &[u8]) -> Headers {
    decode_frame(linktype, data, len_u32(data))
}

/// [`decode`] for a frame of `wire_len` bytes on the wire of which `data` was captured: the
/// wire length is what an IP header whose length field is 0 (TSO/GRO, BIG TCP) is measured
/// by, whatever the snaplen cut off.
#[inline]
pub fn decode_frame(linktype: u16, data: &[u8], wire_len: u32) -> Headers {
    let mut h = Headers::default();
    decode_into(&mut h, linktype, data, wire_len);
    h
}

fn len_u32(data: &[u8]) -> u32 {
    u32::try_from(data.len()).unwrap_or(u32::MAX)
}

/// The bytes of a frame on the wire past those captured: what tells the length on the wire of a
/// layer's bytes, which only an IP length of 0 needs (worked out then, off the common path).
#[derive(Clone, Copy)]
struct Uncaptured(u32);

impl Uncaptured {
    /// The length on the wire of `bytes`, the rest of the frame from some header on.
    #[inline]
    fn on_wire(self, bytes: &[u8]) -> u32 {
        len_u32(bytes).saturating_add(self.0)
    }

    /// Whether an IP length of `ip_len` claims more than the frame carried on the wire from
    /// the IP header (`packet`) on.
    #[inline]
    fn exceeded_by(self, packet: &[u8], ip_len: u32) -> bool {
        ip_len > self.on_wire(packet)
    }
}

/// [`decode_frame`] into an existing `Headers` (reset first). Filling a slot in place spares the
/// caller copying the whole struct out of a temporary just written field by field, a
/// store-to-load stall when headers are collected in bulk.
#[inline]
pub fn decode_into(h: &mut Headers, linktype: u16, data: &[u8], wire_len: u32) {
    *h = Headers::default();
    // Bytes on the wire past those captured (a record claiming fewer than it holds is damage:
    // the bytes are there). Every link decoder hands back the rest of the frame, so the
    // network layer's bytes on the wire are those captured plus these.
    let mut uncaptured = Uncaptured(wire_len.saturating_sub(len_u32(data)));
    if let Some(packet) = link(h, linktype, data, &mut uncaptured) {
        // A length field (PPPoE's, 802.3's, an A-MSDU subframe's) or an FCS that ends the
        // packet inside the captured bytes ends it on the wire there too.
        if packet.as_ptr_range().end < data.as_ptr_range().end {
            uncaptured = Uncaptured(0);
        }
        // Under the IPv4 EtherType the version nibble decides, as tshark does (an IPv6 packet
        // labelled 0x0800 is still IPv6); the IPv6 EtherType must carry version 6.
        let transport = match (h.ethertype, packet.first().map(|b| b >> 4)) {
            (Some(ETHERTYPE_IPV4), Some(6)) | (Some(ETHERTYPE_IPV6), Some(_)) => {
                ipv6::decode(h, packet, uncaptured)
            }
            (Some(ETHERTYPE_IPV4), Some(_)) => ipv4::decode(h, packet, uncaptured),
            (Some(ETHERTYPE_IPV4 | ETHERTYPE_IPV6), None) => {
                h.truncated = true;
                None
            }
            _ => None,
        };
        if let Some(segment) = transport {
            match h.ip_proto {
                Some(IP_PROTO_TCP) => tcp::decode(h, segment),
                Some(IP_PROTO_UDP) => udp::decode(h, segment),
                _ => {}
            }
        }
    }
}

/// The link step: the network layer's bytes (its EtherType in `h.ethertype`), `None` where
/// the frame carries none this decoder follows or the link type is unknown (`h.unknown_link`).
/// `uncaptured` loses what a trailer (an FCS) takes of the bytes past those captured.
#[inline(always)]
fn link<'a>(
    h: &mut Headers,
    linktype: u16,
    data: &'a [u8],
    uncaptured: &mut Uncaptured,
) -> Option<&'a [u8]> {
    match linktype {
        linktype::ETHERNET => ethernet::decode(h, data),
        linktype::LINUX_SLL => sll::decode_v1(h, data, *uncaptured),
        linktype::LINUX_SLL2 => sll::decode_v2(h, data, *uncaptured),
        linktype::RAW | linktype::RAW_DLT12 | linktype::RAW_DLT14 => raw_ip(h, data),
        linktype::IPV4 => with_ethertype(h, ETHERTYPE_IPV4, data),
        linktype::IPV6 => with_ethertype(h, ETHERTYPE_IPV6, data),
        linktype::NULL => null::decode_null(h, data),
        linktype::LOOP => null::decode_loop(h, data),
        _ => other_link(h, linktype, data, uncaptured),
    }
}

/// The link types whose frames are rarely measured in bulk, apart so that the common ones'
/// dispatch stays as it was.
#[inline(never)]
fn other_link<'a>(
    h: &mut Headers,
    linktype: u16,
    data: &'a [u8],
    uncaptured: &mut Uncaptured,
) -> Option<&'a [u8]> {
    match linktype {
        linktype::IEEE802_11 => ieee802_11::decode(h, data, *uncaptured),
        linktype::IEEE802_11_RADIOTAP => ieee802_11::decode_radiotap(h, data, uncaptured),
        linktype::IEEE802_11_PRISM => ieee802_11::decode_prism(h, data, *uncaptured),
        linktype::IEEE802_11_AVS => ieee802_11::decode_avs(h, data, *uncaptured),
        linktype::PPI => ppi::decode(h, data, uncaptured),
        _ => {
            h.unknown_link = true;
            None
        }
    }
}

/// The IP packet a frame carries (IPv4 or IPv6, from its first header byte on, as captured),
/// found as [`decode`] finds it: through VLAN tags, PPPoE, MPLS (and Ethernet pseudowires),
/// LLC/SNAP, 802.11 and the link types it knows. For what needs the header bytes themselves
/// rather than decoded fields (a fingerprint of the packet, see [`crate::analysis::shared`]).
pub fn ip_packet(linktype: u16, data: &[u8]) -> Option<&[u8]> {
    let mut h = Headers::default();
    let packet = link(&mut h, linktype, data, &mut Uncaptured(0))?;
    matches!(h.ethertype, Some(ETHERTYPE_IPV4 | ETHERTYPE_IPV6)).then_some(packet)
}

/// Largest frame a link type carries without offload (Ethernet: 1514 + 4 per VLAN tag), used to
/// flag TSO/GRO super-frames; `None` where no MTU makes sense.
///
/// The VLAN allowance is the caller's: it adds 4 bytes for each of [`Headers::vlan`] and
/// [`Headers::vlan_inner`] that is set. Ethernet sizes exclude the FCS, as captures mostly do.
pub fn link_mtu_frame(linktype: u16) -> Option<u32> {
    linktype::link_mtu_frame(linktype)
}

/// The IP payload handed from the network step to the transport step.
pub(crate) struct Segment<'a> {
    /// Captured bytes of the IP payload, cut to the IP length when that is shorter (Ethernet
    /// padding is not transport data).
    bytes: &'a [u8],
    /// IP payload length (from the IP length, see [`Headers::ip_len`]).
    len: u32,
    /// The capture ended before the IP payload did: a short transport header is truncation,
    /// not a malformed packet.
    cut: bool,
}

impl<'a> Segment<'a> {
    /// `rest` is everything captured after the IP header(s), `len` the IP payload length.
    #[inline]
    fn new(rest: &'a [u8], len: u32) -> Self {
        match rest.get(..len as usize) {
            Some(bytes) => Segment {
                bytes,
                len,
                cut: false,
            },
            None => Segment {
                bytes: rest,
                len,
                cut: true,
            },
        }
    }

    /// The source and destination ports, the first 4 bytes of TCP's and UDP's headers: as far as
    /// captured (a capture that ended between them keeps the source port, as BPF reads it), but
    /// neither where the IP length ends before both (damage; tshark reads neither).
    #[inline]
    fn ports(&self) -> (Option<u16>, Option<u16>) {
        if self.len < 4 {
            return (None, None);
        }
        (be16(self.bytes, 0), be16(self.bytes, 2))
    }

    /// Record truncation when the transport header needs `need` bytes of the segment and the
    /// capture ended before them.
    #[inline]
    fn check(&self, h: &mut Headers, need: usize) {
        if self.bytes.len() < need && self.cut {
            h.truncated = true;
        }
    }
}

#[inline]
fn with_ethertype<'a>(h: &mut Headers, ethertype: u16, data: &'a [u8]) -> Option<&'a [u8]> {
    h.ethertype = Some(ethertype);
    Some(data)
}

/// Raw IP (LINKTYPE_RAW, and the DLT_RAW values 12 and 14): the version nibble tells v4 from v6.
#[inline]
fn raw_ip<'a>(h: &mut Headers, data: &'a [u8]) -> Option<&'a [u8]> {
    let Some(&first) = data.first() else {
        h.truncated = true;
        return None;
    };
    match first >> 4 {
        4 => with_ethertype(h, ETHERTYPE_IPV4, data),
        6 => with_ethertype(h, ETHERTYPE_IPV6, data),
        _ => None,
    }
}

#[inline(always)]
fn be16(data: &[u8], at: usize) -> Option<u16> {
    let b = data.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// `data[at..at + N]` as an array, or `None` when the frame is shorter.
#[inline(always)]
fn array<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
    data.get(at..at.checked_add(N)?)?.try_into().ok()
}
