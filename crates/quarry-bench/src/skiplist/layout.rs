//! How are the two postings layouts of the skip-list study written and read? Today's `.post`
//! term entry and Marginalia's block skip list, their cursors, a leapfrog intersection, and the
//! byte sources they read from (memory, counting, `O_DIRECT`).
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use quarry_codecs::bitpack::{BlockCodec, BLOCK_LEN};
use quarry_codecs::varint;
use quarry_store::{Bytes, DirectFile, FileHandle};

/// Cursor value past the last document.
pub const TERMINATED: u32 = u32::MAX;
/// Bytes of a skip entry of today's format (`SKIP_ENTRY_LEN`).
const SKIP_ENTRY: u64 = 48;
/// The longest entry header of today's format (`MAX_HEADER_LEN`).
const MAX_HEADER: u64 = 41;
/// Skip-list node header: count (u32), forward-pointer count (u16), flags (u16).
const NODE_HEADER: u64 = 8;
/// Forward pointers per node at most, and how many of them step linearly.
const MAX_FP: usize = 32;
const LINEAR_FP: usize = 16;
/// Bytes per document in a skip-list node: doc id and value (u32 each).
const RECORD: u64 = 8;
/// A list's first node shares a block with the list before it only when at least this many
/// bytes are left in the block (Marginalia's `MIN_TRUNCATED_BLOCK_SIZE` idea).
const MIN_FIRST_NODE: u64 = 512;
/// Page size for "pages touched".
const PAGE: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// Reading a layout file: a memory map, an O_DIRECT file, or a counting wrapper.

/// Byte ranges of a layout file.
pub trait Source {
    fn read(&mut self, off: u64, len: usize) -> Result<&[u8]>;
}

/// The whole file in memory (a memory map, or a vector in tests).
pub struct MemSource(pub Bytes);

impl Source for MemSource {
    #[inline]
    fn read(&mut self, off: u64, len: usize) -> Result<&[u8]> {
        let s = self.0.as_slice();
        s.get(off as usize..off as usize + len)
            .with_context(|| format!("read of {len} bytes at {off} past the end ({})", s.len()))
    }
}

/// Counts what a query touches: bytes requested and distinct 4 KiB pages.
pub struct Counting<S> {
    pub inner: S,
    pub bytes: u64,
    pub pages: HashSet<u64>,
}

impl<S: Source> Source for Counting<S> {
    fn read(&mut self, off: u64, len: usize) -> Result<&[u8]> {
        self.bytes += len as u64;
        if len > 0 {
            for p in off / PAGE..=(off + len as u64 - 1) / PAGE {
                self.pages.insert(p);
            }
        }
        self.inner.read(off, len)
    }
}

/// `O_DIRECT` reads in units of `unit` bytes (the pool's page size), each unit read once per
/// query and kept for it.
pub struct DirectSource {
    file: Arc<DirectFile>,
    unit: u64,
    len: u64,
    units: HashMap<u64, Bytes>,
    scratch: Vec<u8>,
}

impl DirectSource {
    /// Reads `file` in units of `unit` bytes.
    pub fn new(file: Arc<DirectFile>, unit: u64) -> Self {
        Self {
            len: file.len(),
            file,
            unit,
            units: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// Units read so far (each once, with one `pread`).
    pub fn reads(&self) -> usize {
        self.units.len()
    }
}

impl DirectSource {
    fn load(&mut self, u: u64) -> Result<()> {
        if !self.units.contains_key(&u) {
            let start = u * self.unit;
            let end = (start + self.unit).min(self.len);
            let b = self.file.read_bytes(start, end)?;
            self.units.insert(u, b);
        }
        Ok(())
    }
}

impl Source for DirectSource {
    fn read(&mut self, off: u64, len: usize) -> Result<&[u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        let end = off + len as u64;
        if end > self.len {
            bail!("read of {len} bytes at {off} past the end ({})", self.len);
        }
        let (first, last) = (off / self.unit, (end - 1) / self.unit);
        for u in first..=last {
            self.load(u)?;
        }
        if first == last {
            let at = (off - first * self.unit) as usize;
            return Ok(&self.units[&first].as_slice()[at..at + len]);
        }
        self.scratch.clear();
        for u in first..=last {
            let base = u * self.unit;
            let s = self.units[&u].as_slice();
            let from = off.saturating_sub(base) as usize;
            let to = ((end - base) as usize).min(s.len());
            self.scratch.extend_from_slice(&s[from..to]);
        }
        Ok(&self.scratch)
    }
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A cursor over one term's documents in a layout file.
pub trait Cursor<S: Source> {
    fn doc(&self) -> u32;
    fn next(&mut self, s: &mut S) -> Result<u32>;
    /// Advances to the first document `>= target`.
    fn seek(&mut self, s: &mut S, target: u32) -> Result<u32>;
}

/// Leapfrog intersection led by the first cursor (the rarest term); returns the match count.
pub fn intersect<S: Source, C: Cursor<S>>(s: &mut S, cursors: &mut [C]) -> Result<u64> {
    let mut count = 0;
    let Some((lead, rest)) = cursors.split_first_mut() else {
        return Ok(0);
    };
    let mut d = lead.doc();
    'outer: while d != TERMINATED {
        for c in rest.iter_mut() {
            let x = c.seek(s, d)?;
            if x != d {
                d = lead.seek(s, x)?;
                continue 'outer;
            }
        }
        count += 1;
        d = lead.next(s)?;
    }
    Ok(count)
}

// ---------------------------------------------------------------------------------------------
// Today's layout: quarry's term entry.

/// Appends `docs`/`freqs` as a term entry of today's `.post` format.
pub fn write_today(out: &mut Vec<u8>, codec: &BlockCodec, docs: &[u32], freqs: &[u32]) {
    let n_blocks = docs.len().div_ceil(BLOCK_LEN);
    let mut blocks = Vec::new();
    let mut skips = Vec::new();
    let mut base = 0u32;
    for (b, chunk) in docs.chunks(BLOCK_LEN).enumerate() {
        let f = &freqs[b * BLOCK_LEN..b * BLOCK_LEN + chunk.len()];
        let offset = blocks.len() as u32;
        if chunk.len() == BLOCK_LEN {
            let d: &[u32; BLOCK_LEN] = chunk.try_into().expect("full block");
            let mut fm = [0u32; BLOCK_LEN];
            for (o, x) in fm.iter_mut().zip(f) {
                *o = x - 1;
            }
            let at = blocks.len();
            blocks.extend_from_slice(&[0, 0]);
            let db = codec.pack_sorted(base, d, &mut blocks);
            let fb = codec.pack(&fm, &mut blocks);
            blocks[at] = db;
            blocks[at + 1] = fb;
        } else {
            let mut prev = base;
            for (&doc, &fr) in chunk.iter().zip(f) {
                let delta = u64::from(doc - prev);
                if fr == 1 {
                    varint::write_u64(&mut blocks, delta << 1 | 1);
                } else {
                    varint::write_u64(&mut blocks, delta << 1);
                    varint::write_u32(&mut blocks, fr);
                }
                prev = doc;
            }
        }
        let last = *chunk.last().expect("non-empty block");
        let best = f.iter().copied().max().unwrap_or(1).min(65535) as u16;
        skips.extend_from_slice(&last.to_le_bytes());
        skips.extend_from_slice(&offset.to_le_bytes());
        skips.extend_from_slice(&0u64.to_le_bytes());
        skips.push(1);
        skips.extend_from_slice(&best.to_le_bytes());
        skips.push(1);
        skips.resize(skips.len() + 21 + 7, 0);
        base = last;
    }
    varint::write_u32(out, docs.len() as u32);
    varint::write_u32(out, freqs.iter().copied().max().unwrap_or(1));
    out.push(1);
    varint::write_u64(out, 0);
    varint::write_u64(out, 0);
    varint::write_u64(out, blocks.len() as u64);
    if n_blocks > 1 {
        out.extend_from_slice(&skips);
    }
    out.extend_from_slice(&blocks);
}

/// A docs-only cursor over a term entry of today's format, reading only what it needs.
pub struct TodayCursor {
    codec: BlockCodec,
    df: u32,
    n_blocks: u32,
    skip_start: u64,
    blocks_start: u64,
    blocks_len: u64,
    block: u32,
    docs: [u32; BLOCK_LEN],
    len: usize,
    idx: usize,
    doc: u32,
    /// Offset of the next block, relative to `blocks_start`.
    next_off: u64,
}

impl TodayCursor {
    /// Opens the entry at `off` (`entry_len` bytes: known from the dictionary).
    pub fn open<S: Source>(s: &mut S, off: u64, entry_len: u64) -> Result<Self> {
        let head = s.read(off, MAX_HEADER.min(entry_len) as usize)?;
        let mut p = 0;
        let df = varint::read_u32(head, &mut p)?;
        varint::read_u32(head, &mut p)?;
        p += 1;
        varint::read_u64(head, &mut p)?;
        varint::read_u64(head, &mut p)?;
        let blocks_len = varint::read_u64(head, &mut p)?;
        let n_blocks = df.div_ceil(BLOCK_LEN as u32);
        let skip_start = off + p as u64;
        let skips = if n_blocks > 1 {
            u64::from(n_blocks) * SKIP_ENTRY
        } else {
            0
        };
        let mut c = Self {
            codec: BlockCodec::new(),
            df,
            n_blocks,
            skip_start,
            blocks_start: skip_start + skips,
            blocks_len,
            block: 0,
            docs: [0; BLOCK_LEN],
            len: 0,
            idx: 0,
            doc: 0,
            next_off: 0,
        };
        c.load_block(s, 0, 0, 0)?;
        Ok(c)
    }

    fn skip_u32<S: Source>(&self, s: &mut S, b: u32, field: u64) -> Result<u32> {
        let at = self.skip_start + u64::from(b) * SKIP_ENTRY + field;
        Ok(u32_at(s.read(at, 4)?, 0))
    }

    fn load_block<S: Source>(&mut self, s: &mut S, b: u32, off: u64, base: u32) -> Result<()> {
        if b >= self.n_blocks {
            self.doc = TERMINATED;
            return Ok(());
        }
        self.block = b;
        self.idx = 0;
        let at = self.blocks_start + off;
        let left = self.df - b * BLOCK_LEN as u32;
        if left as usize >= BLOCK_LEN {
            let h = s.read(at, 2)?;
            let (db, fb) = (h[0], h[1]);
            let n = 16 * db as usize;
            let packed = s.read(at + 2, n)?;
            self.codec
                .unpack_sorted(base, packed, db, &mut self.docs)
                .map_err(|e| anyhow::anyhow!("block {b}: {e}"))?;
            self.len = BLOCK_LEN;
            self.next_off = off + 2 + 16 * (u64::from(db) + u64::from(fb));
        } else {
            let bytes = s.read(at, (self.blocks_len - off) as usize)?;
            let mut p = 0;
            let mut prev = base;
            for i in 0..left as usize {
                let v = varint::read_u64(bytes, &mut p)?;
                if v & 1 == 0 {
                    varint::read_u32(bytes, &mut p)?;
                }
                prev += (v >> 1) as u32;
                self.docs[i] = prev;
            }
            self.len = left as usize;
            self.next_off = self.blocks_len;
        }
        self.doc = self.docs[0];
        Ok(())
    }
}

impl<S: Source> Cursor<S> for TodayCursor {
    #[inline]
    fn doc(&self) -> u32 {
        self.doc
    }

    fn next(&mut self, s: &mut S) -> Result<u32> {
        if self.doc == TERMINATED {
            return Ok(TERMINATED);
        }
        self.idx += 1;
        if self.idx < self.len {
            self.doc = self.docs[self.idx];
        } else {
            let base = self.docs[self.len - 1];
            self.load_block(s, self.block + 1, self.next_off, base)?;
        }
        Ok(self.doc)
    }

    fn seek(&mut self, s: &mut S, target: u32) -> Result<u32> {
        if self.doc >= target {
            return Ok(self.doc);
        }
        if self.docs[self.len - 1] < target {
            // Binary search of the skip table after the current block, as the engine's cursor.
            let (mut lo, mut hi) = (self.block + 1, self.n_blocks);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.skip_u32(s, mid, 0)? < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo >= self.n_blocks {
                self.doc = TERMINATED;
                return Ok(TERMINATED);
            }
            let base = self.skip_u32(s, lo - 1, 0)?;
            let off = u64::from(self.skip_u32(s, lo, 4)?);
            self.load_block(s, lo, off, base)?;
        }
        while self.docs[self.idx] < target {
            self.idx += 1;
        }
        self.doc = self.docs[self.idx];
        Ok(self.doc)
    }
}

// ---------------------------------------------------------------------------------------------
// Marginalia's layout: a deterministic block skip list.

/// How many nodes ahead forward pointer `i` points.
pub fn skip_distance(i: usize) -> u32 {
    if i < LINEAR_FP {
        i as u32 + 1
    } else {
        let q = (i - LINEAR_FP + 1) as u32;
        LINEAR_FP as u32 + q * q
    }
}

/// Where a skip list's nodes are: the first at `first`, node `k >= 1` at the `k`-th block
/// boundary after `first`'s block start.
#[derive(Clone, Copy, Debug)]
pub struct ListRef {
    pub first: u64,
    pub nodes: u32,
    pub block: u64,
}

impl ListRef {
    #[inline]
    pub fn node_at(&self, k: u32) -> u64 {
        if k == 0 {
            self.first
        } else {
            (self.first / self.block + u64::from(k)) * self.block
        }
    }
}

/// Documents a node can hold in `room` bytes when it keeps room for every forward pointer.
fn node_capacity(room: u64) -> u64 {
    room.saturating_sub(NODE_HEADER + 4 * MAX_FP as u64) / RECORD
}

/// Appends `docs`/`values` as a skip list with `block`-byte blocks to `out` (whose length is
/// the file offset); returns where it is.
pub fn write_skiplist(out: &mut Vec<u8>, block: u64, docs: &[u32], values: &[u32]) -> ListRef {
    let n = docs.len() as u64;
    let pos = out.len() as u64;
    let room = block - pos % block;
    let single = NODE_HEADER + RECORD * n;
    let pad_to_boundary = |out: &mut Vec<u8>| {
        let len = out.len() as u64;
        out.resize(len.div_ceil(block) as usize * block as usize, 0);
    };
    // The sizes of the nodes: the first may share a block with the list before.
    let mut sizes = Vec::new();
    if single <= block {
        if single > room {
            pad_to_boundary(out);
        }
        sizes.push(n);
    } else {
        let first_cap = if room >= MIN_FIRST_NODE && node_capacity(room) > 0 {
            node_capacity(room)
        } else {
            pad_to_boundary(out);
            node_capacity(block)
        };
        let full = node_capacity(block);
        sizes.push(first_cap.min(n));
        let mut left = n - sizes[0];
        while left > 0 {
            sizes.push(full.min(left));
            left -= sizes[sizes.len() - 1];
        }
    }
    let first = out.len() as u64;
    let nodes = sizes.len() as u32;
    let list = ListRef {
        first,
        nodes,
        block,
    };
    let mut starts = Vec::with_capacity(sizes.len());
    let mut at = 0usize;
    for &c in &sizes {
        starts.push(at);
        at += c as usize;
    }
    let max_of = |k: usize| docs[starts[k] + sizes[k] as usize - 1];
    for k in 0..sizes.len() {
        debug_assert_eq!(out.len() as u64, list.node_at(k as u32));
        let fps: Vec<u32> = (0..MAX_FP)
            .map(|i| k + skip_distance(i) as usize)
            .take_while(|&t| t < sizes.len())
            .map(max_of)
            .collect();
        let (s, c) = (starts[k], sizes[k] as usize);
        out.extend_from_slice(&(c as u32).to_le_bytes());
        out.extend_from_slice(&(fps.len() as u16).to_le_bytes());
        let flags: u16 = u16::from(k + 1 == sizes.len());
        out.extend_from_slice(&flags.to_le_bytes());
        for f in fps {
            out.extend_from_slice(&f.to_le_bytes());
        }
        for d in &docs[s..s + c] {
            out.extend_from_slice(&d.to_le_bytes());
        }
        for v in &values[s..s + c] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        if k + 1 < sizes.len() {
            pad_to_boundary(out);
        }
    }
    list
}

/// A cursor over a skip list: a node's doc ids are read in place (binary search on seek).
pub struct SkipCursor {
    list: ListRef,
    node: u32,
    node_off: u64,
    count: u32,
    fp_count: u32,
    docs_off: u64,
    last: u32,
    idx: u32,
    doc: u32,
}

impl SkipCursor {
    pub fn open<S: Source>(s: &mut S, list: ListRef) -> Result<Self> {
        let mut c = Self {
            list,
            node: 0,
            node_off: 0,
            count: 0,
            fp_count: 0,
            docs_off: 0,
            last: 0,
            idx: 0,
            doc: 0,
        };
        c.load_node(s, 0)?;
        Ok(c)
    }

    fn load_node<S: Source>(&mut self, s: &mut S, k: u32) -> Result<()> {
        if k >= self.list.nodes {
            self.doc = TERMINATED;
            return Ok(());
        }
        let off = self.list.node_at(k);
        let h = s.read(off, NODE_HEADER as usize)?;
        let count = u32_at(h, 0);
        let fp_count = u32::from(u16::from_le_bytes([h[4], h[5]]));
        if count == 0 || fp_count as usize > MAX_FP {
            bail!("skip-list node at {off}: count {count}, {fp_count} pointers");
        }
        self.node = k;
        self.node_off = off;
        self.count = count;
        self.fp_count = fp_count;
        self.docs_off = off + NODE_HEADER + 4 * u64::from(fp_count);
        self.last = u32_at(s.read(self.docs_off + 4 * u64::from(count - 1), 4)?, 0);
        self.idx = 0;
        self.doc = u32_at(s.read(self.docs_off, 4)?, 0);
        Ok(())
    }
}

impl<S: Source> Cursor<S> for SkipCursor {
    #[inline]
    fn doc(&self) -> u32 {
        self.doc
    }

    fn next(&mut self, s: &mut S) -> Result<u32> {
        if self.doc == TERMINATED {
            return Ok(TERMINATED);
        }
        self.idx += 1;
        if self.idx < self.count {
            self.doc = u32_at(s.read(self.docs_off + 4 * u64::from(self.idx), 4)?, 0);
        } else {
            self.load_node(s, self.node + 1)?;
        }
        Ok(self.doc)
    }

    fn seek(&mut self, s: &mut S, target: u32) -> Result<u32> {
        if self.doc >= target {
            return Ok(self.doc);
        }
        while self.last < target {
            // Past this node: the forward pointers' max doc ids say which node to visit next,
            // always forward.
            let fps = s.read(self.node_off + NODE_HEADER, 4 * self.fp_count as usize)?;
            let hit = (0..self.fp_count as usize).find(|&i| u32_at(fps, 4 * i) >= target);
            let next = match hit {
                Some(0) => self.node + 1,
                Some(i) => self.node + skip_distance(i - 1) + 1,
                None if self.fp_count == 0 => self.list.nodes,
                None => self.node + skip_distance(self.fp_count as usize - 1) + 1,
            };
            self.load_node(s, next)?;
            if self.doc == TERMINATED {
                return Ok(TERMINATED);
            }
        }
        // Binary search among the node's remaining documents.
        let (mut lo, mut hi) = (self.idx, self.count - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if u32_at(s.read(self.docs_off + 4 * u64::from(mid), 4)?, 0) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.idx = lo;
        self.doc = u32_at(s.read(self.docs_off + 4 * u64::from(lo), 4)?, 0);
        Ok(self.doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random sorted lists.
    fn list(seed: u64, n: usize, span: u32) -> Vec<u32> {
        let mut x = seed | 1;
        let mut v: Vec<u32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % u64::from(span)) as u32
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn naive(lists: &[Vec<u32>]) -> u64 {
        let sets: Vec<HashSet<u32>> = lists.iter().map(|l| l.iter().copied().collect()).collect();
        lists[0]
            .iter()
            .filter(|d| sets.iter().all(|s| s.contains(d)))
            .count() as u64
    }

    #[test]
    fn skip_distances_are_linear_then_quadratic() {
        let d: Vec<u32> = (0..MAX_FP).map(skip_distance).collect();
        assert_eq!(
            &d[..17],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
        );
        assert_eq!(d[17], 20);
        assert_eq!(d[MAX_FP - 1], 16 + 16 * 16);
        assert!(d.windows(2).all(|w| w[0] < w[1]));
    }

    /// Both layouts, with small blocks so that lists span many nodes, give the intersection a
    /// naive set computation gives, in memory and through the counting source; nodes never
    /// straddle a block boundary.
    #[test]
    fn both_layouts_intersect_like_sets() {
        let codec = BlockCodec::new();
        let specs = [
            (1, 5, 1000),
            (2, 300, 5000),
            (3, 4000, 20_000),
            (4, 20_000, 40_000),
            (5, 127, 400),
            (6, 128, 400),
            (7, 1, 10),
        ];
        let lists: Vec<Vec<u32>> = specs.iter().map(|&(s, n, span)| list(s, n, span)).collect();
        let mut today = Vec::new();
        let mut today_at = Vec::new();
        for l in &lists {
            let freqs: Vec<u32> = l.iter().map(|d| 1 + d % 3).collect();
            let at = today.len() as u64;
            write_today(&mut today, &codec, l, &freqs);
            today_at.push((at, today.len() as u64 - at));
        }
        for block in [1024u64, 4096] {
            let mut sl = vec![0u8; 100]; // the first list starts mid-block
            let mut refs = Vec::new();
            for l in &lists {
                let r = write_skiplist(&mut sl, block, l, l);
                for k in 0..r.nodes {
                    let at = r.node_at(k);
                    let count = u64::from(u32_at(&sl, at as usize));
                    let fps = u64::from(u16::from_le_bytes([
                        sl[at as usize + 4],
                        sl[at as usize + 5],
                    ]));
                    let end = at + NODE_HEADER + 4 * fps + RECORD * count;
                    assert!(
                        (end - 1) / block == at / block,
                        "node {k} at {at} straddles"
                    );
                }
                refs.push(r);
            }
            let mut mem_t = MemSource(Bytes::from_vec(today.clone()));
            let mut mem_s = Counting {
                inner: MemSource(Bytes::from_vec(sl.clone())),
                bytes: 0,
                pages: HashSet::new(),
            };
            for pick in [
                vec![0, 1],
                vec![1, 2],
                vec![2, 3],
                vec![3, 2, 1],
                vec![4, 5],
                vec![5, 3],
                vec![6, 3],
                vec![0, 3, 2],
            ] {
                let chosen: Vec<Vec<u32>> = pick.iter().map(|&i| lists[i].clone()).collect();
                let want = naive(&chosen);
                let mut tc: Vec<TodayCursor> = pick
                    .iter()
                    .map(|&i| TodayCursor::open(&mut mem_t, today_at[i].0, today_at[i].1))
                    .collect::<Result<_>>()
                    .unwrap();
                assert_eq!(intersect(&mut mem_t, &mut tc).unwrap(), want, "{pick:?}");
                let mut sc: Vec<SkipCursor> = pick
                    .iter()
                    .map(|&i| SkipCursor::open(&mut mem_s, refs[i]))
                    .collect::<Result<_>>()
                    .unwrap();
                assert_eq!(
                    intersect(&mut mem_s, &mut sc).unwrap(),
                    want,
                    "{pick:?} block {block}"
                );
            }
            assert!(mem_s.bytes > 0 && !mem_s.pages.is_empty());
        }
    }

    /// Walking every list with `next` and seeking every document from the start returns the
    /// list itself in both layouts.
    #[test]
    fn next_and_seek_visit_every_document() {
        let codec = BlockCodec::new();
        let l = list(9, 3000, 1_000_000);
        let mut today = Vec::new();
        write_today(&mut today, &codec, &l, &vec![1; l.len()]);
        let mut sl = Vec::new();
        let r = write_skiplist(&mut sl, 1024, &l, &l);
        assert!(r.nodes > 20, "{} nodes", r.nodes);
        let mut mt = MemSource(Bytes::from_vec(today.clone()));
        let mut ms = MemSource(Bytes::from_vec(sl));
        let mut t = TodayCursor::open(&mut mt, 0, today.len() as u64).unwrap();
        let mut s = SkipCursor::open(&mut ms, r).unwrap();
        let mut seen = (
            vec![Cursor::<MemSource>::doc(&t)],
            vec![Cursor::<MemSource>::doc(&s)],
        );
        loop {
            let a = t.next(&mut mt).unwrap();
            let b = s.next(&mut ms).unwrap();
            if a == TERMINATED && b == TERMINATED {
                break;
            }
            seen.0.push(a);
            seen.1.push(b);
        }
        assert_eq!(seen.0, l);
        assert_eq!(seen.1, l);
        for (i, &target) in l.iter().enumerate().step_by(97) {
            let mut t = TodayCursor::open(&mut mt, 0, today.len() as u64).unwrap();
            let mut s = SkipCursor::open(&mut ms, r).unwrap();
            assert_eq!(t.seek(&mut mt, target).unwrap(), target, "today {i}");
            assert_eq!(s.seek(&mut ms, target).unwrap(), target, "skip list {i}");
            // A target between documents lands on the next one.
            if i + 1 < l.len() && l[i + 1] > target + 1 {
                assert_eq!(t.seek(&mut mt, target + 1).unwrap(), l[i + 1]);
                assert_eq!(s.seek(&mut ms, target + 1).unwrap(), l[i + 1]);
            }
        }
        let mut s = SkipCursor::open(&mut ms, r).unwrap();
        assert_eq!(s.seek(&mut ms, l[l.len() - 1] + 1).unwrap(), TERMINATED);
    }
}
