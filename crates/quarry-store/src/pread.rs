//! [`PreadDirectory`]: every read is one positioned `pread(2)` into a buffer of exactly the
//! requested size (no fixed small buffer, so a postings list is one read, not many).
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::{read_many_at, BatchMode};
use crate::directory::{fadvise_dontneed, FsDirectory};
use crate::{Bytes, Directory, DirectoryKind, FileHandle, Result, StoreError};

/// Reads with positioned reads; memory use is bounded by what callers keep, not by file sizes.
#[derive(Debug, Clone)]
pub struct PreadDirectory {
    fs: FsDirectory,
    batch: BatchMode,
}

impl PreadDirectory {
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, BatchMode::Auto)
    }
    /// Opens `path`; `batch` says how `read_many` reads (io_uring, pread, or io_uring if allowed).
    pub fn open_with(path: &Path, batch: BatchMode) -> Result<Self> {
        Ok(Self {
            fs: FsDirectory::open(path)?,
            batch,
        })
    }
}

#[derive(Debug)]
pub(crate) struct PreadFile {
    name: String,
    path: PathBuf,
    file: File,
    len: u64,
    batch: BatchMode,
}

impl PreadFile {
    pub(crate) fn open(fs: &FsDirectory, name: &str, batch: BatchMode) -> Result<Self> {
        let (path, file) = fs.open_file(name)?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        Ok(PreadFile {
            name: name.to_string(),
            path,
            file,
            len,
            batch,
        })
    }

    /// Tells the kernel that reads of this file are random (`POSIX_FADV_RANDOM`): a read that
    /// misses the page cache then reads exactly its pages, not a readahead window. A hint: a
    /// refusal changes nothing but the amount read.
    pub(crate) fn advise_random(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: the fd is valid for the lifetime of `self.file`; posix_fadvise takes integers.
        let _ =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }
}

impl FileHandle for PreadFile {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, start: u64, end: u64) -> Result<Bytes> {
        if start > end || end > self.len {
            return Err(StoreError::OutOfBounds {
                path: self.path.clone(),
                start,
                end,
                len: self.len,
            });
        }
        let mut buf = vec![0u8; (end - start) as usize];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| StoreError::io("pread", &self.path, e))?;
        Ok(Bytes::from_vec(buf))
    }
    fn read_many(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > self.len) {
            return Err(StoreError::OutOfBounds {
                path: self.path.clone(),
                start: r.start,
                end: r.end,
                len: self.len,
            });
        }
        read_many_at(&self.file, &self.path, ranges, self.batch)
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn evict_from_cache(&self) -> Result<()> {
        fadvise_dontneed(&self.file, &self.path)
    }
}

impl Directory for PreadDirectory {
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        Ok(Arc::new(PreadFile::open(&self.fs, name, self.batch)?))
    }
    crate::directory::delegate_fs_ops!();
    fn kind(&self) -> DirectoryKind {
        DirectoryKind::Pread
    }
}
