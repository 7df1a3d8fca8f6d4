//! Dense vectors through the REST API driven in-process: `dense_vector` mappings, vectors in
//! documents, `knn` (alone, several, beside a query) checked against a brute-force
//! computation, retrievers (Elasticsearch's documented RRF example with its documented
//! scores), and bad input that gets a 400 naming it.
use std::collections::HashMap;

use quarry_server::{AppState, Config};
use serde_json::{json, Value};

mod common;
use common::{call, call_raw};

/// Reproducible vectors: a xorshift stream of values in [-1, 1).
fn vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
    };
    (0..n)
        .map(|_| (0..dims).map(|_| next()).collect())
        .collect()
}

const WORDS: [&str; 4] = ["red", "green", "blue", "gold"];

/// An index `vec` of `n` documents: `v` (l2_norm, 4 dims), `c` (cosine, 4 dims, int8_hnsw),
/// `body` (one or two colour words) and `tag`; returns the vectors by `_id`.
async fn vector_index(state: &AppState, n: usize) -> HashMap<String, (Vec<f32>, Vec<f32>, String)> {
    let mappings = json!({"mappings": {"properties": {
        "v": {"type": "dense_vector", "dims": 4, "similarity": "l2_norm",
              "index_options": {"type": "hnsw", "m": 8, "ef_construction": 50}},
        "c": {"type": "dense_vector", "dims": 4, "similarity": "cosine",
              "index_options": {"type": "int8_hnsw"}},
        "body": {"type": "text"}, "tag": {"type": "keyword"}}}});
    let (st, b) = call(state, "PUT", "/vec", Some(mappings)).await;
    assert_eq!(st, 200, "{b}");
    let vs = vectors(n, 4, 7);
    let cs = vectors(n, 4, 11);
    let mut bulk = String::new();
    let mut docs = HashMap::new();
    for i in 0..n {
        let body = if i % 3 == 0 {
            format!("{} {}", WORDS[i % 4], WORDS[(i / 4) % 4])
        } else {
            WORDS[i % 4].to_string()
        };
        bulk.push_str(&json!({"index": {"_id": i.to_string()}}).to_string());
        bulk.push('\n');
        bulk.push_str(
            &json!({"v": vs[i], "c": cs[i], "body": body, "tag": if i % 2 == 0 { "even" } else { "odd" }})
                .to_string(),
        );
        bulk.push('\n');
        docs.insert(i.to_string(), (vs[i].clone(), cs[i].clone(), body));
        if i == n / 2 {
            // Flush a segment half-way, so that searches cross segments.
            let (st, _) = call_raw(
                state,
                "POST",
                "/vec/_bulk?refresh=true",
                Some(std::mem::take(&mut bulk)),
                "application/x-ndjson",
            )
            .await;
            assert_eq!(st, 200);
        }
    }
    let (st, b) = call_raw(
        state,
        "POST",
        "/vec/_bulk?refresh=true",
        Some(bulk),
        "application/x-ndjson",
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(b["errors"], false, "{b}");
    docs
}

fn l2_score(a: &[f32], b: &[f32]) -> f64 {
    let d2: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum();
    1.0 / (1.0 + d2)
}

fn cosine_score(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (1.0 + dot / (na * nb)) / 2.0
}

/// `(id, score)` of a response's hits.
fn hits(b: &Value) -> Vec<(String, f64)> {
    b["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {b}"))
        .iter()
        .map(|h| {
            (
                h["_id"].as_str().unwrap().to_string(),
                h["_score"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Checks `got` against the first `got.len()` of the expected `(id, score)` ranking `want`
/// (best first, possibly longer): same scores in order; an id may differ only where another
/// document of `want` has the same score.
fn assert_ranking(got: &[(String, f64)], want: &[(String, f64)]) {
    assert!(got.len() <= want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g.1 - w.1).abs() < 1e-5, "{got:?}\nvs\n{want:?}");
        if g.0 != w.0 {
            let tie = want.iter().any(|x| x.0 == g.0 && (x.1 - g.1).abs() < 1e-5);
            assert!(tie, "{got:?}\nvs\n{want:?}");
        }
    }
}

fn top(mut all: Vec<(String, f64)>, n: usize) -> Vec<(String, f64)> {
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.truncate(n);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knn_answers_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let n = 300;
    let docs = vector_index(&state, n).await;
    let q = vec![0.3f32, -0.2, 0.5, 0.1];

    // The mapping comes back as given.
    let (st, b) = call(&state, "GET", "/vec/_mapping", None).await;
    assert_eq!(st, 200);
    assert_eq!(
        b["vec"]["mappings"]["properties"]["v"],
        json!({"type": "dense_vector", "dims": 4, "index": true, "similarity": "l2_norm",
               "index_options": {"type": "hnsw", "m": 8, "ef_construction": 50}})
    );
    assert_eq!(
        b["vec"]["mappings"]["properties"]["c"]["index_options"]["type"],
        "int8_hnsw"
    );

    // Vectors come back in _source.
    let (_, b) = call(&state, "GET", "/vec/_doc/5", None).await;
    let want: Vec<f64> = docs["5"].0.iter().map(|x| f64::from(*x)).collect();
    let got: Vec<f64> = b["_source"]["v"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6);
    }

    // knn alone, exact (num_candidates covers every document): the brute-force top 10.
    let l2: Vec<(String, f64)> = docs
        .iter()
        .map(|(id, d)| (id.clone(), l2_score(&d.0, &q)))
        .collect();
    let body = json!({"knn": {"field": "v", "query_vector": q, "k": 10, "num_candidates": 1000}});
    let (st, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(hits(&b).len(), 10);
    assert_ranking(&hits(&b), &top(l2.clone(), usize::MAX));
    assert_eq!(b["hits"]["total"]["value"], 10);

    // size below k pages through the k; from skips.
    let body = json!({"knn": {"field": "v", "query_vector": q, "k": 10, "num_candidates": 1000}, "size": 3, "from": 2});
    let (_, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(hits(&b).len(), 3);
    assert_ranking(&hits(&b), &top(l2.clone(), 10)[2..]);

    // The cosine field (int8 quantized, re-scored with the floats).
    let cos: Vec<(String, f64)> = docs
        .iter()
        .map(|(id, d)| (id.clone(), cosine_score(&d.1, &q)))
        .collect();
    let body = json!({"knn": {"field": "c", "query_vector": q, "k": 5, "num_candidates": 1000}});
    let (_, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(hits(&b).len(), 5);
    assert_ranking(&hits(&b), &top(cos.clone(), usize::MAX));

    // A filter and a similarity threshold (a distance for l2_norm).
    let body = json!({"knn": {"field": "v", "query_vector": q, "k": 50, "num_candidates": 1000,
                               "filter": [{"term": {"tag": "even"}}], "similarity": 0.9}});
    let (_, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    let want: Vec<(String, f64)> = l2
        .iter()
        .filter(|(id, s)| id.parse::<usize>().unwrap() % 2 == 0 && *s >= 1.0 / (1.0 + 0.81) - 1e-7)
        .cloned()
        .collect();
    assert!(!want.is_empty() && want.len() < 50, "{}", want.len());
    let got = hits(&b);
    assert_eq!(got.len(), want.len().min(10));
    assert_ranking(&got, &top(want.clone(), usize::MAX));
    assert_eq!(
        b["hits"]["total"]["value"].as_u64().unwrap() as usize,
        want.len()
    );

    // Two knn sections: scores summed per document, boosts applied.
    let body = json!({"knn": [
        {"field": "v", "query_vector": q, "k": 20, "num_candidates": 1000, "boost": 2.0},
        {"field": "c", "query_vector": q, "k": 20, "num_candidates": 1000}], "size": 15});
    let (_, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    let mut sum: HashMap<String, f64> = HashMap::new();
    for (id, s) in top(l2.clone(), 20) {
        *sum.entry(id).or_default() += 2.0 * s;
    }
    for (id, s) in top(cos.clone(), 20) {
        *sum.entry(id).or_default() += s;
    }
    let got = hits(&b);
    assert_eq!(got.len(), 15);
    assert_ranking(&got, &top(sum.clone().into_iter().collect(), usize::MAX));
    assert_eq!(
        b["hits"]["total"]["value"].as_u64().unwrap() as usize,
        sum.len()
    );

    // knn beside a query: the union, each document's query and kNN scores summed.
    let (_, qb) = call(
        &state,
        "POST",
        "/vec/_search",
        Some(json!({"query": {"match": {"body": "gold"}}, "size": 1000})),
    )
    .await;
    let query_scores: HashMap<String, f64> = hits(&qb).into_iter().collect();
    assert!(query_scores.len() > 20);
    let body = json!({"query": {"match": {"body": "gold"}},
                      "knn": {"field": "v", "query_vector": q, "k": 10, "num_candidates": 1000, "boost": 3.0},
                      "size": 12});
    let (_, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    let mut combined: HashMap<String, f64> = query_scores.clone();
    for (id, s) in top(l2.clone(), 10) {
        *combined.entry(id).or_default() += 3.0 * s;
    }
    let got = hits(&b);
    assert_eq!(got.len(), 12);
    assert_ranking(
        &got,
        &top(combined.clone().into_iter().collect(), usize::MAX),
    );
    assert_eq!(
        b["hits"]["total"]["value"].as_u64().unwrap() as usize,
        combined.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrievers_fuse_rankings() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let docs = vector_index(&state, 120).await;
    let q = vec![-0.4f32, 0.1, 0.2, 0.7];
    let l2: Vec<(String, f64)> = docs
        .iter()
        .map(|(id, d)| (id.clone(), l2_score(&d.0, &q)))
        .collect();
    let (_, qb) = call(
        &state,
        "POST",
        "/vec/_search",
        Some(json!({"query": {"match": {"body": "red blue"}}, "size": 1000})),
    )
    .await;
    let text = hits(&qb);
    let knn = top(l2, 1000);
    let window = 20;
    // rrf over the text and kNN rankings, each cut to the window, rank constant 10.
    let mut rrf: HashMap<String, f64> = HashMap::new();
    for list in [&text, &knn] {
        for (rank, (id, _)) in list.iter().take(window).enumerate() {
            *rrf.entry(id.clone()).or_default() += 1.0 / (10.0 + rank as f64 + 1.0);
        }
    }
    let body = json!({"retriever": {"rrf": {"retrievers": [
        {"standard": {"query": {"match": {"body": "red blue"}}}},
        {"knn": {"field": "v", "query_vector": q, "k": 30, "num_candidates": 1000}}],
        "rank_constant": 10, "rank_window_size": window}}, "size": 10});
    let (st, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(st, 200, "{b}");
    let got = hits(&b);
    assert_eq!(got.len(), 10);
    assert_ranking(&got, &top(rrf.into_iter().collect(), usize::MAX));

    // linear with weights and min-max normalization.
    let minmax = |list: &[(String, f64)]| -> Vec<(String, f64)> {
        let l = &list[..list.len().min(window)];
        let (lo, hi) = l.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| {
            (lo.min(x.1), hi.max(x.1))
        });
        l.iter()
            .map(|(id, s)| (id.clone(), (s - lo) / (hi - lo)))
            .collect()
    };
    let mut lin: HashMap<String, f64> = HashMap::new();
    for (w, list) in [(2.0, minmax(&text)), (0.5, minmax(&knn))] {
        for (id, s) in list {
            *lin.entry(id).or_default() += w * s;
        }
    }
    let body = json!({"retriever": {"linear": {"retrievers": [
        {"retriever": {"standard": {"query": {"match": {"body": "red blue"}}}}, "weight": 2, "normalizer": "minmax"},
        {"retriever": {"knn": {"field": "v", "query_vector": q, "k": 30, "num_candidates": 1000}}, "weight": 0.5, "normalizer": "minmax"}],
        "rank_window_size": window}}, "size": 10});
    let (st, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(st, 200, "{b}");
    let got = hits(&b);
    assert_eq!(got.len(), 10);
    assert_ranking(&got, &top(lin.into_iter().collect(), usize::MAX));

    // Nested: rrf of (rrf of two standards) and a knn; a standard retriever's filter.
    let body = json!({"retriever": {"rrf": {"retrievers": [
        {"rrf": {"retrievers": [
            {"standard": {"query": {"match": {"body": "red"}}, "filter": {"term": {"tag": "even"}}}},
            {"standard": {"query": {"match": {"body": "blue"}}}}], "rank_window_size": 10}},
        {"knn": {"field": "v", "query_vector": q, "k": 10, "num_candidates": 1000}}],
        "rank_window_size": 10}}});
    let (st, b) = call(&state, "POST", "/vec/_search", Some(body)).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(hits(&b).len(), 10);
    let (_, f) = call(&state, "POST", "/vec/_search", Some(json!({"retriever": {"standard": {"query": {"match": {"body": "red"}}, "filter": {"term": {"tag": "even"}}}}, "size": 100}))).await;
    for (id, _) in hits(&f) {
        assert_eq!(id.parse::<usize>().unwrap() % 2, 0);
        assert!(docs[&id].2.contains("red"));
    }
}

/// Elasticsearch's "Reciprocal rank fusion full example" (docs/reference/elasticsearch/
/// rest-apis/reciprocal-rank-fusion.md): its index, its request and its documented scores and
/// aggregation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elasticsearch_s_documented_rrf_example() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    let mappings = json!({"mappings": {"properties": {
        "text": {"type": "text"},
        "vector": {"type": "dense_vector", "dims": 1, "index": true, "similarity": "l2_norm",
                   "index_options": {"type": "hnsw"}},
        "integer": {"type": "integer"}}}});
    assert_eq!(
        call(&state, "PUT", "/example-index", Some(mappings))
            .await
            .0,
        200
    );
    for (id, doc) in [
        ("1", json!({"text": "rrf", "vector": [5], "integer": 1})),
        ("2", json!({"text": "rrf rrf", "vector": [4], "integer": 2})),
        (
            "3",
            json!({"text": "rrf rrf rrf", "vector": [3], "integer": 1}),
        ),
        ("4", json!({"text": "rrf rrf rrf rrf", "integer": 2})),
        ("5", json!({"vector": [0], "integer": 1})),
    ] {
        let (st, b) = call(
            &state,
            "PUT",
            &format!("/example-index/_doc/{id}"),
            Some(doc),
        )
        .await;
        assert_eq!(st, 201, "{b}");
    }
    call(&state, "POST", "/example-index/_refresh", None).await;
    let body = json!({
        "retriever": {"rrf": {"retrievers": [
            {"standard": {"query": {"term": {"text": "rrf"}}}},
            {"knn": {"field": "vector", "query_vector": [3], "k": 5, "num_candidates": 5}}],
            "rank_window_size": 5, "rank_constant": 1}},
        "size": 3,
        "aggs": {"int_count": {"terms": {"field": "integer"}}}});
    let (st, b) = call(&state, "POST", "/example-index/_search", Some(body)).await;
    assert_eq!(st, 200, "{b}");
    let got: Vec<(String, f64)> = hits(&b);
    let want = [("3", 0.8333334), ("2", 0.5833334), ("4", 0.5)];
    assert_eq!(got.len(), 3, "{b}");
    for ((gid, gs), (wid, ws)) in got.iter().zip(want) {
        assert_eq!(gid, wid, "{b}");
        assert!((gs - ws).abs() < 1e-6, "{b}");
    }
    assert_eq!(b["hits"]["total"], json!({"value": 5, "relation": "eq"}));
    assert_eq!(
        b["aggregations"]["int_count"]["buckets"],
        json!([{"key": 1, "doc_count": 3}, {"key": 2, "doc_count": 2}])
    );
    // The kNN retriever's documented scores on their own: 1.0, 0.5, 0.2, 0.1.
    let body = json!({"retriever": {"knn": {"field": "vector", "query_vector": [3], "k": 5, "num_candidates": 5}}});
    let (_, b) = call(&state, "POST", "/example-index/_search", Some(body)).await;
    let got: Vec<(String, f64)> = hits(&b);
    let want = [("3", 1.0), ("2", 0.5), ("1", 0.2), ("5", 0.1)];
    assert_eq!(got.len(), 4, "{b}");
    for ((gid, gs), (wid, ws)) in got.iter().zip(want) {
        assert_eq!(gid, wid);
        assert!((gs - ws).abs() < 1e-6, "{b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_vector_input_is_a_400_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).unwrap();
    for (mapping, needle) in [
        (json!({"type": "dense_vector", "dims": 0}), "dims"),
        (
            json!({"type": "dense_vector", "dims": 3, "element_type": "byte"}),
            "byte",
        ),
        (
            json!({"type": "dense_vector", "dims": 3, "similarity": "nope"}),
            "nope",
        ),
        (
            json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "hnsw", "mm": 3}}),
            "mm",
        ),
    ] {
        let (st, b) = call(
            &state,
            "PUT",
            "/bad",
            Some(json!({"mappings": {"properties": {"v": mapping}}})),
        )
        .await;
        assert_eq!(st, 400, "{b}");
        assert!(
            b["error"]["reason"].as_str().unwrap().contains(needle),
            "{b}"
        );
    }
    let mappings = json!({"mappings": {"properties": {
        "v": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}, "t": {"type": "text"}}}});
    assert_eq!(call(&state, "PUT", "/vi", Some(mappings)).await.0, 200);
    for doc in [
        json!({"v": [1, 2]}),
        json!({"v": [1, "x", 2]}),
        json!({"v": [1, 2, 1e39]}),
        json!({"v": "abc"}),
    ] {
        let (st, b) = call(&state, "PUT", "/vi/_doc/x", Some(doc.clone())).await;
        assert_eq!(st, 400, "{doc}: {b}");
        assert!(b["error"]["reason"].as_str().unwrap().contains("v"), "{b}");
    }
    // In _bulk, the bad item's own error; the good one is indexed.
    let bulk = "{\"index\":{\"_id\":\"a\"}}\n{\"v\":[1,2]}\n{\"index\":{\"_id\":\"b\"}}\n{\"v\":[1,2,3]}\n";
    let (st, b) = call_raw(
        &state,
        "POST",
        "/vi/_bulk?refresh=true",
        Some(bulk.into()),
        "application/x-ndjson",
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(b["errors"], true);
    assert_eq!(b["items"][0]["index"]["status"], 400);
    assert!(
        b["items"][0]["index"]["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("[v]")
            || b["items"][0]["index"]["error"]["reason"]
                .as_str()
                .unwrap()
                .contains("\"v\""),
        "{b}"
    );
    assert_eq!(b["items"][1]["index"]["status"], 201);
    let knn = |extra: Value| {
        let mut k = json!({"field": "v", "query_vector": [1, 0, 0], "k": 2, "num_candidates": 5});
        for (key, v) in extra.as_object().unwrap() {
            k[key] = v.clone();
        }
        k
    };
    for (body, needle) in [
        (
            json!({"knn": knn(json!({"query_vector": [1, 0]}))}),
            "dimensions",
        ),
        (json!({"knn": knn(json!({"bogus": 1}))}), "bogus"),
        (json!({"knn": knn(json!({"field": "t"}))}), "[t]"),
        (
            json!({"knn": knn(json!({"k": 10, "num_candidates": 5}))}),
            "num_candidates",
        ),
        (
            json!({"knn": knn(json!({"num_candidates": 10001}))}),
            "10000",
        ),
        (
            json!({"retriever": {"knn": knn(json!({}))}, "query": {"match_all": {}}}),
            "[query]",
        ),
        (
            json!({"retriever": {"knn": knn(json!({}))}, "knn": knn(json!({}))}),
            "[knn]",
        ),
        (
            json!({"retriever": {"rrf": {"retrievers": [{"knn": knn(json!({}))}], "rank_window_size": 2}}, "size": 5}),
            "rank_window_size",
        ),
        (
            json!({"retriever": {"linear": {"retrievers": [{"retriever": {"knn": knn(json!({}))}, "normalizer": "zscore"}]}}}),
            "zscore",
        ),
        (json!({"retriever": {"magic": {}}}), "magic"),
        (json!({"knn": knn(json!({})), "sort": ["_doc"]}), "sort"),
    ] {
        let (st, b) = call(&state, "POST", "/vi/_search", Some(body.clone())).await;
        assert_eq!(st, 400, "{body}: {b}");
        assert!(
            b["error"]["reason"].as_str().unwrap().contains(needle),
            "{body}: {b}"
        );
    }
    let (st, b) = call(
        &state,
        "POST",
        "/vi/_count",
        Some(json!({"knn": knn(json!({}))})),
    )
    .await;
    assert_eq!(st, 400, "{b}");
    assert!(
        b["error"]["reason"].as_str().unwrap().contains("knn"),
        "{b}"
    );
}
