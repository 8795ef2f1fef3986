//! Fixed-width integers from a block or record, in the byte order of its section or file.
//! Callers check lengths first; a read past the end gives 0 instead of a panic, so a check that
//! is wrong cannot crash the reader.

macro_rules! int_at {
    ($name:ident, $t:ty, $n:expr) => {
        #[inline(always)]
        pub(super) fn $name(b: &[u8], i: usize, big: bool) -> $t {
            let v = b
                .get(i..i + $n)
                .and_then(|s| <[u8; $n]>::try_from(s).ok())
                .unwrap_or([0; $n]);
            if big {
                <$t>::from_be_bytes(v)
            } else {
                <$t>::from_le_bytes(v)
            }
        }
    };
}

int_at!(u16_at, u16, 2);
int_at!(u32_at, u32, 4);
int_at!(u64_at, u64, 8);
