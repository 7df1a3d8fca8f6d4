//! What do the document endpoints answer? Index, create, update, delete and get one document,
//! and `_bulk`: parameters, `refresh`, and the responses with the real `_version`, `_seq_no`
//! and `_primary_term`.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use super::{blocking, check_params, head, json_body, ok, with_status, ApiResult, Params};
use crate::bulk;
use crate::engine::{Condition, IndexHandle, WriteOp, WriteOutcome};
use crate::error::ApiError;
use crate::mapping::check_index_name;
use crate::search;
use crate::AppState;

/// `?refresh=`: when the write becomes searchable before the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// `false` (default): at the next scheduled refresh.
    No,
    /// `true` or empty: refresh now.
    Force,
    /// `wait_for`: answer once the next refresh shows the write (see `engine::refresh`).
    WaitFor,
}

/// Reads `?refresh=`.
pub fn refresh_param(p: &HashMap<String, String>) -> Result<Refresh, ApiError> {
    match p.get("refresh").map(String::as_str) {
        None | Some("false") => Ok(Refresh::No),
        Some("" | "true") => Ok(Refresh::Force),
        Some("wait_for") => Ok(Refresh::WaitFor),
        Some(other) => Err(ApiError::illegal(format!(
            "[refresh] must be true, false or wait_for, not [{other}]"
        ))),
    }
}

/// Applies writes to one index, waits for the translog fsync, then refreshes or waits for a
/// refresh as asked. Returns the results and whether a refresh was forced.
async fn apply_writes(
    state: &AppState,
    h: Arc<IndexHandle>,
    ops: Vec<WriteOp>,
    refresh: Refresh,
) -> Result<(Vec<Result<WriteOutcome, ApiError>>, bool), ApiError> {
    let h2 = h.clone();
    let (results, seq, generation) = blocking(state, move || {
        let (results, seq, generation) = h2.write_gen(ops);
        h2.sync(seq)?;
        Ok((results, seq, generation))
    })
    .await?;
    let wrote = seq > 0;
    let forced = match refresh {
        Refresh::No => false,
        Refresh::Force => true,
        Refresh::WaitFor => wrote && !h.wait_for_refresh(generation).await,
    };
    if forced && wrote {
        blocking(state, move || h.refresh()).await?;
    }
    Ok((results, forced))
}

/// The body of one write's response (also a `_bulk` item).
fn outcome_json(index: &str, o: &WriteOutcome) -> Value {
    json!({
        "_index": index, "_id": o.id, "_version": o.meta.version, "result": o.result,
        "_shards": {"total": 1, "successful": 1, "failed": 0},
        "_seq_no": o.meta.seq_no, "_primary_term": o.meta.primary_term,
    })
}

const WRITE_PARAMS: [&str; 5] = [
    "refresh",
    "if_seq_no",
    "if_primary_term",
    "version",
    "version_type",
];

async fn doc_write(
    state: AppState,
    index: String,
    op: WriteOp,
    p: &HashMap<String, String>,
) -> ApiResult {
    let refresh = refresh_param(p)?;
    let h = state.indices.get(&index)?;
    // The index itself, also when the path names an alias.
    let index = h.name().to_string();
    let (mut results, forced) = apply_writes(&state, h, vec![op], refresh).await?;
    match results.pop() {
        Some(Ok(o)) => {
            let mut body = outcome_json(&index, &o);
            if forced {
                body["forced_refresh"] = json!(true);
            }
            with_status(o.status, body)
        }
        Some(Err(e)) => Err(e),
        None => Err(ApiError::internal("no result for a write")),
    }
}

fn source_object(body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    match json_body(body)? {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::parsing("the document must be a JSON object")),
    }
}

fn condition(p: &HashMap<String, String>, update: bool) -> Result<Condition, ApiError> {
    Condition::parse(|k| p.get(k).cloned(), update)
}

/// `POST /{index}/_doc`: index with a generated id.
pub async fn post_doc(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_doc"), &["refresh", "op_type"])?;
    let op = WriteOp::Index {
        id: None,
        source: source_object(&body)?,
        create: false,
        cond: Condition::default(),
    };
    doc_write(state, index, op, &p).await
}

/// `PUT|POST /{index}/_doc/{id}` (`op_type=create` as `_create`).
pub async fn put_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let mut allowed = WRITE_PARAMS.to_vec();
    allowed.push("op_type");
    check_params(&p, &format!("/{index}/_doc/{id}"), &allowed)?;
    let create = match p.get("op_type").map(String::as_str) {
        None | Some("index") => false,
        Some("create") => true,
        Some(o) => {
            return Err(ApiError::illegal(format!(
                "[op_type] [{o}] is not index or create"
            )))
        }
    };
    let op = WriteOp::Index {
        id: Some(id),
        source: source_object(&body)?,
        create,
        cond: condition(&p, false)?,
    };
    doc_write(state, index, op, &p).await
}

/// `PUT|POST /{index}/_create/{id}`: 409 when the id exists.
pub async fn create_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(
        &p,
        &format!("/{index}/_create/{id}"),
        &["refresh", "version", "version_type"],
    )?;
    let op = WriteOp::Index {
        id: Some(id),
        source: source_object(&body)?,
        create: true,
        cond: condition(&p, false)?,
    };
    doc_write(state, index, op, &p).await
}

/// Checks `retry_on_conflict`: a count (updates apply under the writer lock, so they never
/// conflict with each other and never need the retries), refused with `if_seq_no` as in
/// Elasticsearch.
pub fn check_retry_on_conflict(value: Option<String>, cond: &Condition) -> Result<(), ApiError> {
    let Some(v) = value else { return Ok(()) };
    if v.trim().parse::<u32>().is_err() {
        return Err(ApiError::illegal(format!(
            "[retry_on_conflict] must be a non-negative integer, not [{v}]"
        )));
    }
    if cond.if_seq.is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "action_request_validation_exception",
            "Validation Failed: 1: compare and write operations can not be retried;",
        ));
    }
    Ok(())
}

/// `POST /{index}/_update/{id}` with a partial `doc`.
pub async fn update_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(
        &p,
        &format!("/{index}/_update/{id}"),
        &[
            "refresh",
            "if_seq_no",
            "if_primary_term",
            "retry_on_conflict",
            "version",
            "version_type",
        ],
    )?;
    let cond = condition(&p, true)?;
    check_retry_on_conflict(p.get("retry_on_conflict").cloned(), &cond)?;
    let mut m = source_object(&body)?;
    for k in m.keys() {
        if k != "doc" {
            return Err(ApiError::unsupported(format!(
                "update with [{k}] (only [doc])"
            )));
        }
    }
    let doc = match m.remove("doc") {
        Some(Value::Object(d)) => d,
        _ => return Err(ApiError::parsing("[update] needs an object [doc]")),
    };
    doc_write(state, index, WriteOp::Update { id, doc, cond }, &p).await
}

/// `DELETE /{index}/_doc/{id}`.
pub async fn delete_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_doc/{id}"), &WRITE_PARAMS)?;
    let cond = condition(&p, false)?;
    doc_write(state, index, WriteOp::Delete { id, cond }, &p).await
}

/// How a document read (`GET /{index}/_doc/{id}`, `_mget`) sees the index: `realtime`
/// (default true) reads the latest write, `false` what the last refresh shows; `refresh`
/// (default false) refreshes the index first, as Elasticsearch's `GET` parameters do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadMode {
    pub realtime: bool,
    pub refresh: bool,
}

impl ReadMode {
    /// Reads `?realtime=` and `?refresh=` (`true`, `false`, or empty for true).
    pub fn from_params(p: &HashMap<String, String>) -> Result<Self, ApiError> {
        let flag = |k: &str, default: bool| match p.get(k).map(String::as_str) {
            None => Ok(default),
            Some("" | "true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(ApiError::illegal(format!(
                "[{k}] must be true or false, not [{other}]"
            ))),
        };
        Ok(ReadMode {
            realtime: flag("realtime", true)?,
            refresh: flag("refresh", false)?,
        })
    }

    /// Reads `id` from `h` in this mode (blocking: call it on the worker pool).
    pub fn get(
        self,
        h: &IndexHandle,
        id: &str,
    ) -> Result<Option<crate::engine::StoredDoc>, ApiError> {
        if self.refresh {
            h.refresh()?;
        }
        if self.realtime {
            h.get(id)
        } else {
            h.get_refreshed(id)
        }
    }
}

async fn fetch_doc(
    state: &AppState,
    index: &str,
    id: String,
    mode: ReadMode,
) -> Result<Option<crate::engine::StoredDoc>, ApiError> {
    let h = state.indices.get(index)?;
    blocking(state, move || mode.get(&h, &id)).await
}

/// The `_source` filter of the URL parameters of a document read (`GET /{index}/_doc/{id}`,
/// `_mget`), as Elasticsearch reads them: `_source` is `true`, `false` or patterns;
/// `_source_includes` replaces its patterns and `_source_excludes` adds excluded ones, and
/// either turns `_source` on unless `_source=false` turned it off.
pub fn source_params(p: &HashMap<String, String>) -> Result<search::SourceFilter, ApiError> {
    let mut filter = match p.get("_source") {
        Some(s) => search::parse_source(&Value::String(s.clone()))?,
        None => search::SourceFilter {
            enabled: true,
            ..Default::default()
        },
    };
    let patterns = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    if let Some(s) = p.get("_source_includes") {
        filter.includes = patterns(s);
    }
    if let Some(s) = p.get("_source_excludes") {
        filter.excludes = patterns(s);
    }
    Ok(filter)
}

/// `GET /{index}/_doc/{id}` (realtime unless `realtime=false`).
pub async fn get_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(
        &p,
        &format!("/{index}/_doc/{id}"),
        &[
            "_source",
            "_source_includes",
            "_source_excludes",
            "realtime",
            "refresh",
        ],
    )?;
    let filter = source_params(&p)?;
    let mode = ReadMode::from_params(&p)?;
    let found = fetch_doc(&state, &index, id.clone(), mode).await?;
    // The index itself, also when the path names an alias.
    let index = state
        .indices
        .get(&index)
        .map_or(index, |h| h.name().to_string());
    match found {
        Some((src, meta)) => {
            let mut body = json!({"_index": index, "_id": id, "_version": meta.version,
                                  "_seq_no": meta.seq_no, "_primary_term": meta.primary_term,
                                  "found": true});
            if let Some(s) = filter.apply(src) {
                body["_source"] = Value::Object(s);
            }
            ok(body)
        }
        None => with_status(
            StatusCode::NOT_FOUND,
            json!({"_index": index, "_id": id, "found": false}),
        ),
    }
}

/// `HEAD /{index}/_doc/{id}`.
pub async fn head_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_doc/{id}"), &["realtime", "refresh"])?;
    let mode = ReadMode::from_params(&p)?;
    head(fetch_doc(&state, &index, id, mode).await?.is_some())
}

/// `POST|PUT /_bulk`.
pub async fn bulk_all(
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, "/_bulk", &["refresh"])?;
    bulk_common(state, None, p, body).await
}

/// `POST|PUT /{index}/_bulk`.
pub async fn bulk_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_bulk"), &["refresh"])?;
    bulk_common(state, Some(index), p, body).await
}

/// The writes of one index in a bulk request, with each one's slot in the request.
struct Group {
    index: String,
    slots: Vec<usize>,
    ops: Vec<WriteOp>,
}

/// Groups bulk items by index (keeping each item's slot so the response follows the request
/// order); returns the groups and each slot's action name and id.
fn group_items(items: Vec<bulk::BulkItem>) -> (Vec<Group>, Vec<(&'static str, Option<String>)>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut slots = Vec::with_capacity(items.len());
    for (slot, item) in items.into_iter().enumerate() {
        let id = match &item.op {
            WriteOp::Index { id, .. } => id.clone(),
            WriteOp::Update { id, .. } | WriteOp::Delete { id, .. } => Some(id.clone()),
        };
        slots.push((item.op.action(), id));
        match groups.iter_mut().find(|g| g.index == item.index) {
            Some(g) => {
                g.slots.push(slot);
                g.ops.push(item.op);
            }
            None => groups.push(Group {
                index: item.index,
                slots: vec![slot],
                ops: vec![item.op],
            }),
        }
    }
    (groups, slots)
}

async fn bulk_common(
    state: AppState,
    default_index: Option<String>,
    p: HashMap<String, String>,
    body: Bytes,
) -> ApiResult {
    let start = Instant::now();
    let refresh = refresh_param(&p)?;
    let items = bulk::parse(&body, default_index.as_deref())?;
    let (groups, slots) = group_items(items);
    let mut results: Vec<Option<Result<WriteOutcome, ApiError>>> = vec![None; slots.len()];
    let mut indexes = vec![String::new(); slots.len()];
    for g in groups {
        for s in &g.slots {
            indexes[*s] = g.index.clone();
        }
        let outcome = match check_index_name(&g.index).and_then(|_| state.indices.get(&g.index)) {
            Ok(h) => {
                for s in &g.slots {
                    indexes[*s] = h.name().to_string();
                }
                apply_writes(&state, h, g.ops, refresh).await
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok((rs, _forced)) => {
                for (s, r) in g.slots.into_iter().zip(rs) {
                    results[s] = Some(r);
                }
            }
            Err(e) => {
                for s in g.slots {
                    results[s] = Some(Err(e.clone()));
                }
            }
        }
    }
    let (errors, items) = bulk_items(results, &indexes, &slots);
    ok(json!({"took": start.elapsed().as_millis() as u64, "errors": errors, "items": items}))
}

/// The `items` of a bulk response, and whether any failed.
fn bulk_items(
    results: Vec<Option<Result<WriteOutcome, ApiError>>>,
    indexes: &[String],
    slots: &[(&'static str, Option<String>)],
) -> (bool, Vec<Value>) {
    let mut errors = false;
    let items = results
        .into_iter()
        .enumerate()
        .map(|(slot, r)| {
            let index = &indexes[slot];
            let (action, id) = &slots[slot];
            let body = match r {
                Some(Ok(o)) => {
                    let mut b = outcome_json(index, &o);
                    b["status"] = json!(o.status.as_u16());
                    b
                }
                Some(Err(e)) => {
                    errors = true;
                    json!({"_index": index, "_id": id, "status": e.status.as_u16(),
                           "error": e.error_object()})
                }
                None => {
                    errors = true;
                    let e = ApiError::internal("not executed");
                    json!({"_index": index, "_id": id, "status": 500, "error": e.error_object()})
                }
            };
            json!({*action: body})
        })
        .collect();
    (errors, items)
}
