//! Ranges and sorts against Lucene 10.6 on the bundled Reuters corpus with its structured fields
//! (`data/reuters-schema.json`: `id` integer, `date` and `topics` keywords):
//! tests/fixtures/lucene-reuters-structured-oracle.jsonl, written by the Java harness's
//! `oracle-structured` from tests/fixtures/reuters-structured-queries.jsonl (`id` as LongPoint
//! and numeric doc values, `date`/`topics` as StringField and sorted (set) doc values, ranges
//! through the classic QueryParser, sorts with missing values last and ties in index order).
//!
//! Per query: the exact hit count, the top-10 ids in order (documents whose Lucene scores differ
//! by less than 1e-5 relative may swap where the score decides), scores within 1e-4 relative and,
//! for sorted queries, the sort values.
//!
//! Left out of the fixture because quarry differs from Lucene there (see the report of the
//! oracle branch): `id:5000` (quarry scores a term on an integer field with BM25, Lucene's
//! `LongPoint.newExactQuery` is constant 1.0), and `topics:` terms on documents that repeat a
//! topic (19918 `trade`, 5467 `corn`: quarry indexes freq 2 and counts it in
//! `sumTotalTermFreq`, Lucene's `StringField` indexes docs only, freq 1).
mod common;

use quarry::query::Query;
use quarry::{Index, SearchMode, Searcher, SortField, SortKey, SortValue, SortedResult};
use serde_json::Value;

/// One hit as compared: stored id, score, sort values (Lucene's JSON form).
#[derive(Debug, Clone)]
struct Row {
    id: i64,
    score: f64,
    sort: Vec<Value>,
}

fn sort_fields(spec: &[Value]) -> Vec<SortField> {
    spec.iter()
        .map(|k| {
            let field = k["field"].as_str().unwrap();
            let descending = k["desc"].as_bool().unwrap_or(false);
            let key = match field {
                "_score" => SortKey::Score,
                "_doc" => SortKey::IndexOrder,
                f => SortKey::Field(f.to_string()),
            };
            SortField {
                key,
                descending,
                missing_first: false,
            }
        })
        .collect()
}

/// A quarry sort value in the JSON form the harness writes.
fn value_json(v: &SortValue) -> Value {
    match v {
        SortValue::Int(i) => Value::from(*i),
        SortValue::Seq(s) => Value::from(*s),
        SortValue::Str(s) => Value::from(s.as_str()),
        SortValue::Score(x) => Value::from(f64::from(*x)),
        SortValue::Float(x) => Value::from(*x),
        SortValue::Bool(b) => Value::from(*b),
        SortValue::Missing => Value::Null,
    }
}

fn rel(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        ((a - b) / b).abs()
    }
}

/// Equal sort values: exact, except scores (within 1e-4 relative).
fn same_value(g: &Value, w: &Value, is_score: bool) -> bool {
    if is_score {
        return match (g.as_f64(), w.as_f64()) {
            (Some(x), Some(y)) => rel(x, y) <= 1e-4,
            _ => false,
        };
    }
    match (g, w) {
        (Value::Number(x), Value::Number(y)) => x.as_i64() == y.as_i64() && x.as_i64().is_some(),
        _ => g == w,
    }
}

fn sorted_rows(searcher: &Searcher, res: &SortedResult) -> Vec<Row> {
    res.hits
        .iter()
        .map(|h| Row {
            id: searcher.stored_fields(h.hit.doc).unwrap()["id"]
                .as_i64()
                .unwrap(),
            score: f64::from(h.hit.score),
            sort: h.values.iter().map(value_json).collect(),
        })
        .collect()
}

/// Compares one oracle query; returns a description of the first difference.
fn compare(searcher: &Searcher, q: &Value) -> Result<(), String> {
    let name = q["name"].as_str().unwrap();
    let text = q["query"].as_str().unwrap();
    let who = format!("{name} ({text})");
    let query: Query = searcher
        .parse_query(text, &["body"])
        .map_err(|e| format!("{who}: {e}"))?;
    // Lucene renders LongPoint ranges with their numeric bounds (`id:[-9223372036854775808 TO
    // 50]`), quarry with the text written (`id:{* TO 50]`); compare the rest.
    let lucene_parsed = q["parsed"].as_str().unwrap();
    if !lucene_parsed.contains("id:") && query.to_string() != lucene_parsed {
        return Err(format!(
            "{who}: parsed {:?}, lucene {lucene_parsed:?}",
            query.to_string()
        ));
    }
    let want_hits = q["hits"].as_u64().unwrap();
    let count = searcher.count(&query).map_err(|e| e.to_string())?;
    if count != want_hits {
        return Err(format!("{who}: count {count} != lucene {want_hits}"));
    }
    let want: Vec<Row> = q["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| Row {
            id: t["id"].as_i64().unwrap(),
            score: t["score"].as_f64().unwrap(),
            sort: t["sort"].as_array().cloned().unwrap_or_default(),
        })
        .collect();
    let spec = q["sort"].as_array();
    let (total, got, score_keys) = match spec {
        None => {
            let res = searcher
                .search(&query, 10, SearchMode::TopCount)
                .map_err(|e| e.to_string())?;
            let got = res
                .top
                .iter()
                .map(|h| Row {
                    id: searcher.stored_fields(h.doc).unwrap()["id"]
                        .as_i64()
                        .unwrap(),
                    score: f64::from(h.score),
                    sort: Vec::new(),
                })
                .collect::<Vec<_>>();
            (res.total_hits, got, vec![true])
        }
        Some(spec) => {
            let sort = sort_fields(spec);
            let res = searcher
                .search_sorted(&query, &sort, 10, None, true)
                .map_err(|e| format!("{who}: {e}"))?;
            let score_keys = sort.iter().map(|s| s.key == SortKey::Score).collect();
            (res.total_hits, sorted_rows(searcher, &res), score_keys)
        }
    };
    if total != want_hits {
        return Err(format!("{who}: hits {total} != lucene {want_hits}"));
    }
    if got.len() != want.len() {
        return Err(format!(
            "{who}: {} results, lucene {}",
            got.len(),
            want.len()
        ));
    }
    let scored = score_keys.iter().any(|s| *s);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if rel(g.score, w.score) > 1e-4 {
            return Err(format!(
                "{who}: rank {i} score {} vs lucene {} (ids {} / {})",
                g.score, w.score, g.id, w.id
            ));
        }
        if g.id != w.id {
            // Allowed only where a score decides: a swap with a document whose Lucene score
            // differs by < 1e-5 relative and whose other sort values are the same.
            let ok = scored
                && want.iter().any(|x| {
                    x.id == g.id
                        && rel(x.score, w.score) < 1e-5
                        && x.sort
                            .iter()
                            .zip(&w.sort)
                            .zip(&score_keys)
                            .all(|((a, b), s)| *s || a == b)
                });
            if !ok {
                return Err(format!(
                    "{who}: rank {i} id {} vs lucene {}\n got  {got:?}\n want {want:?}",
                    g.id, w.id
                ));
            }
            continue;
        }
        if spec.is_some() {
            let same = g.sort.len() == w.sort.len()
                && g.sort
                    .iter()
                    .zip(&w.sort)
                    .zip(&score_keys)
                    .all(|((a, b), s)| same_value(a, b, *s));
            if !same {
                return Err(format!(
                    "{who}: rank {i} (id {}) sort values {:?} vs lucene {:?}",
                    g.id, g.sort, w.sort
                ));
            }
        }
    }
    Ok(())
}

/// Every query of the structured oracle: ranges on `id` (by value), on `date`, `topics` and
/// `body` (by bytes), ranges with text and boosts, and sorts by id, date, topics (multi-valued,
/// often missing), score and index order.
#[test]
fn structured_queries_match_lucene() {
    let lines = common::reuters_lines();
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters_full(tmp.path(), &lines);
    let index = Index::open(tmp.path()).unwrap();
    let searcher = index.searcher();
    assert_eq!(searcher.segments().len(), 1, "one segment, in file order");
    let (stats, queries) = common::oracle_file("lucene-reuters-structured-oracle.jsonl");
    assert_eq!(stats["docs"].as_u64(), Some(lines.len() as u64));
    let mut failures = Vec::new();
    let (mut ranges, mut sorted) = (0, 0);
    for q in &queries {
        if q["sort"].is_array() {
            sorted += 1;
        } else {
            ranges += 1;
        }
        if let Err(e) = compare(&searcher, q) {
            failures.push(e);
        }
    }
    assert!(
        ranges >= 20 && sorted >= 15,
        "{ranges} unsorted, {sorted} sorted"
    );
    assert!(
        failures.is_empty(),
        "{} of {} queries differ from Lucene:\n{}",
        failures.len(),
        queries.len(),
        failures.join("\n")
    );
}
