//! Packets given as columns (timestamps, sizes, interfaces) rather than read from a capture: for
//! tools that already hold them in memory, whole or a batch at a time.

use super::{account, Progress, PROGRESS_EVERY};
use crate::engine::{Arrival, ScanConfig, ScanOutput, Scanner};
use crate::error::{Error, Result};
use crate::pipeline::Accounting;
use crate::wire::Headers;

/// One scan fed columns batch by batch: the batches, taken in the order given, are one stream of
/// packets (any order within the reorder horizon, across batches as within one), so that
/// scanning the batches equals scanning them concatenated. Memory is the scan's own, whatever
/// the number of batches: nothing of a batch is kept once pushed.
#[derive(Debug)]
#[non_exhaustive]
pub struct ColumnScan {
    scanner: Scanner,
    /// Rows pushed into the scanner so far, in all batches.
    read: u64,
}

impl ColumnScan {
    /// A scan of columns by `config`, which may group only by what columns carry ('all',
    /// 'interface'): they hold no headers.
    pub fn new(config: ScanConfig) -> Result<Self> {
        if config.reads_headers() {
            return Err(Error::invalid(
                "in-memory columns carry no headers: group only by 'all' or 'interface' (or pass a capture)",
            ));
        }
        Ok(ColumnScan {
            scanner: Scanner::new(config)?,
            read: 0,
        })
    }

    /// Push one batch: `interfaces`, if given, as long as the others (else every packet is
    /// interface 0). `progress` is called with the rows pushed in all batches, every 65,536.
    /// On an error (a packet later than the horizon allows), [`ColumnScan::read`] says how many
    /// rows were taken before the one that failed.
    pub fn push(
        &mut self,
        ts_ns: &[i64],
        sizes: &[u64],
        interfaces: Option<&[u32]>,
        progress: Progress<'_>,
    ) -> Result<()> {
        if ts_ns.len() != sizes.len() {
            return Err(Error::invalid(format!(
                "timestamp and size columns differ in length ({} vs {})",
                ts_ns.len(),
                sizes.len()
            )));
        }
        if let Some(i) = interfaces.filter(|i| i.len() != ts_ns.len()) {
            return Err(Error::invalid(format!(
                "interface and timestamp columns differ in length ({} vs {})",
                i.len(),
                ts_ns.len()
            )));
        }
        for (i, (&ts, &size)) in ts_ns.iter().zip(sizes).enumerate() {
            self.scanner.push(&Arrival {
                ts_ns: ts,
                size,
                interface: interfaces.map_or(0, |v| v[i]),
                headers: Headers::default(),
            })?;
            self.read += 1;
            if self.read.is_multiple_of(PROGRESS_EVERY) {
                progress(self.read)?;
            }
        }
        Ok(())
    }

    /// Rows taken so far, in all batches.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The scan's output, with every row accounted for.
    pub fn finish(self) -> Result<(ScanOutput, Accounting)> {
        let read = Accounting {
            packets_read: self.read,
            ..Default::default()
        };
        Ok(account(self.scanner.finish()?, read))
    }
}

/// Scan packets given as columns (for tools that already hold timestamps and sizes in memory).
pub fn scan_columns(
    ts_ns: &[i64],
    sizes: &[u64],
    interfaces: Option<&[u32]>,
    config: ScanConfig,
    progress: Progress<'_>,
) -> Result<(ScanOutput, Accounting)> {
    let mut scan = ColumnScan::new(config)?;
    scan.push(ts_ns, sizes, interfaces, progress)?;
    scan.finish()
}

#[cfg(test)]
mod tests {
    use super::{scan_columns, ColumnScan};
    use crate::engine::{By, LatePolicy, ScanConfig};
    use crate::test_rng::Rng;

    fn config() -> ScanConfig {
        ScanConfig {
            windows_ns: vec![1, 700, 5_000],
            rates_bps: vec![1_000_000_000, 8_000_000_000],
            bins_ns: vec![1_000],
            by: vec![By::All, By::Interface],
            reorder_horizon_ns: 300,
            late: LatePolicy::Drop,
            ..ScanConfig::default()
        }
    }

    /// Batches cut anywhere (empty ones too), with packets out of order within the horizon
    /// across the cuts and some later than it, scan as the columns whole do.
    #[test]
    fn batches_cut_anywhere_scan_as_the_whole_columns() {
        let mut rng = Rng(48);
        for _ in 0..50 {
            let n = rng.below(400) as usize;
            let mut t = 0i64;
            let mut ts = Vec::new();
            for _ in 0..n {
                t += rng.below(200) as i64;
                // Now and then a step back, within the horizon or past it.
                ts.push(t - rng.below(3) as i64 * rng.below(250) as i64);
            }
            let sizes: Vec<u64> = (0..n).map(|_| rng.below(1500)).collect();
            let ifs: Vec<u32> = (0..n).map(|_| rng.below(3) as u32).collect();
            let whole = scan_columns(&ts, &sizes, Some(&ifs), config(), &mut |_| Ok(())).unwrap();

            let mut scan = ColumnScan::new(config()).unwrap();
            let mut at = 0;
            while at < n {
                let end = (at + rng.below(60) as usize).min(n);
                scan.push(
                    &ts[at..end],
                    &sizes[at..end],
                    Some(&ifs[at..end]),
                    &mut |_| Ok(()),
                )
                .unwrap();
                at = end;
            }
            assert_eq!(scan.read(), n as u64);
            let (out, acc) = scan.finish().unwrap();
            assert_eq!(format!("{:?}", (out, acc)), format!("{whole:?}"));
        }
    }
}
