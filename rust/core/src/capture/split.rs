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

use super::bytes::u32_at;
use super::{CaptureReader, Format, ReadOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::input::{Compression, Input};
use crate::packet::Packet;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Records (pcap) or blocks (pcapng) that must chain after a candidate boundary (fewer only when
/// the file ends exactly after them).
const CHAIN: usize = 8;
/// How far past the start of its range a chunk looks for a boundary before giving up.
const SEARCH: u64 = 64 << 20;
/// Bytes read at a time while searching.
const WINDOW: usize = 1 << 20;

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
    /// pcap: seconds of the first packet. Records found while re-synchronising must be close to
    /// it, which rules out runs of zeros (empty records of time 0) and most other look-alikes.
    first_secs: u32,
    sections: usize,
    interfaces: usize,
    options: ReadOptions,
    first_ts: Option<i64>,
}

impl SplitPlan {
    /// Read the start of `path`; `Ok(None)` when the file cannot be split (compressed, not a
    /// regular file, no packet, a warning while reading the header).
    pub fn new(path: &Path, options: ReadOptions) -> Result<Option<SplitPlan>> {
        let meta = std::fs::metadata(path).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
        if !meta.is_file() {
            return Ok(None);
        }
        let mut reader = CaptureReader::new(crate::input::open_path(path)?, options)?;
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
        let (pcapng, big, record_header, nanos) = match reader.format() {
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
        let mut header = vec![0u8; usize::try_from(data_start).unwrap_or(usize::MAX)];
        let mut f = File::open(path).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
        f.read_exact(&mut header)?;
        let mut first = [0u8; 4];
        f.read_exact(&mut first)?;
        let first_secs = u32_at(&first, 0, big);
        Ok(Some(SplitPlan {
            path: path.to_path_buf(),
            header,
            len: meta.len(),
            pcapng,
            big,
            record_header,
            nanos,
            first_secs,
            sections: reader.sections().len(),
            interfaces: reader.interfaces().len(),
            options,
            first_ts,
        }))
    }

    /// Timestamp of the first packet, and the latest timestamp among the packets of the last
    /// megabyte: a cheap estimate of the time the file covers (to tell whether files overlap
    /// before scanning them). `None` when unknown.
    pub fn time_span(&self) -> Result<Option<(i64, i64)>> {
        let Some(first) = self.first_ts else {
            return Ok(None);
        };
        let from = self.len.saturating_sub(1 << 20).max(self.data_start());
        let Some(mut tail) = self.open(from, self.len)? else {
            return Ok(None);
        };
        let mut last = None;
        while let Some(p) = tail.next_packet()? {
            if let Some(t) = p.ts_ns {
                last = Some(last.map_or(t, |l: i64| l.max(t)));
            }
        }
        Ok(last.map(|l| (first, l)))
    }

    /// Offset of the first packet record.
    pub fn data_start(&self) -> u64 {
        self.header.len() as u64
    }

    /// Interfaces declared before the first packet (all of them, when the split is usable).
    pub fn interfaces(&self) -> usize {
        self.interfaces
    }

    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// `n` byte ranges of about equal size covering the packet records.
    pub fn ranges(&self, n: usize) -> Vec<(u64, u64)> {
        let (start, end) = (self.data_start(), self.len);
        let n = n.max(1) as u64;
        let span = end.saturating_sub(start);
        (0..n)
            .map(|i| {
                let a = start + span * i / n;
                let b = start + span * (i + 1) / n;
                (a, b)
            })
            .collect()
    }

    /// A reader of the packets whose records start in `from..to`. `Ok(None)` when no record
    /// boundary could be found (the caller reads sequentially instead).
    pub fn open(&self, from: u64, to: u64) -> Result<Option<ChunkReader>> {
        let mut file =
            File::open(&self.path).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
        let start = if from <= self.data_start() {
            Some(self.data_start())
        } else {
            self.resync(&mut file, from)?
        };
        let Some(start) = start else {
            return Ok(None);
        };
        file.seek(SeekFrom::Start(start))?;
        let input = Input {
            reader: Box::new(Cursor::new(self.header.clone()).chain(file)),
            compression: Compression::None,
            file_len: Some(self.len),
            raw_bytes: Arc::new(AtomicU64::new(0)),
            path: None,
        };
        let reader = CaptureReader::new(input, self.options)?;
        Ok(Some(ChunkReader {
            reader,
            shift: start,
            hlen: self.data_start(),
            to,
            first: None,
            stop: None,
            done: false,
            sections: self.sections,
            interfaces: self.interfaces,
            len: self.len,
        }))
    }

    /// The first offset at or after `from` where a chain of valid records starts.
    fn resync(&self, file: &mut File, from: u64) -> Result<Option<u64>> {
        let mut peek = Peek::new(file, self.len);
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
                self.chain_pcapng(&mut peek, p)?
            } else {
                self.chain_pcap(&mut peek, p)?
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
        for _ in 0..CHAIN {
            if p == self.len {
                return Ok(true);
            }
            let Some(h) = peek.at(p, 28)? else {
                return Ok(false);
            };
            let kind = u32_at(&h, 0, self.big);
            let len = u32_at(&h, 4, self.big);
            if !KNOWN.contains(&kind)
                || len < 12
                || len % 4 != 0
                || len > self.options.limits.max_block_len
                || p + u64::from(len) > self.len
            {
                return Ok(false);
            }
            if kind == 6 && (len < 32 || u32_at(&h, 8, self.big) as usize >= self.interfaces) {
                return Ok(false);
            }
            if kind == 6 && u64::from(u32_at(&h, 20, self.big)) + 32 > u64::from(len) {
                return Ok(false);
            }
            let Some(t) = peek.at(p + u64::from(len) - 4, 4)? else {
                return Ok(false);
            };
            if u32_at(&t, 0, self.big) != len {
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
        for _ in 0..CHAIN {
            if p == self.len {
                return Ok(true);
            }
            let Some(h) = peek.at(p, 16)? else {
                return Ok(false);
            };
            let secs = u32_at(&h, 0, self.big);
            let sub = u32_at(&h, 4, self.big);
            let caplen = u32_at(&h, 8, self.big);
            let wire = u32_at(&h, 12, self.big);
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

/// Random access to a file through one window of bytes.
struct Peek<'f> {
    file: &'f mut File,
    len: u64,
    base: u64,
    buf: Vec<u8>,
}

impl<'f> Peek<'f> {
    fn new(file: &'f mut File, len: u64) -> Self {
        Peek {
            file,
            len,
            base: 0,
            buf: Vec::new(),
        }
    }

    /// `n` bytes at `off`, `None` past the end of the file.
    fn at(&mut self, off: u64, n: usize) -> Result<Option<Vec<u8>>> {
        if off.saturating_add(n as u64) > self.len {
            return Ok(None);
        }
        let inside = off >= self.base && off + n as u64 <= self.base + self.buf.len() as u64;
        if !inside {
            let want = (self.len - off).min(WINDOW.max(n) as u64) as usize;
            self.file.seek(SeekFrom::Start(off))?;
            self.buf.resize(want, 0);
            self.file.read_exact(&mut self.buf)?;
            self.base = off;
        }
        let i = (off - self.base) as usize;
        Ok(self.buf.get(i..i + n).map(<[u8]>::to_vec))
    }
}

/// The packets of one byte range of a file (see the module documentation).
pub struct ChunkReader {
    reader: CaptureReader,
    /// File offset of the first record read, and the length of the header in front of it.
    shift: u64,
    hlen: u64,
    to: u64,
    first: Option<u64>,
    stop: Option<u64>,
    done: bool,
    sections: usize,
    interfaces: usize,
    len: u64,
}

impl ChunkReader {
    /// The next packet whose record starts before the end of the range (offsets in the file).
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>> {
        if self.done {
            return Ok(None);
        }
        let (hlen, shift) = (self.hlen, self.shift);
        match self.reader.next_packet()? {
            None => {
                self.done = true;
                self.first.get_or_insert(self.len);
                self.stop = Some(self.len);
                Ok(None)
            }
            Some(mut p) => {
                let off = p.offset - hlen + shift;
                self.first.get_or_insert(off);
                if off >= self.to {
                    self.done = true;
                    self.stop = Some(off);
                    return Ok(None);
                }
                p.offset = off;
                Ok(Some(p))
            }
        }
    }

    /// The reader underneath (interfaces, statistics).
    pub fn reader(&self) -> &CaptureReader {
        &self.reader
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
