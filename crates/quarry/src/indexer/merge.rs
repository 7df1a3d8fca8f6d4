//! Merging segments into one: terms are unioned across the segments' dictionaries in order,
//! postings concatenated with doc-id bases, norms copied, stored documents re-blocked.
use std::sync::Arc;

use fst::{IntoStreamer, Streamer};
use quarry_store::Directory;

use super::segment_writer::SegmentFileWriter;
use crate::codec::format;
use crate::codec::meta::SegmentMeta;
use crate::codec::postings::TERMINATED;
use crate::codec::stored::StoredWriter;
use crate::index::SegmentReader;
use crate::schema::Schema;
use crate::{Error, Result};

/// Writes segment `name` holding every document of `segments`, in order.
pub fn merge_segments(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    name: &str,
) -> Result<SegmentMeta> {
    let mut bases = Vec::with_capacity(segments.len());
    let mut total = 0u32;
    for s in segments {
        bases.push(total);
        total = total.checked_add(s.doc_count()).ok_or_else(|| {
            Error::InvalidArgument("merged segment would exceed 2^32 documents".into())
        })?;
    }
    let mut w = SegmentFileWriter::new(schema);
    let (mut docs, mut freqs, mut positions, mut pbuf) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (f, entry) in schema.fields().iter().enumerate() {
        let f = f as u32;
        let mut norms = Vec::new();
        if entry.has_norms() {
            norms.reserve(total as usize);
            for s in segments {
                match s.norms(f)? {
                    Some(n) => norms.extend_from_slice(n),
                    None => norms.resize(norms.len() + s.doc_count() as usize, 0),
                }
            }
            w.set_norms(f, &norms);
        }
        w.begin_field(f);
        let mut dicts = Vec::new();
        let mut owners = Vec::new();
        for (i, s) in segments.iter().enumerate() {
            if let Some(d) = s.terms(f)? {
                dicts.push(d);
                owners.push(i);
            }
        }
        let mut op = fst::map::OpBuilder::new();
        for d in &dicts {
            op = op.add(d.map().stream());
        }
        let mut union = op.union().into_stream();
        while let Some((term, values)) = union.next() {
            docs.clear();
            freqs.clear();
            positions.clear();
            let mut vals: Vec<_> = values.to_vec();
            vals.sort_by_key(|v| v.index);
            for v in vals {
                let si = owners[v.index];
                let seg = &segments[si];
                let (info, bytes) = seg.term_info_at(f, v.value)?;
                let mut c = seg.postings(f, &info, &bytes, entry.has_positions())?;
                while c.doc() != TERMINATED {
                    docs.push(bases[si] + c.doc());
                    freqs.push(c.freq());
                    if entry.has_positions() {
                        c.positions(&mut pbuf);
                        positions.extend_from_slice(&pbuf);
                    }
                    c.next();
                }
                if let Some(why) = c.is_corrupt() {
                    return Err(Error::corrupt(format!("{}.post", seg.name()), why));
                }
            }
            w.add_term(
                term,
                &docs,
                &freqs,
                &positions,
                entry.has_norms().then_some(&norms[..]),
            )?;
        }
        let doc_count: u32 = segments
            .iter()
            .map(|s| s.meta().fields[f as usize].doc_count)
            .sum();
        w.end_field(doc_count)?;
    }
    let mut stored = StoredWriter::new(format::begin(format::KIND_STORED));
    for s in segments {
        s.for_each_stored_doc(|bytes| {
            stored.add(bytes);
            Ok(())
        })?;
    }
    let mut runs: Vec<(u32, u64)> = Vec::new();
    for (s, &base) in segments.iter().zip(&bases) {
        let meta = s.meta();
        for (i, &(l, seq)) in meta.seq_runs.iter().enumerate() {
            let end = meta.seq_runs.get(i + 1).map_or(meta.doc_count, |r| r.0);
            if let Some(&(pl, ps)) = runs.last() {
                if ps + u64::from(base + l - pl) == seq {
                    continue;
                }
            }
            if end > l {
                runs.push((base + l, seq));
            }
        }
    }
    w.finish(dir, name, total, runs, stored)
}
