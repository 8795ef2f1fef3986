//! Classic pcap: a 24-byte file header, then records of a 16-byte header (24 bytes in the
//! "modified"/Kuznetzov variant) and the captured bytes.
//!
//! Odd cases follow tshark 4.0 (wiretap):
//! - the seconds field is unsigned (files up to 2106 read correctly);
//! - the sub-second field is not range-checked: wiretap computes nanoseconds in 32-bit C
//!   arithmetic (`usec * 1000` wraps modulo 2^32, then the value is a signed int) and adds it to
//!   the seconds. We reproduce that so both tools agree on these garbage fields;
//! - caplen > snaplen and caplen > orig_len are accepted as they are;
//! - major version < 2 is unsupported; any 2.x is read; the link-type field's reserved bits
//!   (0x03FF0000) must be zero; the FCS bits give each packet's `fcs_len` (tshark then shows
//!   the frame's last bytes as `eth.fcs`), and take no part in framing; thiszone is ignored.

use super::bytes::{u16_at, u32_at};
use super::chase::Layout;
use super::{
    ByteOrder, CaptureReader, Fill, Format, Framed, Interface, InterfaceStats, Kind, TsResolution,
};
use crate::error::{Error, ErrorKind, Limit, Result};

const FILE_HEADER_LEN: usize = 24;
const RESERVED_LINKTYPE_BITS: u32 = 0x03FF_0000;

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct State {
    big: bool,
    nanos: bool,
    record_header_len: usize,
    linktype: u16,
    fcs_len: u8,
    /// The longest record (header included) `next` frames itself: within the reader's limit
    /// and libpcap's common maximum, so that the fast path needs no check of the latter.
    fast_total: u64,
}

/// Read the file header. `Ok(false)` when a non-strict read found it cut short.
pub(super) fn start(r: &mut CaptureReader, big: bool, nanos: bool, modified: bool) -> Result<bool> {
    match r.fill(FILE_HEADER_LEN)? {
        Fill::Ready => {}
        Fill::End | Fill::Cut => {
            r.cut(0, "inside the 24-byte pcap file header")?;
            return Ok(false);
        }
    }
    let h = r.buf.bytes();
    let version = (u16_at(h, 4, big), u16_at(h, 6, big));
    let snaplen = u32_at(h, 16, big);
    let network = u32_at(h, 20, big);
    if version.0 < 2 {
        return Err(Error::at(
            ErrorKind::UnsupportedVersion,
            4,
            format!(
                "pcap major version {} is not supported (only 2.x)",
                version.0
            ),
        ));
    }
    if network & RESERVED_LINKTYPE_BITS != 0 {
        return Err(Error::at(
            ErrorKind::UnsupportedVersion,
            20,
            format!(
                "pcap link-type field 0x{network:08x} has reserved bits set (0x{:08x}); \
                 written by an unknown pcap variant",
                network & RESERVED_LINKTYPE_BITS
            ),
        ));
    }
    let linktype = (network & 0xFFFF) as u16;
    // libpcap's LT_FCS_LENGTH_PRESENT / LT_FCS_LENGTH: the top four bits count 16-bit words of FCS.
    let fcs_len = if network & 0x0400_0000 != 0 {
        ((network >> 28) * 2) as u8
    } else {
        0
    };
    let byte_order = if big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    r.format = Some(Format::Pcap {
        version,
        byte_order,
        nanos,
        modified,
    });
    r.interfaces.push(Interface {
        index: 0,
        section: 0,
        local_id: 0,
        linktype,
        fcs_len,
        snaplen,
        resolution: TsResolution::Pow10(if nanos { 9 } else { 6 }),
        ts_offset_s: 0,
        name: None,
        description: None,
        stats: InterfaceStats::default(),
    });
    let header = if modified { 24 } else { 16 };
    r.kind = Kind::Pcap(State {
        big,
        nanos,
        record_header_len: header,
        linktype,
        fcs_len,
        fast_total: u64::from(r.options.limits.max_block_len)
            .min(header as u64 + u64::from(crate::wire::linktype::COMMON_MAX_RECORD)),
    });
    let layout = Layout::Pcap { big, header, nanos };
    r.buf.set_layout(layout, r.options.limits.max_block_len);
    r.buf.consume(FILE_HEADER_LEN);
    Ok(true)
}

#[inline]
pub(super) fn next(r: &mut CaptureReader) -> Result<Option<Framed>> {
    let st = match r.kind {
        Kind::Pcap(st) => st,
        Kind::PcapNg(_) => return Ok(None),
    };
    if let Some(framed) = fast_record(r, st) {
        return Ok(Some(framed));
    }
    next_general(r, st)
}

/// The common case: the whole record is already in the buffer and within the limit. Anything
/// else gives `None` with nothing changed, and `next_general` then reads more, warns or fails
/// with the right offset.
#[inline(always)]
pub(super) fn fast_record(r: &mut CaptureReader, st: State) -> Option<Framed> {
    let h = r.buf.bytes();
    let head: &[u8; 16] = h.get(..16)?.try_into().ok()?;
    let caplen = u32_at(head, 8, st.big);
    let total = st.record_header_len as u64 + u64::from(caplen);
    if total > st.fast_total || total > h.len() as u64 {
        return None;
    }
    let framed = Framed {
        ts_ns: Some(ts_ns(st, u32_at(head, 0, st.big), u32_at(head, 4, st.big))),
        interface: 0,
        linktype: st.linktype,
        wire_len: u32_at(head, 12, st.big),
        fcs_len: st.fcs_len,
        data_start: r.buf.start() + st.record_header_len,
        data_end: r.buf.start() + total as usize,
        offset: r.buf.position(),
    };
    r.buf.consume(total as usize);
    Some(framed)
}

/// Wiretap's 32-bit arithmetic, see the module comment.
#[inline(always)]
fn ts_ns(st: State, secs: u32, sub: u32) -> i64 {
    let nsecs = if st.nanos {
        sub as i32
    } else {
        sub.wrapping_mul(1000) as i32
    };
    i64::from(secs) * 1_000_000_000 + i64::from(nsecs)
}

#[inline(never)]
fn next_general(r: &mut CaptureReader, st: State) -> Result<Option<Framed>> {
    let hlen = st.record_header_len;
    let offset = r.buf.position();
    match r.fill(hlen)? {
        Fill::Ready => {}
        Fill::End => return r.end(),
        Fill::Cut => return r.cut(offset, &format!("inside a {hlen}-byte record header")),
    }
    let h = r.buf.bytes();
    let secs = u32_at(h, 0, st.big);
    let sub = u32_at(h, 4, st.big);
    let caplen = u32_at(h, 8, st.big);
    let wire_len = u32_at(h, 12, st.big);
    let total = hlen as u64 + u64::from(caplen);
    if total > u64::from(r.options.limits.max_block_len) {
        return Err(Error::limit_exceeded_at(
            Limit::Capture,
            offset,
            format!(
                "pcap record of {caplen} captured bytes is larger than the limit of {} bytes \
                 (most likely a corrupt file; a Rust caller can raise \
                 ReadOptions::limits.max_block_len)",
                r.options.limits.max_block_len
            ),
        ));
    }
    let total = total as usize;
    match r.fill(total)? {
        Fill::Ready => {}
        Fill::End | Fill::Cut => return r.cut(offset, &format!("inside a {total}-byte record")),
    }
    let ts_ns = ts_ns(st, secs, sub);
    let data_start = r.buf.start() + hlen;
    r.buf.consume(total);
    let framed = Framed {
        ts_ns: Some(ts_ns),
        interface: 0,
        linktype: st.linktype,
        wire_len,
        fcs_len: st.fcs_len,
        data_start,
        data_end: data_start + caplen as usize,
        offset,
    };
    r.check_record_len(&framed);
    Ok(Some(framed))
}
