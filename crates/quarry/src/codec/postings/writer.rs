//! Serializes one term's postings at a time into the `.post` and `.pos` buffers.
use quarry_codecs::reader::PutLe;
use quarry_codecs::{dense, varint, BlockCodec};

use super::{Impact, Impacts, BLOCK, DENSE, SKIP_ENTRY_LEN};

/// Appends term entries to the postings and positions byte streams of one segment.
pub struct PostingsWriter {
    codec: BlockCodec,
    /// The postings bytes not yet written out (see [`post_written`](Self::post_written)).
    pub post: Vec<u8>,
    /// The positions bytes not yet written out (see [`pos_written`](Self::pos_written)).
    pub pos: Vec<u8>,
    /// Bytes written out from the front of `post` and `pos` so far (offsets stay file offsets).
    post_taken: u64,
    pos_taken: u64,
    blocks: Vec<u8>,
    skips: Vec<u8>,
    doc_buf: [u32; BLOCK],
    freq_buf: [u32; BLOCK],
}

impl PostingsWriter {
    /// Writers start after the files' headers, so offsets are absolute file offsets.
    pub fn new(post_header: Vec<u8>, pos_header: Vec<u8>) -> Self {
        Self {
            codec: BlockCodec::new(),
            post: post_header,
            pos: pos_header,
            post_taken: 0,
            pos_taken: 0,
            blocks: Vec::new(),
            skips: Vec::new(),
            doc_buf: [0; BLOCK],
            freq_buf: [0; BLOCK],
        }
    }

    /// The postings file's length so far.
    fn post_len(&self) -> u64 {
        self.post_taken + self.post.len() as u64
    }

    /// The positions file's length so far.
    fn pos_len(&self) -> u64 {
        self.pos_taken + self.pos.len() as u64
    }

    /// Drops the postings bytes buffered so far, once the caller has written them out (in
    /// order), so that a large segment need not hold its whole postings file in memory.
    pub fn post_written(&mut self) {
        self.post_taken += self.post.len() as u64;
        self.post.clear();
    }

    /// Drops the buffered positions bytes, as [`post_written`](Self::post_written).
    pub fn pos_written(&mut self) {
        self.pos_taken += self.pos.len() as u64;
        self.pos.clear();
    }

    /// Writes one term. `docs` strictly increasing; `freqs[i] >= 1`; `positions` holds, for each
    /// document in order, its `freqs[i]` positions (increasing) — or is empty for fields without
    /// positions. `norm(doc)` gives the document's norm byte (1 for fields without norms).
    /// Returns the term entry's offset in the postings file.
    /// `avgdl` is the field's average length in this segment: it only steers how block impacts
    /// are summarized (see [`Impacts::of`]).
    pub fn write_term(
        &mut self,
        docs: &[u32],
        freqs: &[u32],
        positions: Option<&[u32]>,
        norm: &dyn Fn(u32) -> u8,
        avgdl: f32,
    ) -> u64 {
        debug_assert_eq!(docs.len(), freqs.len());
        debug_assert!(!docs.is_empty());
        let entry_offset = self.post_len();
        let pos_start = self.pos_len();
        let df = docs.len();
        let n_blocks = df.div_ceil(BLOCK);
        self.blocks.clear();
        self.skips.clear();
        let mut term_impact = Impact::default();
        let mut prev_last = 0u32;
        let mut pos_cursor = 0usize;
        for b in 0..n_blocks {
            let lo = b * BLOCK;
            let hi = (lo + BLOCK).min(df);
            let block_docs = &docs[lo..hi];
            let block_freqs = &freqs[lo..hi];
            let doc_off = self.blocks.len() as u32;
            let pos_off = self.pos_len() - pos_start;
            let mut impact = Impact::default();
            for (&d, &f) in block_docs.iter().zip(block_freqs) {
                impact.merge(f, norm(d));
            }
            term_impact.merge(impact.max_freq, impact.min_norm);
            let impacts = if n_blocks > 1 {
                Impacts::of(
                    block_docs
                        .iter()
                        .zip(block_freqs)
                        .map(|(&d, &f)| (f, norm(d))),
                    avgdl,
                )
            } else {
                Impacts::default()
            };
            if block_docs.len() == BLOCK {
                self.doc_buf.copy_from_slice(block_docs);
                for (o, &f) in self.freq_buf.iter_mut().zip(block_freqs) {
                    *o = f - 1;
                }
                let bits_at = self.blocks.len();
                // Dense blocks become bitsets when that is no bigger than the packed deltas.
                let mut max_delta = 0u32;
                let mut prev = prev_last;
                for &d in block_docs {
                    max_delta = max_delta.max(d - prev);
                    prev = d;
                }
                let packed_bytes = 16 * (32 - max_delta.leading_zeros()) as usize;
                // Bit 0 is the first doc the block may hold: 0 in the first block, else one
                // past the previous block's last.
                let origin = if b == 0 { 0 } else { prev_last + 1 };
                let n_words = dense::words_for(origin, block_docs[BLOCK - 1]);
                if n_words * 8 <= packed_bytes && n_words <= dense::MAX_WORDS {
                    self.blocks.extend_from_slice(&[DENSE, 0, n_words as u8]);
                    dense::encode(origin, block_docs, &mut self.blocks);
                } else {
                    self.blocks.extend_from_slice(&[0, 0]);
                    let db = self
                        .codec
                        .pack_sorted(prev_last, &self.doc_buf, &mut self.blocks);
                    self.blocks[bits_at] = db;
                }
                let fb = self.codec.pack(&self.freq_buf, &mut self.blocks);
                self.blocks[bits_at + 1] = fb;
            } else {
                let mut prev = prev_last;
                for (&d, &f) in block_docs.iter().zip(block_freqs) {
                    let delta = d - prev;
                    prev = d;
                    let delta = u64::from(delta) << 1;
                    if f == 1 {
                        varint::write_u64(&mut self.blocks, delta | 1);
                    } else {
                        varint::write_u64(&mut self.blocks, delta);
                        varint::write_u32(&mut self.blocks, f);
                    }
                }
            }
            if let Some(positions) = positions {
                for &f in block_freqs {
                    let mut prev = 0u32;
                    for &p in &positions[pos_cursor..pos_cursor + f as usize] {
                        varint::write_u32(&mut self.pos, p - prev);
                        prev = p;
                    }
                    pos_cursor += f as usize;
                }
            }
            prev_last = *block_docs.last().expect("non-empty block");
            if n_blocks > 1 {
                self.skips.put_u32(prev_last);
                self.skips.put_u32(doc_off);
                self.skips.put_u64(pos_off);
                impacts.encode(&mut self.skips);
                self.skips
                    .extend_from_slice(&[0u8; SKIP_ENTRY_LEN - 16 - super::IMPACTS_LEN]);
            }
        }
        debug_assert_eq!(
            self.skips.len(),
            if n_blocks > 1 {
                n_blocks * SKIP_ENTRY_LEN
            } else {
                0
            }
        );
        varint::write_u32(&mut self.post, df as u32);
        varint::write_u32(&mut self.post, term_impact.max_freq);
        self.post.push(term_impact.min_norm);
        if positions.is_some() {
            varint::write_u64(&mut self.post, pos_start);
            let pos_len = self.pos_len() - pos_start;
            varint::write_u64(&mut self.post, pos_len);
        }
        varint::write_u64(&mut self.post, self.blocks.len() as u64);
        self.post.extend_from_slice(&self.skips);
        self.post.extend_from_slice(&self.blocks);
        entry_offset
    }
}
