//! Where do the postings of an in-memory segment live? In append-only byte streams of
//! variable-length integers, packed into large fixed-size chunks: all terms share a few big
//! allocations, growing never copies, and a posting costs the bytes of its delta-coded varints
//! (a document id delta, a frequency, position deltas: mostly one byte each) instead of four
//! bytes per integer. The smaller the in-memory segment, the more documents fit in the RAM
//! budget, so the fewer segments a bulk load flushes.
//!
//! A stream is a chain of slabs of growing size (4, 8, 16 … 32 Ki bytes of data); the four bytes
//! after a slab's data hold the global index of the next slab. Global indexes are
//! `chunk << 20 | offset`; a slab never straddles two chunks.

/// Data bytes per slab, by level.
const SLAB_SIZES: [u32; 14] = [
    4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768,
];
const LINK: u32 = 4;

const CHUNK_BITS: u32 = 20;
const CHUNK: u32 = 1 << CHUNK_BITS;
const MASK: u32 = CHUNK - 1;
/// The arena never grows past this many chunks (global indexes are `u32`); the builder flushes
/// before (see [`ByteArena::nearly_full`]).
const MAX_CHUNKS: usize = (1 << (32 - CHUNK_BITS)) - 1;

/// One stream's write position.
#[derive(Clone, Copy, Debug)]
pub struct ByteStream {
    head: u32,
    /// Next free byte (global index).
    tail: u32,
    /// The link slot of the current slab (global index).
    end: u32,
    level: u8,
}

/// The shared storage of many byte streams.
#[derive(Default, Debug)]
pub struct ByteArena {
    chunks: Vec<Box<[u8]>>,
    /// Next free byte (global index).
    next: u32,
}

impl ByteArena {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub fn mem_bytes(&self) -> usize {
        self.chunks.len() * CHUNK as usize
    }

    /// Whether the arena is within 256 MiB of the most it can address (4 GiB): time to flush.
    pub fn nearly_full(&self) -> bool {
        self.chunks.len() + 256 >= MAX_CHUNKS
    }

    /// A new empty stream.
    pub fn stream(&mut self) -> ByteStream {
        let head = self.alloc(SLAB_SIZES[0]);
        ByteStream {
            head,
            tail: head,
            end: head + SLAB_SIZES[0],
            level: 0,
        }
    }

    fn alloc(&mut self, size: u32) -> u32 {
        let need = size + LINK;
        // A new chunk when none is left (`next` may point at the start of a chunk not yet
        // allocated, after a slab that ended its chunk exactly) or the slab does not fit.
        if (self.next >> CHUNK_BITS) as usize >= self.chunks.len()
            || (self.next & MASK) + need > CHUNK
        {
            let c = self.chunks.len();
            assert!(
                c < MAX_CHUNKS,
                "in-memory segment exceeds 4 GiB of postings (the builder flushes before)"
            );
            self.chunks
                .push(vec![0u8; CHUNK as usize].into_boxed_slice());
            self.next = (c as u32) << CHUNK_BITS;
        }
        let start = self.next;
        self.next += need;
        start
    }

    #[inline]
    fn slot(&mut self, i: u32) -> &mut u8 {
        &mut self.chunks[(i >> CHUNK_BITS) as usize][(i & MASK) as usize]
    }

    fn link(&self, i: u32) -> u32 {
        let c = &self.chunks[(i >> CHUNK_BITS) as usize];
        let o = (i & MASK) as usize;
        u32::from_le_bytes([c[o], c[o + 1], c[o + 2], c[o + 3]])
    }

    /// Moves `s` to a new slab once its current one is full.
    #[cold]
    fn grow(&mut self, s: &mut ByteStream) {
        let level = (s.level as usize + 1).min(SLAB_SIZES.len() - 1);
        let next = self.alloc(SLAB_SIZES[level]);
        let end = s.end;
        for (k, b) in next.to_le_bytes().into_iter().enumerate() {
            *self.slot(end + k as u32) = b;
        }
        s.level = level as u8;
        s.tail = next;
        s.end = next + SLAB_SIZES[level];
    }

    #[inline]
    fn push_byte(&mut self, s: &mut ByteStream, b: u8) {
        if s.tail == s.end {
            self.grow(s);
        }
        *self.slot(s.tail) = b;
        s.tail += 1;
    }

    /// Appends `v` as a little-endian base-128 varint.
    #[inline]
    pub fn push_u32(&mut self, s: &mut ByteStream, mut v: u32) {
        while v >= 0x80 {
            self.push_byte(s, (v as u8) | 0x80);
            v >>= 7;
        }
        self.push_byte(s, v as u8);
    }

    /// Appends the stream's bytes to `out`.
    pub fn read(&self, s: &ByteStream, out: &mut Vec<u8>) {
        let mut pos = s.head;
        let mut level = 0usize;
        let mut end = s.head + SLAB_SIZES[0];
        loop {
            if pos == end {
                if pos == s.tail {
                    return;
                }
                pos = self.link(end);
                level = (level + 1).min(SLAB_SIZES.len() - 1);
                end = pos + SLAB_SIZES[level];
            }
            // The stream ends in this slab when its tail lies inside it.
            let stop = if s.tail >= pos && s.tail <= end {
                s.tail
            } else {
                end
            };
            let c = &self.chunks[(pos >> CHUNK_BITS) as usize];
            let o = (pos & MASK) as usize;
            out.extend_from_slice(&c[o..o + (stop - pos) as usize]);
            if stop == s.tail {
                return;
            }
            pos = stop;
        }
    }
}

/// Reads the varints of a stream's bytes (as [`ByteArena::read`] returns them) in order.
pub struct Varints<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Varints<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }
}

impl Iterator for Varints<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        let mut v = 0u32;
        let mut shift = 0;
        loop {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            v |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(a: &ByteArena, s: &ByteStream) -> Vec<u32> {
        let mut bytes = Vec::new();
        a.read(s, &mut bytes);
        Varints::new(&bytes).collect()
    }

    proptest! {
        #[test]
        fn interleaved_streams_read_back(
            ops in proptest::collection::vec((0usize..5, any::<u32>(), 0u32..4), 0..5000)
        ) {
            let mut a = ByteArena::new();
            let mut streams: Vec<ByteStream> = (0..5).map(|_| a.stream()).collect();
            let mut model: Vec<Vec<u32>> = vec![Vec::new(); 5];
            for (i, v, shift) in ops {
                // Mostly small values (one byte), as postings deltas are.
                let v = v >> (shift * 8);
                a.push_u32(&mut streams[i], v);
                model[i].push(v);
            }
            for i in 0..5 {
                prop_assert_eq!(&values(&a, &streams[i]), &model[i]);
            }
        }
    }

    #[test]
    fn a_long_stream_crosses_chunks() {
        let mut a = ByteArena::new();
        let mut other = a.stream();
        let mut s = a.stream();
        let n = 3 * CHUNK;
        for v in 0..n {
            a.push_u32(&mut s, v);
            if v % 1000 == 0 {
                a.push_u32(&mut other, v);
            }
        }
        assert!(a.chunks.len() > 3);
        let got = values(&a, &s);
        assert_eq!(got.len(), n as usize);
        assert!(got.iter().copied().eq(0..n));
        assert!(values(&a, &other).into_iter().eq((0..n).step_by(1000)));
    }

    #[test]
    fn slabs_that_fill_a_chunk_exactly() {
        // First slabs take 4 + 4 bytes: this many fill the first chunk to its last byte.
        let mut a = ByteArena::new();
        let n = (CHUNK / (SLAB_SIZES[0] + LINK)) as usize;
        let mut streams: Vec<ByteStream> = (0..n + 2).map(|_| a.stream()).collect();
        assert_eq!(a.chunks.len(), 2);
        for (i, s) in streams.iter_mut().enumerate() {
            for k in 0..6 {
                a.push_u32(s, (i + k) as u32 % 128);
            }
        }
        for (i, s) in streams.iter().enumerate() {
            let want: Vec<u32> = (0..6).map(|k| (i + k) as u32 % 128).collect();
            assert_eq!(values(&a, s), want);
        }
    }

    #[test]
    fn an_empty_stream_reads_nothing() {
        let mut a = ByteArena::new();
        let s = a.stream();
        assert!(values(&a, &s).is_empty());
        // A stream whose first slab is exactly full.
        let mut t = a.stream();
        for _ in 0..SLAB_SIZES[0] {
            a.push_u32(&mut t, 1);
        }
        assert_eq!(values(&a, &t), vec![1; SLAB_SIZES[0] as usize]);
    }
}
