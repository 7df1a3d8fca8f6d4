//! Phrase scoring: a conjunction of the terms' postings as the approximation, then positions are
//! checked only for documents that pass it. Exact phrases count the occurrences; sloppy phrases
//! sum Lucene's sloppy frequency `1 / (1 + distance)` over matches within `slop` moves.
use quarry_store::Bytes;

use super::bm25::SimScorer;
use super::count::DenseAnd;
use super::scorer::{Scorer, TERMINATED};
use crate::codec::postings::PostingsCursor;

/// One phrase term: its cursor and its offset in the phrase.
pub struct PhraseTerm {
    pub cursor: PostingsCursor,
    pub offset: u32,
}

pub struct PhraseScorer {
    terms: Vec<PhraseTerm>,
    /// Term indexes by increasing cost (leapfrog order).
    order: Vec<usize>,
    slop: u32,
    sim: SimScorer,
    norms: Option<Bytes>,
    doc: u32,
    freq: f32,
    positions: Vec<Vec<u32>>,
    starts: Vec<u32>,
    buf: Vec<u32>,
    max: f32,
    /// For phrases of common words: the candidates, from bitsets (the leapfrog then only
    /// confirms them).
    filter: Option<DenseAnd>,
}

impl PhraseScorer {
    /// `filter`: the terms' documents as a [`DenseAnd`], when [`DenseAnd::pays`].
    pub fn new(
        terms: Vec<PhraseTerm>,
        slop: u32,
        sim: SimScorer,
        norms: Option<Bytes>,
        filter: Option<DenseAnd>,
    ) -> Self {
        let mut order: Vec<usize> = (0..terms.len()).collect();
        order.sort_by_key(|&i| terms[i].cursor.doc_freq());
        // A phrase occurs at most as often as its rarest term.
        let max_freq = terms
            .iter()
            .map(|t| t.cursor.term_impact().max_freq)
            .min()
            .unwrap_or(1);
        let max = sim.score(max_freq as f32, 1);
        let n = terms.len();
        let mut p = Self {
            terms,
            order,
            slop,
            sim,
            norms,
            doc: 0,
            freq: 0.0,
            positions: vec![Vec::new(); n],
            starts: Vec::new(),
            buf: Vec::new(),
            max,
            filter,
        };
        let first = p.terms[p.order[0]].cursor.doc();
        p.doc = p.align(first);
        p
    }

    fn align(&mut self, mut target: u32) -> u32 {
        'outer: loop {
            if let Some(f) = self.filter.as_mut() {
                target = f.next_from(target);
            }
            if target == TERMINATED {
                return TERMINATED;
            }
            let lead = self.order[0];
            target = self.terms[lead].cursor.seek(target);
            if target == TERMINATED {
                return TERMINATED;
            }
            for k in 1..self.order.len() {
                let i = self.order[k];
                let d = self.terms[i].cursor.seek(target);
                if d != target {
                    target = d;
                    continue 'outer;
                }
            }
            return target;
        }
    }

    fn load_positions(&mut self) {
        for (t, out) in self.terms.iter_mut().zip(self.positions.iter_mut()) {
            t.cursor.positions(out);
        }
    }

    /// Exact phrase frequency, loading positions rarest term first and stopping as soon as no
    /// start position survives (most candidate documents fail after one or two terms).
    fn exact_freq_lazy(&mut self) -> f32 {
        let mut starts = std::mem::take(&mut self.starts);
        let mut buf = std::mem::take(&mut self.buf);
        starts.clear();
        let first = self.order[0];
        self.terms[first].cursor.positions(&mut buf);
        let off = self.terms[first].offset;
        starts.extend(buf.iter().filter(|&&p| p >= off).map(|&p| p - off));
        for k in 1..self.order.len() {
            if starts.is_empty() {
                break;
            }
            let i = self.order[k];
            self.terms[i].cursor.positions(&mut buf);
            let off = self.terms[i].offset;
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
        self.buf = buf;
        n as f32
    }

    /// Lucene's sloppy frequency (SloppyPhraseMatcher): phrase positions `pos - offset` of all
    /// terms sit in a queue ordered by (position, offset, term); the smallest is advanced until
    /// it passes the next smallest, minimizing the match length `end - min` on the way; every
    /// minimal match with length <= slop adds `1 / (1 + length)`.
    fn sloppy_freq(&self) -> f32 {
        let n = self.terms.len();
        let mut idx = vec![0usize; n];
        let pos_of = |i: usize, k: usize| -> Option<i64> {
            self.positions[i]
                .get(k)
                .map(|&p| i64::from(p) - i64::from(self.terms[i].offset))
        };
        // (position, offset, ord) ordering, as Lucene's PhraseQueue.
        let key = |i: usize, p: i64| (p, self.terms[i].offset, i);
        let mut queue: std::collections::BinaryHeap<std::cmp::Reverse<(i64, u32, usize)>> =
            Default::default();
        let mut end = i64::MIN;
        for i in 0..n {
            let Some(p) = pos_of(i, 0) else { return 0.0 };
            end = end.max(p);
            queue.push(std::cmp::Reverse(key(i, p)));
        }
        let slop = i64::from(self.slop);
        let mut freq = 0f32;
        let std::cmp::Reverse((mut pos, _, mut i)) = queue.pop().expect("non-empty");
        let mut match_len = end - pos;
        let mut next = queue.peek().map_or(i64::MAX, |r| r.0 .0);
        loop {
            idx[i] += 1;
            let Some(p) = pos_of(i, idx[i]) else { break };
            pos = p;
            end = end.max(pos);
            if pos > next {
                queue.push(std::cmp::Reverse(key(i, pos)));
                if match_len <= slop {
                    freq += 1.0 / (1.0 + match_len as f32);
                }
                let std::cmp::Reverse((p2, _, i2)) = queue.pop().expect("non-empty");
                pos = p2;
                i = i2;
                next = queue.peek().map_or(i64::MAX, |r| r.0 .0);
                match_len = end - pos;
            } else {
                match_len = match_len.min(end - pos);
            }
        }
        if match_len <= slop {
            freq += 1.0 / (1.0 + match_len as f32);
        }
        freq
    }
}

impl Scorer for PhraseScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        let lead = self.order[0];
        let t = self.terms[lead].cursor.next();
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
        if self.doc == TERMINATED {
            return false;
        }
        self.freq = if self.slop == 0 {
            self.exact_freq_lazy()
        } else {
            self.load_positions();
            self.sloppy_freq()
        };
        self.freq > 0.0
    }
    fn is_two_phase(&self) -> bool {
        true
    }
    fn score(&mut self) -> f32 {
        let norm = match &self.norms {
            Some(n) => n.get(self.doc as usize).copied().unwrap_or(1),
            None => 1,
        };
        self.sim.score(self.freq, norm)
    }
    fn cost(&self) -> u64 {
        u64::from(self.terms[self.order[0]].cursor.doc_freq())
    }
    fn max_score(&self) -> f32 {
        self.max
    }
    fn corruption(&self) -> Option<String> {
        self.terms
            .iter()
            .find_map(|t| t.cursor.is_corrupt().map(str::to_string))
            .or_else(|| {
                self.filter
                    .as_ref()
                    .and_then(|f| f.corruption().map(str::to_string))
            })
    }
}
