//! Time `scan` on a capture with the benchmark's 20 windows and 8 rates (for profiling).
//! Usage: cargo run --release -p burstcore --example scan_bench -- FILE[,FILE...] [THREADS]
//! (several files, comma-separated, are merged in timestamp order as `scan` merges them; give
//! MEAN_BPS then, and not ENGINE_ONLY)
//! MMAP=1 reads the file through a memory mapping (`ReadOptions::mmap`) instead of `read()`
//! (the library's default on Linux); unset or anything else reads with `read()`.
//! BY=all,pair groups as named (default: the aggregate).
//! START=NS scans from that instant (a time range, ns since the epoch; `0` covers any capture):
//! a scan the time chunks do not take. FILE `-` reads stdin (give MEAN_BPS then).
//! SIZE=l1 counts sizes as named (as `scan`'s `size`; default: wire).
//! ENGINE_ONLY=1 times the engine alone on columns read beforehand (cases none, windows, rates,
//! both; PER_WINDOW=1 adds each window alone, ONLY_CASE=NAME runs one case): this thread's CPU
//! time a packet, the best of 3 runs and the first (which alone pays for fresh memory).

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::{By, ScanConfig};
use burstcore::pipeline::{self, SizeKind};
use std::time::Instant;

fn open(path: &str) -> CaptureReader {
    let input = burstcore::input::open_path(path.as_ref()).expect("open");
    let options = ReadOptions::default().with_mmap(std::env::var("MMAP").is_ok_and(|v| v == "1"));
    CaptureReader::new(input, options).expect("reader")
}

/// CPU time of this thread (user + system), in seconds: the clock's own resolution (ns on Linux),
/// not the 10 ms tick of `/proc/self/stat`, which is 5 ns a packet on a 2 GB full-frame capture.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(ok, 0, "clock_gettime");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = &args[0];
    let threads: usize = args.get(1).map_or(1, |t| t.parse().expect("threads"));
    // Mean rate for the rate grid: given (MEAN_BPS), or from one untimed pass.
    let mean = match std::env::var("MEAN_BPS") {
        Ok(m) => m.parse().expect("MEAN_BPS"),
        Err(_) => {
            let inf = pipeline::info(&mut open(path), &mut |_| Ok(())).expect("info");
            let span = (inf.max_ns.unwrap_or(0) - inf.min_ns.unwrap_or(0)).max(1) as f64;
            let mean = inf.wire_bytes as f64 * 8.0 * 1e9 / span;
            eprintln!("MEAN_BPS={mean}");
            mean
        }
    };
    let mut windows: Vec<i64> = vec![250_000, 1_000_000_000];
    for e in 3..9 {
        for m in [1, 2, 5] {
            windows.push(m * 10i64.pow(e));
        }
    }
    let rates: Vec<u64> = [1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
        .iter()
        .map(|m| (mean * m) as u64)
        .collect();
    let by = std::env::var("BY").map_or(vec![By::All], |names| {
        names
            .split(',')
            .map(|n| By::parse(n).expect("BY"))
            .collect()
    });
    let config = ScanConfig::default()
        .with_windows_ns(windows)
        .with_rates_bps(rates)
        .with_by(by);
    let config = match std::env::var("START") {
        Ok(start) => config.with_time_range(burstcore::TimeRange {
            start_ns: Some(start.parse().expect("START")),
            end_ns: None,
        }),
        Err(_) => config,
    };
    if std::env::var("ENGINE_ONLY").is_ok() {
        // The engine alone, on columns read beforehand: windows only, rates only, both.
        let (mut ts, mut sizes) = (Vec::new(), Vec::new());
        let mut r = open(path);
        while let Some(p) = r.next_packet().expect("read") {
            ts.push(p.ts_ns.unwrap_or(0));
            sizes.push(u64::from(p.wire_len));
        }
        let mut cases: Vec<(String, Vec<i64>, Vec<u64>)> = Vec::new();
        if std::env::var("PER_WINDOW").is_ok() {
            for &w in &config.windows_ns {
                cases.push((format!("window {w}"), vec![w], vec![]));
            }
        }
        let only = std::env::var("ONLY_CASE").ok();
        for (name, w, r) in cases.into_iter().chain([
            ("none".to_string(), vec![], vec![]),
            ("windows".to_string(), config.windows_ns.clone(), vec![]),
            ("rates".to_string(), vec![], config.rates_bps.clone()),
            (
                "both".to_string(),
                config.windows_ns.clone(),
                config.rates_bps.clone(),
            ),
        ]) {
            let c = ScanConfig::default().with_windows_ns(w).with_rates_bps(r);
            if only.as_ref().is_some_and(|o| *o != name) {
                continue;
            }
            // CPU time, not wall-clock: others sharing the machine then matter less.
            // The first run also pays for the fresh memory its rings grow into; the later ones
            // get memory the allocator kept from the one before.
            let mut runs = Vec::new();
            for _ in 0..3 {
                let t0 = cpu_seconds();
                pipeline::scan_columns(&ts, &sizes, None, c.clone(), &mut |_| Ok(()))
                    .expect("scan");
                runs.push(cpu_seconds() - t0);
            }
            let per_packet = |s: f64| s * 1e9 / ts.len() as f64;
            let best = runs.iter().copied().fold(f64::MAX, f64::min);
            println!(
                "{name}: {:.1} ns/packet (first run {:.1})",
                per_packet(best),
                per_packet(runs[0])
            );
        }
        return;
    }
    let paths: Vec<&str> = path.split(',').collect();
    let file_len: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let t0 = Instant::now();
    let mut readers: Vec<CaptureReader> = paths.iter().map(|p| open(p)).collect();
    let (out, acc) = pipeline::scan_threads(&mut readers, config, size(), threads, &mut |_| Ok(()))
        .expect("scan");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{path}: {} packets in {secs:.3} s: {:.2} GB/s, {:.2} Mpkt/s; E(1ms) = {} B, B_max(1.1ρ) = {} B",
        acc.counted,
        file_len as f64 / secs / 1e9,
        acc.counted as f64 / secs / 1e6,
        out.envelope.iter().find(|r| r.window_ns == 1_000_000).map_or(0, |r| r.bytes),
        out.backlog.first().map_or(0.0, |r| r.bmax_bytes),
    );
}

/// The size counted: `SIZE` as `scan` names it, else the wire length.
fn size() -> SizeKind {
    std::env::var("SIZE").map_or(SizeKind::Wire, |s| SizeKind::parse(&s).expect("SIZE"))
}
