//! Document reordering by recursive graph bisection (`IndexWriter::optimize_reorder`) on the
//! bundled Reuters corpus: the reordered index answers every oracle query with the same count,
//! the same top-10 documents and scores as the same index merged without reordering, its
//! postings are smaller, `check` accepts it, and it keeps taking updates and deletions.
mod common;

use common::{build_reuters, oracle, oracle_query, reuters_lines};
use quarry::{
    check_index, BpOptions, DirectoryKind, Document, Index, IndexSort, IndexSortField, IndexWriter,
    Schema, SearchMode, Searcher, WriterOptions,
};
use serde_json::Value;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Bytes of the files of one kind (`post`, `pos`, ...) in an index directory.
fn bytes_of(dir: &std::path::Path, ext: &str) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

/// (count, [(id, score)]) of the top 10.
fn answer(s: &Searcher, q: &quarry::query::Query) -> (u64, Vec<(i64, f32)>) {
    let r = s.search(q, 10, SearchMode::TopCount).unwrap();
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
    (r.total_hits, top)
}

#[test]
fn bp_keeps_every_answer_and_shrinks_postings() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    build_reuters(&base, &reuters_lines(), 2, DirectoryKind::Mmap);
    // Deletions, so the reordering also compacts.
    {
        let mut w = IndexWriter::open(&base, WriterOptions::default()).unwrap();
        let r = w.reader().unwrap();
        let q = r
            .searcher()
            .parse_query("body:cocoa OR body:zinc", &[])
            .unwrap();
        w.delete_query(&q).unwrap();
        w.commit().unwrap();
    }
    let (plain, bp) = (tmp.path().join("plain"), tmp.path().join("bp"));
    copy_dir(&base, &plain);
    copy_dir(&base, &bp);
    let mut w = IndexWriter::open(&plain, WriterOptions::default()).unwrap();
    w.force_merge(1).unwrap();
    w.close().unwrap();
    let mut w = IndexWriter::open(&bp, WriterOptions::default()).unwrap();
    w.optimize_reorder(&BpOptions::default()).unwrap();
    w.close().unwrap();

    let report = check_index(&bp, DirectoryKind::Mmap).unwrap();
    assert_eq!(report.segments.len(), 1);
    let (a, b) = (Index::open(&plain).unwrap(), Index::open(&bp).unwrap());
    let (sa, sb) = (a.searcher(), b.searcher());
    assert_eq!(sa.live_doc_count(), sb.live_doc_count());
    let (_, queries) = oracle();
    let mut compared = 0;
    for q in &queries {
        let Ok(qa) = oracle_query(&sa, q) else {
            continue;
        };
        let qb = oracle_query(&sb, q).unwrap();
        let (ca, ta) = answer(&sa, &qa);
        let (cb, tb) = answer(&sb, &qb);
        assert_eq!(ca, cb, "{q}: count");
        // Same scores in the same order; documents of equal score may trade places.
        let scores = |t: &[(i64, f32)]| t.iter().map(|x| x.1.to_bits()).collect::<Vec<_>>();
        assert_eq!(scores(&ta), scores(&tb), "{q}: scores");
        let above = |t: &[(i64, f32)]| {
            let last = t.last().map_or(f32::MIN, |x| x.1);
            let mut ids: Vec<i64> = t.iter().filter(|x| x.1 > last).map(|x| x.0).collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(
            above(&ta),
            above(&tb),
            "{q}: documents above the last score"
        );
        let count = sb.search(&qb, 10, SearchMode::Count).unwrap().total_hits;
        assert_eq!(count, ca, "{q}: count mode");
        compared += 1;
    }
    assert!(compared > 100, "only {compared} oracle queries compared");
    let (pa, pb) = (bytes_of(&plain, "post"), bytes_of(&bp, "post"));
    println!("postings: merged {pa} bytes, BP-reordered {pb} bytes");
    assert!(pb < pa, "BP postings {pb} bytes, plain {pa}");

    // The reordered index keeps working: updates by key, deletions, another merge.
    drop((sa, sb, a, b));
    let mut w = IndexWriter::open(&bp, WriterOptions::default()).unwrap();
    let schema = w.schema().clone();
    let doc: serde_json::Map<String, Value> = serde_json::from_str(
        r#"{"id": 999999, "title": "xylozebra", "body": "xylozebra crossing"}"#,
    )
    .unwrap();
    w.add_document(Document::from_map(&schema, &doc).unwrap())
        .unwrap();
    w.commit().unwrap();
    w.force_merge(1).unwrap();
    w.close().unwrap();
    let idx = Index::open(&bp).unwrap();
    let s = idx.searcher();
    let q = s.parse_query("body:xylozebra", &[]).unwrap();
    assert_eq!(
        s.search(&q, 10, SearchMode::TopCount).unwrap().total_hits,
        1
    );
    check_index(&bp, DirectoryKind::Mmap).unwrap();
}

#[test]
fn an_index_sort_is_not_reordered() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = Schema::from_json(
        r#"{"fields":[{"name":"n","type":"integer"},{"name":"body","type":"text"}]}"#,
    )
    .unwrap();
    let opts = WriterOptions {
        index_sort: Some(IndexSort {
            fields: vec![IndexSortField::asc("n")],
        }),
        ..WriterOptions::default()
    };
    let mut w = IndexWriter::create(tmp.path(), schema, opts).unwrap();
    let err = w.optimize_reorder(&BpOptions::default()).unwrap_err();
    assert!(err.to_string().contains("index sort"), "{err}");
    let bad = BpOptions {
        min_partition: 1,
        ..BpOptions::default()
    };
    let err = w.optimize_reorder(&bad).unwrap_err();
    assert!(err.to_string().contains("min_partition"), "{err}");
}
