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
use burstcore::table::{self, Nullable, PacketTable, Selection, ALL_COLUMNS};
use burstcore::TimeRange;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

#[path = "common.rs"]
mod common;

const FILTERS: [&str; 5] = [
    "tcp",
    "not udp",
    "ip6 or arp",
    "less 100 and not icmp",
    "vlan or port 4791",
];

/// One row as the values of the wanted columns: `None` for a null (or unwanted) value.
type Row = Vec<Option<String>>;

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

/// The value of row `i` of a nullable column, after checking the column's own bookkeeping.
fn at<T: Copy + Default + PartialEq + std::fmt::Debug>(
    c: &Nullable<T>,
    i: usize,
) -> Option<String> {
    if c.valid.get(i) {
        Some(format!("{:?}", c.values[i]))
    } else {
        // A null row holds the default value: Arrow hands it over as is.
        assert_eq!(c.values[i], T::default(), "null row {i} holds a value");
        None
    }
}

fn check_nullable<T>(name: &str, c: &Nullable<T>, rows: usize) {
    assert_eq!(
        c.valid.len, rows,
        "{name}: validity of {} rows",
        c.valid.len
    );
    assert_eq!(c.values.len(), rows, "{name}: {} values", c.values.len());
    let nulls = (0..rows).filter(|&i| !c.valid.get(i)).count();
    assert_eq!(c.valid.nulls, nulls, "{name}: null count");
    assert!(
        c.valid.bits.len() >= rows.div_ceil(8),
        "{name}: short bitmap"
    );
}

/// The rows of `tables` in order, each the values of the columns `cols` in that order.
fn rows_of(tables: &[PacketTable]) -> Vec<Row> {
    let mut out = Vec::new();
    for t in tables {
        let n = t.rows;
        for name in &t.columns {
            match name.as_str() {
                "timestamp" => check_nullable(name, &t.timestamp, n),
                "interface" => assert_eq!(t.interface.len(), n),
                "wire_len" => assert_eq!(t.wire_len.len(), n),
                "cap_len" => assert_eq!(t.cap_len.len(), n),
                "linktype" => assert_eq!(t.linktype.len(), n),
                "src" => assert_eq!((t.src.views.len(), t.src.valid.len), (n, n)),
                "dst" => assert_eq!((t.dst.views.len(), t.dst.valid.len), (n, n)),
                "protocol" => check_nullable(name, &t.protocol, n),
                "sport" => check_nullable(name, &t.sport, n),
                "dport" => check_nullable(name, &t.dport, n),
                "vlan" => check_nullable(name, &t.vlan, n),
                "qp" => check_nullable(name, &t.qp, n),
                "ip_len" => check_nullable(name, &t.ip_len, n),
                "payload_len" => check_nullable(name, &t.payload_len, n),
                "tcp_flags" => check_nullable(name, &t.tcp_flags, n),
                "tcp_seq" => check_nullable(name, &t.tcp_seq, n),
                other => panic!("a table with column {other:?}"),
            }
        }
        for i in 0..n {
            let row = t
                .columns
                .iter()
                .map(|name| match name.as_str() {
                    "timestamp" => at(&t.timestamp, i),
                    "interface" => Some(t.interface[i].to_string()),
                    "wire_len" => Some(t.wire_len[i].to_string()),
                    "cap_len" => Some(t.cap_len[i].to_string()),
                    "linktype" => Some(t.linktype[i].to_string()),
                    "src" => t.src.get(i),
                    "dst" => t.dst.get(i),
                    "protocol" => at(&t.protocol, i),
                    "sport" => at(&t.sport, i),
                    "dport" => at(&t.dport, i),
                    "vlan" => at(&t.vlan, i),
                    "qp" => at(&t.qp, i),
                    "ip_len" => at(&t.ip_len, i),
                    "payload_len" => at(&t.payload_len, i),
                    "tcp_flags" => at(&t.tcp_flags, i),
                    "tcp_seq" => at(&t.tcp_seq, i),
                    _ => unreachable!(),
                })
                .collect();
            out.push(row);
        }
    }
    out
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

    let columns: Option<Vec<String>> = match g >> 1 & 3 {
        0 => None,
        1 => Some(vec!["timestamp".into(), "wire_len".into()]),
        _ => {
            let mut c: Vec<String> = ALL_COLUMNS
                .iter()
                .enumerate()
                .filter(|(i, _)| g >> (3 + i) & 1 == 1)
                .map(|(_, s)| s.to_string())
                .collect();
            // A column asked for twice is filled once and handed over once.
            if let Some(first) = c.first().cloned().filter(|_| g >> 19 & 1 == 1) {
                c.push(first);
            }
            Some(c)
        }
    };
    let filter = (g >> 20 & 3 == 0).then(|| {
        burstcore::Filter::parse(FILTERS[(g >> 22) as usize % FILTERS.len()])
            .expect("a valid filter")
    });
    // A range on the capture's own instants (a packet exactly at a bound, ties, untimed packets),
    // open on one side, or one that misses every packet.
    let range = if g >> 25 & 1 == 0 {
        TimeRange::ALL
    } else {
        let mut ts: Vec<i64> = common::read_all(data.to_vec(), opts)
            .packets
            .iter()
            .filter_map(|p| p.ts_ns)
            .collect();
        ts.sort_unstable();
        let pick = |bits: u64| -> Option<i64> {
            if ts.is_empty() {
                return Some((bits as i64) << 20);
            }
            Some(ts[bits as usize % ts.len()] + [0, 0, 1, -1][(bits >> 16) as usize % 4])
        };
        let (a, b) = (pick(g >> 26), pick(g >> 44));
        let (lo, hi) = (a.min(b), a.max(b));
        match h >> 58 & 3 {
            0 => TimeRange {
                start_ns: lo,
                end_ns: None,
            },
            1 => TimeRange {
                start_ns: None,
                end_ns: hi,
            },
            _ => TimeRange {
                start_ns: lo,
                end_ns: hi,
            },
        }
    };
    let threads = 2 + (h >> 44) as usize % 3;

    let path = std::env::temp_dir().join(format!(
        "burstcore-fuzz-read-threads-{}.cap",
        std::process::id()
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let select = Selection {
        range,
        filter: filter.as_ref(),
    };
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
