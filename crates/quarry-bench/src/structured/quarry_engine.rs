//! How is quarry driven in the structured benchmark: its public API as a user calls it
//! (`Schema::from_json`, `Document::from_map`, `Searcher::count`, `search`, `search_sorted`,
//! `parse_aggregations` + `aggregate`), on one force-merged segment per dataset.

use std::path::Path;

use anyhow::{bail, Context, Result};
use quarry::query::{Clause, Occur, Query};
use quarry::{
    Document, Index, IndexWriter, Schema, SearchMode, Searcher, SortField, SortValue, WriterOptions,
};
use serde_json::{json, Map, Value};

use super::driver::Engine;
use super::spec::{Answer, FieldDef, Filter, Interval, Kind, Op, QuerySpec};

pub struct QuarryEngine {
    searcher: Searcher,
}

pub enum Prepared {
    Count(Query),
    Top(Query, usize),
    Sorted(Query, Vec<SortField>, usize, Option<Vec<SortValue>>),
    Aggs(Query, quarry::aggregation::Aggregations),
}

pub enum Out {
    Count(u64),
    Top(quarry::SearchResult),
    Sorted(quarry::SortedResult),
    Aggs(Value),
}

fn schema_json(fields: &[FieldDef]) -> Value {
    let fields: Vec<Value> = fields
        .iter()
        .map(|f| match f.kind {
            Kind::Long => json!({"name": f.name, "type": "integer"}),
            Kind::Date => json!({"name": f.name, "type": "date"}),
            Kind::Keyword => json!({"name": f.name, "type": "keyword"}),
            Kind::Text => json!({"name": f.name, "type": "text", "stored": false}),
        })
        .collect();
    json!({ "fields": fields })
}

/// The query of a spec: text words OR-ed (scoring, required) and filters (not scoring).
pub fn query(spec: &QuerySpec) -> Query {
    let mut clauses = Vec::new();
    if !spec.text.is_empty() {
        let words = spec
            .text
            .iter()
            .map(|w| Clause::new(Occur::Should, Query::term("text", w.as_str())))
            .collect();
        clauses.push(Clause::new(
            Occur::Must,
            Query::Boolean {
                clauses: words,
                minimum_should_match: 0,
            },
        ));
    }
    for f in &spec.filters {
        let q = match f {
            Filter::Range { field, gte, lte } => {
                let lo = gte.map(|v| v.to_string());
                let hi = lte.map(|v| v.to_string());
                Query::range(field.as_str(), lo.as_deref(), hi.as_deref(), true, true)
            }
            Filter::Term { field, value } => Query::term(field.as_str(), value.as_str()),
        };
        clauses.push(Clause::new(Occur::Filter, q));
    }
    if clauses.is_empty() {
        Query::MatchAll
    } else {
        Query::Boolean {
            clauses,
            minimum_should_match: 0,
        }
    }
}

/// The aggregation request of a spec, in Elasticsearch's JSON (`a` is its name).
fn aggs_json(op: &Op) -> Option<Value> {
    Some(match op {
        Op::Terms { field, size } => json!({"a": {"terms": {"field": field, "size": size}}}),
        Op::DateHistogram { field, interval } => {
            let i = match interval {
                Interval::Month => "month",
                Interval::Day => "day",
            };
            json!({"a": {"date_histogram": {"field": field, "calendar_interval": i, "min_doc_count": 1}}})
        }
        Op::Stats { field } => json!({"a": {"stats": {"field": field}}}),
        // Elasticsearch's largest threshold: exact below 40,000 distinct values.
        Op::Cardinality { field } => {
            json!({"a": {"cardinality": {"field": field, "precision_threshold": 40000}}})
        }
        _ => return None,
    })
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// An aggregation response (`{"a": ...}` in Elasticsearch's shape) as an answer; shared with
/// the Tantivy driver, whose responses have the same shape.
pub fn agg_answer(op: &Op, resp: &Value) -> Result<Answer> {
    let a = &resp["a"];
    Ok(match op {
        Op::Terms { .. } | Op::DateHistogram { .. } => {
            let buckets = a["buckets"]
                .as_array()
                .with_context(|| format!("no buckets in {a}"))?
                .iter()
                .map(|b| {
                    let key = match &b["key"] {
                        Value::String(s) => s.clone(),
                        k => as_i64(k).context("bucket key")?.to_string(),
                    };
                    Ok((key, b["doc_count"].as_u64().context("doc_count")?))
                })
                .collect::<Result<Vec<_>>>()?;
            Answer::Buckets { buckets }
        }
        Op::Stats { .. } => Answer::Stats {
            count: a["count"].as_u64().context("stats count")?,
            min: as_i64(&a["min"]),
            max: as_i64(&a["max"]),
            sum: as_i64(&a["sum"]).unwrap_or(0),
            avg: a["avg"].as_f64(),
        },
        Op::Cardinality { .. } => Answer::Cardinality {
            // Tantivy writes the estimate as a float.
            value: a["value"]
                .as_u64()
                .or_else(|| a["value"].as_f64().map(|f| f.round() as u64))
                .context("cardinality value")?,
        },
        _ => bail!("not an aggregation"),
    })
}

impl Engine for QuarryEngine {
    const NAME: &'static str = "quarry";
    type Prepared = Prepared;
    type Out = Out;

    fn version() -> String {
        format!("quarry {} (this checkout)", env!("CARGO_PKG_VERSION"))
    }

    fn index(dir: &Path, fields: &[FieldDef], docs: Vec<Map<String, Value>>) -> Result<String> {
        let schema = Schema::from_json(&schema_json(fields).to_string())?;
        let opts = WriterOptions {
            threads: 1,
            ram_budget_bytes: 256 << 20,
            ..Default::default()
        };
        let mut w = IndexWriter::create(dir, schema.clone(), opts)?;
        for d in &docs {
            w.add_document(Document::from_map(&schema, d)?)?;
        }
        w.commit()?;
        let stats = w.force_merge(1)?;
        drop(w);
        Ok(format!(
            "IndexWriter 1 thread, 256 MiB, one commit, force_merge(1) ({} merge(s)); integer and \
             date fields with their columns (default), keywords, text not stored",
            stats.merges
        ))
    }

    fn open(dir: &Path, _fields: &[FieldDef]) -> Result<Self> {
        Ok(QuarryEngine {
            searcher: Index::open(dir)?.searcher(),
        })
    }

    fn prepare(&self, spec: &QuerySpec) -> std::result::Result<Prepared, String> {
        let q = query(spec);
        Ok(match &spec.op {
            Op::Count => Prepared::Count(q),
            Op::TopScore { k } => Prepared::Top(q, *k),
            Op::Sort {
                field,
                desc,
                k,
                after,
                ..
            } => {
                let key = if *desc {
                    SortField::desc(field)
                } else {
                    SortField::asc(field)
                };
                let after = after.map(|(v, id)| vec![SortValue::Int(v), SortValue::Int(id)]);
                Prepared::Sorted(q, vec![key, SortField::asc("id")], *k, after)
            }
            op => {
                let json = aggs_json(op).ok_or("no aggregation")?;
                let aggs = self
                    .searcher
                    .parse_aggregations(&json)
                    .map_err(|e| e.to_string())?;
                Prepared::Aggs(q, aggs)
            }
        })
    }

    fn run(&self, p: &Prepared) -> Result<Out> {
        Ok(match p {
            Prepared::Count(q) => Out::Count(self.searcher.count(q)?),
            Prepared::Top(q, k) => Out::Top(self.searcher.search(q, *k, SearchMode::TopCount)?),
            Prepared::Sorted(q, sort, k, after) => {
                Out::Sorted(
                    self.searcher
                        .search_sorted(q, sort, *k, after.as_deref(), false)?,
                )
            }
            Prepared::Aggs(q, aggs) => Out::Aggs(self.searcher.aggregate(q, aggs)?),
        })
    }

    fn answer(&self, spec: &QuerySpec, _p: &Prepared, out: Out) -> Result<Answer> {
        Ok(match out {
            Out::Count(count) => Answer::Count { count },
            Out::Top(r) => {
                let mut ids = Vec::new();
                for h in &r.top {
                    let f = self.searcher.stored_fields(h.doc)?;
                    ids.push(f.get("id").and_then(Value::as_i64).context("stored id")?);
                }
                Answer::Hits {
                    total: r.total_hits,
                    ids,
                    scores: r.top.iter().map(|h| f64::from(h.score)).collect(),
                }
            }
            Out::Sorted(r) => Answer::Hits {
                total: r.total_hits,
                ids: r
                    .hits
                    .iter()
                    .map(|h| match h.values.get(1) {
                        Some(SortValue::Int(id)) => Ok(*id),
                        v => bail!("id sort value {v:?}"),
                    })
                    .collect::<Result<_>>()?,
                scores: vec![],
            },
            Out::Aggs(v) => agg_answer(&spec.op, &v)?,
        })
    }
}
