//! Which stored fields do these hits have? Fetching the stored documents of search hits, one
//! hit at a time or batched per segment.
use serde_json::{Map, Value};

use super::{DocAddress, Searcher};
use crate::{Error, Result};

impl Searcher {
    /// The stored fields of a hit.
    pub fn stored_fields(&self, doc: DocAddress) -> Result<Map<String, Value>> {
        let seg = self.segments.get(doc.segment as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("segment {} out of range", doc.segment))
        })?;
        seg.stored_fields(doc.doc)
    }

    /// The stored fields of several hits (e.g. a result page), in the order given: per segment,
    /// one batched read of the blocks they are in ([`SegmentReader::stored_docs`](crate::index::SegmentReader::stored_docs)). Same result
    /// as calling [`Searcher::stored_fields`] for each.
    pub fn docs(&self, docs: &[DocAddress]) -> Result<Vec<Map<String, Value>>> {
        let mut out: Vec<Option<Map<String, Value>>> = vec![None; docs.len()];
        let mut by_segment: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, d) in docs.iter().enumerate() {
            by_segment.entry(d.segment).or_default().push(i);
        }
        for (segment, idx) in by_segment {
            let seg = self
                .segments
                .get(segment as usize)
                .ok_or_else(|| Error::InvalidArgument(format!("segment {segment} out of range")))?;
            let ids: Vec<u32> = idx.iter().map(|&i| docs[i].doc).collect();
            for (i, fields) in idx.into_iter().zip(seg.stored_docs(&ids)?) {
                out[i] = Some(fields);
            }
        }
        Ok(out
            .into_iter()
            .map(|f| f.expect("every hit fetched"))
            .collect())
    }
}
