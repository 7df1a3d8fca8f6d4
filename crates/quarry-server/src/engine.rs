//! How does the server change and read one index? The only module that holds engine handles.
//!
//! An [`IndexHandle`] owns an index's [`IndexWriter`] (which holds the index's write lock), its
//! near-real-time [`IndexReader`] and its translog. Writes go to the translog and the writer
//! under one lock; the caller then waits for [`IndexHandle::sync`] (group-committed fsync)
//! before acknowledging. A refresh makes writes searchable without a commit
//! ([`IndexWriter::refresh`]); a commit (every [`COMMIT_INTERVAL`], when the translog grows
//! past [`COMMIT_TRANSLOG_BYTES`], and on close) records the last translog sequence number it
//! contains in the commit's user data and trims the translog.
//!
//! Documents are keyed by `_id`: indexing an existing id replaces it atomically
//! ([`IndexWriter::update_document`]), `update` merges a partial `doc` into the stored source,
//! `delete` deletes by term.
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use quarry::query::Query;
use quarry::{
    Document, FieldValue, IndexReader, IndexWriter, Schema, SearchMode, SearchOptions,
    SearchResult, Searcher, WriterOptions,
};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::mapping::ID_FIELD;
use crate::metrics::{IndexGauges, Metrics};
use crate::translog::Translog;

/// The commit user-data key holding the last translog sequence number a commit contains.
const TRANSLOG_SEQ: &str = "quarry.translog_seq";
/// The per-index settings file, beside the engine's directory.
const SETTINGS_FILE: &str = "settings.json";
/// Longest time between commits while writes arrive.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(10);
/// Translog size that triggers a commit.
pub const COMMIT_TRANSLOG_BYTES: u64 = 64 << 20;

/// One write of a bulk request or a document endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// `index` (overwrite allowed) or `create` (fails if the id exists).
    Index {
        id: Option<String>,
        source: Map<String, Value>,
        create: bool,
    },
    /// Partial update with `doc`.
    Update { id: String, doc: Map<String, Value> },
    /// Delete by id.
    Delete { id: String },
}

impl WriteOp {
    /// The bulk action name of the operation.
    pub fn action(&self) -> &'static str {
        match self {
            WriteOp::Index { create: true, .. } => "create",
            WriteOp::Index { .. } => "index",
            WriteOp::Update { .. } => "update",
            WriteOp::Delete { .. } => "delete",
        }
    }
}

/// What a successful write did.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOutcome {
    pub id: String,
    /// `created`, `updated`, `deleted`, `noop`.
    pub result: &'static str,
    pub status: StatusCode,
    pub seq_no: u64,
}

/// Per-index settings (`settings.json`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexSettings {
    /// Milliseconds between automatic refreshes; `None` disables them.
    pub refresh_interval_ms: Option<u64>,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            refresh_interval_ms: Some(1000),
        }
    }
}

struct WriteState {
    writer: IndexWriter,
    /// Ids written or deleted since the last refresh (the searcher does not show it yet):
    /// whether the id exists now.
    pending: HashMap<String, bool>,
    dirty: bool,
    last_refresh: Instant,
    /// Writes since the last commit.
    uncommitted: bool,
    last_commit: Instant,
}

/// One open index: writer, translog and current searcher.
pub struct IndexHandle {
    name: String,
    schema: Schema,
    settings: IndexSettings,
    state: Mutex<WriteState>,
    reader: IndexReader,
    translog: Translog,
    metrics: Arc<Metrics>,
    merges: AtomicU64,
    id_counter: AtomicU64,
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

/// A translog record: `{"index": source}` (source holds `_id`) or `{"delete": id}`.
enum Record {
    Index(Map<String, Value>),
    Delete(String),
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let v = match self {
            Record::Index(src) => serde_json::json!({"index": src}),
            Record::Delete(id) => serde_json::json!({"delete": id}),
        };
        serde_json::to_vec(&v).expect("JSON values serialize")
    }

    fn decode(seq: u64, payload: &[u8]) -> Result<Record, ApiError> {
        let bad = |why: &str| internal(format!("translog record {seq}: {why}"));
        let v: Value = serde_json::from_slice(payload).map_err(|e| bad(&e.to_string()))?;
        match v {
            Value::Object(mut m) => match (m.remove("index"), m.remove("delete")) {
                (Some(Value::Object(src)), None) => Ok(Record::Index(src)),
                (None, Some(Value::String(id))) => Ok(Record::Delete(id)),
                _ => Err(bad("neither an index nor a delete")),
            },
            _ => Err(bad("not an object")),
        }
    }

    /// Applies the record to the writer.
    fn apply(self, schema: &Schema, writer: &mut IndexWriter) -> Result<(), ApiError> {
        match self {
            Record::Index(src) => {
                let id = match src.get(ID_FIELD) {
                    Some(Value::String(id)) => id.clone(),
                    _ => return Err(internal("translog document without _id")),
                };
                let doc = Document::from_map(schema, &src)?;
                writer.update_document(ID_FIELD, &FieldValue::Str(id), doc)?;
            }
            Record::Delete(id) => {
                writer.delete_term(ID_FIELD, &FieldValue::Str(id))?;
            }
        }
        Ok(())
    }
}

impl IndexHandle {
    /// Creates a new index in `dir` (which must not exist).
    pub fn create(
        name: &str,
        dir: &Path,
        schema: Schema,
        settings: IndexSettings,
        metrics: Arc<Metrics>,
    ) -> Result<Self, ApiError> {
        std::fs::create_dir_all(dir).map_err(internal)?;
        let engine_dir = dir.join("index");
        let mut writer = IndexWriter::create(&engine_dir, schema, writer_options())?;
        writer.set_user_data(TRANSLOG_SEQ, "0");
        writer.commit()?;
        drop(writer);
        let text = serde_json::to_vec(&settings).map_err(internal)?;
        std::fs::write(dir.join(SETTINGS_FILE), text).map_err(internal)?;
        Self::open(name, dir, metrics)
    }

    /// Opens the index in `dir`, replays its translog into a commit and opens a searcher.
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
        let committed: u64 = writer
            .user_data()
            .get(TRANSLOG_SEQ)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let schema = writer.schema().clone();
        let (translog, pending) =
            Translog::open(&dir.join("translog"), committed).map_err(internal)?;
        if !pending.is_empty() {
            tracing::info!(index = name, ops = pending.len(), "replaying translog");
            for (seq, payload) in &pending {
                Record::decode(*seq, payload)?.apply(&schema, &mut writer)?;
            }
            let last = pending.last().map_or(committed, |p| p.0);
            writer.set_user_data(TRANSLOG_SEQ, &last.to_string());
            writer.commit()?;
            translog.trim(last).map_err(internal)?;
        }
        let reader = writer.reader()?;
        Ok(IndexHandle {
            name: name.to_string(),
            schema,
            settings,
            state: Mutex::new(WriteState {
                writer,
                pending: HashMap::new(),
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

    fn id_exists(&self, st: &WriteState, id: &str) -> Result<bool, ApiError> {
        if let Some(exists) = st.pending.get(id) {
            return Ok(*exists);
        }
        let r = self
            .searcher()
            .search(&Query::term(ID_FIELD, id), 1, SearchMode::Count)?;
        Ok(r.total_hits > 0)
    }

    /// Applies writes in order; returns one result per op and the translog sequence number the
    /// caller must [`sync`](Self::sync) to before acknowledging.
    pub fn write(&self, ops: Vec<WriteOp>) -> (Vec<Result<WriteOutcome, ApiError>>, u64) {
        let mut st = self.state.lock().expect("writer lock");
        let mut results = Vec::with_capacity(ops.len());
        let mut last = 0;
        for op in ops {
            let r = self.write_one(&mut st, op).map(|(o, seq)| {
                last = seq;
                o
            });
            results.push(r.map_err(|e| e.in_index(&self.name)));
        }
        (results, last)
    }

    /// Logs `rec` to the translog, then applies it to the writer. Returns its sequence number.
    fn log_and_apply(&self, st: &mut WriteState, rec: Record) -> Result<u64, ApiError> {
        let seq = self.translog.append(&[rec.encode()]).map_err(internal)?;
        rec.apply(&self.schema, &mut st.writer)?;
        st.dirty = true;
        st.uncommitted = true;
        Ok(seq)
    }

    fn write_one(&self, st: &mut WriteState, op: WriteOp) -> Result<(WriteOutcome, u64), ApiError> {
        match op {
            WriteOp::Index { id, source, create } => {
                let (id, existed) = match id {
                    Some(id) => {
                        check_id(&id)?;
                        let existed = self.id_exists(st, &id)?;
                        if existed && create {
                            return Err(ApiError::new(
                                StatusCode::CONFLICT,
                                "version_conflict_engine_exception",
                                format!("[{id}]: version conflict, document already exists"),
                            ));
                        }
                        (id, existed)
                    }
                    None => (self.new_id(), false),
                };
                let src = self.checked_source(&id, source)?;
                let seq = self.log_and_apply(st, Record::Index(src))?;
                st.pending.insert(id.clone(), true);
                Ok((outcome(id, existed, "updated", seq), seq))
            }
            WriteOp::Update { id, doc } => {
                check_id(&id)?;
                let Some(mut src) = self.current_source(st, &id)? else {
                    return Err(ApiError::new(
                        StatusCode::NOT_FOUND,
                        "document_missing_exception",
                        format!("[{id}]: document missing"),
                    ));
                };
                for (k, v) in doc {
                    src.insert(k, v);
                }
                let src = self.checked_source(&id, src)?;
                let seq = self.log_and_apply(st, Record::Index(src))?;
                st.pending.insert(id.clone(), true);
                Ok((outcome(id, true, "updated", seq), seq))
            }
            WriteOp::Delete { id } => {
                check_id(&id)?;
                let existed = self.id_exists(st, &id)?;
                let seq = self.log_and_apply(st, Record::Delete(id.clone()))?;
                st.pending.insert(id.clone(), false);
                let mut o = outcome(id, true, "deleted", seq);
                if !existed {
                    o.result = "not_found";
                    o.status = StatusCode::NOT_FOUND;
                }
                Ok((o, seq))
            }
        }
    }

    /// Checks a source against the schema; returns it with `_id` added.
    fn checked_source(
        &self,
        id: &str,
        mut source: Map<String, Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        if source.contains_key(ID_FIELD) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "document_parsing_exception",
                "Field [_id] is a metadata field and cannot be added inside a document",
            ));
        }
        source.insert(ID_FIELD.to_string(), Value::String(id.to_string()));
        Document::from_map(&self.schema, &source).map_err(|e| match e {
            quarry::Error::Document { field, reason } if reason.starts_with("unknown field") => {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "strict_dynamic_mapping_exception",
                    format!("[{id}]: mapping is strict, dynamic introduction of [{field}] within [_doc] is not allowed"),
                )
            }
            other => ApiError::from(other),
        })?;
        Ok(source)
    }

    /// The current source of `id` (refreshing first when it changed since the last refresh).
    fn current_source(
        &self,
        st: &mut WriteState,
        id: &str,
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        if st.pending.contains_key(id) {
            self.refresh_locked(st)?;
        }
        let s = self.reader.searcher();
        let r = s.search(&Query::term(ID_FIELD, id), 1, SearchMode::Top)?;
        match r.top.first() {
            Some(hit) => Ok(Some(source_of(s.stored_fields(hit.doc)?))),
            None => Ok(None),
        }
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

    fn refresh_locked(&self, st: &mut WriteState) -> Result<bool, ApiError> {
        st.last_refresh = Instant::now();
        if !st.dirty {
            return Ok(false);
        }
        let t = Instant::now();
        st.writer.refresh()?;
        self.reader.reload()?;
        st.pending.clear();
        st.dirty = false;
        // Merges keep pace with the segments refreshes flush (the merge runs on its own thread;
        // it joins the writer at a later refresh or commit).
        if let Err(e) = st.writer.maybe_merge_in_background() {
            tracing::warn!(index = %self.name, error = %e, "could not start a background merge");
        }
        self.note_merges(st);
        self.metrics.operation("refresh", &self.name, t.elapsed());
        Ok(true)
    }

    /// Makes every acknowledged write searchable (near-real-time, no commit). Returns whether
    /// anything changed.
    pub fn refresh(&self) -> Result<bool, ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.refresh_locked(&mut st)
    }

    /// Counts the background merges the writer has installed so far (the `merges` gauge).
    fn note_merges(&self, st: &WriteState) {
        let done = st.writer.background_merges_done().len() as u64;
        self.merges.store(done, Ordering::Relaxed);
    }

    /// Makes every write durable in the index itself and trims the translog.
    ///
    /// Merges run in the background: a commit installs a finished merge, starts the merge
    /// policy's next one on the merge thread and returns; it never waits for a merge while it
    /// holds the writer mutex.
    pub fn commit(&self) -> Result<(), ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.commit_locked(&mut st)
    }

    fn commit_locked(&self, st: &mut WriteState) -> Result<(), ApiError> {
        st.last_commit = Instant::now();
        if !st.uncommitted {
            return Ok(());
        }
        let t = Instant::now();
        let seq = self.translog.last_seq();
        st.writer.set_user_data(TRANSLOG_SEQ, &seq.to_string());
        match st.writer.commit() {
            Ok(_) => {}
            // The commit itself stands; only a merge (in the background, earlier) failed.
            Err(quarry::Error::MergeFailed { source, .. }) => {
                tracing::warn!(index = %self.name, error = %source, "a background merge failed");
            }
            Err(e) => return Err(e.into()),
        }
        self.note_merges(st);
        self.translog.trim(seq).map_err(internal)?;
        self.reader.reload()?;
        st.pending.clear();
        st.dirty = false;
        st.uncommitted = false;
        self.metrics.operation("commit", &self.name, t.elapsed());
        Ok(())
    }

    /// True when the refresh interval has passed since the last refresh and writes wait.
    /// Never blocks (a busy writer means "not now").
    pub fn refresh_due(&self) -> bool {
        let Some(ms) = self.settings.refresh_interval_ms else {
            return false;
        };
        let Ok(st) = self.state.try_lock() else {
            return false;
        };
        st.dirty && st.last_refresh.elapsed() >= Duration::from_millis(ms)
    }

    /// True when uncommitted writes are older than [`COMMIT_INTERVAL`] or the translog is
    /// larger than [`COMMIT_TRANSLOG_BYTES`]. Never blocks.
    pub fn commit_due(&self) -> bool {
        let Ok(st) = self.state.try_lock() else {
            return false;
        };
        st.uncommitted
            && (st.last_commit.elapsed() >= COMMIT_INTERVAL
                || self.translog.size_bytes() >= COMMIT_TRANSLOG_BYTES)
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

    /// The stored document with `_id` = `id`, as its `_source` (realtime: refreshes first when
    /// the document changed since the last refresh).
    pub fn get(&self, id: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.current_source(&mut st, id)
    }

    /// Figures for `/_metrics` and `_cat/indices`.
    pub fn gauges(&self) -> IndexGauges {
        let s = self.reader.searcher();
        IndexGauges {
            docs: s.live_doc_count(),
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

fn outcome(id: String, existed: bool, updated: &'static str, seq_no: u64) -> WriteOutcome {
    WriteOutcome {
        id,
        result: if existed { updated } else { "created" },
        status: if existed {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        },
        seq_no,
    }
}

/// A stored document without the internal `_id` field.
pub fn source_of(mut stored: Map<String, Value>) -> Map<String, Value> {
    stored.remove(ID_FIELD);
    stored
}

fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 512 {
        return Err(ApiError::illegal(format!(
            "id [{}] must be 1 to 512 bytes long",
            id.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
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
        let h = IndexHandle::create("i", &dir, schema, IndexSettings::default(), metrics).unwrap();
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
