//! What the engine's ignored benchmark tests share (`envelope_bench`, `backlog_bench`,
//! `chunk_backlog_bench`): the packets of the capture an environment variable names, and the
//! CPU time of the calling thread.

use crate::capture::{CaptureReader, ReadOptions};

/// (timestamp, wire length) of every packet of the capture at `$var`; `None` if it is not set
/// (the benchmark then does nothing).
pub(crate) fn packets_of(var: &str) -> Option<Vec<(i64, u64)>> {
    let path = std::env::var(var).ok()?;
    let input = crate::input::open_path(path.as_ref()).expect("open");
    let mut r = CaptureReader::new(input, ReadOptions::default()).expect("reader");
    let mut packets = Vec::new();
    while let Some(p) = r.next_packet().expect("read") {
        packets.push((p.ts_ns.unwrap_or(0), u64::from(p.wire_len)));
    }
    Some(packets)
}

/// Seconds this thread has been on a CPU (Linux schedstat; 0 elsewhere): others sharing the
/// machine matter less than with wall-clock time.
pub(crate) fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}
