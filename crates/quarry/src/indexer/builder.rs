//! The in-memory segment of one indexing thread: one hash lookup per token straight into the
//! term's postings streams, delta-coded varints in a shared byte arena.
use std::sync::{Arc, OnceLock};

use quarry_store::Directory;

use super::byte_arena::{ByteArena, Varints};
use super::segment_writer::{SegmentFileWriter, StoredFile, STORED_SPILL_BYTES};
use super::term_table::{Probe, TermTable};
use crate::analysis::Analyzer;
use crate::codec::columns::{self, ColumnsWriter};
use crate::codec::format;
use crate::codec::meta::SegmentMeta;
use crate::codec::norms::length_to_norm;
use crate::codec::stored::{encode_doc, StoredWriter};
use crate::codec::vectors::VectorsWriter;
use crate::document::{Document, FieldValue};
use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

#[derive(Default)]
struct FieldBuilder {
    terms: TermTable,
    /// Documents with at least one term.
    doc_count: u32,
    /// Terms seen in the current document.
    touched: Vec<u32>,
    /// Tokens of the text being added, looked up once all are known (see [`FieldBuilder::drain`]).
    pending: Vec<Probe>,
    /// The bytes of the pending tokens too long to be held in their probe.
    long: Vec<u8>,
    /// Next position in the current document.
    position: u32,
    /// Text fields with [`crate::pairs`]: the pair terms of the field, as a field of their own.
    pairs: Option<Box<FieldBuilder>>,
    /// The last frequent word of the current document and its position.
    prev_word: Option<(u8, u32)>,
}

/// The frequent words of [`crate::pairs`] as probes, and the probe of each pair: telling a
/// frequent word and finding its pair costs no hashing beyond the token's own.
struct PairProbes {
    /// Open addressing on the probe's hash: `(probe key, word index + 1)`; 0 is empty.
    table: Vec<(u128, u8)>,
    /// `pairs[a * WORDS.len() + b]`: the probe of the pair term `a b`.
    pairs: Vec<Probe>,
}

const PAIR_TABLE: usize = 256;

impl PairProbes {
    fn get() -> &'static PairProbes {
        static P: OnceLock<PairProbes> = OnceLock::new();
        P.get_or_init(|| {
            let words = crate::pairs::WORDS;
            let mut table = vec![(0u128, 0u8); PAIR_TABLE];
            for (i, w) in words.iter().enumerate() {
                let p = Probe::new(w.as_bytes());
                let mut at = p.hash() as usize % PAIR_TABLE;
                while table[at].1 != 0 {
                    at = (at + 1) % PAIR_TABLE;
                }
                table[at] = (p.key(), i as u8 + 1);
            }
            let pairs = words
                .iter()
                .flat_map(|a| words.iter().map(move |b| (a, b)))
                .map(|(a, b)| Probe::new(crate::pairs::pair_term(a, b).as_bytes()))
                .collect();
            PairProbes { table, pairs }
        })
    }

    /// The index of `probe`'s word in the list, if it is a frequent word.
    #[inline]
    fn word(&self, probe: &Probe) -> Option<u8> {
        if probe.is_long() {
            return None;
        }
        let mut at = probe.hash() as usize % PAIR_TABLE;
        loop {
            let (key, w) = self.table[at];
            if w == 0 {
                return None;
            }
            if key == probe.key() {
                return Some(w - 1);
            }
            at = (at + 1) % PAIR_TABLE;
        }
    }

    #[inline]
    fn pair(&self, a: u8, b: u8) -> &Probe {
        &self.pairs[a as usize * crate::pairs::WORDS.len() + b as usize]
    }
}

/// Accumulates documents until flushed into an immutable segment.
pub struct SegmentBuilder {
    dir: Arc<dyn Directory>,
    name: String,
    /// The segment's stored fields file, written out as blocks fill (created with the first).
    stored_file: Option<StoredFile>,
    /// Writing stored blocks out failed: reported by [`flush`](Self::flush).
    stored_error: Option<Error>,
    schema: Schema,
    analyzers: Vec<Option<Arc<dyn Analyzer>>>,
    arena: ByteArena,
    fields: Vec<FieldBuilder>,
    norms: Vec<Vec<u8>>,
    stored: StoredWriter,
    doc_count: u32,
    seq_runs: Vec<(u32, u64)>,
    last_seq: Option<u64>,
    buf: Vec<u8>,
    int_buf: String,
    columns: ColumnsWriter,
    vectors: VectorsWriter,
}

impl SegmentBuilder {
    /// A builder for the segment `name` in `dir`.
    pub fn new(schema: &Schema, dir: Arc<dyn Directory>, name: String) -> Self {
        let n = schema.fields().len();
        Self {
            dir,
            name,
            stored_file: None,
            stored_error: None,
            schema: schema.clone(),
            analyzers: (0..n as u32).map(|f| schema.analyzer(f).cloned()).collect(),
            arena: ByteArena::new(),
            fields: schema
                .fields()
                .iter()
                .map(|e| FieldBuilder {
                    pairs: e.has_pairs().then(Default::default),
                    ..Default::default()
                })
                .collect(),
            norms: vec![Vec::new(); n],
            stored: StoredWriter::new(format::begin(format::KIND_STORED)),
            doc_count: 0,
            seq_runs: Vec::new(),
            last_seq: None,
            buf: Vec::new(),
            int_buf: String::new(),
            columns: new_columns(schema),
            vectors: VectorsWriter::new(schema),
        }
    }

    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// The name of the segment this builder writes.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the postings arena is close to the most it can address: flush now.
    pub fn nearly_full(&self) -> bool {
        self.arena.nearly_full()
    }

    /// Approximate bytes held, for the RAM budget.
    pub fn mem_bytes(&self) -> usize {
        let fields: usize = self
            .fields
            .iter()
            .map(|f| {
                f.terms.mem_bytes()
                    + f.touched.capacity() * 4
                    + f.pairs
                        .as_ref()
                        .map_or(0, |p| p.terms.mem_bytes() + p.touched.capacity() * 4)
            })
            .sum();
        let norms: usize = self.norms.iter().map(|n| n.capacity()).sum();
        self.arena.mem_bytes()
            + fields
            + norms
            + self.stored.mem_bytes()
            + self.columns.mem_bytes()
            + self.vectors.mem_bytes()
    }

    /// Adds a document; `seq` is its position in the order documents were given to the writer.
    pub fn add(&mut self, seq: u64, doc: &Document) {
        let d = self.doc_count;
        if self.last_seq.map(|s| s + 1) != Some(seq) {
            self.seq_runs.push((d, seq));
        }
        self.last_seq = Some(seq);
        for (f, value) in &doc.values {
            let f = *f as usize;
            let fb = &mut self.fields[f];
            let arena = &mut self.arena;
            let ft = self.schema.fields()[f].field_type;
            add_column_value(&mut self.columns, &self.schema, d, f as u32, value);
            if ft == FieldType::Date {
                // Indexed as the exact term of its milliseconds; valid since `Document` checked it.
                let ms = crate::document::date_millis(&self.schema, f as u32, value).unwrap_or(0);
                use std::fmt::Write;
                self.int_buf.clear();
                let _ = write!(self.int_buf, "{ms}");
                fb.add_token(arena, d, &self.int_buf, false);
                continue;
            }
            match (value, ft) {
                (FieldValue::Vector(v), _) => self.vectors.add(f as u32, d, v),
                (FieldValue::Str(text), FieldType::Text) => {
                    let analyzer = self.analyzers[f]
                        .as_ref()
                        .expect("text fields have analyzers");
                    analyzer.for_each_token(text, &mut |tok| fb.queue(tok));
                    fb.drain(arena, d);
                }
                (FieldValue::Str(s), _) => fb.add_token(arena, d, s, false),
                (FieldValue::Int(i), _) => {
                    use std::fmt::Write;
                    self.int_buf.clear();
                    let _ = write!(self.int_buf, "{i}");
                    fb.add_token(arena, d, &self.int_buf, false);
                }
                (FieldValue::Bool(b), _) => {
                    fb.add_token(arena, d, if *b { "true" } else { "false" }, false)
                }
                (FieldValue::Float(x), _) => {
                    use std::fmt::Write;
                    self.int_buf.clear();
                    let _ = write!(self.int_buf, "{x}");
                    fb.add_token(arena, d, &self.int_buf, false);
                }
            }
        }
        for (f, passages) in &doc.passages {
            for (p, v) in passages {
                self.vectors.add_passage(*f, d, v, Some(*p));
            }
        }
        for (f, fb) in self.fields.iter_mut().enumerate() {
            let len = fb.position;
            if fb.touched.is_empty() && len == 0 {
                continue;
            }
            fb.end_doc(&mut self.arena, d);
            if let Some(pb) = fb.pairs.as_deref_mut() {
                if !pb.touched.is_empty() {
                    pb.end_doc(&mut self.arena, d);
                }
                fb.prev_word = None;
            }
            fb.position = 0;
            if self.schema.fields()[f].has_norms() {
                let norms = &mut self.norms[f];
                norms.resize(d as usize, 0);
                norms.push(length_to_norm(len));
            }
        }
        encode_doc(&self.schema, doc, &mut self.buf);
        self.stored.add(&self.buf);
        if self.stored.pending_bytes() >= STORED_SPILL_BYTES && self.stored_error.is_none() {
            if let Err(e) = self.write_stored() {
                self.stored_error = Some(e);
            }
        }
        self.doc_count += 1;
    }

    /// Writes the finished stored blocks out to the segment's stored fields file.
    fn write_stored(&mut self) -> Result<()> {
        let file = match &mut self.stored_file {
            Some(f) => f,
            None => self
                .stored_file
                .insert(StoredFile::create(&*self.dir, &self.name)?),
        };
        file.write_pending(&mut self.stored)
    }

    /// Writes the segment's files.
    pub fn flush(self) -> Result<SegmentMeta> {
        if let Some(e) = self.stored_error {
            return Err(e);
        }
        let (dir, name) = (&*self.dir, self.name.as_str());
        let mut w = SegmentFileWriter::new(&self.schema, dir, name)?;
        let mut bufs = TermBufs::default();
        let mut norms_all = self.norms;
        for (f, fb) in self.fields.iter().enumerate() {
            let entry = &self.schema.fields()[f];
            let norms = entry.has_norms().then(|| {
                let n = &mut norms_all[f];
                n.resize(self.doc_count as usize, 0);
                &n[..]
            });
            if let Some(n) = norms {
                w.set_norms(f as u32, n);
            }
            w.begin_field(f as u32);
            fb.write_terms(&self.arena, &mut w, entry.has_positions(), norms, &mut bufs)?;
            w.end_field(fb.doc_count)?;
            if let Some(pb) = fb.pairs.as_deref() {
                w.begin_pairs(f as u32);
                pb.write_terms(&self.arena, &mut w, true, norms, &mut bufs)?;
                w.end_field(pb.doc_count)?;
            }
        }
        w.finish(
            dir,
            name,
            self.doc_count,
            self.seq_runs,
            self.stored,
            self.stored_file,
            self.columns,
            self.vectors,
            Vec::new(),
        )
    }
}

/// Adds `value` of field `f` of document `doc` to its column, if the field keeps one.
#[inline]
pub(crate) fn add_column_value(
    columns: &mut ColumnsWriter,
    schema: &Schema,
    doc: u32,
    f: u32,
    value: &FieldValue,
) {
    if !columns.has(f) {
        return;
    }
    if schema.field(f).field_type == FieldType::Date {
        // Valid: `Document` checked it.
        let ms = crate::document::date_millis(schema, f, value).unwrap_or(0);
        columns.add(f, doc, columns::from_i64(ms));
        return;
    }
    match value {
        FieldValue::Str(s) => columns.add_term(f, doc, s.as_bytes()),
        FieldValue::Int(i) => columns.add(f, doc, columns::from_i64(*i)),
        FieldValue::Float(x) => columns.add(f, doc, columns::from_f64(*x)),
        FieldValue::Bool(b) => columns.add(f, doc, u64::from(*b)),
        FieldValue::Vector(_) => {}
    }
}

/// A columns writer for the fields of `schema` that keep a column.
pub(crate) fn new_columns(schema: &Schema) -> ColumnsWriter {
    ColumnsWriter::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                f.has_column()
                    .then(|| columns::kind_of(f.field_type))
                    .flatten()
            })
            .collect(),
    )
}

/// Scratch space for writing out terms.
#[derive(Default)]
struct TermBufs {
    docs: Vec<u32>,
    freqs: Vec<u32>,
    positions: Vec<u32>,
    bytes: Vec<u8>,
}

impl FieldBuilder {
    /// Ends document `doc` for the terms it touched: writes each one's doc delta and freq.
    fn end_doc(&mut self, arena: &mut ByteArena, doc: u32) {
        self.doc_count += 1;
        for &t in &self.touched {
            let st = self.terms.state_mut(t);
            let delta = doc - st.written_doc;
            st.written_doc = doc;
            if st.freq == 1 {
                arena.push_u32(&mut st.docs, delta << 1 | 1);
            } else {
                arena.push_u32(&mut st.docs, delta << 1);
                arena.push_u32(&mut st.docs, st.freq);
            }
        }
        self.touched.clear();
    }

    /// Writes the terms in byte order with their postings (and positions) to `w`'s current
    /// dictionary.
    fn write_terms(
        &self,
        arena: &ByteArena,
        w: &mut SegmentFileWriter,
        with_positions: bool,
        norms: Option<&[u8]>,
        b: &mut TermBufs,
    ) -> Result<()> {
        for (term, id) in self.terms.sorted() {
            let st = self.terms.state(id);
            b.bytes.clear();
            arena.read(&st.docs, &mut b.bytes);
            b.docs.clear();
            b.freqs.clear();
            let mut doc = 0u32;
            let mut it = Varints::new(&b.bytes);
            while let Some(v) = it.next() {
                doc += v >> 1;
                b.docs.push(doc);
                b.freqs.push(if v & 1 == 1 {
                    1
                } else {
                    it.next().unwrap_or(1)
                });
            }
            b.positions.clear();
            if with_positions {
                b.bytes.clear();
                arena.read(&st.positions, &mut b.bytes);
                let mut it = Varints::new(&b.bytes);
                for &f in &b.freqs {
                    let mut p = 0u32;
                    for _ in 0..f {
                        p += it.next().unwrap_or(0);
                        b.positions.push(p);
                    }
                }
            }
            w.add_term(term, &b.docs, &b.freqs, &b.positions, norms)?;
        }
        Ok(())
    }

    /// Queues a token of a text: its slot in the term table is fetched from memory while the rest
    /// of the text is tokenized.
    #[inline]
    fn queue(&mut self, tok: &str) {
        let probe = Probe::new(tok.as_bytes());
        self.terms.prefetch_slot(&probe);
        if probe.is_long() {
            self.long.extend_from_slice(tok.as_bytes());
        }
        self.pending.push(probe);
    }

    /// Adds the queued tokens in order. The term state of the token `AHEAD` places on is
    /// fetched while this one is added: with the dictionary far larger than the caches, a token's
    /// two cache misses (slot, state) then overlap with other work instead of stalling it.
    fn drain(&mut self, arena: &mut ByteArena, doc: u32) {
        const AHEAD: usize = 8;
        let pending = std::mem::take(&mut self.pending);
        let long = std::mem::take(&mut self.long);
        let mut at = 0;
        let pair_probes = self.pairs.is_some().then(PairProbes::get);
        for (i, probe) in pending.iter().enumerate() {
            if let Some(next) = pending.get(i + AHEAD) {
                self.terms.prefetch_state(next);
            }
            let key = if probe.is_long() {
                let k = &long[at..at + probe.len()];
                at += probe.len();
                k
            } else {
                &[]
            };
            let pos = self.position;
            self.add_probe(arena, doc, probe, key, true);
            if let (Some(pb), Some(probes)) = (self.pairs.as_deref_mut(), pair_probes) {
                if let Some(w) = probes.word(probe) {
                    if let Some((prev, prev_pos)) = self.prev_word {
                        if prev_pos + 1 == pos {
                            pb.position = prev_pos;
                            pb.add_probe(arena, doc, probes.pair(prev, w), &[], true);
                        }
                    }
                    self.prev_word = Some((w, pos));
                }
            }
        }
        self.pending = pending;
        self.pending.clear();
        self.long = long;
        self.long.clear();
    }

    #[inline]
    fn add_token(&mut self, arena: &mut ByteArena, doc: u32, tok: &str, positions: bool) {
        self.add_probe(
            arena,
            doc,
            &Probe::new(tok.as_bytes()),
            tok.as_bytes(),
            positions,
        );
    }

    #[inline]
    fn add_probe(
        &mut self,
        arena: &mut ByteArena,
        doc: u32,
        probe: &Probe,
        key: &[u8],
        positions: bool,
    ) {
        let id = self.terms.get_or_insert_probe(probe, key, || {
            let docs = arena.stream();
            let pos = if positions { arena.stream() } else { docs };
            (docs, pos)
        });
        let st = self.terms.state_mut(id);
        if st.last_doc != doc {
            st.last_doc = doc;
            st.freq = 0;
            st.last_pos = 0;
            self.touched.push(id);
        }
        // An exact (non-text) field indexes documents only, as Lucene's `StringField` and
        // points do: a value given twice in one document still has frequency 1.
        if positions || st.freq == 0 {
            st.freq += 1;
        }
        if positions {
            arena.push_u32(&mut st.positions, self.position - st.last_pos);
            st.last_pos = self.position;
        }
        self.position += 1;
    }
}
