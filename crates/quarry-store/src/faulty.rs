//! How does code behave when the disk fails or the machine crashes? [`FaultyDirectory`] wraps a
//! directory and injects failures: a write that fails at the n-th operation, a full disk after a
//! byte budget, and a simulated crash that drops what was never made durable (behind the
//! `testing` feature; for tests of this and later crates).
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::{Directory, DirectoryKind, FileHandle, FileWriter, Result, StoreError};

/// The fault plan and what the wrapper saw.
#[derive(Debug, Default)]
struct State {
    /// Write-side operations so far (create, write, finish, rename, delete, sync_dir).
    ops: u64,
    /// Fail the operation with this number (1-based) with an I/O error.
    fail_at: Option<u64>,
    /// Bytes that may still be written before writes fail with ENOSPC.
    space_left: Option<u64>,
    /// Files created whose bytes were never fsynced.
    unsynced_files: HashSet<String>,
    /// Names created or renamed into place since the last directory fsync.
    unsynced_names: HashSet<String>,
}

/// A directory that fails on demand and can "crash". Reads pass through unchanged.
#[derive(Debug, Clone)]
pub struct FaultyDirectory {
    inner: Arc<dyn Directory>,
    state: Arc<Mutex<State>>,
}

fn injected(path: &Path, op: &'static str) -> StoreError {
    StoreError::Io {
        op,
        path: path.to_path_buf(),
        source: std::io::Error::other("injected failure"),
    }
}

fn enospc() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::ENOSPC)
}

impl FaultyDirectory {
    pub fn new(inner: Arc<dyn Directory>) -> Self {
        Self {
            inner,
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes write-side operation number `n` (counted from now, 1-based) fail; `None` clears.
    pub fn fail_at(&self, n: Option<u64>) {
        let mut s = self.state();
        s.fail_at = n.map(|n| s.ops + n);
    }

    /// Lets only `bytes` more bytes be written; later writes fail with ENOSPC. `None` clears.
    pub fn space_left(&self, bytes: Option<u64>) {
        self.state().space_left = bytes;
    }

    /// Write-side operations seen so far.
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    /// Counts an operation; fails it if the plan says so.
    fn op(&self, name: &str, op: &'static str) -> Result<()> {
        let mut s = self.state();
        s.ops += 1;
        if s.fail_at == Some(s.ops) {
            return Err(injected(&self.inner.path().join(name), op));
        }
        Ok(())
    }

    /// Simulates a power loss: files never fsynced and names never made durable by a directory
    /// fsync are removed (their bytes or entries would be lost). Then the plan is cleared.
    pub fn crash(&self) {
        let mut s = self.state();
        let mut doomed: HashSet<String> = std::mem::take(&mut s.unsynced_files);
        doomed.extend(std::mem::take(&mut s.unsynced_names));
        for name in doomed {
            let _ = self.inner.delete(&name);
        }
        s.fail_at = None;
        s.space_left = None;
    }
}

struct FaultyWriter {
    inner: Box<dyn FileWriter>,
    name: String,
    dir: FaultyDirectory,
}

impl Write for FaultyWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        {
            let mut s = self.dir.state();
            s.ops += 1;
            if s.fail_at == Some(s.ops) {
                return Err(std::io::Error::other("injected write failure"));
            }
            if let Some(left) = s.space_left {
                if (buf.len() as u64) > left {
                    s.space_left = Some(0);
                    return Err(enospc());
                }
                s.space_left = Some(left - buf.len() as u64);
            }
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl FileWriter for FaultyWriter {
    fn finish(self: Box<Self>) -> Result<u64> {
        let FaultyWriter { inner, name, dir } = *self;
        dir.op(&name, "fsync")?;
        let n = inner.finish()?;
        dir.state().unsynced_files.remove(&name);
        Ok(n)
    }
}

impl Directory for FaultyDirectory {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        self.inner.open(name)
    }
    fn create(&self, name: &str) -> Result<Box<dyn FileWriter>> {
        self.op(name, "create")?;
        let inner = self.inner.create(name)?;
        let mut s = self.state();
        s.unsynced_files.insert(name.to_string());
        s.unsynced_names.insert(name.to_string());
        drop(s);
        Ok(Box::new(FaultyWriter {
            inner,
            name: name.to_string(),
            dir: self.clone(),
        }))
    }
    fn exists(&self, name: &str) -> bool {
        self.inner.exists(name)
    }
    fn delete(&self, name: &str) -> Result<()> {
        self.op(name, "delete")?;
        self.inner.delete(name)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.op(from, "rename")?;
        self.inner.rename(from, to)?;
        let mut s = self.state();
        if s.unsynced_files.remove(from) {
            s.unsynced_files.insert(to.to_string());
        }
        s.unsynced_names.remove(from);
        s.unsynced_names.insert(to.to_string());
        Ok(())
    }
    fn list(&self) -> Result<Vec<String>> {
        self.inner.list()
    }
    fn sync_dir(&self) -> Result<()> {
        self.op(".", "fsync directory")?;
        self.inner.sync_dir()?;
        self.state().unsynced_names.clear();
        Ok(())
    }
    fn kind(&self) -> DirectoryKind {
        self.inner.kind()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open_directory;

    #[test]
    fn crash_drops_what_was_not_durable() {
        let tmp = tempfile::tempdir().unwrap();
        let d = FaultyDirectory::new(open_directory(tmp.path(), DirectoryKind::Pread).unwrap());
        d.atomic_write("kept", b"durable").unwrap();
        let mut w = d.create("unsynced").unwrap();
        w.write_all(b"lost").unwrap();
        drop(w);
        let mut w = d.create("synced-no-dirsync").unwrap();
        w.write_all(b"lost too").unwrap();
        w.finish().unwrap();
        d.crash();
        assert_eq!(d.list().unwrap(), vec!["kept".to_string()]);
        assert_eq!(&*d.open("kept").unwrap().read_all().unwrap(), b"durable");
    }

    #[test]
    fn fails_at_the_nth_operation_and_on_a_full_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let d = FaultyDirectory::new(open_directory(tmp.path(), DirectoryKind::Pread).unwrap());
        d.fail_at(Some(2));
        let mut w = d.create("a").unwrap();
        assert!(w.write_all(b"x").is_err());
        d.fail_at(None);
        d.space_left(Some(4));
        let mut w = d.create("b").unwrap();
        w.write_all(b"1234").unwrap();
        let e = w.write_all(b"5").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    }
}
