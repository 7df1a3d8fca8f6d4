//! Multi-phrases (Lucene's `MultiPhraseQuery`) and phrase prefixes (Elasticsearch's
//! `match_phrase_prefix`): a multi-phrase with an alternative the index lacks scores exactly as
//! the phrase without it (pairs of frequent words included), a position's alternatives match
//! the union of the phrases of each, and the last word expands segment by segment.
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use quarry::query::{Clause, Occur, Query};
use quarry::{
    Document, FieldValue, Index, IndexWriter, MergePolicy, Schema, SearchMode, WriterOptions,
};

/// Words 1–5 are frequent words ([`quarry::pairs::WORDS`]): exact phrases of them read pairs.
const VOCAB: [&str; 10] = [
    "oil", "the", "of", "to", "be", "who", "yen", "gold", "goldman", "golf",
];

/// Indexes `segments` (each a list of documents, each a list of words), one commit each.
fn build(segments: &[Vec<Vec<&str>>]) -> (tempfile::TempDir, Index) {
    let schema = Schema::builder().integer("id").text("body", false).build();
    let tmp = tempfile::tempdir().unwrap();
    let opts = WriterOptions {
        threads: 1,
        merge_policy: MergePolicy::None,
        ..Default::default()
    };
    let mut w = IndexWriter::create(tmp.path(), schema.clone(), opts).unwrap();
    let mut id = 0i64;
    for docs in segments {
        for d in docs {
            let mut doc = Document::new();
            doc.add(&schema, "id", FieldValue::Int(id)).unwrap();
            doc.add(&schema, "body", FieldValue::Str(d.join(" ")))
                .unwrap();
            w.add_document(doc).unwrap();
            id += 1;
        }
        w.commit().unwrap();
    }
    let index = Index::open(tmp.path()).unwrap();
    (tmp, index)
}

/// Every match of `q`: id -> score.
fn hits(index: &Index, q: &Query) -> BTreeMap<i64, f32> {
    let s = index.searcher();
    let res = s.search(q, 100_000, SearchMode::TopCount).unwrap();
    assert_eq!(res.total_hits as usize, res.top.len(), "{q}");
    res.top
        .iter()
        .map(|h| {
            (
                s.stored_fields(h.doc).unwrap()["id"].as_i64().unwrap(),
                h.score,
            )
        })
        .collect()
}

fn multi(terms: Vec<(u32, Vec<&str>)>, slop: u32) -> Query {
    Query::MultiPhrase {
        field: "body".into(),
        terms: terms
            .into_iter()
            .map(|(p, ts)| (p, ts.into_iter().map(String::from).collect()))
            .collect(),
        slop,
    }
}

fn phrase(words: &[&str], slop: u32) -> Query {
    Query::Phrase {
        field: "body".into(),
        terms: words
            .iter()
            .enumerate()
            .map(|(i, w)| (i as u32, w.to_string()))
            .collect(),
        slop,
    }
}

fn docs_strategy() -> impl Strategy<Value = Vec<Vec<usize>>> {
    let word = prop_oneof![3 => 0usize..3, 2 => 3usize..6, 1 => 6usize..10];
    proptest::collection::vec(proptest::collection::vec(word, 0..25), 50..300)
}

fn words(docs: &[Vec<usize>]) -> Vec<Vec<&'static str>> {
    docs.iter()
        .map(|d| d.iter().map(|&w| VOCAB[w]).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A position's extra alternative that no document holds changes nothing: the multi-phrase
    /// (its own scorer, no pairs) matches and scores as the phrase (which reads pairs of
    /// frequent words when exact).
    #[test]
    fn absent_alternative_scores_as_the_phrase(
        docs in docs_strategy(),
        q in proptest::collection::vec(0usize..10, 2..5),
        at in 0usize..4,
        slop in prop_oneof![Just(0u32), Just(1), Just(3)],
        split in 0usize..3,
    ) {
        let w = words(&docs);
        let cut = w.len() * split / 3;
        let (_tmp, index) = build(&[w[..cut].to_vec(), w[cut..].to_vec()]);
        let ws: Vec<&str> = q.iter().map(|&i| VOCAB[i]).collect();
        let at = at % ws.len();
        let m = multi(
            ws.iter()
                .enumerate()
                .map(|(i, &t)| (i as u32, if i == at { vec![t, "zzz"] } else { vec![t] }))
                .collect(),
            slop,
        );
        let (got, want) = (hits(&index, &m), hits(&index, &phrase(&ws, slop)));
        prop_assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{}", m);
        for (id, s) in &want {
            let g = got[id];
            prop_assert!((g - s).abs() <= 1e-6 * s.abs(), "{}: doc {} {} vs {}", m, id, g, s);
        }
    }

    /// An exact multi-phrase matches the documents of any of the phrases its alternatives
    /// spell out.
    #[test]
    fn alternatives_match_the_union_of_their_phrases(
        docs in docs_strategy(),
        lead in 0usize..10,
        alts in proptest::collection::btree_set(0usize..10, 2..4),
    ) {
        let (_tmp, index) = build(&[words(&docs)]);
        let alts: Vec<&str> = alts.iter().map(|&i| VOCAB[i]).collect();
        let m = multi(vec![(0, vec![VOCAB[lead]]), (1, alts.clone())], 0);
        let got: BTreeSet<i64> = hits(&index, &m).into_keys().collect();
        let mut want = BTreeSet::new();
        for a in &alts {
            want.extend(hits(&index, &phrase(&[VOCAB[lead], a], 0)).into_keys());
        }
        prop_assert_eq!(got, want, "{}", m);
    }
}

/// One position is the disjunction of its terms (Lucene's rewrite), scored term by term.
#[test]
fn one_position_is_a_disjunction() {
    let (_tmp, index) = build(&[vec![vec!["gold", "oil"], vec!["golf"], vec!["yen"]]]);
    let m = multi(vec![(0, vec!["gold", "golf"])], 0);
    let or = Query::boolean(vec![
        Clause::new(Occur::Should, Query::term("body", "gold")),
        Clause::new(Occur::Should, Query::term("body", "golf")),
    ]);
    assert_eq!(hits(&index, &m), hits(&index, &or));
    assert_eq!(hits(&index, &m).len(), 2);
}

fn prefix(terms: Vec<(u32, Vec<&str>)>, max_expansions: u32) -> Query {
    Query::PhrasePrefix {
        field: "body".into(),
        terms: terms
            .into_iter()
            .map(|(p, ts)| (p, ts.into_iter().map(String::from).collect()))
            .collect(),
        slop: 0,
        max_expansions,
    }
}

/// Elasticsearch's expansion: segment after segment, in term order within each, until
/// `max_expansions` distinct terms; not the first terms of the whole dictionary.
#[test]
fn phrase_prefix_expands_segment_by_segment() {
    let seg0 = vec![vec!["the", "golf"], vec!["the", "goldman"]];
    let seg1 = vec![
        vec!["the", "gold"],
        vec!["the", "goal"],
        vec!["the", "golf"],
    ];
    let (_tmp, index) = build(&[seg0, seg1]);
    let ids = |q: &Query| hits(&index, q).into_keys().collect::<Vec<_>>();
    // Two expansions: segment 0's `goldman` and `golf`; `goal` and `gold` (segment 1, first in
    // the merged dictionary) are not searched.
    let q = prefix(vec![(0, vec!["the"]), (1, vec!["go"])], 2);
    assert_eq!(q.to_string(), "body:\"the go*\"");
    assert_eq!(ids(&q), [0, 1, 4]);
    // Three: segment 0's two, then segment 1's first new one.
    assert_eq!(
        ids(&prefix(vec![(0, vec!["the"]), (1, vec!["go"])], 3)),
        [0, 1, 3, 4]
    );
    assert_eq!(
        ids(&prefix(vec![(0, vec!["the"]), (1, vec!["go"])], 50)),
        [0, 1, 2, 3, 4]
    );
    // `max_expansions` 0 still takes one term, as Elasticsearch's check follows the insert.
    assert_eq!(
        ids(&prefix(vec![(0, vec!["the"]), (1, vec!["go"])], 0)),
        [1]
    );
    // A single word is the disjunction of its expansions.
    assert_eq!(ids(&prefix(vec![(0, vec!["gol"])], 1)), [1]);
    // Several prefixes at the last position: the next one is tried while the expansions do
    // not exceed the maximum, so one more can come in.
    assert_eq!(
        ids(&prefix(vec![(0, vec!["the"]), (1, vec!["gold", "goa"])], 1)),
        [1, 3]
    );
    // No expansion matches nothing; the rendering is Elasticsearch's.
    let none = prefix(vec![(0, vec!["the"]), (1, vec!["zz"])], 50);
    assert!(ids(&none).is_empty());
    let mut slop = prefix(vec![(0, vec!["the", "a"]), (2, vec!["go", "gx"])], 5);
    if let Query::PhrasePrefix { slop: s, .. } = &mut slop {
        *s = 2;
    }
    assert_eq!(slop.to_string(), "body:\"(the a) (go* gx*)\"~2");
}

/// The explanation of a phrase prefix is the one of the multi-phrase it runs as, and its value
/// is the search score.
#[test]
fn phrase_prefix_explains_its_score() {
    let docs = vec![
        vec!["the", "gold", "oil"],
        vec!["the", "golf", "of", "goldman"],
        vec!["oil"],
    ];
    let (_tmp, index) = build(&[docs]);
    let s = index.searcher();
    let q = prefix(vec![(0, vec!["the"]), (1, vec!["gol"])], 50);
    let res = s.search(&q, 10, SearchMode::TopCount).unwrap();
    assert_eq!(res.total_hits, 2);
    for h in &res.top {
        let e = s.explain(&q, h.doc).unwrap();
        assert!(e.matched);
        assert!((e.value - h.score).abs() <= 1e-6 * h.score, "{e:?}");
        let text = format!("{e:?}");
        assert!(
            text.contains("body:\\\"the (gold goldman golf)\\\""),
            "{text}"
        );
        assert!(text.contains("phraseFreq=1.0"), "{text}");
    }
}
