//! Shared helpers of the integration tests: a tiny PRNG (every randomised test uses it), random
//! traces, and running the scanner.
#![allow(dead_code)]

use burstcore::engine::{
    Arrival, BinOrigin, By, Closure, ExactBacklog, LatePolicy, ScanConfig, ScanOutput, Scanner,
};
use burstcore::wire::Headers;
use std::net::{IpAddr, Ipv4Addr};

/// SplitMix64: enough randomness for traces, and reproducible from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform enough in 0..n (0 for n = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (i128::from(hi) - i128::from(lo) + 1) as u128;
        let r = (u128::from(self.next()) << 64 | u128::from(self.next())) % span;
        (i128::from(lo) + r as i128) as i64
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    pub fn bytes_below(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n)
    }
}

/// One generated packet with the fields the tests group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pkt {
    pub ts: i64,
    pub size: u64,
    pub src: Option<u8>,
    pub dst: Option<u8>,
    pub iface: u32,
    pub vlan: Option<u16>,
}

pub fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

impl Pkt {
    /// A packet of `size` bytes on interface 0, without addresses or VLAN.
    pub fn bare(ts: i64, size: u64) -> Pkt {
        Pkt {
            ts,
            size,
            src: None,
            dst: None,
            iface: 0,
            vlan: None,
        }
    }

    pub fn arrival(&self) -> Arrival {
        Arrival::new(self.ts, self.size)
            .with_interface(self.iface)
            .with_headers(
                Headers::default()
                    .with_src(self.src.map(ip))
                    .with_dst(self.dst.map(ip))
                    .with_vlan(self.vlan),
            )
    }
}

fn size(rng: &mut Rng) -> u64 {
    match rng.below(100) {
        0..=14 => 0,
        15..=16 => rng.next() >> rng.below(64),
        17 => u64::MAX,
        _ => 1 + rng.below(1500),
    }
}

fn gap(rng: &mut Rng, style: u64) -> i64 {
    match (style, rng.below(100)) {
        // Ties and µs-like steps, the cases where conventions differ.
        (_, 0..=24) => 0,
        (0, _) => 1 + rng.below(3) as i64,
        (1, 25..=89) => 1 + rng.below(1000) as i64,
        (1, _) => 1_000_000 + rng.below(1_000_000_000) as i64,
        (2, _) => 1000 * rng.below(5) as i64,
        _ => rng.below(100_000) as i64,
    }
}

/// A sorted random trace: ties, bursts, zero sizes, timestamps anywhere in i64 (including both
/// ends), from empty to `max_len` packets.
pub fn trace(rng: &mut Rng, max_len: u64) -> Vec<Pkt> {
    let n = match rng.below(20) {
        0 => 0,
        1 => 1,
        _ => rng.below(max_len + 1),
    };
    let style = rng.below(4);
    let mut ts: Vec<i64> = Vec::new();
    match rng.below(8) {
        // Spread over the whole i64 range: every difference needs the full width.
        0 => {
            for _ in 0..n {
                ts.push(rng.range_i64(i64::MIN, i64::MAX));
            }
            if n >= 2 {
                ts[0] = i64::MIN;
                ts[1] = i64::MAX;
            }
            ts.sort_unstable();
        }
        mode => {
            let mut t = match mode {
                1 => i64::MIN + rng.below(1000) as i64,
                2 => -(rng.below(10_000_000_000) as i64),
                3 => 1_700_000_000_000_000_000 + rng.below(1 << 40) as i64,
                _ => rng.below(1_000_000) as i64,
            };
            for _ in 0..n {
                ts.push(t);
                t = t.saturating_add(gap(rng, style));
            }
            if mode == 4 {
                // Shift the whole trace so it ends at i64::MAX.
                let shift = i64::MAX - ts.last().copied().unwrap_or(0);
                ts.iter_mut().for_each(|x| *x += shift);
            }
        }
    }
    let groups = 1 + rng.below(4) as u8;
    ts.into_iter()
        .map(|ts| Pkt {
            ts,
            size: size(rng),
            src: (!rng.chance(10)).then(|| rng.below(u64::from(groups)) as u8),
            dst: (!rng.chance(10)).then(|| rng.below(2) as u8),
            iface: rng.below(2) as u32,
            vlan: (!rng.chance(30)).then(|| 100 + rng.below(2) as u16),
        })
        .collect()
}

/// Arrival order for a sorted trace: each packet moved later by up to `horizon` ns, so no packet
/// is more than `horizon` ns older than the latest one before it.
pub fn shuffle_within(rng: &mut Rng, sorted: &[Pkt], horizon: i64) -> Vec<Pkt> {
    let mut keyed: Vec<(i128, Pkt)> = sorted
        .iter()
        .map(|p| {
            let jitter = if horizon == 0 {
                0
            } else {
                rng.range_i64(0, horizon)
            };
            (i128::from(p.ts) + i128::from(jitter), *p)
        })
        .collect();
    keyed.sort_by_key(|k| k.0);
    keyed.into_iter().map(|k| k.1).collect()
}

/// A random choice of the metrics and conventions the thread-split tests compare: windows,
/// rates and bins from short lists (1 ns to 2⁴⁰ ns, 1 bit/s to 100 Gbit/s), either closure, a
/// horizon of 0, 5 or 1,000 ns, late packets dropped or refused, each kind of bin origin.
pub fn random_config(rng: &mut Rng, by: Vec<By>) -> ScanConfig {
    let windows = [1, 3, 100, 1_000, 50_000, 100_000_000, 1 << 40];
    let rates = [1, 1_000, 1_000_000_000, 100_000_000_000];
    let bins = [1, 1_000, 1_000_000];
    ScanConfig::default()
        .with_windows_ns(windows.iter().copied().filter(|_| rng.chance(60)).collect())
        .with_rates_bps(rates.iter().copied().filter(|_| rng.chance(60)).collect())
        .with_bins_ns(bins.iter().copied().filter(|_| rng.chance(50)).collect())
        .with_closure(if rng.chance(50) {
            Closure::HalfOpen
        } else {
            Closure::Closed
        })
        .with_by(by)
        .with_reorder_horizon_ns([0, 5, 1_000][rng.below(3) as usize])
        .with_late(if rng.chance(50) {
            LatePolicy::Drop
        } else {
            LatePolicy::Error
        })
        .with_bin_origin(match rng.below(3) {
            0 => BinOrigin::FirstPacket,
            1 => BinOrigin::At(rng.below(u64::MAX) as i64),
            _ => BinOrigin::At(0),
        })
}

/// The single-threaded scan of `arrivals`, the reference of the thread-split tests.
pub fn single(config: ScanConfig, arrivals: &[Pkt]) -> burstcore::error::Result<ScanOutput> {
    let mut s = Scanner::new(config)?;
    for p in arrivals {
        s.push(&p.arrival())?;
    }
    s.finish()
}

/// A split scan's outcome `got` is the single-threaded `want`: every table and the reorder
/// statistics, or the same error (the same kind, and the same grouping or packet named).
pub fn assert_same_outcome(
    want: burstcore::error::Result<ScanOutput>,
    got: burstcore::error::Result<ScanOutput>,
    split: &str,
    case: usize,
) {
    match (want, got) {
        (Ok(w), Ok(g)) => {
            assert_eq!(w.envelope, g.envelope, "case {case}");
            assert_eq!(w.backlog, g.backlog, "case {case}");
            assert_eq!(w.series, g.series, "case {case}");
            assert_eq!(w.groups, g.groups, "case {case}");
            assert_eq!(w.reorder, g.reorder, "case {case}");
        }
        (Err(w), Err(g)) => assert_eq!(w, g, "case {case}"),
        (w, g) => panic!("case {case}: single {w:?}, {split} {g:?}"),
    }
}

pub fn run(
    config: ScanConfig,
    arrivals: &[Pkt],
) -> burstcore::error::Result<(ScanOutput, Vec<ExactBacklog>)> {
    let mut scanner = Scanner::new(config)?;
    for p in arrivals {
        scanner.push(&p.arrival())?;
    }
    scanner.finish_exact()
}

/// (ts, size) pairs in timestamp order, as the references want them.
pub fn points(packets: &[Pkt]) -> Vec<(i64, u64)> {
    let mut pts: Vec<(i64, u64)> = packets.iter().map(|p| (p.ts, p.size)).collect();
    pts.sort_by_key(|p| p.0);
    pts
}
