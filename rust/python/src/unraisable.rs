//! The `KeyboardInterrupt` polars drops inside `one_ctrl_c`. polars reads a data type object in
//! Rust by taking `str()` of its type's `__qualname__`; CPython's `str()` runs pending signal
//! handlers first, so a Ctrl-C landing there raises its `KeyboardInterrupt` inside polars, which
//! gives it to `sys.unraisablehook` and then raises a `TypeError` for the name: a caller that
//! takes that `TypeError` for something else (as `scan_packets` once did, for a polars without
//! `explain_name`, and made its frame again) loses the Ctrl-C without a trace, and a Python
//! handler of another signal makes the message no proof of a Ctrl-C (see
//! `only_ctrl_c_raises`). While blocks are open, a hook of this module's keeps such a
//! `KeyboardInterrupt` for the innermost open block of the thread that dropped it, for
//! `one_ctrl_c` to raise on the way out.
//!
//! One hook for all threads' blocks, put in when none of its kind is in place and taken out when
//! the last block of the process ends, if it is still there: a hook per block, each calling the
//! one it replaced, made a chain that grew by one for each block ending under another thread's
//! (two threads' blocks overlapping in turn: 2,000 of them and an unraisable exception raised
//! `RecursionError` in the chain, lost to the program's hook). It gives everything else to the
//! hook it replaced: a `KeyboardInterrupt` of a thread with no block open (signal handlers run on
//! the main thread only; a thread of the caller's may drop one of its own), any other exception,
//! and everything once no block is open. A hook the program sets meanwhile is left in place (it
//! gets what it is given; one calling the hook it replaced reaches this one). A hook deleted or
//! set to `None` (CPython then writes the exception itself) is called as
//! `sys.__unraisablehook__`, and deleted or `None` again at the end. Blocks end in the reverse
//! order of their start on a thread (a with statement; burstcore's never yield inside), so a
//! per-thread stack holds what each keeps. Written in Rust: a hook in Python would start a
//! Python frame, where Python looks for pending signals (see `OneCtrlC`).

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// This thread's open blocks, innermost last, each with the first `KeyboardInterrupt` kept
    /// for it (a second Ctrl-C before the block's end merges with it, as two SIGINTs do before
    /// Python's handler runs).
    static BLOCKS: RefCell<Vec<Option<Py<PyAny>>>> = const { RefCell::new(Vec::new()) };
}

/// Blocks open on all threads: the hook is taken out when the last ends.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// `sys.unraisablehook` while blocks are open.
#[pyclass(module = "burstcore._burstcore", frozen)]
pub struct KeepCtrlC {
    /// The hook replaced; `None` where `sys` had none.
    previous: Option<Py<PyAny>>,
}

#[pymethods]
impl KeepCtrlC {
    fn __call__(&self, py: Python<'_>, unraisable: Bound<'_, PyAny>) -> PyResult<()> {
        let exc = unraisable.getattr("exc_value")?;
        if exc.is_instance_of::<PyKeyboardInterrupt>() {
            // `try_with`: a `__del__` run as the thread ends may find its blocks gone.
            let kept = BLOCKS.try_with(|blocks| match blocks.borrow_mut().last_mut() {
                Some(slot) => {
                    slot.get_or_insert_with(|| exc.clone().unbind());
                    true
                }
                None => false,
            });
            if kept == Ok(true) {
                return Ok(());
            }
        }
        match self.previous.as_ref().map(|p| p.bind(py)) {
            Some(hook) if !hook.is_none() => hook.call1((unraisable,))?,
            _ => sys(py)?
                .as_any()
                .get_item(intern!(py, "__unraisablehook__"))?
                .call1((unraisable,))?,
        };
        Ok(())
    }
}

/// `sys.__dict__` (what `PySys_GetObject` reads), kept: looking it up at each block, and making
/// the name a `str` there, cost more than the rest of the block.
static SYS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn sys(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    SYS.import(py, "sys", "__dict__")
}

/// A block starts: the hook in place unless one of this module's is.
pub fn start(py: Python<'_>) -> PyResult<()> {
    let sys = sys(py)?;
    let name = intern!(py, "unraisablehook");
    let current = sys.get_item(name)?;
    if !current
        .as_ref()
        .is_some_and(|h| h.is_instance_of::<KeepCtrlC>())
    {
        let keeper = KeepCtrlC {
            previous: current.map(Bound::unbind),
        };
        sys.set_item(name, Py::new(py, keeper)?)?;
    }
    BLOCKS.with_borrow_mut(|blocks| blocks.push(None));
    OPEN.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

/// The innermost block of this thread ends: the `KeyboardInterrupt` kept for it; after the last
/// block of all, the hook replaced back if one of this module's is still in place.
pub fn end(py: Python<'_>) -> PyResult<Option<PyErr>> {
    let Some(kept) = BLOCKS.with_borrow_mut(|blocks| blocks.pop()) else {
        return Ok(None);
    };
    let kept = kept.map(|k| PyErr::from_value(k.into_bound(py)));
    if OPEN.fetch_sub(1, Ordering::SeqCst) == 1 {
        let sys = sys(py)?;
        let name = intern!(py, "unraisablehook");
        if let Some(current) = sys.get_item(name)? {
            if let Ok(keeper) = current.cast::<KeepCtrlC>() {
                match &keeper.get().previous {
                    Some(previous) => sys.set_item(name, previous)?,
                    None => sys.del_item(name)?,
                }
            }
        }
    }
    Ok(kept)
}
