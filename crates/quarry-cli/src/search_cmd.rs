//! `quarry search`: one query from the command line, a batch of JSON lines, or a k-nearest-
//! neighbour (`--knn`) or hybrid (`--hybrid`) search of a vector field.
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use quarry::highlight::{HighlightOptions, Highlighter};
use quarry::search::knn::{Fusion, KnnQuery};
use quarry::{
    DirectoryKind, DocAddress, Index, SearchMode, Searcher, SortField, SortKey, SortValue,
};
use serde_json::{json, Map, Value};

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Index directory.
    #[arg(long)]
    pub index: PathBuf,
    /// Field(s) searched by terms without `field:` (repeatable; default: every text field).
    #[arg(long = "default-field")]
    pub default_fields: Vec<String>,
    /// Number of hits to return (`-k` too).
    #[arg(long, short = 'k', default_value_t = 10)]
    pub top: usize,
    /// top: top-k (hit count may be a lower bound); top_count: top-k and exact count;
    /// count: exact count only.
    #[arg(long, default_value = "top_count")]
    pub mode: SearchMode,
    /// Print JSON (one line per query).
    #[arg(long)]
    pub json: bool,
    /// Batch mode: a JSON Lines file of {"query": "..."} objects ("-" for standard input).
    #[arg(long, conflicts_with = "query")]
    pub queries: Option<PathBuf>,
    /// Read path: mmap (default), pread, direct (O_DIRECT + buffer pool) or adaptive (per file).
    #[arg(long, default_value = "mmap")]
    pub directory: DirectoryKind,
    /// Sort by a field with a column (integer, float, date, boolean, keyword), `_score` or
    /// `_doc` instead of relevance: `FIELD`, `FIELD:asc` or `FIELD:desc` (repeatable: later keys
    /// break ties). Hits then show their sort values; the count is exact.
    #[arg(long = "sort", value_name = "FIELD[:asc|desc]")]
    pub sort: Vec<String>,
    /// Highlight the query's matches in these stored fields (comma-separated or repeated;
    /// `*` patterns allowed): up to 5 fragments of about 100 characters per field, matches in
    /// `<em>`…`</em>`, printed under each hit (`"highlight"` in `--json`).
    #[arg(
        long = "highlight",
        value_name = "FIELD[,FIELD]",
        value_delimiter = ','
    )]
    pub highlight: Vec<String>,
    /// The query, in Lucene's classic syntax. A query may start with `-` (`'-oil +gas'`); put
    /// `--` before a query that looks like an option of this command (`-- --top`).
    #[arg(allow_hyphen_values = true)]
    pub query: Option<String>,
    /// k-nearest-neighbour search of this vector field (with `--vector` or `--vector-file`)
    /// instead of a query.
    #[arg(long, value_name = "FIELD", requires = "query_vector", conflicts_with_all = ["query", "queries", "sort"], group = "vector_search")]
    pub knn: Option<String>,
    /// Semantic search: embed the query text with the model of this embedded vector field
    /// (its schema's `"embed"`) and find the nearest vectors; takes the `--knn` options.
    #[arg(long, value_name = "FIELD", requires = "query", conflicts_with_all = ["queries", "sort"], group = "vector_search")]
    pub semantic: Option<String>,
    /// The query vector of `--knn`: a JSON array of numbers, `'[0.1, 0.2, ...]'`.
    #[arg(long, value_name = "JSON", requires = "knn", group = "query_vector")]
    pub vector: Option<String>,
    /// The query vector of `--knn` from a file: a JSON array of numbers, or a NumPy `.npy`
    /// file holding a 1-D float32 (or float64) array.
    #[arg(long, value_name = "FILE", requires = "knn", group = "query_vector")]
    pub vector_file: Option<PathBuf>,
    /// `--knn`: the graph search's beam width per segment (default min(1.5 k, 10000)).
    #[arg(long, requires = "vector_search")]
    pub num_candidates: Option<usize>,
    /// `--knn`: only documents matching this query (Lucene syntax) may be hits.
    #[arg(long, value_name = "QUERY", requires = "vector_search")]
    pub filter: Option<String>,
    /// `--knn`: compare every vector instead of walking the graph.
    #[arg(long, requires = "vector_search")]
    pub exact: bool,
    /// `--knn`: also run this text query (Lucene syntax) and fuse both rankings.
    #[arg(long, value_name = "QUERY", requires = "vector_search")]
    pub hybrid: Option<String>,
    /// `--hybrid`: reciprocal rank fusion (`rrf`, rank constant 60) or a sum of min-max
    /// normalized scores (`linear`); each ranking is cut to its first max(k, 10) hits.
    #[arg(long, default_value = "rrf", value_parser = ["rrf", "linear"], requires = "hybrid")]
    pub fusion: String,
}

/// Runs a `--knn` (or `--hybrid`) search; returns its JSON result and the time it took.
fn run_knn(
    index: &Index,
    searcher: &Searcher,
    fields: &[&str],
    args: &SearchArgs,
    field: &str,
) -> Result<(Value, f64)> {
    let start = Instant::now();
    let vector = match (&args.semantic, &args.vector_file) {
        (Some(_), _) => {
            let text = args.query.as_deref().unwrap_or_default();
            index
                .embed_query(field, text)
                .with_context(|| format!("--semantic {field}"))?
        }
        (None, Some(path)) => read_vector_file(path)?,
        (None, None) => json_vector("--vector", args.vector.as_deref().unwrap_or(""))?,
    };
    let mut q = KnnQuery::new(field, vector, args.top);
    q.num_candidates = args.num_candidates;
    q.exact = args.exact;
    if let Some(f) = &args.filter {
        q.filter = Some(
            searcher
                .parse_query(f, fields)
                .with_context(|| format!("--filter {f:?}"))?,
        );
    }
    let (label, hits) = match &args.hybrid {
        Some(text) => {
            let tq = searcher
                .parse_query(text, fields)
                .with_context(|| format!("--hybrid {text:?}"))?;
            let window = args.top.max(10);
            let fusion = if args.fusion == "linear" {
                Fusion::linear(window)
            } else {
                Fusion::rrf(window)
            };
            let label = format!("{text} + knn {field} ({})", args.fusion);
            (label, searcher.hybrid_hits(&tq, &q, &fusion, args.top)?)
        }
        None if args.semantic.is_some() => (
            format!(
                "semantic {field}: {}",
                args.query.as_deref().unwrap_or_default()
            ),
            searcher.knn_hits(&q)?,
        ),
        None => (format!("knn {field}"), searcher.knn_hits(&q)?),
    };
    let micros = start.elapsed().as_secs_f64() * 1e6;
    let mut top = Vec::with_capacity(hits.len());
    for h in &hits {
        let mut hit = Map::new();
        hit.insert("score".into(), json!(h.hit.score));
        hit.insert(
            "doc".into(),
            Value::Object(searcher.stored_fields(h.hit.doc)?),
        );
        // Which passage of the document's text scored it (a field embedded with passages).
        if let Some(p) = &h.passage {
            let mut passage = json!({"index": p.index, "start": p.start, "end": p.end});
            if let Some(text) = searcher.passage_text(h.hit.doc, field, p)? {
                passage["text"] = json!(text);
            }
            hit.insert("passage".into(), passage);
        }
        top.push(Value::Object(hit));
    }
    Ok((
        json!({"query": label, "hits": hits.len(), "hits_exact": true, "top": top}),
        micros,
    ))
}

/// A query vector written as a JSON array of numbers; `what` names its origin in errors.
fn json_vector(what: &str, text: &str) -> Result<Vec<f32>> {
    let values: Vec<Value> = match serde_json::from_str(text) {
        Ok(Value::Array(a)) => a,
        Ok(_) => bail!("{what}: expected a JSON array of numbers, such as '[0.1, 0.2]'"),
        Err(e) => bail!(
            "{what}: malformed JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ),
    };
    let mut vector = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        match v.as_f64() {
            Some(x) => vector.push(x as f32),
            None => bail!("{what}: value {i} is {v}, not a number"),
        }
    }
    Ok(vector)
}

/// `--vector-file`: a NumPy `.npy` file (by its magic bytes) of a 1-D float32 or float64
/// array, else a JSON array of numbers.
fn read_vector_file(path: &std::path::Path) -> Result<Vec<f32>> {
    let what = format!("--vector-file {}", path.display());
    let bytes = std::fs::read(path).with_context(|| format!("{what}: cannot read"))?;
    if bytes.starts_with(b"\x93NUMPY") {
        return npy_vector(&bytes).with_context(|| what.clone());
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| anyhow::anyhow!("{what}: neither a .npy file nor JSON text"))?;
    json_vector(&what, text.trim_start_matches('\u{feff}'))
}

/// The 1-D array of a `.npy` file (format versions 1 to 3): little-endian float32 (`<f4`) or
/// float64 (`<f8`, converted), C order.
fn npy_vector(bytes: &[u8]) -> Result<Vec<f32>> {
    let major = *bytes.get(6).context("truncated .npy header")?;
    let (len, start) = match major {
        1 => (
            u16::from_le_bytes(
                bytes
                    .get(8..10)
                    .context("truncated .npy header")?
                    .try_into()?,
            ) as usize,
            10,
        ),
        2 | 3 => (
            u32::from_le_bytes(
                bytes
                    .get(8..12)
                    .context("truncated .npy header")?
                    .try_into()?,
            ) as usize,
            12,
        ),
        v => bail!(".npy format version {v} is not supported (1 to 3 are)"),
    };
    let header = bytes
        .get(start..start + len)
        .context("truncated .npy header")?;
    let header = String::from_utf8_lossy(header);
    let field = |key: &str| -> Option<String> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        let end = if rest.starts_with('(') {
            rest.find(')')? + 1
        } else {
            rest.find([',', '}']).unwrap_or(rest.len())
        };
        Some(rest[..end].trim().trim_matches('\'').to_string())
    };
    let descr = field("descr").context("the .npy header has no 'descr'")?;
    if field("fortran_order").as_deref() == Some("True") {
        bail!("a Fortran-order .npy array is not supported");
    }
    let shape = field("shape").context("the .npy header has no 'shape'")?;
    let dims: Vec<usize> = shape
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .with_context(|| format!("the .npy shape {shape} is not understood"))?;
    let [n] = dims[..] else {
        bail!("the .npy array has shape {shape}; a query vector is 1-D");
    };
    let data = &bytes[start + len..];
    let size = match descr.as_str() {
        "<f4" => 4,
        "<f8" => 8,
        other => {
            bail!("the .npy array holds {other:?}; float32 ('<f4') or float64 ('<f8') is needed")
        }
    };
    if data.len() != n * size {
        bail!(
            "the .npy data has {} bytes, the shape ({n},) of {descr} needs {}",
            data.len(),
            n * size
        );
    }
    Ok(if size == 4 {
        data.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    } else {
        data.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
            .collect()
    })
}

/// `--sort` values as sort keys.
pub fn parse_sort(specs: &[String]) -> Result<Vec<SortField>> {
    specs
        .iter()
        .map(|s| {
            let (name, order) = match s.rsplit_once(':') {
                Some((n, o @ ("asc" | "desc"))) => (n, Some(o)),
                _ => (s.as_str(), None),
            };
            let key = match name {
                "_score" => SortKey::Score,
                "_doc" => SortKey::IndexOrder,
                f => SortKey::Field(f.to_string()),
            };
            let descending = order.map_or(key == SortKey::Score, |o| o == "desc");
            Ok(SortField {
                key,
                descending,
                missing_first: false,
            })
        })
        .collect()
}

fn sort_value_json(v: &SortValue) -> Value {
    match v {
        SortValue::Int(i) => json!(i),
        SortValue::Float(x) => json!(x),
        SortValue::Bool(b) => json!(b),
        SortValue::Str(s) => json!(s),
        SortValue::Score(x) => json!(x),
        SortValue::Seq(x) => json!(x),
        SortValue::Missing => Value::Null,
    }
}

/// One hit as JSON: its stored document, and its highlighted fields when asked for.
fn hit_json(
    searcher: &Searcher,
    highlighter: Option<(&Highlighter, &[(String, HighlightOptions)])>,
    doc: DocAddress,
    mut hit: Map<String, Value>,
) -> Result<Value> {
    let stored = searcher.stored_fields(doc)?;
    if let Some((h, fields)) = highlighter {
        let mut hl = Map::new();
        for (field, frags) in h.highlight_doc(&stored, fields) {
            hl.insert(field, json!(frags));
        }
        hit.insert("highlight".into(), Value::Object(hl));
    }
    hit.insert("doc".into(), Value::Object(stored));
    Ok(Value::Object(hit))
}

/// Runs one query; returns its JSON result and the time the search took (without fetching and
/// highlighting the hits).
pub fn run_one(
    searcher: &Searcher,
    fields: &[&str],
    query: &str,
    k: usize,
    mode: SearchMode,
    sort: &[SortField],
    highlight: &[String],
) -> Result<(Value, f64)> {
    let start = Instant::now();
    let q = searcher.parse_query(query, fields)?;
    let hl_fields: Vec<(String, HighlightOptions)> = highlight
        .iter()
        .map(|f| (f.clone(), HighlightOptions::default()))
        .collect();
    let highlighter = (!highlight.is_empty()).then(|| Highlighter::new(&q, searcher.schema()));
    let hl = highlighter.as_ref().map(|h| (h, hl_fields.as_slice()));
    if !sort.is_empty() {
        let res = searcher.search_sorted(&q, sort, k, None, false)?;
        let micros = start.elapsed().as_secs_f64() * 1e6;
        let mut top = Vec::with_capacity(res.hits.len());
        for h in &res.hits {
            let values: Vec<Value> = h.values.iter().map(sort_value_json).collect();
            let mut hit = Map::new();
            hit.insert("sort".into(), json!(values));
            top.push(hit_json(searcher, hl, h.hit.doc, hit)?);
        }
        return Ok((
            json!({"query": query, "hits": res.total_hits, "hits_exact": true, "top": top}),
            micros,
        ));
    }
    let res = searcher.search(&q, k, mode)?;
    let micros = start.elapsed().as_secs_f64() * 1e6;
    let mut top = Vec::with_capacity(res.top.len());
    for h in &res.top {
        let mut hit = Map::new();
        hit.insert("score".into(), json!(h.score));
        top.push(hit_json(searcher, hl, h.doc, hit)?);
    }
    Ok((
        json!({"query": query, "hits": res.total_hits, "hits_exact": res.hits_exact, "top": top}),
        micros,
    ))
}

fn print_human(out: &mut impl Write, v: &Value, micros: f64) -> Result<()> {
    let exact = if v["hits_exact"].as_bool() == Some(true) {
        ""
    } else {
        " (at least)"
    };
    let hits = v["hits"].as_u64().unwrap_or(0);
    writeln!(
        out,
        "{}{exact} for {} in {:.0} µs",
        crate::plural(hits, "hit"),
        v["query"],
        micros
    )?;
    for (i, h) in v["top"].as_array().into_iter().flatten().enumerate() {
        let doc = h["doc"].as_object().cloned().unwrap_or_default();
        match h.get("sort").and_then(Value::as_array) {
            Some(values) => {
                let vals: Vec<String> = values.iter().map(Value::to_string).collect();
                writeln!(
                    out,
                    "{:>3}. [{}]  {}",
                    i + 1,
                    vals.join(", "),
                    summary(&doc)
                )?
            }
            None => writeln!(
                out,
                "{:>3}. {:.5}  {}",
                i + 1,
                h["score"].as_f64().unwrap_or(0.0),
                summary(&doc)
            )?,
        }
        if let Some(p) = h.get("passage") {
            let text = p["text"].as_str().map(|t| {
                let t = t.replace('\n', " ");
                let cut: String = t.chars().take(100).collect();
                let ell = if cut.len() < t.len() { "…" } else { "" };
                format!(": {cut}{ell}")
            });
            writeln!(
                out,
                "       passage {} (bytes {}..{}){}",
                p["index"],
                p["start"],
                p["end"],
                text.unwrap_or_default()
            )?;
        }
        if let Some(hl) = h.get("highlight").and_then(Value::as_object) {
            for (field, frags) in hl {
                for f in frags.as_array().into_iter().flatten() {
                    let f = f.as_str().unwrap_or_default().replace('\n', " ");
                    writeln!(out, "       {field}: {f}")?;
                }
            }
        }
    }
    Ok(())
}

/// A one-line view of a stored document: short fields in full, long ones cut.
fn summary(doc: &Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for (k, v) in doc {
        let s = match v {
            Value::String(s) => s.replace('\n', " "),
            other => other.to_string(),
        };
        let cut: String = s.chars().take(70).collect();
        let ell = if cut.len() < s.len() { "…" } else { "" };
        parts.push(format!("{k}={cut}{ell}"));
    }
    parts.join("  ")
}

/// Refuses a `--default-field` the index does not have, listing the fields it has.
fn check_default_fields(searcher: &Searcher, fields: &[&str]) -> Result<()> {
    let schema = searcher.schema();
    for f in fields {
        if schema.field_id(f).is_none() {
            let known: Vec<&str> = schema.fields().iter().map(|e| e.name.as_str()).collect();
            bail!(
                "unknown default field {f:?}: the index has the fields {}",
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// Refuses a `--highlight` field or pattern that names no stored text or keyword field.
fn check_highlight_fields(searcher: &Searcher, fields: &[String]) -> Result<()> {
    let h = Highlighter::new(&quarry::query::Query::MatchNone, searcher.schema());
    for f in fields {
        if h.fields_matching(f).is_empty() {
            let known = h.fields_matching("*");
            bail!(
                "--highlight {f:?} names no stored text or keyword field; the index has {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    Ok(())
}

pub fn run(args: &SearchArgs) -> Result<()> {
    crate::require_index_dir(&args.index)?;
    let index = Index::open_with(&args.index, args.directory)
        .with_context(|| format!("opening index {}", args.index.display()))?;
    let searcher = index.searcher();
    let fields: Vec<&str> = args.default_fields.iter().map(String::as_str).collect();
    check_default_fields(&searcher, &fields)?;
    let sort = parse_sort(&args.sort)?;
    check_highlight_fields(&searcher, &args.highlight)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if let Some(field) = args.knn.as_ref().or(args.semantic.as_ref()) {
        let (v, micros) = run_knn(&index, &searcher, &fields, args, field)?;
        if args.json {
            writeln!(out, "{v}")?;
        } else {
            print_human(&mut out, &v, micros)?;
        }
        out.flush()?;
        return Ok(());
    }
    match (&args.query, &args.queries) {
        (Some(q), None) => {
            let (v, micros) = run_one(
                &searcher,
                &fields,
                q,
                args.top,
                args.mode,
                &sort,
                &args.highlight,
            )?;
            if args.json {
                writeln!(out, "{v}")?;
            } else {
                print_human(&mut out, &v, micros)?;
            }
        }
        (None, Some(path)) => {
            let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
                Box::new(std::io::BufReader::new(std::io::stdin()))
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(path)
                        .with_context(|| format!("cannot open {}", path.display()))?,
                ))
            };
            let (mut ran, mut failed) = (0u64, 0u64);
            for (i, line) in reader.lines().enumerate() {
                let n = i + 1;
                let line = line.with_context(|| format!("{}: line {n}", path.display()))?;
                if line.trim().is_empty() {
                    continue;
                }
                ran += 1;
                let outcome = batch_query(&line).and_then(|q| {
                    run_one(
                        &searcher,
                        &fields,
                        &q,
                        args.top,
                        args.mode,
                        &sort,
                        &args.highlight,
                    )
                    .map_err(|e| (Some(q), format!("{e:#}")))
                });
                match outcome {
                    Ok((v, _)) if args.json => writeln!(out, "{v}")?,
                    Ok((v, micros)) => print_human(&mut out, &v, micros)?,
                    Err((q, error)) => {
                        failed += 1;
                        if args.json {
                            writeln!(out, "{}", json!({"line": n, "query": q, "error": error}))?;
                        } else {
                            out.flush()?;
                            eprintln!("{}: line {n}: {error}", path.display());
                        }
                    }
                }
            }
            out.flush()?;
            if failed > 0 {
                bail!(
                    "{}: {failed} of {ran} {} failed (each reported with its line number)",
                    path.display(),
                    if ran == 1 { "query" } else { "queries" }
                );
            }
        }
        _ => bail!("give a QUERY or --queries FILE"),
    }
    out.flush()?;
    Ok(())
}

/// The query string of one batch line, or why there is none (with the query, when known).
fn batch_query(line: &str) -> std::result::Result<String, (Option<String>, String)> {
    let obj: Value =
        serde_json::from_str(line).map_err(|e| (None, format!("malformed JSON: {e}")))?;
    match obj.get("query").and_then(Value::as_str) {
        Some(q) => Ok(q.to_string()),
        None => Err((
            None,
            "expected an object with a string \"query\"".to_string(),
        )),
    }
}
