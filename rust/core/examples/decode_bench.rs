//! Header decoding speed: decode one 1514-byte Ethernet/IPv4/TCP frame (and, for contrast, a
//! QinQ IPv6 frame with extension headers) many times and report nanoseconds per packet.
//!
//! `cargo run --release -p burstcore --example decode_bench [iterations]` (default 100M).

use std::hint::black_box;
use std::time::Instant;

use burstcore::wire::decode;

fn eth_ipv4_tcp() -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0x05, 0xdc, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&[
        0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0xff, 0xff,
    ]);
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.resize(1514, 0xab);
    f
}

fn qinq_ipv6_ext_udp() -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    f.extend_from_slice(&[0x88, 0xa8, 0, 10, 0x81, 0x00, 0, 20, 0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0x05, 0x9c, 60, 64]);
    f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    f.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]); // destination options -> UDP
    f.extend_from_slice(&[0x12, 0x34, 0x12, 0xb7, 0x05, 0x94, 0, 0]); // UDP to 4791
    f.extend_from_slice(&[4, 0x40, 0xff, 0xff, 0, 0x12, 0x34, 0x56, 0x80, 0, 0, 1]); // BTH
    f.resize(1518, 0);
    f
}

fn run(name: &str, frame: &[u8], iterations: u64) {
    let start = Instant::now();
    let mut sum = 0u64;
    for _ in 0..iterations {
        let h = decode(black_box(1), black_box(frame));
        sum = sum
            .wrapping_add(u64::from(h.sport.unwrap_or(0)) + u64::from(h.payload_len.unwrap_or(0)));
    }
    let ns = start.elapsed().as_nanos();
    black_box(sum);
    let per = ns as f64 / iterations as f64;
    println!(
        "{name}: {iterations} decodes in {:.3} s = {per:.2} ns/packet ({:.1} Mpps, {:.1} GB/s of {}-byte frames)",
        ns as f64 / 1e9,
        1e3 / per,
        frame.len() as f64 / per,
        frame.len()
    );
}

fn main() {
    let iterations = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000_000u64);
    let tcp = eth_ipv4_tcp();
    assert_eq!(decode(1, &tcp).dport, Some(443));
    let roce = qinq_ipv6_ext_udp();
    assert_eq!(decode(1, &roce).roce_qp, Some(0x12_3456));
    run("eth/ipv4/tcp 1514 B", &tcp, iterations);
    run("qinq/ipv6+dstopts/udp/rocev2", &roce, iterations);
}
