//! A filter as it is evaluated: the parsed tree, but for each OR chain of address tests (`host a
//! or host b or ...`, `src net 10.1.0.0/16 or src net 10.2.0.0/16 ...`), which becomes one
//! look-up in sorted tables, a binary search per prefix length, where the tree tested every term
//! (1,000 hosts took 9.4 µs a packet). The result is the tree's, in its three-valued logic: the
//! tree stays the definition, and the tests evaluate both.

use super::{family_of_packet, masked, Dir, Expr, Family, Test};
use crate::wire::Headers;
use std::net::IpAddr;

/// An OR chain with fewer address tests than this tests them one by one.
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
                let looked_up = terms.iter().filter(|t| net_of(t).is_some()).count();
                if looked_up < LOOKED_UP_FROM {
                    return Node::Or(terms.into_iter().map(Node::of).collect());
                }
                let mut nets = Nets::default();
                let mut rest = Vec::new();
                for t in terms {
                    match net_of(t) {
                        Some((dir, net, prefix)) => nets.add(dir, net, prefix),
                        None => rest.push(Node::of(t)),
                    }
                }
                nets.sort();
                let nets = Node::Nets(Box::new(nets));
                if rest.is_empty() {
                    return nets;
                }
                rest.insert(0, nets);
                Node::Or(rest)
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
        let dst = |side: &[Prefix]| h.dst.is_some_and(|d| inside(side, d));
        Some(
            inside(&self.src, src)
                || inside(&self.either, src)
                || dst(&self.dst)
                || dst(&self.either),
        )
    }
}
