//! What do the multi-request endpoints answer? `_mget` (many documents by id, across indexes)
//! and `_msearch` (many searches in one NDJSON body). Each item is answered on its own, in the
//! request's order: a missing document, a missing index or a bad search is that item's answer
//! and never fails the others; only a body that cannot be read as a whole is a 400.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{Method, StatusCode};
use serde_json::{json, Map, Value};

use super::documents::{source_params, ReadMode};
use super::{blocking, check_params, json_body, not_an_endpoint, ok, ApiResult, Params};
use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::multi_index;
use crate::resolve::IndicesOptions;
use crate::search::{self, SourceFilter};
use crate::AppState;

/// The URL parameters `_mget` implements: those `GET /{index}/_doc/{id}` takes.
pub const MGET_PARAMS: &[&str] = &[
    "_source",
    "_source_includes",
    "_source_excludes",
    "realtime",
    "refresh",
];

/// The URL parameters `_msearch` implements. `max_concurrent_searches` bounds how many
/// searches run at once; quarry runs them one after the other, within any bound.
pub const MSEARCH_PARAMS: &[&str] = &["max_concurrent_searches"];

/// One document an `_mget` asks for.
#[derive(Debug, Clone, PartialEq)]
struct MgetDoc {
    index: String,
    id: String,
    /// The document's own `_source`, else the URL's.
    source: SourceFilter,
}

/// Elasticsearch's refusal of an `_mget` request that cannot run (a doc without `_id` or
/// `_index`, no docs at all).
fn invalid(reason: String) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "action_request_validation_exception",
        format!("Validation Failed: 1: {reason};"),
    )
}

/// An `_id` as Elasticsearch reads it: a string, or a number written as its text.
fn id_of(v: &Value, what: &str) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(ApiError::parsing(format!("{what} must be a string"))),
    }
}

/// Reads an `_mget` body: `docs` (each with `_id`, and `_index` unless the path gives one, and
/// an optional `_source`) or, with an index in the path, `ids`.
fn parse_mget(
    body: &Value,
    default_index: Option<&str>,
    url_source: &SourceFilter,
) -> Result<Vec<MgetDoc>, ApiError> {
    let m = match body {
        Value::Object(m) => m,
        Value::Null => return Err(ApiError::parsing("_mget needs a body with [docs] or [ids]")),
        _ => return Err(ApiError::parsing("the _mget body must be a JSON object")),
    };
    for k in m.keys() {
        if k != "docs" && k != "ids" {
            return Err(ApiError::parsing(format!(
                "unknown key [{k}] in the _mget body (quarry supports: docs, ids)"
            )));
        }
    }
    let docs = match (m.get("docs"), m.get("ids")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::parsing(
                "use either [docs] or [ids] in the _mget body, not both",
            ))
        }
        (Some(Value::Array(docs)), None) => docs
            .iter()
            .enumerate()
            .map(|(i, d)| parse_mget_doc(i, d, default_index, url_source))
            .collect::<Result<Vec<_>, _>>()?,
        (Some(_), None) => return Err(ApiError::parsing("[docs] must be an array")),
        (None, Some(Value::Array(ids))) => {
            let Some(index) = default_index else {
                return Err(invalid(
                    "[ids] needs an index in the path (/{index}/_mget); use [docs] with [_index]"
                        .into(),
                ));
            };
            ids.iter()
                .enumerate()
                .map(|(i, v)| {
                    Ok(MgetDoc {
                        index: index.to_string(),
                        id: id_of(v, &format!("[ids][{i}]"))?,
                        source: url_source.clone(),
                    })
                })
                .collect::<Result<Vec<_>, ApiError>>()?
        }
        (None, Some(_)) => return Err(ApiError::parsing("[ids] must be an array")),
        (None, None) => return Err(invalid("no documents to get".into())),
    };
    if docs.is_empty() {
        return Err(invalid("no documents to get".into()));
    }
    Ok(docs)
}

/// Reads `docs[i]` of an `_mget` body.
fn parse_mget_doc(
    i: usize,
    d: &Value,
    default_index: Option<&str>,
    url_source: &SourceFilter,
) -> Result<MgetDoc, ApiError> {
    let Value::Object(d) = d else {
        return Err(ApiError::parsing(format!("[docs][{i}] must be an object")));
    };
    for k in d.keys() {
        if !matches!(k.as_str(), "_index" | "_id" | "_source") {
            return Err(ApiError::parsing(format!(
                "unknown key [{k}] in [docs][{i}] (quarry supports: _index, _id, _source)"
            )));
        }
    }
    let index = match (d.get("_index"), default_index) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(_), _) => {
            return Err(ApiError::parsing(format!(
                "[docs][{i}][_index] must be a string"
            )))
        }
        (None, Some(p)) => p.to_string(),
        (None, None) => return Err(invalid(format!("index is missing for doc {i}"))),
    };
    let id = match d.get("_id") {
        None | Some(Value::Null) => return Err(invalid(format!("id is missing for doc {i}"))),
        Some(v) => id_of(v, &format!("[docs][{i}][_id]"))?,
    };
    let source = match d.get("_source") {
        None => url_source.clone(),
        Some(v) => search::parse_source(v)
            .map_err(|e| ApiError::parsing(format!("[docs][{i}][_source]: {}", e.reason)))?,
    };
    Ok(MgetDoc { index, id, source })
}

/// One `_mget` answer: the document as `GET /{index}/_doc/{id}` shows it, `found: false`, or
/// the index's error (Elasticsearch's per-document `error`). `index` is the concrete index
/// when the name resolved (an alias is reported as the index it points to, as Elasticsearch
/// does), else the name asked for.
fn mget_item(
    doc: &MgetDoc,
    index: &str,
    got: Result<Option<crate::engine::StoredDoc>, ApiError>,
) -> Value {
    match got {
        Ok(Some((src, meta))) => {
            let mut body = json!({"_index": index, "_id": doc.id, "_version": meta.version,
                                  "_seq_no": meta.seq_no, "_primary_term": meta.primary_term,
                                  "found": true});
            if let Some(s) = doc.source.apply(src) {
                body["_source"] = Value::Object(s);
            }
            body
        }
        Ok(None) => json!({"_index": index, "_id": doc.id, "found": false}),
        Err(e) => json!({"_index": index, "_id": doc.id, "error": e.error_object()}),
    }
}

async fn mget_common(
    state: AppState,
    index: Option<String>,
    p: HashMap<String, String>,
    body: Bytes,
) -> ApiResult {
    let url_source = source_params(&p)?;
    let mode = ReadMode::from_params(&p)?;
    let docs = parse_mget(&json_body(&body)?, index.as_deref(), &url_source)?;
    // Each index is looked up once; a missing one is the answer of its documents only.
    let mut handles: HashMap<String, Result<Arc<IndexHandle>, ApiError>> = HashMap::new();
    for d in &docs {
        if !handles.contains_key(&d.index) {
            handles.insert(d.index.clone(), state.indices.get(&d.index));
        }
    }
    let items = blocking(&state, move || {
        if mode.refresh {
            // Each index once, before any read (as Elasticsearch refreshes each shard).
            for h in handles.values().flatten() {
                h.refresh()?;
            }
        }
        let mode = ReadMode {
            refresh: false,
            ..mode
        };
        Ok(docs
            .iter()
            .map(|d| match &handles[&d.index] {
                Ok(h) => mget_item(d, h.name(), mode.get(h, &d.id)),
                Err(e) => mget_item(d, &d.index, Err(e.clone())),
            })
            .collect::<Vec<_>>())
    })
    .await?;
    ok(json!({ "docs": items }))
}

/// `GET|POST /_mget`: every doc names its `_index`.
pub async fn mget_all(
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, "/_mget", MGET_PARAMS)?;
    mget_common(state, None, p, body).await
}

/// `GET|POST /{index}/_mget`: docs default to the path's index; `ids` is a list of ids in it.
pub async fn mget_index(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let path = format!("/{index}/_mget");
    not_an_endpoint(&method, &index, &path)?;
    check_params(&p, &path, MGET_PARAMS)?;
    mget_common(state, Some(index), p, body).await
}

/// One search of an `_msearch`: the index it runs on and its body, or why it cannot run.
type MsearchItem = Result<(String, Value), ApiError>;

fn malformed(line: usize, why: impl std::fmt::Display) -> ApiError {
    ApiError::illegal(format!("Malformed msearch request at line [{line}]: {why}"))
}

/// Reads an `_msearch` header line's target index expression: the header's `index` (a name,
/// pattern or comma list, or a list of them), else the path's, else every index. Anything
/// quarry does not implement (other header keys) is that search's error, not the request's.
fn header_index(
    header: &Map<String, Value>,
    default_index: Option<&str>,
    line: usize,
) -> Result<String, ApiError> {
    for k in header.keys() {
        if k != "index" {
            return Err(ApiError::unsupported(format!(
                "the msearch header key [{k}] at line [{line}] (only [index])"
            )));
        }
    }
    let bad = || {
        ApiError::illegal(format!(
            "[index] at line [{line}] must be a string or a list of strings"
        ))
    };
    match header.get("index") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()
            .map(|names| names.join(",")),
        Some(_) => Err(bad()),
        None => Ok(default_index.unwrap_or_default().to_string()),
    }
}

/// Parses an `_msearch` body: header and body lines in pairs (blank lines skipped). A line
/// that is not a JSON object, or a header without its body, fails the whole request with a
/// 400 naming the (1-based) line; what a header asks that quarry lacks fails only its search.
fn parse_msearch(body: &[u8], default_index: Option<&str>) -> Result<Vec<MsearchItem>, ApiError> {
    let mut lines = body
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    let object = |n: usize, l: &[u8]| -> Result<Map<String, Value>, ApiError> {
        match serde_json::from_slice::<Value>(l) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(malformed(n, "the line is not a JSON object")),
            Err(e) => Err(malformed(n, e)),
        }
    };
    let mut items = Vec::new();
    while let Some((n, line)) = lines.next() {
        let header = object(n, line)?;
        let (m, l) = lines
            .next()
            .ok_or_else(|| malformed(n, "the header has no search body line after it"))?;
        let search = object(m, l)?;
        items.push(header_index(&header, default_index, n).map(|i| (i, Value::Object(search))));
    }
    if items.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "action_request_validation_exception",
            "Validation Failed: 1: no requests added;",
        ));
    }
    Ok(items)
}

/// Runs one search of an `_msearch` as `_search` runs it; the answer carries its `status`.
async fn run_one(state: &AppState, item: MsearchItem) -> Value {
    let start = Instant::now();
    let result: Result<Value, ApiError> = async {
        let (index, body) = item?;
        if index.starts_with('_') && index != "_all" {
            return Err(ApiError::illegal(format!(
                "index expression [{index}] is not an index name (names cannot start with '_')"
            )));
        }
        let handles = state.indices.resolve(&index, IndicesOptions::default())?;
        let default_timeout = state.config.default_search_timeout;
        blocking(state, move || {
            multi_index::run(
                &handles,
                &body,
                &HashMap::new(),
                false,
                start,
                default_timeout,
            )
        })
        .await
    }
    .await;
    match result {
        Ok(mut v) => {
            v["status"] = json!(200);
            v
        }
        Err(e) => json!({"error": e.error_object(), "status": e.status.as_u16()}),
    }
}

async fn msearch_common(
    state: AppState,
    index: Option<String>,
    p: HashMap<String, String>,
    body: Bytes,
) -> ApiResult {
    let start = Instant::now();
    if let Some(v) = p.get("max_concurrent_searches") {
        if !v.trim().parse::<u32>().is_ok_and(|n| n > 0) {
            return Err(ApiError::illegal(format!(
                "[max_concurrent_searches] must be a positive integer, not [{v}]"
            )));
        }
    }
    let items = parse_msearch(&body, index.as_deref())?;
    // One after the other: the worker pool bounds the engine work anyway, and one `_msearch`
    // should not take every worker from the requests beside it.
    let mut responses = Vec::with_capacity(items.len());
    for item in items {
        responses.push(run_one(&state, item).await);
    }
    ok(json!({"took": start.elapsed().as_millis() as u64, "responses": responses}))
}

/// `GET|POST /_msearch`: every header names its `index`.
pub async fn msearch_all(
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, "/_msearch", MSEARCH_PARAMS)?;
    msearch_common(state, None, p, body).await
}

/// `GET|POST /{index}/_msearch`: a header without `index` searches the path's index.
pub async fn msearch_index(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let path = format!("/{index}/_msearch");
    not_an_endpoint(&method, &index, &path)?;
    check_params(&p, &path, MSEARCH_PARAMS)?;
    msearch_common(state, Some(index), p, body).await
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::routes::testing::call;
    use crate::{AppState, Config};

    const BOOKS: &str =
        r#"{"mappings": {"properties": {"title": {"type": "text"}, "year": {"type": "long"}}}}"#;

    /// Two indexes, `books` with documents 1 and 2 and `films` with document 1, all refreshed.
    async fn state() -> (tempfile::TempDir, AppState) {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).unwrap();
        for index in ["books", "films"] {
            assert_eq!(
                call(&state, "PUT", &format!("/{index}"), Some(BOOKS))
                    .await
                    .0,
                200
            );
        }
        for (uri, doc) in [
            ("/books/_doc/1", r#"{"title": "dune", "year": 1965}"#),
            (
                "/books/_doc/2",
                r#"{"title": "the dispossessed", "year": 1974}"#,
            ),
            ("/films/_doc/1", r#"{"title": "dune", "year": 2021}"#),
        ] {
            let (s, b) = call(&state, "PUT", &format!("{uri}?refresh=true"), Some(doc)).await;
            assert_eq!(s, 201, "{b}");
        }
        (dir, state)
    }

    /// `_mget` answers each doc in order: found (with `_source` filtered per doc or by the
    /// URL), `found: false`, or the missing index's error; the other docs are unaffected.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mget_answers_each_doc_in_order() {
        let (_dir, state) = state().await;
        let body = r#"{"docs": [
            {"_index": "films", "_id": "1"},
            {"_index": "books", "_id": "9"},
            {"_index": "nope", "_id": "1"},
            {"_index": "books", "_id": 2, "_source": ["year"]},
            {"_index": "books", "_id": "1", "_source": false}]}"#;
        let (s, b) = call(&state, "POST", "/_mget", Some(body)).await;
        assert_eq!(s, 200, "{b}");
        let docs = b["docs"].as_array().unwrap();
        assert_eq!(docs.len(), 5, "{b}");
        assert_eq!(docs[0]["found"], true);
        assert_eq!(docs[0]["_index"], "films");
        assert_eq!(docs[0]["_source"], json!({"title": "dune", "year": 2021}));
        assert_eq!(docs[0]["_version"], 1);
        assert_eq!(
            docs[1],
            json!({"_index": "books", "_id": "9", "found": false})
        );
        assert_eq!(docs[2]["_index"], "nope");
        assert_eq!(docs[2]["_id"], "1");
        assert_eq!(docs[2]["error"]["type"], "index_not_found_exception");
        assert_eq!(docs[2]["error"]["index"], "nope");
        assert!(docs[2].get("found").is_none(), "{b}");
        assert_eq!(docs[3]["_id"], "2");
        assert_eq!(docs[3]["_source"], json!({"year": 1974}));
        assert_eq!(docs[4]["found"], true);
        assert!(docs[4].get("_source").is_none(), "{b}");

        // The path's index, `ids`, and the URL's `_source` parameters (a doc's own wins).
        let (s, b) = call(
            &state,
            "GET",
            "/books/_mget?_source_excludes=year",
            Some(r#"{"ids": ["2", "1", "3"]}"#),
        )
        .await;
        assert_eq!(s, 200, "{b}");
        let ids: Vec<&Value> = b["docs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &d["_id"])
            .collect();
        assert_eq!(ids, [&json!("2"), &json!("1"), &json!("3")]);
        assert_eq!(
            b["docs"][0]["_source"],
            json!({"title": "the dispossessed"})
        );
        assert_eq!(b["docs"][2]["found"], false);
        let body = r#"{"docs": [{"_id": "1"}, {"_index": "films", "_id": "1", "_source": true}]}"#;
        let (s, b) = call(&state, "POST", "/books/_mget?_source=false", Some(body)).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["docs"][0]["_index"], "books");
        assert!(b["docs"][0].get("_source").is_none(), "{b}");
        assert_eq!(b["docs"][1]["_source"]["year"], 2021);
        let (_, b) = call(
            &state,
            "GET",
            "/books/_mget?_source=tit*",
            Some(r#"{"ids": ["1"]}"#),
        )
        .await;
        assert_eq!(b["docs"][0]["_source"], json!({"title": "dune"}), "{b}");
        // The single GET reads the same parameters.
        let (_, b) = call(&state, "GET", "/books/_doc/1?_source_includes=year", None).await;
        assert_eq!(b["_source"], json!({"year": 1965}), "{b}");
        // Realtime, as the single GET: a write not yet refreshed is found, but not with
        // `realtime=false`, which reads what the last refresh shows (`refresh` refreshes first;
        // a realtime read of a changed document refreshes too).
        // (On an index with no scheduled refresh, so that none runs between the steps.)
        let slow = r#"{"settings": {"refresh_interval": "-1"}, "mappings": {"properties": {"title": {"type": "text"}}}}"#;
        assert_eq!(call(&state, "PUT", "/slow", Some(slow)).await.0, 200);
        let (s, _) = call(&state, "PUT", "/slow/_doc/5", Some(r#"{"title": "x"}"#)).await;
        assert_eq!(s, 201);
        let ids = Some(r#"{"ids": ["5"]}"#);
        let (_, b) = call(&state, "POST", "/slow/_mget?realtime=false", ids).await;
        assert_eq!(b["docs"][0]["found"], false, "{b}");
        let (s, _) = call(&state, "GET", "/slow/_doc/5?realtime=false", None).await;
        assert_eq!(s, 404);
        let uri = "/slow/_mget?realtime=false&refresh=true";
        let (_, b) = call(&state, "POST", uri, ids).await;
        assert_eq!(b["docs"][0]["found"], true, "{b}");
        let (s, _) = call(&state, "PUT", "/slow/_doc/6", Some(r#"{"title": "y"}"#)).await;
        assert_eq!(s, 201);
        let (s, _) = call(&state, "GET", "/slow/_doc/6?realtime=false", None).await;
        assert_eq!(s, 404);
        let (_, b) = call(&state, "POST", "/slow/_mget", Some(r#"{"ids": ["6"]}"#)).await;
        assert_eq!(b["docs"][0]["found"], true, "{b}");
        let (s, _) = call(&state, "GET", "/slow/_doc/6?realtime", None).await;
        assert_eq!(s, 200);
        let (s, b) = call(&state, "POST", "/books/_mget?refresh=wait_for", ids).await;
        assert_eq!(s, 400, "{b}");
    }

    /// A body `_mget` cannot run is a 400 that names the problem and where it is.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mget_refuses_bad_bodies_by_position() {
        let (_dir, state) = state().await;
        for (uri, body, needle) in [
            (
                "/_mget",
                r#"{"docs": [{"_index": "books", "_id": "1"}, {"_index": "books"}]}"#,
                "id is missing for doc 1",
            ),
            (
                "/_mget",
                r#"{"docs": [{"_id": "1"}]}"#,
                "index is missing for doc 0",
            ),
            (
                "/_mget",
                r#"{"ids": ["1"]}"#,
                "[ids] needs an index in the path",
            ),
            ("/_mget", r#"{"docs": []}"#, "no documents to get"),
            (
                "/books/_mget",
                r#"{"docs": [{"_id": "1", "routing": "a"}]}"#,
                "unknown key [routing] in [docs][0]",
            ),
            (
                "/books/_mget",
                r#"{"docs": [{"_id": {}}]}"#,
                "[docs][0][_id] must be a string",
            ),
            (
                "/books/_mget",
                r#"{"docs": [{"_id": "1", "_source": 3}]}"#,
                "[docs][0][_source]",
            ),
            ("/books/_mget", r#"{"ids": ["1"], "docs": []}"#, "not both"),
            ("/books/_mget", r#"{"idz": ["1"]}"#, "unknown key [idz]"),
            ("/books/_mget", r#"{"ids": "1"}"#, "[ids] must be an array"),
            ("/books/_mget", r#"[1]"#, "must be a JSON object"),
            ("/books/_mget", r#"{"ids": ["1"]"#, "line 1 column"),
            (
                "/books/_mget?stored_fields=a",
                r#"{"ids": ["1"]}"#,
                "unrecognized parameter: [stored_fields]",
            ),
            (
                "/books/_mget?realtime=no",
                r#"{"ids": ["1"]}"#,
                "[realtime] must be true or false, not [no]",
            ),
            (
                "/_mget?routing=a",
                r#"{"ids": ["1"]}"#,
                "unrecognized parameter: [routing]",
            ),
            ("/_foo/_mget", r#"{"ids": ["1"]}"#, "no handler found"),
        ] {
            let (s, b) = call(&state, "POST", uri, Some(body)).await;
            assert_eq!(s, 400, "{uri} {body}: {b}");
            let reason = b["error"]["reason"].as_str().unwrap();
            assert!(reason.contains(needle), "{uri} {body}: {b}");
        }
    }

    /// Each search of an `_msearch` runs as `_search` would run it; a bad search, a missing
    /// index or an unsupported header is that search's error and the others still answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn msearch_answers_each_search_on_its_own() {
        let (_dir, state) = state().await;
        let search = r#"{"query": {"match": {"title": "dune"}}, "sort": [{"year": "desc"}], "aggs": {"y": {"max": {"field": "year"}}}}"#;
        let body = [
            r#"{"index": "books"}"#,
            search,
            r#"{"index": "books"}"#,
            r#"{"query": {"nonsense": {}}}"#,
            r#"{"index": "nope"}"#,
            "{}",
            "{}",
            r#"{"size": 0}"#,
            r#"{"index": ["films"]}"#,
            search,
            r#"{"index": ["books", "films"]}"#,
            "{}",
            r#"{"index": "books", "routing": "a"}"#,
            "{}",
        ]
        .join("\n")
            + "\n";
        let (s, b) = call(&state, "POST", "/_msearch", Some(body.as_str())).await;
        assert_eq!(s, 200, "{b}");
        let r = b["responses"].as_array().unwrap();
        assert_eq!(r.len(), 7, "{b}");
        let (_, alone) = call(&state, "POST", "/books/_search", Some(search)).await;
        assert_eq!(r[0]["status"], 200);
        assert_eq!(r[0]["hits"], alone["hits"], "{b}");
        assert_eq!(r[0]["aggregations"], alone["aggregations"], "{b}");
        assert_eq!(r[1]["status"], 400, "{b}");
        assert!(
            r[1]["error"]["reason"]
                .as_str()
                .unwrap()
                .contains("nonsense"),
            "{b}"
        );
        assert_eq!(r[2]["status"], 404);
        assert_eq!(r[2]["error"]["type"], "index_not_found_exception");
        // No index: every index (2 books, 1 film).
        assert_eq!(r[3]["status"], 200, "{b}");
        assert_eq!(r[3]["hits"]["total"]["value"], 3, "{b}");
        assert_eq!(r[3]["_shards"]["total"], 2, "{b}");
        assert_eq!(r[4]["status"], 200);
        assert_eq!(r[4]["hits"]["hits"][0]["_index"], "films");
        assert_eq!(r[4]["aggregations"]["y"]["value"], 2021.0, "{b}");
        // Several indexes: one search over both.
        assert_eq!(r[5]["status"], 200, "{b}");
        assert_eq!(r[5]["hits"]["total"]["value"], 3, "{b}");
        let indexes: Vec<&str> = r[5]["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_index"].as_str().unwrap())
            .collect();
        assert!(
            indexes.contains(&"books") && indexes.contains(&"films"),
            "{b}"
        );
        assert_eq!(r[6]["status"], 400);
        assert!(
            r[6]["error"]["reason"]
                .as_str()
                .unwrap()
                .contains("[routing] at line [13]"),
            "{b}"
        );

        // The path's index for headers without one; NDJSON as the clients send it.
        let body = "{}\n{\"size\": 0}\n{\"index\": \"films\"}\n{}\n";
        let (s, b) = call(
            &state,
            "GET",
            "/books/_msearch?max_concurrent_searches=2",
            Some(body),
        )
        .await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["responses"][0]["hits"]["total"]["value"], 2, "{b}");
        assert_eq!(b["responses"][0]["hits"]["hits"], json!([]), "{b}");
        assert_eq!(b["responses"][1]["hits"]["total"]["value"], 1, "{b}");
    }

    /// An `_msearch` body that cannot be read as header and body pairs is a 400 naming the line.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn msearch_refuses_malformed_ndjson_by_line() {
        let (_dir, state) = state().await;
        for (uri, body, needle) in [
            (
                "/books/_msearch",
                "{}\n{}\n{}\n",
                "at line [3]: the header has no search body",
            ),
            (
                "/books/_msearch",
                "{}\n\n{}\n[1]\n{}\n",
                "at line [4]: the line is not a JSON object",
            ),
            ("/books/_msearch", "{}\n{\"query\": \n", "at line [2]"),
            ("/books/_msearch", "\"books\"\n{}\n", "at line [1]"),
            ("/books/_msearch", "\n", "no requests added"),
            (
                "/books/_msearch?max_concurrent_searches=0",
                "{}\n{}\n",
                "[max_concurrent_searches]",
            ),
            (
                "/books/_msearch?typed_keys=true",
                "{}\n{}\n",
                "unrecognized parameter: [typed_keys]",
            ),
            ("/_foo/_msearch", "{}\n{}\n", "no handler found"),
        ] {
            let (s, b) = call(&state, "POST", uri, Some(body)).await;
            assert_eq!(s, 400, "{uri} {body:?}: {b}");
            let reason = b["error"]["reason"].as_str().unwrap();
            assert!(reason.contains(needle), "{uri} {body:?}: {b}");
        }
    }
}
