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

#[test]
/// Format v7: a mapped reader verifies the norms of the 64-document groups its scorers load,
/// not the field's whole run. A flipped norm of one document fails exactly the searches that
/// load its group, naming the `.norms` file and the group; searches elsewhere answer as on the
/// intact index; pread mode (norms read and verified whole) and `check` always fail.
fn a_flipped_norm_fails_the_searches_that_score_its_group() {
    let tmp = tempfile::tempdir().unwrap();
    // 6,000 documents: the norms file spans several 4 KiB chunks, so the flipped norm is not in a
    // chunk that holds group sums (whose chunks are verified when a scorer first reads them).
    let lines: Vec<String> = common::reuters_lines().into_iter().take(6000).collect();
    common::build_reuters(tmp.path(), &lines, 1, DirectoryKind::Mmap);
    let index = Index::open_with(tmp.path(), DirectoryKind::Mmap).unwrap();
    assert_eq!(index.segments().len(), 1);
    let body = index.schema().field_id("body").unwrap();
    let s = index.searcher();
    // A word of `doc` with at most 3 hits, and their docs.
    let rare_word = |doc: u32| -> Option<(String, Vec<u32>)> {
        let fields = s
            .stored_fields(quarry::DocAddress { segment: 0, doc })
            .unwrap();
        let text = fields["body"].as_str().unwrap_or("").to_lowercase();
        text.split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| w.len() > 3)
            .find_map(|w| {
                let q = s.parse_query(w, &["body"]).unwrap();
                let r = s.search(&q, 10, SearchMode::TopCount).unwrap();
                let docs: Vec<u32> = r.top.iter().map(|h| h.doc.doc).collect();
                (r.total_hits <= 3).then(|| (w.to_string(), docs))
            })
    };
    // A document of group 40 (2560..2624) with a rare word, and a rare word only in documents
    // below 2048.
    let (flip, (inside, docs)) = (2560..2624)
        .find_map(|d| rare_word(d).map(|w| (d, w)))
        .expect("a rare word in group 40");
    assert!(docs.contains(&flip));
    let (elsewhere, docs) = (100..700)
        .filter_map(rare_word)
        .find(|(_, d)| d.iter().all(|&d| d < 2048))
        .unwrap();
    assert!(!docs.is_empty());
    let answer = |kind: DirectoryKind, q: &str| {
        let index = Index::open_with(tmp.path(), kind)?;
        let s = index.searcher();
        let q = s.parse_query(q, &["body"])?;
        let r = s.search(&q, 10, SearchMode::Top)?;
        Ok::<_, quarry::Error>(
            r.top
                .iter()
                .map(|h| (h.doc.doc, h.score))
                .collect::<Vec<_>>(),
        )
    };
    let right = answer(DirectoryKind::Mmap, &elsewhere).unwrap();
    let off = index.segments()[0].meta().fields[body as usize]
        .norms_offset
        .unwrap() as usize;
    drop(s);
    drop(index);
    let norms = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "norms"))
        .unwrap();
    let name = norms.file_name().unwrap().to_str().unwrap().to_string();
    let mut bytes = std::fs::read(&norms).unwrap();
    bytes[off + flip as usize] ^= 0x01;
    std::fs::write(&norms, &bytes).unwrap();

    assert_eq!(answer(DirectoryKind::Mmap, &elsewhere).unwrap(), right);
    match answer(DirectoryKind::Mmap, &inside) {
        Err(quarry::Error::Corrupt { file, reason, .. }) => {
            assert_eq!(file, name);
            assert!(reason.contains("2560..2624"), "{reason}");
        }
        other => panic!("{inside}: {other:?}"),
    }
    assert!(matches!(
        answer(DirectoryKind::Pread, &elsewhere),
        Err(quarry::Error::Corrupt { .. })
    ));
    let e = check_index(tmp.path(), DirectoryKind::Mmap).unwrap_err();
    assert!(e.to_string().contains(&name), "{e}");
}
