//! Frames that end with an FCS the capture does not declare: a switch's mirror may keep each
//! Ethernet frame's FCS without a word, and every `l1` size is then 4 B a frame too long. The
//! first whole Ethernet frames of each interface that declares no FCS are checked for a CRC-32
//! that matches the bytes before it, as `info` checks them ([`crate::pipeline::FCS_SAMPLE`]).
//! Only the frames the numbers are made of count: those a scan or analysis keeps (in its time
//! range, through its filter, with a timestamp), checked where it keeps them, not as the reader
//! reads (every packet of every read paid a test there). A scan in time chunks has each chunk
//! note the frames it keeps, followed in file order ([`FcsSample::follow`]): the frames a scan
//! of the whole file on one thread checks, on any number of threads.

use super::CaptureReader;
use crate::error::{ErrorKind, Warning};
use crate::wire;

/// Frames of an interface looked at, at most, for its [`crate::pipeline::FCS_SAMPLE`] whole
/// ones: a capture cut by its snaplen may hold few, and every frame looked at is a call.
pub const FCS_LOOK: u32 = 4096;

/// Frames checked per interface, and how many end with a valid FCS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FcsSample {
    /// Per interface, the whole Ethernet frames of an interface that declares no FCS checked
    /// (the first [`crate::pipeline::FCS_SAMPLE`] among its first [`FCS_LOOK`] frames).
    pub sampled: Vec<u32>,
    /// Per interface, how many of those end with a valid FCS.
    pub valid: Vec<u32>,
    /// Per interface, frames looked at; [`FCS_LOOK`] once it is done with (its sample taken,
    /// or it cannot hide an FCS: not Ethernet, or one declared).
    looked: Vec<u32>,
    /// Per interface, what each frame looked at was, in order; kept by a time chunk's reader
    /// ([`FcsSample::logged`]), whose frames may continue the sample of the chunks before it
    /// ([`FcsSample::follow`]). `None` for a reader that reads the file from its start.
    log: Option<Vec<Vec<Look>>>,
}

/// What a frame looked at was, for the sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Its interface cannot hide an FCS (not Ethernet, or one declared): done with.
    Unfit,
    /// Cut by the snaplen: not checked.
    Cut,
    /// Whole, ending with no valid FCS.
    Whole,
    /// Whole, ending with a valid FCS.
    WithFcs,
}

impl FcsSample {
    /// Whether a frame of `interface` is still to be looked at: past its sample, one
    /// comparison a packet, so that the check costs the first frames only.
    #[inline]
    pub fn wants(&self, interface: u32) -> bool {
        self.looked
            .get(interface as usize)
            .is_none_or(|&n| n < FCS_LOOK)
    }

    /// Check `p` if it is one of the first frames of its interface that could hide an FCS:
    /// Ethernet, captured whole, on an interface that declares none.
    #[inline]
    pub fn see(&mut self, p: &crate::Packet<'_>) {
        if self.wants(p.interface) {
            self.check(p);
        }
    }

    #[cold]
    fn check(&mut self, p: &crate::Packet<'_>) {
        // An interface's link type and declared FCS are its own: one frame tells for all.
        let look = if p.linktype != wire::linktype::ETHERNET || p.fcs_len != 0 {
            Look::Unfit
        } else if p.data.len() as u64 != u64::from(p.wire_len) {
            Look::Cut
        } else if wire::fcs::ends_with_fcs(p.data) {
            Look::WithFcs
        } else {
            Look::Whole
        };
        self.record(p.interface as usize, look);
    }

    /// One frame more of interface `i`, if it is still looked at.
    fn record(&mut self, i: usize, look: Look) {
        if self.sampled.len() <= i {
            self.sampled.resize(i + 1, 0);
            self.valid.resize(i + 1, 0);
            self.looked.resize(i + 1, 0);
        }
        if self.looked[i] >= FCS_LOOK {
            return;
        }
        if let Some(log) = &mut self.log {
            if log.len() <= i {
                log.resize_with(i + 1, Vec::new);
            }
            log[i].push(look);
        }
        self.looked[i] += 1;
        match look {
            Look::Unfit => self.looked[i] = FCS_LOOK,
            Look::Cut => {}
            Look::Whole | Look::WithFcs => {
                self.sampled[i] += 1;
                self.valid[i] += u32::from(look == Look::WithFcs);
                if self.sampled[i] >= crate::pipeline::FCS_SAMPLE {
                    self.looked[i] = FCS_LOOK;
                }
            }
        }
    }

    /// An empty sample that keeps what each frame it looks at was, for a time chunk's reader:
    /// the chunks' samples, each [`FcsSample::follow`]ed in file order, are the sample a read
    /// of the whole file takes.
    pub fn logged() -> Self {
        FcsSample {
            log: Some(Vec::new()),
            ..FcsSample::default()
        }
    }

    /// Go on with the frames of `later` (a [`FcsSample::logged`] sample of the frames that
    /// follow this one's, each chunk's taken from scratch), as if one reader had read both: of
    /// each interface not done with yet, as many of its frames as a reader would still look
    /// at. A chunk's own sample may have taken more (its budget starts afresh), so its counts
    /// cannot be added; its frames, in order, can.
    pub fn follow(&mut self, later: &FcsSample) {
        let Some(log) = &later.log else {
            return;
        };
        for (i, looks) in log.iter().enumerate() {
            for &look in looks {
                if !self.wants(i as u32) {
                    break;
                }
                self.record(i, look);
            }
        }
    }

    /// The interfaces (index, frames checked, frames with a valid FCS) where more than half of
    /// the frames checked end with a valid FCS: a frame without one does so once in 2^32, so
    /// that many is the FCS (a mirror also forwards the odd frame with a bad one).
    pub fn undeclared(&self) -> Vec<(u32, u32, u32)> {
        self.sampled
            .iter()
            .zip(&self.valid)
            .enumerate()
            .filter(|(_, (&n, &v))| v > 0 && 2 * v > n)
            .map(|(i, (&n, &v))| (i as u32, n, v))
            .collect()
    }
}

impl CaptureReader {
    /// Have the scan or analysis that reads this reader check the first whole Ethernet frames
    /// it keeps of each interface that declares no FCS for one ([`CaptureReader::undeclared_fcs`]):
    /// for an `l1` size that believes the capture. [`crate::pipeline::scan`] and the analyses
    /// ask for it themselves when they count `l1` under [`crate::pipeline::Fcs::Declared`].
    /// [`CaptureReader::next_packet`] checks nothing itself: only the frames kept cost a test,
    /// and only the first of them a CRC.
    pub fn check_fcs(&mut self) {
        self.fcs_sample.get_or_insert_with(Box::default);
    }

    /// The sample [`CaptureReader::check_fcs`] asked for, for whoever reads the packets and
    /// keeps some (a packet borrows the reader, so it cannot note them itself), until it gives
    /// it back ([`CaptureReader::keep_fcs_sample`]). `None` if not asked for.
    pub(crate) fn lend_fcs_sample(&mut self) -> Option<Box<FcsSample>> {
        self.fcs_sample.take()
    }

    /// A sample lent ([`CaptureReader::lend_fcs_sample`]) given back, with the frames noted.
    pub(crate) fn keep_fcs_sample(&mut self, sample: Box<FcsSample>) {
        self.fcs_sample = Some(sample);
    }

    /// The frames checked since [`CaptureReader::check_fcs`], if it was called.
    pub fn fcs_sample(&self) -> Option<&FcsSample> {
        self.fcs_sample.as_deref()
    }

    /// For a reader whose packets were read elsewhere (a scan's time chunks, each with a reader
    /// of its own): the sample the frames they kept make, in file order ([`FcsSample::follow`]).
    pub(crate) fn adopt_fcs_sample(&mut self, sample: FcsSample) {
        self.fcs_sample = Some(Box::new(sample));
    }

    /// A warning when frames kept and checked since [`CaptureReader::check_fcs`] end with an FCS
    /// the capture does not declare: an `l1` size that believes the capture counted each 4 B
    /// too long. `None` when none did, or nothing was checked.
    pub fn undeclared_fcs(&self) -> Option<Warning> {
        let found = self.fcs_sample.as_deref()?.undeclared();
        if found.is_empty() {
            return None;
        }
        let each: Vec<String> = found
            .iter()
            .map(|(i, n, v)| format!("interface {i}: {v} of its first {n} whole frames"))
            .collect();
        Some(Warning::new(
            ErrorKind::UndeclaredFcs,
            None,
            format!(
                "frames end with a valid Ethernet FCS the capture does not declare ({}; a switch \
                 mirror may keep it): size='l1' counted each such frame 4 B too long; give \
                 fcs='present' if every frame holds its FCS",
                each.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(interface: u32, data: &[u8], fcs_len: u8, linktype: u16) -> crate::Packet<'_> {
        crate::Packet {
            ts_ns: Some(0),
            interface,
            linktype,
            wire_len: data.len() as u32,
            fcs_len,
            data,
            offset: 0,
        }
    }

    #[test]
    fn only_the_first_whole_ethernet_frames_of_an_undeclared_interface_are_checked() {
        let frame: Vec<u8> = (0u8..60).collect();
        let mut kept = frame.clone();
        kept.extend_from_slice(&wire::fcs::crc32(&frame).to_le_bytes());
        let mut s = FcsSample::default();
        for _ in 0..100 {
            s.see(&packet(1, &kept, 0, wire::linktype::ETHERNET));
            s.see(&packet(0, &frame, 0, wire::linktype::ETHERNET));
            // Declared, or not Ethernet: not checked.
            s.see(&packet(2, &kept, 4, wire::linktype::ETHERNET));
            s.see(&packet(3, &kept, 0, 101));
        }
        assert_eq!(s.sampled, [64, 64, 0, 0]);
        assert_eq!(s.valid, [0, 64, 0, 0]);
        assert_eq!(s.undeclared(), [(1, 64, 64)]);
        // Frames cut by the snaplen are not checked, and past the first FCS_LOOK an interface
        // is done with.
        let mut cut = FcsSample::default();
        let snapped = crate::Packet {
            wire_len: 1000,
            ..packet(0, &kept, 0, wire::linktype::ETHERNET)
        };
        for _ in 0..FCS_LOOK {
            assert!(cut.wants(0));
            cut.see(&snapped);
        }
        assert!(!cut.wants(0));
        cut.see(&packet(0, &kept, 0, wire::linktype::ETHERNET));
        assert_eq!((cut.sampled[0], cut.valid[0]), (0, 0));
        // Half is not more than half.
        let half = FcsSample {
            sampled: vec![4],
            valid: vec![2],
            looked: vec![4],
            log: None,
        };
        assert!(half.undeclared().is_empty());
    }

    #[test]
    fn chunks_followed_in_order_sample_what_one_read_of_them_all_does() {
        // Time chunks each sample their frames from scratch; followed in file order they must
        // give the sample of one reader of the whole file, counts and all: an interface seldom
        // seen, one whose frames begin late, one cut by the snaplen at first, and a cut
        // anywhere (a chunk's own sample of a quiet interface can be ahead of or behind it).
        let frame: Vec<u8> = (0u8..60).collect();
        let mut kept = frame.clone();
        kept.extend_from_slice(&wire::fcs::crc32(&frame).to_le_bytes());
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            // (interface, whole, with an FCS)
            let n = 2000 + (next() % 12_000) as usize;
            let late = (next() % n as u64) as usize;
            let frames: Vec<(u32, bool, bool)> = (0..n)
                .map(|k| {
                    let r = next();
                    let interface = match r % 10 {
                        0 if k >= late => 2,
                        1..=3 => 1,
                        _ => 0,
                    };
                    (interface, r % 7 != 0 || k > n / 2, (r >> 8) % 3 != 0)
                })
                .collect();
            let see = |s: &mut FcsSample, &(interface, whole, fcs): &(u32, bool, bool)| {
                let data = if fcs { &kept[..] } else { &frame[..] };
                let wire_len = data.len() as u32 + if whole { 0 } else { 100 };
                s.see(&crate::Packet {
                    wire_len,
                    ..packet(interface, data, 0, wire::linktype::ETHERNET)
                });
            };
            let mut whole = FcsSample::default();
            frames.iter().for_each(|f| see(&mut whole, f));
            let mut cuts: Vec<usize> = (0..1 + next() % 5)
                .map(|_| (next() % n as u64) as usize)
                .collect();
            cuts.extend([0, n]);
            cuts.sort_unstable();
            let mut followed = FcsSample::default();
            for w in cuts.windows(2) {
                let mut chunk = FcsSample::logged();
                frames[w[0]..w[1]].iter().for_each(|f| see(&mut chunk, f));
                followed.follow(&chunk);
            }
            let counts = |s: &FcsSample| {
                let k = s.sampled.len().max(3);
                let at = |v: &Vec<u32>, i: usize| v.get(i).copied().unwrap_or(0);
                (0..k)
                    .map(|i| (at(&s.sampled, i), at(&s.valid, i), at(&s.looked, i)))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                counts(&followed),
                counts(&whole),
                "round {round}, cuts {cuts:?}"
            );
            assert_eq!(followed.undeclared(), whole.undeclared(), "round {round}");
        }
    }
}
