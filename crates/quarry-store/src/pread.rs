//! [`PreadDirectory`]: every read is one positioned `pread(2)` into a buffer of exactly the
//! requested size (no fixed small buffer, so a postings list is one read, not many).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::directory::{fadvise_dontneed, FsDirectory};
use crate::{Bytes, Directory, DirectoryKind, FileHandle, Result, StoreError};

/// Reads with positioned reads; memory use is bounded by what callers keep, not by file sizes.
#[derive(Debug, Clone)]
pub struct PreadDirectory {
    fs: FsDirectory,
}

impl PreadDirectory {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            fs: FsDirectory::open(path)?,
        })
    }
}

#[derive(Debug)]
struct PreadFile {
    name: String,
    path: PathBuf,
    file: File,
    len: u64,
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
    fn name(&self) -> &str {
        &self.name
    }
    fn evict_from_cache(&self) -> Result<()> {
        fadvise_dontneed(&self.file, &self.path)
    }
}

impl Directory for PreadDirectory {
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        let (path, file) = self.fs.open_file(name)?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        Ok(Arc::new(PreadFile {
            name: name.to_string(),
            path,
            file,
            len,
        }))
    }
    crate::directory::delegate_fs_ops!();
    fn kind(&self) -> DirectoryKind {
        DirectoryKind::Pread
    }
}
