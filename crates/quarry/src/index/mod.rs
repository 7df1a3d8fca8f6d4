//! An index on disk: its commit points, the segments they list with their deletions, and
//! opening them as a point-in-time view.
mod block_cache;
mod check;
mod files;
mod segment;
pub(crate) mod sorted;
pub mod verified;

pub use check::{check_index, inspect, CheckReport, SegmentSummary};
pub use files::{held_files, HeldFiles};
pub use segment::SegmentReader;
pub use verified::IoDeadline;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use quarry_store::{open_directory, Directory, DirectoryKind};

use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::CommitPoint;
use crate::schema::Schema;
use crate::{Error, Result};

/// How many times opening retries when files of the commit it read vanish under it (a writer
/// published a newer commit and removed the old one's files meanwhile).
const OPEN_RETRIES: usize = 20;

/// The newest commit generation named in `dir`, if any (the file is not read).
pub(crate) fn latest_generation(dir: &dyn Directory) -> Result<Option<u64>> {
    Ok(dir
        .list()?
        .iter()
        .filter_map(|n| CommitPoint::parse_name(n))
        .max())
}

/// Reads and verifies commit point `g`.
pub(crate) fn read_commit(dir: &dyn Directory, g: u64) -> Result<CommitPoint> {
    let name = CommitPoint::file_name(g);
    let bytes = dir.open(&name)?.read_all()?;
    let commit = CommitPoint::decode(&name, &bytes)?;
    if commit.generation != g {
        return Err(Error::corrupt(
            name,
            format!(
                "holds generation {} but is named for {g}",
                commit.generation
            ),
        ));
    }
    Ok(commit)
}

/// The newest commit point of `dir` (by generation), verified. A commit file that vanishes
/// between listing and reading (a writer replaced it) is retried with the newer one.
pub(crate) fn latest_commit(dir: &dyn Directory) -> Result<Option<CommitPoint>> {
    let mut attempt = 0;
    loop {
        let Some(g) = latest_generation(dir)? else {
            return Ok(None);
        };
        match read_commit(dir, g) {
            Err(e) if e.is_not_found() && attempt < OPEN_RETRIES => attempt += 1,
            other => return other.map(Some),
        }
    }
}

/// A point-in-time view of an index: one commit (or a writer's near-real-time state), its
/// opened segments and their live documents.
///
/// Opening reads the commit point, each segment's small meta file, its deletions file if any,
/// and the headers and footers of the other files; nothing else is read until a query needs it.
/// The view holds its files (see [`HeldFiles`]): a writer in this process does not delete them
/// while it is alive.
#[derive(Clone)]
pub struct Index {
    dir: Arc<dyn Directory>,
    commit: Arc<CommitPoint>,
    schema: Schema,
    segments: Arc<Vec<Arc<SegmentReader>>>,
    live: Arc<Vec<Option<Arc<LiveDocs>>>>,
    /// Per segment, the deletions generation `live` was read from (`None`: given in memory).
    live_gen: Arc<Vec<Option<u64>>>,
    _held: Arc<HeldFiles>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("path", &self.dir.path())
            .field("generation", &self.commit.generation)
            .finish()
    }
}

impl Index {
    /// Opens the latest commit with memory-mapped files (the default).
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, DirectoryKind::Mmap)
    }

    /// Opens the latest commit with the chosen read path.
    pub fn open_with(path: &Path, kind: DirectoryKind) -> Result<Self> {
        if !path.is_dir() {
            return Err(Error::NoIndex {
                path: path.display().to_string(),
            });
        }
        Self::open_dir(open_directory(path, kind)?)
    }

    /// Opens the latest commit of `dir`.
    pub fn open_dir(dir: Arc<dyn Directory>) -> Result<Self> {
        Self::open_latest(dir, None)
    }

    /// Opens the latest commit, reusing the segments and deletions of `previous` that did not
    /// change. When files of the commit vanish while opening (a writer removed them after
    /// publishing a newer commit), it retries with the newest commit, as Lucene's
    /// `FindSegmentsFile` does.
    pub(crate) fn open_latest(dir: Arc<dyn Directory>, previous: Option<&Index>) -> Result<Self> {
        let mut attempt = 0;
        loop {
            let commit = latest_commit(&*dir)?.ok_or_else(|| Error::NoIndex {
                path: dir.path().display().to_string(),
            })?;
            let gen = commit.generation;
            match Self::assemble(dir.clone(), commit, &HashMap::new(), previous) {
                Err(e) if e.is_not_found() && attempt < OPEN_RETRIES => {
                    attempt += 1;
                    // Retry only when a newer commit appeared; otherwise the index is damaged.
                    if latest_generation(&*dir)? == Some(gen) {
                        return Err(e);
                    }
                }
                other => return other,
            }
        }
    }

    /// Builds a view of `commit`: segments are reused from `previous` by name, deletions by
    /// generation; `live_override` gives in-memory deletions (near-real-time views).
    pub(crate) fn assemble(
        dir: Arc<dyn Directory>,
        commit: CommitPoint,
        live_override: &HashMap<String, Arc<LiveDocs>>,
        previous: Option<&Index>,
    ) -> Result<Self> {
        let schema = Schema::from_value(&commit.schema)?;
        let commit_file = CommitPoint::file_name(commit.generation);
        if let Some(sort) = &commit.index_sort {
            sort.validate(&schema).map_err(|e| {
                Error::corrupt(
                    &commit_file,
                    format!("the index sort does not fit the index's schema: {e}"),
                )
            })?;
        }
        let mut prev: HashMap<&str, usize> = HashMap::new();
        if let Some(p) = previous {
            for (i, s) in p.segments.iter().enumerate() {
                prev.insert(s.name(), i);
            }
        }
        // Hold the files before opening them, so a writer of this process cannot remove them.
        let held = HeldFiles::hold(
            dir.path(),
            commit.segments.iter().flat_map(|s| s.files()).collect(),
        );
        let mut segments = Vec::with_capacity(commit.segments.len());
        let mut live = Vec::with_capacity(commit.segments.len());
        let mut live_gen = Vec::with_capacity(commit.segments.len());
        for s in &commit.segments {
            let old = prev.get(s.name.as_str()).and_then(|&i| {
                let p = previous.expect("previous index");
                (p.schema == schema).then_some((p, i))
            });
            let seg = match old {
                Some((p, i)) => p.segments[i].clone(),
                None => Arc::new(SegmentReader::open(dir.clone(), &s.name, &schema)?),
            };
            if let Some(own) = &seg.meta().index_sort {
                if commit.index_sort.as_ref() != Some(own) {
                    return Err(Error::corrupt(
                        &commit_file,
                        format!(
                            "segment {} is sorted by [{own}] but the index sort is {}",
                            s.name,
                            commit
                                .index_sort
                                .as_ref()
                                .map_or("none".to_string(), |c| format!("[{c}]"))
                        ),
                    ));
                }
            }
            if seg.doc_count() != s.doc_count {
                return Err(Error::corrupt(
                    &commit_file,
                    format!(
                        "segment {} has {} docs, commit says {}",
                        s.name,
                        seg.doc_count(),
                        s.doc_count
                    ),
                ));
            }
            let (l, g) = if let Some(l) = live_override.get(&s.name) {
                (Some(l.clone()), None)
            } else if s.del_gen == 0 {
                (None, Some(0))
            } else if let Some((p, i)) = old.filter(|(p, i)| p.live_gen[*i] == Some(s.del_gen)) {
                (p.live[i].clone(), Some(s.del_gen))
            } else {
                let name = LiveDocs::file_name(&s.name, s.del_gen);
                let bytes = dir.open(&name)?.read_all()?;
                let l = LiveDocs::decode(&name, &bytes, s.doc_count)?;
                if l.deleted_count() != s.del_count {
                    return Err(Error::corrupt(
                        &commit_file,
                        format!(
                            "segment {} has {} deletions, commit says {}",
                            s.name,
                            l.deleted_count(),
                            s.del_count
                        ),
                    ));
                }
                (Some(Arc::new(l)), Some(s.del_gen))
            };
            segments.push(seg);
            live.push(l.filter(|l| l.deleted_count() > 0));
            live_gen.push(g);
        }
        Ok(Self {
            dir,
            commit: Arc::new(commit),
            schema,
            segments: Arc::new(segments),
            live: Arc::new(live),
            live_gen: Arc::new(live_gen),
            _held: Arc::new(held),
        })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    pub fn segments(&self) -> &[Arc<SegmentReader>] {
        &self.segments
    }
    /// Per segment, its live documents when it has deletions (`None`: all live).
    pub fn live_docs(&self) -> &Arc<Vec<Option<Arc<LiveDocs>>>> {
        &self.live
    }
    pub(crate) fn segments_arc(&self) -> &Arc<Vec<Arc<SegmentReader>>> {
        &self.segments
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    /// Documents in the segments, deleted ones included (Lucene's `maxDoc`).
    pub fn doc_count(&self) -> u64 {
        self.commit.doc_count()
    }
    /// Documents that are not deleted.
    pub fn live_doc_count(&self) -> u64 {
        self.segments
            .iter()
            .zip(self.live.iter())
            .map(|(s, l)| u64::from(l.as_ref().map_or(s.doc_count(), |l| l.live_count())))
            .sum()
    }
    /// The index sort fixed when the index was created, if any.
    pub fn index_sort(&self) -> Option<&crate::index_sort::IndexSort> {
        self.commit().index_sort.as_ref()
    }

    pub fn commit(&self) -> &CommitPoint {
        &self.commit
    }
    pub fn directory(&self) -> &Arc<dyn Directory> {
        &self.dir
    }

    /// Verifies every byte of every segment data file of this view (format v3: the chunk
    /// checksums this process has not checked yet, which later reads then skip; v1/v2: each
    /// file's whole-file CRC) and returns the first corruption found, naming file and offset.
    /// Searches may run meanwhile.
    pub fn scrub(&self) -> Result<()> {
        self.segments.iter().try_for_each(|s| s.verify_all())
    }

    /// [`scrub`](Self::scrub) on a background thread; join the handle for the outcome.
    pub fn scrub_in_background(&self) -> std::thread::JoinHandle<Result<()>> {
        let view = self.clone();
        std::thread::Builder::new()
            .name("quarry-scrub".into())
            .spawn(move || view.scrub())
            .expect("spawning the scrub thread")
    }
}
