//! `quarry-bench vectors`: dense-vector search on real sentence embeddings, quarry and its peers
//! in one run (issue 29, item 5).
//!
//! Flow: load the cached embeddings ([`data`]: all-MiniLM-L6-v2 vectors of Reuters or the W2
//! paragraphs and of the W1/W2 query texts, made by `scripts/vectors-embed.py`; or a synthetic
//! set for `--quick` and the tests), compute the exact top-k of every query (and of every
//! filtered query) by brute force, measure quarry in this process ([`quarry_engine`]: flat,
//! float32 HNSW, int8 HNSW), then the peers in their own processes ([`peers`]: FAISS, hnswlib,
//! usearch through `scripts/vectors-peers.py`; Lucene through the Java harness's `vectors`
//! mode; native-vector-store through `scripts/vectors-nvs.js`), all answering the same query
//! vectors one at a time on one thread; write the JSON record, the Markdown report and the
//! charts ([`report`]).

pub mod data;
pub mod peers;
#[cfg(feature = "quarry-driver")]
pub mod quarry_engine;
pub mod report;
#[cfg(all(test, feature = "quarry-driver"))]
mod tests;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde_json::{json, Value};

/// Arguments of `quarry-bench vectors`.
#[derive(Debug, Clone, clap::Args)]
pub struct VectorsArgs {
    /// The corpus: `reuters` (21,578 stories), `w2` (the W2 paragraphs embedded, 200,000 by
    /// default) or `synthetic` (clustered random unit vectors, no cache needed).
    #[arg(long, default_value = "reuters")]
    pub data: String,
    /// A smoke run: the first 3,000 documents and 50 queries (synthetic data when the cache is
    /// missing), quarry only unless --engines says otherwise.
    #[arg(long)]
    pub quick: bool,
    /// Engines, comma-separated: quarry, faiss-flat, faiss-hnsw, hnswlib, usearch, lucene, nvs.
    /// Default: all (quick: quarry).
    #[arg(long)]
    pub engines: Option<String>,
    /// Where the report, charts and JSON record go (default bench/results/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The embedding cache (default bench/results/tmp/vectors/).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Use only the first N documents of the set.
    #[arg(long)]
    pub docs: Option<usize>,
    /// Dimensions of `--data synthetic` (e.g. 1536 with --docs 100000: native-vector-store's
    /// headline case, as random vectors: no 1,536-dim model runs here).
    #[arg(long, default_value_t = 384)]
    pub dims: usize,
    /// Accept a set whose embedding is still running: its rows embedded so far.
    #[arg(long)]
    pub partial: bool,
    /// Use only the first N queries.
    #[arg(long)]
    pub queries: Option<usize>,
    /// Hits per query.
    #[arg(long, default_value_t = 10)]
    pub k: usize,
    /// HNSW neighbours per node (every engine).
    #[arg(long, default_value_t = 16)]
    pub m: usize,
    /// HNSW beam width while building (every engine).
    #[arg(long, default_value_t = 100)]
    pub ef_construction: usize,
    /// The sweep of num_candidates / ef at search time.
    #[arg(long, default_value = "10,20,40,80,160,320")]
    pub ef: String,
    /// num_candidates of the filtered searches.
    #[arg(long, default_value_t = 100)]
    pub filter_candidates: usize,
    /// The Python of scripts/vectors-venv.sh (default target/vectors-venv/bin/python).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The Lucene harness jar (default: built from bench/lucene when missing or stale).
    #[arg(long)]
    pub lucene_jar: Option<PathBuf>,
    /// The unpacked and built native-vector-store package (default target/nvs/package).
    #[arg(long)]
    pub nvs: Option<PathBuf>,
    /// The repository root (default: found from the binary or the working directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

impl VectorsArgs {
    pub fn ef_list(&self) -> Result<Vec<usize>> {
        self.ef
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| Ok(s.trim().parse::<usize>()?))
            .collect()
    }

    pub fn engine_list(&self) -> Vec<String> {
        let default = if self.quick {
            "quarry"
        } else {
            "quarry,faiss-flat,faiss-hnsw,hnswlib,usearch,lucene,nvs"
        };
        self.engines
            .as_deref()
            .unwrap_or(default)
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// Filter selectivities, percent of the documents.
pub const SELECTIVITIES: [u32; 3] = [1, 10, 50];

/// The exact top-k of every query (and of every filtered query), row numbers best first.
pub struct Truth {
    pub all: Vec<Vec<u32>>,
    /// Per selectivity of [`SELECTIVITIES`].
    pub filtered: Vec<Vec<Vec<u32>>>,
}

/// Recall@k of `got` (row numbers) against `want`, averaged over queries.
pub fn recall(got: &[Vec<u32>], want: &[Vec<u32>], k: usize) -> f64 {
    if want.is_empty() {
        return f64::NAN;
    }
    let mut hits = 0usize;
    let mut total = 0usize;
    for (g, w) in got.iter().zip(want) {
        let w = &w[..w.len().min(k)];
        total += w.len();
        hits += g.iter().take(k).filter(|x| w.contains(x)).count();
    }
    if total == 0 {
        1.0
    } else {
        hits as f64 / total as f64
    }
}

/// The brute-force top-k by dot product (the vectors are unit: cosine), ties to the lower row;
/// `accept` limits the rows considered.
pub fn exact_top_k(
    docs: &[f32],
    dims: usize,
    query: &[f32],
    k: usize,
    accept: &dyn Fn(usize) -> bool,
) -> Vec<u32> {
    let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
    for (row, v) in docs.chunks_exact(dims).enumerate() {
        if !accept(row) {
            continue;
        }
        let s: f32 = v.iter().zip(query).map(|(a, b)| a * b).sum();
        if best.len() == k && s <= best[k - 1].0 {
            continue;
        }
        let at = best.partition_point(|&(bs, _)| bs >= s);
        best.insert(at, (s, row as u32));
        best.truncate(k);
    }
    best.into_iter().map(|(_, r)| r).collect()
}

/// Exact answers of every query, on all cores.
pub fn truth(set: &data::VectorSet, k: usize) -> Truth {
    let dims = set.dims;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let run = |accept: &(dyn Fn(usize) -> bool + Sync)| -> Vec<Vec<u32>> {
        let nq = set.nq();
        let mut out = vec![Vec::new(); nq];
        let chunk = nq.div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for (i, slot) in out.chunks_mut(chunk).enumerate() {
                s.spawn(move || {
                    for (j, o) in slot.iter_mut().enumerate() {
                        let q = set.query(i * chunk + j);
                        *o = exact_top_k(&set.docs, dims, q, k, &|r| accept(r));
                    }
                });
            }
        });
        out
    };
    let all = run(&|_| true);
    let filtered = SELECTIVITIES
        .iter()
        .map(|&p| run(&|r| data::bucket(r) < p))
        .collect();
    Truth { all, filtered }
}

pub fn run(args: VectorsArgs) -> Result<()> {
    let repo = crate::orchestrator::find_repo(args.repo.clone())?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join("bench/results"));
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(|| repo.join("bench/results/tmp/vectors"));
    let record = measure(&args, &repo, &cache)?;
    std::fs::create_dir_all(&out_dir)?;
    let stem = format!(
        "{}-{}-vectors-{}{}",
        crate::orchestrator::today(),
        crate::orchestrator::git_head(&repo),
        record["data"]["name"].as_str().unwrap_or("set"),
        if args.quick { "-quick" } else { "" }
    );
    std::fs::write(
        out_dir.join(format!("{stem}.json")),
        serde_json::to_vec_pretty(&record)?,
    )?;
    let md = report::write(&record, &out_dir, &stem)?;
    eprintln!("[vectors] report: {}", md.display());
    Ok(())
}

/// Everything the run measures, as the JSON record the report is made from.
pub fn measure(args: &VectorsArgs, repo: &Path, cache: &Path) -> Result<Value> {
    let ef = args.ef_list()?;
    let engines = args.engine_list();
    let work = cache.join("work");
    std::fs::create_dir_all(&work)?;
    let set = data::load(args, cache, &work)?;
    eprintln!(
        "[vectors] {}: {} documents x {} dims, {} queries",
        set.name,
        set.n(),
        set.dims,
        set.nq()
    );
    let t = std::time::Instant::now();
    let truth = truth(&set, args.k);
    let truth_seconds = t.elapsed().as_secs_f64();
    let truth_path = work.join("truth.u32");
    {
        let mut bytes = Vec::with_capacity(set.nq() * args.k * 4);
        for row in &truth.all {
            for i in 0..args.k {
                bytes.extend_from_slice(&row.get(i).copied().unwrap_or(u32::MAX).to_le_bytes());
            }
        }
        std::fs::write(&truth_path, bytes)?;
    }
    let bandwidth = report::bandwidth(set.docs.len() * 4);
    let mut results: Vec<Value> = Vec::new();
    let mut skipped: Vec<Value> = Vec::new();
    for engine in &engines {
        eprintln!("[vectors] {engine}");
        let outcome = match engine.as_str() {
            "quarry" => quarry(args, &set, &truth, &ef, &work),
            "faiss-flat" | "faiss-hnsw" | "hnswlib" | "usearch" => {
                peers::python(args, repo, engine, &set, &truth_path, &ef, &work)
            }
            "lucene" => peers::lucene(args, repo, &set, &truth, &ef, &work),
            "nvs" => peers::nvs(args, repo, &set, &truth, &work),
            other => bail!(
                "unknown engine {other:?} (quarry, faiss-flat, faiss-hnsw, hnswlib, usearch, \
                 lucene, nvs)"
            ),
        };
        match outcome {
            Ok(mut recs) => results.append(&mut recs),
            Err(e) => {
                eprintln!("[vectors] {engine} skipped: {e:#}");
                skipped.push(json!({"engine": engine, "reason": format!("{e:#}")}));
            }
        }
    }
    Ok(json!({
        "suite": "vectors",
        "date": crate::orchestrator::today(),
        "commit": crate::orchestrator::git_head(repo),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "machine": report::machine(),
        "data": set.describe(),
        "params": {
            "k": args.k, "m": args.m, "ef_construction": args.ef_construction, "ef": ef,
            "filter_candidates": args.filter_candidates, "selectivities": SELECTIVITIES,
            "quick": args.quick,
        },
        "truth_seconds": truth_seconds,
        "bandwidth": bandwidth,
        "results": results,
        "skipped": skipped,
    }))
}

#[cfg(feature = "quarry-driver")]
fn quarry(
    args: &VectorsArgs,
    set: &data::VectorSet,
    truth: &Truth,
    ef: &[usize],
    work: &Path,
) -> Result<Vec<Value>> {
    quarry_engine::run(args, set, truth, ef, work)
}

#[cfg(not(feature = "quarry-driver"))]
fn quarry(
    _args: &VectorsArgs,
    _set: &data::VectorSet,
    _truth: &Truth,
    _ef: &[usize],
    _work: &Path,
) -> Result<Vec<Value>> {
    bail!("built without the quarry driver")
}
