//! Disjunctions of terms, the most common query shape, without dynamic dispatch:
//! - `Top`: block-max MaxScore (as Lucene's MaxScoreBulkScorer). Documents are scored in windows
//!   that end at the nearest block boundary of any term; in each window the terms are split into
//!   "essential" ones (whose block maxima sum to at least the k-th best score) and the rest. Only
//!   documents of essential terms are candidates; non-essential terms are added, best first, only
//!   while the candidate can still make the top k. A window where no sum can compete is skipped
//!   without decoding it.
//! - `TopCount` and `Count`: exhaustive, in windows of 2048 documents with a score accumulator
//!   per document (as Lucene's BooleanScorer), so each term's postings are read sequentially.
//!   (`TopCount` mostly runs `Top` and then counts apart: see `search_segment`.)
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

/// Terms with at least this many blocks are scored best blocks first (see [`top_k_term`]);
/// below it the walk in doc order is as cheap.
const BEST_FIRST_MIN_BLOCKS: usize = 32;

/// Top k of a single term (`Top` mode), decoding only blocks whose bound reaches the k-th best
/// score. Bounds and documents are compared as `freq * factor` products against the smallest
/// product that reaches the k-th score, so neither a passed-over block nor a non-competitive
/// document costs a division; a block's bound is read in place from its impacts.
///
/// A long term is scored best blocks first: one pass reads every block's bound, then rounds
/// each take the best blocks left whose bound still reaches the bar (16 in the first round,
/// twice as many in each next), and score them, best first, while their bound reaches the bar
/// as it rises. Walked in doc order, the bar of a very common term rises slowly over bounds that
/// are all alike: `the` in W2 decoded 443 of its 6,280 blocks that way, against 226 whose bound
/// reaches the final k-th score (the least any order can decode). The result does not depend
/// on the order: [`TopK`](super::collector::TopK) breaks ties by index order, not arrival.
pub fn top_k_term<L: LiveFilter>(t: &mut TermScorer, top: &mut LeafCollector<'_, L>) -> bool {
    let n_blocks = t.block_count();
    if n_blocks < BEST_FIRST_MIN_BLOCKS || top.k() == 0 {
        return walk_blocks(t, top, None, &mut []);
    }
    let mut bounds = Vec::new();
    t.block_factors(&mut bounds);
    let mut bar = TermBar::default();
    let mut left: Vec<u32> = (0..n_blocks as u32).collect();
    let mut round = top.k().max(16);
    let mut decoded = 0usize;
    while !left.is_empty() {
        if top.out_of_time() {
            return true;
        }
        bar.update(t, top);
        if bar.reach == f32::NEG_INFINITY && decoded > 0 {
            // The heap is still not full (a large k): no bar to order by; the blocks left are
            // walked in doc order.
            return walk_blocks(t, top, Some(&bounds), &mut []);
        }
        left.retain(|&b| bounds[b as usize] >= bar.reach);
        for b in best_blocks(&bounds, &left, round) {
            bar.update(t, top);
            if bounds[b] < bar.reach {
                break;
            }
            let cut = bar.cut(t, b);
            // Scored, or passed over for good (it can only tie, and loses ties): left out of
            // the next rounds either way.
            let m = std::mem::replace(&mut bounds[b], f32::NEG_INFINITY);
            if m < cut {
                continue;
            }
            if t.goto_block(b) == TERMINATED {
                return true;
            }
            score_block(t, top, cut, &mut []);
            decoded += 1;
        }
        round = round.saturating_mul(2);
    }
    decoded < n_blocks
}

/// The bar of a single term's pruned walk, as `freq * factor` products (see
/// [`TermScorer::factor`]): the least product that reaches the k-th score, the least that
/// beats it, and the first document from which on reaching is not enough (a tie with the k-th
/// hit is lost by index order, as Lucene's collector asks for `nextUp` of the k-th score).
/// Without the last, terms whose best documents tie by the hundred (`biography`: one-word
/// paragraphs) decode and offer every tied document.
struct TermBar {
    /// The k-th hit (score, sequence) the products were computed for.
    key: Option<(f32, u64)>,
    reach: f32,
    beat: f32,
    from: u32,
}

impl Default for TermBar {
    fn default() -> Self {
        Self {
            key: None,
            reach: f32::NEG_INFINITY,
            beat: f32::NEG_INFINITY,
            from: u32::MAX,
        }
    }
}

impl TermBar {
    /// Follows the top k; products and the tie boundary are recomputed only when its k-th hit
    /// changed.
    #[inline]
    fn update<L: LiveFilter>(&mut self, t: &TermScorer, top: &LeafCollector<'_, L>) {
        let now = top.kth();
        if now != self.key {
            *self = match now {
                None => Self::default(),
                Some((th, seq)) => Self {
                    key: now,
                    reach: t.min_factor(th),
                    beat: t.min_factor(th.next_up()),
                    from: top.first_doc_after_seq(seq),
                },
            };
        }
    }

    /// The product the documents of block `b` must reach.
    #[inline]
    fn cut(&self, t: &TermScorer, b: usize) -> f32 {
        if self.beat > self.reach && block_start(t, b) >= self.from {
            self.beat
        } else {
            self.reach
        }
    }
}

/// The first doc id block `b` can hold (needs a skip table).
#[inline]
fn block_start(t: &TermScorer, b: usize) -> u32 {
    if b == 0 {
        0
    } else {
        t.block_last_doc(b - 1).saturating_add(1)
    }
}

/// Top k of `+a -b -c …` (`Top` mode) on one segment: `a`'s pruned walk in doc order (see
/// [`top_k_term`]), each document whose score competes checked against the prohibited terms
/// `excl` (doc-ids-only scorers) before it is offered, so the exclusion costs a seek per
/// competitive document instead of one per match. The count it leaves is a lower bound (only
/// the documents checked), so it always reports skipping.
pub fn top_k_term_excluding<L: LiveFilter>(
    t: &mut TermScorer,
    excl: &mut [TermScorer],
    top: &mut LeafCollector<'_, L>,
) -> bool {
    walk_blocks(t, top, None, excl);
    true
}

/// The `c` blocks of `left` with the highest `bounds`, highest first (ties: the earlier block
/// first).
fn best_blocks(bounds: &[f32], left: &[u32], c: usize) -> Vec<usize> {
    // Bounds are products of non-negative numbers (or +inf for a damaged entry): their bit
    // patterns order like the values. The low half breaks ties towards earlier blocks.
    let key = |b: u32| (u64::from(bounds[b as usize].to_bits()) << 32) | u64::from(!b);
    let mut keys: Vec<u64> = if left.len() <= c {
        left.iter().map(|&b| key(b)).collect()
    } else {
        let mut heap = std::collections::BinaryHeap::with_capacity(c + 1);
        for &b in left {
            let k = key(b);
            if heap.len() < c {
                heap.push(std::cmp::Reverse(k));
            } else if heap.peek().is_some_and(|m| k > m.0) {
                heap.pop();
                heap.push(std::cmp::Reverse(k));
            }
        }
        heap.into_iter().map(|r| r.0).collect()
    };
    keys.sort_unstable_by(|a, b| b.cmp(a));
    keys.into_iter().map(|k| !(k as u32) as usize).collect()
}

/// Offers the documents of the block the cursor was just moved to (with
/// [`TermScorer::goto_block`]) whose product reaches `m_min`; counts them all (live ones).
///
/// With prohibited terms (`excl`, doc-ids-only cursors moved forward only), a document is
/// offered only if none of them holds it, checked for documents whose product reaches `m_min`
/// alone; only those checked and kept are counted.
#[inline(always)]
fn score_block<L: LiveFilter>(
    t: &TermScorer,
    top: &mut LeafCollector<'_, L>,
    m_min: f32,
    excl: &mut [TermScorer],
) {
    let mut products = [0f32; BLOCK];
    let docs = t.block_products(&mut products);
    if !excl.is_empty() {
        for (&d, &m) in docs.iter().zip(&products) {
            if m >= m_min && top.is_live(d) && !excl.iter_mut().any(|x| x.cursor_mut().seek(d) == d)
            {
                top.count(1);
                top.offer(d, t.score_factor(m));
            }
        }
        return;
    }
    if L::ALL_LIVE {
        top.count(docs.len() as u64);
    }
    for (&d, &m) in docs.iter().zip(&products) {
        if !L::ALL_LIVE {
            if !top.is_live(d) {
                continue;
            }
            top.count(1);
        }
        if m >= m_min {
            top.offer(d, t.score_factor(m));
        }
    }
}

/// The walk of [`top_k_term`] in doc order over the blocks not yet scored: `bounds` holds
/// every block's bound, `-inf` for blocks already scored (`None`: read them from the skip
/// table on the way).
fn walk_blocks<L: LiveFilter>(
    t: &mut TermScorer,
    top: &mut LeafCollector<'_, L>,
    bounds: Option<&[f32]>,
    excl: &mut [TermScorer],
) -> bool {
    let n_blocks = t.block_count();
    let has_skips = n_blocks > 1;
    let bound = |t: &TermScorer, b: usize| match bounds {
        Some(bs) => bs[b],
        None => t.block_factor(b),
    };
    let mut skipped = false;
    let mut bar = TermBar::default();
    let mut b = 0usize;
    while b < n_blocks {
        if top.out_of_time() {
            return true;
        }
        // The bar as the top k stands now. Inside a block it is not raised: a stale bar is
        // lower, so it only lets through documents that the heap then turns away, and
        // computing it once per block keeps its cost away from short terms that fill the heap
        // one document at a time.
        bar.update(t, top);
        if has_skips && (bar.key.is_some() || bounds.is_some()) {
            while b < n_blocks {
                let m = bound(t, b);
                if m == f32::NEG_INFINITY {
                    // Scored already (and counted).
                } else if m < bar.reach || (m < bar.beat && block_start(t, b) >= bar.from) {
                    skipped = true;
                } else {
                    break;
                }
                b += 1;
            }
            if b == n_blocks {
                break;
            }
        }
        if t.goto_block(b) == TERMINATED {
            break;
        }
        let cut = if has_skips { bar.cut(t, b) } else { bar.reach };
        score_block(t, top, cut, excl);
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
        if !score && L::ALL_LIVE {
            // The count alone: one popcount kernel over the window.
            top.count(quarry_codecs::popcount::count_ones(bits));
            bits.fill(0);
        } else {
            collect_window(top, bits, &mut sums, base, score);
        }
        let next = terms.iter().map(|t| t.doc()).min().unwrap_or(TERMINATED);
        if next == TERMINATED {
            break;
        }
        base = next / window * window;
    }
}

/// Counts the live documents marked in a window of [`exhaustive`] and, if `score`, offers them
/// with their summed scores; clears the window's bits (and the sums it read) for the next one.
fn collect_window<L: LiveFilter>(
    top: &mut LeafCollector<'_, L>,
    bits: &mut [u64],
    sums: &mut [f64],
    base: u32,
    score: bool,
) {
    let first_word = (base / 64) as usize;
    // The bar a hit must reach, re-read only after an offer (the heap changes only then).
    let mut bar = top.threshold().unwrap_or(f32::NEG_INFINITY);
    for (w, word) in bits.iter_mut().enumerate() {
        let mut x = *word;
        if x == 0 {
            continue;
        }
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
}
