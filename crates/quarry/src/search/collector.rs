//! Top-k collection: the k best (score, index order) hits, best first.
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

impl TopK {
    pub fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
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
}
