//! Merging: an index flushed into many small segments, merged by the log policy and then
//! force-merged to one segment, answers every oracle query exactly as before and checks clean.
mod common;

use quarry::{
    check_index, DirectoryKind, Document, Index, IndexWriter, MergePolicy, SearchMode,
    WriterOptions,
};
use serde_json::Value;

fn answers(index: &Index, queries: &[Value]) -> Vec<(u64, Vec<(i64, f32)>)> {
    let s = index.searcher();
    queries
        .iter()
        .map(|q| {
            let query = s
                .parse_query(q["query"].as_str().unwrap(), &["body"])
                .unwrap();
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
            (r.total_hits, top)
        })
        .collect()
}

#[test]
fn merged_index_answers_like_the_unmerged_one() {
    let lines: Vec<String> = common::reuters_lines().into_iter().take(6000).collect();
    let schema = common::reuters_schema();
    let tmp = tempfile::tempdir().unwrap();
    // A tiny RAM budget flushes many segments; the log policy (factor 3) merges some at commit.
    let opts = WriterOptions {
        threads: 2,
        ram_budget_bytes: 1 << 20,
        merge_policy: MergePolicy::Log { factor: 3 },
        directory: DirectoryKind::Mmap,
        index_sort: None,
    };
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
    for line in &lines {
        let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        let m: serde_json::Map<String, Value> = v
            .into_iter()
            .filter(|(k, _)| ["id", "title", "body"].contains(&k.as_str()))
            .collect();
        w.add_document(Document::from_map(&schema, &m).unwrap())
            .unwrap();
    }
    let stats = w.commit().unwrap();
    assert!(
        stats.merges > 0,
        "the log policy should have merged: {stats:?}"
    );
    let (_, queries) = common::oracle();
    let before_index = Index::open(tmp.path()).unwrap();
    assert!(before_index.segment_count() > 1);
    let before = answers(&before_index, &queries);
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();

    let stats = w.force_merge(1).unwrap();
    assert_eq!(stats.segments, 1);
    drop(w);
    let after_index = Index::open(tmp.path()).unwrap();
    assert_eq!(after_index.segment_count(), 1);
    assert_eq!(after_index.doc_count(), 6000);
    assert_eq!(answers(&after_index, &queries), before);
    // The reader opened before the merge still answers from its own commit.
    assert_eq!(answers(&before_index, &queries), before);
    check_index(tmp.path(), DirectoryKind::Mmap).unwrap();
    // Files an open reader uses are never deleted; once the readers are gone, the next writer
    // clean-up removes them.
    let files = || std::fs::read_dir(tmp.path()).unwrap().count();
    assert!(files() > 1 + 7 + 1, "the old reader's files are kept");
    drop((before_index, after_index));
    drop(IndexWriter::open(tmp.path(), WriterOptions::default()).unwrap());
    assert_eq!(
        files(),
        1 + 7 + 1,
        "only the commit point, one segment's seven files and write.lock remain"
    );
}
