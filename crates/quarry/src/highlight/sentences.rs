//! Where do a text's sentences start? Unicode's sentence boundaries (UAX #29), as
//! `unicode-segmentation` finds them, with a faster twin for ASCII text: looking up each
//! character's sentence category in the crate's Unicode tables was 37 % of highlighting the top
//! 10 of W2 queries (`perf record` of `quarry-bench driver quarry query --modes
//! top10_highlight`), and four in five W2 paragraphs are ASCII.

use unicode_segmentation::{USentenceBoundIndices, UnicodeSegmentation};

/// The byte offsets where the sentences of a text start, in order (0 first, for a non-empty
/// text).
pub(crate) enum SentenceStarts<'a> {
    Unicode(USentenceBoundIndices<'a>),
    Ascii(AsciiSentences<'a>),
}

impl<'a> SentenceStarts<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        if text.is_ascii() {
            SentenceStarts::Ascii(AsciiSentences {
                b: text.as_bytes(),
                at: 0,
            })
        } else {
            SentenceStarts::Unicode(text.split_sentence_bound_indices())
        }
    }
}

impl Iterator for SentenceStarts<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        match self {
            SentenceStarts::Unicode(it) => it.next().map(|(b, _)| b),
            SentenceStarts::Ascii(it) => it.next(),
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

    #[test]
    fn non_ascii_text_takes_the_unicode_tables() {
        let text = "Café ouvert. Bien sûr.";
        assert!(matches!(
            SentenceStarts::new(text),
            SentenceStarts::Unicode(_)
        ));
        assert_eq!(SentenceStarts::new(text).collect::<Vec<_>>(), unicode(text));
    }
}
