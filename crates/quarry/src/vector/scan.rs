//! The exact `k` nearest vectors: every accepted vector compared with the query, the best `k`
//! kept. What a `flat` index answers with, what a filtered search falls back to when the filter
//! accepts few documents, and the reference every approximate search is measured against.
//!
//! The vectors are read in runs of consecutive accepted ordinals and compared in batches
//! ([`Similarity::compare_many`]), so that the kernel streams through memory; the results are
//! bit-identical whichever kernel runs, and ties rank the lower ordinal first.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use quarry_codecs::distance::VectorKernel;

use super::hnsw::Scored;
use super::{FlatVectors, Similarity, VectorSource};

/// How many vectors one batched comparison covers.
const BATCH: usize = 256;

/// The best `k` of a stream of scored nodes.
#[derive(Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Scored>>,
}

impl TopK {
    /// Keeps the best `k`.
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Offers a node.
    #[inline]
    pub fn push(&mut self, s: Scored) {
        if self.heap.len() < self.k {
            self.heap.push(Reverse(s));
        } else if self.heap.peek().is_some_and(|w| s > w.0) {
            self.heap.pop();
            self.heap.push(Reverse(s));
        }
    }

    /// The kept nodes, best first.
    pub fn into_sorted(self) -> Vec<Scored> {
        let mut v: Vec<Scored> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    }
}

/// The `k` vectors of `vectors` closest to `query` among the ordinals `accept` takes (every one
/// when `None`), closest first.
pub fn exact_top_k(
    vectors: &FlatVectors,
    similarity: Similarity,
    query: &[f32],
    k: usize,
    accept: Option<&dyn Fn(u32) -> bool>,
) -> Vec<Scored> {
    let kernel = VectorKernel::default_kernel();
    let dims = vectors.dims();
    let n = vectors.len();
    let mut top = TopK::new(k);
    if k == 0 || n == 0 {
        return Vec::new();
    }
    let values = vectors.values();
    let mut out = [0f32; BATCH];
    let mut start = 0usize;
    while start < n {
        // The next run of consecutive accepted ordinals, at most one batch long.
        if let Some(f) = accept {
            while start < n && !f(start as u32) {
                start += 1;
            }
        }
        let mut end = start;
        while end < n && end - start < BATCH && accept.is_none_or(|f| f(end as u32)) {
            end += 1;
        }
        if end == start {
            break;
        }
        let run = end - start;
        similarity.compare_many(
            kernel,
            query,
            &values[start * dims..end * dims],
            &mut out[..run],
        );
        for (i, &value) in out[..run].iter().enumerate() {
            top.push(Scored {
                value,
                ord: (start + i) as u32,
            });
        }
        start = end;
    }
    top.into_sorted()
}

/// [`exact_top_k`] over any [`VectorSource`], one vector at a time, over the given ordinals:
/// for sources that are not one flat slice (and for a filter given as a list of ordinals).
pub fn exact_top_k_of<S: VectorSource + ?Sized>(
    source: &S,
    similarity: Similarity,
    query: &[f32],
    k: usize,
    ords: impl IntoIterator<Item = u32>,
) -> Vec<Scored> {
    let kernel = VectorKernel::default_kernel();
    let mut top = TopK::new(k);
    if k == 0 {
        return Vec::new();
    }
    for ord in ords {
        top.push(Scored {
            value: similarity.compare(kernel, query, source.vector(ord)),
            ord,
        });
    }
    top.into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain reference: score every vector with the scalar kernel, sort, cut.
    fn reference(
        values: &[f32],
        dims: usize,
        sim: Similarity,
        q: &[f32],
        k: usize,
        accept: impl Fn(u32) -> bool,
    ) -> Vec<Scored> {
        let mut all: Vec<Scored> = values
            .chunks_exact(dims)
            .enumerate()
            .filter(|(i, _)| accept(*i as u32))
            .map(|(i, v)| Scored {
                value: sim.compare(VectorKernel::Scalar, q, v),
                ord: i as u32,
            })
            .collect();
        all.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.ord.cmp(&b.ord)));
        all.truncate(k);
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn exact_scan_equals_the_plain_reference(
            dims in 1usize..40,
            n in 0usize..700,
            k in 0usize..30,
            modulus in 1u32..5,
            // Few distinct values, so that ties are common.
            seed in any::<u64>(),
            sim_i in 0usize..4,
        ) {
            let sim = Similarity::ALL[sim_i];
            let mut x = seed | 1;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 5) as f32 - 2.0
            };
            let values: Vec<f32> = (0..n * dims).map(|_| next()).collect();
            let q: Vec<f32> = (0..dims).map(|_| next()).collect();
            let flat = FlatVectors::new(&values, dims).unwrap();
            let accept = move |o: u32| o.is_multiple_of(modulus);
            let want = reference(&values, dims, sim, &q, k, accept);
            let got = exact_top_k(&flat, sim, &q, k, Some(&accept));
            prop_assert_eq!(&got, &want);
            let got = exact_top_k_of(&flat, sim, &q, k, (0..n as u32).filter(|&o| accept(o)));
            prop_assert_eq!(&got, &want);
            if modulus == 1 {
                prop_assert_eq!(exact_top_k(&flat, sim, &q, k, None), want);
            }
        }
    }
}
