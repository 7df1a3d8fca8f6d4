//! How a `simple_query_string` becomes a [`Query`]: Lucene's `SimpleQueryParser` (what
//! Elasticsearch's `simple_query_string` runs), which never fails on bad syntax.
//!
//! Operators: `+` AND, `|` OR, `-` NOT (on the next term, phrase or group), `"..."` phrases,
//! `"..."~N` sloppy phrases, `term*` prefixes, `term~N` fuzzy terms (`~` alone is 2 edits, more
//! than 2 is 2, 0 is the plain term), `( )` groups, `\` escapes, whitespace; each can be turned
//! off with [`SimpleFlags`] (a disabled operator is an ordinary character). Operators apply
//! right to left with no precedence: `a | b + c` is `+(a b) +c`. Whatever does not parse is
//! ignored: an unclosed `"` or `(` is dropped and the rest read as terms, a stray `)` or a
//! leading `+` is skipped, `""` and `()` are nothing. `*` alone is every document; a query with
//! nothing left matches nothing.
//!
//! Each term, phrase, prefix and fuzzy term is built once per field, the field's boost
//! applied, and the per-field queries joined as SHOULD clauses (one field: its query). A term
//! is analyzed as Lucene's `QueryBuilder.createBooleanQuery` does (several tokens are a
//! boolean with the default operator); a phrase as `createPhraseQuery`; prefixes and fuzzy
//! terms are normalized, not analyzed, unless `analyze_wildcard` asks (Elasticsearch's option:
//! a prefix is analyzed and only its last token is a prefix).
use std::sync::Arc;

use super::ast::{Clause, Occur, Query, FUZZY_MAX_EDITS, FUZZY_MAX_EXPANSIONS};
use super::parser::{FieldAnalysis, Operator};

/// Which operators a [`SimpleQueryParser`] recognizes (Lucene's `SimpleQueryParser` flag bits;
/// Elasticsearch's `flags` names with [`SimpleFlags::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleFlags(u32);

impl SimpleFlags {
    /// `+`.
    pub const AND: Self = Self(1);
    /// `-`.
    pub const NOT: Self = Self(1 << 1);
    /// `|`.
    pub const OR: Self = Self(1 << 2);
    /// A trailing `*`.
    pub const PREFIX: Self = Self(1 << 3);
    /// `"`.
    pub const PHRASE: Self = Self(1 << 4);
    /// `(` and `)`.
    pub const PRECEDENCE: Self = Self(1 << 5);
    /// `\`.
    pub const ESCAPE: Self = Self(1 << 6);
    /// Space, tab, carriage return and newline.
    pub const WHITESPACE: Self = Self(1 << 7);
    /// `~N` after a term.
    pub const FUZZY: Self = Self(1 << 8);
    /// `~N` after a phrase.
    pub const NEAR: Self = Self(1 << 9);
    /// Every operator (the default).
    pub const ALL: Self = Self((1 << 10) - 1);
    /// No operator: the whole text is one term.
    pub const NONE: Self = Self(0);

    /// Lucene's integer flags (`-1`: all); bits above `NEAR` are ignored.
    pub fn from_bits(bits: u32) -> Self {
        Self(bits & Self::ALL.0)
    }

    fn has(self, f: Self) -> bool {
        self.0 & f.0 != 0
    }

    /// Elasticsearch's `flags`: names joined by `|` (`OR|AND|PREFIX`), case-insensitive:
    /// `ALL`, `NONE`, `AND`, `OR`, `NOT`, `PREFIX`, `PHRASE`, `PRECEDENCE`, `ESCAPE`,
    /// `WHITESPACE`, `FUZZY`, `NEAR` and its synonym `SLOP`. An empty string is `ALL`. The
    /// error names the unknown flag.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::ALL);
        }
        let mut bits = 0;
        for name in text.split('|') {
            let f = match name.trim().to_ascii_uppercase().as_str() {
                "ALL" => Self::ALL,
                "NONE" => Self::NONE,
                "AND" => Self::AND,
                "OR" => Self::OR,
                "NOT" => Self::NOT,
                "PREFIX" => Self::PREFIX,
                "PHRASE" => Self::PHRASE,
                "PRECEDENCE" => Self::PRECEDENCE,
                "ESCAPE" => Self::ESCAPE,
                "WHITESPACE" => Self::WHITESPACE,
                "FUZZY" => Self::FUZZY,
                "NEAR" | "SLOP" => Self::NEAR,
                _ => {
                    return Err(format!(
                        "unknown simple_query_string flag [{}] (known: ALL, NONE, AND, OR, NOT, \
                         PREFIX, PHRASE, PRECEDENCE, ESCAPE, WHITESPACE, FUZZY, NEAR, SLOP)",
                        name.trim()
                    ))
                }
            };
            bits |= f.0;
        }
        Ok(Self(bits))
    }
}

impl Default for SimpleFlags {
    fn default() -> Self {
        Self::ALL
    }
}

/// Lucene's `SimpleQueryParser` over weighted fields. Cheap to share: `parse` takes `&self`.
#[derive(Clone)]
pub struct SimpleQueryParser {
    fields: Vec<(String, f32)>,
    analysis: Arc<dyn FieldAnalysis>,
    default_operator: Occur,
    flags: SimpleFlags,
    analyze_wildcard: bool,
    /// Fuzzy terms' prefix length, expansions and transpositions.
    fuzzy: (u32, u32, bool),
}

/// Where parsing stands in one (sub-)query: `data[index..end]` is left to read.
struct State {
    index: usize,
    end: usize,
    current: Option<Occur>,
    previous: Option<Occur>,
    not: u32,
    top: Option<Query>,
}

impl SimpleQueryParser {
    /// A parser over `fields` (name and boost, in this order), default operator OR, every
    /// operator on.
    pub fn new(fields: Vec<(String, f32)>, analysis: Arc<dyn FieldAnalysis>) -> Self {
        Self {
            fields,
            analysis,
            default_operator: Occur::Should,
            flags: SimpleFlags::ALL,
            analyze_wildcard: false,
            fuzzy: (0, FUZZY_MAX_EXPANSIONS, true),
        }
    }

    /// The operator between clauses without `+` or `|`, and between a term's tokens.
    pub fn with_default_operator(mut self, op: Operator) -> Self {
        self.default_operator = match op {
            Operator::Or => Occur::Should,
            Operator::And => Occur::Must,
        };
        self
    }

    /// The operators recognized.
    pub fn with_flags(mut self, flags: SimpleFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Elasticsearch's `analyze_wildcard`: analyze a prefix's text, the last token the prefix.
    pub fn with_analyze_wildcard(mut self, on: bool) -> Self {
        self.analyze_wildcard = on;
        self
    }

    /// Fuzzy terms' options (Elasticsearch's `fuzzy_prefix_length`, `fuzzy_max_expansions`,
    /// `fuzzy_transpositions`; Lucene's `FuzzyQuery` defaults 0, 50 and true otherwise).
    pub fn with_fuzzy_options(
        mut self,
        prefix_length: u32,
        max_expansions: u32,
        transpositions: bool,
    ) -> Self {
        self.fuzzy = (prefix_length, max_expansions, transpositions);
        self
    }

    /// The query `text` means; never fails (see the module docs). Nothing left is
    /// [`Query::MatchNone`].
    pub fn parse(&self, text: &str) -> Query {
        // Java's `trim()`: every character up to U+0020.
        if text.trim_matches(|c: char| c <= ' ') == "*" {
            return Query::MatchAll;
        }
        let data: Vec<char> = text.chars().collect();
        let mut st = State::new(0, data.len());
        self.sub_query(&data, &mut st);
        st.top.unwrap_or(Query::MatchNone)
    }

    fn on(&self, f: SimpleFlags) -> bool {
        self.flags.has(f)
    }

    fn is_space(c: char) -> bool {
        matches!(c, ' ' | '\t' | '\n' | '\r')
    }

    fn sub_query(&self, data: &[char], st: &mut State) {
        while st.index < st.end {
            let c = data[st.index];
            if c == '(' && self.on(SimpleFlags::PRECEDENCE) {
                self.group(data, st);
            } else if c == ')' && self.on(SimpleFlags::PRECEDENCE) {
                st.index += 1; // unbalanced: ignored
            } else if c == '"' && self.on(SimpleFlags::PHRASE) {
                self.phrase(data, st);
            } else if (c == '+' && self.on(SimpleFlags::AND))
                || (c == '|' && self.on(SimpleFlags::OR))
            {
                // Only between two operands, and only the first of several.
                if st.current.is_none() && st.top.is_some() {
                    st.current = Some(if c == '+' { Occur::Must } else { Occur::Should });
                }
                st.index += 1;
            } else if c == '-' && self.on(SimpleFlags::NOT) {
                st.not += 1;
                st.index += 1;
                continue; // the count applies to what follows directly
            } else if Self::is_space(c) && self.on(SimpleFlags::WHITESPACE) {
                st.index += 1;
            } else {
                self.token(data, st);
            }
            st.not = 0;
        }
    }

    /// The character at `index` and whether a `\` escaped it (the `\` is then skipped);
    /// `None` at the end.
    fn read(&self, data: &[char], st: &mut State) -> Option<(char, bool)> {
        if st.index >= st.end {
            return None;
        }
        if data[st.index] == '\\' && self.on(SimpleFlags::ESCAPE) {
            st.index += 1;
            return (st.index < st.end).then(|| (data[st.index], true));
        }
        Some((data[st.index], false))
    }

    /// After scanning a group or phrase whose content starts at `start`: unclosed, reading
    /// resumes at `start` (the opener is ignored); empty, the pending operator had nothing to
    /// apply to and the closer is skipped. True when there is content (the index stands on
    /// the closer).
    fn has_content(st: &mut State, start: usize) -> bool {
        if st.index == st.end {
            st.index = start;
            false
        } else if st.index == start {
            st.current = None;
            st.index += 1;
            false
        } else {
            true
        }
    }

    /// `( ... )`: parsed as a query of its own; unclosed, the `(` is ignored.
    fn group(&self, data: &[char], st: &mut State) {
        st.index += 1;
        let start = st.index;
        let mut depth = 1;
        while let Some((c, escaped)) = self.read(data, st) {
            if !escaped && c == '(' {
                depth += 1;
            } else if !escaped && c == ')' {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            st.index += 1;
        }
        if Self::has_content(st, start) {
            let mut sub = State::new(start, st.index);
            self.sub_query(data, &mut sub);
            self.add(st, sub.top);
            st.index += 1;
        }
    }

    /// `"..."` with an optional `~N`; unclosed, the `"` is ignored.
    fn phrase(&self, data: &[char], st: &mut State) {
        st.index += 1;
        let start = st.index;
        let mut text = String::new();
        let mut has_slop = false;
        while let Some((c, escaped)) = self.read(data, st) {
            if !escaped && c == '"' {
                if st.end > st.index + 1 && data[st.index + 1] == '~' && self.on(SimpleFlags::NEAR)
                {
                    st.index += 1;
                    has_slop = st.end > st.index + 1;
                }
                break;
            }
            text.push(c);
            st.index += 1;
        }
        if Self::has_content(st, start) {
            let slop = if has_slop {
                self.fuzziness(data, st)
            } else {
                0
            };
            let q = self.per_field(|f| self.phrase_query(f, &text, slop));
            self.add(st, q);
            st.index += 1;
        }
    }

    /// A term, `term*` or `term~N`.
    fn token(&self, data: &[char], st: &mut State) {
        let mut text = String::new();
        let (mut prefix, mut fuzzy) = (false, false);
        while let Some((c, escaped)) = self.read(data, st) {
            if escaped {
                prefix = false;
            } else if self.finished(data, st) {
                break;
            } else if !text.is_empty() && c == '~' && self.on(SimpleFlags::FUZZY) {
                fuzzy = true;
                break;
            } else {
                prefix = !text.is_empty() && c == '*' && self.on(SimpleFlags::PREFIX);
            }
            text.push(c);
            st.index += 1;
        }
        if text.is_empty() {
            return;
        }
        let q = if fuzzy {
            match self.fuzziness(data, st).min(FUZZY_MAX_EDITS) {
                0 => self.per_field(|f| self.default_query(f, &text)),
                edits => self.per_field(|f| Some(self.fuzzy_query(f, &text, edits))),
            }
        } else if prefix {
            text.pop();
            self.per_field(|f| self.prefix_query(f, &text))
        } else {
            self.per_field(|f| self.default_query(f, &text))
        };
        self.add(st, q);
    }

    /// Whether `data[index]` ends a token: an enabled `"`, `|`, `+`, `(`, `)` or whitespace.
    fn finished(&self, data: &[char], st: &State) -> bool {
        let c = data[st.index];
        (c == '"' && self.on(SimpleFlags::PHRASE))
            || (c == '|' && self.on(SimpleFlags::OR))
            || (c == '+' && self.on(SimpleFlags::AND))
            || ((c == '(' || c == ')') && self.on(SimpleFlags::PRECEDENCE))
            || (Self::is_space(c) && self.on(SimpleFlags::WHITESPACE))
    }

    /// The `N` of a `~N` at `data[index]`, read up to the end of the token: 2 when empty, 0
    /// when not a number or negative (Lucene's `parseFuzziness`).
    fn fuzziness(&self, data: &[char], st: &mut State) -> u32 {
        if data[st.index] != '~' {
            return 0;
        }
        let mut digits = String::new();
        while st.index < st.end {
            st.index += 1;
            if st.index < st.end {
                if self.finished(data, st) {
                    break;
                }
                digits.push(data[st.index]);
            }
        }
        if digits.is_empty() {
            return 2;
        }
        digits.parse::<i32>().map_or(0, |n| n.max(0) as u32)
    }

    /// Joins a new operand to the tree: negated if an odd number of `-` preceded it, then
    /// under the pending (or default) operator; a change of operator makes the tree so far
    /// one clause of a new boolean.
    fn add(&self, st: &mut State, q: Option<Query>) {
        let Some(mut q) = q else {
            return;
        };
        if st.not % 2 == 1 {
            q = Query::boolean(vec![
                Clause::new(Occur::MustNot, q),
                Clause::new(Occur::Should, Query::MatchAll),
            ]);
        }
        let Some(top) = st.top.take() else {
            st.top = Some(q);
            return;
        };
        let op = st.current.unwrap_or(self.default_operator);
        let top = if st.previous != Some(op) {
            Query::boolean(vec![Clause::new(op, top)])
        } else {
            top
        };
        st.top = Some(match top {
            Query::Boolean {
                mut clauses,
                minimum_should_match,
            } => {
                clauses.push(Clause::new(op, q));
                Query::Boolean {
                    clauses,
                    minimum_should_match,
                }
            }
            other => Query::boolean(vec![Clause::new(op, other), Clause::new(op, q)]),
        });
        st.previous = Some(op);
        st.current = None;
    }

    /// `build` for each field, boosted by the field's boost, as SHOULD clauses (one: itself).
    fn per_field(&self, build: impl Fn(&str) -> Option<Query>) -> Option<Query> {
        let mut clauses: Vec<Clause> = self
            .fields
            .iter()
            .filter_map(|(f, boost)| {
                build(f).map(|q| {
                    let q = if *boost == 1.0 {
                        q
                    } else {
                        Query::boosted(q, *boost)
                    };
                    Clause::new(Occur::Should, q)
                })
            })
            .collect();
        match clauses.len() {
            0 => None,
            1 => clauses.pop().map(|c| c.query),
            _ => Some(Query::boolean(clauses)),
        }
    }

    /// `QueryBuilder.createBooleanQuery`: no token is nothing, one a term, several a boolean
    /// of terms joined by the default operator.
    fn default_query(&self, field: &str, text: &str) -> Option<Query> {
        let mut tokens = self.analysis.tokens(field, text);
        match tokens.len() {
            0 => None,
            1 => tokens.pop().map(|t| Query::term(field, t)),
            _ => Some(Query::boolean(
                tokens
                    .into_iter()
                    .map(|t| Clause::new(self.default_operator, Query::term(field, t)))
                    .collect(),
            )),
        }
    }

    /// A `FuzzyQuery` of the normalized text.
    fn fuzzy_query(&self, field: &str, text: &str, max_edits: u32) -> Query {
        let (prefix_length, max_expansions, transpositions) = self.fuzzy;
        Query::Fuzzy {
            field: field.to_string(),
            term: self.analysis.normalize(field, text),
            max_edits,
            prefix_length,
            max_expansions,
            transpositions,
        }
    }

    /// `QueryBuilder.createPhraseQuery`: one token is a term, several a phrase.
    fn phrase_query(&self, field: &str, text: &str, slop: u32) -> Option<Query> {
        let mut tokens = self.analysis.tokens(field, text);
        match tokens.len() {
            0 => None,
            1 => tokens.pop().map(|t| Query::term(field, t)),
            _ => Some(Query::Phrase {
                field: field.to_string(),
                terms: (0u32..).zip(tokens).collect(),
                slop,
            }),
        }
    }

    /// A normalized prefix, or with `analyze_wildcard` the analyzed tokens, the last a prefix,
    /// joined by the default operator (Elasticsearch's `newPossiblyAnalyzedQuery`).
    fn prefix_query(&self, field: &str, text: &str) -> Option<Query> {
        let prefix = |p: String| Query::Prefix {
            field: field.to_string(),
            prefix: p,
        };
        if !self.analyze_wildcard {
            return Some(prefix(self.analysis.normalize(field, text)));
        }
        let mut tokens = self.analysis.tokens(field, text);
        let last = tokens.pop()?;
        if tokens.is_empty() {
            return Some(prefix(last));
        }
        let mut clauses: Vec<Clause> = tokens
            .into_iter()
            .map(|t| Clause::new(self.default_operator, Query::term(field, t)))
            .collect();
        clauses.push(Clause::new(self.default_operator, prefix(last)));
        Some(Query::boolean(clauses))
    }
}

impl State {
    fn new(index: usize, end: usize) -> Self {
        Self {
            index,
            end,
            current: None,
            previous: None,
            not: 0,
            top: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parser::StandardAnalysis;
    use proptest::prelude::*;

    fn p(fields: &[(&str, f32)]) -> SimpleQueryParser {
        SimpleQueryParser::new(
            fields.iter().map(|(f, b)| (f.to_string(), *b)).collect(),
            Arc::new(StandardAnalysis::new()),
        )
    }

    fn s(text: &str) -> String {
        p(&[("body", 1.0)]).parse(text).to_string()
    }

    #[test]
    fn operators_like_lucene() {
        assert_eq!(s("oil"), "body:oil");
        assert_eq!(s("oil gas"), "body:oil body:gas");
        assert_eq!(s("oil + gas"), "+body:oil +body:gas");
        assert_eq!(s("oil+gas|coffee"), "(+body:oil +body:gas) body:coffee");
        assert_eq!(s("a | b + c"), "+(body:a body:b) +body:c");
        assert_eq!(s("-oil"), "-body:oil *:*");
        assert_eq!(s("--oil"), "body:oil");
        assert_eq!(s("oil -gas"), "body:oil (-body:gas *:*)");
        assert_eq!(s("\"oil prices\""), "body:\"oil prices\"");
        assert_eq!(s("\"oil prices\"~3"), "body:\"oil prices\"~3");
        assert_eq!(s("\"oil\""), "body:oil");
        assert_eq!(s("petro*"), "body:petro*");
        assert_eq!(s("Petro\\*"), "body:petro");
        assert_eq!(s("roam~1"), "body:roam~1");
        assert_eq!(s("roam~"), "body:roam~2");
        assert_eq!(s("roam~5"), "body:roam~2");
        assert_eq!(s("roam~0"), "body:roam");
        assert_eq!(s("roam~x"), "body:roam");
        assert_eq!(
            s("(oil | gas) + prices"),
            "+(body:oil body:gas) +body:prices"
        );
        assert_eq!(s("wi-fi"), "body:wi body:fi");
        assert_eq!(s("*"), "*:*");
        assert_eq!(s(" * "), "*:*");
    }

    #[test]
    fn lenient_about_bad_syntax() {
        assert_eq!(s("\"oil prices"), "body:oil body:prices");
        assert_eq!(s("(oil gas"), "body:oil body:gas");
        assert_eq!(s("oil)"), "body:oil");
        assert_eq!(s("+oil"), "body:oil");
        assert_eq!(s("oil ++ gas"), "+body:oil +body:gas");
        assert_eq!(s("()"), "MatchNoDocsQuery(\"\")");
        assert_eq!(s(""), "MatchNoDocsQuery(\"\")");
        assert_eq!(s("\"\" oil"), "body:oil");
        assert_eq!(s("\\"), "MatchNoDocsQuery(\"\")");
        assert_eq!(s("oil ~"), "body:oil");
    }

    #[test]
    fn fields_flags_and_operators() {
        let two = p(&[("title", 2.0), ("body", 1.0)]);
        assert_eq!(two.parse("oil").to_string(), "(title:oil)^2.0 body:oil");
        assert_eq!(
            two.parse("oil* \"a b\"").to_string(),
            "((title:oil*)^2.0 body:oil*) ((title:\"a b\")^2.0 body:\"a b\")"
        );
        let and = p(&[("body", 1.0)]).with_default_operator(Operator::And);
        assert_eq!(and.parse("oil gas").to_string(), "+body:oil +body:gas");
        assert_eq!(
            and.parse("wi-fi | x").to_string(),
            "(+body:wi +body:fi) body:x"
        );
        let none = p(&[("body", 1.0)]).with_flags(SimpleFlags::NONE);
        assert_eq!(none.parse("oil -gas*").to_string(), "body:oil body:gas");
        let no_prefix = p(&[("body", 1.0)]).with_flags(SimpleFlags::parse("OR|AND").unwrap());
        assert_eq!(no_prefix.parse("oil* gas").to_string(), "body:oil body:gas");
        let wild = p(&[("body", 1.0)]).with_analyze_wildcard(true);
        assert_eq!(wild.parse("Oil-Pri*").to_string(), "body:oil body:pri*");
        assert_eq!(SimpleFlags::parse("").unwrap(), SimpleFlags::ALL);
        assert_eq!(SimpleFlags::parse("near|Slop").unwrap(), SimpleFlags::NEAR);
        assert!(SimpleFlags::parse("OR|BOGUS")
            .unwrap_err()
            .contains("[BOGUS]"));
    }

    proptest! {
        /// Lenient: any text parses, without panicking, into something that renders.
        #[test]
        fn any_text_parses(text in r#"[a-c +|\-"*~()\\0-9 ]{0,24}"#) {
            let _ = p(&[("title", 1.5), ("body", 1.0)]).parse(&text).to_string();
        }
    }
}
