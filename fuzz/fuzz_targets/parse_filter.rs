//! `Filter::parse` on arbitrary text, and the parsed filter on headers decoded from the same bytes.
//!
//! Checks: no panic, no hang (the parser and the evaluation are linear in the text); a filter
//! that parses keeps its text, and parses again the same; a refused one says why.
#![no_main]

use burstcore::{wire, Filter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    // Text from the input's first part; headers from the rest, as an Ethernet frame.
    let cut = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let Ok(text) = std::str::from_utf8(&data[..cut]) else {
        return;
    };
    match Filter::parse(text) {
        Ok(f) => {
            assert_eq!(f.text(), text);
            assert_eq!(Filter::parse(text).ok().as_ref(), Some(&f));
            let frame = data.get(cut + 1..).unwrap_or(&[]);
            let h = wire::decode_frame(wire::linktype::ETHERNET, frame, frame.len() as u32);
            let once = f.matches(&h, frame.len() as u32);
            assert_eq!(once, f.matches(&h, frame.len() as u32));
        }
        Err(e) => assert!(!e.reason.is_empty()),
    }
});
