//! Fixed-width integers in a chosen byte order, appended to a buffer.

use crate::capture::ByteOrder;

pub(crate) fn u16_bytes(order: ByteOrder, v: u16) -> [u8; 2] {
    match order {
        ByteOrder::Little => v.to_le_bytes(),
        ByteOrder::Big => v.to_be_bytes(),
    }
}

pub(crate) fn u32_bytes(order: ByteOrder, v: u32) -> [u8; 4] {
    match order {
        ByteOrder::Little => v.to_le_bytes(),
        ByteOrder::Big => v.to_be_bytes(),
    }
}

pub(crate) fn u64_bytes(order: ByteOrder, v: u64) -> [u8; 8] {
    match order {
        ByteOrder::Little => v.to_le_bytes(),
        ByteOrder::Big => v.to_be_bytes(),
    }
}

pub(crate) fn put_u16(buf: &mut Vec<u8>, order: ByteOrder, v: u16) {
    buf.extend_from_slice(&u16_bytes(order, v));
}

pub(crate) fn put_u32(buf: &mut Vec<u8>, order: ByteOrder, v: u32) {
    buf.extend_from_slice(&u32_bytes(order, v));
}

pub(crate) fn put_u64(buf: &mut Vec<u8>, order: ByteOrder, v: u64) {
    buf.extend_from_slice(&u64_bytes(order, v));
}

/// Zero bytes that bring `len` up to a multiple of 4.
pub(crate) fn pad4(len: usize) -> &'static [u8] {
    const ZEROS: [u8; 3] = [0; 3];
    let n = (4 - len % 4) % 4;
    ZEROS.get(..n).unwrap_or(&[])
}
