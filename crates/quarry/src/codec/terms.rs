//! The term dictionary: per indexed field, an FST mapping each term's bytes to the offset of its
//! entry in the postings file. Used in place: an FST is read straight from the mapped bytes.
//!
//! File `<segment>.terms`: header, the FSTs of the indexed fields back to back (offsets and
//! lengths in the segment meta), footer. Spec: `docs/format/terms.md`.
use quarry_store::Bytes;

use crate::{Error, Result};

/// Builds one field's FST; keys must be added in increasing byte order.
pub struct TermsWriter {
    builder: fst::MapBuilder<Vec<u8>>,
}

impl Default for TermsWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl TermsWriter {
    pub fn new() -> Self {
        Self {
            builder: fst::MapBuilder::memory(),
        }
    }
    pub fn insert(&mut self, term: &[u8], postings_offset: u64) -> Result<()> {
        self.builder
            .insert(term, postings_offset)
            .map_err(|e| Error::InvalidArgument(format!("term dictionary: {e}")))
    }
    pub fn finish(self) -> Result<Vec<u8>> {
        self.builder
            .into_inner()
            .map_err(|e| Error::InvalidArgument(format!("term dictionary: {e}")))
    }
}

/// One field's term dictionary over bytes of the terms file.
pub struct TermsReader {
    map: fst::Map<Bytes>,
}

impl TermsReader {
    /// Wraps the FST bytes (checks the FST's own header, reads nothing else).
    pub fn open(file: &str, bytes: Bytes) -> Result<Self> {
        let map = fst::Map::new(bytes)
            .map_err(|e| Error::corrupt(file, format!("term dictionary: {e}")))?;
        Ok(Self { map })
    }
    /// The postings offset of `term`.
    pub fn get(&self, term: &[u8]) -> Option<u64> {
        self.map.get(term)
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn map(&self) -> &fst::Map<Bytes> {
        &self.map
    }
}
