//! Recognising a capture by its first bytes, and saying what the bytes look like when it is not one.

use crate::error::{Error, ErrorKind};
use crate::input::{Compression, GZIP_MAGIC, ZSTD_MAGIC};

/// Whether `first`, the first bytes of an input, start a capture the reader takes: pcap or pcapng,
/// or a gzip or zstd stream (whose content is sniffed once decompressed). For a caller that must
/// hold a whole stream in memory (to read it twice), so that it reads no further than the start
/// of what is no capture at all (/dev/zero, a text).
pub fn starts_like_capture(first: &[u8]) -> bool {
    let magic = first.get(..4).and_then(|m| <[u8; 4]>::try_from(m).ok());
    first.starts_with(&GZIP_MAGIC)
        || first.starts_with(&ZSTD_MAGIC)
        || magic.is_some_and(|m| format_of(m).is_some())
}

/// Whether `first`, fewer than 4 bytes, could be the start of a capture's magic number (empty
/// included): what a file cut off before its header holds.
pub(crate) fn begins_magic(first: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 7] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x34, 0xcd, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xcd, 0x34],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    first.len() < 4
        && (MAGICS.iter().any(|m| m.starts_with(first))
            || GZIP_MAGIC.starts_with(first)
            || ZSTD_MAGIC.starts_with(first))
}

pub(crate) enum Magic {
    Pcap {
        big: bool,
        nanos: bool,
        modified: bool,
    },
    PcapNg,
}

pub(crate) fn format_of(m: [u8; 4]) -> Option<Magic> {
    let pcap = |big, nanos, modified| {
        Some(Magic::Pcap {
            big,
            nanos,
            modified,
        })
    };
    match m {
        [0xd4, 0xc3, 0xb2, 0xa1] => pcap(false, false, false),
        [0xa1, 0xb2, 0xc3, 0xd4] => pcap(true, false, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => pcap(false, true, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => pcap(true, true, false),
        [0x34, 0xcd, 0xb2, 0xa1] => pcap(false, false, true),
        [0xa1, 0xb2, 0xcd, 0x34] => pcap(true, false, true),
        [0x0a, 0x0d, 0x0d, 0x0a] => Some(Magic::PcapNg),
        _ => None,
    }
}

/// Well-known file signatures, to make the error actionable.
const SIGNATURES: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "a zip archive?"),
    (b"\x7fELF", "an executable?"),
    (b"%PDF", "a PDF document?"),
    (b"BZh", "bzip2-compressed data? decompress it first"),
    (b"\xfd7zXZ", "xz-compressed data? decompress it first"),
    (
        b"\x04\x22\x4d\x18",
        "lz4-compressed data? decompress it first",
    ),
    (b"\x89PNG", "a PNG image?"),
    (
        b"snoop\0",
        "a Solaris snoop capture? convert it with editcap",
    ),
    (
        b"XCP\0",
        "a NetXray/Sniffer capture? convert it with editcap",
    ),
    (b"\xa1\xb2\xc3", "a damaged pcap header?"),
];

pub(crate) fn not_a_capture(first: &[u8], compression: Compression, short: bool) -> Error {
    let inside = match compression {
        Compression::None => String::new(),
        c => format!(" inside the {} stream", c.name()),
    };
    if first.is_empty() {
        return Error::at(
            ErrorKind::NotACapture,
            0,
            format!("empty input{inside}: not a pcap or pcapng file"),
        );
    }
    let hex: Vec<String> = first.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let hex = hex.join(" ");
    if short {
        return Error::at(
            ErrorKind::NotACapture,
            0,
            format!(
                "input{inside} is only {} byte{} ({hex}): too short for a pcap or pcapng file",
                first.len(),
                if first.len() == 1 { "" } else { "s" }
            ),
        );
    }
    let guess = SIGNATURES
        .iter()
        .find(|(sig, _)| first.starts_with(sig))
        .map(|(_, what)| (*what).to_string())
        .or_else(|| {
            let text = first
                .iter()
                .all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b));
            text.then(|| "text?".to_string())
        });
    let guess = guess.map(|g| format!(", {g}")).unwrap_or_default();
    Error::at(
        ErrorKind::NotACapture,
        0,
        format!("not a pcap or pcapng file{inside} (starts with {hex}{guess})"),
    )
}

#[cfg(test)]
mod tests {
    use super::starts_like_capture;

    #[test]
    fn a_capture_is_told_by_its_first_bytes() {
        let captures: [&[u8]; 9] = [
            &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0],
            &[0xa1, 0xb2, 0xc3, 0xd4],
            &[0x4d, 0x3c, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0x3c, 0x4d],
            &[0x34, 0xcd, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0xcd, 0x34],
            &[0x0a, 0x0d, 0x0d, 0x0a, 0x1c],
            &[0x1f, 0x8b],
            &[0x28, 0xb5, 0x2f, 0xfd, 0x00],
        ];
        for first in captures {
            assert!(starts_like_capture(first), "{first:02x?}");
        }
        let others: [&[u8]; 6] = [
            &[],
            &[0; 4],
            &[0x0a, 0x0d, 0x0d],
            &[0x1f],
            b"PK\x03\x04",
            b"text",
        ];
        for first in others {
            assert!(!starts_like_capture(first), "{first:02x?}");
        }
    }
}
