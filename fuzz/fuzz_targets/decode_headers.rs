//! `wire::decode_frame` for every link type it knows (and an unknown one), on the packets of fuzzed
//! captures and on the raw input itself.
#![no_main]

use burstcore::wire::{self, linktype};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const LINKTYPES: [u16; 15] = [
    linktype::NULL,
    linktype::ETHERNET,
    linktype::RAW_DLT12,
    linktype::RAW,
    linktype::LOOP,
    linktype::LINUX_SLL,
    linktype::IPV4,
    linktype::IPV6,
    linktype::LINUX_SLL2,
    linktype::IEEE802_11,
    linktype::IEEE802_11_RADIOTAP,
    linktype::PPI,
    linktype::IEEE802_11_PRISM,
    linktype::IEEE802_11_AVS,
    147, // a user link type: unknown to the decoder
];

fn check(lt: u16, frame: &[u8], wire_len: u32) {
    let h = wire::decode_frame(lt, frame, wire_len);
    // The IP length is known wherever a payload length is (from the header, a jumbo option or
    // the frame on the wire), and the payload lies within it.
    if let Some(payload) = h.payload_len {
        let ip = h.ip_len.expect("a payload length without an IP length");
        assert!(
            payload <= ip,
            "payload {payload} larger than IP length {ip}"
        );
    }
    if h.unknown_link {
        assert!(h.ethertype.is_none() && h.src.is_none() && h.ip_len.is_none());
    }
    // A header cut by the snaplen gives each field once its bytes are there, as tshark does: a
    // source without its destination is such a cut (IPv4 and IPv6 put the source first), a
    // destination without its source never is.
    if h.dst.is_some() {
        assert!(h.src.is_some(), "destination address without source");
    }
    if h.sport.is_some() || h.dport.is_some() {
        assert!(h.ip_proto.is_some(), "ports without a transport protocol");
    }
    if let Some(qp) = h.roce_qp {
        assert_eq!(h.dport, Some(4791));
        assert!(qp < 1 << 24);
    }
    // Decoding borrows the frame: the same bytes decode the same way.
    assert_eq!(wire::decode_frame(lt, frame, wire_len), h);
}

fuzz_target!(|data: &[u8]| {
    // The raw input as a whole frame, and as a frame cut by a snaplen from a length on the wire
    // its last four bytes choose (the super-frames of TSO/GRO and BIG TCP).
    let cut = data.last_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b));
    for lt in LINKTYPES {
        check(lt, data, data.len() as u32);
        check(lt, data, cut);
    }
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(mut r) = common::open(data.to_vec(), common::options(0)) else {
        return;
    };
    while let Ok(Some(p)) = r.next_packet() {
        check(p.linktype, p.data, p.wire_len);
    }
});
