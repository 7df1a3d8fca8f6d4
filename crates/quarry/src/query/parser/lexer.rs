//! Which tokens a query string holds: the token definitions of Lucene's `QueryParser.jj` (its
//! DEFAULT, Boost and Range lexical states), with byte positions for error reports.
use super::error::{ParseError, ParseErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
    /// `[` or `{`: switches to the Range state.
    RangeStart,
    /// `TO` inside a range (RANGE_TO).
    RangeTo,
    /// A bound inside a range: a run of characters other than ' ', `]` and `}` (RANGE_GOOP).
    RangeGoop,
    /// A quoted bound inside a range (RANGE_QUOTED), quotes included.
    RangeQuoted,
    /// `]` or `}`: back to the DEFAULT state.
    RangeEnd,
    Number,
    Eof,
    /// A lexical error; the parser reports `Parser::lex_error` when it reaches it.
    Error,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) end: usize,
}

pub(super) fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

pub(super) fn is_term_start_char(c: char) -> bool {
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

pub(super) fn is_term_char(c: char) -> bool {
    is_term_start_char(c) || c == '-' || c == '+'
}

pub(super) fn char_at(input: &str, i: usize) -> Option<char> {
    input.get(i..).and_then(|s| s.chars().next())
}

/// Scans the longest run of term characters (escapes included) and, when `wild`, `*`/`?`,
/// starting at `i`. Returns the end and how many wildcard characters it holds and whether
/// the last element is a `*`.
pub(super) fn scan_run(input: &str, mut i: usize, wild: bool) -> (usize, usize, bool) {
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

pub(super) struct LexResult {
    pub(super) tokens: Vec<Token>,
    pub(super) error: Option<(ParseErrorKind, usize, String, String)>,
}

pub(super) fn lex(input: &str) -> (Vec<Token>, Option<ParseError>) {
    let r = lex_raw(input);
    let err = r
        .error
        .map(|(kind, pos, expected, found)| ParseError::new(kind, input, pos, expected, found));
    (r.tokens, err)
}

/// A lexical error: its kind, byte position, what was expected and what was found.
type LexError = (ParseErrorKind, usize, String, String);

/// What one lexing step did: where the next token starts, or the end of the tokens (with the
/// error that ended them, if any).
enum Step {
    Next(usize),
    End(Option<LexError>),
}

fn push(tokens: &mut Vec<Token>, kind: Kind, start: usize, end: usize) {
    tokens.push(Token { kind, start, end });
}

/// Every token of `input` up to its `Eof` (or the first lexical error), switching to Lucene's
/// Boost state after a `^` and to its Range state from a `[` or `{` to the `]` or `}`.
pub(super) fn lex_raw(input: &str) -> LexResult {
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        let step = match tokens.last().map(|t: &Token| t.kind) {
            // A `^` just lexed puts the lexer in the Boost state for one token.
            Some(Kind::Carat) => lex_boost(input, i, &mut tokens),
            Some(Kind::RangeStart | Kind::RangeTo | Kind::RangeGoop | Kind::RangeQuoted) => {
                lex_range(input, i, &mut tokens)
            }
            _ => lex_default(input, skip_whitespace(input, i), &mut tokens),
        };
        match step {
            Step::Next(next) => i = next,
            Step::End(error) => return LexResult { tokens, error },
        }
    }
}

/// Lucene's Boost lexical state: only NUMBER, and no whitespace skipping.
fn lex_boost(input: &str, mut i: usize, tokens: &mut Vec<Token>) -> Step {
    let bytes = input.as_bytes();
    match char_at(input, i) {
        None => {
            push(tokens, Kind::Eof, i, i);
            Step::End(None)
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
            push(tokens, Kind::Number, start, i);
            Step::Next(i)
        }
        Some(c) => {
            push(tokens, Kind::Error, i, i);
            let found = describe_char(c);
            Step::End(Some((
                ParseErrorKind::Syntax,
                i,
                "a number right after '^'".to_string(),
                found,
            )))
        }
    }
}

/// The position of the first non-whitespace character from `i` on.
fn skip_whitespace(input: &str, mut i: usize) -> usize {
    while let Some(c) = char_at(input, i) {
        if is_whitespace(c) {
            i += c.len_utf8();
        } else {
            break;
        }
    }
    i
}

/// Lucene's DEFAULT lexical state: the token starting at `start` (whitespace skipped).
fn lex_default(input: &str, start: usize, tokens: &mut Vec<Token>) -> Step {
    let i = start;
    let Some(c) = char_at(input, i) else {
        push(tokens, Kind::Eof, i, i);
        return Step::End(None);
    };
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
            push(tokens, kind, start, end);
            Step::Next(end)
        }
        '(' | ')' | ':' | '^' => {
            let kind = match c {
                '(' => Kind::LParen,
                ')' => Kind::RParen,
                ':' => Kind::Colon,
                _ => Kind::Carat,
            };
            push(tokens, kind, start, i + 1);
            Step::Next(i + 1)
        }
        '"' => lex_quoted(input, start, tokens),
        '~' => {
            let (end, _, _) = scan_run(input, i + 1, false);
            push(tokens, Kind::FuzzySlop, start, end);
            Step::Next(end)
        }
        '/' => lex_regexp(input, start, tokens),
        '[' | '{' => {
            push(tokens, Kind::RangeStart, start, i + 1);
            Step::Next(i + 1)
        }
        ']' | '}' => {
            push(tokens, Kind::Error, start, start);
            Step::End(Some((
                ParseErrorKind::Syntax,
                start,
                "a term, a phrase, an operator or '('".to_string(),
                format!(
                    "'{c}' without a matching '{}'",
                    if c == ']' { '[' } else { '{' }
                ),
            )))
        }
        '*' | '?' => {
            let (end, _, _) = scan_run(input, i, true);
            let kind = if c == '*' && end == i + 1 {
                Kind::Star
            } else {
                Kind::WildTerm
            };
            push(tokens, kind, start, end);
            Step::Next(end)
        }
        '\\' if char_at(input, i + 1).is_none() => {
            push(tokens, Kind::Error, start, start);
            Step::End(Some((
                ParseErrorKind::Syntax,
                start,
                "a character after the escape character '\\'".to_string(),
                "end of input".to_string(),
            )))
        }
        _ => lex_term(input, start, tokens),
    }
}

/// Lucene's Range lexical state: the token at or after `i` (RANGE_TO, RANGEIN_END/RANGEEX_END,
/// RANGE_QUOTED or RANGE_GOOP), with JavaCC's rule that the longest match wins and, among
/// equally long ones, the first declared (SKIP, then TO, the ends, QUOTED, GOOP). So a tab or
/// another non-space whitespace character starts a bound when a bound character follows it
/// (a tab then `a` is the bound "tab, a"), `TOx` is a bound, and `"ab"x` is the bound `"ab"x`
/// with its quotes (GOOP is longer than QUOTED there).
fn lex_range(input: &str, mut i: usize, tokens: &mut Vec<Token>) -> Step {
    loop {
        let Some(c) = char_at(input, i) else {
            push(tokens, Kind::Eof, i, i);
            return Step::End(None);
        };
        if c == ' ' {
            i += 1;
            continue;
        }
        if c == ']' || c == '}' {
            push(tokens, Kind::RangeEnd, i, i + 1);
            return Step::Next(i + 1);
        }
        let goop_end = scan_goop(input, i);
        if is_whitespace(c) && goop_end == i + c.len_utf8() {
            i = goop_end; // SKIP wins the tie with a one-character GOOP
            continue;
        }
        if c == '"' {
            if let Some(quoted_end) = scan_range_quoted(input, i) {
                if quoted_end >= goop_end {
                    push(tokens, Kind::RangeQuoted, i, quoted_end);
                    return Step::Next(quoted_end);
                }
            }
        }
        let kind = if &input[i..goop_end] == "TO" {
            Kind::RangeTo
        } else {
            Kind::RangeGoop
        };
        push(tokens, kind, i, goop_end);
        return Step::Next(goop_end);
    }
}

/// The end of RANGE_GOOP starting at `i`: the run of characters other than ' ', `]` and `}`.
fn scan_goop(input: &str, mut i: usize) -> usize {
    while let Some(c) = char_at(input, i) {
        if matches!(c, ' ' | ']' | '}') {
            break;
        }
        i += c.len_utf8();
    }
    i
}

/// The end of the longest RANGE_QUOTED match at `start` (a `"`): `"` then one or more
/// characters that are not `"` or are an escaped `\"`, then `"`. Every `"` preceded by a
/// backslash may close it or continue it; the first other `"` must close it.
fn scan_range_quoted(input: &str, start: usize) -> Option<usize> {
    let mut longest = None;
    let mut prev: Option<char> = None;
    let mut j = start + 1;
    while let Some(c) = char_at(input, j) {
        if c == '"' {
            if prev == Some('\\') {
                longest = Some(j + 1);
            } else {
                if j > start + 1 {
                    longest = Some(j + 1);
                }
                break;
            }
        }
        prev = Some(c);
        j += c.len_utf8();
    }
    longest
}

/// A quoted phrase starting at `start` (its opening `"`), up to its closing `"`.
fn lex_quoted(input: &str, start: usize, tokens: &mut Vec<Token>) -> Step {
    let mut j = start + 1;
    loop {
        match char_at(input, j) {
            None => {
                push(tokens, Kind::Error, start, start);
                return Step::End(Some((
                    ParseErrorKind::Syntax,
                    start,
                    "a closing '\"' for the phrase starting here".to_string(),
                    "end of input".to_string(),
                )));
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
    push(tokens, Kind::Quoted, start, j);
    Step::Next(j)
}

/// REGEXPTERM: `/`, then characters other than `/` or the pair `\\/`, then `/`.
fn lex_regexp(input: &str, start: usize, tokens: &mut Vec<Token>) -> Step {
    let mut j = start + 1;
    loop {
        match char_at(input, j) {
            None => {
                push(tokens, Kind::Error, start, start);
                return Step::End(Some((
                    ParseErrorKind::Syntax,
                    start,
                    "a closing '/' for the regular expression starting here".to_string(),
                    "end of input".to_string(),
                )));
            }
            Some('/') => {
                j += 1;
                break;
            }
            Some('\\') if char_at(input, j + 1) == Some('/') => j += 2,
            Some(other) => j += other.len_utf8(),
        }
    }
    push(tokens, Kind::Regexp, start, j);
    Step::Next(j)
}

/// A TERM_START_CHAR (or an escape) at `start`: TERM, PREFIXTERM, WILDTERM or a keyword.
fn lex_term(input: &str, start: usize, tokens: &mut Vec<Token>) -> Step {
    let (end, wild_count, last_star) = scan_run(input, start, true);
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
    push(tokens, kind, start, end);
    Step::Next(end)
}

pub(super) fn describe_char(c: char) -> String {
    if c.is_whitespace() {
        format!("whitespace ({c:?})")
    } else {
        format!("'{c}'")
    }
}
