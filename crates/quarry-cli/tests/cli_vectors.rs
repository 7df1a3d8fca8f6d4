//! `quarry index` with a vector field (bad vectors name their file, line and field) and
//! `quarry search --knn` (exact, filtered, hybrid, JSON output).
mod common;

use common::{ok, quarry, run, text};
use serde_json::{json, Value};

fn setup(tmp: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let schema = tmp.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [
            {"name": "id", "type": "integer"},
            {"name": "body", "type": "text", "stored": true},
            {"name": "emb", "type": "vector", "dims": 3, "similarity": "l2_norm",
             "index": {"type": "hnsw", "m": 8, "ef_construction": 50}}
        ]}"#,
    )
    .unwrap();
    let input = tmp.join("docs.jsonl");
    let mut lines = Vec::new();
    for i in 0..50 {
        let mut d = json!({"id": i, "body": if i % 2 == 0 { "even oil" } else { "odd gas" }});
        if i % 5 != 4 {
            d["emb"] = json!([i as f32, (i % 7) as f32, 1.0]);
        }
        lines.push(d.to_string());
    }
    common::write_lines(&input, &lines);
    (schema, input)
}

#[test]
fn knn_search_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (schema, input) = setup(tmp.path());
    let idx = tmp.path().join("idx");
    ok(quarry()
        .args(["index", "--quiet", "--threads", "1", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(&schema));
    let search = |extra: &[&str]| -> Value {
        let out = ok(quarry()
            .args(["search", "--json", "--index"])
            .arg(&idx)
            .args(["--knn", "emb", "--vector", "[10, 3, 1]", "-k", "3"])
            .args(extra));
        serde_json::from_str(out.trim()).unwrap()
    };
    let ids = |v: &Value| -> Vec<i64> {
        v["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["doc"]["id"].as_i64().unwrap())
            .collect()
    };
    // Document 10 is [10, 3, 1] itself; 11 ([11, 4, 1]) and 8 ([8, 1, 1]) are next.
    let v = search(&[]);
    assert_eq!(ids(&v), vec![10, 11, 8]);
    assert_eq!(v["top"][0]["score"], json!(1.0));
    assert_eq!(v["top"][0]["doc"]["emb"], json!([10.0, 3.0, 1.0]));
    assert_eq!(ids(&search(&["--exact"])), vec![10, 11, 8]);
    // 7 ([7, 0, 1]) and 13 ([13, 6, 1]) tie at distance² 18: index order.
    assert_eq!(
        ids(&search(&["--filter", "body:odd", "--num-candidates", "20"])),
        vec![11, 7, 13]
    );
    let v = search(&["--hybrid", "gas", "--fusion", "rrf"]);
    assert_eq!(v["top"].as_array().unwrap().len(), 3);
    assert_eq!(ids(&v)[0], 11, "first odd document nearest the vector");
    // Mistakes are reported, not panics.
    for (vector, want) in [
        ("[1, 2]", "3 dimensions"),
        ("[1, \"x\", 2]", "value 1"),
        ("{", "malformed JSON"),
    ] {
        let out = run(quarry()
            .args(["search", "--index"])
            .arg(&idx)
            .args(["--knn", "emb", "--vector", vector]));
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains(want), "{}", text(&out.stderr));
    }
    let human = ok(quarry().args(["search", "--index"]).arg(&idx).args([
        "--knn",
        "emb",
        "--vector",
        "[10, 3, 1]",
        "-k",
        "2",
    ]));
    assert!(human.starts_with("2 hits for \"knn emb\""), "{human}");
    let inspect = ok(quarry().args(["inspect", "--index"]).arg(&idx));
    assert!(
        inspect.contains("vectors [emb: 3 dims l2_norm, 40 vectors, hnsw m 8"),
        "{inspect}"
    );
    ok(quarry().args(["check", "--index"]).arg(&idx));
}

#[test]
fn a_bad_vector_names_its_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (schema, input) = setup(tmp.path());
    let mut lines: Vec<String> = std::fs::read_to_string(&input)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines[6] = r#"{"id": 100, "emb": [1, 2]}"#.into();
    lines[8] = r#"{"id": 101, "emb": [1, "two", 3]}"#.into();
    common::write_lines(&input, &lines);
    let idx = tmp.path().join("idx");
    let out = run(quarry()
        .args(["index", "--quiet", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(&schema));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("docs.jsonl: line 7")
            && err.contains("\"emb\"")
            && err.contains("3 dimensions"),
        "{err}"
    );
    let out = ok(quarry()
        .args(["index", "--quiet", "--skip-bad", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx)
        .arg("--schema")
        .arg(&schema));
    assert!(out.contains("indexed 48 docs (2 skipped)"), "{out}");
}
