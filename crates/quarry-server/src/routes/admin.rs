//! What do the cluster-level and index-level admin endpoints answer? `GET /`, `_metrics`,
//! `_cat/indices`, `_cluster/health`, index create/get/delete, `_mapping`, `_refresh`, `_flush`.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

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
use crate::indices::parse_duration_ms;
use crate::mapping::{check_index_name, mappings_of};
use crate::AppState;

/// `GET /`: Elasticsearch's fields (the version quarry's API follows), plus quarry's own name
/// and version under `quarry`, a field the clients do not read.
pub async fn root(UrlQuery(p): Params) -> ApiResult {
    check_params(&p, "/", &[])?;
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

pub async fn root_head(UrlQuery(p): Params) -> ApiResult {
    check_params(&p, "/", &[])?;
    head(true)
}

pub async fn metrics(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    check_params(&p, "/_metrics", &[])?;
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
    health_common(&state, None, &p, "/_cluster/health").await
}

/// `GET /_cluster/health/{index}` (one name or a comma-separated list). A missing index makes
/// the health red and the request wait, up to `timeout`, for it to be created (Elasticsearch's
/// behaviour): then 408 with `"status": "red"` and `"timed_out": true`.
pub async fn cluster_health_of(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    health_common(
        &state,
        Some(&index),
        &p,
        &format!("/_cluster/health/{index}"),
    )
    .await
}

/// Elasticsearch's default `timeout` of `_cluster/health`.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a health request may wait: `timeout` (`30s` by default, `0s` answers at once). A
/// wait without end (`-1`) is refused: a request never holds the server for an unbounded time.
fn health_timeout(p: &HashMap<String, String>) -> Result<Duration, ApiError> {
    let Some(t) = p.get("timeout") else {
        return Ok(HEALTH_TIMEOUT);
    };
    parse_duration_ms(t).map(Duration::from_millis).ok_or_else(|| {
        ApiError::illegal(format!(
            "failed to parse [timeout] value [{t}]: quarry takes a duration such as 30s, 500ms or 0s \
             (not -1: a health request waits for a bounded time)"
        ))
    })
}

/// Health statuses from best to worst (`wait_for_status` is met by its own and better ones).
fn status_rank(s: &str) -> Result<u8, ApiError> {
    match s {
        "green" => Ok(0),
        "yellow" => Ok(1),
        "red" => Ok(2),
        other => Err(ApiError::illegal(format!(
            "[wait_for_status] must be green, yellow or red, not [{other}]"
        ))),
    }
}

/// The health of the indexes a request names (`None`: every index).
struct Health {
    status: &'static str,
    /// A named index does not exist (the status is then red and every count 0, as in
    /// Elasticsearch).
    missing: bool,
    primaries: u64,
    unassigned: u64,
}

impl Health {
    /// One node holds every primary; replicas are never assigned (yellow), as in Elasticsearch.
    fn of(state: &AppState, names: Option<&[&str]>) -> Health {
        let handles = match names {
            None => state.indices.all(),
            Some(names) => match names.iter().map(|n| state.indices.get(n)).collect() {
                Ok(handles) => handles,
                Err(_) => {
                    return Health {
                        status: "red",
                        missing: true,
                        primaries: 0,
                        unassigned: 0,
                    }
                }
            },
        };
        let unassigned: u64 = handles
            .iter()
            .map(|h| u64::from(h.settings().number_of_replicas))
            .sum();
        Health {
            status: if unassigned > 0 { "yellow" } else { "green" },
            missing: false,
            primaries: handles.len() as u64,
            unassigned,
        }
    }

    fn body(&self, timed_out: bool) -> Value {
        let (primaries, unassigned) = (self.primaries, self.unassigned);
        let total = primaries + unassigned;
        let percent = if total == 0 {
            100.0
        } else {
            primaries as f64 * 100.0 / total as f64
        };
        json!({
            "cluster_name": CLUSTER_NAME, "status": self.status, "timed_out": timed_out,
            "number_of_nodes": 1, "number_of_data_nodes": 1,
            "active_primary_shards": primaries, "active_shards": primaries,
            "relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": unassigned,
            "unassigned_primary_shards": 0,
            "delayed_unassigned_shards": 0, "number_of_pending_tasks": 0,
            "number_of_in_flight_fetch": 0, "task_max_waiting_in_queue_millis": 0,
            "active_shards_percent_as_number": percent,
        })
    }
}

/// Answers at once when every named index exists and the status is at least
/// `wait_for_status`; otherwise waits for indexes to be created or deleted until `timeout`
/// runs out, and then answers 408 with `timed_out: true` and the health at that moment.
async fn health_common(
    state: &AppState,
    index: Option<&str>,
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
    let wait_for = p
        .get("wait_for_status")
        .map(|w| status_rank(w))
        .transpose()?;
    let timeout = health_timeout(p)?;
    let names: Option<Vec<&str>> = match index {
        None | Some("_all" | "*") => None,
        Some(list) => {
            let names: Vec<&str> = list.split(',').collect();
            if let Some(n) = names.iter().find(|n| n.is_empty() || n.contains('*')) {
                return Err(ApiError::illegal(format!(
                    "[{n}] in [{list}]: quarry's _cluster/health takes index names, not patterns"
                )));
            }
            Some(names)
        }
    };
    let deadline = tokio::time::Instant::now() + timeout;
    // Subscribed before the first look, so that no create or delete after it is missed.
    let mut changes = state.indices.subscribe();
    loop {
        let health = Health::of(state, names.as_deref());
        let met = !health.missing
            && wait_for.is_none_or(|w| status_rank(health.status).is_ok_and(|s| s <= w));
        if met {
            return ok(health.body(false));
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => continue,
            // The registry is gone (never while the server runs): nothing can change.
            Ok(Err(_)) => tokio::time::sleep_until(deadline).await,
            Err(_elapsed) => {}
        }
        return with_status(StatusCode::REQUEST_TIMEOUT, health.body(true));
    }
}

fn index_info(h: &IndexHandle) -> Value {
    let refresh = match h.settings().refresh_interval_ms {
        Some(ms) => format!("{ms}ms"),
        None => "-1".into(),
    };
    let mut index = json!({"number_of_shards": "1",
                           "number_of_replicas": h.settings().number_of_replicas.to_string(),
                           "refresh_interval": refresh, "provided_name": h.name()});
    if let Some(sort) = h.index_sort() {
        // As Elasticsearch reports `index.sort.*`: lists, one entry per key.
        let f = |g: &dyn Fn(&quarry::IndexSortField) -> String| -> Vec<String> {
            sort.fields.iter().map(g).collect()
        };
        index["sort"] = json!({
            "field": f(&|k| k.field.clone()),
            "order": f(&|k| if k.descending { "desc" } else { "asc" }.into()),
            "missing": f(&|k| if k.missing_first { "_first" } else { "_last" }.into()),
        });
    }
    json!({h.name(): {
        "aliases": {},
        "mappings": mappings_of(h.schema()),
        "settings": {"index": index},
    }})
}

pub async fn get_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
    UrlQuery(p): Params,
) -> ApiResult {
    not_an_endpoint(&Method::GET, &index, uri.path())?;
    check_params(&p, uri.path(), &[])?;
    let h = state.indices.get(&index)?;
    ok(index_info(&h))
}

pub async fn head_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
    UrlQuery(p): Params,
) -> ApiResult {
    not_an_endpoint(&Method::HEAD, &index, uri.path())?;
    check_params(&p, uri.path(), &[])?;
    head(state.indices.get(&index).is_ok())
}

pub async fn create_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    uri: Uri,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    not_an_endpoint(&Method::PUT, &index, uri.path())?;
    check_params(&p, uri.path(), &[])?;
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
    UrlQuery(p): Params,
) -> ApiResult {
    not_an_endpoint(&Method::DELETE, &index, uri.path())?;
    check_params(&p, uri.path(), &[])?;
    check_index_name(&index)?;
    let indices = state.indices.clone();
    blocking(&state, move || indices.delete(&index)).await?;
    ok(json!({"acknowledged": true}))
}

/// `GET /_inference`, `GET /_inference/{id}` and `GET /_inference/{task_type}/{id}`: the
/// embedding models registered with the data directory, as Elasticsearch lists inference
/// endpoints (`{"endpoints": [...]}`; task type `text_embedding`). Read-only: models are
/// registered with `quarry models add NAME PATH --data DIR`, never through HTTP.
pub async fn get_inference(State(state): State<AppState>, path: Option<Path<String>>) -> ApiResult {
    let rest = path.map(|Path(p)| p).unwrap_or_default();
    let parts: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let (task, id) = match parts.as_slice() {
        [] => (None, None),
        [one] if one == "text_embedding" || one == "_all" => (Some(one.as_str()), None),
        [one] => (None, Some(one.as_str())),
        [t, id] => (Some(t.as_str()), Some(id.as_str())),
        _ => {
            return Err(ApiError::illegal(
                "GET _inference takes at most a task type and an id",
            ))
        }
    };
    let data = state.indices.data().to_path_buf();
    let mut endpoints = blocking(&state, move || crate::inference::list(&data)).await?;
    if let Some(t) = task.filter(|t| *t != "_all" && *t != "text_embedding") {
        return Err(ApiError::illegal(format!(
            "task type [{t}] is not supported (quarry's models are text_embedding)"
        )));
    }
    if let Some(id) = id.filter(|id| *id != "_all") {
        endpoints.retain(|e| e["inference_id"] == id);
        if endpoints.is_empty() {
            return Err(crate::inference::unknown_model(id));
        }
    }
    ok(json!({"endpoints": endpoints}))
}

pub async fn get_mapping(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_mapping"), &[])?;
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

pub async fn refresh_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_refresh"), &[])?;
    let h = state.indices.get(&index)?;
    refresh_handles(&state, vec![h]).await
}

/// `_flush`: commit (durable in the index itself; the translog is emptied).
pub async fn flush_index(
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/{index}/_flush"), &[])?;
    let h = state.indices.get(&index)?;
    blocking(&state, move || h.commit()).await?;
    ok(json!({"_shards": {"total": 1, "successful": 1, "failed": 0}}))
}

pub async fn refresh_all(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    check_params(&p, "/_refresh", &[])?;
    let all = state.indices.all();
    refresh_handles(&state, all).await
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::super::testing::call;
    use crate::{AppState, Config};

    fn state() -> (tempfile::TempDir, AppState) {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).unwrap();
        (dir, state)
    }

    /// Elasticsearch's answer for a missing index once the wait is over: 408, red, timed out,
    /// nothing active.
    fn assert_red_timeout(s: axum::http::StatusCode, b: &serde_json::Value) {
        assert_eq!(s, 408, "{b}");
        assert_eq!(
            (
                b["status"].clone(),
                b["timed_out"].clone(),
                b["active_primary_shards"].clone(),
                b["active_shards"].clone(),
                b["unassigned_shards"].clone(),
                b["number_of_nodes"].clone(),
                b["cluster_name"].clone(),
            ),
            (
                json!("red"),
                json!(true),
                json!(0),
                json!(0),
                json!(0),
                json!(1),
                json!("quarry")
            ),
            "{b}"
        );
        assert_eq!(b["active_shards_percent_as_number"], 100.0, "{b}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_of_a_missing_index_waits_for_timeout_then_answers_408_red() {
        let (_dir, state) = state();
        let t = Instant::now();
        let (s, b) = call(&state, "GET", "/_cluster/health/nope?timeout=0s", None).await;
        assert_red_timeout(s, &b);
        assert!(t.elapsed() < Duration::from_secs(5));

        let t = Instant::now();
        let (s, b) = call(&state, "GET", "/_cluster/health/nope?timeout=300ms", None).await;
        assert_red_timeout(s, &b);
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(10), "{waited:?}");

        // One missing name in a list is enough; the other's figures are not reported.
        assert_eq!(call(&state, "PUT", "/books", None).await.0, 200);
        let (s, b) = call(&state, "GET", "/_cluster/health/books,nope?timeout=0", None).await;
        assert_red_timeout(s, &b);
        let (s, b) = call(&state, "GET", "/_cluster/health/books?timeout=0s", None).await;
        assert_eq!(
            (s.as_u16(), b["status"].clone(), b["timed_out"].clone()),
            (200, json!("green"), json!(false)),
            "{b}"
        );

        // Without `timeout` the default (30 s) applies: still waiting after a moment.
        let waiting = call(&state, "GET", "/_cluster/health/nope", None);
        assert!(tokio::time::timeout(Duration::from_millis(500), waiting)
            .await
            .is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_of_an_index_created_during_the_wait_answers_at_once() {
        let (_dir, state) = state();
        let waiter = {
            let state = state.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let r = call(&state, "GET", "/_cluster/health/late?timeout=20s", None).await;
                (r, t.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished());
        let with_replicas = r#"{"settings": {"number_of_replicas": 1}}"#;
        assert_eq!(
            call(&state, "PUT", "/late", Some(with_replicas)).await.0,
            200
        );
        let ((s, b), waited) = waiter.await.unwrap();
        assert_eq!(
            (
                s.as_u16(),
                b["status"].clone(),
                b["timed_out"].clone(),
                b["active_primary_shards"].clone(),
                b["unassigned_shards"].clone()
            ),
            (200, json!("yellow"), json!(false), json!(1), json!(1)),
            "{b}"
        );
        assert!(waited < Duration::from_secs(10), "{waited:?}");

        // An index with a replica never turns green on one node: waiting for green ends at the
        // timeout, with its yellow health.
        let (s, b) = call(
            &state,
            "GET",
            "/_cluster/health/late?wait_for_status=green&timeout=100ms",
            None,
        )
        .await;
        assert_eq!(
            (s.as_u16(), b["status"].clone(), b["timed_out"].clone()),
            (408, json!("yellow"), json!(true)),
            "{b}"
        );
        // The whole cluster waiting for green gets it when the yellow index is deleted.
        let waiter = {
            let state = state.clone();
            tokio::spawn(async move {
                call(
                    &state,
                    "GET",
                    "/_cluster/health?wait_for_status=green&timeout=20s",
                    None,
                )
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished());
        assert_eq!(call(&state, "DELETE", "/late", None).await.0, 200);
        let (s, b) = waiter.await.unwrap();
        assert_eq!(
            (s.as_u16(), b["status"].clone(), b["timed_out"].clone()),
            (200, json!("green"), json!(false)),
            "{b}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_refuses_unbounded_waits_and_patterns() {
        let (_dir, state) = state();
        for (uri, needle) in [
            ("/_cluster/health/nope?timeout=-1", "[timeout]"),
            ("/_cluster/health?timeout=soon", "[timeout]"),
            ("/_cluster/health/no*?timeout=0s", "not patterns"),
            ("/_cluster/health/a,,b", "not patterns"),
            ("/_cluster/health?wait_for_status=blue", "[wait_for_status]"),
            ("/_cluster/health?wait_for_nodes=2", "[wait_for_nodes]"),
        ] {
            let (s, b) = call(&state, "GET", uri, None).await;
            assert_eq!(s, 400, "{uri}: {b}");
            assert!(
                b["error"]["reason"].as_str().unwrap().contains(needle),
                "{uri}: {b}"
            );
        }
        for uri in ["/_cluster/health/_all?timeout=0s", "/_cluster/health/*"] {
            let (s, b) = call(&state, "GET", uri, None).await;
            assert_eq!((s.as_u16(), b["status"].clone()), (200, json!("green")));
        }
    }
}
