//! Were these bytes checked against their chunk checksums? Read-path integrity (format v3): a
//! segment data file carries one CRC32C per 4 KiB chunk; a [`VerifiedFile`] checks a chunk the
//! first time this process reads it and remembers that in a lock-free bitmap, so a warm read
//! costs one relaxed atomic load per 64 chunks of the range.
//!
//! The file wrapper lives here; its parts each answer one question: [`bitmap`] (which chunks
//! were checked), [`region`] (checks as a cursor reaches them), [`norms`] (norm groups),
//! [`deadline`] (until when reads may go to the disk) and [`switch`] (whether reads verify at
//! all, with the benchmark-only switch).
pub mod bitmap;
pub mod deadline;
pub mod norms;
pub mod region;
pub mod switch;

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use quarry_codecs::framing::{self, CHUNK_SIZE, CHUNK_TRAILER_LEN};
use quarry_codecs::{FOOTER_LEN, HEADER_LEN};
use quarry_store::{Bytes, FileHandle, LoadCheck, StoreError};

pub use bitmap::VerifiedBitmap;
pub use deadline::IoDeadline;
use deadline::IO_DEADLINE;
pub use norms::NormsCheck;
pub use region::RegionCheck;
pub use switch::{suspend_checks_for_measurement, verification_enabled};

use crate::error::InFile;
use crate::{Error, Result};

/// The chunk checksums of a v3 file: the table is read at the first verification, not at open.
#[derive(Debug)]
pub(super) struct ChunkTable {
    /// Header and body length: the chunks cover `[0, covered)`, the table starts there.
    pub(super) covered: u64,
    sums: OnceLock<Bytes>,
    pub(super) verified: VerifiedBitmap,
    /// Chunks checked by [`PageCheck`] as their pages were read from the disk.
    loads_checked: AtomicU64,
}

impl ChunkTable {
    /// Checks chunk `c`, whose bytes are `piece`, against the table `sums`.
    /// Checks chunk `c` against `sums`, the table's sums from chunk `first` on.
    fn check_chunk(&self, sums: &[u8], first: u64, c: u64, piece: &[u8]) -> Result<(), String> {
        let i = (4 * (c - first)) as usize;
        let stored = u32::from_le_bytes(sums[i..i + 4].try_into().expect("4 bytes"));
        let computed = quarry_codecs::crc32c(piece);
        if stored != computed {
            let a = c * CHUNK_SIZE as u64;
            return Err(format!(
                "chunk {c} (bytes {a}..{}) has checksum {computed:#010x}, \
                 the chunk table says {stored:#010x}",
                a + piece.len() as u64
            ));
        }
        self.verified.set(c);
        Ok(())
    }
}

/// The check a direct file runs on every page entering its buffer pool (and every read around
/// the pool): a page evicted and read again from the disk is verified again, not trusted
/// because the bitmap says its chunks were checked once.
#[derive(Debug)]
struct PageCheck(Arc<ChunkTable>);

impl LoadCheck for PageCheck {
    fn check(&self, offset: u64, bytes: &[u8]) -> std::result::Result<(), String> {
        let t = &self.0;
        // Before the table is loaded no chunk was verified: the first reads verify every chunk
        // they use through the bitmap (`VerifiedFile::read`), from these same pool pages.
        let (Some(sums), true) = (t.sums.get(), verification_enabled()) else {
            return Ok(());
        };
        let end = (offset + bytes.len() as u64).min(t.covered);
        let mut c = offset.div_ceil(CHUNK_SIZE as u64);
        while c * (CHUNK_SIZE as u64) < end {
            let a = c * CHUNK_SIZE as u64;
            let b = (a + CHUNK_SIZE as u64).min(t.covered);
            if b > end {
                break;
            }
            t.check_chunk(
                sums,
                0,
                c,
                &bytes[(a - offset) as usize..(b - offset) as usize],
            )?;
            t.loads_checked.fetch_add(1, Ordering::Relaxed);
            c += 1;
        }
        Ok(())
    }
}

/// A segment data file whose reads are verified against its chunk checksums (format v3), or
/// passed through unverified (v1 and v2 files, which have none).
#[derive(Debug)]
pub struct VerifiedFile {
    pub(super) handle: Arc<dyn FileHandle>,
    /// The format version in the file's header.
    version: u32,
    data_end: u64,
    pub(super) table: Option<Arc<ChunkTable>>,
    /// Reads are views of a mapping (no read is issued, so no deadline applies).
    mapped: bool,
    /// The handle checks every page it loads ([`PageCheck`], direct files): that check needs the
    /// whole table, so reads load it whole instead of only the sums of the chunks they verify.
    page_checked: bool,
}

impl VerifiedFile {
    /// Wraps `handle`, whose frame was checked; `version` is its header's format version. For v3
    /// reads the 16-byte chunk-table trailer (no other byte) and validates it.
    pub fn open(handle: Arc<dyn FileHandle>, version: u32) -> Result<Self> {
        let len = handle.len();
        let mapped = handle.mapped_view().is_some();
        if version < 3 {
            return Ok(Self {
                version,
                data_end: len.saturating_sub(FOOTER_LEN as u64),
                handle,
                table: None,
                mapped,
                page_checked: false,
            });
        }
        let tail_len = (CHUNK_TRAILER_LEN + FOOTER_LEN) as u64;
        if len < tail_len + HEADER_LEN as u64 {
            return Err(Error::corrupt(
                handle.name(),
                format!("{len} bytes is too short for a chunk table"),
            ));
        }
        let trailer = handle.read_small(len - tail_len, len - FOOTER_LEN as u64)?;
        let covered = framing::parse_chunk_trailer(len, &trailer).in_file(handle.name())?;
        let table = Arc::new(ChunkTable {
            covered,
            sums: OnceLock::new(),
            verified: VerifiedBitmap::new(framing::chunk_count(covered)),
            loads_checked: AtomicU64::new(0),
        });
        let page_checked = !mapped && handle.set_load_check(Arc::new(PageCheck(table.clone())));
        Ok(Self {
            version,
            data_end: covered,
            table: Some(table),
            handle,
            mapped,
            page_checked,
        })
    }

    /// The format version in the file's header.
    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn name(&self) -> &str {
        self.handle.name()
    }

    /// Where the body ends: the chunk table (v3) or the footer (v1, v2).
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// True when reads are checked against chunk checksums (a v3 file, verification enabled).
    pub fn is_checked(&self) -> bool {
        self.table.is_some() && verification_enabled()
    }

    /// The whole file as a zero-copy view (mmap), unverified: callers verify the ranges they
    /// use with [`VerifiedFile::verify`].
    pub fn mapped_view(&self) -> Option<Bytes> {
        self.handle.mapped_view()
    }

    /// The bytes of `[start, end)` of the header and body, verified.
    pub fn read(&self, start: u64, end: u64) -> Result<Bytes> {
        if start > end || end > self.data_end {
            return Err(Error::corrupt_at(
                self.name(),
                start,
                format!("range [{start}, {end}) is outside the file body"),
            ));
        }
        self.check_deadline()?;
        let Some(t) = self.table.as_ref().filter(|_| verification_enabled()) else {
            return self
                .handle
                .read_bytes(start, end)
                .map_err(|e| self.store_err(e));
        };
        let chunks = chunk_range(start, end);
        if t.verified.all_set(chunks.clone()) {
            return self
                .handle
                .read_bytes(start, end)
                .map_err(|e| self.store_err(e));
        }
        // First touch: read the chunk-aligned superset once, check it, return the slice.
        let (a, b) = (
            chunks.start * CHUNK_SIZE as u64,
            (chunks.end * CHUNK_SIZE as u64).min(t.covered),
        );
        if self.mapped {
            // Fault in exactly these chunks, not the kernel's read-around window.
            self.handle.will_need(a, b);
        }
        let bytes = self
            .handle
            .read_bytes(a, b)
            .map_err(|e| self.store_err(e))?;
        self.check_chunks(t, chunks, a, &bytes)?;
        Ok(bytes
            .slice((start - a) as usize..(end - a) as usize)
            .expect("inside the aligned range"))
    }

    /// The bytes of every range of the header and body, verified, in order: one
    /// [`FileHandle::read_many`] call (batched reads in pread and direct modes). Ranges whose
    /// chunks were not verified yet are widened to their chunks for the read, checked, then cut
    /// back.
    pub fn read_many(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(r) = ranges
            .iter()
            .find(|r| r.start > r.end || r.end > self.data_end)
        {
            return Err(Error::corrupt_at(
                self.name(),
                r.start,
                format!("range [{}, {}) is outside the file body", r.start, r.end),
            ));
        }
        self.check_deadline()?;
        let Some(t) = self.table.as_ref().filter(|_| verification_enabled()) else {
            return self.handle.read_many(ranges).map_err(|e| self.store_err(e));
        };
        let wide: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| {
                let c = chunk_range(r.start, r.end);
                if t.verified.all_set(c.clone()) {
                    r.clone()
                } else {
                    c.start * CHUNK_SIZE as u64..(c.end * CHUNK_SIZE as u64).min(t.covered)
                }
            })
            .collect();
        if self.mapped {
            for (w, r) in wide.iter().zip(ranges) {
                if w != r {
                    self.handle.will_need(w.start, w.end);
                }
            }
        }
        let got = self
            .handle
            .read_many(&wide)
            .map_err(|e| self.store_err(e))?;
        ranges
            .iter()
            .zip(wide)
            .zip(got)
            .map(|((r, w), bytes)| {
                if w == *r {
                    return Ok(bytes);
                }
                self.check_chunks(t, chunk_range(r.start, r.end), w.start, &bytes)?;
                let s = (r.start - w.start) as usize;
                Ok(bytes
                    .slice(s..s + (r.end - r.start) as usize)
                    .expect("inside the aligned range"))
            })
            .collect()
    }

    /// Verifies `[start, end)` without returning it (a range of an mmap view in use).
    pub fn verify(&self, start: u64, end: u64) -> Result<()> {
        match self.table.as_ref().filter(|_| verification_enabled()) {
            Some(t) if !t.verified.all_set(chunk_range(start, end.min(t.covered))) => {
                self.read(start, end).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Verifies every chunk (scrub, merge sources) in pieces of 1 MiB, whatever the setting of
    /// [`verification_enabled`]; for v1/v2 files recomputes the whole-file CRC instead.
    pub fn verify_all(&self) -> Result<()> {
        let Some(t) = &self.table else {
            let bytes = self.handle.read_all()?;
            return crate::codec::format::check_crc(self.name(), &bytes);
        };
        let step = 256u64;
        let mut c = 0;
        while c < t.verified.len() {
            let r = c..(c + step).min(t.verified.len());
            if !t.verified.all_set(r.clone()) {
                let a = r.start * CHUNK_SIZE as u64;
                let b = (r.end * CHUNK_SIZE as u64).min(t.covered);
                let bytes = self
                    .handle
                    .read_bytes(a, b)
                    .map_err(|e| self.store_err(e))?;
                self.check_chunks(t, r.clone(), a, &bytes)?;
            }
            c = r.end;
        }
        Ok(())
    }

    /// The number of chunks checked as their pages were read from the disk into a direct
    /// file's buffer pool (0 for other handles), counting every reload.
    pub fn load_checks(&self) -> u64 {
        self.table
            .as_ref()
            .map_or(0, |t| t.loads_checked.load(Ordering::Relaxed))
    }

    /// A store error of this file's reads; bytes a [`PageCheck`] rejected are `Corrupt`.
    fn store_err(&self, e: StoreError) -> Error {
        match e {
            StoreError::Rejected { offset, why, .. } => Error::corrupt_at(self.name(), offset, why),
            e => e.into(),
        }
    }

    /// The number of chunks verified so far and in all (`(0, 0)` for files without a table).
    pub fn verified_chunks(&self) -> (u64, u64) {
        self.table
            .as_ref()
            .map_or((0, 0), |t| (t.verified.count(), t.verified.len()))
    }

    fn sums<'t>(&self, t: &'t ChunkTable) -> Result<&'t Bytes> {
        if let Some(s) = t.sums.get() {
            return Ok(s);
        }
        let n = t.verified.len();
        self.handle.will_need(t.covered, t.covered + 4 * n);
        let s = self
            .handle
            .read_bytes(t.covered, t.covered + 4 * n)
            .map_err(|e| self.store_err(e))?;
        Ok(t.sums.get_or_init(|| s))
    }

    /// Checks chunks `chunks` whose bytes (starting at file offset `at`) are `bytes`.
    pub(super) fn check_chunks(
        &self,
        t: &ChunkTable,
        chunks: Range<u64>,
        at: u64,
        bytes: &[u8],
    ) -> Result<()> {
        // A file read with calls (not mapped) reads only the sums of these chunks, with the
        // chunks' own read as good as paid: a few stored blocks of a fresh process then cost a
        // few bytes of table, not all of it (100 KB per W2 stored-fields file).
        let part;
        let (sums, first) = match t.sums.get() {
            None if !self.mapped && !self.page_checked && !chunks.is_empty() => {
                part = self
                    .handle
                    .read_bytes(t.covered + 4 * chunks.start, t.covered + 4 * chunks.end)
                    .map_err(|e| self.store_err(e))?;
                (&part, chunks.start)
            }
            _ => (self.sums(t)?, 0),
        };
        for c in chunks {
            if t.verified.is_set(c) {
                continue;
            }
            let a = c * CHUNK_SIZE as u64;
            let b = (a + CHUNK_SIZE as u64).min(t.covered);
            let piece = &bytes[(a - at) as usize..(b - at) as usize];
            t.check_chunk(sums, first, c, piece)
                .map_err(|why| Error::corrupt_at(self.name(), a, why))?;
        }
        Ok(())
    }

    /// Fails with [`Error::DeadlineExceeded`] when this thread's [`IoDeadline`] has passed and
    /// the read would be issued to the disk (not a view of a mapping).
    #[inline]
    fn check_deadline(&self) -> Result<()> {
        if self.mapped {
            return Ok(());
        }
        match IO_DEADLINE.with(Cell::get) {
            Some(d) if Instant::now() >= d => Err(Error::DeadlineExceeded {
                file: self.name().to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// The chunks that bytes `[start, end)` touch.
pub(super) fn chunk_range(start: u64, end: u64) -> Range<u64> {
    if start >= end {
        return 0..0;
    }
    start / CHUNK_SIZE as u64..end.div_ceil(CHUNK_SIZE as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_only_report_what_was_set() {
        let b = VerifiedBitmap::new(200);
        assert!(b.all_set(5..5));
        assert!(!b.all_set(0..1));
        for i in 60..130 {
            b.set(i);
        }
        assert!(b.all_set(60..130));
        assert!(b.all_set(64..128));
        assert!(!b.all_set(59..130));
        assert!(!b.all_set(60..131));
        assert!(!b.all_set(190..201), "past the end is never verified");
        assert_eq!(b.count(), 70);
        b.set(500);
        assert_eq!(b.count(), 70);
        for i in 0..200 {
            assert_eq!(b.is_set(i), (60..130).contains(&i), "chunk {i}");
        }
    }

    #[test]
    fn norm_groups_find_a_flip_only_in_the_groups_checked() {
        let norms: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut sums = Vec::new();
        crate::codec::norms::write_group_sums(&norms, &mut sums);
        assert_eq!(sums.len(), 4 * 16, "1000 norms make 16 groups of 64");
        let mut bad = norms.clone();
        bad[600] ^= 0x20; // group 9: 576..640
        let check = |n: &[u8]| {
            NormsCheck::new(
                "s.norms",
                16,
                Bytes::from_vec(n.to_vec()),
                Bytes::from_vec(sums.clone()),
            )
            .unwrap()
        };
        let good = check(&norms);
        good.check_range(0, 999).unwrap();
        assert!(good.is_complete());
        let c = check(&bad);
        c.check_range(0, 575).unwrap();
        c.check_each(&[3, 700, 999]).unwrap();
        assert!(!c.is_complete());
        let e = c.check_each(&[100, 600]).unwrap_err().to_string();
        assert!(e.contains("s.norms") && e.contains("576..640"), "{e}");
        assert!(c.check_range(630, 650).is_err(), "group 9 stays unverified");
        assert!(
            NormsCheck::new(
                "s.norms",
                16,
                Bytes::from_vec(norms.clone()),
                Bytes::from_vec(sums[..60].to_vec())
            )
            .is_none(),
            "sums of the wrong length"
        );
    }

    #[test]
    fn two_threads_setting_the_same_chunks_is_fine() {
        let b = Arc::new(VerifiedBitmap::new(1000));
        let hs: Vec<_> = (0..2)
            .map(|t| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for i in (0..1000).filter(|i| i % 3 != 0) {
                        b.set(i);
                        assert!(b.is_set(i));
                    }
                    t
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(b.count(), (0..1000).filter(|i| i % 3 != 0).count() as u64);
        for i in 0..1000 {
            assert_eq!(b.is_set(i), i % 3 != 0);
        }
    }

    /// A v3 file in memory: header, `body`, chunk table, footer.
    fn v3_file(body: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        quarry_codecs::Header {
            kind: quarry_codecs::FileKind(*b"TEST"),
            version: 3,
        }
        .write(&mut f);
        f.extend_from_slice(body);
        let mut sums = quarry_codecs::ChunkSums::new();
        sums.update(&f);
        f.extend_from_slice(&sums.finish());
        framing::write_footer(&mut f);
        f
    }

    fn open(dir: &std::path::Path, bytes: &[u8]) -> VerifiedFile {
        open_as(quarry_store::DirectoryKind::Mmap, dir, bytes)
    }

    fn open_as(
        kind: quarry_store::DirectoryKind,
        dir: &std::path::Path,
        bytes: &[u8],
    ) -> VerifiedFile {
        std::fs::write(dir.join("f"), bytes).unwrap();
        let d = quarry_store::open_directory(dir, kind).unwrap();
        let h = d.open("f").unwrap();
        VerifiedFile::open(h, 3).unwrap()
    }

    /// Mapped files check against the whole chunk table; files read with calls (pread) read
    /// only the sums of the chunks they check: both find the flipped chunk.
    #[test]
    fn a_flipped_chunk_is_reported_with_its_offset_and_never_marked() {
        for kind in [
            quarry_store::DirectoryKind::Mmap,
            quarry_store::DirectoryKind::Pread,
        ] {
            flipped_chunk_in(kind);
        }
    }

    fn flipped_chunk_in(kind: quarry_store::DirectoryKind) {
        let tmp = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
        let good = v3_file(&body);
        let f = open_as(kind, tmp.path(), &good);
        assert_eq!(f.data_end(), (HEADER_LEN + body.len()) as u64);
        let r = f.read(5000, 9000).unwrap();
        assert_eq!(&r[..], &good[5000..9000]);
        assert_eq!(f.verified_chunks(), (2, 5));
        f.verify_all().unwrap();
        assert_eq!(f.verified_chunks(), (5, 5));

        let mut bad = good.clone();
        bad[13_000] ^= 1;
        let tmp2 = tempfile::tempdir().unwrap();
        let f = open_as(kind, tmp2.path(), &bad);
        let many = f.read_many(&[100..200, 9000..9100]).unwrap();
        assert_eq!(&many[1][..], &bad[9000..9100]);
        assert!(f.read_many(&[12_400..12_450, 100..200]).is_err());
        assert_eq!(&f.read(0, 12_000).unwrap()[..], &bad[..12_000]);
        for _ in 0..2 {
            match f.read(12_500, 12_600) {
                Err(Error::Corrupt {
                    file,
                    offset: Some(o),
                    ..
                }) => assert_eq!((file.as_str(), o), ("f", 12_288)),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(f.verified_chunks(), (3, 5));
        assert!(f.verify_all().is_err());
        assert!(f.read(16_500, 17_000).is_ok(), "other chunks stay readable");
        assert!(f.read(0, f.data_end() + 1).is_err());
    }

    #[test]
    fn a_direct_page_read_again_from_the_disk_is_verified_again() {
        use std::os::unix::fs::FileExt;
        let tmp = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let bytes = v3_file(&body);
        std::fs::write(tmp.path().join("f"), &bytes).unwrap();
        // A pool of 4 pages of one chunk each.
        let d = quarry_store::DirectDirectory::open_with(
            tmp.path(),
            quarry_store::DirectOptions {
                page_size: 4096,
                memory_limit: Some(4 * 4096),
                ..Default::default()
            },
        )
        .unwrap();
        let f = VerifiedFile::open(quarry_store::Directory::open(&d, "f").unwrap(), 3).unwrap();
        let chunk5 = 5 * 4096..5 * 4096 + 100;
        assert_eq!(
            &f.read(chunk5.start, chunk5.end).unwrap()[..],
            &bytes[chunk5.start as usize..chunk5.end as usize]
        );
        let loads = f.load_checks();
        // The bytes on disk change under the cached page: the pool still serves the page.
        let disk = std::fs::OpenOptions::new()
            .write(true)
            .open(tmp.path().join("f"))
            .unwrap();
        disk.write_all_at(&[bytes[chunk5.start as usize + 7] ^ 1], chunk5.start + 7)
            .unwrap();
        disk.sync_all().unwrap();
        assert!(f.read(chunk5.start, chunk5.end).is_ok());
        // Evict it (reading 8 other chunks), then read it again: it is checked on reload.
        for c in 10..18u64 {
            f.read(c * 4096, c * 4096 + 10).unwrap();
        }
        assert!(
            f.load_checks() >= loads + 8,
            "every reloaded page is checked"
        );
        match f.read(chunk5.start, chunk5.end) {
            Err(Error::Corrupt {
                file,
                offset: Some(o),
                ..
            }) => assert_eq!((file.as_str(), o), ("f", 5 * 4096)),
            other => panic!("a changed page read again from the disk: {other:?}"),
        }
        // Restored on disk: readable again (the failed load left nothing in the pool).
        disk.write_all_at(&bytes[chunk5.start as usize + 7..][..1], chunk5.start + 7)
            .unwrap();
        assert_eq!(
            &f.read(chunk5.start, chunk5.end).unwrap()[..],
            &bytes[chunk5.start as usize..chunk5.end as usize]
        );
    }

    #[test]
    fn threads_verifying_the_same_chunks_agree_and_never_mark_a_bad_one() {
        let tmp = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..40_000u32).map(|i| (i % 241) as u8).collect();
        let mut bytes = v3_file(&body);
        bytes[20_000] ^= 0x80; // chunk 4
        let f = Arc::new(open(tmp.path(), &bytes));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let f = f.clone();
                std::thread::spawn(move || {
                    for start in (0..f.data_end() - 100).step_by(3000) {
                        let r = f.read(start, start + 100);
                        let bad = (16_384..20_480).contains(&start)
                            || (16_384..20_480).contains(&(start + 99));
                        assert_eq!(r.is_err(), bad, "range at {start}");
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let (verified, chunks) = f.verified_chunks();
        assert_eq!(chunks, 10);
        assert!(verified <= 9, "the bad chunk stays unverified");
        assert!(f.verify(16_384, 16_385).is_err());
    }
}
