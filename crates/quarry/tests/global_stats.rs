//! Searching shards with supplied global statistics gives exactly the answers of one index:
//! Reuters split in two (and in three, unevenly) and searched `dfs_query_then_fetch`-style must
//! give the single index's counts, top-10 ids and bit-identical scores for every oracle query.
mod common;

use std::collections::BTreeMap;

use quarry::{CollectionStats, DirectoryKind, Error, Index, SearchMode, Searcher};

/// (score, id) of the top `k` of `query` searched over `shards` with global statistics, ties
/// broken by shard then rank within the shard; and the summed count.
fn sharded_search(shards: &[Searcher], text: &str, k: usize) -> (Vec<(f32, i64)>, u64) {
    let query = shards[0].parse_query(text, &["body"]).unwrap();
    let mut global = CollectionStats::default();
    for s in shards {
        global.merge(&s.collection_stats(&query).unwrap());
    }
    let mut all = Vec::new();
    let mut count = 0;
    for (i, s) in shards.iter().enumerate() {
        let g = s.with_collection_stats(&global).unwrap();
        let res = g.search(&query, k, SearchMode::TopCount).unwrap();
        assert_eq!(
            g.search(&query, k, SearchMode::Count).unwrap().total_hits,
            res.total_hits,
            "{text}: count mode on shard {i}"
        );
        count += res.total_hits;
        for (rank, h) in res.top.iter().enumerate() {
            let id = g.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap();
            all.push((h.score, i, rank, id));
        }
    }
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    all.truncate(k);
    (
        all.into_iter().map(|(s, _, _, id)| (s, id)).collect(),
        count,
    )
}

fn single_search(s: &Searcher, text: &str, k: usize) -> (Vec<(f32, i64)>, u64) {
    let query = s.parse_query(text, &["body"]).unwrap();
    let res = s.search(&query, k, SearchMode::TopCount).unwrap();
    let top = res
        .top
        .iter()
        .map(|h| {
            (
                h.score,
                s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap(),
            )
        })
        .collect();
    (top, res.total_hits)
}

/// Equal lists, except that documents with equal scores may come in another order.
fn same_ranking(got: &[(f32, i64)], want: &[(f32, i64)]) -> bool {
    let group = |v: &[(f32, i64)]| {
        let mut m: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for (s, id) in v {
            m.entry(s.to_bits()).or_default().push(*id);
        }
        m.values_mut().for_each(|v| v.sort());
        m
    };
    let scores = |v: &[(f32, i64)]| v.iter().map(|x| x.0.to_bits()).collect::<Vec<_>>();
    if scores(got) != scores(want) {
        return false;
    }
    // The lowest score's group may be cut at k differently; all others must hold the same ids.
    let (mut g, mut w) = (group(got), group(want));
    if let Some(low) = want.last().map(|x| x.0.to_bits()) {
        g.remove(&low);
        w.remove(&low);
    }
    g == w
}

fn split_and_compare(parts: &[usize]) {
    let lines = common::reuters_lines();
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    common::build_reuters(&full, &lines, 2, DirectoryKind::Mmap);
    let single = Index::open(&full).unwrap().searcher();
    let mut shards = Vec::new();
    let mut start = 0;
    for (i, &n) in parts.iter().enumerate() {
        let end = if i + 1 == parts.len() {
            lines.len()
        } else {
            start + n
        };
        let dir = tmp.path().join(format!("shard{i}"));
        common::build_reuters(&dir, &lines[start..end], 1, DirectoryKind::Mmap);
        shards.push(Index::open(&dir).unwrap().searcher());
        start = end;
    }
    let (_, queries) = common::oracle();
    let mut failures = Vec::new();
    for q in &queries {
        let text = q["query"].as_str().unwrap();
        let (want, want_n) = single_search(&single, text, 10);
        let (got, got_n) = sharded_search(&shards, text, 10);
        if got_n != want_n || !same_ranking(&got, &want) {
            failures.push(format!(
                "{text}: sharded {got_n} {got:?}\n  single {want_n} {want:?}"
            ));
        }
        // Without global statistics the shards' scores differ (the test can fail).
        if q["query"] == "dollar" {
            let query = shards[0].parse_query(text, &["body"]).unwrap();
            let local = shards[0].search(&query, 1, SearchMode::Top).unwrap();
            assert_ne!(local.top[0].score, want[0].0, "local statistics differ");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} queries differ:\n{}",
        failures.len(),
        queries.len(),
        failures.join("\n")
    );
}

#[test]
fn two_way_split_equals_single_index() {
    split_and_compare(&[10_789, 10_789]);
}

#[test]
fn uneven_three_way_split_equals_single_index() {
    split_and_compare(&[3_000, 12_000, 6_578]);
}

#[test]
fn statistics_for_another_query_are_refused() {
    let lines = common::reuters_lines();
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &lines[..500], 1, DirectoryKind::Mmap);
    let s = Index::open(tmp.path()).unwrap().searcher();
    let oil = s.parse_query("oil", &["body"]).unwrap();
    let gas = s.parse_query("oil gas", &["body"]).unwrap();
    let stats = s.collection_stats(&oil).unwrap();
    assert_eq!(stats.fields["body"], s.field_stats("body").unwrap());
    let g = s.with_collection_stats(&stats).unwrap();
    // Own statistics supplied: the same answers as without.
    assert_eq!(
        g.search(&oil, 10, SearchMode::TopCount).unwrap(),
        s.search(&oil, 10, SearchMode::TopCount).unwrap()
    );
    let e = g.search(&gas, 10, SearchMode::Top).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("body:gas")),
        "{e}"
    );
    let e = s
        .with_collection_stats(&CollectionStats::default())
        .err()
        .expect("no fields");
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("\"id\"")),
        "{e}"
    );
}
