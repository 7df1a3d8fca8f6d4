//! What do `_delete_by_query` and `_update_by_query` answer? Every document a query matches,
//! deleted (or re-indexed unchanged) through the ordinary write path.
//!
//! As in Elasticsearch, the matches are those of the last refresh (a point-in-time view); each
//! is then written with `if_seq_no`/`if_primary_term` of the version the search saw, in
//! batches of [`BATCH`]. A document changed since that refresh is a version conflict:
//! `conflicts=abort` (the default) stops after the batch and lists the conflicts in
//! `failures` (status 409); `conflicts=proceed` counts them in `version_conflicts` and goes on.
//! Every delete or re-index is one translog record like any other write, fsynced before the
//! answer, and searchable after the next refresh (`refresh=true`: before the answer).
//! `_update_by_query` without a script re-indexes each match unchanged (its `_version` grows),
//! as Elasticsearch does; a `script` is refused with a 400 naming it.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{Method, StatusCode};
use serde_json::{json, Map, Value};

use super::{blocking, check_params, json_body, not_an_endpoint, with_status, ApiResult, Params};
use crate::engine::{split_stored, Condition, IndexHandle, WriteOp};
use crate::error::ApiError;
use crate::resolve::{IndicesOptions, INDICES_PARAMS};
use crate::search;
use crate::AppState;

/// Documents written per batch (Elasticsearch's default `scroll_size`).
pub const BATCH: usize = 1000;

/// The URL parameters both endpoints implement.
const PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "conflicts",
    "refresh",
    "max_docs",
    "wait_for_completion",
    "ignore_unavailable",
    "allow_no_indices",
];

/// Which of the two endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Delete,
    Update,
}

/// A parsed by-query request.
struct Request {
    query_body: Value,
    query_params: HashMap<String, String>,
    proceed: bool,
    refresh: bool,
    max_docs: Option<u64>,
}

/// The running totals of the response.
#[derive(Default)]
struct Totals {
    total: u64,
    done: u64,
    batches: u64,
    version_conflicts: u64,
    failures: Vec<Value>,
    status: Option<StatusCode>,
}

fn parse(kind: Kind, body: &Value, p: &HashMap<String, String>) -> Result<Request, ApiError> {
    let empty = Map::new();
    let m = match body {
        Value::Null => &empty,
        Value::Object(m) => m,
        _ => return Err(ApiError::parsing("the request body must be an object")),
    };
    for k in m.keys() {
        match k.as_str() {
            "query" | "max_docs" | "conflicts" => {}
            "script" if kind == Kind::Update => {
                return Err(ApiError::unsupported(
                    "[script] in _update_by_query (quarry re-indexes the matching documents unchanged; send no script)",
                ))
            }
            other => {
                return Err(ApiError::parsing(format!(
                    "Unknown key [{other}] in the request body (quarry supports: query, max_docs, conflicts)"
                )))
            }
        }
    }
    let conflicts = p
        .get("conflicts")
        .map(|s| Value::String(s.clone()))
        .or_else(|| m.get("conflicts").cloned());
    let proceed = match conflicts.as_ref().map(|v| v.as_str()) {
        None | Some(Some("abort")) => false,
        Some(Some("proceed")) => true,
        Some(_) => {
            return Err(ApiError::illegal(format!(
                "[conflicts] must be abort or proceed, not {}",
                conflicts.unwrap_or_default()
            )))
        }
    };
    let refresh = match p.get("refresh").map(String::as_str) {
        None | Some("false") => false,
        Some("" | "true") => true,
        Some(o) => {
            return Err(ApiError::illegal(format!(
                "[refresh] of a by-query request must be true or false, not [{o}]"
            )))
        }
    };
    if let Some(w) = p.get("wait_for_completion") {
        if w != "true" && !w.is_empty() {
            return Err(ApiError::illegal(format!(
                "[wait_for_completion={w}] is not supported (quarry answers when the request is done; tasks are not implemented)"
            )));
        }
    }
    let max_docs = match (p.get("max_docs"), m.get("max_docs")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::illegal(
                "use either the [max_docs] parameter or [max_docs] in the body, not both",
            ))
        }
        (Some(s), None) => Some(s.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            ApiError::illegal(format!("[max_docs] must be a positive integer, not [{s}]"))
        })?),
        (None, Some(v)) => Some(v.as_u64().filter(|&n| n > 0).ok_or_else(|| {
            ApiError::illegal(format!("[max_docs] must be a positive integer, not {v}"))
        })?),
        (None, None) => None,
    };
    let query_body = match m.get("query") {
        Some(q) => json!({ "query": q }),
        None => Value::Null,
    };
    let query_params = p
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "q" | "df" | "default_operator"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Request {
        query_body,
        query_params,
        proceed,
        refresh,
        max_docs,
    })
}

/// A match as the search saw it: id, source and metadata.
type Found = (String, Map<String, Value>, crate::engine::DocMeta);

/// The matches of the request's query in `h`'s last refresh: `(id, source, metadata)` in index
/// order, at most `limit`.
fn matches(h: &IndexHandle, req: &Request, limit: u64) -> Result<Vec<Found>, ApiError> {
    let searcher = h.searcher();
    let parsed = search::parse_request(&req.query_body, &req.query_params, &searcher, true)?;
    let per_segment = searcher.matching_docs(&parsed.query)?;
    let mut out = Vec::new();
    for (segment, docs) in per_segment.into_iter().enumerate() {
        for doc in docs {
            if out.len() as u64 >= limit {
                return Ok(out);
            }
            let stored = searcher.stored_fields(quarry::DocAddress {
                segment: segment as u32,
                doc,
            })?;
            let id = stored
                .get(crate::mapping::ID_FIELD)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let (source, meta) = split_stored(stored);
            out.push((id, source, meta));
        }
    }
    Ok(out)
}

/// One match to write: the index (position in the resolved list), id, source and the
/// metadata the search saw.
type Match = (usize, String, Map<String, Value>, crate::engine::DocMeta);

/// The write of one match: conditional on the version the search saw.
fn op(kind: Kind, id: &str, source: &Map<String, Value>, meta: &crate::engine::DocMeta) -> WriteOp {
    let cond = Condition {
        if_seq: Some((meta.seq_no, meta.primary_term)),
        version: None,
    };
    match kind {
        Kind::Delete => WriteOp::Delete {
            id: id.to_string(),
            cond,
        },
        Kind::Update => WriteOp::Index {
            id: Some(id.to_string()),
            source: source.clone(),
            create: false,
            cond,
        },
    }
}

/// Runs the request over `handles`: the matches of every index (in index order, at most
/// `max_docs`), written in batches of [`BATCH`]; stops after a batch with a failure unless
/// conflicts proceed.
fn run(handles: &[Arc<IndexHandle>], kind: Kind, req: &Request) -> Result<Totals, ApiError> {
    let mut t = Totals::default();
    let mut found: Vec<Match> = Vec::new();
    for (i, h) in handles.iter().enumerate() {
        let limit = req
            .max_docs
            .map_or(u64::MAX, |m| m.saturating_sub(found.len() as u64));
        let ms = matches(h, req, limit).map_err(|e| e.in_index(h.name()))?;
        found.extend(ms.into_iter().map(|(id, src, meta)| (i, id, src, meta)));
    }
    t.total = found.len() as u64;
    let mut last_seq = vec![0u64; handles.len()];
    for batch in found.chunks(BATCH) {
        t.batches += 1;
        let mut failed = false;
        // Consecutive matches of one index go to it as one write.
        for group in batch.chunk_by(|a, b| a.0 == b.0) {
            let h = &handles[group[0].0];
            let ops = group
                .iter()
                .map(|(_, id, src, meta)| op(kind, id, src, meta))
                .collect();
            let (results, seq) = h.write(ops);
            last_seq[group[0].0] = last_seq[group[0].0].max(seq);
            for ((_, id, _, _), r) in group.iter().zip(results) {
                match r {
                    Ok(_) => t.done += 1,
                    Err(e) if e.status == StatusCode::CONFLICT && req.proceed => {
                        t.version_conflicts += 1
                    }
                    Err(e) => {
                        if e.status == StatusCode::CONFLICT {
                            t.version_conflicts += 1;
                        }
                        t.status = Some(t.status.map_or(e.status, |s| s.max(e.status)));
                        t.failures.push(json!({
                            "index": h.name(), "id": id, "cause": e.error_object(),
                            "status": e.status.as_u16(),
                        }));
                        failed = true;
                    }
                }
            }
        }
        if failed {
            break;
        }
    }
    for (h, seq) in handles.iter().zip(last_seq) {
        h.sync(seq)?;
        if req.refresh && seq > 0 {
            h.refresh()?;
        }
    }
    Ok(t)
}

async fn by_query(
    state: AppState,
    method: Method,
    index: String,
    p: HashMap<String, String>,
    body: Bytes,
    kind: Kind,
) -> ApiResult {
    let start = Instant::now();
    let endpoint = match kind {
        Kind::Delete => "_delete_by_query",
        Kind::Update => "_update_by_query",
    };
    let path = format!("/{index}/{endpoint}");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, PARAMS)?;
    debug_assert!(INDICES_PARAMS.iter().all(|k| PARAMS.contains(k)));
    let opts = IndicesOptions::parse(&p)?;
    let req = parse(kind, &json_body(&body)?, &p)?;
    let handles: Vec<Arc<IndexHandle>> = state.indices.resolve(&index, opts)?;
    let t = blocking(&state, move || run(&handles, kind, &req)).await?;
    let mut out = json!({
        "took": start.elapsed().as_millis() as u64,
        "timed_out": false,
        "total": t.total,
        "batches": t.batches,
        "version_conflicts": t.version_conflicts,
        "noops": 0,
        "retries": {"bulk": 0, "search": 0},
        "throttled_millis": 0,
        "requests_per_second": -1.0,
        "throttled_until_millis": 0,
        "failures": t.failures,
    });
    match kind {
        Kind::Delete => out["deleted"] = json!(t.done),
        Kind::Update => {
            out["updated"] = json!(t.done);
            out["deleted"] = json!(0);
        }
    }
    with_status(t.status.unwrap_or(StatusCode::OK), out)
}

/// `POST /{index}/_delete_by_query`.
pub async fn delete_by_query(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    by_query(state, method, index, p, body, Kind::Delete).await
}

/// `POST /{index}/_update_by_query`.
pub async fn update_by_query(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    by_query(state, method, index, p, body, Kind::Update).await
}

#[cfg(test)]
mod tests {
    use super::super::testing::call;
    use crate::{AppState, Config};
    use serde_json::json;

    const MAP: &str = r#"{"mappings": {"properties": {"body": {"type": "text"}, "n": {"type": "long"}}}, "settings": {"refresh_interval": "-1"}}"#;

    async fn setup(state: &AppState, index: &str, n: usize) {
        assert_eq!(
            call(state, "PUT", &format!("/{index}"), Some(MAP)).await.0,
            200
        );
        let mut bulk = String::new();
        for i in 0..n {
            let word = if i % 2 == 0 { "even" } else { "odd" };
            bulk.push_str(&format!(
                "{{\"index\": {{\"_id\": \"{i}\"}}}}\n{{\"body\": \"{word} doc\", \"n\": {i}}}\n"
            ));
        }
        let (s, b) = call(
            state,
            "POST",
            &format!("/{index}/_bulk?refresh=true"),
            Some(&bulk),
        )
        .await;
        assert_eq!(s, 200, "{b}");
    }

    async fn count(state: &AppState, uri: &str) -> u64 {
        let (s, b) = call(state, "GET", uri, None).await;
        assert_eq!(s, 200, "{b}");
        b["count"].as_u64().unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delete_by_query_deletes_durably() {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).unwrap();
        setup(&state, "t", 2500).await;
        let body = r#"{"query": {"match": {"body": "even"}}}"#;
        let (s, b) = call(&state, "POST", "/t/_delete_by_query", Some(body)).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["deleted"], 1250, "{b}");
        assert_eq!(b["total"], 1250, "{b}");
        assert_eq!(b["batches"], 2, "{b}");
        assert_eq!(b["version_conflicts"], 0, "{b}");
        assert_eq!(b["failures"], json!([]), "{b}");
        // Not refreshed yet: the search still shows them; a get is realtime.
        assert_eq!(count(&state, "/t/_count").await, 2500);
        assert_eq!(call(&state, "GET", "/t/_doc/0", None).await.0, 404);
        assert_eq!(call(&state, "POST", "/t/_refresh", None).await.0, 200);
        assert_eq!(count(&state, "/t/_count").await, 1250);
        // `q=` and `refresh=true`, `max_docs`.
        let (s, b) = call(
            &state,
            "POST",
            "/t/_delete_by_query?q=n:%5B0%20TO%2099%5D&refresh=true&max_docs=10",
            None,
        )
        .await;
        assert_eq!((s.as_u16(), b["deleted"].as_u64()), (200, Some(10)), "{b}");
        assert_eq!(count(&state, "/t/_count").await, 1240);
        // The translog replays the deletes after a restart without a commit.
        drop(state);
        let state = AppState::open(Config::new(dir.path())).unwrap();
        assert_eq!(count(&state, "/t/_count").await, 1240);
        assert_eq!(count(&state, "/t/_count?q=body:even").await, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conflicts_abort_or_proceed_and_update_by_query() {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).unwrap();
        setup(&state, "t", 10).await;
        // Changed after the last refresh: the by-query request sees the old version.
        let doc = r#"{"body": "odd changed", "n": 1}"#;
        assert_eq!(call(&state, "PUT", "/t/_doc/1", Some(doc)).await.0, 200);
        let body = r#"{"query": {"match": {"body": "odd"}}}"#;
        let (s, b) = call(&state, "POST", "/t/_delete_by_query", Some(body)).await;
        assert_eq!(s, 409, "{b}");
        assert_eq!(b["version_conflicts"], 1, "{b}");
        assert_eq!(b["failures"][0]["id"], "1", "{b}");
        assert_eq!(b["failures"][0]["status"], 409, "{b}");
        assert_eq!(
            b["failures"][0]["cause"]["type"],
            "version_conflict_engine_exception"
        );
        // The rest of the batch was deleted.
        assert_eq!(b["deleted"], 4, "{b}");
        assert_eq!(call(&state, "POST", "/t/_refresh", None).await.0, 200);
        let doc = r#"{"body": "odd again", "n": 3}"#;
        assert_eq!(call(&state, "PUT", "/t/_doc/3", Some(doc)).await.0, 201);
        let (s, b) = call(
            &state,
            "POST",
            "/t/_update_by_query?conflicts=proceed&refresh=true",
            Some(r#"{"query": {"match_all": {}}}"#),
        )
        .await;
        assert_eq!(s, 200, "{b}");
        // 5 even + doc 1; doc 3 was re-created after the refresh (not seen by the query).
        assert_eq!(b["updated"], 6, "{b}");
        let (_, g) = call(&state, "GET", "/t/_doc/1", None).await;
        assert_eq!(g["_version"], 3, "{g}");
        assert_eq!(g["_source"]["body"], "odd changed", "{g}");
        // Bad input: 400 naming it.
        for (uri, body, name) in [
            (
                "/t/_update_by_query",
                Some(r#"{"script": {"source": "x"}}"#),
                "script",
            ),
            ("/t/_delete_by_query", Some(r#"{"script": {}}"#), "script"),
            ("/t/_delete_by_query?conflicts=maybe", None, "conflicts"),
            ("/t/_delete_by_query?refresh=wait_for", None, "refresh"),
            ("/t/_delete_by_query?max_docs=-1", None, "max_docs"),
            ("/t/_delete_by_query?scroll=1m", None, "scroll"),
            (
                "/t/_delete_by_query",
                Some(r#"{"query": {"nope": {}}}"#),
                "nope",
            ),
            (
                "/t/_delete_by_query?wait_for_completion=false",
                None,
                "wait_for_completion",
            ),
        ] {
            let (s, b) = call(&state, "POST", uri, body).await;
            assert_eq!(s, 400, "{uri}: {b}");
            assert!(
                b["error"]["reason"].as_str().unwrap().contains(name),
                "{uri}: {b}"
            );
        }
        assert_eq!(
            call(&state, "POST", "/missing/_delete_by_query", None)
                .await
                .0,
            404
        );
    }
}
