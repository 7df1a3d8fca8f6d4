//! Index sort against the unsorted index as the model: the same random documents (missing and
//! multi-valued fields), deletions, updates, commits and merges go into an index created with a
//! random index sort and into one without; every sorted search (random sort, query, `k` and
//! `search_after`) must give the same hits, values, count and best score on both, and `check`
//! must find every segment of the sorted index in its claimed order.
use proptest::prelude::*;
use quarry::query::Query;
use quarry::{
    check_index, DirectoryKind, Document, Error, FieldValue, Index, IndexSort, IndexSortField,
    IndexWriter, MergePolicy, Schema, SortField, SortKey, SortValue, WriterOptions,
};
use serde_json::{json, Map, Value};

fn schema() -> Schema {
    Schema::from_json(
        r#"{"fields":[
            {"name":"id","type":"keyword"},
            {"name":"n","type":"integer"},
            {"name":"x","type":"float"},
            {"name":"k","type":"keyword"},
            {"name":"tags","type":"keyword"},
            {"name":"body","type":"text"}]}"#,
    )
    .unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Add {
        n: Vec<i64>,
        x: Option<f64>,
        k: Option<&'static str>,
        tags: Vec<&'static str>,
        words: Vec<&'static str>,
    },
    /// Delete the document added `back` adds ago (by id).
    Delete(usize),
    /// Replace the document added `back` adds ago.
    Update(usize, i64),
    Commit,
    Merge,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (
            prop::collection::vec(-6i64..6, 0..3),
            prop::option::of(prop_oneof![Just(0.5f64), -3.0f64..3.0]),
            prop::option::of(prop::sample::select(vec!["a", "b", "c", "bb"])),
            prop::collection::vec(prop::sample::select(vec!["t", "u", "v"]), 0..3),
            prop::collection::vec(prop::sample::select(vec!["red", "green", "blue"]), 1..4),
        )
            .prop_map(|(n, x, k, tags, words)| Op::Add { n, x, k, tags, words }),
        2 => (0usize..30).prop_map(Op::Delete),
        1 => (0usize..30, -6i64..6).prop_map(|(b, n)| Op::Update(b, n)),
        2 => Just(Op::Commit),
        1 => Just(Op::Merge),
    ]
}

fn sort_field() -> impl Strategy<Value = SortField> {
    (
        prop::sample::select(vec!["n", "x", "k", "tags"]),
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(f, descending, missing_first)| SortField {
            key: SortKey::Field(f.into()),
            descending,
            missing_first,
        })
}

fn doc(schema: &Schema, id: usize, op: &Op) -> Document {
    let Op::Add {
        n,
        x,
        k,
        tags,
        words,
    } = op
    else {
        unreachable!()
    };
    let mut m = Map::new();
    m.insert("id".into(), json!(format!("d{id}")));
    if !n.is_empty() {
        m.insert("n".into(), json!(n));
    }
    if let Some(x) = x {
        m.insert("x".into(), json!(x));
    }
    if let Some(k) = k {
        m.insert("k".into(), json!(k));
    }
    if !tags.is_empty() {
        m.insert("tags".into(), json!(tags));
    }
    m.insert("body".into(), Value::from(words.join(" ")));
    Document::from_map(schema, &m).unwrap()
}

fn opts(threads: usize, sort: Option<IndexSort>) -> WriterOptions {
    WriterOptions {
        threads,
        ram_budget_bytes: 1 << 20,
        merge_policy: MergePolicy::Log { factor: 3 },
        directory: DirectoryKind::Mmap,
        index_sort: sort,
    }
}

/// Runs `ops` on a new index at `path`.
fn build(path: &std::path::Path, ops: &[Op], threads: usize, sort: Option<IndexSort>) {
    let schema = schema();
    let mut w = IndexWriter::create(path, schema.clone(), opts(threads, sort)).unwrap();
    let mut added = 0usize;
    for o in ops {
        match o {
            Op::Add { .. } => {
                w.add_document(doc(&schema, added, o)).unwrap();
                added += 1;
            }
            Op::Delete(back) if *back < added => {
                let id = format!("d{}", added - 1 - back);
                w.delete_term("id", &FieldValue::Str(id)).unwrap();
            }
            Op::Update(back, n) if *back < added => {
                let id = format!("d{}", added - 1 - back);
                let mut m = Map::new();
                m.insert("id".into(), json!(id));
                m.insert("n".into(), json!([n]));
                m.insert("k".into(), json!("u"));
                m.insert("body".into(), json!("green"));
                let d = Document::from_map(&schema, &m).unwrap();
                w.update_document("id", &FieldValue::Str(id), d).unwrap();
            }
            Op::Commit => {
                w.commit().unwrap();
            }
            Op::Merge => {
                w.commit().unwrap();
                w.force_merge(1).unwrap();
            }
            _ => {}
        }
    }
    w.commit().unwrap();
}

/// A hit as both indexes must agree on it: index order, sort values, stored id.
type Seen = (u64, Vec<SortValue>, Value);

fn run(
    index: &Index,
    q: &Query,
    sort: &[SortField],
    k: usize,
    after: Option<&[SortValue]>,
) -> (u64, Vec<Seen>) {
    let s = index.searcher();
    let r = s.search_sorted(q, sort, k, after, false).unwrap();
    let hits = r
        .hits
        .iter()
        .map(|h| {
            let id = s.stored_fields(h.hit.doc).unwrap()["id"].clone();
            (h.hit.seq, h.values.clone(), id)
        })
        .collect();
    (r.total_hits, hits)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn sorted_search_on_an_index_sorted_index_equals_the_unsorted_one(
        ops in prop::collection::vec(op(), 1..160),
        index_sort in prop::collection::vec(sort_field(), 1..3),
        threads in 1usize..3,
        searches in prop::collection::vec(
            (
                prop::collection::vec(sort_field(), 0..2),
                prop::bool::ANY,
                0usize..4,
                1usize..12,
                prop::option::of(0usize..200),
            ),
            6,
        ),
    ) {
        // Distinct fields in the index sort.
        let mut isort: Vec<IndexSortField> = Vec::new();
        for s in &index_sort {
            let SortKey::Field(f) = &s.key else { unreachable!() };
            if isort.iter().all(|k| &k.field != f) {
                isort.push(IndexSortField {
                    field: f.clone(),
                    descending: s.descending,
                    missing_first: s.missing_first,
                });
            }
        }
        let isort = IndexSort::new(isort);
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        build(a.path(), &ops, threads, None);
        build(b.path(), &ops, threads, Some(isort.clone()));
        check_index(b.path(), DirectoryKind::Mmap).unwrap();
        let (plain, sorted) = (Index::open(a.path()).unwrap(), Index::open(b.path()).unwrap());
        prop_assert_eq!(sorted.index_sort(), Some(&isort));
        for seg in sorted.segments() {
            prop_assert_eq!(seg.index_sort(), Some(&isort));
        }
        prop_assert_eq!(plain.live_doc_count(), sorted.live_doc_count());
        let queries = [
            Query::MatchAll,
            Query::Term { field: "body".into(), term: "red".into() },
            Query::Term { field: "body".into(), term: "green".into() },
            Query::Term { field: "tags".into(), term: "t".into() },
        ];
        for (rest, lead_with_index_sort, qi, k, after_at) in &searches {
            // Most searches start with the index sort's keys (where early termination runs).
            let mut sort: Vec<SortField> = if *lead_with_index_sort {
                isort
                    .fields
                    .iter()
                    .map(|f| SortField {
                        key: SortKey::Field(f.field.clone()),
                        descending: f.descending,
                        missing_first: f.missing_first,
                    })
                    .collect()
            } else {
                Vec::new()
            };
            sort.extend(rest.iter().cloned());
            if sort.is_empty() {
                sort.push(SortField::asc("n"));
            }
            sort.push(SortField { key: SortKey::IndexOrder, descending: false, missing_first: false });
            let q = &queries[*qi];
            let all = run(&plain, q, &sort, 10_000, None);
            prop_assert_eq!(&run(&sorted, q, &sort, 10_000, None), &all);
            prop_assert_eq!(&run(&sorted, q, &sort, *k, None), &run(&plain, q, &sort, *k, None));
            if let Some(at) = after_at {
                if !all.1.is_empty() {
                    let after = &all.1[at % all.1.len()].1;
                    let want = run(&plain, q, &sort, *k, Some(after));
                    prop_assert_eq!(run(&sorted, q, &sort, *k, Some(after)), want);
                    // Without the unique last key: equal values are passed over alike.
                    let short = &sort[..sort.len() - 1];
                    let after = &after[..after.len() - 1];
                    prop_assert_eq!(
                        run(&sorted, q, short, *k, Some(after)),
                        run(&plain, q, short, *k, Some(after))
                    );
                }
            }
            prop_assert_eq!(
                run(&sorted, q, &sort, 0, None).0,
                all.0
            );
        }
    }
}

#[test]
fn an_index_sort_is_checked_at_creation_and_fixed_afterwards() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = |specs: &[&str]| {
        let t = tempfile::tempdir().unwrap();
        let sort = IndexSort::parse(specs).unwrap();
        match IndexWriter::create(t.path(), schema(), opts(1, Some(sort))) {
            Err(e) => e,
            Ok(_) => panic!("{specs:?} accepted"),
        }
    };
    assert!(matches!(bad(&["body"]), Error::IndexSort { .. }));
    assert!(matches!(bad(&["missing"]), Error::IndexSort { .. }));
    let sort = IndexSort::parse(&["n:desc"]).unwrap();
    let mut w = IndexWriter::create(tmp.path(), schema(), opts(1, Some(sort.clone()))).unwrap();
    w.commit().unwrap();
    drop(w);
    // Reopened without a sort: the index's is kept; with another: refused.
    let mut w = IndexWriter::open(tmp.path(), opts(1, None)).unwrap();
    w.add_document(doc(
        &schema(),
        0,
        &Op::Add {
            n: vec![1],
            x: None,
            k: None,
            tags: vec![],
            words: vec!["red"],
        },
    ))
    .unwrap();
    w.commit().unwrap();
    drop(w);
    let other = IndexSort::parse(&["n:asc"]).unwrap();
    let e = IndexWriter::open(tmp.path(), opts(1, Some(other)))
        .err()
        .unwrap();
    assert!(matches!(e, Error::IndexSort { .. }), "{e}");
    assert!(
        e.to_string().contains("fixed when the index is created"),
        "{e}"
    );
    drop(IndexWriter::open(tmp.path(), opts(1, Some(sort.clone()))).unwrap());
    let index = Index::open(tmp.path()).unwrap();
    assert_eq!(index.index_sort(), Some(&sort));
    assert_eq!(index.segments()[0].index_sort(), Some(&sort));
}

/// A segment whose meta claims a sort its documents are not in is found by `check`.
#[test]
fn check_finds_a_segment_out_of_its_claimed_order() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = schema();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(1, None)).unwrap();
    for (i, n) in [3i64, 1, 2].iter().enumerate() {
        let op = Op::Add {
            n: vec![*n],
            x: None,
            k: None,
            tags: vec![],
            words: vec!["red"],
        };
        w.add_document(doc(&schema, i, &op)).unwrap();
    }
    w.commit().unwrap();
    drop(w);
    // Claim an ascending sort in the segment meta and the commit point, rewriting both files
    // with valid frames and checksums: only `check` can tell.
    let index = Index::open(tmp.path()).unwrap();
    let seg = &index.segments()[0];
    let sort = IndexSort::parse(&["n"]).unwrap();
    let mut meta = seg.meta().clone();
    meta.index_sort = Some(sort.clone());
    let meta_file = tmp.path().join(format!("{}.meta", seg.name()));
    std::fs::write(&meta_file, meta.encode()).unwrap();
    let mut commit = index.commit().clone();
    commit.index_sort = Some(sort);
    let commit_file = tmp.path().join(quarry::codec::meta::CommitPoint::file_name(
        commit.generation,
    ));
    std::fs::write(&commit_file, commit.encode()).unwrap();
    drop(index);
    let e = check_index(tmp.path(), DirectoryKind::Mmap).unwrap_err();
    assert!(e.to_string().contains("claims index sort [n:asc]"), "{e}");
}

/// Background merges of a sorted index: documents deleted while a merge runs are deleted in the
/// merged (re-sorted) segment through its doc maps, as without a sort.
#[test]
fn background_merges_keep_the_order_and_deletions_made_meanwhile() {
    let schema = schema();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sort = IndexSort::parse(&["n:desc", "k"]).unwrap();
    for (dir, s) in [(&a, None), (&b, Some(sort.clone()))] {
        let mut o = opts(1, s);
        o.merge_policy = MergePolicy::Log { factor: 2 };
        let mut w = IndexWriter::create(dir.path(), schema.clone(), o).unwrap();
        w.set_background_merges(true);
        for i in 0..600usize {
            let op = Op::Add {
                n: vec![((i * 37) % 101) as i64 - 50],
                x: None,
                k: ["a", "b", "c"].get(i % 4).copied(),
                tags: vec![],
                words: vec!["red"],
            };
            w.add_document(doc(&schema, i, &op)).unwrap();
            if i % 50 == 49 {
                w.commit().unwrap();
                // Deletions of older documents, possibly in segments being merged.
                w.delete_term("id", &FieldValue::Str(format!("d{}", i - 45)))
                    .unwrap();
            }
        }
        w.wait_for_merges().unwrap();
        w.commit().unwrap();
    }
    check_index(b.path(), DirectoryKind::Mmap).unwrap();
    let (plain, sorted) = (
        Index::open(a.path()).unwrap(),
        Index::open(b.path()).unwrap(),
    );
    assert!(sorted.segments().len() < 12, "merges ran");
    assert!(sorted
        .segments()
        .iter()
        .all(|s| s.index_sort() == Some(&sort)));
    let by = [SortField::desc("n"), SortField::asc("k")];
    assert_eq!(
        run(&sorted, &Query::MatchAll, &by, 10_000, None),
        run(&plain, &Query::MatchAll, &by, 10_000, None)
    );
    assert_eq!(sorted.live_doc_count(), 600 - 12);
}

/// A flushed segment whose documents came in sort order is kept as written (only its meta
/// records the sort); one out of order is rewritten under a new name. Both pass `check`.
#[test]
fn a_flush_already_in_order_is_not_rewritten() {
    let schema = schema();
    for (ascending, rewritten) in [(true, false), (false, true)] {
        let tmp = tempfile::tempdir().unwrap();
        let sort = IndexSort::parse(&["n"]).unwrap();
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(1, Some(sort))).unwrap();
        for i in 0..50i64 {
            let n = if ascending { i } else { 50 - i };
            let op = Op::Add {
                n: vec![n],
                x: None,
                k: None,
                tags: vec![],
                words: vec!["red"],
            };
            w.add_document(doc(&schema, i as usize, &op)).unwrap();
        }
        w.commit().unwrap();
        drop(w);
        check_index(tmp.path(), DirectoryKind::Mmap).unwrap();
        let index = Index::open(tmp.path()).unwrap();
        assert_eq!(index.segments().len(), 1);
        assert_eq!(index.segments()[0].name() != "s000000", rewritten);
        let files: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("s0"))
            .collect();
        assert!(
            files
                .iter()
                .all(|n| n.starts_with(index.segments()[0].name())),
            "{files:?}"
        );
    }
}

/// A sorted segment has about one add-order run per document: past 64 they are kept in
/// `.cols` (the meta's JSON lists none), read back at open, and ties still break by add order.
#[test]
fn many_add_order_runs_live_in_cols_and_still_break_ties() {
    let schema = schema();
    let tmp = tempfile::tempdir().unwrap();
    let sort = IndexSort::parse(&["n"]).unwrap();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(1, Some(sort))).unwrap();
    // Keys that interleave the add order: 300 documents, 10 per key.
    for i in 0..300usize {
        let op = Op::Add {
            n: vec![(i * 7 % 30) as i64],
            x: None,
            k: None,
            tags: vec![],
            words: vec!["red"],
        };
        w.add_document(doc(&schema, i, &op)).unwrap();
    }
    w.commit().unwrap();
    drop(w);
    check_index(tmp.path(), DirectoryKind::Mmap).unwrap();
    let index = Index::open(tmp.path()).unwrap();
    let seg = &index.segments()[0];
    let meta = std::fs::read(tmp.path().join(format!("{}.meta", seg.name()))).unwrap();
    let text = String::from_utf8_lossy(&meta);
    assert!(text.contains("\"seq_runs\":[]"), "{text}");
    assert!(text.contains("\"seq_runs_at\""), "{text}");
    assert!(seg.meta().seq_runs.len() >= 64);
    // Ascending by n, ties by add order: the ids of key 0 are the multiples of 30, in order.
    let searcher = index.searcher();
    let top = searcher
        .search_sorted(&Query::MatchAll, &[SortField::asc("n")], 10, None, false)
        .unwrap();
    let ids: Vec<Value> = top
        .hits
        .iter()
        .map(|h| searcher.stored_fields(h.hit.doc).unwrap()["id"].clone())
        .collect();
    let want: Vec<Value> = (0..10).map(|i| json!(format!("d{}", i * 30))).collect();
    assert_eq!(ids, want);
}
