//! Crash safety: a fault at every write operation of a commit, a full disk, a model-based
//! property test of random add/update/delete/refresh/commit/merge/reopen sequences, and a writer
//! killed with SIGKILL in a child process. After each, the index holds exactly the last
//! completed commit and checks clean. Most documents carry a vector (an HNSW field), so vector
//! segments are flushed, merged, faulted and killed too, and every check also enumerates the
//! vectors by an exact kNN scan and asks the graph.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use quarry::schema::Similarity;
use quarry::search::knn::KnnQuery;
use quarry::{
    check_index, DirectoryKind, Document, FieldValue, Index, IndexWriter, MergePolicy, Schema,
    SearchMode, Searcher, WriterOptions,
};
use quarry_store::{open_directory, FaultyDirectory};

fn schema() -> Schema {
    Schema::builder()
        .integer("id")
        .text("body", true)
        .vector("emb", 4, Similarity::L2Norm)
        .build()
}

/// Whether document `(id, version)` has a vector: three in four do, so segments hold sparse
/// vector maps.
fn has_vector(id: u64, version: u32) -> bool {
    !(id + u64::from(version)).is_multiple_of(4)
}

/// The vector of `(id, version)`: its l2_norm score against the origin,
/// `1 / (1 + id² + version² + 2)`, names the document it belongs to.
fn vector_of(id: u64, version: u32) -> [f32; 4] {
    [id as f32, version as f32, 1.0, -1.0]
}

fn opts(policy: MergePolicy) -> WriterOptions {
    WriterOptions {
        threads: 1,
        ram_budget_bytes: 1 << 20,
        merge_policy: policy,
        directory: DirectoryKind::Mmap,
        index_sort: None,
    }
}

fn doc(id: u64, version: u32) -> Document {
    let body = format!("word{} common v{version}", id % 7);
    let mut obj = serde_json::json!({"id": id, "body": body});
    if has_vector(id, version) {
        obj["emb"] = serde_json::json!(vector_of(id, version));
    }
    Document::from_json(&schema(), &obj.to_string()).unwrap()
}

/// `(id, version)` of a hit's stored fields.
fn id_version(s: &Searcher, doc: quarry::DocAddress) -> (u64, u32) {
    let f = s.stored_fields(doc).unwrap();
    let id = f["id"].as_u64().unwrap();
    let v = f["body"]
        .as_str()
        .unwrap()
        .rsplit('v')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (id, v)
}

/// Every live document with a vector, found by an exact kNN scan from the origin, each hit's
/// score checked against the vector its stored fields say it has; then the graph's top 5 must
/// be the scan's top 5 (a small graph searched with 100 candidates is exact).
fn vectors(s: &Searcher) -> BTreeMap<(u64, u32), usize> {
    let all = (s.live_doc_count() as usize).max(1);
    let exact = s
        .knn(&KnnQuery::new("emb", vec![0.0; 4], all).exact())
        .unwrap();
    let mut out = BTreeMap::new();
    for h in &exact {
        let (id, v) = id_version(s, h.doc);
        let d2: f32 = vector_of(id, v).iter().map(|x| x * x).sum();
        let want = 1.0 / (1.0 + d2);
        assert!(
            (h.score - want).abs() <= want * 1e-5,
            "doc ({id}, v{v}): score {} but its vector gives {want}",
            h.score
        );
        *out.entry((id, v)).or_insert(0) += 1;
    }
    let graph = s
        .knn(&KnnQuery::new("emb", vec![0.0; 4], 5).num_candidates(100))
        .unwrap();
    let top = |hits: &[quarry::Hit]| -> Vec<u32> {
        hits.iter().take(5).map(|h| h.score.to_bits()).collect()
    };
    assert_eq!(top(&graph), top(&exact), "the graph's top 5 scores");
    out
}

/// The documents of `m` that have a vector.
fn with_vectors<K: Clone + Ord>(
    m: &BTreeMap<K, usize>,
    key: impl Fn(&K) -> (u64, u32),
) -> BTreeMap<(u64, u32), usize> {
    m.iter()
        .filter(|(k, _)| {
            let (id, v) = key(k);
            has_vector(id, v)
        })
        .map(|(k, &n)| (key(k), n))
        .collect()
}

/// `id -> version` of every live document, read through a searcher.
fn contents(s: &Searcher) -> BTreeMap<u64, u32> {
    let q = s.parse_query("*:*", &["body"]).unwrap();
    // Every live document (long kill runs grow past any fixed cap).
    let all = (s.live_doc_count() as usize).max(1);
    let r = s.search(&q, all, SearchMode::TopCount).unwrap();
    assert_eq!(r.total_hits as usize, r.top.len());
    let out: BTreeMap<u64, u32> = r.top.iter().map(|h| id_version(s, h.doc)).collect();
    let counted: BTreeMap<(u64, u32), usize> = out.iter().map(|(&id, &v)| ((id, v), 1)).collect();
    assert_eq!(vectors(s), with_vectors(&counted, |&k| k), "the vectors");
    out
}

fn committed(path: &Path) -> BTreeMap<u64, u32> {
    contents(&Index::open(path).unwrap().searcher())
}

fn base_index(path: &Path) -> BTreeMap<u64, u32> {
    let mut w = IndexWriter::create(path, schema(), opts(MergePolicy::None)).unwrap();
    for id in 0..30 {
        w.add_document(doc(id, 0)).unwrap();
    }
    w.commit().unwrap();
    committed(path)
}

/// A failure injected at every write operation of a commit (with deletions, updates and a
/// merge) leaves either the old or the new commit, never a mix, and the index checks clean.
#[test]
fn a_fault_at_any_operation_leaves_the_old_or_the_new_commit() {
    fault_at_every_operation(false);
}

/// The same with the merge on the background thread: the commit returns before the merge, a
/// fault in the merge or in committing its result (by [`IndexWriter::commit_running_merge`])
/// is `MergeFailed` and leaves the commit with every document.
#[test]
fn a_fault_during_a_background_merge_keeps_the_commit() {
    fault_at_every_operation(true);
}

fn fault_at_every_operation(background: bool) {
    let mut n = 1;
    let mut merge_faults = 0;
    loop {
        let tmp = tempfile::tempdir().unwrap();
        let old = base_index(tmp.path());
        let faulty = FaultyDirectory::new(open_directory(tmp.path(), DirectoryKind::Mmap).unwrap());
        let mut w = IndexWriter::open_in(
            Arc::new(faulty.clone()),
            opts(MergePolicy::Log { factor: 2 }),
        )
        .unwrap();
        w.set_background_merges(background);
        let mut new = old.clone();
        // 18 adds and 2 updates: a segment on the log policy's level of the 30-document base
        // (16 to 31 documents), so the two merge.
        for id in 30..48 {
            w.add_document(doc(id, 0)).unwrap();
            new.insert(id, 0);
        }
        for id in [3u64, 31] {
            w.update_document("id", &FieldValue::Int(id as i64), doc(id, 1))
                .unwrap();
            new.insert(id, 1);
        }
        w.delete_term("id", &FieldValue::Int(5)).unwrap();
        new.remove(&5);
        faulty.fail_at(Some(n));
        let mut result = w.commit();
        if background && result.is_ok() {
            result = w.commit_running_merge().map(|_| Default::default());
        }
        if matches!(result, Err(quarry::Error::MergeFailed { .. })) {
            merge_faults += 1;
        }
        let ops_used = faulty.ops();
        drop(w);
        faulty.crash();
        let now = committed(tmp.path());
        match &result {
            Ok(_) => assert_eq!(now, new, "fault at op {n} after a successful commit"),
            Err(quarry::Error::MergeFailed { .. }) => {
                assert_eq!(now, new, "fault at op {n}: merge failed after the commit")
            }
            Err(_) => assert!(now == old || now == new, "fault at op {n}: a mix"),
        }
        check_index(tmp.path(), DirectoryKind::Pread)
            .unwrap_or_else(|e| panic!("fault at op {n}: check failed: {e}"));
        // The index stays writable.
        let mut w = IndexWriter::open(tmp.path(), opts(MergePolicy::None)).unwrap();
        w.add_document(doc(99, 0)).unwrap();
        w.commit().unwrap();
        if result.is_ok() && n > ops_used {
            break;
        }
        n += 1;
        assert!(n < 500, "the commit never completed");
    }
    assert!(merge_faults > 0, "some faults hit the merge");
}

#[test]
fn a_full_disk_gives_a_clear_error_and_keeps_the_last_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let old = base_index(tmp.path());
    let faulty = FaultyDirectory::new(open_directory(tmp.path(), DirectoryKind::Mmap).unwrap());
    let mut w = IndexWriter::open_in(Arc::new(faulty.clone()), opts(MergePolicy::None)).unwrap();
    for id in 100..400 {
        w.add_document(doc(id, 0)).unwrap();
    }
    faulty.space_left(Some(100));
    let e = w.commit().unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(
        msg.contains("flushing segment s0000"),
        "says what it was doing: {msg}"
    );
    assert!(
        msg.contains(&*tmp.path().to_string_lossy()),
        "names the file: {msg}"
    );
    assert!(!msg.contains("failed earlier"), "{msg}");
    drop(w);
    faulty.crash();
    assert_eq!(committed(tmp.path()), old);
    check_index(tmp.path(), DirectoryKind::Mmap).unwrap();
    // Only the files of the last commit (and the lock) remain.
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The lock, the commit point and the segment's eight files (format v9, with `.vec`).
    assert_eq!(names.len(), 1 + 8 + 1, "{names:?}");
}

#[derive(Clone, Debug)]
enum Op {
    Add(u64),
    Update(u64),
    Delete(u64),
    DeleteAll,
    Refresh,
    Commit,
    Merge,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..40).prop_map(Op::Add),
        4 => (0u64..40).prop_map(Op::Update),
        3 => (0u64..40).prop_map(Op::Delete),
        1 => Just(Op::DeleteAll),
        3 => Just(Op::Refresh),
        3 => Just(Op::Commit),
        1 => Just(Op::Merge),
        1 => Just(Op::Reopen),
    ]
}

/// The model: a multiset of `(id, version)` (adds may duplicate ids; updates replace all).
type Model = Vec<(u64, u32)>;

fn summary(m: &Model) -> BTreeMap<(u64, u32), usize> {
    let mut out = BTreeMap::new();
    for &k in m {
        *out.entry(k).or_insert(0) += 1;
    }
    out
}

fn searched(s: &Searcher) -> BTreeMap<(u64, u32), usize> {
    let q = s.parse_query("*:*", &["body"]).unwrap();
    // Every live document (long kill runs grow past any fixed cap).
    let all = (s.live_doc_count() as usize).max(1);
    let r = s.search(&q, all, SearchMode::TopCount).unwrap();
    let mut out = BTreeMap::new();
    for h in &r.top {
        *out.entry(id_version(s, h.doc)).or_insert(0) += 1;
    }
    assert_eq!(r.total_hits as usize, r.top.len());
    assert_eq!(vectors(s), with_vectors(&out, |&k| k), "the vectors");
    out
}

/// Cases of the property tests below: `default` times `QUARRY_PROPTEST_SCALE` (default 1). CI's
/// long run (scripts/test.sh) sets a scale and a fixed `PROPTEST_RNG_SEED`.
fn cases(default: u32) -> u32 {
    let scale: u32 = std::env::var("QUARRY_PROPTEST_SCALE")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1);
    default.saturating_mul(scale.max(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]
    #[test]
    fn random_operations_match_a_model(
        ops in proptest::collection::vec(op(), 1..40),
        background in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = IndexWriter::create(tmp.path(), schema(), opts(MergePolicy::Log { factor: 3 })).unwrap();
        w.set_background_merges(background);
        let mut current: Model = Vec::new();
        let mut durable: Model = Vec::new();
        let mut visible: Model = Vec::new();
        let mut reader = w.reader().unwrap();
        let mut version = 0u32;
        for op in ops {
            version += 1;
            match op {
                Op::Add(id) => {
                    w.add_document(doc(id, version)).unwrap();
                    current.push((id, version));
                }
                Op::Update(id) => {
                    w.update_document("id", &FieldValue::Int(id as i64), doc(id, version)).unwrap();
                    current.retain(|d| d.0 != id);
                    current.push((id, version));
                }
                Op::Delete(id) => {
                    w.delete_term("id", &FieldValue::Int(id as i64)).unwrap();
                    current.retain(|d| d.0 != id);
                }
                Op::DeleteAll => {
                    w.delete_all().unwrap();
                    current.clear();
                }
                Op::Refresh => {
                    w.refresh().unwrap();
                    visible = current.clone();
                }
                Op::Commit => {
                    w.commit().unwrap();
                    durable = current.clone();
                    visible = current.clone();
                }
                Op::Merge => {
                    w.force_merge(1).unwrap();
                    durable = current.clone();
                    visible = current.clone();
                }
                Op::Reopen => {
                    drop(reader);
                    drop(w);
                    let o = || opts(MergePolicy::Log { factor: 3 });
                    // Before the first commit there is no index yet: start a new one.
                    w = IndexWriter::open(tmp.path(), o())
                        .or_else(|_| IndexWriter::create(tmp.path(), schema(), o()))
                        .unwrap();
                    w.set_background_merges(background);
                    current = durable.clone();
                    visible = durable.clone();
                    reader = w.reader().unwrap();
                }
            }
            prop_assert_eq!(searched(&reader.searcher()), summary(&visible));
        }
        w.commit().unwrap();
        prop_assert_eq!(searched(&Index::open(tmp.path()).unwrap().searcher()), summary(&current));
        check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    }
}

/// Environment variable that turns this test binary into the child writer of the kill test.
const CHILD_ENV: &str = "QUARRY_KILL_CHILD_INDEX";
/// Set for a child writer that merges in the background.
const CHILD_BACKGROUND_ENV: &str = "QUARRY_KILL_CHILD_BACKGROUND";

/// The child: appends batches of 10 documents forever, one commit per batch, recording the
/// number of committed batches in the commit's user data.
#[test]
#[ignore = "run by kill_minus_nine_never_loses_a_commit as a child process"]
fn kill_child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let path = Path::new(&path);
    let mut w = match IndexWriter::open(path, opts(MergePolicy::Log { factor: 3 })) {
        Ok(w) => w,
        Err(_) => {
            IndexWriter::create(path, schema(), opts(MergePolicy::Log { factor: 3 })).unwrap()
        }
    };
    w.set_background_merges(std::env::var_os(CHILD_BACKGROUND_ENV).is_some());
    let mut batches: u64 = w
        .user_data()
        .get("batches")
        .map_or(0, |b| b.parse().unwrap());
    loop {
        for i in 0..10 {
            w.add_document(doc(batches * 10 + i, 0)).unwrap();
        }
        // Updates and deletes too: the first document of the previous batch gets version 1,
        // its second is deleted.
        if batches > 0 {
            let p = (batches - 1) * 10;
            w.update_document("id", &FieldValue::Int(p as i64), doc(p, 1))
                .unwrap();
            w.delete_term("id", &FieldValue::Int(p as i64 + 1)).unwrap();
        }
        batches += 1;
        w.set_user_data("batches", &batches.to_string());
        w.commit().unwrap();
    }
}

/// A writer that dies (abort) in the middle of a background merge, with the merged segment
/// written but not committed: the index holds exactly its last commit and checks clean, and the
/// next writer removes the merge's orphan files.
#[test]
fn a_writer_dying_during_a_background_merge_keeps_its_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(&exe)
        .args(["--exact", "kill_child_writer", "--ignored", "--nocapture"])
        .env(CHILD_ENV, tmp.path())
        .env(CHILD_BACKGROUND_ENV, "1")
        .env("QUARRY_FAILPOINT", "background-merge-written")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("the child never reached a background merge");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!status.success(), "the child aborts at the failpoint");
    let index = Index::open(tmp.path()).unwrap();
    let batches: u64 = index.commit().user_data["batches"].parse().unwrap();
    assert!(batches >= 2, "{batches} batches before the first merge");
    assert_eq!(contents(&index.searcher()), expected_after(batches));
    let referenced: std::collections::HashSet<String> =
        index.commit().files().into_iter().collect();
    drop(index);
    check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    let segment_files = |p: &Path| -> Vec<String> {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('s') && n.contains('.'))
            .collect()
    };
    let orphans: Vec<String> = segment_files(tmp.path())
        .into_iter()
        .filter(|n| !referenced.contains(n))
        .collect();
    assert!(!orphans.is_empty(), "the merged segment was written");
    drop(IndexWriter::open(tmp.path(), opts(MergePolicy::None)).unwrap());
    let left: Vec<String> = segment_files(tmp.path())
        .into_iter()
        .filter(|n| !referenced.contains(n))
        .collect();
    assert!(left.is_empty(), "orphans removed: {left:?}");
    assert_eq!(committed(tmp.path()), expected_after(batches));
}

/// What the index must hold after `batches` committed batches of the child.
fn expected_after(batches: u64) -> BTreeMap<u64, u32> {
    let mut m = BTreeMap::new();
    for b in 0..batches {
        for i in 0..10 {
            m.insert(b * 10 + i, 0);
        }
        if b > 0 {
            let p = (b - 1) * 10;
            m.insert(p, 1);
            m.remove(&(p + 1));
        }
    }
    m
}

/// Kills a writer child process with SIGKILL at random moments; after each kill the index
/// holds exactly the batches its newest commit says, and checks clean. Cycles:
/// `QUARRY_KILL_CYCLES` (default 5; the documented long run uses 1000).
#[test]
fn kill_minus_nine_never_loses_a_commit() {
    kill_cycles(false);
}

/// The same with a child that merges in the background (the log policy starts a merge after
/// most commits, so kills land during background merges too).
#[test]
fn kill_minus_nine_during_background_merges_never_loses_a_commit() {
    kill_cycles(true);
}

fn kill_cycles(background: bool) {
    let cycles: u64 = std::env::var("QUARRY_KILL_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(5);
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut last_batches = 0;
    for cycle in 0..cycles {
        let mut cmd = std::process::Command::new(&exe);
        if background {
            cmd.env(CHILD_BACKGROUND_ENV, "1");
        }
        let mut child = cmd
            .args(["--exact", "kill_child_writer", "--ignored", "--nocapture"])
            .env(CHILD_ENV, tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(std::time::Duration::from_millis(30 + rng % 300));
        child.kill().unwrap();
        child.wait().unwrap();
        let Ok(index) = Index::open(tmp.path()) else {
            // Killed before its first commit: nothing may be there yet.
            assert_eq!(last_batches, 0, "cycle {cycle}: the index vanished");
            continue;
        };
        let batches: u64 = index
            .commit()
            .user_data
            .get("batches")
            .map_or(0, |b| b.parse().unwrap());
        assert!(batches >= last_batches, "cycle {cycle}: a commit was lost");
        assert_eq!(
            contents(&index.searcher()),
            expected_after(batches),
            "cycle {cycle}: {batches} batches"
        );
        drop(index);
        check_index(tmp.path(), DirectoryKind::Pread)
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        last_batches = batches;
        if (cycle + 1) % 100 == 0 {
            eprintln!(
                "kill -9: {} cycles, {batches} batches committed, 0 lost",
                cycle + 1
            );
        }
    }
    eprintln!(
        "kill -9 (background merges: {background}): {cycles} cycles, {last_batches} batches committed, 0 lost, 0 partial"
    );
}
