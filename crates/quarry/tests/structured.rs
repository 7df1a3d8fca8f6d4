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
            prop_assert_eq!(ids(&r.hits), want_q.clone());
            prop_assert!(r.hits.iter().all(|h| h.hit.score > 0.0));
            // Without scores (the points' best documents first, then only those that can
            // still compete), top 10 and pages after pages.
            let r = s.search_sorted(&q, sort, 10, None, false).unwrap();
            prop_assert_eq!(ids(&r.hits), want_q);
            let all_q: Vec<i64> = want.iter().copied().filter(|id| id % 4 == 0).collect();
            prop_assert_eq!(r.total_hits, all_q.len() as u64);
            let mut got = Vec::new();
            let mut after: Option<Vec<SortValue>> = None;
            loop {
                let r = s.search_sorted(&q, &paged_sort, page.min(40), after.as_deref(), false).unwrap();
                if r.hits.is_empty() {
                    break;
                }
                prop_assert_eq!(r.total_hits, all_q.len() as u64);
                got.extend(ids(&r.hits));
                after = Some(r.hits.last().unwrap().values.clone());
            }
            prop_assert_eq!(&got, &all_q);
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

/// The model's answer to a range on `field`: rows with a value within the bounds.
fn model_range(
    rows: &[Row],
    field: &str,
    lo: Option<(f64, bool)>,
    hi: Option<(f64, bool)>,
) -> Vec<i64> {
    let ok = |x: f64| {
        lo.is_none_or(|(l, i)| if i { x >= l } else { x > l })
            && hi.is_none_or(|(h, i)| if i { x <= h } else { x < h })
    };
    let mut ids: Vec<i64> = rows
        .iter()
        .filter(|r| match field {
            "id" => ok(r.id as f64),
            "price" => r.price.is_some_and(ok),
            "day" => r.day.is_some_and(|d| ok(d as f64)),
            "nums" => r.nums.iter().any(|&n| ok(n as f64)),
            _ => unreachable!(),
        })
        .map(|r| r.id)
        .collect();
    ids.sort();
    ids
}

fn range_ids(s: &quarry::Searcher, q: &quarry::query::Query) -> Vec<i64> {
    let sort = [SortField::asc("id")];
    let r = s.search_sorted(q, &sort, 100_000, None, false).unwrap();
    let n = s
        .search(q, 10, quarry::SearchMode::Count)
        .unwrap()
        .total_hits;
    assert_eq!(n, r.total_hits, "{q}");
    r.hits
        .iter()
        .map(|h| s.stored_fields(h.hit.doc).unwrap()["id"].as_i64().unwrap())
        .collect()
}

/// `[lo TO hi]` with the brackets the flags ask for.
fn bracketed(
    field: &str,
    lo: impl std::fmt::Display,
    hi: impl std::fmt::Display,
    il: bool,
    iu: bool,
) -> String {
    format!(
        "{field}:{}{lo} TO {hi}{}",
        if il { '[' } else { '{' },
        if iu { ']' } else { '}' }
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    /// Ranges on integer, float, date and multi-valued fields, through the query syntax, equal
    /// a scan of the model; so do keyword ranges and one-sided forms.
    #[test]
    fn ranges_match_a_model(
        mut rows in prop::collection::vec(row_strategy(), 1..2500),
        merge in any::<bool>(),
        bounds in prop::collection::vec((-120.0f64..120.0, 0.0f64..80.0, any::<bool>(), any::<bool>()), 6),
    ) {
        for (i, r) in rows.iter_mut().enumerate() {
            r.id = i as i64;
        }
        let (tmp, live) = build(&rows, merge);
        let index = Index::open(tmp.path()).unwrap();
        let s = index.searcher();
        let day = |d: i64| {
            jiff::civil::date(2020, 1, 1)
                .checked_add(jiff::Span::new().days(d))
                .unwrap()
                .to_string()
        };
        let ms = |d: i64| 1_577_836_800_000i64 + d * 86_400_000;
        for (lo, width, il, iu) in bounds {
            let hi = lo + width;
            // Floats.
            let q = s.parse_query(&bracketed("price", lo, hi, il, iu), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "price", Some((lo, il)), Some((hi, iu))), "{}", q);
            // Integers: fractional bounds round inward.
            let (li, hi_i) = (lo * 10.0, hi * 10.0);
            let q = s.parse_query(&bracketed("id", li, hi_i, il, iu), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "id", Some((li, il)), Some((hi_i, iu))), "{}", q);
            // Multi-valued integers, one-sided.
            let k = (lo / 20.0).round() as i64;
            let q = s.parse_query(&format!("nums:>={k}"), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "nums", Some((k as f64, true)), None));
            let q = s.parse_query(&format!("nums:<{k}"), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "nums", None, Some((k as f64, false))));
            // Dates: whole days (rounded down for `[`, up for `]`; `{` excludes the whole day).
            let d0 = (lo.abs() as i64) % 40;
            let d1 = d0 + (width as i64) % 10;
            let q = s.parse_query(&bracketed("day", day(d0), day(d1), true, true), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "day", Some((ms(d0) as f64, true)), Some(((ms(d1 + 1) - 1) as f64, true))), "{}", q);
            let q = s.parse_query(&bracketed("day", day(d0), day(d1), false, false), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "day", Some(((ms(d0 + 1) - 1) as f64, false)), Some((ms(d1) as f64, false))), "{}", q);
            // A date term is that whole day.
            let q = s.parse_query(&format!("day:{}", day(d0)), &["body"]).unwrap();
            prop_assert_eq!(range_ids(&s, &q), model_range(&live, "day", Some((ms(d0) as f64, true)), Some((ms(d0 + 1) as f64, false))));
        }
        // Keywords compare bytes; a range inside a boolean with text.
        let q = s.parse_query("carrier:[B6 TO UA} AND body:alpha", &["body"]).unwrap();
        let mut want: Vec<i64> = live
            .iter()
            .filter(|r| r.carrier.as_deref().is_some_and(|c| ("B6"..="UA").contains(&c) && c != "UA") && r.id % 4 == 0)
            .map(|r| r.id)
            .collect();
        want.sort();
        prop_assert_eq!(range_ids(&s, &q), want);
        let q = s.parse_query("tags:{x TO *]", &["body"]).unwrap();
        let mut want: Vec<i64> = live.iter().filter(|r| r.tags.iter().any(|t| t.as_str() > "x")).map(|r| r.id).collect();
        want.sort();
        prop_assert_eq!(range_ids(&s, &q), want);
    }
}

#[test]
fn range_scores_are_constant_and_bad_bounds_name_the_field_and_bound() {
    let rows: Vec<Row> = (0..50)
        .map(|i| Row {
            id: i,
            price: Some(i as f64),
            day: None,
            carrier: None,
            tags: vec![],
            ok: Some(i % 2 == 0),
            nums: vec![],
        })
        .collect();
    let (tmp, _) = build(&rows, false);
    let index = Index::open(tmp.path()).unwrap();
    let s = index.searcher();
    let q = s.parse_query("price:[10 TO 20]^2", &["body"]).unwrap();
    let r = s.search(&q, 100, quarry::SearchMode::TopCount).unwrap();
    assert!(r.top.iter().all(|h| h.score == 2.0), "{:?}", r.top);
    let q = s.parse_query("ok:[true TO true]", &["body"]).unwrap();
    // Ids 0..50 with every seventh (id % 7 == 3) deleted: the even ones left.
    let want = (0..50).filter(|i| i % 2 == 0 && i % 7 != 3).count() as u64;
    assert_eq!(
        s.search(&q, 0, quarry::SearchMode::Count)
            .unwrap()
            .total_hits,
        want
    );
    for (text, want) in [
        ("price:[cheap TO 3]", "cheap"),
        ("day:[2020-13-45 TO *]", "2020-13-45"),
        ("ok:[maybe TO *]", "maybe"),
    ] {
        let q = s.parse_query(text, &["body"]).unwrap();
        let e = s.search(&q, 10, quarry::SearchMode::Top).unwrap_err();
        assert!(e.is_client_error(), "{e}");
        assert!(e.to_string().contains(want), "{e}");
    }
    // Empty and reversed ranges match nothing.
    for text in ["price:[5 TO 3]", "id:{1 TO 2}", "price:{1 TO 1}"] {
        let q = s.parse_query(text, &["body"]).unwrap();
        assert_eq!(
            s.search(&q, 0, quarry::SearchMode::Count)
                .unwrap()
                .total_hits,
            0,
            "{text}"
        );
    }
}
