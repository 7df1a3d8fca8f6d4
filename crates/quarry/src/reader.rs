//! Reading an index while it changes: an [`IndexReader`] hands out point-in-time [`Searcher`]s
//! and swaps in newer commits (or a writer's near-real-time state) on `reload`, reusing the
//! segments that did not change.
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use quarry_store::{open_directory, Directory, DirectoryKind};

use crate::index::{latest_generation, Index};
use crate::search::Searcher;
use crate::{Error, Result};

/// When a reader picks up new commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReloadPolicy {
    /// Only when [`IndexReader::reload`] is called.
    Manual,
    /// A background thread checks for a newer commit every [`RELOAD_DELAY`] and reloads.
    /// Readers from [`IndexWriter::reader`](crate::IndexWriter::reader) follow the writer's
    /// `refresh`/`commit` instead.
    #[default]
    OnCommitWithDelay,
}

/// How often a reader with [`ReloadPolicy::OnCommitWithDelay`] looks for a newer commit.
pub const RELOAD_DELAY: Duration = Duration::from_millis(250);

/// The latest near-real-time view a writer published, with a version that grows on each refresh.
#[derive(Debug)]
pub(crate) struct NrtSlot {
    pub(crate) version: AtomicU64,
    pub(crate) index: Mutex<Index>,
}

impl NrtSlot {
    pub(crate) fn new(index: Index) -> Self {
        Self {
            version: AtomicU64::new(1),
            index: Mutex::new(index),
        }
    }

    /// Publishes a new view.
    pub(crate) fn publish(&self, index: Index) {
        *self.index.lock().unwrap_or_else(|e| e.into_inner()) = index;
        self.version.fetch_add(1, Ordering::SeqCst);
    }
}

enum Source {
    /// Commit points on disk.
    Commits,
    /// A writer's near-real-time views.
    Writer(Arc<NrtSlot>),
}

struct Current {
    index: Index,
    searcher: Searcher,
    /// The NRT slot version `index` came from.
    version: u64,
}

struct Inner {
    dir: Arc<dyn Directory>,
    source: Source,
    current: RwLock<Current>,
    /// Serializes reloads (searchers keep being handed out meanwhile).
    reloading: Mutex<()>,
}

/// Hands out [`Searcher`]s over the newest view it has loaded. `Send + Sync`, cheap to clone
/// (clones share the view). Searchers taken earlier keep working, and their files stay on disk,
/// after a reload.
#[derive(Clone)]
pub struct IndexReader {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for IndexReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexReader")
            .field("path", &self.inner.dir.path())
            .field("generation", &self.generation())
            .finish()
    }
}

impl Index {
    /// A searcher over this view (cheap: shares the open segments and deletions).
    pub fn searcher(&self) -> Searcher {
        Searcher::with_live_docs(
            self.schema().clone(),
            self.segments_arc().clone(),
            self.live_docs().clone(),
        )
    }
}

impl IndexReader {
    /// Opens the latest commit of `path` (memory-mapped, reloading on new commits).
    pub fn open(path: &Path) -> Result<IndexReader> {
        Self::open_with(path, DirectoryKind::Mmap, ReloadPolicy::default())
    }

    /// Opens the latest commit of `path` with the chosen read path and reload policy.
    pub fn open_with(path: &Path, kind: DirectoryKind, policy: ReloadPolicy) -> Result<Self> {
        if !path.is_dir() {
            return Err(Error::NoIndex {
                path: path.display().to_string(),
            });
        }
        let dir = open_directory(path, kind)?;
        let index = Index::open_dir(dir.clone())?;
        let reader = Self::from_parts(dir, Source::Commits, index, 0);
        if policy == ReloadPolicy::OnCommitWithDelay {
            reader.spawn_watcher();
        }
        Ok(reader)
    }

    /// A reader following a writer's near-real-time views.
    pub(crate) fn for_writer(dir: Arc<dyn Directory>, slot: Arc<NrtSlot>) -> Self {
        let version = slot.version.load(Ordering::SeqCst);
        let index = slot.index.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Self::from_parts(dir, Source::Writer(slot), index, version)
    }

    fn from_parts(dir: Arc<dyn Directory>, source: Source, index: Index, version: u64) -> Self {
        let searcher = index.searcher();
        Self {
            inner: Arc::new(Inner {
                dir,
                source,
                current: RwLock::new(Current {
                    index,
                    searcher,
                    version,
                }),
                reloading: Mutex::new(()),
            }),
        }
    }

    /// The current point-in-time searcher. For a reader from a writer, the writer's latest
    /// `refresh` is picked up here without calling [`reload`](Self::reload).
    pub fn searcher(&self) -> Searcher {
        if let Source::Writer(slot) = &self.inner.source {
            let v = slot.version.load(Ordering::SeqCst);
            if v != self.read_current().version {
                let _ = self.reload();
            }
        }
        self.read_current().searcher.clone()
    }

    /// The view the current searcher searches.
    pub fn index(&self) -> Index {
        self.read_current().index.clone()
    }

    /// Verifies every byte of the current view's segment files; see [`Index::scrub`].
    pub fn scrub(&self) -> Result<()> {
        self.index().scrub()
    }

    /// [`scrub`](Self::scrub) on a background thread; join the handle for the first corruption.
    pub fn scrub_in_background(&self) -> std::thread::JoinHandle<Result<()>> {
        self.index().scrub_in_background()
    }

    /// The commit generation of the current view.
    pub fn generation(&self) -> u64 {
        self.read_current().index.commit().generation
    }

    fn read_current(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.inner.current.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Loads the newest commit (or the writer's newest near-real-time view), reusing the
    /// segments that did not change; returns whether the view changed.
    pub fn reload(&self) -> Result<bool> {
        let _one = self
            .inner
            .reloading
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let (old, old_version) = {
            let c = self.read_current();
            (c.index.clone(), c.version)
        };
        let (index, version) = match &self.inner.source {
            Source::Commits => {
                if latest_generation(&*self.inner.dir)? == Some(old.commit().generation) {
                    return Ok(false);
                }
                (Index::open_latest(self.inner.dir.clone(), Some(&old))?, 0)
            }
            Source::Writer(slot) => {
                let v = slot.version.load(Ordering::SeqCst);
                if v == old_version {
                    return Ok(false);
                }
                let index = slot.index.lock().unwrap_or_else(|e| e.into_inner()).clone();
                (index, v)
            }
        };
        let searcher = index.searcher();
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Current {
            index,
            searcher,
            version,
        };
        Ok(true)
    }

    fn spawn_watcher(&self) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("quarry-reload".into())
            .spawn(move || loop {
                std::thread::sleep(RELOAD_DELAY);
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                // A failed reload keeps the current view; the next tick tries again.
                let _ = IndexReader { inner }.reload();
            });
        // Without the thread the reader still works; it reloads only on request.
        drop(spawned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone>() {}

    #[test]
    fn reader_is_send_sync_clone() {
        assert_send_sync::<IndexReader>();
        assert_send_sync::<Searcher>();
    }
}
