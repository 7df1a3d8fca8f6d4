//! What do a search's `knn` sections and `retriever` rank, and how is their answer shaped?
//!
//! - **`knn`** (one section or a list, [`crate::knn`]), alone or beside `query`: as in
//!   Elasticsearch, every section contributes its `k` best documents, and a document's score is
//!   the sum of its boosted scores over the sections and the query (a document the query matches
//!   but no section found scores its query score). `from` and `size` page through that combined
//!   ranking; `hits.total` counts the documents the query matches or a section found.
//! - **`retriever`**: `standard` (`query`, `filter`), `knn` (a section without `boost`), `rrf`
//!   (`retrievers`, `rank_constant` 60, `rank_window_size` defaulting to `size`) and `linear`
//!   (`retrievers` of `{"retriever", "weight", "normalizer"}`, `rank_window_size`), nested at
//!   will. A compound retriever ranks each child's best `rank_window_size` documents and fuses
//!   them with [`quarry::fusion`] (reciprocal rank fusion or a weighted sum of normalized
//!   scores). `hits.total` and aggregations cover every document a `standard` retriever's query
//!   matches or a `knn` retriever returned.
//!
//! Both use one searcher (one point in time) for every part of the request.
use std::collections::HashSet;
use std::time::{Duration, Instant};

use quarry::fusion::{self, Normalizer};
use quarry::query::{Clause, Occur, Query};
use quarry::{Hit, SearchMode, SearchOptions, Searcher};
use serde_json::{json, Map, Value};

use crate::dsl;
use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::knn::{self, KnnSection, Passages, Place};
use crate::search::{SearchRequest, TrackTotal};

/// A retriever tree.
#[derive(Debug, Clone)]
pub enum Retriever {
    /// A query (its `filter` folded in as filter clauses).
    Standard(Query),
    /// A kNN search.
    Knn(KnnSection),
    /// Reciprocal rank fusion of the children's rankings.
    Rrf {
        children: Vec<Retriever>,
        rank_constant: u32,
        window: usize,
    },
    /// A weighted sum of the children's normalized scores.
    Linear {
        children: Vec<(Retriever, f32, Normalizer)>,
        window: usize,
    },
}

/// What a search ranks besides its plain query.
#[derive(Debug, Clone)]
pub enum Ranked {
    /// `knn` sections; `with_query` when the request also gave a query (body or `q`).
    Knn {
        sections: Vec<KnnSection>,
        with_query: bool,
    },
    /// A `retriever`.
    Retriever(Retriever),
}

fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::parsing(reason)
}

/// The `knn` or `retriever` of a search body `m`, if any. `query_given` says whether the
/// request has a query (in the body or as `q`); `size` is the default `k` and
/// `rank_window_size`. Refuses, as Elasticsearch does, a retriever beside `query` or `knn`,
/// and either beside `sort`.
pub fn parse(
    m: &Map<String, Value>,
    searcher: &Searcher,
    query_given: bool,
    size: usize,
) -> Result<Option<Ranked>, ApiError> {
    let ranked = match (m.get("retriever"), m.get("knn")) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(bad("cannot specify [retriever] and [knn]")),
        (Some(_), None) if query_given => {
            return Err(bad("cannot specify [retriever] and [query]"))
        }
        (Some(r), None) => {
            let r = parse_retriever(r, searcher, size)?;
            if let Retriever::Rrf { window, .. } | Retriever::Linear { window, .. } = r {
                if size > window {
                    return Err(bad(format!(
                        "[rank_window_size] ({window}) must be greater than or equal to [size] ({size})"
                    )));
                }
            }
            Ranked::Retriever(r)
        }
        (None, Some(k)) => Ranked::Knn {
            sections: knn::parse_sections(k, searcher, size)?,
            with_query: query_given,
        },
    };
    for key in ["sort", "search_after"] {
        if m.contains_key(key) {
            return Err(bad(format!(
                "[{key}] is not supported together with [knn] or [retriever]"
            )));
        }
    }
    Ok(Some(ranked))
}

/// The one retriever `{"name": {...}}` of `v`.
fn single(v: &Value) -> Result<(&str, &Map<String, Value>), ApiError> {
    match v {
        Value::Object(m) if m.len() == 1 => {
            let (k, body) = m.iter().next().expect("one entry");
            match body {
                Value::Object(b) => Ok((k.as_str(), b)),
                other => Err(bad(format!(
                    "[{k}] retriever must be an object, found {other}"
                ))),
            }
        }
        other => Err(bad(format!(
            "a retriever is an object with one key (standard, knn, rrf or linear), found {other}"
        ))),
    }
}

fn check_keys(name: &str, m: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(bad(format!(
            "[{name}] retriever: unknown field [{k}] (supported: {})",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn positive(
    name: &str,
    m: &Map<String, Value>,
    key: &str,
    default: usize,
) -> Result<usize, ApiError> {
    match m.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|x| *x >= 1)
            .map(|x| x.min(u64::from(u32::MAX)) as usize)
            .ok_or_else(|| {
                bad(format!(
                    "[{name}] retriever: [{key}] must be an integer of at least 1, found {v}"
                ))
            }),
    }
}

/// Parses a retriever; `size` is the default `k` and `rank_window_size`.
pub fn parse_retriever(v: &Value, searcher: &Searcher, size: usize) -> Result<Retriever, ApiError> {
    let (name, m) = single(v)?;
    match name {
        "standard" => {
            check_keys(name, m, &["query", "filter"])?;
            let query = match m.get("query") {
                Some(q) => dsl::translate(q, searcher)?,
                None => Query::MatchAll,
            };
            let filters: Vec<&Value> = match m.get("filter") {
                None => Vec::new(),
                Some(Value::Array(list)) => list.iter().collect(),
                Some(f) => vec![f],
            };
            if filters.is_empty() {
                return Ok(Retriever::Standard(query));
            }
            let mut clauses = vec![Clause::new(Occur::Must, query)];
            for f in filters {
                clauses.push(Clause::new(Occur::Filter, dsl::translate(f, searcher)?));
            }
            Ok(Retriever::Standard(Query::boolean(clauses)))
        }
        "knn" => Ok(Retriever::Knn(knn::parse_section(
            &Value::Object(m.clone()),
            searcher,
            size,
            Place::Retriever,
        )?)),
        "rrf" | "linear" => {
            let allowed: &[&str] = if name == "rrf" {
                &["retrievers", "rank_constant", "rank_window_size"]
            } else {
                &["retrievers", "rank_window_size", "normalizer"]
            };
            check_keys(name, m, allowed)?;
            let window = positive(name, m, "rank_window_size", size.max(1))?;
            let list = match m.get("retrievers") {
                Some(Value::Array(list)) if !list.is_empty() => list,
                _ => {
                    return Err(bad(format!(
                        "[{name}] retriever: [retrievers] must be a non-empty list of retrievers"
                    )))
                }
            };
            if name == "rrf" {
                let rank_constant = positive(name, m, "rank_constant", 60)? as u32;
                let children = list
                    .iter()
                    .map(|c| parse_retriever(c, searcher, size))
                    .collect::<Result<_, _>>()?;
                return Ok(Retriever::Rrf {
                    children,
                    rank_constant,
                    window,
                });
            }
            let default_norm = match m.get("normalizer") {
                None => Normalizer::None,
                Some(n) => normalizer(n)?,
            };
            let children = list
                .iter()
                .map(|c| linear_child(c, searcher, size, default_norm))
                .collect::<Result<_, _>>()?;
            Ok(Retriever::Linear { children, window })
        }
        other => Err(bad(format!(
            "unknown retriever [{other}] (quarry supports standard, knn, rrf, linear)"
        ))),
    }
}

fn normalizer(v: &Value) -> Result<Normalizer, ApiError> {
    v.as_str().and_then(Normalizer::from_name).ok_or_else(|| {
        bad(format!(
            "[linear] retriever: unknown [normalizer] {v} (supported: none, minmax, l2_norm)"
        ))
    })
}

/// One entry of a `linear` retriever's `retrievers`: `{"retriever", "weight", "normalizer"}`.
fn linear_child(
    v: &Value,
    searcher: &Searcher,
    size: usize,
    default_norm: Normalizer,
) -> Result<(Retriever, f32, Normalizer), ApiError> {
    let Value::Object(m) = v else {
        return Err(bad(format!(
            "[linear] retriever: each of [retrievers] is {{\"retriever\": ..., \"weight\": ..., \"normalizer\": ...}}, found {v}"
        )));
    };
    let Some(r) = m.get("retriever") else {
        return Err(bad(
            "[linear] retriever: each of [retrievers] needs a [retriever]",
        ));
    };
    check_keys("linear", m, &["retriever", "weight", "normalizer"])?;
    let weight = match m.get("weight") {
        None => 1.0,
        Some(w) => w
            .as_f64()
            .map(|x| x as f32)
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "[linear] retriever: [weight] must be a non-negative number, found {w}"
                ))
            })?,
    };
    let norm = match m.get("normalizer") {
        None => default_norm,
        Some(n) => normalizer(n)?,
    };
    Ok((parse_retriever(r, searcher, size)?, weight, norm))
}

/// A retriever's answer: its ranking, a query matching every document it considered (for
/// totals and aggregations), and the passage that scored each document a kNN search found
/// by one of its passages.
struct Ranking {
    hits: Vec<Hit>,
    matching: Query,
    timed_out: bool,
    passages: Passages,
}

type Key = (u64, quarry::DocAddress);

fn key(h: &Hit) -> Key {
    (h.seq, h.doc)
}

fn any_of(queries: Vec<Query>) -> Query {
    Query::boolean(
        queries
            .into_iter()
            .map(|q| Clause::new(Occur::Should, q))
            .collect(),
    )
}

/// Runs retriever `r` for its best `window` documents.
fn eval(
    r: &Retriever,
    s: &Searcher,
    window: usize,
    opts: &SearchOptions,
) -> Result<Ranking, ApiError> {
    match r {
        Retriever::Standard(q) => {
            let res = s.search_with(q, window.max(1), SearchMode::Top, opts)?;
            let mut hits = res.top;
            hits.truncate(window);
            Ok(Ranking {
                hits,
                matching: q.clone(),
                timed_out: res.timed_out,
                passages: Passages::new(),
            })
        }
        Retriever::Knn(section) => {
            let (mut hits, passages) = section.run(s)?;
            hits.truncate(window);
            Ok(Ranking {
                matching: knn::ids_query(s, &hits)?,
                hits,
                timed_out: false,
                passages,
            })
        }
        Retriever::Rrf {
            children,
            rank_constant,
            window: w,
        } => {
            let parts = children
                .iter()
                .map(|c| eval(c, s, *w, opts))
                .collect::<Result<Vec<_>, _>>()?;
            let keys: Vec<Vec<Key>> = parts
                .iter()
                .map(|p| p.hits.iter().map(key).collect())
                .collect();
            let lists: Vec<(f32, &[Key])> = keys.iter().map(|k| (1.0, &k[..])).collect();
            let fused = fusion::rrf(&lists, *rank_constant, *w);
            Ok(combine(parts, fused, (*w).min(window)))
        }
        Retriever::Linear {
            children,
            window: w,
        } => {
            let parts = children
                .iter()
                .map(|(c, _, _)| eval(c, s, *w, opts))
                .collect::<Result<Vec<_>, _>>()?;
            let scored: Vec<Vec<(Key, f32)>> = parts
                .iter()
                .map(|p| p.hits.iter().map(|h| (key(h), h.score)).collect())
                .collect();
            let lists: Vec<fusion::Weighted<'_, Key>> = children
                .iter()
                .zip(&scored)
                .map(|((_, weight, norm), list)| (*weight, *norm, &list[..]))
                .collect();
            let fused = fusion::linear(&lists, *w);
            Ok(combine(parts, fused, (*w).min(window)))
        }
    }
}

/// A compound retriever's ranking from its children's answers and the fused list (a
/// document's passage is that of the first child that has one for it).
fn combine(parts: Vec<Ranking>, fused: Vec<(Key, f32)>, window: usize) -> Ranking {
    let timed_out = parts.iter().any(|p| p.timed_out);
    let mut passages = Passages::new();
    let mut matching = Vec::with_capacity(parts.len());
    for p in parts {
        knn::merge_passages(&mut passages, p.passages);
        matching.push(p.matching);
    }
    Ranking {
        hits: fused
            .into_iter()
            .take(window)
            .map(|((seq, doc), score)| Hit { score, doc, seq })
            .collect(),
        matching: any_of(matching),
        timed_out,
        passages,
    }
}

/// The ranking of `knn` sections, with the request's query when it has one (see the module
/// documentation); the best `n` are exact.
fn knn_ranking(
    sections: &[KnnSection],
    query: Option<&Query>,
    s: &Searcher,
    n: usize,
    opts: &SearchOptions,
) -> Result<Ranking, ApiError> {
    let mut lists = Vec::with_capacity(sections.len());
    let mut passages = Passages::new();
    for k in sections {
        let (hits, found) = k.run(s)?;
        lists.push(hits);
        knn::merge_passages(&mut passages, found);
    }
    let knn_hits = knn::sum(&lists);
    let ids = knn::ids_query(s, &knn_hits)?;
    let Some(query) = query else {
        return Ok(Ranking {
            hits: knn_hits,
            matching: ids,
            timed_out: false,
            passages,
        });
    };
    // The combined best n are among the query's best n and the kNN hits; the kNN hits outside
    // the query's best n get their query scores from the query restricted to them.
    let top = s.search_with(query, n.max(1), SearchMode::Top, opts)?;
    let in_top: HashSet<quarry::DocAddress> = top.top.iter().map(|h| h.doc).collect();
    let rest: Vec<Hit> = knn_hits
        .iter()
        .filter(|h| !in_top.contains(&h.doc))
        .copied()
        .collect();
    let mut rest_scores = Vec::new();
    if !rest.is_empty() {
        let restricted = Query::boolean(vec![
            Clause::new(Occur::Must, query.clone()),
            Clause::new(Occur::Filter, knn::ids_query(s, &rest)?),
        ]);
        rest_scores = s.search(&restricted, rest.len(), SearchMode::Top)?.top;
    }
    Ok(Ranking {
        hits: knn::sum(&[top.top, rest_scores, knn_hits]),
        matching: any_of(vec![query.clone(), ids]),
        timed_out: top.timed_out,
        passages,
    })
}

/// Runs a search whose request has `knn` or a `retriever` and builds the Elasticsearch
/// response (hits, total, aggregations, highlighting).
/// `owners[i]` is the index of the searcher's segment `i` (several with one mapping, see
/// [`crate::multi_index`]).
pub fn run(
    searcher: &Searcher,
    owners: &[&IndexHandle],
    req: &SearchRequest,
    ranked: &Ranked,
    took_start: Instant,
    default_timeout: Option<Duration>,
) -> Result<Value, ApiError> {
    let opts = req.options(took_start, default_timeout);
    let n = req.from + req.size;
    let (ranking, exact_total) = match ranked {
        Ranked::Knn {
            sections,
            with_query,
        } => {
            let r = knn_ranking(
                sections,
                with_query.then_some(&req.query),
                searcher,
                n,
                &opts,
            )?;
            // Without a query the kNN hits are all there is.
            let total = (!with_query).then_some(r.hits.len() as u64);
            (r, total)
        }
        Ranked::Retriever(r) => (eval(r, searcher, n, &opts)?, None),
    };
    // The request as the hits, highlighting and aggregations see it: matching what was ranked.
    let mut shown = req.clone();
    shown.query = ranking.matching;
    let highlighter = crate::search::highlighter_of(searcher, &shown);
    let mut hits = Vec::new();
    for hit in ranking.hits.iter().skip(req.from).take(req.size) {
        hits.push(crate::search::hit_json(
            owners[hit.doc.segment as usize],
            &shown,
            searcher,
            highlighter.as_ref(),
            hit.doc,
            Some(hit.score),
            ranking.passages.get(&hit.doc),
        )?);
    }
    let max_score = ranking.hits.first().map(|h| h.score);
    let mut hits_obj = json!({"max_score": max_score, "hits": hits});
    if let TrackTotal::UpTo(limit) = req.track_total {
        let total = match exact_total {
            Some(t) => t,
            None => s_count(searcher, &shown.query, &opts)?,
        };
        let (value, relation) = if total > limit {
            (limit, "gte")
        } else {
            (total, "eq")
        };
        hits_obj["total"] = json!({"value": value, "relation": relation});
    }
    let shards = crate::search::shard_count(owners);
    let mut body = json!({
        "took": took_start.elapsed().as_millis() as u64,
        "timed_out": ranking.timed_out,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": hits_obj,
    });
    if let Some(a) = crate::search::aggregations_of(searcher, &shown)? {
        body["aggregations"] = a;
    }
    Ok(body)
}

fn s_count(s: &Searcher, q: &Query, opts: &SearchOptions) -> Result<u64, ApiError> {
    Ok(s.search_with(q, 0, SearchMode::Count, opts)?.total_hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry::vector::Similarity;

    fn searcher() -> Searcher {
        let schema = quarry::Schema::builder()
            .keyword("_id")
            .text("body", true)
            .vector("v", 2, Similarity::Cosine)
            .build();
        Searcher::new(schema, std::sync::Arc::new(Vec::new()))
    }

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn retrievers_parse_with_elasticsearch_s_defaults() {
        let s = searcher();
        let knn =
            json!({"knn": {"field": "v", "query_vector": [1, 0], "k": 3, "num_candidates": 5}});
        let m = body(json!({"retriever": {"rrf": {"retrievers": [
            {"standard": {"query": {"match": {"body": "x"}}, "filter": [{"term": {"body": "y"}}]}},
            knn.clone()]}}}));
        let Some(Ranked::Retriever(Retriever::Rrf {
            children,
            rank_constant,
            window,
        })) = parse(&m, &s, false, 7).unwrap()
        else {
            panic!("not an rrf retriever")
        };
        assert_eq!((rank_constant, window, children.len()), (60, 7, 2));
        assert!(
            matches!(&children[0], Retriever::Standard(Query::Boolean { clauses, .. }) if clauses.len() == 2)
        );
        assert!(matches!(&children[1], Retriever::Knn(k) if k.query.k == 3));
        let m = body(
            json!({"retriever": {"linear": {"normalizer": "minmax", "rank_window_size": 20,
            "retrievers": [{"retriever": knn.clone(), "weight": 2},
                           {"retriever": knn.clone(), "normalizer": "l2_norm"}]}}}),
        );
        let Some(Ranked::Retriever(Retriever::Linear { children, window })) =
            parse(&m, &s, false, 10).unwrap()
        else {
            panic!("not a linear retriever")
        };
        assert_eq!(window, 20);
        assert_eq!((children[0].1, children[0].2), (2.0, Normalizer::MinMax));
        assert_eq!((children[1].1, children[1].2), (1.0, Normalizer::L2Norm));
        let m = body(json!({"knn": knn["knn"].clone()}));
        assert!(matches!(
            parse(&m, &s, true, 10).unwrap(),
            Some(Ranked::Knn { with_query: true, ref sections }) if sections.len() == 1
        ));
        assert!(parse(&body(json!({"size": 3})), &s, false, 3)
            .unwrap()
            .is_none());
    }

    #[test]
    fn bad_retrievers_are_refused_by_name() {
        let s = searcher();
        let knn = json!({"knn": {"field": "v", "query_vector": [1, 0]}});
        for (m, query_given, needle) in [
            (json!({"retriever": knn.clone()}), true, "[query]"),
            (
                json!({"retriever": knn.clone(), "knn": knn["knn"].clone()}),
                false,
                "[knn]",
            ),
            (
                json!({"knn": knn["knn"].clone(), "sort": ["_doc"]}),
                false,
                "[sort]",
            ),
            (
                json!({"retriever": {"rrf": {"retrievers": []}}}),
                false,
                "[retrievers]",
            ),
            (
                json!({"retriever": {"rrf": {"retrievers": [knn.clone()], "rank_constant": 0}}}),
                false,
                "[rank_constant]",
            ),
            (
                json!({"retriever": {"rrf": {"retrievers": [knn.clone()], "window_size": 5}}}),
                false,
                "[window_size]",
            ),
            (
                json!({"retriever": {"rrf": {"retrievers": [knn.clone()], "rank_window_size": 5}}}),
                false,
                "[size]",
            ),
            (
                json!({"retriever": {"linear": {"retrievers": [{"weight": 1}]}}}),
                false,
                "[retriever]",
            ),
            (
                json!({"retriever": {"linear": {"retrievers": [{"retriever": knn.clone(), "weight": "x"}]}}}),
                false,
                "[weight]",
            ),
            (
                json!({"retriever": {"standard": {"query": {"match_all": {}}, "sort": []}}}),
                false,
                "[sort]",
            ),
            (
                json!({"retriever": {"standard": {}, "knn": {}}}),
                false,
                "one key",
            ),
            (json!({"retriever": {"rule": {}}}), false, "[rule]"),
        ] {
            let e = parse(&body(m.clone()), &s, query_given, 10).unwrap_err();
            assert_eq!(e.status.as_u16(), 400);
            assert!(e.reason.contains(needle), "{m}: {}", e.reason);
        }
    }
}
