//! The pcapng conformance suite (pcapng-test-generator plus gopacket's test901/902) against
//! `corpus/pcapng-test-suite-expectations.md`, whose numbers were read back by an independent
//! walker: per file the number of sections, interfaces and packets, and per packet its section,
//! block type, section-local interface, timestamp, captured and original length.

mod reader_util;

use burstcore::capture::ReadOptions;
use burstcore::ErrorKind;
use reader_util::{parse_ts, read_path, shared_dir};

struct Row {
    section: u32,
    spb: bool,
    iface: u32,
    ts_ns: Option<i64>,
    caplen: u32,
    origlen: u32,
}

struct Test {
    name: String,
    files: Vec<String>,
    sections: usize,
    interfaces: usize,
    section_versions: Vec<String>,
    rows: Vec<Row>,
}

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

fn number_after(line: &str, key: &str) -> usize {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    let digits: String = rest
        .trim_start_matches([' ', '*'])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("number after {key} in {line}"))
}

fn parse(doc: &str) -> Vec<Test> {
    let mut tests = Vec::new();
    for chunk in doc.split("\n### ").skip(1) {
        let name = chunk.split_whitespace().next().unwrap_or("").to_string();
        if !name.starts_with("test") {
            continue;
        }
        let mut t = Test {
            name,
            files: Vec::new(),
            sections: 0,
            interfaces: 0,
            section_versions: Vec::new(),
            rows: Vec::new(),
        };
        for line in chunk.lines() {
            if let Some(rest) = line.strip_prefix("Files: ") {
                t.files = rest
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect();
            } else if line.starts_with("Sections: ") {
                t.sections = number_after(line, "Sections:");
                t.interfaces = number_after(line, "interfaces (all sections):");
            } else if line.starts_with('|') && !line.starts_with("|---") {
                let c = cells(line);
                if c.len() == 5 && c[0].parse::<u32>().is_ok() {
                    t.section_versions.push(c[2].clone());
                } else if c.len() == 8 && c[0].parse::<u32>().is_ok() {
                    t.rows.push(Row {
                        section: c[1].parse().unwrap(),
                        spb: c[2] == "SPB",
                        iface: c[3].parse().unwrap(),
                        ts_ns: parse_ts(&c[5]).map(|v| i64::try_from(v).unwrap()),
                        caplen: c[6].parse().unwrap(),
                        origlen: c[7].parse().unwrap(),
                    });
                }
            }
        }
        tests.push(t);
    }
    tests
}

#[test]
fn pcapng_suite_matches_expectations() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipped: no shared folder (set BURSTCORE_SHARED)");
        return;
    };
    let corpus = shared.join("corpus");
    let doc = std::fs::read_to_string(corpus.join("pcapng-test-suite-expectations.md"))
        .expect("expectations file");
    let tests = parse(&doc);
    assert_eq!(tests.len(), 26, "tests described in the expectations file");
    let mut files = 0;
    let mut packets = 0;
    for t in &tests {
        assert_eq!(t.files.len(), 2, "{}: LE and BE files", t.name);
        assert_eq!(t.section_versions.len(), t.sections, "{}", t.name);
        // A section with an unsupported version stops the read there (as tshark does).
        let readable = t
            .section_versions
            .iter()
            .position(|v| v != "1.0")
            .unwrap_or(t.sections);
        let want: Vec<&Row> = t
            .rows
            .iter()
            .filter(|r| (r.section as usize) < readable)
            .collect();
        for f in &t.files {
            let r = read_path(&corpus.join(f), ReadOptions::default());
            files += 1;
            if readable < t.sections {
                let e = r
                    .error
                    .as_ref()
                    .unwrap_or_else(|| panic!("{f}: expected an unsupported-version error"));
                assert_eq!(e.kind, ErrorKind::UnsupportedVersion, "{f}: {e}");
                assert_eq!(r.sections.len(), readable, "{f}");
            } else {
                assert!(r.error.is_none(), "{f}: {:?}", r.error);
                assert!(r.warnings.is_empty(), "{f}: {:?}", r.warnings);
                assert_eq!(r.sections.len(), t.sections, "{f}: sections");
                assert_eq!(r.interfaces.len(), t.interfaces, "{f}: interfaces");
            }
            assert_eq!(r.packets.len(), want.len(), "{f}: packets");
            for (i, (p, w)) in r.packets.iter().zip(&want).enumerate() {
                let got = (p.section, p.local_id, p.ts_ns, p.cap_len, p.wire_len);
                let exp = (w.section, w.iface, w.ts_ns, w.caplen, w.origlen);
                assert_eq!(got, exp, "{f}: packet {}", i + 1);
                assert_eq!(p.ts_ns.is_none(), w.spb, "{f}: packet {} block type", i + 1);
                assert_eq!(p.data.len() as u32, p.cap_len);
            }
            packets += r.packets.len();
        }
    }
    eprintln!("{files} suite files checked, {packets} packets");
}
