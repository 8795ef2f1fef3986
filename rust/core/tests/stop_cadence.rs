//! A stop asked for while a scan reads a slow stream (a live capture on a link sending 1,000
//! packets a second) is seen within a fraction of a second, by every entry point that takes a
//! progress callback. The callback used to be called every 65,536 packets only: 65 s of such a
//! stream before a stop was looked at.

use burstcore::analyze::{self, OrderOptions};
use burstcore::capture::{CaptureReader, ReadOptions};
use burstcore::engine::ScanConfig;
use burstcore::error::Result;
use burstcore::pipeline::{self, SizeKind};
use burstcore::table::{self, batches::PacketBatches};
use burstcore::writer::{PcapOptions, PcapWriter};
use burstcore::{Error, ErrorKind, TimeRange};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets a second of the stream.
const RATE: u64 = 1_000;
/// Packets in all: 20 s of the stream, fewer than 65,536, so that a scan that looks for a stop
/// only every 65,536 packets never does (and still ends, at the stream's end, for the test to
/// fail rather than hang).
const PACKETS: u64 = 20 * RATE;
/// When the stop is asked for, after the scan began.
const STOP_AFTER: Duration = Duration::from_millis(300);
/// Generous: the stop is seen within about 50 ms of a read; the old code took the whole stream.
const BOUND: Duration = Duration::from_secs(3);

/// A pcap whose packets come one at a time, `RATE` a second, as a pipe from a live capture
/// hands them over.
struct Trickle {
    records: Vec<Vec<u8>>,
    next: usize,
    pending: Vec<u8>,
    start: Instant,
}

impl Trickle {
    fn new() -> Self {
        let w = PcapWriter::new(Vec::new(), PcapOptions::default()).unwrap();
        let header = w.finish().unwrap();
        let mut records = vec![header.clone()];
        for k in 0..PACKETS {
            let mut w = PcapWriter::new(Vec::new(), PcapOptions::default()).unwrap();
            w.write_packet(1_000_000 * k as i64, 100, &[0u8; 60])
                .unwrap();
            records.push(w.finish().unwrap()[header.len()..].to_vec());
        }
        Trickle {
            records,
            next: 0,
            pending: Vec::new(),
            start: Instant::now(),
        }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            let Some(record) = self.records.get(self.next) else {
                return Ok(0);
            };
            // The k-th record is sent k / RATE seconds after the start.
            let due = Duration::from_micros(self.next as u64 * 1_000_000 / RATE);
            if let Some(wait) = due.checked_sub(self.start.elapsed()) {
                std::thread::sleep(wait);
            }
            self.pending = record.clone();
            self.next += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

fn reader() -> CaptureReader {
    let input = burstcore::input::from_reader(Box::new(Trickle::new()), None).unwrap();
    CaptureReader::new(input, ReadOptions::default()).unwrap()
}

/// Run `call` with a progress callback that stops once a control thread sets the flag,
/// `STOP_AFTER` into the read: the time from the stop to the return, and what `call` returned.
fn stopped<T>(call: impl FnOnce(pipeline::Progress<'_>) -> Result<T>) -> (Duration, Result<T>) {
    let stop = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let control = std::thread::spawn({
        let (stop, asked) = (Arc::clone(&stop), Arc::clone(&asked));
        move || {
            std::thread::sleep(STOP_AFTER);
            *asked.lock().unwrap() = Some(Instant::now());
            stop.store(true, Ordering::SeqCst);
        }
    });
    let mut progress = |_: u64| match stop.load(Ordering::SeqCst) {
        true => Err(Error::new(ErrorKind::Interrupted, "stopped")),
        false => Ok(()),
    };
    let got = call(&mut progress);
    let returned = Instant::now();
    control.join().unwrap();
    let asked = asked.lock().unwrap().expect("the stop was asked for");
    (returned.saturating_duration_since(asked), got)
}

fn check<T>(what: &str, (took, got): (Duration, Result<T>)) {
    match got {
        Err(e) => assert_eq!(e.kind, ErrorKind::Interrupted, "{what}: {e}"),
        Ok(_) => panic!("{what}: read the whole stream ({took:?} after the stop)"),
    }
    assert!(took < BOUND, "{what}: {took:?} from the stop to the return");
}

#[test]
fn scan_of_a_slow_stream_stops_promptly() {
    let mut readers = [reader()];
    check(
        "scan",
        stopped(|p| pipeline::scan(&mut readers, ScanConfig::default(), SizeKind::Wire, p)),
    );
}

#[test]
fn scan_with_headers_on_two_threads_stops_promptly() {
    let mut readers = [reader()];
    check(
        "scan_threads(2), ip sizes",
        stopped(|p| {
            pipeline::scan_threads(&mut readers, ScanConfig::default(), SizeKind::Ip, 2, p)
        }),
    );
}

#[test]
fn scan_of_two_slow_streams_stops_promptly() {
    let mut readers = [reader(), reader()];
    check(
        "scan of two streams",
        stopped(|p| pipeline::scan(&mut readers, ScanConfig::default(), SizeKind::Wire, p)),
    );
}

#[test]
fn info_of_a_slow_stream_stops_promptly() {
    let mut r = reader();
    check("info", stopped(|p| pipeline::info(&mut r, p)));
}

#[test]
fn a_table_of_a_slow_stream_stops_promptly() {
    let mut r = reader();
    check(
        "read_table",
        stopped(|p| table::read_table(&mut r, None, None, p)),
    );
}

#[test]
fn a_batch_of_a_slow_stream_stops_promptly() {
    let mut batches =
        PacketBatches::new(reader(), None, TimeRange::ALL, None, 65_536, None).unwrap();
    check("next_batch", stopped(|p| batches.next_batch(p)));
}

#[test]
fn an_analysis_of_a_slow_stream_stops_promptly() {
    let mut readers = [reader()];
    check(
        "for_each",
        stopped(|p| {
            analyze::for_each(
                &mut readers,
                &[],
                OrderOptions::default(),
                p,
                &mut |_, _| Ok(()),
            )
        }),
    );
}

#[test]
fn the_look_for_a_late_packet_in_a_slow_stream_stops_promptly() {
    let mut r = reader();
    check(
        "late_packet_offset",
        stopped(|p| {
            pipeline::late_packet_offset(&mut r, SizeKind::Wire, 0, TimeRange::ALL, None, p)
        }),
    );
}

/// 200,000 packets that all lack an IP header, in memory: a scan by IP size leaves every one
/// out. Progress is still told every 65,536 packets read (where a stop is looked for), not
/// only once at the end: before, a filter or size that left out all of a capture kept a scan
/// from looking for a stop until it had read the whole file.
fn none_counted() -> CaptureReader {
    let mut w = PcapWriter::new(Vec::new(), PcapOptions::default()).unwrap();
    for k in 0..200_000 {
        w.write_packet(1_000 * k, 100, &[0u8; 60]).unwrap();
    }
    let bytes = w.finish().unwrap();
    let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes)), None).unwrap();
    CaptureReader::new(input, ReadOptions::default()).unwrap()
}

#[test]
fn packets_left_out_still_tell_progress() {
    let told = |scan: &mut dyn FnMut(pipeline::Progress<'_>)| {
        let mut calls = 0;
        scan(&mut |_| {
            calls += 1;
            Ok(())
        });
        calls
    };
    let mut one = [none_counted()];
    let calls = told(&mut |p| {
        let (_, acc) = pipeline::scan(&mut one, ScanConfig::default(), SizeKind::Ip, p).unwrap();
        assert_eq!((acc.packets_read, acc.counted), (200_000, 0));
    });
    // Three times 65,536 packets, and the end.
    assert!(calls >= 4, "one file: {calls} progress calls");
    let mut two = [none_counted(), none_counted()];
    let calls = told(&mut |p| {
        pipeline::scan(&mut two, ScanConfig::default(), SizeKind::Ip, p).unwrap();
    });
    assert!(calls >= 7, "two files: {calls} progress calls");
    let mut one = [none_counted()];
    let calls = told(&mut |p| {
        let order = OrderOptions::default().with_size(SizeKind::Ip);
        analyze::for_each(&mut one, &[], order, p, &mut |_, _| Ok(())).unwrap();
    });
    assert!(calls >= 4, "an analysis: {calls} progress calls");
}

/// Bytes a read of [`Chunked`] hands out at most.
const CHUNK: usize = 64 << 10;

/// A pcap in memory handed out `CHUNK` bytes a read, as fast as asked: a quick file read in
/// several reads, none of them slow.
struct Chunked(std::io::Cursor<Vec<u8>>);

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(CHUNK);
        self.0.read(&mut buf[..n])
    }
}

/// 20,000 packets (1.5 MB, fewer than 65,536 packets) opened, then left waiting 200 ms, as a
/// reader opened before a pre-pass (or before other inputs) waits.
fn opened_then_left_waiting() -> CaptureReader {
    let mut w = PcapWriter::new(Vec::new(), PcapOptions::default()).unwrap();
    for k in 0..20_000 {
        w.write_packet(1_000 * k, 100, &[0u8; 60]).unwrap();
    }
    let bytes = w.finish().unwrap();
    assert!(bytes.len() > 4 * CHUNK);
    let input = burstcore::input::from_reader(Box::new(Chunked(std::io::Cursor::new(bytes))), None)
        .unwrap();
    let reader = CaptureReader::new(input, ReadOptions::default()).unwrap();
    std::thread::sleep(4 * Duration::from_millis(50));
    reader
}

/// The time a reader waited after its opening is no reading: its scan's first read starts the
/// 50 ms clock, so no stop is looked for (and no progress told) before the scan's second read.
/// The clock used to start when the buffer was made, so the scan's first read "pulsed" and
/// progress was told with only the opening's bytes read, before any of the scan's own.
#[test]
fn a_reader_left_waiting_after_its_opening_tells_progress_after_reading() {
    let calls = |what: &str, scan: &mut dyn FnMut(pipeline::Progress<'_>)| {
        let mut done = Vec::new();
        scan(&mut |d| {
            done.push(d);
            Ok(())
        });
        // The opening read the first CHUNK; the scan's first read the second, and a pulse
        // comes at the end of a later read, once the scan has read for 50 ms.
        assert!(
            done.iter().all(|&d| d > 2 * CHUNK as u64),
            "{what}: progress told at {done:?}, before the scan's second read"
        );
        assert!(!done.is_empty(), "{what}: never told progress");
    };
    let mut one = [opened_then_left_waiting()];
    calls("scan", &mut |p| {
        pipeline::scan(&mut one, ScanConfig::default(), SizeKind::Wire, p).unwrap();
    });
    let mut r = opened_then_left_waiting();
    calls("info", &mut |p| {
        pipeline::info(&mut r, p).unwrap();
    });
    let mut r = opened_then_left_waiting();
    calls("read_table", &mut |p| {
        table::read_table(&mut r, None, None, p).unwrap();
    });
    let mut one = [opened_then_left_waiting()];
    calls("for_each", &mut |p| {
        analyze::for_each(
            &mut one,
            &[],
            OrderOptions::default(),
            p,
            &mut |_, _| Ok(()),
        )
        .unwrap();
    });
}
