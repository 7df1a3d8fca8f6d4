//! Sorting by fields: the top k of the matching documents in the order of one or more sort
//! keys (field values from the columns, the score, index order), with `search_after` for deep
//! paging, as Elasticsearch's `sort` and Lucene's `TopFieldCollector`.
//!
//! Order rules, as Elasticsearch's: a multi-valued field sorts by its smallest value ascending
//! and its largest descending; documents without a value go last unless `missing_first`,
//! whatever the direction; ties after every key are broken by index order. With `search_after`,
//! only documents strictly after the given values come back (equal ones are passed over, so a
//! unique last key — [`SortKey::IndexOrder`] — pages without gaps or repeats).
//!
//! When the first key is a column with exactly one value per document, a block of 1,024
//! documents whose minimum (ascending) or maximum (descending) cannot beat the k-th hit kept is
//! skipped without reading its rows.
//!
//! When a segment is index-sorted ([`crate::index_sort`]) by the request's leading keys (same
//! fields, directions and missing placement), its documents come in that order: once `k` hits
//! are kept, the first match whose leading keys sort after the k-th kept hit's ends the
//! segment (Lucene's early termination), and with `search_after` the walk starts at the first
//! document whose leading keys reach the given values. The exact count then comes from a
//! counting pass, as after skipped blocks.
use std::cmp::Ordering;

use quarry_codecs::column::{self, sortable_to_f64, sortable_to_i64};

use super::collector::{DocAddress, Hit};
use super::scorer::TERMINATED;
use super::scorer_corruption;
use super::weight::Weight;
use super::Searcher;
use crate::codec::columns::{from_f64, from_i64, ColumnKind, ColumnView};
use crate::query::Query;
use crate::schema::FieldType;
use crate::{Error, Result};

/// What to sort by.
#[derive(Clone, Debug, PartialEq)]
pub enum SortKey {
    /// The relevance score (`_score`).
    Score,
    /// A field's values (its column).
    Field(String),
    /// The order documents were added (`_doc`).
    IndexOrder,
}

/// One sort key with its direction and where documents without a value go.
#[derive(Clone, Debug, PartialEq)]
pub struct SortField {
    pub key: SortKey,
    pub descending: bool,
    /// Documents without a value first (default: last, in both directions).
    pub missing_first: bool,
}

impl SortField {
    /// Ascending by `field`, missing values last.
    pub fn asc(field: &str) -> Self {
        Self {
            key: SortKey::Field(field.into()),
            descending: false,
            missing_first: false,
        }
    }
    /// Descending by `field`, missing values last.
    pub fn desc(field: &str) -> Self {
        Self {
            key: SortKey::Field(field.into()),
            descending: true,
            missing_first: false,
        }
    }
    /// By score, best first.
    pub fn score() -> Self {
        Self {
            key: SortKey::Score,
            descending: true,
            missing_first: false,
        }
    }
}

/// A hit's value for one sort key, as returned and as given back in `search_after`.
#[derive(Clone, Debug, PartialEq)]
pub enum SortValue {
    /// Integers, and dates as epoch milliseconds.
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Score(f32),
    /// Index order ([`SortKey::IndexOrder`]).
    Seq(u64),
    Missing,
}

/// A hit of a sorted search: its address, score (NaN when scores were not computed) and sort
/// values.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedHit {
    pub hit: Hit,
    pub values: Vec<SortValue>,
}

/// The outcome of a sorted search.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedResult {
    /// Every matching live document (exact).
    pub total_hits: u64,
    /// In sort order.
    pub hits: Vec<SortedHit>,
    /// The best score of every match, when scores were computed.
    pub max_score: Option<f32>,
}

/// One key part, comparable across segments (also an index sort's key, `index::sorted`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part {
    U(u64),
    B(Vec<u8>),
    F(f32),
    Missing,
}

/// A resolved sort key: for fields, the field id and type.
#[derive(Clone, Copy)]
enum Resolved {
    Score,
    Seq,
    Field(u32, FieldType),
}

struct Kept {
    key: Vec<Part>,
    seq: u64,
    hit: Hit,
}

impl Searcher {
    /// The `k` matching documents first in `sort` order (after `after`'s values, if given), and
    /// the exact number of matches. Scores are computed when a key is the score or
    /// `track_scores` asks; otherwise hits carry NaN.
    pub fn search_sorted(
        &self,
        query: &Query,
        sort: &[SortField],
        k: usize,
        after: Option<&[SortValue]>,
        track_scores: bool,
    ) -> Result<SortedResult> {
        if sort.is_empty() {
            return Err(Error::Query(
                "a sorted search needs at least one sort key".into(),
            ));
        }
        let schema = self.schema();
        let mut keys = Vec::with_capacity(sort.len());
        for s in sort {
            keys.push(match &s.key {
                SortKey::Score => Resolved::Score,
                SortKey::IndexOrder => Resolved::Seq,
                SortKey::Field(name) => {
                    let id = schema
                        .field_id(name)
                        .ok_or_else(|| Error::unknown_field(schema, name))?;
                    let entry = schema.field(id);
                    if !entry.has_column() {
                        return Err(Error::Query(format!(
                            "cannot sort by field {name:?}: {} fields have no column{}",
                            entry.field_type,
                            if entry.field_type == FieldType::Text {
                                " (sort by a keyword field instead)"
                            } else {
                                " when \"doc_values\" is false"
                            }
                        )));
                    }
                    Resolved::Field(id, entry.field_type)
                }
            });
        }
        let after: Option<Vec<Part>> = match after {
            None => None,
            Some(vals) => {
                if vals.len() != keys.len() {
                    return Err(Error::Query(format!(
                        "search_after has {} values for {} sort keys",
                        vals.len(),
                        keys.len()
                    )));
                }
                Some(
                    keys.iter()
                        .zip(vals)
                        .map(|(k, v)| after_part(schema, *k, v))
                        .collect::<Result<_>>()?,
                )
            }
        };
        let need_scores = track_scores || keys.iter().any(|k| matches!(k, Resolved::Score));
        let weight = self.weight(query)?;
        let mut kept: Vec<Kept> = Vec::new();
        let mut total = 0u64;
        let mut skipped = false;
        let mut max_score: Option<f32> = None;
        for (ord, seg) in self.segments().iter().enumerate() {
            let Some(mut s) = weight.scorer(seg, ord)? else {
                continue;
            };
            let live = self.live_docs().get(ord).and_then(|l| l.as_deref());
            if !seg.has_columns() && keys.iter().any(|k| matches!(k, Resolved::Field(..))) {
                return Err(Error::Query(format!(
                    "cannot sort by a field: segment {} was written before format v8 and has no columns; force-merge the index (`IndexWriter::force_merge`, or `quarry index --append --force-merge 1` of an empty file) to add them",
                    seg.name()
                )));
            }
            let views: Vec<Option<ColumnView<'_>>> = keys
                .iter()
                .map(|k| match k {
                    Resolved::Field(f, _) => seg.column_view(*f),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?;
            // Early termination: how many leading keys the segment's index sort gives in order
            // (none when every match's score is asked for: `max_score` needs them all).
            let shared = if need_scores {
                0
            } else {
                shared_prefix(sort, seg.index_sort())
            };
            if shared > 0 && k == 0 {
                skipped = true;
                continue;
            }
            // Block skipping on a dense first key (not when every match's score is asked for).
            let skip = match (keys[0], &views[0]) {
                (Resolved::Field(_, ft), Some(v))
                    if v.is_dense() && ft != FieldType::Keyword && !need_scores =>
                {
                    Some(v)
                }
                _ => None,
            };
            // Points of a numeric first key: the documents with the best values are offered
            // first (they fill the k kept hits with strong keys at once), then only documents
            // whose value can still compete are visited, as Lucene's competitive iterators do.
            let pts = match (keys[0], &views[0]) {
                (Resolved::Field(_, ft), Some(v))
                    if !matches!(ft, FieldType::Keyword | FieldType::Boolean)
                        && !need_scores
                        && k > 0
                        && shared == 0
                        && v.point_count() > 0
                        && (v.is_dense() || !sort[0].missing_first) =>
                {
                    // The values a hit after `after` can have (its first key included: ties
                    // are decided by the later keys).
                    let desc = sort[0].descending;
                    match after.as_ref().map(|a| &a[0]) {
                        None => Some((v, 0, u64::MAX)),
                        Some(Part::U(a)) if desc => Some((v, 0, *a)),
                        Some(Part::U(a)) => Some((v, *a, u64::MAX)),
                        Some(_) => None,
                    }
                }
                _ => None,
            };
            let mut seeded: Vec<u32> = Vec::new();
            if let Some((v, lo, hi)) = pts {
                let rows = v.point_rows(lo, hi).unwrap_or(0..0);
                let n = rows.len().min((4 * k).max(SEED_ROWS));
                let take = if sort[0].descending {
                    rows.end - n..rows.end
                } else {
                    rows.start..rows.start + n
                };
                v.point_docs(take, &mut seeded);
                seeded.sort_unstable();
                seeded.dedup();
                seeded.retain(|&x| x < seg.doc_count());
                if let (false, Some(mut s2)) = (seeded.is_empty(), weight.scorer(seg, ord)?) {
                    let two_phase = s2.is_two_phase();
                    let mut key = Vec::with_capacity(keys.len());
                    for &c in &seeded {
                        let mut x = s2.doc();
                        if x < c {
                            x = s2.seek(c);
                        }
                        if x == TERMINATED {
                            break;
                        }
                        if x != c
                            || matches!(live, Some(l) if !l.is_live(c))
                            || (two_phase && !s2.matches())
                        {
                            continue;
                        }
                        key.clear();
                        key.extend(keys.iter().enumerate().map(|(i, kk)| match kk {
                            Resolved::Seq => Part::U(seg.seq(c)),
                            Resolved::Field(..) => {
                                field_part(views[i].as_ref(), c, sort[i].descending)
                            }
                            Resolved::Score => Part::F(f32::NAN),
                        }));
                        let hit = Hit {
                            score: f32::NAN,
                            doc: DocAddress {
                                segment: ord as u32,
                                doc: c,
                            },
                            seq: seg.seq(c),
                        };
                        offer(&mut kept, k, sort, after.as_deref(), &key, hit);
                    }
                    if let Some(why) = s2.corruption() {
                        return Err(scorer_corruption(seg, why));
                    }
                }
            }
            // The documents that can still compete (ascending) and the next one to visit.
            let mut competitive: Option<(Vec<u32>, usize)> = None;
            let two_phase = s.is_two_phase();
            let mut key = Vec::with_capacity(keys.len());
            let mut d = s.doc();
            if let (true, Some(a)) = (shared > 0, after.as_ref()) {
                // Documents before the first whose leading keys reach `after`'s cannot pass it.
                let start = first_reaching(seg.doc_count(), &sort[..shared], &a[..shared], |d| {
                    (0..shared)
                        .map(|i| field_part(views[i].as_ref(), d, sort[i].descending))
                        .collect()
                });
                if start > d && d != TERMINATED {
                    skipped = true;
                    d = if start >= seg.doc_count() {
                        TERMINATED
                    } else {
                        s.seek(start)
                    };
                }
            }
            let mut checked_block = usize::MAX;
            while d != TERMINATED {
                if kept.len() >= k && k > 0 && d as usize / column::BLOCK != checked_block {
                    if let (Some((v, lo, hi)), Part::U(w)) = (pts, &kept[k - 1].key[0]) {
                        let (lo, hi) = if sort[0].descending {
                            ((*w).max(lo), hi)
                        } else {
                            (lo, (*w).min(hi))
                        };
                        let rows = v.point_rows(lo, hi).unwrap_or(0..0).len();
                        let pending = match &competitive {
                            Some((list, i)) => list.len() - i,
                            None => (seg.doc_count() - d) as usize,
                        };
                        if rows * 8 < pending {
                            let mut list = Vec::new();
                            v.docs_in_range(lo, hi, seg.doc_count(), &mut list);
                            let from = list.partition_point(|&x| x < d);
                            competitive = Some((list, from));
                        }
                    }
                }
                if kept.len() >= k && k > 0 {
                    if let Some(v) = skip {
                        let b = d as usize / column::BLOCK;
                        if b != checked_block {
                            checked_block = b;
                            let (min, max) = v.values().block_bounds(b);
                            let best = if sort[0].descending { max } else { min };
                            let worst = &kept[kept.len() - 1].key[0];
                            if compare_part(&sort[0], &Part::U(best), worst) == Ordering::Greater {
                                let next = ((b + 1) * column::BLOCK) as u32;
                                d = if next >= seg.doc_count() {
                                    TERMINATED
                                } else {
                                    s.seek(next)
                                };
                                skipped = true;
                                continue;
                            }
                        }
                    }
                }
                if let Some((list, i)) = competitive.as_mut() {
                    while *i < list.len() && list[*i] < d {
                        *i += 1;
                    }
                    match list.get(*i) {
                        None => {
                            skipped = true;
                            break;
                        }
                        Some(&c) if c > d => {
                            skipped = true;
                            d = s.seek(c);
                            continue;
                        }
                        Some(_) => {}
                    }
                }
                if !matches!(live, Some(l) if !l.is_live(d)) && (!two_phase || s.matches()) {
                    total += 1;
                    let score = if need_scores { s.score() } else { f32::NAN };
                    if need_scores {
                        max_score = Some(max_score.map_or(score, |m: f32| m.max(score)));
                    }
                    let part = |i: usize| match keys[i] {
                        Resolved::Score => Part::F(score),
                        Resolved::Seq => Part::U(seg.seq(d)),
                        Resolved::Field(..) => field_part(views[i].as_ref(), d, sort[i].descending),
                    };
                    // A match whose first key already sorts after the k-th kept hit cannot
                    // compete: rejected before its other keys are read (a keyword key copies
                    // its term).
                    let first = part(0);
                    if kept.len() >= k && k > 0 {
                        let worst = &kept[kept.len() - 1].key[0];
                        if compare_part(&sort[0], &first, worst) == Ordering::Greater {
                            if shared > 0 {
                                // In index-sort order: every later match sorts after it too.
                                skipped = true;
                                break;
                            }
                            d = s.next();
                            continue;
                        }
                    }
                    key.clear();
                    key.push(first);
                    key.extend((1..keys.len()).map(part));
                    if shared > 0 && kept.len() >= k {
                        let w = &kept[kept.len() - 1].key;
                        if compare(&sort[..shared], &key[..shared], &w[..shared])
                            == Ordering::Greater
                        {
                            // This match and every one after it sort after the k-th kept hit.
                            skipped = true;
                            break;
                        }
                    }
                    // (A seeded document was offered already.)
                    if seeded.binary_search(&d).is_err() {
                        let hit = Hit {
                            score,
                            doc: DocAddress {
                                segment: ord as u32,
                                doc: d,
                            },
                            seq: seg.seq(d),
                        };
                        offer(&mut kept, k, sort, after.as_deref(), &key, hit);
                    }
                }
                d = s.next();
            }
            if let Some(why) = s.corruption() {
                return Err(scorer_corruption(seg, why));
            }
        }
        // Skipped blocks were not counted: count exactly with a plain pass.
        if skipped {
            total = self.count(query)?;
        }
        let hits = kept
            .into_iter()
            .map(|e| SortedHit {
                values: keys
                    .iter()
                    .zip(&e.key)
                    .map(|(k, p)| sort_value(*k, p))
                    .collect(),
                hit: e.hit,
            })
            .collect();
        Ok(SortedResult {
            total_hits: total,
            hits,
            max_score,
        })
    }

    /// The number of live documents matching `query`.
    pub fn count(&self, query: &Query) -> Result<u64> {
        Ok(self.search(query, 0, super::SearchMode::Count)?.total_hits)
    }

    fn weight(&self, query: &Query) -> Result<Weight> {
        Weight::build(query, &self.context(), 1.0)
    }
}

/// Rows of the points tried first in a sorted search (at least `4 k`).
const SEED_ROWS: usize = 64;

/// Keeps `hit` (key `key`) among the `k` first in `sort` order after `after`, ties by
/// sequence number.
fn offer(
    kept: &mut Vec<Kept>,
    k: usize,
    sort: &[SortField],
    after: Option<&[Part]>,
    key: &[Part],
    hit: Hit,
) {
    let seq = hit.seq;
    let passes_after = after.is_none_or(|a| compare(sort, key, a) == Ordering::Greater);
    let competes = k > 0
        && (kept.len() < k || {
            let w = &kept[kept.len() - 1];
            compare(sort, key, &w.key).then(seq.cmp(&w.seq)) == Ordering::Less
        });
    if passes_after && competes {
        let at = kept.partition_point(|e| {
            compare(sort, &e.key, key).then(e.seq.cmp(&seq)) == Ordering::Less
        });
        kept.insert(
            at,
            Kept {
                key: key.to_vec(),
                seq,
                hit,
            },
        );
        kept.truncate(k);
    }
}

/// How many leading keys of `sort` a segment ordered by `index_sort` holds in order: the same
/// field, direction and missing placement, key by key.
fn shared_prefix(sort: &[SortField], index_sort: Option<&crate::index_sort::IndexSort>) -> usize {
    let Some(is) = index_sort else {
        return 0;
    };
    sort.iter()
        .zip(&is.fields)
        .take_while(|(s, i)| {
            matches!(&s.key, SortKey::Field(f) if *f == i.field)
                && s.descending == i.descending
                && s.missing_first == i.missing_first
        })
        .count()
}

/// In a segment of `doc_count` documents ordered by `sort`, the first document whose key
/// (`key_of`) does not sort before `target`: a binary search.
fn first_reaching(
    doc_count: u32,
    sort: &[SortField],
    target: &[Part],
    key_of: impl Fn(u32) -> Vec<Part>,
) -> u32 {
    let (mut lo, mut hi) = (0u32, doc_count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if compare(sort, &key_of(mid), target) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `doc`'s value of a field key: the smallest ascending, the largest descending.
pub(crate) fn field_part(view: Option<&ColumnView<'_>>, doc: u32, descending: bool) -> Part {
    let Some(v) = view else {
        return Part::Missing;
    };
    let val = if descending {
        v.last(doc)
    } else {
        v.first(doc)
    };
    match (val, v.kind, v.dict()) {
        (None, ..) => Part::Missing,
        (Some(o), ColumnKind::Ord, Some(dict)) => Part::B(dict.term(o).to_vec()),
        (Some(x), ..) => Part::U(x),
    }
}

fn compare_part(s: &super::sort::SortField, a: &Part, b: &Part) -> Ordering {
    compare_values(s.descending, s.missing_first, a, b)
}

/// The order of two key parts in a direction, documents without a value first or last.
pub(crate) fn compare_values(
    descending: bool,
    missing_first: bool,
    a: &Part,
    b: &Part,
) -> Ordering {
    let o = match (a, b) {
        (Part::Missing, Part::Missing) => return Ordering::Equal,
        (Part::Missing, _) => {
            return if missing_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (_, Part::Missing) => {
            return if missing_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Part::U(x), Part::U(y)) => x.cmp(y),
        (Part::B(x), Part::B(y)) => x.cmp(y),
        (Part::F(x), Part::F(y)) => x.total_cmp(y),
        _ => Ordering::Equal,
    };
    if descending {
        o.reverse()
    } else {
        o
    }
}

/// Sort order of two keys (without the index-order tie-break).
fn compare(sort: &[SortField], a: &[Part], b: &[Part]) -> Ordering {
    for ((s, x), y) in sort.iter().zip(a).zip(b) {
        let o = compare_part(s, x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn sort_value(k: Resolved, p: &Part) -> SortValue {
    match (k, p) {
        (_, Part::Missing) => SortValue::Missing,
        (Resolved::Score, Part::F(x)) => SortValue::Score(*x),
        (Resolved::Seq, Part::U(x)) => SortValue::Seq(*x),
        (Resolved::Field(_, FieldType::Float), Part::U(x)) => SortValue::Float(sortable_to_f64(*x)),
        (Resolved::Field(_, FieldType::Boolean), Part::U(x)) => SortValue::Bool(*x == 1),
        (Resolved::Field(..), Part::U(x)) => SortValue::Int(sortable_to_i64(*x)),
        (_, Part::B(b)) => SortValue::Str(String::from_utf8_lossy(b).into_owned()),
        (_, Part::F(x)) => SortValue::Score(*x),
        (_, Part::U(x)) => SortValue::Seq(*x),
    }
}

/// A `search_after` value as a key part of key `k`.
fn after_part(schema: &crate::schema::Schema, k: Resolved, v: &SortValue) -> Result<Part> {
    let bad = |what: &str| {
        Error::Query(format!(
            "search_after value {v:?} does not fit a sort key of {what}"
        ))
    };
    Ok(match (k, v) {
        (_, SortValue::Missing) => Part::Missing,
        (Resolved::Score, SortValue::Score(x)) => Part::F(*x),
        (Resolved::Score, SortValue::Float(x)) => Part::F(*x as f32),
        (Resolved::Score, SortValue::Int(x)) => Part::F(*x as f32),
        (Resolved::Score, _) => return Err(bad("_score")),
        (Resolved::Seq, SortValue::Seq(x)) => Part::U(*x),
        (Resolved::Seq, SortValue::Int(x)) if *x >= 0 => Part::U(*x as u64),
        (Resolved::Seq, _) => return Err(bad("_doc")),
        (Resolved::Field(f, ft), v) => {
            let name = &schema.field(f).name;
            match (ft, v) {
                (FieldType::Integer | FieldType::Date, SortValue::Int(x)) => Part::U(from_i64(*x)),
                (FieldType::Date, SortValue::Str(s)) => {
                    let ms = crate::document::date_millis(
                        schema,
                        f,
                        &crate::document::FieldValue::Str(s.clone()),
                    )
                    .map_err(|e| Error::Query(format!("search_after for {name:?}: {e}")))?;
                    Part::U(from_i64(ms))
                }
                (FieldType::Float, SortValue::Float(x)) => Part::U(from_f64(*x)),
                (FieldType::Float, SortValue::Int(x)) => Part::U(from_f64(*x as f64)),
                (FieldType::Boolean, SortValue::Bool(b)) => Part::U(u64::from(*b)),
                (FieldType::Keyword, SortValue::Str(s)) => Part::B(s.as_bytes().to_vec()),
                _ => return Err(bad(&format!("field {name:?} ({ft})"))),
            }
        }
    })
}
