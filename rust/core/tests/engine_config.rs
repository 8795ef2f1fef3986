//! Configuration checks, group keys and labels, empty and degenerate traces, the group limit.

use burstcore::engine::{Arrival, By, Closure, GroupKey, LatePolicy, ScanConfig, Scanner};
use burstcore::wire::Headers;
use burstcore::{ErrorKind, Limit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn base() -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![1_000_000_000])
        .with_bins_ns(vec![1000])
        .with_by(vec![By::All])
        .with_reorder_horizon_ns(0)
        .with_late(LatePolicy::Error)
        .with_max_groups(10)
        .with_time_range(burstcore::TimeRange::ALL)
        .with_filter(None)
        .with_bin_origin(Default::default())
        .with_file_filters(Vec::new())
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

fn invalid(config: ScanConfig, says: &str) {
    match Scanner::new(config) {
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
            assert!(e.reason.contains(says), "{e:?} should mention {says:?}");
        }
        Ok(_) => panic!("config accepted; expected an error mentioning {says:?}"),
    }
}

#[test]
fn invalid_parameters_are_rejected_with_what_was_wrong() {
    invalid(
        base().with_time_range(burstcore::TimeRange {
            start_ns: Some(10),
            end_ns: Some(10),
        }),
        "the time range's start (10 ns) must be before its end (10 ns)",
    );
    invalid(
        base().with_windows_ns(vec![5, 0]),
        "window length must be > 0 ns, got 0",
    );
    invalid(base().with_windows_ns(vec![-3]), "got -3 ns");
    invalid(base().with_rates_bps(vec![0]), "server rate must be > 0");
    invalid(base().with_bins_ns(vec![0]), "bin width must be > 0 ns");
    invalid(base().with_bins_ns(vec![i64::MIN]), "bin width");
    invalid(base().with_reorder_horizon_ns(-1), "reorder horizon");
    invalid(base().with_max_groups(0), "max_groups");
    assert!(Scanner::new(ScanConfig::default()).is_ok());
}

fn arrival(ts: i64, size: u64, headers: Headers) -> Arrival {
    Arrival::new(ts, size)
        .with_interface(0)
        .with_headers(headers)
}

#[test]
fn empty_trace_gives_empty_rows() {
    let config = base().with_by(By::EVERY.to_vec());
    let out = Scanner::new(config)
        .expect("valid")
        .finish()
        .expect("finishes");
    assert!(out.envelope.is_empty() && out.backlog.is_empty() && out.series.is_empty());
    assert!(out.groups.is_empty());
    assert_eq!(out.reorder, Default::default());
}

#[test]
fn no_grouping_means_aggregate_and_duplicates_collapse() {
    let config = base()
        .with_by(vec![])
        .with_windows_ns(vec![1000, 10, 1000])
        .with_rates_bps(vec![5, 5])
        .with_bins_ns(vec![7, 7]);
    let mut s = Scanner::new(config).expect("valid");
    s.push(&arrival(3, 10, Headers::default())).expect("push");
    let out = s.finish().expect("finish");
    assert_eq!(out.groups.len(), 1);
    assert_eq!(
        (out.groups[0].by, out.groups[0].group),
        (By::All, GroupKey::All)
    );
    let windows: Vec<i64> = out.envelope.iter().map(|e| e.window_ns).collect();
    assert_eq!(windows, vec![10, 1000]);
    assert_eq!(out.backlog.len(), 1);
    assert_eq!(out.series.len(), 1);
}

#[test]
fn single_packet() {
    let config = base().with_by(vec![By::All, By::Src]);
    let mut s = Scanner::new(config).expect("valid");
    s.push(&arrival(-1, 1500, Headers::default()))
        .expect("push");
    let out = s.finish().expect("finish");
    // One group per grouping: the aggregate, and (none) for a packet without an IP header.
    let groups: Vec<(By, GroupKey)> = out.groups.iter().map(|g| (g.by, g.group)).collect();
    assert_eq!(
        groups,
        vec![(By::All, GroupKey::All), (By::Src, GroupKey::None)]
    );
    for e in &out.envelope {
        assert_eq!(
            (e.bytes, e.packets_in_window, e.start_ns, e.max_packets),
            (1500, 1, -1, 1)
        );
    }
    for b in &out.backlog {
        assert_eq!((b.bmax_bytes, b.peak_ns), (1500.0, -1));
        // 1500 B at 1 Gbit/s: 12 µs.
        assert_eq!((b.longest_busy_ns, b.longest_busy_start_ns), (12_000, -1));
    }
    for r in &out.series {
        // Floor, not truncation: -1 ns is in the bin [-1000, 0).
        assert_eq!((r.start_ns, r.bytes, r.packets), (-1000, 1500, 1));
    }
}

#[test]
fn too_many_groups_is_a_limit_error() {
    let config = base().with_by(vec![By::Src]).with_max_groups(3);
    let mut s = Scanner::new(config).expect("valid");
    let mut result = Ok(());
    for i in 0..4u8 {
        let h = Headers::default().with_src(Some(v4(10, 0, 0, i)));
        result = s.push(&arrival(i64::from(i), 1, h));
        if result.is_err() {
            break;
        }
    }
    let err = result.expect_err("the fourth source exceeds max_groups = 3");
    // A limit on the size of the result: the capture is fine.
    assert_eq!(
        (err.kind, err.limit),
        (ErrorKind::LimitExceeded, Some(Limit::Result))
    );
    assert!(
        err.reason
            .contains("more than 3 groups when grouping by src"),
        "{err}"
    );
}

#[test]
fn group_keys_follow_the_headers() {
    let (s, d) = (v4(10, 0, 0, 1), v4(10, 0, 0, 2));
    let full = Headers::default()
        .with_src(Some(s))
        .with_dst(Some(d))
        .with_ip_proto(Some(6))
        .with_sport(Some(5000))
        .with_dport(Some(6000))
        .with_vlan(Some(100))
        .with_roce_qp(Some(17));
    let a = Arrival::new(0, 1).with_interface(3).with_headers(full);
    assert_eq!(By::All.key(&a), GroupKey::All);
    assert_eq!(By::Src.key(&a), GroupKey::Host(s));
    assert_eq!(By::Dst.key(&a), GroupKey::Host(d));
    assert_eq!(By::Pair.key(&a), GroupKey::Pair(s, d));
    let f5 = GroupKey::Flow5 {
        proto: 6,
        src: s,
        dst: d,
        sport: 5000,
        dport: 6000,
    };
    assert_eq!(By::Flow5.key(&a), f5);
    let f4 = GroupKey::Flow4 {
        src: s,
        sport: 5000,
        dst: d,
        dport: 6000,
    };
    assert_eq!(By::Flow4.key(&a), f4);
    assert_eq!(By::Interface.key(&a), GroupKey::Interface(3));
    assert_eq!(By::Vlan.key(&a), GroupKey::Vlan(100));
    assert_eq!(By::Qp.key(&a), GroupKey::Qp { dst: d, qp: 17 });

    let bare = a.with_headers(Headers::default());
    for by in By::EVERY {
        let want = match by {
            By::All => GroupKey::All,
            By::Interface => GroupKey::Interface(3),
            _ => GroupKey::None,
        };
        assert_eq!(by.key(&bare), want, "{by:?}");
    }
    // ICMP: no ports, still a flow (ports 0).
    let icmp = a.with_headers(
        Headers::default()
            .with_src(Some(s))
            .with_dst(Some(d))
            .with_ip_proto(Some(1)),
    );
    assert_eq!(
        By::Flow5.key(&icmp),
        GroupKey::Flow5 {
            proto: 1,
            src: s,
            dst: d,
            sport: 0,
            dport: 0
        }
    );
}

#[test]
fn labels_and_names() {
    let (s, d) = (v4(10, 0, 0, 1), v4(10, 0, 0, 2));
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    let cases = [
        (GroupKey::All, "all"),
        (GroupKey::None, "(none)"),
        (GroupKey::Host(s), "10.0.0.1"),
        (GroupKey::Pair(s, d), "10.0.0.1>10.0.0.2"),
        (
            GroupKey::Flow5 {
                proto: 6,
                src: s,
                dst: d,
                sport: 5000,
                dport: 6000,
            },
            "tcp 10.0.0.1:5000>10.0.0.2:6000",
        ),
        (
            GroupKey::Flow5 {
                proto: 17,
                src: v6,
                dst: v6,
                sport: 1,
                dport: 2,
            },
            "udp [::1]:1>[::1]:2",
        ),
        (
            GroupKey::Flow4 {
                src: s,
                sport: 5000,
                dst: d,
                dport: 6000,
            },
            "10.0.0.1:5000>10.0.0.2:6000",
        ),
        (GroupKey::Interface(0), "if0"),
        (GroupKey::Vlan(100), "vlan100"),
        (GroupKey::Qp { dst: d, qp: 17 }, "10.0.0.2 qp 17"),
    ];
    for (key, label) in cases {
        assert_eq!(key.label(), label);
    }
    let names: Vec<&str> = By::EVERY.iter().map(|b| b.name()).collect();
    assert_eq!(
        names,
        [
            "all",
            "src",
            "dst",
            "pair",
            "flow",
            "flow4",
            "interface",
            "vlan",
            "qp"
        ]
    );
    for by in By::EVERY {
        assert_eq!(By::parse(by.name()), Ok(by));
        assert_eq!(By::parse(&by.name().to_uppercase()), Ok(by));
    }
    assert_eq!(By::parse("flow5"), Ok(By::Flow5));
    let err = By::parse("mac").expect_err("unknown grouping");
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.reason.contains("\"mac\"") && err.reason.contains("flow4"),
        "{err}"
    );
}

#[test]
fn rows_are_sorted_by_grouping_then_group() {
    let config = base().with_by(vec![By::Vlan, By::Src, By::All]);
    let mut s = Scanner::new(config).expect("valid");
    for (i, (src, vlan)) in [
        (3u8, Some(200u16)),
        (1, None),
        (2, Some(100)),
        (1, Some(200)),
    ]
    .iter()
    .enumerate()
    {
        let h = Headers::default()
            .with_src(Some(v4(10, 0, 0, *src)))
            .with_vlan(*vlan);
        s.push(&arrival(i as i64, 1, h)).expect("push");
    }
    let out = s.finish().expect("finish");
    let order: Vec<String> = out
        .groups
        .iter()
        .map(|g| format!("{} {}", g.by.name(), g.group.label()))
        .collect();
    assert_eq!(
        order,
        [
            "all all",
            "src 10.0.0.1",
            "src 10.0.0.2",
            "src 10.0.0.3",
            "vlan (none)",
            "vlan vlan100",
            "vlan vlan200"
        ]
    );
    let env: Vec<(By, GroupKey)> = out.envelope.iter().map(|e| (e.by, e.group)).collect();
    let grp: Vec<(By, GroupKey)> = out.groups.iter().map(|g| (g.by, g.group)).collect();
    assert_eq!(env, grp);
}

#[test]
fn bins_near_the_ends_of_time_do_not_overflow() {
    let config = base()
        .with_windows_ns(vec![i64::MAX])
        .with_bins_ns(vec![3, i64::MAX])
        .with_rates_bps(vec![1, u64::MAX]);
    let mut s = Scanner::new(config).expect("valid");
    for ts in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX - 1, i64::MAX] {
        s.push(&arrival(ts, u64::MAX, Headers::default()))
            .expect("push");
    }
    let out = s.finish().expect("finish");
    let starts: Vec<(i64, i64, u64)> = out
        .series
        .iter()
        .map(|r| (r.bin_ns, r.start_ns, r.packets))
        .collect();
    // Δ = 3: ⌊MIN/3⌋·3 lies below i64::MIN, reported as i64::MIN (documented clamp).
    assert_eq!(
        starts,
        [
            (3, i64::MIN, 2),
            (3, -3, 1),
            (3, 0, 1),
            (3, i64::MAX - 1, 2),
            (i64::MAX, i64::MIN, 1),
            (i64::MAX, -i64::MAX, 2),
            (i64::MAX, 0, 2),
            (i64::MAX, i64::MAX, 1),
        ]
    );
    // Saturated byte counts, not wrapped ones.
    assert_eq!(out.groups[0].bytes, u64::MAX);
    assert_eq!(out.envelope[0].bytes, u64::MAX);
}
