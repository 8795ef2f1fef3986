//! The pcap/pcapng readers through `CaptureReader`, plain and through gzip/zstd.
//!
//! Differential check: the same bytes read through a compressed stream give exactly the same
//! packets and the same ending (error kind and offset, warnings) as the plain read; a compressed
//! stream cut short gives a prefix of the plain packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let h = common::fnv(data);
    let opts = common::options(h);
    let plain = common::read_all(data.to_vec(), opts);

    // Compression is recognised by content: a plain input that starts like gzip/zstd is not a
    // plain capture, so only compare when the plain bytes do not look compressed themselves.
    let looks_compressed =
        data.starts_with(&[0x1f, 0x8b]) || data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    if looks_compressed || data.len() > 64 << 10 {
        return;
    }
    let compressed = match (h >> 8) % 3 {
        0 => return,
        1 => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(data).unwrap();
            gz.finish().unwrap()
        }
        _ => zstd::stream::encode_all(std::io::Cursor::new(data), 1).unwrap(),
    };
    let whole = common::read_all(compressed.clone(), opts);
    assert_eq!(whole.packets, plain.packets, "compressed read differs");
    assert_eq!(whole.error, plain.error, "compressed read ends differently");
    assert_eq!(
        whole.warnings, plain.warnings,
        "compressed read warns differently"
    );

    // Cut the compressed stream somewhere: never a panic, and only packets of the plain read.
    let cut_at = (h >> 16) as usize % compressed.len().max(1);
    let cut = common::read_all(compressed[..cut_at].to_vec(), opts);
    assert!(cut.packets.len() <= plain.packets.len());
    assert_eq!(cut.packets[..], plain.packets[..cut.packets.len()]);
});
