//! How does the stored-fields block size trade size for fetch time? Cuts the documents of a JSONL
//! corpus (`id`, `title`, `body`, as W2's) into blocks of each target size, compresses every block
//! with zstd level 1 (the `.store` codec) and reports the compressed fraction and the time to
//! decompress one block (what fetching one hit costs), warm, single thread.
//!
//!     cargo run --release -p quarry --example stored_blocks -- \
//!         bench/results/tmp/w2/docs.jsonl 300000 4096 8192 16384
use std::io::BufRead;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, docs) = (&args[0], args[1].parse::<usize>().expect("document count"));
    let targets: Vec<usize> = args[2..].iter().map(|a| a.parse().expect("size")).collect();
    let mut raw_docs = Vec::new();
    let file = std::fs::File::open(path).expect("corpus");
    for line in std::io::BufReader::new(file).lines().take(docs) {
        let v: serde_json::Value = serde_json::from_str(&line.expect("line")).expect("json");
        let mut d = v["id"].as_i64().unwrap_or(0).to_le_bytes().to_vec();
        for f in ["title", "body"] {
            d.extend_from_slice(v[f].as_str().unwrap_or("").as_bytes());
        }
        raw_docs.push(d);
    }
    for target in targets {
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        let mut cur = Vec::new();
        for d in &raw_docs {
            cur.extend_from_slice(d);
            if cur.len() >= target {
                blocks.push(std::mem::take(&mut cur));
            }
        }
        let raw: usize = blocks.iter().map(Vec::len).sum();
        let packed: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| zstd::bulk::compress(b, 1).expect("compress"))
            .collect();
        let size: usize = packed.iter().map(Vec::len).sum();
        let mut d = zstd::bulk::Decompressor::new().expect("context");
        let n = blocks.len().min(3000);
        let t = Instant::now();
        for _ in 0..3 {
            for (p, b) in packed.iter().zip(&blocks).take(n) {
                std::hint::black_box(d.decompress(p, b.len()).expect("decompress"));
            }
        }
        let per = t.elapsed().as_secs_f64() * 1e6 / (3 * n) as f64;
        println!(
            "target {target:>6} B: {} blocks, compressed {:.3} of raw, {per:.2} µs to decompress a block",
            blocks.len(),
            size as f64 / raw as f64
        );
    }
}
