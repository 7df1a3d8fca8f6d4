//! `quarry models add|list`, `quarry index` embedding a text field with a registered model, and
//! `quarry search --semantic`. Needs the model (`QUARRY_TEST_MODEL_DIR`, set by
//! scripts/test.sh from scripts/fetch-model.sh); without it the model-running tests say they
//! skipped, except under CI, where they fail.
mod common;

use common::{ok, quarry, run, text};
use std::path::Path;

use serde_json::Value;

fn model_dir(test: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os("QUARRY_TEST_MODEL_DIR") {
        Some(d) => Some(d.into()),
        None if std::env::var_os("CI").is_some() => {
            panic!("{test}: QUARRY_TEST_MODEL_DIR is not set under CI (scripts/test.sh sets it)")
        }
        None => {
            eprintln!("{test}: SKIPPED: set QUARRY_TEST_MODEL_DIR (bash scripts/fetch-model.sh prints it)");
            None
        }
    }
}

const SCHEMA: &str = r#"{"fields": [
    {"name": "id", "type": "integer"},
    {"name": "title", "type": "text", "stored": true},
    {"name": "body", "type": "text", "stored": true},
    {"name": "emb", "type": "vector", "dims": 384, "stored": false,
     "embed": {"from": "body", "model": "minilm"}}]}"#;

/// `quarry index --quiet` of `input` into `idx` with `schema`.
fn index(input: &Path, idx: &Path, schema: &Path) -> std::process::Output {
    run(quarry()
        .args(["index", "--quiet", "--input"])
        .arg(input)
        .arg("--index")
        .arg(idx)
        .arg("--schema")
        .arg(schema))
}

#[test]
fn models_add_index_and_semantic_search() {
    let Some(model) = model_dir("models_add_index_and_semantic_search") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("idx");
    let out = ok(quarry()
        .args(["models", "add", "minilm"])
        .arg(&model)
        .arg("--index")
        .arg(&idx));
    assert!(
        out.contains("model minilm added") && out.contains("384 dims"),
        "{out}"
    );
    let out = ok(quarry().args(["models", "list", "--index"]).arg(&idx));
    assert!(
        out.starts_with("minilm: 384 dims, 256 word pieces"),
        "{out}"
    );

    let schema = tmp.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let input = tmp.path().join("docs.jsonl");
    let docs: Vec<String> = common::reuters(150)
        .iter()
        .map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            serde_json::json!({"id": d["id"], "title": d["title"], "body": d["body"]}).to_string()
        })
        .collect();
    common::write_lines(&input, &docs);
    let out = index(&input, &idx, &schema);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("indexed 150 docs"));

    // A question about cocoa finds the cocoa stories (Reuters 1 is "BAHIA COCOA REVIEW").
    let out = ok(quarry()
        .args(["search", "--json", "--index"])
        .arg(&idx)
        .args(["--semantic", "emb", "-k", "5", "cocoa harvest in Brazil"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let titles: Vec<String> = v["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["doc"]["title"].as_str().unwrap_or("").to_lowercase())
        .collect();
    assert_eq!(titles.len(), 5);
    assert!(titles[0].contains("cocoa"), "{titles:?}");
    assert!(
        v["query"].as_str().unwrap().starts_with("semantic emb"),
        "{v}"
    );

    // Hybrid with a text query, and a filter.
    let out = ok(quarry()
        .args(["search", "--json", "--index"])
        .arg(&idx)
        .args(["--semantic", "emb", "-k", "3", "cocoa harvest in Brazil"])
        .args(["--hybrid", "cocoa", "--filter", "title:cocoa"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let top = v["top"].as_array().unwrap();
    assert!(!top.is_empty(), "{v}");
    for h in top {
        let title = h["doc"]["title"].as_str().unwrap().to_lowercase();
        assert!(
            title.contains("cocoa"),
            "the filter lets only cocoa titles through: {title}"
        );
    }

    // --semantic on a field without a model says so.
    let out =
        run(quarry()
            .args(["search", "--index"])
            .arg(&idx)
            .args(["--semantic", "body", "cocoa"]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--semantic body") && err.contains("no embedding model"),
        "{err}"
    );
}

#[test]
fn bad_models_and_schemas_are_refused_with_their_names() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("idx");
    // Not a model directory.
    let out = run(quarry()
        .args(["models", "add", "m"])
        .arg(tmp.path())
        .arg("--index")
        .arg(&idx));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("config.json is missing"), "{err}");
    // A bad name.
    let out = run(quarry()
        .args(["models", "add", "../x"])
        .arg(tmp.path())
        .arg("--index")
        .arg(&idx));
    assert!(text(&out.stderr).contains("model name \"../x\""));
    // An `embed` whose source is missing.
    let schema = tmp.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m"}}]}"#,
    )
    .unwrap();
    let input = tmp.path().join("docs.jsonl");
    common::write_lines(&input, &[r#"{"v": [1, 2, 3, 4]}"#.to_string()]);
    let out = index(&input, &idx, &schema);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("\"from\" names \"body\""), "{err}");
    // A model that was never registered: the first document to embed says how to add it.
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "body", "type": "text"},
            {"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m"}}]}"#,
    )
    .unwrap();
    common::write_lines(&input, &[r#"{"body": "oil"}"#.to_string()]);
    let out = index(&input, &idx, &schema);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("quarry models add m"), "{err}");
}
