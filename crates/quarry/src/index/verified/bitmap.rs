//! Which chunks were checked already? A lock-free bitmap with one bit per chunk (or norm group),
//! set once its checksum matched.
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// One bit per chunk: set once the chunk's checksum matched. Bits are only ever set, never
/// cleared, and only after a successful check, so a set bit always means "checked".
#[derive(Debug)]
pub struct VerifiedBitmap {
    words: Box<[AtomicU64]>,
    chunks: u64,
}

impl VerifiedBitmap {
    /// A bitmap of `chunks` unverified chunks.
    pub fn new(chunks: u64) -> Self {
        let words = chunks.div_ceil(64) as usize;
        Self {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            chunks,
        }
    }

    /// The number of chunks.
    pub fn len(&self) -> u64 {
        self.chunks
    }

    /// True when the bitmap has no chunks.
    pub fn is_empty(&self) -> bool {
        self.chunks == 0
    }

    /// True when every chunk of `range` is verified (an empty range is). One relaxed load per
    /// 64 chunks: the bits are monotone and the bytes they describe are immutable, so no
    /// ordering with other memory is needed.
    #[inline]
    pub fn all_set(&self, range: Range<u64>) -> bool {
        if range.start >= range.end {
            return true;
        }
        if range.end > self.chunks {
            return false;
        }
        let (mut i, end) = (range.start, range.end);
        while i < end {
            let w = (i / 64) as usize;
            let lo = i % 64;
            let hi = ((end - (i - lo)).min(64)) as u32;
            let mask = mask_bits(lo as u32, hi);
            if self.words[w].load(Ordering::Relaxed) & mask != mask {
                return false;
            }
            i = i - lo + 64;
        }
        true
    }

    /// True when chunk `i` is verified.
    #[inline]
    pub fn is_set(&self, i: u64) -> bool {
        self.all_set(i..i + 1)
    }

    /// Records that chunk `i` was checked (idempotent; two threads may both check and set it).
    pub fn set(&self, i: u64) {
        if i < self.chunks {
            self.words[(i / 64) as usize].fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }

    /// The number of verified chunks.
    pub fn count(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }
}

/// Bits `lo..hi` of a word (`hi <= 64`).
#[inline]
fn mask_bits(lo: u32, hi: u32) -> u64 {
    let upper = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}
