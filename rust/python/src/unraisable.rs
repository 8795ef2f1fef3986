//! The `KeyboardInterrupt` polars drops inside `one_ctrl_c`. polars reads a data type object in
//! Rust by taking `str()` of its type's `__qualname__`; CPython's `str()` runs pending signal
//! handlers first, so a Ctrl-C landing there raises its `KeyboardInterrupt` inside polars, which
//! gives it to `sys.unraisablehook` and then raises a `TypeError` for the name (most calls) or,
//! in `register_io_source` (polars 2.1), reads the schema again and returns the frame: the
//! Ctrl-C lost without a trace. For the block, a hook of this module's keeps such a
//! `KeyboardInterrupt` of this thread's for `one_ctrl_c` to raise on the way out.
//!
//! Each block has its own hook, which gives everything else to the hook it replaced: another
//! thread's `KeyboardInterrupt` (signal handlers run on the main thread only; a thread of the
//! caller's may drop one of its own), any other exception, and everything once its block is
//! over. On the way out the hook it replaced is put back if the hook is still its own; one that
//! another thread set meanwhile (its own block, or a caller's) is left in place, and this one,
//! which it may call, passes everything on. Blocks end in the reverse order of their start on a
//! thread (a with statement; burstcore's never yield inside), so a per-thread stack tells each
//! end its hook. Written in Rust: a hook in Python would start a Python frame, where Python
//! looks for pending signals (see `OneCtrlC`).

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::{self, ThreadId};

thread_local! {
    /// This thread's blocks, innermost last.
    static BLOCKS: RefCell<Vec<Py<KeepCtrlC>>> = const { RefCell::new(Vec::new()) };
}

/// `sys.unraisablehook` for one block.
#[pyclass(module = "burstcore._burstcore", frozen)]
pub struct KeepCtrlC {
    previous: Py<PyAny>,
    thread: ThreadId,
    during: AtomicBool,
    /// The first `KeyboardInterrupt` kept (a second Ctrl-C before the block's end merges with
    /// it, as two SIGINTs do before Python's handler runs).
    kept: Mutex<Option<Py<PyAny>>>,
}

#[pymethods]
impl KeepCtrlC {
    fn __call__(&self, py: Python<'_>, unraisable: Bound<'_, PyAny>) -> PyResult<()> {
        if self.during.load(Ordering::SeqCst) && thread::current().id() == self.thread {
            let exc = unraisable.getattr("exc_value")?;
            if exc.is_instance_of::<PyKeyboardInterrupt>() {
                let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
                kept.get_or_insert_with(|| exc.unbind());
                return Ok(());
            }
        }
        self.previous.bind(py).call1((unraisable,))?;
        Ok(())
    }
}

/// `sys.__dict__` (what `PySys_GetObject` reads), kept: looking it up at each block, and making
/// the name a `str` there, cost more than the rest of the block.
static SYS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The hook as the block starts; `sys.__unraisablehook__` if a program deleted it (what
/// CPython calls then).
fn current_hook(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let sys = SYS.import(py, "sys", "__dict__")?;
    match sys.get_item(intern!(py, "unraisablehook"))? {
        Some(hook) => Ok(hook),
        None => sys
            .get_item(intern!(py, "__unraisablehook__"))?
            .ok_or_else(|| {
                PyRuntimeError::new_err("sys has neither unraisablehook nor __unraisablehook__")
            }),
    }
}

fn set_hook(hook: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = hook.py();
    SYS.import(py, "sys", "__dict__")?
        .set_item(intern!(py, "unraisablehook"), hook)
}

/// A block starts: its hook in place.
pub fn start(py: Python<'_>) -> PyResult<()> {
    let keeper = Py::new(
        py,
        KeepCtrlC {
            previous: current_hook(py)?.unbind(),
            thread: thread::current().id(),
            during: AtomicBool::new(true),
            kept: Mutex::new(None),
        },
    )?;
    set_hook(keeper.bind(py).as_any())?;
    BLOCKS.with_borrow_mut(|blocks| blocks.push(keeper));
    Ok(())
}

/// The innermost block of this thread ends: the hook it replaced back if its own is still in
/// place (past those of blocks already over, which only pass everything on, so that hooks do
/// not pile up when threads' blocks end out of order), and the `KeyboardInterrupt` it kept.
pub fn end(py: Python<'_>) -> PyResult<Option<PyErr>> {
    let Some(keeper) = BLOCKS.with_borrow_mut(|blocks| blocks.pop()) else {
        return Ok(None);
    };
    let keeper = keeper.into_bound(py);
    let this = keeper.get();
    this.during.store(false, Ordering::SeqCst);
    let kept = this.kept.lock().unwrap_or_else(|e| e.into_inner()).take();
    if current_hook(py)?.is(&keeper) {
        let mut previous = this.previous.bind(py).clone();
        while let Ok(over) = previous.cast::<KeepCtrlC>() {
            let over = over.get();
            if over.during.load(Ordering::SeqCst) {
                break;
            }
            let next = over.previous.bind(py).clone();
            previous = next;
        }
        set_hook(&previous)?;
    }
    Ok(kept.map(|k| PyErr::from_value(k.into_bound(py))))
}
