//! Append-only integer streams packed into large fixed-size chunks, so that the postings of all
//! terms of an in-memory segment live in a few big allocations instead of one vector per term,
//! and growing never reallocates or copies (a single growing `Vec` spent a quarter of indexing
//! time in page faults and copies on regrowth).
//!
//! A stream is a chain of slabs of growing size (2, 4, 8 … 1024 values); the slot after a slab's
//! last value holds the index of the next slab. Slot indexes are global: `chunk << 20 | offset`;
//! a slab never straddles two chunks.

const SLAB_SIZES: [u32; 10] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// One stream's write position.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    head: u32,
    /// Next free slot.
    tail: u32,
    /// The link slot of the current slab.
    end: u32,
    level: u8,
    len: u32,
}

const CHUNK_BITS: u32 = 20;
const CHUNK: u32 = 1 << CHUNK_BITS;
const MASK: u32 = CHUNK - 1;

/// The shared storage of many streams.
#[derive(Default, Debug)]
pub struct IntArena {
    chunks: Vec<Box<[u32]>>,
    /// Next free slot (global index).
    next: u32,
}

impl IntArena {
    pub fn new() -> Self {
        Self {
            chunks: Vec::new(),
            next: 0,
        }
    }

    /// Bytes held.
    pub fn mem_bytes(&self) -> usize {
        self.chunks.len() * CHUNK as usize * 4
    }

    #[inline]
    fn get(&self, i: u32) -> u32 {
        self.chunks[(i >> CHUNK_BITS) as usize][(i & MASK) as usize]
    }

    #[inline]
    fn set(&mut self, i: u32, v: u32) {
        self.chunks[(i >> CHUNK_BITS) as usize][(i & MASK) as usize] = v;
    }

    /// A new empty stream.
    pub fn stream(&mut self) -> Stream {
        let head = self.alloc(SLAB_SIZES[0]);
        Stream {
            head,
            tail: head,
            end: head + SLAB_SIZES[0],
            level: 0,
            len: 0,
        }
    }

    fn alloc(&mut self, size: u32) -> u32 {
        let need = size + 1;
        if self.chunks.is_empty()
            || (self.next & MASK) + need > CHUNK
            || self.next >> CHUNK_BITS >= self.chunks.len() as u32
        {
            let c = self.chunks.len() as u32;
            assert!(
                c < (1 << (32 - CHUNK_BITS)) - 1,
                "in-memory segment exceeds 16 GiB of postings"
            );
            self.chunks
                .push(vec![0u32; CHUNK as usize].into_boxed_slice());
            self.next = c << CHUNK_BITS;
        }
        let start = self.next;
        self.next += need;
        start
    }

    #[inline]
    pub fn push(&mut self, s: &mut Stream, v: u32) {
        if s.tail == s.end {
            let level = (s.level as usize + 1).min(SLAB_SIZES.len() - 1);
            let next = self.alloc(SLAB_SIZES[level]);
            self.set(s.end, next);
            s.level = level as u8;
            s.tail = next;
            s.end = next + SLAB_SIZES[level];
        }
        self.set(s.tail, v);
        s.tail += 1;
        s.len += 1;
    }

    /// Appends the stream's values to `out`.
    pub fn read(&self, s: &Stream, out: &mut Vec<u32>) {
        let mut pos = s.head;
        let mut level = 0usize;
        let mut end = s.head + SLAB_SIZES[0];
        let mut left = s.len;
        while left > 0 {
            if pos == end {
                pos = self.get(end);
                level = (level + 1).min(SLAB_SIZES.len() - 1);
                end = pos + SLAB_SIZES[level];
            }
            let take = (end - pos).min(left);
            let c = &self.chunks[(pos >> CHUNK_BITS) as usize];
            let o = (pos & MASK) as usize;
            out.extend_from_slice(&c[o..o + take as usize]);
            pos += take;
            left -= take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn interleaved_streams_read_back(ops in proptest::collection::vec((0usize..5, any::<u32>()), 0..5000)) {
            let mut a = IntArena::new();
            let mut streams: Vec<Stream> = (0..5).map(|_| a.stream()).collect();
            let mut model: Vec<Vec<u32>> = vec![Vec::new(); 5];
            for (i, v) in ops {
                a.push(&mut streams[i], v);
                model[i].push(v);
            }
            for i in 0..5 {
                let mut out = Vec::new();
                a.read(&streams[i], &mut out);
                prop_assert_eq!(&out, &model[i]);
            }
        }
    }
}
