//! Pairs of frequent words (format v6): text fields also index every two adjacent tokens that
//! are both on a short list of very frequent English words (`of the`, `to be`) as one term of
//! the field's pair dictionary, at the position of the first word.
//!
//! A phrase of such words (`"to be or not to be"`) then reads the short postings of a few pairs
//! instead of the longest lists of the index: `to be` at 0, `or not` at 2 and `to be` at 4 match
//! exactly where the six words do. Scores do not change: the idf still comes from the words, the
//! length norm from the field, and the phrase frequency counts the same matches. This is
//! Lucene's CommonGrams idea, kept out of the field's own terms and statistics.
//!
//! The list is Lucene's English stop-word set (`EnglishAnalyzer`) plus `who`, a function word
//! about as frequent in English text as `such` and `into`, which the set has. On W2 the pairs
//! cost 10 of 328 bytes per document (`bench/results/2026-11-26-w2.md` against the reports of
//! `bbde47e`). A segment records the list it was written with; a segment written with another
//! list (or none) answers phrases from the words alone.

/// The frequent words, sorted. Changing the list changes what new segments index; segments
/// keep answering correctly as they record the list they used.
pub const WORDS: [&str; 34] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "who", "will", "with",
];

/// The byte between the two words of a pair term (never inside a listed word).
pub const SEPARATOR: u8 = b' ';

/// Whether `word` is on the list.
pub fn is_frequent(word: &str) -> bool {
    WORDS.binary_search(&word).is_ok()
}

/// Whether `words` is this build's list (a segment's recorded list).
pub fn is_current(words: &[String]) -> bool {
    words.len() == WORDS.len() && words.iter().zip(WORDS).all(|(a, b)| a == b)
}

/// The list, as a segment records it.
pub fn current() -> Vec<String> {
    WORDS.iter().map(|w| w.to_string()).collect()
}

/// The pair term of two adjacent words: `a SEPARATOR b`.
pub fn pair_term(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + 1 + b.len());
    s.push_str(a);
    s.push(SEPARATOR as char);
    s.push_str(b);
    s
}

/// One piece of a phrase's cover: a word (`pair: false`) or the pair starting at `term`
/// (`pair: true`, covering `term` and `term + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the (first) phrase term.
    pub term: usize,
    pub pair: bool,
}

/// The pieces that answer an exact phrase: `pairable[i]` says whether terms `i` and `i + 1`
/// are both frequent and at adjacent offsets; `cost` is a piece's document frequency. Every
/// term is covered by at least one piece, so the pieces match exactly where the phrase does.
/// A term joined to a neighbour is covered by pairs only (a pair is never in more documents
/// than its words); the others are words. Pairs are taken rarest first while they cover a term
/// not yet covered: `"to be or not to be"` leads with `be or` or `or not`, whichever is rarer,
/// rather than with a list as long as `to be`'s.
pub fn cover(pairable: &[bool], terms: usize, cost: impl Fn(Piece) -> u64) -> Vec<Piece> {
    let joined = |t: usize| (t > 0 && pairable[t - 1]) || pairable.get(t).copied().unwrap_or(false);
    let mut out: Vec<Piece> = (0..terms)
        .filter(|&t| !joined(t))
        .map(|term| Piece { term, pair: false })
        .collect();
    let mut pairs: Vec<Piece> = (0..terms.saturating_sub(1))
        .filter(|&t| pairable[t])
        .map(|term| Piece { term, pair: true })
        .collect();
    pairs.sort_by_key(|&p| (cost(p), p.term));
    // Times each term is covered by a taken pair.
    let mut covered = vec![0u32; terms];
    let mut taken = Vec::new();
    for p in pairs {
        if covered[p.term] == 0 || covered[p.term + 1] == 0 {
            covered[p.term] += 1;
            covered[p.term + 1] += 1;
            taken.push(p);
        }
    }
    // Then the dearest first, drop a pair whose two terms other pairs cover (`be or` after
    // `to be` and `or not`).
    for i in (0..taken.len()).rev() {
        let p = taken[i];
        if covered[p.term] > 1 && covered[p.term + 1] > 1 {
            covered[p.term] -= 1;
            covered[p.term + 1] -= 1;
            taken.remove(i);
        }
    }
    out.extend(taken);
    out.sort_by_key(|p| p.term);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_list_is_sorted_and_unique() {
        assert!(WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(WORDS.iter().all(|w| !w.as_bytes().contains(&SEPARATOR)));
        assert!(is_frequent("the") && is_frequent("who") && !is_frequent("beatles"));
        assert!(is_current(&current()));
    }

    fn p(term: usize, pair: bool) -> Piece {
        Piece { term, pair }
    }

    #[test]
    fn covers_runs_with_the_rarest_pairs_and_the_rest_with_words() {
        let flat = |_: Piece| 1;
        // to be or not to be: at equal costs, redundant pairs are dropped again.
        assert_eq!(
            cover(&[true; 5], 6, flat),
            vec![p(0, true), p(2, true), p(4, true)]
        );
        // `or not` (at 2) rarest, then `to be` (0 and 4) before `be or` / `not to`.
        let cost = |x: Piece| match x.term {
            2 => 10,
            0 | 4 => 100,
            _ => 1000,
        };
        assert_eq!(
            cover(&[true; 5], 6, cost),
            vec![p(0, true), p(2, true), p(4, true)]
        );
        // `be or` (1) and `not to` (3) rarest: they leave only the ends to `to be`.
        let cost = |x: Piece| if x.term % 2 == 1 { 5 } else { 50 };
        assert_eq!(
            cover(&[true; 5], 6, cost),
            vec![p(0, true), p(1, true), p(3, true), p(4, true)]
        );
        // it is a
        assert_eq!(cover(&[true, true], 3, flat), vec![p(0, true), p(1, true)]);
        // the who
        assert_eq!(cover(&[true], 2, flat), vec![p(0, true)]);
        // the beatles
        assert_eq!(cover(&[false], 2, flat), vec![p(0, false), p(1, false)]);
        // of the united states of america
        assert_eq!(
            cover(&[true, false, false, false, false], 6, flat),
            vec![
                p(0, true),
                p(2, false),
                p(3, false),
                p(4, false),
                p(5, false)
            ]
        );
        assert_eq!(cover(&[], 1, flat), vec![p(0, false)]);
        assert_eq!(cover(&[], 0, flat), vec![]);
    }

    proptest! {
        /// Every term is covered, pairs only where allowed, and no frequent word joined to a
        /// neighbour is read alone.
        #[test]
        fn every_term_is_covered_by_allowed_pieces(
            pairable in prop::collection::vec(any::<bool>(), 0..12),
            costs in prop::collection::vec(0u64..5, 13),
        ) {
            let terms = pairable.len() + 1;
            let pieces = cover(&pairable, terms, |p| costs[p.term]);
            let mut covered = vec![false; terms];
            for pc in &pieces {
                covered[pc.term] = true;
                if pc.pair {
                    prop_assert!(pairable[pc.term]);
                    covered[pc.term + 1] = true;
                } else {
                    let joined = (pc.term > 0 && pairable[pc.term - 1])
                        || pairable.get(pc.term).copied().unwrap_or(false);
                    prop_assert!(!joined, "term {} read alone in {:?}", pc.term, pieces);
                }
            }
            prop_assert!(covered.iter().all(|&c| c));
            prop_assert!(pieces.len() <= terms);
            // Distinct pieces, and no pair is redundant: each covers a term no other piece does.
            prop_assert!(pieces.windows(2).all(|w| w[0].term < w[1].term));
            for (i, pc) in pieces.iter().enumerate().filter(|(_, pc)| pc.pair) {
                let by_others = |t: usize| pieces.iter().enumerate().any(|(j, o)| {
                    j != i && (o.term == t || (o.pair && o.term + 1 == t))
                });
                prop_assert!(!(by_others(pc.term) && by_others(pc.term + 1)), "{:?} redundant in {:?}", pc, pieces);
            }
        }
    }
}
