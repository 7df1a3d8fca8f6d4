//! `.cols` (format v8): each columnar field's values by document — Lucene's doc values,
//! Tantivy's fast fields — read in place for ranges, sorting and aggregations. Spec:
//! `docs/format/columns.md`.
//!
//! A field's values are one [`quarry_codecs::column`] of `u64`s in document order (integers and
//! dates as [`i64_to_sortable`], floats as [`f64_to_sortable`], booleans as 0 and 1, keywords
//! as ordinals into the field's sorted terms), each document's values sorted (keywords also
//! without repeats, as Lucene's `SortedSetDocValues`). When some document has no value or more
//! than one, a second column holds each document's first value index (`doc_count + 1` rows,
//! the last being the number of values); a field where every document has exactly one value
//! has none, and row `d` is document `d`'s value. Keywords add their terms: a column of
//! `terms + 1` byte offsets and the concatenated bytes.
//!
//! Integer, float and date fields add their points: every value with its document, sorted by
//! value then document, as two columns (the values, monotonic, take a few bits each in the
//! `linear` encoding; the documents). A range finds its rows there with two binary searches —
//! Lucene's points answer the same question with a BKD tree, and in one dimension a BKD tree's
//! leaves are exactly this sorted run — so its cost follows the matches, not the segment, and
//! a count of a single-valued field without deletions reads nothing but the two searches.
//!
//! Where each piece lies is in the segment meta ([`ColumnMeta`]), checked when a field's
//! column is first used; the bytes are covered by the file's chunk checksums and verified when
//! read.
use std::collections::HashMap;
use std::ops::Range;

use quarry_codecs::column::{self, f64_to_sortable, i64_to_sortable, Column};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What a column's `u64`s stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    /// Integers and dates (epoch milliseconds), as [`i64_to_sortable`].
    I64,
    /// Floats, as [`f64_to_sortable`].
    F64,
    /// Booleans: 0 (false) and 1 (true).
    Bool,
    /// Keywords: ordinals into the field's sorted terms.
    Ord,
}

/// A byte range of the `.cols` file: absolute offset and length.
pub type Span = (u64, u64);

/// One field's column in a segment (part of the segment meta, format v8).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnMeta {
    pub kind: ColumnKind,
    /// Documents with at least one value.
    pub docs: u32,
    /// Values over all documents (rows of the value column).
    pub values: u64,
    /// The value column.
    pub values_at: Span,
    /// Each document's first value index (`doc_count + 1` rows); absent when every document
    /// has exactly one value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<Span>,
    /// Keywords: the sorted distinct terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dict: Option<DictMeta>,
    /// Integers, floats and dates: the values sorted, with their documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<PointsMeta>,
}

/// A numeric column's points: `values` rows of (value, document) sorted by value then
/// document, as a column of the values and a column of the documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointsMeta {
    pub values_at: Span,
    pub docs_at: Span,
}

/// A keyword column's terms: `offsets` has `terms + 1` rows, term `i` is
/// `bytes[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DictMeta {
    pub terms: u64,
    pub offsets_at: Span,
    pub bytes_at: Span,
}

/// One field's values while a segment is built, in document order.
#[derive(Default)]
struct FieldValues {
    docs: Vec<u32>,
    values: Vec<u64>,
    /// Keywords: the provisional id of each term (in first-seen order) and the terms.
    ids: HashMap<Box<[u8]>, u32>,
    terms: Vec<Box<[u8]>>,
}

/// Collects the column values of a segment being built (a flush or a merge) and encodes them.
pub struct ColumnsWriter {
    kinds: Vec<Option<ColumnKind>>,
    fields: Vec<FieldValues>,
}

impl ColumnsWriter {
    /// A writer for fields of the given kinds (None: the field keeps no column).
    pub fn new(kinds: Vec<Option<ColumnKind>>) -> Self {
        let fields = kinds.iter().map(|_| FieldValues::default()).collect();
        Self { kinds, fields }
    }

    /// Whether `field` keeps a column.
    pub fn has(&self, field: u32) -> bool {
        self.kinds.get(field as usize).is_some_and(|k| k.is_some())
    }

    /// Adds a value (already mapped to its sortable `u64`) of `doc`; documents in any order
    /// (increasing is cheapest: [`write`](Self::write) then need not reorder them).
    #[inline]
    pub fn add(&mut self, field: u32, doc: u32, value: u64) {
        let f = &mut self.fields[field as usize];
        f.docs.push(doc);
        f.values.push(value);
    }

    /// Adds a keyword value of `doc`.
    pub fn add_term(&mut self, field: u32, doc: u32, term: &[u8]) {
        let f = &mut self.fields[field as usize];
        let id = match f.ids.get(term) {
            Some(&id) => id,
            None => {
                let id = f.terms.len() as u32;
                f.terms.push(term.into());
                f.ids.insert(term.into(), id);
                id
            }
        };
        f.docs.push(doc);
        f.values.push(u64::from(id));
    }

    /// Approximate bytes held, for the RAM budget.
    pub fn mem_bytes(&self) -> usize {
        self.fields
            .iter()
            .map(|f| {
                f.docs.capacity() * 4
                    + f.values.capacity() * 8
                    + f.terms.iter().map(|t| 2 * t.len() + 48).sum::<usize>()
            })
            .sum()
    }

    /// Encodes every field's column into `out` (the `.cols` file after its header, 8-byte
    /// aligned pieces at absolute offsets) for a segment of `doc_count` documents.
    pub fn write(self, doc_count: u32, out: &mut Vec<u8>) -> Vec<Option<ColumnMeta>> {
        self.kinds
            .into_iter()
            .zip(self.fields)
            .map(|(kind, f)| kind.map(|kind| write_field(kind, f, doc_count, out)))
            .collect()
    }
}

/// Appends `bytes` to `out` at the next multiple of 8 and returns where they lie.
pub(crate) fn append(out: &mut Vec<u8>, bytes: &[u8]) -> Span {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let at = out.len() as u64;
    out.extend_from_slice(bytes);
    (at, bytes.len() as u64)
}

fn write_field(
    kind: ColumnKind,
    mut f: FieldValues,
    doc_count: u32,
    out: &mut Vec<u8>,
) -> ColumnMeta {
    // Values may come in any document order (an index-sorted merge adds them through a
    // permutation): put them in document order first; a document's own values are sorted
    // below, so the bytes do not depend on the order they came in.
    if f.docs.windows(2).any(|w| w[0] > w[1]) {
        let mut order: Vec<usize> = (0..f.docs.len()).collect();
        order.sort_by_key(|&i| f.docs[i]);
        f.docs = order.iter().map(|&i| f.docs[i]).collect();
        f.values = order.iter().map(|&i| f.values[i]).collect();
    }
    let dict = (kind == ColumnKind::Ord).then(|| {
        // Provisional ids to ordinals of the sorted terms.
        let mut order: Vec<u32> = (0..f.terms.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| f.terms[a as usize].cmp(&f.terms[b as usize]));
        let mut ord_of = vec![0u64; order.len()];
        for (ord, &id) in order.iter().enumerate() {
            ord_of[id as usize] = ord as u64;
        }
        for v in &mut f.values {
            *v = ord_of[*v as usize];
        }
        let mut offsets = Vec::with_capacity(order.len() + 1);
        let mut bytes = Vec::new();
        offsets.push(0u64);
        for &id in &order {
            bytes.extend_from_slice(&f.terms[id as usize]);
            offsets.push(bytes.len() as u64);
        }
        let offsets_at = append(out, &column::encode(&offsets));
        let bytes_at = append(out, &bytes);
        DictMeta {
            terms: order.len() as u64,
            offsets_at,
            bytes_at,
        }
    });
    // Each document's values sorted (keywords: without repeats); the starts when some
    // document has none or several.
    let mut values = Vec::with_capacity(f.values.len());
    let mut starts = Vec::with_capacity(doc_count as usize + 1);
    let mut i = 0;
    let mut docs = 0u32;
    for d in 0..doc_count {
        starts.push(values.len() as u64);
        let from = values.len();
        while i < f.docs.len() && f.docs[i] == d {
            values.push(f.values[i]);
            i += 1;
        }
        let run = &mut values[from..];
        if run.len() > 1 {
            run.sort_unstable();
            if kind == ColumnKind::Ord {
                let mut w = from + 1;
                for r in from + 1..values.len() {
                    if values[r] != values[w - 1] {
                        values[w] = values[r];
                        w += 1;
                    }
                }
                values.truncate(w);
            }
        }
        docs += u32::from(values.len() > from);
    }
    starts.push(values.len() as u64);
    let single = starts.windows(2).all(|w| w[1] == w[0] + 1);
    let values_at = append(out, &column::encode(&values));
    let starts_at = (!single).then(|| append(out, &column::encode(&starts)));
    let points = matches!(kind, ColumnKind::I64 | ColumnKind::F64).then(|| {
        let mut pairs: Vec<(u64, u32)> = Vec::with_capacity(values.len());
        for (d, w) in starts.windows(2).enumerate() {
            pairs.extend(
                values[w[0] as usize..w[1] as usize]
                    .iter()
                    .map(|&v| (v, d as u32)),
            );
        }
        pairs.sort_unstable();
        let sorted: Vec<u64> = pairs.iter().map(|p| p.0).collect();
        let docs: Vec<u64> = pairs.iter().map(|p| u64::from(p.1)).collect();
        PointsMeta {
            values_at: append(out, &column::encode(&sorted)),
            docs_at: append(out, &column::encode(&docs)),
        }
    });
    ColumnMeta {
        kind,
        docs,
        values: values.len() as u64,
        values_at,
        starts_at,
        dict,
        points,
    }
}

/// The column kind of a field type with a column.
pub fn kind_of(t: crate::schema::FieldType) -> Option<ColumnKind> {
    use crate::schema::FieldType;
    match t {
        FieldType::Integer | FieldType::Date => Some(ColumnKind::I64),
        FieldType::Float => Some(ColumnKind::F64),
        FieldType::Boolean => Some(ColumnKind::Bool),
        FieldType::Keyword => Some(ColumnKind::Ord),
        FieldType::Text | FieldType::Vector => None,
    }
}

/// The sortable `u64` of an integer value.
pub fn from_i64(v: i64) -> u64 {
    i64_to_sortable(v)
}

/// The sortable `u64` of a float value (`-0.0` as `0.0`, so that both compare equal as they do
/// in a term and in Elasticsearch's ranges).
pub fn from_f64(v: f64) -> u64 {
    f64_to_sortable(if v == 0.0 { 0.0 } else { v })
}

/// One field's column of one segment, read in place: the bytes of its pieces, verified.
#[derive(Clone)]
pub struct ColumnBytes {
    pub meta: ColumnMeta,
    pub values: quarry_store::Bytes,
    pub starts: Option<quarry_store::Bytes>,
    pub dict: Option<(quarry_store::Bytes, quarry_store::Bytes)>,
    /// The points' values and documents.
    pub points: Option<(quarry_store::Bytes, quarry_store::Bytes)>,
}

impl ColumnBytes {
    /// Checks the pieces' layouts against the meta and returns the view that reads them.
    pub fn view(&self, file: &str, doc_count: u32) -> Result<ColumnView<'_>> {
        let bad = |what: String| Error::corrupt(file, what);
        let values = Column::open(&self.values).map_err(|e| bad(format!("value column: {e}")))?;
        if values.len() as u64 != self.meta.values {
            return Err(bad(format!(
                "value column has {} rows, the meta says {}",
                values.len(),
                self.meta.values
            )));
        }
        let starts = match &self.starts {
            Some(b) => {
                let s = Column::open(b).map_err(|e| bad(format!("start column: {e}")))?;
                if s.len() != doc_count as usize + 1
                    || s.get(0) != 0
                    || s.get(doc_count as usize) != self.meta.values
                {
                    return Err(bad(format!(
                        "start column of {} rows does not span {} documents and {} values",
                        s.len(),
                        doc_count,
                        self.meta.values
                    )));
                }
                Some(s)
            }
            None if self.meta.values == u64::from(doc_count) => None,
            None => {
                return Err(bad(format!(
                    "{} values for {doc_count} documents and no start column",
                    self.meta.values
                )))
            }
        };
        let dict = match (&self.dict, &self.meta.dict) {
            (Some((offsets, bytes)), Some(dm)) => {
                let o = Column::open(offsets).map_err(|e| bad(format!("term offsets: {e}")))?;
                if o.len() as u64 != dm.terms + 1 || o.get(o.len() - 1) != bytes.len() as u64 {
                    return Err(bad("keyword term offsets do not span the term bytes".into()));
                }
                Some(Dict { offsets: o, bytes })
            }
            (None, None) if self.meta.kind != ColumnKind::Ord => None,
            _ => return Err(bad("a keyword column without terms".into())),
        };
        let points = match &self.points {
            Some((v, d)) => {
                let values = Column::open(v).map_err(|e| bad(format!("point values: {e}")))?;
                let docs = Column::open(d).map_err(|e| bad(format!("point documents: {e}")))?;
                let n = self.meta.values as usize;
                let last_doc = (docs.num_blocks() > 0)
                    .then(|| (0..docs.num_blocks()).map(|b| docs.block_bounds(b).1).max())
                    .flatten();
                if values.len() != n
                    || docs.len() != n
                    || last_doc.is_some_and(|d| d >= u64::from(doc_count))
                {
                    return Err(bad(format!(
                        "points of {} values and {} documents (up to {last_doc:?}) for {n} \
                         values of {doc_count} documents",
                        values.len(),
                        docs.len()
                    )));
                }
                Some(Points { values, docs })
            }
            None => None,
        };
        Ok(ColumnView {
            kind: self.meta.kind,
            values,
            starts,
            dict,
            terms: self.meta.dict.as_ref().map_or(0, |d| d.terms),
            points,
            distinct_docs: self.meta.values == u64::from(self.meta.docs),
        })
    }
}

/// A keyword column's sorted terms.
#[derive(Clone, Copy)]
pub struct Dict<'a> {
    offsets: Column<'a>,
    bytes: &'a [u8],
}

impl<'a> Dict<'a> {
    /// The term of ordinal `ord` (empty when out of range: only a damaged file has such).
    pub fn term(&self, ord: u64) -> &'a [u8] {
        let n = self.offsets.len() as u64;
        if ord + 1 >= n {
            return &[];
        }
        let (a, b) = (
            self.offsets.get(ord as usize) as usize,
            self.offsets.get(ord as usize + 1) as usize,
        );
        self.bytes.get(a..b.max(a)).unwrap_or(&[])
    }

    /// The number of terms.
    pub fn len(&self) -> u64 {
        self.offsets.len() as u64 - 1
    }

    /// Whether there is no term.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first ordinal whose term is `>= term` (`len()` if none).
    pub fn lower_bound(&self, term: &[u8]) -> u64 {
        let (mut lo, mut hi) = (0u64, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.term(mid) < term {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// A numeric column's points: its values sorted, with their documents.
#[derive(Clone, Copy)]
pub struct Points<'a> {
    values: Column<'a>,
    docs: Column<'a>,
}

impl Points<'_> {
    /// The first row whose value is `>= v`: a binary search over the blocks' maximums, then
    /// within the block.
    fn lower_bound(&self, v: u64) -> usize {
        let c = &self.values;
        let (mut lo, mut hi) = (0, c.num_blocks());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if c.block_bounds(mid).1 < v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // Past the last block's maximum: `lo == num_blocks`, the end of the column.
        let (mut lo, mut hi) = (
            (lo * column::BLOCK).min(c.len()),
            ((lo + 1) * column::BLOCK).min(c.len()),
        );
        while lo < hi {
            let mid = (lo + hi) / 2;
            if c.get(mid) < v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The rows whose value is in `lo..=hi`.
    pub fn rows(&self, lo: u64, hi: u64) -> Range<usize> {
        if lo > hi {
            return 0..0;
        }
        let start = self.lower_bound(lo);
        let end = match hi.checked_add(1) {
            Some(h) => self.lower_bound(h),
            None => self.values.len(),
        };
        start..end.max(start)
    }
}

/// One field's column of one segment, ready to read.
#[derive(Clone, Copy)]
pub struct ColumnView<'a> {
    pub kind: ColumnKind,
    values: Column<'a>,
    starts: Option<Column<'a>>,
    dict: Option<Dict<'a>>,
    terms: u64,
    points: Option<Points<'a>>,
    /// No document has two values (each point is a different document).
    distinct_docs: bool,
}

impl<'a> ColumnView<'a> {
    /// The rows of `doc`'s values in the value column.
    #[inline]
    pub fn rows(&self, doc: u32) -> Range<usize> {
        match &self.starts {
            None => doc as usize..doc as usize + 1,
            Some(s) => s.get(doc as usize) as usize..s.get(doc as usize + 1) as usize,
        }
    }

    /// The start column (`doc_count + 1` rows: document `d`'s values are rows
    /// `starts[d]..starts[d + 1]`), absent when every document has exactly one value.
    pub fn starts(&self) -> Option<&Column<'a>> {
        self.starts.as_ref()
    }

    /// Every document has exactly one value, row `d` being document `d`'s.
    pub fn is_dense(&self) -> bool {
        self.starts.is_none()
    }

    /// The value at `row` of the value column.
    #[inline]
    pub fn value(&self, row: usize) -> u64 {
        self.values.get(row)
    }

    /// `doc`'s smallest value.
    #[inline]
    pub fn first(&self, doc: u32) -> Option<u64> {
        let r = self.rows(doc);
        (!r.is_empty()).then(|| self.values.get(r.start))
    }

    /// `doc`'s largest value.
    #[inline]
    pub fn last(&self, doc: u32) -> Option<u64> {
        let r = self.rows(doc);
        (!r.is_empty()).then(|| self.values.get(r.end - 1))
    }

    /// The value column (blocks with their minimum and maximum).
    pub fn values(&self) -> &Column<'a> {
        &self.values
    }

    /// A keyword column's terms.
    pub fn dict(&self) -> Option<&Dict<'a>> {
        self.dict.as_ref()
    }

    /// A keyword column's number of terms (0 for others).
    pub fn terms(&self) -> u64 {
        self.terms
    }

    /// The number of documents with a value in `lo..=hi` when the points tell it without
    /// reading documents (a numeric field where no document has two values); deletions are not
    /// taken into account.
    pub fn count_in_range(&self, lo: u64, hi: u64) -> Option<u64> {
        let p = self.points.as_ref().filter(|_| self.distinct_docs)?;
        Some(p.rows(lo, hi).len() as u64)
    }

    /// The rows of the points (values in ascending order) with a value in `lo..=hi`; `None`
    /// without points.
    pub fn point_rows(&self, lo: u64, hi: u64) -> Option<Range<usize>> {
        let p = self.points.as_ref()?;
        Some(if lo > hi { 0..0 } else { p.rows(lo, hi) })
    }

    /// The number of points (values), 0 without points.
    pub fn point_count(&self) -> usize {
        self.points.as_ref().map_or(0, |p| p.values.len())
    }

    /// Appends the documents of points rows `rows` to `out` (in the points' order: by value).
    pub fn point_docs(&self, rows: Range<usize>, out: &mut Vec<u32>) {
        let Some(p) = self.points.as_ref() else {
            return;
        };
        let start = out.len();
        out.resize(start + rows.len(), 0);
        let mut buf = vec![0u64; rows.len()];
        p.docs.get_range(rows.start, &mut buf);
        for (o, d) in out[start..].iter_mut().zip(buf) {
            *o = d as u32;
        }
    }

    /// Appends to `out` the documents (`< doc_count`) with a value in `lo..=hi`, in order.
    ///
    /// With points (numeric fields), the matching rows are found by binary search and their
    /// documents read from there, then put in order: a cost that follows the matches. Without
    /// (keywords, booleans, columns written before points), the value column is scanned:
    /// blocks whose minimum and maximum miss the range are skipped unread, blocks inside it
    /// taken whole.
    pub fn docs_in_range(&self, lo: u64, hi: u64, doc_count: u32, out: &mut Vec<u32>) {
        if lo > hi {
            return;
        }
        if let Some(p) = &self.points {
            let rows = p.rows(lo, hi);
            points_docs(&p.docs, rows, doc_count, self.distinct_docs, out);
            return;
        }
        self.scan_range(lo, hi, doc_count, out);
    }

    /// [`docs_in_range`](Self::docs_in_range) by scanning the value column.
    pub(crate) fn scan_range(&self, lo: u64, hi: u64, doc_count: u32, out: &mut Vec<u32>) {
        if lo > hi {
            return;
        }
        let col = &self.values;
        let mut buf = [0u64; column::BLOCK];
        match &self.starts {
            None => {
                for b in 0..col.num_blocks() {
                    let (min, max) = col.block_bounds(b);
                    if max < lo || min > hi {
                        continue;
                    }
                    let start = b * column::BLOCK;
                    let rows = column::BLOCK.min(col.len() - start);
                    if lo <= min && max <= hi {
                        out.extend(start as u32..(start + rows) as u32);
                        continue;
                    }
                    let vals = &mut buf[..rows];
                    col.get_range(start, vals);
                    for (i, &v) in vals.iter().enumerate() {
                        if lo <= v && v <= hi {
                            out.push((start + i) as u32);
                        }
                    }
                }
            }
            Some(starts) => {
                // Matching rows in order, mapped to their documents by walking the starts.
                let mut doc = 0u32;
                let mut next_start = starts.get(1);
                let mut take = |row: u64, out: &mut Vec<u32>| {
                    while next_start <= row && doc < doc_count {
                        doc += 1;
                        next_start = starts.get(doc as usize + 1);
                    }
                    if doc < doc_count && out.last() != Some(&doc) {
                        out.push(doc);
                    }
                };
                for b in 0..col.num_blocks() {
                    let (min, max) = col.block_bounds(b);
                    if max < lo || min > hi {
                        continue;
                    }
                    let start = b * column::BLOCK;
                    let rows = column::BLOCK.min(col.len() - start);
                    let vals = &mut buf[..rows];
                    col.get_range(start, vals);
                    for (i, &v) in vals.iter().enumerate() {
                        if lo <= v && v <= hi {
                            take((start + i) as u64, out);
                        }
                    }
                }
            }
        }
    }
}

/// Appends the documents of the point rows `rows` to `out` in increasing order, each once. Few
/// rows are sorted; many set bits of a bitset of the segment that is then read in order (a
/// sort of `k` ids costs `k log k`, the bitset `k + doc_count / 64`).
fn points_docs(
    docs: &Column<'_>,
    rows: Range<usize>,
    doc_count: u32,
    distinct: bool,
    out: &mut Vec<u32>,
) {
    let k = rows.len();
    if k == 0 {
        return;
    }
    let mut buf = [0u64; column::BLOCK];
    let from = out.len();
    if k * 16 < doc_count as usize {
        out.reserve(k);
        let mut at = rows.start;
        while at < rows.end {
            let n = buf.len().min(rows.end - at);
            docs.get_range(at, &mut buf[..n]);
            out.extend(
                buf[..n]
                    .iter()
                    .filter(|&&d| d < u64::from(doc_count))
                    .map(|&d| d as u32),
            );
            at += n;
        }
        out[from..].sort_unstable();
        if !distinct {
            let mut w = from;
            for r in from..out.len() {
                if w == from || out[r] != out[w - 1] {
                    out[w] = out[r];
                    w += 1;
                }
            }
            out.truncate(w);
        }
    } else {
        let mut bits = vec![0u64; (doc_count as usize).div_ceil(64)];
        let mut at = rows.start;
        while at < rows.end {
            let n = buf.len().min(rows.end - at);
            docs.get_range(at, &mut buf[..n]);
            for &d in &buf[..n] {
                if let Some(w) = bits.get_mut((d / 64) as usize) {
                    *w |= 1 << (d % 64);
                }
            }
            at += n;
        }
        out.reserve(k);
        for (i, &w) in bits.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push((i * 64) as u32 + w.trailing_zeros());
                w &= w - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn view_of(bytes: &[u8], meta: &ColumnMeta) -> ColumnBytes {
        let piece = |s: Span| {
            quarry_store::Bytes::from_vec(bytes[s.0 as usize..(s.0 + s.1) as usize].to_vec())
        };
        ColumnBytes {
            meta: meta.clone(),
            values: piece(meta.values_at),
            starts: meta.starts_at.map(piece),
            dict: meta
                .dict
                .as_ref()
                .map(|d| (piece(d.offsets_at), piece(d.bytes_at))),
            points: meta
                .points
                .as_ref()
                .map(|p| (piece(p.values_at), piece(p.docs_at))),
        }
    }

    proptest! {
        /// Whatever the values per document, the columns give back each document's values
        /// sorted, and a range returns exactly the documents a scan of the values finds.
        #[test]
        fn columns_match_a_model(
            docs in prop::collection::vec(prop::collection::vec(-50i64..50, 0..4), 1..3000),
            lo in -60i64..60, len in 0i64..40,
        ) {
            let mut w = ColumnsWriter::new(vec![Some(ColumnKind::I64), Some(ColumnKind::Ord)]);
            for (d, vals) in docs.iter().enumerate() {
                for &v in vals {
                    w.add(0, d as u32, from_i64(v));
                    w.add_term(1, d as u32, format!("t{v:03}").as_bytes());
                }
            }
            let n = docs.len() as u32;
            let mut out = vec![0u8; 16];
            let metas = w.write(n, &mut out);
            let ints = view_of(&out, metas[0].as_ref().unwrap());
            let kws = view_of(&out, metas[1].as_ref().unwrap());
            let iv = ints.view("t.cols", n).unwrap();
            let kv = kws.view("t.cols", n).unwrap();
            let dict = kv.dict().unwrap();
            for (d, vals) in docs.iter().enumerate() {
                let mut want = vals.clone();
                want.sort();
                let got: Vec<i64> = iv.rows(d as u32).map(|r| column::sortable_to_i64(iv.value(r))).collect();
                prop_assert_eq!(&got, &want);
                want.dedup();
                let terms: Vec<String> = kv.rows(d as u32)
                    .map(|r| String::from_utf8(dict.term(kv.value(r)).to_vec()).unwrap())
                    .collect();
                // Keywords come back in byte order ("t-01" before "t-02").
                let mut want_terms: Vec<String> = want.iter().map(|v| format!("t{v:03}")).collect();
                want_terms.sort();
                prop_assert_eq!(terms, want_terms);
            }
            let hi = lo + len;
            let mut got = Vec::new();
            iv.docs_in_range(from_i64(lo), from_i64(hi), n, &mut got);
            let want: Vec<u32> = docs.iter().enumerate()
                .filter(|(_, v)| v.iter().any(|&x| lo <= x && x <= hi))
                .map(|(d, _)| d as u32).collect();
            prop_assert_eq!(&got, &want);
            // The scan finds the same documents as the points.
            let mut scanned = Vec::new();
            iv.scan_range(from_i64(lo), from_i64(hi), n, &mut scanned);
            prop_assert_eq!(&scanned, &want);
            let single = docs.iter().all(|v| v.len() <= 1);
            prop_assert_eq!(
                iv.count_in_range(from_i64(lo), from_i64(hi)),
                single.then_some(want.len() as u64)
            );
            // The same range on the keywords, through the dictionary.
            let (a, b) = (format!("t{lo:03}"), format!("t{hi:03}"));
            let (olo, ohi) = (dict.lower_bound(a.as_bytes()), dict.lower_bound(format!("{b}\u{0}").as_bytes()));
            let mut got_kw = Vec::new();
            if olo < ohi {
                kv.docs_in_range(olo, ohi - 1, n, &mut got_kw);
            }
            let want_kw: Vec<u32> = docs.iter().enumerate()
                .filter(|(_, v)| v.iter().any(|&x| { let t = format!("t{x:03}"); a <= t && t <= b }))
                .map(|(d, _)| d as u32).collect();
            prop_assert_eq!(got_kw, want_kw);
        }
    }

    #[test]
    fn dense_columns_have_no_starts_and_wrong_metas_are_refused() {
        let mut w = ColumnsWriter::new(vec![Some(ColumnKind::F64)]);
        for d in 0..5000u32 {
            w.add(0, d, from_f64(d as f64 * 0.5));
        }
        let mut out = vec![0u8; 16];
        let metas = w.write(5000, &mut out);
        let m = metas[0].clone().unwrap();
        assert!(m.starts_at.is_none() && m.docs == 5000);
        let cb = view_of(&out, &m);
        let v = cb.view("t.cols", 5000).unwrap();
        assert_eq!(column::sortable_to_f64(v.first(4999).unwrap()), 2499.5);
        let mut got = Vec::new();
        v.docs_in_range(from_f64(10.0), from_f64(12.0), 5000, &mut got);
        assert_eq!(got, vec![20, 21, 22, 23, 24]);
        assert!(cb.view("t.cols", 4999).is_err());
        let mut m2 = m.clone();
        m2.values = 7;
        assert!(view_of(&out, &m2).view("t.cols", 5000).is_err());
    }
}
