//! What a Python caller may pass as a capture: a path (`-` for stdin), bytes, or a binary file
//! object (anything with `.read(n)`), turned into a core `Input`.

use crate::errors::to_py;
use burstcore::input::{self, Input};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::io::{Cursor, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// A Python file object read from Rust: each read takes the GIL briefly.
struct PyFileReader {
    file: Py<PyAny>,
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
            let chunk = self
                .file
                .call_method1(py, "read", (buf.len(),))
                .map_err(|e| {
                    std::io::Error::other(format!("the file object's read() failed: {e}"))
                })?;
            let chunk = chunk.bind(py);
            let bytes: &[u8] = if let Ok(b) = chunk.cast::<PyBytes>() {
                b.as_bytes()
            } else {
                return Err(std::io::Error::other(
                    "the file object returned text, not bytes: open the capture in binary mode ('rb')",
                ));
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

/// Set when a read of standard input stopped for Ctrl-C ([`Stdin`]); the error it caused is
/// then raised as `KeyboardInterrupt` ([`crate::errors::to_py`]).
pub static STDIN_INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Standard input (fd 0), read with the GIL released, that stops on Ctrl-C even while no data
/// comes (a live capture on a quiet link). A blocked read would not see the signal: it may be
/// delivered to any thread (polars starts several), so the read waits for data a tenth of a
/// second at a time and asks Python's handlers in between. A scan otherwise looks at signals
/// between packets only.
struct Stdin;

impl Read for Stdin {
    #[cfg(unix)]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let mut fd = libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the call's duration.
            let ready = unsafe { libc::poll(&mut fd, 1, 100) };
            if ready > 0 {
                // SAFETY: `buf` is valid for writes of its length. Read directly, unbuffered, so
                // that no byte waits in a buffer while poll says nothing is left to read.
                let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
                if n >= 0 {
                    return Ok(n as usize);
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            } else if ready < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            if Python::attach(|py| py.check_signals()).is_err() {
                STDIN_INTERRUPTED.store(true, Ordering::SeqCst);
                return Err(std::io::Error::other("interrupted"));
            }
        }
    }

    #[cfg(not(unix))]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::io::stdin().lock().read(buf)
    }
}

pub fn open(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(s) = obj.cast::<PyString>() {
        let path = PathBuf::from(s.to_str()?);
        if path.as_os_str() == "-" {
            return py
                .detach(|| input::from_reader(Box::new(Stdin), None))
                .map_err(to_py);
        }
        return py.detach(|| input::open_path(&path)).map_err(to_py);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        let data = b.as_bytes().to_vec();
        let n = data.len() as u64;
        return input::from_reader(Box::new(Cursor::new(data)), Some(n)).map_err(to_py);
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        let data = b.to_vec();
        let n = data.len() as u64;
        return input::from_reader(Box::new(Cursor::new(data)), Some(n)).map_err(to_py);
    }
    if obj.hasattr("read")? {
        let reader = PyFileReader {
            file: obj.clone().unbind(),
            pending: Vec::new(),
            pending_at: 0,
        };
        return input::from_reader(Box::new(reader), None).map_err(to_py);
    }
    Err(PyTypeError::new_err(format!(
        "cannot read a capture from {}: pass a path, '-' for stdin, bytes, or a binary file object",
        obj.get_type().name()?
    )))
}
