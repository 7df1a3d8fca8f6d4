//! How similar two vectors are: the dot product and squared Euclidean distance of `f32`
//! vectors and the dot product of `i8` vectors, with AVX2 and AVX-512 kernels chosen once per
//! process and a scalar twin that gives bit-identical answers.
//!
//! **Why bit-identical.** An exact k-nearest-neighbour scan must return the same documents in
//! the same order whatever CPU runs it, ties broken by document order; a kernel that summed in
//! another order would round differently and could swap two near-equal neighbours. So every
//! `f32` kernel uses one summation order: 32 running sums, element `j` added to sum `j % 32`
//! with a separate multiply and add (no fused multiply-add, which rounds once instead of twice),
//! the elements past the last whole group of 32 added one by one in the scalar code, then the 32
//! sums folded in halves (`s[i] += s[i + 16]`, then 8, 4, 2, 1). AVX2 holds the 32 sums in four
//! 256-bit registers, AVX-512 in two 512-bit registers; the scalar twin holds them in an array
//! (which the compiler is free to vectorize: the operations and their order are fixed). Integer
//! dot products are exact in any order.
//!
//! **Why separate multiply and add is fast enough.** A scan of stored vectors reads each one
//! once, so it is bounded by memory bandwidth: at ~10 GB/s one core sees 2.5 G floats per second,
//! while four (AVX2) or two (AVX-512) independent add chains sustain several times that.
//!
//! Kernels ([`VectorKernel`]): `scalar`, `avx2`, `avx512` (AVX-512F for `f32`, AVX-512BW for
//! `i8`). `QUARRY_VECTOR_KERNEL=scalar|avx2|avx512` forces one (an unavailable or unknown value
//! falls back to the best available) and `QUARRY_SIMD=scalar` forces the scalar code here as it
//! does for every other kernel of the crate.
use std::sync::OnceLock;

/// Number of running sums every `f32` kernel keeps (see the module documentation).
pub const LANES: usize = 32;

/// A vector kernel implementation; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorKernel {
    Scalar,
    Avx2,
    Avx512,
}

/// The entry points of one kernel. Every function requires slices of equal length (checked by
/// the public wrappers before any unchecked read).
#[derive(Clone, Copy)]
struct Ops {
    dot: fn(&[f32], &[f32]) -> f32,
    l2sq: fn(&[f32], &[f32]) -> f32,
    dot_i8: fn(&[i8], &[i8]) -> i32,
    dot_many: fn(&[f32], &[f32], &mut [f32]),
    l2sq_many: fn(&[f32], &[f32], &mut [f32]),
}

impl VectorKernel {
    /// Every kernel, slowest first.
    pub const ALL: [VectorKernel; 3] = [
        VectorKernel::Scalar,
        VectorKernel::Avx2,
        VectorKernel::Avx512,
    ];

    /// The name `QUARRY_VECTOR_KERNEL` and the benchmarks use.
    pub fn name(self) -> &'static str {
        match self {
            VectorKernel::Scalar => "scalar",
            VectorKernel::Avx2 => "avx2",
            VectorKernel::Avx512 => "avx512",
        }
    }

    /// The kernel called `name`, if any.
    pub fn from_name(name: &str) -> Option<VectorKernel> {
        VectorKernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this CPU can run the kernel.
    pub fn available(self) -> bool {
        use crate::cpu::{has_all, Feature};
        match self {
            VectorKernel::Scalar => true,
            VectorKernel::Avx2 => cfg!(target_arch = "x86_64") && has_all(&[Feature::Avx2]),
            VectorKernel::Avx512 => {
                cfg!(target_arch = "x86_64") && has_all(&[Feature::Avx512f, Feature::Avx512bw])
            }
        }
    }

    /// The kernels this CPU can run.
    pub fn available_kernels() -> Vec<VectorKernel> {
        VectorKernel::ALL
            .into_iter()
            .filter(|k| k.available())
            .collect()
    }

    /// The fastest kernel this CPU can run.
    pub fn best() -> VectorKernel {
        VectorKernel::ALL
            .into_iter()
            .rev()
            .find(|k| k.available())
            .unwrap_or(VectorKernel::Scalar)
    }

    /// The process-wide kernel (see the module documentation), decided on first use.
    pub fn default_kernel() -> VectorKernel {
        static CHOICE: OnceLock<VectorKernel> = OnceLock::new();
        *CHOICE.get_or_init(|| {
            if std::env::var("QUARRY_SIMD").is_ok_and(|v| v.trim() == "scalar") {
                return VectorKernel::Scalar;
            }
            std::env::var("QUARRY_VECTOR_KERNEL")
                .ok()
                .and_then(|v| VectorKernel::from_name(v.trim()))
                .filter(|k| k.available())
                .unwrap_or_else(VectorKernel::best)
        })
    }

    fn ops(self) -> Ops {
        match self {
            #[cfg(target_arch = "x86_64")]
            VectorKernel::Avx2 if self.available() => x86::AVX2,
            #[cfg(target_arch = "x86_64")]
            VectorKernel::Avx512 if self.available() => x86::AVX512,
            _ => SCALAR,
        }
    }

    /// The dot product of `a` and `b`. Panics when their lengths differ (a caller's bug: vector
    /// fields have one dimension count).
    #[inline]
    pub fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len(), "vectors of different lengths");
        (self.ops().dot)(a, b)
    }

    /// The squared Euclidean distance of `a` and `b`. Panics when their lengths differ.
    #[inline]
    pub fn l2_squared(self, a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len(), "vectors of different lengths");
        (self.ops().l2sq)(a, b)
    }

    /// The dot product of two `i8` vectors (exact: every product fits, and so does the sum of
    /// up to 131,072 of them). Panics when their lengths differ.
    #[inline]
    pub fn dot_i8(self, a: &[i8], b: &[i8]) -> i32 {
        assert_eq!(a.len(), b.len(), "vectors of different lengths");
        (self.ops().dot_i8)(a, b)
    }

    /// The dot product of `query` with each of the vectors laid end to end in `vectors`, into
    /// `out` (one per vector): the inner loop of an exact scan, dispatched once per call.
    /// Panics unless `vectors.len() == query.len() * out.len()`.
    #[inline]
    pub fn dot_many(self, query: &[f32], vectors: &[f32], out: &mut [f32]) {
        check_many(query, vectors, out);
        (self.ops().dot_many)(query, vectors, out)
    }

    /// [`l2_squared`](Self::l2_squared) of `query` with each vector of `vectors`, as
    /// [`dot_many`](Self::dot_many).
    #[inline]
    pub fn l2_squared_many(self, query: &[f32], vectors: &[f32], out: &mut [f32]) {
        check_many(query, vectors, out);
        (self.ops().l2sq_many)(query, vectors, out)
    }
}

impl std::fmt::Display for VectorKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn check_many(query: &[f32], vectors: &[f32], out: &[f32]) {
    assert!(
        !query.is_empty() && Some(vectors.len()) == query.len().checked_mul(out.len()),
        "{} values are not {} vectors of {} dimensions",
        vectors.len(),
        out.len(),
        query.len()
    );
}

/// The dot product with the process-wide kernel.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    VectorKernel::default_kernel().dot(a, b)
}

/// The squared Euclidean distance with the process-wide kernel.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    VectorKernel::default_kernel().l2_squared(a, b)
}

/// The `i8` dot product with the process-wide kernel.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    VectorKernel::default_kernel().dot_i8(a, b)
}

/// Folds the 32 running sums in halves: the one reduction order every kernel shares.
#[inline(always)]
fn fold(mut s: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            s[i] += s[i + width];
        }
        width /= 2;
    }
    s[0]
}

/// Adds the elements from `start` on (fewer than 32) to their running sums, one by one.
#[inline(always)]
fn tail(s: &mut [f32; LANES], a: &[f32], b: &[f32], start: usize, f: impl Fn(f32, f32) -> f32) {
    for j in start..a.len() {
        s[j % LANES] += f(a[j], b[j]);
    }
}

#[inline(always)]
fn mul(x: f32, y: f32) -> f32 {
    x * y
}

#[inline(always)]
fn diff_sq(x: f32, y: f32) -> f32 {
    let d = x - y;
    d * d
}

#[inline(always)]
fn sum_scalar(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32 + Copy) -> f32 {
    let mut s = [0f32; LANES];
    let whole = a.len() / LANES * LANES;
    for (ca, cb) in a[..whole]
        .chunks_exact(LANES)
        .zip(b[..whole].chunks_exact(LANES))
    {
        for l in 0..LANES {
            s[l] += f(ca[l], cb[l]);
        }
    }
    tail(&mut s, a, b, whole, f);
    fold(s)
}

fn dot_scalar(a: &[f32], b: &[f32]) -> f32 {
    sum_scalar(a, b, mul)
}

fn l2sq_scalar(a: &[f32], b: &[f32]) -> f32 {
    sum_scalar(a, b, diff_sq)
}

fn dot_i8_scalar(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

fn dot_many_scalar(q: &[f32], vectors: &[f32], out: &mut [f32]) {
    for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
        *o = dot_scalar(q, v);
    }
}

fn l2sq_many_scalar(q: &[f32], vectors: &[f32], out: &mut [f32]) {
    for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
        *o = l2sq_scalar(q, v);
    }
}

const SCALAR: Ops = Ops {
    dot: dot_scalar,
    l2sq: l2sq_scalar,
    dot_i8: dot_i8_scalar,
    dot_many: dot_many_scalar,
    l2sq_many: l2sq_many_scalar,
};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{fold, tail, Ops, LANES};

    pub(super) const AVX2: Ops = Ops {
        dot: |a, b| {
            // SAFETY: this table is handed out only when the CPU has AVX2 (`ops`), and the
            // public wrappers checked `a.len() == b.len()`.
            unsafe { dot_avx2(a, b) }
        },
        l2sq: |a, b| {
            // SAFETY: as for `dot`.
            unsafe { l2sq_avx2(a, b) }
        },
        dot_i8: |a, b| {
            // SAFETY: as for `dot`.
            unsafe { dot_i8_avx2(a, b) }
        },
        dot_many: |q, v, o| {
            // SAFETY: AVX2 as for `dot`; `check_many` held every vector to `q.len()` values.
            unsafe { dot_many_avx2(q, v, o) }
        },
        l2sq_many: |q, v, o| {
            // SAFETY: as for `dot_many`.
            unsafe { l2sq_many_avx2(q, v, o) }
        },
    };

    pub(super) const AVX512: Ops = Ops {
        dot: |a, b| {
            // SAFETY: this table is handed out only when the CPU has AVX-512F and BW (`ops`),
            // and the public wrappers checked `a.len() == b.len()`.
            unsafe { dot_avx512(a, b) }
        },
        l2sq: |a, b| {
            // SAFETY: as for `dot`.
            unsafe { l2sq_avx512(a, b) }
        },
        dot_i8: |a, b| {
            // SAFETY: as for `dot`.
            unsafe { dot_i8_avx512(a, b) }
        },
        dot_many: |q, v, o| {
            // SAFETY: AVX-512 as for `dot`; `check_many` held every vector to `q.len()` values.
            unsafe { dot_many_avx512(q, v, o) }
        },
        l2sq_many: |q, v, o| {
            // SAFETY: as for `dot_many`.
            unsafe { l2sq_many_avx512(q, v, o) }
        },
    };

    /// Four 256-bit registers of running sums; `D` picks the dot product (false) or the
    /// squared difference (true) per element pair.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn sum_avx2<const D: bool>(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len();
        let whole = n / LANES * LANES;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut s = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i < whole {
            for (r, acc) in s.iter_mut().enumerate() {
                // SAFETY: `i + 8 * r + 8 <= whole <= n`, within both slices (equal lengths).
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(pa.add(i + 8 * r)),
                        _mm256_loadu_ps(pb.add(i + 8 * r)),
                    )
                };
                let t = if D {
                    let d = _mm256_sub_ps(x, y);
                    _mm256_mul_ps(d, d)
                } else {
                    _mm256_mul_ps(x, y)
                };
                *acc = _mm256_add_ps(*acc, t);
            }
            i += LANES;
        }
        let mut lanes = [0f32; LANES];
        for (r, acc) in s.iter().enumerate() {
            // SAFETY: `lanes` has room for 8 floats at `8 * r` (r < 4).
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr().add(8 * r), *acc) };
        }
        if D {
            tail(&mut lanes, a, b, whole, super::diff_sq);
        } else {
            tail(&mut lanes, a, b, whole, super::mul);
        }
        fold(lanes)
    }

    /// Two 512-bit registers of running sums, as [`sum_avx2`].
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn sum_avx512<const D: bool>(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len();
        let whole = n / LANES * LANES;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut s = [_mm512_setzero_ps(); 2];
        let mut i = 0;
        while i < whole {
            for (r, acc) in s.iter_mut().enumerate() {
                // SAFETY: `i + 16 * r + 16 <= whole <= n`, within both slices.
                let (x, y) = unsafe {
                    (
                        _mm512_loadu_ps(pa.add(i + 16 * r)),
                        _mm512_loadu_ps(pb.add(i + 16 * r)),
                    )
                };
                let t = if D {
                    let d = _mm512_sub_ps(x, y);
                    _mm512_mul_ps(d, d)
                } else {
                    _mm512_mul_ps(x, y)
                };
                *acc = _mm512_add_ps(*acc, t);
            }
            i += LANES;
        }
        let mut lanes = [0f32; LANES];
        for (r, acc) in s.iter().enumerate() {
            // SAFETY: `lanes` has room for 16 floats at `16 * r` (r < 2).
            unsafe { _mm512_storeu_ps(lanes.as_mut_ptr().add(16 * r), *acc) };
        }
        if D {
            tail(&mut lanes, a, b, whole, super::diff_sq);
        } else {
            tail(&mut lanes, a, b, whole, super::mul);
        }
        fold(lanes)
    }

    #[target_feature(enable = "avx2")]
    unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: same features and contract as this function.
        unsafe { sum_avx2::<false>(a, b) }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn l2sq_avx2(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: same features and contract as this function.
        unsafe { sum_avx2::<true>(a, b) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: same features and contract as this function.
        unsafe { sum_avx512::<false>(a, b) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn l2sq_avx512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: same features and contract as this function.
        unsafe { sum_avx512::<true>(a, b) }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn dot_many_avx2(q: &[f32], vectors: &[f32], out: &mut [f32]) {
        for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
            // SAFETY: same features; `v` has `q.len()` values.
            *o = unsafe { sum_avx2::<false>(q, v) };
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn l2sq_many_avx2(q: &[f32], vectors: &[f32], out: &mut [f32]) {
        for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
            // SAFETY: same features; `v` has `q.len()` values.
            *o = unsafe { sum_avx2::<true>(q, v) };
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn dot_many_avx512(q: &[f32], vectors: &[f32], out: &mut [f32]) {
        for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
            // SAFETY: same features; `v` has `q.len()` values.
            *o = unsafe { sum_avx512::<false>(q, v) };
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn l2sq_many_avx512(q: &[f32], vectors: &[f32], out: &mut [f32]) {
        for (v, o) in vectors.chunks_exact(q.len()).zip(out) {
            // SAFETY: same features; `v` has `q.len()` values.
            *o = unsafe { sum_avx512::<true>(q, v) };
        }
    }

    /// 32 `i8` pairs per step: sign-extended to `i16`, multiplied and summed in pairs into
    /// eight `i32` lanes (`vpmaddwd`).
    #[target_feature(enable = "avx2")]
    unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len();
        let whole = n / 32 * 32;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i < whole {
            for half in [0, 16] {
                // SAFETY: `i + half + 16 <= whole <= n`, within both slices.
                let (x, y) = unsafe {
                    (
                        _mm_loadu_si128(pa.add(i + half).cast()),
                        _mm_loadu_si128(pb.add(i + half).cast()),
                    )
                };
                let p = _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), _mm256_cvtepi8_epi16(y));
                acc = _mm256_add_epi32(acc, p);
            }
            i += 32;
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` holds 8 `i32`s.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        lanes.iter().sum::<i32>() + super::dot_i8_scalar(&a[whole..], &b[whole..])
    }

    /// 64 `i8` pairs per step, as [`dot_i8_avx2`] with 512-bit registers (AVX-512BW for the
    /// 16-bit multiply-add).
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn dot_i8_avx512(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len();
        let whole = n / 64 * 64;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = _mm512_setzero_si512();
        let mut i = 0;
        while i < whole {
            for half in [0, 32] {
                // SAFETY: `i + half + 32 <= whole <= n`, within both slices.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_si256(pa.add(i + half).cast()),
                        _mm256_loadu_si256(pb.add(i + half).cast()),
                    )
                };
                let p = _mm512_madd_epi16(_mm512_cvtepi8_epi16(x), _mm512_cvtepi8_epi16(y));
                acc = _mm512_add_epi32(acc, p);
            }
            i += 64;
        }
        _mm512_reduce_add_epi32(acc) + super::dot_i8_scalar(&a[whole..], &b[whole..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The kernels this CPU runs, named in the test output so a log says which were covered.
    fn kernels() -> Vec<VectorKernel> {
        let ks = VectorKernel::available_kernels();
        let names: Vec<_> = ks.iter().map(|k| k.name()).collect();
        eprintln!("vector kernels tested against the scalar twin: {names:?}");
        ks
    }

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
    }

    #[test]
    fn small_cases_by_hand() {
        for k in kernels() {
            assert_eq!(k.dot(&[], &[]), 0.0);
            assert_eq!(k.dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
            assert_eq!(k.l2_squared(&[1.0, 2.0], &[4.0, 6.0]), 25.0);
            assert_eq!(
                k.dot_i8(&[-128, 127, 3], &[-128, 127, -2]),
                16384 + 16129 - 6
            );
            let q = [1.0, 0.0, 2.0];
            let mut out = [0.0; 2];
            k.dot_many(&q, &[1.0, 1.0, 1.0, 0.0, 5.0, -1.0], &mut out);
            assert_eq!(out, [3.0, -2.0]);
            k.l2_squared_many(&q, &[1.0, 1.0, 1.0, 0.0, 5.0, -1.0], &mut out);
            assert_eq!(out, [2.0, 35.0]);
        }
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn lengths_must_match() {
        VectorKernel::Scalar.dot(&[1.0], &[1.0, 2.0]);
    }

    #[test]
    fn extreme_i8_sums_are_exact() {
        let a = vec![-128i8; 4096];
        for k in kernels() {
            assert_eq!(k.dot_i8(&a, &a), 4096 * 16384);
        }
    }

    fn pair(max_len: usize) -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
        (0..max_len).prop_flat_map(|n| {
            (
                prop::collection::vec(-1000.0f32..1000.0, n),
                prop::collection::vec(-1000.0f32..1000.0, n),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_kernel_is_bit_identical_to_scalar((a, b) in pair(700)) {
            let (dot, l2) = (dot_scalar(&a, &b), l2sq_scalar(&a, &b));
            for k in kernels() {
                prop_assert_eq!(k.dot(&a, &b).to_bits(), dot.to_bits(), "{} dot", k);
                prop_assert_eq!(k.l2_squared(&a, &b).to_bits(), l2.to_bits(), "{} l2", k);
            }
            // And the scalar order is a sum, not something else: close to the exact value.
            let bound: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
            prop_assert!((dot as f64 - naive_dot(&a, &b)).abs() <= 1e-5 * bound + 1e-3);
        }

        #[test]
        fn many_equals_one_at_a_time(dims in 1usize..100, n in 0usize..20, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            };
            let q: Vec<f32> = (0..dims).map(|_| next()).collect();
            let vs: Vec<f32> = (0..dims * n).map(|_| next()).collect();
            for k in kernels() {
                let (mut d, mut l) = (vec![0.0; n], vec![0.0; n]);
                k.dot_many(&q, &vs, &mut d);
                k.l2_squared_many(&q, &vs, &mut l);
                for (i, v) in vs.chunks_exact(dims).enumerate() {
                    prop_assert_eq!(d[i].to_bits(), dot_scalar(&q, v).to_bits());
                    prop_assert_eq!(l[i].to_bits(), l2sq_scalar(&q, v).to_bits());
                }
            }
        }

        #[test]
        fn every_i8_kernel_equals_scalar(
            (a, b) in (0usize..600).prop_flat_map(|n| (
                prop::collection::vec(any::<i8>(), n),
                prop::collection::vec(any::<i8>(), n),
            ))
        ) {
            let want = dot_i8_scalar(&a, &b);
            for k in kernels() {
                prop_assert_eq!(k.dot_i8(&a, &b), want, "{}", k);
            }
        }
    }
}
