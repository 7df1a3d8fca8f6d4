//! Which terms and documents a multi-term query (wildcard, regexp, fuzzy) selects: the term
//! dictionary intersected with the query's automaton ([`super::automaton`]), and fuzzy's choice
//! of the `max_expansions` most similar terms (Lucene's `TopTermsBlendedFreqScoringRewrite`).
use std::collections::BTreeMap;
use std::sync::Arc;

use super::automaton::{osa_distance, Levenshtein, LiteralByte, Utf8};
use super::range::DocUnion;
use crate::index::SegmentReader;
use crate::query::ast::FUZZY_MAX_EDITS;
use crate::{Error, Result};

/// All documents of `seg` holding a term of `field` the automaton accepts, sorted.
pub(crate) fn automaton_docs<A: LiteralByte>(
    seg: &SegmentReader,
    field: u32,
    aut: &A,
) -> Result<Vec<u32>> {
    let Some(dict) = seg.terms(field)? else {
        return Ok(Vec::new());
    };
    let mut docs = DocUnion::new(seg);
    walk(dict.map(), aut, &mut |_, offset| {
        docs.add_term(field, offset)
    })?;
    Ok(docs.finish())
}

/// A fuzzy query's parameters.
#[derive(Debug, Clone)]
pub struct FuzzySpec<'a> {
    pub term: &'a str,
    pub max_edits: u32,
    pub prefix_length: u32,
    pub max_expansions: u32,
    pub transpositions: bool,
}

impl<'a> FuzzySpec<'a> {
    /// The field and spec of a [`Query::Fuzzy`](crate::query::Query::Fuzzy); `None` for any
    /// other query.
    pub fn of(query: &'a crate::query::Query) -> Option<(&'a str, FuzzySpec<'a>)> {
        match query {
            crate::query::Query::Fuzzy {
                field,
                term,
                max_edits,
                prefix_length,
                max_expansions,
                transpositions,
            } => Some((
                field,
                FuzzySpec {
                    term,
                    max_edits: *max_edits,
                    prefix_length: *prefix_length,
                    max_expansions: *max_expansions,
                    transpositions: *transpositions,
                },
            )),
            _ => None,
        }
    }
}

/// One term a fuzzy query expanded to: its similarity boost (Lucene's
/// `1 - edits / min(len(term), len(query term))`, 1 for the term itself, floored at 0) and its
/// document frequency summed over the segments.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    pub term: String,
    pub boost: f32,
    pub doc_freq: u64,
}

impl FuzzySpec<'_> {
    /// Lucene's argument checks (`FuzzyQuery`'s constructor).
    pub fn check(&self, field: &str) -> Result<()> {
        if self.max_edits > FUZZY_MAX_EDITS {
            return Err(Error::Query(format!(
                "fuzzy query on field {field:?}: max edits must be between 0 and {FUZZY_MAX_EDITS}, got {}",
                self.max_edits
            )));
        }
        if self.max_expansions == 0 {
            return Err(Error::Query(format!(
                "fuzzy query on field {field:?}: max_expansions must be positive"
            )));
        }
        Ok(())
    }
}

/// The terms `spec` expands to over `segments`: the `max_expansions` with the highest boost
/// (ties to the smaller term), in term order.
pub fn fuzzy_expansions(
    segments: &[Arc<SegmentReader>],
    field: u32,
    spec: &FuzzySpec,
) -> Result<Vec<Expansion>> {
    let query: Vec<char> = spec.term.chars().collect();
    // Lucene's `FuzzyQuery.getTermsEnum`: no edits, or a prefix as long as the term (in UTF-16
    // units), is the term alone.
    let exact_only =
        spec.max_edits == 0 || spec.prefix_length as usize >= spec.term.encode_utf16().count();
    let lev = Levenshtein::new(
        spec.term,
        spec.max_edits,
        spec.prefix_length,
        spec.transpositions,
    );
    let aut = Utf8(lev);
    // Without a prefix, a DFA walks the dictionary: a state is a number, where the automaton
    // above computes (and allocates) a row of distances per byte.
    let dfa = (spec.prefix_length == 0 && !exact_only)
        .then(|| LevDfa::new(spec.term, spec.max_edits, spec.transpositions));
    let prefix = (spec.prefix_length as usize).min(query.len());
    let mut found: BTreeMap<String, (f32, u64)> = BTreeMap::new();
    for seg in segments {
        let Some(dict) = seg.terms(field)? else {
            continue;
        };
        let mut add = |key: &[u8], offset: u64| -> Result<()> {
            let Ok(term) = std::str::from_utf8(key) else {
                return Ok(());
            };
            let (info, _) = seg.term_info_at(field, offset)?;
            let entry = found
                .entry(term.to_string())
                .or_insert_with(|| (similarity(&query, prefix, term, spec.transpositions), 0));
            entry.1 += u64::from(info.doc_freq);
            Ok(())
        };
        if exact_only {
            if let Some(offset) = dict.get(spec.term.as_bytes()) {
                add(spec.term.as_bytes(), offset)?;
            }
            continue;
        }
        match &dfa {
            Some(dfa) => walk(dict.map(), dfa, &mut add)?,
            None => walk(dict.map(), &aut, &mut add)?,
        }
    }
    let mut all: Vec<Expansion> = found
        .into_iter()
        .map(|(term, (boost, doc_freq))| Expansion {
            term,
            boost,
            doc_freq,
        })
        .collect();
    // Best boost first, ties to the smaller term (Lucene's `ScoreTerm.compareTo`); the kept
    // terms go back to term order, as `TopTermsRewrite` adds them.
    all.sort_by(|a, b| {
        b.boost
            .total_cmp(&a.boost)
            .then_with(|| a.term.cmp(&b.term))
    });
    all.truncate(spec.max_expansions as usize);
    all.sort_by(|a, b| a.term.cmp(&b.term));
    for e in &mut all {
        e.boost = e.boost.max(0.0);
    }
    Ok(all)
}

/// Calls `add` with every key of `map` that `aut` accepts, and its value, in key order.
///
/// A depth-first walk of the fst's nodes: where `fst`'s own stream decodes the node behind
/// every transition of a node it expands, this one decodes it only when the automaton can
/// still match past the transition. With a Levenshtein automaton of distance 2 most
/// transitions are dead ends: decoding their nodes was the largest part of a fuzzy query
/// (`perf record` of the fuzzy/wildcard class on W2).
fn walk<D: AsRef<[u8]>, A: LiteralByte>(
    map: &fst::Map<D>,
    aut: A,
    add: &mut impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    use fst::raw::{Node, Output};
    struct Frame<'f, S> {
        node: Node<'f>,
        /// The next transition to try; past the last, the frame is done.
        next: usize,
        /// Where the transitions to try end: the node's length, or one past the one
        /// transition a literal byte allows.
        end: usize,
        out: Output,
        state: S,
    }
    // The transitions of `node` worth trying from `state`: all, or the one a literal allows.
    let span = |node: &Node<'_>, state: &A::State| -> (usize, usize) {
        match aut.literal_byte(state) {
            Some(b) => match node.find_input(b) {
                Some(i) => (i, i + 1),
                None => (0, 0),
            },
            None => (0, node.len()),
        }
    };
    let fst = map.as_fst();
    let root = fst.root();
    let start = aut.start();
    if root.is_final() && aut.is_match(&start) {
        add(b"", root.final_output().value())?;
    }
    if !aut.can_match(&start) {
        return Ok(());
    }
    let mut key: Vec<u8> = Vec::new();
    let (next, end) = span(&root, &start);
    let mut stack = vec![Frame {
        node: root,
        next,
        end,
        out: Output::zero(),
        state: start,
    }];
    while let Some(top) = stack.last_mut() {
        if top.next >= top.end {
            stack.pop();
            key.pop();
            continue;
        }
        let t = top.node.transition(top.next);
        top.next += 1;
        let state = aut.accept(&top.state, t.inp);
        let out = top.out.cat(t.out);
        let is_match = aut.is_match(&state);
        let can_match = aut.can_match(&state);
        if !is_match && !can_match {
            continue;
        }
        let node = fst.node(t.addr);
        key.push(t.inp);
        if is_match && node.is_final() {
            add(&key, out.cat(node.final_output()).value())?;
        }
        if can_match && !node.is_empty() {
            let (next, end) = span(&node, &state);
            stack.push(Frame {
                node,
                next,
                end,
                out,
                state,
            });
        } else {
            key.pop();
        }
    }
    Ok(())
}

/// The terms within `max_edits` (0-2) of a term, as a DFA over UTF-8 bytes
/// (`levenshtein_automata`); distances count code points, and a swap of neighbours counts one
/// edit with `transpositions`, as Lucene's `LevenshteinAutomata`.
pub(crate) struct LevDfa(levenshtein_automata::DFA);

impl LevDfa {
    pub(crate) fn new(term: &str, max_edits: u32, transpositions: bool) -> Self {
        use levenshtein_automata::LevenshteinAutomatonBuilder as Builder;
        use std::sync::OnceLock;
        // Building a builder costs milliseconds (distance 2): once per process and kind.
        static BUILDERS: [[OnceLock<Builder>; 2]; 3] =
            [const { [const { OnceLock::new() }; 2] }; 3];
        let d = max_edits.min(FUZZY_MAX_EDITS) as usize;
        let builder = BUILDERS[d][usize::from(transpositions)]
            .get_or_init(|| Builder::new(d as u8, transpositions));
        LevDfa(builder.build_dfa(term))
    }
}

impl LiteralByte for &LevDfa {}

impl fst::Automaton for &LevDfa {
    type State = u32;
    fn start(&self) -> u32 {
        self.0.initial_state()
    }
    fn is_match(&self, s: &u32) -> bool {
        matches!(
            self.0.distance(*s),
            levenshtein_automata::Distance::Exact(_)
        )
    }
    fn can_match(&self, s: &u32) -> bool {
        *s != levenshtein_automata::SINK_STATE
    }
    fn accept(&self, s: &u32, byte: u8) -> u32 {
        self.0.transition(*s, byte)
    }
}

/// Lucene's `FuzzyTermsEnum` boost of a candidate: 1 for the term itself, else
/// `1 - edits / min(code points of the candidate, of the query term)` in f32.
fn similarity(query: &[char], prefix: usize, cand: &str, transpositions: bool) -> f32 {
    let c: Vec<char> = cand.chars().collect();
    let p = prefix.min(c.len());
    let ed = osa_distance(&query[prefix..], &c[p..], transpositions);
    if ed == 0 {
        return 1.0;
    }
    let min_len = c.len().min(query.len());
    1.0 - ed as f32 / min_len as f32
}

/// Elasticsearch's `fuzziness` for a term: `AUTO` (0 edits up to 2 characters, 1 up to 5, 2
/// beyond), `AUTO:low,high`, or a number of edits.
pub fn fuzziness_edits(fuzziness: &str, term: &str) -> std::result::Result<u32, String> {
    let len = term.chars().count();
    let auto = |low: usize, high: usize| {
        if len < low {
            0
        } else if len < high {
            1
        } else {
            2
        }
    };
    if fuzziness.eq_ignore_ascii_case("auto") {
        return Ok(auto(3, 6));
    }
    if let Some(rest) = fuzziness
        .strip_prefix("AUTO:")
        .or_else(|| fuzziness.strip_prefix("auto:"))
    {
        let (low, high) = rest
            .split_once(',')
            .and_then(|(l, h)| Some((l.trim().parse().ok()?, h.trim().parse().ok()?)))
            .filter(|(l, h): &(usize, usize)| l <= h)
            .ok_or_else(|| format!("invalid fuzziness {fuzziness:?}: expected AUTO:low,high"))?;
        return Ok(auto(low, high));
    }
    match fuzziness.parse::<f32>() {
        Ok(v) if v >= 0.0 && v.fract() == 0.0 && v <= FUZZY_MAX_EDITS as f32 => Ok(v as u32),
        _ => Err(format!(
            "invalid fuzziness {fuzziness:?}: expected 0, 1, 2, AUTO or AUTO:low,high"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    fn word() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![5 => 97u32..101, 1 => 0xe0u32..0xe3], 0..7)
            .prop_map(|v| v.into_iter().filter_map(char::from_u32).collect())
    }

    /// The keys (and values) `fst`'s own stream finds.
    fn streamed<A: fst::Automaton>(map: &fst::Map<Vec<u8>>, aut: A) -> Vec<(Vec<u8>, u64)> {
        use fst::{IntoStreamer, Streamer};
        let mut out = Vec::new();
        let mut s = map.search(aut).into_stream();
        while let Some((k, v)) = s.next() {
            out.push((k.to_vec(), v));
        }
        out
    }

    fn walked<A: LiteralByte>(map: &fst::Map<Vec<u8>>, aut: A) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        walk(map, aut, &mut |k, v| {
            out.push((k.to_vec(), v));
            Ok(())
        })
        .unwrap();
        out
    }

    proptest! {
        /// The walk finds what `fst`'s stream finds, in the same order, for Levenshtein DFAs and
        /// wildcard automata (the empty key included).
        #[test]
        fn walk_is_the_stream(
            terms in proptest::collection::btree_set(word(), 0..80),
            term in word(),
            max_edits in 0u32..3,
            transpositions in any::<bool>(),
            pattern in proptest::collection::vec(
                prop_oneof![4 => (97u8..101).prop_map(|b| (b as char).to_string()),
                            1 => Just("*".to_string()), 1 => Just("?".to_string())], 0..5)
                .prop_map(|v| v.concat()),
        ) {
            let map = fst::Map::from_iter(terms.iter().enumerate().map(|(i, t)| (t, i as u64 * 7)))
                .unwrap();
            let dfa = LevDfa::new(&term, max_edits, transpositions);
            prop_assert_eq!(walked(&map, &dfa), streamed(&map, &dfa));
            let nfa = crate::search::automaton::wildcard(&pattern).unwrap();
            prop_assert_eq!(
                walked(&map, crate::search::automaton::LazyDfa::new(&nfa)),
                streamed(&map, Utf8(&nfa))
            );
            // The bit-set twin, with the literal-byte lookups of the walk.
            let bits = crate::search::automaton::BitNfa::new(&nfa).unwrap();
            prop_assert_eq!(walked(&map, Utf8(&bits)), streamed(&map, Utf8(&nfa)));
            let lev = Utf8(Levenshtein::new(&term, max_edits, 2, transpositions));
            prop_assert_eq!(walked(&map, &lev), streamed(&map, &lev));
        }
    }

    #[test]
    fn lucene_similarity() {
        let q: Vec<char> = "roam".chars().collect();
        assert_eq!(similarity(&q, 0, "roam", true), 1.0);
        assert_eq!(similarity(&q, 0, "foam", true), 0.75);
        assert_eq!(similarity(&q, 0, "rom", true), 1.0 - 1.0 / 3.0);
        assert_eq!(similarity(&q, 0, "raom", true), 0.75);
        assert_eq!(similarity(&q, 0, "raom", false), 0.5);
    }

    #[test]
    fn auto_fuzziness() {
        assert_eq!(fuzziness_edits("AUTO", "ab"), Ok(0));
        assert_eq!(fuzziness_edits("AUTO", "abc"), Ok(1));
        assert_eq!(fuzziness_edits("auto", "abcde"), Ok(1));
        assert_eq!(fuzziness_edits("AUTO", "abcdef"), Ok(2));
        assert_eq!(fuzziness_edits("AUTO:2,4", "ab"), Ok(1));
        assert_eq!(fuzziness_edits("1", "ab"), Ok(1));
        assert_eq!(fuzziness_edits("2.0", "ab"), Ok(2));
        assert!(fuzziness_edits("3", "ab").is_err());
        assert!(fuzziness_edits("AUTO:x", "ab").is_err());
        assert!(fuzziness_edits("0.5", "ab").is_err());
    }
}
