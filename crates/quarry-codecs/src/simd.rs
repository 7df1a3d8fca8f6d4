//! Which kernel unpacks a 128-integer block on this CPU, and the hand-written kernels themselves.
//!
//! Every kernel decodes the same on-disk layout: the `bitpacking` crate's `BitPacker4x` layout.
//! A block of `b` bits per value is `b` words of 128 bits; the 128 integers are four interleaved
//! lanes (integer `i` lives in lane `i % 4` at position `i / 4`), and lane `j`'s 32 values are
//! packed least-significant bit first into the 32-bit column `j` of those words, so value `k` of a
//! lane starts at bit `k * b` of the lane's bit stream. Sorted blocks store the wrapping
//! differences of consecutive integers (the first against the block's base) in that layout.
//!
//! Kernels ([`Kernel`]):
//! - `scalar`: portable Rust, one value at a time; the reference every other kernel is tested
//!   against;
//! - `sse`: the `bitpacking` crate's `BitPacker4x` (SSE3, fused prefix sum), quarry's decoder
//!   before the hand-written kernels;
//! - `avx2`: one 256-bit register carries positions `k` and `16 + k` of the four lanes (two
//!   128-bit halves with their own shift counts, `vpsrlvd`/`vpsllvd`), unrolled per width.
//!
//! An AVX-512 twin (positions `k`, `8 + k`, `16 + k`, `24 + k` in one 512-bit register) was
//! written and measured: no faster than `avx2` on this machine's blocks (see
//! `bench/results/simd-2026-11-23.md`), so it is not kept. (The dense-block decoder in
//! `dense.rs` does use AVX-512: `vpcompressd` has no AVX2 equivalent.)
//!
//! Sorted blocks: `avx2` fuses the prefix sum into the unpack.
//! The choice is made once per process ([`Kernel::default_kernel`]): `QUARRY_SIMD=scalar|sse|
//! avx2|auto` forces one (an unavailable or unknown value falls back to `auto`).
use std::sync::OnceLock;

use crate::bitpack::BLOCK_LEN;

/// A block decoder implementation; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    Scalar,
    Sse,
    Avx2,
}

/// Unpacks one block of `B` bits per value; `bytes` holds at least `16 * B` bytes (checked by
/// the caller, and again by the entry points before any unchecked read).
pub(crate) type UnpackFn = fn(&[u8], &mut [u32; BLOCK_LEN]);

/// Unpacks one sorted block of `B` bits per value: differences, summed from the base.
pub(crate) type UnpackSortedFn = fn(u32, &[u8], &mut [u32; BLOCK_LEN]);

/// A kernel's entry points, one unpack function per width 0..=32, plain and sorted.
pub(crate) struct Table {
    pub(crate) unpack: [UnpackFn; 33],
    pub(crate) unpack_sorted: [UnpackSortedFn; 33],
}

impl Kernel {
    /// Every kernel, slowest first.
    pub const ALL: [Kernel; 3] = [Kernel::Scalar, Kernel::Sse, Kernel::Avx2];

    /// The name used by `QUARRY_SIMD` and the benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Sse => "sse",
            Kernel::Avx2 => "avx2",
        }
    }

    /// The kernel called `name`, if any.
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this CPU can run the kernel (`sse` always can: the crate falls back to its scalar
    /// twin of the same layout).
    pub fn available(self) -> bool {
        match self {
            Kernel::Scalar | Kernel::Sse => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => crate::cpu::has(crate::cpu::Feature::Avx2),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 => false,
        }
    }

    /// The kernels this CPU can run.
    pub fn available_kernels() -> Vec<Kernel> {
        Kernel::ALL.into_iter().filter(|k| k.available()).collect()
    }

    /// The kernel `auto` picks on this CPU.
    pub fn best() -> Kernel {
        if Kernel::Avx2.available() {
            Kernel::Avx2
        } else {
            Kernel::Sse
        }
    }

    /// The process-wide kernel: `QUARRY_SIMD` if set to an available kernel, else [`best`](Self::best).
    /// Decided on first use and fixed afterwards.
    pub fn default_kernel() -> Kernel {
        static CHOICE: OnceLock<Kernel> = OnceLock::new();
        *CHOICE.get_or_init(|| {
            std::env::var("QUARRY_SIMD")
                .ok()
                .and_then(|v| Kernel::from_name(v.trim()))
                .filter(|k| k.available())
                .unwrap_or_else(Kernel::best)
        })
    }

    /// `fast` unless `QUARRY_SIMD=scalar` asks for the portable code or the CPU cannot run it
    /// (`None`), else `scalar`: how the kernels outside block unpacking (dense blocks, varint
    /// skipping) are chosen once per process.
    pub(crate) fn pick<T>(fast: Option<T>, scalar: T) -> T {
        match fast {
            Some(f) if Kernel::default_kernel() != Kernel::Scalar => f,
            _ => scalar,
        }
    }

    /// The entry points of a hand-written or scalar kernel; `None` for `sse` (which goes through
    /// the `bitpacking` crate) and for kernels this CPU cannot run.
    pub(crate) fn table(self) -> Option<&'static Table> {
        match self {
            Kernel::Sse => None,
            Kernel::Scalar => Some(&SCALAR),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.available() => Some(&x86::AVX2),
            _ => None,
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Expands `$f::<0>, ..., $f::<32>` as an array.
macro_rules! widths {
    ($f:ident) => {
        [
            $f::<0>, $f::<1>, $f::<2>, $f::<3>, $f::<4>, $f::<5>, $f::<6>, $f::<7>, $f::<8>,
            $f::<9>, $f::<10>, $f::<11>, $f::<12>, $f::<13>, $f::<14>, $f::<15>, $f::<16>,
            $f::<17>, $f::<18>, $f::<19>, $f::<20>, $f::<21>, $f::<22>, $f::<23>, $f::<24>,
            $f::<25>, $f::<26>, $f::<27>, $f::<28>, $f::<29>, $f::<30>, $f::<31>, $f::<32>,
        ]
    };
}

static SCALAR: Table = Table {
    unpack: widths!(scalar_entry),
    unpack_sorted: widths!(scalar_sorted_entry),
};

fn scalar_entry<const B: u32>(bytes: &[u8], out: &mut [u32; BLOCK_LEN]) {
    unpack_scalar(B, bytes, out)
}

fn scalar_sorted_entry<const B: u32>(base: u32, bytes: &[u8], out: &mut [u32; BLOCK_LEN]) {
    unpack_scalar(B, bytes, out);
    integrate_scalar(base, out);
}

/// The reference decoder: value by value, bounds-checked (panics only if `bytes` is shorter than
/// `16 * bits`, which callers rule out).
pub(crate) fn unpack_scalar(bits: u32, bytes: &[u8], out: &mut [u32; BLOCK_LEN]) {
    if bits == 0 {
        out.fill(0);
        return;
    }
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    let word = |i: usize| {
        u32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    };
    for lane in 0..4 {
        for k in 0..32u32 {
            let p = k * bits;
            let (w, s) = ((p / 32) as usize, p % 32);
            let mut v = word(4 * w + lane) >> s;
            if s + bits > 32 {
                v |= word(4 * (w + 1) + lane) << (32 - s);
            }
            out[4 * k as usize + lane] = v & mask;
        }
    }
}

/// Turns wrapping differences into values, starting from `base`.
pub(crate) fn integrate_scalar(base: u32, out: &mut [u32; BLOCK_LEN]) {
    let mut acc = base;
    for v in out.iter_mut() {
        acc = acc.wrapping_add(*v);
        *v = acc;
    }
}

/// Asks the CPU to bring the cache line holding `r` into its caches, without waiting for it.
///
/// For loops that know a few steps ahead which scattered memory they will touch (the indexer's
/// term table): issued early, the misses overlap with other work instead of stalling it one at a
/// time. A hint only: no effect on results, and nothing on other architectures.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 CPU has; a prefetch never faults
    // and writes nothing, and `r` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Table, BLOCK_LEN};

    pub(super) static AVX2: Table = Table {
        unpack: widths!(avx2_entry),
        unpack_sorted: widths!(avx2_sorted_entry),
    };

    /// Runs `$body` with `$k` bound to each of the literals, unrolled (so that every word index
    /// and shift count is a constant).
    macro_rules! unroll {
        ($k:ident in [$($n:literal),*] $body:block) => {
            $( { let $k: u32 = $n; $body } )*
        };
    }

    fn avx2_entry<const B: u32>(bytes: &[u8], out: &mut [u32; BLOCK_LEN]) {
        assert!(
            bytes.len() >= 16 * B as usize,
            "caller checks the block length"
        );
        // SAFETY: `AVX2` (the only place this function is referenced) is handed out by
        // `Kernel::table` only after `cpu::has(Feature::Avx2)`; the input length
        // was checked above, `out` is a whole block.
        unsafe { unpack_avx2::<B, false>(0, bytes, out) }
    }

    fn avx2_sorted_entry<const B: u32>(base: u32, bytes: &[u8], out: &mut [u32; BLOCK_LEN]) {
        assert!(
            bytes.len() >= 16 * B as usize,
            "caller checks the block length"
        );
        // SAFETY: as in `avx2_entry`.
        unsafe { unpack_avx2::<B, true>(base, bytes, out) }
    }

    /// Word index and shift of position `pos` of a lane at `B` bits, and the word holding the
    /// value's high bits (the same word when the value does not straddle two words: its
    /// contribution is then shifted above bit `B` or out of the register, and masked away).
    #[inline(always)]
    const fn place<const B: u32>(pos: u32) -> (usize, u32, usize) {
        let p = pos * B;
        let (w, s) = (p / 32, p % 32);
        let next = if s + B > 32 { w + 1 } else { w };
        (w as usize, s, next as usize)
    }

    /// Unpacks a block; with `SORTED`, the values are differences and the prefix sum from
    /// `base` is fused in: each 128-bit half (positions `k` and `16 + k`, i.e. integers `4k..`
    /// and `64 + 4k..`) runs its own running sum with in-lane shuffles, the second half from 0,
    /// and the first half's total is added to the second half at the end.
    ///
    /// # Safety
    /// AVX2 must be available and `bytes.len() >= 16 * B`.
    #[target_feature(enable = "avx2")]
    // The unrolled loop's last step sets a carry no later step reads.
    #[allow(unused_assignments)]
    unsafe fn unpack_avx2<const B: u32, const SORTED: bool>(
        base: u32,
        bytes: &[u8],
        out: &mut [u32; BLOCK_LEN],
    ) {
        let o = out.as_mut_ptr().cast::<__m128i>();
        if B == 0 {
            out.fill(if SORTED { base } else { 0 });
            return;
        }
        if B == 32 {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            if SORTED {
                // SAFETY: AVX2 is available (this function's own contract).
                unsafe { integrate_avx2(base, out) };
            }
            return;
        }
        let inp = bytes.as_ptr().cast::<__m128i>();
        let mask = _mm256_set1_epi32(((1u64 << B) - 1) as i32);
        let mut carry = _mm256_setr_epi32(
            base as i32,
            base as i32,
            base as i32,
            base as i32,
            0,
            0,
            0,
            0,
        );
        unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let (w0, s0, n0) = place::<B>(k);
            let (w1, s1, n1) = place::<B>(16 + k);
            // SAFETY: every word index is below B (the last position, 31, starts in word
            // floor(31 * B / 32) <= B - 1, and a straddling value's next word holds its bits),
            // so each 16-byte read lies in the first 16 * B bytes; unaligned loads/stores.
            unsafe {
                let cur = _mm256_loadu2_m128i(inp.add(w1), inp.add(w0));
                let sr = _mm256_setr_epi32(
                    s0 as i32, s0 as i32, s0 as i32, s0 as i32,
                    s1 as i32, s1 as i32, s1 as i32, s1 as i32,
                );
                let mut v = _mm256_srlv_epi32(cur, sr);
                if n0 != w0 || n1 != w1 {
                    let nxt = _mm256_loadu2_m128i(inp.add(n1), inp.add(n0));
                    let sl = _mm256_setr_epi32(
                        (32 - s0) as i32, (32 - s0) as i32, (32 - s0) as i32, (32 - s0) as i32,
                        (32 - s1) as i32, (32 - s1) as i32, (32 - s1) as i32, (32 - s1) as i32,
                    );
                    v = _mm256_or_si256(v, _mm256_sllv_epi32(nxt, sl));
                }
                v = _mm256_and_si256(v, mask);
                if SORTED {
                    v = _mm256_add_epi32(v, _mm256_slli_si256::<4>(v));
                    v = _mm256_add_epi32(v, _mm256_slli_si256::<8>(v));
                    v = _mm256_add_epi32(v, carry);
                    carry = _mm256_shuffle_epi32::<0xFF>(v);
                }
                _mm256_storeu2_m128i(o.add(16 + k as usize), o.add(k as usize), v);
            }
        });
        if SORTED {
            let low_total = _mm256_set1_epi32(out[63] as i32);
            let p = out.as_mut_ptr().cast::<__m256i>();
            for i in 8..16 {
                // SAFETY: 8 <= i < 16: 32-byte accesses inside the 512-byte block.
                unsafe {
                    let x = _mm256_loadu_si256(p.add(i));
                    _mm256_storeu_si256(p.add(i), _mm256_add_epi32(x, low_total));
                }
            }
        }
    }

    /// Wrapping prefix sum of a block from `base`, eight integers per step.
    ///
    /// # Safety
    /// AVX2 must be available.
    #[target_feature(enable = "avx2")]
    unsafe fn integrate_avx2(base: u32, out: &mut [u32; BLOCK_LEN]) {
        let p = out.as_mut_ptr().cast::<__m256i>();
        let mut carry = _mm256_set1_epi32(base as i32);
        let third = _mm256_set1_epi32(3);
        let last = _mm256_set1_epi32(7);
        for i in 0..BLOCK_LEN / 8 {
            // SAFETY: i < 16, so the 32-byte access at p + i lies inside the 512-byte block.
            unsafe {
                let mut x = _mm256_loadu_si256(p.add(i));
                x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
                x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
                let low_total = _mm256_permutevar8x32_epi32(x, third);
                x = _mm256_add_epi32(
                    x,
                    _mm256_blend_epi32::<0xF0>(_mm256_setzero_si256(), low_total),
                );
                x = _mm256_add_epi32(x, carry);
                carry = _mm256_permutevar8x32_epi32(x, last);
                _mm256_storeu_si256(p.add(i), x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitpacking::{BitPacker, BitPacker4x};
    use proptest::prelude::*;

    fn pack(bits: u32, values: &[u32; BLOCK_LEN]) -> Vec<u8> {
        let mut buf = vec![0u8; 16 * bits as usize];
        BitPacker4x::new().compress(values, &mut buf, bits as u8);
        buf
    }

    fn masked(bits: u32, seed: &[u32]) -> [u32; BLOCK_LEN] {
        let mask = if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let v: Vec<u32> = seed.iter().map(|x| x & mask).collect();
        v.try_into().unwrap()
    }

    #[test]
    fn scalar_matches_the_bitpacking_crate_on_every_width() {
        let seed: Vec<u32> = (0..BLOCK_LEN as u32)
            .map(|i| i.wrapping_mul(0x9E37_79B9).rotate_left(i % 32))
            .collect();
        for bits in 0..=32 {
            let values = masked(bits, &seed);
            let mut out = [7u32; BLOCK_LEN];
            unpack_scalar(bits, &pack(bits, &values), &mut out);
            assert_eq!(out, values, "width {bits}");
        }
    }

    #[test]
    fn the_env_choice_is_available_and_names_round_trip() {
        assert!(Kernel::default_kernel().available());
        for k in Kernel::ALL {
            assert_eq!(Kernel::from_name(k.name()), Some(k));
            assert_eq!(k.table().is_some(), k != Kernel::Sse && k.available());
        }
        assert_eq!(Kernel::from_name("avx3"), None);
    }

    /// Forces `kernel` (through [`crate::BlockCodec::with_kernel`], as `QUARRY_SIMD` would)
    /// and checks that it unpacks every width like the scalar twin, plain and sorted, from random
    /// bytes (any bit pattern is a valid block) followed by random trailing bytes; a kernel this
    /// CPU cannot run is reported, not run. Prints which kernel ran (`--nocapture`).
    fn kernel_unpacks_like_scalar(kernel: Kernel) {
        use proptest::test_runner::{Config, TestRunner};
        if !kernel.available() {
            eprintln!("simd kernel {kernel}: NOT RUN, this CPU cannot run it");
            return;
        }
        let config = Config::default();
        let cases = config.cases;
        let codec = crate::BlockCodec::with_kernel(kernel);
        let strategy = (
            proptest::collection::vec(any::<u8>(), 16 * 32 + 64),
            any::<u32>(),
        );
        TestRunner::new(config)
            .run(&strategy, |(bytes, base)| {
                for bits in 0..=32u32 {
                    let mut want = [0u32; BLOCK_LEN];
                    unpack_scalar(bits, &bytes, &mut want);
                    let len = 16 * bits as usize;
                    let mut got = [1u32; BLOCK_LEN];
                    // Exactly the block's bytes: no kernel may read past them.
                    let used = codec.unpack(&bytes[..len], bits as u8, &mut got).unwrap();
                    prop_assert_eq!(used, len);
                    prop_assert_eq!(got, want, "{} width {}", kernel, bits);
                    let mut want_sorted = want;
                    integrate_scalar(base, &mut want_sorted);
                    codec
                        .unpack_sorted(base, &bytes[..len], bits as u8, &mut got)
                        .unwrap();
                    prop_assert_eq!(got, want_sorted, "{} sorted width {}", kernel, bits);
                }
                Ok(())
            })
            .unwrap();
        eprintln!("simd kernel {kernel}: ran, {cases} random blocks x 33 widths equal to scalar");
    }

    #[test]
    fn kernel_scalar_unpacks_like_the_scalar_twin() {
        kernel_unpacks_like_scalar(Kernel::Scalar);
    }

    #[test]
    fn kernel_sse_unpacks_like_the_scalar_twin() {
        kernel_unpacks_like_scalar(Kernel::Sse);
    }

    #[test]
    fn kernel_avx2_unpacks_like_the_scalar_twin() {
        kernel_unpacks_like_scalar(Kernel::Avx2);
    }

    #[test]
    fn every_kernel_has_a_test_of_its_own() {
        // A kernel added to `ALL` needs its `kernel_<name>_unpacks_like_the_scalar_twin` above.
        assert_eq!(Kernel::ALL.map(Kernel::name), ["scalar", "sse", "avx2"]);
        eprintln!(
            "simd kernels this CPU runs: {:?}",
            Kernel::available_kernels()
                .into_iter()
                .map(Kernel::name)
                .collect::<Vec<_>>()
        );
    }
}
