//! A few jobs on scoped threads while the calling thread reports their progress: how the byte
//! ranges of plain capture files are scanned ([`crate::chunked`]) or read into tables
//! ([`crate::table::split`]) side by side.

use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::Progress;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The most threads a scan or a read starts; more are taken as this many. Each thread costs a
/// stack and, for a split file, a byte range with its own seam to check: tens of thousands of
/// them only add that cost (20,000 took 6.9 s on a 60 MB file), and a count the system refuses
/// would fail the call. The Python API rejects a larger count with a message instead.
pub const MAX_THREADS: usize = 1024;

/// The default number of threads: the cores this process may run on (its CPU affinity and
/// cgroup quota, as [`std::thread::available_parallelism`] counts them, not the machine's), at
/// most 8: in a container limited to two of a host's 64 cores, two.
pub fn default_threads() -> usize {
    crate::chunked::usable_cores().min(8)
}

/// What the jobs share with the calling thread.
#[derive(Default)]
pub struct Shared {
    /// Set when the caller's progress callback failed (an interrupt): jobs look at it now and
    /// then and give up.
    pub stop: AtomicBool,
    /// Input bytes the jobs have got through, reported to the progress callback.
    pub bytes: AtomicU64,
}

impl Shared {
    /// The counter of one job's byte range `from..to`, which adds what the job gets through to
    /// `bytes`.
    pub fn range(&self, from: u64, to: u64) -> RangeCount<'_> {
        RangeCount {
            shared: self,
            counted: from,
            to,
        }
    }
}

/// A job's progress through its byte range (see [`Shared::range`]).
pub struct RangeCount<'a> {
    shared: &'a Shared,
    counted: u64,
    to: u64,
}

impl RangeCount<'_> {
    /// The job has read up to `pos`: count the bytes not counted yet (never past the range's
    /// end, which a reader may read beyond to find where its last record ends), and say
    /// whether to go on.
    pub fn reached(&mut self, pos: u64) -> bool {
        let pos = pos.min(self.to);
        self.shared
            .bytes
            .fetch_add(pos.saturating_sub(self.counted), Ordering::Relaxed);
        self.counted = self.counted.max(pos);
        !self.shared.stop.load(Ordering::Relaxed)
    }

    /// The job is done with its range: count the rest of it.
    pub fn finish(mut self) {
        self.reached(self.to);
    }
}

/// Run `job(i, shared)` for each `i` in `0..jobs` on up to `threads` threads, which take the jobs
/// in order. Meanwhile the calling thread reports `shared.bytes` to `progress` every 20 ms; when
/// that fails, `shared.stop` is set and the error returned once every thread has left. A job
/// that never started (stopped before its turn) gives `None`.
pub fn run<T: Send>(
    jobs: usize,
    threads: usize,
    job: impl Fn(usize, &Shared) -> T + Sync,
    progress: Progress<'_>,
) -> Result<Vec<Option<T>>> {
    let shared = Shared::default();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..jobs).map(|_| None).collect());
    let workers = threads.min(jobs);
    // Each worker wakes the calling thread on leaving (even by a panic), so that the caller
    // does not wait for its next report to see the jobs done.
    let finished = AtomicUsize::new(0);
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let leaving = Leaving {
                    finished: &finished,
                    caller: std::thread::current(),
                };
                let (next, shared, results, job) = (&next, &shared, &results, &job);
                scope.spawn(move || {
                    let _leaving = leaving;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= jobs || shared.stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let r = job(i, shared);
                        if let Ok(mut all) = results.lock() {
                            all[i] = Some(r);
                        }
                    }
                })
            })
            .collect();
        let mut failed = Ok(());
        while finished.load(Ordering::Acquire) < workers {
            std::thread::park_timeout(Duration::from_millis(20));
            if failed.is_ok() {
                if let Err(e) = progress(shared.bytes.load(Ordering::Relaxed)) {
                    shared.stop.store(true, Ordering::Relaxed);
                    failed = Err(e);
                }
            }
        }
        for h in handles {
            if h.join().is_err() {
                return Err(panicked());
            }
        }
        failed
    })?;
    results.into_inner().map_err(|_| panicked())
}

fn panicked() -> Error {
    Error::new(ErrorKind::Io, "a worker thread panicked")
}

/// Counts a worker out and wakes the calling thread when the worker leaves, however it leaves.
struct Leaving<'a> {
    finished: &'a AtomicUsize,
    caller: std::thread::Thread,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.finished.fetch_add(1, Ordering::Release);
        self.caller.unpark();
    }
}
