//! Both cores on one scan, with results identical to the single-threaded run by construction.
//!
//! The metrics are split, not the capture: every worker sees the same ordered stream of arrivals
//! (the same reorder buffer decisions, the same groups) and computes its share of the windows,
//! rates and bins. The caller's thread reads, frames and decodes, and computes a share itself.
//! Rows are then concatenated and put in the single-threaded order.
//!
//! Splitting the capture into time chunks whose states merge exactly (for a cluster engine) is
//! the other way; it is not implemented (see docs/metrics.md, "Parallel scans").

use crate::engine::{Arrival, ScanConfig, ScanOutput, Scanner};
use crate::error::{Error, Result};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;

/// Arrivals handed to workers at a time: large enough that channel traffic is negligible, small
/// enough that a worker never waits long for its first batch.
const BATCH: usize = 4096;
/// Batches in flight per worker: bounds memory while letting the reader run ahead a little.
const IN_FLIGHT: usize = 8;

/// One scan config per thread, each with a share of the windows, rates and bins; `None` when
/// there is too little to split.
pub fn split_config(config: &ScanConfig, threads: usize) -> Option<Vec<ScanConfig>> {
    let units = config.windows_ns.len() + config.rates_bps.len() + config.bins_ns.len();
    let n = threads.min(units);
    if n < 2 {
        return None;
    }
    let mut parts: Vec<ScanConfig> = (0..n)
        .map(|_| ScanConfig {
            windows_ns: vec![],
            rates_bps: vec![],
            bins_ns: vec![],
            ..config.clone()
        })
        .collect();
    // The calling thread also reads, frames and decodes, so it takes half a share: the deal
    // cycles through the workers, the caller, the workers again.
    let cycle: Vec<usize> = (1..n).chain(std::iter::once(0)).chain(1..n).collect();
    let share = |i: usize| cycle[i % cycle.len()];
    // Windows are dealt in runs of neighbouring lengths, shortest to the caller: each thread
    // keeps the packets of its own largest window, so only one thread holds the longest ones.
    let mut windows = config.windows_ns.clone();
    windows.sort_unstable();
    let w = windows.len();
    let mut counts = vec![0usize; n];
    for i in 0..w {
        counts[share(i)] += 1;
    }
    let mut at = 0;
    for (part, c) in parts.iter_mut().zip(counts) {
        part.windows_ns.extend_from_slice(&windows[at..at + c]);
        at += c;
    }
    let mut i = w;
    for &r in &config.rates_bps {
        parts[share(i)].rates_bps.push(r);
        i += 1;
    }
    for &b in &config.bins_ns {
        parts[share(i)].bins_ns.push(b);
        i += 1;
    }
    Some(parts)
}

/// A sink for arrivals that scans with several threads; `push` from the reading thread.
pub struct ParallelScanner<'scope> {
    local: Scanner,
    senders: Vec<SyncSender<Arc<Vec<Arrival>>>>,
    workers: Vec<thread::ScopedJoinHandle<'scope, Result<ScanOutput>>>,
    batch: Vec<Arrival>,
}

impl<'scope> ParallelScanner<'scope> {
    /// `parts[0]` runs on the calling thread, the others on threads of `scope`.
    pub fn new<'env>(
        scope: &'scope thread::Scope<'scope, 'env>,
        mut parts: Vec<ScanConfig>,
    ) -> Result<Self> {
        let first = parts.remove(0);
        // Build every scanner here so configuration errors surface before any thread starts.
        let local = Scanner::new(first)?;
        let mut scanners = Vec::with_capacity(parts.len());
        for p in parts {
            scanners.push(Scanner::new(p)?);
        }
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for scanner in scanners {
            let (tx, rx) = sync_channel::<Arc<Vec<Arrival>>>(IN_FLIGHT);
            senders.push(tx);
            workers.push(scope.spawn(move || run_worker(scanner, rx)));
        }
        Ok(ParallelScanner {
            local,
            senders,
            workers,
            batch: Vec::with_capacity(BATCH),
        })
    }

    pub fn push(&mut self, a: &Arrival) -> Result<()> {
        self.batch.push(*a);
        if self.batch.len() == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = Arc::new(std::mem::replace(
            &mut self.batch,
            Vec::with_capacity(BATCH),
        ));
        for tx in &self.senders {
            // A worker that stopped early did so on an error that the local scanner meets too on
            // the same packet (they see the same stream), so a failed send needs no handling here.
            let _ = tx.send(Arc::clone(&batch));
        }
        for a in batch.iter() {
            self.local.push(a)?;
        }
        Ok(())
    }

    /// Finish every share and merge the rows into the single-threaded order.
    pub fn finish(mut self) -> Result<ScanOutput> {
        let flushed = self.flush();
        drop(std::mem::take(&mut self.senders));
        let mut outs = Vec::with_capacity(self.workers.len() + 1);
        let local = flushed.and_then(|_| self.local.finish());
        for w in self.workers {
            let r = w
                .join()
                .map_err(|_| Error::new(crate::ErrorKind::Io, "a scan worker thread panicked"))?;
            outs.push(r);
        }
        let mut merged = local?;
        for o in outs {
            let o = o?;
            merged.envelope.extend(o.envelope);
            merged.backlog.extend(o.backlog);
            merged.series.extend(o.series);
        }
        merged.envelope.sort_by(|a, b| {
            (a.by.rank(), a.group, a.window_ns).cmp(&(b.by.rank(), b.group, b.window_ns))
        });
        merged.backlog.sort_by(|a, b| {
            (a.by.rank(), a.group, a.rate_bps).cmp(&(b.by.rank(), b.group, b.rate_bps))
        });
        merged.series.sort_by(|a, b| {
            (a.by.rank(), a.group, a.bin_ns, a.start_ns).cmp(&(
                b.by.rank(),
                b.group,
                b.bin_ns,
                b.start_ns,
            ))
        });
        Ok(merged)
    }
}

fn run_worker(mut scanner: Scanner, rx: Receiver<Arc<Vec<Arrival>>>) -> Result<ScanOutput> {
    for batch in rx {
        for a in batch.iter() {
            scanner.push(a)?;
        }
    }
    scanner.finish()
}
