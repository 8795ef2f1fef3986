//! One error type for the whole core. Every error that concerns the input names the byte offset
//! (in the decompressed stream) where the problem was found, so a user can look at it with a hex
//! editor, and a kind that the bindings map to a typed exception.

use std::fmt;

/// What went wrong, for a program to act on. Kinds may be added in a minor release (hence
/// `non_exhaustive`): a `match` on it needs a `_` arm (the Python binding raises the base
/// `CaptureError` there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system failed a read (the message carries its text).
    Io,
    /// The first bytes are neither pcap nor pcapng (nor gzip/zstd around one of them).
    NotACapture,
    /// A recognised format with a version this reader does not support.
    UnsupportedVersion,
    /// The input ends inside a header, block or record.
    Truncated,
    /// A length field that cannot be right: zero, not a multiple of 4, smaller than the fixed part,
    /// larger than the block that holds it, or leading and trailing lengths that disagree.
    Corrupt,
    /// A packet names an interface that its section never declared.
    UndeclaredInterface,
    /// A documented limit (block size, options, interfaces, groups) was exceeded.
    LimitExceeded,
    /// The gzip or zstd stream around the capture is damaged.
    Decompression,
    /// A timestamp that does not fit in i64 nanoseconds since the epoch.
    TimestampOutOfRange,
    /// A packet arrived later than the reorder horizon allows.
    OutOfOrder,
    /// A parameter given by the caller is invalid (window, rate, bin, group key, ...).
    InvalidArgument,
    /// The caller asked to stop (interrupt).
    Interrupted,
    /// The capture itself records packets it did not keep (a warning only, never an error).
    PacketsLost,
}

impl ErrorKind {
    /// The kind in words ("corrupt", "out of order", ...), as `Display` prints it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::NotACapture => "not a capture",
            ErrorKind::UnsupportedVersion => "unsupported version",
            ErrorKind::Truncated => "truncated",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::UndeclaredInterface => "undeclared interface",
            ErrorKind::LimitExceeded => "limit exceeded",
            ErrorKind::Decompression => "decompression",
            ErrorKind::TimestampOutOfRange => "timestamp out of range",
            ErrorKind::OutOfOrder => "out of order",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::PacketsLost => "packets lost",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Byte offset in the (decompressed) input where the problem was found, if it concerns input.
    pub offset: Option<u64>,
    /// What was wrong, in words a user can act on (no trailing period, no offset: Display adds it).
    pub reason: String,
    /// Which input, when several are read at once (their merge, [`Error::in_input`]): the file's
    /// path, or "input k of n" for one that is not a named file. Display adds it.
    pub input: Option<String>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, reason: impl Into<String>) -> Self {
        Error {
            kind,
            offset: None,
            reason: reason.into(),
            input: None,
        }
    }
    pub fn at(kind: ErrorKind, offset: u64, reason: impl Into<String>) -> Self {
        Error {
            kind,
            offset: Some(offset),
            reason: reason.into(),
            input: None,
        }
    }
    pub fn invalid(reason: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, reason)
    }
    /// The error concerns `input`, one of several read at once: a byte offset alone would not
    /// say in which of them. An input named already keeps its name.
    pub fn in_input(mut self, input: impl Into<String>) -> Self {
        self.input.get_or_insert_with(|| input.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.offset, &self.input) {
            (Some(off), Some(input)) => {
                write!(f, "{} at byte offset {} of {}", self.reason, off, input)
            }
            (Some(off), None) => write!(f, "{} at byte offset {}", self.reason, off),
            (None, Some(input)) => write!(f, "{} (in {})", self.reason, input),
            (None, None) => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("read failed: {e}"))
    }
}

/// Something the user should know that did not stop the read (e.g. a capture cut off mid-block
/// because it is still being written). Collected by the reader and reported in summaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub kind: ErrorKind,
    pub offset: Option<u64>,
    pub reason: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(f, "{} at byte offset {}", self.reason, off),
            None => f.write_str(&self.reason),
        }
    }
}

impl Warning {
    /// As Display, naming the input among several read at once ([`Error::in_input`]).
    pub fn in_input(&self, input: &str) -> String {
        match self.offset {
            Some(off) => format!("{} at byte offset {} of {}", self.reason, off, input),
            None => format!("{} (in {})", self.reason, input),
        }
    }
}

impl From<Error> for Warning {
    fn from(e: Error) -> Self {
        Warning {
            kind: e.kind,
            offset: e.offset,
            reason: e.reason,
        }
    }
}
