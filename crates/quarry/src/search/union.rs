//! Disjunctions of terms, the most common query shape, without dynamic dispatch:
//! - `Top`: block-max MaxScore (as Lucene's MaxScoreBulkScorer). Documents are scored in windows
//!   that end at the nearest block boundary of any term; in each window the terms are split into
//!   "essential" ones (whose block maxima sum to at least the k-th best score) and the rest. Only
//!   documents of essential terms are candidates; non-essential terms are added, best first, only
//!   while the candidate can still make the top k. A window where no sum can compete is skipped
//!   without decoding it.
//! - `TopCount` and `Count`: exhaustive, in windows of 2048 documents with a score accumulator
//!   per document (as Lucene's BooleanScorer), so each term's postings are read sequentially.
use super::collector::{LeafCollector, LiveFilter};
use super::scorer::{Scorer, TermScorer, TERMINATED};
use crate::codec::postings::BLOCK;

/// Upper bounds are inflated by this factor so float rounding never prunes a document whose
/// true score equals the threshold.
const SLACK: f64 = 1.0 + 1e-6;
const WINDOW: u32 = 2048;
/// The window of a count without scores: only a bitset, so it can be longer, and dense blocks
/// (bitsets of up to 4096 ids) then seldom straddle two windows.
const COUNT_WINDOW: u32 = 1 << 15;
/// The longest window of [`top_k`], in doc ids.
const MAX_WINDOW: u32 = 1 << 16;

/// Scores a union of term scorers on one segment into `top`; returns whether some documents were
/// skipped so the count is a lower bound.
pub fn top_k<L: LiveFilter>(terms: &mut [TermScorer], top: &mut LeafCollector<'_, L>) -> bool {
    let n = terms.len();
    let mut skipped = false;
    let mut wmax = vec![0f64; n];
    let mut order: Vec<usize> = (0..n).collect();
    let mut prefix = vec![0f64; n + 1];
    // Windows are chosen from the skip tables alone ("shallow"): a cursor is only moved (and a
    // block decoded) when its window can hold a competitive document. A window ends at the
    // nearest block end of the terms that were essential in the previous window (as Lucene's
    // MaxScoreBulkScorer): the block ends of a very common, non-essential term would otherwise
    // cut the postings into windows of a hundred documents, each paying for the bounds, the
    // sort and the essential split.
    let mut lead = vec![true; n];
    let mut target = terms.iter().map(|t| t.doc()).min().unwrap_or(TERMINATED);
    // No window reaches past the last document of any term.
    let last = terms.iter().filter_map(|t| t.last_doc()).max().unwrap_or(0);
    while target != TERMINATED && target <= last {
        if top.out_of_time() {
            return true;
        }
        let mut window_end = TERMINATED;
        for pass in 0..2 {
            for (i, t) in terms.iter_mut().enumerate() {
                if (pass == 0 && !lead[i]) || t.doc() == TERMINATED {
                    continue;
                }
                let (end, _) = t.block_max(target.max(t.doc()));
                if end != TERMINATED {
                    window_end = window_end.min(end);
                }
            }
            if window_end != TERMINATED {
                break;
            }
        }
        if window_end == TERMINATED {
            break;
        }
        // Long windows are cut so that the bounds follow the bar as it rises.
        window_end = window_end
            .min(target.saturating_add(MAX_WINDOW - 1))
            .min(last);
        // Each term's bound in the window: its block maxima over it, 0 when it has no document
        // in it.
        for (i, t) in terms.iter_mut().enumerate() {
            let d = t.doc();
            wmax[i] = if d == TERMINATED || d > window_end {
                0.0
            } else {
                f64::from(t.max_over(target.max(d), window_end)) * SLACK
            };
        }
        order.sort_by(|&a, &b| wmax[a].total_cmp(&wmax[b]));
        for k in 0..n {
            prefix[k + 1] = prefix[k] + wmax[order[k]];
        }
        // Essential terms start at `essential_from` in `order`.
        let mut essential_from = 0;
        if let Some(th) = top.threshold().map(f64::from) {
            while essential_from < n && prefix[essential_from + 1] < th {
                essential_from += 1;
            }
            if essential_from == n {
                // Nothing in this window can compete: move on without touching the cursors.
                skipped = true;
                target = window_end.saturating_add(1);
                continue;
            }
        }
        for (k, &i) in order.iter().enumerate() {
            lead[i] = k >= essential_from;
        }
        for &i in &order[essential_from..] {
            if terms[i].doc() < target {
                terms[i].seek(target);
            }
        }
        // Score candidates of the essential terms inside the window.
        loop {
            let mut cand = TERMINATED;
            for &i in &order[essential_from..] {
                cand = cand.min(terms[i].doc());
            }
            if cand == TERMINATED || cand > window_end {
                break;
            }
            if !top.is_live(cand) {
                for &i in &order[essential_from..] {
                    if terms[i].doc() == cand {
                        terms[i].next();
                    }
                }
                continue;
            }
            let mut score = 0f64;
            for &i in &order[essential_from..] {
                let t = &mut terms[i];
                if t.doc() == cand {
                    score += f64::from(t.score());
                    t.next();
                }
            }
            let mut competitive = true;
            for k in (0..essential_from).rev() {
                let th = top.threshold().map(f64::from).unwrap_or(f64::NEG_INFINITY);
                if (score + prefix[k + 1]) * SLACK < th {
                    competitive = false;
                    break;
                }
                let t = &mut terms[order[k]];
                if t.doc() < cand {
                    t.seek(cand);
                }
                if t.doc() == cand {
                    score += f64::from(t.score());
                }
            }
            top.count(1);
            if competitive {
                top.offer(cand, score as f32);
                // A higher bar may turn the least essential terms non-essential for the rest
                // of the window (Lucene re-partitions the same way).
                if let Some(th) = top.threshold().map(f64::from) {
                    while essential_from + 1 < n && prefix[essential_from + 1] < th {
                        essential_from += 1;
                    }
                }
            } else {
                skipped = true;
            }
        }
        if essential_from > 0 {
            skipped = true;
        }
        target = window_end.saturating_add(1);
    }
    skipped
}

/// Top k of a single term (`Top` mode): walks the skip table block by block and decodes only
/// blocks whose bound reaches the k-th best score. Bounds and documents are compared as
/// `freq * factor` products against the smallest product that reaches the k-th score (as it
/// stands at the block's start), so neither a passed-over block nor a non-competitive document
/// costs a division; a block's bound is read in place from its impacts, so passing over the long
/// flat runs of a very common term costs a few nanoseconds per block of 128 documents. A
/// competitive block is scored from its decoded arrays, and the next block is decoded only when
/// its own bound asks for it.
pub fn top_k_term<L: LiveFilter>(t: &mut TermScorer, top: &mut LeafCollector<'_, L>) -> bool {
    let n_blocks = t.block_count();
    // One block: no skip table, no block bounds.
    let has_skips = n_blocks > 1;
    let mut skipped = false;
    let mut th = None;
    let mut m_min = f32::NEG_INFINITY;
    let mut b = 0usize;
    while b < n_blocks {
        if top.out_of_time() {
            return true;
        }
        // The bar as the k-th score stands now. Inside a block it is not raised: a stale bar
        // is lower, so it only lets through documents that the heap then turns away, and
        // computing it once per block keeps its cost away from short terms that fill the
        // heap one document at a time.
        let now = top.threshold();
        if now != th {
            th = now;
            m_min = th.map_or(f32::NEG_INFINITY, |th| t.min_factor(th));
        }
        if has_skips && th.is_some() {
            let from = b;
            while b < n_blocks && t.block_factor(b) < m_min {
                b += 1;
            }
            if b > from {
                skipped = true;
            }
            if b == n_blocks {
                break;
            }
        }
        if t.goto_block(b) == TERMINATED {
            break;
        }
        let (docs, freqs) = t.block_docs_freqs();
        for (&d, &f) in docs.iter().zip(freqs) {
            if !top.is_live(d) {
                continue;
            }
            top.count(1);
            let m = t.factor(d, f);
            if m >= m_min {
                top.offer(d, t.score_factor(m));
            }
        }
        b += 1;
    }
    skipped
}

/// Exhaustive union: every live matching document scored (unless `score` is false) and counted.
pub fn exhaustive<L: LiveFilter>(
    terms: &mut [TermScorer],
    top: &mut LeafCollector<'_, L>,
    score: bool,
) {
    if !score {
        for t in terms.iter_mut() {
            t.cursor_mut().set_docs_only();
        }
    }
    // Score accumulators are only needed when scoring (counting uses the bitset alone).
    let mut sums = if score {
        vec![0f64; WINDOW as usize]
    } else {
        Vec::new()
    };
    // The long window only pays when its bitset fills: some term in an eighth of the documents.
    let dense = terms.iter_mut().any(|t| {
        let c = t.cursor_mut();
        u64::from(c.doc_freq()) * 8 >= u64::from(c.max_doc())
    });
    let window = if !score && dense {
        COUNT_WINDOW
    } else {
        WINDOW
    };
    let mut bits = [0u64; (COUNT_WINDOW / 64) as usize];
    let bits = &mut bits[..(window / 64) as usize];
    let mut scratch = [0f32; BLOCK];
    let mut base = terms.iter().map(|t| t.doc()).min().unwrap_or(TERMINATED) / window * window;
    while base != TERMINATED / window * window && terms.iter().any(|t| t.doc() != TERMINATED) {
        if top.out_of_time() {
            return;
        }
        let end = base.saturating_add(window);
        for t in terms.iter_mut() {
            if !score {
                t.mark_until(base, end, bits);
                continue;
            }
            t.score_until(base, end, bits, &mut sums, &mut scratch);
        }
        let first_word = (base / 64) as usize;
        // The bar a hit must reach, re-read only after an offer (the heap changes only then).
        let mut bar = top.threshold().unwrap_or(f32::NEG_INFINITY);
        for (w, word) in bits.iter_mut().enumerate() {
            let mut x = *word;
            let live = top.live_word(first_word + w);
            top.count(u64::from((x & live).count_ones()));
            if score {
                while x != 0 {
                    let o = w * 64 + x.trailing_zeros() as usize;
                    let s = sums[o] as f32;
                    sums[o] = 0.0;
                    if live >> (o % 64) & 1 == 1 && s >= bar {
                        top.offer(base + o as u32, s);
                        bar = top.threshold().unwrap_or(f32::NEG_INFINITY);
                    }
                    x &= x - 1;
                }
            }
            *word = 0;
        }
        let next = terms.iter().map(|t| t.doc()).min().unwrap_or(TERMINATED);
        if next == TERMINATED {
            break;
        }
        base = next / window * window;
    }
}
