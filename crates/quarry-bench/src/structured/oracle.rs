//! What is the right answer: every query of the structured benchmark computed by brute force
//! over the parsed rows (no index): matching by testing each row, sorts by a full sort with the
//! id tie-break, group-by counts in a map, exact min/max/sum and distinct counts.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{bail, Result};

use super::data::{civil_month, days_from_civil, Dataset, Val, DAY_MS};
use super::spec::{Answer, Filter, Interval, Op, QuerySpec};

/// The words of a text, lowercased, split as Unicode word boundaries (UAX #29, what Lucene's
/// and quarry's standard tokenizers follow) split them for this corpus: letters and digits join,
/// `_` joins anything, `'` `:` `.` join two letters, `.` `,` `;` `'` join two digits.
fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let both = |f: fn(char) -> bool| prev.is_some_and(f) && next.is_some_and(f);
        let joins = c.is_alphanumeric()
            || c == '_'
            || (matches!(c, '\'' | ':' | '.' | '\u{2019}') && both(char::is_alphabetic))
            || (matches!(c, '.' | ',' | ';' | '\'' | '\u{2019}') && both(|x| x.is_numeric()));
        if joins && (!cur.is_empty() || c != '_') {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur).to_lowercase());
        }
    }
    if !cur.is_empty() {
        out.push(cur.to_lowercase());
    }
    out
}

/// The words of a text as SeekStorm 4.0.1's `UnicodeAlphanumeric` tokenizer splits a document
/// (`tokenizer.rs`): lowercased runs of word characters (letters, digits, `_`), which `+`, `-`
/// and `#` continue once a run has started (`oil-bearing`, `non-oil` and `oil-` are one word
/// each); anything else, `'` included, ends a run.
pub fn seekstorm_words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in lower.chars() {
        if c.is_alphanumeric() || c == '_' || (!cur.is_empty() && matches!(c, '+' | '-' | '#')) {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// How a text is split into words: the standard (Lucene's) way, or another engine's.
pub type Words = fn(&str) -> Vec<String>;

/// A query prepared against a dataset: which rows match.
pub struct Matcher<'a> {
    ds: &'a Dataset,
    filters: Vec<(usize, &'a Filter)>,
    text: Option<(usize, HashSet<&'a str>)>,
    words: Words,
}

impl<'a> Matcher<'a> {
    pub fn new(ds: &'a Dataset, spec: &'a QuerySpec) -> Result<Self> {
        Self::with_words(ds, spec, words)
    }

    /// A matcher that splits texts with `words` (the standard tokenizer in [`Matcher::new`]).
    pub fn with_words(ds: &'a Dataset, spec: &'a QuerySpec, words: Words) -> Result<Self> {
        let mut filters = Vec::new();
        for f in &spec.filters {
            let name = match f {
                Filter::Range { field, .. } | Filter::Term { field, .. } => field,
            };
            filters.push((ds.field(name)?, f));
        }
        let text = if spec.text.is_empty() {
            None
        } else {
            Some((
                ds.field("text")?,
                spec.text.iter().map(String::as_str).collect(),
            ))
        };
        Ok(Matcher {
            ds,
            filters,
            text,
            words,
        })
    }

    /// Whether row `i` matches.
    pub fn matches(&self, i: usize) -> bool {
        let row = &self.ds.rows[i];
        for (pos, f) in &self.filters {
            let ok = match (f, &row[*pos]) {
                (Filter::Range { gte, lte, .. }, Val::Long(Some(v))) => {
                    gte.is_none_or(|g| *v >= g) && lte.is_none_or(|l| *v <= l)
                }
                (Filter::Term { value, .. }, Val::Keywords(ks)) => ks.iter().any(|k| k == value),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        if let Some((pos, want)) = &self.text {
            let Val::Text(t) = &row[*pos] else {
                return false;
            };
            if !(self.words)(t).iter().any(|w| want.contains(w.as_str())) {
                return false;
            }
        }
        true
    }

    /// The matching rows' indexes (= ids), ascending.
    pub fn all(&self) -> Vec<usize> {
        (0..self.ds.rows.len())
            .filter(|&i| self.matches(i))
            .collect()
    }
}

fn long(row: &[Val], pos: usize) -> Option<i64> {
    match row[pos] {
        Val::Long(v) => v,
        _ => None,
    }
}

fn keywords(row: &[Val], pos: usize) -> &[String] {
    match &row[pos] {
        Val::Keywords(k) => k,
        _ => &[],
    }
}

/// The matching rows in `field` order (missing last both ways), ties by id ascending.
pub fn sorted(ds: &Dataset, hits: &[usize], field: &str, desc: bool) -> Result<Vec<usize>> {
    let pos = ds.field(field)?;
    let mut v: Vec<usize> = hits.to_vec();
    v.sort_by(|&a, &b| {
        let (x, y) = (long(&ds.rows[a], pos), long(&ds.rows[b], pos));
        let by_value = match (x, y) {
            (Some(x), Some(y)) if desc => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        by_value.then(a.cmp(&b))
    });
    Ok(v)
}

/// The `(value, id)` of the `n`-th hit (1-based) of a sort, to page after it.
pub fn after_position(
    ds: &Dataset,
    spec: &QuerySpec,
    field: &str,
    desc: bool,
    n: usize,
) -> Result<Option<(i64, i64)>> {
    let m = Matcher::new(ds, spec)?;
    let order = sorted(ds, &m.all(), field, desc)?;
    let pos = ds.field(field)?;
    let Some(&row) = order.get(n.saturating_sub(1)) else {
        return Ok(None);
    };
    match long(&ds.rows[row], pos) {
        Some(v) => Ok(Some((v, row as i64))),
        None => bail!(
            "the {n}-th hit of {} has no {field}: page elsewhere",
            spec.name
        ),
    }
}

/// Calendar month start (epoch ms) of a UTC time.
pub fn month_start(ms: i64) -> i64 {
    let (y, m) = civil_month(ms.div_euclid(DAY_MS));
    days_from_civil(y, m, 1) * DAY_MS
}

/// Per keyword value, the number of matching documents having it.
pub fn key_counts(ds: &Dataset, hits: &[usize], field: &str) -> Result<HashMap<String, u64>> {
    let pos = ds.field(field)?;
    let mut counts: HashMap<String, u64> = HashMap::new();
    for &i in hits {
        for k in keywords(&ds.rows[i], pos) {
            *counts.entry(k.clone()).or_default() += 1;
        }
    }
    Ok(counts)
}

/// The oracle's answer to `spec` over `ds`.
pub fn answer(ds: &Dataset, spec: &QuerySpec) -> Result<Answer> {
    answer_with(ds, spec, words)
}

/// The oracle's answer to `spec` over `ds` with texts split by `words`.
pub fn answer_with(ds: &Dataset, spec: &QuerySpec, words: Words) -> Result<Answer> {
    let m = Matcher::with_words(ds, spec, words)?;
    let hits = m.all();
    Ok(match &spec.op {
        Op::Count => Answer::Count {
            count: hits.len() as u64,
        },
        Op::TopScore { .. } => Answer::Hits {
            total: hits.len() as u64,
            ids: vec![],
            scores: vec![],
        },
        Op::Sort {
            field,
            desc,
            k,
            after,
            ..
        } => {
            let order = sorted(ds, &hits, field, *desc)?;
            let pos = ds.field(field)?;
            let start = match after {
                None => 0,
                Some((v, id)) => order
                    .iter()
                    .position(|&r| {
                        let rv = long(&ds.rows[r], pos);
                        // Strictly after (v, id) in this order.
                        match rv {
                            None => true,
                            Some(x) if x == *v => r as i64 > *id,
                            Some(x) => (x < *v) == *desc,
                        }
                    })
                    .unwrap_or(order.len()),
            };
            Answer::Hits {
                total: hits.len() as u64,
                ids: order[start..].iter().take(*k).map(|&r| r as i64).collect(),
                scores: vec![],
            }
        }
        Op::Terms { field, size } => {
            let counts = key_counts(ds, &hits, field)?;
            let mut v: Vec<(String, u64)> = counts.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(*size);
            Answer::Buckets { buckets: v }
        }
        Op::DateHistogram { field, interval } => {
            let pos = ds.field(field)?;
            let mut b: BTreeMap<i64, u64> = BTreeMap::new();
            for &i in &hits {
                if let Some(ms) = long(&ds.rows[i], pos) {
                    let key = match interval {
                        Interval::Month => month_start(ms),
                        Interval::Day => ms.div_euclid(DAY_MS) * DAY_MS,
                    };
                    *b.entry(key).or_default() += 1;
                }
            }
            Answer::Buckets {
                buckets: b.into_iter().map(|(k, c)| (k.to_string(), c)).collect(),
            }
        }
        Op::Stats { field } => {
            let pos = ds.field(field)?;
            let vals: Vec<i64> = hits
                .iter()
                .filter_map(|&i| long(&ds.rows[i], pos))
                .collect();
            let sum: i64 = vals.iter().sum();
            Answer::Stats {
                count: vals.len() as u64,
                min: vals.iter().min().copied(),
                max: vals.iter().max().copied(),
                sum,
                avg: (!vals.is_empty()).then(|| sum as f64 / vals.len() as f64),
            }
        }
        Op::Cardinality { field } => Answer::Cardinality {
            value: key_counts(ds, &hits, field)?.len() as u64,
        },
    })
}
