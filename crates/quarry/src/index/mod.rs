//! An index on disk: its commit points, the segments they list, and opening them for search.
mod check;
mod segment;

pub use check::{check_index, inspect, CheckReport, SegmentSummary};
pub use segment::SegmentReader;

use std::path::Path;
use std::sync::Arc;

use quarry_store::{open_directory, Directory, DirectoryKind};

use crate::codec::meta::CommitPoint;
use crate::schema::Schema;
use crate::search::Searcher;
use crate::{Error, Result};

/// The newest commit point of `dir` (by generation), verified.
pub(crate) fn latest_commit(dir: &dyn Directory) -> Result<Option<CommitPoint>> {
    let mut gens: Vec<u64> = dir
        .list()?
        .iter()
        .filter_map(|n| CommitPoint::parse_name(n))
        .collect();
    gens.sort_unstable();
    let Some(&g) = gens.last() else {
        return Ok(None);
    };
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
    Ok(Some(commit))
}

/// A committed index opened for reading: a point-in-time view of one commit.
///
/// Opening reads the commit point, each segment's small meta file and the headers and footers of
/// the other files; nothing else is read or decoded until a query needs it.
#[derive(Clone)]
pub struct Index {
    dir: Arc<dyn Directory>,
    commit: Arc<CommitPoint>,
    schema: Schema,
    segments: Arc<Vec<Arc<SegmentReader>>>,
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

    pub fn open_dir(dir: Arc<dyn Directory>) -> Result<Self> {
        let commit = latest_commit(&*dir)?.ok_or_else(|| Error::NoIndex {
            path: dir.path().display().to_string(),
        })?;
        let schema = Schema::from_value(&commit.schema)?;
        let mut segments = Vec::with_capacity(commit.segments.len());
        for s in &commit.segments {
            let seg = SegmentReader::open(dir.clone(), &s.name, &schema)?;
            if seg.doc_count() != s.doc_count {
                return Err(Error::corrupt(
                    CommitPoint::file_name(commit.generation),
                    format!(
                        "segment {} has {} docs, commit says {}",
                        s.name,
                        seg.doc_count(),
                        s.doc_count
                    ),
                ));
            }
            segments.push(Arc::new(seg));
        }
        Ok(Self {
            dir,
            commit: Arc::new(commit),
            schema,
            segments: Arc::new(segments),
        })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    pub fn segments(&self) -> &[Arc<SegmentReader>] {
        &self.segments
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    pub fn doc_count(&self) -> u64 {
        self.commit.doc_count()
    }
    pub fn commit(&self) -> &CommitPoint {
        &self.commit
    }
    pub fn directory(&self) -> &Arc<dyn Directory> {
        &self.dir
    }
    /// A searcher over this commit (cheap: shares the open segments).
    pub fn searcher(&self) -> Searcher {
        Searcher::new(self.schema.clone(), self.segments.clone())
    }
}
