//! How is one segment searched? The per-segment execution of a search: the specialised loops
//! chosen by the query's shape (a term union, a term conjunction, a term with exclusions) and
//! the generic collection loop, with the time budget checked between chunks of documents.
use super::collector::{LeafCollector, LiveFilter};
use super::scorer::{Scorer, TermScorer, TERMINATED};
use super::weight::Weight;
use super::{conjunction, union, SearchMode};
use crate::codec::postings::Corruption;
use crate::index::SegmentReader;
use crate::{Error, Result};

/// Searches one segment into `c`; returns (live matches counted, whether documents were
/// skipped). Monomorphized per live-documents filter, so segments without deletions pay nothing.
/// Tries the specialised loops in turn (a union of terms, a conjunction of terms, a term with
/// exclusions), else runs the query's scorer through the generic loop.
pub(super) fn search_segment<L: LiveFilter>(
    weight: &Weight,
    union: Option<&[&Weight]>,
    seg: &SegmentReader,
    ord: usize,
    mut c: LeafCollector<'_, L>,
    mode: SearchMode,
) -> Result<(u64, bool)> {
    if let Some(terms) = union {
        return search_term_union(weight, terms, seg, ord, &mut c, mode);
    }
    if mode == SearchMode::Top && cannot_compete(weight, &c) {
        // Nothing here can enter the top k, and the count is not asked for: a constant-score
        // multi-term query (`a*s`) skips its dictionary walk in every segment after the one
        // that filled the top k (the 1,000 docs/s load test keeps 9-16 segments).
        return Ok((0, true));
    }
    if mode != SearchMode::Count {
        if let Some(ws) = weight.term_conjunction() {
            return search_term_conjunction(ws, seg, ord, &mut c, mode);
        }
    }
    if let Some(searched) = search_term_exclusion(weight, seg, ord, &mut c, mode)? {
        return Ok(searched);
    }
    let Some(mut s) = weight.scorer(seg, ord)? else {
        return Ok((0, false));
    };
    let skipped = collect_segment(&mut *s, &mut c, mode) | s.pruned();
    if let Some(why) = s.corruption() {
        return Err(scorer_corruption(seg, why));
    }
    Ok((c.counted(), skipped))
}

/// True when every match of `weight` in the collector's segment scores the same, the top k is
/// full, and no match can take a place in it: the k-th hit scores more, or as much while every
/// document of the segment comes after it in index order (ties go to the earlier document).
fn cannot_compete<L: LiveFilter>(weight: &Weight, c: &LeafCollector<'_, L>) -> bool {
    let (Some(score), Some((kth, seq))) = (weight.constant_score(), c.kth()) else {
        return false;
    };
    score < kth || (score == kth && c.first_doc_after_seq(seq) == 0)
}

/// The term scorers of `terms` in `seg` (terms absent from the segment left out).
fn term_scorers(terms: &[&Weight], seg: &SegmentReader, ord: usize) -> Result<Vec<TermScorer>> {
    let mut scorers = Vec::with_capacity(terms.len());
    push_term_scorers(terms, seg, ord, &mut scorers)?;
    Ok(scorers)
}

/// Appends the term scorers of `terms` in `seg` to `scorers`.
fn push_term_scorers(
    terms: &[&Weight],
    seg: &SegmentReader,
    ord: usize,
    scorers: &mut Vec<TermScorer>,
) -> Result<()> {
    for w in terms {
        if let Some(s) = w.term_scorer(seg, ord)? {
            scorers.push(s);
        }
    }
    Ok(())
}

/// A union of terms (`a b c`, every clause a term): one term through its own loops, several
/// through the union's pruned walk, counted as `mode` asks.
fn search_term_union<L: LiveFilter>(
    weight: &Weight,
    terms: &[&Weight],
    seg: &SegmentReader,
    ord: usize,
    c: &mut LeafCollector<'_, L>,
    mode: SearchMode,
) -> Result<(u64, bool)> {
    let mut scorers = term_scorers(terms, seg, ord)?;
    let skipped = match (scorers.as_mut_slice(), mode) {
        ([t], SearchMode::Top) => union::top_k_term(t, c),
        // One term in a segment without deletions: its count is its document frequency,
        // so the top k come from the pruned walk and the count from the term entry.
        ([t], SearchMode::TopCount) if L::ALL_LIVE => {
            union::top_k_term(t, c);
            let df = t.cost();
            c.count(df.saturating_sub(c.counted()));
            false
        }
        // One term: the generic loop, monomorphized for the term scorer.
        ([t], _) => collect_segment(t, c, mode),
        (_, SearchMode::Top) => union::top_k(&mut scorers, c),
        (_, SearchMode::TopCount) => {
            if let Some(counted) = union_top_count(weight, terms, &mut scorers, seg, ord, c)? {
                return Ok(counted);
            }
            false
        }
        (_, SearchMode::Count) => {
            union::exhaustive(&mut scorers, c, false);
            false
        }
    };
    if let Some(why) = scorers.iter().find_map(|s| s.corruption()) {
        return Err(scorer_corruption(seg, why));
    }
    Ok((c.counted(), skipped))
}

/// The top k of a union of several terms and its exact count: the top k from the pruned walk,
/// then, if it skipped documents, the exact count: for two terms without deletions from
/// `Weight::fast_count`, as a count takes it (`count::count_or2`: `|a| + |b| - |a AND b|`,
/// reading only the intersection), else a second pass that only ORs doc ids (bitsets, no
/// scores). Both together read far less than scoring every document. Returns the segment's
/// result when the fast count settled it, else `None` (the count is in `c`).
fn union_top_count<L: LiveFilter>(
    weight: &Weight,
    terms: &[&Weight],
    scorers: &mut Vec<TermScorer>,
    seg: &SegmentReader,
    ord: usize,
    c: &mut LeafCollector<'_, L>,
) -> Result<Option<(u64, bool)>> {
    if !union::top_k(scorers, c) || c.out_of_time() {
        return Ok(None);
    }
    if let Some(why) = scorers.iter().find_map(|s| s.corruption()) {
        return Err(scorer_corruption(seg, why));
    }
    if L::ALL_LIVE {
        let walked = c.counted();
        if let Some(n) = weight.fast_count(seg, ord, c.budget_mut())? {
            // A count cut short by the deadline is no count: the walk's lower
            // bound stays (and the search reports the timeout).
            if c.budget_mut().expired() {
                return Ok(Some((walked, true)));
            }
            c.reset_count();
            c.count(n);
            return Ok(Some((n, false)));
        }
    }
    scorers.clear();
    push_term_scorers(terms, seg, ord, scorers)?;
    c.reset_count();
    union::exhaustive(scorers, c, false);
    Ok(None)
}

/// A conjunction of terms (`+a +b`): the candidates from bitsets for common terms, else the
/// conjunction's own walk; pruned in `Top` mode only.
fn search_term_conjunction<L: LiveFilter>(
    ws: &[Weight],
    seg: &SegmentReader,
    ord: usize,
    c: &mut LeafCollector<'_, L>,
    mode: SearchMode,
) -> Result<(u64, bool)> {
    let mut terms = Vec::with_capacity(ws.len());
    for w in ws {
        match w.term_scorer(seg, ord)? {
            Some(t) => terms.push(t),
            None => return Ok((0, false)),
        }
    }
    // The order (and so the summation order) of `TermConjunction`.
    terms.sort_by_key(|t| t.cost());
    // Pruned in `Top` mode only: in `TopCount` every match is scored (a pruned walk and
    // then a count from doc ids alone were measured slower: the walk prunes little
    // where the count costs most).
    let prune = mode == SearchMode::Top;
    let skipped = match Weight::term_dense_and(ws, seg, ord)? {
        // Common terms: the candidates from bitsets.
        Some(mut and) => {
            let skipped = conjunction::dense(&mut terms, &mut and, c, prune);
            if let Some(why) = and.corruption() {
                return Err(scorer_corruption(seg, why));
            }
            skipped
        }
        None => conjunction::top_k(&mut terms, c, prune),
    };
    if let Some(why) = terms.iter().find_map(|s| s.corruption()) {
        return Err(scorer_corruption(seg, why));
    }
    Ok((c.counted(), skipped))
}

/// `+a -b -c`: the pruned walk of `a`, the prohibited terms checked for competitive
/// documents only; with the exact count (no deletions) from doc ids alone,
/// `df(a) - |a ∩ (b ∪ c)|`, which costs less than scoring every match. `None` when the query
/// is not of that shape or this loop does not apply (`TopCount` without a fast count).
fn search_term_exclusion<L: LiveFilter>(
    weight: &Weight,
    seg: &SegmentReader,
    ord: usize,
    c: &mut LeafCollector<'_, L>,
    mode: SearchMode,
) -> Result<Option<(u64, bool)>> {
    let top_count = mode == SearchMode::TopCount && L::ALL_LIVE;
    if mode != SearchMode::Top && !top_count {
        return Ok(None);
    }
    let Some((req, not)) = weight.term_exclusion() else {
        return Ok(None);
    };
    let count = if top_count {
        weight.fast_count(seg, ord, c.budget_mut())?
    } else {
        None
    };
    if top_count && count.is_none() {
        return Ok(None);
    }
    let Some(mut t) = req.term_scorer(seg, ord)? else {
        return Ok(Some((0, false)));
    };
    let mut excl = Vec::with_capacity(not.len());
    for w in not {
        if let Some(mut x) = w.term_scorer(seg, ord)? {
            x.cursor_mut().set_docs_only();
            excl.push(x);
        }
    }
    let skipped = union::top_k_term_excluding(&mut t, &mut excl, c);
    if let Some(why) = std::iter::once(&t)
        .chain(&excl)
        .find_map(|s| s.corruption())
    {
        return Err(scorer_corruption(seg, why));
    }
    Ok(Some(match count {
        // A count or walk cut short by the deadline: the walk's lower bound stays.
        Some(_) if c.budget_mut().expired() => (c.counted(), true),
        Some(n) => {
            c.reset_count();
            c.count(n);
            (n, false)
        }
        None => (c.counted(), skipped),
    }))
}

/// The error of a scorer over `seg` that stopped on damaged bytes: in the file its failed check
/// named (`.pos`, `.norms`), else in the postings.
pub(crate) fn scorer_corruption(seg: &SegmentReader, why: Corruption) -> Error {
    let file = why.file.unwrap_or_else(|| format!("{}.post", seg.name()));
    Error::corrupt(file, why.reason)
}
/// Doc ids scored between two checks of the time budget in the exhaustive loops.
const CHUNK: u32 = 4096;

/// Scores one segment into the collector; returns whether documents were skipped (or the time
/// budget ran out).
fn collect_segment<S: Scorer + ?Sized, L: LiveFilter>(
    s: &mut S,
    c: &mut LeafCollector<'_, L>,
    mode: SearchMode,
) -> bool {
    let two_phase = s.is_two_phase();
    let mut skipped = false;
    let mut doc = s.doc();
    match mode {
        // Exhaustive modes run in chunks of doc ids; the time budget is checked between them.
        SearchMode::Count => {
            while doc != TERMINATED {
                let end = doc.saturating_add(CHUNK);
                while doc < end {
                    if c.is_live(doc) && (!two_phase || s.matches()) {
                        c.count(1);
                    }
                    doc = s.next();
                }
                if c.out_of_time() {
                    return true;
                }
            }
        }
        SearchMode::TopCount => {
            while doc != TERMINATED {
                let end = doc.saturating_add(CHUNK);
                while doc < end {
                    if c.is_live(doc) && (!two_phase || s.matches()) {
                        let score = s.score();
                        c.collect(doc, score);
                    }
                    doc = s.next();
                }
                if c.out_of_time() {
                    return true;
                }
            }
        }
        SearchMode::Top => {
            // Block-max skipping: a window whose best possible score cannot beat the k-th best
            // kept score is passed over using the skip tables only (no block is decoded).
            let mut target = doc;
            // The bar last told to the scorer (it can then skip documents below it itself).
            let mut told = f32::NEG_INFINITY;
            while target != TERMINATED {
                if c.out_of_time() {
                    return true;
                }
                if let Some(threshold) = c.threshold() {
                    if threshold > told {
                        told = threshold;
                        s.set_min_competitive(threshold);
                    }
                    let (end, max) = s.block_max(target);
                    if max < threshold {
                        skipped = true;
                        if end >= TERMINATED - 1 {
                            break;
                        }
                        target = end + 1;
                        continue;
                    }
                    // Competitive: score the window's documents.
                    let mut d = if s.doc() < target {
                        s.seek(target)
                    } else {
                        s.doc()
                    };
                    while d != TERMINATED && d <= end {
                        if c.is_live(d) && (!two_phase || s.matches()) {
                            let score = s.score();
                            c.collect(d, score);
                            if let Some(t) = c.threshold() {
                                if max < t {
                                    break;
                                }
                                if t > told {
                                    told = t;
                                    s.set_min_competitive(t);
                                }
                            }
                        }
                        d = s.next();
                    }
                    if d != TERMINATED && d <= end {
                        skipped = true;
                        target = end.saturating_add(1);
                    } else {
                        target = d;
                    }
                } else {
                    let d = if s.doc() < target {
                        s.seek(target)
                    } else {
                        s.doc()
                    };
                    if d == TERMINATED {
                        break;
                    }
                    if c.is_live(d) && (!two_phase || s.matches()) {
                        let score = s.score();
                        c.collect(d, score);
                    }
                    target = s.next();
                }
            }
        }
    }
    skipped
}
