//! How do we measure: wall clocks, latency percentiles, peak RSS, page faults, index size.
//!
//! Shared by every Rust driver and by the orchestrator so that all numbers are computed the same
//! way (the Lucene driver implements the same definitions in Java, see `bench/README.md`).

use std::path::Path;

/// Latency summary of one (query, mode) cell, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
    pub min: f64,
}

/// Percentile by the nearest-rank method on sorted samples: the smallest sample such that at
/// least `p` percent of the samples are less than or equal to it.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarise latency samples (µs). The samples are sorted in place.
pub fn summarize(samples: &mut [f64]) -> Summary {
    samples.sort_by(|a, b| a.partial_cmp(b).expect("latencies are finite"));
    let mean = if samples.is_empty() {
        f64::NAN
    } else {
        samples.iter().sum::<f64>() / samples.len() as f64
    };
    Summary {
        p50: percentile(samples, 50.0),
        p90: percentile(samples, 90.0),
        p99: percentile(samples, 99.0),
        mean,
        min: samples.first().copied().unwrap_or(f64::NAN),
    }
}

/// Geometric mean of positive values (NaN when empty).
pub fn geomean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    (values.iter().map(|v| v.max(1e-9).ln()).sum::<f64>() / values.len() as f64).exp()
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Reads a `kB` field of `/proc/self/status` (e.g. `VmHWM`, `VmRSS`) in bytes.
fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// Peak resident set size of this process (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> u64 {
    proc_status_kb("VmHWM").unwrap_or(0)
}

/// Current resident set size of this process (`VmRSS`), in bytes.
pub fn rss_bytes() -> u64 {
    proc_status_kb("VmRSS").unwrap_or(0)
}

/// Major page faults of this process so far (`getrusage(RUSAGE_SELF).ru_majflt`).
pub fn major_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full `rusage` into the pointer we pass; it is zero-initialised
    // and lives for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: rc == 0 means the kernel filled the struct (and it was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    usage.ru_majflt as u64
}

/// Total size in bytes of the regular files under `dir` (recursively).
pub fn dir_bytes(dir: &Path) -> u64 {
    index_files(dir)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// All regular files under `dir` (recursively), sorted.
pub fn index_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(|x| x as f64).rev().collect();
        let s = summarize(&mut v);
        assert_eq!(s.p50, 50.0);
        assert_eq!(s.p90, 90.0);
        assert_eq!(s.p99, 99.0);
        assert_eq!(s.min, 1.0);
        assert!((s.mean - 50.5).abs() < 1e-9);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn geomean_and_median() {
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-9);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn proc_status_is_readable() {
        assert!(peak_rss_bytes() > 0);
        assert!(rss_bytes() > 0);
    }
}
