//! Ctrl-C seen by a read that runs on a thread Python did not start (polars' streaming engine
//! reads a `scan_packets` frame on one of its own). Python runs signal handlers on the main
//! thread only, so `check_signals` there never raises: a read of a pipe or stdin with no data
//! coming waited for ever, and polars, waiting for the read, with it. A SIGINT handler chained
//! before Python's (and polars') counts the signals; such a read stops with
//! `KeyboardInterrupt` once the count moved since it began, when Python's own SIGINT handler
//! is the default one (which would have raised it on the main thread). A thread of Python's
//! own (`threading.Thread`) is left as it was: Ctrl-C goes to the main thread, which can stop
//! it as it sees fit.

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
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
