//! `.vec` (format v9, passages v10): each vector field's vectors, their quantized copy and their
//! HNSW graph, read in place for k-nearest-neighbour search. Spec: `docs/format/vectors.md`.
//!
//! Per field with at least one vector in the segment, in the file's body (each piece at a
//! multiple of 64 bytes, so that a mapped file hands the SIMD kernels aligned `f32`s):
//! - the vectors: `count × dims` f32 LE, by ordinal (ordinals follow document order; `cosine`
//!   fields hold them scaled to unit length);
//! - the documents: `count` u32 LE, ordinal → document, ascending (v10: non-decreasing when a
//!   document's text was embedded as several passages, each its own vector); absent when
//!   ordinal = document;
//! - the passages (v10, when some vector is one): `count × 3` u32 LE, per ordinal the passage
//!   number in its document and the byte span of its text in the source text
//!   ([`Passage`]; [`NO_PASSAGE`] for a vector a document gave itself);
//! - `int8` fields: `count × dims` bytes (values 0..=127, [`crate::vector::quantize`]) and
//!   `count` f32 LE corrections, with the interval in the meta;
//! - `hnsw` fields: per graph level its nodes (levels above 0: u32 LE, ascending), its
//!   `nodes + 1` neighbour offsets and the neighbours (u32 LE ordinals), searched in place.
//!
//! Where each piece lies is in the segment meta ([`VectorMeta`]); the bytes are covered by the
//! file's chunk checksums, verified when a field is first searched, and the graph's structure
//! is checked then too ([`GraphView::validate`]).
use quarry_codecs::cast;
use quarry_store::Bytes;
use serde::{Deserialize, Serialize};

use super::columns::Span;
use crate::schema::{ElementType, Schema, VectorIndex, VectorOptions};
use crate::vector::hnsw::{GraphView, HnswBuilder, HnswGraph, HnswParams, LevelView};
use crate::vector::quantize::{QuantizedVectors, ScalarQuantizer};
use crate::vector::{normalize, FlatVectors, Passage, Similarity};
use crate::{Error, Result};

/// The passage number of a vector that is not a passage (a document gave it), in the
/// passages piece.
pub const NO_PASSAGE: u32 = u32::MAX;

/// Pieces of the file start at multiples of this (a cache line; a mapped file is page-aligned).
pub const ALIGN: usize = 64;

/// One vector field in a segment (part of the segment meta, format v9).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorMeta {
    pub dims: u32,
    pub similarity: Similarity,
    /// Vectors (the number of ordinals): documents with a vector, or (v10) their passages.
    pub count: u32,
    /// `count × dims` f32 LE.
    pub values_at: Span,
    /// `count` u32 LE, ordinal → document; absent when ordinal = document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs_at: Option<Span>,
    /// `count × 3` u32 LE, per ordinal its passage (number, start, end) (format v10); absent
    /// when no vector is a passage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passages_at: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized: Option<QuantizedMeta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphMeta>,
}

/// The int8 copy: the quantizer's interval, the bytes and the corrections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantizedMeta {
    pub lo: f32,
    pub hi: f32,
    pub bytes_at: Span,
    pub corrections_at: Span,
}

/// The HNSW graph: its parameters, entry node and levels (bottom first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphMeta {
    pub m: u32,
    pub ef_construction: u32,
    pub entry: u32,
    pub levels: Vec<LevelMeta>,
}

/// One graph level: its node count, nodes (absent on level 0), offsets and neighbours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelMeta {
    pub nodes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_at: Option<Span>,
    pub offsets_at: Span,
    pub neighbors_at: Span,
}

/// One field's vectors while a segment is built.
struct FieldVectors {
    options: VectorOptions,
    docs: Vec<u32>,
    values: Vec<f32>,
    /// Per vector (number, start, end), [`NO_PASSAGE`] for a document's own vector.
    passages: Vec<[u32; 3]>,
}

/// Collects the vectors of a segment being built (a flush or a merge) and encodes them with
/// their quantized copies and graphs.
pub struct VectorsWriter {
    fields: Vec<Option<FieldVectors>>,
}

impl VectorsWriter {
    /// A writer for the vector fields of `schema`.
    pub fn new(schema: &Schema) -> Self {
        let fields = schema
            .fields()
            .iter()
            .map(|f| {
                f.vector_options().map(|options| FieldVectors {
                    options,
                    docs: Vec::new(),
                    values: Vec::new(),
                    passages: Vec::new(),
                })
            })
            .collect();
        Self { fields }
    }

    /// Whether the schema has a vector field.
    pub fn has_fields(&self) -> bool {
        self.fields.iter().any(|f| f.is_some())
    }

    /// Adds the vector of `doc` for `field` as a document gave it (scaled to unit length here
    /// for `cosine`); `Document` checked its length. Documents in any order.
    pub fn add(&mut self, field: u32, doc: u32, v: &[f32]) {
        self.add_passage(field, doc, v, None);
    }

    /// Adds the vector of one passage of `doc`'s text (None: the document's own vector), as
    /// [`add`](Self::add). A document's passages are added in order, one after the other.
    pub fn add_passage(&mut self, field: u32, doc: u32, v: &[f32], passage: Option<Passage>) {
        let Some(f) = self.fields.get_mut(field as usize).and_then(|f| f.as_mut()) else {
            return;
        };
        let start = f.values.len();
        f.values.extend_from_slice(v);
        if f.options.similarity.normalizes() {
            normalize(&mut f.values[start..]);
        }
        f.docs.push(doc);
        f.passages.push(encode_passage(passage));
    }

    /// Adds a vector as a segment holds it (already scaled), with its passage: a merge.
    pub fn add_stored(&mut self, field: u32, doc: u32, v: &[f32], passage: Option<Passage>) {
        if let Some(f) = self.fields.get_mut(field as usize).and_then(|f| f.as_mut()) {
            f.values.extend_from_slice(v);
            f.docs.push(doc);
            f.passages.push(encode_passage(passage));
        }
    }

    /// Approximate bytes held, for the RAM budget.
    pub fn mem_bytes(&self) -> usize {
        self.fields
            .iter()
            .flatten()
            .map(|f| f.docs.capacity() * 4 + f.values.capacity() * 4 + f.passages.capacity() * 12)
            .sum()
    }

    /// Encodes every field into `out` (the `.vec` file after its header) for a segment of
    /// `doc_count` documents, building each `hnsw` field's graph; `seeds` may give a field a
    /// graph to start from (a merge: [`GraphSeed`]). None for a field without vectors here.
    pub fn write(
        self,
        doc_count: u32,
        out: &mut Vec<u8>,
        mut seeds: Vec<Option<GraphSeed>>,
    ) -> Vec<Option<VectorMeta>> {
        seeds.resize_with(self.fields.len(), || None);
        self.fields
            .into_iter()
            .zip(seeds)
            .map(|(f, seed)| {
                let f = f?;
                (!f.docs.is_empty()).then(|| write_field(f, doc_count, out, seed))
            })
            .collect()
    }
}

/// A graph a merged field's graph starts from: the graph of one source segment and, per node
/// of it, its ordinal in the merged field (None when its document was deleted).
pub struct GraphSeed {
    pub graph: HnswGraph,
    pub map: Vec<Option<u32>>,
}

/// Appends `bytes` at the next multiple of [`ALIGN`] and returns where they lie.
fn append(out: &mut Vec<u8>, bytes: &[u8]) -> Span {
    while !out.len().is_multiple_of(ALIGN) {
        out.push(0);
    }
    let at = out.len() as u64;
    out.extend_from_slice(bytes);
    (at, bytes.len() as u64)
}

fn le_f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn le_u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn encode_passage(p: Option<Passage>) -> [u32; 3] {
    p.map_or([NO_PASSAGE, 0, 0], |p| [p.index, p.start, p.end])
}

fn write_field(
    mut f: FieldVectors,
    doc_count: u32,
    out: &mut Vec<u8>,
    seed: Option<GraphSeed>,
) -> VectorMeta {
    let dims = f.options.dims as usize;
    // Ordinals in document order (an index-sorted merge adds documents permuted); the sort is
    // stable, so a document's passages stay in order.
    if f.docs.windows(2).any(|w| w[0] > w[1]) {
        let mut order: Vec<usize> = (0..f.docs.len()).collect();
        order.sort_by_key(|&i| f.docs[i]);
        let mut values = Vec::with_capacity(f.values.len());
        for &i in &order {
            values.extend_from_slice(&f.values[i * dims..(i + 1) * dims]);
        }
        f.docs = order.iter().map(|&i| f.docs[i]).collect();
        f.passages = order.iter().map(|&i| f.passages[i]).collect();
        f.values = values;
    }
    let sim = f.options.similarity;
    let flat = FlatVectors::new(&f.values, dims).expect("whole vectors");
    let values_at = append(out, &le_f32s(&f.values));
    let identity = f.docs.len() == doc_count as usize && f.docs.windows(2).all(|w| w[0] < w[1]);
    let docs_at = (!identity).then(|| append(out, &le_u32s(&f.docs)));
    let passages_at = f.passages.iter().any(|p| p[0] != NO_PASSAGE).then(|| {
        let flat: Vec<u32> = f.passages.iter().flatten().copied().collect();
        append(out, &le_u32s(&flat))
    });
    let quantized = (f.options.element_type == ElementType::Int8).then(|| {
        let q = QuantizedVectors::build(&flat, sim);
        let (lo, hi) = q.quantizer().bounds();
        let mut bytes = Vec::with_capacity(f.values.len());
        let mut corrections = Vec::with_capacity(f.docs.len());
        for ord in 0..q.len() as u32 {
            let (b, c) = q.vector(ord);
            bytes.extend(b.iter().map(|&x| x as u8));
            corrections.push(c);
        }
        QuantizedMeta {
            lo,
            hi,
            bytes_at: append(out, &bytes),
            corrections_at: append(out, &le_f32s(&corrections)),
        }
    });
    let graph = match f.options.index {
        VectorIndex::Flat => None,
        VectorIndex::Hnsw { m, ef_construction } => {
            let params = HnswParams {
                m: m as usize,
                ef_construction: ef_construction as usize,
                ..HnswParams::default()
            };
            let builder = match seed {
                Some(s) => HnswBuilder::with_initial_graph(&flat, sim, params, &s.graph, &s.map),
                None => HnswBuilder::new(&flat, sim, params),
            };
            let g = builder.build();
            let view = g.view();
            let levels = view
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| LevelMeta {
                    nodes: if i == 0 {
                        g.len() as u32
                    } else {
                        l.nodes.len() as u32
                    },
                    nodes_at: (i > 0).then(|| append(out, &le_u32s(l.nodes))),
                    offsets_at: append(out, &le_u32s(l.offsets)),
                    neighbors_at: append(out, &le_u32s(l.neighbors)),
                })
                .collect();
            view.entry.map(|entry| GraphMeta {
                m,
                ef_construction,
                entry,
                levels,
            })
        }
    };
    VectorMeta {
        dims: dims as u32,
        similarity: sim,
        count: f.docs.len() as u32,
        values_at,
        docs_at,
        passages_at,
        quantized,
        graph,
    }
}

/// Little-endian numbers from the file: viewed in place when aligned (a mapped file), else a
/// decoded copy.
#[derive(Clone, Debug)]
enum Numbers<T> {
    Mapped(Bytes),
    Owned(Vec<T>),
}

impl Numbers<f32> {
    fn new(b: Bytes) -> Self {
        if cast::f32s(&b).is_some() {
            Numbers::Mapped(b)
        } else {
            Numbers::Owned(cast::f32s_copied(&b))
        }
    }
    #[inline]
    fn get(&self) -> &[f32] {
        match self {
            Numbers::Mapped(b) => cast::f32s(b).unwrap_or(&[]),
            Numbers::Owned(v) => v,
        }
    }
}

impl Numbers<u32> {
    fn new(b: Bytes) -> Self {
        if cast::u32s(&b).is_some() {
            Numbers::Mapped(b)
        } else {
            Numbers::Owned(cast::u32s_copied(&b))
        }
    }
    #[inline]
    fn get(&self) -> &[u32] {
        match self {
            Numbers::Mapped(b) => cast::u32s(b).unwrap_or(&[]),
            Numbers::Owned(v) => v,
        }
    }
}

/// The pieces of one field, as a segment reader hands them over (each read and verified).
pub struct FieldBytes {
    pub values: Bytes,
    pub docs: Option<Bytes>,
    /// The passages (format v10).
    pub passages: Option<Bytes>,
    /// The quantized bytes and corrections.
    pub quantized: Option<(Bytes, Bytes)>,
    /// Per level: nodes (None on level 0), offsets, neighbours.
    pub levels: Vec<(Option<Bytes>, Bytes, Bytes)>,
}

struct LevelNumbers {
    nodes: Option<Numbers<u32>>,
    offsets: Numbers<u32>,
    neighbors: Numbers<u32>,
}

/// One vector field of one segment, read in place and checked: what kNN search reads.
pub struct VectorField {
    meta: VectorMeta,
    values: Numbers<f32>,
    docs: Option<Numbers<u32>>,
    passages: Option<Numbers<u32>>,
    /// How many distinct documents have a vector.
    doc_count: u32,
    quantized: Option<(ScalarQuantizer, Bytes, Numbers<f32>)>,
    levels: Vec<LevelNumbers>,
}

impl std::fmt::Debug for VectorField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VectorField({} vectors)", self.meta.count)
    }
}

impl VectorField {
    /// Checks the pieces' sizes against the meta, the documents' order and the graph's
    /// structure; `file` names the `.vec` file in errors.
    pub fn open(file: &str, meta: &VectorMeta, doc_count: u32, b: FieldBytes) -> Result<Self> {
        let bad = |what: String| Error::corrupt(file, what);
        let (n, dims) = (meta.count as u64, u64::from(meta.dims));
        let several = meta.passages_at.is_some();
        if meta.dims == 0
            || (!several && meta.count > doc_count)
            || b.values.len() as u64 != n * dims * 4
        {
            return Err(bad(format!(
                "{} bytes of vectors for {n} vectors of {dims} values",
                b.values.len()
            )));
        }
        let docs = match b.docs {
            Some(d) => {
                let d = Numbers::<u32>::new(d);
                let v = d.get();
                // Passages (v10) give a document several consecutive ordinals.
                let out_of_order = if several {
                    v.windows(2).any(|w| w[0] > w[1])
                } else {
                    v.windows(2).any(|w| w[0] >= w[1])
                };
                if v.len() as u64 != n || out_of_order || v.last().is_some_and(|&x| x >= doc_count)
                {
                    return Err(bad(
                        "vector documents are not ascending documents of the segment".into(),
                    ));
                }
                Some(d)
            }
            None if meta.count == doc_count => None,
            None => return Err(bad("vector documents missing".into())),
        };
        let passages = match (meta.passages_at, b.passages) {
            (Some(_), Some(p)) => Some(Numbers::<u32>::new(p)),
            (None, None) => None,
            _ => return Err(bad("vector passages and their meta disagree".into())),
        };
        let doc_of = |ord: usize| docs.as_ref().map_or(ord as u32, |d| d.get()[ord]);
        if let Some(p) = &passages {
            let p = p.get();
            if p.len() as u64 != n * 3 {
                return Err(bad(format!(
                    "{} passage entries for {n} vectors",
                    p.len() / 3
                )));
            }
            // A document's vectors: its passages numbered 0, 1, ... in order, or its own vector
            // alone; every span forward.
            for (ord, e) in p.chunks_exact(3).enumerate() {
                let first = ord == 0 || doc_of(ord - 1) != doc_of(ord);
                let ok = match (e[0], first) {
                    (NO_PASSAGE, _) => {
                        first
                            && e[1] == 0
                            && e[2] == 0
                            && (ord + 1 == p.len() / 3 || doc_of(ord + 1) != doc_of(ord))
                    }
                    (0, true) => e[1] <= e[2],
                    (i, false) => {
                        p[(ord - 1) * 3] != NO_PASSAGE && i == p[(ord - 1) * 3] + 1 && e[1] <= e[2]
                    }
                    _ => false,
                };
                if !ok {
                    return Err(bad(format!(
                        "vector {ord} (document {}): passage {:?} out of order",
                        doc_of(ord),
                        e
                    )));
                }
            }
        }
        let distinct = (0..n as usize)
            .filter(|&o| o == 0 || doc_of(o - 1) != doc_of(o))
            .count() as u32;
        let quantized = match (&meta.quantized, b.quantized) {
            (Some(q), Some((bytes, corr))) => {
                let quantizer = ScalarQuantizer::from_bounds(q.lo, q.hi)
                    .ok_or_else(|| bad(format!("quantizer interval [{}, {}]", q.lo, q.hi)))?;
                let corr = Numbers::<f32>::new(corr);
                if bytes.len() as u64 != n * dims || corr.get().len() as u64 != n {
                    return Err(bad("quantized vectors do not match the vector count".into()));
                }
                Some((quantizer, bytes, corr))
            }
            (None, None) => None,
            _ => return Err(bad("quantized vectors and their meta disagree".into())),
        };
        let levels: Vec<LevelNumbers> = b
            .levels
            .into_iter()
            .map(|(nodes, offsets, neighbors)| LevelNumbers {
                nodes: nodes.map(Numbers::<u32>::new),
                offsets: Numbers::<u32>::new(offsets),
                neighbors: Numbers::<u32>::new(neighbors),
            })
            .collect();
        let field = VectorField {
            meta: meta.clone(),
            values: Numbers::<f32>::new(b.values),
            docs,
            passages,
            doc_count: distinct,
            quantized,
            levels,
        };
        if let Some(g) = field.graph() {
            g.validate()
                .map_err(|e| bad(format!("vector graph: {e}")))?;
            if g.len != meta.count as usize {
                return Err(bad("vector graph does not cover every vector".into()));
            }
        }
        Ok(field)
    }

    /// The field's meta in this segment.
    pub fn meta(&self) -> &VectorMeta {
        &self.meta
    }

    /// Every vector, by ordinal.
    pub fn vectors(&self) -> FlatVectors<'_> {
        FlatVectors::new(self.values.get(), self.meta.dims as usize).expect("sizes checked at open")
    }

    /// The number of vectors.
    pub fn len(&self) -> usize {
        self.meta.count as usize
    }

    /// Whether there is no vector.
    pub fn is_empty(&self) -> bool {
        self.meta.count == 0
    }

    /// The document of ordinal `ord`.
    #[inline]
    pub fn doc(&self, ord: u32) -> u32 {
        match &self.docs {
            Some(d) => d.get()[ord as usize],
            None => ord,
        }
    }

    /// The (first) ordinal of `doc`'s vectors, if it has one.
    pub fn ord(&self, doc: u32) -> Option<u32> {
        let r = self.ords(doc);
        (!r.is_empty()).then_some(r.start)
    }

    /// The ordinals of `doc`'s vectors: one, several passages (v10) or none.
    pub fn ords(&self, doc: u32) -> std::ops::Range<u32> {
        match &self.docs {
            Some(d) => {
                let d = d.get();
                let start = d.partition_point(|&x| x < doc);
                let end = start + d[start..].partition_point(|&x| x == doc);
                start as u32..end as u32
            }
            None if doc < self.meta.count => doc..doc + 1,
            None => 0..0,
        }
    }

    /// The passage of the document's text that ordinal `ord`'s vector was computed from (None
    /// for a vector the document gave itself).
    #[inline]
    pub fn passage(&self, ord: u32) -> Option<Passage> {
        let p = self.passages.as_ref()?.get();
        let e = &p[ord as usize * 3..ord as usize * 3 + 3];
        (e[0] != NO_PASSAGE).then_some(Passage {
            index: e[0],
            start: e[1],
            end: e[2],
        })
    }

    /// Whether some document has several vectors here (its passages): a search then collapses
    /// ordinals to documents.
    pub fn has_passages(&self) -> bool {
        self.passages.is_some() && self.meta.count > self.doc_count
    }

    /// How many documents have a vector.
    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// The graph, if the field has one here.
    pub fn graph(&self) -> Option<GraphView<'_>> {
        let g = self.meta.graph.as_ref()?;
        Some(GraphView {
            entry: Some(g.entry),
            len: self.meta.count as usize,
            levels: self
                .levels
                .iter()
                .map(|l| LevelView {
                    nodes: l.nodes.as_ref().map_or(&[][..], |n| n.get()),
                    offsets: l.offsets.get(),
                    neighbors: l.neighbors.get(),
                })
                .collect(),
        })
    }

    /// The quantizer, bytes and corrections of an `int8` field.
    pub fn quantized(&self) -> Option<(&ScalarQuantizer, &[i8], &[f32])> {
        self.quantized
            .as_ref()
            .map(|(q, b, c)| (q, cast::i8s(b), c.get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::FieldEntry;

    fn schema(element: ElementType, index: VectorIndex) -> Schema {
        let mut f = FieldEntry::vector("v", 8, Similarity::L2Norm);
        f.element_type = Some(element);
        f.index = Some(index);
        Schema::new(vec![f]).unwrap()
    }

    fn slice(out: &[u8], s: Span) -> Bytes {
        Bytes::from_vec(out[s.0 as usize..(s.0 + s.1) as usize].to_vec())
    }

    fn bytes_of(out: &[u8], m: &VectorMeta) -> FieldBytes {
        FieldBytes {
            values: slice(out, m.values_at),
            docs: m.docs_at.map(|s| slice(out, s)),
            passages: m.passages_at.map(|s| slice(out, s)),
            quantized: m
                .quantized
                .as_ref()
                .map(|q| (slice(out, q.bytes_at), slice(out, q.corrections_at))),
            levels: m
                .graph
                .iter()
                .flat_map(|g| &g.levels)
                .map(|l| {
                    (
                        l.nodes_at.map(|s| slice(out, s)),
                        slice(out, l.offsets_at),
                        slice(out, l.neighbors_at),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn round_trip_sparse_quantized_with_graph() {
        let s = schema(ElementType::Int8, VectorIndex::default());
        let mut w = VectorsWriter::new(&s);
        let values = crate::vector::testdata::clustered(300, 8, 5, 0.5, 3);
        // Every third document has no vector; given out of order.
        let docs: Vec<u32> = (0..300).map(|i| i * 3 + 1).rev().collect();
        for (i, &d) in docs.iter().enumerate() {
            w.add(0, d, &values[i * 8..(i + 1) * 8]);
        }
        let mut out = vec![0u8; 16];
        let metas = w.write(1000, &mut out, Vec::new());
        let m = metas[0].clone().unwrap();
        assert_eq!(m.count, 300);
        assert_eq!(m.values_at.0 as usize % ALIGN, 0);
        assert!(m.docs_at.is_some() && m.quantized.is_some() && m.graph.is_some());
        let f = VectorField::open("s.vec", &m, 1000, bytes_of(&out, &m)).unwrap();
        assert_eq!(f.len(), 300);
        // Ordinals follow documents: ordinal 0 is document 1, which was added last.
        assert_eq!(f.doc(0), 1);
        assert_eq!(f.ord(4), Some(1));
        assert_eq!(f.ord(5), None);
        use crate::vector::VectorSource;
        assert_eq!(f.vectors().vector(0), &values[299 * 8..300 * 8]);
        assert_eq!(f.graph().unwrap().len, 300);
        assert_eq!(f.quantized().unwrap().1.len(), 300 * 8);
        // Damaged pieces are refused, not trusted.
        let mut b = bytes_of(&out, &m);
        b.values = Bytes::from_vec(vec![0; 12]);
        assert!(VectorField::open("s.vec", &m, 1000, b).is_err());
        let mut b = bytes_of(&out, &m);
        let mut nb = b.levels[0].2.to_vec();
        nb[0..4].copy_from_slice(&5000u32.to_le_bytes());
        b.levels[0].2 = Bytes::from_vec(nb);
        let e = VectorField::open("s.vec", &m, 1000, b)
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.vec") && e.contains("graph"), "{e}");
        assert!(VectorField::open("s.vec", &m, 500, bytes_of(&out, &m)).is_err());
    }

    #[test]
    fn passages_give_a_document_several_ordinals() {
        let s = schema(ElementType::Int8, VectorIndex::default());
        let mut w = VectorsWriter::new(&s);
        let values = crate::vector::testdata::clustered(40, 8, 3, 0.5, 9);
        let mut at = 0;
        let mut next = || {
            at += 8;
            values[at - 8..at].to_vec()
        };
        // Document 3: three passages; 1: its own vector; 0: one passage; 2: none. Given out of
        // document order.
        for i in 0..3u32 {
            let p = Passage {
                index: i,
                start: i * 10,
                end: i * 10 + 15,
            };
            w.add_passage(0, 3, &next(), Some(p));
        }
        w.add(0, 1, &next());
        let p0 = Passage {
            index: 0,
            start: 0,
            end: 4,
        };
        w.add_passage(0, 0, &next(), Some(p0));
        let mut out = vec![0u8; 16];
        let m = w.write(4, &mut out, Vec::new())[0].clone().unwrap();
        assert_eq!(m.count, 5);
        assert!(m.docs_at.is_some() && m.passages_at.is_some());
        let f = VectorField::open("s.vec", &m, 4, bytes_of(&out, &m)).unwrap();
        assert_eq!(
            (0..5).map(|o| f.doc(o)).collect::<Vec<_>>(),
            [0, 1, 3, 3, 3]
        );
        assert_eq!(f.passage(0), Some(p0));
        assert_eq!(f.passage(1), None);
        assert_eq!(f.passage(4).unwrap().index, 2);
        assert_eq!(f.ords(3), 2..5);
        assert_eq!(f.ords(2), 2..2);
        assert_eq!(f.ord(3), Some(2));
        assert_eq!(f.doc_count(), 3);
        assert!(f.has_passages());
        // Numbering out of order, a document's own vector beside passages, a missing piece:
        // refused.
        for (entry, value) in [(4 * 3, 1u32), (3 + 1, 5), (2 * 3, NO_PASSAGE)] {
            let mut b = bytes_of(&out, &m);
            let mut p = b.passages.unwrap().to_vec();
            p[entry * 4..entry * 4 + 4].copy_from_slice(&value.to_le_bytes());
            b.passages = Some(Bytes::from_vec(p));
            let e = VectorField::open("s.vec", &m, 4, b)
                .unwrap_err()
                .to_string();
            assert!(e.contains("s.vec") && e.contains("passage"), "{e}");
        }
        let mut b = bytes_of(&out, &m);
        b.passages = None;
        assert!(VectorField::open("s.vec", &m, 4, b).is_err());
        // Passages of one per document keep ordinal = document (no documents piece).
        let mut w = VectorsWriter::new(&s);
        for d in 0..3u32 {
            w.add_passage(
                0,
                d,
                &next(),
                Some(Passage {
                    index: 0,
                    start: 0,
                    end: d,
                }),
            );
        }
        let m = w.write(3, &mut out, Vec::new())[0].clone().unwrap();
        assert!(m.docs_at.is_none() && m.passages_at.is_some());
        let f = VectorField::open("s.vec", &m, 3, bytes_of(&out, &m)).unwrap();
        assert!(!f.has_passages());
        assert_eq!(f.passage(2).unwrap().end, 2);
    }

    #[test]
    fn dense_flat_fields_have_no_docs_or_graph() {
        let s = schema(ElementType::Float32, VectorIndex::Flat);
        let mut w = VectorsWriter::new(&s);
        for d in 0..10u32 {
            w.add(0, d, &[d as f32; 8]);
        }
        let mut out = Vec::new();
        let m = w.write(10, &mut out, Vec::new())[0].clone().unwrap();
        assert!(m.docs_at.is_none() && m.graph.is_none() && m.quantized.is_none());
        let f = VectorField::open("s.vec", &m, 10, bytes_of(&out, &m)).unwrap();
        assert_eq!(f.ord(7), Some(7));
        assert!(f.graph().is_none());
        // A segment without any vector of the field lists none.
        let w = VectorsWriter::new(&s);
        assert_eq!(w.write(10, &mut out, Vec::new()), vec![None]);
    }
}
