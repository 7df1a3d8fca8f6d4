//! What does an index sort buy a sorted top-k, and what does it cost at indexing? Indexes the
//! same synthetic documents (a random integer `ts`, a keyword `cat` of 16 values, a few words of
//! `body`) twice, without and with the index sort `ts:desc`, then times `search_sorted` by
//! `ts` descending, top 10, on both (median of the runs, warm, one thread): every document, a
//! term query, and a page deep into the order with `search_after`. Checks that both indexes
//! give the same hits.
//!
//!     cargo run --release -p quarry --example index_sort -- 300000 50
use std::time::{Duration, Instant};

use quarry::query::Query;
use quarry::{
    Document, FieldValue, Index, IndexSort, IndexWriter, Schema, SortField, SortValue,
    WriterOptions,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn build(path: &std::path::Path, docs: usize, sort: Option<IndexSort>) -> Duration {
    let schema = Schema::builder()
        .integer("ts")
        .keyword("cat")
        .text("body", false)
        .build();
    let opts = WriterOptions {
        threads: 2,
        ram_budget_bytes: 256 << 20,
        index_sort: sort,
        ..WriterOptions::default()
    };
    let words = [
        "oil", "gas", "wheat", "corn", "gold", "ship", "bank", "rate",
    ];
    let t = Instant::now();
    let mut w = IndexWriter::create(path, schema.clone(), opts).expect("create");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..docs {
        let mut d = Document::new();
        let ts = (rng.next() % 1_000_000_000) as i64;
        d.add(&schema, "ts", FieldValue::Int(ts)).expect("ts");
        let cat = format!("c{}", rng.next() % 16);
        d.add(&schema, "cat", FieldValue::Str(cat)).expect("cat");
        let body: Vec<&str> = (0..4)
            .map(|_| words[(rng.next() % words.len() as u64) as usize])
            .collect();
        d.add(&schema, "body", FieldValue::Str(body.join(" ")))
            .expect("body");
        w.add_document(d).expect("add");
    }
    w.commit().expect("commit");
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let docs: usize = args.first().map_or(300_000, |a| a.parse().expect("docs"));
    let runs: usize = args.get(1).map_or(50, |a| a.parse().expect("runs"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let (plain, sorted) = (tmp.path().join("plain"), tmp.path().join("sorted"));
    let t_plain = build(&plain, docs, None);
    let sort = IndexSort::parse(&["ts:desc"]).expect("sort");
    let t_sorted = build(&sorted, docs, Some(sort));
    println!(
        "{docs} docs: indexing {:.2} s without, {:.2} s with index sort ts:desc",
        t_plain.as_secs_f64(),
        t_sorted.as_secs_f64()
    );
    // Opening reads every segment meta: a sorted segment's `seq_runs` has about one run per
    // document, so its meta is larger.
    let open = |p: &std::path::Path| {
        let t = Instant::now();
        let i = Index::open(p).expect("open");
        (i, t.elapsed())
    };
    let ((a, oa), (b, ob)) = (open(&plain), open(&sorted));
    let meta_bytes = |p: &std::path::Path| -> u64 {
        std::fs::read_dir(p)
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "meta"))
            .map(|e| e.metadata().expect("metadata").len())
            .sum()
    };
    println!(
        "segments: {} without, {} with; segment metas {} B without, {} B with; first open {:.2} ms without, {:.2} ms with",
        a.segments().len(),
        b.segments().len(),
        meta_bytes(&plain),
        meta_bytes(&sorted),
        oa.as_secs_f64() * 1e3,
        ob.as_secs_f64() * 1e3
    );
    let (sa, sb) = (a.searcher(), b.searcher());
    let by_ts = [SortField::desc("ts")];
    // A page after the 20,000th document.
    let after: Vec<SortValue> = sa
        .search_sorted(&Query::MatchAll, &by_ts, 20_000, None, false)
        .expect("search")
        .hits
        .last()
        .expect("hit")
        .values
        .clone();
    let cases: Vec<(&str, Query, Option<Vec<SortValue>>)> = vec![
        ("match_all", Query::MatchAll, None),
        (
            "body:oil",
            Query::Term {
                field: "body".into(),
                term: "oil".into(),
            },
            None,
        ),
        ("match_all after 20000", Query::MatchAll, Some(after)),
    ];
    for (name, q, after) in &cases {
        let time = |s: &quarry::Searcher| {
            let mut v = Vec::with_capacity(runs);
            let mut last = None;
            for _ in 0..runs {
                let t = Instant::now();
                let r = s
                    .search_sorted(q, &by_ts, 10, after.as_deref(), false)
                    .expect("search");
                v.push(t.elapsed());
                last = Some(r);
            }
            (median(v), last.expect("a run"))
        };
        let (ta, ra) = time(&sa);
        let (tb, rb) = time(&sb);
        let key = |r: &quarry::SortedResult| {
            (
                r.total_hits,
                r.hits
                    .iter()
                    .map(|h| (h.hit.seq, h.values.clone()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(key(&ra), key(&rb), "{name}: the indexes disagree");
        println!(
            "sorted top-10 by ts desc, {name} ({} hits): {:.3} ms without, {:.3} ms with index sort ({:.1}x)",
            ra.total_hits,
            ta.as_secs_f64() * 1e3,
            tb.as_secs_f64() * 1e3,
            ta.as_secs_f64() / tb.as_secs_f64()
        );
    }
}
