//! Writes the files of one segment from sorted terms and their postings; shared by flushing an
//! in-memory segment and by merging segments.
use std::collections::BTreeMap;
use std::io::Write;

use quarry_store::Directory;

use crate::codec::columns::ColumnsWriter;
use crate::codec::format::{self, SEGMENT_FILES};
use crate::codec::meta::{FieldMeta, FileMeta, PairsMeta, SegmentMeta};
use crate::codec::postings::PostingsWriter;
use crate::codec::stored::StoredWriter;
use crate::codec::terms::TermsWriter;
use crate::codec::vectors::{GraphSeed, VectorsWriter};
use crate::schema::Schema;
use crate::{Error, Result};

/// Postings and positions bytes are written out whenever this many are buffered.
const SPILL_BYTES: usize = 1 << 20;
/// Finished stored blocks are written out whenever this many bytes of them are buffered.
pub const STORED_SPILL_BYTES: usize = 1 << 20;

/// Collects a segment's small structures in memory and streams its postings and positions to
/// their files as they are encoded, then writes and fsyncs every file.
pub struct SegmentFileWriter {
    schema: Schema,
    postings: PostingsWriter,
    post_file: FileSink,
    pos_file: FileSink,
    terms_file: Vec<u8>,
    norms_file: Vec<u8>,
    /// Per dictionary: the schema's fields by id, then the pair dictionary of each field.
    fields: Vec<FieldMeta>,
    /// Per field: whether its pair dictionary was written ([`begin_pairs`](Self::begin_pairs)).
    pairs: Vec<bool>,
    /// The dictionary being written (an index into `fields`) and its FST.
    current: Option<(u32, TermsWriter)>,
    /// Per field, the average decoded length over documents with the field (steers impacts).
    avgdl: Vec<f32>,
    /// The order the documents were written in, recorded in the meta.
    index_sort: Option<crate::index_sort::IndexSort>,
}

impl SegmentFileWriter {
    /// Starts segment `name` in `dir` (its postings and positions files are created now).
    pub fn new(schema: &Schema, dir: &dyn Directory, name: &str) -> Result<Self> {
        Ok(Self {
            post_file: FileSink::create(dir, &SegmentMeta::file_name(name, "post"))?,
            pos_file: FileSink::create(dir, &SegmentMeta::file_name(name, "pos"))?,
            schema: schema.clone(),
            postings: PostingsWriter::new(
                format::begin(format::KIND_POSTINGS),
                format::begin(format::KIND_POSITIONS),
            ),
            terms_file: format::begin(format::KIND_TERMS),
            norms_file: format::begin(format::KIND_NORMS),
            fields: vec![FieldMeta::default(); 2 * schema.fields().len()],
            pairs: vec![false; schema.fields().len()],
            current: None,
            avgdl: vec![1.0; schema.fields().len()],
            index_sort: None,
        })
    }

    /// Records that the documents are written in `sort`'s order (an index-sorted merge).
    pub fn set_index_sort(&mut self, sort: Option<crate::index_sort::IndexSort>) {
        self.index_sort = sort;
    }

    /// Starts the terms of `field` (fields in increasing id order).
    pub fn begin_field(&mut self, field: u32) {
        debug_assert!(self.current.is_none());
        self.current = Some((field, TermsWriter::new()));
    }

    /// Starts the pair dictionary of `field` ([`crate::pairs`]): after its own terms; pairs are
    /// added with [`add_term`](Self::add_term) and the field's norms, ended by
    /// [`end_field`](Self::end_field) with the number of documents holding a pair.
    pub fn begin_pairs(&mut self, field: u32) {
        debug_assert!(self.current.is_none());
        self.pairs[field as usize] = true;
        let n = self.pairs.len() as u32;
        self.current = Some((n + field, TermsWriter::new()));
    }

    /// Adds one term of the current field; terms in increasing byte order.
    pub fn add_term(
        &mut self,
        term: &[u8],
        docs: &[u32],
        freqs: &[u32],
        positions: &[u32],
        norms: Option<&[u8]>,
    ) -> Result<()> {
        let (dict, terms) = self.current.as_mut().expect("begin_field first");
        let field = *dict as usize % self.pairs.len();
        let entry = &self.schema.fields()[field];
        let positions = entry.has_positions().then_some(positions);
        let norm_of = |d: u32| norms.and_then(|n| n.get(d as usize).copied()).unwrap_or(1);
        let avgdl = self.avgdl.get(field).copied().unwrap_or(1.0);
        let offset = self
            .postings
            .write_term(docs, freqs, positions, &norm_of, avgdl);
        terms.insert(term, offset)?;
        let fm = &mut self.fields[*dict as usize];
        fm.unique_terms += 1;
        fm.sum_doc_freq += docs.len() as u64;
        fm.sum_total_term_freq += freqs.iter().map(|&f| u64::from(f)).sum::<u64>();
        if self.postings.post.len() >= SPILL_BYTES {
            self.post_file.write(&self.postings.post)?;
            self.postings.post_written();
        }
        if self.postings.pos.len() >= SPILL_BYTES {
            self.pos_file.write(&self.postings.pos)?;
            self.postings.pos_written();
        }
        Ok(())
    }

    /// Ends the current field; `doc_count` is the number of documents with the field.
    pub fn end_field(&mut self, doc_count: u32) -> Result<()> {
        let (field, terms) = self.current.take().expect("begin_field first");
        let fst = terms.finish()?;
        let fm = &mut self.fields[field as usize];
        fm.doc_count = doc_count;
        fm.fst_offset = self.terms_file.len() as u64;
        fm.fst_len = fst.len() as u64;
        fm.fst_crc = quarry_codecs::crc32c(&fst);
        self.terms_file.extend_from_slice(&fst);
        Ok(())
    }

    /// Sets the norms (one byte per document) of a text field; its group sums follow them.
    pub fn set_norms(&mut self, field: u32, norms: &[u8]) {
        self.fields[field as usize].norms_offset = Some(self.norms_file.len() as u64);
        let (sum, n) = norms
            .iter()
            .filter(|&&b| b > 0)
            .fold((0u64, 0u64), |(s, n), &b| {
                (s + u64::from(crate::codec::norms::norm_to_length(b)), n + 1)
            });
        self.avgdl[field as usize] = if n == 0 { 1.0 } else { sum as f32 / n as f32 };
        self.norms_file.extend_from_slice(norms);
        crate::codec::norms::write_group_sums(norms, &mut self.norms_file);
    }

    /// Writes every file of segment `name` (the one given to [`new`](Self::new)), fsyncs them,
    /// and writes the meta file last.
    /// `stored_file` holds what was written out of `stored` already, if anything.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        mut self,
        dir: &dyn Directory,
        name: &str,
        doc_count: u32,
        seq_runs: Vec<(u32, u64)>,
        stored: StoredWriter,
        stored_file: Option<StoredFile>,
        columns: ColumnsWriter,
        vectors: VectorsWriter,
        seeds: Vec<Option<GraphSeed>>,
    ) -> Result<SegmentMeta> {
        let (stored_parts, stored_index_offset, stored_blocks) = stored.finish();
        let mut files = BTreeMap::new();
        let mut stored_file = match stored_file {
            Some(f) => f,
            None => StoredFile::create(dir, name)?,
        };
        for p in &stored_parts {
            stored_file.sink.write(p)?;
        }
        files.insert("store".to_string(), stored_file.sink.finish()?);
        self.post_file.write(&self.postings.post)?;
        files.insert("post".to_string(), self.post_file.finish()?);
        self.pos_file.write(&self.postings.pos)?;
        files.insert("pos".to_string(), self.pos_file.finish()?);
        let mut cols_file = format::begin(format::KIND_COLUMNS);
        let columns = columns.write(doc_count, &mut cols_file);
        // Many runs (a sorted segment has about one per document) go to `.cols`, read there
        // at open, rather than into the meta's JSON.
        let seq_runs_at = (seq_runs.len() >= crate::codec::meta::SEQ_RUNS_INLINE).then(|| {
            use crate::codec::columns::append;
            let docs: Vec<u64> = seq_runs.iter().map(|r| u64::from(r.0)).collect();
            let seqs: Vec<u64> = seq_runs.iter().map(|r| r.1).collect();
            crate::codec::meta::SeqRunsAt {
                runs: seq_runs.len() as u32,
                docs_at: append(&mut cols_file, &quarry_codecs::column::encode(&docs)),
                seqs_at: append(&mut cols_file, &quarry_codecs::column::encode(&seqs)),
            }
        });
        let contents: [(&str, Vec<Vec<u8>>); 3] = [
            ("terms", vec![self.terms_file]),
            ("norms", vec![self.norms_file]),
            ("cols", vec![cols_file]),
        ];
        for (ext, parts) in contents {
            let file = SegmentMeta::file_name(name, ext);
            let fm = write_parts(dir, &file, &parts)?;
            files.insert(ext.to_string(), fm);
        }
        // Vectors (and their graphs, built here: off the writer's lock) only for a schema with
        // a vector field.
        let vectors = if vectors.has_fields() {
            let mut vec_file = format::begin(format::KIND_VECTORS);
            let metas = vectors.write(doc_count, &mut vec_file, seeds);
            let file = SegmentMeta::file_name(name, "vec");
            files.insert("vec".to_string(), write_parts(dir, &file, &[vec_file])?);
            metas
        } else {
            Vec::new()
        };
        debug_assert!(files.len() + 2 >= SEGMENT_FILES.len());
        let n = self.pairs.len();
        let mut fields = self.fields;
        let pair_fields = fields.split_off(n);
        let pairs = self.pairs.iter().any(|&p| p).then(|| PairsMeta {
            words: crate::pairs::current(),
            fields: pair_fields
                .into_iter()
                .zip(&self.pairs)
                .map(|(fm, &p)| p.then_some(fm))
                .collect(),
        });
        let meta = SegmentMeta {
            name: name.to_string(),
            doc_count,
            seq_runs,
            fields,
            pairs,
            stored_index_offset,
            stored_blocks,
            files,
            columns,
            index_sort: self.index_sort,
            seq_runs_at,
            vectors,
        };
        write_file(dir, &SegmentMeta::file_name(name, "meta"), &meta.encode())?;
        Ok(meta)
    }
}

/// The stored fields file of a segment being built, written out block by block while documents
/// are added (see [`StoredWriter::take_parts`]) so that it need not be held in memory.
pub struct StoredFile {
    sink: FileSink,
}

impl StoredFile {
    /// Creates the stored fields file of segment `name`.
    pub fn create(dir: &dyn Directory, name: &str) -> Result<Self> {
        Ok(Self {
            sink: FileSink::create(dir, &SegmentMeta::file_name(name, "store"))?,
        })
    }

    /// Writes out the finished blocks of `stored`.
    pub fn write_pending(&mut self, stored: &mut StoredWriter) -> Result<()> {
        for p in stored.take_parts() {
            self.sink.write(&p)?;
        }
        Ok(())
    }
}

/// A data file being written front to back: its CRC32C and per-chunk checksums are computed
/// on the way; [`finish`](Self::finish) appends the chunk checksum table (format v3) and the
/// footer, and fsyncs.
struct FileSink {
    w: Box<dyn quarry_store::FileWriter>,
    path: std::path::PathBuf,
    crc: u32,
    len: u64,
    chunks: quarry_codecs::ChunkSums,
}

impl FileSink {
    fn create(dir: &dyn Directory, name: &str) -> Result<Self> {
        Ok(Self {
            w: dir.create(name)?,
            path: dir.path().join(name),
            crc: 0,
            len: 0,
            chunks: quarry_codecs::ChunkSums::new(),
        })
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Store(quarry_store::StoreError::Io {
            op: "write",
            path: self.path.clone(),
            source: e,
        })
    }

    /// Appends file body bytes (the first ones are the file's header).
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes).map_err(|e| self.io(e))?;
        self.crc = quarry_codecs::checksum::crc32c_append(self.crc, bytes);
        self.chunks.update(bytes);
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<FileMeta> {
        // Format v3: the per-chunk checksum table and its trailer, before the footer.
        let table = std::mem::take(&mut self.chunks).finish();
        self.write(&table)?;
        let magic = quarry_codecs::framing::FOOTER_MAGIC.to_le_bytes();
        self.crc = quarry_codecs::checksum::crc32c_append(self.crc, &magic);
        let mut footer = magic.to_vec();
        footer.extend_from_slice(&self.crc.to_le_bytes());
        self.w.write_all(&footer).map_err(|e| self.io(e))?;
        self.w.finish()?;
        Ok(FileMeta {
            len: self.len + 8,
            crc: self.crc,
        })
    }
}

/// Creates `name`, writes the parts (which start with the file's header), the chunk checksum
/// table (format v3) and the footer, with the CRCs computed on the way, and fsyncs.
fn write_parts(dir: &dyn Directory, name: &str, parts: &[Vec<u8>]) -> Result<FileMeta> {
    let mut sink = FileSink::create(dir, name)?;
    for p in parts {
        sink.write(p)?;
    }
    sink.finish()
}

/// Creates `name`, writes `bytes` and fsyncs.
pub(crate) fn write_file(dir: &dyn Directory, name: &str, bytes: &[u8]) -> Result<()> {
    let mut w = dir.create(name)?;
    w.write_all(bytes).map_err(|e| {
        Error::Store(quarry_store::StoreError::Io {
            op: "write",
            path: dir.path().join(name),
            source: e,
        })
    })?;
    w.finish()?;
    Ok(())
}
