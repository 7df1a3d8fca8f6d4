//! What does a `_search` or `_count` request ask for, and how is the answer shaped?
use std::collections::HashMap;

use std::time::{Duration, Instant};

use quarry::query::Query;
use quarry::{FieldType, SearchMode, SearchOptions, Searcher, SortField, SortKey, SortValue};
use serde_json::{json, Map, Value};

use crate::dsl;
use crate::engine::{split_stored, IndexHandle};
use crate::error::ApiError;
use crate::indices::parse_duration_ms;

/// Elasticsearch's `index.max_result_window`: `from + size` may not exceed it.
pub const MAX_RESULT_WINDOW: usize = 10_000;

/// How `hits.total` is tracked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrackTotal {
    /// `false`: no total.
    Off,
    /// Exact up to this many, then `gte` (default 10,000; `true` = unbounded).
    UpTo(u64),
}

/// Which stored fields go into `_source`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceFilter {
    pub enabled: bool,
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

/// A parsed search request.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: Query,
    pub from: usize,
    pub size: usize,
    pub track_total: TrackTotal,
    pub source: SourceFilter,
    /// The request's time budget: `None` when not given (the server default applies),
    /// `Some(None)` for `-1` (no budget, overriding the default), `Some(Some(ms))` otherwise.
    pub timeout_ms: Option<Option<u64>>,
    /// `version=true`: hits carry `_version`.
    pub version: bool,
    /// `seq_no_primary_term=true`: hits carry `_seq_no` and `_primary_term`.
    pub seq_no_primary_term: bool,
    /// `sort`: empty for relevance order.
    pub sort: Vec<SortField>,
    /// `search_after`: the sort values of the last hit of the previous page.
    pub search_after: Option<Vec<SortValue>>,
    /// `track_scores`: compute scores when sorting by fields.
    pub track_scores: bool,
    /// `aggs` (or `aggregations`): computed over every match, whatever `size`.
    pub aggs: Option<quarry::aggregation::Aggregations>,
    /// `highlight`: hits carry the highlighted fragments of these fields.
    pub highlight: Option<crate::highlight::HighlightRequest>,
    /// `knn` or `retriever`: what is ranked instead of (or beside) `query`
    /// ([`crate::retriever`]).
    pub ranked: Option<crate::retriever::Ranked>,
    /// `explain=true`: hits carry Lucene's `_explanation` of their score.
    pub explain: bool,
}

/// Parses one sort entry: `"field"`, `"_score"`, `{"field": "desc"}` or
/// `{"field": {"order": "desc", "missing": "_first"}}`.
fn sort_entry(v: &Value, searcher: &Searcher) -> Result<SortField, ApiError> {
    let (name, opts) = match v {
        Value::String(s) => (s.as_str(), None),
        Value::Object(m) if m.len() == 1 => {
            let (k, o) = m.iter().next().expect("one entry");
            (k.as_str(), Some(o))
        }
        _ => {
            return Err(ApiError::parsing(
                "[sort] entries are a field name or {\"field\": {\"order\": ...}}",
            ))
        }
    };
    let key = match name {
        "_score" => SortKey::Score,
        "_doc" => SortKey::IndexOrder,
        f => {
            let schema = searcher.schema();
            let id = schema
                .field_id(f)
                .filter(|_| f != crate::mapping::ID_FIELD)
                .ok_or_else(|| {
                    ApiError::parsing(format!("No mapping found for [{f}] in order to sort on"))
                })?;
            let entry = schema.field(id);
            if !entry.has_column() {
                return Err(ApiError::illegal(format!(
                    "Fielddata is disabled on [{f}]: {} fields cannot be sorted on; use a keyword field{}",
                    entry.field_type,
                    if entry.field_type == FieldType::Text { "" } else { " or enable doc_values" }
                )));
            }
            SortKey::Field(f.to_string())
        }
    };
    let mut field = SortField {
        descending: key == SortKey::Score,
        key,
        missing_first: false,
    };
    let order = |o: &Value| match o.as_str() {
        Some("asc") => Ok(false),
        Some("desc") => Ok(true),
        _ => Err(ApiError::parsing(format!(
            "[sort] order of [{name}] must be \"asc\" or \"desc\", not {o}"
        ))),
    };
    match opts {
        None => {}
        Some(o @ Value::String(_)) => field.descending = order(o)?,
        Some(Value::Object(m)) => {
            for (k, o) in m {
                match k.as_str() {
                    "order" => field.descending = order(o)?,
                    "missing" if name != "_score" && name != "_doc" => {
                        field.missing_first = match o.as_str() {
                            Some("_first") => true,
                            Some("_last") => false,
                            _ => {
                                return Err(ApiError::illegal(format!(
                                    "[sort] missing of [{name}]: quarry supports \"_first\" and \"_last\", not {o}"
                                )))
                            }
                        }
                    }
                    "mode" => {
                        let want = if field.descending { "max" } else { "min" };
                        if o.as_str() != Some(want) {
                            return Err(ApiError::illegal(format!(
                                "[sort] mode {o} of [{name}] is not supported: quarry sorts multi-valued fields by their smallest value ascending and largest descending (mode {want} here)"
                            )));
                        }
                    }
                    other => {
                        return Err(ApiError::parsing(format!(
                            "[sort] option [{other}] of [{name}] is not supported (supported: order, missing, mode)"
                        )))
                    }
                }
            }
        }
        Some(other) => {
            return Err(ApiError::parsing(format!(
                "[sort] options of [{name}] must be a string or an object, not {other}"
            )))
        }
    }
    Ok(field)
}

/// Parses `sort`: one entry or an array of them; the URL form is `field:desc,other`.
fn parse_sort(v: &Value, searcher: &Searcher) -> Result<Vec<SortField>, ApiError> {
    match v {
        Value::Array(a) => a.iter().map(|e| sort_entry(e, searcher)).collect(),
        Value::String(s) if s.contains([',', ':']) => s
            .split(',')
            .map(|part| {
                let e = match part.split_once(':') {
                    Some((f, o)) => serde_json::json!({ f: o }),
                    None => Value::String(part.to_string()),
                };
                sort_entry(&e, searcher)
            })
            .collect(),
        other => Ok(vec![sort_entry(other, searcher)?]),
    }
}

/// Parses `search_after` for `sort`: one value per sort key, as the hits' `sort` arrays give.
fn parse_search_after(
    v: &Value,
    sort: &[SortField],
    searcher: &Searcher,
) -> Result<Vec<SortValue>, ApiError> {
    let Value::Array(vals) = v else {
        return Err(ApiError::parsing("[search_after] must be an array"));
    };
    if sort.is_empty() {
        return Err(ApiError::illegal(
            "[search_after] needs a [sort] (quarry pages by sort values; add \"sort\": [\"_score\", \"_doc\"] to page by relevance)",
        ));
    }
    if vals.len() != sort.len() {
        return Err(ApiError::illegal(format!(
            "search_after has {} value(s) but sort has {}",
            vals.len(),
            sort.len()
        )));
    }
    let schema = searcher.schema();
    sort.iter()
        .zip(vals)
        .map(|(s, v)| {
            let bad = || {
                ApiError::parsing(format!(
                    "[search_after] value {v} does not fit the sort key {:?}",
                    s.key
                ))
            };
            Ok(match (&s.key, v) {
                (_, Value::Null) => SortValue::Missing,
                (SortKey::Score, Value::Number(n)) => {
                    SortValue::Score(n.as_f64().ok_or_else(bad)? as f32)
                }
                (SortKey::IndexOrder, Value::Number(n)) => {
                    SortValue::Seq(n.as_u64().ok_or_else(bad)?)
                }
                (SortKey::Field(f), v) => {
                    let ft = schema.field_by_name(f).map(|e| e.field_type);
                    match (ft, v) {
                        (Some(FieldType::Float), Value::Number(n)) => {
                            SortValue::Float(n.as_f64().ok_or_else(bad)?)
                        }
                        (Some(FieldType::Integer | FieldType::Date), Value::Number(n)) => {
                            SortValue::Int(n.as_i64().ok_or_else(bad)?)
                        }
                        (Some(FieldType::Date | FieldType::Keyword), Value::String(t)) => {
                            SortValue::Str(t.clone())
                        }
                        (Some(FieldType::Boolean), Value::Bool(b)) => SortValue::Bool(*b),
                        (Some(FieldType::Boolean), Value::Number(n))
                            if n.as_u64().is_some_and(|x| x < 2) =>
                        {
                            SortValue::Bool(n.as_u64() == Some(1))
                        }
                        _ => return Err(bad()),
                    }
                }
                _ => return Err(bad()),
            })
        })
        .collect()
}

/// A sort value as a hit's `sort` array shows it (booleans as 1 and 0, dates as epoch
/// milliseconds, a missing value as null).
fn sort_value_json(v: &SortValue) -> Value {
    match v {
        SortValue::Int(i) => json!(i),
        SortValue::Float(x) => json!(x),
        SortValue::Bool(b) => json!(u8::from(*b)),
        SortValue::Str(s) => json!(s),
        SortValue::Score(x) => json!(x),
        SortValue::Seq(x) => json!(x),
        SortValue::Missing => Value::Null,
    }
}

fn bool_of(v: &Value, what: &str) -> Result<bool, ApiError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s.is_empty() => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        _ => Err(ApiError::parsing(format!(
            "[{what}] must be true or false, not {v}"
        ))),
    }
}

fn usize_of(v: &Value, what: &str) -> Result<usize, ApiError> {
    match v {
        Value::Number(n) => n.as_u64().map(|x| x as usize),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| ApiError::parsing(format!("[{what}] must be a non-negative integer")))
}

/// Parses `_source`: `true`/`false`, a pattern, a list of patterns, or `{includes, excludes}`.
pub fn parse_source(v: &Value) -> Result<SourceFilter, ApiError> {
    let list = |v: &Value| -> Result<Vec<String>, ApiError> {
        match v {
            Value::String(s) => Ok(s.split(',').map(str::to_string).collect()),
            Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ApiError::parsing("[_source] patterns must be strings"))
                })
                .collect(),
            _ => Err(ApiError::parsing("[_source] patterns must be strings")),
        }
    };
    Ok(match v {
        Value::Bool(b) => SourceFilter {
            enabled: *b,
            ..Default::default()
        },
        Value::String(s) if s == "true" || s == "false" => SourceFilter {
            enabled: s == "true",
            ..Default::default()
        },
        Value::Object(m) => {
            for k in m.keys() {
                if !matches!(k.as_str(), "includes" | "excludes" | "include" | "exclude") {
                    return Err(ApiError::parsing(format!(
                        "[_source] does not support [{k}]"
                    )));
                }
            }
            let get = |a: &str, b: &str| m.get(a).or_else(|| m.get(b)).map(list).transpose();
            SourceFilter {
                enabled: true,
                includes: get("includes", "include")?.unwrap_or_default(),
                excludes: get("excludes", "exclude")?.unwrap_or_default(),
            }
        }
        other => SourceFilter {
            enabled: true,
            includes: list(other)?,
            excludes: vec![],
        },
    })
}

/// `*` matches any run of characters; everything else literally.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

impl SourceFilter {
    /// Applies the filter to a document's source.
    pub fn apply(&self, source: Map<String, Value>) -> Option<Map<String, Value>> {
        if !self.enabled {
            return None;
        }
        Some(
            source
                .into_iter()
                .filter(|(k, _)| {
                    (self.includes.is_empty() || self.includes.iter().any(|p| glob(p, k)))
                        && !self.excludes.iter().any(|p| glob(p, k))
                })
                .collect(),
        )
    }
}

/// Builds a request from the JSON body (may be empty) and the URL parameters (`q`, `df`,
/// `default_operator`, `from`, `size`, `_source`, `track_total_hits`, `timeout`, `version`,
/// `seq_no_primary_term`, `sort`, `track_scores`; the handler has refused any other, see
/// `routes::searching::SEARCH_PARAMS`).
pub fn parse_request(
    body: &Value,
    params: &HashMap<String, String>,
    searcher: &Searcher,
    count_only: bool,
) -> Result<SearchRequest, ApiError> {
    let empty = Map::new();
    let m = match body {
        Value::Null => &empty,
        Value::Object(m) => m,
        _ => return Err(ApiError::parsing("the search body must be an object")),
    };
    let allowed: &[&str] = if count_only {
        &["query"]
    } else {
        &[
            "query",
            "from",
            "size",
            "_source",
            "track_total_hits",
            "timeout",
            "version",
            "seq_no_primary_term",
            "sort",
            "search_after",
            "track_scores",
            "aggs",
            "aggregations",
            "highlight",
            "knn",
            "retriever",
            "explain",
        ]
    };
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::parsing(format!(
                "Unknown key [{k}] in the search body (quarry supports: {})",
                allowed.join(", ")
            )));
        }
    }
    let query = match (m.get("query"), params.get("q")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::illegal(
                "use either the [q] parameter or a [query] in the body, not both",
            ))
        }
        (Some(q), None) => dsl::translate(q, searcher)?,
        (None, Some(q)) => {
            let mut fields: Vec<(String, Option<f32>)> = params
                .get("df")
                .map(|f| vec![(f.clone(), None)])
                .unwrap_or_default();
            let op = dsl::parse_operator(
                params
                    .get("default_operator")
                    .map(|s| Value::String(s.clone()))
                    .as_ref(),
            )?;
            dsl::lucene_syntax(searcher, q, &mut fields, op)?
        }
        (None, None) => Query::MatchAll,
    };
    let pick = |key: &str| -> Option<Value> {
        params
            .get(key)
            .map(|s| Value::String(s.clone()))
            .or_else(|| m.get(key).cloned())
    };
    let from = pick("from")
        .map(|v| usize_of(&v, "from"))
        .transpose()?
        .unwrap_or(0);
    let size = pick("size")
        .map(|v| usize_of(&v, "size"))
        .transpose()?
        .unwrap_or(10);
    if from.saturating_add(size) > MAX_RESULT_WINDOW {
        return Err(ApiError::illegal(format!(
            "Result window is too large, from + size must be less than or equal to: [{MAX_RESULT_WINDOW}] but was [{}]",
            from.saturating_add(size)
        )));
    }
    let track_total = match pick("track_total_hits") {
        None => TrackTotal::UpTo(10_000),
        Some(Value::Bool(true)) => TrackTotal::UpTo(u64::MAX),
        Some(Value::Bool(false)) => TrackTotal::Off,
        Some(Value::String(s)) if s == "true" => TrackTotal::UpTo(u64::MAX),
        Some(Value::String(s)) if s == "false" => TrackTotal::Off,
        Some(v) => TrackTotal::UpTo(usize_of(&v, "track_total_hits")? as u64),
    };
    let source = match pick("_source") {
        None => SourceFilter {
            enabled: true,
            ..Default::default()
        },
        Some(v) => parse_source(&v)?,
    };
    let timeout_ms = match pick("timeout") {
        None => None,
        Some(Value::String(s)) if s.trim() == "-1" => Some(None),
        Some(Value::String(s)) => Some(Some(parse_duration_ms(&s).ok_or_else(|| {
            ApiError::parsing(format!(
                "failed to parse [timeout] value [{s}] (e.g. 500ms, 2s, -1 for none)"
            ))
        })?)),
        Some(_) => {
            return Err(ApiError::parsing(
                "[timeout] must be a string such as \"2s\"",
            ))
        }
    };
    let flag = |k: &str| pick(k).map_or(Ok(false), |v| bool_of(&v, k));
    let version = flag("version")?;
    let seq_no_primary_term = flag("seq_no_primary_term")?;
    let track_scores = flag("track_scores")?;
    let explain = flag("explain")?;
    let sort = match pick("sort") {
        None => Vec::new(),
        Some(v) => parse_sort(&v, searcher)?,
    };
    // Sorting by relevance alone is the default order.
    let sort = if sort.len() == 1 && sort[0] == SortField::score() {
        Vec::new()
    } else {
        sort
    };
    let search_after = match m.get("search_after") {
        None => None,
        Some(v) => {
            if from > 0 {
                return Err(ApiError::illegal(
                    "[from] parameter must be set to 0 when [search_after] is used",
                ));
            }
            Some(parse_search_after(v, &sort, searcher)?)
        }
    };
    let aggs = match (m.get("aggs"), m.get("aggregations")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::parsing(
                "use either [aggs] or [aggregations] in the search body, not both",
            ))
        }
        (Some(v), None) | (None, Some(v)) => {
            let filter = |q: &Value| {
                dsl::translate(q, searcher).map_err(|e| quarry::Error::Query(e.reason.clone()))
            };
            let parsed =
                quarry::aggregation::Aggregations::from_json(v, searcher.schema(), &filter)
                    .map_err(|e| ApiError::parsing(e.to_string()))?;
            Some(parsed)
        }
        (None, None) => None,
    };
    let highlight = m
        .get("highlight")
        .map(crate::highlight::parse)
        .transpose()?;
    if let Some(h) = &highlight {
        h.check(searcher.schema())?;
    }
    let query_given = m.contains_key("query") || params.contains_key("q");
    let ranked = crate::retriever::parse(m, searcher, query_given, size)?;
    Ok(SearchRequest {
        ranked,
        explain,
        highlight,
        aggs,
        version,
        seq_no_primary_term,
        sort,
        search_after,
        track_scores,
        query,
        from,
        size,
        track_total,
        source,
        timeout_ms,
    })
}

impl SearchRequest {
    /// The search options for a request received at `start`: its deadline is `start` plus the
    /// request's `timeout`, or plus the server's `default_timeout` when it gives none (so time
    /// spent waiting for a worker counts against the budget).
    pub fn options(&self, start: Instant, default_timeout: Option<Duration>) -> SearchOptions {
        let budget = match self.timeout_ms {
            None => default_timeout,
            Some(ms) => ms.map(Duration::from_millis),
        };
        SearchOptions {
            deadline: budget.and_then(|b| start.checked_add(b)),
        }
    }
}

/// Runs a search request on one index and builds the Elasticsearch response body; the request
/// arrived at `took_start`, and its time budget is its `timeout` or `default_timeout`. When the
/// budget runs out, the hits are the best found so far, `timed_out` is true and the total is a
/// lower bound (`"relation": "gte"`).
pub fn run(
    handle: &IndexHandle,
    req: &SearchRequest,
    took_start: Instant,
    default_timeout: Option<Duration>,
) -> Result<Value, ApiError> {
    let searcher = handle.searcher();
    let owners = vec![handle; searcher.segments().len()];
    run_on(&searcher, &owners, req, took_start, default_timeout)
}

/// [`run`] on a searcher whose segment `i` belongs to the index `owners[i]` (a searcher over
/// the segments of several indexes with one mapping, see [`crate::multi_index`]).
pub(crate) fn run_on(
    searcher: &Searcher,
    owners: &[&IndexHandle],
    req: &SearchRequest,
    took_start: Instant,
    default_timeout: Option<Duration>,
) -> Result<Value, ApiError> {
    let k = req.from + req.size;
    let mode = match req.track_total {
        // Only the count is asked for: nothing to score.
        TrackTotal::UpTo(_) if k == 0 => SearchMode::Count,
        TrackTotal::Off => SearchMode::Top,
        TrackTotal::UpTo(_) => SearchMode::TopCount,
    };
    if let Some(r) = &req.ranked {
        return crate::retriever::run(searcher, owners, req, r, took_start, default_timeout);
    }
    if !req.sort.is_empty() {
        return run_sorted(searcher, owners, req, took_start);
    }
    let opts = req.options(took_start, default_timeout);
    let result = searcher.search_with(&req.query, k.max(1), mode, &opts)?;
    let mut hits = Vec::new();
    let highlighter = highlighter_of(searcher, req);
    for hit in result.top.iter().skip(req.from).take(req.size) {
        hits.push(hit_json(
            owners[hit.doc.segment as usize],
            req,
            searcher,
            highlighter.as_ref(),
            hit.doc,
            Some(hit.score),
            None,
        )?);
    }
    let max_score = result.top.first().map(|h| h.score);
    let mut hits_obj = json!({"max_score": max_score, "hits": hits});
    let aggregations = aggregations_of(searcher, req)?;
    if let TrackTotal::UpTo(limit) = req.track_total {
        let (value, relation) = if result.total_hits > limit {
            (limit, "gte")
        } else if result.timed_out {
            (result.total_hits, "gte")
        } else {
            (result.total_hits, "eq")
        };
        hits_obj["total"] = json!({"value": value, "relation": relation});
    }
    let shards = shard_count(owners);
    let mut body = json!({
        "took": took_start.elapsed().as_millis() as u64,
        "timed_out": result.timed_out,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": hits_obj,
    });
    if let Some(a) = aggregations {
        body["aggregations"] = a;
    }
    Ok(body)
}

/// The number of indexes among the owners of a searcher's segments (at least 1).
pub(crate) fn shard_count(owners: &[&IndexHandle]) -> usize {
    let mut names: Vec<&str> = owners.iter().map(|h| h.name()).collect();
    names.dedup();
    names.len().max(1)
}

/// The `aggregations` of a request's matches, if it asked for any (over the same searcher as
/// its hits).
pub(crate) fn aggregations_of(
    searcher: &Searcher,
    req: &SearchRequest,
) -> Result<Option<Value>, ApiError> {
    match &req.aggs {
        None => Ok(None),
        Some(aggs) => Ok(Some(searcher.aggregate(&req.query, aggs)?)),
    }
}

/// The highlighting of a request that asks for it.
pub(crate) fn highlighter_of<'r>(
    searcher: &Searcher,
    req: &'r SearchRequest,
) -> Option<crate::highlight::Highlighting<'r>> {
    req.highlight
        .as_ref()
        .map(|h| h.highlighting(&req.query, req.ranked.as_ref(), searcher))
}

/// The hit object of a stored document (`_index`, `_id`, `_score`, the asked-for metadata,
/// `_source`, `highlight`, and `_passage`: the passage a kNN search matched it by).
pub(crate) fn hit_json(
    handle: &IndexHandle,
    req: &SearchRequest,
    searcher: &Searcher,
    highlighter: Option<&crate::highlight::Highlighting<'_>>,
    doc: quarry::DocAddress,
    score: Option<f32>,
    passage: Option<&crate::knn::MatchedPassage>,
) -> Result<Value, ApiError> {
    let stored = searcher.stored_fields(doc)?;
    let highlight = match highlighter {
        Some(h) => h.hit(searcher, doc, &stored)?,
        None => None,
    };
    let id = stored
        .get(crate::mapping::ID_FIELD)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut h = json!({"_index": handle.name(), "_id": id, "_score": score});
    let (source, meta) = split_stored(stored);
    if req.version {
        h["_version"] = json!(meta.version);
    }
    if req.seq_no_primary_term {
        h["_seq_no"] = json!(meta.seq_no);
        h["_primary_term"] = json!(meta.primary_term);
    }
    if let Some(src) = req.source.apply(source) {
        h["_source"] = Value::Object(src);
    }
    if let Some(hl) = highlight {
        h["highlight"] = hl;
    }
    if let Some(p) = passage {
        h["_passage"] = p.to_json();
    }
    if req.explain {
        h["_explanation"] = searcher.explain(&req.query, doc)?.to_json();
    }
    Ok(h)
}

/// A search sorted by fields: hits carry their `sort` values; `_score` is null unless a sort
/// key is the score or `track_scores` is set (as in Elasticsearch). The total is exact.
fn run_sorted(
    searcher: &Searcher,
    owners: &[&IndexHandle],
    req: &SearchRequest,
    took_start: Instant,
) -> Result<Value, ApiError> {
    let k = req.from + req.size;
    let r = searcher.search_sorted(
        &req.query,
        &req.sort,
        k,
        req.search_after.as_deref(),
        req.track_scores,
    )?;
    let scored = req.track_scores || req.sort.iter().any(|s| s.key == SortKey::Score);
    let mut hits = Vec::new();
    let max_score = r.max_score.filter(|_| scored);
    let highlighter = highlighter_of(searcher, req);
    for h in r.hits.iter().skip(req.from).take(req.size) {
        let mut j = hit_json(
            owners[h.hit.doc.segment as usize],
            req,
            searcher,
            highlighter.as_ref(),
            h.hit.doc,
            scored.then_some(h.hit.score),
            None,
        )?;
        j["sort"] = Value::Array(h.values.iter().map(sort_value_json).collect());
        hits.push(j);
    }
    let mut hits_obj = json!({"max_score": max_score, "hits": hits});
    if let TrackTotal::UpTo(limit) = req.track_total {
        let (value, relation) = if r.total_hits > limit {
            (limit, "gte")
        } else {
            (r.total_hits, "eq")
        };
        hits_obj["total"] = json!({"value": value, "relation": relation});
    }
    let shards = shard_count(owners);
    let mut body = json!({
        "took": took_start.elapsed().as_millis() as u64,
        "timed_out": false,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": hits_obj,
    });
    if let Some(a) = aggregations_of(searcher, req)? {
        body["aggregations"] = a;
    }
    Ok(body)
}

/// Runs a `_count` request (no time budget: Elasticsearch's `_count` has none).
pub fn count(handle: &IndexHandle, req: &SearchRequest) -> Result<Value, ApiError> {
    let opts = SearchOptions::default();
    let (_, result) = handle.search(&req.query, 0, SearchMode::Count, &opts)?;
    Ok(json!({
        "count": result.total_hits,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_filters() {
        let src: Map<String, Value> =
            serde_json::from_value(json!({"title": "a", "body": "b", "year": 1})).unwrap();
        let f = parse_source(&json!(["t*"])).unwrap();
        assert_eq!(
            Value::Object(f.apply(src.clone()).unwrap()),
            json!({"title": "a"})
        );
        let f = parse_source(&json!({"excludes": ["body"]})).unwrap();
        assert_eq!(
            Value::Object(f.apply(src.clone()).unwrap()),
            json!({"title": "a", "year": 1})
        );
        assert!(parse_source(&json!(false))
            .unwrap()
            .apply(src.clone())
            .is_none());
        assert!(parse_source(&json!(3)).is_err());
        assert!(glob("*e*", "title"));
        assert!(!glob("b*y", "bodx"));
    }

    #[test]
    fn request_parameters() {
        let schema = quarry::Schema::builder()
            .keyword("_id")
            .text("body", true)
            .build();
        let s = Searcher::new(schema, std::sync::Arc::new(Vec::new()));
        let mut p = HashMap::new();
        p.insert("q".to_string(), "oil".to_string());
        p.insert("size".to_string(), "3".to_string());
        let r = parse_request(&Value::Null, &p, &s, false).unwrap();
        assert_eq!(r.query, Query::term("body", "oil"));
        assert_eq!(r.size, 3);
        let body = json!({"query": {"match_all": {}}, "from": 9990, "size": 20});
        assert!(parse_request(&body, &HashMap::new(), &s, false).is_err());
        let body = json!({"aggs": {"x": {"bogus": {}}}});
        let e = parse_request(&body, &HashMap::new(), &s, false).unwrap_err();
        assert!(e.reason.contains("bogus"), "{}", e.reason);
        let body = json!({"timeout": "2x"});
        assert!(parse_request(&body, &HashMap::new(), &s, false).is_err());
        let body = json!({"timeout": "20ms", "track_total_hits": false});
        let r = parse_request(&body, &HashMap::new(), &s, false).unwrap();
        assert_eq!(r.timeout_ms, Some(Some(20)));
        assert_eq!(r.track_total, TrackTotal::Off);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(r.options(t0, None).deadline, Some(t0 + ms(20)));
        assert_eq!(r.options(t0, Some(ms(500))).deadline, Some(t0 + ms(20)));
        let mut p = HashMap::new();
        p.insert("timeout".to_string(), "-1".to_string());
        let r = parse_request(&Value::Null, &p, &s, false).unwrap();
        assert_eq!(r.timeout_ms, Some(None));
        assert_eq!(r.options(t0, Some(ms(500))).deadline, None);
        let r = parse_request(&Value::Null, &HashMap::new(), &s, false).unwrap();
        assert_eq!(r.options(t0, Some(ms(500))).deadline, Some(t0 + ms(500)));
        assert_eq!(r.options(t0, None).deadline, None);
    }
}
