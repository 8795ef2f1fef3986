//! Differential: `iter_packets`' and `scan_packets`' batches (`table::batches::PacketBatches`)
//! against `read_packets`' one-thread read (`table::read_table_where`) of the same capture, which
//! they promise to reproduce exactly: the batches, taken in order, hold the whole read's rows,
//! and the reader reports the same interfaces and warnings afterwards.
//!
//! From a hash of the input (so seeds stay captures): the batch size (1 to 300, now and then a
//! larger one or `usize::MAX`), the columns, filter and time range (`rows::pick_selection`, as
//! `read_threads` picks them), strictness, limits, and how the capture is opened (a file,
//! mapped or buffered, or the bytes as a stream of known or unknown length).
//!
//! Checks: both reads succeed with identical rows (every wanted column's values and validity, in
//! order), accounting, interfaces, warnings and recorded drops; or both fail with the same error
//! (kind, offset, input, reason) and the same warnings so far. Every batch but the last holds
//! exactly the batch size; the first may be empty only if it is the only one; after the end or an
//! error the batches stay ended. On an error, exactly the full batches before it were given: the
//! rows a batch of one row at a time gave before the same error, cut down to a multiple of the
//! batch size (and, with no selection, as many as the packets a plain read framed before it).
//! Progress never goes back nor past the input's length.
#![no_main]

use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::table::batches::PacketBatches;
use burstcore::table::{self, PacketTable, Selection};
use burstcore::{Filter, TimeRange};
use libfuzzer_sys::fuzz_target;
use rows::{rows_of, Row};
use std::path::Path;

#[path = "common.rs"]
mod common;
#[path = "rows.rs"]
mod rows;

/// How the capture is opened: a file (as `read_packets(path)`), or its bytes as a stream whose
/// length is known (`read_packets(bytes)`) or not (a pipe).
#[derive(Debug, Clone, Copy)]
enum Via<'a> {
    File(&'a Path),
    Bytes(&'a [u8], bool),
}

fn open(via: Via<'_>, opts: ReadOptions) -> Option<(CaptureReader, Option<u64>)> {
    let input = match via {
        Via::File(p) => burstcore::input::open_path(p).ok()?,
        Via::Bytes(b, known) => burstcore::input::from_reader(
            Box::new(std::io::Cursor::new(b.to_vec())),
            known.then_some(b.len() as u64),
        )
        .ok()?,
    };
    let total = input.file_len;
    CaptureReader::new(input, opts).ok().map(|r| (r, total))
}

#[derive(Debug, PartialEq)]
enum Seen {
    Done {
        rows: Vec<Row>,
        read: burstcore::pipeline::Accounting,
        reader: String,
    },
    Failed {
        kind: burstcore::ErrorKind,
        offset: Option<u64>,
        input: Option<String>,
        reason: String,
        warnings: String,
    },
}

fn warnings_of(reader: &CaptureReader, drops: bool) -> String {
    let w: Vec<_> = reader
        .warnings()
        .iter()
        .chain(reader.recorded_drops().as_ref().filter(|_| drops))
        .map(|w| (w.kind, w.offset, w.reason.clone()))
        .collect();
    format!("{w:?}")
}

fn failed(e: burstcore::Error, reader: &CaptureReader) -> Seen {
    Seen::Failed {
        kind: e.kind,
        offset: e.offset,
        input: e.input,
        reason: e.reason,
        warnings: warnings_of(reader, false),
    }
}

/// A progress callback that checks it never goes back nor past `total`.
fn watch(total: Option<u64>) -> impl FnMut(u64) -> Result<(), burstcore::Error> {
    let mut last = 0u64;
    move |done| {
        assert!(done >= last, "progress went back from {last} to {done}");
        if let Some(t) = total {
            assert!(done <= t, "progress {done} past the input's {t} bytes");
        }
        last = done;
        Ok(())
    }
}

/// The whole read, as `read_packets` with one thread makes it.
fn whole(
    via: Via<'_>,
    opts: ReadOptions,
    columns: Option<&[String]>,
    select: Selection<'_>,
) -> Option<Seen> {
    let (mut reader, total) = open(via, opts)?;
    let r = table::read_table_where(&mut reader, columns, total, select, &mut watch(total));
    Some(match r {
        Ok(t) => Seen::Done {
            rows: rows_of(std::slice::from_ref(&t)),
            read: table::read_of(std::slice::from_ref(&t)),
            reader: format!("{:?} {}", reader.interfaces(), warnings_of(&reader, true)),
        },
        Err(e) => failed(e, &reader),
    })
}

/// The read in batches of `size` rows, and the rows given before an error (all of them if none).
fn in_batches(
    via: Via<'_>,
    opts: ReadOptions,
    columns: Option<&[String]>,
    range: TimeRange,
    filter: Option<&Filter>,
    size: usize,
) -> Option<(Seen, Vec<Row>)> {
    let (reader, total) = open(via, opts)?;
    // Settings the whole read refuses (a range that ends where it starts) are refused here.
    let opened = warnings_of(&reader, false);
    let mut b = match PacketBatches::new(reader, columns, range, filter.cloned(), size, total) {
        Ok(b) => b,
        Err(e) => {
            let seen = Seen::Failed {
                kind: e.kind,
                offset: e.offset,
                input: e.input,
                reason: e.reason,
                warnings: opened,
            };
            return Some((seen, Vec::new()));
        }
    };
    let mut progress = watch(total);
    let mut tables: Vec<PacketTable> = Vec::new();
    let mut error = None;
    loop {
        match b.next_batch(&mut progress) {
            Ok(Some(t)) => {
                // Every batch given before this one was full; this one holds no more than asked.
                assert!(t.rows <= size, "a batch of {} rows for {size}", t.rows);
                if let Some(prev) = tables.last() {
                    assert_eq!(prev.rows, size, "a short batch before the last");
                    assert!(t.rows > 0, "an empty batch after the first");
                }
                tables.push(t);
            }
            Ok(None) => break,
            Err(e) => {
                assert!(b.is_done(), "an error did not end the batches");
                error = Some(e);
                break;
            }
        }
    }
    assert!(b.is_done());
    // Ended (or failed) batches stay ended.
    assert!(matches!(b.next_batch(&mut |_| Ok(())), Ok(None)));
    assert!(b.next().is_none());
    if error.is_none() {
        assert!(
            !tables.is_empty(),
            "no batch at all, not even an empty first one"
        );
    }
    let given = rows_of(&tables);
    let seen = match error {
        Some(e) => failed(e, b.reader()),
        None => Seen::Done {
            rows: given.clone(),
            read: b.read().clone(),
            reader: format!(
                "{:?} {}",
                b.reader().interfaces(),
                warnings_of(b.reader(), true)
            ),
        },
    };
    // `b.read()` is compared with the whole read's, not with the tables': it also counts the
    // packets the range or filter left out after the last row, read by a call that gave no batch.
    Some((seen, given))
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 256 << 10 {
        return;
    }
    let h = common::fnv(data);
    let g = common::fnv(&h.to_le_bytes());
    let mut opts = common::options(h);
    opts.mmap = g & 1 == 0;
    let (columns, filter, range) = rows::pick_selection(data, h, g, opts);
    let k = common::fnv(&g.to_le_bytes());
    let size = match k & 15 {
        0 => usize::MAX,
        1 => 512 + (k >> 8) as usize % 2048,
        _ => 1 + (k >> 8) as usize % 300,
    };

    let path = std::env::temp_dir().join(format!(
        "burstcore-fuzz-read-batches-{}.cap",
        std::process::id()
    ));
    let via = match k >> 4 & 3 {
        0 => Via::Bytes(data, true),
        1 => Via::Bytes(data, false),
        _ => {
            if std::fs::write(&path, data).is_err() {
                return;
            }
            Via::File(&path)
        }
    };
    let select = Selection::default()
        .with_range(range)
        .with_filter(filter.as_ref());
    let cols = columns.as_deref();
    let want = whole(via, opts, cols, select);
    let got = in_batches(via, opts, cols, range, filter.as_ref(), size);
    let (Some(want), Some((got, given))) = (want, got) else {
        let _ = std::fs::remove_file(&path);
        return;
    };
    assert_eq!(
        want, got,
        "batches of {size} differ from the whole read; columns {columns:?}, range {range:?}, \
         filter {filter:?}, strict {}, mmap {}, {via:?}",
        opts.strict, opts.mmap
    );
    if let Seen::Failed { .. } = got {
        // One row a batch gives every row before the error: the batches of `size` must have
        // given the full batches among them, no more, no less.
        let (one, before) =
            in_batches(via, opts, cols, range, filter.as_ref(), 1).expect("opened once already");
        assert_eq!(one, got, "batches of one row fail differently");
        let full = before.len() / size * size;
        assert_eq!(
            given,
            before[..full],
            "batches of {size} gave {} rows before the error, {} of one row each gave {}",
            given.len(),
            before.len(),
            before.len()
        );
        if range.is_all() && filter.is_none() {
            let framed = match via {
                Via::File(p) => common::read_path(p, opts),
                Via::Bytes(b, _) => common::read_all(b.to_vec(), opts),
            };
            assert_eq!(
                before.len(),
                framed.packets.len(),
                "rows before the error differ from the packets framed before it"
            );
        }
    }
    let _ = std::fs::remove_file(&path);
});
