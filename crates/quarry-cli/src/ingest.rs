//! The reading side of `quarry index`: reader threads turn input files into parsed documents, in
//! batches, for the one thread that feeds the writer, so that JSON parsing runs in parallel with
//! indexing and several files are read at once.
//!
//! Order: one reader reads a whole file and sends its batches in order over one FIFO channel, so
//! the documents of a file keep their order; files read by different readers interleave. Upserts
//! (`--key`) need "the last line wins" across files, so they use one reader.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;

use anyhow::Result;
use quarry::{Document, FieldValue, Schema};

use crate::input::{Lines, MmapRange, ReadMode};

/// Documents per message between a reader and the writer's thread.
const BATCH: usize = 256;

/// A document parsed from one input line, or why it could not be.
pub struct Parsed {
    /// Index of the file in [`Ingest::files`].
    pub file: usize,
    /// 1-based line number in that file.
    pub line: u64,
    /// The document and, with a key field, its key value.
    pub doc: quarry::Result<(Document, Option<FieldValue>)>,
}

/// What to read and how.
pub struct Ingest<'a> {
    pub files: &'a [PathBuf],
    pub schema: &'a Schema,
    /// The upsert key field: its id and name.
    pub key: Option<(u32, &'a str)>,
    pub mode: ReadMode,
    pub mmap_range: MmapRange,
    /// Reader threads (at least 1; at most one per file; 1 with a key field).
    pub threads: usize,
}

impl Ingest<'_> {
    /// Reader threads actually used.
    pub fn readers(&self) -> usize {
        if self.key.is_some() {
            1
        } else {
            self.threads.clamp(1, self.files.len().max(1))
        }
    }

    /// Reads every file and calls `consume` with each batch of parsed lines, on the calling
    /// thread. `bytes_read` grows as input is consumed (for progress). Stops at the first error
    /// of `consume` or of reading a file, and returns it; reader threads are stopped and joined
    /// before this returns.
    pub fn run(
        &self,
        bytes_read: &AtomicU64,
        mut consume: impl FnMut(Vec<Parsed>) -> Result<()>,
    ) -> Result<()> {
        let readers = self.readers();
        let next_file = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel::<Result<Vec<Parsed>>>(readers * 4);
            for _ in 0..readers {
                let tx = tx.clone();
                let (next_file, stop) = (&next_file, &stop);
                scope.spawn(move || loop {
                    let i = next_file.fetch_add(1, Ordering::Relaxed);
                    if i >= self.files.len() || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let sent = self
                        .read_file(i, bytes_read, stop, &mut |batch| tx.send(Ok(batch)).is_ok());
                    match sent {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                });
            }
            drop(tx);
            let result = rx.iter().try_for_each(|msg| consume(msg?));
            if result.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            // Dropping the receiver makes every blocked `send` fail, so the readers return.
            drop(rx);
            result
        })
    }

    /// Reads file `i`, handing batches to `send` (which returns false when nobody listens any
    /// more). Returns Ok(false) when stopped early.
    fn read_file(
        &self,
        i: usize,
        bytes_read: &AtomicU64,
        stop: &AtomicBool,
        send: &mut dyn FnMut(Vec<Parsed>) -> bool,
    ) -> Result<bool> {
        let mut lines = Lines::open(&self.files[i], self.mode, self.mmap_range)?;
        let mut batch = Vec::with_capacity(BATCH);
        let mut reported = 0u64;
        while let Some((line, text)) = lines.next_line()? {
            batch.push(Parsed {
                file: i,
                line,
                doc: self.parse(text),
            });
            if batch.len() == BATCH {
                let now = lines.bytes_read();
                bytes_read.fetch_add(now - reported, Ordering::Relaxed);
                reported = now;
                if stop.load(Ordering::Relaxed)
                    || !send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                {
                    return Ok(false);
                }
            }
        }
        bytes_read.fetch_add(lines.bytes_read() - reported, Ordering::Relaxed);
        Ok(batch.is_empty() || send(batch))
    }

    fn parse(&self, text: &str) -> quarry::Result<(Document, Option<FieldValue>)> {
        let doc = Document::from_json(self.schema, text)?;
        let Some((key, name)) = self.key else {
            return Ok((doc, None));
        };
        match doc
            .values()
            .iter()
            .find(|(f, _)| *f == key)
            .map(|(_, v)| v.clone())
        {
            Some(v) => Ok((doc, Some(v))),
            None => Err(quarry::Error::Document {
                field: name.to_string(),
                reason: "the key field is missing: --key needs it in every document".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn schema() -> Schema {
        Schema::from_json(r#"{"fields":[{"name":"id","type":"keyword","stored":true},{"name":"body","type":"text","stored":true}]}"#)
            .unwrap()
    }

    fn write(dir: &std::path::Path, name: &str, lines: &[String]) -> PathBuf {
        let p = dir.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        p
    }

    fn collect(files: &[PathBuf], mode: ReadMode, threads: usize) -> Vec<(usize, u64, String)> {
        let schema = schema();
        let ingest = Ingest {
            files,
            schema: &schema,
            key: None,
            mode,
            mmap_range: MmapRange {
                min: 1000,
                max: 1 << 20,
            },
            threads,
        };
        let bytes = AtomicU64::new(0);
        let mut out = Vec::new();
        ingest
            .run(&bytes, |batch| {
                for p in batch {
                    let (doc, _) = p.doc.unwrap();
                    let id = match &doc.values().iter().find(|(f, _)| *f == 0).unwrap().1 {
                        FieldValue::Str(s) => s.clone(),
                        other => panic!("{other:?}"),
                    };
                    out.push((p.file, p.line, id));
                }
                Ok(())
            })
            .unwrap();
        let total: u64 = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        assert_eq!(
            bytes.load(Ordering::Relaxed),
            total,
            "every byte counted once"
        );
        out
    }

    #[test]
    fn every_line_of_every_file_once_in_file_order_whatever_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for f in 0..5 {
            let lines: Vec<String> = (0..(f * 300 + 7))
                .map(|i| format!(r#"{{"id":"f{f}-{i}","body":"text {i}"}}"#))
                .collect();
            files.push(write(dir.path(), &format!("part-{f}.jsonl"), &lines));
        }
        for mode in [ReadMode::Auto, ReadMode::Mmap, ReadMode::Stream] {
            for threads in [1, 2, 8] {
                let got = collect(&files, mode, threads);
                assert_eq!(got.len(), (0..5).map(|f| f * 300 + 7).sum::<usize>());
                for f in 0..5 {
                    let ids: Vec<&str> = got
                        .iter()
                        .filter(|(file, _, _)| *file == f)
                        .map(|(_, _, id)| id.as_str())
                        .collect();
                    let want: Vec<String> =
                        (0..(f * 300 + 7)).map(|i| format!("f{f}-{i}")).collect();
                    assert_eq!(ids, want, "file {f}, {mode:?}, {threads} readers");
                }
            }
        }
    }

    #[test]
    fn a_consumer_error_stops_the_readers_and_is_returned() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = (0..5000)
            .map(|i| format!(r#"{{"id":"{i}","body":"b"}}"#))
            .collect();
        let files: Vec<PathBuf> = (0..4)
            .map(|f| write(dir.path(), &format!("{f}.jsonl"), &lines))
            .collect();
        let schema = schema();
        let ingest = Ingest {
            files: &files,
            schema: &schema,
            key: None,
            mode: ReadMode::Stream,
            mmap_range: MmapRange::DEFAULT,
            threads: 4,
        };
        let mut seen = 0;
        let err = ingest
            .run(&AtomicU64::new(0), |b| {
                seen += b.len();
                if seen > 1000 {
                    anyhow::bail!("enough")
                }
                Ok(())
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "enough");
    }

    #[test]
    fn a_bad_line_is_reported_with_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![write(
            dir.path(),
            "a.jsonl",
            &[r#"{"id":"1","body":"x"}"#.into(), "{not json".into()],
        )];
        let schema = schema();
        let ingest = Ingest {
            files: &files,
            schema: &schema,
            key: None,
            mode: ReadMode::Mmap,
            mmap_range: MmapRange::DEFAULT,
            threads: 1,
        };
        let mut bad = Vec::new();
        ingest
            .run(&AtomicU64::new(0), |b| {
                bad.extend(
                    b.into_iter()
                        .filter(|p| p.doc.is_err())
                        .map(|p| (p.file, p.line)),
                );
                Ok(())
            })
            .unwrap();
        assert_eq!(bad, vec![(0, 2)]);
    }
}
