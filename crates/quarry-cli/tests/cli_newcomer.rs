//! A new user's first hour with the `quarry` binary (issue 9): refusals that come first and
//! name their cause, reading commands that create nothing, lenient input where it is safe
//! (byte-order mark, `--skip-bad` during inference, queries starting with `-`), batch search that
//! goes on after a bad query, and documents that come back as they went in.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

fn quarry() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "command failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs a command that must fail; returns its stderr.
fn fails(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        !out.status.success(),
        "command should fail: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

fn write(path: &Path, content: &str) {
    std::fs::File::create(path)
        .unwrap()
        .write_all(content.as_bytes())
        .unwrap();
}

const DOCS: &str = r#"{"id": 1, "title": "oil prices", "body": "crude oil rose"}
{"id": 2, "title": "gas", "body": "natural gas fell"}
{"id": 3, "title": "grain", "body": "wheat and oil seeds"}
"#;

/// A small index of [`DOCS`] in `dir/idx`.
fn small_index(dir: &Path) -> PathBuf {
    let input = dir.join("docs.jsonl");
    write(&input, DOCS);
    let idx = dir.join("idx");
    ok(quarry()
        .args(["index", "-q", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    idx
}

#[test]
fn reading_commands_never_create_anything() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("missing");
    let afile = t.path().join("afile");
    write(&afile, "x");
    for cmd in [
        vec!["check", "--index"],
        vec!["inspect", "--index"],
        vec!["search", "oil", "--index"],
    ] {
        let err = fails(quarry().args(&cmd).arg(&missing));
        assert!(
            err.contains("no index at") && err.contains("missing"),
            "{err}"
        );
        assert!(!missing.exists(), "{cmd:?} created {}", missing.display());
        let err = fails(quarry().args(&cmd).arg(&afile));
        assert!(
            err.contains("not an index:") && err.contains("is a file"),
            "{err}"
        );
        assert!(!err.contains("File exists"), "{err}");
    }
}

#[test]
fn index_refusals_name_the_cause_first_and_print_nothing_before() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write(&input, DOCS);
    // A regular file as the index path.
    let afile = t.path().join("afile");
    write(&afile, "x");
    let out = run(quarry()
        .args(["index", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&afile));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: cannot index into") && err.contains("it is a file"),
        "{err}"
    );
    assert!(
        !err.contains("--append") && !err.contains("inferred schema"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // An existing index without --append: the cause, then one hint, no schema printed first.
    let idx = small_index(t.path());
    let err = fails(
        quarry()
            .args(["index", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(&idx),
    );
    assert!(
        err.starts_with("error: ") && err.contains("already holds an index (3 docs); use --append"),
        "{err}"
    );
    assert!(!err.contains("inferred schema"), "{err}");
    assert_eq!(err.matches("--append").count(), 1, "{err}");

    // --append to nothing.
    let err = fails(
        quarry()
            .args(["index", "--append", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(t.path().join("nothing")),
    );
    assert!(
        err.contains("no index at") && err.contains("leave out --append"),
        "{err}"
    );
    assert!(!t.path().join("nothing").exists());
}

/// Whether the unprivileged user `nobody` can run `bin` (every ancestor folder traversable by
/// others, the file executable by others).
#[cfg(unix)]
fn reachable_by_others(bin: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode());
    mode(bin).is_ok_and(|m| m & 0o001 != 0)
        && bin
            .ancestors()
            .skip(1)
            .all(|d| mode(d).is_ok_and(|m| m & 0o001 != 0))
}

#[cfg(unix)]
#[test]
fn unwritable_folder_gives_the_os_error_once_and_no_append_hint() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write(&input, DOCS);
    let ro = t.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut cmd = quarry();
    // Root ignores permissions, so as root (CI runs as root) the command runs as `nobody`, for
    // whom the read-only folder is read-only: the same error, tested for real.
    let as_root = std::fs::File::create(ro.join("probe")).is_ok();
    if as_root {
        std::fs::remove_file(ro.join("probe")).unwrap();
        let perm = |p: &std::path::Path, m| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        perm(t.path(), 0o755);
        perm(&input, 0o644);
        let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_quarry"));
        if !reachable_by_others(&bin) {
            // The build directory is private (e.g. under /root): run a copy `nobody` can reach.
            let copy = t.path().join("quarry");
            std::fs::copy(&bin, &copy).unwrap();
            perm(&copy, 0o755);
            cmd = Command::new(copy);
        }
        cmd.uid(65534).gid(65534);
        eprintln!("running as root: the command runs as uid 65534 (nobody)");
    }
    let err = fails(
        cmd.args(["index", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(ro.join("idx")),
    );
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(err.contains("cannot create an index in"), "{err}");
    assert_eq!(err.matches("os error 13").count(), 1, "{err}");
    assert!(
        !err.contains("--append") && !err.contains("inferred schema"),
        "{err}"
    );
    assert!(!ro.join("idx").exists());
}

/// A file where a folder should be fails for every user, root included (ENOTDIR).
#[test]
fn a_file_in_the_index_path_gives_the_os_error_once_and_no_append_hint() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write(&input, DOCS);
    let file = t.path().join("plain-file");
    write(&file, "not a folder\n");
    let err = fails(
        quarry()
            .args(["index", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(file.join("idx")),
    );
    assert!(err.contains("cannot create an index in"), "{err}");
    assert_eq!(err.matches("os error 20").count(), 1, "{err}");
    assert!(
        !err.contains("--append") && !err.contains("inferred schema"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder\n");
}

#[test]
fn skip_bad_also_skips_during_inference_and_positions_are_coherent() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write(
        &input,
        &format!("{DOCS}{{\"id\": 4, \"title\": \"broken\n{{\"id\": 5, \"title\": \"fine\"}}\n"),
    );
    let err = fails(
        quarry()
            .args(["index", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(t.path().join("a")),
    );
    assert!(
        err.contains("docs.jsonl: line 4: malformed JSON at column") && err.contains("--skip-bad"),
        "{err}"
    );
    assert!(!err.contains("line 1 column"), "{err}");
    let out = ok(quarry()
        .args(["index", "-q", "--skip-bad", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(t.path().join("b")));
    assert!(out.contains("indexed 4 docs (1 skipped)"), "{out}");
}

#[test]
fn byte_order_mark_on_line_one_is_accepted() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("bom.jsonl");
    write(&input, &format!("\u{feff}{DOCS}"));
    let idx = t.path().join("idx");
    let out = ok(quarry()
        .args(["index", "-q", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    assert!(out.contains("indexed 3 docs"), "{out}");
    let v: Value = serde_json::from_str(
        ok(quarry()
            .args(["search", "--json", "--index"])
            .arg(&idx)
            .arg("id:1"))
        .trim(),
    )
    .unwrap();
    assert_eq!(v["top"][0]["doc"]["id"], 1);
}

#[test]
fn queries_may_start_with_a_minus_and_wording_is_right() {
    let t = tempfile::tempdir().unwrap();
    let idx = small_index(t.path());
    // One argument holding a whole query, as a shell passes '-gas +oil'.
    let query = "-gas +oil";
    let out = ok(quarry()
        .args(["search", "--default-field", "body", "--index"])
        .arg(&idx)
        .arg(query));
    assert!(out.starts_with("2 hits for"), "{out}");
    let out = ok(quarry().args(["search", "--index"]).arg(&idx).arg("wheat"));
    assert!(out.starts_with("1 hit for"), "{out}");
    let help = ok(quarry().args(["search", "--help"]));
    assert!(help.contains("may start with `-`"), "{help}");
    let err = fails(
        quarry()
            .args(["search", "--default-field", "bdy", "--index"])
            .arg(&idx)
            .arg("oil"),
    );
    assert!(
        err.contains("unknown default field \"bdy\"") && err.contains("body, id, title"),
        "{err}"
    );
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(
        inspect.contains(": 3 docs (0 deleted) in 1 segment"),
        "{inspect}"
    );
    // Wrong type: "an integer", the schema's words, no Debug names.
    let bad = t.path().join("bad.jsonl");
    write(&bad, "{\"id\": \"x\"}\n");
    let err = fails(
        quarry()
            .args(["index", "--append", "--input"])
            .arg(&bad)
            .arg("--index")
            .arg(&idx),
    );
    assert!(
        err.contains("line 1") && err.contains("expected an integer, found a string"),
        "{err}"
    );
    // Inference names the line and the types in schema words.
    let mixed = t.path().join("mixed.jsonl");
    write(&mixed, "{\"x\": \"a\"}\n{\"x\": 2}\n");
    let err = fails(
        quarry()
            .args(["index", "--input"])
            .arg(&mixed)
            .arg("--index")
            .arg(t.path().join("m")),
    );
    assert!(
        err.contains("first 2 documents")
            && err.contains("line 2")
            && err.contains("integers")
            && !err.contains("Integer"),
        "{err}"
    );
}

#[test]
fn batch_search_reports_a_bad_query_and_goes_on() {
    let t = tempfile::tempdir().unwrap();
    let idx = small_index(t.path());
    let queries = t.path().join("q.jsonl");
    write(
        &queries,
        "{\"query\": \"oil\"}\n{\"query\": \"body:(oil AND\"}\n{\"q\": 1}\n{\"query\": \"gas\"}\n",
    );
    let out = run(quarry()
        .args(["search", "--json", "--queries"])
        .arg(&queries)
        .arg("--index")
        .arg(&idx));
    assert!(!out.status.success());
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0]["hits"], 2);
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[1]["query"], "body:(oil AND");
    assert!(lines[1]["error"].as_str().unwrap().contains("column"));
    assert_eq!(lines[2]["line"], 3);
    assert!(lines[2]["error"].as_str().unwrap().contains("\"query\""));
    assert_eq!(lines[3]["hits"], 1);
    let err = text(&out.stderr);
    assert!(err.contains("2 of 4 queries failed"), "{err}");
}

#[test]
fn stored_documents_come_back_as_they_went_in() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    let docs = [
        json!({"id": 1, "tags": ["energy"], "ok": true, "price": 2.5, "user": {"name": "ann"}}),
        json!({"id": 2, "tags": [], "ok": null, "price": [1, 1.5], "user": {"name": "bob"}}),
        json!({"id": 3, "tags": ["a", "b"], "ok": false, "price": null}),
    ];
    let lines: Vec<String> = docs.iter().map(Value::to_string).collect();
    write(&input, &(lines.join("\n") + "\n"));
    let idx = t.path().join("idx");
    let out = run(quarry()
        .args(["index", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    for want in [
        "\"type\": \"boolean\"",
        "\"type\": \"float\"",
        "\"name\": \"user.name\"",
    ] {
        assert!(err.contains(want), "{want} not in {err}");
    }
    for (i, want) in docs.iter().enumerate() {
        let v: Value = serde_json::from_str(
            ok(quarry()
                .args(["search", "--json", "--index"])
                .arg(&idx)
                .arg(format!("id:{}", i + 1)))
            .trim(),
        )
        .unwrap();
        let mut want = want.clone();
        // Nested objects come back flattened; integers in a float field as floats.
        let obj = want.as_object_mut().unwrap();
        if let Some(Value::Object(user)) = obj.remove("user") {
            obj.insert("user.name".into(), user["name"].clone());
        }
        if i == 1 {
            obj.insert("price".into(), json!([1.0, 1.5]));
        }
        assert_eq!(v["top"][0]["doc"], want, "doc {}", i + 1);
    }
    // Booleans and floats are searchable as exact terms.
    let count = |q: &str| -> u64 {
        let v: Value = serde_json::from_str(
            ok(quarry()
                .args(["search", "--json", "--mode", "count", "--index"])
                .arg(&idx)
                .arg(q))
            .trim(),
        )
        .unwrap();
        v["hits"].as_u64().unwrap()
    };
    assert_eq!(count("ok:true"), 1);
    assert_eq!(count("price:1.5"), 1);
    assert_eq!(count("user.name:bob"), 1);

    // A duplicate key is refused with its line and the key.
    let dup = t.path().join("dup.jsonl");
    write(
        &dup,
        "{\"id\": 4}\n{\"id\": 5, \"tags\": [\"x\"], \"id\": 6}\n",
    );
    let err = fails(
        quarry()
            .args(["index", "--append", "--input"])
            .arg(&dup)
            .arg("--index")
            .arg(&idx),
    );
    assert!(
        err.contains("dup.jsonl: line 2") && err.contains("duplicate key \"id\""),
        "{err}"
    );
}
