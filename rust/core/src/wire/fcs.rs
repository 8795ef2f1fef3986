//! The Ethernet frame check sequence: IEEE 802.3's CRC-32, which a capture may keep at the end of
//! each frame without declaring it (a switch's mirror port often does). Its bytes are then part
//! of every wire length, and a layer-1 count that adds an FCS of its own counts it twice.

/// Bytes of an Ethernet FCS.
pub const FCS_LEN: usize = 4;

/// IEEE 802.3's CRC-32 (polynomial 0x04C11DB7 reflected, initial value and final XOR all ones),
/// the value an Ethernet frame's last four bytes hold, least significant byte first.
pub fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(u32::MAX, |crc, &b| {
        TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8)
    })
}

/// Whether `frame` (an Ethernet frame as captured, whole) ends with the FCS of the bytes before
/// it. A frame without one matches by chance once in 2^32, so a few frames that all match are
/// proof enough.
pub fn ends_with_fcs(frame: &[u8]) -> bool {
    // The shortest frame that can hold one: a 14-byte header and the FCS.
    if frame.len() < 14 + FCS_LEN {
        return false;
    }
    let (body, fcs) = frame.split_at(frame.len() - FCS_LEN);
    crc32(body).to_le_bytes() == fcs
}

/// A byte's CRC step, built at compile time: one lookup per byte instead of eight shifts.
const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_ieee_802_3s() {
        // The CRC-32 check value every catalogue of CRCs lists for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn a_frame_with_its_fcs_is_told_from_one_without() {
        let frame: Vec<u8> = (0u8..60).collect();
        let mut with = frame.clone();
        with.extend_from_slice(&crc32(&frame).to_le_bytes());
        assert!(ends_with_fcs(&with));
        assert!(!ends_with_fcs(&frame));
        // One bit wrong anywhere: no longer its FCS.
        with[20] ^= 1;
        assert!(!ends_with_fcs(&with));
        assert!(!ends_with_fcs(&with[..17]));
    }
}
