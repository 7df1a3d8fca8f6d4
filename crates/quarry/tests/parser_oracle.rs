//! Does quarry's query parser build the same queries as Lucene's classic `QueryParser`?
//! Every query of the Lucene oracle (`tests/fixtures/lucene-reuters-oracle.jsonl`) is parsed
//! with default field `body`, default operator OR, and compared with Lucene's
//! `Query.toString()` (the `parsed` field), once with quarry's `StandardAnalyzer` and once
//! with the dependency-free `SimpleAnalysis`.

use std::sync::Arc;

use quarry::query::{QueryParser, SimpleAnalysis, StandardAnalysis};

fn oracle_queries() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/lucene-reuters-oracle.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("read the Lucene oracle fixture");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        if v["type"] != "query" {
            continue; // the first line holds index statistics
        }
        let query = v["query"].as_str().expect("query string").to_string();
        let parsed = v["parsed"].as_str().expect("parsed string").to_string();
        out.push((query, parsed));
    }
    out
}

fn check(parser: &QueryParser, label: &str) {
    let queries = oracle_queries();
    assert!(
        queries.len() >= 100,
        "expected the full oracle, got {} queries",
        queries.len()
    );
    let mut mismatches = Vec::new();
    for (query, expected) in &queries {
        match parser.parse(query) {
            Ok(q) if q.to_string() == *expected => {}
            Ok(q) => mismatches.push(format!(
                "{query:?}: quarry {:?}, Lucene {expected:?}",
                q.to_string()
            )),
            Err(e) => mismatches.push(format!("{query:?}: {e}")),
        }
    }
    eprintln!(
        "{label}: {}/{} parsed queries equal Lucene's",
        queries.len() - mismatches.len(),
        queries.len()
    );
    assert!(
        mismatches.is_empty(),
        "{label}: {} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn parsed_queries_equal_lucene_with_standard_analyzer() {
    let parser = QueryParser::new("body", Arc::new(StandardAnalysis::new()));
    check(&parser, "StandardAnalyzer");
}

#[test]
fn parsed_queries_equal_lucene_with_simple_analysis() {
    let parser = QueryParser::new("body", Arc::new(SimpleAnalysis));
    check(&parser, "SimpleAnalysis");
}
