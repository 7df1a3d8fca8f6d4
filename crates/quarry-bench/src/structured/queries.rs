//! Which queries the structured benchmark runs: several per class on the flights and on
//! Reuters, written once as [`QuerySpec`]s that every engine translates to its own API.

use anyhow::Result;

use super::data::{epoch_ms, Dataset};
use super::oracle::after_position;
use super::spec::{Filter, Interval, Op, QuerySpec};

/// The classes, in report order.
pub const CLASSES: [&str; 8] = [
    "range_count",
    "range_text_top10",
    "sort_top10",
    "sort_deep",
    "terms_agg",
    "date_histogram",
    "stats",
    "cardinality",
];

fn range(field: &str, gte: Option<i64>, lte: Option<i64>) -> Filter {
    Filter::Range {
        field: field.into(),
        gte,
        lte,
    }
}

fn term(field: &str, value: &str) -> Filter {
    Filter::Term {
        field: field.into(),
        value: value.into(),
    }
}

/// `[start of (y, m, 1), start of the next month)` as an inclusive millisecond range.
fn month(y: i64, m: i64) -> Filter {
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    range(
        "sched",
        Some(epoch_ms(y, m, 1, 0, 0, 0, 0)),
        Some(epoch_ms(ny, nm, 1, 0, 0, 0, 0) - 1),
    )
}

fn q(name: &str, class: &str, dataset: &str, filters: Vec<Filter>, op: Op) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        class: class.into(),
        dataset: dataset.into(),
        filters,
        text: vec![],
        op,
    }
}

fn text(mut spec: QuerySpec, words: &[&str]) -> QuerySpec {
    spec.text = words.iter().map(|w| w.to_string()).collect();
    spec
}

fn sort(field: &str, desc: bool) -> Op {
    Op::Sort {
        field: field.into(),
        desc,
        k: 10,
        after: None,
        offset: 0,
    }
}

/// A deep page: the 10 hits after the `depth`-th of the sort (its `(value, id)` from the
/// oracle, as a client paging with search_after would have it).
fn deep(
    ds: &Dataset,
    name: &str,
    filters: Vec<Filter>,
    field: &str,
    desc: bool,
    depth: usize,
) -> Result<QuerySpec> {
    let mut spec = q(name, "sort_deep", &ds.name, filters, sort(field, desc));
    let after = after_position(ds, &spec, field, desc, depth)?;
    spec.op = Op::Sort {
        field: field.into(),
        desc,
        k: 10,
        after,
        offset: if after.is_some() { depth } else { 0 },
    };
    Ok(spec)
}

fn terms(field: &str, size: usize) -> Op {
    Op::Terms {
        field: field.into(),
        size,
    }
}

/// Every query, flights first. `depth` is how far `sort_deep` pages (10,000 on the full data).
pub fn query_set(flights: &Dataset, reuters: &Dataset, depth: usize) -> Result<Vec<QuerySpec>> {
    let f = "flights";
    let r = "reuters";
    let reuters_march = range(
        "date",
        Some(epoch_ms(1987, 3, 1, 0, 0, 0, 0)),
        Some(epoch_ms(1987, 4, 1, 0, 0, 0, 0) - 1),
    );
    let stat = |field: &str| Op::Stats {
        field: field.into(),
    };
    let card = |field: &str| Op::Cardinality {
        field: field.into(),
    };
    let hist = |field: &str, interval| Op::DateHistogram {
        field: field.into(),
        interval,
    };
    let top = Op::TopScore { k: 10 };
    Ok(vec![
        // range_count
        q(
            "f_dep_delay_60_120",
            "range_count",
            f,
            vec![range("dep_delay", Some(60), Some(120))],
            Op::Count,
        ),
        q(
            "f_distance_gt_2000",
            "range_count",
            f,
            vec![range("distance", Some(2001), None)],
            Op::Count,
        ),
        q(
            "f_sched_march",
            "range_count",
            f,
            vec![month(2013, 3)],
            Op::Count,
        ),
        q(
            "f_arr_early_jfk",
            "range_count",
            f,
            vec![range("arr_delay", None, Some(-30)), term("origin", "JFK")],
            Op::Count,
        ),
        q(
            "r_date_march",
            "range_count",
            r,
            vec![reuters_march.clone()],
            Op::Count,
        ),
        // range_text_top10
        text(
            q(
                "f_united_late",
                "range_text_top10",
                f,
                vec![range("dep_delay", Some(120), None)],
                top.clone(),
            ),
            &["united"],
        ),
        text(
            q(
                "f_kennedy_long",
                "range_text_top10",
                f,
                vec![range("distance", Some(2000), None)],
                top.clone(),
            ),
            &["kennedy", "angeles"],
        ),
        text(
            q(
                "f_delta_july",
                "range_text_top10",
                f,
                vec![month(2013, 7)],
                top.clone(),
            ),
            &["delta", "atlanta"],
        ),
        text(
            q(
                "r_oil_march",
                "range_text_top10",
                r,
                vec![reuters_march.clone()],
                top.clone(),
            ),
            &["oil"],
        ),
        text(
            q(
                "r_wheat_corn_april",
                "range_text_top10",
                r,
                vec![range(
                    "date",
                    Some(epoch_ms(1987, 4, 1, 0, 0, 0, 0)),
                    Some(epoch_ms(1987, 4, 30, 23, 59, 59, 999)),
                )],
                top.clone(),
            ),
            &["wheat", "corn", "grain"],
        ),
        // sort_top10
        q(
            "f_arr_delay_desc",
            "sort_top10",
            f,
            vec![],
            sort("arr_delay", true),
        ),
        q(
            "f_jfk_distance_asc",
            "sort_top10",
            f,
            vec![term("origin", "JFK")],
            sort("distance", false),
        ),
        q(
            "f_december_dep_delay_desc",
            "sort_top10",
            f,
            vec![month(2013, 12)],
            sort("dep_delay", true),
        ),
        q("r_date_desc", "sort_top10", r, vec![], sort("date", true)),
        // sort_deep
        deep(
            flights,
            "f_arr_delay_desc_deep",
            vec![],
            "arr_delay",
            true,
            depth,
        )?,
        deep(flights, "f_sched_asc_deep", vec![], "sched", false, depth)?,
        deep(
            flights,
            "f_ua_distance_desc_deep",
            vec![term("carrier", "UA")],
            "distance",
            true,
            depth,
        )?,
        deep(
            reuters,
            "r_date_asc_deep",
            vec![],
            "date",
            false,
            depth.min(reuters.rows.len() / 2),
        )?,
        // terms_agg
        q("f_carrier", "terms_agg", f, vec![], terms("carrier", 10)),
        q("f_dest", "terms_agg", f, vec![], terms("dest", 10)),
        q(
            "f_origin_late",
            "terms_agg",
            f,
            vec![range("dep_delay", Some(60), None)],
            terms("origin", 10),
        ),
        q("f_tailnum", "terms_agg", f, vec![], terms("tailnum", 10)),
        q("r_topics", "terms_agg", r, vec![], terms("topics", 10)),
        q(
            "r_places_march",
            "terms_agg",
            r,
            vec![reuters_march.clone()],
            terms("places", 10),
        ),
        // date_histogram
        q(
            "f_per_month",
            "date_histogram",
            f,
            vec![],
            hist("sched", Interval::Month),
        ),
        q(
            "f_per_day",
            "date_histogram",
            f,
            vec![],
            hist("sched", Interval::Day),
        ),
        q(
            "f_ua_per_day",
            "date_histogram",
            f,
            vec![term("carrier", "UA")],
            hist("sched", Interval::Day),
        ),
        q(
            "r_per_day",
            "date_histogram",
            r,
            vec![],
            hist("date", Interval::Day),
        ),
        // stats
        q("f_arr_delay_stats", "stats", f, vec![], stat("arr_delay")),
        q("f_distance_stats", "stats", f, vec![], stat("distance")),
        q(
            "f_jfk_dep_delay_stats",
            "stats",
            f,
            vec![term("origin", "JFK")],
            stat("dep_delay"),
        ),
        q(
            "f_summer_air_time_stats",
            "stats",
            f,
            vec![range(
                "sched",
                Some(epoch_ms(2013, 6, 1, 0, 0, 0, 0)),
                Some(epoch_ms(2013, 9, 1, 0, 0, 0, 0) - 1),
            )],
            stat("air_time"),
        ),
        // cardinality
        q("f_tailnum_card", "cardinality", f, vec![], card("tailnum")),
        q("f_dest_card", "cardinality", f, vec![], card("dest")),
        q(
            "f_aa_tailnum_card",
            "cardinality",
            f,
            vec![term("carrier", "AA")],
            card("tailnum"),
        ),
        q("r_topics_card", "cardinality", r, vec![], card("topics")),
        q("r_places_card", "cardinality", r, vec![], card("places")),
    ])
}
