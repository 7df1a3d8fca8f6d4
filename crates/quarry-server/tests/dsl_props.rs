//! Does every JSON body translate to a query or a client error, and does every translated
//! query search an index with documents (three segments, deletions) without failing, with
//! answers that hold together? The fuzz target's property on a fast budget, plus exact hit counts
//! of a few known queries so that the index is seen to be searched.

use std::collections::HashSet;

use proptest::prelude::*;
use quarry::{Document, FieldValue, IndexWriter, Schema, SearchMode, Searcher, WriterOptions};
use quarry_server::dsl::translate;
use serde_json::{json, Map, Value};

const WORDS: &[&str] = &[
    "oil", "gas", "prices", "crude", "match", "title", "body", "wheat",
];

fn schema() -> Schema {
    Schema::builder()
        .keyword("_id")
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build()
}

/// Document `i`: words picked from `WORDS` by the bits of `i` (so which documents hold a word is
/// known), in three commits (three segments), with documents 7 and 20 deleted.
fn body(i: usize) -> String {
    let words: Vec<&str> = (0..WORDS.len())
        .filter(|b| (i * 7 + 3) >> (b % 5) & 1 == 1 || i.is_multiple_of(b + 2))
        .map(|b| WORDS[b])
        .collect();
    words.join(" ")
}

const DOCS: usize = 60;
const DELETED: [i64; 2] = [7, 20];

fn build(dir: &std::path::Path) -> Searcher {
    let schema = schema();
    let mut w = IndexWriter::create(dir, schema.clone(), WriterOptions::default()).unwrap();
    for i in 0..DOCS {
        let mut m = Map::new();
        m.insert("_id".into(), json!(format!("d{i}")));
        m.insert("id".into(), json!(i as i64));
        m.insert(
            "title".into(),
            json!(format!("title {}", WORDS[i % WORDS.len()])),
        );
        m.insert("body".into(), json!(body(i)));
        w.add_document(Document::from_map(&schema, &m).unwrap())
            .unwrap();
        if i % 20 == 19 {
            w.commit().unwrap();
        }
    }
    for id in DELETED {
        w.delete_term("id", &FieldValue::Int(id)).unwrap();
    }
    w.commit().unwrap();
    let s = w.reader().unwrap().searcher();
    assert!(s.segments().len() >= 2, "{} segments", s.segments().len());
    assert_eq!(s.live_doc_count(), (DOCS - DELETED.len()) as u64);
    s
}

fn searcher() -> &'static Searcher {
    static S: std::sync::OnceLock<(tempfile::TempDir, Searcher)> = std::sync::OnceLock::new();
    &S.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        let s = build(t.path());
        (t, s)
    })
    .1
}

/// The live documents whose body holds `word`.
fn with_word(word: &str) -> HashSet<usize> {
    (0..DOCS)
        .filter(|i| !DELETED.contains(&(*i as i64)))
        .filter(|&i| body(i).split(' ').any(|w| w == word))
        .collect()
}

fn hits(q: Value) -> u64 {
    let s = searcher();
    let q = translate(&q, s).unwrap();
    s.search(&q, 10, SearchMode::Count).unwrap().total_hits
}

#[test]
fn known_queries_count_the_documents_that_match() {
    let oil = with_word("oil");
    let gas = with_word("gas");
    assert!(!oil.is_empty() && !gas.is_empty() && oil != gas);
    assert_eq!(hits(json!({"match": {"body": "oil"}})), oil.len() as u64);
    assert_eq!(
        hits(json!({"match": {"body": "oil gas"}})),
        oil.union(&gas).count() as u64
    );
    assert_eq!(
        hits(
            json!({"bool": {"must": [{"match": {"body": "oil"}}], "must_not": [{"match": {"body": "gas"}}]}})
        ),
        oil.difference(&gas).count() as u64
    );
    assert_eq!(
        hits(json!({"match": {"body": {"query": "oil gas", "operator": "and"}}})),
        oil.intersection(&gas).count() as u64
    );
    assert_eq!(
        hits(json!({"match_all": {}})),
        (DOCS - DELETED.len()) as u64
    );
    assert_eq!(hits(json!({"ids": {"values": ["d7", "d8", "d9"]}})), 2);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e3f64..1e3).prop_map(Value::from),
        prop_oneof![
            Just("match"),
            Just("bool"),
            Just("must"),
            Just("should"),
            Just("title"),
            Just("body"),
            Just("id"),
            Just("query"),
            Just("term"),
            Just("terms"),
            Just("match_phrase"),
            Just("slop"),
            Just("boost"),
            Just("minimum_should_match"),
            Just("query_string"),
            Just("multi_match"),
            Just("fields"),
            Just("50%"),
            Just("oil AND (gas"),
            Just("prefix"),
            Just("exists"),
            Just("field"),
            Just("ids"),
            Just("values"),
            Just("must_not"),
            Just("filter"),
            Just("operator"),
            Just("and"),
            Just("oil"),
            Just("gas prices"),
            Just("crude"),
            Just("d3"),
            Just("o?l*"),
            Just("pric(e|es"),
            Just("AUTO"),
            Just("wildcard"),
            Just("fuzzy"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![
                        Just("match"),
                        Just("bool"),
                        Just("must"),
                        Just("should"),
                        Just("title"),
                        Just("body"),
                        Just("id"),
                        Just("query"),
                        Just("term"),
                        Just("terms"),
                        Just("match_phrase"),
                        Just("slop"),
                        Just("boost"),
                        Just("query_string"),
                        Just("multi_match"),
                        Just("fields"),
                        Just("prefix"),
                        Just("exists"),
                        Just("field"),
                        Just("ids"),
                        Just("values"),
                        Just("must_not"),
                        Just("filter"),
                        Just("operator"),
                        Just("minimum_should_match"),
                        Just("type"),
                        Just("match_all"),
                        Just("wildcard"),
                        Just("regexp"),
                        Just("fuzzy"),
                        Just("fuzziness"),
                        Just("value"),
                        Just("dis_max"),
                        Just("queries"),
                        Just("tie_breaker"),
                        Just("constant_score"),
                        Just("boosting"),
                        Just("positive"),
                        Just("negative"),
                        Just("negative_boost"),
                    ],
                    inner
                ),
                0..3
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Translating any JSON never panics and every refusal is a client error; every query it
    /// gives searches the index without error, counts the same in every mode, finds no more
    /// than the live documents and returns the best ten in order.
    #[test]
    fn any_json_translates_or_is_a_client_error_and_searches(v in json_value()) {
        let s = searcher();
        if let Err(e) = translate(&v, s) {
            prop_assert!(e.status.is_client_error(), "{}", e);
        }
        for body in [v.clone(), json!({"bool": {"should": [v, {"match": {"body": "oil"}}]}})] {
            let Ok(q) = translate(&body, s) else { continue };
            let top = s.search(&q, 10, SearchMode::TopCount).unwrap();
            let count = s.search(&q, 10, SearchMode::Count).unwrap();
            prop_assert_eq!(top.total_hits, count.total_hits, "{}", body);
            prop_assert!(top.total_hits <= s.live_doc_count(), "{}", body);
            prop_assert_eq!(top.top.len() as u64, top.total_hits.min(10), "{}", body);
            prop_assert!(top.top.windows(2).all(|w| w[0].score >= w[1].score), "{}", body);
            prop_assert!(top.top.iter().all(|h| h.score.is_finite()), "{}", body);
        }
    }
}
