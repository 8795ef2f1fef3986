//! Framing pcap and pcapng into packets with exact timestamps.
//! CONTRACT (filled in by the capture work): `CaptureReader` below is what the rest of the crate uses.

use crate::error::{Result, Warning};
use crate::input::Input;
use crate::packet::Packet;

/// Hard limits that turn hostile lengths into errors rather than allocations.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest pcapng block / pcap record accepted (bytes).
    pub max_block_len: u32,
    /// Most interfaces in one file.
    pub max_interfaces: u32,
    /// Most options in one block.
    pub max_options: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_block_len: 64 << 20,
            max_interfaces: 65_536,
            max_options: 4096,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Raise on a capture cut off mid-block instead of returning the packets before the cut
    /// and a warning.
    pub strict: bool,
    pub limits: Limits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap; `nanos` for the 0xa1b23c4d magic; `modified` for the Kuznetzov variant.
    Pcap {
        version: (u16, u16),
        byte_order: ByteOrder,
        nanos: bool,
        modified: bool,
    },
    PcapNg,
}

/// Timestamp resolution of an interface: units of 10^-n or 2^-n seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    Pow10(u8),
    Pow2(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub index: u32,
    pub offset: u64,
    pub byte_order: ByteOrder,
    pub version: (u16, u16),
    pub hardware: Option<String>,
    pub os: Option<String>,
    pub user_appl: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterfaceStats {
    /// Value of the last Interface Statistics Block for this interface, if any.
    pub isb_count: u32,
    pub if_recv: Option<u64>,
    pub if_drop: Option<u64>,
    pub os_drop: Option<u64>,
    pub fil_accept: Option<u64>,
    pub usr_deliv: Option<u64>,
    /// isb_starttime / isb_endtime in ns, if present.
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Global index (across sections), the `interface` of the packets.
    pub index: u32,
    pub section: u32,
    /// Index within its section (what the pcapng blocks refer to).
    pub local_id: u32,
    pub linktype: u16,
    /// 0 means no limit.
    pub snaplen: u32,
    pub resolution: TsResolution,
    /// if_tsoffset in seconds (signed).
    pub ts_offset_s: i64,
    pub name: Option<String>,
    pub description: Option<String>,
    pub stats: InterfaceStats,
}

/// Counters of everything the reader saw that is not a packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub sections: u32,
    pub blocks: u64,
    pub enhanced_packet_blocks: u64,
    pub simple_packet_blocks: u64,
    pub obsolete_packet_blocks: u64,
    pub name_resolution_blocks: u64,
    pub interface_statistics_blocks: u64,
    pub decryption_secrets_blocks: u64,
    pub custom_blocks: u64,
    pub unknown_blocks: u64,
    pub packets: u64,
}

/// Reads one capture, packet by packet, with bounded memory.
pub struct CaptureReader {
    _private: (),
}

impl CaptureReader {
    /// Sniff the format from the first bytes of `input` and prepare to read.
    pub fn new(input: Input, options: ReadOptions) -> Result<Self> {
        let _ = (input, options);
        todo!()
    }
    /// The next packet, `Ok(None)` at the end. After a non-strict truncated tail, `Ok(None)` and a
    /// warning in `warnings()`.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>> {
        todo!()
    }
    pub fn format(&self) -> &Format {
        todo!()
    }
    pub fn compression(&self) -> crate::input::Compression {
        todo!()
    }
    pub fn sections(&self) -> &[Section] {
        todo!()
    }
    pub fn interfaces(&self) -> &[Interface] {
        todo!()
    }
    pub fn stats(&self) -> &ReadStats {
        todo!()
    }
    pub fn warnings(&self) -> &[Warning] {
        todo!()
    }
    /// Decompressed bytes consumed so far.
    pub fn position(&self) -> u64 {
        todo!()
    }
}
