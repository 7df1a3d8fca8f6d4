//! How many known ranges of one file are read at once: one io_uring submission per batch of up to
//! [`RING_ENTRIES`] reads, or a positioned read per range where io_uring is unavailable.
//!
//! Each thread keeps its own ring (created on first use); a kernel or sandbox that refuses
//! io_uring (ENOSYS, EPERM) is remembered process-wide and [`BatchMode::Auto`] then reads with
//! `pread`. Short reads and interrupted requests are finished with `pread`, so callers always get
//! exactly the bytes they asked for.
use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

use io_uring::{opcode, types, IoUring};

use crate::{Bytes, Result, StoreError};

/// Reads submitted to the kernel at once.
pub const RING_ENTRIES: u32 = 64;

/// How [`crate::FileHandle::read_many`] issues its reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BatchMode {
    /// io_uring when the kernel allows it, `pread` otherwise (the default).
    #[default]
    Auto,
    /// io_uring only: an error if it is unavailable (for tests and measurements).
    Uring,
    /// One `pread` per range.
    Pread,
}

impl std::str::FromStr for BatchMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "uring" | "io_uring" => Ok(Self::Uring),
            "pread" => Ok(Self::Pread),
            other => Err(format!(
                "unknown batch mode {other:?} (expected auto, uring or pread)"
            )),
        }
    }
}

const UNKNOWN: u8 = 0;
const AVAILABLE: u8 = 1;
const REFUSED: u8 = 2;
static URING: AtomicU8 = AtomicU8::new(UNKNOWN);

thread_local! {
    static RING: RefCell<Option<IoUring>> = const { RefCell::new(None) };
}

/// Whether this process can use io_uring (tries to create a ring once).
pub fn uring_available() -> bool {
    match URING.load(Ordering::Relaxed) {
        AVAILABLE => true,
        REFUSED => false,
        _ => RING.with(|r| ensure_ring(&mut r.borrow_mut()).is_ok()),
    }
}

fn ensure_ring(slot: &mut Option<IoUring>) -> std::io::Result<()> {
    if slot.is_none() {
        match IoUring::new(RING_ENTRIES) {
            Ok(ring) => {
                URING.store(AVAILABLE, Ordering::Relaxed);
                *slot = Some(ring);
            }
            Err(e) => {
                URING.store(REFUSED, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Reads every range of `file` (already bounds-checked by the caller), in order.
pub(crate) fn read_many_at(
    file: &File,
    path: &Path,
    ranges: &[Range<u64>],
    mode: BatchMode,
) -> Result<Vec<Bytes>> {
    let use_uring = match mode {
        BatchMode::Pread => false,
        BatchMode::Auto => URING.load(Ordering::Relaxed) != REFUSED,
        BatchMode::Uring => true,
    };
    if use_uring && ranges.len() > 1 {
        let mut bufs: Vec<Vec<u8>> = ranges
            .iter()
            .map(|r| vec![0u8; (r.end - r.start) as usize])
            .collect();
        match RING.with(|slot| uring_read(&mut slot.borrow_mut(), file, ranges, &mut bufs)) {
            Ok(()) => return Ok(bufs.into_iter().map(Bytes::from_vec).collect()),
            Err(e) if mode == BatchMode::Uring => return Err(StoreError::io("io_uring", path, e)),
            Err(_) => {} // Auto: fall through to pread.
        }
    } else if mode == BatchMode::Uring {
        RING.with(|slot| ensure_ring(&mut slot.borrow_mut()))
            .map_err(|e| StoreError::io("io_uring setup", path, e))?;
    }
    ranges
        .iter()
        .map(|r| {
            let mut buf = vec![0u8; (r.end - r.start) as usize];
            file.read_exact_at(&mut buf, r.start)
                .map_err(|e| StoreError::io("pread", path, e))?;
            Ok(Bytes::from_vec(buf))
        })
        .collect()
}

/// Fills `bufs[i]` with `ranges[i]` through the thread's ring, finishing short or interrupted
/// reads with `pread`.
fn uring_read(
    slot: &mut Option<IoUring>,
    file: &File,
    ranges: &[Range<u64>],
    bufs: &mut [Vec<u8>],
) -> std::io::Result<()> {
    ensure_ring(slot)?;
    let ring = slot.as_mut().expect("ring was just created");
    let fd = types::Fd(file.as_raw_fd());
    // How many bytes each request delivered (None: not completed by the ring).
    let mut done: Vec<Option<usize>> = vec![None; ranges.len()];
    let mut next = 0usize;
    while next < ranges.len() {
        let batch_end = (next + RING_ENTRIES as usize).min(ranges.len());
        let mut pushed = 0usize;
        for i in next..batch_end {
            let len = bufs[i].len();
            if len == 0 || len > (u32::MAX / 2) as usize {
                continue; // empty, or too large for one request: pread below
            }
            let entry = opcode::Read::new(fd, bufs[i].as_mut_ptr(), len as u32)
                .offset(ranges[i].start)
                .build()
                .user_data(i as u64);
            // SAFETY: the buffer `bufs[i]` stays allocated and untouched until its completion is
            // reaped below (or forever, if the ring fails: see the error path), and the fd stays
            // open for the whole call because `file` is borrowed.
            unsafe { ring.submission().push(&entry) }
                .map_err(|_| std::io::Error::other("io_uring submission queue full"))?;
            pushed += 1;
        }
        let mut reaped = 0usize;
        while reaped < pushed {
            match ring.submit_and_wait(pushed - reaped) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Requests may still be in flight into `bufs`: never free those buffers,
                    // and drop the ring so no later call shares its state.
                    for b in bufs.iter_mut() {
                        std::mem::forget(std::mem::take(b));
                    }
                    *slot = None;
                    return Err(e);
                }
            }
            for cqe in ring.completion() {
                let i = cqe.user_data() as usize;
                let res = cqe.result();
                done[i] = (res >= 0).then_some(res as usize);
                reaped += 1;
            }
        }
        next = batch_end;
    }
    for (i, r) in ranges.iter().enumerate() {
        let got = done[i].unwrap_or(0);
        if got < bufs[i].len() {
            file.read_exact_at(&mut bufs[i][got..], r.start + got as u64)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn sample() -> (tempfile::NamedTempFile, Vec<u8>) {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&data).unwrap();
        f.flush().unwrap();
        (f, data)
    }

    fn ranges() -> Vec<Range<u64>> {
        // More ranges than one ring holds, with empty and overlapping ones.
        (0..150u64)
            .map(|i| {
                let s = (i * 1997) % 290_000;
                s..s + (i * 31) % 9000
            })
            .collect()
    }

    fn check(mode: BatchMode) {
        let (f, data) = sample();
        let rs = ranges();
        let got = read_many_at(f.as_file(), f.path(), &rs, mode).unwrap();
        assert_eq!(got.len(), rs.len());
        for (r, b) in rs.iter().zip(&got) {
            assert_eq!(&**b, &data[r.start as usize..r.end as usize]);
        }
    }

    #[test]
    fn pread_fallback_reads_every_range() {
        check(BatchMode::Pread);
    }

    #[test]
    fn auto_reads_every_range() {
        check(BatchMode::Auto);
    }

    #[test]
    fn uring_reads_every_range_or_reports_why_not() {
        if uring_available() {
            check(BatchMode::Uring);
        } else {
            let (f, _) = sample();
            let err = read_many_at(f.as_file(), f.path(), &ranges(), BatchMode::Uring);
            assert!(matches!(err, Err(StoreError::Io { .. })));
        }
    }
}
