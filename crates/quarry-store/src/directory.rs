//! The [`Directory`] contract and the file-system write side shared by every implementation.
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{
    AdaptiveDirectory, Bytes, DirectDirectory, MmapDirectory, PreadDirectory, Result, StoreError,
};

/// An open, immutable file.
///
/// Contract: `len` never changes; `read_bytes` returns exactly the requested range or
/// `OutOfBounds`; handles are shareable across threads.
pub trait FileHandle: Send + Sync + Debug {
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes of `[start, end)`.
    fn read_bytes(&self, start: u64, end: u64) -> Result<Bytes>;
    /// The bytes of every range, in order: one call for many small ranges known at once (the
    /// positions of a phrase's candidates, the stored fields of the top hits). Implementations
    /// batch them (io_uring for positioned reads); the default reads them one by one. Any range
    /// out of bounds fails the whole call with `OutOfBounds`.
    fn read_many(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| self.read_bytes(r.start, r.end))
            .collect()
    }
    /// The whole file.
    fn read_all(&self) -> Result<Bytes> {
        self.read_bytes(0, self.len())
    }
    /// The whole file as a zero-copy view, when reading it costs nothing (memory-mapped files).
    /// Readers use it to skip per-lookup reads; `None` means "use `read_bytes`".
    fn mapped_view(&self) -> Option<Bytes> {
        None
    }
    /// A hint that `[start, end)` is about to be read for the first time. A memory-mapped file
    /// starts reading exactly the pages of that range (`MADV_WILLNEED`), so that touching them
    /// does not fault in the kernel's read-around window instead — as large as the device's
    /// `read_ahead_kb` (8 MiB on the benchmark machine), which made a cold open read hundreds of
    /// megabytes. Handles that read with calls ignore it (the default).
    fn will_need(&self, start: u64, end: u64) {
        let _ = (start, end);
    }
    /// A few bytes (a header, a trailer) when nothing else of their page is about to be read:
    /// a mapped file reads them with a call instead of mapping their page (a `MADV_WILLNEED`
    /// and a page fault each, at both ends of every file an open checks). The default reads
    /// them as [`will_need`](Self::will_need) then [`read_bytes`](Self::read_bytes) would.
    fn read_small(&self, start: u64, end: u64) -> Result<Bytes> {
        self.will_need(start, end);
        self.read_bytes(start, end)
    }
    /// The file's name inside its directory, for error messages.
    fn name(&self) -> &str;
    /// Tells the OS the file's pages are not needed any more (cold-start experiments).
    fn evict_from_cache(&self) -> Result<()>;
    /// Asks the handle to run `check` on the bytes of every read it issues to the disk from
    /// now on (a direct file: every page entering its buffer pool, every read around it), a
    /// rejected load failing the read with [`StoreError::Rejected`]. Returns whether the handle
    /// does so; the default (handles whose bytes are not kept by this crate) does not.
    fn set_load_check(&self, check: Arc<dyn LoadCheck>) -> bool {
        let _ = check;
        false
    }
}

/// Checks bytes a handle has just read from the disk, before it keeps or returns them (see
/// [`FileHandle::set_load_check`]): the engine's chunk checksums.
pub trait LoadCheck: Send + Sync + Debug {
    /// `bytes` are the file's bytes from `offset` (a multiple of 4096) on; an `Err` names what
    /// is wrong and rejects them.
    fn check(&self, offset: u64, bytes: &[u8]) -> std::result::Result<(), String>;
}

/// A file being written; nothing is visible to readers of a commit until it is published.
pub trait FileWriter: Write + Send {
    /// Flushes, fsyncs and closes the file; returns its length.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A flat folder of immutable files.
///
/// Contract (checked by one shared test suite for every implementation):
/// - `create` makes a new file; `finish` makes its bytes durable (fsync);
/// - `atomic_write` replaces a file so that a crash leaves the old or the new content, never a mix;
/// - `rename` is atomic; `sync_dir` makes creations, renames and deletions durable;
/// - `open` returns a handle whose reads see the file as finished.
pub trait Directory: Send + Sync + Debug {
    fn path(&self) -> &Path;
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>>;
    fn create(&self, name: &str) -> Result<Box<dyn FileWriter>>;
    fn exists(&self, name: &str) -> bool;
    fn delete(&self, name: &str) -> Result<()>;
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    fn list(&self) -> Result<Vec<String>>;
    fn sync_dir(&self) -> Result<()>;
    /// Writes `bytes` to `name` durably and atomically: a temporary file, fsync, rename, fsync of
    /// the directory.
    fn atomic_write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let tmp = format!("{name}.tmp");
        let mut w = self.create(&tmp)?;
        w.write_all(bytes)
            .map_err(|e| StoreError::io("write", self.path().join(&tmp), e))?;
        w.finish()?;
        self.rename(&tmp, name)?;
        self.sync_dir()
    }
    /// The implementation's name ("mmap", "pread", "direct", "adaptive").
    fn kind(&self) -> DirectoryKind;
}

/// Which read path a directory uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DirectoryKind {
    /// Memory-mapped, zero-copy (the default).
    #[default]
    Mmap,
    /// Positioned reads into owned buffers.
    Pread,
    /// `O_DIRECT` reads into a buffer pool with a memory limit.
    Direct,
    /// Per file, by kind, size and available memory: mmap with hints, pread or direct.
    Adaptive,
}

impl DirectoryKind {
    /// Every kind, for tests and benchmarks that cover them all.
    pub const ALL: [DirectoryKind; 4] = [Self::Mmap, Self::Pread, Self::Direct, Self::Adaptive];
}

impl std::str::FromStr for DirectoryKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "mmap" => Ok(Self::Mmap),
            "pread" => Ok(Self::Pread),
            "direct" => Ok(Self::Direct),
            "adaptive" => Ok(Self::Adaptive),
            other => Err(format!(
                "unknown directory kind {other:?} (expected mmap, pread, direct or adaptive)"
            )),
        }
    }
}

impl std::fmt::Display for DirectoryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Mmap => "mmap",
            Self::Pread => "pread",
            Self::Direct => "direct",
            Self::Adaptive => "adaptive",
        })
    }
}

/// Opens (creating if needed) the folder `path` with the chosen read path.
pub fn open_directory(path: &Path, kind: DirectoryKind) -> Result<Arc<dyn Directory>> {
    Ok(match kind {
        DirectoryKind::Mmap => Arc::new(MmapDirectory::open(path)?),
        DirectoryKind::Pread => Arc::new(PreadDirectory::open(path)?),
        DirectoryKind::Direct => Arc::new(DirectDirectory::open(path)?),
        DirectoryKind::Adaptive => Arc::new(AdaptiveDirectory::open(path)?),
    })
}

/// Implements the path, write-side and folder methods of [`Directory`] by delegating to a field
/// `fs: FsDirectory` (every file-system directory differs only in how it reads).
macro_rules! delegate_fs_ops {
    () => {
        fn path(&self) -> &std::path::Path {
            self.fs.path()
        }
        fn create(&self, name: &str) -> $crate::Result<Box<dyn $crate::FileWriter>> {
            self.fs.create(name)
        }
        fn exists(&self, name: &str) -> bool {
            self.fs.exists(name)
        }
        fn delete(&self, name: &str) -> $crate::Result<()> {
            self.fs.delete(name)
        }
        fn rename(&self, from: &str, to: &str) -> $crate::Result<()> {
            self.fs.rename(from, to)
        }
        fn list(&self) -> $crate::Result<Vec<String>> {
            self.fs.list()
        }
        fn sync_dir(&self) -> $crate::Result<()> {
            self.fs.sync_dir()
        }
    };
}
pub(crate) use delegate_fs_ops;

/// The write side and folder operations, shared by every file-system directory.
#[derive(Debug, Clone)]
pub struct FsDirectory {
    root: PathBuf,
}

impl FsDirectory {
    pub fn open(path: &Path) -> Result<Self> {
        fs::create_dir_all(path).map_err(|e| StoreError::io("create directory", path, e))?;
        Ok(Self {
            root: path.to_path_buf(),
        })
    }
    pub fn path(&self) -> &Path {
        &self.root
    }
    /// The full path of `name`, refusing names that would escape the folder.
    pub fn resolve(&self, name: &str) -> Result<PathBuf> {
        if name.is_empty()
            || name.contains('/')
            || name.contains('\\')
            || name == "."
            || name == ".."
        {
            return Err(StoreError::BadName {
                name: name.to_string(),
            });
        }
        Ok(self.root.join(name))
    }
    pub fn open_file(&self, name: &str) -> Result<(PathBuf, File)> {
        let p = self.resolve(name)?;
        let f = File::open(&p).map_err(|e| StoreError::io("open", &p, e))?;
        Ok((p, f))
    }
    pub fn create(&self, name: &str) -> Result<Box<dyn FileWriter>> {
        let path = self.resolve(name)?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| StoreError::io("create", &path, e))?;
        Ok(Box::new(FsWriter {
            inner: std::io::BufWriter::with_capacity(WRITE_PIECE, file),
            path,
            len: 0,
        }))
    }
    pub fn exists(&self, name: &str) -> bool {
        self.resolve(name).map(|p| p.exists()).unwrap_or(false)
    }
    pub fn delete(&self, name: &str) -> Result<()> {
        let p = self.resolve(name)?;
        fs::remove_file(&p).map_err(|e| StoreError::io("delete", &p, e))
    }
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (a, b) = (self.resolve(from)?, self.resolve(to)?);
        fs::rename(&a, &b).map_err(|e| StoreError::io("rename", &a, e))
    }
    pub fn list(&self) -> Result<Vec<String>> {
        let rd = fs::read_dir(&self.root).map_err(|e| StoreError::io("list", &self.root, e))?;
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| StoreError::io("list", &self.root, e))?;
            if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
    pub fn sync_dir(&self) -> Result<()> {
        let d =
            File::open(&self.root).map_err(|e| StoreError::io("open directory", &self.root, e))?;
        d.sync_all()
            .map_err(|e| StoreError::io("fsync directory", &self.root, e))
    }
}

/// The most one `write(2)` of a new file hands to the kernel.
///
/// The page cache sizes a written folio after the write (Linux 6.x with large folios), and a
/// mapped read of any byte of a folio later maps all of it: a file written 1 MiB at a time costs
/// a reader that touches three scattered bytes 3 MiB of resident memory, written 64 KiB at a time
/// 192 KiB, the same as fault-around after an ordinary read (`scripts/folio-rss.py`, Linux 6.18). A freshly written index is what a process opens right after indexing,
/// so it is written in pieces of this size.
const WRITE_PIECE: usize = 1 << 16;

struct FsWriter {
    inner: std::io::BufWriter<File>,
    path: PathBuf,
    len: u64,
}

impl Write for FsWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(&buf[..buf.len().min(WRITE_PIECE)])?;
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl FileWriter for FsWriter {
    fn finish(self: Box<Self>) -> Result<u64> {
        let FsWriter { inner, path, len } = *self;
        let file = inner
            .into_inner()
            .map_err(|e| StoreError::io("write", &path, e.into_error()))?;
        file.sync_all()
            .map_err(|e| StoreError::io("fsync", &path, e))?;
        Ok(len)
    }
}

/// Drops the page cache of `file` (after an fsync, so dirty pages are written first).
pub(crate) fn fadvise_dontneed(file: &File, path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    file.sync_all()
        .map_err(|e| StoreError::io("fsync", path, e))?;
    // SAFETY: the fd is valid for the lifetime of `file`; posix_fadvise only takes integers.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(StoreError::io(
            "posix_fadvise",
            path,
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_write_reaches_the_file_in_pieces() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = FsDirectory::open(tmp.path()).unwrap();
        let mut w = fs.create("big").unwrap();
        let data: Vec<u8> = (0..(3 * WRITE_PIECE + 5)).map(|i| i as u8).collect();
        // One call takes at most one piece; `write_all` hands over the rest.
        assert_eq!(w.write(&data).unwrap(), WRITE_PIECE);
        w.write_all(&data[WRITE_PIECE..]).unwrap();
        assert_eq!(w.finish().unwrap(), data.len() as u64);
        assert_eq!(std::fs::read(tmp.path().join("big")).unwrap(), data);
    }
}
