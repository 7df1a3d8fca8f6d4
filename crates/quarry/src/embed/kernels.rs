//! The element-wise and row-wise steps of the encoder (activation, softmax, layer norm) on
//! plain `f32` slices.
//!
//! Each kernel is one portable body written so that the compiler vectorizes it (independent
//! lanes, no branches, reductions in 16 partial sums), compiled twice: once for the baseline
//! target and once with AVX-512 (or AVX2 and FMA) enabled, chosen at run time. The two builds
//! run the same IEEE operations in the same order (no fused multiply-add is formed without
//! fast-math), so they give the same bits; `tests` checks that against the baseline twin.
//! candle's own CPU versions are scalar (`erf` and `exp` per element) and allocate a tensor per
//! step: about a fifth of the encoder's time, plus page faults, in the profile of
//! `bench/results/2026-12-04-embed-release.md`.

/// Lanes of the partial sums: one AVX-512 register of `f32`.
const LANES: usize = 16;

#[inline(always)]
fn lane_sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    let mut s = 0f32;
    for a in acc {
        s += a;
    }
    for x in rest {
        s += x;
    }
    s
}

#[inline(always)]
fn lane_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a = a.max(*x);
        }
    }
    let mut m = f32::NEG_INFINITY;
    for a in acc.into_iter().chain(rest.iter().copied()) {
        m = m.max(a);
    }
    m
}

/// `e^x` to about 2 ulp for x in [-87, 88] (clamped outside): Cody-Waite reduction to
/// r in [-ln2/2, ln2/2], a degree-7 Taylor polynomial (remainder below 1e-8), times 2^n.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0 / 5040.0;
    let p = p * r + 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// erf(x) to 5e-7 in `f32` (Abramowitz and Stegun 7.1.26, 1.5e-7 in exact arithmetic), odd in x.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let p = 1.061_405_4;
    let p = p * t - 1.453_152;
    let p = p * t + 1.421_413_8;
    let p = p * t - 0.284_496_74;
    let p = p * t + 0.254_829_6;
    let y = 1.0 - p * t * exp(-a * a);
    y.copysign(x)
}

#[inline(always)]
fn gelu_erf_body(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            let v = *x + b;
            *x = 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

#[inline(always)]
fn gelu_tanh_body(rows: &mut [f32], bias: &[f32]) {
    // sqrt(2 / pi)
    const C: f32 = 0.797_884_6;
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            let v = *x + b;
            let y = C * (v + 0.044_715 * v * v * v);
            // tanh(y) = 1 - 2 / (e^(2y) + 1)
            let tanh = 1.0 - 2.0 / (exp(2.0 * y) + 1.0);
            *x = 0.5 * v * (1.0 + tanh);
        }
    }
}

#[inline(always)]
fn relu_body(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            *x = (*x + b).max(0.0);
        }
    }
}

/// Softmax of every row of `xs` (rows of `width`), in place.
#[inline(always)]
fn softmax_rows_body(xs: &mut [f32], width: usize) {
    for row in xs.chunks_exact_mut(width) {
        let m = lane_max(row);
        for x in row.iter_mut() {
            *x = exp(*x - m);
        }
        let inv = 1.0 / lane_sum(row);
        for x in row.iter_mut() {
            *x *= inv;
        }
    }
}

/// `rows[i] = layer_norm(rows[i] + bias + residual[i]) * gamma + beta` for every row (of
/// `gamma.len()`), with the biased variance as torch's `LayerNorm`; `residual` may be empty.
#[inline(always)]
fn add_norm_rows_body(
    rows: &mut [f32],
    bias: &[f32],
    residual: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let width = gamma.len();
    let n = width as f32;
    for (i, row) in rows.chunks_exact_mut(width).enumerate() {
        for (x, b) in row.iter_mut().zip(bias) {
            *x += b;
        }
        if !residual.is_empty() {
            for (x, r) in row.iter_mut().zip(&residual[i * width..(i + 1) * width]) {
                *x += r;
            }
        }
        let mean = lane_sum(row) / n;
        for x in row.iter_mut() {
            *x -= mean;
        }
        let mut sq = [0f32; LANES];
        let chunks = row.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for (s, x) in sq.iter_mut().zip(c) {
                *s += x * x;
            }
        }
        let mut var = 0f32;
        for s in sq {
            var += s;
        }
        for x in rest {
            var += x * x;
        }
        let inv = 1.0 / (var / n + eps).sqrt();
        for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *x = *x * inv * g + b;
        }
    }
}

/// Declares `pub(crate) fn $name`, which runs `$body` compiled for the best instruction set
/// of this CPU (pulp's run-time dispatch: AVX-512, AVX2 and FMA, or the baseline), and
/// `$scalar`, the same body for the baseline target only (the twin the tests compare).
macro_rules! simd_kernel {
    ($(#[$m:meta])* $name:ident, $scalar:ident, $body:ident, <$lt:lifetime> ($($arg:ident: $ty:ty),*)) => {
        $(#[$m])*
        pub(crate) fn $name<$lt>($($arg: $ty),*) {
            struct Op<$lt> {
                $($arg: $ty),*
            }
            impl<$lt> pulp::WithSimd for Op<$lt> {
                type Output = ();
                #[inline(always)]
                fn with_simd<S: pulp::Simd>(self, _: S) {
                    let Op { $($arg),* } = self;
                    $body($($arg),*)
                }
            }
            pulp::Arch::new().dispatch(Op { $($arg),* })
        }

        #[cfg(test)]
        pub(crate) fn $scalar<$lt>($($arg: $ty),*) {
            $body($($arg),*)
        }
    };
}

simd_kernel!(
    /// `rows = gelu(rows + bias)` row by row, with the exact (erf) GELU.
    bias_gelu_erf, bias_gelu_erf_scalar, gelu_erf_body, <'a> (rows: &'a mut [f32], bias: &'a [f32])
);
simd_kernel!(
    /// `rows = gelu(rows + bias)` row by row, with the tanh approximation of GELU.
    bias_gelu_tanh, bias_gelu_tanh_scalar, gelu_tanh_body, <'a> (rows: &'a mut [f32], bias: &'a [f32])
);
simd_kernel!(
    /// `rows = max(rows + bias, 0)` row by row.
    bias_relu, bias_relu_scalar, relu_body, <'a> (rows: &'a mut [f32], bias: &'a [f32])
);
simd_kernel!(
    /// Softmax of every row (of `width`), in place.
    softmax_rows, softmax_rows_scalar, softmax_rows_body, <'a> (xs: &'a mut [f32], width: usize)
);
simd_kernel!(
    /// `rows[i] = layer_norm(rows[i] + bias + residual[i]) * gamma + beta` (rows of
    /// `gamma.len()`, biased variance as torch's `LayerNorm`); `residual` may be empty.
    add_norm_rows, add_norm_rows_scalar, add_norm_rows_body,
    <'a> (rows: &'a mut [f32], bias: &'a [f32], residual: &'a [f32], gamma: &'a [f32], beta: &'a [f32], eps: f32)
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exp_and_erf_are_accurate() {
        let mut worst_exp = 0f64;
        let mut worst_erf = 0f64;
        for i in -80_000..=80_000 {
            let x = i as f32 / 1000.0;
            let want = (x as f64).exp();
            worst_exp = worst_exp.max(((exp(x) as f64 - want) / want).abs());
            let want = candle_core::cpu::erf::erf_f64(x as f64);
            worst_erf = worst_erf.max((erf(x) as f64 - want).abs());
        }
        assert!(worst_exp < 3e-7, "exp relative error {worst_exp}");
        assert!(worst_erf < 5e-7, "erf absolute error {worst_erf}");
    }

    #[test]
    fn kernels_match_their_definitions() {
        let xs: Vec<f32> = (-40..40).map(|i| i as f32 / 7.0).collect();
        let zero = vec![0f32; 20];
        let mut g = xs.clone();
        bias_gelu_erf(&mut g, &zero);
        for (x, y) in xs.iter().zip(&g) {
            let x = *x as f64;
            let want = 0.5 * x * (1.0 + candle_core::cpu::erf::erf_f64(x / 2f64.sqrt()));
            assert!(
                (*y as f64 - want).abs() < 1e-6,
                "gelu({x}) = {y}, want {want}"
            );
        }
        let mut t = xs.clone();
        bias_gelu_tanh(&mut t, &zero);
        for (x, y) in xs.iter().zip(&t) {
            let x = *x as f64;
            let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
            let want = 0.5 * x * (1.0 + inner.tanh());
            assert!(
                (*y as f64 - want).abs() < 1e-6,
                "gelu_tanh({x}) = {y}, want {want}"
            );
        }
        let ones = vec![1f32; 20];
        let mut r = xs.clone();
        bias_relu(&mut r, &ones);
        for (x, y) in xs.iter().zip(&r) {
            assert_eq!(*y, (x + 1.0).max(0.0));
        }
        let mut s = xs.clone();
        softmax_rows(&mut s, 20);
        for (row, out) in xs.chunks(20).zip(s.chunks(20)) {
            let m = row.iter().fold(f64::MIN, |m, x| m.max(*x as f64));
            let total: f64 = row.iter().map(|x| (*x as f64 - m).exp()).sum();
            for (x, y) in row.iter().zip(out) {
                let want = (*x as f64 - m).exp() / total;
                assert!((*y as f64 - want).abs() < 1e-6);
            }
        }
        let mut n = xs.clone();
        let res = vec![1.0f32; xs.len()];
        let bias: Vec<f32> = (0..40).map(|i| i as f32 / 40.0).collect();
        let gamma = vec![2.0f32; 40];
        let beta = vec![0.5f32; 40];
        add_norm_rows(&mut n, &bias, &res, &gamma, &beta, 1e-12);
        for (row, out) in xs.chunks(40).zip(n.chunks(40)) {
            let r: Vec<f64> = row
                .iter()
                .zip(&bias)
                .map(|(x, b)| *x as f64 + *b as f64 + 1.0)
                .collect();
            let mean = r.iter().sum::<f64>() / 40.0;
            let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 40.0;
            for (x, y) in r.iter().zip(out) {
                let want = (x - mean) / (var + 1e-12).sqrt() * 2.0 + 0.5;
                assert!((*y as f64 - want).abs() < 1e-5, "{y} vs {want}");
            }
        }
    }

    proptest! {
        /// The vectorized builds give the baseline twin's bits.
        #[test]
        fn simd_builds_equal_the_scalar_twin(
            xs in proptest::collection::vec(-30f32..30f32, 1..200),
            width in 1usize..40,
        ) {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let rows = xs.len() / width * width;
            let xs = &xs[..rows];
            let bias: Vec<f32> = (0..width).map(|i| i as f32 / 100.0 - 0.1).collect();
            let (mut a, mut b) = (xs.to_vec(), xs.to_vec());
            bias_gelu_erf(&mut a, &bias);
            bias_gelu_erf_scalar(&mut b, &bias);
            prop_assert_eq!(bits(&a), bits(&b));
            let (mut a, mut b) = (xs.to_vec(), xs.to_vec());
            bias_gelu_tanh(&mut a, &bias);
            bias_gelu_tanh_scalar(&mut b, &bias);
            prop_assert_eq!(bits(&a), bits(&b));
            let (mut a, mut b) = (xs.to_vec(), xs.to_vec());
            bias_relu(&mut a, &bias);
            bias_relu_scalar(&mut b, &bias);
            prop_assert_eq!(bits(&a), bits(&b));
            let (mut a, mut b) = (xs.to_vec(), xs.to_vec());
            softmax_rows(&mut a, width);
            softmax_rows_scalar(&mut b, width);
            prop_assert_eq!(bits(&a), bits(&b));
            let gamma: Vec<f32> = (0..width).map(|i| 1.0 + i as f32 / 10.0).collect();
            let beta: Vec<f32> = (0..width).map(|i| i as f32 / 100.0).collect();
            let res: Vec<f32> = xs.iter().map(|x| x * 0.5).collect();
            let (mut a, mut b) = (xs.to_vec(), xs.to_vec());
            add_norm_rows(&mut a, &bias, &res, &gamma, &beta, 1e-12);
            add_norm_rows_scalar(&mut b, &bias, &res, &gamma, &beta, 1e-12);
            prop_assert_eq!(bits(&a), bits(&b));
        }
    }
}
