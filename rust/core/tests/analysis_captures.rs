//! The analyses on real training captures, against the ground truth shipped with them
//! (meta.json, rank logs) and tshark's own counts.
//!
//! Packets come from burstcore's own reader (`load_arrivals`); the oracles are the training logs
//! and tshark's per-flow and per-pair counts recorded in meta.json.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use burstcore::analysis::{
    FlowKey, FlowOptions, FlowTable, IterationAnalyzer, IterationOptions, TrafficMatrix,
};
use burstcore::analyze::{self, OrderOptions};
use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::Arrival;

fn shared() -> PathBuf {
    match std::env::var("BURSTCORE_SHARED") {
        Ok(p) => PathBuf::from(p),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// Captures folder, or None to skip when it is absent and BURSTCORE_SHARED is unset.
fn captures() -> Option<PathBuf> {
    let dir = shared().join("captures");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("BURSTCORE_SHARED").is_err(),
        "BURSTCORE_SHARED set but {} missing",
        dir.display()
    );
    eprintln!("skipping: {} not found", dir.display());
    None
}

/// The packets of a capture as Arrivals in timestamp order, read by burstcore itself (reader,
/// decoder, reorder buffer); tshark stays the oracle through the counts recorded in meta.json.
fn load_arrivals(path: &Path) -> Vec<Arrival> {
    let input = burstcore::input::open_path(path).expect("open capture");
    let mut readers = vec![CaptureReader::new(input, ReadOptions::default()).expect("reader")];
    let mut v = Vec::new();
    let acc = analyze::for_each(
        &mut readers,
        &[],
        OrderOptions::default(),
        &mut |_| Ok(()),
        &mut |_, a| {
            v.push(*a);
            Ok(())
        },
    )
    .expect("read capture");
    assert_eq!(
        acc.counted,
        acc.packets_read,
        "{}: packets skipped",
        path.display()
    );
    v
}

/// Every integer value of `"key": <int>` in a JSON text, in order (enough for meta.json).
fn ints(json: &str, key: &str) -> Vec<i64> {
    let pat = format!("\"{key}\": ");
    json.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = json.get(i + pat.len()..)?;
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(rest.len());
            rest.get(..end)?.parse().ok()
        })
        .collect()
}

fn strings(json: &str, key: &str) -> Vec<String> {
    let pat = format!("\"{key}\": \"");
    json.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = json.get(i + pat.len()..)?;
            Some(rest.get(..rest.find('"')?)?.to_string())
        })
        .collect()
}

struct Truth {
    mode: String,
    rank_ips: Vec<IpAddr>,
    iter_starts: Vec<i64>,
    payload_per_iter: u64,
    json: String,
}

fn truth(dir: &Path, stem: &str) -> Truth {
    let json = std::fs::read_to_string(dir.join(format!("{stem}.meta.json"))).expect("meta.json");
    let ranks = json.find("\"ranks\"").expect("ranks");
    let ranks_end = json
        .get(ranks..)
        .and_then(|r| r.find(']'))
        .expect("ranks end")
        + ranks;
    let rank_ips = strings(json.get(ranks..ranks_end).expect("ranks"), "ip")
        .iter()
        .map(|s| s.parse().expect("ip"))
        .collect();
    Truth {
        mode: strings(&json, "mode").first().cloned().expect("mode"),
        rank_ips,
        iter_starts: ints(&json, "t_iter_start_ns_min"),
        payload_per_iter: ints(&json, "all_links_total")
            .first()
            .copied()
            .expect("payload") as u64,
        json,
    }
}

const CAPTURES: [(&str, &str); 3] = [
    ("d_ring2_resnetsmall_noshape_bridge", "pcapng"),
    ("a_ring4_mlp5m_1g_bridge", "pcapng.zst"),
    ("b_ps4_mlp5m_1g_bridge", "pcapng.zst"),
];

fn each_capture(f: impl Fn(&str, &Truth, &[Arrival])) {
    let Some(dir) = captures() else { return };
    for (stem, ext) in CAPTURES {
        let t = truth(&dir, stem);
        let arrivals = load_arrivals(&dir.join(format!("{stem}.{ext}")));
        assert!(!arrivals.is_empty(), "{stem}: no packets");
        f(stem, &t, &arrivals);
    }
}

#[test]
fn iteration_period_and_bytes_match_training_logs() {
    let failures = std::cell::RefCell::new(Vec::new());
    each_capture(|stem, t, arrivals| {
        let mut an = IterationAnalyzer::new(IterationOptions::default());
        for a in arrivals {
            an.push(a);
        }
        let rep = an.finish();
        // Ground truth: mean spacing of iteration starts, iteration 0 excluded (it differs).
        let s = &t.iter_starts;
        assert!(s.len() >= 3, "{stem}: too few logged iterations");
        let truth_period = (s[s.len() - 1] - s[1]) as f64 / (s.len() - 2) as f64;
        let got = rep.period_ns.expect("a period") as f64;
        eprintln!(
            "{stem}: period {:.3} ms (acf {:?}), truth {:.3} ms, confidence {:.3}, {} iterations",
            got / 1e6,
            rep.acf_period_ns,
            truth_period / 1e6,
            rep.confidence,
            rep.iterations.len()
        );
        let rel = |x: i64| (x - s[0]) / 1_000_000;
        eprintln!(
            "{stem}: starts (ms) {:?}, logged {:?}",
            rep.iterations
                .iter()
                .map(|i| rel(i.start_ns))
                .collect::<Vec<_>>(),
            s.iter().map(|x| rel(*x)).collect::<Vec<_>>()
        );
        if (got / truth_period - 1.0).abs() > 0.03 {
            failures
                .borrow_mut()
                .push(format!("{stem}: period {got} vs {truth_period}"));
        }
        assert!(
            rep.confidence > 0.05,
            "{stem}: confidence {}",
            rep.confidence
        );

        // Overhead model: MSS-sized segments of 1448 B payload ride in 1514 B frames
        // (Ethernet 14 + IPv4 20 + TCP 20 + timestamps option 12 = 66 B), so data frames are
        // payload × 1514/1448; pure ACKs (66 B frames) come on top at the ratio of ACKs to
        // data frames measured in the capture itself.
        let data = arrivals
            .iter()
            .filter(|a| a.headers.payload_len.is_some_and(|p| p > 0))
            .count() as f64;
        let acks = arrivals
            .iter()
            .filter(|a| a.headers.payload_len == Some(0))
            .count() as f64;
        let per_data_frame = 1514.0 + 66.0 * acks / data;
        let model = t.payload_per_iter as f64 / 1448.0 * per_data_frame;
        // Iterations inside the logged training loop, the first (iteration 0) left out.
        let loop_its: Vec<_> = rep
            .iterations
            .iter()
            .filter(|it| it.start_ns > s[1] - (s[2] - s[1]) / 2)
            .collect();
        assert!(
            loop_its.len() + 1 >= s.len() - 1,
            "{stem}: found {} of {} iterations",
            loop_its.len(),
            s.len() - 1
        );
        let mean = loop_its.iter().map(|it| it.bytes as f64).sum::<f64>() / loop_its.len() as f64;
        eprintln!(
            "{stem}: bytes/iteration {mean:.0}, model {model:.0}, ratio {:.4}",
            mean / model
        );
        if (mean / model - 1.0).abs() > 0.05 {
            failures.borrow_mut().push(format!(
                "{stem}: bytes per iteration {mean} vs model {model}"
            ));
        }
    });
    let failures = failures.into_inner();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn traffic_matrix_shape_matches_mode() {
    each_capture(|stem, t, arrivals| {
        let mut m = TrafficMatrix::new();
        for a in arrivals {
            m.push(a);
        }
        let total: u64 = arrivals.iter().map(|a| a.size).sum();
        assert_eq!(m.total_bytes, total);
        assert_eq!(m.pairs.values().map(|c| c.0).sum::<u64>(), total);
        // tshark's per-pair byte counts recorded in meta.json.
        for (i, a) in t.rank_ips.iter().enumerate() {
            for (j, b) in t.rank_ips.iter().enumerate() {
                let key = format!("\"{a} -> {b}\": ");
                if let Some(v) = ints(&t.json, key.trim_end_matches(": ").trim_matches('"')).first()
                {
                    assert_eq!(m.bytes(Some(*a), Some(*b)) as i64, *v, "{stem}: {i}->{j}");
                }
            }
        }
        let n = t.rank_ips.len();
        let between: u64 = t
            .rank_ips
            .iter()
            .flat_map(|a| t.rank_ips.iter().map(move |b| (*a, *b)))
            .map(|(a, b)| m.bytes(Some(a), Some(b)))
            .sum();
        if t.mode == "ring" {
            // Each rank's heaviest destination is a ring neighbour, and ring edges carry ~all.
            let mut ring = 0u64;
            for (k, a) in t.rank_ips.iter().enumerate() {
                let (j, _) = t
                    .rank_ips
                    .iter()
                    .enumerate()
                    .map(|(j, b)| (j, m.bytes(Some(*a), Some(*b))))
                    .max_by_key(|x| x.1)
                    .expect("ranks");
                assert!(
                    j == (k + 1) % n || j == (k + n - 1) % n,
                    "{stem}: rank {k} sends most to {j}"
                );
                ring += m.bytes(Some(*a), Some(t.rank_ips[(k + 1) % n]))
                    + if n > 2 {
                        m.bytes(Some(*a), Some(t.rank_ips[(k + n - 1) % n]))
                    } else {
                        0
                    };
            }
            assert!(
                ring as f64 >= 0.9 * between as f64,
                "{stem}: ring edges {ring} of {between}"
            );
        } else {
            let r0 = t.rank_ips[0];
            let with0: u64 = m
                .pairs
                .iter()
                .filter(|((s, d), _)| *s == Some(r0) || *d == Some(r0))
                .map(|(_, c)| c.0)
                .sum();
            assert!(
                with0 as f64 >= 0.95 * between as f64,
                "{stem}: rank 0 pairs {with0} of {between}"
            );
        }
    });
}

#[test]
fn flows_match_tshark_conversations() {
    each_capture(|stem, t, arrivals| {
        let mut ft = FlowTable::new(FlowOptions {
            key: FlowKey::Flow5,
            idle_timeout_ns: None,
            max_flows: 100_000,
        });
        for a in arrivals {
            ft.push(a).expect("flows");
        }
        let rep = ft.finish_report();
        let flows = strings(&t.json, "flow");
        let frames = ints(&t.json, "frames");
        let bytes = ints(&t.json, "bytes");
        // In meta.json each tcp_flows entry is {"flow", "frames", "bytes"}; the first "frames"
        // and "bytes" belong to the file totals, so align on the flow list from the end.
        assert!(!flows.is_empty(), "{stem}: no tcp_flows");
        let mut checked = 0;
        for f in &flows {
            let Some((l, r)) = f.split_once(" -> ") else {
                continue;
            };
            let (Some((sip, sp)), Some((dip, dp))) = (l.rsplit_once(':'), r.rsplit_once(':'))
            else {
                continue;
            };
            let pos = t.json.find(&format!("\"flow\": \"{f}\"")).expect("flow");
            let after = t.json.get(pos..).expect("tail");
            let fr = ints(after, "frames")[0];
            let by = ints(after, "bytes")[0];
            let rec = rep
                .flows
                .iter()
                .find(|r| {
                    r.src_ip.to_string() == sip
                        && r.dst_ip.to_string() == dip
                        && r.src_port.to_string() == sp
                        && r.dst_port.to_string() == dp
                })
                .unwrap_or_else(|| panic!("{stem}: flow {f} missing"));
            assert_eq!(
                (rec.packets as i64, rec.bytes as i64),
                (fr, by),
                "{stem}: {f}"
            );
            checked += 1;
        }
        let _ = (frames, bytes);
        eprintln!(
            "{stem}: {checked} flows checked against tshark, {} flows, non-IP {}",
            rep.flows.len(),
            rep.non_ip_packets
        );
        assert!(checked > 0);
        let total: u64 = rep.flows.iter().map(|r| r.bytes).sum::<u64>() + rep.non_ip_bytes;
        assert_eq!(total, arrivals.iter().map(|a| a.size).sum::<u64>());
    });
}
