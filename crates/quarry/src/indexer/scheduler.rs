//! When do merges run? The background merge scheduler: one merge at a time runs on its own
//! thread while the writer keeps adding, deleting and refreshing; a finished merge replaces its
//! sources in the writer's state, with the deletions made to them meanwhile carried over.
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use quarry_store::Directory;

use super::deletes::SegState;
use super::merge::{merge_with_maps, DocMap, NONE};
use super::{CommitStats, IndexWriter};
use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::{SegmentMeta, SegmentRef};
use crate::index::SegmentReader;
use crate::schema::Schema;
use crate::{Error, Result};

/// Nice levels below the caller at which a background merge runs (see `merges-*.md` and
/// `load-*.md` in bench/results for its effect on search tails).
const MERGE_NICE_STEPS: i32 = 10;

type MergeOutput = Result<(SegmentMeta, Vec<DocMap>)>;

/// A background merge that finished and joined the writer's state.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeInfo {
    /// How many segments were merged.
    pub segments: usize,
    /// Documents in the merged segment (the sources' live documents when it started).
    pub docs: u32,
    /// Time the merge thread spent writing the merged segment.
    pub seconds: f64,
}

/// A merge running on a background thread.
pub(crate) struct RunningMerge {
    /// The merged segments, by name.
    sources: Vec<String>,
    /// Their live documents when the merge started (what the merged segment holds).
    live_at_start: Vec<Option<Arc<LiveDocs>>>,
    doc_counts: Vec<u32>,
    /// The segment being written.
    name: String,
    handle: JoinHandle<(MergeOutput, Duration)>,
}

impl RunningMerge {
    /// Starts merging `readers` (with their current live documents) into segment `name`.
    pub(crate) fn start(
        dir: Arc<dyn Directory>,
        schema: Schema,
        readers: Vec<Arc<SegmentReader>>,
        live: Vec<Option<Arc<LiveDocs>>>,
        name: String,
        sort: Option<crate::index_sort::IndexSort>,
    ) -> Result<Self> {
        let sources = readers.iter().map(|r| r.name().to_string()).collect();
        let doc_counts = readers.iter().map(|r| r.doc_count()).collect();
        let live_at_start = live.clone();
        let target = name.clone();
        let handle = std::thread::Builder::new()
            .name("quarry-merge".into())
            .spawn(move || {
                // Merges are background work: searches and adds go first on a busy machine.
                quarry_store::lower_current_thread_priority(MERGE_NICE_STEPS);
                let t = Instant::now();
                let out = crate::failpoint::fail("merge-before-write").and_then(|()| {
                    merge_with_maps(&*dir, &schema, &readers, &live, &name, sort.as_ref())
                });
                // Crash tests: die with the merged segment written but not yet committed.
                crate::failpoint::hit("background-merge-written");
                (out, t.elapsed())
            })
            .map_err(|e| Error::InvalidArgument(format!("could not start a merge thread: {e}")))?;
        Ok(Self {
            sources,
            live_at_start,
            doc_counts,
            name: target,
            handle,
        })
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// The files the running merge writes (clean-up must leave them alone).
    pub(crate) fn output_files(&self) -> Vec<String> {
        SegmentRef {
            name: self.name.clone(),
            doc_count: 0,
            del_gen: 0,
            del_count: 0,
        }
        .files()
    }

    /// Waits for the merge and replaces its sources in `segs` by the merged segment, whose
    /// live documents exclude every document deleted from a source since the merge started.
    pub(crate) fn install(self, segs: &mut Vec<SegState>) -> Result<MergeInfo> {
        let (out, took) = self
            .handle
            .join()
            .map_err(|_| Error::WriterPoisoned("a merge thread panicked".into()))?;
        let (meta, maps) = out?;
        let info = MergeInfo {
            segments: self.sources.len(),
            docs: meta.doc_count,
            seconds: took.as_secs_f64(),
        };
        let mut live = LiveDocs::all_live(meta.doc_count);
        let mut dirty = false;
        for (k, name) in self.sources.iter().enumerate() {
            // A source dropped meanwhile had every document deleted.
            let now = segs
                .iter()
                .find(|s| &s.r.name == name)
                .map(|s| s.live.clone());
            let start = self.live_at_start[k].as_deref();
            for d in 0..self.doc_counts[k] {
                if start.is_some_and(|l| !l.is_live(d)) {
                    continue;
                }
                let gone = match &now {
                    None => true,
                    Some(None) => false,
                    Some(Some(l)) => !l.is_live(d),
                };
                let nd = maps[k].get(d);
                if gone && nd != NONE && live.delete(nd) {
                    dirty = true;
                }
            }
        }
        let pos = segs
            .iter()
            .position(|s| self.sources.contains(&s.r.name))
            .unwrap_or(segs.len());
        segs.retain(|s| !self.sources.contains(&s.r.name));
        if live.live_count() > 0 {
            segs.insert(
                pos.min(segs.len()),
                SegState {
                    r: SegmentRef {
                        name: meta.name.clone(),
                        doc_count: meta.doc_count,
                        del_gen: 0,
                        del_count: 0,
                    },
                    live: dirty.then(|| Arc::new(live)),
                    dirty,
                },
            );
        }
        Ok(info)
    }
}

impl IndexWriter {
    /// Runs the merge policy's merges on a background thread (one at a time) instead of inside
    /// [`commit`](Self::commit): adds, deletes, refreshes and searches go on meanwhile. A
    /// finished merge joins the writer's state at the next refresh or commit (deletions made to
    /// its sources meanwhile are carried over) and becomes durable with the next commit.
    pub fn set_background_merges(&mut self, on: bool) {
        self.background = on;
    }

    /// Waits for the running background merge, if any, and installs it; returns how many merges
    /// were installed (0 or 1). The result is searchable after the next refresh and durable
    /// after the next commit.
    pub fn wait_for_merges(&mut self) -> Result<usize> {
        let n = self.install_merge(true)?;
        if let Some(e) = self.merge_error.take() {
            return Err(e);
        }
        Ok(n)
    }

    /// Whether merges run in the background (see
    /// [`set_background_merges`](Self::set_background_merges)).
    pub fn background_merges(&self) -> bool {
        self.background
    }

    /// Installs a finished background merge and starts the merge policy's next one if none is
    /// running; never waits. Returns whether a merge is running afterwards. A long-lived writer
    /// calls it after [`refresh`](Self::refresh) so that merges keep pace with flushes between
    /// commits (Lucene merges after every flush). Does nothing without background merges.
    pub fn maybe_merge_in_background(&mut self) -> Result<bool> {
        if !self.background {
            return Ok(false);
        }
        self.install_merge(false)?;
        if self.merge_error.is_none() {
            self.start_merge()?;
        }
        Ok(self.running.is_some())
    }

    /// Waits for the running background merge, if any, and commits its result (with any other
    /// change made since the last commit) without starting another one: a server's shutdown has
    /// at most one merge to wait for, and its work is kept. Returns how many merges were
    /// committed (0 or 1). A failed merge, or a failure to commit its result, is
    /// [`Error::MergeFailed`] naming the last commit, which stands.
    pub fn commit_running_merge(&mut self) -> Result<usize> {
        let generation = self.commit.generation;
        let failed = |e| Error::MergeFailed {
            generation,
            source: Box::new(e),
        };
        let n = self.wait_for_merges().map_err(failed)?;
        if n > 0 {
            // Committing the merged state failing leaves the last commit as it was.
            self.commit_only().map_err(failed)?;
        }
        Ok(n)
    }

    /// Runs the merge policy's merges one after another on the background thread, committing
    /// each as it finishes, until the policy asks for none; then returns with no merge running.
    /// A short-lived process (the CLI) calls it after [`commit`](Self::commit) so that its
    /// index is merged before it exits, with the commit already durable. A failed merge is
    /// [`Error::MergeFailed`] naming the last durable commit, which stands.
    pub fn finish_merges(&mut self) -> Result<CommitStats> {
        let start = Instant::now();
        let mut merges = 0;
        loop {
            merges += self.commit_running_merge()?;
            let generation = self.commit.generation;
            self.start_merge().map_err(|e| Error::MergeFailed {
                generation,
                source: Box::new(e),
            })?;
            if self.running.is_none() {
                break;
            }
        }
        Ok(self.stats(merges, start))
    }

    /// The background merges that finished and joined this writer's state so far, oldest first.
    pub fn background_merges_done(&self) -> &[MergeInfo] {
        &self.merges_done
    }

    /// Installs the background merge if it finished (or, with `wait`, once it finishes). A
    /// failed merge is kept for the next commit to report; its sources stay as they are.
    pub(super) fn install_merge(&mut self, wait: bool) -> Result<usize> {
        let Some(r) = self.running.take() else {
            return Ok(0);
        };
        if !wait && !r.is_finished() {
            self.running = Some(r);
            return Ok(0);
        }
        match r.install(&mut self.segs) {
            Ok(info) => {
                self.merges_done.push(info);
                Ok(1)
            }
            Err(e) => {
                let _ = self.delete_unreferenced();
                self.merge_error = Some(e);
                Ok(0)
            }
        }
    }

    /// Starts the policy's next merge in the background, unless one is running.
    pub(super) fn start_merge(&mut self) -> Result<()> {
        if self.running.is_some() {
            return Ok(());
        }
        let Some(picked) = self.opts.merge_policy.find_merge(&self.sizes()) else {
            return Ok(());
        };
        let view = match &self.view {
            Some(v) => v.clone(),
            None => self.assemble()?,
        };
        let readers = picked.iter().map(|&i| view.segments()[i].clone()).collect();
        let live = picked.iter().map(|&i| self.segs[i].live.clone()).collect();
        self.running = Some(RunningMerge::start(
            self.shared.dir.clone(),
            self.shared.schema.clone(),
            readers,
            live,
            self.shared.segment_name(),
            self.shared.index_sort.clone(),
        )?);
        Ok(())
    }
}
