//! Hand-built frames for every link type the decoder knows. The oracle is the builder: it knows
//! every value it wrote and the byte offset by which each one is complete, so every prefix of
//! every frame has a known expected decode (fields whose bytes are all there, nothing else;
//! `truncated` exactly when the cut falls inside the header stack).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use burstcore::wire::{decode, decode_frame, link_mtu_frame, linktype_name, Headers};

const ETH: u16 = 1;
const NULL: u16 = 0;
const RAW: u16 = 101;
const RAW12: u16 = 12;
const RAW14: u16 = 14;
const LOOP: u16 = 108;
const SLL: u16 = 113;
const SLL2: u16 = 276;
const LT_IPV4: u16 = 228;
const LT_IPV6: u16 = 229;

/// Offset (frame length) at which each field becomes decodable. `usize::MAX` = never expected.
#[derive(Clone, Copy)]
struct Need {
    vlan: usize,
    vlan_inner: usize,
    ethertype: usize,
    ip_len: usize,
    src: usize,
    dst: usize,
    ip_proto: usize,
    sport: usize,
    dport: usize,
    payload_len: usize,
    tcp_flags: usize,
    tcp_seq: usize,
    roce_opcode: usize,
    roce_qp: usize,
    fragment: usize,
    /// End of the header stack: shorter prefixes are `truncated`.
    end: usize,
}

impl Default for Need {
    fn default() -> Self {
        let m = usize::MAX;
        Need {
            vlan: m,
            vlan_inner: m,
            ethertype: m,
            ip_len: m,
            src: m,
            dst: m,
            ip_proto: m,
            sport: m,
            dport: m,
            payload_len: m,
            tcp_flags: m,
            tcp_seq: m,
            roce_opcode: m,
            roce_qp: m,
            fragment: m,
            end: 0,
        }
    }
}

#[derive(Default)]
struct Frame {
    b: Vec<u8>,
    want: Headers,
    need: Need,
    /// Patches applied by `finish`: (offset of a u16 length field, start it counts from, bias).
    lengths: Vec<(usize, usize, usize)>,
    /// Where the transport payload starts, when `payload_len` counts to the end of the frame.
    payload_from: Option<usize>,
    /// Offset of an 802.3 length field, counting the rest of the frame.
    llc_len: Option<usize>,
    /// Offset of a PPPoE length field, counting the rest of the frame (tshark, and the decoder,
    /// cut the packet to it).
    pppoe_len: Option<usize>,
}

impl Frame {
    fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.b.extend_from_slice(bytes);
        self
    }
    fn put16(&mut self, v: u16) -> &mut Self {
        self.put(&v.to_be_bytes())
    }
    fn at(&self) -> usize {
        self.b.len()
    }

    fn ethernet(&mut self, tags: &[(u16, u16)], ethertype: u16) -> &mut Self {
        self.put(&[0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]);
        for (i, &(tpid, id)) in tags.iter().enumerate() {
            self.put16(tpid);
            self.put16(0xe000 | id); // PCP 7, DEI 0
            let need = self.at();
            match i {
                0 => (self.want.vlan, self.need.vlan) = (Some(id), need),
                1 => (self.want.vlan_inner, self.need.vlan_inner) = (Some(id), need),
                _ => {}
            }
        }
        self.put16(ethertype);
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), self.at());
        self.need.end = self.at();
        self
    }

    /// A PPPoE session header and PPP protocol after an Ethernet type of 0x8864: the IP inside
    /// is read as if carried directly.
    fn pppoe(&mut self, ppp_protocol: u16, ethertype: u16) -> &mut Self {
        self.put(&[0x11, 0x00, 0x12, 0x34]);
        self.pppoe_len = Some(self.at());
        self.put16(0).put16(ppp_protocol);
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), self.at());
        self.need.end = self.at();
        self
    }

    /// An MPLS label stack after an EtherType of 0x8847/0x8848 (or an SLL protocol): the IP
    /// under it is told by its first nibble, which decides the EtherType read.
    fn mpls(&mut self, labels: &[u32], ethertype: u16) -> &mut Self {
        for (i, &label) in labels.iter().enumerate() {
            let bottom = u32::from(i + 1 == labels.len());
            self.put(&(label << 12 | 5 << 9 | bottom << 8 | 64).to_be_bytes());
        }
        // The EtherType is known from the payload's first byte.
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), self.at() + 1);
        self.need.end = self.at() + 1;
        self
    }

    /// An Ethernet pseudowire after an MPLS label stack: a control word (with a sequence
    /// number) where asked, then an Ethernet header of vendor-assigned addresses. Without a
    /// control word the frame is told from one by the IP version nibble after its EtherType.
    fn pseudowire(&mut self, labels: &[u32], control_word: bool, ethertype: u16) -> &mut Self {
        for (i, &label) in labels.iter().enumerate() {
            let bottom = u32::from(i + 1 == labels.len());
            self.put(&(label << 12 | bottom << 8 | 64).to_be_bytes());
        }
        if control_word {
            self.put(&[0, 0, 0x12, 0x34]);
        }
        self.put(&[0x00, 0x1b, 0x21, 1, 2, 3, 0x00, 0x00, 0x0c, 4, 5, 6])
            .put16(ethertype);
        let need = self.at() + usize::from(!control_word);
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), need);
        self.need.end = need;
        self
    }

    /// An 802.3 frame: a length field (patched by `finish`), then LLC/SNAP with an EtherType.
    fn ethernet_snap(&mut self, oui: [u8; 3], ethertype: u16) -> &mut Self {
        self.put(&[0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]);
        self.llc_len = Some(self.at());
        self.put16(0)
            .put(&[0xaa, 0xaa, 0x03])
            .put(&oui)
            .put16(ethertype);
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), self.at());
        self.need.end = self.at();
        self
    }

    fn sll(&mut self, protocol: u16) -> &mut Self {
        self.put16(0).put16(1).put16(6);
        self.put(&[0x02, 0, 0, 0, 0, 1, 0, 0]).put16(protocol);
        (self.want.ethertype, self.need.ethertype) = (Some(protocol), self.at());
        self.need.end = self.at();
        self
    }

    fn sll2(&mut self, protocol: u16) -> &mut Self {
        self.put16(protocol)
            .put16(0)
            .put(&7u32.to_be_bytes())
            .put16(1);
        self.put(&[4, 6]).put(&[0x02, 0, 0, 0, 0, 1, 0, 0]);
        (self.want.ethertype, self.need.ethertype) = (Some(protocol), self.at());
        self.need.end = self.at();
        self
    }

    fn af(&mut self, bytes: [u8; 4], ethertype: u16) -> &mut Self {
        self.put(&bytes);
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), 4);
        self.need.end = 4;
        self
    }

    /// Direct IP link types: the EtherType is implied, no bytes needed.
    fn implied(&mut self, ethertype: u16) -> &mut Self {
        (self.want.ethertype, self.need.ethertype) = (Some(ethertype), 0);
        self
    }

    fn ipv4(&mut self, proto: u8, frag_word: u16, options: usize) -> &mut Self {
        let start = self.at();
        let ihl = 5 + options / 4;
        self.put(&[0x40 | ihl as u8, 0]);
        self.lengths.push((self.at(), start, 0));
        self.put16(0)
            .put16(0x1234)
            .put16(frag_word)
            .put(&[64, proto, 0, 0]);
        self.put(&[192, 0, 2, 1]).put(&[198, 51, 100, 7]);
        self.put(&vec![1u8; options]); // NOP options
        let fixed = start + 20;
        self.want.src = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
        self.want.dst = Some(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)));
        self.want.ip_proto = Some(proto);
        // Each field as soon as its bytes are there, as tshark shows them and BPF loads them.
        (self.need.ip_len, self.need.ip_proto) = (start + 4, start + 10);
        (self.need.src, self.need.dst) = (start + 16, fixed);
        if frag_word & 0x1fff != 0 {
            (self.want.fragment, self.need.fragment) = (true, start + 8);
            self.need.end = fixed;
        } else {
            self.need.end = self.at();
        }
        self
    }

    /// `exts`: (type, total length in bytes) in chain order; `frag_offset` applies to a 44.
    fn ipv6(&mut self, exts: &[(u8, usize)], proto: u8, frag_offset: u16) -> &mut Self {
        let start = self.at();
        let first = exts.first().map_or(proto, |e| e.0);
        self.put(&[0x60, 0, 0, 0]);
        self.lengths.push((self.at(), start, 40));
        self.put16(0).put(&[first, 64]);
        let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8:ffff::2".parse().unwrap();
        self.put(&src.octets()).put(&dst.octets());
        self.want.src = Some(IpAddr::V6(src));
        self.want.dst = Some(IpAddr::V6(dst));
        // The payload length and the Next Header from 7 bytes on (tshark shows both then), the
        // Next Header as the protocol only where no extension header follows.
        self.need.ip_len = start + 7;
        (self.need.src, self.need.dst) = (start + 24, self.at());
        self.need.ip_proto = if exts.is_empty() {
            start + 7
        } else {
            self.at()
        };
        self.want.ip_proto = Some(proto);
        for (i, &(ty, len)) in exts.iter().enumerate() {
            let next = exts.get(i + 1).map_or(proto, |e| e.0);
            let ext_start = self.at();
            let mut body = vec![0u8; len];
            body[0] = next;
            match ty {
                44 => body[2..4].copy_from_slice(&(frag_offset << 3).to_be_bytes()),
                51 => body[1] = (len / 4 - 2) as u8,
                _ => body[1] = (len / 8 - 1) as u8,
            }
            self.put(&body);
            // The last header's first byte names the transport; earlier ones need their length.
            self.need.ip_proto = ext_start
                + if i + 1 == exts.len() {
                    1
                } else if ty == 44 {
                    4
                } else {
                    2
                };
            if ty == 44 && frag_offset != 0 {
                (self.want.fragment, self.need.fragment) = (true, ext_start + 4);
                self.need.end = ext_start + 4;
                return self;
            }
        }
        self.need.end = self.at();
        self
    }

    fn tcp(&mut self, flags: u8, options: usize, payload: usize) -> &mut Self {
        let s = self.at();
        let doff = (5 + options / 4) as u8;
        self.put16(40000)
            .put16(443)
            .put(&[0x80, 0, 0, 1, 0, 0, 0, 2]);
        self.put(&[doff << 4, flags])
            .put16(65535)
            .put(&[0, 0, 0, 0]);
        self.put(&vec![1u8; options]);
        self.want.sport = Some(40000);
        self.want.dport = Some(443);
        self.want.tcp_flags = Some(flags);
        // The top bit set: a sequence number is unsigned.
        self.want.tcp_seq = Some(0x8000_0001);
        (self.need.sport, self.need.dport, self.need.tcp_seq) = (s + 2, s + 4, s + 8);
        (self.need.payload_len, self.need.tcp_flags) = (s + 13, s + 14);
        self.need.end = self.at();
        self.payload_from = Some(self.at());
        self.put(&vec![0xab; payload])
    }

    fn udp(&mut self, dport: u16, payload: &[u8]) -> &mut Self {
        let s = self.at();
        self.put16(5353).put16(dport);
        self.lengths.push((self.at(), s, 0));
        self.put16(0).put16(0);
        self.want.sport = Some(5353);
        self.want.dport = Some(dport);
        (self.need.sport, self.need.dport, self.need.payload_len) = (s + 2, s + 4, s + 6);
        self.need.end = self.at();
        self.payload_from = Some(self.at());
        self.put(payload)
    }

    fn bth(&mut self, opcode: u8, qp: u32) -> &mut Self {
        let s = self.at();
        let q = qp.to_be_bytes();
        self.put(&[opcode, 0x40, 0xff, 0xff, 0, q[1], q[2], q[3], 0x80, 0, 0, 9]);
        self.want.roce_opcode = Some(opcode);
        self.want.roce_qp = Some(qp & 0x00ff_ffff);
        (self.need.roce_opcode, self.need.roce_qp) = (s + 1, s + 8);
        self.need.end = self.at();
        self.put(&[0u8; 64])
    }

    fn finish(&mut self) -> (Vec<u8>, Headers, Need) {
        let len = self.b.len();
        for at in [self.llc_len, self.pppoe_len].into_iter().flatten() {
            let v = (len - at - 2) as u16;
            self.b[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        for &(at, from, bias) in &self.lengths {
            let v = (len - from - bias) as u16;
            self.b[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        if let Some(&(_, from, bias)) = self.lengths.first() {
            self.want.ip_len = Some((len - from - bias + bias) as u32);
        }
        if let Some(p) = self.payload_from {
            self.want.payload_len = Some((len - p) as u32);
        }
        (self.b.clone(), self.want, self.need)
    }
}

/// What decoding the first `n` bytes of a frame of `full` bytes (captured whole, as `decode`
/// takes them) gives. The builder's frames end where their IP packet does, so a prefix that
/// holds the IP header but not the whole frame claims an IP length past its frame.
fn expected(want: &Headers, need: &Need, n: usize, full: usize) -> Headers {
    fn f<T: Copy>(v: Option<T>, need: usize, n: usize) -> Option<T> {
        if n >= need {
            v
        } else {
            None
        }
    }
    Headers::default()
        .with_vlan(f(want.vlan, need.vlan, n))
        .with_vlan_inner(f(want.vlan_inner, need.vlan_inner, n))
        .with_ethertype(f(want.ethertype, need.ethertype, n))
        .with_src(f(want.src, need.src, n))
        .with_dst(f(want.dst, need.dst, n))
        .with_ip_len(f(want.ip_len, need.ip_len, n))
        .with_ip_proto(f(want.ip_proto, need.ip_proto, n))
        .with_sport(f(want.sport, need.sport, n))
        .with_dport(f(want.dport, need.dport, n))
        .with_payload_len(f(want.payload_len, need.payload_len, n))
        .with_tcp_flags(f(want.tcp_flags, need.tcp_flags, n))
        .with_tcp_seq(f(want.tcp_seq, need.tcp_seq, n))
        .with_roce_opcode(f(want.roce_opcode, need.roce_opcode, n))
        .with_roce_qp(f(want.roce_qp, need.roce_qp, n))
        .with_fragment(want.fragment && n >= need.fragment)
        .with_truncated(n < need.end)
        .with_unknown_link(false)
        .with_ip_len_past_frame(want.ip_len.is_some() && n >= need.ip_len && n < full)
}

/// Decode every prefix of the frame and compare with what the builder says is decodable.
fn check_all_prefixes(name: &str, linktype: u16, frame: &mut Frame) {
    let (bytes, want, need) = frame.finish();
    assert_eq!(
        decode(linktype, &bytes),
        expected(&want, &need, bytes.len(), bytes.len()),
        "{name}: full"
    );
    for n in 0..bytes.len() {
        assert_eq!(
            decode(linktype, &bytes[..n]),
            expected(&want, &need, n, bytes.len()),
            "{name}: prefix of {n} of {} bytes",
            bytes.len()
        );
    }
}

#[test]
fn ethernet_ipv4_tcp() {
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800)
        .ipv4(6, 0x4000, 0)
        .tcp(0x18, 0, 1460);
    assert_eq!(f.b.len(), 1514);
    check_all_prefixes("eth/ipv4/tcp", ETH, &mut f);
}

#[test]
fn ethernet_ipv4_options_tcp_options() {
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800).ipv4(6, 0, 8).tcp(0x02, 12, 0);
    check_all_prefixes("eth/ipv4+opts/tcp+opts", ETH, &mut f);
}

#[test]
fn vlan_and_qinq() {
    for (name, tags) in [
        ("802.1Q", vec![(0x8100, 100)]),
        ("802.1ad+802.1Q", vec![(0x88a8, 10), (0x8100, 4094)]),
        ("0x9100+802.1Q", vec![(0x9100, 7), (0x8100, 1)]),
        ("three tags", vec![(0x88a8, 1), (0x8100, 2), (0x8100, 3)]),
    ] {
        let mut f = Frame::default();
        f.ethernet(&tags, 0x0800).ipv4(17, 0, 0).udp(53, &[0; 30]);
        check_all_prefixes(name, ETH, &mut f);
        let mut f = Frame::default();
        f.ethernet(&tags, 0x86dd).ipv6(&[], 6, 0).tcp(0x10, 0, 100);
        check_all_prefixes(name, ETH, &mut f);
    }
}

#[test]
fn ethernet_non_ip() {
    // ARP: EtherType kept, nothing else, nothing truncated.
    let mut f = Frame::default();
    f.ethernet(&[], 0x0806).put(&[0u8; 28]);
    check_all_prefixes("arp", ETH, &mut f);
    // 802.3 length field + plain LLC (spanning tree) and SNAP of another OUI (Cisco's CDP):
    // no EtherType, no IP, nothing truncated at any cut (the LLC header says it is no SNAP
    // carrying an EtherType before the cut or the length runs out).
    // The byte that tells it: (name, LLC header, its offset in the header).
    for (name, llc, tells) in [
        ("stp", &[0x42, 0x42, 0x03, 0, 0, 0, 0x08, 0x00][..], 0),
        ("cdp", &[0xaa, 0xaa, 0x03, 0, 0, 0x0c, 0x20, 0x00], 5),
        ("snap not ui", &[0xaa, 0xaa, 0xf3, 0, 0, 0, 0x08, 0x00], 2),
    ] {
        let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0, 46];
        frame.extend_from_slice(llc);
        frame.extend_from_slice(&[0x45; 38]);
        for n in 0..=frame.len() {
            let want = Headers::default().with_truncated(n <= 14 + tells);
            assert_eq!(decode(ETH, &frame[..n]), want, "{name}: prefix of {n}");
        }
    }
    // SNAP whose 802.3 length is too short for its header: nothing, and not truncated.
    let mut f = Frame::default();
    f.ethernet_snap([0, 0, 0], 0x0800)
        .ipv4(6, 0, 0)
        .tcp(0x10, 0, 10);
    let (mut bytes, _, _) = f.finish();
    for len in [0u16, 5, 7] {
        bytes[12..14].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            decode(ETH, &bytes),
            Headers::default(),
            "802.3 length {len}"
        );
    }
    // 1501-1535: neither a length nor an EtherType.
    bytes[12..14].copy_from_slice(&1501u16.to_be_bytes());
    assert_eq!(decode(ETH, &bytes), Headers::default(), "802.3 length 1501");
}

#[test]
fn mpls_label_stacks() {
    for labels in [&[100][..], &[100, 200, 300], &[0]] {
        for ty in [0x8847, 0x8848] {
            let mut f = Frame::default();
            f.ethernet(&[], ty)
                .mpls(labels, 0x0800)
                .ipv4(6, 0, 0)
                .tcp(0x10, 0, 100);
            check_all_prefixes(&format!("mpls {labels:?}/ipv4/tcp"), ETH, &mut f);
            let mut f = Frame::default();
            f.ethernet(&[(0x8100, 9)], ty)
                .mpls(labels, 0x86dd)
                .ipv6(&[], 17, 0)
                .udp(53, &[0; 20]);
            check_all_prefixes(&format!("vlan/mpls {labels:?}/ipv6/udp"), ETH, &mut f);
        }
    }
    let mut f = Frame::default();
    f.sll(0x8847)
        .mpls(&[16, 17], 0x0800)
        .ipv4(17, 0, 0)
        .udp(4000, &[0; 8]);
    check_all_prefixes("sll/mpls/ipv4/udp", SLL, &mut f);
    let mut f = Frame::default();
    f.sll2(0x8847)
        .mpls(&[16], 0x86dd)
        .ipv6(&[], 6, 0)
        .tcp(0x02, 0, 0);
    check_all_prefixes("sll2/mpls/ipv6/tcp", SLL2, &mut f);
    // Ethernet pseudowires (first nibble 0), with a control word and without, IPv4 and IPv6.
    for control_word in [true, false] {
        let mut f = Frame::default();
        f.ethernet(&[], 0x8847)
            .pseudowire(&[16, 100], control_word, 0x0800)
            .ipv4(6, 0, 0)
            .tcp(0x10, 0, 20);
        check_all_prefixes(&format!("pw (cw {control_word})/ipv4/tcp"), ETH, &mut f);
        let mut f = Frame::default();
        f.ethernet(&[(0x8100, 5)], 0x8848)
            .pseudowire(&[100], control_word, 0x86dd)
            .ipv6(&[], 17, 0)
            .udp(53, &[0; 12]);
        check_all_prefixes(
            &format!("vlan/pw (cw {control_word})/ipv6/udp"),
            ETH,
            &mut f,
        );
    }
    // A G-ACh header (nibble 1): no network layer, MPLS's EtherType, not truncated.
    let mut f = Frame::default();
    f.ethernet(&[], 0x8847)
        .put(&[0, 0x06, 0x41, 64])
        .put(&[0x10, 0, 0, 0x21, 0x45, 0]);
    let (bytes, _, _) = f.finish();
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.ethertype, h.src, h.truncated),
        (Some(0x8847), None, false)
    );
    // A pseudowire whose frame is MPLS again, many times over: read round a loop, not by
    // recursion, so that the deepest nesting a frame can hold costs no stack.
    let mut f = Frame::default();
    f.ethernet(&[], 0x8847);
    for _ in 0..20_000 {
        f.pseudowire(&[100], true, 0x8847);
    }
    f.pseudowire(&[100], true, 0x0800)
        .ipv4(17, 0, 0)
        .udp(9, &[]);
    let (bytes, want, _) = f.finish();
    let h = decode(ETH, &bytes);
    assert_eq!((h.src, h.dport, h.truncated), (want.src, Some(9), false));
}

#[test]
fn llc_snap() {
    for oui in [[0, 0, 0], [0, 0, 0xf8]] {
        let mut f = Frame::default();
        f.ethernet_snap(oui, 0x0800).ipv4(6, 0, 0).tcp(0x18, 0, 200);
        check_all_prefixes("snap/ipv4/tcp", ETH, &mut f);
        let mut f = Frame::default();
        f.ethernet_snap(oui, 0x86dd)
            .ipv6(&[], 17, 0)
            .udp(53, &[0; 30]);
        check_all_prefixes("snap/ipv6/udp", ETH, &mut f);
    }
    // SNAP's EtherType is read on as Ethernet II's: a tag, MPLS, PPPoE.
    let mut f = Frame::default();
    f.ethernet_snap([0, 0, 0], 0x8847)
        .mpls(&[5], 0x0800)
        .ipv4(17, 0, 0)
        .udp(9, &[0; 4]);
    check_all_prefixes("snap/mpls/ipv4/udp", ETH, &mut f);
    let mut f = Frame::default();
    f.ethernet_snap([0, 0, 0], 0x8864)
        .pppoe(0x0021, 0x0800)
        .ipv4(6, 0, 0)
        .tcp(0x10, 0, 10);
    check_all_prefixes("snap/pppoe/ipv4/tcp", ETH, &mut f);
    // Padding past the 802.3 length is not the packet's: an IP length past it is damage.
    let mut f = Frame::default();
    f.ethernet_snap([0, 0, 0], 0x0800)
        .ipv4(6, 0, 0)
        .tcp(0x10, 0, 0);
    let (mut bytes, want, _) = f.finish();
    let (len, ip_len) = (bytes.len() - 14, want.ip_len.unwrap());
    bytes.extend_from_slice(&[0; 20]);
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.src, h.ip_len, h.ip_len_past_frame),
        (want.src, Some(ip_len), false)
    );
    bytes[12..14].copy_from_slice(&((len - 1) as u16).to_be_bytes());
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.src, h.ip_len, h.ip_len_past_frame),
        (want.src, Some(ip_len), true)
    );
}

#[test]
fn another_ip_version_is_no_cut_packet() {
    // Under an IP EtherType, a first byte that says another version (or an IPv4 header length
    // below 20) is not IP, whatever its length: nothing decoded, and nothing cut off.
    let mut v4_under_v6 = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd];
    v4_under_v6.extend_from_slice(&[0x45, 0, 0, 30]);
    v4_under_v6.resize(14 + 30, 0);
    let mut v5 = v4_under_v6[..12].to_vec();
    v5.extend_from_slice(&[0x08, 0x00, 0x55, 0, 0, 10]);
    v5.resize(14 + 10, 0);
    let mut ihl4 = v5.clone();
    ihl4[14] = 0x44;
    for (name, frame) in [
        ("ipv4 under 0x86dd", &v4_under_v6),
        ("version 5", &v5),
        ("ihl 4", &ihl4),
    ] {
        let h = decode(ETH, frame);
        assert_eq!(
            (h.src, h.ip_proto, h.truncated),
            (None, None, false),
            "{name}"
        );
    }
    // The same frames cut before the version nibble are cut.
    assert!(decode(ETH, &v4_under_v6[..14]).truncated);
    assert!(decode(ETH, &v5[..14]).truncated);
}

#[test]
fn cooked_linux() {
    let mut f = Frame::default();
    f.sll(0x0800).ipv4(6, 0, 0).tcp(0x11, 0, 10);
    check_all_prefixes("sll/ipv4/tcp", SLL, &mut f);
    let mut f = Frame::default();
    f.sll2(0x86dd).ipv6(&[(0, 8)], 17, 0).udp(443, &[1; 20]);
    check_all_prefixes("sll2/ipv6/hbh/udp", SLL2, &mut f);
    let mut f = Frame::default();
    f.sll(0x0806).put(&[0u8; 28]);
    check_all_prefixes("sll/arp", SLL, &mut f);
    // A PPPoE session as `tcpdump -i any` gives it (tshark reads the IP inside too).
    let mut f = Frame::default();
    f.sll(0x8864)
        .pppoe(0x0021, 0x0800)
        .ipv4(6, 0, 0)
        .tcp(0x10, 0, 30);
    check_all_prefixes("sll/pppoe/ipv4/tcp", SLL, &mut f);
    let mut f = Frame::default();
    f.sll2(0x8864)
        .pppoe(0x0057, 0x86dd)
        .ipv6(&[], 17, 0)
        .udp(53, &[0; 12]);
    check_all_prefixes("sll2/pppoe/ipv6/udp", SLL2, &mut f);
    // Netlink sockets: the protocol field is a netlink family, not an EtherType.
    let mut nl = vec![0, 4, 0x03, 0x38, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00];
    nl.extend_from_slice(&[0x45; 40]);
    assert_eq!(decode(SLL, &nl), Headers::default());
}

#[test]
fn raw_ip_link_types() {
    for lt in [RAW, RAW12, RAW14] {
        let mut f = Frame::default();
        f.implied(0x0800).ipv4(17, 0, 0).udp(123, &[0; 48]);
        f.need.ethertype = 1; // the version nibble must be there
        f.need.end = f.need.end.max(1);
        check_all_prefixes("raw v4", lt, &mut f);
        let mut f = Frame::default();
        f.implied(0x86dd).ipv6(&[], 6, 0).tcp(0x12, 20, 0);
        f.need.ethertype = 1;
        check_all_prefixes("raw v6", lt, &mut f);
        // Neither version: nothing.
        assert_eq!(decode(lt, &[0x50; 40]), Headers::default());
    }
    let mut f = Frame::default();
    f.implied(0x0800)
        .ipv4(1, 0, 0)
        .put(&[8, 0, 0, 0, 0, 0, 0, 0]);
    check_all_prefixes("ipv4/icmp", LT_IPV4, &mut f);
    let mut f = Frame::default();
    f.implied(0x86dd)
        .ipv6(&[], 58, 0)
        .put(&[128, 0, 0, 0, 0, 0, 0, 0]);
    check_all_prefixes("ipv6/icmpv6", LT_IPV6, &mut f);
}

#[test]
fn bsd_loopback() {
    for (name, af, ethertype) in [
        ("le AF_INET", [2, 0, 0, 0], 0x0800),
        ("be AF_INET", [0, 0, 0, 2], 0x0800),
        ("le 24", [24, 0, 0, 0], 0x86dd),
        ("be 28", [0, 0, 0, 28], 0x86dd),
        ("le 30", [30, 0, 0, 0], 0x86dd),
    ] {
        let mut f = Frame::default();
        f.af(af, ethertype);
        if ethertype == 0x0800 {
            f.ipv4(6, 0, 0).tcp(0x10, 0, 5);
        } else {
            f.ipv6(&[], 6, 0).tcp(0x10, 0, 5);
        }
        check_all_prefixes(name, NULL, &mut f);
    }
    let mut f = Frame::default();
    f.af([0, 0, 0, 2], 0x0800).ipv4(17, 0, 0).udp(9, &[0; 4]);
    check_all_prefixes("loop AF_INET", LOOP, &mut f);
    let mut f = Frame::default();
    f.af([0, 0, 0, 24], 0x86dd).ipv6(&[], 17, 0).udp(9, &[0; 4]);
    check_all_prefixes("loop 24", LOOP, &mut f);
    // LOOP is always network order; an unknown family decodes nothing.
    let mut v4 = vec![2, 0, 0, 0, 0x45];
    v4.resize(60, 0);
    assert_eq!(decode(LOOP, &v4), Headers::default());
    assert_eq!(decode(NULL, &[7, 0, 0, 0, 0x45, 0]), Headers::default());
    // An Ethertype in the header's last two bytes, as some writers put it (tshark reads it so):
    // taken when the IP version agrees.
    for (name, af, ethertype) in [
        ("ethertype IPv4", [0x0f, 0, 0x08, 0x00], 0x0800),
        ("ethertype IPv6", [0, 0, 0x86, 0xdd], 0x86dd),
    ] {
        let mut f = Frame::default();
        f.af(af, ethertype);
        if ethertype == 0x0800 {
            f.ipv4(17, 0, 0).udp(9, &[0; 4]);
        } else {
            f.ipv6(&[], 17, 0).udp(9, &[0; 4]);
        }
        check_all_prefixes(name, NULL, &mut f);
    }
    let mut v6 = vec![0x0f, 0, 0x08, 0x00, 0x60];
    v6.resize(60, 0);
    assert_eq!(
        decode(NULL, &v6).ethertype,
        None,
        "IPv4's type over an IPv6 packet"
    );
}

#[test]
fn pppoe_session() {
    let mut f = Frame::default();
    f.ethernet(&[], 0x8864)
        .pppoe(0x0021, 0x0800)
        .ipv4(6, 0, 0)
        .tcp(0x10, 0, 100);
    check_all_prefixes("pppoe/ipv4/tcp", ETH, &mut f);
    let mut f = Frame::default();
    f.ethernet(&[(0x8100, 7)], 0x8864)
        .pppoe(0x0057, 0x86dd)
        .ipv6(&[], 17, 0)
        .udp(9, &[0; 4]);
    check_all_prefixes("vlan/pppoe/ipv6/udp", ETH, &mut f);
    // LCP and the like carry no network layer.
    let mut lcp = Frame::default();
    lcp.ethernet(&[], 0x8864)
        .put(&[0x11, 0, 0x12, 0x34, 0, 4, 0xc0, 0x21, 1, 1, 0, 4]);
    let (bytes, _, _) = lcp.finish();
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.ethertype, h.src, h.truncated),
        (Some(0x8864), None, false)
    );
}

#[test]
fn ipv4_fragments() {
    // First fragment (MF set, offset 0): transport decoded.
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800)
        .ipv4(17, 0x2000, 0)
        .udp(4000, &[0; 100]);
    check_all_prefixes("first fragment", ETH, &mut f);
    // Later fragment: protocol kept, no ports.
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800)
        .ipv4(17, 0x00b9, 0)
        .put(&[0xee; 200]);
    check_all_prefixes("later fragment", ETH, &mut f);
}

/// Mobility (135) and HIP (139) are the packet's last header (their next header is 59; a
/// message of their own is what they carry), as tshark reads them: a TCP header built after
/// them is not looked for. Shim6 (140) is walked through (`ipv6_extension_chains`).
#[test]
fn mobility_and_hip_end_the_ipv6_chain() {
    for last in [135u8, 139] {
        let mut f = Frame::default();
        f.ethernet(&[], 0x86dd)
            .ipv6(&[(60, 8), (last, 8)], 6, 0)
            .tcp(0x18, 0, 64);
        let (bytes, _, _) = f.finish();
        let h = decode(ETH, &bytes);
        assert_eq!(
            (h.ip_proto, h.sport, h.dport, h.payload_len, h.truncated),
            (Some(last), None, None, None, false),
            "{last}"
        );
        assert!(h.src.is_some() && h.ip_len == Some(bytes.len() as u32 - 14));
    }
}

#[test]
fn ipv6_extension_chains() {
    let chains: &[(&str, &[(u8, usize)])] = &[
        ("hbh", &[(0, 8)]),
        ("hbh+dst+routing", &[(0, 16), (60, 8), (43, 24)]),
        ("first fragment", &[(44, 8)]),
        ("ah", &[(51, 24)]),
        ("dst+ah+shim6", &[(60, 8), (51, 12), (140, 16)]),
    ];
    for (name, exts) in chains {
        let mut f = Frame::default();
        f.ethernet(&[], 0x86dd).ipv6(exts, 6, 0).tcp(0x18, 0, 64);
        check_all_prefixes(name, ETH, &mut f);
        let mut f = Frame::default();
        f.implied(0x86dd)
            .ipv6(exts, 17, 0)
            .udp(4791, &[])
            .bth(0x0a, 0x12_3456);
        f.need.ethertype = 1;
        check_all_prefixes(name, RAW, &mut f);
    }
    // Non-first fragment after a hop-by-hop header.
    let mut f = Frame::default();
    f.ethernet(&[], 0x86dd)
        .ipv6(&[(0, 8), (44, 8)], 6, 185)
        .put(&[0; 300]);
    check_all_prefixes("later fragment", ETH, &mut f);
    // ESP and no-next-header end the chain.
    for proto in [50u8, 59] {
        let mut f = Frame::default();
        f.ethernet(&[], 0x86dd)
            .ipv6(&[(60, 8)], proto, 0)
            .put(&[0; 40]);
        check_all_prefixes("esp / no next", ETH, &mut f);
    }
}

#[test]
fn rocev2_bth() {
    let mut f = Frame::default();
    f.ethernet(&[(0x8100, 3)], 0x0800)
        .ipv4(17, 0x4000, 0)
        .udp(4791, &[])
        .bth(0x04, 0xab_cdef);
    check_all_prefixes("rocev2 v4", ETH, &mut f);
    // Source port 4791 alone is not RoCE.
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800).ipv4(17, 0, 0);
    f.put16(4791).put16(1000).put16(20).put16(0).put(&[1; 12]);
    let (bytes, _, _) = f.finish();
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.roce_opcode, h.roce_qp, h.sport),
        (None, None, Some(4791))
    );
}

#[test]
fn lengths_from_headers_not_capture() {
    // Ethernet padding after a 20-byte IPv4 packet that claims TCP: not a TCP header.
    let mut frame = vec![0u8; 12];
    frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0]);
    frame.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    frame.resize(60, 0x55);
    let h = decode(ETH, &frame);
    assert_eq!((h.ip_len, h.ip_proto, h.sport), (Some(20), Some(6), None));
    assert!(!h.truncated);
    // A TCP data offset reaching past the IP payload (60 bytes of header in 32): the ports are
    // there, a payload length is not (tshark: bogus TCP header length, no tcp.len); nor is
    // one under a data offset below 5. One that fits has the rest of the IP payload.
    for (doff, payload) in [(15u8, None), (4, None), (7, Some(4)), (8, Some(0))] {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20 + 32, 0, 0, 0, 0, 64, 6, 0, 0]);
        frame.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        frame.extend_from_slice(&[0x04, 0x57, 0x08, 0xae, 0, 0, 0, 1, 0, 0, 0, 0]);
        frame.extend_from_slice(&[doff << 4, 0x18, 0x04, 0, 0, 0, 0, 0]);
        frame.resize(14 + 20 + 32, 0x01);
        let h = decode(ETH, &frame);
        assert_eq!(
            (h.sport, h.dport, h.payload_len, h.truncated),
            (Some(1111), Some(2222), payload, false),
            "data offset {doff}"
        );
    }
    // A TSO/GRO or BIG TCP super-frame carries total length 0: the packet is the rest of the
    // frame on the wire, however short the capture (tshark presumes the same).
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800)
        .ipv4(6, 0x4000, 0)
        .tcp(0x10, 0, 3000);
    let (mut bytes, _, _) = f.finish();
    bytes[16..18].copy_from_slice(&[0, 0]);
    let wire = bytes.len() as u32;
    for snap in [bytes.len(), 128, 54] {
        let h = decode_frame(ETH, &bytes[..snap], wire);
        assert_eq!(
            (h.ip_len, h.sport, h.payload_len, h.truncated),
            (Some(wire - 14), Some(40000), Some(3000), false),
            "snaplen {snap}"
        );
    }
    assert_eq!(decode(ETH, &bytes).ip_len, Some(wire - 14));
    // Past the 16-bit field's reach (BIG TCP): 185,000 bytes on the wire.
    let h = decode_frame(ETH, &bytes[..128], 185_000);
    assert_eq!(
        (h.ip_len, h.payload_len),
        (Some(185_000 - 14), Some(185_000 - 14 - 40))
    );
    // Behind a VLAN tag the link header is 18 bytes.
    let mut f = Frame::default();
    f.ethernet(&[(0x8100, 7)], 0x0800)
        .ipv4(6, 0x4000, 0)
        .tcp(0x10, 0, 3000);
    let (mut bytes, _, _) = f.finish();
    bytes[20..22].copy_from_slice(&[0, 0]);
    let h = decode_frame(ETH, &bytes[..128], 10_000);
    assert_eq!(
        (h.vlan, h.ip_len, h.payload_len),
        (Some(7), Some(10_000 - 18), Some(10_000 - 58))
    );
    // A record claiming fewer bytes on the wire than it holds: the bytes held count.
    let h = decode_frame(ETH, &bytes, 100);
    assert_eq!(h.ip_len, Some(bytes.len() as u32 - 18));
    // A total length below the header's own (but not 0) is damage: the header's fields stay, and
    // what follows is no transport header (tshark: "Bogus IP length").
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800).ipv4(6, 0, 0).tcp(0x10, 0, 30);
    let (mut bytes, _, _) = f.finish();
    bytes[16..18].copy_from_slice(&19u16.to_be_bytes());
    let h = decode(ETH, &bytes);
    assert_eq!(
        (h.ip_len, h.ip_proto, h.sport, h.payload_len, h.truncated),
        (Some(19), Some(6), None, None, false)
    );
    assert!(h.src.is_some() && h.dst.is_some());
    // An IP length past the frame on the wire is damage (tshark: "exceeds framing length"):
    // kept as claimed, and flagged. Cut by a snaplen, the frame on the wire still holds it.
    let mut f = Frame::default();
    f.ethernet(&[], 0x0800).ipv4(17, 0, 0).udp(53, &[0; 18]);
    let (mut bytes, _, _) = f.finish();
    bytes[16..18].copy_from_slice(&60_000u16.to_be_bytes());
    let whole = decode(ETH, &bytes);
    assert_eq!(
        (whole.ip_len, whole.ip_len_past_frame),
        (Some(60_000), true)
    );
    let cut = decode_frame(ETH, &bytes, 14 + 60_000);
    assert_eq!((cut.ip_len, cut.ip_len_past_frame), (Some(60_000), false));
    assert!(decode_frame(ETH, &bytes, 14 + 59_999).ip_len_past_frame);
    // Padding after the IP packet, and the super-frame's length 0 above, are no such claim.
    assert!(!decode(ETH, &frame).ip_len_past_frame);
    // UDP length below 8 is bogus (tshark: "Bad length value"): the ports stay, no payload.
    let mut f = Frame::default();
    f.implied(0x0800).ipv4(17, 0, 0).udp(53, &[0; 8]);
    let (mut bytes, _, _) = f.finish();
    bytes[24..26].copy_from_slice(&[0, 3]);
    let h = decode(LT_IPV4, &bytes);
    assert_eq!((h.dport, h.payload_len), (Some(53), None));
}

/// IPv6 payload length 0 is a BIG TCP or TSO/GRO super-frame, whose packet is the rest of the
/// frame on the wire (as IPv4's total length 0), or a jumbogram, whose Jumbo Payload option
/// says how long it is (RFC 2675).
#[test]
fn ipv6_payload_length_zero() {
    for exts in [&[][..], &[(0u8, 8usize)][..]] {
        let ext_len: u32 = exts.iter().map(|e| e.1 as u32).sum();
        let mut f = Frame::default();
        f.implied(0x86dd).ipv6(exts, 6, 0).tcp(0x10, 0, 3000);
        let (mut bytes, _, _) = f.finish();
        bytes[4..6].copy_from_slice(&[0, 0]);
        let wire = bytes.len() as u32;
        for snap in [bytes.len(), 128] {
            let h = decode_frame(LT_IPV6, &bytes[..snap], wire);
            assert_eq!(
                (h.ip_len, h.ip_proto, h.sport, h.payload_len, h.truncated),
                (Some(wire), Some(6), Some(40000), Some(3000), false),
                "{exts:?}, snaplen {snap}"
            );
        }
        let mut f = Frame::default();
        f.implied(0x86dd).ipv6(exts, 17, 0).udp(53, &[7; 100]);
        let (mut bytes, _, _) = f.finish();
        bytes[4..6].copy_from_slice(&[0, 0]);
        let h = decode(LT_IPV6, &bytes);
        assert_eq!(
            (h.ip_len, h.dport, h.payload_len),
            (Some(148 + ext_len), Some(53), Some(100)),
            "{exts:?}"
        );
        // UDP length 0 over an IP payload its field can hold is no jumbogram, but tshark reads
        // the IP payload (and warns), and so does the decoder.
        let udp = 40 + ext_len as usize;
        bytes[udp + 4..udp + 6].copy_from_slice(&[0, 0]);
        let h = decode(LT_IPV6, &bytes);
        assert_eq!((h.dport, h.payload_len), (Some(53), Some(100)), "{exts:?}");
        // Over a super-frame of 100,000 bytes on the wire it is one (RFC 2675): the IP payload.
        let h = decode_frame(LT_IPV6, &bytes, 100_000);
        assert_eq!(
            (h.ip_len, h.payload_len),
            (Some(100_000), Some(100_000 - 40 - ext_len - 8)),
            "{exts:?}"
        );
    }
}

/// A jumbogram's length is its Jumbo Payload option's, found among the Hop-by-Hop options
/// past any padding, whatever the frame's length on the wire; an option of another kind, or a
/// jumbo option in a packet whose payload length is not 0, changes nothing.
#[test]
fn ipv6_jumbo_payload_option() {
    const JUMBO: u32 = 200_000;
    // Hop-by-hop options area (14 bytes): Pad1, Pad1, PadN of 2, the jumbo option, PadN of 0.
    let mut options = vec![0u8, 0, 1, 2, 0, 0, 0xc2, 4];
    options.extend_from_slice(&JUMBO.to_be_bytes());
    options.extend_from_slice(&[1, 0]);
    for proto in [6u8, 17] {
        let mut f = Frame::default();
        f.implied(0x86dd).ipv6(&[(0, 16)], proto, 0);
        if proto == 6 {
            f.tcp(0x10, 0, 100);
        } else {
            f.udp(53, &[7; 100]);
        }
        let (mut bytes, _, _) = f.finish();
        bytes[4..6].copy_from_slice(&[0, 0]);
        bytes[42..56].copy_from_slice(&options);
        if proto == 17 {
            bytes[56 + 4..56 + 6].copy_from_slice(&[0, 0]);
        }
        let transport = if proto == 6 { 20 } else { 8 };
        for wire in [bytes.len() as u32, 300_000] {
            let h = decode_frame(LT_IPV6, &bytes, wire);
            assert_eq!(
                (h.ip_len, h.ip_proto, h.dport.is_some(), h.payload_len),
                (
                    Some(JUMBO + 40),
                    Some(proto),
                    true,
                    Some(JUMBO - 16 - transport)
                ),
                "proto {proto}, wire {wire}"
            );
            // The jumbogram on a short frame claims past it (the corpus' ipv6-too-long-jumbo).
            assert_eq!(
                h.ip_len_past_frame,
                wire < JUMBO + 40,
                "proto {proto}, wire {wire}"
            );
        }
        // Another option kind where the jumbo was: the rest of the frame counts.
        let mut other = bytes.clone();
        other[48] = 0x3e;
        let h = decode_frame(LT_IPV6, &other, 300_000);
        assert_eq!(h.ip_len, Some(300_000), "proto {proto}");
        // A payload length that is not 0 wins over the option.
        let mut plain = bytes.clone();
        let len = (bytes.len() - 40) as u16;
        plain[4..6].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            decode(LT_IPV6, &plain).ip_len,
            Some(bytes.len() as u32),
            "proto {proto}"
        );
    }
}

/// An extension chain that runs past the IPv6 payload length (a fuzz finding): the bytes after
/// it are not this packet's, so there are no ports and no payload, and payload never exceeds
/// the IP length.
#[test]
fn ipv6_chain_past_the_payload_length() {
    let mut f = Frame::default();
    f.implied(0x86dd)
        .ipv6(&[(0, 64)], 17, 0)
        .udp(53, &[7; 1000]);
    let (mut bytes, _, _) = f.finish();
    // Payload length 30 (IP length 70) against 64 bytes of hop-by-hop options.
    bytes[4..6].copy_from_slice(&30u16.to_be_bytes());
    let h = decode(LT_IPV6, &bytes);
    assert_eq!(
        (h.ip_len, h.ip_proto, h.sport, h.dport, h.payload_len),
        (Some(70), Some(17), None, None, None)
    );
    assert!(!h.truncated);
    // Exactly as long as the chain: the transport header would start where the packet ends.
    bytes[4..6].copy_from_slice(&64u16.to_be_bytes());
    let h = decode(LT_IPV6, &bytes);
    assert_eq!((h.ip_len, h.sport, h.payload_len), (Some(104), None, None));
    assert!(!h.truncated);
}

#[test]
fn unknown_link_types() {
    // 105, 119, 127, 163 and 192 (802.11 plain and behind Prism, radiotap, AVS and PPI headers)
    // are decoded.
    for lt in [2u16, 9, 147, 239, 65535] {
        let h = decode(lt, &[0x45; 64]);
        assert_eq!(
            h,
            Headers::default().with_unknown_link(true),
            "linktype {lt}"
        );
        assert_eq!(link_mtu_frame(lt), None);
    }
}

#[test]
fn mtu_frames() {
    // Link header + 1500-byte IP MTU.
    for (lt, header) in [
        (ETH, 14),
        (SLL, 16),
        (SLL2, 20),
        (RAW, 0),
        (RAW12, 0),
        (RAW14, 0),
        (LT_IPV4, 0),
        (LT_IPV6, 0),
        (NULL, 4),
        (LOOP, 4),
    ] {
        assert_eq!(link_mtu_frame(lt), Some(1500 + header), "linktype {lt}");
    }
}

/// Names as the corpus index (written from capinfos / libpcap's tables) spells them.
#[test]
fn names_match_corpus_index() {
    let shared = shared_dir();
    let index = std::fs::read_to_string(shared.join("corpus/index.jsonl")).expect("index.jsonl");
    let mut checked = 0;
    for line in index.lines() {
        let (Some(types), Some(names)) = (
            json_array(line, "linktypes"),
            json_array(line, "linktype_names"),
        ) else {
            continue;
        };
        for (t, n) in types.iter().zip(&names) {
            let n = n.trim_matches('"');
            let t: u16 = t.parse().expect("linktype number");
            // The index writes 12 as "RAW(DLT 12)"; it is the same RAW encapsulation.
            let n = if n == "RAW(DLT 12)" { "RAW" } else { n };
            if n == "?" {
                continue;
            }
            assert_eq!(linktype_name(t), n, "linktype {t}");
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} names checked");
    // Not in the corpus, named as tcpdump's link-layer header types list names them: the three
    // whose libpcap maximum record is not 262,144 B (the oversized-record warning names them).
    for (t, n) in [(231, "DBUS"), (249, "USBPCAP"), (279, "EBHSCR")] {
        assert_eq!(linktype_name(t), n, "linktype {t}");
    }
    assert_eq!(linktype_name(40000), "UNKNOWN");
}

fn json_array(line: &str, key: &str) -> Option<Vec<String>> {
    let k = format!("\"{key}\": [");
    let start = line.find(&k)? + k.len();
    let end = start + line[start..].find(']')?;
    Some(
        line[start..end]
            .split(", ")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

fn shared_dir() -> std::path::PathBuf {
    match std::env::var("BURSTCORE_SHARED") {
        Ok(p) => p.into(),
        Err(_) => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// Random bytes and mutated real frames under every link type, at every length: no panic, and
/// unknown link types are the only ones flagged unknown.
#[test]
fn fuzz_never_panics() {
    let mut rng = SplitMix64(0x5eed);
    let mut seeds = Vec::new();
    for mut f in [
        {
            let mut f = Frame::default();
            f.ethernet(&[(0x88a8, 1), (0x8100, 2)], 0x86dd)
                .ipv6(&[(0, 8), (44, 8), (51, 12)], 17, 0)
                .udp(4791, &[])
                .bth(1, 2);
            f
        },
        {
            let mut f = Frame::default();
            f.ethernet(&[], 0x0800).ipv4(6, 0, 12).tcp(0x18, 8, 40);
            f
        },
    ] {
        seeds.push(f.finish().0);
    }
    let mut buf = vec![0u8; 256];
    for i in 0..200_000u32 {
        let n = (rng.next() % 200) as usize;
        if i % 2 == 0 {
            buf[..n].iter_mut().for_each(|b| *b = rng.next() as u8);
            // Keep plausible values in the spots that steer the decoder.
            if n > 14 && rng.next().is_multiple_of(2) {
                buf[12..14].copy_from_slice(&[0x86, 0xdd]);
                buf[14] = 0x60;
            }
        } else {
            let s = &seeds[(i as usize / 2) % seeds.len()];
            let n = n.min(s.len());
            buf[..n].copy_from_slice(&s[..n]);
            for _ in 0..(rng.next() % 4) {
                let at = (rng.next() as usize) % n.max(1);
                if at < n {
                    buf[at] = rng.next() as u8;
                }
            }
        }
        for lt in [
            ETH, NULL, RAW, RAW12, RAW14, LOOP, SLL, SLL2, LT_IPV4, LT_IPV6,
        ] {
            let h = decode(lt, &buf[..n]);
            assert!(!h.unknown_link);
            if let (Some(len), Some(IpAddr::V6(_))) = (h.ip_len, h.src) {
                assert!(len >= 40);
            }
        }
    }
}

struct SplitMix64(u64);
impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
