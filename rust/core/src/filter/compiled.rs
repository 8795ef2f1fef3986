//! A filter as it is evaluated: the parsed tree, but for each OR chain of address tests (`host a
//! or host b or ...`, `src net 10.1.0.0/16 or src net 10.2.0.0/16 ...`), which becomes one
//! look-up in sorted tables, a binary search per prefix length, where the tree tested every term
//! (1,000 hosts took 9.4 µs a packet), and each OR chain of port tests (`port 80 or tcp dst port
//! 443 or portrange 5000-5010 or src and dst port 7 ...`), which becomes a bit of a 65,536-bit map
//! per protocol and side (and for `src and dst`, a binary search among its ranges). The result is the tree's, in its three-valued logic: the tree stays the definition, and
//! the tests evaluate both.

use super::{family_of_packet, masked, Dir, Expr, Family, Test, TCP, UDP};
use crate::wire::Headers;
use std::net::IpAddr;

/// An OR chain with fewer address tests (or fewer port tests) than this tests them one by one.
const LOOKED_UP_FROM: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    And(Box<Node>, Box<Node>),
    /// True if one is, else unknown if one is, else false (OR is associative and commutative in
    /// this logic, and a test has no effect but its value: the chain's order does not matter).
    Or(Vec<Node>),
    Not(Box<Node>),
    Is(Test),
    Nets(Box<Nets>),
    Ports(Box<Ports>),
}

/// An OR of `Test::Net`s looking at the source, the destination or either.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Nets {
    src: Vec<Prefix>,
    dst: Vec<Prefix>,
    either: Vec<Prefix>,
    /// Whether a net of that family is in it (a packet of the other family is never in it).
    v4: bool,
    v6: bool,
}

/// The nets of one family and prefix length, as their masked addresses, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prefix {
    v6: bool,
    len: u8,
    nets: Vec<u128>,
}

impl Node {
    pub(super) fn of(e: &Expr) -> Node {
        match e {
            Expr::And(a, b) => Node::And(Box::new(Node::of(a)), Box::new(Node::of(b))),
            Expr::Not(a) => Node::Not(Box::new(Node::of(a))),
            Expr::Is(t) => Node::Is(t.clone()),
            Expr::Or(..) => {
                let terms = or_terms(e);
                let count = |of: fn(&Expr) -> bool| terms.iter().filter(|t| of(t)).count();
                let by_nets = count(|t| net_of(t).is_some()) >= LOOKED_UP_FROM;
                let by_ports = count(|t| port_of(t).is_some()) >= LOOKED_UP_FROM;
                let mut nets = Nets::default();
                let mut ports = Ports::default();
                let mut rest = Vec::new();
                for t in terms {
                    match (net_of(t), port_of(t)) {
                        (Some((dir, net, prefix)), _) if by_nets => nets.add(dir, net, prefix),
                        (_, Some((dir, proto, lo, hi))) if by_ports => {
                            ports.add(dir, proto, lo, hi)
                        }
                        _ => rest.push(Node::of(t)),
                    }
                }
                let mut looked_up = Vec::new();
                if by_nets {
                    nets.sort();
                    looked_up.push(Node::Nets(Box::new(nets)));
                }
                if by_ports {
                    ports.seal();
                    looked_up.push(Node::Ports(Box::new(ports)));
                }
                if looked_up.len() == 1 && rest.is_empty() {
                    return looked_up.pop().expect("one");
                }
                looked_up.extend(rest);
                Node::Or(looked_up)
            }
        }
    }

    pub(super) fn eval(&self, h: &Headers, wire_len: u32) -> Option<bool> {
        match self {
            Node::And(a, b) => match a.eval(h, wire_len) {
                Some(false) => Some(false),
                first => match (first, b.eval(h, wire_len)) {
                    (_, Some(false)) => Some(false),
                    (Some(true), second) => second,
                    _ => None,
                },
            },
            Node::Or(terms) => {
                let mut unknown = false;
                for t in terms {
                    match t.eval(h, wire_len) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown {
                    None
                } else {
                    Some(false)
                }
            }
            Node::Not(a) => a.eval(h, wire_len).map(|v| !v),
            Node::Is(t) => t.eval(h, wire_len).ok(),
            Node::Nets(n) => n.eval(h),
            Node::Ports(p) => p.eval(h),
        }
    }
}

/// The terms of the OR chain `e` (nested ORs, parenthesised or not), left to right; iterative,
/// as a chain is as long as 1,000 terms.
fn or_terms(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut todo = vec![e];
    while let Some(e) = todo.pop() {
        match e {
            Expr::Or(a, b) => {
                todo.push(b);
                todo.push(a);
            }
            other => out.push(other),
        }
    }
    out
}

/// The direction, net and prefix of an address test a look-up can stand for: not `src and dst`
/// (both addresses in the same net), and a family qualifier only if the net's own (the parser
/// refuses another).
fn net_of(e: &Expr) -> Option<(Dir, IpAddr, u8)> {
    match e {
        Expr::Is(Test::Net {
            dir: dir @ (Dir::Src | Dir::Dst | Dir::Either),
            family,
            net,
            prefix,
        }) if family.is_none_or(|f| f == super::family_of(*net)) => Some((*dir, *net, *prefix)),
        _ => None,
    }
}

/// The direction, protocol and ports of a port test a look-up can stand for (SCTP's are not read).
fn port_of(e: &Expr) -> Option<(Dir, Option<u8>, u16, u16)> {
    match e {
        Expr::Is(Test::Port {
            dir,
            proto: proto @ (None | Some(TCP | UDP)),
            lo,
            hi,
        }) => Some((*dir, *proto, *lo, *hi)),
        _ => None,
    }
}

/// An address as (IPv6?, its bits as a number, how many bits).
fn bits(a: IpAddr) -> (bool, u128, u32) {
    match a {
        IpAddr::V4(a) => (false, u128::from(u32::from(a)), 32),
        IpAddr::V6(a) => (true, u128::from(a), 128),
    }
}

impl Nets {
    fn add(&mut self, dir: Dir, net: IpAddr, prefix: u8) {
        let (v6, whole, n) = bits(net);
        if v6 {
            self.v6 = true;
        } else {
            self.v4 = true;
        }
        let side = match dir {
            Dir::Src => &mut self.src,
            Dir::Dst => &mut self.dst,
            _ => &mut self.either,
        };
        let masked = masked(whole, prefix, n);
        match side.iter_mut().find(|p| p.v6 == v6 && p.len == prefix) {
            Some(p) => p.nets.push(masked),
            None => side.push(Prefix {
                v6,
                len: prefix,
                nets: vec![masked],
            }),
        }
    }

    fn sort(&mut self) {
        for p in self
            .src
            .iter_mut()
            .chain(&mut self.dst)
            .chain(&mut self.either)
        {
            p.nets.sort_unstable();
            p.nets.dedup();
        }
    }

    /// What the OR of its tests gives, step by step as `Test::eval` of each one.
    fn eval(&self, h: &Headers) -> Option<bool> {
        // Cut before the EtherType: every address test is unknown.
        if h.ethertype.is_none() && h.truncated {
            return None;
        }
        let Some(src) = h.src else {
            // A test of the packet's other family is false; the others are unknown if the
            // header was cut off, else false (no IP header).
            let some_apply = match family_of_packet(h) {
                None => true,
                Some(Family::V4) => self.v4,
                Some(Family::V6) => self.v6,
            };
            return if some_apply && h.truncated {
                None
            } else {
                Some(false)
            };
        };
        // The packet's family is its source's: a test of the other family is false, and an
        // address of the other family (a destination unlike the source) is in none of its nets.
        let (v6, _, _) = bits(src);
        let inside = |side: &[Prefix], a: IpAddr| {
            let (a6, whole, n) = bits(a);
            a6 == v6
                && side
                    .iter()
                    .any(|p| p.v6 == v6 && p.nets.binary_search(&masked(whole, p.len, n)).is_ok())
        };
        if inside(&self.src, src) || inside(&self.either, src) {
            return Some(true);
        }
        match h.dst {
            Some(d) => Some(inside(&self.dst, d) || inside(&self.either, d)),
            // Cut off before the destination: unknown where a test of this family looks at it.
            None => {
                let looks = |side: &[Prefix]| side.iter().any(|p| p.v6 == v6);
                let unknown = h.truncated && (looks(&self.dst) || looks(&self.either));
                (!unknown).then_some(false)
            }
        }
    }
}

/// One bit a port.
type PortSet = [u64; 1024];

/// An OR of `Test::Port`s (`tcp`, `udp` or either; source, destination or either port).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Ports {
    /// The ports a test looks for in TCP's source, TCP's destination, UDP's source, UDP's
    /// destination port; `None` where no test looks (a port cut off there decides nothing).
    sides: [Option<Box<PortSet>>; 4],
    /// The `src and dst` tests of TCP and of UDP, both ports in one test's range.
    both: [Option<Box<Both>>; 2],
}

/// An OR of `src and dst` port tests of one protocol: a pair of ports passes when one range
/// holds both, that is the lower port and the higher one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Both {
    /// The ports in some range: a pair with a port outside passes none.
    any: Box<PortSet>,
    /// The ranges' first ports, sorted, and beside each the highest last port of the ranges
    /// that start there or before: the lower port's range reaching furthest is the one to ask.
    firsts: Vec<u16>,
    reach: Vec<u16>,
    /// The ranges as added, until `seal` sorts them into `firsts` and `reach`.
    ranges: Vec<(u16, u16)>,
}

impl Both {
    fn seal(&mut self) {
        self.ranges.sort_unstable();
        let mut far = 0;
        (self.firsts, self.reach) = std::mem::take(&mut self.ranges)
            .into_iter()
            .map(|(lo, hi)| {
                far = far.max(hi);
                (lo, far)
            })
            .unzip();
    }

    fn holds(&self, a: u16, b: u16) -> bool {
        let (lo, hi) = (a.min(b), a.max(b));
        let at = self.firsts.partition_point(|&first| first <= lo);
        at > 0 && self.reach[at - 1] >= hi
    }
}

fn set_bits(set: &mut PortSet, lo: u16, hi: u16) {
    let (lo, hi) = (usize::from(lo), usize::from(hi));
    // A word at a time: a chain of wide ranges costs no more than one of ports.
    for (w, word) in set.iter_mut().enumerate().take(hi / 64 + 1).skip(lo / 64) {
        let first = if w == lo / 64 { lo % 64 } else { 0 };
        let last = if w == hi / 64 { hi % 64 } else { 63 };
        *word |= (u64::MAX >> (63 - last)) & (u64::MAX << first);
    }
}

fn has_bit(set: &PortSet, p: u16) -> bool {
    set[usize::from(p / 64)] >> (p % 64) & 1 == 1
}

impl Ports {
    fn add(&mut self, dir: Dir, proto: Option<u8>, lo: u16, hi: u16) {
        let protos: &[usize] = match proto {
            Some(TCP) => &[0],
            // UDP: `port_of` takes no other.
            Some(_) => &[2],
            None => &[0, 2],
        };
        let sides: &[usize] = match dir {
            Dir::Src => &[0],
            Dir::Dst => &[1],
            Dir::Either => &[0, 1],
            Dir::Both => {
                for p in protos {
                    let both = self.both[p / 2].get_or_insert_with(|| {
                        Box::new(Both {
                            any: Box::new([0; 1024]),
                            firsts: Vec::new(),
                            reach: Vec::new(),
                            ranges: Vec::new(),
                        })
                    });
                    set_bits(&mut both.any, lo, hi);
                    both.ranges.push((lo, hi));
                }
                return;
            }
        };
        for p in protos {
            for s in sides {
                let set = self.sides[p + s].get_or_insert_with(|| Box::new([0; 1024]));
                set_bits(set, lo, hi);
            }
        }
    }

    fn seal(&mut self) {
        for both in self.both.iter_mut().flatten() {
            both.seal();
        }
    }

    /// What the OR of its tests gives, step by step as `Test::eval` of each one.
    fn eval(&self, h: &Headers) -> Option<bool> {
        // Cut before the EtherType or before the protocol: every port test is unknown.
        if h.ethertype.is_none() && h.truncated {
            return None;
        }
        let Some(proto) = h.ip_proto else {
            return if h.truncated { None } else { Some(false) };
        };
        // Ports are read for TCP and UDP; a later fragment has none.
        let at = match proto {
            TCP => 0,
            UDP => 2,
            _ => return Some(false),
        };
        if h.fragment {
            return Some(false);
        }
        // A port cut off is unknown where a test looks at it, and decides only where the other
        // port does not.
        let look = |set: &Option<Box<PortSet>>, port: Option<u16>| match (set, port) {
            (None, _) => Some(false),
            (Some(set), Some(p)) => Some(has_bit(set, p)),
            (Some(_), None) => (!h.truncated).then_some(false),
        };
        let either = match (
            look(&self.sides[at], h.sport),
            look(&self.sides[at + 1], h.dport),
        ) {
            (Some(true), _) | (_, Some(true)) => return Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        };
        let Some(b) = &self.both[at / 2] else {
            return either;
        };
        let both = match (h.sport, h.dport) {
            (Some(s), Some(d)) => Some(b.holds(s, d)),
            // One port cut off: no test holds a pair whose other port is in none of the ranges,
            // and any test whose range holds it is unknown.
            (Some(p), None) | (None, Some(p)) => {
                (!(h.truncated && has_bit(&b.any, p))).then_some(false)
            }
            (None, None) => (!h.truncated).then_some(false),
        };
        match (either, both) {
            (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        }
    }
}
