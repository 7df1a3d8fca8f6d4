//! Which clauses a token stream forms: the productions of Lucene's `QueryParser.jj` (`Query`,
//! `MultiTerm`, `Clause`, `Term` with its ranges, boosts and fuzzy slops), calling the semantics of
//! [`semantics`](super::semantics) to build each query.
use super::error::{ParseError, ParseErrorKind};
use super::escapes::{unescape, unescape_str};
use super::lexer::{is_whitespace, Kind, Token};
use super::QueryParser;
use crate::query::ast::{Clause, Query};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conj {
    None,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mods {
    None,
    Not,
    Req,
}

pub(super) type PResult<T> = Result<T, ParseError>;

/// Lucene's `firstQuery`: what `Query()` returns when it ends with a single clause.
pub(super) enum First {
    /// No unmodified first query (a modifier, or the first clause analyzed away).
    None,
    /// The first clause's query, which is `clauses[0]`.
    Clause0,
    /// A query that differs from the clause list (a term run's analysis result).
    Query(Query),
}

pub(super) struct Parser<'a> {
    pub(super) cfg: &'a QueryParser,
    pub(super) input: &'a str,
    pub(super) tokens: Vec<Token>,
    pub(super) lex_error: Option<ParseError>,
    pub(super) pos: usize,
}

pub(super) const EXPECT_CLAUSE: &str = "a term, a phrase or '('";
pub(super) const SUPPORTED: &str = "terms, \"phrases\", prefix* terms, wild?cards, /regexps/, \
     fuzzy~ terms, [a TO b] and field:>x ranges, field:, AND/OR/NOT, +/-, (...), ^boost and *:*";

impl<'a> Parser<'a> {
    pub(super) fn tok(&self, k: usize) -> Token {
        let last = self.tokens.len() - 1; // the lexer always ends with Eof or Error
        self.tokens[(self.pos + k).min(last)]
    }

    pub(super) fn kind(&self, k: usize) -> Kind {
        self.tok(k).kind
    }

    pub(super) fn image(&self, t: Token) -> &'a str {
        &self.input[t.start..t.end]
    }

    pub(super) fn err(
        &self,
        kind: ParseErrorKind,
        position: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ParseError {
        ParseError::new(kind, self.input, position, expected.into(), found.into())
    }

    /// The error for finding the current token where `expected` was wanted.
    pub(super) fn unexpected(&self, expected: impl Into<String>) -> ParseError {
        let t = self.tok(0);
        if t.kind == Kind::Error {
            if let Some(e) = &self.lex_error {
                return e.clone();
            }
        }
        let found = self.describe(t);
        self.err(ParseErrorKind::Syntax, t.start, expected, found)
    }

    pub(super) fn describe(&self, t: Token) -> String {
        if t.kind == Kind::Eof {
            return "end of input".to_string();
        }
        let image = self.image(t).trim_end_matches(is_whitespace);
        let shown: String = image.chars().take(40).collect();
        let cut = if shown.len() < image.len() { "…" } else { "" };
        format!("'{shown}{cut}'")
    }

    /// "after 'AND'"-style context from the previous token.
    pub(super) fn after_previous(&self) -> String {
        if self.pos == 0 {
            return String::new();
        }
        let prev = self.tokens[self.pos - 1];
        if prev.kind == Kind::Colon && self.pos >= 2 {
            let field = self.tokens[self.pos - 2];
            return format!(" after '{}:'", self.image(field));
        }
        format!(" after {}", self.describe(prev))
    }

    pub(super) fn top_level(&mut self) -> PResult<Query> {
        if self.kind(0) == Kind::Eof {
            return Err(self.err(
                ParseErrorKind::Syntax,
                self.tok(0).start,
                format!("a query ({EXPECT_CLAUSE})"),
                if self.input.is_empty() {
                    "an empty query"
                } else {
                    "only whitespace"
                },
            ));
        }
        let q = self.query(None, 0)?;
        match self.kind(0) {
            Kind::Eof => Ok(q.unwrap_or_else(|| Query::boolean(Vec::new()))),
            Kind::RParen => {
                let t = self.tok(0);
                Err(self.err(
                    ParseErrorKind::Syntax,
                    t.start,
                    "end of input or another clause",
                    "')' without a matching '('",
                ))
            }
            _ => Err(self.unexpected(format!("an operator, {EXPECT_CLAUSE} or end of input"))),
        }
    }

    pub(super) fn starts_clause(kind: Kind) -> bool {
        matches!(
            kind,
            Kind::And
                | Kind::Or
                | Kind::Plus
                | Kind::Minus
                | Kind::Not
                | Kind::Term
                | Kind::Star
                | Kind::PrefixTerm
                | Kind::WildTerm
                | Kind::Regexp
                | Kind::Number
                | Kind::BareOper
                | Kind::RangeStart
                | Kind::Quoted
                | Kind::LParen
        )
    }

    /// Lucene's `LOOKAHEAD(2) MultiTerm`: two TERMs, the second not followed by a token of
    /// `disallowedPostMultiTerm`.
    pub(super) fn multi_term_ahead(&self) -> bool {
        self.kind(0) == Kind::Term
            && self.kind(1) == Kind::Term
            && allowed_post_multi_term(self.kind(2))
    }

    /// `Query(field)`: a first clause (or term run), then more clauses while they start.
    pub(super) fn query(&mut self, field: Option<&str>, depth: usize) -> PResult<Option<Query>> {
        let mut clauses: Vec<Clause> = Vec::new();
        let first: First;
        if self.multi_term_ahead() {
            first = self.multi_term(field, &mut clauses)?;
        } else {
            let mods = self.modifiers();
            let at = self.tok(0).start;
            let q = self.clause(field, depth)?;
            first = if mods == Mods::None && q.is_some() {
                First::Clause0
            } else {
                First::None
            };
            self.add_clause(&mut clauses, Conj::None, mods, q, at)?;
        }
        while Self::starts_clause(self.kind(0)) {
            if self.multi_term_ahead() {
                self.multi_term(field, &mut clauses)?;
                continue;
            }
            let conj = self.conjunction();
            let mods = self.modifiers();
            let at = self.tok(0).start;
            let q = self.clause(field, depth)?;
            self.add_clause(&mut clauses, conj, mods, q, at)?;
        }
        // Lucene: `if (clauses.size() == 1 && firstQuery != null) return firstQuery;`
        if clauses.len() == 1 {
            match first {
                First::Clause0 => return Ok(clauses.pop().map(|c| c.query)),
                First::Query(q) => return Ok(Some(q)),
                First::None => {}
            }
        }
        Ok(self.boolean_query(clauses))
    }

    pub(super) fn conjunction(&mut self) -> Conj {
        match self.kind(0) {
            Kind::And => {
                self.pos += 1;
                Conj::And
            }
            Kind::Or => {
                self.pos += 1;
                Conj::Or
            }
            _ => Conj::None,
        }
    }

    pub(super) fn modifiers(&mut self) -> Mods {
        match self.kind(0) {
            Kind::Plus => {
                self.pos += 1;
                Mods::Req
            }
            Kind::Minus | Kind::Not => {
                self.pos += 1;
                Mods::Not
            }
            _ => Mods::None,
        }
    }

    /// `MultiTerm`: a run of plain terms, analyzed together (or one by one when splitting
    /// on whitespace). Returns what Lucene's `firstQuery` is.
    pub(super) fn multi_term(
        &mut self,
        field: Option<&str>,
        clauses: &mut Vec<Clause>,
    ) -> PResult<First> {
        let mut run = vec![self.tok(0)];
        self.pos += 1;
        while self.kind(0) == Kind::Term && allowed_post_multi_term(self.kind(1)) {
            run.push(self.tok(0));
            self.pos += 1;
        }
        if self.cfg.split_on_whitespace {
            let mut first = First::None;
            for (i, t) in run.iter().enumerate() {
                let text = unescape(self.input, *t)?;
                let q = self.field_query(field, &text, t.start)?;
                if i == 0 && q.is_some() {
                    first = First::Clause0;
                }
                self.add_clause(clauses, Conj::None, Mods::None, q, t.start)?;
            }
            Ok(first)
        } else {
            let mut text = String::new();
            for (i, t) in run.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                text.push_str(&unescape(self.input, *t)?);
            }
            let q = self.field_query(field, &text, run[0].start)?;
            // The analysis result is shallow (terms, or per-field groups), so cloning is cheap.
            let first = q.clone().map_or(First::None, First::Query);
            self.add_multi_term_clauses(clauses, q, run[0].start)?;
            Ok(first)
        }
    }

    /// `Clause(field)`: an optional `field:` then a term or a parenthesized query.
    pub(super) fn clause(&mut self, field: Option<&str>, depth: usize) -> PResult<Option<Query>> {
        let mut named: Option<String> = None;
        if matches!(self.kind(0), Kind::Term | Kind::Star) && self.kind(1) == Kind::Colon {
            let t = self.tok(0);
            let name = if t.kind == Kind::Star {
                "*".to_string()
            } else {
                unescape(self.input, t)?
            };
            if self.cfg.reject_unknown_fields && name != "*" && !self.cfg.analysis.has_field(&name)
            {
                return Err(self.err(
                    ParseErrorKind::UnknownField,
                    t.start,
                    "a field of the schema",
                    format!("'{name}'"),
                ));
            }
            named = Some(name);
            self.pos += 2;
        }
        let field = named.as_deref().or(field);
        match self.kind(0) {
            Kind::LParen => {
                let open = self.tok(0);
                if depth >= self.cfg.max_depth {
                    return Err(self.err(
                        ParseErrorKind::TooDeep,
                        open.start,
                        format!("at most {} nested parentheses", self.cfg.max_depth),
                        "one more '('",
                    ));
                }
                self.pos += 1;
                let q = self.query(field, depth + 1)?;
                if self.kind(0) != Kind::RParen {
                    let col = self.input[..open.start].chars().count() + 1;
                    return Err(self.unexpected(format!("')' to close the '(' at column {col}")));
                }
                self.pos += 1;
                let boost = self.optional_boost()?;
                self.handle_boost(q, boost)
            }
            Kind::Term
            | Kind::Star
            | Kind::PrefixTerm
            | Kind::WildTerm
            | Kind::Regexp
            | Kind::Number
            | Kind::BareOper
            | Kind::Quoted
            | Kind::RangeStart => self.term(field),
            _ => Err(self.unexpected(format!("{EXPECT_CLAUSE}{}", self.after_previous()))),
        }
    }

    /// `[ "^" NUMBER ]`.
    pub(super) fn optional_boost(&mut self) -> PResult<Option<Token>> {
        if self.kind(0) != Kind::Carat {
            return Ok(None);
        }
        self.pos += 1;
        if self.kind(0) != Kind::Number {
            return Err(self.unexpected("a number right after '^'"));
        }
        let t = self.tok(0);
        self.pos += 1;
        Ok(Some(t))
    }

    /// `[ "^" NUMBER [FUZZY_SLOP] | FUZZY_SLOP [ "^" NUMBER ] ]`.
    pub(super) fn boost_and_fuzzy(&mut self) -> PResult<(Option<Token>, Option<Token>)> {
        let mut boost = None;
        let mut fuzzy = None;
        if self.kind(0) == Kind::Carat {
            boost = self.optional_boost()?;
            if self.kind(0) == Kind::FuzzySlop {
                fuzzy = Some(self.tok(0));
                self.pos += 1;
            }
        } else if self.kind(0) == Kind::FuzzySlop {
            fuzzy = Some(self.tok(0));
            self.pos += 1;
            boost = self.optional_boost()?;
        }
        Ok((boost, fuzzy))
    }

    /// `Term(field)`.
    pub(super) fn term(&mut self, field: Option<&str>) -> PResult<Option<Query>> {
        let t = self.tok(0);
        match t.kind {
            Kind::RangeStart => self.range(field),
            Kind::Quoted => {
                self.pos += 1;
                let (boost, fuzzy) = self.boost_and_fuzzy()?;
                let q = self.quoted_term(field, t, fuzzy)?;
                self.handle_boost(q, boost)
            }
            _ => {
                self.pos += 1;
                let (boost, fuzzy) = self.boost_and_fuzzy()?;
                let q = self.bare_token_query(field, t, fuzzy)?;
                self.handle_boost(q, boost)
            }
        }
    }

    /// The range alternative of `Term(field)`: `("[" | "{") bound TO bound ("]" | "}")
    /// ["^" NUMBER]`, each bound a RANGE_GOOP, a RANGE_QUOTED or a `TO`. As in Lucene, the
    /// bounds' escapes are resolved only once the whole range has parsed, and only an unquoted,
    /// unescaped `*` is an open end.
    pub(super) fn range(&mut self, field: Option<&str>) -> PResult<Option<Query>> {
        let open = self.tok(0);
        let include_lower = self.image(open) == "[";
        self.pos += 1;
        let lower = self.range_bound(&format!(
            "the lower bound of the range after '{}' (a value, a \"quoted value\" or '*')",
            self.image(open)
        ))?;
        if self.kind(0) != Kind::RangeTo {
            return Err(self.unexpected(format!(
                "'TO' after the lower bound {}",
                self.describe(lower)
            )));
        }
        self.pos += 1;
        let upper = self.range_bound(
            "the upper bound of the range after 'TO' (a value, a \"quoted value\" or '*')",
        )?;
        if self.kind(0) != Kind::RangeEnd {
            let col = self.input[..open.start].chars().count() + 1;
            return Err(self.unexpected(format!(
                "']' or '}}' to close the range opened at column {col}"
            )));
        }
        let include_upper = self.image(self.tok(0)) == "]";
        self.pos += 1;
        let boost = self.optional_boost()?;
        let lower = self.range_bound_text(lower)?;
        let upper = self.range_bound_text(upper)?;
        let q = self.range_query(
            field,
            lower,
            upper,
            include_lower,
            include_upper,
            open.start,
        )?;
        self.handle_boost(q, boost)
    }

    /// The token of one bound of a range.
    fn range_bound(&mut self, expected: &str) -> PResult<Token> {
        let t = self.tok(0);
        match t.kind {
            Kind::RangeGoop | Kind::RangeTo | Kind::RangeQuoted => {
                self.pos += 1;
                Ok(t)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// A bound's text (escapes resolved, quotes removed), or `None` for `*`.
    fn range_bound_text(&self, t: Token) -> PResult<Option<String>> {
        let image = self.image(t);
        if t.kind == Kind::RangeQuoted {
            let inner = &image[1..image.len() - 1];
            return Ok(Some(unescape_str(self.input, inner, t.start + 1)?));
        }
        if image == "*" {
            return Ok(None);
        }
        Ok(Some(unescape(self.input, t)?))
    }
}

pub(super) fn allowed_post_multi_term(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::Colon | Kind::Star | Kind::FuzzySlop | Kind::Carat | Kind::And | Kind::Or
    )
}
