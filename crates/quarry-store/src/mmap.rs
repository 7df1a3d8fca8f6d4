//! [`MmapDirectory`]: files are memory-mapped once; every read is a zero-copy view (stored
//! fields excepted: they are read with `pread`, see [`MmapDirectory`]).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Advice, Mmap, MmapOptions};

use crate::adaptive::FileKind;
use crate::batch::BatchMode;
use crate::directory::{fadvise_dontneed, FsDirectory};
use crate::pread::PreadFile;
use crate::{Bytes, Directory, DirectoryKind, FileHandle, Result, StoreError};

/// Reads through `mmap(2)`: no syscall and no copy per read, which suits the random access of
/// skipping and block-max pruning.
///
/// Stored-fields files (`.store`) are the exception: they are read with positioned reads
/// (`POSIX_FADV_RANDOM`, so a cache miss reads exactly the requested pages). A search reads one
/// small block per top hit from them, and a mapping is a poor fit for that: when the page cache
/// holds the file in large folios (up to 2 MiB, as Linux 6.x readahead builds them after a
/// sequential read), touching one byte of a mapping maps the whole folio into the process, so
/// ten stored documents added 12-15 MiB to a fresh process's resident set on W2 (a copy of a
/// few KB per block costs nothing next to decoding it). Their handles have no
/// [`FileHandle::mapped_view`].
#[derive(Debug, Clone)]
pub struct MmapDirectory {
    fs: FsDirectory,
}

impl MmapDirectory {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            fs: FsDirectory::open(path)?,
        })
    }
}

pub(crate) struct MappedFile {
    name: String,
    path: PathBuf,
    file: File,
    bytes: Bytes,
    /// The mapping (`None` for an empty file), for range hints.
    map: Option<Arc<Mmap>>,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({}, {} bytes)", self.name, self.bytes.len())
    }
}

impl FileHandle for MappedFile {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_bytes(&self, start: u64, end: u64) -> Result<Bytes> {
        let oob = || StoreError::OutOfBounds {
            path: self.path.clone(),
            start,
            end,
            len: self.len(),
        };
        let (s, e) = (
            usize::try_from(start).map_err(|_| oob())?,
            usize::try_from(end).map_err(|_| oob())?,
        );
        self.bytes.slice(s..e).ok_or_else(oob)
    }
    fn will_need(&self, start: u64, end: u64) {
        if let Some(map) = &self.map {
            let end = (end as usize).min(map.len());
            let start = (start as usize).min(end);
            if start < end {
                // A hint: a refusal changes nothing but the speed.
                let _ = map.advise_range(Advice::WillNeed, start, end - start);
            }
        }
    }
    fn read_small(&self, start: u64, end: u64) -> Result<Bytes> {
        if start > end || end > self.len() {
            return Err(StoreError::OutOfBounds {
                path: self.path.clone(),
                start,
                end,
                len: self.len(),
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
    fn mapped_view(&self) -> Option<Bytes> {
        Some(self.bytes.clone())
    }
    fn evict_from_cache(&self) -> Result<()> {
        fadvise_dontneed(&self.file, &self.path)
    }
}

impl MappedFile {
    /// Maps `name`; `advice` is given to the kernel for the whole mapping (a hint: refusals are
    /// ignored).
    pub(crate) fn open(fs: &FsDirectory, name: &str, advice: &[Advice]) -> Result<Self> {
        let (path, file) = fs.open_file(name)?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        let (bytes, map) = if len == 0 {
            // mmap of an empty file fails on Linux; an empty buffer is equivalent.
            (Bytes::empty(), None)
        } else {
            // SAFETY: index files are immutable once published (written, fsynced, then renamed
            // into a commit); quarry never truncates or rewrites a file that may be mapped.
            // The length is given: `Mmap::map` would ask the file's size a second time.
            let map = unsafe { MmapOptions::new().len(len as usize).map(&file) }
                .map_err(|e| StoreError::io("mmap", &path, e))?;
            for a in advice {
                let _ = map.advise(*a);
            }
            let map = Arc::new(map);
            (Bytes::from_owner(map.clone()), Some(map))
        };
        Ok(MappedFile {
            name: name.to_string(),
            path,
            file,
            bytes,
            map,
        })
    }
}

impl MappedFile {
    /// Asks the kernel to start reading the whole file into the page cache (a hint).
    pub(crate) fn fadvise_willneed(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: the fd is valid for the lifetime of `self.file`; posix_fadvise takes integers.
        let _ =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
    }
}

/// Maps a whole file read-only for one front-to-back pass, for input that is not an index file
/// (JSON Lines fed to `quarry index`): one view, no copy, `MADV_SEQUENTIAL` so the kernel reads
/// ahead and drops pages behind. An empty file gives an empty buffer.
///
/// Unlike index files, an input file may be changed by another process while it is mapped: if it
/// is truncated, reading the lost tail faults (SIGBUS). Callers that cannot rule that out read
/// with ordinary `read(2)` instead.
pub fn map_for_sequential_read(path: &Path) -> Result<Bytes> {
    let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
    if len == 0 {
        return Ok(Bytes::empty());
    }
    // SAFETY: the mapping is only read, through `Bytes`, which keeps it alive; the file is opened
    // read-only. A concurrent truncation by another process is the documented hazard above.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io("mmap", path, e))?;
    let _ = map.advise(Advice::Sequential);
    Ok(Bytes::from_owner(Arc::new(map)))
}

impl Directory for MmapDirectory {
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        if FileKind::of(name) == FileKind::Stored {
            let file = PreadFile::open(&self.fs, name, BatchMode::Auto)?;
            file.advise_random();
            return Ok(Arc::new(file));
        }
        Ok(Arc::new(MappedFile::open(&self.fs, name, &[])?))
    }
    crate::directory::delegate_fs_ops!();
    fn kind(&self) -> DirectoryKind {
        DirectoryKind::Mmap
    }
}
