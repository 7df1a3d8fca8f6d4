//! Building indexes: the [`IndexWriter`] turns documents into immutable segments with one
//! in-memory segment per thread, applies deletions and updates, makes them searchable
//! (near-real-time) or durable (commit), and merges segments.
pub(crate) mod builder;
mod byte_arena;
mod deletes;
mod merge;
mod policy;
mod reorder;
mod scheduler;
mod segment_writer;
mod term_table;

pub use merge::merge_segments;
pub use policy::{MergePolicy, SegmentSize};
pub use reorder::BpOptions;
pub use scheduler::MergeInfo;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use quarry_store::{open_directory, Directory, FileLock};

use crate::codec::format;
use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::{CommitPoint, SegmentMeta, SegmentRef};
use crate::document::{Document, FieldValue};
use crate::index::{held_files, latest_commit, Index, SegmentReader};
use crate::query::Query;
use crate::reader::{IndexReader, NrtSlot};
use crate::schema::Schema;
use crate::{failpoint, Error, Result};
use builder::SegmentBuilder;
use deletes::{DeleteOp, SegState};
use scheduler::RunningMerge;

/// Settings of an [`IndexWriter`].
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Indexing threads, each with its own in-memory segment (default: all cores).
    pub threads: usize,
    /// Memory for in-memory segments, shared by the threads; a thread flushes when its segment
    /// exceeds its share.
    pub ram_budget_bytes: usize,
    pub merge_policy: MergePolicy,
    pub directory: quarry_store::DirectoryKind,
    /// The index sort of a new index ([`crate::index_sort`]): fixed at creation and kept in the
    /// commit point. Opening an existing index with `Some` sort different from its own is an
    /// error ([`Error::IndexSort`]); `None` takes the index's.
    pub index_sort: Option<crate::index_sort::IndexSort>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            ram_budget_bytes: 512 << 20,
            merge_policy: MergePolicy::default(),
            directory: quarry_store::DirectoryKind::Mmap,
            index_sort: None,
        }
    }
}

/// What a commit did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitStats {
    pub generation: u64,
    /// Documents in the committed segments, deleted ones included.
    pub docs: u64,
    /// Documents not deleted.
    pub live_docs: u64,
    pub segments: usize,
    pub merges: usize,
    pub seconds: f64,
}

enum Msg {
    Docs(Vec<(u64, Document)>),
    Flush(SyncSender<()>),
}

struct Shared {
    dir: Arc<dyn Directory>,
    schema: Schema,
    next_segment: AtomicU64,
    flushed: Mutex<Vec<SegmentMeta>>,
    /// Segments of in-memory builders: their stored fields files are being written already.
    building: Mutex<HashSet<String>>,
    failure: Mutex<Option<String>>,
    budget_per_thread: usize,
    /// The index sort: flushed segments are rewritten in its order.
    index_sort: Option<crate::index_sort::IndexSort>,
}

impl Shared {
    fn segment_name(&self) -> String {
        format!("s{:06}", self.next_segment.fetch_add(1, Ordering::SeqCst))
    }

    fn flush(&self, builder: SegmentBuilder) {
        let name = builder.name().to_string();
        if builder.doc_count() == 0 {
            self.building.lock().expect("building set").remove(&name);
            return;
        }
        let result = builder.flush().and_then(|meta| match &self.index_sort {
            Some(sort) => self.sort_flushed(meta, sort),
            None => Ok(meta),
        });
        self.building.lock().expect("building set").remove(&name);
        match result {
            Ok(meta) => self.flushed.lock().expect("flushed list").push(meta),
            Err(e) => {
                let mut f = self.failure.lock().expect("failure slot");
                f.get_or_insert_with(|| format!("flushing segment {name}: {e}"));
            }
        }
    }

    /// Rewrites a flushed segment in index-sort order, as a merge of that one segment into a
    /// new one (the unsorted one is removed). The simplest correct way: the merge path already
    /// carries every structure through a doc map; the price is writing the segment twice. A
    /// segment already in order (documents added in sort order) only has its meta rewritten
    /// to record the sort (no commit references it yet).
    fn sort_flushed(
        &self,
        mut meta: SegmentMeta,
        sort: &crate::index_sort::IndexSort,
    ) -> Result<SegmentMeta> {
        let seg = SegmentReader::open(self.dir.clone(), &meta.name, &self.schema)?;
        if crate::index::sorted::first_out_of_order(&seg, sort)?.is_none() {
            drop(seg);
            meta.index_sort = Some(sort.clone());
            let file = SegmentMeta::file_name(&meta.name, "meta");
            segment_writer::write_file(&*self.dir, &file, &meta.encode())?;
            return Ok(meta);
        }
        let target = self.segment_name();
        self.building
            .lock()
            .expect("building set")
            .insert(target.clone());
        let result = merge::merge_segments(
            &*self.dir,
            &self.schema,
            &[Arc::new(seg)],
            &[None],
            &target,
            Some(sort),
        );
        self.building.lock().expect("building set").remove(&target);
        for (ext, _) in format::SEGMENT_FILES {
            let _ = self.dir.delete(&SegmentMeta::file_name(&meta.name, ext));
        }
        if result.is_err() {
            for (ext, _) in format::SEGMENT_FILES {
                let _ = self.dir.delete(&SegmentMeta::file_name(&target, ext));
            }
        }
        result
    }

    fn add(&self, builder: &mut Option<SegmentBuilder>, seq: u64, doc: &Document) {
        let b = builder.get_or_insert_with(|| {
            let name = self.segment_name();
            self.building
                .lock()
                .expect("building set")
                .insert(name.clone());
            SegmentBuilder::new(&self.schema, self.dir.clone(), name)
        });
        b.add(seq, doc);
        if b.nearly_full()
            || (b.doc_count().is_multiple_of(64) && b.mem_bytes() >= self.budget_per_thread)
        {
            self.flush(builder.take().expect("builder"));
        }
    }
}

// One value per writer: the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
enum Workers {
    Inline(Option<SegmentBuilder>),
    Threads {
        senders: Vec<SyncSender<Msg>>,
        handles: Vec<JoinHandle<()>>,
        batch: Vec<(u64, Document)>,
        next: usize,
    },
}

const BATCH: usize = 256;

/// Adds, updates and deletes documents, makes them searchable and commits them.
///
/// One writer per index: it holds the directory's `write.lock` for its whole life, and a second
/// writer (in this or another process) gets [`Error::Locked`].
///
/// Changes become visible to readers from [`reader`](Self::reader) after
/// [`refresh`](Self::refresh) (near-real-time, not durable), and durable and visible to newly
/// opened readers after [`commit`](Self::commit). A crash at any point leaves the last commit
/// intact: segment and deletion files are written and fsynced first, then a new commit point is
/// written to a temporary file, fsynced, renamed into place and the directory fsynced.
///
/// Every change returns a sequence number (an "opstamp"): a deletion removes the matching
/// documents added before it, never those added after it, which makes
/// [`update_document`](Self::update_document) atomic.
pub struct IndexWriter {
    shared: Arc<Shared>,
    opts: WriterOptions,
    /// The last durable commit.
    commit: CommitPoint,
    next_seq: u64,
    workers: Workers,
    _lock: FileLock,
    /// The segments of the current state (committed and flushed since), in index order.
    segs: Vec<SegState>,
    /// Deletions not yet applied to the segments, with their opstamps.
    deletes: Vec<(DeleteOp, u64)>,
    /// The current state opened for reading (segment readers are reused from it).
    view: Option<Index>,
    nrt: Option<Arc<NrtSlot>>,
    /// Files of the newest commit point on disk (kept by clean-up).
    durable_files: HashSet<String>,
    /// Merge in the background instead of inside `commit`.
    background: bool,
    running: Option<RunningMerge>,
    /// A background merge that failed, reported by the next commit.
    merge_error: Option<Error>,
    /// Background merges installed so far.
    merges_done: Vec<scheduler::MergeInfo>,
}

fn acquire_lock(path: &Path) -> Result<FileLock> {
    FileLock::try_acquire(&path.join(LOCK_FILE))?.ok_or_else(|| Error::Locked {
        path: path.display().to_string(),
    })
}

/// The writer's lock file in the index directory.
pub const LOCK_FILE: &str = "write.lock";

impl IndexWriter {
    /// Creates a new index in `path` (which may exist but must not hold an index).
    pub fn create(path: &Path, schema: Schema, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        Self::create_in(dir, schema, opts)
    }

    /// Creates a new index in `dir` (any [`Directory`], e.g. a fault-injecting one in tests;
    /// `opts.directory` is ignored).
    pub fn create_in(dir: Arc<dyn Directory>, schema: Schema, opts: WriterOptions) -> Result<Self> {
        let path = dir.path().to_path_buf();
        let path = path.as_path();
        let lock = acquire_lock(path)?;
        if latest_commit(&*dir)?.is_some() {
            return Err(Error::InvalidArgument(format!(
                "{} already holds an index; open it to append, or choose another directory",
                path.display()
            )));
        }
        if let Some(sort) = &opts.index_sort {
            sort.validate(&schema)?;
        }
        let commit = CommitPoint {
            generation: 0,
            format_version: format::VERSION,
            schema: schema.to_value(),
            segments: Vec::new(),
            next_seq: 0,
            next_segment: 0,
            user_data: Default::default(),
            index_sort: opts.index_sort.clone(),
        };
        Self::with_commit(dir, lock, schema, opts, commit, HashSet::new())
    }

    /// Opens the index in `path` to change it.
    pub fn open(path: &Path, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        Self::open_in(dir, opts)
    }

    /// Opens the index in `dir` to change it (`opts.directory` is ignored).
    pub fn open_in(dir: Arc<dyn Directory>, opts: WriterOptions) -> Result<Self> {
        let path = dir.path().to_path_buf();
        let path = path.as_path();
        let lock = acquire_lock(path)?;
        let commit = latest_commit(&*dir)?.ok_or_else(|| Error::NoIndex {
            path: path.display().to_string(),
        })?;
        let schema = Schema::from_value(&commit.schema)?;
        if let Some(sort) = &commit.index_sort {
            sort.validate(&schema)?;
        }
        if let Some(asked) = &opts.index_sort {
            if commit.index_sort.as_ref() != Some(asked) {
                return Err(Error::IndexSort {
                    field: asked.fields.first().map_or(String::new(), |k| k.field.clone()),
                    reason: format!(
                        "the index in {} was created with index sort {}, not [{asked}]; an index sort is fixed when the index is created (re-index into a new index to change it)",
                        path.display(),
                        commit
                            .index_sort
                            .as_ref()
                            .map_or("none".to_string(), |c| format!("[{c}]"))
                    ),
                });
            }
        }
        let files = commit.files().into_iter().collect();
        Self::with_commit(dir, lock, schema, opts, commit, files)
    }

    /// Starts a new, empty index over whatever `path` holds: the old commit stays readable until
    /// this writer's first commit replaces it.
    pub fn overwrite(path: &Path, schema: Schema, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        let lock = acquire_lock(path)?;
        let old = match latest_commit(&*dir) {
            Ok(Some(old)) => old,
            _ => {
                drop(lock);
                return Self::create(path, schema, opts);
            }
        };
        if let Some(sort) = &opts.index_sort {
            sort.validate(&schema)?;
        }
        let files = old.files().into_iter().collect();
        let mut c = old;
        c.index_sort = opts.index_sort.clone();
        c.schema = schema.to_value();
        c.segments.clear();
        c.next_seq = 0;
        c.user_data.clear();
        Self::with_commit(dir, lock, schema, opts, c, files)
    }

    fn with_commit(
        dir: Arc<dyn Directory>,
        lock: FileLock,
        schema: Schema,
        opts: WriterOptions,
        commit: CommitPoint,
        durable_files: HashSet<String>,
    ) -> Result<Self> {
        let threads = opts.threads.max(1);
        let shared = Arc::new(Shared {
            dir,
            schema,
            next_segment: AtomicU64::new(commit.next_segment),
            flushed: Mutex::new(Vec::new()),
            building: Mutex::new(HashSet::new()),
            failure: Mutex::new(None),
            budget_per_thread: (opts.ram_budget_bytes / threads).max(1 << 20),
            index_sort: commit.index_sort.clone(),
        });
        let workers = if threads == 1 {
            Workers::Inline(None)
        } else {
            let mut senders = Vec::new();
            let mut handles = Vec::new();
            for i in 0..threads {
                let (tx, rx) = sync_channel::<Msg>(4);
                let sh = shared.clone();
                let h = std::thread::Builder::new()
                    .name(format!("quarry-index-{i}"))
                    .spawn(move || worker(sh, rx))
                    .map_err(|e| {
                        Error::WriterPoisoned(format!("could not start an indexing thread: {e}"))
                    })?;
                senders.push(tx);
                handles.push(h);
            }
            Workers::Threads {
                senders,
                handles,
                batch: Vec::with_capacity(BATCH),
                next: 0,
            }
        };
        let next_seq = commit.next_seq;
        let segs = commit.segments.iter().cloned().map(SegState::new).collect();
        let mut w = Self {
            shared,
            opts,
            commit,
            next_seq,
            workers,
            _lock: lock,
            segs,
            deletes: Vec::new(),
            view: None,
            nrt: None,
            durable_files,
            background: false,
            running: None,
            merge_error: None,
            merges_done: Vec::new(),
        };
        // Files no commit references (a crashed or failed earlier run) are removed now.
        if let Err(e) = w.delete_unreferenced() {
            eprintln!("quarry: warning: could not remove unreferenced files: {e}");
        }
        if !w.segs.is_empty() {
            let view = w.assemble()?;
            // The committed deletions become the writer's starting live documents.
            for (s, l) in w.segs.iter_mut().zip(view.live_docs().iter()) {
                s.live = l.clone();
            }
            w.view = Some(view);
        }
        Ok(w)
    }

    pub fn schema(&self) -> &Schema {
        &self.shared.schema
    }

    /// The index sort the index was created with, if any.
    pub fn index_sort(&self) -> Option<&crate::index_sort::IndexSort> {
        self.shared.index_sort.as_ref()
    }

    /// The directory the writer writes to.
    pub fn path(&self) -> PathBuf {
        self.shared.dir.path().to_path_buf()
    }

    /// Sets application data stored with the next commit.
    pub fn set_user_data(&mut self, key: &str, value: &str) {
        self.commit
            .user_data
            .insert(key.to_string(), value.to_string());
    }

    /// The application data of the last commit (and of the next one, with changes made).
    pub fn user_data(&self) -> &std::collections::BTreeMap<String, String> {
        &self.commit.user_data
    }

    fn check_failure(&self) -> Result<()> {
        match &*self.shared.failure.lock().expect("failure slot") {
            Some(f) => Err(Error::WriterPoisoned(f.clone())),
            None => Ok(()),
        }
    }

    /// Adds one document; returns its sequence number (its place in index order). Embedded
    /// vector fields ([`crate::embed`]) the document does not give are computed from their
    /// source text first; [`add_documents`](IndexWriter::add_documents) does that in batches.
    pub fn add_document(&mut self, doc: Document) -> Result<u64> {
        self.check_failure()?;
        let mut docs = [doc];
        self.embed_documents(&mut docs)?;
        let [doc] = docs;
        self.add_embedded(doc)
    }

    /// Adds documents in order, computing the vectors of embedded fields for all of them in
    /// one batch per field (much faster than one at a time). Returns the first one's sequence
    /// number; the others follow it. When embedding fails, none is added.
    pub fn add_documents(&mut self, mut docs: Vec<Document>) -> Result<u64> {
        self.check_failure()?;
        self.embed_documents(&mut docs)?;
        let first = self.next_seq;
        for doc in docs {
            self.add_embedded(doc)?;
        }
        Ok(first)
    }

    /// Computes, in one batch per field, the embedded vector fields ([`crate::embed`]) that
    /// documents of `docs` do not give (nothing when the schema has none). Adding them after
    /// this embeds nothing more: a caller that adds or updates documents one at a time calls
    /// it first on a batch of them.
    pub fn embed_documents(&self, docs: &mut [Document]) -> Result<()> {
        let schema = &self.shared.schema;
        if !schema.fields().iter().any(|f| f.embed.is_some()) {
            return Ok(());
        }
        #[cfg(feature = "embed")]
        return crate::embed::embed_documents(self.shared.dir.path(), schema, docs);
        #[cfg(not(feature = "embed"))]
        {
            let _ = docs;
            Err(Error::InvalidArgument(
                "the schema has embedded vector fields but this build of quarry has no `embed` feature".into(),
            ))
        }
    }

    /// Adds a document whose embedded fields are filled in.
    fn add_embedded(&mut self, doc: Document) -> Result<u64> {
        let seq = self.next_seq;
        self.next_seq += 1;
        match &mut self.workers {
            Workers::Inline(b) => {
                self.shared.add(b, seq, &doc);
                if b.is_none() {
                    self.check_failure()?;
                }
            }
            Workers::Threads {
                senders,
                batch,
                next,
                ..
            } => {
                batch.push((seq, doc));
                if batch.len() >= BATCH {
                    let docs = std::mem::replace(batch, Vec::with_capacity(BATCH));
                    let i = *next % senders.len();
                    *next += 1;
                    if senders[i].send(Msg::Docs(docs)).is_err() {
                        return Err(Error::WriterPoisoned("an indexing thread stopped".into()));
                    }
                    if *next % 64 == 0 {
                        self.check_failure()?;
                    }
                }
            }
        }
        Ok(seq)
    }

    /// The exact term a delete or update of `field` = `value` looks for.
    fn key_query(&self, field: &str, value: &FieldValue) -> Result<Query> {
        let schema = &self.shared.schema;
        if schema.field_id(field).is_none() {
            return Err(Error::unknown_field(schema, field));
        }
        let term = match value {
            FieldValue::Str(s) => s.clone(),
            FieldValue::Int(i) => i.to_string(),
            FieldValue::Bool(b) => b.to_string(),
            // The same text the builder indexes for a float field.
            FieldValue::Float(x) => x.to_string(),
            FieldValue::Vector(_) => {
                return Err(Error::InvalidArgument(format!(
                    "field {field:?}: a vector cannot identify documents to delete or update"
                )))
            }
        };
        Ok(Query::Term {
            field: field.to_string(),
            term,
        })
    }

    /// Deletes every document added so far whose `field` holds exactly the term `value` (a
    /// keyword, an integer, or one already-analyzed token of a text field). Returns the opstamp.
    pub fn delete_term(&mut self, field: &str, value: &FieldValue) -> Result<u64> {
        let q = self.key_query(field, value)?;
        self.delete_query(&q)
    }

    /// Deletes every document added so far that matches `query`. Returns the opstamp.
    pub fn delete_query(&mut self, query: &Query) -> Result<u64> {
        self.check_failure()?;
        // Refuse a query that cannot run (unknown field, phrase on a keyword field) now, not at
        // the next refresh or commit.
        crate::search::Searcher::new(self.shared.schema.clone(), Arc::new(Vec::new()))
            .matching_docs(query)?;
        let stamp = self.next_seq;
        self.deletes.push((DeleteOp::Query(query.clone()), stamp));
        Ok(stamp)
    }

    /// Replaces the documents whose `key_field` is `key` by `doc`, atomically: a reader sees the
    /// old or the new version, never both or neither. Returns the new document's sequence.
    pub fn update_document(
        &mut self,
        key_field: &str,
        key: &FieldValue,
        doc: Document,
    ) -> Result<u64> {
        self.check_failure()?;
        // Embed before deleting: a failed embedding leaves the old document in place.
        let mut docs = [doc];
        self.embed_documents(&mut docs)?;
        let [doc] = docs;
        self.delete_term(key_field, key)?;
        self.add_embedded(doc)
    }

    /// Deletes every document added so far. Returns the opstamp.
    pub fn delete_all(&mut self) -> Result<u64> {
        self.check_failure()?;
        let stamp = self.next_seq;
        self.deletes.push((DeleteOp::All, stamp));
        Ok(stamp)
    }

    /// Writes every in-memory segment to disk (not yet committed).
    fn flush_all(&mut self) -> Result<()> {
        match &mut self.workers {
            Workers::Inline(b) => {
                if let Some(b) = b.take() {
                    self.shared.flush(b);
                }
            }
            Workers::Threads {
                senders,
                batch,
                next,
                ..
            } => {
                if !batch.is_empty() {
                    let docs = std::mem::take(batch);
                    let i = *next % senders.len();
                    *next += 1;
                    senders[i]
                        .send(Msg::Docs(docs))
                        .map_err(|_| Error::WriterPoisoned("an indexing thread stopped".into()))?;
                }
                let mut acks = Vec::new();
                for s in senders.iter() {
                    let (tx, rx) = sync_channel(1);
                    s.send(Msg::Flush(tx))
                        .map_err(|_| Error::WriterPoisoned("an indexing thread stopped".into()))?;
                    acks.push(rx);
                }
                for rx in acks {
                    rx.recv()
                        .map_err(|_| Error::WriterPoisoned("an indexing thread stopped".into()))?;
                }
            }
        }
        self.check_failure()
    }

    /// Flushes in-memory segments, appends them to the current segments and applies pending
    /// deletions; then opens the new state for reading.
    fn flush_and_apply(&mut self) -> Result<()> {
        self.install_merge(false)?;
        self.flush_all()?;
        let mut flushed: Vec<SegmentMeta> =
            std::mem::take(&mut *self.shared.flushed.lock().expect("flushed list"));
        // In index order of their first document (an index-sorted segment's runs are in key
        // order: its smallest sequence number, not its first run's).
        flushed.sort_by_key(|m| m.seq_runs.iter().map(|r| r.1).min());
        self.segs.extend(flushed.iter().map(|m| {
            SegState::new(SegmentRef {
                name: m.name.clone(),
                doc_count: m.doc_count,
                del_gen: 0,
                del_count: 0,
            })
        }));
        let view = self.assemble()?;
        if !self.deletes.is_empty() {
            let ops = std::mem::take(&mut self.deletes);
            deletes::apply(&view, &mut self.segs, &ops)?;
            // Segments left without a live document are dropped.
            self.segs.retain(|s| s.live_count() > 0);
            self.view = Some(self.assemble()?);
        } else {
            self.view = Some(view);
        }
        Ok(())
    }

    /// The current state as a point-in-time view (reusing the open segments).
    fn assemble(&self) -> Result<Index> {
        let mut c = self.commit.clone();
        c.segments = self.segs.iter().map(|s| s.r.clone()).collect();
        c.next_seq = self.next_seq;
        let live: HashMap<String, Arc<LiveDocs>> = self
            .segs
            .iter()
            .filter_map(|s| s.live.clone().map(|l| (s.r.name.clone(), l)))
            .collect();
        Index::assemble(self.shared.dir.clone(), c, &live, self.view.as_ref())
    }

    /// Makes every change so far searchable through readers from [`reader`](Self::reader),
    /// without making it durable: in-memory segments are written (no commit point) and
    /// deletions applied in memory.
    pub fn refresh(&mut self) -> Result<()> {
        self.flush_and_apply()?;
        if let (Some(slot), Some(view)) = (&self.nrt, &self.view) {
            slot.publish(view.clone());
        }
        Ok(())
    }

    /// A near-real-time reader: it sees every change up to now and, after each
    /// [`refresh`](Self::refresh) or [`commit`](Self::commit), the newer changes.
    pub fn reader(&mut self) -> Result<IndexReader> {
        self.refresh()?;
        let view = match &self.view {
            Some(v) => v.clone(),
            None => {
                let v = self.assemble()?;
                self.view = Some(v.clone());
                v
            }
        };
        let slot = self
            .nrt
            .get_or_insert_with(|| Arc::new(NrtSlot::new(view)))
            .clone();
        Ok(IndexReader::for_writer(self.shared.dir.clone(), slot))
    }

    /// Makes every change durable and visible to readers opened afterwards, then merges
    /// segments as the merge policy says (each merge is committed the same way). A merge that
    /// fails after the commit is reported as [`Error::MergeFailed`]: the commit stands.
    pub fn commit(&mut self) -> Result<CommitStats> {
        let start = Instant::now();
        self.commit_only()?;
        let generation = self.commit.generation;
        let failed = |e| Error::MergeFailed {
            generation,
            source: Box::new(e),
        };
        if self.background {
            if let Some(e) = self.merge_error.take() {
                return Err(failed(e));
            }
            self.start_merge().map_err(failed)?;
            return Ok(self.stats(0, start));
        }
        let merges = self.maybe_merge().map_err(failed)?;
        Ok(self.stats(merges, start))
    }

    fn stats(&self, merges: usize, start: Instant) -> CommitStats {
        CommitStats {
            generation: self.commit.generation,
            docs: self.commit.doc_count(),
            live_docs: self.commit.live_doc_count(),
            segments: self.commit.segments.len(),
            merges,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// Flushes, applies deletions, writes changed deletion files and publishes a commit point.
    fn commit_only(&mut self) -> Result<()> {
        self.flush_and_apply()?;
        let dir = &*self.shared.dir;
        for s in self.segs.iter_mut().filter(|s| s.dirty) {
            let live = s.live.as_ref().expect("dirty segments have deletions");
            let gen = s.r.del_gen + 1;
            let name = LiveDocs::file_name(&s.r.name, gen);
            let mut w = dir.create(&name)?;
            std::io::Write::write_all(&mut w, &live.encode()).map_err(|e| {
                quarry_store::StoreError::Io {
                    op: "write",
                    path: dir.path().join(&name),
                    source: e,
                }
            })?;
            w.finish()?;
            s.r.del_gen = gen;
            s.r.del_count = live.deleted_count();
            s.dirty = false;
        }
        let refs = self.segs.iter().map(|s| s.r.clone()).collect();
        // The new view first, so the old one releases superseded deletion files for clean-up.
        self.view = Some(self.assemble()?);
        self.publish(refs)?;
        if let (Some(slot), Some(view)) = (&self.nrt, &self.view) {
            slot.publish(view.clone());
        }
        Ok(())
    }

    /// Writes a new commit point listing `segments`, then deletes files nothing references.
    fn publish(&mut self, segments: Vec<SegmentRef>) -> Result<()> {
        let dir = &*self.shared.dir;
        let mut next = self.commit.clone();
        next.generation += 1;
        next.format_version = format::VERSION;
        next.segments = segments;
        next.next_seq = self.next_seq;
        next.next_segment = self.shared.next_segment.load(Ordering::SeqCst);
        dir.sync_dir()?;
        failpoint::hit("commit-before-publish");
        dir.atomic_write(&CommitPoint::file_name(next.generation), &next.encode())?;
        failpoint::hit("commit-after-publish");
        self.durable_files = next.files().into_iter().collect();
        self.commit = next;
        // The commit is durable now: failing to delete stale files must not report it failed.
        if let Err(e) = self.delete_unreferenced() {
            eprintln!("quarry: warning: could not remove stale files after commit: {e}");
        }
        Ok(())
    }

    /// Removes the index files that nothing references: not the newest commit on disk, not the
    /// writer's current segments and deletions, not a file an open reader of this process
    /// holds. Readers in other processes keep the files they have open (POSIX unlink), and
    /// opening retries with the newest commit when a file vanishes.
    fn delete_unreferenced(&self) -> Result<()> {
        let dir = &*self.shared.dir;
        let mut keep: HashSet<String> = self.durable_files.clone();
        for s in &self.segs {
            keep.extend(s.r.files());
        }
        for m in self.shared.flushed.lock().expect("flushed list").iter() {
            keep.extend(
                SegmentRef {
                    name: m.name.clone(),
                    doc_count: m.doc_count,
                    del_gen: 0,
                    del_count: 0,
                }
                .files(),
            );
        }
        keep.extend(held_files(dir.path()));
        for name in self.shared.building.lock().expect("building set").iter() {
            keep.insert(SegmentMeta::file_name(name, "store"));
        }
        if let Some(r) = &self.running {
            keep.extend(r.output_files());
        }
        for name in dir.list()? {
            if deletes::is_index_file(&name) && !keep.contains(&name) {
                let _ = dir.delete(&name);
            }
        }
        Ok(())
    }

    /// The sizes the merge policy sees.
    fn sizes(&self) -> Vec<SegmentSize> {
        let view = self.view.as_ref();
        self.segs
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentSize {
                docs: s.r.doc_count,
                deleted: s.live.as_ref().map_or(0, |l| l.deleted_count()),
                bytes: view
                    .and_then(|v| v.segments().get(i))
                    .map_or(u64::from(s.r.doc_count), |r| {
                        r.meta().files.values().map(|f| f.len).sum()
                    }),
            })
            .collect()
    }

    /// Merges `picked` (indexes into the current segments, which are all committed) into one
    /// and commits.
    fn merge_and_publish(&mut self, picked: &[usize]) -> Result<()> {
        self.merge_and_publish_with(picked, None)
    }

    /// [`merge_and_publish`](Self::merge_and_publish), the merged documents in BP order when
    /// `bp` is given.
    fn merge_and_publish_with(&mut self, picked: &[usize], bp: Option<&BpOptions>) -> Result<()> {
        let view = match &self.view {
            Some(v) => v.clone(),
            None => self.assemble()?,
        };
        let readers: Vec<_> = picked.iter().map(|&i| view.segments()[i].clone()).collect();
        let live: Vec<_> = picked.iter().map(|&i| self.segs[i].live.clone()).collect();
        let name = self.shared.segment_name();
        let result = failpoint::fail("merge-before-write").and_then(|()| match bp {
            Some(bp) => merge::merge_reordered(
                &*self.shared.dir,
                &self.shared.schema,
                &readers,
                &live,
                &name,
                bp,
            ),
            None => merge_segments(
                &*self.shared.dir,
                &self.shared.schema,
                &readers,
                &live,
                &name,
                self.shared.index_sort.as_ref(),
            ),
        });
        let meta = match result {
            Ok(m) => m,
            Err(e) => {
                // Remove the partial files of the failed merge (best effort).
                let _ = self.delete_unreferenced();
                return Err(e);
            }
        };
        drop(readers);
        let pos = picked.iter().copied().min().unwrap_or(0);
        let mut segs: Vec<SegState> = std::mem::take(&mut self.segs)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !picked.contains(i))
            .map(|(_, s)| s)
            .collect();
        if meta.doc_count > 0 {
            segs.insert(
                pos.min(segs.len()),
                SegState::new(SegmentRef {
                    name: meta.name.clone(),
                    doc_count: meta.doc_count,
                    del_gen: 0,
                    del_count: 0,
                }),
            );
        }
        self.segs = segs;
        let refs = self.segs.iter().map(|s| s.r.clone()).collect();
        self.view = Some(self.assemble()?);
        self.publish(refs)?;
        if let (Some(slot), Some(view)) = (&self.nrt, &self.view) {
            slot.publish(view.clone());
        }
        Ok(())
    }

    /// Runs the merges the policy asks for (each committed); returns how many ran.
    pub fn maybe_merge(&mut self) -> Result<usize> {
        let mut merges = 0;
        while let Some(picked) = self.opts.merge_policy.find_merge(&self.sizes()) {
            self.merge_and_publish(&picked)?;
            merges += 1;
        }
        Ok(merges)
    }

    /// Commits, then merges until at most `max_segments` segments remain (smallest first) and
    /// no segment keeps deleted documents.
    pub fn force_merge(&mut self, max_segments: usize) -> Result<CommitStats> {
        let start = Instant::now();
        self.install_merge(true)?;
        if let Some(e) = self.merge_error.take() {
            return Err(e);
        }
        self.commit_only()?;
        let max_segments = max_segments.max(1);
        let mut merges = 0;
        while self.segs.len() > max_segments {
            let mut order: Vec<usize> = (0..self.segs.len()).collect();
            order.sort_by_key(|&i| self.segs[i].live_count());
            let n = self.segs.len() - max_segments + 1;
            let mut picked: Vec<usize> = order[..n].to_vec();
            picked.sort_unstable();
            self.merge_and_publish(&picked)?;
            merges += 1;
        }
        while let Some(i) = self.segs.iter().position(|s| s.live.is_some()) {
            self.merge_and_publish(&[i])?;
            merges += 1;
        }
        Ok(self.stats(merges, start))
    }

    /// Commits, then merges every segment into one whose documents are in the order a
    /// recursive graph bisection pass chooses ([`BpOptions`]; Lucene's `BPIndexReorderer`):
    /// documents sharing terms get nearby ids, so postings get smaller and queries skip more.
    /// Scores and counts are unchanged; documents of equal score may come in another order.
    /// Refused for an index with an index sort, whose order it would break. Later merges of this
    /// segment with new ones concatenate them (run it again after large changes).
    pub fn optimize_reorder(&mut self, bp: &BpOptions) -> Result<CommitStats> {
        bp.check()?;
        if self.shared.index_sort.is_some() {
            return Err(Error::InvalidArgument(
                "this index has an index sort, which fixes its document order: it cannot be reordered".into(),
            ));
        }
        let start = Instant::now();
        self.install_merge(true)?;
        if let Some(e) = self.merge_error.take() {
            return Err(e);
        }
        self.commit_only()?;
        if self.segs.is_empty() {
            return Ok(self.stats(0, start));
        }
        let picked: Vec<usize> = (0..self.segs.len()).collect();
        self.merge_and_publish_with(&picked, Some(bp))?;
        Ok(self.stats(1, start))
    }

    /// Flushes, commits and stops the indexing threads; with background merges, also waits for
    /// the running merge and commits it (see [`commit_running_merge`](Self::commit_running_merge)).
    pub fn close(mut self) -> Result<CommitStats> {
        let mut stats = self.commit()?;
        stats.merges += self.commit_running_merge()?;
        Ok(stats)
    }
}

impl Drop for IndexWriter {
    fn drop(&mut self) {
        if let Workers::Threads {
            senders, handles, ..
        } = &mut self.workers
        {
            senders.clear();
            for h in handles.drain(..) {
                let _ = h.join();
            }
        }
        // In-memory segments are dropped: their partly written files go with the rest.
        if let Workers::Inline(b) = &mut self.workers {
            *b = None;
        }
        self.shared
            .building
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        if let Some(r) = self.running.take() {
            // Wait for the merge thread; its output is not committed and goes with the rest.
            let _ = r.install(&mut Vec::new());
        }
        // Uncommitted changes are dropped with the writer: remove their files (segments flushed
        // but never committed, e.g. by a failed run), unless a reader still holds them.
        self.segs = self
            .commit
            .segments
            .iter()
            .cloned()
            .map(SegState::new)
            .collect();
        self.shared
            .flushed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.view = None;
        self.nrt = None;
        let _ = self.delete_unreferenced();
    }
}

fn worker(shared: Arc<Shared>, rx: Receiver<Msg>) {
    let mut builder: Option<SegmentBuilder> = None;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Docs(docs) => {
                for (seq, doc) in &docs {
                    shared.add(&mut builder, *seq, doc);
                }
            }
            Msg::Flush(ack) => {
                if let Some(b) = builder.take() {
                    shared.flush(b);
                }
                let _ = ack.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Documents with this many bytes of hard-to-compress text each.
    fn noisy_doc(schema: &Schema, i: u64, words: usize) -> Document {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut body = String::new();
        for _ in 0..words {
            for _ in 0..6 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                body.push((b'a' + (x % 26) as u8) as char);
            }
            body.push(' ');
        }
        let mut d = Document::new();
        d.add(schema, "id", FieldValue::Int(i as i64)).unwrap();
        d.add(schema, "body", FieldValue::Str(body)).unwrap();
        d
    }

    /// The stored fields file of a segment still being built is written out as it fills, and
    /// clean-up (as a failed merge runs it while documents are being added) leaves it alone.
    #[test]
    fn stored_fields_of_a_building_segment_survive_clean_up() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::builder().integer("id").text("body", true).build();
        let opts = WriterOptions {
            threads: 1,
            ..Default::default()
        };
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
        for i in 0..2000 {
            w.add_document(noisy_doc(&schema, i, 300)).unwrap();
        }
        let store = tmp.path().join("s000000.store");
        assert!(
            std::fs::metadata(&store).unwrap().len() > 1 << 20,
            "stored blocks are written out before the flush"
        );
        w.delete_unreferenced().unwrap();
        assert!(store.exists());
        let stats = w.commit().unwrap();
        assert_eq!((stats.docs, stats.segments), (2000, 1));
        drop(w);
        let index = Index::open(tmp.path()).unwrap();
        let seg = &index.segments()[0];
        for d in [0u32, 999, 1999] {
            let want = noisy_doc(&schema, u64::from(d), 300);
            let got = seg.stored_fields(d).unwrap();
            assert_eq!(got["id"].as_i64(), Some(i64::from(d)));
            let FieldValue::Str(body) = &want.values[1].1 else {
                unreachable!()
            };
            assert_eq!(got["body"].as_str(), Some(body.as_str()));
        }
    }

    /// A writer dropped without committing removes the partly written files of its in-memory
    /// segment.
    #[test]
    fn a_dropped_writer_leaves_no_partial_stored_file() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::builder().integer("id").text("body", true).build();
        let opts = WriterOptions {
            threads: 1,
            ..Default::default()
        };
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
        for i in 0..2000 {
            w.add_document(noisy_doc(&schema, i, 300)).unwrap();
        }
        assert!(tmp.path().join("s000000.store").exists());
        drop(w);
        assert!(!tmp.path().join("s000000.store").exists());
    }

    /// A small RAM budget flushes several segments; every document is in exactly one of them.
    #[test]
    fn a_small_budget_flushes_segments_that_hold_every_document() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::builder().integer("id").text("body", true).build();
        let opts = WriterOptions {
            threads: 2,
            ram_budget_bytes: 2 << 20,
            merge_policy: MergePolicy::None,
            ..Default::default()
        };
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
        for i in 0..3000 {
            w.add_document(noisy_doc(&schema, i, 100)).unwrap();
        }
        let stats = w.commit().unwrap();
        assert_eq!(stats.docs, 3000);
        assert!(stats.segments > 2, "{} segments", stats.segments);
        drop(w);
        let index = Index::open(tmp.path()).unwrap();
        let s = index.searcher();
        for i in [0i64, 1234, 2999] {
            let q = s.parse_query(&format!("id:{i}"), &["body"]).unwrap();
            let r = s.search(&q, 2, crate::SearchMode::TopCount).unwrap();
            assert_eq!(r.total_hits, 1, "id {i}");
            assert_eq!(
                s.stored_fields(r.top[0].doc).unwrap()["id"].as_i64(),
                Some(i)
            );
        }
    }
}
