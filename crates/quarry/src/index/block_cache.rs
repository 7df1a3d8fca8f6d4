//! Which decompressed stored-field blocks does a segment keep at hand? A small cache, so that
//! hits fetched again (a result page shown twice, highlighting after a fetch, popular documents)
//! do not pay for zstd again: a stored block costs about 10 µs to decompress, a document's
//! decoding a few hundred nanoseconds (Tantivy's store reader keeps such a cache too).

use std::sync::{Arc, Mutex};

/// A decompressed stored block: the documents' encoded lengths and the bytes after them.
pub(crate) type DecodedBlock = Arc<(Vec<u32>, Vec<u8>)>;

/// Blocks kept per segment: 32 blocks of about 8 KiB, so 256 KiB at most a segment.
pub(crate) const BLOCKS_PER_SEGMENT: usize = 32;

/// One kept block: its file offset, when it was last used, the block.
type Slot = (u64, u64, DecodedBlock);

/// Decoded blocks by file offset, the least recently used dropped first.
#[derive(Debug, Default)]
pub(crate) struct BlockCache {
    /// A use counter and the slots; linear scans over at most `BLOCKS_PER_SEGMENT`.
    slots: Mutex<(u64, Vec<Slot>)>,
}

impl BlockCache {
    /// The block at `offset` when kept.
    pub(crate) fn get(&self, offset: u64) -> Option<DecodedBlock> {
        let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, slots) = &mut *guard;
        *clock += 1;
        let slot = slots.iter_mut().find(|s| s.0 == offset)?;
        slot.1 = *clock;
        Some(Arc::clone(&slot.2))
    }

    /// Keeps `block` (found at `offset`), dropping the least recently used when full.
    pub(crate) fn insert(&self, offset: u64, block: DecodedBlock) {
        let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, slots) = &mut *guard;
        *clock += 1;
        if let Some(slot) = slots.iter_mut().find(|s| s.0 == offset) {
            slot.1 = *clock;
            return;
        }
        if slots.len() < BLOCKS_PER_SEGMENT {
            slots.push((offset, *clock, block));
        } else if let Some(oldest) = slots.iter_mut().min_by_key(|s| s.1) {
            *oldest = (offset, *clock, block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: u8) -> DecodedBlock {
        Arc::new((vec![1], vec![n]))
    }

    #[test]
    fn keeps_the_most_recently_used_blocks() {
        let c = BlockCache::default();
        assert!(c.get(0).is_none());
        for i in 0..BLOCKS_PER_SEGMENT as u64 {
            c.insert(i * 100, block(i as u8));
        }
        // Block 0 used again: block 100 is now the oldest and goes first.
        assert_eq!(c.get(0).unwrap().1, [0]);
        c.insert(9999, block(7));
        assert!(c.get(100).is_none());
        assert_eq!(c.get(0).unwrap().1, [0]);
        assert_eq!(c.get(9999).unwrap().1, [7]);
        assert_eq!(c.get(200).unwrap().1, [2]);
        // Inserting a kept offset again changes nothing.
        c.insert(200, block(99));
        assert_eq!(c.get(200).unwrap().1, [2]);
    }
}
