//! Phrase scoring: a conjunction of the terms' postings as the approximation, then positions are
//! checked only for documents that pass it. Exact phrases count the occurrences; sloppy phrases
//! sum Lucene's sloppy frequency `1 / (1 + distance)` over matches within `slop` moves.
use quarry_store::Bytes;

use super::bm25::SimScorer;
use super::count::DenseAnd;
use super::scorer::{Scorer, TERMINATED};
use super::sloppy::{sloppy_frequency, sloppy_frequency_repeats, Repeats};
use crate::codec::postings::{Corruption, PostingsCursor};

/// The terms of a phrase: one cursor per distinct term, and each phrase position as (cursor
/// slot, offset). A repeated word (`"to be or not to be"`) is read once.
pub struct PhraseTerms {
    pub cursors: Vec<PostingsCursor>,
    pub terms: Vec<(usize, u32)>,
}

pub struct PhraseScorer {
    cursors: Vec<PostingsCursor>,
    /// (cursor slot, offset) of each phrase term, in phrase order.
    terms: Vec<(usize, u32)>,
    /// Slots by increasing document frequency (leapfrog order).
    order: Vec<usize>,
    /// How many of `order` the leapfrog aligns; the rest are words in so many documents
    /// (`the` of `"the who"`) that a leapfrog step on them skips almost nothing: they are
    /// checked by [`matches`](Scorer::matches) instead. A rarer clause around the phrase
    /// (`+"the who" +uk`) then meets only the phrase's rarer words (as Lucene's conjunctions
    /// take a phrase's approximation), and the common word is read for the few survivors.
    aligned: usize,
    /// Largest offset of each slot's terms.
    slot_off: Vec<u32>,
    slop: u32,
    /// Sloppy phrases whose positions share a word (`"to be or not to be"~2`).
    repeats: Option<Repeats>,
    sim: SimScorer,
    norms: Option<Bytes>,
    doc: u32,
    freq: f32,
    /// Per slot: positions read for `loaded[slot]`'s document, up to `limits[slot]`.
    slot_pos: Vec<Vec<u32>>,
    loaded: Vec<u32>,
    limits: Vec<u32>,
    /// Per phrase term (sloppy phrases).
    positions: Vec<Vec<u32>>,
    /// Per phrase term: its offset.
    offsets: Vec<u32>,
    /// Phrase term indexes in the order their positions are checked.
    check: Vec<usize>,
    starts: Vec<u32>,
    max: f32,
    /// For phrases of common words: the candidates, from bitsets (the leapfrog then only
    /// confirms them).
    filter: Option<DenseAnd>,
    /// Top-k search, exact phrases: a candidate whose `freq * norm factor` bound (the phrase
    /// occurs at most as often as each of its pieces) is below this cannot reach the k-th best
    /// score and is passed over before its positions are read, as Lucene's phrase scorer does.
    min_factor: f32,
    /// A candidate was passed over that way (the hit count is then a lower bound).
    pruned: bool,
}

impl PhraseScorer {
    /// `filter`: the terms' documents as a [`DenseAnd`], when [`DenseAnd::pays`].
    pub fn new(
        terms: PhraseTerms,
        slop: u32,
        sim: SimScorer,
        norms: Option<Bytes>,
        filter: Option<DenseAnd>,
    ) -> Self {
        let PhraseTerms { mut cursors, terms } = terms;
        for c in cursors.iter_mut() {
            c.set_lazy_freqs();
        }
        let mut order: Vec<usize> = (0..cursors.len()).collect();
        order.sort_by_key(|&i| cursors[i].doc_freq());
        let aligned = 1 + order[1..]
            .iter()
            .take_while(|&&i| !is_common(cursors[i].doc_freq(), cursors[i].max_doc()))
            .count();
        // A phrase occurs at most as often as its rarest term.
        let max_freq = cursors
            .iter()
            .map(|c| c.term_impact().max_freq)
            .min()
            .unwrap_or(1);
        let max = sim.score(max_freq as f32, 1);
        let mut slot_off = vec![0u32; cursors.len()];
        for &(slot, off) in &terms {
            slot_off[slot] = slot_off[slot].max(off);
        }
        let (n, slots) = (terms.len(), cursors.len());
        let offsets: Vec<u32> = terms.iter().map(|&(_, off)| off).collect();
        // A sloppy phrase has one slot per distinct word: fewer slots than terms is a repeat.
        let repeats = if slop > 0 && slots < n {
            let words: Vec<Vec<usize>> = terms.iter().map(|&(slot, _)| vec![slot]).collect();
            Repeats::of(&words, &offsets)
        } else {
            None
        };
        let mut p = Self {
            cursors,
            check: (0..n).collect(),
            terms,
            order,
            aligned,
            slot_off,
            slop,
            repeats,
            sim,
            norms,
            doc: 0,
            freq: 0.0,
            slot_pos: vec![Vec::new(); slots],
            loaded: vec![TERMINATED; slots],
            limits: vec![0; slots],
            positions: vec![Vec::new(); n],
            offsets,
            starts: Vec::new(),
            max,
            filter,
            min_factor: f32::NEG_INFINITY,
            pruned: false,
        };
        let first = p.cursors[p.order[0]].doc();
        p.doc = p.align(first, false);
        p
    }

    /// The first candidate `>= target`. `dense`: take candidates from the filter even if its
    /// window must be built first (the phrase is walked, not seeked into by a rarer clause).
    fn align(&mut self, mut target: u32, mut dense: bool) -> u32 {
        'outer: loop {
            if let Some(f) = self.filter.as_mut() {
                // Seeks from a rarer clause (`+"the who" +uk`) leapfrog instead: marking whole
                // windows of common words for a few targets would cost more than it saves.
                if dense || f.covers(target) {
                    target = f.next_from(target);
                    dense = true;
                }
            }
            if target == TERMINATED {
                return TERMINATED;
            }
            let lead = self.order[0];
            target = self.cursors[lead].seek(target);
            if target == TERMINATED {
                return TERMINATED;
            }
            for k in 1..self.aligned {
                let i = self.order[k];
                let d = self.cursors[i].seek(target);
                if d != target {
                    target = d;
                    continue 'outer;
                }
            }
            return target;
        }
    }

    /// Whether the current candidate may still reach the bar of
    /// [`set_min_competitive`](Scorer::set_min_competitive): its exact frequency is at most the
    /// smallest of the aligned pieces' frequencies in the document (every occurrence of the
    /// phrase starts an occurrence of each piece at its own position).
    fn competitive(&self) -> bool {
        let freq = self.order[..self.aligned]
            .iter()
            .map(|&i| self.cursors[i].freq())
            .min()
            .unwrap_or(0);
        let norm = self.norm();
        (freq as f32) * self.sim.factors()[usize::from(norm)] >= self.min_factor
    }

    fn norm(&self) -> u8 {
        match &self.norms {
            Some(n) => n.get(self.doc as usize).copied().unwrap_or(1),
            None => 1,
        }
    }

    /// Makes `slot_pos[slot]` hold the current document's positions up to at least `limit`.
    fn slot_positions(&mut self, slot: usize, limit: u32) {
        if self.loaded[slot] == self.doc && self.limits[slot] >= limit {
            return;
        }
        self.cursors[slot].positions_upto(&mut self.slot_pos[slot], limit);
        self.loaded[slot] = self.doc;
        self.limits[slot] = limit;
    }

    fn load_positions(&mut self) {
        for t in 0..self.terms.len() {
            let slot = self.terms[t].0;
            self.slot_positions(slot, u32::MAX);
            self.positions[t].clone_from(&self.slot_pos[slot]);
        }
    }

    /// Exact phrase frequency. Terms are checked fewest occurrences in the document first,
    /// and each one's positions are read only up to the last surviving start; it stops as soon
    /// as no start survives (most candidate documents fail after one or two terms).
    fn exact_freq_lazy(&mut self) -> f32 {
        let mut check = std::mem::take(&mut self.check);
        let (cursors, terms) = (&self.cursors, &self.terms);
        // Insertion sort: a handful of terms, mostly in order already.
        for k in 1..check.len() {
            let mut j = k;
            while j > 0 && cursors[terms[check[j]].0].freq() < cursors[terms[check[j - 1]].0].freq()
            {
                check.swap(j, j - 1);
                j -= 1;
            }
        }
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
        let (slot, off) = self.terms[check[0]];
        self.slot_positions(slot, u32::MAX);
        starts.extend(
            self.slot_pos[slot]
                .iter()
                .filter(|&&p| p >= off)
                .map(|&p| p - off),
        );
        for &t in &check[1..] {
            let Some(&last) = starts.last() else {
                break;
            };
            let (slot, off) = self.terms[t];
            self.slot_positions(slot, last.saturating_add(self.slot_off[slot]));
            let buf = &self.slot_pos[slot];
            let mut j = 0usize;
            starts.retain(|&s| {
                let want = s + off;
                while j < buf.len() && buf[j] < want {
                    j += 1;
                }
                j < buf.len() && buf[j] == want
            });
        }
        let n = starts.len();
        self.starts = starts;
        self.check = check;
        n as f32
    }
}

/// A word in at least a quarter of the segment's documents: left out of the phrase's leapfrog
/// (see `PhraseScorer::aligned`).
fn is_common(df: u32, max_doc: u32) -> bool {
    u64::from(df) * 4 >= u64::from(max_doc)
}

impl Scorer for PhraseScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        let lead = self.order[0];
        let t = self.cursors[lead].next();
        self.doc = self.align(t, true);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align(target, false);
        self.doc
    }
    fn matches(&mut self) -> bool {
        if self.doc == TERMINATED {
            return false;
        }
        if self.min_factor > f32::NEG_INFINITY {
            for &i in &self.order[..self.aligned] {
                self.cursors[i].ensure_freqs();
            }
            if !self.competitive() {
                self.pruned = true;
                return false;
            }
        }
        for k in self.aligned..self.order.len() {
            let i = self.order[k];
            if self.cursors[i].seek(self.doc) != self.doc {
                return false;
            }
        }
        for c in self.cursors.iter_mut() {
            c.ensure_freqs();
        }
        self.freq = if self.slop == 0 {
            self.exact_freq_lazy()
        } else {
            self.load_positions();
            match &self.repeats {
                None => sloppy_frequency(&self.positions, &self.offsets, self.slop),
                Some(r) => sloppy_frequency_repeats(&self.positions, &self.offsets, self.slop, r),
            }
        };
        self.freq > 0.0
    }
    fn is_two_phase(&self) -> bool {
        true
    }
    fn score(&mut self) -> f32 {
        self.sim.score(self.freq, self.norm())
    }
    fn freq_norm(&mut self) -> Option<(f32, u8)> {
        Some((self.freq, self.norm()))
    }
    fn cost(&self) -> u64 {
        u64::from(self.cursors[self.order[0]].doc_freq())
    }
    fn max_score(&self) -> f32 {
        self.max
    }
    fn set_min_competitive(&mut self, min: f32) {
        if self.slop == 0 {
            self.min_factor = self.sim.min_factor(min);
        }
    }
    fn pruned(&self) -> bool {
        self.pruned
    }
    fn corruption(&self) -> Option<Corruption> {
        self.cursors
            .iter()
            .find_map(PostingsCursor::corruption)
            .or_else(|| self.filter.as_ref().and_then(DenseAnd::corruption))
    }
}
