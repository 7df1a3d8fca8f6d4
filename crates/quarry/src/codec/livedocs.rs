//! Which documents of a segment are still live? The deleted-documents bitset of one segment and
//! generation (`<segment>_<gen>.del`, format v2). Spec: `docs/format/deletes.md`.
use quarry_codecs::ByteReader;

use super::format::{self, KIND_DELETES};
use crate::error::InFile;
use crate::{Error, Result};

/// The live documents of a segment with deletions: one bit per document, set = live.
///
/// Segments without deletions have no `LiveDocs` at all, so search pays nothing for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveDocs {
    words: Vec<u64>,
    doc_count: u32,
    deleted: u32,
}

impl LiveDocs {
    /// Every document of a `doc_count`-document segment live.
    pub fn all_live(doc_count: u32) -> Self {
        let n = (doc_count as usize).div_ceil(64);
        let mut words = vec![!0u64; n];
        if doc_count % 64 != 0 {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (doc_count % 64)) - 1;
            }
        }
        Self {
            words,
            doc_count,
            deleted: 0,
        }
    }

    /// The file holding generation `gen` of `segment`'s deletions.
    pub fn file_name(segment: &str, gen: u64) -> String {
        format!("{segment}_{gen}.del")
    }

    #[inline]
    pub fn is_live(&self, doc: u32) -> bool {
        self.words
            .get((doc / 64) as usize)
            .is_some_and(|w| w >> (doc % 64) & 1 == 1)
    }

    /// The 64 live bits of documents `[64 i, 64 i + 64)` (0 past the end).
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    /// Marks `doc` deleted; returns whether it was live.
    pub fn delete(&mut self, doc: u32) -> bool {
        let Some(w) = self.words.get_mut((doc / 64) as usize) else {
            return false;
        };
        let bit = 1u64 << (doc % 64);
        if *w & bit == 0 {
            return false;
        }
        *w &= !bit;
        self.deleted += 1;
        true
    }

    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }
    pub fn deleted_count(&self) -> u32 {
        self.deleted
    }
    pub fn live_count(&self) -> u32 {
        self.doc_count - self.deleted
    }

    /// The framed file: `doc_count u32`, `deleted u32`, then the *deleted* bits as u64 words.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = format::begin(KIND_DELETES);
        out.extend_from_slice(&self.doc_count.to_le_bytes());
        out.extend_from_slice(&self.deleted.to_le_bytes());
        let full = Self::all_live(self.doc_count);
        for (w, f) in self.words.iter().zip(&full.words) {
            out.extend_from_slice(&(!w & f).to_le_bytes());
        }
        format::finish(out)
    }

    /// Decodes and fully verifies a deletions file of a `doc_count`-document segment.
    pub fn decode(file: &str, bytes: &[u8], doc_count: u32) -> Result<Self> {
        format::check(file, bytes, KIND_DELETES)?;
        format::check_crc(file, bytes)?;
        let body = quarry_codecs::framing::body(bytes);
        let mut r = ByteReader::new(body);
        let n = r.u32().in_file(file)?;
        let deleted = r.u32().in_file(file)?;
        if n != doc_count {
            return Err(Error::corrupt(
                file,
                format!("covers {n} documents, the segment has {doc_count}"),
            ));
        }
        let mut live = Self::all_live(doc_count);
        if r.remaining() != live.words.len() * 8 {
            return Err(Error::corrupt(
                file,
                format!(
                    "{} bitset bytes, expected {}",
                    r.remaining(),
                    live.words.len() * 8
                ),
            ));
        }
        let mut count = 0u32;
        for w in live.words.iter_mut() {
            let del = r.u64().in_file(file)?;
            if del & !*w != 0 {
                return Err(Error::corrupt(file, "deleted bits past the last document"));
            }
            count += del.count_ones();
            *w &= !del;
        }
        if count != deleted {
            return Err(Error::corrupt(
                file,
                format!("{count} deleted bits, the header says {deleted}"),
            ));
        }
        live.deleted = deleted;
        Ok(live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_counts() {
        let mut l = LiveDocs::all_live(130);
        assert!(l.delete(0));
        assert!(l.delete(129));
        assert!(!l.delete(129));
        assert!(!l.delete(130));
        assert_eq!((l.deleted_count(), l.live_count()), (2, 128));
        let bytes = l.encode();
        let back = LiveDocs::decode("x.del", &bytes, 130).unwrap();
        assert_eq!(back, l);
        assert!(!back.is_live(0) && back.is_live(1) && !back.is_live(129) && !back.is_live(130));
        assert_eq!(back.word(2), 0b01);
    }

    #[test]
    fn damaged_files_are_corrupt_not_panics() {
        let mut l = LiveDocs::all_live(70);
        l.delete(3);
        let bytes = l.encode();
        assert!(LiveDocs::decode("x.del", &bytes, 71).is_err());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(LiveDocs::decode("x.del", &b, 70).is_err(), "flip at {i}");
        }
        assert!(LiveDocs::decode("x.del", &bytes[..bytes.len() - 9], 70).is_err());
    }
}
