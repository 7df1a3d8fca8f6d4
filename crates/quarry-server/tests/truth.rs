//! The server tells the truth: real `_version`, `_seq_no` and `_primary_term` (surviving a
//! restart), conditional-write conflicts, `_cluster/health` and `_cat/indices` figures,
//! `refresh=wait_for`, refused parameters and unknown endpoints, and `GET /`.
use axum::body::Body;
use axum::http::{Request, StatusCode};
use quarry_server::{app, AppState, Config, Refresher};
use serde_json::{json, Value};
use tower::ServiceExt;

async fn call(
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
    let resp = app(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, body)
}

const BOOKS: &str =
    r#"{"mappings": {"properties": {"title": {"type": "text"}, "year": {"type": "long"}}}}"#;

fn meta(b: &Value) -> (u64, u64, u64) {
    (
        b["_version"].as_u64().unwrap(),
        b["_seq_no"].as_u64().unwrap(),
        b["_primary_term"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_seq_nos_and_conflicts_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    assert_eq!(call(&state, "PUT", "/books", Some(BOOKS)).await.0, 200);
    let (s, b) = call(&state, "PUT", "/books/_doc/1", Some(r#"{"title": "Dune"}"#)).await;
    assert_eq!((s.as_u16(), meta(&b)), (201, (1, 0, 1)), "{b}");
    let (_, b) = call(&state, "PUT", "/books/_doc/2", Some(r#"{"title": "Emma"}"#)).await;
    assert_eq!(meta(&b), (1, 1, 1));
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/1",
        Some(r#"{"title": "Dune 2"}"#),
    )
    .await;
    assert_eq!((s.as_u16(), meta(&b)), (200, (2, 2, 1)));
    let (_, b) = call(
        &state,
        "POST",
        "/books/_update/1",
        Some(r#"{"doc": {"year": 1965}}"#),
    )
    .await;
    assert_eq!(
        (b["result"].clone(), meta(&b)),
        (json!("updated"), (3, 3, 1))
    );
    // The same partial doc again changes nothing: noop, no sequence number used.
    let (_, b) = call(
        &state,
        "POST",
        "/books/_update/1",
        Some(r#"{"doc": {"year": 1965}}"#),
    )
    .await;
    assert_eq!((b["result"].clone(), meta(&b)), (json!("noop"), (3, 3, 1)));
    let (_, b) = call(&state, "GET", "/books/_doc/1", None).await;
    assert_eq!(meta(&b), (3, 3, 1));
    assert_eq!(b["_source"], json!({"title": "Dune 2", "year": 1965}));

    // if_seq_no / if_primary_term.
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/1?if_seq_no=2&if_primary_term=1",
        Some("{}"),
    )
    .await;
    assert_eq!(s, 409, "{b}");
    assert_eq!(b["error"]["type"], "version_conflict_engine_exception");
    assert!(
        b["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("current document has seqNo [3] and primary term [1]"),
        "{b}"
    );
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/1?if_seq_no=3&if_primary_term=1",
        Some(r#"{"title": "Dune 3"}"#),
    )
    .await;
    assert_eq!((s.as_u16(), meta(&b)), (200, (4, 4, 1)), "{b}");
    let (s, _) = call(
        &state,
        "DELETE",
        "/books/_doc/2?if_seq_no=0&if_primary_term=1",
        None,
    )
    .await;
    assert_eq!(s, 409);
    let (s, _) = call(
        &state,
        "POST",
        "/books/_update/2?if_seq_no=1&if_primary_term=2",
        Some(r#"{"doc": {"year": 1}}"#),
    )
    .await;
    assert_eq!(s, 409);
    // External versions.
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/7?version=10&version_type=external",
        Some(r#"{"title": "x"}"#),
    )
    .await;
    assert_eq!((s.as_u16(), b["_version"].clone()), (201, json!(10)));
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/7?version=10&version_type=external",
        Some(r#"{"title": "y"}"#),
    )
    .await;
    assert_eq!(s, 409);
    assert!(b["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("current version [10] is higher or equal to the one provided [10]"));
    let (s, b) = call(
        &state,
        "PUT",
        "/books/_doc/7?version=10&version_type=external_gte",
        Some(r#"{"title": "y"}"#),
    )
    .await;
    assert_eq!((s.as_u16(), b["_version"].clone()), (200, json!(10)));
    let (s, _) = call(
        &state,
        "PUT",
        "/books/_doc/7?version=9&version_type=external_gte",
        Some("{}"),
    )
    .await;
    assert_eq!(s, 409);
    // Create conflicts, with the current version.
    let (s, b) = call(&state, "PUT", "/books/_create/7", Some("{}")).await;
    assert_eq!(s, 409);
    assert!(b["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("document already exists (current version [10])"));
    let (s, _) = call(&state, "PUT", "/books/_doc/7?op_type=create", Some("{}")).await;
    assert_eq!(s, 409);
    // Internal `version` is refused, as in Elasticsearch 7+.
    let (s, b) = call(&state, "PUT", "/books/_doc/7?version=11", Some("{}")).await;
    assert_eq!(
        (s.as_u16(), b["error"]["type"].clone()),
        (400, json!("action_request_validation_exception"))
    );
    // Delete: version + 1 and a new seq_no; re-creating continues the version.
    let (s, b) = call(&state, "DELETE", "/books/_doc/2", None).await;
    assert_eq!(
        (s.as_u16(), b["result"].clone(), meta(&b)),
        (200, json!("deleted"), (2, 7, 1)),
        "{b}"
    );
    let (s, b) = call(&state, "PUT", "/books/_doc/2", Some(r#"{"title": "Emma"}"#)).await;
    assert_eq!((s.as_u16(), meta(&b)), (201, (3, 8, 1)));
    // Bulk items carry the values and the conflicts.
    let bulk = "{\"index\":{\"_index\":\"books\",\"_id\":\"2\",\"if_seq_no\":8,\"if_primary_term\":1}}\n{\"title\":\"E\"}\n{\"index\":{\"_index\":\"books\",\"_id\":\"2\",\"if_seq_no\":8,\"if_primary_term\":1}}\n{\"title\":\"F\"}\n";
    let (_, b) = call(&state, "POST", "/_bulk", Some(bulk)).await;
    assert_eq!(meta(&b["items"][0]["index"]), (4, 9, 1), "{b}");
    assert_eq!(b["items"][1]["index"]["status"], 409);
    assert_eq!(b["errors"], true);
    // Search hits with version=true and seq_no_primary_term=true.
    let (_, b) = call(&state, "POST", "/books/_search?refresh=true", None).await;
    let _ = b;
    call(&state, "POST", "/books/_refresh", None).await;
    let (_, b) = call(&state, "POST", "/books/_search", Some(r#"{"query": {"ids": {"values": ["1"]}}, "version": true, "seq_no_primary_term": true}"#)).await;
    assert_eq!(meta(&b["hits"]["hits"][0]), (4, 4, 1), "{b}");
    assert!(b["hits"]["hits"][0]["_source"].get("_version").is_none());

    // Restart without a final commit (the translog replays), then with one: seq_no continues,
    // versions stay, the primary term grows by one per start.
    drop(state);
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let (_, b) = call(&state, "GET", "/books/_doc/1", None).await;
    assert_eq!(meta(&b), (4, 4, 1));
    let (_, b) = call(
        &state,
        "PUT",
        "/books/_doc/1",
        Some(r#"{"title": "Dune 4"}"#),
    )
    .await;
    assert_eq!(meta(&b), (5, 10, 2), "{b}");
    state.close().unwrap();
    drop(state);
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let (_, b) = call(
        &state,
        "PUT",
        "/books/_doc/1",
        Some(r#"{"title": "Dune 5"}"#),
    )
    .await;
    assert_eq!(meta(&b), (6, 11, 3), "{b}");
    let (s, _) = call(
        &state,
        "PUT",
        "/books/_doc/1?if_seq_no=11&if_primary_term=2",
        Some("{}"),
    )
    .await;
    assert_eq!(s, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_cat_wait_for_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let refresher = Refresher::start(&state);
    let (_, b) = call(&state, "GET", "/_cluster/health", None).await;
    assert_eq!(
        (b["status"].clone(), b["active_primary_shards"].clone()),
        (json!("green"), json!(0))
    );
    assert_eq!(call(&state, "PUT", "/books", Some(BOOKS)).await.0, 200);
    let with_replicas = r#"{"settings": {"number_of_replicas": 1, "refresh_interval": "200ms"},
        "mappings": {"properties": {"a": {"type": "long"}}}}"#;
    assert_eq!(
        call(&state, "PUT", "/rep", Some(with_replicas)).await.0,
        200
    );
    let (_, b) = call(&state, "GET", "/_cluster/health", None).await;
    assert_eq!(b["status"], "yellow", "{b}");
    assert_eq!(
        (
            b["active_primary_shards"].clone(),
            b["unassigned_shards"].clone()
        ),
        (json!(2), json!(1))
    );
    let (_, b) = call(&state, "GET", "/_cluster/health/books", None).await;
    assert_eq!(
        (b["status"].clone(), b["unassigned_shards"].clone()),
        (json!("green"), json!(0))
    );
    let (s, b) = call(
        &state,
        "GET",
        "/_cluster/health?wait_for_status=green&timeout=1s",
        None,
    )
    .await;
    assert_eq!((s.as_u16(), b["timed_out"].clone()), (408, json!(true)));
    // A missing index: red, and 408 once `timeout` has passed (as in Elasticsearch).
    let (s, b) = call(&state, "GET", "/_cluster/health/nope?timeout=0s", None).await;
    assert_eq!(
        (s.as_u16(), b["status"].clone(), b["timed_out"].clone()),
        (408, json!("red"), json!(true))
    );

    // refresh=wait_for: visible when the response comes, and not forced (the scheduler did it).
    let (s, b) = call(
        &state,
        "PUT",
        "/rep/_doc/1?refresh=wait_for",
        Some(r#"{"a": 1}"#),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    assert!(b.get("forced_refresh").is_none(), "{b}");
    let (_, b) = call(&state, "POST", "/rep/_count", None).await;
    assert_eq!(b["count"], 1);

    // _cat/indices figures: documents, deleted documents, size.
    for i in 0..3 {
        call(
            &state,
            "PUT",
            &format!("/books/_doc/{i}"),
            Some(r#"{"title": "t"}"#),
        )
        .await;
    }
    call(&state, "POST", "/books/_refresh", None).await;
    call(&state, "DELETE", "/books/_doc/0?refresh=true", None).await;
    let (_, b) = call(
        &state,
        "GET",
        "/_cat/indices/books?format=json&bytes=b",
        None,
    )
    .await;
    let row = &b[0];
    assert_eq!(
        (row["docs.count"].clone(), row["docs.deleted"].clone()),
        (json!("2"), json!("1")),
        "{b}"
    );
    assert!(row["store.size"].as_str().unwrap().parse::<u64>().unwrap() > 0);
    assert_eq!(row["health"], "green");
    let (_, b) = call(&state, "GET", "/_cat/indices?v", None).await;
    let text = b.as_str().unwrap();
    assert!(text.starts_with("health status index"), "{text}");
    assert!(text.contains("yellow open rep rep 1 1 1 0"), "{text}");

    // Refused parameters and endpoints quarry lacks.
    for (method, uri, body, status, needle) in [
        ("PUT", "/books/_doc/1?routing=a", Some("{}"), 400, "routing"),
        ("GET", "/books/_doc/1?routing=a", None, 400, "routing"),
        ("POST", "/books/_search?routing=a", None, 400, "routing"),
        (
            "PUT",
            "/m",
            Some(r#"{"mappings": {"properties": {"t": {"type": "text", "store": true}}}}"#),
            400,
            "store",
        ),
        (
            "PUT",
            "/m",
            Some(r#"{"mappings": {"_source": {"enabled": false}}}"#),
            400,
            "_source",
        ),
        (
            "POST",
            "/books/_update/1?retry_on_conflict=x",
            Some(r#"{"doc": {}}"#),
            400,
            "retry_on_conflict",
        ),
        (
            "GET",
            "/_search_shards",
            None,
            400,
            "no handler found for uri [/_search_shards] and method [GET]",
        ),
        (
            "GET",
            "/_mtermvectors",
            None,
            400,
            "no handler found for uri [/_mtermvectors] and method [GET]",
        ),
        (
            "POST",
            "/books/_termvectors",
            Some("{}"),
            400,
            "no handler found",
        ),
        ("GET", "/_mget", None, 400, "_mget needs a body"),
        (
            "POST",
            "/books/_mget",
            Some("{}"),
            400,
            "no documents to get",
        ),
        ("POST", "/_msearch", Some("{}"), 400, "line [1]"),
        (
            "DELETE",
            "/books/_search",
            None,
            405,
            "Incorrect HTTP method",
        ),
    ] {
        let (s, b) = call(&state, method, uri, body).await;
        assert_eq!(s.as_u16(), status, "{method} {uri}: {b}");
        assert!(
            b["error"]["reason"].as_str().unwrap().contains(needle),
            "{method} {uri}: {b}"
        );
    }
    let bulk = "{\"index\":{\"_index\":\"books\",\"_id\":\"1\",\"routing\":\"a\"}}\n{}\n";
    let (s, b) = call(&state, "POST", "/_bulk", Some(bulk)).await;
    assert_eq!(s, 400);
    assert!(
        b["error"]["reason"].as_str().unwrap().contains("routing"),
        "{b}"
    );
    let (s, _) = call(
        &state,
        "POST",
        "/books/_update/1?retry_on_conflict=3",
        Some(r#"{"doc": {"year": 2}}"#),
    )
    .await;
    assert_eq!(s, 200);

    // GET / says what it is.
    let (_, b) = call(&state, "GET", "/", None).await;
    for k in [
        "number",
        "build_flavor",
        "build_type",
        "build_hash",
        "build_date",
        "build_snapshot",
        "lucene_version",
        "minimum_wire_compatibility_version",
        "minimum_index_compatibility_version",
    ] {
        assert!(b["version"].get(k).is_some(), "{k}: {b}");
    }
    assert_eq!(b["version"]["build_flavor"], "default");
    assert_eq!(b["tagline"], "You Know, for Search");
    assert_eq!(b["quarry"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(call(&state, "HEAD", "/", None).await.0, 200);
    drop(refresher);
}
