//! How is Tantivy 0.27 driven in the structured benchmark: i64 and date fast fields (indexed
//! too), keywords as STRING | FAST, text as TEXT; `RangeQuery` (fast-field path), `Count`,
//! `TopDocs` by score or by a two-key `order_by` (field, then `id`), and the aggregation
//! framework with the same Elasticsearch-shaped requests as quarry's.
//!
//! What Tantivy lacks, and what stands in for it (said in the report): no `search_after`, so a
//! deep page is `TopDocs::and_offset(depth)`; no `calendar_interval`, so flights per month are a
//! `range` aggregation over the calendar months' bounds; `cardinality` is a HyperLogLog sketch
//! (DataSketches, lg_k = 11) with no exact mode, compared within three standard errors.

use std::ops::Bound;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::agg_result::AggregationResults;
use tantivy::aggregation::{AggContextParams, AggregationCollector};
use tantivy::collector::sort_key::SortByStaticFastValue;
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, NumericOptions, Schema, FAST, STRING,
    TEXT,
};
use tantivy::{
    DateTime, DocAddress, Index, IndexReader, Order, ReloadPolicy, Score, TantivyDocument,
};

use super::data::{days_from_civil, DAY_MS};
use super::driver::Engine;
use super::quarry_engine::agg_answer;
use super::spec::{Answer, FieldDef, Filter, Interval, Kind, Op, QuerySpec};

pub struct TantivyEngine {
    reader: IndexReader,
    fields: Vec<(FieldDef, Field)>,
}

pub enum Prepared {
    Count(Box<dyn Query>),
    Top(Box<dyn Query>, usize),
    Sort {
        query: Box<dyn Query>,
        field: String,
        date: bool,
        desc: bool,
        k: usize,
        offset: usize,
    },
    Aggs(Box<dyn Query>, Aggregations, Option<Vec<i64>>),
}

pub enum Out {
    Count(usize),
    Top(Vec<(Score, DocAddress)>, usize),
    Ids(Vec<i64>),
    Aggs(AggregationResults),
}

fn build_schema(fields: &[FieldDef]) -> (Schema, Vec<Field>) {
    let mut b = Schema::builder();
    let handles = fields
        .iter()
        .map(|f| match f.kind {
            Kind::Long => {
                b.add_i64_field(&f.name, NumericOptions::default().set_indexed().set_fast())
            }
            Kind::Date => b.add_date_field(
                &f.name,
                DateOptions::default()
                    .set_indexed()
                    .set_fast()
                    .set_precision(DateTimePrecision::Milliseconds),
            ),
            Kind::Keyword => b.add_text_field(&f.name, STRING | FAST),
            Kind::Text => b.add_text_field(&f.name, TEXT),
        })
        .collect();
    (b.build(), handles)
}

/// Month starts (epoch ms) from the month of `from` through the month after `to`.
fn month_bounds(from: i64, to: i64) -> Vec<i64> {
    let (mut y, mut m) = super::data::civil_month(from.div_euclid(DAY_MS));
    let mut out = vec![];
    loop {
        let start = days_from_civil(y, m, 1) * DAY_MS;
        out.push(start);
        if start > to {
            break;
        }
        (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    }
    out
}

impl TantivyEngine {
    fn field(&self, name: &str) -> std::result::Result<(&FieldDef, Field), String> {
        self.fields
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(d, f)| (d, *f))
            .ok_or_else(|| format!("no field {name}"))
    }

    fn query(&self, spec: &QuerySpec) -> std::result::Result<Box<dyn Query>, String> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !spec.text.is_empty() {
            let (_, text) = self.field("text")?;
            let words: Vec<(Occur, Box<dyn Query>)> = spec
                .text
                .iter()
                .map(|w| {
                    let q: Box<dyn Query> = Box::new(TermQuery::new(
                        tantivy::Term::from_field_text(text, w),
                        IndexRecordOption::WithFreqs,
                    ));
                    (Occur::Should, q)
                })
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(words))));
        }
        for f in &spec.filters {
            let q: Box<dyn Query> = match f {
                Filter::Range { field, gte, lte } => {
                    let (def, h) = self.field(field)?;
                    let term = |v: i64| {
                        if def.kind == Kind::Date {
                            tantivy::Term::from_field_date(h, DateTime::from_timestamp_millis(v))
                        } else {
                            tantivy::Term::from_field_i64(h, v)
                        }
                    };
                    let lo = gte.map_or(Bound::Unbounded, |v| Bound::Included(term(v)));
                    let hi = lte.map_or(Bound::Unbounded, |v| Bound::Included(term(v)));
                    if lo == Bound::Unbounded && hi == Bound::Unbounded {
                        return Err("a range without bounds".into());
                    }
                    Box::new(RangeQuery::new(lo, hi))
                }
                Filter::Term { field, value } => {
                    let (_, h) = self.field(field)?;
                    Box::new(TermQuery::new(
                        tantivy::Term::from_field_text(h, value),
                        IndexRecordOption::Basic,
                    ))
                }
            };
            // Filters do not score (a zero constant), as Lucene's FILTER clauses.
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0))));
        }
        Ok(if clauses.is_empty() {
            Box::new(tantivy::query::AllQuery)
        } else {
            Box::new(BooleanQuery::new(clauses))
        })
    }

    /// The date bounds of the matches of `q` (for the per-month ranges).
    fn aggs(&self, op: &Op) -> std::result::Result<(Value, Option<Vec<i64>>), String> {
        Ok(match op {
            // segment_size: every term of every segment, so that counts are exact.
            Op::Terms { field, size } => (
                json!({"a": {"terms": {"field": field, "size": size, "segment_size": 1_000_000}}}),
                None,
            ),
            Op::DateHistogram { field, interval } => match interval {
                Interval::Day => (
                    json!({"a": {"date_histogram": {"field": field, "fixed_interval": "1d", "min_doc_count": 1}}}),
                    None,
                ),
                Interval::Month => {
                    let (lo, hi) = self.date_extent(field)?;
                    let bounds = month_bounds(lo, hi);
                    // Date range bounds are nanoseconds in Tantivy's aggregations.
                    let ranges: Vec<Value> = bounds
                        .windows(2)
                        .map(|w| json!({"from": w[0] as f64 * 1e6, "to": w[1] as f64 * 1e6}))
                        .collect();
                    (
                        json!({"a": {"range": {"field": field, "ranges": ranges, "keyed": false}}}),
                        Some(bounds),
                    )
                }
            },
            Op::Stats { field } => (json!({"a": {"stats": {"field": field}}}), None),
            Op::Cardinality { field } => (json!({"a": {"cardinality": {"field": field}}}), None),
            _ => return Err("not an aggregation".into()),
        })
    }

    /// The smallest and largest value of a date field (from its fast field's column stats).
    fn date_extent(&self, field: &str) -> std::result::Result<(i64, i64), String> {
        let searcher = self.reader.searcher();
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        for seg in searcher.segment_readers() {
            let col = seg.fast_fields().date(field).map_err(|e| e.to_string())?;
            lo = lo.min(col.min_value().into_timestamp_millis());
            hi = hi.max(col.max_value().into_timestamp_millis());
        }
        Ok((lo, hi))
    }

    fn id_of(&self, addr: DocAddress) -> Result<i64> {
        let searcher = self.reader.searcher();
        let seg = searcher.segment_reader(addr.segment_ord);
        let col = seg.fast_fields().i64("id")?;
        col.first(addr.doc_id).context("document without id")
    }
}

impl Engine for TantivyEngine {
    const NAME: &'static str = "tantivy";
    type Prepared = Prepared;
    type Out = Out;

    fn version() -> String {
        format!("{} (crate 0.27)", tantivy::version_string())
    }

    fn index(dir: &Path, fields: &[FieldDef], docs: Vec<Map<String, Value>>) -> Result<String> {
        let (schema, handles) = build_schema(fields);
        let index = Index::create_in_dir(dir, schema)?;
        let mut w = index.writer_with_num_threads::<TantivyDocument>(1, 256 << 20)?;
        for d in &docs {
            let mut doc = TantivyDocument::default();
            for (def, h) in fields.iter().zip(&handles) {
                let Some(v) = d.get(&def.name) else { continue };
                match def.kind {
                    Kind::Long => doc.add_i64(*h, v.as_i64().context("integer")?),
                    Kind::Date => doc.add_date(
                        *h,
                        DateTime::from_timestamp_millis(v.as_i64().context("date")?),
                    ),
                    Kind::Keyword | Kind::Text => match v {
                        Value::Array(a) => {
                            for s in a {
                                doc.add_text(*h, s.as_str().context("string")?);
                            }
                        }
                        v => doc.add_text(*h, v.as_str().context("string")?),
                    },
                }
            }
            w.add_document(doc)?;
        }
        w.commit()?;
        let ids = index.searchable_segment_ids()?;
        let n = ids.len();
        if n > 1 {
            w.merge(&ids).wait()?;
        }
        w.wait_merging_threads()?;
        Ok(format!(
            "IndexWriter 1 thread, 256 MB, one commit, then merge of its {n} segment(s) into one; \
             i64/date INDEXED|FAST (dates at millisecond precision), keywords STRING|FAST, text TEXT"
        ))
    }

    fn open(dir: &Path, fields: &[FieldDef]) -> Result<Self> {
        let index = Index::open_in_dir(dir)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let schema = index.schema();
        let fields = fields
            .iter()
            .map(|d| Ok((d.clone(), schema.get_field(&d.name)?)))
            .collect::<Result<_>>()?;
        Ok(TantivyEngine { reader, fields })
    }

    fn prepare(&self, spec: &QuerySpec) -> std::result::Result<Prepared, String> {
        let q = self.query(spec)?;
        // Check the query builds (field types) before timing it.
        let searcher = self.reader.searcher();
        q.weight(EnableScoring::enabled_from_searcher(&searcher))
            .map_err(|e| e.to_string())?;
        Ok(match &spec.op {
            Op::Count => Prepared::Count(q),
            Op::TopScore { k } => Prepared::Top(q, *k),
            Op::Sort {
                field,
                desc,
                k,
                offset,
                ..
            } => {
                let (def, _) = self.field(field)?;
                Prepared::Sort {
                    query: q,
                    field: field.clone(),
                    date: def.kind == Kind::Date,
                    desc: *desc,
                    k: *k,
                    offset: *offset,
                }
            }
            op => {
                let (json, bounds) = self.aggs(op)?;
                let aggs: Aggregations = serde_json::from_value(json).map_err(|e| e.to_string())?;
                Prepared::Aggs(q, aggs, bounds)
            }
        })
    }

    fn run(&self, p: &Prepared) -> Result<Out> {
        let searcher = self.reader.searcher();
        Ok(match p {
            Prepared::Count(q) => Out::Count(searcher.search(q.as_ref(), &Count)?),
            Prepared::Top(q, k) => {
                let (top, n) = searcher.search(
                    q.as_ref(),
                    &(TopDocs::with_limit(*k).order_by_score(), Count),
                )?;
                Out::Top(top, n)
            }
            Prepared::Sort {
                query,
                field,
                date,
                desc,
                k,
                offset,
            } => {
                let order = if *desc { Order::Desc } else { Order::Asc };
                let by_id = (SortByStaticFastValue::<i64>::for_field("id"), Order::Asc);
                let top = TopDocs::with_limit(*k).and_offset(*offset);
                let ids: Vec<i64> = if *date {
                    let c = top.order_by((
                        (SortByStaticFastValue::<DateTime>::for_field(field), order),
                        by_id,
                    ));
                    searcher
                        .search(query.as_ref(), &c)?
                        .into_iter()
                        .map(|((_, id), _)| id.unwrap_or(-1))
                        .collect()
                } else {
                    let c = top.order_by((
                        (SortByStaticFastValue::<i64>::for_field(field), order),
                        by_id,
                    ));
                    searcher
                        .search(query.as_ref(), &c)?
                        .into_iter()
                        .map(|((_, id), _)| id.unwrap_or(-1))
                        .collect()
                };
                Out::Ids(ids)
            }
            Prepared::Aggs(q, aggs, _) => {
                let c = AggregationCollector::from_aggs(aggs.clone(), AggContextParams::default());
                Out::Aggs(searcher.search(q.as_ref(), &c)?)
            }
        })
    }

    fn answer(&self, spec: &QuerySpec, p: &Prepared, out: Out) -> Result<Answer> {
        Ok(match out {
            Out::Count(n) => Answer::Count { count: n as u64 },
            Out::Top(top, n) => Answer::Hits {
                total: n as u64,
                ids: top
                    .iter()
                    .map(|(_, a)| self.id_of(*a))
                    .collect::<Result<_>>()?,
                scores: top.iter().map(|(s, _)| f64::from(*s)).collect(),
            },
            Out::Ids(ids) => {
                // The total is a separate count (the sorted collector does not count).
                let Prepared::Sort { query, .. } = p else {
                    bail!("ids of a non-sort query")
                };
                let total = self.reader.searcher().search(query.as_ref(), &Count)? as u64;
                Answer::Hits {
                    total,
                    ids,
                    scores: vec![],
                }
            }
            Out::Aggs(res) => {
                let v = serde_json::to_value(&res)?;
                match (p, &spec.op) {
                    (Prepared::Aggs(_, _, Some(_)), Op::DateHistogram { .. }) => {
                        // Tantivy adds the open buckets before the first and after the last
                        // bound; a bucket's key is its `from` (nanoseconds as a float: exact
                        // to the millisecond after rounding).
                        let mut buckets = Vec::new();
                        for b in v["a"]["buckets"].as_array().context("range buckets")? {
                            let n = b["doc_count"].as_u64().context("doc_count")?;
                            if n == 0 {
                                continue;
                            }
                            let from = b["from"].as_f64().with_context(|| {
                                format!("{n} documents before the first month: {b}")
                            })?;
                            buckets.push((((from / 1e6).round() as i64).to_string(), n));
                        }
                        Answer::Buckets { buckets }
                    }
                    _ => agg_answer(&spec.op, &v)?,
                }
            }
        })
    }
}
