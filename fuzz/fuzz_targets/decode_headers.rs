//! `wire::decode` for every link type it knows (and an unknown one), on the packets of fuzzed
//! captures and on the raw input itself.
#![no_main]

use burstcore::wire::{self, linktype};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const LINKTYPES: [u16; 10] = [
    linktype::NULL,
    linktype::ETHERNET,
    linktype::RAW_DLT12,
    linktype::RAW,
    linktype::LOOP,
    linktype::LINUX_SLL,
    linktype::IPV4,
    linktype::IPV6,
    linktype::LINUX_SLL2,
    147, // a user link type: unknown to the decoder
];

fn check(lt: u16, frame: &[u8]) {
    let h = wire::decode(lt, frame);
    // An IP length below the largest IPv4 header may be a TSO frame's 0 or damage: the UDP
    // length is then the only length there is, so the cap applies only to a usable IP length.
    if let (Some(ip), Some(payload)) = (h.ip_len.filter(|&n| n >= 60), h.payload_len) {
        assert!(
            payload <= ip,
            "payload {payload} larger than IP length {ip}"
        );
    }
    if h.unknown_link {
        assert!(h.ethertype.is_none() && h.src.is_none() && h.ip_len.is_none());
    }
    if h.src.is_some() {
        assert!(h.dst.is_some(), "source address without destination");
    }
    if h.sport.is_some() || h.dport.is_some() {
        assert!(h.ip_proto.is_some(), "ports without a transport protocol");
    }
    if let Some(qp) = h.roce_qp {
        assert_eq!(h.dport, Some(4791));
        assert!(qp < 1 << 24);
    }
    // Decoding borrows the frame: the same bytes decode the same way.
    assert_eq!(wire::decode(lt, frame), h);
}

fuzz_target!(|data: &[u8]| {
    for lt in LINKTYPES {
        check(lt, data);
    }
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(mut r) = common::open(data.to_vec(), common::options(0)) else {
        return;
    };
    while let Ok(Some(p)) = r.next_packet() {
        check(p.linktype, p.data);
    }
});
