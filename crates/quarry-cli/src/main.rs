//! The `quarry` command-line tool: index JSON Lines, search, inspect and check indexes, and run
//! the Reuters demo.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use quarry::DirectoryKind;

mod demo;
mod index_cmd;
mod ingest;
mod input;
mod models_cmd;
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
    /// Delete the documents matching a query (Lucene syntax) and commit; prints how many.
    Delete {
        #[arg(long)]
        index: PathBuf,
        /// Default fields of the query (all text fields when none).
        #[arg(long = "field")]
        fields: Vec<String>,
        query: String,
    },
    /// Merge the index into one segment; with `--reorder bp`, its documents reordered by
    /// recursive graph bisection (documents sharing terms get nearby ids: smaller postings,
    /// faster queries; scores and counts unchanged).
    Optimize(OptimizeArgs),
    /// Index the bundled Reuters-21578 corpus and run the Reuters queries against it.
    Demo(demo::DemoArgs),
    /// Serve indexes under a directory over HTTP (an Elasticsearch-compatible subset).
    Serve(ServeArgs),
    /// Serve indexes to AI agents over the Model Context Protocol (stdio, or HTTP with --listen).
    Mcp(McpArgs),
    /// Register text-embedding models with an index (`quarry models add NAME PATH --index DIR`).
    #[command(subcommand)]
    Models(models_cmd::ModelsCmd),
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["data", "index"])))]
struct McpArgs {
    /// Directory holding the indexes (the one `quarry serve --data` uses).
    #[arg(long)]
    data: Option<PathBuf>,
    /// One index directory of that layout (`DATA/<name>`), served alone.
    #[arg(long)]
    index: Option<PathBuf>,
    /// Also offer create_index, index_documents and delete_documents.
    #[arg(long)]
    allow_writes: bool,
    /// Streamable HTTP at http://ADDR/mcp instead of stdio (loopback unless --api-key-file; port
    /// 0 picks a free port).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// File with accepted API keys, one per line (HTTP: `Authorization: Bearer <key>`).
    #[arg(long, requires = "listen")]
    api_key_file: Option<PathBuf>,
    /// Most hits one search returns.
    #[arg(long, default_value_t = 100)]
    max_size: usize,
    /// Longest string of a hit's fields, in bytes (longer ones are cut).
    #[arg(long, default_value_t = 2_000)]
    max_text_bytes: usize,
    /// Largest answer, in bytes of JSON.
    #[arg(long, default_value_t = 64 << 10)]
    max_answer_bytes: usize,
    /// Time budget of one search (e.g. 500ms, 10s).
    #[arg(long, value_parser = parse_search_timeout, default_value = "10s")]
    search_timeout: std::time::Duration,
}

#[derive(clap::Args, Debug)]
struct OptimizeArgs {
    #[arg(long)]
    index: PathBuf,
    /// Document order of the merged segment: `none` (segments concatenated) or `bp`.
    #[arg(long, value_enum, default_value = "none")]
    reorder: Reorder,
    /// BP: terms in fewer documents are left out.
    #[arg(long, default_value_t = quarry::BpOptions::default().min_doc_freq)]
    bp_min_doc_freq: u32,
    /// BP: parts of at most this many documents are not split further.
    #[arg(long, default_value_t = quarry::BpOptions::default().min_partition)]
    bp_min_partition: usize,
    /// BP: rounds of moves per split.
    #[arg(long, default_value_t = quarry::BpOptions::default().max_iters)]
    bp_iters: u32,
    /// BP: the text fields whose terms count (default: every text field).
    #[arg(long = "bp-field")]
    bp_fields: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Reorder {
    None,
    Bp,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Directory holding the indexes (one sub-directory each; created if missing).
    #[arg(long)]
    data: PathBuf,
    /// Address to listen on (loopback by default; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:9200")]
    listen: std::net::SocketAddr,
    /// File with accepted API keys, one per line; requests then need `Authorization: ApiKey <key>`.
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// Largest request body in bytes (larger ones get 413).
    #[arg(long, default_value_t = 100 << 20)]
    max_body_bytes: usize,
    /// Time budget of a search that sets no `timeout` (e.g. 500ms, 2s); the best hits found
    /// within it are returned with `"timed_out": true`. Default: none.
    #[arg(long, value_parser = parse_search_timeout)]
    search_timeout: Option<std::time::Duration>,
}

fn parse_search_timeout(s: &str) -> Result<std::time::Duration, String> {
    quarry_server::indices::parse_duration_ms(s)
        .map(std::time::Duration::from_millis)
        .ok_or_else(|| format!("invalid duration {s:?} (e.g. 500ms, 2s)"))
}

/// Exit status when documents were committed but a merge after the commit failed.
const EXIT_MERGE_FAILED: u8 = 3;
/// Exit status when another writer holds the index's lock.
const EXIT_LOCKED: u8 = 4;

/// Whether the error chain holds a broken pipe (stdout closed by the reader, e.g. `| head`).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", render_error(&e));
            let quarry_err = e.chain().find_map(|c| c.downcast_ref::<quarry::Error>());
            match quarry_err {
                Some(quarry::Error::MergeFailed { .. }) => {
                    eprintln!(
                        "note: the documents were committed; only the merge failed (do not re-run the same input: it would add them again)"
                    );
                    ExitCode::from(EXIT_MERGE_FAILED)
                }
                Some(quarry::Error::Locked { .. }) => ExitCode::from(EXIT_LOCKED),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// An error and its causes on one line, outermost first, leaving out a cause whose text the
/// message before it already contains (an I/O error that names its OS error is followed by that
/// OS error as its source: print it once).
fn render_error(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut prev = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !prev.is_empty() && prev.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
        prev = text;
    }
    out
}

/// Refuses a path that cannot hold an index before anything opens it (opening a directory
/// creates it; reading commands must never create anything).
pub(crate) fn require_index_dir(path: &std::path::Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("not an index: {} is a file", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!(
                "no index at {}: the directory does not exist",
                path.display()
            )
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Index(args) => {
            let s = index_cmd::run(&args)?;
            if s.dry_run {
                println!(
                    "dry run: read {} ({} skipped) in {:.2} s ({:.0} docs/s); nothing was written",
                    plural(s.docs, "doc"),
                    s.skipped,
                    s.seconds,
                    s.docs as f64 / s.seconds.max(1e-9)
                );
                return Ok(());
            }
            println!(
                "indexed {} ({} skipped) into {} segment(s), {} live in the index, {:.1} MB, in {:.2} s ({:.0} docs/s)",
                plural(s.docs, "doc"),
                s.skipped,
                s.segments,
                s.live_docs,
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
            require_index_dir(&index)?;
            let idx = quarry::Index::open_with(&index, directory)
                .with_context(|| format!("opening index {}", index.display()))?;
            let r = quarry::index::inspect(&idx);
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&r)?)?;
            } else {
                writeln!(
                    out,
                    "index {} (commit generation {}): {} ({} deleted) in {} segment(s)",
                    index.display(),
                    r.generation,
                    plural(r.live_docs, "doc"),
                    r.docs - r.live_docs,
                    r.segments.len()
                )?;
                if let Some(s) = &r.index_sort {
                    writeln!(out, "index sort: {s}")?;
                }
                for s in &r.segments {
                    let terms: Vec<String> =
                        s.terms.iter().map(|(f, n)| format!("{f}={n}")).collect();
                    let bytes: u64 = s.bytes.values().sum();
                    writeln!(
                        out,
                        "  {}: {}, {} deleted, terms [{}], {:.1} MB",
                        s.name,
                        plural(s.docs, "doc"),
                        s.deleted,
                        terms.join(" "),
                        bytes as f64 / 1e6
                    )?;
                    if let Some(sort) = &s.index_sort {
                        writeln!(out, "    sorted by [{sort}]")?;
                    }
                    if !s.columns.is_empty() {
                        let cols: Vec<String> =
                            s.columns.iter().map(|(f, d)| format!("{f}: {d}")).collect();
                        writeln!(out, "    columns [{}]", cols.join("; "))?;
                    }
                    if !s.vectors.is_empty() {
                        let v: Vec<String> =
                            s.vectors.iter().map(|(f, d)| format!("{f}: {d}")).collect();
                        writeln!(out, "    vectors [{}]", v.join("; "))?;
                    }
                }
                writeln!(out, "bytes per file kind:")?;
                for (k, v) in &r.bytes {
                    writeln!(out, "  {k:<6} {v:>12}")?;
                }
                writeln!(
                    out,
                    "  {:<6} {:>12}",
                    "total",
                    r.bytes.values().sum::<u64>()
                )?;
            }
            out.flush()?;
        }
        Command::Check { index, directory } => {
            require_index_dir(&index)?;
            let r = quarry::check_index(&index, directory)
                .with_context(|| format!("check of {} failed", index.display()))?;
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "ok: {} ({} deleted) in {} segment(s), {} files verified (checksums, postings, positions, norms, stored fields, columns, deletions{})",
                plural(r.docs, "doc"),
                r.docs - r.live_docs,
                r.segments.len(),
                r.files_verified,
                match &r.index_sort {
                    Some(s) => format!(", order of index sort [{s}]"),
                    None => String::new(),
                }
            )?;
            out.flush()?;
        }
        Command::Delete {
            index,
            fields,
            query,
        } => {
            let mut writer = quarry::IndexWriter::open(&index, quarry::WriterOptions::default())
                .with_context(|| format!("opening index {} for writing", index.display()))?;
            let mut reader = writer.reader()?;
            let before = reader.searcher().live_doc_count();
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            let q = reader.searcher().parse_query(&query, &fields)?;
            writer.delete_query(&q)?;
            let stats = writer.commit()?;
            reader = writer.reader()?;
            let after = reader.searcher().live_doc_count();
            println!(
                "deleted {} document(s); {} remain (commit generation {})",
                before - after,
                after,
                stats.generation
            );
        }
        Command::Optimize(args) => {
            require_index_dir(&args.index)?;
            let mut writer =
                quarry::IndexWriter::open(&args.index, quarry::WriterOptions::default())
                    .with_context(|| {
                        format!("opening index {} for writing", args.index.display())
                    })?;
            let started = std::time::Instant::now();
            let stats = match args.reorder {
                Reorder::None => writer.force_merge(1)?,
                Reorder::Bp => writer.optimize_reorder(&quarry::BpOptions {
                    min_doc_freq: args.bp_min_doc_freq,
                    min_partition: args.bp_min_partition,
                    max_iters: args.bp_iters,
                    fields: (!args.bp_fields.is_empty()).then(|| args.bp_fields.clone()),
                    ..quarry::BpOptions::default()
                })?,
            };
            writer.close()?;
            println!(
                "optimized {} into one segment{} in {:.2} s (commit generation {})",
                args.index.display(),
                if args.reorder == Reorder::Bp {
                    ", documents reordered by BP"
                } else {
                    ""
                },
                started.elapsed().as_secs_f64(),
                stats.generation
            );
        }
        Command::Demo(args) => demo::run(&args)?,
        Command::Models(cmd) => models_cmd::run(&cmd)?,
        Command::Serve(args) => {
            let mut config = quarry_server::Config::new(args.data);
            config.listen = args.listen;
            config.max_body_bytes = args.max_body_bytes;
            config.default_search_timeout = args.search_timeout;
            if let Some(path) = &args.api_key_file {
                config.api_keys = Some(quarry_server::load_api_keys(path)?);
            }
            quarry_server::run(config)?;
        }
        Command::Mcp(args) => {
            use quarry_server::mcp::{McpConfig, Source};
            let source = match (args.data, args.index) {
                (Some(d), _) => Source::Data(d),
                (None, Some(i)) => Source::Index(i),
                (None, None) => anyhow::bail!("pass --data DIR or --index DIR"),
            };
            let mut config = McpConfig::new(source);
            config.allow_writes = args.allow_writes;
            config.listen = args.listen;
            if let Some(path) = &args.api_key_file {
                config.api_keys = Some(quarry_server::load_api_keys(path)?);
            }
            config.limits = quarry_server::mcp::Limits {
                max_size: args.max_size,
                max_text_bytes: args.max_text_bytes.max(16),
                max_answer_bytes: args.max_answer_bytes.max(1024),
                search_timeout: args.search_timeout,
            };
            quarry_server::mcp::run(config)?;
        }
    }
    Ok(())
}

/// `1 doc`, `2 docs`.
pub(crate) fn plural(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_error_is_printed_once() {
        let io = std::io::Error::from_raw_os_error(28);
        let text = io.to_string();
        let e = anyhow::Error::new(io)
            .context(format!("write x.store: {text}"))
            .context("committing");
        let shown = render_error(&e);
        assert_eq!(shown.matches(&text).count(), 1, "{shown}");
        assert!(shown.starts_with("committing: write x.store: "), "{shown}");
    }

    #[test]
    fn plural_words() {
        assert_eq!(plural(1u64, "hit"), "1 hit");
        assert_eq!(plural(0u64, "hit"), "0 hits");
        assert_eq!(plural(2u32, "doc"), "2 docs");
    }
}
