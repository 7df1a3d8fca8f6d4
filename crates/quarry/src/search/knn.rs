//! Which documents' vectors are nearest a query vector: exact and approximate k-nearest-neighbour
//! search over a vector field, optionally restricted to the documents a filter query matches,
//! and hybrid search that fuses a text query's ranking with a kNN's.
//!
//! Per segment ([`crate::codec::vectors::VectorField`]):
//! - **exact**: every accepted vector compared with the query ([`crate::vector::scan`]): for a
//!   `flat` field, when asked ([`KnnQuery::exact`]), and when the accepted documents (live, in
//!   the filter) are at most `num_candidates`, where a graph walk would compare about as many;
//! - **approximate**: the segment's HNSW graph searched with a beam of `num_candidates`,
//!   collecting only accepted documents (a filtered traversal walks through the others), and
//!   stopped after comparing as many vectors as are accepted, as Lucene does: past that an exact
//!   scan is cheaper, so the segment is scanned instead. A walk that found fewer than `k`
//!   accepted documents when `k` exist is also answered by a scan, so a search returns `k` hits
//!   whenever `k` documents are accepted. `int8` fields walk with the quantized estimates and
//!   re-score the `num_candidates` found with the full vectors.
//!
//! Every segment's best `k` are merged by score, ties in index order. Scores are
//! Elasticsearch's for the field's similarity ([`crate::vector::Similarity::score`]); deleted documents are
//! never compared as results.
use quarry_codecs::distance::VectorKernel;

use super::collector::{DocAddress, Hit, TopK};
use super::{SearchMode, Searcher};
use crate::codec::livedocs::LiveDocs;
use crate::codec::vectors::VectorField;
use crate::fusion::{self, Normalizer};
use crate::query::Query;
use crate::vector::hnsw::{prefetch_vector, GraphView, Scored};
use crate::vector::scan::{exact_top_k, exact_top_k_of, TopK as OrdTopK};
pub use crate::vector::Passage;
use crate::vector::{normalize, VectorSource};
use crate::{Error, Result};

/// Elasticsearch's largest `num_candidates`.
pub const MAX_NUM_CANDIDATES: usize = 10_000;

/// A k-nearest-neighbour query on a vector field.
#[derive(Clone, Debug, PartialEq)]
pub struct KnnQuery {
    /// The vector field.
    pub field: String,
    /// The query vector (as many values as the field's `dims`).
    pub vector: Vec<f32>,
    /// How many hits to return.
    pub k: usize,
    /// The beam width of the graph search per segment (at least `k`); more finds the true
    /// nearest more often and costs more. `None`: Elasticsearch's default, `min(1.5 k, 10000)`.
    pub num_candidates: Option<usize>,
    /// Only documents this query matches may be hits.
    pub filter: Option<Query>,
    /// Compare every accepted vector instead of walking the graph.
    pub exact: bool,
}

impl KnnQuery {
    /// The `k` nearest vectors of `field` to `vector`, approximate, default `num_candidates`.
    pub fn new(field: &str, vector: Vec<f32>, k: usize) -> Self {
        KnnQuery {
            field: field.to_string(),
            vector,
            k,
            num_candidates: None,
            filter: None,
            exact: false,
        }
    }

    /// Sets `num_candidates`.
    pub fn num_candidates(mut self, n: usize) -> Self {
        self.num_candidates = Some(n);
        self
    }

    /// Sets the filter.
    pub fn filter(mut self, filter: Query) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Asks for an exact scan.
    pub fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    fn candidates(&self) -> usize {
        self.num_candidates
            .unwrap_or_else(|| (self.k + self.k / 2).min(MAX_NUM_CANDIDATES))
            .max(self.k)
    }
}

/// A kNN (or hybrid) hit and, when the field embeds its text as passages, the passage of the
/// document's text that scored it: its number and byte span in the source text (the source
/// field's values joined by newlines), read from the segment, not recomputed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KnnHit {
    pub hit: Hit,
    pub passage: Option<Passage>,
}

/// How a hybrid search combines its text and kNN rankings ([`crate::fusion`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: `Σ weight / (rank_constant + rank)`; each ranking is cut to
    /// `window` first.
    Rrf {
        rank_constant: u32,
        window: usize,
        text_weight: f32,
        knn_weight: f32,
    },
    /// A weighted sum of each ranking's normalized scores, each cut to `window` first.
    Linear {
        normalizer: Normalizer,
        window: usize,
        text_weight: f32,
        knn_weight: f32,
    },
}

impl Fusion {
    /// RRF with Elasticsearch's defaults: rank constant 60, both weights 1, a window of `window`.
    pub fn rrf(window: usize) -> Self {
        Fusion::Rrf {
            rank_constant: fusion::DEFAULT_RANK_CONSTANT,
            window,
            text_weight: 1.0,
            knn_weight: 1.0,
        }
    }

    /// A linear combination of min-max normalized scores, both weights 1.
    pub fn linear(window: usize) -> Self {
        Fusion::Linear {
            normalizer: Normalizer::MinMax,
            window,
            text_weight: 1.0,
            knn_weight: 1.0,
        }
    }

    fn window(&self) -> usize {
        match *self {
            Fusion::Rrf { window, .. } | Fusion::Linear { window, .. } => window,
        }
    }
}

/// The accepted documents of one segment: live and, with a filter, matched by it (ascending).
struct Accepted<'a> {
    live: Option<&'a LiveDocs>,
    filter: Option<Vec<u64>>,
    /// How many documents are accepted (an upper bound on those with a vector).
    count: usize,
}

impl Accepted<'_> {
    #[inline]
    fn doc(&self, doc: u32) -> bool {
        self.live.is_none_or(|l| l.is_live(doc))
            && self
                .filter
                .as_ref()
                .is_none_or(|b| b[(doc / 64) as usize] >> (doc % 64) & 1 == 1)
    }
}

/// One segment's best `k` documents for `query` (a vector ready to compare: scaled for
/// `cosine`), each as the ordinal of its best vector, best first.
fn search_segment(
    v: &VectorField,
    q: &KnnQuery,
    query: &[f32],
    accepted: &Accepted<'_>,
    filter_docs: Option<&[u32]>,
) -> Vec<Scored> {
    if v.has_passages() {
        return search_passages(v, q, query, accepted, filter_docs);
    }
    let sim = v.meta().similarity;
    let k = q.k;
    let ef = q.candidates();
    let vectors = v.vectors();
    let all = accepted.live.is_none() && accepted.filter.is_none();
    let accept_ord = |ord: u32| accepted.doc(v.doc(ord));
    let exact = || -> Vec<Scored> {
        match filter_docs {
            // A filter: only its documents (already live) that have a vector.
            Some(docs) if docs.len() < v.len() / 4 => exact_top_k_of(
                &vectors,
                sim,
                query,
                k,
                docs.iter().filter_map(|&d| v.ord(d)),
            ),
            _ if all => exact_top_k(&vectors, sim, query, k, None),
            _ => exact_top_k(&vectors, sim, query, k, Some(&accept_ord)),
        }
    };
    let Some(graph) = v.graph() else {
        return exact();
    };
    if q.exact || accepted.count <= ef {
        return exact();
    }
    let accept: Option<&dyn Fn(u32) -> bool> = if all { None } else { Some(&accept_ord) };
    let limit = if all { usize::MAX } else { accepted.count };
    match walk(v, &graph, query, k, ef, accept, limit) {
        Some(hits) if hits.len() >= k || accepted.count <= hits.len() => hits,
        _ => exact(),
    }
}

/// How many re-scored vectors ahead an `int8` walk prefetches (as the walk itself does).
const RESCORE_AHEAD: usize = 4;

/// The graph walk of one segment: the `k` best accepted ordinals found with a beam of `ef`
/// (`int8` fields: found with the quantized estimates, re-scored with the full vectors); None
/// when the walk stopped at `limit` comparisons before converging.
fn walk(
    v: &VectorField,
    graph: &GraphView<'_>,
    query: &[f32],
    k: usize,
    ef: usize,
    accept: Option<&dyn Fn(u32) -> bool>,
    limit: usize,
) -> Option<Vec<Scored>> {
    let sim = v.meta().similarity;
    let vectors = v.vectors();
    let kernel = VectorKernel::default_kernel();
    let out = match v.quantized() {
        Some((quantizer, bytes, corrections)) => {
            let dims = v.meta().dims as usize;
            let mut qq = vec![0i8; dims];
            let qc = quantizer.quantize(sim, query, &mut qq);
            let estimate = |ord: u32| {
                let o = ord as usize;
                quantizer.compare(
                    sim,
                    kernel,
                    &qq,
                    qc,
                    &bytes[o * dims..(o + 1) * dims],
                    corrections[o],
                )
            };
            let beam = ef.max(k);
            let prefetch = |ord: u32| {
                let o = ord as usize;
                prefetch_vector(&bytes[o * dims..(o + 1) * dims]);
            };
            let mut out = graph.search_with_prefetch(estimate, prefetch, beam, beam, accept, limit);
            // Re-score the candidates with the full vectors, each asked for a few ahead: they
            // are `beam` scattered reads, as costly as the walk's when the beam is wide.
            let mut top = OrdTopK::new(k);
            for h in out.hits.iter().take(RESCORE_AHEAD) {
                prefetch_vector(vectors.vector(h.ord));
            }
            for (i, h) in out.hits.iter().enumerate() {
                if let Some(next) = out.hits.get(i + RESCORE_AHEAD) {
                    prefetch_vector(vectors.vector(next.ord));
                }
                top.push(Scored {
                    value: sim.compare(kernel, query, vectors.vector(h.ord)),
                    ord: h.ord,
                });
            }
            out.hits = top.into_sorted();
            out
        }
        None => graph.search_with_prefetch(
            |ord| sim.compare(kernel, query, vectors.vector(ord)),
            |ord| prefetch_vector(vectors.vector(ord)),
            k,
            ef,
            accept,
            limit,
        ),
    };
    out.complete.then_some(out.hits)
}

/// [`search_segment`] for a field whose documents have several vectors (the passages of their
/// text): the graph walk collects passages, so it asks for more than `k` (`k` times the mean
/// passages per document, with the beam widened alike) and keeps each document's best; while
/// that gives fewer than `k` documents and more may exist, it asks for twice as many, and ends
/// with an exact scan of every accepted document's passages when the walk would compare about
/// as many.
fn search_passages(
    v: &VectorField,
    q: &KnnQuery,
    query: &[f32],
    accepted: &Accepted<'_>,
    filter_docs: Option<&[u32]>,
) -> Vec<Scored> {
    let k = q.k;
    let per_doc = v.len() as f64 / f64::from(v.doc_count().max(1));
    let scale = |n: usize| ((n as f64 * per_doc).ceil() as usize).max(n);
    let all = accepted.live.is_none() && accepted.filter.is_none();
    // About how many vectors the accepted documents have.
    let accepted_ords = if all { v.len() } else { scale(accepted.count) };
    let ef = scale(q.candidates());
    let exact = || exact_by_doc(v, query, k, accepted, filter_docs);
    let Some(graph) = v.graph() else {
        return exact();
    };
    if q.exact || accepted_ords <= ef {
        return exact();
    }
    let accept_ord = |ord: u32| accepted.doc(v.doc(ord));
    let accept: Option<&dyn Fn(u32) -> bool> = if all { None } else { Some(&accept_ord) };
    let limit = if all { usize::MAX } else { accepted_ords };
    let mut fetch = scale(k);
    loop {
        let Some(hits) = walk(v, &graph, query, fetch, ef.max(fetch), accept, limit) else {
            return exact();
        };
        let found = hits.len();
        let docs = best_per_doc(v, hits, k);
        if docs.len() >= k || accepted.count <= docs.len() {
            return docs;
        }
        if found < fetch || fetch >= accepted_ords {
            return exact();
        }
        fetch = fetch.saturating_mul(2);
    }
}

/// The first (best) ordinal of each document among `hits` (best first), at most `k`.
fn best_per_doc(v: &VectorField, hits: Vec<Scored>, k: usize) -> Vec<Scored> {
    let mut seen = std::collections::HashSet::with_capacity(hits.len());
    hits.into_iter()
        .filter(|h| seen.insert(v.doc(h.ord)))
        .take(k)
        .collect()
}

/// The exact best `k` accepted documents of a field with passages, each scored by its best
/// passage (ties: the lower ordinal, so the earlier document and passage).
fn exact_by_doc(
    v: &VectorField,
    query: &[f32],
    k: usize,
    accepted: &Accepted<'_>,
    filter_docs: Option<&[u32]>,
) -> Vec<Scored> {
    let sim = v.meta().similarity;
    let kernel = VectorKernel::default_kernel();
    let vectors = v.vectors();
    let dims = v.meta().dims as usize;
    let mut top = OrdTopK::new(k);
    let mut scores = Vec::new();
    let mut best = |ords: std::ops::Range<u32>| {
        scores.resize(ords.len(), 0.0);
        let values = &vectors.values()[ords.start as usize * dims..ords.end as usize * dims];
        sim.compare_many(kernel, query, values, &mut scores);
        let (i, value) = scores
            .iter()
            .enumerate()
            .fold(
                (0, f32::NEG_INFINITY),
                |b, (i, &x)| if x > b.1 { (i, x) } else { b },
            );
        top.push(Scored {
            value,
            ord: ords.start + i as u32,
        });
    };
    match filter_docs {
        Some(docs) if docs.len() < v.doc_count() as usize / 4 => {
            for &d in docs {
                let r = v.ords(d);
                if !r.is_empty() {
                    best(r);
                }
            }
        }
        _ => {
            let n = v.len() as u32;
            let mut ord = 0;
            while ord < n {
                let doc = v.doc(ord);
                let mut end = ord + 1;
                while end < n && v.doc(end) == doc {
                    end += 1;
                }
                if accepted.doc(doc) {
                    best(ord..end);
                }
                ord = end;
            }
        }
    }
    top.into_sorted()
}

impl Searcher {
    /// The `k` documents whose vectors of `q.field` are nearest `q.vector` (among those
    /// `q.filter` matches), best first, scored as Elasticsearch scores the field's similarity;
    /// see [`crate::search::knn`] for how each segment is searched.
    ///
    /// ```
    /// use quarry::schema::Similarity;
    /// use quarry::search::knn::KnnQuery;
    /// use quarry::{Document, Index, IndexWriter, Schema, WriterOptions};
    ///
    /// # fn main() -> quarry::Result<()> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let schema = Schema::builder()
    ///     .keyword("id")
    ///     .text("body", true)
    ///     .vector("embedding", 3, Similarity::Cosine)
    ///     .build();
    /// let mut writer = IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default())?;
    /// for line in [
    ///     r#"{"id": "a", "body": "crude oil", "embedding": [1.0, 0.0, 0.0]}"#,
    ///     r#"{"id": "b", "body": "oil seeds", "embedding": [0.8, 0.6, 0.0]}"#,
    ///     r#"{"id": "c", "body": "wheat", "embedding": [0.0, 0.0, 1.0]}"#,
    ///     r#"{"id": "d", "body": "no vector"}"#,
    /// ] {
    ///     writer.add_document(Document::from_json(&schema, line)?)?;
    /// }
    /// writer.commit()?;
    /// let searcher = Index::open(dir.path())?.searcher();
    ///
    /// let hits = searcher.knn(&KnnQuery::new("embedding", vec![0.9, 0.1, 0.0], 2))?;
    /// let ids: Vec<_> = hits.iter().map(|h| searcher.stored_fields(h.doc).unwrap()["id"].clone()).collect();
    /// assert_eq!(ids, ["a", "b"]);
    /// // Cosine scores as Elasticsearch reports them: (1 + cos) / 2.
    /// assert!(hits[0].score > 0.99 && hits[0].score <= 1.0);
    ///
    /// // Only documents matching a filter.
    /// let filter = searcher.parse_query("seeds OR wheat", &["body"])?;
    /// let q = KnnQuery::new("embedding", vec![0.9, 0.1, 0.0], 2).filter(filter);
    /// let hits = searcher.knn(&q)?;
    /// assert_eq!(searcher.stored_fields(hits[0].doc)?["id"], "b");
    /// assert_eq!(hits.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn knn(&self, q: &KnnQuery) -> Result<Vec<Hit>> {
        Ok(self.knn_hits(q)?.into_iter().map(|h| h.hit).collect())
    }

    /// [`knn`](Self::knn), each hit with the passage of the document's text whose vector
    /// scored it (None for a vector the document gave itself): a field embedded with passages
    /// ([`crate::schema::PassageOptions`]) scores a document by its best passage.
    pub fn knn_hits(&self, q: &KnnQuery) -> Result<Vec<KnnHit>> {
        let (field, options, query) = self.query_vector(&q.field, &q.vector)?;
        if q.num_candidates
            .is_some_and(|n| n > MAX_NUM_CANDIDATES || n < q.k)
        {
            return Err(Error::Query(format!(
                "num_candidates must be at least k ({}) and at most {MAX_NUM_CANDIDATES}",
                q.k
            )));
        }
        if q.k == 0 {
            return Ok(Vec::new());
        }
        let filter_docs = match &q.filter {
            Some(f) => Some(self.matching_docs(f)?),
            None => None,
        };
        let mut top = TopK::new(q.k);
        let mut passages = std::collections::HashMap::new();
        for (ord, seg) in self.segments().iter().enumerate() {
            let Some(v) = seg.vectors(field)? else {
                continue;
            };
            let live = self.live_docs().get(ord).and_then(|l| l.as_deref());
            let docs = filter_docs.as_ref().map(|d| d[ord].as_slice());
            let accepted = Accepted {
                live,
                filter: docs.map(|d| {
                    let mut bits = vec![0u64; (seg.doc_count() as usize).div_ceil(64).max(1)];
                    for &x in d {
                        bits[(x / 64) as usize] |= 1 << (x % 64);
                    }
                    bits
                }),
                count: match (docs, live) {
                    (Some(d), _) => d.len(),
                    (None, Some(l)) => l.live_count() as usize,
                    (None, None) => v.len(),
                },
            };
            for s in search_segment(v, q, &query, &accepted, docs) {
                let doc = v.doc(s.ord);
                if let Some(p) = v.passage(s.ord) {
                    passages.insert((ord as u32, doc), p);
                }
                top.offer(
                    options.similarity.score(s.value),
                    DocAddress {
                        segment: ord as u32,
                        doc,
                    },
                    || seg.seq(doc),
                );
            }
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|hit| KnnHit {
                hit,
                passage: passages.get(&(hit.doc.segment, hit.doc.doc)).copied(),
            })
            .collect())
    }

    /// A query vector for vector field `name`, checked (the field's dims, finite values) and
    /// ready to compare (scaled to unit length when the similarity is the cosine), with the
    /// field's id and options.
    fn query_vector(
        &self,
        name: &str,
        vector: &[f32],
    ) -> Result<(u32, crate::schema::VectorOptions, Vec<f32>)> {
        let schema = self.schema();
        let field = schema
            .field_id(name)
            .ok_or_else(|| Error::unknown_field(schema, name))?;
        let Some(options) = schema.field(field).vector_options() else {
            return Err(Error::Query(format!(
                "field {name:?} is a {} field, not a vector field: kNN searches vector fields",
                schema.field(field).field_type
            )));
        };
        if vector.len() != options.dims as usize {
            return Err(Error::Query(format!(
                "the query vector has {} values; field {name:?} has {} dimensions",
                vector.len(),
                options.dims
            )));
        }
        if let Some(i) = vector.iter().position(|x| !x.is_finite()) {
            return Err(Error::Query(format!(
                "value {i} of the query vector ({}) is not finite",
                vector[i]
            )));
        }
        let mut query = vector.to_vec();
        if options.similarity.normalizes() {
            normalize(&mut query);
        }
        Ok((field, options, query))
    }

    /// Every passage of document `doc`'s text in the embedded vector field `field`, in passage
    /// order, each with its score for the query `vectors`: the sum of its scores for each, as
    /// a kNN search scores one (the field's similarity, on Elasticsearch's scale); Elasticsearch
    /// sums a passage's scores over several vector queries alike. A kNN hit scores its best
    /// passage; this ranks all of them (the server's semantic highlighter returns the best
    /// few). With no vector every passage scores 0. Vectors the document gave itself have no
    /// passage and are left out; a document without vectors has no passage.
    pub fn passage_scores(
        &self,
        doc: DocAddress,
        field: &str,
        vectors: &[Vec<f32>],
    ) -> Result<Vec<(Passage, f32)>> {
        let schema = self.schema();
        let id = schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(schema, field))?;
        let queries = vectors
            .iter()
            .map(|v| Ok(self.query_vector(field, v)?.2))
            .collect::<Result<Vec<_>>>()?;
        let Some(options) = schema.field(id).vector_options() else {
            return Err(Error::Query(format!(
                "field {field:?} is a {} field, not a vector field: it has no passages",
                schema.field(id).field_type
            )));
        };
        let Some(seg) = self.segments().get(doc.segment as usize) else {
            return Ok(Vec::new());
        };
        let Some(v) = seg.vectors(id)? else {
            return Ok(Vec::new());
        };
        let sim = options.similarity;
        let kernel = VectorKernel::default_kernel();
        let stored = v.vectors();
        Ok(v.ords(doc.doc)
            .filter_map(|ord| {
                let p = v.passage(ord)?;
                let score = queries
                    .iter()
                    .map(|q| sim.score(sim.compare(kernel, q, stored.vector(ord))))
                    .sum();
                Some((p, score))
            })
            .collect())
    }

    /// The text of passage `p` of document `doc` for the embedded vector field `field`: the
    /// bytes `p.start..p.end` of its source text (the source field's stored values joined by
    /// newlines, as they were embedded). None when the source field is not stored or the span
    /// does not fall on the stored text's characters.
    pub fn passage_text(
        &self,
        doc: DocAddress,
        field: &str,
        p: &Passage,
    ) -> Result<Option<String>> {
        let schema = self.schema();
        let id = schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(schema, field))?;
        let Some(from) = schema.field(id).embed.as_ref().map(|e| e.from.clone()) else {
            return Ok(None);
        };
        if !schema.field_by_name(&from).is_some_and(|f| f.stored) {
            return Ok(None);
        }
        let stored = self.stored_fields(doc)?;
        Ok(stored.get(&from).and_then(|v| p.text_in(v)))
    }

    /// One ranking from a text query's and a kNN query's: the text query's best
    /// `fusion.window()` and the kNN query's `k` nearest (its `k` raised to the window),
    /// fused ([`Fusion`]); the best `k` of the fused ranking, each hit's score the fused one.
    pub fn hybrid(
        &self,
        text: &Query,
        knn: &KnnQuery,
        fusion: &Fusion,
        k: usize,
    ) -> Result<Vec<Hit>> {
        Ok(self
            .hybrid_hits(text, knn, fusion, k)?
            .into_iter()
            .map(|h| h.hit)
            .collect())
    }

    /// [`hybrid`](Self::hybrid), each hit with the passage that scored it in the kNN ranking
    /// (None when the kNN ranking did not hold it, or its vector is not a passage).
    pub fn hybrid_hits(
        &self,
        text: &Query,
        knn: &KnnQuery,
        fusion: &Fusion,
        k: usize,
    ) -> Result<Vec<KnnHit>> {
        let window = fusion.window().max(1);
        let text_hits = self.search(text, window, SearchMode::Top)?.top;
        let mut kq = knn.clone();
        kq.k = kq.k.max(window);
        if let Some(n) = kq.num_candidates {
            kq.num_candidates = Some(n.max(kq.k));
        }
        let knn_hits = self.knn_hits(&kq)?;
        let passages: std::collections::HashMap<_, _> = knn_hits
            .iter()
            .filter_map(|h| Some(((h.hit.doc.segment, h.hit.doc.doc), h.passage?)))
            .collect();
        let knn_hits: Vec<Hit> = knn_hits.into_iter().map(|h| h.hit).collect();
        let key = |h: &Hit| (h.doc.segment, h.doc.doc);
        let fused = match *fusion {
            Fusion::Rrf {
                rank_constant,
                window,
                text_weight,
                knn_weight,
            } => {
                let t: Vec<_> = text_hits.iter().map(key).collect();
                let n: Vec<_> = knn_hits.iter().map(key).collect();
                fusion::rrf(
                    &[(text_weight, &t[..]), (knn_weight, &n[..])],
                    rank_constant,
                    window,
                )
            }
            Fusion::Linear {
                normalizer,
                window,
                text_weight,
                knn_weight,
            } => {
                let t: Vec<_> = text_hits.iter().map(|h| (key(h), h.score)).collect();
                let n: Vec<_> = knn_hits.iter().map(|h| (key(h), h.score)).collect();
                fusion::linear(
                    &[
                        (text_weight, normalizer, &t[..]),
                        (knn_weight, normalizer, &n[..]),
                    ],
                    window,
                )
            }
        };
        let segments = self.segments();
        Ok(fused
            .into_iter()
            .take(k)
            .map(|((segment, doc), score)| KnnHit {
                hit: Hit {
                    score,
                    doc: DocAddress { segment, doc },
                    seq: segments[segment as usize].seq(doc),
                },
                passage: passages.get(&(segment, doc)).copied(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_num_candidates_is_elasticsearch_s() {
        let q = KnnQuery::new("v", vec![1.0], 10);
        assert_eq!(q.candidates(), 15);
        assert_eq!(KnnQuery::new("v", vec![1.0], 9000).candidates(), 10_000);
        assert_eq!(q.clone().num_candidates(100).candidates(), 100);
    }
}
