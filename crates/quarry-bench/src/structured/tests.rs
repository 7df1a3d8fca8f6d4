//! The oracle against hand-computed answers, the comparison's rules (what it accepts and what
//! it must reject), and the quarry and Tantivy drivers end to end on a small dataset against
//! the oracle.

use super::data::{epoch_ms, Dataset, Val, DAY_MS};
use super::driver::Engine;
use super::oracle;
use super::spec::{compare, Answer, FieldDef, Filter, Interval, Kind, Op, QuerySpec, Truth};

fn field(name: &str, kind: Kind, multi: bool) -> FieldDef {
    FieldDef {
        name: name.into(),
        kind,
        multi,
    }
}

/// Eight rows: values with ties, a missing value, multi-valued keywords, texts.
fn dataset() -> Dataset {
    let rows = [
        (Some(5), "2013-01-31", &["a"][..], "united airlines newark"),
        (Some(7), "2013-02-01", &["b", "c"][..], "delta air lines"),
        (None, "2013-02-01", &[][..], "united express"),
        (Some(5), "2013-02-28", &["a", "c"][..], "american airlines"),
        (Some(-3), "2013-03-01", &["c"][..], "jetblue airways"),
        (Some(7), "2013-03-15", &["b"][..], "united airlines kennedy"),
        (Some(0), "2013-12-31", &["a"][..], "southwest airlines"),
        (Some(9), "2014-01-01", &["d"][..], "delta's shuttle"),
    ];
    let date = |s: &str| {
        let p: Vec<i64> = s.split('-').map(|x| x.parse().unwrap()).collect();
        epoch_ms(p[0], p[1], p[2], 13, 30, 0, 0)
    };
    Dataset {
        name: "flights".into(),
        fields: vec![
            field("id", Kind::Long, false),
            field("delay", Kind::Long, false),
            field("when", Kind::Date, false),
            field("tags", Kind::Keyword, true),
            field("text", Kind::Text, false),
        ],
        rows: rows
            .iter()
            .enumerate()
            .map(|(i, (d, w, t, x))| {
                vec![
                    Val::Long(Some(i as i64)),
                    Val::Long(*d),
                    Val::Long(Some(date(w))),
                    Val::Keywords(t.iter().map(|s| s.to_string()).collect()),
                    Val::Text(x.to_string()),
                ]
            })
            .collect(),
    }
}

fn spec(name: &str, filters: Vec<Filter>, text: &[&str], op: Op) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        class: "test".into(),
        dataset: "flights".into(),
        filters,
        text: text.iter().map(|s| s.to_string()).collect(),
        op,
    }
}

fn range(field: &str, gte: Option<i64>, lte: Option<i64>) -> Filter {
    Filter::Range {
        field: field.into(),
        gte,
        lte,
    }
}

/// A sort; `after` is `(value, id, position of that hit)` (the position is the offset engines
/// without search_after page with).
fn sort(field: &str, desc: bool, after: Option<(i64, i64, usize)>) -> Op {
    Op::Sort {
        field: field.into(),
        desc,
        k: 3,
        after: after.map(|(v, id, _)| (v, id)),
        offset: after.map_or(0, |a| a.2),
    }
}

/// The queries the end-to-end tests run (one or more per op).
fn specs() -> Vec<QuerySpec> {
    let feb = range(
        "when",
        Some(epoch_ms(2013, 2, 1, 0, 0, 0, 0)),
        Some(epoch_ms(2013, 3, 1, 0, 0, 0, 0) - 1),
    );
    vec![
        spec(
            "count_range",
            vec![range("delay", Some(5), Some(7))],
            &[],
            Op::Count,
        ),
        spec(
            "count_open",
            vec![range("delay", None, Some(0))],
            &[],
            Op::Count,
        ),
        spec("count_date", vec![feb.clone()], &[], Op::Count),
        spec(
            "count_term",
            vec![Filter::Term {
                field: "tags".into(),
                value: "c".into(),
            }],
            &[],
            Op::Count,
        ),
        spec(
            "top_text",
            vec![range("delay", Some(0), None)],
            &["united"],
            Op::TopScore { k: 10 },
        ),
        spec("sort_desc", vec![], &[], sort("delay", true, None)),
        spec("sort_asc", vec![], &[], sort("delay", false, None)),
        spec(
            "sort_after",
            vec![],
            &[],
            sort("delay", true, Some((7, 1, 2))),
        ),
        spec(
            "sort_after_asc",
            vec![],
            &[],
            sort("delay", false, Some((5, 0, 3))),
        ),
        spec(
            "terms",
            vec![],
            &[],
            Op::Terms {
                field: "tags".into(),
                size: 2,
            },
        ),
        spec(
            "months",
            vec![],
            &[],
            Op::DateHistogram {
                field: "when".into(),
                interval: Interval::Month,
            },
        ),
        spec(
            "days",
            vec![feb],
            &[],
            Op::DateHistogram {
                field: "when".into(),
                interval: Interval::Day,
            },
        ),
        spec(
            "stats",
            vec![],
            &[],
            Op::Stats {
                field: "delay".into(),
            },
        ),
        spec(
            "card",
            vec![range("delay", Some(5), None)],
            &[],
            Op::Cardinality {
                field: "tags".into(),
            },
        ),
    ]
}

fn answer(name: &str) -> Answer {
    let ds = dataset();
    let s = specs().into_iter().find(|s| s.name == name).unwrap();
    oracle::answer(&ds, &s).unwrap()
}

fn ids(a: &Answer) -> Vec<i64> {
    match a {
        Answer::Hits { ids, .. } => ids.clone(),
        a => panic!("not hits: {a:?}"),
    }
}

#[test]
fn the_oracle_counts_sorts_and_groups_by_hand() {
    assert_eq!(answer("count_range"), Answer::Count { count: 4 });
    assert_eq!(answer("count_open"), Answer::Count { count: 2 });
    assert_eq!(answer("count_date"), Answer::Count { count: 3 });
    assert_eq!(answer("count_term"), Answer::Count { count: 3 });
    // "united" in rows 0, 2, 5; row 2 has no delay (fails delay >= 0).
    assert!(matches!(answer("top_text"), Answer::Hits { total: 2, .. }));
    // Desc: 9 (7), 7 (1), 7 (5), 5 (0), 5 (3), 0, -3, missing (2) last.
    assert_eq!(ids(&answer("sort_desc")), vec![7, 1, 5]);
    assert_eq!(ids(&answer("sort_asc")), vec![4, 6, 0]);
    assert_eq!(ids(&answer("sort_after")), vec![5, 0, 3]);
    assert_eq!(ids(&answer("sort_after_asc")), vec![3, 1, 5]);
    // The positions the specs page after, as the query set computes them.
    let ds = dataset();
    let all = spec("all", vec![], &[], sort("delay", true, None));
    assert_eq!(
        oracle::after_position(&ds, &all, "delay", true, 2).unwrap(),
        Some((7, 1))
    );
    assert_eq!(
        oracle::after_position(&ds, &all, "delay", false, 3).unwrap(),
        Some((5, 0))
    );
    // a: 0, 3, 6; c: 1, 3, 4; b: 1, 5; d: 7. Ties by key ascending.
    assert_eq!(
        answer("terms"),
        Answer::Buckets {
            buckets: vec![("a".into(), 3), ("c".into(), 3)]
        }
    );
    let month = |y, m| (epoch_ms(y, m, 1, 0, 0, 0, 0).to_string(), 0);
    let Answer::Buckets { buckets } = answer("months") else {
        panic!()
    };
    let keys: Vec<(String, u64)> = buckets.iter().map(|(k, _)| (k.clone(), 0)).collect();
    assert_eq!(
        keys,
        vec![
            month(2013, 1),
            month(2013, 2),
            month(2013, 3),
            month(2013, 12),
            month(2014, 1)
        ]
    );
    assert_eq!(
        buckets.iter().map(|b| b.1).collect::<Vec<_>>(),
        vec![1, 3, 2, 1, 1]
    );
    let Answer::Buckets { buckets } = answer("days") else {
        panic!()
    };
    assert_eq!(
        buckets,
        vec![
            ((epoch_ms(2013, 2, 1, 0, 0, 0, 0)).to_string(), 2),
            ((epoch_ms(2013, 2, 28, 0, 0, 0, 0)).to_string(), 1)
        ]
    );
    assert_eq!(
        epoch_ms(2013, 2, 2, 0, 0, 0, 0) - epoch_ms(2013, 2, 1, 0, 0, 0, 0),
        DAY_MS
    );
    assert_eq!(
        answer("stats"),
        Answer::Stats {
            count: 7,
            min: Some(-3),
            max: Some(9),
            sum: 30,
            avg: Some(30.0 / 7.0)
        }
    );
    // delay >= 5: rows 0 (a), 1 (b c), 3 (a c), 5 (b), 7 (d).
    assert_eq!(answer("card"), Answer::Cardinality { value: 4 });
}

fn truth<'a>(
    matches: &'a dyn Fn(i64) -> bool,
    counts: &'a dyn Fn(&str) -> u64,
    reference: Option<&'a Answer>,
) -> Truth<'a> {
    Truth {
        matches,
        key_count: counts,
        reference,
    }
}

#[test]
fn the_comparison_rejects_wrong_answers_and_accepts_ties() {
    let all = |_: i64| true;
    let none = |_: &str| 0;
    let t = truth(&all, &none, None);
    let count = spec("c", vec![], &[], Op::Count);
    assert!(compare(
        &count,
        &Answer::Count { count: 3 },
        &Answer::Count { count: 3 },
        &t
    )
    .is_ok());
    assert!(compare(
        &count,
        &Answer::Count { count: 4 },
        &Answer::Count { count: 3 },
        &t
    )
    .is_err());
    assert!(compare(
        &count,
        &Answer::Cardinality { value: 3 },
        &Answer::Count { count: 3 },
        &t
    )
    .is_err());

    let sorted = spec("s", vec![], &[], sort("delay", true, None));
    let hits = |total, ids: &[i64]| Answer::Hits {
        total,
        ids: ids.to_vec(),
        scores: vec![],
    };
    assert!(compare(&sorted, &hits(5, &[1, 2]), &hits(5, &[1, 2]), &t).is_ok());
    assert!(compare(&sorted, &hits(5, &[2, 1]), &hits(5, &[1, 2]), &t).is_err());
    assert!(compare(&sorted, &hits(4, &[1, 2]), &hits(5, &[1, 2]), &t).is_err());

    // BM25: ranked like the reference, tied scores as sets, the last tie group cut anywhere.
    let top = spec("t", vec![], &["x"], Op::TopScore { k: 3 });
    let oracle_hits = hits(10, &[]);
    let reference = Answer::Hits {
        total: 10,
        ids: vec![4, 8, 9],
        scores: vec![2.0, 1.0, 1.0],
    };
    let odd = |id: i64| id != 7;
    let t = truth(&odd, &none, Some(&reference));
    assert!(compare(&top, &hits(10, &[4, 9, 8]), &oracle_hits, &t).is_ok());
    assert!(compare(&top, &hits(10, &[4, 9, 6]), &oracle_hits, &t).is_ok());
    assert!(compare(&top, &hits(10, &[8, 4, 9]), &oracle_hits, &t).is_err());
    assert!(compare(&top, &hits(10, &[4, 9, 9]), &oracle_hits, &t).is_err());
    assert!(
        compare(&top, &hits(10, &[4, 9, 7]), &oracle_hits, &t).is_err(),
        "7 does not match"
    );
    assert!(
        compare(&top, &hits(10, &[4, 9]), &oracle_hits, &t).is_err(),
        "too few"
    );

    // Terms: equal counts in any order; a cut tie group needs the keys' true counts.
    let terms = spec(
        "k",
        vec![],
        &[],
        Op::Terms {
            field: "tags".into(),
            size: 2,
        },
    );
    let b = |v: &[(&str, u64)]| Answer::Buckets {
        buckets: v.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
    };
    let true_counts = |k: &str| match k {
        "a" | "c" | "e" => 3,
        "b" => 2,
        _ => 0,
    };
    let t = truth(&all, &true_counts, None);
    let want = b(&[("a", 3), ("c", 3)]);
    assert!(compare(&terms, &b(&[("c", 3), ("a", 3)]), &want, &t).is_ok());
    assert!(compare(&terms, &b(&[("a", 3), ("e", 3)]), &want, &t).is_ok());
    assert!(
        compare(&terms, &b(&[("a", 3), ("b", 3)]), &want, &t).is_err(),
        "b has 2"
    );
    assert!(compare(&terms, &b(&[("a", 3), ("b", 2)]), &want, &t).is_err());
    assert!(compare(&terms, &b(&[("a", 3)]), &want, &t).is_err());

    // Date histograms are ordered by key: exactly.
    let hist = spec(
        "h",
        vec![],
        &[],
        Op::DateHistogram {
            field: "when".into(),
            interval: Interval::Day,
        },
    );
    let want = b(&[("1", 2), ("2", 2)]);
    assert!(compare(&hist, &b(&[("2", 2), ("1", 2)]), &want, &t).is_err());

    let stats = spec(
        "st",
        vec![],
        &[],
        Op::Stats {
            field: "delay".into(),
        },
    );
    let st = |sum, avg| Answer::Stats {
        count: 3,
        min: Some(1),
        max: Some(5),
        sum,
        avg: Some(avg),
    };
    assert!(compare(&stats, &st(9, 3.0 * (1.0 + 1e-12)), &st(9, 3.0), &t).is_ok());
    assert!(compare(&stats, &st(9, 3.001), &st(9, 3.0), &t).is_err());
    assert!(compare(&stats, &st(8, 3.0), &st(9, 3.0), &t).is_err());
}

/// Every spec through an engine's driver code in this process, against the oracle; the specs
/// named in `unsupported` must be refused by `prepare` instead.
fn engine_matches_the_oracle<E: Engine>(unsupported: &[&str]) {
    let ds = dataset();
    let tmp = tempfile::tempdir().unwrap();
    let docs = ds.rows.iter().map(|r| ds.doc_json(r)).collect();
    E::index(tmp.path(), &ds.fields, docs).unwrap();
    let engine = E::open(tmp.path(), &ds.fields).unwrap();
    for s in specs() {
        if unsupported.contains(&s.name.as_str()) {
            assert!(
                engine.prepare(&s).is_err(),
                "{} {}: answered",
                E::NAME,
                s.name
            );
            continue;
        }
        let p = engine
            .prepare(&s)
            .unwrap_or_else(|e| panic!("{} {}: {e}", E::NAME, s.name));
        let out = engine.run(&p).unwrap();
        let got = engine.answer(&s, &p, out).unwrap();
        let want = oracle::answer(&ds, &s).unwrap();
        let m = oracle::Matcher::new(&ds, &s).unwrap();
        let counts = oracle::key_counts(&ds, &m.all(), "tags").unwrap();
        let t = Truth {
            matches: &|id| m.matches(id as usize),
            key_count: &|k| counts.get(k).copied().unwrap_or(0),
            reference: None,
        };
        if let Err(e) = compare(&s, &got, &want, &t) {
            panic!("{} {}: {e}", E::NAME, s.name);
        }
    }
}

#[cfg(feature = "quarry-driver")]
#[test]
fn quarry_matches_the_oracle() {
    engine_matches_the_oracle::<super::quarry_engine::QuarryEngine>(&[]);
}

#[test]
fn tantivy_matches_the_oracle() {
    engine_matches_the_oracle::<super::tantivy_engine::TantivyEngine>(&[]);
}

#[cfg(feature = "seekstorm-driver")]
#[test]
fn seekstorm_matches_the_oracle() {
    // SeekStorm computes no metric aggregation.
    engine_matches_the_oracle::<super::seekstorm_engine::SeekStormEngine>(&["stats"]);
}

#[test]
fn seekstorm_words_are_joined_by_hyphen_plus_and_hash() {
    assert_eq!(
        oracle::seekstorm_words("Oil-bearing crops, non-oil GDP; C++ and C# oil's -x oil-"),
        [
            "oil-bearing",
            "crops",
            "non-oil",
            "gdp",
            "c++",
            "and",
            "c#",
            "oil",
            "s",
            "x",
            "oil-"
        ]
    );
}
