//! A deterministic model of distributed-training traffic as seen by a tap on all hosts' links.
//!
//! Every iteration (one `period`) is a compute gap with no traffic, then a communication phase
//! made of steps, then an idle tail until the next iteration:
//! - `Ring` (ring all-reduce): 2·(N−1) steps; in each, every host sends a chunk to its ring
//!   neighbour at line rate on its own link, so the tap sees N bursts at once;
//! - `ParameterServer` (host 0 is the server): a push step, in which all workers send to the
//!   server and share its link (each gets 1/(N−1) of line rate), then a pull step the other way.
//!
//! Receivers acknowledge every `ack_every` data frames after `ack_delay_ns`. Per-frame jitter comes
//! from a hash of (seed, iteration, step, flow, frame), so any event can be computed without the
//! ones before it and the whole trace depends only on the [`Config`]. Events come out in
//! non-decreasing time order: each flow's frames and ACKs are monotone by construction, and a
//! small heap merges the flows of a step.

use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The collective the hosts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ring all-reduce: 2·(N−1) steps, each host sending to its ring neighbour.
    Ring,
    /// Host 0 is the server: a push step of every worker to it, then a pull step back.
    ParameterServer,
}

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A data frame.
    Data,
    /// An acknowledgement.
    Ack,
}

/// One frame on the wire between two hosts (indices 0..hosts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When it is on the wire, ns.
    pub ts_ns: i64,
    /// The sending host.
    pub src: u16,
    /// The receiving host.
    pub dst: u16,
    /// Its length on the wire.
    pub wire_len: u32,
    /// Data or ACK.
    pub kind: Kind,
    /// Index of the frame within its flow's data (for an ACK: of the last frame it acknowledges).
    pub frame: u32,
}

/// The model's parameters; [`Config::new`] gives a 10 Gbit/s job of 200 ms iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Hosts (at least 2).
    pub hosts: u16,
    /// The collective.
    pub mode: Mode,
    /// Seed of the per-frame jitter.
    pub seed: u64,
    /// Line rate of every link, bits per second.
    pub rate_bps: u64,
    /// The iteration period, ns.
    pub period_ns: i64,
    /// Time of the first iteration's start.
    pub start_ns: i64,
    /// Compute gap as a share of the period, in thousandths (plus up to 2 % of jitter).
    pub compute_permille: u32,
    /// Communication volume as the share of the period one link needs at line rate, in thousandths.
    pub comm_permille: u32,
    /// Length of a data frame on the wire.
    pub data_len: u32,
    /// Length of an ACK on the wire.
    pub ack_len: u32,
    /// Data frames a receiver acknowledges at once.
    pub ack_every: u32,
    /// Delay of an ACK after the frame it acknowledges, ns.
    pub ack_delay_ns: i64,
    /// Largest extra delay of one frame (clamped to half a frame time so flows stay in order).
    pub jitter_ns: i64,
    /// Pause between the steps of a communication phase (reduction, synchronisation).
    pub step_gap_ns: i64,
}

impl Config {
    /// 10 Gbit/s links, 200 ms iterations: 45 % compute, 40 % communication, the rest idle.
    pub fn new(hosts: u16, mode: Mode, seed: u64) -> Self {
        Config {
            hosts,
            mode,
            seed,
            rate_bps: 10_000_000_000,
            period_ns: 200_000_000,
            start_ns: 1_700_000_000_000_000_000,
            compute_permille: 450,
            comm_permille: 400,
            data_len: 1514,
            ack_len: 66,
            ack_every: 2,
            ack_delay_ns: 4_000,
            jitter_ns: 300,
            step_gap_ns: 20_000,
        }
    }

    /// An error naming the first parameter the model cannot use.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::invalid(what.to_string()));
        if self.hosts < 2 {
            return bad("the training model needs at least 2 hosts");
        }
        if self.rate_bps == 0 {
            return bad("the line rate must be positive");
        }
        if self.period_ns <= 0
            || self.ack_delay_ns < 0
            || self.jitter_ns < 0
            || self.step_gap_ns < 0
        {
            return bad("period must be positive; delays, jitter and gaps non-negative");
        }
        if self.data_len == 0 || self.ack_len == 0 || self.ack_every == 0 {
            return bad("frame lengths and ack_every must be positive");
        }
        if self.compute_permille > 1000 || self.comm_permille > 1000 {
            return bad(
                "compute and communication shares are thousandths of the period (at most 1000)",
            );
        }
        Ok(())
    }

    /// Time to send `frames` data frames at line rate, floored to ns.
    fn slots_ns(&self, frames: u64) -> i64 {
        let bits = u128::from(frames) * u128::from(self.data_len) * 8;
        let ns = bits
            .checked_mul(1_000_000_000)
            .map_or(u128::MAX, |b| b / u128::from(self.rate_bps));
        i64::try_from(ns).unwrap_or(i64::MAX)
    }
}

/// A sender → receiver transfer within one step.
#[derive(Debug, Clone, Copy)]
struct Flow {
    src: u16,
    dst: u16,
    /// Slot of the first frame (flows sharing a link take turns).
    first_slot: u64,
    /// Random start within the first slot, for flows on separate links.
    phase_ns: i64,
}

/// The infinite, deterministic event stream of a [`Config`].
#[derive(Debug)]
pub struct Synth {
    cfg: Config,
    frames_per_flow: u32,
    /// Slots between a flow's consecutive frames: the number of flows sharing one link.
    stride: u64,
    steps_per_iteration: u32,
    jitter_max: i64,
    iteration: u64,
    iteration_start: i64,
    step: u32,
    step_start: i64,
    last_ts: i64,
    flows: Vec<Flow>,
    /// Next frame of each flow's data (even cursor) and ACK (odd cursor) stream.
    next: Vec<u32>,
    heap: BinaryHeap<Reverse<(i64, u32)>>,
}

impl Synth {
    /// The event stream of `cfg`, checked first ([`Config::validate`]).
    pub fn new(cfg: Config) -> Result<Self> {
        cfg.validate()?;
        let n = u64::from(cfg.hosts);
        let frame_ns = cfg.slots_ns(1).max(1);
        let (steps, stride) = match cfg.mode {
            Mode::Ring => (2 * (n - 1), 1),
            Mode::ParameterServer => (2, n - 1),
        };
        // The phase lasts comm_permille of the period: what the gaps between steps and each
        // step's tail (last ACK) take is not available for frames.
        let comm_ns = i128::from(cfg.period_ns) * i128::from(cfg.comm_permille) / 1000;
        let per_step_tail =
            i128::from(cfg.ack_delay_ns) + i128::from(cfg.jitter_ns) + i128::from(frame_ns);
        let overhead =
            i128::from(steps) * per_step_tail + i128::from(steps - 1) * i128::from(cfg.step_gap_ns);
        let comm_slots =
            u64::try_from((comm_ns - overhead).max(0) / i128::from(frame_ns)).unwrap_or(0);
        let frames = (comm_slots / (steps * stride)).clamp(1, u64::from(u32::MAX / 2));
        let mut synth = Synth {
            cfg,
            frames_per_flow: frames as u32,
            stride,
            steps_per_iteration: steps as u32,
            jitter_max: cfg.jitter_ns.min(frame_ns / 2),
            iteration: 0,
            iteration_start: cfg.start_ns,
            step: 0,
            step_start: 0,
            last_ts: cfg.start_ns,
            flows: Vec::with_capacity(usize::from(cfg.hosts)),
            next: Vec::new(),
            heap: BinaryHeap::new(),
        };
        synth.step_start = synth.compute_end();
        synth.start_step();
        Ok(synth)
    }

    /// The configuration it was made from.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Data frames each flow sends in one step.
    pub fn frames_per_flow(&self) -> u32 {
        self.frames_per_flow
    }

    /// Steps of one iteration's communication phase.
    pub fn steps_per_iteration(&self) -> u32 {
        self.steps_per_iteration
    }

    /// The iteration the next event belongs to.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    fn hash(&self, parts: [u64; 4]) -> u64 {
        let mut h = self.cfg.seed ^ 0x5851_F42D_4C95_7F2D;
        for p in parts {
            h = mix(h ^ p);
        }
        h
    }

    fn compute_end(&self) -> i64 {
        let p = i128::from(self.cfg.period_ns);
        let base = p * i128::from(self.cfg.compute_permille) / 1000;
        let spread = (p / 50).max(1) as u64;
        let jitter = self.hash([self.iteration, u64::MAX, 0, 0]) % spread;
        let gap = i64::try_from(base)
            .unwrap_or(i64::MAX)
            .saturating_add(jitter as i64);
        self.iteration_start.saturating_add(gap)
    }

    fn start_step(&mut self) {
        let n = self.cfg.hosts;
        self.flows.clear();
        match self.cfg.mode {
            Mode::Ring => {
                for src in 0..n {
                    let phase = self.hash([
                        self.iteration,
                        u64::from(self.step),
                        u64::from(src),
                        u64::MAX,
                    ]);
                    let frame_ns = self.cfg.slots_ns(1).max(1) as u64;
                    self.flows.push(Flow {
                        src,
                        dst: (src + 1) % n,
                        first_slot: 0,
                        phase_ns: (phase % frame_ns) as i64,
                    });
                }
            }
            Mode::ParameterServer => {
                for worker in 1..n {
                    let (src, dst) = if self.step == 0 {
                        (worker, 0)
                    } else {
                        (0, worker)
                    };
                    self.flows.push(Flow {
                        src,
                        dst,
                        first_slot: u64::from(worker - 1),
                        phase_ns: 0,
                    });
                }
            }
        }
        self.next.clear();
        self.next.resize(self.flows.len() * 2, 0);
        self.heap.clear();
        for cursor in 0..self.next.len() as u32 {
            if let Some(ts) = self.cursor_ts(cursor) {
                self.heap.push(Reverse((ts, cursor)));
            }
        }
    }

    /// Time of the next event of a cursor, `None` when it is exhausted.
    fn cursor_ts(&self, cursor: u32) -> Option<i64> {
        let flow = self.flows.get((cursor / 2) as usize)?;
        let k = *self.next.get(cursor as usize)?;
        if cursor.is_multiple_of(2) {
            (k < self.frames_per_flow).then(|| self.data_ts(cursor / 2, flow, k))
        } else {
            let last = self.acked_frame(k)?;
            let jitter = self.jitter(cursor / 2, last, 1);
            Some(
                self.data_ts(cursor / 2, flow, last)
                    .saturating_add(self.cfg.ack_delay_ns)
                    .saturating_add(jitter),
            )
        }
    }

    /// Last data frame acknowledged by ACK number `k` of a flow (the final ACK may cover fewer).
    fn acked_frame(&self, k: u32) -> Option<u32> {
        let every = self.cfg.ack_every;
        let first_uncovered = k.checked_mul(every)?;
        if first_uncovered >= self.frames_per_flow {
            return None;
        }
        Some(
            first_uncovered
                .saturating_add(every - 1)
                .min(self.frames_per_flow - 1),
        )
    }

    fn jitter(&self, flow: u32, frame: u32, which: u64) -> i64 {
        let h = self.hash([
            self.iteration,
            u64::from(self.step),
            u64::from(flow) << 32 | u64::from(frame),
            which,
        ]);
        (h % (self.jitter_max as u64 + 1)) as i64
    }

    fn data_ts(&self, flow_index: u32, flow: &Flow, frame: u32) -> i64 {
        let slot = flow
            .first_slot
            .saturating_add(u64::from(frame).saturating_mul(self.stride));
        self.step_start
            .saturating_add(flow.phase_ns)
            .saturating_add(self.cfg.slots_ns(slot))
            .saturating_add(self.jitter(flow_index, frame, 0))
    }

    fn next_step(&mut self) {
        self.step += 1;
        if self.step >= self.steps_per_iteration {
            self.step = 0;
            self.iteration += 1;
            let next = self.iteration_start.saturating_add(self.cfg.period_ns);
            // A communication phase longer than the period delays the next iteration.
            self.iteration_start = next.max(self.last_ts.saturating_add(self.cfg.step_gap_ns));
            self.step_start = self.compute_end();
        } else {
            self.step_start = self.last_ts.saturating_add(self.cfg.step_gap_ns);
        }
        self.start_step();
    }
}

impl Iterator for Synth {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let Reverse((ts, cursor)) = match self.heap.pop() {
            Some(top) => top,
            None => {
                self.next_step();
                self.heap.pop()?
            }
        };
        let flow = *self.flows.get((cursor / 2) as usize)?;
        let k = *self.next.get(cursor as usize)?;
        let event = if cursor % 2 == 0 {
            Event {
                ts_ns: ts,
                src: flow.src,
                dst: flow.dst,
                wire_len: self.cfg.data_len,
                kind: Kind::Data,
                frame: k,
            }
        } else {
            let frame = self.acked_frame(k)?;
            Event {
                ts_ns: ts,
                src: flow.dst,
                dst: flow.src,
                wire_len: self.cfg.ack_len,
                kind: Kind::Ack,
                frame,
            }
        };
        if let Some(slot) = self.next.get_mut(cursor as usize) {
            *slot = k.saturating_add(1);
        }
        if let Some(t) = self.cursor_ts(cursor) {
            // Monotone by construction; the max only guards against a future change breaking it.
            self.heap.push(Reverse((t.max(ts), cursor)));
        }
        self.last_ts = self.last_ts.max(ts);
        Some(event)
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(cfg: Config, n: usize) -> Vec<Event> {
        Synth::new(cfg).unwrap().take(n).collect()
    }

    #[test]
    fn deterministic_ordered_and_shaped() {
        for mode in [Mode::Ring, Mode::ParameterServer] {
            let mut cfg = Config::new(4, mode, 3);
            cfg.period_ns = 2_000_000; // small iterations so a few of them fit the test
            let a = take(cfg, 20_000);
            assert_eq!(a, take(cfg, 20_000));
            cfg.seed = 4;
            assert_ne!(a, take(cfg, 20_000));
            assert!(a.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
            let synth = Synth::new(Config { seed: 3, ..cfg }).unwrap();
            let (frames, steps) = (
                synth.frames_per_flow() as usize,
                synth.steps_per_iteration() as usize,
            );
            let flows = if mode == Mode::Ring { 4 } else { 3 };
            let data_per_iter = frames * steps * flows;
            let acks_per_flow = frames.div_ceil(2);
            let per_iter = data_per_iter + acks_per_flow * steps * flows;
            // Count by brute force over the first iteration: every flow's frames and ACKs.
            let first: Vec<_> = a.iter().take(per_iter).collect();
            assert_eq!(
                first.iter().filter(|e| e.kind == Kind::Data).count(),
                data_per_iter
            );
            assert!(a.len() > per_iter, "test must span more than one iteration");
            // The second iteration starts a period after the first, after the compute gap.
            let gap = a[per_iter].ts_ns - a[per_iter - 1].ts_ns;
            assert!(
                gap > 0 && a[per_iter].ts_ns >= cfg.start_ns + cfg.period_ns,
                "{gap}"
            );
            assert!(a.iter().all(|e| e.src != e.dst && e.src < 4 && e.dst < 4));
            if mode == Mode::ParameterServer {
                assert!(a.iter().all(|e| e.src == 0 || e.dst == 0));
            }
        }
    }
}
