//! Why does a document score what it scores? Lucene's explanation tree for a query and one
//! document: [`Searcher::explain`].
//!
//! The tree has Lucene's shape and descriptions (what Elasticsearch's `explain` shows):
//!
//! - a term: `weight(body:oil in 12) [BM25Similarity], result of:` over `score(freq=2.0),
//!   computed as boost * idf * tf from:`, whose details are the boost (when not 1), `idf,
//!   computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:` (n, N) and `tf, computed as freq /
//!   (freq + k1 * (1 - b + b * dl / avgdl)) from:` (freq, k1, b, dl, avgdl);
//! - a phrase: the same with `phraseFreq=..` and `idf, sum of:`;
//! - a boolean query: `sum of:` its matching scoring clauses (filter clauses as `match on
//!   required clause, product of:`); a dis_max: `max of:` or `max plus 0.3 times others of:`;
//! - constant-score queries (prefix, wildcard, regexp, range, match_all, constant_score): the
//!   query itself with its `^boost`;
//! - a fuzzy query: the `sum of:` its expansions' terms, each scored with the blended document
//!   frequency; `boosting`: Lucene's `FunctionScoreQuery` node, `weight(..), result of:` its
//!   positive side, or `product of:` that and the negative boost when the negative side
//!   matches.
//!
//! Every node's value is what the scorer of that sub-query gives the document (as Lucene's
//! `BooleanWeight.explain` pulls a scorer), so the top value is the document's score in a
//! search with the same searcher (including statistics supplied with
//! [`Searcher::with_collection_stats`]).
use serde_json::{json, Value};

use super::bm25::Bm25;
use super::collector::DocAddress;
use super::multiterm::{self, FuzzySpec};
use super::scorer::Scorer;
use super::weight::{Context, Weight};
use super::Searcher;
use crate::codec::norms::length_table;
use crate::index::SegmentReader;
use crate::query::ast::{Clause, Occur, Query};
use crate::schema::FieldType;
use crate::{Error, Result};

/// One node of an explanation: a value, what it is, and the values it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// Whether the document matches this (sub-)query.
    pub matched: bool,
    /// The score (0 when not matched).
    pub value: f32,
    /// Lucene's description of the node.
    pub description: String,
    /// The nodes the value is computed from.
    pub details: Vec<Explanation>,
}

impl Explanation {
    /// A matching node.
    pub fn matched(value: f32, description: impl Into<String>, details: Vec<Explanation>) -> Self {
        Explanation {
            matched: true,
            value,
            description: description.into(),
            details,
        }
    }

    /// A node that does not match (value 0).
    pub fn no_match(description: impl Into<String>, details: Vec<Explanation>) -> Self {
        Explanation {
            matched: false,
            value: 0.0,
            description: description.into(),
            details,
        }
    }

    /// Elasticsearch's JSON shape: `{"value", "description", "details"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "value": self.value,
            "description": self.description,
            "details": self.details.iter().map(Explanation::to_json).collect::<Vec<_>>(),
        })
    }
}

/// A float as Java's `Float.toString` writes the usual values (`2.0`, `0.33333334`).
fn jf(x: f32) -> String {
    format!("{x:?}")
}

/// What explaining one document needs.
struct At<'a> {
    ctx: Context<'a>,
    seg: &'a SegmentReader,
    ord: usize,
    doc: u32,
}

impl At<'_> {
    /// The score `w` gives the document, if it matches.
    fn score(&self, w: &Weight) -> Result<Option<f32>> {
        Ok(self.scorer_on(w)?.map(|mut s| s.score()))
    }

    /// `w`'s scorer positioned on the document, if it matches.
    fn scorer_on(&self, w: &Weight) -> Result<Option<Box<dyn Scorer>>> {
        let Some(mut s) = w.scorer(self.seg, self.ord)? else {
            return Ok(None);
        };
        if s.seek(self.doc) != self.doc || (s.is_two_phase() && !s.matches()) {
            return Ok(None);
        }
        Ok(Some(s))
    }

    fn bm25(&self) -> Bm25 {
        self.ctx.bm25
    }

    /// `idf, computed as ...` of a term of field `f` scored with document frequency `df`.
    fn idf(&self, f: u32, df: u64) -> Explanation {
        let n = self.ctx.stats[f as usize].doc_count;
        Explanation::matched(
            Bm25::idf(df, n),
            "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:",
            vec![
                Explanation::matched(df as f32, "n, number of documents containing term", vec![]),
                Explanation::matched(n as f32, "N, total number of documents with field", vec![]),
            ],
        )
    }

    /// The scoring document frequency of `term` in field `f` (the supplied statistics' when
    /// there are some).
    fn doc_freq(&self, f: u32, term: &str) -> Result<u64> {
        let mut local = 0u64;
        for seg in self.ctx.segments {
            if let Some((info, _)) = seg.term_info(f, term.as_bytes())? {
                local += u64::from(info.doc_freq);
            }
        }
        self.ctx.scoring_doc_freq(f, term, local)
    }

    /// `weight(q in doc) [BM25Similarity], result of:` over the BM25 breakdown.
    #[allow(clippy::too_many_arguments)]
    fn bm25_node(
        &self,
        described: &str,
        f: u32,
        boost: f32,
        idf: Explanation,
        freq: Explanation,
        value: f32,
        norm: u8,
    ) -> Explanation {
        let bm = self.bm25();
        let avgdl = Bm25::avgdl(&self.ctx.stats[f as usize]);
        let dl = length_table()[usize::from(norm)];
        let fv = freq.value;
        let tf = (f64::from(fv)
            / (f64::from(fv) + f64::from(bm.k1 * ((1.0 - bm.b) + bm.b * dl / avgdl))))
            as f32;
        let dl_desc = if norm > 39 {
            "dl, length of field (approximate)"
        } else {
            "dl, length of field"
        };
        let tf = Explanation::matched(
            tf,
            "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:",
            vec![
                freq,
                Explanation::matched(bm.k1, "k1, term saturation parameter", vec![]),
                Explanation::matched(bm.b, "b, length normalization parameter", vec![]),
                Explanation::matched(dl, dl_desc, vec![]),
                Explanation::matched(avgdl, "avgdl, average length of field", vec![]),
            ],
        );
        let mut subs = Vec::new();
        if boost != 1.0 {
            subs.push(Explanation::matched(boost, "boost", vec![]));
        }
        subs.push(idf);
        subs.push(tf);
        let score = Explanation::matched(
            value,
            format!("score(freq={}), computed as boost * idf * tf from:", jf(fv)),
            subs,
        );
        Explanation::matched(
            value,
            format!(
                "weight({described} in {}) [BM25Similarity], result of:",
                self.doc
            ),
            vec![score],
        )
    }

    /// A term of a text or keyword field, scored with `df` (blended for fuzzy expansions).
    fn term(
        &self,
        field: &str,
        term: &str,
        boost: f32,
        blended: Option<u64>,
    ) -> Result<Explanation> {
        let f = self
            .ctx
            .schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(self.ctx.schema, field))?;
        let w = Weight::build_term_df(f, term, &self.ctx, boost, blended)?;
        let described = format!("{field}:{term}");
        let Some(mut s) = w.term_scorer(self.seg, self.ord)? else {
            return Ok(Explanation::no_match("no matching term", vec![]));
        };
        if s.seek(self.doc) != self.doc {
            return Ok(Explanation::no_match("no matching term", vec![]));
        }
        let value = s.score();
        let (freq, norm) = s.freq_norm().expect("a term scorer has a frequency");
        let df = match blended {
            Some(d) => d,
            None => self.doc_freq(f, term)?,
        };
        let freq = Explanation::matched(freq, "freq, occurrences of term within document", vec![]);
        Ok(self.bm25_node(&described, f, boost, self.idf(f, df), freq, value, norm))
    }

    fn phrase(
        &self,
        q: &Query,
        field: &str,
        terms: &[(u32, String)],
        boost: f32,
    ) -> Result<Explanation> {
        let w = Weight::build(q, &self.ctx, boost)?;
        let Some(mut s) = self.scorer_on(&w)? else {
            return Ok(Explanation::no_match("no matching term", vec![]));
        };
        let value = s.score();
        let Some((freq, norm)) = s.freq_norm() else {
            return Ok(Explanation::matched(value, q.to_string(), vec![]));
        };
        let f = self
            .ctx
            .schema
            .field_id(field)
            .expect("the weight was built");
        let mut idfs = Vec::with_capacity(terms.len());
        for (_, t) in terms {
            idfs.push(self.idf(f, self.doc_freq(f, t)?));
        }
        let idf = Explanation::matched(idfs.iter().map(|e| e.value).sum(), "idf, sum of:", idfs);
        let freq = Explanation::matched(freq, format!("phraseFreq={}", jf(freq)), vec![]);
        Ok(self.bm25_node(&q.to_string(), f, boost, idf, freq, value, norm))
    }

    /// Lucene's `MultiPhraseQuery`: one position is the disjunction of its terms, one term per
    /// position a phrase (as they are rewritten and scored); otherwise a phrase whose idf sums
    /// every term of every position found in the index.
    fn multi_phrase(
        &self,
        q: &Query,
        field: &str,
        terms: &[(u32, Vec<String>)],
        slop: u32,
        boost: f32,
    ) -> Result<Explanation> {
        if let [(_, only)] = terms {
            let clauses = only
                .iter()
                .map(|t| Clause::new(Occur::Should, Query::term(field, t.clone())))
                .collect();
            return self.explain(&Query::boolean(clauses), boost);
        }
        if let Some(phrase) = super::weight::single_terms(terms) {
            let p = Query::Phrase {
                field: field.to_string(),
                terms: phrase,
                slop,
            };
            return self.explain(&p, boost);
        }
        let w = Weight::build(q, &self.ctx, boost)?;
        let Some(mut s) = self.scorer_on(&w)? else {
            return Ok(Explanation::no_match("no matching term", vec![]));
        };
        let value = s.score();
        let Some((freq, norm)) = s.freq_norm() else {
            return Ok(Explanation::matched(value, q.to_string(), vec![]));
        };
        let f = self
            .ctx
            .schema
            .field_id(field)
            .expect("the weight was built");
        let mut idfs = Vec::new();
        for t in terms.iter().flat_map(|(_, ts)| ts) {
            let mut local = 0u64;
            for seg in self.ctx.segments {
                if let Some((info, _)) = seg.term_info(f, t.as_bytes())? {
                    local += u64::from(info.doc_freq);
                }
            }
            if local > 0 {
                idfs.push(self.idf(f, self.ctx.scoring_doc_freq(f, t, local)?));
            }
        }
        let idf = Explanation::matched(idfs.iter().map(|e| e.value).sum(), "idf, sum of:", idfs);
        let freq = Explanation::matched(freq, format!("phraseFreq={}", jf(freq)), vec![]);
        Ok(self.bm25_node(&q.to_string(), f, boost, idf, freq, value, norm))
    }

    /// A query scored as a constant: Lucene's `ConstantScoreWeight` description.
    fn constant(&self, q: &Query, boost: f32) -> Result<Explanation> {
        let w = Weight::build(q, &self.ctx, boost)?;
        Ok(match self.score(&w)? {
            Some(v) if v == 1.0 => Explanation::matched(v, q.to_string(), vec![]),
            Some(v) => Explanation::matched(v, format!("{q}^{}", jf(v)), vec![]),
            None => Explanation::no_match(format!("{q} doesn't match id {}", self.doc), vec![]),
        })
    }

    fn fuzzy(&self, q: &Query, boost: f32) -> Result<Explanation> {
        let (field, spec): (&str, FuzzySpec) = FuzzySpec::of(q).expect("a fuzzy query");
        spec.check(field)?;
        let f = self
            .ctx
            .schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(self.ctx.schema, field))?;
        let expansions = multiterm::fuzzy_expansions(self.ctx.segments, f, &spec)?;
        let mut df = 0u64;
        for e in &expansions {
            df = df.max(self.ctx.scoring_doc_freq(f, &e.term, e.doc_freq)?);
        }
        let mut subs = Vec::new();
        for e in &expansions {
            let x = self.term(field, &e.term, boost * e.boost, Some(df))?;
            if x.matched {
                subs.push(x);
            }
        }
        let w = Weight::build(q, &self.ctx, boost)?;
        // Lucene rewrites a fuzzy query to a boolean of its expansions, and a boolean of one
        // clause to that clause: "sum of:" unless the query expanded to a single term.
        Ok(match self.score(&w)? {
            Some(_) if expansions.len() == 1 && subs.len() == 1 => subs.pop().expect("one"),
            Some(v) => Explanation::matched(v, "sum of:", subs),
            None => Explanation::no_match("no matching term", vec![]),
        })
    }

    /// A clause that does not score (filter, must_not): Lucene explains it through the query
    /// cache's `ConstantScoreWeight` (`IndexSearcher` wraps every non-scoring weight in it),
    /// as the query with its boost, whatever the query.
    fn unscored(&self, q: &Query, boost: f32) -> Result<Explanation> {
        let w = Weight::build(q, &self.ctx, boost)?;
        Ok(match self.score(&w)? {
            Some(_) if boost == 1.0 => Explanation::matched(1.0, q.to_string(), vec![]),
            Some(_) => Explanation::matched(boost, format!("{q}^{}", jf(boost)), vec![]),
            None => Explanation::no_match(format!("{q} doesn't match id {}", self.doc), vec![]),
        })
    }

    fn boolean(&self, q: &Query, clauses: &[Clause], msm: u32, boost: f32) -> Result<Explanation> {
        // Lucene rewrites a lone scoring clause to the clause itself.
        if let [c] = clauses {
            if matches!(c.occur, Occur::Must | Occur::Should) && msm <= 1 {
                return self.explain(&c.query, boost);
            }
        }
        let mut subs = Vec::new();
        let (mut fail, mut matched) = (false, 0u32);
        for c in clauses {
            let e = match c.occur {
                Occur::Must | Occur::Should => self.explain(&c.query, boost)?,
                Occur::Filter | Occur::MustNot => self.unscored(&c.query, boost)?,
            };
            if e.matched {
                match c.occur {
                    Occur::Must | Occur::Should => subs.push(e),
                    Occur::Filter => subs.push(Explanation::matched(
                        0.0,
                        "match on required clause, product of:",
                        vec![Explanation::matched(0.0, "# clause", vec![]), e],
                    )),
                    Occur::MustNot => {
                        subs.push(Explanation::no_match(
                            format!("match on prohibited clause ({})", c.query),
                            vec![e],
                        ));
                        fail = true;
                    }
                }
                if c.occur != Occur::MustNot {
                    matched += 1;
                }
            } else if matches!(c.occur, Occur::Must | Occur::Filter) {
                subs.push(Explanation::no_match(
                    format!("no match on required clause ({})", c.query),
                    vec![e],
                ));
                fail = true;
            }
        }
        let w = Weight::build(q, &self.ctx, boost)?;
        Ok(match self.score(&w)? {
            Some(v) => Explanation::matched(v, "sum of:", subs),
            None if fail => Explanation::no_match(
                "Failure to meet condition(s) of required/prohibited clause(s)",
                subs,
            ),
            None if matched == 0 => Explanation::no_match("No matching clauses", subs),
            None => Explanation::no_match(
                format!("Failure to match minimum number of optional clauses: {msm}"),
                subs,
            ),
        })
    }

    /// Lucene's `FunctionScoreQuery` explanation: `weight(query), result of:` over the
    /// positive side, or over `product of:` it and `Matched boosting query ..` when the
    /// negative side matches. Lucene explains the positive side unboosted and puts an outer
    /// boost beside it (`weight(query), product of:` the boost and that).
    fn boosting(
        &self,
        q: &Query,
        positive: &Query,
        negative: &Query,
        negative_boost: f32,
        boost: f32,
    ) -> Result<Explanation> {
        let pos = self.explain(positive, 1.0)?;
        if !pos.matched {
            return Ok(pos);
        }
        let w = Weight::build(q, &self.ctx, boost)?;
        let value = self.score(&w)?.unwrap_or(0.0);
        let neg = Weight::build(negative, &self.ctx, 1.0)?;
        let inner = if self.score(&neg)?.is_some() {
            let matched = Explanation::matched(
                negative_boost,
                format!("Matched boosting query score({negative})"),
                vec![],
            );
            let v = (f64::from(pos.value) * f64::from(negative_boost)) as f32;
            Explanation::matched(v, "product of:", vec![pos, matched])
        } else {
            pos
        };
        Ok(if boost == 1.0 {
            Explanation::matched(value, format!("weight({q}), result of:"), vec![inner])
        } else {
            let b = Explanation::matched(boost, "boost", vec![]);
            Explanation::matched(value, format!("weight({q}), product of:"), vec![b, inner])
        })
    }

    fn explain(&self, q: &Query, boost: f32) -> Result<Explanation> {
        match q {
            Query::Term { field, term } => {
                let f = self
                    .ctx
                    .schema
                    .field_id(field)
                    .ok_or_else(|| Error::unknown_field(self.ctx.schema, field))?;
                match self.ctx.schema.field(f).field_type {
                    FieldType::Text | FieldType::Keyword => self.term(field, term, boost, None),
                    _ => self.constant(q, boost),
                }
            }
            Query::Phrase { field, terms, .. } => self.phrase(q, field, terms, boost),
            Query::MultiPhrase { field, terms, slop } => {
                self.multi_phrase(q, field, terms, *slop, boost)
            }
            Query::PhrasePrefix { field, .. } => {
                // Explained as what it runs as (Lucene explains the rewritten query).
                let f = self
                    .ctx
                    .schema
                    .field_id(field)
                    .ok_or_else(|| Error::unknown_field(self.ctx.schema, field))?;
                let rewritten =
                    super::multi_phrase::rewrite_phrase_prefix(self.ctx.segments, f, q)?;
                self.explain(&rewritten, boost)
            }
            Query::Boost { query, boost: b } => self.explain(query, boost * b),
            Query::Boolean {
                clauses,
                minimum_should_match,
            } => self.boolean(q, clauses, *minimum_should_match, boost),
            Query::DisMax {
                queries,
                tie_breaker,
            } => {
                let mut subs = Vec::new();
                for sub in queries {
                    let e = self.explain(sub, boost)?;
                    if e.matched {
                        subs.push(e);
                    }
                }
                let w = Weight::build(q, &self.ctx, boost)?;
                Ok(match self.score(&w)? {
                    Some(v) if *tie_breaker == 0.0 => Explanation::matched(v, "max of:", subs),
                    Some(v) => Explanation::matched(
                        v,
                        format!("max plus {} times others of:", jf(*tie_breaker)),
                        subs,
                    ),
                    None => Explanation::no_match("No matching clause", vec![]),
                })
            }
            Query::Boosting {
                positive,
                negative,
                negative_boost,
            } => self.boosting(q, positive, negative, *negative_boost, boost),
            Query::Fuzzy { .. } => self.fuzzy(q, boost),
            Query::MatchNone => Ok(Explanation::no_match("MatchNoDocsQuery", vec![])),
            Query::Prefix { .. }
            | Query::Wildcard { .. }
            | Query::Regexp { .. }
            | Query::Range { .. }
            | Query::ConstantScore { .. }
            | Query::MatchAll => self.constant(q, boost),
        }
    }
}

impl Searcher {
    /// Lucene's explanation of `query`'s score for the document at `doc` (see the module
    /// docs): the top value is the document's score in [`Searcher::search`], and
    /// `matched` is false when the query does not match it. A deleted document is explained
    /// as if it were live.
    pub fn explain(&self, query: &Query, doc: DocAddress) -> Result<Explanation> {
        let seg = self.segments.get(doc.segment as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("segment {} out of range", doc.segment))
        })?;
        if doc.doc >= seg.doc_count() {
            return Err(Error::InvalidArgument(format!(
                "document {} out of range (segment {} holds {})",
                doc.doc,
                doc.segment,
                seg.doc_count()
            )));
        }
        let at = At {
            ctx: self.context(),
            seg,
            ord: doc.segment as usize,
            doc: doc.doc,
        };
        at.explain(query, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FieldValue, Index, IndexWriter, Schema, SearchMode, WriterOptions};

    fn index(docs: &[&str]) -> (tempfile::TempDir, Searcher) {
        let dir = tempfile::tempdir().unwrap();
        let schema = Schema::builder()
            .text("body", true)
            .keyword("tag")
            .integer("n")
            .build();
        let mut w =
            IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default()).unwrap();
        for (i, d) in docs.iter().enumerate() {
            let mut doc = crate::Document::new();
            doc.add(&schema, "body", FieldValue::Str(d.to_string()))
                .unwrap();
            let tag = if i % 2 == 0 { "even" } else { "odd" };
            doc.add(&schema, "tag", FieldValue::Str(tag.into()))
                .unwrap();
            doc.add(&schema, "n", FieldValue::Int(i as i64)).unwrap();
            w.add_document(doc).unwrap();
            if i == 3 {
                w.commit().unwrap(); // two segments
            }
        }
        w.commit().unwrap();
        let s = Index::open(dir.path()).unwrap().searcher();
        (dir, s)
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-30)
    }

    #[test]
    fn explanation_values_are_the_scores() {
        let (_d, s) = index(&[
            "oil prices rise as oil supply falls",
            "crude oil",
            "prices of wheat",
            "the oil minister said prices would hold",
            "gold and silver",
            "oil oil oil",
            "wheat prices fall",
        ]);
        for text in [
            "oil",
            "oil prices",
            "+oil +prices",
            "oil^2 prices",
            "\"oil prices\"",
            "\"oil prices\"~3 wheat",
            "+oil -minister",
            "oil* wheat",
            "tag:even oil",
            "pirces~1",
            "n:[2 TO 5] oil",
        ] {
            let q = s.parse_query(text, &["body"]).unwrap();
            let r = s.search(&q, 10, SearchMode::TopCount).unwrap();
            assert!(!r.top.is_empty(), "{text}");
            for hit in &r.top {
                let e = s.explain(&q, hit.doc).unwrap();
                assert!(e.matched, "{text}: {e:?}");
                assert!(
                    close(e.value, hit.score),
                    "{text}: {} vs {}",
                    e.value,
                    hit.score
                );
            }
        }
        let q = s.parse_query("oil", &["body"]).unwrap();
        let e = s.explain(&q, DocAddress { segment: 0, doc: 2 }).unwrap();
        assert!(!e.matched);
        assert_eq!(e.description, "no matching term");
    }

    #[test]
    fn a_term_explains_like_lucene() {
        let (_d, s) = index(&["oil prices rise as oil supply falls", "crude oil", "wheat"]);
        let q = s.parse_query("oil", &["body"]).unwrap();
        let e = s.explain(&q, DocAddress { segment: 0, doc: 0 }).unwrap();
        assert_eq!(
            e.description,
            "weight(body:oil in 0) [BM25Similarity], result of:"
        );
        let score = &e.details[0];
        assert_eq!(
            score.description,
            "score(freq=2.0), computed as boost * idf * tf from:"
        );
        let idf = &score.details[0];
        assert_eq!(
            idf.description,
            "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:"
        );
        assert_eq!((idf.details[0].value, idf.details[1].value), (2.0, 3.0));
        assert!(close(idf.value, (1.0f64 + 1.5 / 2.5).ln() as f32));
        let tf = &score.details[1];
        assert_eq!(tf.details[0].value, 2.0);
        assert_eq!(tf.details[3].value, 7.0, "dl");
        assert!(close(tf.details[4].value, 10.0 / 3.0), "avgdl");
        assert!(close(score.value, idf.value * tf.value));
        let json = e.to_json();
        assert_eq!(
            json["details"][0]["details"][1]["details"][1]["description"],
            "k1, term saturation parameter"
        );
        // A boost shows as its own detail; a bool sums its clauses.
        let q = s.parse_query("oil^2 wheat", &["body"]).unwrap();
        let e = s.explain(&q, DocAddress { segment: 0, doc: 0 }).unwrap();
        assert_eq!(e.description, "sum of:");
        assert_eq!(e.details.len(), 1);
        assert_eq!(e.details[0].details[0].details[0].description, "boost");
        assert!(s.explain(&q, DocAddress { segment: 0, doc: 9 }).is_err());
    }
}
