//! The k-way merge of several captures' packets by (timestamp, file), the order in which a scan
//! of several files sees them: ties go to the file listed first, so the merge is deterministic.
//! A scan of one chunk of several files ([`crate::chunked`]) merges its pieces of them the same
//! way, so both must share this code.

use crate::engine::{Arrival, GroupKey, ScanOutput};
use crate::error::Result;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A packet as the merge orders it.
pub(crate) trait Stamped {
    fn ts(&self) -> i64;
}

impl Stamped for Arrival {
    #[inline]
    fn ts(&self) -> i64 {
        self.ts_ns
    }
}

/// Timestamp, size and interface: a packet for a scan that reads no header.
impl Stamped for (i64, u64, u32) {
    #[inline]
    fn ts(&self) -> i64 {
        self.0
    }
}

/// The files being merged, and where their packets go.
pub(crate) trait Streams {
    type Item: Stamped;
    /// The next packet of file `i`, `None` at its end. Called again for file `i` only once the
    /// item it gave was taken: a file may hold its head packet itself, the item but naming it.
    fn next(&mut self, i: usize) -> Result<Option<Self::Item>>;
    /// Hand on a packet of file `i`; `false` stops the merge.
    fn take(&mut self, item: Self::Item, i: usize) -> Result<bool>;
}

/// Merge `n` files: `Ok(false)` if `take` stopped it.
///
/// Up to [`FEW`] files, see [`merge_few`]. Past that, a file keeps the turn while its packets
/// stay below every other file's next one, with no heap operation: captures of different hosts
/// interleave in runs (a burst of one host, then of another), and one file's next packet is
/// compared with the heap's top only. The order is the plain heap merge's, as keys are distinct
/// (no two files share an index).
pub(crate) fn merge<S: Streams>(n: usize, streams: &mut S) -> Result<bool> {
    if n <= FEW {
        return merge_few(n, streams);
    }
    let mut heads: Vec<Option<S::Item>> = Vec::with_capacity(n);
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n {
        let head = streams.next(i)?;
        if let Some(a) = &head {
            heap.push(Reverse((a.ts(), i)));
        }
        heads.push(head);
    }
    while let Some(Reverse((_, i))) = heap.pop() {
        let Some(mut item) = heads[i].take() else {
            continue;
        };
        loop {
            if !streams.take(item, i)? {
                return Ok(false);
            }
            let Some(next) = streams.next(i)? else {
                break;
            };
            let key = (next.ts(), i);
            if heap.peek().is_none_or(|Reverse(top)| key < *top) {
                item = next;
            } else {
                heads[i] = Some(next);
                heap.push(Reverse(key));
                break;
            }
        }
    }
    Ok(true)
}

/// Files up to which [`merge`] finds the next packet by looking at every file's head.
const FEW: usize = 16;

/// [`merge`] of at most [`FEW`] files: the least head found by one pass over all of them, without
/// branches. Per-host captures of a ring all-reduce interleave packet by packet, and there a
/// heap's pop and push cost several mispredicted branches each packet: with 8 such files, a
/// one-thread scan took 7 % less time this way (median of 10 alternated runs, 2.47 s against
/// 2.66), two threads 4 % less; with 2 files, which interleave in runs, it is as fast as the
/// heap that keeps the turn. Past [`FEW`] files the pass costs more than the heap saves.
fn merge_few<S: Streams>(n: usize, streams: &mut S) -> Result<bool> {
    // Above every timestamp, so that an ended file never wins.
    const ENDED: i128 = i128::MAX;
    let mut heads: Vec<Option<S::Item>> = Vec::with_capacity(n);
    let mut keys = [ENDED; FEW];
    for (i, key) in keys.iter_mut().enumerate().take(n) {
        let head = streams.next(i)?;
        *key = head.as_ref().map_or(ENDED, |a| i128::from(a.ts()));
        heads.push(head);
    }
    let keys = &mut keys[..n];
    if keys.is_empty() {
        return Ok(true);
    }
    loop {
        // The first least key: ties go to the file listed first.
        let (mut w, mut least) = (0, keys[0]);
        for (j, &k) in keys.iter().enumerate().skip(1) {
            let less = k < least;
            least = if less { k } else { least };
            w = if less { j } else { w };
        }
        // Only an ended file has no head, and an ended file wins only when all have ended.
        let Some(item) = heads[w].take().filter(|_| least != ENDED) else {
            return Ok(true);
        };
        if !streams.take(item, w)? {
            return Ok(false);
        }
        let next = streams.next(w)?;
        keys[w] = next.as_ref().map_or(ENDED, |a| i128::from(a.ts()));
        heads[w] = next;
    }
}

/// The interfaces of several captures merged, kept apart: each (capture, interface of that
/// capture) gets a number of its own when its first packet is met, and [`Interfaces::numbers`]
/// gives, once every capture has been read, the number it is reported under: a capture's
/// interfaces follow all those the captures listed before it declared. Numbered on the fly from
/// the interfaces declared so far, a capture that declares one after its first packets (a second
/// pcapng section, an IDB between packets) gave it the number the next capture's first
/// interface already had, and that capture's interfaces moved up by one in mid-read: one group
/// held packets of two interfaces, and one interface was split over two groups.
#[derive(Debug)]
pub(crate) struct Interfaces {
    /// Per capture, the number of each of its interfaces met so far ([`UNMET`] for the others).
    ids: Vec<Vec<u32>>,
    /// Per number, its capture and the interface's index in it.
    met: Vec<(usize, u32)>,
}

const UNMET: u32 = u32::MAX;

impl Interfaces {
    pub(crate) fn new(captures: usize) -> Self {
        Interfaces {
            ids: vec![Vec::new(); captures],
            met: Vec::new(),
        }
    }

    /// The number of `capture`'s interface `interface` for the rest of the scan.
    #[inline]
    pub(crate) fn id(&mut self, capture: usize, interface: u32) -> u32 {
        match self.ids[capture].get(interface as usize) {
            Some(&id) if id != UNMET => id,
            _ => self.first_met(capture, interface),
        }
    }

    #[cold]
    fn first_met(&mut self, capture: usize, interface: u32) -> u32 {
        let id = u32::try_from(self.met.len()).unwrap_or(UNMET - 1);
        let ids = &mut self.ids[capture];
        if ids.len() <= interface as usize {
            ids.resize(interface as usize + 1, UNMET);
        }
        ids[interface as usize] = id;
        self.met.push((capture, interface));
        id
    }

    /// What each number [`Interfaces::id`] gave is reported as, given how many interfaces each
    /// capture declared in all.
    pub(crate) fn numbers(&self, declared: &[usize]) -> Renumber {
        let bases = interface_bases(declared.iter().copied());
        Renumber(
            self.met
                .iter()
                .map(|&(capture, interface)| bases[capture].saturating_add(interface))
                .collect(),
        )
    }
}

/// Where each capture's interfaces start among those of several captures scanned as one, given
/// how many interfaces each declared: interface `i` of capture `k` is reported as number
/// `bases[k] + i` (its group `if{bases[k] + i}`). The one rule of the numbers reported, for the
/// scans that number them and for what tells which capture an interface group is of.
pub fn interface_bases(declared: impl IntoIterator<Item = usize>) -> Vec<u32> {
    let mut base = 0u32;
    declared
        .into_iter()
        .map(|n| {
            let this = base;
            base = base.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
            this
        })
        .collect()
}

/// What [`crate::analyze::for_each`] returns beside its accounting: [`Renumber::key`] turns the
/// interface group key of an [`Arrival`] it handed out, numbered in the order the merge met the
/// interface, into the one a scan reports ([`interface_bases`]). Public as that function's result (nothing
/// else builds one); internally, from the numbers [`Interfaces::id`] gave to those reported
/// ([`Interfaces::numbers`]).
///
/// [`Arrival`]: crate::engine::Arrival
#[derive(Debug, Clone, Default)]
pub struct Renumber(Vec<u32>);

impl Renumber {
    /// A group key with its interface renumbered (the others as they are).
    pub fn key(&self, key: GroupKey) -> GroupKey {
        match key {
            GroupKey::Interface(i) => {
                GroupKey::Interface(self.0.get(i as usize).copied().unwrap_or(i))
            }
            other => other,
        }
    }

    fn identity(&self) -> bool {
        self.0.iter().enumerate().all(|(i, &n)| n as usize == i)
    }

    /// `out`'s interface groups renumbered, and its rows back in (by, group) order, each
    /// group's rows in the order they were (their windows, rates or bins).
    pub(crate) fn apply(&self, out: &mut ScanOutput) {
        if self.identity() {
            return;
        }
        let renumbered = |by: crate::engine::By, group: &mut GroupKey| {
            if by == crate::engine::By::Interface {
                *group = self.key(*group);
            }
        };
        out.envelope
            .iter_mut()
            .for_each(|r| renumbered(r.by, &mut r.group));
        out.backlog
            .iter_mut()
            .for_each(|r| renumbered(r.by, &mut r.group));
        out.series
            .iter_mut()
            .for_each(|r| renumbered(r.by, &mut r.group));
        out.groups
            .iter_mut()
            .for_each(|r| renumbered(r.by, &mut r.group));
        out.envelope.sort_by_key(|r| (r.by.rank(), r.group));
        out.backlog.sort_by_key(|r| (r.by.rank(), r.group));
        out.series.sort_by_key(|r| (r.by.rank(), r.group));
        out.groups.sort_by_key(|r| (r.by.rank(), r.group));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of timestamps; `take` records (timestamp, file).
    struct Lists {
        files: Vec<Vec<i64>>,
        at: Vec<usize>,
        out: Vec<(i64, usize)>,
        stop_after: usize,
    }

    impl Streams for Lists {
        type Item = (i64, u64, u32);
        fn next(&mut self, i: usize) -> Result<Option<Self::Item>> {
            let t = self.files[i].get(self.at[i]).copied();
            self.at[i] += 1;
            Ok(t.map(|t| (t, 0, 0)))
        }
        fn take(&mut self, item: Self::Item, i: usize) -> Result<bool> {
            self.out.push((item.0, i));
            Ok(self.out.len() < self.stop_after)
        }
    }

    /// The plain merge: repeatedly the smallest (head, file).
    fn plain(files: &[Vec<i64>]) -> Vec<(i64, usize)> {
        let mut at = vec![0; files.len()];
        let mut out = Vec::new();
        while let Some((t, i)) = (0..files.len())
            .filter_map(|i| files[i].get(at[i]).map(|&t| (t, i)))
            .min()
        {
            out.push((t, i));
            at[i] += 1;
        }
        out
    }

    /// What `merge` hands out, to the end.
    fn merged(files: &[Vec<i64>]) -> Vec<(i64, usize)> {
        let mut lists = Lists {
            at: vec![0; files.len()],
            files: files.to_vec(),
            out: Vec::new(),
            stop_after: usize::MAX,
        };
        assert!(merge(files.len(), &mut lists).expect("merge"));
        lists.out
    }

    #[test]
    fn the_order_of_the_plain_merge() {
        // Runs, ties across files, files out of order within themselves, empty files.
        let mut rng = crate::test_rng::Rng(0x6E72_67E5);
        for case in 0..2_000 {
            // Both ways of merging (up to 16 files, and past that), and now and then
            // timestamps at the ends of the range.
            let n = if case % 4 == 0 {
                17 + rng.below(8) as usize
            } else {
                1 + rng.below(16) as usize
            };
            let origin = match rng.below(4) {
                0 => i64::MIN,
                1 => i64::MAX - 200,
                _ => 0,
            };
            let files: Vec<Vec<i64>> = (0..n)
                .map(|_| {
                    let mut t = origin + rng.below(20) as i64;
                    (0..rng.below(30))
                        .map(|_| {
                            t += rng.below(4) as i64;
                            if rng.below(8) == 0 {
                                t.saturating_sub(rng.below(6) as i64)
                            } else {
                                t
                            }
                        })
                        .collect()
                })
                .collect();
            assert_eq!(merged(&files), plain(&files), "case {case}");
        }
    }

    #[test]
    fn no_files_merge_to_nothing() {
        assert_eq!(merged(&[]), []);
        assert_eq!(merged(&[vec![], vec![]]), []);
    }

    #[test]
    fn files_that_end_never_hide_the_last_instant() {
        // A file that has ended must lose even to a packet stamped i64::MAX, and one stamped
        // i64::MIN must come first, whichever way the files are merged.
        for n in [3, FEW + 1] {
            let mut files = vec![vec![i64::MIN], vec![0, i64::MAX], vec![i64::MAX]];
            files.resize(n, Vec::new());
            let out = merged(&files);
            assert_eq!(out, plain(&files));
            assert_eq!(out.len(), 4);
        }
    }

    #[test]
    fn take_stops_the_merge() {
        for n in [2, FEW + 1] {
            let mut files = vec![vec![1, 2, 3], vec![1, 5]];
            files.resize(n, vec![9]);
            let mut lists = Lists {
                at: vec![0; n],
                files,
                out: Vec::new(),
                stop_after: 3,
            };
            assert!(!merge(n, &mut lists).expect("merge"));
            assert_eq!(lists.out, [(1, 0), (1, 1), (2, 0)]);
        }
    }
}
