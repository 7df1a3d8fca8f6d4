//! Which term is this token? The in-memory dictionary of one field of a segment being built,
//! laid out so that a lookup of a known term touches two cache lines: a slot of an
//! open-addressing table (a 32-bit hash and the term id) and the term's state, one 64-byte line
//! that also holds the term's bytes when they fit (15 bytes or fewer: nearly every word).
//!
//! A general hash map of boxed keys costs a control byte group, a bucket, the key behind its
//! pointer and then the state: four cache misses per token once the dictionary outgrows the
//! caches, which is nearly half of bulk indexing time on Wikipedia (`perf record`, see
//! `bench/results/indexing-2026-11-26.md`). States live in fixed pages that never move, so growing
//! the dictionary copies only the table of slots, and a flush frees a few large allocations,
//! not one per term.
use std::hash::Hasher;

use quarry_codecs::simd::prefetch;
use rustc_hash::FxHasher;

use super::byte_arena::ByteStream;

/// Term bytes kept in the state's own cache line.
const INLINE: usize = 15;
/// `key[0]` of a state whose bytes live in the long-key store.
const LONG: u8 = 0xFF;
/// States per page (a page is allocated whole and never moves).
const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

/// One term of the segment being built: where its postings streams stand, and its bytes.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(super) struct TermState {
    /// `[len, bytes.., 0 padding]` for a term of at most [`INLINE`] bytes; for a longer one
    /// `[LONG, len (4 bytes LE), offset in the long-key store (8 bytes LE), 0, 0]`.
    key: [u8; 16],
    /// The document being added when the term was last seen (`u32::MAX`: none yet).
    pub last_doc: u32,
    /// The last document written to `docs` (the base of the next delta).
    pub written_doc: u32,
    pub freq: u32,
    /// The term's last position in `last_doc` (the base of the next position delta).
    pub last_pos: u32,
    /// Per document: `(doc delta) << 1 | (freq == 1)`, then `freq` unless it is 1.
    pub docs: ByteStream,
    /// Per document, its positions as deltas from the previous one (the first from 0).
    pub positions: ByteStream,
}

/// A token ready for lookup: its hash and, for a short token, its bytes in the form a state
/// keeps them (`len | bytes << 8`, little-endian), so that matching is one 16-byte compare.
#[derive(Clone, Copy, Debug)]
pub(super) struct Probe {
    key: u128,
    hash: u32,
    len: u32,
}

impl Probe {
    /// Whether the key is longer than a state holds inline.
    #[inline]
    pub fn is_long(&self) -> bool {
        self.len as usize > INLINE
    }

    /// The key as a state keeps it inline (`len | bytes << 8`), or `0xFF` for a long key.
    #[inline]
    pub fn key(&self) -> u128 {
        self.key
    }

    /// The probe's 32-bit hash.
    #[inline]
    pub fn hash(&self) -> u32 {
        self.hash
    }

    /// The key's length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// The probe of `key`.
    #[inline]
    pub fn new(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let len = key.len();
            let key = (load_short(key) << 8) | len as u128;
            let (lo, hi) = (key as u64, (key >> 64) as u64);
            let x = (lo ^ hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(31))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            Self {
                key,
                hash: fold(x),
                len: len as u32,
            }
        } else {
            let mut h = FxHasher::default();
            h.write(key);
            Self {
                key: u128::from(LONG),
                hash: fold(h.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                len: key.len() as u32,
            }
        }
    }
}

/// The high half of a multiplied hash, folded with the low half: every bit of the input reaches
/// the low bits (the table index).
#[inline]
fn fold(x: u64) -> u32 {
    let x = x ^ (x >> 29);
    (x.wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 32) as u32
}

/// The bytes of a key of at most 15 bytes as a little-endian integer (zero above the key), read
/// with two overlapping loads instead of a byte loop.
#[inline]
fn load_short(b: &[u8]) -> u128 {
    let n = b.len();
    if n >= 8 {
        let lo = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let hi = u64::from_le_bytes(b[n - 8..].try_into().expect("8 bytes"));
        u128::from(lo) | (u128::from(hi) << (8 * (n - 8)))
    } else if n >= 4 {
        let lo = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
        let hi = u32::from_le_bytes(b[n - 4..].try_into().expect("4 bytes"));
        u128::from(u64::from(lo) | (u64::from(hi) << (8 * (n - 4))))
    } else if n > 0 {
        u128::from(
            u32::from(b[0])
                | (u32::from(b[n / 2]) << (8 * (n / 2)))
                | (u32::from(b[n - 1]) << (8 * (n - 1))),
        )
    } else {
        0
    }
}

/// The terms of one field of an in-memory segment.
pub(super) struct TermTable {
    /// Open addressing with linear probing: `hash32 << 32 | (id + 1)`; 0 is an empty slot.
    slots: Vec<u64>,
    len: usize,
    pages: Vec<Vec<TermState>>,
    long_keys: Vec<u8>,
}

impl Default for TermTable {
    fn default() -> Self {
        Self {
            slots: vec![0; 1024],
            len: 0,
            pages: Vec::new(),
            long_keys: Vec::new(),
        }
    }
}

impl TermTable {
    /// Number of terms.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes held, for the RAM budget.
    pub fn mem_bytes(&self) -> usize {
        self.slots.capacity() * 8
            + self.pages.len() * PAGE * std::mem::size_of::<TermState>()
            + self.long_keys.capacity()
    }

    #[inline]
    pub fn state(&self, id: u32) -> &TermState {
        &self.pages[(id >> PAGE_BITS) as usize][(id as usize) & (PAGE - 1)]
    }

    #[inline]
    pub fn state_mut(&mut self, id: u32) -> &mut TermState {
        &mut self.pages[(id >> PAGE_BITS) as usize][(id as usize) & (PAGE - 1)]
    }

    /// The bytes of term `id`.
    pub fn key(&self, id: u32) -> &[u8] {
        let k = &self.state(id).key;
        if k[0] == LONG {
            let (len, off) = long_ref(k);
            &self.long_keys[off..off + len]
        } else {
            &k[1..=k[0] as usize]
        }
    }

    #[inline]
    fn matches(&self, id: u32, probe: &Probe, key: &[u8]) -> bool {
        let k = &self.state(id).key;
        if !probe.is_long() {
            u128::from_le_bytes(*k) == probe.key
        } else {
            k[0] == LONG && {
                let (len, off) = long_ref(k);
                len == key.len() && &self.long_keys[off..off + len] == key
            }
        }
    }

    /// Brings in the slot a lookup of `probe` starts at.
    #[inline]
    pub fn prefetch_slot(&self, probe: &Probe) {
        prefetch(&self.slots[probe.hash as usize & (self.slots.len() - 1)]);
    }

    /// Brings in the state of the term in the slot a lookup of `probe` starts at, when that slot
    /// holds the same hash (the common case for a known term).
    #[inline]
    pub fn prefetch_state(&self, probe: &Probe) {
        let e = self.slots[probe.hash as usize & (self.slots.len() - 1)];
        if e != 0 && (e >> 32) as u32 == probe.hash {
            prefetch(self.state(e as u32 - 1));
        }
    }

    /// The id of `key`, adding it (with the streams `new_streams` makes) when it is new.
    #[cfg(test)]
    pub fn get_or_insert(
        &mut self,
        key: &[u8],
        new_streams: impl FnOnce() -> (ByteStream, ByteStream),
    ) -> u32 {
        self.get_or_insert_probe(&Probe::new(key), key, new_streams)
    }

    /// [`get_or_insert`](Self::get_or_insert) with the probe of `key` made beforehand; `key` is
    /// read only when the probe [`is_long`](Probe::is_long) (a short key is all in the probe).
    #[inline]
    pub fn get_or_insert_probe(
        &mut self,
        probe: &Probe,
        key: &[u8],
        new_streams: impl FnOnce() -> (ByteStream, ByteStream),
    ) -> u32 {
        let h = probe.hash;
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let e = self.slots[i];
            if e == 0 {
                break;
            }
            if (e >> 32) as u32 == h {
                let id = e as u32 - 1;
                if self.matches(id, probe, key) {
                    return id;
                }
            }
            i = (i + 1) & mask;
        }
        // A new term.
        let id = self.len as u32;
        let stored_key = if !probe.is_long() {
            probe.key.to_le_bytes()
        } else {
            let mut k = [0u8; 16];
            k[0] = LONG;
            k[1..5].copy_from_slice(&(key.len() as u32).to_le_bytes());
            k[5..13].copy_from_slice(&(self.long_keys.len() as u64).to_le_bytes());
            self.long_keys.extend_from_slice(key);
            k
        };
        let (docs, positions) = new_streams();
        if self.len.is_multiple_of(PAGE) {
            self.pages.push(Vec::with_capacity(PAGE));
        }
        self.pages.last_mut().expect("a page").push(TermState {
            key: stored_key,
            last_doc: u32::MAX,
            written_doc: 0,
            freq: 0,
            last_pos: 0,
            docs,
            positions,
        });
        self.slots[i] = (u64::from(h) << 32) | u64::from(id + 1);
        self.len += 1;
        // At most half full: most lookups end in the slot they start at.
        if self.len * 2 > self.slots.len() {
            self.grow();
        }
        id
    }

    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![0u64; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for &e in &self.slots {
            if e == 0 {
                continue;
            }
            let mut i = (e >> 32) as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = e;
        }
        self.slots = slots;
    }

    /// Term ids in the byte order of their terms.
    pub fn sorted(&self) -> Vec<(&[u8], u32)> {
        let mut v: Vec<(&[u8], u32)> = (0..self.len as u32).map(|id| (self.key(id), id)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

/// `(len, offset)` of a long key's reference.
fn long_ref(k: &[u8; 16]) -> (usize, usize) {
    let len = u32::from_le_bytes(k[1..5].try_into().expect("4 bytes")) as usize;
    let off = u64::from_le_bytes(k[5..13].try_into().expect("8 bytes")) as usize;
    (len, off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::byte_arena::ByteArena;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #[test]
        fn short_keys_load_as_their_bytes(b in proptest::collection::vec(any::<u8>(), 0..=INLINE)) {
            let mut want = [0u8; 16];
            want[..b.len()].copy_from_slice(&b);
            prop_assert_eq!(load_short(&b), u128::from_le_bytes(want));
        }
    }

    #[test]
    fn a_state_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<TermState>(), 64);
        assert_eq!(std::mem::align_of::<TermState>(), 64);
    }

    proptest! {
        /// Against a `HashMap`: the same ids for the same keys, across growth, inline and long
        /// keys (and keys that differ only past the inline part, or only in length).
        #[test]
        fn ids_match_a_hash_map(
            keys in proptest::collection::vec(
                prop_oneof![
                    "[a-c]{0,3}",
                    "[a-z]{10,20}",
                    "abcdefghijklmno[a-b]{0,3}",
                    proptest::collection::vec(any::<u8>(), 0..40)
                        .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
                ],
                0..3000,
            )
        ) {
            let mut arena = ByteArena::new();
            let mut t = TermTable::default();
            let mut model: HashMap<String, u32> = HashMap::new();
            for k in &keys {
                let next = model.len() as u32;
                let want = *model.entry(k.clone()).or_insert(next);
                let got = t.get_or_insert(k.as_bytes(), || (arena.stream(), arena.stream()));
                prop_assert_eq!(got, want);
                prop_assert_eq!(t.key(got), k.as_bytes());
            }
            prop_assert_eq!(t.len(), model.len());
            let mut want: Vec<(&str, u32)> = model.iter().map(|(k, &v)| (k.as_str(), v)).collect();
            want.sort_unstable();
            let got: Vec<(&[u8], u32)> = t.sorted();
            prop_assert_eq!(got.len(), want.len());
            for ((gk, gi), (wk, wi)) in got.iter().zip(&want) {
                prop_assert_eq!(*gk, wk.as_bytes());
                prop_assert_eq!(gi, wi);
            }
        }
    }

    #[test]
    fn many_terms_across_pages_and_growth() {
        let mut arena = ByteArena::new();
        let mut t = TermTable::default();
        let n = 3 * PAGE as u32 + 17;
        for round in 0..2 {
            for i in 0..n {
                let k = format!("t{i}");
                let id = t.get_or_insert(k.as_bytes(), || (arena.stream(), arena.stream()));
                assert_eq!(id, i, "round {round}");
            }
        }
        assert_eq!(t.len(), n as usize);
        assert!(t.slots.len() >= 2 * n as usize);
        assert_eq!(t.key(5), b"t5");
    }
}
