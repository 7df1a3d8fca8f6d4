//! Building indexes: the [`IndexWriter`] turns documents into immutable segments with one
//! in-memory segment per thread, commits them atomically and merges them.
mod arena;
mod builder;
mod merge;
mod segment_writer;

pub use merge::merge_segments;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use quarry_store::{open_directory, Directory, DirectoryKind};

use crate::codec::format;
use crate::codec::meta::{CommitPoint, SegmentMeta, SegmentRef};
use crate::document::Document;
use crate::index::{latest_commit, SegmentReader};
use crate::schema::Schema;
use crate::{failpoint, Error, Result};
use builder::SegmentBuilder;

/// How segments are merged after a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergePolicy {
    /// Never merge on commit (force_merge still works).
    None,
    /// Lucene's log-doc policy: segments fall into levels by `log_factor(doc count)`; when a
    /// level holds `factor` segments they are merged into one of the next level.
    Log { factor: usize },
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy::Log { factor: 10 }
    }
}

/// Settings of an [`IndexWriter`].
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Indexing threads, each with its own in-memory segment (default: all cores).
    pub threads: usize,
    /// Memory for in-memory segments, shared by the threads; a thread flushes when its segment
    /// exceeds its share.
    pub ram_budget_bytes: usize,
    pub merge_policy: MergePolicy,
    pub directory: DirectoryKind,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            ram_budget_bytes: 512 << 20,
            merge_policy: MergePolicy::default(),
            directory: DirectoryKind::Mmap,
        }
    }
}

/// What a commit did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitStats {
    pub generation: u64,
    pub docs: u64,
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
    failure: Mutex<Option<String>>,
    budget_per_thread: usize,
}

impl Shared {
    fn segment_name(&self) -> String {
        format!("s{:06}", self.next_segment.fetch_add(1, Ordering::SeqCst))
    }

    fn flush(&self, builder: SegmentBuilder) {
        if builder.doc_count() == 0 {
            return;
        }
        let name = self.segment_name();
        match builder.flush(&*self.dir, &name) {
            Ok(meta) => self.flushed.lock().expect("flushed list").push(meta),
            Err(e) => {
                let mut f = self.failure.lock().expect("failure slot");
                f.get_or_insert_with(|| format!("flushing segment {name}: {e}"));
            }
        }
    }

    fn add(&self, builder: &mut Option<SegmentBuilder>, seq: u64, doc: &Document) {
        let b = builder.get_or_insert_with(|| SegmentBuilder::new(&self.schema));
        b.add(seq, doc);
        if b.doc_count().is_multiple_of(64) && b.mem_bytes() >= self.budget_per_thread {
            self.flush(builder.take().expect("builder"));
        }
    }
}

// One per writer: boxing the inline builder would save nothing worth an indirection.
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

/// Adds documents to an index and commits them.
///
/// Documents become visible to newly opened readers only after [`commit`](Self::commit). A
/// crash at any point leaves the last commit intact: segment files are written and fsynced
/// first, then a new commit point is written to a temporary file, fsynced, renamed into place
/// and the directory fsynced.
pub struct IndexWriter {
    shared: Arc<Shared>,
    opts: WriterOptions,
    commit: CommitPoint,
    next_seq: u64,
    workers: Workers,
}

impl IndexWriter {
    /// Creates a new index in `path` (which may exist but must not hold an index).
    pub fn create(path: &Path, schema: Schema, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        if latest_commit(&*dir)?.is_some() {
            return Err(Error::InvalidArgument(format!(
                "{} already holds an index; open it to append, or choose another directory",
                path.display()
            )));
        }
        let commit = CommitPoint {
            generation: 0,
            format_version: format::VERSION,
            schema: schema.to_value(),
            segments: Vec::new(),
            next_seq: 0,
            next_segment: 0,
            user_data: Default::default(),
        };
        Ok(Self::with_commit(dir, schema, opts, commit))
    }

    /// Opens the index in `path` to add documents to it.
    pub fn open(path: &Path, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        let commit = latest_commit(&*dir)?.ok_or_else(|| Error::NoIndex {
            path: path.display().to_string(),
        })?;
        let schema = Schema::from_value(&commit.schema)?;
        Ok(Self::with_commit(dir, schema, opts, commit))
    }

    /// Starts a new, empty index over whatever `path` holds: the old commit stays readable until
    /// this writer's first commit replaces it.
    pub fn overwrite(path: &Path, schema: Schema, opts: WriterOptions) -> Result<Self> {
        let dir = open_directory(path, opts.directory)?;
        let mut w = match latest_commit(&*dir) {
            Ok(Some(old)) => {
                let mut c = old;
                c.schema = schema.to_value();
                c.segments.clear();
                c.next_seq = 0;
                Self::with_commit(dir, schema, opts, c)
            }
            _ => return Self::create(path, schema, opts),
        };
        w.commit.user_data.clear();
        Ok(w)
    }

    fn with_commit(
        dir: Arc<dyn Directory>,
        schema: Schema,
        opts: WriterOptions,
        commit: CommitPoint,
    ) -> Self {
        let threads = opts.threads.max(1);
        let shared = Arc::new(Shared {
            dir,
            schema,
            next_segment: AtomicU64::new(commit.next_segment),
            flushed: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            budget_per_thread: (opts.ram_budget_bytes / threads).max(1 << 20),
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
                    .expect("spawn indexing thread");
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
        Self {
            shared,
            opts,
            commit,
            next_seq,
            workers,
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.shared.schema
    }

    /// Sets application data stored with the next commit.
    pub fn set_user_data(&mut self, key: &str, value: &str) {
        self.commit
            .user_data
            .insert(key.to_string(), value.to_string());
    }

    fn check_failure(&self) -> Result<()> {
        match &*self.shared.failure.lock().expect("failure slot") {
            Some(f) => Err(Error::WriterPoisoned(f.clone())),
            None => Ok(()),
        }
    }

    /// Adds one document (visible after the next commit).
    pub fn add_document(&mut self, doc: Document) -> Result<()> {
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
        Ok(())
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

    /// Makes every added document durable and visible to readers opened afterwards, then merges
    /// segments as the merge policy says (each merge is committed the same way).
    pub fn commit(&mut self) -> Result<CommitStats> {
        let start = Instant::now();
        self.flush_all()?;
        let mut flushed: Vec<SegmentMeta> =
            std::mem::take(&mut *self.shared.flushed.lock().expect("flushed list"));
        flushed.sort_by(|a, b| {
            a.seq_runs
                .first()
                .map(|r| r.1)
                .cmp(&b.seq_runs.first().map(|r| r.1))
        });
        let mut segments = self.commit.segments.clone();
        segments.extend(flushed.iter().map(|m| SegmentRef {
            name: m.name.clone(),
            doc_count: m.doc_count,
            del_gen: 0,
        }));
        self.publish(segments)?;
        let merges = self.maybe_merge()?;
        Ok(CommitStats {
            generation: self.commit.generation,
            docs: self.commit.doc_count(),
            segments: self.commit.segments.len(),
            merges,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// Writes a new commit point listing `segments`, then deletes files no commit needs.
    fn publish(&mut self, segments: Vec<SegmentRef>) -> Result<()> {
        let dir = &*self.shared.dir;
        let mut next = self.commit.clone();
        next.generation += 1;
        next.segments = segments;
        next.next_seq = self.next_seq;
        next.next_segment = self.shared.next_segment.load(Ordering::SeqCst);
        dir.sync_dir()?;
        failpoint::hit("commit-before-publish");
        dir.atomic_write(&CommitPoint::file_name(next.generation), &next.encode())?;
        failpoint::hit("commit-after-publish");
        self.commit = next;
        // The commit is durable now: failing to delete stale files must not report it failed.
        if let Err(e) = self.delete_unreferenced() {
            eprintln!("quarry: warning: could not remove stale files after commit: {e}");
        }
        Ok(())
    }

    /// Removes files of earlier commits and of segments no longer referenced (best effort:
    /// readers that still have them open keep their mappings).
    fn delete_unreferenced(&self) -> Result<()> {
        let dir = &*self.shared.dir;
        let live: HashSet<&str> = self
            .commit
            .segments
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        let pending: HashSet<String> = self
            .shared
            .flushed
            .lock()
            .expect("flushed list")
            .iter()
            .map(|m| m.name.clone())
            .collect();
        let current = CommitPoint::file_name(self.commit.generation);
        for name in dir.list()? {
            let doomed = if CommitPoint::parse_name(&name).is_some() {
                name != current
            } else if let Some((seg, ext)) = name.split_once('.') {
                let ours =
                    format::SEGMENT_FILES.iter().any(|(e, _)| *e == ext) && seg.starts_with('s');
                ours && !live.contains(seg) && !pending.contains(seg)
            } else {
                false
            };
            if doomed || (name.ends_with(".tmp") && name.starts_with("commit_")) {
                let _ = dir.delete(&name);
            }
        }
        Ok(())
    }

    fn open_segments(&self, names: &[SegmentRef]) -> Result<Vec<Arc<SegmentReader>>> {
        names
            .iter()
            .map(|s| {
                SegmentReader::open(self.shared.dir.clone(), &s.name, &self.shared.schema)
                    .map(Arc::new)
            })
            .collect()
    }

    /// Merges `picked` (indexes into the committed segments) into one and commits.
    fn merge_and_publish(&mut self, picked: &[usize]) -> Result<()> {
        let refs: Vec<SegmentRef> = picked
            .iter()
            .map(|&i| self.commit.segments[i].clone())
            .collect();
        let readers = self.open_segments(&refs)?;
        let name = self.shared.segment_name();
        let meta = merge_segments(&*self.shared.dir, &self.shared.schema, &readers, &name)?;
        drop(readers);
        let mut segments: Vec<SegmentRef> = self
            .commit
            .segments
            .iter()
            .enumerate()
            .filter(|(i, _)| !picked.contains(i))
            .map(|(_, s)| s.clone())
            .collect();
        let pos = picked
            .iter()
            .copied()
            .min()
            .unwrap_or(0)
            .min(segments.len());
        segments.insert(
            pos,
            SegmentRef {
                name: meta.name.clone(),
                doc_count: meta.doc_count,
                del_gen: 0,
            },
        );
        self.publish(segments)
    }

    fn maybe_merge(&mut self) -> Result<usize> {
        let MergePolicy::Log { factor } = self.opts.merge_policy else {
            return Ok(0);
        };
        let factor = factor.max(2);
        let mut merges = 0;
        loop {
            let level =
                |docs: u32| ((docs.max(1) as f64).ln() / (factor as f64).ln()).floor() as i64;
            let mut by_level: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
            for (i, s) in self.commit.segments.iter().enumerate() {
                by_level.entry(level(s.doc_count)).or_default().push(i);
            }
            let Some(group) = by_level.values().find(|g| g.len() >= factor) else {
                return Ok(merges);
            };
            let picked: Vec<usize> = group[..factor].to_vec();
            self.merge_and_publish(&picked)?;
            merges += 1;
        }
    }

    /// Commits, then merges until at most `max_segments` segments remain (smallest first).
    pub fn force_merge(&mut self, max_segments: usize) -> Result<CommitStats> {
        let start = Instant::now();
        let mut stats = self.commit()?;
        let max_segments = max_segments.max(1);
        while self.commit.segments.len() > max_segments {
            let mut order: Vec<usize> = (0..self.commit.segments.len()).collect();
            order.sort_by_key(|&i| self.commit.segments[i].doc_count);
            let n = self.commit.segments.len() - max_segments + 1;
            let mut picked: Vec<usize> = order[..n].to_vec();
            picked.sort_unstable();
            self.merge_and_publish(&picked)?;
            stats.merges += 1;
        }
        stats.generation = self.commit.generation;
        stats.segments = self.commit.segments.len();
        stats.seconds = start.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// Flushes, commits and stops the indexing threads.
    pub fn close(mut self) -> Result<CommitStats> {
        self.commit()
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
