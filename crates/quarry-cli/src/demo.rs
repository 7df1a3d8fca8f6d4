//! `quarry demo`: index the bundled Reuters corpus and run the seed and Reuters query sets,
//! printing hit counts, top titles and latencies.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use quarry::{Index, SearchMode};
use serde_json::Value;

use crate::index_cmd::{self, IndexArgs};

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// The corpus (default: data/reuters21578.jsonl.zst of this repository).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Where to build the index (replaced if it exists).
    #[arg(long, default_value = "target/demo-index")]
    pub index: PathBuf,
    /// Query file with {"query": ...} lines (default: tests/fixtures/reuters-queries-public.jsonl).
    #[arg(long)]
    pub queries: Option<PathBuf>,
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timed repetitions per query (the median is printed).
    #[arg(long, default_value_t = 50)]
    pub repeat: usize,
}

const SEED: [&str; 11] = [
    "dollar",
    "oil",
    "trade",
    "oil AND price",
    "trade OR export",
    "oil OR trade OR market OR price OR dollar",
    "oil OR trade OR market OR price OR dollar OR export OR bank OR government OR company OR president",
    "\"oil prices\"",
    "\"interest rates\"",
    "\"to be or not to be\"",
    "to AND be AND or AND not",
];

fn repo_file(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        return local;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(rel)
}

pub fn run(args: &DemoArgs) -> Result<()> {
    let input = args
        .input
        .clone()
        .unwrap_or_else(|| repo_file("data/reuters21578.jsonl.zst"));
    let schema_path = repo_file("data/reuters-schema.json");
    println!("indexing {} ...", input.display());
    let s = index_cmd::run(&IndexArgs {
        input: input.clone(),
        index: args.index.clone(),
        schema: Some(schema_path),
        threads: args.threads,
        ram_mb: 512,
        skip_bad: false,
        append: false,
        key: None,
        overwrite: true,
        force_merge: None,
        directory: quarry::DirectoryKind::Mmap,
        read_mode: crate::input::ReadMode::Auto,
        mmap_min: crate::input::MmapRange::DEFAULT.min,
        mmap_max: crate::input::MmapRange::DEFAULT.max,
        read_threads: None,
        dry_run: false,
        quiet: true,
        index_sort: Vec::new(),
    })?;
    println!(
        "indexed {} docs into {} segment(s), {:.1} MB, in {:.2} s ({:.0} docs/s, documents read and parsed inside the timing)\n",
        s.docs,
        s.segments,
        s.bytes as f64 / 1e6,
        s.seconds,
        s.docs as f64 / s.seconds
    );
    let t = Instant::now();
    let index = Index::open(&args.index)?;
    let searcher = index.searcher();
    println!(
        "opened the index in {:.0} µs\n",
        t.elapsed().as_secs_f64() * 1e6
    );

    let qpath = args
        .queries
        .clone()
        .unwrap_or_else(|| repo_file("tests/fixtures/reuters-queries-public.jsonl"));
    let text = std::fs::read_to_string(&qpath)
        .with_context(|| format!("cannot read {}", qpath.display()))?;
    let mut queries: Vec<String> = SEED.iter().map(|s| s.to_string()).collect();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{}: line {}", qpath.display(), i + 1))?;
        queries.push(
            v["query"]
                .as_str()
                .with_context(|| format!("{}: line {}: no \"query\"", qpath.display(), i + 1))?
                .to_string(),
        );
    }
    println!(
        "{:<58} {:>6} {:>9}  top title",
        "query (default field body)", "hits", "p50 µs"
    );
    let mut medians = Vec::new();
    for q in &queries {
        let query = searcher.parse_query(q, &["body"])?;
        let res = searcher.search(&query, 10, SearchMode::TopCount)?;
        let mut times = Vec::with_capacity(args.repeat);
        for _ in 0..args.repeat.max(1) {
            let t = Instant::now();
            let r = searcher.search(&query, 10, SearchMode::TopCount)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(r);
        }
        times.sort_by(f64::total_cmp);
        let p50 = times[times.len() / 2];
        medians.push(p50);
        let title = match res.top.first() {
            Some(h) => searcher
                .stored_fields(h.doc)?
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            None => String::new(),
        };
        let shown: String = q.chars().take(58).collect();
        println!(
            "{shown:<58} {:>6} {p50:>9.1}  {}",
            res.total_hits,
            title.chars().take(50).collect::<String>()
        );
    }
    medians.sort_by(f64::total_cmp);
    println!(
        "\n{} queries, mode top_count (top 10 + exact count), single thread, {} repetitions each after one warm-up run;\nmedian of the per-query medians: {:.1} µs (a laptop-style demo, not the benchmark: see bench/README.md)",
        queries.len(),
        args.repeat,
        medians[medians.len() / 2]
    );
    Ok(())
}
