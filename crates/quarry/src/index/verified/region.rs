//! Is the part of a mapped region a cursor reaches verified? [`RegionCheck`] checks a postings
//! entry's or positions run's chunks as a cursor decodes them.
use std::ops::Range;
use std::sync::Arc;

use quarry_codecs::framing::CHUNK_SIZE;

use super::{chunk_range, verification_enabled, ChunkTable, VerifiedFile};
use crate::Result;

/// Checks the pieces of one region of a memory-mapped v3 file (a postings entry's blocks, a
/// term's positions) as a cursor reaches them, instead of the whole region up front: a query
/// that skips most blocks of a large entry verifies only the chunks it decodes. Warm (the chunks
/// verified before), a check is one relaxed bitmap load.
#[derive(Clone, Debug)]
pub struct RegionCheck {
    file: Arc<VerifiedFile>,
    /// The file offset of region byte 0.
    base: u64,
}

impl RegionCheck {
    /// A check of the `len` bytes at file offset `base` of `file`; `None` when there is
    /// nothing to check: `file` is not checked (v1/v2, verification disabled) or every chunk of
    /// the region was verified before (the warm case: one bitmap scan, no per-block checks).
    pub fn new(file: &Arc<VerifiedFile>, base: u64, len: u64) -> Option<Self> {
        let t = file.table.as_ref().filter(|_| verification_enabled())?;
        let end = base.saturating_add(len).min(t.covered);
        if t.verified.all_set(chunk_range(base, end)) {
            return None;
        }
        Some(Self {
            file: file.clone(),
            base,
        })
    }

    /// Verifies region bytes `[start, end)` (their chunks); the error names the file and chunk.
    #[inline]
    pub fn check(&self, start: usize, end: usize) -> Result<()> {
        let Some(t) = self.file.table.as_ref() else {
            return Ok(());
        };
        let (a, b) = (self.base + start as u64, self.base + end as u64);
        let chunks = chunk_range(a, b.min(t.covered));
        if t.verified.all_set(chunks.clone()) {
            return Ok(());
        }
        self.check_cold(t, chunks)
    }

    #[cold]
    fn check_cold(&self, t: &ChunkTable, chunks: Range<u64>) -> Result<()> {
        let (a, b) = (
            chunks.start * CHUNK_SIZE as u64,
            (chunks.end * CHUNK_SIZE as u64).min(t.covered),
        );
        match self.file.mapped_view() {
            Some(view) if b <= view.len() as u64 => {
                // Fault in exactly these chunks, not the kernel's read-around window.
                self.file.handle.will_need(a, b);
                self.file.check_chunks(t, chunks, 0, &view[..b as usize])
            }
            _ => self.file.verify(a, b),
        }
    }
}
