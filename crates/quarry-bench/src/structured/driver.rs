//! How does one engine's process run the structured benchmark: index both datasets from the
//! prepared JSON lines, then per query warm up, time `iters` calls and write the answer of the
//! last call and every sample as JSON lines on stdout (the Lucene harness's
//! `structured-bench` writes the same records).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::data::SchemaFile;
use super::spec::{Answer, FieldDef, QuerySpec};

/// The datasets every driver indexes, in this order.
pub const DATASETS: [&str; 2] = ["flights", "reuters"];

/// Arguments of `quarry-bench structured-driver <engine>`.
#[derive(Debug, clap::Args)]
pub struct DriverArgs {
    /// `quarry` or `tantivy` (Lucene is `java -jar ... structured-bench`).
    pub engine: String,
    /// The directory with `<dataset>.jsonl` and `<dataset>.schema.json`.
    #[arg(long)]
    pub data: PathBuf,
    /// Where the indexes go (`<dir>/<dataset>`), rebuilt from scratch.
    #[arg(long)]
    pub index: PathBuf,
    /// The query specifications, one JSON object per line.
    #[arg(long)]
    pub queries: PathBuf,
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    #[arg(long, default_value_t = 200)]
    pub iters: usize,
    /// Open the indexes left by an earlier run instead of rebuilding them (to profile the
    /// queries alone).
    #[arg(long)]
    pub reuse_index: bool,
}

/// One engine, opened on one dataset's index.
pub trait Engine: Sized {
    const NAME: &'static str;
    /// A query translated to the engine's API, ready to run.
    type Prepared;
    /// What the timed call returns.
    type Out;

    fn version() -> String;
    /// Indexes `docs` (JSON objects) with `fields` into a new index at `dir`, one segment at
    /// the end; says how.
    fn index(dir: &Path, fields: &[FieldDef], docs: Vec<Map<String, Value>>) -> Result<String>;
    fn open(dir: &Path, fields: &[FieldDef]) -> Result<Self>;
    /// `Err` with the reason when the engine cannot answer this query.
    fn prepare(&self, spec: &QuerySpec) -> std::result::Result<Self::Prepared, String>;
    /// The timed call.
    fn run(&self, q: &Self::Prepared) -> Result<Self::Out>;
    /// The answer in the common shape (not timed).
    fn answer(&self, spec: &QuerySpec, q: &Self::Prepared, out: Self::Out) -> Result<Answer>;
}

fn emit(v: Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &v)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

fn read_docs(path: &Path) -> Result<Vec<Map<String, Value>>> {
    let r = BufReader::new(
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
    );
    r.lines().map(|l| Ok(serde_json::from_str(&l?)?)).collect()
}

/// Reads the query specifications of a JSON-lines file.
pub fn read_queries(path: &Path) -> Result<Vec<QuerySpec>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

/// Runs the driver of engine `E`.
pub fn run<E: Engine>(args: &DriverArgs) -> Result<()> {
    emit(json!({"op": "hello", "engine": E::NAME, "version": E::version()}))?;
    let mut engines: HashMap<&str, E> = HashMap::new();
    for ds in DATASETS {
        let dir = args.index.join(ds);
        if args.reuse_index && dir.exists() {
            let schema: SchemaFile = serde_json::from_slice(&std::fs::read(
                args.data.join(format!("{ds}.schema.json")),
            )?)?;
            engines.insert(ds, E::open(&dir, &schema.fields)?);
            continue;
        }
        let schema: SchemaFile = serde_json::from_slice(
            &std::fs::read(args.data.join(format!("{ds}.schema.json")))
                .with_context(|| format!("schema of {ds}"))?,
        )?;
        let docs = read_docs(&args.data.join(format!("{ds}.jsonl")))?;
        let n = docs.len();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let t = Instant::now();
        let how = E::index(&dir, &schema.fields, docs)?;
        let secs = t.elapsed().as_secs_f64();
        emit(json!({"op": "index", "dataset": ds, "docs": n, "seconds": secs, "how": how}))?;
        engines.insert(ds, E::open(&dir, &schema.fields)?);
    }
    for spec in read_queries(&args.queries)? {
        let engine = engines
            .get(spec.dataset.as_str())
            .with_context(|| format!("query {}: unknown dataset {}", spec.name, spec.dataset))?;
        let prepared = match engine.prepare(&spec) {
            Ok(p) => p,
            Err(reason) => {
                emit(json!({"op": "query", "name": spec.name, "unsupported": reason}))?;
                continue;
            }
        };
        for _ in 0..args.warmup {
            std::hint::black_box(engine.run(&prepared)?);
        }
        let mut samples = Vec::with_capacity(args.iters);
        let mut last = None;
        for _ in 0..args.iters.max(1) {
            let t = Instant::now();
            let out = engine.run(&prepared)?;
            samples.push(t.elapsed().as_nanos() as f64 / 1000.0);
            last = Some(out);
        }
        let out = last.context("no timed run")?;
        let answer = engine
            .answer(&spec, &prepared, out)
            .with_context(|| format!("answer of {}", spec.name))?;
        emit(json!({"op": "query", "name": spec.name, "answer": answer, "samples_us": samples}))?;
    }
    Ok(())
}
