//! How does code behave when the disk fails or the machine crashes? [`FaultyDirectory`] wraps a
//! directory and injects failures: a write that fails at the n-th operation, a full disk after a
//! byte budget, a simulated crash that drops what was never made durable, and slow reads (a
//! delay before every read, with a log of when each read started) for tests of I/O deadlines
//! (behind the `testing` feature; for tests of this and later crates).
use std::collections::HashSet;
use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Bytes, Directory, DirectoryKind, FileHandle, FileWriter, Result, StoreError};

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
    /// Sleep this long before every read of a handle opened while it is set.
    read_delay: Option<Duration>,
    /// When each read of a slowed handle started (before its delay), in call order.
    read_starts: Vec<Instant>,
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

    /// Makes every read (`read_bytes`, `read_many`: one delay per call) of handles opened from
    /// now on sleep `delay` first, as a slow disk would; such handles offer no mapped view, so
    /// every read of them is a call. `None`: later opens are not slowed.
    pub fn read_delay(&self, delay: Option<Duration>) {
        self.state().read_delay = delay;
    }

    /// When each read of a slowed handle started, in order (and clears the log).
    pub fn take_read_starts(&self) -> Vec<Instant> {
        std::mem::take(&mut self.state().read_starts)
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
        let inner = self.inner.open(name)?;
        Ok(match self.state().read_delay {
            Some(delay) => Arc::new(SlowHandle {
                inner,
                delay,
                dir: self.clone(),
            }),
            None => inner,
        })
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

/// A handle whose every read sleeps first and is logged (see [`FaultyDirectory::read_delay`]).
#[derive(Debug)]
struct SlowHandle {
    inner: Arc<dyn FileHandle>,
    delay: Duration,
    dir: FaultyDirectory,
}

impl SlowHandle {
    fn wait(&self) {
        self.dir.state().read_starts.push(Instant::now());
        std::thread::sleep(self.delay);
    }
}

impl FileHandle for SlowHandle {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_bytes(&self, start: u64, end: u64) -> Result<Bytes> {
        self.wait();
        self.inner.read_bytes(start, end)
    }
    fn read_many(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.wait();
        self.inner.read_many(ranges)
    }
    fn will_need(&self, start: u64, end: u64) {
        self.inner.will_need(start, end)
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn evict_from_cache(&self) -> Result<()> {
        self.inner.evict_from_cache()
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

    #[test]
    fn slow_reads_are_delayed_logged_and_unmapped() {
        let tmp = tempfile::tempdir().unwrap();
        let d = FaultyDirectory::new(open_directory(tmp.path(), DirectoryKind::Mmap).unwrap());
        d.atomic_write("f", b"0123456789").unwrap();
        assert!(d.open("f").unwrap().mapped_view().is_some());
        d.read_delay(Some(Duration::from_millis(2)));
        let h = d.open("f").unwrap();
        assert!(
            h.mapped_view().is_none(),
            "a slowed handle is read by calls"
        );
        let t = Instant::now();
        assert_eq!(&*h.read_bytes(2, 5).unwrap(), b"234");
        let many = h.read_many(&[0..1, 8..10]).unwrap();
        assert_eq!((&*many[0], &*many[1]), (&b"0"[..], &b"89"[..]));
        assert!(t.elapsed() >= Duration::from_millis(4));
        assert_eq!(d.take_read_starts().len(), 2);
        assert!(d.take_read_starts().is_empty());
    }
}
