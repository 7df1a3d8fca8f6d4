//! How does the server change and read one index? The only module that holds engine handles.
//!
//! An [`IndexHandle`] owns an index's [`IndexWriter`], its translog and the searcher of its
//! latest refresh. Writes go to the translog and the writer under one lock; the caller then
//! waits for [`IndexHandle::sync`] (group-committed fsync) before acknowledging. A refresh is a
//! durable commit (the engine has no near-real-time reader yet) that records the last translog
//! sequence number it contains in the commit's user data, trims the translog and opens a new
//! searcher.
//!
//! Deletes and updates need engine support that does not exist yet: they are refused with a
//! 400 naming the missing capability, and so is indexing over an existing `_id`.
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use quarry::query::Query;
use quarry::{
    Document, Index, IndexWriter, MergePolicy, Schema, SearchMode, SearchResult, Searcher,
    WriterOptions,
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
    /// Ids written since the last refresh (not yet visible to the searcher).
    pending_ids: HashSet<String>,
    dirty: bool,
    last_refresh: Instant,
}

/// One open index: writer, translog and current searcher.
pub struct IndexHandle {
    name: String,
    engine_dir: PathBuf,
    schema: Schema,
    settings: IndexSettings,
    state: Mutex<WriteState>,
    searcher: RwLock<Arc<Searcher>>,
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
        merge_policy: MergePolicy::Log { factor: 10 },
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
        let index = Index::open(&engine_dir)?;
        let committed: u64 = index
            .commit()
            .user_data
            .get(TRANSLOG_SEQ)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let schema = index.schema().clone();
        drop(index);
        let (translog, pending) =
            Translog::open(&dir.join("translog"), committed).map_err(internal)?;
        let mut writer = IndexWriter::open(&engine_dir, writer_options())?;
        if !pending.is_empty() {
            tracing::info!(index = name, ops = pending.len(), "replaying translog");
            for (seq, payload) in &pending {
                let op: Value = serde_json::from_slice(payload)
                    .map_err(|e| internal(format!("translog record {seq}: {e}")))?;
                let doc = op
                    .as_object()
                    .ok_or_else(|| internal(format!("translog record {seq} is not an object")))?;
                writer.add_document(Document::from_map(&schema, doc)?)?;
            }
            let last = pending.last().map_or(committed, |p| p.0);
            writer.set_user_data(TRANSLOG_SEQ, &last.to_string());
            writer.commit()?;
            translog.trim(last).map_err(internal)?;
        }
        let searcher = Index::open(&engine_dir)?.searcher();
        Ok(IndexHandle {
            name: name.to_string(),
            engine_dir,
            schema,
            settings,
            state: Mutex::new(WriteState {
                writer,
                pending_ids: HashSet::new(),
                dirty: false,
                last_refresh: Instant::now(),
            }),
            searcher: RwLock::new(Arc::new(searcher)),
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
        self.searcher.read().expect("searcher lock").clone()
    }

    fn new_id(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
        format!("{nanos:x}{n:04x}")
    }

    fn id_exists(&self, st: &WriteState, id: &str) -> Result<bool, ApiError> {
        if st.pending_ids.contains(id) {
            return Ok(true);
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
        let mut accepted: Vec<(usize, Document, Vec<u8>, String)> = Vec::new();
        let mut batch_ids: HashSet<String> = HashSet::new();
        for op in ops {
            let r = match op {
                WriteOp::Index { id, source, create } => {
                    self.prepare_index(&st, &batch_ids, id, source, create)
                }
                WriteOp::Update { id, .. } => Err(missing_engine("update", &id)),
                WriteOp::Delete { id } => Err(missing_engine("delete", &id)),
            };
            match r {
                Ok((doc, payload, id)) => {
                    batch_ids.insert(id.clone());
                    accepted.push((results.len(), doc, payload, id));
                    results.push(Err(ApiError::internal("not written")));
                }
                Err(e) => results.push(Err(e.in_index(&self.name))),
            }
        }
        if accepted.is_empty() {
            return (results, 0);
        }
        let payloads: Vec<Vec<u8>> = accepted.iter().map(|a| a.2.clone()).collect();
        let last = match self.translog.append(&payloads) {
            Ok(s) => s,
            Err(e) => {
                let e = internal(e);
                for (slot, ..) in accepted {
                    results[slot] = Err(e.clone());
                }
                return (results, 0);
            }
        };
        let first = last + 1 - accepted.len() as u64;
        for (k, (slot, doc, _, id)) in accepted.into_iter().enumerate() {
            results[slot] = match st.writer.add_document(doc) {
                Ok(_) => {
                    st.pending_ids.insert(id.clone());
                    st.dirty = true;
                    Ok(WriteOutcome {
                        id,
                        result: "created",
                        status: StatusCode::CREATED,
                        seq_no: first + k as u64,
                    })
                }
                Err(e) => Err(ApiError::from(e).in_index(&self.name)),
            };
        }
        (results, last)
    }

    fn prepare_index(
        &self,
        st: &WriteState,
        batch_ids: &HashSet<String>,
        id: Option<String>,
        mut source: Map<String, Value>,
        create: bool,
    ) -> Result<(Document, Vec<u8>, String), ApiError> {
        let id = match id {
            Some(id) => {
                check_id(&id)?;
                if batch_ids.contains(&id) || self.id_exists(st, &id)? {
                    return Err(if create {
                        ApiError::new(
                            StatusCode::CONFLICT,
                            "version_conflict_engine_exception",
                            format!("[{id}]: version conflict, document already exists"),
                        )
                    } else {
                        missing_engine("overwriting an existing document", &id)
                    });
                }
                id
            }
            None => self.new_id(),
        };
        if source.contains_key(ID_FIELD) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "document_parsing_exception",
                "Field [_id] is a metadata field and cannot be added inside a document",
            ));
        }
        source.insert(ID_FIELD.to_string(), Value::String(id.clone()));
        let doc = Document::from_map(&self.schema, &source).map_err(|e| match e {
            quarry::Error::Document { field, reason } if reason.starts_with("unknown field") => {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "strict_dynamic_mapping_exception",
                    format!("[{id}]: mapping is strict, dynamic introduction of [{field}] within [_doc] is not allowed"),
                )
            }
            other => ApiError::from(other),
        })?;
        let payload = serde_json::to_vec(&source).map_err(internal)?;
        Ok((doc, payload, id))
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

    /// Makes every acknowledged write searchable: commit, trim the translog, new searcher.
    /// Returns whether anything changed.
    pub fn refresh(&self) -> Result<bool, ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        st.last_refresh = Instant::now();
        if !st.dirty {
            return Ok(false);
        }
        let t = Instant::now();
        let seq = self.translog.last_seq();
        st.writer.set_user_data(TRANSLOG_SEQ, &seq.to_string());
        let stats = st.writer.commit()?;
        self.merges
            .fetch_add(stats.merges as u64, Ordering::Relaxed);
        self.metrics.operation("commit", &self.name, t.elapsed());
        self.translog.trim(seq).map_err(internal)?;
        let searcher = Index::open(&self.engine_dir)?.searcher();
        *self.searcher.write().expect("searcher lock") = Arc::new(searcher);
        st.pending_ids.clear();
        st.dirty = false;
        self.metrics.operation("refresh", &self.name, t.elapsed());
        Ok(true)
    }

    /// True when the refresh interval has passed since the last refresh and writes wait.
    pub fn refresh_due(&self) -> bool {
        let Some(ms) = self.settings.refresh_interval_ms else {
            return false;
        };
        let st = self.state.lock().expect("writer lock");
        st.dirty && st.last_refresh.elapsed() >= Duration::from_millis(ms)
    }

    /// True when `id` was written since the last refresh (a realtime get must refresh first).
    pub fn is_pending(&self, id: &str) -> bool {
        self.state
            .lock()
            .expect("writer lock")
            .pending_ids
            .contains(id)
    }

    /// Runs a search on the current searcher.
    pub fn search(
        &self,
        query: &Query,
        k: usize,
        mode: SearchMode,
    ) -> Result<(Arc<Searcher>, SearchResult), ApiError> {
        let s = self.searcher();
        let r = s.search(query, k, mode)?;
        Ok((s, r))
    }

    /// The stored document with `_id` = `id`, as its `_source` (realtime: refreshes first when
    /// the document was written since the last refresh).
    pub fn get(&self, id: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        if self.is_pending(id) {
            self.refresh()?;
        }
        let (s, r) = self.search(&Query::term(ID_FIELD, id), 1, SearchMode::Top)?;
        match r.top.first() {
            Some(hit) => Ok(Some(source_of(s.stored_fields(hit.doc)?))),
            None => Ok(None),
        }
    }

    /// Figures for `/_metrics` and `_cat/indices`.
    pub fn gauges(&self) -> IndexGauges {
        let s = self.searcher();
        IndexGauges {
            docs: s.segments().iter().map(|g| u64::from(g.doc_count())).sum(),
            segments: s.segments().len() as u64,
            translog_bytes: self.translog.size_bytes(),
            merges: self.merges.load(Ordering::Relaxed),
        }
    }

    /// Commits pending writes (shutdown and delete paths).
    pub fn close(&self) -> Result<(), ApiError> {
        self.refresh().map(|_| ())
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

fn missing_engine(what: &str, id: &str) -> ApiError {
    ApiError::illegal(format!(
        "[{id}]: {what} is not supported yet: it needs deletes in the engine (issue 8)"
    ))
}
