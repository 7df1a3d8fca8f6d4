//! CRC32C (Castagnoli): the SSE4.2 `crc32` instruction where the CPU has it, found with
//! [`crate::cpu`] (the `crc32c` crate, kept for other CPUs, asks std's feature detection on
//! every call, whose first call costs a fresh process about 90 µs of `cpuid` traps on the
//! benchmark VMs). One dependency chain of 8-byte steps, about 8 GB/s: chunk checks read pages
//! the first time a process touches them, where memory, not the instruction, sets the pace.

/// CRC32C of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c_append(0, bytes)
}

/// Extends a running CRC32C with more bytes (`crc32c(a ++ b) == append(crc32c(a), b)`).
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has(crate::cpu::Feature::Sse42) {
        // SAFETY: the CPU has SSE4.2, checked just above.
        return unsafe { sse42::append(crc, bytes) };
    }
    crc32c::crc32c_append(crc, bytes)
}

#[cfg(target_arch = "x86_64")]
mod sse42 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};

    /// CRC32C with the `crc32` instruction, 8 bytes a step.
    #[target_feature(enable = "sse4.2")]
    pub(super) fn append(crc: u32, bytes: &[u8]) -> u32 {
        let mut c = u64::from(!crc);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let mut c = c as u32;
        for &b in words.remainder() {
            c = _mm_crc32_u8(c, b);
        }
        !c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn known_vector() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(
            crc32c_append(crc32c(b"hello "), b"world"),
            crc32c(b"hello world")
        );
    }

    proptest::proptest! {
        /// The SSE4.2 path and the `crc32c` crate agree on any bytes, start value and split.
        #[test]
        fn agrees_with_the_crc32c_crate(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
            start in proptest::num::u32::ANY,
            cut in 0usize..3000,
        ) {
            let cut = cut.min(bytes.len());
            let want = crc32c::crc32c_append(start, &bytes);
            proptest::prop_assert_eq!(crc32c_append(start, &bytes), want);
            let (a, b) = bytes.split_at(cut);
            proptest::prop_assert_eq!(crc32c_append(crc32c_append(start, a), b), want);
            proptest::prop_assert_eq!(crc32c(&bytes), crc32c::crc32c(&bytes));
        }
    }
}
