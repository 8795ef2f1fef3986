//! Switches for the fuzz targets, compiled into fuzz builds only (`cargo fuzz` sets
//! `cfg(fuzzing)`): choices a normal build makes once for the CPU, which a target turns per
//! input so that one host fuzzes every path. Not API.

use std::sync::atomic::{AtomicBool, Ordering};

static AVX512_OFF: AtomicBool = AtomicBool::new(false);

/// From now on, in this process, run the u64 Lindley lanes (the sequential scan's and a time
/// chunk's) as on a CPU without AVX-512: the AVX2 lanes where the CPU has AVX2. For the whole
/// process, not a thread, as a scan's workers run lanes too; libFuzzer runs one input at a
/// time, so it never changes during a scan.
pub fn without_avx512(off: bool) {
    AVX512_OFF.store(off, Ordering::Relaxed);
}

pub(crate) fn avx512_off() -> bool {
    AVX512_OFF.load(Ordering::Relaxed)
}
