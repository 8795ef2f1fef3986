//! Core errors as typed Python exceptions, and the guard that keeps panics out of Python.

use burstcore::{Error, ErrorKind, Warning};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(
    burstcore,
    CaptureError,
    PyValueError,
    "A capture could not be read; `offset` (a byte offset, or None) and `reason` say where and why, `kind` what went wrong in one word (\"truncated\", \"corrupt\", \"limit_exceeded\", ...: the error's subclass, for a program), and `input` in which of several inputs (None for one)."
);
create_exception!(
    burstcore,
    NotACaptureError,
    CaptureError,
    "The input is not a pcap or pcapng capture."
);
create_exception!(
    burstcore,
    UnsupportedCaptureError,
    CaptureError,
    "A capture format version this reader does not support."
);
create_exception!(
    burstcore,
    TruncatedCaptureError,
    CaptureError,
    "The capture ends inside a block or record."
);
create_exception!(
    burstcore,
    CorruptCaptureError,
    CaptureError,
    "A length or field in the capture cannot be right."
);
create_exception!(
    burstcore,
    UndeclaredInterfaceError,
    CaptureError,
    "A packet names an interface its section never declared."
);
create_exception!(
    burstcore,
    LimitExceededError,
    CaptureError,
    "A documented limit was exceeded; `limit` says which kind: \"capture\" (the capture's structure, at `offset`), \"held_packets\" (packets held in memory at once) or \"result\" (the size of the result)."
);
create_exception!(
    burstcore,
    DecompressionError,
    CaptureError,
    "The gzip or zstd stream around the capture is damaged."
);
create_exception!(
    burstcore,
    TimestampRangeError,
    CaptureError,
    "A timestamp does not fit in 64-bit nanoseconds."
);
create_exception!(
    burstcore,
    OutOfOrderError,
    CaptureError,
    "A packet arrived later than the reorder horizon allows."
);
create_exception!(
    burstcore,
    InternalError,
    PyRuntimeError,
    "A bug in burstcore (please report it with the input that caused it)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CaptureError", py.get_type::<CaptureError>())?;
    m.add("NotACaptureError", py.get_type::<NotACaptureError>())?;
    m.add(
        "UnsupportedCaptureError",
        py.get_type::<UnsupportedCaptureError>(),
    )?;
    m.add(
        "TruncatedCaptureError",
        py.get_type::<TruncatedCaptureError>(),
    )?;
    m.add("CorruptCaptureError", py.get_type::<CorruptCaptureError>())?;
    m.add(
        "UndeclaredInterfaceError",
        py.get_type::<UndeclaredInterfaceError>(),
    )?;
    m.add("LimitExceededError", py.get_type::<LimitExceededError>())?;
    m.add("DecompressionError", py.get_type::<DecompressionError>())?;
    m.add("TimestampRangeError", py.get_type::<TimestampRangeError>())?;
    m.add("OutOfOrderError", py.get_type::<OutOfOrderError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}

pub fn to_py(e: Error) -> PyErr {
    to_py_named(e, None)
}

/// As [`to_py`], for an error of the file at `path`: an `OSError` gets it as its `filename`.
pub fn to_py_at(e: Error, path: &std::path::Path) -> PyErr {
    to_py_named(e, Some(path))
}

fn to_py_named(e: Error, path: Option<&std::path::Path>) -> PyErr {
    let msg = e.to_string();
    // A file name or a capture's text in the message is shown escaped, as the CLI shows it:
    // tracebacks reach terminals. `input` and `reason` keep the text as it was, for programs.
    let shown = burstcore::printable::printable(&msg).into_owned();
    // A read stopped by a Python exception (Ctrl-C on stdin, a file object's read() that
    // raised): that exception, with where the capture stopped as a note.
    let raised = e
        .io_error()
        .and_then(std::io::Error::get_ref)
        .is_some_and(|inner| inner.is::<crate::source::Raised>());
    if raised {
        if let Some(err) = crate::source::take_raised() {
            Python::attach(|py| {
                if !err.is_instance_of::<PyKeyboardInterrupt>(py) {
                    let _ = err
                        .value(py)
                        .call_method1("add_note", (format!("burstcore: {shown}"),));
                }
            });
            return err;
        }
    }
    let err = match e.kind {
        ErrorKind::Io => os_error(&e, &msg, path),
        ErrorKind::InvalidArgument => return PyValueError::new_err(shown),
        ErrorKind::Interrupted => return PyKeyboardInterrupt::new_err(shown),
        ErrorKind::NotACapture => NotACaptureError::new_err(shown),
        ErrorKind::UnsupportedVersion => UnsupportedCaptureError::new_err(shown),
        ErrorKind::Truncated => TruncatedCaptureError::new_err(shown),
        ErrorKind::Corrupt => CorruptCaptureError::new_err(shown),
        ErrorKind::UndeclaredInterface => UndeclaredInterfaceError::new_err(shown),
        ErrorKind::LimitExceeded => LimitExceededError::new_err(shown),
        ErrorKind::Decompression => DecompressionError::new_err(shown),
        ErrorKind::TimestampOutOfRange => TimestampRangeError::new_err(shown),
        ErrorKind::OutOfOrder => OutOfOrderError::new_err(shown),
        // PacketsLost is only ever a warning, and a kind added later is still one of the
        // capture: the base class, should one arrive here.
        _ => CaptureError::new_err(shown),
    };
    set_attributes(&err, &e);
    err
}

/// An `OSError` as Python's own: with the OS's error number, Python makes it the subclass that
/// `except FileNotFoundError` / `PermissionError` / `IsADirectoryError` expects, and sets
/// `errno`. `strerror` is the message (it says what failed, where, and what to do: the OS's
/// text is in it), as for the files that `burstcore` finds missing before reading; `filename`
/// the file, where known. Without an OS error (a file that shrank under its mapping): a plain
/// `OSError` with the message.
fn os_error(e: &Error, msg: &str, path: Option<&std::path::Path>) -> PyErr {
    let shown = |text: &str| burstcore::printable::printable(text).into_owned();
    match (e.io_error().and_then(std::io::Error::raw_os_error), path) {
        (Some(errno), Some(path)) => {
            // Python shows `filename` after `strerror` ("[Errno 2] …: 'x.pcap'", escaped by
            // repr): a message that begins with the path would show it twice.
            let strerror = msg
                .strip_prefix(&format!("{}: ", path.display()))
                .unwrap_or(msg);
            PyOSError::new_err((errno, shown(strerror), path.as_os_str().to_os_string()))
        }
        (Some(errno), None) => PyOSError::new_err((errno, shown(msg))),
        (None, _) => PyOSError::new_err(shown(msg)),
    }
}

fn set_attributes(err: &PyErr, e: &Error) {
    Python::attach(|py| {
        let v = err.value(py);
        // Attributes for programs: where (byte offset in the decompressed stream) and why.
        let _ = v.setattr("offset", e.offset);
        let _ = v.setattr("reason", e.reason.as_str());
        let _ = v.setattr("kind", e.kind.id());
        // Which of several inputs read at once, or None.
        let _ = v.setattr("input", e.input.as_deref());
        if e.kind == ErrorKind::LimitExceeded {
            // Which family of limit ("capture", "held_packets", "result"): what a program (the
            // command line among them) goes by, rather than the message's words.
            let _ = v.setattr("limit", e.limit.map(burstcore::Limit::name));
        }
    });
}

/// A core warning as Python gets it, to issue as a `CaptureWarning` with these attributes:
/// `(message, kind, offset, input, limit)`. The message is the text a warning always had; the
/// others say the same for a program, as the attributes of a `CaptureError` do.
pub type WarningOut = (
    String,
    &'static str,
    Option<u64>,
    Option<String>,
    Option<&'static str>,
);

/// `w` as Python gets it; `input`, the label of its input when it is one of several read at
/// once (the message then names it too).
pub fn warning(w: &Warning, input: Option<String>) -> WarningOut {
    let message = match &input {
        Some(label) => w.in_input(label),
        None => w.to_string(),
    };
    let message = burstcore::printable::printable(&message).into_owned();
    (
        message,
        w.kind.id(),
        w.offset,
        input,
        w.limit.map(burstcore::Limit::name),
    )
}

/// Run a binding body; a panic becomes `InternalError` instead of crossing into Python. The
/// body is one call, whose readers keep a Python exception for it alone
/// ([`crate::source::in_slot`]).
pub fn guard<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    guard_in(py, crate::source::Slot::default(), f)
}

/// [`guard`] for a call that goes on reading what an earlier call opened: its readers keep
/// their exceptions in that call's `slot`.
pub fn guard_in<T>(
    _py: Python<'_>,
    slot: crate::source::Slot,
    f: impl FnOnce() -> PyResult<T>,
) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(|| crate::source::in_slot(slot, f))) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(InternalError::new_err(format!(
                "internal error in burstcore: {what}; please report it with the input that caused it"
            )))
        }
    }
}
