//! What does the warm check of read-path integrity (format v3 chunk checksums) cost, to within
//! a percent? An in-process, alternating A/B: one process, one opened index, the check switched
//! at run time ([`suspend_checks_for_measurement`]) between rounds over whole query classes.
//!
//! ```text
//! cargo build --release -p quarry --example integrity_ab
//! ./target/release/examples/integrity_ab INDEX_DIR QUERIES.txt [ROUNDS] [PER_CLASS] [DIRECTORY]
//! ```
//!
//! `QUERIES.txt`: JSON lines `{"query", "tags"}`, several files separated by commas, a query
//! kept once (W2: `shared/data/queries/queries.txt,shared/data/queries/query_term.txt`); the
//! class is the first tag (`negated`, `intersection_union`, `two-phase-critic` count as `mixed`);
//! `PER_CLASS` (default 0 = all) limits the queries per class; parsed on field `body`.
//!
//! Warm-up: two passes over every query with checks on, so every chunk the queries read is
//! verified (its bitmap bit set); A (checks on) then measures exactly the warm check, B (checks
//! suspended) skips it. Each of `ROUNDS` (default 30) rounds times every query once per arm and
//! mode (top10, top10_count), the two arms back to back, in the order AB or BA alternating by
//! round and query (drift and the second run's warmer caches cancel). Per round and
//! class: the geometric mean over the class's queries of time(A) / time(B). Reported per class:
//! the median of the round ratios, a 95% bootstrap interval of that median (2,000 resamples of
//! the rounds) and the minimum and maximum round ratio.
//!
//! First touch: fresh opens of the same index (page cache warm, bitmaps empty) alternately with
//! checks on and suspended, each timing one pass over every query in top10_count; reported as
//! the median pass time of each arm and their ratio.
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use quarry::index::verified::suspend_checks_for_measurement;
use quarry::{DirectoryKind, Index, SearchMode};
use serde_json::Value;

fn load_queries(paths: &str, per_class: usize) -> Vec<(String, String)> {
    let mut text = String::new();
    for path in paths.split(',') {
        text += &std::fs::read_to_string(path).expect("queries file");
        text.push('\n');
    }
    let mut seen = std::collections::HashSet::new();
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
        let query = v["query"].as_str().expect("query").to_string();
        if !seen.insert(query.clone()) {
            continue;
        }
        let n = count.entry(class.clone()).or_default();
        if per_class == 0 || *n < per_class {
            *n += 1;
            out.push((class, query));
        }
    }
    out
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A 95% bootstrap interval of the median of `v` (2,000 resamples, a fixed xorshift seed).
fn bootstrap(v: &[f64]) -> (f64, f64) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut medians: Vec<f64> = (0..2000)
        .map(|_| {
            let mut s: Vec<f64> = (0..v.len())
                .map(|_| v[(next() % v.len() as u64) as usize])
                .collect();
            median(&mut s)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    (medians[50], medians[1949])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: integrity_ab INDEX_DIR QUERIES.txt [ROUNDS] [PER_CLASS] [DIRECTORY]");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let rounds: usize = args.get(3).map_or(30, |a| a.parse().expect("ROUNDS"));
    let per_class: usize = args.get(4).map_or(0, |a| a.parse().expect("PER_CLASS"));
    let kind: DirectoryKind = args
        .get(5)
        .map_or(Ok(DirectoryKind::Mmap), |a| a.parse())
        .expect("DIRECTORY");
    let queries = load_queries(&args[2], per_class);
    let modes = [
        (SearchMode::Top, "top10"),
        (SearchMode::TopCount, "top10_count"),
    ];

    // First touch: fresh opens, alternately checked and suspended (page cache warmed first).
    let pass = |checked: bool| -> f64 {
        suspend_checks_for_measurement(!checked);
        let index = Index::open_with(dir, kind).expect("open");
        let s = index.searcher();
        let parsed: Vec<_> = queries
            .iter()
            .map(|(_, q)| s.parse_query(q, &["body"]).expect("parse"))
            .collect();
        let t = Instant::now();
        for q in &parsed {
            s.search(q, 10, SearchMode::TopCount).expect("search");
        }
        let secs = t.elapsed().as_secs_f64();
        suspend_checks_for_measurement(false);
        secs
    };
    pass(false);
    let (mut first_on, mut first_off) = (Vec::new(), Vec::new());
    for i in 0..6 {
        if i % 2 == 0 {
            first_on.push(pass(true));
            first_off.push(pass(false));
        } else {
            first_off.push(pass(false));
            first_on.push(pass(true));
        }
    }

    let index = Index::open_with(dir, kind).expect("open");
    let s = index.searcher();
    let parsed: Vec<_> = queries
        .iter()
        .map(|(c, q)| (c.clone(), s.parse_query(q, &["body"]).expect("parse")))
        .collect();
    for _ in 0..2 {
        for (mode, _) in modes {
            for (_, q) in &parsed {
                s.search(q, 10, mode).expect("search");
            }
        }
    }
    // ratios[mode/class] = one geomean ratio per round.
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut times_a: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in 0..rounds {
        // log time per (mode/class) and arm, summed over the class's queries.
        let mut logs: BTreeMap<String, [f64; 2]> = BTreeMap::new();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for (mode, name) in modes {
            for (i, (c, q)) in parsed.iter().enumerate() {
                let key = format!("{name}/{c}");
                // Each query twice back to back, A then B or B then A by round and query.
                let first_checked = (r + i) % 2 == 0;
                for checked in [first_checked, !first_checked] {
                    suspend_checks_for_measurement(!checked);
                    let t = Instant::now();
                    s.search(q, 10, mode).expect("search");
                    let secs = t.elapsed().as_secs_f64().max(1e-9);
                    logs.entry(key.clone()).or_default()[usize::from(!checked)] += secs.ln();
                }
                *counts.entry(key).or_default() += 1;
            }
        }
        suspend_checks_for_measurement(false);
        for (key, [a, b]) in logs {
            let n = counts[&key] as f64;
            ratios
                .entry(key.clone())
                .or_default()
                .push(((a - b) / n).exp());
            times_a.entry(key).or_default().push((a / n).exp() * 1e6);
        }
    }

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{} queries, {rounds} rounds, directory {kind}; load average at the end: {}",
        queries.len(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!("| class | queries | geomean µs (A) | median A/B | 95% interval | min | max |");
    println!("|---|---:|---:|---:|---|---:|---:|");
    for (key, mut v) in ratios {
        let n = queries
            .iter()
            .filter(|(c, _)| key.ends_with(&format!("/{c}")))
            .count();
        let (lo, hi) = bootstrap(&v);
        let (min, max) = (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        );
        let med = median(&mut v);
        let ta = median(times_a.get_mut(&key).expect("times"));
        println!("| {key} | {n} | {ta:.1} | {med:.4} | {lo:.4}-{hi:.4} | {min:.4} | {max:.4} |");
    }
    let on = median(&mut first_on);
    let off = median(&mut first_off);
    println!(
        "| first pass of a fresh open, top10_count (first touch; median of 6, s) | {} | {on:.4} / {off:.4} | {:.4} | | | |",
        queries.len(),
        on / off
    );
}
