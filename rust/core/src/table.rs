//! Packets as columns: what `read_packets` hands to polars. Struct-of-arrays with a validity
//! bitmap (Arrow's layout, so it crosses over as is) for the fields a packet may lack, and
//! addresses dictionary-encoded (a code per packet, the distinct addresses once), so no
//! per-packet object is ever created on the Python side.

use crate::capture::CaptureReader;
use crate::error::{Error, Limit, Result};
use crate::huge_pages;
use crate::pipeline::{Accounting, Progress};
use crate::wire::{self, Headers};
use std::net::IpAddr;

pub mod batches;
// Not API (outside semver, see the crate docs): public for the bindings, tests and fuzz targets.
#[doc(hidden)]
pub mod split;

/// A column that may be null per row; a null row holds `T::default()` in `values`.
#[derive(Debug, Clone, Default)]
pub struct Nullable<T> {
    /// A value per row.
    pub values: Vec<T>,
    /// Which rows are not null.
    pub valid: Validity,
}

/// One bit per row, set when the row is not null: Arrow's validity bitmap (least significant
/// bit first, the last byte padded with zeros).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validity {
    /// The bits, eight rows a byte.
    pub bits: Vec<u8>,
    /// Rows.
    pub len: usize,
    /// Null rows (bits not set).
    pub nulls: usize,
}

impl Validity {
    /// Room for the bits of `rows` more rows (see [`room`]).
    #[inline]
    fn room(&mut self, rows: usize) -> Room {
        room(&mut self.bits, rows.div_ceil(8) + 1)
    }

    /// Whether row `i` is not null (`false` past the end).
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.bits.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
    }

    #[inline]
    fn extend(&mut self, valid: impl Iterator<Item = bool>) {
        for v in valid {
            let bit = self.len % 8;
            if bit == 0 {
                self.bits.push(0);
            }
            if let Some(last) = self.bits.last_mut() {
                *last |= u8::from(v) << bit;
            }
            self.nulls += usize::from(!v);
            self.len += 1;
        }
    }

    /// Eight rows at a time when the bitmap is byte-aligned (every batch but the last).
    #[inline]
    fn extend_rows<R>(&mut self, rows: &[R], valid: impl Fn(&R) -> bool) {
        if !self.len.is_multiple_of(8) {
            return self.extend(rows.iter().map(valid));
        }
        let chunks = rows.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            let mut byte = 0u8;
            for (k, r) in c.iter().enumerate() {
                byte |= u8::from(valid(r)) << k;
            }
            self.bits.push(byte);
            self.nulls += 8 - byte.count_ones() as usize;
            self.len += 8;
        }
        self.extend(rest.iter().map(valid));
    }
}

/// Addresses as text, in Arrow's `Utf8View` layout (polars' `String`): a 16-byte view per row,
/// holding the text itself when it fits in 12 bytes and otherwise its length, first 4 bytes and
/// place in `text`. Each distinct address is formatted once (its view is kept in a dictionary);
/// a row costs a lookup and a 16-byte copy.
#[derive(Debug, Clone, Default)]
pub struct AddressColumn {
    /// `[length, bytes 0..4, bytes 4..8, bytes 8..12]` inline, or `[length, bytes 0..4, buffer,
    /// offset]`, native-endian words; all zeros for a null row.
    pub views: Vec<[u32; 4]>,
    /// Which rows are not null (a packet without the address).
    pub valid: Validity,
    /// The text of the addresses longer than 12 bytes, in buffers of at most `u32::MAX` bytes.
    pub text: Vec<Vec<u8>>,
    /// The distinct addresses, in order of first appearance, and their views: the lookup that
    /// encodes the column while it is read, given back by [`AddressColumn::finish`].
    dictionary: Vec<IpAddr>,
    dictionary_views: Vec<[u32; 4]>,
    index: AddressIndex,
}

impl AddressColumn {
    fn reserve(&mut self, n: usize) {
        huge_pages::reserve(&mut self.views, n);
        let _ = self.valid.bits.try_reserve_exact(n.div_ceil(8));
    }
    fn shrink(&mut self) {
        self.views.shrink_to_fit();
        self.valid.bits.shrink_to_fit();
    }

    /// Give back the lookup once the column is read: the views and text alone make the column,
    /// and the Arrow array that takes the column over keeps all of it as long as the frame lives
    /// (some 100 bytes per distinct address otherwise held for nothing).
    fn finish(&mut self) {
        self.dictionary = Vec::new();
        self.dictionary_views = Vec::new();
        self.index.slots = Vec::new();
    }

    /// The bytes the lookup holds (capacity), for the memory bounds of the tests.
    #[cfg(test)]
    fn lookup_bytes(&self) -> usize {
        self.dictionary.capacity() * std::mem::size_of::<IpAddr>()
            + self.dictionary_views.capacity() * std::mem::size_of::<[u32; 4]>()
            + self.index.slots.capacity() * slot_bytes(&self.index.slots)
    }

    fn extend(&mut self, rows: &[Headers], field: impl Fn(&Headers) -> Option<IpAddr>) -> Room {
        room(&mut self.views, rows.len())?;
        self.valid.room(rows.len())?;
        for r in rows {
            let view = match field(r) {
                None => [0; 4],
                Some(a) => {
                    let code = self.index.code(a, &mut self.dictionary)? as usize;
                    if code == self.dictionary_views.len() {
                        let view = self.view_of(a)?;
                        room(&mut self.dictionary_views, 1)?;
                        self.dictionary_views.push(view);
                    }
                    self.dictionary_views.get(code).copied().unwrap_or_default()
                }
            };
            self.views.push(view);
        }
        self.valid.extend_rows(rows, |r| field(r).is_some());
        Ok(())
    }

    /// The view of a new address, storing its text if it does not fit inline.
    #[cold]
    fn view_of(&mut self, a: IpAddr) -> std::result::Result<[u32; 4], NoMemory> {
        let s = a.to_string();
        let b = s.as_bytes();
        let word = |i: usize| {
            let mut w = [0u8; 4];
            for (k, x) in w.iter_mut().enumerate() {
                *x = b.get(i + k).copied().unwrap_or(0);
            }
            u32::from_ne_bytes(w)
        };
        let len = b.len() as u32; // at most 39 (an IPv6 address)
        if b.len() <= 12 {
            return Ok([len, word(0), word(4), word(8)]);
        }
        let fits = |t: &Vec<u8>| u32::try_from(t.len() + b.len()).is_ok();
        if !self.text.last().is_some_and(fits) {
            room(&mut self.text, 1)?;
            self.text.push(Vec::new());
        }
        let buffer = (self.text.len() - 1) as u32;
        let Some(text) = self.text.last_mut() else {
            return Ok([0; 4]); // unreachable: a buffer was just ensured
        };
        let offset = text.len() as u32;
        room(text, b.len())?;
        text.extend_from_slice(b);
        Ok([len, word(0), buffer, offset])
    }

    /// The address of row `i`, `None` when null (for tests and checks: it reads the views back).
    pub fn get(&self, i: usize) -> Option<String> {
        if !self.valid.get(i) {
            return None;
        }
        let v = self.views.get(i)?;
        let len = v[0] as usize;
        let bytes: Vec<u8> = if len <= 12 {
            v[1..]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .take(len)
                .collect()
        } else {
            let text = self.text.get(v[2] as usize)?;
            text.get(v[3] as usize..v[3] as usize + len)?.to_vec()
        };
        String::from_utf8(bytes).ok()
    }
}

/// Address -> code, open addressing with linear probing. A capture has few distinct addresses
/// and looks one up per packet and column, so the lookup is the cost: a folded multiply of the
/// address bits replaces SipHash. A slot holds only the code (4 bytes, not the 24 of an address
/// and its code): a capture where every packet brings new addresses keeps two to four slots per
/// address, and the comparison reads the address from the dictionary instead, which a capture of
/// few hosts keeps in cache. The per-table random seed keeps a crafted capture from piling its
/// addresses onto one probe chain.
#[derive(Debug, Clone)]
struct AddressIndex {
    /// Code of the address in the slot, or [`EMPTY`]. Length a power of two, at most half full.
    slots: Vec<u32>,
    seed: u64,
}

impl Default for AddressIndex {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        AddressIndex {
            slots: Vec::new(),
            seed,
        }
    }
}

/// An empty slot of [`AddressIndex`]: no code reaches it, as the slots stop growing first.
const EMPTY: u32 = u32::MAX;

#[cfg(test)]
fn slot_bytes<T>(_: &Vec<T>) -> usize {
    std::mem::size_of::<T>()
}

#[inline(always)]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl AddressIndex {
    #[inline]
    fn slot(&self, a: &IpAddr) -> usize {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let x = match a {
            IpAddr::V4(v4) => u64::from(u32::from(*v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(*v6);
                folded_multiply(bits as u64 ^ self.seed, ((bits >> 64) as u64) ^ K)
            }
        };
        folded_multiply(x ^ self.seed, K) as usize & (self.slots.len() - 1)
    }

    /// The code of `a`, appending it to `dictionary` the first time it is seen.
    #[inline]
    fn code(
        &mut self,
        a: IpAddr,
        dictionary: &mut Vec<IpAddr>,
    ) -> std::result::Result<u32, NoMemory> {
        if dictionary.len() * 2 >= self.slots.len() {
            self.grow(dictionary)?;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(&a);
        loop {
            match self.slots[i] {
                EMPTY => {
                    let code = dictionary.len() as u32;
                    dictionary.push(a);
                    self.slots[i] = code;
                    return Ok(code);
                }
                c if dictionary.get(c as usize) == Some(&a) => return Ok(c),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Double the slots, and make room in `dictionary` for every address they can take before
    /// the next growth (half of them), so that [`AddressIndex::code`]'s push never reallocates.
    /// A code must stay below [`EMPTY`]: past 2³¹ slots (2³⁰ addresses, some 60 GB of columns)
    /// the growth is refused as memory that cannot be had.
    #[cold]
    fn grow(&mut self, dictionary: &mut Vec<IpAddr>) -> Room {
        let len = (self.slots.len() * 2).max(64);
        let refused = || NoMemory(len.saturating_mul(std::mem::size_of::<u32>()));
        if len > 1 << 31 {
            return Err(refused());
        }
        let mut slots = Vec::new();
        slots.try_reserve_exact(len).map_err(|_| refused())?;
        let more = (len / 2).saturating_sub(dictionary.len());
        if dictionary.capacity() - dictionary.len() < more {
            dictionary
                .try_reserve_exact(more)
                .map_err(|_| NoMemory((len / 2).saturating_mul(std::mem::size_of::<IpAddr>())))?;
        }
        slots.resize(len, EMPTY);
        self.slots = slots;
        let mask = len - 1;
        for (code, a) in dictionary.iter().enumerate() {
            let mut i = self.slot(a);
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = code as u32;
        }
        Ok(())
    }
}

/// The columns a caller may ask for.
pub const ALL_COLUMNS: &[&str] = &[
    "timestamp",
    "interface",
    "wire_len",
    "cap_len",
    "linktype",
    "src",
    "dst",
    "protocol",
    "sport",
    "dport",
    "vlan",
    "qp",
    "ip_len",
    "payload_len",
    "tcp_flags",
    "tcp_seq",
];

/// Packets as columns, a row per packet in file order. Only the columns asked for are filled
/// (the others stay empty); header fields are null where a packet lacks them or its capture
/// cut them off (docs/metrics.md says which link types and encapsulations are read).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PacketTable {
    /// The columns asked for, in [`ALL_COLUMNS`]' names.
    pub columns: Vec<String>,
    /// Packets read (the length of every wanted column).
    pub rows: usize,
    /// ns since the epoch; null for a packet without a timestamp.
    pub timestamp: Nullable<i64>,
    /// The interface, numbered across all the file's pcapng sections.
    pub interface: Vec<u32>,
    /// Length on the wire.
    pub wire_len: Vec<u32>,
    /// Length captured.
    pub cap_len: Vec<u32>,
    /// The interface's link type.
    pub linktype: Vec<u16>,
    /// The outermost IP header's source, as text.
    pub src: AddressColumn,
    /// Its destination, as text.
    pub dst: AddressColumn,
    /// IP protocol number.
    pub protocol: Nullable<u8>,
    /// TCP/UDP source port.
    pub sport: Nullable<u16>,
    /// TCP/UDP destination port.
    pub dport: Nullable<u16>,
    /// The outer VLAN id.
    pub vlan: Nullable<u16>,
    /// RoCEv2 destination QP.
    pub qp: Nullable<u32>,
    /// The IP header's length (IPv4 total length, IPv6 payload length + 40).
    pub ip_len: Nullable<u32>,
    /// Transport payload, from `ip_len`.
    pub payload_len: Nullable<u32>,
    /// TCP flags byte.
    pub tcp_flags: Nullable<u8>,
    /// The raw TCP sequence number.
    pub tcp_seq: Nullable<u32>,
    /// The packets read, counted (the rows) or left out by the [`Selection`] with their reason,
    /// as a scan accounts for them: `skipped_outside_range`, `skipped_no_timestamp` (in no time
    /// range: a Simple Packet Block), `skipped_timestamp_out_of_range` (in no time range either:
    /// the reader hands such a packet out without a timestamp, and its count tells it apart) and
    /// `skipped_filtered`, with [`Accounting::ts_span`] when there is a range, so that a range
    /// that kept none of the packets can be told. Without a range, packets without a timestamp
    /// are rows (a null timestamp), not skipped.
    pub read: Accounting,
}

impl PacketTable {
    /// Whether column `name` was asked for (and so is filled).
    pub fn wants(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c == name)
    }
}

/// Which columns to fill: one flag per entry of [`ALL_COLUMNS`], in that order.
#[derive(Clone, Copy)]
struct Wanted([bool; ALL_COLUMNS.len()]);

impl Wanted {
    fn new(columns: &[String]) -> Self {
        let mut w = [false; ALL_COLUMNS.len()];
        for (flag, name) in w.iter_mut().zip(ALL_COLUMNS) {
            *flag = columns.iter().any(|c| c == name);
        }
        Wanted(w)
    }
    /// Any column that needs the headers decoded (those after `linktype`).
    fn headers(&self) -> bool {
        self.0[5..].iter().any(|&w| w)
    }
}

/// One packet's record fields, held between reading and the column copy (its headers, when
/// wanted, are held next to it).
#[derive(Clone, Copy, Default)]
struct Row {
    ts: Option<i64>,
    interface: u32,
    wire_len: u32,
    cap_len: u32,
    linktype: u16,
}

/// Packets are decoded into a small batch of rows, which then goes into the columns one column
/// at a time: a tight loop per column (one capacity check, no interleaved stores to 25 vectors)
/// while the batch is still in cache.
const BATCH: usize = 512;

impl<T: Copy + Default> Nullable<T> {
    /// While every row so far is null (a column the capture does not have: `qp` without RoCE,
    /// `vlan` without tags), no value is written: [`Nullable::finish`] then hands over zeroed
    /// memory the allocator gets fresh from the kernel, which no one ever writes, and a column of
    /// nulls costs no page faults.
    #[inline]
    fn extend<R>(&mut self, rows: &[R], field: impl Fn(&R) -> Option<T>) -> Room {
        let before = self.valid.len;
        self.valid.room(rows.len())?;
        self.valid.extend_rows(rows, |r| field(r).is_some());
        if self.valid.nulls == self.valid.len {
            return Ok(());
        }
        let more = (before + rows.len()).saturating_sub(self.values.len());
        room(&mut self.values, more)?;
        if self.values.len() < before {
            self.values.resize(before, T::default());
        }
        self.values
            .extend(rows.iter().map(|r| field(r).unwrap_or_default()));
        Ok(())
    }

    /// Make `values` as long as the column (see [`Nullable::extend`]).
    fn finish(&mut self) -> Room
    where
        T: ZeroBits,
    {
        if self.values.len() < self.valid.len {
            self.values = zeroed(self.valid.len)?;
        }
        Ok(())
    }
    fn reserve(&mut self, n: usize) {
        huge_pages::reserve(&mut self.values, n);
        let _ = self.valid.bits.try_reserve_exact(n.div_ceil(8));
    }
    fn shrink(&mut self) {
        self.values.shrink_to_fit();
        self.valid.bits.shrink_to_fit();
    }
}

impl PacketTable {
    /// Copy a batch into the wanted columns, or say how many bytes a column's growth could not
    /// have (the columns are then partly filled: the table is for dropping).
    fn flush(&mut self, w: Wanted, rows: &[Row], heads: &[Headers]) -> Room {
        if w.0[0] {
            self.timestamp.extend(rows, |r| r.ts)?;
        }
        if w.0[1] {
            room(&mut self.interface, rows.len())?;
            self.interface.extend(rows.iter().map(|r| r.interface));
        }
        if w.0[2] {
            room(&mut self.wire_len, rows.len())?;
            self.wire_len.extend(rows.iter().map(|r| r.wire_len));
        }
        if w.0[3] {
            room(&mut self.cap_len, rows.len())?;
            self.cap_len.extend(rows.iter().map(|r| r.cap_len));
        }
        if w.0[4] {
            room(&mut self.linktype, rows.len())?;
            self.linktype.extend(rows.iter().map(|r| r.linktype));
        }
        if w.0[5] {
            self.src.extend(heads, |h| h.src)?;
        }
        if w.0[6] {
            self.dst.extend(heads, |h| h.dst)?;
        }
        if w.0[7] {
            self.protocol.extend(heads, |h| h.ip_proto)?;
        }
        if w.0[8] {
            self.sport.extend(heads, |h| h.sport)?;
        }
        if w.0[9] {
            self.dport.extend(heads, |h| h.dport)?;
        }
        if w.0[10] {
            self.vlan.extend(heads, |h| h.vlan)?;
        }
        if w.0[11] {
            self.qp.extend(heads, |h| h.roce_qp)?;
        }
        if w.0[12] {
            self.ip_len.extend(heads, |h| h.ip_len)?;
        }
        if w.0[13] {
            self.payload_len.extend(heads, |h| h.payload_len)?;
        }
        if w.0[14] {
            self.tcp_flags.extend(heads, |h| h.tcp_flags)?;
        }
        if w.0[15] {
            self.tcp_seq.extend(heads, |h| h.tcp_seq)?;
        }
        Ok(())
    }

    /// Make room for `n` more rows in the wanted columns. Only a hint: where the memory is not
    /// there, the columns grow as they fill instead. Each column is filled from start to end
    /// once, so its values ask for huge pages ([`huge_pages`]).
    fn reserve(&mut self, w: Wanted, n: usize) {
        self.timestamp.reserve(if w.0[0] { n } else { 0 });
        huge_pages::reserve(&mut self.interface, if w.0[1] { n } else { 0 });
        huge_pages::reserve(&mut self.wire_len, if w.0[2] { n } else { 0 });
        huge_pages::reserve(&mut self.cap_len, if w.0[3] { n } else { 0 });
        huge_pages::reserve(&mut self.linktype, if w.0[4] { n } else { 0 });
        self.src.reserve(if w.0[5] { n } else { 0 });
        self.dst.reserve(if w.0[6] { n } else { 0 });
        self.protocol.reserve(if w.0[7] { n } else { 0 });
        self.sport.reserve(if w.0[8] { n } else { 0 });
        self.dport.reserve(if w.0[9] { n } else { 0 });
        self.vlan.reserve(if w.0[10] { n } else { 0 });
        self.qp.reserve(if w.0[11] { n } else { 0 });
        self.ip_len.reserve(if w.0[12] { n } else { 0 });
        self.payload_len.reserve(if w.0[13] { n } else { 0 });
        self.tcp_flags.reserve(if w.0[14] { n } else { 0 });
        self.tcp_seq.reserve(if w.0[15] { n } else { 0 });
    }

    fn finish(&mut self) -> Room {
        self.src.finish();
        self.dst.finish();
        self.timestamp.finish()?;
        self.protocol.finish()?;
        self.sport.finish()?;
        self.dport.finish()?;
        self.vlan.finish()?;
        self.qp.finish()?;
        self.ip_len.finish()?;
        self.payload_len.finish()?;
        self.tcp_flags.finish()?;
        self.tcp_seq.finish()?;
        Ok(())
    }

    /// Give back capacity a size estimate over-reserved (in place, no copy).
    fn shrink(&mut self) {
        self.timestamp.shrink();
        self.interface.shrink_to_fit();
        self.wire_len.shrink_to_fit();
        self.cap_len.shrink_to_fit();
        self.linktype.shrink_to_fit();
        self.src.shrink();
        self.dst.shrink();
        self.protocol.shrink();
        self.sport.shrink();
        self.dport.shrink();
        self.vlan.shrink();
        self.qp.shrink();
        self.ip_len.shrink();
        self.payload_len.shrink();
        self.tcp_flags.shrink();
        self.tcp_seq.shrink();
    }
}

/// Read a whole capture into columns. `columns` = None means all of them. `size_hint` is the
/// input's length in bytes when known: after the first batch, the columns reserve room for the
/// packets it should hold, so that they do not grow (and copy) by doubling.
pub fn read_table(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    size_hint: Option<u64>,
    progress: Progress<'_>,
) -> Result<PacketTable> {
    read_table_where(reader, columns, size_hint, Selection::ALL, progress)
}

/// The packets a table holds, chosen as a scan chooses them: those with a timestamp in `range`
/// (a packet without one is left out unless `range` is all of time) whose headers pass `filter`.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Selection<'f> {
    /// The packets' time range.
    pub range: crate::TimeRange,
    /// The filter their headers must pass, if any.
    pub filter: Option<&'f crate::Filter>,
}

crate::builders!(['f] Selection<'f> {
    range: crate::TimeRange => with_range,
    filter: Option<&'f crate::Filter> => with_filter,
});

impl Selection<'_> {
    /// Every packet.
    pub const ALL: Selection<'static> = Selection {
        range: crate::TimeRange::ALL,
        filter: None,
    };
}

/// [`read_table`] of only the packets `select` chooses: a filtered table is read in one stream,
/// each packet's headers decoded to test it; the time range is looked at first, so a packet
/// outside it costs no decoding.
pub fn read_table_where(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    size_hint: Option<u64>,
    select: Selection<'_>,
    progress: Progress<'_>,
) -> Result<PacketTable> {
    select.range.check()?;
    let cols = column_names(columns)?;
    let (t, _) = fill(reader, cols, 0, size_hint, select, usize::MAX, progress)?;
    progress(reader.consumed())?;
    Ok(t)
}

/// [`read_table`] with up to `threads` threads (at most [`crate::MAX_THREADS`]): a plain capture
/// file is read in byte ranges side by side, one table per range, which taken in
/// order hold exactly the rows of the sequential read; anything else is read sequentially into
/// one table.
pub fn read_table_threads(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    size_hint: Option<u64>,
    threads: usize,
    progress: Progress<'_>,
) -> Result<Vec<PacketTable>> {
    read_table_threads_where(
        reader,
        columns,
        size_hint,
        threads,
        Selection::ALL,
        progress,
    )
}

/// [`read_table_threads`] of only the packets `select` chooses.
pub fn read_table_threads_where(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    size_hint: Option<u64>,
    threads: usize,
    select: Selection<'_>,
    progress: Progress<'_>,
) -> Result<Vec<PacketTable>> {
    select.range.check()?;
    // The split read may give up and a sequential read start over.
    let mut forward = crate::pipeline::forward_only(progress);
    let threads = threads.min(crate::MAX_THREADS);
    if let Some(tables) = split::read_table_split(reader, columns, threads, select, &mut forward)? {
        return Ok(tables);
    }
    Ok(vec![read_table_where(
        reader,
        columns,
        size_hint,
        select,
        &mut forward,
    )?])
}

/// What the tables of one read ([`read_table_threads_where`]) read and left out, together.
pub fn read_of(tables: &[PacketTable]) -> Accounting {
    let mut read = Accounting::default();
    for t in tables {
        read.add(&t.read);
        read.counted += t.read.counted;
    }
    read
}

/// The columns asked for (all of them for `None`), or which name is not one.
fn column_names(columns: Option<&[String]>) -> Result<Vec<String>> {
    match columns {
        None => Ok(ALL_COLUMNS.iter().map(|s| s.to_string()).collect()),
        Some(c) => {
            for name in c {
                if !ALL_COLUMNS.contains(&name.as_str()) {
                    return Err(Error::invalid(format!(
                        "unknown column {name:?}; the columns are: {}",
                        ALL_COLUMNS.join(", ")
                    )));
                }
            }
            Ok(c.to_vec())
        }
    }
}

/// Where a table's packets come from: a whole capture, or one byte range of a file
/// ([`split`]).
trait Source {
    fn next_packet(&mut self) -> Result<Option<crate::Packet<'_>>>;
    /// Bytes of the file consumed: the offset of the first byte not read yet, counted in the
    /// file's own bytes (compressed ones for a compressed file), as its size is.
    fn consumed(&self) -> u64;
    /// Offset of the first byte not read yet in the (decompressed) capture, for errors.
    fn position(&self) -> u64;
    /// Packets framed so far whose timestamp does not fit i64 ns ([`ReadStats`]'s count): they
    /// come out without one, like a Simple Packet Block's.
    ///
    /// [`ReadStats`]: crate::capture::ReadStats
    fn timestamps_out_of_range(&self) -> u64;
    /// A read of the input returned a while after the last look ([`CaptureReader::due`]):
    /// time to tell progress, however few rows came since. Never for a chunk of a file.
    #[inline]
    fn due(&self) -> bool {
        false
    }
    /// [`Source::consumed`], told to progress (the next [`Source::due`] waits for a later read).
    fn looked(&mut self) -> u64 {
        self.consumed()
    }
}

impl Source for CaptureReader {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<crate::Packet<'_>>> {
        CaptureReader::next_packet(self)
    }
    fn consumed(&self) -> u64 {
        CaptureReader::consumed(self)
    }
    fn position(&self) -> u64 {
        CaptureReader::position(self)
    }
    fn timestamps_out_of_range(&self) -> u64 {
        self.stats().timestamps_out_of_range
    }
    #[inline]
    fn due(&self) -> bool {
        CaptureReader::due(self)
    }
    fn looked(&mut self) -> u64 {
        CaptureReader::looked(self)
    }
}

impl Source for crate::capture::split::ChunkReader {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<crate::Packet<'_>>> {
        crate::capture::split::ChunkReader::next_packet(self)
    }
    fn consumed(&self) -> u64 {
        crate::capture::split::ChunkReader::position(self)
    }
    fn position(&self) -> u64 {
        crate::capture::split::ChunkReader::position(self)
    }
    /// Its reader's count, which may include the packet past the range at which it stopped; but
    /// the first such packet is told by a warning, which makes the split give way to a sequential
    /// read ([`split::read_table_split`]), so the tables of a split read never count one.
    fn timestamps_out_of_range(&self) -> u64 {
        self.reader().stats().timestamps_out_of_range
    }
}

/// Read the packets of `source` that `select` chooses into the columns `cols`, until the source
/// ends or the table holds `limit` rows (`usize::MAX`: the whole source); the flag says whether
/// the source ended. `start` is the source's position before its first packet and `size_hint`
/// the bytes it holds from there, when known (see [`read_table`]). `progress` gets the position
/// every 65,536 packets read; its error stops the read.
fn fill<S: Source>(
    source: &mut S,
    cols: Vec<String>,
    start: u64,
    size_hint: Option<u64>,
    select: Selection<'_>,
    limit: usize,
    progress: Progress<'_>,
) -> Result<(PacketTable, bool)> {
    let w = Wanted::new(&cols);
    let filter = select.filter;
    // Whether there is a range at all, found once: a read of all of time pays one branch per
    // packet that always goes the same way.
    let ranged = !select.range.is_all();
    // A filter reads the headers whatever the columns: into the row's slot, kept if it passes.
    let headers = w.headers() || filter.is_some();
    let mut t = PacketTable {
        columns: cols,
        ..Default::default()
    };
    // No batch holds more than `limit` rows: a table of a few rows (iter_packets with small
    // batches) sets up no more slots than it can fill.
    let slots = BATCH.min(limit);
    let mut rows: Vec<Row> = Vec::with_capacity(slots);
    // Reused slots that the decoder fills in place; only the first rows.len() are current.
    let mut heads: Vec<Headers> = vec![Headers::default(); if headers { slots } else { 0 }];
    let mut n = 0u64;
    // `n` when progress was last told.
    let mut told = 0u64;
    // Packets read past the last progress call, when a range or a filter may leave many out.
    let mut unreported = 0u64;
    let mut reserved = false;
    let out_of_range_before = source.timestamps_out_of_range();
    let mut ended = false;
    loop {
        rows.clear();
        let want = BATCH.min(limit - t.rows);
        // A slow stream ends the batch early: its 512 rows take 51 s at 10 packets a second,
        // while a stop is looked for between batches.
        while rows.len() < want && !source.due() {
            let Some(p) = source.next_packet()? else {
                ended = true;
                break;
            };
            // As a scan admits packets: the time range before the headers are decoded, and a
            // packet without a timestamp is in no range.
            if ranged {
                let Some(ts) = p.ts_ns else {
                    t.read.skipped_no_timestamp += 1;
                    left_out(&mut unreported, source, progress)?;
                    continue;
                };
                t.read.saw(ts);
                if !select.range.contains(ts) {
                    t.read.skipped_outside_range += 1;
                    left_out(&mut unreported, source, progress)?;
                    continue;
                }
            }
            if let Some(h) = heads.get_mut(rows.len()) {
                wire::decode_into(h, p.linktype, p.data, p.wire_len);
                if let Some(f) = filter {
                    if !f.matches(h, p.wire_len) {
                        t.read.skipped_filtered += 1;
                        left_out(&mut unreported, source, progress)?;
                        continue;
                    }
                }
            }
            rows.push(Row {
                ts: p.ts_ns,
                interface: p.interface,
                wire_len: p.wire_len,
                cap_len: p.data.len() as u32,
                linktype: p.linktype,
            });
        }
        if let Err(NoMemory(bytes)) = t.flush(w, &rows, heads.get(..rows.len()).unwrap_or_default())
        {
            return Err(no_memory(t.rows, source.position(), bytes));
        }
        t.rows += rows.len();
        n += rows.len() as u64;
        if ended || t.rows == limit {
            break;
        }
        if !reserved {
            reserved = true;
            let read = source.consumed().saturating_sub(start);
            if let Some(expected) = size_hint.and_then(|len| expected_rows(len, read, n)) {
                t.reserve(w, expected.min(limit).saturating_sub(n as usize));
            }
        }
        // Batches cut short by `due` are shorter: counted by rows since the last look, not
        // by multiples of 65,536, which `n` could then step over for ever.
        if n - told >= 1 << 16 || source.due() {
            told = n;
            progress(source.looked())?;
        }
    }
    if reserved {
        t.shrink();
    }
    if let Err(NoMemory(bytes)) = t.finish() {
        return Err(no_memory(t.rows, source.position(), bytes));
    }
    if ranged {
        // The reader hands out a timestamp outside int64 ns as none, so the range left it out as
        // "no timestamp": its own count tells the reasons apart, as a scan's accounting does.
        let n = source
            .timestamps_out_of_range()
            .saturating_sub(out_of_range_before)
            .min(t.read.skipped_no_timestamp);
        t.read.skipped_no_timestamp -= n;
        t.read.skipped_timestamp_out_of_range += n;
    }
    t.read.counted = t.rows as u64;
    t.read.packets_read = t.read.counted
        + t.read.skipped_no_timestamp
        + t.read.skipped_timestamp_out_of_range
        + t.read.skipped_outside_range
        + t.read.skipped_filtered;
    Ok((t, ended))
}

/// The error of a table whose columns could not grow: `rows` packets were in it when an
/// allocation of `bytes` failed at byte `offset` of the capture. Growth is by fallible reservation
/// ([`room`]): the allocator's refusal would otherwise abort the process, where a read of a
/// capture too large for the memory (or a forged one of millions of empty packets) can fail.
#[cold]
fn no_memory(rows: usize, offset: u64, bytes: usize) -> Error {
    Error::limit_exceeded_at(
        Limit::Result,
        offset,
        format!(
            "out of memory for the packet table: after {rows} packet{} the columns could not \
             have {bytes} bytes more; read fewer columns (columns=), a time range (start=/end=) \
             or only the packets wanted (filter=), or use an analysis that does not hold every \
             packet (scan, flows)",
            if rows == 1 { "" } else { "s" }
        ),
    )
}

/// A packet read and left out of the table: progress is told every 65,536 of them too, so that a
/// range or filter that leaves out most of a capture still moves the bar (and can be stopped).
#[inline]
fn left_out<S: Source>(unreported: &mut u64, source: &S, progress: Progress<'_>) -> Result<()> {
    *unreported += 1;
    if *unreported >= 1 << 16 {
        *unreported = 0;
        progress(source.consumed())?;
    }
    Ok(())
}

/// Rows a `len`-byte input should hold if the rest is like the first `rows` rows in `read`
/// bytes, with a margin; `None` when that says nothing. Never more than `len / 16`: no record of
/// either format is shorter than 16 bytes, so a crafted start cannot make it reserve more.
fn expected_rows(len: u64, read: u64, rows: u64) -> Option<usize> {
    if read == 0 || rows == 0 || len <= read {
        return None;
    }
    let estimate = u128::from(len) * u128::from(rows) / u128::from(read);
    let bound = u128::from(len / MIN_RECORD);
    usize::try_from((estimate + estimate / 16).min(bound)).ok()
}

/// How many bytes a column's growth asked for and could not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NoMemory(usize);

type Room = std::result::Result<(), NoMemory>;

/// Make room in `v` for `more` elements past its length, growing as `Vec` does (at least
/// doubling) but by a reservation that fails instead of aborting the process. Called once per
/// batch and column, so that the pushes and extends that follow never reallocate.
#[inline]
fn room<T>(v: &mut Vec<T>, more: usize) -> Room {
    if v.capacity() - v.len() >= more {
        return Ok(());
    }
    grow(v, more)
}

#[cold]
fn grow<T>(v: &mut Vec<T>, more: usize) -> Room {
    let want = v
        .len()
        .saturating_add(more)
        .max(v.capacity().saturating_mul(2))
        .max(8);
    v.try_reserve_exact(want - v.len())
        .map_err(|_| NoMemory(want.saturating_mul(std::mem::size_of::<T>())))
}

/// A type whose value with every bit zero is its `Default` (the integers of the columns).
///
/// # Safety
/// An implementor's all-zero bit pattern must be a valid value.
unsafe trait ZeroBits: Copy + Default {}
// SAFETY: zero is a valid value of every integer type.
unsafe impl ZeroBits for u8 {}
// SAFETY: as above.
unsafe impl ZeroBits for u16 {}
// SAFETY: as above.
unsafe impl ZeroBits for u32 {}
// SAFETY: as above.
unsafe impl ZeroBits for i64 {}

/// `len` zeros, in memory the allocator hands over zeroed (fresh from the kernel for a large
/// column: no page is touched, see [`Nullable::extend`]), or the bytes that could not be had.
/// What `vec![0; len]` does, but without aborting the process when the memory is not there.
fn zeroed<T: ZeroBits>(len: usize) -> std::result::Result<Vec<T>, NoMemory> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| NoMemory(bytes))?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout's size is not zero.
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if p.is_null() {
        return Err(NoMemory(bytes));
    }
    // SAFETY: `p` comes from the global allocator with the layout of `len` `T`s (the one `Vec`
    // uses for that capacity), and all `len` are initialised: zero bits are a `T` (`ZeroBits`).
    Ok(unsafe { Vec::from_raw_parts(p, len, len) })
}

/// The shortest record: a classic pcap record header (16 bytes) with no data; pcapng's shortest
/// packet block (a Simple Packet Block) is 16 bytes too.
const MIN_RECORD: u64 = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::ReadOptions;
    use crate::writer::{PcapOptions, PcapWriter};
    use std::collections::HashMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

    use crate::test_rng::Rng;

    #[test]
    fn growth_that_cannot_be_had_is_an_error_not_an_abort() {
        // More than any address space: the reservation fails, and says how much it asked for.
        let mut v: Vec<u64> = vec![1, 2, 3];
        let more = usize::MAX / 16;
        assert_eq!(room(&mut v, more), Err(NoMemory((3 + more) * 8)));
        assert_eq!(v, [1, 2, 3]);
        assert!(zeroed::<u32>(usize::MAX / 2).is_err());
        // What can be had grows at least by doubling, as `Vec` does, so that a push per row
        // costs amortised constant time.
        let mut v: Vec<u16> = Vec::with_capacity(100);
        v.resize(100, 7);
        room(&mut v, 1).unwrap();
        assert!(v.capacity() >= 200);
        room(&mut v, 1_000).unwrap();
        assert!(v.capacity() >= 1_100);
        let z = zeroed::<i64>(1 << 20).unwrap();
        assert!(z.len() == 1 << 20 && z.iter().all(|&x| x == 0));
        assert!(zeroed::<u8>(0).unwrap().is_empty());
    }

    #[test]
    fn reservation_is_bounded_by_the_smallest_record() {
        // As the start goes, with a sixteenth more.
        let rate = (1u64 << 20) * 512 / 51_200;
        assert_eq!(
            expected_rows(1 << 20, 51_200, 512),
            Some((rate + rate / 16) as usize)
        );
        // Empty records first cannot make it reserve more than the file could hold.
        assert_eq!(expected_rows(1 << 40, 512, 512), Some(1 << 36));
        assert_eq!(expected_rows(100, 100, 5), None);
        assert_eq!(expected_rows(100, 0, 0), None);
    }

    #[test]
    fn nulls_first_then_values() {
        let mut rng = Rng(5);
        for first_value in [None, Some(0), Some(1), Some(7), Some(8), Some(700)] {
            let rows: Vec<Option<u32>> = (0..1000usize)
                .map(|i| match first_value {
                    Some(f) if i >= f => (rng.below(3) != 0).then(|| rng.below(100) as u32),
                    _ => None,
                })
                .collect();
            let mut col = Nullable::<u32>::default();
            for chunk in rows.chunks(BATCH) {
                col.extend(chunk, |&r| r).unwrap();
            }
            col.finish().unwrap();
            assert_eq!(col.values.len(), rows.len());
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(col.valid.get(i).then(|| col.values[i]), *r, "row {i}");
                assert_eq!(col.values[i], r.unwrap_or_default());
            }
        }
    }

    #[test]
    fn validity_bits_equal_a_bool_per_row() {
        let mut rng = Rng(1);
        for _ in 0..200 {
            let mut v = Validity::default();
            let mut oracle: Vec<bool> = Vec::new();
            // Chunks of any length, so that some start in the middle of a byte.
            for _ in 0..rng.below(8) {
                let chunk: Vec<bool> = (0..rng.below(40)).map(|_| rng.below(3) != 0).collect();
                v.extend_rows(&chunk, |&b| b);
                oracle.extend(&chunk);
            }
            assert_eq!(v.len, oracle.len());
            assert_eq!(v.nulls, oracle.iter().filter(|&&b| !b).count());
            assert_eq!(v.bits.len(), oracle.len().div_ceil(8));
            for (i, &b) in oracle.iter().enumerate() {
                assert_eq!(v.get(i), b, "row {i}");
            }
            // Arrow wants the padding bits of the last byte clear.
            if let (Some(last), 1..) = (v.bits.last(), v.len % 8) {
                assert_eq!(last >> (v.len % 8), 0);
            }
        }
    }

    fn random_address(rng: &mut Rng) -> IpAddr {
        // Small pools so that addresses repeat, and ::ffff:a.b.c.d next to a.b.c.d (different
        // addresses that must not share a code).
        let k = rng.below(150) as u32;
        match rng.below(3) {
            0 => IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)),
            1 => IpAddr::V6(Ipv4Addr::from(0x0a00_0000 + k).to_ipv6_mapped()),
            _ => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, k as u16, 0, 0, 0x8a2e, 1)),
        }
    }

    #[test]
    fn address_codes_are_first_appearance_order() {
        let mut rng = Rng(2);
        let mut index = AddressIndex::default();
        let mut dictionary = Vec::new();
        let mut oracle: HashMap<IpAddr, u32> = HashMap::new();
        for _ in 0..20_000 {
            let a = random_address(&mut rng);
            let next = oracle.len() as u32;
            let want = *oracle.entry(a).or_insert(next);
            assert_eq!(index.code(a, &mut dictionary), Ok(want), "{a}");
        }
        assert_eq!(dictionary.len(), oracle.len());
        assert!(oracle.len() > 300, "the index grew several times");
        for (a, code) in oracle {
            assert_eq!(dictionary[code as usize], a);
        }
    }

    #[test]
    fn address_lookup_costs_at_most_82_bytes_an_address() {
        // Worst case: every row a new address, counted just after each growth (4 slots an
        // address) and at the dictionary's fullest. Slots of 4 bytes: 4 * 4 + 17 * 2 (dictionary
        // reserved for the next growth) + 16 * 2 (views, doubling) = 82; slots holding the
        // address itself (24 bytes) took 162.
        let heads: Vec<Headers> = (0..70_000u32)
            .map(|k| Headers {
                src: Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k))),
                ..Default::default()
            })
            .collect();
        let mut col = AddressColumn::default();
        let mut worst = 0.0f64;
        for chunk in heads.chunks(97) {
            col.extend(chunk, |h| h.src).unwrap();
            let n = col.views.len();
            if n >= 1000 {
                worst = worst.max(col.lookup_bytes() as f64 / n as f64);
            }
        }
        assert!(worst <= 82.0, "{worst:.1} bytes an address");
        assert_eq!(col.get(69_999).as_deref(), Some("10.1.17.111"));
        col.finish();
        assert_eq!(col.lookup_bytes(), 0);
        assert_eq!(
            col.get(69_999).as_deref(),
            Some("10.1.17.111"),
            "the views stay"
        );
    }

    #[test]
    fn address_views_read_back_as_the_addresses() {
        let mut rng = Rng(3);
        let heads: Vec<Headers> = (0..3000)
            .map(|_| Headers {
                src: (rng.below(5) != 0).then(|| random_address(&mut rng)),
                ..Default::default()
            })
            .collect();
        let mut col = AddressColumn::default();
        for chunk in heads.chunks(BATCH) {
            col.extend(chunk, |h| h.src).unwrap();
        }
        assert_eq!(col.views.len(), heads.len());
        for (i, h) in heads.iter().enumerate() {
            assert_eq!(col.get(i), h.src.map(|a| a.to_string()), "row {i}");
            let v = col.views[i];
            let len = v[0] as usize;
            if h.src.is_none() {
                assert_eq!(v, [0; 4]);
            } else if len <= 12 {
                // Inline text is zero-padded: equal strings have equal views.
                let bytes: Vec<u8> = v[1..].iter().flat_map(|w| w.to_ne_bytes()).collect();
                assert!(bytes[len..].iter().all(|&b| b == 0));
            } else {
                let prefix = &col.get(i).unwrap_or_default().into_bytes()[..4];
                assert_eq!(v[1].to_ne_bytes(), prefix);
            }
        }
    }

    pub(super) fn frame(rng: &mut Rng) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        match rng.below(4) {
            0 => f.extend_from_slice(&[0x08, 0x06, 0, 1]), // ARP: no IP fields
            kind => {
                if kind == 1 {
                    f.extend_from_slice(&[0x81, 0x00, 0, rng.below(200) as u8]);
                }
                let proto = if kind == 3 { 17 } else { 6 };
                f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 60, 0, 0, 0, 0, 64, proto, 0, 0]);
                f.extend_from_slice(&[10, 0, 0, rng.below(40) as u8, 10, 0, 1, 1]);
                f.extend_from_slice(&[0, 80, 0x12, 0xb7]);
                f.extend_from_slice(&(rng.below(1 << 32) as u32).to_be_bytes());
                f.extend_from_slice(&[0, 0, 0, 0, 0x50, 0x18]);
                f.extend_from_slice(&[0; 26]);
            }
        }
        // Some frames snapped inside their headers, so that fields go null one by one.
        let cut = if rng.below(4) == 0 {
            rng.below(f.len() as u64) as usize
        } else {
            f.len()
        };
        f.truncate(cut);
        f
    }

    /// An Ethernet pcap of `frames`, 1 µs apart, each 4 bytes longer on the wire (its FCS).
    /// Timestamps of today: a chunk's boundary search (`table::split`) trusts pcap records whose
    /// seconds are close to the first packet's, and time 0 is not trusted.
    pub(super) const T0: i64 = 1_700_000_000_000_000_000;

    pub(super) fn pcap_of<'a>(frames: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut w = PcapWriter::new(
            Vec::new(),
            PcapOptions {
                snaplen: 65535,
                ..Default::default()
            },
        )
        .unwrap();
        for (i, f) in frames.into_iter().enumerate() {
            w.write_packet(T0 + i as i64 * 1000, f.len() as u32 + 4, f)
                .unwrap();
        }
        w.finish().unwrap()
    }

    /// A reader of `bytes` that knows their length (as for a file).
    fn reader_of(bytes: &[u8]) -> CaptureReader {
        let len = Some(bytes.len() as u64);
        let cursor = Box::new(std::io::Cursor::new(bytes.to_vec()));
        CaptureReader::new(
            crate::input::from_reader(cursor, len).unwrap(),
            ReadOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn columns_equal_decoding_each_packet() {
        let mut rng = Rng(4);
        let frames: Vec<Vec<u8>> = (0..(3 * BATCH + 77)).map(|_| frame(&mut rng)).collect();
        let bytes = pcap_of(frames.iter().map(Vec::as_slice));
        let len = bytes.len() as u64;
        let open = || reader_of(&bytes);
        let t = read_table(&mut open(), None, Some(len), &mut |_| Ok(())).unwrap();
        assert_eq!(t.rows, frames.len());
        let mut reader = open();
        let mut i = 0;
        while let Some(p) = reader.next_packet().unwrap() {
            let h = wire::decode_frame(p.linktype, p.data, p.wire_len);
            let nullable = |c: &Nullable<u32>| c.valid.get(i).then(|| c.values[i]);
            let widen = |c: &Nullable<u16>| c.valid.get(i).then(|| u32::from(c.values[i]));
            let byte = |c: &Nullable<u8>| c.valid.get(i).then(|| c.values[i]);
            assert_eq!(
                t.timestamp.valid.get(i).then(|| t.timestamp.values[i]),
                p.ts_ns
            );
            assert_eq!(t.interface[i], p.interface);
            assert_eq!(t.wire_len[i], p.wire_len);
            assert_eq!(t.cap_len[i] as usize, p.data.len());
            assert_eq!(t.linktype[i], p.linktype);
            assert_eq!(t.src.get(i), h.src.map(|a| a.to_string()));
            assert_eq!(t.dst.get(i), h.dst.map(|a| a.to_string()));
            assert_eq!(byte(&t.protocol), h.ip_proto);
            assert_eq!(widen(&t.sport), h.sport.map(u32::from));
            assert_eq!(widen(&t.dport), h.dport.map(u32::from));
            assert_eq!(widen(&t.vlan), h.vlan.map(u32::from));
            assert_eq!(nullable(&t.qp), h.roce_qp);
            assert_eq!(nullable(&t.ip_len), h.ip_len);
            assert_eq!(nullable(&t.payload_len), h.payload_len);
            assert_eq!(byte(&t.tcp_flags), h.tcp_flags);
            assert_eq!(nullable(&t.tcp_seq), h.tcp_seq);
            i += 1;
        }
        assert_eq!(i, frames.len());
        // Only the columns asked for are filled.
        let some = ["dport".to_string(), "timestamp".to_string()];
        let s = read_table(&mut open(), Some(&some), None, &mut |_| Ok(())).unwrap();
        assert_eq!(s.dport.values, t.dport.values);
        assert_eq!(s.dport.valid, t.dport.valid);
        assert_eq!(s.timestamp.values, t.timestamp.values);
        assert!(s.src.views.is_empty() && s.wire_len.is_empty() && s.sport.values.is_empty());
        // The lookup that encoded the addresses is not kept with the columns.
        assert!(t.src.views.len() == frames.len() && t.src.valid.nulls < frames.len());
        assert_eq!((t.src.lookup_bytes(), t.dst.lookup_bytes()), (0, 0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_columns_are_advised_for_huge_pages_where_they_pay() {
        let _advice = huge_pages::tests::ADVICE
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // 300k packets: the address views (16 bytes a row) span several huge pages.
        let f = frame(&mut Rng(9));
        let n = 300_000;
        let bytes = pcap_of(std::iter::repeat_n(f.as_slice(), n));
        let len = Some(bytes.len() as u64);
        let t = read_table(&mut reader_of(&bytes), None, len, &mut |_| Ok(())).unwrap();
        assert_eq!(t.rows, n);
        let views = t.src.views.as_ptr() as usize;
        let inner = views.next_multiple_of(2 << 20);
        assert!(inner + (2 << 20) <= views + t.src.views.len() * 16);
        // Unless the kernel hands free memory back to a VM's host (then 4 KiB pages are faster).
        assert_eq!(huge_pages::tests::advised(inner), huge_pages::wanted());
    }
}
