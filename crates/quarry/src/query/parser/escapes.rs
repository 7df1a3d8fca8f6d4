//! What escaped text and numbers in a query stand for: Lucene's `discardEscapeChar` (`\\x`,
//! `\\uXXXX` with UTF-16 surrogate pairs) and Java's `Float.parseFloat` for boosts and slops.
use super::error::{ParseError, ParseErrorKind};
use super::grammar::PResult;
use super::lexer::{describe_char, Token};

pub(super) fn unescape(input: &str, t: Token) -> PResult<String> {
    unescape_str(input, &input[t.start..t.end], t.start)
}

/// Lucene's `discardEscapeChar`: `\x` is `x`; `\uXXXX` is a UTF-16 code unit (surrogate
/// pairs combine; a lone surrogate becomes U+FFFD). `offset` is `s`'s byte offset in `input`.
pub(super) fn unescape_str(input: &str, s: &str, offset: usize) -> PResult<String> {
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
pub(super) fn java_parse_float(s: &str) -> Option<f32> {
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
