//! Where do a text's sentences start? Unicode's sentence boundaries (UAX #29), as
//! `unicode-segmentation` finds them, with a faster twin for ASCII text: looking up each
//! character's sentence category in the crate's Unicode tables was 37 % of highlighting the top
//! 10 of W2 queries (`perf record` of `quarry-bench driver quarry query --modes
//! top10_highlight`), and still 26 % once only the one W2 paragraph in five with a non-ASCII
//! character took the tables. So a text is cut into chunks at safe points, and only the chunks
//! around non-ASCII characters go through the tables.
//!
//! A safe point is a position between two ASCII letters. No sentence starts there, and no rule
//! looks past it: the rules that look back (SB5-SB11) stop at a letter, which is neither a
//! terminator, closing punctuation, a space nor an extending mark, and the only one that looks
//! ahead (SB8) stops at the first letter. So the starts of a chunk from one safe point to the
//! next, segmented alone, are the whole text's (`chunked_starts_are_the_texts`, a property
//! test, holds this to the whole text's segmentation).

use unicode_segmentation::{USentenceBoundIndices, UnicodeSegmentation};

/// The byte offsets where the sentences of a text start, in order (0 first, for a non-empty
/// text).
pub(crate) struct SentenceStarts<'a> {
    text: &'a str,
    /// The current chunk's start in `text`: 0 or a safe point.
    base: usize,
    /// The current chunk's end: a safe point or the text's end.
    end: usize,
    chunk: Chunk<'a>,
    /// Whether the chunk's first start, its own start, is still to be dropped (at a safe
    /// point, where no sentence starts).
    skip_first: bool,
}

/// How a chunk is segmented.
enum Chunk<'a> {
    Ascii(AsciiSentences<'a>),
    Unicode(USentenceBoundIndices<'a>),
    Done,
}

impl<'a> SentenceStarts<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut it = SentenceStarts {
            text,
            base: 0,
            end: 0,
            chunk: Chunk::Done,
            skip_first: false,
        };
        if !text.is_empty() {
            it.open(0);
        }
        it
    }

    /// Makes the chunk that starts at `at` (0 or a safe point) current: ASCII up to the last
    /// safe point before the next non-ASCII character, or, when there is none, Unicode up to
    /// the first safe point after it.
    fn open(&mut self, at: usize) {
        let b = self.text.as_bytes();
        let letter = |i: usize| b[i].is_ascii_alphabetic();
        let safe = |i: usize| letter(i - 1) && letter(i);
        let non_ascii = first_non_ascii(b, at);
        let ascii_end = if non_ascii == b.len() {
            Some(b.len())
        } else {
            (at + 1..non_ascii).rev().find(|&i| safe(i))
        };
        self.base = at;
        self.skip_first = at > 0;
        match ascii_end {
            Some(end) => {
                self.end = end;
                self.chunk = Chunk::Ascii(AsciiSentences {
                    b: &b[at..end],
                    at: 0,
                });
            }
            None => {
                self.end = (non_ascii + 1..b.len())
                    .find(|&i| safe(i))
                    .unwrap_or(b.len());
                self.chunk = Chunk::Unicode(self.text[at..self.end].split_sentence_bound_indices());
            }
        }
    }
}

/// The offset of the first non-ASCII byte of `b` at or after `at` (`b.len()` when none), eight
/// bytes at a time: chunks are opened over whole paragraphs.
pub(crate) fn first_non_ascii(b: &[u8], at: usize) -> usize {
    let mut i = at;
    while let Some(word) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        if w & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| !c.is_ascii())
        .map_or(b.len(), |p| i + p)
}

impl Iterator for SentenceStarts<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        loop {
            let start = match &mut self.chunk {
                Chunk::Ascii(it) => it.next(),
                Chunk::Unicode(it) => it.next().map(|(b, _)| b),
                Chunk::Done => return None,
            };
            match start {
                Some(_) if self.skip_first => self.skip_first = false,
                Some(s) => return Some(self.base + s),
                None if self.end < self.text.len() => self.open(self.end),
                None => self.chunk = Chunk::Done,
            }
        }
    }
}

/// UAX #29's sentence-break categories of the ASCII characters (no ASCII character is
/// `OLetter`, `Sep`, `Extend` or `Format`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cat {
    Cr,
    Lf,
    Sp,
    Lower,
    Upper,
    Numeric,
    ATerm,
    STerm,
    Close,
    SContinue,
    Other,
}

fn cat(b: u8) -> Cat {
    match b {
        b'\r' => Cat::Cr,
        b'\n' => Cat::Lf,
        b'\t' | 0x0b | 0x0c | b' ' => Cat::Sp,
        b'a'..=b'z' => Cat::Lower,
        b'A'..=b'Z' => Cat::Upper,
        b'0'..=b'9' => Cat::Numeric,
        b'.' => Cat::ATerm,
        b'!' | b'?' => Cat::STerm,
        b'"' | b'\'' | b'(' | b')' | b'[' | b']' | b'{' | b'}' => Cat::Close,
        b',' | b'-' | b':' | b';' => Cat::SContinue,
        _ => Cat::Other,
    }
}

fn para_sep(c: Cat) -> bool {
    matches!(c, Cat::Cr | Cat::Lf)
}

fn sa_term(c: Cat) -> bool {
    matches!(c, Cat::ATerm | Cat::STerm)
}

/// Sentence starts of an ASCII text by the rules SB3-SB11 of UAX #29.
pub(crate) struct AsciiSentences<'a> {
    b: &'a [u8],
    /// The next offset to report as a start (or to look for one from).
    at: usize,
}

impl Iterator for AsciiSentences<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let b = self.b;
        if self.at >= b.len() {
            return None;
        }
        let start = self.at;
        // Whether the text before the candidate break ends with SATerm Close* Sp*: (the term
        // is ATerm, spaces seen).
        let mut tail: Option<(bool, bool)> = None;
        let mut i = start + 1;
        while i < b.len() {
            if tail.is_none() {
                // Without a terminator before it, a break needs a paragraph separator (SB4)
                // or a terminator (SB11) right before: skip to the next one.
                match b[i - 1..]
                    .iter()
                    .position(|&c| matches!(c, b'.' | b'!' | b'?' | b'\r' | b'\n'))
                {
                    Some(p) => i += p,
                    None => i = b.len(),
                }
                if i >= b.len() {
                    break;
                }
            }
            let prev = cat(b[i - 1]);
            tail = match (prev, tail) {
                (p, _) if sa_term(p) => Some((p == Cat::ATerm, false)),
                (Cat::Close, Some((a, false))) => Some((a, false)),
                (Cat::Sp, Some((a, _))) => Some((a, true)),
                _ => None,
            };
            if self.breaks_at(i, prev, tail) {
                break;
            }
            i += 1;
        }
        self.at = i;
        Some(start)
    }
}

impl AsciiSentences<'_> {
    /// Whether a sentence starts at `i` (0 < i < len), given the category before it and the
    /// SATerm Close* Sp* state of the text before it.
    fn breaks_at(&self, i: usize, prev: Cat, tail: Option<(bool, bool)>) -> bool {
        let b = self.b;
        let cur = cat(b[i]);
        // SB3, SB4
        if prev == Cat::Cr && cur == Cat::Lf {
            return false;
        }
        if para_sep(prev) {
            return true;
        }
        // SB6, SB7
        if prev == Cat::ATerm && cur == Cat::Numeric {
            return false;
        }
        if prev == Cat::ATerm
            && cur == Cat::Upper
            && i >= 2
            && matches!(cat(b[i - 2]), Cat::Upper | Cat::Lower)
        {
            return false;
        }
        let Some((aterm, spaces)) = tail else {
            return false; // SB998
        };
        // SB8: ATerm Close* Sp* × (¬(OLetter | Upper | Lower | ParaSep | SATerm))* Lower
        if aterm {
            let next = b[i..]
                .iter()
                .map(|&c| cat(c))
                .find(|&c| matches!(c, Cat::Upper | Cat::Lower) || para_sep(c) || sa_term(c));
            if next == Some(Cat::Lower) {
                return false;
            }
        }
        // SB8a, SB9, SB10, SB11
        if matches!(cur, Cat::SContinue) || sa_term(cur) {
            return false;
        }
        if !spaces && cur == Cat::Close {
            return false;
        }
        if cur == Cat::Sp || para_sep(cur) {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unicode(text: &str) -> Vec<usize> {
        text.split_sentence_bound_indices()
            .map(|(b, _)| b)
            .collect()
    }

    fn ascii(text: &str) -> Vec<usize> {
        AsciiSentences {
            b: text.as_bytes(),
            at: 0,
        }
        .collect()
    }

    #[test]
    fn examples_agree_with_unicode_segmentation() {
        for text in [
            "",
            "a",
            "Hello there. How are you? Fine!",
            "Mr. Smith went to Washington. He said \"hi.\" Then left.",
            "The U.S. economy grew 3.5 percent. etc. and so on.",
            "Wait... what?! (Really.) 'Yes.'  Two spaces.\r\nNew line.\n\nPara.",
            "e.g. this; that: those, these - others. A.B. C",
        ] {
            assert_eq!(ascii(text), unicode(text), "{text:?}");
        }
    }

    /// The category table was checked this way: over every ASCII character, in random
    /// mixtures weighted towards the characters the rules treat specially.
    fn ascii_text() -> impl Strategy<Value = String> {
        let special = prop::sample::select(
            b".!?\"'()[]{},-:; \t\r\n\x0b\x0caAzZ09#_/"
                .iter()
                .map(|&b| b as char)
                .collect::<Vec<_>>(),
        );
        let any = (0u8..128).prop_map(char::from);
        prop::collection::vec(prop_oneof![3 => special, 1 => any], 0..40)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn ascii_twin_agrees_with_unicode_segmentation(text in ascii_text()) {
            prop_assert_eq!(ascii(&text), unicode(&text));
        }
    }

    /// Every ASCII body of the bundled Reuters corpus splits alike.
    #[test]
    fn reuters_bodies_agree() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/reuters21578.jsonl.zst"
        );
        let file = std::fs::File::open(path).expect("the bundled Reuters corpus");
        let text = std::io::read_to_string(zstd::Decoder::new(file).unwrap()).unwrap();
        let mut checked = 0;
        for line in text.lines().take(3000) {
            let doc: serde_json::Value = serde_json::from_str(line).unwrap();
            let body = doc["body"].as_str().unwrap_or("");
            if body.is_ascii() {
                assert_eq!(ascii(body), unicode(body), "{body:?}");
                checked += 1;
            }
        }
        assert!(checked > 2000, "{checked}");
    }

    fn chunked(text: &str) -> Vec<usize> {
        SentenceStarts::new(text).collect()
    }

    #[test]
    fn non_ascii_text_agrees_with_unicode_segmentation() {
        for text in [
            "Café ouvert. Bien sûr.",
            "Ünïcödé. Über alles! «Quoi?» dit-il. Ça va.",
            "The café. é. Le Mr. Dupré arriva.\u{2029}Next para. 東京。大阪！",
            "He said “stop.” Then—nothing. Die U.S.A. und Ö.",
            "é",
            "ab",
            "aé",
        ] {
            assert_eq!(chunked(text), unicode(text), "{text:?}");
        }
    }

    /// Text mixing ASCII (with the characters the rules treat specially, and runs of letters
    /// that make safe points) with non-ASCII characters of every sentence category: letters,
    /// terminators, closing quotes, spaces, separators, extending marks, format characters.
    fn mixed_text() -> impl Strategy<Value = String> {
        let special = prop::sample::select(
            ".!?\"'()[]{},-:; \t\r\n\x0baAzZ09#"
                .chars()
                .collect::<Vec<_>>(),
        );
        let word = prop::sample::select(vec!["the", "Mr", "US", "ab", "Zq", "x", "etc"]);
        let other = prop::sample::select(
            "éÉßüÖçñ\u{301}\u{200d}\u{200b}\u{ad}\u{a0}\u{2029}\u{2028}\u{85}\u{2014}\u{2013}\u{201c}\u{201d}\u{2018}\u{2019}\u{ab}\u{bb}\u{2026}\u{3002}\u{ff01}\u{ff0e}\u{5d0}\u{627}\u{61f}\u{964}\u{6771}\u{1f600}\u{1f1fa}\u{3001}\u{ff0c}\u{2163}\u{2170}"
                .chars()
                .collect::<Vec<_>>(),
        );
        let piece = prop_oneof![
            3 => special.prop_map(String::from),
            3 => word.prop_map(String::from),
            2 => other.prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn chunked_starts_are_the_texts(text in mixed_text()) {
            prop_assert_eq!(chunked(&text), unicode(&text));
        }
    }

    /// Every body of the bundled Reuters corpus with a non-ASCII character splits alike.
    #[test]
    fn reuters_non_ascii_bodies_agree() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/reuters21578.jsonl.zst"
        );
        let file = std::fs::File::open(path).expect("the bundled Reuters corpus");
        let text = std::io::read_to_string(zstd::Decoder::new(file).unwrap()).unwrap();
        for line in text.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).unwrap();
            for field in ["title", "body"] {
                let value = doc[field].as_str().unwrap_or("");
                assert_eq!(chunked(value), unicode(value), "{value:?}");
            }
        }
    }
}
