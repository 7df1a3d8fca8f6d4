//! Which documents does a deletion remove? Buffered delete operations, applied to the
//! segments' live documents at refresh or commit, and the writer's per-segment state.
use std::sync::Arc;

use crate::codec::format::SEGMENT_FILES;
use crate::codec::livedocs::LiveDocs;
use crate::codec::meta::{CommitPoint, SegmentRef};
use crate::index::Index;
use crate::query::Query;
use crate::search::Searcher;
use crate::Result;

/// A buffered deletion.
#[derive(Clone, Debug)]
pub(crate) enum DeleteOp {
    /// The documents matching a query.
    Query(Query),
    /// Every document.
    All,
}

/// One segment of the writer's current state.
#[derive(Clone, Debug)]
pub(crate) struct SegState {
    /// As the next commit will list it (`del_gen`/`del_count`: the last written deletions).
    pub(crate) r: SegmentRef,
    /// Its current live documents, when it has deletions (may be newer than the file).
    pub(crate) live: Option<Arc<LiveDocs>>,
    /// `live` has deletions not yet written to a deletions file.
    pub(crate) dirty: bool,
}

impl SegState {
    pub(crate) fn new(r: SegmentRef) -> Self {
        Self {
            r,
            live: None,
            dirty: false,
        }
    }

    pub(crate) fn live_count(&self) -> u32 {
        self.live
            .as_ref()
            .map_or(self.r.doc_count, |l| l.live_count())
    }
}

/// Applies `ops` in order to the segments of `view` (which lists exactly `segs`): an operation
/// with opstamp `t` deletes the matching documents whose sequence number is below `t`.
pub(crate) fn apply(view: &Index, segs: &mut [SegState], ops: &[(DeleteOp, u64)]) -> Result<()> {
    // Deletions are idempotent, so matching ignores earlier deletions of this batch.
    let searcher = Searcher::new(view.schema().clone(), Arc::new(view.segments().to_vec()));
    for (op, stamp) in ops {
        let matches: Vec<Vec<u32>> = match op {
            DeleteOp::Query(q) => searcher.matching_docs(q)?,
            DeleteOp::All => view
                .segments()
                .iter()
                .map(|s| (0..s.doc_count()).collect())
                .collect(),
        };
        for ((seg, docs), st) in view.segments().iter().zip(matches).zip(segs.iter_mut()) {
            if docs.is_empty() || seg.seq(0) >= *stamp && seg.meta().seq_runs.len() <= 1 {
                continue;
            }
            for d in docs {
                if seg.seq(d) >= *stamp {
                    continue;
                }
                let live = st
                    .live
                    .get_or_insert_with(|| Arc::new(LiveDocs::all_live(st.r.doc_count)));
                if Arc::make_mut(live).delete(d) {
                    st.dirty = true;
                }
            }
        }
    }
    Ok(())
}

/// Whether `name` is a file an index writer makes (commit points and their temporary files,
/// segment files, deletion files). Clean-up only considers such files, and removes one only
/// when nothing references it.
pub(crate) fn is_index_file(name: &str) -> bool {
    if CommitPoint::parse_name(name).is_some() {
        return true;
    }
    if let Some(c) = name.strip_suffix(".tmp") {
        return CommitPoint::parse_name(c).is_some();
    }
    let Some((stem, ext)) = name.split_once('.') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(num) = stem.strip_prefix('s') else {
        return false;
    };
    if ext == "del" {
        return num
            .split_once('_')
            .is_some_and(|(a, b)| digits(a) && digits(b));
    }
    digits(num) && SEGMENT_FILES.iter().any(|(e, _)| *e == ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_index_files_only() {
        for n in [
            "commit_0000000003",
            "commit_0000000003.tmp",
            "s000001.post",
            "s000001.meta",
            "s000001_2.del",
        ] {
            assert!(is_index_file(n), "{n}");
        }
        for n in [
            "write.lock",
            "schema.json",
            "notes.txt",
            "s000001.post.bak",
            "sx.post",
            "s1_x.del",
            "commit_3",
        ] {
            assert!(!is_index_file(n), "{n}");
        }
    }
}
