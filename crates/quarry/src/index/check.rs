//! Verifying an index: every checksum and every structural invariant (`quarry check`), and the
//! cheap summary `quarry inspect` prints.
use std::collections::BTreeMap;
use std::path::Path;

use fst::Streamer;
use quarry_store::DirectoryKind;
use serde::Serialize;

use super::{latest_commit, Index, SegmentReader};
use crate::codec::format;
use crate::codec::meta::{CommitPoint, SegmentMeta};
use crate::codec::postings::TERMINATED;
use crate::codec::stored::decode_doc;
use crate::error::InFile;
use crate::{Error, Result};

/// Per-segment summary.
#[derive(Clone, Debug, Serialize)]
pub struct SegmentSummary {
    pub name: String,
    pub docs: u32,
    /// Deleted documents (still stored until a merge drops them).
    pub deleted: u32,
    /// Unique terms per indexed field.
    pub terms: BTreeMap<String, u64>,
    /// Bytes per file kind (extension).
    pub bytes: BTreeMap<String, u64>,
    /// Per field with a column (format v8): its kind, encoding, value count and bytes, such as
    /// `i64 bitpacked, 300 values, 2656 B`.
    pub columns: BTreeMap<String, String>,
    /// Per vector field with vectors here (format v9): dims, similarity, count, quantization,
    /// graph and bytes, such as `384 dims cosine, 1000 vectors, int8, hnsw m 16 (3 levels), 1.9 MB`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub vectors: BTreeMap<String, String>,
    /// The index sort the segment's documents are in (`field:asc`/`field:desc` per key), if
    /// any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_sort: Option<String>,
}

/// What `inspect` and `check` report.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub generation: u64,
    /// Documents in the segments, deleted ones included.
    pub docs: u64,
    /// Documents not deleted.
    pub live_docs: u64,
    pub segments: Vec<SegmentSummary>,
    /// The index sort fixed when the index was created, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_sort: Option<String>,
    /// Bytes per file kind over all segments, plus the commit point.
    pub bytes: BTreeMap<String, u64>,
    /// Files whose checksums were verified (check only).
    pub files_verified: usize,
}

/// Summarizes an open index from its metadata (reads nothing else).
pub fn inspect(index: &Index) -> CheckReport {
    let mut bytes = BTreeMap::new();
    let mut segments = Vec::new();
    for (seg, live) in index.segments().iter().zip(index.live_docs().iter()) {
        let mut s = summary(seg, &mut bytes);
        s.deleted = live.as_ref().map_or(0, |l| l.deleted_count());
        segments.push(s);
    }
    let commit_len = index
        .directory()
        .open(&CommitPoint::file_name(index.commit().generation))
        .map(|h| h.len())
        .unwrap_or(0);
    *bytes.entry("commit".to_string()).or_insert(0) += commit_len;
    CheckReport {
        generation: index.commit().generation,
        docs: index.doc_count(),
        live_docs: index.live_doc_count(),
        segments,
        index_sort: index.index_sort().map(|s| s.to_string()),
        bytes,
        files_verified: 0,
    }
}

fn summary(seg: &SegmentReader, total: &mut BTreeMap<String, u64>) -> SegmentSummary {
    let meta = seg.meta();
    let mut terms = BTreeMap::new();
    for (f, fm) in meta.fields.iter().enumerate() {
        terms.insert(seg.schema().field(f as u32).name.clone(), fm.unique_terms);
    }
    let mut bytes = BTreeMap::new();
    for (ext, fm) in &meta.files {
        bytes.insert(ext.clone(), fm.len);
    }
    let meta_len = meta.encode().len() as u64;
    bytes.insert("meta".to_string(), meta_len);
    for (k, v) in &bytes {
        *total.entry(k.clone()).or_insert(0) += v;
    }
    let mut columns = BTreeMap::new();
    for (f, cm) in meta.columns.iter().enumerate() {
        let Some(cm) = cm else { continue };
        let name = seg.schema().field(f as u32).name.clone();
        let desc = match seg.column_view(f as u32) {
            Ok(Some(v)) => {
                let kind = serde_json::to_value(cm.kind)
                    .ok()
                    .and_then(|k| k.as_str().map(str::to_string))
                    .unwrap_or_default();
                let size = cm.values_at.1
                    + cm.starts_at.map_or(0, |s| s.1)
                    + cm.points
                        .as_ref()
                        .map_or(0, |p| p.values_at.1 + p.docs_at.1)
                    + cm.dict
                        .as_ref()
                        .map_or(0, |d| d.offsets_at.1 + d.bytes_at.1);
                let mut d = format!(
                    "{kind} {}, {} values",
                    v.values().encoding().name(),
                    cm.values
                );
                if !v.is_dense() {
                    d.push_str(&format!(" in {} docs", cm.docs));
                }
                if let Some(dm) = &cm.dict {
                    d.push_str(&format!(", {} terms", dm.terms));
                }
                d.push_str(&format!(", {size} B"));
                if let Some(p) = &cm.points {
                    d.push_str(&format!(" (points {} B)", p.values_at.1 + p.docs_at.1));
                }
                d
            }
            Ok(None) => continue,
            Err(e) => format!("unreadable: {e}"),
        };
        columns.insert(name, desc);
    }
    SegmentSummary {
        name: meta.name.clone(),
        docs: meta.doc_count,
        deleted: 0,
        terms,
        bytes,
        columns,
        vectors: vector_summaries(seg),
        index_sort: meta.index_sort.as_ref().map(|s| s.to_string()),
    }
}

/// What `inspect` says of each vector field of a segment (from the meta only).
fn vector_summaries(seg: &SegmentReader) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (f, vm) in seg.meta().vectors.iter().enumerate() {
        let Some(vm) = vm else { continue };
        let mut d = format!("{} dims {}, {} vectors", vm.dims, vm.similarity, vm.count);
        let mut size = vm.values_at.1 + vm.docs_at.map_or(0, |s| s.1);
        if let Some(q) = &vm.quantized {
            d.push_str(", int8");
            size += q.bytes_at.1 + q.corrections_at.1;
        }
        match &vm.graph {
            Some(g) => {
                d.push_str(&format!(", hnsw m {} ({} levels)", g.m, g.levels.len()));
                size += g
                    .levels
                    .iter()
                    .map(|l| l.nodes_at.map_or(0, |s| s.1) + l.offsets_at.1 + l.neighbors_at.1)
                    .sum::<u64>();
            }
            None => d.push_str(", flat"),
        }
        d.push_str(&format!(", {size} B"));
        out.insert(seg.schema().field(f as u32).name.clone(), d);
    }
    out
}

/// Every vector field of a segment against the vectors `stored` in its stored fields (by
/// document, scaled to unit length for `cosine`): the same documents, the same values; and the
/// field's pieces and graph pass [`crate::codec::vectors::VectorField::open`]'s checks.
fn check_vectors(
    seg: &SegmentReader,
    stored: &[Vec<(u32, Vec<f32>)>],
    text_lens: &[Vec<Option<u32>>],
) -> Result<()> {
    let name = SegmentMeta::file_name(&seg.meta().name, "vec");
    for (f, entry) in seg.schema().fields().iter().enumerate() {
        let Some(options) = entry.vector_options() else {
            continue;
        };
        let field = seg.vectors(f as u32)?;
        if let Some(v) = field {
            check_passages(&name, &entry.name, v, &text_lens[f])?;
        }
        if !entry.stored {
            continue;
        }
        let want = &stored[f];
        // Passages (v10) are not stored fields: only a document's own vectors are compared.
        let own: Vec<u32> = field.map_or_else(Vec::new, |v| {
            (0..v.len() as u32)
                .filter(|&o| v.passage(o).is_none())
                .collect()
        });
        let got = own.len();
        if got != want.len() {
            return Err(Error::corrupt(
                &name,
                format!(
                    "field {:?}: {got} vectors, the stored fields hold {}",
                    entry.name,
                    want.len()
                ),
            ));
        }
        let Some(v) = field else { continue };
        let vectors = v.vectors();
        for (&ord, (doc, values)) in own.iter().zip(want) {
            let mut values = values.clone();
            if options.similarity.normalizes() {
                crate::vector::normalize(&mut values);
            }
            let same = v.doc(ord) == *doc
                && crate::vector::VectorSource::vector(&vectors, ord) == &values[..];
            if !same {
                return Err(Error::corrupt(
                    &name,
                    format!(
                        "field {:?}: the vector of document {doc} differs from its stored value",
                        entry.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The passages of each document (format v10) against its stored source text, when the source
/// field is stored (`lens`: its length in bytes per document, the values joined by newlines):
/// they cover the text, the first from byte 0, the last to its end, each ending within it.
fn check_passages(
    file: &str,
    field: &str,
    v: &crate::codec::vectors::VectorField,
    lens: &[Option<u32>],
) -> Result<()> {
    let n = v.len() as u32;
    for ord in 0..n {
        let Some(p) = v.passage(ord) else { continue };
        let doc = v.doc(ord);
        let Some(Some(len)) = lens.get(doc as usize).copied() else {
            continue;
        };
        let last = ord + 1 == n || v.doc(ord + 1) != doc;
        let bad = p.end > len || (p.index == 0 && p.start != 0) || (last && p.end != len);
        if bad {
            return Err(Error::corrupt(
                file,
                format!(
                    "field {field:?}: passage {} of document {doc} spans bytes {}..{}, but its source text has {len} bytes",
                    p.index, p.start, p.end
                ),
            ));
        }
    }
    Ok(())
}

/// Verifies the latest commit of the index at `path`: the commit point, every file's checksum,
/// and the structure of every term's postings and positions, the norms and stored fields. The
/// first problem found is returned as an error that names the file.
pub fn check_index(path: &Path, kind: DirectoryKind) -> Result<CheckReport> {
    let dir = quarry_store::open_directory(path, kind)?;
    let commit = latest_commit(&*dir)?.ok_or_else(|| Error::NoIndex {
        path: path.display().to_string(),
    })?;
    let mut verified = 1usize;
    // Whole-file checksums first, so a flipped byte is reported as such.
    for s in &commit.segments {
        for (ext, _) in format::SEGMENT_FILES {
            let name = SegmentMeta::file_name(&s.name, ext);
            if (ext == "cols" || ext == "vec") && !dir.exists(&name) {
                // Segments before format v8 have no `.cols`, and only segments of a schema with
                // a vector field have a `.vec`; the segment meta says whether it must.
                continue;
            }
            let bytes = dir.open(&name)?.read_all()?;
            format::check_crc(&name, &bytes)?;
            verified += 1;
        }
    }
    let index = Index::open_dir(dir)?;
    for seg in index.segments() {
        // Format v3: every chunk checksum too (a table that disagrees with its chunks).
        seg.verify_all()?;
        check_segment(seg)?;
    }
    let mut report = inspect(&index);
    report.files_verified = verified;
    Ok(report)
}

fn check_segment(seg: &SegmentReader) -> Result<()> {
    let meta = seg.meta();
    let meta_name = SegmentMeta::file_name(&meta.name, "meta");
    for (f, fm) in meta.fields.iter().enumerate() {
        let f = f as u32;
        let entry = seg.schema().field(f);
        let norms = seg.norms(f)?;
        if entry.has_norms() != norms.is_some() {
            return Err(Error::corrupt(
                &meta_name,
                format!(
                    "field {:?}: norms presence does not match its type",
                    entry.name
                ),
            ));
        }
        seg.check_norm_groups(f)?;
        check_dict(seg, f, seg.terms(f)?, fm, "", norms.map(|b| &b[..]))?;
        if let Some(pairs) = &meta.pairs {
            let pm = pairs.fields.get(f as usize).and_then(|p| p.as_ref());
            if let Some(pm) = pm {
                if !entry.has_positions() {
                    return Err(Error::corrupt(
                        &meta_name,
                        format!("field {:?} has pairs but no positions", entry.name),
                    ));
                }
                let dict = seg.pair_terms(f)?;
                if let Some(d) = dict {
                    let mut stream = d.map().stream();
                    while let Some((term, _)) = stream.next() {
                        let word = |w: &[u8]| pairs.words.iter().any(|x| x.as_bytes() == w);
                        let mut parts = term.split(|&b| b == crate::pairs::SEPARATOR);
                        let ok = matches!(
                            (parts.next(), parts.next(), parts.next()),
                            (Some(a), Some(b), None) if word(a) && word(b)
                        );
                        if !ok {
                            return Err(Error::corrupt(
                                SegmentMeta::file_name(&meta.name, "terms"),
                                format!(
                                    "field {:?}: pair term {:?} is not two of the segment's frequent words",
                                    entry.name,
                                    String::from_utf8_lossy(term)
                                ),
                            ));
                        }
                    }
                }
                check_dict(seg, f, dict, pm, "pairs of ", norms.map(|b| &b[..]))?;
            }
        }
    }
    let store_name = SegmentMeta::file_name(&meta.name, "store");
    // The columns are rebuilt from the stored values: their bytes must be what the file holds.
    let schema = seg.schema();
    let mut rebuilt = crate::indexer::builder::new_columns(schema);
    let has_vectors = !meta.vectors.is_empty();
    let mut stored_vectors: Vec<Vec<(u32, Vec<f32>)>> = vec![Vec::new(); schema.fields().len()];
    // Per embedded vector field whose source is stored: the source text's length per document.
    let sources: Vec<(usize, u32)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let from = schema.field_id(&e.embed.as_ref()?.from)?;
            schema.field(from).stored.then_some((i, from))
        })
        .collect();
    let mut text_lens: Vec<Vec<Option<u32>>> = vec![Vec::new(); schema.fields().len()];
    let mut d = 0u32;
    seg.for_each_stored_doc(|bytes| {
        let map = decode_doc(schema, bytes).in_file(&store_name)?;
        if seg.has_columns() || has_vectors {
            let doc = crate::document::Document::from_map(schema, &map)
                .map_err(|e| Error::corrupt(&store_name, format!("document {d}: {e}")))?;
            for &(vf, from) in &sources {
                let parts: Vec<usize> = doc
                    .values()
                    .iter()
                    .filter(|(f, _)| *f == from)
                    .filter_map(|(_, v)| match v {
                        crate::document::FieldValue::Str(s) => Some(s.len()),
                        _ => None,
                    })
                    .collect();
                let len = (!parts.is_empty())
                    .then(|| (parts.iter().sum::<usize>() + parts.len() - 1) as u32);
                text_lens[vf].push(len);
            }
            for (f, v) in doc.values() {
                if let crate::document::FieldValue::Vector(v) = v {
                    stored_vectors[*f as usize].push((d, v.clone()));
                } else if schema.field(*f).stored {
                    crate::indexer::builder::add_column_value(&mut rebuilt, schema, d, *f, v);
                }
            }
        }
        d += 1;
        Ok(())
    })?;
    if seg.has_columns() {
        check_columns(seg, rebuilt)?;
    }
    if has_vectors {
        check_vectors(seg, &stored_vectors, &text_lens)?;
    }
    super::sorted::check_order(seg)
}

/// Whether two encoded columns hold the same rows and block statistics. Rows, not bytes: a
/// later writer may pick another encoding for the same values (`linear` came after `blocks`),
/// and what an older writer chose is still right. Undecodable bytes are not the same.
fn same_rows(a: &[u8], b: &[u8]) -> bool {
    use quarry_codecs::column::Column;
    let (Ok(a), Ok(b)) = (Column::open(a), Column::open(b)) else {
        return false;
    };
    if a.len() != b.len() || a.num_blocks() != b.num_blocks() {
        return false;
    }
    let (mut x, mut y) = (
        vec![0u64; quarry_codecs::column::BLOCK],
        vec![0u64; quarry_codecs::column::BLOCK],
    );
    (0..a.num_blocks()).all(|blk| {
        let start = blk * quarry_codecs::column::BLOCK;
        let n = x.len().min(a.len() - start);
        a.get_range(start, &mut x[..n]);
        b.get_range(start, &mut y[..n]);
        a.block_bounds(blk) == b.block_bounds(blk) && x[..n] == y[..n]
    })
}

/// Every column of a v8 segment against the columns `rebuilt` from its stored values: the
/// same kinds and counts, the same rows and block statistics, the same term bytes.
fn check_columns(seg: &SegmentReader, rebuilt: crate::codec::columns::ColumnsWriter) -> Result<()> {
    let meta = seg.meta();
    let cols_name = SegmentMeta::file_name(&meta.name, "cols");
    let mut out = vec![0u8; quarry_codecs::HEADER_LEN];
    let want = rebuilt.write(meta.doc_count, &mut out);
    let piece = |(at, len): (u64, u64)| &out[at as usize..(at + len) as usize];
    for (f, w) in want.iter().enumerate() {
        let entry = seg.schema().field(f as u32);
        let got = seg.column(f as u32)?;
        let (w, got) = match (w, got) {
            (None, None) => continue,
            // Values not stored cannot be compared (only a schema built in code has such).
            (Some(_), Some(_)) if !entry.stored => continue,
            (Some(w), Some(g)) => (w, g),
            (w, g) => {
                return Err(Error::corrupt(
                    &cols_name,
                    format!(
                        "field {:?}: the segment {} a column, its type says it {}",
                        entry.name,
                        if g.is_some() { "has" } else { "has no" },
                        if w.is_some() {
                            "keeps one"
                        } else {
                            "keeps none"
                        }
                    ),
                ))
            }
        };
        let same = got.meta.kind == w.kind
            && got.meta.docs == w.docs
            && got.meta.values == w.values
            && same_rows(&got.values[..], piece(w.values_at))
            && match (got.starts.as_deref(), w.starts_at.map(piece)) {
                (None, None) => true,
                (Some(g), Some(w)) => same_rows(g, w),
                _ => false,
            }
            && match (got.dict.as_ref(), w.dict.as_ref()) {
                (None, None) => true,
                (Some((o, b)), Some(d)) => {
                    same_rows(&o[..], piece(d.offsets_at)) && &b[..] == piece(d.bytes_at)
                }
                _ => false,
            }
            // Points are optional (the first v8 writer had none); present, they must be right.
            && match (got.points.as_ref(), w.points.as_ref()) {
                (None, _) => true,
                (Some((v, d)), Some(p)) => {
                    same_rows(&v[..], piece(p.values_at)) && same_rows(&d[..], piece(p.docs_at))
                }
                (Some(_), None) => false,
            };
        if !same {
            return Err(Error::corrupt(
                &cols_name,
                format!(
                    "field {:?}: the column differs from the documents' stored values",
                    entry.name
                ),
            ));
        }
    }
    Ok(())
}

/// Walks one dictionary of field `f` (its terms, or its pairs: `what` is then `"pairs of "`):
/// every term's postings in order and in range, positions consistent with freqs, impacts
/// bounded by the skip entries, and the statistics of `fm` equal to what the postings hold.
fn check_dict(
    seg: &SegmentReader,
    f: u32,
    dict: Option<&crate::codec::terms::TermsReader>,
    fm: &crate::codec::meta::FieldMeta,
    what: &str,
    norms: Option<&[u8]>,
) -> Result<()> {
    let meta = seg.meta();
    let post_name = SegmentMeta::file_name(&meta.name, "post");
    let meta_name = SegmentMeta::file_name(&meta.name, "meta");
    let n = meta.doc_count;
    let entry = seg.schema().field(f);
    let mut positions = Vec::new();
    let (mut unique, mut sum_df, mut sum_ttf) = (0u64, 0u64, 0u64);
    let mut docs_with_field = vec![false; n as usize];
    if let Some(dict) = dict {
        let mut stream = dict.map().stream();
        while let Some((term, offset)) = stream.next() {
            let term_s = String::from_utf8_lossy(term).into_owned();
            let (info, bytes) = seg.term_info_at(f, offset)?;
            let mut c = seg.postings(f, &info, &bytes, entry.has_positions())?;
            let mut df = 0u32;
            let mut prev: Option<u32> = None;
            let mut best = crate::codec::postings::Impact::default();
            while c.doc() != TERMINATED {
                let d = c.doc();
                if prev.is_some_and(|p| p >= d) || d >= n {
                    return Err(Error::corrupt(
                        &post_name,
                        format!("term {term_s:?}: doc {d} out of order or range"),
                    ));
                }
                prev = Some(d);
                let freq = c.freq();
                if freq == 0 {
                    return Err(Error::corrupt(
                        &post_name,
                        format!("term {term_s:?}: doc {d} has freq 0"),
                    ));
                }
                if entry.has_positions() {
                    c.positions(&mut positions);
                    if positions.len() != freq as usize
                        || positions.windows(2).any(|w| w[0] >= w[1])
                    {
                        return Err(Error::corrupt(
                            SegmentMeta::file_name(&meta.name, "pos"),
                            format!("term {term_s:?}: doc {d} positions inconsistent with its freq {freq}"),
                        ));
                    }
                    let len = norms
                        .and_then(|nm| nm.get(d as usize))
                        .map(|&b| crate::codec::norms::norm_to_length(b))
                        .unwrap_or(0);
                    if len == 0 {
                        return Err(Error::corrupt(
                            SegmentMeta::file_name(&meta.name, "norms"),
                            format!("doc {d} has terms but norm 0"),
                        ));
                    }
                }
                let norm = norms
                    .and_then(|nm| nm.get(d as usize).copied())
                    .unwrap_or(1);
                best.merge(freq, norm);
                match c.shallow_block(d) {
                    Some((last, imp)) if last >= d && imp.covers(freq, norm) => {}
                    _ => {
                        return Err(Error::corrupt(
                            &post_name,
                            format!(
                            "term {term_s:?}: the skip entry of doc {d} does not bound its impact"
                        ),
                        ))
                    }
                }
                docs_with_field[d as usize] = true;
                df += 1;
                sum_ttf += u64::from(freq);
                c.next();
            }
            if let Some(why) = c.is_corrupt() {
                return Err(Error::corrupt(
                    &post_name,
                    format!("term {term_s:?}: {why}"),
                ));
            }
            if best != info.impact {
                return Err(Error::corrupt(
                    &post_name,
                    format!(
                        "term {term_s:?}: term impact {:?} differs from the postings' {best:?}",
                        info.impact
                    ),
                ));
            }
            if df != info.doc_freq {
                return Err(Error::corrupt(
                    &post_name,
                    format!("term {term_s:?}: {df} docs, header says {}", info.doc_freq),
                ));
            }
            unique += 1;
            sum_df += u64::from(df);
        }
    }
    let with_field = docs_with_field.iter().filter(|&&b| b).count() as u32;
    if (unique, sum_df, sum_ttf, with_field)
        != (
            fm.unique_terms,
            fm.sum_doc_freq,
            fm.sum_total_term_freq,
            fm.doc_count,
        )
    {
        return Err(Error::corrupt(
            &meta_name,
            format!(
                "{what}field {:?}: statistics (terms {unique}, sumDocFreq {sum_df}, sumTotalTermFreq {sum_ttf}, docCount {with_field}) differ from the postings",
                entry.name
            ),
        ));
    }
    Ok(())
}
