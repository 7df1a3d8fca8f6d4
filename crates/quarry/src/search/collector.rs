//! Where do hits go? The one place where a segment's matches are filtered by live documents,
//! counted and offered to the top-k heap (the k best (score, index order) hits, best first).
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::codec::livedocs::LiveDocs;
use crate::index::SegmentReader;

/// Which documents of a segment count: all of them ([`AllLive`], free: the checks compile
/// away), or those set in a [`LiveDocs`] bitset.
pub trait LiveFilter: Copy {
    /// True for [`AllLive`]: every document counts, so a term's count in the segment is its
    /// document frequency.
    const ALL_LIVE: bool;
    fn is_live(self, doc: u32) -> bool;
    /// The live bits of documents `[64 i, 64 i + 64)`.
    fn word(self, i: usize) -> u64;
}

/// Every document is live (a segment without deletions).
#[derive(Clone, Copy, Debug)]
pub struct AllLive;

impl LiveFilter for AllLive {
    const ALL_LIVE: bool = true;
    #[inline(always)]
    fn is_live(self, _doc: u32) -> bool {
        true
    }
    #[inline(always)]
    fn word(self, _i: usize) -> u64 {
        !0
    }
}

impl LiveFilter for &LiveDocs {
    const ALL_LIVE: bool = false;
    #[inline(always)]
    fn is_live(self, doc: u32) -> bool {
        LiveDocs::is_live(self, doc)
    }
    #[inline(always)]
    fn word(self, i: usize) -> u64 {
        LiveDocs::word(self, i)
    }
}

/// Collects the hits of one segment: scoring loops ask it whether a document is live, then
/// hand it the document and score; it counts and offers to the shared [`TopK`].
pub struct LeafCollector<'a, L: LiveFilter> {
    top: &'a mut TopK,
    seg: &'a SegmentReader,
    ord: u32,
    live: L,
    count: u64,
}

impl<'a, L: LiveFilter> LeafCollector<'a, L> {
    pub fn new(top: &'a mut TopK, seg: &'a SegmentReader, ord: u32, live: L) -> Self {
        Self {
            top,
            seg,
            ord,
            live,
            count: 0,
        }
    }

    #[inline(always)]
    pub fn is_live(&self, doc: u32) -> bool {
        self.live.is_live(doc)
    }

    /// The live bits of documents `[64 i, 64 i + 64)`.
    #[inline(always)]
    pub fn live_word(&self, i: usize) -> u64 {
        self.live.word(i)
    }

    /// Counts a live match that is not offered (count-only modes, or pruned by its bound).
    #[inline(always)]
    pub fn count(&mut self, n: u64) {
        self.count += n;
    }

    /// Counts a live match and offers it to the top k.
    #[inline(always)]
    pub fn collect(&mut self, doc: u32, score: f32) {
        self.count += 1;
        self.offer(doc, score);
    }

    /// Offers a live match to the top k without counting it.
    #[inline(always)]
    pub fn offer(&mut self, doc: u32, score: f32) {
        let seg = self.seg;
        self.top.offer(
            score,
            DocAddress {
                segment: self.ord,
                doc,
            },
            || seg.seq(doc),
        );
    }

    /// The score a new hit must reach to possibly enter the top k (when full).
    #[inline(always)]
    pub fn threshold(&self) -> Option<f32> {
        self.top.threshold()
    }

    /// How many hits the top k keeps.
    pub fn k(&self) -> usize {
        self.top.k
    }

    /// When the top k is full: the k-th hit's score and sequence number (with k = 0 nothing
    /// can enter: an infinite score).
    pub fn kth(&self) -> Option<(f32, u64)> {
        if self.top.k == 0 {
            return Some((f32::INFINITY, u64::MAX));
        }
        self.top.worst().map(|w| (w.score, w.seq))
    }

    /// The first document of this segment from which on a document loses a score tie against
    /// a kept hit of sequence `seq` (see [`SegmentReader::first_doc_after_seq`]), so it must beat
    /// that hit's score, not just reach it.
    pub fn first_doc_after_seq(&self, seq: u64) -> u32 {
        self.seg.first_doc_after_seq(seq)
    }

    /// Forgets the matches counted so far: a pruned pass whose count is then redone exactly.
    pub fn reset_count(&mut self) {
        self.count = 0;
    }

    /// Live matches counted so far.
    pub fn counted(&self) -> u64 {
        self.count
    }

    /// The search's time budget, for counts taken outside the collector
    /// ([`Weight::fast_count`](super::weight::Weight::fast_count)).
    pub fn budget_mut(&mut self) -> &mut Budget {
        &mut self.top.budget
    }

    /// Whether the search's time budget is spent. Scoring loops call this once per unit of work
    /// (a block, a window, a few thousand doc ids), never per document; the clock is read only
    /// every [`Budget::CHECK_EVERY`] calls, and not at all without a deadline.
    #[inline(always)]
    pub fn out_of_time(&mut self) -> bool {
        self.top.budget.tick()
    }
}

/// A search's time budget: an optional deadline, checked cheaply (a counter between clock
/// reads). Once the deadline has passed it stays expired.
#[derive(Clone, Copy, Debug, Default)]
pub struct Budget {
    deadline: Option<Instant>,
    ticks: u32,
    expired: bool,
}

impl Budget {
    /// Calls to [`Budget::tick`] between clock reads (a power of two).
    pub const CHECK_EVERY: u32 = 16;

    /// A budget ending at `deadline` (`None`: unlimited).
    pub fn new(deadline: Option<Instant>) -> Self {
        Self {
            deadline,
            ticks: 0,
            expired: false,
        }
    }

    /// One unit of work done; true when the deadline has passed (read every
    /// [`Budget::CHECK_EVERY`] ticks).
    #[inline(always)]
    pub fn tick(&mut self) -> bool {
        if self.deadline.is_none() {
            return false;
        }
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks & (Self::CHECK_EVERY - 1) != 0 {
            return self.expired;
        }
        self.check_now()
    }

    /// Reads the clock now (between segments); true when the deadline has passed.
    #[cold]
    pub fn check_now(&mut self) -> bool {
        if !self.expired {
            if let Some(d) = self.deadline {
                self.expired = Instant::now() >= d;
            }
        }
        self.expired
    }

    /// Marks the deadline as passed (a read was refused because of it).
    pub fn expire(&mut self) {
        self.expired = true;
    }

    /// Whether the deadline was seen to pass.
    pub fn expired(&self) -> bool {
        self.expired
    }
}

/// A document of the searcher: segment ordinal and doc id inside the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocAddress {
    pub segment: u32,
    pub doc: u32,
}

/// One ranked result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    pub score: f32,
    pub doc: DocAddress,
    /// Index order (the order documents were added); breaks score ties, lower first.
    pub seq: u64,
}

/// Heap entry ordered so that the heap's top is the worst hit kept.
#[derive(Clone, Copy, Debug)]
struct Entry(Hit);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// "Greater" = worse: lower score, then later in index order.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.score
            .total_cmp(&self.0.score)
            .then(self.0.seq.cmp(&o.0.seq))
    }
}

/// Keeps the best `k` hits.
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
    /// The search's time budget, shared by the segments' collectors.
    pub budget: Budget,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        Self::with_budget(k, Budget::default())
    }

    /// Keeps the best `k` hits of a search limited by `budget`.
    pub fn with_budget(k: usize, budget: Budget) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
            budget,
        }
    }

    /// The worst hit kept, once the top k is full.
    #[inline]
    pub fn worst(&self) -> Option<Hit> {
        if self.k > 0 && self.heap.len() == self.k {
            self.heap.peek().map(|e| e.0)
        } else {
            None
        }
    }

    /// The score a new hit must reach to possibly enter (when full).
    #[inline]
    pub fn threshold(&self) -> Option<f32> {
        if self.k > 0 && self.heap.len() == self.k {
            self.heap.peek().map(|e| e.0.score)
        } else if self.k == 0 {
            Some(f32::INFINITY)
        } else {
            None
        }
    }

    /// Offers a hit; `seq` is computed only when the score could tie the worst kept one.
    #[inline]
    pub fn offer(&mut self, score: f32, doc: DocAddress, seq: impl FnOnce() -> u64) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Entry(Hit {
                score,
                doc,
                seq: seq(),
            }));
            return;
        }
        let worst = self.heap.peek().expect("full heap").0;
        if score < worst.score {
            return;
        }
        let hit = Hit {
            score,
            doc,
            seq: seq(),
        };
        if score == worst.score && hit.seq > worst.seq {
            return;
        }
        self.heap.pop();
        self.heap.push(Entry(hit));
    }

    /// The hits, best first.
    pub fn into_sorted(self) -> Vec<Hit> {
        let mut v: Vec<Hit> = self.heap.into_iter().map(|e| e.0).collect();
        v.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.seq.cmp(&b.seq)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_best_and_breaks_ties_by_index_order() {
        let mut t = TopK::new(3);
        let a = |d| DocAddress { segment: 0, doc: d };
        for (d, s, q) in [
            (0, 1.0, 5),
            (1, 3.0, 1),
            (2, 2.0, 9),
            (3, 2.0, 2),
            (4, 0.5, 0),
            (5, 2.0, 3),
        ] {
            t.offer(s, a(d), || q);
        }
        let docs: Vec<u32> = t.into_sorted().iter().map(|h| h.doc.doc).collect();
        assert_eq!(docs, vec![1, 3, 5]);
    }

    #[test]
    fn budget_without_deadline_never_expires_and_past_deadline_does() {
        let mut none = Budget::new(None);
        assert!((0..1000).all(|_| !none.tick()));
        assert!(!none.check_now());
        let mut past = Budget::new(Some(Instant::now()));
        assert!(past.check_now());
        assert!(past.expired());
        assert!(past.tick(), "expired stays expired between clock reads");
        let mut far = Budget::new(Some(Instant::now() + std::time::Duration::from_secs(3600)));
        assert!((0..1000).all(|_| !far.tick()));
        assert!(!far.expired());
    }
}
