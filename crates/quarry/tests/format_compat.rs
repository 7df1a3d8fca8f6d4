//! Format compatibility: the saved format-v1 sample index (tests/fixtures/format-v1-sample, 60
//! Reuters documents) must keep opening, checking and answering the same way; a later format
//! version either reads it or refuses it cleanly with `TooOld`.
use std::path::PathBuf;

use quarry::{check_index, DirectoryKind, Index, SearchMode};

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
