//! Does the standard analyzer make exactly Lucene's terms of the bundled Reuters corpus? Analyzes
//! `title` and `body` of every document and compares the per-field statistics with the stats line
//! Lucene 10 wrote into `tests/fixtures/lucene-reuters-oracle.jsonl`.
//!
//! Run: `cargo test -p quarry --release --test analyzer_reuters`
//! Throughput: `cargo test -p quarry --release --test analyzer_reuters -- --ignored --nocapture`

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::time::Instant;

use quarry::analysis::{Analyzer, StandardAnalyzer};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/reuters21578.jsonl.zst"
);
const ORACLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/lucene-reuters-oracle.jsonl"
);

fn documents() -> Vec<serde_json::Value> {
    let file =
        std::fs::File::open(CORPUS).expect("open the bundled corpus data/reuters21578.jsonl.zst");
    let mut text = String::new();
    zstd::Decoder::new(file)
        .expect("zstd")
        .read_to_string(&mut text)
        .expect("decompress corpus");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus line is JSON"))
        .collect()
}

#[derive(Debug, Default, PartialEq, Eq)]
struct FieldStats {
    doc_count: u64,
    sum_total_term_freq: u64,
    sum_doc_freq: u64,
    unique_terms: u64,
}

fn field_stats(docs: &[serde_json::Value], field: &str) -> FieldStats {
    let analyzer = StandardAnalyzer::new();
    let mut stats = FieldStats::default();
    let mut all_terms: HashSet<String> = HashSet::new();
    let mut doc_terms: HashSet<String> = HashSet::new();
    for doc in docs {
        let Some(text) = doc.get(field).and_then(|v| v.as_str()) else {
            continue;
        };
        doc_terms.clear();
        let mut n = 0u64;
        analyzer.for_each_token(text, &mut |t| {
            n += 1;
            if !doc_terms.contains(t) {
                doc_terms.insert(t.to_owned());
            }
        });
        if n > 0 {
            stats.doc_count += 1;
        }
        stats.sum_total_term_freq += n;
        stats.sum_doc_freq += doc_terms.len() as u64;
        for t in doc_terms.drain() {
            all_terms.insert(t);
        }
    }
    stats.unique_terms = all_terms.len() as u64;
    stats
}

fn oracle_stats() -> (u64, HashMap<String, FieldStats>) {
    let text = std::fs::read_to_string(ORACLE).expect("read the Lucene oracle fixture");
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("oracle line is JSON");
        if v["type"] != "stats" {
            continue;
        }
        let mut fields = HashMap::new();
        for field in ["title", "body"] {
            let f = &v[field];
            let get = |k: &str| {
                f[k].as_u64()
                    .unwrap_or_else(|| panic!("oracle {field}.{k}"))
            };
            fields.insert(
                field.to_owned(),
                FieldStats {
                    doc_count: get("docCount"),
                    sum_total_term_freq: get("sumTotalTermFreq"),
                    sum_doc_freq: get("sumDocFreq"),
                    unique_terms: get("uniqueTerms"),
                },
            );
        }
        return (v["docs"].as_u64().expect("oracle docs"), fields);
    }
    panic!("no stats line in {ORACLE}");
}

#[test]
fn reuters_field_stats_match_lucene() {
    let docs = documents();
    let (oracle_docs, oracle) = oracle_stats();
    assert_eq!(docs.len() as u64, oracle_docs, "document count");
    for field in ["body", "title"] {
        let ours = field_stats(&docs, field);
        eprintln!(
            "{field}: ours {ours:?}\n{field}: lucene {:?}",
            oracle[field]
        );
        assert_eq!(
            ours, oracle[field],
            "field {field}: quarry vs Lucene StandardAnalyzer stats"
        );
    }
}

/// Best-of-15 single-thread time to analyze `texts`: (seconds, tokens).
fn time_analyzer(texts: &[&str]) -> (f64, u64) {
    let analyzer = StandardAnalyzer::new();
    let run = || {
        let mut tokens = 0u64;
        for t in texts {
            analyzer.for_each_token(t, &mut |tok| {
                std::hint::black_box(tok);
                tokens += 1;
            });
        }
        tokens
    };
    let mut tokens = run(); // warm-up
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        tokens = std::hint::black_box(run());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, tokens)
}

/// Single-thread analyzer throughput on the Reuters bodies (prints MB/s; not a pass/fail test):
/// as is (all ASCII: the fast path), and with every 'e' turned into 'é' (most words then take the
/// Unicode path).
#[test]
#[ignore]
fn reuters_body_throughput() {
    let docs = documents();
    let bodies: Vec<&str> = docs.iter().filter_map(|d| d["body"].as_str()).collect();
    let accented: Vec<String> = bodies.iter().map(|b| b.replace('e', "é")).collect();
    let accented: Vec<&str> = accented.iter().map(|s| s.as_str()).collect();
    for (label, texts) in [("ascii", &bodies), ("accented", &accented)] {
        let bytes: usize = texts.iter().map(|b| b.len()).sum();
        let (secs, tokens) = time_analyzer(texts);
        eprintln!(
            "reuters body ({label}): {:.1} MB in {:.1} ms (best of 15) = {:.0} MB/s, {tokens} tokens \
             ({:.1} M tokens/s)",
            bytes as f64 / 1e6,
            secs * 1e3,
            bytes as f64 / 1e6 / secs,
            tokens as f64 / 1e6 / secs
        );
    }
}

/// Differential check against cases written by Lucene itself: set `QUARRY_LUCENE_CASES` to a JSON
/// lines file of `{"max": n, "text": "...", "tokens": [...]}` (made by a small Java program that
/// runs Lucene's `StandardAnalyzer` with `setMaxTokenLength(max)` on random text). CI runs it
/// through `scripts/lucene-analyzer-cases.sh` (a fixed seed); there, with `CI` set, a missing
/// cases file fails the test instead of leaving it with nothing to check.
#[test]
#[ignore]
fn lucene_differential_cases() {
    let Ok(path) = std::env::var("QUARRY_LUCENE_CASES") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "QUARRY_LUCENE_CASES is not set: run scripts/lucene-analyzer-cases.sh (needs a JDK 21+)"
        );
        eprintln!("QUARRY_LUCENE_CASES not set; nothing to check");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read cases");
    let mut failures = 0;
    let mut total = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("case is JSON");
        let max = v["max"].as_u64().expect("max") as usize;
        let input = v["text"].as_str().expect("text");
        let want: Vec<String> = v["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect();
        let analyzer = StandardAnalyzer::with_max_token_length(max);
        let got = analyzer.tokens(input);
        let got_unicode = analyzer.tokens_unicode_path(input);
        total += 1;
        if got != want || got_unicode != want {
            failures += 1;
            if failures <= 15 {
                eprintln!("MISMATCH max={max} text={input:?}\n  lucene : {want:?}\n  quarry : {got:?}\n  unicode: {got_unicode:?}");
            }
        }
    }
    assert!(total > 0, "{path}: no cases");
    eprintln!("{total} cases from {path}: {failures} differ from Lucene");
    assert_eq!(
        failures, 0,
        "{failures} of {total} cases differ from Lucene"
    );
}
