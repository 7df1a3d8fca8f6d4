//! How many distinct values a set of documents holds: exact while the count stays below the
//! request's `precision_threshold`, then a HyperLogLog sketch, as Elasticsearch's `cardinality`
//! aggregation does (HyperLogLog++: an exact set of hashes first, registers once it grows).
//!
//! - Values are hashed to 64 bits ([`hash_u64`], [`hash_bytes`]) the same way on every segment
//!   and shard, so partial results merge exactly ([`Cardinality::merge`]).
//! - Below the threshold the hashes themselves are kept: the count is exact (up to 64-bit hash
//!   collisions, about one in 10¹² for a million values).
//! - Above it, `2^p` registers with `p` from the threshold (Elasticsearch's rule: enough registers
//!   for the threshold's accuracy, `p` in 4..=18), read with Ertl's improved estimator ("New
//!   cardinality estimation algorithms for HyperLogLog sketches", 2017), which needs no
//!   empirical bias tables and is unbiased from small to very large counts.
use rustc_hash::FxHashSet;
use std::hash::{Hash, Hasher};

/// Elasticsearch's default `precision_threshold`.
pub const DEFAULT_THRESHOLD: usize = 3000;
/// Elasticsearch's largest `precision_threshold`.
pub const MAX_THRESHOLD: usize = 40_000;

/// A 64-bit hash of an integer value (numbers, dates, booleans, keyword ordinals mapped back to
/// their bytes first).
#[inline]
pub fn hash_u64(v: u64) -> u64 {
    // splitmix64's finalizer: a bijection with full avalanche.
    let mut z = v.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit hash of a byte string (keywords, text values), the same in every process.
pub fn hash_bytes(b: &[u8]) -> u64 {
    // SipHash-1-3 with fixed zero keys: deterministic across processes and shards.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    b.hash(&mut h);
    hash_u64(h.finish())
}

/// A distinct count in progress; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct Cardinality {
    threshold: usize,
    precision: u8,
    state: State,
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// The hashes themselves (already mixed: a cheap hasher suffices).
    Exact(FxHashSet<u64>),
    Sketch(Vec<u8>),
}

impl Cardinality {
    /// An empty count with `precision_threshold` `threshold` (clamped to 0..=40,000).
    pub fn new(threshold: usize) -> Cardinality {
        let threshold = threshold.min(MAX_THRESHOLD);
        Cardinality {
            threshold,
            precision: precision_for(threshold),
            state: State::Exact(FxHashSet::default()),
        }
    }

    /// The threshold below which counts are exact.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// Whether the count is still exact.
    pub fn is_exact(&self) -> bool {
        matches!(self.state, State::Exact(_))
    }

    /// Counts a value by its hash.
    #[inline]
    pub fn add_hash(&mut self, hash: u64) {
        match &mut self.state {
            State::Exact(set) => {
                set.insert(hash);
                if set.len() > self.threshold {
                    self.switch_to_sketch();
                }
            }
            State::Sketch(registers) => register(registers, self.precision, hash),
        }
    }

    fn switch_to_sketch(&mut self) {
        let mut registers = vec![0u8; 1 << self.precision];
        if let State::Exact(set) = &self.state {
            for &h in set {
                register(&mut registers, self.precision, h);
            }
        }
        self.state = State::Sketch(registers);
    }

    /// Adds another count of the same threshold (another segment's or shard's).
    ///
    /// # Panics
    /// When the thresholds differ (one request gives every partial result the same).
    pub fn merge(&mut self, other: &Cardinality) {
        assert_eq!(
            self.threshold, other.threshold,
            "merging different thresholds"
        );
        match &other.state {
            State::Exact(set) => set.iter().for_each(|&h| self.add_hash(h)),
            State::Sketch(theirs) => {
                if self.is_exact() {
                    self.switch_to_sketch();
                }
                if let State::Sketch(mine) = &mut self.state {
                    for (m, &t) in mine.iter_mut().zip(theirs) {
                        *m = (*m).max(t);
                    }
                }
            }
        }
    }

    /// The count: exact below the threshold, estimated above.
    pub fn value(&self) -> u64 {
        match &self.state {
            State::Exact(set) => set.len() as u64,
            State::Sketch(registers) => estimate(registers, self.precision).round() as u64,
        }
    }
}

/// Elasticsearch's register count for a threshold: the precision at which the registers take
/// about as much memory as the exact set would at the threshold, within 4..=18.
fn precision_for(threshold: usize) -> u8 {
    // An exact entry costs ~8 bytes (a hash) and a register 1: 8 * threshold registers.
    let want = (threshold.max(1) * 8) as f64;
    (want.log2().ceil() as u8).clamp(4, 18)
}

#[inline]
fn register(registers: &mut [u8], p: u8, hash: u64) {
    let idx = (hash >> (64 - p)) as usize;
    let rest = hash << p;
    // The position of the first 1 bit in the remaining 64 - p bits, 1-based; 65 - p when none.
    let rank = (rest.leading_zeros() + 1).min(65 - u32::from(p)) as u8;
    if rank > registers[idx] {
        registers[idx] = rank;
    }
}

/// Ertl's improved raw estimator (his Algorithm 6).
fn estimate(registers: &[u8], p: u8) -> f64 {
    let m = registers.len() as f64;
    let q = 64 - usize::from(p);
    let mut counts = vec![0u32; q + 2];
    for &r in registers {
        counts[usize::from(r).min(q + 1)] += 1;
    }
    let mut z = m * tau(1.0 - f64::from(counts[q + 1]) / m);
    for k in (1..=q).rev() {
        z = 0.5 * (z + f64::from(counts[k]));
    }
    z += m * sigma(f64::from(counts[0]) / m);
    let alpha_inf = 1.0 / (2.0 * std::f64::consts::LN_2);
    alpha_inf * m * m / z
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_the_threshold() {
        let mut c = Cardinality::new(100);
        for i in 0..1000u64 {
            c.add_hash(hash_u64(i % 100));
        }
        assert!(c.is_exact());
        assert_eq!(c.value(), 100);
        let mut d = Cardinality::new(100);
        for s in ["a", "b", "a", "c"] {
            d.add_hash(hash_bytes(s.as_bytes()));
        }
        assert_eq!(d.value(), 3);
    }

    #[test]
    fn estimates_above_the_threshold_are_close() {
        for (threshold, n) in [
            (100usize, 5_000u64),
            (3000, 200_000),
            (40_000, 1_000_000),
            (10, 50),
        ] {
            let mut c = Cardinality::new(threshold);
            for i in 0..n {
                c.add_hash(hash_u64(i));
                c.add_hash(hash_u64(i)); // duplicates change nothing
            }
            assert!(!c.is_exact());
            let err = (c.value() as f64 - n as f64).abs() / n as f64;
            // The standard error is 1.04 / sqrt(2^p); allow four of them.
            let bound = 4.0 * 1.04 / ((1u64 << c.precision) as f64).sqrt();
            assert!(
                err <= bound,
                "threshold {threshold}, {n} values: {} ({err:.4} > {bound:.4})",
                c.value()
            );
        }
    }

    #[test]
    fn merging_partial_counts_equals_counting_once() {
        for threshold in [50usize, 3000] {
            let mut whole = Cardinality::new(threshold);
            let mut parts = vec![Cardinality::new(threshold); 3];
            for i in 0..20_000u64 {
                let h = hash_u64(i % 7_000);
                whole.add_hash(h);
                parts[(i % 3) as usize].add_hash(h);
            }
            let mut merged = Cardinality::new(threshold);
            for p in &parts {
                merged.merge(p);
            }
            assert_eq!(merged.value(), whole.value(), "threshold {threshold}");
        }
        // Small exact parts stay exact.
        let mut a = Cardinality::new(3000);
        let mut b = Cardinality::new(3000);
        (0..10).for_each(|i| a.add_hash(hash_u64(i)));
        (5..20).for_each(|i| b.add_hash(hash_u64(i)));
        a.merge(&b);
        assert!(a.is_exact());
        assert_eq!(a.value(), 20);
    }

    #[test]
    fn precision_follows_the_threshold() {
        assert_eq!(precision_for(0), 4);
        assert_eq!(precision_for(3000), 15);
        assert_eq!(precision_for(40_000), 18);
        assert_eq!(Cardinality::new(1_000_000).threshold(), MAX_THRESHOLD);
    }
}
