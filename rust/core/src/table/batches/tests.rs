use super::super::split::tests::{frames, pcapng_of, pcapng_with_untimed, rows, Fields};
use super::super::tests::{pcap_of, T0};
use super::super::{read_table_where, Selection, ALL_COLUMNS};
use super::*;
use crate::capture::{ByteOrder, ReadOptions};
use crate::error::ErrorKind;
use crate::test_rng::Rng;
use crate::writer::{PcapOptions, PcapWriter};
use std::path::{Path, PathBuf};

fn reader_of(bytes: &[u8], options: ReadOptions) -> Result<CaptureReader> {
    let len = Some(bytes.len() as u64);
    let cursor = Box::new(std::io::Cursor::new(bytes.to_vec()));
    CaptureReader::new(crate::input::from_reader(cursor, len)?, options)
}

/// What the oracle, a whole read, gives: its rows, its accounting, and its warnings; or its
/// error (kind and offset).
type Outcome =
    std::result::Result<(Vec<Fields>, Accounting, Vec<String>), (ErrorKind, Option<u64>)>;

fn whole(
    bytes: &[u8],
    options: ReadOptions,
    columns: Option<&[String]>,
    range: TimeRange,
    filter: Option<&Filter>,
) -> Option<Outcome> {
    let mut r = reader_of(bytes, options).ok()?;
    let select = Selection { range, filter };
    let len = Some(bytes.len() as u64);
    Some(
        match read_table_where(&mut r, columns, len, select, &mut |_| Ok(())) {
            Ok(t) => {
                let read = t.read.clone();
                Ok((rows(&[t]), read, warned(&r)))
            }
            Err(e) => Err((e.kind, e.offset)),
        },
    )
}

fn warned(r: &CaptureReader) -> Vec<String> {
    r.warnings().iter().map(|w| w.to_string()).collect()
}

/// The same read in batches of `batch_rows`: every batch within its bound, none empty but a
/// first, and the rows, accounting and warnings (or the error) of the whole read.
fn batched(
    bytes: &[u8],
    options: ReadOptions,
    columns: Option<&[String]>,
    range: TimeRange,
    filter: Option<&Filter>,
    batch_rows: usize,
) -> Outcome {
    let r = reader_of(bytes, options).expect("the whole read opened it");
    let len = Some(bytes.len() as u64);
    let mut b = PacketBatches::new(r, columns, range, filter.cloned(), batch_rows, len).unwrap();
    let mut tables = Vec::new();
    let mut k = 0;
    loop {
        match b.next_batch(&mut |_| Ok(())) {
            Ok(Some(t)) => {
                assert!(t.rows <= batch_rows, "batch {k}: {} rows", t.rows);
                assert!(t.rows > 0 || k == 0, "an empty batch after the first");
                // Only the last batch may hold fewer rows than asked for.
                if let Some(prev) = tables.last() {
                    let prev: &PacketTable = prev;
                    assert_eq!(prev.rows, batch_rows, "a short batch before batch {k}");
                }
                tables.push(t);
                k += 1;
            }
            Ok(None) => break,
            Err(e) => {
                assert!(b.is_done());
                assert!(b.next_batch(&mut |_| Ok(())).unwrap().is_none(), "ended");
                return Err((e.kind, e.offset));
            }
        }
    }
    assert!(!tables.is_empty(), "at least one batch");
    assert!(b.is_done());
    assert!(b.next_batch(&mut |_| Ok(())).unwrap().is_none());
    // The whole read's accounting, packets left out after the last row included.
    let read = b.read().clone();
    assert_eq!(
        read.counted,
        tables.iter().map(|t| t.rows as u64).sum::<u64>()
    );
    Ok((rows(&tables), read, warned(b.reader())))
}

fn same(want: &Outcome, got: &Outcome, what: &str) {
    match (want, got) {
        (Ok((rw, aw, ww)), Ok((rg, ag, wg))) => {
            assert!(
                rw == rg,
                "{what}: rows differ ({} against {})",
                rw.len(),
                rg.len()
            );
            assert_eq!(format!("{aw:?}"), format!("{ag:?}"), "{what}");
            assert_eq!(ww, wg, "{what}");
        }
        _ => assert_eq!(want, got, "{what}"),
    }
}

fn pcap_with(frames: &[Vec<u8>], byte_order: ByteOrder, nanos: bool) -> Vec<u8> {
    let mut w = PcapWriter::new(
        Vec::new(),
        PcapOptions {
            byte_order,
            nanos,
            snaplen: 65535,
            ..Default::default()
        },
    )
    .unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(T0 + i as i64 * 1000, f.len() as u32 + 4, f)
            .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn batches_of_every_size_give_the_rows_of_the_whole_read() {
    let mut rng = Rng(21);
    let fs = frames(&mut rng, 700);
    let subset: Vec<String> = ["dst", "timestamp", "wire_len", "dst"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let udp = Filter::parse("udp").unwrap();
    let captures = [
        ("le.pcap", pcap_with(&fs, ByteOrder::Little, true)),
        ("be-us.pcap", pcap_with(&fs, ByteOrder::Big, false)),
        ("two-interfaces-be.pcapng", pcapng_of(&fs)),
        ("untimed-le.pcapng", pcapng_with_untimed(&fs)),
    ];
    let options = ReadOptions::default();
    for (name, bytes) in &captures {
        for columns in [None, Some(subset.as_slice())] {
            let want = whole(bytes, options, columns, TimeRange::ALL, None).unwrap();
            assert_eq!(want.as_ref().unwrap().0.len(), fs.len(), "{name}");
            // Every size from one row up to past the whole capture.
            for batch_rows in 1..=fs.len() + 1 {
                let got = batched(bytes, options, columns, TimeRange::ALL, None, batch_rows);
                same(
                    &want,
                    &got,
                    &format!("{name} {columns:?} batch_rows={batch_rows}"),
                );
            }
        }
        // A stretch and a filter, which leave rows out between the batches' bounds.
        let range = TimeRange {
            start_ns: Some(T0 + 50_000),
            end_ns: Some(T0 + 1_500_000),
        };
        for (range, filter) in [
            (range, None),
            (TimeRange::ALL, Some(&udp)),
            (range, Some(&udp)),
        ] {
            let want = whole(bytes, options, None, range, filter).unwrap();
            for batch_rows in [1, 2, 3, 7, 64, 511, 512, 513, 1024, usize::MAX] {
                let got = batched(bytes, options, None, range, filter, batch_rows);
                same(&want, &got, &format!("{name} {range:?} {batch_rows}"));
            }
        }
    }
}

#[test]
fn an_empty_selection_gives_one_empty_batch_with_the_columns() {
    let mut rng = Rng(22);
    let fs = frames(&mut rng, 300);
    let bytes = pcap_of(fs.iter().map(Vec::as_slice));
    let late = TimeRange {
        start_ns: Some(T0 + 10_000_000_000),
        end_ns: None,
    };
    for (range, bytes) in [(late, bytes.clone()), (TimeRange::ALL, pcap_of([]))] {
        let r = reader_of(&bytes, ReadOptions::default()).unwrap();
        let mut b = PacketBatches::new(r, None, range, None, 10, None).unwrap();
        let t = b.next_batch(&mut |_| Ok(())).unwrap().expect("one batch");
        assert_eq!(t.rows, 0);
        assert_eq!(t.columns.len(), ALL_COLUMNS.len());
        assert!(b.next_batch(&mut |_| Ok(())).unwrap().is_none());
        assert_eq!(b.read().counted, 0);
    }
}

#[test]
fn damage_ends_the_sequence_at_its_batch() {
    let mut rng = Rng(23);
    let fs = frames(&mut rng, 1_000);
    let mut bytes = pcap_with(&fs, ByteOrder::Little, true);
    // Packet 600's record header claims more than the snaplen and the file allow: corrupt.
    let mut at = 24;
    for f in &fs[..600] {
        at += 16 + f.len();
    }
    bytes[at + 8..at + 12].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    for strict in [false, true] {
        let options = ReadOptions {
            strict,
            ..ReadOptions::default()
        };
        let want = whole(&bytes, options, None, TimeRange::ALL, None).unwrap();
        for batch_rows in [1, 99, 100, 600, 601, 5_000] {
            let got = batched(&bytes, options, None, TimeRange::ALL, None, batch_rows);
            same(&want, &got, &format!("strict={strict} {batch_rows}"));
            assert!(got.is_err(), "a corrupt record is an error, strict or not");
            if let Err((_, offset)) = &got {
                assert_eq!(*offset, Some(at as u64));
                // The batches before the damaged one were given, whole.
                let r = reader_of(&bytes, options).unwrap();
                let b = PacketBatches::new(r, None, TimeRange::ALL, None, batch_rows, None);
                let given: usize = b.unwrap().map_while(|t| t.ok()).map(|t| t.rows).sum();
                assert_eq!(given, 600 / batch_rows * batch_rows, "{batch_rows}");
            }
        }
    }
    // Cut inside a record: a warning, not an error, unless strict.
    let cut = &bytes[..at - 5];
    let want = whole(cut, ReadOptions::default(), None, TimeRange::ALL, None).unwrap();
    assert!(!want.as_ref().unwrap().2.is_empty(), "a warning");
    for batch_rows in [1, 7, 599, 1 << 20] {
        let got = batched(
            cut,
            ReadOptions::default(),
            None,
            TimeRange::ALL,
            None,
            batch_rows,
        );
        same(&want, &got, &format!("cut {batch_rows}"));
    }
}

#[test]
fn bad_arguments_are_refused_before_reading() {
    let bytes = pcap_of([]);
    let open = || reader_of(&bytes, ReadOptions::default()).unwrap();
    let e = PacketBatches::new(open(), None, TimeRange::ALL, None, 0, None).err();
    assert!(e.is_some_and(|e| e.to_string().contains("batch_rows")));
    let bad = vec!["colour".to_string()];
    let e = PacketBatches::new(open(), Some(&bad), TimeRange::ALL, None, 5, None).err();
    assert!(e.is_some_and(|e| e.to_string().contains("colour")));
    let backwards = TimeRange {
        start_ns: Some(5),
        end_ns: Some(4),
    };
    assert!(PacketBatches::new(open(), None, backwards, None, 5, None).is_err());
}

#[test]
fn a_failing_progress_callback_ends_the_sequence() {
    let mut rng = Rng(24);
    let fs = frames(&mut rng, 200_000);
    let bytes = pcap_of(fs.iter().map(Vec::as_slice));
    let r = reader_of(&bytes, ReadOptions::default()).unwrap();
    let mut b = PacketBatches::new(r, None, TimeRange::ALL, None, 150_000, None).unwrap();
    let e = b
        .next_batch(&mut |_| Err(Error::new(ErrorKind::Interrupted, "stop")))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Interrupted);
    assert!(b.is_done());
    assert!(b.next_batch(&mut |_| Ok(())).unwrap().is_none());
}

fn corpus_files(root: &Path) -> Vec<PathBuf> {
    let mut stack = vec![root.join("corpus")];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| {
                ["pcap", "pcapng", "cap", "ntar", "gz", "zst"].contains(&x.to_str().unwrap_or(""))
            }) {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn shared_corpus_in_batches_reads_as_a_whole() {
    let Ok(root) = std::env::var("BURSTCORE_SHARED") else {
        eprintln!("BURSTCORE_SHARED not set: skipped");
        return;
    };
    let files = corpus_files(Path::new(&root));
    let (mut checked, mut errors) = (0, 0);
    for path in files {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for strict in [false, true] {
            let options = ReadOptions {
                strict,
                ..ReadOptions::default()
            };
            let Some(want) = whole(&bytes, options, None, TimeRange::ALL, None) else {
                continue;
            };
            checked += 1;
            errors += usize::from(want.is_err());
            for batch_rows in [1, 2, 3, 5, 511, 513, 1 << 20] {
                let got = batched(&bytes, options, None, TimeRange::ALL, None, batch_rows);
                same(&want, &got, &format!("{} {batch_rows}", path.display()));
            }
        }
    }
    eprintln!("{checked} corpus reads checked, {errors} of them errors");
    assert!(checked > 100, "{checked}");
}
