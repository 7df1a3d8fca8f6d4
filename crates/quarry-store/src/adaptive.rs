//! [`AdaptiveDirectory`]: which read path each file gets, chosen when it is opened from its kind
//! (the name's extension), its size and the memory this process may use.
//!
//! The policy ([`choose`]), with `avail` = [`crate::memory::available_memory`] (MemAvailable,
//! lowered by a cgroup limit) and `index` = the bytes of all files in the folder:
//!
//! | file kind | the index fits (`index <= avail / 2`) | it does not |
//! |---|---|---|
//! | postings, positions (`.post`, `.pos`) | mmap (kernel readahead kept) | mmap |
//! | stored fields (`.store`) | mmap | pread |
//! | small hot structures (terms, norms, meta, commit points: everything else) up to `avail / 8` | mmap + `MADV_WILLNEED` + `POSIX_FADV_WILLNEED` | same |
//! | anything else larger than `avail / 8` | mmap | mmap + `MADV_RANDOM` |
//!
//! Why: when the index is cached, mmap is the fastest path (no syscall, no copy), so the warm case
//! equals pure mmap, and `WILLNEED` starts reading the small structures every query touches
//! before the first query does. `MADV_RANDOM` on postings was measured and dropped for the
//! fitting case: on W1 with the index evicted it cut the bytes read from 19.6 MB to 0.8 MB but
//! made first queries 15-20x slower (6-9 ms against 0.4 ms: one synchronous 4 KiB fault after
//! another instead of a few large readahead reads), see `bench/results/io-2026-11-23.md`. When
//! the index does not fit, postings stay mapped too: the engine faults in only the chunks it
//! verifies and reads (`MADV_WILLNEED` on exact ranges), so the page cache does not thrash. The
//! W2 study under a cgroup memory limit of process + 25% of the index
//! (`bench/results/io-w2-2026-11-23.md`, table 4.3) measured p50 0.22-0.50 ms per class for
//! mmap, 0.29-0.52 ms for pread and 1.1-3.0 ms for direct (its pool is small there), so the
//! direct pool is no longer chosen for postings. Stored fields (read only for the top hits, one
//! small block each) are cheapest as single positioned reads. The measurements are in the
//! `quarry-bench io` report (see ARCHITECTURE.md).
use std::path::Path;
use std::sync::Arc;

use memmap2::Advice;

use crate::direct::DirectOptions;
use crate::directory::FsDirectory;
use crate::mmap::MappedFile;
use crate::pread::PreadFile;
use crate::{Directory, DirectoryKind, FileHandle, Result};

/// The kind of an index file, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `.post`, `.pos`: large, read at random offsets, a few KB to MB per query term.
    Postings,
    /// `.store`: large, one small block per top hit.
    Stored,
    /// Everything else (terms, norms, segment metas, commit points): small, touched by every query.
    Hot,
}

impl FileKind {
    pub fn of(name: &str) -> Self {
        match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("post" | "pos") => Self::Postings,
            Some("store") => Self::Stored,
            _ => Self::Hot,
        }
    }
}

/// The read path chosen for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Memory-mapped, default kernel readahead.
    Mmap,
    /// Memory-mapped with `MADV_RANDOM`.
    MmapRandom,
    /// Memory-mapped with `MADV_WILLNEED` (and `POSIX_FADV_WILLNEED`).
    MmapWillNeed,
    /// Positioned reads.
    Pread,
}

/// The policy of the module documentation: the path for a file of `kind` and `size` bytes in an
/// index of `index` bytes, with `avail` bytes of memory available.
pub fn choose(kind: FileKind, size: u64, index: u64, avail: u64) -> Choice {
    let fits = index <= avail / 2;
    match kind {
        FileKind::Hot if size <= avail / 8 => Choice::MmapWillNeed,
        _ if fits => Choice::Mmap,
        FileKind::Postings => Choice::Mmap,
        FileKind::Stored => Choice::Pread,
        FileKind::Hot => Choice::MmapRandom,
    }
}

/// Settings of an [`AdaptiveDirectory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdaptiveOptions {
    /// The memory to plan with; `None`: measured at each open.
    pub available_memory: Option<u64>,
    /// Read options: the batch mode of the files read with `pread` (the page size is checked;
    /// no file is read direct since the memory-limited study, see the module documentation).
    pub direct: DirectOptions,
}

/// Chooses a read path per file; see the module documentation.
#[derive(Debug, Clone)]
pub struct AdaptiveDirectory {
    fs: FsDirectory,
    opts: AdaptiveOptions,
}

impl AdaptiveDirectory {
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, AdaptiveOptions::default())
    }
    pub fn open_with(path: &Path, opts: AdaptiveOptions) -> Result<Self> {
        if opts.direct.page_size < crate::pool::MEM_ALIGN
            || !opts.direct.page_size.is_power_of_two()
        {
            return Err(crate::StoreError::BadOption {
                path: path.to_path_buf(),
                what: format!(
                    "page size {} is not a power of two >= 4096",
                    opts.direct.page_size
                ),
            });
        }
        Ok(Self {
            fs: FsDirectory::open(path)?,
            opts,
        })
    }

    /// The path `name` gets if opened now.
    pub fn choice_for(&self, name: &str) -> Result<Choice> {
        let path = self.fs.resolve(name)?;
        let size = std::fs::metadata(&path)
            .map_err(|e| crate::StoreError::io("stat", &path, e))?
            .len();
        Ok(choose(
            FileKind::of(name),
            size,
            self.index_bytes(),
            self.available(),
        ))
    }

    fn available(&self) -> u64 {
        self.opts
            .available_memory
            .or_else(crate::memory::available_memory)
            .unwrap_or(1 << 30)
    }

    /// Bytes of all files in the folder (the index and anything beside it).
    fn index_bytes(&self) -> u64 {
        let Ok(rd) = std::fs::read_dir(self.fs.path()) else {
            return 0;
        };
        rd.filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }
}

impl Directory for AdaptiveDirectory {
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        Ok(match self.choice_for(name)? {
            Choice::Mmap => Arc::new(MappedFile::open(&self.fs, name, &[])?),
            Choice::MmapRandom => Arc::new(MappedFile::open(&self.fs, name, &[Advice::Random])?),
            Choice::MmapWillNeed => {
                let f = MappedFile::open(&self.fs, name, &[Advice::WillNeed])?;
                f.fadvise_willneed();
                Arc::new(f)
            }
            Choice::Pread => Arc::new(PreadFile::open(&self.fs, name, self.opts.direct.batch)?),
        })
    }
    crate::directory::delegate_fs_ops!();
    fn kind(&self) -> DirectoryKind {
        DirectoryKind::Adaptive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1 << 30;
    const MB: u64 = 1 << 20;

    #[test]
    fn kinds_from_extensions() {
        assert_eq!(FileKind::of("_0.post"), FileKind::Postings);
        assert_eq!(FileKind::of("_0.pos"), FileKind::Postings);
        assert_eq!(FileKind::of("_0.store"), FileKind::Stored);
        assert_eq!(FileKind::of("_0.terms"), FileKind::Hot);
        assert_eq!(FileKind::of("commit_3"), FileKind::Hot);
    }

    #[test]
    fn policy_table() {
        // Fits: everything mapped.
        assert_eq!(choose(FileKind::Postings, GB, 2 * GB, 8 * GB), Choice::Mmap);
        assert_eq!(choose(FileKind::Stored, GB, 2 * GB, 8 * GB), Choice::Mmap);
        assert_eq!(
            choose(FileKind::Hot, 10 * MB, 2 * GB, 8 * GB),
            Choice::MmapWillNeed
        );
        // Does not fit: postings still mapped, stored pread, small hot files still mapped.
        assert_eq!(choose(FileKind::Postings, GB, 6 * GB, 8 * GB), Choice::Mmap);
        assert_eq!(choose(FileKind::Stored, GB, 6 * GB, 8 * GB), Choice::Pread);
        assert_eq!(
            choose(FileKind::Hot, 10 * MB, 6 * GB, 8 * GB),
            Choice::MmapWillNeed
        );
        assert_eq!(
            choose(FileKind::Hot, 2 * GB, 6 * GB, 8 * GB),
            Choice::MmapRandom
        );
    }

    #[test]
    fn opens_by_policy() {
        let t = tempfile::tempdir().unwrap();
        let data = vec![7u8; 100_000];
        let small = AdaptiveDirectory::open_with(
            t.path(),
            AdaptiveOptions {
                available_memory: Some(150_000),
                direct: DirectOptions {
                    page_size: 4096,
                    memory_limit: Some(8 * 4096),
                    ..Default::default()
                },
            },
        )
        .unwrap();
        small.atomic_write("_0.post", &data).unwrap();
        small.atomic_write("_0.store", &data).unwrap();
        small.atomic_write("_0.norms", &data[..1000]).unwrap();
        assert_eq!(small.choice_for("_0.post").unwrap(), Choice::Mmap);
        assert_eq!(small.choice_for("_0.store").unwrap(), Choice::Pread);
        assert_eq!(small.choice_for("_0.norms").unwrap(), Choice::MmapWillNeed);
        let post = small.open("_0.post").unwrap();
        assert!(post.mapped_view().is_some());
        assert_eq!(&*post.read_bytes(5000, 5010).unwrap(), &data[5000..5010]);
        let store = small.open("_0.store").unwrap();
        assert!(store.mapped_view().is_none());
        assert_eq!(&*store.read_bytes(5000, 5010).unwrap(), &data[5000..5010]);
        assert!(small.open("_0.norms").unwrap().mapped_view().is_some());

        let big = AdaptiveDirectory::open_with(
            t.path(),
            AdaptiveOptions {
                available_memory: Some(64 * GB),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(big.choice_for("_0.post").unwrap(), Choice::Mmap);
        assert!(big.open("_0.post").unwrap().mapped_view().is_some());
        assert!(big.open("_0.store").unwrap().mapped_view().is_some());
    }
}
