//! The `quarry` command-line tool: index JSON Lines, search, inspect and check indexes, and run
//! the Reuters demo.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use quarry::DirectoryKind;

mod demo;
mod index_cmd;
mod input;
mod search_cmd;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "quarry",
    version,
    about = "quarry: a fast full-text search engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Index a JSON Lines file (optionally .gz or .zst).
    Index(index_cmd::IndexArgs),
    /// Search an index (Lucene query syntax).
    Search(search_cmd::SearchArgs),
    /// Show segments, documents, terms and bytes per file kind.
    Inspect {
        #[arg(long)]
        index: PathBuf,
        #[arg(long)]
        json: bool,
        /// Read path: mmap, pread, direct or adaptive.
        #[arg(long, default_value = "mmap")]
        directory: DirectoryKind,
    },
    /// Verify every checksum and structural invariant of an index.
    Check {
        #[arg(long)]
        index: PathBuf,
        /// Read path: mmap, pread, direct or adaptive.
        #[arg(long, default_value = "mmap")]
        directory: DirectoryKind,
    },
    /// Index the bundled Reuters-21578 corpus and run the Reuters queries against it.
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Index(args) => {
            let s = index_cmd::run(&args)?;
            println!(
                "indexed {} docs ({} skipped) into {} segment(s), {:.1} MB, in {:.2} s ({:.0} docs/s)",
                s.docs,
                s.skipped,
                s.segments,
                s.bytes as f64 / 1e6,
                s.seconds,
                s.docs as f64 / s.seconds.max(1e-9)
            );
        }
        Command::Search(args) => search_cmd::run(&args)?,
        Command::Inspect {
            index,
            json,
            directory,
        } => {
            let idx = quarry::Index::open_with(&index, directory)
                .with_context(|| format!("opening index {}", index.display()))?;
            let r = quarry::index::inspect(&idx);
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!(
                    "index {} (commit generation {}): {} docs in {} segment(s)",
                    index.display(),
                    r.generation,
                    r.docs,
                    r.segments.len()
                );
                for s in &r.segments {
                    let terms: Vec<String> =
                        s.terms.iter().map(|(f, n)| format!("{f}={n}")).collect();
                    let bytes: u64 = s.bytes.values().sum();
                    println!(
                        "  {}: {} docs, terms [{}], {:.1} MB",
                        s.name,
                        s.docs,
                        terms.join(" "),
                        bytes as f64 / 1e6
                    );
                }
                println!("bytes per file kind:");
                for (k, v) in &r.bytes {
                    println!("  {k:<6} {v:>12}");
                }
                println!("  {:<6} {:>12}", "total", r.bytes.values().sum::<u64>());
            }
        }
        Command::Check { index, directory } => {
            let r = quarry::check_index(&index, directory)
                .with_context(|| format!("check of {} failed", index.display()))?;
            println!(
                "ok: {} docs in {} segment(s), {} files verified (checksums, postings, positions, norms, stored fields)",
                r.docs,
                r.segments.len(),
                r.files_verified
            );
        }
        Command::Demo(args) => demo::run(&args)?,
    }
    Ok(())
}
