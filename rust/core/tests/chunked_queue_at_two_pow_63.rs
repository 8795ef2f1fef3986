//! A time chunk whose queue reaches exactly 2⁶³ units (`NARROW_LIMIT`, the first value a u64 lane
//! must not hold) and then meets, after a long gap, a service the u64 lanes cap at exactly 2⁶³.
//! The chunk's lane widens to u128 at that packet, so the gap is served exactly and the queue
//! empties strictly before the next packet: a new minimum of D, which a queue carried in from
//! the chunk before ends at. A lane that kept the queue in u64 (`q <= NARROW_LIMIT` in
//! `Scaled::add`) would see the capped service equal the queue, skip that instant, and the merge
//! would carry the earlier chunk's busy period through to the end. Mutation testing found no
//! test reaching that case: it needs the scalar chunk lanes (the vector lanes check for overflow
//! on their own), and they run where a chunk's budget of kept instants is below one instant per
//! lane and held packet, so the scan groups by interface (the aggregate's budget is unlimited)
//! with a budget of one. Checked against the O(n³) oracle of `engine::reference` and the
//! sequential scanner.

use burstcore::engine::chunk::{ChunkScanner, ChunkState, Edges, DEFAULT_INSTANT_CAP};
use burstcore::engine::reference;
use burstcore::engine::{Arrival, By, ScanConfig, Scanner, BACKLOG_SCALE};

const TWO_63: u128 = 1 << 63;

/// Packets as (timestamp ns, bytes).
type Packets = Vec<(i64, u64)>;

/// The packets for rate 2^k, with the numbers worked out. For k = 12 (r = 4096 bit/s, so the
/// scale 8·10⁹ = 2¹²·1953125 and 2⁶³ = 2¹²·2⁵¹ share the factor 2¹²):
/// - B's first two packets carry n = 1,152,921,505 bytes (the least n with n·1953125 > 2⁵¹),
///   576,460,752 at 0 and 576,460,753 at Δ = n·1953125 − 2⁵¹ = 767,877 ns: their work is
///   9,223,372,040,000,000,000 units, the service between them 4096·767,877 = 3,145,224,192
///   (less than the first packet's work, so the queue stays busy), and the queue after the
///   second is 9,223,372,036,854,775,808 = 2⁶³.
/// - The u64 lanes cap a gap at dcap = ⌈2⁶³/r⌉ = 2⁵¹ ns, a service of exactly 2⁶³ for a
///   power of two. The third packet (1500 B) comes 2⁵¹ + X ns later, X = ⌈8·10⁹/r⌉ =
///   1,953,125: the exact service is 2⁶³ + 8·10⁹, the capped one 2⁶³ = the queue.
/// - D there is −r·X = −8·10⁹ (a new minimum: D was 0 at the chunk's first packet).
/// - Chunk A is 1 byte at −1 ns: it carries c = 8·10⁹ − 4096 units into B. The combined queue
///   at B's second packet is 2⁶³ + c, and empties at the third since −8·10⁹ ≤ −c: A's busy
///   period closes at B's second packet, lasting 767,877 + 1 + ⌈(2⁶³ + c)/4096⌉ ns; the third
///   packet starts a period of its own.
///
/// For other k the same: n the least multiple of 2^(k−12) past 2⁶³/8·10⁹, Δ = (n·8·10⁹ −
/// 2⁶³)/r. Returns (chunk A's packets, chunk B's packets).
fn packets(k: u32) -> (Packets, Packets) {
    let rate = 1u64 << k;
    let m = 1u64 << (k - 12);
    let least = (TWO_63 / u128::from(BACKLOG_SCALE)) as u64 + 1;
    let n = least.div_ceil(m) * m;
    let delta = (u128::from(n) * u128::from(BACKLOG_SCALE) - TWO_63) / u128::from(rate);
    let (s1, s2) = (n / 2, n - n / 2);
    let dcap = TWO_63.div_ceil(u128::from(rate));
    let x = u128::from(BACKLOG_SCALE).div_ceil(u128::from(rate));
    let t2 = delta as i64;
    let t3 = t2 + (dcap + x) as i64;
    // The case is what it says: a queue of exactly 2⁶³ at B's second packet (busy since the
    // first), a capped gap service of exactly 2⁶³, an exact one past it, and a carry from A
    // that ends at the third packet.
    let work = |s: u64| u128::from(s) * u128::from(BACKLOG_SCALE);
    let served = u128::from(rate) * delta;
    assert!(served < work(s1), "k {k}");
    assert_eq!(work(s1) + work(s2) - served, TWO_63, "k {k}");
    assert_eq!(u128::from(rate) * dcap, TWO_63, "k {k}");
    let carry = work(1) - u128::from(rate);
    assert!(carry > 0 && u128::from(rate) * x >= carry, "k {k}");
    (vec![(-1, 1)], vec![(0, s1), (t2, s2), (t3, 1500)])
}

fn config(rate: u64) -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![])
        .with_rates_bps(vec![rate])
        .with_by(vec![By::All, By::Interface])
}

/// One chunk, keeping `budget` empty instants over the groups by interface.
fn chunk(rate: u64, packets: &[(i64, u64)], edges: Edges, budget: usize) -> ChunkState {
    let mut s = ChunkScanner::with_options(config(rate), DEFAULT_INSTANT_CAP, edges)
        .expect("config")
        .keeping_instants(budget);
    for &(ts, size) in packets {
        s.push(&Arrival::new(ts, size)).expect("push");
    }
    s.finish().expect("finish")
}

#[test]
fn a_queue_of_two_pow_63_meeting_a_capped_service_keeps_its_empty_instant() {
    for k in [12, 13, 20, 32] {
        let rate = 1u64 << k;
        let (a, b) = packets(k);
        let all: Packets = a.iter().chain(&b).copied().collect();
        // One instant to keep (the third packet's) and three packets held for one lane: below
        // one instant per lane and packet, so the scalar lanes run the interface's queue.
        let first = Edges {
            first: true,
            last: false,
        };
        let last = Edges {
            first: false,
            last: true,
        };
        let merged = chunk(rate, &a, first, 1)
            .merge(chunk(rate, &b, last, 1))
            .expect("the carried period ends at a kept instant");
        let (got, exact) = merged.finish_exact().expect("exact");

        let mut seq = Scanner::new(config(rate)).expect("config");
        for &(ts, size) in &all {
            seq.push(&Arrival::new(ts, size)).expect("push");
        }
        let (want, want_exact) = seq.finish_exact().expect("sequential");
        assert_eq!(got.backlog, want.backlog, "k {k}: rows");
        assert_eq!(exact, want_exact, "k {k}: exact B_max");

        let oracle = reference::backlog(&all, rate).expect("packets");
        assert_eq!(got.backlog.len(), 2, "k {k}");
        for (row, e) in got.backlog.iter().zip(&exact) {
            assert_eq!(e.bmax_scaled, oracle.bmax_scaled, "k {k}, {:?}", row.by);
            assert_eq!(row.peak_ns, oracle.peak_ns, "k {k}, {:?}", row.by);
            assert_eq!(
                row.longest_busy_ns, oracle.longest_busy_ns,
                "k {k}, {:?}",
                row.by
            );
            assert_eq!(
                row.longest_busy_start_ns, oracle.longest_busy_start_ns,
                "k {k}, {:?}",
                row.by
            );
        }
        // The hand-worked k = 12: A's period closes at B's second packet, with 2⁶³ + c left.
        if k == 12 {
            let c = u128::from(BACKLOG_SCALE) - 4096;
            assert_eq!(oracle.bmax_scaled, TWO_63 + c);
            assert_eq!(oracle.peak_ns, 767_877);
            let drain = (TWO_63 + c).div_ceil(4096) as i64;
            assert_eq!(oracle.longest_busy_ns, 767_877 + 1 + drain);
            assert_eq!(oracle.longest_busy_start_ns, -1);
        }
    }
}
