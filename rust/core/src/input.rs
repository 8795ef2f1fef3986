//! Opening an input: a path, stdin (`-`) or any `Read`, with gzip and zstd undone transparently.
//! Compression is recognised by the first bytes of the content, never by the file name.
//!
//! The raw source is wrapped in a counting reader (for progress bars) and errors are tagged on
//! the way up, so the capture reader can tell an operating-system failure (`Io`) from a damaged
//! compressed stream (`Decompression`) and from a compressed stream cut short (`Truncated`).

use crate::capture::mapping::Mapping;
use crate::error::{Error, ErrorKind, Result};
use std::fmt;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Compression found around the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain capture.
    None,
    /// gzip (one member or several, as `cat a.gz b.gz` makes).
    Gzip,
    /// zstd (one frame or several).
    Zstd,
}

impl Compression {
    /// The compression as one word: "none", "gzip" or "zstd".
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
    /// The decompressed bytes, from their first.
    pub reader: Box<dyn Read + Send>,
    /// What was found around the capture and undone.
    pub compression: Compression,
    /// Size of the file on disk when known (for progress), compressed size if compressed.
    pub file_len: Option<u64>,
    /// Shared counter of raw (compressed) bytes consumed so far, for progress reporting.
    pub raw_bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The regular file read, when the input is one (a file can then be read in pieces).
    pub path: Option<std::path::PathBuf>,
}

/// All but the source, which is any `Read` and need not be `Debug`.
impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("compression", &self.compression)
            .field("file_len", &self.file_len)
            .field("raw_bytes", &self.raw_bytes)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Open a path; `-` means standard input. A missing file gives an `Io` error naming the path.
pub fn open_path(path: &Path) -> Result<Input> {
    if path.as_os_str() == "-" {
        return from_reader(Box::new(io::stdin()), None);
    }
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| open_error(path, e))?;
    if meta.is_dir() {
        return Err(Error::new(
            ErrorKind::Io,
            format!("{shown} is a directory; give the path of a capture file inside it"),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| open_error(path, e))?;
    let file_len = if meta.is_file() {
        Some(meta.len())
    } else {
        None
    };
    let mut input = from_reader(Box::new(file), file_len)?;
    if meta.is_file() {
        input.path = Some(path.to_path_buf());
    }
    Ok(input)
}

/// Map a plain regular file read-only, for `ReadOptions::mmap`. `None` whenever mapping is not
/// possible or not worth it (not a regular file, empty, larger than the address space, the
/// filesystem refuses): the caller then reads it through a buffer, which gives the same result.
///
/// The file is opened again by path rather than taking over the reader's descriptor, so that
/// `Input` stays a plain stream; a file swapped for another between the two opens is the same
/// hazard as one rewritten while it is read, buffered or mapped: burstcore reads what the file
/// holds at the time (a truncation is caught, see [`crate::capture::mapping`]).
pub(crate) fn map_file(path: &Path) -> Option<Mapping> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() == 0 || usize::try_from(meta.len()).is_err() {
        return None;
    }
    // Where mappings are guarded against truncation, only a guarded one will do.
    let map = Mapping::new(file, crate::capture::mapping::GUARDED)?;
    // Only a hint (read ahead, drop behind): a kernel that ignores it still serves the pages.
    // MAP_POPULATE, MADV_POPULATE_READ and MADV_HUGEPAGE measured no faster on page-cached
    // captures (docs/metrics.md), so the mapping is left to fault in as it is read.
    map.advise_sequential();
    Some(map)
}

fn open_error(path: &Path, e: io::Error) -> Error {
    let shown = path.display();
    let hint = match e.kind() {
        io::ErrorKind::NotFound => {
            "no such file; check the path (use - to read standard input)".to_string()
        }
        io::ErrorKind::PermissionDenied => {
            "permission denied; check the file's permissions or run as a user who can read it"
                .to_string()
        }
        // Several hundred captures read together (one per host of a large job) stay open for
        // the whole read: the limit, not the file, is what to change.
        _ if too_many_open(&e) => format!(
            "cannot open it: too many files open at once (the captures read together all stay \
             open until the end); raise the limit on open files{}, or merge the captures into \
             fewer files first (mergecap)",
            open_files_limit().map_or(String::new(), |n| format!(" (ulimit -n, now {n})"))
        ),
        _ => "cannot open it".to_string(),
    };
    Error::new(ErrorKind::Io, format!("{shown}: {hint} ({e})")).caused_by(e)
}

/// EMFILE (this process's limit on open files) or ENFILE (the system's).
fn too_many_open(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// This process's soft limit on open files, where there is one.
fn open_files_limit() -> Option<String> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
        (ok && limit.rlim_cur != libc::RLIM_INFINITY).then(|| limit.rlim_cur.to_string())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Wrap any reader (a Python file object, a socket, a byte slice) and sniff its compression.
pub fn from_reader(reader: Box<dyn Read + Send>, file_len: Option<u64>) -> Result<Input> {
    let raw_bytes = Arc::new(AtomicU64::new(0));
    let mut raw = Counting {
        inner: reader,
        count: Arc::clone(&raw_bytes),
    };
    // Peek the magic, then put the peeked bytes back in front so nothing is lost.
    let mut magic = [0u8; 4];
    let got = read_up_to(&mut raw, &mut magic).map_err(|e| Error::from(untagged(e)))?;
    let peeked = magic.get(..got).unwrap_or(&[]);
    let compression = if peeked.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else if peeked.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else {
        Compression::None
    };
    let source = Cursor::new(peeked.to_vec()).chain(raw);
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(source),
        Compression::Gzip => Box::new(Decoded {
            inner: flate2::read::MultiGzDecoder::new(source),
            compression,
        }),
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(source).map_err(|e| {
                Error::new(
                    ErrorKind::Decompression,
                    format!("cannot start zstd decoder: {e}"),
                )
                .caused_by(e)
            })?;
            Box::new(Decoded {
                inner: decoder,
                compression,
            })
        }
    };
    Ok(Input {
        reader,
        compression,
        file_len,
        raw_bytes,
        path: None,
    })
}

/// The decompressed length a compressed file announces of itself, read from its headers and
/// trailer, not from its data: a claim, which a reader must check against where the
/// decompressed stream really ends before relying on it (a file cut short, several gzip members,
/// a header that lies: each announces a length the stream does not have).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Announced {
    /// The sum of every zstd frame's Frame_Content_Size.
    Exactly(u64),
    /// gzip's ISIZE: the last member's length modulo 2^32, so the stream's length is one of
    /// `low + k·2^32`, none above `most` (what deflate can expand the file to at most).
    Mod32 {
        /// ISIZE: the length modulo 2^32.
        low: u32,
        /// The largest length the compressed bytes can hold.
        most: u64,
    },
}

impl Announced {
    /// The `k`-th (from 0) length it allows, in increasing order; `None` past the last.
    pub fn nth(self, k: u64) -> Option<u64> {
        match self {
            Announced::Exactly(n) => (k == 0).then_some(n),
            Announced::Mod32 { low, most } => k
                .checked_mul(1 << 32)
                .and_then(|high| high.checked_add(u64::from(low)))
                .filter(|&n| n <= most),
        }
    }
}

/// Deflate codes a match of at most 258 bytes in at least 2 bits (a length and a distance
/// code of one bit each): no stream decompresses to more than 1,032 times its size.
const DEFLATE_MOST_RATIO: u64 = 1032;

/// What the regular file at `path`, compressed as `compression`, announces its decompressed
/// length to be ([`Announced`]); `None` when it does not say (a zstd frame written as a stream,
/// without its content size), when the headers do not parse, or the file cannot be read (the
/// decompressor, reading the same bytes, reports what is wrong with them).
pub(crate) fn announced_len(path: &Path, compression: Compression) -> Option<Announced> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok().filter(|m| m.is_file())?.len();
    match compression {
        Compression::None => None,
        Compression::Gzip => {
            // A member is at least a 10-byte header, 2 bytes of deflate and an 8-byte trailer.
            if len < 20 {
                return None;
            }
            file.seek(SeekFrom::End(-4)).ok()?;
            let mut isize = [0u8; 4];
            file.read_exact(&mut isize).ok()?;
            Some(Announced::Mod32 {
                low: u32::from_le_bytes(isize),
                most: len.saturating_mul(DEFLATE_MOST_RATIO),
            })
        }
        Compression::Zstd => {
            // Small reads: the walk reads a few bytes at each block header and seeks past its
            // data, so a larger buffer would read most of the file.
            let mut r = io::BufReader::with_capacity(4096, file);
            zstd_content_size(&mut r, len).map(Announced::Exactly)
        }
    }
}

const ZSTD_FRAME_MAGIC: u32 = 0xFD2F_B528;
/// Skippable frames: 0x184D2A50 to 0x184D2A5F, data the decoder passes over.
const ZSTD_SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// The sum of the Frame_Content_Size of every zstd frame in `r` (of `len` bytes), skippable
/// frames passed over (RFC 8878, 3.1); `None` when some frame does not declare it, or the
/// frames do not end exactly at the end of the file. Each frame's blocks are walked by their
/// headers (3 bytes each, their data seeked over) to find where the next frame begins.
fn zstd_content_size(r: &mut (impl Read + io::Seek), len: u64) -> Option<u64> {
    fn bytes<const N: usize>(r: &mut impl Read, at: &mut u64) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        r.read_exact(&mut b).ok()?;
        *at += N as u64;
        Some(b)
    }
    fn skip(r: &mut impl io::Seek, at: &mut u64, n: u64, len: u64) -> Option<()> {
        *at = at.checked_add(n).filter(|&to| to <= len)?;
        r.seek_relative(i64::try_from(n).ok()?).ok()
    }
    let mut at = 0u64;
    let mut total = 0u64;
    let mut frames = 0u32;
    while at < len {
        let magic = u32::from_le_bytes(bytes::<4>(r, &mut at)?);
        if magic & !0xF == ZSTD_SKIPPABLE_MAGIC {
            let size = u32::from_le_bytes(bytes::<4>(r, &mut at)?);
            skip(r, &mut at, u64::from(size), len)?;
            continue;
        }
        if magic != ZSTD_FRAME_MAGIC {
            return None;
        }
        let [descriptor] = bytes::<1>(r, &mut at)?;
        let single_segment = descriptor & 0x20 != 0;
        // The reserved bit must be 0: a decoder refuses the frame.
        if descriptor & 0x08 != 0 {
            return None;
        }
        let checksum = descriptor & 0x04 != 0;
        let dictionary = [0, 1, 2, 4][usize::from(descriptor & 3)];
        let window = u64::from(!single_segment);
        skip(r, &mut at, window + dictionary, len)?;
        let size = match (descriptor >> 6, single_segment) {
            (0, false) => return None,
            (0, true) => u64::from(bytes::<1>(r, &mut at)?[0]),
            (1, _) => u64::from(u16::from_le_bytes(bytes::<2>(r, &mut at)?)) + 256,
            (2, _) => u64::from(u32::from_le_bytes(bytes::<4>(r, &mut at)?)),
            _ => u64::from_le_bytes(bytes::<8>(r, &mut at)?),
        };
        total = total.checked_add(size)?;
        loop {
            let [a, b, c] = bytes::<3>(r, &mut at)?;
            let header = u32::from_le_bytes([a, b, c, 0]);
            let data = match (header >> 1) & 3 {
                // Raw and compressed blocks: Block_Size bytes follow; RLE: one byte.
                0 | 2 => u64::from(header >> 3),
                1 => 1,
                _ => return None,
            };
            skip(r, &mut at, data, len)?;
            if header & 1 != 0 {
                break;
            }
        }
        if checksum {
            skip(r, &mut at, 4, len)?;
        }
        frames += 1;
    }
    (frames > 0 && at == len).then_some(total)
}

/// Fill `buf` as far as the stream allows; returns how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        match r.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Counts raw bytes and tags the source's own errors so that they stay `Io` errors even when
/// they come up through a decompressor.
struct Counting {
    inner: Box<dyn Read + Send>,
    count: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.count.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(io::Error::new(e.kind(), SourceError(e))),
        }
    }
}

#[derive(Debug)]
struct SourceError(io::Error);

/// The source's own error out of the tag that [`Counting`] puts around it, so that an
/// [`Error`]'s `source()` is the error the source returned (its kind, its OS error code), not
/// the tag; any other error as it is. The text is the same either way.
pub(crate) fn untagged(e: io::Error) -> io::Error {
    if !e.get_ref().is_some_and(|inner| inner.is::<SourceError>()) {
        return e;
    }
    let kind = e.kind();
    match e.into_inner().map(|inner| inner.downcast::<SourceError>()) {
        Some(Ok(tag)) => tag.0,
        // Not reached (checked above); the error as it came, should it be.
        Some(Err(inner)) => io::Error::new(kind, inner),
        None => io::Error::from(kind),
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SourceError {}

/// An error raised by the decompressor itself (not by the source below it).
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub compression: Compression,
    /// The compressed stream ended before its end marker.
    pub truncated: bool,
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} stream: {}", self.compression.name(), self.message)
    }
}

impl std::error::Error for DecodeError {}

struct Decoded<R> {
    inner: R,
    compression: Compression,
}

/// Most bytes one read asks a decoder for. A decoder that meets damaged data fails the whole
/// read, and what it had decoded into the buffer before the damage is lost: asked for the
/// reader's 256 KiB at once, a damaged stream was told hundreds of kB before its damage (at
/// offset 0 for a capture smaller than that). Reads of 32 KiB place it within 32 KiB and cost
/// nothing measurable beside the decoding itself.
const DECODED_READ: usize = 32 << 10;

impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(DECODED_READ);
        self.inner.read(&mut buf[..n]).map_err(|e| {
            let from_source = e.get_ref().is_some_and(|inner| inner.is::<SourceError>());
            if from_source || e.kind() == io::ErrorKind::Interrupted {
                return e;
            }
            let decode = DecodeError {
                compression: self.compression,
                truncated: e.kind() == io::ErrorKind::UnexpectedEof,
                message: e.to_string(),
            };
            io::Error::new(e.kind(), decode)
        })
    }
}

/// What a read error means for the capture reader.
pub(crate) enum ReadFailure {
    /// The compressed stream ends early: handled like a capture cut off.
    CompressedCut,
    /// Damaged compressed data.
    Decompression(String),
    /// The operating system failed: "read failed: " and the error's text.
    Io(String),
}

pub(crate) fn classify(e: &io::Error) -> ReadFailure {
    if let Some(d) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<DecodeError>())
    {
        if d.truncated {
            return ReadFailure::CompressedCut;
        }
        return ReadFailure::Decompression(d.to_string());
    }
    ReadFailure::Io(format!("read failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(input: Input) -> io::Result<Vec<u8>> {
        let mut r = input.reader;
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Too many files open at once (hundreds of captures read together) says what limit to
    /// raise and how high it stands, not only the OS's words.
    #[cfg(unix)]
    #[test]
    fn too_many_open_files_names_the_limit_to_raise() {
        for errno in [libc::EMFILE, libc::ENFILE] {
            let e = open_error(Path::new("host7.pcap"), io::Error::from_raw_os_error(errno));
            assert_eq!(e.kind, ErrorKind::Io);
            assert!(e
                .reason
                .starts_with("host7.pcap: cannot open it: too many files open at once"));
            assert!(
                e.reason
                    .contains("raise the limit on open files (ulimit -n, now "),
                "{e}"
            );
            assert_eq!(e.io_error().and_then(io::Error::raw_os_error), Some(errno));
        }
        let other = open_error(Path::new("x.pcap"), io::Error::from_raw_os_error(libc::EIO));
        assert!(
            other.reason.starts_with("x.pcap: cannot open it ("),
            "{other}"
        );
    }

    #[test]
    fn plain_bytes_survive_the_peek() {
        for len in 0..8 {
            let data: Vec<u8> = (0..len as u8).collect();
            let input = from_reader(Box::new(Cursor::new(data.clone())), None).unwrap();
            assert_eq!(input.compression, Compression::None);
            assert_eq!(read_all(input).unwrap(), data);
        }
    }

    #[test]
    fn gzip_and_zstd_are_recognised_by_content() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let zs = zstd::stream::encode_all(Cursor::new(&data), 1).unwrap();
        for (bytes, kind) in [(gz, Compression::Gzip), (zs, Compression::Zstd)] {
            let n = bytes.len() as u64;
            let input = from_reader(Box::new(Cursor::new(bytes)), Some(n)).unwrap();
            assert_eq!(input.compression, kind);
            let counter = Arc::clone(&input.raw_bytes);
            assert_eq!(read_all(input).unwrap(), data);
            assert_eq!(counter.load(Ordering::Relaxed), n);
        }
    }

    #[test]
    fn cut_and_corrupt_streams_are_told_apart() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let zs = zstd::stream::encode_all(Cursor::new(&data), 1).unwrap();
        for (bytes, checked) in [(gz, true), (zs, false)] {
            let cut = bytes[..bytes.len() / 2].to_vec();
            let err = read_all(from_reader(Box::new(Cursor::new(cut)), None).unwrap()).unwrap_err();
            assert!(
                matches!(classify(&err), ReadFailure::CompressedCut),
                "{err}"
            );
            // zstd frames written without a checksum may decode damage silently: gzip has a CRC.
            if !checked {
                continue;
            }
            let mut bad = bytes.clone();
            for b in bad.iter_mut().skip(20).take(64) {
                *b ^= 0x5a;
            }
            let err = read_all(from_reader(Box::new(Cursor::new(bad)), None).unwrap()).unwrap_err();
            assert!(
                matches!(classify(&err), ReadFailure::Decompression(_)),
                "{err}"
            );
        }
    }

    #[test]
    fn missing_path_and_directory_name_the_path() {
        let missing = Path::new("/nonexistent/burstcore/x.pcap");
        let err = open_path(missing).err().unwrap();
        assert_eq!(err.kind, ErrorKind::Io);
        assert!(
            err.reason.contains("/nonexistent/burstcore/x.pcap"),
            "{err}"
        );
        let err = open_path(Path::new(env!("CARGO_MANIFEST_DIR")))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::Io);
        assert!(err.reason.contains("directory"), "{err}");
    }

    fn zstd_len(bytes: &[u8]) -> Option<u64> {
        zstd_content_size(&mut Cursor::new(bytes), bytes.len() as u64)
    }

    #[test]
    fn zstd_content_sizes_are_summed_over_frames_that_all_declare_one() {
        // Sizes that take each encoding of the content size: one byte (single segment), two
        // (less 256), four and, past the window, with a window descriptor.
        let pieces: Vec<Vec<u8>> = [0usize, 100, 255, 256, 1000, 65_791, 65_792, 3_000_000]
            .iter()
            .map(|&n| (0..n as u32).map(|i| (i * 31 % 253) as u8).collect())
            .collect();
        let sized = |d: &[u8]| zstd::bulk::compress(d, 1).unwrap();
        let streamed = |d: &[u8]| zstd::stream::encode_all(Cursor::new(d), 1).unwrap();
        let mut skippable = vec![0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3];
        // libzstd's own reading of a frame's header is the oracle.
        let declared = |z: &[u8]| zstd::zstd_safe::get_frame_content_size(z).unwrap();
        for d in &pieces {
            let z = sized(d);
            assert_eq!(declared(&z), Some(d.len() as u64));
            assert_eq!(zstd_len(&z), declared(&z), "{}", d.len());
            let z = streamed(d);
            assert_eq!(zstd_len(&z), declared(&z), "{}", d.len());
        }
        assert_eq!(declared(&streamed(&pieces[7])), None);
        let all: Vec<u8> = pieces.concat();
        let frames: Vec<u8> = pieces.iter().flat_map(|d| sized(d)).collect();
        assert_eq!(zstd_len(&frames), Some(all.len() as u64));
        // Skippable frames (any of the 16 magics) count nothing, before, between or after.
        let with_skips = [skippable.clone(), frames.clone(), skippable.clone()].concat();
        skippable[0] = 0x5F;
        let with_skips = [with_skips, skippable.clone()].concat();
        assert_eq!(zstd_len(&with_skips), Some(all.len() as u64));
        // The decoder's own reading of it: the same bytes.
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(Cursor::new(&with_skips))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, all);
        // One frame that does not declare its size: the sum is unknown.
        let one_unsized = [sized(&pieces[4]), streamed(&pieces[5]), sized(&pieces[6])].concat();
        assert_eq!(zstd_len(&one_unsized), None);
        // Cut anywhere, or followed by anything but a frame: not a length.
        let one = sized(&pieces[7]);
        for cut in [1, 4, 5, 9, 100, one.len() / 2, one.len() - 1] {
            assert_eq!(zstd_len(&one[..cut]), None, "cut at {cut}");
        }
        assert_eq!(zstd_len(&[one.clone(), vec![0; 8]].concat()), None);
        assert_eq!(zstd_len(&skippable), None, "no frame at all");
        assert_eq!(zstd_len(&[]), None);
    }

    #[test]
    fn gzip_announces_its_length_modulo_2_32_and_zstd_exactly() {
        let dir = crate::scratch::Scratch::new("announced");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let path = dir.join("a.gz");
        std::fs::write(&path, &gz).unwrap();
        let most = gz.len() as u64 * DEFLATE_MOST_RATIO;
        assert_eq!(
            announced_len(&path, Compression::Gzip),
            Some(Announced::Mod32 { low: 200_000, most })
        );
        let path = dir.join("a.zst");
        std::fs::write(&path, zstd::bulk::compress(&data, 1).unwrap()).unwrap();
        assert_eq!(
            announced_len(&path, Compression::Zstd),
            Some(Announced::Exactly(200_000))
        );
        assert_eq!(
            announced_len(&dir.join("missing.gz"), Compression::Gzip),
            None
        );
        assert_eq!(
            announced_len(dir.path(), Compression::Gzip),
            None,
            "a directory"
        );
    }

    #[test]
    fn the_lengths_gzip_allows_are_its_isize_plus_multiples_of_2_32() {
        // A stream of 5 GiB + 7 bytes says 1 GiB + 7: it is the second length allowed.
        let low = ((5u64 << 30) + 7) as u32;
        assert_eq!(low, (1 << 30) + 7);
        let gz = Announced::Mod32 { low, most: 9 << 30 };
        let allowed: Vec<u64> = (0..).map_while(|k| gz.nth(k)).collect();
        assert_eq!(allowed, [(1 << 30) + 7, (5 << 30) + 7]);
        assert!(allowed.contains(&((5 << 30) + 7)));
        // No overflow however far it is asked.
        let wide = Announced::Mod32 {
            low: u32::MAX,
            most: u64::MAX,
        };
        assert_eq!(wide.nth((1 << 32) - 1), Some(u64::MAX));
        assert_eq!(wide.nth(1 << 32), None);
        assert_eq!(wide.nth(u64::MAX), None);
        assert_eq!(Announced::Exactly(9).nth(0), Some(9));
        assert_eq!(Announced::Exactly(9).nth(1), None);
    }
}
