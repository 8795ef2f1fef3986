//! `read_packets`' Rust half on its own: read a capture into columns (all of them, or the ones
//! named) and report the time and packets per second, best of N runs.
//!
//! `cargo run --release -p burstcore --example table_bench -- FILE [COLUMNS|all] [RUNS]`
//! (COLUMNS comma-separated, e.g. `timestamp,wire_len`).

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::table::read_table;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: table_bench FILE [COLUMNS|all] [RUNS]")?;
    let columns: Option<Vec<String>> = match args.next().as_deref() {
        None | Some("all") => None,
        Some(list) => Some(list.split(',').map(str::to_string).collect()),
    };
    let runs: u32 = args.next().map(|r| r.parse()).transpose()?.unwrap_or(3);
    let mut best = f64::INFINITY;
    let mut rows = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut reader = CaptureReader::new(
            burstcore::input::open_path(path.as_ref())?,
            ReadOptions::default(),
        )?;
        let len = std::fs::metadata(&path)?.len();
        let t = read_table(&mut reader, columns.as_deref(), Some(len), &mut |_| Ok(()))?;
        let secs = t0.elapsed().as_secs_f64();
        rows = reader.stats().packets;
        best = best.min(secs);
        drop(t);
    }
    println!(
        "{path}: {rows} packets, best of {runs}: {best:.3} s = {:.2} M packets/s",
        rows as f64 / best / 1e6
    );
    Ok(())
}
