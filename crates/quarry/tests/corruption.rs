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
    let newer = quarry::codec::format::VERSION + 1;
    for (version, word) in [(newer, "newer"), (0u32, "older")] {
        let mut bad = original.clone();
        bad[8..12].copy_from_slice(&version.to_le_bytes());
        std::fs::write(&post, &bad).unwrap();
        let e = Index::open(tmp.path()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(word) && msg.contains(post.file_name().unwrap().to_str().unwrap()),
            "{msg}"
        );
        if version == newer {
            assert!(matches!(e, quarry::Error::TooNew { .. }));
        } else {
            assert!(matches!(e, quarry::Error::TooOld { .. }));
        }
    }
}

/// What a set of queries answers: per query its hit count and top 10 (score bits, doc address,
/// stored fields). Two equal answers are the same answer to the byte.
type Answers = Vec<(u64, Vec<(u32, u32, u32, String)>)>;

/// The query strings of the Lucene oracle files (a sample, to keep the test fast).
fn oracle_queries() -> Vec<String> {
    let (_, public) = common::oracle();
    let (_, extra) = common::oracle_file("lucene-reuters-extra-oracle.jsonl");
    let mut q: Vec<String> = public
        .iter()
        .step_by(4)
        .chain(extra.iter().step_by(3))
        .map(|v| v["query"].as_str().unwrap().to_string())
        .collect();
    q.extend(["the", "pri*", "\"oil prices\""].map(String::from));
    q
}

fn answers(dir: &Path, kind: DirectoryKind, queries: &[String]) -> quarry::Result<Answers> {
    let index = Index::open_with(dir, kind)?;
    let s = index.searcher();
    let mut out = Vec::new();
    for q in queries {
        let query = s.parse_query(q, &["body"])?;
        let r = s.search(&query, 10, SearchMode::TopCount)?;
        let mut top = Vec::new();
        for h in r.top {
            let stored = serde_json::to_string(&s.stored_fields(h.doc)?).unwrap();
            top.push((h.score.to_bits(), h.doc.segment, h.doc.doc, stored));
        }
        out.push((r.total_hits, top));
    }
    Ok(out)
}

/// A small seeded generator (xorshift64*), so failures reproduce.
fn positions(seed: u64, len: usize, n: usize) -> Vec<usize> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % len as u64) as usize
        })
        .collect()
}

#[test]
/// Format v3: a flipped byte anywhere in any file kind (.post, .pos, .norms, .store, .terms,
/// .meta, deletions, commit) never changes an answer: the oracle queries and their stored
/// fields come back exactly as from the intact index, or the read fails with a typed error
/// (`Corrupt`, or `TooOld`/`TooNew` for the version field) naming the file — in every directory
/// mode. A scrub finds every flip in a data file.
fn byte_flips_give_corrupt_or_the_right_answer_in_every_mode() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let mut w = quarry::IndexWriter::open(tmp.path(), quarry::WriterOptions::default()).unwrap();
    for id in [5, 17, 101] {
        w.delete_term("id", &quarry::FieldValue::Int(id)).unwrap();
    }
    w.commit().unwrap();
    drop(w);
    let queries = oracle_queries();
    let right = answers(tmp.path(), DirectoryKind::Mmap, &queries).unwrap();
    let files: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut detected = 0;
    let mut trials = 0;
    for kind in [
        ".post", ".pos", ".norms", ".store", ".terms", ".meta", ".del", "commit_",
    ] {
        let name = files
            .iter()
            .find(|f| f.contains(kind))
            .unwrap_or_else(|| panic!("no {kind} file in {files:?}"));
        let path = tmp.path().join(name);
        let original = std::fs::read(&path).unwrap();
        let len = original.len();
        let data_file = [".post", ".pos", ".norms", ".store", ".terms"].contains(&kind);
        // Header, the chunk-table trailer and footer, and seeded body positions.
        let mut at = vec![2, 10, len - 20, len - 10, len - 3];
        at.extend(positions(len as u64 * 31 + kind.len() as u64, len, 14));
        for pos in at {
            let mut bad = original.clone();
            bad[pos] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            for dkind in DirectoryKind::ALL {
                trials += 1;
                match answers(tmp.path(), dkind, &queries) {
                    Ok(a) => assert!(
                        a == right,
                        "flip at byte {pos} of {name} ({dkind}): a wrong answer"
                    ),
                    Err(
                        e @ (quarry::Error::Corrupt { .. }
                        | quarry::Error::TooOld { .. }
                        | quarry::Error::TooNew { .. }),
                    ) => {
                        detected += 1;
                        assert!(
                            e.to_string().contains(name.as_str()),
                            "flip at byte {pos} of {name} ({dkind}): {e}"
                        );
                    }
                    Err(e) => panic!("flip at byte {pos} of {name} ({dkind}): untyped {e:?}"),
                }
            }
            if data_file {
                // The scrub reads every byte: it must find the flip (unless open already did).
                if let Ok(index) = Index::open_with(tmp.path(), DirectoryKind::Pread) {
                    let e = index.scrub_in_background().join().unwrap().unwrap_err();
                    assert!(e.to_string().contains(name.as_str()), "{e}");
                }
            }
        }
        std::fs::write(&path, &original).unwrap();
    }
    eprintln!("{detected} of {trials} trials detected");
    assert!(detected > trials / 4, "{detected} of {trials} detected");
    let index = Index::open(tmp.path()).unwrap();
    index.scrub().expect("the restored index scrubs clean");
    assert_eq!(
        answers(tmp.path(), DirectoryKind::Direct, &queries).unwrap(),
        right
    );
}

#[test]
/// A chunk error names the file and the byte offset of the damaged chunk; merges refuse a
/// damaged source instead of sealing the damage into a new segment.
fn chunk_errors_name_the_offset_and_merges_verify_their_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: Vec<String> = common::reuters_lines().into_iter().take(200).collect();
    common::build_reuters(tmp.path(), &lines[..100], 1, DirectoryKind::Mmap);
    let mut w = quarry::IndexWriter::open(tmp.path(), quarry::WriterOptions::default()).unwrap();
    for l in &lines[100..] {
        let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(l).unwrap();
        let mut m = serde_json::Map::new();
        for k in ["id", "title", "body"] {
            if let Some(x) = v.get(k) {
                m.insert(k.to_string(), x.clone());
            }
        }
        w.add_document(quarry::Document::from_map(&common::reuters_schema(), &m).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
    drop(w);
    let store = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "store"))
        .unwrap();
    let mut bytes = std::fs::read(&store).unwrap();
    bytes[5000] ^= 0x01;
    std::fs::write(&store, &bytes).unwrap();
    let index = Index::open(tmp.path()).unwrap();
    match index.scrub() {
        Err(quarry::Error::Corrupt {
            file,
            offset: Some(4096),
            ..
        }) => assert_eq!(file, store.file_name().unwrap().to_str().unwrap()),
        other => panic!("{other:?}"),
    }
    let mut w = quarry::IndexWriter::open(tmp.path(), quarry::WriterOptions::default()).unwrap();
    let e = w.force_merge(1).unwrap_err().to_string();
    assert!(e.contains("at byte 4096"), "{e}");
}
