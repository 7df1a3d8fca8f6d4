//! How many documents of a segment match, without scoring: exact counts of term conjunctions,
//! exclusions and small unions from doc ids alone (no freqs decoded, nothing scored), using
//! document frequencies where they answer directly.
//!
//! - `+a +b ...` (required terms, any optional clauses, which never change the matching set when
//!   something is required): a leapfrog intersection led by the rarest term, seeking the others
//!   through their skip tables so only blocks that can hold the lead's documents are decoded.
//! - `+a ... -b -c`: `count(A) - |A ∩ (b ∪ c)|`. With one required term, `count(A)` is its
//!   document frequency and the overlap, for two or more excluded terms, one leapfrog between
//!   `a` and the union of the excluded terms (whichever side is sparser leads); with several
//!   required terms, inclusion–exclusion over intersections (each led by its rarest term, so
//!   rare excluded terms cost little).
//! - `a b` (two optional terms, nothing else): `df(a) + df(b) - |a ∩ b|`.
use quarry_store::Bytes;

use super::collector::Budget;
use super::scorer::TERMINATED;
use super::scorer_corruption;
use crate::codec::postings::{Corruption, PostingsCursor, TermInfo};
use crate::index::SegmentReader;
use crate::Result;

/// Excluded terms handled by inclusion–exclusion (2^n - 1 intersections).
pub const MAX_EXCLUDED: usize = 3;

/// A term's entry in one segment.
#[derive(Clone, Copy)]
pub struct CountTerm<'a> {
    pub field: u32,
    pub info: &'a TermInfo,
    pub bytes: &'a Bytes,
}

impl CountTerm<'_> {
    fn doc_freq(&self) -> u64 {
        u64::from(self.info.doc_freq)
    }
    fn open(&self, seg: &SegmentReader) -> Result<PostingsCursor> {
        seg.postings(self.field, self.info, self.bytes, false)
    }
}

/// Leapfrog steps between two reads of the clock when the search has a deadline.
const STEPS_PER_CHECK: u32 = 4096;

/// The number of documents holding every one of `cursors` (doc ids only). When `budget` runs
/// out the count stops early (the caller sees `budget.expired()` and drops it).
pub fn count_and(
    seg: &SegmentReader,
    mut cursors: Vec<PostingsCursor>,
    budget: &mut Budget,
) -> Result<u64> {
    if cursors.is_empty() {
        return Ok(0);
    }
    cursors.sort_by_key(|c| c.doc_freq());
    for c in cursors.iter_mut() {
        c.set_docs_only();
    }
    if cursors.len() > 1 && DenseAnd::pays(cursors[0].doc_freq(), cursors[0].max_doc()) {
        let (count, and) = count_and_dense(cursors, budget);
        if let Some(why) = and.corruption() {
            return Err(scorer_corruption(seg, why));
        }
        return Ok(count);
    }
    let (lead, rest) = cursors.split_first_mut().expect("non-empty");
    let mut count = 0u64;
    let mut target = lead.doc();
    let mut steps = 0u32;
    'outer: while target != TERMINATED {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(STEPS_PER_CHECK) && budget.check_now() {
            break;
        }
        for c in rest.iter_mut() {
            let d = c.seek(target);
            if d != target {
                target = lead.seek(d);
                continue 'outer;
            }
        }
        count += 1;
        target = lead.next();
    }
    if let Some(why) = cursors.iter().find_map(PostingsCursor::corruption) {
        return Err(scorer_corruption(seg, why));
    }
    Ok(count)
}

/// A conjunction whose rarest term is in at least one document in this many is counted with
/// bitsets: a leapfrog would seek every other term for nearly every document of the lead.
const DENSE_LEAD: u64 = 16;
/// Doc ids per window of the bitset intersection.
const AND_WINDOW: u32 = 1 << 15;

/// The documents holding every one of several common terms, a window of 32768 doc ids at a
/// time: each term's documents are marked in a bitset (dense blocks ORed in as they lie) and
/// the bitsets ANDed. Windows where the rarest term has no document are never built. Counts
/// of such conjunctions pop the bits; phrases of common words take their candidates from it
/// instead of leapfrogging through every document of the rarest word.
pub struct DenseAnd {
    /// Doc-ids-only cursors, rarest first.
    cursors: Vec<PostingsCursor>,
    acc: Vec<u64>,
    tmp: Vec<u64>,
    /// The window in `acc`: `[base, base + AND_WINDOW)`; none yet while `built` is false.
    base: u32,
    built: bool,
}

impl DenseAnd {
    /// Whether a conjunction whose rarest term is in `min_df` of `max_doc` documents is better
    /// served by bitsets than by a leapfrog.
    pub fn pays(min_df: u32, max_doc: u32) -> bool {
        u64::from(min_df) * DENSE_LEAD >= u64::from(max_doc)
    }

    /// `cursors`: one per term, freshly opened (at least two).
    pub fn new(mut cursors: Vec<PostingsCursor>) -> Self {
        cursors.sort_by_key(|c| c.doc_freq());
        for c in cursors.iter_mut() {
            c.set_docs_only();
        }
        let words = (AND_WINDOW / 64) as usize;
        Self {
            cursors,
            acc: vec![0; words],
            tmp: vec![0; words],
            base: 0,
            built: false,
        }
    }

    /// Builds the next window holding a document of the rarest term `>= from`; `None` when
    /// there is none. Returns its base and its bits (bit `i` = document `base + i`).
    fn window(&mut self, from: u32) -> Option<(u32, &[u64])> {
        let lead = &mut self.cursors[0];
        if lead.doc() < from {
            lead.seek(from);
        }
        let first = lead.doc();
        if first == TERMINATED {
            return None;
        }
        let base = first / AND_WINDOW * AND_WINDOW;
        let end = base.saturating_add(AND_WINDOW);
        self.acc.fill(0);
        lead.mark_until(base, end, &mut self.acc);
        for c in self.cursors[1..].iter_mut() {
            if c.doc() < first {
                c.seek(first);
            }
            c.mark_until(base, end, &mut self.tmp);
            let mut any = 0u64;
            for (a, t) in self.acc.iter_mut().zip(self.tmp.iter_mut()) {
                *a &= *t;
                *t = 0;
                any |= *a;
            }
            if any == 0 {
                break;
            }
        }
        self.base = base;
        self.built = true;
        Some((base, &self.acc))
    }

    /// Whether `target` lies in the window already built (answering for it costs no marking).
    pub fn covers(&self, target: u32) -> bool {
        self.built && target >= self.base && target - self.base < AND_WINDOW
    }

    /// The first document `>= target` holding every term, or [`TERMINATED`].
    pub fn next_from(&mut self, mut target: u32) -> u32 {
        loop {
            if target == TERMINATED {
                return TERMINATED;
            }
            if (!self.built || target >= self.base.saturating_add(AND_WINDOW))
                && self.window(target).is_none()
            {
                return TERMINATED;
            }
            let end = self.base.saturating_add(AND_WINDOW);
            let mut p = target.max(self.base) - self.base;
            while p < AND_WINDOW {
                let w = (p / 64) as usize;
                let x = self.acc[w] & (!0u64 << (p % 64));
                if x != 0 {
                    return self.base + (w as u32) * 64 + x.trailing_zeros();
                }
                p = (w as u32 + 1) * 64;
            }
            target = end;
        }
    }

    /// An inconsistency met in the postings, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.cursors.iter().find_map(PostingsCursor::corruption)
    }
}

/// [`count_and`] for common terms, through [`DenseAnd`].
fn count_and_dense(cursors: Vec<PostingsCursor>, budget: &mut Budget) -> (u64, DenseAnd) {
    let mut and = DenseAnd::new(cursors);
    let mut count = 0u64;
    let mut from = 0;
    while !budget.check_now() {
        let Some((base, bits)) = and.window(from) else {
            break;
        };
        count += quarry_codecs::popcount::count_ones(bits);
        from = base.saturating_add(AND_WINDOW);
    }
    (count, and)
}

/// The number of documents of `a` holding at least one of `others` (doc ids only): a leapfrog
/// between `a` and the union of `others`, so whichever side is sparser leads; each cursor is read
/// once. Stops early when `budget` runs out (the caller then discards the count).
fn count_and_union(
    a: &mut PostingsCursor,
    others: &mut [PostingsCursor],
    budget: &mut Budget,
) -> u64 {
    a.set_docs_only();
    for c in others.iter_mut() {
        c.set_docs_only();
    }
    let union_seek = |others: &mut [PostingsCursor], target: u32| -> u32 {
        let mut u = TERMINATED;
        for c in others.iter_mut() {
            u = u.min(c.seek(target));
        }
        u
    };
    let mut count = 0u64;
    let mut d = a.doc();
    let mut u = union_seek(others, d);
    let mut steps = 0u32;
    while d != TERMINATED && u != TERMINATED {
        steps = steps.wrapping_add(1);
        if steps.is_multiple_of(STEPS_PER_CHECK) && budget.check_now() {
            break;
        }
        if d < u {
            d = a.seek(u);
        } else if u < d {
            u = union_seek(others, d);
        } else {
            count += 1;
            d = a.next();
        }
    }
    count
}

/// The number of documents holding all of `required` and none of `excluded`
/// (`excluded.len() <= MAX_EXCLUDED`, `required` non-empty).
pub fn count_req_excl(
    seg: &SegmentReader,
    required: &[CountTerm],
    excluded: &[CountTerm],
    budget: &mut Budget,
) -> Result<u64> {
    debug_assert!(!required.is_empty() && excluded.len() <= MAX_EXCLUDED);
    let open = |terms: &[CountTerm]| -> Result<Vec<PostingsCursor>> {
        terms.iter().map(|t| t.open(seg)).collect()
    };
    if let [t] = required {
        if excluded.is_empty() {
            return Ok(t.doc_freq());
        }
        if let [x] = excluded {
            // `df(a) - |a ∩ b|`: a plain intersection, led by the rarer term.
            return Ok(t
                .doc_freq()
                .saturating_sub(count_and(seg, open(&[*t, *x])?, budget)?));
        }
        // Two or more excluded terms, in one pass: `df(a) - |a ∩ (b ∪ c ...)|`, a leapfrog
        // between `a` and the union (instead of 2^n - 1 intersections).
        let mut a = t.open(seg)?;
        let mut others = open(excluded)?;
        let overlap = count_and_union(&mut a, &mut others, budget);
        if let Some(why) = std::iter::once(&a)
            .chain(&others)
            .find_map(PostingsCursor::corruption)
        {
            return Err(scorer_corruption(seg, why));
        }
        return Ok(t.doc_freq().saturating_sub(overlap));
    }
    let req: Vec<CountTerm> = required.to_vec();
    let base = count_and(seg, open(&req)?, budget)?;
    // |A ∩ (b1 ∪ ... ∪ bn)| by inclusion–exclusion.
    let mut overlap = 0i64;
    for mask in 1u32..(1 << excluded.len()) {
        let mut terms = req.clone();
        terms.extend(
            excluded
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, t)| *t),
        );
        if budget.expired() {
            break;
        }
        let n = count_and(seg, open(&terms)?, budget)? as i64;
        if mask.count_ones() % 2 == 1 {
            overlap += n;
        } else {
            overlap -= n;
        }
    }
    Ok(base.saturating_sub(overlap.max(0) as u64))
}

/// `count_or2` leaves a union to the marking pass (`union::exhaustive`) instead of counting the
/// intersection when the commoner term is in at least an eighth of the documents (its blocks
/// are mostly bitsets, ORed in a few words each) and the rarer one has more than 1/256 of its
/// documents (each costs the leapfrog a seek): `the movement` in W2 counts in 120 µs instead of
/// 214 (`bench/results/counts-2026-11-26.md`).
const OR_MARK_RATIO: u64 = 256;

/// The number of documents holding `a` or `b` as `df(a) + df(b) − |a ∩ b|`; `None` when a
/// leapfrog through a very common term would cost more than marking the union (the caller's
/// exhaustive pass then counts it).
pub fn count_or2(
    seg: &SegmentReader,
    a: &CountTerm,
    b: &CountTerm,
    budget: &mut Budget,
) -> Result<Option<u64>> {
    let (lo, hi) = if a.doc_freq() <= b.doc_freq() {
        (a.doc_freq(), b.doc_freq())
    } else {
        (b.doc_freq(), a.doc_freq())
    };
    if hi * 8 >= u64::from(seg.doc_count()) && lo * OR_MARK_RATIO > hi {
        return Ok(None);
    }
    let both = count_and(seg, vec![a.open(seg)?, b.open(seg)?], budget)?;
    Ok(Some((a.doc_freq() + b.doc_freq()).saturating_sub(both)))
}
