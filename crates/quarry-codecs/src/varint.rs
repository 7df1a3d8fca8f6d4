//! LEB128 varints: 7 bits per byte, low bits first, high bit set on all but the last byte.
#[cfg(target_arch = "x86_64")]
use crate::cpu::{has_all, Feature};
use crate::CodecError;

/// Appends `v` as a LEB128 varint.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a LEB128 varint.
#[inline]
pub fn write_u32(out: &mut Vec<u8>, v: u32) {
    write_u64(out, v as u64)
}

/// Decodes a varint at `*pos`, advancing it. At most 10 bytes are read.
#[inline]
pub fn read_u64(bytes: &[u8], pos: &mut usize) -> Result<u64, CodecError> {
    let start = *pos;
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(CodecError::Truncated {
                offset: *pos,
                needed: 1,
                available: 0,
            });
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(CodecError::VarintOverflow {
                offset: start,
                max_bytes: 10,
            });
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(CodecError::VarintOverflow {
                offset: start,
                max_bytes: 10,
            });
        }
    }
}

/// Decodes a varint that must fit in 32 bits.
#[inline]
pub fn read_u32(bytes: &[u8], pos: &mut usize) -> Result<u32, CodecError> {
    let start = *pos;
    let v = read_u64(bytes, pos)?;
    u32::try_from(v).map_err(|_| CodecError::VarintOverflow {
        offset: start,
        max_bytes: 5,
    })
}

/// Finds the end of `n` consecutive varints starting at `from` without decoding them: the
/// offset just past the `n`-th byte below `0x80` (a varint's last byte), or `None` when `bytes`
/// ends first. Positions of the documents a phrase passes over are skipped this way.
pub type Skipper = fn(&[u8], usize, u64) -> Option<usize>;

/// [`Skipper`] through the process-wide kernel: AVX-512 or AVX2 where the CPU has it (unless
/// `QUARRY_SIMD=scalar`), else [`skip_scalar`].
#[inline]
pub fn skip(bytes: &[u8], from: usize, n: u64) -> Option<usize> {
    // Sequential reads skip nothing: no call through the kernel pointer.
    if n == 0 {
        return (from <= bytes.len()).then_some(from);
    }
    (skipper())(bytes, from, n)
}

/// The process-wide [`Skipper`], chosen once.
pub fn skipper() -> Skipper {
    static CHOICE: std::sync::OnceLock<Skipper> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| crate::Kernel::pick(avx512_skipper().or_else(avx2_skipper), skip_scalar))
}

/// The portable [`Skipper`] (the reference): terminators counted eight bytes at a time.
pub fn skip_scalar(bytes: &[u8], from: usize, n: u64) -> Option<usize> {
    let mut left = n;
    let mut p = from;
    if left == 0 {
        return (p <= bytes.len()).then_some(p);
    }
    // Whole words while their terminators do not finish the skip.
    while let Some(w) = bytes.get(p..p + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let t = u64::from((!w & 0x8080_8080_8080_8080).count_ones());
        if t >= left {
            break;
        }
        left -= t;
        p += 8;
    }
    while p < bytes.len() {
        left -= u64::from(bytes[p] < 0x80);
        p += 1;
        if left == 0 {
            return Some(p);
        }
    }
    None
}

/// The AVX2 [`Skipper`] if the CPU has AVX2 and `popcnt`.
pub fn avx2_skipper() -> Option<Skipper> {
    #[cfg(target_arch = "x86_64")]
    if has_all(&[Feature::Avx2, Feature::Popcnt]) {
        return Some(|bytes, from, n| {
            // SAFETY: AVX2 and popcnt were detected just above.
            unsafe { skip_avx2(bytes, from, n) }
        });
    }
    None
}

/// 32 bytes at a time: `vpmovmskb` gathers the bytes' high bits (set on all but a varint's
/// last byte), so the terminators are the zero bits of the mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn skip_avx2(bytes: &[u8], from: usize, n: u64) -> Option<usize> {
    use std::arch::x86_64::*;
    let mut left = n;
    let mut p = from;
    while left > 0 && p + 32 <= bytes.len() {
        // SAFETY: `p + 32 <= bytes.len()`: the unaligned load reads inside `bytes`.
        let v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(p).cast::<__m256i>()) };
        let mut ends = !(_mm256_movemask_epi8(v) as u32);
        let t = u64::from(ends.count_ones());
        if t >= left {
            // The `left`-th terminator of this chunk ends the skip.
            for _ in 1..left {
                ends &= ends - 1;
            }
            return Some(p + ends.trailing_zeros() as usize + 1);
        }
        left -= t;
        p += 32;
    }
    skip_scalar(bytes, p, left)
}

/// The AVX-512 [`Skipper`] if the CPU has AVX-512BW, `popcnt` and BMI2.
pub fn avx512_skipper() -> Option<Skipper> {
    #[cfg(target_arch = "x86_64")]
    if has_all(&[
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Popcnt,
        Feature::Bmi2,
    ]) {
        return Some(|bytes, from, n| {
            // SAFETY: AVX-512F/BW, popcnt and BMI2 were detected just above.
            unsafe { skip_avx512(bytes, from, n) }
        });
    }
    None
}

/// 64 bytes at a time: `vpmovb2m` gathers the bytes' high bits, so the terminators are the zero
/// bits of the mask; the chunk that ends the skip finds its `left`-th terminator with one `pdep`
/// (deposit a single bit at the `left`-th set bit of the mask).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,popcnt,bmi2")]
unsafe fn skip_avx512(bytes: &[u8], from: usize, n: u64) -> Option<usize> {
    use std::arch::x86_64::*;
    let mut left = n;
    let mut p = from;
    while left > 0 && p + 64 <= bytes.len() {
        // SAFETY: `p + 64 <= bytes.len()`: the unaligned load reads inside `bytes`.
        let v = unsafe { _mm512_loadu_si512(bytes.as_ptr().add(p).cast()) };
        let ends = !_mm512_movepi8_mask(v);
        let t = u64::from(ends.count_ones());
        if t >= left {
            let bit = _pdep_u64(1u64 << (left - 1), ends);
            return Some(p + bit.trailing_zeros() as usize + 1);
        }
        left -= t;
        p += 64;
    }
    skip_scalar(bytes, p, left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(values in proptest::collection::vec(any::<u64>(), 0..64)) {
            let mut buf = Vec::new();
            for &v in &values { write_u64(&mut buf, v); }
            let mut pos = 0;
            for &v in &values { prop_assert_eq!(read_u64(&buf, &mut pos).unwrap(), v); }
            prop_assert_eq!(pos, buf.len());
        }

        #[test]
        fn skip_kernels_agree(
            bytes in proptest::collection::vec(prop_oneof![0u8..0x80, 0x80u8..=0xff], 0..300),
            from in 0usize..40,
            n in 0u64..200,
        ) {
            let from = from.min(bytes.len());
            // The reference: a byte at a time.
            let mut want = None;
            let mut left = n;
            if left == 0 {
                want = Some(from);
            } else {
                for (i, &b) in bytes.iter().enumerate().skip(from) {
                    left -= u64::from(b < 0x80);
                    if left == 0 {
                        want = Some(i + 1);
                        break;
                    }
                }
            }
            prop_assert_eq!(skip_scalar(&bytes, from, n), want);
            prop_assert_eq!(skip(&bytes, from, n), want);
            for fast in [avx2_skipper(), avx512_skipper()].into_iter().flatten() {
                prop_assert_eq!(fast(&bytes, from, n), want);
            }
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut pos = 0;
            while pos < bytes.len() {
                if read_u64(&bytes, &mut pos).is_err() { break; }
            }
        }
    }

    #[test]
    fn truncated_and_overflow() {
        let mut pos = 0;
        assert!(matches!(
            read_u64(&[0x80, 0x80], &mut pos),
            Err(CodecError::Truncated { .. })
        ));
        let mut pos = 0;
        assert!(matches!(
            read_u64(&[0xff; 11], &mut pos),
            Err(CodecError::VarintOverflow { .. })
        ));
        let mut buf = Vec::new();
        write_u64(&mut buf, u64::from(u32::MAX) + 1);
        let mut pos = 0;
        assert!(read_u32(&buf, &mut pos).is_err());
    }
}
