//! Reading one plain (uncompressed, seekable) capture file in byte ranges, each with its own
//! reader, so that threads can frame and scan pieces of one file at once.
//!
//! A chunk reader gets the bytes before the first packet (pcap file header; pcapng section header
//! and interface descriptions) followed by the file from a record boundary at or after the start
//! of its range, and frames the packets whose records start inside its range. The boundary is
//! found by validating structure: pcap record headers (plausible lengths and sub-second field,
//! seconds close to each other) chained several records ahead; pcapng block type, total length
//! repeated at the block's end, chained several blocks ahead.
//!
//! Structure can be faked by packet bytes (a capture inside a capture), so a boundary found this
//! way is only trusted once confirmed: the first packet a chunk frames must be exactly the packet
//! at which the chunk before stopped ([`chunks_line_up`]). The first chunk starts at the first
//! packet found by a sequential reader, so by induction every chunk then frames exactly the
//! packets of a sequential read. A chunk that meets a section header or interface description
//! (which would change how later packets are read), or any warning, makes the split unusable too:
//! the caller then reads sequentially.
//!
//! With `ReadOptions::mmap`, the plan maps the file once and every chunk reader frames its header
//! and its range from that mapping in place (`Buffer::mapped_chunk`), and the boundary search
//! reads it too; the stream, and so every offset, error and warning, is the buffered chunk
//! reader's. A file that does not map is read buffered.

use super::buffer::Buffer;
use super::bytes::u32_at;
use super::mapping::Mapping;
use super::{CaptureReader, FcsSample, Format, Interface, InterfaceStats, ReadOptions};
use crate::error::{Error, ErrorKind, Result, Warning};
use crate::input::{Compression, Input};
use crate::packet::Packet;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Records (pcap) or blocks (pcapng) that must chain after a candidate boundary (fewer only when
/// the file ends exactly after them).
const CHAIN: usize = 8;
/// How far past the start of its range a chunk looks for a boundary before giving up.
const SEARCH: u64 = 64 << 20;
/// Bytes read at a time while searching.
const WINDOW: usize = 1 << 20;

/// Chunk readers opened on a mapping, in this process: a scan's caller cannot see its chunk
/// readers, and this tells whether a parallel scan really framed from the mapping.
static MAPPED_CHUNKS: AtomicU64 = AtomicU64::new(0);

/// How many chunk readers this process has opened on a mapping of their file so far.
pub fn mapped_chunk_readers() -> u64 {
    MAPPED_CHUNKS.load(Ordering::Relaxed)
}

/// A file's first instant and the latest of its last megabyte ([`SplitPlan::time_span`]).
pub type TimeSpan = Option<(i64, i64)>;

/// Everything a chunk reader needs from the start of the file.
#[derive(Debug, Clone)]
pub struct SplitPlan {
    path: PathBuf,
    /// Bytes before the first packet record.
    header: Vec<u8>,
    /// File length.
    len: u64,
    pcapng: bool,
    big: bool,
    /// pcap: record header length, nanosecond timestamps.
    record_header: usize,
    nanos: bool,
    /// pcap: seconds of the first packets (their median, see [`median_secs`]). Records found
    /// while re-synchronising must be close to them, which rules out runs of zeros (empty
    /// records of time 0) and most other look-alikes.
    first_secs: u32,
    sections: usize,
    interfaces: usize,
    /// The interfaces as the header leaves them, statistics included: what every chunk reader
    /// starts from ([`SplitPlan::interfaces_after`]).
    declared: Vec<Interface>,
    options: ReadOptions,
    first_ts: Option<i64>,
    /// The file mapped once for all chunk readers, with `options.mmap`.
    map: Option<Arc<Mapping>>,
    /// Chunk readers check the first frames of each interface for an FCS the capture does not
    /// declare ([`SplitPlan::check_fcs`]).
    check_fcs: bool,
}

impl SplitPlan {
    /// Read the start of `path`; `Ok(None)` when the file cannot be split (compressed, not a
    /// regular file, no packet, a warning while reading the header).
    pub fn new(path: &Path, options: ReadOptions) -> Result<Option<SplitPlan>> {
        let meta = std::fs::metadata(path).map_err(io_error)?;
        if !meta.is_file() {
            return Ok(None);
        }
        let input = crate::input::open_path(path)?;
        let map = match (options.mmap, input.compression) {
            (true, Compression::None) => crate::input::map_file(path).map(Arc::new),
            _ => None,
        };
        // The header is read from the mapping the chunks will read it from.
        let mut reader = match &map {
            Some(map) => CaptureReader::with_buffer(
                Buffer::mapped(Arc::clone(map)),
                options,
                Compression::None,
                Some(path.to_path_buf()),
                None,
            )?,
            None => CaptureReader::new(input, options)?,
        };
        if reader.compression() != Compression::None {
            return Ok(None);
        }
        let (data_start, first_ts) = match reader.next_packet()? {
            Some(p) => (p.offset, p.ts_ns),
            None => return Ok(None),
        };
        if !reader.warnings().is_empty() {
            return Ok(None);
        }
        // A file with a packet began with a magic number, so its format is known.
        let Some(format) = reader.format() else {
            return Ok(None);
        };
        let (pcapng, big, record_header, nanos) = match format {
            Format::PcapNg => {
                let big = reader
                    .sections()
                    .last()
                    .is_some_and(|s| s.byte_order == super::ByteOrder::Big);
                (true, big, 0, false)
            }
            Format::Pcap {
                byte_order,
                nanos,
                modified,
                ..
            } => (
                false,
                *byte_order == super::ByteOrder::Big,
                if *modified { 24 } else { 16 },
                *nanos,
            ),
        };
        let hlen = usize::try_from(data_start).unwrap_or(usize::MAX);
        let header = match &map {
            Some(map) => map
                .get(..hlen)
                .ok_or_else(|| {
                    Error::at(
                        ErrorKind::Io,
                        data_start,
                        "mapped file shorter than its header",
                    )
                })?
                .to_vec(),
            None => {
                let mut header = vec![0u8; hlen];
                let mut f = File::open(path).map_err(io_error)?;
                f.read_exact(&mut header)?;
                header
            }
        };
        let (sections, interfaces) = (reader.sections().len(), reader.interfaces().len());
        let first_secs = if pcapng {
            0
        } else {
            median_secs(&mut reader, first_ts)
        };
        Ok(Some(SplitPlan {
            path: path.to_path_buf(),
            header,
            len: meta.len(),
            pcapng,
            big,
            record_header,
            nanos,
            first_secs,
            sections,
            interfaces,
            declared: reader.interfaces().to_vec(),
            options,
            first_ts,
            map,
            check_fcs: false,
        }))
    }

    /// Whether the chunk readers frame the file from a shared mapping rather than `read()`.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// Timestamp of the first packet, and the latest timestamp among the packets of the last
    /// megabyte: a cheap estimate of the time the file covers (to tell whether files overlap
    /// before scanning them). `None` when unknown.
    pub fn time_span(&self) -> Result<TimeSpan> {
        Ok(self.time_span_told()?.0)
    }

    /// [`SplitPlan::time_span`], and the warnings its read of the last megabyte gave (offsets
    /// in the file): a file cut mid-record (not read strictly) tells it there, and a caller
    /// that reads no more of the file than this is the only one to meet the cut.
    pub fn time_span_told(&self) -> Result<(TimeSpan, Vec<Warning>)> {
        let Some(first) = self.first_ts else {
            return Ok((None, Vec::new()));
        };
        let from = self.len.saturating_sub(1 << 20).max(self.data_start());
        let Some(mut tail) = self.open(from, self.len)? else {
            return Ok((None, Vec::new()));
        };
        let mut last = None;
        while let Some(p) = tail.next_packet()? {
            if let Some(t) = p.ts_ns {
                last = Some(last.map_or(t, |l: i64| l.max(t)));
            }
        }
        self.hand_back(from, self.len);
        Ok((last.map(|l| (first, l)), tail.warnings()))
    }

    /// Hand back to the kernel the pages of the file's mapping, if it has one, that a short
    /// read of `from..to` (a probe of a few records) mapped: chunk readers hand back what they
    /// pass as they go, but a reader dropped early leaves its last stretch mapped until the
    /// plan goes, and a file mapped in 2 MiB entries makes that 2–4 MiB per probe (a scan of
    /// 8 files that overlap in time probed each about 40 times: 880 MB of resident memory,
    /// against 192 MB on one thread). The stretches around the range go too; another reader
    /// of the same mapping would only fault them in again, with the same bytes.
    pub fn hand_back(&self, from: u64, to: u64) {
        if let Some(map) = &self.map {
            // `release` keeps to whole stretches inside what it is given: widen by one.
            let unit = crate::huge_pages::HUGE as u64;
            let (from, to) = (from.saturating_sub(unit), to.saturating_add(unit));
            let cap = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
            map.release(cap(from), cap(to));
        }
    }

    /// Offset of the first packet record.
    pub fn data_start(&self) -> u64 {
        self.header.len() as u64
    }

    /// Interfaces declared before the first packet (all of them, when the split is usable).
    pub fn interfaces(&self) -> usize {
        self.interfaces
    }

    /// The interfaces a sequential read of the whole file leaves, if the chunks that ended as
    /// `ends` (in file order, each read to its end) framed exactly its packets
    /// ([`chunks_line_up`]); `None` if they did not, and the file must be read another way.
    pub fn read_whole<'a>(
        &self,
        ends: impl IntoIterator<Item = &'a ChunkEnd>,
    ) -> Option<Vec<Interface>> {
        let ends: Vec<&ChunkEnd> = ends.into_iter().collect();
        let seams: Vec<_> = ends.iter().map(|e| e.seam).collect();
        chunks_line_up(self, &seams).then(|| self.interfaces_after(&ends))
    }

    /// The interfaces as a sequential read of the whole file leaves them, from those of the
    /// readers of its chunks (in file order, each read to its end). A sequential read keeps, of
    /// each counter, the value of the last Interface Statistics Block that gave it (a block may
    /// leave one out); every chunk reader starts from the header's statistics, so a value that
    /// differs from the header's was given in that chunk, and the last chunk to give one wins.
    /// (A chunk that gives the header's value again after an earlier chunk gave another is
    /// taken for silent: counters run from the start of the capture and do not go back.)
    ///
    /// The blocks between a chunk's range end and the packet it stopped at are read by that
    /// chunk and by the next, which starts at the first block at or after that range end and
    /// meets them before its first packet. When the chunks line up, everything a chunk after
    /// the first reads before its first packet lies there, so its statistics blocks of that
    /// stretch are counted once, in the earlier chunk (`isb_count`; the counters a block gives
    /// are the same whichever chunk reads it).
    fn interfaces_after(&self, chunks: &[&ChunkEnd]) -> Vec<Interface> {
        let mut out = self.declared.clone();
        for (k, chunk) in chunks.iter().enumerate() {
            for (i, ((merged, seen), header)) in out
                .iter_mut()
                .zip(&chunk.interfaces)
                .zip(&self.declared)
                .enumerate()
            {
                let already = if k == 0 {
                    0
                } else {
                    chunk.isb_before_first.get(i).copied().unwrap_or(0)
                };
                merge_statistics(&mut merged.stats, &seen.stats, &header.stats, already);
            }
        }
        out
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// `n` byte ranges of about equal size covering the packet records.
    pub fn ranges(&self, n: usize) -> Vec<(u64, u64)> {
        self.weighted_ranges(&vec![1; n.max(1)])
    }

    /// Byte ranges covering the packet records, one per weight, of sizes in proportion to the
    /// weights (all zero: as if all were one).
    pub fn weighted_ranges(&self, weights: &[u64]) -> Vec<(u64, u64)> {
        let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
        if total == 0 {
            return self.weighted_ranges(&vec![1; weights.len().max(1)]);
        }
        let (start, end) = (self.data_start(), self.len);
        let span = u128::from(end.saturating_sub(start));
        // Boundaries at the running sums of the weights; below `span` × `total` < 2¹²⁸.
        let at = |sum: u128| start + (span * sum / total) as u64;
        let mut sum = 0u128;
        weights
            .iter()
            .map(|&w| {
                let a = at(sum);
                sum += u128::from(w);
                (a, at(sum))
            })
            .collect()
    }

    /// A reader of the packets whose records start in `from..to`. `Ok(None)` when no record
    /// boundary could be found (the caller reads sequentially instead).
    pub fn open(&self, from: u64, to: u64) -> Result<Option<ChunkReader>> {
        let mut peek = match &self.map {
            Some(map) => Peek::Mapped {
                map,
                // What the buffered search sees: the file's length when the plan was made.
                bytes: map.get(..self.mapped_len()).unwrap_or(&[]),
            },
            None => Peek::read(File::open(&self.path).map_err(io_error)?, self.len),
        };
        let start = if from <= self.data_start() {
            Some(self.data_start())
        } else {
            self.resync(&mut peek, from)?
        };
        let Some(start) = start else {
            return Ok(None);
        };
        let reader = match peek {
            Peek::Read { mut file, .. } => {
                file.seek(SeekFrom::Start(start))?;
                let input = Input {
                    reader: Box::new(Cursor::new(self.header.clone()).chain(file)),
                    compression: Compression::None,
                    file_len: Some(self.len),
                    raw_bytes: Arc::new(AtomicU64::new(0)),
                    path: None,
                };
                CaptureReader::new(input, self.options)?
            }
            Peek::Mapped { map, .. } => {
                // The header's bytes are the mapping's own (`new` copied them from it), so the
                // header is framed exactly as when the plan was made and ends consumed at a
                // record boundary, where the buffer moves on to `start`.
                let from = usize::try_from(start).unwrap_or(usize::MAX);
                let buf = Buffer::mapped_chunk(Arc::clone(map), self.header.len(), from);
                let reader =
                    CaptureReader::with_buffer(buf, self.options, Compression::None, None, None)?;
                MAPPED_CHUNKS.fetch_add(1, Ordering::Relaxed);
                reader
            }
        };
        Ok(Some(ChunkReader {
            reader,
            shift: start,
            hlen: self.data_start(),
            to,
            unsettled: true,
            gate: 0,
            first: None,
            isb_before_first: None,
            stop: None,
            done: false,
            sections: self.sections,
            interfaces: self.interfaces,
            len: self.len,
            fcs: self.check_fcs.then(|| Box::new(FcsSample::logged())),
        }))
    }

    /// Have every chunk reader opened from now on check the first frames of each interface for
    /// an FCS the capture does not declare, as [`CaptureReader::check_fcs`] has a reader of the
    /// whole file check them ([`SplitPlan::fcs_after`]).
    pub fn check_fcs(&mut self) {
        self.check_fcs = true;
    }

    /// The frames a sequential read of the whole file checks for an FCS it does not declare,
    /// from those of its chunks (in file order, each read to its end, lined up): each chunk's
    /// frames continue the sample of those before it ([`FcsSample::follow`]). `None` unless the
    /// plan [`SplitPlan::check_fcs`].
    pub fn fcs_after<'a>(&self, ends: impl IntoIterator<Item = &'a ChunkEnd>) -> Option<FcsSample> {
        self.check_fcs.then(|| {
            let mut sample = FcsSample::default();
            for end in ends {
                if let Some(chunk) = &end.fcs {
                    sample.follow(chunk);
                }
            }
            sample
        })
    }

    /// How many bytes of the mapping are the file as the plan saw it.
    fn mapped_len(&self) -> usize {
        let len = usize::try_from(self.len).unwrap_or(usize::MAX);
        self.map.as_ref().map_or(0, |m| m.len().min(len))
    }

    /// The first offset at or after `from` where a chain of valid records starts.
    fn resync(&self, peek: &mut Peek<'_>, from: u64) -> Result<Option<u64>> {
        let limit = from.saturating_add(SEARCH).min(self.len);
        let step = if self.pcapng { 4 } else { 1 };
        // pcapng blocks start at multiples of 4 (the section header is at 0, lengths are
        // multiples of 4).
        let mut p = if self.pcapng {
            from.div_ceil(4) * 4
        } else {
            from
        };
        while p < limit {
            let ok = if self.pcapng {
                self.chain_pcapng(peek, p)?
            } else {
                self.chain_pcap(peek, p)?
            };
            if ok {
                return Ok(Some(p));
            }
            p += step;
        }
        // Searched to the end of the file: no record starts in the rest of it.
        Ok((limit == self.len).then_some(self.len))
    }

    fn chain_pcapng(&self, peek: &mut Peek<'_>, mut p: u64) -> Result<bool> {
        const KNOWN: [u32; 10] = [1, 2, 3, 4, 5, 6, 0x0A, 0x0BAD, 0x4000_0BAD, 0x0A0D_0D0A];
        for k in 0..CHAIN {
            if p == self.len {
                return Ok(true);
            }
            let Some(h) = peek.at(p, 28, k > 0)? else {
                return Ok(false);
            };
            let kind = u32_at(h, 0, self.big);
            let len = u32_at(h, 4, self.big);
            if !KNOWN.contains(&kind)
                || len < 12
                || !len.is_multiple_of(4)
                || len > self.options.limits.max_block_len
                || p + u64::from(len) > self.len
            {
                return Ok(false);
            }
            if kind == 6 && (len < 32 || u32_at(h, 8, self.big) as usize >= self.interfaces) {
                return Ok(false);
            }
            if kind == 6 && u64::from(u32_at(h, 20, self.big)) + 32 > u64::from(len) {
                return Ok(false);
            }
            let Some(t) = peek.at(p + u64::from(len) - 4, 4, true)? else {
                return Ok(false);
            };
            if u32_at(t, 0, self.big) != len {
                return Ok(false);
            }
            p += u64::from(len);
        }
        Ok(true)
    }

    fn chain_pcap(&self, peek: &mut Peek<'_>, mut p: u64) -> Result<bool> {
        let hlen = self.record_header as u64;
        let max_sub = if self.nanos { 1_000_000_000 } else { 1_000_000 };
        // Up to a day before the first packet (reordering) and ten years after it.
        let lo = self.first_secs.saturating_sub(86_400);
        let hi = self.first_secs.saturating_add(3650 * 86_400);
        let mut first_secs = None;
        for k in 0..CHAIN {
            if p == self.len {
                return Ok(true);
            }
            let Some(h) = peek.at(p, 16, k > 0)? else {
                return Ok(false);
            };
            let secs = u32_at(h, 0, self.big);
            let sub = u32_at(h, 4, self.big);
            let caplen = u32_at(h, 8, self.big);
            let wire = u32_at(h, 12, self.big);
            let near = first_secs.is_none_or(|s: u32| s.abs_diff(secs) <= 3600);
            if sub >= max_sub
                || !(lo..=hi).contains(&secs)
                || caplen > wire
                || wire > 1 << 24
                || u64::from(caplen) + hlen > u64::from(self.options.limits.max_block_len)
                || !near
                || p + hlen + u64::from(caplen) > self.len
            {
                return Ok(false);
            }
            first_secs.get_or_insert(secs);
            p += hlen + u64::from(caplen);
        }
        Ok(true)
    }
}

/// An error opening the file again (for a chunk, or its metadata): its text, as the OS gives it,
/// and the error itself for `source()`.
fn io_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, e.to_string()).caused_by(e)
}

/// Packets whose seconds make the reference of a pcap's boundary search.
const REFERENCE: usize = 15;

/// The median of the seconds of the first packet (at `first_ts`) and of the next few that
/// `reader` reads: one odd stamp among them (a first packet stamped 1970, before the capturing
/// host's clock was set; a damaged record) does not then send every chunk's search looking for
/// records near it, find none, and leave the whole scan to one thread.
fn median_secs(reader: &mut CaptureReader, first_ts: Option<i64>) -> u32 {
    let mut secs: Vec<u32> = first_ts.into_iter().map(secs_of).collect();
    for _ in 1..REFERENCE {
        let Ok(Some(p)) = reader.next_packet() else {
            break;
        };
        secs.extend(p.ts_ns.map(secs_of));
    }
    secs.sort_unstable();
    secs.get(secs.len() / 2).copied().unwrap_or(0)
}

/// A pcap record's seconds, from its timestamp (which they make, with the fraction below them).
fn secs_of(ts_ns: i64) -> u32 {
    u32::try_from(ts_ns.div_euclid(1_000_000_000)).unwrap_or(0)
}

/// Random access to a file: its mapping, or windows of bytes read from it.
enum Peek<'m> {
    /// The plan's mapping, and the bytes of it that are the file.
    Mapped {
        map: &'m Arc<Mapping>,
        bytes: &'m [u8],
    },
    Read {
        file: File,
        len: u64,
        /// Where the search looks at candidates: a window that moves on with it.
        near: Window,
        /// A few bytes around a chain's later records. Read into the search's window, a chain
        /// that runs past it would send the window there and back at every candidate, a MiB
        /// each way: a damaged stretch of headers that chain to far offsets then cost minutes.
        far: Window,
        /// Reads from the file so far.
        #[cfg(test)]
        reads: u64,
    },
}

/// Bytes read from a file, from `base` on.
#[derive(Default)]
struct Window {
    base: u64,
    buf: Vec<u8>,
}

/// Bytes read at a time for a chain's later records.
const FAR: usize = 4 << 10;

impl Peek<'_> {
    fn read(file: File, len: u64) -> Self {
        Peek::Read {
            file,
            len,
            near: Window::default(),
            far: Window::default(),
            #[cfg(test)]
            reads: 0,
        }
    }

    /// `n` bytes at `off`, `None` past the end of the file. `chain`: for a candidate's later
    /// records, which must not move the search's window.
    fn at(&mut self, off: u64, n: usize, chain: bool) -> Result<Option<&[u8]>> {
        match self {
            Peek::Mapped { bytes, .. } => {
                let Ok(i) = usize::try_from(off) else {
                    return Ok(None);
                };
                Ok(bytes.get(i..i.saturating_add(n)))
            }
            Peek::Read {
                file,
                len,
                near,
                far,
                #[cfg(test)]
                reads,
            } => {
                if off.saturating_add(n as u64) > *len {
                    return Ok(None);
                }
                let inside =
                    |w: &Window| off >= w.base && off + n as u64 <= w.base + w.buf.len() as u64;
                let w = if inside(near) {
                    near
                } else if chain && inside(far) {
                    far
                } else {
                    let (w, size) = if chain { (far, FAR) } else { (near, WINDOW) };
                    let want = (*len - off).min(size.max(n) as u64) as usize;
                    file.seek(SeekFrom::Start(off))?;
                    w.buf.resize(want, 0);
                    file.read_exact(&mut w.buf)?;
                    w.base = off;
                    #[cfg(test)]
                    {
                        *reads += 1;
                    }
                    w
                };
                let i = (off - w.base) as usize;
                Ok(w.buf.get(i..i + n))
            }
        }
    }
}

/// The packets of one byte range of a file (see the module documentation).
#[derive(Debug)]
pub struct ChunkReader {
    reader: CaptureReader,
    /// File offset of the first record read, and the length of the header in front of it.
    shift: u64,
    hlen: u64,
    to: u64,
    /// The one test a packet needs on each side of the read ([`ChunkReader::next_framed`]):
    /// set until the first packet's ISB counts are taken, and once the chunk is done.
    unsettled: bool,
    /// The stream offset (`header ++ file[shift..]`) from which a packet needs a look: 0 until
    /// the first packet is framed (so that it takes one), then the range's end.
    gate: u64,
    first: Option<u64>,
    /// Each interface's `isb_count` when the first packet was framed (or the chunk ended
    /// without one): the blocks before it, which the chunk before this one read too. Taken
    /// once the packet is handed back (it borrows the reader), before the reader goes on.
    isb_before_first: Option<Vec<u32>>,
    stop: Option<u64>,
    done: bool,
    sections: usize,
    interfaces: usize,
    len: u64,
    /// The frames of the chunk checked for an FCS the capture does not declare, when its plan
    /// [`SplitPlan::check_fcs`]: only the packets of its range (not the one it stops at, the next
    /// chunk's first) that its scan keeps ([`ChunkReader::next_kept`]).
    fcs: Option<Box<FcsSample>>,
}

impl ChunkReader {
    /// The next packet whose record starts before the end of the range (offsets in the file).
    /// Inlined like [`CaptureReader::next_packet`]: called out of line (as `read_packets`' ranges
    /// called it), each packet came back through memory once more, and two ranges ran 6–8 %
    /// more instructions per packet than one read (callgrind, snaplen-128 pcap and pcapng);
    /// inlined, 3–4 %.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>> {
        self.next_with(|p, offset| Packet { offset, ..*p })
    }

    /// The next packet of the range, as `f` makes it from the packet where the reader left it
    /// and the record's offset in the file (the packet's own `offset` counts from the range's
    /// start). For a scan's per-packet loop: moving each whole `Packet` out of `next_packet`
    /// made the CPU load in 16-byte pieces what the reader had just stored in smaller ones,
    /// which it cannot forward from its store buffer; `f` reads the fields it needs one by one
    /// instead (`chunked::run`). Always inlined: that loop has a copy per size rule, and the
    /// compiler then called this out of line, 80 instructions a packet (cachegrind).
    #[inline(always)]
    pub fn next_with<'s, T>(
        &'s mut self,
        f: impl FnOnce(&Packet<'s>, u64) -> T,
    ) -> Result<Option<T>> {
        self.next_framed(|p, off, _| f(p, off))
    }

    /// The next packet of the range as `make` makes it, as [`ChunkReader::next_with`]; a
    /// packet that `make` keeps (`Ok`) is checked for an undeclared FCS when the plan asked
    /// ([`SplitPlan::check_fcs`]), as a scan of the whole file checks the packets it keeps.
    /// Always inlined, as [`ChunkReader::next_with`]: out of line it cost a two-thread scan
    /// 21 M instructions more (652.5 against 631.1 M, cachegrind, 60 MB snaplen-128 pcap).
    #[inline(always)]
    pub(crate) fn next_kept<'s, T, E>(
        &'s mut self,
        make: impl FnOnce(&Packet<'s>) -> std::result::Result<T, E>,
    ) -> Result<Option<std::result::Result<T, E>>> {
        self.next_framed(|p, _, fcs| {
            let made = make(p);
            if made.is_ok() {
                if let Some(s) = fcs.as_deref_mut() {
                    s.see(p);
                }
            }
            made
        })
    }

    /// [`ChunkReader::next_with`], `f` also given the chunk's FCS sample (the packet borrows the
    /// reader, the sample is apart). The packet is framed by [`CaptureReader::next_packet_inline`]
    /// (a whole record here, anything else out of line, as the one-file scan's loop frames it);
    /// the chunk's bookkeeping is one flag tested before the read (the chunk done, or its first
    /// packet's ISB counts still to take) and one compare after it (the first packet, or the
    /// range's end reached), everything else out of line.
    #[inline(always)]
    fn next_framed<'s, T>(
        &'s mut self,
        f: impl FnOnce(&Packet<'s>, u64, &mut Option<Box<FcsSample>>) -> T,
    ) -> Result<Option<T>> {
        if self.unsettled && self.settle() {
            return Ok(None);
        }
        match self.reader.next_packet_inline() {
            Ok(Some(p)) => {
                let (hlen, shift) = (self.hlen, self.shift);
                if p.offset >= self.gate {
                    let off = p.offset - hlen + shift;
                    if self.first.is_none() {
                        self.first = Some(off);
                        // Past the first packet, a packet's stream offset at or after this is
                        // one at or after the range's end in the file (`to` may lie before
                        // `shift`: 0 then).
                        self.gate = self.to.saturating_add(hlen).saturating_sub(shift);
                    }
                    if off >= self.to {
                        self.done = true;
                        self.unsettled = true;
                        self.stop = Some(off);
                        return Ok(None);
                    }
                }
                // Offsets past the header count in the stream `header ++ file[shift..]`: a
                // packet's offset in the file is its offset there, less the header, from
                // `shift`.
                let off = p.offset - hlen + shift;
                Ok(Some(f(&p, off, &mut self.fcs)))
            }
            // The reader ended before a packet at or past the range's end: the chunk stops at
            // the file's end. (Fields, not methods: the read borrows the reader for `'s`.)
            Ok(None) => {
                self.done = true;
                self.unsettled = true;
                self.first.get_or_insert(self.len);
                self.stop = Some(self.len);
                Ok(None)
            }
            Err(e) => Err(in_file(e, self.hlen, self.shift)),
        }
    }

    /// Before a read while `unsettled`: whether the chunk is done; else the
    /// first packet's ISB counts are taken once it was handed back.
    #[cold]
    #[inline(never)]
    fn settle(&mut self) -> bool {
        if self.done {
            return true;
        }
        if self.first.is_some() {
            if self.isb_before_first.is_none() {
                self.isb_before_first = Some(isb_counts(&self.reader));
            }
            self.unsettled = false;
        }
        false
    }

    /// The reader's warnings, their offsets in the file (as an error's are).
    pub fn warnings(&self) -> Vec<Warning> {
        let (hlen, shift) = (self.hlen, self.shift);
        self.reader
            .warnings()
            .iter()
            .map(|w| {
                let mut w = w.clone();
                w.offset = w
                    .offset
                    .map(|o| if o >= hlen { o - hlen + shift } else { o });
                w
            })
            .collect()
    }

    /// File offset of the first byte not read yet.
    pub fn position(&self) -> u64 {
        self.reader.position().saturating_sub(self.hlen) + self.shift
    }

    /// The reader underneath (interfaces, statistics, whether it is mapped).
    pub fn reader(&self) -> &CaptureReader {
        &self.reader
    }

    /// The chunk is framed in place from the plan's mapping of the file, not read.
    pub fn is_mapped(&self) -> bool {
        self.reader.is_mapped()
    }

    /// See [`CaptureReader::share_residency`].
    pub fn share_residency(&mut self) {
        self.reader.share_residency();
    }

    /// What [`SplitPlan::read_whole`] needs of this chunk, once it is read to its end.
    pub fn end(&self) -> ChunkEnd {
        ChunkEnd {
            seam: self.seam(),
            interfaces: self.reader.interfaces().to_vec(),
            // The reader reads nothing more once the chunk is done: what it holds now is what it
            // held at the first packet, if none was taken on the way.
            isb_before_first: self
                .isb_before_first
                .clone()
                .unwrap_or_else(|| isb_counts(&self.reader)),
            fcs: self.fcs.clone(),
        }
    }

    /// Offsets of the first packet framed and of the packet the chunk stopped at (the file length
    /// for the end), once read to the end; `None` while reading, or when the chunk met a warning,
    /// a section header or an interface description and cannot be trusted.
    pub fn seam(&self) -> Option<(u64, u64)> {
        let clean = self.done
            && self.reader.warnings().is_empty()
            && self.reader.sections().len() == self.sections
            && self.reader.interfaces().len() == self.interfaces;
        if !clean {
            return None;
        }
        Some((self.first?, self.stop?))
    }
}

/// What a chunk reader read to its end leaves ([`ChunkReader::end`]): where it framed, and its
/// interfaces with the statistics it read.
#[derive(Debug, Clone, Default)]
pub struct ChunkEnd {
    seam: Option<(u64, u64)>,
    interfaces: Vec<Interface>,
    isb_before_first: Vec<u32>,
    /// The frames of the chunk checked for an undeclared FCS, when they were.
    fcs: Option<Box<FcsSample>>,
}

/// An error of a chunk's reader with its offset in the file (the reader counts in the stream
/// `header ++ file[shift..]`): it names the damaged record's offset in the file, as a
/// sequential read's does.
#[cold]
#[inline(never)]
fn in_file(mut e: Error, hlen: u64, shift: u64) -> Error {
    e.offset = e
        .offset
        .map(|o| if o >= hlen { o - hlen + shift } else { o });
    e
}

#[cold]
fn isb_counts(reader: &CaptureReader) -> Vec<u32> {
    reader
        .interfaces()
        .iter()
        .map(|i| i.stats.isb_count)
        .collect()
}

/// Into `merged`, what a chunk reader's statistics `seen` were given after the `header`'s.
/// `already` of the chunk's statistics blocks were counted before (the header's, or those
/// the chunk before this one read too).
fn merge_statistics(
    merged: &mut InterfaceStats,
    seen: &InterfaceStats,
    header: &InterfaceStats,
    already: u32,
) {
    fn take<T: PartialEq + Copy>(merged: &mut T, seen: T, header: T) {
        if seen != header {
            *merged = seen;
        }
    }
    let met = seen.isb_count.saturating_sub(already.max(header.isb_count));
    merged.isb_count = merged.isb_count.saturating_add(met);
    take(&mut merged.if_recv, seen.if_recv, header.if_recv);
    take(&mut merged.if_drop, seen.if_drop, header.if_drop);
    take(&mut merged.os_drop, seen.os_drop, header.os_drop);
    take(&mut merged.fil_accept, seen.fil_accept, header.fil_accept);
    take(&mut merged.usr_deliv, seen.usr_deliv, header.usr_deliv);
    take(&mut merged.start_ns, seen.start_ns, header.start_ns);
    take(&mut merged.end_ns, seen.end_ns, header.end_ns);
}

/// Whether chunks, each read to its end, framed exactly the packets of a sequential read: each
/// starts at the packet where the one before stopped, and the first at the file's first packet.
pub fn chunks_line_up(plan: &SplitPlan, seams: &[Option<(u64, u64)>]) -> bool {
    let mut expect = plan.data_start();
    for seam in seams {
        let Some((first, stop)) = *seam else {
            return false;
        };
        if first != expect {
            return false;
        }
        expect = stop;
    }
    expect == plan.len
}

#[cfg(test)]
mod tests;
