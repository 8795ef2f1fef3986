//! A scan of in-memory columns fed batch by batch (`scan` of an iterable of DataFrames or of a
//! LazyFrame): the core's `ColumnScan` behind a Python object, each batch pushed by a call of
//! its own with the GIL released, so that only one batch is in memory at a time.

use crate::errors::{guard, to_py};
use crate::{bin_origin, config, output_to_py, Control};
use burstcore::pipeline::ColumnScan;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// One scan between its batches.
struct State {
    scan: ColumnScan,
    ctl: Control,
    /// Batches pushed so far: the number the next one is called by in errors.
    batches: usize,
}

/// The scan of one stream of column batches. After an error in a batch, or `finish`, it takes no
/// more (`RuntimeError`); from two threads at once, the second caller gets `RuntimeError`.
#[pyclass(module = "burstcore._burstcore")]
pub struct ColumnScanner {
    state: Mutex<Option<State>>,
}

#[pymethods]
impl ColumnScanner {
    /// A scan by the options `scan_columns` takes; refused here if they are wrong.
    #[new]
    #[pyo3(signature = (windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups, bin_origin_ns=Some(0)))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        windows_ns: Vec<i64>,
        closed: &str,
        rates_bps: Vec<u64>,
        bins_ns: Vec<i64>,
        by: Vec<String>,
        horizon_ns: i64,
        on_late: &str,
        max_groups: usize,
        bin_origin_ns: Option<i64>,
    ) -> PyResult<Self> {
        guard(py, || {
            let cfg = config(
                windows_ns, closed, rates_bps, bins_ns, by, horizon_ns, on_late, max_groups,
            )?
            .with_bin_origin(bin_origin(bin_origin_ns));
            Ok(ColumnScanner {
                state: Mutex::new(Some(State {
                    scan: ColumnScan::new(cfg).map_err(to_py)?,
                    ctl: Control::new(py, None, None)?,
                    batches: 0,
                })),
            })
        })
    }

    /// Push the next batch. An error in it (a packet later than the reorder horizon allows)
    /// names the batch (from 0) and the row within it, and ends the scan.
    #[pyo3(signature = (ts_ns, sizes, interfaces))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        ts_ns: PyReadonlyArray1<'py, i64>,
        sizes: PyReadonlyArray1<'py, u64>,
        interfaces: Option<PyReadonlyArray1<'py, u32>>,
    ) -> PyResult<()> {
        let Ok(mut guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        let Some(state) = guarded.as_mut() else {
            return Err(ended());
        };
        let res = guard(py, || {
            let ts = ts_ns.as_slice()?;
            let sz = sizes.as_slice()?;
            let ifs = match &interfaces {
                Some(a) => Some(a.as_slice()?),
                None => None,
            };
            let State {
                scan, ctl, batches, ..
            } = &mut *state;
            let before = scan.read();
            let res = py.detach(|| scan.push(ts, sz, ifs, &mut |d| ctl.tick(d)));
            let batch = *batches;
            *batches += 1;
            res.map_err(|mut e| {
                let row = scan.read() - before;
                e.reason = format!("batch {batch}, row {row}: {}", e.reason);
                ctl.take(e)
            })
        });
        if res.is_err() {
            // The scan's state is that of a batch cut short: nothing more to add to it.
            *guarded = None;
        }
        res
    }

    /// The batches pushed so far.
    #[getter]
    fn batches(&self) -> PyResult<usize> {
        let Ok(guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        Ok(guarded.as_ref().map_or(0, |s| s.batches))
    }

    /// Flush the reorder buffer and give the output as `scan_columns` does; the scan ends.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Ok(mut guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        let Some(State { scan, mut ctl, .. }) = guarded.take() else {
            return Err(ended());
        };
        guard(py, || {
            let res = py.detach(|| scan.finish());
            let (out, acc) = res.map_err(|e| ctl.take(e))?;
            output_to_py(py, out, acc)
        })
    }
}

fn busy() -> PyErr {
    PyRuntimeError::new_err(
        "this column scan is in use by another thread: push one scan's batches from one thread at a time",
    )
}

fn ended() -> PyErr {
    PyRuntimeError::new_err(
        "this column scan has ended (finished, or stopped by an error in a batch): start a new one",
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ColumnScanner>()
}
