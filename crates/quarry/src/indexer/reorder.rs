//! Document-id reordering by recursive graph bisection (BP; Dhulipala et al., KDD 2016, as
//! Lucene's `BPIndexReorderer` applies it): documents that share terms get nearby ids, so the
//! gaps in postings shrink (smaller blocks) and the documents a query touches cluster (more
//! blocks skipped whole).
//!
//! The documents are split in two halves; documents move between the halves while that lowers
//! the estimated cost of encoding every term's postings as gaps (each term's `d` documents in a
//! part of `n` cost about `d log2(n / (d + 1))` bits); then each half is split again, down to
//! parts of [`BpOptions::min_partition`] documents. Only terms with a document frequency in
//! `[min_doc_freq, max_doc_freq]` take part: rare terms cost little, and the most frequent
//! ones are everywhere whatever the order.
//!
//! The result is a permutation; a merge writes the segment in that order
//! ([`super::merge::merge_reordered`]). Scores and counts do not change; among equal scores,
//! ties (broken by document id) may come in another order.

use std::cell::RefCell;

use crate::{Error, Result};

/// Settings of a BP pass. The defaults follow Lucene's `BPIndexReorderer` (parts of 32
/// documents, at most 20 iterations per split), except `min_doc_freq`: Lucene's 4,096 is
/// meant for indexes of many millions of documents; 32 lets the pass work on smaller ones too.
#[derive(Clone, Debug, PartialEq)]
pub struct BpOptions {
    /// Terms in fewer documents are left out.
    pub min_doc_freq: u32,
    /// Terms in more than this fraction of the documents are left out.
    pub max_doc_freq_ratio: f64,
    /// Parts of at most this many documents are not split further.
    pub min_partition: usize,
    /// Rounds of moves per split (a split stops earlier when no move helps).
    pub max_iters: u32,
    /// The fields whose terms count (`None`: every text field).
    pub fields: Option<Vec<String>>,
    /// Threads for the top splits (the two halves of a split are independent).
    pub threads: usize,
}

impl Default for BpOptions {
    fn default() -> Self {
        Self {
            min_doc_freq: 32,
            max_doc_freq_ratio: 1.0,
            min_partition: 32,
            max_iters: 20,
            fields: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl BpOptions {
    /// Refuses settings that cannot work, naming them.
    pub fn check(&self) -> Result<()> {
        if self.min_partition < 2 {
            return Err(Error::InvalidArgument(format!(
                "BP min_partition must be at least 2 (got {})",
                self.min_partition
            )));
        }
        if !(self.max_doc_freq_ratio > 0.0 && self.max_doc_freq_ratio <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "BP max_doc_freq_ratio must be in (0, 1] (got {})",
                self.max_doc_freq_ratio
            )));
        }
        Ok(())
    }
}

/// Each document's terms (dense term ids), as a forward index.
#[derive(Default)]
pub(crate) struct Forward {
    offsets: Vec<usize>,
    terms: Vec<u32>,
    term_count: usize,
}

impl Forward {
    /// Builds the forward index of `docs` documents from (document, term) pairs in any order.
    pub(crate) fn from_pairs(docs: usize, term_count: usize, pairs: &[(u32, u32)]) -> Self {
        let mut offsets = vec![0usize; docs + 1];
        for &(d, _) in pairs {
            offsets[d as usize + 1] += 1;
        }
        for i in 0..docs {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut terms = vec![0u32; pairs.len()];
        for &(d, t) in pairs {
            terms[fill[d as usize]] = t;
            fill[d as usize] += 1;
        }
        Self {
            offsets,
            terms,
            term_count,
        }
    }

    fn of(&self, doc: u32) -> &[u32] {
        &self.terms[self.offsets[doc as usize]..self.offsets[doc as usize + 1]]
    }

    fn docs(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// The estimated bits of `d` gaps among `n` documents.
#[inline]
fn cost(d: u32, n: f32) -> f32 {
    let d = d as f32;
    d * (n / (d + 1.0)).log2()
}

/// What moving one document of term `t` from a part (`from` of its documents, `nf` documents
/// in all) to the other (`to`, `nt`) saves.
#[inline]
fn move_gain(from: u32, to: u32, nf: f32, nt: f32) -> f32 {
    cost(from, nf) + cost(to, nt) - cost(from - 1, nf) - cost(to + 1, nt)
}

/// Per-thread degree counters, as long as the term count, zero outside a split.
struct Scratch {
    left: Vec<u32>,
    right: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch { left: Vec::new(), right: Vec::new() }) };
}

/// The new order: `order[new] = old` document.
pub(crate) fn permutation(fwd: &Forward, opts: &BpOptions) -> Vec<u32> {
    let mut docs: Vec<u32> = (0..fwd.docs() as u32).collect();
    bisect(&mut docs, fwd, opts, opts.threads.max(1));
    docs
}

fn bisect(docs: &mut [u32], fwd: &Forward, opts: &BpOptions, threads: usize) {
    if docs.len() <= opts.min_partition.max(2) {
        return;
    }
    SCRATCH.with(|s| split(docs, fwd, opts, &mut s.borrow_mut()));
    let mid = docs.len() / 2;
    let (left, right) = docs.split_at_mut(mid);
    if threads > 1 {
        std::thread::scope(|sc| {
            sc.spawn(|| bisect(left, fwd, opts, threads / 2));
            bisect(right, fwd, opts, threads - threads / 2);
        });
    } else {
        bisect(left, fwd, opts, 1);
        bisect(right, fwd, opts, 1);
    }
}

/// Moves documents between the two halves of `docs` while that lowers the cost.
fn split(docs: &mut [u32], fwd: &Forward, opts: &BpOptions, s: &mut Scratch) {
    if s.left.len() < fwd.term_count {
        s.left.resize(fwd.term_count, 0);
        s.right.resize(fwd.term_count, 0);
    }
    let mid = docs.len() / 2;
    let (nl, nr) = (mid as f32, (docs.len() - mid) as f32);
    for &d in &docs[..mid] {
        for &t in fwd.of(d) {
            s.left[t as usize] += 1;
        }
    }
    for &d in &docs[mid..] {
        for &t in fwd.of(d) {
            s.right[t as usize] += 1;
        }
    }
    let mut gl: Vec<(f32, u32)> = Vec::with_capacity(mid);
    let mut gr: Vec<(f32, u32)> = Vec::with_capacity(docs.len() - mid);
    for _ in 0..opts.max_iters {
        gl.clear();
        gr.clear();
        for &d in &docs[..mid] {
            let g = fwd
                .of(d)
                .iter()
                .map(|&t| move_gain(s.left[t as usize], s.right[t as usize], nl, nr))
                .sum();
            gl.push((g, d));
        }
        for &d in &docs[mid..] {
            let g = fwd
                .of(d)
                .iter()
                .map(|&t| move_gain(s.right[t as usize], s.left[t as usize], nr, nl))
                .sum();
            gr.push((g, d));
        }
        // Best moves first; ties by document, so that the order never depends on threads.
        let by_gain = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        gl.sort_unstable_by(by_gain);
        gr.sort_unstable_by(by_gain);
        let mut swaps = 0;
        for (l, r) in gl.iter().zip(&gr) {
            if l.0 + r.0 <= 0.0 {
                break;
            }
            for &t in fwd.of(l.1) {
                s.left[t as usize] -= 1;
                s.right[t as usize] += 1;
            }
            for &t in fwd.of(r.1) {
                s.right[t as usize] -= 1;
                s.left[t as usize] += 1;
            }
            swaps += 1;
        }
        if swaps == 0 {
            break;
        }
        // The halves' members: the unswapped of each side, then the other side's swapped.
        let (moved_l, kept_l) = gl.split_at(swaps);
        let (moved_r, kept_r) = gr.split_at(swaps);
        let mut new_left: Vec<u32> = kept_l.iter().chain(moved_r).map(|x| x.1).collect();
        let mut new_right: Vec<u32> = kept_r.iter().chain(moved_l).map(|x| x.1).collect();
        // Keep each half in ascending old order: the deepest parts keep the input's order.
        new_left.sort_unstable();
        new_right.sort_unstable();
        docs[..mid].copy_from_slice(&new_left);
        docs[mid..].copy_from_slice(&new_right);
    }
    for &d in docs.iter() {
        for &t in fwd.of(d) {
            s.left[t as usize] = 0;
            s.right[t as usize] = 0;
        }
    }
}

/// The total estimated cost, in bits, of every term's gaps under `order` (`order[new] = old`):
/// what BP lowers; for tests and reports.
#[cfg(test)]
pub(crate) fn gap_cost(fwd: &Forward, order: &[u32]) -> f64 {
    let mut last = vec![u32::MAX; fwd.term_count];
    let mut bits = 0f64;
    for (new, &old) in order.iter().enumerate() {
        for &t in fwd.of(old) {
            let gap = match last[t as usize] {
                u32::MAX => new as u32 + 1,
                p => new as u32 - p,
            };
            bits += f64::from(gap).log2() + 1.0;
            last[t as usize] = new as u32;
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opts(min_partition: usize, threads: usize) -> BpOptions {
        BpOptions {
            min_partition,
            threads,
            ..BpOptions::default()
        }
    }

    /// Two topics in a scrambled order: BP puts each topic's documents together, and the gaps
    /// get cheaper.
    #[test]
    fn scrambled_topics_come_apart() {
        let n = 256u32;
        let topic = |d: u32| (d.wrapping_mul(2_654_435_761) >> 13) % 2;
        let pairs: Vec<(u32, u32)> = (0..n)
            .flat_map(|d| (0..10).map(move |t| (d, topic(d) * 10 + t)))
            .collect();
        let fwd = Forward::from_pairs(n as usize, 20, &pairs);
        let order = permutation(&fwd, &opts(32, 1));
        let zeros = (0..n).filter(|&d| topic(d) == 0).count();
        // The topics come apart: 129 and 127 documents, halves of 128, so one document of the
        // larger topic is left in the other's half (two switches of topic at most).
        assert_eq!(zeros, 129);
        let firsts: Vec<u32> = order.iter().map(|&d| topic(d)).collect();
        let switches = firsts.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(switches <= 2, "order by topic {firsts:?}");
        let before: Vec<u32> = (0..n).collect();
        assert!(gap_cost(&fwd, &order) < gap_cost(&fwd, &before));
    }

    proptest! {
        /// Any forward index: the result is a permutation, the same with 1 and 3 threads, and
        /// its gap cost is no worse than the input order's by more than rounding.
        #[test]
        fn a_permutation_independent_of_threads(
            docs in prop::collection::vec(prop::collection::btree_set(0u32..40, 0..8), 0..300),
            min_partition in 2usize..40,
        ) {
            let pairs: Vec<(u32, u32)> = docs
                .iter()
                .enumerate()
                .flat_map(|(d, ts)| ts.iter().map(move |&t| (d as u32, t)))
                .collect();
            let fwd = Forward::from_pairs(docs.len(), 40, &pairs);
            let one = permutation(&fwd, &opts(min_partition, 1));
            let three = permutation(&fwd, &opts(min_partition, 3));
            prop_assert_eq!(&one, &three);
            let mut sorted = one.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..docs.len() as u32).collect::<Vec<_>>());
        }
    }
}
