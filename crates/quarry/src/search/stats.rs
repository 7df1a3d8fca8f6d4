//! Which collection statistics does a query's BM25 score depend on, and how does a searcher use
//! statistics gathered elsewhere (from all shards of a sharded index) instead of its own?
//!
//! A BM25 score depends on the documents themselves and on three collection statistics: a
//! term's document frequency, a field's document count and a field's total number of tokens
//! (`sum_total_term_freq`, which gives the average field length). A shard of a larger collection
//! sees only its own share of them, so its scores differ from those of one big index. Searching
//! shards with exactly the scores of one index (what Elasticsearch calls
//! `dfs_query_then_fetch`) takes three steps:
//!
//! 1. each shard reports the statistics the query needs: [`Searcher::collection_stats`];
//! 2. the statistics are summed: [`CollectionStats::merge`] (they are additive);
//! 3. each shard searches with the sum: [`Searcher::with_collection_stats`], and the per-shard
//!    top-k lists are merged by score.
//!
//! ```no_run
//! # fn main() -> quarry::Result<()> {
//! use quarry::{CollectionStats, Index, SearchMode};
//! let shards: Vec<_> = ["/idx/0", "/idx/1"]
//!     .iter()
//!     .map(|p| Index::open(std::path::Path::new(p)).map(|i| i.searcher()))
//!     .collect::<quarry::Result<_>>()?;
//! let query = shards[0].parse_query("oil prices", &["body"])?;
//! let mut global = CollectionStats::default();
//! for s in &shards {
//!     global.merge(&s.collection_stats(&query)?);
//! }
//! for s in &shards {
//!     let result = s.with_collection_stats(&global)?.search(&query, 10, SearchMode::TopCount)?;
//!     // merge result.top across shards by score
//! }
//! # Ok(()) }
//! ```
//!
//! The per-term total term frequency is not part of the statistics: BM25 does not use it and
//! the index format does not store it.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bm25::FieldStats;
use super::Searcher;
use crate::query::ast::Query;
use crate::{Error, Result};

/// A term's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermStats {
    /// Number of documents containing the term.
    pub doc_freq: u64,
}

/// The collection statistics a query's scores depend on: per field (by name) its document count
/// and total token count, and per field and term the document frequency. Additive: the
/// statistics of a collection are the sums of those of its parts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectionStats {
    /// Field name → statistics of that field.
    pub fields: BTreeMap<String, FieldStats>,
    /// Field name → term → statistics of that term.
    pub terms: BTreeMap<String, BTreeMap<String, TermStats>>,
}

impl CollectionStats {
    /// Adds `other` into `self` (fields and terms present in either are kept).
    pub fn merge(&mut self, other: &CollectionStats) {
        for (name, s) in &other.fields {
            let e = self.fields.entry(name.clone()).or_default();
            e.doc_count += s.doc_count;
            e.sum_total_term_freq += s.sum_total_term_freq;
        }
        for (field, terms) in &other.terms {
            let mine = self.terms.entry(field.clone()).or_default();
            for (term, s) in terms {
                mine.entry(term.clone()).or_default().doc_freq += s.doc_freq;
            }
        }
    }

    /// The document frequency of `term` in `field`, if these statistics hold it.
    pub fn doc_freq(&self, field: &str, term: &str) -> Option<u64> {
        self.terms.get(field)?.get(term).map(|t| t.doc_freq)
    }

    /// JSON text of these statistics (`{"fields": {..}, "terms": {..}}`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("statistics serialize")
    }

    /// Parses the JSON written by [`to_json`](Self::to_json).
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::Json {
            column: e.column(),
            reason: format!("collection statistics: {e}"),
        })
    }
}

/// The expansions of a fuzzy query on a field.
type FuzzyExpander<'a> = dyn FnMut(&str, &super::multiterm::FuzzySpec) -> Result<Vec<String>> + 'a;
/// The expansions of a phrase prefix's last position: (field, prefixes, max_expansions).
type PrefixExpander<'a> = dyn FnMut(&str, &[String], u32) -> Result<Vec<String>> + 'a;

/// The terms a query expands to when it runs: a fuzzy query's, as `fuzzy` gives them, and a
/// phrase prefix's last position, as `prefixes` gives them.
struct Expanders<'a> {
    fuzzy: &'a mut FuzzyExpander<'a>,
    prefixes: &'a mut PrefixExpander<'a>,
}

/// Collects the `(field, term)` pairs whose document frequency scores `q`; a fuzzy query's and
/// a phrase prefix's are their expansions, as `expand` gives them.
fn scored_terms(q: &Query, out: &mut Vec<(String, String)>, expand: &mut Expanders) -> Result<()> {
    match q {
        Query::Term { field, term } => out.push((field.clone(), term.clone())),
        Query::Phrase { field, terms, .. } => {
            out.extend(terms.iter().map(|(_, t)| (field.clone(), t.clone())))
        }
        Query::MultiPhrase { field, terms, .. } => out.extend(
            terms
                .iter()
                .flat_map(|(_, ts)| ts.iter().map(|t| (field.clone(), t.clone()))),
        ),
        Query::PhrasePrefix {
            field,
            terms,
            max_expansions,
            ..
        } => {
            if let Some(((_, prefixes), lead)) = terms.split_last() {
                out.extend(
                    lead.iter()
                        .flat_map(|(_, ts)| ts.iter().map(|t| (field.clone(), t.clone()))),
                );
                for t in (expand.prefixes)(field, prefixes, *max_expansions)? {
                    out.push((field.clone(), t));
                }
            }
        }
        Query::Boolean { clauses, .. } => {
            for c in clauses {
                scored_terms(&c.query, out, expand)?;
            }
        }
        Query::Boost { query, .. } => scored_terms(query, out, expand)?,
        Query::DisMax { queries, .. } => {
            for q in queries {
                scored_terms(q, out, expand)?;
            }
        }
        // The negative side and a constant-score query's inner query score nothing, but their
        // term weights are built with the scoring statistics all the same.
        Query::Boosting {
            positive, negative, ..
        } => {
            scored_terms(positive, out, expand)?;
            scored_terms(negative, out, expand)?;
        }
        Query::ConstantScore { query } => scored_terms(query, out, expand)?,
        Query::Fuzzy { .. } => {
            let (field, spec) = super::multiterm::FuzzySpec::of(q).expect("a fuzzy query");
            spec.check(field)?;
            for t in (expand.fuzzy)(field, &spec)? {
                out.push((field.to_string(), t));
            }
        }
        // Prefix, wildcard, regexp and range queries score a constant;
        // match-all and match-none use no statistics.
        Query::Prefix { .. }
        | Query::Wildcard { .. }
        | Query::Regexp { .. }
        | Query::Range { .. }
        | Query::MatchAll
        | Query::MatchNone => {}
    }
    Ok(())
}

impl Searcher {
    /// The statistics this searcher's index contributes to scoring `query`: every field's
    /// statistics and the document frequency (summed over segments) of each term the query
    /// scores, including terms this index does not contain (frequency 0).
    pub fn collection_stats(&self, query: &Query) -> Result<CollectionStats> {
        let mut out = CollectionStats::default();
        for (f, entry) in self.schema.fields().iter().enumerate() {
            let mut s = FieldStats::default();
            for seg in self.segments.iter() {
                if let Some(fm) = seg.meta().fields.get(f) {
                    s.doc_count += u64::from(fm.doc_count);
                    s.sum_total_term_freq += fm.sum_total_term_freq;
                }
            }
            out.fields.insert(entry.name.clone(), s);
        }
        let mut terms = Vec::new();
        let mut fuzzy = |field: &str, spec: &super::multiterm::FuzzySpec| {
            let Some(f) = self.schema.field_id(field) else {
                return Ok(Vec::new()); // searching reports the unknown field
            };
            let found = super::multiterm::fuzzy_expansions(&self.segments, f, spec)?;
            Ok(found.into_iter().map(|e| e.term).collect())
        };
        let mut prefixes = |field: &str, prefixes: &[String], max: u32| {
            let Some(f) = self.schema.field_id(field) else {
                return Ok(Vec::new());
            };
            super::multi_phrase::prefix_expansions(&self.segments, f, prefixes, max)
        };
        let mut expand = Expanders {
            fuzzy: &mut fuzzy,
            prefixes: &mut prefixes,
        };
        scored_terms(query, &mut terms, &mut expand)?;
        for (field, term) in terms {
            let Some(f) = self.schema.field_id(&field) else {
                continue; // searching reports the unknown field
            };
            let mut df = 0u64;
            for seg in self.segments.iter() {
                if let Some((info, _)) = seg.term_info(f, term.as_bytes())? {
                    df += u64::from(info.doc_freq);
                }
            }
            out.terms
                .entry(field)
                .or_default()
                .insert(term, TermStats { doc_freq: df });
        }
        Ok(out)
    }

    /// A searcher over the same segments that scores with `stats` (typically the merged
    /// statistics of all shards) instead of this index's own. Every field of the schema must be
    /// in `stats`; searching a term that `stats` lacks (statistics gathered for another query)
    /// is an [`Error::InvalidArgument`].
    pub fn with_collection_stats(&self, stats: &CollectionStats) -> Result<Searcher> {
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        for entry in self.schema.fields() {
            let s = stats.fields.get(&entry.name).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "collection statistics lack field {:?}: gather them with collection_stats",
                    entry.name
                ))
            })?;
            fields.push(*s);
        }
        let mut out = self.clone();
        out.norm_caches = Arc::new(fields.iter().map(|s| self.bm25.norm_cache(s)).collect());
        out.stats = Arc::new(fields);
        out.global = Some(Arc::new(stats.clone()));
        Ok(out)
    }

    /// The statistics this searcher scores with, if they were supplied by
    /// [`with_collection_stats`](Self::with_collection_stats).
    pub fn supplied_stats(&self) -> Option<&CollectionStats> {
        self.global.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(dc: u64, ttf: u64, df: u64) -> CollectionStats {
        let mut s = CollectionStats::default();
        s.fields.insert(
            "body".into(),
            FieldStats {
                doc_count: dc,
                sum_total_term_freq: ttf,
            },
        );
        s.terms
            .entry("body".into())
            .or_default()
            .insert("oil".into(), TermStats { doc_freq: df });
        s
    }

    #[test]
    fn merge_sums_fields_and_terms() {
        let mut a = stats(10, 100, 3);
        a.merge(&stats(5, 40, 0));
        assert_eq!(a, stats(15, 140, 3));
        let mut b = CollectionStats::default();
        b.merge(&a);
        assert_eq!(b.doc_freq("body", "oil"), Some(3));
        assert_eq!(b.doc_freq("body", "gas"), None);
    }

    #[test]
    fn json_round_trip_and_bad_json() {
        let a = stats(7, 70, 2);
        assert_eq!(CollectionStats::from_json(&a.to_json()).unwrap(), a);
        let e = CollectionStats::from_json("{\"fields\": 3}").unwrap_err();
        assert!(matches!(e, Error::Json { .. }), "{e}");
    }

    #[test]
    fn scored_terms_walks_booleans_phrases_and_boosts() {
        use crate::query::{Operator, QueryParser, SimpleAnalysis};
        let p =
            QueryParser::new("body", Arc::new(SimpleAnalysis)).with_default_operator(Operator::Or);
        let q = p
            .parse("+oil \"crude prices\"^2 -title:gas pre* *:*")
            .unwrap();
        let mut prefixes = |f: &str, p: &[String], max: u32| Ok(vec![format!("{f}:{p:?}<={max}")]);
        let mut fuzzy = |_: &str, _: &super::super::multiterm::FuzzySpec| Ok(vec!["x".into()]);
        let mut t = Vec::new();
        let mut expand = Expanders {
            fuzzy: &mut fuzzy,
            prefixes: &mut prefixes,
        };
        scored_terms(&q, &mut t, &mut expand).unwrap();
        let t: Vec<(&str, &str)> = t.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            t,
            [
                ("body", "oil"),
                ("body", "crude"),
                ("body", "prices"),
                ("title", "gas")
            ]
        );
        let mut t = Vec::new();
        let fuzzy = Query::fuzzy("body", "oli", 1);
        let mut fuzzy_terms = |f: &str, spec: &super::super::multiterm::FuzzySpec| {
            Ok(vec![format!("{f}:{}~{}", spec.term, spec.max_edits)])
        };
        let mut expand = Expanders {
            fuzzy: &mut fuzzy_terms,
            prefixes: &mut prefixes,
        };
        scored_terms(&fuzzy, &mut t, &mut expand).unwrap();
        assert_eq!(t, [("body".to_string(), "body:oli~1".to_string())]);
        let pp = Query::PhrasePrefix {
            field: "body".into(),
            terms: vec![(0, vec!["crude".into()]), (1, vec!["pri".into()])],
            slop: 0,
            max_expansions: 7,
        };
        let mp = Query::MultiPhrase {
            field: "body".into(),
            terms: vec![(0, vec!["a".into(), "b".into()]), (2, vec!["c".into()])],
            slop: 1,
        };
        let mut t = Vec::new();
        scored_terms(&pp, &mut t, &mut expand).unwrap();
        scored_terms(&mp, &mut t, &mut expand).unwrap();
        let t: Vec<String> = t.into_iter().map(|(f, t)| format!("{f}/{t}")).collect();
        assert_eq!(
            t,
            [
                "body/crude",
                "body/body:[\"pri\"]<=7",
                "body/a",
                "body/b",
                "body/c"
            ]
        );
    }
}
