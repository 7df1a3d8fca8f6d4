//! Reads a term's postings in place: [`TermInfo`] parses the few header bytes of a term entry,
//! [`PostingsCursor`] walks its blocks, skipping through the skip table.
//!
//! Corrupt bytes never panic: a cursor that meets an inconsistency stops (returns
//! [`TERMINATED`]) and reports it through [`PostingsCursor::is_corrupt`].
use quarry_codecs::{dense, varint, BlockCodec, ByteReader, CodecError};
use quarry_store::Bytes;

use crate::codec::norms::GROUP;
use crate::index::verified::{NormsCheck, RegionCheck};

use super::{Impact, Impacts, BLOCK, DENSE, SKIP_ENTRY_LEN};

/// The doc id returned once a cursor is exhausted.
pub const TERMINATED: u32 = u32::MAX;

/// A term entry's header, parsed from the postings file.
#[derive(Clone, Debug)]
pub struct TermInfo {
    pub doc_freq: u32,
    /// The term-wide best (freq, norm): bounds the score of any of its documents.
    pub impact: Impact,
    /// Offset of the term's positions in the positions file (0 for fields without positions).
    pub pos_start: u64,
    /// Bytes of the term's positions.
    pub pos_len: u64,
    n_blocks: u32,
    skip_start: usize,
    blocks_start: usize,
    blocks_len: usize,
}

/// The first doc id a dense block may hold: 0 for a term's first block, else one past `base`.
fn dense_origin(base: u32, first: bool) -> Result<u32, CodecError> {
    if first {
        return Ok(0);
    }
    base.checked_add(1).ok_or_else(|| CodecError::Invalid {
        what: "dense block after doc id u32::MAX".into(),
    })
}

/// Sets bit `d - base` of `bits` for each of `docs` (increasing, `>= base`); bits past the end
/// of `bits` are dropped. The bits of one word are gathered in a register and stored once:
/// dense postings put several documents in each word, and a store per document would chain
/// every one of them through the same memory location.
#[inline]
pub fn mark_docs(docs: &[u32], base: u32, bits: &mut [u64]) {
    let Some(&first) = docs.first() else {
        return;
    };
    let mut word = (first.wrapping_sub(base) >> 6) as usize;
    let mut acc = 0u64;
    for &d in docs {
        let o = d.wrapping_sub(base);
        let w = (o >> 6) as usize;
        if w != word {
            if let Some(x) = bits.get_mut(word) {
                *x |= acc;
            }
            word = w;
            acc = 0;
        }
        acc |= 1 << (o & 63);
    }
    if let Some(x) = bits.get_mut(word) {
        *x |= acc;
    }
}

/// The longest possible entry header (before the skip table), in bytes.
pub const MAX_HEADER_LEN: usize = 5 + 5 + 1 + 10 + 10 + 10;

impl TermInfo {
    /// The total length of the entry starting at `head[0]` (header, skip table and blocks), from
    /// its header alone: lets a positioned-read directory fetch an entry in two small reads.
    pub fn entry_len(head: &[u8], has_positions: bool) -> Result<u64, CodecError> {
        let mut r = ByteReader::new(head);
        let df = r.vu32()?;
        r.vu32()?;
        r.u8()?;
        if has_positions {
            r.vu64()?;
            r.vu64()?;
        }
        let blocks_len = r.vu64()?;
        let n_blocks = u64::from(df.div_ceil(BLOCK as u32));
        let skip = if n_blocks > 1 {
            n_blocks * SKIP_ENTRY_LEN as u64
        } else {
            0
        };
        (r.position() as u64)
            .checked_add(skip)
            .and_then(|x| x.checked_add(blocks_len))
            .ok_or_else(|| CodecError::Invalid {
                what: "entry length overflows".into(),
            })
    }

    /// Parses the entry at `offset` of the postings file `post`.
    pub fn parse(post: &[u8], offset: u64, has_positions: bool) -> Result<Self, CodecError> {
        let start = usize::try_from(offset).map_err(|_| CodecError::Invalid {
            what: format!("offset {offset}"),
        })?;
        if start >= post.len() {
            return Err(CodecError::Truncated {
                offset: start,
                needed: 1,
                available: 0,
            });
        }
        let mut r = ByteReader::at(post, start);
        let doc_freq = r.vu32()?;
        if doc_freq == 0 {
            return Err(CodecError::Invalid {
                what: format!("term at offset {offset} has doc_freq 0"),
            });
        }
        let max_freq = r.vu32()?;
        let min_norm = r.u8()?;
        let (pos_start, pos_len) = if has_positions {
            (r.vu64()?, r.vu64()?)
        } else {
            (0, 0)
        };
        let blocks_len = usize::try_from(r.vu64()?).map_err(|_| CodecError::Invalid {
            what: "blocks length".into(),
        })?;
        let n_blocks = doc_freq.div_ceil(BLOCK as u32);
        let skip_start = r.position();
        let skip_len = if n_blocks > 1 {
            n_blocks as usize * SKIP_ENTRY_LEN
        } else {
            0
        };
        r.bytes(skip_len)?;
        let blocks_start = r.position();
        r.bytes(blocks_len)?;
        Ok(Self {
            doc_freq,
            impact: Impact { max_freq, min_norm },
            pos_start,
            pos_len,
            n_blocks,
            skip_start,
            blocks_start,
            blocks_len,
        })
    }

    /// Total bytes of the entry's skip table and blocks (for statistics).
    pub fn byte_len(&self) -> usize {
        self.blocks_start - self.skip_start + self.blocks_len
    }

    /// Where the entry's blocks start (after its header and skip table), relative to the slice
    /// it was parsed from.
    pub fn blocks_start(&self) -> usize {
        self.blocks_start
    }

    /// Where the entry ends, relative to the slice it was parsed from.
    pub fn end(&self) -> usize {
        self.blocks_start + self.blocks_len
    }
}

/// A dense block read in place: its first possible doc, where its words start in the blocks
/// region, how many, and its last doc.
#[derive(Clone, Copy)]
struct LazyDense {
    origin: u32,
    off: usize,
    n_words: usize,
    last: u32,
}

/// Why a cursor stopped on damaged bytes: the reason, and the file a failed check named when
/// the damage is not in the postings themselves (positions, norms), so that the search reports
/// that file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub file: Option<String>,
    pub reason: String,
}

/// A decoded block.
struct BlockBuf {
    /// The block's doc ids, then [`NEAR`] slots of [`TERMINATED`] that nothing writes
    /// (a tail block is padded up to `BLOCK` too): `seek` compares windows past the end.
    docs: [u32; BLOCK + NEAR],
    freqs: [u32; BLOCK],
}

impl BlockBuf {
    /// The `BLOCK` slots a decoder fills.
    fn ids_mut(&mut self) -> &mut [u32; BLOCK] {
        (&mut self.docs[..BLOCK]).try_into().expect("BLOCK slots")
    }
}

/// Iterates the documents of one term in increasing order.
pub struct PostingsCursor {
    codec: BlockCodec,
    skips: Bytes,
    blocks: Bytes,
    positions: Option<Bytes>,
    doc_count: u32,
    df: u32,
    n_blocks: u32,
    term_impact: Impact,
    /// Current block (n_blocks when exhausted, u32::MAX before the first).
    block: u32,
    block_len: usize,
    idx: usize,
    /// The current block's doc ids and frequencies, boxed: a cursor is moved a few times on its
    /// way into a scorer, and 1 KiB of inline arrays made each move a `memcpy` (8 % of a cheap
    /// phrase query's time).
    buf: Box<BlockBuf>,
    /// Where the block after the current one starts and its base doc (sequential reads).
    next_off: usize,
    doc: u32,
    pos_block: u32,
    pos_off: usize,
    pos_idx: usize,
    /// The block `shallow_block` found last.
    shallow_hint: usize,
    /// Blocks loaded from now on skip their freqs (counting needs doc ids only).
    docs_only: bool,
    /// Blocks loaded from now on leave their packed freqs to [`ensure_freqs`](Self::ensure_freqs)
    /// (a phrase reads freqs only for its candidates, in few of the blocks it decodes).
    lazy_freqs: bool,
    /// The current block's packed freqs, not unpacked yet: (offset in `blocks`, bit width).
    freqs_at: Option<(usize, u8)>,
    /// The current block is dense and `docs` does not hold its ids yet: `seek` reads its bitset
    /// in place (a bit scan and a rank, no expansion); anything else expands it first.
    lazy: Option<LazyDense>,
    /// `load_block` may leave a dense block unexpanded (set by `seek` around its call).
    lazy_ok: bool,
    /// For the lazy dense block: (w, number of set bits in its words before word w).
    dense_rank: std::cell::Cell<(usize, usize)>,
    corrupt: Option<String>,
    /// The file named by the failed check that set `corrupt`, when not the postings file.
    corrupt_file: Option<String>,
    /// Verifies a block's bytes when it is loaded (unverified mapped blocks region).
    check: Option<RegionCheck>,
    /// Verifies a block's positions when they are first read (unverified mapped positions).
    pos_check: Option<RegionCheck>,
    /// Verifies the norms of a loaded block's documents (the scored field's norms, mapped and
    /// not verified yet; see [`set_norms_check`](Self::set_norms_check)).
    norms_check: Option<NormsCheck>,
}

impl PostingsCursor {
    /// A cursor over `info`'s entry in `post`; `positions` is the term's own positions (the
    /// `pos_len` bytes at `pos_start` of the positions file) when they will be read;
    /// `doc_count` bounds valid doc ids.
    pub fn new(info: &TermInfo, post: &Bytes, positions: Option<&Bytes>, doc_count: u32) -> Self {
        Self::with_checks(info, post, positions, doc_count, [None, None])
    }

    /// [`new`](Self::new) over unverified bytes: `checks` verify the blocks region (offsets
    /// relative to its start) and the positions as blocks are loaded; a failed check stops the
    /// cursor as corrupt.
    pub fn with_checks(
        info: &TermInfo,
        post: &Bytes,
        positions: Option<&Bytes>,
        doc_count: u32,
        checks: [Option<RegionCheck>; 2],
    ) -> Self {
        let [check, pos_check] = checks;
        let skips = post
            .slice(info.skip_start..info.blocks_start)
            .unwrap_or_else(Bytes::empty);
        let blocks = post
            .slice(info.blocks_start..info.blocks_start + info.blocks_len)
            .unwrap_or_else(Bytes::empty);
        let positions = positions.cloned();
        let mut c = Self {
            codec: BlockCodec::new(),
            skips,
            blocks,
            positions,
            doc_count,
            df: info.doc_freq,
            n_blocks: info.n_blocks,
            term_impact: info.impact,
            block: u32::MAX,
            block_len: 0,
            idx: 0,
            buf: Box::new(BlockBuf {
                docs: [TERMINATED; BLOCK + NEAR],
                freqs: [0; BLOCK],
            }),
            next_off: 0,
            doc: 0,
            pos_block: u32::MAX,
            pos_off: 0,
            pos_idx: 0,
            shallow_hint: 0,
            docs_only: false,
            lazy_freqs: false,
            freqs_at: None,
            lazy: None,
            lazy_ok: false,
            dense_rank: std::cell::Cell::new((0, 0)),
            corrupt: None,
            corrupt_file: None,
            check,
            pos_check,
            norms_check: None,
        };
        c.load_block(0, 0, 0);
        c
    }

    /// Verifies, from the current block on, the norms of each loaded block's documents with
    /// `check`: a scorer reads the norms of the documents its cursor is on, so it then reads
    /// only verified norms. Not applied to [`docs_only`](Self::set_docs_only) cursors, which
    /// read no norms.
    pub fn set_norms_check(&mut self, check: Option<NormsCheck>) {
        self.norms_check = check;
        if self.block < self.n_blocks && self.corrupt.is_none() {
            self.check_block_norms();
        }
    }

    /// The norms check of the block just loaded: the groups its doc range covers, or, for a
    /// block whose documents are further apart than a group, the group of each document.
    #[cold]
    fn check_block_norms(&mut self) {
        let Some(nc) = &self.norms_check else {
            return;
        };
        if self.docs_only {
            return;
        }
        let (first, last) = match &self.lazy {
            Some(l) => (l.origin, l.last),
            None => (self.buf.docs[0], self.buf.docs[self.block_len - 1]),
        };
        let groups = (last / GROUP as u32 - first / GROUP as u32) as usize + 1;
        let checked = if self.lazy.is_some() || groups <= self.block_len {
            nc.check_range(first, last)
        } else {
            nc.check_each(&self.buf.docs[..self.block_len])
        };
        if let Err(e) = checked {
            self.fail_check(format!("norms of block {}", self.block), e);
        }
    }

    /// Decodes doc ids only from now on: bit-packed frequency blocks are stepped over, not
    /// unpacked. Afterwards [`freq`](Self::freq) and [`positions`](Self::positions) are
    /// meaningless; for counting.
    pub fn set_docs_only(&mut self) {
        self.docs_only = true;
    }

    /// Leaves each block's freqs packed until [`ensure_freqs`](Self::ensure_freqs) (or
    /// [`positions_upto`](Self::positions_upto)) asks for them; [`freq`](Self::freq) must not
    /// be read before.
    pub fn set_lazy_freqs(&mut self) {
        self.lazy_freqs = true;
    }

    /// Unpacks the current block's freqs if [`set_lazy_freqs`](Self::set_lazy_freqs) left them
    /// packed.
    #[inline]
    pub fn ensure_freqs(&mut self) {
        if let Some((at, fb)) = self.freqs_at.take() {
            self.unpack_freqs(at, fb);
        }
    }

    #[cold]
    fn unpack_freqs(&mut self, at: usize, fb: u8) {
        let blocks = self.blocks.clone();
        let rest = blocks.get(at..).unwrap_or(&[]);
        // The length was checked when the block was loaded.
        if let Err(e) = self.codec.unpack(rest, fb, &mut self.buf.freqs) {
            self.fail(format!("block {}: {e}", self.block));
            return;
        }
        for f in self.buf.freqs.iter_mut() {
            *f = f.saturating_add(1);
        }
    }

    /// The current document, or [`TERMINATED`].
    #[inline]
    pub fn doc(&self) -> u32 {
        self.doc
    }

    /// The current document's term frequency.
    #[inline]
    pub fn freq(&self) -> u32 {
        debug_assert!(self.freqs_at.is_none(), "freq before ensure_freqs");
        self.buf.freqs[self.idx.min(BLOCK - 1)]
    }

    pub fn doc_freq(&self) -> u32 {
        self.df
    }

    /// One past the largest valid doc id of the segment.
    pub fn max_doc(&self) -> u32 {
        self.doc_count
    }

    /// An inconsistency met while decoding, if any.
    pub fn is_corrupt(&self) -> Option<&str> {
        self.corrupt.as_deref()
    }

    /// [`is_corrupt`](Self::is_corrupt) with the file a failed check named, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.corrupt.as_ref().map(|reason| Corruption {
            file: self.corrupt_file.clone(),
            reason: reason.clone(),
        })
    }

    /// Advances to the next document.
    // A cursor, not an `Iterator`: it returns the new current doc, `TERMINATED` at the end.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        if self.lazy.is_some() {
            self.expand();
        }
        self.idx += 1;
        if self.idx < self.block_len {
            self.doc = self.buf.docs[self.idx];
            return self.doc;
        }
        let next = self.block.wrapping_add(1);
        let base = self.buf.docs[self.block_len.saturating_sub(1)];
        self.load_block(next, self.next_off, base);
        self.doc
    }

    /// Sets bit `d - base` of `bits` for every document `d < end` from the current one on, and
    /// moves past them: counting without scoring, a decoded block at a time.
    /// Dense blocks (bitsets) that lie wholly before `end` are ORed in as they are, without
    /// decoding their doc ids.
    pub fn mark_until(&mut self, base: u32, end: u32, bits: &mut [u64]) {
        if self.lazy.is_some() {
            self.expand();
        }
        while self.doc != TERMINATED && self.doc < end {
            let block = &self.buf.docs[self.idx..self.block_len];
            let n = if block[block.len() - 1] < end {
                block.len()
            } else {
                block.partition_point(|&d| d < end)
            };
            mark_docs(&block[..n], base, bits);
            self.idx += n;
            if self.idx < self.block_len {
                self.doc = self.buf.docs[self.idx];
                return;
            }
            let mut next = self.block.wrapping_add(1);
            let mut last = self.buf.docs[self.block_len - 1];
            let mut off = self.next_off;
            while let Some((next_off, block_last)) = self.dense_block_before(next, off, last, end) {
                let n_words = usize::from(self.blocks[off + 2]);
                dense::or_into(last + 1, &self.blocks[off + 3..], n_words, base, bits);
                (next, last, off) = (next + 1, block_last, next_off);
            }
            self.idx = self.block_len - 1;
            self.load_block(next, off, last);
        }
    }

    /// If block `b` at `off` (base `base`) is a valid dense block whose last doc is `< end`:
    /// where the next block starts and this one's last doc. Anything else (packed, tail,
    /// corrupt, past the end) is `None` and left to `load_block`, which decodes or reports it.
    #[inline]
    fn dense_block_before(&self, b: u32, off: usize, base: u32, end: u32) -> Option<(usize, u32)> {
        // Never block 0 (the cursor starts on it), a tail block or past the end.
        if b == 0
            || b >= self.n_blocks
            || b + 1 == self.n_blocks && !self.df.is_multiple_of(BLOCK as u32)
            || self.corrupt.is_some()
        {
            return None;
        }
        let expected_last = self.skip_last_doc(b as usize);
        if expected_last >= end {
            return None;
        }
        let head = self.blocks.get(off..off + 3)?;
        if head[0] != DENSE {
            return None;
        }
        let origin = base.checked_add(1)?;
        let (db_len, last) =
            dense::check(origin, &self.blocks[off + 3..], usize::from(head[2])).ok()?;
        if last != expected_last || last >= self.doc_count {
            return None;
        }
        let rest = &self.blocks[off + 3 + db_len..];
        let next_off =
            off + 3 + db_len + quarry_codecs::bitpack::checked_len(rest, head[1]).ok()?;
        if let Some(c) = &self.check {
            c.check(off, next_off).ok()?;
        }
        Some((next_off, last))
    }

    /// Hands the documents `< end` from the current one on to `f` as runs of decoded
    /// (docs, freqs) slices, at most one per block, and moves past them: exhaustive loops read
    /// the decoded arrays in place instead of calling `next` per document.
    #[inline]
    pub fn runs_until(&mut self, end: u32, mut f: impl FnMut(&[u32], &[u32])) {
        if self.lazy.is_some() {
            self.expand();
        }
        while self.doc != TERMINATED && self.doc < end {
            let block = &self.buf.docs[self.idx..self.block_len];
            let n = if block[block.len() - 1] < end {
                block.len()
            } else {
                block.partition_point(|&d| d < end)
            };
            f(&block[..n], &self.buf.freqs[self.idx..self.idx + n]);
            self.idx += n;
            if self.idx < self.block_len {
                self.doc = self.buf.docs[self.idx];
                return;
            }
            let next = self.block.wrapping_add(1);
            let last = self.buf.docs[self.block_len - 1];
            self.idx = self.block_len - 1;
            self.load_block(next, self.next_off, last);
        }
    }

    /// Advances to the first document `>= target`.
    #[inline]
    pub fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let last = match &self.lazy {
            Some(l) => l.last,
            None => self.buf.docs[self.block_len - 1],
        };
        if last < target {
            // Not in this block: find the first block whose last doc is >= target.
            if self.n_blocks <= 1 || self.block + 1 >= self.n_blocks {
                return self.stop();
            }
            let n = self.n_blocks as usize;
            let mut lo = self.block as usize + 1;
            let mut hi = n;
            // Mostly the next block: one probe before the search.
            if self.skip_last_doc(lo) >= target {
                hi = lo;
            }
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.skip_last_doc(mid) < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo >= n {
                return self.stop();
            }
            let base = self.skip_last_doc(lo - 1);
            let off = self.skip_u32(lo, 4) as usize;
            self.lazy_ok = true;
            self.load_block(lo as u32, off, base);
            self.lazy_ok = false;
            // The block's first doc may be the answer (or the cursor stopped: TERMINATED).
            if self.doc >= target {
                return self.doc;
            }
        }
        if let Some(l) = self.lazy {
            return self.seek_dense(l, target);
        }
        // The block's last doc reaches `target` and the current one does not.
        let i = first_at_least(&self.buf.docs, self.idx, target);
        if self.buf.docs[i] < target {
            // Only ids out of order (a damaged block) mislead the search: never move back.
            self.fail(format!("block {}: doc ids out of order", self.block));
            return TERMINATED;
        }
        self.idx = i;
        self.doc = self.buf.docs[i];
        self.doc
    }

    /// The block that would hold `target` (without decoding it): its last doc and impacts.
    /// `None` once `target` is past the last document.
    pub fn shallow_block(&mut self, target: u32) -> Option<(u32, Impacts)> {
        if self.n_blocks <= 1 {
            return if self.doc == TERMINATED {
                None
            } else {
                Some((TERMINATED - 1, Impacts::single(self.term_impact)))
            };
        }
        let b = self.shallow_index(target)?;
        Some((self.skip_last_doc(b), self.skip_impact(b)))
    }

    /// Like [`shallow_block`](Self::shallow_block), but the bound comes as the largest
    /// `freq * factors[norm]` over the block's impacts (norm 1 when `with_norms` is false), read
    /// in place without building an [`Impacts`]. BM25 is monotone in that product, so the best
    /// score of the block is the score of this product, bit for bit.
    #[inline]
    pub fn shallow_factor(
        &mut self,
        target: u32,
        factors: &[f32; 256],
        with_norms: bool,
    ) -> Option<(u32, f32)> {
        if self.n_blocks <= 1 {
            return if self.doc == TERMINATED {
                None
            } else {
                let i = self.term_impact;
                let n = if with_norms { i.min_norm } else { 1 };
                Some((TERMINATED - 1, i.max_freq as f32 * factors[n as usize]))
            };
        }
        let b = self.shallow_index(target)?;
        Some((
            self.skip_last_doc(b),
            self.block_factor(b, factors, with_norms),
        ))
    }

    /// The last document of the current block ([`TERMINATED`] once exhausted).
    #[inline]
    pub fn block_end(&self) -> u32 {
        match &self.lazy {
            Some(l) => l.last,
            None => self.buf.docs[self.block_len - 1],
        }
    }

    /// The term's last document (from the skip table, or the decoded single block); `None` once
    /// a single-block cursor is exhausted.
    pub fn last_doc(&self) -> Option<u32> {
        if self.n_blocks > 1 {
            Some(self.skip_last_doc(self.n_blocks as usize - 1))
        } else if self.doc == TERMINATED {
            None
        } else {
            Some(self.buf.docs[self.block_len - 1])
        }
    }

    /// Number of blocks of the term.
    #[inline]
    pub fn block_count(&self) -> usize {
        self.n_blocks as usize
    }

    /// The last doc of block `b` (`b < block_count()`, and the term has a skip table, i.e. more
    /// than one block; 0 otherwise).
    #[inline]
    pub fn block_last_doc(&self, b: usize) -> u32 {
        self.skip_last_doc(b)
    }

    /// The largest `freq * factors[norm]` over block `b`'s impacts (see
    /// [`shallow_factor`](Self::shallow_factor)); a malformed entry gives infinity, which never
    /// prunes wrongly. Needs a skip table (more than one block).
    #[inline]
    pub fn block_factor(&self, b: usize, factors: &[f32; 256], with_norms: bool) -> f32 {
        let o = b * SKIP_ENTRY_LEN + 16;
        match self.skips.get(o..o + super::IMPACTS_LEN) {
            Some(e) => impacts_factor(
                e.try_into().expect("IMPACTS_LEN bytes"),
                factors,
                with_norms,
            ),
            None => f32::INFINITY,
        }
    }

    /// [`block_factor`](Self::block_factor) of every block, in order, into `out` (cleared
    /// first): one pass over the skip table for loops that order blocks by their bounds.
    pub fn block_factors(&self, factors: &[f32; 256], with_norms: bool, out: &mut Vec<f32>) {
        out.clear();
        let n = self.n_blocks as usize;
        out.reserve(n);
        let entries = self.skips.get(..n * SKIP_ENTRY_LEN).unwrap_or(&[]);
        out.extend(entries.chunks_exact(SKIP_ENTRY_LEN).map(|e| {
            let e = e[16..16 + super::IMPACTS_LEN]
                .try_into()
                .expect("IMPACTS_LEN bytes");
            impacts_factor(e, factors, with_norms)
        }));
        // A short skip table (damaged): the missing entries never prune.
        out.resize(n, f32::INFINITY);
    }

    /// Decodes block `b` (`b < block_count()`) and moves to its first document, reading its
    /// offset from the skip table unless it is the block right after the current one. For
    /// scoring loops that pick blocks by their bounds: nothing else is decoded on the way.
    /// Returns the new current document ([`TERMINATED`] on corruption or past the end).
    pub fn goto_block(&mut self, b: usize) -> u32 {
        if self.corrupt.is_some() {
            return TERMINATED;
        }
        if self.lazy.is_some() {
            self.expand();
        }
        if b == self.block as usize {
            self.idx = 0;
            self.doc = self.buf.docs[0];
            return self.doc;
        }
        if b >= self.n_blocks as usize {
            return self.stop();
        }
        if b == self.block as usize + 1 {
            let base = self.buf.docs[self.block_len - 1];
            self.load_block(b as u32, self.next_off, base);
        } else if b == 0 {
            self.load_block(0, 0, 0);
        } else {
            let base = self.skip_last_doc(b - 1);
            let off = self.skip_u32(b, 4) as usize;
            self.load_block(b as u32, off, base);
        }
        self.doc
    }

    /// The current block's doc ids and term frequencies from the current document on (a block
    /// `seek` left unexpanded is expanded first). Empty once the cursor is exhausted.
    pub fn block_rest(&mut self) -> (&[u32], &[u32]) {
        if self.lazy.is_some() {
            self.expand();
        }
        self.ensure_freqs();
        if self.doc == TERMINATED {
            return (&[], &[]);
        }
        (
            &self.buf.docs[self.idx..self.block_len],
            &self.buf.freqs[self.idx..self.block_len],
        )
    }

    /// The current block's doc ids and term frequencies (all of them, from its first document;
    /// the freqs are meaningless after [`set_docs_only`](Self::set_docs_only)). Empty once the
    /// cursor is exhausted.
    #[inline]
    /// Call it after [`goto_block`](Self::goto_block), which leaves the block expanded (a
    /// block `seek` reads in place has no array yet).
    pub fn block_docs_freqs(&self) -> (&[u32], &[u32]) {
        debug_assert!(
            self.lazy.is_none(),
            "block_docs_freqs after seek, not goto_block"
        );
        if self.doc == TERMINATED {
            return (&[], &[]);
        }
        (
            &self.buf.docs[..self.block_len],
            &self.buf.freqs[..self.block_len],
        )
    }

    /// The index of the block that would hold `target`, from the skip table (needs one).
    fn shallow_index(&mut self, target: u32) -> Option<usize> {
        let n = self.n_blocks as usize;
        // Targets mostly move forward a block at a time: gallop from the last answer.
        let mut lo = if self.shallow_hint < n
            && (self.shallow_hint == 0 || self.skip_last_doc(self.shallow_hint - 1) < target)
        {
            self.shallow_hint
        } else {
            0
        };
        let mut step = 1usize;
        let mut hi = lo;
        while hi < n && self.skip_last_doc(hi) < target {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        let mut hi = hi.min(n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.skip_last_doc(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo >= n {
            return None;
        }
        self.shallow_hint = lo;
        Some(lo)
    }

    /// The term-wide best impact.
    pub fn term_impact(&self) -> Impact {
        self.term_impact
    }

    /// Fills `out` with the current document's positions.
    pub fn positions(&mut self, out: &mut Vec<u32>) {
        self.positions_upto(out, u32::MAX);
    }

    /// Fills `out` with the current document's positions up to `limit`; decoding stops at the
    /// first position past it (a phrase needs no position past its last candidate).
    pub fn positions_upto(&mut self, out: &mut Vec<u32>, limit: u32) {
        out.clear();
        self.ensure_freqs();
        let Some(pos) = self.positions.as_ref() else {
            return;
        };
        if self.doc == TERMINATED {
            return;
        }
        if self.pos_block != self.block || self.pos_idx > self.idx {
            self.pos_block = self.block;
            self.pos_off = if self.n_blocks > 1 {
                self.skip_u64(self.block as usize, 8) as usize
            } else {
                0
            };
            self.pos_idx = 0;
            if let Some(c) = &self.pos_check {
                let end = if self.block + 1 < self.n_blocks {
                    self.skip_u64(self.block as usize + 1, 8) as usize
                } else {
                    pos.len()
                };
                let end = end.clamp(self.pos_off.min(pos.len()), pos.len());
                if let Err(e) = c.check(self.pos_off.min(end), end) {
                    self.fail_check(format!("positions of block {}", self.block), e);
                    out.clear();
                    return;
                }
            }
        }
        let bytes: &[u8] = pos;
        // Skip the positions of the block's earlier documents: count varint terminators
        // (bytes below 0x80) instead of decoding them.
        let skip: u64 = self.buf.freqs[self.pos_idx.min(self.idx)..self.idx]
            .iter()
            .map(|&f| u64::from(f))
            .sum();
        let Some(doc_start) = varint::skip(bytes, self.pos_off, skip) else {
            self.fail("positions: truncated".to_string());
            out.clear();
            return;
        };
        self.pos_off = doc_start;
        self.pos_idx = self.idx;
        let freq = self.buf.freqs[self.idx];
        out.reserve(freq as usize);
        let mut p = 0u32;
        let mut at = doc_start;
        // Eight one-byte deltas at once while they last (no high bit in the word) and stay
        // within the limit; the loop below takes the rest one by one.
        let mut k = 0u32;
        while k + 8 <= freq {
            let Some(w) = bytes.get(at..at + 8) else {
                break;
            };
            let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            if w & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            let mut buf = [0u32; 8];
            let mut q = p;
            for (j, b) in buf.iter_mut().enumerate() {
                q = q.wrapping_add(((w >> (8 * j)) & 0xff) as u32);
                *b = q;
            }
            if q > limit {
                break;
            }
            out.extend_from_slice(&buf);
            p = q;
            at += 8;
            k += 8;
        }
        for _ in k..freq {
            // Most position deltas fit one byte.
            match bytes.get(at) {
                Some(&b) if b < 0x80 => {
                    p = p.wrapping_add(u32::from(b));
                    at += 1;
                }
                _ => match varint::read_u32(bytes, &mut at) {
                    Ok(d) => p = p.wrapping_add(d),
                    Err(e) => {
                        self.fail(format!("positions: {e}"));
                        out.clear();
                        return;
                    }
                },
            }
            if p > limit {
                // Cut short: the next call starts again from this document's first position.
                return;
            }
            out.push(p);
        }
        self.pos_off = at;
        self.pos_idx = self.idx + 1;
    }

    /// Word `w` of a lazy dense block (0 past its end).
    #[inline]
    fn dense_word(&self, l: LazyDense, w: usize) -> u64 {
        if w >= l.n_words {
            return 0;
        }
        let o = l.off + w * 8;
        self.blocks
            .get(o..o + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// The first doc `>= from` of a lazy dense block and its rank in the block (`from` at most
    /// the block's last doc, which `check` proved is a set bit); the rank only if `rank`
    /// (0 otherwise: counting needs no freqs, and `expand` finds the index again).
    #[inline]
    fn dense_next_from(&self, l: LazyDense, from: u32, rank: bool) -> (u32, usize) {
        let p = (from - l.origin) as usize;
        let mut w = p >> 6;
        let mut x = self.dense_word(l, w) & (!0u64 << (p & 63));
        while x == 0 && w + 1 < l.n_words {
            w += 1;
            x = self.dense_word(l, w);
        }
        if x == 0 {
            return (l.last, BLOCK - 1);
        }
        let bit = x.trailing_zeros() as usize;
        let doc = l.origin + (w * 64 + bit) as u32;
        if !rank {
            return (doc, 0);
        }
        // Seeks move forward, so the rank of the words before `w` is kept and extended: a
        // block's words are counted once however many seeks land in it.
        let (mut rw, mut racc) = self.dense_rank.get();
        if rw > w {
            (rw, racc) = (0, 0);
        }
        while rw < w {
            racc += self.dense_word(l, rw).count_ones() as usize;
            rw += 1;
        }
        self.dense_rank.set((rw, racc));
        let r = racc + (self.dense_word(l, w) & ((1u64 << bit) - 1)).count_ones() as usize;
        (doc, r)
    }

    /// `seek` inside a lazy dense block (`target` above the current doc, at most the last).
    /// Out of line: it keeps `seek`'s inlined body small.
    #[inline(never)]
    fn seek_dense(&mut self, l: LazyDense, target: u32) -> u32 {
        let (doc, rank) = self.dense_next_from(l, target, !self.docs_only);
        self.doc = doc;
        self.idx = rank.min(BLOCK - 1);
        doc
    }

    /// Expands a lazy dense block into `docs` (already checked: cannot fail).
    #[cold]
    fn expand(&mut self) {
        let Some(l) = self.lazy.take() else {
            return;
        };
        let blocks = self.blocks.clone();
        let words = blocks.get(l.off..).unwrap_or(&[]);
        if let Err(e) = dense::decode(l.origin, words, l.n_words, self.buf.ids_mut()) {
            self.fail(format!("block {}: {e}", self.block));
            return;
        }
        self.idx = self.buf.docs[..self.block_len].partition_point(|&d| d < self.doc);
    }

    fn stop(&mut self) -> u32 {
        self.doc = TERMINATED;
        self.block = self.n_blocks;
        self.block_len = 1;
        self.idx = 0;
        self.buf.docs[0] = TERMINATED;
        self.lazy = None;
        self.freqs_at = None;
        TERMINATED
    }

    fn fail(&mut self, why: String) {
        if self.corrupt.is_none() {
            self.corrupt = Some(why);
        }
        self.stop();
    }

    /// [`fail`](Self::fail) on a failed check of another file's bytes (`context`: what was
    /// checked), keeping the file the check named for [`corruption`](Self::corruption).
    #[cold]
    fn fail_check(&mut self, context: String, e: crate::Error) {
        if self.corrupt.is_none() {
            if let crate::Error::Corrupt { file, .. } = &e {
                self.corrupt_file = Some(file.clone());
            }
        }
        self.fail(format!("{context}: {e}"));
    }

    #[inline]
    fn skip_u32(&self, block: usize, at: usize) -> u32 {
        let o = block * SKIP_ENTRY_LEN + at;
        match self.skips.get(o..o + 4) {
            Some(b) => u32::from_le_bytes(b.try_into().expect("4 bytes")),
            None => 0,
        }
    }
    fn skip_u64(&self, block: usize, at: usize) -> u64 {
        let o = block * SKIP_ENTRY_LEN + at;
        match self.skips.get(o..o + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
            None => 0,
        }
    }
    #[inline]
    fn skip_last_doc(&self, block: usize) -> u32 {
        self.skip_u32(block, 0)
    }
    /// A malformed entry decodes as "anything is possible", which never prunes wrongly.
    fn skip_impact(&self, block: usize) -> Impacts {
        let o = block * SKIP_ENTRY_LEN + 16;
        self.skips
            .get(o..o + super::IMPACTS_LEN)
            .and_then(Impacts::decode)
            .filter(|i| !i.pairs().is_empty())
            .unwrap_or(Impacts::single(Impact {
                max_freq: u32::MAX,
                min_norm: 0,
            }))
    }

    /// Decodes block `b` starting at byte `off` of the blocks region, with `base` the last doc of
    /// the previous block.
    fn load_block(&mut self, b: u32, off: usize, base: u32) {
        if b >= self.n_blocks {
            self.stop();
            return;
        }
        let first = b as usize * BLOCK;
        let len = (self.df as usize - first).min(BLOCK);
        let blocks = self.blocks.clone();
        let bytes: &[u8] = &blocks;
        self.lazy = None;
        self.freqs_at = None;
        let decoded = if len == BLOCK {
            self.decode_full(bytes, off, base, b == 0)
        } else {
            self.decode_tail(bytes, off, base, len)
        };
        let decoded = match (decoded, &self.check) {
            (Ok(next_off), Some(c)) => c
                .check(off, next_off)
                .map(|()| next_off)
                .map_err(|e| e.to_string()),
            (d, _) => d.map_err(|e| e.to_string()),
        };
        match decoded {
            Ok(next_off) => {
                let (last, first_ok) = match &self.lazy {
                    // The origin is one past the base: the first doc is above it.
                    Some(l) => (l.last, true),
                    None => (self.buf.docs[len - 1], b == 0 || self.buf.docs[0] > base),
                };
                let expected_last = if self.n_blocks > 1 {
                    Some(self.skip_last_doc(b as usize))
                } else {
                    None
                };
                if last >= self.doc_count || expected_last.is_some_and(|e| e != last) || !first_ok {
                    self.fail(format!(
                        "block {b}: doc ids inconsistent with the skip table or the segment size"
                    ));
                    return;
                }
                self.block = b;
                self.block_len = len;
                self.idx = 0;
                self.next_off = next_off;
                self.doc = match self.lazy {
                    Some(l) => self.dense_next_from(l, l.origin, false).0,
                    None => self.buf.docs[0],
                };
                if self.norms_check.is_some() {
                    self.check_block_norms();
                }
            }
            Err(e) => self.fail(format!("block {b}: {e}")),
        }
    }

    fn decode_full(
        &mut self,
        bytes: &[u8],
        off: usize,
        base: u32,
        first: bool,
    ) -> Result<usize, CodecError> {
        let head = bytes.get(off..off + 2).ok_or(CodecError::Truncated {
            offset: off,
            needed: 2,
            available: 0,
        })?;
        let (db, fb) = (head[0], head[1]);
        let mut p = off + 2;
        if db == DENSE {
            let n_words = *bytes.get(p).ok_or(CodecError::Truncated {
                offset: p,
                needed: 1,
                available: 0,
            })?;
            p += 1;
            let rest = bytes.get(p..).unwrap_or(&[]);
            let origin = dense_origin(base, first)?;
            let n_words = usize::from(n_words);
            if self.lazy_ok {
                let (len, last) = dense::check(origin, rest, n_words)?;
                self.lazy = Some(LazyDense {
                    origin,
                    off: p,
                    n_words,
                    last,
                });
                self.dense_rank.set((0, 0));
                p += len;
            } else {
                p += dense::decode(origin, rest, n_words, self.buf.ids_mut())?;
            }
        } else {
            let rest = bytes.get(p..).unwrap_or(&[]);
            p += self
                .codec
                .unpack_sorted(base, rest, db, self.buf.ids_mut())?;
        }
        let rest = bytes.get(p..).unwrap_or(&[]);
        if self.docs_only {
            return Ok(p + quarry_codecs::bitpack::checked_len(rest, fb)?);
        }
        if self.lazy_freqs {
            let len = quarry_codecs::bitpack::checked_len(rest, fb)?;
            self.freqs_at = Some((p, fb));
            return Ok(p + len);
        }
        p += self.codec.unpack(rest, fb, &mut self.buf.freqs)?;
        for f in self.buf.freqs.iter_mut() {
            *f = f.saturating_add(1);
        }
        Ok(p)
    }

    fn decode_tail(
        &mut self,
        bytes: &[u8],
        off: usize,
        base: u32,
        len: usize,
    ) -> Result<usize, CodecError> {
        let mut r = ByteReader::at(bytes, off);
        let mut doc = base;
        for i in 0..len {
            let v = r.vu64()?;
            let delta = u32::try_from(v >> 1).map_err(|_| CodecError::Invalid {
                what: "doc delta overflow".into(),
            })?;
            doc = doc.checked_add(delta).ok_or_else(|| CodecError::Invalid {
                what: "doc id overflow".into(),
            })?;
            self.buf.docs[i] = doc;
            self.buf.freqs[i] = if v & 1 == 1 { 1 } else { r.vu32()?.max(1) };
        }
        // Padding: `seek` compares whole windows.
        self.buf.docs[len..BLOCK].fill(TERMINATED);
        Ok(r.position())
    }
}

/// Ids `first_at_least` tries one by one before its search; `BlockBuf::docs` holds as many
/// slots of padding past the block.
const NEAR: usize = 4;

/// The index of the first of `docs` from `from` on that is `>= target`, which must lie in the
/// block (a tail block is padded with [`TERMINATED`]). The next [`NEAR`] ids are tried first
/// (a follower moves a few ids per seek when its lead is nearly as frequent); otherwise an
/// 8-ary search over the whole block: seven pivots compared at once narrow 128 ids to 16,
/// seven more to 2, without a branch to mispredict (a scan id by id mispredicts its exit at
/// nearly every seek, and a binary search is seven dependent loads).
#[inline]
fn first_at_least(docs: &[u32; BLOCK + NEAR], from: usize, target: u32) -> usize {
    for k in 1..=NEAR {
        if docs[from + k] >= target {
            return from + k;
        }
    }
    let mut base = 0usize;
    for step in [16usize, 2] {
        let mut below = 0usize;
        for k in 1..8 {
            below += usize::from(docs[base + k * step - 1] < target);
        }
        base += below * step;
    }
    base + usize::from(docs[base] < target)
}

/// The largest `freq * factors[norm]` of a skip entry's impacts (norm 1 without norms); a
/// count of 0 or above [`MAX_IMPACTS`](super::MAX_IMPACTS) (a malformed entry) gives infinity,
/// which never prunes wrongly. All eight slots are read whether used or not (the writer zeroes
/// the unused ones, so they add a product of 0), keeping the loop free of branches on the
/// count, and the maximum is a plain compare (`f32::max` compiles to NaN handling; a NaN
/// product is passed over either way).
#[inline]
fn impacts_factor(e: &[u8; super::IMPACTS_LEN], factors: &[f32; 256], with_norms: bool) -> f32 {
    let len = e[0] as usize;
    if len == 0 || len > super::MAX_IMPACTS {
        return f32::INFINITY;
    }
    let mut best = 0f32;
    for i in 0..super::MAX_IMPACTS {
        let f = u16::from_le_bytes([e[1 + 3 * i], e[2 + 3 * i]]);
        let f = if f == super::FREQ_SATURATED {
            u32::MAX as f32
        } else {
            f32::from(f)
        };
        let n = if with_norms { e[3 + 3 * i] } else { 1 };
        let p = f * factors[n as usize];
        best = if p > best { p } else { best };
    }
    best
}

#[cfg(test)]
mod search_tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The in-block search of `seek` finds what a scan finds: any block length (a tail
        /// block padded), any start, any target between the start's document and the last.
        #[test]
        fn first_at_least_is_the_first_id_reaching_the_target(
            gaps in proptest::collection::vec(prop_oneof![3 => 1u32..3, 1 => 1u32..500], 1..=BLOCK),
            start in any::<proptest::sample::Index>(),
            pick in any::<proptest::sample::Index>(),
        ) {
            let mut docs = [TERMINATED; BLOCK + NEAR];
            let mut d = 0u32;
            for (slot, g) in docs.iter_mut().zip(&gaps) {
                d += g;
                *slot = d;
            }
            let len = gaps.len();
            prop_assume!(len >= 2);
            let from = start.index(len - 1);
            let (lo, hi) = (docs[from] + 1, docs[len - 1]);
            let target = lo + pick.index((hi - lo + 1) as usize) as u32;
            let want = docs[..len].iter().position(|&x| x >= target).unwrap();
            prop_assert_eq!(first_at_least(&docs, from, target), want);
        }
    }
}
