//! Repeated clauses (`+to +be +or +not +to +be`) are merged into one scorer with the summed
//! boost, as Lucene's `BooleanQuery.rewrite` does: every document keeps exactly the score that
//! the sum of the clauses' own scores gives, in every mode, and the counts do not change.
mod common;

use std::collections::HashMap;

use quarry::{DirectoryKind, Index, SearchMode, Searcher};

/// Every matching document's score for `text`, by document address.
fn all_scores(s: &Searcher, text: &str) -> HashMap<(u32, u32), f32> {
    let q = s.parse_query(text, &["body"]).unwrap();
    let res = s.search(&q, 1_000_000, SearchMode::TopCount).unwrap();
    assert_eq!(res.top.len() as u64, res.total_hits, "{text}");
    res.top
        .iter()
        .map(|h| ((h.doc.segment, h.doc.doc), h.score))
        .collect()
}

#[test]
fn repeated_clauses_score_as_the_sum_of_their_clauses() {
    let dir = tempfile::tempdir().unwrap();
    let lines = common::reuters_lines();
    common::build_reuters(dir.path(), &lines[..4000], 1, DirectoryKind::Mmap);
    let s = Index::open(dir.path()).unwrap().searcher();
    let single: HashMap<&str, HashMap<(u32, u32), f32>> = ["oil", "price", "to", "be"]
        .into_iter()
        .map(|t| (t, all_scores(&s, t)))
        .collect();
    for (text, terms, must) in [
        ("+oil +price +oil", &["oil", "price", "oil"][..], true),
        (
            "+to +be +to +be +oil",
            &["to", "be", "to", "be", "oil"][..],
            true,
        ),
        ("oil price oil", &["oil", "price", "oil"][..], false),
    ] {
        let got = all_scores(&s, text);
        let mut want: HashMap<(u32, u32), f64> = HashMap::new();
        if must {
            for d in single[terms[0]].keys() {
                if terms.iter().all(|t| single[t].contains_key(d)) {
                    want.insert(*d, terms.iter().map(|t| f64::from(single[t][d])).sum());
                }
            }
        } else {
            for t in terms {
                for (d, sc) in &single[t] {
                    *want.entry(*d).or_default() += f64::from(*sc);
                }
            }
        }
        assert!(!want.is_empty(), "{text}");
        assert_eq!(got.len(), want.len(), "{text}: matches");
        for (d, w) in &want {
            assert_eq!(got[d], *w as f32, "{text}: doc {d:?}");
        }
        // The top 10 and the count agree across modes.
        let q = s.parse_query(text, &["body"]).unwrap();
        let top = s.search(&q, 10, SearchMode::Top).unwrap();
        let top_count = s.search(&q, 10, SearchMode::TopCount).unwrap();
        let count = s.search(&q, 10, SearchMode::Count).unwrap();
        assert_eq!(top_count.total_hits, want.len() as u64, "{text}");
        assert_eq!(count.total_hits, want.len() as u64, "{text}");
        let ids =
            |r: &quarry::SearchResult| r.top.iter().map(|h| (h.doc, h.score)).collect::<Vec<_>>();
        assert_eq!(ids(&top), ids(&top_count), "{text}");
    }
    // Three copies: one clause boosted 3 (Lucene's rewrite; `3 w` rounds, so this is not always
    // the sum of three scores bit for bit).
    for (text, rewritten) in [
        ("oil price oil oil", "oil^3 price"),
        ("+oil +price^2 +oil +oil^0.5 +price", "+oil^2.5 +price^3"),
    ] {
        assert_eq!(all_scores(&s, text), all_scores(&s, rewritten), "{text}");
    }
}
