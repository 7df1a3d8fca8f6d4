//! [`DirectDirectory`]: reads with `O_DIRECT` into a shared [`BufferPool`], bypassing the page
//! cache, so the memory spent on index bytes is exactly the pool's limit.
//!
//! - Alignment comes from `statx(STATX_DIOALIGN)`; a file system that reports no direct-I/O
//!   support, refuses the `O_DIRECT` open or a direct read (`EINVAL`), or needs an alignment the
//!   pool's pages cannot meet is read with ordinary buffered reads instead (same pool, same
//!   results) — [`DirectFile::is_direct`] tells which.
//! - Without `copy_out`, a read inside one page returns a view of the pinned frame (zero copy; the pin is held as long
//!   as the [`Bytes`] or any slice of it lives). A read spanning pages copies them out, page by
//!   page, so it holds no pins. A read of more than an eighth of the pool, or any read while every
//!   frame is pinned, goes around the pool: one aligned direct read into its own buffer.
//! - With [`DirectOptions::copy_out`] (the default, chosen by the `quarry-bench io` study:
//!   1.1 µs against 1.5 µs per 100-byte read), single-page reads are copied too and no pin
//!   outlives a call; with it off, they are pinned views as described above.
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::batch::BatchMode;
use crate::directory::{fadvise_dontneed, FsDirectory};
use crate::pool::{AlignedBuf, BufferPool, Lookup, PageKey, PinnedPage, MEM_ALIGN};
use crate::{Bytes, Directory, DirectoryKind, FileHandle, LoadCheck, Result, StoreError};

/// Default page (frame) size: the read-size study (`quarry-bench io`) shows per-read latency on
/// this class of disk nearly flat up to 64 KiB and growing beyond it.
pub const DEFAULT_PAGE_SIZE: usize = 64 << 10;

/// Settings of a [`DirectDirectory`] and of the direct files of an adaptive directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectOptions {
    /// Bytes per pool page: a power of two, at least 4096.
    pub page_size: usize,
    /// Bytes of the pool; `None`: a quarter of the available memory, between 16 MiB and 1 GiB.
    pub memory_limit: Option<usize>,
    /// Copy single-page reads out of the pool instead of handing out pinned views (the default:
    /// measured faster for small reads, see `bench/results/io-*.md` section 3, and no pin outlives
    /// a call, so long-lived reader structures cannot shrink the pool).
    pub copy_out: bool,
    /// Never use `O_DIRECT` (tests of the buffered fallback).
    pub buffered_only: bool,
    /// How `read_many` issues reads that go around the pool.
    pub batch: BatchMode,
}

impl Default for DirectOptions {
    fn default() -> Self {
        Self {
            page_size: DEFAULT_PAGE_SIZE,
            memory_limit: None,
            copy_out: true,
            buffered_only: false,
            batch: BatchMode::Auto,
        }
    }
}

impl DirectOptions {
    /// The pool size these options give on this machine now.
    pub fn pool_bytes(&self) -> usize {
        self.memory_limit.unwrap_or_else(|| {
            let avail = crate::memory::available_memory().unwrap_or(1 << 30) as usize;
            (avail / 4).clamp(16 << 20, 1 << 30)
        })
    }
    fn validate(&self, path: &Path) -> Result<()> {
        if !self.page_size.is_power_of_two() || self.page_size < MEM_ALIGN {
            return Err(StoreError::BadOption {
                path: path.to_path_buf(),
                what: format!(
                    "page size {} is not a power of two of at least {MEM_ALIGN}",
                    self.page_size
                ),
            });
        }
        Ok(())
    }
}

/// Reads through `O_DIRECT` and a buffer pool; see the module documentation.
#[derive(Debug, Clone)]
pub struct DirectDirectory {
    fs: FsDirectory,
    pool: Arc<BufferPool>,
    opts: DirectOptions,
}

impl DirectDirectory {
    /// Opens `path` with the default options.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, DirectOptions::default())
    }
    pub fn open_with(path: &Path, opts: DirectOptions) -> Result<Self> {
        opts.validate(path)?;
        let fs = FsDirectory::open(path)?;
        let pool = Arc::new(BufferPool::new(opts.page_size, opts.pool_bytes()));
        Ok(Self { fs, pool, opts })
    }
    /// The pool (for its counters).
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
    /// Opens `name` as a [`DirectFile`] (the concrete type, for tests and tools).
    pub fn open_file(&self, name: &str) -> Result<Arc<DirectFile>> {
        DirectFile::open(&self.fs, name, self.pool.clone(), self.opts).map(Arc::new)
    }
}

impl Directory for DirectDirectory {
    fn open(&self, name: &str) -> Result<Arc<dyn FileHandle>> {
        Ok(self.open_file(name)?)
    }
    crate::directory::delegate_fs_ops!();
    fn kind(&self) -> DirectoryKind {
        DirectoryKind::Direct
    }
}

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(1);

/// One file read through the pool.
#[derive(Debug)]
pub struct DirectFile {
    name: String,
    path: PathBuf,
    id: u64,
    len: u64,
    buffered: File,
    direct: Option<File>,
    /// Offset and length alignment of direct reads (a divisor of the page size).
    align: u64,
    /// Set when a direct read was refused with EINVAL: the file is read buffered from then on.
    refused: AtomicBool,
    pool: Arc<BufferPool>,
    opts: DirectOptions,
    /// Run on every read from the disk (pages entering the pool, reads around it).
    load_check: OnceLock<Arc<dyn LoadCheck>>,
}

impl DirectFile {
    pub(crate) fn open(
        fs: &FsDirectory,
        name: &str,
        pool: Arc<BufferPool>,
        opts: DirectOptions,
    ) -> Result<Self> {
        let (path, buffered) = fs.open_file(name)?;
        let len = buffered
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        let mut direct = None;
        let mut align = MEM_ALIGN as u64;
        if !opts.buffered_only {
            if let Ok(f) = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
            {
                if let Some(a) = dio_alignment(&f) {
                    if a.is_power_of_two() && a as usize <= pool.page_size() {
                        align = a.max(MEM_ALIGN as u64);
                        direct = Some(f);
                    }
                }
            }
        }
        Ok(Self {
            name: name.to_string(),
            path,
            id: NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed),
            len,
            buffered,
            direct,
            align,
            refused: AtomicBool::new(false),
            pool,
            opts,
            load_check: OnceLock::new(),
        })
    }

    /// Runs the load check, if any, on `bytes` read from the disk at `offset`.
    fn check_load(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        match self.load_check.get() {
            Some(c) => c.check(offset, bytes).map_err(|why| StoreError::Rejected {
                path: self.path.clone(),
                offset,
                why,
            }),
            None => Ok(()),
        }
    }

    /// Whether reads bypass the page cache (false: the file system refused `O_DIRECT`).
    pub fn is_direct(&self) -> bool {
        self.direct.is_some() && !self.refused.load(Ordering::Relaxed)
    }

    /// Reads as much of `buf` as the file has at `offset` (aligned when direct); returns the
    /// number of bytes read, which is less than `buf.len()` only at the end of the file.
    fn read_aligned(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let want = (self.len.saturating_sub(offset) as usize).min(buf.len());
        if let (Some(f), false) = (&self.direct, self.refused.load(Ordering::Relaxed)) {
            match f.read_at(buf, offset) {
                Ok(n) if n >= want => return Ok(want),
                // A short direct read: finish it buffered below.
                Ok(n) => return self.read_buffered(buf, offset, n, want),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.refused.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
        self.read_buffered(buf, offset, 0, want)
    }

    fn read_buffered(
        &self,
        buf: &mut [u8],
        offset: u64,
        from: usize,
        want: usize,
    ) -> std::io::Result<usize> {
        self.buffered
            .read_exact_at(&mut buf[from..want], offset + from as u64)?;
        Ok(want)
    }

    /// Page `page` pinned in the pool; `None` when every frame is pinned.
    fn page(&self, page: u64) -> Result<Option<PinnedPage>> {
        let ps = self.pool.page_size() as u64;
        let key = PageKey {
            file: self.id,
            page,
        };
        let got = self.pool.get(key, |buf| {
            let n = self
                .read_aligned(buf, page * ps)
                .map_err(|e| StoreError::io("direct read", &self.path, e))?;
            self.check_load(page * ps, &buf[..n])?;
            Ok::<_, StoreError>(n)
        })?;
        Ok(match got {
            Lookup::Page(p) => Some(p),
            Lookup::Full => None,
        })
    }

    /// `[start, end)` read around the pool into its own aligned buffer.
    fn read_around(&self, start: u64, end: u64) -> Result<Bytes> {
        self.pool.count_bypass();
        let a0 = start / self.align * self.align;
        let a1 = end.div_ceil(self.align) * self.align;
        let mut buf = AlignedBuf::zeroed((a1 - a0) as usize);
        let n = self
            .read_aligned(buf.as_mut_slice(), a0)
            .map_err(|e| StoreError::io("direct read", &self.path, e))?;
        buf.truncate(n);
        self.check_load(a0, buf.as_ref())?;
        let s = (start - a0) as usize;
        Bytes::from_owner(Arc::new(buf))
            .slice(s..s + (end - start) as usize)
            .ok_or_else(|| self.oob(start, end))
    }

    fn oob(&self, start: u64, end: u64) -> StoreError {
        StoreError::OutOfBounds {
            path: self.path.clone(),
            start,
            end,
            len: self.len,
        }
    }

    /// The bytes of page `page` from `from` on, checked against the page's valid length.
    fn page_part(&self, p: &PinnedPage, from: usize, to: usize) -> Result<Range<usize>> {
        if to > p.len() {
            // The file is shorter than its length said at open (it was truncated underneath).
            return Err(StoreError::io(
                "direct read",
                &self.path,
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            ));
        }
        Ok(from..to)
    }
}

impl FileHandle for DirectFile {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, start: u64, end: u64) -> Result<Bytes> {
        if start > end || end > self.len {
            return Err(self.oob(start, end));
        }
        if start == end {
            return Ok(Bytes::empty());
        }
        let ps = self.pool.page_size() as u64;
        let (first, last) = (start / ps, (end - 1) / ps);
        let pages = last - first + 1;
        if pages > (self.pool.frames() as u64 / 8).max(1) && pages > 1 {
            return self.read_around(start, end);
        }
        if pages == 1 {
            let Some(p) = self.page(first)? else {
                return self.read_around(start, end);
            };
            let base = first * ps;
            let r = self.page_part(&p, (start - base) as usize, (end - base) as usize)?;
            if self.opts.copy_out {
                return Ok(Bytes::from_vec(p.as_ref()[r].to_vec()));
            }
            return Bytes::from_owner(Arc::new(p))
                .slice(r)
                .ok_or_else(|| self.oob(start, end));
        }
        let mut out = Vec::with_capacity((end - start) as usize);
        for page in first..=last {
            let base = page * ps;
            let (s, e) = (start.max(base), end.min(base + ps));
            match self.page(page)? {
                Some(p) => {
                    let r = self.page_part(&p, (s - base) as usize, (e - base) as usize)?;
                    out.extend_from_slice(&p.as_ref()[r]);
                }
                None => {
                    out.extend_from_slice(&self.read_around(s, end)?);
                    break;
                }
            }
        }
        Ok(Bytes::from_vec(out))
    }
    fn read_many(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > self.len) {
            return Err(self.oob(r.start, r.end));
        }
        if self.is_direct() || self.load_check.get().is_some() {
            // Pages already in the pool make most of these cheap; misses load one page each.
            ranges
                .iter()
                .map(|r| self.read_bytes(r.start, r.end))
                .collect()
        } else {
            crate::batch::read_many_at(&self.buffered, &self.path, ranges, self.opts.batch)
        }
    }
    fn set_load_check(&self, check: Arc<dyn LoadCheck>) -> bool {
        // A second check (a second reader of the same handle) keeps the first: same file.
        let _ = self.load_check.set(check);
        true
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn evict_from_cache(&self) -> Result<()> {
        self.pool.forget_file(self.id);
        fadvise_dontneed(&self.buffered, &self.path)
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        self.pool.forget_file(self.id);
    }
}

/// The direct-I/O offset alignment of `file` from `statx(STATX_DIOALIGN)`: `None` if the file
/// system says it does not support direct I/O; 4096 if the kernel does not report it.
fn dio_alignment(file: &File) -> Option<u64> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    match statx(file, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0 => {
            if st.stx_dio_offset_align == 0 || st.stx_dio_mem_align as usize > MEM_ALIGN {
                None
            } else {
                Some(u64::from(st.stx_dio_offset_align))
            }
        }
        _ => Some(MEM_ALIGN as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn data(n: usize) -> Vec<u8> {
        (0..n as u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect()
    }

    /// Whether `path` is on tmpfs (statfs magic `TMPFS_MAGIC`), which may refuse `O_DIRECT`.
    fn on_tmpfs(path: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
        // SAFETY: `c` is a NUL-terminated path and `st` points to writable memory of the right type.
        let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
        // SAFETY: statfs succeeded and filled `st` (zeroed before anyway).
        rc == 0 && unsafe { st.assume_init() }.f_type == libc::TMPFS_MAGIC
    }

    /// A temporary folder on a file system that takes `O_DIRECT`: the system's temporary folder
    /// unless it is tmpfs (then /var/tmp, else the workspace's target/ folder), so that the
    /// direct-I/O tests test direct I/O wherever they run.
    fn direct_tempdir() -> tempfile::TempDir {
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/direct-io-tests");
        let candidates = [std::env::temp_dir(), PathBuf::from("/var/tmp"), target];
        for dir in &candidates {
            let _ = std::fs::create_dir_all(dir);
            if dir.is_dir() && !on_tmpfs(dir) {
                if let Ok(t) = tempfile::tempdir_in(dir) {
                    return t;
                }
            }
        }
        panic!("no folder off tmpfs for the direct-I/O tests among {candidates:?}");
    }

    #[test]
    fn direct_tempdir_is_not_on_tmpfs() {
        let t = direct_tempdir();
        assert!(!on_tmpfs(t.path()), "{}", t.path().display());
    }

    fn setup(opts: DirectOptions, n: usize) -> (tempfile::TempDir, DirectDirectory, Vec<u8>) {
        let t = direct_tempdir();
        let d = DirectDirectory::open_with(t.path(), opts).unwrap();
        let bytes = data(n);
        let mut w = d.create("f").unwrap();
        w.write_all(&bytes).unwrap();
        w.finish().unwrap();
        (t, d, bytes)
    }

    fn small_pool() -> DirectOptions {
        DirectOptions {
            page_size: 4096,
            memory_limit: Some(16 * 4096),
            copy_out: false,
            ..Default::default()
        }
    }

    #[test]
    fn uses_o_direct_on_this_file_system() {
        let (_t, d, _) = setup(small_pool(), 10_000);
        let f = d.open_file("f").unwrap();
        // `setup` puts the file off tmpfs (which may fall back to buffered reads, tested below).
        assert!(f.is_direct(), "O_DIRECT refused on {}", d.path().display());
        f.read_bytes(0, 10).unwrap();
        assert!(f.is_direct());
    }

    #[test]
    fn spanning_reads_large_reads_and_counters() {
        let (_t, d, bytes) = setup(small_pool(), 200_000);
        let f = d.open_file("f").unwrap();
        // Inside one page, twice: a miss then a hit.
        assert_eq!(&*f.read_bytes(100, 200).unwrap(), &bytes[100..200]);
        assert_eq!(&*f.read_bytes(150, 250).unwrap(), &bytes[150..250]);
        let s = d.pool().stats();
        assert_eq!((s.hits, s.misses), (1, 1));
        // Across two pages (the copy path); the tail page is short.
        assert_eq!(&*f.read_bytes(4000, 4200).unwrap(), &bytes[4000..4200]);
        assert_eq!(&*f.read_bytes(195_000, 200_000).unwrap(), &bytes[195_000..]);
        // Larger than the whole pool: read around it.
        assert_eq!(&*f.read_all().unwrap(), &bytes[..]);
        assert_eq!(&*f.read_bytes(5, 150_001).unwrap(), &bytes[5..150_001]);
        assert!(d.pool().stats().bypass_reads >= 2);
        // Cycling through more pages than the pool holds evicts.
        for p in 0..40u64 {
            let s = p * 4096 + 7;
            assert_eq!(
                &*f.read_bytes(s, s + 9).unwrap(),
                &bytes[s as usize..s as usize + 9]
            );
        }
        assert!(d.pool().stats().evictions > 0);
        assert_eq!(d.pool().pinned_frames(), 0);
    }

    #[test]
    fn held_bytes_stay_valid_and_pinned_pages_are_not_evicted() {
        let (_t, d, bytes) = setup(small_pool(), 300_000);
        let f = d.open_file("f").unwrap();
        let held: Vec<Bytes> = (0..8u64)
            .map(|p| f.read_bytes(p * 4096, p * 4096 + 50).unwrap())
            .collect();
        assert_eq!(d.pool().pinned_frames(), 8);
        // Churn through every other page many times over.
        for round in 0..3 {
            for p in 8..70u64 {
                let s = p * 4096 + round;
                f.read_bytes(s, s + 1).unwrap();
            }
        }
        for (p, b) in held.iter().enumerate() {
            let s = p * 4096;
            assert_eq!(&**b, &bytes[s..s + 50], "pinned page {p} was overwritten");
        }
        drop(held);
        assert_eq!(d.pool().pinned_frames(), 0);
    }

    #[test]
    fn every_frame_pinned_reads_around_the_pool() {
        let opts = DirectOptions {
            page_size: 4096,
            memory_limit: Some(2 * 4096),
            copy_out: false,
            ..Default::default()
        };
        let (_t, d, bytes) = setup(opts, 40_000);
        let f = d.open_file("f").unwrap();
        let a = f.read_bytes(0, 10).unwrap();
        let b = f.read_bytes(4096, 4106).unwrap();
        assert_eq!(&*f.read_bytes(9000, 9100).unwrap(), &bytes[9000..9100]);
        assert_eq!(&*f.read_bytes(8000, 9000).unwrap(), &bytes[8000..9000]);
        assert_eq!((&*a, &*b), (&bytes[0..10], &bytes[4096..4106]));
        assert!(d.pool().stats().bypass_reads >= 2);
    }

    #[test]
    fn copy_out_holds_no_pins() {
        let opts = DirectOptions {
            copy_out: true,
            ..small_pool()
        };
        let (_t, d, bytes) = setup(opts, 50_000);
        let f = d.open_file("f").unwrap();
        let b = f.read_bytes(10, 20).unwrap();
        assert_eq!(d.pool().pinned_frames(), 0);
        assert_eq!(&*b, &bytes[10..20]);
    }

    #[test]
    fn buffered_fallback_on_tmpfs_or_when_forced() {
        // tmpfs refused O_DIRECT (EINVAL) before Linux 6.6 and accepts it since: either way
        // the reads must be right.
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            let t = tempfile::tempdir_in(shm).unwrap();
            let d = DirectDirectory::open_with(t.path(), small_pool()).unwrap();
            let bytes = data(70_000);
            d.atomic_write("g", &bytes).unwrap();
            let f = d.open_file("g").unwrap();
            assert_eq!(&*f.read_bytes(4000, 9000).unwrap(), &bytes[4000..9000]);
            assert_eq!(&*f.read_all().unwrap(), &bytes[..]);
        }
        let opts = DirectOptions {
            buffered_only: true,
            ..small_pool()
        };
        let (_t, d, bytes) = setup(opts, 70_000);
        let f = d.open_file("f").unwrap();
        assert!(!f.is_direct());
        assert_eq!(&*f.read_bytes(4000, 9000).unwrap(), &bytes[4000..9000]);
    }

    #[test]
    fn concurrent_readers_agree() {
        let (_t, d, bytes) = setup(small_pool(), 500_000);
        let f = d.open_file("f").unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (f, bytes) = (f.clone(), &bytes);
                s.spawn(move || {
                    for i in 0..500u64 {
                        let start = (i * 7919 + t * 104_729) % 490_000;
                        let end = start + (i * 13) % 9000 + 1;
                        let got = f.read_bytes(start, end).unwrap();
                        assert_eq!(&*got, &bytes[start as usize..end as usize]);
                    }
                });
            }
        });
        assert_eq!(d.pool().pinned_frames(), 0);
    }

    #[test]
    fn bad_page_size_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let opts = DirectOptions {
            page_size: 5000,
            ..Default::default()
        };
        assert!(matches!(
            DirectDirectory::open_with(t.path(), opts),
            Err(StoreError::BadOption { .. })
        ));
    }
}
