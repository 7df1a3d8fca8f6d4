//! Multi-phrases (Lucene's `MultiPhraseQuery`): a phrase whose every position matches any of
//! its terms, and Elasticsearch's phrase prefix, which expands its last position from the
//! dictionary before running as one.
//!
//! Each position reads the union of its terms' postings (Lucene's `UnionPostingsEnum`: a
//! document where any of them occurs, their positions merged); the phrase frequency is then
//! computed as for a phrase of single terms, exactly or within a slop. Pairs of frequent words
//! ([`crate::pairs`]) are never read here: a pair stands for two given words, not for any of a
//! position's terms (a multi-phrase of one term per position runs as a phrase, which reads
//! them where they apply).
//! A sloppy multi-phrase where one term stands at two positions (a prefix that expands to an
//! earlier word, `"oil o*"~2`) keeps those positions off one occurrence, as Lucene's repeat
//! groups do ([`super::sloppy`]).
use std::collections::BTreeSet;
use std::sync::Arc;

use fst::{IntoStreamer, Streamer};
use quarry_store::Bytes;

use super::bm25::SimScorer;
use super::scorer::{Scorer, TERMINATED};
use super::sloppy::{sloppy_frequency, sloppy_frequency_repeats, Repeats};
use crate::codec::postings::{Corruption, PostingsCursor};
use crate::index::SegmentReader;
use crate::query::ast::Query;
use crate::Result;

/// The terms of `segments`' dictionaries of `field` that start with one of `prefixes`, as
/// Elasticsearch's `MultiPhrasePrefixQuery` collects them: prefix by prefix, segment by
/// segment, in term order within a segment; a prefix stops adding once `max` distinct terms
/// are collected, and the next prefix is tried only while there are at most `max` (so several
/// prefixes may end with `max + 1`, and `max` 0 still takes one term). In term order.
pub(crate) fn prefix_expansions(
    segments: &[Arc<SegmentReader>],
    field: u32,
    prefixes: &[String],
    max: u32,
) -> Result<Vec<String>> {
    let max = max as usize;
    let mut found: BTreeSet<String> = BTreeSet::new();
    'prefixes: for prefix in prefixes {
        'segments: for seg in segments {
            let Some(dict) = seg.terms(field)? else {
                continue;
            };
            let mut stream = dict.map().range().ge(prefix.as_bytes()).into_stream();
            while let Some((key, _)) = stream.next() {
                if !key.starts_with(prefix.as_bytes()) {
                    continue 'segments;
                }
                // Indexed terms are text; a key that is not would match no analyzed query.
                let Ok(term) = std::str::from_utf8(key) else {
                    continue;
                };
                found.insert(term.to_string());
                if found.len() >= max {
                    break 'segments;
                }
            }
        }
        if found.len() > max {
            break 'prefixes;
        }
    }
    Ok(found.into_iter().collect())
}

/// What a [`Query::PhrasePrefix`] runs as over `segments` (Elasticsearch's rewrite): the
/// [`Query::MultiPhrase`] of its leading positions and the expansions of its last, or
/// [`Query::MatchNone`] when nothing expands. `field` is the phrase's field id.
pub(crate) fn rewrite_phrase_prefix(
    segments: &[Arc<SegmentReader>],
    field_id: u32,
    q: &Query,
) -> Result<Query> {
    let Query::PhrasePrefix {
        field,
        terms,
        slop,
        max_expansions,
    } = q
    else {
        return Ok(q.clone());
    };
    let Some(((last_pos, prefixes), lead)) = terms.split_last() else {
        return Ok(Query::MatchNone);
    };
    let expanded = prefix_expansions(segments, field_id, prefixes, *max_expansions)?;
    if expanded.is_empty() {
        return Ok(Query::MatchNone);
    }
    let mut terms = lead.to_vec();
    terms.push((*last_pos, expanded));
    Ok(Query::MultiPhrase {
        field: field.clone(),
        terms,
        slop: *slop,
    })
}

/// One phrase position: the cursors of its terms present in the segment.
struct Union {
    cursors: Vec<PostingsCursor>,
    /// The smallest document of `cursors`.
    doc: u32,
    offset: u32,
}

impl Union {
    fn new(cursors: Vec<PostingsCursor>, offset: u32) -> Self {
        let doc = cursors
            .iter()
            .map(PostingsCursor::doc)
            .min()
            .unwrap_or(TERMINATED);
        Self {
            cursors,
            doc,
            offset,
        }
    }

    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let mut min = TERMINATED;
        for c in self.cursors.iter_mut() {
            let d = if c.doc() < target {
                c.seek(target)
            } else {
                c.doc()
            };
            min = min.min(d);
        }
        self.doc = min;
        min
    }

    fn next(&mut self) -> u32 {
        let cur = self.doc;
        let mut min = TERMINATED;
        for c in self.cursors.iter_mut() {
            let d = if c.doc() == cur { c.next() } else { c.doc() };
            min = min.min(d);
        }
        self.doc = min;
        min
    }

    fn cost(&self) -> u64 {
        self.cursors.iter().map(|c| u64::from(c.doc_freq())).sum()
    }

    /// The current document's positions of every term, sorted (duplicates kept, as Lucene's
    /// `UnionPostingsEnum`).
    fn positions(&mut self, out: &mut Vec<u32>, buf: &mut Vec<u32>) {
        out.clear();
        for c in self.cursors.iter_mut().filter(|c| c.doc() == self.doc) {
            c.positions(buf);
            out.extend_from_slice(buf);
        }
        out.sort_unstable();
    }
}

/// Scores a multi-phrase on one segment: the conjunction of its positions' unions as the
/// approximation, positions checked in [`matches`](Scorer::matches).
pub struct MultiPhraseScorer {
    unions: Vec<Union>,
    /// Union indexes by increasing cost (the first leads the conjunction).
    order: Vec<usize>,
    slop: u32,
    repeats: Option<Arc<Repeats>>,
    sim: SimScorer,
    norms: Option<Bytes>,
    doc: u32,
    freq: f32,
    max: f32,
    /// Per position: the current document's positions.
    positions: Vec<Vec<u32>>,
    offsets: Vec<u32>,
    buf: Vec<u32>,
}

impl MultiPhraseScorer {
    /// `positions`: per phrase position, its terms' cursors (none empty) and its offset;
    /// `repeats`: the sloppy phrase's [`Repeats::of`] its positions' terms.
    pub fn new(
        positions: Vec<(Vec<PostingsCursor>, u32)>,
        slop: u32,
        repeats: Option<Arc<Repeats>>,
        sim: SimScorer,
        norms: Option<Bytes>,
    ) -> Self {
        let unions: Vec<Union> = positions
            .into_iter()
            .map(|(cursors, off)| Union::new(cursors, off))
            .collect();
        let mut order: Vec<usize> = (0..unions.len()).collect();
        order.sort_by_key(|&i| unions[i].cost());
        // A bound of the phrase frequency: an exact phrase occurs at most as often as any of
        // its positions' terms together; a sloppy one counts at most one match per position
        // occurrence (Lucene's `SloppyPhraseMatcher.maxFreq`).
        let per_position = unions.iter().map(|u| {
            u.cursors
                .iter()
                .map(|c| u64::from(c.term_impact().max_freq))
                .sum::<u64>()
        });
        let max_freq = if slop == 0 {
            per_position.min().unwrap_or(0)
        } else {
            per_position.sum()
        };
        let best_factor = sim.factors().iter().copied().fold(0f32, f32::max);
        let max = sim.score_factor(max_freq as f32 * best_factor);
        let n = unions.len();
        let offsets = unions.iter().map(|u| u.offset).collect();
        let mut s = Self {
            unions,
            order,
            slop,
            repeats,
            sim,
            norms,
            doc: 0,
            freq: 0.0,
            max,
            positions: vec![Vec::new(); n],
            offsets,
            buf: Vec::new(),
        };
        s.doc = if n == 0 {
            TERMINATED
        } else {
            let first = s.unions[s.order[0]].doc;
            s.align(first)
        };
        s
    }

    /// The first document `>= target` every position's union is on.
    fn align(&mut self, mut target: u32) -> u32 {
        'outer: loop {
            if target == TERMINATED {
                return TERMINATED;
            }
            let lead = self.order[0];
            target = self.unions[lead].seek(target);
            if target == TERMINATED {
                return TERMINATED;
            }
            for k in 1..self.order.len() {
                let i = self.order[k];
                let d = self.unions[i].seek(target);
                if d != target {
                    target = d;
                    continue 'outer;
                }
            }
            return target;
        }
    }

    fn norm(&self) -> u8 {
        match &self.norms {
            Some(n) => n.get(self.doc as usize).copied().unwrap_or(1),
            None => 1,
        }
    }

    fn load_positions(&mut self) {
        for (u, out) in self.unions.iter_mut().zip(self.positions.iter_mut()) {
            u.positions(out, &mut self.buf);
        }
    }

    /// Lucene's `ExactPhraseMatcher` count: the occurrences of the lead position (the
    /// cheapest) at which every other position holds one of its terms at its offset.
    fn exact_freq(&self) -> f32 {
        let lead = self.order[0];
        let lead_off = self.offsets[lead];
        let mut cursors = vec![0usize; self.positions.len()];
        let mut n = 0u32;
        'starts: for &p in &self.positions[lead] {
            let Some(start) = p.checked_sub(lead_off) else {
                continue;
            };
            for &i in &self.order[1..] {
                let want = start + self.offsets[i];
                let list = &self.positions[i];
                let j = &mut cursors[i];
                while *j < list.len() && list[*j] < want {
                    *j += 1;
                }
                if *j >= list.len() {
                    break 'starts;
                }
                if list[*j] != want {
                    continue 'starts;
                }
            }
            n += 1;
        }
        n as f32
    }
}

impl Scorer for MultiPhraseScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn next(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let lead = self.order[0];
        let t = self.unions[lead].next();
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
        self.load_positions();
        self.freq = if self.slop == 0 {
            self.exact_freq()
        } else if let Some(r) = &self.repeats {
            sloppy_frequency_repeats(&self.positions, &self.offsets, self.slop, r)
        } else {
            sloppy_frequency(&self.positions, &self.offsets, self.slop)
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
        self.order.first().map_or(0, |&i| self.unions[i].cost())
    }
    fn max_score(&self) -> f32 {
        self.max
    }
    fn corruption(&self) -> Option<Corruption> {
        self.unions
            .iter()
            .flat_map(|u| u.cursors.iter())
            .find_map(PostingsCursor::corruption)
    }
}
