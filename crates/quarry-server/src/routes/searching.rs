//! What do the search endpoints answer? `_search` and `_count` on one index or on the indexes
//! an expression names (`/_search`, `/a,b/_search`, `/logs-*/_search`, aliases; see
//! [`crate::resolve`] and [`crate::multi_index`]); the request and response shapes live in
//! [`crate::search`].
use std::collections::HashMap;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::Method;

use super::{blocking, check_params, json_body, not_an_endpoint, ok, ApiResult, Params};
use crate::multi_index;
use crate::resolve::IndicesOptions;
use crate::AppState;

/// The URL parameters `_search` implements (see [`crate::search::parse_request`]); any other is
/// refused with a 400 naming it, as Elasticsearch does for the parameters it does not know.
pub const SEARCH_PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "from",
    "size",
    "_source",
    "track_total_hits",
    "timeout",
    "version",
    "seq_no_primary_term",
    "sort",
    "track_scores",
    "explain",
    "ignore_unavailable",
    "allow_no_indices",
];

/// The URL parameters `_count` implements: the query given as `q`.
pub const COUNT_PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "ignore_unavailable",
    "allow_no_indices",
];

async fn search_common(
    state: AppState,
    index: String,
    p: HashMap<String, String>,
    body: Bytes,
    count_only: bool,
    method: Method,
) -> ApiResult {
    let start = Instant::now();
    let endpoint = if count_only { "_count" } else { "_search" };
    let path = if index.is_empty() {
        format!("/{endpoint}")
    } else {
        format!("/{index}/{endpoint}")
    };
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(
        &p,
        &path,
        if count_only {
            COUNT_PARAMS
        } else {
            SEARCH_PARAMS
        },
    )?;
    let opts = IndicesOptions::parse(&p)?;
    let handles = state.indices.resolve(&index, opts)?;
    let body = json_body(&body)?;
    let default_timeout = state.config.default_search_timeout;
    let out = blocking(&state, move || {
        multi_index::run(&handles, &body, &p, count_only, start, default_timeout)
    })
    .await?;
    ok(out)
}

/// `GET|POST /{index}/_search`.
pub async fn search_index(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, index, p, body, false, method).await
}

/// `GET|POST /{index}/_count`.
pub async fn count_index(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, index, p, body, true, method).await
}

/// `GET|POST /_search`: every index.
pub async fn search_all(
    method: Method,
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, String::new(), p, body, false, method).await
}

/// `GET|POST /_count`: every index.
pub async fn count_all(
    method: Method,
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    search_common(state, String::new(), p, body, true, method).await
}
