//! Format compatibility: the saved format-v1 sample index (tests/fixtures/format-v1-sample, 60
//! Reuters documents) must keep opening, checking and answering the same way; a later format
//! version either reads it or refuses it cleanly with `TooOld`.
mod common;

use std::path::PathBuf;

use quarry::{check_index, DirectoryKind, Index, SearchMode};
use serde_json::Value;

fn sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v1-sample"
    ))
}

#[test]
fn v1_sample_opens_checks_and_answers() {
    for kind in [DirectoryKind::Mmap, DirectoryKind::Pread] {
        let report = check_index(&sample(), kind).expect("the v1 sample checks clean");
        assert_eq!(report.docs, 60);
        let index = Index::open_with(&sample(), kind).unwrap();
        let s = index.searcher();
        let q = s.parse_query("oil OR cocoa", &["body"]).unwrap();
        let r = s.search(&q, 3, SearchMode::TopCount).unwrap();
        assert_eq!(r.total_hits, 5);
        let ids: Vec<i64> = r
            .top
            .iter()
            .map(|h| s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![1, 2, 6]);
        assert!(
            (r.top[0].score - 2.358_482).abs() < 1e-5,
            "{}",
            r.top[0].score
        );
        let q = s
            .parse_query("\"oil prices\" title:cocoa topics:grain", &["body"])
            .unwrap();
        let r = s.search(&q, 3, SearchMode::Top).unwrap();
        let ids: Vec<i64> = r
            .top
            .iter()
            .map(|h| s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![1, 5, 6]);
    }
}

fn v2_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v2-sample"
    ))
}

/// The saved format-v2 sample (tests/fixtures/format-v2-sample): 60 Reuters documents in two
/// segments plus one upserted document, with ids 3 and 45 deleted and id 7 replaced (its title
/// now starts with "COCOA UPDATE"), written by `quarry index`, `quarry delete` and
/// `quarry index --append --key id`.
#[test]
fn v2_sample_with_deletions_opens_checks_and_answers() {
    for kind in [DirectoryKind::Mmap, DirectoryKind::Pread] {
        let report = check_index(&v2_sample(), kind).expect("the v2 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (61, 58));
        let deleted: Vec<u32> = report.segments.iter().map(|s| s.deleted).collect();
        assert_eq!(deleted, vec![2, 1, 0]);
        let index = Index::open_with(&v2_sample(), kind).unwrap();
        assert_eq!(index.commit().format_version, 2);
        let s = index.searcher();
        let ids = |q: &str, k: usize| -> (u64, Vec<(i64, f32)>) {
            let q = s.parse_query(q, &["title", "body"]).unwrap();
            let r = s.search(&q, k, SearchMode::TopCount).unwrap();
            let top = r
                .top
                .iter()
                .map(|h| {
                    let id = s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap();
                    (id, h.score)
                })
                .collect();
            (r.total_hits, top)
        };
        let (n, top) = ids("oil OR cocoa", 3);
        assert_eq!(n, 6);
        assert_eq!(top.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 6]);
        assert!((top[0].1 - 4.262_237_5).abs() < 1e-5, "{}", top[0].1);
        assert_eq!(ids("id:3 OR id:45 OR id:7", 10).1.len(), 1);
        let (n, top) = ids("title:cocoa", 10);
        assert_eq!((n, top[1].0), (2, 7), "the upserted version of id 7");
        assert_eq!(ids("*:*", 100).0, 58);
    }
}

/// A writer opening a v1 index keeps its segments and writes its next commit in the current
/// format version.
#[test]
fn a_v1_index_is_upgraded_by_its_next_commit() {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(sample()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let mut w = quarry::IndexWriter::open(tmp.path(), quarry::WriterOptions::default()).unwrap();
    w.delete_term("id", &quarry::FieldValue::Int(1)).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!(stats.live_docs, 59);
    drop(w);
    let index = Index::open(tmp.path()).unwrap();
    assert_eq!(
        index.commit().format_version,
        quarry::codec::format::VERSION
    );
    assert_eq!(index.live_doc_count(), 59);
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
}

fn v3_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v3-sample"
    ))
}

/// The saved format-v3 sample (tests/fixtures/format-v3-sample): Reuters documents 1–60 as 40 +
/// 20 in two segments, id 3 deleted, written by `quarry index`, `quarry index --append` and
/// `quarry delete`. Every data file carries a chunk table; a scrub verifies every chunk.
#[test]
fn v3_sample_opens_checks_answers_and_scrubs() {
    sample_opens_checks_answers_and_scrubs(&v3_sample(), 3);
}

fn v4_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v4-sample"
    ))
}

/// The saved format-v4 sample (tests/fixtures/format-v4-sample): the same documents, segments and
/// deletion as the v3 sample, written the same way by a v4 build: zstd stored blocks.
#[test]
fn v4_sample_opens_checks_answers_and_scrubs() {
    sample_opens_checks_answers_and_scrubs(&v4_sample(), 4);
    let store = std::fs::read(v4_sample().join("s000000.store")).unwrap();
    assert_eq!(u32::from_le_bytes(store[8..12].try_into().unwrap()), 4);
}

fn v5_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v5-sample"
    ))
}

/// The saved format-v5 sample (tests/fixtures/format-v5-sample): Reuters documents 1–300 as 200 +
/// 100 in two segments, id 3 deleted, written by `quarry index`, `quarry index --append` and
/// `quarry delete`. Full blocks of frequent words are stored as bitsets; every read path
/// (decoding, counting as they lie, pruning) must give the same answers.
#[test]
fn v5_sample_with_dense_blocks_opens_checks_answers_and_scrubs() {
    let dir = v5_sample();
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v5 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (300, 299));
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 5);
        let body = index.schema().field_id("body").unwrap();
        let mut dense = 0;
        for seg in index.segments() {
            for term in ["reuter", "the", "said", "of", "to", "and"] {
                let Some((info, bytes)) = seg.term_info(body, term.as_bytes()).unwrap() else {
                    continue;
                };
                // Full blocks: every block but a last one of fewer than 128 docs; the skip table
                // (48-byte entries, block offset at +4) precedes the blocks when there are two
                // or more.
                let n = info.doc_freq.div_ceil(128) as usize;
                let full = info.doc_freq as usize / 128;
                let skips = info.blocks_start() - if n > 1 { n * 48 } else { 0 };
                for b in 0..full {
                    let off = if n > 1 {
                        let at = skips + b * 48 + 4;
                        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
                    } else {
                        0
                    };
                    dense += usize::from(
                        bytes[info.blocks_start() + off] == quarry::codec::postings::DENSE,
                    );
                }
            }
        }
        assert!(dense > 0, "some full blocks of frequent words are bitsets");
        let s = index.searcher();
        let run = |q: &str, mode: SearchMode| {
            let q = s.parse_query(q, &["title", "body"]).unwrap();
            let r = s.search(&q, 3, mode).unwrap();
            let top: Vec<(i64, f32)> = r
                .top
                .iter()
                .map(|h| {
                    let id = s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap();
                    (id, h.score)
                })
                .collect();
            (r.total_hits, top)
        };
        for (q, hits, ids, score) in [
            ("oil OR cocoa", 30, [1, 275, 2], 5.924_070_4),
            ("reuter", 283, [139, 86, 143], 0.040_756_74),
            ("+the +said", 212, [230, 240, 193], 2.308_511),
        ] {
            let (n, top) = run(q, SearchMode::TopCount);
            assert_eq!(n, hits, "{q}");
            assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), ids, "{q}");
            assert!((top[0].1 - score).abs() < 1e-5, "{q}: {}", top[0].1);
            assert_eq!(run(q, SearchMode::Count).0, hits, "{q} counted");
            assert_eq!(run(q, SearchMode::Top).1, top, "{q} pruned");
        }
        assert_eq!(run("reuter OR the OR said", SearchMode::Count).0, 285);
        assert_eq!(run("id:3", SearchMode::Count).0, 0);
        index.scrub().unwrap();
    }
}

/// A v4 writer appending to the v3 sample: the old segments keep their LZ4 stored blocks, the new
/// one has zstd blocks, and every stored document of both reads back; a force-merge rewrites
/// everything as v4.
#[test]
fn a_v3_index_appended_by_v4_reads_both_stored_codecs() {
    let (tmp, w) = append_to_copy(
        &v3_sample(),
        r#"{"id": 1000, "title": "new cocoa", "body": "cocoa appended by a v4 writer"}"#,
    );
    let opts = || quarry::WriterOptions {
        threads: 1,
        ..Default::default()
    };
    drop(w);
    let versions = |dir: &std::path::Path| -> Vec<u32> {
        let index = Index::open(dir).unwrap();
        index
            .segments()
            .iter()
            .map(|s| {
                let f = std::fs::read(dir.join(format!("{}.store", s.name()))).unwrap();
                u32::from_le_bytes(f[8..12].try_into().unwrap())
            })
            .collect()
    };
    let v = quarry::codec::format::VERSION;
    assert_eq!(versions(tmp.path()), vec![3, 3, v]);
    let stored_ids = |dir: &std::path::Path| -> Vec<i64> {
        let index = Index::open(dir).unwrap();
        let s = index.searcher();
        let q = s.parse_query("cocoa", &["title", "body"]).unwrap();
        let r = s.search(&q, 10, SearchMode::TopCount).unwrap();
        let mut ids: Vec<i64> = r
            .top
            .iter()
            .map(|h| s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    };
    let before = stored_ids(tmp.path());
    assert!(before.contains(&1) && before.contains(&1000), "{before:?}");
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    let mut w = quarry::IndexWriter::open(tmp.path(), opts()).unwrap();
    w.force_merge(1).unwrap();
    drop(w);
    assert_eq!(versions(tmp.path()), vec![v]);
    assert_eq!(stored_ids(tmp.path()), before);
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
}

fn sample_opens_checks_answers_and_scrubs(dir: &std::path::Path, version: u32) {
    for kind in DirectoryKind::ALL {
        let report = check_index(dir, kind).expect("the sample checks clean");
        assert_eq!((report.docs, report.live_docs), (60, 59));
        let index = Index::open_with(dir, kind).unwrap();
        assert_eq!(index.commit().format_version, version);
        let s = index.searcher();
        let q = s.parse_query("oil OR cocoa", &["title", "body"]).unwrap();
        let r = s.search(&q, 3, SearchMode::TopCount).unwrap();
        assert_eq!(r.total_hits, 5);
        let ids: Vec<i64> = r
            .top
            .iter()
            .map(|h| s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![1, 2, 6]);
        assert!(
            (r.top[0].score - 4.54934).abs() < 1e-4,
            "{}",
            r.top[0].score
        );
        assert_eq!(
            s.search(
                &s.parse_query("id:3", &["body"]).unwrap(),
                3,
                SearchMode::Count
            )
            .unwrap()
            .total_hits,
            0
        );
        for seg in index.segments() {
            for (name, verified, chunks) in seg.verified_chunks() {
                assert!(chunks > 0 && verified <= chunks, "{name} has a chunk table");
            }
        }
        index.scrub().unwrap();
        for seg in index.segments() {
            for (name, verified, chunks) in seg.verified_chunks() {
                assert_eq!(verified, chunks, "{name} fully verified by the scrub");
            }
        }
    }
}

/// v1 and v2 segments have no chunk table: they read as before, and a scrub falls back to
/// whole-file checksums.
#[test]
fn v1_and_v2_samples_scrub_with_whole_file_checksums() {
    for dir in [sample(), v2_sample()] {
        let index = Index::open(&dir).unwrap();
        for seg in index.segments() {
            assert!(seg
                .verified_chunks()
                .iter()
                .all(|&(_, v, n)| (v, n) == (0, 0)));
        }
        index.scrub().unwrap();
    }
}

fn v6_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v6-sample"
    ))
}

/// Phrases of frequent words (read from pairs where a segment has them) and others.
const PAIR_PHRASES: [&str; 8] = [
    "\"of the\"",
    "\"in the\"",
    "\"it is a\"",
    "\"said it was\"",
    "\"the company said\"",
    "\"to be\"",
    "\"the u.s.\"",
    "\"one of the largest\"",
];

fn phrase_answers(dir: &std::path::Path, kind: DirectoryKind) -> Vec<(u64, Vec<(i64, f32)>)> {
    let index = Index::open_with(dir, kind).unwrap();
    let s = index.searcher();
    let mut out = Vec::new();
    for q in PAIR_PHRASES {
        let q = s.parse_query(q, &["title", "body"]).unwrap();
        for mode in [SearchMode::TopCount, SearchMode::Count, SearchMode::Top] {
            let r = s.search(&q, 5, mode).unwrap();
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

/// The saved format-v6 sample (tests/fixtures/format-v6-sample): the documents, segments and
/// deletion of the v5 sample, written by a v6 build: both segments index pairs of frequent
/// words, which hold exactly the words' adjacent positions, and phrases answer as on the v5
/// sample, which has no pairs.
#[test]
fn v6_sample_with_pairs_opens_checks_and_answers_as_v5() {
    let dir = v6_sample();
    let want = phrase_answers(&v5_sample(), DirectoryKind::Mmap);
    assert!(want.iter().filter(|a| a.0 > 0).count() > 10, "{want:?}");
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v6 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (300, 299));
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 6);
        let body = index.schema().field_id("body").unwrap();
        for seg in index.segments() {
            assert!(seg.has_pairs(body));
            let pairs = common::stored_pairs(seg, body);
            assert!(pairs.contains_key("of the"));
            assert!(pairs == common::expected_pairs(seg, body));
        }
        assert_eq!(phrase_answers(&dir, kind), want);
        index.scrub().unwrap();
    }
}

fn v7_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v7-sample"
    ))
}

/// The saved format-v7 sample (tests/fixtures/format-v7-sample): the documents, segments and
/// deletion of the v6 sample, written by a v7 build, whose norms carry group sums: it checks
/// clean (every group sum recomputed), answers the phrases exactly as the v6 sample in every
/// directory mode (mapped norms verified by the group, read modes by the chunk) and scrubs.
#[test]
fn v7_sample_with_norm_groups_opens_checks_and_answers_as_v6() {
    let dir = v7_sample();
    let want = phrase_answers(&v6_sample(), DirectoryKind::Mmap);
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v7 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (300, 299));
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 7);
        assert_eq!(phrase_answers(&dir, kind), want);
        index.scrub().unwrap();
    }
}

/// A v6 writer appending to the v5 sample: the old segments have no pairs and answer phrases
/// from their words; a force-merge derives their pairs from the words' positions.
#[test]
fn a_v5_index_appended_and_merged_by_v6_gains_pairs() {
    let (tmp, mut w) = append_to_copy(
        &v5_sample(),
        r#"{"id": 1000, "title": "zzz", "body": "zzz"}"#,
    );
    let index = Index::open(tmp.path()).unwrap();
    let body = index.schema().field_id("body").unwrap();
    let has: Vec<bool> = index.segments().iter().map(|s| s.has_pairs(body)).collect();
    assert_eq!(has, vec![false, false, true]);
    let want = phrase_answers(tmp.path(), DirectoryKind::Pread);
    w.force_merge(1).unwrap();
    drop(w);
    let index = Index::open(tmp.path()).unwrap();
    let seg = &index.segments()[0];
    assert!(seg.has_pairs(body));
    let pairs = common::stored_pairs(seg, body);
    assert!(pairs.len() > 50, "{} pair terms", pairs.len());
    assert!(pairs == common::expected_pairs(seg, body));
    // The merge dropped the deleted document, which moves the statistics (and scores): the
    // phrases' counts stay.
    let counts = |a: &[(u64, Vec<(i64, f32)>)]| a.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(
        counts(&phrase_answers(tmp.path(), DirectoryKind::Mmap)),
        counts(&want)
    );
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
}

/// A copy of the sample index `dir` with one document (`json`) appended and committed by this
/// build's writer (one thread), and that writer.
fn append_to_copy(dir: &std::path::Path, json: &str) -> (tempfile::TempDir, quarry::IndexWriter) {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let opts = quarry::WriterOptions {
        threads: 1,
        ..Default::default()
    };
    let mut w = quarry::IndexWriter::open(tmp.path(), opts).unwrap();
    let doc = quarry::Document::from_json(w.schema(), json).unwrap();
    w.add_document(doc).unwrap();
    w.commit().unwrap();
    (tmp, w)
}

fn v8_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v8-sample"
    ))
}

/// The ids of every live document sorted by `sort`, and their stored values of `field`.
fn sorted_ids(dir: &std::path::Path, sort: &[quarry::SortField], field: &str) -> Vec<(i64, Value)> {
    let index = Index::open(dir).unwrap();
    let s = index.searcher();
    let all = s.parse_query("*:*", &["body"]).unwrap();
    let r = s.search_sorted(&all, sort, 1000, None, false).unwrap();
    assert_eq!(r.total_hits, index.live_doc_count());
    r.hits
        .iter()
        .map(|h| {
            let doc = s.stored_fields(h.hit.doc).unwrap();
            (
                doc["id"].as_i64().unwrap(),
                doc.get(field).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// The saved format-v8 sample (tests/fixtures/format-v8-sample): the v7 sample's documents,
/// segments and deletion written by a v8 build, with columns for `id` and the keyword fields
/// `date` and `topics`: it checks clean in every mode (columns rebuilt from the stored values),
/// answers the phrases as the v7 sample, and sorts by its columns.
#[test]
fn v8_sample_with_columns_opens_checks_answers_and_sorts() {
    let dir = v8_sample();
    let want = phrase_answers(&v7_sample(), DirectoryKind::Mmap);
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v8 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (300, 299));
        assert!(
            report.segments.iter().all(|s| s.columns.len() == 3),
            "{report:?}"
        );
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 8);
        assert!(index.segments().iter().all(|s| s.has_columns()));
        assert_eq!(phrase_answers(&dir, kind), want);
        index.scrub().unwrap();
    }
    let by_id = sorted_ids(&dir, &[quarry::SortField::desc("id")], "id");
    let ids: Vec<i64> = by_id.iter().map(|x| x.0).collect();
    let want_ids: Vec<i64> = (1..=300).rev().filter(|&i| i != 3).collect();
    assert_eq!(ids, want_ids);
    // Keywords sort by their bytes; documents without topics last.
    let by_topic = sorted_ids(&dir, &[quarry::SortField::asc("topics")], "topics");
    let firsts: Vec<Option<String>> = by_topic
        .iter()
        .map(|(_, v)| {
            v.as_array().and_then(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .min()
            })
        })
        .collect();
    let mut sorted = firsts.clone();
    sorted.sort_by(|a, b| match (a, b) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    });
    assert_eq!(firsts, sorted);
    assert!(firsts.first().unwrap().is_some() && firsts.last().unwrap().is_none());
}

/// A v8 writer appending to the v7 sample: sorting by a field is refused while old segments
/// have no columns (naming the remedy); a force-merge rebuilds them from the stored values.
#[test]
fn a_v7_index_appended_and_merged_by_v8_gains_columns() {
    let (tmp, mut w) = append_to_copy(
        &v7_sample(),
        r#"{"id": 1000, "title": "zzz", "body": "zzz", "date": "01-JAN-1990 00:00:00.00", "topics": ["zzz"]}"#,
    );
    let index = Index::open(tmp.path()).unwrap();
    let has: Vec<bool> = index.segments().iter().map(|s| s.has_columns()).collect();
    assert_eq!(has, vec![false, false, true]);
    let s = index.searcher();
    let all = s.parse_query("*:*", &["body"]).unwrap();
    let e = s
        .search_sorted(&all, &[quarry::SortField::asc("id")], 10, None, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("force-merge") && e.contains("s000000"), "{e}");
    w.force_merge(1).unwrap();
    drop(w);
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    let by_id = sorted_ids(tmp.path(), &[quarry::SortField::asc("id")], "id");
    let ids: Vec<i64> = by_id.iter().map(|x| x.0).collect();
    let mut want: Vec<i64> = (1..=300).filter(|&i| i != 3).collect();
    want.push(1000);
    assert_eq!(ids, want);
    let by_date = sorted_ids(tmp.path(), &[quarry::SortField::desc("date")], "date");
    let dates: Vec<String> = by_date
        .iter()
        .map(|(_, v)| v.as_str().unwrap().to_string())
        .collect();
    let mut sorted = dates.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(dates, sorted);
}

fn v9_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v9-sample"
    ))
}

/// The 8-dimension `embedding` the v9 sample's documents carry: a function of the id (none
/// when the id is a multiple of 10), as `docs/format/CHANGES.md` (v9) says.
fn sample_embedding(id: i64) -> Option<Vec<f32>> {
    (id % 10 != 0).then(|| {
        let mut v: Vec<f32> = (0..8)
            .map(|j| ((id * (j + 3) * 37) % 17 - 8) as f32 / 8.0)
            .collect();
        if v.iter().all(|&x| x == 0.0) {
            v[0] = 1.0;
        }
        v
    })
}

/// The saved format-v9 sample (tests/fixtures/format-v9-sample): the v8 sample's documents,
/// segments and deletion with an `embedding` vector field (cosine, int8, hnsw m 8) written by a
/// v9 build: it checks clean in every mode (vectors against their stored values), answers the
/// phrases as the v7 sample, returns its stored vectors, and its exact kNN answers are the
/// plain cosine ranking of the live documents with vectors.
#[test]
fn v9_sample_with_vectors_opens_checks_and_answers() {
    use quarry::search::knn::KnnQuery;
    let dir = v9_sample();
    let want = phrase_answers(&v7_sample(), DirectoryKind::Mmap);
    let query = vec![0.5, -0.25, 1.0, 0.0, 0.75, -1.0, 0.125, 0.5];
    let cos = |v: &[f32]| {
        let dot: f32 = v.iter().zip(&query).map(|(a, b)| a * b).sum();
        let n = |x: &[f32]| x.iter().map(|a| a * a).sum::<f32>().sqrt();
        dot / (n(v) * n(&query))
    };
    let mut reference: Vec<(i64, f32)> = (1..=300)
        .filter(|&i| i != 3)
        .filter_map(|i| sample_embedding(i).map(|v| (i, cos(&v))))
        .collect();
    reference.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v9 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (300, 299));
        assert!(
            report.segments.iter().all(|s| s.vectors.len() == 1),
            "{report:?}"
        );
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 9);
        assert_eq!(phrase_answers(&dir, kind), want);
        let s = index.searcher();
        for exact in [true, false] {
            let mut q = KnnQuery::new("embedding", query.clone(), 10).num_candidates(100);
            q.exact = exact;
            let hits = s.knn(&q).unwrap();
            let got: Vec<(i64, f32)> = hits
                .iter()
                .map(|h| {
                    let doc = s.stored_fields(h.doc).unwrap();
                    let id = doc["id"].as_i64().unwrap();
                    let stored: Vec<f32> = doc["embedding"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() as f32)
                        .collect();
                    assert_eq!(Some(stored), sample_embedding(id));
                    (id, h.score)
                })
                .collect();
            for ((gi, gs), (wi, wc)) in got.iter().zip(&reference) {
                // Scores within rounding; equal cosines may swap only with an equal score.
                assert!(
                    (gs - (1.0 + wc) / 2.0).abs() < 1e-5,
                    "{gi} {gs} vs {wi} {wc}"
                );
            }
            // The vectors are a function of id mod 17: identical vectors tie exactly, and ties
            // rank in index order (here: by id).
            let ids: Vec<i64> = got.iter().map(|g| g.0).collect();
            let want_ids: Vec<i64> = reference[..10].iter().map(|g| g.0).collect();
            assert_eq!(ids, want_ids, "exact {exact}");
        }
        index.scrub().unwrap();
    }
}

fn v10_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v10-sample"
    ))
}

/// The v10 sample's schema: `data/reuters-schema.json` and an `embedding` field embedded from
/// `body` in passages (the model is not registered: the sample's passages are given).
const V10_EMBEDDING: &str = r#"{"name": "embedding", "type": "vector", "dims": 8, "similarity": "cosine", "index": {"type": "hnsw", "m": 8, "ef_construction": 50}, "embed": {"from": "body", "model": "sample", "passages": {"window": 32, "overlap": 8}}}"#;

/// The passages of the v10 sample's document `id` with body `body`, as `docs/format/CHANGES.md`
/// (v10) says: runs of 24 words, consecutive runs sharing 6, each spanning from its first
/// word's start (0 for the first) to its last word's end (the body's end for the last); the
/// vector of passage `j` has `x[t] = (h mod 2001 − 1000) / 1000`,
/// `h = ((id·1000003 + j·7919 + t·104729) · 2654435761) mod 2³²`.
fn v10_passages(id: i64, body: &str) -> Vec<(quarry::vector::Passage, Vec<f32>)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in body.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, body.len()));
    }
    let (w, step) = (24usize, 18usize);
    let mut out = Vec::new();
    let mut first = 0;
    loop {
        let end = (first + w).min(words.len());
        let last = end == words.len();
        let j = out.len() as u32;
        let span_start = if first == 0 { 0 } else { words[first].0 };
        let span_end = if last { body.len() } else { words[end - 1].1 };
        let v: Vec<f32> = (0..8u64)
            .map(|t| {
                let h = ((id as u64 * 1_000_003 + u64::from(j) * 7919 + t * 104_729)
                    .wrapping_mul(2_654_435_761))
                    % (1 << 32);
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        out.push((
            quarry::vector::Passage {
                index: j,
                start: span_start as u32,
                end: span_end as u32,
            },
            v,
        ));
        if last {
            return out;
        }
        first += step;
    }
}

/// Writes the v10 sample into `$QUARRY_WRITE_V10_SAMPLE` (see `docs/format/CHANGES.md`, v10):
/// Reuters documents 1–100 as 70 + 30 in two segments, id 3 deleted.
#[test]
#[ignore = "writes the saved sample: QUARRY_WRITE_V10_SAMPLE=DIR cargo test --test format_compat write_v10_sample -- --ignored"]
fn write_v10_sample() {
    use quarry::{Document, IndexWriter, MergePolicy, Schema, WriterOptions};
    let dir = PathBuf::from(std::env::var("QUARRY_WRITE_V10_SAMPLE").expect("a directory"));
    let text = std::fs::read_to_string(common::root().join("data/reuters-schema.json")).unwrap();
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    let embedding: Value = serde_json::from_str(V10_EMBEDDING).unwrap();
    schema["fields"].as_array_mut().unwrap().push(embedding);
    let schema = Schema::from_json(&schema.to_string()).unwrap();
    let opts = WriterOptions {
        threads: 1,
        merge_policy: MergePolicy::None,
        ..WriterOptions::default()
    };
    let mut w = IndexWriter::create(&dir, schema.clone(), opts).unwrap();
    for (i, line) in common::reuters_lines().iter().take(100).enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let mut doc = Document::from_json(&schema, line).unwrap();
        if let Some(body) = v["body"].as_str() {
            let id = v["id"].as_i64().unwrap();
            doc.add_passages(&schema, "embedding", v10_passages(id, body))
                .unwrap();
        }
        w.add_document(doc).unwrap();
        if i + 1 == 70 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    w.delete_term("id", &quarry::FieldValue::Int(3)).unwrap();
    w.commit().unwrap();
}

/// The saved format-v10 sample (tests/fixtures/format-v10-sample): 100 Reuters documents whose
/// `embedding` field holds several passages per document. It checks clean in every mode
/// (passages against the stored bodies); its exact kNN answers are the plain ranking of the
/// live documents by their best passage, naming that passage and its span; a graph search
/// returns 10 distinct documents each scored by the passage it names; and the earlier samples
/// still open (their own tests).
#[test]
fn v10_sample_with_passages_opens_checks_and_answers() {
    use quarry::search::knn::KnnQuery;
    let dir = v10_sample();
    let query = vec![0.5, -0.25, 1.0, 0.0, 0.75, -1.0, 0.125, 0.5];
    let cos = |v: &[f32]| {
        let dot: f32 = v.iter().zip(&query).map(|(a, b)| a * b).sum();
        let n = |x: &[f32]| x.iter().map(|a| a * a).sum::<f32>().sqrt();
        dot / (n(v) * n(&query))
    };
    let mut passages = std::collections::HashMap::new();
    let mut reference: Vec<(i64, f32, u32)> = Vec::new();
    for line in common::reuters_lines().iter().take(100) {
        let v: Value = serde_json::from_str(line).unwrap();
        let (id, Some(body)) = (v["id"].as_i64().unwrap(), v["body"].as_str()) else {
            continue;
        };
        let ps = v10_passages(id, body);
        assert!(ps.len() > 1 || body.split_whitespace().count() <= 24);
        if id != 3 {
            let (j, best) = ps
                .iter()
                .map(|(_, v)| cos(v))
                .enumerate()
                .fold((0, f32::MIN), |b, (j, x)| if x > b.1 { (j, x) } else { b });
            reference.push((id, best, j as u32));
        }
        passages.insert(id, ps);
    }
    reference.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for kind in DirectoryKind::ALL {
        let report = check_index(&dir, kind).expect("the v10 sample checks clean");
        assert_eq!((report.docs, report.live_docs), (100, 99));
        let index = Index::open_with(&dir, kind).unwrap();
        assert_eq!(index.commit().format_version, 10);
        let e = index.schema().field_by_name("embedding").unwrap();
        assert!(e.embed.as_ref().unwrap().passages.is_some());
        let s = index.searcher();
        for (exact, candidates) in [(true, 100), (false, 10)] {
            let mut q = KnnQuery::new("embedding", query.clone(), 10).num_candidates(candidates);
            q.exact = exact;
            let hits = s.knn_hits(&q).unwrap();
            assert_eq!(hits.len(), 10);
            let mut got = Vec::new();
            for h in &hits {
                let doc = s.stored_fields(h.hit.doc).unwrap();
                let id = doc["id"].as_i64().unwrap();
                let p = h.passage.expect("every vector here is a passage");
                let (want_p, v) = &passages[&id][p.index as usize];
                assert_eq!(p, *want_p, "passage {} of {id}", p.index);
                assert!((h.hit.score - (1.0 + cos(v)) / 2.0).abs() < 1e-5);
                let text = s.passage_text(h.hit.doc, "embedding", &p).unwrap().unwrap();
                let body = doc["body"].as_str().unwrap();
                assert_eq!(text, body[p.start as usize..p.end as usize]);
                got.push((id, p.index));
            }
            let mut ids: Vec<i64> = got.iter().map(|g| g.0).collect();
            if exact {
                let want: Vec<(i64, u32)> = reference[..10].iter().map(|r| (r.0, r.2)).collect();
                assert_eq!(got, want);
            }
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), 10, "distinct documents");
        }
        index.scrub().unwrap();
    }
}
