//! Searching a committed index: parse, build weights with whole-index statistics, score every
//! segment, collect the top k by BM25 with ties in index order.
//!
//! This module holds the public API ([`Searcher`], its modes, options and result); one
//! segment's execution is in `segment_search`, fetching hits' stored fields in `stored`.
pub mod automaton;
pub mod bm25;
pub mod collector;
mod conjunction;
mod count;
pub mod explain;
pub mod knn;
mod multi_phrase;
pub mod multiterm;
mod phrase;
pub mod range;
pub mod scorer;
mod segment_search;
mod sloppy;
pub mod sort;
pub mod stats;
mod stored;
mod union;
pub mod weight;

use std::sync::Arc;
use std::time::Instant;

pub use bm25::{Bm25, FieldStats};
pub use collector::{AllLive, Budget, DocAddress, Hit, LeafCollector, LiveFilter, TopK};
pub use explain::Explanation;
use scorer::TERMINATED;
pub(crate) use segment_search::scorer_corruption;
use segment_search::search_segment;
pub use stats::{CollectionStats, TermStats};
use weight::{Context, Weight};

use crate::codec::livedocs::LiveDocs;
use crate::index::SegmentReader;
use crate::query::{FieldAnalysis, Operator, Query, QueryParser, SimpleQueryParser};
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

    /// What building a weight needs: this searcher's schema, segments and statistics.
    pub(crate) fn context(&self) -> Context<'_> {
        Context {
            schema: &self.schema,
            segments: &self.segments,
            stats: &self.stats,
            norm_caches: &self.norm_caches,
            bm25: self.bm25,
            global: self.global.as_deref(),
            range_options: range::RangeOptions::default(),
        }
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

    /// Lucene's `SimpleQueryParser` (Elasticsearch's `simple_query_string`) over `fields`
    /// (name and boost; every text field at boost 1 when empty), default operator OR, every
    /// operator on. Unknown fields are refused.
    pub fn simple_query_parser(&self, fields: &[(&str, f32)]) -> Result<SimpleQueryParser> {
        let fields: Vec<(String, f32)> = if fields.is_empty() {
            self.schema
                .text_fields()
                .iter()
                .map(|s| (s.to_string(), 1.0))
                .collect()
        } else {
            fields.iter().map(|(f, b)| (f.to_string(), *b)).collect()
        };
        for (f, b) in &fields {
            if self.schema.field_id(f).is_none() {
                return Err(Error::unknown_field(&self.schema, f));
            }
            if !b.is_finite() || *b < 0.0 {
                return Err(Error::Query(format!(
                    "field {f:?}: boost {b} is not a finite non-negative number"
                )));
            }
        }
        if fields.is_empty() {
            return Err(Error::Query(
                "no field to search: the schema has no text field; name one".into(),
            ));
        }
        Ok(SimpleQueryParser::new(
            fields,
            Arc::new(SchemaAnalysis(self.schema.clone())),
        ))
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
        let ctx = self.context();
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

    /// Builds `query` as a search would, without running it: a range bound its field cannot read
    /// (`"far"` on an integer field, a bad date) or an unknown field is the error a search would
    /// give. For callers that check requests before queueing them (the server).
    pub fn check_query(&self, query: &Query) -> Result<()> {
        Weight::build(query, &self.context(), 1.0).map(drop)
    }

    /// The live documents of every segment matching `query`, by segment ordinal (what a delete
    /// by query removes). Nothing is scored.
    pub fn matching_docs(&self, query: &Query) -> Result<Vec<Vec<u32>>> {
        let ctx = self.context();
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
}
