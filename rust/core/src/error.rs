//! One error type for the whole core. Every error that concerns the input names the byte offset
//! (in the decompressed stream) where the problem was found, so a user can look at it with a hex
//! editor, and a kind that the bindings map to a typed exception.

use std::fmt;
use std::sync::Arc;

/// What went wrong, for a program to act on. Kinds may be added in a minor release (hence
/// `non_exhaustive`): a `match` on it needs a `_` arm (the Python binding raises the base
/// `CaptureError` there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system failed a read or a write (the message carries its text, and says
    /// which: "read failed", "write failed", a file that cannot be opened; [`Error::io_error`]
    /// gives the `std::io::Error` itself when there was one).
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
    /// A documented limit (block size, options, interfaces, groups) was exceeded; [`Error::limit`]
    /// says which family of limit.
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
    /// A record holds more captured bytes than libpcap takes for its link type
    /// ([`crate::wire::linktype::libpcap_max_record`]): burstcore reads it, tcpdump and tshark
    /// refuse the file there. A warning only: the writers refuse to write such a record with
    /// [`ErrorKind::InvalidArgument`], unless allowed.
    OversizedRecord,
    /// Ethernet frames end with a valid FCS the capture does not declare, which an `l1` size
    /// that believes the capture counts 4 B too long (a warning only).
    UndeclaredFcs,
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
            ErrorKind::OversizedRecord => "oversized record",
            ErrorKind::UndeclaredFcs => "undeclared fcs",
        }
    }

    /// The kind as one lowercase identifier ("truncated", "limit_exceeded", "packets_lost", ...),
    /// as the Python binding gives it (`CaptureError.kind`, `CaptureWarning.kind`): a program
    /// compares it, so it does not change with the words of [`ErrorKind::name`]. The words of
    /// the name joined by `_`, as [`Limit::name`] spells its families.
    pub fn id(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::NotACapture => "not_a_capture",
            ErrorKind::UnsupportedVersion => "unsupported_version",
            ErrorKind::Truncated => "truncated",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::UndeclaredInterface => "undeclared_interface",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::Decompression => "decompression",
            ErrorKind::TimestampOutOfRange => "timestamp_out_of_range",
            ErrorKind::OutOfOrder => "out_of_order",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::PacketsLost => "packets_lost",
            ErrorKind::OversizedRecord => "oversized_record",
            ErrorKind::UndeclaredFcs => "undeclared_fcs",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which family of limit a [`ErrorKind::LimitExceeded`] error met: they call for different
/// remedies and say different things about the capture (docs/limits.md). A program tells them
/// apart by this, not by the message, whose words may change. More families may come (hence
/// `non_exhaustive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// A limit on the capture's own structure, met at a byte offset: a block or record larger
    /// than `max_block_len`, a block with more than `max_options` options, more than
    /// `max_sections` sections or `max_interfaces` interfaces ([`crate::capture::Limits`]).
    /// Most likely damage.
    Capture,
    /// Packets that must be held in memory at once: more than [`crate::MAX_HELD`] waiting
    /// within the reorder horizon, or more within the largest window of E(τ) than its ring can
    /// hold. A capture this dense has damaged timestamps, or the horizon or windows are too long
    /// for it.
    HeldPackets,
    /// The size of the result: groups of a grouping (`max_groups`), flows (`max_flows`), host
    /// pairs (`max_pairs`). The capture is fine; raise the limit or ask for a coarser result.
    Result,
}

impl Limit {
    /// The family as one word, as the Python binding gives it (`LimitExceededError.limit`):
    /// "capture", "held_packets" or "result".
    pub fn name(self) -> &'static str {
        match self {
            Limit::Capture => "capture",
            Limit::HeldPackets => "held_packets",
            Limit::Result => "result",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error below an [`Error`], for [`std::error::Error::source`]. Shared so that `Error`
/// stays `Clone`; boxed inside the `Arc` so that the field is one thin pointer: every
/// `next_packet` returns a `Result<Option<Packet>>`, whose size is that of `Error`.
type Cause = Arc<Box<dyn std::error::Error + Send + Sync + 'static>>;

/// An error of the core: its kind, where and why. Built by [`Error::new`], [`Error::at`] and
/// the like (its cause is private). Equality compares what it says (kind, offset, reason, input,
/// limit), not its cause: `std::io::Error` has no equality, and two errors that say the same are
/// the same to a caller.
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong, for a program to match on (with `_`: more kinds may come).
    pub kind: ErrorKind,
    /// Byte offset in the (decompressed) input where the problem was found, if it concerns input;
    /// for a failed write ([`Error::write_failed`]), in the output, where the failed write began.
    pub offset: Option<u64>,
    /// What was wrong, in words a user can act on (no trailing period, no offset: Display adds it).
    pub reason: String,
    /// Which input, when several are read at once (their merge, [`Error::in_input`]): the file's
    /// path, or "input k of n" for one that is not a named file. Display adds it.
    pub input: Option<String>,
    /// For a [`ErrorKind::LimitExceeded`] error, which family of limit ([`Error::limit_exceeded`]
    /// sets it); `None` for every other kind.
    pub limit: Option<Limit>,
    /// What failed below (the `std::io::Error` of a failed read or write), for [`Error::cause`]
    /// and [`Error::io_error`]. The reason carries its text, so `source()` skips it (see there).
    cause: Option<Cause>,
}

/// The core's result: every fallible function returns it.
pub type Result<T> = std::result::Result<T, Error>;

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        (
            self.kind,
            self.offset,
            &self.reason,
            &self.input,
            self.limit,
        ) == (
            other.kind,
            other.offset,
            &other.reason,
            &other.input,
            other.limit,
        )
    }
}

impl Eq for Error {}

impl Error {
    /// An error of `kind` that concerns no place in the input (an argument, a stop).
    pub fn new(kind: ErrorKind, reason: impl Into<String>) -> Self {
        Error {
            kind,
            offset: None,
            reason: reason.into(),
            input: None,
            limit: None,
            cause: None,
        }
    }
    /// An error of `kind` found at byte `offset` of the (decompressed) input.
    pub fn at(kind: ErrorKind, offset: u64, reason: impl Into<String>) -> Self {
        Error {
            offset: Some(offset),
            ..Error::new(kind, reason)
        }
    }
    /// An [`ErrorKind::InvalidArgument`] error: a parameter the caller gave is wrong.
    pub fn invalid(reason: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, reason)
    }
    /// A [`ErrorKind::LimitExceeded`] error of the family `limit`.
    pub fn limit_exceeded(limit: Limit, reason: impl Into<String>) -> Self {
        Error {
            limit: Some(limit),
            ..Error::new(ErrorKind::LimitExceeded, reason)
        }
    }
    /// As [`Error::limit_exceeded`], at byte `offset` of the input.
    pub fn limit_exceeded_at(limit: Limit, offset: u64, reason: impl Into<String>) -> Self {
        Error {
            offset: Some(offset),
            ..Error::limit_exceeded(limit, reason)
        }
    }
    /// Keep `cause`, what failed below this error, for [`Error::cause`] and [`Error::io_error`].
    /// The reason must carry its text (Display does not add it, and `source()` skips it).
    pub fn caused_by(
        mut self,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        self.cause = Some(Arc::new(cause.into()));
        self
    }
    /// A write to the output failed: `offset` bytes had been handed to the sink before the
    /// failed write began. `From<std::io::Error>` is for reads; a writer uses this.
    pub fn write_failed(e: std::io::Error, offset: u64) -> Self {
        Error::at(ErrorKind::Io, offset, format!("write failed: {e}")).caused_by(e)
    }
    /// What failed below this error (the `std::io::Error` of a failed read or write, a
    /// decompressor's error), if anything did, as `std::io::Error::get_ref` gives a wrapped
    /// error. The reason already carries its text: see `source()`.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        Some(&***self.cause.as_ref()?)
    }
    /// The operating system's error below this one, when there was one: its
    /// [`std::io::Error::kind`] and [`std::io::Error::raw_os_error`] (errno) for a program to
    /// act on.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.cause()?.downcast_ref()
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

/// An error should either show its cause in Display or return it from `source()`, not both, or
/// a reporter that prints the chain (anyhow's `{:#}`) shows the OS's text twice. Display carries
/// it here, because Display is the message (Python's, the command line's) and must say what
/// failed; so `source()` goes on below the cause, as `std::io::Error` does for the error it
/// wraps. [`Error::cause`] and [`Error::io_error`] give the cause itself.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause()?.source()
    }
}

/// A failed read: every `?` on an I/O error in the reading code. A writer uses
/// [`Error::write_failed`] instead, which says so and where.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("read failed: {e}")).caused_by(e)
    }
}

/// Something the user should know that did not stop the read (e.g. a capture cut off mid-block
/// because it is still being written). Collected by the reader and reported in summaries.
/// Built by [`Warning::new`] or from an [`Error`] that is let pass (its limit and cause kept).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Warning {
    /// What the warning is about, as [`Error::kind`].
    pub kind: ErrorKind,
    /// Byte offset in the (decompressed) input, as [`Error::offset`].
    pub offset: Option<u64>,
    /// What happened, in words (no offset: Display adds it).
    pub reason: String,
    /// For a [`ErrorKind::LimitExceeded`] warning, which family of limit, as [`Error::limit`];
    /// Display names it, for a reader of the text (Python gets it as `CaptureWarning.limit`).
    pub limit: Option<Limit>,
    /// What failed below, as [`Error::cause`].
    cause: Option<Cause>,
}

/// As for [`Error`]: what the warning says, not its cause.
impl PartialEq for Warning {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, self.offset, &self.reason, self.limit)
            == (other.kind, other.offset, &other.reason, other.limit)
    }
}

impl Eq for Warning {}

impl Warning {
    /// A warning of `kind`, at `offset` of the input when it concerns a place in it.
    pub fn new(kind: ErrorKind, offset: Option<u64>, reason: impl Into<String>) -> Self {
        Warning {
            kind,
            offset,
            reason: reason.into(),
            limit: None,
            cause: None,
        }
    }
    /// What failed below, as [`Error::cause`].
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        Some(&***self.cause.as_ref()?)
    }
    /// As Display, naming the input among several read at once ([`Error::in_input`]).
    pub fn in_input(&self, input: &str) -> String {
        let mut s = match self.offset {
            Some(off) => format!("{} at byte offset {} of {}", self.reason, off, input),
            None => format!("{} (in {})", self.reason, input),
        };
        self.push_limit(&mut s);
        s
    }
    /// ` (limit: result)`: the word `LimitExceededError.limit` would hold, for a program that
    /// only has the text.
    fn push_limit(&self, s: &mut String) {
        if let Some(limit) = self.limit {
            s.push_str(&format!(" (limit: {})", limit.name()));
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = match self.offset {
            Some(off) => format!("{} at byte offset {}", self.reason, off),
            None => self.reason.clone(),
        };
        self.push_limit(&mut s);
        f.write_str(&s)
    }
}

/// An error let pass as a warning keeps what it said (the input it named, in its reason), its
/// limit and its cause.
impl From<Error> for Warning {
    fn from(e: Error) -> Self {
        Warning {
            kind: e.kind,
            offset: e.offset,
            reason: match e.input {
                Some(input) => format!("{} (in {input})", e.reason),
                None => e.reason,
            },
            limit: e.limit,
            cause: e.cause,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureReader, ReadOptions};
    use std::io::{self, Read, Write};

    /// EIO, as a failing disk gives it.
    fn eio() -> io::Error {
        io::Error::from_raw_os_error(5)
    }

    /// A source that gives `good`, then fails with EIO.
    struct Failing(io::Cursor<Vec<u8>>);

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(eio()),
                n => Ok(n),
            }
        }
    }

    /// A pcap (microseconds, Ethernet) of `n` 60-byte packets, written by hand.
    fn pcap(n: u32) -> Vec<u8> {
        let mut f = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
            f.extend(v.to_le_bytes());
        }
        for i in 0..n {
            for v in [1_000 + i, 0, 60, 60] {
                f.extend(v.to_le_bytes());
            }
            f.extend([0u8; 60]);
        }
        f
    }

    fn read_to_error(source: impl Read + Send + 'static) -> Error {
        let input = crate::input::from_reader(Box::new(source), None).expect("opened");
        let mut r = CaptureReader::new(input, ReadOptions::default()).expect("header read");
        loop {
            match r.next_packet() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the source fails before its end"),
                Err(e) => return e,
            }
        }
    }

    /// The `std::io::Error` below `e`, which must be there.
    fn io_source(e: &Error) -> &io::Error {
        e.io_error()
            .unwrap_or_else(|| panic!("no io::Error below {e:?}"))
    }

    /// What a chain printer (anyhow's `{:#}`) shows: Display, then each `source()`'s.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(s) = next {
            out.push_str(": ");
            out.push_str(&s.to_string());
            next = s.source();
        }
        out
    }

    #[test]
    fn a_failed_read_keeps_the_io_error_as_its_cause() {
        let e = Error::from(eio());
        assert_eq!(io_source(&e).raw_os_error(), Some(5));
        // The text is what it was: the cause's text once, not again after it.
        assert_eq!(e.to_string(), format!("read failed: {}", eio()));
        assert_eq!(io_source(&e.clone()).raw_os_error(), Some(5));
        // The source's own error, plain and through a decompressor: not the tag the reader
        // puts around it to tell it from the decompressor's.
        let plain = pcap(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        for bytes in [plain, gz] {
            let e = read_to_error(Failing(io::Cursor::new(bytes)));
            assert_eq!(e.kind, ErrorKind::Io);
            let off = e.offset.expect("the read's offset");
            assert_eq!(
                e.to_string(),
                format!("read failed: {} at byte offset {off}", eio())
            );
            let cause = io_source(&e);
            assert_eq!(cause.raw_os_error(), Some(5));
            assert!(cause.get_ref().is_none(), "{cause:?}");
        }
        // A file that cannot be opened: the error of the open.
        let e = crate::input::open_path(std::path::Path::new("/nonexistent/burstcore/x.pcap"))
            .expect_err("no such file");
        assert_eq!(io_source(&e).kind(), io::ErrorKind::NotFound);
        // An error of the input itself has nothing below it.
        assert!(Error::at(ErrorKind::Corrupt, 8, "bad").cause().is_none());
    }

    #[test]
    fn a_chain_printer_shows_the_os_text_once() {
        let os = eio().to_string();
        let read = Error::from(eio());
        let write = Error::write_failed(eio(), 24);
        let open = crate::input::open_path(std::path::Path::new("/nonexistent/burstcore/x.pcap"))
            .expect_err("no such file");
        let gone = io::Error::from_raw_os_error(2).to_string();
        for (e, text) in [(&read, &os), (&write, &os), (&open, &gone)] {
            let shown = chain(e);
            assert_eq!(shown.matches(text.as_str()).count(), 1, "{shown}");
            assert_eq!(shown, e.to_string());
        }
        // A cause with a cause of its own: the chain goes on below the one Display shows.
        #[derive(Debug)]
        struct Inner;
        impl fmt::Display for Inner {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("inner")
            }
        }
        impl std::error::Error for Inner {}
        #[derive(Debug)]
        struct Outer(Inner);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("outer")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Error::new(ErrorKind::Decompression, "damaged: outer").caused_by(Outer(Inner));
        assert_eq!(chain(&e), "damaged: outer: inner");
        assert!(e.cause().is_some_and(|c| c.is::<Outer>()));
    }

    #[test]
    fn a_failed_write_says_write_and_where() {
        let e = Error::write_failed(io::Error::from_raw_os_error(28), 4096);
        assert_eq!((e.kind, e.offset), (ErrorKind::Io, Some(4096)));
        assert_eq!(
            e.to_string(),
            format!(
                "write failed: {} at byte offset 4096",
                io::Error::from_raw_os_error(28)
            )
        );
        assert_eq!(io_source(&e).raw_os_error(), Some(28));
    }

    #[test]
    fn a_warning_from_an_error_keeps_its_limit_and_cause() {
        let w = Warning::from(Error::limit_exceeded_at(
            Limit::HeldPackets,
            24,
            "more packets than can be held",
        ));
        assert_eq!((w.kind, w.offset), (ErrorKind::LimitExceeded, Some(24)));
        assert_eq!(w.limit, Some(Limit::HeldPackets));
        // A warning reaches Python as its text: the text names the family.
        assert_eq!(
            w.to_string(),
            "more packets than can be held at byte offset 24 (limit: held_packets)"
        );
        assert_eq!(
            w.in_input("a.pcap"),
            "more packets than can be held at byte offset 24 of a.pcap (limit: held_packets)"
        );
        let w = Warning::from(Error::from(eio()).in_input("b.pcap"));
        assert_eq!(w.limit, None);
        assert_eq!(w.to_string(), format!("read failed: {} (in b.pcap)", eio()));
        let cause = w.cause().and_then(|c| c.downcast_ref::<io::Error>());
        assert_eq!(cause.and_then(io::Error::raw_os_error), Some(5));
        // The warnings the reader makes itself name no limit, and read as before.
        let w = Warning::new(
            ErrorKind::Truncated,
            Some(8),
            "capture ends inside a record",
        );
        assert_eq!(
            w.to_string(),
            "capture ends inside a record at byte offset 8"
        );
    }

    #[test]
    fn equality_is_what_the_error_says() {
        let e = Error::from(eio());
        let told = Error::new(ErrorKind::Io, e.reason.clone());
        assert!(told.cause().is_none());
        assert_eq!(e, told);
        assert_ne!(
            Error::limit_exceeded(Limit::Result, "more than 2 flows"),
            Error::limit_exceeded(Limit::HeldPackets, "more than 2 flows")
        );
    }

    #[test]
    fn an_error_crosses_threads_and_stays_small() {
        fn bounds<T: std::error::Error + Send + Sync + Clone + 'static>() {}
        bounds::<Error>();
        // Every `next_packet` returns a `Result<Option<Packet>>` as large as `Error`: the cause
        // costs one thin pointer, 80 bytes in all on 64-bit (72 before it was kept).
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<Error>(), 80);
        assert_eq!(
            std::mem::size_of::<Result<Option<crate::Packet<'static>>>>(),
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn only_limit_errors_name_a_limit() {
        let e = Error::limit_exceeded_at(Limit::Capture, 24, "record too large");
        assert_eq!(
            (e.kind, e.offset, e.limit),
            (ErrorKind::LimitExceeded, Some(24), Some(Limit::Capture))
        );
        assert_eq!(e.to_string(), "record too large at byte offset 24");
        assert_eq!(Error::at(ErrorKind::Corrupt, 24, "bad").limit, None);
        let names: Vec<&str> = [Limit::Capture, Limit::HeldPackets, Limit::Result]
            .map(Limit::name)
            .to_vec();
        assert_eq!(names, ["capture", "held_packets", "result"]);
    }

    #[test]
    fn a_kind_id_is_its_name_as_one_word() {
        use ErrorKind::*;
        let all = [
            Io,
            NotACapture,
            UnsupportedVersion,
            Truncated,
            Corrupt,
            UndeclaredInterface,
            LimitExceeded,
            Decompression,
            TimestampOutOfRange,
            OutOfOrder,
            InvalidArgument,
            Interrupted,
            PacketsLost,
        ];
        let ids: std::collections::HashSet<&str> = all.iter().map(|k| k.id()).collect();
        assert_eq!(ids.len(), all.len(), "each kind its own id");
        for k in all {
            assert_eq!(k.id(), k.name().replace(' ', "_"), "{k:?}");
        }
    }
}
