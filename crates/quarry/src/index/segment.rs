//! One segment opened for reading: its meta and file handles; structures are looked up in place.
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use quarry_codecs::{CHUNK_SIZE, FOOTER_LEN, HEADER_LEN};
use quarry_store::{Bytes, Directory, FileHandle};
use serde_json::{Map, Value};

use super::block_cache::{BlockCache, DecodedBlock};
use crate::codec::columns::{ColumnBytes, ColumnView};
use crate::codec::format::{self, SEGMENT_FILES};
use crate::codec::meta::{FieldMeta, SegmentMeta};
use crate::codec::norms::GROUP_SUMS_SINCE;
use crate::codec::postings::{PostingsCursor, TermInfo, MAX_HEADER_LEN};
use crate::codec::stored::{decode_block, decode_doc, doc_in_block, StoredIndex};
use crate::codec::terms::TermsReader;
use crate::codec::vectors::{FieldBytes, VectorField};
use crate::error::InFile;
use crate::index::verified::{NormsCheck, RegionCheck, VerifiedFile};
use crate::schema::Schema;
use crate::{Error, Result};

/// Bytes of one entry of the stored block index: first doc (u32) and block start (u64).
const STORED_INDEX_ENTRY: usize = 12;

/// Entries of the stored block index read per lookup while the whole index is not in memory: one
/// 4 KiB chunk's worth.
const STORED_INDEX_WINDOW: u32 = 341;

/// The segment's data files, by position in [`SEGMENT_FILES`] (minus meta); every read of
/// them goes through [`VerifiedFile`] (chunk checksums of format v3).
struct Files {
    terms: VerifiedFile,
    post: Arc<VerifiedFile>,
    pos: Arc<VerifiedFile>,
    norms: VerifiedFile,
    store: VerifiedFile,
    /// Format v8 and later.
    cols: Option<VerifiedFile>,
    /// Format v9 and later, when the schema has a vector field.
    vec: Option<VerifiedFile>,
}

impl Files {
    fn all(&self) -> Vec<&VerifiedFile> {
        let mut v = vec![
            &self.terms,
            &*self.post,
            &*self.pos,
            &self.norms,
            &self.store,
        ];
        v.extend(self.cols.as_ref());
        v.extend(self.vec.as_ref());
        v
    }
}

/// One field's term dictionary and how far it is verified.
struct Dict {
    reader: TermsReader,
    /// Opened in place over unverified bytes: lookups verify the nodes they visit.
    lazy: bool,
    /// Set once every byte of a lazy dictionary was verified.
    whole: OnceLock<()>,
    /// Lookups so far with per-node checks (see [`WHOLE_AFTER_LOOKUPS`]).
    lookups: AtomicU32,
}

/// After this many lookups in a lazily verified term dictionary the process is warm: the rest
/// of the FST is verified once and later lookups skip the per-node checks (which cost a bitmap
/// check per visited node, a few percent of a short query). Cold starts keep the per-node
/// checks of their first lookups.
const WHOLE_AFTER_LOOKUPS: u32 = 256;

/// After this many scorers of a field were handed its mapped norms with a [`NormsCheck`] (format
/// v7), the field's norms are verified whole and later scorers check nothing: a cold start
/// verifies the groups it scores, a warm process's scoring loops carry no check.
const NORMS_WHOLE_AFTER: u32 = 256;

/// A field's norms for a scorer: the bytes, and the check its postings cursors apply to the
/// documents they load when the bytes are not verified yet
/// ([`PostingsCursor::set_norms_check`]).
pub type ScoringNorms = (Bytes, Option<NormsCheck>);

/// A segment opened for reading.
pub struct SegmentReader {
    meta: SegmentMeta,
    schema: Schema,
    files: Files,
    /// Whole postings file when it is free to view (mmap): term lookups then cost no syscall.
    post_view: Option<Bytes>,
    /// Whole positions file when it is free to view (mmap): read in place, checked per block.
    pos_view: Option<Bytes>,
    /// Whole terms file when it is free to view (mmap): dictionaries are used in place.
    terms_view: Option<Bytes>,
    terms: Vec<OnceLock<Option<Dict>>>,
    norms: Vec<OnceLock<Option<Bytes>>>,
    /// Whole norms file when it is free to view (mmap): scorers read it in place.
    norms_view: Option<Bytes>,
    /// Per field: the view of its norms and their group check (v7 mapped norms), built at the
    /// first scorer.
    norms_groups: Vec<OnceLock<Option<(Bytes, NormsCheck)>>>,
    /// Per field: scorers handed a [`NormsCheck`] so far (see [`NORMS_WHOLE_AFTER`]).
    norms_uses: Vec<AtomicU32>,
    stored_index: OnceLock<Bytes>,
    /// Recently decompressed stored blocks.
    stored_cache: BlockCache,
    /// Stored-block lookups that read a window of the block index (see `stored_block`).
    stored_windows: AtomicU32,
    /// Per field: its column's bytes, read and verified at first use.
    columns: Vec<OnceLock<Option<ColumnBytes>>>,
    /// Per field: its vectors, read and verified at first use.
    vectors: Vec<OnceLock<Option<VectorField>>>,
    /// [`SegmentMeta::seq_floors`], built by the first pruned walk that asks for it.
    seq_floors: OnceLock<Vec<u64>>,
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
    // Exactly these bytes, not mapped in: a mapped file would otherwise fault in a read-around
    // window, or cost a `MADV_WILLNEED` and a page fault per end.
    let head = handle.read_small(0, HEADER_LEN as u64)?;
    let foot = handle.read_small(len - FOOTER_LEN as u64, len)?;
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

/// The sequence runs a segment keeps in `.cols` (`SegmentMeta::seq_runs_at`).
fn read_seq_runs(
    cols: &VerifiedFile,
    at: &crate::codec::meta::SeqRunsAt,
) -> Result<Vec<(u32, u64)>> {
    use quarry_codecs::column::Column;
    let docs = read_body(cols, at.docs_at.0, at.docs_at.1, "sequence run documents")?;
    let seqs = read_body(cols, at.seqs_at.0, at.seqs_at.1, "sequence run numbers")?;
    let bad = |what: String| Error::corrupt(cols.name(), what);
    let d = Column::open(&docs).map_err(|e| bad(format!("sequence run documents: {e}")))?;
    let s = Column::open(&seqs).map_err(|e| bad(format!("sequence run numbers: {e}")))?;
    if d.len() != at.runs as usize || s.len() != at.runs as usize {
        return Err(bad(format!(
            "{} and {} sequence run rows, the meta says {}",
            d.len(),
            s.len(),
            at.runs
        )));
    }
    let (mut dv, mut sv) = (vec![0u64; d.len()], vec![0u64; s.len()]);
    d.get_range(0, &mut dv);
    s.get_range(0, &mut sv);
    dv.into_iter()
        .zip(sv)
        .map(|(doc, seq)| {
            u32::try_from(doc)
                .map(|doc| (doc, seq))
                .map_err(|_| bad(format!("sequence run at document {doc}")))
        })
        .collect()
}

impl SegmentReader {
    /// Opens segment `name`: verifies its meta fully and the other files' frames.
    pub fn open(dir: Arc<dyn Directory>, name: &str, schema: &Schema) -> Result<Self> {
        let meta_name = SegmentMeta::file_name(name, "meta");
        let meta_bytes = dir.open(&meta_name)?.read_all()?;
        let mut meta = SegmentMeta::decode(&meta_name, &meta_bytes)?;
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
        let mut vec = None;
        for (ext, kind) in SEGMENT_FILES.iter().skip(1) {
            if (*ext == "cols" || *ext == "vec") && !meta.files.contains_key(*ext) {
                // Written before format v8: no columns; no vector field: no vectors.
                continue;
            }
            let h = dir.open(&SegmentMeta::file_name(name, ext))?;
            let fm = meta.files.get(*ext).ok_or_else(|| {
                Error::corrupt(&meta_name, format!("no entry for the .{ext} file"))
            })?;
            let version = check_frame(&*h, *kind, Some(fm))?;
            let file = VerifiedFile::open(h, version)?;
            if *ext == "vec" {
                vec = Some(file);
            } else {
                handles.push(file);
            }
        }
        let mut it = handles.into_iter();
        let mut next = || it.next().expect("five files");
        let files = Files {
            terms: next(),
            post: Arc::new(next()),
            pos: Arc::new(next()),
            norms: next(),
            store: next(),
            cols: it.next(),
            vec,
        };
        if let (Some(at), Some(cols)) = (meta.seq_runs_at.clone(), &files.cols) {
            meta.seq_runs = read_seq_runs(cols, &at)?;
            meta.check_seq_runs(&meta_name)?;
        }
        let n = schema.fields().len();
        let post_view = files.post.mapped_view();
        let pos_view = files.pos.mapped_view();
        let terms_view = files.terms.mapped_view();
        let norms_view = files.norms.mapped_view();
        Ok(Self {
            meta,
            schema: schema.clone(),
            files,
            post_view,
            pos_view,
            terms_view,
            terms: (0..2 * n).map(|_| OnceLock::new()).collect(),
            norms: (0..n).map(|_| OnceLock::new()).collect(),
            norms_view,
            norms_groups: (0..n).map(|_| OnceLock::new()).collect(),
            norms_uses: (0..n).map(|_| AtomicU32::new(0)).collect(),
            stored_index: OnceLock::new(),
            stored_cache: BlockCache::default(),
            stored_windows: AtomicU32::new(0),
            columns: (0..n).map(|_| OnceLock::new()).collect(),
            vectors: (0..n).map(|_| OnceLock::new()).collect(),
            seq_floors: OnceLock::new(),
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
        self.whole_dict(field)
    }

    /// Whether this segment indexes `field`'s pairs of frequent words with this build's list
    /// ([`crate::pairs`]): then a phrase may read [`pair_info`](Self::pair_info) entries, and a
    /// pair that is not there does not occur.
    pub fn has_pairs(&self, field: u32) -> bool {
        self.meta.pairs.as_ref().is_some_and(|p| {
            crate::pairs::is_current(&p.words)
                && p.fields.get(field as usize).is_some_and(|f| f.is_some())
        })
    }

    /// The pair dictionary of `field`, every byte verified (merges, `check`); None if the
    /// segment has no pairs of that field.
    pub fn pair_terms(&self, field: u32) -> Result<Option<&TermsReader>> {
        self.whole_dict(self.pair_dict(field)?)
    }

    /// The postings entry of the pair term `pair` ([`crate::pairs::pair_term`]) of `field`;
    /// its cursors are opened with `field`, as the field's own terms.
    pub fn pair_info(&self, field: u32, pair: &[u8]) -> Result<Option<(TermInfo, Bytes)>> {
        self.term_info(self.pair_dict(field)?, pair)
    }

    /// The dictionary id of `field`'s pairs: dictionaries `0..n` are the fields', `n..2n` their
    /// pairs'.
    fn pair_dict(&self, field: u32) -> Result<u32> {
        let n = self.meta.fields.len() as u32;
        if field >= n {
            return Err(Error::InvalidArgument(format!("field id {field}")));
        }
        Ok(n + field)
    }

    /// The metadata of dictionary `dict` (see [`pair_dict`](Self::pair_dict)); None for a
    /// field without pairs.
    #[inline]
    fn dict_meta(&self, dict: u32) -> Option<&FieldMeta> {
        match self.meta.fields.get(dict as usize) {
            Some(fm) => Some(fm),
            None => {
                let f = dict as usize - self.meta.fields.len();
                self.meta.pairs.as_ref()?.fields.get(f)?.as_ref()
            }
        }
    }

    /// The field a dictionary belongs to (see [`pair_dict`](Self::pair_dict)).
    #[inline]
    fn dict_field(&self, dict: u32) -> u32 {
        let n = self.meta.fields.len() as u32;
        if dict < n {
            dict
        } else {
            dict - n
        }
    }

    fn whole_dict(&self, dict: u32) -> Result<Option<&TermsReader>> {
        let Some(d) = self.dict(dict)? else {
            return Ok(None);
        };
        if d.lazy && d.whole.get().is_none() {
            let fm = self.dict_meta(dict).expect("a dictionary has a meta");
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
    fn dict(&self, dict: u32) -> Result<Option<&Dict>> {
        let slot = self
            .terms
            .get(dict as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("field id {dict}")))?;
        if let Some(t) = slot.get() {
            return Ok(t.as_ref());
        }
        let Some(fm) = self.dict_meta(dict) else {
            return Ok(slot.get_or_init(|| None).as_ref());
        };
        let field = self.dict_field(dict);
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
                lookups: AtomicU32::new(0),
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
                lookups: AtomicU32::new(0),
            })
        };
        Ok(slot.get_or_init(|| dict).as_ref())
    }

    /// The postings entry of `field:term`, if the term occurs in this segment (`field` may
    /// also be a pair dictionary's id, from [`pair_info`](Self::pair_info)).
    pub fn term_info(&self, field: u32, term: &[u8]) -> Result<Option<(TermInfo, Bytes)>> {
        let Some(d) = self.dict(field)? else {
            return Ok(None);
        };
        let offset = if d.lazy && d.whole.get().is_none() {
            let fm = self.dict_meta(field).expect("a dictionary has a meta");
            let (base, file) = (fm.fst_offset, &self.files.terms);
            if d.lookups.fetch_add(1, Ordering::Relaxed) + 1 == WHOLE_AFTER_LOOKUPS {
                file.verify(base, base + fm.fst_len)?;
                let _ = d.whole.set(());
                d.reader.get(term)
            } else {
                // `verify` checks whole chunks, so after a call every byte of the chunks around
                // its range is known good: ranges inside the last such span (most nodes of a
                // path, and a node's span after its header) skip the verified-bitmap lookup.
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
            }
        } else {
            d.reader.get(term)
        };
        let Some(offset) = offset else {
            return Ok(None);
        };
        self.term_info_at(self.dict_field(field), offset).map(Some)
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
            // The view is unverified: check the entry's header and skip table now; a cursor
            // checks each block when it loads it (`postings`). Warm, one bitmap load.
            post.verify(offset, info.blocks_start() as u64)?;
        }
        Ok((info, bytes))
    }

    /// A cursor over `field:term`'s documents; with positions if `with_positions`; `info` and
    /// `bytes` come from [`term_info_at`](Self::term_info_at).
    ///
    /// Mapped files are used in place and verified a block at a time as the cursor loads
    /// blocks and their positions; in pread and direct modes the entry and the positions were
    /// read whole and verified by that read (the checksum costs less than the read).
    pub fn postings(
        &self,
        field: u32,
        info: &TermInfo,
        bytes: &Bytes,
        with_positions: bool,
    ) -> Result<PostingsCursor> {
        let mut pos_check = None;
        let positions = if with_positions && self.schema.field(field).has_positions() {
            let pos = &self.files.pos;
            match (&self.pos_view, info.pos_start.checked_add(info.pos_len)) {
                (Some(view), Some(end))
                    if pos.is_checked()
                        && info.pos_start >= HEADER_LEN as u64
                        && end <= pos.data_end() =>
                {
                    pos_check = RegionCheck::new(pos, info.pos_start, info.pos_len);
                    let slice = view.slice(info.pos_start as usize..end as usize);
                    Some(slice.ok_or_else(|| {
                        Error::corrupt(pos.name(), "positions range is outside the file")
                    })?)
                }
                _ => Some(read_body(pos, info.pos_start, info.pos_len, "positions")?),
            }
        } else {
            None
        };
        // With the postings view, `term_info_at` verified the header and skip table only.
        let check = match &self.post_view {
            Some(_) => RegionCheck::new(
                &self.files.post,
                info.blocks_start() as u64,
                (info.end() - info.blocks_start()) as u64,
            ),
            None => None,
        };
        Ok(PostingsCursor::with_checks(
            info,
            bytes,
            positions.as_ref(),
            self.meta.doc_count,
            [check, pos_check],
        ))
    }

    /// Cursors with positions over several terms of one field (a phrase's terms), in order;
    /// `terms` come from [`term_info_at`](Self::term_info_at).
    ///
    /// Mapped positions are used in place as [`postings`](Self::postings) does. In pread and
    /// direct modes the positions of all the terms are fetched with one batched read
    /// ([`VerifiedFile::read_many`]: one io_uring submission, or pread per range where io_uring
    /// is unavailable), verified by that read, instead of one synchronous read per term.
    pub fn phrase_postings(
        &self,
        field: u32,
        terms: &[(TermInfo, Bytes)],
    ) -> Result<Vec<PostingsCursor>> {
        let pos = &self.files.pos;
        if self.pos_view.is_some() || terms.len() < 2 || !self.schema.field(field).has_positions() {
            // A loop, not `collect::<Result<_>>`: that moved each 312-byte cursor three times.
            let mut cursors = Vec::with_capacity(terms.len());
            for (info, bytes) in terms {
                cursors.push(self.postings(field, info, bytes, true)?);
            }
            return Ok(cursors);
        }
        let ranges = terms
            .iter()
            .map(|(info, _)| match info.pos_start.checked_add(info.pos_len) {
                Some(end) if info.pos_start >= HEADER_LEN as u64 && end <= pos.data_end() => {
                    Ok(info.pos_start..end)
                }
                _ => Err(Error::corrupt(
                    pos.name(),
                    format!(
                        "positions range [{}, +{}) is out of bounds",
                        info.pos_start, info.pos_len
                    ),
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        let read = pos.read_many(&ranges)?;
        Ok(terms
            .iter()
            .zip(&read)
            .map(|((info, bytes), positions)| {
                PostingsCursor::with_checks(
                    info,
                    bytes,
                    Some(positions),
                    self.meta.doc_count,
                    [None, None],
                )
            })
            .collect())
    }

    /// The norms of a text field for a scorer. Mapped v7 norms are handed out in place, not
    /// verified, with the [`NormsCheck`] of their group sums, which the scorer's cursors apply
    /// to the documents they load ([`PostingsCursor::set_norms_check`]); otherwise (read modes,
    /// older files, verified already or after 256 scorers of the field) the verified bytes
    /// of [`norms`](Self::norms).
    pub fn scoring_norms(&self, field: u32) -> Result<Option<ScoringNorms>> {
        let verified = |s: &Self| Ok(s.norms(field)?.map(|b| (b.clone(), None)));
        let f = field as usize;
        let (Some(slot), Some(groups), Some(uses)) = (
            self.norms.get(f),
            self.norms_groups.get(f),
            self.norms_uses.get(f),
        ) else {
            return verified(self);
        };
        let file = &self.files.norms;
        let Some(off) = self.meta.fields[f].norms_offset else {
            return Ok(None);
        };
        if slot.get().is_some()
            || file.version() < GROUP_SUMS_SINCE
            || !file.is_checked()
            || self.norms_view.is_none()
            || uses.fetch_add(1, Ordering::Relaxed) >= NORMS_WHOLE_AFTER
        {
            return verified(self);
        }
        let lazy = match groups.get() {
            Some(g) => g,
            None => {
                let g = self.norms_groups_of(off)?;
                groups.get_or_init(|| g)
            }
        };
        match lazy {
            Some((bytes, check)) if !check.is_complete() => {
                Ok(Some((bytes.clone(), Some(check.clone()))))
            }
            Some((bytes, _)) => Ok(Some((bytes.clone(), None))),
            None => verified(self),
        }
    }

    /// The unverified view of the v7 norms run at `off` and the check of its group sums.
    fn norms_groups_of(&self, off: u64) -> Result<Option<(Bytes, NormsCheck)>> {
        let file = &self.files.norms;
        // The sums are read (and chunk-verified) first: they also bound the run.
        let sums = self.norm_group_sums(off)?;
        let end = off + u64::from(self.meta.doc_count);
        let Some(bytes) = self
            .norms_view
            .as_ref()
            .and_then(|v| v.slice(off as usize..end as usize))
        else {
            return Ok(None);
        };
        Ok(NormsCheck::new(file.name(), off, bytes.clone(), sums).map(|c| (bytes, c)))
    }

    /// The group sums (4 bytes per 64 documents) that follow the v7 norms run at `off`, read
    /// and verified by their chunks; a range outside the file body is `Corrupt`.
    fn norm_group_sums(&self, off: u64) -> Result<Bytes> {
        let end = off.checked_add(u64::from(self.meta.doc_count));
        let sums_len = 4 * crate::codec::norms::group_count(self.meta.doc_count) as u64;
        match end {
            Some(end) if off >= HEADER_LEN as u64 => {
                read_body(&self.files.norms, end, sums_len, "norm group sums")
            }
            _ => Err(Error::corrupt(
                self.files.norms.name(),
                format!(
                    "norms range [{off}, +{}) is out of bounds",
                    self.meta.doc_count
                ),
            )),
        }
    }

    /// Checks a v7 field's group sums against its norms (verified whole first); older files
    /// have none. For `check_index`: a writer that summed wrongly shows here, not only when a
    /// scorer reaches the group.
    pub fn check_norm_groups(&self, field: u32) -> Result<()> {
        let file = &self.files.norms;
        let (Some(norms), true) = (self.norms(field)?, file.version() >= GROUP_SUMS_SINCE) else {
            return Ok(());
        };
        if norms.is_empty() {
            return Ok(());
        }
        let off = self.meta.fields[field as usize].norms_offset.unwrap_or(0);
        let sums = self.norm_group_sums(off)?;
        let check = NormsCheck::new(file.name(), off, norms.clone(), sums)
            .ok_or_else(|| Error::corrupt(file.name(), "norm group sums have the wrong length"))?;
        check.check_range(0, self.meta.doc_count.saturating_sub(1))
    }

    /// The norms of a text field (one byte per document), verified whole.
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
        let len = u64::from(self.meta.stored_blocks) * STORED_INDEX_ENTRY as u64;
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

    /// `doc`'s stored block as (first doc of the block, start, end in the file). Once the whole
    /// block index was read (merges, `check`) it is searched in memory. Otherwise only windows of
    /// [`STORED_INDEX_WINDOW`] entries are read, the first one around the block that `doc`'s
    /// position among the segment's documents predicts: a top-10 then reads a few KB of the
    /// index (170 KB per W2 segment) and leaves the rest of it out of memory and the page cache.
    /// Once the windows read add up to the whole index, the whole index is read and kept (a
    /// rent-or-buy rule: a segment whose documents are fetched often reads at most twice the
    /// index's bytes, then none; the windows' reads were 7 % of highlighting W2 top-10s).
    fn stored_block(&self, doc: u32) -> Result<(u32, u64, u64)> {
        let blocks = self.meta.stored_blocks;
        if self.stored_index.get().is_some()
            || blocks <= 2 * STORED_INDEX_WINDOW
            || self.stored_windows.fetch_add(1, Ordering::Relaxed) >= blocks / STORED_INDEX_WINDOW
        {
            let index = self.stored_block_index()?;
            return index.block_range(index.block_of(doc)?);
        }
        self.stored_block_windowed(doc, STORED_INDEX_WINDOW)
    }

    /// [`stored_block`](Self::stored_block) reading `window` (at least 1) entries of the block
    /// index at a time: a window around the predicted block, then halving the range left.
    fn stored_block_windowed(&self, doc: u32, window: u32) -> Result<(u32, u64, u64)> {
        let n = self.meta.stored_blocks;
        let docs = self.meta.doc_count;
        if doc >= docs {
            return Err(Error::InvalidArgument(format!(
                "doc {doc} out of range ({docs} docs)"
            )));
        }
        let name = self.files.store.name();
        let base = self.meta.stored_index_offset;
        // Blocks end where the index starts.
        let data_end = base;
        let entry_len = STORED_INDEX_ENTRY as u64;
        // The block holding `doc` is in [lo, hi).
        let (mut lo, mut hi) = (0u32, n);
        let mut guess = (u64::from(doc) * u64::from(n) / u64::from(docs)) as u32;
        loop {
            if lo >= hi {
                return Err(Error::corrupt(
                    name,
                    format!("stored block index does not cover doc {doc} (entries out of order)"),
                ));
            }
            let b = (guess.saturating_sub(window / 2).max(lo) + window).min(hi);
            let a = b.saturating_sub(window).max(lo);
            // Entries [a, b), plus entry b (the end of block b - 1 and where the window stops).
            let read_end = (b + 1).min(n);
            let bytes = read_body(
                &self.files.store,
                base + u64::from(a) * entry_len,
                u64::from(read_end - a) * entry_len,
                "stored block index",
            )?;
            let entry = |i: u32| {
                let o = (i - a) as usize * STORED_INDEX_ENTRY;
                let e = &bytes[o..o + STORED_INDEX_ENTRY];
                (
                    u32::from_le_bytes(e[0..4].try_into().expect("4 bytes")),
                    u64::from_le_bytes(e[4..12].try_into().expect("8 bytes")),
                )
            };
            if entry(a).0 > doc {
                if a == 0 {
                    return Err(Error::corrupt(
                        name,
                        format!("stored block 0 starts at doc {}, not 0", entry(0).0),
                    ));
                }
                hi = a;
                guess = lo + (hi - lo) / 2;
                continue;
            }
            if b < n && entry(b).0 <= doc {
                lo = b;
                guess = lo + (hi - lo) / 2;
                continue;
            }
            // The last entry of [a, b) whose first doc is at most `doc`.
            let (mut l, mut h) = (a, b);
            while h - l > 1 {
                let mid = l + (h - l) / 2;
                if entry(mid).0 <= doc {
                    l = mid;
                } else {
                    h = mid;
                }
            }
            let (first, start) = entry(l);
            let end = if l + 1 < n { entry(l + 1).1 } else { data_end };
            if start > end || end > data_end {
                return Err(Error::corrupt(
                    name,
                    format!("stored block {l} has a bad offset"),
                ));
            }
            return Ok((first, start, end));
        }
    }

    /// The stored fields of `doc` as a JSON object.
    pub fn stored_fields(&self, doc: u32) -> Result<Map<String, Value>> {
        let name = self.files.store.name();
        let (first, start, end) = self.stored_block(doc)?;
        let block = match self.stored_cache.get(start) {
            Some(block) => block,
            None => {
                let raw = self.files.store.read(start, end)?;
                let block = Arc::new(decode_block(name, self.files.store.version(), &raw)?);
                self.stored_cache.insert(start, Arc::clone(&block));
                block
            }
        };
        let (lens, data) = &*block;
        let bytes = doc_in_block(
            name,
            lens,
            data,
            doc.checked_sub(first)
                .ok_or_else(|| Error::corrupt(name, "stored block index out of order"))?
                as usize,
        )?;
        decode_doc(&self.schema, bytes).in_file(name)
    }

    /// The stored fields of several documents, in the order given: the blocks they are in that
    /// the cache does not hold are read with one batched read ([`VerifiedFile::read_many`]) and
    /// each decoded once.
    pub fn stored_docs(&self, docs: &[u32]) -> Result<Vec<Map<String, Value>>> {
        let name = self.files.store.name();
        let located: Vec<(u32, u64, u64)> = docs
            .iter()
            .map(|&d| self.stored_block(d))
            .collect::<Result<_>>()?;
        let mut blocks = located.clone();
        blocks.sort_unstable_by_key(|&(_, start, _)| start);
        blocks.dedup_by_key(|&mut (_, start, _)| start);
        let mut decoded: Vec<Option<DecodedBlock>> = blocks
            .iter()
            .map(|&(_, start, _)| self.stored_cache.get(start))
            .collect();
        let missing: Vec<usize> = (0..blocks.len())
            .filter(|&i| decoded[i].is_none())
            .collect();
        let ranges: Vec<_> = missing.iter().map(|&i| blocks[i].1..blocks[i].2).collect();
        let read = self.files.store.read_many(&ranges)?;
        for (&i, bytes) in missing.iter().zip(&read) {
            let block = Arc::new(decode_block(name, self.files.store.version(), bytes)?);
            self.stored_cache.insert(blocks[i].1, Arc::clone(&block));
            decoded[i] = Some(block);
        }
        docs.iter()
            .zip(&located)
            .map(|(&doc, &(first, start, _))| {
                let i = blocks
                    .binary_search_by_key(&start, |&(_, s, _)| s)
                    .expect("every block was read");
                let (lens, data) = &**decoded[i].as_ref().expect("every block was read");
                let at = doc
                    .checked_sub(first)
                    .ok_or_else(|| Error::corrupt(name, "stored block index out of order"))?;
                let bytes = doc_in_block(name, lens, data, at as usize)?;
                decode_doc(&self.schema, bytes).in_file(name)
            })
            .collect()
    }

    /// Whether the segment keeps columns (format v8 and later): an older segment has none, and
    /// its values are in its stored fields only.
    pub fn has_columns(&self) -> bool {
        self.files.cols.is_some()
    }

    /// The column of `field` (None when the field keeps none or the segment predates columns),
    /// its pieces read through the chunk checksums at first use.
    pub fn column(&self, field: u32) -> Result<Option<&ColumnBytes>> {
        let slot = self
            .columns
            .get(field as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("field id {field}")))?;
        if let Some(c) = slot.get() {
            return Ok(c.as_ref());
        }
        let (Some(file), Some(Some(cm))) =
            (&self.files.cols, self.meta.columns.get(field as usize))
        else {
            return Ok(slot.get_or_init(|| None).as_ref());
        };
        let piece = |(at, len): (u64, u64), what: &str| read_body(file, at, len, what);
        let values = piece(cm.values_at, "value column")?;
        let starts = cm.starts_at.map(|s| piece(s, "start column")).transpose()?;
        let dict = match &cm.dict {
            Some(d) => Some((
                piece(d.offsets_at, "keyword term offsets")?,
                piece(d.bytes_at, "keyword terms")?,
            )),
            None => None,
        };
        let points = match &cm.points {
            Some(p) => Some((
                piece(p.values_at, "point values")?,
                piece(p.docs_at, "point documents")?,
            )),
            None => None,
        };
        let cb = ColumnBytes {
            meta: cm.clone(),
            values,
            starts,
            dict,
            points,
        };
        // Layouts checked once, here: later views cannot fail on these bytes.
        cb.view(file.name(), self.meta.doc_count)?;
        Ok(slot.get_or_init(|| Some(cb)).as_ref())
    }

    /// The column of `field` ready to read, None as [`column`](Self::column).
    pub fn column_view(&self, field: u32) -> Result<Option<ColumnView<'_>>> {
        let Some(cb) = self.column(field)? else {
            return Ok(None);
        };
        let name = self.files.cols.as_ref().map_or("", |f| f.name());
        cb.view(name, self.meta.doc_count).map(Some)
    }

    /// The vectors of `field` (None when the field has none in this segment), every piece read
    /// through the chunk checksums and checked at first use, then used in place.
    pub fn vectors(&self, field: u32) -> Result<Option<&VectorField>> {
        let slot = self
            .vectors
            .get(field as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("field id {field}")))?;
        if let Some(v) = slot.get() {
            return Ok(v.as_ref());
        }
        let (Some(file), Some(Some(vm))) = (&self.files.vec, self.meta.vectors.get(field as usize))
        else {
            return Ok(slot.get_or_init(|| None).as_ref());
        };
        let piece = |(at, len): (u64, u64), what: &str| read_body(file, at, len, what);
        let mut levels = Vec::new();
        for l in vm.graph.iter().flat_map(|g| &g.levels) {
            levels.push((
                l.nodes_at.map(|s| piece(s, "graph nodes")).transpose()?,
                piece(l.offsets_at, "graph offsets")?,
                piece(l.neighbors_at, "graph neighbours")?,
            ));
        }
        let bytes = FieldBytes {
            values: piece(vm.values_at, "vectors")?,
            docs: vm
                .docs_at
                .map(|s| piece(s, "vector documents"))
                .transpose()?,
            passages: vm
                .passages_at
                .map(|s| piece(s, "vector passages"))
                .transpose()?,
            quantized: match &vm.quantized {
                Some(q) => Some((
                    piece(q.bytes_at, "quantized vectors")?,
                    piece(q.corrections_at, "quantized corrections")?,
                )),
                None => None,
            },
            levels,
        };
        let field = VectorField::open(file.name(), vm, self.meta.doc_count, bytes)?;
        Ok(slot.get_or_init(|| Some(field)).as_ref())
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

    /// The order the segment's documents are in, when the index has an index sort.
    pub fn index_sort(&self) -> Option<&crate::index_sort::IndexSort> {
        self.meta.index_sort.as_ref()
    }

    /// The sequence number (index order) of `doc`.
    pub fn seq(&self, doc: u32) -> u64 {
        self.meta.seq(doc)
    }

    /// See [`SegmentMeta::first_doc_after_seq`](crate::codec::meta::SegmentMeta::first_doc_after_seq).
    pub fn first_doc_after_seq(&self, seq: u64) -> u32 {
        let floors = self.seq_floors.get_or_init(|| self.meta.seq_floors());
        self.meta.first_doc_after_seq(floors, seq)
    }
}

#[cfg(test)]
mod tests {
    use crate::codec::postings::PostingsCursor;
    use crate::{DirectoryKind, Document, FieldValue, Index, IndexWriter, Schema, WriterOptions};

    /// A phrase's cursors from one batched read of their positions (pread, direct) give the
    /// same documents, frequencies and positions as one cursor per term read on its own, and as
    /// the mapped cursors; a positions range outside the file is `Corrupt`, not a panic.
    #[test]
    fn batched_phrase_positions_equal_one_read_per_term_in_every_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::builder().text("body", true).build();
        let mut w =
            IndexWriter::create(tmp.path(), schema.clone(), WriterOptions::default()).unwrap();
        for i in 0..3000u64 {
            let body: Vec<String> = (0..30 + i % 50)
                .map(|j| format!("w{}", (i * 31 + j * j) % 13))
                .collect();
            let mut d = Document::new();
            d.add(&schema, "body", FieldValue::Str(body.join(" ")))
                .unwrap();
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        drop(w);
        let field = schema.field_id("body").unwrap();
        let walk = |cursors: Vec<PostingsCursor>| -> Vec<Vec<(u32, u32, Vec<u32>)>> {
            cursors
                .into_iter()
                .map(|mut c| {
                    let mut out = Vec::new();
                    let mut doc = c.next();
                    while doc != crate::codec::postings::TERMINATED {
                        let mut pos = Vec::new();
                        c.positions(&mut pos);
                        out.push((doc, c.freq(), pos));
                        doc = c.next();
                    }
                    assert!(c.is_corrupt().is_none());
                    out
                })
                .collect()
        };
        let mut expected = None;
        for kind in DirectoryKind::ALL {
            let index = Index::open_with(tmp.path(), kind).unwrap();
            let seg = &index.segments()[0];
            let terms: Vec<_> = ["w1", "w4", "w9"]
                .iter()
                .map(|t| seg.term_info(field, t.as_bytes()).unwrap().unwrap())
                .collect();
            let one_by_one: Vec<_> = terms
                .iter()
                .map(|(info, bytes)| seg.postings(field, info, bytes, true).unwrap())
                .collect();
            let one_by_one = walk(one_by_one);
            assert!(
                one_by_one.iter().all(|t| t.len() > 100),
                "{kind}: {:?}",
                one_by_one.iter().map(Vec::len).collect::<Vec<_>>()
            );
            assert_eq!(
                walk(seg.phrase_postings(field, &terms).unwrap()),
                one_by_one,
                "{kind}"
            );
            let expected = expected.get_or_insert_with(|| one_by_one.clone());
            assert_eq!(&one_by_one, expected, "{kind}");
            let mut bad = terms.clone();
            bad[1].0.pos_start = u64::MAX - 8;
            match seg.phrase_postings(field, &bad) {
                Err(crate::Error::Corrupt { .. }) => {}
                // Mapped positions are checked when the cursor is built (`postings`).
                Err(e) => panic!("{kind}: {e}"),
                Ok(_) => panic!("{kind}: an out-of-range positions range was accepted"),
            }
        }
    }

    /// The windowed lookup of a document's stored block finds the same block as the search of
    /// the whole block index, for every document and window size (one entry upwards).
    #[test]
    fn windowed_stored_block_lookup_matches_the_whole_index() {
        let tmp = tempfile::tempdir().unwrap();
        let schema = Schema::builder().integer("id").text("body", true).build();
        let opts = WriterOptions {
            threads: 1,
            ..Default::default()
        };
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
        for i in 0..1500u64 {
            // Uneven document sizes, so that blocks hold different numbers of documents.
            let words = 20 + (i * 7919 % 400) as usize;
            let body: Vec<String> = (0..words)
                .map(|j| format!("w{}", (i + j as u64) % 997))
                .collect();
            let mut d = Document::new();
            d.add(&schema, "id", FieldValue::Int(i as i64)).unwrap();
            d.add(&schema, "body", FieldValue::Str(body.join(" ")))
                .unwrap();
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        drop(w);
        let index = Index::open(tmp.path()).unwrap();
        let seg = &index.segments()[0];
        let blocks = seg.meta().stored_blocks;
        assert!(blocks > 30, "{blocks} stored blocks: too few for the test");
        let windowed: Vec<Vec<(u32, u64, u64)>> = [1u32, 2, 3, 8, 1000]
            .iter()
            .map(|&win| {
                (0..seg.doc_count())
                    .map(|d| seg.stored_block_windowed(d, win).unwrap())
                    .collect()
            })
            .collect();
        let whole = seg.stored_block_index().unwrap();
        for d in 0..seg.doc_count() {
            let want = whole.block_range(whole.block_of(d).unwrap()).unwrap();
            for (w, got) in windowed.iter().enumerate() {
                assert_eq!(got[d as usize], want, "doc {d}, window set {w}");
            }
        }
        assert!(seg.stored_block_windowed(seg.doc_count(), 3).is_err());
        // The public paths agree with each other after the lookup switched to the whole index.
        let docs = [0u32, 7, 750, 1499, 7];
        let batch = seg.stored_docs(&docs).unwrap();
        for (d, got) in docs.iter().zip(batch) {
            assert_eq!(got["id"].as_i64(), Some(i64::from(*d)));
            assert_eq!(seg.stored_fields(*d).unwrap(), got);
        }
    }
}
