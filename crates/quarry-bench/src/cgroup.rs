//! How is a driver confined to less memory than its index: a cgroup v1 memory group (a child of
//! `/sys/fs/cgroup/memory`) with `memory.limit_in_bytes`, joined by the driver before it execs.
//!
//! Page cache a process reads in is charged to its memory cgroup, so with a limit below the index
//! size the kernel must reclaim the group's own cached index pages as the queries move on: the
//! index cannot stay in memory however much the machine has free. The study checks that this
//! happened from `memory.max_usage_in_bytes`, `memory.failcnt` and `memory.stat` (reported).
//! Needs root and the v1 memory controller; [`MemCgroup::create`] says why when it cannot.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Where the cgroup v1 memory controller is mounted.
pub const V1_ROOT: &str = "/sys/fs/cgroup/memory";

/// A memory cgroup created for one driver process; removed on drop.
pub struct MemCgroup {
    dir: PathBuf,
    procs: File,
}

/// What the group's files said after the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemReport {
    pub limit_bytes: u64,
    pub max_usage_bytes: u64,
    /// Times the usage hit the limit (the kernel had to reclaim within the group).
    pub failcnt: u64,
    /// `memory.stat`: page cache (`cache`), anonymous (`rss`), mapped file pages (`mapped_file`),
    /// and pages read in / pushed out (`pgpgin`, `pgpgout`), as the kernel names them.
    pub stat: BTreeMap<String, u64>,
}

/// Parses `memory.stat` (`name value` per line); lines that are not that are skipped.
pub fn parse_memory_stat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn read_u64(path: &Path) -> Result<u64> {
    let t = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    t.trim()
        .parse()
        .with_context(|| format!("{}: not a number: {:?}", path.display(), t.trim()))
}

impl MemCgroup {
    /// Creates `<root>/<name>` (removing a leftover of that name first) with `limit` bytes of
    /// memory (none: unlimited) and the swap-free default; the group is removed on drop.
    pub fn create(root: &Path, name: &str, limit: Option<u64>) -> Result<Self> {
        anyhow::ensure!(
            root.join("memory.limit_in_bytes").exists(),
            "no cgroup v1 memory controller at {}",
            root.display()
        );
        let dir = root.join(name);
        if dir.exists() {
            std::fs::remove_dir(&dir)
                .with_context(|| format!("removing leftover cgroup {}", dir.display()))?;
        }
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating cgroup {} (needs root)", dir.display()))?;
        let group = MemCgroup {
            procs: OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .with_context(|| format!("opening {}/cgroup.procs", dir.display()))?,
            dir,
        };
        if let Some(limit) = limit {
            std::fs::write(group.dir.join("memory.limit_in_bytes"), limit.to_string())
                .with_context(|| {
                    format!("writing memory.limit_in_bytes of {}", group.dir.display())
                })?;
        }
        Ok(group)
    }

    /// An fd of `cgroup.procs`: writing `0` to it moves the writing process into the group
    /// (what the driver's child does between fork and exec).
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The group's limit, peak usage, fail count and `memory.stat`.
    pub fn report(&self) -> Result<MemReport> {
        let stat = std::fs::read_to_string(self.dir.join("memory.stat"))
            .with_context(|| format!("reading {}/memory.stat", self.dir.display()))?;
        Ok(MemReport {
            limit_bytes: read_u64(&self.dir.join("memory.limit_in_bytes"))?,
            max_usage_bytes: read_u64(&self.dir.join("memory.max_usage_in_bytes"))?,
            failcnt: read_u64(&self.dir.join("memory.failcnt"))?,
            stat: parse_memory_stat(&stat),
        })
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // The driver has exited; its charged page cache moves to the parent on rmdir.
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("io: could not remove cgroup {}: {e}", self.dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_stat() {
        let t = "cache 104857600\nrss 2097152\nmapped_file 4096\npgpgin 30000\n\
                 hierarchical_memory_limit 134217728\ntotal_cache 104857600\nbogus\nx y\n";
        let s = parse_memory_stat(t);
        assert_eq!(s["cache"], 104_857_600);
        assert_eq!(s["rss"], 2_097_152);
        assert_eq!(s["hierarchical_memory_limit"], 134_217_728);
        assert_eq!(s.len(), 6);
    }

    #[test]
    fn refuses_a_folder_without_the_controller() {
        let dir = tempfile::tempdir().unwrap();
        let err = MemCgroup::create(dir.path(), "x", Some(1 << 20))
            .err()
            .expect("no memory.limit_in_bytes there");
        assert!(format!("{err:#}").contains("no cgroup v1 memory controller"));
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn reads_a_groups_files() {
        // A fake group folder: report() only reads files, so a temporary folder stands in.
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("g");
        std::fs::create_dir(&g).unwrap();
        for (f, v) in [
            ("memory.limit_in_bytes", "268435456\n"),
            ("memory.max_usage_in_bytes", "268000000\n"),
            ("memory.failcnt", "12\n"),
            ("memory.stat", "cache 200000000\nrss 60000000\n"),
            ("cgroup.procs", ""),
        ] {
            std::fs::write(g.join(f), v).unwrap();
        }
        let group = MemCgroup {
            procs: OpenOptions::new()
                .write(true)
                .open(g.join("cgroup.procs"))
                .unwrap(),
            dir: g.clone(),
        };
        let r = group.report().unwrap();
        assert_eq!(r.limit_bytes, 268_435_456);
        assert_eq!(r.max_usage_bytes, 268_000_000);
        assert_eq!(r.failcnt, 12);
        assert_eq!(r.stat["cache"], 200_000_000);
        // Drop removes the folder only when empty (as rmdir of a cgroup): here it reports and
        // leaves it, without panicking.
        drop(group);
        assert!(g.exists());
    }
}
