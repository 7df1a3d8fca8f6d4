//! Vector fields end to end: documents with vectors written in several segments, searched exactly
//! and through the HNSW graphs, with filters, deletions and merges, and bad vectors refused.
//!
//! The vectors are random (ties come from few distinct values), clustered random unit vectors
//! (for recall), or real sentence embeddings (tests/fixtures/embeddings: all-MiniLM-L6-v2 on
//! Reuters bodies and the W1 queries) for recall on data that is not synthetic.
mod common;

use quarry::codec::vectors::VectorMeta;
use quarry::fusion::Normalizer;
use quarry::schema::{ElementType, FieldEntry, Similarity, VectorIndex};
use quarry::search::knn::{Fusion, KnnQuery};
use quarry::{
    check_index, Document, Error, FieldValue, Index, IndexWriter, MergePolicy, Schema, SearchMode,
    WriterOptions,
};
use serde_json::json;

fn opts() -> WriterOptions {
    WriterOptions {
        threads: 1,
        merge_policy: MergePolicy::None,
        ..WriterOptions::default()
    }
}

/// A xorshift generator: reproducible test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    }
}

/// `n` unit vectors around `centres` random centres, plus noise.
fn clustered(n: usize, dims: usize, centres: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut r = Rng(seed | 1);
    let c: Vec<Vec<f32>> = (0..centres)
        .map(|_| (0..dims).map(|_| r.unit()).collect())
        .collect();
    (0..n)
        .map(|i| {
            let mut v: Vec<f32> = c[i % centres].iter().map(|&m| m + 0.6 * r.unit()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

fn schema(dims: u32, sim: Similarity, element: ElementType, index: VectorIndex) -> Schema {
    let mut v = FieldEntry::vector("v", dims, sim);
    v.element_type = Some(element);
    v.index = Some(index);
    let mut id = FieldEntry::new("id", quarry::FieldType::Integer);
    id.stored = true;
    let group = FieldEntry::new("group", quarry::FieldType::Keyword);
    Schema::new(vec![id, group, v]).unwrap()
}

/// Writes documents `id = i` with `vectors[i]` (None: no vector) and `group = i % 10`, a
/// commit every `per_segment` documents.
fn build(schema: &Schema, vectors: &[Option<Vec<f32>>], per_segment: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::create(dir.path(), schema.clone(), opts()).unwrap();
    for (i, v) in vectors.iter().enumerate() {
        let mut obj = json!({"id": i, "group": format!("g{}", i % 10)});
        if let Some(v) = v {
            obj["v"] = json!(v);
        }
        w.add_document(Document::from_json(schema, &obj.to_string()).unwrap())
            .unwrap();
        if (i + 1) % per_segment == 0 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    dir
}

fn ids(index: &Index, hits: &[quarry::Hit]) -> Vec<i64> {
    let s = index.searcher();
    hits.iter()
        .map(|h| s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap())
        .collect()
}

/// The plain reference: every accepted vector scored in f64-free scalar code (dot products
/// summed as the kernels' scalar twin does is not needed: scores are compared by rank and
/// value within 1e-5), sorted by score then id.
fn reference(
    vectors: &[Option<Vec<f32>>],
    sim: Similarity,
    q: &[f32],
    k: usize,
    accept: impl Fn(usize) -> bool,
) -> Vec<(i64, f32)> {
    let unit = |v: &[f32]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let q = if sim == Similarity::Cosine {
        unit(q)
    } else {
        q.to_vec()
    };
    let mut all: Vec<(i64, f32)> = vectors
        .iter()
        .enumerate()
        .filter(|(i, v)| v.is_some() && accept(*i))
        .map(|(i, v)| {
            let v = v.as_ref().unwrap();
            let v = if sim == Similarity::Cosine {
                unit(v)
            } else {
                v.clone()
            };
            let compared = match sim {
                Similarity::L2Norm => -v
                    .iter()
                    .zip(&q)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f32>(),
                _ => v.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>(),
            };
            (i as i64, sim.score(compared))
        })
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

/// Small non-negative integers: exact in f32 whatever the summation order, many ties, and no
/// negative dot product (whose `dot_product` score Elasticsearch clamps to 0, tying
/// different comparisons).
fn small_int_vectors(n: usize, dims: usize, seed: u64) -> Vec<Option<Vec<f32>>> {
    let mut r = Rng(seed | 1);
    (0..n)
        .map(|i| {
            (i % 7 != 3).then(|| {
                let mut v: Vec<f32> = (0..dims).map(|_| (r.next() % 3) as f32).collect();
                if v.iter().all(|&x| x == 0.0) {
                    v[0] = 1.0;
                }
                v
            })
        })
        .collect()
}

#[test]
fn exact_knn_equals_the_plain_reference_with_ties_in_index_order() {
    for sim in [
        Similarity::DotProduct,
        Similarity::L2Norm,
        Similarity::MaxInnerProduct,
    ] {
        let vectors = small_int_vectors(500, 6, 7);
        let s = schema(6, sim, ElementType::Float32, VectorIndex::default());
        let dir = build(&s, &vectors, 130);
        let index = Index::open(dir.path()).unwrap();
        assert!(index.segments().len() >= 4);
        let searcher = index.searcher();
        let mut r = Rng(99);
        for _ in 0..20 {
            let q: Vec<f32> = (0..6).map(|_| (r.next() % 3) as f32).collect();
            for k in [1, 10, 37] {
                let hits = searcher
                    .knn(&KnnQuery::new("v", q.clone(), k).exact())
                    .unwrap();
                let got: Vec<(i64, f32)> = ids(&index, &hits)
                    .into_iter()
                    .zip(hits.iter().map(|h| h.score))
                    .collect();
                let want = reference(&vectors, sim, &q, k, |_| true);
                assert_eq!(got, want, "{sim} k {k} q {q:?}");
                // The filtered exact scan agrees with the filtered reference.
                let filter = searcher
                    .parse_query("group:g1 OR group:g4", &["group"])
                    .unwrap();
                let hits = searcher
                    .knn(&KnnQuery::new("v", q.clone(), k).exact().filter(filter))
                    .unwrap();
                let got: Vec<i64> = ids(&index, &hits);
                let want: Vec<i64> =
                    reference(&vectors, sim, &q, k, |i| i % 10 == 1 || i % 10 == 4)
                        .into_iter()
                        .map(|x| x.0)
                        .collect();
                assert_eq!(got, want, "{sim} filtered k {k}");
            }
        }
    }
}

fn recall(got: &[i64], want: &[(i64, f32)]) -> f64 {
    got.iter()
        .filter(|g| want.iter().any(|w| w.0 == **g))
        .count() as f64
        / want.len() as f64
}

#[test]
fn hnsw_recall_at_10_on_clustered_vectors_across_segments_and_after_merge() {
    let (n, dims) = (3000, 32);
    for (sim, element) in [
        (Similarity::Cosine, ElementType::Float32),
        (Similarity::L2Norm, ElementType::Int8),
    ] {
        let vectors: Vec<Option<Vec<f32>>> =
            clustered(n, dims, 25, 5).into_iter().map(Some).collect();
        let s = schema(dims as u32, sim, element, VectorIndex::default());
        let dir = build(&s, &vectors, 1000);
        let queries = clustered(50, dims, 25, 77);
        let measure = |dir: &std::path::Path| {
            let index = Index::open(dir).unwrap();
            let searcher = index.searcher();
            let mut total = 0.0;
            for q in &queries {
                let hits = searcher
                    .knn(&KnnQuery::new("v", q.clone(), 10).num_candidates(100))
                    .unwrap();
                assert_eq!(hits.len(), 10);
                total += recall(
                    &ids(&index, &hits),
                    &reference(&vectors, sim, q, 10, |_| true),
                );
            }
            (total / queries.len() as f64, index.segments().len())
        };
        let (r, segs) = measure(dir.path());
        eprintln!("{sim} {element:?}: recall@10 {r:.3} over {segs} segments");
        assert!(r >= 0.95, "{sim}: recall@10 {r}");
        let mut w = IndexWriter::open(dir.path(), opts()).unwrap();
        w.force_merge(1).unwrap();
        drop(w);
        let (r, segs) = measure(dir.path());
        eprintln!("{sim} {element:?}: recall@10 {r:.3} after merging into {segs}");
        assert_eq!(segs, 1);
        assert!(r >= 0.95, "{sim} merged: recall@10 {r}");
        check_index(dir.path(), quarry::DirectoryKind::Mmap).unwrap();
    }
}

/// The committed real embeddings (tests/fixtures/embeddings, made by scripts/embed-fixture.py):
/// all-MiniLM-L6-v2 vectors of 500 Reuters bodies (the corpus here) and of the 131 W1 queries.
fn real_embeddings() -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let (header, mut all) = common::embedding_fixture();
    let queries = all.split_off(header["docs"].as_array().unwrap().len());
    (all, queries)
}

/// Recall@10 of the graphs on real sentence embeddings (not random clusters; short queries
/// against long bodies, which graphs find harder): float32 and int8, at beams (`num_candidates`)
/// of 10 to 80 per segment, for two segments of 250 vectors, one segment of 500 built at once,
/// and the two merged into one. Each recall is printed. Checked: a wider beam never loses
/// recall; the merged graph (seeded from the larger source) is within 0.03 of the one built at
/// once at every beam; two segments reach 0.95 from a beam of 40 and one segment 0.93 at 80
/// (measured for float32: 0.989 and 0.944).
#[test]
fn hnsw_recall_at_10_on_real_embeddings() {
    let (docs, queries) = real_embeddings();
    assert_eq!((docs.len(), queries.len()), (500, 131));
    let vectors: Vec<Option<Vec<f32>>> = docs.into_iter().map(Some).collect();
    let truth: Vec<Vec<(i64, f32)>> = queries
        .iter()
        .map(|q| reference(&vectors, Similarity::Cosine, q, 10, |_| true))
        .collect();
    const BEAMS: [usize; 4] = [10, 20, 40, 80];
    for element in [ElementType::Float32, ElementType::Int8] {
        let s = schema(384, Similarity::Cosine, element, VectorIndex::default());
        let curve = |dir: &std::path::Path, segs: usize, what: &str| -> Vec<f64> {
            let index = Index::open(dir).unwrap();
            assert_eq!(index.segments().len(), segs);
            let searcher = index.searcher();
            BEAMS
                .iter()
                .map(|&beam| {
                    let mut total = 0.0;
                    for (q, want) in queries.iter().zip(&truth) {
                        let hits = searcher
                            .knn(&KnnQuery::new("v", q.clone(), 10).num_candidates(beam))
                            .unwrap();
                        assert_eq!(hits.len(), 10);
                        total += recall(&ids(&index, &hits), want);
                    }
                    let r = total / queries.len() as f64;
                    eprintln!(
                        "real embeddings, {element:?}, {what}, beam {beam}: recall@10 {r:.3}"
                    );
                    r
                })
                .collect()
        };
        let two = build(&s, &vectors, 250);
        let split = curve(two.path(), 2, "two segments");
        let one = build(&s, &vectors, 500);
        let built = curve(one.path(), 1, "one segment");
        let mut w = IndexWriter::open(two.path(), opts()).unwrap();
        w.force_merge(1).unwrap();
        drop(w);
        let merged = curve(two.path(), 1, "two merged into one");
        for c in [&split, &built, &merged] {
            assert!(
                c.windows(2).all(|p| p[1] >= p[0]),
                "{element:?}: a wider beam lost recall: {c:?}"
            );
        }
        for (m, b) in merged.iter().zip(&built) {
            assert!(
                m + 0.03 >= *b,
                "{element:?}: merged {merged:?} vs built {built:?}"
            );
        }
        assert!(
            split[2] >= 0.95,
            "{element:?}: two segments, beam 40: {split:?}"
        );
        assert!(
            built[3] >= 0.93,
            "{element:?}: one segment, beam 80: {built:?}"
        );
    }
}

#[test]
fn filtered_search_returns_k_hits_inside_the_filter_at_every_selectivity() {
    let (n, dims) = (4000, 16);
    let vectors: Vec<Option<Vec<f32>>> = clustered(n, dims, 10, 3).into_iter().map(Some).collect();
    let s = schema(
        dims as u32,
        Similarity::DotProduct,
        ElementType::Float32,
        VectorIndex::default(),
    );
    let dir = build(&s, &vectors, 2000);
    let index = Index::open(dir.path()).unwrap();
    let searcher = index.searcher();
    let queries = clustered(20, dims, 10, 11);
    // 10 %, 30 % and one document in 4,000 (a group id is i % 10; id:7 is one document).
    for (filter, accept) in [
        (
            "group:g3",
            Box::new(|i: usize| i % 10 == 3) as Box<dyn Fn(usize) -> bool>,
        ),
        (
            "group:g1 OR group:g2 OR group:g5",
            Box::new(|i: usize| [1, 2, 5].contains(&(i % 10))),
        ),
        ("id:7", Box::new(|i: usize| i == 7)),
    ] {
        let mut total = 0.0;
        for q in &queries {
            let f = searcher.parse_query(filter, &["group"]).unwrap();
            let hits = searcher
                .knn(
                    &KnnQuery::new("v", q.clone(), 10)
                        .num_candidates(50)
                        .filter(f),
                )
                .unwrap();
            let got = ids(&index, &hits);
            assert!(got.iter().all(|&i| accept(i as usize)), "{filter}: {got:?}");
            let want = reference(&vectors, Similarity::DotProduct, q, 10, &accept);
            assert_eq!(got.len(), want.len(), "{filter}: k hits when k exist");
            total += recall(&got, &want);
        }
        let r = total / queries.len() as f64;
        eprintln!("filter {filter}: recall@10 {r:.3}");
        assert!(r >= 0.9, "{filter}: recall@10 {r}");
    }
}

#[test]
fn deleted_documents_never_come_back_and_documents_without_vectors_are_skipped() {
    let (n, dims) = (1500, 8);
    let vectors: Vec<Option<Vec<f32>>> = clustered(n, dims, 5, 9)
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i % 5 != 0).then_some(v))
        .collect();
    let s = schema(
        dims as u32,
        Similarity::Cosine,
        ElementType::Float32,
        VectorIndex::default(),
    );
    let dir = build(&s, &vectors, 600);
    let mut w = IndexWriter::open(dir.path(), opts()).unwrap();
    // Delete every document of groups 1 and 2 (30 % of those with vectors).
    for g in ["g1", "g2"] {
        w.delete_term("group", &FieldValue::Str(g.into())).unwrap();
    }
    w.commit().unwrap();
    let alive = |i: usize| vectors[i].is_some() && i % 10 != 1 && i % 10 != 2;
    let queries = clustered(30, dims, 5, 1234);
    let check = |dir: &std::path::Path| {
        let index = Index::open(dir).unwrap();
        let searcher = index.searcher();
        for q in &queries {
            for exact in [false, true] {
                let mut kq = KnnQuery::new("v", q.clone(), 20).num_candidates(60);
                kq.exact = exact;
                let got = ids(&index, &searcher.knn(&kq).unwrap());
                assert_eq!(got.len(), 20);
                assert!(got.iter().all(|&i| alive(i as usize)), "{got:?}");
            }
        }
    };
    check(dir.path());
    w.force_merge(1).unwrap();
    drop(w);
    check(dir.path());
    let index = Index::open(dir.path()).unwrap();
    let seg = &index.segments()[0];
    let f = index.schema().field_id("v").unwrap();
    let live_with_vectors = (0..n).filter(|&i| alive(i)).count();
    assert_eq!(seg.vectors(f).unwrap().unwrap().len(), live_with_vectors);
}

#[test]
fn vectors_come_back_as_stored_and_flat_fields_search_exactly() {
    let s = schema(
        3,
        Similarity::L2Norm,
        ElementType::Float32,
        VectorIndex::Flat,
    );
    let dir = build(
        &s,
        &[Some(vec![0.1, 2.5, -3.0]), None, Some(vec![1.0, 1.0, 1.0])],
        10,
    );
    let index = Index::open(dir.path()).unwrap();
    let searcher = index.searcher();
    let hits = searcher
        .knn(&KnnQuery::new("v", vec![0.0, 2.0, -3.0], 5))
        .unwrap();
    assert_eq!(ids(&index, &hits), vec![0, 2]);
    // l2_norm: 1 / (1 + d²), d² = 0.01 + 0.25.
    assert!(
        (hits[0].score - 1.0 / 1.26).abs() < 1e-6,
        "{}",
        hits[0].score
    );
    let doc = searcher.stored_fields(hits[0].doc).unwrap();
    assert_eq!(doc["v"], json!([0.1, 2.5, -3.0]));
    let doc = searcher
        .stored_fields(quarry::search::DocAddress { segment: 0, doc: 1 })
        .unwrap();
    assert!(!doc.contains_key("v"));
    let meta: &VectorMeta = index.segments()[0].meta().vectors[2].as_ref().unwrap();
    assert!(meta.graph.is_none() && meta.docs_at.is_some());
}

#[test]
fn bad_vectors_and_bad_queries_are_typed_errors_naming_the_field() {
    let s = schema(
        3,
        Similarity::Cosine,
        ElementType::Float32,
        VectorIndex::default(),
    );
    let bad = |line: &str| match Document::from_json(&s, line) {
        Err(Error::Document { field, reason }) => {
            assert_eq!(field, "v");
            reason
        }
        other => panic!("{line}: {other:?}"),
    };
    assert!(bad(r#"{"v": [1, 2]}"#).contains("3 dimensions"));
    assert!(bad(r#"{"v": [1, "x", 2]}"#).contains("value 1"));
    assert!(bad(r#"{"v": [1, 1e39, 2]}"#).contains("finite"));
    assert!(bad(r#"{"v": [0, 0, 0]}"#).contains("zero vector"));
    assert!(bad(r#"{"v": 5}"#).contains("vector"));
    assert!(bad(r#"{"v": [[1], 2, 3]}"#).contains("not a number"));
    // No vector, or null: no vector.
    assert!(Document::from_json(&s, r#"{"id": 1}"#).is_ok());
    assert!(Document::from_json(&s, r#"{"id": 1, "v": null}"#).is_ok());
    let mut d = Document::new();
    let e = d
        .add(&s, "v", FieldValue::Vector(vec![f32::NAN, 1.0, 1.0]))
        .unwrap_err();
    assert!(
        matches!(e, Error::Document { ref field, .. } if field == "v"),
        "{e}"
    );

    let dir = build(&s, &[Some(vec![1.0, 0.0, 0.0])], 10);
    let searcher = Index::open(dir.path()).unwrap().searcher();
    for (q, what) in [
        (KnnQuery::new("v", vec![1.0], 1), "dimensions"),
        (
            KnnQuery::new("v", vec![1.0, f32::INFINITY, 0.0], 1),
            "finite",
        ),
        (
            KnnQuery::new("group", vec![1.0, 0.0, 0.0], 1),
            "not a vector field",
        ),
        (
            KnnQuery::new("v", vec![1.0, 0.0, 0.0], 10).num_candidates(5),
            "num_candidates",
        ),
    ] {
        let e = searcher.knn(&q).unwrap_err();
        assert!(e.is_client_error() && e.to_string().contains(what), "{e}");
    }
    assert!(searcher.knn(&KnnQuery::new("nope", vec![1.0], 1)).is_err());
    // Ranking a document's passages checks the field and the vectors alike.
    let doc = quarry::DocAddress { segment: 0, doc: 0 };
    for (field, vectors, what) in [
        ("v", vec![vec![1.0]], "dimensions"),
        ("group", vec![vec![1.0, 0.0, 0.0]], "not a vector field"),
        ("group", vec![], "not a vector field"),
        ("nope", vec![], "nope"),
    ] {
        let e = searcher.passage_scores(doc, field, &vectors).unwrap_err();
        assert!(e.is_client_error() && e.to_string().contains(what), "{e}");
    }

    // Schemas: dims out of range, vector settings on other fields.
    for text in [
        r#"{"fields":[{"name":"v","type":"vector"}]}"#,
        r#"{"fields":[{"name":"v","type":"vector","dims":5000}]}"#,
        r#"{"fields":[{"name":"v","type":"vector","dims":3,"similarity":"hamming"}]}"#,
        r#"{"fields":[{"name":"v","type":"vector","dims":3,"index":{"type":"hnsw","m":1}}]}"#,
        r#"{"fields":[{"name":"t","type":"text","dims":3}]}"#,
    ] {
        assert!(Schema::from_json(text).is_err(), "{text}");
    }
    let s = Schema::from_json(
        r#"{"fields":[{"name":"v","type":"vector","dims":3,"similarity":"dot_product","element_type":"int8","index":{"type":"hnsw","m":8}}]}"#,
    )
    .unwrap();
    let o = s.field(0).vector_options().unwrap();
    assert_eq!(
        o.index,
        VectorIndex::Hnsw {
            m: 8,
            ef_construction: 100
        }
    );
    assert_eq!(o.element_type, ElementType::Int8);
    assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
}

#[test]
fn a_damaged_vector_file_is_reported_by_check_and_by_search() {
    let vectors: Vec<Option<Vec<f32>>> = clustered(200, 8, 4, 2).into_iter().map(Some).collect();
    let s = schema(
        8,
        Similarity::Cosine,
        ElementType::Int8,
        VectorIndex::default(),
    );
    let dir = build(&s, &vectors, 1000);
    check_index(dir.path(), quarry::DirectoryKind::Mmap).unwrap();
    let vec_file = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "vec"))
        .expect("a .vec file");
    let mut bytes = std::fs::read(&vec_file).unwrap();
    bytes[200] ^= 0x40;
    std::fs::write(&vec_file, &bytes).unwrap();
    let e = check_index(dir.path(), quarry::DirectoryKind::Mmap).unwrap_err();
    assert!(e.to_string().contains(".vec"), "{e}");
    for kind in quarry::DirectoryKind::ALL {
        let index = Index::open_with(dir.path(), kind).unwrap();
        let e = index
            .searcher()
            .knn(&KnnQuery::new("v", vectors[0].clone().unwrap(), 3))
            .unwrap_err();
        assert!(
            matches!(e, Error::Corrupt { .. }) && e.to_string().contains(".vec"),
            "{e}"
        );
    }
}

#[test]
fn hybrid_search_fuses_text_and_knn_rankings() {
    let s = Schema::builder()
        .keyword("id")
        .text("body", false)
        .vector("v", 2, Similarity::Cosine)
        .build();
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::create(dir.path(), s.clone(), opts()).unwrap();
    for line in [
        r#"{"id": "a", "body": "oil oil oil", "v": [0.0, 1.0]}"#,
        r#"{"id": "b", "body": "oil", "v": [1.0, 0.1]}"#,
        r#"{"id": "c", "body": "wheat", "v": [1.0, 0.0]}"#,
    ] {
        w.add_document(Document::from_json(&s, line).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
    let index = Index::open(dir.path()).unwrap();
    let searcher = index.searcher();
    let text = searcher.parse_query("oil", &["body"]).unwrap();
    let text_top = searcher.search(&text, 10, SearchMode::Top).unwrap().top;
    let knn = KnnQuery::new("v", vec![1.0, 0.0], 3);
    let id = |h: &quarry::Hit| searcher.stored_fields(h.doc).unwrap()["id"].clone();
    assert_eq!(id(&text_top[0]), "a");
    let hits = searcher.hybrid(&text, &knn, &Fusion::rrf(10), 10).unwrap();
    // text: a 1, b 2; knn: c 1, b 2, a 3.
    let got: Vec<_> = hits.iter().map(|h| (id(h), h.score)).collect();
    assert_eq!(got[0].0, "a");
    assert!((got[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-7);
    assert_eq!(got[1].0, "b");
    assert!((got[1].1 - 2.0 / 62.0).abs() < 1e-7);
    assert_eq!(got[2].0, "c");
    assert!((got[2].1 - 1.0 / 61.0).abs() < 1e-7);
    let hits = searcher
        .hybrid(
            &text,
            &knn,
            &Fusion::Linear {
                normalizer: Normalizer::MinMax,
                window: 10,
                text_weight: 1.0,
                knn_weight: 2.0,
            },
            2,
        )
        .unwrap();
    // knn min-max: c 1, b ~1, a 0; text: a 1, b 0.
    assert_eq!(hits.len(), 2);
    assert_eq!(id(&hits[0]), "c");
}

#[test]
fn an_index_sort_permutes_vectors_with_their_documents() {
    let (n, dims) = (600, 8);
    let vectors: Vec<Option<Vec<f32>>> = clustered(n, dims, 6, 21)
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i % 4 != 1).then_some(v))
        .collect();
    let s = schema(
        dims as u32,
        Similarity::Cosine,
        ElementType::Float32,
        VectorIndex::default(),
    );
    let dir = tempfile::tempdir().unwrap();
    let sorted = WriterOptions {
        index_sort: Some(quarry::IndexSort::new(vec![quarry::IndexSortField::desc(
            "id",
        )])),
        ..opts()
    };
    let mut w = IndexWriter::create(dir.path(), s.clone(), sorted).unwrap();
    for (i, v) in vectors.iter().enumerate() {
        let mut obj = json!({"id": i, "group": format!("g{}", i % 10)});
        if let Some(v) = v {
            obj["v"] = json!(v);
        }
        w.add_document(Document::from_json(&s, &obj.to_string()).unwrap())
            .unwrap();
        if (i + 1) % 250 == 0 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    w.force_merge(1).unwrap();
    drop(w);
    check_index(dir.path(), quarry::DirectoryKind::Mmap).unwrap();
    let index = Index::open(dir.path()).unwrap();
    let searcher = index.searcher();
    for q in clustered(10, dims, 6, 5) {
        let exact = searcher
            .knn(&KnnQuery::new("v", q.clone(), 10).exact())
            .unwrap();
        let want = reference(&vectors, Similarity::Cosine, &q, 10, |_| true);
        let got = ids(&index, &exact);
        assert!(recall(&got, &want) >= 0.9, "{got:?} vs {want:?}");
        // The stored vector of each hit is its document's.
        for h in &exact {
            let doc = searcher.stored_fields(h.doc).unwrap();
            let id = doc["id"].as_i64().unwrap() as usize;
            let stored: Vec<f32> = doc["v"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            assert_eq!(Some(stored), vectors[id]);
        }
        let approx = searcher
            .knn(&KnnQuery::new("v", q.clone(), 10).num_candidates(100))
            .unwrap();
        assert!(recall(&ids(&index, &approx), &want) >= 0.9);
    }
}

/// Documents with several vectors each (the passages of a long text, format v10): searches
/// return distinct documents, each scored by its best passage and naming it, exactly as a plain
/// reference says (exact scan) or nearly (graph walk, recall ≥ 0.9), filtered or not, across
/// segments, after deletions and after a merge; `quarry check` accepts the index.
#[test]
fn passages_score_a_document_by_its_best_one() {
    use quarry::search::knn::Passage;
    let (n, dims, k) = (900usize, 16usize, 10usize);
    let pool = clustered(n * 4, dims, 7, 77);
    let mut r = Rng(5);
    // Per document: its passages' vectors (0 to 6; None: it gives one vector itself).
    let mut at = 0;
    let docs: Vec<(Vec<Vec<f32>>, bool)> = (0..n)
        .map(|_| {
            let own = r.next().is_multiple_of(7);
            let count = if own { 1 } else { (r.next() % 7) as usize };
            let v = pool[at..at + count].to_vec();
            at += count;
            (v, own)
        })
        .collect();
    for (element, index) in [
        (ElementType::Float32, VectorIndex::default()),
        (ElementType::Int8, VectorIndex::default()),
        (ElementType::Float32, VectorIndex::Flat),
    ] {
        let s = schema(dims as u32, Similarity::Cosine, element, index);
        let dir = tempfile::tempdir().unwrap();
        let mut w = IndexWriter::create(dir.path(), s.clone(), opts()).unwrap();
        for (i, (vs, own)) in docs.iter().enumerate() {
            let mut obj = json!({"id": i, "group": format!("g{}", i % 10)});
            if *own {
                obj["v"] = json!(vs[0]);
            }
            let mut d = Document::from_json(&s, &obj.to_string()).unwrap();
            if !own {
                let ps = vs
                    .iter()
                    .enumerate()
                    .map(|(j, v)| {
                        let j = j as u32;
                        let p = Passage {
                            index: j,
                            start: j * 10,
                            end: j * 10 + 15,
                        };
                        (p, v.clone())
                    })
                    .collect();
                d.add_passages(&s, "v", ps).unwrap();
            }
            w.add_document(d).unwrap();
            if (i + 1) % 300 == 0 {
                w.commit().unwrap();
            }
        }
        w.delete_term("group", &FieldValue::Str("g1".into()))
            .unwrap();
        w.commit().unwrap();
        let alive = |i: usize| i % 10 != 1;
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        // The reference: each accepted document's best passage, by score then id.
        let reference =
            |q: &[f32], accept: &dyn Fn(usize) -> bool| -> Vec<(usize, f32, Option<u32>)> {
                let mut all: Vec<(usize, f32, Option<u32>)> = docs
                    .iter()
                    .enumerate()
                    .filter(|(i, (vs, _))| accept(*i) && !vs.is_empty())
                    .map(|(i, (vs, own))| {
                        let (j, best) = vs
                            .iter()
                            .map(|v| dot(q, v))
                            .enumerate()
                            .fold((0, f32::MIN), |b, (j, x)| if x > b.1 { (j, x) } else { b });
                        (i, best, (!own).then_some(j as u32))
                    })
                    .collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                all.truncate(k);
                all
            };
        let queries = clustered(20, dims, 7, 4321);
        let check = |dir: &std::path::Path, label: &str| {
            let index = Index::open(dir).unwrap();
            let searcher = index.searcher();
            let filter = searcher
                .parse_query("group:g3 OR group:g4", &["group"])
                .unwrap();
            let in_filter = |i: usize| i % 10 == 3 || i % 10 == 4;
            let (mut found, mut wanted) = (0usize, 0usize);
            for q in &queries {
                for (filtered, exact) in
                    [(false, true), (false, false), (true, true), (true, false)]
                {
                    let mut kq = KnnQuery::new("v", q.clone(), k).num_candidates(40);
                    kq.exact = exact;
                    if filtered {
                        kq = kq.filter(filter.clone());
                    }
                    let hits = searcher.knn_hits(&kq).unwrap();
                    let accept = |i: usize| alive(i) && (!filtered || in_filter(i));
                    let want = reference(q, &accept);
                    let got: Vec<(usize, f32, Option<u32>)> = hits
                        .iter()
                        .map(|h| {
                            let id = searcher.stored_fields(h.hit.doc).unwrap()["id"]
                                .as_i64()
                                .unwrap() as usize;
                            (id, h.hit.score, h.passage.map(|p| p.index))
                        })
                        .collect();
                    assert_eq!(got.len(), k, "{label}: k distinct documents");
                    for p in hits.iter().filter_map(|h| h.passage) {
                        assert_eq!((p.start, p.end), (p.index * 10, p.index * 10 + 15));
                    }
                    let mut distinct: Vec<usize> = got.iter().map(|g| g.0).collect();
                    distinct.sort_unstable();
                    distinct.dedup();
                    assert_eq!(distinct.len(), k, "{label}: {got:?}");
                    for (id, score, passage) in &got {
                        assert!(accept(*id), "{label}: {id} is not accepted");
                        let (vs, own) = &docs[*id];
                        // The score is the named passage's (its document's own vector's).
                        let j = passage.unwrap_or(0) as usize;
                        assert_eq!(passage.is_none(), *own, "{label}: {id}");
                        assert!(
                            (score - (1.0 + dot(q, &vs[j])) / 2.0).abs() < 1e-5,
                            "{label}"
                        );
                    }
                    // Every passage of a hit, ranked for the query: its scores are the
                    // reference's, and the best is the one that scored the hit (exactly so
                    // when the search was exact).
                    for (h, (id, _, _)) in hits.iter().zip(&got) {
                        let scores = searcher
                            .passage_scores(h.hit.doc, "v", std::slice::from_ref(q))
                            .unwrap();
                        let (vs, own) = &docs[*id];
                        if *own {
                            assert!(scores.is_empty(), "{label}: {id} gave its own vector");
                            continue;
                        }
                        assert_eq!(scores.len(), vs.len(), "{label}: {id}");
                        for (j, (p, s)) in scores.iter().enumerate() {
                            assert_eq!(p.index, j as u32);
                            assert!((s - (1.0 + dot(q, &vs[j])) / 2.0).abs() < 1e-5, "{label}");
                        }
                        // Several query vectors: the sum of the scores; none: all 0.
                        let twice = searcher
                            .passage_scores(h.hit.doc, "v", &[q.clone(), q.clone()])
                            .unwrap();
                        for (a, b) in scores.iter().zip(&twice) {
                            assert_eq!((a.0, 2.0 * a.1), *b, "{label}");
                        }
                        let none = searcher.passage_scores(h.hit.doc, "v", &[]).unwrap();
                        assert!(none.iter().map(|x| x.1).eq(vec![0.0; vs.len()]));
                        let best = scores.iter().map(|x| x.1).fold(f32::MIN, f32::max);
                        assert!(best >= h.hit.score - 1e-6, "{label}: {id}");
                        if exact || index_is_flat(&index) {
                            assert!((best - h.hit.score).abs() < 1e-6, "{label}: {id}");
                        }
                    }
                    if exact || index_is_flat(&index) {
                        let want: Vec<(usize, Option<u32>)> =
                            want.iter().map(|w| (w.0, w.2)).collect();
                        let got: Vec<(usize, Option<u32>)> =
                            got.iter().map(|g| (g.0, g.2)).collect();
                        assert_eq!(got, want, "{label} exact, filtered {filtered}");
                    } else {
                        wanted += k;
                        found += got
                            .iter()
                            .filter(|g| want.iter().any(|w| w.0 == g.0))
                            .count();
                    }
                }
            }
            if wanted > 0 {
                let recall = found as f64 / wanted as f64;
                assert!(recall >= 0.9, "{label}: recall {recall}");
            }
        };
        let label = format!("{element:?} {index:?}");
        check(dir.path(), &label);
        w.force_merge(1).unwrap();
        drop(w);
        check(dir.path(), &format!("{label}, merged"));
        check_index(dir.path(), quarry::DirectoryKind::Mmap).unwrap();
        let index = Index::open(dir.path()).unwrap();
        let f = index.schema().field_id("v").unwrap();
        let v = index.segments()[0].vectors(f).unwrap().unwrap();
        let live: usize = (0..n).filter(|&i| alive(i)).map(|i| docs[i].0.len()).sum();
        assert_eq!(v.len(), live, "{label}: a merge keeps every live passage");
    }
}

fn index_is_flat(index: &Index) -> bool {
    let f = index.schema().field_by_name("v").unwrap();
    matches!(f.index, Some(VectorIndex::Flat))
}
