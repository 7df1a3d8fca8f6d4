//! quarry-bench: side-by-side benchmarks of quarry, Lucene, Tantivy and SeekStorm.
//!
//! `quarry-bench run --workload w1|w2|all [--engines ...] [--quick]` runs the whole suite;
//! `quarry-bench driver <engine> <index|query|merge|coldstart|probe>` is one engine's driver process (spawned
//! by `run`, usable by hand); `quarry-bench io [--quick]` is the I/O study (`io_study.rs`),
//! `quarry-bench codecs` the codec micro-benchmark. See `bench/README.md`.
// Argument doc comments are clap's `--help` text, printed as plain text: `<repo>` there is a
// placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

mod budget;
mod cache;
#[cfg(feature = "quarry-driver")]
mod cgroup;
mod charts;
mod codecs;
mod drivers;
#[cfg(feature = "quarry-driver")]
mod embed;
mod fuzzy_queries;
#[cfg(feature = "quarry-driver")]
mod io_study;
#[cfg(feature = "quarry-driver")]
mod io_w2;
#[cfg(feature = "quarry-driver")]
mod io_w2_report;
mod launch;
mod load;
mod measure;
#[cfg(feature = "quarry-driver")]
mod merges;
#[cfg(feature = "quarry-driver")]
mod online_parity;
mod orchestrator;
mod parity;
mod protocol;
mod report;
#[cfg(feature = "quarry-driver")]
mod skiplist;
mod structured;
mod vectors;
mod workload;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "quarry-bench",
    about = "Benchmarks quarry against Lucene, Tantivy and SeekStorm, side by side"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the suite: prepare data, index, query, cold start, write JSON + Markdown + PNG charts.
    Run(orchestrator::RunArgs),
    /// Prepare a workload's corpus and queries under bench/results/tmp/ and print their paths.
    Prepare(orchestrator::PrepareArgs),
    /// Derive the `fuzzy_wildcard` class's queries from a workload's query terms (seeded) into
    /// `bench/queries/<workload>-fuzzy-wildcard.jsonl`.
    GenFuzzyQueries(fuzzy_queries::GenArgs),
    /// Codec micro-benchmark: decode speed of each quarry-codecs block codec and width on one core,
    /// next to the machine's streaming memory bandwidth.
    Codecs(codecs::CodecArgs),
    /// Re-render the Markdown report and charts from a run's raw records (`.json.zst` or `.json`).
    Report {
        /// bench/results/<date>-<workload>.json.zst (or an older uncompressed .json)
        json: std::path::PathBuf,
    },
    /// I/O study: read sizes, batched reads, pool pin vs copy; on W2 every quarry directory mode,
    /// Tantivy and Lucene warm, evicted and memory-limited (bench/results/io-w2-<date>.md).
    #[cfg(feature = "quarry-driver")]
    Io(io_study::IoArgs),
    /// Replay adds, deletes, updates and merges on Reuters through quarry and Lucene and compare
    /// counts, top-10 ids and scores at each checkpoint (fails on any difference).
    #[cfg(feature = "quarry-driver")]
    OnlineParity(online_parity::OnlineParityArgs),
    /// Search latency on W2 while indexing with background merges vs idle; NRT refresh latency
    /// and indexing throughput with and without refreshes (bench/results/merges-<date>.md).
    #[cfg(feature = "quarry-driver")]
    Merges(merges::MergesArgs),
    /// Postings layout study: today's 128-doc blocks + skip table vs a large-block skip list on
    /// the W2 intersection queries, disk-resident (O_DIRECT) and warm (bench/results/skiplist-<date>.md).
    #[cfg(feature = "quarry-driver")]
    Skiplist(skiplist::SkiplistArgs),
    /// Ranges, sorts and aggregations on the NYC flights and Reuters, quarry vs Tantivy vs
    /// Lucene, every answer checked against an exact oracle (report under --out).
    Structured(structured::StructuredArgs),
    /// Dense-vector search on real sentence embeddings (cached by scripts/vectors-embed.py):
    /// quarry (flat, HNSW float32 and int8) vs FAISS, hnswlib, usearch, Lucene and
    /// native-vector-store in one run; report under --out (default bench/results/).
    Vectors(vectors::VectorsArgs),
    /// Text embedding speed: quarry's embedder vs sentence-transformers on the same Reuters
    /// texts and W1 queries, 1 and 2 threads (texts/s, query p50/p99); report under --out.
    #[cfg(feature = "quarry-driver")]
    Embed(embed::EmbedArgs),
    /// One engine's process of `structured` (the orchestrator spawns these).
    StructuredDriver(structured::driver::DriverArgs),
    /// Open-loop load test of a running `quarry serve` (queries at fixed rates while indexing).
    Load(load::LoadArgs),
    /// Time budgets on the slowest W2 queries through a running `quarry serve`.
    Budget(budget::BudgetArgs),
    /// Run one engine's driver (the orchestrator spawns these).
    Driver {
        #[command(subcommand)]
        engine: Engine,
    },
}

#[derive(Debug, Subcommand)]
enum Engine {
    /// Tantivy (crates.io), linked into this binary.
    Tantivy {
        #[command(subcommand)]
        cmd: drivers::DriverCmd,
    },
    /// SeekStorm (crates.io), linked into this binary with the feature `seekstorm-driver`.
    Seekstorm {
        #[command(subcommand)]
        cmd: drivers::DriverCmd,
    },
    /// quarry (crates/quarry), linked into this binary (default feature `quarry-driver`).
    Quarry {
        #[command(subcommand)]
        cmd: drivers::DriverCmd,
    },
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run(args) => orchestrator::run(args),
        Cmd::Prepare(args) => orchestrator::prepare(args),
        Cmd::GenFuzzyQueries(args) => fuzzy_queries::run(args),
        Cmd::Report { json } => report::rerender(&json),
        #[cfg(feature = "quarry-driver")]
        Cmd::Io(args) => io_study::run(args),
        #[cfg(feature = "quarry-driver")]
        Cmd::OnlineParity(args) => online_parity::run(args),
        #[cfg(feature = "quarry-driver")]
        Cmd::Merges(args) => merges::run(args),
        #[cfg(feature = "quarry-driver")]
        Cmd::Skiplist(args) => skiplist::run(args),
        Cmd::Codecs(args) => codecs::run(args),
        Cmd::Structured(args) => structured::run(args),
        Cmd::StructuredDriver(args) => structured::driver_main(args),
        Cmd::Vectors(args) => vectors::run(args),
        #[cfg(feature = "quarry-driver")]
        Cmd::Embed(args) => embed::run(args),
        Cmd::Load(args) => load::run(args),
        Cmd::Budget(args) => budget::run(args),
        Cmd::Driver {
            engine: Engine::Tantivy { cmd },
        } => drivers::run::<drivers::tantivy::Tantivy>(cmd),
        Cmd::Driver {
            engine: Engine::Quarry { cmd },
        } => run_quarry(cmd),
        Cmd::Driver {
            engine: Engine::Seekstorm { cmd },
        } => run_seekstorm(cmd),
    }
}

#[cfg(feature = "quarry-driver")]
fn run_quarry(cmd: drivers::DriverCmd) -> Result<()> {
    drivers::run::<drivers::quarry::Quarry>(cmd)
}

#[cfg(not(feature = "quarry-driver"))]
fn run_quarry(_cmd: drivers::DriverCmd) -> Result<()> {
    anyhow::bail!(
        "this quarry-bench was built without the quarry driver (`--no-default-features`); rebuild \
         with the default features"
    )
}

/// Whether this binary can drive quarry.
pub const QUARRY_DRIVER: bool = cfg!(feature = "quarry-driver");

#[cfg(feature = "seekstorm-driver")]
fn run_seekstorm(cmd: drivers::DriverCmd) -> Result<()> {
    drivers::run::<drivers::seekstorm::SeekStorm>(cmd)
}

#[cfg(not(feature = "seekstorm-driver"))]
fn run_seekstorm(_cmd: drivers::DriverCmd) -> Result<()> {
    anyhow::bail!(
        "this quarry-bench was built without the SeekStorm driver; rebuild with `--features \
         seekstorm-driver`"
    )
}

/// Whether this binary can drive SeekStorm.
pub const SEEKSTORM_DRIVER: bool = cfg!(feature = "seekstorm-driver");
