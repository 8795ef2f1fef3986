//! Generate a capture of distributed-training-like traffic, fast, for benchmarks and demos.
//!
//! ```text
//! cargo run --release -p burstcore --example gen_training -- --out train.pcap \
//!     --format pcap|pcapng --snaplen 128|0 --bytes 1G|--packets N --hosts 8 --mode ring|ps \
//!     --seed 1 --rate 10G --period 200ms [--per-host]
//! ```
//!
//! The traffic model is `burstcore::writer::synth` (see there); frames come from
//! `burstcore::writer::frames`. `--bytes` bounds the size of the file written (not the bytes on
//! the wire, which are larger with a snaplen). `--out -` writes to stdout. `--per-host` writes
//! one file per host instead, with the packets it sends (its data and its ACKs), as if every
//! host had recorded its own traffic: `train.pcap` becomes `train.host0.pcap`, `train.host1.pcap`,
//! ...; `--bytes` then bounds them together.

use burstcore::capture::{ByteOrder, TsResolution};
use burstcore::writer::frames::{TcpSegment, HEADER_LEN};
use burstcore::writer::synth::{Config, Kind, Mode, Synth};
use burstcore::writer::{PcapNgWriter, PcapOptions, PcapWriter};
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

const LINKTYPE_ETHERNET: u16 = 1;
const SENDER_PORT_BASE: u16 = 40000;
const RECEIVER_PORT_BASE: u16 = 29500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pcap,
    PcapNg,
}

#[derive(Debug)]
struct Args {
    out: String,
    format: Format,
    snaplen: u32,
    bytes: Option<u64>,
    packets: Option<u64>,
    per_host: bool,
    config: Config,
}

const USAGE: &str = "usage: gen_training --out FILE|- [--format pcap|pcapng] [--snaplen N|0] \
[--bytes SIZE | --packets N] [--hosts 4..16] [--mode ring|ps] [--seed N] [--rate 10G] [--period 200ms] \
[--per-host]";

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gen_training: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_training: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Counts the bytes that reach the sink, so `--bytes` can bound the file size.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

enum Sink<W: Write> {
    Pcap(PcapWriter<W>),
    PcapNg(PcapNgWriter<W>),
}

/// A file being written, with its bytes counted.
type FileSink = Sink<Counting<BufWriter<Box<dyn Write>>>>;

/// `train.pcap` → `train.host3.pcap` (`--per-host`).
fn host_path(out: &str, host: usize) -> String {
    let path = std::path::Path::new(out);
    let stem = path.file_stem().map_or(out.into(), |s| s.to_string_lossy());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.host{host}.{}", ext.to_string_lossy()),
        None => format!("{stem}.host{host}"),
    };
    path.with_file_name(name).to_string_lossy().into_owned()
}

fn open_sink(out: &str, args: &Args) -> Result<FileSink, Box<dyn std::error::Error>> {
    let out: Box<dyn Write> = if out == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(out)?)
    };
    let w = Counting {
        inner: BufWriter::with_capacity(8 << 20, out),
        written: 0,
    };
    Ok(match args.format {
        Format::Pcap => {
            let options = PcapOptions::default()
                .with_byte_order(ByteOrder::Little)
                .with_nanos(true)
                .with_linktype(LINKTYPE_ETHERNET)
                .with_snaplen(args.snaplen)
                .with_fcs_len(0);
            Sink::Pcap(PcapWriter::new(w, options)?)
        }
        Format::PcapNg => {
            let mut ng = PcapNgWriter::new(w);
            ng.section(ByteOrder::Little, Some("burstcore gen_training"))?;
            ng.interface(
                LINKTYPE_ETHERNET,
                args.snaplen,
                TsResolution::Pow10(9),
                0,
                Some("tap0"),
            )?;
            Sink::PcapNg(ng)
        }
    })
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut sinks = if args.per_host {
        if args.out == "-" {
            return Err("--per-host writes files: give --out a file name".into());
        }
        (0..usize::from(args.config.hosts))
            .map(|h| open_sink(&host_path(&args.out, h), args))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![open_sink(&args.out, args)?]
    };
    let written = |sinks: &[FileSink]| -> u64 {
        sinks
            .iter()
            .map(|s| match s {
                Sink::Pcap(w) => w.get_ref().written,
                Sink::PcapNg(w) => w.get_ref().written,
            })
            .sum()
    };

    let started = Instant::now();
    let synth = Synth::new(args.config)?;
    let n = usize::from(args.config.hosts);
    // TCP state per ordered (sender, receiver) pair: next sequence number, and the sequence
    // number where the current step's transfer started (ACKs count from there).
    let mut seq = vec![1u32; n * n];
    let mut step_base = vec![1u32; n * n];
    let payload = TcpSegment::payload_len(args.config.data_len)?;
    let mut frame = Vec::with_capacity(args.config.data_len as usize);
    let (mut packets, mut wire_bytes, mut first_ts, mut last_ts) = (0u64, 0u64, None, 0i64);

    for e in synth {
        if args.packets.is_some_and(|max| packets >= max)
            || args.bytes.is_some_and(|max| written(&sinks) >= max)
        {
            break;
        }
        let (sender, receiver) = match e.kind {
            Kind::Data => (e.src, e.dst),
            Kind::Ack => (e.dst, e.src),
        };
        let pair = usize::from(sender) * n + usize::from(receiver);
        let (Some(seq_slot), Some(base_slot)) = (seq.get_mut(pair), step_base.get_mut(pair)) else {
            return Err("host index out of range".into());
        };
        let mut seg = TcpSegment::between_hosts(
            e.src, e.dst, 0, // ports set below, by direction
            0,
        );
        // TCP timestamps tick in ms, as on Linux
        seg.ts_val = (e.ts_ns / 1_000_000) as u32;
        match e.kind {
            Kind::Data => {
                if e.frame == 0 {
                    *base_slot = *seq_slot;
                }
                seg.src_port = SENDER_PORT_BASE + receiver;
                seg.dst_port = RECEIVER_PORT_BASE + sender;
                seg.seq = *seq_slot;
                *seq_slot = seq_slot.wrapping_add(payload);
            }
            Kind::Ack => {
                seg.src_port = RECEIVER_PORT_BASE + sender;
                seg.dst_port = SENDER_PORT_BASE + receiver;
                seg.ack = base_slot.wrapping_add(payload.wrapping_mul(e.frame + 1));
            }
        }
        seg.write_frame(e.wire_len.max(HEADER_LEN as u32), args.snaplen, &mut frame)?;
        let host = if args.per_host {
            usize::from(match e.kind {
                Kind::Data => e.src,
                Kind::Ack => e.dst,
            })
        } else {
            0
        };
        match &mut sinks[host] {
            Sink::Pcap(w) => w.write_packet(e.ts_ns, e.wire_len, &frame)?,
            Sink::PcapNg(w) => w.enhanced_packet(0, e.ts_ns, e.wire_len, &frame)?,
        }
        packets += 1;
        wire_bytes += u64::from(e.wire_len);
        first_ts.get_or_insert(e.ts_ns);
        last_ts = e.ts_ns;
    }

    let mut file_bytes = 0;
    for sink in sinks {
        file_bytes += match sink {
            Sink::Pcap(w) => w.finish()?.written,
            Sink::PcapNg(w) => w.finish()?.written,
        };
    }
    let secs = started.elapsed().as_secs_f64();
    let span_ns = last_ts - first_ts.unwrap_or(last_ts);
    eprintln!(
        "gen_training: {packets} packets, {wire_bytes} wire bytes, {file_bytes} file bytes, \
         span {}.{:09} s, written in {secs:.2} s ({:.2} GB/s)",
        span_ns / 1_000_000_000,
        span_ns % 1_000_000_000,
        file_bytes as f64 / secs.max(1e-9) / 1e9
    );
    Ok(())
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = None;
    let mut format = Format::Pcap;
    let mut snaplen = 0u32;
    let (mut bytes, mut packets) = (None, None);
    let mut per_host = false;
    let mut config = Config::new(8, Mode::Ring, 1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--out" => out = Some(value()?),
            "--format" => {
                format = match value()?.as_str() {
                    "pcap" => Format::Pcap,
                    "pcapng" => Format::PcapNg,
                    other => return Err(format!("unknown format {other:?}")),
                }
            }
            "--snaplen" => snaplen = value()?.parse().map_err(|e| format!("--snaplen: {e}"))?,
            "--bytes" => bytes = Some(parse_scaled(&value()?, 1)?),
            "--packets" => packets = Some(parse_scaled(&value()?, 1)?),
            "--hosts" => {
                config.hosts = value()?.parse().map_err(|e| format!("--hosts: {e}"))?;
                if !(2..=1000).contains(&config.hosts) {
                    return Err("--hosts must be 2..=1000 (4..16 is typical)".into());
                }
            }
            "--mode" => {
                config.mode = match value()?.as_str() {
                    "ring" => Mode::Ring,
                    "ps" => Mode::ParameterServer,
                    other => return Err(format!("unknown mode {other:?}")),
                }
            }
            "--seed" => config.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--rate" => config.rate_bps = parse_scaled(&value()?, 1)?,
            "--period" => {
                config.period_ns =
                    i64::try_from(parse_duration_ns(&value()?)?).map_err(|_| "--period too long")?
            }
            "--per-host" => per_host = true,
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if bytes.is_some() && packets.is_some() {
        return Err("give --bytes or --packets, not both".into());
    }
    if bytes.is_none() && packets.is_none() {
        return Err("give --bytes or --packets".into());
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(Args {
        out: out.ok_or("--out is required")?,
        format,
        snaplen,
        bytes,
        packets,
        per_host,
        config,
    })
}

/// "1G" = 10^9, "1Gi" = 2^30, also k/K, M, T and plain numbers; times `unit`.
fn parse_scaled(s: &str, unit: u64) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(digits);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size"))?;
    let scale: u64 = match suffix.trim_end_matches(['B', 'b']).trim_end_matches("bit") {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        other => return Err(format!("unknown suffix {other:?} in {s:?}")),
    };
    n.checked_mul(scale)
        .and_then(|v| v.checked_mul(unit))
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// "200ms", "1s", "500us", "100ns" (integers only, exact).
fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration"))?;
    let scale = match suffix {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "" => 1_000_000_000,
        other => return Err(format!("unknown unit {other:?} in {s:?} (ns, us, ms, s)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{s:?} is too long"))
}
