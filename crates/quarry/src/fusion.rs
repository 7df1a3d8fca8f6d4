//! One ranking from several: reciprocal rank fusion and linear combination of the ranked lists
//! that separate retrievers (a text query, a kNN search) return, as Elasticsearch's `rrf` and
//! `linear` retrievers combine them.
//!
//! - [`rrf`]: each list is cut to the window, and a document scores
//!   `Σ weight / (rank_constant + rank)` over the lists that hold it, ranks from 1
//!   (Cormack, Clarke and Büttcher 2009; Elasticsearch's default `rank_constant` is 60 and every
//!   weight 1).
//! - [`linear`]: each list is cut to the window and its scores normalized (`none`, `minmax`, or
//!   `l2_norm`, as Elasticsearch's normalizers), and a document scores
//!   `Σ weight × normalized score`.
//!
//! Fused lists are sorted by score, ties by key (ascending), so the order is deterministic.
use std::collections::HashMap;
use std::hash::Hash;

/// Elasticsearch's default `rank_constant`.
pub const DEFAULT_RANK_CONSTANT: u32 = 60;

/// How a retriever's scores are brought to one scale before a linear combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Normalizer {
    /// Scores as they are.
    None,
    /// `(s - min) / (max - min)`; when every score is the same (within 1e-6), each becomes 1.
    MinMax,
    /// `s / sqrt(Σ s²)`; unchanged when that norm is below 1e-6.
    L2Norm,
}

impl Normalizer {
    /// The normalizer Elasticsearch calls `name`.
    pub fn from_name(name: &str) -> Option<Normalizer> {
        match name {
            "none" => Some(Normalizer::None),
            "minmax" => Some(Normalizer::MinMax),
            "l2_norm" => Some(Normalizer::L2Norm),
            _ => None,
        }
    }

    fn apply(self, scores: &mut [f32]) {
        const EPSILON: f32 = 1e-6;
        match self {
            Normalizer::None => {}
            Normalizer::MinMax => {
                let (min, max) = scores
                    .iter()
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &s| {
                        (lo.min(s), hi.max(s))
                    });
                if (max - min).abs() < EPSILON {
                    scores.iter_mut().for_each(|s| *s = 1.0);
                } else {
                    scores
                        .iter_mut()
                        .for_each(|s| *s = (*s - min) / (max - min));
                }
            }
            Normalizer::L2Norm => {
                let norm = scores
                    .iter()
                    .map(|&s| f64::from(s) * f64::from(s))
                    .sum::<f64>()
                    .sqrt();
                if norm >= f64::from(EPSILON) {
                    scores
                        .iter_mut()
                        .for_each(|s| *s = (f64::from(*s) / norm) as f32);
                }
            }
        }
    }
}

fn sorted<K: Ord>(scores: HashMap<K, f32>) -> Vec<(K, f32)> {
    let mut out: Vec<(K, f32)> = scores.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Reciprocal rank fusion of `lists` (each a weight and keys best first), each cut to its first
/// `window` keys; `rank_constant` is at least 1.
pub fn rrf<K: Clone + Eq + Hash + Ord>(
    lists: &[(f32, &[K])],
    rank_constant: u32,
    window: usize,
) -> Vec<(K, f32)> {
    let k = rank_constant.max(1) as f32;
    let mut scores: HashMap<K, f32> = HashMap::new();
    for &(weight, keys) in lists {
        for (i, key) in keys.iter().take(window).enumerate() {
            *scores.entry(key.clone()).or_insert(0.0) += weight / (k + (i + 1) as f32);
        }
    }
    sorted(scores)
}

/// One retriever's part in a [`linear`] combination: its weight, its normalizer and its
/// `(key, score)` pairs, best first.
pub type Weighted<'a, K> = (f32, Normalizer, &'a [(K, f32)]);

/// Linear combination of `lists` (each a weight, a normalizer and `(key, score)` pairs best
/// first), each cut to its first `window` pairs.
pub fn linear<K: Clone + Eq + Hash + Ord>(
    lists: &[Weighted<'_, K>],
    window: usize,
) -> Vec<(K, f32)> {
    let mut scores: HashMap<K, f32> = HashMap::new();
    for &(weight, normalizer, hits) in lists {
        let hits = &hits[..hits.len().min(window)];
        let mut s: Vec<f32> = hits.iter().map(|h| h.1).collect();
        normalizer.apply(&mut s);
        for ((key, _), n) in hits.iter().zip(s) {
            *scores.entry(key.clone()).or_insert(0.0) += weight * n;
        }
    }
    sorted(scores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let text = ["a", "b", "c"];
        let knn = ["c", "a", "d"];
        let fused = rrf(&[(1.0, &text[..]), (1.0, &knn[..])], 60, 10);
        let want = [
            ("a", 1.0 / 61.0 + 1.0 / 62.0),
            ("c", 1.0 / 63.0 + 1.0 / 61.0),
            ("b", 1.0 / 62.0),
            ("d", 1.0 / 63.0),
        ];
        assert_eq!(fused.len(), 4);
        for ((k, s), (wk, ws)) in fused.iter().zip(want) {
            assert_eq!(*k, wk);
            assert!((s - ws).abs() < 1e-7, "{k}: {s} vs {ws}");
        }
        // A window of 1 keeps only each list's first; equal scores rank by key.
        let fused = rrf(&[(1.0, &text[..]), (1.0, &knn[..])], 1, 1);
        assert_eq!(fused, vec![("a", 0.5), ("c", 0.5)]);
        // Weights scale each list's part.
        let fused = rrf(&[(2.0, &text[..]), (1.0, &knn[..])], 60, 10);
        assert_eq!(fused[0].0, "a");
        assert!((fused[0].1 - (2.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-7);
    }

    #[test]
    fn linear_normalizes_then_weighs() {
        let bm25 = [(1u32, 12.0f32), (2, 8.0), (3, 4.0)];
        let knn = [(3u32, 0.9f32), (4, 0.7)];
        let fused = linear(
            &[
                (1.0, Normalizer::MinMax, &bm25[..]),
                (2.0, Normalizer::MinMax, &knn[..]),
            ],
            10,
        );
        // bm25: 1 -> 1, 2 -> 0.5, 3 -> 0; knn: 3 -> 1, 4 -> 0.
        assert_eq!(fused, vec![(3, 2.0), (1, 1.0), (2, 0.5), (4, 0.0)]);
        let one = [(7u32, 3.0f32)];
        assert_eq!(
            linear(&[(1.0, Normalizer::MinMax, &one[..])], 10),
            vec![(7, 1.0)]
        );
        let l2 = [(1u32, 3.0f32), (2, 4.0)];
        let fused = linear(&[(1.0, Normalizer::L2Norm, &l2[..])], 10);
        assert_eq!(fused, vec![(2, 0.8), (1, 0.6)]);
        let fused = linear(&[(0.5, Normalizer::None, &l2[..])], 1);
        assert_eq!(fused, vec![(1, 1.5)]);
        assert_eq!(Normalizer::from_name("minmax"), Some(Normalizer::MinMax));
        assert_eq!(Normalizer::from_name("zscore"), None);
    }
}
