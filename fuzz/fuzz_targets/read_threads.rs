//! Differential: `read_packets`' table read (`table::read_table_threads_where`) with 2 to 4
//! threads against one thread on the same file, which it promises to reproduce exactly: the
//! split read's tables, taken in order, must hold the sequential read's rows, and the reader
//! must report the same interfaces and warnings afterwards; where the split cannot promise that
//! (a warning or error in a range, a seam that does not line up) it gives way to the sequential
//! read, so the outcome is the same either way.
//!
//! Tests are told to use as many ranges as asked (`chunked::use_as_many_threads_as_asked`), so a
//! capture of a few hundred bytes is still cut into one range per thread rather than read whole
//! for being under `MIN_RANGE_BYTES`. The columns (all, or a hashed subset, sometimes with a
//! repeat), a time range (bounds on the capture's own timestamps, or beyond them), a filter,
//! strictness, limits and mapping are picked from a hash of the input, so seeds stay captures.
//!
//! Checks: both reads succeed with identical rows (every wanted column's values and validity, in
//! order; addresses as text, since each range has its own dictionary), the same accounting, and
//! the same interfaces, warnings and recorded drops of the reader; or both fail with the same
//! error (kind, offset, input and reason). Each table is also checked on its own: every wanted
//! column as long as its rows, nulls counted right, null rows holding zero.
#![no_main]

use burstcore::capture::CaptureReader;
use burstcore::table::{self, Selection};
use libfuzzer_sys::fuzz_target;
use rows::{rows_of, Row};
use std::path::Path;

#[path = "common.rs"]
mod common;
#[path = "rows.rs"]
mod rows;

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
    },
}

fn read(
    path: &Path,
    opts: burstcore::capture::ReadOptions,
    columns: Option<&[String]>,
    select: Selection<'_>,
    threads: usize,
) -> Option<Seen> {
    let input = burstcore::input::open_path(path).ok()?;
    let total = input.file_len;
    let mut reader = CaptureReader::new(input, opts).ok()?;
    let mut last = 0u64;
    let r = table::read_table_threads_where(
        &mut reader,
        columns,
        total,
        threads,
        select,
        &mut |done| {
            // Progress never goes back (a bar would jump) and never passes the file's end.
            assert!(done >= last, "progress went back from {last} to {done}");
            if let Some(t) = total {
                assert!(done <= t, "progress {done} past the file's {t} bytes");
            }
            last = done;
            Ok(())
        },
    );
    Some(match r {
        Ok(tables) => {
            assert!(!tables.is_empty() && tables.len() <= threads.max(1));
            let warnings: Vec<_> = reader
                .warnings()
                .iter()
                .chain(reader.recorded_drops().as_ref())
                .map(|w| (w.kind, w.offset, w.reason.clone()))
                .collect();
            Seen::Done {
                rows: rows_of(&tables),
                read: table::read_of(&tables),
                reader: format!("{:?} {:?}", reader.interfaces(), warnings),
            }
        }
        Err(e) => Seen::Failed {
            kind: e.kind,
            offset: e.offset,
            input: e.input,
            reason: e.reason,
        },
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 256 << 10 {
        return;
    }
    burstcore::chunked::use_as_many_threads_as_asked(true);
    let h = common::fnv(data);
    let g = common::fnv(&h.to_le_bytes());
    let mut opts = common::options(h);
    opts.mmap = g & 1 == 0;

    let (columns, filter, range) = rows::pick_selection(data, h, g, opts);
    let threads = 2 + (h >> 44) as usize % 3;

    let path = std::env::temp_dir().join(format!(
        "burstcore-fuzz-read-threads-{}.cap",
        std::process::id()
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let select = Selection::default()
        .with_range(range)
        .with_filter(filter.as_ref());
    let one = read(&path, opts, columns.as_deref(), select, 1);
    let many = read(&path, opts, columns.as_deref(), select, threads);
    let _ = std::fs::remove_file(&path);
    let (Some(one), Some(many)) = (one, many) else {
        return;
    };
    assert_eq!(
        one, many,
        "{threads} threads differ from one; columns {columns:?}, range {range:?}, filter \
         {filter:?}, strict {}, mmap {}",
        opts.strict, opts.mmap
    );
});
