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
    /// The root's transition for each first byte: (target node, output), `NO_NODE` where
    /// none. The root of a large dictionary has dozens of transitions, and decoding it was a
    /// fifth of every lookup; built on the first [`get`](Self::get) (4 KiB), never at open.
    root: std::sync::OnceLock<Box<[(usize, u64); 256]>>,
}

const NO_NODE: usize = usize::MAX;

impl TermsReader {
    /// Wraps the FST bytes (checks the FST's own header, reads nothing else).
    pub fn open(file: &str, bytes: Bytes) -> Result<Self> {
        let map = fst::Map::new(bytes)
            .map_err(|e| Error::corrupt(file, format!("term dictionary: {e}")))?;
        Ok(Self {
            map,
            root: std::sync::OnceLock::new(),
        })
    }
    /// The postings offset of `term`.
    pub fn get(&self, term: &[u8]) -> Option<u64> {
        let fst = self.map.as_fst();
        let Some((&first, rest)) = term.split_first() else {
            return self.map.get(term);
        };
        let root = self.root.get_or_init(|| {
            let mut table = Box::new([(NO_NODE, 0u64); 256]);
            for t in fst.root().transitions() {
                table[usize::from(t.inp)] = (t.addr, t.out.value());
            }
            table
        });
        let (addr, out) = root[usize::from(first)];
        if addr == NO_NODE {
            return None;
        }
        let mut out = fst::raw::Output::new(out);
        let mut node = fst.node(addr);
        for &b in rest {
            let t = node.transition(node.find_input(b)?);
            out = out.cat(t.out);
            node = fst.node(t.addr);
        }
        node.is_final()
            .then(|| out.cat(node.final_output()).value())
    }
    /// The postings offset of `term`, looked up node by node: before a node's bytes are used,
    /// `verify(start, end)` is called with their range inside the FST (first the few bytes of
    /// its header, then the whole node), so a lookup touches and checks only the chunks on its
    /// path. The FST's header and trailer must have been verified before [`TermsReader::open`].
    pub fn get_verified(
        &self,
        term: &[u8],
        mut verify: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<Option<u64>> {
        let fst = self.map.as_fst();
        let mut node = checked_node(fst, fst.root().addr(), &mut verify)?;
        let mut out = fst::raw::Output::zero();
        for &b in term {
            let Some(i) = node.find_input(b) else {
                return Ok(None);
            };
            let t = node.transition(i);
            out = out.cat(t.out);
            node = checked_node(fst, t.addr, &mut verify)?;
        }
        Ok(node
            .is_final()
            .then(|| out.cat(node.final_output()).value()))
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

/// The node at `addr`, its bytes verified: the header bytes (state, transition count, pack
/// sizes: at most the three bytes ending at `addr`) before parsing, then the node's whole span.
/// Address 0 is the empty final node, which has no bytes.
fn checked_node<'f>(
    fst: &'f fst::raw::Fst<Bytes>,
    addr: fst::raw::CompiledAddr,
    verify: &mut impl FnMut(u64, u64) -> Result<()>,
) -> Result<fst::raw::Node<'f>> {
    if addr == 0 {
        return Ok(fst.node(addr));
    }
    let end = addr as u64 + 1;
    verify(end.saturating_sub(3), end)?;
    let node = fst.node(addr);
    // `as_slice` is the node's own bytes (its lowest address up to `addr`).
    verify(end - node.as_slice().len() as u64, end)?;
    Ok(node)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn reader(keys: &BTreeMap<Vec<u8>, u64>) -> TermsReader {
        let mut w = TermsWriter::new();
        for (k, &v) in keys {
            w.insert(k, v).unwrap();
        }
        TermsReader::open("t.terms", Bytes::from_vec(w.finish().unwrap())).unwrap()
    }

    proptest! {
        /// The root table's lookup, the node-by-node verified one and a map agree on keys
        /// present and absent (absent first bytes, prefixes of keys, the empty key).
        #[test]
        fn lookups_agree_with_a_map(
            keys in proptest::collection::btree_map(
                proptest::collection::vec(prop_oneof![3 => 97u8..101, 1 => any::<u8>()], 0..6),
                0u64..1 << 40,
                0..200,
            ),
            probes in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![3 => 97u8..101, 1 => any::<u8>()], 0..7),
                0..50,
            ),
        ) {
            let r = reader(&keys);
            for k in keys.keys().chain(&probes) {
                let want = keys.get(k).copied();
                prop_assert_eq!(r.get(k), want, "key {:?}", k);
                prop_assert_eq!(r.get_verified(k, |_, _| Ok(())).unwrap(), want, "key {:?}", k);
            }
        }
    }
}
