//! Writing pcap and pcapng, for tests, benchmarks and tools that need a capture.
//!
//! - [`PcapWriter`]: classic pcap (µs or ns magic, either byte order);
//! - [`PcapNgWriter`]: pcapng with every block type the reader knows, several sections of either
//!   byte order, interfaces of any resolution and signed offset;
//! - [`frames`]: Ethernet/IPv4/TCP frames with valid headers, to fill packets with;
//! - `synth` (hidden, not API): a deterministic model of distributed-training traffic, shared by
//!   tests, benches and the `gen_training` example.
//!
//! The writers check what they are asked to write (a file they produce is always well formed), and
//! write each record with a few `write_all` calls and no allocation per packet: wrap the sink in a
//! `BufWriter` for speed.

mod endian;
pub mod frames;
mod pcap;
mod pcapng;
// Not API: the synthetic traffic of the tests and benchmarks.
#[doc(hidden)]
pub mod synth;
pub(crate) mod timestamp;

pub use pcap::{PcapOptions, PcapWriter};
pub use pcapng::{check_string_option, PcapNgWriter};

use crate::error::{Error, Result};
use std::io::Write;

/// The writers' sink, counting what it was handed, so that a failed write says "write failed"
/// (not the "read failed" of `From<std::io::Error>`) and where in the output it began.
struct Sink<W: Write> {
    w: W,
    written: u64,
}

impl<W: Write> Sink<W> {
    fn new(w: W) -> Self {
        Sink { w, written: 0 }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.w
            .write_all(bytes)
            .map_err(|e| Error::write_failed(e, self.written))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<W> {
        self.w
            .flush()
            .map_err(|e| Error::write_failed(e, self.written))?;
        Ok(self.w)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::capture::ByteOrder;
    use crate::ErrorKind;
    use std::fs::OpenOptions;
    use std::io::BufWriter;

    /// /dev/full: every write fails with ENOSPC, as on a full disk.
    fn full() -> std::fs::File {
        OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    }

    fn assert_full(e: &Error, offset: u64) {
        assert_eq!((e.kind, e.offset), (ErrorKind::Io, Some(offset)), "{e}");
        let os = std::io::Error::from_raw_os_error(ENOSPC);
        assert_eq!(
            e.to_string(),
            format!("write failed: {os} at byte offset {offset}")
        );
        assert_eq!(
            e.io_error().and_then(std::io::Error::raw_os_error),
            Some(ENOSPC)
        );
    }

    /// Linux's errno for "No space left on device".
    const ENOSPC: i32 = 28;

    #[test]
    fn a_full_disk_is_a_failed_write_at_its_offset() {
        let opts = PcapOptions {
            byte_order: ByteOrder::Little,
            nanos: true,
            linktype: 1,
            snaplen: 65_535,
            fcs_len: 0,
        };
        // Unbuffered: the file header is the first write.
        let e = PcapWriter::new(full(), opts).expect_err("ENOSPC");
        assert_full(&e, 0);
        let mut ng = PcapNgWriter::new(full());
        let e = ng.section(ByteOrder::Big, None).expect_err("ENOSPC");
        assert_full(&e, 0);
        // Buffered: the write that spills the buffer fails: after the 24-byte header, nine
        // 100-byte records (16 + 84) and the tenth's header, its data does not fit in 1000.
        let mut w = PcapWriter::new(BufWriter::with_capacity(1000, full()), opts).expect("header");
        let mut failed = None;
        for k in 0..20 {
            if let Err(e) = w.write_packet(k, 84, &[0u8; 84]) {
                failed = Some(e);
                break;
            }
        }
        assert_full(&failed.expect("the buffer spills"), 24 + 9 * 100 + 16);
        // Everything buffered: the flush of finish() fails, after all it was handed.
        let mut w = PcapWriter::new(BufWriter::with_capacity(1000, full()), opts).expect("header");
        w.write_packet(1, 84, &[0u8; 84]).expect("buffered");
        assert_full(&w.finish().expect_err("flush fails"), 124);
    }
}
