//! Shared helpers of the integration tests: the bundled Reuters corpus, the Lucene oracle, and
//! building an index from them.
#![allow(dead_code)]
use std::io::{BufRead, BufReader};
use std::path::Path;

use quarry::query::ast::{Clause, Occur, Query};
use quarry::query::{Operator, SimpleFlags};
use quarry::{DirectoryKind, Document, IndexWriter, MergePolicy, Schema, Searcher, WriterOptions};
use serde_json::Value;

pub fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The bundled Reuters-21578 JSON lines.
pub fn reuters_lines() -> Vec<String> {
    let f =
        std::fs::File::open(root().join("data/reuters21578.jsonl.zst")).expect("bundled corpus");
    let r = BufReader::new(zstd::Decoder::new(f).expect("zstd"));
    r.lines().map(|l| l.expect("utf-8 line")).collect()
}

/// `id` integer, `title` and `body` text, all stored (the oracle's setup).
pub fn reuters_schema() -> Schema {
    Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build()
}

/// Indexes the Reuters lines (only id, title, body) into `dir`.
pub fn build_reuters(dir: &Path, lines: &[String], threads: usize, kind: DirectoryKind) {
    let schema = reuters_schema();
    let opts = WriterOptions {
        threads,
        directory: kind,
        merge_policy: MergePolicy::None,
        ..Default::default()
    };
    let mut w = IndexWriter::create(dir, schema.clone(), opts).unwrap();
    for line in lines {
        let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        let mut m = serde_json::Map::new();
        for k in ["id", "title", "body"] {
            if let Some(x) = v.get(k) {
                m.insert(k.to_string(), x.clone());
            }
        }
        w.add_document(Document::from_map(&schema, &m).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
}

/// The bundled `data/reuters-schema.json`: `id` integer, `title` and `body` stored text,
/// `date` and `topics` keywords (with columns).
pub fn reuters_full_schema() -> Schema {
    let text = std::fs::read_to_string(root().join("data/reuters-schema.json")).unwrap();
    Schema::from_json(&text).unwrap()
}

/// Indexes every field of the Reuters lines with [`reuters_full_schema`] into `dir`: one
/// thread, one commit, so one segment in file order.
pub fn build_reuters_full(dir: &Path, lines: &[String]) {
    let schema = reuters_full_schema();
    let opts = WriterOptions {
        threads: 1,
        directory: DirectoryKind::Mmap,
        merge_policy: MergePolicy::None,
        ..Default::default()
    };
    let mut w = IndexWriter::create(dir, schema.clone(), opts).unwrap();
    for line in lines {
        let m: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        w.add_document(Document::from_map(&schema, &m).unwrap())
            .unwrap();
    }
    w.commit().unwrap();
}

/// Lines of the Lucene oracle: (stats, queries).
pub fn oracle() -> (Value, Vec<Value>) {
    oracle_file("lucene-reuters-oracle.jsonl")
}

/// Lines of an oracle file under tests/fixtures: (stats, queries).
pub fn oracle_file(name: &str) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(root().join("tests/fixtures").join(name)).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let stats = lines.next().unwrap();
    (stats, lines.collect())
}

/// A pair dictionary as (pair term, [(doc, positions)]).
pub type Pairs = std::collections::BTreeMap<String, Vec<(u32, Vec<u32>)>>;

/// The pairs of frequent words field `f` of `seg` should hold, computed from the words'
/// positions: `a b` at `p` wherever `a` is at `p` and `b` at `p + 1`.
pub fn expected_pairs(seg: &quarry::index::SegmentReader, f: u32) -> Pairs {
    use quarry::codec::postings::TERMINATED;
    let mut at: std::collections::BTreeMap<u32, std::collections::BTreeMap<u32, &str>> =
        Default::default();
    for w in quarry::pairs::WORDS {
        let Some((info, bytes)) = seg.term_info(f, w.as_bytes()).unwrap() else {
            continue;
        };
        let mut c = seg.postings(f, &info, &bytes, true).unwrap();
        let mut pos = Vec::new();
        while c.doc() != TERMINATED {
            c.positions(&mut pos);
            let d = at.entry(c.doc()).or_default();
            for &p in &pos {
                d.insert(p, w);
            }
            c.next();
        }
    }
    let mut out = Pairs::new();
    for (doc, words) in &at {
        for (&p, &a) in words {
            if let Some(&b) = words.get(&(p + 1)) {
                let list = out.entry(quarry::pairs::pair_term(a, b)).or_default();
                match list.last_mut() {
                    Some((d, ps)) if d == doc => ps.push(p),
                    _ => list.push((*doc, vec![p])),
                }
            }
        }
    }
    out
}

/// The pair dictionary of field `f` of `seg` as it is stored (empty if it has none).
pub fn stored_pairs(seg: &quarry::index::SegmentReader, f: u32) -> Pairs {
    use fst::Streamer;
    use quarry::codec::postings::TERMINATED;
    let mut out = Pairs::new();
    let Some(dict) = seg.pair_terms(f).unwrap() else {
        return out;
    };
    let mut stream = dict.map().stream();
    while let Some((term, offset)) = stream.next() {
        let (info, bytes) = seg.term_info_at(f, offset).unwrap();
        let mut c = seg.postings(f, &info, &bytes, true).unwrap();
        let mut list = Vec::new();
        let mut pos = Vec::new();
        while c.doc() != TERMINATED {
            c.positions(&mut pos);
            list.push((c.doc(), pos.clone()));
            c.next();
        }
        out.insert(String::from_utf8(term.to_vec()).unwrap(), list);
    }
    out
}

/// The query of one oracle line: `query` in the classic syntax (default field body), or `dsl`,
/// the Elasticsearch DSL subset of the harness's `oracle-dsl` command (see [`dsl`]).
pub fn oracle_query(searcher: &Searcher, q: &Value) -> Result<Query, String> {
    match (q.get("query"), q.get("dsl")) {
        (Some(text), _) => searcher
            .parse_query(text.as_str().unwrap(), &["body"])
            .map_err(|e| format!("{text}: {e}")),
        (None, Some(d)) => dsl(searcher, d),
        (None, None) => Err(format!("oracle line without query or dsl: {q}")),
    }
}

/// What `bench/lucene`'s `LuceneDsl.build` builds, in quarry's model: a string is the classic
/// syntax; `bool` (clauses in Elasticsearch's order: must, must_not, should, filter), `dis_max`,
/// `constant_score`, `boosting` and `simple_query_string` (fields as `name^boost`,
/// `default_operator`, `flags`), each with an optional `boost`.
pub fn dsl(searcher: &Searcher, node: &Value) -> Result<Query, String> {
    if let Some(text) = node.as_str() {
        return searcher
            .parse_query(text, &["body"])
            .map_err(|e| format!("{text}: {e}"));
    }
    let (ty, body) = node
        .as_object()
        .and_then(|m| m.iter().next())
        .ok_or_else(|| format!("not a query: {node}"))?;
    let sub = |key: &str| dsl(searcher, &body[key]);
    let list = |key: &str| -> Result<Vec<Query>, String> {
        match &body[key] {
            Value::Null => Ok(vec![]),
            Value::Array(items) => items.iter().map(|v| dsl(searcher, v)).collect(),
            one => Ok(vec![dsl(searcher, one)?]),
        }
    };
    let num = |key: &str| body[key].as_f64().map(|v| v as f32);
    let q = match ty.as_str() {
        "bool" => {
            let mut clauses = Vec::new();
            for (key, occur) in [
                ("must", Occur::Must),
                ("must_not", Occur::MustNot),
                ("should", Occur::Should),
                ("filter", Occur::Filter),
            ] {
                clauses.extend(list(key)?.into_iter().map(|q| Clause::new(occur, q)));
            }
            Query::Boolean {
                clauses,
                minimum_should_match: body["minimum_should_match"].as_u64().unwrap_or(0) as u32,
            }
        }
        "dis_max" => Query::DisMax {
            queries: list("queries")?,
            tie_breaker: num("tie_breaker").unwrap_or(0.0),
        },
        "constant_score" => Query::ConstantScore {
            query: Box::new(sub("filter")?),
        },
        "boosting" => Query::Boosting {
            positive: Box::new(sub("positive")?),
            negative: Box::new(sub("negative")?),
            negative_boost: num("negative_boost").ok_or("boosting without negative_boost")?,
        },
        "simple_query_string" => {
            let specs: Vec<(String, f32)> = match body["fields"].as_array() {
                None => vec![("body".into(), 1.0)],
                Some(fs) => fs
                    .iter()
                    .map(|f| {
                        let f = f.as_str().unwrap();
                        match f.split_once('^') {
                            Some((name, b)) => (name.to_string(), b.parse().unwrap()),
                            None => (f.to_string(), 1.0),
                        }
                    })
                    .collect(),
            };
            let fields: Vec<(&str, f32)> = specs.iter().map(|(f, b)| (f.as_str(), *b)).collect();
            let op = match body["default_operator"].as_str() {
                Some("and") => Operator::And,
                _ => Operator::Or,
            };
            let flags = SimpleFlags::parse(body["flags"].as_str().unwrap_or(""))?;
            searcher
                .simple_query_parser(&fields)
                .map_err(|e| e.to_string())?
                .with_default_operator(op)
                .with_flags(flags)
                .parse(body["query"].as_str().unwrap())
        }
        "match_phrase_prefix" => return match_phrase_prefix(searcher, body),
        other => return Err(format!("unknown query type {other}")),
    };
    Ok(match num("boost") {
        Some(b) if b != 1.0 => Query::boosted(q, b),
        _ => q,
    })
}

/// `{"FIELD": TEXT}` or `{"FIELD": {"query", "slop", "max_expansions", "boost"}}`: the text
/// analyzed by the field's analyzer into a [`Query::PhrasePrefix`] (what `bench/lucene`'s
/// `LuceneDsl.matchPhrasePrefix` builds), boosted by the field's boost.
fn match_phrase_prefix(searcher: &Searcher, body: &Value) -> Result<Query, String> {
    let (field, spec) = body
        .as_object()
        .and_then(|m| m.iter().next())
        .ok_or_else(|| format!("match_phrase_prefix without a field: {body}"))?;
    let opts = match spec {
        Value::String(_) => serde_json::json!({ "query": spec }),
        other => other.clone(),
    };
    let text = opts["query"]
        .as_str()
        .ok_or("match_phrase_prefix without query")?;
    let schema = searcher.schema();
    let id = schema
        .field_id(field)
        .ok_or_else(|| format!("unknown field {field}"))?;
    let mut tokens = Vec::new();
    if let Some(a) = schema.analyzer(id) {
        a.for_each_token(text, &mut |t| tokens.push(t.to_string()));
    }
    let q = if tokens.is_empty() {
        Query::MatchNone
    } else {
        Query::PhrasePrefix {
            field: field.clone(),
            terms: tokens
                .into_iter()
                .enumerate()
                .map(|(i, t)| (i as u32, vec![t]))
                .collect(),
            slop: opts["slop"].as_u64().unwrap_or(0) as u32,
            max_expansions: opts["max_expansions"].as_u64().unwrap_or(50) as u32,
        }
    };
    Ok(match opts["boost"].as_f64() {
        Some(b) if b != 1.0 => Query::boosted(q, b as f32),
        _ => q,
    })
}

/// The committed sentence-transformers embeddings (tests/fixtures/embeddings, made by
/// scripts/embed-fixture.py): the header (`dims`, `docs` ids, `queries` texts) and one vector
/// per document then per query, little-endian f32 rows.
pub fn embedding_fixture() -> (Value, Vec<Vec<f32>>) {
    let dir = root().join("tests/fixtures/embeddings");
    let header: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("minilm-reuters500.json")).expect("fixture header"),
    )
    .expect("fixture header JSON");
    let dims = header["dims"].as_u64().expect("dims") as usize;
    let bytes = std::fs::read(dir.join("minilm-reuters500.f32")).expect("fixture vectors");
    let rows = bytes
        .chunks_exact(dims * 4)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        })
        .collect();
    (header, rows)
}
