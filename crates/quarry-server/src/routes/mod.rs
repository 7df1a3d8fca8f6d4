//! Which handler answers which request? The routing table and what every handler shares.
//!
//! The handlers live in one module per group of endpoints: [`admin`] (the root, cluster
//! health, `_cat`, metrics, index lifecycle, refresh and flush), [`documents`] (single-document
//! writes and reads, `_bulk`), [`searching`] (`_search`, `_count`) and [`multi`] (`_mget`,
//! `_msearch`). An endpoint quarry lacks gets Elasticsearch's `no handler found for uri [..]
//! and method [..]` (400), a known path with the wrong method a 405, and a path whose first
//! segment starts with `_` never reads as an index name.
use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::Query as UrlQuery;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::Value;

use crate::error::ApiError;
use crate::AppState;

pub mod admin;
pub mod aliases;
pub mod by_query;
pub mod documents;
pub mod explain;
pub mod multi;
pub mod searching;

use admin::*;
use aliases::*;
use by_query::*;
use documents::*;
use explain::*;
use multi::*;
use searching::*;

type Params = UrlQuery<HashMap<String, String>>;
type ApiResult = Result<Response, ApiError>;

/// The routes of the API (middleware is added by [`crate::app`]).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(root).head(root_head))
        .route("/_metrics", get(metrics))
        .route("/_cat/indices", get(cat_indices))
        .route("/_cat/indices/{index}", get(cat_indices_of))
        .route("/_cluster/health", get(cluster_health))
        .route("/_cluster/health/{index}", get(cluster_health_of))
        .route("/_bulk", post(bulk_all).put(bulk_all))
        .route("/_refresh", post(refresh_all).get(refresh_all))
        .route("/_mget", get(mget_all).post(mget_all))
        .route("/_msearch", get(msearch_all).post(msearch_all))
        .route("/_search", get(search_all).post(search_all))
        .route("/_inference", get(get_inference))
        .route("/_inference/{*rest}", get(get_inference))
        .route("/_count", get(count_all).post(count_all))
        .route("/_aliases", post(update_aliases))
        .route("/_alias", get(get_all_aliases))
        .route(
            "/_alias/{name}",
            get(get_alias_named).head(head_alias_named),
        )
        .route("/{index}/_alias", get(get_index_aliases))
        .route(
            "/{index}/_alias/{name}",
            get(get_index_alias_named)
                .head(head_index_alias_named)
                .put(put_alias)
                .post(put_alias)
                .delete(delete_alias),
        )
        .route(
            "/{index}/_aliases/{name}",
            put(put_alias).post(put_alias).delete(delete_alias),
        )
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
        .route("/{index}/_mget", get(mget_index).post(mget_index))
        .route("/{index}/_msearch", get(msearch_index).post(msearch_index))
        .route("/{index}/_explain/{id}", get(explain_doc).post(explain_doc))
        .route("/{index}/_delete_by_query", post(delete_by_query))
        .route("/{index}/_update_by_query", post(update_by_query))
}

/// Runs blocking engine work on the bounded pool (searches wait for a permit).
pub(crate) async fn blocking<T: Send + 'static>(
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
pub(crate) fn json_body(body: &Bytes) -> Result<Value, ApiError> {
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

pub(crate) fn ok(v: Value) -> ApiResult {
    Ok(Json(v).into_response())
}

pub(crate) fn with_status(status: StatusCode, v: Value) -> ApiResult {
    Ok((status, Json(v)).into_response())
}

pub(crate) fn head(found: bool) -> ApiResult {
    let status = if found {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    Ok((status, [(header::CONTENT_TYPE, "application/json")]).into_response())
}

/// Elasticsearch's answer for a path no handler serves (quarry does not implement it yet).
pub async fn fallback(method: Method, uri: axum::http::Uri) -> ApiResult {
    Err(no_handler(&method, uri.path()))
}

/// `no handler found for uri [..] and method [..]` (400), saying quarry lacks the endpoint.
pub fn no_handler(method: &Method, path: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "illegal_argument_exception",
        format!(
            "no handler found for uri [{path}] and method [{method}] (quarry does not support this endpoint yet)"
        ),
    )
}

/// Paths such as `/_search` or `/_mtermvectors/..` match `/{index}` routes: a first segment starting
/// with `_` is an endpoint quarry lacks, never an index name.
pub(crate) fn not_an_endpoint(method: &Method, index: &str, path: &str) -> Result<(), ApiError> {
    if index.starts_with('_') {
        return Err(no_handler(method, path));
    }
    Ok(())
}

/// Refuses URL parameters an endpoint does not implement (Elasticsearch's wording), so that
/// nothing is silently ignored. `pretty`, `human` and `error_trace` are always accepted (they
/// change only the layout of a response, or nothing).
pub(crate) fn check_params(
    p: &HashMap<String, String>,
    path: &str,
    allowed: &[&str],
) -> Result<(), ApiError> {
    let common = ["pretty", "human", "error_trace"];
    let mut bad: Vec<&str> = p
        .keys()
        .map(String::as_str)
        .filter(|k| !allowed.contains(k) && !common.contains(k))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    bad.sort_unstable();
    let list = bad.join(", ");
    Err(ApiError::illegal(format!(
        "request [{path}] contains unrecognized parameter{}: [{list}] (quarry does not support {})",
        if bad.len() > 1 { "s" } else { "" },
        if bad.len() > 1 { "them" } else { "it" },
    )))
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

/// Drives the whole router in-process, for the handlers' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use serde_json::Value;
    use tower::ServiceExt;

    use crate::AppState;

    /// Sends one request; the body comes back as JSON, or as a JSON string when it is not JSON.
    pub async fn call(
        state: &AppState,
        method: &str,
        uri: &str,
        body: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(Body::from(body.unwrap_or_default().to_string()))
            .unwrap();
        let resp = crate::app(state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::call;
    use crate::{AppState, Config};

    const BOOKS: &str =
        r#"{"mappings": {"properties": {"title": {"type": "text"}, "year": {"type": "long"}}}}"#;

    /// Every endpoint refuses a URL parameter it does not implement with a 400 naming it
    /// (`_search` and `_count` included), and still takes the ones it implements.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unknown_url_parameters_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).unwrap();
        assert_eq!(call(&state, "PUT", "/books", Some(BOOKS)).await.0, 200);
        let doc = r#"{"title": "dune", "year": 1965}"#;
        assert_eq!(
            call(&state, "PUT", "/books/_doc/1?refresh=true", Some(doc))
                .await
                .0,
            201
        );
        for (method, uri, body) in [
            ("GET", "/books/_search?filter_path=hits", None),
            ("POST", "/books/_search?routing=a", Some("{}")),
            ("POST", "/books/_search?preference=_local", None),
            (
                "GET",
                "/books/_search?search_type=dfs_query_then_fetch",
                None,
            ),
            ("GET", "/books/_search?scroll=1m", None),
            ("GET", "/books/_count?size=3", None),
            ("POST", "/books/_count?timeout=1s", Some("{}")),
            ("GET", "/?flat_settings=true", None),
            ("GET", "/_metrics?x=1", None),
            ("GET", "/books?include_defaults=true", None),
            ("PUT", "/other?wait_for_active_shards=1", Some(BOOKS)),
            ("DELETE", "/books?timeout=1s", None),
            ("GET", "/books/_mapping?local=true", None),
            ("POST", "/books/_refresh?ignore_unavailable=true", None),
            ("POST", "/_refresh?expand_wildcards=all", None),
            ("POST", "/books/_flush?force=true", None),
        ] {
            let (s, b) = call(&state, method, uri, body).await;
            let name = uri.split_once('?').unwrap().1.split('=').next().unwrap();
            assert_eq!(s, 400, "{method} {uri}: {b}");
            let reason = b["error"]["reason"].as_str().unwrap();
            assert!(
                reason.contains(&format!("unrecognized parameter: [{name}]")),
                "{method} {uri}: {b}"
            );
        }
        // HEAD answers have no body: the status says it.
        for uri in ["/?x=1", "/books?local=true", "/books/_doc/1?routing=a"] {
            assert_eq!(call(&state, "HEAD", uri, None).await.0, 400, "{uri}");
        }
        // Refused before anything runs: no index was created or deleted.
        assert_eq!(call(&state, "HEAD", "/other", None).await.0, 404);
        assert_eq!(call(&state, "HEAD", "/books", None).await.0, 200);

        // What the endpoints implement still passes.
        for (method, uri, body) in [
            ("GET", "/books/_search?q=dune&df=title&default_operator=and&from=0&size=5&_source=title&track_total_hits=true&timeout=1s&version=true&seq_no_primary_term=true", None),
            ("POST", "/books/_search?pretty&human=true&error_trace=false", Some("{}")),
            ("GET", "/books/_count?q=dune&df=title&default_operator=or", None),
            ("GET", "/?pretty", None),
            ("GET", "/books", None),
            ("GET", "/books/_mapping", None),
            ("POST", "/books/_refresh", None),
            ("POST", "/_refresh", None),
            ("POST", "/books/_flush", None),
        ] {
            let (s, b) = call(&state, method, uri, body).await;
            assert_eq!(s, 200, "{method} {uri}: {b}");
        }
        let (_, b) = call(
            &state,
            "GET",
            "/books/_search?q=dune&df=title&version=true",
            None,
        )
        .await;
        assert_eq!(b["hits"]["hits"][0]["_version"], 1, "{b}");
        // `sort` as the clients send it in the URL (`field:order`, their form with a colon).
        let uri = "/books/_search?sort=year:desc&track_scores=true";
        let (s, b) = call(&state, "GET", uri, None).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            b["hits"]["hits"][0]["sort"],
            serde_json::json!([1965]),
            "{b}"
        );
    }
}
