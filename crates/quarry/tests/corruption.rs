//! Bytes from disk are untrusted: flipping a byte of any kind of index file (about 50 sampled
//! positions per file) makes opening or checking fail with an error that names the file — never
//! a panic.
mod common;

use std::path::Path;

use quarry::{check_index, DirectoryKind, Index, SearchMode};

fn build(dir: &Path) {
    let lines: Vec<String> = common::reuters_lines().into_iter().take(400).collect();
    common::build_reuters(dir, &lines, 1, DirectoryKind::Mmap);
}

/// Opens, searches a few queries and fetches stored fields; returns the first error.
fn exercise(dir: &Path, kind: DirectoryKind) -> quarry::Result<()> {
    let index = Index::open_with(dir, kind)?;
    let s = index.searcher();
    for q in [
        "oil",
        "the",
        "\"oil prices\"",
        "trade OR export",
        "+said -oil",
        "pri*",
    ] {
        let query = s.parse_query(q, &["body", "title"])?;
        let r = s.search(&query, 10, SearchMode::TopCount)?;
        for h in r.top {
            s.stored_fields(h.doc)?;
        }
    }
    Ok(())
}

#[test]
/// About 50 positions per file kind (header, footer, and every `len / 40`-th byte of the body):
/// each flip must be caught by `check` or by opening and searching, with the file named.
fn sampled_byte_flips_are_detected_and_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    check_index(tmp.path(), DirectoryKind::Mmap).expect("a fresh index checks clean");
    let files: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let kinds = [
        "commit_", ".meta", ".terms", ".post", ".pos", ".norms", ".store",
    ];
    for kind in kinds {
        let name = files
            .iter()
            .find(|f| f.contains(kind))
            .unwrap_or_else(|| panic!("no {kind} file in {files:?}"));
        let path = tmp.path().join(name);
        let original = std::fs::read(&path).unwrap();
        let len = original.len();
        // Header, footer, and a spread of body positions.
        let mut positions: Vec<usize> =
            vec![0, 5, 9, 13, len / 3, len / 2, len - 9, len - 6, len - 1];
        positions.extend((0..len).step_by((len / 40).max(1)));
        for pos in positions {
            let mut bad = original.clone();
            bad[pos] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            for dkind in [DirectoryKind::Mmap, DirectoryKind::Pread] {
                let opened = exercise(tmp.path(), dkind);
                let checked = check_index(tmp.path(), dkind);
                let err = match (&opened, &checked) {
                    (_, Err(e)) => e.to_string(),
                    (Err(e), Ok(_)) => e.to_string(),
                    (Ok(()), Ok(_)) => panic!(
                        "flip at byte {pos} of {name} went unnoticed by open, search and check"
                    ),
                };
                assert!(
                    err.contains(name.as_str()),
                    "error for byte {pos} of {name} does not name the file: {err}"
                );
                if let Err(e) = &opened {
                    assert!(
                        e.to_string().contains(name.as_str()),
                        "open/search error does not name {name}: {e}"
                    );
                }
            }
        }
        // Truncation too.
        std::fs::write(&path, &original[..len / 2]).unwrap();
        let e = check_index(tmp.path(), DirectoryKind::Mmap)
            .unwrap_err()
            .to_string();
        assert!(e.contains(name.as_str()), "truncated {name}: {e}");
        std::fs::write(&path, &original).unwrap();
    }
    check_index(tmp.path(), DirectoryKind::Pread).expect("restored index checks clean");
}

#[test]
fn newer_and_older_versions_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let post = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "post"))
        .unwrap();
    let original = std::fs::read(&post).unwrap();
    for (version, word) in [(2u32, "newer"), (0u32, "older")] {
        let mut bad = original.clone();
        bad[8..12].copy_from_slice(&version.to_le_bytes());
        std::fs::write(&post, &bad).unwrap();
        let e = Index::open(tmp.path()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(word) && msg.contains(post.file_name().unwrap().to_str().unwrap()),
            "{msg}"
        );
        match version {
            2 => assert!(matches!(e, quarry::Error::TooNew { .. })),
            _ => assert!(matches!(e, quarry::Error::TooOld { .. })),
        }
    }
}
