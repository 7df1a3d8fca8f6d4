//! Time budgets: a search with a deadline returns a valid partial result (best of what it
//! scored, count a lower bound, `timed_out`) when the deadline passes, and exactly the normal
//! result when it does not, on the Reuters oracle queries in every mode.
mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use quarry::query::Query;
use quarry::{DirectoryKind, Index, SearchMode, SearchOptions, SearchResult, Searcher};

const MODES: [SearchMode; 3] = [SearchMode::Top, SearchMode::TopCount, SearchMode::Count];

/// The Reuters index (several segments: two indexing threads, no merges) and every query of
/// both oracle files, parsed.
fn setup() -> (tempfile::TempDir, Index, Vec<(String, Query)>) {
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 2, DirectoryKind::Mmap);
    let index = Index::open_with(tmp.path(), DirectoryKind::Mmap).unwrap();
    let searcher = index.searcher();
    let mut queries = Vec::new();
    for file in [
        "lucene-reuters-oracle.jsonl",
        "lucene-reuters-extra-oracle.jsonl",
    ] {
        for q in common::oracle_file(file).1 {
            let text = q["query"].as_str().unwrap().to_string();
            if let Ok(parsed) = searcher.parse_query(&text, &["body"]) {
                queries.push((text, parsed));
            }
        }
    }
    assert!(queries.len() > 50, "{} queries", queries.len());
    (tmp, index, queries)
}

fn with_deadline(
    s: &Searcher,
    q: &Query,
    k: usize,
    mode: SearchMode,
    deadline: Instant,
) -> SearchResult {
    let opts = SearchOptions {
        deadline: Some(deadline),
    };
    s.search_with(q, k, mode, &opts).unwrap()
}

#[test]
fn generous_deadline_gives_exactly_the_normal_result() {
    let (_tmp, index, queries) = setup();
    let s = index.searcher();
    for (text, q) in &queries {
        for mode in MODES {
            for k in [1, 10] {
                let normal = s.search(q, k, mode).unwrap();
                assert!(!normal.timed_out);
                let far = Instant::now() + Duration::from_secs(3600);
                let got = with_deadline(&s, q, k, mode, far);
                assert_eq!(got, normal, "{text} {mode:?} k={k}");
            }
        }
    }
}

/// Checks that `partial` is a valid prefix of the work: its hits are real matches with their
/// true scores, best first, at most `k`, and its count does not exceed the full count.
fn check_partial(
    text: &str,
    mode: SearchMode,
    k: usize,
    partial: &SearchResult,
    total: u64,
    scores: &HashMap<u64, f32>,
) {
    assert!(partial.top.len() <= k, "{text} {mode:?}");
    if mode == SearchMode::Count {
        assert!(partial.top.is_empty(), "{text}");
    }
    assert!(partial.total_hits <= total, "{text} {mode:?}");
    if partial.timed_out {
        assert!(
            !partial.hits_exact,
            "{text} {mode:?}: a timed-out count is a lower bound"
        );
    }
    for w in partial.top.windows(2) {
        assert!(
            w[0].score > w[1].score || (w[0].score == w[1].score && w[0].seq < w[1].seq),
            "{text} {mode:?}: not best first"
        );
    }
    for h in &partial.top {
        let want = scores
            .get(&h.seq)
            .unwrap_or_else(|| panic!("{text} {mode:?}: hit {h:?} does not match"));
        assert!(
            ((h.score - want) / want).abs() < 1e-5,
            "{text} {mode:?}: {h:?} scored {want} in full"
        );
    }
}

#[test]
fn passed_deadline_returns_a_valid_partial_result() {
    let (_tmp, index, queries) = setup();
    let s = index.searcher();
    let mut timed_out = 0;
    for (text, q) in &queries {
        let all = s.search(q, 100_000, SearchMode::TopCount).unwrap();
        let scores: HashMap<u64, f32> = all.top.iter().map(|h| (h.seq, h.score)).collect();
        for mode in MODES {
            // Already passed: stops before the first segment.
            let r = with_deadline(&s, q, 10, mode, Instant::now());
            assert!(r.timed_out, "{text} {mode:?}");
            check_partial(text, mode, 10, &r, all.total_hits, &scores);
            // Passing during the search (or not at all): a valid partial result either way.
            for micros in [5, 50, 500] {
                let d = Instant::now() + Duration::from_micros(micros);
                let r = with_deadline(&s, q, 10, mode, d);
                timed_out += usize::from(r.timed_out);
                check_partial(text, mode, 10, &r, all.total_hits, &scores);
                if !r.timed_out {
                    assert_eq!(r, s.search(q, 10, mode).unwrap(), "{text} {mode:?}");
                }
            }
        }
    }
    assert!(timed_out > 0, "no short deadline passed during a search");
}
