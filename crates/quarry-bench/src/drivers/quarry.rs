//! How is quarry driven: the same schema, modes and timing as the other drivers, through the
//! engine's public API (`crates/quarry`).
//!
//! Built only with `--features quarry-driver`, so that the suite builds and runs (Tantivy, Lucene)
//! while the engine's API is still being written. Schema: `id` integer (stored), `title` and `body`
//! text, stored, with quarry's standard analyzer. Queries: `searcher.parse_query(q, &["body"])`
//! (Lucene classic syntax, default OR). Modes map to `SearchMode::{Top, TopCount, Count}`.
//! The read path for searching is `$QUARRY_DIRECTORY` (mmap, pread, direct, adaptive; default
//! mmap), so the orchestrator's runs and the `io` study can pick it per process. With
//! `$QUARRY_REORDER=bp` the merged index shape is written by `optimize_reorder` (documents in
//! recursive-graph-bisection order) instead of `force_merge(1)`.

use std::path::Path;

use anyhow::{Context, Result};
use quarry::highlight::{HighlightOptions, Highlighter};
use quarry::query::Query;
use quarry::{
    DirectoryKind, Document, FieldValue, Index, IndexWriter, Schema, SearchMode, SearchOptions,
    SearchResult, Searcher, WriterOptions,
};

use super::{IndexConfig, SearchEngine};
use crate::protocol::{Mode, SourceDoc, TopHit};

pub struct Quarry {
    searcher: Searcher,
    /// Elasticsearch's defaults: 5 fragments of 100 characters, `<em>` tags.
    highlight: HighlightOptions,
}

fn schema() -> Schema {
    Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build()
}

fn mode(m: Mode) -> SearchMode {
    match m {
        Mode::Top10 | Mode::Top10Highlight => SearchMode::Top,
        Mode::Top10Count => SearchMode::TopCount,
        Mode::Count => SearchMode::Count,
    }
}

/// The directory kind named by `$QUARRY_DIRECTORY` (mmap when unset).
pub fn directory_from_env() -> Result<DirectoryKind> {
    match std::env::var("QUARRY_DIRECTORY") {
        Ok(v) => v
            .parse()
            .map_err(|e: String| anyhow::anyhow!("QUARRY_DIRECTORY: {e}")),
        Err(_) => Ok(DirectoryKind::Mmap),
    }
}

impl Quarry {
    /// Opens the committed index at `dir` reading through `kind`.
    pub fn open_with(dir: &Path, kind: DirectoryKind) -> Result<Self> {
        let index = Index::open_with(dir, kind)
            .with_context(|| format!("opening quarry index {} ({kind})", dir.display()))?;
        Ok(Quarry {
            searcher: index.searcher(),
            highlight: HighlightOptions::default(),
        })
    }
}

impl SearchEngine for Quarry {
    const NAME: &'static str = "quarry";
    type Query = Query;
    type Outcome = SearchResult;

    fn version() -> String {
        format!("quarry {} (this checkout)", env!("CARGO_PKG_VERSION"))
    }

    fn index(
        dir: &Path,
        docs: Vec<SourceDoc>,
        threads: usize,
        memory_mb: usize,
    ) -> Result<IndexConfig> {
        let schema = schema();
        // The budget is shared by the threads: give the same memory per thread as Tantivy gets.
        let opts = WriterOptions {
            threads,
            ram_budget_bytes: (memory_mb * threads) << 20,
            ..Default::default()
        };
        let policy = format!("{:?}", opts.merge_policy);
        let mut writer = IndexWriter::create(dir, schema.clone(), opts)?;
        for src in docs {
            let mut doc = Document::new();
            doc.add(&schema, "id", FieldValue::Int(src.id as i64))?;
            doc.add(&schema, "title", FieldValue::Str(src.title))?;
            doc.add(&schema, "body", FieldValue::Str(src.body))?;
            writer.add_document(doc)?;
        }
        let stats = writer.commit()?;
        drop(writer);
        Ok(IndexConfig {
            description: format!(
                "{threads} indexing thread(s), RAM budget {} MiB shared by the threads, merge policy {policy}, \
                 mmap directory, pairs of frequent words indexed (the schema default, format v6), \
                 one commit at the end ({} merge(s) during commit)",
                memory_mb * threads,
                stats.merges
            ),
        })
    }

    fn segments(dir: &Path) -> Result<u64> {
        Ok(Index::open(dir)?.segment_count() as u64)
    }

    fn force_merge(dir: &Path, max_segments: u64) -> Result<String> {
        let opts = WriterOptions {
            threads: 1,
            ..Default::default()
        };
        let mut writer = IndexWriter::open(dir, opts)?;
        // `QUARRY_REORDER=bp`: the merged shape's documents reordered by recursive graph
        // bisection (`quarry optimize --reorder bp`), to measure it against the plain merge.
        let bp = match std::env::var("QUARRY_REORDER").as_deref() {
            Ok("bp") => true,
            Ok("") | Ok("none") | Err(_) => false,
            Ok(other) => anyhow::bail!("QUARRY_REORDER: {other:?} is neither none nor bp"),
        };
        if bp && max_segments == 1 {
            let started = std::time::Instant::now();
            writer.optimize_reorder(&quarry::BpOptions::default())?;
            drop(writer);
            return Ok(format!(
                "IndexWriter::open + optimize_reorder(BpOptions::default()): one segment, documents reordered by BP ({:.1} s)",
                started.elapsed().as_secs_f64()
            ));
        }
        let stats = writer.force_merge(max_segments as usize)?;
        drop(writer);
        Ok(format!(
            "IndexWriter::open + force_merge({max_segments}) ({} merge(s))",
            stats.merges
        ))
    }

    fn open(dir: &Path) -> Result<Self> {
        Self::open_with(dir, directory_from_env()?)
    }

    fn parse(&self, query: &str) -> Result<Query> {
        Ok(self.searcher.parse_query(query, &["body"])?)
    }

    fn search(&self, query: &Query, m: Mode) -> Result<SearchResult> {
        Ok(self.searcher.search(query, 10, mode(m))?)
    }

    const SUPPORTS_DEADLINE: bool = true;

    fn search_until(
        &self,
        query: &Query,
        m: Mode,
        deadline: Option<std::time::Instant>,
    ) -> Result<(SearchResult, bool)> {
        let out = self
            .searcher
            .search_with(query, 10, mode(m), &SearchOptions { deadline })?;
        let late = out.timed_out;
        Ok((out, late))
    }

    fn hits(outcome: &SearchResult) -> (u64, bool) {
        (outcome.total_hits, outcome.hits_exact)
    }

    /// `Searcher::docs` (the hits' stored fields, in one call) and one `Highlighter` for the
    /// query, as the server's `highlight` does.
    fn highlight(&self, query: &Query, outcome: &SearchResult) -> Result<usize> {
        let ids: Vec<_> = outcome.top.iter().map(|hit| hit.doc).collect();
        let docs = self.searcher.docs(&ids)?;
        let h = Highlighter::new(query, self.searcher.schema());
        let mut bytes = 0;
        for doc in &docs {
            if let Some(body) = doc.get("body") {
                let frags = h.highlight_field("body", body, &self.highlight);
                bytes += frags.iter().map(String::len).sum::<usize>();
            }
        }
        Ok(bytes)
    }

    fn top(&self, outcome: &SearchResult) -> Result<Vec<TopHit>> {
        let searcher = &self.searcher;
        outcome
            .top
            .iter()
            .map(|hit| {
                let fields = searcher.stored_fields(hit.doc)?;
                let id = fields.get("id").cloned().context("stored id missing")?;
                Ok(TopHit {
                    id,
                    score: hit.score as f64,
                })
            })
            .collect()
    }
}
