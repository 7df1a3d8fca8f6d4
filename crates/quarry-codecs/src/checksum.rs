//! CRC32C (Castagnoli), hardware-accelerated by the `crc32c` crate where the CPU has SSE4.2.

/// CRC32C of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Extends a running CRC32C with more bytes (`crc32c(a ++ b) == append(crc32c(a), b)`).
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, bytes)
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
}
