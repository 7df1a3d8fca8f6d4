//! `quarry index --index-sort`: the sort is kept in the index, shown by `inspect`, verified by
//! `check`, refused on a field without a column and when `--append` names another one, and a
//! sorted search gives the same hits as on the unsorted index.
mod common;

use common::*;

fn sorted_top(index: &std::path::Path, sort: &[&str]) -> serde_json::Value {
    let mut cmd = quarry();
    cmd.args(["search", "--json", "--top", "7", "--default-field", "body"]);
    for s in sort {
        cmd.args(["--sort", s]);
    }
    let out = ok(cmd.arg("--index").arg(index).arg("oil OR wheat"));
    let mut v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    v.as_object_mut().unwrap().remove("took");
    v
}

#[test]
fn index_sort_is_kept_inspected_checked_and_gives_the_same_hits() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write_lines(&input, &reuters(500));
    let (plain, sorted) = (t.path().join("plain"), t.path().join("sorted"));
    for (idx, extra) in [(&plain, vec![]), (&sorted, vec!["--index-sort", "id:desc"])] {
        ok(quarry()
            .args([
                "index",
                "-q",
                "--ram-mb",
                "16",
                "--threads",
                "2",
                "--schema",
            ])
            .arg(schema())
            .arg("--input")
            .arg(&input)
            .arg("--index")
            .arg(idx)
            .args(extra));
    }
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&sorted));
    assert!(inspect.contains("index sort: id:desc"), "{inspect}");
    assert!(inspect.contains("sorted by [id:desc]"), "{inspect}");
    let json = ok(quarry().args(["inspect", "--json", "--index"]).arg(&sorted));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["index_sort"], "id:desc");
    assert_eq!(v["segments"][0]["index_sort"], "id:desc");
    let check = ok(quarry().args(["check", "--index"]).arg(&sorted));
    assert!(check.contains("order of index sort [id:desc]"), "{check}");
    for sort in [&["id:desc"][..], &["id:asc"], &["date:desc", "id:desc"]] {
        assert_eq!(
            sorted_top(&sorted, sort),
            sorted_top(&plain, sort),
            "{sort:?}"
        );
    }
    // Appending keeps the index's sort; naming another one is refused.
    let more = t.path().join("more.jsonl");
    write_lines(&more, &reuters(520)[500..]);
    ok(quarry()
        .args(["index", "-q", "--append", "--input"])
        .arg(&more)
        .arg("--index")
        .arg(&sorted));
    let check = ok(quarry().args(["check", "--index"]).arg(&sorted));
    assert!(check.starts_with("ok: 520 docs"), "{check}");
    let out = run(quarry()
        .args([
            "index",
            "-q",
            "--append",
            "--index-sort",
            "id:asc",
            "--input",
        ])
        .arg(&more)
        .arg("--index")
        .arg(&sorted));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("fixed when the index is created"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn index_sort_on_a_field_without_a_column_or_with_a_bad_order_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("docs.jsonl");
    write_lines(&input, &reuters(5));
    for (spec, want) in [
        ("body", "text fields have no column"),
        ("nope:desc", "no such field"),
        ("id:down", "neither \"asc\" nor \"desc\""),
    ] {
        let idx = t.path().join("idx");
        let out = run(quarry()
            .args(["index", "-q", "--index-sort", spec, "--schema"])
            .arg(schema())
            .arg("--input")
            .arg(&input)
            .arg("--index")
            .arg(&idx));
        assert!(!out.status.success(), "{spec}");
        assert!(
            text(&out.stderr).contains(want),
            "{spec}: {}",
            text(&out.stderr)
        );
        assert!(!idx.join("commit_0000000001").exists());
    }
}
