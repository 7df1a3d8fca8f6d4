//! quarry in the vector benchmark, in this process: a `flat` index (exact scans, hybrid search;
//! it also indexes the text), a float32 HNSW index and an int8 HNSW index (the graph walks the
//! quantized copy, re-scores with the floats), each built on one thread into one segment; then
//! exact kNN, the num_candidates sweep, filtered kNN, hybrid and the time from a directory of
//! native-vector-store JSON files to the first answer.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use quarry::schema::{ElementType, Similarity, VectorIndex};
use quarry::search::knn::{Fusion, KnnQuery};
use quarry::{Document, FieldEntry, FieldType, FieldValue, Index, IndexWriter, Schema};
use quarry::{Searcher, WriterOptions};
use serde_json::{json, Value};

use super::data::{bucket, VectorSet};
use super::{recall, Truth, VectorsArgs, SELECTIVITIES};
use crate::measure;

/// One quarry index of the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variant {
    Flat,
    Hnsw,
    HnswInt8,
}

impl Variant {
    pub fn engine(self) -> &'static str {
        match self {
            Variant::Flat => "quarry-flat",
            Variant::Hnsw => "quarry-hnsw",
            Variant::HnswInt8 => "quarry-hnsw-int8",
        }
    }
}

fn schema(dims: usize, variant: Variant, m: usize, efc: usize) -> Result<Schema> {
    let mut v = FieldEntry::vector("embedding", dims as u32, Similarity::Cosine);
    v.stored = false;
    v.element_type = Some(match variant {
        Variant::HnswInt8 => ElementType::Int8,
        _ => ElementType::Float32,
    });
    v.index = Some(match variant {
        Variant::Flat => VectorIndex::Flat,
        _ => VectorIndex::Hnsw {
            m: m as u32,
            ef_construction: efc as u32,
        },
    });
    let mut fields = vec![
        FieldEntry::new("id", FieldType::Keyword),
        FieldEntry::new("tag", FieldType::Keyword),
    ];
    if variant == Variant::Flat {
        let mut body = FieldEntry::new("body", FieldType::Text);
        body.stored = false;
        fields.push(body);
    }
    fields.push(v);
    Ok(Schema::new(fields)?)
}

fn one_thread_options() -> WriterOptions {
    WriterOptions {
        threads: 1,
        // One segment: no flush before the commit.
        ram_budget_bytes: 16 << 30,
        ..WriterOptions::default()
    }
}

/// Builds one variant into `dir`: (seconds, record).
pub fn build(set: &VectorSet, variant: Variant, args: &VectorsArgs, dir: &Path) -> Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let schema = schema(set.dims, variant, args.m, args.ef_construction)?;
    let rss0 = measure::rss_bytes();
    let start = Instant::now();
    let mut w = IndexWriter::create(dir, schema.clone(), one_thread_options())?;
    for row in 0..set.n() {
        let mut d = Document::new();
        d.add(&schema, "id", FieldValue::Str(row.to_string()))?;
        let b = bucket(row);
        for p in SELECTIVITIES {
            if b < p {
                d.add(&schema, "tag", FieldValue::Str(format!("p{p}")))?;
            }
        }
        if variant == Variant::Flat {
            d.add(&schema, "body", FieldValue::Str(set.texts[row].clone()))?;
        }
        d.add(
            &schema,
            "embedding",
            FieldValue::Vector(set.doc(row).to_vec()),
        )?;
        w.add_document(d)?;
    }
    let stats = w.commit()?;
    drop(w);
    let seconds = start.elapsed().as_secs_f64();
    let vec_bytes: u64 = measure::index_files(dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "vec"))
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    Ok(json!({
        "engine": variant.engine(),
        "op": "build",
        "seconds": seconds,
        "segments": stats.segments,
        "index_bytes": measure::dir_bytes(dir),
        "vector_file_bytes": vec_bytes,
        "rss_delta_bytes": measure::rss_bytes() as i64 - rss0 as i64,
        "threads": 1,
        "note": if variant == Variant::Flat { "also indexes the text (BM25) for hybrid search" } else { "" },
    }))
}

/// Latency summary (µs) and queries per second of one pass over the queries.
pub fn summary(lat: &mut [f64]) -> Value {
    let total: f64 = lat.iter().sum();
    let s = measure::summarize(lat);
    json!({
        "p50_us": s.p50, "p99_us": s.p99, "mean_us": s.mean,
        "qps": if total > 0.0 { lat.len() as f64 / (total / 1e6) } else { f64::NAN },
    })
}

/// Runs `search` on every query (after a warm-up of the first 20), one at a time: the rows
/// found and the latencies (µs).
pub fn timed(
    nq: usize,
    mut search: impl FnMut(usize) -> Result<Vec<u32>>,
) -> Result<(Vec<Vec<u32>>, Vec<f64>)> {
    for i in 0..nq.min(20) {
        search(i)?;
    }
    let mut rows = Vec::with_capacity(nq);
    let mut lat = Vec::with_capacity(nq);
    for i in 0..nq {
        let t = Instant::now();
        let r = search(i)?;
        lat.push(t.elapsed().as_nanos() as f64 / 1000.0);
        rows.push(r);
    }
    Ok((rows, lat))
}

fn rows(hits: &[quarry::Hit]) -> Vec<u32> {
    hits.iter().map(|h| h.seq as u32).collect()
}

fn knn_rows(s: &Searcher, q: &KnnQuery) -> Result<Vec<u32>> {
    Ok(rows(&s.knn(q)?))
}

fn record(engine: &str, op: &str, extra: Value, lat: &mut [f64], recall: f64) -> Value {
    let mut v = json!({"engine": engine, "op": op, "recall": recall});
    let obj = v.as_object_mut().expect("object");
    for (k, x) in extra.as_object().into_iter().flatten() {
        obj.insert(k.clone(), x.clone());
    }
    for (k, x) in summary(lat).as_object().into_iter().flatten() {
        obj.insert(k.clone(), x.clone());
    }
    v
}

pub fn run(
    args: &VectorsArgs,
    set: &VectorSet,
    truth: &Truth,
    ef: &[usize],
    work: &Path,
) -> Result<Vec<Value>> {
    let k = args.k;
    let nq = set.nq();
    let mut out = Vec::new();
    for variant in [Variant::Flat, Variant::Hnsw, Variant::HnswInt8] {
        let engine = variant.engine();
        let dir = work.join(engine);
        eprintln!("[vectors] {engine}: building");
        let rss0 = measure::rss_bytes();
        let b = build(set, variant, args, &dir)?;
        eprintln!(
            "[vectors] {engine}: built in {:.1} s",
            b["seconds"].as_f64().unwrap_or(0.0)
        );
        out.push(b);
        let searcher = Index::open(&dir)?.searcher();
        let query = |i: usize, n: usize| {
            KnnQuery::new("embedding", set.query(i).to_vec(), k).num_candidates(n)
        };
        match variant {
            Variant::Flat => {
                let (got, mut lat) = timed(nq, |i| knn_rows(&searcher, &query(i, k).exact()))?;
                out.push(record(
                    engine,
                    "exact",
                    json!({}),
                    &mut lat,
                    recall(&got, &truth.all, k),
                ));
                // Hybrid: RRF of BM25 on the text and the exact kNN, window 50 (rank constant 60).
                let mut texts = Vec::new();
                let mut skipped = 0;
                for i in 0..nq {
                    match searcher.parse_query(&set.query_texts[i], &["body"]) {
                        Ok(q) => texts.push((i, q)),
                        Err(_) => skipped += 1,
                    }
                }
                let (_, mut lat) = timed(texts.len(), |j| {
                    let (i, t) = &texts[j];
                    Ok(rows(&searcher.hybrid(
                        t,
                        &query(*i, k).exact(),
                        &Fusion::rrf(50),
                        k,
                    )?))
                })?;
                out.push(record(
                    engine,
                    "hybrid",
                    json!({"fusion": "rrf, window 50, rank constant 60, exact kNN", "queries": texts.len(), "unparsed_queries": skipped}),
                    &mut lat,
                    f64::NAN,
                ));
            }
            Variant::Hnsw | Variant::HnswInt8 => {
                for &n in ef {
                    let n = n.max(k);
                    let (got, mut lat) = timed(nq, |i| knn_rows(&searcher, &query(i, n)))?;
                    let r = recall(&got, &truth.all, k);
                    eprintln!("[vectors] {engine}: num_candidates {n}: recall {r:.3}");
                    out.push(record(engine, "sweep", json!({"ef": n}), &mut lat, r));
                }
                for (si, &p) in SELECTIVITIES.iter().enumerate() {
                    let filter = searcher.parse_query(&format!("tag:p{p}"), &["tag"])?;
                    let n = args.filter_candidates.max(k);
                    let (got, mut lat) = timed(nq, |i| {
                        knn_rows(&searcher, &query(i, n).filter(filter.clone()))
                    })?;
                    out.push(record(
                        engine,
                        "filtered",
                        json!({"selectivity": p, "ef": n}),
                        &mut lat,
                        recall(&got, &truth.filtered[si], k),
                    ));
                }
            }
        }
        out.push(json!({"engine": engine, "op": "rss", "rss_delta_bytes": measure::rss_bytes() as i64 - rss0 as i64}));
        drop(searcher);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let nvs_dir = super::peers::nvs_dir(set, work)?;
    out.push(load_nvs_dir(set, &nvs_dir, &work.join("quarry-load"))?);
    Ok(out)
}

/// Time from a directory of native-vector-store JSON files (arrays of `{id, text, metadata:
/// {embedding}}`) to the first answer: parse every file (all cores), index into a `flat` field
/// with the text (stored), commit, open, answer one exact kNN query.
pub fn load_nvs_dir(set: &VectorSet, dir: &Path, index: &Path) -> Result<Value> {
    let _ = std::fs::remove_dir_all(index);
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut v = FieldEntry::vector("embedding", set.dims as u32, Similarity::Cosine);
    v.stored = false;
    v.index = Some(VectorIndex::Flat);
    let schema = Schema::new(vec![
        FieldEntry::new("id", FieldType::Keyword),
        FieldEntry::new("text", FieldType::Text),
        v,
    ])?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let start = Instant::now();
    let parse = |path: &Path| -> Result<Vec<Document>> {
        let bytes = std::fs::read(path)?;
        let items: Vec<NvsDoc> = serde_json::from_slice(&bytes)
            .with_context(|| format!("parsing {}", path.display()))?;
        items
            .into_iter()
            .map(|d| {
                let mut doc = Document::new();
                doc.add(&schema, "id", FieldValue::Str(d.id))?;
                doc.add(&schema, "text", FieldValue::Str(d.text))?;
                doc.add(
                    &schema,
                    "embedding",
                    FieldValue::Vector(d.metadata.embedding),
                )?;
                Ok(doc)
            })
            .collect()
    };
    let opts = WriterOptions {
        ram_budget_bytes: 16 << 30,
        ..WriterOptions::default()
    };
    let mut w = IndexWriter::create(index, schema.clone(), opts)?;
    let mut docs = 0usize;
    for group in files.chunks(threads * 4) {
        let parsed: Vec<Result<Vec<Document>>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .chunks(group.len().div_ceil(threads))
                .map(|c| {
                    let parse = &parse;
                    s.spawn(move || c.iter().map(|p| parse(p)).collect::<Vec<_>>())
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("parser thread"))
                .collect()
        });
        for batch in parsed {
            for d in batch? {
                w.add_document(d)?;
                docs += 1;
            }
        }
    }
    w.commit()?;
    drop(w);
    let committed = start.elapsed().as_secs_f64();
    let searcher = Index::open(index)?.searcher();
    let hits = searcher.knn(&KnnQuery::new("embedding", set.query(0).to_vec(), 10).exact())?;
    let first = start.elapsed().as_secs_f64();
    anyhow::ensure!(!hits.is_empty(), "no answer");
    let bytes = measure::dir_bytes(index);
    let _ = std::fs::remove_dir_all(index);
    Ok(json!({
        "engine": "quarry-flat", "op": "load", "docs": docs, "files": files.len(),
        "seconds_to_commit": committed, "seconds_to_first_answer": first,
        "index_bytes": bytes, "threads": threads,
        "note": "parse (serde_json, all cores), index text + flat vectors, commit to disk, open, one exact kNN",
    }))
}

#[derive(serde::Deserialize)]
struct NvsDoc {
    id: String,
    text: String,
    metadata: NvsMeta,
}

#[derive(serde::Deserialize)]
struct NvsMeta {
    embedding: Vec<f32>,
}
