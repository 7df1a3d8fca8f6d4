//! Helpers shared by the CLI integration tests: the `quarry` binary, the bundled Reuters corpus
//! and schema, and running a command that must succeed.
#![allow(dead_code)]
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn quarry() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
}

pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The first `n` lines of the bundled Reuters corpus.
pub fn reuters(n: usize) -> Vec<String> {
    let f = std::fs::File::open(root().join("data/reuters21578.jsonl.zst")).unwrap();
    BufReader::new(zstd::Decoder::new(f).unwrap())
        .lines()
        .take(n)
        .map(|l| l.unwrap())
        .collect()
}

pub fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

pub fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

/// Runs `cmd`, asserts it succeeded, and returns its standard output.
pub fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "command failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn schema() -> PathBuf {
    root().join("data/reuters-schema.json")
}

/// The exact hit count of `q` in `index` (`quarry search --mode count`).
pub fn count(index: &Path, q: &str) -> u64 {
    let out = ok(quarry()
        .args(["search", "--json", "--mode", "count", "--index"])
        .arg(index)
        .arg(q));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    v["hits"].as_u64().unwrap()
}
