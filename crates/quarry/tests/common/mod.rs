//! Shared helpers of the integration tests: the bundled Reuters corpus, the Lucene oracle, and
//! building an index from them.
#![allow(dead_code)]
use std::io::{BufRead, BufReader};
use std::path::Path;

use quarry::{DirectoryKind, Document, IndexWriter, MergePolicy, Schema, WriterOptions};
use serde_json::Value;

pub fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The bundled Reuters-21578 JSON lines.
pub fn reuters_lines() -> Vec<String> {
    let f =
        std::fs::File::open(root().join("data/reuters21578.jsonl.zst")).expect("bundled corpus");
    let r = BufReader::new(zstd::Decoder::new(f).expect("zstd"));
    r.lines().map(|l| l.expect("utf-8 line")).collect()
}

/// `id` integer, `title` and `body` text, all stored (the oracle's setup).
pub fn reuters_schema() -> Schema {
    Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build()
}

/// Indexes the Reuters lines (only id, title, body) into `dir`.
pub fn build_reuters(dir: &Path, lines: &[String], threads: usize, kind: DirectoryKind) {
    let schema = reuters_schema();
    let opts = WriterOptions {
        threads,
        directory: kind,
        merge_policy: MergePolicy::None,
        ..Default::default()
    };
    let mut w = IndexWriter::create(dir, schema.clone(), opts).unwrap();
    for line in lines {
        let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        let mut m = serde_json::Map::new();
        for k in ["id", "title", "body"] {
            if let Some(x) = v.get(k) {
                m.insert(k.to_string(), x.clone());
            }
        }
        w.add_document(Document::from_map(&schema, &m).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
}

/// Lines of the Lucene oracle: (stats, queries).
pub fn oracle() -> (Value, Vec<Value>) {
    oracle_file("lucene-reuters-oracle.jsonl")
}

/// Lines of an oracle file under tests/fixtures: (stats, queries).
pub fn oracle_file(name: &str) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(root().join("tests/fixtures").join(name)).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let stats = lines.next().unwrap();
    (stats, lines.collect())
}
