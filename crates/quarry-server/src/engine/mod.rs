//! How does the server hold one index? The only module that holds engine handles.
//!
//! An [`IndexHandle`] owns an index's [`IndexWriter`] (which holds the index's write lock), its
//! near-real-time [`IndexReader`], its translog and its primary term. This module opens and
//! creates indexes (replaying the translog) and reads them; the questions around it live in
//! sub-modules:
//! - [`write`](mod@write): what a write does (checks, versions, translog, writer);
//! - [`versions`]: `_version`, `_seq_no`, `_primary_term` and conditional writes, and how
//!   they survive restarts;
//! - [`refresh`]: when writes become searchable and durable, and `refresh=wait_for`;
//! - `record`: the translog record and its replay.
//!
//! Documents are keyed by `_id`: indexing an existing id replaces it atomically
//! ([`IndexWriter::update_document`]), `update` merges a partial `doc` into the stored source,
//! `delete` deletes by term.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use quarry::query::Query;
use quarry::{
    IndexReader, IndexWriter, Schema, SearchMode, SearchOptions, SearchResult, Searcher,
    WriterOptions,
};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::mapping::ID_FIELD;
use crate::metrics::{IndexGauges, Metrics};
use crate::translog::Translog;

mod record;
pub mod refresh;
pub mod versions;
pub mod write;

use record::Record;
pub use refresh::{COMMIT_INTERVAL, COMMIT_TRANSLOG_BYTES};
pub use versions::{Condition, DocMeta, VersionType};
pub use write::{WriteOp, WriteOutcome};

/// The commit user-data key holding the last translog sequence number a commit contains (the
/// index's highest `_seq_no` plus one).
const TRANSLOG_SEQ: &str = "quarry.translog_seq";
/// The per-index settings file, beside the engine's directory.
const SETTINGS_FILE: &str = "settings.json";

/// Per-index settings (`settings.json`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexSettings {
    /// Milliseconds between automatic refreshes; `None` disables them.
    pub refresh_interval_ms: Option<u64>,
    /// `index.number_of_replicas`: recorded and reported (a single node assigns none, so an
    /// index with replicas is `yellow`, as in Elasticsearch).
    #[serde(default)]
    pub number_of_replicas: u32,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            refresh_interval_ms: Some(1000),
            number_of_replicas: 0,
        }
    }
}

/// A document's `_source` and its metadata.
pub type StoredDoc = (Map<String, Value>, DocMeta);

/// What the writer knows about an id written since the last refresh (or deleted recently).
struct DocState {
    meta: DocMeta,
    live: bool,
    at: Instant,
}

struct WriteState {
    writer: IndexWriter,
    /// Ids written or deleted since the last refresh (the searcher does not show them yet),
    /// and the tombstones of recent deletes.
    docs: HashMap<String, DocState>,
    dirty: bool,
    last_refresh: Instant,
    /// Writes since the last commit.
    uncommitted: bool,
    last_commit: Instant,
}

/// One open index: writer, translog and current searcher.
pub struct IndexHandle {
    name: String,
    dir: PathBuf,
    schema: Schema,
    settings: IndexSettings,
    /// The index sort fixed at creation (`index.sort.*`), kept in the engine's commit point.
    index_sort: Option<quarry::IndexSort>,
    primary_term: u64,
    state: Mutex<WriteState>,
    reader: IndexReader,
    translog: Translog,
    metrics: Arc<Metrics>,
    merges: AtomicU64,
    id_counter: AtomicU64,
    /// Refresh generation, which `refresh=wait_for` watches.
    refreshes: tokio::sync::watch::Sender<u64>,
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e.to_string())
}

fn writer_options() -> WriterOptions {
    WriterOptions {
        threads: 1,
        ram_budget_bytes: 64 << 20,
        ..WriterOptions::default()
    }
}

impl IndexHandle {
    /// Creates a new index in `dir` (which must not exist).
    pub fn create(
        name: &str,
        dir: &Path,
        schema: Schema,
        settings: IndexSettings,
        index_sort: Option<quarry::IndexSort>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, ApiError> {
        std::fs::create_dir_all(dir).map_err(internal)?;
        let engine_dir = dir.join("index");
        let opts = WriterOptions {
            index_sort,
            ..writer_options()
        };
        let mut writer = IndexWriter::create(&engine_dir, schema, opts)?;
        writer.set_user_data(TRANSLOG_SEQ, "0");
        writer.commit()?;
        drop(writer);
        let text = serde_json::to_vec(&settings).map_err(internal)?;
        std::fs::write(dir.join(SETTINGS_FILE), text).map_err(internal)?;
        Self::open(name, dir, metrics)
    }

    /// Opens the index in `dir`, replays its translog into a commit, takes the next primary
    /// term and opens a searcher.
    pub fn open(name: &str, dir: &Path, metrics: Arc<Metrics>) -> Result<Self, ApiError> {
        let engine_dir = dir.join("index");
        let settings = match std::fs::read(dir.join(SETTINGS_FILE)) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| internal(format!("{}: {e}", dir.join(SETTINGS_FILE).display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => IndexSettings::default(),
            Err(e) => return Err(internal(e)),
        };
        let mut writer = IndexWriter::open(&engine_dir, writer_options())?;
        // Merges run on their own thread: a commit or refresh never waits for one while it
        // holds the writer mutex (see `commit`).
        writer.set_background_merges(true);
        let schema = writer.schema().clone();
        let index_sort = writer.index_sort().cloned();
        let translog = replay_translog(name, dir, &schema, &mut writer)?;
        let primary_term = versions::next_primary_term(dir)?;
        let reader = writer.reader()?;
        Ok(IndexHandle {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            schema,
            settings,
            index_sort,
            primary_term,
            state: Mutex::new(WriteState {
                writer,
                docs: HashMap::new(),
                dirty: false,
                last_refresh: Instant::now(),
                uncommitted: false,
                last_commit: Instant::now(),
            }),
            reader,
            translog,
            metrics,
            merges: AtomicU64::new(0),
            id_counter: AtomicU64::new(0),
            refreshes: tokio::sync::watch::Sender::new(0),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    pub fn settings(&self) -> IndexSettings {
        self.settings
    }
    pub fn index_sort(&self) -> Option<&quarry::IndexSort> {
        self.index_sort.as_ref()
    }
    /// The primary term of this run of the server (see [`versions`]).
    pub fn primary_term(&self) -> u64 {
        self.primary_term
    }

    /// The query vector of `text` for the embedded vector field `field`, by the field's model
    /// (the index's own copy, see [`crate::inference`]).
    pub fn embed_query(&self, field: &str, text: &str) -> Result<Vec<f32>, ApiError> {
        crate::inference::embed_query(&self.dir.join("index"), &self.schema, field, text)
            .map_err(|e| e.in_index(&self.name))
    }

    /// The searcher of the latest refresh.
    pub fn searcher(&self) -> Arc<Searcher> {
        Arc::new(self.reader.searcher())
    }

    fn new_id(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
        format!("{nanos:x}{n:04x}")
    }

    /// The stored source and metadata of `id` in `searcher`.
    fn lookup(&self, searcher: &Searcher, id: &str) -> Result<Option<StoredDoc>, ApiError> {
        let r = searcher.search(&Query::term(ID_FIELD, id), 1, SearchMode::Top)?;
        match r.top.first() {
            Some(hit) => Ok(Some(split_stored(searcher.stored_fields(hit.doc)?))),
            None => Ok(None),
        }
    }

    /// The current source and metadata of `id` (refreshing first when it changed since the last
    /// refresh).
    fn current_source(&self, st: &mut WriteState, id: &str) -> Result<Option<StoredDoc>, ApiError> {
        if st.docs.contains_key(id) {
            self.refresh_locked(st)?;
        }
        self.lookup(&self.reader.searcher(), id)
    }

    /// Waits until the translog holds every record up to `seq` durably.
    pub fn sync(&self, seq: u64) -> Result<(), ApiError> {
        if seq == 0 {
            return Ok(());
        }
        let t = Instant::now();
        self.translog.sync_to(seq).map_err(internal)?;
        self.metrics
            .operation("translog_sync", &self.name, t.elapsed());
        Ok(())
    }

    /// Counts the background merges the writer has installed so far (the `merges` gauge).
    fn note_merges(&self, st: &WriteState) {
        let done = st.writer.background_merges_done().len() as u64;
        self.merges.store(done, Ordering::Relaxed);
    }

    /// Runs a search on the current searcher (with a deadline when `opts` has one).
    pub fn search(
        &self,
        query: &Query,
        k: usize,
        mode: SearchMode,
        opts: &SearchOptions,
    ) -> Result<(Arc<Searcher>, SearchResult), ApiError> {
        let s = self.searcher();
        let r = s.search_with(query, k, mode, opts)?;
        Ok((s, r))
    }

    /// The stored document with `_id` = `id`, as its `_source` and metadata (realtime:
    /// refreshes first when the document changed since the last refresh).
    pub fn get(&self, id: &str) -> Result<Option<StoredDoc>, ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.current_source(&mut st, id)
    }

    /// The stored document with `_id` = `id` as the last refresh shows it (`realtime=false`):
    /// it neither refreshes nor takes the writer lock, so a write not yet refreshed is unseen.
    pub fn get_refreshed(&self, id: &str) -> Result<Option<StoredDoc>, ApiError> {
        self.lookup(&self.searcher(), id)
    }

    /// Figures for `/_metrics`, `_cat/indices` and `_cluster/health`.
    pub fn gauges(&self) -> IndexGauges {
        let s = self.reader.searcher();
        let docs = s.live_doc_count();
        let all: u64 = s.segments().iter().map(|g| u64::from(g.doc_count())).sum();
        IndexGauges {
            docs,
            deleted_docs: all.saturating_sub(docs),
            store_bytes: dir_size(&self.dir),
            segments: s.segments().len() as u64,
            translog_bytes: self.translog.size_bytes(),
            merges: self.merges.load(Ordering::Relaxed),
        }
    }

    /// Commits pending writes, then waits for the running background merge, if any, and
    /// commits its result (shutdown path). A merge that fails here is logged: the commit of
    /// every acknowledged write stands.
    pub fn close(&self) -> Result<(), ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.commit_locked(&mut st)?;
        match st.writer.commit_running_merge() {
            Ok(_) => {}
            Err(quarry::Error::MergeFailed { source, .. }) => {
                tracing::warn!(index = %self.name, error = %source, "a background merge failed at shutdown");
            }
            Err(e) => return Err(e.into()),
        }
        self.note_merges(&st);
        Ok(())
    }
}

/// Opens the translog and replays the records after the last commit into a new commit.
fn replay_translog(
    name: &str,
    dir: &Path,
    schema: &Schema,
    writer: &mut IndexWriter,
) -> Result<Translog, ApiError> {
    let committed: u64 = writer
        .user_data()
        .get(TRANSLOG_SEQ)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (translog, pending) = Translog::open(&dir.join("translog"), committed).map_err(internal)?;
    if !pending.is_empty() {
        tracing::info!(index = name, ops = pending.len(), "replaying translog");
        for (seq, payload) in &pending {
            Record::decode(*seq, payload)?.apply(schema, writer)?;
        }
        let last = pending.last().map_or(committed, |p| p.0);
        writer.set_user_data(TRANSLOG_SEQ, &last.to_string());
        writer.commit()?;
        translog.trim(last).map_err(internal)?;
    }
    Ok(translog)
}

/// Bytes of the files under `dir` (the index's store size; unreadable entries count 0).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// A stored document without the internal `_id` and version fields.
pub fn source_of(stored: Map<String, Value>) -> Map<String, Value> {
    split_stored(stored).0
}

/// A stored document split into its `_source` and its metadata.
pub fn split_stored(mut stored: Map<String, Value>) -> (Map<String, Value>, DocMeta) {
    let meta = DocMeta::of_stored(&stored);
    stored.remove(ID_FIELD);
    for f in versions::META_FIELDS {
        stored.remove(f);
    }
    (stored, meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(i: usize) -> WriteOp {
        let mut source = Map::new();
        source.insert("body".into(), Value::String(format!("word{i} common")));
        WriteOp::Index {
            id: Some(format!("d{i}")),
            source,
            create: false,
            cond: Condition::default(),
        }
    }

    /// Commits start the merge policy's merges on the merge thread (the tiered policy merges
    /// when an index passes 10 small segments); closing waits for the running one and commits
    /// it, so the reopened index holds every document in fewer segments.
    #[test]
    fn merges_run_in_the_background_and_close_commits_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("i");
        let mappings = serde_json::json!({"properties": {"body": {"type": "text"}}});
        let schema = crate::mapping::schema_from_mappings(Some(&mappings)).unwrap();
        let metrics = Arc::new(Metrics::default());
        let h = IndexHandle::create("i", &dir, schema, IndexSettings::default(), None, metrics)
            .unwrap();
        for i in 0..14 {
            let (results, seq) = h.write(vec![doc(i)]);
            assert!(results.iter().all(|r| r.is_ok()));
            h.sync(seq).unwrap();
            // One segment per commit.
            h.commit().unwrap();
        }
        assert!(
            h.state.lock().unwrap().writer.background_merges(),
            "the server's writer merges in the background"
        );
        h.close().unwrap();
        assert!(h.gauges().merges >= 1, "a merge was installed");
        drop(h);
        let index = quarry::Index::open(&dir.join("index")).unwrap();
        assert_eq!(index.live_doc_count(), 14);
        assert!(
            index.segment_count() < 14,
            "{} segments",
            index.segment_count()
        );
        // The reopened handle sees every document.
        let h = IndexHandle::open("i", &dir, Arc::new(Metrics::default())).unwrap();
        assert_eq!(h.searcher().live_doc_count(), 14);
    }
}
