//! The `quarry` binary with a changing index: delete, upsert with `--key`, inspect showing
//! deletions, the writer lock, a merge failure reported apart from the commit, a closed stdout
//! pipe, and clean-up after a failed first run.
mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn index_cmd(input: &Path, idx: &Path) -> Command {
    let mut c = quarry();
    c.args(["index", "-q", "--threads", "1", "--input"])
        .arg(input)
        .arg("--index")
        .arg(idx)
        .arg("--schema")
        .arg(schema());
    c
}

#[test]
fn delete_upsert_and_inspect() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let lines = reuters(200);
    write_lines(&input, &lines);
    let idx = tmp.path().join("idx");
    ok(&mut index_cmd(&input, &idx));
    let oil = count(&idx, "oil");
    assert!(oil > 0);
    let out = ok(quarry().args(["delete", "--index"]).arg(&idx).arg("oil"));
    assert!(out.contains(&format!("deleted {oil} document(s)")), "{out}");
    assert_eq!(count(&idx, "oil"), 0);
    assert_eq!(count(&idx, "*:*"), 200 - oil);
    let out = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(out.contains(&format!("({oil} deleted)")), "{out}");
    assert!(out.contains(&format!("{oil} deleted, terms")), "{out}");

    // Upsert: the first 50 lines again with a new title, keyed by id.
    let changed: Vec<String> = lines[..50]
        .iter()
        .map(|l| {
            let mut v: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(l).unwrap();
            v.insert("title".into(), "zzupdated".into());
            serde_json::Value::Object(v).to_string()
        })
        .collect();
    let upd = tmp.path().join("upd.jsonl");
    write_lines(&upd, &changed);
    let out = ok(index_cmd(&upd, &idx).args(["--append", "--key", "id"]));
    assert!(out.contains("indexed 50 docs"), "{out}");
    assert_eq!(count(&idx, "title:zzupdated"), 50);
    let oil_in_first_50 = lines[..50]
        .iter()
        .filter(|l| l.to_lowercase().contains("oil"))
        .count() as u64;
    assert!(oil_in_first_50 <= oil);
    // Every id once: the 50 upserted (deleted ones come back) plus the survivors of the rest.
    let total = count(&idx, "*:*");
    assert!(total >= 200 - oil && total <= 200, "{total}");
    assert_eq!(count(&idx, "id:1"), 1);
    ok(quarry().args(["check", "--index"]).arg(&idx));

    let bad = quarry()
        .args(["index", "-q", "--append", "--key", "nope", "--input"])
        .arg(&upd)
        .arg("--index")
        .arg(&idx)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("unknown field \"nope\""),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn a_second_writer_is_told_the_index_is_locked() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    write_lines(&input, &reuters(50));
    let idx = tmp.path().join("idx");
    ok(&mut index_cmd(&input, &idx));
    // A writer holds the lock (as a concurrent `quarry index --append` would).
    let held = quarry::IndexWriter::open(&idx, quarry::WriterOptions::default()).unwrap();
    let out = index_cmd(&input, &idx).arg("--append").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("locked by another writer"),
        "{}",
        text(&out.stderr)
    );
    let out = quarry()
        .args(["delete", "--index"])
        .arg(&idx)
        .arg("oil")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    drop(held);
    assert_eq!(count(&idx, "*:*"), 50, "nothing lost");
    ok(index_cmd(&input, &idx).arg("--append"));
    assert_eq!(count(&idx, "*:*"), 100);
}

#[test]
fn a_merge_failure_after_the_commit_is_reported_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    write_lines(&input, &reuters(60));
    let idx = tmp.path().join("idx");
    ok(&mut index_cmd(&input, &idx));
    let out = index_cmd(&input, &idx)
        .args(["--append", "--force-merge", "1"])
        .env("QUARRY_FAILPOINT", "merge-before-write")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("is durable, but a merge after it failed"),
        "{err}"
    );
    assert!(err.contains("documents were committed"), "{err}");
    assert!(!err.contains("failed earlier"), "{err}");
    assert_eq!(count(&idx, "*:*"), 120, "the batch was committed");
    ok(quarry().args(["check", "--index"]).arg(&idx));
    let files: Vec<String> = std::fs::read_dir(&idx)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files.len(),
        1 + 2 * 7 + 1,
        "no partial merge files: {files:?}"
    );
}

/// The segment count `quarry index` reports ("into N segment(s)").
fn reported_segments(out: &str) -> usize {
    let (_, rest) = out.split_once(" into ").expect("a summary line");
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// Appends run the merge policy's merges on the merge thread after the commit and wait for
/// them before exiting: a failed background merge exits 3 with the batch committed, and the
/// next append merges (the tiered policy allows 10 small segments).
#[test]
fn an_append_waits_for_its_background_merge_and_reports_its_failure_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    write_lines(&input, &reuters(5));
    let idx = tmp.path().join("idx");
    let out = ok(&mut index_cmd(&input, &idx));
    assert_eq!(reported_segments(&out), 1, "{out}");
    for n in 2..=10 {
        let out = ok(index_cmd(&input, &idx).arg("--append"));
        assert_eq!(reported_segments(&out), n, "no merge up to 10: {out}");
    }
    let out = index_cmd(&input, &idx)
        .arg("--append")
        .env("QUARRY_FAILPOINT", "merge-before-write")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("is durable, but a merge after it failed"),
        "{err}"
    );
    assert!(err.contains("documents were committed"), "{err}");
    assert_eq!(count(&idx, "*:*"), 55, "the batch was committed");
    ok(quarry().args(["check", "--index"]).arg(&idx));
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(inspect.contains("in 11 segment(s)"), "{inspect}");

    let out = ok(index_cmd(&input, &idx).arg("--append"));
    let segments = reported_segments(&out);
    assert!(segments < 12, "the append merged before it exited: {out}");
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(
        inspect.contains(&format!("in {segments} segment(s)")),
        "the merge was committed: {inspect}"
    );
    assert_eq!(count(&idx, "*:*"), 60);
    ok(quarry().args(["check", "--index"]).arg(&idx));
}

#[test]
fn inspect_and_check_survive_a_closed_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    write_lines(&input, &reuters(30));
    let idx = tmp.path().join("idx");
    ok(&mut index_cmd(&input, &idx));
    for sub in ["inspect", "check"] {
        // The reader of the pipe is gone before quarry writes: every write fails with EPIPE.
        let out = Command::new("sh")
            .arg("-c")
            .arg("(sleep 0.3; \"$0\" \"$1\" --index \"$2\"; echo \"status=$?\" >&2) | true")
            .arg(env!("CARGO_BIN_EXE_quarry"))
            .arg(sub)
            .arg(&idx)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert!(err.contains("status=0"), "{sub}: {err}");
        assert!(!err.contains("panicked"), "{sub}: {err}");
    }
}

#[test]
fn a_failed_first_run_leaves_no_files() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let mut lines = reuters(3000);
    lines.push("{not json".into());
    write_lines(&input, &lines);
    let idx = tmp.path().join("idx");
    let out = index_cmd(&input, &idx)
        .args(["--ram-mb", "16"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let files: Vec<String> = std::fs::read_dir(&idx)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "write.lock")
        .collect();
    assert!(files.is_empty(), "orphans: {files:?}");
}
