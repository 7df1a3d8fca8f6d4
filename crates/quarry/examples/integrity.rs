//! What does read-path integrity (format v3 chunk checksums) cost? Compares per-class search
//! latency with verification on and off (`QUARRY_VERIFY_CHUNKS=0`) in alternating fresh child
//! processes, the first query of a fresh process (first touch), and a whole-index scrub's MB/s.
//!
//! ```text
//! cargo run --release -p quarry --example integrity -- INDEX_DIR QUERIES.txt [PAIRS] [PER_CLASS] [DIRECTORY]
//! ```
//!
//! `QUERIES.txt`: JSON lines `{"query", "tags"}` (W2's `shared/data/queries/queries.txt`); the
//! class is the first tag (`negated`, `intersection_union`, `two-phase-critic` count as `mixed`);
//! the first `PER_CLASS` (default 20) queries of each class are used, parsed on field `body`.
//! Each child opens the index, times its first query (cold process, warm page cache), times one
//! pass over every query (first touch of their chunks), then 15 timed runs per query in modes top10 and top10_count; a class's
//! figure is the mean over its queries of the median run. `PAIRS` (default 5) pairs of children
//! (on, off) run alternately; the report gives per class the median and the minimum over
//! children, and on/off for each (the minimum resists a loaded machine better).
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use quarry::{DirectoryKind, Index, SearchMode};
use serde_json::Value;

type Classes = BTreeMap<String, f64>;

fn load_queries(path: &Path, per_class: usize) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).expect("queries file");
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let tag = v["tags"][0].as_str().unwrap_or("mixed");
        let class = match tag {
            "negated" | "intersection_union" | "two-phase-critic" => "mixed",
            t => t,
        }
        .to_string();
        let n = count.entry(class.clone()).or_default();
        if *n < per_class {
            *n += 1;
            out.push((class, v["query"].as_str().expect("query").to_string()));
        }
    }
    out
}

/// One fresh process: first query, then per (class, mode) the mean of per-query medians (µs).
fn child(dir: &Path, queries: &[(String, String)], kind: DirectoryKind) -> Value {
    let t = Instant::now();
    let index = Index::open_with(dir, kind).expect("open");
    let s = index.searcher();
    let q0 = s.parse_query(&queries[0].1, &["body"]).expect("parse");
    s.search(&q0, 10, SearchMode::Top).expect("search");
    let first_us = t.elapsed().as_secs_f64() * 1e6;
    let parsed: Vec<_> = queries
        .iter()
        .map(|(c, q)| (c, s.parse_query(q, &["body"]).expect("parse")))
        .collect();
    let t = Instant::now();
    for (_, q) in &parsed {
        s.search(q, 10, SearchMode::TopCount).expect("search");
    }
    let first_pass_us = t.elapsed().as_secs_f64() * 1e6;
    let mut classes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (mode, name) in [
        (SearchMode::Top, "top10"),
        (SearchMode::TopCount, "top10_count"),
    ] {
        for (c, q) in &parsed {
            let mut runs: Vec<f64> = (0..15)
                .map(|_| {
                    let t = Instant::now();
                    s.search(q, 10, mode).expect("search");
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            classes
                .entry(format!("{name}/{c}"))
                .or_default()
                .push(runs[runs.len() / 2]);
        }
    }
    let classes: Classes = classes
        .into_iter()
        .map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64))
        .collect();
    serde_json::json!({"first_us": first_us, "first_pass_us": first_pass_us, "classes": classes})
}

/// A fresh process that scrubs the whole index: (bytes, seconds).
fn scrub(dir: &Path, kind: DirectoryKind) -> Value {
    let index = Index::open_with(dir, kind).expect("open");
    let bytes: u64 = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            [".terms", ".post", ".pos", ".norms", ".store"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    let t = Instant::now();
    index.scrub().expect("scrub");
    serde_json::json!({"bytes": bytes, "secs": t.elapsed().as_secs_f64()})
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: integrity INDEX_DIR QUERIES.txt [PAIRS] [PER_CLASS] [DIRECTORY]");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let qpath = Path::new(&args[2]);
    let pairs: usize = args.get(3).map_or(5, |a| a.parse().expect("PAIRS"));
    let per_class: usize = args.get(4).map_or(20, |a| a.parse().expect("PER_CLASS"));
    let kind: DirectoryKind = args
        .get(5)
        .map_or(Ok(DirectoryKind::Mmap), |a| a.parse())
        .expect("DIRECTORY");
    match std::env::var("INTEGRITY_CHILD").as_deref() {
        Ok("search") => {
            println!("{}", child(dir, &load_queries(qpath, per_class), kind));
            return;
        }
        Ok("scrub") => {
            println!("{}", scrub(dir, kind));
            return;
        }
        _ => {}
    }
    let run = |role: &str, verify: bool| -> Value {
        let out = Command::new(&args[0])
            .args(&args[1..])
            .env("INTEGRITY_CHILD", role)
            .env("QUARRY_VERIFY_CHUNKS", if verify { "1" } else { "0" })
            .output()
            .expect("spawn child");
        assert!(out.status.success(), "child failed: {out:?}");
        serde_json::from_slice(&out.stdout).expect("child JSON")
    };
    let mut on: Vec<Value> = Vec::new();
    let mut off: Vec<Value> = Vec::new();
    for _ in 0..pairs {
        on.push(run("search", true));
        off.push(run("search", false));
    }
    let class_of = |vs: &[Value], k: &str| -> Vec<f64> {
        vs.iter()
            .map(|v| v["classes"][k].as_f64().unwrap())
            .collect()
    };
    let min = |v: Vec<f64>| v.into_iter().fold(f64::INFINITY, f64::min);
    let first = |vs: &[Value], k: &str| median(vs.iter().map(|v| v[k].as_f64().unwrap()).collect());
    println!("directory {kind}, {pairs} pairs of fresh processes (verification on / off), median of processes");
    println!();
    println!("| class | on (µs) | off (µs) | on/off | min on | min off | min on/off |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let keys: Vec<String> = on[0]["classes"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    for k in keys {
        let (a, b) = (median(class_of(&on, &k)), median(class_of(&off, &k)));
        let (c, d) = (min(class_of(&on, &k)), min(class_of(&off, &k)));
        println!(
            "| {k} | {a:.1} | {b:.1} | {:.3} | {c:.1} | {d:.1} | {:.3} |",
            a / b,
            c / d
        );
    }
    let (a, b) = (first(&on, "first_us"), first(&off, "first_us"));
    println!(
        "| first query of a fresh process (open + query) | {a:.0} | {b:.0} | {:.3} | | | |",
        a / b
    );
    let (a, b) = (first(&on, "first_pass_us"), first(&off, "first_pass_us"));
    println!(
        "| first pass over all the queries (top10_count, first touch) | {a:.0} | {b:.0} | {:.3} | | | |",
        a / b
    );
    let s = run("scrub", true);
    let mb = s["bytes"].as_f64().unwrap() / 1e6;
    let secs = s["secs"].as_f64().unwrap();
    println!();
    println!(
        "scrub of the whole index in a fresh process: {mb:.1} MB in {secs:.3} s = {:.0} MB/s",
        mb / secs
    );
}
