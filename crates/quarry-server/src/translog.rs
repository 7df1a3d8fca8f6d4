//! Which acknowledged writes are not yet in a commit? The per-index write-ahead log (translog).
//!
//! Every operation is appended as one record `[len u32][crc32c u32][seq u64][payload]`
//! (little-endian; `len` counts seq + payload, the CRC covers the same bytes), and a request is
//! acknowledged only after [`Translog::sync_to`] has fsynced past its last record. Concurrent
//! requests share fsyncs (group commit): whoever holds the sync lock syncs everything written so
//! far, and the requests queued behind it usually find their records already durable.
//!
//! After a commit that contains every record up to sequence number `s` (stored in the commit's
//! user data), [`Translog::trim`] empties the file. On start, [`Translog::open`] returns the
//! records after the committed sequence number; a torn or corrupt tail (a write that was never
//! acknowledged) ends the replay and is cut off.
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Translog failures (all are I/O on the log file).
#[derive(Debug, thiserror::Error)]
pub enum TranslogError {
    #[error("translog {path}: {op}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("translog {path}: record of {len} bytes is larger than the 1 GiB limit")]
    TooLarge { path: PathBuf, len: usize },
}

const HEADER: usize = 16;

/// Records to replay: `(sequence number, payload)` in order.
pub type Pending = Vec<(u64, Vec<u8>)>;
const MAX_RECORD: usize = 1 << 30;

struct Tail {
    file: File,
    /// The sequence number of the last record written (not necessarily synced).
    written: u64,
    /// Bytes in the file.
    bytes: u64,
}

/// One index's write-ahead log.
pub struct Translog {
    path: PathBuf,
    tail: Mutex<Tail>,
    /// The highest sequence number known durable; held while fsyncing (group commit).
    synced: Mutex<u64>,
    /// A second handle on the same file for fsync without holding the tail lock.
    sync_handle: File,
}

impl Translog {
    /// Opens (creating if needed) the log at `path`. Returns the log and the records with a
    /// sequence number above `committed`, in order; a torn tail is truncated away.
    pub fn open(path: &Path, committed: u64) -> Result<(Self, Pending), TranslogError> {
        let io = |op: &'static str| {
            let path = path.to_path_buf();
            move |source| TranslogError::Io { path, op, source }
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io("open"))?;
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(io("read"))?;
        let (records, valid) = parse_records(&data);
        if valid < data.len() {
            tracing::warn!(
                path = %path.display(),
                cut = data.len() - valid,
                "translog: cutting a torn or corrupt tail (an unacknowledged write)"
            );
            file.set_len(valid as u64).map_err(io("truncate"))?;
            file.sync_data().map_err(io("fsync"))?;
        }
        let last = records.last().map_or(committed, |r| r.0.max(committed));
        let pending: Vec<_> = records.into_iter().filter(|r| r.0 > committed).collect();
        let sync_handle = file.try_clone().map_err(io("dup"))?;
        Ok((
            Translog {
                path: path.to_path_buf(),
                tail: Mutex::new(Tail {
                    file,
                    written: last,
                    bytes: valid as u64,
                }),
                synced: Mutex::new(last),
                sync_handle,
            },
            pending,
        ))
    }

    fn io(&self, op: &'static str) -> impl FnOnce(std::io::Error) -> TranslogError + '_ {
        move |source| TranslogError::Io {
            path: self.path.clone(),
            op,
            source,
        }
    }

    /// Appends records (not yet durable); returns the sequence number of the last one.
    /// Each payload gets the next sequence number.
    pub fn append(&self, payloads: &[Vec<u8>]) -> Result<u64, TranslogError> {
        let mut tail = self.tail.lock().expect("translog lock");
        let mut buf = Vec::new();
        let mut seq = tail.written;
        for p in payloads {
            if p.len() > MAX_RECORD {
                return Err(TranslogError::TooLarge {
                    path: self.path.clone(),
                    len: p.len(),
                });
            }
            seq += 1;
            let start = buf.len();
            buf.extend_from_slice(&((p.len() + 8) as u32).to_le_bytes());
            buf.extend_from_slice(&[0; 4]);
            buf.extend_from_slice(&seq.to_le_bytes());
            buf.extend_from_slice(p);
            let crc = crc32c::crc32c(&buf[start + 8..]);
            buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        }
        tail.file.write_all(&buf).map_err(self.io("write"))?;
        tail.written = seq;
        tail.bytes += buf.len() as u64;
        Ok(seq)
    }

    /// Blocks until every record up to `seq` is on disk (fsync shared with concurrent callers).
    pub fn sync_to(&self, seq: u64) -> Result<(), TranslogError> {
        let mut synced = self.synced.lock().expect("translog sync lock");
        if *synced >= seq {
            return Ok(());
        }
        let written = self.tail.lock().expect("translog lock").written;
        self.sync_handle.sync_data().map_err(self.io("fsync"))?;
        *synced = written;
        Ok(())
    }

    /// The sequence number of the last record written.
    pub fn last_seq(&self) -> u64 {
        self.tail.lock().expect("translog lock").written
    }

    /// Bytes currently in the log.
    pub fn size_bytes(&self) -> u64 {
        self.tail.lock().expect("translog lock").bytes
    }

    /// Empties the log after a durable commit that holds every record up to `committed`.
    /// Records written after `committed` must not exist (the caller holds the writer lock).
    pub fn trim(&self, committed: u64) -> Result<(), TranslogError> {
        let mut tail = self.tail.lock().expect("translog lock");
        debug_assert!(tail.written <= committed);
        tail.file.set_len(0).map_err(self.io("truncate"))?;
        tail.file.sync_data().map_err(self.io("fsync"))?;
        tail.bytes = 0;
        drop(tail);
        let mut synced = self.synced.lock().expect("translog sync lock");
        *synced = (*synced).max(committed);
        Ok(())
    }
}

/// Parses records from the start of `data`; returns them and the length of the valid prefix.
fn parse_records(data: &[u8]) -> (Pending, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    while data.len() - pos >= HEADER {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(data[pos + 4..pos + 8].try_into().expect("4 bytes"));
        if len < 8 || data.len() - pos - 8 < len {
            break;
        }
        let body = &data[pos + 8..pos + 8 + len];
        if crc32c::crc32c(body) != crc {
            break;
        }
        let seq = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
        if out.last().is_some_and(|(s, _)| *s >= seq) {
            break;
        }
        out.push((seq, body[8..].to_vec()));
        pos += 8 + len;
    }
    (out, pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_reopen_and_trim_empties() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("translog");
        let (log, pending) = Translog::open(&p, 0).unwrap();
        assert!(pending.is_empty());
        let s = log.append(&[b"a".to_vec(), b"bc".to_vec()]).unwrap();
        assert_eq!(s, 2);
        log.sync_to(s).unwrap();
        drop(log);
        let (log, pending) = Translog::open(&p, 0).unwrap();
        assert_eq!(pending, vec![(1, b"a".to_vec()), (2, b"bc".to_vec())]);
        // Already committed records are not replayed.
        let (_, pending) = Translog::open(&p, 1).unwrap();
        assert_eq!(pending, vec![(2, b"bc".to_vec())]);
        log.trim(2).unwrap();
        assert_eq!(log.size_bytes(), 0);
        let s = log.append(&[b"d".to_vec()]).unwrap();
        assert_eq!(s, 3, "sequence numbers keep growing after a trim");
        drop(log);
        let (_, pending) = Translog::open(&p, 2).unwrap();
        assert_eq!(pending, vec![(3, b"d".to_vec())]);
    }

    #[test]
    fn torn_and_corrupt_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("translog");
        let (log, _) = Translog::open(&p, 0).unwrap();
        log.append(&[b"one".to_vec(), b"two".to_vec()]).unwrap();
        drop(log);
        let full = std::fs::read(&p).unwrap();
        for cut in 1..full.len() {
            std::fs::write(&p, &full[..cut]).unwrap();
            let (_, pending) = Translog::open(&p, 0).unwrap();
            let want = if cut >= full.len() / 2 { 1 } else { 0 };
            assert_eq!(pending.len(), want, "cut at {cut}");
        }
        let mut bad = full.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        let (log, pending) = Translog::open(&p, 0).unwrap();
        assert_eq!(pending, vec![(1, b"one".to_vec())]);
        assert_eq!(log.size_bytes() as usize, full.len() / 2);
    }
}
