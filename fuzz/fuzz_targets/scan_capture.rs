//! The scanner (`pipeline::scan`) on fuzzed captures, with groupings, windows, rates, bins, sizes
//! and reorder settings derived from a hash of the input (so the seeds stay valid captures).
//!
//! Checks: no panic; when the scan succeeds every packet the reader framed is either counted or
//! skipped with a reason, the counts match an independent read of the same bytes, and every
//! grouping covers exactly the counted packets and bytes.
#![no_main]

use burstcore::engine::{By, Closure, LatePolicy, ScanConfig};
use burstcore::pipeline;
use burstcore::ErrorKind;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::{pick, BINS, ORIGINS, RATES, SIZES, WINDOWS};

/// Header filters a scan sometimes reads through (the packets' own addresses are too random for
/// `host`; protocols, ports, lengths and VLANs split real and fuzzed captures alike).
const FILTERS: [&str; 6] = [
    "tcp",
    "not udp",
    "ip6 or arp",
    "portrange 0-1024 or vlan",
    "less 100 and not (icmp or proto 0)",
    "net 10.0.0.0/8 or net fe80::/10",
];

fuzz_target!(|data: &[u8]| {
    if data.len() > 256 << 10 {
        return;
    }
    let h = common::fnv(data);
    common::choose_lanes(h, 0);
    // Scans are never strict here, so truncation is a warning and accounting can be checked.
    let mut opts = common::options(h);
    opts.strict = false;
    let mut by = match (h >> 4) % 4 {
        0 => vec![By::All],
        1 => By::EVERY.to_vec(),
        _ => pick(&By::EVERY, h >> 8),
    };
    if by.is_empty() {
        by.push(By::All);
    }
    let reference = common::read_all(data.to_vec(), opts);
    // Sometimes a time range between two of the packets' own times, to walk its skips.
    let stamps: Vec<i64> = reference.packets.iter().filter_map(|p| p.ts_ns).collect();
    let time_range = match (h >> 42 & 1, stamps.len()) {
        (1, n) if n > 0 => {
            let (a, b) = (
                stamps[(h >> 43) as usize % n],
                stamps[(h >> 50) as usize % n],
            );
            burstcore::TimeRange {
                start_ns: Some(a.min(b)),
                end_ns: Some(a.max(b).saturating_add(1)),
            }
        }
        _ => burstcore::TimeRange::ALL,
    };
    let filter = (h >> 56 & 1 == 1).then(|| {
        burstcore::Filter::parse(FILTERS[(h >> 57) as usize % FILTERS.len()])
            .expect("a valid filter")
    });
    let config = ScanConfig::default()
        .with_windows_ns(pick(&WINDOWS, h >> 17))
        .with_closure(if h >> 23 & 1 == 0 {
            Closure::HalfOpen
        } else {
            Closure::Closed
        })
        .with_rates_bps(pick(&RATES, h >> 24))
        .with_bins_ns(pick(&BINS, h >> 29))
        .with_bin_origin(ORIGINS[(h >> 62) as usize])
        .with_by(by.clone())
        .with_reorder_horizon_ns([0, 1_000, 10_000_000, i64::MAX][(h >> 34) as usize % 4])
        .with_late(if h >> 36 & 1 == 0 {
            LatePolicy::Drop
        } else {
            LatePolicy::Error
        })
        .with_max_groups(if h >> 37 & 3 == 0 { 2 } else { 1 << 20 })
        .with_time_range(time_range)
        // The one capture's own filter and the filter for all must read the same.
        .with_filter(filter.clone().filter(|_| h >> 61 & 1 == 0))
        .with_file_filters(if h >> 61 & 1 == 0 {
            Vec::new()
        } else {
            vec![filter.clone()]
        });
    let size = SIZES[(h >> 40) as usize % SIZES.len()];
    let late = config.late;

    let Ok(reader) = common::open(data.to_vec(), opts) else {
        return;
    };
    let mut readers = vec![reader];
    let result = pipeline::scan(&mut readers, config, size, &mut |_| Ok(()));
    let (out, acc) = match result {
        Ok(v) => v,
        Err(e) => {
            assert!(!e.reason.is_empty());
            if e.kind == ErrorKind::OutOfOrder {
                assert_eq!(late, LatePolicy::Error);
            }
            return;
        }
    };
    // The scan got through, so the reader did too.
    assert!(
        reference.error.is_none(),
        "scan succeeded where a plain read failed"
    );
    let n = reference.packets.len() as u64;
    assert_eq!(
        acc.packets_read, n,
        "scan framed a different number of packets"
    );
    assert_eq!(
        acc.counted
            + acc.skipped_no_timestamp
            + acc.skipped_timestamp_out_of_range
            + acc.skipped_outside_range
            + acc.skipped_filtered
            + acc.skipped_no_size
            + acc.skipped_late,
        n,
        "accounting does not add up: {acc:?}"
    );
    let no_ts = reference
        .packets
        .iter()
        .filter(|p| p.ts_ns.is_none())
        .count() as u64;
    assert_eq!(
        acc.skipped_no_timestamp + acc.skipped_timestamp_out_of_range,
        no_ts
    );
    let outside = stamps.iter().filter(|t| !time_range.contains(**t)).count() as u64;
    assert_eq!(acc.skipped_outside_range, outside);
    // The filter sees the packets in the range, with their headers decoded as the reader gave them.
    let failing = filter.as_ref().map_or(0, |f| {
        reference
            .packets
            .iter()
            .filter(|p| p.ts_ns.is_some_and(|t| time_range.contains(t)))
            .filter(|p| {
                !f.matches(
                    &burstcore::wire::decode_frame(p.linktype, &p.data, p.wire_len),
                    p.wire_len,
                )
            })
            .count() as u64
    });
    assert_eq!(acc.skipped_filtered, failing);
    if late == LatePolicy::Error {
        assert_eq!(acc.skipped_late, 0);
    }
    for b in &by {
        let packets: u64 = out
            .groups
            .iter()
            .filter(|g| g.by == *b)
            .map(|g| g.packets)
            .sum();
        assert_eq!(
            packets, acc.counted,
            "grouping {b:?} does not cover the counted packets"
        );
    }
    let bytes_of = |b: By| -> u64 {
        out.groups
            .iter()
            .filter(|g| g.by == b)
            .map(|g| g.bytes)
            .sum()
    };
    let first = bytes_of(by[0]);
    for b in &by {
        assert_eq!(bytes_of(*b), first, "groupings disagree on the bytes");
    }
    for e in &out.envelope {
        assert!(e.max_packets >= e.packets_in_window);
    }

    // The same capture twice holds the same packets: whatever it holds, the check reads it
    // without failing, and a pair it finds shares its whole sample.
    let (Ok(a), Ok(b)) = (
        common::open(data.to_vec(), opts),
        common::open(data.to_vec(), opts),
    ) else {
        return;
    };
    let options = burstcore::analysis::SharedOptions::default()
        .with_time_range(time_range)
        .with_sample(1 + (h >> 13) as usize % 64);
    let filters = [filter.clone(), filter];
    let found = burstcore::analysis::shared_packets(&mut [a, b], &filters, &options)
        .expect("a capture the scan read is read by the check");
    same_twice(&found);
    // As a plain file, read from where bisecting it lands: never a panic, the same invariant
    // (damage met there only ends a sample).
    let path =
        std::env::temp_dir().join(format!("burstcore-fuzz-shared-{}.cap", std::process::id()));
    if std::fs::write(&path, data).is_ok() {
        let open = || {
            burstcore::input::open_path(&path)
                .and_then(|i| burstcore::capture::CaptureReader::new(i, opts))
        };
        if let (Ok(a), Ok(b)) = (open(), open()) {
            if let Ok(found) = burstcore::analysis::shared_packets(&mut [a, b], &filters, &options)
            {
                same_twice(&found);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
});

/// What the check finds of one capture given twice.
fn same_twice(found: &burstcore::analysis::SharedPackets) {
    assert_eq!(found.hosts[0], found.hosts[1]);
    for p in &found.pairs {
        assert_eq!((p.a, p.b), (0, 1));
        assert_eq!((p.shared, p.sampled_b), (p.sampled_a, p.sampled_a), "{p:?}");
    }
}
