//! A late packet's error picks its advice by how far back it stepped: up to a second it is
//! capture jitter (raise the horizon, or drop late packets); past a second it is a damaged
//! timestamp or a clock that jumped (leave the stray out with `end=`). The cut is "past a
//! second", so a step back of exactly 1 s still gets the short advice. Mutation testing
//! (`>` made `>=` in `late_error`) showed no test sat on that boundary: every other late
//! packet in the suite is a few µs or 24 days late.

mod engine_util;

use burstcore::engine::{By, LatePolicy, ScanConfig};
use burstcore::ErrorKind;
use engine_util::{run, Pkt};

const SECOND: i64 = 1_000_000_000;

fn pkt(ts: i64) -> Pkt {
    Pkt::bare(ts, 100)
}

/// The reason given for a packet `back` ns earlier than the one before it, with no horizon.
fn reason_for_step_back(back: i64) -> String {
    let config = ScanConfig::default()
        .with_by(vec![By::All])
        .with_reorder_horizon_ns(0)
        .with_late(LatePolicy::Error);
    let latest = 10 * SECOND;
    let err = run(config, &[pkt(latest), pkt(latest - back)])
        .map(|_| ())
        .expect_err("a packet earlier than the one before it, with no horizon, is late");
    assert_eq!(err.kind, ErrorKind::OutOfOrder, "{err}");
    err.reason
}

#[test]
fn a_step_back_of_exactly_one_second_is_still_jitter() {
    let reason = reason_for_step_back(SECOND);
    assert!(
        reason.contains("raise reorder_horizon to at least 1s, or drop late packets"),
        "{reason}"
    );
    assert!(!reason.contains("damaged timestamp"), "{reason}");
    assert!(!reason.contains("leave it out with end="), "{reason}");
}

#[test]
fn a_step_back_of_one_ns_more_is_a_damaged_timestamp() {
    let reason = reason_for_step_back(SECOND + 1);
    assert!(reason.contains("damaged timestamp"), "{reason}");
    // The packet read before, at 10 s, is the one `end` would leave out.
    assert!(
        reason.contains("leave it out with end='1970-01-01T00:00:10.000000000Z'"),
        "{reason}"
    );
}

#[test]
fn just_under_a_second_is_jitter() {
    let reason = reason_for_step_back(SECOND - 1);
    assert!(
        reason.contains("raise reorder_horizon to at least"),
        "{reason}"
    );
    assert!(!reason.contains("damaged timestamp"), "{reason}");
}
