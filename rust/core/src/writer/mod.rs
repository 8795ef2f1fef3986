//! Writing pcap and pcapng, for tests, benchmarks and tools that need a capture.
//!
//! - [`PcapWriter`]: classic pcap (µs or ns magic, either byte order);
//! - [`PcapNgWriter`]: pcapng with every block type the reader knows, several sections of either
//!   byte order, interfaces of any resolution and signed offset;
//! - [`timestamp`]: the exact conversion between i64 nanoseconds and an interface's raw units;
//! - [`frames`]: Ethernet/IPv4/TCP frames with valid headers, to fill packets with;
//! - [`synth`]: a deterministic model of distributed-training traffic, shared by tests, benches and
//!   the `gen_training` example.
//!
//! The writers check what they are asked to write (a file they produce is always well formed), and
//! write each record with a few `write_all` calls and no allocation per packet: wrap the sink in a
//! `BufWriter` for speed.

mod endian;
pub mod frames;
mod pcap;
mod pcapng;
pub mod synth;
pub mod timestamp;

pub use pcap::{PcapOptions, PcapWriter};
pub use pcapng::PcapNgWriter;
