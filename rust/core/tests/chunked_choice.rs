//! Which scans go in time chunks: `chunked::worthwhile`, which `pipeline::scan_threads` (and so
//! Python's `scan` and the command line) asks, keeps every scan with a time range or a filter
//! out of them, as the chunks' readers leave no packet out. The FCS check of a time-chunked
//! scan (each chunk noting its frames, `FcsSample::follow`) is then only ever run on whole
//! files: the range and filter cases are the other ways' (one thread, or metrics shared among
//! threads). Both are pinned here: a change that sends a range into the chunks must come with
//! the FCS coverage of them, and the numbers and the undeclared-FCS warning of a ranged or
//! filtered `l1` scan on several threads are those of one thread and of an oracle that sizes
//! each frame and checks its FCS with a CRC-32 written here.

use burstcore::capture::{ByteOrder, TsResolution};
use burstcore::engine::{By, Closure, GroupKey, ScanConfig};
use burstcore::pipeline::{self, Fcs, SizeKind};
use burstcore::writer::PcapNgWriter;
use burstcore::{ErrorKind, Filter, TimeRange};
use std::collections::BTreeMap;
use std::path::Path;

mod reader_util;
mod scratch;
use reader_util::open_for_chunks;
use scratch::Scratch;

const T0: i64 = 1_780_000_000_000_000_000;
const STEP: i64 = 1_000;
const PER_IFACE: usize = 3_000;
/// Interface 1's frame 150 and 2's frame 150 lie on either side of it.
const HALF: i64 = T0 + 150 * 3 * STEP;

/// CRC-32 (IEEE 802.3, reflected, as Ethernet's FCS and zlib's `crc32`), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// An Ethernet/IPv4/UDP frame to `port` with `payload` bytes (no FCS), checksums left zero.
fn udp_frame(port: u16, payload: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let ip_len = (20 + 8 + payload) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let udp_len = (8 + payload) as u16;
    f.extend_from_slice(&[0x30, 0x39, (port >> 8) as u8, port as u8]);
    f.extend_from_slice(&[(udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    f.extend((0..payload).map(|i| (i * 7 + usize::from(port)) as u8));
    f
}

/// One packet as the test writes it: its interface, time, frame (FCS included if it has one).
struct Frame {
    iface: u32,
    ts: i64,
    data: Vec<u8>,
}

/// Interface 0 declares a 4 B FCS (`if_fcslen`) and every frame has it; interface 1 declares
/// none, yet its first 150 frames end with one (the rest do not); interface 2 declares none
/// and its frames have none. Each interface's own UDP port; sizes vary, some under 60 B.
fn frames() -> Vec<Frame> {
    let mut out = Vec::new();
    for k in 0..PER_IFACE {
        for iface in 0..3u32 {
            let payload = (k * 37 + iface as usize * 101) % 1_400;
            let mut data = udp_frame(5000 + iface as u16, payload);
            if iface == 0 || (iface == 1 && k < 150) {
                let fcs = crc32(&data);
                data.extend_from_slice(&fcs.to_le_bytes());
            }
            let ts = T0 + (3 * k as i64 + i64::from(iface)) * STEP;
            out.push(Frame { iface, ts, data });
        }
    }
    out
}

fn write(path: &Path, frames: &[Frame]) {
    let mut w = PcapNgWriter::new(Vec::new());
    w.section(ByteOrder::Little, None).expect("shb");
    for fcs_len in [4, 0, 0] {
        w.interface_with_fcs(1, 0, TsResolution::Pow10(9), 0, None, fcs_len)
            .expect("idb");
    }
    for f in frames {
        w.enhanced_packet(f.iface, f.ts, f.data.len() as u32, &f.data)
            .expect("epb");
    }
    std::fs::write(path, w.finish().expect("finish")).expect("write");
}

fn config() -> ScanConfig {
    ScanConfig::default()
        .with_windows_ns(vec![1_000, 10_000, 1_000_000])
        .with_closure(Closure::HalfOpen)
        .with_rates_bps(vec![1_000_000_000, 10_000_000_000])
        .with_bins_ns(vec![100_000])
        .with_by(vec![By::All, By::Interface])
}

/// What an Ethernet wire carries for `f` (docs/metrics.md, `"l1"`): the frame without the FCS
/// `fcs` says it holds, padded to 60 B, + 4 B FCS + 20 B preamble, SFD and gap.
fn l1(f: &Frame, fcs: Fcs) -> u64 {
    let has = match fcs {
        Fcs::Declared => f.iface == 0,
        Fcs::Present => true,
        Fcs::Absent => false,
    };
    let frame = f.data.len() - if has { 4 } else { 0 };
    frame.max(60) as u64 + 24
}

/// The interfaces the undeclared-FCS check tells of, as (interface, valid, checked): of each
/// interface that declares none (1, 2), the first 64 frames kept, told when more than half end
/// with the CRC-32 of the bytes before them.
fn fcs_oracle(frames: &[Frame], kept: &dyn Fn(&Frame) -> bool) -> Vec<(u32, usize, usize)> {
    let mut checked: BTreeMap<u32, Vec<bool>> = BTreeMap::new();
    for f in frames.iter().filter(|f| f.iface != 0 && kept(f)) {
        let c = checked.entry(f.iface).or_default();
        if c.len() < 64 {
            let (body, tail) = f.data.split_at(f.data.len() - 4);
            c.push(crc32(body).to_le_bytes() == tail);
        }
    }
    checked
        .into_iter()
        .map(|(i, c)| (i, c.iter().filter(|&&v| v).count(), c.len()))
        .filter(|&(_, v, n)| 2 * v > n)
        .collect()
}

#[test]
fn a_time_range_or_a_filter_keeps_a_scan_out_of_time_chunks() {
    let plain = config();
    // Not vacuous: the same scan without them is one for time chunks.
    assert!(burstcore::chunked::worthwhile(&plain));
    let ranges = [
        TimeRange {
            start_ns: Some(HALF),
            end_ns: None,
        },
        TimeRange {
            start_ns: None,
            end_ns: Some(HALF),
        },
        TimeRange {
            start_ns: Some(T0),
            end_ns: Some(HALF),
        },
    ];
    for range in ranges {
        let c = plain.clone().with_time_range(range);
        assert!(!burstcore::chunked::worthwhile(&c), "{range:?}");
    }
    let udp = Filter::parse("udp port 5001").expect("filter");
    assert!(!burstcore::chunked::worthwhile(
        &plain.clone().with_filter(Some(udp.clone()))
    ));
    assert!(!burstcore::chunked::worthwhile(
        &plain.clone().with_file_filters(vec![Some(udp)])
    ));
}

#[test]
fn ranged_and_filtered_l1_scans_of_fcs_frames_on_threads_match_one_thread_and_the_oracle() {
    let dir = Scratch::new("chunked_choice");
    let path = dir.join("fcs.pcapng");
    let all = frames();
    write(&path, &all);
    let udp1 = Filter::parse("udp port 5001").expect("filter");
    let not1 = Filter::parse("not udp port 5001").expect("filter");
    type Kept = Box<dyn Fn(&Frame) -> bool>;
    let cases: Vec<(&str, ScanConfig, Kept)> = vec![
        ("whole", config(), Box::new(|_| true)),
        (
            "from HALF",
            config().with_time_range(TimeRange {
                start_ns: Some(HALF),
                end_ns: None,
            }),
            Box::new(|f| f.ts >= HALF),
        ),
        (
            "to HALF",
            config().with_time_range(TimeRange {
                start_ns: None,
                end_ns: Some(HALF),
            }),
            Box::new(|f| f.ts < HALF),
        ),
        (
            "udp port 5001",
            config().with_filter(Some(udp1.clone())),
            Box::new(|f| f.iface == 1),
        ),
        (
            "not udp port 5001",
            config().with_filter(Some(not1)),
            Box::new(|f| f.iface != 1),
        ),
        (
            "udp port 5001 from HALF",
            config().with_filter(Some(udp1)).with_time_range(TimeRange {
                start_ns: Some(HALF),
                end_ns: None,
            }),
            Box::new(|f| f.iface == 1 && f.ts >= HALF),
        ),
    ];
    let mut told_somewhere = false;
    for (name, c, kept) in &cases {
        for fcs in [Fcs::Declared, Fcs::Present, Fcs::Absent] {
            let mut want_bytes: BTreeMap<GroupKey, u64> = BTreeMap::new();
            for f in all.iter().filter(|f| kept(f)) {
                *want_bytes.entry(GroupKey::All).or_default() += l1(f, fcs);
                *want_bytes.entry(GroupKey::Interface(f.iface)).or_default() += l1(f, fcs);
            }
            let want_fcs = if fcs == Fcs::Declared {
                fcs_oracle(&all, kept)
            } else {
                Vec::new()
            };
            told_somewhere |= !want_fcs.is_empty();
            let mut one = None;
            for threads in [1, 2, 3] {
                let ctx = format!("{name}, {fcs:?}, {threads} threads");
                let mut readers = vec![open_for_chunks(&path)];
                let (out, acc) = pipeline::scan_threads(
                    &mut readers,
                    c.clone(),
                    SizeKind::L1(fcs),
                    threads,
                    &mut |_| Ok(()),
                )
                .expect("scan");
                let got_bytes: BTreeMap<GroupKey, u64> =
                    out.groups.iter().map(|g| (g.group, g.bytes)).collect();
                assert_eq!(got_bytes, want_bytes, "{ctx}");
                assert_eq!(
                    acc.counted,
                    all.iter().filter(|f| kept(f)).count() as u64,
                    "{ctx}"
                );
                // Told once, naming each interface and its count, as the oracle finds them.
                // Where a program finds it (Python's `warnings_of` too): after the read.
                let told: Vec<String> = readers[0]
                    .warnings()
                    .iter()
                    .cloned()
                    .chain(readers[0].undeclared_fcs())
                    .filter(|w| w.kind == ErrorKind::UndeclaredFcs)
                    .map(|w| w.to_string())
                    .collect();
                if want_fcs.is_empty() {
                    assert!(told.is_empty(), "{ctx}: {told:?}");
                } else {
                    assert_eq!(told.len(), 1, "{ctx}: {told:?}");
                    let each: Vec<String> = want_fcs
                        .iter()
                        .map(|(i, v, n)| {
                            format!("interface {i}: {v} of its first {n} whole frames")
                        })
                        .collect();
                    assert!(
                        told[0].contains(&format!("({};", each.join(", "))),
                        "{ctx}: {told:?}"
                    );
                }
                // Every table as one thread's.
                let all_out = (out.envelope, out.backlog, out.series, out.groups, acc, told);
                match &one {
                    None => one = Some(all_out),
                    Some(first) => assert!(*first == all_out, "{ctx}: not as on one thread"),
                }
            }
        }
    }
    assert!(told_somewhere, "no case has an undeclared FCS to tell of");
}

/// `chunked::scan` is public: an embedder may call it with any config. It used to read every
/// packet of the file whatever the config's time range and filter (9,000 counted where one
/// thread counts 8,550 from HALF, and 3,000 through the filter), as it left the choice to
/// `worthwhile`, which only `pipeline::scan_threads` asks. It now refuses such a config
/// (`Ok(None)`, "scan another way"), and the caller's scan on one thread gives the numbers.
#[test]
fn chunked_scan_called_directly_refuses_a_range_and_a_filter() {
    let dir = Scratch::new("chunked_choice");
    let path = dir.join("fcs.pcapng");
    write(&path, &frames());
    let ranged = config().with_time_range(TimeRange {
        start_ns: Some(HALF),
        end_ns: None,
    });
    let filtered = config().with_filter(Some(Filter::parse("udp port 5001").expect("filter")));
    for (name, c) in [("from HALF", ranged), ("udp port 5001", filtered)] {
        let size = SizeKind::L1(Fcs::Declared);
        let mut one = vec![open_for_chunks(&path)];
        let want =
            pipeline::scan_threads(&mut one, c.clone(), size, 1, &mut |_| Ok(())).expect("scan");
        let mut readers = vec![open_for_chunks(&path)];
        let got = burstcore::chunked::scan(&mut readers, &c, size, false, 2, &mut |_| Ok(()))
            .expect("chunked scan");
        assert!(
            got.is_none(),
            "{name}: time chunks took a config they do not apply"
        );
        // The same config without the range or filter is cut: the refusal is the config's.
        let mut plain = vec![open_for_chunks(&path)];
        let whole =
            burstcore::chunked::scan(&mut plain, &config(), size, false, 2, &mut |_| Ok(()))
                .expect("chunked scan");
        assert!(whole.is_some(), "{name}: the plain scan was not cut either");
        // Refused before any read: the caller's scan of the same readers gives the numbers.
        let again = pipeline::scan_threads(&mut readers, c.clone(), size, 1, &mut |_| Ok(()))
            .expect("scan");
        assert_eq!(again.1.counted, want.1.counted, "{name}");
        assert_eq!(again.0.groups, want.0.groups, "{name}");
        assert_eq!(
            readers[0].undeclared_fcs(),
            one[0].undeclared_fcs(),
            "{name}"
        );
    }
}

/// `chunked::scan`'s `decode` is the caller's word for whether to decode headers; an embedder's
/// `false` with a size read from the IP header or a grouping by address left every frame
/// unsized (counted 0 of 9,000, all `no_size`) or in no host's group, where one thread decodes
/// what the config needs (`pipeline::scan_threads` works it out). The chunks now decode what the
/// config and size need whatever `decode` says: the numbers are one thread's.
#[test]
fn chunked_scan_called_directly_decodes_what_the_config_needs() {
    let dir = Scratch::new("chunked_choice");
    let path = dir.join("fcs.pcapng");
    write(&path, &frames());
    let cases = [
        ("ip size", config(), SizeKind::Ip),
        ("payload size", config(), SizeKind::Payload),
        (
            "by src and dst port",
            config().with_by(vec![By::All, By::Src, By::Dst, By::Pair]),
            SizeKind::Wire,
        ),
    ];
    for (name, c, size) in cases {
        let mut one = vec![open_for_chunks(&path)];
        let want =
            pipeline::scan_threads(&mut one, c.clone(), size, 1, &mut |_| Ok(())).expect("scan");
        assert_eq!(want.1.counted, (3 * PER_IFACE) as u64, "{name}");
        for decode in [false, true] {
            let mut readers = vec![open_for_chunks(&path)];
            let got = burstcore::chunked::scan(&mut readers, &c, size, decode, 2, &mut |_| Ok(()))
                .expect("chunked scan")
                .unwrap_or_else(|| panic!("{name}: not cut"));
            assert_eq!(got.1, want.1, "{name}, decode {decode}");
            assert!(
                got.0.groups == want.0.groups,
                "{name}, decode {decode}: groups not one thread's"
            );
            assert!(got.0.envelope == want.0.envelope, "{name}, decode {decode}");
            assert!(got.0.series == want.0.series, "{name}, decode {decode}");
        }
    }
}

/// `pipeline::scan_threads` has its readers check for an undeclared FCS under `l1` believing
/// the capture; `chunked::scan` called directly did not (no `undeclared_fcs` warning where one
/// thread gives one, the numbers the same). It now asks for the check itself, as the pipeline.
#[test]
fn chunked_scan_called_directly_checks_for_an_undeclared_fcs_as_the_pipeline() {
    let dir = Scratch::new("chunked_choice");
    let path = dir.join("fcs.pcapng");
    let all = frames();
    write(&path, &all);
    let size = SizeKind::L1(Fcs::Declared);
    let mut one = vec![open_for_chunks(&path)];
    let want = pipeline::scan_threads(&mut one, config(), size, 1, &mut |_| Ok(())).expect("scan");
    let told = one[0].undeclared_fcs();
    // Not vacuous: interface 1's first frames end with an FCS it does not declare.
    let said = told.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(said.contains("interface 1: 64 of its first 64"), "{said}");
    let mut readers = vec![open_for_chunks(&path)];
    let got = burstcore::chunked::scan(&mut readers, &config(), size, false, 2, &mut |_| Ok(()))
        .expect("chunked scan")
        .expect("cut");
    assert_eq!(got.1, want.1);
    assert!(got.0.groups == want.0.groups);
    assert_eq!(readers[0].undeclared_fcs(), told);
}
