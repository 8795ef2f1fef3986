//! `read_packets`' Rust half on its own: read a capture into columns (all of them, or the ones
//! named) and report the time and packets per second, best of N runs.
//!
//! `cargo run --release -p burstcore --example table_bench -- FILE [COLUMNS|all] [RUNS] [THREADS]`
//! (COLUMNS comma-separated, e.g. `timestamp,wire_len`; THREADS above 1 reads the file in
//! byte ranges side by side, as `read_packets` does by default). MMAP=1 reads through a memory
//! mapping, as `read_packets` does on Linux; unset, with `read()`.

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::table::read_table_threads;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: table_bench FILE [COLUMNS|all] [RUNS] [THREADS]")?;
    let columns: Option<Vec<String>> = match args.next().as_deref() {
        None | Some("all") => None,
        Some(list) => Some(list.split(',').map(str::to_string).collect()),
    };
    let runs: u32 = args.next().map(|r| r.parse()).transpose()?.unwrap_or(3);
    let threads: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(1);
    let mut best = f64::INFINITY;
    let mut rows = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut reader = CaptureReader::new(
            burstcore::input::open_path(path.as_ref())?,
            ReadOptions::default().with_mmap(std::env::var("MMAP").is_ok_and(|v| v == "1")),
        )?;
        let len = std::fs::metadata(&path)?.len();
        let tables = read_table_threads(
            &mut reader,
            columns.as_deref(),
            Some(len),
            threads,
            &mut |_| Ok(()),
        )?;
        rows = tables.iter().map(|t| t.rows).sum::<usize>();
        let secs = t0.elapsed().as_secs_f64();
        best = best.min(secs);
        drop(tables);
    }
    println!(
        "{path}: {rows} packets, best of {runs}: {best:.3} s = {:.2} M packets/s",
        rows as f64 / best / 1e6
    );
    Ok(())
}
