//! Writing pcap and pcapng, for tests, benchmarks and tools that need a capture.
//! CONTRACT (filled in by the capture work).

use crate::capture::{ByteOrder, InterfaceStats, TsResolution};
use crate::error::Result;
use std::io::Write;

#[derive(Debug, Clone, Copy)]
pub struct PcapOptions {
    pub byte_order: ByteOrder,
    pub nanos: bool,
    pub linktype: u16,
    pub snaplen: u32,
}

pub struct PcapWriter<W: Write> {
    _w: W,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(w: W, options: PcapOptions) -> Result<Self> {
        let _ = (w, options);
        todo!()
    }
    /// `ts_ns` must be representable at the file's resolution (µs files floor it).
    pub fn write_packet(&mut self, ts_ns: i64, wire_len: u32, data: &[u8]) -> Result<()> {
        let _ = (ts_ns, wire_len, data);
        todo!()
    }
    pub fn finish(self) -> Result<W> {
        todo!()
    }
}

pub struct PcapNgWriter<W: Write> {
    _w: W,
}

impl<W: Write> PcapNgWriter<W> {
    pub fn new(w: W) -> Self {
        let _ = w;
        todo!()
    }
    /// Start a section (every file needs one first); interfaces restart at 0.
    pub fn section(&mut self, byte_order: ByteOrder, user_appl: Option<&str>) -> Result<()> {
        let _ = (byte_order, user_appl);
        todo!()
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
        let _ = (linktype, snaplen, resolution, ts_offset_s, name);
        todo!()
    }
    /// Enhanced Packet Block with a raw timestamp in the interface's units.
    pub fn enhanced_packet_raw(
        &mut self,
        interface: u32,
        ts_raw: u64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let _ = (interface, ts_raw, wire_len, data);
        todo!()
    }
    /// Enhanced Packet Block from nanoseconds (converted to the interface's units, floored).
    pub fn enhanced_packet(
        &mut self,
        interface: u32,
        ts_ns: i64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let _ = (interface, ts_ns, wire_len, data);
        todo!()
    }
    pub fn simple_packet(&mut self, wire_len: u32, data: &[u8]) -> Result<()> {
        let _ = (wire_len, data);
        todo!()
    }
    pub fn obsolete_packet_raw(
        &mut self,
        interface: u16,
        ts_raw: u64,
        wire_len: u32,
        data: &[u8],
    ) -> Result<()> {
        let _ = (interface, ts_raw, wire_len, data);
        todo!()
    }
    pub fn name_resolution(&mut self, records: &[(std::net::IpAddr, &str)]) -> Result<()> {
        let _ = records;
        todo!()
    }
    pub fn interface_statistics(
        &mut self,
        interface: u32,
        ts_raw: u64,
        stats: &InterfaceStats,
    ) -> Result<()> {
        let _ = (interface, ts_raw, stats);
        todo!()
    }
    pub fn decryption_secrets(&mut self, secrets_type: u32, data: &[u8]) -> Result<()> {
        let _ = (secrets_type, data);
        todo!()
    }
    pub fn custom(&mut self, copyable: bool, pen: u32, data: &[u8]) -> Result<()> {
        let _ = (copyable, pen, data);
        todo!()
    }
    /// Any block type with the given body (padded to 4 bytes), for unknown-block tests.
    pub fn raw_block(&mut self, block_type: u32, body: &[u8]) -> Result<()> {
        let _ = (block_type, body);
        todo!()
    }
    pub fn finish(self) -> Result<W> {
        todo!()
    }
}
