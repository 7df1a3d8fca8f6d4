//! LEB128 varints: 7 bits per byte, low bits first, high bit set on all but the last byte.
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
