//! The top k of a pure conjunction of terms (`+a +b +c`) with block-max pruning at two levels,
//! as Tantivy's and Lucene's block-max conjunctions do:
//!
//! - a window is the rarest term's block; the others are bounded over it by their block maxima
//!   ([`TermScorer::max_over`]), and a window whose summed bound cannot reach the k-th best
//!   score is passed over without decoding anything;
//! - inside a window, a document of the rarest term whose own score plus the others' bounds
//!   cannot reach the bar is passed over before the other terms are sought, and after each
//!   term that matched, the sum so far plus the bounds of the terms left is checked again.
//!
//! Scores are summed in the order and precision of [`TermConjunction`](super::scorer::TermConjunction)
//! (rarest first, in f64), so every hit scores bit for bit as the plain leapfrog scores it.
use super::collector::{LeafCollector, LiveFilter};
use super::count::DenseAnd;
use super::scorer::{Scorer, TermScorer, TERMINATED};
use crate::codec::postings::BLOCK;

/// Bounds are summed in f64 and rounded to f32 like the scores; this slack keeps a bound above
/// a score the rounding might lift by an ulp.
const SLACK: f64 = 1.0 + 1e-6;

/// Collects the top k of the conjunction of `terms` (at least two, sorted by cost as
/// [`TermConjunction::new`](super::scorer::TermConjunction::new) sorts them) into `top`. With
/// `prune` false every match is scored and counted (an exact count). Returns whether matches
/// were passed over (the count is then a lower bound) or the time budget ran out.
pub fn top_k<L: LiveFilter>(
    terms: &mut [TermScorer],
    top: &mut LeafCollector<'_, L>,
    prune: bool,
) -> bool {
    debug_assert!(terms.len() >= 2);
    let (lead, rest) = terms.split_first_mut().expect("at least two terms");
    let mut skipped = false;
    // suffix[i]: the summed window bounds of rest[i..] (suffix[rest.len()] = 0).
    let mut suffix = vec![0f64; rest.len() + 1];
    // The lead's documents of a window and their scores, then the candidates among them.
    let mut docs = [0u32; BLOCK];
    let mut scores = [0f32; BLOCK];
    let mut d = lead.doc();
    'windows: while d != TERMINATED {
        if top.out_of_time() {
            return true;
        }
        // A window is the lead's block (the time budget is checked once per window). Until
        // the heap is full there is no bar and it is walked as a plain leapfrog (most
        // conjunctions never fill it); without pruning, always.
        let bar = if prune { top.threshold() } else { None };
        let Some(bar) = bar else {
            let end = lead.block_end();
            d = leapfrog(lead, rest, top, d, end);
            continue 'windows;
        };
        let bar = f64::from(bar);
        let (end, lead_max) = lead.block_max(d);
        if end == TERMINATED {
            break;
        }
        for (i, t) in rest.iter_mut().enumerate() {
            suffix[i] = match t.doc() {
                TERMINATED => return skipped,
                // No document of this term in the window: nothing there matches; go on from
                // its next one.
                x if x > end => {
                    d = lead.seek(x);
                    continue 'windows;
                }
                x => f64::from(t.max_over(d.max(x), end)),
            };
        }
        for i in (0..rest.len()).rev() {
            suffix[i] += suffix[i + 1];
        }
        if (f64::from(lead_max) + suffix[0]) * SLACK < bar {
            skipped = true;
            d = lead.seek(end.saturating_add(1));
            continue;
        }
        // Inside the window: the lead's documents scored in one pass; those whose score plus
        // the others' bounds can reach the bar are candidates, and each term is sought for
        // them in turn, its score added and the bound of the terms left checked again.
        let n = lead.block_scores(end, &mut docs, &mut scores);
        let mut kept = 0;
        for i in 0..n {
            docs[kept] = docs[i];
            scores[kept] = scores[i];
            kept += usize::from((f64::from(scores[i]) + suffix[0]) * SLACK >= bar);
        }
        skipped |= kept < n;
        'candidates: for (&c, &s) in docs[..kept].iter().zip(&scores[..kept]) {
            let bar = top.threshold().map_or(bar, f64::from);
            let mut sum = f64::from(s);
            for (i, t) in rest.iter_mut().enumerate() {
                if t.seek(c) != c {
                    continue 'candidates;
                }
                sum += f64::from(t.score());
                if (sum + suffix[i + 1]) * SLACK < bar {
                    skipped = true;
                    continue 'candidates;
                }
            }
            if top.is_live(c) {
                top.collect(c, sum as f32);
            }
        }
        d = lead.seek(end.saturating_add(1));
    }
    skipped
}

/// Collects every match in `[d, end]` (a plain leapfrog, each match scored as
/// [`TermConjunction`](super::scorer::TermConjunction) scores it); returns the lead's document
/// after them.
fn leapfrog<L: LiveFilter>(
    lead: &mut TermScorer,
    rest: &mut [TermScorer],
    top: &mut LeafCollector<'_, L>,
    mut d: u32,
    end: u32,
) -> u32 {
    'docs: while d <= end {
        for t in rest.iter_mut() {
            let x = t.seek(d);
            if x != d {
                d = lead.seek(x);
                continue 'docs;
            }
        }
        if top.is_live(d) {
            let mut sum = f64::from(lead.score());
            for t in rest.iter_mut() {
                sum += f64::from(t.score());
            }
            top.collect(d, sum as f32);
        }
        d = lead.next();
    }
    d
}

/// [`top_k`] for common terms: the candidates come from `and` (bitsets of the same terms, where
/// a leapfrog would seek every term for nearly every document of the rarest), so only true
/// matches are sought and scored. With `prune`, once the heap is full a candidate is passed
/// over as soon as the scores so far plus the bounds of the terms left (over the rarest term's
/// block, as in [`top_k`]) cannot reach the bar; without, every match is scored and counted.
/// Returns whether matches were passed over or the time budget ran out.
pub fn dense<L: LiveFilter>(
    terms: &mut [TermScorer],
    and: &mut DenseAnd,
    top: &mut LeafCollector<'_, L>,
    prune: bool,
) -> bool {
    let (lead, rest) = terms.split_first_mut().expect("at least two terms");
    let mut skipped = false;
    let mut suffix = vec![0f64; rest.len() + 1];
    // The window `suffix` bounds: up to `end`, once a bar exists.
    let mut end = None;
    let mut d = and.next_from(0);
    let mut steps = 0u32;
    'docs: while d != TERMINATED {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(1024) && top.out_of_time() {
            return true;
        }
        let bar = if prune { top.threshold() } else { None };
        let bar = match bar {
            None => f64::NEG_INFINITY,
            Some(bar) => {
                let bar = f64::from(bar);
                if end.is_none_or(|e| d > e) {
                    let (e, lead_max) = lead.block_max(d);
                    if e == TERMINATED {
                        break;
                    }
                    for (i, t) in rest.iter_mut().enumerate() {
                        suffix[i] = f64::from(t.max_over(d, e));
                    }
                    suffix[rest.len()] = 0.0;
                    for i in (0..rest.len()).rev() {
                        suffix[i] += suffix[i + 1];
                    }
                    end = Some(e);
                    if (f64::from(lead_max) + suffix[0]) * SLACK < bar {
                        skipped = true;
                        d = and.next_from(e.saturating_add(1));
                        continue;
                    }
                }
                bar
            }
        };
        if top.is_live(d) {
            // Each term lands on `d` unless the postings disagree with the bitsets (damaged
            // data, which the cursors report).
            if lead.seek(d) != d {
                d = and.next_from(d.saturating_add(1));
                continue;
            }
            let mut sum = f64::from(lead.score());
            if (sum + suffix[0]) * SLACK < bar {
                skipped = true;
                d = and.next_from(d.saturating_add(1));
                continue;
            }
            for (i, t) in rest.iter_mut().enumerate() {
                if t.seek(d) != d {
                    d = and.next_from(d.saturating_add(1));
                    continue 'docs;
                }
                sum += f64::from(t.score());
                if (sum + suffix[i + 1]) * SLACK < bar {
                    skipped = true;
                    d = and.next_from(d.saturating_add(1));
                    continue 'docs;
                }
            }
            top.collect(d, sum as f32);
        }
        d = and.next_from(d.saturating_add(1));
    }
    skipped
}
