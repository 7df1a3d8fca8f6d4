//! Little-endian arrays of `f32`, `u32` and `i8` used in place: a mapped file's bytes seen as
//! the numbers they hold, without a copy, so that vector kernels and graph walks read the page
//! cache directly.
//!
//! A view exists only where it is exact: on a little-endian target and, for 4-byte types, when
//! the bytes start at a multiple of 4 and hold whole values. Otherwise the functions return
//! `None` and the caller decodes a copy (a pread buffer, a big-endian machine).

/// The bytes as `f32`s, in place; `None` unless aligned, whole and little-endian.
pub fn f32s(bytes: &[u8]) -> Option<&[f32]> {
    if cfg!(target_endian = "big") || !bytes.len().is_multiple_of(4) {
        return None;
    }
    // SAFETY: every bit pattern is a valid f32; `align_to` only yields the aligned middle part,
    // and the empty prefix/suffix check below makes the view cover exactly `bytes`.
    let (head, mid, tail) = unsafe { bytes.align_to::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(mid)
}

/// The bytes as `u32`s, in place; `None` unless aligned, whole and little-endian.
pub fn u32s(bytes: &[u8]) -> Option<&[u32]> {
    if cfg!(target_endian = "big") || !bytes.len().is_multiple_of(4) {
        return None;
    }
    // SAFETY: every bit pattern is a valid u32; as in `f32s`, the view covers exactly `bytes`.
    let (head, mid, tail) = unsafe { bytes.align_to::<u32>() };
    (head.is_empty() && tail.is_empty()).then_some(mid)
}

/// The bytes as `i8`s, in place (always possible).
pub fn i8s(bytes: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment and every bit pattern is valid.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// `f32`s decoded from little-endian bytes (the copy for when [`f32s`] says no); a trailing
/// partial value is ignored.
pub fn f32s_copied(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `u32`s decoded from little-endian bytes (the copy for when [`u32s`] says no).
pub fn u32s_copied(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn views_equal_decoded_copies(values in proptest::collection::vec(any::<u32>(), 0..64), shift in 0usize..4) {
            let mut bytes = vec![0u8; shift];
            for v in &values {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            let b = &bytes[shift..];
            prop_assert_eq!(u32s_copied(b), values.clone());
            if let Some(view) = u32s(b) {
                prop_assert_eq!(view, &values[..]);
            }
            let floats: Vec<u32> = f32s_copied(b).iter().map(|f| f.to_bits()).collect();
            prop_assert_eq!(&floats, &values);
            if let Some(view) = f32s(b) {
                let bits: Vec<u32> = view.iter().map(|f| f.to_bits()).collect();
                prop_assert_eq!(bits, values);
            }
            prop_assert!(u32s(&b[..b.len().saturating_sub(1)]).is_none() || b.is_empty());
        }
    }

    #[test]
    fn aligned_bytes_are_viewed_in_place() {
        // A u64 buffer is 8-aligned, so its bytes can be seen as f32s and u32s.
        let words = [f32::to_bits(1.5) as u64 | (u64::from(7u32) << 32), 0];
        // SAFETY: reading the initialized bytes of a local array.
        let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 16) };
        let f = f32s(bytes).expect("aligned");
        assert_eq!(f[0], 1.5);
        assert_eq!(u32s(bytes).expect("aligned")[1], 7);
        assert!(f32s(&bytes[1..13]).is_none(), "misaligned");
        assert!(u32s(&bytes[..6]).is_none(), "partial value");
        assert_eq!(i8s(&[255, 1]), &[-1i8, 1]);
    }
}
