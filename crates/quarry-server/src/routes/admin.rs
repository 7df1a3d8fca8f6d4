//! What do the cluster-level and index-level admin endpoints answer? `GET /`, `_metrics`,
//! `_cat/indices`, `_cluster/health`, index create/get/delete, `_mapping`, `_refresh`, `_flush`.
use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Value};

use super::{
    blocking, check_params, head, json_body, not_an_endpoint, ok, with_status, ApiResult, Params,
};
use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::mapping::{check_index_name, mappings_of};
use crate::AppState;

/// `GET /`: Elasticsearch's fields (the version quarry's API follows), plus quarry's own name
/// and version under `quarry`, a field the clients do not read.
pub async fn root() -> ApiResult {
    ok(json!({
        "name": node_name(),
        "cluster_name": CLUSTER_NAME,
        "cluster_uuid": "_na_",
        "version": {
            "number": ES_VERSION,
            "build_flavor": "default",
            "build_type": "tar",
            "build_hash": "unknown",
            "build_date": "1970-01-01T00:00:00.000Z",
            "build_snapshot": false,
            "lucene_version": "10.1.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0",
        },
        "tagline": "You Know, for Search",
        "quarry": {"name": "quarry", "version": env!("CARGO_PKG_VERSION")},
    }))
}

/// The Elasticsearch version whose REST API quarry's subset follows.
pub const ES_VERSION: &str = "8.17.0";
/// The cluster name reported by `GET /`, `_cluster/health`.
pub const CLUSTER_NAME: &str = "quarry";

fn node_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "quarry".into())
}

pub async fn root_head() -> ApiResult {
    head(true)
}

pub async fn metrics(State(state): State<AppState>) -> ApiResult {
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

/// Row figures of `_cat/indices` for one index.
fn cat_row(h: &IndexHandle, bytes: Option<&str>) -> Result<Value, ApiError> {
    let g = h.gauges();
    let s = h.settings();
    let health = if s.number_of_replicas > 0 {
        "yellow"
    } else {
        "green"
    };
    let size = byte_size(g.store_bytes, bytes)?;
    Ok(
        json!({"health": health, "status": "open", "index": h.name(), "uuid": h.name(),
              "pri": "1", "rep": s.number_of_replicas.to_string(),
              "docs.count": g.docs.to_string(), "docs.deleted": g.deleted_docs.to_string(),
              "store.size": size, "pri.store.size": size}),
    )
}

/// A byte count as `_cat` prints it: `bytes=b|kb|mb|gb` gives a whole number in that unit,
/// no `bytes` Elasticsearch's human form (`225b`, `4.5kb`, `1.2mb`).
pub fn byte_size(n: u64, unit: Option<&str>) -> Result<String, ApiError> {
    let units = [
        ("b", 1u64),
        ("kb", 1 << 10),
        ("mb", 1 << 20),
        ("gb", 1 << 30),
        ("tb", 1 << 40),
    ];
    if let Some(u) = unit {
        let f = units.iter().find(|x| x.0 == u).ok_or_else(|| {
            ApiError::illegal(format!("[bytes] must be b, kb, mb, gb or tb, not [{u}]"))
        })?;
        return Ok((n / f.1).to_string());
    }
    let (name, f) = units
        .iter()
        .rev()
        .find(|x| n >= x.1)
        .copied()
        .unwrap_or(("b", 1));
    if f == 1 {
        return Ok(format!("{n}b"));
    }
    let v = (n as f64 / f as f64 * 10.0).round() / 10.0;
    Ok(if v.fract() == 0.0 {
        format!("{v:.0}{name}")
    } else {
        format!("{v:.1}{name}")
    })
}

const CAT_COLUMNS: [&str; 10] = [
    "health",
    "status",
    "index",
    "uuid",
    "pri",
    "rep",
    "docs.count",
    "docs.deleted",
    "store.size",
    "pri.store.size",
];

/// `GET /_cat/indices`: text (`v` for headers) or `format=json`.
pub async fn cat_indices(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    cat_common(state.indices.all(), &p, "/_cat/indices")
}

/// `GET /_cat/indices/{index}`.
pub async fn cat_indices_of(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    let h = state.indices.get(&index)?;
    cat_common(vec![h], &p, &format!("/_cat/indices/{index}"))
}

fn cat_common(
    handles: Vec<Arc<IndexHandle>>,
    p: &HashMap<String, String>,
    path: &str,
) -> ApiResult {
    check_params(
        p,
        path,
        &["format", "v", "bytes", "h", "s", "expand_wildcards"],
    )?;
    let rows = handles
        .iter()
        .map(|h| cat_row(h, p.get("bytes").map(String::as_str)))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    if let Some(h) = p.get("h") {
        if h.split(',').any(|c| !CAT_COLUMNS.contains(&c)) {
            return Err(ApiError::illegal(format!(
                "[h] [{h}]: quarry's _cat/indices has the columns {}",
                CAT_COLUMNS.join(", ")
            )));
        }
    }
    let cols: Vec<&str> = match p.get("h") {
        Some(h) => h.split(',').collect(),
        None => CAT_COLUMNS.to_vec(),
    };
    match p.get("format").map(String::as_str) {
        Some("json") => {
            let rows = rows
                .into_iter()
                .map(|r| {
                    Value::Object(
                        cols.iter()
                            .map(|c| (c.to_string(), r[*c].clone()))
                            .collect(),
                    )
                })
                .collect();
            return ok(Value::Array(rows));
        }
        None | Some("txt" | "text") => {}
        Some(f) => {
            return Err(ApiError::illegal(format!(
                "[format] [{f}] is not supported (json or text)"
            )))
        }
    }
    let mut text = String::new();
    if p.contains_key("v") {
        text.push_str(&cols.join(" "));
        text.push('\n');
    }
    for r in rows {
        let line: Vec<&str> = cols
            .iter()
            .map(|c| r[*c].as_str().unwrap_or_default())
            .collect();
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=UTF-8")], text).into_response())
}

/// `GET /_cluster/health`.
pub async fn cluster_health(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    health_common(state.indices.all(), &p, "/_cluster/health")
}

/// `GET /_cluster/health/{index}` (404 for a missing index).
pub async fn cluster_health_of(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    let h = state.indices.get(&index)?;
    health_common(vec![h], &p, &format!("/_cluster/health/{index}"))
}

/// One node holds every primary; replicas are never assigned (yellow), as in Elasticsearch.
/// `wait_for_status` gets 408 with `timed_out: true` when the health is worse (on one node
/// nothing would change by waiting).
fn health_common(
    handles: Vec<Arc<IndexHandle>>,
    p: &HashMap<String, String>,
    path: &str,
) -> ApiResult {
    check_params(
        p,
        path,
        &[
            "wait_for_status",
            "timeout",
            "master_timeout",
            "local",
            "level",
        ],
    )?;
    if let Some(l) = p.get("level") {
        if l != "cluster" {
            return Err(ApiError::illegal(format!(
                "[level] [{l}] is not supported (only cluster)"
            )));
        }
    }
    let primaries = handles.len() as u64;
    let unassigned: u64 = handles
        .iter()
        .map(|h| u64::from(h.settings().number_of_replicas))
        .sum();
    let status = if unassigned > 0 { "yellow" } else { "green" };
    let rank = |s: &str| match s {
        "green" => Ok(0),
        "yellow" => Ok(1),
        "red" => Ok(2),
        other => Err(ApiError::illegal(format!(
            "[wait_for_status] must be green, yellow or red, not [{other}]"
        ))),
    };
    let timed_out = match p.get("wait_for_status") {
        Some(w) => rank(status)? > rank(w)?,
        None => false,
    };
    let total = primaries + unassigned;
    let percent = if total == 0 {
        100.0
    } else {
        primaries as f64 * 100.0 / total as f64
    };
    let body = json!({
        "cluster_name": CLUSTER_NAME, "status": status, "timed_out": timed_out,
        "number_of_nodes": 1, "number_of_data_nodes": 1,
        "active_primary_shards": primaries, "active_shards": primaries,
        "relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": unassigned,
        "unassigned_primary_shards": 0,
        "delayed_unassigned_shards": 0, "number_of_pending_tasks": 0,
        "number_of_in_flight_fetch": 0, "task_max_waiting_in_queue_millis": 0,
        "active_shards_percent_as_number": percent,
    });
    let code = if timed_out {
        StatusCode::REQUEST_TIMEOUT
    } else {
        StatusCode::OK
    };
    with_status(code, body)
}

fn index_info(h: &IndexHandle) -> Value {
    let refresh = match h.settings().refresh_interval_ms {
        Some(ms) => format!("{ms}ms"),
        None => "-1".into(),
    };
    json!({h.name(): {
        "aliases": {},
        "mappings": mappings_of(h.schema()),
        "settings": {"index": {"number_of_shards": "1",
                               "number_of_replicas": h.settings().number_of_replicas.to_string(),
                               "refresh_interval": refresh, "provided_name": h.name()}},
    }})
}

pub async fn get_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
) -> ApiResult {
    not_an_endpoint(&Method::GET, &index, uri.path())?;
    let h = state.indices.get(&index)?;
    ok(index_info(&h))
}

pub async fn head_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
) -> ApiResult {
    not_an_endpoint(&Method::HEAD, &index, uri.path())?;
    head(state.indices.get(&index).is_ok())
}

pub async fn create_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
    body: Bytes,
) -> ApiResult {
    not_an_endpoint(&Method::PUT, &index, uri.path())?;
    let body = json_body(&body)?;
    let indices = state.indices.clone();
    let name = index.clone();
    blocking(&state, move || indices.create(&name, &body).map(|_| ())).await?;
    ok(json!({"acknowledged": true, "shards_acknowledged": true, "index": index}))
}

pub async fn delete_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
) -> ApiResult {
    not_an_endpoint(&Method::DELETE, &index, uri.path())?;
    check_index_name(&index)?;
    let indices = state.indices.clone();
    blocking(&state, move || indices.delete(&index)).await?;
    ok(json!({"acknowledged": true}))
}

pub async fn get_mapping(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
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

pub async fn refresh_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    refresh_handles(&state, vec![h]).await
}

/// `_flush`: commit (durable in the index itself; the translog is emptied).
pub async fn flush_index(State(state): State<AppState>, Path(index): Path<String>) -> ApiResult {
    let h = state.indices.get(&index)?;
    blocking(&state, move || h.commit()).await?;
    ok(json!({"_shards": {"total": 1, "successful": 1, "failed": 0}}))
}

pub async fn refresh_all(State(state): State<AppState>) -> ApiResult {
    let all = state.indices.all();
    refresh_handles(&state, all).await
}
