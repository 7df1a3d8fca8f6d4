//! What terms does Lucene 10's `StandardAnalyzer` make of a text? StandardTokenizer (UAX#29 word
//! breaks as in Lucene's JFlex grammar, see [`super::uax29`]) + LowerCaseFilter + StopFilter with
//! an empty stop set (Lucene 10's default), reproduced token for token.
//!
//! Two scanners produce the same tokens: an ASCII fast path (a byte-class table, no allocation per
//! token) used for all-ASCII text and for whitespace-delimited ASCII runs of mixed text, and the
//! Unicode path for the rest. Splitting mixed text at ASCII whitespace is exact: no token rule
//! matches whitespace, so no token (or the look-ahead of its match) crosses it.
//!
//! Maximum token length: Lucene's scanner reads into a buffer of `max_token_length` UTF-16 code
//! units that never grows, so a match can look at no more than that many units from its start.
//! A longer token is therefore cut at the longest accepted prefix within the window and scanning
//! resumes right after it (e.g. 300 letters give a 255-letter and a 45-letter token); nothing is
//! skipped. A supplementary character that would straddle the window end is left out of it.

use super::tables::LOWER;
use super::uax29::{self, Cp};
use super::Analyzer;

/// Lucene's `StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH`.
pub const DEFAULT_MAX_TOKEN_LENGTH: usize = 255;
/// Lucene's `StandardTokenizer.MAX_TOKEN_LENGTH_LIMIT` (1024 * 1024).
pub const MAX_TOKEN_LENGTH_LIMIT: usize = 1024 * 1024;

/// Lucene 10's `StandardAnalyzer()`: UAX#29 words, lowercased, no stop words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardAnalyzer {
    max_token_length: usize,
}

impl Default for StandardAnalyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl StandardAnalyzer {
    /// The analyzer with Lucene's default maximum token length (255 UTF-16 code units).
    pub fn new() -> Self {
        StandardAnalyzer {
            max_token_length: DEFAULT_MAX_TOKEN_LENGTH,
        }
    }

    /// An analyzer whose tokens are cut into pieces of at most `n` UTF-16 code units, as Lucene's
    /// `setMaxTokenLength(n)` does.
    ///
    /// # Panics
    /// If `n` is 0 or above [`MAX_TOKEN_LENGTH_LIMIT`] (Lucene throws IllegalArgumentException).
    pub fn with_max_token_length(n: usize) -> Self {
        assert!(
            (1..=MAX_TOKEN_LENGTH_LIMIT).contains(&n),
            "max_token_length must be in 1..={MAX_TOKEN_LENGTH_LIMIT}, got {n}"
        );
        StandardAnalyzer {
            max_token_length: n,
        }
    }

    /// The maximum token length in UTF-16 code units.
    pub fn max_token_length(&self) -> usize {
        self.max_token_length
    }

    /// All tokens of `text`, in order (token i has position i).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, &mut |t| out.push(t.to_owned()));
        out
    }

    /// Tokens of `text` computed by the Unicode scanner only (no ASCII fast path); for tests that
    /// check the two paths agree.
    pub fn tokens_unicode_path(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        unicode_tokens(
            text,
            0,
            self.max_token_length,
            &mut scratch,
            &mut |t, _, _| out.push(t.to_owned()),
        );
        out
    }
}

impl StandardAnalyzer {
    /// Every token with its byte range in `text`; both entry points of [`Analyzer`] run it, so
    /// the terms a highlighter sees are exactly the indexed ones.
    #[inline]
    fn tokens_with<F: FnMut(&str, usize, usize)>(&self, text: &str, mut sink: F) {
        let mut buf = String::new();
        if text.is_ascii() {
            ascii_tokens(text, 0, self.max_token_length, &mut buf, &mut sink);
            return;
        }
        let bytes = text.as_bytes();
        let mut scratch = Scratch::default();
        let mut i = 0;
        while i < bytes.len() {
            while i < bytes.len() && is_ascii_space(bytes[i]) {
                i += 1;
            }
            let start = i;
            let mut ascii = true;
            while i < bytes.len() && !is_ascii_space(bytes[i]) {
                ascii &= bytes[i] < 0x80;
                i += 1;
            }
            if start == i {
                break;
            }
            // Both ends sit next to ASCII bytes (or the text ends), so they are char boundaries.
            let seg = &text[start..i];
            if ascii {
                ascii_tokens(seg, start, self.max_token_length, &mut buf, &mut sink);
            } else if !unicode_tokens(seg, start, self.max_token_length, &mut scratch, &mut sink) {
                return;
            }
        }
    }
}

impl Analyzer for StandardAnalyzer {
    fn for_each_token(&self, text: &str, sink: &mut dyn FnMut(&str)) {
        self.tokens_with(text, |t, _, _| sink(t));
    }

    fn for_each_token_with_offsets(&self, text: &str, sink: &mut dyn FnMut(&str, usize, usize)) {
        self.tokens_with(text, sink);
    }

    fn find_terms(
        &self,
        text: &str,
        terms: &[&str],
        sink: &mut dyn FnMut(usize, usize, usize),
    ) -> bool {
        // Non-ASCII text may lowercase into ASCII terms (the Kelvin sign into 'k'): tokenize it.
        if !text.is_ascii() {
            return false;
        }
        ascii_find_terms(text, self.max_token_length, terms, sink);
        true
    }

    fn normalize(&self, text: &str) -> String {
        text.chars().map(java_lower).collect()
    }

    fn name(&self) -> &'static str {
        "standard"
    }
}

#[inline]
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Java's `Character.toLowerCase(int)`: the simple (one code point to one code point) lowercase
/// mapping, e.g. U+0130 'İ' -> 'i' (Rust's full mapping gives "i̇") and no context-dependent final
/// sigma. Looked up in a table generated from the JVM (see `tables.rs`), so it does not drift with
/// the Unicode version of the Rust standard library.
#[inline]
pub fn java_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let cp = c as u32;
    match LOWER.binary_search_by_key(&cp, |&(from, _)| from) {
        Ok(i) => char::from_u32(LOWER[i].1).unwrap_or(c),
        Err(_) => c,
    }
}

// ---------------------------------------------------------------------------------------------
// ASCII fast path

const C_LETTER: u8 = 1;
const C_DIGIT: u8 = 2;
const C_UNDERSCORE: u8 = 4;
const C_UPPER: u8 = 8;
/// WB MidLetter, MidNumLet or Single_Quote: ':' '.' '\''.
const C_MIDLETTER: u8 = 16;
/// WB MidNum, MidNumLet or Single_Quote: ',' ';' '.' '\''.
const C_MIDNUM: u8 = 32;
const C_WORD: u8 = C_LETTER | C_DIGIT | C_UNDERSCORE;

const fn ascii_classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_uppercase() {
            C_LETTER | C_UPPER
        } else if b.is_ascii_lowercase() {
            C_LETTER
        } else if b.is_ascii_digit() {
            C_DIGIT
        } else {
            match b {
                b'_' => C_UNDERSCORE,
                b':' => C_MIDLETTER,
                b',' | b';' => C_MIDNUM,
                b'.' | b'\'' => C_MIDLETTER | C_MIDNUM,
                _ => 0,
            }
        };
        c += 1;
    }
    t
}

static CLASS: [u8; 256] = ascii_classes();

// SWAR classification of 8 ASCII bytes at a time (every byte < 0x80, so per-byte additions
// never carry into the next byte). Each helper returns 0x80 in every byte lane where it holds.
const LO7: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

#[inline(always)]
fn lanes_in(x: u64, lo: u8, hi: u8) -> u64 {
    let ge_lo = x.wrapping_add(LO7 * u64::from(0x80 - lo));
    let gt_hi = x.wrapping_add(LO7 * u64::from(0x7f - hi));
    ge_lo & !gt_hi & HI
}

/// (lanes holding a letter, digit or '_', lanes holding an uppercase letter).
#[inline(always)]
fn word_lanes(x: u64) -> (u64, u64) {
    let letter = lanes_in(x | (LO7 * 0x20), b'a', b'z');
    let digit = lanes_in(x, b'0', b'9');
    let underscore = !(x ^ (LO7 * u64::from(b'_'))).wrapping_add(LO7 * 0x7f) & HI;
    (letter | digit | underscore, lanes_in(x, b'A', b'Z'))
}

#[inline(always)]
fn load8(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// End of the run of letters, digits and '_' starting at `i`; ORs C_UPPER into `seen` if the run
/// has an uppercase letter.
#[inline(always)]
fn word_run(b: &[u8], mut i: usize, seen: &mut u8) -> usize {
    while i + 8 <= b.len() {
        let (word, upper) = word_lanes(load8(b, i));
        let stop = !word & HI;
        if stop == 0 {
            if upper != 0 {
                *seen |= C_UPPER;
            }
            i += 8;
            continue;
        }
        let below = (stop & stop.wrapping_neg()) - 1;
        if upper & below != 0 {
            *seen |= C_UPPER;
        }
        return i + (stop.trailing_zeros() / 8) as usize;
    }
    while i < b.len() {
        let c = CLASS[b[i] as usize];
        if c & C_WORD == 0 {
            break;
        }
        *seen |= c & C_UPPER;
        i += 1;
    }
    i
}

/// First position at or after `i` holding a letter, digit or '_' (or the end).
#[inline(always)]
fn skip_non_word(b: &[u8], mut i: usize) -> usize {
    if i < b.len() && CLASS[b[i] as usize] & C_WORD != 0 {
        return i;
    }
    while i + 8 <= b.len() {
        let (word, _) = word_lanes(load8(b, i));
        if word != 0 {
            return i + (word.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && CLASS[b[i] as usize] & C_WORD == 0 {
        i += 1;
    }
    i
}

/// Longest token starting at `start` (a letter, digit or '_') within `b` (already cut to the
/// window). `Ok((end, has_upper))`, or `Err(next)`: no token starts anywhere in `start..next`.
#[inline]
fn ascii_match(b: &[u8], start: usize) -> Result<(usize, bool), usize> {
    let mut i = start;
    while i < b.len() && b[i] == b'_' {
        i += 1;
    }
    if i == b.len() {
        return Err(start + 1);
    }
    if CLASS[b[i] as usize] & (C_LETTER | C_DIGIT) == 0 {
        // A run of '_' not followed by a letter or digit: no position in it starts a token.
        return Err(i);
    }
    let mut seen = 0u8;
    loop {
        // A run of letters, digits and '_' (WB5, WB8-WB10, WB13a/b).
        i = word_run(b, i, &mut seen);
        // A mid character joins letter-letter (WB6/7) or digit-digit (WB11/12) only.
        if i + 1 < b.len() {
            let c = CLASS[b[i] as usize];
            if c & (C_MIDLETTER | C_MIDNUM) != 0 {
                let last = CLASS[b[i - 1] as usize];
                let next = CLASS[b[i + 1] as usize];
                if (last & next & C_LETTER != 0 && c & C_MIDLETTER != 0)
                    || (last & next & C_DIGIT != 0 && c & C_MIDNUM != 0)
                {
                    seen |= next;
                    i += 2;
                    continue;
                }
            }
        }
        return Ok((i, seen & C_UPPER != 0));
    }
}

/// Tokens of the ASCII `text`, which starts at byte `base` of the analyzed text.
#[inline]
fn ascii_tokens<F: FnMut(&str, usize, usize)>(
    text: &str,
    base: usize,
    max: usize,
    buf: &mut String,
    sink: &mut F,
) {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    loop {
        i = skip_non_word(b, i);
        if i >= n {
            return;
        }
        let limit = if n - i > max { i + max } else { n };
        match ascii_match(&b[..limit], i) {
            Ok((end, upper)) => {
                let tok = &text[i..end];
                if upper {
                    buf.clear();
                    buf.push_str(tok);
                    buf.make_ascii_lowercase();
                    sink(buf, base + i, base + end);
                } else {
                    sink(tok, base + i, base + end);
                }
                i = end;
            }
            Err(next) => i = next,
        }
    }
}

/// [`Analyzer::find_terms`] on ASCII text: every occurrence of each term in the lowercased text
/// (overlapping ones too: a token cut at the maximum length may start inside another
/// occurrence), each decided by its neighbours where they settle it and otherwise by the tokens
/// of the whitespace-delimited run that holds it (exact: no token crosses ASCII whitespace, see
/// the module comment). A run is tokenized at most once, so no text costs more than one pass of
/// the tokenizer plus the searches.
fn ascii_find_terms(
    text: &str,
    max: usize,
    terms: &[&str],
    sink: &mut dyn FnMut(usize, usize, usize),
) {
    let b = text.as_bytes();
    let n = b.len();
    let lower = text.to_ascii_lowercase();
    let hay = lower.as_bytes();
    // (start, term): occurrences that may be tokens.
    let mut hits: Vec<(usize, usize)> = Vec::new();
    let mut whole = vec![false; terms.len()];
    let mut buf = String::new();
    for (t, term) in terms.iter().enumerate() {
        let tb = term.as_bytes();
        // Tokens of ASCII text are non-empty, ASCII and lowercase.
        if tb.is_empty() || tb.iter().any(|&c| c >= 0x80 || c.is_ascii_uppercase()) {
            continue;
        }
        // Is the term one whole token on its own, starting and ending with a letter or digit?
        // Then an occurrence between two bytes that no token holds (or the text's ends) is a
        // token without tokenizing: the scanner reaches its first byte and its match stops
        // exactly at its last.
        let alnum = |c: u8| CLASS[c as usize] & (C_LETTER | C_DIGIT) != 0;
        let mut alone = Vec::with_capacity(1);
        ascii_tokens(term, 0, max, &mut buf, &mut |_, s, e| alone.push((s, e)));
        whole[t] = alone == [(0, tb.len())] && alnum(tb[0]) && alnum(tb[tb.len() - 1]);
        let finder = memchr::memmem::Finder::new(tb);
        let mut from = 0;
        while let Some(p) = finder.find(&hay[from..]) {
            let p = from + p;
            from = p + 1;
            let end = p + tb.len();
            // A word byte right after the token: it goes on unless cut at `max` bytes.
            if end < n && CLASS[b[end] as usize] & C_WORD != 0 && end - p != max {
                continue;
            }
            // A word byte right before: a token starts at p only after one cut at exactly `max`
            // bytes of letters, digits, '_' and mid characters.
            if whole[t] && p > 0 && CLASS[b[p - 1] as usize] & C_WORD != 0 {
                let token_bytes = C_WORD | C_MIDLETTER | C_MIDNUM;
                let back = b[..p]
                    .iter()
                    .rev()
                    .take(max)
                    .take_while(|&&c| CLASS[c as usize] & token_bytes != 0)
                    .count();
                if back < max {
                    continue;
                }
            }
            hits.push((p, t));
        }
    }
    if hits.is_empty() {
        return;
    }
    hits.sort_unstable();
    let free = |i: usize| i >= n || CLASS[b[i] as usize] == 0;
    // The run last tokenized and its tokens.
    let mut run = (0, 0);
    let mut tokens: Vec<(usize, usize)> = Vec::new();
    for (p, t) in hits {
        let end = p + terms[t].len();
        if whole[t] && (p == 0 || free(p - 1)) && free(end) {
            sink(t, p, end);
            continue;
        }
        if tokens.is_empty() || p >= run.1 || p < run.0 {
            let start = b[..p]
                .iter()
                .rposition(|&c| is_ascii_space(c))
                .map_or(0, |i| i + 1);
            let stop = b[p..]
                .iter()
                .position(|&c| is_ascii_space(c))
                .map_or(n, |i| p + i);
            tokens.clear();
            ascii_tokens(&text[start..stop], start, max, &mut buf, &mut |_, s, e| {
                tokens.push((s, e))
            });
            tokens.push((usize::MAX, usize::MAX));
            run = (start, stop);
        }
        if tokens.binary_search(&(p, end)).is_ok() {
            sink(t, p, end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unicode path

#[derive(Default)]
struct Scratch {
    cps: Vec<Cp>,
    /// Byte offset of each code point, plus the end.
    bytes: Vec<usize>,
    /// UTF-16 offset of each code point, plus the end.
    units: Vec<usize>,
    buf: String,
}

/// Returns false when Lucene would stop tokenizing the whole text (see below).
/// (`text` starts at byte `origin` of the analyzed text.)
fn unicode_tokens<F: FnMut(&str, usize, usize)>(
    text: &str,
    origin: usize,
    max: usize,
    s: &mut Scratch,
    sink: &mut F,
) -> bool {
    s.cps.clear();
    s.bytes.clear();
    s.units.clear();
    let table = uax29::FlagTable::get();
    let mut u = 0;
    for (off, c) in text.char_indices() {
        s.cps.push(Cp {
            c,
            flags: table.flags(c),
        });
        s.bytes.push(off);
        s.units.push(u);
        u += c.len_utf16();
    }
    s.bytes.push(text.len());
    s.units.push(u);
    let m = s.cps.len();
    let mut i = 0;
    while i < m {
        // The window: code points whose UTF-16 units all fit in `max` units from the start.
        let hi = m.min(i.saturating_add(max));
        let base = s.units[i];
        let limit = i + s.units[i + 1..=hi].partition_point(|&x| x - base <= max);
        if limit == i {
            // Only with max == 1 before a supplementary character: Lucene's scanner withholds the
            // high surrogate, sees a full buffer with nothing to match, takes it for the end of
            // input and stops tokenizing.
            return false;
        }
        match uax29::longest_match(&s.cps, i, limit) {
            Some(end) => {
                let tok = &text[s.bytes[i]..s.bytes[end]];
                let cps = &s.cps[i..end];
                if cps.iter().any(|cp| cp.flags & uax29::F_LOWER_CHANGES != 0) {
                    s.buf.clear();
                    s.buf.extend(cps.iter().map(|cp| {
                        if cp.flags & uax29::F_LOWER_CHANGES != 0 {
                            java_lower(cp.c)
                        } else {
                            cp.c
                        }
                    }));
                    sink(&s.buf, origin + s.bytes[i], origin + s.bytes[end]);
                } else {
                    sink(tok, origin + s.bytes[i], origin + s.bytes[end]);
                }
                i = end;
            }
            None => i += 1,
        }
    }
    true
}
