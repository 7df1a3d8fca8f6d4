//! Vectors in a quarter of the bytes: each value scaled into 0..=127 and kept as one byte (7
//! bits, as Lucene's default scalar quantization), with one correction term per vector so that
//! comparing two quantized vectors estimates the comparison of the originals with integer dot
//! products only.
//!
//! **The scale.** One interval `[lo, hi]` per segment and field, from the quantiles of a sample
//! of the values (Lucene's confidence interval: the middle `1 - 1 / (dims + 1)` of the values,
//! at least 90 %), so that a few outliers do not stretch the scale. A value `x` becomes
//! `q = round(127 * (clamp(x, lo, hi) - lo) / (hi - lo))`, read back as `lo + α q` with
//! `α = (hi - lo) / 127`.
//!
//! **The estimates.** With every value read back as `lo + α q`:
//! - `a · b ≈ α² (qa · qb) + ca + cb`, where a vector's correction is
//!   `c = lo α Σq + dims lo² / 2`;
//! - `|a - b|² ≈ α² |qa - qb|² = ca + cb - 2 α² (qa · qb)`, where `c = α² |q|²`.
//!
//! Both need only `qa · qb`, the `i8` kernel of `quarry_codecs::distance`. The estimate ranks
//! candidates; the best of them are then scored again with the full vectors (re-scoring), so
//! the scores a search returns are exact.
use quarry_codecs::distance::VectorKernel;

use super::{FlatVectors, Similarity, VectorSource};

/// The largest quantized value (7 bits: products and their sums stay far from overflow).
pub const MAX_Q: f32 = 127.0;

/// At most this many values are sampled to find the interval.
const SAMPLE_VALUES: usize = 1 << 20;

/// One field's scale: every value is clamped to `[lo, hi]` and mapped onto 0..=127.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalarQuantizer {
    lo: f32,
    hi: f32,
}

impl ScalarQuantizer {
    /// The confidence interval Lucene uses by default for `dims` dimensions.
    pub fn default_confidence(dims: usize) -> f32 {
        (1.0 - 1.0 / (dims as f32 + 1.0)).max(0.9)
    }

    /// A quantizer with the given interval (`lo <= hi`, both finite); `None` otherwise.
    pub fn from_bounds(lo: f32, hi: f32) -> Option<ScalarQuantizer> {
        (lo.is_finite() && hi.is_finite() && lo <= hi).then_some(ScalarQuantizer { lo, hi })
    }

    /// The interval holding the middle `confidence` (0 < c <= 1) of the values of `vectors`,
    /// from an evenly spread sample of at most 2²⁰ values. An empty set gives `[0, 0]`.
    pub fn fit(vectors: &FlatVectors, confidence: f32) -> ScalarQuantizer {
        let values = vectors.values();
        if values.is_empty() {
            return ScalarQuantizer { lo: 0.0, hi: 0.0 };
        }
        let dims = vectors.dims();
        let n = vectors.len();
        // Whole vectors, evenly spaced, up to the sample size.
        let take = (SAMPLE_VALUES / dims).clamp(1, n);
        let mut sample: Vec<f32> = Vec::with_capacity(take * dims);
        for i in 0..take {
            let ord = (i as u64 * n as u64 / take as u64) as u32;
            sample.extend(vectors.vector(ord).iter().filter(|x| x.is_finite()));
        }
        if sample.is_empty() {
            return ScalarQuantizer { lo: 0.0, hi: 0.0 };
        }
        let c = confidence.clamp(f32::MIN_POSITIVE, 1.0) as f64;
        let last = sample.len() - 1;
        let lower = (((1.0 - c) / 2.0) * last as f64).round() as usize;
        let upper = (((1.0 + c) / 2.0) * last as f64).round() as usize;
        let lo = *sample.select_nth_unstable_by(lower, f32::total_cmp).1;
        let hi = *sample.select_nth_unstable_by(upper, f32::total_cmp).1;
        ScalarQuantizer { lo, hi }
    }

    /// The interval `(lo, hi)`.
    pub fn bounds(&self) -> (f32, f32) {
        (self.lo, self.hi)
    }

    /// `α`: the width of one quantization step.
    fn alpha(&self) -> f32 {
        (self.hi - self.lo) / MAX_Q
    }

    /// Quantizes `v` into `out` (same length) and returns its correction term for `similarity`.
    pub fn quantize(&self, similarity: Similarity, v: &[f32], out: &mut [i8]) -> f32 {
        assert_eq!(v.len(), out.len(), "vector and output of different lengths");
        let width = self.hi - self.lo;
        let scale = if width > 0.0 { MAX_Q / width } else { 0.0 };
        let mut sum = 0i64;
        let mut squares = 0i64;
        for (x, q) in v.iter().zip(out.iter_mut()) {
            let dx = (x.clamp(self.lo, self.hi) - self.lo) * scale;
            let r = dx.round().clamp(0.0, MAX_Q) as i8;
            *q = r;
            sum += i64::from(r);
            squares += i64::from(r) * i64::from(r);
        }
        let alpha = self.alpha();
        match similarity {
            Similarity::L2Norm => alpha * alpha * squares as f32,
            _ => self.lo * alpha * sum as f32 + v.len() as f32 * self.lo * self.lo / 2.0,
        }
    }

    /// The estimated comparison value ([`Similarity::compare`]) of two quantized vectors with
    /// their corrections.
    #[inline]
    pub fn compare(
        &self,
        similarity: Similarity,
        kernel: VectorKernel,
        a: &[i8],
        a_correction: f32,
        b: &[i8],
        b_correction: f32,
    ) -> f32 {
        let alpha = self.alpha();
        let dot = kernel.dot_i8(a, b) as f32;
        match similarity {
            Similarity::L2Norm => -(a_correction + b_correction - 2.0 * alpha * alpha * dot),
            _ => alpha * alpha * dot + a_correction + b_correction,
        }
    }
}

/// A field's vectors quantized: one byte per value, laid end to end, and one correction each.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedVectors {
    quantizer: ScalarQuantizer,
    similarity: Similarity,
    dims: usize,
    bytes: Vec<i8>,
    corrections: Vec<f32>,
}

impl QuantizedVectors {
    /// Quantizes every vector of `vectors` with a quantizer fitted to them.
    pub fn build(vectors: &FlatVectors, similarity: Similarity) -> QuantizedVectors {
        let dims = vectors.dims();
        let quantizer = ScalarQuantizer::fit(vectors, ScalarQuantizer::default_confidence(dims));
        let mut bytes = vec![0i8; vectors.values().len()];
        let mut corrections = Vec::with_capacity(vectors.len());
        for (v, out) in vectors
            .values()
            .chunks_exact(dims)
            .zip(bytes.chunks_exact_mut(dims))
        {
            corrections.push(quantizer.quantize(similarity, v, out));
        }
        QuantizedVectors {
            quantizer,
            similarity,
            dims,
            bytes,
            corrections,
        }
    }

    /// The quantizer.
    pub fn quantizer(&self) -> &ScalarQuantizer {
        &self.quantizer
    }

    /// The number of vectors.
    pub fn len(&self) -> usize {
        self.corrections.len()
    }

    /// Whether there is no vector.
    pub fn is_empty(&self) -> bool {
        self.corrections.is_empty()
    }

    /// The quantized bytes of vector `ord` and its correction.
    pub fn vector(&self, ord: u32) -> (&[i8], f32) {
        let start = ord as usize * self.dims;
        (
            &self.bytes[start..start + self.dims],
            self.corrections[ord as usize],
        )
    }

    /// The query quantized the same way, ready for [`estimate`](Self::estimate).
    pub fn quantize_query(&self, query: &[f32]) -> (Vec<i8>, f32) {
        let mut q = vec![0i8; query.len()];
        let c = self.quantizer.quantize(self.similarity, query, &mut q);
        (q, c)
    }

    /// The estimated comparison value of a quantized query with vector `ord`.
    #[inline]
    pub fn estimate(&self, kernel: VectorKernel, query: &(Vec<i8>, f32), ord: u32) -> f32 {
        let (v, c) = self.vector(ord);
        self.quantizer
            .compare(self.similarity, kernel, &query.0, query.1, v, c)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hnsw::Scored;
    use super::super::scan::{exact_top_k, exact_top_k_of, TopK};
    use super::*;

    /// `n` unit vectors around 10 centres, from a seed (see `testdata::clustered`).
    fn values(n: usize, dims: usize, seed: u64) -> Vec<f32> {
        super::super::testdata::clustered(n, dims, 10, 0.5, seed)
    }

    #[test]
    fn fit_takes_the_middle_of_the_values() {
        let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let flat = FlatVectors::new(&v, 10).unwrap();
        let q = ScalarQuantizer::fit(&flat, 0.9);
        let (lo, hi) = q.bounds();
        assert!(
            (lo - 50.0).abs() <= 1.0 && (hi - 949.0).abs() <= 1.0,
            "{lo} {hi}"
        );
        let mut out = [0i8; 10];
        q.quantize(
            Similarity::DotProduct,
            &[-5.0, 50.0, 500.0, 949.0, 2000.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            &mut out,
        );
        assert_eq!(&out[..5], &[0, 0, 64, 127, 127]);
        let empty = FlatVectors::new(&[], 3).unwrap();
        assert_eq!(ScalarQuantizer::fit(&empty, 0.9).bounds(), (0.0, 0.0));
    }

    #[test]
    fn estimates_are_close_to_the_real_comparisons() {
        let dims = 64;
        let v = values(500, dims, 3);
        let flat = FlatVectors::new(&v, dims).unwrap();
        let kernel = VectorKernel::default_kernel();
        for sim in Similarity::ALL {
            let qv = QuantizedVectors::build(&flat, sim);
            let query = &v[..dims];
            let qq = qv.quantize_query(query);
            let mut worst = 0f32;
            for ord in 0..500u32 {
                let real = sim.compare(kernel, query, flat.vector(ord));
                let est = qv.estimate(kernel, &qq, ord);
                worst = worst.max((real - est).abs() / real.abs().max(1.0));
            }
            // Unit vectors: comparisons lie in [-4, 1]; an estimate within a few per cent ranks
            // well enough for re-scoring to find the true neighbours (the next test).
            eprintln!("{sim}: worst relative error of the int8 estimate {worst:.4}");
            assert!(worst < 0.05, "{sim}: worst error {worst}");
        }
    }

    #[test]
    fn quantized_ranking_with_rescoring_finds_the_true_top_10() {
        let dims = 48;
        let v = values(4000, dims, 9);
        let flat = FlatVectors::new(&v, dims).unwrap();
        let kernel = VectorKernel::default_kernel();
        let queries = values(50, dims, 1234);
        for sim in [Similarity::Cosine, Similarity::L2Norm] {
            let qv = QuantizedVectors::build(&flat, sim);
            let mut found = 0;
            for q in queries.chunks_exact(dims) {
                let want = exact_top_k(&flat, sim, q, 10, None);
                let qq = qv.quantize_query(q);
                let mut top = TopK::new(30);
                for ord in 0..flat.len() as u32 {
                    top.push(Scored {
                        value: qv.estimate(kernel, &qq, ord),
                        ord,
                    });
                }
                let cands: Vec<u32> = top.into_sorted().iter().map(|s| s.ord).collect();
                let got = exact_top_k_of(&flat, sim, q, 10, cands);
                found += got.iter().filter(|g| want.contains(g)).count();
            }
            let recall = found as f64 / 500.0;
            eprintln!("{sim}: int8 top 30 re-scored, recall@10 {recall:.3}");
            assert!(recall >= 0.99, "{sim}: recall@10 {recall}");
        }
    }
}
