//! Aggregations against a model: random documents with integer, float, date, boolean and
//! keyword fields (single- and multi-valued, some missing) indexed into several segments with
//! deletions (merged or not); every aggregation type, with sub-aggregations, must give exactly
//! the JSON a straightforward computation over the same rows gives, in Elasticsearch's shapes
//! (bucket order, empty buckets, `sum_other_doc_count`, number kinds included).
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use jiff::tz::TimeZone;
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use quarry::date::{self, Unit};
use quarry::{DirectoryKind, Document, Index, IndexWriter, MergePolicy, Schema, WriterOptions};
use serde_json::{json, Map, Value};

#[derive(Clone, Debug)]
struct Row {
    id: i64,
    price: Option<f64>,
    when: Option<i64>,
    carrier: Option<String>,
    tags: Vec<String>,
    ok: Option<bool>,
    nums: Vec<i64>,
}

/// 2019-12-01T00:00:00Z.
const BASE: i64 = 1_575_158_400_000;
const DAY: i64 = 86_400_000;

fn schema() -> Schema {
    Schema::from_json(
        r#"{"fields":[
            {"name":"id","type":"integer"},
            {"name":"price","type":"float"},
            {"name":"when","type":"date"},
            {"name":"stamp","type":"date","format":"yyyy/MM/dd HH:mm:ss||epoch_millis"},
            {"name":"carrier","type":"keyword"},
            {"name":"tags","type":"keyword"},
            {"name":"ok","type":"boolean"},
            {"name":"nums","type":"integer"},
            {"name":"body","type":"text"}]}"#,
    )
    .unwrap()
}

fn row_strategy() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(
            0.85,
            prop_oneof![Just(0.0f64), Just(-0.0), Just(12.5), -100.0f64..100.0],
        ),
        prop::option::weighted(0.85, 0i64..560 * DAY),
        prop::option::weighted(
            0.8,
            prop::sample::select(vec!["AA", "B6", "DL", "UA", "aa", "É", "AA", "DL"]),
        ),
        prop::collection::vec(prop::sample::select(vec!["x", "y", "z", "x"]), 0..3),
        prop::option::of(any::<bool>()),
        prop::collection::vec(-5i64..5, 0..3),
    )
        .prop_map(|(price, when, carrier, tags, ok, nums)| Row {
            id: 0,
            price,
            when: when.map(|w| BASE + w),
            carrier: carrier.map(str::to_string),
            tags: tags.into_iter().map(str::to_string).collect(),
            ok,
            nums,
        })
}

fn doc_json(r: &Row) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(r.id));
    if let Some(p) = r.price {
        m.insert("price".into(), json!(p));
    }
    if let Some(d) = r.when {
        let v = if r.id % 2 == 0 {
            json!(Timestamp::from_millisecond(d).unwrap().to_string())
        } else {
            json!(d)
        };
        m.insert("when".into(), v);
        m.insert("stamp".into(), json!(d));
    }
    if let Some(c) = &r.carrier {
        m.insert("carrier".into(), json!(c));
    }
    m.insert("tags".into(), json!(r.tags));
    if let Some(b) = r.ok {
        m.insert("ok".into(), json!(b));
    }
    m.insert("nums".into(), json!(r.nums));
    m.insert(
        "body".into(),
        json!(if r.id % 4 == 0 { "alpha beta" } else { "beta" }),
    );
    m
}

/// Rows added in three commits (three segments), every seventh deleted; with `merge`,
/// force-merged to one segment.
fn build(rows: &[Row], merge: bool) -> (tempfile::TempDir, Vec<Row>) {
    let tmp = tempfile::tempdir().unwrap();
    let schema = schema();
    let opts = WriterOptions {
        threads: 1,
        ram_budget_bytes: 64 << 20,
        merge_policy: MergePolicy::None,
        directory: DirectoryKind::Mmap,
        index_sort: None,
    };
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
    let third = rows.len().div_ceil(3).max(1);
    for chunk in rows.chunks(third) {
        for r in chunk {
            w.add_document(Document::from_map(&schema, &doc_json(r)).unwrap())
                .unwrap();
        }
        w.commit().unwrap();
    }
    let mut live = Vec::new();
    for r in rows {
        if r.id % 7 == 3 {
            w.delete_term("id", &quarry::FieldValue::Int(r.id)).unwrap();
        } else {
            live.push(r.clone());
        }
    }
    w.commit().unwrap();
    if merge {
        w.force_merge(1).unwrap();
    }
    drop(w);
    (tmp, live)
}

// ---------------------------------------------------------------------------------------------
// The model.

/// A value of a row's field, ordered as the engine orders keys.
#[derive(Clone, Debug)]
enum K {
    I(i64),
    F(f64),
    S(String),
    B(bool),
}

impl PartialEq for K {
    fn eq(&self, o: &K) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for K {}
impl PartialOrd for K {
    fn partial_cmp(&self, o: &K) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for K {
    fn cmp(&self, o: &K) -> Ordering {
        match (self, o) {
            (K::I(a), K::I(b)) => a.cmp(b),
            (K::F(a), K::F(b)) => a.total_cmp(b),
            (K::S(a), K::S(b)) => a.as_bytes().cmp(b.as_bytes()),
            (K::B(a), K::B(b)) => a.cmp(b),
            _ => unreachable!("one kind per field"),
        }
    }
}

/// A row's values of `field`, sorted (keywords distinct, as their columns keep them).
fn values(r: &Row, field: &str) -> Vec<K> {
    let mut v: Vec<K> = match field {
        "id" => vec![K::I(r.id)],
        "price" => r
            .price
            .map(|p| K::F(if p == 0.0 { 0.0 } else { p }))
            .into_iter()
            .collect(),
        "when" | "stamp" => r.when.map(K::I).into_iter().collect(),
        "carrier" => r.carrier.clone().map(K::S).into_iter().collect(),
        "tags" => r.tags.iter().cloned().map(K::S).collect(),
        "ok" => r.ok.map(K::B).into_iter().collect(),
        "nums" => r.nums.iter().copied().map(K::I).collect(),
        "nope" => vec![],
        other => unreachable!("{other}"),
    };
    v.sort();
    if matches!(field, "carrier" | "tags") {
        v.dedup();
    }
    v
}

fn num(k: &K) -> f64 {
    match k {
        K::I(i) => *i as f64,
        K::F(f) => *f,
        K::B(b) => f64::from(u8::from(*b)),
        K::S(_) => unreachable!(),
    }
}

fn distinct(mut v: Vec<K>) -> Vec<K> {
    v.dedup();
    v
}

/// `strict_date_optional_time` (and the test's custom format) of `ms` in `tz`.
fn fmt_date(ms: i64, tz: &TimeZone, field: &str) -> String {
    let z = Timestamp::from_millisecond(ms)
        .unwrap()
        .to_zoned_datetime(tz.clone());
    if field == "stamp" {
        return format!(
            "{:04}/{:02}/{:02} {:02}:{:02}:{:02}",
            z.year(),
            z.month(),
            z.day(),
            z.hour(),
            z.minute(),
            z.second()
        );
    }
    let off = z.offset().seconds();
    let off = if off == 0 {
        "Z".to_string()
    } else {
        let a = off.abs();
        format!(
            "{}{:02}:{:02}",
            if off < 0 { '-' } else { '+' },
            a / 3600,
            a % 3600 / 60
        )
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{off}",
        z.year(),
        z.month(),
        z.day(),
        z.hour(),
        z.minute(),
        z.second(),
        z.millisecond()
    )
}

/// Elasticsearch's `CompensatedSum`.
fn kahan(values: &[f64]) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for &v in values {
        if !v.is_finite() {
            sum += v;
        }
        if sum.is_finite() {
            let corrected = v + comp;
            let updated = sum + corrected;
            comp = corrected - (updated - sum);
            sum = updated;
        }
    }
    sum
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    CountDesc,
    CountAsc,
    KeyAsc,
    KeyDesc,
}

impl Order {
    fn json(self) -> Value {
        match self {
            Order::CountDesc => json!({"_count": "desc"}),
            Order::CountAsc => json!({"_count": "asc"}),
            Order::KeyAsc => json!({"_key": "asc"}),
            Order::KeyDesc => json!({"_key": "desc"}),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Interval {
    Calendar(&'static str, Unit),
    Fixed(&'static str, i64),
}

#[derive(Clone, Debug)]
struct RangeCase {
    req: Value,
    from: Option<f64>,
    to: Option<f64>,
    key: String,
    from_s: Option<String>,
    to_s: Option<String>,
}

/// An aggregation of the test: its request and its model.
#[derive(Clone, Debug)]
enum A {
    Terms {
        field: &'static str,
        size: usize,
        order: Order,
        min_doc_count: u64,
        missing: Option<Value>,
        subs: Vec<(String, A)>,
    },
    Histogram {
        field: &'static str,
        interval: f64,
        offset: f64,
        min_doc_count: u64,
        bounds: Option<(f64, f64)>,
        keyed: bool,
        subs: Vec<(String, A)>,
    },
    DateHistogram {
        field: &'static str,
        interval: Interval,
        tz: &'static str,
        offset: Option<(&'static str, i64)>,
        min_doc_count: u64,
        bounds: Option<(i64, i64)>,
        order: Order,
        subs: Vec<(String, A)>,
    },
    Range {
        typ: &'static str,
        field: &'static str,
        ranges: Vec<RangeCase>,
        keyed: bool,
        subs: Vec<(String, A)>,
    },
    Metric {
        kind: &'static str,
        field: &'static str,
        missing: Option<f64>,
    },
    Cardinality {
        field: &'static str,
    },
    Percentiles {
        field: &'static str,
        keyed: bool,
    },
    Filter {
        carrier: &'static str,
        subs: Vec<(String, A)>,
    },
    Filters {
        other: bool,
        keyed: bool,
        subs: Vec<(String, A)>,
    },
}

/// What the model needs beyond a bucket's rows.
struct Ctx<'a> {
    /// Every row added, deleted ones included.
    all: &'a [Row],
    live: &'a [Row],
    merged: bool,
}

fn subs_json(subs: &[(String, A)]) -> Value {
    Value::Object(subs.iter().map(|(n, a)| (n.clone(), a.request())).collect())
}

fn with_subs(mut body: Value, typ: &str, subs: &[(String, A)]) -> Value {
    let mut m = Map::new();
    m.insert(typ.into(), body.take());
    if !subs.is_empty() {
        m.insert("aggs".into(), subs_json(subs));
    }
    Value::Object(m)
}

fn model_subs(subs: &[(String, A)], docs: &[&Row], ctx: &Ctx, m: &mut Map<String, Value>) {
    for (n, a) in subs {
        m.insert(n.clone(), a.model(docs, ctx));
    }
}

impl A {
    fn request(&self) -> Value {
        match self {
            A::Terms {
                field,
                size,
                order,
                min_doc_count,
                missing,
                subs,
            } => {
                let mut b = json!({"field": field, "size": size, "order": order.json(), "min_doc_count": min_doc_count});
                if let Some(m) = missing {
                    b["missing"] = m.clone();
                }
                with_subs(b, "terms", subs)
            }
            A::Histogram {
                field,
                interval,
                offset,
                min_doc_count,
                bounds,
                keyed,
                subs,
            } => {
                let mut b = json!({"field": field, "interval": interval, "offset": offset, "min_doc_count": min_doc_count, "keyed": keyed});
                if let Some((lo, hi)) = bounds {
                    b["extended_bounds"] = json!({"min": lo, "max": hi});
                }
                with_subs(b, "histogram", subs)
            }
            A::DateHistogram {
                field,
                interval,
                tz,
                offset,
                min_doc_count,
                bounds,
                order,
                subs,
            } => {
                let mut b = json!({"field": field, "time_zone": tz, "min_doc_count": min_doc_count, "order": order.json()});
                match interval {
                    Interval::Calendar(s, _) => b["calendar_interval"] = json!(s),
                    Interval::Fixed(s, _) => b["fixed_interval"] = json!(s),
                }
                if let Some((s, _)) = offset {
                    b["offset"] = json!(s);
                }
                if let Some((lo, hi)) = bounds {
                    // One as text (read in the time zone... as UTC text with its offset), one
                    // as epoch milliseconds.
                    b["extended_bounds"] = json!({
                        "min": Timestamp::from_millisecond(*lo).unwrap().to_string(),
                        "max": hi,
                    });
                }
                with_subs(b, "date_histogram", subs)
            }
            A::Range {
                typ,
                field,
                ranges,
                keyed,
                subs,
            } => {
                let r: Vec<Value> = ranges.iter().map(|c| c.req.clone()).collect();
                with_subs(
                    json!({"field": field, "ranges": r, "keyed": keyed}),
                    typ,
                    subs,
                )
            }
            A::Metric {
                kind,
                field,
                missing,
            } => {
                let mut b = json!({ "field": field });
                if let Some(m) = missing {
                    b["missing"] = json!(m);
                }
                json!({ *kind: b })
            }
            A::Cardinality { field } => {
                json!({"cardinality": {"field": field, "precision_threshold": 40000}})
            }
            A::Percentiles { field, keyed } => {
                json!({"percentiles": {"field": field, "keyed": keyed}})
            }
            A::Filter { carrier, subs } => {
                with_subs(json!({"term": {"carrier": carrier}}), "filter", subs)
            }
            A::Filters { other, keyed, subs } => {
                let mut b = json!({"filters": {
                    "aa": {"term": {"carrier": "AA"}},
                    "alpha": {"query_string": {"query": "body:alpha"}},
                    "x": {"bool": {"must": {"term": {"tags": "x"}}, "must_not": [{"term": {"ok": "true"}}]}},
                }, "keyed": keyed});
                if *other {
                    b["other_bucket_key"] = json!("rest");
                }
                with_subs(b, "filters", subs)
            }
        }
    }

    fn model(&self, docs: &[&Row], ctx: &Ctx) -> Value {
        match self {
            A::Terms {
                field,
                size,
                order,
                min_doc_count,
                missing,
                subs,
            } => {
                let missing_key = missing.as_ref().map(|m| match m {
                    Value::String(s) => K::S(s.clone()),
                    Value::Number(n) if *field == "price" => K::F(n.as_f64().unwrap()),
                    Value::Number(n) => K::I(n.as_i64().unwrap()),
                    Value::Bool(b) => K::B(*b),
                    _ => unreachable!(),
                });
                let mut groups: BTreeMap<K, Vec<&Row>> = BTreeMap::new();
                for &d in docs {
                    let mut ks = distinct(values(d, field));
                    if ks.is_empty() {
                        ks.extend(missing_key.clone());
                    }
                    for k in ks {
                        groups.entry(k).or_default().push(d);
                    }
                }
                if *min_doc_count == 0 {
                    // Keywords: every term in the segments (deleted documents' too, until a
                    // merge drops them); numbers: the values of live documents.
                    let keyword = matches!(*field, "carrier" | "tags");
                    let source = if keyword && !ctx.merged {
                        ctx.all
                    } else {
                        ctx.live
                    };
                    for r in source {
                        for k in values(r, field) {
                            groups.entry(k).or_default();
                        }
                    }
                    if let Some(m) = &missing_key {
                        if ctx.live.iter().any(|r| values(r, field).is_empty()) {
                            groups.entry(m.clone()).or_default();
                        }
                    }
                }
                let mut cands: Vec<(K, Vec<&Row>)> = groups.into_iter().collect();
                let total: usize = cands.iter().map(|c| c.1.len()).sum();
                cands.sort_by(|a, b| {
                    let (ca, cb) = (a.1.len(), b.1.len());
                    match order {
                        Order::CountDesc => cb.cmp(&ca).then(a.0.cmp(&b.0)),
                        Order::CountAsc => ca.cmp(&cb).then(a.0.cmp(&b.0)),
                        Order::KeyAsc => a.0.cmp(&b.0),
                        Order::KeyDesc => b.0.cmp(&a.0),
                    }
                });
                let shard_size = (*size as f64 * 1.5 + 10.0) as usize;
                cands.truncate(shard_size);
                let mut other = total - cands.iter().map(|c| c.1.len()).sum::<usize>();
                cands.retain(|c| c.1.len() as u64 >= *min_doc_count);
                if cands.len() > *size {
                    other += cands[*size..].iter().map(|c| c.1.len()).sum::<usize>();
                    cands.truncate(*size);
                }
                let buckets: Vec<Value> = cands
                    .iter()
                    .map(|(k, rows)| {
                        let mut m = Map::new();
                        match k {
                            K::S(s) => {
                                m.insert("key".into(), json!(s));
                            }
                            K::F(f) => {
                                m.insert("key".into(), json!(f));
                            }
                            K::B(b) => {
                                m.insert("key".into(), json!(i64::from(*b)));
                                m.insert("key_as_string".into(), json!(b.to_string()));
                            }
                            K::I(i) => {
                                m.insert("key".into(), json!(i));
                                if matches!(*field, "when" | "stamp") {
                                    m.insert(
                                        "key_as_string".into(),
                                        json!(fmt_date(*i, &TimeZone::UTC, field)),
                                    );
                                }
                            }
                        }
                        m.insert("doc_count".into(), json!(rows.len() as u64));
                        model_subs(subs, rows, ctx, &mut m);
                        Value::Object(m)
                    })
                    .collect();
                json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": other as u64, "buckets": buckets})
            }
            A::Histogram {
                field,
                interval,
                offset,
                min_doc_count,
                bounds,
                keyed,
                subs,
            } => {
                let k_of = |x: f64| ((x - offset) / interval).floor() as i64;
                let mut groups: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
                for &d in docs {
                    let mut ks: Vec<i64> = values(d, field).iter().map(|v| k_of(num(v))).collect();
                    ks.dedup();
                    for k in ks {
                        groups.entry(k).or_default().push(d);
                    }
                }
                let mut list: Vec<(i64, Vec<&Row>)> = Vec::new();
                if *min_doc_count == 0 {
                    let (mut lo, mut hi) =
                        (groups.keys().next().copied(), groups.keys().last().copied());
                    if let Some((bl, bh)) = bounds {
                        let (a, b) = (k_of(*bl), k_of(*bh));
                        lo = Some(lo.map_or(a, |l| l.min(a)));
                        hi = Some(hi.map_or(b, |h| h.max(b)));
                    }
                    if let (Some(lo), Some(hi)) = (lo, hi) {
                        for k in lo..=hi {
                            list.push((k, groups.get(&k).cloned().unwrap_or_default()));
                        }
                    }
                } else {
                    list = groups
                        .into_iter()
                        .filter(|g| g.1.len() as u64 >= *min_doc_count)
                        .collect();
                }
                let buckets: Vec<(String, Value)> = list
                    .iter()
                    .map(|(k, rows)| {
                        let key = *k as f64 * interval + offset;
                        let mut m = Map::new();
                        m.insert("key".into(), json!(key));
                        m.insert("doc_count".into(), json!(rows.len() as u64));
                        model_subs(subs, rows, ctx, &mut m);
                        (format!("{key:?}"), Value::Object(m))
                    })
                    .collect();
                if *keyed {
                    json!({"buckets": Value::Object(buckets.into_iter().collect())})
                } else {
                    json!({"buckets": buckets.into_iter().map(|b| b.1).collect::<Vec<_>>()})
                }
            }
            A::DateHistogram {
                field,
                interval,
                tz,
                offset,
                min_doc_count,
                bounds,
                order,
                subs,
            } => {
                let zone = date::time_zone(tz).unwrap();
                let off = offset.map_or(0, |o| o.1);
                let inner_round = |v: i64| match interval {
                    Interval::Calendar(_, u) => date::round_down(v, *u, &zone).unwrap(),
                    Interval::Fixed(_, i) => {
                        let o = i64::from(zone.to_fixed_offset().unwrap().seconds()) * 1000;
                        (v + o).div_euclid(*i) * i - o
                    }
                };
                let key_of = |v: i64| inner_round(v - off) + off;
                let next = |k: i64| match interval {
                    Interval::Calendar(_, u) => {
                        date::round_down(date::add(k - off, *u, 1, &zone).unwrap(), *u, &zone)
                            .unwrap()
                            + off
                    }
                    Interval::Fixed(_, i) => k + i,
                };
                let mut groups: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
                for &d in docs {
                    let mut ks: Vec<i64> = values(d, field)
                        .iter()
                        .map(|v| key_of(num(v) as i64))
                        .collect();
                    ks.dedup();
                    for k in ks {
                        groups.entry(k).or_default().push(d);
                    }
                }
                let mut list: Vec<(i64, Vec<&Row>)> = Vec::new();
                if *min_doc_count == 0 {
                    let (mut lo, mut hi) =
                        (groups.keys().next().copied(), groups.keys().last().copied());
                    if let Some((bl, bh)) = bounds {
                        let (a, b) = (inner_round(*bl) + off, inner_round(*bh) + off);
                        lo = Some(lo.map_or(a, |l| l.min(a)));
                        hi = Some(hi.map_or(b, |h| h.max(b)));
                    }
                    if let (Some(lo), Some(hi)) = (lo, hi) {
                        let mut k = lo;
                        while k <= hi {
                            list.push((k, groups.get(&k).cloned().unwrap_or_default()));
                            k = next(k);
                        }
                    }
                } else {
                    list = groups
                        .into_iter()
                        .filter(|g| g.1.len() as u64 >= *min_doc_count)
                        .collect();
                }
                match order {
                    Order::KeyAsc => {}
                    Order::KeyDesc => list.reverse(),
                    Order::CountAsc => {
                        list.sort_by(|a, b| a.1.len().cmp(&b.1.len()).then(a.0.cmp(&b.0)))
                    }
                    Order::CountDesc => {
                        list.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)))
                    }
                }
                let buckets: Vec<Value> = list
                    .iter()
                    .map(|(k, rows)| {
                        let mut m = Map::new();
                        m.insert("key_as_string".into(), json!(fmt_date(*k, &zone, field)));
                        m.insert("key".into(), json!(k));
                        m.insert("doc_count".into(), json!(rows.len() as u64));
                        model_subs(subs, rows, ctx, &mut m);
                        Value::Object(m)
                    })
                    .collect();
                json!({ "buckets": buckets })
            }
            A::Range {
                field,
                ranges,
                keyed,
                subs,
                ..
            } => {
                let mut sorted = ranges.clone();
                sorted.sort_by(|a, b| {
                    let f = |x: Option<f64>, d: f64| x.unwrap_or(d);
                    f(a.from, f64::NEG_INFINITY)
                        .total_cmp(&f(b.from, f64::NEG_INFINITY))
                        .then(f(a.to, f64::INFINITY).total_cmp(&f(b.to, f64::INFINITY)))
                });
                let mut obj = Map::new();
                let mut arr = Vec::new();
                for c in &sorted {
                    let rows: Vec<&Row> = docs
                        .iter()
                        .copied()
                        .filter(|d| {
                            values(d, field).iter().any(|v| {
                                let x = num(v);
                                c.from.is_none_or(|f| x >= f) && c.to.is_none_or(|t| x < t)
                            })
                        })
                        .collect();
                    let mut m = Map::new();
                    if !keyed {
                        m.insert("key".into(), json!(c.key));
                    }
                    if let Some(f) = c.from {
                        m.insert("from".into(), json!(f));
                        if let Some(s) = &c.from_s {
                            m.insert("from_as_string".into(), json!(s));
                        }
                    }
                    if let Some(t) = c.to {
                        m.insert("to".into(), json!(t));
                        if let Some(s) = &c.to_s {
                            m.insert("to_as_string".into(), json!(s));
                        }
                    }
                    m.insert("doc_count".into(), json!(rows.len() as u64));
                    model_subs(subs, &rows, ctx, &mut m);
                    if *keyed {
                        obj.insert(c.key.clone(), Value::Object(m));
                    } else {
                        arr.push(Value::Object(m));
                    }
                }
                if *keyed {
                    json!({ "buckets": obj })
                } else {
                    json!({ "buckets": arr })
                }
            }
            A::Metric {
                kind,
                field,
                missing,
            } => {
                let mut vals: Vec<f64> = Vec::new();
                let mut count = 0u64;
                for d in docs {
                    let v = values(d, field);
                    if v.is_empty() {
                        if let Some(m) = missing {
                            vals.push(*m);
                            count += 1;
                        }
                    } else {
                        count += v.len() as u64;
                        if !matches!(*field, "carrier" | "tags") {
                            vals.extend(v.iter().map(num));
                        }
                    }
                }
                let as_string = |x: f64| -> Option<String> {
                    match *field {
                        "when" | "stamp" => Some(fmt_date(x as i64, &TimeZone::UTC, field)),
                        "ok" => Some((x != 0.0).to_string()),
                        _ => None,
                    }
                };
                let value = |x: Option<f64>| {
                    let mut m = Map::new();
                    m.insert("value".into(), x.map_or(Value::Null, |x| json!(x)));
                    if let Some(s) = x.and_then(as_string) {
                        m.insert("value_as_string".into(), json!(s));
                    }
                    Value::Object(m)
                };
                let min = vals.iter().copied().reduce(f64::min);
                let max = vals.iter().copied().reduce(f64::max);
                let sum = kahan(&vals);
                let avg = (!vals.is_empty()).then(|| sum / vals.len() as f64);
                match *kind {
                    "min" => value(min),
                    "max" => value(max),
                    "avg" => value(avg),
                    "sum" => value(Some(sum)),
                    "value_count" => json!({ "value": count }),
                    "stats" => {
                        if vals.is_empty() {
                            json!({"count": 0, "min": null, "max": null, "avg": null, "sum": 0.0})
                        } else {
                            let mut m = json!({"count": vals.len() as u64, "min": min, "max": max, "avg": avg, "sum": sum});
                            if let Some(s) = as_string(min.unwrap()) {
                                m["min_as_string"] = json!(s);
                                m["max_as_string"] = json!(as_string(max.unwrap()).unwrap());
                                m["avg_as_string"] = json!(as_string(avg.unwrap()).unwrap());
                                m["sum_as_string"] = json!(as_string(sum).unwrap());
                            }
                            m
                        }
                    }
                    other => unreachable!("{other}"),
                }
            }
            A::Cardinality { field } => {
                let set: BTreeSet<K> = docs.iter().flat_map(|d| values(d, field)).collect();
                json!({ "value": set.len() as u64 })
            }
            A::Percentiles { field, keyed } => {
                let mut vals: Vec<f64> = docs
                    .iter()
                    .flat_map(|d| values(d, field))
                    .map(|k| num(&k))
                    .collect();
                vals.sort_by(f64::total_cmp);
                let q = |p: f64| -> Option<f64> {
                    let n = vals.len();
                    if n == 0 {
                        return None;
                    }
                    let index = p / 100.0 * (n - 1) as f64;
                    let lo = index.floor() as usize;
                    let hi = (lo + 1).min(n - 1);
                    Some(vals[lo] + (index - lo as f64) * (vals[hi] - vals[lo]))
                };
                let percents = [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0];
                if *keyed {
                    let m: Map<String, Value> = percents
                        .iter()
                        .map(|&p| (format!("{p:?}"), q(p).map_or(Value::Null, |x| json!(x))))
                        .collect();
                    json!({ "values": m })
                } else {
                    let a: Vec<Value> = percents
                        .iter()
                        .map(|&p| json!({"key": p, "value": q(p)}))
                        .collect();
                    json!({ "values": a })
                }
            }
            A::Filter { carrier, subs } => {
                let rows: Vec<&Row> = docs
                    .iter()
                    .copied()
                    .filter(|d| d.carrier.as_deref() == Some(*carrier))
                    .collect();
                let mut m = Map::new();
                m.insert("doc_count".into(), json!(rows.len() as u64));
                model_subs(subs, &rows, ctx, &mut m);
                Value::Object(m)
            }
            A::Filters { other, keyed, subs } => {
                type Pred = fn(&Row) -> bool;
                let named: [(&str, Pred); 3] = [
                    ("aa", |d| d.carrier.as_deref() == Some("AA")),
                    ("alpha", |d| d.id % 4 == 0),
                    ("x", |d| {
                        d.tags.iter().any(|t| t == "x") && d.ok != Some(true)
                    }),
                ];
                let mut list: Vec<(String, Vec<&Row>)> = named
                    .iter()
                    .map(|(n, p)| {
                        (
                            n.to_string(),
                            docs.iter().copied().filter(|d| p(d)).collect(),
                        )
                    })
                    .collect();
                if *other {
                    let rest = docs
                        .iter()
                        .copied()
                        .filter(|d| !named.iter().any(|(_, p)| p(d)))
                        .collect();
                    list.push(("rest".into(), rest));
                }
                let mut obj = Map::new();
                let mut arr = Vec::new();
                for (n, rows) in list {
                    let mut m = Map::new();
                    if !keyed {
                        m.insert("key".into(), json!(n));
                    }
                    m.insert("doc_count".into(), json!(rows.len() as u64));
                    model_subs(subs, &rows, ctx, &mut m);
                    if *keyed {
                        obj.insert(n, Value::Object(m));
                    } else {
                        arr.push(Value::Object(m));
                    }
                }
                if *keyed {
                    json!({ "buckets": obj })
                } else {
                    json!({ "buckets": arr })
                }
            }
        }
    }
}

fn price_ranges() -> Vec<RangeCase> {
    let c = |req: Value, from: Option<f64>, to: Option<f64>, key: &str| RangeCase {
        req,
        from,
        to,
        key: key.to_string(),
        from_s: None,
        to_s: None,
    };
    vec![
        c(
            json!({"from": 0, "to": 50.5}),
            Some(0.0),
            Some(50.5),
            "0.0-50.5",
        ),
        c(json!({"to": 0}), None, Some(0.0), "*-0.0"),
        c(json!({"from": 50.5}), Some(50.5), None, "50.5-*"),
        c(
            json!({"from": -10, "to": 10, "key": "mid"}),
            Some(-10.0),
            Some(10.0),
            "mid",
        ),
        c(
            json!({"from": 12.5, "to": 12.5}),
            Some(12.5),
            Some(12.5),
            "12.5-12.5",
        ),
    ]
}

fn date_ranges() -> Vec<RangeCase> {
    let ms = |s: &str| s.parse::<Timestamp>().unwrap().as_millisecond() as f64;
    let c = |req: Value, from: Option<&str>, to: Option<&str>, key: Option<&str>| {
        let from_s = from.map(|s| fmt_date(ms(s) as i64, &TimeZone::UTC, "when"));
        let to_s = to.map(|s| fmt_date(ms(s) as i64, &TimeZone::UTC, "when"));
        RangeCase {
            req,
            from: from.map(ms),
            to: to.map(ms),
            key: key.map(str::to_string).unwrap_or_else(|| {
                format!(
                    "{}-{}",
                    from_s.as_deref().unwrap_or("*"),
                    to_s.as_deref().unwrap_or("*")
                )
            }),
            from_s,
            to_s,
        }
    };
    vec![
        c(
            json!({"to": "2020-06-01"}),
            None,
            Some("2020-06-01T00:00:00Z"),
            None,
        ),
        c(
            json!({"from": "2020-06-01", "to": "2020-06-01||+1M"}),
            Some("2020-06-01T00:00:00Z"),
            Some("2020-07-01T00:00:00Z"),
            None,
        ),
        c(
            json!({"from": "2021-01-01T00:00:00Z", "key": "recent"}),
            Some("2021-01-01T00:00:00Z"),
            None,
            Some("recent"),
        ),
        c(
            json!({"from": 1_590_969_600_000i64}),
            Some("2020-06-01T00:00:00Z"),
            None,
            None,
        ),
    ]
}

/// What proptest chooses for one case.
#[derive(Clone, Debug)]
struct Knobs {
    size: usize,
    order: Order,
    min_doc_count: u64,
    hist: (f64, f64),
    bounds: bool,
    keyed: bool,
    calendar: (&'static str, Unit),
    fixed: (&'static str, i64),
    tz: &'static str,
    fixed_tz: &'static str,
    offset: Option<(&'static str, i64)>,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        1usize..6,
        prop::sample::select(vec![
            Order::CountDesc,
            Order::CountAsc,
            Order::KeyAsc,
            Order::KeyDesc,
        ]),
        0u64..3,
        prop::sample::select(vec![(10.0, 0.0), (2.5, 0.0), (7.0, 1.5), (25.0, -5.0)]),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec![
            ("month", Unit::Month),
            ("1q", Unit::Quarter),
            ("week", Unit::Week),
            ("1d", Unit::Day),
            ("year", Unit::Year),
        ]),
        prop::sample::select(vec![
            ("90m", 5_400_000i64),
            ("2d", 2 * DAY),
            ("7d", 7 * DAY),
        ]),
        prop::sample::select(vec!["UTC", "Europe/Paris", "America/New_York", "+05:30"]),
        prop::sample::select(vec!["UTC", "+05:30", "-03:00"]),
        prop::sample::select(vec![
            None,
            Some(("+6h", 6 * 3_600_000i64)),
            Some(("-1d", -DAY)),
        ]),
    )
        .prop_map(
            |(
                size,
                order,
                min_doc_count,
                hist,
                bounds,
                keyed,
                calendar,
                fixed,
                tz,
                fixed_tz,
                offset,
            )| {
                Knobs {
                    size,
                    order,
                    min_doc_count,
                    hist,
                    bounds,
                    keyed,
                    calendar,
                    fixed,
                    tz,
                    fixed_tz,
                    offset,
                }
            },
        )
}

/// The aggregations of one case: every type, with sub-aggregations.
fn case_aggs(k: &Knobs) -> Vec<(String, A)> {
    let terms = |field: &'static str, missing: Option<Value>, subs: Vec<(String, A)>| A::Terms {
        field,
        size: k.size,
        order: k.order,
        min_doc_count: k.min_doc_count,
        missing,
        subs,
    };
    let metric = |kind: &'static str, field: &'static str| A::Metric {
        kind,
        field,
        missing: None,
    };
    let n = |s: &str| s.to_string();
    let (interval, offset) = k.hist;
    let mut out = vec![
        (n("carriers"), terms("carrier", None, vec![])),
        (
            n("carriers_top"),
            A::Terms {
                field: "carrier",
                size: 10,
                order: Order::CountDesc,
                min_doc_count: 1,
                missing: None,
                subs: vec![],
            },
        ),
        (n("tags"), terms("tags", Some(json!("none")), vec![])),
        (n("nums"), terms("nums", Some(json!(99)), vec![])),
        (
            n("prices"),
            A::Terms {
                field: "price",
                size: k.size,
                order: k.order,
                min_doc_count: 1,
                missing: None,
                subs: vec![],
            },
        ),
        (n("oks"), terms("ok", None, vec![])),
        (
            n("days"),
            A::Terms {
                field: "when",
                size: k.size,
                order: k.order,
                min_doc_count: 1,
                missing: None,
                subs: vec![],
            },
        ),
        (
            n("carriers_sub"),
            terms(
                "carrier",
                Some(json!("?")),
                vec![
                    (n("avg_price"), metric("avg", "price")),
                    (
                        n("tag_terms"),
                        A::Terms {
                            field: "tags",
                            size: 2,
                            order: Order::CountDesc,
                            min_doc_count: 1,
                            missing: None,
                            subs: vec![],
                        },
                    ),
                    (
                        n("num_hist"),
                        A::Histogram {
                            field: "nums",
                            interval: 2.0,
                            offset: 0.0,
                            min_doc_count: 0,
                            bounds: None,
                            keyed: false,
                            subs: vec![],
                        },
                    ),
                ],
            ),
        ),
        (
            n("price_hist"),
            A::Histogram {
                field: "price",
                interval,
                offset,
                min_doc_count: k.min_doc_count,
                bounds: k.bounds.then_some((-150.0, 130.0)),
                keyed: k.keyed,
                subs: vec![(n("carriers"), A::Cardinality { field: "carrier" })],
            },
        ),
        (
            n("num_hist"),
            A::Histogram {
                field: "nums",
                interval: 3.0,
                offset: 1.0,
                min_doc_count: k.min_doc_count,
                bounds: k.bounds.then_some((-20.0, 20.0)),
                keyed: false,
                subs: vec![(n("stats"), metric("stats", "price"))],
            },
        ),
        (
            n("calendar"),
            A::DateHistogram {
                field: "when",
                interval: Interval::Calendar(k.calendar.0, k.calendar.1),
                tz: k.tz,
                offset: k.offset,
                min_doc_count: k.min_doc_count,
                bounds: k
                    .bounds
                    .then_some((BASE - 40 * DAY + 12_345, BASE + 700 * DAY)),
                order: if k.size.is_multiple_of(2) {
                    Order::KeyAsc
                } else {
                    k.order
                },
                subs: vec![(
                    n("carriers"),
                    A::Terms {
                        field: "carrier",
                        size: 2,
                        order: Order::CountDesc,
                        min_doc_count: 1,
                        missing: None,
                        subs: vec![(n("max_day"), metric("max", "when"))],
                    },
                )],
            },
        ),
        (
            n("fixed"),
            A::DateHistogram {
                field: "stamp",
                interval: Interval::Fixed(k.fixed.0, k.fixed.1),
                tz: k.fixed_tz,
                offset: k.offset,
                min_doc_count: if k.fixed.1 < DAY { 1 } else { k.min_doc_count },
                bounds: None,
                order: Order::KeyAsc,
                subs: vec![(n("sum"), metric("sum", "nums"))],
            },
        ),
        (
            n("minutes"),
            A::DateHistogram {
                field: "when",
                interval: Interval::Calendar("minute", Unit::Minute),
                tz: "UTC",
                offset: None,
                min_doc_count: 1,
                bounds: None,
                order: Order::KeyAsc,
                subs: vec![],
            },
        ),
        (
            n("price_ranges"),
            A::Range {
                typ: "range",
                field: "price",
                ranges: price_ranges(),
                keyed: k.keyed,
                subs: vec![(n("tags"), metric("value_count", "tags"))],
            },
        ),
        (
            n("date_ranges"),
            A::Range {
                typ: "date_range",
                field: "when",
                ranges: date_ranges(),
                keyed: false,
                subs: vec![(
                    n("p"),
                    A::Percentiles {
                        field: "price",
                        keyed: true,
                    },
                )],
            },
        ),
        (
            n("aa"),
            A::Filter {
                carrier: "AA",
                subs: vec![
                    (n("avg"), metric("avg", "price")),
                    (
                        n("by_tag"),
                        terms("tags", None, vec![(n("n"), metric("value_count", "nums"))]),
                    ),
                ],
            },
        ),
        (
            n("buckets"),
            A::Filters {
                other: k.bounds,
                keyed: k.keyed,
                subs: vec![(n("sum"), metric("sum", "price"))],
            },
        ),
        (
            n("pct"),
            A::Percentiles {
                field: "nums",
                keyed: k.keyed,
            },
        ),
        (n("card_tags"), A::Cardinality { field: "tags" }),
        (n("card_price"), A::Cardinality { field: "price" }),
        (n("card_when"), A::Cardinality { field: "when" }),
        (n("unmapped"), metric("min", "nope")),
        (
            n("unmapped_terms"),
            terms("nope", Some(json!("n/a")), vec![]),
        ),
        (
            n("missing_price"),
            A::Metric {
                kind: "sum",
                field: "price",
                missing: Some(1.25),
            },
        ),
    ];
    for kind in ["min", "max", "avg", "sum", "value_count", "stats"] {
        for field in ["price", "nums", "when", "ok", "id"] {
            // The sum of many dates is past the years a date format writes.
            if field != "when" || !matches!(kind, "sum" | "stats") {
                out.push((format!("{kind}_{field}"), metric(kind, field)));
            }
        }
    }
    out.push((n("value_count_tags"), metric("value_count", "tags")));
    out.push((n("value_count_carrier"), metric("value_count", "carrier")));
    out
}

/// Where two JSON values first differ (a path, and both sides there), if they do.
fn first_diff(got: &Value, want: &Value, path: &str) -> Option<String> {
    match (got, want) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<&String> = a.keys().collect();
            let kb: Vec<&String> = b.keys().collect();
            let (mut sa, mut sb) = (ka.clone(), kb.clone());
            sa.sort();
            sb.sort();
            if sa != sb {
                return Some(format!("{path}: keys {ka:?} != {kb:?}"));
            }
            a.iter()
                .find_map(|(k, v)| first_diff(v, &b[k], &format!("{path}.{k}")))
        }
        (Value::Array(a), Value::Array(b)) => {
            if let Some(d) = a
                .iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_diff(x, y, &format!("{path}[{i}]")))
            {
                return Some(d);
            }
            (a.len() != b.len()).then(|| {
                format!(
                    "{path}: {} items != {} (extra: {})",
                    a.len(),
                    b.len(),
                    if a.len() > b.len() {
                        &a[b.len()]
                    } else {
                        &b[a.len()]
                    }
                )
            })
        }
        (a, b) => (a != b).then(|| format!("{path}: got {a} want {b}")),
    }
}

fn run_case(rows: &mut [Row], merge: bool, k: &Knobs) -> Result<(), TestCaseError> {
    for (i, r) in rows.iter_mut().enumerate() {
        r.id = i as i64;
    }
    let (tmp, live) = build(rows, merge);
    let index = Index::open(tmp.path()).unwrap();
    let s = index.searcher();
    let aggs = case_aggs(k);
    let request = Value::Object(aggs.iter().map(|(n, a)| (n.clone(), a.request())).collect());
    let parsed = s.parse_aggregations(&request).unwrap();
    let ctx = Ctx {
        all: rows,
        live: &live,
        merged: merge,
    };
    for (q, keep) in [
        ("*:*", (|_: &Row| true) as fn(&Row) -> bool),
        ("body:alpha", |r: &Row| r.id % 4 == 0),
    ] {
        let query = s.parse_query(q, &["body"]).unwrap();
        let got = s.aggregate(&query, &parsed).unwrap();
        let docs: Vec<&Row> = live.iter().filter(|r| keep(r)).collect();
        for (name, a) in &aggs {
            let want = a.model(&docs, &ctx);
            if let Some(diff) = first_diff(&got[name], &want, name) {
                prop_assert!(
                    false,
                    "aggregation {} of query {} (request {}): {}",
                    name,
                    q,
                    a.request(),
                    diff
                );
            }
        }
        prop_assert_eq!(got.as_object().unwrap().len(), aggs.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Every aggregation equals the model, over several segments with deletions or merged.
    #[test]
    fn aggregations_match_a_model(
        mut rows in prop::collection::vec(row_strategy(), 1..900),
        merge in any::<bool>(),
        k in knobs(),
    ) {
        run_case(&mut rows, merge, &k)?;
    }
}

/// A larger index (blocks of 1,024 rows, dense and sparse columns) with fixed knobs.
#[test]
fn a_larger_index_matches_the_model() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut rows = prop::collection::vec(row_strategy(), 5000)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    let k = knobs().new_tree(&mut runner).unwrap().current();
    run_case(&mut rows, false, &k).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Fixed examples: shapes as Elasticsearch documents them.

fn small_index() -> (tempfile::TempDir, Index) {
    let rows: Vec<Row> = (0..10)
        .map(|i| Row {
            id: i,
            price: (i != 9).then_some(i as f64 * 10.0),
            when: Some(BASE + i * DAY),
            carrier: Some(["AA", "DL", "AA", "UA", "AA"][i as usize % 5].to_string()),
            tags: vec!["x".into()],
            ok: Some(i % 3 == 0),
            nums: vec![i, i],
        })
        .collect();
    let (tmp, _) = build(&rows, false);
    let index = Index::open(tmp.path()).unwrap();
    (tmp, index)
}

fn run(index: &Index, aggs: Value) -> quarry::Result<Value> {
    let s = index.searcher();
    let parsed = s.parse_aggregations(&aggs)?;
    let all = s.parse_query("*:*", &["body"]).unwrap();
    s.aggregate(&all, &parsed)
}

#[test]
fn responses_have_elasticsearch_shapes() {
    let (_tmp, index) = small_index();
    // Rows 3 is deleted (id % 7 == 3): 9 live documents, ids 0-2 and 4-9.
    let got = run(
        &index,
        json!({
            "by_carrier": {"terms": {"field": "carrier", "size": 2}, "meta": {"note": "kept"}},
            "by_ok": {"terms": {"field": "ok"}},
            "price_stats": {"stats": {"field": "price"}},
            "no_price": {"filter": {"term": {"carrier": "none"}}, "aggs": {"m": {"min": {"field": "price"}}, "s": {"stats": {"field": "price"}}, "a": {"avg": {"field": "price"}}, "sum": {"sum": {"field": "price"}}}},
            "ranges": {"range": {"field": "price", "ranges": [{"to": 20}, {"from": 20, "to": 1e7}, {"from": 1e7}]}},
            "days": {"date_histogram": {"field": "when", "calendar_interval": "day", "min_doc_count": 0, "extended_bounds": {"min": "2019-11-30", "max": "2019-12-02"}}},
            "first_day": {"min": {"field": "when"}},
            "pct": {"percentiles": {"field": "price", "percents": [100, 50]}},
        }),
    )
    .unwrap();
    assert_eq!(
        got["by_carrier"],
        json!({"meta": {"note": "kept"}, "doc_count_error_upper_bound": 0, "sum_other_doc_count": 1,
               "buckets": [{"key": "AA", "doc_count": 6}, {"key": "DL", "doc_count": 2}]})
    );
    assert_eq!(
        got["by_ok"]["buckets"],
        json!([{"key": 0, "key_as_string": "false", "doc_count": 6}, {"key": 1, "key_as_string": "true", "doc_count": 3}])
    );
    assert_eq!(
        got["price_stats"],
        json!({"count": 8, "min": 0.0, "max": 80.0, "avg": 41.25, "sum": 330.0})
    );
    assert_eq!(
        got["no_price"],
        json!({"doc_count": 0, "m": {"value": null}, "s": {"count": 0, "min": null, "max": null, "avg": null, "sum": 0.0}, "a": {"value": null}, "sum": {"value": 0.0}})
    );
    assert_eq!(
        got["ranges"]["buckets"],
        json!([
            {"key": "*-20.0", "to": 20.0, "doc_count": 2},
            {"key": "20.0-1.0E7", "from": 20.0, "to": 1e7, "doc_count": 6},
            {"key": "1.0E7-*", "from": 1e7, "doc_count": 0},
        ])
    );
    let days = got["days"]["buckets"].as_array().unwrap();
    assert_eq!(days.len(), 11, "{days:?}");
    assert_eq!(
        days[0],
        json!({"key_as_string": "2019-11-30T00:00:00.000Z", "key": BASE - DAY, "doc_count": 0})
    );
    assert_eq!(
        days[1],
        json!({"key_as_string": "2019-12-01T00:00:00.000Z", "key": BASE, "doc_count": 1})
    );
    assert_eq!(days[4]["doc_count"], json!(0), "the deleted row's day");
    assert_eq!(
        got["first_day"],
        json!({"value": BASE as f64, "value_as_string": "2019-12-01T00:00:00.000Z"})
    );
    assert_eq!(got["pct"], json!({"values": {"50.0": 45.0, "100.0": 80.0}}));
}

#[test]
fn keyed_filters_and_anonymous_filters() {
    let (_tmp, index) = small_index();
    let got = run(
        &index,
        json!({
            "named": {"filters": {"filters": {"b": {"term": {"carrier": "DL"}}, "a": {"term": {"carrier": "AA"}}}, "other_bucket": true}},
            "list": {"filters": {"filters": [{"term": {"carrier": "DL"}}, {"match_all": {}}]}},
            "unkeyed": {"filters": {"keyed": false, "filters": {"b": {"term": {"carrier": "DL"}}, "a": {"term": {"carrier": "AA"}}}}},
        }),
    )
    .unwrap();
    assert_eq!(
        got["named"],
        json!({"buckets": {"a": {"doc_count": 6}, "b": {"doc_count": 2}, "_other_": {"doc_count": 1}}})
    );
    assert_eq!(
        got["list"],
        json!({"buckets": [{"doc_count": 2}, {"doc_count": 9}]})
    );
    assert_eq!(
        got["unkeyed"],
        json!({"buckets": [{"key": "a", "doc_count": 6}, {"key": "b", "doc_count": 2}]})
    );
}

#[test]
fn bad_requests_are_refused_with_the_aggregation_and_parameter() {
    let (_tmp, index) = small_index();
    for (aggs, words) in [
        (
            json!({"t": {"terms": {"field": "body"}}}),
            vec!["[t]", "body", "text field", "keyword"],
        ),
        (
            json!({"t": {"nonsense": {"field": "id"}}}),
            vec!["[t]", "unknown aggregation type [nonsense]"],
        ),
        (
            json!({"t": {"terms": {"field": "id", "size": -1}}}),
            vec!["[t]", "size"],
        ),
        (
            json!({"t": {"terms": {"field": "id", "size": 0}}}),
            vec!["[t]", "size"],
        ),
        (
            json!({"t": {"terms": {"field": "id", "sise": 3}}}),
            vec!["[t]", "unknown parameter [sise]"],
        ),
        (json!({"t": {"terms": {}}}), vec!["[t]", "field"]),
        (
            json!({"h": {"histogram": {"field": "price", "interval": 0}}}),
            vec!["[h]", "interval"],
        ),
        (
            json!({"h": {"histogram": {"field": "price"}}}),
            vec!["[h]", "interval"],
        ),
        (
            json!({"h": {"date_histogram": {"field": "when", "calendar_interval": "2d"}}}),
            vec!["[h]", "2d", "calendar"],
        ),
        (
            json!({"h": {"date_histogram": {"field": "when", "fixed_interval": "1M"}}}),
            vec!["[h]", "1M", "fixed"],
        ),
        (
            json!({"h": {"date_histogram": {"field": "when", "interval": "1d"}}}),
            vec!["[h]", "interval"],
        ),
        (
            json!({"h": {"date_histogram": {"field": "when", "calendar_interval": "day", "time_zone": "Mars/Base"}}}),
            vec!["[h]", "Mars/Base"],
        ),
        (
            json!({"m": {"avg": {"field": "carrier"}}}),
            vec!["[m]", "carrier", "keyword"],
        ),
        (
            json!({"m": {"avg": {"field": "price"}, "aggs": {"x": {"min": {"field": "price"}}}}}),
            vec!["[m]", "sub-aggregations"],
        ),
        (
            json!({"m": {"min": {"field": "price"}, "max": {"field": "price"}}}),
            vec!["[m]", "two aggregation types"],
        ),
        (
            json!({"r": {"range": {"field": "price"}}}),
            vec!["[r]", "ranges"],
        ),
        (
            json!({"r": {"range": {"field": "price", "ranges": [{"from": "x"}]}}}),
            vec!["[r]", "from"],
        ),
        (json!({"f": {"filter": {"nope": {}}}}), vec!["[f]", "nope"]),
        (
            json!({"p": {"percentiles": {"field": "price", "percents": [101]}}}),
            vec!["[p]", "percents"],
        ),
        (
            json!({"o": {"terms": {"field": "carrier", "order": {"avg_price": "desc"}}}}),
            vec!["[o]", "order"],
        ),
        (
            json!({"t": {"terms": {"field": "nums", "missing": "many"}}}),
            vec!["[t]", "missing"],
        ),
        (json!("not an object"), vec!["object"]),
        (json!({"a[0]": {"min": {"field": "price"}}}), vec!["a[0]"]),
        (
            json!({"outer": {"terms": {"field": "carrier"}, "aggs": {"inner": {"terms": {"field": "body"}}}}}),
            vec!["[inner]", "text field"],
        ),
    ] {
        let e = run(&index, aggs.clone()).unwrap_err();
        assert!(matches!(e, quarry::Error::Query(_)), "{aggs}: {e:?}");
        let msg = e.to_string();
        for w in words {
            assert!(msg.contains(w), "{aggs}: {msg:?} lacks {w:?}");
        }
    }
}

#[test]
fn too_many_buckets_are_refused() {
    let (_tmp, index) = small_index();
    let e = run(
        &index,
        json!({"h": {"histogram": {"field": "price", "interval": 0.001}}}),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("too many buckets"), "{e}");
    let e = run(
        &index,
        json!({"h": {"date_histogram": {"field": "when", "fixed_interval": "1s", "extended_bounds": {"min": "2000-01-01", "max": "2030-01-01"}}}}),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("too many buckets"), "{e}");
}

fn v7_sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/format-v7-sample"
    ))
}

/// Segments written before columns cannot be aggregated on a field; the error names the
/// segment and the remedy. Filters need no column and still run.
#[test]
fn segments_without_columns_are_refused_naming_the_remedy() {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(v7_sample()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let index = Index::open(tmp.path()).unwrap();
    let e = run(&index, json!({"m": {"max": {"field": "id"}}}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("force-merge") && e.contains("s000000"), "{e}");
    let got = run(&index, json!({"f": {"filter": {"match_all": {}}}})).unwrap();
    assert_eq!(got["f"]["doc_count"], json!(index.live_doc_count()));
}

/// A JSON value an aggregation parameter might be given, sensible or not.
fn param_value() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(vec![
            0i64,
            1,
            -1,
            3,
            i64::MAX,
            i64::MIN,
            86_400_000,
            1_575_158_400_000
        ])
        .prop_map(Value::from),
        prop::sample::select(vec![
            "1d",
            "month",
            "1M",
            "+6h",
            "-1d",
            "90m",
            "0s",
            "Europe/Paris",
            "+05:30",
            "abc",
            "",
            "2020-01-01",
            "now-1d/d",
            "carrier",
            "price",
            "when",
            "nums",
            "body",
            "_count",
            "asc",
            "desc",
            "yyyy",
            "epoch_second",
            "1e400",
        ])
        .prop_map(Value::from),
    ];
    prop_oneof![
        4 => scalar.clone(),
        1 => prop::collection::vec(scalar.clone(), 0..3).prop_map(Value::from),
        1 => prop::collection::vec(
            (prop::sample::select(vec!["from", "to", "key", "min", "max", "_key", "_count", "term", "x"]), scalar),
            0..3,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
    ]
}

fn request_strategy() -> impl Strategy<Value = Value> {
    // Valid bodies, then a few parameters replaced by anything.
    let bases = vec![
        ("terms", json!({"field": "carrier", "size": 3})),
        ("histogram", json!({"field": "price", "interval": 10})),
        (
            "date_histogram",
            json!({"field": "when", "calendar_interval": "month"}),
        ),
        (
            "date_histogram",
            json!({"field": "stamp", "fixed_interval": "1d", "time_zone": "Europe/Paris"}),
        ),
        (
            "range",
            json!({"field": "price", "ranges": [{"to": 10}, {"from": 10}]}),
        ),
        (
            "date_range",
            json!({"field": "when", "ranges": [{"to": "2019-12-05"}]}),
        ),
        ("min", json!({"field": "price"})),
        ("stats", json!({"field": "when"})),
        ("value_count", json!({"field": "tags"})),
        ("cardinality", json!({"field": "carrier"})),
        ("percentiles", json!({"field": "nums"})),
        ("filter", json!({"term": {"carrier": "AA"}})),
        (
            "filters",
            json!({"filters": {"a": {"term": {"carrier": "AA"}}}}),
        ),
    ];
    let params = vec![
        "field",
        "size",
        "order",
        "min_doc_count",
        "missing",
        "interval",
        "offset",
        "extended_bounds",
        "keyed",
        "calendar_interval",
        "fixed_interval",
        "time_zone",
        "format",
        "ranges",
        "precision_threshold",
        "percents",
        "filters",
        "other_bucket",
        "shard_size",
        "term",
    ];
    let fields = vec![
        "carrier", "tags", "price", "when", "stamp", "nums", "ok", "id", "nope", "body",
    ];
    (
        prop::sample::select(bases.clone()),
        prop::option::weighted(0.3, prop::sample::select(fields)),
        prop::collection::vec((prop::sample::select(params), param_value()), 0..3),
        prop::option::of(prop::sample::select(bases)),
    )
        .prop_map(|((typ, mut body), field, params, sub)| {
            if let (Some(f), Some(o)) = (field, body.as_object_mut()) {
                if o.contains_key("field") {
                    o.insert("field".into(), json!(f));
                }
            }
            if let Some(o) = body.as_object_mut() {
                for (k, v) in params {
                    o.insert(k.to_string(), v);
                }
            }
            let mut agg = Map::new();
            agg.insert(typ.to_string(), body);
            if let Some((t, b)) = sub {
                agg.insert("aggs".into(), json!({"sub": {t: b}}));
            }
            json!({ "a": agg })
        })
}

/// Whatever the request, an answer or a refusal naming what is wrong (`Error::Query`, or
/// `Error::UnknownField` for a filter on a field the schema lacks), never a panic.
#[test]
fn any_request_is_answered_or_refused() {
    let (_tmp, index) = small_index();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(400));
    runner
        .run(&request_strategy(), |req| {
            match run(&index, req.clone()) {
                Ok(v) => prop_assert!(v.get("a").is_some(), "{req}: {v}"),
                Err(e) => prop_assert!(
                    matches!(
                        e,
                        quarry::Error::Query(_) | quarry::Error::UnknownField { .. }
                    ),
                    "{req}: {e:?}"
                ),
            }
            Ok(())
        })
        .unwrap();
}

/// Dense dates in time order (whole column blocks of one day or month, counted from their
/// statistics) and dense numbers summed in bulk give the model's answers, over every document
/// and over a filter's (gathered by range).
#[test]
fn dense_time_ordered_columns_match_the_model() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut t = BASE;
    let rows: Vec<Row> = (0..6000)
        .map(|i| {
            // 0 to 80 minutes apart: some blocks within a day, some across midnight.
            t += (next() % 80) as i64 * 60_000;
            Row {
                id: i,
                price: Some((next() % 10_000) as f64 / 8.0 - 300.0),
                when: Some(t),
                carrier: None,
                tags: vec![],
                ok: Some(i % 3 == 0),
                nums: vec![(next() % 100) as i64 - 50],
            }
        })
        .collect();
    let (tmp, live) = build(&rows, true);
    let index = Index::open(tmp.path()).unwrap();
    let s = index.searcher();
    let utc = TimeZone::UTC;
    for (query, keep) in [("*:*", 0), ("alpha", 4)] {
        let docs: Vec<&Row> = live
            .iter()
            .filter(|r| keep == 0 || r.id % keep == 0)
            .collect();
        let q = s.parse_query(query, &["body"]).unwrap();
        let agg = |body: Value| {
            let parsed = s.parse_aggregations(&json!({ "a": body })).unwrap();
            s.aggregate(&q, &parsed).unwrap()["a"].clone()
        };
        type Round<'a> = Box<dyn Fn(i64) -> i64 + 'a>;
        let cases: [(&str, &str, Round); 5] = [
            (
                "calendar_interval",
                "day",
                Box::new(|v| date::round_down(v, Unit::Day, &utc).unwrap()),
            ),
            (
                "calendar_interval",
                "month",
                Box::new(|v| date::round_down(v, Unit::Month, &utc).unwrap()),
            ),
            (
                "calendar_interval",
                "week",
                Box::new(|v| date::round_down(v, Unit::Week, &utc).unwrap()),
            ),
            (
                "calendar_interval",
                "hour",
                Box::new(|v| v.div_euclid(3_600_000) * 3_600_000),
            ),
            (
                "fixed_interval",
                "90m",
                Box::new(|v| v.div_euclid(5_400_000) * 5_400_000),
            ),
        ];
        for (kind, interval, round) in &cases {
            let got = agg(
                json!({"date_histogram": {"field": "when", *kind: interval, "min_doc_count": 1}}),
            );
            let mut want: BTreeMap<i64, u64> = BTreeMap::new();
            for r in &docs {
                *want.entry(round(r.when.unwrap())).or_default() += 1;
            }
            let got: BTreeMap<i64, u64> = got["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b["key"].as_i64().unwrap(), b["doc_count"].as_u64().unwrap()))
                .collect();
            assert_eq!(got, want, "{query} {interval}");
        }
        let ids: Vec<f64> = docs.iter().map(|r| r.nums[0] as f64).collect();
        let got = agg(json!({"stats": {"field": "nums"}}));
        assert_eq!(got["count"], json!(ids.len() as u64), "{query}");
        assert_eq!(got["sum"].as_f64().unwrap(), kahan(&ids), "{query}");
        assert_eq!(got["min"].as_f64(), ids.iter().copied().reduce(f64::min));
        assert_eq!(got["max"].as_f64(), ids.iter().copied().reduce(f64::max));
        let prices: Vec<f64> = docs.iter().map(|r| r.price.unwrap()).collect();
        let got = agg(json!({"stats": {"field": "price"}}));
        assert_eq!(got["sum"].as_f64().unwrap(), kahan(&prices), "{query}");
        let whens: Vec<i64> = docs.iter().map(|r| r.when.unwrap()).collect();
        let exact: i128 = whens.iter().map(|&w| w as i128).sum();
        let got = agg(json!({"sum": {"field": "when"}}));
        assert_eq!(got["value"].as_f64().unwrap(), exact as f64, "{query}");
    }
}
