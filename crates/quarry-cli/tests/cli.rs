//! The `quarry` binary end to end: indexing, bad input, crash safety, batch search equivalence.
mod common;

use std::io::Write;

use common::*;

#[test]
fn index_infers_schema_and_searches_json() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl.gz");
    {
        let f = std::fs::File::create(&input).unwrap();
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        for l in reuters(300) {
            writeln!(gz, "{l}").unwrap();
        }
        gz.finish().unwrap();
    }
    let idx = t.path().join("idx");
    let out = run(quarry()
        .args(["index", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"type\": \"integer\"") && stderr.contains("\"name\": \"body\""),
        "schema not printed: {stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("indexed 300 docs"));
    let json = ok(quarry()
        .args([
            "search",
            "--json",
            "--default-field",
            "body",
            "--top",
            "3",
            "--index",
        ])
        .arg(&idx)
        .arg("oil"));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["query"], "oil");
    assert!(v["hits"].as_u64().unwrap() > 0);
    assert_eq!(v["top"].as_array().unwrap().len(), 3);
    assert!(v["top"][0]["doc"]["id"].is_i64() && v["top"][0]["score"].is_f64());
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(
        inspect.contains("300 docs") && inspect.contains("post"),
        "{inspect}"
    );
    let check = ok(quarry().args(["check", "--index"]).arg(&idx));
    assert!(check.starts_with("ok: 300 docs"), "{check}");
    for dir in ["direct", "adaptive"] {
        let inspect = ok(quarry()
            .args(["inspect", "--directory", dir, "--index"])
            .arg(&idx));
        assert!(inspect.contains("300 docs"), "{dir}: {inspect}");
        let check = ok(quarry()
            .args(["check", "--directory", dir, "--index"])
            .arg(&idx));
        assert!(check.starts_with("ok: 300 docs"), "{dir}: {check}");
    }
    let bad_dir = run(quarry()
        .args(["inspect", "--directory", "floppy", "--index"])
        .arg(&idx));
    assert!(
        !bad_dir.status.success()
            && String::from_utf8_lossy(&bad_dir.stderr).contains("mmap, pread, direct or adaptive")
    );
    // Creating over an existing index is refused with advice.
    let again = run(quarry()
        .args(["index", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("--append"));
    // A bad query names the position.
    let bad = run(quarry()
        .args(["search", "--index"])
        .arg(&idx)
        .arg("body:(oil AND"));
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("column"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn bad_lines_are_named_or_skipped_and_commits_survive() {
    let t = tempfile::tempdir().unwrap();
    let idx = t.path().join("idx");
    let good = t.path().join("good.jsonl");
    write_lines(&good, &reuters(100));
    ok(quarry()
        .args(["index", "-q", "--schema"])
        .arg(schema())
        .arg("--input")
        .arg(&good)
        .arg("--index")
        .arg(&idx));
    assert_eq!(count(&idx, "*:*"), 100);

    let mut lines = reuters(200)[100..].to_vec();
    lines[2] = "{\"id\": 7, \"title\": \"broken".to_string();
    lines[5] = "{\"id\": \"seven\", \"title\": \"x\"}".to_string();
    let bad = t.path().join("bad.jsonl");
    write_lines(&bad, &lines);
    let out = run(quarry()
        .args(["index", "-q", "--append", "--input"])
        .arg(&bad)
        .arg("--index")
        .arg(&idx));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.jsonl: line 3") && err.contains("column"),
        "{err}"
    );
    assert_eq!(
        count(&idx, "*:*"),
        100,
        "a failed run must not change the committed index"
    );

    let out = ok(quarry()
        .args(["index", "-q", "--append", "--skip-bad", "--input"])
        .arg(&bad)
        .arg("--index")
        .arg(&idx));
    assert!(out.contains("indexed 98 docs (2 skipped)"), "{out}");
    assert_eq!(count(&idx, "*:*"), 198);

    // Wrong type is named by line and field.
    let typed = t.path().join("typed.jsonl");
    write_lines(
        &typed,
        &["{\"id\": 1}".to_string(), "{\"id\": \"x\"}".to_string()],
    );
    let out = run(quarry()
        .args(["index", "-q", "--append", "--input"])
        .arg(&typed)
        .arg("--index")
        .arg(&idx));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("typed.jsonl: line 2") && err.contains("\"id\"") && err.contains("integer"),
        "{err}"
    );
    let unknown = t.path().join("unknown.jsonl");
    write_lines(&unknown, &["{\"idd\": 1}".to_string()]);
    let out = run(quarry()
        .args(["index", "-q", "--append", "--input"])
        .arg(&unknown)
        .arg("--index")
        .arg(&idx));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1") && err.contains("unknown field") && err.contains("\"idd\""),
        "{err}"
    );
}

#[test]
fn writer_killed_before_commit_leaves_previous_commit_intact() {
    let t = tempfile::tempdir().unwrap();
    let idx = t.path().join("idx");
    let first = t.path().join("first.jsonl");
    let second = t.path().join("second.jsonl");
    let docs = reuters(300);
    write_lines(&first, &docs[..200]);
    write_lines(&second, &docs[200..]);
    ok(quarry()
        .args(["index", "-q", "--schema"])
        .arg(schema())
        .arg("--input")
        .arg(&first)
        .arg("--index")
        .arg(&idx));
    let before = ok(quarry()
        .args(["search", "--json", "--index"])
        .arg(&idx)
        .arg("oil"));

    // Killed after the new segment files are written and fsynced, before the commit point.
    let out = run(quarry()
        .env("QUARRY_FAILPOINT", "commit-before-publish")
        .args(["index", "-q", "--append", "--input"])
        .arg(&second)
        .arg("--index")
        .arg(&idx));
    assert!(
        !out.status.success(),
        "the failpoint should abort the process"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("failpoint commit-before-publish"));
    assert_eq!(count(&idx, "*:*"), 200);
    assert_eq!(
        ok(quarry()
            .args(["search", "--json", "--index"])
            .arg(&idx)
            .arg("oil")),
        before
    );
    ok(quarry().args(["check", "--index"]).arg(&idx));

    // The next writer cleans up and commits normally.
    ok(quarry()
        .args(["index", "-q", "--append", "--input"])
        .arg(&second)
        .arg("--index")
        .arg(&idx));
    assert_eq!(count(&idx, "*:*"), 300);
    ok(quarry().args(["check", "--index"]).arg(&idx));

    // Killed right after the commit point is published: the new documents are durable.
    let third = t.path().join("third.jsonl");
    write_lines(&third, &docs[..50]);
    let out = run(quarry()
        .env("QUARRY_FAILPOINT", "commit-after-publish")
        .args(["index", "-q", "--append", "--input"])
        .arg(&third)
        .arg("--index")
        .arg(&idx));
    assert!(!out.status.success());
    assert_eq!(count(&idx, "*:*"), 350);
    ok(quarry().args(["check", "--index"]).arg(&idx));
}

#[test]
fn threads_and_directories_give_identical_results() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write_lines(&input, &reuters(4000));
    let queries = root().join("tests/fixtures/reuters-queries-public.jsonl");
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let idx = t.path().join(format!("idx{threads}"));
        ok(quarry()
            .args([
                "index",
                "-q",
                "--ram-mb",
                "16",
                "--threads",
                threads,
                "--schema",
            ])
            .arg(schema())
            .arg("--input")
            .arg(&input)
            .arg("--index")
            .arg(&idx));
        for dir in ["mmap", "pread", "direct", "adaptive"] {
            for mode in ["top", "top_count"] {
                let out = ok(quarry()
                    .args([
                        "search",
                        "--json",
                        "--default-field",
                        "body",
                        "--directory",
                        dir,
                        "--mode",
                        mode,
                        "--queries",
                    ])
                    .arg(&queries)
                    .arg("--index")
                    .arg(&idx));
                let lines: Vec<serde_json::Value> = out
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                assert_eq!(lines.len(), 120);
                let tops: Vec<serde_json::Value> = lines.iter().map(|v| v["top"].clone()).collect();
                outputs.push((
                    format!("threads={threads} dir={dir} mode={mode}"),
                    tops,
                    lines,
                ));
            }
        }
    }
    let (base_name, base_top, base_lines) = &outputs[1];
    for (name, top, lines) in &outputs {
        assert_eq!(top, base_top, "{name} differs from {base_name}");
        if name.ends_with("top_count") {
            assert_eq!(lines, base_lines, "{name} differs from {base_name}");
        }
    }
}

#[test]
fn search_highlights_fields_in_text_and_json() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"id": 1, "title": "Oil prices", "body": "Crude oil prices rose. Prices of oil fell."}"#,
            "\n",
            r#"{"id": 2, "title": "Gas", "body": "Gas prices fell."}"#,
            "\n"
        ),
    )
    .unwrap();
    let idx = t.path().join("idx");
    ok(quarry()
        .args(["index", "-q", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    let text = ok(quarry()
        .args(["search", "--highlight", "body,title", "--index"])
        .arg(&idx)
        .arg(r#"body:"oil prices""#));
    assert!(
        text.contains("body: Crude <em>oil prices</em> rose. Prices of oil fell."),
        "{text}"
    );
    assert!(!text.contains("title: "), "title was not queried: {text}");
    let json = ok(quarry()
        .args(["search", "--json", "--highlight", "*", "--index"])
        .arg(&idx)
        .arg("pric*"));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let hl: Vec<&serde_json::Value> = v["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["highlight"])
        .collect();
    assert!(
        hl.contains(&&serde_json::json!({
            "title": ["Oil <em>prices</em>"],
            "body": ["Crude oil <em>prices</em> rose. <em>Prices</em> of oil fell."]
        })),
        "{json}"
    );
    let bad = run(quarry()
        .args(["search", "--highlight", "id", "--index"])
        .arg(&idx)
        .arg("oil"));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--highlight \"id\""));
}
