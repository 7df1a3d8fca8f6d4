//! Pruned top-k (block-max MaxScore, block-max conjunctions) returns exactly what exhaustive
//! scoring returns, and both agree with a brute-force BM25 model, on random indexes and queries.
use std::collections::HashMap;

use proptest::prelude::*;
use quarry::codec::norms::length_to_norm;
use quarry::search::bm25::FieldStats;
use quarry::{
    Bm25, Document, FieldValue, Index, IndexWriter, MergePolicy, Schema, SearchMode, WriterOptions,
};

/// Words 1–5 are frequent words ([`quarry::pairs::WORDS`]): phrases of them read pairs.
const VOCAB: [&str; 12] = [
    "oil", "the", "of", "to", "be", "who", "yen", "gold", "corn", "ship", "steel", "wheat",
];

/// Random documents: word indexes with a skewed distribution so some terms span many blocks.
fn docs_strategy() -> impl Strategy<Value = Vec<Vec<usize>>> {
    let word = prop_oneof![4 => 0usize..3, 2 => 3usize..7, 1 => 7usize..12];
    proptest::collection::vec(proptest::collection::vec(word, 0..30), 150..900)
}

#[derive(Debug, Clone)]
enum Q {
    Or(Vec<usize>),
    And(Vec<usize>),
    Mixed(usize, usize, usize),
    /// `+a +b ... -c -d ...` (counted from doc ids alone in `Count` mode).
    Excl(Vec<usize>, Vec<usize>),
    /// `+a +b ... c d ...`: required terms plus optional ones (none of them required), whose
    /// top-k pruning makes the optional clause required where the required ones cannot compete.
    ReqOpt(Vec<usize>, Vec<usize>),
    /// `"a b a"`: an exact phrase, words possibly repeated.
    Phrase(Vec<usize>),
    /// `+"a b" +c`: a phrase (usually of common words, which its leapfrog leaves to the
    /// positions check) required next to a rarer term that leads the conjunction.
    PhraseAnd(Vec<usize>, usize),
}

fn query_strategy() -> impl Strategy<Value = Q> {
    prop_oneof![
        proptest::collection::vec(prop_oneof![3 => 0usize..3, 1 => 3usize..8], 2..5)
            .prop_map(Q::Phrase),
        (
            proptest::collection::vec(prop_oneof![3 => 0usize..3, 1 => 3usize..8], 2..4),
            7usize..12
        )
            .prop_map(|(p, c)| Q::PhraseAnd(p, c)),
        proptest::collection::vec(0usize..12, 1..6).prop_map(Q::Or),
        proptest::collection::vec(0usize..12, 2..4).prop_map(Q::And),
        (0usize..12, 0usize..12, 0usize..12).prop_map(|(a, b, c)| Q::Mixed(a, b, c)),
        (
            proptest::collection::vec(0usize..12, 1..3),
            proptest::collection::vec(0usize..12, 1..5)
        )
            .prop_map(|(r, e)| Q::Excl(r, e)),
        (
            proptest::collection::vec(0usize..12, 1..3),
            proptest::collection::vec(0usize..12, 1..4)
        )
            .prop_map(|(r, o)| {
                let o = o.into_iter().filter(|w| !r.contains(w)).collect::<Vec<_>>();
                if o.is_empty() {
                    Q::And(r)
                } else {
                    Q::ReqOpt(r, o)
                }
            }),
    ]
}

fn text(q: &Q) -> String {
    match q {
        Q::Or(ws) => ws
            .iter()
            .map(|&w| VOCAB[w])
            .collect::<Vec<_>>()
            .join(" OR "),
        Q::And(ws) => ws
            .iter()
            .map(|&w| VOCAB[w])
            .collect::<Vec<_>>()
            .join(" AND "),
        Q::Mixed(a, b, c) => format!("+{} {} -{}", VOCAB[*a], VOCAB[*b], VOCAB[*c]),
        Q::Excl(r, e) => r
            .iter()
            .map(|&w| format!("+{}", VOCAB[w]))
            .chain(e.iter().map(|&w| format!("-{}", VOCAB[w])))
            .collect::<Vec<_>>()
            .join(" "),
        Q::ReqOpt(r, o) => r
            .iter()
            .map(|&w| format!("+{}", VOCAB[w]))
            .chain(o.iter().map(|&w| VOCAB[w].to_string()))
            .collect::<Vec<_>>()
            .join(" "),
        Q::Phrase(ws) => format!(
            "\"{}\"",
            ws.iter().map(|&w| VOCAB[w]).collect::<Vec<_>>().join(" ")
        ),
        Q::PhraseAnd(ws, c) => format!("+{} +{}", text(&Q::Phrase(ws.clone())), VOCAB[*c]),
    }
}

/// Brute-force BM25 exactly as Lucene defines it (f64 sums of f32 term scores).
fn model(docs: &[Vec<usize>], q: &Q) -> Vec<(usize, f32)> {
    let n_with = docs.iter().filter(|d| !d.is_empty()).count() as u64;
    let total: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let stats = FieldStats {
        doc_count: n_with,
        sum_total_term_freq: total,
    };
    let dfs: Vec<u64> = (0..VOCAB.len())
        .map(|w| docs.iter().filter(|d| d.contains(&w)).count() as u64)
        .collect();
    let df = |w: usize| dfs[w];
    let boosted_score = |w: usize, boost: f32, d: &Vec<usize>| -> Option<f64> {
        let tf = d.iter().filter(|&&x| x == w).count();
        (tf > 0).then(|| {
            let sim = Bm25::default().scorer(boost, Bm25::idf(df(w), n_with), &stats);
            f64::from(sim.score(tf as f32, length_to_norm(d.len() as u32)))
        })
    };
    let term_score = |w: usize, d: &Vec<usize>| boosted_score(w, 1.0, d);
    // Lucene's BooleanQuery.rewrite merges identical MUST clauses (and SHOULD clauses when at
    // most one must match) into one clause whose boost is the number of copies.
    let merged = |ws: &[usize]| -> Vec<(usize, f32)> {
        let mut out: Vec<(usize, f32)> = Vec::new();
        for &w in ws {
            match out.iter_mut().find(|(x, _)| *x == w) {
                Some((_, b)) => *b += 1.0,
                None => out.push((w, 1.0)),
            }
        }
        out
    };
    // Occurrences of the exact sequence; the idf is summed over the phrase's terms, repeats
    // included (Lucene's PhraseWeight).
    let phrase_score = |ws: &[usize], d: &Vec<usize>| -> Option<f64> {
        let freq = d.windows(ws.len()).filter(|w| *w == ws).count();
        (freq > 0).then(|| {
            let idf: f32 = ws.iter().map(|&w| Bm25::idf(df(w), n_with)).sum();
            let sim = Bm25::default().scorer(1.0, idf, &stats);
            f64::from(sim.score(freq as f32, length_to_norm(d.len() as u32)))
        })
    };
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let s = match q {
            Q::Or(ws) => {
                let parts: Vec<f64> = merged(ws)
                    .into_iter()
                    .filter_map(|(w, b)| boosted_score(w, b, d))
                    .collect();
                (!parts.is_empty()).then(|| parts.iter().sum::<f64>())
            }
            Q::And(ws) => {
                let parts: Vec<Option<f64>> = merged(ws)
                    .into_iter()
                    .map(|(w, b)| boosted_score(w, b, d))
                    .collect();
                parts
                    .iter()
                    .all(Option::is_some)
                    .then(|| parts.iter().map(|p| p.unwrap()).sum::<f64>())
            }
            Q::Mixed(a, b, c) => match (term_score(*a, d), d.contains(c)) {
                (Some(sa), false) => Some(sa + term_score(*b, d).unwrap_or(0.0)),
                _ => None,
            },
            Q::Excl(r, e) => {
                let parts: Vec<Option<f64>> = merged(r)
                    .into_iter()
                    .map(|(w, b)| boosted_score(w, b, d))
                    .collect();
                (parts.iter().all(Option::is_some) && !e.iter().any(|w| d.contains(w)))
                    .then(|| parts.iter().map(|p| p.unwrap()).sum::<f64>())
            }
            Q::ReqOpt(r, o) => {
                let req: Vec<Option<f64>> = merged(r)
                    .into_iter()
                    .map(|(w, b)| boosted_score(w, b, d))
                    .collect();
                // As Lucene's ReqOptSumScorer: each side's sum is rounded to f32 first.
                req.iter().all(Option::is_some).then(|| {
                    let opt: f64 = merged(o)
                        .into_iter()
                        .filter_map(|(w, b)| boosted_score(w, b, d))
                        .sum();
                    let req: f64 = req.iter().map(|p| p.unwrap()).sum();
                    f64::from(req as f32) + f64::from(opt as f32)
                })
            }
            Q::Phrase(ws) => phrase_score(ws, d),
            Q::PhraseAnd(ws, c) => match (phrase_score(ws, d), term_score(*c, d)) {
                (Some(p), Some(t)) => Some(p + t),
                _ => None,
            },
        };
        if let Some(s) = s {
            out.push((i, s as f32));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn build(docs: &[Vec<usize>], threads: usize) -> (tempfile::TempDir, Index) {
    build_with(docs, threads, 1 << 20)
}

/// [`build`] with an indexing RAM budget: 1 MiB leaves many small segments, 64 MiB one per
/// indexing thread.
fn build_with(docs: &[Vec<usize>], threads: usize, ram: usize) -> (tempfile::TempDir, Index) {
    build_in_commits(docs, threads, ram, docs.len())
}

/// [`build_with`], committing after every `every` documents (a segment per commit at least).
fn build_in_commits(
    docs: &[Vec<usize>],
    threads: usize,
    ram: usize,
    every: usize,
) -> (tempfile::TempDir, Index) {
    let schema = Schema::builder().integer("id").text("body", false).build();
    let tmp = tempfile::tempdir().unwrap();
    let opts = WriterOptions {
        threads,
        merge_policy: MergePolicy::None,
        ram_budget_bytes: ram,
        ..Default::default()
    };
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
    for (i, d) in docs.iter().enumerate() {
        let mut doc = Document::new();
        doc.add(&schema, "id", FieldValue::Int(i as i64)).unwrap();
        let body: Vec<&str> = d.iter().map(|&x| VOCAB[x]).collect();
        doc.add(&schema, "body", FieldValue::Str(body.join(" ")))
            .unwrap();
        w.add_document(doc).unwrap();
        if (i + 1) % every.max(1) == 0 && i + 1 < docs.len() {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    let index = Index::open(tmp.path()).unwrap();
    (tmp, index)
}

/// Cases of the property tests below: `default` times `QUARRY_PROPTEST_SCALE` (default 1). CI's
/// long run (scripts/test.sh) sets a scale and a fixed `PROPTEST_RNG_SEED`.
fn cases(default: u32) -> u32 {
    let scale: u32 = std::env::var("QUARRY_PROPTEST_SCALE")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1);
    default.saturating_mul(scale.max(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    #[test]
    fn pruned_equals_exhaustive_equals_model(docs in docs_strategy(), queries in proptest::collection::vec(query_strategy(), 1..6), k in prop_oneof![Just(1usize), Just(3), Just(10)], threads in 1usize..3) {
        let (_tmp, index) = build(&docs, threads);
        let s = index.searcher();
        for q in &queries {
            let parsed = s.parse_query(&text(q), &["body"]).unwrap();
            let full = s.search(&parsed, k, SearchMode::TopCount).unwrap();
            let pruned = s.search(&parsed, k, SearchMode::Top).unwrap();
            let count = s.search(&parsed, k, SearchMode::Count).unwrap();
            let want = model(&docs, q);
            prop_assert_eq!(full.total_hits, want.len() as u64, "{}", text(q));
            prop_assert_eq!(count.total_hits, want.len() as u64);
            prop_assert!(pruned.total_hits <= full.total_hits);
            if pruned.hits_exact {
                prop_assert_eq!(pruned.total_hits, full.total_hits, "exact count in top mode for {}", text(q));
            }
            let ids = |r: &quarry::SearchResult| -> Vec<(u64, f32)> { r.top.iter().map(|h| (h.seq, h.score)).collect() };
            prop_assert_eq!(ids(&pruned), ids(&full), "pruned vs exhaustive for {}", text(q));
            let want_top: Vec<(u64, f32)> = want.iter().take(k).map(|&(i, s)| (i as u64, s)).collect();
            prop_assert_eq!(ids(&full), want_top, "exhaustive vs model for {}", text(q));
        }
    }
}

#[test]
fn model_agrees_on_a_fixed_case() {
    let docs: Vec<Vec<usize>> = (0..700)
        .map(|i| (0..(i % 17)).map(|j| (i * 7 + j * 3) % 12).collect())
        .collect();
    let (_tmp, index) = build(&docs, 2);
    let s = index.searcher();
    let mut seen = HashMap::new();
    for q in [
        Q::Or(vec![0, 1, 2, 3]),
        Q::And(vec![0, 5]),
        Q::Mixed(1, 2, 3),
    ] {
        let parsed = s.parse_query(&text(&q), &["body"]).unwrap();
        let r = s.search(&parsed, 5, SearchMode::Top).unwrap();
        let want = model(&docs, &q);
        let got: Vec<u64> = r.top.iter().map(|h| h.seq).collect();
        let exp: Vec<u64> = want.iter().take(5).map(|w| w.0 as u64).collect();
        assert_eq!(got, exp, "{}", text(&q));
        seen.insert(text(&q), got);
    }
    assert_eq!(seen.len(), 3);
}

/// Conjunctions of common terms are counted with bitsets over windows of 32768 doc ids (and their
/// top k found in windows led by the rarest term): over several windows, with dense and sparse
/// blocks, every mode agrees with the model.
#[test]
fn dense_conjunctions_over_many_windows_agree_with_the_model() {
    let docs: Vec<Vec<usize>> = (0..80_000usize)
        .map(|i| {
            let mut d = vec![0]; // `oil` everywhere
            if i % 3 != 0 {
                d.push(1); // `the` in two thirds
            }
            if i % 7 == 2 || (30_000..34_000).contains(&i) {
                d.push(2); // `of` in a seventh, dense in one stretch
            }
            if i % 500 == 17 {
                d.push(3);
            }
            if i % 11 == 0 {
                d.push(1); // some repeats, so scores differ
            }
            d
        })
        .collect();
    let (_tmp, index) = build(&docs, 1);
    let s = index.searcher();
    for q in [
        Q::And(vec![0, 1, 2]),
        Q::And(vec![1, 2]),
        Q::And(vec![0, 1]),
        Q::And(vec![1, 2, 3]),
    ] {
        let parsed = s.parse_query(&text(&q), &["body"]).unwrap();
        let want = model(&docs, &q);
        let count = s.search(&parsed, 10, SearchMode::Count).unwrap();
        assert_eq!(count.total_hits, want.len() as u64, "{}", text(&q));
        let want_top: Vec<u64> = want.iter().take(10).map(|w| w.0 as u64).collect();
        for mode in [SearchMode::Top, SearchMode::TopCount] {
            let r = s.search(&parsed, 10, mode).unwrap();
            let got: Vec<u64> = r.top.iter().map(|h| h.seq).collect();
            assert_eq!(got, want_top, "{} in {mode:?}", text(&q));
        }
    }
    // Phrases of common words take their candidates from the same bitsets.
    for phrase in [[0usize, 1], [1, 2], [0, 2]] {
        let want = docs
            .iter()
            .filter(|d| d.windows(2).any(|w| w == phrase))
            .count() as u64;
        let q = format!("\"{} {}\"", VOCAB[phrase[0]], VOCAB[phrase[1]]);
        let parsed = s.parse_query(&q, &["body"]).unwrap();
        for mode in [SearchMode::Count, SearchMode::TopCount] {
            let r = s.search(&parsed, 10, mode).unwrap();
            assert_eq!(r.total_hits, want, "{q} in {mode:?}");
        }
    }
}

/// Documents for long single terms: `oil` in most of them with a small, often repeated
/// frequency and length, so scores tie a lot and the block bounds are flat (like `the`).
fn long_term_docs() -> impl Strategy<Value = Vec<Vec<usize>>> {
    let doc = (
        prop_oneof![2 => Just(0usize), 6 => 1usize..3, 1 => 3usize..9],
        0usize..10,
        any::<bool>(),
    )
        .prop_map(|(tf, filler, gas)| {
            let mut d = vec![0; tf];
            d.extend(std::iter::repeat_n(if gas { 1 } else { 2 }, filler));
            d
        });
    proptest::collection::vec(doc, 4_500..9_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(8), ..ProptestConfig::default() })]

    /// A single term over 32 blocks or more is scored best blocks first (`union::top_k_term`):
    /// the top k and their scores are the model's, ties broken by index order, whatever order
    /// the blocks were scored in, over one or several segments.
    #[test]
    fn long_single_terms_best_blocks_first_agree_with_the_model(docs in long_term_docs(), k in prop_oneof![Just(1usize), Just(10), Just(100)], cut in 0.0f64..1.0, threads in 1usize..3) {
        // One segment, or two cut at a random point (a commit each): long enough for the term
        // to span 32 blocks or more in at least one of them. With two threads each commit
        // leaves a segment per thread whose documents interleave in index order, so ties are
        // broken across segments by sequence, not by segment.
        let schema = Schema::builder().integer("id").text("body", false).build();
        let tmp = tempfile::tempdir().unwrap();
        let opts = WriterOptions {
            threads,
            merge_policy: MergePolicy::None,
            ram_budget_bytes: 64 << 20,
            ..Default::default()
        };
        let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
        let cut = (docs.len() as f64 * cut) as usize;
        for (i, d) in docs.iter().enumerate() {
            if i == cut && cut > 0 {
                w.commit().unwrap();
            }
            let mut doc = Document::new();
            doc.add(&schema, "id", FieldValue::Int(i as i64)).unwrap();
            let body: Vec<&str> = d.iter().map(|&x| VOCAB[x]).collect();
            doc.add(&schema, "body", FieldValue::Str(body.join(" "))).unwrap();
            w.add_document(doc).unwrap();
        }
        w.commit().unwrap();
        let index = Index::open(tmp.path()).unwrap();
        let s = index.searcher();
        for q in [Q::Or(vec![0]), Q::Or(vec![1])] {
            let parsed = s.parse_query(&text(&q), &["body"]).unwrap();
            let want = model(&docs, &q);
            let want_top: Vec<(u64, f32)> = want.iter().take(k).map(|&(i, s)| (i as u64, s)).collect();
            for mode in [SearchMode::Top, SearchMode::TopCount] {
                let r = s.search(&parsed, k, mode).unwrap();
                let got: Vec<(u64, f32)> = r.top.iter().map(|h| (h.seq, h.score)).collect();
                prop_assert_eq!(got, want_top.clone(), "{} k={} {:?}", text(&q), k, mode);
                prop_assert!(r.total_hits <= want.len() as u64);
                if mode == SearchMode::TopCount || r.hits_exact {
                    prop_assert_eq!(r.total_hits, want.len() as u64);
                }
            }
        }
    }
}

/// Two indexing threads take batches of documents in turn, so the segment visited second holds
/// documents added before some of the first one's: a score tie with the k-th hit must then go
/// to the earlier document although it comes later in the walk. Over a term long enough to be
/// scored best blocks first (20,000 documents) and one walked in doc order (3,000).
#[test]
fn ties_across_segments_go_to_index_order_in_single_term_walks() {
    for n in [20_000usize, 3_000] {
        // `oil` once in every document of three words; three times in documents 300 and 600
        // (the first indexing thread holds 600, the second 300), and in 700 and 1300.
        let docs: Vec<Vec<usize>> = (0..n)
            .map(|i| match i {
                300 | 600 | 700 | 1300 => vec![0, 0, 0],
                _ => vec![0, 1, 2],
            })
            .collect();
        let (_tmp, index) = build_with(&docs, 2, 64 << 20);
        assert_eq!(index.searcher().segments().len(), 2);

        let s = index.searcher();
        let parsed = s.parse_query("oil", &["body"]).unwrap();
        let want = model(&docs, &Q::Or(vec![0]));
        for k in [1usize, 2, 3, 4, 5, 10] {
            let want_top: Vec<(u64, f32)> =
                want.iter().take(k).map(|&(i, s)| (i as u64, s)).collect();
            for mode in [SearchMode::Top, SearchMode::TopCount] {
                let r = s.search(&parsed, k, mode).unwrap();
                let got: Vec<(u64, f32)> = r.top.iter().map(|h| (h.seq, h.score)).collect();
                assert_eq!(got, want_top, "n={n} k={k} {mode:?}");
            }
        }
    }
}

/// Documents for conjunctions over many blocks: each word in a document with its own
/// probability (rare to very common) and a small, often repeated frequency, lengths varying, so
/// that a conjunction's rarest term spans several blocks and its bounds are close to the
/// scores.
fn conjunction_docs() -> impl Strategy<Value = Vec<Vec<usize>>> {
    let doc = proptest::collection::vec(0usize..100, 12).prop_map(|rolls| {
        // Word w appears when its roll falls under its rate: `oil` in 60 % of the documents
        // down to `wheat` in 4 %; one to three times; filler words make lengths vary.
        const RATE: [usize; 12] = [60, 45, 40, 30, 25, 20, 15, 12, 10, 8, 6, 4];
        let mut d = Vec::new();
        for (w, &r) in rolls.iter().enumerate() {
            if r < RATE[w] {
                d.extend(std::iter::repeat_n(w, 1 + r % 3));
            }
        }
        d.extend(std::iter::repeat_n(11, rolls[0] % 7));
        d
    });
    proptest::collection::vec(doc, 2_000..5_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(8), ..ProptestConfig::default() })]

    /// Conjunctions of terms (`conjunction::top_k`, and `conjunction::dense` for common ones)
    /// and exact phrases (whose candidates are passed over on their pieces' frequencies) prune
    /// per document in `Top` mode: over lists of many blocks the top k and their scores are
    /// the model's, and `TopCount` counts every match.
    #[test]
    fn pruned_conjunctions_and_phrases_over_many_blocks_agree_with_the_model(docs in conjunction_docs(), k in prop_oneof![Just(1usize), Just(3), Just(10)], threads in 1usize..3) {
        let (_tmp, index) = build_with(&docs, threads, 64 << 20);
        let s = index.searcher();
        let queries = [
            Q::And(vec![0, 1]),
            Q::And(vec![0, 1, 2]),
            Q::And(vec![3, 8]),
            Q::And(vec![9, 0, 4]),
            Q::And(vec![10, 11]),
            Q::Phrase(vec![0, 1]),
            Q::Phrase(vec![7, 0]),
            Q::Phrase(vec![1, 1]),
        ];
        for q in &queries {
            let parsed = s.parse_query(&text(q), &["body"]).unwrap();
            let want = model(&docs, q);
            let want_top: Vec<(u64, f32)> = want.iter().take(k).map(|&(i, s)| (i as u64, s)).collect();
            for mode in [SearchMode::Top, SearchMode::TopCount] {
                let r = s.search(&parsed, k, mode).unwrap();
                let got: Vec<(u64, f32)> = r.top.iter().map(|h| (h.seq, h.score)).collect();
                prop_assert_eq!(got, want_top.clone(), "{} k={} {:?}", text(q), k, mode);
                prop_assert!(r.total_hits <= want.len() as u64);
                if mode == SearchMode::TopCount || r.hits_exact {
                    prop_assert_eq!(r.total_hits, want.len() as u64, "{} {:?}", text(q), mode);
                }
            }
        }
    }
}

/// Constant-score queries (prefix, wildcard, `constant_score`-like rewrites): every match
/// scores the same, ties go to index order, and a top-k search without a count passes over the
/// segments after the one that filled it. Patterns over [`VOCAB`] with what they match.
type Pattern = (&'static str, fn(&str) -> bool);

const PATTERNS: [Pattern; 6] = [
    ("s*", |w| w.starts_with('s')),
    ("t*", |w| w.starts_with('t')),
    ("w*t", |w| w.starts_with('w') && w.ends_with('t')),
    ("c?r*", |w| {
        w.starts_with('c') && w.chars().nth(2) == Some('r')
    }),
    ("o*", |w| w.starts_with('o')),
    ("/[yg]o.*/", |w| w.starts_with("yo") || w.starts_with("go")),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    /// Top (segments passed over once nothing can compete) equals TopCount (every segment
    /// scored) equals the model (matching documents in index order), for 1 and 2 indexing
    /// threads (2 interleave the documents' index order across segments) and small segments.
    #[test]
    fn constant_score_top_k_skips_segments_and_keeps_index_order(docs in docs_strategy(), pattern in 0usize..PATTERNS.len(), k in prop_oneof![Just(1usize), Just(3), Just(10), Just(100)], threads in 1usize..3) {
        let (_tmp, index) = build(&docs, threads);
        let s = index.searcher();
        let (text, accepts) = PATTERNS[pattern];
        let parsed = s.parse_query(text, &["body"]).unwrap();
        let want: Vec<u64> = docs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.iter().any(|&w| accepts(VOCAB[w])))
            .map(|(i, _)| i as u64)
            .collect();
        let full = s.search(&parsed, k, SearchMode::TopCount).unwrap();
        let pruned = s.search(&parsed, k, SearchMode::Top).unwrap();
        prop_assert_eq!(full.total_hits, want.len() as u64, "{}", text);
        prop_assert!(pruned.total_hits <= full.total_hits);
        let ids = |r: &quarry::SearchResult| -> Vec<(u64, f32)> { r.top.iter().map(|h| (h.seq, h.score)).collect() };
        let want_top: Vec<(u64, f32)> = want.iter().take(k).map(|&i| (i, 1.0)).collect();
        prop_assert_eq!(ids(&full), want_top.clone(), "exhaustive vs model for {}", text);
        prop_assert_eq!(ids(&pruned), want_top, "pruned vs model for {}", text);
    }
}

/// The skip is taken: with one match per segment and k = 1, a top-1 search without a count
/// stops counting after the first segment (its count is a lower bound), and still returns the
/// first match in index order.
#[test]
fn constant_score_top_k_passes_over_later_segments() {
    let docs: Vec<Vec<usize>> = (0..3_000).map(|i| vec![i % 12]).collect();
    let (_tmp, index) = build_in_commits(&docs, 1, 64 << 20, 500);
    let s = index.searcher();
    assert_eq!(s.segments().len(), 6);
    let parsed = s.parse_query("s*", &["body"]).unwrap();
    let full = s.search(&parsed, 1, SearchMode::TopCount).unwrap();
    let pruned = s.search(&parsed, 1, SearchMode::Top).unwrap();
    assert_eq!(full.total_hits, 500, "ship and steel: 2 in 12 of 3,000");
    assert!(full.hits_exact);
    assert!(!pruned.hits_exact && pruned.total_hits < full.total_hits);
    let first =
        |r: &quarry::SearchResult| r.top.iter().map(|h| (h.seq, h.score)).collect::<Vec<_>>();
    assert_eq!(first(&pruned), vec![(9, 1.0)]);
    assert_eq!(first(&full), first(&pruned));
}

/// Two indexing threads interleave the index order across segments (the first holds document
/// 600, the second 300): a segment after the one that filled the top k may still hold an
/// earlier document, which wins the tie, so it is not passed over.
#[test]
fn constant_score_ties_across_segments_go_to_index_order() {
    for n in [20_000usize, 3_000] {
        let docs: Vec<Vec<usize>> = (0..n)
            .map(|i| match i {
                300 | 600 | 700 | 1300 => vec![9],
                _ => vec![0, 1, 2],
            })
            .collect();
        let (_tmp, index) = build_with(&docs, 2, 64 << 20);
        assert_eq!(index.searcher().segments().len(), 2);
        let s = index.searcher();
        let parsed = s.parse_query("s*", &["body"]).unwrap();
        for k in [1usize, 2, 3, 4, 10] {
            let want: Vec<(u64, f32)> = [300u64, 600, 700, 1300]
                .into_iter()
                .take(k)
                .map(|i| (i, 1.0))
                .collect();
            for mode in [SearchMode::Top, SearchMode::TopCount] {
                let r = s.search(&parsed, k, mode).unwrap();
                let got: Vec<(u64, f32)> = r.top.iter().map(|h| (h.seq, h.score)).collect();
                assert_eq!(got, want, "n={n} k={k} {mode:?}");
            }
        }
    }
}
