//! `read_packets` on several threads: a plain capture file is cut into byte ranges
//! ([`crate::capture::split`]), and each range is read into its own table on its own thread.
//! Taken in order, the tables hold exactly the rows of the sequential read: every chunk must
//! frame exactly the packets of a sequential read (the seams line up) and meet no warning.
//! They go to polars as the chunks of one frame, so nothing is copied to join them.
//!
//! Reading costs the same per byte everywhere in a file, so the ranges are of equal size.

use super::{column_names, fill, PacketTable, Selection};
use crate::capture::split::SplitPlan;
use crate::capture::CaptureReader;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::Progress;

/// The fewest bytes of file worth a range of their own, read on its own thread. Each range is
/// a thread, a seam to check and a chunk of the frame returned (which every later polars
/// operation walks), about a millisecond in all: beyond the cores, 1,000 ranges of a 3 MB
/// snaplen-128 pcap took 206 ms against 2 ms for one. Reading takes about 0.6 ms a MB, so
/// cheaper than a scan's chunk ([`crate::chunked::MIN_CHUNK_BYTES`]) and paid off sooner: two
/// ranges against one, medians of 11, took 2.1 against 1.8 ms (CPU 2.9 against 1.8) on 3 MB,
/// 3.0 against 3.7 ms (CPU 4.8 against 3.6) on 6 MB, 4.4 against 7.7 ms (CPU 7.6 against 7.7)
/// on 12 MB. Ranges of 4 MiB or more (files from 8 MiB) gain time at about the same CPU time.
/// Only the speed depends on it, never a result.
pub const MIN_RANGE_BYTES: u64 = 4 << 20;

/// The columns of `reader` (opened, not read beyond its header) in up to `threads` tables, one
/// per byte range of its file, read side by side, as many as [`crate::chunked::plan_for`] cuts
/// (no more than cores, none under [`MIN_RANGE_BYTES`]). `Ok(None)` when that is not possible (fewer than two
/// threads or ranges, a compressed or streamed input, a chunk that cannot be framed on its own,
/// any warning or error in a chunk): the caller then reads sequentially, which gives every
/// error and warning exactly. An error from `progress` (an interrupt) stops every chunk and is
/// returned.
pub fn read_table_split(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    threads: usize,
    select: Selection<'_>,
    progress: Progress<'_>,
) -> Result<Option<Vec<PacketTable>>> {
    let cols = column_names(columns)?;
    if threads < 2 || reader.stats().packets > 0 {
        return Ok(None);
    }
    let Some(path) = reader.plain_path() else {
        return Ok(None);
    };
    let Ok(Some(plan)) = SplitPlan::new(path, reader.options()) else {
        return Ok(None);
    };
    // A file too small for two ranges is read sequentially.
    let cut = crate::chunked::plan_for(plan.file_len(), threads, MIN_RANGE_BYTES);
    if cut.chunks < 2 {
        return Ok(None);
    }
    let ranges = plan.ranges(cut.chunks);
    let results = crate::pool::run(
        ranges.len(),
        cut.workers,
        |i, shared| -> Result<Option<_>> {
            let (from, to) = ranges[i];
            let Some(mut chunk) = plan.open(from, to)? else {
                return Ok(None);
            };
            let mut count = shared.range(from, to);
            let (table, _) = fill(
                &mut chunk,
                cols.clone(),
                from,
                Some(to - from),
                select,
                usize::MAX,
                &mut |pos| {
                    if count.reached(pos) {
                        Ok(())
                    } else {
                        Err(Error::new(
                            ErrorKind::Interrupted,
                            "stopped with the other ranges",
                        ))
                    }
                },
            )?;
            count.finish();
            Ok(Some((table, chunk.end())))
        },
        progress,
    )?;
    let mut tables = Vec::with_capacity(results.len());
    let mut ends = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Some(Ok(Some((t, end)))) => {
                tables.push(t);
                ends.push(end);
            }
            // An error, a warning or a refusal: the sequential read gives the exact outcome.
            _ => return Ok(None),
        }
    }
    let Some(read) = plan.read_whole(&ends) else {
        return Ok(None);
    };
    progress(plan.file_len())?;
    // What is reported of the reader afterwards is as after a sequential read.
    reader.adopt_interfaces(read);
    Ok(Some(tables))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{frame, pcap_of, T0};
    use super::super::{
        read_table, read_table_threads, read_table_threads_where, read_table_where, Nullable,
        ALL_COLUMNS,
    };
    use super::*;
    use crate::capture::{ByteOrder, ReadOptions, TsResolution};
    use crate::scratch::Scratch;
    use crate::test_rng::Rng;
    use crate::writer::PcapNgWriter;
    use std::path::{Path, PathBuf};

    fn temp(dir: &Scratch, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    fn open(path: &Path) -> CaptureReader {
        let input = crate::input::open_path(path).expect("open");
        CaptureReader::new(input, ReadOptions::default()).expect("reader")
    }

    fn at<T: Copy>(c: &Nullable<T>, i: usize) -> Option<T> {
        c.valid.get(i).then(|| c.values[i])
    }

    pub(in crate::table) type Fields = (
        Option<i64>,
        [Option<u32>; 4],
        [Option<String>; 2],
        [Option<u32>; 10],
    );

    /// Every row of `tables`, in order, as the values of its wanted columns (`None` for a
    /// column not wanted).
    pub(in crate::table) fn rows(tables: &[PacketTable]) -> Vec<Fields> {
        let mut out = Vec::new();
        for t in tables {
            let w = |name: &str| t.wants(name);
            for i in 0..t.rows {
                let v = |want: bool, x: Option<u32>| if want { x } else { None };
                out.push((
                    at(&t.timestamp, i).filter(|_| w("timestamp")),
                    [
                        v(w("interface"), t.interface.get(i).copied()),
                        v(w("wire_len"), t.wire_len.get(i).copied()),
                        v(w("cap_len"), t.cap_len.get(i).copied()),
                        v(w("linktype"), t.linktype.get(i).map(|&x| u32::from(x))),
                    ],
                    [t.src.get(i), t.dst.get(i)],
                    [
                        at(&t.protocol, i).map(u32::from),
                        at(&t.sport, i).map(u32::from),
                        at(&t.dport, i).map(u32::from),
                        at(&t.vlan, i).map(u32::from),
                        at(&t.qp, i),
                        at(&t.ip_len, i),
                        at(&t.payload_len, i),
                        at(&t.tcp_flags, i).map(u32::from),
                        at(&t.tcp_seq, i),
                        Some(t.columns.len() as u32),
                    ],
                ));
            }
        }
        out
    }

    /// IPv4 frames from the table's own tests, and IPv6 ones: their addresses are longer than
    /// the 12 bytes a string view holds inline, so they live in each chunk's own text buffers.
    pub(in crate::table) fn frames(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                if rng.below(3) > 0 {
                    return frame(rng);
                }
                let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd];
                f.extend_from_slice(&[0x60, 0, 0, 0, 0, 8, 17, 64]);
                f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                f.push(rng.below(30) as u8);
                f.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34]);
                f.extend_from_slice(&[0x56, rng.below(5) as u8]);
                f.extend_from_slice(&[0x12, 0x34, 0x00, 0x35, 0, 8, 0, 0]);
                f
            })
            .collect()
    }

    pub(in crate::table) fn pcapng_of(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(ByteOrder::Big, None).unwrap();
        w.interface(1, 65535, TsResolution::Pow10(9), 0, None)
            .unwrap();
        w.interface(1, 65535, TsResolution::Pow10(6), 0, None)
            .unwrap();
        for (i, f) in frames.iter().enumerate() {
            let iface = (i % 7 == 0) as u32;
            w.enhanced_packet(iface, T0 + i as i64 * 3_000, f.len() as u32, f)
                .unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn ranges_read_side_by_side_give_the_rows_of_the_sequential_read() {
        // Files of a few hundred kB: read in as many ranges as threads anyway, so that the
        // seams are what is tested (tests/reader_mmap.rs tests the bounded count).
        crate::chunked::use_as_many_threads_as_asked(true);
        let dir = Scratch::new("table-split");
        let mut rng = Rng(11);
        let fs = frames(&mut rng, 20_000);
        let subset: Vec<String> = ["dst", "timestamp", "wire_len", "dst"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for (name, bytes) in [
            ("t.pcap", pcap_of(fs.iter().map(Vec::as_slice))),
            ("t.pcapng", pcapng_of(&fs)),
        ] {
            let path = temp(&dir, name, &bytes);
            for columns in [None, Some(subset.as_slice())] {
                let len = Some(bytes.len() as u64);
                let one = read_table(&mut open(&path), columns, len, &mut |_| Ok(())).unwrap();
                assert_eq!(one.rows, fs.len());
                let want = rows(&[one]);
                for threads in [2, 3, 5] {
                    let mut reported = Vec::new();
                    let got =
                        read_table_threads(&mut open(&path), columns, len, threads, &mut |d| {
                            reported.push(d);
                            Ok(())
                        })
                        .unwrap();
                    // Split for real: one table per range.
                    assert_eq!(got.len(), threads, "{name}");
                    assert_eq!(rows(&got), want, "{name} {threads} threads {columns:?}");
                    // Never back (a count below the one shown is told as that one, so that
                    // every call still looks for an interrupt).
                    assert!(reported.windows(2).all(|w| w[0] <= w[1]), "{reported:?}");
                    assert_eq!(reported.last(), Some(&(bytes.len() as u64)));
                }
            }
        }
    }

    /// A pcapng whose every 50th packet is a Simple Packet Block (no timestamp) among
    /// Enhanced Packet Blocks 3 µs apart.
    pub(in crate::table) fn pcapng_with_untimed(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(ByteOrder::Little, None).unwrap();
        w.interface(1, 65535, TsResolution::Pow10(9), 0, None)
            .unwrap();
        for (i, f) in frames.iter().enumerate() {
            if i % 50 == 7 {
                w.simple_packet(f.len() as u32, f).unwrap();
            } else {
                w.enhanced_packet(0, T0 + i as i64 * 3_000, f.len() as u32, f)
                    .unwrap();
            }
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_time_range_keeps_the_rows_of_the_whole_read_in_it() {
        crate::chunked::use_as_many_threads_as_asked(true);
        let dir = Scratch::new("table-split");
        let mut rng = Rng(15);
        let fs = frames(&mut rng, 12_000);
        let udp = crate::Filter::parse("udp").unwrap();
        for (name, bytes, step) in [
            ("r.pcap", pcap_of(fs.iter().map(Vec::as_slice)), 1_000),
            ("r.pcapng", pcapng_of(&fs), 3_000),
            ("u.pcapng", pcapng_with_untimed(&fs), 3_000),
        ] {
            let path = temp(&dir, name, &bytes);
            let at = |i: i64| Some(T0 + i * step);
            // Bounds on packets' own instants (the one at start in, the one at end out), open
            // on either side, and a stretch with no packet.
            for (start_ns, end_ns) in [
                (at(1_000), at(9_000)),
                (None, at(4_321)),
                (at(11_111), None),
                (at(20_000), None),
                (at(10).map(|t| t + 1), at(11)),
            ] {
                let range = crate::TimeRange { start_ns, end_ns };
                for filter in [None, Some(&udp)] {
                    let everything = Selection {
                        range: crate::TimeRange::ALL,
                        filter,
                    };
                    let all =
                        read_table_where(&mut open(&path), None, None, everything, &mut |_| Ok(()))
                            .unwrap();
                    let want: Vec<Fields> = rows(&[all])
                        .into_iter()
                        .filter(|r| r.0.is_some_and(|t| range.contains(t)))
                        .collect();
                    let select = Selection { range, filter };
                    for threads in [1, 2, 3] {
                        let got = read_table_threads_where(
                            &mut open(&path),
                            None,
                            None,
                            threads,
                            select,
                            &mut |_| Ok(()),
                        )
                        .unwrap();
                        if name == "r.pcap" {
                            assert_eq!(got.len(), threads, "split for real");
                        }
                        assert_eq!(rows(&got), want, "{name} {range:?} {threads} threads");
                    }
                }
            }
        }
    }

    #[test]
    fn what_cannot_be_split_is_read_sequentially() {
        let dir = Scratch::new("table-split");
        let mut rng = Rng(12);
        let fs = frames(&mut rng, 3_000);
        let bytes = pcap_of(fs.iter().map(Vec::as_slice));
        let cases = [
            // A record cut off at the end: the last chunk meets the warning.
            ("cut.pcap", bytes[..bytes.len() - 5].to_vec()),
            // Compressed: no byte range can be read on its own.
            ("whole.pcap.gz", {
                use std::io::Write;
                let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(&bytes).unwrap();
                z.finish().unwrap()
            }),
        ];
        for (name, data) in cases {
            let path = temp(&dir, name, &data);
            let mut seq = open(&path);
            let want = read_table(&mut seq, None, None, &mut |_| Ok(())).unwrap();
            let split =
                read_table_split(&mut open(&path), None, 2, Selection::ALL, &mut |_| Ok(()))
                    .unwrap();
            assert!(split.is_none(), "{name}");
            let mut reader = open(&path);
            let got = read_table_threads(&mut reader, None, None, 2, &mut |_| Ok(())).unwrap();
            assert_eq!(got.len(), 1);
            assert_eq!(rows(&got), rows(&[want]), "{name}");
            let warned = |r: &CaptureReader| {
                r.warnings()
                    .iter()
                    .map(|w| w.to_string())
                    .collect::<Vec<_>>()
            };
            assert_eq!(warned(&reader), warned(&seq), "{name}");
        }
        // One thread, or a reader already read from.
        let path = temp(&dir, "whole.pcap", &bytes);
        assert!(
            read_table_split(&mut open(&path), None, 1, Selection::ALL, &mut |_| Ok(()))
                .unwrap()
                .is_none()
        );
        let mut used = open(&path);
        used.next_packet().unwrap();
        assert!(
            read_table_split(&mut used, None, 2, Selection::ALL, &mut |_| Ok(()))
                .unwrap()
                .is_none()
        );
        // An unknown column is an error before anything is read.
        let bad = vec!["wire_len".to_string(), "colour".to_string()];
        let e = read_table_split(&mut open(&path), Some(&bad), 2, Selection::ALL, &mut |_| {
            Ok(())
        })
        .unwrap_err();
        assert!(e.to_string().contains("colour") && e.to_string().contains(ALL_COLUMNS[0]));
    }

    #[test]
    fn a_failing_progress_callback_stops_every_range() {
        crate::chunked::use_as_many_threads_as_asked(true);
        let dir = Scratch::new("table-split");
        let mut rng = Rng(13);
        let fs = frames(&mut rng, 5_000);
        let path = temp(&dir, "stop.pcap", &pcap_of(fs.iter().map(Vec::as_slice)));
        let e = read_table_threads(&mut open(&path), None, None, 2, &mut |_| {
            Err(Error::new(ErrorKind::Interrupted, "stop"))
        })
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Interrupted);
    }

    #[test]
    fn a_statistics_block_at_a_seam_is_counted_once() {
        // A block after a range's end and before the packet its chunk stops at is read by that
        // chunk and by the next, which starts there: its statistics were counted twice, so the
        // reader reported more Interface Statistics Blocks than the file has (found by the
        // `read_threads` fuzz target on a corpus pcapng of two packets and an ISB, 2 threads).
        crate::chunked::use_as_many_threads_as_asked(true);
        let dir = Scratch::new("table-split");
        let mut rng = Rng(16);
        let fs = frames(&mut rng, 400);
        let mut files = Vec::new();
        // Two packets then one ISB; and an ISB after every packet, so that whatever the byte
        // where a range ends, the block after it is often an ISB.
        for (name, n, every) in [("two.pcapng", 2, 2), ("many.pcapng", fs.len(), 1)] {
            let mut w = PcapNgWriter::new(Vec::new());
            w.section(ByteOrder::Little, None).unwrap();
            w.interface(1, 65535, TsResolution::Pow10(9), 0, None)
                .unwrap();
            for (i, f) in fs[..n].iter().enumerate() {
                let ts = T0 + i as i64 * 3_000;
                w.enhanced_packet(0, ts, f.len() as u32, f).unwrap();
                if (i + 1) % every == 0 {
                    let stats = crate::capture::InterfaceStats {
                        if_recv: Some(i as u64 + 1),
                        if_drop: Some(i as u64 / 7),
                        ..Default::default()
                    };
                    w.interface_statistics(0, ts as u64, &stats).unwrap();
                }
            }
            files.push((name, n / every, temp(&dir, name, &w.finish().unwrap())));
        }
        for (name, isbs, path) in files {
            let mut seq = open(&path);
            let want_rows = rows(&[read_table(&mut seq, None, None, &mut |_| Ok(())).unwrap()]);
            // The oracle: the blocks the file has, one per `every` packets.
            assert_eq!(seq.interfaces()[0].stats.isb_count as usize, isbs);
            for threads in 2..=5 {
                let mut reader = open(&path);
                let got =
                    read_table_threads(&mut reader, None, None, threads, &mut |_| Ok(())).unwrap();
                assert_eq!(got.len(), threads, "{name}: split for real");
                assert_eq!(rows(&got), want_rows, "{name}");
                assert_eq!(
                    reader.interfaces(),
                    seq.interfaces(),
                    "{name}, {threads} threads"
                );
                assert_eq!(
                    reader.recorded_drops().map(|w| w.to_string()),
                    seq.recorded_drops().map(|w| w.to_string())
                );
            }
        }
    }

    #[test]
    fn no_more_than_max_threads_ranges() {
        crate::chunked::use_as_many_threads_as_asked(true);
        // Enough packets that every one of MAX_THREADS + 7 ranges would hold some.
        let mut rng = Rng(14);
        let fs = frames(&mut rng, 8 * crate::MAX_THREADS);
        let dir = Scratch::new("table-split");
        let path = temp(&dir, "many.pcap", &pcap_of(fs.iter().map(Vec::as_slice)));
        let want = rows(&[read_table(&mut open(&path), None, None, &mut |_| Ok(())).unwrap()]);
        let threads = crate::MAX_THREADS + 7;
        let got =
            read_table_threads(&mut open(&path), None, None, threads, &mut |_| Ok(())).unwrap();
        assert_eq!(got.len(), crate::MAX_THREADS);
        assert_eq!(rows(&got), want);
    }
}
