//! Postings: for each term, its documents in bit-packed blocks of 128 (doc deltas and freqs),
//! a skip table with one entry per block (last doc, offsets, maximum impact) for skipping and
//! block-max pruning, and the positions of each document stored together in a separate file.
//! Spec: `docs/format/postings.md`.
mod reader;
mod writer;

pub use reader::{mark_docs, Corruption, PostingsCursor, TermInfo, MAX_HEADER_LEN, TERMINATED};

/// Impact pairs kept per skip entry.
pub const MAX_IMPACTS: usize = 8;
pub use writer::PostingsWriter;

/// First byte of a full block whose doc ids are a bitset (format v5) instead of packed deltas.
pub const DENSE: u8 = 0xFF;

/// Documents per block.
pub const BLOCK: usize = quarry_codecs::BLOCK_LEN;
/// Bytes per skip entry: last_doc u32, doc_offset u32, pos_offset u64, then the block's impacts:
/// a count u8 and [`MAX_IMPACTS`] slots of (freq u16, norm u8), then 7 bytes of padding.
pub const SKIP_ENTRY_LEN: usize = 48;
/// Bytes of the impacts part of a skip entry.
pub const IMPACTS_LEN: usize = 1 + 3 * MAX_IMPACTS;

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
            *self = Impact {
                max_freq: freq,
                min_norm: norm,
            };
        } else {
            self.max_freq = self.max_freq.max(freq);
            self.min_norm = self.min_norm.min(norm);
        }
    }
}

/// The competitive (freq, norm) pairs of a block: every document of the block has a freq at
/// most and a norm at least those of one of the pairs, so the best score over the pairs bounds
/// every score in the block, whatever the collection statistics (Lucene's competitive impacts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impacts {
    pairs: [Impact; MAX_IMPACTS],
    len: u8,
}

/// Freqs are stored in 16 bits; this value means "65535 or more" and decodes as unbounded.
const FREQ_SATURATED: u16 = u16::MAX;

impl Impacts {
    /// One pair.
    pub fn single(i: Impact) -> Self {
        let mut s = Self::default();
        s.pairs[0] = i;
        s.len = 1;
        s
    }

    /// The Pareto frontier of `(freq, norm)` over `docs`, reduced to at most [`MAX_IMPACTS`]
    /// pairs by merging neighbours into a pair that dominates both. Which neighbours merge is
    /// chosen to loosen the bound least under BM25's shape at average length `avgdl` (any
    /// choice keeps the bound valid; a good one keeps it tight).
    pub fn of(docs: impl Iterator<Item = (u32, u8)>, avgdl: f32) -> Self {
        let mut best = [0u32; 256];
        for (f, n) in docs {
            best[n as usize] = best[n as usize].max(f);
        }
        let mut frontier: Vec<Impact> = Vec::new();
        let mut seen = 0u32;
        for (n, &f) in best.iter().enumerate() {
            if f > seen {
                frontier.push(Impact {
                    max_freq: f,
                    min_norm: n as u8,
                });
                seen = f;
            }
        }
        let avgdl = if avgdl.is_finite() && avgdl > 0.0 {
            avgdl
        } else {
            1.0
        };
        let shape = |i: &Impact| {
            let len = crate::codec::norms::norm_to_length(i.min_norm) as f32;
            let f = i.max_freq as f32;
            f / (f + 1.2 * (0.25 + 0.75 * len / avgdl))
        };
        // Frontier pairs rise in both freq and norm; merging neighbours a, b gives
        // (b.freq, a.norm), which dominates both.
        while frontier.len() > MAX_IMPACTS {
            let mut best = (f32::INFINITY, 0usize);
            for k in 0..frontier.len() - 1 {
                let (a, b) = (frontier[k], frontier[k + 1]);
                let merged = Impact {
                    max_freq: b.max_freq,
                    min_norm: a.min_norm,
                };
                let loss = shape(&merged) - shape(&a).max(shape(&b));
                if loss < best.0 {
                    best = (loss, k);
                }
            }
            let k = best.1;
            frontier[k] = Impact {
                max_freq: frontier[k + 1].max_freq,
                min_norm: frontier[k].min_norm,
            };
            frontier.remove(k + 1);
        }
        let mut s = Self::default();
        s.pairs[..frontier.len()].copy_from_slice(&frontier);
        s.len = frontier.len() as u8;
        s
    }

    pub fn pairs(&self) -> &[Impact] {
        &self.pairs[..self.len as usize]
    }

    /// Whether a document with `freq` and `norm` is bounded by one of the pairs.
    pub fn covers(&self, freq: u32, norm: u8) -> bool {
        self.pairs()
            .iter()
            .any(|p| p.max_freq >= freq && p.min_norm <= norm)
    }

    /// Appends the [`IMPACTS_LEN`]-byte skip-entry encoding.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.len);
        for i in 0..MAX_IMPACTS {
            let p = self.pairs[i];
            let f = if i < self.len as usize {
                u16::try_from(p.max_freq).unwrap_or(FREQ_SATURATED)
            } else {
                0
            };
            out.extend_from_slice(&f.to_le_bytes());
            out.push(p.min_norm);
        }
    }

    /// Decodes the bytes written by [`encode`](Self::encode); `None` if malformed.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let len = *b.first()?;
        if len as usize > MAX_IMPACTS || b.len() < 1 + 3 * MAX_IMPACTS {
            return None;
        }
        let mut s = Self {
            len,
            ..Self::default()
        };
        for i in 0..len as usize {
            let o = 1 + 3 * i;
            let f = u16::from_le_bytes([b[o], b[o + 1]]);
            let max_freq = if f == FREQ_SATURATED {
                u32::MAX
            } else {
                u32::from(f)
            };
            s.pairs[i] = Impact {
                max_freq,
                min_norm: b[o + 2],
            };
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests;
