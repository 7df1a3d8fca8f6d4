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

/// The `i`-th document's 128-dimensional vector: distinct, deterministic, not all integers.
fn nvs_vector(i: usize) -> Vec<f64> {
    (0..128)
        .map(|j| (((i * 131 + j * 17) % 101) as f64 - 50.0) / 64.0)
        .collect()
}

/// A `.npy` file (format 1.0) of `values` as `descr` with `shape`.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

/// native-vector-store's layout: `*.json` files of one object or an array of objects
/// `{"id", "text", "metadata": {"embedding": [...]}}`, pretty-printed or not.
fn nvs_dir(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let doc = |i: usize| {
        json!({"id": format!("doc-{i}"), "text": format!("document {i} about {}", if i.is_multiple_of(2) { "wheat" } else { "oil" }),
               "metadata": {"embedding": nvs_vector(i), "source": "test"}})
    };
    // b.json: a pretty-printed array; a.json: a one-line array; c.json: one pretty object;
    // d.json: JSON Lines (still read line by line).
    let b: Vec<Value> = (3..7).map(doc).collect();
    std::fs::write(
        dir.join("b.json"),
        serde_json::to_string_pretty(&b).unwrap(),
    )
    .unwrap();
    let a: Vec<Value> = (0..3).map(doc).collect();
    std::fs::write(dir.join("a.json"), serde_json::to_string(&a).unwrap()).unwrap();
    std::fs::write(
        dir.join("c.json"),
        serde_json::to_string_pretty(&doc(7)).unwrap(),
    )
    .unwrap();
    let d: Vec<String> = (8..10).map(|i| doc(i).to_string()).collect();
    common::write_lines(&dir.join("d.json"), &d);
    std::fs::write(dir.join("notes.txt"), "not an input").unwrap();
}

#[test]
fn native_vector_store_directory_with_an_inferred_vector_field() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("nvs");
    nvs_dir(&input);
    let idx = tmp.path().join("idx");
    let out = run(quarry()
        .args(["index", "--threads", "1", "--read-threads", "1", "--input"])
        .arg(&input)
        .arg("--index")
        .arg(&idx));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(r#""name": "metadata.embedding""#)
            && err.contains(r#""type": "vector""#)
            && err.contains(r#""dims": 128"#)
            && err.contains(r#""similarity": "cosine""#),
        "{err}"
    );
    assert!(
        err.contains(r#"field "metadata.embedding": arrays of 128 numbers, inferred as a vector field (cosine, float32, hnsw"#),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("indexed 10 docs"),
        "{}",
        text(&out.stdout)
    );
    // Files in name order, each file's documents in order.
    let all: Value = serde_json::from_str(
        ok(quarry()
            .args(["search", "--json", "--index"])
            .arg(&idx)
            .args(["--sort", "_doc", "-k", "20", "*:*"]))
        .trim(),
    )
    .unwrap();
    let ids: Vec<&str> = all["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["doc"]["id"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (0..10).map(|i| format!("doc-{i}")).collect();
    assert_eq!(ids, want);

    // --vector-file: a JSON array, or a .npy of float32 or float64.
    let q = nvs_vector(5);
    let json_file = tmp.path().join("q.json");
    std::fs::write(&json_file, serde_json::to_string_pretty(&q).unwrap()).unwrap();
    let f32s: Vec<u8> = q.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
    let f64s: Vec<u8> = q.iter().flat_map(|&x| x.to_le_bytes()).collect();
    let npy32 = tmp.path().join("q32.npy");
    std::fs::write(&npy32, npy("<f4", "(128,)", &f32s)).unwrap();
    let npy64 = tmp.path().join("q64.npy");
    std::fs::write(&npy64, npy("<f8", "(128,)", &f64s)).unwrap();
    let inline = serde_json::to_string(&q).unwrap();
    let search = |args: &[&str], file: Option<&std::path::Path>| -> Value {
        let mut cmd = quarry();
        cmd.args(["search", "--json", "--index"])
            .arg(&idx)
            .args(["--knn", "metadata.embedding", "-k", "3"])
            .args(args);
        if let Some(f) = file {
            cmd.arg("--vector-file").arg(f);
        }
        serde_json::from_str(ok(&mut cmd).trim()).unwrap()
    };
    let want = search(&["--vector", &inline, "--exact"], None);
    assert_eq!(want["top"][0]["doc"]["id"], "doc-5");
    assert_eq!(want["top"].as_array().unwrap().len(), 3);
    for f in [&json_file, &npy32, &npy64] {
        assert_eq!(search(&["--exact"], Some(f)), want, "{}", f.display());
    }
    let hybrid = search(&["--hybrid", "wheat"], Some(&npy32));
    assert_eq!(hybrid["top"].as_array().unwrap().len(), 3);

    // Bad vector files are errors naming the file.
    let bad = [
        ("2d.npy", npy("<f4", "(2, 64)", &f32s), "1-D"),
        ("int.npy", npy("<i8", "(128,)", &f64s), "float32"),
        ("short.npy", npy("<f4", "(128,)", &f32s[..100]), "bytes"),
        ("obj.json", b"{\"v\": 1}".to_vec(), "JSON array"),
        ("len.json", b"[1.0, 2.0]".to_vec(), "128 dimensions"),
    ];
    for (name, bytes, want) in bad {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = run(quarry()
            .args(["search", "--index"])
            .arg(&idx)
            .args(["--knn", "metadata.embedding", "--vector-file"])
            .arg(&p));
        assert!(!out.status.success(), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
        if want != "128 dimensions" {
            assert!(err.contains(name), "{name}: {err}");
        }
    }
    let out = run(quarry()
        .args(["search", "--index"])
        .arg(&idx)
        .args([
            "--knn",
            "metadata.embedding",
            "--vector",
            "[1]",
            "--vector-file",
        ])
        .arg(&npy32));
    assert!(!out.status.success());
}

#[test]
fn bad_native_vector_store_files_name_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("nvs");
    nvs_dir(&input);
    // A vector of the wrong length in the second object of a pretty-printed array: its line.
    let mut b: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(input.join("b.json")).unwrap()).unwrap();
    b[1]["metadata"]["embedding"] = json!([0.5, 0.25]);
    let pretty = serde_json::to_string_pretty(&b).unwrap();
    let line = 1 + pretty
        .lines()
        .position(|l| l.contains("\"doc-4\""))
        .unwrap()
        - 1; // the object's "{" is on the line before its first key ("id")
    std::fs::write(input.join("b.json"), &pretty).unwrap();
    let schema = tmp.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "id", "type": "keyword"}, {"name": "text", "type": "text"},
            {"name": "metadata.embedding", "type": "vector", "dims": 128},
            {"name": "metadata.source", "type": "keyword"}]}"#,
    )
    .unwrap();
    let idx = tmp.path().join("idx");
    let index = |extra: &[&str]| {
        run(quarry()
            .args(["index", "--quiet", "--read-threads", "1", "--input"])
            .arg(&input)
            .arg("--index")
            .arg(&idx)
            .arg("--schema")
            .arg(&schema)
            .args(extra))
    };
    let out = index(&[]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("b.json: line {line}:"))
            && err.contains("\"metadata.embedding\"")
            && err.contains("128 dimensions"),
        "line {line}: {err}"
    );
    let out = index(&["--skip-bad"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("indexed 9 docs (1 skipped)"),
        "{}",
        text(&out.stdout)
    );

    // A .json file of JSON Lines keeps its line-by-line reading: a malformed line is skipped.
    let d = format!("{{not json\n{}\n", json!({"id": "doc-9", "text": "oil"}));
    std::fs::write(input.join("d.json"), d).unwrap();
    let out = index(&["--skip-bad", "--overwrite"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("indexed 8 docs (2 skipped)"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("d.json: line 1"),
        "{}",
        text(&out.stderr)
    );

    // Malformed JSON in an array file stops the run with the file, line and object.
    std::fs::write(
        input.join("b.json"),
        "[\n  {\"id\": \"x\"},\n  {\"id\": \"y\"\n  {\"id\": \"z\"}\n]",
    )
    .unwrap();
    let out = index(&["--overwrite"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("b.json: line 4 (object 2 of the array)") && err.contains("malformed JSON"),
        "{err}"
    );
    std::fs::write(input.join("b.json"), "[{\"id\": \"x\"} {\"id\": \"y\"}]").unwrap();
    let err = text(&index(&["--overwrite"]).stderr);
    assert!(
        err.contains("b.json: line 1") && err.contains("expected ',' or ']' after object 1"),
        "{err}"
    );
    std::fs::write(input.join("b.json"), "[{\"id\": \"x\"},").unwrap();
    let err = text(&index(&["--overwrite"]).stderr);
    assert!(
        err.contains("b.json") && err.contains("missing ']'"),
        "{err}"
    );
}
