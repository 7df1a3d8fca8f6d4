//! Which handler answers which request? The REST endpoints and their Elasticsearch shapes.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::bulk;
use crate::engine::{IndexHandle, WriteOp, WriteOutcome};
use crate::error::ApiError;
use crate::mapping::{check_index_name, mappings_of};
use crate::search;
use crate::AppState;

type Params = UrlQuery<HashMap<String, String>>;
type ApiResult = Result<Response, ApiError>;

/// The routes of the API (middleware is added by [`crate::app`]).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(root).head(root_head))
        .route("/_metrics", get(metrics))
        .route("/_cat/indices", get(cat_indices))
        .route("/_bulk", post(bulk_all).put(bulk_all))
        .route("/_refresh", post(refresh_all).get(refresh_all))
        .route(
            "/{index}",
            get(get_index)
                .put(create_index)
                .delete(delete_index)
                .head(head_index),
        )
        .route("/{index}/_mapping", get(get_mapping))
        .route("/{index}/_bulk", post(bulk_index).put(bulk_index))
        .route("/{index}/_refresh", post(refresh_index).get(refresh_index))
        .route("/{index}/_flush", post(flush_index).get(flush_index))
        .route("/{index}/_doc", post(post_doc))
        .route(
            "/{index}/_doc/{id}",
            get(get_doc)
                .head(head_doc)
                .put(put_doc)
                .post(put_doc)
                .delete(delete_doc),
        )
        .route("/{index}/_create/{id}", put(create_doc).post(create_doc))
        .route("/{index}/_update/{id}", post(update_doc))
        .route("/{index}/_search", get(search_index).post(search_index))
        .route("/{index}/_count", get(count_index).post(count_index))
}

/// Runs blocking engine work on the bounded pool (searches wait for a permit).
async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let _permit = state
        .permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("server is shutting down"))?;
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
}

/// Parses a JSON body (empty = null) that passed the size and media-type checks.
fn json_body(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::json(format!(
            "failed to parse the request body as JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })
}

fn ok(v: Value) -> ApiResult {
    Ok(Json(v).into_response())
}

fn with_status(status: StatusCode, v: Value) -> ApiResult {
    Ok((status, Json(v)).into_response())
}

fn head(found: bool) -> ApiResult {
    let status = if found {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    Ok((status, [(header::CONTENT_TYPE, "application/json")]).into_response())
}

async fn root() -> ApiResult {
    ok(json!({
        "name": "quarry",
        "cluster_name": "quarry",
        "cluster_uuid": "_na_",
        "version": {
            "number": "8.17.0",
            "build_flavor": "default",
            "build_type": "quarry",
            "lucene_version": "10.1.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0",
            "distribution": "quarry",
            "quarry_version": env!("CARGO_PKG_VERSION"),
        },
        "tagline": "You Know, for Search",
    }))
}

async fn root_head() -> ApiResult {
    head(true)
}

async fn metrics(State(state): State<AppState>) -> ApiResult {
    let gauges: Vec<_> = state
        .indices
        .all()
        .iter()
        .map(|h| (h.name().to_string(), h.gauges()))
        .collect();
    let text = state.metrics.render(&gauges);
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

async fn cat_indices(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    let rows: Vec<Value> = state
        .indices
        .all()
        .iter()
        .map(|h| {
            let g = h.gauges();
            json!({"health": "green", "status": "open", "index": h.name(), "uuid": h.name(),
                   "pri": "1", "rep": "0", "docs.count": g.docs.to_string(),
                   "docs.deleted": "0"})
        })
        .collect();
    if p.get("format").map(String::as_str) == Some("json") {
        return ok(Value::Array(rows));
    }
    let mut text = String::new();
    if p.contains_key("v") {
        text.push_str("health status index uuid pri rep docs.count docs.deleted\n");
    }
    for r in rows {
        let f = |k: &str| r[k].as_str().unwrap_or_default().to_string();
        text.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            f("health"),
            f("status"),
            f("index"),
            f("uuid"),
            f("pri"),
            f("rep"),
            f("docs.count"),
            f("docs.deleted")
        ));
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=UTF-8")], text).into_response())
}

fn index_info(h: &IndexHandle) -> Value {
    let refresh = match h.settings().refresh_interval_ms {
        Some(ms) => format!("{ms}ms"),
        None => "-1".into(),
    };
    json!({h.name(): {
        "aliases": {},
        "mappings": mappings_of(h.schema()),
        "settings": {"index": {"number_of_shards": "1", "number_of_replicas": "0",
                               "refresh_interval": refresh, "provided_name": h.name()}},
    }})
}

async fn get_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    ok(index_info(&h))
}

async fn head_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    head(state.indices.get(&index).is_ok())
}

async fn create_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    body: Bytes,
) -> ApiResult {
    let body = json_body(&body)?;
    let indices = state.indices.clone();
    let name = index.clone();
    blocking(&state, move || indices.create(&name, &body).map(|_| ())).await?;
    ok(json!({"acknowledged": true, "shards_acknowledged": true, "index": index}))
}

async fn delete_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    check_index_name(&index)?;
    let indices = state.indices.clone();
    blocking(&state, move || indices.delete(&index)).await?;
    ok(json!({"acknowledged": true}))
}

async fn get_mapping(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    ok(json!({index: {"mappings": mappings_of(h.schema())}}))
}

async fn refresh_handles(state: &AppState, handles: Vec<Arc<IndexHandle>>) -> ApiResult {
    let n = handles.len();
    blocking(state, move || {
        for h in handles {
            h.refresh()?;
        }
        Ok(())
    })
    .await?;
    ok(json!({"_shards": {"total": n, "successful": n, "failed": 0}}))
}

async fn refresh_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    refresh_handles(&state, vec![h]).await
}

/// `_flush`: commit (durable in the index itself; the translog is emptied).
async fn flush_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    blocking(&state, move || h.commit()).await?;
    ok(json!({"_shards": {"total": 1, "successful": 1, "failed": 0}}))
}

async fn refresh_all(State(state): State<AppState>) -> ApiResult {
    let all = state.indices.all();
    refresh_handles(&state, all).await
}

/// `?refresh=`: `true`/`""`/`wait_for` refresh after the write, `false` does not.
fn wants_refresh(p: &HashMap<String, String>) -> Result<bool, ApiError> {
    match p.get("refresh").map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("" | "true" | "wait_for") => Ok(true),
        Some(other) => Err(ApiError::illegal(format!(
            "[refresh] must be true, false or wait_for, not [{other}]"
        ))),
    }
}

/// Applies writes to one index, waits for the translog fsync, refreshes if asked.
async fn write_one(
    state: &AppState,
    h: Arc<IndexHandle>,
    ops: Vec<WriteOp>,
    refresh: bool,
) -> Result<Vec<Result<WriteOutcome, ApiError>>, ApiError> {
    blocking(state, move || {
        let (results, seq) = h.write(ops);
        h.sync(seq)?;
        if refresh && results.iter().any(Result::is_ok) {
            h.refresh()?;
        }
        Ok(results)
    })
    .await
}

fn outcome_json(index: &str, o: &WriteOutcome) -> Value {
    json!({
        "_index": index, "_id": o.id, "_version": 1, "result": o.result,
        "_shards": {"total": 1, "successful": 1, "failed": 0},
        "_seq_no": o.seq_no, "_primary_term": 1,
    })
}

async fn doc_write(
    state: AppState,
    index: String,
    op: WriteOp,
    p: &HashMap<String, String>,
) -> ApiResult {
    let refresh = wants_refresh(p)?;
    let h = state.indices.get(&index)?;
    let mut results = write_one(&state, h, vec![op], refresh).await?;
    match results.pop() {
        Some(Ok(o)) => {
            let mut body = outcome_json(&index, &o);
            if refresh {
                body["forced_refresh"] = json!(true);
            }
            with_status(o.status, body)
        }
        Some(Err(e)) => Err(e),
        None => Err(ApiError::internal("no result for a write")),
    }
}

fn source_object(body: &Bytes) -> Result<serde_json::Map<String, Value>, ApiError> {
    match json_body(body)? {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::parsing("the document must be a JSON object")),
    }
}

async fn post_doc(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let op = WriteOp::Index {
        id: None,
        source: source_object(&body)?,
        create: false,
    };
    doc_write(state, index, op, &p).await
}

async fn put_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
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
    };
    doc_write(state, index, op, &p).await
}

async fn create_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let op = WriteOp::Index {
        id: Some(id),
        source: source_object(&body)?,
        create: true,
    };
    doc_write(state, index, op, &p).await
}

async fn update_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
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
    doc_write(state, index, WriteOp::Update { id, doc }, &p).await
}

async fn delete_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    doc_write(state, index, WriteOp::Delete { id }, &p).await
}

async fn fetch_doc(
    state: &AppState,
    index: &str,
    id: String,
) -> Result<Option<serde_json::Map<String, Value>>, ApiError> {
    let h = state.indices.get(index)?;
    blocking(state, move || h.get(&id)).await
}

async fn get_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    let filter = match p.get("_source") {
        Some(s) => search::parse_source(&Value::String(s.clone()))?,
        None => search::SourceFilter {
            enabled: true,
            ..Default::default()
        },
    };
    match fetch_doc(&state, &index, id.clone()).await? {
        Some(src) => {
            let mut body = json!({"_index": index, "_id": id, "_version": 1, "_seq_no": 0,
                                  "_primary_term": 1, "found": true});
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

async fn head_doc(
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
) -> ApiResult {
    head(fetch_doc(&state, &index, id).await?.is_some())
}

async fn search_common(
    state: AppState,
    index: String,
    p: HashMap<String, String>,
    body: Bytes,
    count_only: bool,
) -> ApiResult {
    let start = Instant::now();
    let h = state.indices.get(&index)?;
    let body = json_body(&body)?;
    let default_timeout = state.config.default_search_timeout;
    let out = blocking(&state, move || {
        let req = search::parse_request(&body, &p, &h.searcher(), count_only)?;
        if count_only {
            search::count(&h, &req)
        } else {
            search::run(&h, &req, start, default_timeout)
        }
    })
    .await?;
    ok(out)
}

async fn search_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, index, p, body, false).await
}

async fn count_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, index, p, body, true).await
}

async fn bulk_all(State(state): State<AppState>, UrlQuery(p): Params, body: Bytes) -> ApiResult {
    bulk_common(state, None, p, body).await
}

async fn bulk_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    bulk_common(state, Some(index), p, body).await
}

async fn bulk_common(
    state: AppState,
    default_index: Option<String>,
    p: HashMap<String, String>,
    body: Bytes,
) -> ApiResult {
    let start = Instant::now();
    let refresh = wants_refresh(&p)?;
    let items = bulk::parse(&body, default_index.as_deref())?;
    // Group by index, keeping each item's slot so the response follows the request order.
    let mut groups: Vec<(String, Vec<usize>, Vec<WriteOp>)> = Vec::new();
    let mut actions = Vec::with_capacity(items.len());
    let mut results: Vec<Option<Result<WriteOutcome, ApiError>>> = vec![None; items.len()];
    let mut ids: Vec<Option<String>> = Vec::with_capacity(items.len());
    for (slot, item) in items.into_iter().enumerate() {
        actions.push(item.op.action());
        ids.push(match &item.op {
            WriteOp::Index { id, .. } => id.clone(),
            WriteOp::Update { id, .. } | WriteOp::Delete { id } => Some(id.clone()),
        });
        match groups.iter_mut().find(|g| g.0 == item.index) {
            Some(g) => {
                g.1.push(slot);
                g.2.push(item.op);
            }
            None => groups.push((item.index, vec![slot], vec![item.op])),
        }
    }
    let mut indexes = Vec::with_capacity(results.len());
    indexes.resize(results.len(), String::new());
    for (index, slots, ops) in groups {
        for s in &slots {
            indexes[*s] = index.clone();
        }
        let outcome = match check_index_name(&index).and_then(|_| state.indices.get(&index)) {
            Ok(h) => write_one(&state, h, ops, refresh).await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(rs) => {
                for (s, r) in slots.into_iter().zip(rs) {
                    results[s] = Some(r);
                }
            }
            Err(e) => {
                for s in slots {
                    results[s] = Some(Err(e.clone()));
                }
            }
        }
    }
    let mut errors = false;
    let items: Vec<Value> = results
        .into_iter()
        .enumerate()
        .map(|(slot, r)| {
            let index = &indexes[slot];
            let body = match r {
                Some(Ok(o)) => {
                    let mut b = outcome_json(index, &o);
                    b["status"] = json!(o.status.as_u16());
                    b
                }
                Some(Err(e)) => {
                    errors = true;
                    json!({"_index": index, "_id": ids[slot], "status": e.status.as_u16(),
                           "error": e.error_object()})
                }
                None => {
                    errors = true;
                    let e = ApiError::internal("not executed");
                    json!({"_index": index, "_id": ids[slot], "status": 500, "error": e.error_object()})
                }
            };
            json!({actions[slot]: body})
        })
        .collect();
    ok(json!({"took": start.elapsed().as_millis() as u64, "errors": errors, "items": items}))
}

/// 404-like answer for unknown paths, in Elasticsearch's shape.
pub async fn fallback(method: Method, uri: axum::http::Uri) -> ApiResult {
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        "illegal_argument_exception",
        format!("no handler found for uri [{uri}] and method [{method}]"),
    ))
}

/// Answer for a known path with the wrong method.
pub async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiResult {
    Err(ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "illegal_argument_exception",
        format!("Incorrect HTTP method for uri [{uri}] and method [{method}]"),
    ))
}

/// Reads a request body up to `limit` bytes (413 beyond).
pub async fn read_limited(
    body: Body,
    limit: usize,
    headers: &HeaderMap,
) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_entity_too_large_exception",
            format!(
                "the request body is larger than the limit of {limit} bytes (--max-body-bytes)"
            ),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limit as u64 {
            return Err(too_large());
        }
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
        {
            too_large()
        } else {
            ApiError::parsing(format!("could not read the request body: {e}"))
        }
    })
}
