//! What a Python caller may pass as a capture: a path (`-` for stdin), bytes, or a binary file
//! object (anything with `.read(n)`), turned into a core `Input`.

use crate::errors::to_py;
use burstcore::input::{self, Input};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::io::{Cursor, Read};
use std::path::PathBuf;

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

pub fn open(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(s) = obj.cast::<PyString>() {
        let path = PathBuf::from(s.to_str()?);
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
