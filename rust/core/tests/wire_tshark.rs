//! tshark as the oracle: every corpus file whose link types this decoder knows is converted to
//! classic pcap with editcap (pcapng, gzip, zstd all become one simple format), walked by a tiny
//! pcap reader here (not the project's reader, which is developed in parallel), decoded, and
//! compared per packet with tshark's fields for the same pcap.
//!
//! tshark runs with IP reassembly off so each frame is dissected on its own. Differences that are
//! legitimate are counted per category and listed in the output; anything else fails the test.
//! The legitimate categories:
//! - `non-ip-link-payload`: our link layer says the payload is not IP (MPLS, LLC/SNAP,
//!   ARP, ...), while tshark dissects further and finds IP inside.
//! - `inner-ports`: our transport protocol is not TCP/UDP (ICMP errors, IP-in-IP, GRE, ESP...),
//!   and tshark reports ports of an encapsulated packet.
//! - `inner-vlan`: IP follows the link header directly, so a VLAN id tshark reports belongs to a
//!   tunnelled frame (ERSPAN, VXLAN).
//! - `cut-ip-header`: the capture ends inside the IP header(s); tshark shows what it got field by
//!   field, we decode the IPv4/IPv6 fixed header as a whole.
//! - `bogus-ip-len`: an IPv4 total length below 20: tshark drops the header, we keep its fields.
//! - `ipv6-zero-payload-length`: IPv6 payload length 0 without a Jumbo Payload option (a BIG
//!   TCP or TSO/GRO super-frame, or garbage): tshark stops at the fixed header, we take the rest
//!   of the frame on the wire as the packet (as tshark does for IPv4's total length 0), walk the
//!   extension headers and read the transport header in the captured bytes (as tcpdump does).
//! - `bogus-ip-version`: an IP EtherType over a version nibble neither 4 nor 6; tshark guesses.
//! - `source-route-dst`: with a loose/strict source-route option tshark's `ip.dst` is the route's
//!   final address, ours the header's destination.
//! - `cut-tcp-seq`: the capture ends inside the TCP header's fixed 20 bytes but after the
//!   sequence number: tshark shows only the ports, we keep every field whose bytes are there.
//! - `tcp-len-not-reported`: tshark shows TCP ports but no TCP length (header cut or bogus);
//!   ours comes from the IP length and data offset.
//! - `ip-len-exceeds-frame`: the IP length is larger than the frame on the wire; tshark clamps
//!   the TCP length to the frame, ours follows the header.
//! - `mobility-chain`: the IPv6 chain has an extension tshark gives no next-header field for.
//! - `udp-len-exceeds-ip`: the UDP length field is larger than the IP payload (the first fragment
//!   of a fragmented datagram, or a bogus length): tshark reports the field, ours is capped at the
//!   payload this packet carries, which is what `size="payload"` must count.
//! - `udp-len-zero`: UDP length 0 over an IP payload longer than 65,535 bytes (a jumbogram or a
//!   GSO super-frame): RFC 2675's "longer than the field holds", so we count the IP payload where
//!   tshark reports 0.
//!
//! Frames are decoded with their length on the wire, which is what an IP length of 0 (TSO/GRO,
//! BIG TCP) is measured by, as in tshark. Besides the corpus, [`matches_tshark_on_offload_frames`]
//! checks such frames built here, cut to a snaplen.
//!
//! By default every 4th selected file is checked (about 2.5 minutes); `BURSTCORE_WIRE_FILES=1`
//! checks all of them (about 10 minutes on 2 cores).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use burstcore::wire::{decode_frame, Headers};
use burstcore::writer::{PcapOptions, PcapWriter};

mod scratch;
use scratch::Scratch;

const KNOWN: [u16; 9] = [0, 1, 12, 101, 108, 113, 228, 229, 276];

const FIELDS: [&str; 30] = [
    "ip.src",
    "ip.dst",
    "ipv6.src",
    "ipv6.dst",
    "ip.proto",
    "ipv6.nxt",
    "tcp.srcport",
    "tcp.dstport",
    "udp.srcport",
    "udp.dstport",
    "vlan.id",
    "ip.len",
    "ipv6.plen",
    "ip.frag_offset",
    "ipv6.fraghdr.offset",
    "ipv6.hopopts.nxt",
    "ipv6.routing.nxt",
    "ipv6.fraghdr.nxt",
    "ipv6.dstopts.nxt",
    "ah.next_header",
    "tcp.flags",
    "tcp.len",
    "udp.length",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "ieee8021ad.id",
    "ipv6.version",
    "ip.opt.type",
    "ipv6.opt.jumbo",
    "tcp.seq_raw",
];

#[derive(Clone, Copy)]
enum F {
    IpSrc,
    IpDst,
    Ip6Src,
    Ip6Dst,
    IpProto,
    Ip6Nxt,
    TcpSport,
    TcpDport,
    UdpSport,
    UdpDport,
    Vlan,
    IpLen,
    Ip6Plen,
    FragOff,
    Frag6Off,
    HopNxt,
    RoutingNxt,
    FragNxt,
    DstNxt,
    AhNxt,
    TcpFlags,
    TcpLen,
    UdpLen,
    BthOpcode,
    BthQp,
    QinqId,
    Ip6Version,
    IpOptType,
    Ip6Jumbo,
    TcpSeqRaw,
}

struct Row(Vec<Vec<String>>);

impl Row {
    fn all(&self, f: F) -> &[String] {
        self.0.get(f as usize).map_or(&[], |v| v.as_slice())
    }
    fn first(&self, f: F) -> Option<&str> {
        self.all(f).first().map(String::as_str)
    }
    fn num(&self, f: F) -> Option<u64> {
        self.first(f).map(parse_num)
    }
}

fn parse_num(s: &str) -> u64 {
    let r = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.unwrap_or_else(|e| panic!("tshark number {s:?}: {e}"))
}

fn shared_dir() -> PathBuf {
    match std::env::var("BURSTCORE_SHARED") {
        Ok(p) => p.into(),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// (linktype, frame bytes) of a classic pcap file, either byte order, µs or ns.
fn pcap_frames(bytes: &[u8]) -> (u16, Vec<(&[u8], u32)>) {
    let magic = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
    let le = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        _ => panic!("not a classic pcap: magic {magic:#x}"),
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let linktype = (u32_at(20) & 0xffff) as u16;
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let caplen = u32_at(at + 8) as usize;
        let start = at + 16;
        let end = start
            .checked_add(caplen)
            .filter(|&e| e <= bytes.len())
            .expect("pcap record past end of file");
        frames.push((&bytes[start..end], u32_at(at + 12)));
        at = end;
    }
    assert_eq!(at, bytes.len(), "trailing bytes in converted pcap");
    (linktype, frames)
}

fn run(cmd: &mut Command) -> Option<Vec<u8>> {
    let out = cmd.output().expect("run tshark/editcap");
    out.status.success().then_some(out.stdout)
}

/// Classic pcap files holding the frames of `src`: one file, or one per link type when the
/// pcapng mixes them (classic pcap has one link type per file, and editcap refuses the mix; so
/// each link type's frames are filtered out by tshark and then written with that encapsulation).
fn to_pcaps(src: &Path, dir: &Path, tag: usize) -> Vec<PathBuf> {
    let one = dir.join(format!("{tag}.pcap"));
    if run(Command::new("editcap")
        .args(["-F", "pcap"])
        .arg(src)
        .arg(&one))
    .is_some()
    {
        return vec![one];
    }
    std::fs::remove_file(&one).ok();
    let encaps = run(Command::new("tshark").args(["-n", "-r"]).arg(src).args([
        "-T",
        "fields",
        "-e",
        "frame.encap_type",
    ]))
    .unwrap_or_else(|| panic!("{}: tshark cannot list encapsulations", src.display()));
    let mut encaps: Vec<String> = String::from_utf8(encaps)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty()) // non-packet records (pcapng custom, journal...)
        .map(str::to_string)
        .collect();
    encaps.sort();
    encaps.dedup();
    let mut parts = Vec::new();
    for encap in encaps {
        // Wiretap encapsulation numbers (not LINKTYPE_*) and editcap's names for them.
        let name = match encap.as_str() {
            "1" => "ether",
            "15" => "null",
            "25" => "linux-sll",
            other => panic!(
                "{}: no editcap name for wiretap encapsulation {other}",
                src.display()
            ),
        };
        let filtered = dir.join(format!("{tag}.{name}.pcapng"));
        let part = dir.join(format!("{tag}.{name}.pcap"));
        let filter = format!("frame.encap_type == {encap}");
        run(Command::new("tshark")
            .args(["-n", "-r"])
            .arg(src)
            .args(["-Y", &filter, "-w"])
            .arg(&filtered))
        .unwrap_or_else(|| panic!("{}: tshark cannot filter {name}", src.display()));
        run(Command::new("editcap")
            .args(["-F", "pcap", "-T", name])
            .arg(&filtered)
            .arg(&part))
        .unwrap_or_else(|| panic!("{}: editcap cannot convert {name}", src.display()));
        std::fs::remove_file(&filtered).ok();
        parts.push(part);
    }
    parts
}

fn tshark_rows(pcap: &Path) -> Vec<Row> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(pcap);
    cmd.args(["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"]);
    cmd.args([
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        "-E",
        "separator=\t",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = run(&mut cmd).unwrap_or_else(|| panic!("tshark failed on {}", pcap.display()));
    String::from_utf8(out)
        .expect("utf8")
        .lines()
        .map(|l| {
            Row(l
                .split('\t')
                .map(|v| {
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .collect())
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    packets: usize,
    compared: BTreeMap<&'static str, usize>,
    legit: BTreeMap<&'static str, usize>,
    errors: Vec<String>,
}

impl Tally {
    fn ok(&mut self, what: &'static str) {
        *self.compared.entry(what).or_default() += 1;
    }
    fn legit(&mut self, why: &'static str) {
        *self.legit.entry(why).or_default() += 1;
    }
    fn eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &'static str,
        ours: T,
        theirs: T,
        at: &str,
    ) {
        if ours == theirs {
            self.ok(what);
        } else if self.errors.len() < 200 {
            self.errors
                .push(format!("{at}: {what}: ours {ours:?}, tshark {theirs:?}"));
        }
    }
}

enum Chain {
    /// tshark reached this transport protocol.
    Transport(u8),
    /// An extension header (mobility, HIP, shim6) tshark gives no next-header field for.
    Opaque,
    /// tshark stopped inside the chain (cut capture, or its payload length ended first).
    Stopped,
}

/// Where tshark's IPv6 extension-header chain ends.
fn tshark_ipv6_chain(t: &Row) -> Chain {
    let mut used = [0usize; 5];
    let Some(mut next) = t.num(F::Ip6Nxt).map(|n| n as u8) else {
        return Chain::Stopped;
    };
    loop {
        let (slot, field) = match next {
            0 => (0, F::HopNxt),
            43 => (1, F::RoutingNxt),
            44 => (2, F::FragNxt),
            60 => (3, F::DstNxt),
            51 => (4, F::AhNxt),
            135 | 139 | 140 => return Chain::Opaque,
            p => return Chain::Transport(p),
        };
        let Some(n) = t.all(field).get(used[slot]) else {
            return Chain::Stopped;
        };
        next = parse_num(n) as u8;
        used[slot] += 1;
    }
}

/// TPIDs of the VLAN tags at the front of the frame's network layer, outermost first, then of
/// those of an Ethernet frame in an MPLS pseudowire: they say which tshark field (802.1Q
/// `vlan.id` or 802.1ad `ieee8021ad.id`) holds each id.
fn tpids(linktype: u16, frame: &[u8]) -> Vec<u16> {
    let mut at = match linktype {
        1 => 12,
        113 => 14,
        276 => 0,
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let ty = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let tagged = |t: Option<u16>| matches!(t, Some(0x8100 | 0x88a8 | 0x9100));
    let walk = |mut at: usize, out: &mut Vec<u16>| {
        while tagged(ty(at)) {
            out.push(ty(at).unwrap_or(0));
            // SLL2 has its protocol first and the payload after 20 bytes.
            at = if linktype == 276 && out.len() == 1 {
                22
            } else {
                at + 4
            };
        }
        at
    };
    at = walk(at, &mut out);
    if matches!(ty(at), Some(0x8847 | 0x8848)) && linktype != 276 {
        // Past the label stack, a payload of first nibble 0 is an Ethernet frame, after a
        // control word or not: where its type field holds a tag, its tags follow.
        at += 2;
        while frame.get(at + 2).is_some_and(|b| b & 1 == 0) {
            at += 4;
        }
        at += 4;
        if frame.get(at).is_some_and(|b| b >> 4 == 0) {
            if let Some(inner) = [at + 12, at + 16].into_iter().find(|&t| tagged(ty(t))) {
                walk(inner, &mut out);
            }
        }
    }
    out
}

/// tshark's VLAN ids in the frame's tag order.
fn tshark_vlans(t: &Row, tpids: &[u16]) -> Vec<Option<u64>> {
    let (mut q, mut ad) = (0, 0);
    tpids
        .iter()
        .map(|&tpid| {
            let (field, i) = if tpid == 0x88a8 {
                (F::QinqId, &mut ad)
            } else {
                (F::Vlan, &mut q)
            };
            *i += 1;
            t.all(field).get(*i - 1).map(|s| parse_num(s))
        })
        .collect()
}

fn compare(h: &Headers, t: &Row, tpids: &[u16], orig_len: u32, at: &str, tally: &mut Tally) {
    // Network layer.
    match h.src {
        Some(IpAddr::V4(_))
            if h.ip_len.is_some_and(|n| 0 < n && n < 20) && t.first(F::IpSrc).is_none() =>
        {
            // tshark drops an IPv4 header whose total length is below 20; we keep its fields.
            tally.legit("bogus-ip-len");
            return;
        }
        Some(IpAddr::V4(src)) => {
            tally.eq(
                "ipv4.src",
                Some(src.to_string()).as_deref(),
                t.first(F::IpSrc),
                at,
            );
            let dst = h.dst.map(|d| d.to_string());
            // Loose / strict source route options (type 131 / 137).
            let source_route = t
                .all(F::IpOptType)
                .iter()
                .any(|o| matches!(parse_num(o), 131 | 137));
            if source_route && dst.as_deref() != t.first(F::IpDst) {
                tally.legit("source-route-dst");
            } else {
                tally.eq("ipv4.dst", dst.as_deref(), t.first(F::IpDst), at);
            }
            tally.eq(
                "ipv4.proto",
                h.ip_proto.map(u64::from),
                t.num(F::IpProto),
                at,
            );
            tally.eq("ipv4.len", h.ip_len.map(u64::from), t.num(F::IpLen), at);
            tally.eq(
                "ipv4.fragment",
                h.fragment,
                t.num(F::FragOff).unwrap_or(0) != 0,
                at,
            );
        }
        Some(IpAddr::V6(src)) => {
            tally.eq(
                "ipv6.src",
                Some(src.to_string()).as_deref(),
                t.first(F::Ip6Src),
                at,
            );
            tally.eq(
                "ipv6.dst",
                h.dst.map(|d| d.to_string()).as_deref(),
                t.first(F::Ip6Dst),
                at,
            );
            match (t.num(F::Ip6Plen), t.num(F::Ip6Jumbo)) {
                (Some(0), Some(jumbo)) => {
                    tally.eq("ipv6.jumbo", h.ip_len.map(u64::from), Some(jumbo + 40), at)
                }
                (Some(0), None) => tally.legit("ipv6-zero-payload-length"),
                (plen, _) => tally.eq(
                    "ipv6.len",
                    h.ip_len.map(u64::from),
                    plen.map(|p| p + 40),
                    at,
                ),
            }
            match tshark_ipv6_chain(t) {
                Chain::Transport(p) => {
                    tally.eq("ipv6.transport", h.ip_proto, Some(p), at);
                    tally.eq(
                        "ipv6.fragment",
                        h.fragment,
                        t.num(F::Frag6Off).unwrap_or(0) != 0,
                        at,
                    );
                }
                Chain::Opaque => tally.legit("mobility-chain"),
                Chain::Stopped if h.truncated => tally.legit("cut-ip-header"),
                Chain::Stopped if zero_ipv6_length(t) => tally.legit("ipv6-zero-payload-length"),
                Chain::Stopped => tally.eq("ipv6.chain", h.ip_proto, None, at),
            }
        }
        None => {
            if t.first(F::IpSrc).is_some() || t.first(F::Ip6Src).is_some() {
                if !matches!(h.ethertype, Some(0x0800 | 0x86dd)) {
                    tally.legit("non-ip-link-payload");
                } else if h.truncated {
                    tally.legit("cut-ip-header");
                } else if t.num(F::Ip6Version).is_some_and(|v| v != 6) {
                    tally.legit("bogus-ip-version");
                } else {
                    tally.eq("ip.src", None, t.first(F::IpSrc).or(t.first(F::Ip6Src)), at);
                }
            } else {
                tally.ok("no-ip");
            }
        }
    }

    // VLAN tags (outermost first).
    let theirs = tshark_vlans(t, tpids);
    if h.vlan.is_none()
        && h.src.is_some()
        && (t.first(F::Vlan).is_some() || t.first(F::QinqId).is_some())
    {
        // IP right after the link header: any tag tshark saw is inside a tunnel (ERSPAN, VXLAN).
        tally.legit("inner-vlan");
    } else {
        tally.eq(
            "vlan.outer",
            h.vlan.map(u64::from),
            theirs.first().copied().flatten(),
            at,
        );
        tally.eq(
            "vlan.inner",
            h.vlan_inner.map(u64::from),
            theirs.get(1).copied().flatten(),
            at,
        );
    }

    // Transport layer.
    let (sport, dport) = match h.ip_proto {
        Some(6) if !h.fragment => (F::TcpSport, F::TcpDport),
        Some(17) if !h.fragment => (F::UdpSport, F::UdpDport),
        _ => {
            let theirs = t.first(F::TcpSport).or(t.first(F::UdpSport));
            if theirs.is_some() && h.src.is_some() && !h.fragment {
                tally.legit("inner-ports");
            } else if theirs.is_some() && h.src.is_none() {
                tally.legit("non-ip-link-payload");
            } else {
                tally.eq("no-ports", None, theirs, at);
            }
            return;
        }
    };
    let (ts, td) = (t.num(sport), t.num(dport));
    if ts.is_none()
        && h.sport.is_some()
        && h.src.is_some_and(|a| a.is_ipv6())
        && zero_ipv6_length(t)
    {
        tally.legit("ipv6-zero-payload-length");
        return;
    }
    tally.eq("sport", h.sport.map(u64::from), ts, at);
    tally.eq("dport", h.dport.map(u64::from), td, at);
    if h.ip_proto == Some(6) {
        tally.eq(
            "tcp.flags",
            h.tcp_flags.map(u64::from),
            t.num(F::TcpFlags).map(|f| f & 0xff),
            at,
        );
        match t.num(F::TcpSeqRaw) {
            None if h.tcp_seq.is_some() && h.truncated => tally.legit("cut-tcp-seq"),
            theirs => tally.eq("tcp.seq_raw", h.tcp_seq.map(u64::from), theirs, at),
        }
        match t.num(F::TcpLen) {
            None if h.payload_len.is_some() => tally.legit("tcp-len-not-reported"),
            Some(n)
                if h.ip_len.is_some_and(|l| orig_len < l.saturating_add(14))
                    && h.payload_len.is_some_and(|p| u64::from(p) > n) =>
            {
                tally.legit("ip-len-exceeds-frame")
            }
            theirs => tally.eq("tcp.payload_len", h.payload_len.map(u64::from), theirs, at),
        }
    } else {
        let field = t.num(F::UdpLen);
        let theirs = field.map(|n| n.saturating_sub(8));
        match (h.payload_len.map(u64::from), theirs) {
            (Some(ours), Some(field)) if ours < field => tally.legit("udp-len-exceeds-ip"),
            (Some(ours), Some(0)) if field == Some(0) && ours > 65_535 => {
                tally.legit("udp-len-zero")
            }
            (ours, theirs) => tally.eq("udp.payload_len", ours, theirs, at),
        }
        if let Some(op) = t.num(F::BthOpcode) {
            tally.eq("roce.opcode", h.roce_opcode.map(u64::from), Some(op), at);
            tally.eq("roce.qp", h.roce_qp.map(u64::from), t.num(F::BthQp), at);
        }
    }
}

/// IPv6 payload length 0 with no Jumbo Payload option: tshark stops at the fixed header.
fn zero_ipv6_length(t: &Row) -> bool {
    t.num(F::Ip6Plen) == Some(0) && t.first(F::Ip6Jumbo).is_none()
}

fn selected_files(shared: &Path) -> Vec<PathBuf> {
    let index =
        std::fs::read_to_string(shared.join("corpus/index.jsonl")).expect("corpus/index.jsonl");
    let step: usize = std::env::var("BURSTCORE_WIRE_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let mut files = Vec::new();
    for line in index.lines() {
        let field = |k: &str| {
            let k = format!("\"{k}\": ");
            let s = &line[line
                .find(&k)
                .unwrap_or_else(|| panic!("index line without {k}"))
                + k.len()..];
            s[..s.find([',', '}']).unwrap()].to_string()
        };
        let types = {
            let k = "\"linktypes\": [";
            let s = &line[line.find(k).expect("linktypes") + k.len()..];
            s[..s.find(']').unwrap()].to_string()
        };
        let types: Vec<u16> = types
            .split(", ")
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        // Files tshark itself rejects (corrupt headers, cut records) have no oracle.
        if types.is_empty()
            || !types.iter().all(|t| KNOWN.contains(t))
            || field("tshark_exit") != "0"
        {
            continue;
        }
        let path = field("path");
        files.push(shared.join("corpus").join(path.trim_matches('"')));
    }
    files.into_iter().step_by(step.max(1)).collect()
}

/// Every frame of the classic pcap at `pcap`, decoded with its length on the wire, against
/// tshark's fields for it; `label` names the file in the mismatches.
fn compare_pcap(pcap: &Path, label: &str, tally: &mut Tally) {
    let bytes = std::fs::read(pcap).unwrap();
    let (linktype, frames) = pcap_frames(&bytes);
    let rows = tshark_rows(pcap);
    assert_eq!(rows.len(), frames.len(), "{label}: frame count");
    for (n, ((frame, orig_len), row)) in frames.iter().zip(&rows).enumerate() {
        let at = format!("{label} #{} (linktype {linktype})", n + 1);
        compare(
            &decode_frame(linktype, frame, *orig_len),
            row,
            &tpids(linktype, frame),
            *orig_len,
            &at,
            tally,
        );
        tally.packets += 1;
    }
}

#[test]
fn matches_tshark_on_corpus() {
    let shared = shared_dir();
    let files = selected_files(&shared);
    assert!(!files.is_empty(), "no corpus files selected");
    for f in &files {
        assert!(f.is_file(), "missing corpus file {}", f.display());
    }
    let dir = Scratch::new("wire-tshark");

    let next = AtomicUsize::new(0);
    let total = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(src) = files.get(i) else { break };
                let mut tally = Tally::default();
                for pcap in to_pcaps(src, dir.path(), i) {
                    compare_pcap(&pcap, &src.display().to_string(), &mut tally);
                    std::fs::remove_file(&pcap).ok();
                }
                let mut t = total.lock().unwrap();
                t.packets += tally.packets;
                for (k, v) in tally.compared {
                    *t.compared.entry(k).or_default() += v;
                }
                for (k, v) in tally.legit {
                    *t.legit.entry(k).or_default() += v;
                }
                t.errors.extend(tally.errors);
            });
        }
    });

    let t = total.into_inner().unwrap();
    println!("{} files, {} packets", files.len(), t.packets);
    println!("fields equal to tshark: {:?}", t.compared);
    println!("legitimate differences: {:?}", t.legit);
    for e in t.errors.iter().take(60) {
        println!("MISMATCH {e}");
    }
    assert!(
        t.errors.is_empty(),
        "{} mismatches with tshark",
        t.errors.len()
    );
    assert!(t.packets > 1000);
}

/// Frames whose IP length says nothing or too little, built here as a host's capture of offload
/// shows them (cut to a snaplen of 128, far longer on the wire), against tshark's reading of the
/// same file: IPv4 total length 0 (TSO/GRO, BIG TCP), with and without a VLAN tag, over TCP and
/// UDP; IPv6 jumbograms over TCP and UDP (UDP length 0, RFC 2675); a bogus IPv4 length. Every
/// field must agree with tshark's, with no difference excused but the UDP length 0 of the
/// jumbogram and the bogus header, whose fields tshark drops (we keep them, but no ports).
#[test]
fn matches_tshark_on_offload_frames() {
    const SNAP: usize = 128;
    let eth = |vlan: Option<u16>, ethertype: u16| {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
        if let Some(id) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&id.to_be_bytes());
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f
    };
    let ipv4 = |total: u16, proto: u8| {
        let mut h = vec![0x45, 0];
        h.extend_from_slice(&total.to_be_bytes());
        h.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        h
    };
    let ipv6 = |plen: u16, next: u8| {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&plen.to_be_bytes());
        h.extend_from_slice(&[next, 64]);
        h.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        h.extend_from_slice(&[0; 11]);
        h.push(1);
        h.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        h.extend_from_slice(&[0; 11]);
        h.push(2);
        h
    };
    let jumbo = |next: u8, len: u32| {
        let mut h = vec![next, 0, 0xc2, 4];
        h.extend_from_slice(&len.to_be_bytes());
        h
    };
    // 32 bytes of TCP header (timestamps), ACK + PSH.
    let tcp = {
        let mut h = vec![
            0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 1, 0x80, 0x18, 0xff, 0xff,
        ];
        h.extend_from_slice(&[0, 0, 0, 0, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        h
    };
    let udp = |len: u16| {
        let mut h = vec![0x14, 0xe9, 0x12, 0xb7];
        h.extend_from_slice(&len.to_be_bytes());
        h.extend_from_slice(&[0, 0]);
        h
    };
    let frame = |parts: &[&[u8]], wire: u32| {
        let mut f: Vec<u8> = parts.concat();
        f.resize(SNAP.max(f.len()), 0xab);
        f.truncate(SNAP);
        (f, wire)
    };
    let frames = [
        // IPv4 TSO/GRO super-frames of 64,000 and (BIG TCP) 185,000 bytes, TCP.
        frame(&[&eth(None, 0x0800), &ipv4(0, 6), &tcp], 64_000),
        frame(&[&eth(None, 0x0800), &ipv4(0, 6), &tcp], 185_000),
        frame(&[&eth(Some(100), 0x0800), &ipv4(0, 6), &tcp], 9_000),
        // A UDP GSO super-frame with its UDP length set.
        frame(&[&eth(None, 0x0800), &ipv4(0, 17), &udp(8_980)], 9_014),
        // IPv6 jumbograms, TCP and UDP (UDP length 0), captured with their 4-byte FCS: the
        // option, not the frame, says where the packet ends.
        frame(
            &[&eth(None, 0x86dd), &ipv6(0, 0), &jumbo(6, 99_946), &tcp],
            100_004,
        ),
        frame(
            &[&eth(None, 0x86dd), &ipv6(0, 0), &jumbo(17, 99_946), &udp(0)],
            100_004,
        ),
        // A full-size frame as it should be, and one whose total length is below its header.
        frame(&[&eth(None, 0x0800), &ipv4(1500, 6), &tcp], 1_514),
        frame(&[&eth(None, 0x0800), &ipv4(19, 6), &tcp], 1_514),
    ];
    let dir = Scratch::new("wire-tshark-offload");
    let path = dir.path().join("offload.pcap");
    let opts = PcapOptions::default().with_nanos(false);
    let mut w = PcapWriter::new(Vec::new(), opts).unwrap();
    for (i, (f, wire)) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as i64 * 1000, *wire, f)
            .unwrap();
    }
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    let mut tally = Tally::default();
    compare_pcap(&path, "offload frame", &mut tally);
    assert_eq!(tally.packets, frames.len());
    assert!(tally.errors.is_empty(), "{:#?}", tally.errors);
    let legit: Vec<_> = tally.legit.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(legit, [("bogus-ip-len", 1), ("udp-len-zero", 1)]);
    // The lengths were compared, not excused: 5 IPv4 lengths of 6 (the bogus one is tshark's
    // to drop), both jumbograms, and the TCP payloads of the super-frames and the plain frame.
    let compared = |what| tally.compared.get(what).copied().unwrap_or(0);
    assert_eq!(
        (
            compared("ipv4.len"),
            compared("ipv6.jumbo"),
            compared("tcp.payload_len")
        ),
        (5, 2, 5)
    );
    assert_eq!(compared("udp.payload_len"), 1);
}
