//! A capture read as a sequence of tables of at most so many rows each: what `iter_packets` and
//! `scan_packets` hand to polars one batch at a time, so that the memory held is a batch's,
//! not the file's. The reader is pulled from, as [`super::read_table`] pulls from it, and keeps
//! its place between batches: no thread, nothing read ahead.

use super::{column_names, fill, PacketTable, Selection};
use crate::capture::CaptureReader;
use crate::error::{Error, Result};
use crate::pipeline::{Accounting, Progress};
use crate::{Filter, TimeRange};

/// Rows of a batch unless asked otherwise: 2²⁰, about 75 MB of all the columns (less for
/// fewer), big enough that a batch costs far more to read than to hand over.
pub const DEFAULT_BATCH_ROWS: usize = 1 << 20;

/// The packets of one capture, chosen as [`super::read_table_where`] chooses them, in tables
/// of at most `batch_rows` rows. Taken in order, the tables hold exactly the rows of
/// [`super::read_table_where`] with the same columns and selection. The first call gives a
/// table even when it has no rows (so that a caller always has the columns); after that, only
/// tables with rows, until the capture ends. An error ends the sequence: the batch in which it
/// is met is not given, the ones before it were.
#[derive(Debug)]
pub struct PacketBatches {
    reader: CaptureReader,
    columns: Vec<String>,
    range: TimeRange,
    filter: Option<Filter>,
    batch_rows: usize,
    /// The input's length in bytes, when known, for the columns' reservations.
    size_hint: Option<u64>,
    /// What the batches given so far read and left out, together.
    read: Accounting,
    batches: u64,
    done: bool,
}

impl PacketBatches {
    /// Batches of `reader` (opened, not read beyond its header). `columns`, `range` and
    /// `filter` as [`super::read_table_where`] takes them; `size_hint` the input's length in
    /// bytes when known. An unknown column, a range that ends before it starts, or no rows a
    /// batch is an error before anything is read.
    pub fn new(
        reader: CaptureReader,
        columns: Option<&[String]>,
        range: TimeRange,
        filter: Option<Filter>,
        batch_rows: usize,
        size_hint: Option<u64>,
    ) -> Result<Self> {
        range.check()?;
        let columns = column_names(columns)?;
        if batch_rows == 0 {
            return Err(Error::invalid(
                "batch_rows=0: a batch must hold at least one row (give 1 or more)",
            ));
        }
        Ok(PacketBatches {
            reader,
            columns,
            range,
            filter,
            batch_rows,
            size_hint,
            read: Accounting::default(),
            batches: 0,
            done: false,
        })
    }

    /// The next table, `None` once the capture has ended (or an error ended the sequence).
    /// `progress` as for [`super::read_table`], called with the reader's position at the end
    /// of the batch too.
    pub fn next_batch(&mut self, progress: Progress<'_>) -> Result<Option<PacketTable>> {
        if self.done {
            return Ok(None);
        }
        let select = Selection {
            range: self.range,
            filter: self.filter.as_ref(),
        };
        let start = self.reader.consumed();
        let size_hint = self.size_hint.map(|len| len.saturating_sub(start));
        // Any error ends the sequence: the rows of a batch it cut short are lost, and a later
        // batch would follow a gap.
        self.done = true;
        let (t, ended) = fill(
            &mut self.reader,
            self.columns.clone(),
            start,
            size_hint,
            select,
            self.batch_rows,
            progress,
        )?;
        progress(self.reader.consumed())?;
        self.done = ended;
        self.read.add(&t.read);
        self.read.counted += t.read.counted;
        self.batches += 1;
        if t.rows == 0 && self.batches > 1 {
            // The capture ended right after a full batch, or nothing after it was chosen.
            return Ok(None);
        }
        Ok(Some(t))
    }

    /// The reader: its warnings so far, interfaces, statistics.
    pub fn reader(&self) -> &CaptureReader {
        &self.reader
    }

    /// What the batches given so far read and left out, together (as [`super::read_of`] sums
    /// the tables of one read).
    pub fn read(&self) -> &Accounting {
        &self.read
    }

    /// Whether the sequence has ended (the capture was read to its end, or an error stopped it).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The rows a batch holds at most.
    pub fn batch_rows(&self) -> usize {
        self.batch_rows
    }
}

impl Iterator for PacketBatches {
    type Item = Result<PacketTable>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch(&mut |_| Ok(())).transpose()
    }
}

#[cfg(test)]
mod tests;
