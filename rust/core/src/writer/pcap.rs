//! Classic pcap: a 24-byte file header, then a 16-byte record header before each packet.

use super::endian::u32_bytes;
use super::Sink;
use crate::capture::ByteOrder;
use crate::error::{Error, Result};
use std::io::Write;

const MAGIC_MICROS: u32 = 0xA1B2_C3D4;
const MAGIC_NANOS: u32 = 0xA1B2_3C4D;

/// The file header of a pcap: how every record is written.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PcapOptions {
    /// The byte order of every field (a reader takes either).
    pub byte_order: ByteOrder,
    /// Nanosecond timestamps (the 0xa1b23c4d magic); microseconds otherwise, which floor them.
    pub nanos: bool,
    /// The link type of every packet (1: Ethernet; see [`crate::wire::linktype`]).
    pub linktype: u16,
    /// 0: no limit. Every reader takes it: libpcap as its largest snaplen for the link type
    /// (262144 for Ethernet), tshark and capinfos as "not set".
    pub snaplen: u32,
    /// Bytes of FCS that end each frame, declared in the link-type field's FCS bits (libpcap's
    /// `LT_FCS_DATALINK_EXT`: a flag, and the length in 16-bit words in the top four bits), as
    /// a switch or tap capture that keeps the FCS writes them: 0 (none, the norm) or an even
    /// count up to 30. The writer declares it; the packets given must hold it.
    pub fcs_len: u8,
}

crate::builders!([] PcapOptions {
    byte_order: ByteOrder => with_byte_order,
    nanos: bool => with_nanos,
    linktype: u16 => with_linktype,
    snaplen: u32 => with_snaplen,
    fcs_len: u8 => with_fcs_len,
});

/// Little-endian, ns timestamps (the exact ones), Ethernet, and tcpdump's default snaplen of
/// 262,144: what a capture of today's tools looks like, so callers name only what differs.
impl Default for PcapOptions {
    fn default() -> Self {
        PcapOptions {
            byte_order: ByteOrder::Little,
            nanos: true,
            linktype: 1,
            snaplen: 262_144,
            fcs_len: 0,
        }
    }
}

/// The link-type field's bits that declare `fcs_len` bytes of FCS: none for 0, else the flag
/// (0x04000000) and the length in 16-bit words in bits 28 to 31, all that field can say.
fn fcs_bits(fcs_len: u8) -> Result<u32> {
    match fcs_len {
        0 => Ok(0),
        n if n % 2 == 0 && n <= 30 => Ok(0x0400_0000 | (u32::from(n / 2) << 28)),
        n => Err(Error::invalid(format!(
            "fcs_len={n}: a pcap header declares an FCS in 16-bit words, up to 15 of them: \
             give 0 (none) or an even length up to 30 bytes (Ethernet's FCS is 4)"
        ))),
    }
}

/// Writes a classic pcap to `W`: the file header at once, then a record per
/// [`PcapWriter::write_packet`]; [`PcapWriter::finish`] flushes and hands `W` back.
pub struct PcapWriter<W: Write> {
    w: Sink<W>,
    order: ByteOrder,
    nanos: bool,
    snaplen: u32,
    linktype: u16,
    /// Records past libpcap's maximum for the link type may be written
    /// ([`PcapWriter::allow_oversized_records`]).
    oversized_ok: bool,
}

/// The file's settings and the bytes written, for any sink (a sink need not be `Debug`).
impl<W: Write> std::fmt::Debug for PcapWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapWriter")
            .field("byte_order", &self.order)
            .field("nanos", &self.nanos)
            .field("snaplen", &self.snaplen)
            .field("linktype", &self.linktype)
            .field("written", &self.w.written)
            .finish_non_exhaustive()
    }
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header (version 2.4, thiszone and sigfigs 0).
    pub fn new(w: W, options: PcapOptions) -> Result<Self> {
        let order = options.byte_order;
        let magic = if options.nanos {
            MAGIC_NANOS
        } else {
            MAGIC_MICROS
        };
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&u32_bytes(order, magic));
        let version = match order {
            ByteOrder::Little => [2, 0, 4, 0],
            ByteOrder::Big => [0, 2, 0, 4],
        };
        header[4..8].copy_from_slice(&version);
        // bytes 8..16: thiszone and sigfigs, always 0 in practice
        header[16..20].copy_from_slice(&u32_bytes(order, options.snaplen));
        let network = u32::from(options.linktype) | fcs_bits(options.fcs_len)?;
        header[20..24].copy_from_slice(&u32_bytes(order, network));
        let mut w = Sink::new(w);
        w.put(&header)?;
        Ok(PcapWriter {
            w,
            order,
            nanos: options.nanos,
            snaplen: options.snaplen,
            linktype: options.linktype,
            oversized_ok: false,
        })
    }

    /// Write records longer than libpcap takes for the file's link type
    /// ([`crate::wire::linktype::libpcap_max_record`]: 262,144 bytes for Ethernet and raw IP,
    /// whatever the snaplen), which `write_packet` otherwise refuses: tcpdump stops reading the
    /// file at such a record and tshark refuses it, while burstcore reads it with a warning. For
    /// a file meant for burstcore (or another reader that takes them) alone.
    pub fn allow_oversized_records(&mut self, allow: bool) {
        self.oversized_ok = allow;
    }

    /// `ts_ns` must be representable at the file's resolution (µs files floor it).
    /// `data.len()` is the captured length; `wire_len` may not be smaller, and the snaplen (unless
    /// 0) may not be either: libpcap cuts such a record to the snaplen, so tcpdump would read
    /// fewer bytes than tshark and burstcore. Nor may it be longer than libpcap takes for the link
    /// type (unless [`PcapWriter::allow_oversized_records`]): tcpdump and tshark would refuse
    /// the file there.
    pub fn write_packet(&mut self, ts_ns: i64, wire_len: u32, data: &[u8]) -> Result<()> {
        let cap_len = u32::try_from(data.len()).map_err(|_| {
            Error::invalid(format!(
                "packet of {} bytes does not fit a pcap record",
                data.len()
            ))
        })?;
        if wire_len < cap_len {
            return Err(Error::invalid(format!(
                "wire length {wire_len} is smaller than the captured length {cap_len}"
            )));
        }
        check_snaplen(cap_len, self.snaplen, None)?;
        check_max_record(cap_len, self.linktype, self.oversized_ok)?;
        if ts_ns < 0 {
            return Err(Error::invalid(format!(
                "timestamp {ts_ns} ns is before 1970, which pcap cannot hold"
            )));
        }
        let secs = u32::try_from(ts_ns / 1_000_000_000).map_err(|_| {
            Error::invalid(format!(
                "timestamp {ts_ns} ns is beyond the 32-bit seconds of pcap"
            ))
        })?;
        let sub_ns = (ts_ns % 1_000_000_000) as u32; // in 0..10^9: ts_ns is non-negative
        let frac = if self.nanos { sub_ns } else { sub_ns / 1000 };
        let o = self.order;
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&u32_bytes(o, secs));
        header[4..8].copy_from_slice(&u32_bytes(o, frac));
        header[8..12].copy_from_slice(&u32_bytes(o, cap_len));
        header[12..16].copy_from_slice(&u32_bytes(o, wire_len));
        self.w.put(&header)?;
        self.w.put(data)?;
        Ok(())
    }

    /// The sink, e.g. to see how much has been written through a counting wrapper.
    pub fn get_ref(&self) -> &W {
        &self.w.w
    }

    /// Flush the sink and hand it back (a `BufWriter`'s last bytes reach the file here: an
    /// error says so, as dropping the writer would not).
    pub fn finish(self) -> Result<W> {
        self.w.finish()
    }
}

/// The captured bytes of a record must fit its snaplen (0: no limit): the file's (pcap), or its
/// pcapng `interface`'s.
pub(super) fn check_snaplen(cap_len: u32, snaplen: u32, interface: Option<u32>) -> Result<()> {
    if snaplen != 0 && cap_len > snaplen {
        let whose = match interface {
            Some(i) => format!("interface {i}'s"),
            None => "the file's".to_string(),
        };
        return Err(Error::invalid(format!(
            "{cap_len} captured bytes are more than {whose} snaplen of {snaplen}: cut the data \
             to the snaplen (the wire length keeps the packet's size) or declare a larger \
             snaplen (0: none)"
        )));
    }
    Ok(())
}

/// The captured bytes of a record must be no more than libpcap takes for its link type, unless
/// `allowed`: tcpdump would stop reading the file at it and tshark refuse the file.
pub(super) fn check_max_record(cap_len: u32, linktype: u16, allowed: bool) -> Result<()> {
    let max = crate::wire::linktype::libpcap_max_record(linktype);
    if cap_len > max && !allowed {
        return Err(Error::invalid(format!(
            "{cap_len} captured bytes are more than the {max} libpcap takes in a record of link \
             type {linktype}, whatever the snaplen: tcpdump would stop reading the file there and \
             tshark refuse it; cut the data to {max} bytes (the wire length keeps the packet's \
             size), or allow_oversized_records for a file only burstcore (which reads it with a \
             warning) is to read"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected bytes written out from the layout in the pcap specification
    /// (draft-ietf-opsawg-pcap), not from this writer.
    #[test]
    fn header_and_record_layout() {
        let opts = PcapOptions {
            byte_order: ByteOrder::Big,
            nanos: false,
            linktype: 1,
            snaplen: 65535,
            fcs_len: 0,
        };
        let mut w = PcapWriter::new(Vec::new(), opts).unwrap();
        w.write_packet(1_000_000_001_999, 60, &[0xAA, 0xBB])
            .unwrap();
        let bytes = w.finish().unwrap();
        let expected: Vec<u8> = [
            &[
                0xA1, 0xB2, 0xC3, 0xD4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0,
                0, 1,
            ][..],
            &[
                0, 0, 0x03, 0xE8, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 60, 0xAA, 0xBB,
            ][..],
        ]
        .concat();
        assert_eq!(bytes, expected);
    }

    #[test]
    fn rejects_what_pcap_cannot_hold() {
        let opts = PcapOptions {
            byte_order: ByteOrder::Little,
            nanos: true,
            linktype: 1,
            snaplen: 0,
            fcs_len: 0,
        };
        let mut w = PcapWriter::new(Vec::new(), opts).unwrap();
        let kind = |r: Result<()>| r.unwrap_err().kind;
        use crate::error::ErrorKind::InvalidArgument;
        assert_eq!(kind(w.write_packet(-1, 10, &[])), InvalidArgument);
        assert_eq!(
            kind(w.write_packet((1 << 32) * 1_000_000_000, 10, &[])),
            InvalidArgument
        );
        assert_eq!(kind(w.write_packet(0, 1, &[1, 2])), InvalidArgument);
        assert!(w
            .write_packet(((1 << 32) - 1) * 1_000_000_000 + 999_999_999, 2, &[1, 2])
            .is_ok());
        // More captured bytes than the snaplen: libpcap would cut the record to 4 bytes.
        let mut w = PcapWriter::new(Vec::new(), PcapOptions { snaplen: 4, ..opts }).unwrap();
        let e = w.write_packet(0, 10, &[0; 5]).unwrap_err();
        assert_eq!(e.kind, InvalidArgument);
        assert!(
            e.to_string()
                .contains("5 captured bytes are more than the file's snaplen of 4"),
            "{e}"
        );
        assert!(w.write_packet(0, 10, &[0; 4]).is_ok());
    }

    /// The FCS bits of the link-type field: libpcap's layout (flag 0x04000000, length in 16-bit
    /// words in bits 28 to 31), and the reader's `fcs_len` agrees; what the field cannot say is
    /// refused before anything is written.
    #[test]
    fn fcs_len_is_declared_in_the_link_type_fields_fcs_bits() {
        use crate::capture::{CaptureReader, ReadOptions};
        for (fcs_len, field) in [
            (0u8, 1u32),
            (4, 0x2400_0001),
            (2, 0x1400_0001),
            (30, 0xF400_0001),
        ] {
            let opts = PcapOptions {
                fcs_len,
                ..PcapOptions::default()
            };
            let mut w = PcapWriter::new(Vec::new(), opts).unwrap();
            w.write_packet(0, 64, &[0; 64]).unwrap();
            let bytes = w.finish().unwrap();
            assert_eq!(bytes[20..24], field.to_le_bytes(), "fcs_len {fcs_len}");
            let input =
                crate::input::from_reader(Box::new(std::io::Cursor::new(bytes)), None).unwrap();
            let mut r = CaptureReader::new(input, ReadOptions::default()).unwrap();
            let p = r.next_packet().unwrap().expect("a packet");
            assert_eq!((p.linktype, p.fcs_len), (1, fcs_len));
        }
        for odd in [1u8, 3, 32, 255] {
            let opts = PcapOptions {
                fcs_len: odd,
                ..PcapOptions::default()
            };
            let e = PcapWriter::new(Vec::new(), opts).expect_err("refused");
            assert!(e.to_string().contains(&format!("fcs_len={odd}")), "{e}");
        }
    }

    /// libpcap's maximum is per link type and ignores the snaplen: a record past it is refused
    /// unless allowed, and read back whole with one warning at the first such record.
    #[test]
    fn records_past_libpcaps_maximum_are_refused_unless_allowed() {
        use crate::capture::{CaptureReader, ReadOptions};
        use crate::error::ErrorKind::{InvalidArgument, OversizedRecord};
        let opts = |linktype| PcapOptions {
            linktype,
            snaplen: 0,
            ..PcapOptions::default()
        };
        for (linktype, max) in [(1u16, 262_144usize), (101, 262_144), (249, 1 << 20)] {
            let mut w = PcapWriter::new(Vec::new(), opts(linktype)).unwrap();
            assert!(w.write_packet(0, max as u32, &vec![0; max]).is_ok());
            let e = w.write_packet(0, max as u32 + 1, &vec![0; max + 1]);
            assert_eq!(e.unwrap_err().kind, InvalidArgument);
        }
        let mut w = PcapWriter::new(Vec::new(), opts(1)).unwrap();
        w.allow_oversized_records(true);
        for (k, n) in [60usize, 262_145, 300_000, 60].into_iter().enumerate() {
            w.write_packet(k as i64, n as u32, &vec![0; n]).unwrap();
        }
        let bytes = w.finish().unwrap();
        let input = crate::input::from_reader(Box::new(std::io::Cursor::new(bytes)), None).unwrap();
        let mut r = CaptureReader::new(input, ReadOptions::default()).unwrap();
        let mut lens = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            lens.push(p.data.len());
        }
        assert_eq!(lens, [60, 262_145, 300_000, 60]);
        assert_eq!(r.stats().oversized_records, 2);
        let w = r.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(
            (w[0].kind, w[0].offset),
            (OversizedRecord, Some(24 + 16 + 60))
        );
    }
}
