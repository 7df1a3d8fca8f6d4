//! Who may write to an index folder? An exclusive OS file lock (`flock`) held for a writer's life.
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::{Result, StoreError};

/// An exclusive lock on a file, released when dropped (or when the process dies, so a killed
/// writer never leaves a stale lock behind).
///
/// `flock` locks belong to an open file description: a second [`FileLock::try_acquire`] on the
/// same file fails whether it comes from this process or another one.
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock on `path` (creating the file), or returns `Ok(None)` when another holder
    /// has it.
    pub fn try_acquire(path: &Path) -> Result<Option<FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io("open lock file", path, e))?;
        // SAFETY: the fd is valid for the lifetime of `file`; flock only takes integers.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(FileLock {
                file,
                path: path.to_path_buf(),
            }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(StoreError::io("lock", path, err))
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: the fd is still open (closed after this by File's drop); flock takes integers.
        unsafe {
            libc::flock(self.file.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_drops() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("write.lock");
        let a = FileLock::try_acquire(&p).unwrap().expect("first lock");
        assert!(FileLock::try_acquire(&p).unwrap().is_none());
        drop(a);
        assert!(FileLock::try_acquire(&p).unwrap().is_some());
    }
}
