//! Long texts embedded as passages: a question answered only by the end of a long Reuters body
//! finds that document when the field embeds passages (the default), and not when the text is
//! cut at the model's window (`"passages": false`); the hit names the passage and its span.
//!
//! The model comes from `QUARRY_TEST_MODEL_DIR` (`scripts/fetch-model.sh` prints it;
//! `scripts/test.sh` sets it). Without it the test says it skipped, except under CI (`CI`
//! set), where a missing model fails it.
#![cfg(feature = "embed")]

use std::path::PathBuf;

mod common;

use quarry::search::knn::KnnQuery;
use quarry::{Document, Index, IndexWriter, Schema, WriterOptions};
use serde_json::Value;

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

/// Questions answered by the last sentences of a long body: (document id, question, a phrase of
/// the answer).
const QUESTIONS: &[(i64, &str, &str)] = &[
    (
        11711,
        "What were Dome's oil and natural gas liquids production in barrels a day?",
        "86,000 barrels a day",
    ),
    (
        11711,
        "Dome natural gas production fell to how many mln cubic feet a day?",
        "536.0 mln cubic feet a day",
    ),
];

/// The corpus: the questions' documents and the first 120 other Reuters documents about crude
/// oil or natural gas (topics `crude`, `nat-gas`), by id.
fn corpus() -> Vec<(i64, String)> {
    let wanted: Vec<i64> = QUESTIONS.iter().map(|q| q.0).collect();
    let mut out = Vec::new();
    let mut others = 0;
    for line in common::reuters_lines() {
        let v: Value = serde_json::from_str(&line).unwrap();
        let (id, Some(body)) = (v["id"].as_i64().unwrap(), v["body"].as_str()) else {
            continue;
        };
        let topical = v["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|x| x == "crude" || x == "nat-gas"));
        if wanted.contains(&id) || (topical && others < 120) {
            others += usize::from(!wanted.contains(&id));
            out.push((id, body.to_string()));
        }
    }
    out
}

/// Indexes the corpus with an embedded field (passages `passages`: the JSON of the option) and
/// returns, per question, the rank of its document among 10 hits (None: not among them) and the
/// passage the hit names.
fn ranks(
    model: &std::path::Path,
    docs: &[(i64, String)],
    passages: &str,
) -> Vec<(Option<usize>, Option<quarry::search::knn::Passage>, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path();
    quarry::embed::add_model(path, "minilm", model).unwrap();
    let schema = Schema::from_json(&format!(
        r#"{{"fields": [
            {{"name": "id", "type": "integer"}},
            {{"name": "body", "type": "text", "stored": true}},
            {{"name": "vec", "type": "vector", "dims": 384,
             "embed": {{"from": "body", "model": "minilm", "passages": {passages}}}}}]}}"#
    ))
    .unwrap();
    let mut w = IndexWriter::create(path, schema.clone(), WriterOptions::default()).unwrap();
    let batch: Vec<Document> = docs
        .iter()
        .map(|(id, body)| {
            let line = serde_json::json!({"id": id, "body": body}).to_string();
            Document::from_json(&schema, &line).unwrap()
        })
        .collect();
    w.add_documents(batch).unwrap();
    w.commit().unwrap();
    let index = Index::open(path).unwrap();
    let s = index.searcher();
    QUESTIONS
        .iter()
        .map(|(id, question, _)| {
            let q = index.embed_query("vec", question).unwrap();
            let hits = s.knn_hits(&KnnQuery::new("vec", q, 10).exact()).unwrap();
            let rank = hits
                .iter()
                .position(|h| s.stored_fields(h.hit.doc).unwrap()["id"].as_i64() == Some(*id));
            let passage = rank.and_then(|r| hits[r].passage);
            let text = match (rank, passage) {
                (Some(r), Some(p)) => s.passage_text(hits[r].hit.doc, "vec", &p).unwrap().unwrap(),
                _ => String::new(),
            };
            (rank, passage, text)
        })
        .collect()
}

#[test]
fn a_question_answered_by_the_end_of_a_long_body_finds_it_with_passages_not_cut() {
    let Some(model) = model_dir("a_question_answered_by_the_end_of_a_long_body") else {
        return;
    };
    let docs = corpus();
    let cut = ranks(&model, &docs, "false");
    let split = ranks(&model, &docs, "true");
    let body = &docs.iter().find(|d| d.0 == 11711).unwrap().1;
    for (((id, question, answer), c), p) in QUESTIONS.iter().zip(&cut).zip(&split) {
        eprintln!(
            "{id} {question:?}: cut rank {:?}, passages rank {:?} (passage {:?})",
            c.0, p.0, p.1
        );
        // With passages: the document first, by the passage that holds the answer: the last
        // one (it ends at the body's end), its text the body's bytes at its span.
        assert_eq!(p.0, Some(0), "{question}");
        let passage = p.1.expect("the hit names its passage");
        assert!(
            passage.index > 0 && passage.end as usize == body.len(),
            "{passage:?}"
        );
        assert_eq!(p.2, body[passage.start as usize..passage.end as usize]);
        assert!(p.2.contains(answer), "{:?}", p.2);
        // Cut at the window, the answer is not in the vector: the document ranks lower.
        assert!(c.0 != Some(0), "{question}: cut rank {:?}", c.0);
    }
    // The first question's document is not even among the 10 nearest when cut.
    assert_eq!(cut[0].0, None);
}
