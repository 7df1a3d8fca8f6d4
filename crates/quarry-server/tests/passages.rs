//! Long texts through the REST API with the real model (all-MiniLM-L6-v2): a `semantic_text`
//! field whose documents are several Reuters stories long, so each is embedded as several
//! passages. Every kNN hit says which passage matched (`_passage`), as the library's
//! `Searcher::knn_hits` says on the same searcher; the semantic highlighter returns the
//! passages' text, which is the source text at the passage's byte span, best first by scores
//! computed here from the stored passage vectors; bad highlighter requests are 400s naming the
//! field or parameter.
//!
//! Needs the model (`QUARRY_TEST_MODEL_DIR`, set by scripts/test.sh from
//! scripts/fetch-model.sh); without it the test says it skipped, except under CI, where it
//! fails. Built with the `embed` feature (`cargo test -p quarry-server --features embed --test
//! passages`; `cargo test --workspace` turns it on through the CLI).
use std::io::Read;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use quarry::search::knn::{KnnQuery, Passage};
use quarry::vector::VectorSource;
use quarry::{DocAddress, Searcher};
use quarry_server::{AppState, Config};
use serde_json::{json, Value};

mod common;
use common::{call, call_raw};

fn model_dir() -> Option<PathBuf> {
    match std::env::var_os("QUARRY_TEST_MODEL_DIR") {
        Some(d) => Some(d.into()),
        None if std::env::var_os("CI").is_some() => {
            panic!("QUARRY_TEST_MODEL_DIR is not set under CI (scripts/test.sh sets it)")
        }
        None => {
            eprintln!("passages: SKIPPED: set QUARRY_TEST_MODEL_DIR (bash scripts/fetch-model.sh prints it)");
            None
        }
    }
}

async fn search(state: &AppState, body: Value) -> Value {
    let (st, r) = call(state, "POST", "/sem/_search", Some(body.clone())).await;
    assert_eq!(st, StatusCode::OK, "{body}: {r}");
    r
}

/// The first `n` Reuters stories of at least 100 words.
fn reuters(n: usize) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/reuters21578.jsonl.zst");
    let mut text = String::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(path).unwrap())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| {
            d["body"]
                .as_str()
                .is_some_and(|b| b.split_whitespace().count() >= 100)
        })
        .take(n)
        .collect()
}

const DOCS: usize = 24;
const QUESTIONS: [&str; 3] = [
    "which countries export wheat?",
    "oil prices fell",
    "central bank interest rates",
];
const HIDDEN: &str = "_inference.body";

/// The text a document's passages span: its body, or its values joined by newlines.
fn source_text(src: &Value) -> String {
    match &src["body"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("no body: {other}"),
    }
}

/// The document with `_id` `id` on `s`.
fn address(s: &Searcher, id: &str) -> DocAddress {
    let q = quarry::query::Query::term("_id", id);
    let hits = s.search(&q, 1, quarry::SearchMode::Top).unwrap().top;
    assert_eq!(hits.len(), 1, "{id}");
    hits[0].doc
}

/// Every passage of a document with its score for `query`, computed here from the stored
/// passage vectors: Elasticsearch's cosine score (1 + cos) / 2.
fn passage_scores_by_hand(s: &Searcher, doc: DocAddress, query: &[f32]) -> Vec<(Passage, f32)> {
    let field = s.schema().field_id(HIDDEN).unwrap();
    let v = s.segments()[doc.segment as usize]
        .vectors(field)
        .unwrap()
        .unwrap();
    let norm = |x: &[f32]| x.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.ords(doc.doc)
        .map(|ord| {
            let x = v.vectors().vector(ord).to_vec();
            let dot: f32 = x.iter().zip(query).map(|(a, b)| a * b).sum();
            let cos = dot / (norm(&x) * norm(query));
            (v.passage(ord).unwrap(), (1.0 + cos) / 2.0)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passages_through_hits_and_the_semantic_highlighter() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    quarry::embed::add_model(&quarry_server::inference::registry(&data), "minilm", &model).unwrap();
    let state = AppState::open(Config::new(&data)).unwrap();
    let (st, r) = call(
        &state,
        "PUT",
        "/sem",
        Some(json!({"mappings": {"properties": {
            "title": {"type": "text"},
            "body": {"type": "semantic_text", "inference_id": "minilm"}}}})),
    )
    .await;
    assert_eq!(st, 200, "{r}");
    // Each document three stories long (several passages of 256 word pieces); the last gives
    // its stories as an array of values, embedded joined by newlines.
    let stories = reuters(DOCS * 3);
    let mut bulk = String::new();
    let mut sources = std::collections::HashMap::new();
    for (i, three) in stories.chunks(3).take(DOCS).enumerate() {
        let bodies: Vec<&str> = three.iter().map(|d| d["body"].as_str().unwrap()).collect();
        let body = if i == DOCS - 1 {
            json!(bodies)
        } else {
            json!(bodies.join("\n\n"))
        };
        let src = json!({"title": three[0]["title"], "body": body});
        bulk.push_str(&format!("{{\"index\": {{\"_id\": \"{i}\"}}}}\n{src}\n"));
        sources.insert(i.to_string(), src);
    }
    let (st, r) = call_raw(
        &state,
        "POST",
        "/sem/_bulk?refresh=true",
        Some(bulk),
        "application/x-ndjson",
    )
    .await;
    assert_eq!((st.as_u16(), &r["errors"]), (200, &json!(false)), "{r}");
    let handle = state.indices.get("sem").unwrap();
    let searcher = handle.searcher();
    let id_of = |doc: DocAddress| -> String {
        searcher.stored_fields(doc).unwrap()["_id"]
            .as_str()
            .unwrap()
            .to_string()
    };

    let mut later_passages = 0;
    for q in QUESTIONS {
        // The library on the same searcher: the hits and the passages that scored them.
        let v = handle.embed_query(HIDDEN, q).unwrap();
        let lib = searcher
            .knn_hits(&KnnQuery::new(HIDDEN, v.clone(), 5).num_candidates(100))
            .unwrap();
        let r = search(
            &state,
            json!({"query": {"semantic": {"field": "body", "query": q}}, "size": 5,
                   "_source": false,
                   "highlight": {"fields": {"body": {"type": "semantic", "number_of_fragments": 1}}}}),
        )
        .await;
        let hits = r["hits"]["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 5, "{q}");
        for (h, l) in hits.iter().zip(&lib) {
            let id = id_of(l.hit.doc);
            assert_eq!(h["_id"], id.as_str(), "{q}");
            let score = h["_score"].as_f64().unwrap() as f32;
            assert!(
                (score - l.hit.score).abs() <= 1e-5,
                "{q}: {score} {}",
                l.hit.score
            );
            let p = l
                .passage
                .expect("every vector of a semantic_text field is a passage");
            assert_eq!(
                h["_passage"],
                json!({"field": "body", "index": p.index, "start": p.start, "end": p.end}),
                "{q}"
            );
            later_passages += usize::from(p.index > 0);
            // The fragment is the source text at the passage's byte span.
            let text = source_text(&sources[&id]);
            let span = &text[p.start as usize..p.end as usize];
            assert_eq!(h["highlight"]["body"], json!([span]), "{q}: {id}");
            assert_eq!(
                searcher
                    .passage_text(l.hit.doc, HIDDEN, &p)
                    .unwrap()
                    .as_deref(),
                Some(span)
            );
        }

        // Several fragments: best first by the passages' scores (computed here), or in text
        // order; 0 fragments means the best one.
        let hl = |n: i64, order: &str| {
            json!({"query": {"semantic": {"field": "body", "query": q}}, "size": 5,
                   "_source": false, "highlight": {"fields": {"body": {
                       "type": "semantic", "number_of_fragments": n, "order": order}}}})
        };
        let by_score = search(&state, hl(3, "score")).await;
        let in_order = search(&state, hl(3, "none")).await;
        let zero = search(&state, hl(0, "score")).await;
        for (i, l) in lib.iter().enumerate() {
            let id = id_of(l.hit.doc);
            let text = source_text(&sources[&id]);
            let mut scored = passage_scores_by_hand(&searcher, address(&searcher, &id), &v);
            assert!(scored.len() >= 2, "{id} is several passages long");
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            // The best passage by hand is the one that scored the hit.
            assert_eq!(Some(scored[0].0), l.passage, "{q}: {id}");
            assert!((scored[0].1 - l.hit.score).abs() < 1e-5);
            let best3: Vec<Passage> = scored.iter().take(3).map(|s| s.0).collect();
            let texts = |ps: &[Passage]| -> Value {
                ps.iter()
                    .map(|p| text[p.start as usize..p.end as usize].to_string())
                    .collect()
            };
            assert_eq!(
                by_score["hits"]["hits"][i]["highlight"]["body"],
                texts(&best3)
            );
            let mut ordered = best3.clone();
            ordered.sort_by_key(|p| p.index);
            assert_eq!(
                in_order["hits"]["hits"][i]["highlight"]["body"],
                texts(&ordered)
            );
            assert_eq!(
                zero["hits"]["hits"][i]["highlight"]["body"],
                texts(&best3[..1])
            );
        }

        // A `knn` section on the field and an `rrf` retriever say the same passages.
        let knn = search(
            &state,
            json!({"knn": {"field": "body", "k": 5, "num_candidates": 100,
                   "query_vector_builder": {"text_embedding": {"model_id": "minilm", "model_text": q}}},
                   "_source": false}),
        )
        .await;
        for (h, w) in knn["hits"]["hits"].as_array().unwrap().iter().zip(hits) {
            assert_eq!((&h["_id"], &h["_passage"]), (&w["_id"], &w["_passage"]));
        }
        let rrf = search(
            &state,
            json!({"retriever": {"rrf": {"retrievers": [
                       {"standard": {"query": {"match": {"title": "wheat oil bank"}}}},
                       {"standard": {"query": {"semantic": {"field": "body", "query": q}}}}],
                       "rank_window_size": 10}},
                   "size": 10, "_source": false}),
        )
        .await;
        let wide = searcher
            .knn_hits(&KnnQuery::new(HIDDEN, v.clone(), 10).num_candidates(100))
            .unwrap();
        for h in rrf["hits"]["hits"].as_array().unwrap() {
            let found = wide.iter().find(|l| id_of(l.hit.doc) == h["_id"]);
            match found.and_then(|l| l.passage) {
                Some(p) => assert_eq!(
                    h["_passage"],
                    json!({"field": "body", "index": p.index, "start": p.start, "end": p.end})
                ),
                // Found by the title query alone: no passage.
                None => assert!(h.get("_passage").is_none(), "{h}"),
            }
        }
    }
    assert!(
        later_passages > 0,
        "some hit matched by a passage after the first"
    );

    // No `type` on a semantic_text field searched by its vectors: the semantic highlighter
    // (5 fragments, text order); searched by its terms: the unified one.
    let q = QUESTIONS[0];
    let default = search(
        &state,
        json!({"query": {"semantic": {"field": "body", "query": q}}, "size": 3, "_source": false,
               "highlight": {"fields": {"body": {}}}}),
    )
    .await;
    let semantic = search(
        &state,
        json!({"query": {"semantic": {"field": "body", "query": q}}, "size": 3, "_source": false,
               "highlight": {"fields": {"body": {"type": "semantic"}}}}),
    )
    .await;
    assert_eq!(default["hits"], semantic["hits"]);
    let terms = search(
        &state,
        json!({"query": {"match": {"body": "wheat"}}, "size": 3, "_source": false,
               "highlight": {"fields": {"body": {}}}}),
    )
    .await;
    let frags = terms["hits"]["hits"][0]["highlight"]["body"].to_string();
    assert!(frags.to_lowercase().contains("<em>wheat</em>"), "{frags}");
    assert!(terms["hits"]["hits"][0].get("_passage").is_none());
    // The semantic highlighter under a text query has no query vector: no fragments.
    let none = search(
        &state,
        json!({"query": {"match": {"body": "wheat"}}, "size": 3, "_source": false,
               "highlight": {"fields": {"body": {"type": "semantic"}}}}),
    )
    .await;
    assert!(none["hits"]["hits"][0].get("highlight").is_none(), "{none}");
    // Under match_all every passage scores alike: the first ones, in text order.
    let all = search(
        &state,
        json!({"size": 2, "_source": false, "highlight": {"fields": {"b*": {
            "type": "semantic", "number_of_fragments": 2}}}}),
    )
    .await;
    for h in all["hits"]["hits"].as_array().unwrap() {
        let id = h["_id"].as_str().unwrap();
        let text = source_text(&sources[id]);
        // (Any query vector: only the passages, in passage order, are used.)
        let mut ps = passage_scores_by_hand(&searcher, address(&searcher, id), &[1.0; 384]);
        ps.truncate(2);
        let want: Vec<&str> = ps
            .iter()
            .map(|(p, _)| &text[p.start as usize..p.end as usize])
            .collect();
        assert_eq!(h["highlight"]["body"], json!(want), "{id}");
        assert!(h.get("_passage").is_none());
    }

    // Bad requests: 400s naming the field or the parameter.
    for (hl, needle) in [
        (json!({"title": {"type": "semantic"}}), "field [title]"),
        (json!({"nope": {"type": "semantic"}}), "field [nope]"),
        (
            json!({"body": {"type": "semantic", "number_of_fragments": -1}}),
            "[number_of_fragments] of field [body]",
        ),
        (
            json!({"body": {"type": "semantic", "number_of_fragments": "many"}}),
            "[number_of_fragments]",
        ),
        (json!({"body": {"type": "plain"}}), "[type]"),
    ] {
        let body = json!({"query": {"semantic": {"field": "body", "query": q}},
                          "highlight": {"fields": hl}});
        let (st, r) = call(&state, "POST", "/sem/_search", Some(body.clone())).await;
        assert_eq!(st, 400, "{body}: {r}");
        let reason = r["error"]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(needle), "{body}: {r}");
    }
}
