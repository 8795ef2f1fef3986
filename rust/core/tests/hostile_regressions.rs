//! Inputs the fuzzers found (fuzz/RESULTS.md), kept as files under tests/data/regressions/ and
//! replayed through the same checks as the fuzz targets:
//! - `decode-*`: header decoding for every link type;
//! - every input that is a capture: reading, plain and through gzip, and a scan with every
//!   grouping, with the packets accounted for.

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::{By, LatePolicy, ScanConfig};
use burstcore::input;
use burstcore::pipeline::{self, SizeKind};
use burstcore::wire::{self, linktype};
use std::io::{Cursor, Write};
use std::path::PathBuf;

const LINKTYPES: [u16; 16] = [
    linktype::NULL,
    linktype::ETHERNET,
    linktype::RAW_DLT12,
    linktype::RAW_DLT14,
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
    147,
];

fn inputs(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/regressions");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

fn check_headers(name: &str, lt: u16, frame: &[u8]) {
    let h = wire::decode(lt, frame);
    // An IP length below the largest IPv4 header may be a TSO frame's 0 or damage: the UDP
    // length is then the only length there is, so the cap applies only to a usable IP length.
    if let (Some(ip), Some(payload)) = (h.ip_len.filter(|&n| n >= 60), h.payload_len) {
        assert!(
            payload <= ip,
            "{name} as link type {lt}: payload {payload} > IP length {ip}"
        );
    }
    if h.src.is_some() {
        assert!(h.dst.is_some(), "{name}: source without destination");
    }
}

#[test]
fn decode_regressions() {
    let all = inputs("decode-");
    assert!(!all.is_empty(), "no decode regression inputs found");
    for (name, data) in &all {
        for lt in LINKTYPES {
            check_headers(name, lt, data);
        }
        // As in the fuzz target, an input that is a capture also has its packets decoded.
        if let Some(mut r) = open(data.clone()) {
            while let Ok(Some(p)) = r.next_packet() {
                check_headers(name, p.linktype, p.data);
            }
        }
    }
}

/// A packet whose IPv4 total length (19) is below its header length: the header's fields are
/// kept, but what follows it is no transport header (tshark: "Bogus IP length"), as after an
/// IPv6 chain longer than its packet; decoding neither panics nor invents an IP payload.
#[test]
fn ipv4_length_below_the_header() {
    let all = inputs("decode-ipv4-length-below-header");
    let (_, data) = all.first().expect("the input file");
    let mut r = open(data.clone()).expect("a pcap");
    let p = r.next_packet().unwrap().expect("one packet");
    let h = wire::decode_frame(p.linktype, p.data, p.wire_len);
    assert_eq!(h.ip_len, Some(19));
    assert!(h.src.is_some() && h.dst.is_some());
    assert_eq!((h.ip_proto, h.sport, h.payload_len), (Some(17), None, None));
}

/// IPv4 total length 70 (50 bytes of IP payload) carrying a UDP header that claims 115 bytes:
/// the payload counted for size="payload" is what the IP length holds, not what UDP claims.
#[test]
fn udp_length_beyond_the_ip_payload_is_capped() {
    let all = inputs("decode-udp-length-beyond-ip");
    let (_, data) = all.first().expect("the input file");
    let h = wire::decode(linktype::RAW, data);
    assert_eq!(h.ip_len, Some(70));
    assert_eq!(h.payload_len, Some(70 - 20 - 8));
    // A consistent UDP length is still taken as it is (less than the IP payload: padding).
    let mut ok = data.clone();
    ok[24..26].copy_from_slice(&30u16.to_be_bytes());
    assert_eq!(wire::decode(linktype::RAW, &ok).payload_len, Some(22));
}

/// IPv6 payload length 40 (IP length 80) whose hop-by-hop header runs 144 bytes: the chain ends
/// past the packet the header describes, so the UDP header after it is not read, and no payload
/// larger than the IP length is reported (found by `decode_headers` in CI).
#[test]
fn ipv6_chain_past_the_payload_length() {
    let all = inputs("decode-ipv6-chain-past-payload-length");
    let (_, data) = all.first().expect("the input file");
    for lt in [linktype::RAW, linktype::IPV6] {
        let h = wire::decode(lt, data);
        assert_eq!(
            (h.ip_len, h.ip_proto, h.sport, h.payload_len),
            (Some(80), Some(17), None, None)
        );
    }
}

fn open(bytes: Vec<u8>) -> Option<CaptureReader> {
    let n = bytes.len() as u64;
    let input = input::from_reader(Box::new(Cursor::new(bytes)), Some(n)).ok()?;
    CaptureReader::new(input, ReadOptions::default()).ok()
}

fn count(bytes: Vec<u8>) -> (u64, bool) {
    let Some(mut r) = open(bytes) else {
        return (0, false);
    };
    let mut n = 0;
    loop {
        match r.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, true),
            Err(_) => return (n, false),
        }
    }
}

#[test]
fn capture_regressions() {
    // Every regression input that is a capture (the decoder's ones are, too) goes through the
    // reader and the scanner.
    let mut captures = 0;
    for (name, data) in inputs("") {
        let (plain, clean) = count(data.clone());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        assert_eq!(
            count(gz.finish().unwrap()),
            (plain, clean),
            "{name}: gzip differs"
        );
        let Some(reader) = open(data.clone()) else {
            continue;
        };
        captures += 1;
        let config = ScanConfig::default()
            .with_windows_ns(vec![1, 1_000, i64::MAX])
            .with_rates_bps(vec![1, u64::MAX])
            .with_bins_ns(vec![1, i64::MAX])
            .with_by(By::EVERY.to_vec())
            .with_reorder_horizon_ns(0)
            .with_late(LatePolicy::Drop);
        for size in [SizeKind::Wire, SizeKind::Payload] {
            let Some(reader) = open(data.clone()) else {
                continue;
            };
            let mut readers = vec![reader];
            // A read that fails fails the scan; one that succeeds is scanned whole (late packets
            // dropped, not raised): an error then was passed over before.
            match pipeline::scan(&mut readers, config.clone(), size, &mut |_| Ok(())) {
                Ok((_, acc)) => {
                    assert!(clean, "{name}: scan succeeded where a read failed");
                    assert_eq!(acc.packets_read, plain, "{name}");
                    let skipped = acc.skipped_no_timestamp
                        + acc.skipped_timestamp_out_of_range
                        + acc.skipped_no_size
                        + acc.skipped_late;
                    assert_eq!(acc.counted + skipped, plain, "{name}: {acc:?}");
                }
                Err(e) => assert!(!clean, "{name} ({size:?}): a clean read's scan failed: {e}"),
            }
        }
        drop(reader);
    }
    assert!(captures > 0, "no regression input is a capture");
}
