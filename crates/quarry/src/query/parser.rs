//! How a query string becomes a [`Query`]: Lucene's classic `QueryParser` syntax and
//! semantics (and `MultiFieldQueryParser`'s, with several default fields), reproduced quirk
//! for quirk.
//!
//! # Syntax
//! Terms (`oil`), fields (`title:oil`, `title:(oil gas)`), `AND`/`OR`/`NOT` and `&&`/`||`/`!`,
//! `+`/`-`, parentheses, phrases (`"oil prices"`, `"oil prices"~2`), trailing-`*` prefixes
//! (`oil*`), boosts (`oil^2`, `(a b)^0.5`, `"a b"^3`), backslash escapes (`\:` and `\u0041`)
//! and `*:*`. Ranges (`[a TO b]`, `{a TO b}`), fuzzy terms (`oil~`), other wildcards
//! (`o?l`, `*oil`, `o*l`) and regular expressions (`/o.l/`) are refused with a
//! [`ParseErrorKind::Unsupported`] error.
//!
//! # Semantics (all as in Lucene 10's classic `QueryParser`)
//! * Clauses are combined by `QueryParserBase.addClause`: `a AND b` gives `+a +b`; `AND`
//!   also makes the *preceding* clause required unless it is prohibited, so with the default
//!   operator OR `a AND b OR c` gives `+a +b c`; with the default operator AND, `OR` makes
//!   the preceding clause optional, so `a AND b OR c` gives `+a b c`. Only one modifier is
//!   allowed per clause (`+-a` is an error).
//! * A query of a single unmodified clause is that clause's query (`(a)` is `a`); `NOT a` alone
//!   is a boolean with one prohibited clause (which matches nothing, as in Lucene).
//! * A term is analyzed with the field's analysis: no token drops the clause (an all-dropped
//!   query is an empty boolean, rendered `""`); one token is a term query; several tokens
//!   (`wi-fi`) are a boolean of SHOULD term clauses (MUST with the default operator AND).
//!   A quoted phrase that analyzes to one token is a term query; to several, a phrase query.
//!   Prefix terms are normalized, not tokenized.
//! * Like Lucene 10 (`splitOnWhitespace = false` by default), a run of two or more plain
//!   terms (`a b c`, not followed by `:`, `*`, `~`, `^`, `AND` or `OR`) is analyzed as one
//!   text and its tokens become sibling clauses: `x wi-fi` gives `x wi fi`, whereas with
//!   [`QueryParser::with_split_on_whitespace`]`(true)` it gives `x (wi fi)`.
//! * Several default fields (or any field boost) give `MultiFieldQueryParser` semantics: a
//!   bare term `a` becomes `(title:a body:a)`; a multi-token term groups per token
//!   (`(title:wi body:wi) (title:fi body:fi)`); a phrase becomes one phrase per field;
//!   explicit `field:` clauses are unaffected, except that prefix queries get the field boost.
//!
//! Lucene quirks kept on purpose: `a:b` with whitespace `a: b` still means field `a`;
//! `&&x` and `||x` are terms; `+ a`/`- a`/`! a` (operator then whitespace) are a term `+`/`-`/
//! `!` that analyzes to nothing; `a!b` is `a NOT b`; `foo*~2` is the prefix `foo*` (the fuzzy
//! suffix is ignored); `"a b"~x` has slop 0 and `"a b"~2.7` slop 2; `a^2.` boosts `a` by 2
//! and `.` is a separate term; an empty query is an error.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::ast::{Clause, Occur, Query};

/// The per-field analysis the parser needs. The engine implements it over the schema; it
/// must not panic for any field name or text.
pub trait FieldAnalysis: Send + Sync {
    /// The tokens of `text` in `field`, in position order (positions 0, 1, 2, ...). An
    /// empty result drops the clause.
    fn tokens(&self, field: &str, text: &str) -> Vec<String>;
    /// What a prefix term becomes in `field` (the standard analyzer: lowercase).
    fn normalize(&self, field: &str, text: &str) -> String;
    /// Whether `field` exists; consulted only when unknown fields are rejected
    /// ([`QueryParser::with_unknown_fields_rejected`]).
    fn has_field(&self, field: &str) -> bool {
        let _ = field;
        true
    }
}

/// The operator between clauses that have neither `AND`/`OR` nor `+`/`-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operator {
    /// `a b` means `a OR b` (Lucene's default).
    #[default]
    Or,
    /// `a b` means `a AND b`.
    And,
}

/// What went wrong, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input does not follow the query syntax.
    Syntax,
    /// Valid Lucene syntax that quarry does not support yet (ranges, fuzzy, wildcards,
    /// regular expressions).
    Unsupported,
    /// A value out of range: an infinite boost, a negative slop, a bad `\u` escape.
    InvalidValue,
    /// More nested parentheses than [`QueryParser::with_max_depth`] allows.
    TooDeep,
    /// A boolean query with more clauses than [`QueryParser::with_max_clause_count`] allows.
    TooManyClauses,
    /// A `field:` that the analysis does not know (only when unknown fields are rejected).
    UnknownField,
    /// A term without `field:` while the parser has no default field.
    NoDefaultField,
}

/// A query that could not be parsed, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseError {
    /// What kind of problem.
    pub kind: ParseErrorKind,
    /// Byte offset in the input where the problem is (the input length for end of input).
    pub position: usize,
    /// 1-based character column of `position`.
    pub column: usize,
    /// What the parser expected there.
    pub expected: String,
    /// What it found there.
    pub found: String,
    /// The input around `position` (at most ~60 characters; `…` marks cuts).
    pub excerpt: String,
    /// 0-based character index of `position` inside `excerpt`.
    pub excerpt_column: usize,
}

impl ParseError {
    fn new(
        kind: ParseErrorKind,
        input: &str,
        position: usize,
        expected: String,
        found: String,
    ) -> Self {
        let position = position.min(input.len());
        let column = input[..position].chars().count() + 1;
        let (excerpt, excerpt_column) = make_excerpt(input, position);
        ParseError {
            kind,
            position,
            column,
            expected,
            found,
            excerpt,
            excerpt_column,
        }
    }

    /// The excerpt with a caret under the error position, on two lines.
    pub fn excerpt_with_caret(&self) -> String {
        format!("{}\n{}^", self.excerpt, " ".repeat(self.excerpt_column))
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = self.column;
        match self.kind {
            ParseErrorKind::Unsupported => write!(
                f,
                "unsupported query syntax at column {col}: {} is not supported yet (supported here: {})",
                self.found, self.expected
            ),
            kind => {
                let headline = match kind {
                    ParseErrorKind::Syntax => "query syntax error",
                    ParseErrorKind::InvalidValue => "invalid value in query",
                    ParseErrorKind::TooDeep => "query nested too deeply",
                    ParseErrorKind::TooManyClauses => "query has too many clauses",
                    ParseErrorKind::UnknownField => "unknown field in query",
                    ParseErrorKind::NoDefaultField => "term without a field in query",
                    _ => "query error",
                };
                write!(f, "{headline} at column {col}: expected {}, found {}", self.expected, self.found)
            }
        }
    }
}

impl std::error::Error for ParseError {}

fn make_excerpt(input: &str, position: usize) -> (String, usize) {
    const SIDE: usize = 30;
    let before: Vec<char> = input[..position].chars().collect();
    let after: Vec<char> = input[position..].chars().collect();
    let mut out = String::new();
    let start = before.len().saturating_sub(SIDE);
    if start > 0 {
        out.push('…');
    }
    out.extend(&before[start..]);
    let col = out.chars().count();
    out.extend(after.iter().take(SIDE));
    if after.len() > SIDE {
        out.push('…');
    }
    (out, col)
}

/// Parses Lucene classic query syntax into [`Query`] values. Cheap to share: `parse` takes
/// `&self`.
#[derive(Clone)]
pub struct QueryParser {
    default_fields: Vec<String>,
    default_operator: Operator,
    analysis: Arc<dyn FieldAnalysis>,
    field_boosts: HashMap<String, f32>,
    split_on_whitespace: bool,
    phrase_slop: u32,
    max_clause_count: usize,
    max_depth: usize,
    reject_unknown_fields: bool,
}

impl fmt::Debug for QueryParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryParser")
            .field("default_fields", &self.default_fields)
            .field("default_operator", &self.default_operator)
            .field("field_boosts", &self.field_boosts)
            .field("split_on_whitespace", &self.split_on_whitespace)
            .field("phrase_slop", &self.phrase_slop)
            .field("max_clause_count", &self.max_clause_count)
            .field("max_depth", &self.max_depth)
            .field("reject_unknown_fields", &self.reject_unknown_fields)
            .finish_non_exhaustive()
    }
}

/// Lucene's `IndexSearcher.getMaxClauseCount()` default.
pub const DEFAULT_MAX_CLAUSE_COUNT: usize = 1024;
/// The default limit on nested parentheses.
pub const DEFAULT_MAX_DEPTH: usize = 256;

impl QueryParser {
    /// A parser whose bare terms search `default_field` (Lucene `new QueryParser(field, a)`).
    pub fn new(default_field: impl Into<String>, analysis: Arc<dyn FieldAnalysis>) -> Self {
        Self::with_default_fields(vec![default_field.into()], analysis)
    }

    /// A parser whose bare terms search every field in `fields`: with more than one field it
    /// follows Lucene's `MultiFieldQueryParser`; with none, bare terms are an error.
    pub fn with_default_fields(fields: Vec<String>, analysis: Arc<dyn FieldAnalysis>) -> Self {
        QueryParser {
            default_fields: fields,
            default_operator: Operator::Or,
            analysis,
            field_boosts: HashMap::new(),
            split_on_whitespace: false,
            phrase_slop: 0,
            max_clause_count: DEFAULT_MAX_CLAUSE_COUNT,
            max_depth: DEFAULT_MAX_DEPTH,
            reject_unknown_fields: false,
        }
    }

    /// Sets the operator between unmarked clauses (default [`Operator::Or`]).
    pub fn with_default_operator(mut self, operator: Operator) -> Self {
        self.default_operator = operator;
        self
    }

    /// Boosts a default field when a bare term is expanded over the default fields
    /// (`MultiFieldQueryParser`'s boosts map; turns on its semantics even for one field).
    /// A boost that is not finite or is negative is ignored (Lucene's `BoostQuery` refuses it).
    pub fn with_field_boost(mut self, field: impl Into<String>, boost: f32) -> Self {
        if boost.is_finite() && boost >= 0.0 {
            self.field_boosts.insert(field.into(), boost);
        }
        self
    }

    /// Lucene's `setSplitOnWhitespace` (default false, as in Lucene 10): when true, each
    /// whitespace-separated term is analyzed on its own.
    pub fn with_split_on_whitespace(mut self, split: bool) -> Self {
        self.split_on_whitespace = split;
        self
    }

    /// Lucene's `setPhraseSlop`: the slop of phrases written without `~N` (default 0).
    pub fn with_phrase_slop(mut self, slop: u32) -> Self {
        self.phrase_slop = slop;
        self
    }

    /// The most clauses one boolean query may have (default 1024, Lucene's limit).
    pub fn with_max_clause_count(mut self, max: usize) -> Self {
        self.max_clause_count = max.max(1);
        self
    }

    /// The deepest nesting of parentheses accepted (default 256).
    pub fn with_max_depth(mut self, max: usize) -> Self {
        self.max_depth = max;
        self
    }

    /// When true, `field:` prefixes naming a field the analysis does not know are an error
    /// (Lucene accepts them and the clause matches nothing).
    pub fn with_unknown_fields_rejected(mut self, reject: bool) -> Self {
        self.reject_unknown_fields = reject;
        self
    }

    /// The default fields.
    pub fn default_fields(&self) -> &[String] {
        &self.default_fields
    }

    /// The default operator.
    pub fn default_operator(&self) -> Operator {
        self.default_operator
    }

    /// Parses `input`. Never panics; every failure is a [`ParseError`].
    pub fn parse(&self, input: &str) -> Result<Query, ParseError> {
        let (tokens, lex_error) = lex(input);
        let mut parser = Parser {
            cfg: self,
            input,
            tokens,
            lex_error,
            pos: 0,
        };
        parser.top_level()
    }

    fn multi_field(&self) -> bool {
        self.default_fields.len() > 1 || !self.field_boosts.is_empty()
    }

    fn operator_occur(&self) -> Occur {
        match self.default_operator {
            Operator::Or => Occur::Should,
            Operator::And => Occur::Must,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Lexer: the token definitions of QueryParser.jj (DEFAULT and Boost states).
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    And,
    Or,
    Not,
    Plus,
    Minus,
    BareOper,
    LParen,
    RParen,
    Colon,
    Star,
    Carat,
    Quoted,
    Term,
    FuzzySlop,
    PrefixTerm,
    WildTerm,
    Regexp,
    RangeStart,
    Number,
    Eof,
    /// A lexical error; the parser reports `Parser::lex_error` when it reaches it.
    Error,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

fn is_term_start_char(c: char) -> bool {
    !matches!(
        c,
        ' ' | '\t'
            | '\n'
            | '\r'
            | '\u{3000}'
            | '+'
            | '-'
            | '!'
            | '('
            | ')'
            | ':'
            | '^'
            | '['
            | ']'
            | '"'
            | '{'
            | '}'
            | '~'
            | '*'
            | '?'
            | '\\'
            | '/'
    )
}

fn is_term_char(c: char) -> bool {
    is_term_start_char(c) || c == '-' || c == '+'
}

fn char_at(input: &str, i: usize) -> Option<char> {
    input.get(i..).and_then(|s| s.chars().next())
}

/// Scans the longest run of term characters (escapes included) and, when `wild`, `*`/`?`,
/// starting at `i`. Returns the end and how many wildcard characters it holds and whether
/// the last element is a `*`.
fn scan_run(input: &str, mut i: usize, wild: bool) -> (usize, usize, bool) {
    let mut wild_count = 0;
    let mut last_star = false;
    while let Some(c) = char_at(input, i) {
        if c == '\\' {
            match char_at(input, i + 1) {
                Some(next) => {
                    i += 1 + next.len_utf8();
                    last_star = false;
                    continue;
                }
                None => break,
            }
        }
        if wild && (c == '*' || c == '?') {
            wild_count += 1;
            last_star = c == '*';
            i += 1;
            continue;
        }
        if is_term_char(c) {
            last_star = false;
            i += c.len_utf8();
            continue;
        }
        break;
    }
    (i, wild_count, last_star)
}

struct LexResult {
    tokens: Vec<Token>,
    error: Option<(ParseErrorKind, usize, String, String)>,
}

fn lex(input: &str) -> (Vec<Token>, Option<ParseError>) {
    let r = lex_raw(input);
    let err = r
        .error
        .map(|(kind, pos, expected, found)| ParseError::new(kind, input, pos, expected, found));
    (r.tokens, err)
}

fn lex_raw(input: &str) -> LexResult {
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut boost_state = false;
    let push = |tokens: &mut Vec<Token>, kind, start, end| tokens.push(Token { kind, start, end });
    loop {
        if boost_state {
            // Lucene's Boost lexical state: only NUMBER, and no whitespace skipping.
            boost_state = false;
            let bytes = input.as_bytes();
            match char_at(input, i) {
                None => {
                    push(&mut tokens, Kind::Eof, i, i);
                    return LexResult {
                        tokens,
                        error: None,
                    };
                }
                Some(c) if c.is_ascii_digit() => {
                    let start = i;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                        i += 1;
                        while i < bytes.len() && bytes[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                    push(&mut tokens, Kind::Number, start, i);
                    continue;
                }
                Some(c) => {
                    push(&mut tokens, Kind::Error, i, i);
                    let found = describe_char(c);
                    let error = (
                        ParseErrorKind::Syntax,
                        i,
                        "a number right after '^'".to_string(),
                        found,
                    );
                    return LexResult {
                        tokens,
                        error: Some(error),
                    };
                }
            }
        }
        while let Some(c) = char_at(input, i) {
            if is_whitespace(c) {
                i += c.len_utf8();
            } else {
                break;
            }
        }
        let Some(c) = char_at(input, i) else {
            push(&mut tokens, Kind::Eof, i, i);
            return LexResult {
                tokens,
                error: None,
            };
        };
        let start = i;
        match c {
            '+' | '-' | '!' => {
                let (kind, end) = match char_at(input, i + 1) {
                    Some(w) if is_whitespace(w) => (Kind::BareOper, i + 1 + w.len_utf8()),
                    _ => (
                        match c {
                            '+' => Kind::Plus,
                            '-' => Kind::Minus,
                            _ => Kind::Not,
                        },
                        i + 1,
                    ),
                };
                push(&mut tokens, kind, start, end);
                i = end;
            }
            '(' | ')' | ':' | '^' => {
                let kind = match c {
                    '(' => Kind::LParen,
                    ')' => Kind::RParen,
                    ':' => Kind::Colon,
                    _ => {
                        boost_state = true;
                        Kind::Carat
                    }
                };
                push(&mut tokens, kind, start, i + 1);
                i += 1;
            }
            '"' => {
                let mut j = i + 1;
                loop {
                    match char_at(input, j) {
                        None => {
                            push(&mut tokens, Kind::Error, start, start);
                            let error = (
                                ParseErrorKind::Syntax,
                                start,
                                "a closing '\"' for the phrase starting here".to_string(),
                                "end of input".to_string(),
                            );
                            return LexResult {
                                tokens,
                                error: Some(error),
                            };
                        }
                        Some('"') => {
                            j += 1;
                            break;
                        }
                        Some('\\') => match char_at(input, j + 1) {
                            Some(next) => j += 1 + next.len_utf8(),
                            None => j += 1, // reaches end of input next round
                        },
                        Some(other) => j += other.len_utf8(),
                    }
                }
                push(&mut tokens, Kind::Quoted, start, j);
                i = j;
            }
            '~' => {
                let (end, _, _) = scan_run(input, i + 1, false);
                push(&mut tokens, Kind::FuzzySlop, start, end);
                i = end;
            }
            '/' => {
                // Regular expressions are unsupported; the parser reports this token.
                push(&mut tokens, Kind::Regexp, start, i + 1);
                push(&mut tokens, Kind::Eof, input.len(), input.len());
                return LexResult {
                    tokens,
                    error: None,
                };
            }
            '[' | '{' => {
                push(&mut tokens, Kind::RangeStart, start, i + 1);
                push(&mut tokens, Kind::Eof, input.len(), input.len());
                return LexResult {
                    tokens,
                    error: None,
                };
            }
            ']' | '}' => {
                push(&mut tokens, Kind::Error, start, start);
                let error = (
                    ParseErrorKind::Syntax,
                    start,
                    "a term, a phrase, an operator or '('".to_string(),
                    format!(
                        "'{c}' without a matching '{}'",
                        if c == ']' { '[' } else { '{' }
                    ),
                );
                return LexResult {
                    tokens,
                    error: Some(error),
                };
            }
            '*' | '?' => {
                let (end, _, _) = scan_run(input, i, true);
                let kind = if c == '*' && end == i + 1 {
                    Kind::Star
                } else {
                    Kind::WildTerm
                };
                push(&mut tokens, kind, start, end);
                i = end;
            }
            '\\' if char_at(input, i + 1).is_none() => {
                push(&mut tokens, Kind::Error, start, start);
                let error = (
                    ParseErrorKind::Syntax,
                    start,
                    "a character after the escape character '\\'".to_string(),
                    "end of input".to_string(),
                );
                return LexResult {
                    tokens,
                    error: Some(error),
                };
            }
            _ => {
                // A TERM_START_CHAR (or an escape): TERM, PREFIXTERM, WILDTERM or a keyword.
                let (end, wild_count, last_star) = scan_run(input, i, true);
                let image = &input[start..end];
                let kind = if wild_count == 0 {
                    match image {
                        "AND" | "&&" => Kind::And,
                        "OR" | "||" => Kind::Or,
                        "NOT" => Kind::Not,
                        _ => Kind::Term,
                    }
                } else if wild_count == 1 && last_star {
                    Kind::PrefixTerm
                } else {
                    Kind::WildTerm
                };
                push(&mut tokens, kind, start, end);
                i = end;
            }
        }
    }
}

fn describe_char(c: char) -> String {
    if c.is_whitespace() {
        format!("whitespace ({c:?})")
    } else {
        format!("'{c}'")
    }
}

// ---------------------------------------------------------------------------------------
// Parser: the productions of QueryParser.jj with QueryParserBase's query construction.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conj {
    None,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mods {
    None,
    Not,
    Req,
}

type PResult<T> = Result<T, ParseError>;

/// Lucene's `firstQuery`: what `Query()` returns when it ends with a single clause.
enum First {
    /// No unmodified first query (a modifier, or the first clause analyzed away).
    None,
    /// The first clause's query, which is `clauses[0]`.
    Clause0,
    /// A query that differs from the clause list (a term run's analysis result).
    Query(Query),
}

struct Parser<'a> {
    cfg: &'a QueryParser,
    input: &'a str,
    tokens: Vec<Token>,
    lex_error: Option<ParseError>,
    pos: usize,
}

const EXPECT_CLAUSE: &str = "a term, a phrase or '('";
const SUPPORTED: &str =
    "terms, \"phrases\", prefix* terms, field:, AND/OR/NOT, +/-, (...), ^boost and *:*";

impl<'a> Parser<'a> {
    fn tok(&self, k: usize) -> Token {
        let last = self.tokens.len() - 1; // the lexer always ends with Eof or Error
        self.tokens[(self.pos + k).min(last)]
    }

    fn kind(&self, k: usize) -> Kind {
        self.tok(k).kind
    }

    fn image(&self, t: Token) -> &'a str {
        &self.input[t.start..t.end]
    }

    fn err(
        &self,
        kind: ParseErrorKind,
        position: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ParseError {
        ParseError::new(kind, self.input, position, expected.into(), found.into())
    }

    /// The error for finding the current token where `expected` was wanted.
    fn unexpected(&self, expected: impl Into<String>) -> ParseError {
        let t = self.tok(0);
        if t.kind == Kind::Error {
            if let Some(e) = &self.lex_error {
                return e.clone();
            }
        }
        let found = self.describe(t);
        self.err(ParseErrorKind::Syntax, t.start, expected, found)
    }

    fn describe(&self, t: Token) -> String {
        if t.kind == Kind::Eof {
            return "end of input".to_string();
        }
        let image = self.image(t).trim_end_matches(is_whitespace);
        let shown: String = image.chars().take(40).collect();
        let cut = if shown.len() < image.len() { "…" } else { "" };
        format!("'{shown}{cut}'")
    }

    /// "after 'AND'"-style context from the previous token.
    fn after_previous(&self) -> String {
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

    fn top_level(&mut self) -> PResult<Query> {
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

    fn starts_clause(kind: Kind) -> bool {
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
    fn multi_term_ahead(&self) -> bool {
        self.kind(0) == Kind::Term
            && self.kind(1) == Kind::Term
            && allowed_post_multi_term(self.kind(2))
    }

    /// `Query(field)`: a first clause (or term run), then more clauses while they start.
    fn query(&mut self, field: Option<&str>, depth: usize) -> PResult<Option<Query>> {
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

    fn conjunction(&mut self) -> Conj {
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

    fn modifiers(&mut self) -> Mods {
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
    fn multi_term(&mut self, field: Option<&str>, clauses: &mut Vec<Clause>) -> PResult<First> {
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
    fn clause(&mut self, field: Option<&str>, depth: usize) -> PResult<Option<Query>> {
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
    fn optional_boost(&mut self) -> PResult<Option<Token>> {
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
    fn boost_and_fuzzy(&mut self) -> PResult<(Option<Token>, Option<Token>)> {
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
    fn term(&mut self, field: Option<&str>) -> PResult<Option<Query>> {
        let t = self.tok(0);
        match t.kind {
            Kind::RangeStart => Err(self.err(
                ParseErrorKind::Unsupported,
                t.start,
                SUPPORTED,
                format!(
                    "a range query ('{}a TO b{}')",
                    self.image(t),
                    if self.image(t) == "[" { ']' } else { '}' }
                ),
            )),
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

    /// `handleBareTokenQuery`.
    fn bare_token_query(
        &self,
        field: Option<&str>,
        t: Token,
        fuzzy: Option<Token>,
    ) -> PResult<Option<Query>> {
        let image = self.image(t);
        let image = if t.kind == Kind::BareOper {
            &image[..1]
        } else {
            image
        };
        let text = unescape_str(self.input, image, t.start)?;
        match t.kind {
            Kind::Star | Kind::WildTerm => self.wildcard_query(field, image, t),
            Kind::PrefixTerm => {
                let prefix = unescape_str(self.input, &image[..image.len() - 1], t.start)?;
                self.prefix_query(field, &prefix, t)
            }
            Kind::Regexp => Err(self.err(
                ParseErrorKind::Unsupported,
                t.start,
                SUPPORTED,
                "a regular expression query ('/.../')",
            )),
            _ => {
                if let Some(f) = fuzzy {
                    return Err(self.err(
                        ParseErrorKind::Unsupported,
                        f.start,
                        SUPPORTED,
                        format!("a fuzzy query ('{}{}')", image, self.image(f)),
                    ));
                }
                self.field_query(field, &text, t.start)
            }
        }
    }

    /// `handleQuotedTerm`: the phrase text and its slop (`(int) Float.parseFloat(..)`, the
    /// default slop when it does not parse).
    fn quoted_term(
        &self,
        field: Option<&str>,
        t: Token,
        fuzzy: Option<Token>,
    ) -> PResult<Option<Query>> {
        let mut slop = i64::from(self.cfg.phrase_slop);
        if let Some(f) = fuzzy {
            if let Some(v) = java_parse_float(&self.image(f)[1..]) {
                slop = i64::from(v as i32); // Java's saturating (int) cast, NaN -> 0
            }
        }
        let image = self.image(t);
        let text = unescape_str(self.input, &image[1..image.len() - 1], t.start + 1)?;
        let slop_at = fuzzy.map_or(t.start, |f| f.start);
        match field {
            Some(f) => {
                let q = self.new_field_query(f, &text, true, t.start)?;
                q.map(|q| self.apply_slop(q, slop, slop_at)).transpose()
            }
            None if !self.cfg.multi_field() => {
                let f = self.single_default_field(t.start)?;
                let q = self.new_field_query(f, &text, true, t.start)?;
                q.map(|q| self.apply_slop(q, slop, slop_at)).transpose()
            }
            None => {
                let mut clauses = Vec::new();
                for f in &self.cfg.default_fields {
                    if let Some(q) = self.new_field_query(f, &text, true, t.start)? {
                        let q = self.field_boosted(q, f);
                        clauses.push(self.apply_slop(q, slop, slop_at)?);
                    }
                }
                self.multi_field_query(clauses, t.start)
            }
        }
    }

    fn apply_slop(&self, q: Query, slop: i64, at: usize) -> PResult<Query> {
        match q {
            Query::Phrase { field, terms, .. } => {
                if slop < 0 {
                    return Err(self.err(
                        ParseErrorKind::InvalidValue,
                        at,
                        "a phrase slop of 0 or more",
                        slop.to_string(),
                    ));
                }
                Ok(Query::Phrase {
                    field,
                    terms,
                    slop: slop as u32,
                })
            }
            Query::Boost { query, boost } => Ok(Query::Boost {
                query: Box::new(self.apply_slop(*query, slop, at)?),
                boost,
            }),
            other => Ok(other),
        }
    }

    /// `handleBoost`: a boost on a dropped (empty) query is ignored, as in Lucene.
    fn handle_boost(&self, q: Option<Query>, boost: Option<Token>) -> PResult<Option<Query>> {
        let (Some(q), Some(b)) = (q.as_ref(), boost) else {
            return Ok(q);
        };
        let image = self.image(b);
        let value: f32 = image.parse().unwrap_or(1.0);
        if !value.is_finite() {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                b.start,
                "a finite boost",
                format!(
                    "'{}' (too large for a 32-bit float)",
                    image.chars().take(40).collect::<String>()
                ),
            ));
        }
        Ok(Some(Query::boosted(q.clone(), value)))
    }

    fn single_default_field(&self, at: usize) -> PResult<&'a str> {
        match self.cfg.default_fields.first() {
            Some(f) => Ok(f.as_str()),
            None => Err(self.err(
                ParseErrorKind::NoDefaultField,
                at,
                "'field:' before the term (the parser has no default field)",
                "a term without a field",
            )),
        }
    }

    /// `getFieldQuery(field, text, quoted = false)`, with `MultiFieldQueryParser`'s
    /// per-token grouping when the field is the default and there are several.
    fn field_query(&self, field: Option<&str>, text: &str, at: usize) -> PResult<Option<Query>> {
        if let Some(f) = field {
            return self.new_field_query(f, text, false, at);
        }
        if !self.cfg.multi_field() {
            let f = self.single_default_field(at)?;
            return self.new_field_query(f, text, false, at);
        }
        let mut per_field: Vec<(&str, Query)> = Vec::new();
        let mut max_terms = 0;
        for f in &self.cfg.default_fields {
            if let Some(q) = self.new_field_query(f, text, false, at)? {
                max_terms = max_terms.max(match &q {
                    Query::Boolean { clauses, .. } => clauses.len(),
                    _ => 1,
                });
                per_field.push((f.as_str(), q));
            }
        }
        let mut clauses = Vec::new();
        for term_num in 0..max_terms {
            let mut term_clauses = Vec::new();
            for (f, q) in &per_field {
                let sub = match q {
                    Query::Boolean { clauses, .. } => {
                        clauses.get(term_num).map(|c| c.query.clone())
                    }
                    other if term_num == 0 => Some(other.clone()),
                    _ => None,
                };
                if let Some(sub) = sub {
                    term_clauses.push(self.field_boosted(sub, f));
                }
            }
            if max_terms > 1 {
                if !term_clauses.is_empty() {
                    let group = term_clauses
                        .into_iter()
                        .map(|q| Clause::new(Occur::Should, q))
                        .collect();
                    clauses.push(self.checked_boolean(group, at)?);
                }
            } else {
                clauses.extend(term_clauses);
            }
        }
        self.multi_field_query(clauses, at)
    }

    /// `QueryBuilder.createFieldQuery` for a plain analyzer (one token per position).
    fn new_field_query(
        &self,
        field: &str,
        text: &str,
        quoted: bool,
        at: usize,
    ) -> PResult<Option<Query>> {
        let mut tokens = self.cfg.analysis.tokens(field, text);
        match tokens.len() {
            0 => Ok(None),
            1 => Ok(Some(Query::term(field, tokens.pop().unwrap_or_default()))),
            _ if quoted => Ok(Some(Query::Phrase {
                field: field.to_string(),
                terms: tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (i as u32, t))
                    .collect(),
                slop: self.cfg.phrase_slop,
            })),
            _ => {
                let occur = self.cfg.operator_occur();
                let clauses = tokens
                    .into_iter()
                    .map(|t| Clause::new(occur, Query::term(field, t)))
                    .collect();
                Ok(Some(self.checked_boolean(clauses, at)?))
            }
        }
    }

    /// `getWildcardQuery`: only `*:*` is supported.
    fn wildcard_query(&self, field: Option<&str>, image: &str, t: Token) -> PResult<Option<Query>> {
        let field_is_star = match field {
            Some(f) => f == "*",
            None => {
                !self.cfg.multi_field() && self.cfg.default_fields.first().is_some_and(|f| f == "*")
            }
        };
        if image == "*" && field_is_star {
            return Ok(Some(self.field_boosted(Query::MatchAll, "*")));
        }
        let found = if image == "*" {
            "a lone '*' wildcard (use '*:*' to match all documents)".to_string()
        } else {
            format!("the wildcard term '{image}' (only a single trailing '*' is supported)")
        };
        Err(self.err(ParseErrorKind::Unsupported, t.start, SUPPORTED, found))
    }

    /// `getPrefixQuery`: the prefix is normalized, not tokenized.
    fn prefix_query(&self, field: Option<&str>, prefix: &str, t: Token) -> PResult<Option<Query>> {
        if prefix.starts_with('*') {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                t.start,
                "a prefix that does not start with '*'",
                format!("'{}'", self.image(t)),
            ));
        }
        let make = |f: &str| Query::Prefix {
            field: f.to_string(),
            prefix: self.cfg.analysis.normalize(f, prefix),
        };
        match field {
            Some(f) => Ok(Some(self.field_boosted(make(f), f))),
            None if !self.cfg.multi_field() => Ok(Some(make(self.single_default_field(t.start)?))),
            None => {
                let clauses = self
                    .cfg
                    .default_fields
                    .iter()
                    .map(|f| self.field_boosted(make(f), f))
                    .collect();
                self.multi_field_query(clauses, t.start)
            }
        }
    }

    /// `MultiFieldQueryParser`'s boosts map (only in multi-field mode).
    fn field_boosted(&self, q: Query, field: &str) -> Query {
        if !self.cfg.multi_field() {
            return q;
        }
        match self.cfg.field_boosts.get(field) {
            Some(b) => Query::boosted(q, *b),
            None => q,
        }
    }

    /// `getMultiFieldQuery`: SHOULD over the per-field queries, nothing when empty.
    fn multi_field_query(&self, queries: Vec<Query>, at: usize) -> PResult<Option<Query>> {
        if queries.is_empty() {
            return Ok(None);
        }
        let clauses = queries
            .into_iter()
            .map(|q| Clause::new(Occur::Should, q))
            .collect();
        Ok(Some(self.checked_boolean(clauses, at)?))
    }

    fn checked_boolean(&self, clauses: Vec<Clause>, at: usize) -> PResult<Query> {
        if clauses.len() > self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        Ok(Query::boolean(clauses))
    }

    fn too_many(&self, at: usize) -> ParseError {
        self.err(
            ParseErrorKind::TooManyClauses,
            at,
            format!(
                "at most {} clauses in one boolean query",
                self.cfg.max_clause_count
            ),
            "more",
        )
    }

    /// `getBooleanQuery`: nothing when every clause was dropped.
    fn boolean_query(&self, clauses: Vec<Clause>) -> Option<Query> {
        if clauses.is_empty() {
            None
        } else {
            Some(Query::boolean(clauses))
        }
    }

    /// `QueryParserBase.addClause`, including its edits of the preceding clause.
    fn add_clause(
        &self,
        clauses: &mut Vec<Clause>,
        conj: Conj,
        mods: Mods,
        q: Option<Query>,
        at: usize,
    ) -> PResult<()> {
        if let Some(last) = clauses.last_mut() {
            // AND makes the preceding clause required unless it is prohibited.
            if conj == Conj::And && last.occur != Occur::MustNot {
                last.occur = Occur::Must;
            }
            // With default AND, OR makes the preceding clause optional unless prohibited.
            if self.cfg.default_operator == Operator::And
                && conj == Conj::Or
                && last.occur != Occur::MustNot
            {
                last.occur = Occur::Should;
            }
        }
        let Some(q) = q else {
            return Ok(()); // analyzed away
        };
        let prohibited = mods == Mods::Not;
        let required = match self.cfg.default_operator {
            Operator::Or => mods == Mods::Req || (conj == Conj::And && !prohibited),
            Operator::And => !prohibited && conj != Conj::Or,
        };
        let occur = if prohibited {
            Occur::MustNot
        } else if required {
            Occur::Must
        } else {
            Occur::Should
        };
        if clauses.len() >= self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        clauses.push(Clause::new(occur, q));
        Ok(())
    }

    /// `addMultiTermClauses`: flatten a boolean of term queries; otherwise add its clauses
    /// (or the query) with the default operator's occur.
    fn add_multi_term_clauses(
        &self,
        clauses: &mut Vec<Clause>,
        q: Option<Query>,
        at: usize,
    ) -> PResult<()> {
        // Lucene 10.6 adds an analyzed run of terms as one clause (a nested boolean when it has
        // several tokens): `oil gas -coal` is `(body:oil body:gas) -body:coal`; a run that is
        // the whole query is returned as is by `Query()` (`oil gas` is `body:oil body:gas`).
        // Runs over several default fields give per-token groups, which are added one by one.
        let Some(q) = q else {
            return Ok(());
        };
        let occur = self.cfg.operator_occur();
        match q {
            // Per-token groups (several default fields): each group becomes a clause.
            Query::Boolean {
                clauses: nested, ..
            } if !nested.iter().all(|c| matches!(c.query, Query::Term { .. })) => {
                for c in nested {
                    clauses.push(Clause::new(occur, c.query));
                }
            }
            other => clauses.push(Clause::new(occur, other)),
        }
        if clauses.len() > self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        Ok(())
    }
}

fn allowed_post_multi_term(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::Colon | Kind::Star | Kind::FuzzySlop | Kind::Carat | Kind::And | Kind::Or
    )
}

fn unescape(input: &str, t: Token) -> PResult<String> {
    unescape_str(input, &input[t.start..t.end], t.start)
}

/// Lucene's `discardEscapeChar`: `\x` is `x`; `\uXXXX` is a UTF-16 code unit (surrogate
/// pairs combine; a lone surrogate becomes U+FFFD). `offset` is `s`'s byte offset in `input`.
fn unescape_str(input: &str, s: &str, offset: usize) -> PResult<String> {
    if !s.contains('\\') {
        return Ok(s.to_string());
    }
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        match chars.next() {
            None => {
                return Err(ParseError::new(
                    ParseErrorKind::Syntax,
                    input,
                    offset + i,
                    "a character after the escape character '\\'".into(),
                    "end of the term".into(),
                ))
            }
            Some((_, 'u')) => {
                let mut unit: u16 = 0;
                for _ in 0..4 {
                    match chars.next() {
                        None => {
                            return Err(ParseError::new(
                                ParseErrorKind::InvalidValue,
                                input,
                                offset + i,
                                "four hex digits after '\\u'".into(),
                                "a truncated unicode escape".into(),
                            ))
                        }
                        Some((j, h)) => match h.to_digit(16) {
                            Some(d) if h.is_ascii() => unit = unit * 16 + d as u16,
                            _ => {
                                return Err(ParseError::new(
                                    ParseErrorKind::InvalidValue,
                                    input,
                                    offset + j,
                                    "a hex digit in the unicode escape".into(),
                                    describe_char(h),
                                ))
                            }
                        },
                    }
                }
                units.push(unit);
            }
            Some((_, other)) => {
                let mut buf = [0u16; 2];
                units.extend_from_slice(other.encode_utf16(&mut buf));
            }
        }
    }
    Ok(String::from_utf16_lossy(&units))
}

/// Java's `Float.parseFloat` for the decimal forms (`2`, `2.5`, `.5`, `2.`, `1e3`, `2f`,
/// `NaN`, `Infinity`, optional sign); hexadecimal forms are not recognized (None, like a
/// parse failure).
fn java_parse_float(s: &str) -> Option<f32> {
    let s = s.trim_matches(|c: char| c <= ' ');
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let value = match body {
        "NaN" => f32::NAN,
        "Infinity" => f32::INFINITY,
        _ => {
            let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
            let bytes = body.as_bytes();
            let mut i = 0;
            let mut digits = 0;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
                digits += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                    digits += 1;
                }
            }
            if digits == 0 {
                return None;
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                i += 1;
                if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
                    i += 1;
                }
                let exp_start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                if i == exp_start {
                    return None;
                }
            }
            if i != bytes.len() {
                return None;
            }
            body.parse::<f32>().ok()?
        }
    };
    Some(if neg { -value } else { value })
}

/// A dependency-free stand-in for Lucene's `StandardAnalyzer` (no stop words): words are
/// runs of letters, digits and `_`; `.` and `'` join letters/digits on both sides (`u.s`,
/// `o'neil`, `3.5`), `,` joins digits (`1,000`); CJK ideographs and kana are one token each;
/// tokens are lowercased and split at 255 characters. Normalization lowercases. Every field
/// exists. Meant for tests, fuzzing and tools until the schema-backed analysis is wired in.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimpleAnalysis;

impl SimpleAnalysis {
    fn is_single_char_token(c: char) -> bool {
        matches!(c as u32,
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
    }

    fn is_word(c: char) -> bool {
        (c.is_alphanumeric() || c == '_') && !Self::is_single_char_token(c)
    }
}

impl FieldAnalysis for SimpleAnalysis {
    fn tokens(&self, _field: &str, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        let mut current: Vec<char> = Vec::new();
        let flush = |current: &mut Vec<char>, out: &mut Vec<String>| {
            for chunk in current.chunks(255) {
                out.push(chunk.iter().collect::<String>().to_lowercase());
            }
            current.clear();
        };
        for (i, &c) in chars.iter().enumerate() {
            if Self::is_word(c) {
                current.push(c);
                continue;
            }
            let prev = if current.is_empty() {
                None
            } else {
                chars.get(i.wrapping_sub(1)).copied()
            };
            let next = chars.get(i + 1).copied();
            let joins = match (prev, next) {
                (Some(p), Some(n)) if p.is_alphanumeric() && n.is_alphanumeric() => match c {
                    '.' | '\'' | '\u{2019}' => true,
                    ',' | ';' => p.is_numeric() && n.is_numeric(),
                    _ => false,
                },
                _ => false,
            };
            if joins {
                current.push(c);
                continue;
            }
            flush(&mut current, &mut out);
            if Self::is_single_char_token(c) {
                out.push(c.to_string());
            }
        }
        flush(&mut current, &mut out);
        out
    }

    fn normalize(&self, _field: &str, text: &str) -> String {
        text.to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ast::java_float_to_string;
    use proptest::prelude::*;

    /// SimpleAnalysis plus the stop word "the" and the unknown field "nope".
    #[derive(Debug)]
    struct StopAnalysis;

    impl FieldAnalysis for StopAnalysis {
        fn tokens(&self, field: &str, text: &str) -> Vec<String> {
            let mut t = SimpleAnalysis.tokens(field, text);
            t.retain(|w| w != "the");
            t
        }
        fn normalize(&self, field: &str, text: &str) -> String {
            SimpleAnalysis.normalize(field, text)
        }
        fn has_field(&self, field: &str) -> bool {
            field != "nope"
        }
    }

    fn parser() -> QueryParser {
        QueryParser::new("body", Arc::new(StopAnalysis))
    }

    fn p(input: &str) -> String {
        match parser().parse(input) {
            Ok(q) => q.to_string(),
            Err(e) => panic!("{input:?} failed: {e}"),
        }
    }

    fn p_and(input: &str) -> String {
        parser()
            .with_default_operator(Operator::And)
            .parse(input)
            .unwrap()
            .to_string()
    }

    fn multi() -> QueryParser {
        QueryParser::with_default_fields(
            vec!["title".into(), "body".into()],
            Arc::new(StopAnalysis),
        )
    }

    fn err(input: &str) -> ParseError {
        err_with(&parser(), input)
    }

    fn err_with(qp: &QueryParser, input: &str) -> ParseError {
        match qp.parse(input) {
            Ok(q) => panic!("{input:?} parsed as {q}"),
            Err(e) => e,
        }
    }

    #[test]
    fn terms_and_fields() {
        assert_eq!(p("oil"), "body:oil");
        assert_eq!(p("OIL"), "body:oil");
        assert_eq!(p("title:oil"), "title:oil");
        assert_eq!(p("title: oil"), "title:oil");
        assert_eq!(p("title:(oil gas)"), "title:oil title:gas");
        assert_eq!(p("+title:(oil gas) x"), "+(title:oil title:gas) body:x");
        assert_eq!(p("title:(oil body:gas)"), "title:oil body:gas");
        assert_eq!(p("my\\ field:x"), "my field:x");
        assert_eq!(p("oil gas"), "body:oil body:gas");
        assert_eq!(p("a b c d"), "body:a body:b body:c body:d");
        assert_eq!(p("1987"), "body:1987");
        assert_eq!(p("u.s."), "body:u.s");
    }

    #[test]
    fn boolean_operators() {
        assert_eq!(p("oil AND price"), "+body:oil +body:price");
        assert_eq!(p("oil && price"), "+body:oil +body:price");
        assert_eq!(p("trade OR export"), "body:trade body:export");
        assert_eq!(p("trade || export"), "body:trade body:export");
        assert_eq!(p("+increase +tax"), "+body:increase +body:tax");
        assert_eq!(
            p("+decline nkr -range"),
            "+body:decline body:nkr -body:range"
        );
        assert_eq!(p("-a b"), "-body:a body:b");
        assert_eq!(p("a NOT b"), "body:a -body:b");
        assert_eq!(p("a !b"), "body:a -body:b");
        assert_eq!(p("a!b"), "body:a -body:b");
        assert_eq!(p("a AND NOT b"), "+body:a -body:b");
        assert_eq!(p("NOT a"), "-body:a");
        assert_eq!(p("!a"), "-body:a");
        assert_eq!(p("-a"), "-body:a");
        assert_eq!(p("+a"), "+body:a");
        assert_eq!(p("NOT a AND b"), "-body:a +body:b");
        assert_eq!(p("a OR NOT b"), "body:a -body:b");
        assert_eq!(
            p("to AND be AND or AND not"),
            "+body:to +body:be +body:or +body:not"
        );
        // Lucene's addClause: AND makes the previous clause required.
        assert_eq!(p("a AND b OR c"), "+body:a +body:b body:c");
        assert_eq!(p("a OR b AND c"), "body:a +body:b +body:c");
        assert_eq!(p("a && b || c"), "+body:a +body:b body:c");
        assert_eq!(p("-a AND b"), "-body:a +body:b");
    }

    #[test]
    fn default_operator_and() {
        assert_eq!(p_and("a b"), "+body:a +body:b");
        assert_eq!(p_and("a OR b"), "body:a body:b");
        assert_eq!(p_and("a AND b OR c"), "+body:a body:b body:c");
        assert_eq!(p_and("-a OR b"), "-body:a body:b");
        assert_eq!(p_and("+a OR b"), "body:a body:b");
        assert_eq!(p_and("a -b c"), "+body:a -body:b +body:c");
        assert_eq!(p_and("wi-fi"), "+body:wi +body:fi");
        assert_eq!(p_and("x wi-fi"), "+body:x +body:wi +body:fi");
        assert_eq!(p_and("a"), "body:a");
    }

    #[test]
    fn parentheses() {
        assert_eq!(p("(a)"), "body:a");
        assert_eq!(p("((a))"), "body:a");
        assert_eq!(p("(a b)"), "body:a body:b");
        assert_eq!(p("+(a b)"), "+(body:a body:b)");
        assert_eq!(p("(a (b c))"), "body:a (body:b body:c)");
        assert_eq!(
            p("a (b -c) +(d AND e)"),
            "body:a (body:b -body:c) +(+body:d +body:e)"
        );
        assert_eq!(p("(+a)"), "+body:a");
        assert_eq!(p("x (+a)"), "body:x (+body:a)");
    }

    #[test]
    fn phrases() {
        assert_eq!(p("\"oil prices\""), "body:\"oil prices\"");
        assert_eq!(p("\"to be or not to be\""), "body:\"to be or not to be\"");
        assert_eq!(p("\"oil prices\"~2"), "body:\"oil prices\"~2");
        assert_eq!(p("\"oil prices\"~2.7"), "body:\"oil prices\"~2");
        assert_eq!(p("\"oil prices\"~"), "body:\"oil prices\"");
        assert_eq!(p("\"oil prices\"~x"), "body:\"oil prices\"");
        assert_eq!(p("\"oil prices\"~1e1"), "body:\"oil prices\"~10");
        assert_eq!(
            p("\"oil prices\"~Infinity"),
            "body:\"oil prices\"~2147483647"
        );
        assert_eq!(p("\"oil\""), "body:oil");
        assert_eq!(p("\"oil\"~2"), "body:oil");
        assert_eq!(p("\"oil\"~-2"), "body:oil");
        assert_eq!(p("\"the\""), "");
        assert_eq!(p("\"Oil, Prices!\""), "body:\"oil prices\"");
        assert_eq!(p("title:\"oil prices\""), "title:\"oil prices\"");
        assert_eq!(p("\"a \\\"quoted\\\" b\""), "body:\"a quoted b\"");
        assert_eq!(p("\"oil prices\"^2"), "(body:\"oil prices\")^2.0");
        assert_eq!(p("\"a b\"~2^3"), "(body:\"a b\"~2)^3.0");
        assert_eq!(p("\"a b\"^3~2"), "(body:\"a b\"~2)^3.0");
        assert_eq!(p("x \"a b\" y"), "body:x body:\"a b\" body:y");
        let slop = parser().with_phrase_slop(3);
        assert_eq!(slop.parse("\"a b\"").unwrap().to_string(), "body:\"a b\"~3");
        assert_eq!(
            slop.parse("\"a b\"~1").unwrap().to_string(),
            "body:\"a b\"~1"
        );
        // Phrase positions come from the analysis.
        let q = parser().parse("\"x y z\"").unwrap();
        assert_eq!(
            q,
            Query::Phrase {
                field: "body".into(),
                terms: vec![(0, "x".into()), (1, "y".into()), (2, "z".into())],
                slop: 0
            }
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(p("oil*"), "body:oil*");
        assert_eq!(p("OIL*"), "body:oil*");
        assert_eq!(p("Wi-Fi*"), "body:wi-fi*");
        assert_eq!(p("title:Oil*"), "title:oil*");
        assert_eq!(p("oil* gas"), "body:oil* body:gas");
        assert_eq!(p("a\\*b*"), "body:a*b*");
        // Lucene ignores a fuzzy suffix on a prefix term.
        assert_eq!(p("foo*~2"), "body:foo*");
        assert_eq!(p("foo*^2"), "(body:foo*)^2.0");
        assert_eq!(p("AND*"), "body:and*");
    }

    #[test]
    fn boosts() {
        assert_eq!(p("oil^2"), "(body:oil)^2.0");
        assert_eq!(p("oil^2.5"), "(body:oil)^2.5");
        assert_eq!(p("oil^0.1"), "(body:oil)^0.1");
        assert_eq!(p("oil^0"), "(body:oil)^0.0");
        assert_eq!(p("oil^10000000"), "(body:oil)^1.0E7");
        assert_eq!(p("(a b)^0.5"), "(body:a body:b)^0.5");
        assert_eq!(p("(a^2)^3"), "((body:a)^2.0)^3.0");
        assert_eq!(p("x oil^2"), "body:x (body:oil)^2.0");
        assert_eq!(p("+oil^2"), "+(body:oil)^2.0");
        assert_eq!(p("title:(a b)^2"), "(title:a title:b)^2.0");
        // A NUMBER is digits[.digits]; the rest is lexed again.
        assert_eq!(p("a^2."), "(body:a)^2.0");
        assert_eq!(p("a^2.x"), "(body:a)^2.0 body:x");
        // A boost on an analyzed-away clause is dropped.
        assert_eq!(p("the^2 a"), "body:a");
        assert_eq!(
            p("(the)^99999999999999999999999999999999999999999 a"),
            "body:a"
        );
        let q = parser().parse("oil^1.5").unwrap();
        assert_eq!(q, Query::boosted(Query::term("body", "oil"), 1.5));
    }

    #[test]
    fn match_all() {
        assert_eq!(p("*:*"), "*:*");
        assert_eq!(parser().parse("*:*").unwrap(), Query::MatchAll);
        assert_eq!(p("*:*^2"), "(*:*)^2.0");
        assert_eq!(p("-*:*"), "-*:*");
        assert_eq!(p("+*:* -oil"), "+*:* -body:oil");
        assert_eq!(p("*:(*)"), "*:*");
        // A field named '*' with a plain term is a term on field '*' (as in Lucene).
        assert_eq!(p("*:oil"), "*:oil");
    }

    #[test]
    fn analysis_effects() {
        assert_eq!(p("wi-fi"), "body:wi body:fi");
        assert_eq!(p("x wi-fi"), "body:x body:wi body:fi");
        assert_eq!(p("x AND wi-fi"), "+body:x +(body:wi body:fi)");
        assert_eq!(p("+wi-fi"), "+(body:wi body:fi)");
        let split = parser().with_split_on_whitespace(true);
        assert_eq!(
            split.parse("x wi-fi").unwrap().to_string(),
            "body:x (body:wi body:fi)"
        );
        assert_eq!(split.parse("a b").unwrap().to_string(), "body:a body:b");
        assert_eq!(split.parse("the a").unwrap().to_string(), "body:a");
        // Words that analyze to nothing drop their clause.
        assert_eq!(p("the"), "");
        assert!(parser().parse("the").unwrap().is_empty_boolean());
        assert_eq!(p("the oil"), "body:oil");
        assert_eq!(
            parser().parse("the oil").unwrap(),
            Query::term("body", "oil")
        );
        assert_eq!(p("the AND a"), "+body:a");
        assert_eq!(p("a AND the"), "body:a");
        assert_eq!(p("a AND the AND b"), "+body:a +body:b");
        assert_eq!(p("(the) a"), "body:a");
        assert_eq!(p("-the"), "");
        // Operator followed by whitespace is a term of its own (Lucene's BAREOPER).
        assert_eq!(p("a + b"), "body:a body:b");
        assert_eq!(p("a - b"), "body:a body:b");
        assert_eq!(p("a ! b"), "body:a body:b");
        assert_eq!(p("&&x"), "body:x");
        assert_eq!(p("a . b"), "body:a body:b");
    }

    #[test]
    fn multi_term_runs_nest_like_lucene_10_6() {
        // Each rendering was produced by Lucene 10.6.0's classic QueryParser (default field
        // body, operator OR, StandardAnalyzer) through bench/lucene's oracle command.
        let cases = [
            (
                "+energy oil gas coal",
                "+body:energy (body:oil body:gas body:coal)",
            ),
            ("oil gas -coal", "(body:oil body:gas) -body:coal"),
            ("-coal oil gas", "-body:coal (body:oil body:gas)"),
            ("oil gas AND coal", "body:oil +body:gas +body:coal"),
            ("oil gas coal", "body:oil body:gas body:coal"),
            ("x wi-fi", "body:x body:wi body:fi"),
            ("x wi-fi -y", "(body:x body:wi body:fi) -body:y"),
            ("title:x oil gas", "title:x (body:oil body:gas)"),
            ("oil gas title:x", "(body:oil body:gas) title:x"),
            ("(oil gas) coal", "(body:oil body:gas) body:coal"),
            ("oil gas (coal)", "(body:oil body:gas) body:coal"),
            (
                "a b \"c d\" e f",
                "(body:a body:b) body:\"c d\" (body:e body:f)",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parser().parse(input).unwrap().to_string(), want, "{input}");
        }
    }

    #[test]
    fn term_runs_follow_lucene_multi_term_lookahead() {
        // A run of plain terms is analyzed as one text; it stops before a term followed by
        // ':', '*', '~', '^', AND or OR. Expected strings checked against Lucene 10.6.0.
        assert_eq!(p("a b:c"), "body:a b:c");
        assert_eq!(p("a wi-fi b^2"), "(body:a body:wi body:fi) (body:b)^2.0");
        assert_eq!(p("x wi-fi AND y"), "body:x +(body:wi body:fi) +body:y");
        assert_eq!(p("a b AND c"), "body:a +body:b +body:c");
        assert_eq!(p("x AND a b c"), "+body:x +body:a (body:b body:c)");
        assert_eq!(p("-a wi-fi c"), "-body:a (body:wi body:fi body:c)");
        assert_eq!(p("title:(wi-fi x)"), "title:wi title:fi title:x");
        assert_eq!(p("a b *:*"), "body:a body:b *:*");
        let q = parser().parse("a wi-fi").unwrap();
        assert_eq!(
            q,
            Query::boolean(
                ["a", "wi", "fi"]
                    .iter()
                    .map(|t| Clause::new(Occur::Should, Query::term("body", *t)))
                    .collect()
            )
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape_str("", "a\\:b", 0).unwrap(), "a:b");
        assert_eq!(unescape_str("", "\\u0041b", 0).unwrap(), "Ab");
        assert_eq!(unescape_str("", "\\\\", 0).unwrap(), "\\");
        assert_eq!(unescape_str("", "\\uD83D\\uDE00", 0).unwrap(), "\u{1F600}");
        assert_eq!(unescape_str("", "\\uD83D", 0).unwrap(), "\u{FFFD}");
        assert_eq!(p("\\(a\\)"), "body:a");
        assert_eq!(p("\\u0041BC"), "body:abc");
        assert_eq!(p("\\AND"), "body:and");
        assert_eq!(p("a\\ b"), "body:a body:b");
        assert_eq!(p("title\\:x"), "body:title body:x");
    }

    #[test]
    fn multi_field() {
        let m = multi();
        let s = |q: &str| m.parse(q).unwrap().to_string();
        assert_eq!(s("oil"), "title:oil body:oil");
        assert_eq!(s("oil gas"), "(title:oil body:oil) (title:gas body:gas)");
        assert_eq!(
            s("oil AND gas"),
            "+(title:oil body:oil) +(title:gas body:gas)"
        );
        assert_eq!(s("wi-fi"), "(title:wi body:wi) (title:fi body:fi)");
        assert_eq!(
            s("\"oil prices\"~1"),
            "title:\"oil prices\"~1 body:\"oil prices\"~1"
        );
        assert_eq!(s("oil*"), "title:oil* body:oil*");
        assert_eq!(s("x:oil"), "x:oil");
        assert_eq!(s("the"), "");
        assert_eq!(s("*:*"), "*:*");
        let and = multi().with_default_operator(Operator::And);
        assert_eq!(
            and.parse("oil gas").unwrap().to_string(),
            "+(title:oil body:oil) +(title:gas body:gas)"
        );
        let boosted = multi().with_field_boost("title", 2.0);
        let b = |q: &str| boosted.parse(q).unwrap().to_string();
        assert_eq!(b("oil"), "(title:oil)^2.0 body:oil");
        assert_eq!(b("\"a b\"~1"), "(title:\"a b\"~1)^2.0 body:\"a b\"~1");
        // Lucene applies the boost to explicit-field prefix queries, not to terms.
        assert_eq!(b("title:oil*"), "(title:oil*)^2.0");
        assert_eq!(b("title:oil"), "title:oil");
    }

    #[test]
    fn error_messages() {
        let e = err("a AND ");
        assert_eq!(e.kind, ParseErrorKind::Syntax);
        assert_eq!(e.column, 7);
        assert_eq!(e.position, 6);
        assert_eq!(
            e.to_string(),
            "query syntax error at column 7: expected a term, a phrase or '(' after 'AND', found end of input"
        );
        assert_eq!(e.excerpt_with_caret(), "a AND \n      ^");
        let e = err("");
        assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 1));
        assert!(e.to_string().contains("empty query"), "{e}");
        let e = err("   ");
        assert_eq!(e.found, "only whitespace");
        let e = err("(a");
        assert_eq!(e.to_string(), "query syntax error at column 3: expected ')' to close the '(' at column 1, found end of input");
        let e = err("a)");
        assert_eq!(
            (e.column, e.found.as_str()),
            (2, "')' without a matching '('")
        );
        let e = err("\"abc");
        assert_eq!((e.column, e.found.as_str()), (1, "end of input"));
        assert!(e.expected.contains("closing '\"'"));
        assert_eq!(
            err("a^").to_string(),
            "query syntax error at column 3: expected a number right after '^', found end of input"
        );
        assert_eq!(err("a^x").column, 3);
        assert_eq!(err("a^ 2").column, 3);
        assert_eq!(err("^2").column, 1);
        assert_eq!(err("+-a").column, 2);
        assert_eq!(err("a OR OR b").to_string(), "query syntax error at column 6: expected a term, a phrase or '(' after 'OR', found 'OR'");
        assert_eq!(err("title:").to_string(), "query syntax error at column 7: expected a term, a phrase or '(' after 'title:', found end of input");
        assert_eq!(err("a:b:c").column, 4);
        assert_eq!(err("]").column, 1);
        assert_eq!(err("a }").column, 3);
        assert_eq!(err("a\\").column, 2);
        assert_eq!(err("()").column, 2);
        assert_eq!(err("a -").column, 4);
        assert_eq!(err("(a)~2").column, 4);
        assert_eq!(err("ab:\"x").column, 4);
        // Columns count characters, positions bytes.
        let e = err("ééé AND");
        assert_eq!((e.column, e.position), (8, 10));
    }

    #[test]
    fn unsupported_syntax() {
        for (q, col) in [
            ("[a TO b]", 1),
            ("x:{a TO b}", 3),
            ("oil~", 4),
            ("oil~2", 4),
            ("oil^2~1", 6),
            ("o?l", 1),
            ("o*l", 1),
            ("x *oil", 3),
            ("oil**", 1),
            ("*", 1),
            ("body:*", 6),
            ("/o.l/", 1),
            ("a /o.l", 3),
        ] {
            let e = err(q);
            assert_eq!(
                (e.kind, e.column),
                (ParseErrorKind::Unsupported, col),
                "{q}: {e}"
            );
            assert!(e.to_string().contains("not supported yet"), "{e}");
        }
        assert_eq!(
            err("[a TO b]").to_string(),
            format!("unsupported query syntax at column 1: a range query ('[a TO b]') is not supported yet (supported here: {SUPPORTED})")
        );
    }

    #[test]
    fn invalid_values_and_limits() {
        let e = err("a^99999999999999999999999999999999999999999");
        assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 3));
        let e = err("\"a b\"~-2");
        assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 6));
        assert_eq!(err("\\u00").kind, ParseErrorKind::InvalidValue);
        let e = err("ab\\u00zz");
        assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 7));
        assert_eq!(err("\\**").kind, ParseErrorKind::InvalidValue);

        let deep_ok = format!("{}a{}", "(".repeat(256), ")".repeat(256));
        assert_eq!(p(&deep_ok), "body:a");
        let too_deep = format!("{}a{}", "(".repeat(257), ")".repeat(257));
        let e = err(&too_deep);
        assert_eq!((e.kind, e.column), (ParseErrorKind::TooDeep, 257));
        let e = err(&"(".repeat(100_000));
        assert_eq!(e.kind, ParseErrorKind::TooDeep);
        let shallow = parser().with_max_depth(2);
        assert!(shallow.parse("((a))").is_ok());
        assert_eq!(err_with(&shallow, "(((a)))").kind, ParseErrorKind::TooDeep);

        let many = "a ".repeat(1025);
        assert_eq!(err(&many).kind, ParseErrorKind::TooManyClauses);
        assert!(parser().parse(&"a ".repeat(1024)).is_ok());
        let split = parser().with_split_on_whitespace(true);
        assert_eq!(err_with(&split, &many).kind, ParseErrorKind::TooManyClauses);
        let many_ops = "+a ".repeat(1025);
        assert_eq!(err(&many_ops).kind, ParseErrorKind::TooManyClauses);
        let small = parser().with_max_clause_count(2);
        assert_eq!(
            err_with(&small, "a-b-c").kind,
            ParseErrorKind::TooManyClauses
        );

        let strict = parser().with_unknown_fields_rejected(true);
        let e = err_with(&strict, "a nope:x");
        assert_eq!((e.kind, e.column), (ParseErrorKind::UnknownField, 3));
        assert!(strict.parse("title:x *:*").is_ok());
        assert_eq!(p("nope:x"), "nope:x");

        let none = QueryParser::with_default_fields(vec![], Arc::new(StopAnalysis));
        assert_eq!(err_with(&none, "a").kind, ParseErrorKind::NoDefaultField);
        assert_eq!(
            err_with(&none, "\"a b\"").kind,
            ParseErrorKind::NoDefaultField
        );
        assert_eq!(err_with(&none, "a*").kind, ParseErrorKind::NoDefaultField);
        assert_eq!(none.parse("f:a").unwrap().to_string(), "f:a");
    }

    #[test]
    fn lexer_tokens() {
        let kinds = |s: &str| lex(s).0.iter().map(|t| t.kind).collect::<Vec<_>>();
        use Kind::*;
        assert_eq!(kinds("a AND b"), vec![Term, And, Term, Eof]);
        assert_eq!(kinds("ANDY ORx NOTE"), vec![Term, Term, Term, Eof]);
        assert_eq!(
            kinds("&& || ! &&& |"),
            vec![And, Or, BareOper, Term, Term, Eof]
        );
        assert_eq!(
            kinds("+a -b !c"),
            vec![Plus, Term, Minus, Term, Not, Term, Eof]
        );
        assert_eq!(
            kinds("a* *a a*b ? * a?"),
            vec![PrefixTerm, WildTerm, WildTerm, WildTerm, Star, WildTerm, Eof]
        );
        assert_eq!(
            kinds("a~ a~2.5 \"x\"~3"),
            vec![Term, FuzzySlop, Term, FuzzySlop, Quoted, FuzzySlop, Eof]
        );
        assert_eq!(kinds("a^2.5b"), vec![Term, Carat, Number, Term, Eof]);
        assert_eq!(kinds("a\u{3000}b"), vec![Term, Term, Eof]);
        assert_eq!(kinds("a\u{a0}b"), vec![Term, Eof]);
        assert_eq!(kinds("a-b+c"), vec![Term, Eof]);
    }

    #[test]
    fn simple_analysis() {
        let t = |s: &str| SimpleAnalysis.tokens("f", s);
        assert_eq!(t("Wi-Fi rocks"), vec!["wi", "fi", "rocks"]);
        assert_eq!(
            t("U.S. o'Neil 3.5 1,000 a,b"),
            vec!["u.s", "o'neil", "3.5", "1,000", "a", "b"]
        );
        assert_eq!(t("東京 ok"), vec!["東", "京", "ok"]);
        assert_eq!(t("..."), Vec::<String>::new());
        assert_eq!(t(&"x".repeat(300)).len(), 2);
    }

    #[test]
    fn java_float_parsing() {
        assert_eq!(java_parse_float("2"), Some(2.0));
        assert_eq!(java_parse_float("2.5f"), Some(2.5));
        assert_eq!(java_parse_float(".5"), Some(0.5));
        assert_eq!(java_parse_float("5."), Some(5.0));
        assert_eq!(java_parse_float("-1e2"), Some(-100.0));
        assert_eq!(java_parse_float("Infinity"), Some(f32::INFINITY));
        assert!(java_parse_float("NaN").is_some_and(f32::is_nan));
        assert_eq!(java_parse_float(""), None);
        assert_eq!(java_parse_float("inf"), None);
        assert_eq!(java_parse_float("1e"), None);
        assert_eq!(java_parse_float("x"), None);
        assert_eq!(java_parse_float("."), None);
    }

    const ALPHABET: &[&str] = &[
        "a",
        "b",
        "oil",
        "Wi-Fi",
        "the",
        "title",
        " ",
        " ",
        "\t",
        "\u{3000}",
        "AND",
        "OR",
        "NOT",
        "&&",
        "||",
        "!",
        "+",
        "-",
        "(",
        ")",
        ":",
        "^",
        "2",
        "1.5",
        ".",
        "\"",
        "~",
        "*",
        "?",
        "\\",
        "/",
        "[",
        "]",
        "{",
        "}",
        "TO",
        "é",
        "東",
        "\\u",
        "0041",
        "\u{1F600}",
        "&",
        "|",
        "9999999999999999999999999999999999999999",
    ];

    fn configs() -> Vec<QueryParser> {
        vec![
            parser(),
            parser()
                .with_default_operator(Operator::And)
                .with_split_on_whitespace(true),
            multi().with_field_boost("title", 3.0),
            QueryParser::with_default_fields(vec![], Arc::new(SimpleAnalysis)).with_max_depth(4),
            parser()
                .with_max_clause_count(3)
                .with_unknown_fields_rejected(true),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        #[test]
        fn never_panics(pieces in prop::collection::vec(prop::sample::select(ALPHABET), 0..40)) {
            let input: String = pieces.concat();
            for qp in configs() {
                match qp.parse(&input) {
                    Ok(q) => {
                        let _ = q.to_string();
                        let _ = q.to_string_with_field("body");
                    }
                    Err(e) => {
                        prop_assert!(e.position <= input.len());
                        prop_assert!(input.is_char_boundary(e.position));
                        prop_assert_eq!(e.column, input[..e.position].chars().count() + 1);
                        let _ = e.to_string();
                        let _ = e.excerpt_with_caret();
                    }
                }
            }
        }

        #[test]
        fn never_panics_on_any_string(input in any::<String>()) {
            for qp in configs() {
                if let Ok(q) = qp.parse(&input) {
                    let _ = q.to_string();
                }
            }
        }

        #[test]
        fn renders_round_trip(q in round_trippable_query()) {
            let rendered = q.to_string();
            let parsed = parser().parse(&rendered);
            prop_assert_eq!(parsed.as_ref().ok(), Some(&q), "rendered {:?} -> {:?}", rendered, parsed);
        }
    }

    fn word() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9]{0,5}"
    }

    fn field() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["body", "title"]).prop_map(String::from)
    }

    /// Queries the parser produces from their own rendering: booleans have two or more
    /// clauses or one non-SHOULD clause, no FILTER/MatchNone/minimum-should-match, phrases
    /// have consecutive positions, and boosts render in plain notation.
    fn round_trippable_query() -> impl Strategy<Value = Query> {
        let leaf = prop_oneof![
            (field(), word()).prop_map(|(f, t)| Query::term(f, t)),
            (field(), prop::collection::vec(word(), 2..4), 0u32..4).prop_map(|(f, ws, slop)| {
                Query::Phrase {
                    field: f,
                    terms: ws
                        .into_iter()
                        .enumerate()
                        .map(|(i, w)| (i as u32, w))
                        .collect(),
                    slop,
                }
            }),
            (field(), word()).prop_map(|(f, w)| Query::Prefix {
                field: f,
                prefix: w
            }),
            Just(Query::MatchAll),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            let occur = prop::sample::select(vec![Occur::Must, Occur::Should, Occur::MustNot]);
            prop_oneof![
                prop::collection::vec((occur, inner.clone()), 1..4)
                    .prop_filter("single SHOULD clause collapses", |cs| cs.len() > 1
                        || cs[0].0 != Occur::Should)
                    .prop_map(|cs| Query::boolean(
                        cs.into_iter().map(|(o, q)| Clause::new(o, q)).collect()
                    )),
                (inner, 1u32..100_000).prop_map(|(q, b)| Query::boosted(q, b as f32 / 1000.0)),
            ]
        })
    }

    #[test]
    fn boost_rendering_reparses() {
        for b in [0.001f32, 0.5, 1.0, 2.0, 12.75, 99.999] {
            let q = Query::boosted(Query::term("body", "x"), b);
            assert_eq!(
                parser().parse(&q.to_string()).unwrap(),
                q,
                "{}",
                java_float_to_string(b)
            );
        }
    }
}
