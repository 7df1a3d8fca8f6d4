//! Summaries of the documents a query matches, computed next to the search (Elasticsearch's
//! aggregations): requests and responses in Elasticsearch's JSON shapes, exact counts.
//!
//! - [`Aggregations::from_json`] parses an `aggs` object against the schema (fields resolved,
//!   parameters checked; mistakes are [`Error::Query`] naming the
//!   aggregation and the parameter); [`Searcher::aggregate`] runs it over the live documents
//!   matching a query and returns the `aggregations` object.
//! - Bucket aggregations: `terms`, `histogram`, `date_histogram`, `range`, `date_range`,
//!   `filter`, `filters`, each holding sub-aggregations (`aggs`). Metrics: `min`, `max`, `avg`,
//!   `sum`, `value_count`, `stats`, `cardinality` ([`cardinality`]: exact below
//!   `precision_threshold`, HyperLogLog++ above), `percentiles` (exact).
//! - Values come from the segments' columns ([`crate::codec::columns`]); a field the schema
//!   does not have is, as an unmapped field in Elasticsearch, a field without values.
//!
//! Execution (`exec`): one state per aggregation for the whole search and one collector per
//! aggregation and segment, fed `(doc, parent bucket)` in document order, as Elasticsearch's
//! `LeafBucketCollector`s; the top level hands whole blocks of matching documents (ranges of
//! them when the query matches everything) so that columns are read a block at a time.
//!
//! ```no_run
//! # fn main() -> quarry::Result<()> {
//! let index = quarry::Index::open(std::path::Path::new("flights-index"))?;
//! let searcher = index.searcher();
//! let aggs = searcher.parse_aggregations(&serde_json::json!({
//!     "carriers": {
//!         "terms": {"field": "carrier", "size": 5},
//!         "aggs": {"delay": {"avg": {"field": "dep_delay"}}}
//!     },
//!     "per_month": {"date_histogram": {"field": "date", "calendar_interval": "month"}}
//! }))?;
//! let query = searcher.parse_query("origin:JFK", &[])?;
//! let result = searcher.aggregate(&query, &aggs)?;
//! for bucket in result["carriers"]["buckets"].as_array().unwrap() {
//!     println!("{} {} {}", bucket["key"], bucket["doc_count"], bucket["delay"]["value"]);
//! }
//! # Ok(()) }
//! ```
pub mod cardinality;
pub mod format;

mod buckets;
mod exec;
mod histogram;
mod metrics;
mod request;
mod terms;

use serde_json::Value;

use crate::query::{Clause, Occur, Query};
use crate::schema::Schema;
use crate::search::Searcher;
use crate::{Error, Result};

/// A parsed aggregation request: name -> aggregation (Elasticsearch's `aggs` object).
#[derive(Debug, Clone)]
pub struct Aggregations {
    nodes: Vec<request::AggNode>,
}

impl Aggregations {
    /// Parses an `aggs` object. `filter_query` turns the query of a `filter`/`filters`
    /// aggregation (Elasticsearch DSL JSON) into a Query; the library passes one that accepts
    /// `{"query_string": {"query": "..."}}`-style input or whatever the caller gives.
    ///
    /// Date math in the request (`now-1d/d` in `date_range`, `extended_bounds`) is read
    /// against the current time.
    pub fn from_json(
        v: &Value,
        schema: &Schema,
        filter_query: &dyn Fn(&Value) -> Result<Query>,
    ) -> Result<Aggregations> {
        let parser = request::Parser {
            schema,
            filter_query,
            now_millis: jiff::Timestamp::now().as_millisecond(),
        };
        Ok(Aggregations {
            nodes: parser.aggs(v)?,
        })
    }

    /// Whether the request holds no aggregation.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The names of the top-level aggregations, in request order.
    pub fn names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }
}

impl Searcher {
    /// Parses an `aggs` object for this index, with [`filter_query`] reading the queries of
    /// `filter` and `filters`.
    pub fn parse_aggregations(&self, v: &Value) -> Result<Aggregations> {
        Aggregations::from_json(v, self.schema(), &|q| filter_query(self, q))
    }
}

/// The library's reading of a `filter`/`filters` query (a subset of Elasticsearch's query
/// DSL): `match_all`, `match_none`, `query_string` (`query`, optional `default_field` or
/// `fields`; Lucene syntax, default operator OR), `term` (`{"field": value}` or
/// `{"field": {"value": value}}`), `terms` (`{"field": [values]}`), and `bool` of those
/// (`must`, `filter`, `should`, `must_not`, `minimum_should_match`). A bare string is read as a
/// `query_string` query.
pub fn filter_query(searcher: &Searcher, v: &Value) -> Result<Query> {
    let bad = |what: &str| Error::Query(format!("unsupported filter query {v}: {what}"));
    if let Value::String(s) = v {
        return searcher.parse_query(s, &[]);
    }
    let obj = v
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| bad("a query is an object with one key, its type"))?;
    let (typ, body) = obj.iter().next().expect("one key");
    let scalar = |x: &Value| -> Result<String> {
        match x {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(bad("a term is a string, number or boolean")),
        }
    };
    let single = |body: &Value| -> Result<(String, Value)> {
        let o = body
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| bad("expected {\"field\": value}"))?;
        let (f, x) = o.iter().next().expect("one key");
        Ok((f.clone(), x.clone()))
    };
    Ok(match typ.as_str() {
        "match_all" => Query::MatchAll,
        "match_none" => Query::MatchNone,
        "query_string" => {
            let q = body
                .get("query")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("query_string needs a \"query\" string"))?;
            let mut fields: Vec<&str> = Vec::new();
            if let Some(f) = body.get("default_field").and_then(Value::as_str) {
                fields.push(f);
            }
            if let Some(list) = body.get("fields").and_then(Value::as_array) {
                fields.extend(list.iter().filter_map(Value::as_str));
            }
            searcher.parse_query(q, &fields)?
        }
        "term" => {
            let (f, x) = single(body)?;
            let x = match x {
                Value::Object(o) => o
                    .get("value")
                    .cloned()
                    .ok_or_else(|| bad("term needs a \"value\""))?,
                x => x,
            };
            Query::term(f, scalar(&x)?)
        }
        "terms" => {
            let (f, x) = single(body)?;
            let list = x
                .as_array()
                .ok_or_else(|| bad("terms needs an array of values"))?;
            let clauses = list
                .iter()
                .map(|t| {
                    Ok(Clause::new(
                        Occur::Should,
                        Query::term(f.clone(), scalar(t)?),
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Query::boolean(clauses)
        }
        "bool" => {
            let o = body
                .as_object()
                .ok_or_else(|| bad("bool takes an object"))?;
            let mut clauses = Vec::new();
            let mut min_should = 0;
            for (k, x) in o {
                let occur = match k.as_str() {
                    "must" => Occur::Must,
                    "filter" => Occur::Filter,
                    "should" => Occur::Should,
                    "must_not" => Occur::MustNot,
                    "minimum_should_match" => {
                        min_should = x
                            .as_u64()
                            .ok_or_else(|| bad("minimum_should_match must be an integer"))?
                            as u32;
                        continue;
                    }
                    "boost" => continue,
                    other => return Err(bad(&format!("unknown bool clause [{other}]"))),
                };
                let items = match x {
                    Value::Array(a) => a.clone(),
                    one => vec![one.clone()],
                };
                for q in &items {
                    clauses.push(Clause::new(occur, filter_query(searcher, q)?));
                }
            }
            if clauses.iter().all(|c| c.occur == Occur::MustNot) {
                // As Elasticsearch: only exclusions match every other document.
                clauses.push(Clause::new(Occur::Filter, Query::MatchAll));
            }
            Query::Boolean {
                clauses,
                minimum_should_match: min_should,
            }
        }
        other => return Err(bad(&format!("unknown query type [{other}]"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_can_be_shared_across_threads() {
        fn shared<T: Send + Sync + Clone + std::fmt::Debug>() {}
        shared::<Aggregations>();
    }
}
