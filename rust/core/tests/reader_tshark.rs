//! tshark as the oracle for the whole corpus: for every capture in `corpus/index.jsonl`, the
//! reader must give the same packets as `tshark -r` (count, timestamp in ns, wire length,
//! captured length, interface), or, where tshark fails, an error or the packets tshark printed
//! before failing.
//!
//! Documented exemptions (and only these):
//! - tshark 4.0 prints each pcapng custom block as a frame without encapsulation: rows with an
//!   empty `frame.encap_type` are not packets;
//! - tshark 4.0's `frame.interface_id` is the section-local id; ours is global, so the test
//!   compares tshark's id with `Interface::local_id`;
//! - packets whose timestamp does not fit i64 ns (only pcapplusplus' pcapng-example, an EPB near
//!   2^64 µs, 100 packets in it and in its .zst copy) come out with `ts_ns: None`; tshark's
//!   value must then indeed be out of range;
//! - files tshark rejects for a link type it does not know (DSA tags, Juniper, ...): we frame
//!   them (we do not decode the link layer) and must find the count of the corpus' independent
//!   structural walk (`packets_strict_walk`);
//! - LINKTYPE_SUNATM (123): wiretap strips the 4-byte ATM pseudo-header from frame.len and
//!   frame.cap_len; we report the record's lengths as stored (tcpdump/libpcap do the same), so
//!   tshark's values must be ours minus 4;
//! - `python-pcapng/test_data/test006.ntar`: an OPB whose block length (167) is not a multiple
//!   of 4. tshark 4.0 does not check this; the pcapng specification requires it, so we report
//!   `Corrupt` at that block (the corpus' structural walk stops there too).

mod reader_util;

use burstcore::capture::ReadOptions;
use burstcore::ErrorKind;
use reader_util::{parse_ts, read_path, shared_dir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Entry {
    path: String,
    strict_walk: Option<u64>,
}

/// Pull `"key": value` out of one JSON line (the values needed here are plain strings/integers).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\": ");
    let rest = &line[line.find(&pat)? + pat.len()..];
    if let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        assert!(
            !s[..end].contains('\\'),
            "escaped path not supported: {line}"
        );
        Some(&s[..end])
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim())
    }
}

fn load_index(corpus: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(corpus.join("index.jsonl")).expect("corpus/index.jsonl");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Entry {
            path: field(l, "path").expect("path").to_string(),
            strict_walk: field(l, "packets_strict_walk").and_then(|v| v.parse().ok()),
        })
        .collect()
}

struct Row {
    ts: Option<i128>,
    len: u32,
    cap_len: u32,
    interface: Option<u32>,
}

struct Tshark {
    ok: bool,
    rows: Vec<Row>,
    stderr: String,
}

fn run_tshark(file: &Path) -> Tshark {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(file)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
        ])
        .args(["-e", "frame.interface_id", "-e", "frame.encap_type"])
        .output()
        .expect("tshark must be installed (/usr/bin/tshark)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("Running as user"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut rows = Vec::new();
    for line in stdout.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        // Non-packet records (custom blocks) have no encapsulation.
        if f.len() < 5 || f[4].is_empty() {
            continue;
        }
        rows.push(Row {
            ts: if f[0].is_empty() {
                None
            } else {
                Some(parse_ts(f[0]).expect("tshark time"))
            },
            len: f[1].parse().expect("frame.len"),
            cap_len: f[2].parse().expect("frame.cap_len"),
            interface: f[3].parse().ok(),
        });
    }
    Tshark {
        ok: out.status.success() && stderr.is_empty(),
        rows,
        stderr,
    }
}

/// Compare one file; `Err` describes the first disagreement.
fn check(corpus: &Path, e: &Entry, out_of_range: &AtomicUsize) -> Result<(), String> {
    let file = corpus.join(&e.path);
    let ts = run_tshark(&file);
    let ours = read_path(&file, ReadOptions::default());
    let n = ours.packets.len();
    if e.path == "python-pcapng/test_data/test006.ntar" {
        return match &ours.error {
            Some(err) if err.kind == ErrorKind::Corrupt && n == 0 => Ok(()),
            other => Err(format!(
                "expected Corrupt (OPB length 167), got {other:?} after {n} packets"
            )),
        };
    }
    if !ts.ok && ts.stderr.contains("unknown or unsupported") {
        if ours.error.is_some() || Some(n as u64) != e.strict_walk {
            return Err(format!(
                "unknown link type file: {n} packets, error {:?}, structural walk {:?}",
                ours.error, e.strict_walk
            ));
        }
        return Ok(());
    }
    let compare = ts.rows.len().min(n);
    for (i, (row, p)) in ts.rows.iter().zip(&ours.packets).take(compare).enumerate() {
        let ts_ok = match (row.ts, p.ts_ns) {
            (Some(t), Some(o)) => t == i128::from(o),
            (None, None) => true,
            (Some(t), None) if i64::try_from(t).is_err() => {
                if !e.path.contains("PcapExamples/") || !e.path.contains("pcapng-example.pcapng") {
                    return Err(format!(
                        "packet {}: unexpected out-of-range timestamp {t}",
                        i + 1
                    ));
                }
                out_of_range.fetch_add(1, Ordering::Relaxed);
                true
            }
            _ => false,
        };
        // SUNATM: wiretap hides the 4-byte pseudo-header (see the module comment).
        let strip = if p.linktype == 123 { 4 } else { 0 };
        let iface_ok = match row.interface {
            Some(id) => id == p.local_id,
            None => p.interface == 0,
        };
        if !ts_ok
            || row.len != p.wire_len.saturating_sub(strip)
            || row.cap_len != p.cap_len.saturating_sub(strip)
            || !iface_ok
        {
            return Err(format!(
                "packet {}: tshark ts {:?} len {} caplen {} iface {:?}; ours ts {:?} len {} caplen {} iface {} (local {})",
                i + 1,
                row.ts,
                row.len,
                row.cap_len,
                row.interface,
                p.ts_ns,
                p.wire_len,
                p.cap_len,
                p.interface,
                p.local_id
            ));
        }
    }
    if ts.ok {
        if let Some(err) = &ours.error {
            return Err(format!(
                "tshark reads {} packets; we fail after {n}: {err}",
                ts.rows.len()
            ));
        }
        if n != ts.rows.len() {
            return Err(format!(
                "tshark reads {} packets, we read {n}",
                ts.rows.len()
            ));
        }
        if let Some(w) = ours
            .warnings
            .iter()
            .find(|w| w.kind == ErrorKind::Truncated)
        {
            return Err(format!("tshark reads the file cleanly, we warn: {w}"));
        }
    } else {
        // tshark failed: the same packets, then our error or truncation warning.
        if n != ts.rows.len() {
            return Err(format!(
                "tshark fails after {} packets ({}), we give {n}",
                ts.rows.len(),
                ts.stderr
            ));
        }
        let truncated = ours.warnings.iter().any(|w| w.kind == ErrorKind::Truncated);
        if ours.error.is_none() && !truncated {
            return Err(format!(
                "tshark fails ({}), we neither fail nor warn",
                ts.stderr
            ));
        }
    }
    Ok(())
}

#[test]
fn corpus_matches_tshark() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipped: no shared folder (set BURSTCORE_SHARED)");
        return;
    };
    let corpus: PathBuf = shared.join("corpus");
    let entries = load_index(&corpus);
    assert!(
        entries.len() > 1000,
        "index.jsonl lists {} files",
        entries.len()
    );
    let next = AtomicUsize::new(0);
    let out_of_range = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    // Two tshark processes at a time: the machine has two cores.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(e) = entries.get(i) else { break };
                if let Err(msg) = check(&corpus, e, &out_of_range) {
                    failures.lock().unwrap().push(format!("{}: {msg}", e.path));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    let exempt = out_of_range.load(Ordering::Relaxed);
    eprintln!(
        "{} files compared with tshark, {} mismatches, {exempt} packets exempt (timestamp out of i64 ns)",
        entries.len(),
        failures.len()
    );
    for f in &failures {
        eprintln!("MISMATCH {f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} files disagree with tshark",
        failures.len(),
        entries.len()
    );
    // pcapplusplus' pcapng-example (and its .zst copy) hold 100 such EPBs each.
    assert_eq!(exempt, 200, "packets exempt for out-of-range timestamps");
}
