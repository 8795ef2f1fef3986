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
//! | `[tcp\|udp] [src\|dst] port N` | that TCP or UDP port is N (not in later fragments) |
//! | `[tcp\|udp] [src\|dst] portrange N-M` | that port is in N..=M |
//! | `tcp`, `udp`, `sctp`, `icmp`, `icmp6`, `igmp` | its transport protocol is that one (`icmp`, `igmp`: IPv4; `icmp6`: IPv6) |
//! | `[ip\|ip6] proto N` | its transport protocol number is N (after IPv6 extension headers) |
//! | `ip`, `ip6`, `arp` | its network layer is IPv4, IPv6, ARP |
//! | `vlan [N]` | it has an 802.1Q tag (whose id, outer or inner, is N) |
//! | `less N`, `greater N` | its length on the wire is ≤ N, ≥ N |
//!
//! `src or dst` (the default) and `src and dst` may stand for the direction; `ip`/`ip6` before
//! `host`/`net` ask for that family. Numbers are decimal (pcap-filter's octal `010` and hex
//! `0x50` are refused, not read another way). A packet cut off before a field a test needs is
//! rejected whatever the rest says, as a BPF load past the captured bytes ends the program.
//! Where this differs from pcap-filter (docs/filters.md has the whole list): headers are read
//! through VLAN tags, PPPoE, MPLS and LLC/SNAP whether or not the filter says so, `host` looks at IP addresses
//! only (BPF also at ARP's), SCTP ports are not read, an IPv6 address is read whole or not at
//! all, service names are not looked up, and link-layer primitives (`ether`, `wlan`, ...) are
//! not known; an expression using one is refused with the reason.

use crate::error::{Error, Result};
use crate::wire::Headers;
use compiled::Node;
use std::fmt;
use std::net::IpAddr;

/// A parsed filter: [`Filter::parse`] a text, then ask [`Filter::matches`] of each packet.
#[derive(Clone, PartialEq, Eq)]
pub struct Filter {
    text: String,
    expr: Expr,
    /// `expr` as it is evaluated: the same but for its OR chains of addresses, and of ports, each
    /// one look-up.
    node: Node,
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
            return Err(p.error_after_primitive(t));
        }
        Ok(Filter::of(text.to_string(), expr))
    }

    fn of(text: String, expr: Expr) -> Filter {
        let node = Node::of(&expr);
        Filter { text, expr, node }
    }

    /// A filter that passes what both `self` and `other` pass, as `(self) and (other)` (the
    /// filter of all files together with one file's own).
    pub fn and(&self, other: &Filter) -> Filter {
        Filter::of(
            format!("({}) and ({})", self.text, other.text),
            Expr::And(Box::new(self.expr.clone()), Box::new(other.expr.clone())),
        )
    }

    /// The expression as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a packet with these headers and this length on the wire passes.
    ///
    /// A test that needs a header field the capture cut off (a snaplen shorter than the
    /// headers) is unknown, and so is `not` of it; `and` and `or` follow three-valued logic
    /// (false and unknown is false, true or unknown is true), and the packet passes only if the
    /// whole is true: the captured bytes must prove it. A cut packet is never kept for a `not`
    /// of what was cut off, as a BPF program ends at a load past the captured bytes.
    #[inline]
    pub fn matches(&self, h: &Headers, wire_len: u32) -> bool {
        self.node.eval(h, wire_len) == Some(true)
    }
}

/// The filter each of `captures` captures is read through: `all` together with the capture's
/// own from `each` (empty: none of its own). An error if `each` has not one per capture.
pub(crate) fn per_capture(
    all: Option<&Filter>,
    each: &[Option<Filter>],
    captures: usize,
) -> Result<Vec<Option<Filter>>> {
    if each.is_empty() {
        return Ok(vec![all.cloned(); captures]);
    }
    if each.len() != captures {
        let (f, c) = (each.len(), captures);
        let (fs, cs) = (plural(f, "filter"), plural(c, "capture"));
        return Err(Error::invalid(format!(
            "{f} {fs} for {c} {cs}: give one filter for every capture, in the same order (None where \
             a capture has none of its own), or a single filter for all of them"
        )));
    }
    Ok(each
        .iter()
        .map(|own| match (all, own) {
            (Some(a), Some(o)) => Some(a.and(o)),
            (a, o) => o.clone().or_else(|| a.cloned()),
        })
        .collect())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// A test needed a header field the capture cut off.
struct Cut;

/// `Ok(false)` for a field the packet lacks, `Err(Cut)` if it lacks it because it was cut off.
fn absent(h: &Headers) -> std::result::Result<bool, Cut> {
    if h.truncated {
        Err(Cut)
    } else {
        Ok(false)
    }
}

// The definition a filter's compiled form (`Node`) is tested against.
#[cfg(test)]
impl Expr {
    /// `None`: unknown, a field it needs was cut off.
    fn eval(&self, h: &Headers, wire_len: u32) -> Option<bool> {
        match self {
            Expr::And(a, b) => match a.eval(h, wire_len) {
                Some(false) => Some(false),
                first => match (first, b.eval(h, wire_len)) {
                    (_, Some(false)) => Some(false),
                    (Some(true), second) => second,
                    _ => None,
                },
            },
            Expr::Or(a, b) => match a.eval(h, wire_len) {
                Some(true) => Some(true),
                first => match (first, b.eval(h, wire_len)) {
                    (_, Some(true)) => Some(true),
                    (Some(false), second) => second,
                    _ => None,
                },
            },
            Expr::Not(a) => a.eval(h, wire_len).map(|v| !v),
            Expr::Is(t) => t.eval(h, wire_len).ok(),
        }
    }
}

impl Test {
    fn eval(&self, h: &Headers, wire_len: u32) -> std::result::Result<bool, Cut> {
        // Every field below comes after the link header's EtherType, but for the frame's length
        // and the VLAN tags, read on the way to it: a tag captured whole is there even if the
        // capture ended before the next one or the EtherType (a BPF `vlan` reads only the tag).
        let link_cut = h.ethertype.is_none() && h.truncated;
        if link_cut && !matches!(self, Test::Less(_) | Test::Greater(_) | Test::Vlan(_)) {
            return Err(Cut);
        }
        Ok(match *self {
            Test::Net {
                dir,
                family,
                net,
                prefix,
            } => {
                // The other IP version cannot match: told by the EtherType even when the IP
                // header was cut off (BPF looks at it first too).
                if family_of_packet(h).is_some_and(|f| f != family_of(net)) {
                    return Ok(false);
                }
                if h.src.is_none() {
                    return absent(h);
                }
                // A capture can end between the two addresses (IPv4: 4 bytes each): the one cut
                // off is unknown, and decides only where the other one does not.
                let inside = |a: Option<IpAddr>| match a {
                    Some(a) => {
                        Ok(family.is_none_or(|f| family_of(a) == f) && in_net(a, net, prefix))
                    }
                    None => absent(h),
                };
                return by_dir_known(dir, inside(h.src), inside(h.dst));
            }
            Test::Port { dir, proto, lo, hi } => {
                let Some(p) = h.ip_proto else {
                    return absent(h);
                };
                // Ports are read for TCP and UDP; a later fragment has none, as in BPF.
                if !proto.map_or(matches!(p, TCP | UDP), |want| p == want) || h.fragment {
                    return Ok(false);
                }
                // A capture can end between the two ports (2 bytes each): the one cut off is
                // unknown, and decides only where the other one does not.
                let inside = |p: Option<u16>| match p {
                    Some(p) => Ok((lo..=hi).contains(&p)),
                    None => absent(h),
                };
                return by_dir_known(dir, inside(h.sport), inside(h.dport));
            }
            Test::Proto { family, proto } => {
                if family.is_some_and(|f| family_of_packet(h).is_some_and(|pf| pf != f)) {
                    return Ok(false);
                }
                if h.ip_proto.is_none() {
                    return absent(h);
                }
                h.ip_proto == Some(proto) && family.is_none_or(|f| family_of_packet(h) == Some(f))
            }
            Test::Family(f) => family_of_packet(h) == Some(f),
            Test::EtherType(t) => h.ethertype == Some(t),
            // Without the EtherType the frame was cut inside its tag stack (or before it): a
            // tag it holds may be the next one's.
            Test::Vlan(None) if h.vlan.is_none() && link_cut => return Err(Cut),
            Test::Vlan(None) => h.vlan.is_some(),
            Test::Vlan(Some(id)) if h.vlan == Some(id) || h.vlan_inner == Some(id) => true,
            Test::Vlan(Some(_)) if link_cut && h.vlan_inner.is_none() => return Err(Cut),
            Test::Vlan(Some(_)) => false,
            Test::Less(n) => wire_len <= n,
            Test::Greater(n) => wire_len >= n,
        })
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

/// [`by_dir`] of tests that may be unknown (a field cut off), in three-valued logic.
fn by_dir_known(
    dir: Dir,
    src: std::result::Result<bool, Cut>,
    dst: std::result::Result<bool, Cut>,
) -> std::result::Result<bool, Cut> {
    match (dir, src, dst) {
        (Dir::Src, s, _) => s,
        (Dir::Dst, _, d) => d,
        (Dir::Either, Ok(true), _) | (Dir::Either, _, Ok(true)) => Ok(true),
        (Dir::Both, Ok(false), _) | (Dir::Both, _, Ok(false)) => Ok(false),
        (Dir::Either | Dir::Both, Ok(s), Ok(d)) => Ok(by_dir(dir, s, d)),
        _ => Err(Cut),
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

/// Characters a word may hold: keywords, addresses (`fd00::1`, `10.0.0.0/8`), ranges (`80-90`).
fn in_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || ":./-_".contains(c)
}

fn lex(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<(usize, char)> = text.chars().enumerate().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let pair = chars.get(i + 1).map(|p| p.1);
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' || (c == '!' && pair != Some('=')) {
            out.push(Token {
                text: c.to_string(),
                at,
            });
            i += 1;
        } else if (c == '&' || c == '|') && pair == Some(c) {
            out.push(Token {
                text: if c == '&' { "and" } else { "or" }.to_string(),
                at,
            });
            i += 2;
        } else if in_word(c) {
            let start = i;
            while i < chars.len() && in_word(chars[i].1) {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().map(|p| p.1).collect(),
                at,
            });
        } else if "[]<>=&|+*%^~".contains(c) || c == '!' {
            return Err(Error::invalid(format!(
                "filter {} at character {}: {c:?}: byte-offset and arithmetic expressions (such as \
                 'tcp[13] & 2 != 0' or 'len > 100') are not supported; for lengths use 'greater N' and 'less N'",
                shown(text),
                at + 1
            )));
        } else {
            return Err(Error::invalid(format!(
                "filter {} at character {}: {c:?} is not part of the filter language (primitives such \
                 as 'host 10.0.0.1' or 'tcp port 29500', joined by and, or, not, parentheses)",
                shown(text),
                at + 1
            )));
        }
    }
    Ok(out)
}

/// A filter or a word of it as messages quote it: whole, or its start when long.
fn shown(text: &str) -> String {
    const MOST: usize = 60;
    if text.chars().count() <= MOST {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(MOST - 1).collect();
    format!("\"{}…\"", head.escape_debug())
}

// ---------------------------------------------------------------------------- parsing

/// Qualifiers of a primitive that takes a value, kept for a bare value right after it.
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
    /// `[ip|ip6] proto N`.
    Proto,
}

impl Qualifiers {
    /// The qualifiers a bare address (or net) stands for: `host` (or `net`) in either direction.
    fn of_value(text: &str, dir: Dir, family: Option<Family>) -> Option<Qualifiers> {
        let kind = if text.parse::<IpAddr>().is_ok() {
            Kind::Host
        } else if text.contains('/') {
            Kind::Net
        } else {
            return None;
        };
        Some(Qualifiers {
            family,
            proto: None,
            dir,
            kind,
        })
    }
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    at: usize,
    /// The qualifiers of the primitive just read, if it had a value: a bare value right after
    /// `and`/`or` takes them (pcap-filter's abbreviation, `port 80 or 443`).
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
            "filter {} at character {} ({}): {what}",
            shown(self.text),
            t.at + 1,
            shown(&t.text)
        ))
    }

    fn error_end(&self, what: &str) -> Error {
        Error::invalid(format!("filter {} ends too soon: {what}", shown(self.text)))
    }

    /// What is wrong with a token where `and`, `or` or the end should come.
    fn error_after_primitive(&self, t: &Token) -> Error {
        let word = t.text.to_ascii_lowercase();
        let previous = self
            .at
            .checked_sub(1)
            .map(|i| self.tokens[i].text.to_ascii_lowercase());
        let why = match (previous.as_deref(), word.as_str()) {
            (Some("arp" | "rarp"), "host" | "net" | "src" | "dst") => {
                "ARP's addresses are not read: 'arp' alone selects ARP frames".to_string()
            }
            (_, "mask") => {
                "write the network with a prefix length, e.g. 'net 10.0.0.0/8'".to_string()
            }
            (_, "multicast" | "broadcast" | "protochain") => unknown(&word),
            _ if looks_like_value(&t.text) => {
                "a second value needs 'and' or 'or' before it (e.g. 'host 10.0.0.1 or 10.0.0.2')"
                    .to_string()
            }
            _ => "expected 'and', 'or', ')' or the end of the filter here".to_string(),
        };
        self.error_at(t, &why)
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
        let nests = matches!(word.as_str(), "not" | "!" | "(");
        if nests {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.error_at(
                    &t,
                    &format!(
                        "nested more than {MAX_DEPTH} deep (parentheses and 'not's): write it flatter"
                    ),
                ));
            }
        }
        let term = self.term_of(&t, &word);
        if nests {
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
                    Some(other) => {
                        self.at -= 1;
                        Err(self.error_after_primitive(&other))
                    }
                    None => Err(self.error_end(&format!(
                        "the '(' at character {} is never closed",
                        t.at + 1
                    ))),
                }
            }
            ")" => Err(self.error_at(t, "a ')' without its '('")),
            "and" | "or" => {
                Err(self.error_at(t, "joins two primitives, and the one before it is missing"))
            }
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
        // Only the primitive just before gives its qualifiers to a bare value.
        let carried = self.last.take();
        if looks_like_value(&first.text) && !is_keyword(&first.text) {
            let q = carried
                .or_else(|| Qualifiers::of_value(&first.text, Dir::Either, None))
                .ok_or_else(|| {
                    self.error_at(
                        &first,
                        "a value needs a keyword before it: 'host ADDR', 'net 10.0.0.0/8', 'port N', \
                         'portrange N-M', 'proto N'",
                    )
                })?;
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
                    let kw = self.next().expect("peeked");
                    let q = Qualifiers {
                        family: Some(f),
                        proto: None,
                        dir: Dir::Either,
                        kind: Kind::Proto,
                    };
                    return self.value_after(q, &kw);
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
                if p == SCTP {
                    let t = self.peek().cloned().expect("a qualifier follows");
                    return Err(self.error_at(
                        &t,
                        "SCTP ports are not read (TCP's and UDP's are): 'sctp' alone selects SCTP packets",
                    ));
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
                let kw = self.next().expect("peeked");
                let q = Qualifiers {
                    family: None,
                    proto: None,
                    dir: Dir::Either,
                    kind: Kind::Proto,
                };
                return self.value_after(q, &kw);
            }
            "vlan" => {
                self.at += 1;
                if self.peek().is_some_and(|t| looks_like_value(&t.text)) {
                    let t = self.next().expect("peeked");
                    let id: u16 = decimal(&t.text)
                        .filter(|&id| id <= 4095)
                        .ok_or_else(|| self.error_at(&t, "a VLAN id is a number 0-4095"))?;
                    return Ok(Test::Vlan(Some(id)));
                }
                return Ok(Test::Vlan(None));
            }
            "less" | "greater" => {
                self.at += 1;
                let t = self
                    .next()
                    .ok_or_else(|| self.error_end(&format!("'{word}' needs a length in bytes")))?;
                let n: u32 = decimal(&t.text).ok_or_else(|| {
                    self.error_at(&t, &number_wanted(&t.text, "a length in bytes"))
                })?;
                return Ok(if word == "less" {
                    Test::Less(n)
                } else {
                    Test::Greater(n)
                });
            }
            _ => {}
        }

        let dir = self.direction()?;
        let before = self.tokens.get(self.at.wrapping_sub(1)).cloned();
        let kind_tok = self.next().ok_or_else(|| {
            self.error_end("'host', 'net', 'port' or 'portrange' (or an address) is missing")
        })?;
        // `src 10.0.0.1`, `ip dst 10.0.0.0/8`: an address after a direction is a host (or net).
        if dir != Dir::Either || family.is_some() {
            if let Some(q) = Qualifiers::of_value(&kind_tok.text, dir, family) {
                return self.valued(q, &kind_tok);
            }
        }
        let kind = match kind_tok.text.to_ascii_lowercase().as_str() {
            "host" => Kind::Host,
            "net" => Kind::Net,
            "port" => Kind::Port,
            "portrange" => Kind::PortRange,
            "and" | "or" | "not" | ")" => {
                let after = before.map_or_else(String::new, |b| format!("'{}' ", b.text));
                return Err(self.error_at(
                    &kind_tok,
                    &format!("{after}needs host, net, port or portrange (or an address) after it"),
                ));
            }
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
        self.value_after(q, &kind_tok)
    }

    /// The value after the keyword `kw`, read as `q` says.
    fn value_after(&mut self, q: Qualifiers, kw: &Token) -> Result<Test> {
        let value = self
            .next()
            .ok_or_else(|| self.error_end(&format!("the value after '{}' is missing", kw.text)))?;
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
        let v = value.text.as_str();
        let test = match q.kind {
            Kind::Host => {
                let addr: IpAddr = v.parse().map_err(|_| {
                    self.error_at(
                        value,
                        "not an IPv4 or IPv6 address (host names are not looked up; a network is 'net 10.0.0.0/8')",
                    )
                })?;
                let prefix = if addr.is_ipv4() { 32 } else { 128 };
                self.family_fits(q, addr, value)?;
                Test::Net {
                    dir: q.dir,
                    family: q.family,
                    net: addr,
                    prefix,
                }
            }
            Kind::Net => {
                let (net, prefix) = parse_net(v).map_err(|why| self.error_at(value, &why))?;
                self.family_fits(q, net, value)?;
                Test::Net {
                    dir: q.dir,
                    family: q.family,
                    net,
                    prefix,
                }
            }
            Kind::Port | Kind::PortRange => {
                let (lo, hi) = match (q.kind, v.split_once('-')) {
                    (Kind::PortRange, Some((a, b))) => (a, b),
                    // A single port stands for itself, also as a range (`portrange 80-90 or 100`).
                    (_, None) => (v, v),
                    (_, Some(_)) => {
                        return Err(self.error_at(value, "a range of ports is 'portrange N-M'"))
                    }
                };
                let port = |p: &str| {
                    decimal::<u16>(p).ok_or_else(|| {
                        self.error_at(
                            value,
                            &number_wanted(
                                p,
                                "a port, a number 0-65535 (service names such as 'http' are not looked up)",
                            ),
                        )
                    })
                };
                let (lo, hi) = (port(lo)?, port(hi)?);
                if lo > hi {
                    return Err(self.error_at(value, "the range's first port is above its last"));
                }
                Test::Port {
                    dir: q.dir,
                    proto: q.proto,
                    lo,
                    hi,
                }
            }
            Kind::Proto => {
                let proto: u8 = decimal(v).ok_or_else(|| {
                    self.error_at(
                        value,
                        &number_wanted(v, "a protocol number 0-255 (6 is TCP, 17 UDP)"),
                    )
                })?;
                Test::Proto {
                    family: q.family,
                    proto,
                }
            }
        };
        self.last = Some(q);
        Ok(test)
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
}

/// A number written in decimal. pcap-filter reads `010` as octal and `0x10` as hex; rather than
/// a silent difference, both are refused ([`number_wanted`] says why).
fn decimal<T: std::str::FromStr>(s: &str) -> Option<T> {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !plain || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

/// The message for a word that is not the number `what` asks for.
fn number_wanted(s: &str, what: &str) -> String {
    if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) {
        format!("expected {what}, in decimal without a leading 0 (tcpdump reads {s} as octal)")
    } else if s.starts_with("0x") || s.starts_with("0X") {
        format!("expected {what}, in decimal (hexadecimal is not read)")
    } else {
        format!("expected {what}")
    }
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
    let proto = match word {
        "ah" => Some(51),
        "esp" => Some(50),
        "pim" => Some(103),
        "vrrp" => Some(112),
        "gre" => Some(47),
        "carp" => Some(112),
        _ => None,
    };
    if let Some(n) = proto {
        return format!("'{word}' is not a filter word: write 'ip proto {n}' (or 'ip6 proto {n}')");
    }
    match word {
        "ether" | "wlan" | "fddi" | "tr" | "link" | "ppp" | "slip" => format!(
            "'{word}': link-layer primitives are not supported; burstcore filters on IP addresses, ports, \
             protocols, VLANs and lengths"
        ),
        "protochain" => "'protochain' is not supported: 'ip6 proto N' already looks past IPv6 extension headers"
            .to_string(),
        "mask" => "write the network with a prefix length, e.g. 'net 10.0.0.0/8'".to_string(),
        "gateway" | "broadcast" | "multicast" | "len" | "mpls" | "geneve" | "vxlan" | "pppoes"
        | "pppoed" | "decnet" | "atalk" | "iso" | "rarp" | "inbound" | "outbound" | "ifname" => {
            format!("'{word}' is not supported by burstcore's filters (known words: {KNOWN})")
        }
        _ => format!(
            "'{}' is not a filter word here (expected host, net, port or portrange; known words: {KNOWN})",
            shown(word).trim_matches('"')
        ),
    }
}

/// `10.1.0.0/16`, `fd00::/8`, `10.1.2.3` (a host), or `10`, `10.1`, `10.1.2` (whole octets, as
/// pcap-filter reads them). Bits set past the prefix are an error, as in pcap-filter.
fn parse_net(v: &str) -> std::result::Result<(IpAddr, u8), String> {
    let (addr, prefix) = match v.split_once('/') {
        Some((a, p)) => {
            let addr = full_or_octets(a)?.0;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = decimal(p)
                .filter(|&p| p <= max)
                .ok_or_else(|| number_wanted(p, &format!("a prefix length 0-{max} after '/'")))?;
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
    let parsed: Option<Vec<u8>> = octets.iter().map(|o| decimal(o)).collect();
    match parsed {
        Some(o) if (1..=3).contains(&o.len()) => {
            let mut b = [0u8; 4];
            b[..o.len()].copy_from_slice(&o);
            Ok((IpAddr::from(b), 8 * o.len() as u8))
        }
        _ if octets.iter().any(|o| o.len() > 1 && o.starts_with('0')) => Err(
            "not a network: write its octets in decimal without a leading 0 (tcpdump reads 010 as octal)"
                .to_string(),
        ),
        _ => Err("not a network: write it as 10.1.0.0/16, fd00::/8 or 10.1".to_string()),
    }
}

mod compiled;
#[cfg(test)]
mod tests;
