//! Postings: for each term, its documents in bit-packed blocks of 128 (doc deltas and freqs),
//! a skip table with one entry per block (last doc, offsets, maximum impact) for skipping and
//! block-max pruning, and the positions of each document stored together in a separate file.
//! Spec: `docs/format/postings.md`.
mod reader;
mod writer;

pub use reader::{PostingsCursor, TermInfo, MAX_HEADER_LEN, TERMINATED};
pub use writer::PostingsWriter;

/// Documents per block.
pub const BLOCK: usize = quarry_codecs::BLOCK_LEN;
/// Bytes per skip entry: last_doc u32, doc_offset u32, pos_offset u64, max_freq u32, min_norm u8,
/// 3 bytes padding.
pub const SKIP_ENTRY_LEN: usize = 24;

/// The best (freq, norm) pair of a block or term: no document in it has a higher freq or a
/// smaller norm, so `score(max_freq, min_norm)` bounds every score in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impact {
    pub max_freq: u32,
    pub min_norm: u8,
}

impl Impact {
    pub fn merge(&mut self, freq: u32, norm: u8) {
        if self.max_freq == 0 {
            *self = Impact { max_freq: freq, min_norm: norm };
        } else {
            self.max_freq = self.max_freq.max(freq);
            self.min_norm = self.min_norm.min(norm);
        }
    }
}

#[cfg(test)]
mod tests;
