//! Framing pcap and pcapng into packets with exact timestamps.
//! `CaptureReader` below is what the rest of the crate uses.
//!
//! The data path: [`buffer`] keeps one large read buffer; [`pcap`] and [`pcapng`] frame records
//! in place and check every length before trusting it; [`timestamp`] turns raw ticks into exact
//! nanoseconds. Packets borrow the buffer until the next call.
//!
//! Behaviour at the edges, chosen to agree with tshark 4.0 where it has an opinion:
//! - a capture that ends inside a record or block (still being written) gives the packets before
//!   the cut, then one `Truncated` warning (an error with `strict`); a gzip/zstd stream cut short
//!   is handled the same way; a damaged compressed stream is a `Decompression` error;
//! - bytes after the last valid record are framed like any other record, as tshark does: they
//!   usually give a `Corrupt` error (bad length) or a truncation warning at their offset;
//! - after an error the reader is finished: later calls return `Ok(None)`.

mod buffer;
mod bytes;
mod chase;
mod drops;
mod fcs_check;
pub use fcs_check::{FcsSample, FCS_LOOK};
#[cfg(test)]
mod fast_path_tests;
// Not API (outside semver, see the crate docs): public for the bindings, tests and fuzz targets.
#[doc(hidden)]
pub mod mapping;
mod pcap;
mod pcapng;
mod sniff;

pub use sniff::starts_like_capture;
// Not API (outside semver, see the crate docs): public for the bindings, tests and fuzz targets.
#[doc(hidden)]
pub mod split;
mod timestamp;

use crate::error::{Error, ErrorKind, Result, Warning};
use crate::input::{classify, Compression, Input, ReadFailure};
use crate::packet::Packet;
use buffer::Buffer;

/// Hard limits that turn hostile lengths into errors rather than allocations.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Limits {
    /// Largest pcapng block / pcap record accepted (bytes).
    pub max_block_len: u32,
    /// Most interfaces in one file.
    pub max_interfaces: u32,
    /// Most pcapng sections (Section Header Blocks) in one file: each is kept for `sections()`,
    /// and an empty one is 28 bytes, so a few kB of zstd can declare millions.
    pub max_sections: u32,
    /// Most options in one block.
    pub max_options: u32,
}

crate::builders!([] Limits {
    max_block_len: u32 => with_max_block_len,
    max_interfaces: u32 => with_max_interfaces,
    max_sections: u32 => with_max_sections,
    max_options: u32 => with_max_options,
});

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_block_len: 64 << 20,
            max_interfaces: 65_536,
            max_sections: 65_536,
            max_options: 4096,
        }
    }
}

/// How a [`CaptureReader`] reads: [`ReadOptions::default`] for one capture,
/// [`ReadOptions::for_scan`] for many read together.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Raise on a capture cut off mid-block instead of returning the packets before the cut
    /// and a warning.
    pub strict: bool,
    /// The limits that bound what one block or the file's structure may make the reader hold.
    pub limits: Limits,
    /// Read a plain (uncompressed) regular file opened by path through a read-only memory
    /// mapping instead of `read()` into a buffer: same packets, offsets, warnings and errors,
    /// without the kernel's copy. Anything else (compressed, stdin, pipes, readers, special
    /// files, an empty file, a filesystem that refuses to map) is read through the buffer
    /// silently. The chunk readers of a parallel scan share one mapping of the file.
    ///
    /// Default: true on Linux, where the reader guards the mapping: a file
    /// truncated by another process while it is read is an `Io` error at the offset reached.
    /// Elsewhere mapping is opt-in and unguarded: truncation under the mapping would kill the
    /// process with SIGBUS, so only for files that nothing truncates while they are read.
    /// [`ReadOptions::for_scan`] gives the default for many files read at once.
    pub mmap: bool,
    /// The input is one of several read together, as the files of a ring-buffer set
    /// (`dumpcap -b`): one that ends before its 4-byte magic number (empty, or only the start
    /// of a capture's magic) is a file cut off before its header, as its writer leaves it when
    /// killed. It reads as no packets and a [`ErrorKind::Truncated`] warning (an error when
    /// strict), as a file cut inside its header does. Alone (false, the default) such an input
    /// is [`ErrorKind::NotACapture`]: with no magic there is no format to read it as.
    pub one_of_several: bool,
}

crate::builders!([] ReadOptions {
    strict: bool => with_strict,
    limits: Limits => with_limits,
    mmap: bool => with_mmap,
    one_of_several: bool => with_one_of_several,
});

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            strict: false,
            limits: Limits::default(),
            mmap: mapping::GUARDED,
            one_of_several: false,
        }
    }
}

/// Mapped readers a scan of several files holds at once by default, at most (files × threads:
/// each thread of a scan of files that overlap in time reads a piece of every file).
///
/// Each holds about 4–6 MiB of its file mapped ([`CaptureReader::share_residency`]), so past
/// this, the resident memory of a scan would grow with the number of files: 64 per-host files
/// on two threads would hold some 700 MiB. Read with `read()`, each holds a 256 KiB buffer.
///
/// Eight, so that the benchmark's eight per-host files on two threads stay under the 256 MB a
/// scan may hold: mapped, 300–303 MB at their peak (`scan` with 20 windows and 8 rates, the
/// check for shared packets included), read with `read()` 212 MB, in 1.03–1.10 s against
/// 1.09–1.15 s (3 alternated runs, AMD EPYC, family 26). On an earlier machine the same scan took
/// 1.70 s read against 1.66 s mapped, and 3.16 s against 2.80 s on one thread (which stays
/// mapped: 8 readers).
pub const MAPPED_READERS: usize = 8;

impl ReadOptions {
    /// The default options for a scan of `files` files on `threads` threads: mapped as
    /// [`ReadOptions::default`] for one file, and for several while files × threads is at most
    /// [`MAPPED_READERS`]; read with `read()` past that, so that memory stays bounded however
    /// many files are scanned together.
    pub fn for_scan(files: usize, threads: usize) -> Self {
        let default = ReadOptions::default();
        let readers = files.saturating_mul(threads.clamp(1, crate::MAX_THREADS));
        ReadOptions {
            mmap: default.mmap && (files <= 1 || readers <= MAPPED_READERS),
            ..default
        }
    }
}

/// How an error names the `k`-th (from 0) of `n` inputs read at once: the path of its file, or
/// its place among them (bytes, a file object, stdin).
pub fn label(path: Option<&std::path::Path>, k: usize, n: usize) -> String {
    match path {
        Some(p) => p.display().to_string(),
        None => format!("input {} of {}", k + 1, n),
    }
}

/// `e` met reading one of `n` inputs, named `label` among the others when there are several
/// ([`Error::in_input`]), as it is when alone ([`CaptureReader::named`], for a reader that
/// cannot be borrowed where the error is met).
#[cold]
pub(crate) fn named_among(e: Error, n: usize, label: impl FnOnce() -> String) -> Error {
    if n > 1 {
        e.in_input(label())
    } else {
        e
    }
}

/// `e`, unless one of `readers` reads a mapped file that shrank meanwhile: then the truncation
/// error, as `e` may come from what the vanished bytes read as (zeros framed as records: a late
/// packet, a corrupt block).
pub(crate) fn explain(readers: &[CaptureReader], e: Error) -> Error {
    match readers.iter().position(|r| r.buf.shrank()) {
        Some(k) => readers[k].named(readers[k].shrank_error(), k, readers.len()),
        None => e,
    }
}

/// The byte order of a file's (or a pcapng section's) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

/// The capture format, as its first bytes say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap; `nanos` for the 0xa1b23c4d magic; `modified` for the Kuznetzov variant.
    Pcap {
        /// (major, minor) of the file header.
        version: (u16, u16),
        /// The byte order of every field.
        byte_order: ByteOrder,
        /// Nanosecond timestamps (else microseconds).
        nanos: bool,
        /// The Kuznetzov variant's 24-byte record headers.
        modified: bool,
    },
    /// pcapng: its sections ([`CaptureReader::sections`]) and interfaces
    /// ([`CaptureReader::interfaces`]) say the rest.
    PcapNg,
}

/// Timestamp resolution of an interface: units of 10^-n or 2^-n seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    /// Units of 10^-n s (6: µs, the pcapng default; 9: ns).
    Pow10(u8),
    /// Units of 2^-n s.
    Pow2(u8),
}

/// As a user writes it, in seconds: `1e-9`, `2^-30` (not the enum's `Pow10(9)`); what `info`
/// shows and the writer takes.
impl std::fmt::Display for TsResolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TsResolution::Pow10(n) => write!(f, "1e-{n}"),
            TsResolution::Pow2(n) => write!(f, "2^-{n}"),
        }
    }
}

/// A pcapng section, as its Section Header Block describes it (a classic pcap has none).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Section {
    /// Its place among the file's sections, from 0.
    pub index: u32,
    /// Byte offset of its header in the (decompressed) input.
    pub offset: u64,
    /// The byte order of its blocks.
    pub byte_order: ByteOrder,
    /// (major, minor) version of its header.
    pub version: (u16, u16),
    /// `shb_hardware`: the machine that captured.
    pub hardware: Option<String>,
    /// `shb_os`: its operating system.
    pub os: Option<String>,
    /// `shb_userappl`: the program that wrote the section.
    pub user_appl: Option<String>,
}

/// What the capture says of an interface's own counts (pcapng Interface Statistics Blocks):
/// the latest value of each option, `None` where no block gave it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct InterfaceStats {
    /// Interface Statistics Blocks read for this interface.
    pub isb_count: u32,
    /// `isb_ifrecv`: packets the interface received.
    pub if_recv: Option<u64>,
    /// `isb_ifdrop`: packets the interface dropped (lack of buffers).
    pub if_drop: Option<u64>,
    /// `isb_osdrop`: packets the operating system dropped.
    pub os_drop: Option<u64>,
    /// `isb_filteraccept`: packets the capture filter accepted.
    pub fil_accept: Option<u64>,
    /// `isb_usrdeliv`: packets delivered to the capturing program.
    pub usr_deliv: Option<u64>,
    /// isb_starttime in ns, if present.
    pub start_ns: Option<i64>,
    /// isb_endtime in ns, if present.
    pub end_ns: Option<i64>,
}

crate::builders!([] InterfaceStats {
    isb_count: u32 => with_isb_count,
    if_recv: Option<u64> => with_if_recv,
    if_drop: Option<u64> => with_if_drop,
    os_drop: Option<u64> => with_os_drop,
    fil_accept: Option<u64> => with_fil_accept,
    usr_deliv: Option<u64> => with_usr_deliv,
    start_ns: Option<i64> => with_start_ns,
    end_ns: Option<i64> => with_end_ns,
});

/// An interface a capture declares (a pcapng Interface Description Block; a classic pcap has
/// one, from its file header).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Interface {
    /// Global index (across sections), the `interface` of the packets.
    pub index: u32,
    /// The section that declares it ([`Section::index`]).
    pub section: u32,
    /// Index within its section (what the pcapng blocks refer to).
    pub local_id: u32,
    /// The link type of its packets (1: Ethernet; [`crate::wire::linktype_name`]).
    pub linktype: u16,
    /// Bytes of FCS it declares end each frame: pcapng `if_fcslen`, or the FCS bits of a pcap
    /// header's link type; 0 when it declares none, the norm (each packet's
    /// [`crate::Packet::fcs_len`]).
    pub fcs_len: u8,
    /// 0 means no limit.
    pub snaplen: u32,
    /// The units of its packets' timestamps (`if_tsresol`; microseconds by default).
    pub resolution: TsResolution,
    /// if_tsoffset in seconds (signed).
    pub ts_offset_s: i64,
    /// `if_name`.
    pub name: Option<String>,
    /// `if_description`.
    pub description: Option<String>,
    /// Its statistics, from the capture's own counts.
    pub stats: InterfaceStats,
}

/// Counters of everything the reader saw that is not a packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadStats {
    /// pcapng sections read (0 for a classic pcap).
    pub sections: u32,
    /// pcapng blocks read, of every type (0 for a classic pcap).
    pub blocks: u64,
    /// Enhanced Packet Blocks.
    pub enhanced_packet_blocks: u64,
    /// Simple Packet Blocks (packets without a timestamp).
    pub simple_packet_blocks: u64,
    /// Obsolete Packet Blocks.
    pub obsolete_packet_blocks: u64,
    /// Name Resolution Blocks (skipped).
    pub name_resolution_blocks: u64,
    /// Interface Statistics Blocks ([`InterfaceStats`]).
    pub interface_statistics_blocks: u64,
    /// Decryption Secrets Blocks (skipped).
    pub decryption_secrets_blocks: u64,
    /// Custom blocks (skipped).
    pub custom_blocks: u64,
    /// Blocks of a type this reader does not know (skipped).
    pub unknown_blocks: u64,
    /// Packets handed out so far.
    pub packets: u64,
    /// Packets whose timestamp does not fit i64 nanoseconds: they come out with `ts_ns: None`.
    pub timestamps_out_of_range: u64,
    /// Records longer than libpcap takes for their link type
    /// ([`crate::wire::linktype::libpcap_max_record`]): read as any other, the first one told.
    pub oversized_records: u64,
}

/// Where a framed packet lies in the buffer, and what it says about itself.
#[derive(Debug, Clone, Copy)]
struct Framed {
    ts_ns: Option<i64>,
    interface: u32,
    linktype: u16,
    wire_len: u32,
    fcs_len: u8,
    /// Range of the captured bytes in the buffer's storage.
    data_start: usize,
    data_end: usize,
    offset: u64,
}

/// Per-format reading state.
enum Kind {
    Pcap(pcap::State),
    PcapNg(pcapng::State),
}

/// What a request for bytes found.
enum Fill {
    Ready,
    /// The input ended cleanly, exactly here.
    End,
    /// The input ended (or its compressed stream was cut) before the bytes asked for.
    Cut,
}

/// Reads one capture, packet by packet, with bounded memory.
///
/// ```no_run
/// use burstcore::capture::{CaptureReader, ReadOptions};
///
/// // A path ("-" for stdin); any `Read + Send + 'static` through `input::from_reader`.
/// let input = burstcore::input::open_path("trace.pcapng.zst".as_ref())?;
/// let mut reader = CaptureReader::new(input, ReadOptions::default())?;
/// let mut bytes = 0u64;
/// // Each packet borrows the reader's buffer until the next call.
/// while let Some(p) = reader.next_packet()? {
///     bytes += u64::from(p.wire_len);
/// }
/// for w in reader.warnings() {
///     eprintln!("warning: {w}"); // e.g. a capture cut off mid-record, with its byte offset
/// }
/// # Ok::<(), burstcore::Error>(())
/// ```
pub struct CaptureReader {
    buf: Buffer,
    options: ReadOptions,
    kind: Kind,
    /// Read from the magic number; `None` for one of several files cut before it.
    format: Option<Format>,
    compression: Compression,
    sections: Vec<Section>,
    interfaces: Vec<Interface>,
    stats: ReadStats,
    warnings: Vec<Warning>,
    /// The compressed stream below ended early.
    compressed_cut: bool,
    done: bool,
    /// The regular file underneath, when not compressed.
    path: Option<std::path::PathBuf>,
    /// The file read, compressed or not, when it has a path: how an error names this input
    /// among several ([`CaptureReader::label`]).
    name: Option<std::path::PathBuf>,
    /// Compressed bytes read from below a decompressor ([`CaptureReader::consumed`]).
    raw: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The bytes' length, when known before reading them ([`CaptureReader::data_len`]).
    data_len: Option<u64>,
    /// Frames checked for an FCS the capture does not declare, once asked
    /// ([`CaptureReader::check_fcs`]): by the scan or analysis that reads this reader, which
    /// borrows it while it reads ([`CaptureReader::lend_fcs_sample`]); boxed, so that a reader
    /// that is not asked stays small.
    fcs_sample: Option<Box<FcsSample>>,
}

/// The read buffer for an input: [`buffer::DEFAULT_CAPACITY`], or the size of a smaller plain
/// file (plus one byte, so that the read that finds its end needs no larger buffer).
fn buffer_capacity(compression: Compression, file_len: Option<u64>) -> usize {
    match (compression, file_len) {
        (Compression::None, Some(n)) => usize::try_from(n)
            .map_or(buffer::DEFAULT_CAPACITY, |n| n.saturating_add(1))
            .min(buffer::DEFAULT_CAPACITY),
        _ => buffer::DEFAULT_CAPACITY,
    }
}

/// Where the reader stands, not its buffer: the source below is any `Read`, which need not
/// be `Debug`, and the buffered bytes say nothing a program could use.
impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("format", &self.format)
            .field("compression", &self.compression)
            .field("file", &self.name)
            .field("position", &self.position())
            .field("interfaces", &self.interfaces.len())
            .field("packets", &self.stats.packets)
            .field("warnings", &self.warnings.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl CaptureReader {
    /// Sniff the format from the first bytes of `input` and prepare to read.
    pub fn new(input: Input, options: ReadOptions) -> Result<Self> {
        let compression = input.compression;
        let name = input.path.clone();
        let path = input.path.filter(|_| compression == Compression::None);
        let mapped = match &path {
            Some(p) if options.mmap => crate::input::map_file(p),
            _ => None,
        };
        let buf = match mapped {
            Some(map) => Buffer::mapped(std::sync::Arc::new(map)),
            // No larger than a plain file (it grows if need be): a scan of thousands of small
            // files at once holds one buffer each.
            None => Buffer::new(input.reader, buffer_capacity(compression, input.file_len)),
        };
        // Set before the format is sniffed, so that damage in the first block is told with it.
        let raw = (compression != Compression::None).then_some(input.raw_bytes);
        let mut reader = Self::with_buffer(buf, options, compression, path, raw)?;
        reader.name = name;
        reader.data_len = input.file_len.filter(|_| compression == Compression::None);
        Ok(reader)
    }

    /// Sniff and prepare to read from a buffer set up by the caller (a split's shared mapping).
    fn with_buffer(
        buf: Buffer,
        options: ReadOptions,
        compression: Compression,
        path: Option<std::path::PathBuf>,
        raw: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<Self> {
        let mut reader = CaptureReader {
            buf,
            options,
            kind: Kind::Pcap(pcap::State::default()),
            format: None,
            compression,
            sections: Vec::new(),
            interfaces: Vec::new(),
            stats: ReadStats::default(),
            warnings: Vec::new(),
            compressed_cut: false,
            done: false,
            name: path.clone(),
            raw,
            path,
            data_len: None,
            fcs_sample: None,
        };
        match reader.fill(4)? {
            Fill::Ready => {}
            // The compressed stream ends before it yields a whole magic number: a file cut off
            // early (a small one fits one compressed block, all lost), which the message says.
            // Still "not a capture", as any input under 4 bytes (docs/limits.md): with no magic
            // there is no format to read an empty capture of, strict or not.
            // One of several files whose writer stopped before the magic was written: told as
            // a cut file, so that a ring-buffer set whose last file is empty is still read.
            _ if options.one_of_several && sniff::begins_magic(reader.buf.bytes()) => {
                let inside = match (compression, reader.buf.bytes().is_empty()) {
                    (Compression::None, true) => {
                        "before its first byte, an empty file with no pcap or pcapng header"
                    }
                    (Compression::None, false) => "inside its 4-byte magic number",
                    _ => "before the capture's first 4 bytes",
                };
                reader.done = true;
                reader.cut(0, inside)?;
                return Ok(reader);
            }
            _ if reader.compressed_cut => {
                return Err(Error::at(
                    ErrorKind::NotACapture,
                    0,
                    format!(
                        "the {} stream ends early, before the capture's first 4 bytes: the file is \
                         cut off (still being written, or copied in part)",
                        compression.name()
                    ),
                ));
            }
            _ => {
                let seen = reader.buf.bytes().to_vec();
                return Err(sniff::not_a_capture(&seen, compression, true));
            }
        }
        let magic: [u8; 4] = reader
            .buf
            .bytes()
            .get(..4)
            .and_then(|m| m.try_into().ok())
            .unwrap_or([0; 4]);
        match sniff::format_of(magic) {
            Some(sniff::Magic::PcapNg) => {
                reader.kind = Kind::PcapNg(pcapng::State::default());
                reader.format = Some(Format::PcapNg);
                // The first block is the section header: read it now so that `sections()` and
                // the byte order are known before the first packet.
                pcapng::next(&mut reader, true)?;
                if reader.sections.is_empty() {
                    reader.done = true;
                }
            }
            Some(sniff::Magic::Pcap {
                big,
                nanos,
                modified,
            }) => {
                if !pcap::start(&mut reader, big, nanos, modified)? {
                    reader.done = true;
                }
            }
            None => {
                let _ = reader.fill(16);
                let seen = reader
                    .buf
                    .bytes()
                    .iter()
                    .take(16)
                    .copied()
                    .collect::<Vec<u8>>();
                return Err(sniff::not_a_capture(&seen, compression, false));
            }
        }
        // A reader may wait a while between its opening and its first packet: that time is not
        // the scan's reading, for the stop and progress cadence ([`CaptureReader::due`]).
        reader.buf.stop_clock();
        Ok(reader)
    }

    /// The next packet, `Ok(None)` at the end. After a non-strict truncated tail, `Ok(None)` and a
    /// warning in `warnings()`.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>> {
        if self.done {
            return Ok(None);
        }
        let framed = match self.kind {
            Kind::Pcap(_) => pcap::next(self),
            Kind::PcapNg(_) => pcapng::next(self, false),
        };
        // A file that shrank under its mapping reads as zeros from some page on: never packets.
        if self.buf.truncated() {
            return Err(self.shrank());
        }
        match framed {
            Ok(Some(f)) => {
                self.stats.packets += 1;
                Ok(Some(self.packet(f)))
            }
            Ok(None) | Err(_) if self.buf.shrank() => Err(self.shrank()),
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }
    /// [`CaptureReader::next_packet`] for a loop that inlines it: a record whole in the buffer
    /// (the formats' fast paths) is framed here, in the caller, anything else (the end, a
    /// record to read or to check in full, every warning and error) goes to `next_packet`, out
    /// of line. Called per packet, `next_packet` cost the one-file scan 73 instructions a
    /// packet more: its call, spills and `Result<Option<..>>` and `Packet` moved through the
    /// stack (cachegrind, snaplen 128; benches/RESULTS.md, "Fifty-first landing", perf-by).
    #[inline(always)]
    pub(crate) fn next_packet_inline(&mut self) -> Result<Option<Packet<'_>>> {
        if !self.done {
            let fast = match &self.kind {
                Kind::Pcap(st) => {
                    let st = *st;
                    pcap::fast_record(self, st)
                }
                Kind::PcapNg(st) if st.big() => pcapng::fast_enhanced_packet::<true>(self),
                Kind::PcapNg(_) => pcapng::fast_enhanced_packet::<false>(self),
            };
            if let Some(f) = fast {
                // As `next_packet`: a file that shrank under its mapping gives no packet.
                if self.buf.truncated() {
                    return Err(self.shrank());
                }
                self.stats.packets += 1;
                return Ok(Some(self.packet(f)));
            }
        }
        self.next_packet_outline()
    }

    #[inline(never)]
    fn next_packet_outline(&mut self) -> Result<Option<Packet<'_>>> {
        self.next_packet()
    }

    /// The packet `f` frames, its bytes borrowed from the buffer.
    #[inline(always)]
    fn packet(&self, f: Framed) -> Packet<'_> {
        let data = self
            .buf
            .storage()
            .get(f.data_start..f.data_end)
            .unwrap_or(&[]);
        Packet {
            ts_ns: f.ts_ns,
            interface: f.interface,
            linktype: f.linktype,
            wire_len: f.wire_len,
            fcs_len: f.fcs_len,
            data,
            offset: f.offset,
        }
    }

    /// The capture's format, read from its header. `None` only for one of several files cut
    /// before its magic number (an empty file of a ring-buffer set,
    /// [`ReadOptions::one_of_several`]), read as no packets: there is no format to name.
    pub fn format(&self) -> Option<&Format> {
        self.format.as_ref()
    }
    /// The compression undone around the capture.
    pub fn compression(&self) -> crate::input::Compression {
        self.compression
    }
    /// The sections read so far (pcapng may start a new one anywhere).
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }
    /// The interfaces declared so far, by [`Interface::index`] (a pcapng section may declare
    /// more after its first packets).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }
    /// What was read so far besides packets, and how many packets.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }
    /// The warnings so far (a capture cut short, packets the capture says it lost, ...).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
    /// The plain (uncompressed) regular file being read, if that is what it is: such a file can
    /// also be read in pieces.
    pub fn plain_path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }
    /// The options it was opened with.
    pub fn options(&self) -> ReadOptions {
        self.options
    }
    /// The bytes come from a memory mapping of the file (`ReadOptions::mmap` was set and the
    /// input could be mapped), not from `read()`.
    pub fn is_mapped(&self) -> bool {
        self.buf.is_mapped()
    }
    /// The length of the bytes read, known before reading them: of a plain file or of bytes in
    /// memory, not of a compressed stream or a pipe. Offsets ([`Packet::offset`]) count in it.
    pub fn data_len(&self) -> Option<u64> {
        self.data_len
    }
    /// The regular file read, compressed or not, when the input was opened by path: it can be
    /// opened again ([`crate::input::open_path`]) to read it anew from its start.
    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.name.as_deref()
    }
    /// Decompressed bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.buf.position()
    }
    /// Bytes of the input consumed so far as its size on disk counts them, for progress
    /// against that size: for a compressed input the compressed bytes read (a little ahead of
    /// the packets framed, and all of them at the end), else [`CaptureReader::position`], and
    /// once the packets have ended, the bytes after it too (a record cut off at the end of the
    /// file, read and told as a warning), so that progress of a whole read reaches the size.
    pub fn consumed(&self) -> u64 {
        self.raw.as_ref().map_or_else(
            || match self.done {
                true => self.position() + self.buf.avail() as u64,
                false => self.position(),
            },
            |raw| raw.load(std::sync::atomic::Ordering::Relaxed),
        )
    }
    /// A read of the input returned [`buffer::PULSE`] (50 ms) or more after the last pulse:
    /// time for a scan to look for a stop and tell progress, however few packets came since (a
    /// slow stream's). Never for a mapped file, whose packets come as fast as they are framed.
    #[inline]
    pub(crate) fn due(&self) -> bool {
        self.buf.due()
    }
    /// One packet more read, for a loop that lets the reader count: whether to look for a stop
    /// now (65,536 packets since the last look, or [`CaptureReader::due`]). Counted down in the
    /// reader, where a slow read can bring the count to its end: one decrement a packet, as
    /// the loop's own count was.
    #[inline]
    pub(crate) fn tick(&mut self) -> bool {
        self.buf.tick()
    }
    /// [`CaptureReader::consumed`], told to progress: the next [`CaptureReader::due`] waits for
    /// a later read.
    pub(crate) fn looked(&mut self) -> u64 {
        self.buf.looked();
        self.consumed()
    }
    /// How an error names this input, the `k`-th (from 0) of `n` read at once ([`label`]).
    pub fn label(&self, k: usize, n: usize) -> String {
        label(self.name.as_deref(), k, n)
    }
    /// `e` met reading this input, the `k`-th (from 0) of `n`: named among the others when
    /// there are several ([`Error::in_input`]), as it is.
    #[cold]
    pub fn named(&self, e: Error, k: usize, n: usize) -> Error {
        named_among(e, n, || self.label(k, n))
    }
    /// This reader is one of several reading at once: a mapped one hands its pages back in
    /// smaller steps, so that a scan of many files holds less of each mapped (a scan of several
    /// files does this itself).
    pub fn share_residency(&mut self) {
        self.buf.share_residency();
    }

    /// Ask for `n` unconsumed bytes, turning read failures into the right error kind.
    /// `End` only when no byte at all is left; callers then go through `end()`, which still
    /// warns if a compressed stream was cut exactly at a record boundary.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<Fill> {
        match self.buf.fill(n) {
            Ok(true) => Ok(Fill::Ready),
            Ok(false) if self.buf.avail() == 0 => Ok(Fill::End),
            Ok(false) => Ok(Fill::Cut),
            Err(e) => match classify(&e) {
                ReadFailure::CompressedCut => {
                    self.compressed_cut = true;
                    self.buf.set_eof();
                    if self.buf.avail() >= n {
                        Ok(Fill::Ready)
                    } else if self.buf.avail() == 0 {
                        Ok(Fill::End)
                    } else {
                        Ok(Fill::Cut)
                    }
                }
                ReadFailure::Decompression(msg) => {
                    // The decoder reads ahead: this is how far into the file it had read.
                    let read = self.raw.as_ref().map_or(String::new(), |raw| {
                        let n = raw.load(std::sync::atomic::Ordering::Relaxed);
                        format!(" within its first {n} bytes")
                    });
                    let tool = self.compression.name();
                    Err(Error::at(
                        ErrorKind::Decompression,
                        self.buf.position() + self.buf.avail() as u64,
                        format!(
                            "damaged {msg}{read} (`{tool} -t FILE` confirms it; `{tool} -dc \
                             FILE > part` keeps the packets before it, read with a warning \
                             where they are cut)"
                        ),
                    )
                    .caused_by(e))
                }
                ReadFailure::Io(msg) => Err(Error::at(ErrorKind::Io, self.buf.position(), msg)
                    .caused_by(crate::input::untagged(e))),
            },
        }
    }

    /// The input ends inside the record or block at `offset`: a warning (or an error when
    /// strict), and the end of the packets.
    fn cut(&mut self, offset: u64, inside: &str) -> Result<Option<Framed>> {
        // How much of it there is: a few bytes are a file still being written, megabytes a
        // length that is damaged (and the rest of the file unread behind it).
        let held = match self.buf.avail() {
            0 => String::new(),
            n => format!(", of which the input holds {n} bytes"),
        };
        let reason = if self.compressed_cut {
            format!(
                "the {} stream ends early, {inside}{held} (file may still be being written)",
                self.compression.name()
            )
        } else {
            format!("capture ends {inside}{held} (file may still be being written)")
        };
        if self.options.strict {
            return Err(Error::at(ErrorKind::Truncated, offset, reason));
        }
        self.warnings
            .push(Warning::new(ErrorKind::Truncated, Some(offset), reason));
        Ok(None)
    }

    /// The compressed stream was cut exactly at a record boundary: still worth a warning.
    fn end(&mut self) -> Result<Option<Framed>> {
        if self.compressed_cut {
            let offset = self.buf.position();
            return self.cut(offset, "at a record boundary");
        }
        Ok(None)
    }

    #[cold]
    fn shrank(&mut self) -> Error {
        self.done = true;
        self.shrank_error()
    }

    fn shrank_error(&self) -> Error {
        Error::at(
            ErrorKind::Io,
            self.buf.position(),
            "the file shrank while it was being read (another process truncated or rewrote \
             it), or a page of it could not be read (an I/O error under the memory mapping); \
             read it again once it is complete, or with mmap=False to see an I/O error as such",
        )
    }

    /// A record longer than libpcap takes for its link type: read, counted, and told once per
    /// capture (at the first), as tcpdump and tshark would stop at it. The formats' general
    /// framing calls this for every record it frames; their fast paths take none longer than
    /// [`COMMON_MAX_RECORD`](crate::wire::linktype::COMMON_MAX_RECORD), so that the per-packet
    /// path pays nothing for it (with the comparison there, full-frame scans measured 1–6 %
    /// slower per CPU second, near this machine's noise).
    #[inline]
    fn check_record_len(&mut self, f: &Framed) {
        if f.data_end - f.data_start > crate::wire::linktype::COMMON_MAX_RECORD as usize {
            self.oversized(f);
        }
    }

    #[cold]
    #[inline(never)]
    fn oversized(&mut self, f: &Framed) {
        let len = f.data_end - f.data_start;
        let max = crate::wire::linktype::libpcap_max_record(f.linktype);
        if len <= max as usize {
            return;
        }
        self.stats.oversized_records += 1;
        if self.stats.oversized_records > 1 {
            return;
        }
        let name = match crate::wire::linktype_name(f.linktype) {
            "UNKNOWN" => String::new(),
            name => format!(" ({name})"),
        };
        self.warnings.push(Warning::new(
            ErrorKind::OversizedRecord,
            Some(f.offset),
            format!(
                "a record of {len} captured bytes, more than the {max} libpcap takes for link \
                 type {}{name}: burstcore reads it (and any more such records, not told again), \
                 but tcpdump stops reading the file there (\"invalid packet capture length\") \
                 and tshark, for most link types, refuses the file (\"bigger than maximum\")",
                f.linktype
            ),
        ));
    }

    fn timestamp_out_of_range(&mut self, offset: u64) {
        self.stats.timestamps_out_of_range += 1;
        if self.stats.timestamps_out_of_range == 1 {
            self.warnings.push(Warning::new(
                ErrorKind::TimestampOutOfRange,
                Some(offset),
                "packet timestamp does not fit in 64-bit nanoseconds since 1970 \
                 (1677-09-21 to 2262-04-11); such packets are read without a timestamp",
            ));
        }
    }
}

#[cfg(test)]
mod mapped_readers_tests {
    use super::*;

    #[test]
    fn several_files_are_mapped_up_to_eight_readers() {
        let mapped = |files, threads| ReadOptions::for_scan(files, threads).mmap;
        // One file is always mapped (where mapping is the default): its chunks share one mapping.
        assert_eq!(mapped(1, 8), ReadOptions::default().mmap);
        assert_eq!(mapped(8, 1), ReadOptions::default().mmap);
        assert_eq!(mapped(4, 2), ReadOptions::default().mmap);
        assert!(!mapped(8, 2) && !mapped(5, 2) && !mapped(9, 1));
    }
}

#[cfg(test)]
mod buffer_size_tests {
    use super::*;

    #[test]
    fn a_small_plain_file_gets_a_buffer_of_its_size() {
        let full = buffer::DEFAULT_CAPACITY;
        assert_eq!(buffer_capacity(Compression::None, Some(1000)), 1001);
        assert_eq!(buffer_capacity(Compression::None, Some(0)), 1);
        assert_eq!(buffer_capacity(Compression::None, Some(10 << 30)), full);
        assert_eq!(buffer_capacity(Compression::None, None), full);
        // Compressed: the file's size says nothing of what it decompresses to.
        assert_eq!(buffer_capacity(Compression::Gzip, Some(1000)), full);
    }
}
