//! A bounds-checked little-endian cursor over untrusted bytes.
use crate::{varint, CodecError};

/// Reads fixed-width little-endian integers, varints and byte runs; every read checks bounds.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }
    pub fn at(bytes: &'a [u8], pos: usize) -> Self {
        Self { bytes, pos }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes, advancing past them.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(CodecError::Truncated {
                offset: self.pos,
                needed: n,
                available: self.remaining(),
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    #[inline]
    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.bytes(1)?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(
            self.bytes(2)?.try_into().expect("2 bytes"),
        ))
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(
            self.bytes(4)?.try_into().expect("4 bytes"),
        ))
    }
    #[inline]
    pub fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }
    #[inline]
    pub fn f32(&mut self) -> Result<f32, CodecError> {
        Ok(f32::from_bits(self.u32()?))
    }
    #[inline]
    pub fn vu32(&mut self) -> Result<u32, CodecError> {
        varint::read_u32(self.bytes, &mut self.pos)
    }
    #[inline]
    pub fn vu64(&mut self) -> Result<u64, CodecError> {
        varint::read_u64(self.bytes, &mut self.pos)
    }
    /// A varint length followed by that many bytes.
    pub fn len_prefixed(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.vu64()?;
        let n = usize::try_from(n).map_err(|_| CodecError::Invalid {
            what: format!("length {n}"),
        })?;
        self.bytes(n)
    }
}

/// Little-endian writers matching [`ByteReader`].
pub trait PutLe {
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_vu64(&mut self, v: u64);
    fn put_len_prefixed(&mut self, b: &[u8]);
}

impl PutLe for Vec<u8> {
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes())
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes())
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes())
    }
    fn put_vu64(&mut self, v: u64) {
        varint::write_u64(self, v)
    }
    fn put_len_prefixed(&mut self, b: &[u8]) {
        varint::write_u64(self, b.len() as u64);
        self.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn reads_and_bounds() {
        let mut v = Vec::new();
        v.put_u32(7);
        v.put_vu64(300);
        v.put_len_prefixed(b"abc");
        v.put_u64(u64::MAX);
        let mut r = ByteReader::new(&v);
        assert_eq!(r.u32().unwrap(), 7);
        assert_eq!(r.vu64().unwrap(), 300);
        assert_eq!(r.len_prefixed().unwrap(), b"abc");
        assert_eq!(r.u64().unwrap(), u64::MAX);
        assert!(r.is_empty());
        assert!(matches!(r.u8(), Err(CodecError::Truncated { .. })));
        let mut r = ByteReader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(r.len_prefixed().is_err());
    }
}
