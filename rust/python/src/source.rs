//! What a Python caller may pass as a capture: a path (`-` for stdin), bytes, or a binary file
//! object (anything with `.read(n)`), turned into a core `Input`.

use crate::errors::{to_py, to_py_at};
use crate::sigint::ok_keeping_ctrl_c;
use burstcore::input::{self, Input};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::cell::RefCell;
use std::io::{Cursor, Read};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A Python file object read from Rust: each read takes the GIL briefly.
struct PyFileReader {
    file: Py<PyAny>,
    /// Where an exception of `read()` waits for the call that made this reader.
    slot: Slot,
    /// Bytes a `read(n)` returned beyond the n asked for (some file-likes over-deliver); served
    /// first on the next read so nothing is lost.
    pending: Vec<u8>,
    pending_at: usize,
}

impl Read for PyFileReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending_at < self.pending.len() {
            let n = (self.pending.len() - self.pending_at).min(buf.len());
            buf[..n].copy_from_slice(&self.pending[self.pending_at..self.pending_at + n]);
            self.pending_at += n;
            return Ok(n);
        }
        Python::attach(|py| {
            let chunk = {
                #[cfg(unix)]
                let _interruptible = interruptible::Guard::new();
                self.file.call_method1(py, "read", (buf.len(),))
            }
            .map_err(|e| {
                let what = format!("the file object's read() {RAISED}: {e}");
                raised(&self.slot, e);
                std::io::Error::other(Raised(what))
            })?;
            let chunk = chunk.bind(py);
            let copied;
            let bytes: &[u8] = if let Ok(b) = chunk.cast::<PyBytes>() {
                b.as_bytes()
            } else if chunk.is_none() {
                return Err(std::io::Error::other(
                    "the file object's read() returned None (a non-blocking file with no data \
                     ready): pass a blocking file object",
                ));
            } else if chunk.is_instance_of::<PyString>() {
                return Err(std::io::Error::other(
                    "the file object returned text, not bytes: open the capture in binary mode ('rb')",
                ));
            } else if let Ok(b) = pyo3::buffer::PyBuffer::<u8>::get(chunk) {
                // bytearray, memoryview, numpy bytes: anything with the buffer protocol.
                copied = b.to_vec(py).map_err(std::io::Error::other)?;
                &copied
            } else {
                return Err(std::io::Error::other(format!(
                    "the file object's read() returned {}, not bytes",
                    chunk
                        .get_type()
                        .name()
                        .map_or("?".into(), |n| n.to_string())
                )));
            };
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            if bytes.len() > n {
                self.pending = bytes[n..].to_vec();
                self.pending_at = 0;
            }
            Ok(n)
        })
    }
}

/// A `bytes` object read in place, without a copy (a capture of gigabytes held in memory would
/// otherwise be copied with the GIL held): its contents never change, and the reference held
/// here keeps them alive.
struct BytesReader {
    _owner: Py<PyBytes>,
    data: *const u8,
    len: usize,
    at: usize,
}

// SAFETY: the pointer is to the immutable contents of a `bytes` object kept alive by `_owner`
// (a `Py`, which may be sent between threads); reading them needs no GIL.
unsafe impl Send for BytesReader {}

impl BytesReader {
    fn new(b: &Bound<'_, PyBytes>) -> Self {
        let data = b.as_bytes();
        BytesReader {
            _owner: b.clone().unbind(),
            data: data.as_ptr(),
            len: data.len(),
            at: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

impl Read for BytesReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: see the `Send` impl: `len` bytes at `data`, alive and unchanged.
        let all = unsafe { std::slice::from_raw_parts(self.data, self.len) };
        let n = buf.len().min(self.len - self.at);
        buf[..n].copy_from_slice(&all[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Where the Python exception waits that stopped a read from Python's side: a file object's
/// `read()` that raised, or Ctrl-C while waiting on standard input ([`Stdin`]). The core sees
/// an I/O error whose payload is [`Raised`]; [`crate::errors::to_py`] then raises this
/// exception itself, so the caller gets `KeyboardInterrupt` or their own error, not an
/// `OSError` about it.
///
/// One slot per binding call ([`in_slot`]), which its readers hold: one for the whole process
/// gave a call another thread's exception when two failed at once (about 1 in 100 calls of 8
/// threads whose file objects raised), and kept an exception no call took (Ctrl-C while a
/// late packet was looked for again) for the next call that failed.
pub type Slot = Arc<Mutex<Option<PyErr>>>;

thread_local! {
    /// The slot of the binding call running on this thread; calls nest when a progress
    /// callback or a file object's `read()` calls burstcore again.
    static CALL: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

/// Run one binding call with `slot` (a new one, or that of the call that opened the readers it
/// goes on reading: the batches of `iter_packets`, each read by a call of its own), the caller's
/// put back when it returns (or panics).
pub fn in_slot<T>(slot: Slot, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Slot>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CALL.with(|c| *c.borrow_mut() = outer);
        }
    }
    let outer = CALL.with(|c| c.borrow_mut().replace(slot));
    let _restore = Restore(outer);
    f()
}

/// The slot of the call running on this thread, for a reader it opens.
pub fn current() -> Slot {
    CALL.with(|c| c.borrow().clone()).unwrap_or_default()
}

/// Said by the I/O errors behind which a Python exception waits in their call's slot.
pub const RAISED: &str = "raised a Python exception";

/// The payload of those I/O errors, which [`crate::errors::to_py`] finds below the core's error
/// ([`burstcore::Error::io_error`]): by its type, not by words a message might also hold.
#[derive(Debug)]
pub struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// Keep `e` for [`take_raised`] (the first one, if several reads fail before it is taken).
fn raised(slot: &Slot, e: PyErr) {
    if let Ok(mut slot) = slot.lock() {
        slot.get_or_insert(e);
    }
}

/// The exception kept by a read of the current call that failed on Python's side, if any.
pub fn take_raised() -> Option<PyErr> {
    let slot = CALL.with(|c| c.borrow().clone())?;
    let mut slot = slot.lock().ok()?;
    slot.take()
}

/// While a file object's `read()` runs: SIGINT without `SA_RESTART`, so that Ctrl-C stops a
/// `read()` that waits (a socket, a pipe, a lock). polars, imported with burstcore, installs its
/// SIGINT handler with `SA_RESTART` (pola-rs/polars#21739): the kernel then resumes the
/// waiting system call after Python's handler has noted the signal, and Python, which checks
/// for signals when a call returns `EINTR`, never raises `KeyboardInterrupt`. The flag is put
/// back once the last such `read()` of any thread returns, unless the handler changed meanwhile.
#[cfg(unix)]
mod interruptible {
    use std::sync::Mutex;

    /// How many `read()`s run, and the SIGINT action to put back after the last.
    static STATE: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));

    fn action() -> Option<libc::sigaction> {
        // SAFETY: a zeroed sigaction is a valid output buffer; a null new action only reads.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) == 0).then_some(old)
        }
    }

    fn set(a: &libc::sigaction) {
        // SAFETY: `a` is an action read from the kernel, its flags changed only.
        unsafe {
            libc::sigaction(libc::SIGINT, a, std::ptr::null_mut());
        }
    }

    pub struct Guard;

    impl Guard {
        pub fn new() -> Self {
            if let Ok(mut state) = STATE.lock() {
                if state.0 == 0 {
                    state.1 = action().filter(|a| a.sa_flags & libc::SA_RESTART != 0);
                    if let Some(old) = state.1 {
                        set(&libc::sigaction {
                            sa_flags: old.sa_flags & !libc::SA_RESTART,
                            ..old
                        });
                    }
                }
                state.0 += 1;
            }
            Guard
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            let Ok(mut state) = STATE.lock() else { return };
            state.0 = state.0.saturating_sub(1);
            if state.0 > 0 {
                return;
            }
            if let (Some(old), Some(now)) = (state.1.take(), action()) {
                if now.sa_sigaction == old.sa_sigaction {
                    set(&libc::sigaction {
                        sa_flags: now.sa_flags | libc::SA_RESTART,
                        ..now
                    });
                }
            }
        }
    }
}

/// Standard input (fd 0), read with the GIL released, that stops on Ctrl-C even while no data
/// comes (a live capture on a quiet link). A blocked read would not see the signal: it may be
/// delivered to any thread (polars starts several), so the read waits for data a tenth of a
/// second at a time and asks Python's handlers in between. A scan otherwise looks at signals
/// between packets only.
struct Stdin(
    #[cfg_attr(not(unix), allow(dead_code))] Slot,
    #[cfg_attr(not(unix), allow(dead_code))] u64,
);

impl Read for Stdin {
    #[cfg(unix)]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        poll_read(0, buf, "stdin", &self.0, self.1)
    }

    #[cfg(not(unix))]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::io::stdin().lock().read(buf)
    }
}

/// A named pipe, `<(...)` or device given by path, read as [`Stdin`] is: opened without
/// waiting for a writer, and read only once `poll` says there is data or the writer left.
#[cfg(unix)]
struct Polled(std::fs::File, Slot, u64);

#[cfg(unix)]
impl Read for Polled {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd;
        poll_read(self.0.as_raw_fd(), buf, "a named pipe", &self.1, self.2)
    }
}

/// Read `fd`, waiting for data a tenth of a second at a time and asking Python's signal
/// handlers in between (see [`Stdin`]); on a thread Python did not start, where they never
/// run, whether a SIGINT came since `signals` ([`crate::sigint`]).
#[cfg(unix)]
fn poll_read(
    fd: i32,
    buf: &mut [u8],
    what: &str,
    slot: &Slot,
    signals: u64,
) -> std::io::Result<usize> {
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the call's duration.
        let ready = unsafe { libc::poll(&mut p, 1, 100) };
        if ready > 0 {
            // SAFETY: `buf` is valid for writes of its length. Read directly, unbuffered, so
            // that no byte waits in a buffer while poll says nothing is left to read.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = std::io::Error::last_os_error();
            if !matches!(
                e.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
            ) {
                return Err(e);
            }
        } else if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let asked = Python::attach(|py| {
            py.check_signals()?;
            crate::sigint::check_foreign_thread(py, signals)
        });
        if let Err(e) = asked {
            raised(slot, e);
            return Err(std::io::Error::other(Raised(format!(
                "waiting on {what}, a signal handler {RAISED}"
            ))));
        }
    }
}

/// A path that is neither a regular file nor a folder (a named pipe, `<(...)`, a device),
/// opened without blocking: opening a pipe would wait for a writer, and reading it for data,
/// where Ctrl-C is not seen.
#[cfg(unix)]
fn open_polled(path: &std::path::Path) -> Option<std::io::Result<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() || meta.is_dir() {
        return None;
    }
    Some(
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path),
    )
}

/// What a seekable file object holds from where it stands to its end, for progress' total (an
/// opened file, a BytesIO); `None` for one that cannot seek to its end (a pipe, a socket, a
/// gzip.GzipFile), whose length is unknown until read.
fn remaining(obj: &Bound<'_, PyAny>) -> Option<u64> {
    let ok = |r| ok_keeping_ctrl_c(obj.py(), r);
    let seekable = ok(obj.call_method0("seekable"))?;
    if !ok_keeping_ctrl_c(obj.py(), seekable.is_truthy())? {
        return None;
    }
    let at: u64 = ok_keeping_ctrl_c(obj.py(), ok(obj.call_method0("tell"))?.extract())?;
    let end = ok(obj.call_method1("seek", (0, 2)))
        .and_then(|e| ok_keeping_ctrl_c(obj.py(), e.extract::<u64>()));
    // Back where it stood, whatever the seek to the end did: a failed seek back leaves the
    // object where the read would start wrongly, which the read then reports.
    ok(obj.call_method1("seek", (at, 0)))?;
    end?.checked_sub(at)
}

/// Where a binary file object that can seek back stands (`seekable()` true, `tell()` answers):
/// where a read of it starts, to read it again from there. `None` for anything else (a path,
/// bytes, a pipe, a socket, a file object that cannot seek).
pub fn seekable_position(obj: &Bound<'_, PyAny>) -> Option<u64> {
    let py = obj.py();
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<pyo3::types::PyMemoryView>()
        || !ok_keeping_ctrl_c(py, obj.hasattr("read"))?
    {
        return None;
    }
    let seekable = ok_keeping_ctrl_c(py, obj.call_method0("seekable"))?;
    if !ok_keeping_ctrl_c(py, seekable.is_truthy())? {
        return None;
    }
    let at = ok_keeping_ctrl_c(py, obj.call_method0("tell"))?;
    ok_keeping_ctrl_c(py, at.extract())
}

/// Move a file object to `at` (from its start); whether it went there.
pub fn seek_to(obj: &Bound<'_, PyAny>, at: u64) -> bool {
    let py = obj.py();
    ok_keeping_ctrl_c(py, obj.call_method1("seek", (at, 0)))
        .and_then(|p| ok_keeping_ctrl_c(py, p.extract::<u64>()))
        == Some(at)
}

pub fn open(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Input> {
    if obj.is_instance_of::<PyString>() {
        // As os.fsencode: a name that is not UTF-8 comes as surrogate escapes, which `to_str`
        // refuses.
        let path: PathBuf = obj.extract()?;
        let signals = crate::sigint::mark(py)?;
        if path.as_os_str() == "-" {
            return py
                .detach(|| input::from_reader(Box::new(Stdin(current(), signals)), None))
                .map_err(to_py);
        }
        #[cfg(unix)]
        if let Some(Ok(file)) = open_polled(&path) {
            return py
                .detach(|| input::from_reader(Box::new(Polled(file, current(), signals)), None))
                .map_err(to_py);
        }
        return py
            .detach(|| input::open_path(&path))
            .map_err(|e| to_py_at(e, &path));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        let reader = BytesReader::new(b);
        let n = reader.len() as u64;
        return input::from_reader(Box::new(reader), Some(n)).map_err(to_py);
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        let data = b.to_vec();
        let n = data.len() as u64;
        return input::from_reader(Box::new(Cursor::new(data)), Some(n)).map_err(to_py);
    }
    if obj.is_instance_of::<pyo3::types::PyMemoryView>() {
        // Its memory may change or go while the scan runs without the GIL: a copy.
        let data = pyo3::buffer::PyBuffer::<u8>::get(obj)?.to_vec(py)?;
        let n = data.len() as u64;
        return input::from_reader(Box::new(Cursor::new(data)), Some(n)).map_err(to_py);
    }
    if obj.hasattr("read")? {
        let total = remaining(obj);
        let reader = PyFileReader {
            file: obj.clone().unbind(),
            slot: current(),
            pending: Vec::new(),
            pending_at: 0,
        };
        return input::from_reader(Box::new(reader), total).map_err(to_py);
    }
    Err(PyTypeError::new_err(format!(
        "cannot read a capture from {}: pass a path, '-' for stdin, bytes, or a binary file object",
        obj.get_type().name()?
    )))
}
