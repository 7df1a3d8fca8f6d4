//! Which stretches of a text match a query? The query's highlightable leaves (terms, phrases
//! with slop, prefixes, text ranges) grouped by field, matched against the text re-analyzed with
//! the field's analyzer (Lucene's `ANALYSIS` offset source).

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::FxHashSet;

use crate::analysis::Analyzer;
use crate::query::{Occur, Query};

/// A phrase of a query: its terms by position in the phrase, and its slop.
#[derive(Debug, Clone, PartialEq)]
struct Phrase {
    /// Distinct positions in ascending order, each with the terms that may stand there.
    slots: Vec<(u32, Vec<String>)>,
    /// The last slot's terms are prefixes (`match_phrase_prefix`): any word starting with one
    /// stands there, as Elasticsearch's highlighter matches the phrase's last word against the
    /// document's own words rather than the index-wide expansions the search ran with.
    prefix_last: bool,
    slop: u32,
    /// The phrase as the query renders it: its match "term" for passage scoring.
    key: String,
}

/// A text range `[lower, upper]` of a `range` query on a text or keyword field.
#[derive(Debug, Clone, PartialEq)]
struct TextRange {
    lower: Option<String>,
    upper: Option<String>,
    include_lower: bool,
    include_upper: bool,
}

impl TextRange {
    fn contains(&self, term: &str) -> bool {
        let above = match &self.lower {
            None => true,
            Some(l) if self.include_lower => term >= l.as_str(),
            Some(l) => term > l.as_str(),
        };
        let below = match &self.upper {
            None => true,
            Some(u) if self.include_upper => term <= u.as_str(),
            Some(u) => term < u.as_str(),
        };
        above && below
    }
}

/// The highlightable parts of a query on one field (or on every field, when field matches are
/// not required).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldQuery {
    /// Looked up once per token of every highlighted text: a fast hash.
    terms: FxHashSet<String>,
    prefixes: Vec<String>,
    ranges: Vec<TextRange>,
    phrases: Vec<Phrase>,
    /// Wildcard, regexp and fuzzy queries: the words they accept.
    patterns: Vec<TermPattern>,
}

/// The words a multi-term query accepts, checked per token. Fuzzy marks every word within its
/// distance (not only the `max_expansions` closest terms of the dictionary that it scored).
#[derive(Debug, Clone)]
pub(crate) enum TermPattern {
    Automaton {
        source: String,
        nfa: std::sync::Arc<crate::search::automaton::Nfa>,
    },
    Fuzzy {
        term: Vec<char>,
        max_edits: u32,
        prefix_length: u32,
        transpositions: bool,
    },
}

impl PartialEq for TermPattern {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                TermPattern::Automaton { source: a, .. },
                TermPattern::Automaton { source: b, .. },
            ) => a == b,
            (
                TermPattern::Fuzzy {
                    term: a,
                    max_edits: e,
                    prefix_length: p,
                    transpositions: t,
                },
                TermPattern::Fuzzy {
                    term: b,
                    max_edits: f,
                    prefix_length: q,
                    transpositions: u,
                },
            ) => a == b && e == f && p == q && t == u,
            _ => false,
        }
    }
}

impl TermPattern {
    fn matches(&self, word: &str) -> bool {
        match self {
            TermPattern::Automaton { nfa, .. } => nfa.matches(word),
            TermPattern::Fuzzy {
                term,
                max_edits,
                prefix_length,
                transpositions,
            } => {
                let chars: Vec<char> = word.chars().collect();
                let p = *prefix_length as usize;
                chars.len().abs_diff(term.len()) <= *max_edits as usize
                    && chars.len() >= p.min(term.len())
                    && chars[..p.min(chars.len())] == term[..p.min(term.len())]
                    && crate::search::automaton::osa_distance(&chars, term, *transpositions)
                        <= *max_edits as usize
            }
        }
    }
}

impl FieldQuery {
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
            && self.prefixes.is_empty()
            && self.ranges.is_empty()
            && self.phrases.is_empty()
            && self.patterns.is_empty()
    }

    fn merge(&mut self, other: &FieldQuery) {
        self.terms.extend(other.terms.iter().cloned());
        self.prefixes.extend(other.prefixes.iter().cloned());
        self.ranges.extend(other.ranges.iter().cloned());
        self.phrases.extend(other.phrases.iter().cloned());
        self.patterns.extend(other.patterns.iter().cloned());
    }
}

/// A query's highlightable parts by field, plus their union over all fields.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueryTerms {
    by_field: HashMap<String, FieldQuery>,
    any_field: FieldQuery,
}

impl QueryTerms {
    /// Collects what `query` can highlight. Must-not clauses are left out (their terms are
    /// not what the hit matched); match-all and numeric ranges highlight nothing; an empty
    /// prefix (how `exists` is expressed) is left out too, as Elasticsearch does not
    /// highlight `exists`.
    pub(crate) fn of(query: &Query) -> Self {
        let mut by_field: HashMap<String, FieldQuery> = HashMap::new();
        collect(query, &mut by_field);
        let mut any_field = FieldQuery::default();
        for fq in by_field.values() {
            any_field.merge(fq);
        }
        QueryTerms {
            by_field,
            any_field,
        }
    }

    /// What highlights `field`: its own parts, or with `require_field_match` false the parts of
    /// every field.
    pub(crate) fn for_field(&self, field: &str, require_field_match: bool) -> Option<&FieldQuery> {
        let fq = if require_field_match {
            self.by_field.get(field)?
        } else {
            &self.any_field
        };
        (!fq.is_empty()).then_some(fq)
    }
}

fn collect(query: &Query, out: &mut HashMap<String, FieldQuery>) {
    match query {
        Query::Term { field, term } => {
            out.entry(field.clone())
                .or_default()
                .terms
                .insert(term.clone());
        }
        Query::Phrase { field, terms, slop } => {
            let mut slots: Vec<(u32, Vec<String>)> = Vec::new();
            for (pos, term) in terms {
                match slots.iter_mut().find(|(p, _)| p == pos) {
                    Some((_, ts)) => ts.push(term.clone()),
                    None => slots.push((*pos, vec![term.clone()])),
                }
            }
            add_phrase(query, field, slots, *slop, false, out);
        }
        Query::MultiPhrase { field, terms, slop } => {
            add_phrase(query, field, terms.clone(), *slop, false, out);
        }
        Query::PhrasePrefix {
            field, terms, slop, ..
        } => {
            add_phrase(query, field, terms.clone(), *slop, true, out);
        }
        Query::Prefix { field, prefix } if !prefix.is_empty() => {
            out.entry(field.clone())
                .or_default()
                .prefixes
                .push(prefix.clone());
        }
        Query::Range {
            field,
            lower,
            upper,
            include_lower,
            include_upper,
            ..
        } => {
            // Which fields are text is known only with the schema: `Highlighter` ignores
            // ranges of fields it does not highlight (numbers and dates are never highlighted).
            out.entry(field.clone())
                .or_default()
                .ranges
                .push(TextRange {
                    lower: lower.clone(),
                    upper: upper.clone(),
                    include_lower: *include_lower,
                    include_upper: *include_upper,
                });
        }
        Query::Boolean { clauses, .. } => {
            for c in clauses.iter().filter(|c| c.occur != Occur::MustNot) {
                collect(&c.query, out);
            }
        }
        Query::Boost { query, .. } | Query::ConstantScore { query } => collect(query, out),
        Query::DisMax { queries, .. } => queries.iter().for_each(|q| collect(q, out)),
        // The negative query only demotes: its words are not what the hit matched.
        Query::Boosting { positive, .. } => collect(positive, out),
        Query::Wildcard { field, pattern } | Query::Regexp { field, pattern } => {
            let nfa = match query {
                Query::Wildcard { .. } => crate::search::automaton::wildcard(pattern),
                _ => crate::search::automaton::regexp::compile(pattern),
            };
            // A pattern that does not compile matched nothing (the search refused it).
            if let Ok(nfa) = nfa {
                out.entry(field.clone())
                    .or_default()
                    .patterns
                    .push(TermPattern::Automaton {
                        source: query.to_string(),
                        nfa: std::sync::Arc::new(nfa),
                    });
            }
        }
        Query::Fuzzy {
            field,
            term,
            max_edits,
            prefix_length,
            transpositions,
            ..
        } => {
            out.entry(field.clone())
                .or_default()
                .patterns
                .push(TermPattern::Fuzzy {
                    term: term.chars().collect(),
                    max_edits: *max_edits,
                    prefix_length: *prefix_length,
                    transpositions: *transpositions,
                });
        }
        Query::Prefix { .. } | Query::MatchAll | Query::MatchNone => {}
    }
}

/// Adds a phrase with `slots` (terms by position; prefixes in the last when `prefix_last`):
/// a one-position phrase is its terms (or prefixes), a longer one a [`Phrase`].
fn add_phrase(
    query: &Query,
    field: &str,
    mut slots: Vec<(u32, Vec<String>)>,
    slop: u32,
    prefix_last: bool,
    out: &mut HashMap<String, FieldQuery>,
) {
    slots.retain(|(_, ts)| !ts.is_empty());
    slots.sort_by_key(|(p, _)| *p);
    let fq = out.entry(field.to_string()).or_default();
    match slots.len() {
        0 => {}
        1 if prefix_last => fq
            .prefixes
            .extend(slots.remove(0).1.into_iter().filter(|p| !p.is_empty())),
        1 => fq.terms.extend(slots.remove(0).1),
        _ => fq.phrases.push(Phrase {
            slots,
            prefix_last,
            slop,
            key: query.to_string(),
        }),
    }
}

/// One highlighted stretch of a text: byte offsets and the "term" it counts as when passages
/// are scored (the term itself, the word a prefix or range matched, or the whole phrase). A
/// query's own term or phrase is borrowed from the query: a frequent term matches many times
/// per hit, and copying it each time was a tenth of the matcher's time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Match<'q> {
    pub start: usize,
    pub end: usize,
    pub key: Cow<'q, str>,
}

/// How a text is tokenized for matching: a text field's analyzer, or a keyword's whole value.
#[derive(Clone, Copy)]
pub(crate) enum Tokenizer<'a> {
    Analyzed(&'a dyn Analyzer),
    Whole,
}

/// The matches of `fq` in `text` (whose bytes start at `base` of the field's content), sorted
/// by start. A phrase contributes the occurrences that match it, as one stretch from its first
/// to its last word when `phrase_as_one` (Lucene's weight matches), else word by word.
pub(crate) fn find_matches<'q>(
    fq: &'q FieldQuery,
    text: &str,
    base: usize,
    tokenizer: Tokenizer<'_>,
    phrase_as_one: bool,
    out: &mut Vec<Match<'q>>,
) {
    let first = out.len();
    // Only terms: the analyzer may find them without tokenizing the whole text.
    if let Tokenizer::Analyzed(a) = tokenizer {
        if fq.prefixes.is_empty()
            && fq.ranges.is_empty()
            && fq.phrases.is_empty()
            && fq.patterns.is_empty()
        {
            let terms: Vec<&'q str> = fq.terms.iter().map(String::as_str).collect();
            let found = a.find_terms(text, &terms, &mut |t, s, e| {
                out.push(Match {
                    start: base + s,
                    end: base + e,
                    key: Cow::Borrowed(terms[t]),
                })
            });
            if found {
                out[first..].sort();
                return;
            }
        }
    }
    // Positions of each phrase slot's terms, per phrase.
    let mut slot_positions: Vec<Vec<Vec<u32>>> = fq
        .phrases
        .iter()
        .map(|p| vec![Vec::new(); p.slots.len()])
        .collect();
    // Token offsets by position: only phrases need them.
    let mut offsets: Vec<(usize, usize)> = Vec::new();
    let has_phrases = !fq.phrases.is_empty();
    let mut on_token = |term: &str, s: usize, e: usize| {
        let pos = offsets.len() as u32;
        if has_phrases {
            offsets.push((base + s, base + e));
        }
        let key = if let Some(t) = fq.terms.get(term) {
            Some(Cow::Borrowed(t.as_str()))
        } else if fq.prefixes.iter().any(|p| term.starts_with(p.as_str()))
            || fq.ranges.iter().any(|r| r.contains(term))
            || fq.patterns.iter().any(|p| p.matches(term))
        {
            Some(Cow::Owned(term.to_string()))
        } else {
            None
        };
        if let Some(key) = key {
            out.push(Match {
                start: base + s,
                end: base + e,
                key,
            });
        }
        if !has_phrases {
            return;
        }
        for (p, slots) in fq.phrases.iter().zip(slot_positions.iter_mut()) {
            let last = p.slots.len() - 1;
            for (i, ((_, terms), list)) in p.slots.iter().zip(slots.iter_mut()).enumerate() {
                let stands = if p.prefix_last && i == last {
                    terms.iter().any(|t| term.starts_with(t.as_str()))
                } else {
                    terms.iter().any(|t| t == term)
                };
                if stands {
                    list.push(pos);
                }
            }
        }
    };
    match tokenizer {
        Tokenizer::Analyzed(a) => a.for_each_token_with_offsets(text, &mut on_token),
        Tokenizer::Whole => on_token(text, 0, text.len()),
    }
    for (p, slots) in fq.phrases.iter().zip(&slot_positions) {
        for occurrence in phrase_occurrences(p, slots) {
            if phrase_as_one {
                let (s, _) =
                    offsets[*occurrence.iter().min().expect("a phrase has words") as usize];
                let (_, e) =
                    offsets[*occurrence.iter().max().expect("a phrase has words") as usize];
                out.push(Match {
                    start: s,
                    end: e,
                    key: Cow::Borrowed(&p.key),
                });
            } else {
                for pos in occurrence {
                    let (s, e) = offsets[pos as usize];
                    out.push(Match {
                        start: s,
                        end: e,
                        key: Cow::Borrowed(&p.key),
                    });
                }
            }
        }
    }
    out[first..].sort();
    let mut kept = first;
    for i in first..out.len() {
        // The same stretch matched twice (a term also inside a phrase) is one match.
        if kept > first && out[kept - 1].start == out[i].start && out[kept - 1].end == out[i].end {
            continue;
        }
        out.swap(kept, i);
        kept += 1;
    }
    out.truncate(kept);
}

/// The occurrences of a phrase (the position of each of its slots) given where each slot's
/// terms stand, as Lucene's phrase matchers find them. Exact phrases need every slot at its
/// offset from the first. A sloppy phrase matches where the spread of
/// `position - offset in the phrase` over its slots is at most `slop`: the slots walk their
/// positions together, the lowest one first, each window tightened as far as it goes before it
/// is checked (Lucene's `SloppyPhraseMatcher`, without its special case for repeated terms:
/// an occurrence that would use one word twice is skipped).
fn phrase_occurrences(p: &Phrase, slots: &[Vec<u32>]) -> Vec<Vec<u32>> {
    if slots.iter().any(Vec::is_empty) {
        return Vec::new();
    }
    let offs: Vec<i64> = p.slots.iter().map(|(o, _)| i64::from(*o)).collect();
    let mut found: Vec<Vec<u32>> = Vec::new();
    if p.slop == 0 {
        for &p0 in &slots[0] {
            let anchor = i64::from(p0) - offs[0];
            let occ: Option<Vec<u32>> = slots
                .iter()
                .zip(&offs)
                .map(|(list, &o)| {
                    let want = u32::try_from(anchor + o).ok()?;
                    list.binary_search(&want).ok().map(|_| want)
                })
                .collect();
            found.extend(occ);
        }
        return found;
    }
    let slop = i64::from(p.slop);
    let n = slots.len();
    let mut cur = vec![0usize; n];
    let rel = |i: usize, c: usize| i64::from(slots[i][c]) - offs[i];
    loop {
        // The slot standing lowest, and the next lowest relative position after it.
        let mut lo = 0;
        for i in 1..n {
            if rel(i, cur[i]) < rel(lo, cur[lo]) {
                lo = i;
            }
        }
        let next = (0..n)
            .filter(|&i| i != lo)
            .map(|i| rel(i, cur[i]))
            .min()
            .unwrap_or(i64::MAX);
        while cur[lo] + 1 < slots[lo].len() && rel(lo, cur[lo] + 1) <= next {
            cur[lo] += 1;
        }
        let rels: Vec<i64> = (0..n).map(|i| rel(i, cur[i])).collect();
        let spread = rels.iter().max().unwrap_or(&0) - rels.iter().min().unwrap_or(&0);
        if spread <= slop {
            let occ: Vec<u32> = (0..n).map(|i| slots[i][cur[i]]).collect();
            let distinct = occ.iter().enumerate().all(|(i, q)| !occ[..i].contains(q));
            if distinct && !found.contains(&occ) {
                found.push(occ);
            }
        }
        // Move on from the lowest slot (again the lowest after tightening).
        let mut lo = 0;
        for i in 1..n {
            if rel(i, cur[i]) < rel(lo, cur[lo]) {
                lo = i;
            }
        }
        cur[lo] += 1;
        if cur[lo] == slots[lo].len() {
            return found;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::StandardAnalyzer;
    use crate::query::Clause;

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

    fn spans<'t>(q: &Query, text: &'t str, as_one: bool) -> Vec<&'t str> {
        let qt = QueryTerms::of(q);
        let Some(fq) = qt.for_field("body", true) else {
            return Vec::new();
        };
        let a = StandardAnalyzer::new();
        let mut out = Vec::new();
        find_matches(fq, text, 0, Tokenizer::Analyzed(&a), as_one, &mut out);
        let spans: Vec<(usize, usize)> = out.iter().map(|m| (m.start, m.end)).collect();
        spans.into_iter().map(|(s, e)| &text[s..e]).collect()
    }

    #[test]
    fn terms_prefixes_and_ranges() {
        let text = "Oil prices rose; oilseed and OIL. Prices fell.";
        assert_eq!(
            spans(&Query::term("body", "oil"), text, true),
            ["Oil", "OIL"]
        );
        let prefix = Query::Prefix {
            field: "body".into(),
            prefix: "oil".into(),
        };
        assert_eq!(spans(&prefix, text, true), ["Oil", "oilseed", "OIL"]);
        let range = Query::range("body", Some("p"), Some("rose"), true, true);
        assert_eq!(spans(&range, text, true), ["prices", "rose", "Prices"]);
        let exclusive = Query::range("body", Some("prices"), Some("rose"), false, false);
        assert!(spans(&exclusive, text, true).is_empty());
        // Another field's term does not highlight this one.
        assert!(spans(&Query::term("title", "oil"), text, true).is_empty());
    }

    #[test]
    fn a_phrase_marks_only_its_occurrences() {
        let text = "Prices of oil: oil prices fell, prices oil";
        let exact = phrase(&["oil", "prices"], 0);
        assert_eq!(spans(&exact, text, true), ["oil prices"]);
        assert_eq!(spans(&exact, text, false), ["oil", "prices"]);
        // One word between costs 1; a swap costs 2 (Lucene's sloppy phrase distance).
        let text = "oil and prices. prices oil";
        assert_eq!(
            spans(&phrase(&["oil", "prices"], 1), text, true),
            ["oil and prices"]
        );
        assert_eq!(
            spans(&phrase(&["oil", "prices"], 2), text, true),
            ["oil and prices", "prices oil"]
        );
        let text = "oil prices fell; oil fell";
        assert_eq!(
            spans(&phrase(&["oil", "fell"], 1), text, true),
            ["oil prices fell", "oil fell"]
        );
        assert_eq!(
            spans(&phrase(&["oil", "fell"], 0), text, true),
            ["oil fell"]
        );
        assert!(spans(&phrase(&["oil", "rose"], 3), text, true).is_empty());
    }

    #[test]
    fn multi_phrases_and_phrase_prefixes() {
        let slots = |words: &[&[&str]]| -> Vec<(u32, Vec<String>)> {
            words
                .iter()
                .enumerate()
                .map(|(i, ws)| (i as u32, ws.iter().map(|w| w.to_string()).collect()))
                .collect()
        };
        let text = "Crude oil prices rose; oil price caps. Palm oil prices, oil and prices.";
        let multi = Query::MultiPhrase {
            field: "body".into(),
            terms: slots(&[&["oil"], &["prices", "price"]]),
            slop: 0,
        };
        assert_eq!(
            spans(&multi, text, true),
            ["oil prices", "oil price", "oil prices"]
        );
        assert_eq!(
            spans(&multi, text, false),
            ["oil", "prices", "oil", "price", "oil", "prices"]
        );
        // The last position is a prefix: every word starting with it, only inside the phrase.
        let prefix = |terms: Vec<(u32, Vec<String>)>, slop: u32| Query::PhrasePrefix {
            field: "body".into(),
            terms,
            slop,
            max_expansions: 50,
        };
        assert_eq!(
            spans(&prefix(slots(&[&["oil"], &["pri"]]), 0), text, true),
            ["oil prices", "oil price", "oil prices"]
        );
        assert_eq!(
            spans(&prefix(slots(&[&["oil"], &["pri"]]), 1), text, true),
            ["oil prices", "oil price", "oil prices", "oil and prices"]
        );
        assert_eq!(
            spans(
                &prefix(slots(&[&["palm"], &["oil"], &["pr"]]), 0),
                text,
                true
            ),
            ["Palm oil prices"]
        );
        // One position: the prefixes alone; an empty prefix highlights nothing.
        assert_eq!(spans(&prefix(slots(&[&["cru"]]), 0), text, true), ["Crude"]);
        assert!(spans(&prefix(slots(&[&[""]]), 0), text, true).is_empty());
    }

    #[test]
    fn must_not_clauses_and_boosts() {
        let q = Query::boolean(vec![
            Clause::new(Occur::Must, Query::boosted(Query::term("body", "oil"), 2.0)),
            Clause::new(Occur::Filter, Query::term("body", "fell")),
            Clause::new(Occur::MustNot, Query::term("body", "prices")),
        ]);
        assert_eq!(spans(&q, "oil prices fell", true), ["oil", "fell"]);
        // A term inside a matched phrase is one match, not two.
        let q = Query::boolean(vec![
            Clause::new(Occur::Should, Query::term("body", "oil")),
            Clause::new(Occur::Should, phrase(&["oil", "prices"], 0)),
        ]);
        assert_eq!(spans(&q, "oil prices", false), ["oil", "prices"]);
    }

    #[test]
    fn any_field_when_field_match_is_not_required() {
        let qt = QueryTerms::of(&Query::term("title", "oil"));
        assert!(qt.for_field("body", true).is_none());
        assert!(qt.for_field("body", false).is_some());
        let exists = Query::Prefix {
            field: "body".into(),
            prefix: String::new(),
        };
        assert!(QueryTerms::of(&exists).for_field("body", true).is_none());
    }
}
