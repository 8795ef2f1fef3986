//! pcapng: a sequence of blocks `type, length, body, length`, grouped in sections that each
//! start with a Section Header Block (with their own byte order and interface table).
//!
//! Every length is checked against the block that holds it before it is used. Blocks this reader
//! does not need (NRB, DSB, custom, systemd journal, unknown types) are skipped by their length.
//! An Enhanced Packet Block already whole in the buffer, that passes every check, takes a short
//! inline path (`fast_enhanced_packet`); anything else, including every error, goes through the
//! general framing, so offsets and messages do not depend on which path ran.
//!
//! Choices that follow tshark 4.0 (wiretap):
//! - SHB versions 1.0 and 1.2 are read; any other version is `UnsupportedVersion` at that SHB,
//!   after the packets of the earlier sections;
//! - an SPB's captured length is min(original length, snaplen of interface 0 when non-zero,
//!   bytes in the block), and it has no timestamp;
//! - `Packet::interface` is a global index over all sections (tshark 4.0's frame.interface_id
//!   is the section-local id, kept here as `Interface::local_id`);
//! - an IDB's first `if_tsresol` of 1 byte, first `if_fcslen` of 1 byte and first `if_tsoffset`
//!   of 8 bytes count; options of another size and repeats are ignored.

use super::bytes::{u16_at, u32_at, u64_at};
use super::chase::Layout;
use super::timestamp::TsConv;
use super::{
    ByteOrder, CaptureReader, Fill, Framed, Interface, InterfaceStats, Kind, Section, TsResolution,
};
use crate::error::{Error, ErrorKind, Limit, Result};

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const NRB: u32 = 4;
const ISB: u32 = 5;
const EPB: u32 = 6;
const DSB: u32 = 0x0A;
const CB: u32 = 0x0BAD;
const DCB: u32 = 0x4000_0BAD;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Per-interface values the hot path needs, parallel to `CaptureReader::interfaces`.
#[derive(Debug, Clone, Copy)]
struct Hot {
    linktype: u16,
    /// if_fcslen: bytes of FCS at the end of each frame (0 when not given).
    fcs_len: u8,
    snaplen: u32,
    ts: TsConv,
}

#[derive(Debug, Default)]
pub(super) struct State {
    big: bool,
    /// Global index of the current section's first interface.
    section_first: usize,
    hot: Vec<Hot>,
}

impl State {
    /// The current section's byte order is big-endian.
    pub(super) fn big(&self) -> bool {
        self.big
    }
}

/// Two 32-bit halves, high first, as pcapng stores timestamps.
fn ts_at(b: &[u8], i: usize, big: bool) -> u64 {
    (u64::from(u32_at(b, i, big)) << 32) | u64::from(u32_at(b, i + 4, big))
}

fn corrupt(offset: u64, reason: impl Into<String>) -> Error {
    Error::at(ErrorKind::Corrupt, offset, reason)
}

/// Longest text kept of a string option (a name, a description, the hardware, the OS, the
/// application): enough for any real one, while 65,536 interfaces with two 64 KiB strings each
/// would hold 8 GiB of a file a few hundred kB in zstd.
pub const MAX_TEXT: usize = 256;

/// A string option's text, trailing NULs off, at most [`MAX_TEXT`] bytes of it (cut on a
/// character boundary, with an ellipsis).
fn text(v: &[u8]) -> String {
    let end = v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    let whole = v.get(..end).unwrap_or(&[]);
    let kept = whole.get(..MAX_TEXT.min(whole.len())).unwrap_or(whole);
    let mut s = String::from_utf8_lossy(kept).into_owned();
    if kept.len() < whole.len() {
        // A character cut in two at the end came out as U+FFFD: drop it.
        if s.ends_with('\u{FFFD}') {
            s.pop();
        }
        s.push('…');
    }
    s
}

/// Walk the options of a block: `(code, value)` pairs, checked against the block.
fn options<'a>(
    body: &'a [u8],
    big: bool,
    offset: u64,
    max: u32,
    mut each: impl FnMut(u16, &'a [u8]) -> Result<()>,
) -> Result<()> {
    let mut rest = body;
    let mut count = 0u32;
    // Fewer than 4 bytes cannot hold an option header: treat as padding.
    while rest.len() >= 4 {
        let code = u16_at(rest, 0, big);
        let len = usize::from(u16_at(rest, 2, big));
        // Even the end of options may not claim more than its block holds (tshark: "Not
        // enough data to handle option").
        let value = rest.get(4..4 + len).ok_or_else(|| {
            corrupt(
                offset,
                format!("option {code} of length {len} overruns its block"),
            )
        })?;
        if code == 0 {
            break;
        }
        count += 1;
        if count > max {
            return Err(Error::limit_exceeded_at(
                Limit::Capture,
                offset,
                format!(
                    "block has more than {max} options (most likely a corrupt file; a Rust \
                     caller can raise ReadOptions::limits.max_options)"
                ),
            ));
        }
        let padded = (len + 3) & !3;
        each(code, value)?;
        rest = rest.get(4 + padded..).unwrap_or(&[]);
    }
    Ok(())
}

/// Frame blocks until a packet, the end, or (with `first`) the first section header.
#[inline]
pub(super) fn next(r: &mut CaptureReader, first: bool) -> Result<Option<Framed>> {
    if !first {
        // One copy of the fast path per byte order, chosen once a block: with the order a
        // constant, its eight fields are plain loads rather than a swap and a select each.
        let fast = match &r.kind {
            Kind::PcapNg(st) if st.big => fast_enhanced_packet::<true>(r),
            Kind::PcapNg(_) => fast_enhanced_packet::<false>(r),
            Kind::Pcap(_) => None,
        };
        if let Some(framed) = fast {
            return Ok(Some(framed));
        }
    }
    next_general(r, first)
}

/// The common case, framed without the general machinery: an Enhanced Packet Block that is
/// already whole in the buffer, passes every check `next_general` makes, names a declared
/// interface and has a timestamp on the 64-bit fast path. Anything else (including every
/// error) gives `None` with nothing changed, and `next_general` then frames the same block and
/// reports exactly what it always did.
#[inline(always)]
pub(super) fn fast_enhanced_packet<const BIG: bool>(r: &mut CaptureReader) -> Option<Framed> {
    let Kind::PcapNg(st) = &r.kind else {
        return None;
    };
    let big = BIG;
    let h = r.buf.bytes();
    // Type, length, interface, timestamp, captured and original lengths: 28 bytes, plus the
    // trailing length.
    let head: &[u8; 28] = h.get(..28)?.try_into().ok()?;
    if u32_at(head, 0, big) != EPB {
        return None;
    }
    let len = u32_at(head, 4, big) as usize;
    // Within the reader's limit, and short enough that its packet is within libpcap's common
    // maximum (`CaptureReader::check_record_len`, which the general path makes).
    let fast_max = (r.options.limits.max_block_len as usize)
        .min(32 + crate::wire::linktype::COMMON_MAX_RECORD as usize);
    if len < 32 || !len.is_multiple_of(4) || len > fast_max {
        return None;
    }
    let trailer = h.get(len - 4..len)?;
    if u32_at(trailer, 0, big) as usize != len {
        return None;
    }
    let caplen = u32_at(head, 20, big) as usize;
    if caplen > len - 32 {
        return None;
    }
    let local = u32_at(head, 8, big) as usize;
    let global = st.section_first.checked_add(local)?;
    let hot = st.hot.get(global)?;
    let ts_ns = hot.ts.to_ns(ts_at(head, 12, big));
    ts_ns?;
    let framed = Framed {
        ts_ns,
        interface: global as u32,
        linktype: hot.linktype,
        wire_len: u32_at(head, 24, big),
        fcs_len: hot.fcs_len,
        data_start: r.buf.start() + 28,
        data_end: r.buf.start() + 28 + caplen,
        offset: r.buf.position(),
    };
    r.stats.blocks += 1;
    r.stats.enhanced_packet_blocks += 1;
    r.buf.consume(len);
    Some(framed)
}

#[inline(never)]
fn next_general(r: &mut CaptureReader, first: bool) -> Result<Option<Framed>> {
    loop {
        let offset = r.buf.position();
        match r.fill(12)? {
            Fill::Ready => {}
            Fill::End => return r.end(),
            Fill::Cut => return r.cut(offset, "inside a block header"),
        }
        let h = r.buf.bytes();
        let big = match &r.kind {
            Kind::PcapNg(st) => st.big,
            Kind::Pcap(_) => return Ok(None),
        };
        let raw_type = u32_at(h, 0, big);
        // The SHB type is a palindrome; its byte-order magic sets the order of what follows.
        let big = if raw_type == SHB {
            match u32_at(h, 8, false) {
                BYTE_ORDER_MAGIC => false,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
                m => {
                    return Err(corrupt(
                        offset + 8,
                        format!("section header has an invalid byte-order magic 0x{m:08x}"),
                    ))
                }
            }
        } else {
            big
        };
        let len = u32_at(h, 4, big);
        if len < 12 || !len.is_multiple_of(4) {
            return Err(corrupt(
                offset,
                format!("pcapng block of type 0x{raw_type:x} has an invalid length {len} (must be a multiple of 4, at least 12)"),
            ));
        }
        let max = r.options.limits.max_block_len;
        if len > max {
            return Err(Error::limit_exceeded_at(
                Limit::Capture,
                offset,
                format!(
                    "pcapng block of {len} bytes is larger than the limit of {max} bytes (most \
                     likely a corrupt file; a Rust caller can raise \
                     ReadOptions::limits.max_block_len)"
                ),
            ));
        }
        let len = len as usize;
        match r.fill(len)? {
            Fill::Ready => {}
            Fill::End | Fill::Cut => {
                return r.cut(offset, &format!("inside a {len}-byte block"));
            }
        }
        let block_start = r.buf.start();
        let block = r.buf.bytes().get(..len).unwrap_or(&[]);
        let trailer = u32_at(block, len - 4, big);
        if trailer as usize != len {
            return Err(corrupt(
                offset,
                format!("pcapng block lengths differ (leading {len}, trailing {trailer})"),
            ));
        }
        r.stats.blocks += 1;
        let body_start = block_start + 8;
        let body_len = len - 12;
        let framed = match raw_type {
            EPB => enhanced_packet(r, offset, body_start, body_len, big)?,
            SPB => simple_packet(r, offset, body_start, body_len, big)?,
            OPB => obsolete_packet(r, offset, body_start, body_len, big)?,
            SHB => {
                section_header(r, offset, body_start, body_len, big)?;
                None
            }
            IDB => {
                interface_description(r, offset, body_start, body_len, big)?;
                None
            }
            ISB => {
                interface_statistics(r, offset, body_start, body_len, big)?;
                None
            }
            NRB => {
                r.stats.name_resolution_blocks += 1;
                None
            }
            DSB => {
                r.stats.decryption_secrets_blocks += 1;
                None
            }
            CB | DCB => {
                r.stats.custom_blocks += 1;
                None
            }
            _ => {
                r.stats.unknown_blocks += 1;
                None
            }
        };
        r.buf.consume(len);
        if let Some(f) = &framed {
            r.check_record_len(f);
        }
        if framed.is_some() || (first && raw_type == SHB) {
            return Ok(framed);
        }
    }
}

fn body(r: &CaptureReader, start: usize, len: usize) -> &[u8] {
    r.buf.storage().get(start..start + len).unwrap_or(&[])
}

fn too_short(offset: u64, what: &str, len: usize) -> Error {
    corrupt(
        offset,
        format!("{what} block is too short ({} bytes)", len + 12),
    )
}

/// Global index and hot values of the interface a `kind` block names (an SPB names none: it
/// belongs to interface 0).
#[inline]
fn interface_of(r: &CaptureReader, offset: u64, local: u32, kind: &str) -> Result<(u32, Hot)> {
    let st = match &r.kind {
        Kind::PcapNg(st) => st,
        Kind::Pcap(_) => return Err(corrupt(offset, "internal: not pcapng")),
    };
    let global = st.section_first.saturating_add(local as usize);
    match st.hot.get(global) {
        Some(hot) if (local as usize) < st.hot.len() - st.section_first => {
            Ok((global as u32, *hot))
        }
        _ => Err(undeclared(
            offset,
            local,
            st.hot.len().saturating_sub(st.section_first),
            kind,
        )),
    }
}

/// Interfaces are numbered afresh in each section (libpcap and tshark agree), so an id past the
/// section's IDBs is damage, or blocks lost before it, whatever earlier sections declared.
#[cold]
fn undeclared(offset: u64, local: u32, declared: usize, kind: &str) -> Error {
    let names = if kind == "simple packet" {
        // An SPB carries no interface id: the spec gives it to interface 0.
        "belongs to interface 0 (a simple packet block always does)".to_string()
    } else {
        format!("names interface {local}")
    };
    let declares = match declared {
        0 => "declares no interface before it".to_string(),
        1 => "declares only interface 0".to_string(),
        n => format!("declares only interfaces 0 to {}", n - 1),
    };
    Error::at(
        ErrorKind::UndeclaredInterface,
        offset,
        format!(
            "{kind} block {names}, but its section {declares}: the file is damaged, or \
             lost the block that declared it (an interface's description block must come \
             before its packets, in the same section)"
        ),
    )
}

/// Enhanced Packet Block: a 32-bit interface id.
#[inline]
fn enhanced_packet(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<Option<Framed>> {
    if len < 20 {
        return Err(too_short(offset, "enhanced packet", len));
    }
    let local = u32_at(body(r, start, len), 0, big);
    r.stats.enhanced_packet_blocks += 1;
    timed_packet(r, offset, start, len, big, local, "enhanced packet")
}

fn simple_packet(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<Option<Framed>> {
    let b = body(r, start, len);
    if len < 4 {
        return Err(too_short(offset, "simple packet", len));
    }
    let wire_len = u32_at(b, 0, big);
    r.stats.simple_packet_blocks += 1;
    let (interface, hot) = interface_of(r, offset, 0, "simple packet")?;
    let mut caplen = (wire_len as usize).min(len - 4);
    if hot.snaplen != 0 {
        caplen = caplen.min(hot.snaplen as usize);
    }
    Ok(Some(Framed {
        ts_ns: None,
        interface,
        linktype: hot.linktype,
        wire_len,
        fcs_len: hot.fcs_len,
        data_start: start + 4,
        data_end: start + 4 + caplen,
        offset,
    }))
}

/// The obsolete Packet Block: a 16-bit interface id (then a drops count), otherwise an EPB.
fn obsolete_packet(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<Option<Framed>> {
    if len < 20 {
        return Err(too_short(offset, "obsolete packet", len));
    }
    let local = u32::from(u16_at(body(r, start, len), 0, big));
    r.stats.obsolete_packet_blocks += 1;
    timed_packet(r, offset, start, len, big, local, "packet")
}

/// The layout EPB and the obsolete Packet Block share after the interface id: a 64-bit
/// timestamp, captured and original lengths, then the data.
#[inline]
fn timed_packet(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
    local: u32,
    kind: &str,
) -> Result<Option<Framed>> {
    let b = body(r, start, len);
    let raw_ts = ts_at(b, 4, big);
    let caplen = u32_at(b, 12, big);
    let wire_len = u32_at(b, 16, big);
    if caplen as usize > len - 20 {
        return Err(corrupt(
            offset,
            format!(
                "captured length {caplen} is larger than the {}-byte {kind} block",
                len + 12
            ),
        ));
    }
    let (interface, hot) = interface_of(r, offset, local, kind)?;
    let ts_ns = hot.ts.to_ns(raw_ts);
    if ts_ns.is_none() {
        r.timestamp_out_of_range(offset);
    }
    Ok(Some(Framed {
        ts_ns,
        interface,
        linktype: hot.linktype,
        wire_len,
        fcs_len: hot.fcs_len,
        data_start: start + 20,
        data_end: start + 20 + caplen as usize,
        offset,
    }))
}

fn section_header(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<()> {
    if len < 16 {
        return Err(too_short(offset, "section header", len));
    }
    if r.sections.len() >= r.options.limits.max_sections as usize {
        return Err(Error::limit_exceeded_at(
            Limit::Capture,
            offset,
            format!(
                "more than {} sections (most likely a corrupt or hostile file; a Rust caller can \
                 raise ReadOptions::limits.max_sections)",
                r.options.limits.max_sections
            ),
        ));
    }
    let b = body(r, start, len);
    let version = (u16_at(b, 4, big), u16_at(b, 6, big));
    if !(version == (1, 0) || version == (1, 2)) {
        return Err(Error::at(
            ErrorKind::UnsupportedVersion,
            offset,
            format!(
                "pcapng section version {}.{} is not supported (only 1.0, and 1.2 as written by \
                 some old tools)",
                version.0, version.1
            ),
        ));
    }
    let mut section = Section {
        index: r.sections.len() as u32,
        offset,
        byte_order: if big {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        },
        version,
        hardware: None,
        os: None,
        user_appl: None,
    };
    options(
        b.get(16..).unwrap_or(&[]),
        big,
        offset,
        r.options.limits.max_options,
        |code, v| {
            match code {
                2 => section.hardware = Some(text(v)),
                3 => section.os = Some(text(v)),
                4 => section.user_appl = Some(text(v)),
                _ => {}
            }
            Ok(())
        },
    )?;
    r.sections.push(section);
    r.stats.sections += 1;
    let first = r.interfaces.len();
    if let Kind::PcapNg(st) = &mut r.kind {
        st.big = big;
        st.section_first = first;
    }
    let max_block = r.options.limits.max_block_len;
    r.buf.set_layout(Layout::PcapNg { big }, max_block);
    Ok(())
}

fn interface_description(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<()> {
    if len < 8 {
        return Err(too_short(offset, "interface description", len));
    }
    if r.interfaces.len() >= r.options.limits.max_interfaces as usize {
        return Err(Error::limit_exceeded_at(
            Limit::Capture,
            offset,
            format!(
                "more than {} interfaces (most likely a corrupt file; a Rust caller can raise \
                 ReadOptions::limits.max_interfaces)",
                r.options.limits.max_interfaces
            ),
        ));
    }
    let b = body(r, start, len);
    let linktype = u16_at(b, 0, big);
    let snaplen = u32_at(b, 4, big);
    // As tshark 4.0 (wiretap) reads them: the first option of the size the specification gives
    // (if_tsresol 1 byte, if_tsoffset 8) counts; one of another size, or a repeat, is ignored.
    // Taking any size, or the last, put every time of such a file 1000x or 100 s from tshark's.
    let mut resolution = None;
    let mut ts_offset_s = None;
    let mut fcs_len = None;
    let mut name = None;
    let mut description = None;
    options(
        b.get(8..).unwrap_or(&[]),
        big,
        offset,
        r.options.limits.max_options,
        |code, v| {
            match code {
                2 => name = Some(text(v)),
                3 => description = Some(text(v)),
                9 => {
                    if let (&[t], None) = (v, resolution) {
                        resolution = Some(if t & 0x80 != 0 {
                            TsResolution::Pow2(t & 0x7f)
                        } else {
                            TsResolution::Pow10(t)
                        });
                    }
                }
                14 if v.len() == 8 && ts_offset_s.is_none() => {
                    ts_offset_s = Some(u64_at(v, 0, big) as i64);
                }
                13 if v.len() == 1 && fcs_len.is_none() => fcs_len = Some(v[0]),
                _ => {}
            }
            Ok(())
        },
    )?;
    let resolution = resolution.unwrap_or(TsResolution::Pow10(6));
    let ts_offset_s = ts_offset_s.unwrap_or(0);
    let ts = TsConv::new(resolution, ts_offset_s).ok_or_else(|| {
        corrupt(
            offset,
            format!("interface timestamp resolution {resolution} s (if_tsresol) is finer than this reader supports (1e-19 s, 2^-63 s): the option is damaged, or the file was written by a tool that needs fixing"),
        )
    })?;
    let section = r.sections.len().saturating_sub(1) as u32;
    let fcs_len = fcs_len.unwrap_or(0);
    let (index, local_id) = match &mut r.kind {
        Kind::PcapNg(st) => {
            st.hot.push(Hot {
                linktype,
                fcs_len,
                snaplen,
                ts,
            });
            (st.hot.len() - 1, st.hot.len() - 1 - st.section_first)
        }
        Kind::Pcap(_) => return Ok(()),
    };
    r.interfaces.push(Interface {
        index: index as u32,
        section,
        local_id: local_id as u32,
        linktype,
        fcs_len,
        snaplen,
        resolution,
        ts_offset_s,
        name,
        description,
        stats: InterfaceStats::default(),
    });
    Ok(())
}

fn interface_statistics(
    r: &mut CaptureReader,
    offset: u64,
    start: usize,
    len: usize,
    big: bool,
) -> Result<()> {
    if len < 12 {
        return Err(too_short(offset, "interface statistics", len));
    }
    r.stats.interface_statistics_blocks += 1;
    let b = body(r, start, len);
    let local = u32_at(b, 0, big);
    // Statistics for an undeclared interface are not packets: skip them rather than fail.
    let Ok((global, hot)) = interface_of(r, offset, local, "interface statistics") else {
        return Ok(());
    };
    let mut stats = r
        .interfaces
        .get(global as usize)
        .map(|i| i.stats.clone())
        .unwrap_or_default();
    stats.isb_count = stats.isb_count.saturating_add(1);
    let b = body(r, start, len);
    options(
        b.get(12..).unwrap_or(&[]),
        big,
        offset,
        r.options.limits.max_options,
        |code, v| {
            let counter = (v.len() >= 8).then(|| u64_at(v, 0, big));
            match code {
                2 if v.len() >= 8 => stats.start_ns = hot.ts.to_ns(ts_at(v, 0, big)),
                3 if v.len() >= 8 => stats.end_ns = hot.ts.to_ns(ts_at(v, 0, big)),
                4 => stats.if_recv = counter,
                5 => stats.if_drop = counter,
                6 => stats.fil_accept = counter,
                7 => stats.os_drop = counter,
                8 => stats.usr_deliv = counter,
                _ => {}
            }
            Ok(())
        },
    )?;
    if let Some(i) = r.interfaces.get_mut(global as usize) {
        i.stats = stats;
    }
    Ok(())
}
