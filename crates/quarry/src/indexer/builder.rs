//! The in-memory segment of one indexing thread: one hash lookup per token straight into the
//! term's postings streams, which live in a shared integer arena.
use std::collections::HashMap;
use std::sync::Arc;

use quarry_store::Directory;
use rustc_hash::FxBuildHasher;

use super::arena::{IntArena, Stream};
use super::segment_writer::SegmentFileWriter;
use crate::analysis::Analyzer;
use crate::codec::format;
use crate::codec::meta::SegmentMeta;
use crate::codec::norms::length_to_norm;
use crate::codec::stored::{encode_doc, StoredWriter};
use crate::document::{Document, FieldValue};
use crate::schema::{FieldType, Schema};
use crate::Result;

struct TermState {
    last_doc: u32,
    freq: u32,
    docs: Stream,
    positions: Stream,
}

#[derive(Default)]
struct FieldBuilder {
    terms: HashMap<Box<str>, u32, FxBuildHasher>,
    states: Vec<TermState>,
    key_bytes: usize,
    /// Documents with at least one term.
    doc_count: u32,
    /// Terms seen in the current document.
    touched: Vec<u32>,
    /// Next position in the current document.
    position: u32,
}

/// Accumulates documents until flushed into an immutable segment.
pub struct SegmentBuilder {
    schema: Schema,
    analyzers: Vec<Option<Arc<dyn Analyzer>>>,
    arena: IntArena,
    fields: Vec<FieldBuilder>,
    norms: Vec<Vec<u8>>,
    stored: StoredWriter,
    doc_count: u32,
    seq_runs: Vec<(u32, u64)>,
    last_seq: Option<u64>,
    buf: Vec<u8>,
    int_buf: String,
}

impl SegmentBuilder {
    pub fn new(schema: &Schema) -> Self {
        let n = schema.fields().len();
        Self {
            schema: schema.clone(),
            analyzers: (0..n as u32).map(|f| schema.analyzer(f).cloned()).collect(),
            arena: IntArena::new(),
            fields: (0..n).map(|_| FieldBuilder::default()).collect(),
            norms: vec![Vec::new(); n],
            stored: StoredWriter::new(format::begin(format::KIND_STORED)),
            doc_count: 0,
            seq_runs: Vec::new(),
            last_seq: None,
            buf: Vec::new(),
            int_buf: String::new(),
        }
    }

    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// Approximate bytes held, for the RAM budget.
    pub fn mem_bytes(&self) -> usize {
        let fields: usize = self
            .fields
            .iter()
            .map(|f| {
                f.key_bytes
                    + f.terms.capacity() * 32
                    + f.states.capacity() * std::mem::size_of::<TermState>()
            })
            .sum();
        let norms: usize = self.norms.iter().map(|n| n.capacity()).sum();
        self.arena.mem_bytes() + fields + norms + self.stored.mem_bytes()
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
            match (value, self.schema.fields()[f].field_type) {
                (FieldValue::Str(text), FieldType::Text) => {
                    let analyzer = self.analyzers[f]
                        .as_ref()
                        .expect("text fields have analyzers");
                    analyzer.for_each_token(text, &mut |tok| fb.add_token(arena, d, tok, true));
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
        for (f, fb) in self.fields.iter_mut().enumerate() {
            let len = fb.position;
            if fb.touched.is_empty() && len == 0 {
                continue;
            }
            fb.doc_count += 1;
            for &t in &fb.touched {
                let st = &mut fb.states[t as usize];
                self.arena.push(&mut st.docs, d);
                self.arena.push(&mut st.docs, st.freq);
            }
            fb.touched.clear();
            fb.position = 0;
            if self.schema.fields()[f].has_norms() {
                let norms = &mut self.norms[f];
                norms.resize(d as usize, 0);
                norms.push(length_to_norm(len));
            }
        }
        encode_doc(&self.schema, doc, &mut self.buf);
        self.stored.add(&self.buf);
        self.doc_count += 1;
    }

    /// Writes the segment's files into `dir` under `name`.
    pub fn flush(self, dir: &dyn Directory, name: &str) -> Result<SegmentMeta> {
        let mut w = SegmentFileWriter::new(&self.schema);
        let (mut docs, mut freqs, mut pairs, mut positions) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
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
            let mut sorted: Vec<(&str, u32)> = fb.terms.iter().map(|(k, &v)| (&**k, v)).collect();
            sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            for (term, id) in sorted {
                let st = &fb.states[id as usize];
                pairs.clear();
                self.arena.read(&st.docs, &mut pairs);
                docs.clear();
                freqs.clear();
                for p in pairs.chunks_exact(2) {
                    docs.push(p[0]);
                    freqs.push(p[1]);
                }
                positions.clear();
                if entry.has_positions() {
                    self.arena.read(&st.positions, &mut positions);
                }
                w.add_term(term.as_bytes(), &docs, &freqs, &positions, norms)?;
            }
            w.end_field(fb.doc_count)?;
        }
        w.finish(dir, name, self.doc_count, self.seq_runs, self.stored)
    }
}

impl FieldBuilder {
    #[inline]
    fn add_token(&mut self, arena: &mut IntArena, doc: u32, tok: &str, positions: bool) {
        let id = match self.terms.get(tok) {
            Some(&id) => id,
            None => {
                let id = self.states.len() as u32;
                self.key_bytes += tok.len();
                self.terms.insert(tok.into(), id);
                let docs = arena.stream();
                let positions = if positions { arena.stream() } else { docs };
                self.states.push(TermState {
                    last_doc: u32::MAX,
                    freq: 0,
                    docs,
                    positions,
                });
                id
            }
        };
        let st = &mut self.states[id as usize];
        if st.last_doc != doc {
            st.last_doc = doc;
            st.freq = 0;
            self.touched.push(id);
        }
        st.freq += 1;
        if positions {
            arena.push(&mut st.positions, self.position);
        }
        self.position += 1;
    }
}
