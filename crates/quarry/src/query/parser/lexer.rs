//! Which tokens a query string holds: the token definitions of Lucene's `QueryParser.jj` (its
//! DEFAULT and Boost lexical states), with byte positions for error reports.
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
    RangeStart,
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

pub(super) fn lex_raw(input: &str) -> LexResult {
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

pub(super) fn describe_char(c: char) -> String {
    if c.is_whitespace() {
        format!("whitespace ({c:?})")
    } else {
        format!("'{c}'")
    }
}
