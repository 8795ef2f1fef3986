//! The record that flows from the capture readers to everything else.

/// One packet as framed by a capture reader. Borrowed from the reader's buffer: valid until the
/// next call to `next_packet`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Packet<'a> {
    /// Nanoseconds since the Unix epoch (UTC), with the interface's resolution and offset applied;
    /// `None` for blocks that carry no timestamp (pcapng Simple Packet Block).
    pub ts_ns: Option<i64>,
    /// Global interface index: interfaces are numbered across all sections of a file in the order
    /// their descriptions appear (a classic pcap file has exactly one, index 0).
    pub interface: u32,
    /// LINKTYPE_* value of the interface.
    pub linktype: u16,
    /// Length of the packet on the wire (pcap `orig_len`, pcapng original packet length).
    pub wire_len: u32,
    /// Bytes of frame check sequence the capture says end each frame (pcapng `if_fcslen`, the
    /// FCS bits of a pcap header's link type; 0 when it says nothing, which is the norm): the
    /// `"l1"` size must not count that FCS twice.
    pub fcs_len: u8,
    /// The captured bytes; the captured length is `data.len()`.
    pub data: &'a [u8],
    /// Byte offset of the record's first byte in the (decompressed) input.
    pub offset: u64,
}

impl Packet<'_> {
    /// Captured bytes: the length of `data` (at most the record's, never the wire's).
    pub fn cap_len(&self) -> u32 {
        self.data.len() as u32
    }
}

/// The stretch of time a scan or an analysis reads: packets at or after `start_ns` and before
/// `end_ns` (half-open, as windows are), the others skipped and counted
/// ([`crate::pipeline::Accounting::skipped_outside_range`]). The default is all of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    /// The first instant read, ns since the epoch (`None`: from the first packet).
    pub start_ns: Option<i64>,
    /// The first instant not read (`None`: to the last packet).
    pub end_ns: Option<i64>,
}

impl TimeRange {
    /// All of time, the default: no packet left out.
    pub const ALL: TimeRange = TimeRange {
        start_ns: None,
        end_ns: None,
    };

    /// Whether an instant is in the range.
    #[inline]
    pub fn contains(&self, ts_ns: i64) -> bool {
        self.start_ns.is_none_or(|s| ts_ns >= s) && self.end_ns.is_none_or(|e| ts_ns < e)
    }

    /// Whether the range is all of time ([`TimeRange::ALL`]).
    pub fn is_all(&self) -> bool {
        *self == Self::ALL
    }

    /// An `InvalidArgument` error when the range holds no instant (its start at or after its
    /// end): refused alike by a scan, the analyses and a table read, rather than read as empty.
    pub(crate) fn check(&self) -> crate::error::Result<()> {
        match (self.start_ns, self.end_ns) {
            (Some(s), Some(e)) if s >= e => Err(crate::Error::invalid(format!(
                "the time range's start ({s} ns) must be before its end ({e} ns)"
            ))),
            _ => Ok(()),
        }
    }
}

impl Default for TimeRange {
    fn default() -> Self {
        Self::ALL
    }
}
