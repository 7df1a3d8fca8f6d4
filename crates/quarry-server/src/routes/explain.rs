//! What does `_explain` answer? `GET|POST /{index}/_explain/{id}`: whether the document
//! matches the query and Lucene's explanation of its score ([`quarry::Searcher::explain`]),
//! over the last refresh as a search sees it.
use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{Method, StatusCode};
use quarry::query::Query;
use quarry::SearchMode;
use serde_json::json;

use super::{
    blocking, check_params, json_body, not_an_endpoint, ok, with_status, ApiResult, Params,
};
use crate::error::ApiError;
use crate::mapping::ID_FIELD;
use crate::search;
use crate::AppState;

/// The URL parameters `_explain` implements.
const PARAMS: &[&str] = &["q", "df", "default_operator"];

/// `GET|POST /{index}/_explain/{id}` with a `query` body or `q=`.
pub async fn explain_doc(
    method: Method,
    State(state): State<AppState>,
    Path((index, id)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let path = format!("/{index}/_explain/{id}");
    not_an_endpoint(&method, &index, &path)?;
    check_params(&p, &path, PARAMS)?;
    let body = json_body(&body)?;
    if let Some(m) = body.as_object() {
        if let Some(k) = m.keys().find(|k| *k != "query") {
            return Err(ApiError::parsing(format!(
                "Unknown key [{k}] in the explain body (quarry supports: query)"
            )));
        }
    } else if !body.is_null() {
        return Err(ApiError::parsing("the request body must be an object"));
    }
    if body.get("query").is_none() && !p.contains_key("q") {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "action_request_validation_exception",
            "Validation Failed: 1: query is missing;",
        ));
    }
    let h = state.indices.get(&index)?;
    let p: HashMap<String, String> = p;
    let doc_id = id.clone();
    let (name, found) = blocking(&state, move || {
        let searcher = h.searcher();
        let req = search::parse_request(&body, &p, &searcher, true)?;
        let r = searcher.search(&Query::term(ID_FIELD, &id), 1, SearchMode::Top)?;
        let found = match r.top.first() {
            None => None,
            Some(hit) => Some(searcher.explain(&req.query, hit.doc)?),
        };
        Ok((h.name().to_string(), found))
    })
    .await?;
    let id = doc_id;
    match found {
        None => with_status(
            StatusCode::NOT_FOUND,
            json!({"_index": name, "_id": id, "matched": false}),
        ),
        Some(e) => {
            let mut out = json!({"_index": name, "_id": id, "matched": e.matched});
            out["explanation"] = e.to_json();
            ok(out)
        }
    }
}
