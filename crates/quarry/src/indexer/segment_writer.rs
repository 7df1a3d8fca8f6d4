//! Writes the files of one segment from sorted terms and their postings; shared by flushing an
//! in-memory segment and by merging segments.
use std::collections::BTreeMap;
use std::io::Write;

use quarry_store::Directory;

use crate::codec::format::{self, SEGMENT_FILES};
use crate::codec::meta::{FieldMeta, FileMeta, SegmentMeta};
use crate::codec::postings::PostingsWriter;
use crate::codec::stored::StoredWriter;
use crate::codec::terms::TermsWriter;
use crate::schema::Schema;
use crate::{Error, Result};

/// Collects a segment's structures in memory, then writes and fsyncs its files.
pub struct SegmentFileWriter {
    schema: Schema,
    postings: PostingsWriter,
    terms_file: Vec<u8>,
    norms_file: Vec<u8>,
    fields: Vec<FieldMeta>,
    current: Option<(u32, TermsWriter)>,
    /// Per field, the average decoded length over documents with the field (steers impacts).
    avgdl: Vec<f32>,
}

impl SegmentFileWriter {
    pub fn new(schema: &Schema) -> Self {
        Self {
            schema: schema.clone(),
            postings: PostingsWriter::new(
                format::begin(format::KIND_POSTINGS),
                format::begin(format::KIND_POSITIONS),
            ),
            terms_file: format::begin(format::KIND_TERMS),
            norms_file: format::begin(format::KIND_NORMS),
            fields: vec![FieldMeta::default(); schema.fields().len()],
            current: None,
            avgdl: vec![1.0; schema.fields().len()],
        }
    }

    /// Starts the terms of `field` (fields in increasing id order).
    pub fn begin_field(&mut self, field: u32) {
        debug_assert!(self.current.is_none());
        self.current = Some((field, TermsWriter::new()));
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
        let (field, terms) = self.current.as_mut().expect("begin_field first");
        let entry = self.schema.field(*field);
        let positions = entry.has_positions().then_some(positions);
        let norm_of = |d: u32| norms.and_then(|n| n.get(d as usize).copied()).unwrap_or(1);
        let avgdl = self.avgdl.get(*field as usize).copied().unwrap_or(1.0);
        let offset = self
            .postings
            .write_term(docs, freqs, positions, &norm_of, avgdl);
        terms.insert(term, offset)?;
        let fm = &mut self.fields[*field as usize];
        fm.unique_terms += 1;
        fm.sum_doc_freq += docs.len() as u64;
        fm.sum_total_term_freq += freqs.iter().map(|&f| u64::from(f)).sum::<u64>();
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

    /// Sets the norms (one byte per document) of a text field.
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
    }

    /// Writes every file of segment `name`, fsyncs them, and writes the meta file last.
    pub fn finish(
        self,
        dir: &dyn Directory,
        name: &str,
        doc_count: u32,
        seq_runs: Vec<(u32, u64)>,
        stored: StoredWriter,
    ) -> Result<SegmentMeta> {
        let (stored_parts, stored_index_offset, stored_blocks) = stored.finish();
        let contents: [(&str, Vec<Vec<u8>>); 5] = [
            ("terms", vec![self.terms_file]),
            ("post", vec![self.postings.post]),
            ("pos", vec![self.postings.pos]),
            ("norms", vec![self.norms_file]),
            ("store", stored_parts),
        ];
        let mut files = BTreeMap::new();
        for (ext, parts) in contents {
            let file = SegmentMeta::file_name(name, ext);
            let fm = write_parts(dir, &file, &parts)?;
            files.insert(ext.to_string(), fm);
        }
        debug_assert_eq!(files.len() + 1, SEGMENT_FILES.len());
        let meta = SegmentMeta {
            name: name.to_string(),
            doc_count,
            seq_runs,
            fields: self.fields,
            stored_index_offset,
            stored_blocks,
            files,
        };
        write_file(dir, &SegmentMeta::file_name(name, "meta"), &meta.encode())?;
        Ok(meta)
    }
}

/// Creates `name`, writes the parts (which start with the file's header), the chunk checksum
/// table (format v3) and the footer, with the CRCs computed on the way, and fsyncs.
fn write_parts(dir: &dyn Directory, name: &str, parts: &[Vec<u8>]) -> Result<FileMeta> {
    let io = |e| {
        Error::Store(quarry_store::StoreError::Io {
            op: "write",
            path: dir.path().join(name),
            source: e,
        })
    };
    let mut w = dir.create(name)?;
    let mut crc = 0u32;
    let mut len = 0u64;
    let mut chunks = quarry_codecs::ChunkSums::new();
    for p in parts {
        w.write_all(p).map_err(io)?;
        crc = quarry_codecs::checksum::crc32c_append(crc, p);
        chunks.update(p);
        len += p.len() as u64;
    }
    // Format v3: the per-chunk checksum table and its trailer, before the footer.
    let table = chunks.finish();
    w.write_all(&table).map_err(io)?;
    crc = quarry_codecs::checksum::crc32c_append(crc, &table);
    len += table.len() as u64;
    let magic = quarry_codecs::framing::FOOTER_MAGIC.to_le_bytes();
    crc = quarry_codecs::checksum::crc32c_append(crc, &magic);
    w.write_all(&magic).map_err(io)?;
    w.write_all(&crc.to_le_bytes()).map_err(io)?;
    w.finish()?;
    Ok(FileMeta { len: len + 8, crc })
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
