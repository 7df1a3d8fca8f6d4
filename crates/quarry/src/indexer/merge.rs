//! Merging segments into one: terms are unioned across the segments' dictionaries in order,
//! postings concatenated with doc-id bases, norms copied, stored documents re-blocked; deleted
//! documents are dropped (their doc ids are compacted away).
use std::sync::Arc;

use fst::{IntoStreamer, Streamer};
use quarry_store::Directory;

use super::segment_writer::{SegmentFileWriter, StoredFile, STORED_SPILL_BYTES};
use crate::codec::format;
use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::SegmentMeta;
use crate::codec::postings::TERMINATED;
use crate::codec::stored::StoredWriter;
use crate::index::SegmentReader;
use crate::schema::Schema;
use crate::{Error, Result};

/// Where each document of a merged segment goes: `base + doc`, or through a map when the
/// segment has deletions (`NONE` = dropped).
pub(crate) enum DocMap {
    Shift(u32),
    Map(Vec<u32>),
}

pub(crate) const NONE: u32 = u32::MAX;

impl DocMap {
    #[inline]
    pub(crate) fn get(&self, doc: u32) -> u32 {
        match self {
            DocMap::Shift(base) => base + doc,
            DocMap::Map(m) => m.get(doc as usize).copied().unwrap_or(NONE),
        }
    }
}

/// Writes segment `name` holding every live document of `segments`, in order; `live[i]` holds
/// segment `i`'s live documents when it has deletions (an empty slice: none has).
pub fn merge_segments(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
) -> Result<SegmentMeta> {
    merge_with_maps(dir, schema, segments, live, name).map(|(meta, _)| meta)
}

/// [`merge_segments`], also returning where each input document went.
pub(crate) fn merge_with_maps(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
) -> Result<(SegmentMeta, Vec<DocMap>)> {
    let live_of = |i: usize| live.get(i).and_then(|l| l.as_deref());
    // A merge copies its sources into a new segment with fresh checksums: verify every byte of
    // them first, so that damage is reported instead of being sealed into the new segment.
    for s in segments {
        s.verify_all()?;
    }
    let mut maps = Vec::with_capacity(segments.len());
    let mut total = 0u32;
    for (i, s) in segments.iter().enumerate() {
        let too_many =
            || Error::InvalidArgument("merged segment would exceed 2^32 documents".into());
        match live_of(i) {
            None => {
                maps.push(DocMap::Shift(total));
                total = total.checked_add(s.doc_count()).ok_or_else(too_many)?;
            }
            Some(l) => {
                let mut m = Vec::with_capacity(s.doc_count() as usize);
                for d in 0..s.doc_count() {
                    if l.is_live(d) {
                        m.push(total);
                        total = total.checked_add(1).ok_or_else(too_many)?;
                    } else {
                        m.push(NONE);
                    }
                }
                maps.push(DocMap::Map(m));
            }
        }
    }
    let any_deletes = (0..segments.len()).any(|i| live_of(i).is_some());
    let mut w = SegmentFileWriter::new(schema, dir, name)?;
    let (mut docs, mut freqs, mut positions, mut pbuf) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (f, entry) in schema.fields().iter().enumerate() {
        let f = f as u32;
        let mut norms = Vec::new();
        if entry.has_norms() {
            norms.reserve(total as usize);
            for (i, s) in segments.iter().enumerate() {
                match (s.norms(f)?, live_of(i)) {
                    (Some(n), None) => norms.extend_from_slice(n),
                    (Some(n), Some(l)) => norms.extend(
                        n.iter()
                            .enumerate()
                            .filter(|(d, _)| l.is_live(*d as u32))
                            .map(|(_, &b)| b),
                    ),
                    (None, l) => {
                        let live = l.map_or(s.doc_count(), |l| l.live_count());
                        norms.resize(norms.len() + live as usize, 0)
                    }
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
        // With deletions the field's document count is recounted over the live documents.
        let mut with_field = if any_deletes {
            vec![0u64; (total as usize).div_ceil(64)]
        } else {
            Vec::new()
        };
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
                let map = &maps[si];
                while c.doc() != TERMINATED {
                    let d = map.get(c.doc());
                    if d != NONE {
                        docs.push(d);
                        freqs.push(c.freq());
                        if entry.has_positions() {
                            c.positions(&mut pbuf);
                            positions.extend_from_slice(&pbuf);
                        }
                        if any_deletes {
                            with_field[(d / 64) as usize] |= 1 << (d % 64);
                        }
                    }
                    c.next();
                }
                if let Some(why) = c.is_corrupt() {
                    return Err(Error::corrupt(format!("{}.post", seg.name()), why));
                }
            }
            if docs.is_empty() {
                continue;
            }
            w.add_term(
                term,
                &docs,
                &freqs,
                &positions,
                entry.has_norms().then_some(&norms[..]),
            )?;
        }
        let doc_count: u32 = if any_deletes {
            with_field.iter().map(|w| w.count_ones()).sum()
        } else {
            segments
                .iter()
                .map(|s| s.meta().fields[f as usize].doc_count)
                .sum()
        };
        w.end_field(doc_count)?;
    }
    // Stored blocks are written out as they fill, not held for the whole merged segment.
    let mut stored = StoredWriter::new(format::begin(format::KIND_STORED));
    let mut stored_file = StoredFile::create(dir, name)?;
    for (i, s) in segments.iter().enumerate() {
        let l = live_of(i);
        let mut d = 0u32;
        s.for_each_stored_doc(|bytes| {
            if !matches!(l, Some(l) if !l.is_live(d)) {
                stored.add(bytes);
                if stored.pending_bytes() >= STORED_SPILL_BYTES {
                    stored_file.write_pending(&mut stored)?;
                }
            }
            d += 1;
            Ok(())
        })?;
    }
    // Index order of the kept documents, as runs of consecutive sequence numbers.
    let mut runs: Vec<(u32, u64)> = Vec::new();
    let mut last: Option<u64> = None;
    for (s, map) in segments.iter().zip(&maps) {
        let meta = s.meta();
        for (i, &(l, seq)) in meta.seq_runs.iter().enumerate() {
            let end = meta.seq_runs.get(i + 1).map_or(meta.doc_count, |r| r.0);
            for d in l..end {
                let nd = map.get(d);
                if nd == NONE {
                    continue;
                }
                let sq = seq + u64::from(d - l);
                if last.map(|p| p + 1) != Some(sq) {
                    runs.push((nd, sq));
                }
                last = Some(sq);
            }
        }
    }
    let meta = w.finish(dir, name, total, runs, stored, Some(stored_file))?;
    Ok((meta, maps))
}
