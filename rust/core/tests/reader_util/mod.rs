//! Helpers shared by the reader tests: where the shared corpus is, and reading a whole capture.
#![allow(dead_code)]

use burstcore::capture::split::SplitPlan;
use burstcore::capture::{
    ByteOrder, CaptureReader, Interface, ReadOptions, ReadStats, Section, TsResolution,
};
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use burstcore::{Error, Warning};
use std::path::{Path, PathBuf};

/// `frames` (timestamp, wire length, captured bytes) as an Ethernet pcap (nanosecond or
/// microsecond) or a pcapng of one section and one nanosecond interface, in `order`.
pub fn write_capture(
    frames: &[(i64, u32, Vec<u8>)],
    pcapng: bool,
    order: ByteOrder,
    nanos: bool,
) -> Vec<u8> {
    if pcapng {
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(order, None).expect("shb");
        w.interface(1, 0, TsResolution::Pow10(9), 0, None)
            .expect("idb");
        for (ts, wire, f) in frames {
            w.enhanced_packet(0, *ts, *wire, f).expect("epb");
        }
        w.finish().expect("finish")
    } else {
        let opts = PcapOptions::default()
            .with_byte_order(order)
            .with_nanos(nanos)
            .with_snaplen(65535);
        let mut w = PcapWriter::new(Vec::new(), opts).expect("header");
        for (ts, wire, f) in frames {
            w.write_packet(*ts, *wire, f).expect("packet");
        }
        w.finish().expect("finish")
    }
}

/// A pcapng of one section and one nanosecond interface "eth0", `packets` 64-byte zero frames
/// 1 µs apart from 2023-11-14; `after(i, ts, w)` may write blocks after packet `i` (stamped
/// `ts`): the split tests' small captures with one late block.
pub fn pcapng_with_blocks(
    packets: usize,
    mut after: impl FnMut(usize, i64, &mut PcapNgWriter<Vec<u8>>),
) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new());
    w.section(ByteOrder::Little, None).expect("shb");
    w.interface(1, 0, TsResolution::Pow10(9), 0, Some("eth0"))
        .expect("idb");
    let frame = [0u8; 64];
    for i in 0..packets {
        let ts = 1_700_000_000_000_000_000 + i as i64 * 1_000;
        w.enhanced_packet(0, ts, 64, &frame).expect("epb");
        after(i, ts, &mut w);
    }
    w.finish().expect("finish")
}

/// A packet's offset in its file and its timestamp.
pub type Placed = (u64, Option<i64>);

/// A read of `plan`'s file in two chunks cut at `cut`, as a split read makes it: each packet's
/// offset and timestamp, and the interfaces the chunks leave for the whole file; `None` when a
/// chunk finds no boundary or the chunks do not line up (the file is then read sequentially).
pub fn read_in_two(plan: &SplitPlan, cut: u64) -> Option<(Vec<Placed>, Vec<Interface>)> {
    let mut ends = Vec::new();
    let mut packets = Vec::new();
    for (from, to) in [(plan.data_start(), cut), (cut, plan.file_len())] {
        let mut c = plan.open(from, to).expect("open")?;
        while let Some(p) = c.next_packet().expect("read") {
            packets.push((p.offset, p.ts_ns));
        }
        ends.push(c.end());
    }
    let interfaces = plan.read_whole(&ends)?;
    Some((packets, interfaces))
}

/// A reader of the capture at `path` for the time-chunk tests. Their captures are far smaller
/// than a chunk is worth (`chunked::MIN_CHUNK_BYTES`): they are cut into as many chunks as
/// threads anyway, so that the cuts and merges are what is tested.
pub fn open_for_chunks(path: &Path) -> CaptureReader {
    burstcore::chunked::use_as_many_threads_as_asked(true);
    CaptureReader::new(
        burstcore::input::open_path(path).expect("open"),
        ReadOptions::default(),
    )
    .expect("reader")
}

/// The shared folder: `BURSTCORE_SHARED`, else the `shared` folder beside the checkout, else
/// `/work/shared`. `None` (skip) only when the variable is unset and nothing is found.
pub fn shared_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("BURSTCORE_SHARED") {
        return Some(PathBuf::from(dir));
    }
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    [beside, PathBuf::from("/work/shared")]
        .into_iter()
        .find(|p| p.join("corpus").is_dir())
}

/// One packet, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkt {
    pub ts_ns: Option<i64>,
    pub interface: u32,
    pub local_id: u32,
    pub section: u32,
    pub linktype: u16,
    pub wire_len: u32,
    pub cap_len: u32,
    pub data: Vec<u8>,
    pub offset: u64,
}

/// Everything a read produced: packets, the error that ended it (if any), warnings, interfaces,
/// sections, statistics and the final position.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    /// A reader was made: `error`, if any, came while reading, not while opening.
    pub opened: bool,
    pub packets: Vec<Pkt>,
    pub error: Option<Error>,
    pub warnings: Vec<Warning>,
    pub interfaces: Vec<Interface>,
    pub sections: Vec<Section>,
    pub stats: ReadStats,
    pub position: u64,
    /// The reader read through a memory mapping (`ReadOptions::mmap`).
    pub mapped: bool,
}

pub fn read_all(input: burstcore::input::Input, options: ReadOptions) -> Read {
    let mut out = Read::default();
    let mut reader = match CaptureReader::new(input, options) {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.opened = true;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let mut pkt = Pkt {
                    ts_ns: p.ts_ns,
                    interface: p.interface,
                    local_id: u32::MAX,
                    section: u32::MAX,
                    linktype: p.linktype,
                    wire_len: p.wire_len,
                    cap_len: p.cap_len(),
                    data: p.data.to_vec(),
                    offset: p.offset,
                };
                if let Some(iface) = reader.interfaces().get(pkt.interface as usize) {
                    pkt.local_id = iface.local_id;
                    pkt.section = iface.section;
                }
                out.packets.push(pkt);
            }
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    // A finished reader stays finished.
    assert!(matches!(reader.next_packet(), Ok(None)));
    out.warnings = reader.warnings().to_vec();
    out.interfaces = reader.interfaces().to_vec();
    out.sections = reader.sections().to_vec();
    out.stats = reader.stats().clone();
    out.position = reader.position();
    out.mapped = reader.is_mapped();
    out
}

/// [`read_all`] of an input that may have failed to open (its error is then the read's).
pub fn read_opened(
    input: burstcore::error::Result<burstcore::input::Input>,
    options: ReadOptions,
) -> Read {
    match input {
        Ok(input) => read_all(input, options),
        Err(e) => Read {
            error: Some(e),
            ..Read::default()
        },
    }
}

pub fn read_bytes(bytes: &[u8], options: ReadOptions) -> Read {
    let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), None)
        .expect("in-memory input");
    read_all(input, options)
}

pub fn read_path(path: &std::path::Path, options: ReadOptions) -> Read {
    read_opened(burstcore::input::open_path(path), options)
}

/// Parse a decimal seconds string ("1340954905.298858" or tshark's "S.FFFFFFFFF") into ns,
/// exactly. A fraction of more than 9 digits is tshark printing an unnormalised nanosecond
/// count (e.g. ".1000000000" is 10^9 ns). tshark puts a '-' in front when either part is
/// negative; seconds are never negative in this corpus (no negative if_tsoffset), so '-' marks
/// a negative nanosecond part (a wrapped 32-bit sub-second field).
pub fn parse_ts(s: &str) -> Option<i128> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: i128 = secs.parse().ok()?;
    let frac_ns: i128 = if frac.is_empty() {
        0
    } else if frac.len() <= 9 {
        let v: i128 = frac.parse().ok()?;
        v * 10i128.pow(9 - frac.len() as u32)
    } else {
        frac.parse().ok()?
    };
    Some(if neg {
        secs * 1_000_000_000 - frac_ns
    } else {
        secs * 1_000_000_000 + frac_ns
    })
}

/// Run the ignored test `name` of this test binary alone, in a child process with `env` set (the
/// variable the child test waits for): for what only a process of its own can show (its I/O
/// counters, its death by a signal). Its exit status, and its stdout and stderr together.
pub fn run_child_test(name: &str, env: &str) -> (std::process::ExitStatus, String) {
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, "1")
        .output()
        .expect("run the child test");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status, text)
}
