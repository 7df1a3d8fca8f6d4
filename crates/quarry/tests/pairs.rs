//! Pairs of frequent words (format v6): the pair dictionaries hold exactly the adjacent frequent
//! words of the text — after flushes by two threads, deletions and a merge — and phrases answer
//! exactly (documents, counts, scores) as on an index without pairs.
mod common;

use quarry::{
    check_index, DirectoryKind, Document, Index, IndexWriter, MergePolicy, Schema, SearchMode,
    WriterOptions,
};
use serde_json::Value;

fn build(dir: &std::path::Path, schema: &Schema, lines: &[String]) -> IndexWriter {
    let opts = WriterOptions {
        threads: 2,
        ram_budget_bytes: 1 << 20,
        merge_policy: MergePolicy::None,
        directory: DirectoryKind::Mmap,
        index_sort: None,
    };
    let mut w = IndexWriter::create(dir, schema.clone(), opts).unwrap();
    for line in lines {
        let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        let m: serde_json::Map<String, Value> = v
            .into_iter()
            .filter(|(k, _)| ["id", "title", "body"].contains(&k.as_str()))
            .collect();
        w.add_document(Document::from_map(schema, &m).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
    w
}

/// Phrases of 2 to 5 words cut from the bodies where a frequent word starts them: pairs, runs
/// of frequent words of odd and even length, and frequent words next to rare ones.
fn phrases(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate().step_by(7) {
        let v: Value = serde_json::from_str(line).unwrap();
        let body = v["body"].as_str().unwrap_or("").to_lowercase();
        let words: Vec<&str> = body
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
            .collect();
        for (j, w) in words.iter().enumerate() {
            if quarry::pairs::is_frequent(w) && (i + j) % 5 == 0 {
                let len = 2 + (i + j) % 4;
                if j + len <= words.len() {
                    out.push(format!("\"{}\"", words[j..j + len].join(" ")));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

type Answer = (u64, Vec<(u64, f32)>);

fn answers(index: &Index, queries: &[String]) -> Vec<Answer> {
    let s = index.searcher();
    let mut out = Vec::new();
    for q in queries {
        let query = s.parse_query(q, &["title", "body"]).unwrap();
        for mode in [SearchMode::TopCount, SearchMode::Top, SearchMode::Count] {
            let r = s.search(&query, 10, mode).unwrap();
            let top = r.top.iter().map(|h| (h.seq, h.score)).collect();
            out.push((
                if mode == SearchMode::Top {
                    0
                } else {
                    r.total_hits
                },
                top,
            ));
        }
    }
    out
}

fn assert_pairs_complete(index: &Index) {
    let fields = ["title", "body"].map(|f| index.schema().field_id(f).unwrap());
    for seg in index.segments() {
        for f in fields {
            assert!(seg.has_pairs(f), "{} has pairs", seg.name());
            let (want, got) = (common::expected_pairs(seg, f), common::stored_pairs(seg, f));
            assert!(f == fields[0] || !want.is_empty(), "bodies have pairs");
            assert_eq!(got.len(), want.len(), "{}: pair terms", seg.name());
            assert!(got == want, "{}: pair postings differ", seg.name());
        }
    }
}

#[test]
fn pairs_are_exact_and_phrases_answer_as_without_them() {
    let lines: Vec<String> = common::reuters_lines().into_iter().take(4000).collect();
    let schema = common::reuters_schema();
    let plain_schema = Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .without_pairs()
        .build();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut with = build(a.path(), &schema, &lines);
    let mut without = build(b.path(), &plain_schema, &lines);
    let queries = phrases(&lines);
    assert!(queries.len() > 300, "{} phrases", queries.len());

    let index = Index::open(a.path()).unwrap();
    assert!(index.segment_count() > 2);
    assert_pairs_complete(&index);
    let plain = Index::open(b.path()).unwrap();
    for seg in plain.segments() {
        assert!(!seg.has_pairs(1) && seg.meta().pairs.is_none());
    }
    assert_eq!(answers(&index, &queries), answers(&plain, &queries));
    check_index(a.path(), DirectoryKind::Pread).unwrap();

    // Deletions, then one merged segment: its pairs drop the deleted documents.
    let q = index
        .searcher()
        .parse_query("oil OR \"of the\"", &["body"])
        .unwrap();
    for w in [&mut with, &mut without] {
        w.delete_query(&q).unwrap();
        w.commit().unwrap();
        w.force_merge(1).unwrap();
    }
    let index = Index::open(a.path()).unwrap();
    assert_eq!(index.segment_count(), 1);
    assert_pairs_complete(&index);
    let plain = Index::open(b.path()).unwrap();
    assert!(index.live_doc_count() < 4000);
    assert_eq!(index.live_doc_count(), plain.live_doc_count());
    assert_eq!(answers(&index, &queries), answers(&plain, &queries));
    check_index(a.path(), DirectoryKind::Mmap).unwrap();
}
