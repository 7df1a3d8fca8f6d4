//! Document length norms: one byte per document and text field, Lucene's SmallFloat
//! `intToByte4` encoding, so scores use the same quantized lengths as Lucene's BM25.
//!
//! File `<segment>.norms`: header, then for each text field (in schema order) `doc_count` bytes
//! (from format v7 followed by the field's group sums, see [`GROUP`]), then footer. A document
//! without the field has norm 0. Offsets live in the segment meta. Spec: `docs/format/norms.md`.

/// From this format version on, each field's norms are followed by one CRC32C per [`GROUP`]
/// bytes: a scorer verifies the groups of the documents it scores, not the field's whole run
/// (2.4 MB on W2, 150 µs of a fresh process's first query).
pub const GROUP_SUMS_SINCE: u32 = 7;
/// Norm bytes (documents) per group checksum: one cache line, so verifying the norm of a scored
/// document reads the line the scorer reads anyway (256-byte groups left the search phase of a
/// W2 cold start 70 µs slower); the sums add 6.25 % to the norms, 0.06 bytes per document.
pub const GROUP: usize = 64;

/// The number of group sums of a field of `doc_count` documents.
pub fn group_count(doc_count: u32) -> usize {
    (doc_count as usize).div_ceil(GROUP)
}

/// Appends the group sums of `norms` (one field's run) to `out`: CRC32C of each [`GROUP`]
/// bytes, the last group shorter, u32 little-endian.
pub fn write_group_sums(norms: &[u8], out: &mut Vec<u8>) {
    for g in norms.chunks(GROUP) {
        out.extend_from_slice(&quarry_codecs::crc32c(g).to_le_bytes());
    }
}

/// Number of small lengths that are encoded exactly (Lucene's `NUM_FREE_VALUES`).
const NUM_FREE_VALUES: u32 = 255 - long_to_int4(i32::MAX as u64);

const fn long_to_int4(i: u64) -> u32 {
    let num_bits = 64 - i.leading_zeros();
    if num_bits < 4 {
        i as u32
    } else {
        let shift = num_bits - 4;
        let mut encoded = (i >> shift) as u32;
        encoded &= 0x07;
        encoded |= (shift + 1) << 3;
        encoded
    }
}

const fn int4_to_long(i: u32) -> u64 {
    let bits = (i & 0x07) as u64;
    let shift = (i >> 3) as i32 - 1;
    if shift == -1 {
        bits
    } else {
        (bits | 0x08) << shift
    }
}

/// Encodes a field length (number of tokens) into one byte; monotonic, exact up to 40.
pub const fn length_to_norm(len: u32) -> u8 {
    if len < NUM_FREE_VALUES {
        len as u8
    } else {
        (NUM_FREE_VALUES + long_to_int4((len - NUM_FREE_VALUES) as u64)) as u8
    }
}

/// Decodes a norm byte back to the (quantized) field length.
pub const fn norm_to_length(b: u8) -> u32 {
    let i = b as u32;
    if i < NUM_FREE_VALUES {
        i
    } else {
        (NUM_FREE_VALUES as u64 + int4_to_long(i - NUM_FREE_VALUES)) as u32
    }
}

/// The 256 decoded lengths, as BM25 uses them.
pub fn length_table() -> [f32; 256] {
    let mut t = [0f32; 256];
    for (i, v) in t.iter_mut().enumerate() {
        *v = norm_to_length(i as u8) as f32;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_lucene_small_float() {
        assert_eq!(NUM_FREE_VALUES, 24);
        for i in 0..24 {
            assert_eq!(length_to_norm(i), i as u8);
            assert_eq!(norm_to_length(i as u8), i);
        }
        // Monotonic, and decode(encode(x)) <= x with encode(decode(b)) == b.
        let mut prev = 0u8;
        for len in 0..100_000u32 {
            let b = length_to_norm(len);
            assert!(b >= prev);
            prev = b;
            assert!(norm_to_length(b) <= len);
            assert_eq!(length_to_norm(norm_to_length(b)), b);
        }
        assert_eq!(length_to_norm(u32::MAX >> 1), 255);
        assert_eq!(norm_to_length(255) as u64, 24 + int4_to_long(231));
    }
}
