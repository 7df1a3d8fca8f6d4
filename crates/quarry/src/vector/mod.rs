//! How close two dense vectors are, and the graph that finds a query's nearest ones without
//! comparing it with every vector.
//!
//! - [`Similarity`]: the four similarities Elasticsearch's `dense_vector` offers, each as a
//!   comparison value (higher is closer, what the graph and a scan rank by) and as the score
//!   Elasticsearch and Lucene report for it.
//! - [`hnsw`]: a hierarchical navigable small-world graph (Malkov and Yashunin), built by
//!   inserting vectors one at a time and searched with a beam of `num_candidates`, optionally
//!   restricted to the documents a filter accepts.
//! - [`scan`]: the exact `k` nearest, every accepted vector compared in batches: the `flat`
//!   index, the fallback of a selective filter, and the reference for recall.
//! - [`quantize`]: `int8` scalar quantization (7 bits per value and a correction per vector),
//!   whose estimates rank candidates that the full vectors then score exactly.
//!
//! The arithmetic lives in `quarry_codecs::distance` (SIMD kernels with a bit-identical scalar
//! twin), so an exact scan and a graph search score a vector identically on every CPU.
pub mod hnsw;
pub mod quantize;
pub mod scan;

use quarry_codecs::distance::VectorKernel;

/// How two vectors compare; the names are Elasticsearch's `similarity` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Similarity {
    /// The cosine of the angle. Vectors (stored and query) are scaled to unit length first, so
    /// that the comparison is a dot product.
    Cosine,
    /// The dot product of vectors that the caller guarantees to be of unit length.
    DotProduct,
    /// The Euclidean distance (closer is better).
    L2Norm,
    /// The dot product of vectors of any length.
    MaxInnerProduct,
}

impl Similarity {
    /// Every similarity.
    pub const ALL: [Similarity; 4] = [
        Similarity::Cosine,
        Similarity::DotProduct,
        Similarity::L2Norm,
        Similarity::MaxInnerProduct,
    ];

    /// The name Elasticsearch's mappings use.
    pub fn name(self) -> &'static str {
        match self {
            Similarity::Cosine => "cosine",
            Similarity::DotProduct => "dot_product",
            Similarity::L2Norm => "l2_norm",
            Similarity::MaxInnerProduct => "max_inner_product",
        }
    }

    /// The similarity called `name`, if any.
    pub fn from_name(name: &str) -> Option<Similarity> {
        Similarity::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether vectors are scaled to unit length before they are stored or compared.
    pub fn normalizes(self) -> bool {
        self == Similarity::Cosine
    }

    /// The comparison value of `a` and `b`: higher is closer. The dot product, or the negated
    /// squared distance for [`L2Norm`](Similarity::L2Norm).
    #[inline]
    pub fn compare(self, kernel: VectorKernel, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Similarity::L2Norm => -kernel.l2_squared(a, b),
            _ => kernel.dot(a, b),
        }
    }

    /// The comparison values of `query` with each vector of `vectors` (laid end to end), into
    /// `out`: the inner loop of an exact scan.
    #[inline]
    pub fn compare_many(
        self,
        kernel: VectorKernel,
        query: &[f32],
        vectors: &[f32],
        out: &mut [f32],
    ) {
        match self {
            Similarity::L2Norm => {
                kernel.l2_squared_many(query, vectors, out);
                for v in out.iter_mut() {
                    *v = -*v;
                }
            }
            _ => kernel.dot_many(query, vectors, out),
        }
    }

    /// The score Elasticsearch (and Lucene's `VectorSimilarityFunction`) reports for a
    /// comparison value: `(1 + cos) / 2` and `(1 + dot) / 2`, `1 / (1 + d²)`, and for the
    /// maximum inner product `1 / (1 - dot)` below zero and `dot + 1` above. Every score is
    /// non-negative and grows with the comparison value, so both rank alike.
    #[inline]
    pub fn score(self, compared: f32) -> f32 {
        match self {
            Similarity::Cosine | Similarity::DotProduct => ((1.0 + compared) / 2.0).max(0.0),
            Similarity::L2Norm => 1.0 / (1.0 - compared),
            Similarity::MaxInnerProduct => {
                if compared < 0.0 {
                    1.0 / (1.0 - compared)
                } else {
                    compared + 1.0
                }
            }
        }
    }
}

impl std::fmt::Display for Similarity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which part of a document's embedded text a vector was computed from (format v10): a long
/// text is embedded as overlapping passages, each its own vector ([`crate::embed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Passage {
    /// The passage's number in its document, from 0.
    pub index: u32,
    /// The byte offset of its first byte in the source text (the source field's values joined
    /// by newlines).
    pub start: u32,
    /// The byte offset just past its last byte.
    pub end: u32,
}

impl Passage {
    /// The passage's text in `source`, the stored value of the field it was embedded from: a
    /// string, or an array whose strings are joined by newlines (as they were embedded). None
    /// when `source` holds no text or the span does not fall on its characters (the text
    /// changed since).
    pub fn text_in(&self, source: &serde_json::Value) -> Option<String> {
        let joined;
        let text = match source {
            serde_json::Value::String(s) => s.as_str(),
            serde_json::Value::Array(items) => {
                joined = items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                joined.as_str()
            }
            _ => return None,
        };
        text.get(self.start as usize..self.end as usize)
            .map(str::to_string)
    }
}

/// Scales `v` to unit length in place; a zero vector stays zero (Elasticsearch refuses one for
/// `cosine`; the caller decides). Returns the original length.
pub fn normalize(v: &mut [f32]) -> f32 {
    let norm = VectorKernel::default_kernel().dot(v, v).sqrt();
    if norm > 0.0 {
        let inv = 1.0 / norm;
        for x in v.iter_mut() {
            *x *= inv;
        }
    }
    norm
}

/// Vectors of one field, each reached by its ordinal (0..len): what the graph builder and
/// searcher read.
pub trait VectorSource {
    /// The number of values per vector.
    fn dims(&self) -> usize;
    /// The number of vectors.
    fn len(&self) -> usize;
    /// Whether there is no vector.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The vector of ordinal `ord` (< `len()`).
    fn vector(&self, ord: u32) -> &[f32];
}

/// Vectors laid end to end in one slice: the layout a segment's vector file keeps them in.
#[derive(Debug, Clone, Copy)]
pub struct FlatVectors<'a> {
    values: &'a [f32],
    dims: usize,
}

impl<'a> FlatVectors<'a> {
    /// `values` holds whole vectors of `dims` values each; `None` otherwise (or when `dims` is
    /// zero).
    pub fn new(values: &'a [f32], dims: usize) -> Option<FlatVectors<'a>> {
        (dims > 0 && values.len().is_multiple_of(dims)).then_some(FlatVectors { values, dims })
    }

    /// All values, end to end.
    pub fn values(&self) -> &'a [f32] {
        self.values
    }
}

impl VectorSource for FlatVectors<'_> {
    fn dims(&self) -> usize {
        self.dims
    }

    fn len(&self) -> usize {
        self.values.len() / self.dims
    }

    #[inline]
    fn vector(&self, ord: u32) -> &[f32] {
        let start = ord as usize * self.dims;
        &self.values[start..start + self.dims]
    }
}

/// Test vectors shaped like real embeddings: clustered, unit length, reproducible.
#[cfg(test)]
pub(crate) mod testdata {
    /// `n` vectors of `dims` values, each one of `centres` random centres (vector `i` around
    /// centre `i % centres`) plus uniform noise of amplitude `noise`, scaled to unit length; the
    /// same `seed` gives the same vectors.
    pub(crate) fn clustered(
        n: usize,
        dims: usize,
        centres: usize,
        noise: f32,
        seed: u64,
    ) -> Vec<f32> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
        };
        let c: Vec<f32> = (0..centres * dims).map(|_| next()).collect();
        let mut out = Vec::with_capacity(n * dims);
        for i in 0..n {
            let centre = &c[(i % centres) * dims..(i % centres + 1) * dims];
            let mut v: Vec<f32> = centre.iter().map(|&m| m + noise * next()).collect();
            super::normalize(&mut v);
            out.extend(v);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_elasticsearch_s() {
        let k = VectorKernel::Scalar;
        let (a, b) = ([0.6f32, 0.8], [0.8f32, 0.6]);
        let c = Similarity::Cosine.compare(k, &a, &b);
        assert!((Similarity::Cosine.score(c) - (1.0 + 0.96) / 2.0).abs() < 1e-6);
        let l2 = Similarity::L2Norm.compare(k, &[1.0, 2.0], &[4.0, 6.0]);
        assert_eq!(Similarity::L2Norm.score(l2), 1.0 / 26.0);
        assert_eq!(Similarity::MaxInnerProduct.score(-1.0), 0.5);
        assert_eq!(Similarity::MaxInnerProduct.score(3.0), 4.0);
        for s in Similarity::ALL {
            assert_eq!(Similarity::from_name(s.name()), Some(s));
        }
    }

    #[test]
    fn a_passage_s_text_is_its_span_of_the_joined_values() {
        let p = |start, end| Passage {
            index: 0,
            start,
            end,
        };
        let one = serde_json::json!("Wheat exports rose.");
        assert_eq!(p(0, 5).text_in(&one).as_deref(), Some("Wheat"));
        // Values joined by newlines, as they were embedded.
        let two = serde_json::json!(["ab", "cé"]);
        assert_eq!(p(1, 4).text_in(&two).as_deref(), Some("b\nc"));
        // A span off the text (it changed) or inside a character: none.
        assert_eq!(p(3, 99).text_in(&one), None);
        assert_eq!(p(4, 5).text_in(&two), None);
        assert_eq!(p(4, 6).text_in(&two).as_deref(), Some("é"));
        assert_eq!(p(0, 1).text_in(&serde_json::json!(3)), None);
    }

    #[test]
    fn scores_rank_like_comparison_values() {
        for s in Similarity::ALL {
            let mut last = f32::NEG_INFINITY;
            let mut values: Vec<f32> = (0..200).map(|i| (i as f32 - 100.0) / 50.0).collect();
            if s == Similarity::L2Norm {
                values.retain(|v| *v <= 0.0);
            }
            for v in values {
                let score = s.score(v);
                assert!(score >= last, "{s}: {v}");
                assert!(score >= 0.0);
                last = score;
            }
        }
    }

    #[test]
    fn normalize_gives_unit_length() {
        let mut v = [3.0f32, 4.0];
        assert_eq!(normalize(&mut v), 5.0);
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
        let mut z = [0.0f32; 3];
        assert_eq!(normalize(&mut z), 0.0);
        assert_eq!(z, [0.0; 3]);
    }

    #[test]
    fn flat_vectors_slice_by_ordinal() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let f = FlatVectors::new(&values, 3).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f.vector(1), &[4.0, 5.0, 6.0]);
        assert!(FlatVectors::new(&values, 4).is_none());
        assert!(FlatVectors::new(&values, 0).is_none());
    }
}
