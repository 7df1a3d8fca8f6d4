//! Running a parsed request: one state per aggregation for the whole search, one collector per
//! aggregation and segment borrowing it, fed the matching live documents in order.
//!
//! As in Elasticsearch, a collector receives `(doc, bucket)`: `bucket` is the ordinal of the
//! parent's bucket the document fell in (0 at the top level), so one state serves every bucket
//! of its parent and a bucket aggregation hands its own bucket ordinals to its children.
//! Top-level collectors also take whole blocks of documents (`collect_block`, `collect_range`)
//! and use them to read columns a block at a time.
use std::ops::Range;

use serde_json::{Map, Value};

use super::buckets::{FilterState, FiltersState, RangeState};
use super::histogram::{DateHistogramState, HistogramState};
use super::metrics::{CardinalityState, MetricState, PercentilesState};
use super::request::{AggKind, AggNode, FieldRef};
use super::terms::TermsState;
use super::Aggregations;
use crate::codec::columns::ColumnView;
use crate::codec::livedocs::LiveDocs;
use crate::index::SegmentReader;
use crate::query::Query;
use crate::search::scorer::TERMINATED;
use crate::search::weight::Weight;
use crate::search::{scorer_corruption, Searcher};
use crate::{Error, Result};

/// The bucket ordinal of a bucket that collected nothing (empty buckets filled in by
/// histograms, zero-count terms): every state answers it with its empty result.
pub(crate) const EMPTY: u32 = u32::MAX;

/// Elasticsearch's default `search.max_buckets`.
pub(crate) const MAX_BUCKETS: usize = 65_536;

/// Documents handed to top-level collectors at a time.
const BATCH: usize = 1024;

/// Calls `f(doc, value)` for the documents `docs` of a column with one value per document
/// ([`ColumnView::is_dense`]), reading the values a block at a time.
#[inline]
pub(crate) fn dense_values(view: &ColumnView<'_>, docs: Range<u32>, mut f: impl FnMut(u32, u64)) {
    let col = view.values();
    let mut buf = [0u64; quarry_codecs::column::BLOCK];
    let mut at = docs.start as usize;
    let end = (docs.end as usize).min(col.len());
    while at < end {
        let n = buf.len().min(end - at);
        col.get_range(at, &mut buf[..n]);
        for (i, &v) in buf[..n].iter().enumerate() {
            f((at + i) as u32, v);
        }
        at += n;
    }
}

/// The values of the (ascending) documents `docs` of a dense column into `out`: runs of
/// documents close together are decoded as one range (`get_range`, several times faster per
/// value than `get`), scattered ones one by one.
#[inline]
pub(crate) fn gather_dense(
    col: &quarry_codecs::column::Column<'_>,
    docs: &[u32],
    span: &mut [u64],
    out: &mut [u64],
) {
    let mut i = 0;
    while i < docs.len() {
        let first = docs[i] as usize;
        // The documents within one buffer's reach of `first`.
        let reach = docs[i..].partition_point(|&d| (d as usize) < first + span.len());
        let last = docs[i + reach - 1] as usize;
        let width = last - first + 1;
        if reach * 4 >= width {
            col.get_range(first, &mut span[..width]);
            for (o, &d) in out[i..i + reach].iter_mut().zip(&docs[i..i + reach]) {
                *o = span[d as usize - first];
            }
        } else {
            for (o, &d) in out[i..i + reach].iter_mut().zip(&docs[i..i + reach]) {
                *o = col.get(d as usize);
            }
        }
        i += reach;
    }
}

/// Appends every value of the (ascending) documents `docs` of `view` to `out` and returns how
/// many of them have no value. Documents close together are read as one range of the start
/// column and one of the values; scattered ones one by one.
pub(crate) fn gather_values(view: &ColumnView<'_>, docs: &[u32], out: &mut Vec<u64>) -> u64 {
    let Some(starts) = view.starts() else {
        let from = out.len();
        out.resize(from + docs.len(), 0);
        let mut span = [0u64; quarry_codecs::column::BLOCK];
        for (c, o) in docs
            .chunks(quarry_codecs::column::BLOCK)
            .zip(out[from..].chunks_mut(quarry_codecs::column::BLOCK))
        {
            gather_dense(view.values(), c, &mut span, o);
        }
        return 0;
    };
    const REACH: usize = quarry_codecs::column::BLOCK - 1;
    let mut sb = [0u64; REACH + 1];
    let mut vb = [0u64; 4 * quarry_codecs::column::BLOCK];
    let mut missing = 0;
    let mut i = 0;
    while i < docs.len() {
        let first = docs[i] as usize;
        let reach = docs[i..].partition_point(|&d| (d as usize) < first + REACH);
        let window = &docs[i..i + reach];
        i += reach;
        let width = *window.last().expect("one document") as usize - first + 1;
        let mut per_doc = reach * 4 < width;
        if !per_doc {
            starts.get_range(first, &mut sb[..width + 1]);
            let (r0, r1) = (sb[0] as usize, sb[width] as usize);
            per_doc = r1 - r0 > vb.len();
            if !per_doc {
                view.values().get_range(r0, &mut vb[..r1 - r0]);
                for &d in window {
                    let at = d as usize - first;
                    let (a, b) = (sb[at] as usize - r0, sb[at + 1] as usize - r0);
                    missing += u64::from(a == b);
                    out.extend_from_slice(&vb[a..b]);
                }
            }
        }
        if per_doc {
            for &d in window {
                let rows = view.rows(d);
                missing += u64::from(rows.is_empty());
                out.extend(rows.map(|r| view.value(r)));
            }
        }
    }
    missing
}

/// What a collector sees of its segment.
#[derive(Clone, Copy)]
pub(crate) struct SegCtx<'a> {
    pub seg: &'a SegmentReader,
    pub ord: usize,
    pub live: Option<&'a LiveDocs>,
}

impl<'a> SegCtx<'a> {
    /// The column of `field` in this segment (None: unmapped, or no value here).
    pub fn column(&self, field: &FieldRef) -> Result<Option<ColumnView<'a>>> {
        match field.id {
            None => Ok(None),
            Some(id) => self.seg.column_view(id),
        }
    }

    /// Whether `doc` is live.
    #[inline]
    pub fn is_live(&self, doc: u32) -> bool {
        self.live.is_none_or(|l| l.is_live(doc))
    }
}

/// One aggregation's state over the whole search.
pub(crate) trait AggState {
    /// A collector for one segment.
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>>;
    /// Called once after the last segment, before results are read.
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }
    /// The result for the parent's bucket `bucket` ([`EMPTY`]: a bucket without documents).
    fn result(&self, bucket: u32, budget: &mut Budget) -> Result<Map<String, Value>>;
}

/// One aggregation's collector in one segment.
pub(crate) trait SegCollector {
    /// `doc` falls in the parent's bucket `bucket`. Documents come in non-decreasing order.
    fn collect(&mut self, doc: u32, bucket: u32);
    /// Top level: these documents (ascending) match.
    fn collect_block(&mut self, docs: &[u32]) {
        for &d in docs {
            self.collect(d, 0);
        }
    }
    /// Top level: every document in `docs` matches and is live (the whole segment when the
    /// query matches all and nothing is deleted).
    fn collect_range(&mut self, docs: Range<u32>) {
        for d in docs {
            self.collect(d, 0);
        }
    }
    /// After the segment's last document: errors met while collecting, merging of
    /// segment-local counts.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Counts buckets in a response against Elasticsearch's `search.max_buckets`.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    used: usize,
}

impl Budget {
    pub fn take(&mut self, n: usize) -> Result<()> {
        self.used += n;
        if self.used > MAX_BUCKETS {
            return Err(Error::Query(format!(
                "Trying to create too many buckets. Must be less than or equal to: [{MAX_BUCKETS}] but this number of buckets was [{}]. Narrow the request (a larger interval, a smaller size, extended_bounds) ",
                self.used
            )));
        }
        Ok(())
    }
}

/// One named aggregation and its state.
pub(crate) struct Node {
    name: String,
    meta: Option<Value>,
    state: Box<dyn AggState>,
}

/// The aggregations under one parent (or at the top level).
#[derive(Default)]
pub(crate) struct Subs {
    nodes: Vec<Node>,
}

impl Subs {
    pub fn build(reqs: &[AggNode], searcher: &Searcher) -> Result<Subs> {
        let nodes = reqs
            .iter()
            .map(|r| {
                Ok(Node {
                    name: r.name.clone(),
                    meta: r.meta.clone(),
                    state: build_state(r, searcher)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Subs { nodes })
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<SubCollectors<'a>> {
        let list = self
            .nodes
            .iter_mut()
            .map(|n| n.state.segment(ctx))
            .collect::<Result<_>>()?;
        Ok(SubCollectors { list })
    }

    pub fn prepare(&mut self) -> Result<()> {
        self.nodes.iter_mut().try_for_each(|n| n.state.prepare())
    }

    /// Adds each aggregation's result for `bucket` to `out`, by name.
    pub fn results_into(
        &self,
        bucket: u32,
        budget: &mut Budget,
        out: &mut Map<String, Value>,
    ) -> Result<()> {
        for n in &self.nodes {
            let body = n.state.result(bucket, budget)?;
            let v = match &n.meta {
                None => Value::Object(body),
                Some(meta) => {
                    let mut m = Map::with_capacity(body.len() + 1);
                    m.insert("meta".into(), meta.clone());
                    m.extend(body);
                    Value::Object(m)
                }
            };
            out.insert(n.name.clone(), v);
        }
        Ok(())
    }
}

/// The collectors of the sub-aggregations of one bucket aggregation in one segment.
pub(crate) struct SubCollectors<'a> {
    list: Vec<Box<dyn SegCollector + 'a>>,
}

impl SubCollectors<'_> {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    #[inline]
    pub fn collect(&mut self, doc: u32, bucket: u32) {
        for c in &mut self.list {
            c.collect(doc, bucket);
        }
    }

    pub fn collect_block(&mut self, docs: &[u32]) {
        for c in &mut self.list {
            c.collect_block(docs);
        }
    }

    pub fn collect_range(&mut self, docs: Range<u32>) {
        for c in &mut self.list {
            c.collect_range(docs.clone());
        }
    }

    pub fn finish(&mut self) -> Result<()> {
        self.list.iter_mut().try_for_each(|c| c.finish())
    }
}

fn build_state(req: &AggNode, searcher: &Searcher) -> Result<Box<dyn AggState>> {
    let subs = || Subs::build(&req.subs, searcher);
    Ok(match &req.kind {
        AggKind::Terms(r) => Box::new(TermsState::new(r.clone(), subs()?)),
        AggKind::Histogram(r) => Box::new(HistogramState::new(r.clone(), subs()?)),
        AggKind::DateHistogram(r) => Box::new(DateHistogramState::new(r.clone(), subs()?)?),
        AggKind::Range(r) => Box::new(RangeState::new(r.clone(), subs()?)),
        AggKind::Metric(r) => Box::new(MetricState::new(r.clone())),
        AggKind::Cardinality(r) => Box::new(CardinalityState::new(r.clone())),
        AggKind::Percentiles(r) => Box::new(PercentilesState::new(r.clone())),
        AggKind::Filter(q) => Box::new(FilterState::new(weight(searcher, q)?, subs()?)),
        AggKind::Filters(r) => {
            let weights = r
                .filters
                .iter()
                .map(|(_, q)| weight(searcher, q))
                .collect::<Result<Vec<_>>>()?;
            Box::new(FiltersState::new(r.clone(), weights, subs()?))
        }
    })
}

fn weight(searcher: &Searcher, q: &Query) -> Result<Weight> {
    Weight::build(q, &searcher.context(), 1.0)
}

/// Whether some aggregation of the tree reads a column.
fn reads_columns(nodes: &[AggNode]) -> bool {
    nodes
        .iter()
        .any(|n| n.kind.field().is_some_and(|f| f.id.is_some()) || reads_columns(&n.subs))
}

/// The documents of a filter in one segment, asked in non-decreasing order.
pub(crate) struct DocMatcher<'a> {
    scorer: Option<Box<dyn crate::search::scorer::Scorer>>,
    all: bool,
    two_phase: bool,
    last: u32,
    last_match: bool,
    seg: &'a SegmentReader,
}

impl<'a> DocMatcher<'a> {
    pub fn new(weight: &Weight, ctx: SegCtx<'a>) -> Result<Self> {
        let all = matches!(weight, Weight::All { .. });
        let scorer = if all {
            None
        } else {
            weight.scorer(ctx.seg, ctx.ord)?
        };
        Ok(DocMatcher {
            two_phase: scorer.as_ref().is_some_and(|s| s.is_two_phase()),
            scorer,
            all,
            last: TERMINATED,
            last_match: false,
            seg: ctx.seg,
        })
    }

    /// Whether `doc` matches; `doc` never below the one asked before.
    #[inline]
    pub fn matches(&mut self, doc: u32) -> bool {
        if self.all {
            return true;
        }
        if doc == self.last {
            return self.last_match;
        }
        let Some(s) = self.scorer.as_mut() else {
            return false;
        };
        let mut d = s.doc();
        if d < doc {
            d = s.seek(doc);
        }
        self.last = doc;
        self.last_match = d == doc && (!self.two_phase || s.matches());
        self.last_match
    }

    /// A damaged posting list met while matching.
    pub fn check(&self) -> Result<()> {
        match self.scorer.as_ref().and_then(|s| s.corruption()) {
            Some(why) => Err(scorer_corruption(self.seg, why)),
            None => Ok(()),
        }
    }
}

impl Searcher {
    /// Runs `aggs` over the live documents matching `query`; returns Elasticsearch's
    /// `aggregations` object (name -> result) as JSON. Nothing is scored.
    ///
    /// Fails with [`Error::Query`] when a segment was written before columns existed (format
    /// v7 and older: force-merge the index to add them).
    pub fn aggregate(&self, query: &Query, aggs: &Aggregations) -> Result<Value> {
        let weight = Weight::build(query, &self.context(), 1.0)?;
        let mut top = Subs::build(&aggs.nodes, self)?;
        let columns = reads_columns(&aggs.nodes);
        let match_all = matches!(weight, Weight::All { .. });
        let mut batch = Vec::with_capacity(BATCH);
        for (ord, seg) in self.segments().iter().enumerate() {
            let n = seg.doc_count();
            if n == 0 || top.is_empty() {
                continue;
            }
            if columns && !seg.has_columns() {
                return Err(Error::Query(format!(
                    "cannot aggregate: segment {} was written before format v8 and has no columns; force-merge the index (`IndexWriter::force_merge`, or `quarry index --append --force-merge 1` of an empty file) to add them",
                    seg.name()
                )));
            }
            let live = self.live_docs().get(ord).and_then(|l| l.as_deref());
            let ctx = SegCtx {
                seg: seg.as_ref(),
                ord,
                live,
            };
            let mut cols = top.segment(ctx)?;
            if match_all {
                match live {
                    None => cols.collect_range(0..n),
                    Some(l) => {
                        for w in 0..n.div_ceil(64) as usize {
                            let mut bits = l.word(w);
                            while bits != 0 {
                                let d = w as u32 * 64 + bits.trailing_zeros();
                                bits &= bits - 1;
                                if d < n {
                                    batch.push(d);
                                }
                            }
                            if batch.len() >= BATCH - 64 {
                                cols.collect_block(&batch);
                                batch.clear();
                            }
                        }
                    }
                }
            } else if let Some(mut s) = weight.scorer(seg, ord)? {
                let two_phase = s.is_two_phase();
                let mut d = s.doc();
                while d != TERMINATED {
                    if ctx.is_live(d) && (!two_phase || s.matches()) {
                        batch.push(d);
                        if batch.len() == BATCH {
                            cols.collect_block(&batch);
                            batch.clear();
                        }
                    }
                    d = s.next();
                }
                if let Some(why) = s.corruption() {
                    return Err(scorer_corruption(seg, why));
                }
            }
            if !batch.is_empty() {
                cols.collect_block(&batch);
                batch.clear();
            }
            cols.finish()?;
        }
        top.prepare()?;
        let mut out = Map::new();
        top.results_into(0, &mut Budget::default(), &mut out)?;
        Ok(Value::Object(out))
    }
}
