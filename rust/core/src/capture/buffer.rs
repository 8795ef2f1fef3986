//! One large reusable read buffer. Records are framed in place and handed out as slices of it,
//! so the hot path neither copies nor allocates per packet.
//!
//! The buffer can instead be a read-only mapping of a whole plain file (`ReadOptions::mmap`): its
//! bytes are then the file itself, all available from the start, and `fill` never reads. The
//! framing code sees the same `bytes()`/`storage()`/`position()` either way, so offsets, errors
//! and warnings are identical. The mapping saves the kernel's copy into the buffer, at the price
//! that a file truncated by another process while mapped kills the process with SIGBUS: that is
//! why it is opt-in.

use memmap2::Mmap;
use std::io::{self, Read};

/// Default size of the buffer: big reads amortise system calls and decompressor overhead.
pub(crate) const DEFAULT_CAPACITY: usize = 1 << 20;
/// Compact rather than issue reads smaller than this.
const MIN_READ: usize = 256 << 10;

/// Where the buffered bytes live.
enum Backing {
    Heap(Vec<u8>),
    Mapped(Mmap),
}

impl Backing {
    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            Backing::Heap(v) => v,
            Backing::Mapped(m) => m,
        }
    }
}

/// How far ahead of the framing a mapping's cache lines are prefetched: about the bytes framed
/// while a line comes from memory (of 4, 16 and 64 KiB, 16 was fastest on the full-frame benchmark
/// capture).
const PREFETCH: usize = 16 << 10;
const LINE: usize = 64;

pub(crate) struct Buffer {
    data: Backing,
    /// A mapping's bytes before this offset were prefetched.
    prefetched: usize,
    /// First unconsumed byte.
    start: usize,
    /// End of the valid bytes.
    end: usize,
    /// Stream offset of `data[0]`.
    base: u64,
    eof: bool,
    reader: Box<dyn Read + Send>,
}

impl Buffer {
    pub(crate) fn new(reader: Box<dyn Read + Send>, capacity: usize) -> Self {
        Buffer {
            data: Backing::Heap(vec![0; capacity.max(64)]),
            prefetched: 0,
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            reader,
        }
    }

    /// The whole of a mapped file, already "read": the stream ends where the mapping ends.
    pub(crate) fn mapped(map: Mmap) -> Self {
        let end = map.len();
        Buffer {
            data: Backing::Mapped(map),
            prefetched: 0,
            start: 0,
            end,
            base: 0,
            eof: true,
            reader: Box::new(io::empty()),
        }
    }

    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.data, Backing::Mapped(_))
    }

    /// Unconsumed bytes in the buffer.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.data
            .as_slice()
            .get(self.start..self.end)
            .unwrap_or(&[])
    }

    #[inline]
    pub(crate) fn avail(&self) -> usize {
        self.end - self.start
    }

    /// Stream offset of the first unconsumed byte.
    #[inline]
    pub(crate) fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Index in the backing storage of the first unconsumed byte (to slice it later).
    #[inline]
    pub(crate) fn start(&self) -> usize {
        self.start
    }

    #[inline]
    pub(crate) fn storage(&self) -> &[u8] {
        self.data.as_slice()
    }

    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = self.start.saturating_add(n).min(self.end);
        if let Backing::Mapped(map) = &self.data {
            if self.start + PREFETCH > self.prefetched {
                self.prefetched = prefetch_ahead(map, self.start, self.prefetched);
            }
        }
    }

    /// The source is exhausted (or failed in a way that ends it).
    pub(crate) fn set_eof(&mut self) {
        self.eof = true;
    }

    /// Make at least `need` unconsumed bytes available. `Ok(false)` when the stream ends first.
    /// The caller must have checked `need` against the limits: the buffer grows towards it, but
    /// only as fast as the stream delivers bytes.
    #[inline]
    pub(crate) fn fill(&mut self, need: usize) -> io::Result<bool> {
        if self.avail() >= need {
            return Ok(true);
        }
        self.fill_slow(need)
    }

    #[cold]
    fn fill_slow(&mut self, need: usize) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        // A mapping is created at eof, so only a heap buffer gets here.
        let Backing::Heap(data) = &mut self.data else {
            return Ok(false);
        };
        let missing = need - (self.end - self.start);
        if data.len() - self.end < missing.max(MIN_READ) && self.start > 0 {
            data.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        while self.end - self.start < need {
            if self.end == data.len() {
                // Grow only as bytes actually arrive (at most doubling): a length field alone,
                // even one within the limits, never allocates the size it claims.
                let target = (self.start + need).min(data.len().saturating_mul(2));
                data.resize(target, 0);
            }
            let free = match data.get_mut(self.end..) {
                Some(free) if !free.is_empty() => free,
                _ => return Ok(false),
            };
            match self.reader.read(free) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => self.end += n.min(free_len(data, self.end)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Prefetch the cache lines of `map` from `done` up to `PREFETCH` bytes past `start`; returns the
/// new end. Framing chases record lengths through the file, one dependent load per record: from a
/// mapping each would wait for memory (the hardware prefetcher stops at page boundaries), where
/// `read()` has just streamed the bytes through the cache. Measured: without this the mapping was
/// up to 25 % slower than `read()` on snaplen-128 captures; with it, as fast or faster.
fn prefetch_ahead(map: &Mmap, start: usize, done: usize) -> usize {
    let to = start.saturating_add(PREFETCH).min(map.len());
    let mut at = done;
    while at < to {
        prefetch(map.as_ptr().wrapping_add(at));
        at += LINE;
    }
    at
}

#[inline(always)]
fn prefetch(p: *const u8) {
    // SAFETY: a prefetch is a hint that never faults, whatever the address.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn free_len(data: &[u8], end: usize) -> usize {
    data.len().saturating_sub(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most 3 bytes per call, to exercise refills and compaction.
    struct Trickle(Vec<u8>, usize);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let rest = &self.0[self.1..];
            let n = rest.len().min(buf.len()).min(3);
            buf[..n].copy_from_slice(&rest[..n]);
            self.1 += n;
            Ok(n)
        }
    }

    #[test]
    fn frames_across_refills_and_growth() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        let mut b = Buffer::new(Box::new(Trickle(data.clone(), 0)), 64);
        let mut pos = 0usize;
        let mut step = 1;
        while pos < data.len() {
            let want = step.min(data.len() - pos);
            assert!(b.fill(want).unwrap());
            assert_eq!(b.position(), pos as u64);
            assert_eq!(&b.bytes()[..want], &data[pos..pos + want]);
            b.consume(want);
            pos += want;
            step = step * 7 % 200 + 1;
        }
        assert!(!b.fill(1).unwrap());
    }

    #[test]
    fn a_mapping_is_all_there_and_never_read() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("burstcore-buffer-{}", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let map = crate::input::map_file(&path).expect("a regular file maps");
        std::fs::remove_file(&path).unwrap();
        let mut b = Buffer::mapped(map);
        assert!(b.is_mapped());
        assert_eq!(b.bytes(), &data[..]);
        assert!(b.fill(data.len()).unwrap());
        b.consume(4000);
        assert_eq!(b.position(), 4000);
        assert_eq!(b.start(), 4000);
        assert_eq!(b.bytes(), &data[4000..]);
        assert_eq!(&b.storage()[..10], &data[..10]);
        assert!(!b.fill(1001).unwrap());
        assert_eq!(b.avail(), 1000);
        b.consume(5000);
        assert_eq!(b.position(), data.len() as u64);
        assert!(!b.fill(1).unwrap());
    }
}
