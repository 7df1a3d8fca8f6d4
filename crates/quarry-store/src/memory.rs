//! How much memory this process may use for caching index bytes: `MemAvailable` from
//! `/proc/meminfo`, lowered by the cgroup (v2 `memory.max`, or v1 `memory.limit_in_bytes`) the
//! process runs in, minus what that cgroup already uses.
use std::path::{Path, PathBuf};

/// Bytes this process can still use before the kernel must drop cache or reclaim: the smaller
/// of the machine's `MemAvailable` and the cgroup's headroom. `None` if neither is readable.
pub fn available_memory() -> Option<u64> {
    let mem = meminfo_available(&std::fs::read_to_string("/proc/meminfo").ok()?);
    let cg = cgroup_headroom();
    match (mem, cg) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn meminfo_available(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// The memory limit minus the current use of this process's cgroup, if it has a limit.
fn cgroup_headroom() -> Option<u64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for (dir, limit, usage) in cgroup_files(&cgroups, Path::new("/sys/fs/cgroup")) {
        let Some(limit) = read_limit(&dir.join(limit)) else {
            continue;
        };
        let used = read_limit(&dir.join(usage)).unwrap_or(0);
        return Some(limit.saturating_sub(used));
    }
    None
}

/// Candidate (cgroup folder, limit file, usage file) triples for a `/proc/self/cgroup` text:
/// the v1 memory controller's folder, then the v2 unified folder.
pub fn cgroup_files(proc_cgroup: &str, root: &Path) -> Vec<(PathBuf, &'static str, &'static str)> {
    let mut out = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if ctrls.split(',').any(|c| c == "memory") {
            out.insert(
                0,
                (
                    root.join("memory").join(rel),
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                ),
            );
        } else if ctrls.is_empty() {
            out.push((root.join(rel), "memory.max", "memory.current"));
        }
    }
    out
}

/// A limit or usage file's value; `max` and the v1 "unlimited" value (near 2^63) mean none.
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo() {
        let t = "MemTotal:       24684092 kB\nMemFree: 1 kB\nMemAvailable:   23098000 kB\n";
        assert_eq!(meminfo_available(t), Some(23098000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn finds_cgroup_folders() {
        let v1 = "12:memory:/quarry/q1\n3:cpu,cpuacct:/\n0::/user.slice\n";
        let f = cgroup_files(v1, Path::new("/sys/fs/cgroup"));
        assert_eq!(f[0].0, Path::new("/sys/fs/cgroup/memory/quarry/q1"));
        assert_eq!(f[0].1, "memory.limit_in_bytes");
        assert_eq!(f[1].0, Path::new("/sys/fs/cgroup/user.slice"));
        assert_eq!(f[1].1, "memory.max");
    }

    #[test]
    fn this_machine_reports_some_memory() {
        let a = available_memory().expect("/proc/meminfo is readable on Linux");
        assert!(a > 0);
    }
}
