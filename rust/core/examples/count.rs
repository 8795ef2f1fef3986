//! Read a capture as fast as possible and report packets, bytes and throughput.
//! Usage: cargo run --release -p burstcore --example count -- FILE [FILE...]
//! MMAP=1 reads plain files through a memory mapping (`ReadOptions::mmap`) instead of `read()`
//! (the library's default on Linux); unset or anything else reads with `read()`.

use burstcore::capture::{CaptureReader, ReadOptions};
use std::time::Instant;

fn main() {
    let mut failed = false;
    let options = ReadOptions::default().with_mmap(std::env::var("MMAP").is_ok_and(|v| v == "1"));
    for path in std::env::args().skip(1) {
        let t0 = Instant::now();
        let result = burstcore::input::open_path(path.as_ref())
            .and_then(|input| CaptureReader::new(input, options))
            .and_then(|mut reader| {
                let (mut packets, mut captured, mut wire, mut ts_sum) = (0u64, 0u64, 0u64, 0i64);
                while let Some(p) = reader.next_packet()? {
                    packets += 1;
                    captured += p.data.len() as u64;
                    wire += u64::from(p.wire_len);
                    ts_sum = ts_sum.wrapping_add(p.ts_ns.unwrap_or(0));
                }
                Ok((
                    packets,
                    captured,
                    wire,
                    ts_sum,
                    reader.position(),
                    reader.warnings().to_vec(),
                ))
            });
        let secs = t0.elapsed().as_secs_f64();
        match result {
            Ok((packets, captured, wire, ts_sum, bytes, warnings)) => {
                println!(
                    "{path}: {packets} packets, {captured} captured bytes, {wire} wire bytes, \
                     {bytes} file bytes in {secs:.3} s: {:.2} GB/s, {:.1} Mpkt/s (ts checksum {ts_sum})",
                    bytes as f64 / secs / 1e9,
                    packets as f64 / secs / 1e6
                );
                for w in warnings {
                    println!("  warning: {w}");
                }
            }
            Err(e) => {
                eprintln!("{path}: error ({}): {e}", e.kind.name());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
