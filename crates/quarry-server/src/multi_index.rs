//! How does one search read several indexes? `_search` and `_count` over the indexes an
//! expression names, scored as if one index held all their documents.
//!
//! Scores are those of one index holding every document: BM25's collection statistics
//! (document count, document frequency, total term frequency and so the average field length)
//! are summed over the indexes searched, which is Elasticsearch's `dfs_query_then_fetch`;
//! quarry always does it. Two paths reach that:
//! - indexes with the same mappings are searched as one: a [`Searcher`] over all their
//!   segments (segment `i` remembers its index), whose statistics are the sums by
//!   construction. Everything a one-index search does works (sort, `search_after`, `aggs`,
//!   highlighting), and ties keep the order of index name, then document.
//! - indexes with different mappings are searched one by one with the summed statistics
//!   ([`Searcher::collection_stats`], [`Searcher::with_collection_stats`]) and their top hits
//!   merged by score (ties: index name, then document). `sort`, `search_after`, `aggs`, `knn` and `retriever`
//!   need one mapping and are refused with a 400 naming them.
//!
//! `_count` adds the counts of each index.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quarry::{CollectionStats, SearchMode, Searcher};
use serde_json::{json, Value};

use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::search::{self, SearchRequest, TrackTotal};

/// Runs `_search` (or `_count` when `count_only`) over `handles` and builds the response.
pub fn run(
    handles: &[Arc<IndexHandle>],
    body: &Value,
    params: &HashMap<String, String>,
    count_only: bool,
    start: Instant,
    default_timeout: Option<Duration>,
) -> Result<Value, ApiError> {
    if handles.is_empty() {
        return Ok(empty(count_only, start));
    }
    let body = &*crate::semantic::rewrite(body, handles)?;
    let searchers: Vec<Arc<Searcher>> = handles.iter().map(|h| h.searcher()).collect();
    if count_only {
        let mut n = 0u64;
        for (h, s) in handles.iter().zip(&searchers) {
            let req = search::parse_request(body, params, s, true)?;
            n += s
                .count(&req.query)
                .map_err(|e| ApiError::from(e).in_index(h.name()))?;
        }
        let shards = handles.len();
        return Ok(json!({
            "count": n,
            "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        }));
    }
    if let [h] = handles {
        let req = search::parse_request(body, params, &searchers[0], false)?;
        let owners = vec![&**h; searchers[0].segments().len()];
        return search::run_on(&searchers[0], &owners, &req, start, default_timeout);
    }
    let schema = searchers[0].schema();
    if searchers.iter().all(|s| s.schema() == schema) {
        let (combined, owners) = combine(handles, &searchers);
        let req = search::parse_request(body, params, &combined, false)?;
        let owners: Vec<&IndexHandle> = owners.iter().map(|&i| &*handles[i]).collect();
        return search::run_on(&combined, &owners, &req, start, default_timeout);
    }
    run_merged(handles, &searchers, body, params, start, default_timeout)
}

/// The answer over no index (`allow_no_indices`).
fn empty(count_only: bool, start: Instant) -> Value {
    let shards = json!({"total": 0, "successful": 0, "skipped": 0, "failed": 0});
    if count_only {
        return json!({"count": 0, "_shards": shards});
    }
    json!({
        "took": start.elapsed().as_millis() as u64,
        "timed_out": false,
        "_shards": shards,
        "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": null, "hits": []},
    })
}

/// One searcher over the segments of several indexes with the same schema, and per segment
/// the position of its index in `handles`.
fn combine(handles: &[Arc<IndexHandle>], searchers: &[Arc<Searcher>]) -> (Searcher, Vec<usize>) {
    let mut segments = Vec::new();
    let mut live = Vec::new();
    let mut owners = Vec::new();
    for (i, s) in searchers.iter().enumerate() {
        segments.extend(s.segments().iter().cloned());
        live.extend(s.live_docs().iter().cloned());
        owners.extend(std::iter::repeat_n(i, s.segments().len()));
    }
    debug_assert_eq!(handles.len(), searchers.len());
    let combined = Searcher::with_live_docs(
        searchers[0].schema().clone(),
        Arc::new(segments),
        Arc::new(live),
    );
    (combined, owners)
}

/// Indexes with different mappings: each searched with the summed statistics, the hits merged.
fn run_merged(
    handles: &[Arc<IndexHandle>],
    searchers: &[Arc<Searcher>],
    body: &Value,
    params: &HashMap<String, String>,
    start: Instant,
    default_timeout: Option<Duration>,
) -> Result<Value, ApiError> {
    let names = || {
        handles
            .iter()
            .map(|h| h.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut reqs: Vec<SearchRequest> = Vec::with_capacity(handles.len());
    for s in searchers {
        let req = search::parse_request(body, params, s, false)?;
        let refused = if !req.sort.is_empty() {
            Some("[sort]")
        } else if req.search_after.is_some() {
            Some("[search_after]")
        } else if req.aggs.is_some() {
            Some("[aggs]")
        } else if req.ranked.is_some() {
            Some("[knn] and [retriever]")
        } else {
            None
        };
        if let Some(what) = refused {
            return Err(ApiError::illegal(format!(
                "{what} over several indexes needs them to have the same mappings; the indexes [{}] differ (search them one at a time)",
                names()
            )));
        }
        reqs.push(req);
    }
    let mut global = CollectionStats::default();
    for (s, req) in searchers.iter().zip(&reqs) {
        global.merge(&s.collection_stats(&req.query)?);
    }
    let req0 = &reqs[0];
    let k = req0.from + req0.size;
    let mode = match req0.track_total {
        TrackTotal::UpTo(_) if k == 0 => SearchMode::Count,
        TrackTotal::Off => SearchMode::Top,
        TrackTotal::UpTo(_) => SearchMode::TopCount,
    };
    let opts = req0.options(start, default_timeout);
    let mut scored = Vec::with_capacity(handles.len());
    let mut all = Vec::new();
    let (mut total, mut timed_out) = (0u64, false);
    for (i, (s, req)) in searchers.iter().zip(&reqs).enumerate() {
        let s = s.with_collection_stats(&global)?;
        let r = s.search_with(&req.query, k.max(1), mode, &opts)?;
        total += r.total_hits;
        timed_out |= r.timed_out;
        all.extend(r.top.iter().map(|h| (i, *h)));
        scored.push(s);
    }
    // Best first; ties in index order, then document order (as within one index).
    all.sort_by(|(ia, a), (ib, b)| {
        b.score
            .total_cmp(&a.score)
            .then(ia.cmp(ib))
            .then((a.doc.segment, a.doc.doc).cmp(&(b.doc.segment, b.doc.doc)))
    });
    let mut hits = Vec::new();
    let highlighters: Vec<_> = scored
        .iter()
        .zip(&reqs)
        .map(|(s, r)| search::highlighter_of(s, r))
        .collect();
    for (i, hit) in all.iter().skip(req0.from).take(req0.size) {
        hits.push(search::hit_json(
            &handles[*i],
            &reqs[*i],
            &scored[*i],
            highlighters[*i].as_ref(),
            hit.doc,
            Some(hit.score),
            None,
        )?);
    }
    let max_score = all.first().map(|(_, h)| h.score);
    let mut hits_obj = json!({"max_score": max_score, "hits": hits});
    if let TrackTotal::UpTo(limit) = req0.track_total {
        let (value, relation) = if total > limit {
            (limit, "gte")
        } else if timed_out {
            (total, "gte")
        } else {
            (total, "eq")
        };
        hits_obj["total"] = json!({"value": value, "relation": relation});
    }
    let shards = handles.len();
    Ok(json!({
        "took": start.elapsed().as_millis() as u64,
        "timed_out": timed_out,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": hits_obj,
    }))
}
