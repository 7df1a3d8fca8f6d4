//! `quarry index --input` with a directory or a glob of JSON Lines files, read in parallel by
//! mmap or streaming reads: the same documents as from one file, whatever the read mode.
mod common;

use common::*;

/// Splits the first `n` Reuters documents into `parts` files under `dir` (plain, with the last
/// part zstd-compressed) and returns the lines.
fn split(dir: &std::path::Path, n: usize, parts: usize) -> Vec<String> {
    let lines = reuters(n);
    std::fs::create_dir_all(dir).unwrap();
    for (i, chunk) in lines.chunks(n.div_ceil(parts)).enumerate() {
        if i + 1 == parts {
            let f = std::fs::File::create(dir.join(format!("part-{i:02}.jsonl.zst"))).unwrap();
            let mut enc = zstd::Encoder::new(f, 3).unwrap().auto_finish();
            for l in chunk {
                use std::io::Write;
                writeln!(enc, "{l}").unwrap();
            }
        } else {
            write_lines(&dir.join(format!("part-{i:02}.jsonl")), chunk);
        }
    }
    // Not input: skipped when the directory is listed.
    std::fs::write(dir.join("README.txt"), "not json").unwrap();
    lines
}

fn index(input: &std::path::Path, index: &std::path::Path, extra: &[&str]) -> String {
    ok(quarry()
        .args(["index", "--quiet", "--overwrite", "--input"])
        .arg(input)
        .arg("--index")
        .arg(index)
        .arg("--schema")
        .arg(schema())
        .args(extra))
}

#[test]
fn a_directory_and_a_glob_index_the_same_documents_as_one_file_in_every_read_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = tmp.path().join("parts");
    let lines = split(&parts, 3000, 7);
    let single = tmp.path().join("all.jsonl");
    write_lines(&single, &lines);
    let base = tmp.path().join("base");
    index(&single, &base, &[]);
    let queries = [
        "oil",
        "+oil +prices",
        "\"interest rates\"",
        "topics:grain",
        "-the +bank",
    ];
    let want: Vec<u64> = queries.iter().map(|q| count(&base, q)).collect();
    assert!(want[0] > 0);
    let glob = tmp.path().join("parts/part-*.jsonl*");
    for (input, mode, threads) in [
        (&parts, "auto", "2"),
        (&parts, "mmap", "3"),
        (&parts, "stream", "1"),
        (&glob, "auto", "4"),
    ] {
        let idx = tmp.path().join(format!("idx-{mode}-{threads}"));
        let out = index(
            input,
            &idx,
            &["--read-mode", mode, "--read-threads", threads],
        );
        assert!(out.contains("indexed 3000 docs"), "{out}");
        let got: Vec<u64> = queries.iter().map(|q| count(&idx, q)).collect();
        assert_eq!(got, want, "{} with --read-mode {mode}", input.display());
    }
}

#[test]
fn a_bad_line_names_its_file_and_line_and_commits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = tmp.path().join("parts");
    let mut lines = reuters(200);
    std::fs::create_dir_all(&parts).unwrap();
    write_lines(&parts.join("a.jsonl"), &lines[..100]);
    lines[150] = r#"{"id": 1, "title": "x", "#.into();
    write_lines(&parts.join("b.jsonl"), &lines[100..]);
    let idx = tmp.path().join("idx");
    let out = run(quarry()
        .args(["index", "--quiet", "--input"])
        .arg(&parts)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(schema()));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("b.jsonl: line 51:"), "{err}");
    assert!(err.contains("nothing from this run was committed"), "{err}");
    let out = ok(quarry()
        .args(["index", "--quiet", "--skip-bad", "--input"])
        .arg(&parts)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(schema()));
    assert!(out.contains("indexed 199 docs (1 skipped)"), "{out}");
}

#[test]
fn inputs_that_name_no_files_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "x").unwrap();
    let idx = tmp.path().join("idx");
    for (input, want) in [
        (empty.clone(), "no input files in"),
        (tmp.path().join("nothing-*.jsonl"), "no input files match"),
        (tmp.path().join("missing.jsonl"), "cannot open input"),
    ] {
        let out = run(quarry()
            .args(["index", "--quiet", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(&idx)
            .arg("--schema")
            .arg(schema()));
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains(want), "{}: {err}", input.display());
        assert!(!idx.exists(), "nothing created for {}", input.display());
    }
}

#[test]
fn upserts_across_files_keep_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = tmp.path().join("parts");
    std::fs::create_dir_all(&parts).unwrap();
    let schema = tmp.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields":[{"name":"k","type":"keyword","stored":true},{"name":"v","type":"text","stored":true}]}"#,
    )
    .unwrap();
    for f in 0..4 {
        let lines: Vec<String> = (0..50)
            .map(|i| format!(r#"{{"k":"key{i}","v":"version{f}"}}"#))
            .collect();
        write_lines(&parts.join(format!("{f}.jsonl")), &lines);
    }
    let idx = tmp.path().join("idx");
    ok(quarry()
        .args([
            "index",
            "--quiet",
            "--key",
            "k",
            "--read-threads",
            "4",
            "--input",
        ])
        .arg(&parts)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(&schema));
    assert_eq!(count(&idx, "v:version3"), 50);
    assert_eq!(count(&idx, "v:version0 v:version1 v:version2"), 0);
}

#[test]
fn a_dry_run_reads_and_checks_everything_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = tmp.path().join("parts");
    split(&parts, 500, 3);
    let idx = tmp.path().join("idx");
    let out = ok(quarry()
        .args(["index", "--quiet", "--dry-run", "--input"])
        .arg(&parts)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(schema()));
    assert!(out.contains("dry run: read 500 docs (0 skipped)"), "{out}");
    assert!(!idx.exists(), "a dry run creates nothing");
    let mut lines = reuters(10);
    lines[3] = r#"{"id": "not a number", "title": "x"}"#.into();
    let bad = tmp.path().join("bad.jsonl");
    write_lines(&bad, &lines);
    let out = run(quarry()
        .args(["index", "--quiet", "--dry-run", "--input"])
        .arg(&bad)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(schema()));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("bad.jsonl: line 4:"),
        "{}",
        text(&out.stderr)
    );
    assert!(!idx.exists());
}
