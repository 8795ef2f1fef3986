//! What a capture says it lost while it was recorded: the drop counters of its pcapng
//! Interface Statistics Blocks. Capturing hosts drop packets when their buffer fills, which is
//! in the bursts this crate measures, so every figure read from such a file undercounts exactly
//! where it matters; the file itself is otherwise sound, hence a warning and not an error.

use super::{CaptureReader, Interface};
use crate::error::{ErrorKind, Warning};

impl CaptureReader {
    /// A warning when the capture's own statistics count packets it lost while it was recorded
    /// (`isb_ifdrop`, `isb_osdrop` of each interface's last Interface Statistics Block, read so
    /// far); `None` when every such counter is zero or absent (pcap files carry none).
    pub fn recorded_drops(&self) -> Option<Warning> {
        lost(&self.interfaces)
    }

    /// Take the interfaces a read of the file elsewhere (its chunks, see
    /// [`super::split::SplitPlan::read_whole`]) left, for what is reported afterwards.
    pub(crate) fn adopt_interfaces(&mut self, interfaces: Vec<Interface>) {
        self.interfaces = interfaces;
    }
}

/// The warning for `interfaces`, naming each one that lost packets.
fn lost(interfaces: &[Interface]) -> Option<Warning> {
    let mut each = Vec::new();
    for i in interfaces {
        // All ones is how Wireshark's tools say "not known".
        let known = |c: Option<u64>| c.filter(|&n| n != u64::MAX).unwrap_or(0);
        let (ifd, osd) = (known(i.stats.if_drop), known(i.stats.os_drop));
        if ifd == 0 && osd == 0 {
            continue;
        }
        let name = i.name.as_deref().map_or(String::new(), |n| {
            format!(" \"{}\"", crate::printable::printable(n))
        });
        let counts: Vec<String> = [(ifd, "isb_ifdrop"), (osd, "isb_osdrop")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, field)| format!("{field} {n}"))
            .collect();
        each.push(format!(
            "interface {}{name}: {}",
            i.index,
            counts.join(", ")
        ));
    }
    if each.is_empty() {
        return None;
    }
    // The counters are named, not explained: the spec has isb_ifdrop count what the interface
    // dropped and isb_osdrop what the OS did, but dumpcap puts the OS capture buffer's drops in
    // isb_ifdrop. Never summed, as a tool could count one loss in both.
    Some(Warning::new(
        ErrorKind::PacketsLost,
        None,
        format!(
            "the capture's own statistics count packets lost while it was recorded ({}): they \
             were never written, so every figure here undercounts the traffic, most in the \
             bursts where the capturing host fell behind; record again with a larger capture \
             buffer (dumpcap -B, tcpdump -B), a smaller snaplen, or a capture filter",
            each.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{InterfaceStats, TsResolution};

    fn interface(
        index: u32,
        name: Option<&str>,
        if_drop: Option<u64>,
        os_drop: Option<u64>,
    ) -> Interface {
        Interface {
            index,
            section: 0,
            local_id: index,
            linktype: 1,
            fcs_len: 0,
            snaplen: 0,
            resolution: TsResolution::Pow10(6),
            ts_offset_s: 0,
            name: name.map(str::to_string),
            description: None,
            stats: InterfaceStats {
                isb_count: 1,
                if_drop,
                os_drop,
                ..InterfaceStats::default()
            },
        }
    }

    #[test]
    fn only_counters_above_zero_are_told_each_by_its_field() {
        assert_eq!(lost(&[]), None);
        assert_eq!(lost(&[interface(0, None, None, None)]), None);
        assert_eq!(lost(&[interface(0, Some("eth0"), Some(0), Some(0))]), None);
        let w = lost(&[
            interface(0, Some("eth0"), Some(0), None),
            interface(1, None, Some(7), Some(2)),
            interface(2, Some("eth2"), None, Some(u64::MAX - 1)),
            // Not known (Wireshark's tools write all ones for that).
            interface(3, None, Some(u64::MAX), Some(u64::MAX)),
        ])
        .expect("told");
        assert_eq!(w.kind, ErrorKind::PacketsLost);
        assert!(
            w.reason.contains(&format!(
                "(interface 1: isb_ifdrop 7, isb_osdrop 2; interface 2 \"eth2\": isb_osdrop {}):",
                u64::MAX - 1
            )),
            "{}",
            w.reason
        );
        // A name is the capture's text: its controls are escaped, not sent to the terminal.
        let w = lost(&[interface(4, Some("eth\u{1b}[31m0\n"), Some(1), None)]).expect("told");
        assert!(
            w.reason
                .contains("(interface 4 \"eth\\x1b[31m0\\n\": isb_ifdrop 1):"),
            "{}",
            w.reason
        );
    }
}
