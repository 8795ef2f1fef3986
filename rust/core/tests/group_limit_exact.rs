//! The group limit at its edge: a grouping of exactly `max_groups` groups is scanned, one group
//! more is a limit error. The tests of the limit so far pushed past it and looked for the error;
//! through the reorder buffer it may come a packet or more later, so a limit one too low (the
//! `max_groups`-th group refused: `len() + 1 >= max_groups` for `len() >= max_groups` in
//! `Slots::get`) passed them all (mutation testing).
//!
//! Oracle: the number of distinct keys pushed, counted apart; the scan must succeed exactly when
//! it is at most `max_groups`, and then report one group row per key. Both the sequential
//! scanner (by source) and a time chunk's scanner (by interface, `engine::chunk`) are checked.

use burstcore::engine::chunk::{ChunkScanner, Edges, DEFAULT_INSTANT_CAP};
use burstcore::engine::{Arrival, By, ScanConfig, Scanner};
use burstcore::wire::Headers;
use burstcore::{ErrorKind, Limit};
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

/// Packet `i` of a trace of `keys` groups taking turns, three packets each.
fn key_of(i: u32, keys: u32) -> u32 {
    i % keys
}

fn config(by: By, max_groups: usize) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000])
        .with_by(vec![by])
        .with_max_groups(max_groups)
}

/// Groups reported by the sequential scanner grouping by source, or the error.
fn sequential(keys: u32, max_groups: usize) -> Result<usize, burstcore::Error> {
    let mut s = Scanner::new(config(By::Src, max_groups))?;
    for i in 0..3 * keys {
        let src = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + key_of(i, keys)));
        let a = Arrival::new(i64::from(i) * 10, 100)
            .with_headers(Headers::default().with_src(Some(src)));
        s.push(&a)?;
    }
    Ok(s.finish()?.groups.len())
}

/// Groups reported by a time chunk's scanner grouping by interface; `Err` with the reason.
fn chunk(keys: u32, max_groups: usize) -> Result<usize, String> {
    let edges = Edges {
        first: true,
        last: true,
    };
    let mut c = ChunkScanner::with_options(
        config(By::Interface, max_groups),
        DEFAULT_INSTANT_CAP,
        edges,
    )
    .map_err(|e| e.to_string())?;
    for i in 0..3 * keys {
        c.push_lean(i64::from(i) * 10, 100, key_of(i, keys))
            .map_err(|e| e.to_string())?;
    }
    let state = c.finish().map_err(|e| e.to_string())?;
    let out = state.finish().map_err(|e| e.to_string())?;
    Ok(out.groups.len())
}

#[test]
fn exactly_max_groups_groups_are_scanned_and_one_more_is_refused() {
    for max_groups in 1..=6usize {
        for keys in 1..=max_groups as u32 + 2 {
            let distinct: BTreeSet<u32> = (0..3 * keys).map(|i| key_of(i, keys)).collect();
            let fits = distinct.len() <= max_groups;
            let case = format!("{keys} groups, max_groups {max_groups}");
            match sequential(keys, max_groups) {
                Ok(groups) => {
                    assert!(fits, "{case}: scanned, {groups} groups");
                    assert_eq!(groups, distinct.len(), "{case}");
                }
                Err(e) => {
                    assert!(!fits, "{case}: refused: {e}");
                    assert_eq!(
                        (e.kind, e.limit),
                        (ErrorKind::LimitExceeded, Some(Limit::Result))
                    );
                    assert!(e.reason.contains("max_groups"), "{case}: {e}");
                }
            }
            match chunk(keys, max_groups) {
                Ok(groups) => {
                    assert!(fits, "{case}: chunk scanned, {groups} groups");
                    assert_eq!(groups, distinct.len(), "{case}: chunk");
                }
                Err(e) => {
                    assert!(!fits, "{case}: chunk refused: {e}");
                    assert!(e.contains("max_groups"), "{case}: chunk: {e}");
                }
            }
        }
    }
}
