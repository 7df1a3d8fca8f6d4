//! Lucene's BM25, with its exact float arithmetic so that scores (and therefore ties and
//! rankings) match Lucene's: idf = ln(1 + (N - df + 0.5) / (df + 0.5)) in f64 then f32, the
//! document length decoded from the one-byte norm, avgdl = sumTotalTermFreq / docCount, and
//! score = w - w / (1 + freq * normInverse) with w = boost * idf (no (k1 + 1) factor).
use std::sync::Arc;

use crate::codec::norms::length_table;

/// BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25 {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self { k1: 1.2, b: 0.75 }
    }
}

/// Collection statistics of a field, summed over segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FieldStats {
    pub doc_count: u64,
    pub sum_total_term_freq: u64,
}

impl Bm25 {
    /// Lucene's `idf(docFreq, docCount)`.
    pub fn idf(doc_freq: u64, doc_count: u64) -> f32 {
        (1.0f64 + (doc_count as f64 - doc_freq as f64 + 0.5) / (doc_freq as f64 + 0.5)).ln() as f32
    }

    /// Lucene's `avgFieldLength`.
    pub fn avgdl(stats: &FieldStats) -> f32 {
        if stats.doc_count == 0 {
            return 1.0;
        }
        (stats.sum_total_term_freq as f64 / stats.doc_count as f64) as f32
    }

    /// The per-norm factors `1 / (k1 * (1 - b + b * len / avgdl))` of a field: computed once
    /// per searcher and field, shared by every query.
    pub fn norm_cache(&self, stats: &FieldStats) -> Arc<[f32; 256]> {
        let avgdl = Self::avgdl(stats);
        let lengths = length_table();
        let mut cache = [0f32; 256];
        for (c, &len) in cache.iter_mut().zip(lengths.iter()) {
            *c = 1.0 / (self.k1 * ((1.0 - self.b) + self.b * len / avgdl));
        }
        Arc::new(cache)
    }

    /// A scorer for one term (or phrase: `idf` is then the sum of its terms' idfs).
    pub fn scorer(&self, boost: f32, idf: f32, stats: &FieldStats) -> SimScorer {
        SimScorer {
            weight: boost * idf,
            cache: self.norm_cache(stats),
        }
    }
}

/// Scores (freq, norm) pairs for one term or phrase.
#[derive(Clone, Debug)]
pub struct SimScorer {
    pub weight: f32,
    cache: Arc<[f32; 256]>,
}

impl SimScorer {
    /// A scorer over a field's precomputed norm cache.
    pub fn with_cache(boost: f32, idf: f32, cache: Arc<[f32; 256]>) -> Self {
        Self {
            weight: boost * idf,
            cache,
        }
    }
}

impl SimScorer {
    #[inline]
    pub fn score(&self, freq: f32, norm: u8) -> f32 {
        let norm_inverse = self.cache[norm as usize];
        self.score_factor(freq * norm_inverse)
    }

    /// The per-norm factors: `score(freq, norm)` is `score_factor(freq * factors()[norm])`.
    #[inline]
    pub fn factors(&self) -> &[f32; 256] {
        &self.cache
    }

    /// The score of `freq * factor` (see [`factors`](Self::factors)); non-decreasing in it, so
    /// the best of several (freq, norm) pairs is the score of their largest product.
    #[inline]
    pub fn score_factor(&self, freq_times_factor: f32) -> f32 {
        self.weight - self.weight / (1.0 + freq_times_factor)
    }

    /// The smallest `freq * factor` product (as given to [`score_factor`](Self::score_factor))
    /// whose score reaches `th`: `m < min_factor(th)` exactly when `score_factor(m) < th`, for
    /// every `m >= 0`, because `score_factor` is monotone in float arithmetic too (each of its
    /// operations is). Lets scoring loops compare products instead of dividing per document.
    /// `NEG_INFINITY` when every product reaches `th` (no pruning), `INFINITY` when none does.
    pub fn min_factor(&self, th: f32) -> f32 {
        if th.is_nan() || self.weight.is_nan() || self.score_factor(0.0) >= th {
            return f32::NEG_INFINITY;
        }
        if self.score_factor(f32::MAX) < th {
            return f32::INFINITY;
        }
        // Now score(0) < th <= score(MAX). Start at the algebraic inverse, then step to the
        // exact boundary; after a few steps, fall back to bisection over the bit patterns
        // (non-negative floats order like their bits).
        let w = self.weight;
        let guess = w / (w - th) - 1.0;
        let mut m = if guess.is_finite() {
            guess.clamp(0.0, f32::MAX)
        } else {
            f32::MAX
        };
        for _ in 0..8 {
            if self.score_factor(m) >= th {
                let down = m.next_down();
                if down < 0.0 || self.score_factor(down) < th {
                    return m;
                }
                m = down;
            } else {
                m = m.next_up();
            }
        }
        let (mut lo, mut hi) = (0u32, f32::MAX.to_bits());
        // Invariant: score(lo) < th <= score(hi).
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.score_factor(f32::from_bits(mid)) >= th {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        f32::from_bits(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_in_freq_and_norm() {
        let s = Bm25::default().scorer(
            1.0,
            Bm25::idf(10, 1000),
            &FieldStats {
                doc_count: 1000,
                sum_total_term_freq: 100_000,
            },
        );
        for n in 1..255u8 {
            assert!(s.score(1.0, n) >= s.score(1.0, n + 1));
            assert!(s.score(2.0, n) >= s.score(1.0, n));
        }
        assert!(s.score(1000.0, 1) < s.weight);
    }

    proptest::proptest! {
        /// `min_factor` is the exact boundary: products below it score below the threshold,
        /// it and the products above reach it.
        #[test]
        fn min_factor_is_the_exact_boundary(
            boost in 0.01f32..10.0,
            df in 1u64..1_000_000,
            th_frac in 0.0f32..1.2,
            m_probe in 0.0f32..1000.0,
        ) {
            let s = SimScorer::with_cache(boost, Bm25::idf(df, 1_000_000), Arc::new([1.0; 256]));
            let th = s.weight * th_frac;
            let m = s.min_factor(th);
            if m == f32::INFINITY {
                proptest::prop_assert!(s.score_factor(f32::MAX) < th);
            } else if m == f32::NEG_INFINITY {
                proptest::prop_assert!(s.score_factor(0.0) >= th);
            } else {
                proptest::prop_assert!(s.score_factor(m) >= th);
                proptest::prop_assert!(s.score_factor(m.next_down()) < th);
            }
            proptest::prop_assert_eq!(m_probe < m, s.score_factor(m_probe) < th);
            // Probes right at the boundary.
            if m.is_finite() {
                for p in [m.next_down(), m, m.next_up()] {
                    if p >= 0.0 {
                        proptest::prop_assert_eq!(p < m, s.score_factor(p) < th);
                    }
                }
            }
        }
    }

    #[test]
    fn min_factor_of_real_scores() {
        let s = Bm25::default().scorer(
            1.0,
            Bm25::idf(803_825, 1_218_896),
            &FieldStats {
                doc_count: 1_218_896,
                sum_total_term_freq: 60_000_000,
            },
        );
        for f in 1..50u32 {
            for n in 0..=255u8 {
                let th = s.score(f as f32, n);
                let m = s.min_factor(th);
                let exact = f as f32 * s.factors()[n as usize];
                assert!(
                    m <= exact,
                    "the product of the threshold's own hit reaches it"
                );
                if m == f32::NEG_INFINITY {
                    // Very long documents: the product rounds away and the score is 0.
                    assert!(s.score_factor(0.0) >= th, "{f} {n}");
                } else {
                    assert!(s.score_factor(m) >= th && s.score_factor(m.next_down()) < th);
                }
            }
        }
    }
}
