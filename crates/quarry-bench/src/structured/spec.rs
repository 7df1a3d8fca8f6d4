//! What does the structured benchmark ask and what counts as the right answer: the
//! engine-neutral query specification every driver (quarry, Tantivy, the Lucene harness) reads
//! as JSON, the answer shape every driver writes back, and the comparison of an answer with the
//! oracle's.
//!
//! Every numeric value is an `i64` (dates are epoch milliseconds), so that counts, sorts, sums,
//! minima and maxima can be compared exactly; only averages are floats (compared within 1e-9
//! relative).

use serde::{Deserialize, Serialize};

/// The type of a field, as every engine maps it (see `bench/README.md`, "structured").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A 64-bit integer (quarry `integer`, Tantivy i64 INDEXED|FAST, Lucene LongPoint +
    /// NumericDocValuesField).
    Long,
    /// Epoch milliseconds (quarry `date`, Tantivy date at millisecond precision, Lucene
    /// LongPoint + NumericDocValuesField).
    Date,
    /// Exact strings, one or several per document (quarry `keyword`, Tantivy STRING|FAST, Lucene
    /// StringField + Sorted(Set)DocValuesField).
    Keyword,
    /// Analyzed text for BM25 (quarry `text`, Tantivy TEXT, Lucene TextField + StandardAnalyzer).
    Text,
}

/// One field of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldDef {
    pub name: String,
    pub kind: Kind,
    /// Several values per document (keywords only).
    pub multi: bool,
}

/// One conjunct of a query's filter (never scores).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Filter {
    /// `gte <= value <= lte` on a long or date field; `None` is an open end.
    Range {
        field: String,
        gte: Option<i64>,
        lte: Option<i64>,
    },
    /// The keyword field has the value.
    Term { field: String, value: String },
}

/// What a query computes over the documents its filter (and text) match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Op {
    /// The exact number of matches.
    Count,
    /// The `k` best matches by BM25 on the text field, and the number of matches.
    TopScore { k: usize },
    /// The `k` first matches by `field` (missing values last in both directions), ties by `id`
    /// ascending; with `after`, those strictly after that `(value, id)` position (search_after;
    /// `offset` is the number of matches before it, for engines without search_after).
    Sort {
        field: String,
        desc: bool,
        k: usize,
        after: Option<(i64, i64)>,
        offset: usize,
    },
    /// The `size` keyword values with the most matching documents (count desc, key asc).
    Terms { field: String, size: usize },
    /// Matching documents per calendar month or per UTC day of a date field (empty buckets left
    /// out).
    DateHistogram { field: String, interval: Interval },
    /// count, min, max, sum and avg of a long field over the matches that have a value.
    Stats { field: String },
    /// The number of distinct values of a keyword field over the matches.
    Cardinality { field: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interval {
    Month,
    Day,
}

/// One benchmark query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuerySpec {
    pub name: String,
    /// The report's class: range_count, range_text_top10, sort_top10, sort_deep, terms_agg,
    /// date_histogram, stats, cardinality.
    pub class: String,
    /// `flights` or `reuters`.
    pub dataset: String,
    /// Conjuncts; none means every document.
    pub filters: Vec<Filter>,
    /// Words (already lowercase, one token each) OR-ed on the field `text`; they must match too.
    pub text: Vec<String>,
    pub op: Op,
}

/// An engine's (or the oracle's) answer to one query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    Count {
        count: u64,
    },
    /// Ids in rank order; `scores` empty when the engine sorted by a field (the oracle gives
    /// none for BM25: Lucene's scores are the reference there).
    Hits {
        total: u64,
        ids: Vec<i64>,
        scores: Vec<f64>,
    },
    /// `(key, doc count)` in the answer's order (date keys as epoch-millisecond text).
    Buckets {
        buckets: Vec<(String, u64)>,
    },
    Stats {
        count: u64,
        min: Option<i64>,
        max: Option<i64>,
        sum: i64,
        avg: Option<f64>,
    },
    Cardinality {
        value: u64,
    },
}

/// The relative tolerance of averages (sums of integers divided by a count: engines that sum
/// in f64 round differently in the last bits).
pub const AVG_TOLERANCE: f64 = 1e-9;

/// Relative difference below which two BM25 scores count as a tie (f32 scores summed in
/// different orders differ in the last bits).
pub const SCORE_TIE: f64 = 1e-5;

/// What the oracle knows beyond its answer, for answers that may legitimately differ from it.
pub struct Truth<'a> {
    /// Whether the document with this id matches the query (top-by-score answers).
    pub matches: &'a dyn Fn(i64) -> bool,
    /// The true document count of a keyword value among the matches (terms buckets cut at a
    /// tie).
    pub key_count: &'a dyn Fn(&str) -> u64,
    /// Lucene's answer, the reference for BM25 rankings (the oracle does not score).
    pub reference: Option<&'a Answer>,
}

/// Whether `got` equals the oracle's `want` for `spec`; `Err` says how it differs. Top-by-score
/// answers: the exact total, `min(k, total)` distinct matching ids, ranked like Lucene's (ids
/// of documents with tied scores may come in any order, and the last group of ties may be cut
/// anywhere).
pub fn compare(spec: &QuerySpec, got: &Answer, want: &Answer, truth: &Truth) -> Result<(), String> {
    match (got, want) {
        (Answer::Count { count: g }, Answer::Count { count: w }) => {
            if g == w {
                Ok(())
            } else {
                Err(format!("count {g}, oracle {w}"))
            }
        }
        (
            Answer::Hits {
                total: gt, ids: gi, ..
            },
            Answer::Hits {
                total: wt, ids: wi, ..
            },
        ) => {
            if gt != wt {
                return Err(format!("total hits {gt}, oracle {wt}"));
            }
            let Op::TopScore { k } = spec.op else {
                // A field sort with an id tie-break: one exact order.
                if gi != wi {
                    return Err(format!("ids {gi:?}, oracle {wi:?}"));
                }
                return Ok(());
            };
            let expected = k.min(*wt as usize);
            if gi.len() != expected {
                return Err(format!("{} hits, expected {expected}", gi.len()));
            }
            if let Some(bad) = gi.iter().find(|&&id| !(truth.matches)(id)) {
                return Err(format!("id {bad} does not match the query"));
            }
            match truth.reference {
                Some(Answer::Hits {
                    ids: ri,
                    scores: rs,
                    ..
                }) if rs.len() == ri.len() => same_ranking(gi, ri, rs),
                _ => {
                    let mut s = gi.clone();
                    s.sort_unstable();
                    if s.windows(2).any(|p| p[0] == p[1]) {
                        return Err(format!("duplicate ids in {gi:?}"));
                    }
                    Ok(())
                }
            }
        }
        (Answer::Buckets { buckets: g }, Answer::Buckets { buckets: w }) => {
            if matches!(spec.op, Op::DateHistogram { .. }) {
                // Ordered by key: one exact list.
                if g != w {
                    return Err(format!("buckets {g:?}, oracle {w:?}"));
                }
                return Ok(());
            }
            same_buckets(g, w, truth.key_count)
        }
        (
            Answer::Stats {
                count: gc,
                min: gmin,
                max: gmax,
                sum: gs,
                avg: ga,
            },
            Answer::Stats {
                count: wc,
                min: wmin,
                max: wmax,
                sum: ws,
                avg: wa,
            },
        ) => {
            let avg_ok = match (ga, wa) {
                (Some(a), Some(b)) => rel(*a, *b) <= AVG_TOLERANCE,
                (None, None) => true,
                _ => false,
            };
            if gc == wc && gmin == wmin && gmax == wmax && gs == ws && avg_ok {
                Ok(())
            } else {
                Err(format!(
                    "stats count {gc} min {gmin:?} max {gmax:?} sum {gs} avg {ga:?}; oracle count {wc} \
                     min {wmin:?} max {wmax:?} sum {ws} avg {wa:?}"
                ))
            }
        }
        (Answer::Cardinality { value: g }, Answer::Cardinality { value: w }) => {
            if g == w {
                Ok(())
            } else {
                Err(format!("cardinality {g}, oracle {w}"))
            }
        }
        _ => Err(format!("answer of another kind: {got:?}, oracle {want:?}")),
    }
}

fn rel(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        ((a - b) / b.abs().max(f64::MIN_POSITIVE)).abs()
    }
}

/// The ids `got` rank like `ids` whose scores are `scores`: position by position, the same id,
/// or an id of the same group of tied scores (every full group as a set; the last group, which
/// the cut at k may split, only needs `got`'s ids to be distinct and not from another group).
fn same_ranking(got: &[i64], ids: &[i64], scores: &[f64]) -> Result<(), String> {
    if got.len() != ids.len() {
        return Err(format!(
            "{} hits, the reference has {}",
            got.len(),
            ids.len()
        ));
    }
    let mut start = 0;
    while start < ids.len() {
        let mut end = start + 1;
        while end < ids.len() && rel(scores[end], scores[start]) <= SCORE_TIE {
            end += 1;
        }
        let mut g: Vec<i64> = got[start..end].to_vec();
        let mut w: Vec<i64> = ids[start..end].to_vec();
        g.sort_unstable();
        w.sort_unstable();
        let last = end == ids.len();
        if !last && g != w {
            return Err(format!(
                "ranks {}..{}: ids {g:?}, reference {w:?} (scores tied within {SCORE_TIE})",
                start + 1,
                end
            ));
        }
        if last {
            // Ties at the cut: any matching documents with that score may come; other groups'
            // ids may not.
            let earlier: std::collections::HashSet<i64> = ids[..start].iter().copied().collect();
            if let Some(bad) = g.iter().find(|id| earlier.contains(id)) {
                return Err(format!("id {bad} repeated from a better-scored group"));
            }
            if g.windows(2).any(|p| p[0] == p[1]) {
                return Err(format!("duplicate ids in {g:?}"));
            }
        }
        start = end;
    }
    Ok(())
}

/// Buckets equal in order, except that keys with equal counts may come in any order and the
/// last group of equal counts may be cut anywhere (keys must then be distinct and have that
/// count).
fn same_buckets(
    got: &[(String, u64)],
    want: &[(String, u64)],
    key_count: &dyn Fn(&str) -> u64,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} buckets, oracle {}: got {got:?}, oracle {want:?}",
            got.len(),
            want.len()
        ));
    }
    let counts_g: Vec<u64> = got.iter().map(|b| b.1).collect();
    let counts_w: Vec<u64> = want.iter().map(|b| b.1).collect();
    if counts_g != counts_w {
        return Err(format!("bucket counts {got:?}, oracle {want:?}"));
    }
    let mut start = 0;
    while start < want.len() {
        let mut end = start + 1;
        while end < want.len() && want[end].1 == want[start].1 {
            end += 1;
        }
        let mut g: Vec<&str> = got[start..end].iter().map(|b| b.0.as_str()).collect();
        let mut w: Vec<&str> = want[start..end].iter().map(|b| b.0.as_str()).collect();
        g.sort_unstable();
        w.sort_unstable();
        if end < want.len() && g != w {
            return Err(format!("buckets {got:?}, oracle {want:?}"));
        }
        start = end;
    }
    if let Some(b) = got.iter().find(|b| key_count(&b.0) != b.1) {
        return Err(format!(
            "bucket {b:?}: the oracle counts {}",
            key_count(&b.0)
        ));
    }
    let mut keys: Vec<&str> = got.iter().map(|b| b.0.as_str()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|p| p[0] == p[1]) {
        return Err(format!("duplicate keys in {got:?}"));
    }
    Ok(())
}
