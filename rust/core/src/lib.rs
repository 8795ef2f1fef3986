//! burstcore: read pcap/pcapng captures exactly and measure their burstiness in one pass.
//!
//! The data path, top to bottom:
//! - [`input`]: open a path, stdin or any `Read`, undo gzip/zstd (recognised by content);
//! - [`capture`]: frame pcap and pcapng into [`Packet`]s with exact nanosecond timestamps;
//! - [`wire`]: decode link, network and transport headers (truncation-tolerant);
//! - [`engine`]: the streaming scanner (reorder buffer, envelopes, backlogs, binned series, groups);
//! - [`pipeline`]: glue from a capture to the scanner, with accounting of every packet;
//! - [`table`]: packets as columns (for data frames), built without an object per packet;
//! - [`writer`]: a pcap/pcapng writer for tests, benchmarks and tools.
//!
//! Nothing here knows about Python; the bindings crate is a thin layer over this one.

// The module docs map the data path through private modules too (`cargo doc
// --document-private-items` resolves those links); the public docs show their names.
#![allow(rustdoc::private_intra_doc_links)]

pub mod analysis;
pub mod analyze;
#[cfg(test)]
mod bench_support;
pub mod capture;
pub mod chunked;
pub mod engine;
pub mod error;
mod huge_pages;
pub mod input;
pub mod packet;
pub mod parallel;
pub mod pipeline;
mod pool;
#[cfg(all(test, target_os = "linux"))]
#[path = "../tests/resident/mod.rs"]
mod resident;
#[cfg(test)]
#[path = "../tests/scratch/mod.rs"]
mod scratch;
pub mod table;
#[cfg(test)]
mod test_rng;
pub mod wire;
pub mod writer;

pub use error::{Error, ErrorKind, Warning};
pub use packet::Packet;
pub use pool::{default_threads, MAX_THREADS};
