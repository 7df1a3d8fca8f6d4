//! Which index files are in use? Files of open readers in this process, counted per directory,
//! so that the writer's clean-up never deletes a file an open reader uses.
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

type Registry = Mutex<HashMap<PathBuf, HashMap<String, usize>>>;

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn key(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// A reference on a set of files of one directory, released when dropped.
#[derive(Debug)]
pub struct HeldFiles {
    dir: PathBuf,
    names: Vec<String>,
}

impl HeldFiles {
    /// Counts one more user of each of `names` in `dir`.
    pub fn hold(dir: &Path, names: Vec<String>) -> Self {
        let dir = key(dir);
        let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
        let counts = r.entry(dir.clone()).or_default();
        for n in &names {
            *counts.entry(n.clone()).or_insert(0) += 1;
        }
        Self { dir, names }
    }
}

impl Drop for HeldFiles {
    fn drop(&mut self) {
        let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(counts) = r.get_mut(&self.dir) {
            for n in &self.names {
                if let Some(c) = counts.get_mut(n) {
                    *c -= 1;
                    if *c == 0 {
                        counts.remove(n);
                    }
                }
            }
            if counts.is_empty() {
                r.remove(&self.dir);
            }
        }
    }
}

/// The files of `dir` that open readers of this process hold.
pub fn held_files(dir: &Path) -> HashSet<String> {
    let r = registry().lock().unwrap_or_else(|e| e.into_inner());
    r.get(&key(dir))
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let a = HeldFiles::hold(tmp.path(), vec!["x".into(), "y".into()]);
        let b = HeldFiles::hold(tmp.path(), vec!["y".into()]);
        assert_eq!(held_files(tmp.path()).len(), 2);
        drop(a);
        assert_eq!(held_files(tmp.path()), HashSet::from(["y".to_string()]));
        drop(b);
        assert!(held_files(tmp.path()).is_empty());
    }
}
