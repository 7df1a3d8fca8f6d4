//! How is one engine driven: the `driver <engine> <index|query|coldstart>` subcommands.
//!
//! The engine-specific parts (build documents, index, parse, search, read stored ids) live in one
//! module per engine behind the [`SearchEngine`] trait; everything that decides *what is timed*
//! is here, so the Rust drivers are measured identically. The Lucene driver (Java, in
//! `bench/lucene/`) follows the same rules, written down in `bench/README.md`.

pub mod probe;
pub mod tantivy;

#[cfg(feature = "quarry-driver")]
pub mod quarry;

#[cfg(feature = "seekstorm-driver")]
pub mod seekstorm;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::measure;
use crate::protocol::{
    self, ColdstartPhases, ColdstartRecord, IndexRecord, MergeRecord, Mode, QueryRecord, QuerySpec,
    SourceDoc, TopHit,
};

/// The driver subcommands (same names and flags as the Lucene jar).
#[derive(Debug, Subcommand)]
pub enum DriverCmd {
    /// Index DOCS.jsonl into a new index at DIR and print one `index` record.
    Index {
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        index: PathBuf,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Indexing memory budget per thread, MiB (Tantivy; quarry passes it on if it has one).
        #[arg(long, default_value_t = 256)]
        memory_mb: usize,
    },
    /// Run every query of Q.jsonl in every mode and print one `query` record per (query, mode).
    Query {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        queries: PathBuf,
        #[arg(long, default_value = "top10,top10_count,count")]
        modes: String,
        #[arg(long, default_value_t = 10)]
        warmup: u64,
        #[arg(long, default_value_t = 50)]
        iters: u64,
        /// Untimed round-robin passes over all (query, mode) pairs before any timing (as Lucene's).
        #[arg(long, default_value_t = 10)]
        global_warmup_rounds: u64,
    },
    /// Force-merge the committed index at DIR in place to at most K segments; print a `merge` record.
    Merge {
        #[arg(long)]
        index: PathBuf,
        #[arg(long, default_value_t = 1)]
        max_segments: u64,
    },
    /// Open the index, run every query of Q.jsonl once per round (round-robin) in one mode and print
    /// one `probe` record per query with every sample, then a `probe_end` record (I/O study).
    Probe {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        queries: PathBuf,
        #[arg(long, default_value = "top10")]
        mode: String,
        #[arg(long, default_value_t = 1)]
        rounds: u64,
        /// Stop each search after this many ms where the engine supports a deadline.
        #[arg(long)]
        deadline_ms: Option<u64>,
    },
    /// Open the index, answer one query (top 10 with stored ids) and print a `coldstart` record.
    Coldstart {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        query: String,
    },
}

/// One engine as the drivers see it.
pub trait SearchEngine: Sized {
    const NAME: &'static str;
    type Query;
    /// A search outcome, before stored fields are read.
    type Outcome;

    fn version() -> String;
    /// Builds engine documents from `docs`, indexes them into a new index at `dir`, commits and
    /// waits for merges. Everything in here is timed.
    fn index(
        dir: &Path,
        docs: Vec<SourceDoc>,
        threads: usize,
        memory_mb: usize,
    ) -> Result<IndexConfig>;
    /// Number of segments of the committed index at `dir`.
    fn segments(dir: &Path) -> Result<u64>;
    /// Rewrites the committed index at `dir` into at most `max_segments` segments and commits;
    /// returns how (the API call), for the report.
    fn force_merge(dir: &Path, max_segments: u64) -> Result<String>;

    /// Opens the committed index with the engine's default directory.
    fn open(dir: &Path) -> Result<Self>;
    fn parse(&self, query: &str) -> Result<Self::Query>;
    fn search(&self, query: &Self::Query, mode: Mode) -> Result<Self::Outcome>;
    /// Whether [`SearchEngine::search_until`] honours its deadline.
    const SUPPORTS_DEADLINE: bool = false;
    /// `search` that stops at `deadline` where the engine can (then the outcome holds what was
    /// found so far and the flag is true); engines without a deadline run to the end.
    fn search_until(
        &self,
        query: &Self::Query,
        mode: Mode,
        deadline: Option<Instant>,
    ) -> Result<(Self::Outcome, bool)> {
        let _ = deadline;
        Ok((self.search(query, mode)?, false))
    }
    /// (hits, exact?)
    fn hits(outcome: &Self::Outcome) -> (u64, bool);
    /// Top hits with their stored `id`, in rank order.
    fn top(&self, outcome: &Self::Outcome) -> Result<Vec<TopHit>>;
    /// Reads the stored `body` of every hit of `outcome` (a top-10 search of `query`) and
    /// highlights it with the engine's highlighter; returns the bytes of the fragments made, so
    /// that no work can be skipped. Everything in here is timed with the search (mode
    /// `top10_highlight`). Engines without a highlighter keep this default, an error that the
    /// report shows as "not supported".
    fn highlight(&self, query: &Self::Query, outcome: &Self::Outcome) -> Result<usize> {
        let _ = (query, outcome);
        anyhow::bail!(
            "not supported: the {} driver has no highlighter",
            Self::NAME
        )
    }
}

/// What an engine says about how it indexed.
pub struct IndexConfig {
    pub description: String,
}

pub fn run<E: SearchEngine>(cmd: DriverCmd) -> Result<()> {
    match cmd {
        DriverCmd::Index {
            input,
            index,
            threads,
            memory_mb,
        } => {
            let rec = index_cmd::<E>(&input, &index, threads, memory_mb)?;
            protocol::emit(&rec)
        }
        DriverCmd::Query {
            index,
            queries,
            modes,
            warmup,
            iters,
            global_warmup_rounds,
        } => query_cmd::<E>(
            &index,
            &queries,
            &Mode::parse_list(&modes)?,
            warmup,
            iters,
            global_warmup_rounds,
        ),
        DriverCmd::Merge {
            index,
            max_segments,
        } => {
            let rec = merge_cmd::<E>(&index, max_segments)?;
            protocol::emit(&rec)
        }
        DriverCmd::Probe {
            index,
            queries,
            mode,
            rounds,
            deadline_ms,
        } => probe::probe_cmd::<E>(&index, &queries, Mode::parse(&mode)?, rounds, deadline_ms),
        DriverCmd::Coldstart { index, query } => {
            let (rec, engine) = coldstart_cmd::<E>(&index, &query)?;
            protocol::emit(&rec)?;
            // Closing the index (unmapping files, freeing caches) comes after the result line:
            // it is not part of "spawn -> first result".
            drop(engine);
            Ok(())
        }
    }
}

/// Reads a JSON-lines corpus fully into memory.
pub fn load_docs(path: &Path) -> Result<Vec<SourceDoc>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("opening corpus {}", path.display()))?;
    let mut docs = Vec::new();
    for (n, line) in std::io::BufReader::with_capacity(1 << 20, file)
        .lines()
        .enumerate()
    {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let doc: SourceDoc = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: not a {{id,title,body}} document",
                path.display(),
                n + 1
            )
        })?;
        docs.push(doc);
    }
    Ok(docs)
}

pub fn load_queries(path: &Path) -> Result<Vec<QuerySpec>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, l)| {
            serde_json::from_str(l).with_context(|| {
                format!("{}:{}: not a {{query,class}} line", path.display(), n + 1)
            })
        })
        .collect()
}

fn index_cmd<E: SearchEngine>(
    input: &Path,
    dir: &Path,
    threads: usize,
    memory_mb: usize,
) -> Result<IndexRecord> {
    anyhow::ensure!(threads >= 1, "--threads must be at least 1");
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        anyhow::bail!(
            "index directory {} is not empty; the driver only builds fresh indexes",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)?;
    // Untimed: read and parse the whole corpus into memory.
    let docs = load_docs(input)?;
    let n = docs.len() as u64;
    let rss_before = measure::rss_bytes();

    // Timed: writer creation, building engine documents from the in-memory records, adding them,
    // the commit, and waiting for merges (the same span as the Lucene driver's).
    let start = Instant::now();
    let config = E::index(dir, docs, threads, memory_mb)?;
    let seconds = start.elapsed().as_secs_f64();

    Ok(IndexRecord {
        engine: E::NAME.into(),
        op: "index".into(),
        threads,
        docs: n,
        seconds,
        docs_per_sec: n as f64 / seconds,
        index_bytes: measure::dir_bytes(dir),
        segments: E::segments(dir)?,
        peak_rss_bytes: measure::peak_rss_bytes(),
        timed: "writer creation + building engine documents from pre-loaded records + add_document + commit + \
                wait for merges; excluded: reading and parsing the JSONL corpus"
            .into(),
        rss_before_timing_bytes: Some(rss_before),
        config: Some(config.description),
        version: Some(E::version()),
    })
}

fn merge_cmd<E: SearchEngine>(dir: &Path, max_segments: u64) -> Result<MergeRecord> {
    anyhow::ensure!(max_segments >= 1, "--max-segments must be at least 1");
    let before = E::segments(dir)?;
    let start = Instant::now();
    let how = E::force_merge(dir, max_segments)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(MergeRecord {
        engine: E::NAME.into(),
        op: "merge".into(),
        max_segments,
        segments_before: before,
        segments_after: E::segments(dir)?,
        seconds,
        index_bytes: measure::dir_bytes(dir),
        how,
    })
}

fn query_cmd<E: SearchEngine>(
    dir: &Path,
    queries: &Path,
    modes: &[Mode],
    warmup: u64,
    iters: u64,
    global_rounds: u64,
) -> Result<()> {
    anyhow::ensure!(iters >= 1, "--iters must be at least 1");
    let specs = load_queries(queries)?;
    let engine = E::open(dir)?;
    let parsed: Vec<Result<E::Query>> = specs.iter().map(|s| engine.parse(&s.query)).collect();
    let t = Instant::now();
    for _ in 0..global_rounds {
        for (spec, q) in specs.iter().zip(&parsed) {
            let Ok(q) = q else { continue };
            for &mode in modes.iter().filter(|&&m| spec.runs_in(m)) {
                let _ = std::hint::black_box(run_once(&engine, q, mode));
            }
        }
    }
    eprintln!(
        "[{}] global warm-up: {global_rounds} rounds in {:.2} s",
        E::NAME,
        t.elapsed().as_secs_f64()
    );
    for (spec, parsed) in specs.iter().zip(&parsed) {
        for &mode in modes.iter().filter(|&&m| spec.runs_in(m)) {
            let rec = match parsed {
                Ok(q) => match time_query(&engine, q, mode, warmup, iters) {
                    Ok(rec) => rec,
                    Err(e) => error_record::<E>(spec, mode, format!("{e:#}")),
                },
                Err(e) => error_record::<E>(spec, mode, format!("parse: {e:#}")),
            };
            let rec = QueryRecord {
                query: spec.query.clone(),
                class: spec.class.clone(),
                name: spec.name.clone(),
                ..rec
            };
            protocol::emit(&rec)?;
        }
    }
    Ok(())
}

fn error_record<E: SearchEngine>(spec: &QuerySpec, mode: Mode, error: String) -> QueryRecord {
    QueryRecord {
        engine: E::NAME.into(),
        op: "query".into(),
        query: spec.query.clone(),
        class: spec.class.clone(),
        name: spec.name.clone(),
        mode: mode.as_str().into(),
        hits: 0,
        hits_relation: String::new(),
        p50_us: 0.0,
        p90_us: 0.0,
        p99_us: 0.0,
        mean_us: 0.0,
        min_us: 0.0,
        iters: 0,
        warmup: 0,
        top: Vec::new(),
        error: Some(error),
    }
}

/// One timed unit of `mode`: the search, and in `top10_highlight` the top-10 search followed by
/// reading and highlighting the hits' `body`.
fn run_once<E: SearchEngine>(engine: &E, q: &E::Query, mode: Mode) -> Result<E::Outcome> {
    if mode == Mode::Top10Highlight {
        let out = engine.search(q, Mode::Top10)?;
        std::hint::black_box(engine.highlight(q, &out)?);
        return Ok(out);
    }
    engine.search(q, mode)
}

/// Warm-up, then `iters` timed repetitions of `search` alone (parsing happened before; stored
/// fields of the top hits are read once afterwards, untimed), or in `top10_highlight` of the
/// search plus highlighting.
fn time_query<E: SearchEngine>(
    engine: &E,
    q: &E::Query,
    mode: Mode,
    warmup: u64,
    iters: u64,
) -> Result<QueryRecord> {
    for _ in 0..warmup {
        std::hint::black_box(run_once(engine, q, mode)?);
    }
    let mut samples = Vec::with_capacity(iters as usize);
    let mut last = None;
    for _ in 0..iters {
        let t = Instant::now();
        let out = run_once(engine, q, mode)?;
        samples.push(t.elapsed().as_nanos() as f64 / 1000.0);
        last = Some(std::hint::black_box(out));
    }
    let out = last.expect("iters >= 1");
    let (hits, exact) = E::hits(&out);
    let top = if mode == Mode::Count {
        Vec::new()
    } else {
        engine.top(&out)?
    };
    let s = measure::summarize(&mut samples);
    Ok(QueryRecord {
        engine: E::NAME.into(),
        op: "query".into(),
        query: String::new(),
        class: String::new(),
        name: None,
        mode: mode.as_str().into(),
        hits,
        hits_relation: if exact { "eq" } else { "gte" }.into(),
        p50_us: s.p50,
        p90_us: s.p90,
        p99_us: s.p99,
        mean_us: s.mean,
        min_us: s.min,
        iters,
        warmup,
        top,
        error: None,
    })
}

/// Open -> parse -> top-10 search -> stored ids of the hits, all timed as one span. Returns the
/// still open engine with the record, so that closing it happens after the record is printed.
fn coldstart_cmd<E: SearchEngine>(dir: &Path, query: &str) -> Result<(ColdstartRecord, E)> {
    let start = Instant::now();
    let engine = E::open(dir)?;
    let opened = start.elapsed();
    let q = engine.parse(query)?;
    let parsed = start.elapsed();
    let out = engine.search(&q, Mode::Top10)?;
    let searched = start.elapsed();
    let top = engine.top(&out)?;
    let done = start.elapsed();
    let us = done.as_nanos() as f64 / 1000.0;
    let span = |a: std::time::Duration, b: std::time::Duration| (b - a).as_nanos() as f64 / 1000.0;
    let zero = std::time::Duration::ZERO;
    std::hint::black_box(&top);
    let rec = ColdstartRecord {
        engine: E::NAME.into(),
        op: "coldstart".into(),
        open_to_first_result_us: us,
        process_start_to_first_result_us: None,
        peak_rss_bytes: measure::peak_rss_bytes(),
        major_faults: measure::major_faults(),
        hits: E::hits(&out).0,
        phases_us: Some(ColdstartPhases {
            open: span(zero, opened),
            parse: span(opened, parsed),
            search: span(parsed, searched),
            fetch: span(searched, done),
        }),
    };
    Ok((rec, engine))
}
