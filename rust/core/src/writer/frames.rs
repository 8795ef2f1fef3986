//! Ethernet II / IPv4 / TCP frames with consistent headers, to give written packets real contents.
//!
//! The TCP header carries the 12-byte timestamps option as Linux sends it, so a full-size frame is
//! 1514 bytes with a 1448-byte payload and a pure ACK is 66 bytes. The IPv4 header checksum is
//! computed; the TCP checksum is left zero (as with checksum offload), and the payload is zeros.

use crate::error::{Error, Result};
use std::net::Ipv4Addr;

/// Ethernet II header.
pub const ETHERNET_LEN: usize = 14;
/// IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// 20 bytes of TCP header, then NOP, NOP, timestamps (kind 8, length 10).
pub const TCP_LEN: usize = 32;
/// Headers of every frame built here; also the smallest frame (a pure ACK).
pub const HEADER_LEN: usize = ETHERNET_LEN + IPV4_LEN + TCP_LEN;
/// Largest frame whose IPv4 total length fits 16 bits.
pub const MAX_WIRE_LEN: u32 = (ETHERNET_LEN + 0xFFFF) as u32;

/// TCP flag bits, as the header's flags byte holds them.
pub mod tcp_flags {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// The acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
}

/// Locally administered MAC address of host `host`: 02:00:00:00:hh:ll.
pub fn host_mac(host: u16) -> [u8; 6] {
    let [hi, lo] = host.to_be_bytes();
    [0x02, 0, 0, 0, hi, lo]
}

/// IPv4 address of host `host`: 10.0.0.1 for host 0, counting up (10.0.1.0 after 10.0.0.255).
pub fn host_ipv4(host: u16) -> Ipv4Addr {
    let [_, b, c, d] = (u32::from(host) + 1).to_be_bytes();
    Ipv4Addr::new(10, b, c, d)
}

/// One TCP segment's addressing and header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    /// Ethernet source.
    pub src_mac: [u8; 6],
    /// Ethernet destination.
    pub dst_mac: [u8; 6],
    /// IPv4 source.
    pub src_ip: Ipv4Addr,
    /// IPv4 destination.
    pub dst_ip: Ipv4Addr,
    /// TCP source port.
    pub src_port: u16,
    /// TCP destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flags ([`tcp_flags`]).
    pub flags: u8,
    /// Receive window.
    pub window: u16,
    /// Timestamps option: the sender's clock.
    pub ts_val: u32,
    /// Timestamps option: the echoed clock.
    pub ts_ecr: u32,
}

impl TcpSegment {
    /// The segment between two hosts of [`host_mac`] / [`host_ipv4`], with zero sequence numbers.
    pub fn between_hosts(src: u16, dst: u16, src_port: u16, dst_port: u16) -> Self {
        TcpSegment {
            src_mac: host_mac(src),
            dst_mac: host_mac(dst),
            src_ip: host_ipv4(src),
            dst_ip: host_ipv4(dst),
            src_port,
            dst_port,
            seq: 0,
            ack: 0,
            flags: tcp_flags::ACK,
            window: 0xFFFF,
            ts_val: 0,
            ts_ecr: 0,
        }
    }

    /// TCP payload bytes of a frame of `wire_len` bytes.
    pub fn payload_len(wire_len: u32) -> Result<u32> {
        if !(HEADER_LEN as u32..=MAX_WIRE_LEN).contains(&wire_len) {
            return Err(Error::invalid(format!(
                "an Ethernet/IPv4/TCP frame is {HEADER_LEN}..={MAX_WIRE_LEN} bytes, not {wire_len}"
            )));
        }
        Ok(wire_len - HEADER_LEN as u32)
    }

    /// The headers of a frame that is `wire_len` bytes long on the wire.
    pub fn header(&self, wire_len: u32) -> Result<[u8; HEADER_LEN]> {
        Self::payload_len(wire_len)?;
        let mut h = [0u8; HEADER_LEN];
        // Ethernet II
        h[0..6].copy_from_slice(&self.dst_mac);
        h[6..12].copy_from_slice(&self.src_mac);
        h[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        // IPv4: no options, DF, TTL 64, protocol TCP
        let ip_total = (wire_len - ETHERNET_LEN as u32) as u16; // bounded by MAX_WIRE_LEN
        let ip = &mut h[ETHERNET_LEN..ETHERNET_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
        ip[6] = 0x40;
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&self.src_ip.octets());
        ip[16..20].copy_from_slice(&self.dst_ip.octets());
        let checksum = ipv4_checksum(ip);
        ip[10..12].copy_from_slice(&checksum.to_be_bytes());
        // TCP with NOP, NOP, timestamps
        let tcp = &mut h[ETHERNET_LEN + IPV4_LEN..];
        tcp[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        tcp[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        tcp[4..8].copy_from_slice(&self.seq.to_be_bytes());
        tcp[8..12].copy_from_slice(&self.ack.to_be_bytes());
        tcp[12] = ((TCP_LEN / 4) as u8) << 4;
        tcp[13] = self.flags;
        tcp[14..16].copy_from_slice(&self.window.to_be_bytes());
        tcp[20..24].copy_from_slice(&[1, 1, 8, 10]);
        tcp[24..28].copy_from_slice(&self.ts_val.to_be_bytes());
        tcp[28..32].copy_from_slice(&self.ts_ecr.to_be_bytes());
        Ok(h)
    }

    /// Replace `out` by the first `snaplen` bytes of the frame (all of it if `snaplen` is 0).
    /// Reuses `out`'s allocation.
    pub fn write_frame(&self, wire_len: u32, snaplen: u32, out: &mut Vec<u8>) -> Result<()> {
        let header = self.header(wire_len)?;
        let cap = match snaplen {
            0 => wire_len,
            s => s.min(wire_len),
        } as usize;
        out.clear();
        out.extend_from_slice(header.get(..cap).unwrap_or(&header));
        out.resize(cap, 0);
        Ok(())
    }
}

/// RFC 791 header checksum (the checksum field must be zero when called).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in header.chunks(2) {
        let word = match pair {
            [a, b] => u16::from_be_bytes([*a, *b]),
            [a] => u16::from_be_bytes([*a, 0]),
            _ => 0,
        };
        sum += u32::from(word);
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_consistent() {
        let mut seg = TcpSegment::between_hosts(0, 7, 40000, 5000);
        seg.seq = 0x01020304;
        let mut out = Vec::new();
        seg.write_frame(1514, 0, &mut out).unwrap();
        assert_eq!(out.len(), 1514);
        assert_eq!(&out[12..14], &[0x08, 0x00]);
        assert_eq!(u16::from_be_bytes([out[16], out[17]]), 1500);
        assert_eq!(&out[26..30], &[10, 0, 0, 1]);
        assert_eq!(&out[30..34], &[10, 0, 0, 8]);
        // A header with its checksum in place sums to 0xFFFF, i.e. re-checksums to 0.
        assert_eq!(ipv4_checksum(&out[14..34]), 0);
        assert_eq!(out[46] >> 4, 8);
        seg.write_frame(1514, 128, &mut out).unwrap();
        assert_eq!(out.len(), 128);
        seg.write_frame(66, 128, &mut out).unwrap();
        assert_eq!(out.len(), 66);
        assert!(seg.write_frame(65, 0, &mut out).is_err());
        assert!(seg.write_frame(MAX_WIRE_LEN + 1, 0, &mut out).is_err());
        assert_eq!(host_ipv4(255), Ipv4Addr::new(10, 0, 1, 0));
    }
}
