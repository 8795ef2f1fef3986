//! The training-traffic model checked against physics and its own description, by brute force:
//! no link carries more than its line rate, every data frame is acknowledged as described, and the
//! phases of an iteration sit where the configuration puts them.

use burstcore::writer::synth::{Config, Event, Kind, Mode, Synth};
use std::collections::HashMap;

fn events(cfg: Config, n: usize) -> Vec<Event> {
    Synth::new(cfg).unwrap().take(n).collect()
}

fn small(hosts: u16, mode: Mode, seed: u64) -> Config {
    let mut cfg = Config::new(hosts, mode, seed);
    cfg.period_ns = 3_000_000;
    cfg
}

/// Bytes a link may carry in `window_ns`, plus one frame and the jitter a frame may be late by.
fn line_rate_bound(cfg: &Config, window_ns: i64) -> u64 {
    let bits = cfg.rate_bps as i128 * (window_ns + cfg.jitter_ns) as i128 / 1_000_000_000;
    (bits / 8) as u64 + u64::from(cfg.data_len)
}

/// Largest number of data bytes any host sends (or, for `by_receiver`, receives) within any
/// window of `window_ns`, by brute force over all windows starting at a frame.
fn busiest_window(evs: &[Event], window_ns: i64, by_receiver: bool) -> u64 {
    let mut per_host: HashMap<u16, Vec<(i64, u32)>> = HashMap::new();
    for e in evs.iter().filter(|e| e.kind == Kind::Data) {
        let host = if by_receiver { e.dst } else { e.src };
        per_host
            .entry(host)
            .or_default()
            .push((e.ts_ns, e.wire_len));
    }
    let mut best = 0;
    for frames in per_host.values() {
        for (i, &(t0, _)) in frames.iter().enumerate() {
            let sum: u64 = frames[i..]
                .iter()
                .take_while(|(t, _)| *t < t0 + window_ns)
                .map(|(_, l)| u64::from(*l))
                .sum();
            best = best.max(sum);
        }
    }
    best
}

#[test]
fn no_link_exceeds_line_rate() {
    for (mode, by_receiver) in [
        (Mode::Ring, false),
        (Mode::Ring, true),
        (Mode::ParameterServer, true),
    ] {
        let cfg = small(6, mode, 5);
        let evs = events(cfg, 60_000);
        for window in [10_000i64, 100_000] {
            let busiest = busiest_window(&evs, window, by_receiver);
            let bound = line_rate_bound(&cfg, window);
            assert!(
                busiest <= bound,
                "{mode:?} window {window}: {busiest} > {bound}"
            );
            // and the bursts do run at (nearly) line rate
            assert!(
                busiest * 10 >= bound * 9,
                "{mode:?} window {window}: {busiest} vs {bound}"
            );
        }
    }
}

#[test]
fn every_data_frame_is_acknowledged_as_described() {
    for mode in [Mode::Ring, Mode::ParameterServer] {
        let cfg = small(4, mode, 8);
        let synth = Synth::new(cfg).unwrap();
        let frames = synth.frames_per_flow();
        let steps = synth.steps_per_iteration();
        let flows: u32 = if mode == Mode::Ring { 4 } else { 3 };
        let per_iteration = (steps * flows * (frames + frames.div_ceil(cfg.ack_every))) as usize;
        let evs: Vec<Event> = synth.take(per_iteration * 2).collect();
        assert!(
            evs.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
            "{mode:?}: out of order"
        );
        for iteration in evs.chunks(per_iteration) {
            // (sender, receiver) -> data frame times, ACK (time, last frame acknowledged)
            let mut data: HashMap<(u16, u16), Vec<(i64, u32)>> = HashMap::new();
            let mut acks: HashMap<(u16, u16), Vec<(i64, u32)>> = HashMap::new();
            for e in iteration {
                match e.kind {
                    Kind::Data => data
                        .entry((e.src, e.dst))
                        .or_default()
                        .push((e.ts_ns, e.frame)),
                    Kind::Ack => acks
                        .entry((e.dst, e.src))
                        .or_default()
                        .push((e.ts_ns, e.frame)),
                }
            }
            assert_eq!(
                data.len() as u32,
                if mode == Mode::Ring { 4 } else { 6 },
                "{mode:?}: flows"
            );
            for (pair, sent) in &data {
                let got = &acks[pair];
                // each step restarts frame numbering: an ACK follows every `ack_every` frames and the last
                let mut expected = Vec::new();
                let mut step_frames = Vec::new();
                for &(t, f) in sent {
                    if f == 0 && !step_frames.is_empty() {
                        expected.extend(acks_for(&step_frames, cfg.ack_every));
                        step_frames.clear();
                    }
                    step_frames.push(t);
                }
                expected.extend(acks_for(&step_frames, cfg.ack_every));
                assert_eq!(got.len(), expected.len(), "{mode:?} {pair:?}");
                for (&(t_ack, f_ack), &(t_data, f_data)) in got.iter().zip(&expected) {
                    assert_eq!(f_ack, f_data);
                    let delay = t_ack - t_data;
                    assert!(
                        delay >= cfg.ack_delay_ns && delay <= cfg.ack_delay_ns + cfg.jitter_ns,
                        "{delay}"
                    );
                }
            }
        }
    }
}

/// (time, index) of the data frames that ACKs acknowledge: every `every`-th frame, and the last.
fn acks_for(times: &[i64], every: u32) -> Vec<(i64, u32)> {
    let n = times.len() as u32;
    (0..n)
        .filter(|f| (f + 1) % every == 0 || f + 1 == n)
        .map(|f| (times[f as usize], f))
        .collect()
}

#[test]
fn iterations_follow_the_period() {
    let cfg = small(8, Mode::Ring, 2);
    let synth = Synth::new(cfg).unwrap();
    let per_iteration = {
        let f = synth.frames_per_flow();
        (synth.steps_per_iteration() * 8 * (f + f.div_ceil(cfg.ack_every))) as usize
    };
    let evs: Vec<Event> = synth.take(per_iteration * 3).collect();
    for (k, iteration) in evs.chunks(per_iteration).enumerate() {
        let start = cfg.start_ns + k as i64 * cfg.period_ns;
        let compute = cfg.period_ns * i64::from(cfg.compute_permille) / 1000;
        let first = iteration.first().unwrap().ts_ns;
        let last = iteration.last().unwrap().ts_ns;
        // compute gap (up to 2 % jitter) before the first frame, all traffic inside the period
        assert!(
            first >= start + compute && first <= start + compute + cfg.period_ns / 50 + 2_000,
            "{k}"
        );
        assert!(
            last < start + cfg.period_ns,
            "iteration {k} overruns its period"
        );
        // communication takes about comm_permille of the period (steps and ACK tails aside)
        let comm = last - first;
        let target = cfg.period_ns * i64::from(cfg.comm_permille) / 1000;
        assert!(
            comm >= target * 9 / 10 && comm <= target * 11 / 10,
            "{k}: {comm} vs {target}"
        );
    }
}
