//! What a parsed query means: Lucene's query model (term, phrase, multi-phrase, phrase prefix,
//! prefix, wildcard, regexp, fuzzy, range, boolean, boost, constant score, dis-max, match-all)
//! and its exact `Query.toString()` rendering.
//!
//! The shapes mirror the Lucene classes the classic `QueryParser` builds (`TermQuery`,
//! `PhraseQuery`, `PrefixQuery`, `WildcardQuery`, `RegexpQuery`, `FuzzyQuery`,
//! `TermRangeQuery`, `BooleanQuery`, `BoostQuery`, `MatchAllDocsQuery`, `MatchNoDocsQuery`),
//! plus `ConstantScoreQuery`, `DisjunctionMaxQuery` and `FunctionScoreQuery.boostByQuery`, and [`Display`](std::fmt::Display) renders them exactly like Lucene's
//! `Query.toString()`, which is `toString("")`: every term carries its field. Use
//! [`Query::to_string_with_field`] for Lucene's `toString(field)`, which omits that field.

use std::fmt;

/// A query after parsing, in Lucene's model.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// Documents whose `field` contains `term` (Lucene `TermQuery`).
    Term {
        /// The field searched.
        field: String,
        /// The term, already analyzed.
        term: String,
    },
    /// Documents whose `field` contains the terms at the given relative positions, within
    /// `slop` moves (Lucene `PhraseQuery`). Positions are ascending; a gap renders as `?`.
    Phrase {
        /// The field searched.
        field: String,
        /// `(position, term)` pairs in ascending position order.
        terms: Vec<(u32, String)>,
        /// Allowed edit distance between positions (0 = exact phrase).
        slop: u32,
    },
    /// Documents whose `field` holds, at the given relative positions, one of each position's
    /// terms, within `slop` moves (Lucene `MultiPhraseQuery`). Scored as a phrase whose
    /// similarity sums the idf of every term of every position; one position is a disjunction
    /// of its terms (Lucene rewrites it so).
    MultiPhrase {
        /// The field searched.
        field: String,
        /// `(position, terms)` in ascending position order; each list is non-empty.
        terms: Vec<(u32, Vec<String>)>,
        /// Allowed edit distance between positions (0 = exact phrase).
        slop: u32,
    },
    /// A phrase whose last position holds every term of the index starting with one of its
    /// terms (Elasticsearch's `match_phrase_prefix`, its `MultiPhrasePrefixQuery`): when the
    /// query runs, the last position's prefixes expand, segment after segment and in term
    /// order within each, to at most `max_expansions` distinct terms; the query is then the
    /// [`Query::MultiPhrase`] of those (no expansion: nothing matches).
    PhrasePrefix {
        /// The field searched.
        field: String,
        /// `(position, terms)` in ascending position order; the last entry's terms are the
        /// prefixes.
        terms: Vec<(u32, Vec<String>)>,
        /// Allowed edit distance between positions (0 = exact phrase).
        slop: u32,
        /// At most this many expansions of the last position (Elasticsearch's default 50).
        max_expansions: u32,
    },
    /// Documents whose `field` contains a term starting with `prefix` (Lucene `PrefixQuery`,
    /// constant score: Lucene's default rewrite for the query parser).
    Prefix {
        /// The field searched.
        field: String,
        /// The normalized prefix, without the trailing `*`.
        prefix: String,
    },
    /// Documents whose `field` has a value between `lower` and `upper` (Lucene `TermRangeQuery`
    /// on text and keyword fields, `IntPoint`/`LongPoint`/`DoublePoint` range queries on numeric
    /// and date fields; constant score). Bounds are the text as written (numbers and dates are
    /// interpreted by the field's type when the query runs); `None` is an open end (`*`).
    Range {
        /// The field searched.
        field: String,
        /// The lower bound (normalized for text fields), or `None` for no lower bound.
        lower: Option<String>,
        /// The upper bound (normalized for text fields), or `None` for no upper bound.
        upper: Option<String>,
        /// Whether a value equal to `lower` matches (`[`) or not (`{`).
        include_lower: bool,
        /// Whether a value equal to `upper` matches (`]`) or not (`}`).
        include_upper: bool,
        /// Date fields: the format the bounds are written in, instead of the field's
        /// (Elasticsearch's `format` of a `range` query; not part of the Lucene rendering).
        format: Option<String>,
        /// Date fields: the time zone of bounds without an offset, and of rounding
        /// (Elasticsearch's `time_zone`; UTC when `None`).
        time_zone: Option<String>,
    },
    /// A boolean combination of clauses (Lucene `BooleanQuery`).
    Boolean {
        /// The clauses, in query order.
        clauses: Vec<Clause>,
        /// How many SHOULD clauses must match (0: Lucene's default rule).
        minimum_should_match: u32,
    },
    /// `query` with its score multiplied by `boost` (Lucene `BoostQuery`).
    Boost {
        /// The boosted query.
        query: Box<Query>,
        /// A finite, non-negative factor.
        boost: f32,
    },
    /// Documents whose `field` holds a term matching `pattern`, where `*` is any string, `?` any
    /// one character and `\\` escapes the next character (Lucene `WildcardQuery`, constant score).
    Wildcard {
        /// The field searched.
        field: String,
        /// The pattern, normalized (wildcards and escapes kept as written).
        pattern: String,
    },
    /// Documents whose `field` holds a term matching the regular expression `pattern` in
    /// Lucene's `RegExp` syntax, anchored at both ends (Lucene `RegexpQuery`, constant score).
    Regexp {
        /// The field searched.
        field: String,
        /// The expression, without the enclosing `/`.
        pattern: String,
    },
    /// Documents whose `field` holds a term within `max_edits` edits of `term` (Lucene
    /// `FuzzyQuery`): the `max_expansions` most similar terms, scored as one blended term.
    Fuzzy {
        /// The field searched.
        field: String,
        /// The term, already normalized.
        term: String,
        /// 0, 1 or 2 (Lucene's `LevenshteinAutomata.MAXIMUM_SUPPORTED_DISTANCE`).
        max_edits: u32,
        /// How many leading characters must match exactly.
        prefix_length: u32,
        /// At most this many terms are searched (Lucene's default 50).
        max_expansions: u32,
        /// Whether swapping two adjacent characters is one edit (Lucene's default) or two.
        transpositions: bool,
    },
    /// `query`'s matches, each scored 1 (times the enclosing boosts) (Lucene
    /// `ConstantScoreQuery`).
    ConstantScore {
        /// The query whose matches are taken.
        query: Box<Query>,
    },
    /// Documents matching any of `queries`, scored by the best one plus `tie_breaker` times the
    /// others (Lucene `DisjunctionMaxQuery`).
    DisMax {
        /// The disjuncts.
        queries: Vec<Query>,
        /// In `[0, 1]`: 0 takes the best score only, 1 sums them.
        tie_breaker: f32,
    },
    /// `positive`'s matches and scores, the scores of those that also match `negative`
    /// multiplied by `negative_boost` (Elasticsearch's `boosting`, Lucene's
    /// `FunctionScoreQuery.boostByQuery`).
    Boosting {
        /// What matches and scores.
        positive: Box<Query>,
        /// What demotes.
        negative: Box<Query>,
        /// The factor for documents matching `negative`, in `[0, 1]` in practice.
        negative_boost: f32,
    },
    /// Every document (Lucene `MatchAllDocsQuery`, written `*:*`).
    MatchAll,
    /// No document (Lucene `MatchNoDocsQuery`). The parser never produces it: a query whose
    /// every word analyzes away is an empty [`Query::Boolean`], as in Lucene.
    MatchNone,
}

/// Lucene's `FuzzyQuery.defaultMaxExpansions`.
pub const FUZZY_MAX_EXPANSIONS: u32 = 50;
/// Lucene's `LevenshteinAutomata.MAXIMUM_SUPPORTED_DISTANCE`.
pub const FUZZY_MAX_EDITS: u32 = 2;
/// Elasticsearch's default `max_expansions` of `match_phrase_prefix`.
pub const PHRASE_PREFIX_MAX_EXPANSIONS: u32 = 50;

/// One clause of a [`Query::Boolean`].
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    /// How the clause takes part in matching and scoring.
    pub occur: Occur,
    /// The clause's query.
    pub query: Query,
}

/// How a boolean clause occurs (Lucene `BooleanClause.Occur`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Occur {
    /// Must match, and scores (`+`).
    Must,
    /// May match; scores when it does (no prefix).
    Should,
    /// Must not match (`-`).
    MustNot,
    /// Must match, does not score (`#`; never produced by the parser).
    Filter,
}

impl Occur {
    /// The prefix Lucene's `Occur.toString()` writes before a clause.
    pub fn symbol(self) -> &'static str {
        match self {
            Occur::Must => "+",
            Occur::Should => "",
            Occur::MustNot => "-",
            Occur::Filter => "#",
        }
    }
}

impl Clause {
    /// A clause with the given occur.
    pub fn new(occur: Occur, query: Query) -> Self {
        Clause { occur, query }
    }
}

impl Query {
    /// A term query.
    pub fn term(field: impl Into<String>, term: impl Into<String>) -> Self {
        Query::Term {
            field: field.into(),
            term: term.into(),
        }
    }

    /// A range query; `None` bounds are open ends.
    pub fn range(
        field: impl Into<String>,
        lower: Option<&str>,
        upper: Option<&str>,
        include_lower: bool,
        include_upper: bool,
    ) -> Self {
        Query::Range {
            field: field.into(),
            lower: lower.map(str::to_string),
            upper: upper.map(str::to_string),
            include_lower,
            include_upper,
            format: None,
            time_zone: None,
        }
    }

    /// A boolean query with `minimum_should_match` 0.
    pub fn boolean(clauses: Vec<Clause>) -> Self {
        Query::Boolean {
            clauses,
            minimum_should_match: 0,
        }
    }

    /// A boosted query.
    pub fn boosted(query: Query, boost: f32) -> Self {
        Query::Boost {
            query: Box::new(query),
            boost,
        }
    }

    /// A fuzzy query with Lucene's defaults: no fixed prefix, 50 expansions, transpositions.
    pub fn fuzzy(field: impl Into<String>, term: impl Into<String>, max_edits: u32) -> Self {
        Query::Fuzzy {
            field: field.into(),
            term: term.into(),
            max_edits,
            prefix_length: 0,
            max_expansions: FUZZY_MAX_EXPANSIONS,
            transpositions: true,
        }
    }

    /// True for a boolean query without clauses (what Lucene's parser returns when every
    /// word of the query analyzed away; it matches nothing).
    pub fn is_empty_boolean(&self) -> bool {
        matches!(self, Query::Boolean { clauses, .. } if clauses.is_empty())
    }

    /// Lucene's `Query.toString(field)`: like [`Display`](fmt::Display), but terms in `field`
    /// are written without their `field:` prefix.
    pub fn to_string_with_field(&self, field: &str) -> String {
        let mut out = String::new();
        self.render(field, &mut out);
        out
    }

    fn render(&self, default_field: &str, out: &mut String) {
        match self {
            Query::Term { field, term } => {
                push_field(out, field, default_field);
                out.push_str(term);
            }
            Query::Phrase { field, terms, slop } => {
                push_field(out, field, default_field);
                render_phrase(out, terms);
                if *slop != 0 {
                    out.push('~');
                    out.push_str(&slop.to_string());
                }
            }
            Query::MultiPhrase { field, terms, slop } => {
                push_field(out, field, default_field);
                render_multi_phrase(out, terms);
                push_slop(out, *slop);
            }
            Query::PhrasePrefix {
                field, terms, slop, ..
            } => {
                push_field(out, field, default_field);
                render_phrase_prefix(out, terms);
                push_slop(out, *slop);
            }
            Query::Prefix { field, prefix } => {
                push_field(out, field, default_field);
                out.push_str(prefix);
                out.push('*');
            }
            Query::Range {
                field,
                lower,
                upper,
                include_lower,
                include_upper,
                ..
            } => {
                // Lucene's `TermRangeQuery.toString`: an open end is `*`, a bound that is
                // exactly `*` is written `\*`; nothing else is escaped.
                push_field(out, field, default_field);
                out.push(if *include_lower { '[' } else { '{' });
                push_range_bound(out, lower.as_deref());
                out.push_str(" TO ");
                push_range_bound(out, upper.as_deref());
                out.push(if *include_upper { ']' } else { '}' });
            }
            Query::Boolean {
                clauses,
                minimum_should_match,
            } => {
                let parens = *minimum_should_match > 0;
                if parens {
                    out.push('(');
                }
                for (i, clause) in clauses.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(clause.occur.symbol());
                    if matches!(clause.query, Query::Boolean { .. }) {
                        out.push('(');
                        clause.query.render(default_field, out);
                        out.push(')');
                    } else {
                        clause.query.render(default_field, out);
                    }
                }
                if parens {
                    out.push(')');
                    out.push('~');
                    out.push_str(&minimum_should_match.to_string());
                }
            }
            Query::Boost { query, boost } => {
                out.push('(');
                query.render(default_field, out);
                out.push_str(")^");
                out.push_str(&java_float_to_string(*boost));
            }
            Query::Wildcard { field, pattern } => {
                push_field(out, field, default_field);
                out.push_str(pattern);
            }
            Query::Regexp { field, pattern } => {
                push_field(out, field, default_field);
                out.push('/');
                out.push_str(pattern);
                out.push('/');
            }
            Query::Fuzzy {
                field,
                term,
                max_edits,
                ..
            } => {
                push_field(out, field, default_field);
                out.push_str(term);
                out.push('~');
                out.push_str(&max_edits.to_string());
            }
            Query::ConstantScore { query } => {
                out.push_str("ConstantScore(");
                query.render(default_field, out);
                out.push(')');
            }
            Query::DisMax {
                queries,
                tie_breaker,
            } => {
                // Lucene's `DisjunctionMaxQuery.toString`.
                out.push('(');
                for (i, q) in queries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    if matches!(q, Query::Boolean { .. }) {
                        out.push('(');
                        q.render(default_field, out);
                        out.push(')');
                    } else {
                        q.render(default_field, out);
                    }
                }
                out.push(')');
                if *tie_breaker != 0.0 {
                    out.push('~');
                    out.push_str(&java_float_to_string(*tie_breaker));
                }
            }
            Query::Boosting {
                positive,
                negative,
                negative_boost,
            } => {
                // Lucene's `FunctionScoreQuery.toString(field)` around the boost-by-query
                // source, whose `toString()` writes the negative query with every field.
                out.push_str("FunctionScoreQuery(");
                positive.render(default_field, out);
                out.push_str(", scored by boost(queryboost(score(");
                negative.render("", out);
                out.push_str("))^");
                out.push_str(&java_float_to_string(*negative_boost));
                out.push_str("))");
            }
            Query::MatchAll => out.push_str("*:*"),
            Query::MatchNone => out.push_str("MatchNoDocsQuery(\"\")"),
        }
    }
}

fn push_field(out: &mut String, field: &str, default_field: &str) {
    if field != default_field {
        out.push_str(field);
        out.push(':');
    }
}

fn push_range_bound(out: &mut String, bound: Option<&str>) {
    match bound {
        None => out.push('*'),
        Some("*") => out.push_str("\\*"),
        Some(b) => out.push_str(b),
    }
}

fn push_slop(out: &mut String, slop: u32) {
    if slop != 0 {
        out.push('~');
        out.push_str(&slop.to_string());
    }
}

/// Lucene's `MultiPhraseQuery.toString` body: a position of several terms in parentheses, a
/// missing position written `?`.
fn render_multi_phrase(out: &mut String, terms: &[(u32, Vec<String>)]) {
    out.push('"');
    let mut last: Option<u32> = None;
    for (pos, ts) in terms {
        if let Some(l) = last {
            out.push(' ');
            for _ in 1..pos.saturating_sub(l) {
                out.push_str("? ");
            }
        }
        push_term_list(out, ts, "");
        last = Some(*pos);
    }
    out.push('"');
}

/// Elasticsearch's `MultiPhrasePrefixQuery.toString` body: positions in order (gaps are not
/// shown), the last position's terms each followed by `*`.
fn render_phrase_prefix(out: &mut String, terms: &[(u32, Vec<String>)]) {
    out.push('"');
    for (i, (_, ts)) in terms.iter().enumerate() {
        let last = i + 1 == terms.len();
        if i > 0 {
            out.push(' ');
        }
        push_term_list(out, ts, if last { "*" } else { "" });
    }
    out.push('"');
}

/// One term, or several as `(a b c)`, each followed by `suffix`.
fn push_term_list(out: &mut String, ts: &[String], suffix: &str) {
    if ts.len() > 1 {
        out.push('(');
    }
    for (j, t) in ts.iter().enumerate() {
        if j > 0 {
            out.push(' ');
        }
        out.push_str(t);
        out.push_str(suffix);
    }
    if ts.len() > 1 {
        out.push(')');
    }
}

/// Lucene's `PhraseQuery.toString` body: terms at the same position joined by `|`, a missing
/// position written `?`.
fn render_phrase(out: &mut String, terms: &[(u32, String)]) {
    out.push('"');
    let mut next_pos: Option<u32> = None; // the position the next piece stands at
    let mut last_pos: Option<u32> = None;
    for (pos, term) in terms {
        match last_pos {
            Some(p) if p == *pos => {
                out.push('|');
                out.push_str(term);
                continue;
            }
            _ => {}
        }
        let mut expected = next_pos.unwrap_or(0);
        // Fill gaps (positions without a term) with '?', as Lucene does. Positions are
        // ascending in a well-formed phrase; an out-of-order one is written where it falls.
        while expected < *pos {
            if expected > 0 || last_pos.is_some() {
                out.push(' ');
            }
            out.push('?');
            expected += 1;
        }
        if last_pos.is_some() || *pos > 0 {
            out.push(' ');
        }
        out.push_str(term);
        last_pos = Some(*pos);
        next_pos = pos.checked_add(1);
    }
    out.push('"');
}

impl fmt::Display for Query {
    /// Lucene's `Query.toString()` (= `toString("")`): every term carries its field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_with_field(""))
    }
}

/// Java's `Float.toString(float)` (JDK 19+, shortest-uniquely-identifying digits): `2.0`,
/// `0.5`, `1.0E7`, `1.0E-4`, `NaN`, `Infinity`. Lucene writes boosts with it.
pub fn java_float_to_string(value: f32) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_string();
    }
    let (digits, exp) = shortest_digits(value.abs());
    let mut out = String::new();
    if value < 0.0 {
        out.push('-');
    }
    let abs = value.abs();
    if (1e-3..1e7).contains(&abs) {
        // Plain notation: the value is digits[0].digits[1..] * 10^exp.
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        out.push('E');
        out.push_str(&exp.to_string());
    }
    out
}

/// The shortest decimal digits `d1 d2 ...` and exponent `e` with `value = d1.d2... * 10^e`
/// that read back as `value`, with Java's rule that a one-digit result is replaced by the
/// closest two-digit decimal that still reads back as `value` (it matters near the subnormal
/// range, e.g. `1.4E-45`).
fn shortest_digits(value: f32) -> (String, i32) {
    // Rust's `{:e}` gives the shortest round-tripping digits: "2.5e0", "1e10", "1e-45".
    let sci = format!("{value:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0').to_string();
    let digits = if digits.is_empty() {
        "0".to_string()
    } else {
        digits
    };
    if digits.len() != 1 {
        return (digits, exp);
    }
    // One digit: Java picks the closest decimal of length 1 or 2 that reads back as `value`.
    let scale = 10f64.powi(exp - 1);
    let exact = f64::from(value);
    let center = (exact / scale).round() as i64;
    let mut best: Option<(f64, i64)> = None;
    for candidate in (center - 1)..=(center + 1) {
        if !(10..=99).contains(&candidate) {
            continue;
        }
        let text = format!("{candidate}e{}", exp - 1);
        if text.parse::<f32>().ok() != Some(value) {
            continue;
        }
        let dist = (candidate as f64 * scale - exact).abs();
        let closer = match best {
            None => true,
            Some((d, _)) => dist < d,
        };
        if closer {
            best = Some((dist, candidate));
        }
    }
    match best {
        Some((_, candidate)) => {
            let s = candidate.to_string();
            let s = s.trim_end_matches('0');
            (s.to_string(), exp)
        }
        None => (digits, exp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(term: &str) -> Query {
        Query::term("body", term)
    }

    #[test]
    fn java_floats() {
        assert_eq!(java_float_to_string(2.0), "2.0");
        assert_eq!(java_float_to_string(0.5), "0.5");
        assert_eq!(java_float_to_string(1.5), "1.5");
        assert_eq!(java_float_to_string(100.0), "100.0");
        assert_eq!(java_float_to_string(0.1), "0.1");
        assert_eq!(java_float_to_string(0.001), "0.001");
        assert_eq!(java_float_to_string(0.0001), "1.0E-4");
        assert_eq!(java_float_to_string(1234567.0), "1234567.0");
        assert_eq!(java_float_to_string(1e7), "1.0E7");
        assert_eq!(java_float_to_string(1.5e10), "1.5E10");
        assert_eq!(java_float_to_string(f32::MAX), "3.4028235E38");
        assert_eq!(java_float_to_string(f32::MIN_POSITIVE), "1.1754944E-38");
        assert_eq!(java_float_to_string(1.4e-45), "1.4E-45");
        assert_eq!(java_float_to_string(0.0), "0.0");
        assert_eq!(java_float_to_string(-2.0), "-2.0");
        assert_eq!(java_float_to_string(f32::INFINITY), "Infinity");
        assert_eq!(java_float_to_string(f32::NAN), "NaN");
        assert_eq!(java_float_to_string(3.3), "3.3");
        assert_eq!(java_float_to_string(0.3), "0.3");
        assert_eq!(java_float_to_string(12.75), "12.75");
    }

    #[test]
    fn renders_like_lucene() {
        assert_eq!(t("oil").to_string(), "body:oil");
        assert_eq!(t("oil").to_string_with_field("body"), "oil");
        let and = Query::boolean(vec![
            Clause::new(Occur::Must, t("oil")),
            Clause::new(Occur::Must, t("price")),
        ]);
        assert_eq!(and.to_string(), "+body:oil +body:price");
        let mixed = Query::boolean(vec![
            Clause::new(Occur::Must, t("a")),
            Clause::new(Occur::Should, t("b")),
            Clause::new(Occur::MustNot, t("c")),
            Clause::new(Occur::Filter, t("d")),
        ]);
        assert_eq!(mixed.to_string(), "+body:a body:b -body:c #body:d");
        let nested = Query::boolean(vec![
            Clause::new(Occur::Should, t("x")),
            Clause::new(Occur::Must, and.clone()),
        ]);
        assert_eq!(nested.to_string(), "body:x +(+body:oil +body:price)");
        let phrase = Query::Phrase {
            field: "body".into(),
            terms: vec![(0, "oil".into()), (1, "prices".into())],
            slop: 0,
        };
        assert_eq!(phrase.to_string(), "body:\"oil prices\"");
        let sloppy = Query::Phrase {
            field: "body".into(),
            terms: vec![(0, "a".into()), (2, "b".into()), (2, "c".into())],
            slop: 2,
        };
        assert_eq!(sloppy.to_string(), "body:\"a ? b|c\"~2");
        let gap_first = Query::Phrase {
            field: "body".into(),
            terms: vec![(1, "a".into()), (2, "b".into())],
            slop: 0,
        };
        assert_eq!(gap_first.to_string(), "body:\"? a b\"");
        assert_eq!(Query::boosted(t("oil"), 2.0).to_string(), "(body:oil)^2.0");
        assert_eq!(
            Query::boosted(and.clone(), 0.5).to_string(),
            "(+body:oil +body:price)^0.5"
        );
        assert_eq!(
            Query::Prefix {
                field: "body".into(),
                prefix: "oil".into()
            }
            .to_string(),
            "body:oil*"
        );
        assert_eq!(Query::MatchAll.to_string(), "*:*");
        assert_eq!(Query::MatchNone.to_string(), "MatchNoDocsQuery(\"\")");
        assert_eq!(Query::boolean(vec![]).to_string(), "");
        let msm = Query::Boolean {
            clauses: vec![
                Clause::new(Occur::Should, t("a")),
                Clause::new(Occur::Should, t("b")),
            ],
            minimum_should_match: 1,
        };
        assert_eq!(msm.to_string(), "(body:a body:b)~1");
        assert_eq!(msm.to_string_with_field("body"), "(a b)~1");
    }

    #[test]
    fn multi_phrases_render_like_lucene_and_phrase_prefixes_like_elasticsearch() {
        let ts = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let m = Query::MultiPhrase {
            field: "body".into(),
            terms: vec![(0, ts(&["oil"])), (1, ts(&["price", "prices"]))],
            slop: 0,
        };
        assert_eq!(m.to_string(), "body:\"oil (price prices)\"");
        assert_eq!(m.to_string_with_field("body"), "\"oil (price prices)\"");
        // Lucene's `MultiPhraseQuery.toString`: a missing position is `? `.
        let gap = Query::MultiPhrase {
            field: "body".into(),
            terms: vec![(0, ts(&["a", "b"])), (3, ts(&["c"]))],
            slop: 2,
        };
        assert_eq!(gap.to_string(), "body:\"(a b) ? ? c\"~2");
        // Elasticsearch's `MultiPhrasePrefixQuery.toString`: no gaps, the prefixes starred.
        let p = Query::PhrasePrefix {
            field: "body".into(),
            terms: vec![(0, ts(&["a", "b"])), (3, ts(&["c", "d"]))],
            slop: 1,
            max_expansions: 50,
        };
        assert_eq!(p.to_string(), "body:\"(a b) (c* d*)\"~1");
        let one = Query::PhrasePrefix {
            field: "title".into(),
            terms: vec![(0, ts(&["oil"]))],
            slop: 0,
            max_expansions: 50,
        };
        assert_eq!(one.to_string(), "title:\"oil*\"");
        assert_eq!(Query::boosted(one, 2.0).to_string(), "(title:\"oil*\")^2.0");
    }

    #[test]
    fn ranges_render_like_term_range_query() {
        let r = |lower, upper, il, iu| Query::range("year", lower, upper, il, iu).to_string();
        assert_eq!(
            r(Some("1990"), Some("2000"), true, true),
            "year:[1990 TO 2000]"
        );
        assert_eq!(
            r(Some("1990"), Some("2000"), false, false),
            "year:{1990 TO 2000}"
        );
        assert_eq!(r(Some("a"), Some("b"), true, false), "year:[a TO b}");
        assert_eq!(r(Some("a"), Some("b"), false, true), "year:{a TO b]");
        // Open ends are `*`; the flag is kept as given (Lucene ignores it when matching).
        assert_eq!(r(None, Some("10"), false, true), "year:{* TO 10]");
        assert_eq!(r(Some("10"), None, true, true), "year:[10 TO *]");
        assert_eq!(r(None, None, true, true), "year:[* TO *]");
        // A bound that is a literal `*` is escaped; nothing else is.
        assert_eq!(r(Some("*"), Some("a b"), true, true), "year:[\\* TO a b]");
        assert_eq!(r(Some("**"), Some("]"), true, true), "year:[** TO ]]");
        let q = Query::range("year", Some("1"), Some("2"), true, true);
        assert_eq!(q.to_string_with_field("year"), "[1 TO 2]");
        assert_eq!(q.to_string_with_field("body"), "year:[1 TO 2]");
        assert_eq!(
            Query::boosted(q.clone(), 2.0).to_string(),
            "(year:[1 TO 2])^2.0"
        );
        let b = Query::boolean(vec![
            Clause::new(Occur::Must, t("oil")),
            Clause::new(Occur::MustNot, q),
        ]);
        assert_eq!(b.to_string(), "+body:oil -year:[1 TO 2]");
    }
}
