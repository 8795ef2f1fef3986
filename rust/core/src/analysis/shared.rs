//! Packets that two captures both hold: one traffic recorded at two places (a capture on each
//! host, a host and a switch's mirror port, the same file given twice). Merged, each such packet
//! counts twice, in every envelope, rate, flow and matrix, and nothing else shows it.
//!
//! Found by sampling, not by reading everything. Each capture's span is known first: a plain
//! file's from its first packet and its last megabyte ([`SplitPlan::time_span`]). Two captures
//! whose spans overlap are compared at an instant where both run: the fewest *anchors* that
//! give every such pair one, each the latest start of the pairs it serves (one anchor for
//! captures that run together, none for the files of a rotating capture). At each anchor in its
//! span a capture gives the fingerprints of its next [`SharedOptions::sample`] packets, from a
//! record found by bisecting the file on timestamps (wherever the anchor lies, a few probes);
//! and, for its host only, the packets at a third and two thirds of its length. So the check
//! costs milliseconds for plain files whatever their sizes.
//!
//! A stream (bytes in memory, a compressed file) is read once, through, so that the same bytes
//! give the same answer whichever way they come: every anchor is where some capture's span
//! begins, and those starts are known once each capture's first packet is read, so the stream
//! keeps a sample at each of them, the stretches at its thirds, and its last megabyte's
//! timestamps; the anchors are chosen once its end is known. That costs a framing of the
//! stream (a decompression, for a compressed one) and, in memory, the packets of the samples
//! from all those starts ([`Windows`]: about one sample for captures that start together, at
//! most one per capture for starts far apart). A
//! compressed file's thirds are those of the length its headers announce, once the stream ends
//! there; else, with [`SharedOptions::read_through`], it is read again up to them once its
//! length is known; compressed bytes in memory take the nearest of evenly spaced stretches (see
//! [`Probes`]). At most [`SharedOptions::max_packets`] are read; a longer stream's end stays
//! unknown (`i64::MAX`).
//!
//! A fingerprint is of the IP packet's identity, not of its bytes as captured, and only of the
//! first bytes, which every snaplen of 64 or more keeps: the addresses, the protocol, the IPv4
//! identification and length (IPv6: flow label and payload length), and the transport header's
//! ports and TCP sequence number (UDP: length; ICMP: type, code, identifier and sequence). Left
//! out is what changes between the two places a packet is seen: the link layer (VLAN tags
//! stripped by the NIC), the TTL or hop limit and the IPv4 checksum (routers), the DSCP/ECN byte
//! (a switch marks congestion), and the TCP and UDP checksums (a sender's capture holds them
//! before the NIC fills them in). A TSO super-frame on the sender and its segments on the
//! receiver do not match; their ACKs do, which is enough to tell. A packet cut before those
//! bytes is not sampled.
//!
//! Non-IP packets, packets without a timestamp and those outside the time range are not
//! sampled; each capture's filter applies, so captures read through `src host` filters that
//! keep each packet once share nothing. Clocks that differ between hosts by more than a sample's
//! stretch (at 1,024 packets, milliseconds to a second of traffic) hide the overlap.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::capture::split::{ChunkReader, SplitPlan};
use crate::capture::{named_among, CaptureReader};
use crate::error::{ErrorKind, Result, Warning};
use crate::filter::Filter;
use crate::input::{announced_len, Announced};
use crate::packet::{Packet, TimeRange};
use crate::wire;

/// How much of each capture the check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedOptions {
    /// Packets read from each capture at each anchor (default 1,024).
    pub sample: usize,
    /// Most packets framed from one capture read as a stream, or skipped in a plain file on the
    /// way to an anchor (default 2^22).
    pub max_packets: u64,
    /// Only packets in this range are sampled, as a scan of it reads them.
    pub time_range: TimeRange,
    /// Read a compressed stream through (default), as one of known length always is, so that
    /// it gives what its plain file would (a compressed file whose headers do not announce its
    /// length is read again, up to two thirds of it); else it is read only until its samples
    /// are full, its end unknown and its host told from those samples alone (the cheap check
    /// before a read: decompressing a whole capture costs about what its scan does).
    pub read_through: bool,
}

crate::builders!([] SharedOptions {
    sample: usize => with_sample,
    max_packets: u64 => with_max_packets,
    time_range: TimeRange => with_time_range,
    read_through: bool => with_read_through,
});

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            sample: 1024,
            max_packets: 1 << 22,
            time_range: TimeRange::ALL,
            read_through: true,
        }
    }
}

/// Two captures that hold the same packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedPair {
    /// Their indices among the readers, `a` < `b`.
    pub a: usize,
    /// See `a`.
    pub b: usize,
    /// The anchor both were sampled from (of those both reached, the one where they share most).
    pub from_ns: i64,
    /// Distinct packets (fingerprints) found in both samples.
    pub shared: usize,
    /// Distinct packets sampled from each.
    pub sampled_a: usize,
    /// See `sampled_a`.
    pub sampled_b: usize,
}

/// What [`shared_packets`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedPackets {
    /// Every pair of captures with at least one packet in common, in order of (a, b).
    pub pairs: Vec<SharedPair>,
    /// Per capture, the host it was recorded on, whose `src host` filter keeps each packet once:
    /// the one address that is the source or the destination of at least 90 % of the packets of
    /// every stretch sampled (a plain file is also sampled at a third and two thirds of its
    /// length). A capture of a single pair of hosts' traffic names both alike: its host is the
    /// one of the two whose packets it saw first, relative to the other's, against every
    /// capture it shares packets with that tells (the clocks' difference cancels out; see
    /// `nearer` in the source). `None` where neither tells: a bridge or mirror capture of many
    /// hosts, or a pair's capture that shares too few packets, or whose comparisons disagree.
    pub hosts: Vec<Option<IpAddr>>,
    /// Sources of sampled packets that are no capture's host, in order: the packets they sent
    /// would be in no capture read through `src host` filters of the hosts above (a host nobody
    /// captured, or a capture of several hosts' traffic that passed for one host's).
    pub uncaptured: Vec<IpAddr>,
    /// The anchors, in time order.
    pub anchors: Vec<i64>,
    /// Per capture, its first and last instant in the time range (`i64::MAX` as the last of a
    /// stream not read to its end: past [`SharedOptions::max_packets`], or compressed without
    /// [`SharedOptions::read_through`]), `None` when nothing is in range.
    pub spans: Vec<Option<(i64, i64)>>,
    /// Per capture, its first and last instant whatever the time range (found as `spans` are,
    /// the last `i64::MAX` where unknown), `None` when it has no packet with a timestamp: what a
    /// range that holds none of its packets, or a bound far from them, is told against.
    pub whole_spans: Vec<Option<(i64, i64)>>,
    /// Per capture, where the check found it cut short (a `Truncated` warning, not read
    /// strictly), as a read of it would tell: a plain file's last megabyte is read for its
    /// span, a stream is read through. Other warnings are not kept: the samples read stretches
    /// only, and what they meet there is not what a read of the whole capture tells.
    pub warnings: Vec<Vec<Warning>>,
}

/// Sample `readers` (positioned at their first packet) and report the pairs that share packets.
/// `filters` holds each reader's filter (an empty slice: none); see
/// [`crate::engine::ScanConfig::filter_per_capture`]. A truncated tail ends a capture's sample
/// (with a warning in the reader, or an error if it reads strictly); damage met reading a
/// stream is the error: a read of them all would fail with it too, and what they share is then
/// moot. Damage met reading a plain file from an anchor only ends that sample.
pub fn shared_packets(
    readers: &mut [CaptureReader],
    filters: &[Option<Filter>],
    options: &SharedOptions,
) -> Result<SharedPackets> {
    // An error names the capture it was met in, as a read of them all would; the captures
    // borrow their readers, so the names are taken first.
    let n = readers.len();
    let labels: Vec<String> = (0..n).map(|k| readers[k].label(k, n)).collect();
    let named = |k: usize, e: crate::error::Error| named_among(e, n, || labels[k].clone());
    let mut opened = Vec::with_capacity(n);
    for (k, reader) in readers.iter_mut().enumerate() {
        let filter = filters.get(k).and_then(Option::as_ref);
        opened.push(Capture::open(reader, filter, options).map_err(|e| named(k, e))?);
    }
    // Every anchor is where some capture's span begins (see `anchors`), and every span's start
    // is known now: a stream, read once, is sampled at each of them, and its end found, before
    // the anchors are chosen.
    let mut starts: Vec<i64> = opened.iter().filter_map(|c| c.span.map(|s| s.0)).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut captures = Vec::with_capacity(n);
    for (k, capture) in opened.into_iter().enumerate() {
        captures.push(
            capture
                .read_stream(&starts, options)
                .map_err(|e| named(k, e))?,
        );
    }
    let spans: Vec<Option<(i64, i64)>> = captures.iter().map(|c| c.span).collect();
    let warnings: Vec<Vec<Warning>> = captures
        .iter_mut()
        .map(|c| std::mem::take(&mut c.told))
        .collect();
    let whole_spans: Vec<Option<(i64, i64)>> = captures.iter().map(|c| c.whole).collect();
    let anchors = anchors(&spans);
    let mut samples = Vec::with_capacity(captures.len());
    let mut seen = Vec::with_capacity(captures.len());
    let mut senders = HashSet::new();
    for (k, capture) in captures.into_iter().enumerate() {
        let (sets, hosts) = capture.sample(&anchors, options).map_err(|e| named(k, e))?;
        samples.push(sets);
        senders.extend(hosts.sources.iter().copied());
        seen.push(hosts);
    }

    let (common, _) = in_common(&samples, anchors.len());
    let mut pairs = Vec::with_capacity(common.len());
    for ((a, b), (shared, at)) in common {
        pairs.push(SharedPair {
            a,
            b,
            from_ns: anchors[at],
            shared,
            sampled_a: samples[a][at].len(),
            sampled_b: samples[b][at].len(),
        });
    }
    pairs.sort_unstable_by_key(|p| (p.a, p.b));
    let hosts = hosts(&seen, &samples, &pairs, &anchors);
    let named: HashSet<IpAddr> = hosts.iter().flatten().copied().collect();
    let mut uncaptured: Vec<IpAddr> = senders.difference(&named).copied().collect();
    uncaptured.sort_unstable();
    Ok(SharedPackets {
        pairs,
        hosts,
        uncaptured,
        anchors,
        spans,
        whole_spans,
        warnings,
    })
}

/// Of a read's warnings, those that say the capture is cut short.
fn cut_short(warnings: &[Warning]) -> Vec<Warning> {
    warnings
        .iter()
        .filter(|w| w.kind == ErrorKind::Truncated)
        .cloned()
        .collect()
}

/// Packets sampled at one anchor: their distinct fingerprints, sorted, and beside each when the
/// capture first saw it and who sent it. Sorted arrays rather than hash sets: a pair's packets
/// in common are one merge of two arrays, and the many pairs of many captures run through
/// memory in order.
#[derive(Debug, Clone, Default)]
struct Sampled {
    prints: Vec<u64>,
    seen: Vec<Seen>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    at: i64,
    src: IpAddr,
    /// Timed by [`nearer`]: the packet has an identity of its own ([`Sample::own`]) and is the
    /// only packet of the sample with its fingerprint.
    timed: bool,
}

impl Sampled {
    /// From packets in the order they were read: a fingerprint seen again keeps its first time.
    fn new(mut packets: Vec<(u64, Seen)>) -> Self {
        // Stable: among equal fingerprints the first read stays first.
        packets.sort_by_key(|&(f, _)| f);
        packets.dedup_by(|later, first| {
            let same = later.0 == first.0;
            first.1.timed &= !same;
            same
        });
        let (prints, seen) = packets.into_iter().unzip();
        Sampled { prints, seen }
    }

    fn len(&self) -> usize {
        self.prints.len()
    }

    /// The positions in `self` and in `other` of each fingerprint both hold.
    fn common<'s>(&'s self, other: &'s Sampled) -> impl Iterator<Item = (usize, usize)> + 's {
        let (a, b) = (&self.prints, &other.prints);
        let (mut i, mut j) = (0, 0);
        std::iter::from_fn(move || {
            while i < a.len() && j < b.len() {
                match a[i].cmp(&b[j]) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => {
                        (i, j) = (i + 1, j + 1);
                        return Some((i - 1, j - 1));
                    }
                }
            }
            None
        })
    }
}

/// Per pair of captures `(a, b)`, `a < b`: the most fingerprints they hold in common at one
/// anchor, and that anchor.
type Best = HashMap<(usize, usize), (usize, usize)>;

/// For each pair of captures `(a, b)`, `a < b`, that hold a fingerprint in common at some
/// anchor, the most they hold in common at one anchor and the first anchor where they hold that
/// many; and how many times a pair's entry was looked up. Per anchor, every capture's
/// fingerprints are sorted together, and each run of one fingerprint (a capture holds it at
/// most once) counts once for every pair of captures in it: the time follows the fingerprints
/// shared, not the pairs of captures. Comparing every pair's samples took time in the square of
/// the captures: 500 per-host captures of 2,000 packets each, 124,750 pairs, spent 6 s there
/// before a scan of them read its first packet, with neither progress nor a Ctrl-C heard.
///
/// A fingerprint in m captures still makes m(m-1)/2 counts (broadcasts seen by every host, or
/// one capture given many times): the counts of an anchor go to an array indexed by the pair,
/// and the map is looked up once per pair and anchor. Counting in the map itself took 54 s for
/// 1,000 copies of one capture (500 M look-ups of 500,000 pairs); and a pair kept a count for
/// every anchor, which for captures that start one after another is the pairs times the anchors.
fn in_common(samples: &[Vec<Sampled>], anchors: usize) -> (Best, usize) {
    // Beyond 2,048 captures, where the array would pass 16 MB, a map counts.
    let n = samples.len();
    counted(samples, anchors, n.saturating_mul(n) <= 1 << 22)
}

/// [`in_common`], counting an anchor's pairs in an array (`dense`, pair (a, b) at a * n + b)
/// or in a map.
fn counted(samples: &[Vec<Sampled>], anchors: usize, dense: bool) -> (Best, usize) {
    let n = samples.len();
    let mut best = Best::new();
    let mut lookups = 0;
    let mut all: Vec<(u64, usize)> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut sparse: HashMap<(usize, usize), u32> = HashMap::new();
    let mut touched: Vec<(usize, usize)> = Vec::new();
    for at in 0..anchors {
        all.clear();
        for (k, sets) in samples.iter().enumerate() {
            all.extend(sets[at].prints.iter().map(|&print| (print, k)));
        }
        all.sort_unstable();
        for run in all.chunk_by(|x, y| x.0 == y.0) {
            for (i, &(_, a)) in run.iter().enumerate() {
                for &(_, b) in &run[i + 1..] {
                    if dense {
                        if counts.is_empty() {
                            counts = vec![0; n * n];
                        }
                        let c = &mut counts[a * n + b];
                        if *c == 0 {
                            touched.push((a, b));
                        }
                        *c += 1;
                    } else {
                        *sparse.entry((a, b)).or_insert(0) += 1;
                    }
                }
            }
        }
        let mut record = |pair: (usize, usize), shared: usize| {
            lookups += 1;
            let e = best.entry(pair).or_insert((0, at));
            // Anchors come in order: a tie keeps the first.
            if shared > e.0 {
                *e = (shared, at);
            }
        };
        for pair in touched.drain(..) {
            let c = std::mem::take(&mut counts[pair.0 * n + pair.1]);
            record(pair, c as usize);
        }
        for (pair, c) in sparse.drain() {
            record(pair, c as usize);
        }
    }
    (best, lookups)
}

/// Each capture's host: the one address in nearly all of its packets ([`Hosts::host`]); or, for
/// a capture of one pair of hosts' traffic (both in every packet), the one of the two whose
/// packets it saw first, by every capture it shares packets with that tells ([`nearer`]).
fn hosts(
    seen: &[Hosts],
    samples: &[Vec<Sampled>],
    pairs: &[SharedPair],
    anchors: &[i64],
) -> Vec<Option<IpAddr>> {
    let named: Vec<Option<IpAddr>> = seen.iter().map(Hosts::host).collect();
    let two: Vec<Option<[IpAddr; 2]>> = seen
        .iter()
        .zip(&named)
        .map(|(s, n)| if n.is_some() { None } else { s.two() })
        .collect();
    let mut votes = vec![Vote::None; seen.len()];
    for p in pairs {
        let at = anchors.partition_point(|&a| a < p.from_ns);
        let (a, b) = (&samples[p.a][at], &samples[p.b][at]);
        if let Some(pair) = two[p.a] {
            let host = nearer(a, b, pair);
            votes[p.a].add(host);
            // The same comparison from the other side names the other host.
            if two[p.b] == Some(pair) {
                votes[p.b].add(host.map(|h| if h == pair[0] { pair[1] } else { pair[0] }));
            }
        }
        if let Some(pair) = two[p.b].filter(|&pair| two[p.a] != Some(pair)) {
            votes[p.b].add(nearer(b, a, pair));
        }
    }
    named
        .into_iter()
        .zip(votes)
        .map(|(n, v)| match v {
            Vote::For(h) => n.or(Some(h)),
            _ => n,
        })
        .collect()
}

/// What the comparisons of a pair's capture with the others say.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Vote {
    None,
    For(IpAddr),
    Split,
}

impl Vote {
    /// A comparison that cannot tell is no vote; two that name different hosts name none.
    fn add(&mut self, host: Option<IpAddr>) {
        if let Some(h) = host {
            *self = match *self {
                Vote::None => Vote::For(h),
                Vote::For(g) if g == h => Vote::For(h),
                _ => Vote::Split,
            };
        }
    }
}

/// Packets each way that a pair's samples must share before their times are compared.
const TIMED_EACH_WAY: usize = 8;

/// Of the two hosts `two`, the one whose packets capture `x` saw earlier than capture `y` did,
/// relative to the other's: a packet is seen first where it is sent. With `d` the time from one
/// capture point to the other and `c` the difference of the two clocks, the one's packets are
/// `x − y = c − d` apart and the other's `c + d`: the clocks' difference cancels out, and as
/// every delay is above zero, the two ways' differences do not overlap at all. They are asked
/// to be apart from quartile to quartile (the upper quartile of one way below the lower of the
/// other), which a few packets matched by chance do not undo and two captures at one point
/// (one file twice, or a copy shifted in time or cut to microseconds) never pass. Only packets
/// that are once in each sample are timed: one fingerprint that many packets share (an IPv6
/// pure ACK, a datagram with IP identification 0) matches the first of them in each capture,
/// which need not be the same packet. `None` when either way has fewer than [`TIMED_EACH_WAY`]
/// such packets or the ways are not apart. Swapping `x` and `y` names the other host.
fn nearer(x: &Sampled, y: &Sampled, two: [IpAddr; 2]) -> Option<IpAddr> {
    let mut apart: [Vec<i128>; 2] = [Vec::new(), Vec::new()];
    for (i, j) in x.common(y) {
        let (sx, sy) = (x.seen[i], y.seen[j]);
        if !(sx.timed && sy.timed) {
            continue;
        }
        if let Some(k) = two.iter().position(|&h| h == sx.src) {
            apart[k].push(i128::from(sx.at) - i128::from(sy.at));
        }
    }
    // The quartiles at positions symmetric from both ends, so that swapping the captures
    // (every difference negated) swaps the answer.
    let [q0, q1] = apart.map(|mut v| {
        (v.len() >= TIMED_EACH_WAY).then(|| {
            v.sort_unstable();
            let lo = (v.len() - 1) / 4;
            (v[lo], v[v.len() - 1 - lo])
        })
    });
    let ((low0, high0), (low1, high1)) = (q0?, q1?);
    if high0 < low1 {
        Some(two[0])
    } else if high1 < low0 {
        Some(two[1])
    } else {
        None
    }
}

/// The fewest instants such that every two captures whose spans overlap both run at one of
/// them: interval stabbing of the pairs' overlaps, taken by latest start first, each anchor the
/// start of an overlap (where the later capture of the pair begins).
fn anchors(spans: &[Option<(i64, i64)>]) -> Vec<i64> {
    let mut overlaps = Vec::new();
    for (a, sa) in spans.iter().enumerate() {
        for sb in &spans[a + 1..] {
            if let (Some((fa, la)), Some((fb, lb))) = (sa, sb) {
                let (lo, hi) = (*fa.max(fb), *la.min(lb));
                if lo <= hi {
                    overlaps.push((lo, hi));
                }
            }
        }
    }
    overlaps.sort_unstable_by(|x, y| y.cmp(x));
    let mut points: Vec<i64> = Vec::new();
    for (lo, hi) in overlaps {
        // Points come in decreasing order, each ≥ every later `lo`: only the last can hold it.
        if points.last().is_none_or(|&p| hi < p) {
            points.push(lo);
        }
    }
    points.reverse();
    points
}

/// One capture, as the check reads it.
struct Capture<'r> {
    filter: Option<&'r Filter>,
    /// First and last instant in the time range (the last `i64::MAX` for a stream not read to
    /// its end); `None` when nothing is in range.
    span: Option<(i64, i64)>,
    /// `span` whatever the time range.
    whole: Option<(i64, i64)>,
    how: How<'r>,
    /// What the reads of it met that a read of all of it tells too: where it is cut short
    /// (only the last megabyte of a plain file, read for its span, or a stream read through,
    /// meet that; other warnings depend on which stretches were sampled).
    told: Vec<Warning>,
}

enum How<'r> {
    /// A plain file, read from wherever an anchor lies.
    Seek(SplitPlan),
    /// Not yet read on from the start; its first packet with a timestamp already read.
    Stream {
        reader: &'r mut CaptureReader,
        first: Option<Pending>,
        read: u64,
    },
    /// Read through once ([`Capture::read_stream`]).
    Read(StreamRead),
}

/// A stream's first packet with a timestamp, read to find where its span begins.
struct Pending {
    offset: u64,
    t: i64,
    sample: Option<Sample>,
}

impl<'r> Capture<'r> {
    fn open(
        reader: &'r mut CaptureReader,
        filter: Option<&'r Filter>,
        options: &SharedOptions,
    ) -> Result<Self> {
        let range = options.time_range;
        if let Some(plan) = reader
            .plain_path()
            .map(|path| SplitPlan::new(path, reader.options()))
            .transpose()?
            .flatten()
        {
            let (span, told) = plan.time_span_told()?;
            let told = cut_short(&told);
            if let Some((first, last)) = span {
                let whole = Some((first, last));
                let first = range.start_ns.map_or(first, |s| first.max(s));
                let last = range.end_ns.map_or(last, |e| last.min(e.saturating_sub(1)));
                return Ok(Capture {
                    filter,
                    span: (first <= last).then_some((first, last)),
                    whole,
                    how: How::Seek(plan),
                    told,
                });
            }
        }
        // As a plain file's span begins at its first packet's timestamp, whatever the range.
        let mut read = 0;
        let mut first = None;
        while first.is_none() && read < options.max_packets {
            let Some(p) = reader.next_packet()? else {
                break;
            };
            read += 1;
            first = p.ts_ns.map(|t| Pending {
                offset: p.offset,
                t,
                sample: sample(&p, filter),
            });
        }
        let start = first
            .as_ref()
            .map(|f| range.start_ns.map_or(f.t, |s| f.t.max(s)));
        Ok(Capture {
            filter,
            span: start.map(|s| (s, i64::MAX)),
            whole: first.as_ref().map(|f| (f.t, i64::MAX)),
            how: How::Stream {
                reader,
                first,
                read,
            },
            told: Vec::new(),
        })
    }

    /// A stream read through once, as a plain file is sampled ([`Capture::sample`]): its sample
    /// at each of `starts` (where an anchor can be), the stretches at a third and two thirds of
    /// its length, and its last instant as [`SplitPlan::time_span`] finds a file's, from the
    /// packets of its last megabyte; so that the same bytes give the same answer read either
    /// way. Memory: a sample per start and per probe, and the timestamps of one megabyte. At
    /// most `options.max_packets` are read: a longer stream's end stays unknown, and its
    /// samples past that are empty.
    fn read_stream(self, starts: &[i64], options: &SharedOptions) -> Result<Self> {
        let How::Stream {
            reader,
            first,
            mut read,
        } = self.how
        else {
            return Ok(self);
        };
        let (Some((start, _)), Some(pending)) = (self.span, first) else {
            return Ok(Capture {
                how: How::Read(StreamRead::default()),
                told: cut_short(reader.warnings()),
                ..self
            });
        };
        let data_start = pending.offset;
        // Only for a compressed regular file: bytes in memory have their length already.
        let announced = reader
            .file_path()
            .filter(|_| reader.data_len().is_none())
            .and_then(|path| announced_len(path, reader.compression()));
        let mut taking = Taking {
            at: Windows::new(starts, options.sample),
            probes: Probes::new(data_start, reader.data_len(), announced),
            tail: std::collections::VecDeque::new(),
            range: options.time_range,
        };
        taking.take(pending.offset, Some(pending.t), || pending.sample);
        let through = options.read_through || reader.data_len().is_some();
        let mut whole = false;
        while read < options.max_packets && (through || !taking.at.done()) {
            let Some(p) = reader.next_packet()? else {
                whole = true;
                break;
            };
            read += 1;
            let filter = self.filter;
            taking.take(p.offset, p.ts_ns, || sample(&p, filter));
        }
        let len = reader.data_len().unwrap_or_else(|| reader.position());
        let mut whole_span = self.whole;
        let span = if whole {
            let from = len.saturating_sub(TAIL).max(data_start);
            let last = taking
                .tail
                .iter()
                .find(|&&(offset, _)| offset >= from)
                .map(|&(_, t)| t);
            if let Some(l) = last {
                whole_span = Some((pending.t, l));
            }
            let range = options.time_range;
            last.map(|l| range.end_ns.map_or(l, |e| l.min(e.saturating_sub(1))))
                .map_or(Some((start, i64::MAX)), |last| {
                    (start <= last).then_some((start, last))
                })
        } else {
            Some((start, i64::MAX))
        };
        // Placed from the length: none for a stream not read to its end. A compressed file
        // whose length was not known while it was read is read again up to its thirds, when
        // the caller asked for what its plain file gives (`read_through`), not for the check's
        // cost: so that the stretches are the plain file's, not the nearest evenly spaced ones,
        // which can tell a host the plain file does not.
        let probes = if whole {
            taking.probes.at_thirds(len).unwrap_or_else(|probes| {
                reader
                    .file_path()
                    .filter(|_| options.read_through)
                    .and_then(|path| {
                        read_again(
                            path,
                            reader.options(),
                            self.filter,
                            data_start,
                            len,
                            options.max_packets,
                        )
                    })
                    .unwrap_or_else(|| probes.nearest(len))
            })
        } else {
            Vec::new()
        };
        Ok(Capture {
            filter: self.filter,
            span,
            whole: whole_span,
            how: How::Read(StreamRead {
                at: Some(taking.at),
                probes,
            }),
            told: cut_short(reader.warnings()),
        })
    }

    /// The fingerprints sampled at each anchor (empty at those outside the span), and the
    /// addresses seen.
    fn sample(self, anchors: &[i64], options: &SharedOptions) -> Result<(Vec<Sampled>, Hosts)> {
        let mut sets = vec![Sampled::default(); anchors.len()];
        let Some((first, last)) = self.span else {
            return Ok((sets, Hosts::default()));
        };
        let mut hosts = Hosts::default();
        match self.how {
            // Read through before the anchors were chosen.
            How::Stream { .. } => {}
            How::Read(read) => {
                let windows = read.at.as_ref();
                for (at, &t) in anchors.iter().enumerate() {
                    if !(first..=last).contains(&t) {
                        continue;
                    }
                    if let Some((packets, addresses)) = windows.and_then(|w| w.sample_at(t)) {
                        sets[at] = Sampled::new(packets);
                        hosts.add(addresses);
                    }
                }
                for probe in read.probes {
                    hosts.add(probe);
                }
            }
            How::Seek(plan) => {
                for (at, &t) in anchors.iter().enumerate() {
                    if (first..=last).contains(&t) {
                        let (packets, addresses) =
                            sample_from(&plan, t, self.filter, options)?.into_first();
                        sets[at] = Sampled::new(packets);
                        hosts.add(addresses);
                    }
                }
                // Two more stretches, for the host only: a bridge's first packets may all be
                // with one host (a job's rendezvous) and pass for a host's own capture.
                let (start, len) = (plan.data_start(), plan.file_len());
                for at in thirds(start, len) {
                    let Some(mut chunk) = plan.open(at, len)? else {
                        continue;
                    };
                    // The whole file's hosts, whatever the time range: a few packets, read.
                    let mut sampler = Sampler::new(&[i64::MIN], 0, PROBE.sample);
                    // Damage in a chunk only ends its stretch: the scan reports it.
                    let _ = read_into(&mut sampler, &mut chunk, self.filter, &PROBE, 0);
                    plan.hand_back(at, chunk.position());
                    hosts.add(sampler.into_first().1);
                }
            }
        }
        Ok((sets, hosts))
    }
}

/// How a stretch read for the host only is read: the first 256 packets of the first 1,024 from
/// where it begins, whatever the time range.
const PROBE: SharedOptions = SharedOptions {
    sample: 256,
    max_packets: 4 * 256,
    time_range: TimeRange::ALL,
    read_through: true,
};

/// Where the stretches read for the host only begin: a third and two thirds of the way from the
/// first record to the end.
fn thirds(start: u64, len: u64) -> [u64; 2] {
    let third = len.saturating_sub(start) / 3;
    [start + third, start + third * 2]
}

/// The end of a capture whose timestamps give its last instant ([`SplitPlan::time_span`]).
const TAIL: u64 = 1 << 20;

/// What a stream read through keeps ([`Capture::read_stream`]).
#[derive(Default)]
struct StreamRead {
    /// The samples at every start.
    at: Option<Windows>,
    /// The addresses of the stretches read for the host only.
    probes: Vec<Addresses>,
}

/// A stream's samples at every start where an anchor can be: each as a [`Sampler`] of that one
/// anchor takes it, from one log of the packets that some sample takes, in the order read.
/// Captures that run together start close to one another and their samples overlap: the log
/// holds their union (a thousand packets and the stretch between the first start and the
/// last), not one sample per start; at most a sample per start, for starts far apart.
struct Windows {
    starts: Vec<i64>,
    /// Starts before `started` have begun; those before `lo` are full.
    started: usize,
    lo: usize,
    taken: Vec<usize>,
    sample: usize,
    /// Each start's sample lies in `log[begin..end]` (those stamped before the start left out).
    begin: Vec<usize>,
    end: Vec<Option<usize>>,
    log: Vec<(i64, Option<Sample>)>,
}

impl Windows {
    fn new(starts: &[i64], sample: usize) -> Self {
        Windows {
            starts: starts.to_vec(),
            started: 0,
            lo: 0,
            taken: vec![0; starts.len()],
            sample,
            begin: vec![0; starts.len()],
            end: vec![None; starts.len()],
            log: Vec::new(),
        }
    }

    fn done(&self) -> bool {
        self.lo == self.starts.len()
    }

    /// As [`Sampler::wants`].
    fn wants(&self, t: i64) -> bool {
        self.lo < self.started || self.starts.get(self.started).is_some_and(|&next| t >= next)
    }

    /// As [`Sampler::feed`], into the log.
    fn feed(&mut self, t: i64, s: Option<Sample>) {
        while self.starts.get(self.started).is_some_and(|&next| t >= next) {
            self.begin[self.started] = self.log.len();
            self.started += 1;
        }
        self.log.push((t, s));
        for a in self.lo..self.started {
            if self.starts[a] > t || self.taken[a] >= self.sample {
                continue;
            }
            self.taken[a] += 1;
            if self.taken[a] == self.sample {
                self.end[a] = Some(self.log.len());
            }
        }
        while self.lo < self.started && self.taken[self.lo] >= self.sample {
            self.lo += 1;
        }
    }

    /// The packets of the sample at start `t` and their addresses, as a [`Sampler`] of it gives
    /// them; `None` when `t` is no start.
    fn sample_at(&self, t: i64) -> Option<(Vec<(u64, Seen)>, Addresses)> {
        let k = self.starts.binary_search(&t).ok()?;
        let mut packets = Vec::new();
        let mut addresses = Addresses::default();
        if k < self.started {
            let end = self.end[k].unwrap_or(self.log.len());
            for &(at, s) in &self.log[self.begin[k]..end] {
                if let Some(s) = s.filter(|_| at >= t) {
                    let seen = Seen {
                        at,
                        src: s.hosts[0],
                        timed: s.own,
                    };
                    packets.push((s.fingerprint, seen));
                    addresses.count(s.hosts);
                }
            }
        }
        Some((packets, addresses))
    }
}

/// A stream's packets, as it is read through.
struct Taking {
    /// The samples at every start.
    at: Windows,
    probes: Probes,
    /// (offset, timestamp) of the packets that may hold the last instant of the stream's last
    /// megabyte: each stamped later than every packet after it, within a megabyte of the last.
    tail: std::collections::VecDeque<(u64, i64)>,
    range: TimeRange,
}

impl Taking {
    /// The packet at `offset`, stamped `ts`; `sample` is its sample, made only if wanted.
    fn take(&mut self, offset: u64, ts: Option<i64>, sample: impl FnOnce() -> Option<Sample>) {
        self.probes.reach(offset);
        let in_range = ts.filter(|&t| self.range.contains(t));
        let wanted = self.probes.wanted() || in_range.is_some_and(|t| self.at.wants(t));
        let s = if wanted { sample() } else { None };
        self.probes.feed(ts, s);
        if let Some(t) = in_range.filter(|&t| self.at.wants(t)) {
            self.at.feed(t, s);
        }
        if let Some(t) = ts {
            // Past a megabyte behind this packet, no packet is in the last megabyte.
            while self
                .tail
                .front()
                .is_some_and(|&(o, _)| o.saturating_add(TAIL) <= offset)
            {
                self.tail.pop_front();
            }
            while self.tail.back().is_some_and(|&(_, u)| u <= t) {
                self.tail.pop_back();
            }
            self.tail.push_back((offset, t));
        }
    }
}

/// One stretch read for the host only: where it begins, its sample, the packets read in it.
struct Stretch {
    at: u64,
    sampler: Sampler,
    read: u64,
}

impl Stretch {
    fn new(at: u64) -> Self {
        Stretch {
            at,
            sampler: Sampler::new(&[i64::MIN], 0, PROBE.sample),
            read: 0,
        }
    }

    /// Begun at the packet at `reached` or before, and still taking packets.
    fn active(&self, reached: u64) -> bool {
        self.at <= reached && !self.sampler.done() && self.read < PROBE.max_packets
    }

    /// As [`read_into`] reads a plain file's stretch: every packet counts, the sample takes the
    /// first stamped ones.
    fn feed(&mut self, ts: Option<i64>, s: Option<Sample>) {
        self.read += 1;
        if let Some(t) = ts.filter(|&t| self.sampler.wants(t)) {
            self.sampler.feed(t, s);
        }
    }

    fn addresses(self) -> Addresses {
        self.sampler.into_first().1
    }
}

/// The stretches of a stream read for the host only, as [`thirds`] places a plain file's. With
/// the stream's length known (bytes in memory), at exactly those offsets. A compressed file's
/// headers may announce its length ([`Announced`]): the stream is also read at the thirds of
/// each length announced until it is read past that length, and at its end the stretches of
/// the length it has, if one was announced, are those of its plain file. Without (a zstd frame
/// written as a stream, several gzip members, a header that lies), stretches at evenly spaced
/// offsets, the spacing doubled and every other dropped when they are too many; at the end, the
/// two nearest a third and two thirds of the length are kept (within an eighth of it, or
/// 64 KiB), unless the file is read again ([`read_again`]).
struct Probes {
    start: u64,
    known: bool,
    /// The lengths announced, and the next of them (see [`Announced::nth`]) whose stretches
    /// are not begun yet: only those whose first third the stream has reached are begun.
    announced: Option<Announced>,
    next_announced: u64,
    /// The stretches at the thirds of each length announced that the stream may still have,
    /// each beside that length.
    exact: Vec<(u64, Stretch)>,
    /// Of unknown length: the spacing, and where the next stretch begins.
    step: u64,
    next: u64,
    /// At the thirds of the known length, or evenly spaced.
    list: Vec<Stretch>,
    /// The offset of the packet being read.
    reached: u64,
}

/// Stretches of a stream of unknown length held at once.
const PROBES_HELD: usize = 16;

impl Probes {
    fn new(start: u64, len: Option<u64>, announced: Option<Announced>) -> Self {
        let list = len.map_or_else(Vec::new, |len| {
            thirds(start, len).into_iter().map(Stretch::new).collect()
        });
        let step = 1 << 16;
        Probes {
            start,
            known: len.is_some(),
            announced: announced.filter(|_| len.is_none()),
            next_announced: 0,
            exact: Vec::new(),
            step,
            next: start + step,
            list,
            reached: start,
        }
    }

    /// Begin the stretches up to `offset`, where a packet begins.
    fn reach(&mut self, offset: u64) {
        while !self.known && self.next <= offset {
            self.list.push(Stretch::new(self.next));
            self.next += self.step;
            if self.list.len() > PROBES_HELD {
                let (start, step) = (self.start, self.step);
                self.list.retain(|s| ((s.at - start) / step) % 2 == 0);
                self.step *= 2;
                self.next = start + (self.next - start).div_ceil(self.step) * self.step;
            }
        }
        if let Some(announced) = self.announced {
            // A packet at `offset`: the stream is longer than that.
            self.exact.retain(|&(len, _)| len > offset);
            while let Some(len) = announced.nth(self.next_announced) {
                let [third, two_thirds] = thirds(self.start, len);
                if third > offset {
                    break;
                }
                self.next_announced += 1;
                if len > offset {
                    self.exact.push((len, Stretch::new(third)));
                    self.exact.push((len, Stretch::new(two_thirds)));
                }
            }
        }
        self.reached = offset;
    }

    fn stretches(&mut self) -> impl Iterator<Item = &mut Stretch> {
        self.list
            .iter_mut()
            .chain(self.exact.iter_mut().map(|(_, s)| s))
    }

    fn wanted(&self) -> bool {
        let reached = self.reached;
        self.list
            .iter()
            .chain(self.exact.iter().map(|(_, s)| s))
            .any(|s| s.active(reached))
    }

    /// Every stretch of a known length has begun and taken all it takes.
    fn finished(&self) -> bool {
        self.list
            .iter()
            .all(|s| s.at <= self.reached && !s.active(self.reached))
    }

    fn feed(&mut self, ts: Option<i64>, s: Option<Sample>) {
        let reached = self.reached;
        for stretch in self.stretches().filter(|st| st.active(reached)) {
            stretch.feed(ts, s);
        }
    }

    /// The addresses of the stretches at a third and two thirds of `len`, the stream's length,
    /// when they were read there: the length known before reading, or announced. `self` as it
    /// was otherwise.
    fn at_thirds(self, len: u64) -> std::result::Result<Vec<Addresses>, Self> {
        if self.known {
            return Ok(self.list.into_iter().map(Stretch::addresses).collect());
        }
        if !self.exact.iter().any(|&(l, _)| l == len) {
            return Err(self);
        }
        Ok(self
            .exact
            .into_iter()
            .filter(|&(l, _)| l == len)
            .map(|(_, s)| s.addresses())
            .collect())
    }

    /// The addresses of the evenly spaced stretches nearest a third and two thirds of `len`.
    fn nearest(self, len: u64) -> Vec<Addresses> {
        let mut list: Vec<Option<Stretch>> = self.list.into_iter().map(Some).collect();
        thirds(self.start, len)
            .into_iter()
            .filter_map(|target| {
                let k = (0..list.len())
                    .filter(|&k| list[k].is_some())
                    .min_by_key(|&k| {
                        list[k].as_ref().map_or(u64::MAX, |s| s.at.abs_diff(target))
                    })?;
                list[k].take().map(Stretch::addresses)
            })
            .collect()
    }
}

/// The stretches at the thirds of `len` of the compressed file at `path`, read through once
/// without its length known beforehand (or with a length announced that it does not have): read
/// again from its start, as far as the second stretch, so that it gives what its plain file
/// gives. About two thirds of a second decompression. `None` when the file cannot be read again
/// as it was read the first time (gone, or damaged where it was not): the caller keeps the
/// stretches nearest the thirds.
fn read_again(
    path: &std::path::Path,
    options: crate::capture::ReadOptions,
    filter: Option<&Filter>,
    start: u64,
    len: u64,
    max_packets: u64,
) -> Option<Vec<Addresses>> {
    let input = crate::input::open_path(path).ok()?;
    let mut reader = CaptureReader::new(input, options).ok()?;
    let mut probes = Probes::new(start, Some(len), None);
    let mut read = 0;
    while read < max_packets && !probes.finished() {
        let Some(p) = reader.next_packet().ok()? else {
            break;
        };
        read += 1;
        probes.reach(p.offset);
        let s = if probes.wanted() {
            sample(&p, filter)
        } else {
            None
        };
        probes.feed(p.ts_ns, s);
    }
    probes.at_thirds(len).ok()
}

/// Bisection of a plain file stops when the stretch left is this short: read through from there.
const BISECT_DOWN_TO: u64 = 1 << 20;

/// A capture's sample at `t`, read from a plain file from the record bisection finds.
fn sample_from(
    plan: &SplitPlan,
    t: i64,
    filter: Option<&Filter>,
    options: &SharedOptions,
) -> Result<Sampler> {
    // Records before `lo` are stamped before `t`, as far as the first of each probe says. The
    // search gallops from the start before it bisects: an anchor is most often near a file's
    // start (captures started together), where a few short steps find it.
    let (mut lo, mut hi) = (plan.data_start(), plan.file_len());
    let mut step = Some(BISECT_DOWN_TO);
    while hi - lo > BISECT_DOWN_TO {
        let at = match step {
            Some(s) if s < hi - lo => lo + s,
            _ => lo + (hi - lo) / 2,
        };
        let Some(mut chunk) = plan.open(at, hi)? else {
            break;
        };
        let ts = first_timestamp(&mut chunk);
        plan.hand_back(at, chunk.position());
        match ts {
            Some(ts) if ts < t => {
                lo = at;
                step = step.map(|s| s * 2);
            }
            Some(_) => {
                hi = at;
                step = None;
            }
            None => break,
        }
    }
    let mut sampler = Sampler::new(&[t], 0, options.sample);
    if let Some(mut chunk) = plan.open(lo, plan.file_len())? {
        // Damage in a chunk only ends the sample: the scan reports it.
        let _ = read_into(&mut sampler, &mut chunk, filter, options, 0);
        plan.hand_back(lo, chunk.position());
    }
    Ok(sampler)
}

/// The first timestamp among a chunk's first few packets.
fn first_timestamp(chunk: &mut ChunkReader) -> Option<i64> {
    for _ in 0..64 {
        match chunk.next_packet() {
            Ok(Some(p)) if p.ts_ns.is_some() => return p.ts_ns,
            Ok(Some(_)) => {}
            _ => return None,
        }
    }
    None
}

/// What packets are read from: a capture read from its start, or a plain file's chunk.
trait Packets {
    fn next(&mut self) -> Result<Option<Packet<'_>>>;
}

impl Packets for CaptureReader {
    fn next(&mut self) -> Result<Option<Packet<'_>>> {
        self.next_packet()
    }
}

impl Packets for ChunkReader {
    fn next(&mut self) -> Result<Option<Packet<'_>>> {
        self.next_packet()
    }
}

/// Feed `sampler` from `packets` until its samples are full, they end or `options.max_packets`
/// have been read in all (`read` of them already). Returns how many have been read.
fn read_into(
    sampler: &mut Sampler,
    packets: &mut impl Packets,
    filter: Option<&Filter>,
    options: &SharedOptions,
    mut read: u64,
) -> Result<u64> {
    while !sampler.done() && read < options.max_packets {
        let Some(p) = packets.next()? else {
            break;
        };
        read += 1;
        match p.ts_ns.filter(|&t| options.time_range.contains(t)) {
            Some(t) if sampler.wants(t) => sampler.feed(t, sample(&p, filter)),
            _ => {}
        }
    }
    Ok(read)
}

/// One capture's samples at anchors `from..`: each the first `sample` packets at or after its
/// anchor, whether or not a later anchor comes first (samples of anchors close together
/// overlap).
struct Sampler {
    anchors: Vec<i64>,
    /// Anchors before `started` have begun; those before `lo` are full.
    started: usize,
    lo: usize,
    /// Packets taken at each anchor (sampled or not: filtered-out packets fill a sample too, so
    /// that every capture's sample spans about the same stretch of its traffic).
    taken: Vec<usize>,
    sample: usize,
    /// Each anchor's packets as read (see [`Sampled::new`]), and their addresses.
    sets: Vec<Vec<(u64, Seen)>>,
    addresses: Vec<Addresses>,
}

impl Sampler {
    fn new(anchors: &[i64], from: usize, sample: usize) -> Self {
        Sampler {
            anchors: anchors.to_vec(),
            started: from,
            lo: from,
            taken: vec![0; anchors.len()],
            sample,
            sets: vec![Vec::new(); anchors.len()],
            addresses: anchors.iter().map(|_| Addresses::default()).collect(),
        }
    }

    /// Every anchor from `from` on has its whole sample.
    fn done(&self) -> bool {
        self.lo == self.anchors.len()
    }

    /// A packet at `t` would be sampled (else it is skipped without decoding): a begun
    /// anchor's sample is not full, or `t` reaches the next anchor.
    fn wants(&self, t: i64) -> bool {
        self.lo < self.started
            || self
                .anchors
                .get(self.started)
                .is_some_and(|&next| t >= next)
    }

    fn feed(&mut self, t: i64, s: Option<Sample>) {
        while self
            .anchors
            .get(self.started)
            .is_some_and(|&next| t >= next)
        {
            self.started += 1;
        }
        for a in self.lo..self.started {
            // A packet stamped before a begun anchor (out of order) is not in its sample.
            if self.anchors[a] > t || self.taken[a] >= self.sample {
                continue;
            }
            self.taken[a] += 1;
            if let Some(s) = &s {
                let seen = Seen {
                    at: t,
                    src: s.hosts[0],
                    timed: s.own,
                };
                self.sets[a].push((s.fingerprint, seen));
                self.addresses[a].count(s.hosts);
            }
        }
        while self.lo < self.started && self.taken[self.lo] >= self.sample {
            self.lo += 1;
        }
    }

    /// Each anchor's packets and their addresses.
    fn into_each(self) -> impl Iterator<Item = (Vec<(u64, Seen)>, Addresses)> {
        self.sets.into_iter().zip(self.addresses)
    }

    /// The first anchor's.
    fn into_first(self) -> (Vec<(u64, Seen)>, Addresses) {
        self.into_each().next().unwrap_or_default()
    }
}

/// How often each address is the source or destination of a stretch's sampled packets.
#[derive(Default)]
struct Addresses {
    counts: HashMap<IpAddr, u32>,
    packets: u32,
    sources: HashSet<IpAddr>,
}

impl Addresses {
    fn count(&mut self, hosts: [IpAddr; 2]) {
        self.packets += 1;
        self.sources.insert(hosts[0]);
        *self.counts.entry(hosts[0]).or_insert(0) += 1;
        if hosts[1] != hosts[0] {
            *self.counts.entry(hosts[1]).or_insert(0) += 1;
        }
    }

    /// The addresses in at least 90 % of the packets.
    fn in_nearly_all(&self) -> HashSet<IpAddr> {
        let most = |&(_, &c): &(&IpAddr, &u32)| u64::from(c) * 10 >= u64::from(self.packets) * 9;
        self.counts.iter().filter(most).map(|(&h, _)| h).collect()
    }
}

/// The host a capture was recorded on: the one address in nearly all packets of every stretch;
/// and every source seen.
#[derive(Default)]
struct Hosts {
    common: Option<HashSet<IpAddr>>,
    sources: HashSet<IpAddr>,
}

impl Hosts {
    fn add(&mut self, stretch: Addresses) {
        if stretch.packets == 0 {
            return;
        }
        self.sources.extend(&stretch.sources);
        let these = stretch.in_nearly_all();
        self.common = Some(match self.common.take() {
            None => these,
            Some(c) => c.intersection(&these).copied().collect(),
        });
    }

    fn host(&self) -> Option<IpAddr> {
        let common = self.common.as_ref()?;
        let mut it = common.iter();
        match (it.next(), it.next()) {
            (Some(&h), None) => Some(h),
            _ => None,
        }
    }

    /// The two addresses in nearly all packets of every stretch: a capture of one pair of
    /// hosts' traffic, in order.
    fn two(&self) -> Option<[IpAddr; 2]> {
        let common = self.common.as_ref()?;
        let mut two: Vec<IpAddr> = common.iter().copied().collect();
        two.sort_unstable();
        <[IpAddr; 2]>::try_from(two).ok()
    }
}

/// A sampled packet: its fingerprint and its two addresses.
#[derive(Clone, Copy)]
struct Sample {
    fingerprint: u64,
    hosts: [IpAddr; 2],
    /// The fingerprint tells this packet from its neighbours, not only its kind: a TCP segment
    /// that carries data (its sequence number moves on) or an IPv4 packet with a nonzero
    /// identification. Pure ACKs of IPv6, UDP datagrams of IPv6 or with identification 0 look
    /// like the others of their flow, so the one matched in another capture may be another.
    own: bool,
}

/// The packet's sample, `None` when it is not IP, is cut before the bytes fingerprinted, or
/// its capture's filter leaves it out.
fn sample(p: &Packet, filter: Option<&Filter>) -> Option<Sample> {
    if let Some(f) = filter {
        let h = wire::decode_frame(p.linktype, p.data, p.wire_len);
        if !f.matches(&h, p.wire_len) {
            return None;
        }
    }
    fingerprint(wire::ip_packet(p.linktype, p.data)?)
}

/// See the module's documentation for what is hashed and why.
fn fingerprint(ip: &[u8]) -> Option<Sample> {
    let mut h = DefaultHasher::new();
    // `ip_len`: the IP payload's length as the header gives it (past the fixed header for IPv6).
    let (proto, transport, hosts, identified, ip_len) = match ip.first()? >> 4 {
        4 => {
            let header = ip.get(..20)?;
            let ihl = usize::from(header[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
            h.write(&header[2..8]); // total length, identification, flags and fragment offset
            h.write_u8(header[9]);
            h.write(&header[12..20]);
            let src = Ipv4Addr::from(<[u8; 4]>::try_from(&header[12..16]).ok()?);
            let dst = Ipv4Addr::from(<[u8; 4]>::try_from(&header[16..20]).ok()?);
            // A later fragment's bytes after the header are payload: hashed alike.
            (
                header[9],
                ip.get(ihl.max(20)..)?,
                [IpAddr::V4(src), IpAddr::V4(dst)],
                header[4..6] != [0, 0],
                total.saturating_sub(ihl.max(20)),
            )
        }
        6 => {
            let header = ip.get(..40)?;
            h.write_u8(header[1] & 0x0f); // the flow label's top bits, not the traffic class
            h.write(&header[2..7]); // the rest of the flow label, payload length, next header
            h.write(&header[8..40]);
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&header[8..24]).ok()?);
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&header[24..40]).ok()?);
            let payload = usize::from(u16::from_be_bytes([header[4], header[5]]));
            (
                header[6],
                &ip[40..],
                [IpAddr::V6(src), IpAddr::V6(dst)],
                false,
                payload,
            )
        }
        _ => return None,
    };
    // Fixed stretches, present or the packet is not sampled: a fingerprint must not depend on
    // how much of the packet either capture kept.
    match proto {
        wire::IP_PROTO_TCP => h.write(transport.get(..8)?), // ports, sequence number
        wire::IP_PROTO_UDP => h.write(transport.get(..6)?), // ports, length
        // ICMP and ICMPv6: type and code, then identifier and sequence past the checksum.
        1 | 58 => {
            h.write(transport.get(..2)?);
            h.write(transport.get(4..8)?);
        }
        _ => h.write(transport.get(..4)?),
    }
    // A TCP segment's data: the IP payload past its header (data offset, when kept).
    let data = proto == wire::IP_PROTO_TCP
        && transport
            .get(12)
            .is_some_and(|&off| ip_len > usize::from(off >> 4) * 4);
    Some(Sample {
        fingerprint: h.finish(),
        hosts,
        own: identified || data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprints pairs of captures hold in common, counted by one sort of them all, are
    /// those a merge of each pair's two samples finds (the comparison they replace), for
    /// captures that share nothing, some, or all (the same file given twice), at 1 to 3 anchors.
    #[test]
    fn fingerprints_in_common_are_each_pairs_own_comparison() {
        let mut rng = crate::test_rng::Rng(0x5A4E_D000);
        let seen = Seen {
            at: 0,
            src: IpAddr::V4(Ipv4Addr::LOCALHOST),
            timed: false,
        };
        for case in 0..300 {
            let n = 1 + rng.below(12) as usize;
            let anchors = 1 + rng.below(3) as usize;
            // A small pool of fingerprints makes sharing likely; now and then one capture is
            // another's copy.
            let pool = 1 + rng.below(60);
            let mut samples: Vec<Vec<Sampled>> = Vec::new();
            for k in 0..n {
                if k > 0 && rng.below(5) == 0 {
                    let copy = samples[rng.below(k as u64) as usize].clone();
                    samples.push(copy);
                    continue;
                }
                samples.push(
                    (0..anchors)
                        .map(|_| {
                            let len = rng.below(40);
                            Sampled::new((0..len).map(|_| (rng.below(pool), seen)).collect())
                        })
                        .collect(),
                );
            }
            let dense = case % 2 == 0;
            let (got, lookups) = counted(&samples, anchors, dense);
            let mut sharing = 0;
            for a in 0..n {
                for b in a + 1..n {
                    let counts: Vec<usize> = (0..anchors)
                        .map(|at| samples[a][at].common(&samples[b][at]).count())
                        .collect();
                    sharing += counts.iter().filter(|&&c| c > 0).count();
                    // The most in common, at the first anchor with that many.
                    let want = (0..anchors)
                        .map(|at| (counts[at], at))
                        .max_by_key(|&(c, at)| (c, std::cmp::Reverse(at)))
                        .filter(|&(c, _)| c > 0);
                    assert_eq!(got.get(&(a, b)).copied(), want, "case {case}, pair {a} {b}");
                }
            }
            assert!(got.keys().all(|&(a, b)| a < b && b < n), "case {case}");
            // One look-up per pair and anchor where it shares anything, not one per fingerprint
            // it shares.
            assert_eq!(lookups, sharing, "case {case}");
        }
    }

    /// Packets at `offsets`, each sampled with the source address `k` (its index), through
    /// [`Probes`]: the packets (their indices) of each stretch chosen for `len`, or `None` when
    /// none was read at the thirds of `len`.
    fn probed(
        offsets: &[u64],
        announced: Option<Announced>,
        len: u64,
    ) -> Option<Vec<HashSet<IpAddr>>> {
        let mut probes = Probes::new(offsets[0], None, announced);
        for (k, &offset) in offsets.iter().enumerate() {
            probes.reach(offset);
            let host = IpAddr::V4(Ipv4Addr::from(k as u32));
            let s = probes.wanted().then_some(Sample {
                fingerprint: k as u64,
                hosts: [host, host],
                own: true,
            });
            probes.feed(Some(k as i64), s);
        }
        let chosen = probes.at_thirds(len).ok()?;
        Some(chosen.into_iter().map(|a| a.sources).collect())
    }

    /// The packets a plain file's stretch at each third of `len` holds: the first
    /// [`PROBE`]`.sample` from the first packet at or after it.
    fn at_thirds(offsets: &[u64], len: u64) -> Vec<HashSet<IpAddr>> {
        thirds(offsets[0], len)
            .into_iter()
            .map(|at| {
                let first = offsets.partition_point(|&o| o < at);
                (first..(first + PROBE.sample).min(offsets.len()))
                    .map(|k| IpAddr::V4(Ipv4Addr::from(k as u32)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_gzip_stream_past_4_gib_is_read_at_the_thirds_of_the_length_its_isize_allows() {
        // Records 1 MiB and 13 bytes apart up to 4 GiB + 100 MiB: ISIZE says 100 MiB (mod
        // 2^32), which the stream passes; its thirds are those of the second length allowed.
        let len = (1u64 << 32) + (100 << 20) + 5;
        let offsets: Vec<u64> = (0..)
            .map(|k| 24 + k * ((1 << 20) + 13))
            .take_while(|&o| o < len)
            .collect();
        let gz = Announced::Mod32 {
            low: len as u32,
            most: u64::MAX,
        };
        let found = probed(&offsets, Some(gz), len).expect("read at the thirds");
        let expected = at_thirds(&offsets, len);
        assert_eq!(expected[0].len(), PROBE.sample);
        assert_eq!(found, expected);
        // Below 4 GiB, the first length allowed.
        let short = &offsets[..offsets.len() / 3];
        let short_len = short[short.len() - 1] + 100;
        let gz = Announced::Mod32 {
            low: short_len as u32,
            most: u64::MAX,
        };
        assert_eq!(
            probed(short, Some(gz), short_len),
            Some(at_thirds(short, short_len))
        );
        // A length the stream does not end at: not read at its thirds (the caller falls back).
        assert_eq!(probed(&offsets, Some(gz), len), None);
        assert_eq!(probed(&offsets, Some(gz), short_len), None, "read past it");
        assert_eq!(probed(&offsets, None, len), None);
        let bounded = Announced::Mod32 {
            low: len as u32,
            most: 1 << 32,
        };
        assert_eq!(
            probed(&offsets, Some(bounded), len),
            None,
            "past deflate's most"
        );
        assert_eq!(
            probed(&offsets, Some(Announced::Exactly(len)), len),
            Some(at_thirds(&offsets, len))
        );
    }
}
