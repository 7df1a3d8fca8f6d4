//! The REST API driven in-process (no sockets): Elasticsearch shapes, scores equal to the
//! library's on the Reuters corpus, translog replay, and bad input that never gets a 5xx.
use std::io::Read;
use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use quarry::{Index, SearchMode};
use quarry_server::{app, AppState, Config};
use serde_json::{json, Value};
use tower::ServiceExt;

struct Resp {
    status: StatusCode,
    product: Option<String>,
    body: Value,
}

async fn call(state: &AppState, method: &str, uri: &str, body: Option<&str>, ct: &str) -> Resp {
    call_with(state, method, uri, body, ct, None).await
}

async fn call_with(
    state: &AppState,
    method: &str,
    uri: &str,
    body: Option<&str>,
    ct: &str,
    auth: Option<&str>,
) -> Resp {
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() {
        req = req.header("content-type", ct);
    }
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let req = req
        .body(Body::from(body.unwrap_or_default().to_string()))
        .unwrap();
    let resp = app(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let product = resp
        .headers()
        .get("x-elastic-product")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Resp {
        status,
        product,
        body,
    }
}

const JSON: &str = "application/json";
const NDJSON: &str = "application/vnd.elasticsearch+x-ndjson; compatible-with=9";

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

const MAPPINGS: &str = r#"{"mappings": {"properties": {
    "id": {"type": "integer"}, "title": {"type": "text"}, "body": {"type": "text"},
    "date": {"type": "keyword"}, "topics": {"type": "keyword"}}},
    "settings": {"refresh_interval": "-1"}}"#;

async fn reuters_index(state: &AppState, n: usize) {
    let r = call(state, "PUT", "/reuters", Some(MAPPINGS), JSON).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut bulk = String::new();
    for doc in reuters(n) {
        bulk.push_str(&json!({"index": {"_id": doc["id"].to_string()}}).to_string());
        bulk.push('\n');
        bulk.push_str(&doc.to_string());
        bulk.push('\n');
    }
    let r = call(
        state,
        "POST",
        "/reuters/_bulk?refresh=true",
        Some(&bulk),
        NDJSON,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["errors"], false, "{}", r.body);
    assert_eq!(r.body["items"].as_array().unwrap().len(), n);
    assert_eq!(r.body["items"][0]["index"]["status"], 201);
    // Commit, so that the library (reading the latest commit) sees the same documents.
    assert_eq!(
        call(state, "POST", "/reuters/_flush", None, JSON)
            .await
            .status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dsl_searches_score_like_the_library_on_reuters() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    reuters_index(&state, 3000).await;
    let index = Index::open(&dir.path().join("reuters/index")).unwrap();
    let lib = index.searcher();
    for (dsl, lucene) in [
        (
            json!({"match": {"body": "oil prices"}}),
            "body:(oil prices)",
        ),
        (
            json!({"match": {"body": {"query": "oil prices", "operator": "and"}}}),
            "+body:oil +body:prices",
        ),
        (
            json!({"match_phrase": {"body": {"query": "crude oil", "slop": 1}}}),
            "body:\"crude oil\"~1",
        ),
        (
            json!({"bool": {"must": {"match": {"title": "cocoa"}}, "must_not": {"term": {"topics": "coffee"}}}}),
            "+title:cocoa -topics:coffee",
        ),
        (
            json!({"query_string": {"query": "wheat AND (export OR exports)", "default_field": "body"}}),
            "body:wheat AND (body:export OR body:exports)",
        ),
        (
            json!({"multi_match": {"query": "gold", "fields": ["title^2", "body"], "type": "most_fields"}}),
            "title:gold^2 body:gold",
        ),
        (json!({"term": {"topics": "grain"}}), "topics:grain"),
    ] {
        let body = json!({"query": dsl, "size": 10, "track_total_hits": true});
        let r = call(
            &state,
            "POST",
            "/reuters/_search",
            Some(&body.to_string()),
            JSON,
        )
        .await;
        assert_eq!(r.status, 200, "{dsl}: {}", r.body);
        assert_eq!(r.product.as_deref(), Some("Elasticsearch"));
        let q = lib.parse_query(lucene, &["body"]).unwrap();
        let want = lib.search(&q, 10, SearchMode::TopCount).unwrap();
        assert!(want.total_hits > 0, "{lucene} matches nothing");
        assert_eq!(r.body["hits"]["total"]["value"], want.total_hits, "{dsl}");
        assert_eq!(r.body["hits"]["total"]["relation"], "eq");
        let hits = r.body["hits"]["hits"].as_array().unwrap();
        assert_eq!(hits.len(), want.top.len(), "{dsl}");
        for (h, w) in hits.iter().zip(&want.top) {
            let stored = lib.stored_fields(w.doc).unwrap();
            assert_eq!(h["_id"], stored["_id"], "{dsl}");
            assert_eq!(h["_score"].as_f64().unwrap() as f32, w.score, "{dsl}");
            assert_eq!(h["_source"]["title"], stored["title"]);
            assert!(h["_source"].get("_id").is_none());
        }
    }
    // q= URI search, from/size, _source filtering, count.
    let r = call(
        &state,
        "GET",
        "/reuters/_search?q=title:oil&from=2&size=3&_source=title,id",
        None,
        JSON,
    )
    .await;
    assert_eq!(r.status, 200);
    let hits = r.body["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 3);
    let keys: Vec<&String> = hits[0]["_source"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let r = call(
        &state,
        "POST",
        "/reuters/_count",
        Some(r#"{"query": {"match": {"title": "oil"}}}"#),
        JSON,
    )
    .await;
    let q = lib.parse_query("title:oil", &["body"]).unwrap();
    assert_eq!(
        r.body["count"],
        lib.search(&q, 0, SearchMode::Count).unwrap().total_hits
    );
    let r = call(
        &state,
        "POST",
        "/reuters/_count",
        Some(r#"{"query": {"exists": {"field": "topics"}}}"#),
        JSON,
    )
    .await;
    let with_topics = reuters(3000)
        .iter()
        .filter(|d| d["topics"].as_array().is_some_and(|a| !a.is_empty()))
        .count();
    assert_eq!(r.body["count"], with_topics);
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(r#"{"query": {"ids": {"values": ["5", "7"]}}}"#),
        JSON,
    )
    .await;
    assert_eq!(r.body["hits"]["total"]["value"], 2);
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(r#"{"query": {"match_all": {}}, "track_total_hits": 100}"#),
        JSON,
    )
    .await;
    assert_eq!(
        r.body["hits"]["total"],
        json!({"value": 100, "relation": "gte"})
    );
    assert_eq!(r.body["_shards"]["failed"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_indexes_and_translog_replay() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let r = call(&state, "GET", "/", None, JSON).await;
    assert_eq!(r.body["version"]["build_flavor"], "default");
    assert_eq!(r.product.as_deref(), Some("Elasticsearch"));
    let r = call(&state, "PUT", "/books", Some(r#"{"mappings": {"properties": {"title": {"type": "text"}, "year": {"type": "long"}}}}"#), JSON).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(call(&state, "HEAD", "/books", None, JSON).await.status, 200);
    assert_eq!(call(&state, "HEAD", "/nope", None, JSON).await.status, 404);
    let r = call(&state, "PUT", "/books", Some("{}"), JSON).await;
    assert_eq!(r.body["error"]["type"], "resource_already_exists_exception");
    let r = call(&state, "GET", "/books/_mapping", None, JSON).await;
    assert_eq!(
        r.body["books"]["mappings"]["properties"]["year"]["type"],
        "long"
    );

    let r = call(
        &state,
        "PUT",
        "/books/_doc/1",
        Some(r#"{"title": "Dune", "year": 1965}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["result"], "created");
    let r = call(
        &state,
        "POST",
        "/books/_doc",
        Some(r#"{"title": "Emma"}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 201);
    let auto_id = r.body["_id"].as_str().unwrap().to_string();
    // Realtime get before any refresh.
    let r = call(&state, "GET", "/books/_doc/1", None, JSON).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["_source"], json!({"title": "Dune", "year": 1965}));
    let r = call(
        &state,
        "GET",
        &format!("/books/_doc/{auto_id}?_source=title"),
        None,
        JSON,
    )
    .await;
    assert_eq!(r.body["_source"], json!({"title": "Emma"}));
    assert_eq!(
        call(&state, "GET", "/books/_doc/zz", None, JSON).await.body["found"],
        false
    );
    assert_eq!(
        call(&state, "HEAD", "/books/_doc/zz", None, JSON)
            .await
            .status,
        404
    );
    let r = call(
        &state,
        "PUT",
        "/books/_create/1",
        Some(r#"{"title": "x"}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 409);
    assert_eq!(r.body["error"]["type"], "version_conflict_engine_exception");
    let r = call(&state, "POST", "/books/_refresh", None, JSON).await;
    assert_eq!(r.status, 200);
    let r = call(&state, "GET", "/_cat/indices?format=json", None, JSON).await;
    assert_eq!(r.body[0]["docs.count"], "2");

    // Overwrite, partial update, delete.
    let r = call(
        &state,
        "PUT",
        "/books/_doc/1",
        Some(r#"{"title": "Dune Messiah", "year": 1969}"#),
        JSON,
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.body["result"].as_str()),
        (200, Some("updated")),
        "{}",
        r.body
    );
    let r = call(
        &state,
        "POST",
        "/books/_update/1",
        Some(r#"{"doc": {"year": 1970}}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&state, "GET", "/books/_doc/1", None, JSON).await;
    assert_eq!(
        r.body["_source"],
        json!({"title": "Dune Messiah", "year": 1970})
    );
    let r = call(
        &state,
        "POST",
        "/books/_search",
        Some(r#"{"query": {"match": {"title": "dune"}}}"#),
        JSON,
    )
    .await;
    assert_eq!(r.body["hits"]["total"]["value"], 1, "{}", r.body);
    let r = call(
        &state,
        "PUT",
        "/books/_doc/9?refresh=true",
        Some(r#"{"title": "Temporary"}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 201);
    let r = call(&state, "DELETE", "/books/_doc/9", None, JSON).await;
    assert_eq!(
        (r.status.as_u16(), r.body["result"].as_str()),
        (200, Some("deleted"))
    );
    assert_eq!(
        call(&state, "GET", "/books/_doc/9", None, JSON)
            .await
            .status,
        404
    );
    let r = call(&state, "DELETE", "/books/_doc/9", None, JSON).await;
    assert_eq!(
        (r.status.as_u16(), r.body["result"].as_str()),
        (404, Some("not_found"))
    );
    let bulk = "{\"delete\":{\"_index\":\"books\",\"_id\":\"nope\"}}\n{\"update\":{\"_index\":\"books\",\"_id\":\"nope\"}}\n{\"doc\":{\"year\":1}}\n";
    let r = call(&state, "POST", "/_bulk", Some(bulk), NDJSON).await;
    assert_eq!(r.body["items"][0]["delete"]["status"], 404);
    assert_eq!(r.body["items"][1]["update"]["status"], 404);
    assert_eq!(
        r.body["items"][1]["update"]["error"]["type"],
        "document_missing_exception"
    );
    assert_eq!(
        call(&state, "POST", "/books/_count", None, JSON).await.body["count"],
        2
    );

    // Writes acknowledged but never committed come back from the translog.
    let r = call(
        &state,
        "PUT",
        "/books/_doc/3",
        Some(r#"{"title": "Ulysses", "year": 1922}"#),
        JSON,
    )
    .await;
    assert_eq!(r.status, 201);
    let bulk = "{\"index\":{\"_index\":\"books\",\"_id\":\"4\"}}\n{\"title\":\"Kim\"}\n";
    assert_eq!(
        call(&state, "POST", "/_bulk", Some(bulk), NDJSON)
            .await
            .body["errors"],
        false
    );
    drop(state); // no close(): nothing is committed, as after kill -9
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let r = call(&state, "POST", "/books/_count", None, JSON).await;
    assert_eq!(r.body["count"], 4, "{}", r.body);
    let r = call(&state, "GET", "/books/_doc/1", None, JSON).await;
    assert_eq!(
        r.body["_source"]["year"], 1970,
        "the update survives the crash"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("books/translog"))
            .unwrap()
            .len(),
        0
    );
    let r = call(&state, "GET", "/_metrics", None, JSON).await;
    let text = r.body.as_str().unwrap();
    assert!(
        text.contains("quarry_index_docs{index=\"books\"} 4"),
        "{text}"
    );
    assert!(text.contains("quarry_http_requests_seconds_count{method=\"POST\",endpoint=\"/{index}/_count\",status=\"200\"} 1"), "{text}");

    let r = call(&state, "DELETE", "/books", None, JSON).await;
    assert_eq!(r.status, 200);
    assert!(!dir.path().join("books").exists());
    assert_eq!(
        call(&state, "GET", "/books/_search", None, JSON)
            .await
            .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_4xx_never_5xx() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.max_body_bytes = 64 << 10;
    let state = AppState::open(config).unwrap();
    let r = call(&state, "PUT", "/t", Some(r#"{"mappings": {"properties": {"title": {"type": "text"}, "n": {"type": "integer"}}}}"#), JSON).await;
    assert_eq!(r.status, 200);
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let mut deep_query = json!({"match_all": {}});
    for _ in 0..100 {
        deep_query = json!({"bool": {"must": deep_query}});
    }
    let deep_query = json!({"query": deep_query}).to_string();
    let huge = format!("{{\"title\": \"{}\"}}", "a ".repeat(40 << 10));
    let cases: Vec<(&str, String, Option<String>, &str, u16)> = vec![
        ("POST", "/t/_search".into(), Some("{oops".into()), JSON, 400),
        ("POST", "/t/_search".into(), Some(deep.clone()), JSON, 400),
        ("POST", "/t/_search".into(), Some(deep_query), JSON, 400),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"fuzzy": {"title": {"value": "x", "fuzzyness": 1}}}}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"regexp": {"title": "a(b"}}}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"wildcard": {"n": "1*"}}}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"range": {"n": {"gte": "one"}}}}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"range": {"n": {"gte": 1, "format": "yyyy"}}}}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"sort": [{"title": "asc"}]}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"sort": [{"n": {"order": "up"}}]}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"sort": ["n"], "search_after": ["x"]}"#.into()),
            JSON,
            400,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"query": {"match": {"title": "x"}}}"#.into()),
            "text/plain",
            406,
        ),
        (
            "POST",
            "/t/_search".into(),
            Some(r#"{"size": -1}"#.into()),
            JSON,
            400,
        ),
        ("POST", "/t/_search?q=title:(".into(), None, JSON, 400),
        (
            "PUT",
            "/t/_doc/1".into(),
            Some(r#"{"n": "abc"}"#.into()),
            JSON,
            400,
        ),
        (
            "PUT",
            "/t/_doc/1".into(),
            Some(r#"{"other": 1}"#.into()),
            JSON,
            400,
        ),
        ("PUT", "/t/_doc/1".into(), Some("[1, 2]".into()), JSON, 400),
        ("PUT", "/t/_doc/1".into(), Some(huge), JSON, 413),
        (
            "POST",
            "/_bulk".into(),
            Some("{\"index\": {}}\n{}\n".into()),
            NDJSON,
            400,
        ),
        (
            "POST",
            "/_bulk".into(),
            Some("not json\n".into()),
            NDJSON,
            400,
        ),
        (
            "POST",
            "/t/_msearch".into(),
            Some(format!("{{}}\n{deep}\n")),
            NDJSON,
            400,
        ),
        (
            "POST",
            "/t/_msearch".into(),
            Some("{}\n".into()),
            NDJSON,
            400,
        ),
        ("POST", "/t/_mget".into(), Some(deep.clone()), JSON, 400),
        (
            "POST",
            "/t/_mget".into(),
            Some(r#"{"docs": [{"_id": ["x"]}]}"#.into()),
            JSON,
            400,
        ),
        ("PUT", "/..".into(), Some("{}".into()), JSON, 400),
        (
            "PUT",
            "/%2e%2e%2fescape".into(),
            Some("{}".into()),
            JSON,
            400,
        ),
        ("PUT", "/Upper".into(), Some("{}".into()), JSON, 400),
        (
            "PUT",
            "/geo".into(),
            Some(r#"{"mappings": {"properties": {"p": {"type": "geo_point"}}}}"#.into()),
            JSON,
            400,
        ),
        ("GET", "/t/_nothing_here/x/y".into(), None, JSON, 400),
        ("PATCH", "/t".into(), None, JSON, 405),
        (
            "POST",
            "/t/_update/1".into(),
            Some(r#"{"doc": {"n": 1}}"#.into()),
            JSON,
            404,
        ),
        (
            "POST",
            "/t/_update/1".into(),
            Some(r#"{"script": "x"}"#.into()),
            JSON,
            400,
        ),
    ];
    for (method, uri, body, ct, want) in cases {
        let r = call(&state, method, &uri, body.as_deref(), ct).await;
        assert_eq!(r.status.as_u16(), want, "{method} {uri}: {}", r.body);
        assert_eq!(r.product.as_deref(), Some("Elasticsearch"));
        assert_eq!(r.body["status"], want, "{method} {uri}: {}", r.body);
        assert!(r.body["error"]["root_cause"][0]["type"].is_string());
    }
    assert!(!dir.path().parent().unwrap().join("escape").exists());
    // A bulk with one bad document reports it per item and indexes the rest.
    let bulk = "{\"index\":{\"_index\":\"t\",\"_id\":\"a\"}}\n{\"n\":\"x\"}\n{\"index\":{\"_index\":\"t\",\"_id\":\"b\"}}\n{\"n\":2}\n{\"index\":{\"_index\":\"missing\"}}\n{\"n\":2}\n";
    let r = call(&state, "POST", "/_bulk", Some(bulk), NDJSON).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["errors"], true);
    assert_eq!(r.body["items"][0]["index"]["status"], 400);
    assert_eq!(r.body["items"][1]["index"]["status"], 201);
    assert_eq!(r.body["items"][2]["index"]["status"], 404);
    assert_eq!(
        r.body["items"][2]["index"]["error"]["type"],
        "index_not_found_exception"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_guard_everything_but_health() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.api_keys = Some(vec!["s3cret".into()]);
    let state = AppState::open(config).unwrap();
    assert_eq!(call(&state, "GET", "/", None, JSON).await.status, 200);
    let r = call(&state, "GET", "/_cat/indices", None, JSON).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body["error"]["type"], "security_exception");
    assert_eq!(r.product.as_deref(), Some("Elasticsearch"));
    let r = call_with(&state, "PUT", "/x", Some("{}"), JSON, Some("ApiKey wrong")).await;
    assert_eq!(r.status, 401);
    let r = call_with(&state, "PUT", "/x", Some("{}"), JSON, Some("ApiKey s3cret")).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// `timeout` (body and URI) and the server's default budget: a spent budget answers 200 with
/// `timed_out` and a lower-bound total; a generous one answers exactly as no budget; `-1`
/// overrides the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_budgets_return_partial_results_with_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.default_search_timeout = Some(std::time::Duration::ZERO);
    let state = AppState::open(config).unwrap();
    reuters_index(&state, 1000).await;
    let q = |extra: Value| {
        let mut b = json!({"query": {"match": {"body": "oil prices"}}, "track_total_hits": true});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b.to_string()
    };
    // The default budget (zero) is spent before the search starts.
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(&q(json!({}))),
        JSON,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["timed_out"], true, "{}", r.body);
    assert_eq!(r.body["hits"]["total"]["relation"], "gte");
    assert!(r.body["hits"]["hits"].as_array().unwrap().is_empty());
    // `-1` lifts the default; a generous budget gives the same answer.
    let full = call(
        &state,
        "POST",
        "/reuters/_search?timeout=-1",
        Some(&q(json!({}))),
        JSON,
    )
    .await;
    assert_eq!(full.body["timed_out"], false, "{}", full.body);
    assert_eq!(full.body["hits"]["total"]["relation"], "eq");
    assert!(full.body["hits"]["total"]["value"].as_u64().unwrap() > 10);
    let generous = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(&q(json!({"timeout": "1m"}))),
        JSON,
    )
    .await;
    assert_eq!(generous.body["timed_out"], false);
    assert_eq!(generous.body["hits"], full.body["hits"]);
    // A zero budget in the URI (size 0: the count-only path) times out too.
    let r = call(
        &state,
        "POST",
        "/reuters/_search?timeout=0ms&size=0",
        Some(&q(json!({}))),
        JSON,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["timed_out"], true);
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(&q(json!({"timeout": 5}))),
        JSON,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
}

/// `index.sort.*` at creation: kept (GET shows it), every segment in that order, sorted
/// searches, updates and deletes by id as on an index without it; bad values are 400s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_sort_settings_sort_segments_and_search_alike() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let props = r#"{"properties": {"id": {"type": "integer"}, "body": {"type": "text"},
        "title": {"type": "text"},
        "date": {"type": "keyword"}, "topics": {"type": "keyword"}}}"#;
    for (name, settings) in [
        ("plain", json!({"refresh_interval": "-1"})),
        (
            "sorted",
            json!({"refresh_interval": "-1",
                   "index": {"sort": {"field": ["date", "id"], "order": ["desc", "asc"]}}}),
        ),
    ] {
        let body = format!(r#"{{"mappings": {props}, "settings": {settings}}}"#);
        let r = call(&state, "PUT", &format!("/{name}"), Some(&body), JSON).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let mut bulk = String::new();
        for doc in reuters(400) {
            bulk.push_str(&json!({"index": {"_id": doc["id"].to_string()}}).to_string());
            bulk.push('\n');
            bulk.push_str(&doc.to_string());
            bulk.push('\n');
        }
        // Some replaced, some deleted.
        for id in [3, 50, 120] {
            let doc = json!({"id": id, "body": "replaced oil", "date": "1990-01-01"});
            bulk.push_str(&format!("{{\"index\": {{\"_id\": \"{id}\"}}}}\n{doc}\n"));
        }
        for id in [7, 8, 300] {
            bulk.push_str(&format!("{{\"delete\": {{\"_id\": \"{id}\"}}}}\n"));
        }
        let uri = format!("/{name}/_bulk?refresh=true");
        let r = call(&state, "POST", &uri, Some(&bulk), NDJSON).await;
        let text = r.body.to_string();
        assert_eq!(r.body["errors"], false, "{}", &text[..text.len().min(600)]);
        let uri = format!("/{name}/_flush");
        assert_eq!(call(&state, "POST", &uri, None, JSON).await.status, 200);
    }
    let r = call(&state, "GET", "/sorted", None, JSON).await;
    let sort = &r.body["sorted"]["settings"]["index"]["sort"];
    assert_eq!(sort["field"], json!(["date", "id"]), "{}", r.body);
    assert_eq!(sort["order"], json!(["desc", "asc"]));
    let index = Index::open(&dir.path().join("sorted/index")).unwrap();
    assert_eq!(index.index_sort().unwrap().to_string(), "date:desc, id:asc");
    assert!(index
        .segments()
        .iter()
        .all(|s| s.index_sort() == index.index_sort()));
    quarry::check_index(
        &dir.path().join("sorted/index"),
        quarry::DirectoryKind::Mmap,
    )
    .unwrap();
    for body in [
        json!({"size": 5, "sort": [{"date": "desc"}, {"id": "asc"}]}),
        json!({"size": 5, "sort": [{"date": "desc"}], "query": {"match": {"body": "oil"}}}),
        json!({"size": 3, "sort": [{"date": "desc"}, {"id": "asc"}],
               "search_after": ["1987-03-26", 5]}),
        json!({"size": 4, "sort": [{"id": "desc"}]}),
    ] {
        let run = |name: &'static str| {
            let (state, body) = (state.clone(), body.to_string());
            async move {
                let r = call(
                    &state,
                    "POST",
                    &format!("/{name}/_search"),
                    Some(&body),
                    JSON,
                )
                .await;
                assert_eq!(r.status, 200, "{}", r.body);
                (
                    r.body["hits"]["total"].clone(),
                    r.body["hits"]["hits"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|h| (h["_id"].clone(), h["sort"].clone()))
                        .collect::<Vec<_>>(),
                )
            }
        };
        assert_eq!(run("sorted").await, run("plain").await, "{body}");
    }
    for (settings, want) in [
        (json!({"index.sort.field": "body"}), "body"),
        (json!({"index.sort.field": "nope"}), "nope"),
        (
            json!({"index.sort.field": "id", "index.sort.order": "up"}),
            "up",
        ),
        (
            json!({"index.sort.field": ["id", "date"], "index.sort.order": ["asc"]}),
            "size mismatch",
        ),
    ] {
        let body = format!(r#"{{"mappings": {props}, "settings": {settings}}}"#);
        let r = call(&state, "PUT", "/bad", Some(&body), JSON).await;
        assert_eq!(r.status, 400, "{settings}: {}", r.body);
        assert_eq!(r.body["error"]["type"], "illegal_argument_exception");
        assert!(
            r.body["error"]["reason"].as_str().unwrap().contains(want),
            "{}",
            r.body
        );
        assert_eq!(call(&state, "HEAD", "/bad", None, JSON).await.status, 404);
    }
}

/// `_msearch` with the clients' NDJSON media type over the Reuters corpus: each search answers
/// exactly what `_search` answers alone, and a bad search in the middle fails only its own
/// entry. `_mget` reads back what `GET /_doc` reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn msearch_and_mget_answer_like_their_single_requests() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    reuters_index(&state, 500).await;
    let searches = [
        json!({"query": {"match": {"body": "oil prices"}}, "size": 5}),
        json!({"query": {"term": {"topics": "grain"}}, "sort": [{"id": "desc"}], "from": 2}),
        json!({"query": {"range": {"id": {"gte": "one"}}}}),
        json!({"size": 0, "aggs": {"t": {"terms": {"field": "topics", "size": 3}}}}),
    ];
    let mut body = String::new();
    for s in &searches {
        body.push_str("{\"index\": \"reuters\"}\n");
        body.push_str(&s.to_string());
        body.push('\n');
    }
    let r = call(&state, "POST", "/_msearch", Some(&body), NDJSON).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let responses = r.body["responses"].as_array().unwrap();
    assert_eq!(responses.len(), searches.len());
    for (i, s) in searches.iter().enumerate() {
        let alone = call(
            &state,
            "POST",
            "/reuters/_search",
            Some(&s.to_string()),
            JSON,
        )
        .await;
        let got = &responses[i];
        assert_eq!(got["status"], alone.status.as_u16(), "search {i}: {got}");
        if alone.status == 200 {
            assert_eq!(got["hits"], alone.body["hits"], "search {i}");
            assert_eq!(
                got["aggregations"], alone.body["aggregations"],
                "search {i}"
            );
        } else {
            assert_eq!(got["error"], alone.body["error"], "search {i}");
        }
    }
    assert_eq!(responses[2]["status"], 400);
    assert_eq!(
        responses[3]["aggregations"]["t"]["buckets"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let ids = ["1", "250", "499", "100000"];
    let r = call(
        &state,
        "POST",
        "/reuters/_mget",
        Some(&json!({ "ids": ids }).to_string()),
        JSON,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (i, id) in ids.iter().enumerate() {
        let alone = call(&state, "GET", &format!("/reuters/_doc/{id}"), None, JSON).await;
        assert_eq!(r.body["docs"][i], alone.body, "{id}");
    }
    assert_eq!(r.body["docs"][3]["found"], false);
}

/// `highlight` over Reuters gives each hit the fragments the library's highlighter gives for
/// the same query and document, in `_search` and `_msearch` alike; a bad option is a 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn highlights_are_the_librarys_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    reuters_index(&state, 1000).await;
    let lib = Index::open(&dir.path().join("reuters/index"))
        .unwrap()
        .searcher();
    let body = json!({
        "query": {"bool": {"must": [{"match_phrase": {"body": "crude oil"}}],
                           "should": [{"prefix": {"body": "pric"}}]}},
        "highlight": {"fields": {"body": {"fragment_size": 80}, "title": {}}},
        "size": 5
    });
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(&body.to_string()),
        JSON,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let hits = r.body["hits"]["hits"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 5);
    let q = lib
        .parse_query("+body:\"crude oil\" body:pric*", &["body"])
        .unwrap();
    let top = lib.search(&q, 50, SearchMode::Top).unwrap().top;
    let h = quarry::highlight::Highlighter::new(&q, lib.schema());
    let opts = quarry::highlight::HighlightOptions {
        fragment_size: 80,
        ..Default::default()
    };
    let by_id: std::collections::HashMap<String, serde_json::Map<String, Value>> = top
        .iter()
        .map(|t| {
            let stored = lib.stored_fields(t.doc).unwrap();
            (stored["_id"].as_str().unwrap().to_string(), stored)
        })
        .collect();
    for hit in &hits {
        let stored = &by_id[hit["_id"].as_str().unwrap()];
        let want = h.highlight_field("body", &stored["body"], &opts);
        assert!(!want.is_empty());
        assert!(
            want.iter().any(|f| f.contains("<em>crude oil</em>")),
            "{want:?}"
        );
        assert_eq!(hit["highlight"]["body"], json!(want), "{hit}");
        assert!(hit["highlight"].get("title").is_none() || hit["highlight"]["title"].is_array());
    }
    let nd = format!("{{\"index\": \"reuters\"}}\n{body}\n");
    let m = call(&state, "POST", "/_msearch", Some(&nd), NDJSON).await;
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(m.body["responses"][0]["hits"]["hits"], json!(hits));
    let bad = json!({"query": {"match_all": {}}, "highlight": {"fields": {"body": {"fragment_size": 0}}}});
    let r = call(
        &state,
        "POST",
        "/reuters/_search",
        Some(&bad.to_string()),
        JSON,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("[fragment_size]"),
        "{}",
        r.body
    );
}
