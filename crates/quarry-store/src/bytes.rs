//! [`Bytes`]: a cheaply clonable, sliceable view of immutable bytes owned by an `Arc`.
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Immutable bytes: a range of a memory mapping, or a buffer filled by a read.
///
/// Holds a raw pointer into the owner's bytes so that dereferencing is free (no virtual call):
/// readers deref in their hot loops.
#[derive(Clone)]
pub struct Bytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: `ptr` points into the owner's immutable bytes, which are `Send + Sync` and kept alive
// by the `Arc`; `Bytes` only ever hands out shared slices of them.
unsafe impl Send for Bytes {}
// SAFETY: as above; no interior mutability.
unsafe impl Sync for Bytes {}

impl Bytes {
    pub fn from_owner(owner: Arc<dyn AsRef<[u8]> + Send + Sync>) -> Self {
        let slice = (*owner).as_ref();
        let (ptr, len) = (slice.as_ptr(), slice.len());
        Self { owner, ptr, len }
    }
    pub fn from_vec(v: Vec<u8>) -> Self {
        Self::from_owner(Arc::new(v))
    }
    pub fn empty() -> Self {
        Self::from_vec(Vec::new())
    }
    /// A sub-range; `None` if it is out of bounds.
    pub fn slice(&self, range: Range<usize>) -> Option<Bytes> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        // SAFETY: range.start <= self.len was checked, so the pointer stays inside the owner.
        let ptr = unsafe { self.ptr.add(range.start) };
        Some(Bytes {
            owner: self.owner.clone(),
            ptr,
            len: range.end - range.start,
        })
    }
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe a sub-range of the owner's bytes (checked at construction),
        // the owner's bytes never move or change (Vec never mutated after wrapping; mmaps are of
        // immutable files), and the Arc keeps them alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn slicing() {
        let b = Bytes::from_vec((0u8..10).collect());
        let s = b.slice(2..8).unwrap();
        assert_eq!(&*s, &[2, 3, 4, 5, 6, 7]);
        assert_eq!(&*s.slice(1..3).unwrap(), &[3, 4]);
        assert!(s.slice(5..7).is_none());
        #[allow(clippy::reversed_empty_ranges)]
        let bad = s.slice(3..2);
        assert!(bad.is_none());
    }
}
