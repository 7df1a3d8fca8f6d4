//! Searching a committed index: parse, build weights with whole-index statistics, score every
//! segment, collect the top k by BM25 with ties in index order.
pub mod bm25;
pub mod collector;
mod conjunction;
mod count;
mod phrase;
pub mod scorer;
pub mod stats;
mod union;
pub mod weight;

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

pub use bm25::{Bm25, FieldStats};
pub use collector::{AllLive, Budget, DocAddress, Hit, LeafCollector, LiveFilter, TopK};
use scorer::{Scorer, TERMINATED};
pub use stats::{CollectionStats, TermStats};
use weight::{Context, Weight};

use crate::codec::livedocs::LiveDocs;
use crate::codec::postings::Corruption;
use crate::index::SegmentReader;
use crate::query::{FieldAnalysis, Operator, Query, QueryParser};
use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

/// What a search computes (the search-benchmark-game's three modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// Top k; the hit count may be a lower bound (pruned documents are not counted).
    #[default]
    Top,
    /// Top k and the exact hit count.
    TopCount,
    /// Only the exact hit count; nothing is scored.
    Count,
}

impl std::str::FromStr for SearchMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "top" => Ok(Self::Top),
            "top_count" => Ok(Self::TopCount),
            "count" => Ok(Self::Count),
            o => Err(format!(
                "unknown search mode {o:?} (expected top, top_count or count)"
            )),
        }
    }
}

/// How a search may run, beyond its query, k and mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// Stop at this instant and return the best hits found so far (as Elasticsearch's
    /// `timeout`); `None`: run to the end. The clock is read between segments and every few
    /// blocks inside the scoring loops, so a search overshoots its deadline by at most one
    /// such unit of work.
    pub deadline: Option<Instant>,
}

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    pub total_hits: u64,
    /// False when `total_hits` is a lower bound (mode `Top` skipped documents, or the search
    /// timed out).
    pub hits_exact: bool,
    /// Best first.
    pub top: Vec<Hit>,
    /// The deadline passed before the search finished: `top` holds the best of the documents
    /// scored until then and `total_hits` is a lower bound (`hits_exact` is false).
    pub timed_out: bool,
}

/// Searches a fixed set of segments (one commit or near-real-time view) with their deletions.
#[derive(Clone)]
pub struct Searcher {
    schema: Schema,
    segments: Arc<Vec<Arc<SegmentReader>>>,
    /// Per segment, its live documents when it has deletions.
    live: Arc<Vec<Option<Arc<LiveDocs>>>>,
    stats: Arc<Vec<FieldStats>>,
    norm_caches: Arc<Vec<Arc<[f32; 256]>>>,
    bm25: Bm25,
    /// Statistics supplied by [`Searcher::with_collection_stats`] (see [`stats`]).
    global: Option<Arc<CollectionStats>>,
}

/// Analysis for the query parser, from the schema: text fields through their analyzer, keyword
/// and integer fields as one exact term.
struct SchemaAnalysis(Schema);

impl FieldAnalysis for SchemaAnalysis {
    fn tokens(&self, field: &str, text: &str) -> Vec<String> {
        match self.0.field_id(field) {
            Some(id) if self.0.field(id).field_type == FieldType::Text => {
                let mut out = Vec::new();
                self.0
                    .analyzer(id)
                    .expect("text field")
                    .for_each_token(text, &mut |t| out.push(t.to_string()));
                out
            }
            Some(_) => vec![text.to_string()],
            None => vec![text.to_lowercase()],
        }
    }
    fn normalize(&self, field: &str, text: &str) -> String {
        match self.0.field_id(field) {
            Some(id) if self.0.field(id).field_type == FieldType::Text => {
                self.0.analyzer(id).expect("text field").normalize(text)
            }
            Some(_) => text.to_string(),
            None => text.to_lowercase(),
        }
    }
    fn has_field(&self, field: &str) -> bool {
        self.0.field_id(field).is_some()
    }
}

impl Searcher {
    /// A searcher over segments without deletions.
    pub fn new(schema: Schema, segments: Arc<Vec<Arc<SegmentReader>>>) -> Self {
        let live = Arc::new(vec![None; segments.len()]);
        Self::with_live_docs(schema, segments, live)
    }

    /// A searcher over segments and their live documents (`None`: no deletions). BM25
    /// statistics include deleted documents until merges drop them, as in Lucene.
    pub fn with_live_docs(
        schema: Schema,
        segments: Arc<Vec<Arc<SegmentReader>>>,
        live: Arc<Vec<Option<Arc<LiveDocs>>>>,
    ) -> Self {
        let mut stats = vec![FieldStats::default(); schema.fields().len()];
        for seg in segments.iter() {
            for (s, fm) in stats.iter_mut().zip(&seg.meta().fields) {
                s.doc_count += u64::from(fm.doc_count);
                s.sum_total_term_freq += fm.sum_total_term_freq;
            }
        }
        let bm25 = Bm25::default();
        let norm_caches = Arc::new(stats.iter().map(|s| bm25.norm_cache(s)).collect());
        Self {
            schema,
            segments,
            live,
            stats: Arc::new(stats),
            norm_caches,
            bm25,
            global: None,
        }
    }

    /// Uses other BM25 parameters.
    pub fn with_bm25(mut self, bm25: Bm25) -> Self {
        self.bm25 = bm25;
        self.norm_caches = Arc::new(self.stats.iter().map(|s| bm25.norm_cache(s)).collect());
        self
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    pub fn segments(&self) -> &[Arc<SegmentReader>] {
        &self.segments
    }
    /// Per segment, its live documents when it has deletions.
    pub fn live_docs(&self) -> &[Option<Arc<LiveDocs>>] {
        &self.live
    }
    /// Documents that are not deleted.
    pub fn live_doc_count(&self) -> u64 {
        self.segments
            .iter()
            .zip(self.live.iter())
            .map(|(s, l)| u64::from(l.as_ref().map_or(s.doc_count(), |l| l.live_count())))
            .sum()
    }
    pub fn field_stats(&self, field: &str) -> Option<FieldStats> {
        self.schema.field_id(field).map(|f| self.stats[f as usize])
    }

    /// A query parser for this index's schema (default operator OR).
    pub fn query_parser(&self, default_fields: &[&str]) -> Result<QueryParser> {
        let fields: Vec<String> = if default_fields.is_empty() {
            self.schema
                .text_fields()
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            default_fields.iter().map(|s| s.to_string()).collect()
        };
        for f in &fields {
            if self.schema.field_id(f).is_none() {
                return Err(Error::unknown_field(&self.schema, f));
            }
        }
        if fields.is_empty() {
            return Err(Error::Query(
                "no default field: the schema has no text field; name one".into(),
            ));
        }
        Ok(
            QueryParser::with_default_fields(fields, Arc::new(SchemaAnalysis(self.schema.clone())))
                .with_default_operator(Operator::Or),
        )
    }

    /// Parses `query` in Lucene's classic syntax against `default_fields` (all text fields when
    /// empty), default operator OR.
    pub fn parse_query(&self, query: &str, default_fields: &[&str]) -> Result<Query> {
        self.query_parser(default_fields)?
            .parse(query)
            .map_err(Error::Parse)
    }

    /// Runs `query`: the best `k` hits and the hit count, as `mode` asks. Deleted documents are
    /// neither counted nor returned.
    pub fn search(&self, query: &Query, k: usize, mode: SearchMode) -> Result<SearchResult> {
        self.search_with(query, k, mode, &SearchOptions::default())
    }

    /// [`Searcher::search`] with options: with a deadline, the search stops when it passes and
    /// returns the best hits of the documents scored so far, `timed_out` set and the count a
    /// lower bound. Without one, exactly [`Searcher::search`].
    pub fn search_with(
        &self,
        query: &Query,
        k: usize,
        mode: SearchMode,
        opts: &SearchOptions,
    ) -> Result<SearchResult> {
        let ctx = Context {
            schema: &self.schema,
            segments: &self.segments,
            stats: &self.stats,
            norm_caches: &self.norm_caches,
            bm25: self.bm25,
            global: self.global.as_deref(),
        };
        // Reads from disk (pread, direct) are not issued after the deadline: they fail with
        // `DeadlineExceeded`, which ends the search with what it has, flagged `timed_out`.
        let _io = opts
            .deadline
            .map(|d| crate::index::IoDeadline::set(Some(d)));
        let k = if mode == SearchMode::Count { 0 } else { k };
        let mut top = TopK::with_budget(k, Budget::new(opts.deadline));
        let weight = match Weight::build(query, &ctx, 1.0) {
            Err(Error::DeadlineExceeded { .. }) => {
                return Ok(SearchResult {
                    total_hits: 0,
                    hits_exact: false,
                    top: Vec::new(),
                    timed_out: true,
                })
            }
            other => other?,
        };
        let mut total = 0u64;
        let mut exact = true;
        let union = weight.term_union();
        for (ord, seg) in self.segments.iter().enumerate() {
            if top.budget.check_now() {
                break;
            }
            let searched = match self.live.get(ord).and_then(|l| l.as_deref()) {
                None => {
                    if mode == SearchMode::Count {
                        let counted = match weight.fast_count(seg, ord, &mut top.budget) {
                            Err(Error::DeadlineExceeded { .. }) => {
                                top.budget.expire();
                                break;
                            }
                            other => other?,
                        };
                        if let Some(n) = counted {
                            // A count cut short by the deadline is not a count: left out.
                            if !top.budget.expired() {
                                total += n;
                            }
                            continue;
                        }
                    }
                    let c = LeafCollector::new(&mut top, seg, ord as u32, AllLive);
                    // When the count is free (`+work remote`: the documents of `work`), the top
                    // k come from the pruned walk instead of scoring every match.
                    match weight.free_count(ord) {
                        Some(n) if mode == SearchMode::TopCount && union.is_none() => {
                            search_segment(&weight, None, seg, ord, c, SearchMode::Top)
                                .map(|_| (n, false))
                        }
                        _ => search_segment(&weight, union.as_deref(), seg, ord, c, mode),
                    }
                }
                Some(live) => {
                    let c = LeafCollector::new(&mut top, seg, ord as u32, live);
                    search_segment(&weight, union.as_deref(), seg, ord, c, mode)
                }
            };
            let (n, skipped) = match searched {
                Err(Error::DeadlineExceeded { .. }) => {
                    top.budget.expire();
                    break;
                }
                other => other?,
            };
            total += n;
            exact &= !skipped;
        }
        let timed_out = top.budget.expired();
        Ok(SearchResult {
            total_hits: total,
            hits_exact: exact && !timed_out,
            top: top.into_sorted(),
            timed_out,
        })
    }

    /// The live documents of every segment matching `query`, by segment ordinal (what a delete
    /// by query removes). Nothing is scored.
    pub fn matching_docs(&self, query: &Query) -> Result<Vec<Vec<u32>>> {
        let ctx = Context {
            schema: &self.schema,
            segments: &self.segments,
            stats: &self.stats,
            norm_caches: &self.norm_caches,
            bm25: self.bm25,
            global: self.global.as_deref(),
        };
        let weight = Weight::build(query, &ctx, 1.0)?;
        let mut out = Vec::with_capacity(self.segments.len());
        for (ord, seg) in self.segments.iter().enumerate() {
            let live = self.live.get(ord).and_then(|l| l.as_deref());
            let mut docs = Vec::new();
            if let Some(mut s) = weight.scorer(seg, ord)? {
                let two_phase = s.is_two_phase();
                let mut d = s.doc();
                while d != TERMINATED {
                    if !matches!(live, Some(l) if !l.is_live(d)) && (!two_phase || s.matches()) {
                        docs.push(d);
                    }
                    d = s.next();
                }
                if let Some(why) = s.corruption() {
                    return Err(scorer_corruption(seg, why));
                }
            }
            out.push(docs);
        }
        Ok(out)
    }

    /// The stored fields of a hit.
    pub fn stored_fields(&self, doc: DocAddress) -> Result<Map<String, Value>> {
        let seg = self.segments.get(doc.segment as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("segment {} out of range", doc.segment))
        })?;
        seg.stored_fields(doc.doc)
    }

    /// The stored fields of several hits (e.g. a result page), in the order given: per segment,
    /// one batched read of the blocks they are in ([`SegmentReader::stored_docs`]). Same result
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

/// Searches one segment into `c`; returns (live matches counted, whether documents were
/// skipped). Monomorphized per live-documents filter, so segments without deletions pay nothing.
fn search_segment<L: LiveFilter>(
    weight: &Weight,
    union: Option<&[&Weight]>,
    seg: &SegmentReader,
    ord: usize,
    mut c: LeafCollector<'_, L>,
    mode: SearchMode,
) -> Result<(u64, bool)> {
    if let Some(terms) = union {
        let mut scorers = Vec::with_capacity(terms.len());
        for w in terms {
            if let Some(s) = w.term_scorer(seg, ord)? {
                scorers.push(s);
            }
        }
        let skipped = match (scorers.as_mut_slice(), mode) {
            ([t], SearchMode::Top) => union::top_k_term(t, &mut c),
            // One term in a segment without deletions: its count is its document frequency,
            // so the top k come from the pruned walk and the count from the term entry.
            ([t], SearchMode::TopCount) if L::ALL_LIVE => {
                union::top_k_term(t, &mut c);
                let df = t.cost();
                c.count(df.saturating_sub(c.counted()));
                false
            }
            // One term: the generic loop, monomorphized for the term scorer.
            ([t], _) => collect_segment(t, &mut c, mode),
            (_, SearchMode::Top) => union::top_k(&mut scorers, &mut c),
            // The top k from the pruned walk, then, if it skipped documents, the exact count:
            // for two terms without deletions from `Weight::fast_count`, as a count takes it
            // (`count::count_or2`: `|a| + |b| - |a AND b|`, reading only the intersection),
            // else a second pass that only ORs doc ids (bitsets, no scores).
            // Both together read far less than scoring every document.
            (_, SearchMode::TopCount) => {
                if union::top_k(&mut scorers, &mut c) && !c.out_of_time() {
                    if let Some(why) = scorers.iter().find_map(|s| s.corruption()) {
                        return Err(scorer_corruption(seg, why));
                    }
                    if L::ALL_LIVE {
                        let walked = c.counted();
                        if let Some(n) = weight.fast_count(seg, ord, c.budget_mut())? {
                            // A count cut short by the deadline is no count: the walk's lower
                            // bound stays (and the search reports the timeout).
                            if c.budget_mut().expired() {
                                return Ok((walked, true));
                            }
                            c.reset_count();
                            c.count(n);
                            return Ok((n, false));
                        }
                    }
                    scorers.clear();
                    for w in terms {
                        if let Some(s) = w.term_scorer(seg, ord)? {
                            scorers.push(s);
                        }
                    }
                    c.reset_count();
                    union::exhaustive(&mut scorers, &mut c, false);
                }
                false
            }
            (_, SearchMode::Count) => {
                union::exhaustive(&mut scorers, &mut c, false);
                false
            }
        };
        if let Some(why) = scorers.iter().find_map(|s| s.corruption()) {
            return Err(scorer_corruption(seg, why));
        }
        return Ok((c.counted(), skipped));
    }
    if mode != SearchMode::Count {
        if let Some(ws) = weight.term_conjunction() {
            let mut terms = Vec::with_capacity(ws.len());
            for w in ws {
                match w.term_scorer(seg, ord)? {
                    Some(t) => terms.push(t),
                    None => return Ok((0, false)),
                }
            }
            // The order (and so the summation order) of `TermConjunction`.
            terms.sort_by_key(|t| t.cost());
            // Pruned in `Top` mode only: in `TopCount` every match is scored (a pruned walk and
            // then a count from doc ids alone were measured slower: the walk prunes little
            // where the count costs most).
            let prune = mode == SearchMode::Top;
            let skipped = match Weight::term_dense_and(ws, seg, ord)? {
                // Common terms: the candidates from bitsets.
                Some(mut and) => {
                    let skipped = conjunction::dense(&mut terms, &mut and, &mut c, prune);
                    if let Some(why) = and.corruption() {
                        return Err(scorer_corruption(seg, why));
                    }
                    skipped
                }
                None => conjunction::top_k(&mut terms, &mut c, prune),
            };
            if let Some(why) = terms.iter().find_map(|s| s.corruption()) {
                return Err(scorer_corruption(seg, why));
            }
            return Ok((c.counted(), skipped));
        }
    }
    // `+a -b -c`: the pruned walk of `a`, the prohibited terms checked for competitive
    // documents only; with the exact count (no deletions) from doc ids alone,
    // `df(a) - |a ∩ (b ∪ c)|`, which costs less than scoring every match.
    let top_count = mode == SearchMode::TopCount && L::ALL_LIVE;
    if mode == SearchMode::Top || top_count {
        if let Some((req, not)) = weight.term_exclusion() {
            let count = if top_count {
                weight.fast_count(seg, ord, c.budget_mut())?
            } else {
                None
            };
            if !top_count || count.is_some() {
                let Some(mut t) = req.term_scorer(seg, ord)? else {
                    return Ok((0, false));
                };
                let mut excl = Vec::with_capacity(not.len());
                for w in not {
                    if let Some(mut x) = w.term_scorer(seg, ord)? {
                        x.cursor_mut().set_docs_only();
                        excl.push(x);
                    }
                }
                let skipped = union::top_k_term_excluding(&mut t, &mut excl, &mut c);
                if let Some(why) = std::iter::once(&t)
                    .chain(&excl)
                    .find_map(|s| s.corruption())
                {
                    return Err(scorer_corruption(seg, why));
                }
                match count {
                    // A count or walk cut short by the deadline: the walk's lower bound stays.
                    Some(_) if c.budget_mut().expired() => return Ok((c.counted(), true)),
                    Some(n) => {
                        c.reset_count();
                        c.count(n);
                        return Ok((n, false));
                    }
                    None => return Ok((c.counted(), skipped)),
                }
            }
        }
    }
    let Some(mut s) = weight.scorer(seg, ord)? else {
        return Ok((0, false));
    };
    let skipped = collect_segment(&mut *s, &mut c, mode) | s.pruned();
    if let Some(why) = s.corruption() {
        return Err(scorer_corruption(seg, why));
    }
    Ok((c.counted(), skipped))
}

/// The error of a scorer over `seg` that stopped on damaged bytes: in the file its failed check
/// named (`.pos`, `.norms`), else in the postings.
pub(crate) fn scorer_corruption(seg: &SegmentReader, why: Corruption) -> Error {
    let file = why.file.unwrap_or_else(|| format!("{}.post", seg.name()));
    Error::corrupt(file, why.reason)
}
/// Doc ids scored between two checks of the time budget in the exhaustive loops.
const CHUNK: u32 = 4096;

/// Scores one segment into the collector; returns whether documents were skipped (or the time
/// budget ran out).
fn collect_segment<S: Scorer + ?Sized, L: LiveFilter>(
    s: &mut S,
    c: &mut LeafCollector<'_, L>,
    mode: SearchMode,
) -> bool {
    let two_phase = s.is_two_phase();
    let mut skipped = false;
    let mut doc = s.doc();
    match mode {
        // Exhaustive modes run in chunks of doc ids; the time budget is checked between them.
        SearchMode::Count => {
            while doc != TERMINATED {
                let end = doc.saturating_add(CHUNK);
                while doc < end {
                    if c.is_live(doc) && (!two_phase || s.matches()) {
                        c.count(1);
                    }
                    doc = s.next();
                }
                if c.out_of_time() {
                    return true;
                }
            }
        }
        SearchMode::TopCount => {
            while doc != TERMINATED {
                let end = doc.saturating_add(CHUNK);
                while doc < end {
                    if c.is_live(doc) && (!two_phase || s.matches()) {
                        let score = s.score();
                        c.collect(doc, score);
                    }
                    doc = s.next();
                }
                if c.out_of_time() {
                    return true;
                }
            }
        }
        SearchMode::Top => {
            // Block-max skipping: a window whose best possible score cannot beat the k-th best
            // kept score is passed over using the skip tables only (no block is decoded).
            let mut target = doc;
            // The bar last told to the scorer (it can then skip documents below it itself).
            let mut told = f32::NEG_INFINITY;
            while target != TERMINATED {
                if c.out_of_time() {
                    return true;
                }
                if let Some(threshold) = c.threshold() {
                    if threshold > told {
                        told = threshold;
                        s.set_min_competitive(threshold);
                    }
                    let (end, max) = s.block_max(target);
                    if max < threshold {
                        skipped = true;
                        if end >= TERMINATED - 1 {
                            break;
                        }
                        target = end + 1;
                        continue;
                    }
                    // Competitive: score the window's documents.
                    let mut d = if s.doc() < target {
                        s.seek(target)
                    } else {
                        s.doc()
                    };
                    while d != TERMINATED && d <= end {
                        if c.is_live(d) && (!two_phase || s.matches()) {
                            let score = s.score();
                            c.collect(d, score);
                            if let Some(t) = c.threshold() {
                                if max < t {
                                    break;
                                }
                                if t > told {
                                    told = t;
                                    s.set_min_competitive(t);
                                }
                            }
                        }
                        d = s.next();
                    }
                    if d != TERMINATED && d <= end {
                        skipped = true;
                        target = end.saturating_add(1);
                    } else {
                        target = d;
                    }
                } else {
                    let d = if s.doc() < target {
                        s.seek(target)
                    } else {
                        s.doc()
                    };
                    if d == TERMINATED {
                        break;
                    }
                    if c.is_live(d) && (!two_phase || s.matches()) {
                        let score = s.score();
                        c.collect(d, score);
                    }
                    target = s.next();
                }
            }
        }
    }
    skipped
}
