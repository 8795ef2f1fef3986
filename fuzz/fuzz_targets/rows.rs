//! The rows of packet tables as plain values, checked on the way: what the table targets compare
//! between two reads of the same capture.

#![allow(dead_code)] // each target uses a different part of this file

use burstcore::table::{Nullable, PacketTable, ALL_COLUMNS};
use burstcore::TimeRange;

use super::common;

pub const FILTERS: [&str; 5] = [
    "tcp",
    "not udp",
    "ip6 or arp",
    "less 100 and not icmp",
    "vlan or port 4791",
];

/// One row as the values of the wanted columns: `None` for a null (or unwanted) value.
pub type Row = Vec<Option<String>>;

/// The value of row `i` of a nullable column, after checking the column's own bookkeeping.
pub fn at<T: Copy + Default + PartialEq + std::fmt::Debug>(
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

pub fn check_nullable<T>(name: &str, c: &Nullable<T>, rows: usize) {
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
pub fn rows_of(tables: &[PacketTable]) -> Vec<Row> {
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

/// The columns, filter and time range a table target reads with, from bits of the input's hashes
/// `h` and `g` (so that seeds stay captures): all columns, two, or a hashed subset (sometimes
/// one twice); a filter for 1 input in 4; for half the inputs a range on the capture's own
/// instants (a packet exactly at a bound, ties, untimed packets), open on one side, or one that
/// misses every packet.
pub fn pick_selection(
    data: &[u8],
    h: u64,
    g: u64,
    opts: burstcore::capture::ReadOptions,
) -> (Option<Vec<String>>, Option<burstcore::Filter>, TimeRange) {
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
    (columns, filter, range)
}
