//! RoCEv2 (InfiniBand over UDP port 4791): the Base Transport Header names the operation and the
//! destination queue pair, which is what tells RDMA flows apart.

use super::{array, Headers, Segment};

pub const UDP_PORT: u16 = 4791;
pub const BTH_LEN: usize = 12;

/// `bth` is the UDP payload; `seg` the UDP segment it came from (for truncation).
#[inline]
pub(super) fn decode(h: &mut Headers, seg: &Segment<'_>, bth: &[u8]) {
    // opcode(1) flags(1) pkey(2) reserved(1) dest QP(3) ack/PSN(4)
    h.roce_opcode = bth.first().copied();
    h.roce_qp = array::<3>(bth, 5).map(|[a, b, c]| u32::from_be_bytes([0, a, b, c]));
    seg.check(h, super::udp::HEADER_LEN + BTH_LEN);
}
