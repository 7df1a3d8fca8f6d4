//! How long does highlighting the top 10 of a query take next to the search itself?
//!
//! ```sh
//! cargo run --release -p quarry --example highlight_bench -- INDEX QUERIES.txt [FIELD] [ROUNDS]
//! ```
//!
//! `QUERIES.txt` holds `{"query": "...", "tags": [...]}` lines (the search-benchmark-game's
//! `queries.txt`); each query is parsed against `FIELD` (default `body`), searched for its top
//! 10 (mode top), and its hits' `FIELD` highlighted with the default options (stored fields read
//! and re-analyzed). Per query the best of `ROUNDS` (default 5) is kept; the report gives, per
//! class (first tag), the p50 and mean of the search, of fetching the 10 hits' stored fields and
//! of highlighting them, in microseconds.
use std::collections::BTreeMap;
use std::time::Instant;

use quarry::highlight::{HighlightOptions, Highlighter};
use quarry::{Index, SearchMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(index), Some(queries)) = (args.first(), args.get(1)) else {
        return Err("usage: highlight_bench INDEX QUERIES.txt [FIELD] [ROUNDS]".into());
    };
    let field = args.get(2).map_or("body", String::as_str);
    let rounds: usize = args.get(3).map_or(Ok(5), |r| r.parse())?;
    let searcher = Index::open(std::path::Path::new(index))?.searcher();
    let opts = HighlightOptions::default();
    let fields = vec![(field.to_string(), opts)];
    // class -> (search, fetching the hits' stored fields, highlighting them) per query, in µs
    let mut by_class: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    let mut fragments = 0usize;
    for line in std::fs::read_to_string(queries)?.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)?;
        let text = v["query"].as_str().ok_or("a line without \"query\"")?;
        let class = v["tags"][0].as_str().unwrap_or("mixed").to_string();
        let query = searcher.parse_query(text, &[field])?;
        let (mut best_search, mut best_fetch, mut best_hl) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..rounds {
            let t = Instant::now();
            let res = searcher.search(&query, 10, SearchMode::Top)?;
            let search = t.elapsed().as_secs_f64() * 1e6;
            let t = Instant::now();
            let docs: Vec<_> = res.top.iter().map(|hit| hit.doc).collect();
            let docs = searcher.docs(&docs)?;
            let fetch = t.elapsed().as_secs_f64() * 1e6;
            let t = Instant::now();
            let h = Highlighter::new(&query, searcher.schema());
            let mut n = 0;
            for doc in docs {
                n += h
                    .highlight_doc(&doc, &fields)
                    .iter()
                    .map(|(_, f)| f.len())
                    .sum::<usize>();
            }
            let hl = t.elapsed().as_secs_f64() * 1e6;
            fragments = fragments.max(n);
            best_search = best_search.min(search);
            best_hl = best_hl.min(hl);
            best_fetch = best_fetch.min(fetch);
        }
        by_class
            .entry(class)
            .or_default()
            .push((best_search, best_fetch, best_hl));
    }
    println!(
        "{:<19} {:>7} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}   (µs per query, best of {rounds})",
        "class",
        "queries",
        "search p50",
        "search avg",
        "fetch p50",
        "fetch avg",
        "hl p50",
        "hl avg"
    );
    let mut all = Vec::new();
    for (class, v) in &by_class {
        print_row(class, v);
        all.extend_from_slice(v);
    }
    print_row("all", &all);
    println!("(at most {fragments} fragments for one query's 10 hits)");
    Ok(())
}

fn print_row(class: &str, v: &[(f64, f64, f64)]) {
    let p50 = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let s: Vec<f64> = v.iter().map(|x| x.0).collect();
    let f: Vec<f64> = v.iter().map(|x| x.1).collect();
    let h: Vec<f64> = v.iter().map(|x| x.2).collect();
    println!(
        "{class:<19} {:>7} {:>11.1} {:>11.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
        v.len(),
        p50(s.clone()),
        mean(&s),
        p50(f.clone()),
        mean(&f),
        p50(h.clone()),
        mean(&h)
    );
}
