//! The structs that must not be written as literals outside the crate (`#[non_exhaustive]`, see
//! "What semver covers" in the crate docs): each doctest here is an embedder's literal, which must
//! not compile (E0639), so that a new field never breaks one. Built only by `cargo test --doc`.

/// ```compile_fail,E0639
/// let _ = burstcore::engine::ScanConfig {
///     windows_ns: vec![1_000],
///     ..Default::default()
/// };
/// ```
pub struct ScanConfig;

/// ```compile_fail,E0639
/// let _ = burstcore::capture::ReadOptions {
///     strict: true,
///     ..Default::default()
/// };
/// ```
pub struct ReadOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::capture::Limits {
///     max_block_len: 1 << 20,
///     ..Default::default()
/// };
/// ```
pub struct Limits;

/// ```compile_fail,E0639
/// let _ = burstcore::capture::InterfaceStats {
///     isb_count: 1,
///     ..Default::default()
/// };
/// ```
pub struct InterfaceStats;

/// ```compile_fail,E0639
/// let _ = burstcore::writer::PcapOptions {
///     snaplen: 65535,
///     ..Default::default()
/// };
/// ```
pub struct PcapOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::analyze::OrderOptions {
///     reorder_horizon_ns: 0,
///     ..Default::default()
/// };
/// ```
pub struct OrderOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::FlowOptions {
///     max_flows: 10,
///     ..Default::default()
/// };
/// ```
pub struct FlowOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::IterationOptions {
///     bin_ns: 1_000,
///     ..Default::default()
/// };
/// ```
pub struct IterationOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::SharedOptions {
///     sample: 10,
///     ..Default::default()
/// };
/// ```
pub struct SharedOptions;

/// ```compile_fail,E0639
/// let _ = burstcore::table::Selection {
///     filter: None,
///     ..Default::default()
/// };
/// ```
pub struct Selection;

/// ```compile_fail,E0639
/// let _ = burstcore::wire::Headers {
///     sport: Some(80),
///     ..Default::default()
/// };
/// ```
pub struct Headers;

/// ```compile_fail,E0639
/// let _ = burstcore::engine::ScanOutput {
///     envelope: Vec::new(),
///     ..Default::default()
/// };
/// ```
pub struct ScanOutput;

/// ```compile_fail,E0639
/// let _ = burstcore::pipeline::Accounting {
///     counted: 0,
///     ..Default::default()
/// };
/// ```
pub struct Accounting;

/// ```compile_fail,E0639
/// let _ = burstcore::pipeline::Info {
///     packets: 0,
///     ..Default::default()
/// };
/// ```
pub struct Info;

/// ```compile_fail,E0639
/// let _ = burstcore::capture::ReadStats {
///     packets: 0,
///     ..Default::default()
/// };
/// ```
pub struct ReadStats;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::FlowReport {
///     flows: Vec::new(),
///     ..Default::default()
/// };
/// ```
pub struct FlowReport;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::IterationReport {
///     iterations: Vec::new(),
///     ..Default::default()
/// };
/// ```
pub struct IterationReport;

/// ```compile_fail,E0639
/// let _ = burstcore::analysis::MatrixReport {
///     hosts: Vec::new(),
///     ..Default::default()
/// };
/// ```
pub struct MatrixReport;

/// ```compile_fail,E0639
/// let _ = burstcore::engine::Arrival {
///     ts_ns: 0,
///     size: 1,
///     interface: 0,
///     headers: Default::default(),
/// };
/// ```
pub struct Arrival;
