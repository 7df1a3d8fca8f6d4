//! Searches over several indexes scored as one index, explanations equal to scores, aliases
//! that survive a restart, and delete by query on the Reuters corpus, driven in-process.
use std::io::Read;
use std::path::Path;

use axum::body::Body;
use axum::http::Request;
use quarry_server::{app, AppState, Config};
use serde_json::{json, Value};
use tower::ServiceExt;

async fn call(state: &AppState, method: &str, uri: &str, body: Option<&str>) -> (u16, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req
        .body(Body::from(body.unwrap_or_default().to_string()))
        .unwrap();
    let resp = app(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, body)
}

fn reuters(n: usize) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/reuters21578.jsonl.zst");
    let mut text = String::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(path).unwrap())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .take(n)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn mappings(extra: bool) -> String {
    let mut props = json!({
        "id": {"type": "integer"}, "title": {"type": "text"}, "body": {"type": "text"},
        "date": {"type": "keyword"}, "topics": {"type": "keyword"}});
    if extra {
        props["extra"] = json!({"type": "keyword"});
    }
    json!({"mappings": {"properties": props}, "settings": {"refresh_interval": "-1"}}).to_string()
}

async fn load(state: &AppState, index: &str, docs: &[Value], extra: bool) {
    let (s, b) = call(state, "PUT", &format!("/{index}"), Some(&mappings(extra))).await;
    assert_eq!(s, 200, "{b}");
    let mut bulk = String::new();
    for doc in docs {
        bulk.push_str(&json!({"index": {"_id": doc["id"].to_string()}}).to_string());
        bulk.push('\n');
        bulk.push_str(&doc.to_string());
        bulk.push('\n');
    }
    let (s, b) = call(
        state,
        "POST",
        &format!("/{index}/_bulk?refresh=true"),
        Some(&bulk),
    )
    .await;
    assert_eq!((s, &b["errors"]), (200, &json!(false)), "{b}");
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-30)
}

const QUERIES: &[&str] = &[
    r#"{"match": {"body": "oil prices"}}"#,
    r#"{"match": {"body": {"query": "crude oil exports", "operator": "and"}}}"#,
    r#"{"bool": {"must": [{"match": {"body": "wheat"}}], "should": [{"match": {"title": "grain"}}], "filter": [{"range": {"id": {"gte": 10}}}]}}"#,
    r#"{"match_phrase": {"body": {"query": "crude oil", "slop": 1}}}"#,
    r#"{"multi_match": {"query": "cocoa", "fields": ["title^2", "body"], "tie_breaker": 0.3}}"#,
    r#"{"bool": {"should": [{"match": {"body": "gold"}}, {"prefix": {"title": "silv"}}], "must_not": [{"term": {"topics": "coffee"}}]}}"#,
    r#"{"fuzzy": {"body": {"value": "pirces", "fuzziness": 1}}}"#,
    r#"{"boosting": {"positive": {"match": {"body": "oil"}}, "negative": {"match": {"body": "gas"}}, "negative_boost": 0.5}}"#,
];

/// The hits of a search as (id, score, index), best first.
fn hits(b: &Value) -> Vec<(String, f64, String)> {
    b["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{b}"))
        .iter()
        .map(|h| {
            (
                h["_id"].as_str().unwrap().to_string(),
                h["_score"].as_f64().unwrap(),
                h["_index"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Three indexes (one with another mapping) score exactly as one index holding all their
/// documents, and every hit's `_explanation` (and `_explain`) has the hit's score as value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_indexes_score_as_one_and_explanations_equal_scores() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let docs = reuters(2000);
    load(&state, "all", &docs, false).await;
    load(&state, "part-a", &docs[..800], false).await;
    load(&state, "part-b", &docs[800..1500], false).await;
    load(&state, "part-c", &docs[1500..], true).await;
    let position: std::collections::HashMap<String, usize> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d["id"].to_string(), i))
        .collect();
    let home = |id: &str| {
        let i = position[id];
        if i < 800 {
            "part-a"
        } else if i < 1500 {
            "part-b"
        } else {
            "part-c"
        }
    };
    for q in QUERIES {
        let body = format!(r#"{{"query": {q}, "size": 15, "track_total_hits": true}}"#);
        let (s, one) = call(&state, "POST", "/all/_search", Some(&body)).await;
        assert_eq!(s, 200, "{q}: {one}");
        let want = hits(&one);
        assert!(!want.is_empty(), "{q}");
        for target in ["part-a,part-b,part-c", "part-*", "all,part-*,-all"] {
            let (s, got) = call(&state, "POST", &format!("/{target}/_search"), Some(&body)).await;
            assert_eq!(s, 200, "{q} {target}: {got}");
            assert_eq!(got["hits"]["total"], one["hits"]["total"], "{q} {target}");
            assert_eq!(got["_shards"]["total"], 3, "{target}");
            let got = hits(&got);
            assert_eq!(got.len(), want.len(), "{q} {target}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.0, w.0, "{q} {target}");
                assert!(close(g.1, w.1), "{q} {target}: {} vs {}", g.1, w.1);
                assert_eq!(g.2, home(&g.0), "{q} {target}");
            }
        }
        // Same mappings: the combined searcher; explanations there and on one index.
        for target in ["all", "part-a,part-b", "part-a,part-c"] {
            let body = format!(r#"{{"query": {q}, "size": 5, "explain": true}}"#);
            let (s, r) = call(&state, "POST", &format!("/{target}/_search"), Some(&body)).await;
            assert_eq!(s, 200, "{q} {target}: {r}");
            for h in r["hits"]["hits"].as_array().unwrap() {
                let (v, score) = (
                    h["_explanation"]["value"].as_f64().unwrap(),
                    h["_score"].as_f64().unwrap(),
                );
                assert!(
                    close(v, score),
                    "{q} {target} {}: {v} vs {score}: {h}",
                    h["_id"]
                );
            }
        }
        for (id, score, _) in want.iter().take(5) {
            let (s, e) = call(
                &state,
                "POST",
                &format!("/all/_explain/{id}"),
                Some(&format!(r#"{{"query": {q}}}"#)),
            )
            .await;
            assert_eq!(s, 200, "{e}");
            assert_eq!(e["matched"], true);
            assert!(
                close(e["explanation"]["value"].as_f64().unwrap(), *score),
                "{q} {id}: {e}"
            );
        }
    }
    let (_, c) = call(&state, "GET", "/_count", None).await;
    assert_eq!(c["count"], 4000);
    let (_, c) = call(&state, "GET", "/part-*,-part-c/_count", None).await;
    assert_eq!(c["count"], 1500);
    // Sort and aggs over several mappings: a 400 naming them; unknown indexes: 404.
    let (s, b) = call(
        &state,
        "POST",
        "/part-a,part-c/_search",
        Some(r#"{"sort": ["id"]}"#),
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"]["reason"].as_str().unwrap().contains("[sort]"),
        "{b}"
    );
    let (s, _) = call(&state, "GET", "/part-a,nope/_search", None).await;
    assert_eq!(s, 404);
    let (s, b) = call(
        &state,
        "GET",
        "/part-a,nope/_search?ignore_unavailable=true&size=0",
        None,
    )
    .await;
    assert_eq!((s, &b["hits"]["total"]["value"]), (200, &json!(800)), "{b}");
    let (s, _) = call(
        &state,
        "GET",
        "/nope-*/_search?allow_no_indices=false",
        None,
    )
    .await;
    assert_eq!(s, 404);
    let (s, b) = call(&state, "GET", "/_search?allow_no_indices=maybe", None).await;
    assert_eq!(s, 400, "{b}");
}

/// Aliases resolve in searches, gets and writes, and survive a restart; delete by query
/// through an alias is durable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliases_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let docs = reuters(300);
    {
        let state = AppState::open(Config::new(dir.path())).unwrap();
        load(&state, "r1", &docs[..150], false).await;
        load(&state, "r2", &docs[150..], false).await;
        let actions = r#"{"actions": [{"add": {"indices": ["r1", "r2"], "alias": "r"}}, {"add": {"index": "r2", "alias": "w"}}]}"#;
        let (s, b) = call(&state, "POST", "/_aliases", Some(actions)).await;
        assert_eq!(s, 200, "{b}");
        let (s, b) = call(
            &state,
            "POST",
            "/w/_delete_by_query?refresh=true",
            Some(r#"{"query": {"term": {"topics": "grain"}}}"#),
        )
        .await;
        assert_eq!(s, 200, "{b}");
        assert!(b["deleted"].as_u64().unwrap() > 0, "{b}");
        let (s, b) = call(&state, "PUT", "/w/_doc/new", Some(r#"{"title": "fresh"}"#)).await;
        assert_eq!((s, &b["_index"]), (201, &json!("r2")), "{b}");
        let (s, b) = call(&state, "PUT", "/r/_doc/new", Some(r#"{"title": "fresh"}"#)).await;
        assert_eq!(s, 400, "{b}");
        assert!(
            b["error"]["reason"].as_str().unwrap().contains("alias [r]"),
            "{b}"
        );
        for bad in [
            r#"{"actions": [{"add": {"index": "r1", "alias": "x", "routing": "1"}}]}"#,
            r#"{"actions": [{"add": {"index": "r1"}}]}"#,
            r#"{"actions": [{"frobnicate": {"index": "r1", "alias": "x"}}]}"#,
            r#"{"actions": [{"add": {"index": "r1", "alias": "r2"}}]}"#,
            r#"{"actions": [{"add": {"index": "r1", "alias": "_x"}}]}"#,
            r#"{"actions": []}"#,
            r#"{"nope": []}"#,
        ] {
            let (s, b) = call(&state, "POST", "/_aliases", Some(bad)).await;
            assert_eq!(s, 400, "{bad}: {b}");
        }
        // A refused action list changes nothing.
        let (s, _) = call(&state, "POST", "/_aliases", Some(r#"{"actions": [{"add": {"index": "r1", "alias": "y"}}, {"remove": {"index": "r1", "alias": "zzz"}}]}"#)).await;
        assert_eq!(s, 404);
        let (s, _) = call(&state, "GET", "/_alias/y", None).await;
        assert_eq!(s, 404);
    }
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let (s, b) = call(&state, "GET", "/_alias", None).await;
    assert_eq!(s, 200);
    assert_eq!(
        b,
        json!({"r1": {"aliases": {"r": {}}}, "r2": {"aliases": {"r": {}, "w": {}}}})
    );
    let grain = docs[150..]
        .iter()
        .filter(|d| d["topics"].as_array().unwrap().contains(&json!("grain")))
        .count() as u64;
    let (_, r2) = call(&state, "GET", "/w/_count", None).await;
    assert_eq!(r2["count"].as_u64().unwrap(), 150 - grain + 1, "{r2}");
    let (_, c) = call(&state, "GET", "/r/_count", None).await;
    assert_eq!(c["count"].as_u64().unwrap(), 150 + 150 - grain + 1);
    let (s, b) = call(&state, "GET", "/w/_doc/new", None).await;
    assert_eq!((s, &b["_index"]), (200, &json!("r2")), "{b}");
}
