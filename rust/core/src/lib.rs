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
//!
//! A scan from a tool of one's own: open, read, measure. Errors carry a kind, the byte offset
//! and the reason ([`Error`]); the progress callback may stop the scan by returning an error.
//!
//! ```
//! use burstcore::capture::{ByteOrder, CaptureReader, ReadOptions};
//! use burstcore::engine::ScanConfig;
//! use burstcore::pipeline::{scan, SizeKind};
//! use burstcore::writer::{PcapOptions, PcapWriter};
//!
//! // A capture of three 1500-byte frames, 1 µs apart (a path works alike: input::open_path).
//! let options = PcapOptions::default()
//!     .with_byte_order(ByteOrder::Little)
//!     .with_nanos(true)
//!     .with_linktype(1) // Ethernet
//!     .with_snaplen(65535)
//!     .with_fcs_len(0); // frames without their FCS, as nearly every capture
//! let mut w = PcapWriter::new(Vec::new(), options)?;
//! for k in 0..3 {
//!     w.write_packet(1_000 * k, 1500, &[0u8; 64])?;
//! }
//! let bytes = w.finish()?;
//! let len = bytes.len() as u64;
//! let input = burstcore::input::from_reader(Box::new(std::io::Cursor::new(bytes)), Some(len))?;
//! let mut readers = [CaptureReader::new(input, ReadOptions::default())?];
//!
//! let config = ScanConfig::default()
//!     .with_windows_ns(vec![1_000, 2_000])     // E(τ) for τ = 1 µs and 2 µs
//!     .with_rates_bps(vec![10_000_000_000]);  // B_max at 10 Gbit/s
//! let (out, accounting) = scan(&mut readers, config, SizeKind::Wire, &mut |_done| Ok(()))?;
//! assert_eq!(accounting.counted, 3);
//! // Half-open windows [t, t + τ): 1 µs holds one frame, 2 µs two.
//! let e: Vec<u64> = out.envelope.iter().map(|r| r.bytes).collect();
//! assert_eq!(e, [1500, 3000]);
//! # Ok::<(), burstcore::Error>(())
//! ```
//!
//! # What semver covers
//!
//! The API is what these docs show. The structs an embedder builds (configs, options, limits,
//! [`engine::Arrival`], [`wire::Headers`]) and those it only reads (outputs, reports, rows,
//! statistics) are `#[non_exhaustive]`, so that a new field is not a breaking change: start from
//! `default()` (or [`engine::Arrival::new`]) and set what you want with the `with_<field>`
//! builders, as above; every field stays public to read. Enums are exhaustive, except
//! [`ErrorKind`] and [`Limit`], which grow as new checks do: a new variant of the others (a new
//! grouping, size or flow key) is a breaking change, released as one. Modules and items hidden
//! from these docs (`chunked`, `parallel`, `printable`, `engine::reference`, `capture::split`,
//! `capture::mapping`, `table::split`, `writer::synth`) are public only for the Python bindings,
//! the tests, benchmarks and fuzz targets: they may change in any release. The Ethernet FCS's
//! CRC and the writers' conversion of nanoseconds to an interface's ticks are the crate's own
//! (not public): [`writer::PcapNgWriter::enhanced_packet`] converts, and the reader checks an
//! undeclared FCS itself.

// The module docs map the data path through private modules too (`cargo doc
// --document-private-items` resolves those links); the public docs show their names.
#![allow(rustdoc::private_intra_doc_links)]
// A tool that embeds the crate keeps its readers, writers and scanners in structs of its own,
// which derive Debug: every public type has it.
#![warn(missing_debug_implementations)]
// The crate's documentation is all an embedder reads: every public item has some.
#![warn(missing_docs)]

/// `with_<field>` builders for a struct embedders construct: `#[non_exhaustive]` keeps them from
/// writing it as a literal (so that a new field is not a breaking change), and these let them start
/// from `Default::default()` (or `new`) and set the fields they want in one expression.
macro_rules! builders {
    ([$($gen:tt)*] $ty:ty { $($field:ident: $fty:ty => $with:ident),* $(,)? }) => {
        impl<$($gen)*> $ty {
            $(
                #[doc = concat!("This value with `", stringify!($field), "` set to `value` (see the field).")]
                #[must_use]
                pub fn $with(mut self, value: $fty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
pub(crate) use builders;

pub mod analysis;
pub mod analyze;
#[cfg(test)]
mod bench_support;
pub mod capture;
// Not API (outside semver, see the crate docs): public for the bindings, tests and fuzz targets.
#[doc(hidden)]
pub mod chunked;
pub mod engine;
pub mod error;
pub mod filter;
// Fuzz builds only: what the fuzz targets switch per input (see the module).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod huge_pages;
pub mod input;
#[cfg(doctest)]
mod non_exhaustive;
pub mod packet;
// Not API (outside semver, see the crate docs): public for the bindings, tests and fuzz targets.
#[doc(hidden)]
pub mod parallel;
pub mod pipeline;
mod pool;
// Not API (outside semver, see the crate docs): public for the bindings and tests.
#[doc(hidden)]
pub mod printable;
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

pub use engine::reorder::MAX_HELD;
pub use error::{Error, ErrorKind, Limit, Warning};
pub use filter::Filter;
pub use packet::{Packet, TimeRange};
pub use pool::{default_threads, MAX_THREADS};
