//! What does a `knn` search section ask for, and which documents does it return?
//!
//! A section (`_search`'s top-level `knn`, one entry of a list of them, or a `knn` retriever)
//! names a `dense_vector` field, a `query_vector`, `k`, `num_candidates`, an optional `filter`
//! (a query or a list of queries, all of which must match), an optional `similarity` (a
//! minimum similarity in the field's own units: the cosine, the dot product, or the largest
//! `l2_norm` distance) and, at the top level, a `boost`. Its hits are the library's
//! ([`quarry::search::knn`]), scored as Elasticsearch scores the field's similarity, times the
//! boost. Every check Elasticsearch makes is a 400 naming the parameter.
use std::collections::HashMap;

use quarry::query::{Clause, Occur, Query};
use quarry::search::knn::{KnnQuery, Passage, MAX_NUM_CANDIDATES};
use quarry::vector::Similarity;
use quarry::{DocAddress, FieldType, Hit, Searcher};
use serde_json::{json, Value};

use crate::dsl;
use crate::error::ApiError;

/// One parsed kNN section.
#[derive(Debug, Clone)]
pub struct KnnSection {
    /// The library's query (field, vector, `k`, `num_candidates`, filter).
    pub query: KnnQuery,
    /// The field's similarity.
    pub similarity: Similarity,
    /// The lowest score a hit may have: the `similarity` threshold turned into a score.
    pub min_score: Option<f32>,
    /// Each hit's score is multiplied by this.
    pub boost: f32,
}

/// Where a section comes from: what keys it may have differs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    /// `_search`'s `knn` (may carry `boost`).
    Search,
    /// A `knn` retriever.
    Retriever,
}

fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::parsing(reason)
}

/// Parses `_search`'s `knn`: one section or a list of them; `size` is the default `k`.
pub fn parse_sections(
    v: &Value,
    searcher: &Searcher,
    size: usize,
) -> Result<Vec<KnnSection>, ApiError> {
    match v {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|s| parse_section(s, searcher, size, Place::Search))
            .collect(),
        Value::Array(_) => Err(bad("[knn] must not be an empty list")),
        other => Ok(vec![parse_section(other, searcher, size, Place::Search)?]),
    }
}

/// Parses one section; `default_k` is `k` when it is not given (the request's `size`).
pub fn parse_section(
    v: &Value,
    searcher: &Searcher,
    default_k: usize,
    place: Place,
) -> Result<KnnSection, ApiError> {
    let Value::Object(m) = v else {
        return Err(bad(format!("[knn] must be an object, found {v}")));
    };
    let keys: &[&str] = match place {
        Place::Search => &[
            "field",
            "query_vector",
            "k",
            "num_candidates",
            "filter",
            "similarity",
            "boost",
        ],
        Place::Retriever => &[
            "field",
            "query_vector",
            "k",
            "num_candidates",
            "filter",
            "similarity",
        ],
    };
    if let Some(k) = m.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(bad(format!(
            "[knn] unknown field [{k}] (supported: {})",
            keys.join(", ")
        )));
    }
    let field = match m.get("field") {
        Some(Value::String(f)) => f.clone(),
        Some(other) => {
            return Err(bad(format!(
                "[knn] [field] must be a string, found {other}"
            )))
        }
        None => return Err(bad("[knn] requires [field]")),
    };
    let schema = searcher.schema();
    let entry = schema
        .field_by_name(&field)
        .filter(|_| field != crate::mapping::ID_FIELD)
        .ok_or_else(|| {
            bad(format!(
                "[knn] field [{field}] does not exist in the mapping"
            ))
        })?;
    let options = match entry.vector_options() {
        Some(o) if entry.field_type == FieldType::Vector => o,
        _ => {
            return Err(bad(format!(
                "[knn] queries are only supported on [dense_vector] fields; field [{field}] is of type [{}]",
                crate::mapping::type_name(entry.field_type)
            )))
        }
    };
    let vector = query_vector(m.get("query_vector"), options.dims as usize, &field)?;
    let int = |key: &str| -> Result<Option<usize>, ApiError> {
        match m.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(|x| Some(x.min(usize::MAX as u64) as usize))
                .ok_or_else(|| {
                    bad(format!(
                        "[knn] [{key}] must be a non-negative integer, found {v}"
                    ))
                }),
        }
    };
    let k = int("k")?.unwrap_or(default_k);
    if k == 0 {
        return Err(bad("[knn] [k] must be greater than 0"));
    }
    // Elasticsearch's default: 1.5 k, at most 10,000.
    let num_candidates =
        int("num_candidates")?.unwrap_or_else(|| (k.saturating_add(k / 2)).min(MAX_NUM_CANDIDATES));
    if num_candidates > MAX_NUM_CANDIDATES {
        return Err(bad(format!(
            "[knn] [num_candidates] cannot exceed [{MAX_NUM_CANDIDATES}], found [{num_candidates}]"
        )));
    }
    if num_candidates < k {
        return Err(bad(format!(
            "[knn] [num_candidates] ({num_candidates}) cannot be less than [k] ({k})"
        )));
    }
    let filter = match m.get("filter") {
        None => None,
        Some(Value::Array(list)) if list.is_empty() => None,
        Some(Value::Array(list)) => Some(Query::boolean(
            list.iter()
                .map(|q| Ok(Clause::new(Occur::Filter, dsl::translate(q, searcher)?)))
                .collect::<Result<Vec<_>, ApiError>>()?,
        )),
        Some(q) => Some(dsl::translate(q, searcher)?),
    };
    let number = |key: &str| -> Result<Option<f32>, ApiError> {
        match m.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(|x| x as f32)
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| bad(format!("[knn] [{key}] must be a number, found {v}"))),
        }
    };
    let min_score = number("similarity")?.map(|t| threshold_score(options.similarity, t));
    let boost = number("boost")?.unwrap_or(1.0);
    if boost < 0.0 {
        return Err(bad(format!(
            "[knn] [boost] must be non-negative, found [{boost}]"
        )));
    }
    let mut query = KnnQuery::new(&field, vector, k).num_candidates(num_candidates);
    query.filter = filter;
    Ok(KnnSection {
        query,
        similarity: options.similarity,
        min_score,
        boost,
    })
}

/// The score of a document exactly at similarity `t`: the lowest score a hit may have. For
/// `l2_norm`, `t` is the largest distance (Elasticsearch's meaning); otherwise the smallest
/// cosine or dot product.
pub fn threshold_score(similarity: Similarity, t: f32) -> f32 {
    let compared = match similarity {
        Similarity::L2Norm => -(t * t),
        _ => t,
    };
    similarity.score(compared)
}

/// The query vector: an array of `dims` finite numbers.
fn query_vector(v: Option<&Value>, dims: usize, field: &str) -> Result<Vec<f32>, ApiError> {
    let items = match v {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(bad(format!(
                "[knn] [query_vector] must be an array of numbers, found {other}"
            )))
        }
        None => {
            return Err(bad(
                "[knn] requires [query_vector] or [query_vector_builder]",
            ))
        }
    };
    if items.len() != dims {
        return Err(bad(format!(
            "[knn] the query vector has a different number of dimensions [{}] than the document vectors of field [{field}] [{dims}]",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_f64()
                .map(|f| f as f32)
                .filter(|f| f.is_finite())
                .ok_or_else(|| {
                    bad(format!(
                        "[knn] [query_vector] value {i} ({x}) is not a finite number"
                    ))
                })
        })
        .collect()
}

/// The passage of a document's text whose vector scored its kNN hit, and the field the
/// request named (a `semantic_text` field for its hidden vector field). A hit shows it as
/// `_passage`: Elasticsearch has no place for the byte span of the chunk that matched (its
/// semantic highlighter gives the chunk's text, which [`crate::highlight`] does too).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchedPassage {
    pub field: String,
    pub passage: Passage,
}

impl MatchedPassage {
    /// The hit's `_passage` object.
    pub fn to_json(&self) -> Value {
        let p = &self.passage;
        json!({"field": self.field, "index": p.index, "start": p.start, "end": p.end})
    }
}

/// The matched passage of each document a search's kNN sections found (the first section's
/// when several found it).
pub type Passages = HashMap<DocAddress, MatchedPassage>;

/// Adds the passages of `more` that `into` does not have yet (earlier sections first).
pub fn merge_passages(into: &mut Passages, more: Passages) {
    for (doc, p) in more {
        into.entry(doc).or_insert(p);
    }
}

impl KnnSection {
    /// The section's hits on `searcher`, best first: at most `k`, at least `min_score`, scores
    /// times the boost; and the passage that scored each hit whose vector is a passage.
    pub fn run(&self, searcher: &Searcher) -> Result<(Vec<Hit>, Passages), ApiError> {
        let mut found = searcher.knn_hits(&self.query)?;
        if let Some(min) = self.min_score {
            found.retain(|h| h.hit.score >= min);
        }
        let field = self
            .query
            .field
            .strip_prefix(crate::mapping::SEMANTIC_PREFIX)
            .unwrap_or(&self.query.field);
        let mut passages = Passages::new();
        let mut hits = Vec::with_capacity(found.len());
        for mut h in found {
            h.hit.score *= self.boost;
            if let Some(passage) = h.passage {
                let field = field.to_string();
                passages.insert(h.hit.doc, MatchedPassage { field, passage });
            }
            hits.push(h.hit);
        }
        Ok((hits, passages))
    }
}

/// The documents of `hits` as a query: `_id` terms, any of which matches (the kNN hits as a
/// filter, for totals, aggregations and the text query's scores of these documents).
pub fn ids_query(searcher: &Searcher, hits: &[Hit]) -> Result<Query, ApiError> {
    let mut clauses = Vec::with_capacity(hits.len());
    for h in hits {
        let stored = searcher.stored_fields(h.doc)?;
        let id = stored
            .get(crate::mapping::ID_FIELD)
            .and_then(Value::as_str)
            .unwrap_or_default();
        clauses.push(Clause::new(
            Occur::Should,
            Query::term(crate::mapping::ID_FIELD, id),
        ));
    }
    Ok(if clauses.is_empty() {
        Query::MatchNone
    } else {
        Query::boolean(clauses)
    })
}

/// Sums the scores of each document over `lists` (Elasticsearch's combination of several kNN
/// sections and a query), best first, ties in index order.
pub fn sum(lists: &[Vec<Hit>]) -> Vec<Hit> {
    let mut by_doc: std::collections::HashMap<quarry::DocAddress, Hit> = Default::default();
    for h in lists.iter().flatten() {
        by_doc
            .entry(h.doc)
            .and_modify(|e| e.score += h.score)
            .or_insert(*h);
    }
    let mut out: Vec<Hit> = by_doc.into_values().collect();
    sort(&mut out);
    out
}

/// Sorts hits best first, equal scores in index order.
pub fn sort(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.seq.cmp(&b.seq)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn searcher() -> Searcher {
        let schema = quarry::Schema::builder()
            .keyword("_id")
            .text("body", true)
            .vector("v", 3, Similarity::L2Norm)
            .build();
        Searcher::new(schema, std::sync::Arc::new(Vec::new()))
    }

    #[test]
    fn sections_parse_with_elasticsearch_s_defaults() {
        let s = searcher();
        let k = parse_section(
            &json!({"field": "v", "query_vector": [1, 2, 3], "k": 10}),
            &s,
            5,
            Place::Search,
        )
        .unwrap();
        assert_eq!(k.query.k, 10);
        assert_eq!(k.query.num_candidates, Some(15));
        assert_eq!(k.query.vector, vec![1.0, 2.0, 3.0]);
        assert_eq!(k.boost, 1.0);
        let k = parse_section(
            &json!({"field": "v", "query_vector": [1, 2, 3], "similarity": 2.0,
                    "filter": [{"term": {"body": "x"}}], "boost": 2}),
            &s,
            5,
            Place::Search,
        )
        .unwrap();
        assert_eq!(k.query.k, 5);
        assert_eq!(k.min_score, Some(1.0 / 5.0));
        assert!(k.query.filter.is_some());
        assert_eq!(k.boost, 2.0);
        let list = parse_sections(
            &json!([{"field": "v", "query_vector": [1, 2, 3]},
                    {"field": "v", "query_vector": [3, 2, 1], "k": 2}]),
            &s,
            4,
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].query.k, 2);
    }

    #[test]
    fn bad_sections_are_refused_by_name() {
        let s = searcher();
        for (v, needle) in [
            (json!({"field": "v", "query_vector": [1, 2]}), "dimensions"),
            (
                json!({"field": "v", "query_vector": [1, 2, "x"]}),
                "query_vector",
            ),
            (
                json!({"field": "v", "query_vector": "1,2,3"}),
                "query_vector",
            ),
            (json!({"field": "v"}), "query_vector"),
            (
                json!({"field": "body", "query_vector": [1, 2, 3]}),
                "[body]",
            ),
            (
                json!({"field": "nope", "query_vector": [1, 2, 3]}),
                "[nope]",
            ),
            (json!({"query_vector": [1, 2, 3]}), "[field]"),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "k": 0}),
                "[k]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "k": 20, "num_candidates": 10}),
                "[num_candidates]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "k": 20, "num_candidates": 10001}),
                "[num_candidates]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "k": 20000}),
                "[num_candidates]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "bogus": 1}),
                "[bogus]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "boost": -1}),
                "[boost]",
            ),
            (
                json!({"field": "v", "query_vector": [1, 2, 3], "filter": {"nope": {}}}),
                "nope",
            ),
        ] {
            let e = parse_section(&v, &s, 10, Place::Search).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{v}");
            assert!(e.reason.contains(needle), "{v}: {}", e.reason);
        }
        let e = parse_section(
            &json!({"field": "v", "query_vector": [1, 2, 3], "boost": 2}),
            &s,
            10,
            Place::Retriever,
        )
        .unwrap_err();
        assert!(e.reason.contains("[boost]"), "{}", e.reason);
        assert!(parse_sections(&json!([]), &s, 10).is_err());
    }

    #[test]
    fn thresholds_are_in_the_similarity_s_units() {
        assert_eq!(threshold_score(Similarity::Cosine, 0.5), 0.75);
        assert_eq!(threshold_score(Similarity::DotProduct, 0.0), 0.5);
        assert_eq!(threshold_score(Similarity::L2Norm, 3.0), 0.1);
        assert_eq!(threshold_score(Similarity::MaxInnerProduct, 2.0), 3.0);
    }

    #[test]
    fn sums_add_scores_of_the_same_document() {
        let d = |doc: u32, score: f32| Hit {
            score,
            doc: quarry::DocAddress { segment: 0, doc },
            seq: u64::from(doc),
        };
        let out = sum(&[vec![d(1, 0.5), d(2, 0.5)], vec![d(2, 0.25), d(3, 0.9)]]);
        let got: Vec<(u32, f32)> = out.iter().map(|h| (h.doc.doc, h.score)).collect();
        assert_eq!(got, vec![(3, 0.9), (2, 0.75), (1, 0.5)]);
    }
}
