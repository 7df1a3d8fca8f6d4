//! What a failed parse reports: the kind of problem, its position and an excerpt with a caret.
use std::fmt;

/// What went wrong, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input does not follow the query syntax.
    Syntax,
    /// Valid Lucene syntax that quarry does not support yet (fuzzy terms, wildcards other than
    /// a trailing `*`, regular expressions).
    Unsupported,
    /// A value out of range: an infinite boost, a negative slop, a bad `\u` escape.
    InvalidValue,
    /// More nested parentheses than [`QueryParser::with_max_depth`](super::QueryParser::with_max_depth) allows.
    TooDeep,
    /// A boolean query with more clauses than [`QueryParser::with_max_clause_count`](super::QueryParser::with_max_clause_count) allows.
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
    pub(super) fn new(
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
