//! `terms`: one bucket per distinct value, the `size` first by `order`, exact counts.
//!
//! In each segment values are first given segment-local ids: a keyword's ordinal, a number's
//! offset from the segment's smallest value when the values span a small range, else an id
//! from a hash table. Without sub-aggregations the top level counts by local id into a
//! `Vec<u32>` and maps the ids with a count to their terms only at the end of the segment;
//! with sub-aggregations (or under a parent bucket) each local id is mapped to its bucket
//! (parent, term) the first time it is met. A document counts once per distinct value.
//!
//! The selection is Elasticsearch's on a one-shard index: buckets ordered (ties by key
//! ascending), the first `shard_size` (default `1.5 × size + 10`) of those with at least
//! `shard_min_doc_count` kept, then the first `size` of those with at least `min_doc_count`
//! returned; `sum_other_doc_count` counts the documents of every bucket not returned except
//! those dropped by `min_doc_count` in the second step, as Elasticsearch does.
use std::collections::{BTreeSet, HashSet};

use quarry_codecs::column::{sortable_to_f64, sortable_to_i64};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use super::exec::{AggState, Budget, SegCollector, SegCtx, SubCollectors, Subs, EMPTY};
use super::format::json_f64;
use super::request::{BucketOrder, Missing, TermsReq};
use crate::codec::columns::{ColumnView, Dict};
use crate::schema::FieldType;
use crate::Result;

/// A bucket's key: a column value (numbers, dates, booleans) or a keyword's bytes; ordered as
/// the values (numbers by their sortable form, keywords by bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TermKey {
    Num(u64),
    Bytes(Box<[u8]>),
}

/// Every (parent bucket, key) bucket met so far.
#[derive(Default)]
struct Buckets {
    keys: Vec<TermKey>,
    parents: Vec<u32>,
    counts: Vec<u64>,
    index: FxHashMap<(u32, TermKey), u32>,
}

impl Buckets {
    fn get_or_add(&mut self, parent: u32, key: TermKey) -> u32 {
        if let Some(&b) = self.index.get(&(parent, key.clone())) {
            return b;
        }
        let b = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.parents.push(parent);
        self.counts.push(0);
        self.index.insert((parent, key), b);
        b
    }
}

pub(crate) struct TermsState {
    req: TermsReq,
    subs: Subs,
    buckets: Buckets,
    /// `min_doc_count: 0`: every key of the field (Elasticsearch: a keyword's every term in
    /// the segments, a number's every value of a live document).
    zero_keys: BTreeSet<TermKey>,
    by_parent: FxHashMap<u32, Vec<u32>>,
}

impl TermsState {
    pub fn new(req: TermsReq, subs: Subs) -> Self {
        TermsState {
            req,
            subs,
            buckets: Buckets::default(),
            zero_keys: BTreeSet::new(),
            by_parent: FxHashMap::default(),
        }
    }
}

/// Segment-local ids of values.
enum Locals<'a> {
    /// Keywords: the ordinal; the missing value is `len`.
    Ords { dict: Dict<'a>, len: u32 },
    /// Numbers over a small range: the offset from `min`; the missing value is `len`.
    Dense { min: u64, len: u32 },
    /// Numbers: ids in order of appearance (the missing value among them).
    Sparse {
        ids: FxHashMap<u64, u32>,
        keys: Vec<u64>,
    },
}

impl Locals<'_> {
    #[inline]
    fn local(&mut self, v: u64) -> u32 {
        match self {
            // (Values outside the range only come from a damaged file: the extra slot.)
            Locals::Ords { len, .. } => v.min(u64::from(*len)) as u32,
            Locals::Dense { min, len } => v.wrapping_sub(*min).min(u64::from(*len)) as u32,
            Locals::Sparse { ids, keys } => *ids.entry(v).or_insert_with(|| {
                keys.push(v);
                keys.len() as u32 - 1
            }),
        }
    }

    /// The number of local ids (Sparse: so far), the missing value's slot included.
    fn len(&self) -> usize {
        match self {
            Locals::Ords { len, .. } | Locals::Dense { len, .. } => *len as usize + 1,
            Locals::Sparse { keys, .. } => keys.len(),
        }
    }

    fn key(&self, local: u32, missing: &Option<Missing>) -> TermKey {
        let missing_key = || match missing {
            Some(Missing::Bytes(b)) => TermKey::Bytes(b.clone().into_boxed_slice()),
            Some(Missing::Num(x)) => TermKey::Num(*x),
            None => TermKey::Num(0),
        };
        match self {
            Locals::Ords { dict, len } if local < *len => {
                TermKey::Bytes(dict.term(u64::from(local)).into())
            }
            Locals::Dense { min, len } if local < *len => TermKey::Num(min + u64::from(local)),
            Locals::Sparse { keys, .. } => TermKey::Num(keys[local as usize]),
            _ => missing_key(),
        }
    }
}

struct TermsSeg<'a> {
    view: Option<ColumnView<'a>>,
    locals: Locals<'a>,
    missing: &'a Option<Missing>,
    /// The local id of the missing value.
    missing_local: Option<u32>,
    /// Whether keys may repeat within a document (numbers; keywords are distinct).
    dedup: bool,
    /// Top level without sub-aggregations: every row of a run of documents is one count
    /// (values distinct per document, and no `missing` to add for documents without one).
    rows_count: bool,
    buckets: &'a mut Buckets,
    subs: SubCollectors<'a>,
    /// Top level without sub-aggregations: counts by local id.
    local_counts: Vec<u32>,
    /// Local id -> bucket under parent 0 (`EMPTY`: not met yet).
    to_bucket0: Vec<u32>,
    to_bucket: FxHashMap<(u32, u32), u32>,
    /// A document's values.
    vals: Vec<u64>,
}

impl AggState for TermsState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let view = ctx.column(&self.req.field)?;
        let mut locals = match (&view, view.as_ref().and_then(|v| v.dict().copied())) {
            (_, Some(dict)) => Locals::Ords {
                len: dict.len() as u32,
                dict,
            },
            (Some(v), None) if !v.values().is_empty() => {
                let col = v.values();
                let (mut lo, mut hi) = (u64::MAX, 0u64);
                for b in 0..col.num_blocks() {
                    let (a, z) = col.block_bounds(b);
                    lo = lo.min(a);
                    hi = hi.max(z);
                }
                let span = hi - lo;
                if span < (1 << 16).max(2 * col.len() as u64).min(1 << 24) {
                    Locals::Dense {
                        min: lo,
                        len: span as u32 + 1,
                    }
                } else {
                    Locals::Sparse {
                        ids: FxHashMap::default(),
                        keys: Vec::new(),
                    }
                }
            }
            _ => Locals::Dense { min: 0, len: 0 },
        };
        let missing_local = match (&self.req.missing, &mut locals) {
            (None, _) => None,
            (Some(Missing::Num(x)), l @ Locals::Sparse { .. }) => Some(l.local(*x)),
            (Some(_), l) => Some(l.len() as u32 - 1),
        };
        if self.req.min_doc_count == 0 {
            collect_zero_keys(&mut self.zero_keys, &view, &self.req.missing, ctx);
        }
        let n = locals.len();
        let no_subs = self.subs.is_empty();
        // At most one value per document: the rows are distinct per document.
        let single = match self.req.field.id {
            Some(id) => ctx
                .seg
                .column(id)?
                .is_none_or(|c| u64::from(c.meta.docs) == c.meta.values),
            None => true,
        };
        let keyword = view.as_ref().is_some_and(|v| v.dict().is_some());
        let dense = view.as_ref().is_some_and(|v| v.is_dense());
        Ok(Box::new(TermsSeg {
            dedup: !keyword,
            rows_count: no_subs && (keyword || single) && (self.req.missing.is_none() || dense),
            view,
            missing: &self.req.missing,
            missing_local,
            buckets: &mut self.buckets,
            subs: self.subs.segment(ctx)?,
            local_counts: if no_subs { vec![0; n] } else { Vec::new() },
            to_bucket0: if no_subs { Vec::new() } else { vec![EMPTY; n] },
            to_bucket: FxHashMap::default(),
            vals: Vec::new(),
            locals,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        self.by_parent.clear();
        for (b, &p) in self.buckets.parents.iter().enumerate() {
            self.by_parent.entry(p).or_default().push(b as u32);
        }
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let req = &self.req;
        let mut cands: Vec<(&TermKey, u64, u32)> = match self.by_parent.get(&parent) {
            Some(list) if parent != EMPTY => list
                .iter()
                .map(|&b| {
                    (
                        &self.buckets.keys[b as usize],
                        self.buckets.counts[b as usize],
                        b,
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        if req.min_doc_count == 0 {
            let present: HashSet<&TermKey> = cands.iter().map(|c| c.0).collect();
            let zeros: Vec<&TermKey> = self
                .zero_keys
                .iter()
                .filter(|k| !present.contains(k))
                .collect();
            cands.extend(zeros.into_iter().map(|k| (k, 0, EMPTY)));
        }
        let total: u64 = cands.iter().map(|c| c.1).sum();
        let order = req.order;
        let cmp = |a: &(&TermKey, u64, u32), b: &(&TermKey, u64, u32)| match order {
            BucketOrder::CountDesc => b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)),
            BucketOrder::CountAsc => a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)),
            BucketOrder::KeyAsc => a.0.cmp(b.0),
            BucketOrder::KeyDesc => b.0.cmp(a.0),
        };
        // The shard's selection.
        cands.retain(|c| c.1 >= req.shard_min_doc_count);
        if cands.len() > req.shard_size {
            cands.select_nth_unstable_by(req.shard_size - 1, cmp);
            cands.truncate(req.shard_size);
        }
        cands.sort_unstable_by(cmp);
        let mut other = total - cands.iter().map(|c| c.1).sum::<u64>();
        // The final reduction.
        cands.retain(|c| c.1 >= req.min_doc_count);
        if cands.len() > req.size {
            other += cands[req.size..].iter().map(|c| c.1).sum::<u64>();
            cands.truncate(req.size);
        }
        budget.take(cands.len())?;
        let mut buckets = Vec::with_capacity(cands.len());
        for (key, count, b) in cands {
            let mut m = Map::new();
            self.key_json(key, &mut m)?;
            m.insert("doc_count".into(), Value::from(count));
            self.subs.results_into(b, budget, &mut m)?;
            buckets.push(Value::Object(m));
        }
        let mut out = Map::new();
        out.insert("doc_count_error_upper_bound".into(), Value::from(0));
        out.insert("sum_other_doc_count".into(), Value::from(other));
        out.insert("buckets".into(), Value::Array(buckets));
        Ok(out)
    }
}

impl TermsState {
    fn key_json(&self, key: &TermKey, m: &mut Map<String, Value>) -> Result<()> {
        let f = &self.req.field;
        match key {
            TermKey::Bytes(b) => {
                m.insert(
                    "key".into(),
                    Value::String(String::from_utf8_lossy(b).into_owned()),
                );
            }
            TermKey::Num(x) => match f.ftype {
                FieldType::Float => {
                    m.insert("key".into(), json_f64(sortable_to_f64(*x)));
                }
                FieldType::Boolean => {
                    m.insert("key".into(), Value::from(*x as i64));
                    m.insert("key_as_string".into(), Value::String((*x != 0).to_string()));
                }
                FieldType::Date => {
                    let ms = sortable_to_i64(*x);
                    m.insert("key".into(), Value::from(ms));
                    m.insert("key_as_string".into(), f.format.format_i64(ms)?.into());
                }
                _ => {
                    m.insert("key".into(), Value::from(sortable_to_i64(*x)));
                }
            },
        }
        Ok(())
    }
}

/// `min_doc_count: 0`: adds every key of the segment (keywords: every term; numbers: the
/// values of live documents; the missing value when a live document has none).
fn collect_zero_keys(
    out: &mut BTreeSet<TermKey>,
    view: &Option<ColumnView<'_>>,
    missing: &Option<Missing>,
    ctx: SegCtx<'_>,
) {
    let mut lacks_value = false;
    match view {
        Some(v) if v.dict().is_some() => {
            let dict = v.dict().expect("a keyword column");
            for o in 0..dict.len() {
                out.insert(TermKey::Bytes(dict.term(o).into()));
            }
            lacks_value = (0..ctx.seg.doc_count()).any(|d| ctx.is_live(d) && v.rows(d).is_empty());
        }
        Some(v) => {
            for d in 0..ctx.seg.doc_count() {
                if ctx.is_live(d) {
                    let rows = v.rows(d);
                    lacks_value |= rows.is_empty();
                    for r in rows {
                        out.insert(TermKey::Num(v.value(r)));
                    }
                }
            }
        }
        None => lacks_value = ctx.seg.doc_count() > 0,
    }
    if lacks_value {
        match missing {
            Some(Missing::Num(x)) => {
                out.insert(TermKey::Num(*x));
            }
            Some(Missing::Bytes(b)) => {
                out.insert(TermKey::Bytes(b.clone().into_boxed_slice()));
            }
            None => {}
        }
    }
}

impl TermsSeg<'_> {
    /// The bucket of `local` under `parent`.
    #[inline]
    fn bucket(&mut self, parent: u32, local: u32) -> u32 {
        if parent == 0 {
            if let Some(&b) = self.to_bucket0.get(local as usize) {
                if b != EMPTY {
                    return b;
                }
            }
            let b = self
                .buckets
                .get_or_add(0, self.locals.key(local, self.missing));
            let i = local as usize;
            if self.to_bucket0.len() <= i {
                self.to_bucket0.resize(i + 1, EMPTY);
            }
            self.to_bucket0[i] = b;
            return b;
        }
        if let Some(&b) = self.to_bucket.get(&(parent, local)) {
            return b;
        }
        let b = self
            .buckets
            .get_or_add(parent, self.locals.key(local, self.missing));
        self.to_bucket.insert((parent, local), b);
        b
    }

    #[inline]
    fn hit(&mut self, doc: u32, parent: u32, local: u32) {
        if parent == 0 && self.subs.is_empty() {
            let i = local as usize;
            if self.local_counts.len() <= i {
                self.local_counts.resize(i + 1, 0);
            }
            self.local_counts[i] += 1;
            return;
        }
        let b = self.bucket(parent, local);
        self.buckets.counts[b as usize] += 1;
        self.subs.collect(doc, b);
    }
}

impl SegCollector for TermsSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        if rows.is_empty() {
            if let Some(m) = self.missing_local {
                self.hit(doc, parent, m);
            }
            return;
        }
        // The values first (the view is borrowed, not copied, per document).
        let view = self.view.as_ref().expect("rows come from a view");
        self.vals.clear();
        self.vals.extend(rows.map(|r| view.value(r)));
        let mut prev = None;
        for i in 0..self.vals.len() {
            let v = self.vals[i];
            if self.dedup {
                if prev == Some(v) {
                    continue;
                }
                prev = Some(v);
            }
            let local = self.locals.local(v);
            self.hit(doc, parent, local);
        }
    }

    fn collect_range(&mut self, docs: std::ops::Range<u32>) {
        // Top level without sub-aggregations, each row one count: the rows of the documents
        // counted a block at a time, by local id.
        let Some(v) = self.view.filter(|_| self.rows_count && !docs.is_empty()) else {
            for d in docs {
                self.collect(d, 0);
            }
            return;
        };
        let rows = v.rows(docs.start).start..v.rows(docs.end - 1).end;
        let col = v.values();
        let mut buf = [0u64; quarry_codecs::column::BLOCK];
        let mut at = rows.start;
        while at < rows.end {
            let n = buf.len().min(rows.end - at);
            col.get_range(at, &mut buf[..n]);
            match &mut self.locals {
                Locals::Ords { .. } => {
                    for &x in &buf[..n] {
                        // (An ordinal past the terms only comes from a damaged file.)
                        if let Some(c) = self.local_counts.get_mut(x as usize) {
                            *c += 1;
                        }
                    }
                }
                Locals::Dense { min, .. } => {
                    for &x in &buf[..n] {
                        if let Some(c) = self.local_counts.get_mut(x.wrapping_sub(*min) as usize) {
                            *c += 1;
                        }
                    }
                }
                locals @ Locals::Sparse { .. } => {
                    for &x in &buf[..n] {
                        let i = locals.local(x) as usize;
                        if self.local_counts.len() <= i {
                            self.local_counts.resize(i + 1, 0);
                        }
                        self.local_counts[i] += 1;
                    }
                }
            }
            at += n;
        }
    }

    fn finish(&mut self) -> Result<()> {
        for (local, &c) in self.local_counts.iter().enumerate() {
            if c > 0 {
                let b = self
                    .buckets
                    .get_or_add(0, self.locals.key(local as u32, self.missing));
                self.buckets.counts[b as usize] += u64::from(c);
            }
        }
        self.local_counts.clear();
        self.subs.finish()
    }
}
