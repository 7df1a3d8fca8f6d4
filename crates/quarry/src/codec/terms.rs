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
}

impl TermsReader {
    /// Wraps the FST bytes (checks the FST's own header, reads nothing else).
    pub fn open(file: &str, bytes: Bytes) -> Result<Self> {
        let map = fst::Map::new(bytes)
            .map_err(|e| Error::corrupt(file, format!("term dictionary: {e}")))?;
        Ok(Self { map })
    }
    /// The postings offset of `term`.
    pub fn get(&self, term: &[u8]) -> Option<u64> {
        self.map.get(term)
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
