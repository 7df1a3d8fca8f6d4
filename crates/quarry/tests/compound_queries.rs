//! Dis-max, constant-score and boosting queries on the Reuters corpus, checked document by
//! document against the scores of their parts searched alone; fuzzy queries scored with
//! supplied collection statistics equal the plain search.
mod common;

use std::collections::HashMap;

use quarry::query::{Clause, Occur, Query};
use quarry::{DirectoryKind, Index, SearchMode, Searcher};

/// Every match of `q` by sequence number, with its score.
fn scores(s: &Searcher, q: &Query) -> HashMap<u64, f32> {
    let r = s.search(q, 100_000, SearchMode::TopCount).unwrap();
    assert_eq!(r.top.len() as u64, r.total_hits);
    r.top.iter().map(|h| (h.seq, h.score)).collect()
}

fn close(got: f32, want: f64) -> bool {
    (f64::from(got) - want).abs() <= 1e-6 * want.abs().max(1.0)
}

#[test]
fn compound_queries_score_from_their_parts() {
    let lines = common::reuters_lines();
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &lines, 2, DirectoryKind::Mmap);
    let index = Index::open(tmp.path()).unwrap();
    let s = index.searcher();
    let title = Query::term("title", "oil");
    let body = Query::term("body", "oil");
    let (a, b) = (scores(&s, &title), scores(&s, &body));

    let dm = Query::DisMax {
        queries: vec![title.clone(), body.clone()],
        tie_breaker: 0.3,
    };
    let got = scores(&s, &dm);
    let union = scores(
        &s,
        &Query::boolean(vec![
            Clause::new(Occur::Should, title.clone()),
            Clause::new(Occur::Should, body.clone()),
        ]),
    );
    assert_eq!(got.len(), union.len());
    for (seq, score) in &got {
        let (x, y) = (a.get(seq).copied(), b.get(seq).copied());
        let (hi, lo) = match (x, y) {
            (Some(x), Some(y)) => (x.max(y), x.min(y)),
            (Some(v), None) | (None, Some(v)) => (v, 0.0),
            (None, None) => panic!("{seq} matches neither"),
        };
        let want = f64::from(hi) + f64::from(lo) * f64::from(0.3f32);
        assert!(close(*score, want), "{seq}: {score} vs {want}");
    }
    // The top 10 (pruned) agree with the exhaustive scores.
    let top = s.search(&dm, 10, SearchMode::Top).unwrap();
    let mut all: Vec<(f32, u64)> = got.iter().map(|(q, s)| (*s, *q)).collect();
    all.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    let want: Vec<u64> = all.iter().take(10).map(|x| x.1).collect();
    assert_eq!(top.top.iter().map(|h| h.seq).collect::<Vec<_>>(), want);

    let cs = Query::boosted(
        Query::ConstantScore {
            query: Box::new(body.clone()),
        },
        2.0,
    );
    let got = scores(&s, &cs);
    assert_eq!(got.len(), b.len());
    assert!(got.values().all(|v| *v == 2.0));

    let gas = scores(&s, &Query::term("body", "gas"));
    let boosting = Query::Boosting {
        positive: Box::new(body.clone()),
        negative: Box::new(Query::term("body", "gas")),
        negative_boost: 0.5,
    };
    let got = scores(&s, &boosting);
    assert_eq!(got.len(), b.len());
    let demoted = got.keys().filter(|k| gas.contains_key(k)).count();
    assert!(demoted > 0);
    for (seq, score) in &got {
        let f = if gas.contains_key(seq) { 0.5 } else { 1.0 };
        assert!(close(*score, f64::from(b[seq]) * f), "{seq}");
    }

    // Fuzzy through supplied statistics (a shard scored as part of a larger index): the same
    // scores as the plain search when the statistics are this index's own.
    let fuzzy = s.parse_query("pirces~1 oli~", &["body"]).unwrap();
    let stats = s.collection_stats(&fuzzy).unwrap();
    let global = s.with_collection_stats(&stats).unwrap();
    assert_eq!(scores(&global, &fuzzy), scores(&s, &fuzzy));
}
