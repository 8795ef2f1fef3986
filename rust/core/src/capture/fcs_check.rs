//! Frames that end with an FCS the capture does not declare: a switch's mirror may keep each
//! Ethernet frame's FCS without a word, and every `l1` size is then 4 B a frame too long. The
//! first whole Ethernet frames of each interface that declares no FCS are checked for a CRC-32
//! that matches the bytes before it, as `info` checks them ([`crate::pipeline::FCS_SAMPLE`]).

use super::CaptureReader;
use crate::error::{ErrorKind, Warning};
use crate::wire;

/// Packets a read of a capture's start ([`CaptureReader::check_fcs_from_start`]) reads at
/// most: about a millisecond of reading, so that a capture whose frames are all cut by the
/// snaplen (none whole, none checked) is not read whole again.
pub const START_READ: u32 = 1 << 16;

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
        let i = p.interface as usize;
        if self.sampled.len() <= i {
            self.sampled.resize(i + 1, 0);
            self.valid.resize(i + 1, 0);
            self.looked.resize(i + 1, 0);
        }
        self.looked[i] += 1;
        // An interface's link type and declared FCS are its own: one frame tells for all.
        if p.linktype != wire::linktype::ETHERNET || p.fcs_len != 0 {
            self.looked[i] = FCS_LOOK;
            return;
        }
        if p.data.len() as u64 == u64::from(p.wire_len) {
            self.sampled[i] += 1;
            self.valid[i] += u32::from(wire::fcs::ends_with_fcs(p.data));
        }
        if self.sampled[i] >= crate::pipeline::FCS_SAMPLE {
            self.looked[i] = FCS_LOOK;
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
    /// Check the first whole Ethernet frames of each interface that declares no FCS for one, as
    /// they are read ([`CaptureReader::undeclared_fcs`]); for an `l1` size that believes the
    /// capture. Only those frames cost a CRC; every packet read after costs one comparison.
    pub fn check_fcs(&mut self) {
        self.fcs_sample.get_or_insert_with(Box::default);
    }

    /// The frames checked since [`CaptureReader::check_fcs`], if it was called.
    pub fn fcs_sample(&self) -> Option<&FcsSample> {
        self.fcs_sample.as_deref()
    }

    /// For a reader whose packets were read elsewhere (a scan's time chunks, each with a reader
    /// of its own): check the first frames of its file by a read of its start, up to
    /// [`START_READ`] packets, or until every interface that could hide an FCS has had its
    /// [`crate::pipeline::FCS_SAMPLE`] frames checked. Nothing when the reader reads no plain
    /// file (only those are read in chunks), or the start cannot be read (the scan met no
    /// damage there, so this one would not either).
    pub(crate) fn check_fcs_from_start(&mut self) {
        let Some(path) = self.plain_path() else {
            return;
        };
        let Ok(input) = crate::input::open_path(path) else {
            return;
        };
        let Ok(mut again) = CaptureReader::new(input, self.options) else {
            return;
        };
        again.check_fcs();
        let mut read = 0u32;
        while let Ok(Some(_)) = again.next_packet() {
            read += 1;
            if read >= START_READ || (read.is_multiple_of(64) && again.fcs_sampled_all()) {
                break;
            }
        }
        self.fcs_sample = again.fcs_sample;
    }

    /// Every interface declared so far that could hide an FCS (Ethernet, declaring none) has
    /// had its sample checked.
    fn fcs_sampled_all(&self) -> bool {
        let Some(s) = self.fcs_sample.as_deref() else {
            return true;
        };
        self.interfaces.iter().all(|i| {
            i.linktype != wire::linktype::ETHERNET
                || i.fcs_len != 0
                || s.sampled.get(i.index as usize).copied().unwrap_or(0)
                    >= crate::pipeline::FCS_SAMPLE
        })
    }

    /// A warning when frames checked since [`CaptureReader::check_fcs`] end with an FCS the
    /// capture does not declare: an `l1` size that believes the capture counted each 4 B too
    /// long. `None` when none did, or nothing was checked.
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
        };
        assert!(half.undeclared().is_empty());
    }
}
