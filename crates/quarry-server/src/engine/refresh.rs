//! When do writes become searchable and durable? Refresh, commit and their schedules, and
//! `refresh=wait_for`.
//!
//! A refresh makes writes searchable without a commit ([`quarry::IndexWriter::refresh`]). The
//! server's scheduler ([`crate::Refresher`]) refreshes an index whose `index.refresh_interval`
//! has passed while writes wait (`-1` disables scheduled refreshes) and commits every
//! [`COMMIT_INTERVAL`] or when the translog passes [`COMMIT_TRANSLOG_BYTES`]. A commit records
//! the last translog sequence number it contains in the commit's user data and trims the
//! translog.
//!
//! `refresh=wait_for` ([`IndexHandle::wait_for_refresh`]) waits for the next refresh, scheduled
//! or explicit, as Elasticsearch does, without forcing one. It is bounded so that a request
//! never hangs forever: after twice the refresh interval plus one second (the scheduler should
//! long have refreshed), or after [`WAIT_FOR_BOUND`] when scheduled refreshes are disabled,
//! the request forces a refresh itself and the response says `"forced_refresh": true` — what
//! Elasticsearch does when too many requests wait (`index.max_refresh_listeners`).
use std::time::{Duration, Instant};

use super::write::GC_DELETES;
use super::{internal, IndexHandle, WriteState, TRANSLOG_SEQ};
use crate::error::ApiError;

/// Longest time between commits while writes arrive.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(10);
/// Translog size that triggers a commit.
pub const COMMIT_TRANSLOG_BYTES: u64 = 64 << 20;
/// Longest `refresh=wait_for` wait when scheduled refreshes are disabled (`-1`).
pub const WAIT_FOR_BOUND: Duration = Duration::from_secs(30);

impl IndexHandle {
    pub(super) fn refresh_locked(&self, st: &mut WriteState) -> Result<bool, ApiError> {
        st.last_refresh = Instant::now();
        if !st.dirty {
            return Ok(false);
        }
        let t = Instant::now();
        st.writer.refresh()?;
        self.reader.reload()?;
        self.forget_refreshed(st);
        st.dirty = false;
        self.bump_generation();
        // Merges keep pace with the segments refreshes flush (the merge runs on its own thread;
        // it joins the writer at a later refresh or commit).
        if let Err(e) = st.writer.maybe_merge_in_background() {
            tracing::warn!(index = %self.name, error = %e, "could not start a background merge");
        }
        self.note_merges(st);
        self.metrics.operation("refresh", &self.name, t.elapsed());
        Ok(true)
    }

    /// After a refresh the searcher shows every write: only recent tombstones stay.
    fn forget_refreshed(&self, st: &mut WriteState) {
        st.docs
            .retain(|_, d| !d.live && d.at.elapsed() < GC_DELETES);
    }

    fn bump_generation(&self) {
        self.refreshes.send_modify(|g| *g += 1);
    }

    /// The number of refreshes so far (a write is searchable once it has grown past the value
    /// read under the writer lock after the write).
    pub fn refresh_generation(&self) -> u64 {
        *self.refreshes.borrow()
    }

    /// `refresh=wait_for`: waits (without holding a worker) until a refresh after generation
    /// `after`, within the bound of the module doc. Returns false when the bound passed: the
    /// caller then forces the refresh and says so.
    pub async fn wait_for_refresh(&self, after: u64) -> bool {
        let bound = match self.settings.refresh_interval_ms {
            Some(ms) => Duration::from_millis(ms.saturating_mul(2)) + Duration::from_secs(1),
            None => WAIT_FOR_BOUND,
        };
        let mut rx = self.refreshes.subscribe();
        let seen =
            tokio::time::timeout(bound, async { rx.wait_for(|g| *g > after).await.is_ok() }).await;
        seen == Ok(true)
    }

    /// Makes every acknowledged write searchable (near-real-time, no commit). Returns whether
    /// anything changed.
    pub fn refresh(&self) -> Result<bool, ApiError> {
        let mut st = self.state.lock().expect("writer lock");
        self.refresh_locked(&mut st)
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

    pub(super) fn commit_locked(&self, st: &mut WriteState) -> Result<(), ApiError> {
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
        let was_dirty = st.dirty;
        self.forget_refreshed(st);
        st.dirty = false;
        st.uncommitted = false;
        if was_dirty {
            self.bump_generation();
        }
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
}
