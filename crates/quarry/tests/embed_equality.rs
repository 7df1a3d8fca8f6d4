//! quarry's embeddings equal sentence-transformers': all-MiniLM-L6-v2 on 500 Reuters bodies and
//! the W1 queries (fixture made by `scripts/embed-fixture.py`), every cosine >= 0.9999; and a
//! registered model embeds documents at indexing time and queries at search time.
//!
//! The model comes from `QUARRY_TEST_MODEL_DIR` (`scripts/fetch-model.sh` prints it;
//! `scripts/test.sh` sets it). Without it the tests say they skipped, except under CI
//! (`CI` set), where a missing model fails them.
#![cfg(feature = "embed")]

use std::io::Read;
use std::path::{Path, PathBuf};

mod common;

use quarry::embed::SentenceModel;
use quarry::search::knn::KnnQuery;
use quarry::{Document, Index, IndexWriter, Schema, WriterOptions};

const MIN_COSINE: f32 = 0.9999;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The model directory, or None (after saying so) when the test should skip.
fn model_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os("QUARRY_TEST_MODEL_DIR") {
        Some(d) => Some(PathBuf::from(d)),
        None if std::env::var_os("CI").is_some() => {
            panic!("{test}: QUARRY_TEST_MODEL_DIR is not set under CI; scripts/test.sh sets it (scripts/fetch-model.sh)")
        }
        None => {
            eprintln!("{test}: SKIPPED: set QUARRY_TEST_MODEL_DIR to the model directory that `bash scripts/fetch-model.sh` prints");
            None
        }
    }
}

struct Fixture {
    texts: Vec<String>,
    docs: usize,
    vectors: Vec<Vec<f32>>,
}

/// The fixture's texts (document bodies read again from the bundled corpus by id, then the
/// queries) and sentence-transformers' vectors.
fn fixture() -> Fixture {
    let (header, vectors) = common::embedding_fixture();
    let ids: Vec<u64> = header["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let mut raw = String::new();
    zstd::Decoder::new(std::fs::File::open(repo().join("data/reuters21578.jsonl.zst")).unwrap())
        .unwrap()
        .read_to_string(&mut raw)
        .unwrap();
    let mut bodies = std::collections::HashMap::new();
    for line in raw.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(b) = d["body"].as_str() {
            bodies.insert(d["id"].as_u64().unwrap(), b.to_string());
        }
    }
    let mut texts: Vec<String> = ids.iter().map(|id| bodies[id].clone()).collect();
    let docs = texts.len();
    texts.extend(
        header["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q.as_str().unwrap().to_string()),
    );
    assert_eq!(vectors.len(), texts.len(), "fixture size");
    Fixture {
        texts,
        docs,
        vectors,
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn embeddings_equal_sentence_transformers() {
    let Some(dir) = model_dir("embeddings_equal_sentence_transformers") else {
        return;
    };
    let f = fixture();
    assert_eq!(f.docs, 500);
    assert!(f.texts.len() > 600, "documents and W1 queries");
    let model = SentenceModel::load(&dir).unwrap();
    assert_eq!((model.dims(), model.max_tokens()), (384, 256));
    assert!(model.normalizes());
    let texts: Vec<&str> = f.texts.iter().map(String::as_str).collect();
    let got = model.embed(&texts).unwrap();
    let long = texts
        .iter()
        .filter(|t| model.token_ids(t).unwrap().len() == 256)
        .count();
    assert!(long > 50, "only {long} texts reach the 256-piece window");
    let mut worst = (f32::MAX, 0);
    for (i, (g, want)) in got.iter().zip(&f.vectors).enumerate() {
        let c = cosine(g, want);
        if c < worst.0 {
            worst = (c, i);
        }
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "text {i}: norm {norm}");
    }
    eprintln!(
        "{} texts ({long} truncated at 256 word pieces): lowest cosine {:.7} (text {})",
        texts.len(),
        worst.0,
        worst.1
    );
    assert!(
        worst.0 >= MIN_COSINE,
        "text {}: cosine {} < {MIN_COSINE}: {:?}",
        worst.1,
        worst.0,
        &texts[worst.1][..texts[worst.1].len().min(80)]
    );
    // One text alone (no padding in its batch) gives the same vector as in a batch.
    let alone = model.embed(&[texts[3]]).unwrap().remove(0);
    assert!(cosine(&alone, &got[3]) > 0.99999);
}

#[test]
fn a_registered_model_embeds_documents_and_queries() {
    let Some(src) = model_dir("a_registered_model_embeds_documents_and_queries") else {
        return;
    };
    let f = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path();
    let m = quarry::embed::add_model(path, "minilm", &src).unwrap();
    assert_eq!(m.dims, 384);
    assert!(m.files.iter().any(|f| f.path == "model.safetensors"));
    assert_eq!(quarry::embed::list_models(path).unwrap(), vec![m]);

    let schema = Schema::from_json(
        r#"{"fields": [
            {"name": "id", "type": "integer"},
            {"name": "body", "type": "text", "stored": true},
            {"name": "vec", "type": "vector", "dims": 384, "stored": false,
             "embed": {"from": "body", "model": "minilm"}}]}"#,
    )
    .unwrap();
    let mut w = IndexWriter::create(path, schema.clone(), WriterOptions::default()).unwrap();
    let docs: Vec<Document> = (0..100)
        .map(|i| {
            let line = serde_json::json!({"id": i, "body": f.texts[i]}).to_string();
            Document::from_json(&schema, &line).unwrap()
        })
        .collect();
    w.add_documents(docs).unwrap();
    // One at a time too, and a document without the source text gets no vector.
    let one = serde_json::json!({"id": 100, "body": f.texts[100]}).to_string();
    w.add_document(Document::from_json(&schema, &one).unwrap())
        .unwrap();
    w.add_document(Document::from_json(&schema, r#"{"id": 101}"#).unwrap())
        .unwrap();
    w.commit().unwrap();

    let index = Index::open(path).unwrap();
    let searcher = index.searcher();
    // A query that is a document's own text finds that document first, with the vector
    // sentence-transformers gives it.
    for i in [0usize, 7, 42, 100] {
        let q = index.embed_query("vec", &f.texts[i]).unwrap();
        assert!(cosine(&q, &f.vectors[i]) >= MIN_COSINE);
        let hits = searcher.knn(&KnnQuery::new("vec", q, 3).exact()).unwrap();
        assert_eq!(searcher.stored_fields(hits[0].doc).unwrap()["id"], i as i64);
        assert!(hits[0].score > 0.9999, "{}", hits[0].score);
    }
    let total = searcher
        .knn(&KnnQuery::new("vec", f.vectors[0].clone(), 200).exact())
        .unwrap()
        .len();
    assert_eq!(total, 101, "the document without a body has no vector");

    // Bad requests are errors that say what is wrong.
    let e = index.embed_query("body", "x").unwrap_err().to_string();
    assert!(e.contains("no embedding model"), "{e}");
    let e = index.embed_query("nope", "x").unwrap_err().to_string();
    assert!(e.contains("unknown field"), "{e}");
}

#[test]
fn a_damaged_model_file_is_refused() {
    let Some(src) = model_dir("a_damaged_model_file_is_refused") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    quarry::embed::add_model(tmp.path(), "m", &src).unwrap();
    let config = tmp.path().join("models/m/config.json");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replace("384", "385");
    std::fs::write(&config, text).unwrap();
    let err = quarry::embed::load_model(tmp.path(), "m").unwrap_err();
    assert!(matches!(err, quarry::Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("models/m/config.json"), "{err}");
    // A dims mismatch between field and model is a schema error naming both.
    let tmp2 = tempfile::tempdir().unwrap();
    quarry::embed::add_model(tmp2.path(), "m", &src).unwrap();
    let schema = Schema::from_json(
        r#"{"fields": [{"name": "body", "type": "text"},
            {"name": "v", "type": "vector", "dims": 8, "embed": {"from": "body", "model": "m"}}]}"#,
    )
    .unwrap();
    let mut w = IndexWriter::create(tmp2.path(), schema.clone(), WriterOptions::default()).unwrap();
    let e = w
        .add_document(Document::from_json(&schema, r#"{"body": "oil"}"#).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("8 dims") && e.contains("384"), "{e}");
}
