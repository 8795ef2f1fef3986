//! Which packets a scan or an analysis reads, by their headers: a subset of the pcap-filter
//! language tcpdump and Wireshark's capture filters speak, so that a filter copied from a
//! capture command means the same here.
//!
//! The language: primitives joined by `and` (`&&`), `or` (`||`) and `not` (`!`), with parentheses.
//! As in pcap-filter, `and` and `or` have the same precedence and group left to right (`a or b
//! and c` is `(a or b) and c`), `not` binds tightest, and a bare value after `and`/`or` takes the
//! qualifiers of the primitive before it (`port 80 or 443`, `host 10.0.0.1 or 10.0.0.2`).
//!
//! | primitive | a packet matches when |
//! |---|---|
//! | `[src\|dst] host ADDR` | its IP source / destination / either is ADDR (IPv4 or IPv6) |
//! | `[src\|dst] net NET` | that address lies in NET: `10.1.0.0/16`, `fd00::/8`, or `10.1` (whole octets) |
//! | `[tcp\|udp\|sctp] [src\|dst] port N` | that transport port is N (TCP, UDP or SCTP; not later fragments) |
//! | `[tcp\|udp\|sctp] [src\|dst] portrange N-M` | that port is in N..=M |
//! | `tcp`, `udp`, `sctp`, `icmp`, `icmp6`, `igmp` | its transport protocol is that one (`icmp`, `igmp`: IPv4; `icmp6`: IPv6) |
//! | `[ip\|ip6] proto N` | its transport protocol number is N (after IPv6 extension headers) |
//! | `ip`, `ip6`, `arp` | its network layer is IPv4, IPv6, ARP |
//! | `vlan [N]` | it has an 802.1Q tag (whose id, outer or inner, is N) |
//! | `less N`, `greater N` | its length on the wire is ≤ N, ≥ N |
//!
//! `src or dst` (the default) and `src and dst` may stand for the direction; `ip`/`ip6` before
//! `host`/`net` ask for that family. Where this differs from pcap-filter: headers are read
//! through VLAN tags whether or not the filter says `vlan` (a BPF filter without `vlan` skips
//! tagged frames), `host` looks at IP addresses only (BPF also at ARP's), service names are not
//! looked up (write port numbers), and link-layer primitives (`ether`, `wlan`, ...) are not
//! known; an expression using one is refused with the reason.

use crate::error::{Error, Result};
use crate::wire::Headers;
use std::fmt;
use std::net::IpAddr;

/// A parsed filter: [`Filter::parse`] a text, then ask [`Filter::matches`] of each packet.
#[derive(Clone, PartialEq, Eq)]
pub struct Filter {
    text: String,
    expr: Expr,
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter({:?})", self.text)
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Is(Test),
}

/// Which address or port of a packet a primitive looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Dir {
    Src,
    Dst,
    /// `src or dst`, the default.
    #[default]
    Either,
    /// `src and dst`.
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    /// Address in `net/prefix` (a host is a net of the whole length).
    Net {
        dir: Dir,
        family: Option<Family>,
        net: IpAddr,
        prefix: u8,
    },
    Port {
        dir: Dir,
        proto: Option<u8>,
        lo: u16,
        hi: u16,
    },
    Proto {
        family: Option<Family>,
        proto: u8,
    },
    Family(Family),
    EtherType(u16),
    Vlan(Option<u16>),
    Less(u32),
    Greater(u32),
}

const TCP: u8 = 6;
const UDP: u8 = 17;
const SCTP: u8 = 132;

impl Filter {
    /// Parse a filter expression (see the module doc); the error says where and what is wrong.
    pub fn parse(text: &str) -> Result<Filter> {
        let tokens = lex(text)?;
        let mut p = Parser {
            text,
            tokens,
            at: 0,
            last: None,
            depth: 0,
            primitives: 0,
        };
        if p.tokens.is_empty() {
            return Err(Error::invalid(format!(
                "filter {text:?} is empty: give an expression such as 'host 10.0.0.1 and tcp port 29500', or no filter"
            )));
        }
        let expr = p.expr()?;
        if let Some(t) = p.peek() {
            return Err(p.error_at(t, "expected 'and', 'or' or the end of the filter here"));
        }
        Ok(Filter {
            text: text.to_string(),
            expr,
        })
    }

    /// The expression as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a packet with these headers and this length on the wire passes.
    #[inline]
    pub fn matches(&self, h: &Headers, wire_len: u32) -> bool {
        self.expr.eval(h, wire_len)
    }
}

impl Expr {
    fn eval(&self, h: &Headers, wire_len: u32) -> bool {
        match self {
            Expr::And(a, b) => a.eval(h, wire_len) && b.eval(h, wire_len),
            Expr::Or(a, b) => a.eval(h, wire_len) || b.eval(h, wire_len),
            Expr::Not(a) => !a.eval(h, wire_len),
            Expr::Is(t) => t.eval(h, wire_len),
        }
    }
}

impl Test {
    fn eval(&self, h: &Headers, wire_len: u32) -> bool {
        match *self {
            Test::Net {
                dir,
                family,
                net,
                prefix,
            } => {
                let inside = |a: Option<IpAddr>| {
                    a.is_some_and(|a| {
                        family.is_none_or(|f| family_of(a) == f) && in_net(a, net, prefix)
                    })
                };
                by_dir(dir, inside(h.src), inside(h.dst))
            }
            Test::Port { dir, proto, lo, hi } => {
                let carries = match h.ip_proto {
                    Some(p) => proto.map_or(matches!(p, TCP | UDP | SCTP), |want| p == want),
                    None => false,
                };
                // A later fragment has no transport header: its ports are unknown, as in BPF.
                if !carries || h.fragment {
                    return false;
                }
                let inside = |p: Option<u16>| p.is_some_and(|p| (lo..=hi).contains(&p));
                by_dir(dir, inside(h.sport), inside(h.dport))
            }
            Test::Proto { family, proto } => {
                h.ip_proto == Some(proto) && family.is_none_or(|f| family_of_packet(h) == Some(f))
            }
            Test::Family(f) => family_of_packet(h) == Some(f),
            Test::EtherType(t) => h.ethertype == Some(t),
            Test::Vlan(None) => h.vlan.is_some(),
            Test::Vlan(Some(id)) => h.vlan == Some(id) || h.vlan_inner == Some(id),
            Test::Less(n) => wire_len <= n,
            Test::Greater(n) => wire_len >= n,
        }
    }
}

fn by_dir(dir: Dir, src: bool, dst: bool) -> bool {
    match dir {
        Dir::Src => src,
        Dir::Dst => dst,
        Dir::Either => src || dst,
        Dir::Both => src && dst,
    }
}

fn family_of(a: IpAddr) -> Family {
    match a {
        IpAddr::V4(_) => Family::V4,
        IpAddr::V6(_) => Family::V6,
    }
}

/// The packet's network layer: from its addresses, else its EtherType (a header cut short).
fn family_of_packet(h: &Headers) -> Option<Family> {
    match (h.src, h.ethertype) {
        (Some(a), _) => Some(family_of(a)),
        (None, Some(0x0800)) => Some(Family::V4),
        (None, Some(0x86dd)) => Some(Family::V6),
        _ => None,
    }
}

fn in_net(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            masked(u32::from(a).into(), prefix, 32) == u32::from(n).into()
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => masked(u128::from(a), prefix, 128) == u128::from(n),
        _ => false,
    }
}

/// The top `prefix` bits of an address `bits` long.
fn masked(a: u128, prefix: u8, bits: u32) -> u128 {
    let keep = u32::from(prefix).min(bits);
    if keep == 0 {
        return 0;
    }
    let low = bits - keep;
    (a >> low) << low
}

// ---------------------------------------------------------------------------- lexing

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    /// Character offset in the filter (0-based), for messages.
    at: usize,
}

fn lex(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<(usize, char)> = text.chars().enumerate().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' || c == '!' {
            out.push(Token {
                text: c.to_string(),
                at,
            });
            i += 1;
        } else if (c == '&' || c == '|') && chars.get(i + 1).map(|p| p.1) == Some(c) {
            out.push(Token {
                text: if c == '&' { "and" } else { "or" }.to_string(),
                at,
            });
            i += 2;
        } else if c.is_ascii_alphanumeric() || ":./-_".contains(c) {
            let start = i;
            while i < chars.len()
                && (chars[i].1.is_ascii_alphanumeric() || ":./-_".contains(chars[i].1))
            {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().map(|p| p.1).collect(),
                at,
            });
        } else {
            return Err(Error::invalid(format!(
                "filter {text:?} at character {}: {c:?} is not part of the filter language \
                 (primitives such as 'host 10.0.0.1' or 'tcp port 29500', joined by and, or, not, parentheses)",
                at + 1
            )));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------- parsing

/// Qualifiers of a primitive that takes a value, kept for the bare values that may follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Qualifiers {
    family: Option<Family>,
    proto: Option<u8>,
    dir: Dir,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Host,
    Net,
    Port,
    PortRange,
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    at: usize,
    /// The qualifiers of the last primitive with a value.
    last: Option<Qualifiers>,
    /// Parentheses and `not`s open around the term being read.
    depth: usize,
    /// Primitives read so far.
    primitives: usize,
}

/// Bounds that keep the parsed tree shallow: it is parsed, evaluated and dropped by recursion,
/// on whatever stack the caller gives (a thread of an embedding application may have little).
const MAX_DEPTH: usize = 64;
const MAX_PRIMITIVES: usize = 1_000;

const KNOWN: &str =
    "host, net, port, portrange, src, dst, tcp, udp, sctp, icmp, icmp6, igmp, ip, ip6, \
                     arp, proto, vlan, less, greater, and, or, not";

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_is(&self, word: &str) -> bool {
        self.peek()
            .is_some_and(|t| t.text.eq_ignore_ascii_case(word))
    }

    fn peek_word(&self, ahead: usize) -> Option<String> {
        self.tokens
            .get(self.at + ahead)
            .map(|t| t.text.to_ascii_lowercase())
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += usize::from(t.is_some());
        t
    }

    fn error_at(&self, t: &Token, what: &str) -> Error {
        Error::invalid(format!(
            "filter {:?} at character {} ({:?}): {what}",
            self.text,
            t.at + 1,
            t.text
        ))
    }

    fn error_end(&self, what: &str) -> Error {
        Error::invalid(format!("filter {:?} ends too soon: {what}", self.text))
    }

    /// term (('and' | 'or') term)*, left to right.
    fn expr(&mut self) -> Result<Expr> {
        let mut left = self.term()?;
        loop {
            let op = match self.peek_word(0).as_deref() {
                Some("and") => true,
                Some("or") => false,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.term()?;
            left = if op {
                Expr::And(Box::new(left), Box::new(right))
            } else {
                Expr::Or(Box::new(left), Box::new(right))
            };
        }
    }

    fn term(&mut self) -> Result<Expr> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_end(
                "a primitive (such as 'host 10.0.0.1') is missing after the last word",
            ));
        };
        let word = t.text.to_ascii_lowercase();
        if matches!(word.as_str(), "not" | "!" | "(") {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.error_at(
                    &t,
                    &format!("nested more than {MAX_DEPTH} deep (parentheses and 'not's): write it flatter"),
                ));
            }
        }
        let term = self.term_of(&t, &word);
        if matches!(word.as_str(), "not" | "!" | "(") {
            self.depth -= 1;
        }
        term
    }

    fn term_of(&mut self, t: &Token, word: &str) -> Result<Expr> {
        match word {
            "not" | "!" => {
                self.at += 1;
                Ok(Expr::Not(Box::new(self.term()?)))
            }
            "(" => {
                self.at += 1;
                let inner = self.expr()?;
                match self.next() {
                    Some(c) if c.text == ")" => Ok(inner),
                    Some(other) => Err(self.error_at(&other, "expected ')' here")),
                    None => Err(self.error_end(&format!(
                        "the '(' at character {} is never closed",
                        t.at + 1
                    ))),
                }
            }
            ")" => Err(self.error_at(t, "a ')' without its '('")),
            _ => {
                self.primitives += 1;
                if self.primitives > MAX_PRIMITIVES {
                    return Err(self.error_at(
                        t,
                        &format!(
                            "more than {MAX_PRIMITIVES} primitives: for many hosts or ports, use 'net' or 'portrange'"
                        ),
                    ));
                }
                self.primitive().map(Expr::Is)
            }
        }
    }

    fn primitive(&mut self) -> Result<Test> {
        let first = self.peek().cloned().expect("term checked a token is there");
        // A bare value after and/or: the previous primitive's qualifiers.
        if looks_like_value(&first.text) && !is_keyword(&first.text) {
            let q = match self.last {
                Some(q) => q,
                None if first.text.parse::<IpAddr>().is_ok() => Qualifiers {
                    family: None,
                    proto: None,
                    dir: Dir::Either,
                    kind: Kind::Host,
                },
                None if first.text.contains('/') => Qualifiers {
                    family: None,
                    proto: None,
                    dir: Dir::Either,
                    kind: Kind::Net,
                },
                None => {
                    return Err(self.error_at(
                        &first,
                        "a value needs a keyword before it: 'host ADDR', 'net 10.0.0.0/8', 'port N', 'portrange N-M'",
                    ))
                }
            };
            self.at += 1;
            return self.valued(q, &first);
        }

        let mut family = None;
        let mut proto = None;
        let word = first.text.to_ascii_lowercase();
        match word.as_str() {
            "ip" | "ip6" => {
                let f = if word == "ip" { Family::V4 } else { Family::V6 };
                self.at += 1;
                if self.peek_is("proto") {
                    self.at += 1;
                    let n = self.number::<u8>("a protocol number 0-255 (6 is TCP, 17 UDP)")?;
                    return Ok(Test::Proto {
                        family: Some(f),
                        proto: n,
                    });
                }
                if !self.qualifier_follows() {
                    return Ok(Test::Family(f));
                }
                family = Some(f);
            }
            "tcp" | "udp" | "sctp" => {
                let p = match word.as_str() {
                    "tcp" => TCP,
                    "udp" => UDP,
                    _ => SCTP,
                };
                self.at += 1;
                if !self.qualifier_follows() {
                    return Ok(Test::Proto {
                        family: None,
                        proto: p,
                    });
                }
                proto = Some(p);
            }
            "icmp" | "igmp" | "icmp6" => {
                self.at += 1;
                let (family, proto) = match word.as_str() {
                    "icmp" => (Family::V4, 1),
                    "igmp" => (Family::V4, 2),
                    _ => (Family::V6, 58),
                };
                return Ok(Test::Proto {
                    family: Some(family),
                    proto,
                });
            }
            "arp" => {
                self.at += 1;
                return Ok(Test::EtherType(0x0806));
            }
            "proto" => {
                self.at += 1;
                let n = self.number::<u8>("a protocol number 0-255 (6 is TCP, 17 UDP)")?;
                return Ok(Test::Proto {
                    family: None,
                    proto: n,
                });
            }
            "vlan" => {
                self.at += 1;
                if self
                    .peek()
                    .is_some_and(|t| t.text.bytes().all(|b| b.is_ascii_digit()))
                {
                    let id = self.number::<u16>("a VLAN id 0-4095")?;
                    if id > 4095 {
                        let t = &self.tokens[self.at - 1];
                        return Err(self.error_at(t, "a VLAN id is 0-4095"));
                    }
                    return Ok(Test::Vlan(Some(id)));
                }
                return Ok(Test::Vlan(None));
            }
            "less" | "greater" => {
                self.at += 1;
                let n = self.number::<u32>("a length in bytes")?;
                return Ok(if word == "less" {
                    Test::Less(n)
                } else {
                    Test::Greater(n)
                });
            }
            _ => {}
        }

        let dir = self.direction()?;
        let kind_tok = self
            .next()
            .ok_or_else(|| self.error_end("'host', 'net', 'port' or 'portrange' is missing"))?;
        let kind = match kind_tok.text.to_ascii_lowercase().as_str() {
            "host" => Kind::Host,
            "net" => Kind::Net,
            "port" => Kind::Port,
            "portrange" => Kind::PortRange,
            other => return Err(self.error_at(&kind_tok, &unknown(other))),
        };
        if proto.is_some() && matches!(kind, Kind::Host | Kind::Net) {
            return Err(self.error_at(
                &kind_tok,
                "a transport protocol qualifies a port, not an address: write e.g. 'tcp and host 10.0.0.1'",
            ));
        }
        if family.is_some() && matches!(kind, Kind::Port | Kind::PortRange) {
            return Err(self.error_at(
                &kind_tok,
                "'ip'/'ip6' qualify an address, not a port: write e.g. 'ip and port 80'",
            ));
        }
        let q = Qualifiers {
            family,
            proto,
            dir,
            kind,
        };
        let value = self.next().ok_or_else(|| {
            self.error_end(&format!("the value after '{}' is missing", kind_tok.text))
        })?;
        self.valued(q, &value)
    }

    /// Whether a direction or a host/net/port keyword comes next (so that `tcp`, `ip` qualify
    /// it rather than stand alone).
    fn qualifier_follows(&self) -> bool {
        matches!(
            self.peek_word(0).as_deref(),
            Some("src" | "dst" | "host" | "net" | "port" | "portrange")
        )
    }

    /// `src`, `dst`, `src or dst`, `src and dst`, or nothing (either).
    fn direction(&mut self) -> Result<Dir> {
        let dir = match self.peek_word(0).as_deref() {
            Some("src") => Dir::Src,
            Some("dst") => Dir::Dst,
            _ => return Ok(Dir::Either),
        };
        self.at += 1;
        // `src or dst` / `src and dst`: only when the other direction follows the operator.
        let second = self.peek_word(1);
        let other = if dir == Dir::Src { "dst" } else { "src" };
        match (self.peek_word(0).as_deref(), second.as_deref()) {
            (Some("or"), Some(w)) if w == other => {
                self.at += 2;
                Ok(Dir::Either)
            }
            (Some("and"), Some(w)) if w == other => {
                self.at += 2;
                Ok(Dir::Both)
            }
            _ => Ok(dir),
        }
    }

    /// The test of a primitive whose value is `value`.
    fn valued(&mut self, q: Qualifiers, value: &Token) -> Result<Test> {
        self.last = Some(q);
        let v = value.text.as_str();
        match q.kind {
            Kind::Host => {
                let addr: IpAddr = v.parse().map_err(|_| {
                    self.error_at(
                        value,
                        "not an IPv4 or IPv6 address (host names are not looked up; a network is 'net 10.0.0.0/8')",
                    )
                })?;
                let prefix = if addr.is_ipv4() { 32 } else { 128 };
                self.family_fits(q, addr, value)?;
                Ok(Test::Net {
                    dir: q.dir,
                    family: q.family,
                    net: addr,
                    prefix,
                })
            }
            Kind::Net => {
                let (net, prefix) = parse_net(v).map_err(|why| self.error_at(value, &why))?;
                self.family_fits(q, net, value)?;
                Ok(Test::Net {
                    dir: q.dir,
                    family: q.family,
                    net,
                    prefix,
                })
            }
            Kind::Port | Kind::PortRange => {
                let (lo, hi) = match (q.kind, v.split_once('-')) {
                    (Kind::PortRange, Some((a, b))) => (port(a), port(b)),
                    (_, None) if q.kind == Kind::Port => (port(v), port(v)),
                    (_, None) => {
                        return Err(self.error_at(
                            value,
                            "a port range is written N-M, e.g. 'portrange 29500-29510'",
                        ))
                    }
                    (_, Some(_)) => {
                        return Err(self.error_at(value, "a range of ports is 'portrange N-M'"))
                    }
                };
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(self.error_at(
                        value,
                        "a port is a number 0-65535 (service names such as 'http' are not looked up)",
                    ));
                };
                if lo > hi {
                    return Err(self.error_at(value, "the range's first port is above its last"));
                }
                Ok(Test::Port {
                    dir: q.dir,
                    proto: q.proto,
                    lo,
                    hi,
                })
            }
        }
    }

    fn family_fits(&self, q: Qualifiers, addr: IpAddr, value: &Token) -> Result<()> {
        match q.family {
            Some(f) if f != family_of(addr) => Err(self.error_at(
                value,
                if f == Family::V4 {
                    "'ip' asks for IPv4, and this address is IPv6 (use 'ip6')"
                } else {
                    "'ip6' asks for IPv6, and this address is IPv4 (use 'ip')"
                },
            )),
            _ => Ok(()),
        }
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        match self.next() {
            Some(t) => t
                .text
                .parse::<T>()
                .map_err(|_| self.error_at(&t, &format!("expected {what}"))),
            None => Err(self.error_end(&format!("expected {what}"))),
        }
    }
}

fn port(s: &str) -> Option<u16> {
    s.parse().ok()
}

fn is_keyword(s: &str) -> bool {
    KNOWN.split(", ").any(|k| k.eq_ignore_ascii_case(s))
}

/// Digits, dots, colons, slashes, dashes and hex: an address, a net, a port or a range.
fn looks_like_value(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        || (s.contains(':')
            && s.chars()
                .all(|c| c.is_ascii_hexdigit() || ":./".contains(c)))
}

fn unknown(word: &str) -> String {
    match word {
        "ether" | "wlan" | "fddi" | "tr" | "link" | "ppp" | "slip" => format!(
            "'{word}': link-layer primitives are not supported; burstcore filters on IP addresses, ports, \
             protocols, VLANs and lengths"
        ),
        "gateway" | "broadcast" | "multicast" | "len" | "mpls" | "geneve" | "vxlan" | "pppoes" | "decnet"
        | "atalk" | "iso" | "rarp" | "inbound" | "outbound" | "ifname" => format!(
            "'{word}' is not supported by burstcore's filters (known words: {KNOWN})"
        ),
        _ => format!("'{word}' is not a filter word here (expected host, net, port or portrange; known words: {KNOWN})"),
    }
}

/// `10.1.0.0/16`, `fd00::/8`, `10.1.2.3` (a host), or `10`, `10.1`, `10.1.2` (whole octets, as
/// pcap-filter reads them). Bits set past the prefix are an error, as in pcap-filter.
fn parse_net(v: &str) -> std::result::Result<(IpAddr, u8), String> {
    let (addr, prefix) = match v.split_once('/') {
        Some((a, p)) => {
            let addr = full_or_octets(a)?.0;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = p
                .parse()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| format!("the prefix length after '/' is a number 0-{max}"))?;
            (addr, prefix)
        }
        None => full_or_octets(v)?,
    };
    let bits = if addr.is_ipv4() { 32 } else { 128 };
    let whole = match addr {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    };
    if masked(whole, prefix, bits) != whole {
        return Err(format!(
            "this network has bits set past its /{prefix} prefix (write the network's first address, \
             or 'host' for one address)"
        ));
    }
    Ok((addr, prefix))
}

fn full_or_octets(a: &str) -> std::result::Result<(IpAddr, u8), String> {
    if let Ok(addr) = a.parse::<IpAddr>() {
        return Ok((addr, if addr.is_ipv4() { 32 } else { 128 }));
    }
    let octets: Vec<&str> = a.split('.').collect();
    let parsed: Option<Vec<u8>> = octets.iter().map(|o| o.parse().ok()).collect();
    match parsed {
        Some(o) if (1..=3).contains(&o.len()) => {
            let mut b = [0u8; 4];
            b[..o.len()].copy_from_slice(&o);
            Ok((IpAddr::from(b), 8 * o.len() as u8))
        }
        _ => Err("not a network: write it as 10.1.0.0/16, fd00::/8 or 10.1".to_string()),
    }
}

#[cfg(test)]
mod tests;
