//! Merging segments into one: terms are unioned across the segments' dictionaries in order,
//! postings concatenated with doc-id bases, norms copied, stored documents re-blocked; deleted
//! documents are dropped (their doc ids are compacted away).
//!
//! With an index sort ([`crate::index_sort`]) the merged documents are ordered by their sort
//! keys, ties by sequence number, instead of concatenated: every input document gets its place
//! through the doc maps, and every structure (postings and positions, pairs, norms, stored
//! fields, columns, index order) follows them. A flush of an index-sorted index is a merge of
//! the one freshly written segment.
use std::sync::Arc;

use fst::{IntoStreamer, Streamer};
use quarry_store::Directory;

use super::reorder::{self, BpOptions, Forward};
use super::segment_writer::{SegmentFileWriter, StoredFile, STORED_SPILL_BYTES};
use crate::codec::columns::ColumnsWriter;
use crate::codec::format;
use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::SegmentMeta;
use crate::codec::postings::TERMINATED;
use crate::codec::stored::StoredWriter;
use crate::codec::terms::TermsReader;
use crate::codec::vectors::{GraphSeed, VectorsWriter};
use crate::document::Document;
use crate::index::sorted::{compare_keys, KeyPart, SegmentKeys};
use crate::index::SegmentReader;
use crate::index_sort::IndexSort;
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

/// Writes segment `name` holding every live document of `segments`, in order (or, with
/// `sort`, in that index sort's order); `live[i]` holds segment `i`'s live documents when it
/// has deletions (an empty slice: none has).
pub fn merge_segments(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
    sort: Option<&IndexSort>,
) -> Result<SegmentMeta> {
    merge_with_maps(dir, schema, segments, live, name, sort).map(|(meta, _)| meta)
}

/// [`merge_segments`], also returning where each input document went.
pub(crate) fn merge_with_maps(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
    sort: Option<&IndexSort>,
) -> Result<(SegmentMeta, Vec<DocMap>)> {
    merge_ordered(dir, schema, segments, live, name, sort, None)
}

/// [`merge_segments`] of an index without an index sort, its documents in the order a BP pass
/// over their terms chooses ([`super::reorder`]).
pub(crate) fn merge_reordered(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
    bp: &BpOptions,
) -> Result<SegmentMeta> {
    merge_ordered(dir, schema, segments, live, name, None, Some(bp)).map(|(meta, _)| meta)
}

fn merge_ordered(
    dir: &dyn Directory,
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    live: &[Option<Arc<LiveDocs>>],
    name: &str,
    sort: Option<&IndexSort>,
    bp: Option<&BpOptions>,
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
    if let Some(sort) = sort {
        sort_maps(&mut maps, segments, sort, total)?;
    }
    if let Some(bp) = bp {
        bp_maps(&mut maps, segments, schema, bp, total)?;
    }
    let permuted = sort.is_some() || bp.is_some();
    let mut w = SegmentFileWriter::new(schema, dir, name)?;
    w.set_index_sort(sort.cloned());
    let mut bufs = Bufs::default();
    let src = Sources {
        segments,
        maps: &maps,
        total,
        permuted,
    };
    for (f, entry) in schema.fields().iter().enumerate() {
        let f = f as u32;
        let mut norms = Vec::new();
        if entry.has_norms() && permuted {
            norms.resize(total as usize, 0);
            for (s, map) in segments.iter().zip(&maps) {
                if let Some(n) = s.norms(f)? {
                    for (d, &b) in n.iter().enumerate().take(s.doc_count() as usize) {
                        let nd = map.get(d as u32);
                        if nd != NONE {
                            norms[nd as usize] = b;
                        }
                    }
                }
            }
            w.set_norms(f, &norms);
        } else if entry.has_norms() {
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
        for (i, s) in segments.iter().enumerate() {
            if let Some(d) = s.terms(f)? {
                dicts.push((i, d));
            }
        }
        let norms = entry.has_norms().then_some(&norms[..]);
        let live_docs = merge_terms(&mut w, &src, f, &dicts, norms, &mut bufs)?;
        let doc_count: u32 = match live_docs {
            Some(n) => n,
            None => segments
                .iter()
                .map(|s| s.meta().fields[f as usize].doc_count)
                .sum(),
        };
        w.end_field(doc_count)?;
        // The pairs of frequent words; a source written without them (or with another list)
        // has its pairs derived from its words' positions, so a merge upgrades it.
        if entry.has_pairs() {
            w.begin_pairs(f);
            let doc_count = merge_pairs(&mut w, &src, f, norms, &mut bufs)?;
            w.end_field(doc_count)?;
        }
    }
    // Stored blocks are written out as they fill, not held for the whole merged segment.
    let mut stored = StoredWriter::new(format::begin(format::KIND_STORED));
    let mut stored_file = StoredFile::create(dir, name)?;
    let mut columns = super::builder::new_columns(schema);
    // With an index sort the stored documents are written in their new order: held until
    // every source has been read.
    let mut held: Vec<Vec<u8>> = if permuted {
        vec![Vec::new(); total as usize]
    } else {
        Vec::new()
    };
    for (i, s) in segments.iter().enumerate() {
        let l = live_of(i);
        let mut d = 0u32;
        let from_columns = s.has_columns();
        if from_columns {
            merge_columns(&mut columns, schema, s, &maps[i])?;
        }
        s.for_each_stored_doc(|bytes| {
            if !matches!(l, Some(l) if !l.is_live(d)) {
                if !from_columns {
                    // Written before columns existed: its values come from its stored fields.
                    let doc = crate::codec::stored::decode_doc(schema, bytes)
                        .map_err(|e| Error::corrupt(s.name(), e.to_string()))
                        .and_then(|m| Document::from_map(schema, &m))?;
                    let nd = maps[i].get(d);
                    for (f, v) in doc.values() {
                        super::builder::add_column_value(&mut columns, schema, nd, *f, v);
                    }
                }
                if permuted {
                    held[maps[i].get(d) as usize] = bytes.to_vec();
                } else {
                    stored.add(bytes);
                    if stored.pending_bytes() >= STORED_SPILL_BYTES {
                        stored_file.write_pending(&mut stored)?;
                    }
                }
            }
            d += 1;
            Ok(())
        })?;
    }
    for bytes in held {
        stored.add(&bytes);
        if stored.pending_bytes() >= STORED_SPILL_BYTES {
            stored_file.write_pending(&mut stored)?;
        }
    }
    // Index order of the kept documents, as runs of consecutive sequence numbers.
    let mut seqs = vec![0u64; total as usize];
    for (s, map) in segments.iter().zip(&maps) {
        let meta = s.meta();
        for (i, &(l, seq)) in meta.seq_runs.iter().enumerate() {
            let end = meta.seq_runs.get(i + 1).map_or(meta.doc_count, |r| r.0);
            for d in l..end {
                let nd = map.get(d);
                if nd != NONE {
                    seqs[nd as usize] = seq + u64::from(d - l);
                }
            }
        }
    }
    let mut runs: Vec<(u32, u64)> = Vec::new();
    let mut last: Option<u64> = None;
    for (nd, &sq) in seqs.iter().enumerate() {
        if last.map(|p| p + 1) != Some(sq) {
            runs.push((nd as u32, sq));
        }
        last = Some(sq);
    }
    let (vectors, seeds) = merge_vectors(schema, segments, &maps)?;
    let meta = w.finish(
        dir,
        name,
        total,
        runs,
        stored,
        Some(stored_file),
        columns,
        vectors,
        seeds,
    )?;
    Ok((meta, maps))
}

/// The live vectors of every source, at their merged documents, and per `hnsw` field the graph
/// to start from: the graph of the source holding the most of the field's vectors, if it has
/// no deletions (Lucene's choice since 9.6): its nodes keep their links and only the other
/// sources' vectors are inserted. Measured against a rebuild (9,000 + 3,000 clustered vectors
/// of 64 dims, m 16, ef_construction 100): 0.73 s instead of 2.17 s, recall@10 at ef 100 0.892
/// against 0.881 (`cargo test -p quarry --lib merge_seeding_vs_rebuild -- --ignored
/// --nocapture`, test profile, this 2-core machine).
fn merge_vectors(
    schema: &Schema,
    segments: &[Arc<SegmentReader>],
    maps: &[DocMap],
) -> Result<(VectorsWriter, Vec<Option<GraphSeed>>)> {
    let mut vectors = VectorsWriter::new(schema);
    let mut seeds = Vec::with_capacity(schema.fields().len());
    for (f, entry) in schema.fields().iter().enumerate() {
        let f = f as u32;
        let Some(options) = entry.vector_options() else {
            seeds.push(None);
            continue;
        };
        // The merged documents of every vector, ascending: a merged vector's ordinal is its
        // document's first place here plus its place among the document's passages (a document's
        // vectors come from one source, in order).
        let mut merged_docs = Vec::new();
        let mut largest: Option<(usize, usize)> = None;
        for (i, s) in segments.iter().enumerate() {
            let Some(v) = s.vectors(f)? else { continue };
            let mut all_live = true;
            for ord in 0..v.len() as u32 {
                let nd = maps[i].get(v.doc(ord));
                if nd == NONE {
                    all_live = false;
                    continue;
                }
                vectors.add_stored(
                    f,
                    nd,
                    crate::vector::VectorSource::vector(&v.vectors(), ord),
                    v.passage(ord),
                );
                merged_docs.push(nd);
            }
            let seedable = all_live && v.graph().is_some();
            if seedable && largest.is_none_or(|(_, n)| v.len() > n) {
                largest = Some((i, v.len()));
            }
        }
        let hnsw = matches!(options.index, crate::schema::VectorIndex::Hnsw { .. });
        // One source without deletions (the flush of an index-sorted index) is seeded too: its
        // whole graph is carried over under the permuted ordinals.
        let seed = match largest.filter(|_| hnsw) {
            Some((i, _)) => {
                merged_docs.sort_unstable();
                let v = segments[i].vectors(f)?.expect("listed above");
                let graph = v.graph().expect("seedable");
                let map = (0..v.len() as u32)
                    .map(|ord| {
                        let doc = v.doc(ord);
                        let nd = maps[i].get(doc);
                        let first = merged_docs.partition_point(|&x| x < nd);
                        let within = ord - v.ords(doc).start;
                        (merged_docs.get(first) == Some(&nd)).then_some(first as u32 + within)
                    })
                    .collect();
                Some(GraphSeed {
                    graph: crate::vector::hnsw::HnswGraph::from_view(&graph),
                    map,
                })
            }
            None => None,
        };
        seeds.push(seed);
    }
    Ok((vectors, seeds))
}

/// Orders the merged documents by `sort` (ties by sequence number): `maps` come in giving each
/// live document its place in concatenation order and leave giving its place in sort order.
/// A full sort of the keys rather than a k-way merge of the (sorted) inputs: the same order,
/// and it also sorts a freshly flushed segment.
fn sort_maps(
    maps: &mut [DocMap],
    segments: &[Arc<SegmentReader>],
    sort: &IndexSort,
    total: u32,
) -> Result<()> {
    let mut entries: Vec<(Vec<KeyPart>, u64, u32)> = Vec::with_capacity(total as usize);
    for (s, map) in segments.iter().zip(maps.iter()) {
        let keys = SegmentKeys::new(s, sort)?;
        for d in 0..s.doc_count() {
            let at = map.get(d);
            if at == NONE {
                continue;
            }
            let mut key = Vec::with_capacity(sort.fields.len());
            keys.key(d, &mut key);
            entries.push((key, s.seq(d), at));
        }
    }
    entries.sort_unstable_by(|a, b| compare_keys(sort, &a.0, &b.0).then(a.1.cmp(&b.1)));
    let order: Vec<u32> = entries.iter().map(|e| e.2).collect();
    reorder_maps(maps, segments, &order);
    Ok(())
}

/// Makes `maps` (each live document's place in concatenation order) give each document its
/// place in `order` (`order[new] = old place`).
fn reorder_maps(maps: &mut [DocMap], segments: &[Arc<SegmentReader>], order: &[u32]) {
    let mut place = vec![NONE; order.len()];
    for (new, &old) in order.iter().enumerate() {
        place[old as usize] = new as u32;
    }
    for (s, map) in segments.iter().zip(maps.iter_mut()) {
        let m = (0..s.doc_count())
            .map(|d| match map.get(d) {
                NONE => NONE,
                at => place[at as usize],
            })
            .collect();
        *map = DocMap::Map(m);
    }
}

/// Orders the merged documents by a BP pass over the terms of `bp`'s fields: `maps` come in
/// giving each live document its place in concatenation order, and leave giving its new one.
fn bp_maps(
    maps: &mut [DocMap],
    segments: &[Arc<SegmentReader>],
    schema: &Schema,
    bp: &BpOptions,
    total: u32,
) -> Result<()> {
    bp.check()?;
    let fields: Vec<u32> = match &bp.fields {
        Some(names) => names
            .iter()
            .map(|n| {
                schema
                    .field_id(n)
                    .filter(|&id| schema.field(id).has_positions())
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "BP field {n:?} is not a text field of the schema"
                        ))
                    })
            })
            .collect::<Result<_>>()?,
        None => (0..schema.fields().len() as u32)
            .filter(|&f| schema.field(f).has_positions())
            .collect(),
    };
    let max_df = (bp.max_doc_freq_ratio * f64::from(total)).floor() as u64;
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut docs: Vec<u32> = Vec::new();
    let mut terms = 0u32;
    for f in fields {
        let mut dicts = Vec::new();
        for (i, s) in segments.iter().enumerate() {
            if let Some(d) = s.terms(f)? {
                dicts.push((i, d));
            }
        }
        let mut op = fst::map::OpBuilder::new();
        for (_, d) in &dicts {
            op = op.add(d.map().stream());
        }
        let mut union = op.union().into_stream();
        while let Some((_, values)) = union.next() {
            docs.clear();
            for v in values {
                let si = dicts[v.index].0;
                let seg = &segments[si];
                let (info, bytes) = seg.term_info_at(f, v.value)?;
                let mut c = seg.postings(f, &info, &bytes, false)?;
                while c.doc() != TERMINATED {
                    let d = maps[si].get(c.doc());
                    if d != NONE {
                        docs.push(d);
                    }
                    c.next();
                }
                if let Some(why) = c.is_corrupt() {
                    return Err(Error::corrupt(format!("{}.post", seg.name()), why));
                }
            }
            let df = docs.len() as u64;
            if df >= u64::from(bp.min_doc_freq.max(2)) && df <= max_df {
                pairs.extend(docs.iter().map(|&d| (d, terms)));
                terms += 1;
            }
        }
    }
    let fwd = Forward::from_pairs(total as usize, terms as usize, &pairs);
    drop(pairs);
    let order = reorder::permutation(&fwd, bp);
    reorder_maps(maps, segments, &order);
    Ok(())
}

/// Puts one term's postings gathered through permuting doc maps back in document order:
/// `docs`, `freqs` and (when `positions`, `freq` of them per document) `positions` together.
fn reorder_postings(b: &mut Bufs, positions: bool) {
    if b.docs.windows(2).all(|w| w[0] < w[1]) {
        return;
    }
    let mut order: Vec<usize> = (0..b.docs.len()).collect();
    order.sort_unstable_by_key(|&i| b.docs[i]);
    let docs = order.iter().map(|&i| b.docs[i]).collect();
    let freqs: Vec<u32> = order.iter().map(|&i| b.freqs[i]).collect();
    if positions {
        let mut starts = Vec::with_capacity(b.freqs.len());
        let mut at = 0usize;
        for &f in &b.freqs {
            starts.push(at);
            at += f as usize;
        }
        let mut pos = Vec::with_capacity(b.positions.len());
        for &i in &order {
            pos.extend_from_slice(&b.positions[starts[i]..starts[i] + b.freqs[i] as usize]);
        }
        b.positions = pos;
    }
    b.docs = docs;
    b.freqs = freqs;
}

/// Adds the column values of `seg`'s live documents (`map` says where each goes) to `columns`.
fn merge_columns(
    columns: &mut ColumnsWriter,
    schema: &Schema,
    seg: &SegmentReader,
    map: &DocMap,
) -> Result<()> {
    for f in 0..schema.fields().len() as u32 {
        if !columns.has(f) {
            continue;
        }
        let Some(view) = seg.column_view(f)? else {
            continue;
        };
        let dict = view.dict().copied();
        for d in 0..seg.doc_count() {
            let nd = map.get(d);
            if nd == NONE {
                continue;
            }
            for r in view.rows(d) {
                let v = view.value(r);
                match &dict {
                    Some(t) => columns.add_term(f, nd, t.term(v)),
                    None => columns.add(f, nd, v),
                }
            }
        }
    }
    Ok(())
}

/// The segments being merged, where each one's documents go, and how many documents the
/// merged segment has.
#[derive(Clone, Copy)]
struct Sources<'a> {
    segments: &'a [Arc<SegmentReader>],
    maps: &'a [DocMap],
    total: u32,
    /// The maps reorder documents (an index sort): postings are put back in doc order.
    permuted: bool,
}

/// Scratch space of [`merge_terms`].
#[derive(Default)]
struct Bufs {
    docs: Vec<u32>,
    freqs: Vec<u32>,
    positions: Vec<u32>,
    pbuf: Vec<u32>,
}

/// Writes the union of the dictionaries `dicts` (`(segment, dictionary)`, in segment order;
/// a field's terms or its pairs) to `w`'s current dictionary, each term's postings
/// concatenated through the doc maps. With deletions, returns how many merged documents hold
/// a term (the field's recounted document count); None without.
fn merge_terms(
    w: &mut SegmentFileWriter,
    src: &Sources,
    f: u32,
    dicts: &[(usize, &TermsReader)],
    norms: Option<&[u8]>,
    b: &mut Bufs,
) -> Result<Option<u32>> {
    let Sources {
        segments,
        maps,
        total,
        permuted,
    } = *src;
    let has_positions = segments
        .first()
        .is_some_and(|s| s.schema().field(f).has_positions());
    let any_deletes = maps.iter().any(|m| matches!(m, DocMap::Map(_)));
    let mut op = fst::map::OpBuilder::new();
    for (_, d) in dicts {
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
        b.docs.clear();
        b.freqs.clear();
        b.positions.clear();
        let mut vals: Vec<_> = values.to_vec();
        vals.sort_by_key(|v| v.index);
        for v in vals {
            let si = dicts[v.index].0;
            let seg = &segments[si];
            let (info, bytes) = seg.term_info_at(f, v.value)?;
            let mut c = seg.postings(f, &info, &bytes, has_positions)?;
            let map = &maps[si];
            while c.doc() != TERMINATED {
                let d = map.get(c.doc());
                if d != NONE {
                    b.docs.push(d);
                    b.freqs.push(c.freq());
                    if has_positions {
                        c.positions(&mut b.pbuf);
                        b.positions.extend_from_slice(&b.pbuf);
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
        if b.docs.is_empty() {
            continue;
        }
        if permuted {
            reorder_postings(b, has_positions);
        }
        w.add_term(term, &b.docs, &b.freqs, &b.positions, norms)?;
    }
    Ok(any_deletes.then(|| with_field.iter().map(|w| w.count_ones()).sum()))
}

/// One pair term's postings: documents, freqs and positions, as a dictionary would give them.
#[derive(Default)]
pub(crate) struct PairPostings {
    pub docs: Vec<u32>,
    pub freqs: Vec<u32>,
    pub positions: Vec<u32>,
}

/// The pairs of frequent words ([`crate::pairs`]) of `field` in `seg`, derived from the
/// positions of the words: one pass over the frequent words' postings, in document order.
/// For segments written without pairs; the builder indexes the same pairs as it tokenizes
/// (a test compares the two).
pub(crate) fn derive_pairs(
    seg: &SegmentReader,
    f: u32,
) -> Result<std::collections::BTreeMap<String, PairPostings>> {
    let words = crate::pairs::WORDS;
    let mut cursors = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if let Some((info, bytes)) = seg.term_info(f, w.as_bytes())? {
            cursors.push((i, seg.postings(f, &info, &bytes, true)?));
        }
    }
    let mut by_pair: Vec<PairPostings> = (0..words.len() * words.len())
        .map(|_| PairPostings::default())
        .collect();
    let (mut at, mut pbuf) = (Vec::<(u32, usize)>::new(), Vec::new());
    loop {
        let doc = cursors
            .iter()
            .map(|(_, c)| c.doc())
            .min()
            .unwrap_or(TERMINATED);
        if doc == TERMINATED {
            break;
        }
        at.clear();
        for (i, c) in cursors.iter_mut() {
            if c.doc() == doc {
                c.positions(&mut pbuf);
                at.extend(pbuf.iter().map(|&p| (p, *i)));
                c.next();
            }
        }
        at.sort_unstable();
        for k in 1..at.len() {
            let ((p0, a), (p1, b)) = (at[k - 1], at[k]);
            if p1 == p0 + 1 {
                let pp = &mut by_pair[a * words.len() + b];
                if pp.docs.last() != Some(&doc) {
                    pp.docs.push(doc);
                    pp.freqs.push(0);
                }
                *pp.freqs.last_mut().expect("pushed") += 1;
                pp.positions.push(p0);
            }
        }
    }
    for (_, c) in &cursors {
        if let Some(why) = c.is_corrupt() {
            return Err(Error::corrupt(format!("{}.post", seg.name()), why));
        }
    }
    let mut out = std::collections::BTreeMap::new();
    for (k, pp) in by_pair.into_iter().enumerate() {
        if !pp.docs.is_empty() {
            let (a, b) = (words[k / words.len()], words[k % words.len()]);
            out.insert(crate::pairs::pair_term(a, b), pp);
        }
    }
    Ok(out)
}

/// Writes the pair dictionary of field `f` of the merged segment: every source's pairs (read
/// from its pair dictionary, or derived from its words), through the doc maps. Returns the
/// number of merged documents holding a pair.
fn merge_pairs(
    w: &mut SegmentFileWriter,
    src: &Sources,
    f: u32,
    norms: Option<&[u8]>,
    b: &mut Bufs,
) -> Result<u32> {
    let Sources {
        segments,
        maps,
        total,
        permuted,
    } = *src;
    // Per source: None (read its dictionary) or its derived pairs.
    let mut derived = Vec::with_capacity(segments.len());
    let mut terms = std::collections::BTreeSet::new();
    for s in segments {
        if s.has_pairs(f) {
            if let Some(d) = s.pair_terms(f)? {
                let mut stream = d.map().stream();
                while let Some((t, _)) = stream.next() {
                    terms.insert(t.to_vec());
                }
            }
            derived.push(None);
        } else {
            let d = derive_pairs(s, f)?;
            terms.extend(d.keys().map(|k| k.as_bytes().to_vec()));
            derived.push(Some(d));
        }
    }
    let mut with_pairs = vec![0u64; (total as usize).div_ceil(64)];
    for term in &terms {
        b.docs.clear();
        b.freqs.clear();
        b.positions.clear();
        for (si, seg) in segments.iter().enumerate() {
            let map = &maps[si];
            let mut keep = |d: u32, freq: u32, pos: &[u32], b: &mut Bufs| {
                let d = map.get(d);
                if d != NONE {
                    b.docs.push(d);
                    b.freqs.push(freq);
                    b.positions.extend_from_slice(pos);
                    with_pairs[(d / 64) as usize] |= 1 << (d % 64);
                }
            };
            match &derived[si] {
                Some(d) => {
                    let Some(pp) = std::str::from_utf8(term).ok().and_then(|t| d.get(t)) else {
                        continue;
                    };
                    let mut at = 0usize;
                    for (&doc, &freq) in pp.docs.iter().zip(&pp.freqs) {
                        let end = at + freq as usize;
                        keep(doc, freq, &pp.positions[at..end], b);
                        at = end;
                    }
                }
                None => {
                    let Some((info, bytes)) = seg.pair_info(f, term)? else {
                        continue;
                    };
                    let mut c = seg.postings(f, &info, &bytes, true)?;
                    let mut pbuf = std::mem::take(&mut b.pbuf);
                    while c.doc() != TERMINATED {
                        c.positions(&mut pbuf);
                        keep(c.doc(), c.freq(), &pbuf, b);
                        c.next();
                    }
                    b.pbuf = pbuf;
                    if let Some(why) = c.is_corrupt() {
                        return Err(Error::corrupt(format!("{}.post", seg.name()), why));
                    }
                }
            }
        }
        if !b.docs.is_empty() {
            if permuted {
                reorder_postings(b, true);
            }
            w.add_term(term, &b.docs, &b.freqs, &b.positions, norms)?;
        }
    }
    Ok(with_pairs.iter().map(|w| w.count_ones()).sum())
}
