//! One large reusable read buffer. Records are framed in place and handed out as slices of it,
//! so the hot path neither copies nor allocates per packet.

use std::io::{self, Read};

/// Default size of the buffer: big reads amortise system calls and decompressor overhead.
pub(crate) const DEFAULT_CAPACITY: usize = 1 << 20;
/// Compact rather than issue reads smaller than this.
const MIN_READ: usize = 256 << 10;

pub(crate) struct Buffer {
    data: Vec<u8>,
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
            data: vec![0; capacity.max(64)],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            reader,
        }
    }

    /// Unconsumed bytes in the buffer.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.data.get(self.start..self.end).unwrap_or(&[])
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
        &self.data
    }

    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = self.start.saturating_add(n).min(self.end);
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
        let missing = need - self.avail();
        if self.data.len() - self.end < missing.max(MIN_READ) && self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        while self.avail() < need {
            if self.end == self.data.len() {
                // Grow only as bytes actually arrive (at most doubling): a length field alone,
                // even one within the limits, never allocates the size it claims.
                let target = (self.start + need).min(self.data.len().saturating_mul(2));
                self.data.resize(target, 0);
            }
            let free = match self.data.get_mut(self.end..) {
                Some(free) if !free.is_empty() => free,
                _ => return Ok(false),
            };
            match self.reader.read(free) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => self.end += n.min(free_len(&self.data, self.end)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
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
}
