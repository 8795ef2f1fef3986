//! Ctrl-C seen by a read that runs on a thread Python did not start (polars' streaming engine
//! reads a `scan_packets` frame on one of its own). Python runs signal handlers on the main
//! thread only, so `check_signals` there never raises: a read of a pipe or stdin with no data
//! coming waited for ever, and polars, waiting for the read, with it. A SIGINT handler chained
//! before Python's (and polars') counts the signals; such a read stops with
//! `KeyboardInterrupt` once the count moved since it began, when Python's own SIGINT handler
//! is the default one (which would have raised it on the main thread). A thread of Python's
//! own (`threading.Thread`) is left as it was: Ctrl-C goes to the main thread, which can stop
//! it as it sees fit.

use crate::unraisable;
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};
use std::sync::atomic::{AtomicU64, Ordering};

static SIGNALS: AtomicU64 = AtomicU64::new(0);

/// The signals counted so far: what a read started at. On a thread Python did not start,
/// counting starts here (the handler is put in then). Its error is the `KeyboardInterrupt` of
/// a SIGINT that came since the last look: telling the thread runs Python code
/// (`threading.current_thread`), where Python runs the signal's handler; dropped, that Ctrl-C
/// was lost and the scan ran to its end.
pub fn mark(py: Python<'_>) -> PyResult<u64> {
    #[cfg(unix)]
    if is_foreign_thread(py)? {
        chained::install();
    }
    #[cfg(not(unix))]
    let _ = py;
    Ok(SIGNALS.load(Ordering::SeqCst))
}

/// `r.ok()` for a Python call whose failure only means "unknown" (a file object's `tell()`),
/// but a `KeyboardInterrupt` is noted again as a SIGINT that came, to be raised at the next
/// look for signals (the scan's, at its end at the latest): a SIGINT whose handler ran inside
/// that call raised it there, and dropped with the failure, the Ctrl-C was lost.
pub fn ok_keeping_ctrl_c<T>(py: Python<'_>, r: PyResult<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                // SAFETY: called with the GIL held (`py`); it only notes a SIGINT as arrived.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
            }
            None
        }
    }
}

/// `with one_ctrl_c:` around burstcore's own polars calls. polars counts SIGINT itself and, for
/// one landing while it computes, raises its own `KeyboardInterrupt` yet leaves Python's signal
/// pending: Python raised it again at the caller's next line, often inside its
/// `except KeyboardInterrupt:`. On the way out with a `KeyboardInterrupt`, that pending signal is
/// handled here and its `KeyboardInterrupt` dropped: the one already raised stands for it. A
/// second Ctrl-C is kept unless it came in the moment between polars' raise and this exit (a
/// few microseconds of unwinding), where it merges with the first as two SIGINTs do in Python
/// before its handler runs.
/// A `KeyboardInterrupt` of this thread's that polars dropped in the block (to
/// `sys.unraisablehook`, see `unraisable`) is raised on the way out.
/// `__enter__` and `__exit__` are these Rust methods, no Python frame: Python looks for pending
/// signals when a Python function starts, so one written in Python would raise the second
/// there. A with statement adds no frame to the stack, so warnings' `stacklevel` stays as it
/// was.
#[pyclass(module = "burstcore._burstcore", frozen)]
pub struct OneCtrlC;

#[pymethods]
impl OneCtrlC {
    fn __enter__(&self, py: Python<'_>) -> PyResult<()> {
        unraisable::start(py)
    }

    /// Never suppresses a `KeyboardInterrupt`. A SIGINT handler of the caller's own is run here
    /// rather than at the next line, and what it raises, other than `KeyboardInterrupt`, is
    /// raised. polars' panic on a `KeyboardInterrupt` it met in Python code it called (reading
    /// a frame's dtypes, say) becomes that `KeyboardInterrupt`: no panic reaches the caller.
    /// So does polars' `TypeError` for a data type it could not name because a Ctrl-C's
    /// `KeyboardInterrupt` was raised, and dropped, as it read the name (`ctrl_c_lost_naming`).
    /// A `KeyboardInterrupt` polars dropped is raised after a block that ended normally, or
    /// for whatever other exception ended it (its `__cause__`): that Ctrl-C came first.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let kept = unraisable::end(py)?;
        let Some(exc_type) = exc_type.and_then(|t| t.cast_into::<PyType>().ok()) else {
            return kept.map_or(Ok(false), Err);
        };
        if exc_type.is_subclass_of::<PyKeyboardInterrupt>()? {
            forget_pending_sigint(py)?;
            return Ok(false);
        }
        if let Some(kept) = kept {
            if exc_type.name()? == "PanicException" {
                forget_pending_sigint(py)?;
            }
            kept.set_cause(py, exc.map(PyErr::from_value));
            return Err(kept);
        }
        if exc_type.is(py.get_type::<PyTypeError>()) {
            if let Some(exc) = exc.filter(|e| ctrl_c_lost_naming(e).unwrap_or(false)) {
                if only_ctrl_c_raises(py)? {
                    let e = PyKeyboardInterrupt::new_err("Ctrl-C while polars read a data type");
                    e.set_cause(py, Some(PyErr::from_value(exc)));
                    return Err(e);
                }
            }
            return Ok(false);
        }
        if exc_type.name()? == "PanicException" {
            if let Some(exc) = exc {
                if exc.str()?.to_str()?.contains("KeyboardInterrupt") {
                    forget_pending_sigint(py)?;
                    let e = PyKeyboardInterrupt::new_err("Ctrl-C while polars built a frame");
                    e.set_cause(py, Some(PyErr::from_value(exc)));
                    return Err(e);
                }
            }
        }
        Ok(false)
    }
}

/// polars' `TypeError` when its Rust code read a data type object (`Expr.cast`'s, `Series.cast`'s)
/// and `str()` of the type's `__qualname__` failed: CPython's `PyObject_Str` runs pending signal
/// handlers first, so a SIGINT landing just before raised its `KeyboardInterrupt` there, which
/// pyo3 wrote to `sys.unraisablehook` ("Exception ignored in: 'DataTypeClass'") and polars
/// replaced with this message; neither `__context__` nor `__cause__` keeps it (about 1 SIGINT in
/// 200 near the end of a short scan). The message, whole: `str()` of a polars type's qualname,
/// a plain `str`, fails for no other reason. polars 1.x converts the type as a function's
/// argument, and pyo3 puts its name in front: "argument 'dtype': ...". Read from `args`:
/// `str()` would look for signals.
const LOST_NAMING: &str = "'<unprintable str object>' is not a Polars data type";

fn ctrl_c_lost_naming(exc: &Bound<'_, PyAny>) -> PyResult<bool> {
    let args = exc.getattr("args")?.cast_into::<PyTuple>()?;
    if args.len() != 1 {
        return Ok(false);
    }
    Ok(is_lost_naming(
        args.get_item(0)?.cast_into::<PyString>()?.to_str()?,
    ))
}

fn is_lost_naming(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("argument '") else {
        return message == LOST_NAMING;
    };
    rest.split_once("': ").is_some_and(|(name, m)| {
        m == LOST_NAMING
            && !name.is_empty()
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// Whether a signal handler that raised can only have been a Ctrl-C's: Python's own SIGINT
/// handler is the default one (it raises `KeyboardInterrupt`) and no other signal has a handler
/// in Python (one raising, say, `TimeoutError` for SIGALRM would be lost the same way, and is
/// not a Ctrl-C). `_signal`'s functions, not `signal`'s: those are Python functions, and
/// Python looks for pending signals as one starts (see `OneCtrlC`).
fn only_ctrl_c_raises(py: Python<'_>) -> PyResult<bool> {
    let signal = py.import("_signal")?;
    let sigint = signal.getattr("SIGINT")?;
    let getsignal = signal.getattr("getsignal")?;
    if !getsignal
        .call1((&sigint,))?
        .is(&signal.getattr("default_int_handler")?)
    {
        return Ok(false);
    }
    for sig in signal.call_method0("valid_signals")?.try_iter()? {
        let sig = sig?;
        if !sig.eq(&sigint)? && getsignal.call1((&sig,))?.is_callable() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Python's pending SIGINT, if any, handled now with its `KeyboardInterrupt` dropped.
fn forget_pending_sigint(py: Python<'_>) -> PyResult<()> {
    match py.check_signals() {
        Err(e) if !e.is_instance_of::<PyKeyboardInterrupt>(py) => Err(e),
        _ => Ok(()),
    }
}

/// On a thread Python did not start, with Python's default SIGINT handler: the
/// `KeyboardInterrupt` of a SIGINT that came after `mark`.
pub fn check_foreign_thread(py: Python<'_>, mark: u64) -> PyResult<()> {
    if SIGNALS.load(Ordering::SeqCst) == mark || !is_foreign_thread(py)? {
        return Ok(());
    }
    let signal = py.import("signal")?;
    let handler = signal.call_method1("getsignal", (signal.getattr("SIGINT")?,))?;
    if handler.is(&signal.getattr("default_int_handler")?) {
        return Err(PyKeyboardInterrupt::new_err(
            "Ctrl-C (SIGINT) while reading on a thread Python did not start (polars', say)",
        ));
    }
    Ok(())
}

/// Whether this thread was started outside Python (threading gives it a `_DummyThread`): a
/// Rust or C thread pool's, where no signal handler of Python's ever runs.
fn is_foreign_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    let current = threading.call_method0("current_thread")?;
    match threading.getattr("_DummyThread") {
        Ok(dummy) => current.is_instance(&dummy),
        Err(_) => Ok(!current.is(&threading.call_method0("main_thread")?)),
    }
}

#[cfg(unix)]
mod chained {
    use super::SIGNALS;
    use std::sync::atomic::Ordering;
    use std::sync::{Once, OnceLock};

    /// The action this handler came before, called after counting: Python's (or polars',
    /// which calls Python's in turn) still notes the signal as it did.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    static INSTALL: Once = Once::new();

    extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        SIGNALS.fetch_add(1, Ordering::SeqCst);
        let Some(prev) = PREVIOUS.get() else { return };
        let h = prev.sa_sigaction;
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: an SA_SIGINFO action's handler has this signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            // SAFETY: a plain action's handler takes the signal number only.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }

    /// Put the counting handler before the one there, once, if there is a handler function
    /// there (not the default action nor "ignore", which it would change).
    pub fn install() {
        INSTALL.call_once(|| {
            // SAFETY: a zeroed sigaction is a valid output buffer; a null new action only reads.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            if unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) } != 0
                || old.sa_sigaction == libc::SIG_DFL
                || old.sa_sigaction == libc::SIG_IGN
            {
                return;
            }
            if PREVIOUS.set(old).is_err() {
                return;
            }
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                on_sigint;
            let new = libc::sigaction {
                sa_sigaction: handler as libc::sighandler_t,
                sa_flags: old.sa_flags | libc::SA_SIGINFO,
                ..old
            };
            // SAFETY: `new` is the action read, its handler this function's and its flags
            // told that it takes three arguments.
            unsafe {
                libc::sigaction(libc::SIGINT, &new, std::ptr::null_mut());
            }
        });
    }
}
