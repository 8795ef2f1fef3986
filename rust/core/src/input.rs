//! Opening an input: a path, stdin (`-`) or any `Read`, with gzip and zstd undone transparently.
//! Compression is recognised by the first bytes of the content, never by the file name.
//! CONTRACT (filled in by the capture work):

use crate::error::Result;
use std::io::Read;
use std::path::Path;

/// Compression found around the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// A byte stream ready for framing: decompressed, buffered by the caller.
pub struct Input {
    pub reader: Box<dyn Read + Send>,
    pub compression: Compression,
    /// Size of the file on disk when known (for progress), compressed size if compressed.
    pub file_len: Option<u64>,
    /// Shared counter of raw (compressed) bytes consumed so far, for progress reporting.
    pub raw_bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Open a path; `-` means standard input. A missing file gives an `Io` error naming the path.
pub fn open_path(path: &Path) -> Result<Input> {
    let _ = path;
    todo!()
}

/// Wrap any reader (a Python file object, a socket, a byte slice) and sniff its compression.
pub fn from_reader(reader: Box<dyn Read + Send>, file_len: Option<u64>) -> Result<Input> {
    let _ = (reader, file_len);
    todo!()
}
