//! The writer checked against an independent reader: tshark 4.0 (wiretap).
//!
//! Files of many shapes are written to a temporary folder (both byte orders, pcap µs/ns, pcapng
//! with several sections of different byte order, interfaces of several link types, resolutions
//! 10^-3 / 10^-6 / 10^-9 / 2^-10 / 2^-30, signed offsets, every block type mixed in); tshark lists
//! every frame's epoch time, lengths and interface, and each must be what was written. The expected
//! times are computed here from the pcapng definition (raw·10^9/units floored, plus the offset),
//! not by the writer's own conversion. Set BURSTCORE_SKIP_TSHARK=1 to skip where tshark is absent.

use burstcore::capture::{ByteOrder, InterfaceStats, TsResolution};
use burstcore::writer::frames::TcpSegment;
use burstcore::writer::synth::{Config, Mode, Synth};
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::io::BufWriter;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const TSHARK: &str = "/usr/bin/tshark";
const CAPINFOS: &str = "/usr/bin/capinfos";

mod engine_util;
mod scratch;
use engine_util::Rng;
use scratch::Scratch;

/// What tshark must report for one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    /// `None` for Simple Packet Blocks and custom blocks, which carry no time.
    ts_ns: Option<i64>,
    len: u32,
    cap_len: u32,
    /// tshark's `frame.section_number` (from 1), `None` for pcap files.
    section: Option<u32>,
    /// Interface id within the section (tshark 4.0 reports the section-local id, not a global
    /// one); `None` for pcap files and custom blocks.
    interface: Option<u32>,
}

struct Case {
    path: PathBuf,
    frames: Vec<Frame>,
}

fn units(res: TsResolution) -> i128 {
    match res {
        TsResolution::Pow10(n) => 10i128.pow(n as u32),
        TsResolution::Pow2(n) => 1i128 << n,
    }
}

/// The pcapng definition of a timestamp: raw units since the offset, floored to ns.
fn read_ns(raw: u64, res: TsResolution, offset_s: i64) -> i64 {
    let ns =
        (raw as i128 * 1_000_000_000).div_euclid(units(res)) + offset_s as i128 * 1_000_000_000;
    i64::try_from(ns).unwrap()
}

/// The latest time a tick of the interface can read back as that is not after `ts_ns`: the tick
/// `r_max = ceil((x+1)·units/10^9) − 1` is the last one with `floor(r·10^9/units) ≤ x`.
fn expected_from_ns(ts_ns: i64, res: TsResolution, offset_s: i64) -> i64 {
    let u = units(res);
    let x = ts_ns as i128 - offset_s as i128 * 1_000_000_000;
    let r_max = ((x + 1) * u + 999_999_999).div_euclid(1_000_000_000) - 1;
    read_ns(u64::try_from(r_max).unwrap(), res, offset_s)
}

/// tshark's decimal seconds ("1700000000.123456789", maybe negative) as exact ns.
fn parse_epoch(s: &str) -> i64 {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    assert!(
        frac.len() <= 9 && frac.bytes().all(|b| b.is_ascii_digit()),
        "epoch {s}"
    );
    let mut frac_ns: i64 = if frac.is_empty() {
        0
    } else {
        frac.parse().unwrap()
    };
    for _ in frac.len()..9 {
        frac_ns *= 10;
    }
    let ns = int.parse::<i64>().unwrap() * 1_000_000_000 + frac_ns;
    if neg {
        -ns
    } else {
        ns
    }
}

fn tshark(path: &Path, fields: &[&str], extra: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new(TSHARK);
    cmd.arg("-n")
        .arg("-r")
        .arg(path)
        .args(extra)
        .args(["-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn tshark_frames(path: &Path) -> Vec<Frame> {
    let fields = [
        "frame.time_epoch",
        "frame.len",
        "frame.cap_len",
        "frame.section_number",
        "frame.interface_id",
    ];
    let rows = tshark(path, &fields, &[]);
    rows.iter()
        .map(|r| Frame {
            ts_ns: Some(r[0].as_str())
                .filter(|t| !t.is_empty())
                .map(parse_epoch),
            len: r[1].parse().unwrap(),
            cap_len: r[2].parse().unwrap(),
            section: Some(r[3].as_str())
                .filter(|t| !t.is_empty())
                .map(|t| t.parse().unwrap()),
            interface: Some(r[4].as_str())
                .filter(|t| !t.is_empty())
                .map(|t| t.parse().unwrap()),
        })
        .collect()
}

fn skip() -> bool {
    if std::env::var("BURSTCORE_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        return true;
    }
    assert!(
        Path::new(TSHARK).exists(),
        "{TSHARK} is missing (set BURSTCORE_SKIP_TSHARK=1 to skip)"
    );
    false
}

/// Random packet sizes: `(wire_len, cap_len)`, honouring a snaplen (0: none).
fn sizes(rng: &mut Rng, snaplen: u32) -> (u32, u32) {
    let wire = 14 + rng.below(1600) as u32;
    let mut cap = if rng.below(4) == 0 {
        rng.below(u64::from(wire) + 1) as u32
    } else {
        wire
    };
    if snaplen != 0 {
        cap = cap.min(snaplen);
    }
    (wire, cap)
}

fn pcap_case(dir: &Path, seed: u64, order: ByteOrder, nanos: bool) -> Case {
    let mut rng = Rng(seed);
    let snaplen = rng.pick(&[0u32, 128, 65535]);
    let linktype = rng.pick(&[1u16, 101, 147]);
    let path = dir.join(format!("pcap-{seed}.pcap"));
    let file = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = PcapWriter::new(
        file,
        PcapOptions::default()
            .with_byte_order(order)
            .with_nanos(nanos)
            .with_linktype(linktype)
            .with_snaplen(snaplen)
            .with_fcs_len(0),
    )
    .unwrap();
    let mut frames = Vec::new();
    let mut ts: i64 = rng.below(4_000_000_000) as i64 * 1_000_000_000;
    for i in 0..150 {
        // Edge times first: the epoch and the last representable second.
        ts = match i {
            0 => 0,
            1 => (u32::MAX as i64) * 1_000_000_000 + 999_999_999,
            2 => rng.below(4_000_000_000) as i64 * 1_000_000_000,
            _ => ts + rng.below(3_000_000_000) as i64,
        };
        let ts = ts.min((u32::MAX as i64) * 1_000_000_000 + 999_999_999);
        let (wire, cap) = sizes(&mut rng, snaplen);
        w.write_packet(ts, wire, &rng.bytes(cap as usize)).unwrap();
        let shown = if nanos {
            ts
        } else {
            ts.div_euclid(1000) * 1000
        };
        frames.push(Frame {
            ts_ns: Some(shown),
            len: wire,
            cap_len: cap,
            section: None,
            interface: None,
        });
    }
    w.finish().unwrap();
    Case { path, frames }
}

const RESOLUTIONS: [TsResolution; 5] = [
    TsResolution::Pow10(3),
    TsResolution::Pow10(6),
    TsResolution::Pow10(9),
    TsResolution::Pow2(10),
    TsResolution::Pow2(30),
];

#[derive(Clone, Copy)]
struct Iface {
    res: TsResolution,
    offset_s: i64,
    snaplen: u32,
}

/// A pcapng file of `sections` sections with random interfaces and a random mix of every block.
fn pcapng_case(dir: &Path, seed: u64, sections: usize) -> Case {
    let mut rng = Rng(seed);
    let path = dir.join(format!("pcapng-{seed}.pcapng"));
    let file = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = PcapNgWriter::new(file);
    let mut frames = Vec::new();
    for s in 0..sections {
        let order = if (seed as usize + s).is_multiple_of(2) {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        };
        let section = Some(s as u32 + 1);
        w.section(
            order,
            rng.pick(&[None, Some("burstcore writer test"), Some("x")]),
        )
        .unwrap();
        let mut ifaces = Vec::new();
        for i in 0..1 + rng.below(3) as usize {
            let res = if i == 0 && s == 0 {
                RESOLUTIONS[(seed % 5) as usize]
            } else {
                rng.pick(&RESOLUTIONS)
            };
            let offset_s = rng.pick(&[0i64, 0, 1_600_000_000, -1_000_000_000, -7, 86_400]);
            let snaplen = rng.pick(&[0u32, 96, 65535]);
            let linktype = rng.pick(&[1u16, 101, 147]);
            let name = format!("if{s}.{i}");
            let id = w
                .interface(
                    linktype,
                    snaplen,
                    res,
                    offset_s,
                    rng.pick(&[None, Some(name.as_str())]),
                )
                .unwrap();
            assert_eq!(id as usize, i);
            ifaces.push(Iface {
                res,
                offset_s,
                snaplen,
            });
        }
        for _ in 0..40 + rng.below(60) {
            let local = rng.below(ifaces.len() as u64) as u32;
            let iface = ifaces[local as usize];
            let (wire, cap) = sizes(&mut rng, iface.snaplen);
            let data = rng.bytes(cap as usize);
            match rng.below(20) {
                0..=9 => {
                    // ns in [max(0, offset), offset + ~4e9 s): representable at every resolution
                    let lo = iface.offset_s.max(0) as i128 * 1_000_000_000;
                    let ts = (lo + rng.below(4_000_000_000_000_000_000) as i128) as i64;
                    w.enhanced_packet(local, ts, wire, &data).unwrap();
                    let ts_ns = Some(expected_from_ns(ts, iface.res, iface.offset_s));
                    frames.push(Frame {
                        ts_ns,
                        len: wire,
                        cap_len: cap,
                        section,
                        interface: Some(local),
                    });
                }
                10..=12 => {
                    // raw ticks for up to ~4e9 s past the offset, kept at or after the epoch
                    let span = (4_000_000_000i128 * units(iface.res)) as u64;
                    let min = (-iface.offset_s).max(0) as u128 * units(iface.res) as u128;
                    let raw = (min + u128::from(rng.below(span))) as u64;
                    w.enhanced_packet_raw(local, raw, wire, &data).unwrap();
                    let ts_ns = Some(read_ns(raw, iface.res, iface.offset_s));
                    frames.push(Frame {
                        ts_ns,
                        len: wire,
                        cap_len: cap,
                        section,
                        interface: Some(local),
                    });
                }
                13 => {
                    let span = (4_000_000_000i128 * units(iface.res)) as u64;
                    let min = (-iface.offset_s).max(0) as u128 * units(iface.res) as u128;
                    let raw = (min + u128::from(rng.below(span))) as u64;
                    w.obsolete_packet_raw(local as u16, raw, wire, &data)
                        .unwrap();
                    let ts_ns = Some(read_ns(raw, iface.res, iface.offset_s));
                    frames.push(Frame {
                        ts_ns,
                        len: wire,
                        cap_len: cap,
                        section,
                        interface: Some(local),
                    });
                }
                14 => {
                    let first = ifaces[0];
                    let cap = if first.snaplen == 0 {
                        wire
                    } else {
                        wire.min(first.snaplen)
                    };
                    w.simple_packet(wire, &rng.bytes(cap as usize)).unwrap();
                    frames.push(Frame {
                        ts_ns: None,
                        len: wire,
                        cap_len: cap,
                        section,
                        interface: Some(0),
                    });
                }
                15 => {
                    let v4: IpAddr = [10, 0, 0, rng.below(256) as u8].into();
                    let v6: IpAddr = [0xfe80, 0, 0, 0, 0, 0, 0, rng.below(65536) as u16].into();
                    w.name_resolution(&[(v4, "host-a"), (v6, "host-b.example"), (v4, "")])
                        .unwrap();
                }
                16 => {
                    let stats = InterfaceStats::default()
                        .with_if_recv(Some(rng.below(1000)))
                        .with_if_drop(rng.pick(&[None, Some(3)]))
                        .with_os_drop(Some(1))
                        .with_fil_accept(None)
                        .with_usr_deliv(Some(rng.below(1000)))
                        .with_start_ns(Some(iface.offset_s.max(0) * 1_000_000_000))
                        .with_end_ns(Some(iface.offset_s.max(0) * 1_000_000_000 + 5_000_000_000));
                    w.interface_statistics(local, 12345, &stats).unwrap();
                }
                17 => {
                    let secrets = rng.bytes_below(40);
                    w.decryption_secrets(0x1234_5678, &secrets).unwrap();
                }
                18 => {
                    let body = rng.bytes_below(30);
                    w.custom(rng.below(2) == 0, 32473, &body).unwrap();
                    // tshark 4.0 lists a custom block as a record of its (padded) data
                    let len = body.len().div_ceil(4) as u32 * 4;
                    frames.push(Frame {
                        ts_ns: None,
                        len,
                        cap_len: len,
                        section,
                        interface: None,
                    });
                }
                _ => {
                    let body = rng.bytes_below(30);
                    w.raw_block(rng.pick(&[0x0000_0101u32, 0x0ACE_0001]), &body)
                        .unwrap();
                }
            }
        }
    }
    w.finish().unwrap();
    Case { path, frames }
}

fn check(case: &Case, got: &[Frame]) {
    let name = case.path.display();
    assert_eq!(got.len(), case.frames.len(), "{name}: frame count");
    for (i, (want, got)) in case.frames.iter().zip(got).enumerate() {
        assert_eq!(want, got, "{name}: frame {}", i + 1);
    }
}

/// Run `f` over `items` on two threads (tshark is the slow part; the machine has two cores).
fn two_at_a_time<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item)));
                if let Err(e) = r {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures.lock().unwrap().push(msg);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn tshark_reads_what_was_written() {
    if skip() {
        return;
    }
    let dir = Scratch::new("writer-tshark");
    let mut cases = Vec::new();
    for (seed, (order, nanos)) in [
        (ByteOrder::Little, false),
        (ByteOrder::Little, true),
        (ByteOrder::Big, false),
        (ByteOrder::Big, true),
    ]
    .into_iter()
    .enumerate()
    {
        cases.push(pcap_case(dir.path(), 100 + seed as u64, order, nanos));
    }
    for seed in 0..24u64 {
        cases.push(pcapng_case(dir.path(), seed, 1 + (seed % 3) as usize));
    }
    two_at_a_time(&cases, |case| check(case, &tshark_frames(&case.path)));
}

/// Training traffic built from `synth` and `frames`: tshark must see valid Ethernet/IPv4/TCP with
/// the right addresses, lengths and a correct IPv4 header checksum.
#[test]
fn tshark_dissects_generated_training_frames() {
    if skip() {
        return;
    }
    let dir = Scratch::new("writer-frames");
    let mut cfg = Config::new(5, Mode::ParameterServer, 9);
    cfg.period_ns = 1_000_000;
    let events: Vec<_> = Synth::new(cfg).unwrap().take(3000).collect();
    let mut paths = Vec::new();
    for (i, snaplen) in [0u32, 128].into_iter().enumerate() {
        let path = dir.join(format!("train-{i}.pcapng"));
        let file = BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w = PcapNgWriter::new(file);
        w.section(ByteOrder::Little, None).unwrap();
        w.interface(1, snaplen, TsResolution::Pow10(9), 0, Some("tap"))
            .unwrap();
        let mut buf = Vec::new();
        for e in &events {
            let seg = TcpSegment::between_hosts(e.src, e.dst, 40000 + e.src, 5000 + e.dst);
            seg.write_frame(e.wire_len, snaplen, &mut buf).unwrap();
            w.enhanced_packet(0, e.ts_ns, e.wire_len, &buf).unwrap();
        }
        w.finish().unwrap();
        paths.push(path);
    }
    let fields = [
        "frame.time_epoch",
        "frame.len",
        "ip.src",
        "ip.dst",
        "ip.len",
        "tcp.hdr_len",
        "tcp.srcport",
        "ip.checksum.status",
    ];
    two_at_a_time(&paths, |path| {
        let rows = tshark(path, &fields, &["-o", "ip.check_checksum:TRUE"]);
        assert_eq!(rows.len(), events.len());
        for (e, r) in events.iter().zip(&rows) {
            assert_eq!(parse_epoch(&r[0]), e.ts_ns);
            assert_eq!(r[1], e.wire_len.to_string());
            assert_eq!(r[2], format!("10.0.0.{}", e.src + 1));
            assert_eq!(r[3], format!("10.0.0.{}", e.dst + 1));
            assert_eq!(r[4], (e.wire_len - 14).to_string());
            assert_eq!(r[5], "32");
            assert_eq!(r[6], (40000 + e.src).to_string());
            // wireshark's checksum status: 1 = good
            assert_eq!(r[7], "1", "{r:?}");
        }
    });
}

/// capinfos counts what the non-packet blocks carry: resolved addresses, decryption secrets,
/// statistics entries, and decodes the interface's power-of-two resolution and negative offset.
#[test]
fn capinfos_counts_name_records_and_secrets() {
    if skip() {
        return;
    }
    let dir = Scratch::new("writer-capinfos");
    let path = dir.join("meta.pcapng");
    let mut w = PcapNgWriter::new(BufWriter::new(std::fs::File::create(&path).unwrap()));
    w.section(ByteOrder::Big, Some("capinfos test")).unwrap();
    w.interface(1, 0, TsResolution::Pow2(10), -5, Some("eth0"))
        .unwrap();
    w.enhanced_packet(0, 1_000_000_000, 60, &[0u8; 60]).unwrap();
    let v4: IpAddr = [192, 168, 1, 1].into();
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    w.name_resolution(&[(v4, "a"), (v6, "b"), ([192, 168, 1, 2].into(), "c")])
        .unwrap();
    w.decryption_secrets(0x544c_534b, b"CLIENT_RANDOM 00 00\n")
        .unwrap();
    let stats = InterfaceStats::default()
        .with_if_recv(Some(10))
        .with_if_drop(Some(4));
    w.interface_statistics(0, 2048, &stats).unwrap();
    w.finish().unwrap();
    let out = Command::new(CAPINFOS)
        .args(["-M", "-n", "-D", "-c", "-I"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("{key} missing in:\n{text}"))
    };
    assert_eq!(value("Number of packets:"), "1");
    assert_eq!(value("Number of resolved IPv4 addresses in file:"), "2");
    assert_eq!(value("Number of resolved IPv6 addresses in file:"), "1");
    assert_eq!(value("Number of decryption secrets in file:"), "1");
    assert_eq!(value("Time ticks per second ="), "1024");
    assert_eq!(value("Time resolution ="), "0x8a");
    assert_eq!(value("Timestamp offset ="), "-5");
    assert_eq!(value("Name ="), "eth0");
    assert_eq!(value("Number of stat entries ="), "1");
}
