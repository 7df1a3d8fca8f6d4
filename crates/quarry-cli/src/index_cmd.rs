//! `quarry index`: JSON Lines in, a committed index out.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use quarry::{DirectoryKind, IndexWriter, MergePolicy, Schema, WriterOptions};

use crate::ingest::Ingest;
use crate::input::{self, Lines, ReadMode};

/// Lines read to infer a schema when none is given.
const INFER_LINES: usize = 1000;

#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// Input documents: a JSON Lines file (optionally .gz or .zst compressed), a directory of
    /// them (*.jsonl, *.ndjson, *.json, also compressed; not recursive) or a quoted glob such as
    /// 'data/*.jsonl.zst'. A .json file may also hold a JSON array of documents or one document
    /// over several lines (native-vector-store's layout). Files are taken in name order and read
    /// in parallel (--read-threads 1 indexes them one after the other).
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
    /// Upsert by this key field (keyword or integer): a document replaces the documents with
    /// the same key, atomically.
    #[arg(long)]
    pub key: Option<String>,
    /// Replace an existing index (the old one stays readable until the new commit).
    #[arg(long)]
    pub overwrite: bool,
    /// Keep every segment's documents in this order (an index sort, fixed when the index is
    /// created): `field`, `field:asc` or `field:desc`, repeatable or comma-separated; fields
    /// with a column only (integer, float, date, boolean, keyword). A sorted search whose
    /// leading keys are these stops reading a segment early. Documents without a value go last.
    /// With --append the index's own sort is kept (a different one is refused).
    #[arg(long = "index-sort", value_name = "FIELD[:asc|desc]")]
    pub index_sort: Vec<String>,
    /// Merge down to at most this many segments after indexing.
    #[arg(long)]
    pub force_merge: Option<usize>,
    /// Read path used for merging: mmap, pread, direct or adaptive.
    #[arg(long, default_value = "mmap")]
    pub directory: DirectoryKind,
    /// How input files are read: `auto` memory-maps plain files of --mmap-min to --mmap-max
    /// bytes and streams the others and compressed ones; `stream` suits files that another
    /// process may truncate while they are indexed.
    #[arg(long, value_enum, default_value_t = ReadMode::Auto)]
    pub read_mode: ReadMode,
    /// Smallest plain input file that `--read-mode auto` memory-maps, in bytes.
    #[arg(long, default_value_t = input::MmapRange::DEFAULT.min)]
    pub mmap_min: u64,
    /// Largest plain input file that `--read-mode auto` memory-maps, in bytes.
    #[arg(long, default_value_t = input::MmapRange::DEFAULT.max)]
    pub mmap_max: u64,
    /// Threads reading and parsing input files (default: one per core, at most one per file;
    /// one with --key, so that the last line of a key wins across files).
    #[arg(long)]
    pub read_threads: Option<usize>,
    /// Read and check every document against the schema, report what would be indexed, and
    /// write nothing (no index is created or changed).
    #[arg(long)]
    pub dry_run: bool,
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
    /// Documents replaced (upserts with `--key`).
    pub live_docs: u64,
    /// Nothing was written (`--dry-run`).
    pub dry_run: bool,
}

/// Infers a schema from the first [`INFER_LINES`] documents. With `skip_bad`, malformed lines
/// are passed over here as in the indexing loop (which reports and counts them).
fn infer_schema(input: &Path, files: &[PathBuf], skip_bad: bool) -> Result<Schema> {
    let mut samples = Vec::new();
    'files: for file in files {
        let mut lines = Lines::open(file, ReadMode::Stream, input::MmapRange::DEFAULT)?;
        while samples.len() < INFER_LINES {
            let Some((n, line)) = lines.next_line()? else {
                continue 'files;
            };
            match quarry::document::parse_object(line) {
                Ok(m) => samples.push((n, m)),
                Err(_) if skip_bad => {}
                Err(e) => bail!(
                    "{}: line {n}: {e} (found while inferring the schema; use --skip-bad to skip such lines)",
                    file.display()
                ),
            }
        }
        break;
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
        // Not a directory on the way, no permission, ...: nothing can be created there either.
        Err(e) if args.append => {
            Err(e).with_context(|| format!("cannot open the index {}", path.display()))
        }
        Err(e) => Err(e).with_context(|| format!("cannot create an index in {}", path.display())),
    }
}

/// Indexes `args.input` into `args.index`: checks the target, settles the schema, opens the
/// writer (none on a dry run), reads every document into it, then commits and merges.
pub fn run(args: &IndexArgs) -> Result<IndexSummary> {
    check_target(args)?;
    let files = input::expand(&args.input)?;
    let (schema, inferred) = given_schema(args, &files)?;
    let mut writer = open_writer(args, &schema)?;
    let schema = match (&writer, schema) {
        (Some(w), _) => w.schema().clone(),
        (None, Some(s)) => s,
        // A dry run against an existing index without --schema checks against its schema.
        (None, None) => quarry::Index::open(&args.index)?.schema().clone(),
    };
    if inferred && !args.quiet {
        eprintln!(
            "inferred schema (save it and pass --schema to fix it):\n{}",
            schema.to_json()
        );
        for f in schema.fields() {
            if let Some(o) = f.vector_options() {
                eprintln!(
                    "field {:?}: arrays of {} numbers, inferred as a vector field ({}, float32, hnsw m 16, ef_construction 100; declare it in --schema to change that)",
                    f.name, o.dims, o.similarity
                );
            }
        }
    }
    let key = key_field(args, &schema)?;
    let bar = progress_bar(args, &files);
    let start = Instant::now();
    let (docs, skipped) = read_documents(args, &files, &schema, key, writer.as_mut(), &bar, start)?;
    let Some(writer) = writer else {
        bar.finish_and_clear();
        return Ok(IndexSummary {
            docs,
            skipped,
            segments: 0,
            bytes: 0,
            seconds: start.elapsed().as_secs_f64(),
            live_docs: 0,
            dry_run: true,
        });
    };
    let stats = commit_and_merge(args, writer, &bar)?;
    bar.finish_and_clear();
    let index = quarry::Index::open(&args.index)?;
    let bytes: u64 = quarry::index::inspect(&index).bytes.values().sum();
    Ok(IndexSummary {
        docs,
        skipped,
        segments: stats.segments,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
        live_docs: stats.live_docs,
        dry_run: false,
    })
}

/// The schema of this run and whether it was inferred: from `--schema`, inferred from the
/// input, or none (`--append` without `--schema`: the index's own).
fn given_schema(args: &IndexArgs, files: &[PathBuf]) -> Result<(Option<Schema>, bool)> {
    Ok(match &args.schema {
        None if args.append => (None, false),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read schema {}", p.display()))?;
            let schema =
                Schema::from_json(&text).with_context(|| format!("schema {}", p.display()))?;
            (Some(schema), false)
        }
        None => (Some(infer_schema(&args.input, files, args.skip_bad)?), true),
    })
}

/// The writer of this run (none on a dry run): the existing index's with `--append` (whose
/// schema must be `schema` when one was given), else a new or replacing index's.
fn open_writer(args: &IndexArgs, schema: &Option<Schema>) -> Result<Option<IndexWriter>> {
    let opts = WriterOptions {
        threads: args
            .threads
            .unwrap_or_else(|| WriterOptions::default().threads)
            .max(1),
        ram_budget_bytes: args.ram_mb.max(16) << 20,
        merge_policy: MergePolicy::default(),
        directory: args.directory,
        index_sort: if args.index_sort.is_empty() {
            None
        } else {
            Some(quarry::IndexSort::parse(&args.index_sort)?)
        },
    };
    if let (Some(sort), Some(schema)) = (&opts.index_sort, schema) {
        // Refused before any input is read (a dry run too).
        sort.validate(schema)?;
    }
    if args.dry_run {
        return Ok(None);
    }
    if args.append {
        let w = IndexWriter::open(&args.index, opts)?;
        if let (Some(s), Some(p)) = (schema, &args.schema) {
            if w.schema() != s {
                bail!(
                    "the schema of {} differs from {}",
                    args.index.display(),
                    p.display()
                );
            }
        }
        return Ok(Some(w));
    }
    let Some(schema) = schema.clone() else {
        bail!("no schema: give --schema FILE")
    };
    let made = if args.overwrite {
        IndexWriter::overwrite(&args.index, schema, opts)
    } else {
        IndexWriter::create(&args.index, schema, opts)
    };
    Ok(Some(made.with_context(|| {
        format!("cannot create an index in {}", args.index.display())
    })?))
}

/// The id of the `--key` field, if one was given.
fn key_field(args: &IndexArgs, schema: &Schema) -> Result<Option<u32>> {
    let Some(k) = &args.key else {
        return Ok(None);
    };
    Ok(Some(schema.field_id(k).ok_or_else(|| {
        quarry::Error::UnknownField {
            field: k.clone(),
            known: schema.fields().iter().map(|f| f.name.clone()).collect(),
        }
    })?))
}

/// The progress bar: hidden with `--quiet`, a spinner when an input is compressed (its size
/// says nothing about the bytes to read), else a bar over the inputs' total size.
fn progress_bar(args: &IndexArgs, files: &[PathBuf]) -> ProgressBar {
    let total_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let compressed = files.iter().any(|f| {
        let name = f.to_string_lossy();
        !name.ends_with(".jsonl") && !name.ends_with(".json") && !name.ends_with(".ndjson")
    });
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
    bar
}

/// Reads every document of `files` into `writer` (none: a dry run only checks them), upserting
/// by `key`; returns the documents read and the bad lines skipped (`--skip-bad`; without it the
/// first bad line fails the run).
fn read_documents(
    args: &IndexArgs,
    files: &[PathBuf],
    schema: &Schema,
    key: Option<u32>,
    mut writer: Option<&mut IndexWriter>,
    bar: &ProgressBar,
    start: Instant,
) -> Result<(u64, u64)> {
    let key_name = args.key.as_deref().unwrap_or_default();
    let ingest = Ingest {
        files,
        schema,
        key: key.map(|k| (k, key_name)),
        mode: args.read_mode,
        mmap_range: input::MmapRange {
            min: args.mmap_min,
            max: args.mmap_max,
        },
        threads: args
            .read_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let bytes_read = AtomicU64::new(0);
    let (mut docs, mut skipped) = (0u64, 0u64);
    let embeds = schema.fields().iter().any(|f| f.embed.is_some());
    ingest.run(&bytes_read, |mut batch| {
        if let (Some(w), true) = (writer.as_deref_mut(), embeds) {
            // One batch per field for the whole message: far faster than a text at a time.
            embed_batch(w, &mut batch)?;
            bar.set_message(format!("{docs} docs, embedding"));
        }
        for parsed in batch {
            match parsed.doc {
                Ok((doc, key)) => {
                    match (writer.as_deref_mut(), key) {
                        (None, _) => {}
                        (Some(w), None) => {
                            w.add_document(doc)?;
                        }
                        (Some(w), Some(k)) => {
                            w.update_document(key_name, &k, doc)?;
                        }
                    }
                    docs += 1;
                }
                Err(e) => {
                    let msg = format!("{}: line {}: {e}", files[parsed.file].display(), parsed.line);
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
        }
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        let read = bytes_read.load(Ordering::Relaxed);
        bar.set_position(read);
        bar.set_message(format!(
            "{docs} docs, {:.0} docs/s, {:.1} MB/s",
            docs as f64 / secs,
            read as f64 / 1e6 / secs
        ));
        Ok(())
    })?;
    Ok((docs, skipped))
}

/// Computes the embedded vector fields of the good documents of `batch` in place.
fn embed_batch(writer: &IndexWriter, batch: &mut [crate::ingest::Parsed]) -> Result<()> {
    let mut docs: Vec<quarry::Document> = batch
        .iter_mut()
        .filter_map(|p| p.doc.as_mut().ok().map(|(d, _)| std::mem::take(d)))
        .collect();
    let embedded = writer.embed_documents(&mut docs);
    let mut filled = docs.into_iter();
    for p in batch.iter_mut() {
        if let Ok((d, _)) = p.doc.as_mut() {
            *d = filled.next().expect("one document per good line");
        }
    }
    Ok(embedded?)
}

/// Commits what was read, then waits for the merge policy's merges (or runs `--force-merge`);
/// returns the statistics of the last commit.
fn commit_and_merge(
    args: &IndexArgs,
    mut writer: IndexWriter,
    bar: &ProgressBar,
) -> Result<quarry::CommitStats> {
    bar.set_message("committing");
    writer.set_user_data("source", &args.input.display().to_string());
    // The merge policy's merges run on the merge thread after the commit, so that a merge
    // failure never looks like a failed commit; this short-lived process waits for them (and
    // commits each) before it exits, as a merge left running would be abandoned.
    writer.set_background_merges(true);
    let mut stats = writer.commit()?;
    if args.force_merge.is_none() {
        bar.set_message("merging");
        stats = writer.finish_merges()?;
    }
    if let Some(n) = args.force_merge {
        bar.set_message("merging");
        let generation = stats.generation;
        stats = writer
            .force_merge(n)
            .map_err(|e| quarry::Error::MergeFailed {
                generation,
                source: Box::new(e),
            })?;
    }
    drop(writer);
    Ok(stats)
}
