//! Throughput of the scanner (ignored by default; run with
//! `cargo test --release -p burstcore --test engine_perf -- --ignored --nocapture`).
//! It checks one thing besides speed: the packet count, so it asserts something real.

use burstcore::engine::{Arrival, By, Closure, LatePolicy, ScanConfig, Scanner};
use burstcore::wire::Headers;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

fn full(by: Vec<By>) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 10_000, 100_000, 1_000_000, 10_000_000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![10_000_000_000, 25_000_000_000, 100_000_000_000])
        .with_bins_ns(vec![1_000_000, 100_000_000])
        .with_by(by)
        .with_reorder_horizon_ns(1_000_000)
        .with_late(LatePolicy::Error)
        .with_max_groups(1 << 20)
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_bin_origin(Default::default())
        .with_file_filters(Vec::new())
}

fn scan(config: ScanConfig, n: u64) -> f64 {
    let mut s = Scanner::new(config).expect("valid");
    let mut x: u64 = 1;
    let mut ts: i64 = 1_700_000_000_000_000_000;
    let start = Instant::now();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ts += (x % 200) as i64;
        let headers = Headers::default()
            .with_src(Some(IpAddr::V4(Ipv4Addr::new(
                10,
                0,
                0,
                (x >> 20) as u8 % 16,
            ))))
            .with_dst(Some(IpAddr::V4(Ipv4Addr::new(
                10,
                0,
                1,
                (x >> 28) as u8 % 16,
            ))));
        let a = Arrival::new(ts, 64 + (x >> 40) % 1450)
            .with_interface(0)
            .with_headers(headers);
        s.push(&a).expect("in order");
    }
    let out = s.finish().expect("finish");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(
        out.groups
            .iter()
            .filter(|g| Some(g.by) == out.groups.first().map(|f| f.by))
            .map(|g| g.packets)
            .sum::<u64>(),
        n
    );
    n as f64 / secs / 1e6
}

#[test]
#[ignore]
fn throughput() {
    let n = 10_000_000;
    let only = |w: bool, r: bool, b: bool, h: i64| {
        full(vec![By::All])
            .with_windows_ns(if w { full(vec![]).windows_ns } else { vec![] })
            .with_rates_bps(if r { full(vec![]).rates_bps } else { vec![] })
            .with_bins_ns(if b { full(vec![]).bins_ns } else { vec![] })
            .with_reorder_horizon_ns(h)
    };
    println!(
        "nothing, no horizon: {:.1} Mpkt/s",
        scan(only(false, false, false, 0), n)
    );
    println!(
        "nothing, 1 ms horizon: {:.1} Mpkt/s",
        scan(only(false, false, false, 1_000_000), n)
    );
    println!(
        "5 windows only: {:.1} Mpkt/s",
        scan(only(true, false, false, 0), n)
    );
    println!(
        "3 rates only: {:.1} Mpkt/s",
        scan(only(false, true, false, 0), n)
    );
    println!(
        "2 bins only: {:.1} Mpkt/s",
        scan(only(false, false, true, 0), n)
    );
    println!("aggregate: {:.1} Mpkt/s", scan(full(vec![By::All]), n));
    println!("src: {:.1} Mpkt/s", scan(full(vec![By::Src]), n));
    println!(
        "aggregate + src + pair: {:.1} Mpkt/s",
        scan(full(vec![By::All, By::Src, By::Pair]), n)
    );
}
