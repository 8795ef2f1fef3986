//! pcapng: a sequence of blocks `type | total length | body (padded to 4) | total length`.
//!
//! Every section starts with a Section Header Block that fixes the byte order of all that follows
//! until the next one; interfaces are numbered from 0 within their section. The writer keeps that
//! state so that it can convert timestamps per interface and refuse blocks that a reader would have
//! to reject (a packet of an undeclared interface, a block before any section).

use super::endian::{pad4, put_u16, put_u32, put_u64, u16_bytes, u32_bytes};
use super::pcap::{check_max_record, check_snaplen};
use super::timestamp::{ns_to_raw, tsresol_byte};
use super::Sink;
use crate::capture::{ByteOrder, InterfaceStats, TsResolution};
use crate::error::{Error, Result};
use std::io::Write;
use std::net::IpAddr;

mod block {
    pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
    pub const INTERFACE_DESCRIPTION: u32 = 0x0000_0001;
    pub const OBSOLETE_PACKET: u32 = 0x0000_0002;
    pub const SIMPLE_PACKET: u32 = 0x0000_0003;
    pub const NAME_RESOLUTION: u32 = 0x0000_0004;
    pub const INTERFACE_STATISTICS: u32 = 0x0000_0005;
    pub const ENHANCED_PACKET: u32 = 0x0000_0006;
    pub const DECRYPTION_SECRETS: u32 = 0x0000_000A;
    pub const CUSTOM_COPYABLE: u32 = 0x0000_0BAD;
    pub const CUSTOM_NOT_COPYABLE: u32 = 0x4000_0BAD;
}

mod opt {
    pub const END_OF_OPT: u16 = 0;
    pub const SHB_USERAPPL: u16 = 4;
    pub const IF_NAME: u16 = 2;
    pub const IF_TSRESOL: u16 = 9;
    pub const IF_FCSLEN: u16 = 13;
    pub const IF_TSOFFSET: u16 = 14;
    pub const ISB_STARTTIME: u16 = 2;
    pub const ISB_ENDTIME: u16 = 3;
    pub const ISB_IFRECV: u16 = 4;
    pub const ISB_IFDROP: u16 = 5;
    pub const ISB_FILTERACCEPT: u16 = 6;
    pub const ISB_OSDROP: u16 = 7;
    pub const ISB_USRDELIV: u16 = 8;
}

const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const NRB_IPV4: u16 = 1;
const NRB_IPV6: u16 = 2;

/// Block type, total length, and the trailing total length.
const BLOCK_OVERHEAD: usize = 12;

#[derive(Debug, Clone, Copy)]
struct InterfaceState {
    resolution: TsResolution,
    ts_offset_s: i64,
    snaplen: u32,
    linktype: u16,
}

#[derive(Debug)]
struct SectionState {
    order: ByteOrder,
    interfaces: Vec<InterfaceState>,
}

/// Writes pcapng to `W`: sections, interfaces and packets in the order asked, each block
/// checked; [`PcapNgWriter::finish`] flushes and hands `W` back.
pub struct PcapNgWriter<W: Write> {
    w: Sink<W>,
    section: Option<SectionState>,
    /// Body of the block being built, for blocks with options (never packet data).
    scratch: Vec<u8>,
    /// Packets past libpcap's maximum for their link type may be written
    /// ([`PcapNgWriter::allow_oversized_records`]).
    oversized_ok: bool,
}

/// The open section and the bytes written, for any sink (a sink need not be `Debug`).
impl<W: Write> std::fmt::Debug for PcapNgWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapNgWriter")
            .field("section", &self.section)
            .field("written", &self.w.written)
            .finish_non_exhaustive()
    }
}

impl<W: Write> PcapNgWriter<W> {
    /// A writer with nothing written yet: start with a section.
    pub fn new(w: W) -> Self {
        PcapNgWriter {
            w: Sink::new(w),
            section: None,
            scratch: Vec::with_capacity(256),
            oversized_ok: false,
        }
    }

    /// Write packets longer than libpcap takes for their interface's link type
    /// ([`crate::wire::linktype::libpcap_max_record`]: 262,144 bytes for Ethernet and raw IP,
    /// whatever the snaplen), which the packet blocks otherwise refuse: tcpdump stops reading the
    /// file at such a block and tshark refuses it, while burstcore reads it with a warning. For a
    /// file meant for burstcore (or another reader that takes them) alone.
    pub fn allow_oversized_records(&mut self, allow: bool) {
        self.oversized_ok = allow;
    }

    /// Start a section (every file needs one first); interfaces restart at 0.
    pub fn section(&mut self, byte_order: ByteOrder, user_appl: Option<&str>) -> Result<()> {
        let o = byte_order;
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        put_u32(&mut body, o, BYTE_ORDER_MAGIC);
        put_u16(&mut body, o, 1);
        put_u16(&mut body, o, 0);
        // Section length unknown: the writer streams.
        put_u64(&mut body, o, u64::MAX);
        let mut options = Options::new(&mut body, o);
        if let Some(appl) = user_appl {
            options.string(opt::SHB_USERAPPL, "user_appl", appl)?;
        }
        options.end();
        let written = write_block(&mut self.w, o, block::SECTION_HEADER, &[&body]);
        self.scratch = body;
        written?;
        self.section = Some(SectionState {
            order: o,
            interfaces: Vec::new(),
        });
        Ok(())
    }

    /// Declare an interface; returns its id within the section.
    pub fn interface(
        &mut self,
        linktype: u16,
        snaplen: u32,
        resolution: TsResolution,
        ts_offset_s: i64,
        name: Option<&str>,
    ) -> Result<u32> {
        self.interface_with_fcs(linktype, snaplen, resolution, ts_offset_s, name, 0)
    }

    /// [`PcapNgWriter::interface`] whose frames each end with `fcs_len` bytes of FCS, declared
    /// as its `if_fcslen` option (in bytes, as tshark and libpcap read it; 0 writes none, the
    /// norm). The packets given must hold it.
    pub fn interface_with_fcs(
        &mut self,
        linktype: u16,
        snaplen: u32,
        resolution: TsResolution,
        ts_offset_s: i64,
        name: Option<&str>,
        fcs_len: u8,
    ) -> Result<u32> {
        let section = current(&mut self.section)?;
        let o = section.order;
        let id = u32::try_from(section.interfaces.len())
            .map_err(|_| Error::invalid("too many interfaces in one section"))?;
        let tsresol = tsresol_byte(resolution)?;
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        put_u16(&mut body, o, linktype);
        put_u16(&mut body, o, 0); // reserved
        put_u32(&mut body, o, snaplen);
        let mut options = Options::new(&mut body, o);
        if let Some(name) = name {
            options.string(opt::IF_NAME, "name", name)?;
        }
        if resolution != TsResolution::Pow10(6) {
            options.bytes(opt::IF_TSRESOL, &[tsresol])?;
        }
        if fcs_len != 0 {
            options.bytes(opt::IF_FCSLEN, &[fcs_len])?;
        }
        if ts_offset_s != 0 {
            // if_tsoffset is a signed 64-bit count of seconds: the bit pattern is the i64's.
            options.u64(opt::IF_TSOFFSET, ts_offset_s as u64);
        }
        options.end();
        let written = write_block(&mut self.w, o, block::INTERFACE_DESCRIPTION, &[&body]);
        self.scratch = body;
        written?;
        section.interfaces.push(InterfaceState {
            resolution,
            ts_offset_s,
            snaplen,
            linktype,
        });
        Ok(id)
    }

    /// Enhanced Packet Block with a raw timestamp in the interface's units.
    pub fn enhanced_packet_raw(
        &mut self,
        interface: u32,
        ts_raw: u64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let section = current(&mut self.section)?;
        let iface = declared(section, interface)?;
        let o = section.order;
        let cap_len = captured_len(wire_len, data)?;
        check_snaplen(cap_len, iface.snaplen, Some(interface))?;
        check_max_record(cap_len, iface.linktype, self.oversized_ok)?;
        let mut fixed = [0u8; 20];
        fixed[0..4].copy_from_slice(&u32_bytes(o, interface));
        fixed[4..8].copy_from_slice(&u32_bytes(o, (ts_raw >> 32) as u32));
        fixed[8..12].copy_from_slice(&u32_bytes(o, ts_raw as u32));
        fixed[12..16].copy_from_slice(&u32_bytes(o, cap_len));
        fixed[16..20].copy_from_slice(&u32_bytes(o, wire_len));
        write_block(
            &mut self.w,
            o,
            block::ENHANCED_PACKET,
            &[&fixed, data, pad4(data.len())],
        )
    }

    /// Enhanced Packet Block from nanoseconds, converted to the interface's units: floored, except
    /// that the first tick that reads back as exactly `ts_ns` is preferred when there is one (so
    /// that the reader gives `ts_ns` back whenever a tick can hold it, with units finer than 1 ns
    /// too); an error if before the offset or beyond u64 ticks.
    pub fn enhanced_packet(
        &mut self,
        interface: u32,
        ts_ns: i64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let ts_raw = self.raw_ticks(interface, ts_ns)?;
        self.enhanced_packet_raw(interface, ts_raw, wire_len, data)
    }

    /// Simple Packet Block. It has no interface field and no captured length: readers take
    /// interface 0 and `min(wire_len, snaplen of interface 0)`, so the section must have declared
    /// interface 0 and `data` must be exactly that long, or the file would read back differently.
    pub fn simple_packet(&mut self, wire_len: u32, data: &[u8]) -> Result<()> {
        let section = current(&mut self.section)?;
        let first = declared(section, 0)?;
        let o = section.order;
        let cap_len = captured_len(wire_len, data)?;
        let implied = match first.snaplen {
            0 => wire_len,
            snaplen => wire_len.min(snaplen),
        };
        if cap_len != implied {
            return Err(Error::invalid(format!(
                "a simple packet of wire length {wire_len} on an interface with snaplen {} reads back as {implied} captured bytes, not {cap_len}",
                first.snaplen
            )));
        }
        check_max_record(cap_len, first.linktype, self.oversized_ok)?;
        write_block(
            &mut self.w,
            o,
            block::SIMPLE_PACKET,
            &[&u32_bytes(o, wire_len), data, pad4(data.len())],
        )
    }

    /// Obsolete Packet Block (type 2), with the drops count unknown (0xFFFF).
    pub fn obsolete_packet_raw(
        &mut self,
        interface: u16,
        ts_raw: u64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let section = current(&mut self.section)?;
        let iface = declared(section, u32::from(interface))?;
        let o = section.order;
        let cap_len = captured_len(wire_len, data)?;
        check_snaplen(cap_len, iface.snaplen, Some(u32::from(interface)))?;
        check_max_record(cap_len, iface.linktype, self.oversized_ok)?;
        let mut fixed = [0u8; 20];
        fixed[0..2].copy_from_slice(&u16_bytes(o, interface));
        fixed[2..4].copy_from_slice(&u16_bytes(o, 0xFFFF));
        fixed[4..8].copy_from_slice(&u32_bytes(o, (ts_raw >> 32) as u32));
        fixed[8..12].copy_from_slice(&u32_bytes(o, ts_raw as u32));
        fixed[12..16].copy_from_slice(&u32_bytes(o, cap_len));
        fixed[16..20].copy_from_slice(&u32_bytes(o, wire_len));
        write_block(
            &mut self.w,
            o,
            block::OBSOLETE_PACKET,
            &[&fixed, data, pad4(data.len())],
        )
    }

    /// Name Resolution Block: one record per (address, name), then the end record.
    pub fn name_resolution(&mut self, records: &[(IpAddr, &str)]) -> Result<()> {
        let section = current(&mut self.section)?;
        let o = section.order;
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        let built = nrb_body(&mut body, o, records);
        let written =
            built.and_then(|()| write_block(&mut self.w, o, block::NAME_RESOLUTION, &[&body]));
        self.scratch = body;
        written
    }

    /// Interface Statistics Block at `ts_raw` (interface units). The counters present in `stats`
    /// become options; `start_ns` / `end_ns` are converted to the interface's units.
    /// `isb_count` is the reader's bookkeeping and is not written.
    pub fn interface_statistics(
        &mut self,
        interface: u32,
        ts_raw: u64,
        stats: &InterfaceStats,
    ) -> Result<()> {
        let section = current(&mut self.section)?;
        let iface = declared(section, interface)?;
        let o = section.order;
        let raw = |ns: i64| ns_to_raw(ns, iface.resolution, iface.ts_offset_s);
        let start = stats.start_ns.map(raw).transpose()?;
        let end = stats.end_ns.map(raw).transpose()?;
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        put_u32(&mut body, o, interface);
        put_u32(&mut body, o, (ts_raw >> 32) as u32);
        put_u32(&mut body, o, ts_raw as u32);
        let mut options = Options::new(&mut body, o);
        for (code, value) in [(opt::ISB_STARTTIME, start), (opt::ISB_ENDTIME, end)] {
            if let Some(v) = value {
                // Timestamps are stored like the packet blocks' ones: high word, then low word.
                let mut halves = [0u8; 8];
                halves[0..4].copy_from_slice(&u32_bytes(o, (v >> 32) as u32));
                halves[4..8].copy_from_slice(&u32_bytes(o, v as u32));
                options.bytes(code, &halves)?;
            }
        }
        let counters = [
            (opt::ISB_IFRECV, stats.if_recv),
            (opt::ISB_IFDROP, stats.if_drop),
            (opt::ISB_FILTERACCEPT, stats.fil_accept),
            (opt::ISB_OSDROP, stats.os_drop),
            (opt::ISB_USRDELIV, stats.usr_deliv),
        ];
        for (code, value) in counters {
            if let Some(v) = value {
                options.u64(code, v);
            }
        }
        options.end();
        let written = write_block(&mut self.w, o, block::INTERFACE_STATISTICS, &[&body]);
        self.scratch = body;
        written
    }

    /// Decryption Secrets Block (type 0x0A) with the secrets padded to 4 bytes and no options.
    pub fn decryption_secrets(&mut self, secrets_type: u32, data: &[u8]) -> Result<()> {
        let section = current(&mut self.section)?;
        let o = section.order;
        let len = u32::try_from(data.len())
            .map_err(|_| Error::invalid("decryption secrets longer than 4 GiB"))?;
        let mut fixed = [0u8; 8];
        fixed[0..4].copy_from_slice(&u32_bytes(o, secrets_type));
        fixed[4..8].copy_from_slice(&u32_bytes(o, len));
        write_block(
            &mut self.w,
            o,
            block::DECRYPTION_SECRETS,
            &[&fixed, data, pad4(data.len())],
        )
    }

    /// Custom Block (0xBAD if copyable, 0x40000BAD if not) with a Private Enterprise Number.
    pub fn custom(&mut self, copyable: bool, pen: u32, data: &[u8]) -> Result<()> {
        let section = current(&mut self.section)?;
        let o = section.order;
        let block_type = if copyable {
            block::CUSTOM_COPYABLE
        } else {
            block::CUSTOM_NOT_COPYABLE
        };
        write_block(
            &mut self.w,
            o,
            block_type,
            &[&u32_bytes(o, pen), data, pad4(data.len())],
        )
    }

    /// Any block type with the given body (padded to 4 bytes), for unknown-block tests.
    /// Unchecked: a raw SHB or IDB is written but not tracked, so it is the caller's business to
    /// keep the file consistent after one.
    pub fn raw_block(&mut self, block_type: u32, body: &[u8]) -> Result<()> {
        let section = current(&mut self.section)?;
        let o = section.order;
        write_block(&mut self.w, o, block_type, &[body, pad4(body.len())])
    }

    /// The sink, e.g. to see how much has been written through a counting wrapper.
    pub fn get_ref(&self) -> &W {
        &self.w.w
    }

    /// Flush the sink and hand it back (an error says so, as dropping the writer would not).
    pub fn finish(self) -> Result<W> {
        self.w.finish()
    }

    fn raw_ticks(&mut self, interface: u32, ts_ns: i64) -> Result<u64> {
        let section = current(&mut self.section)?;
        let iface = declared(section, interface)?;
        ns_to_raw(ts_ns, iface.resolution, iface.ts_offset_s)
    }
}

fn current(section: &mut Option<SectionState>) -> Result<&mut SectionState> {
    section.as_mut().ok_or_else(|| {
        Error::invalid(
            "a pcapng block was written before the first section header: start with \
                 section(), then interface(), then the packets",
        )
    })
}

fn declared(section: &SectionState, interface: u32) -> Result<InterfaceState> {
    usize::try_from(interface)
        .ok()
        .and_then(|i| section.interfaces.get(i))
        .copied()
        .ok_or_else(|| {
            Error::invalid(format!(
                "interface {interface} was not declared in this section ({} declared)",
                section.interfaces.len()
            ))
        })
}

fn captured_len(wire_len: u32, data: &[u8]) -> Result<u32> {
    let cap_len = u32::try_from(data.len()).map_err(|_| {
        Error::invalid(format!(
            "packet of {} bytes does not fit a pcapng block",
            data.len()
        ))
    })?;
    if wire_len < cap_len {
        return Err(Error::invalid(format!(
            "wire length {wire_len} is smaller than the captured length {cap_len}"
        )));
    }
    Ok(cap_len)
}

/// Write one block whose body is the concatenation of `parts` (already padded by the caller).
fn write_block<W: Write>(
    w: &mut Sink<W>,
    o: ByteOrder,
    block_type: u32,
    parts: &[&[u8]],
) -> Result<()> {
    let body_len: usize = parts.iter().map(|p| p.len()).sum();
    let total = body_len
        .checked_add(BLOCK_OVERHEAD)
        .and_then(|t| u32::try_from(t).ok())
        .ok_or_else(|| {
            Error::invalid(format!(
                "block body of {body_len} bytes exceeds the 32-bit block length"
            ))
        })?;
    debug_assert_eq!(total % 4, 0);
    let mut head = [0u8; 8];
    head[0..4].copy_from_slice(&u32_bytes(o, block_type));
    head[4..8].copy_from_slice(&u32_bytes(o, total));
    w.put(&head)?;
    for part in parts {
        w.put(part)?;
    }
    w.put(&u32_bytes(o, total))?;
    Ok(())
}

fn nrb_body(body: &mut Vec<u8>, o: ByteOrder, records: &[(IpAddr, &str)]) -> Result<()> {
    for (addr, name) in records {
        // Each name is zero-terminated: a NUL inside would end it for every reader.
        no_nul(&format!("the name of {addr}"), name)?;
        let v4;
        let v6;
        let (kind, octets): (u16, &[u8]) = match addr {
            IpAddr::V4(a) => {
                v4 = a.octets();
                (NRB_IPV4, &v4)
            }
            IpAddr::V6(a) => {
                v6 = a.octets();
                (NRB_IPV6, &v6)
            }
        };
        let value_len = octets.len() + name.len() + 1;
        let value_len16 = u16::try_from(value_len).map_err(|_| {
            Error::invalid(format!("name record for {addr} is longer than 65535 bytes"))
        })?;
        put_u16(body, o, kind);
        put_u16(body, o, value_len16);
        body.extend_from_slice(octets);
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(pad4(value_len));
    }
    // nrb_record_end
    put_u16(body, o, 0);
    put_u16(body, o, 0);
    Ok(())
}

/// Whether `value` can be written as the string option given as the argument `arg` (the pcapng
/// specification's strings: UTF-8, which a `&str` is, not zero-terminated, and at most the 65535
/// bytes of an option's length). The writer checks it itself; a caller that writes other blocks
/// first (a section header before an interface) can check up front, so that a refused string
/// leaves nothing written.
pub fn check_string_option(arg: &str, value: &str) -> Result<()> {
    no_nul(arg, value)?;
    if value.len() > usize::from(u16::MAX) {
        return Err(Error::invalid(format!(
            "{arg} is {} bytes in UTF-8, more than the 65535 a pcapng option holds: shorten it",
            value.len()
        )));
    }
    Ok(())
}

/// A NUL in a string refused: tshark, capinfos and libpcap take strings as C strings, so they
/// would end it there (burstcore reads all of it), and a name record's string is zero-terminated
/// by the specification. `what` names the string, shown with its value when that is short.
fn no_nul(what: &str, value: &str) -> Result<()> {
    let Some(at) = value.bytes().position(|b| b == 0) else {
        return Ok(());
    };
    let shown = if value.len() <= 64 {
        format!("{what}={value:?}")
    } else {
        what.to_string()
    };
    Err(Error::invalid(format!(
        "{shown} has a NUL character at byte {at}, where tshark and capinfos would end it: \
         leave the NUL out"
    )))
}

/// Options of one block, appended to its body; `end` writes opt_endofopt after the last one
/// (a block without options has no option list at all, as the specification allows).
struct Options<'a> {
    body: &'a mut Vec<u8>,
    order: ByteOrder,
    any: bool,
}

impl<'a> Options<'a> {
    fn new(body: &'a mut Vec<u8>, order: ByteOrder) -> Self {
        Options {
            body,
            order,
            any: false,
        }
    }

    fn bytes(&mut self, code: u16, value: &[u8]) -> Result<()> {
        let len = u16::try_from(value.len())
            .map_err(|_| Error::invalid(format!("option {code} is longer than 65535 bytes")))?;
        self.any = true;
        put_u16(self.body, self.order, code);
        put_u16(self.body, self.order, len);
        self.body.extend_from_slice(value);
        self.body.extend_from_slice(pad4(value.len()));
        Ok(())
    }

    /// A string option, checked by [`check_string_option`] as the argument `arg`.
    fn string(&mut self, code: u16, arg: &str, value: &str) -> Result<()> {
        check_string_option(arg, value)?;
        self.bytes(code, value.as_bytes())
    }

    fn u64(&mut self, code: u16, value: u64) {
        self.any = true;
        put_u16(self.body, self.order, code);
        put_u16(self.body, self.order, 8);
        put_u64(self.body, self.order, value);
    }

    fn end(self) {
        if !self.any {
            return;
        }
        put_u16(self.body, self.order, opt::END_OF_OPT);
        put_u16(self.body, self.order, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// if_fcslen (code 13, one byte) is written only when there is an FCS, and read back as
    /// the packets' `fcs_len`.
    #[test]
    fn if_fcslen_declares_the_fcs_of_an_interface() {
        use crate::capture::{CaptureReader, ReadOptions};
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(ByteOrder::Big, None).unwrap();
        w.interface_with_fcs(1, 0, TsResolution::Pow10(6), 0, None, 4)
            .unwrap();
        w.interface(1, 0, TsResolution::Pow10(6), 0, None).unwrap();
        w.enhanced_packet(0, 0, 64, &[0; 64]).unwrap();
        w.enhanced_packet(1, 0, 64, &[0; 64]).unwrap();
        let bytes = w.finish().unwrap();
        // The first IDB (after the 28-byte SHB): linktype, snaplen, if_fcslen 4, end of options.
        #[rustfmt::skip]
        let idb: &[u8] = &[
            0, 0, 0, 1, 0, 0, 0, 32, 0, 1, 0, 0, 0, 0, 0, 0,
            0, 13, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32,
        ];
        assert_eq!(&bytes[28..60], idb);
        let input = crate::input::from_reader(Box::new(std::io::Cursor::new(bytes)), None).unwrap();
        let mut r = CaptureReader::new(input, ReadOptions::default()).unwrap();
        let mut kept = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            kept.push((p.interface, p.fcs_len));
        }
        assert_eq!(kept, [(0, 4), (1, 0)]);
    }

    /// Blocks laid out by hand from draft-ietf-opsawg-pcapng (big-endian, so the bytes read as
    /// the field values), not from this writer.
    #[test]
    fn block_layouts_follow_the_spec() {
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(ByteOrder::Big, Some("ab")).unwrap();
        w.interface(1, 96, TsResolution::Pow10(9), -2, Some("e"))
            .unwrap();
        let stats = InterfaceStats {
            if_drop: Some(7),
            end_ns: Some(-1_000_000_000),
            ..Default::default()
        };
        w.interface_statistics(0, 0x1_0000_0002, &stats).unwrap();
        w.enhanced_packet(0, -1_999_999_999, 3, &[9, 8]).unwrap();
        let bytes = w.finish().unwrap();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            // SHB: type, length 40, magic, 1.0, section length -1, shb_userappl "ab", end, length
            &[0x0A, 0x0D, 0x0D, 0x0A, 0, 0, 0, 40, 0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0][..],
            &[0xFF; 8], &[0, 4, 0, 2, b'a', b'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 40],
            // IDB: linktype 1, reserved, snaplen 96, if_name "e", if_tsresol 9, if_tsoffset -2
            &[0, 0, 0, 1, 0, 0, 0, 52, 0, 1, 0, 0, 0, 0, 0, 96],
            &[0, 2, 0, 1, b'e', 0, 0, 0, 0, 9, 0, 1, 9, 0, 0, 0],
            &[0, 14, 0, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 0, 0, 0, 0, 52],
            // ISB: interface 0, ts high 1 low 2, isb_endtime 10^9 ticks after the offset, isb_ifdrop 7
            &[0, 0, 0, 5, 0, 0, 0, 52, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2],
            &[0, 3, 0, 8, 0, 0, 0, 0, 0x3B, 0x9A, 0xCA, 0x00],
            &[0, 5, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 52],
            // EPB: interface 0, ts 1 tick after the offset, caplen 2, wire 3, data padded
            &[0, 0, 0, 6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            &[0, 0, 0, 2, 0, 0, 0, 3, 9, 8, 0, 0, 0, 0, 0, 36],
        ]
        .concat();
        assert_eq!(bytes, expected);
    }

    #[test]
    fn little_endian_name_records_and_custom_blocks() {
        let mut w = PcapNgWriter::new(Vec::new());
        w.section(ByteOrder::Little, None).unwrap();
        w.name_resolution(&[([10, 0, 0, 1].into(), "h")]).unwrap();
        w.custom(false, 32473, &[1]).unwrap();
        let bytes = w.finish().unwrap();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x0A, 0x0D, 0x0D, 0x0A, 28, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0][..],
            &[0xFF; 8], &[28, 0, 0, 0],
            // NRB: IPv4 record of 6 bytes (address, "h", NUL) padded to 8, then the end record
            &[4, 0, 0, 0, 28, 0, 0, 0, 1, 0, 6, 0, 10, 0, 0, 1, b'h', 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0],
            // non-copyable custom block: PEN, data padded
            &[0xAD, 0x0B, 0, 0x40, 20, 0, 0, 0, 0xD9, 0x7E, 0, 0, 1, 0, 0, 0, 20, 0, 0, 0],
        ]
        .concat();
        assert_eq!(bytes, expected);
    }

    /// tshark and capinfos show a string option up to its first NUL ("a" of "a\0b"), burstcore
    /// all of it: the writer wrote both without a word. A refused string leaves nothing written.
    #[test]
    fn string_options_are_refused_where_readers_would_cut_them() {
        let mut w = PcapNgWriter::new(Vec::new());
        let e = w.section(ByteOrder::Little, Some("a\0b")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert_eq!(
            e.to_string(),
            r#"user_appl="a\0b" has a NUL character at byte 1, where tshark and capinfos would end it: leave the NUL out"#
        );
        w.section(ByteOrder::Little, Some("")).unwrap();
        let e = w
            .interface(1, 0, TsResolution::Pow10(6), 0, Some("eth0\0"))
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with(r#"name="eth0\0" has a NUL character at byte 4"#),
            "{e}"
        );
        // The option length is 16 bits: 65535 bytes of UTF-8 fit, one more does not.
        let long = "é".repeat(32767) + "x";
        assert_eq!(long.len(), 65535);
        w.interface(1, 0, TsResolution::Pow10(6), 0, Some(&long))
            .unwrap();
        let e = w
            .interface(1, 0, TsResolution::Pow10(6), 0, Some(&(long + "y")))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "name is 65536 bytes in UTF-8, more than the 65535 a pcapng option holds: shorten it"
        );
        let bytes = w.finish().unwrap();
        // One section header of 28 bytes plus the empty user_appl's 4 and opt_endofopt's 4, and one
        // interface of 20 bytes plus its name option (4 + 65535 + 1 of padding) and opt_endofopt.
        assert_eq!(bytes.len(), 36 + 20 + 65540 + 4);
    }

    #[test]
    fn refuses_what_a_reader_would_reject() {
        let invalid = |r: Result<()>| assert_eq!(r.unwrap_err().kind, ErrorKind::InvalidArgument);
        let mut w = PcapNgWriter::new(Vec::new());
        invalid(w.enhanced_packet_raw(0, 0, 0, &[]));
        invalid(w.custom(true, 1, &[]));
        invalid(w.raw_block(0x101, &[]));
        assert!(w.interface(1, 0, TsResolution::Pow10(6), 0, None).is_err());
        w.section(ByteOrder::Little, None).unwrap();
        invalid(w.simple_packet(4, &[0; 4])); // no interface 0 yet
        w.interface(1, 8, TsResolution::Pow10(3), 5, None).unwrap();
        invalid(w.enhanced_packet_raw(1, 0, 4, &[0; 4]));
        invalid(w.obsolete_packet_raw(1, 0, 4, &[0; 4]));
        invalid(w.interface_statistics(1, 0, &InterfaceStats::default()));
        invalid(w.enhanced_packet(0, 4_999_999_999, 4, &[0; 4])); // before the offset
        invalid(w.enhanced_packet(0, 0, 3, &[0; 4])); // wire shorter than captured
        invalid(w.simple_packet(10, &[0; 10])); // reads back as 8 captured bytes

        // Past the snaplen of 8: libpcap refuses such a block ("bigger than snaplen"), while
        // tshark and burstcore read all of it.
        let e = w.enhanced_packet_raw(0, 0, 10, &[0; 9]).unwrap_err();
        assert!(
            e.to_string()
                .contains("9 captured bytes are more than interface 0's snaplen of 8"),
            "{e}"
        );
        invalid(w.obsolete_packet_raw(0, 0, 10, &[0; 9]));
        w.enhanced_packet_raw(0, 0, 10, &[0; 8]).unwrap();
        w.simple_packet(10, &[0; 8]).unwrap();
        invalid(w.name_resolution(&[([1, 2, 3, 4].into(), "a\0b")]));
        let isb = InterfaceStats {
            start_ns: Some(0),
            ..Default::default()
        };
        invalid(w.interface_statistics(0, 0, &isb));
        // a new section forgets the interfaces of the last one
        w.section(ByteOrder::Big, None).unwrap();
        invalid(w.enhanced_packet_raw(0, 0, 4, &[0; 4]));
    }
}
