//! Which of the x86-64 features quarry's kernels dispatch on this CPU has, found with as few
//! `cpuid` instructions as correctness allows.
//!
//! Why not `std::arch::is_x86_feature_detected!`: its first use in a process fills std's cache
//! of every feature std knows: nine `cpuid` instructions here. In a virtual machine each `cpuid`
//! traps to the hypervisor (5.5-10 µs on the benchmark VMs), so that first use cost ~90 µs of
//! every cold start (measured with `perf`; ARCHITECTURE.md, `quarry-codecs`). Here, once per
//! process: `cpuid` leaf 1, `xgetbv(0)` (executed by the CPU, not intercepted) and, when AVX is
//! usable, leaf 7: two `cpuid`s, or none where glibc (2.33 and later) hands out the leaves its
//! loader read at start-up (`glibc::leaves`). (Leaf 0, the highest leaf, is not needed then: a CPU with XSAVE
//! enumerates its state in leaf 0xD, so it has leaf 7. Without usable AVX the only feature left
//! is BMI2, for which leaf 0 is asked first: three `cpuid`s at most.)
//!
//! The answers follow std_detect's rules, and a test holds them to std's macro: AVX2 needs the OS
//! to save the YMM state (XCR0 bits 1 and 2); the AVX-512 features need the opmask and ZMM state
//! (XCR0 bits 5 to 7) and FMA and F16C as well (Rust's `avx512f` implies both); BMI2 is not
//! trusted on Intel CPUs without AVX (erratum SKL052). One difference: AVX2 also needs leaf 1's
//! AVX bit (std does not check it; no real CPU has one without the other).
//!
//! SSE4.2 is here for the CRC32C of every checksum (`checksum`): the `crc32c` crate asks std's
//! macro on each call, so its first call paid std's whole detection. (Making SSE4.2 part of the
//! compile-time baseline, `-C target-cpu=x86-64-v2`, also removes that cost, but for every crate
//! of a binary: measured with the benchmark's Tantivy in the same binary, it took std's
//! detection out of Tantivy's cold start as well, which this module leaves as Tantivy's default
//! build has it.) A feature in the compile-time baseline is answered without any detection, as
//! std's macro does. On other architectures every feature is absent.
use std::sync::atomic::{AtomicU32, Ordering};

/// A CPU feature some kernel needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    Sse42,
    Popcnt,
    Avx2,
    Bmi2,
    Avx512f,
    Avx512bw,
    Avx512vpopcntdq,
}

impl Feature {
    /// Every feature this module knows.
    pub const ALL: [Feature; 7] = [
        Feature::Sse42,
        Feature::Popcnt,
        Feature::Avx2,
        Feature::Bmi2,
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512vpopcntdq,
    ];

    /// The name `is_x86_feature_detected!` and `#[target_feature]` use.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Sse42 => "sse4.2",
            Feature::Popcnt => "popcnt",
            Feature::Avx2 => "avx2",
            Feature::Bmi2 => "bmi2",
            Feature::Avx512f => "avx512f",
            Feature::Avx512bw => "avx512bw",
            Feature::Avx512vpopcntdq => "avx512vpopcntdq",
        }
    }

    const fn bit(self) -> u32 {
        1 << self as u32
    }

    /// Whether the build already requires the feature (then nothing is detected).
    const fn in_baseline(self) -> bool {
        match self {
            Feature::Sse42 => cfg!(target_feature = "sse4.2"),
            Feature::Popcnt => cfg!(target_feature = "popcnt"),
            Feature::Avx2 => cfg!(target_feature = "avx2"),
            Feature::Bmi2 => cfg!(target_feature = "bmi2"),
            Feature::Avx512f => cfg!(target_feature = "avx512f"),
            Feature::Avx512bw => cfg!(target_feature = "avx512bw"),
            Feature::Avx512vpopcntdq => cfg!(target_feature = "avx512vpopcntdq"),
        }
    }
}

/// Whether this CPU (and OS) runs code compiled with `feature`; detected on the first call in
/// the process that needs detection, a relaxed atomic load afterwards.
#[inline]
pub fn has(feature: Feature) -> bool {
    feature.in_baseline() || detected() & feature.bit() != 0
}

/// Whether [`has`] every one of `features`.
#[inline]
pub fn has_all(features: &[Feature]) -> bool {
    features.iter().all(|&f| has(f))
}

/// The detected features as [`Feature::bit`]s, plus `READY` once detection has run.
static FEATURES: AtomicU32 = AtomicU32::new(0);
const READY: u32 = 1 << 31;

#[inline]
fn detected() -> u32 {
    let v = FEATURES.load(Ordering::Relaxed);
    if v & READY != 0 {
        v
    } else {
        detect_once()
    }
}

/// Detects and caches. Threads racing here each detect and store the same value.
#[cold]
#[inline(never)]
fn detect_once() -> u32 {
    let v = detect() | READY;
    FEATURES.store(v, Ordering::Relaxed);
    v
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> u32 {
    0
}

#[cfg(target_arch = "x86_64")]
fn detect() -> u32 {
    use std::arch::x86_64::{__cpuid_count, _xgetbv};
    let recorded = glibc::leaves();
    x86::from_cpu(
        |leaf, sub_leaf| {
            if let (Some([l1, l7]), 0) = (recorded, sub_leaf) {
                match leaf {
                    1 => return l1,
                    7 => return l7,
                    _ => {}
                }
            }
            // SAFETY: every x86_64 CPU has `cpuid` (the intrinsic is a safe function from
            // Rust 1.94, unsafe in the 1.89 the crate supports).
            #[allow(unused_unsafe)]
            let r = unsafe { __cpuid_count(leaf, sub_leaf) };
            [r.eax, r.ebx, r.ecx, r.edx]
        },
        || {
            // SAFETY: `from_cpu` asks only when leaf 1 reports XSAVE and OSXSAVE, i.e. the OS
            // has set CR4.OSXSAVE, without which `xgetbv` would fault; XCR0 always exists.
            unsafe { _xgetbv(0) }
        },
    )
}

/// The `cpuid` leaves 1 and 7 (sub-leaf 0) that glibc's loader already read at start-up (it
/// issues some 70 `cpuid`s before `main` in every process), from `__x86_get_cpuid_feature_leaf`
/// (glibc 2.33 and later, looked up with `dlsym` so that older C libraries just fall back to the
/// instruction): the same register values without a trap to the hypervisor.
#[cfg(target_arch = "x86_64")]
mod glibc {
    /// glibc's `struct cpuid_feature` (`<bits/platform/x86.h>`): the registers `cpuid`
    /// returned, then the bits of the usable features.
    #[repr(C)]
    struct CpuidFeature {
        cpuid: [u32; 4],
        active: [u32; 4],
    }

    type GetLeaf = unsafe extern "C" fn(u32) -> *const CpuidFeature;

    /// `CPUID_INDEX_1` and `CPUID_INDEX_7` of glibc's enumeration.
    const INDEX_1: u32 = 0;
    const INDEX_7: u32 = 1;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub(super) fn leaves() -> Option<[[u32; 4]; 2]> {
        use std::ffi::{c_char, c_void};
        extern "C" {
            fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        }
        // SAFETY: `dlsym` with `RTLD_DEFAULT` (a null handle in glibc) and a NUL-terminated
        // name only looks the symbol up.
        let f = unsafe {
            dlsym(
                std::ptr::null_mut(),
                c"__x86_get_cpuid_feature_leaf".as_ptr(),
            )
        };
        if f.is_null() {
            return None;
        }
        // SAFETY: the symbol is glibc's function of this signature (a pointer to a static
        // structure, valid for the whole process, for any index up to its last one).
        let leaf = |i: u32| unsafe {
            let get: GetLeaf = std::mem::transmute::<*mut c_void, GetLeaf>(f);
            get(i).as_ref().map(|l| l.cpuid)
        };
        let (l1, l7) = (leaf(INDEX_1)?, leaf(INDEX_7)?);
        // glibc leaves an index it did not read at zero; a CPU always reports leaf 1.
        (l1 != [0; 4]).then_some([l1, l7])
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(super) fn leaves() -> Option<[[u32; 4]; 2]> {
        None
    }
}

/// The decision from `cpuid` and XCR0, apart from the instructions so that tests can feed it
/// made-up CPUs.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Feature;

    // CPUID.1:ECX.
    const FMA: u32 = 1 << 12;
    const SSE42: u32 = 1 << 20;
    const POPCNT: u32 = 1 << 23;
    const XSAVE: u32 = 1 << 26;
    const OSXSAVE: u32 = 1 << 27;
    const AVX: u32 = 1 << 28;
    const F16C: u32 = 1 << 29;
    // CPUID.(7,0):EBX.
    const AVX2: u32 = 1 << 5;
    const BMI2: u32 = 1 << 8;
    const AVX512F: u32 = 1 << 16;
    const AVX512BW: u32 = 1 << 30;
    // CPUID.(7,0):ECX.
    const AVX512VPOPCNTDQ: u32 = 1 << 14;
    // XCR0: SSE and AVX (YMM) state; opmask, ZMM_Hi256 and Hi16_ZMM state.
    const XCR0_YMM: u64 = 0b110;
    const XCR0_ZMM: u64 = 0b1110_0000;
    /// "GenuineIntel", as leaf 0 returns it in EBX, ECX, EDX ("Genu", "ntel", "ineI").
    const GENUINE_INTEL: [u32; 3] = [0x756e_6547, 0x6c65_746e, 0x4965_6e69];

    /// The [`Feature::bit`]s of a CPU whose `cpuid(leaf, sub_leaf)` gives `[eax, ebx, ecx, edx]`
    /// and whose XCR0 is `xgetbv()`; see the module documentation for which leaves are asked.
    pub(super) fn from_cpu(
        mut cpuid: impl FnMut(u32, u32) -> [u32; 4],
        xgetbv: impl FnOnce() -> u64,
    ) -> u32 {
        let [_, _, ecx1, _] = cpuid(1, 0);
        let os_xsave = ecx1 & (XSAVE | OSXSAVE) == XSAVE | OSXSAVE;
        let xcr0 = if os_xsave { xgetbv() } else { 0 };
        let avx = ecx1 & AVX != 0 && xcr0 & XCR0_YMM == XCR0_YMM;
        let (ebx7, ecx7) = if avx {
            // XSAVE implies leaf 0xD, hence leaf 7: no leaf 0.
            let [_, ebx, ecx, _] = cpuid(7, 0);
            (ebx, ecx)
        } else {
            // Only BMI2 can be left, and std drops it on Intel CPUs without AVX (SKL052).
            let [max_leaf, ebx, ecx, edx] = cpuid(0, 0);
            if max_leaf >= 7 && [ebx, ecx, edx] != GENUINE_INTEL {
                (cpuid(7, 0)[1] & BMI2, 0)
            } else {
                (0, 0)
            }
        };
        let mut f = 0;
        let mut set = |present: bool, feature: Feature| {
            if present {
                f |= feature.bit();
            }
        };
        set(ecx1 & SSE42 != 0, Feature::Sse42);
        set(ecx1 & POPCNT != 0, Feature::Popcnt);
        set(ebx7 & BMI2 != 0, Feature::Bmi2);
        set(avx && ebx7 & AVX2 != 0, Feature::Avx2);
        let avx512 = avx && xcr0 & XCR0_ZMM == XCR0_ZMM && ecx1 & (FMA | F16C) == FMA | F16C;
        set(avx512 && ebx7 & AVX512F != 0, Feature::Avx512f);
        set(avx512 && ebx7 & AVX512BW != 0, Feature::Avx512bw);
        set(
            avx512 && ecx7 & AVX512VPOPCNTDQ != 0,
            Feature::Avx512vpopcntdq,
        );
        f
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const INTEL: [u32; 3] = GENUINE_INTEL;
        const AMD: [u32; 3] = [0x6874_7541, 0x444d_4163, 0x6974_6e65]; // "AuthenticAMD"

        /// A made-up CPU: its leaves 0, 1 and 7 and XCR0; returns the features and the leaves
        /// asked, in order.
        fn run(
            vendor: [u32; 3],
            max_leaf: u32,
            ecx1: u32,
            leaf7: [u32; 2],
            xcr0: u64,
        ) -> (Vec<Feature>, Vec<u32>) {
            let mut asked = Vec::new();
            let f = from_cpu(
                |leaf, sub_leaf| {
                    assert_eq!(sub_leaf, 0);
                    assert!(leaf <= max_leaf, "leaf {leaf} past the highest, {max_leaf}");
                    asked.push(leaf);
                    match leaf {
                        0 => [max_leaf, vendor[0], vendor[1], vendor[2]],
                        1 => [0, 0, ecx1, 0],
                        7 => [0, leaf7[0], leaf7[1], 0],
                        _ => [0; 4],
                    }
                },
                || {
                    assert_eq!(
                        ecx1 & (XSAVE | OSXSAVE),
                        XSAVE | OSXSAVE,
                        "xgetbv would fault"
                    );
                    xcr0
                },
            );
            let features = Feature::ALL
                .into_iter()
                .filter(|x| f & x.bit() != 0)
                .collect();
            (features, asked)
        }

        const EVERYTHING7: [u32; 2] = [AVX2 | BMI2 | AVX512F | AVX512BW, AVX512VPOPCNTDQ];
        const AVX_CPU: u32 = FMA | SSE42 | POPCNT | XSAVE | OSXSAVE | AVX | F16C;

        #[test]
        fn an_avx512_cpu_takes_two_cpuids() {
            let (f, asked) = run(INTEL, 0x1f, AVX_CPU, EVERYTHING7, 0xe7);
            assert_eq!(f, Feature::ALL);
            assert_eq!(asked, [1, 7]);
        }

        #[test]
        fn avx512_needs_the_os_to_save_zmm_and_fma_f16c() {
            use Feature::*;
            let (f, _) = run(INTEL, 0x1f, AVX_CPU, EVERYTHING7, 0x7);
            assert_eq!(f, [Sse42, Popcnt, Avx2, Bmi2]);
            let (f, _) = run(AMD, 0x10, AVX_CPU & !F16C, EVERYTHING7, 0xe7);
            assert_eq!(f, [Sse42, Popcnt, Avx2, Bmi2]);
        }

        #[test]
        fn avx2_needs_the_os_to_save_ymm() {
            // No OSXSAVE: no xgetbv, no AVX2; an Intel CPU then loses BMI2 as well.
            let (f, asked) = run(INTEL, 0x1f, AVX_CPU & !OSXSAVE, EVERYTHING7, 0);
            assert_eq!(f, [Feature::Sse42, Feature::Popcnt]);
            assert_eq!(asked, [1, 0]);
            let (f, asked) = run(AMD, 0x10, AVX_CPU, EVERYTHING7, 0x3);
            assert_eq!(f, [Feature::Sse42, Feature::Popcnt, Feature::Bmi2]);
            assert_eq!(asked, [1, 0, 7]);
        }

        #[test]
        fn leaf_7_is_asked_only_if_it_exists() {
            let (f, asked) = run(AMD, 6, POPCNT, EVERYTHING7, 0);
            assert_eq!(f, [Feature::Popcnt]);
            assert_eq!(asked, [1, 0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_std_on_every_feature() {
        for f in Feature::ALL {
            #[cfg(target_arch = "x86_64")]
            let want = match f {
                Feature::Sse42 => std::arch::is_x86_feature_detected!("sse4.2"),
                Feature::Popcnt => std::arch::is_x86_feature_detected!("popcnt"),
                Feature::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
                Feature::Bmi2 => std::arch::is_x86_feature_detected!("bmi2"),
                Feature::Avx512f => std::arch::is_x86_feature_detected!("avx512f"),
                Feature::Avx512bw => std::arch::is_x86_feature_detected!("avx512bw"),
                Feature::Avx512vpopcntdq => std::arch::is_x86_feature_detected!("avx512vpopcntdq"),
            };
            #[cfg(not(target_arch = "x86_64"))]
            let want = false;
            assert_eq!(has(f), want, "{}", f.name());
            // The run-time answer alone, even where the build already requires the feature.
            assert_eq!(detected() & f.bit() != 0, want, "{} (detected)", f.name());
        }
        assert!(has_all(&[]));
        assert_eq!(
            has_all(&[Feature::Avx2, Feature::Popcnt]),
            has(Feature::Avx2) && has(Feature::Popcnt)
        );
    }
}
