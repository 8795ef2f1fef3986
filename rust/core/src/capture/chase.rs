//! Bringing a mapped file's record headers into the cache ahead of the framing, several chains
//! at once.
//!
//! Framing chases record lengths through the file: each record's header is a load whose address
//! the previous header gave. From a mapping, nothing has brought those lines into the cache (the
//! hardware prefetcher stops at page boundaries and cannot guess a chain), so a plain chase waits
//! for memory once per record. Prefetching every line of the file ahead of the framing hides
//! that wait, but on a full-frame capture it streams 24 lines through the cache for each one the
//! framing reads, and that stream, not the framing, then sets the speed (benches/RESULTS.md,
//! "Seventeenth landing": every line of the 2 GB pcap loaded took as long as half a scan).
//!
//! Here a window of the file ahead of the framing is cut into pieces, and one cursor per piece
//! follows that piece's own chain of records, all cursors a step at a time in turn, so their
//! loads overlap instead of queueing. A cursor after the first finds its first record the way
//! a split chunk does, by looking for a header that makes sense; what it finds is only a guess,
//! and nothing depends on it being right: this module reads headers to warm the cache and
//! decides nothing. It keeps the records it found, and as the framing comes within a few KiB of
//! each, asks for its lines again, this time into the nearest cache, with the line after its
//! header (where the link, network and transport headers run on to) and, in pcapng, the
//! block's trailing length. The framing then reads every record exactly as it always does.
//! Where the records are small, the window's headers are most of its lines anyway; [`Chase`]
//! then goes back to prefetching every line, and looks again from time to time.

use super::buffer::{prefetch, LINE};
use super::bytes::u32_at;

/// How the records of the mapped file are laid out: what a cursor needs to step from one to
/// the next and to recognise one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Not known yet (the file's header is being read), or not chased.
    Unknown,
    Pcap {
        big: bool,
        /// 16, or 24 in the "modified" variant.
        header: usize,
        nanos: bool,
    },
    PcapNg {
        big: bool,
    },
}

/// Bytes chased at a time, and the cursors that share them. On the 2 GB full-frame pcap, a
/// chase alone over the whole file with 8 cursors over 4 MiB took 0.073–0.078 s, against
/// 0.18–0.24 s for every line prefetched and 0.28–0.30 s for one plain chain; 16 cursors over
/// 1 MiB took 0.14 s (a C prototype, two rounds, by hand). In whole scans (paired), windows
/// of 0.5, 1, 2 and 4 MiB did alike, 16 MiB 25 % worse: the lines chased must still be cached
/// when they are framed.
const WINDOW: usize = 1 << 20;
const CURSORS: usize = 8;
/// Below this many bytes per record on average, a window's headers are too many lines to stay
/// cached until they are framed: prefetch every line instead, for `LINES_FOR` bytes.
const DENSE: usize = 512;
const LINES_FOR: usize = 16 * WINDOW;
/// Windows shorter than this are not worth cutting into pieces.
const MIN_WINDOW: usize = 256 << 10;
/// How far into its piece a cursor looks for its first record. A capture whose timestamps
/// jump by hours (or are garbage) offers no guess at all, and a search of the whole piece, a
/// check at every byte, then cost seven eighths of each window in checks (a fuzz input with
/// random seconds: ten times a clean capture's read). Records this long or longer have few
/// headers to warm, and the cursor before reads on through the piece anyway.
const GUESS: usize = 16 << 10;

/// What a reader of a mapping does ahead of its framing.
#[derive(Debug)]
pub(crate) struct Chase {
    layout: Layout,
    max_block: usize,
    /// Where the cursor that ran to the last window's end stopped: the likely start of the next
    /// window.
    next: Option<usize>,
    /// Prefetch every line until the framing reaches this index.
    lines_until: usize,
    /// Where the last window ended.
    end: usize,
    /// Records found by the last window, in file order, and how many of them were warmed.
    found: Vec<usize>,
    warmed: usize,
    /// Each cursor's records.
    pieces: [Vec<usize>; CURSORS],
}

impl Chase {
    pub(crate) fn new() -> Self {
        Chase {
            layout: Layout::Unknown,
            max_block: 0,
            next: None,
            lines_until: 0,
            end: 0,
            found: Vec::new(),
            warmed: 0,
            pieces: Default::default(),
        }
    }

    /// A file's or a section's header was read: the records found under the old layout (a
    /// section of the other byte order) say nothing any more. Where the last window ended and
    /// the stretch of line prefetch stay: a file of many small sections would otherwise chase
    /// a window at every section header (a fuzz input of 22,000 sections: 1.7 s instead of
    /// 4 ms).
    pub(crate) fn set_layout(&mut self, layout: Layout, max_block: u32) {
        self.layout = layout;
        self.max_block = max_block as usize;
        self.next = None;
        self.found.clear();
        self.warmed = 0;
    }

    /// Whether the framing at `start` prefetches every line instead of asking [`Chase::ahead`].
    #[inline(always)]
    pub(crate) fn by_line(&self, start: usize) -> bool {
        self.layout == Layout::Unknown || start < self.lines_until
    }

    /// Warm the cache ahead of `start`, the record the framing reads next, in `map`, up to
    /// `reach`; returns where the next record not warmed yet starts (the framing calls again once
    /// `reach` passes it), or `None` when the caller should prefetch every line instead.
    #[inline(never)]
    pub(crate) fn ahead(&mut self, map: &[u8], start: usize, reach: usize) -> Option<usize> {
        if self.by_line(start) {
            return None;
        }
        if let Some(at) = self.warm_to(map, reach) {
            return Some(at);
        }
        // The next window only once the framing nears the end of the last, whatever that one
        // found: a window that found little (a damaged stretch) is not chased again from the
        // same place.
        if reach <= self.end {
            return Some(self.end);
        }
        self.end = self.window(map, start)?;
        Some(self.warm_to(map, reach).unwrap_or(self.end))
    }

    /// Warm the records found that start before `reach`; the first one left, if any.
    #[inline]
    fn warm_to(&mut self, map: &[u8], reach: usize) -> Option<usize> {
        while let Some(&at) = self.found.get(self.warmed) {
            if at >= reach {
                return Some(at);
            }
            self.warm(map, at, self.found.get(self.warmed + 1).copied());
            self.warmed += 1;
        }
        None
    }

    /// Where the last window chased ended (0: none yet).
    #[cfg(test)]
    pub(super) fn chased_until(&self) -> usize {
        self.end
    }

    /// The framing moved other than by reading records (a chunk reader's jump).
    pub(crate) fn moved(&mut self) {
        self.next = None;
        self.lines_until = 0;
        self.found.clear();
        self.warmed = 0;
        self.end = 0;
    }

    /// Ask for the lines the framing and the decoder will read of the record at `at`, whose
    /// successor is probably at `next`: the link, network and transport headers run into the
    /// line after the record's header, and a pcapng block's trailing length, which the framing
    /// checks, is at its end.
    #[inline(always)]
    fn warm(&self, map: &[u8], at: usize, next: Option<usize>) {
        let base = map.as_ptr();
        prefetch(base.wrapping_add(at));
        prefetch(base.wrapping_add(at + LINE));
        if let (Layout::PcapNg { .. }, Some(next)) = (self.layout, next) {
            prefetch(base.wrapping_add(next.wrapping_sub(4)));
        }
    }

    /// Chase the records of the next window; `None` when every line should be prefetched
    /// instead. The records found, in file order, go to `found`.
    #[cold]
    fn window(&mut self, map: &[u8], start: usize) -> Option<usize> {
        self.found.clear();
        self.warmed = 0;
        let from = self.next.filter(|&n| n >= start).unwrap_or(start);
        let to = from.saturating_add(WINDOW).min(map.len());
        if to - from < MIN_WINDOW {
            self.lines_until = usize::MAX;
            return None;
        }
        let piece = (to - from) / CURSORS;
        let reference = self.reference(map, from);
        // The cursors' positions and where each stops: at the next one's start.
        let mut at = [usize::MAX; CURSORS];
        let mut stop = [to; CURSORS];
        at[0] = from;
        for (k, slot) in at.iter_mut().enumerate().skip(1) {
            let lo = from + k * piece;
            if let Some(p) = self.resync(map, lo, lo + piece.min(GUESS), reference) {
                *slot = p;
            }
        }
        let guessed = at[1..].iter().any(|&a| a != usize::MAX);
        let mut next_start = to;
        for k in (0..CURSORS).rev() {
            stop[k] = next_start;
            if at[k] != usize::MAX {
                next_start = at[k];
            }
        }
        // The cursor that runs to the window's end: the last one that found a start.
        let last = (0..CURSORS)
            .rev()
            .find(|&k| at[k] != usize::MAX)
            .unwrap_or(0);
        for list in &mut self.pieces {
            list.clear();
        }
        let mut live = CURSORS;
        while live > 0 {
            live = 0;
            for k in 0..CURSORS {
                let c = at[k];
                if c >= stop[k] {
                    continue;
                }
                match self.step(map, c) {
                    Some(n) => {
                        self.pieces[k].push(c);
                        at[k] = n;
                        live += 1;
                    }
                    // A broken chain (or a guessed start that was wrong): this cursor is done.
                    None => at[k] = usize::MAX,
                }
            }
        }
        // A chain that leaves the window by a record longer than a window is most likely a
        // wrong guess's (up to `max_block` long): the next window would start there, and the
        // framing would not ask again, nor hand back pages, until it got there.
        self.next =
            (at[last] != usize::MAX && at[last].saturating_sub(to) <= WINDOW).then_some(at[last]);
        let end = self.next.unwrap_or(to).max(to);
        for list in &self.pieces {
            self.found.extend_from_slice(list);
        }
        // Dense, or no guess found a start where the records found are short enough that it
        // should have (timestamps that jump by hours, or garbage): one cursor then chased the
        // whole window, a load at a time, slower than streaming every line.
        let unguessable = !guessed && self.found.len().saturating_mul(GUESS) > to - from;
        if unguessable || self.found.len().saturating_mul(DENSE) > to - from {
            self.lines_until = end.saturating_add(LINES_FOR);
            self.found.clear();
            return None;
        }
        Some(end)
    }

    /// The next record's index after the one at `c`; `None` where the header does not hold
    /// together.
    #[inline(always)]
    fn step(&self, map: &[u8], c: usize) -> Option<usize> {
        let len = match self.layout {
            Layout::Pcap { big, header, .. } => {
                header.checked_add(u32_at(map.get(c..c + 16)?, 8, big) as usize)?
            }
            Layout::PcapNg { big } => {
                let len = u32_at(map.get(c..c + 8)?, 4, big) as usize;
                if len < 12 || !len.is_multiple_of(4) {
                    return None;
                }
                len
            }
            Layout::Unknown => return None,
        };
        let next = c.checked_add(len)?;
        if len > self.max_block || next > map.len() {
            return None;
        }
        Some(next)
    }

    /// The seconds of the pcap record at `from`, which the framing is about to read: records
    /// nearby have timestamps near it.
    fn reference(&self, map: &[u8], from: usize) -> u32 {
        match self.layout {
            Layout::Pcap { big, .. } => map.get(from..from + 4).map_or(0, |h| u32_at(h, 0, big)),
            _ => 0,
        }
    }

    /// A guess at the first record at or after `lo` and before `hi`.
    fn resync(&self, map: &[u8], lo: usize, hi: usize, reference: u32) -> Option<usize> {
        let hi = hi.min(map.len());
        match self.layout {
            Layout::Pcap { big, header, nanos } => {
                let max_sub = if nanos { 1_000_000_000 } else { 1_000_000 };
                (lo..hi).find(|&p| {
                    let Some(h) = map.get(p..p + 16) else {
                        return false;
                    };
                    let caplen = u32_at(h, 8, big) as usize;
                    u32_at(h, 0, big).abs_diff(reference) <= 3600
                        && u32_at(h, 4, big) < max_sub
                        && caplen <= u32_at(h, 12, big) as usize
                        && caplen <= self.max_block.saturating_sub(header)
                        && caplen <= map.len().saturating_sub(p + header)
                })
            }
            Layout::PcapNg { big } => (lo.next_multiple_of(4)..hi).step_by(4).find(|&p| {
                let Some(h) = map.get(p..p + 28) else {
                    return false;
                };
                let len = u32_at(h, 4, big) as usize;
                u32_at(h, 0, big) == 6
                    && len >= 32
                    && len.is_multiple_of(4)
                    && len <= self.max_block
                    && u32_at(h, 20, big) as usize <= len - 32
                    && p.checked_add(len)
                        .and_then(|end| map.get(end - 4..end))
                        .is_some_and(|t| u32_at(t, 0, big) as usize == len)
            }),
            Layout::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// Records of random lengths (a third `small`, the rest up to `large`) with random contents, as a
    /// pcap (nanosecond, little-endian) or a pcapng section of Enhanced Packet Blocks, and the
    /// index of each record.
    fn capture(
        pcapng: bool,
        records: usize,
        (small, large): (usize, usize),
        seed: u64,
    ) -> (Vec<u8>, Vec<usize>) {
        let mut rng = Rng(seed);
        let mut out = vec![0u8; 24];
        let mut at = Vec::new();
        for i in 0..records {
            let caplen = if rng.below(3) == 0 {
                small
            } else {
                small + rng.below((large - small) as u64 + 1) as usize
            };
            let secs = 1_700_000_000 + (i / 1000) as u32;
            let sub = (i % 1000) as u32 * 1_000_000;
            at.push(out.len());
            if pcapng {
                let len = 32 + caplen.next_multiple_of(4);
                for v in [6, len as u32, 0, secs, sub, caplen as u32, caplen as u32] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&rng.bytes(caplen.next_multiple_of(4)));
                out.extend_from_slice(&(len as u32).to_le_bytes());
            } else {
                for v in [secs, sub, caplen as u32, caplen as u32] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&rng.bytes(caplen));
            }
        }
        (out, at)
    }

    fn layout(pcapng: bool) -> Layout {
        if pcapng {
            Layout::PcapNg { big: false }
        } else {
            Layout::Pcap {
                big: false,
                header: 16,
                nanos: true,
            }
        }
    }

    /// Follow the framing through `map` record by record, as the buffer calls the chase; the
    /// records each window found, in order, and whether every line was prefetched at some point.
    fn follow(map: &[u8], records: &[usize], layout: Layout) -> (Vec<usize>, bool) {
        let mut chase = Chase::new();
        chase.set_layout(layout, 1 << 20);
        let (mut found, mut lines, mut done) = (Vec::new(), false, 0);
        for &start in records {
            if start + LINE * 256 <= done {
                continue;
            }
            match chase.ahead(map, start, start + LINE * 256) {
                Some(end) => done = end,
                None => {
                    lines = true;
                    done = start + LINE * 256;
                }
            }
            let last = found.last().copied();
            if chase
                .found
                .first()
                .is_some_and(|&f| last.is_none_or(|l| f > l))
            {
                found.extend_from_slice(&chase.found);
            }
        }
        (found, lines)
    }

    /// On a clean capture of large records, the cursors' guesses are right, and together they
    /// find every record of each window exactly: the lines warmed are the ones framed.
    #[test]
    fn the_cursors_find_every_record_of_a_clean_capture() {
        for pcapng in [false, true] {
            let (map, records) = capture(pcapng, 6_000, (400, 1514), 7);
            let (found, lines) = follow(&map, &records, layout(pcapng));
            // The windows stop short of the last MIN_WINDOW bytes, where every line is
            // prefetched instead.
            let chased: Vec<usize> = records
                .iter()
                .copied()
                .take_while(|&r| r < found.last().copied().unwrap_or(0) + 1)
                .collect();
            assert!(
                lines,
                "pcapng {pcapng}: the tail is prefetched line by line"
            );
            assert!(
                found.len() * 4 > records.len() * 3,
                "pcapng {pcapng}: {} of {} records chased",
                found.len(),
                records.len()
            );
            assert_eq!(found, chased, "pcapng {pcapng}");
        }
    }

    /// Small records: a window's headers are most of its lines, so every line is prefetched
    /// (after one window to find out).
    #[test]
    fn small_records_are_prefetched_line_by_line() {
        for pcapng in [false, true] {
            let (map, records) = capture(pcapng, 40_000, (60, 128), 11);
            let mut chase = Chase::new();
            chase.set_layout(layout(pcapng), 1 << 20);
            assert_eq!(chase.ahead(&map, records[0], records[0] + 4096), None);
            assert!(chase.lines_until > map.len() / 2, "pcapng {pcapng}");
            assert_eq!(chase.ahead(&map, records[1], records[1] + 4096), None);
        }
    }

    /// Bytes that are no capture at all, or a capture with damage: the chase reads only
    /// within the mapping, ends, and never panics, whatever it guesses.
    #[test]
    fn garbage_and_damage_are_only_bad_guesses() {
        let mut rng = Rng(3);
        for pcapng in [false, true] {
            let noise = rng.bytes(3 << 20);
            let (mut damaged, records) = capture(pcapng, 4_000, (300, 1514), 5);
            for _ in 0..200 {
                let i = rng.below(damaged.len() as u64) as usize;
                damaged[i] = rng.next() as u8;
            }
            for map in [&noise, &damaged] {
                let mut chase = Chase::new();
                chase.set_layout(layout(pcapng), 1 << 20);
                let mut start = 0;
                while start < map.len() {
                    if let Some(end) = chase.ahead(map, start, start + 4096) {
                        assert!(end >= start, "pcapng {pcapng}: {end} behind {start}");
                    }
                    assert!(chase.found.iter().all(|&f| f < map.len()));
                    start += 1 + rng.below(3000) as usize;
                }
            }
            let (found, _) = follow(&damaged, &records, layout(pcapng));
            assert!(found.iter().all(|&f| f < damaged.len()));
        }
    }

    /// Where no record starts in the window's last piece (one record longer than the piece
    /// covers it), the cursor before runs to the end, and the next window starts where it
    /// stopped: at the record after the long one.
    #[test]
    fn a_piece_without_a_start_is_covered_by_the_cursor_before() {
        for pcapng in [false, true] {
            let (mut map, mut records) = capture(pcapng, 1000, (900, 1000), 3);
            // One record of 200 000 bytes starting about 7/8 of a MiB into the window, then
            // more records.
            let at = records
                .iter()
                .position(|&r| r > 24 + (WINDOW / 8) * 7 - 60_000);
            let cut = records[at.expect("enough records")];
            map.truncate(cut);
            records.retain(|&r| r < cut);
            let mut rng = Rng(4);
            let payload = 200_000;
            if pcapng {
                let len = (32 + payload) as u32;
                for v in [6, len, 0, 1_700_000_001, 0, payload as u32, payload as u32] {
                    map.extend_from_slice(&v.to_le_bytes());
                }
                map.extend_from_slice(&rng.bytes(payload));
                map.extend_from_slice(&len.to_le_bytes());
            } else {
                for v in [1_700_000_001u32, 0, payload as u32, payload as u32] {
                    map.extend_from_slice(&v.to_le_bytes());
                }
                map.extend_from_slice(&rng.bytes(payload));
            }
            let after = map.len();
            let (tail, _) = capture(pcapng, 1000, (900, 1000), 5);
            map.extend_from_slice(&tail[24..]);
            let mut chase = Chase::new();
            chase.set_layout(layout(pcapng), 1 << 20);
            assert!(chase.ahead(&map, 24, 24 + 4096).is_some());
            assert_eq!(chase.next, Some(after), "pcapng {pcapng}");
            assert_eq!(chase.found.last(), Some(&cut), "pcapng {pcapng}");
        }
    }

    /// A window whose chains all break within reach of the framing (a few records, then
    /// bytes that hold no records) is chased once, and the framing is sent well past it
    /// before the next: each call does one window at most, and always lets the framing move on.
    #[test]
    fn a_window_that_finds_little_is_not_chased_again_at_once() {
        let mut rng = Rng(9);
        for pcapng in [false, true] {
            let (mut map, records) = capture(pcapng, 5, (1000, 1400), 1);
            let tail = map.len();
            map.extend(std::iter::repeat_n(0xFFu8, 2 << 20));
            let mut chase = Chase::new();
            chase.set_layout(layout(pcapng), 1 << 20);
            assert!(chase.ahead(&map, records[0], records[0] + 4096).is_some());
            let first = chase.end;
            assert!(first >= records[0] + MIN_WINDOW, "pcapng {pcapng}: {first}");
            assert!(chase.found.len() <= records.len());
            // Called again from every byte of the records, then through the rest: one window
            // until the framing nears its end, and each call returns ahead of the framing.
            let mut start = records[1];
            while start < map.len() {
                if let Some(end) = chase.ahead(&map, start, start + 4096) {
                    assert!(end > start, "pcapng {pcapng}: {end} at {start}");
                }
                if start + 4096 <= first {
                    assert_eq!(chase.end, first, "pcapng {pcapng}: chased again at {start}");
                }
                start += if start < tail {
                    1
                } else {
                    1 + rng.below(100_000) as usize
                };
            }
        }
    }

    /// A cursor looks for its first record only in the first `GUESS` bytes of its piece: in
    /// the pieces that start with 20 KiB of bytes that hold no record, no cursor finds a start
    /// (a search of the whole piece would find the records after them), and no record of
    /// theirs is found.
    #[test]
    fn a_guess_looks_at_the_start_of_its_piece_only() {
        let from = 24;
        let piece = WINDOW / CURSORS;
        let mut map = vec![0u8; from];
        let mut records = Vec::new();
        for k in 0..CURSORS + 2 {
            let end = from + (k + 1) * piece;
            if (1..=3).contains(&k) {
                map.resize(map.len() + (20 << 10), 0xFF);
            }
            while map.len() + 16 + 1000 <= end {
                records.push(map.len());
                let i = records.len() as u32;
                for v in [1_700_000_000u32, i, 1000, 1000] {
                    map.extend_from_slice(&v.to_le_bytes());
                }
                map.resize(map.len() + 1000, 0xAB);
            }
            map.resize(end, 0xFF);
        }
        let mut chase = Chase::new();
        chase.set_layout(layout(false), 1 << 20);
        assert!(chase.ahead(&map, from, from + 4096).is_some());
        let outside: Vec<usize> = records
            .iter()
            .copied()
            .filter(|&r| !(from + piece..from + 4 * piece).contains(&r) && r < from + WINDOW)
            .collect();
        assert_eq!(chase.found, outside);
    }

    /// Timestamps that jump by hours (or garbage) leave every guess empty-handed although the
    /// records are short: the first cursor would chase the whole window alone, so every line
    /// is prefetched instead, as for small records.
    #[test]
    fn records_no_guess_can_find_are_prefetched_line_by_line() {
        let mut rng = Rng(6);
        let mut map = vec![0u8; 24];
        let mut records = Vec::new();
        while map.len() < 3 << 20 {
            records.push(map.len());
            let caplen = 1000 + rng.below(515) as u32;
            for v in [
                rng.next() as u32,
                rng.below(1_000_000) as u32,
                caplen,
                caplen,
            ] {
                map.extend_from_slice(&v.to_le_bytes());
            }
            map.extend_from_slice(&rng.bytes(caplen as usize));
        }
        let layout = Layout::Pcap {
            big: false,
            header: 16,
            nanos: false,
        };
        let mut chase = Chase::new();
        chase.set_layout(layout, 1 << 20);
        assert_eq!(chase.ahead(&map, records[0], records[0] + 4096), None);
        assert!(chase.by_line(records[1]));
        assert!(chase.lines_until > 16 << 20);
    }

    /// A chain that leaves the window by a record longer than a window (a wrong guess's, most
    /// likely) does not say where the next window starts: the framing asks again at the
    /// window's end. A new section's header forgets what was found.
    #[test]
    fn a_chain_that_leaves_by_a_huge_record_is_not_followed() {
        for pcapng in [false, true] {
            let (mut map, records) = capture(pcapng, 4_000, (1000, 1400), 2);
            let from = records[0];
            let to = from + WINDOW;
            let last = *records.iter().rfind(|&&r| r < to).expect("records");
            let huge = 3u32 << 20;
            // A length that claims the next 3 MiB (only the chain's step reads it).
            let at = if pcapng { last + 4 } else { last + 8 };
            map[at..at + 4].copy_from_slice(&huge.to_le_bytes());
            assert!(map.len() > last + (3 << 20) + 64);
            let mut chase = Chase::new();
            chase.set_layout(layout(pcapng), 64 << 20);
            assert!(chase.ahead(&map, from, from + 4096).is_some());
            assert_eq!(chase.next, None, "pcapng {pcapng}");
            assert_eq!(chase.end, to, "pcapng {pcapng}");
            assert_eq!(chase.found.last(), Some(&last), "pcapng {pcapng}");
            chase.set_layout(layout(pcapng), 64 << 20);
            assert!(chase.found.is_empty() && chase.next.is_none());
            assert_eq!(
                chase.end, to,
                "pcapng {pcapng}: a new section chases no window"
            );
        }
    }

    /// A file of many small sections (each header read sets the layout again) chases a window
    /// once, then prefetches every line: not one window per section header.
    #[test]
    fn many_sections_do_not_chase_a_window_each() {
        let mut shb = Vec::new();
        for v in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D, 1, u32::MAX, u32::MAX, 28] {
            shb.extend_from_slice(&v.to_le_bytes());
        }
        let map = shb.repeat(40_000);
        let mut chase = Chase::new();
        let mut windows = 0;
        let mut last_end = None;
        for at in (0..map.len()).step_by(shb.len()) {
            chase.set_layout(Layout::PcapNg { big: false }, 1 << 20);
            let start = at + shb.len();
            if start < map.len() {
                chase.ahead(&map, start, start + 4096);
            }
            // A window chased moves where the last one ended or, dense, the line prefetch's end.
            let now = (chase.end, chase.lines_until);
            if last_end != Some(now) {
                windows += 1;
                last_end = Some(now);
            }
        }
        assert!(windows <= 2, "{windows} windows chased");
    }
}
