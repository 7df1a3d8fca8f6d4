//! Counting the set bits of a bitset: how a union or a conjunction of doc-id bitsets becomes a
//! count.
//!
//! For the original x86-64 target, `u64::count_ones` compiles to a dozen shift-and-mask
//! instructions per word: a window of 512 words then costs more to count than to fill. The fast
//! kernel is the same loop compiled with `popcnt` (and, where the CPU has them, AVX-512's
//! `vpopcntq` on eight words at a time), chosen once per process at run time;
//! [`count_ones_scalar`] is the portable twin the property test compares it against. (A build
//! for x86-64-v2 or later has `popcnt` in its baseline: the portable twin then uses it too, and
//! the `popcnt` check is a compile-time `true`.)

/// Counts the set bits of a slice of words.
pub type CountOnes = fn(&[u64]) -> u64;

/// The number of set bits in `words`, through the process-wide kernel.
#[inline]
pub fn count_ones(words: &[u64]) -> u64 {
    (counter())(words)
}

/// The process-wide [`CountOnes`], chosen once (`QUARRY_SIMD=scalar` forces the portable one).
pub fn counter() -> CountOnes {
    static CHOICE: std::sync::OnceLock<CountOnes> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| crate::Kernel::pick(fast_counter(), count_ones_scalar))
}

/// The portable [`CountOnes`] (the reference).
pub fn count_ones_scalar(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// The fastest [`CountOnes`] this CPU runs, if faster than the portable one: AVX-512
/// `vpopcntq` when present, else the `popcnt` instruction.
pub fn fast_counter() -> Option<CountOnes> {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::cpu::{has, has_all, Feature};
        if has_all(&[Feature::Avx512f, Feature::Avx512vpopcntdq, Feature::Popcnt]) {
            return Some(|words| {
                // SAFETY: AVX-512F, AVX-512 VPOPCNTDQ and popcnt were detected just above.
                unsafe { count_ones_avx512(words) }
            });
        }
        if has(Feature::Popcnt) {
            return Some(|words| {
                // SAFETY: popcnt was detected just above.
                unsafe { count_ones_popcnt(words) }
            });
        }
    }
    None
}

/// The scalar loop with the `popcnt` instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_ones_popcnt(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Eight words per `vpopcntq`, summed in a vector accumulator; the tail through `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
unsafe fn count_ones_avx512(words: &[u64]) -> u64 {
    use std::arch::x86_64::*;
    let chunks = words.chunks_exact(8);
    let tail = chunks.remainder();
    let mut acc = _mm512_setzero_si512();
    for c in chunks {
        // SAFETY: `c` is eight `u64`s: the unaligned 64-byte load reads inside it.
        let v = unsafe { _mm512_loadu_si512(c.as_ptr().cast()) };
        acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(v));
    }
    _mm512_reduce_add_epi64(acc) as u64
        + tail.iter().map(|w| u64::from(w.count_ones())).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_chosen_kernel_agrees_with_scalar(words in proptest::collection::vec(any::<u64>(), 0..200)) {
            let want = count_ones_scalar(&words);
            prop_assert_eq!(count_ones(&words), want);
            if let Some(fast) = fast_counter() {
                prop_assert_eq!(fast(&words), want);
            }
        }
    }

    /// Runs `kernel` (when this CPU has its features) on random words against the scalar twin,
    /// whatever kernel `fast_counter` would pick; prints whether it ran (`--nocapture`).
    fn forced_kernel_agrees_with_scalar(name: &str, available: bool, kernel: CountOnes) {
        use proptest::test_runner::{Config, TestRunner};
        if !available {
            eprintln!("popcount kernel {name}: NOT RUN, this CPU lacks its features");
            return;
        }
        let config = Config::default();
        let cases = config.cases;
        TestRunner::new(config)
            .run(&proptest::collection::vec(any::<u64>(), 0..200), |words| {
                prop_assert_eq!(kernel(&words), count_ones_scalar(&words));
                Ok(())
            })
            .unwrap();
        eprintln!("popcount kernel {name}: ran, {cases} random word lists equal to scalar");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn popcount_kernel_popcnt_agrees_with_scalar() {
        use crate::cpu::{has, Feature};
        forced_kernel_agrees_with_scalar("popcnt", has(Feature::Popcnt), |words| {
            // SAFETY: only called when popcnt was detected (checked before running it).
            unsafe { count_ones_popcnt(words) }
        });
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn popcount_kernel_avx512_agrees_with_scalar() {
        use crate::cpu::{has_all, Feature};
        let ok = has_all(&[Feature::Avx512f, Feature::Avx512vpopcntdq, Feature::Popcnt]);
        forced_kernel_agrees_with_scalar("avx512", ok, |words| {
            // SAFETY: only called when AVX-512F, VPOPCNTDQ and popcnt were detected.
            unsafe { count_ones_avx512(words) }
        });
    }

    #[test]
    fn scalar_counts_known_words() {
        assert_eq!(count_ones_scalar(&[]), 0);
        assert_eq!(count_ones_scalar(&[u64::MAX; 9]), 9 * 64);
        assert_eq!(count_ones_scalar(&[1, 3, 1 << 63]), 4);
    }
}
