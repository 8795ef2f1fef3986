//! A capture read batch by batch for `iter_packets` and `scan_packets`: the core's
//! `PacketBatches` behind a Python object, each batch read by a call of its own with the GIL
//! released, on the calling thread. Closing it (or dropping it) closes the input and frees its
//! buffers at once.

use crate::errors::{self, guard, guard_in};
use crate::source::{self, Slot};
use crate::{accounting, arrow, open_all, parse_filter, table_columns, Control, Span};
use burstcore::table::batches::{PacketBatches, DEFAULT_BATCH_ROWS};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// What one reading holds between its batches.
struct State {
    batches: PacketBatches,
    ctl: Control,
    /// Where the readers opened by the first call keep a Python exception (a file object's
    /// `read()` that raised, Ctrl-C on stdin) for the call that reads on.
    slot: Slot,
    /// The reader's warnings handed out so far.
    warned: usize,
}

/// The batches of one capture. Not for use from two threads at once: a second caller while a
/// batch is read gets `RuntimeError` (a generator refuses the same way).
#[pyclass(module = "burstcore._burstcore")]
pub struct PacketBatchReader {
    state: Mutex<Option<State>>,
}

/// Open `source` to read in batches of at most `batch_rows` rows: the columns, strictness,
/// progress, mmap, filter and time range as `read_table` takes them (one thread). Errors of the
/// input (not a capture, missing file, bad filter or columns) are raised here.
#[pyfunction]
#[pyo3(signature = (source, columns=None, strict=false, progress=None, mmap=None, filter=None, time_range=None, batch_rows=DEFAULT_BATCH_ROWS))]
#[allow(clippy::too_many_arguments)]
fn packet_batches<'py>(
    py: Python<'py>,
    source: Bound<'py, PyAny>,
    columns: Option<Vec<String>>,
    strict: bool,
    progress: Option<Py<PyAny>>,
    mmap: Option<bool>,
    filter: Option<String>,
    time_range: Span,
    batch_rows: usize,
) -> PyResult<PacketBatchReader> {
    guard(py, || {
        let filter = parse_filter(filter.as_deref())?;
        let ctl = Control::new(py, progress, None)?;
        let (mut readers, total) = open_all(py, std::slice::from_ref(&source), strict, mmap, 1)?;
        let reader = readers.pop().expect("one source");
        let batches = PacketBatches::new(
            reader,
            columns.as_deref(),
            crate::time_range(time_range),
            filter,
            batch_rows,
            total,
        )
        .map_err(errors::to_py)?;
        let ctl = Control { total, ..ctl };
        Ok(PacketBatchReader {
            state: Mutex::new(Some(State {
                batches,
                ctl,
                slot: source::current(),
                warned: 0,
            })),
        })
    })
}

/// A batch as Python gets it: its columns, and the reader's warnings met since the last batch.
type Batch = (Vec<arrow::ArrowColumn>, Vec<errors::WarningOut>);

#[pymethods]
impl PacketBatchReader {
    /// The next batch, or `None` once the capture has ended (or an error, raised by the call
    /// that met it, ended the reading).
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        let Ok(mut guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        let Some(state) = guarded.as_mut() else {
            return Ok(None);
        };
        let slot = state.slot.clone();
        guard_in(py, slot, || {
            let State {
                batches,
                ctl,
                warned,
                ..
            } = &mut *state;
            let res = py.detach(|| batches.next_batch(&mut |d| ctl.tick(d)));
            let table = res.map_err(|e| ctl.take(e))?;
            let all = batches.reader().warnings();
            let new: Vec<_> = all
                .get(*warned..)
                .unwrap_or_default()
                .iter()
                .map(|w| errors::warning(w, None))
                .collect();
            *warned = all.len();
            table.map(|t| Ok((table_columns(py, t)?, new))).transpose()
        })
    }

    /// Once the batches have ended: the warnings known only then (packets the capture records
    /// it lost) and what was read and left out, as `read_table`'s third item; the progress
    /// callback's last call.
    fn finish<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Vec<errors::WarningOut>, Bound<'py, PyDict>)> {
        let Ok(mut guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        let Some(state) = guarded.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "the batches were closed before they ended",
            ));
        };
        let slot = state.slot.clone();
        guard_in(py, slot, || {
            state.ctl.finish(py)?;
            let drops = state
                .batches
                .reader()
                .recorded_drops()
                .map(|w| errors::warning(&w, None))
                .into_iter()
                .collect();
            Ok((drops, accounting(py, state.batches.read())?))
        })
    }

    /// Stop reading: the input is closed and every buffer freed now, not when the object goes.
    /// Later calls of `next_batch` give `None`.
    fn close(&self) -> PyResult<()> {
        let Ok(mut guarded) = self.state.try_lock() else {
            return Err(busy());
        };
        drop(guarded.take());
        Ok(())
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.state.try_lock().is_ok_and(|s| s.is_none())
    }
}

fn busy() -> PyErr {
    PyRuntimeError::new_err(
        "the packet batches are being read by another thread: read one capture's batches from \
         one thread at a time",
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(packet_batches, m)?)?;
    m.add_class::<PacketBatchReader>()?;
    m.add("DEFAULT_BATCH_ROWS", DEFAULT_BATCH_ROWS)?;
    Ok(())
}
