//! From captures to the engine: decode only what the scan needs, choose each packet's size, merge
//! several captures in timestamp order, and account for every packet (counted, or skipped with a
//! reason), so that the counts in a summary always add up to the packets in the files.

use crate::capture::CaptureReader;
use crate::engine::{Arrival, ScanConfig, ScanOutput, Scanner};
use crate::error::{Error, Result, Warning};
use crate::wire::{self, Headers};
use std::cell::Cell;

mod columns;
pub(crate) mod merge;
pub use columns::{scan_columns, ColumnScan};
pub use merge::{interface_bases, Renumber};

/// What counts as a packet's size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeKind {
    /// Length on the wire (pcap orig_len): the default, immune to snaplen.
    #[default]
    Wire,
    /// Captured bytes (what the file holds).
    Captured,
    /// IP total length (IPv4 total length, IPv6 payload length + 40).
    Ip,
    /// Transport payload (TCP/UDP payload from the IP length).
    Payload,
    /// Layer-1 bytes: Ethernet frame padded to 60 B, plus 4 B FCS, plus 20 B preamble, SFD and
    /// inter-frame gap; an FCS the frame holds, by [`Fcs`], is taken off first.
    L1(Fcs),
}

/// Whether the captured frames end with their FCS, for [`SizeKind::L1`], which adds one of its
/// own: what the capture declares (pcapng `if_fcslen`, pcap's FCS bits; the default), or what
/// the user knows of a capture that kept the FCS without saying so, or said so wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fcs {
    /// As the capture declares: none unless it says so.
    #[default]
    Declared,
    /// Every frame ends with an FCS: of the length declared, else 4 bytes.
    Present,
    /// No frame ends with an FCS, whatever the capture declares.
    Absent,
}

impl Fcs {
    /// A rule by its name, as the command line and Python take it: "declared", "present" or
    /// "absent"; any other is an [`crate::ErrorKind::InvalidArgument`] error listing them.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "declared" => Ok(Fcs::Declared),
            "present" => Ok(Fcs::Present),
            "absent" => Ok(Fcs::Absent),
            _ => Err(Error::invalid(format!(
                "fcs {s:?} is not one of 'declared' (default: as the capture says), 'present' \
                 (every frame ends with its FCS), 'absent' (none does)"
            ))),
        }
    }

    /// Bytes of FCS that end each frame of an interface of link type `linktype` that declares
    /// `declared`. `Present` adds none to a link whose records carry no link frame (raw IP,
    /// BSD loopback: nothing there could hold an FCS), where a mirror's FCS cannot be; it
    /// believes the declaration there as `Declared` does.
    pub fn kept(self, declared: u8, linktype: u16) -> u8 {
        match self {
            Fcs::Declared => declared,
            Fcs::Present if declared == 0 && !wire::linktype::has_no_link_frame(linktype) => {
                wire::fcs::FCS_LEN as u8
            }
            Fcs::Present => declared,
            Fcs::Absent => 0,
        }
    }
}

impl SizeKind {
    /// A size by its name, as the command line and Python take it: "wire", "captured" (or
    /// "cap"), "ip", "payload", "l1"; any other is an [`crate::ErrorKind::InvalidArgument`]
    /// error naming them.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "wire" => Ok(SizeKind::Wire),
            "captured" | "cap" => Ok(SizeKind::Captured),
            "ip" => Ok(SizeKind::Ip),
            "payload" => Ok(SizeKind::Payload),
            "l1" | "L1" => Ok(SizeKind::L1(Fcs::Declared)),
            _ => Err(Error::invalid(format!(
                "size {s:?} is not one of 'wire' (default), 'captured', 'ip', 'payload', 'l1'"
            ))),
        }
    }
    /// `self` with `fcs` as the rule for the FCS of `l1`; the other sizes count no FCS of their
    /// own and are unchanged.
    pub fn with_fcs(self, fcs: Fcs) -> Self {
        match self {
            SizeKind::L1(_) => SizeKind::L1(fcs),
            other => other,
        }
    }
    fn needs_headers(self) -> bool {
        matches!(self, SizeKind::Ip | SizeKind::Payload)
    }
}

/// Every packet read is either counted or skipped for exactly one of these reasons.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Accounting {
    /// Packets framed by the readers (all files).
    pub packets_read: u64,
    /// Packets that went into the metrics.
    pub counted: u64,
    /// Packets without a timestamp (pcapng Simple Packet Blocks).
    pub skipped_no_timestamp: u64,
    /// Packets whose timestamp does not fit in i64 nanoseconds.
    pub skipped_timestamp_out_of_range: u64,
    /// Packets outside the time range asked for ([`crate::TimeRange`]).
    pub skipped_outside_range: u64,
    /// Packets the header filter left out ([`crate::Filter`]).
    pub skipped_filtered: u64,
    /// Packets whose chosen size needs a header that is missing or truncated (size="ip"/"payload").
    pub skipped_no_size: u64,
    /// Packets later than the reorder horizon, dropped on request.
    pub skipped_late: u64,
    /// Packets that arrived with a timestamp earlier than one already seen (counted, reordered).
    pub reordered: u64,
    /// Largest step backwards in time from the latest packet seen, ns (late packets included;
    /// 0 for sorted input): the reorder horizon the capture needed.
    pub max_lateness_ns: i64,
    /// The earliest and the latest timestamp of the packets read that have one (any offset
    /// applied), when a time range was given (else `None`, not looked for): what a range that
    /// kept none of the packets, or a bound far from them, is told against (a bound in seconds
    /// taken for ns lands in 1970).
    pub ts_span: Option<(i64, i64)>,
}

impl Accounting {
    /// One packet read, as `made` for the engine: `Some` if it reaches the engine, else `None`
    /// and counted by the reason it does not.
    #[inline]
    pub(crate) fn read<T>(&mut self, made: std::result::Result<T, Skip>) -> Option<T> {
        self.packets_read += 1;
        match made {
            Ok(t) => return Some(t),
            Err(Skip::NoTimestamp) => self.skipped_no_timestamp += 1,
            Err(Skip::NoSize) => self.skipped_no_size += 1,
            Err(Skip::OutsideRange) => self.skipped_outside_range += 1,
            Err(Skip::Filtered) => self.skipped_filtered += 1,
        }
        None
    }

    /// Count the packets `reader` read whose timestamp does not fit i64 nanoseconds, after its
    /// packets went through [`Accounting::read`]: the reader hands them out without a
    /// timestamp, so `read` counted them as having none; keep the reasons apart.
    pub(crate) fn out_of_range(&mut self, reader: &CaptureReader) {
        let n = reader.stats().timestamps_out_of_range;
        self.skipped_timestamp_out_of_range += n;
        self.skipped_no_timestamp -= n.min(self.skipped_no_timestamp);
    }

    /// A packet read at `ts_ns`, in [`Accounting::ts_span`].
    #[inline]
    pub(crate) fn saw(&mut self, ts_ns: i64) {
        self.ts_span = widened(self.ts_span, Some((ts_ns, ts_ns)));
    }

    /// Add what another reader read and skipped.
    pub(crate) fn add(&mut self, other: &Accounting) {
        self.ts_span = widened(self.ts_span, other.ts_span);
        self.packets_read += other.packets_read;
        self.skipped_no_timestamp += other.skipped_no_timestamp;
        self.skipped_no_size += other.skipped_no_size;
        self.skipped_timestamp_out_of_range += other.skipped_timestamp_out_of_range;
        self.skipped_outside_range += other.skipped_outside_range;
        self.skipped_filtered += other.skipped_filtered;
    }
}

/// The span from the earliest to the latest of `a` and `b` (either may be `None`: nothing seen).
#[inline]
pub(crate) fn widened(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((lo.min(l), hi.max(h))),
        (a, b) => a.or(b),
    }
}

/// Called with the input's bytes consumed so far (as they are on disk: compressed bytes for
/// gzip or zstd input, so that they compare with the file's size; packets for
/// [`scan_columns`]) every 65,536 packets read, whenever a read of the input returns 50 ms or
/// more after the last such call (a slow stream's packets, however few), and once at the end;
/// returning an error (e.g. an interrupt) stops the scan with that error. Packets a time range,
/// filter or size leaves out count as read. A mapped file's reads never take long, so its calls
/// come by packets only.
///
/// It is the only place a scan looks for a stop: a stop waits for the next call, a fraction
/// of a second from a file or a stream that keeps sending, but forever from a source whose
/// `read` blocks. To stop a scan waiting on a quiet socket or pipe, let the source's own
/// `read` fail (a socket with a read timeout that looks at the stop flag between timeouts):
/// the scan ends with an [`crate::ErrorKind::Io`] error whose [`Error::io_error`] is the
/// source's error (and no result, as for any error).
///
/// ```
/// use burstcore::capture::{CaptureReader, ReadOptions};
/// use burstcore::engine::ScanConfig;
/// use burstcore::pipeline::{scan, SizeKind};
/// use burstcore::writer::{PcapOptions, PcapWriter};
/// use burstcore::{Error, ErrorKind};
/// use std::io::{self, Read};
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// /// What the source's read returns once told to stop.
/// #[derive(Debug)]
/// struct Stopped;
/// impl std::fmt::Display for Stopped {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("stopped by the collector")
///     }
/// }
/// impl std::error::Error for Stopped {}
///
/// /// A stream that sends `head`, then nothing (as a socket with a read timeout reports
/// /// `TimedOut` every millisecond), until `stop` is set from another thread.
/// struct Quiet {
///     head: io::Cursor<Vec<u8>>,
///     stop: Arc<AtomicBool>,
/// }
/// impl Read for Quiet {
///     fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
///         loop {
///             if self.stop.load(Ordering::Relaxed) {
///                 return Err(io::Error::other(Stopped));
///             }
///             match self.head.read(buf)? {
///                 0 => std::thread::sleep(Duration::from_millis(1)), // the read timeout
///                 n => return Ok(n),
///             }
///         }
///     }
/// }
///
/// // 100,000 packets, then silence.
/// let mut w = PcapWriter::new(Vec::new(), PcapOptions::default())?;
/// for k in 0..100_000 {
///     w.write_packet(1_000 * k, 1500, &[0u8; 64])?;
/// }
/// let head = io::Cursor::new(w.finish()?);
/// let stop = Arc::new(AtomicBool::new(false));
/// let source = Quiet { head, stop: Arc::clone(&stop) };
/// let input = burstcore::input::from_reader(Box::new(source), None)?;
/// let mut readers = [CaptureReader::new(input, ReadOptions::default())?];
///
/// // The collector's control thread asks for the stop while the scan waits on the source.
/// let control = std::thread::spawn({
///     let stop = Arc::clone(&stop);
///     move || {
///         std::thread::sleep(Duration::from_millis(50));
///         stop.store(true, Ordering::Relaxed);
///     }
/// });
/// let mut told = Vec::new();
/// let got = scan(&mut readers, ScanConfig::default(), SizeKind::Wire, &mut |bytes| {
///     told.push(bytes);
///     // Stops between packets (every 65,536 of them, or after 50 ms of reads), for a source
///     // that keeps sending.
///     match stop.load(Ordering::Relaxed) {
///         true => Err(Error::new(ErrorKind::Interrupted, "stopped by the collector")),
///         false => Ok(()),
///     }
/// });
/// control.join().unwrap();
///
/// let err = got.expect_err("the source's read failed");
/// assert_eq!(err.kind, ErrorKind::Io);
/// let cause = err.io_error().and_then(|e| e.get_ref()).expect("the source's error");
/// assert!(cause.is::<Stopped>(), "{err}");
/// // Progress was told as the 100,000 packets came (24 + 100,000 × 80 bytes in all).
/// assert!(!told.is_empty() && told.windows(2).all(|w| w[0] <= w[1]));
/// assert!(told.iter().all(|&done| done <= 24 + 100_000 * 80));
/// # Ok::<(), burstcore::Error>(())
/// ```
pub type Progress<'a> = &'a mut dyn FnMut(u64) -> Result<()>;

const PROGRESS_EVERY: u64 = 1 << 16;

/// `progress`, never told a count below one it was told: for work that may start over (a split
/// attempt that gives up, then a sequential pass), so that progress never goes back. The pass
/// that starts over still calls it, with the count reached before, since each call is also
/// where an interrupt is looked for: skipped, Ctrl-C waited for the whole second pass.
pub(crate) fn forward_only(progress: Progress<'_>) -> impl FnMut(u64) -> Result<()> + '_ {
    let mut shown = 0u64;
    move |done: u64| {
        shown = shown.max(done);
        progress(shown)
    }
}

/// The arrivals of one capture in file order, with the reasons for the packets left out.
struct ArrivalSource<'r> {
    reader: &'r mut CaptureReader,
    /// Captured bytes of every packet read, shared by all sources (tells a parallel scan how
    /// much reading costs per packet).
    captured: &'r Cell<u64>,
    decode: bool,
    size: SizeKind,
    /// Packets read and skipped (`read`), from this source alone.
    acc: Accounting,
    chosen: Chosen<'r>,
    /// The packet [`ArrivalSource::next`] gave last, decoded where it lies. An arrival built
    /// and handed back by value was copied out field by field, its ~100 bytes of headers
    /// twice: two thirds of `next`'s 1,140 instructions a packet in a scan by pair
    /// (callgrind).
    slot: Arrival,
    /// Packets left out since the last packet given or pause.
    left_out: u64,
    /// [`ArrivalSource::next_with`] returned `None` to pause, not at the end: it left out
    /// 65,536 packets in a row, or read a while ([`CaptureReader::due`]), and the scan looks
    /// for a stop before going on. A filter or range that leaves out all of a capture, or of a
    /// slow stream, otherwise kept the scan from looking until its end.
    paused: bool,
    /// The reader's FCS sample ([`CaptureReader::check_fcs`]), borrowed while the source reads:
    /// the frames it keeps are checked, those its range or filter leaves out are not.
    fcs: Option<Box<crate::capture::FcsSample>>,
}

impl Drop for ArrivalSource<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.fcs.take() {
            self.reader.keep_fcs_sample(s);
        }
    }
}

impl ArrivalSource<'_> {
    /// The next packet that reaches the engine, as `make` builds it from a packet read; the
    /// packets it skips are counted by reason.
    /// With `ranged`, every timestamp read widens [`Accounting::ts_span`]. With `sample`, a
    /// packet kept is checked for an undeclared FCS, if the reader asked for it
    /// ([`ArrivalSource::fcs`]); a caller that knows it did not passes `false`, and its loop
    /// tests nothing. With `inline_read`, the reader's common case is framed in this loop
    /// ([`CaptureReader::next_packet_inline`]): for the loops that run a whole scan (one
    /// capture's lean drain, each capture's read in a merge, a scan by headers), not for every
    /// caller, whose code it would grow. `make` may write into the source's slot.
    #[inline(always)]
    fn next_with<T>(
        &mut self,
        ranged: bool,
        sample: bool,
        inline_read: bool,
        make: impl Fn(&crate::Packet<'_>, &mut Arrival) -> std::result::Result<T, Skip>,
    ) -> Result<Option<T>> {
        loop {
            let next = if inline_read {
                self.reader.next_packet_inline()?
            } else {
                self.reader.next_packet()?
            };
            let Some(p) = next else {
                return Ok(None);
            };
            self.captured.set(self.captured.get() + p.data.len() as u64);
            if let (true, Some(t)) = (ranged, p.ts_ns) {
                self.acc.saw(t);
            }
            if let Some(a) = self.acc.read(make(&p, &mut self.slot)) {
                if sample {
                    if let Some(s) = self.fcs.as_deref_mut() {
                        s.see(&p);
                    }
                }
                return Ok(Some(a));
            }
            self.left_out += 1;
            if self.left_out == PROGRESS_EVERY || self.reader.due() {
                self.left_out = 0;
                self.paused = true;
                return Ok(None);
            }
        }
    }

    /// Whether the last `None` was a pause ([`ArrivalSource::paused`]), which it then ends.
    fn resume(&mut self) -> bool {
        std::mem::take(&mut self.paused)
    }

    /// The next packet that reaches the engine, in the source's slot (until the next call).
    /// Its read inlined, as [`ArrivalSource::next_lean`]'s: 45 instructions a packet fewer in a
    /// scan by host or pair, 59 in a merge of 8 captures without headers (cachegrind,
    /// benches/RESULTS.md, "perf-cf").
    fn next(&mut self) -> Result<Option<&Arrival>> {
        let (decode, size, chosen) = (self.decode, self.size, self.chosen);
        let found = if chosen.is_all() {
            self.next_with(false, true, true, |p, slot| {
                fill_arrival(slot, p, decode, size, None)
            })?
        } else {
            self.next_with(!chosen.range.is_all(), true, true, |p, slot| {
                admit(p, chosen.range)?;
                fill_arrival(slot, p, decode, size, chosen.filter)
            })?
        };
        Ok(found.map(|()| &self.slot))
    }

    /// [`ArrivalSource::next`] without headers: timestamp, size and interface.
    #[inline]
    fn next_lean(&mut self) -> Result<Option<(i64, u64, u32)>> {
        let (size, range) = (self.size, self.chosen.range);
        // A filter reads headers, so this lean path never has one (`needs_headers`). Without a
        // range, the loop of the plain scan as it was: no check per packet.
        debug_assert!(self.chosen.filter.is_none());
        if range.is_all() {
            return self.next_with(false, true, true, |p, _| lean_arrival(p, size));
        }
        self.next_with(true, true, true, |p, _| {
            admit(p, range)?;
            lean_arrival(p, size)
        })
    }

    /// Every packet [`ArrivalSource::next_lean`] gives, into `sink`, telling `progress` every
    /// [`PROGRESS_EVERY`] packets: the one-capture scan that reads no header.
    fn drain_lean(&mut self, sink: &mut impl Sink, progress: Progress<'_>) -> Result<()> {
        // One loop per size rule and per range or none, chosen here once: asked per packet, the
        // rule's match and the range's test cost the loop 20 instructions a packet, and called
        // per packet `next_lean` spilled and reloaded its state around each (cachegrind).
        // `l1` believing the capture has loops of its own, the only ones that check the frames
        // kept for an undeclared FCS ([`ArrivalSource::fcs`]): asked in every loop, the test
        // cost every packet of a wire scan 5 instructions (cachegrind).
        let ranged = !self.chosen.range.is_all();
        const L1: SizeKind = SizeKind::L1(Fcs::Declared);
        match (self.size, ranged) {
            (SizeKind::Wire, false) => {
                self.drain_lean_as(SizeKind::Wire, false, false, sink, progress)
            }
            (SizeKind::Wire, true) => {
                self.drain_lean_as(SizeKind::Wire, true, false, sink, progress)
            }
            (L1, false) => self.drain_lean_as(L1, false, true, sink, progress),
            (L1, true) => self.drain_lean_as(L1, true, true, sink, progress),
            (size, ranged) => self.drain_lean_as(size, ranged, false, sink, progress),
        }
    }

    /// [`ArrivalSource::drain_lean`] with `size`, `ranged` and `sample` (whether it checks the
    /// frames kept for an FCS: [`ArrivalSource::next_with`]) as its caller fixes them, constants
    /// in the loop once inlined.
    #[inline(always)]
    fn drain_lean_as(
        &mut self,
        size: SizeKind,
        ranged: bool,
        sample: bool,
        sink: &mut impl Sink,
        progress: Progress<'_>,
    ) -> Result<()> {
        debug_assert!(self.chosen.filter.is_none());
        let range = self.chosen.range;
        loop {
            let next = self.next_with(ranged, sample, true, |p, _| {
                if ranged {
                    admit(p, range)?;
                }
                lean_arrival(p, size)
            })?;
            let Some((ts, size, interface)) = next else {
                // The end, or a pause in a run of packets left out, for a look at the stop.
                if !self.resume() {
                    return Ok(());
                }
                progress(self.reader.looked())?;
                continue;
            };
            sink.push_lean(ts, size, interface)?;
            if self.reader.tick() {
                progress(self.reader.looked())?;
            }
        }
    }
}

/// The packets a scan reads: those in its time range that pass its header filter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chosen<'f> {
    pub(crate) range: crate::TimeRange,
    pub(crate) filter: Option<&'f crate::Filter>,
}

impl Chosen<'_> {
    fn is_all(&self) -> bool {
        self.range.is_all() && self.filter.is_none()
    }
}

/// [`arrival`] of a packet in the time range that passes the filter: the range is looked at
/// before the headers are decoded, the filter before a size is read from them, so that each
/// packet left out is counted for the first reason that applies.
#[inline]
fn chosen_arrival(
    p: &crate::Packet<'_>,
    chosen: Chosen<'_>,
    decode: bool,
    size: SizeKind,
) -> std::result::Result<Arrival, Skip> {
    admit(p, chosen.range)?;
    arrival_passing(p, decode, size, chosen.filter)
}

/// Why a packet read does not reach the engine.
pub(crate) enum Skip {
    NoTimestamp,
    NoSize,
    OutsideRange,
    Filtered,
}

/// A packet with a timestamp outside `range` is skipped (one without is, for that reason).
#[inline]
fn admit(p: &crate::Packet<'_>, range: crate::TimeRange) -> std::result::Result<(), Skip> {
    match p.ts_ns {
        Some(t) if !range.contains(t) => Err(Skip::OutsideRange),
        _ => Ok(()),
    }
}

/// What the engine sees of a packet: its timestamp, chosen size, interface and (if `decode`)
/// headers.
#[inline]
pub(crate) fn arrival(
    p: &crate::Packet<'_>,
    decode: bool,
    size: SizeKind,
) -> std::result::Result<Arrival, Skip> {
    arrival_passing(p, decode, size, None)
}

/// [`arrival`] of a packet whose headers pass `filter` (decoded for it whatever `decode` says);
/// the filter is tested before a size is read from the headers.
#[inline(always)]
fn arrival_passing(
    p: &crate::Packet<'_>,
    decode: bool,
    size: SizeKind,
    filter: Option<&crate::Filter>,
) -> std::result::Result<Arrival, Skip> {
    let mut a = Arrival {
        ts_ns: 0,
        size: 0,
        interface: 0,
        headers: Headers::default(),
    };
    fill_arrival(&mut a, p, decode, size, filter)?;
    Ok(a)
}

/// [`arrival_passing`] into `a`, decoded in place (what `a` holds after a skip is unspecified).
#[inline(always)]
fn fill_arrival(
    a: &mut Arrival,
    p: &crate::Packet<'_>,
    decode: bool,
    size: SizeKind,
    filter: Option<&crate::Filter>,
) -> std::result::Result<(), Skip> {
    let ts_ns = p.ts_ns.ok_or(Skip::NoTimestamp)?;
    if decode || filter.is_some() {
        wire::decode_into(&mut a.headers, p.linktype, p.data, p.wire_len);
    } else {
        a.headers = Headers::default();
    }
    if filter.is_some_and(|f| !f.matches(&a.headers, p.wire_len)) {
        return Err(Skip::Filtered);
    }
    a.size = chosen_size(p, size, Some(&a.headers)).ok_or(Skip::NoSize)?;
    a.ts_ns = ts_ns;
    a.interface = p.interface;
    Ok(())
}

/// [`arrival`] for a scan that reads no header: timestamp, size and interface, no arrival built
/// around them (sizes read from headers are then missing, as from an undecoded packet).
#[inline]
pub(crate) fn lean_arrival(
    p: &crate::Packet<'_>,
    size: SizeKind,
) -> std::result::Result<(i64, u64, u32), Skip> {
    let ts_ns = p.ts_ns.ok_or(Skip::NoTimestamp)?;
    let size = chosen_size(p, size, None).ok_or(Skip::NoSize)?;
    Ok((ts_ns, size, p.interface))
}

/// A packet's size as `kind` counts it; `None` when it needs a header the packet lacks (or that
/// was not decoded).
// Always inlined: out of line (as `l1`'s FCS rule made it), the call cost every packet of a
// scan 27 instructions (cachegrind, 60 MB snaplen-128 pcap, run bf's round).
#[inline(always)]
pub(crate) fn chosen_size(
    p: &crate::Packet<'_>,
    kind: SizeKind,
    headers: Option<&Headers>,
) -> Option<u64> {
    match kind {
        SizeKind::Wire => Some(p.wire_len as u64),
        SizeKind::Captured => Some(p.data.len() as u64),
        // A length past the frame on the wire is damage, not a size (see `Headers`).
        SizeKind::Ip => headers
            .filter(|h| !h.ip_len_past_frame)?
            .ip_len
            .map(u64::from),
        SizeKind::Payload => headers
            .filter(|h| !h.ip_len_past_frame)?
            .payload_len
            .map(u64::from),
        SizeKind::L1(fcs) => Some(l1_of(p, fcs)),
    }
}

/// A packet's `l1` size under the FCS rule `fcs`, out of line so that `chosen_size`, inlined
/// into every scan's per-packet loop, stays small.
#[inline(never)]
fn l1_of(p: &crate::Packet<'_>, fcs: Fcs) -> u64 {
    // The FCS the frame holds is the one l1_size adds: not twice.
    l1_size(
        p.linktype,
        p.wire_len
            .saturating_sub(u32::from(fcs.kept(p.fcs_len, p.linktype))),
    )
}

/// What the packet takes on an Ethernet wire: its frame with Ethernet's 14-byte header in place
/// of its own link header (a Linux cooked capture's 16 or 20 bytes, raw IP's none, loopback's
/// 4), padded to the 60-byte minimum, plus the 4-byte FCS and 20 bytes of preamble, SFD and
/// inter-frame gap. A link type whose header length varies is counted as it is, unpadded.
fn l1_size(linktype: u16, wire_len: u32) -> u64 {
    const ETHERNET_HEADER: u64 = 14;
    // In u64: a raw IP frame's length near 2^32 - 1 plus Ethernet's header does not fit u32.
    let frame = match wire::linktype::link_header_len(linktype) {
        // A frame shorter than its own header (damage) still takes a minimum frame.
        Some(own) => (u64::from(wire_len.saturating_sub(own)) + ETHERNET_HEADER).max(60),
        None => u64::from(wire_len),
    };
    frame + 4 + 20
}

/// Whether a scan of `config` counting `size` must decode packet headers.
pub(crate) fn needs_headers(config: &ScanConfig, size: SizeKind) -> bool {
    size.needs_headers() || config.reads_headers() || config.has_filter()
}

/// Scan one or more captures (merged in timestamp order) into the engine, on one thread.
///
/// Interfaces of different files are kept apart by numbering them in sequence: the interfaces of
/// the second file follow those of the first.
///
/// Errors about the input carry the byte offset where they were found, except a packet later
/// than the reorder horizon ([`crate::ErrorKind::OutOfOrder`]): the reorder buffer knows times,
/// not offsets, so that error names the two timestamps and has no `offset`. Where the input can
/// be read again (a file), [`late_packet_offset`] finds it, as the Python bindings do.
pub fn scan(
    readers: &mut [CaptureReader],
    config: ScanConfig,
    size: SizeKind,
    progress: Progress<'_>,
) -> Result<(ScanOutput, Accounting)> {
    scan_threads(readers, config, size, 1, progress)
}

/// [`scan`] with up to `threads` threads (at most [`crate::MAX_THREADS`]; 0 counts as 1, so
/// pass [`crate::default_threads`] for the cores this process may use, as Python's
/// `threads=None` does); the result is identical whatever the number of threads. Plain capture
/// files are split into time chunks scanned apart and merged exactly ([`crate::chunked`]); when
/// that is not possible (compressed or streamed input, chunks that overlap in time, ...), the
/// metrics are shared out among threads instead ([`crate::parallel`]); one file of small records
/// scanned for the aggregate on two threads is split by function
/// ([`crate::chunked::by_function`]), and so is any other scan of the aggregate alone on two
/// threads that the time chunks do not take ([`crate::parallel::orders_once`]).
pub fn scan_threads(
    readers: &mut [CaptureReader],
    config: ScanConfig,
    size: SizeKind,
    threads: usize,
    progress: Progress<'_>,
) -> Result<(ScanOutput, Accounting)> {
    let threads = threads.clamp(1, crate::MAX_THREADS);
    scan_any_way(readers, config, size, threads, progress)
        .map_err(|e| crate::capture::explain(readers, e))
}

fn scan_any_way(
    readers: &mut [CaptureReader],
    config: ScanConfig,
    size: SizeKind,
    threads: usize,
    progress: Progress<'_>,
) -> Result<(ScanOutput, Accounting)> {
    let decode = needs_headers(&config, size);
    // Checked before any reading, whichever way the scan goes.
    let filters = config.filter_per_capture(readers.len())?;
    // l1 believing the capture: a frame that kept its FCS unsaid counts 4 B too long. The scan
    // checks the first frames it keeps of each interface (`undeclared_fcs`).
    let check_fcs = size == SizeKind::L1(Fcs::Declared);
    if check_fcs {
        readers.iter_mut().for_each(CaptureReader::check_fcs);
    }
    if threads >= 2 && crate::chunked::worthwhile(&config) {
        if crate::chunked::by_function(readers, &config, threads) {
            let split = Split::ByFunction;
            return scan_other_ways(readers, config, &filters, size, decode, split, progress);
        }
        // The chunked attempt may give up and the scan start over another way.
        let mut forward = forward_only(progress);
        if let Some(done) =
            crate::chunked::scan(readers, &config, size, decode, threads, &mut forward)?
        {
            return Ok(done);
        }
        let progress: Progress<'_> = &mut forward;
        let split = Split::other(&config, threads);
        return scan_other_ways(readers, config, &filters, size, decode, split, progress);
    }
    let split = Split::other(&config, threads);
    scan_other_ways(readers, config, &filters, size, decode, split, progress)
}

/// How [`scan_other_ways`] shares a scan among threads.
#[derive(Debug, Clone, Copy)]
enum Split {
    /// The metrics shared out among up to this many threads ([`crate::parallel::plan`]).
    Metrics(usize),
    /// By function on two threads ([`crate::parallel::ParallelScanner::by_function`]): one
    /// plain file of small records, or a scan the time chunks do not take.
    ByFunction,
}

impl Split {
    /// A scan the time chunks do not take (compressed or streamed input, a time range, a
    /// filter, bins from the first packet, several files that overlap, ...): by function when
    /// it is the aggregate alone on two threads ([`crate::parallel::orders_once`]), else the
    /// metrics shared out.
    fn other(config: &ScanConfig, threads: usize) -> Split {
        if crate::parallel::orders_once(config, crate::chunked::share_out_threads(threads)) {
            Split::ByFunction
        } else {
            Split::Metrics(threads)
        }
    }
}

/// [`scan_threads`] without time chunks: one thread, the metrics shared out among threads, or
/// the scan split by function.
/// `filters`: each reader's ([`ScanConfig::filter_per_capture`]).
fn scan_other_ways(
    readers: &mut [CaptureReader],
    config: ScanConfig,
    filters: &[Option<crate::Filter>],
    size: SizeKind,
    decode: bool,
    split: Split,
    progress: Progress<'_>,
) -> Result<(ScanOutput, Accounting)> {
    let threads = match split {
        Split::Metrics(threads) => crate::chunked::share_out_threads(threads),
        Split::ByFunction => 2,
    };
    let captured = Cell::new(0u64);
    let range = config.time_range;
    if !crate::parallel::splits(&config, threads) {
        let mut scanner = Scanner::new(config)?;
        let (acc, renumber) = feed(
            readers,
            decode,
            size,
            &captured,
            (range, filters),
            &mut scanner,
            progress,
        )?;
        let mut out = scanner.finish()?;
        renumber.apply(&mut out);
        Ok(account(out, acc))
    } else {
        std::thread::scope(|scope| {
            let reading = crate::parallel::Reading {
                captured_per_packet: 0.0,
                decodes: decode,
                inflates: readers
                    .iter()
                    .any(|r| r.compression() != crate::input::Compression::None),
            };
            let mut scanner = match split {
                Split::Metrics(_) => crate::parallel::ParallelScanner::new(
                    scope, config, threads, &captured, reading,
                )?,
                Split::ByFunction => crate::parallel::ParallelScanner::by_function(
                    scope, config, &captured, reading,
                )?,
            };
            let (acc, renumber) = match feed(
                readers,
                decode,
                size,
                &captured,
                (range, filters),
                &mut scanner,
                progress,
            ) {
                Ok(done) => done,
                Err(e) => return Err(scanner.fail(e)),
            };
            let mut out = scanner.finish()?;
            renumber.apply(&mut out);
            Ok(account(out, acc))
        })
    }
}

/// Where [`feed`] puts the packets: a scanner, or one shared among threads.
trait Sink {
    fn push(&mut self, a: &Arrival) -> Result<()>;
    /// A packet without headers (no grouping or size needs them).
    fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()>;
}

impl Sink for Scanner {
    #[inline]
    fn push(&mut self, a: &Arrival) -> Result<()> {
        Scanner::push(self, a)
    }
    #[inline]
    fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        Scanner::push_lean(self, ts_ns, size, interface)
    }
}

impl Sink for crate::parallel::ParallelScanner<'_, '_, '_> {
    #[inline]
    fn push(&mut self, a: &Arrival) -> Result<()> {
        crate::parallel::ParallelScanner::push(self, a)
    }
    #[inline]
    fn push_lean(&mut self, ts_ns: i64, size: u64, interface: u32) -> Result<()> {
        crate::parallel::ParallelScanner::push_lean(self, ts_ns, size, interface)
    }
}

/// Every packet of every reader in `range` that passes the reader's filter into `sink`, in
/// timestamp order across files; and how to renumber the interfaces in what `sink` gives.
fn feed(
    readers: &mut [CaptureReader],
    decode: bool,
    size: SizeKind,
    captured: &Cell<u64>,
    (range, filters): (crate::TimeRange, &[Option<crate::Filter>]),
    sink: &mut impl Sink,
    progress: Progress<'_>,
) -> Result<(Accounting, merge::Renumber)> {
    if readers.len() > 1 {
        readers.iter_mut().for_each(CaptureReader::share_residency);
    }
    let mut sources: Vec<ArrivalSource<'_>> = readers
        .iter_mut()
        .zip(filters)
        .map(|(reader, filter)| ArrivalSource {
            fcs: reader.lend_fcs_sample(),
            reader,
            captured,
            decode,
            size,
            acc: Accounting::default(),
            chosen: Chosen {
                range,
                filter: filter.as_ref(),
            },
            slot: Arrival {
                ts_ns: 0,
                size: 0,
                interface: 0,
                headers: Headers::default(),
            },
            left_out: 0,
            paused: false,
        })
        .collect();

    let mut renumber = merge::Renumber::default();
    if sources.len() == 1 && !decode {
        sources[0].drain_lean(sink, progress)?;
    } else if sources.len() == 1 {
        let src = &mut sources[0];
        loop {
            while let Some(a) = src.next()? {
                sink.push(a)?;
                if src.reader.tick() {
                    progress(src.reader.looked())?;
                }
            }
            if !src.resume() {
                break;
            }
            progress(src.reader.looked())?;
        }
    } else {
        renumber = merge_sources(&mut sources, sink, progress)?;
    }

    let mut acc = Accounting::default();
    for s in &sources {
        acc.add(&s.acc);
        acc.out_of_range(s.reader);
    }
    let pos: u64 = sources.iter().map(|s| s.reader.consumed()).sum();
    progress(pos)?;
    Ok((acc, renumber))
}

pub(crate) fn account(out: ScanOutput, mut acc: Accounting) -> (ScanOutput, Accounting) {
    acc.skipped_late = out.reorder.dropped_late;
    acc.reordered = out.reorder.reordered;
    acc.max_lateness_ns = out.reorder.max_lateness_ns;
    acc.counted = acc.packets_read
        - acc.skipped_no_timestamp
        - acc.skipped_timestamp_out_of_range
        - acc.skipped_outside_range
        - acc.skipped_filtered
        - acc.skipped_no_size
        - acc.skipped_late;
    (out, acc)
}

/// The captures merged in timestamp order ([`merge`]) into `sink`, with headers if any
/// source decodes them, else as timestamp, size and interface alone; the interfaces numbered
/// as [`merge::Interfaces`] says, to be renumbered in the output as it returns.
fn merge_sources(
    sources: &mut [ArrivalSource<'_>],
    sink: &mut impl Sink,
    progress: Progress<'_>,
) -> Result<merge::Renumber> {
    let decode = sources.iter().any(|s| s.decode);
    let n = sources.len();
    let mut files = Files {
        sources,
        sink,
        progress,
        taken: 0,
        interfaces: merge::Interfaces::new(n),
    };
    if decode {
        merge::merge(n, &mut Decoded(&mut files))?;
    } else {
        merge::merge(n, &mut Lean(&mut files))?;
    }
    let declared: Vec<usize> = files
        .sources
        .iter()
        .map(|s| s.reader.interfaces().len())
        .collect();
    Ok(files.interfaces.numbers(&declared))
}

/// The sources of [`merge_sources`] and where their packets go.
struct Files<'a, 'r, S> {
    sources: &'a mut [ArrivalSource<'r>],
    sink: &'a mut S,
    progress: Progress<'a>,
    taken: u64,
    interfaces: merge::Interfaces,
}

impl<S: Sink> Files<'_, '_, S> {
    /// `e` from source `i`, named among the others.
    fn named(&self, i: usize, e: Error) -> Error {
        self.sources[i].reader.named(e, i, self.sources.len())
    }

    /// A packet of source `i` was taken: the one read last, whose read may have been slow.
    fn taken(&mut self, i: usize) -> Result<bool> {
        self.taken += 1;
        if self.taken.is_multiple_of(PROGRESS_EVERY) || self.sources[i].reader.due() {
            self.look()?;
        }
        Ok(true)
    }

    /// Progress, with the bytes all sources have read; and a look for a stop.
    fn look(&mut self) -> Result<()> {
        let read = self.sources.iter_mut().map(|s| s.reader.looked()).sum();
        (self.progress)(read)
    }
}

struct Decoded<'f, 'a, 'r, S>(&'f mut Files<'a, 'r, S>);

/// The packet at the head of a source, which holds it in its slot: the merge moves timestamps,
/// not whole arrivals (a source's next packet is read only once its head was taken).
struct Waiting(i64);

impl merge::Stamped for Waiting {
    #[inline]
    fn ts(&self) -> i64 {
        self.0
    }
}

impl<S: Sink> merge::Streams for Decoded<'_, '_, '_, S> {
    type Item = Waiting;

    fn next(&mut self, i: usize) -> Result<Option<Waiting>> {
        loop {
            let got = match self.0.sources[i].next() {
                Ok(a) => a.map(|a| a.ts_ns),
                Err(e) => return Err(self.0.named(i, e)),
            };
            match got {
                None if self.0.sources[i].resume() => self.0.look()?,
                got => return Ok(got.map(Waiting)),
            }
        }
    }

    fn take(&mut self, _: Waiting, i: usize) -> Result<bool> {
        let a = &mut self.0.sources[i].slot;
        a.interface = self.0.interfaces.id(i, a.interface);
        self.0.sink.push(a)?;
        self.0.taken(i)
    }
}

struct Lean<'f, 'a, 'r, S>(&'f mut Files<'a, 'r, S>);

impl<S: Sink> merge::Streams for Lean<'_, '_, '_, S> {
    type Item = (i64, u64, u32);

    fn next(&mut self, i: usize) -> Result<Option<(i64, u64, u32)>> {
        loop {
            match self.0.sources[i].next_lean() {
                Ok(None) if self.0.sources[i].resume() => self.0.look()?,
                Ok(got) => return Ok(got),
                Err(e) => return Err(self.0.named(i, e)),
            }
        }
    }

    fn take(&mut self, (ts, size, interface): (i64, u64, u32), i: usize) -> Result<bool> {
        let interface = self.0.interfaces.id(i, interface);
        self.0.sink.push_lean(ts, size, interface)?;
        self.0.taken(i)
    }
}

/// A capinfos-like summary of one capture, from one pass.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Info {
    /// Packets in the capture (with a timestamp or not).
    pub packets: u64,
    /// Their bytes on the wire (each record's original length).
    pub wire_bytes: u64,
    /// Wire bytes of the packets with a timestamp: what the span's mean rate divides.
    pub timed_wire_bytes: u64,
    /// Their bytes in the file (each record's captured length).
    pub captured_bytes: u64,
    /// First timestamp in file order (`None`: no packet has one).
    pub first_ns: Option<i64>,
    /// Last timestamp in file order.
    pub last_ns: Option<i64>,
    /// Earliest timestamp.
    pub min_ns: Option<i64>,
    /// Latest timestamp.
    pub max_ns: Option<i64>,
    /// Packets without a timestamp (pcapng Simple Packet Blocks, or one that does not fit i64
    /// ns).
    pub packets_without_timestamp: u64,
    /// Packets whose timestamp is earlier than the one before them (in file order).
    pub out_of_order: u64,
    /// Largest step backwards between consecutive packets, ns.
    pub max_step_back_ns: i64,
    /// Frames longer than their link's MTU frame (plus two VLAN tags): a sign of TSO/GRO offload.
    pub over_mtu_frames: u64,
    /// The longest packet on the wire, bytes.
    pub max_wire_len: u32,
    /// Packets captured shorter than on the wire (snaplen).
    pub snapped: u64,
    /// Packets per interface, indexed by the interface's number in the capture.
    pub per_interface_packets: Vec<u64>,
    /// Wire bytes per interface, as `per_interface_packets`.
    pub per_interface_bytes: Vec<u64>,
    /// Per interface, the Ethernet frames captured whole on an interface that declares no FCS
    /// that were checked for one (the first [`FCS_SAMPLE`]), and how many of them end with a
    /// valid FCS all the same: a capture that kept the FCS without saying so, whose `l1` sizes
    /// are then 4 B a frame too long unless told ([`Fcs::Present`]).
    pub fcs_sampled: Vec<u32>,
    /// Per interface, how many of the frames in `fcs_sampled` end with a valid FCS.
    pub fcs_valid: Vec<u32>,
    /// What the reader warned of (a cut capture, packets the capture says it lost, ...).
    pub warnings: Vec<Warning>,
    /// Every packet read, and those a time range or filter left out, by reason (`counted`:
    /// the packets summed up above).
    pub read: Accounting,
}

/// Frames per interface that `info` and an `l1` scan that believes the capture check for an
/// undeclared FCS ([`crate::capture::FcsSample`]): a frame without one ends with its CRC by
/// chance once in 2^32, so a few dozen tell, and the checks cost nothing after them.
pub const FCS_SAMPLE: u32 = 64;

/// Where the packet is that a scan of `reader` by `size` with this reorder `horizon` meets too
/// late: the file offset of the first packet it counts that is more than `horizon` ns earlier
/// than the latest one counted before it (the reorder buffers' rule), or `None` if there is
/// none. A scan's buffers know times, not files, and its threads meet a late packet well after
/// reading it, so an `OutOfOrder` error learns its offset from this second look (cold: only
/// after the error, on an input that can be read again). `progress` is called as a scan's is,
/// so that this second pass, up to a whole file long, can be interrupted as the first could.
pub fn late_packet_offset(
    reader: &mut CaptureReader,
    size: SizeKind,
    horizon: i64,
    range: crate::TimeRange,
    filter: Option<&crate::Filter>,
    progress: Progress<'_>,
) -> Result<Option<u64>> {
    let decode = size.needs_headers() || filter.is_some();
    let chosen = Chosen { range, filter };
    let mut latest: Option<i64> = None;
    let mut since_progress = 0u64;
    loop {
        since_progress += 1;
        if since_progress == PROGRESS_EVERY || reader.due() {
            since_progress = 0;
            progress(reader.looked())?;
        }
        let Some(p) = reader.next_packet()? else {
            break;
        };
        let Ok(a) = chosen_arrival(&p, chosen, decode, size) else {
            continue;
        };
        match latest {
            Some(l) if a.ts_ns < l && l.abs_diff(a.ts_ns) > horizon.unsigned_abs() => {
                return Ok(Some(p.offset));
            }
            _ => latest = Some(latest.map_or(a.ts_ns, |l| l.max(a.ts_ns))),
        }
    }
    Ok(None)
}

/// [`late_packet_offset`] for a scan of several captures: which of `readers` (read again from
/// the start, each through its own filter of `filters`) holds the packet the scan found later
/// than the horizon, and its byte offset there. They are merged exactly as the scan merges
/// them, and the first packet later than the horizon behind the latest before it is the
/// scan's: the scan's reorder buffer sees the same packets in the same order.
pub fn late_packet_among(
    readers: &mut [CaptureReader],
    size: SizeKind,
    horizon: i64,
    range: crate::TimeRange,
    filters: &[Option<crate::Filter>],
    progress: Progress<'_>,
) -> Result<Option<(usize, u64)>> {
    struct Again<'r, 'f, 'p> {
        readers: &'r mut [CaptureReader],
        filters: &'f [Option<crate::Filter>],
        range: crate::TimeRange,
        size: SizeKind,
        horizon: i64,
        latest: Option<i64>,
        found: Option<(usize, u64)>,
        taken: u64,
        progress: Progress<'p>,
    }
    impl merge::Streams for Again<'_, '_, '_> {
        /// Timestamp and byte offset (the third field unused).
        type Item = (i64, u64, u32);
        fn next(&mut self, i: usize) -> Result<Option<(i64, u64, u32)>> {
            let filter = self.filters.get(i).and_then(Option::as_ref);
            let chosen = Chosen {
                range: self.range,
                filter,
            };
            let decode = self.size.needs_headers() || filter.is_some();
            let n = self.readers.len();
            let mut left_out = 0u64;
            loop {
                // Packets left out are no packet taken: a look for a stop among them too.
                if left_out == PROGRESS_EVERY || (left_out > 0 && self.readers[i].due()) {
                    left_out = 0;
                    (self.progress)(self.readers.iter_mut().map(CaptureReader::looked).sum())?;
                }
                let reader = &mut self.readers[i];
                let p = match reader.next_packet() {
                    Ok(Some(p)) => p,
                    Ok(None) => return Ok(None),
                    Err(e) => return Err(reader.named(e, i, n)),
                };
                if let Ok(a) = chosen_arrival(&p, chosen, decode, self.size) {
                    return Ok(Some((a.ts_ns, p.offset, 0)));
                }
                left_out += 1;
            }
        }
        fn take(&mut self, (ts, offset, _): (i64, u64, u32), i: usize) -> Result<bool> {
            self.taken += 1;
            if self.taken.is_multiple_of(PROGRESS_EVERY) || self.readers[i].due() {
                (self.progress)(self.readers.iter_mut().map(CaptureReader::looked).sum())?;
            }
            match self.latest {
                Some(l) if ts < l && l.abs_diff(ts) > self.horizon.unsigned_abs() => {
                    self.found = Some((i, offset));
                    Ok(false)
                }
                _ => {
                    self.latest = Some(self.latest.map_or(ts, |l| l.max(ts)));
                    Ok(true)
                }
            }
        }
    }
    let n = readers.len();
    let mut again = Again {
        readers,
        filters,
        range,
        size,
        horizon,
        latest: None,
        found: None,
        taken: 0,
        progress,
    };
    merge::merge(n, &mut again)?;
    Ok(again.found)
}

/// [`info_where`] of every packet: [`Info`] on the capture `reader` reads, from its next packet to
/// its end; `progress` as a scan's.
pub fn info(reader: &mut CaptureReader, progress: Progress<'_>) -> Result<Info> {
    info_where(reader, crate::table::Selection::ALL, progress)
}

/// A capinfos-like summary of the packets `select` chooses, as `read_table_where` chooses
/// them (a packet without a timestamp is in no time range; the range is looked at before the
/// headers are decoded for the filter): the counts, lengths, timestamps and steps back are
/// theirs, while the sections, interfaces, blocks and drop counters stay the file's. `read`
/// tells the packets left out, by reason.
pub fn info_where(
    reader: &mut CaptureReader,
    select: crate::table::Selection<'_>,
    progress: Progress<'_>,
) -> Result<Info> {
    select.range.check()?;
    let mut inf = Info::default();
    let mut prev: Option<i64> = None;
    let mut mtu_cache: Vec<Option<u32>> = Vec::new();
    let mut fcs = crate::capture::FcsSample::default();
    let ranged = !select.range.is_all();
    let mut heads = Headers::default();
    while let Some(p) = reader.next_packet()? {
        inf.read.packets_read += 1;
        // A labelled block rather than `continue`: the progress call below, which needs the
        // reader again, is made for packets left out too (a range may leave out millions).
        'packet: {
            if ranged {
                let Some(ts) = p.ts_ns else {
                    inf.read.skipped_no_timestamp += 1;
                    break 'packet;
                };
                inf.read.saw(ts);
                if !select.range.contains(ts) {
                    inf.read.skipped_outside_range += 1;
                    break 'packet;
                }
            }
            if let Some(f) = select.filter {
                wire::decode_into(&mut heads, p.linktype, p.data, p.wire_len);
                if !f.matches(&heads, p.wire_len) {
                    inf.read.skipped_filtered += 1;
                    break 'packet;
                }
            }
            inf.packets += 1;
            inf.wire_bytes += p.wire_len as u64;
            inf.captured_bytes += p.data.len() as u64;
            inf.max_wire_len = inf.max_wire_len.max(p.wire_len);
            if (p.data.len() as u32) < p.wire_len {
                inf.snapped += 1;
            }
            let i = p.interface as usize;
            if inf.per_interface_packets.len() <= i {
                inf.per_interface_packets.resize(i + 1, 0);
                inf.per_interface_bytes.resize(i + 1, 0);
                mtu_cache.resize(i + 1, None);
            }
            inf.per_interface_packets[i] += 1;
            inf.per_interface_bytes[i] += p.wire_len as u64;
            // The check a scan of l1 makes ([`CaptureReader::check_fcs`]), on the same frames.
            fcs.see(&p);
            let mtu = *mtu_cache[i].get_or_insert_with(|| {
                wire::link_mtu_frame(p.linktype).map_or(u32::MAX, |m| m + 8)
            });
            if p.wire_len > mtu {
                inf.over_mtu_frames += 1;
            }
            if p.ts_ns.is_some() {
                inf.timed_wire_bytes += p.wire_len as u64;
            }
            match p.ts_ns {
                None => inf.packets_without_timestamp += 1,
                Some(t) => {
                    if inf.first_ns.is_none() {
                        inf.first_ns = Some(t);
                    }
                    inf.last_ns = Some(t);
                    inf.min_ns = Some(inf.min_ns.map_or(t, |m| m.min(t)));
                    inf.max_ns = Some(inf.max_ns.map_or(t, |m| m.max(t)));
                    if let Some(q) = prev {
                        if t < q {
                            inf.out_of_order += 1;
                            inf.max_step_back_ns = inf.max_step_back_ns.max(q.saturating_sub(t));
                        }
                    }
                    prev = Some(t);
                }
            }
        }
        if reader.tick() {
            progress(reader.looked())?;
        }
    }
    if ranged {
        // The reader hands out a timestamp outside int64 ns as none: its own count tells the
        // two reasons apart, as a table's accounting does.
        let n = reader
            .stats()
            .timestamps_out_of_range
            .min(inf.read.skipped_no_timestamp);
        inf.read.skipped_no_timestamp -= n;
        inf.read.skipped_timestamp_out_of_range += n;
    }
    inf.read.counted = inf.packets;
    inf.per_interface_packets.resize(
        reader
            .interfaces()
            .len()
            .max(inf.per_interface_packets.len()),
        0,
    );
    inf.per_interface_bytes
        .resize(inf.per_interface_packets.len(), 0);
    (inf.fcs_sampled, inf.fcs_valid) = (fcs.sampled, fcs.valid);
    inf.fcs_sampled.resize(inf.per_interface_packets.len(), 0);
    inf.fcs_valid.resize(inf.per_interface_packets.len(), 0);
    inf.warnings = reader.warnings().to_vec();
    progress(reader.consumed())?;
    Ok(inf)
}

#[cfg(test)]
mod tests {
    use super::{forward_only, l1_size};

    /// A pass that starts over is still told, with the count reached before, so that it keeps
    /// looking for interrupts (each call is where the Python binding does); counts never go back.
    #[test]
    fn progress_that_starts_over_is_still_called_and_never_goes_back() {
        let mut told = Vec::new();
        let mut record = |done: u64| -> crate::error::Result<()> {
            told.push(done);
            Ok(())
        };
        {
            let mut forward = forward_only(&mut record);
            for done in [10, 40, 100, 5, 60, 100, 120] {
                forward(done).unwrap();
            }
        }
        assert_eq!(told, [10, 40, 100, 100, 100, 100, 120]);
        // An error a call returns (an interrupt) stops the pass that started over too.
        let mut stop = |done: u64| -> crate::error::Result<()> {
            if done >= 100 {
                return Err(crate::error::Error::new(
                    crate::error::ErrorKind::Interrupted,
                    "interrupted",
                ));
            }
            Ok(())
        };
        let mut forward = forward_only(&mut stop);
        assert!(forward(100).is_err() && forward(3).is_err());
    }

    /// The second look for a late packet reads up to a whole file again: it calls progress as a
    /// scan does (the Python binding looks for Ctrl-C there), and stops on its error. Before,
    /// it took no progress and could not be interrupted.
    #[test]
    fn the_look_for_a_late_packet_calls_progress_and_stops_on_its_error() {
        use crate::capture::{CaptureReader, ReadOptions};
        use crate::error::{Error, ErrorKind};
        use crate::writer::{PcapOptions, PcapWriter};
        let options = PcapOptions {
            snaplen: 65535,
            ..Default::default()
        };
        let mut w = PcapWriter::new(Vec::new(), options).unwrap();
        let n: i64 = 3 * super::PROGRESS_EVERY as i64;
        for k in 0..n {
            w.write_packet(1_000 * k, 64, &[0u8; 64]).unwrap();
        }
        // 1 µs before the previous packet, with a horizon of 0.
        w.write_packet(1_000 * (n - 2), 64, &[0u8; 64]).unwrap();
        let bytes = w.finish().unwrap();
        // The late packet is the last record: 24-byte file header, 80 bytes per record.
        let late_at = 24 + 80 * n as u64;
        let reader = |bytes: &Vec<u8>| {
            let len = bytes.len() as u64;
            let input =
                crate::input::from_reader(Box::new(std::io::Cursor::new(bytes.clone())), Some(len))
                    .unwrap();
            CaptureReader::new(input, ReadOptions::default()).unwrap()
        };
        let all = crate::TimeRange::default();
        let mut told = Vec::new();
        let found = super::late_packet_offset(
            &mut reader(&bytes),
            super::SizeKind::Wire,
            0,
            all,
            None,
            &mut |done| {
                told.push(done);
                Ok(())
            },
        );
        assert_eq!(found, Ok(Some(late_at)));
        assert_eq!(told.len(), 3, "{told:?}");
        assert!(
            told.windows(2).all(|p| p[0] < p[1]) && told[2] < late_at,
            "{told:?}"
        );
        let mut calls = 0;
        let stopped = super::late_packet_offset(
            &mut reader(&bytes),
            super::SizeKind::Wire,
            0,
            all,
            None,
            &mut |_| {
                calls += 1;
                Err(Error::new(ErrorKind::Interrupted, "interrupted"))
            },
        );
        assert_eq!(stopped.map_err(|e| e.kind), Err(ErrorKind::Interrupted));
        assert_eq!(calls, 1);
    }

    /// Lengths at both ends of the u32 range (the fuzzer found a raw IP frame of 2^32 - 1 bytes
    /// overflowing the sum in u32), for links with a header of fixed length and for others.
    #[test]
    fn l1_sizes_at_the_ends_of_the_length_range() {
        let max = u64::from(u32::MAX);
        let (ethernet, raw_ip, sll, other) = (1, 101, 113, 147);
        assert_eq!(l1_size(raw_ip, u32::MAX), max + 14 + 24);
        assert_eq!(l1_size(sll, u32::MAX), max - 16 + 14 + 24);
        assert_eq!(l1_size(ethernet, u32::MAX), max + 24);
        assert_eq!(l1_size(other, u32::MAX), max + 24);
        assert_eq!(l1_size(sll, 3), 60 + 24);
        assert_eq!(l1_size(ethernet, 0), 60 + 24);
        assert_eq!(l1_size(other, 10), 10 + 24);
    }

    /// A capture that declares an interface after its first packets (here a second pcapng
    /// section) merged with another: each interface keeps one number, a capture's after all
    /// those of the captures before it, in a scan on one thread or two and in the analyses.
    /// Before, the second capture's interface took the number the first capture's late one
    /// would get, and moved up in mid-read: one group held two interfaces' packets.
    /// A reader of each capture in `files`, as a scan of several opens them.
    fn readers_of(files: &[Vec<u8>]) -> Vec<crate::capture::CaptureReader> {
        files
            .iter()
            .map(|b| {
                let input = crate::input::from_reader(
                    Box::new(std::io::Cursor::new(b.clone())),
                    Some(b.len() as u64),
                )
                .unwrap();
                crate::capture::CaptureReader::new(input, Default::default()).unwrap()
            })
            .collect()
    }

    #[test]
    fn an_interface_declared_late_keeps_its_number_among_several_captures() {
        use crate::capture::{ByteOrder, TsResolution};
        use crate::engine::{By, GroupKey, ScanConfig};
        use crate::writer::PcapNgWriter;
        const MS: i64 = 1_000_000;
        let file = |sections: &[&[i64]]| {
            let mut w = PcapNgWriter::new(Vec::new());
            for times in sections {
                w.section(ByteOrder::Little, None).unwrap();
                w.interface(1, 0, TsResolution::Pow10(9), 0, None).unwrap();
                for &t in *times {
                    w.enhanced_packet(0, t * MS, 60, &[0u8; 60]).unwrap();
                }
            }
            w.finish().unwrap()
        };
        let files = [
            file(&[&[1, 30, 60], &[90, 95]]),
            file(&[&[2, 40, 70, 80, 100, 110, 120]]),
        ];
        let readers = || readers_of(&files);
        // From the files as written: the first's two sections, then the second.
        let want = [(0u32, 3u64), (1, 2), (2, 7)];
        for horizon in [0, 10 * MS] {
            let config = ScanConfig {
                by: vec![By::Interface],
                windows_ns: vec![MS],
                reorder_horizon_ns: horizon,
                ..ScanConfig::default()
            };
            for threads in [1, 2] {
                let (out, _) = super::scan_threads(
                    &mut readers(),
                    config.clone(),
                    super::SizeKind::Wire,
                    threads,
                    &mut |_| Ok(()),
                )
                .unwrap();
                let got: Vec<(u32, u64)> = out
                    .groups
                    .iter()
                    .map(|g| match g.group {
                        GroupKey::Interface(i) => (i, g.packets),
                        other => panic!("{other:?}"),
                    })
                    .collect();
                assert_eq!(got, want, "scan, horizon {horizon}, {threads} threads");
                let windows: Vec<GroupKey> = out.envelope.iter().map(|r| r.group).collect();
                assert_eq!(
                    windows,
                    want.map(|(i, _)| GroupKey::Interface(i)),
                    "envelope rows in group order"
                );
            }
            let order = crate::analyze::OrderOptions {
                reorder_horizon_ns: horizon,
                ..Default::default()
            };
            let (h, _) = crate::analyze::histograms(
                &mut readers(),
                Some(By::Interface),
                10,
                order,
                &mut |_| Ok(()),
            )
            .unwrap();
            let mut got: Vec<(u32, u64)> = h
                .groups
                .iter()
                .map(|(k, (sizes, _))| match k {
                    GroupKey::Interface(i) => (*i, sizes.count_of(60)),
                    other => panic!("{other:?}"),
                })
                .collect();
            got.sort_unstable();
            assert_eq!(got, want, "histograms, horizon {horizon}");
        }
    }

    /// The late packet of a scan of several captures is found in the capture that holds it, at
    /// its offset: the first packet, in the scan's merge, more than the horizon behind the
    /// latest before it (here the second file's fourth record; the first file's step back is
    /// within the horizon).
    #[test]
    fn the_late_packet_among_several_captures_is_in_the_capture_that_holds_it() {
        use crate::writer::{PcapOptions, PcapWriter};
        let file = |times: &[i64]| {
            let options = PcapOptions {
                snaplen: 65535,
                ..Default::default()
            };
            let mut w = PcapWriter::new(Vec::new(), options).unwrap();
            for &t in times {
                w.write_packet(t, 64, &[0u8; 64]).unwrap();
            }
            w.finish().unwrap()
        };
        let files = [file(&[10, 20, 15, 40, 50]), file(&[5, 30, 60, 25, 70])];
        let readers = || readers_of(&files);
        let all = crate::TimeRange::default();
        let found = |horizon: i64| {
            super::late_packet_among(
                &mut readers(),
                super::SizeKind::Wire,
                horizon,
                all,
                &[None, None],
                &mut |_| Ok(()),
            )
            .unwrap()
        };
        // 24-byte file header, 80 bytes per record.
        assert_eq!(found(10), Some((1, 24 + 80 * 3)));
        assert_eq!(found(4), Some((0, 24 + 80 * 2)));
        assert_eq!(found(35), None);
    }
}
