//! One segment opened for reading: its meta and file handles; structures are looked up in place.
use std::sync::{Arc, OnceLock};

use quarry_codecs::{CHUNK_SIZE, FOOTER_LEN, HEADER_LEN};
use quarry_store::{Bytes, Directory, FileHandle};
use serde_json::{Map, Value};

use crate::codec::format::{self, SEGMENT_FILES};
use crate::codec::meta::SegmentMeta;
use crate::codec::postings::{PostingsCursor, TermInfo, MAX_HEADER_LEN};
use crate::codec::stored::{decode_block, decode_doc, doc_in_block, StoredIndex};
use crate::codec::terms::TermsReader;
use crate::error::InFile;
use crate::index::verified::VerifiedFile;
use crate::schema::Schema;
use crate::{Error, Result};

/// The segment's data files, by position in [`SEGMENT_FILES`] (minus meta); every read of
/// them goes through [`VerifiedFile`] (chunk checksums of format v3).
struct Files {
    terms: VerifiedFile,
    post: VerifiedFile,
    pos: VerifiedFile,
    norms: VerifiedFile,
    store: VerifiedFile,
}

impl Files {
    fn all(&self) -> [&VerifiedFile; 5] {
        [&self.terms, &self.post, &self.pos, &self.norms, &self.store]
    }
}

/// One field's term dictionary and how far it is verified.
struct Dict {
    reader: TermsReader,
    /// Opened in place over unverified bytes: lookups verify the nodes they visit.
    lazy: bool,
    /// Set once every byte of a lazy dictionary was verified.
    whole: OnceLock<()>,
}

/// A segment opened for reading.
pub struct SegmentReader {
    meta: SegmentMeta,
    schema: Schema,
    files: Files,
    /// Whole postings file when it is free to view (mmap): term lookups then cost no syscall.
    post_view: Option<Bytes>,
    /// Whole terms file when it is free to view (mmap): dictionaries are used in place.
    terms_view: Option<Bytes>,
    terms: Vec<OnceLock<Option<Dict>>>,
    norms: Vec<OnceLock<Option<Bytes>>>,
    stored_index: OnceLock<Bytes>,
}

impl std::fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SegmentReader({}, {} docs)",
            self.meta.name, self.meta.doc_count
        )
    }
}

/// Checks a file's header and footer against the meta's recorded length and CRC, reading only
/// the first 16 and last 8 bytes.
fn check_frame(
    handle: &dyn FileHandle,
    kind: quarry_codecs::FileKind,
    expect: Option<&crate::codec::meta::FileMeta>,
) -> Result<u32> {
    let name = handle.name();
    let len = handle.len();
    if let Some(m) = expect {
        if m.len != len {
            return Err(Error::corrupt(
                name,
                format!("length is {len} bytes, the segment meta says {}", m.len),
            ));
        }
    }
    if len < (HEADER_LEN + FOOTER_LEN) as u64 {
        return Err(Error::corrupt(
            name,
            format!("{len} bytes is too short for a header and footer"),
        ));
    }
    // Exactly these bytes: a mapped file would otherwise fault in a read-around window.
    handle.will_need(0, HEADER_LEN as u64);
    handle.will_need(len - FOOTER_LEN as u64, len);
    let head = handle.read_bytes(0, HEADER_LEN as u64)?;
    let foot = handle.read_bytes(len - FOOTER_LEN as u64, len)?;
    let mut frame = head.to_vec();
    frame.extend_from_slice(&foot);
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    format::check(name, &frame, kind)?;
    if let Some(m) = expect {
        let crc = u32::from_le_bytes(foot[4..8].try_into().expect("4 bytes"));
        if crc != m.crc {
            return Err(Error::corrupt(
                name,
                format!(
                    "footer checksum {crc:#010x} differs from the segment meta's {:#010x}",
                    m.crc
                ),
            ));
        }
    }
    Ok(version)
}

/// Reads `len` bytes at `start` of a file's body (between header and footer); a range that
/// leaves the body (from a damaged meta or entry) is `Corrupt`, naming the file and `what`.
fn read_body(file: &VerifiedFile, start: u64, len: u64, what: &str) -> Result<Bytes> {
    match start.checked_add(len) {
        Some(end) if start >= HEADER_LEN as u64 && end <= file.data_end() => file.read(start, end),
        _ => Err(Error::corrupt(
            file.name(),
            format!("{what} range [{start}, +{len}) is out of bounds"),
        )),
    }
}

impl SegmentReader {
    /// Opens segment `name`: verifies its meta fully and the other files' frames.
    pub fn open(dir: Arc<dyn Directory>, name: &str, schema: &Schema) -> Result<Self> {
        let meta_name = SegmentMeta::file_name(name, "meta");
        let meta_bytes = dir.open(&meta_name)?.read_all()?;
        let meta = SegmentMeta::decode(&meta_name, &meta_bytes)?;
        if meta.name != name {
            return Err(Error::corrupt(
                meta_name,
                format!("describes segment {:?}", meta.name),
            ));
        }
        if meta.fields.len() != schema.fields().len() {
            return Err(Error::corrupt(
                meta_name,
                "field count differs from the schema",
            ));
        }
        let mut handles = Vec::new();
        for (ext, kind) in SEGMENT_FILES.iter().skip(1) {
            let h = dir.open(&SegmentMeta::file_name(name, ext))?;
            let fm = meta.files.get(*ext).ok_or_else(|| {
                Error::corrupt(&meta_name, format!("no entry for the .{ext} file"))
            })?;
            let version = check_frame(&*h, *kind, Some(fm))?;
            handles.push(VerifiedFile::open(h, version)?);
        }
        let mut it = handles.into_iter();
        let mut next = || it.next().expect("five files");
        let files = Files {
            terms: next(),
            post: next(),
            pos: next(),
            norms: next(),
            store: next(),
        };
        let n = schema.fields().len();
        let post_view = files.post.mapped_view();
        let terms_view = files.terms.mapped_view();
        Ok(Self {
            meta,
            schema: schema.clone(),
            files,
            post_view,
            terms_view,
            terms: (0..n).map(|_| OnceLock::new()).collect(),
            norms: (0..n).map(|_| OnceLock::new()).collect(),
            stored_index: OnceLock::new(),
        })
    }

    pub fn meta(&self) -> &SegmentMeta {
        &self.meta
    }
    pub fn name(&self) -> &str {
        &self.meta.name
    }
    pub fn doc_count(&self) -> u32 {
        self.meta.doc_count
    }
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The term dictionary of `field` (None if the field has no terms here), every byte of it
    /// verified (for walks over many terms: prefix queries, merges, `check`). Exact lookups use
    /// [`SegmentReader::term_info`], which checks only the chunks on the term's path.
    pub fn terms(&self, field: u32) -> Result<Option<&TermsReader>> {
        let Some(d) = self.dict(field)? else {
            return Ok(None);
        };
        if d.lazy && d.whole.get().is_none() {
            let fm = &self.meta.fields[field as usize];
            self.files
                .terms
                .verify(fm.fst_offset, fm.fst_offset + fm.fst_len)?;
            let _ = d.whole.set(());
        }
        Ok(Some(&d.reader))
    }

    /// The term dictionary of `field`, opened at first use. With a mapped terms file and chunk
    /// checksums (v3) it is opened in place checking only the FST's header and trailer: lookups
    /// verify the nodes they visit. Otherwise it is read whole and checked: by its chunks (v3,
    /// pread and direct modes) or by the FST checksum of the segment meta (v1, v2).
    fn dict(&self, field: u32) -> Result<Option<&Dict>> {
        let slot = self
            .terms
            .get(field as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("field id {field}")))?;
        if let Some(t) = slot.get() {
            return Ok(t.as_ref());
        }
        let fm = &self.meta.fields[field as usize];
        let file = &self.files.terms;
        let name = file.name();
        let dict = if fm.unique_terms == 0 {
            None
        } else if let Some(view) = self.terms_view.as_ref().filter(|_| file.is_checked()) {
            let (start, len) = (fm.fst_offset, fm.fst_len);
            let in_body = start >= HEADER_LEN as u64
                && start.checked_add(len).is_some_and(|e| e <= file.data_end());
            if !in_body {
                return Err(Error::corrupt(
                    name,
                    format!("term dictionary range [{start}, +{len}) is out of bounds"),
                ));
            }
            // The FST's own header (16 bytes) and trailer (root address, length, checksum).
            file.verify(start, (start + 16).min(start + len))?;
            file.verify((start + len).saturating_sub(36).max(start), start + len)?;
            let bytes = view
                .slice(start as usize..(start + len) as usize)
                .expect("checked against the body");
            Some(Dict {
                reader: TermsReader::open(name, bytes)?,
                lazy: true,
                whole: OnceLock::new(),
            })
        } else {
            let bytes = read_body(file, fm.fst_offset, fm.fst_len, "term dictionary")?;
            if !file.is_checked() {
                let crc = quarry_codecs::crc32c(&bytes);
                if crc != fm.fst_crc {
                    return Err(Error::corrupt(
                        name,
                        format!(
                            "term dictionary of field {:?}: checksum {crc:#010x}, expected {:#010x}",
                            self.schema.field(field).name,
                            fm.fst_crc
                        ),
                    ));
                }
            }
            Some(Dict {
                reader: TermsReader::open(name, bytes)?,
                lazy: false,
                whole: OnceLock::new(),
            })
        };
        Ok(slot.get_or_init(|| dict).as_ref())
    }

    /// The postings entry of `field:term`, if the term occurs in this segment.
    pub fn term_info(&self, field: u32, term: &[u8]) -> Result<Option<(TermInfo, Bytes)>> {
        let Some(d) = self.dict(field)? else {
            return Ok(None);
        };
        let offset = if d.lazy && d.whole.get().is_none() {
            let base = self.meta.fields[field as usize].fst_offset;
            let file = &self.files.terms;
            // `verify` checks whole chunks, so after a call every byte of the chunks around its
            // range is known good: ranges inside the last such span (most nodes of a path, and
            // a node's span after its header) skip the verified-bitmap lookup.
            let chunk = CHUNK_SIZE as u64;
            let mut known = 0u64..0u64;
            d.reader.get_verified(term, |a, b| {
                let (a, b) = (base + a, base + b);
                if a >= known.start && b <= known.end {
                    return Ok(());
                }
                file.verify(a, b)?;
                known = a / chunk * chunk..b.div_ceil(chunk) * chunk;
                Ok(())
            })?
        } else {
            d.reader.get(term)
        };
        let Some(offset) = offset else {
            return Ok(None);
        };
        self.term_info_at(field, offset).map(Some)
    }

    /// Parses the postings entry at `offset`; returns it with the bytes its offsets refer to
    /// (the whole mapped file, or exactly the entry when read with `pread`).
    pub fn term_info_at(&self, field: u32, offset: u64) -> Result<(TermInfo, Bytes)> {
        let post = &self.files.post;
        let name = post.name();
        let has_pos = self.schema.field(field).has_positions();
        let body_end = post.data_end();
        if offset < HEADER_LEN as u64 || offset >= body_end {
            return Err(Error::corrupt(
                name,
                format!("term entry offset {offset} is outside the file body"),
            ));
        }
        let (bytes, at) = match &self.post_view {
            Some(view) => {
                post.verify(offset, (offset + MAX_HEADER_LEN as u64).min(body_end))?;
                (view.clone(), offset)
            }
            None => {
                let head = post.read(offset, (offset + MAX_HEADER_LEN as u64).min(body_end))?;
                let len = TermInfo::entry_len(&head, has_pos).in_file(name)?;
                let end = offset.checked_add(len).filter(|&e| e <= body_end);
                let end = end.ok_or_else(|| {
                    Error::corrupt(name, "term entry runs past the end of the file")
                })?;
                (post.read(offset, end)?, 0)
            }
        };
        let info = TermInfo::parse(&bytes, at, has_pos).in_file(name)?;
        if info.end() as u64 > body_end {
            return Err(Error::corrupt(name, "term entry runs into the footer"));
        }
        if self.post_view.is_some() {
            // The view is unverified: check the chunks of this entry (its header, skip table
            // and blocks) before a cursor reads them. Warm, one bitmap load per 256 KiB.
            post.verify(offset, info.end() as u64)?;
        }
        Ok((info, bytes))
    }

    /// A cursor over `field:term`'s documents; with positions if `with_positions`.
    pub fn postings(
        &self,
        field: u32,
        info: &TermInfo,
        bytes: &Bytes,
        with_positions: bool,
    ) -> Result<PostingsCursor> {
        let positions = if with_positions && self.schema.field(field).has_positions() {
            Some(read_body(
                &self.files.pos,
                info.pos_start,
                info.pos_len,
                "positions",
            )?)
        } else {
            None
        };
        Ok(PostingsCursor::new(
            info,
            bytes,
            positions.as_ref(),
            self.meta.doc_count,
        ))
    }

    /// The norms of a text field (one byte per document).
    pub fn norms(&self, field: u32) -> Result<Option<&Bytes>> {
        let slot = self
            .norms
            .get(field as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("field id {field}")))?;
        if let Some(n) = slot.get() {
            return Ok(n.as_ref());
        }
        let fm = &self.meta.fields[field as usize];
        let bytes = match fm.norms_offset {
            None => None,
            Some(off) => Some(read_body(
                &self.files.norms,
                off,
                u64::from(self.meta.doc_count),
                "norms",
            )?),
        };
        Ok(slot.get_or_init(|| bytes).as_ref())
    }

    fn stored_index(&self) -> Result<&Bytes> {
        if let Some(b) = self.stored_index.get() {
            return Ok(b);
        }
        let len = u64::from(self.meta.stored_blocks) * 12;
        let b = read_body(
            &self.files.store,
            self.meta.stored_index_offset,
            len,
            "stored block index",
        )?;
        Ok(self.stored_index.get_or_init(|| b))
    }

    /// The stored block index of this segment, read once and checked against its metadata.
    fn stored_block_index(&self) -> Result<StoredIndex<'_>> {
        StoredIndex::new(
            self.files.store.name(),
            self.stored_index()?,
            self.meta.stored_blocks,
            self.meta.stored_index_offset,
            self.meta.doc_count,
        )
    }

    /// Calls `f` with the encoded stored bytes of every document, in doc order, checking that
    /// the blocks cover exactly the segment's documents (merging copies them, `check` decodes).
    pub fn for_each_stored_doc(&self, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let name = self.files.store.name();
        let index = self.stored_block_index()?;
        let mut count = 0u32;
        for b in 0..index.blocks() {
            let (first, start, end) = index.block_range(b)?;
            if first != count {
                return Err(Error::corrupt(
                    name,
                    format!("stored block {b} starts at doc {first}, expected {count}"),
                ));
            }
            let (lens, data) = decode_block(
                name,
                self.files.store.version(),
                &self.files.store.read(start, end)?,
            )?;
            let mut off = 0usize;
            for l in lens {
                f(&data[off..off + l as usize])?;
                off += l as usize;
                count += 1;
            }
        }
        if count != self.meta.doc_count {
            return Err(Error::corrupt(
                name,
                format!(
                    "{count} stored documents, the segment has {}",
                    self.meta.doc_count
                ),
            ));
        }
        Ok(())
    }

    /// The stored fields of `doc` as a JSON object.
    pub fn stored_fields(&self, doc: u32) -> Result<Map<String, Value>> {
        let name = self.files.store.name();
        let index = self.stored_block_index()?;
        let b = index.block_of(doc)?;
        let (first, start, end) = index.block_range(b)?;
        let block = self.files.store.read(start, end)?;
        let (lens, data) = decode_block(name, self.files.store.version(), &block)?;
        let bytes = doc_in_block(
            name,
            &lens,
            &data,
            doc.checked_sub(first)
                .ok_or_else(|| Error::corrupt(name, "stored block index out of order"))?
                as usize,
        )?;
        decode_doc(&self.schema, bytes).in_file(name)
    }

    /// The stored fields of several documents, in the order given: the blocks they are in are
    /// read with one batched read ([`VerifiedFile::read_many`]) and each decoded once.
    pub fn stored_docs(&self, docs: &[u32]) -> Result<Vec<Map<String, Value>>> {
        let name = self.files.store.name();
        let index = self.stored_block_index()?;
        let mut blocks: Vec<u32> = docs
            .iter()
            .map(|&d| index.block_of(d))
            .collect::<Result<_>>()?;
        blocks.sort_unstable();
        blocks.dedup();
        let mut ranges = Vec::with_capacity(blocks.len());
        let mut firsts = Vec::with_capacity(blocks.len());
        for &b in &blocks {
            let (first, start, end) = index.block_range(b)?;
            firsts.push(first);
            ranges.push(start..end);
        }
        let read = self.files.store.read_many(&ranges)?;
        let decoded = read
            .iter()
            .map(|bytes| decode_block(name, self.files.store.version(), bytes))
            .collect::<Result<Vec<_>>>()?;
        docs.iter()
            .map(|&doc| {
                let i = blocks
                    .binary_search(&index.block_of(doc)?)
                    .expect("every block was read");
                let (lens, data) = &decoded[i];
                let at = doc
                    .checked_sub(firsts[i])
                    .ok_or_else(|| Error::corrupt(name, "stored block index out of order"))?;
                let bytes = doc_in_block(name, lens, data, at as usize)?;
                decode_doc(&self.schema, bytes).in_file(name)
            })
            .collect()
    }

    /// Verifies every byte of the segment's data files (format v3: every chunk checksum that
    /// this process has not checked yet; v1/v2: each file's whole-file CRC). Used by merges
    /// (before copying a segment) and by scrubbing.
    pub fn verify_all(&self) -> Result<()> {
        self.files.all().iter().try_for_each(|f| f.verify_all())
    }

    /// Per data file: (name, chunks verified so far, chunks in all); `(0, 0)` for v1/v2 files.
    pub fn verified_chunks(&self) -> Vec<(String, u64, u64)> {
        self.files
            .all()
            .iter()
            .map(|f| {
                let (v, n) = f.verified_chunks();
                (f.name().to_string(), v, n)
            })
            .collect()
    }

    /// The sequence number (index order) of `doc`.
    pub fn seq(&self, doc: u32) -> u64 {
        self.meta.seq(doc)
    }
}
