//! Scorers: iterators over the matching documents of one segment, in increasing doc order, that
//! score the current document. Combinators build boolean logic out of term scorers.
//!
//! Contract: `doc()` starts at the first match candidate (or [`TERMINATED`]); `next`/`seek` move
//! forward only; `seek(t)` lands on the first candidate `>= t`; `matches()` confirms a candidate
//! (two-phase: phrases check positions only for documents that pass the cheap approximation);
//! `score()` is called only on confirmed documents; `max_score` and `block_max` bound scores.
use quarry_store::Bytes;

use super::bm25::SimScorer;
pub use crate::codec::postings::TERMINATED;
use crate::codec::postings::{mark_docs, Corruption, PostingsCursor, BLOCK};

pub trait Scorer: Send {
    fn doc(&self) -> u32;
    fn next(&mut self) -> u32;
    fn seek(&mut self, target: u32) -> u32;
    fn score(&mut self) -> f32;
    /// Estimated number of candidates (drives rarest-first ordering).
    fn cost(&self) -> u64;
    /// Confirms the current candidate; approximations (phrases) check positions here.
    fn matches(&mut self) -> bool {
        true
    }
    /// Whether `matches` can return false (a two-phase scorer).
    fn is_two_phase(&self) -> bool {
        false
    }
    /// An upper bound of every score this scorer can still produce.
    fn max_score(&self) -> f32;
    /// The last doc of the block holding `target` and a bound of the scores up to it.
    fn block_max(&mut self, _target: u32) -> (u32, f32) {
        (TERMINATED - 1, self.max_score())
    }
    /// Tells a top-k search's scorer the score a document must now exceed to be kept: scorers
    /// that can (the optional clauses of [`ReqOptScorer`]) then skip documents that cannot reach
    /// it. Only ever raised; never called by counting searches.
    fn set_min_competitive(&mut self, _min: f32) {}
    /// Whether this scorer has passed over matching documents on its own (after
    /// `set_min_competitive`), so a count of what it produced is a lower bound.
    fn pruned(&self) -> bool {
        false
    }
    /// Like `seek`, but may pass over documents up to `limit` whose score cannot reach `need`
    /// (the optional side of [`ReqOptScorer`] in a window where the required side alone cannot
    /// compete). Never passes over a document above `limit`, never lands on [`TERMINATED`]
    /// unless `seek` would.
    fn seek_competitive(&mut self, target: u32, _need: f32, _limit: u32) -> u32 {
        self.seek(target)
    }
    /// The BM25 frequency and norm byte the score of the current (matching) document comes
    /// from, for scorers of one term or phrase ([`crate::search::explain`]); `None` for others.
    fn freq_norm(&mut self) -> Option<(f32, u8)> {
        None
    }
    /// An inconsistency met in the index data, reported after the search.
    fn corruption(&self) -> Option<Corruption> {
        None
    }
}

/// How many blocks [`TermScorer::max_over`] reads before it settles for the term's maximum.
pub const MAX_BOUND_BLOCKS: usize = 16;

/// Scores one term's postings with BM25.
pub struct TermScorer {
    cursor: PostingsCursor,
    sim: SimScorer,
    norms: Option<Bytes>,
    max: f32,
}

impl TermScorer {
    pub fn new(cursor: PostingsCursor, sim: SimScorer, norms: Option<Bytes>) -> Self {
        let imp = cursor.term_impact();
        let max = sim.score(
            imp.max_freq as f32,
            if norms.is_some() { imp.min_norm } else { 1 },
        );
        Self {
            cursor,
            sim,
            norms,
            max,
        }
    }
    #[inline]
    fn norm(&self, doc: u32) -> u8 {
        match &self.norms {
            Some(n) => n.get(doc as usize).copied().unwrap_or(1),
            None => 1,
        }
    }
    pub fn cursor_mut(&mut self) -> &mut PostingsCursor {
        &mut self.cursor
    }
    pub fn freq(&self) -> u32 {
        self.cursor.freq()
    }
    /// Number of postings blocks (a skip table exists when more than one).
    #[inline]
    pub fn block_count(&self) -> usize {
        self.cursor.block_count()
    }
    /// The last doc of block `b` (needs more than one block).
    #[inline]
    pub fn block_last_doc(&self, b: usize) -> u32 {
        self.cursor.block_last_doc(b)
    }
    /// A bound of every score in block `b` (needs more than one block); equal to what
    /// [`Scorer::block_max`] gives for that block.
    #[inline]
    pub fn block_bound(&self, b: usize) -> f32 {
        let m = self
            .cursor
            .block_factor(b, self.sim.factors(), self.norms.is_some());
        self.sim.score_factor(m)
    }
    /// The bound of block `b` as a `freq * factor` product (see [`TermScorer::factor`]); its
    /// score is [`TermScorer::block_bound`].
    #[inline]
    pub fn block_factor(&self, b: usize) -> f32 {
        self.cursor
            .block_factor(b, self.sim.factors(), self.norms.is_some())
    }
    /// [`TermScorer::block_factor`] of every block, into `out`.
    pub fn block_factors(&self, out: &mut Vec<f32>) {
        self.cursor
            .block_factors(self.sim.factors(), self.norms.is_some(), out)
    }
    /// The [`TermScorer::factor`] of each document of the block the cursor was moved to with
    /// [`TermScorer::goto_block`], into `out`; returns the block's documents (as many as the
    /// products written). One tight pass, norms looked up without a branch per document.
    #[inline]
    pub fn block_products<'a>(&'a self, out: &mut [f32; BLOCK]) -> &'a [u32] {
        let (docs, freqs) = self.cursor.block_docs_freqs();
        let factors = self.sim.factors();
        match &self.norms {
            Some(n) => {
                let norms = n.as_slice();
                for ((o, &d), &f) in out.iter_mut().zip(docs).zip(freqs) {
                    let norm = norms.get(d as usize).copied().unwrap_or(1);
                    *o = f as f32 * factors[norm as usize];
                }
            }
            None => {
                for (o, &f) in out.iter_mut().zip(freqs) {
                    *o = f as f32 * factors[1];
                }
            }
        }
        docs
    }
    /// The `freq * factors[norm]` product of document `doc` with `freq`: its score is
    /// [`TermScorer::score_factor`] of it, bit for bit what [`Scorer::score`] gives.
    #[inline]
    pub fn factor(&self, doc: u32, freq: u32) -> f32 {
        freq as f32 * self.sim.factors()[self.norm(doc) as usize]
    }
    /// The score of a `freq * factor` product.
    #[inline]
    pub fn score_factor(&self, m: f32) -> f32 {
        self.sim.score_factor(m)
    }
    /// The smallest product whose score reaches `th` (see [`SimScorer::min_factor`]).
    pub fn min_factor(&self, th: f32) -> f32 {
        self.sim.min_factor(th)
    }
    /// See [`PostingsCursor::goto_block`].
    pub fn goto_block(&mut self, b: usize) -> u32 {
        self.cursor.goto_block(b)
    }
    /// See [`PostingsCursor::block_docs_freqs`].
    #[inline]
    pub fn block_docs_freqs(&self) -> (&[u32], &[u32]) {
        self.cursor.block_docs_freqs()
    }
    /// See [`PostingsCursor::mark_until`].
    pub fn mark_until(&mut self, base: u32, end: u32, bits: &mut [u64]) {
        self.cursor.mark_until(base, end, bits)
    }
    /// The documents up to `end` of the current block from the current one on, into `docs`,
    /// and their scores, bit for bit what [`Scorer::score`] gives, into `scores`; returns how
    /// many. The cursor does not move.
    pub fn block_scores(
        &mut self,
        end: u32,
        docs: &mut [u32; BLOCK],
        scores: &mut [f32; BLOCK],
    ) -> usize {
        let factors = self.sim.factors();
        let weight = self.sim.weight;
        let norms: Option<&[u8]> = self.norms.as_deref();
        let (ds, fs) = self.cursor.block_rest();
        let n = ds.partition_point(|&d| d <= end);
        let (ds, fs) = (&ds[..n], &fs[..n]);
        docs[..n].copy_from_slice(ds);
        // Products first (independent norm loads overlap), then the division 8 lanes wide:
        // the operations of `SimScorer::score`, in its order.
        for ((s, &d), &f) in scores.iter_mut().zip(ds).zip(fs) {
            let norm = norms.map_or(1, |x| x.get(d as usize).copied().unwrap_or(1));
            *s = f as f32 * factors[norm as usize];
        }
        for s in scores[..n].iter_mut() {
            *s = weight - weight / (1.0 + *s);
        }
        n
    }
    /// See [`PostingsCursor::block_end`].
    #[inline]
    pub fn block_end(&self) -> u32 {
        self.cursor.block_end()
    }
    /// See [`PostingsCursor::last_doc`].
    pub fn last_doc(&self) -> Option<u32> {
        self.cursor.last_doc()
    }
    /// A bound of this term's scores in `[from, end]`: the largest block maximum of the blocks
    /// that overlap it, or the term's maximum when more than [`MAX_BOUND_BLOCKS`] do (a window
    /// chosen by rarer terms spans many blocks of a common one, whose bound then hardly
    /// matters). `0` when the term has no document left.
    pub fn max_over(&mut self, from: u32, end: u32) -> f32 {
        let mut best = f32::NEG_INFINITY;
        let mut at = from;
        for _ in 0..MAX_BOUND_BLOCKS {
            match self
                .cursor
                .shallow_factor(at, self.sim.factors(), self.norms.is_some())
            {
                None if best == f32::NEG_INFINITY => return 0.0,
                None => return self.sim.score_factor(best),
                Some((last, m)) => {
                    best = best.max(m);
                    if last >= end || last >= TERMINATED - 1 {
                        return self.sim.score_factor(best);
                    }
                    at = last + 1;
                }
            }
        }
        self.max
    }
    /// Adds the score of every document `d` in `[doc(), end)` to `sums[d - base]`, sets its bit
    /// in `bits`, and moves past them (`end - base` must not exceed `sums.len()`): the inner loop
    /// of exhaustive disjunctions, over decoded blocks, each score as [`Scorer::score`] gives it.
    /// `scratch` holds one block's scores between passes.
    pub fn score_until(
        &mut self,
        base: u32,
        end: u32,
        bits: &mut [u64],
        sums: &mut [f64],
        scratch: &mut [f32; BLOCK],
    ) {
        if self.cursor.doc() >= end {
            return;
        }
        let factors = self.sim.factors();
        let weight = self.sim.weight;
        let norms: Option<&[u8]> = self.norms.as_deref();
        self.cursor.runs_until(end, |docs, freqs| {
            let m = &mut scratch[..docs.len()];
            // Three passes so that the middle one, the division, runs 8 lanes wide: the same
            // operations in the same order as `SimScorer::score`, so bit for bit its result.
            for ((m, &d), &f) in m.iter_mut().zip(docs).zip(freqs) {
                let norm = norms.map_or(1, |n| n.get(d as usize).copied().unwrap_or(1));
                *m = f as f32 * factors[norm as usize];
            }
            for m in m.iter_mut() {
                *m = weight - weight / (1.0 + *m);
            }
            mark_docs(docs, base, bits);
            for (&d, &s) in docs.iter().zip(m.iter()) {
                if let Some(sum) = sums.get_mut(d.wrapping_sub(base) as usize) {
                    *sum += f64::from(s);
                }
            }
        });
    }
}

impl Scorer for TermScorer {
    #[inline]
    fn doc(&self) -> u32 {
        self.cursor.doc()
    }
    #[inline]
    fn next(&mut self) -> u32 {
        self.cursor.next()
    }
    #[inline]
    fn seek(&mut self, target: u32) -> u32 {
        self.cursor.seek(target)
    }
    #[inline]
    fn score(&mut self) -> f32 {
        let d = self.cursor.doc();
        self.sim.score(self.cursor.freq() as f32, self.norm(d))
    }
    fn freq_norm(&mut self) -> Option<(f32, u8)> {
        let d = self.cursor.doc();
        Some((self.cursor.freq() as f32, self.norm(d)))
    }
    fn cost(&self) -> u64 {
        u64::from(self.cursor.doc_freq())
    }
    fn max_score(&self) -> f32 {
        self.max
    }
    #[inline]
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        match self
            .cursor
            .shallow_factor(target, self.sim.factors(), self.norms.is_some())
        {
            Some((last, m)) => (last, self.sim.score_factor(m)),
            None => (TERMINATED, 0.0),
        }
    }
    fn corruption(&self) -> Option<Corruption> {
        self.cursor.corruption()
    }
}

/// Every document of the segment, with a constant score.
pub struct AllScorer {
    doc: u32,
    max_doc: u32,
    score: f32,
}

impl AllScorer {
    pub fn new(max_doc: u32, score: f32) -> Self {
        Self {
            doc: if max_doc == 0 { TERMINATED } else { 0 },
            max_doc,
            score,
        }
    }
}

impl Scorer for AllScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        self.seek(self.doc.saturating_add(1))
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.doc = if target >= self.max_doc {
            TERMINATED
        } else {
            target.max(self.doc)
        };
        self.doc
    }
    fn score(&mut self) -> f32 {
        self.score
    }
    fn cost(&self) -> u64 {
        u64::from(self.max_doc)
    }
    fn max_score(&self) -> f32 {
        self.score
    }
}

/// A sorted list of documents with a constant score (prefix queries after expansion).
pub struct DocListScorer {
    docs: Vec<u32>,
    i: usize,
    score: f32,
}

impl DocListScorer {
    pub fn new(docs: Vec<u32>, score: f32) -> Self {
        Self { docs, i: 0, score }
    }
}

impl Scorer for DocListScorer {
    fn doc(&self) -> u32 {
        self.docs.get(self.i).copied().unwrap_or(TERMINATED)
    }
    fn next(&mut self) -> u32 {
        self.i += 1;
        self.doc()
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc() < target {
            self.i += self.docs[self.i..].partition_point(|&d| d < target);
        }
        self.doc()
    }
    fn score(&mut self) -> f32 {
        self.score
    }
    fn cost(&self) -> u64 {
        self.docs.len() as u64
    }
    fn max_score(&self) -> f32 {
        self.score
    }
}

/// Documents matching all of `required` (leapfrog, rarest first); scores the sum of the
/// scoring ones (the first `n_scoring`; the rest are filters).
pub struct ConjunctionScorer {
    subs: Vec<Box<dyn Scorer>>,
    scoring: Vec<bool>,
    doc: u32,
}

impl ConjunctionScorer {
    /// `subs` with a flag per sub telling whether it contributes to the score.
    pub fn new(mut subs: Vec<(Box<dyn Scorer>, bool)>) -> Self {
        subs.sort_by_key(|(s, _)| s.cost());
        let (subs, scoring): (Vec<_>, Vec<_>) = subs.into_iter().unzip();
        let mut c = Self {
            subs,
            scoring,
            doc: 0,
        };
        let first = c.subs[0].doc();
        c.doc = c.align(first);
        c
    }

    /// Moves every sub to the first doc >= `target` they all share.
    fn align(&mut self, mut target: u32) -> u32 {
        'outer: loop {
            if target == TERMINATED {
                return TERMINATED;
            }
            target = self.subs[0].seek(target);
            if target == TERMINATED {
                return TERMINATED;
            }
            for i in 1..self.subs.len() {
                let d = self.subs[i].seek(target);
                if d != target {
                    target = d;
                    continue 'outer;
                }
            }
            return target;
        }
    }
}

impl Scorer for ConjunctionScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        let t = self.subs[0].next();
        self.doc = self.align(t);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align(target);
        self.doc
    }
    fn matches(&mut self) -> bool {
        self.subs.iter_mut().all(|s| s.matches())
    }
    fn is_two_phase(&self) -> bool {
        self.subs.iter().any(|s| s.is_two_phase())
    }
    fn score(&mut self) -> f32 {
        let mut sum = 0f64;
        for (s, &scoring) in self.subs.iter_mut().zip(&self.scoring) {
            if scoring {
                sum += f64::from(s.score());
            }
        }
        sum as f32
    }
    fn cost(&self) -> u64 {
        self.subs[0].cost()
    }
    fn max_score(&self) -> f32 {
        let sum: f64 = self
            .subs
            .iter()
            .zip(&self.scoring)
            .filter(|(_, &sc)| sc)
            .map(|(s, _)| f64::from(s.max_score()))
            .sum();
        sum as f32 * (1.0 + 1e-6)
    }
    /// The window ends at the nearest block end of any sub; its bound is the sum of the scoring
    /// subs' block maxima (block-max conjunction: a window whose sum cannot compete is skipped).
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        let mut end = TERMINATED - 1;
        let mut sum = 0f64;
        for (s, &scoring) in self.subs.iter_mut().zip(&self.scoring) {
            let (e, m) = s.block_max(target);
            if e == TERMINATED {
                return (TERMINATED, 0.0);
            }
            end = end.min(e);
            if scoring {
                sum += f64::from(m);
            }
        }
        (end, sum as f32 * (1.0 + 1e-6))
    }
    fn corruption(&self) -> Option<Corruption> {
        self.subs.iter().find_map(|s| s.corruption())
    }
}

/// Documents holding every one of `terms`, scored by the sum of the term scores: the leapfrog of
/// [`ConjunctionScorer`] (same order, same sums) without dynamic dispatch per step.
pub struct TermConjunction {
    terms: Vec<TermScorer>,
    doc: u32,
}

impl TermConjunction {
    /// `terms` must not be empty.
    pub fn new(mut terms: Vec<TermScorer>) -> Self {
        terms.sort_by_key(|t| t.cost());
        let mut c = Self { terms, doc: 0 };
        let first = c.terms[0].doc();
        c.doc = c.align(first);
        c
    }

    #[inline]
    fn align(&mut self, mut target: u32) -> u32 {
        let (lead, rest) = self.terms.split_first_mut().expect("non-empty");
        'outer: loop {
            if target == TERMINATED {
                return TERMINATED;
            }
            target = lead.seek(target);
            if target == TERMINATED {
                return TERMINATED;
            }
            for t in rest.iter_mut() {
                let d = t.seek(target);
                if d != target {
                    target = d;
                    continue 'outer;
                }
            }
            return target;
        }
    }
}

impl Scorer for TermConjunction {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        let t = self.terms[0].next();
        self.doc = self.align(t);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align(target);
        self.doc
    }
    fn score(&mut self) -> f32 {
        let mut sum = 0f64;
        for t in self.terms.iter_mut() {
            sum += f64::from(t.score());
        }
        sum as f32
    }
    fn cost(&self) -> u64 {
        self.terms[0].cost()
    }
    fn max_score(&self) -> f32 {
        let sum: f64 = self.terms.iter().map(|t| f64::from(t.max_score())).sum();
        sum as f32 * (1.0 + 1e-6)
    }
    /// The window is the rarest term's block (so a common term's short blocks do not cut it
    /// into pieces that mostly hold no match); the other terms are bounded over it by their
    /// blocks' maxima ([`TermScorer::max_over`]).
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        let (lead, rest) = self.terms.split_first_mut().expect("non-empty");
        let (end, m) = lead.block_max(target);
        if end == TERMINATED {
            return (TERMINATED, 0.0);
        }
        let mut sum = f64::from(m);
        for t in rest.iter_mut() {
            match t.doc() {
                TERMINATED => return (TERMINATED, 0.0),
                // No document of this term in the window: nothing there matches.
                d if d > end => return (end, 0.0),
                d => sum += f64::from(t.max_over(target.max(d), end)),
            }
        }
        (end, sum as f32 * (1.0 + 1e-6))
    }
    fn corruption(&self) -> Option<Corruption> {
        self.terms.iter().find_map(|t| t.corruption())
    }
}

/// Documents matching at least `min_match` of `subs`; scores the sum of the matching ones.
pub struct DisjunctionScorer {
    subs: Vec<Box<dyn Scorer>>,
    min_match: usize,
    doc: u32,
    /// Indexes of the subs positioned on `doc` that confirmed (`matches`).
    on_doc: Vec<usize>,
    cost: u64,
    /// Sub indexes by increasing `max_score`, and `bounds[i]` = the sum of the first `i` maxima
    /// (MaxScore: documents matched only by a prefix whose sum is below a bar cannot reach it).
    by_max: Vec<usize>,
    bounds: Vec<f64>,
    /// `Some(tie)`: score as Lucene's `DisjunctionMaxQuery` (the best sub plus `tie` times the
    /// others) instead of the sum. The sum's bounds still hold: with `tie <= 1` that score is
    /// at most the sum.
    dis_max: Option<f32>,
}

impl DisjunctionScorer {
    pub fn new(subs: Vec<Box<dyn Scorer>>, min_match: usize) -> Self {
        let cost = subs.iter().map(|s| s.cost()).sum();
        let mut by_max: Vec<usize> = (0..subs.len()).collect();
        by_max.sort_by(|&a, &b| subs[a].max_score().total_cmp(&subs[b].max_score()));
        let mut bounds = vec![0f64; subs.len() + 1];
        for (i, &s) in by_max.iter().enumerate() {
            bounds[i + 1] = bounds[i] + f64::from(subs[s].max_score());
        }
        let mut d = Self {
            subs,
            min_match: min_match.max(1),
            doc: 0,
            on_doc: Vec::new(),
            cost,
            by_max,
            bounds,
            dis_max: None,
        };
        d.doc = d.settle(0);
        d
    }

    /// Documents matching any of `subs`, scored by the best plus `tie` times the others.
    pub fn dis_max(subs: Vec<Box<dyn Scorer>>, tie: f32) -> Self {
        let mut d = Self::new(subs, 1);
        d.dis_max = Some(tie);
        d
    }

    /// The first doc in `[from, limit]` matched by one of the subs after the first `skip` of
    /// `by_max` (the others are moved there too, to be scored); `None` when there is none (only
    /// those subs have moved then, to their first doc `>= from`).
    fn settle_essential(&mut self, from: u32, skip: usize, limit: u32) -> Option<u32> {
        let mut target = from;
        loop {
            let mut min = TERMINATED;
            for &i in &self.by_max[skip..] {
                let s = &mut self.subs[i];
                let d = if s.doc() < target {
                    s.seek(target)
                } else {
                    s.doc()
                };
                min = min.min(d);
            }
            if min == TERMINATED || min > limit {
                return None;
            }
            self.on_doc.clear();
            for (i, s) in self.subs.iter_mut().enumerate() {
                if s.doc() < min {
                    s.seek(min);
                }
                if s.doc() == min && s.matches() {
                    self.on_doc.push(i);
                }
            }
            if !self.on_doc.is_empty() {
                return Some(min);
            }
            target = min + 1;
        }
    }

    /// Finds the first doc >= `from` matched by at least `min_match` subs.
    fn settle(&mut self, from: u32) -> u32 {
        let mut target = from;
        loop {
            let mut min = TERMINATED;
            for s in self.subs.iter_mut() {
                let d = if s.doc() < target {
                    s.seek(target)
                } else {
                    s.doc()
                };
                min = min.min(d);
            }
            if min == TERMINATED {
                return TERMINATED;
            }
            self.on_doc.clear();
            for (i, s) in self.subs.iter_mut().enumerate() {
                if s.doc() == min && s.matches() {
                    self.on_doc.push(i);
                }
            }
            if self.on_doc.len() >= self.min_match {
                return min;
            }
            target = min + 1;
        }
    }
}

impl Scorer for DisjunctionScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.doc = self.settle(self.doc + 1);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.settle(target);
        self.doc
    }
    fn score(&mut self) -> f32 {
        if let Some(tie) = self.dis_max {
            // Lucene's `DisjunctionMaxScorer.score`.
            let (mut max, mut others) = (0f32, 0f64);
            for &i in &self.on_doc {
                let s = self.subs[i].score();
                if s >= max {
                    others += f64::from(max);
                    max = s;
                } else {
                    others += f64::from(s);
                }
            }
            return (f64::from(max) + others * f64::from(tie)) as f32;
        }
        let mut sum = 0f64;
        for &i in &self.on_doc {
            sum += f64::from(self.subs[i].score());
        }
        sum as f32
    }
    fn cost(&self) -> u64 {
        self.cost
    }
    fn max_score(&self) -> f32 {
        let sum: f64 = self.subs.iter().map(|s| f64::from(s.max_score())).sum();
        sum as f32 * (1.0 + 1e-6)
    }
    /// MaxScore: the subs with the smallest maxima whose sum stays below `need` cannot make a
    /// match alone, so candidates come from the others only.
    fn seek_competitive(&mut self, target: u32, need: f32, limit: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let need = f64::from(need);
        let skip = if self.min_match > 1 {
            0
        } else {
            // Largest prefix whose (inflated) bound is below `need`, leaving at least one sub.
            let mut k = 0;
            while k + 1 < self.subs.len() && self.bounds[k + 1] * (1.0 + 1e-6) < need {
                k += 1;
            }
            k
        };
        if skip == 0 {
            return self.seek(target);
        }
        self.doc = match self.settle_essential(target, skip, limit) {
            Some(d) => d,
            // No competitive candidate up to `limit`: position as `seek` does, so documents
            // above it are all still ahead.
            None => self.settle(target),
        };
        self.doc
    }
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        let mut end = TERMINATED;
        let mut sum = 0f64;
        for s in self.subs.iter_mut() {
            let (e, m) = s.block_max(target);
            if e != TERMINATED {
                end = end.min(e);
                sum += f64::from(m);
            }
        }
        (end, sum as f32 * (1.0 + 1e-6))
    }
    fn corruption(&self) -> Option<Corruption> {
        self.subs.iter().find_map(|s| s.corruption())
    }
}

/// `required` minus the documents of `excluded`.
pub struct ExclusionScorer {
    required: Box<dyn Scorer>,
    excluded: Box<dyn Scorer>,
    doc: u32,
}

impl ExclusionScorer {
    pub fn new(required: Box<dyn Scorer>, excluded: Box<dyn Scorer>) -> Self {
        let mut e = Self {
            doc: required.doc(),
            required,
            excluded,
        };
        e.doc = e.settle(e.doc);
        e
    }
    fn settle(&mut self, mut d: u32) -> u32 {
        while d != TERMINATED {
            let x = self.excluded.seek(d);
            if x != d || !self.excluded.matches() {
                return d;
            }
            d = self.required.next();
        }
        TERMINATED
    }
}

impl Scorer for ExclusionScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        let d = self.required.next();
        self.doc = self.settle(d);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let d = self.required.seek(target);
        self.doc = self.settle(d);
        self.doc
    }
    fn matches(&mut self) -> bool {
        self.required.matches()
    }
    fn is_two_phase(&self) -> bool {
        self.required.is_two_phase()
    }
    fn score(&mut self) -> f32 {
        self.required.score()
    }
    fn cost(&self) -> u64 {
        self.required.cost()
    }
    fn max_score(&self) -> f32 {
        self.required.max_score()
    }
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        self.required.block_max(target)
    }
    fn set_min_competitive(&mut self, min: f32) {
        self.required.set_min_competitive(min);
    }
    fn pruned(&self) -> bool {
        self.required.pruned()
    }
    fn corruption(&self) -> Option<Corruption> {
        self.required
            .corruption()
            .or_else(|| self.excluded.corruption())
    }
}

/// `required`, plus the score of `optional` where it also matches (Lucene's ReqOptSumScorer).
///
/// In a top-k search it also prunes as Lucene does: once the k-th best score is known
/// ([`Scorer::set_min_competitive`]), a window of the skip data (the nearest block end of both
/// sides) whose bounds cannot sum to it is passed over, and in a window where `required` alone
/// cannot reach it, only documents of `optional` are candidates (the two are leapfrogged as a
/// conjunction), so `+work remote` walks the few documents of `remote` rather than every
/// document of `work`. Candidates are still real matches of `required`; scores are unchanged.
pub struct ReqOptScorer {
    required: Box<dyn Scorer>,
    optional: Box<dyn Scorer>,
    /// The score a document must exceed; `-inf` until a top-k search says otherwise.
    min: f32,
    /// Last doc of the current window (valid when `window_valid`) and the two bounds in it.
    up_to: u32,
    window_valid: bool,
    req_max: f32,
    opt_max: f32,
    /// Whether `required` must confirm (`matches`) before it can score.
    req_two_phase: bool,
    /// The last (doc, score) of `required` computed while pruning, reused by `score`.
    req_score: (u32, f32),
    /// Whether `advance` has run, i.e. documents may have been passed over.
    pruned: bool,
}

impl ReqOptScorer {
    pub fn new(required: Box<dyn Scorer>, optional: Box<dyn Scorer>) -> Self {
        Self {
            req_two_phase: required.is_two_phase(),
            req_score: (TERMINATED, 0.0),
            pruned: false,
            required,
            optional,
            min: f32::NEG_INFINITY,
            up_to: 0,
            window_valid: false,
            req_max: f32::INFINITY,
            opt_max: f32::INFINITY,
        }
    }

    /// Reads the bounds of the window holding `target` from the skip data.
    fn window(&mut self, target: u32) {
        let (re, rm) = self.required.block_max(target);
        let (oe, om) = if self.optional.doc() == TERMINATED {
            (TERMINATED, 0.0)
        } else {
            self.optional.block_max(target)
        };
        // An exhausted side bounds nothing: the window is the other side's.
        self.up_to = re.min(oe).min(TERMINATED - 1);
        self.req_max = rm * SLACK;
        self.opt_max = if oe == TERMINATED { 0.0 } else { om * SLACK };
        self.window_valid = true;
    }

    /// The first candidate `>= target` that may exceed `min`.
    fn advance(&mut self, mut target: u32) -> u32 {
        self.pruned = true;
        loop {
            if target == TERMINATED {
                return self.required.seek(TERMINATED);
            }
            if !self.window_valid || target > self.up_to {
                self.window(target);
            }
            if self.req_max + self.opt_max < self.min {
                // Nothing in this window can compete.
                if self.up_to >= TERMINATED - 1 {
                    return self.required.seek(TERMINATED);
                }
                target = self.up_to + 1;
                continue;
            }
            let d = if self.required.doc() < target {
                self.required.seek(target)
            } else {
                self.required.doc()
            };
            if d == TERMINATED {
                return d;
            }
            if d > self.up_to {
                // Past the window: read the bounds of the window holding `d`.
                target = d;
                continue;
            }
            // The bound of this document: its own required score (when it can be read before
            // `matches`, i.e. not for phrases) or the window's.
            let req = if self.req_two_phase {
                self.req_max
            } else {
                let s = self.required.score();
                self.req_score = (d, s);
                s * SLACK
            };
            if req >= self.min {
                return d;
            }
            if req + self.opt_max < self.min {
                // Even the optional side's best in this window cannot lift it: next document.
                target = d + 1;
                continue;
            }
            // Only with the optional clause can it compete: that must match. Where `required`
            // cannot compete alone anywhere in the window, the optional side's candidates must
            // also bring the difference to the window's bound.
            let o = if self.optional.doc() < d {
                if self.req_max < self.min {
                    self.optional
                        .seek_competitive(d, self.min - self.req_max, self.up_to)
                } else {
                    self.optional.seek(d)
                }
            } else {
                self.optional.doc()
            };
            if o == d {
                return d;
            }
            if self.req_max >= self.min {
                // Another document of `required` may compete alone: try the next one.
                target = d + 1;
                continue;
            }
            if o == TERMINATED {
                // No optional match left: only windows where `required` alone competes remain.
                self.window_valid = false;
                if self.up_to >= TERMINATED - 1 {
                    return self.required.seek(TERMINATED);
                }
                target = self.up_to + 1;
                continue;
            }
            // No candidate before `o` in this window; past it, the next window decides.
            target = o.min(self.up_to + 1);
        }
    }
}

/// Bounds are inflated by this factor so float rounding never prunes a document whose true score
/// equals the bar.
const SLACK: f32 = 1.0 + 1e-6;

impl Scorer for ReqOptScorer {
    fn doc(&self) -> u32 {
        self.required.doc()
    }
    fn next(&mut self) -> u32 {
        if self.min == f32::NEG_INFINITY {
            return self.required.next();
        }
        let d = self.required.doc();
        if d == TERMINATED {
            return d;
        }
        self.advance(d + 1)
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.min == f32::NEG_INFINITY {
            return self.required.seek(target);
        }
        let d = self.required.doc();
        if d >= target {
            return d;
        }
        self.advance(target)
    }
    fn matches(&mut self) -> bool {
        self.required.matches()
    }
    fn is_two_phase(&self) -> bool {
        self.required.is_two_phase()
    }
    fn score(&mut self) -> f32 {
        let d = self.required.doc();
        let req = match self.req_score {
            (doc, s) if doc == d => s,
            _ => self.required.score(),
        };
        let mut s = f64::from(req);
        let o = if self.optional.doc() < d {
            self.optional.seek(d)
        } else {
            self.optional.doc()
        };
        if o == d && self.optional.matches() {
            s += f64::from(self.optional.score());
        }
        s as f32
    }
    fn cost(&self) -> u64 {
        self.required.cost()
    }
    fn max_score(&self) -> f32 {
        ((f64::from(self.required.max_score()) + f64::from(self.optional.max_score())) as f32)
            * (1.0 + 1e-6)
    }
    /// The window ends at the nearest block end of either side; its bound is the sum of both
    /// sides' block maxima (the optional side's only while it has documents left).
    fn block_max(&mut self, target: u32) -> (u32, f32) {
        let (re, rm) = self.required.block_max(target);
        if re == TERMINATED {
            return (TERMINATED, 0.0);
        }
        if self.optional.doc() == TERMINATED {
            return (re, rm * SLACK);
        }
        let (oe, om) = self.optional.block_max(target);
        if oe == TERMINATED {
            return (re, rm * SLACK);
        }
        (re.min(oe), ((f64::from(rm) + f64::from(om)) as f32) * SLACK)
    }
    fn pruned(&self) -> bool {
        self.pruned
    }
    fn set_min_competitive(&mut self, min: f32) {
        if min > self.min {
            self.min = min;
            // The current document may no longer be a candidate; the next move re-checks.
        }
    }
    fn corruption(&self) -> Option<Corruption> {
        self.required
            .corruption()
            .or_else(|| self.optional.corruption())
    }
}

/// Wraps a scorer to give every match the same score (filters, constant-score queries).
pub struct ConstScorer {
    inner: Box<dyn Scorer>,
    score: f32,
}

impl ConstScorer {
    pub fn new(inner: Box<dyn Scorer>, score: f32) -> Self {
        Self { inner, score }
    }
}

impl Scorer for ConstScorer {
    fn doc(&self) -> u32 {
        self.inner.doc()
    }
    fn next(&mut self) -> u32 {
        self.inner.next()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.inner.seek(target)
    }
    fn matches(&mut self) -> bool {
        self.inner.matches()
    }
    fn is_two_phase(&self) -> bool {
        self.inner.is_two_phase()
    }
    fn score(&mut self) -> f32 {
        self.score
    }
    fn cost(&self) -> u64 {
        self.inner.cost()
    }
    fn max_score(&self) -> f32 {
        self.score
    }
    fn corruption(&self) -> Option<Corruption> {
        self.inner.corruption()
    }
}

/// `positive`'s documents, the score of those `negative` also matches multiplied by `factor`
/// (Elasticsearch's `boosting`, Lucene's `FunctionScoreQuery.boostByQuery`).
pub struct BoostingScorer {
    positive: Box<dyn Scorer>,
    negative: Box<dyn Scorer>,
    factor: f32,
}

impl BoostingScorer {
    pub fn new(positive: Box<dyn Scorer>, negative: Box<dyn Scorer>, factor: f32) -> Self {
        Self {
            positive,
            negative,
            factor,
        }
    }
}

impl Scorer for BoostingScorer {
    fn doc(&self) -> u32 {
        self.positive.doc()
    }
    fn next(&mut self) -> u32 {
        self.positive.next()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.positive.seek(target)
    }
    fn matches(&mut self) -> bool {
        self.positive.matches()
    }
    fn is_two_phase(&self) -> bool {
        self.positive.is_two_phase()
    }
    fn score(&mut self) -> f32 {
        let score = self.positive.score();
        let d = self.positive.doc();
        let demoted =
            self.negative.doc() <= d && self.negative.seek(d) == d && self.negative.matches();
        if demoted {
            (f64::from(score) * f64::from(self.factor)) as f32
        } else {
            score
        }
    }
    fn cost(&self) -> u64 {
        self.positive.cost()
    }
    fn max_score(&self) -> f32 {
        self.positive.max_score() * self.factor.max(1.0)
    }
    fn corruption(&self) -> Option<Corruption> {
        self.positive
            .corruption()
            .or_else(|| self.negative.corruption())
    }
}
