//! Columns, ranges and sorting against a model: random documents with integer, float, date,
//! boolean and keyword fields (single- and multi-valued, some missing) indexed into several
//! segments with deletions, then merged; every sort (with `search_after` paging through all
//! hits) and every range must give exactly what a scan of the model gives, and `check` must
//! find the columns equal to the stored values.
use std::cmp::Ordering;

use proptest::prelude::*;
use quarry::{
    check_index, DirectoryKind, Document, Index, IndexWriter, MergePolicy, Schema, SortField,
    SortKey, SortValue, WriterOptions,
};
use serde_json::{json, Map, Value};

#[derive(Clone, Debug)]
struct Row {
    id: i64,
    price: Option<f64>,
    day: Option<i64>,
    carrier: Option<String>,
    tags: Vec<String>,
    ok: Option<bool>,
    nums: Vec<i64>,
}

fn schema() -> Schema {
    Schema::from_json(
        r#"{"fields":[
            {"name":"id","type":"integer"},
            {"name":"price","type":"float"},
            {"name":"day","type":"date"},
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
        prop::option::of(prop_oneof![Just(0.0f64), Just(-0.0), -100.0f64..100.0]),
        prop::option::of(0i64..40),
        prop::option::of(prop::sample::select(vec![
            "AA", "B6", "DL", "UA", "aa", "É",
        ])),
        prop::collection::vec(prop::sample::select(vec!["x", "y", "z", "x"]), 0..3),
        prop::option::of(any::<bool>()),
        prop::collection::vec(-5i64..5, 0..3),
    )
        .prop_map(|(price, day, carrier, tags, ok, nums)| Row {
            id: 0,
            price,
            day: day.map(|d| 1_577_836_800_000 + d * 86_400_000 + d * 1000),
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
    if let Some(d) = r.day {
        // Half as text, half as epoch milliseconds: both are the same date.
        let v = if r.id % 2 == 0 {
            json!(jiff::Timestamp::from_millisecond(d).unwrap().to_string())
        } else {
            json!(d)
        };
        m.insert("day".into(), v);
    }
    if let Some(c) = &r.carrier {
        m.insert("carrier".into(), json!(c));
    }
    if !r.tags.is_empty() || r.id % 3 == 0 {
        m.insert("tags".into(), json!(r.tags));
    }
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

/// Builds the index: rows added in three commits (so three segments or more), every seventh
/// deleted; with `merge`, force-merged to one segment.
fn build(rows: &[Row], merge: bool) -> (tempfile::TempDir, Vec<Row>) {
    let tmp = tempfile::tempdir().unwrap();
    let schema = schema();
    let opts = WriterOptions {
        threads: 1,
        ram_budget_bytes: 64 << 20,
        merge_policy: MergePolicy::None,
        directory: DirectoryKind::Mmap,
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

/// The model's sort value of a row for a field (smallest ascending, largest descending).
fn model_value(r: &Row, field: &str, desc: bool) -> Option<Value> {
    let pick = |v: &mut Vec<Value>| -> Option<Value> {
        v.sort_by(cmp_json);
        if desc {
            v.pop()
        } else {
            v.first().cloned()
        }
    };
    match field {
        "id" => Some(json!(r.id)),
        "price" => r.price.map(|p| json!(if p == 0.0 { 0.0 } else { p })),
        "day" => r.day.map(|d| json!(d)),
        "carrier" => r.carrier.clone().map(Value::from),
        "tags" => pick(&mut r.tags.iter().map(|t| json!(t)).collect()),
        "ok" => r.ok.map(Value::from),
        "nums" => pick(&mut r.nums.iter().map(|t| json!(t)).collect()),
        _ => unreachable!(),
    }
}

fn cmp_json(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (x, y) => x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap()),
    }
}

fn value_json(v: &SortValue) -> Option<Value> {
    match v {
        SortValue::Int(i) => Some(json!(i)),
        SortValue::Float(x) => Some(json!(x)),
        SortValue::Bool(b) => Some(json!(b)),
        SortValue::Str(s) => Some(json!(s)),
        SortValue::Missing => None,
        other => panic!("unexpected {other:?}"),
    }
}

/// The model's order of the live rows for `sort` (ties in insertion order).
fn model_order(rows: &[Row], sort: &[SortField]) -> Vec<i64> {
    let mut v: Vec<&Row> = rows.iter().collect();
    v.sort_by(|a, b| {
        for s in sort {
            let SortKey::Field(f) = &s.key else {
                unreachable!()
            };
            let (x, y) = (
                model_value(a, f, s.descending),
                model_value(b, f, s.descending),
            );
            let o = match (x, y) {
                (None, None) => Ordering::Equal,
                (None, _) => {
                    if s.missing_first {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                }
                (_, None) => {
                    if s.missing_first {
                        Ordering::Greater
                    } else {
                        Ordering::Less
                    }
                }
                (Some(x), Some(y)) => {
                    let o = cmp_json(&x, &y);
                    if s.descending {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    v.iter().map(|r| r.id).collect()
}

fn sort_strategy() -> impl Strategy<Value = Vec<SortField>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["price", "day", "carrier", "tags", "ok", "nums", "id"]),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(f, desc, mf)| SortField {
                key: SortKey::Field(f.into()),
                descending: desc,
                missing_first: mf,
            }),
        1..3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Sorted top-k and search_after pages equal the model's order.
    #[test]
    fn sorting_and_paging_match_a_model(
        mut rows in prop::collection::vec(row_strategy(), 1..2500),
        sorts in prop::collection::vec(sort_strategy(), 3),
        merge in any::<bool>(),
        page in 1usize..400,
    ) {
        for (i, r) in rows.iter_mut().enumerate() {
            r.id = i as i64;
        }
        let (tmp, live) = build(&rows, merge);
        let index = Index::open(tmp.path()).unwrap();
        let s = index.searcher();
        let all = s.parse_query("*:*", &["body"]).unwrap();
        for sort in &sorts {
            let want = model_order(&live, sort);
            // One page of everything.
            let r = s.search_sorted(&all, sort, want.len() + 5, None, false).unwrap();
            prop_assert_eq!(r.total_hits, live.len() as u64);
            let ids = |hits: &[quarry::SortedHit]| -> Vec<i64> {
                hits.iter().map(|h| s.stored_fields(h.hit.doc).unwrap()["id"].as_i64().unwrap()).collect()
            };
            prop_assert_eq!(&ids(&r.hits), &want, "sort {:?}", sort);
            for (h, id) in r.hits.iter().zip(&want) {
                let row = live.iter().find(|x| x.id == *id).unwrap();
                for (sf, v) in sort.iter().zip(&h.values) {
                    let SortKey::Field(f) = &sf.key else { unreachable!() };
                    prop_assert_eq!(value_json(v), model_value(row, f, sf.descending));
                }
            }
            // Paged with search_after over (sort..., _doc): the same order, no gaps or repeats.
            let mut paged_sort = sort.clone();
            paged_sort.push(SortField { key: SortKey::IndexOrder, descending: false, missing_first: false });
            let mut got = Vec::new();
            let mut after: Option<Vec<SortValue>> = None;
            loop {
                let r = s.search_sorted(&all, &paged_sort, page, after.as_deref(), false).unwrap();
                if r.hits.is_empty() {
                    break;
                }
                got.extend(ids(&r.hits));
                after = Some(r.hits.last().unwrap().values.clone());
            }
            prop_assert_eq!(&got, &want);
            // Top 10 with a query: the model filtered.
            let q = s.parse_query("alpha", &["body"]).unwrap();
            let r = s.search_sorted(&q, sort, 10, None, true).unwrap();
            let want_q: Vec<i64> = want.iter().copied().filter(|id| id % 4 == 0).take(10).collect();
            prop_assert_eq!(ids(&r.hits), want_q);
            prop_assert!(r.hits.iter().all(|h| h.hit.score > 0.0));
        }
        check_index(tmp.path(), DirectoryKind::Pread).unwrap();
    }
}

#[test]
fn sorting_by_a_text_field_or_an_unknown_field_is_refused() {
    let rows = vec![Row {
        id: 1,
        price: None,
        day: None,
        carrier: None,
        tags: vec![],
        ok: None,
        nums: vec![],
    }];
    let (tmp, _) = build(&rows, false);
    let index = Index::open(tmp.path()).unwrap();
    let s = index.searcher();
    let all = s.parse_query("*:*", &["body"]).unwrap();
    let e = s
        .search_sorted(&all, &[SortField::asc("body")], 10, None, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("body") && e.contains("keyword"), "{e}");
    let e = s
        .search_sorted(&all, &[SortField::asc("nope")], 10, None, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope"), "{e}");
    let e = s
        .search_sorted(
            &all,
            &[SortField::asc("id")],
            10,
            Some(&[SortValue::Str("x".into())]),
            false,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("search_after"), "{e}");
}
