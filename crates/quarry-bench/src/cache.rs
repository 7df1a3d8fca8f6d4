//! How is an index put into, or taken out of, the page cache before a cold start: warming,
//! eviction (fsync + `posix_fadvise(DONTNEED)`) and `mincore` residency checks.

use std::path::Path;

use anyhow::{bail, Result};

use crate::measure;

/// Evicts an index from the page cache: fsync, then posix_fadvise(DONTNEED), for every file.
/// Returns (files, bytes, resident bytes before, resident bytes after).
pub fn evict(dir: &Path) -> Result<(usize, u64, u64, u64)> {
    let files = measure::index_files(dir);
    let (mut bytes, mut before, mut after) = (0, 0, 0);
    for f in &files {
        before += resident_bytes(f)?;
        let file = std::fs::File::open(f)?;
        file.sync_all()?;
        let len = file.metadata()?.len();
        bytes += len;
        use std::os::fd::AsRawFd;
        // SAFETY: plain syscall on an fd we own for the duration of the call.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            bail!(
                "posix_fadvise({}) failed: {}",
                f.display(),
                std::io::Error::from_raw_os_error(rc)
            );
        }
        after += resident_bytes(f)?;
    }
    Ok((files.len(), bytes, before, after))
}

/// Reads every index file once so that it is in the page cache; returns resident bytes after.
pub fn warm(dir: &Path) -> Result<u64> {
    let mut resident = 0;
    for f in measure::index_files(dir) {
        std::io::copy(&mut std::fs::File::open(&f)?, &mut std::io::sink())?;
        resident += resident_bytes(&f)?;
    }
    Ok(resident)
}

/// Bytes of `path` resident in the page cache (mmap + mincore), like `fincore`.
pub fn resident_bytes(path: &Path) -> Result<u64> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: read-only shared mapping of a file we hold open; unmapped below; never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        bail!(
            "mmap {} failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: addr/len is the mapping created above; vec has one byte per page as mincore needs.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping created above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        bail!(
            "mincore {} failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64)
}
