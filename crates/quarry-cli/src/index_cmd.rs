//! `quarry index`: JSON Lines in, a committed index out.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use quarry::{DirectoryKind, Document, IndexWriter, MergePolicy, Schema, WriterOptions};

use crate::input::JsonLines;

/// Lines read to infer a schema when none is given.
const INFER_LINES: usize = 1000;

#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// Input documents: JSON Lines, optionally .gz or .zst compressed.
    #[arg(long)]
    pub input: PathBuf,
    /// Index directory (created if missing).
    #[arg(long)]
    pub index: PathBuf,
    /// Schema file (JSON). Without it the schema is inferred from the first 1000 documents and
    /// printed (with --append, the index's schema is used).
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Indexing threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Memory budget for in-memory segments, in MiB.
    #[arg(long, default_value_t = 512)]
    pub ram_mb: usize,
    /// Skip (and count) lines with malformed JSON or wrong field types instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
    /// Add to an existing index instead of refusing.
    #[arg(long, conflicts_with = "overwrite")]
    pub append: bool,
    /// Replace an existing index (the old one stays readable until the new commit).
    #[arg(long)]
    pub overwrite: bool,
    /// Merge down to at most this many segments after indexing.
    #[arg(long)]
    pub force_merge: Option<usize>,
    /// Read path used for merging: mmap or pread.
    #[arg(long, default_value = "mmap")]
    pub directory: DirectoryKind,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What an indexing run did.
pub struct IndexSummary {
    pub docs: u64,
    pub skipped: u64,
    pub segments: usize,
    pub bytes: u64,
    pub seconds: f64,
}

/// Infers a schema from the first [`INFER_LINES`] documents. With `skip_bad`, malformed lines
/// are passed over here as in the indexing loop (which reports and counts them).
fn infer_schema(input: &Path, skip_bad: bool) -> Result<Schema> {
    let mut lines = JsonLines::open(input)?;
    let mut samples = Vec::new();
    while samples.len() < INFER_LINES {
        let Some((n, line)) = lines.next_line()? else {
            break;
        };
        match quarry::document::parse_object(line) {
            Ok(m) => samples.push((n, m)),
            Err(_) if skip_bad => {}
            Err(e) => bail!(
                "{}: line {n}: {e} (found while inferring the schema; use --skip-bad to skip such lines)",
                input.display()
            ),
        }
    }
    if samples.is_empty() {
        bail!("{}: no documents to infer a schema from", input.display());
    }
    let what = if samples.len() == 1 {
        "the first document".to_string()
    } else {
        format!("the first {} documents", samples.len())
    };
    Schema::infer_lines(samples.iter().map(|(n, m)| (*n, m)))
        .with_context(|| format!("{}: inferring the schema from {what}", input.display()))
}

/// Refuses, before anything is read or created, a target that cannot take this run: a regular
/// file, a missing index with `--append`, or an existing index without `--append`/`--overwrite`.
fn check_target(args: &IndexArgs) -> Result<()> {
    let path = &args.index;
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => bail!(
            "cannot index into {}: it is a file, not a directory",
            path.display()
        ),
        Ok(_) => {
            if !args.append && !args.overwrite {
                if let Ok(idx) = quarry::Index::open(path) {
                    bail!(
                        "{} already holds an index ({}); use --append to add to it or --overwrite to replace it",
                        path.display(),
                        crate::plural(idx.doc_count(), "doc")
                    );
                }
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if args.append {
                bail!(
                    "no index at {} to append to (leave out --append to create one)",
                    path.display()
                );
            }
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

pub fn run(args: &IndexArgs) -> Result<IndexSummary> {
    check_target(args)?;
    let mut inferred = false;
    let schema = match &args.schema {
        None if args.append => None,
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read schema {}", p.display()))?;
            Some(Schema::from_json(&text).with_context(|| format!("schema {}", p.display()))?)
        }
        None => {
            inferred = true;
            Some(infer_schema(&args.input, args.skip_bad)?)
        }
    };
    let opts = WriterOptions {
        threads: args
            .threads
            .unwrap_or_else(|| WriterOptions::default().threads)
            .max(1),
        ram_budget_bytes: args.ram_mb.max(16) << 20,
        merge_policy: MergePolicy::default(),
        directory: args.directory,
    };
    let mut writer = if args.append {
        let w = IndexWriter::open(&args.index, opts)?;
        if let (Some(s), Some(p)) = (&schema, &args.schema) {
            if w.schema() != s {
                bail!(
                    "the schema of {} differs from {}",
                    args.index.display(),
                    p.display()
                );
            }
        }
        w
    } else {
        let Some(schema) = schema else {
            bail!("no schema: give --schema FILE")
        };
        let made = if args.overwrite {
            IndexWriter::overwrite(&args.index, schema, opts)
        } else {
            IndexWriter::create(&args.index, schema, opts)
        };
        made.with_context(|| format!("cannot create an index in {}", args.index.display()))?
    };
    let schema = writer.schema().clone();
    if inferred && !args.quiet {
        eprintln!(
            "inferred schema (save it and pass --schema to fix it):\n{}",
            schema.to_json()
        );
    }
    let total_bytes = std::fs::metadata(&args.input).map(|m| m.len()).unwrap_or(0);
    let compressed = !args.input.to_string_lossy().ends_with(".jsonl")
        && !args.input.to_string_lossy().ends_with(".json");
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else if compressed {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(total_bytes)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30}] {binary_bytes}/{binary_total_bytes} {msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    let start = Instant::now();
    let mut lines = JsonLines::open(&args.input)?;
    let (mut docs, mut skipped) = (0u64, 0u64);
    while let Some((n, line)) = lines.next_line()? {
        match Document::from_json(&schema, line) {
            Ok(doc) => {
                writer.add_document(doc)?;
                docs += 1;
            }
            Err(e) => {
                let msg = format!("{}: line {n}: {e}", args.input.display());
                if args.skip_bad {
                    if skipped < 10 {
                        bar.suspend(|| eprintln!("skipped {msg}"));
                    }
                    skipped += 1;
                } else {
                    bar.abandon();
                    bail!("{msg}\nnothing from this run was committed; the index keeps its previous commit (use --skip-bad to skip such lines)");
                }
            }
        }
        if docs % 2048 == 0 {
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            let read = lines.bytes_read();
            bar.set_position(read);
            bar.set_message(format!(
                "{docs} docs, {:.0} docs/s, {:.1} MB/s",
                docs as f64 / secs,
                read as f64 / 1e6 / secs
            ));
        }
    }
    bar.set_message("committing");
    writer.set_user_data("source", &args.input.display().to_string());
    let mut stats = writer.commit()?;
    if let Some(n) = args.force_merge {
        bar.set_message("merging");
        stats = writer.force_merge(n)?;
    }
    drop(writer);
    bar.finish_and_clear();
    let index = quarry::Index::open(&args.index)?;
    let bytes: u64 = quarry::index::inspect(&index).bytes.values().sum();
    Ok(IndexSummary {
        docs,
        skipped,
        segments: stats.segments,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
    })
}
