//! Analyses of training traffic beyond the envelope: flows, traffic matrix, size/gap histograms,
//! ON/OFF bursts, iteration period and segmentation, superposition; and a check for captures that
//! hold the same packets ([`shared`]).
//!
//! Every analysis is a streaming accumulator fed with [`Arrival`](crate::engine::Arrival)s in
//! timestamp order (the engine's reorder buffer runs first); none keeps the packets. Timestamps
//! stay i64 nanoseconds and byte counts u64 throughout; sums saturate instead of overflowing.

mod bin_runs;
pub mod bursts;
pub mod flows;
pub mod hist;
pub mod iterations;
pub mod matrix;
pub mod retransmissions;
pub mod shared;
pub mod superpose;

pub use bursts::{Burst, BurstDetector, BurstReport};
pub use flows::{FlowKey, FlowOptions, FlowRecord, FlowReport, FlowTable};
pub use hist::{
    GapHistogram, GroupedHistograms, Quantile, SizeHistogram, LARGE_ENTRY_BYTES, LARGE_PER_GROUP,
};
pub use iterations::{Iteration, IterationAnalyzer, IterationOptions, IterationReport, ACF_BINS};
pub use matrix::{HostTotals, MatrixReport, TrafficMatrix};
pub use retransmissions::SeqTracker;
pub use shared::{shared_packets, SharedOptions, SharedPackets, SharedPair};
pub use superpose::{random_offsets, Merge, SplitMix64};
