//! Online indexing: deletions, updates, near-real-time readers, reloads, the writer lock and
//! file clean-up, on the bundled Reuters corpus and on small hand-made indexes.
mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use quarry::{
    check_index, DirectoryKind, Document, Error, FieldValue, Index, IndexReader, IndexWriter,
    MergePolicy, ReloadPolicy, Schema, SearchMode, Searcher, WriterOptions,
};
use serde_json::Value;

fn opts(policy: MergePolicy) -> WriterOptions {
    WriterOptions {
        threads: 1,
        ram_budget_bytes: 1 << 20,
        merge_policy: policy,
        directory: DirectoryKind::Mmap,
        index_sort: None,
    }
}

fn small_schema() -> Schema {
    Schema::builder().keyword("key").text("body", true).build()
}

fn doc(schema: &Schema, key: &str, body: &str) -> Document {
    Document::from_json(
        schema,
        &serde_json::json!({"key": key, "body": body}).to_string(),
    )
    .unwrap()
}

fn keys(s: &Searcher, q: &str) -> BTreeSet<String> {
    let query = s.parse_query(q, &["body"]).unwrap();
    let r = s.search(&query, 1000, SearchMode::TopCount).unwrap();
    assert_eq!(r.total_hits as usize, r.top.len(), "count and hits agree");
    let count = s.search(&query, 0, SearchMode::Count).unwrap().total_hits;
    assert_eq!(count, r.total_hits, "count mode agrees");
    r.top
        .iter()
        .map(|h| {
            s.stored_fields(h.doc).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn second_writer_gets_locked_until_the_first_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let w = IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    match IndexWriter::open(tmp.path(), opts(MergePolicy::None)) {
        Err(Error::Locked { path }) => assert!(path.contains(&*tmp.path().to_string_lossy())),
        other => panic!("expected Locked, got {other:?}", other = other.err()),
    }
    assert!(matches!(
        IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)),
        Err(Error::Locked { .. })
    ));
    drop(w);
    let mut w = IndexWriter::create(tmp.path(), schema, opts(MergePolicy::None)).unwrap();
    w.commit().unwrap();
}

#[test]
fn deletes_updates_and_near_real_time_visibility() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    for (k, b) in [("a", "oil price"), ("b", "oil field"), ("c", "gold price")] {
        w.add_document(doc(&schema, k, b)).unwrap();
    }
    let reader = w.reader().unwrap();
    assert_eq!(keys(&reader.searcher(), "oil"), set(&["a", "b"]));
    // Not durable yet: a reader of the commits sees nothing.
    assert!(Index::open(tmp.path()).is_err());

    // An update is atomic and a delete only removes earlier documents.
    let before = reader.searcher();
    w.update_document(
        "key",
        &FieldValue::Str("a".into()),
        doc(&schema, "a", "gold mine"),
    )
    .unwrap();
    w.delete_term("key", &FieldValue::Str("c".into())).unwrap();
    w.add_document(doc(&schema, "c", "silver price")).unwrap();
    assert_eq!(
        keys(&reader.searcher(), "oil"),
        set(&["a", "b"]),
        "not refreshed yet"
    );
    w.refresh().unwrap();
    let s = reader.searcher();
    assert_eq!(keys(&s, "oil"), set(&["b"]));
    assert_eq!(keys(&s, "gold"), set(&["a"]));
    assert_eq!(keys(&s, "price"), set(&["c"]));
    assert_eq!(keys(&s, "*:*"), set(&["a", "b", "c"]));
    assert_eq!(s.live_doc_count(), 3);
    // The searcher taken before the refresh still sees its point in time.
    assert_eq!(keys(&before, "oil"), set(&["a", "b"]));

    let q = s.parse_query("silver OR field", &["body"]).unwrap();
    w.delete_query(&q).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!(stats.live_docs, 1);
    let committed = Index::open(tmp.path()).unwrap();
    assert_eq!(keys(&committed.searcher(), "*:*"), set(&["a"]));
    assert_eq!(committed.live_doc_count(), 1);
    assert_eq!(keys(&reader.searcher(), "*:*"), set(&["a"]));
    let report = check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    assert_eq!(report.live_docs, 1);
    assert!(report.segments.iter().any(|s| s.deleted > 0));

    // Unknown fields are typed errors.
    assert!(matches!(
        w.delete_term("nope", &FieldValue::Int(1)),
        Err(Error::UnknownField { .. })
    ));
    let bad = quarry::query::Query::Term {
        field: "nope".into(),
        term: "x".into(),
    };
    assert!(matches!(
        w.delete_query(&bad),
        Err(Error::UnknownField { .. })
    ));
    w.delete_all().unwrap();
    w.add_document(doc(&schema, "z", "fresh start")).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!((stats.live_docs, stats.docs), (1, 1), "{stats:?}");
    assert_eq!(
        keys(&Index::open(tmp.path()).unwrap().searcher(), "*:*"),
        set(&["z"])
    );
}

#[test]
fn reader_reload_reuses_unchanged_segments_and_old_searchers_survive_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    for i in 0..20 {
        w.add_document(doc(&schema, &format!("k{i}"), "alpha beta"))
            .unwrap();
    }
    w.commit().unwrap();
    let reader =
        IndexReader::open_with(tmp.path(), DirectoryKind::Mmap, ReloadPolicy::Manual).unwrap();
    let old = reader.searcher();
    assert!(!reader.reload().unwrap(), "nothing new");
    for i in 20..30 {
        w.add_document(doc(&schema, &format!("k{i}"), "alpha gamma"))
            .unwrap();
    }
    w.delete_term("key", &FieldValue::Str("k3".into())).unwrap();
    w.commit().unwrap();
    assert!(reader.reload().unwrap());
    let new = reader.searcher();
    assert_eq!(new.segments().len(), 2);
    assert!(
        Arc::ptr_eq(&old.segments()[0], &new.segments()[0]),
        "segment reused"
    );
    assert_eq!(keys(&new, "alpha").len(), 29);
    // Merge everything away; the old searcher's files are held, so it keeps answering.
    w.force_merge(1).unwrap();
    assert_eq!(keys(&old, "alpha").len(), 20);
    assert!(reader.reload().unwrap());
    let merged = reader.searcher();
    assert_eq!(merged.segments().len(), 1);
    assert_eq!(
        merged.segments()[0].doc_count(),
        29,
        "the deleted doc was merged away"
    );
    assert!(merged.live_docs()[0].is_none());
    drop((old, new, merged, reader));
    // Once no reader holds them, the old files go at the next commit.
    w.commit().unwrap();
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let commits = names.iter().filter(|n| n.starts_with("commit_")).count();
    let dels = names.iter().filter(|n| n.ends_with(".del")).count();
    assert_eq!((commits, dels), (1, 0), "{names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with(".meta")).count(), 1);
}

#[test]
fn reader_with_reload_policy_follows_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    w.add_document(doc(&schema, "a", "x")).unwrap();
    w.commit().unwrap();
    let reader = IndexReader::open(tmp.path()).unwrap();
    w.add_document(doc(&schema, "b", "x")).unwrap();
    w.commit().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while reader.searcher().live_doc_count() < 2 {
        assert!(std::time::Instant::now() < deadline, "never reloaded");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn orphans_of_a_failed_run_are_removed_and_foreign_files_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    {
        let mut w =
            IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
        w.add_document(doc(&schema, "a", "x")).unwrap();
        w.refresh().unwrap(); // segment files written, never committed
        assert!(tmp.path().join("s000000.meta").exists());
    }
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    std::fs::write(tmp.path().join("s000042.post"), "stray").unwrap();
    let names = || -> BTreeSet<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert!(
        !names().contains("s000000.meta"),
        "dropped writer cleaned up: {:?}",
        names()
    );
    let _w = IndexWriter::create(tmp.path(), schema, opts(MergePolicy::None)).unwrap();
    assert_eq!(names(), set(&["notes.txt", "write.lock"]));
}

#[test]
fn opening_retries_while_a_writer_commits_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(
        tmp.path(),
        schema.clone(),
        opts(MergePolicy::Log { factor: 2 }),
    )
    .unwrap();
    w.add_document(doc(&schema, "k", "x")).unwrap();
    w.commit().unwrap();
    let path = tmp.path().to_path_buf();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let opener = std::thread::spawn(move || {
        let mut opened = 0;
        while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
            let i = Index::open(&path).expect("open while the writer works");
            assert!(i.live_doc_count() >= 1);
            opened += 1;
        }
        opened
    });
    for i in 0..60 {
        w.add_document(doc(&schema, &format!("k{i}"), "x")).unwrap();
        w.commit().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(opener.join().unwrap() > 0);
}

fn reuters_doc(schema: &Schema, line: &str) -> (i64, Document) {
    let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
    let m: serde_json::Map<String, Value> = v
        .into_iter()
        .filter(|(k, _)| ["id", "title", "body"].contains(&k.as_str()))
        .collect();
    (
        m["id"].as_i64().unwrap(),
        Document::from_map(schema, &m).unwrap(),
    )
}

fn answers(s: &Searcher, queries: &[String]) -> Vec<(u64, Vec<(i64, f32)>)> {
    queries
        .iter()
        .map(|q| {
            let query = s.parse_query(q, &["body"]).unwrap();
            let r = s.search(&query, 10, SearchMode::TopCount).unwrap();
            let top = r
                .top
                .iter()
                .map(|h| {
                    (
                        s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap(),
                        h.score,
                    )
                })
                .collect();
            let top_only = s.search(&query, 10, SearchMode::Top).unwrap();
            assert_eq!(top_only.top, r.top, "{q}: top and top_count agree");
            let count = s.search(&query, 0, SearchMode::Count).unwrap().total_hits;
            assert_eq!(count, r.total_hits, "{q}: count agrees");
            (r.total_hits, top)
        })
        .collect()
}

fn oracle_queries() -> Vec<String> {
    let mut out = Vec::new();
    for f in [
        "reuters-queries-public.jsonl",
        "reuters-queries-extra.jsonl",
    ] {
        let text = std::fs::read_to_string(common::root().join("tests/fixtures").join(f)).unwrap();
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(l).unwrap();
            out.push(v["query"].as_str().unwrap().to_string());
        }
    }
    out
}

/// Deleting a third of the corpus answers every oracle query with the survivors' counts; after
/// a force-merge the answers (top 10 and scores) equal an index built from the survivors only.
#[test]
fn reuters_with_deletions_matches_an_index_of_the_survivors() {
    let lines: Vec<String> = common::reuters_lines().into_iter().take(4000).collect();
    let schema = common::reuters_schema();
    let queries = oracle_queries();
    let deleted = |id: i64| id % 3 == 0;
    let a = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::create(a.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    for (i, line) in lines.iter().enumerate() {
        let (_, d) = reuters_doc(&schema, line);
        w.add_document(d).unwrap();
        if i == 2000 {
            w.commit().unwrap();
        }
    }
    for line in &lines {
        let (id, _) = reuters_doc(&schema, line);
        if deleted(id) {
            w.delete_term("id", &FieldValue::Int(id)).unwrap();
        }
    }
    w.commit().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut wb = IndexWriter::create(b.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    for line in &lines {
        let (id, d) = reuters_doc(&schema, line);
        if !deleted(id) {
            wb.add_document(d).unwrap();
        }
    }
    wb.force_merge(1).unwrap();
    let survivors = answers(&Index::open(b.path()).unwrap().searcher(), &queries);

    let with_deletes = answers(&Index::open(a.path()).unwrap().searcher(), &queries);
    for ((q, (n, top)), (sn, _)) in queries.iter().zip(&with_deletes).zip(&survivors) {
        assert_eq!(n, sn, "{q}: count with deletions");
        assert!(
            top.iter().all(|(id, _)| !deleted(*id)),
            "{q}: a deleted doc was returned"
        );
    }
    w.force_merge(1).unwrap();
    check_index(a.path(), DirectoryKind::Mmap).unwrap();
    let merged = answers(&Index::open(a.path()).unwrap().searcher(), &queries);
    for ((q, m), s) in queries.iter().zip(&merged).zip(&survivors) {
        assert_eq!(m.0, s.0, "{q}: count after merge");
        let ids = |v: &[(i64, f32)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(&m.1), ids(&s.1), "{q}: top 10 after merge");
        for (x, y) in m.1.iter().zip(&s.1) {
            assert!(
                (x.1 - y.1).abs() <= 1e-6 * y.1.abs().max(1.0),
                "{q}: {x:?} vs {y:?}"
            );
        }
    }
}

#[test]
fn deleted_docs_still_count_in_statistics_until_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts(MergePolicy::None)).unwrap();
    for (k, b) in [("a", "oil oil"), ("b", "oil"), ("c", "gas")] {
        w.add_document(doc(&schema, k, b)).unwrap();
    }
    w.commit().unwrap();
    let score_of_a = |s: &Searcher| {
        let q = s.parse_query("oil", &["body"]).unwrap();
        s.search(&q, 10, SearchMode::TopCount).unwrap().top[0].score
    };
    let before = score_of_a(&Index::open(tmp.path()).unwrap().searcher());
    w.delete_term("key", &FieldValue::Str("b".into())).unwrap();
    w.commit().unwrap();
    let s = Index::open(tmp.path()).unwrap().searcher();
    assert_eq!(
        score_of_a(&s),
        before,
        "doc freq still counts the deleted doc"
    );
    assert_eq!(s.field_stats("body").unwrap().doc_count, 3);
    w.force_merge(1).unwrap();
    let s = Index::open(tmp.path()).unwrap().searcher();
    assert_eq!(s.field_stats("body").unwrap().doc_count, 2);
    assert!(score_of_a(&s) != before);
}

/// Background merges: adds, deletes and searches go on while a merge runs on its own thread;
/// deletions made to the merged segments meanwhile are carried over; readers opened before keep
/// working.
#[test]
fn background_merges_carry_over_concurrent_deletions() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = small_schema();
    let mut w = IndexWriter::create(
        tmp.path(),
        schema.clone(),
        opts(MergePolicy::Log { factor: 2 }),
    )
    .unwrap();
    w.set_background_merges(true);
    let mut live: BTreeSet<String> = BTreeSet::new();
    let mut next = 0;
    let reader = w.reader().unwrap();
    for round in 0..12 {
        for _ in 0..50 {
            let k = format!("k{next}");
            w.add_document(doc(&schema, &k, "alpha beta")).unwrap();
            live.insert(k);
            next += 1;
        }
        // Delete from older segments (possibly being merged right now).
        for d in [round * 50 + 3, round * 37 + 1, 7] {
            let k = format!("k{d}");
            w.delete_term("key", &FieldValue::Str(k.clone())).unwrap();
            live.remove(&k);
        }
        w.commit().unwrap();
        assert_eq!(keys(&reader.searcher(), "alpha"), live, "round {round}");
    }
    while w.wait_for_merges().unwrap() > 0 {
        w.commit().unwrap();
    }
    w.commit().unwrap();
    let s = reader.searcher();
    assert_eq!(keys(&s, "alpha"), live);
    assert!(
        s.segments().len() < 12,
        "{} segments: nothing merged",
        s.segments().len()
    );
    let done = w.background_merges_done();
    assert!(!done.is_empty(), "no background merge was logged");
    assert!(done
        .iter()
        .all(|m| m.segments >= 1 && m.docs > 0 && m.seconds >= 0.0));
    assert_eq!(
        keys(&Index::open(tmp.path()).unwrap().searcher(), "alpha"),
        live
    );
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
}
