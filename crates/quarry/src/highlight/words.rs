//! Where do the words of an ASCII text start? UAX #29's word boundaries restricted to ASCII,
//! a twin of `unicode-segmentation`'s `split_word_bound_indices`: looking up each character's
//! word category in the crate's tables was 5 % of highlighting the top 10 of W2 queries (`perf
//! record` of `quarry-bench driver quarry query --modes top10_highlight`), where a sentence
//! longer than the fragment is cut at word breaks. Rules about Hebrew letters, Katakana,
//! regional indicators, emoji and extending marks never apply to ASCII text.

/// UAX #29's word-break categories of the ASCII characters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cat {
    Cr,
    Lf,
    /// Vertical tab and form feed.
    Newline,
    /// The space (not the tab, which is `Other`).
    WSegSpace,
    ALetter,
    Numeric,
    /// `:`.
    MidLetter,
    /// `.` and `'` (Single_Quote acts as MidNumLet outside Hebrew).
    MidNumLetQ,
    /// `,` and `;`.
    MidNum,
    /// `_`.
    ExtendNumLet,
    Other,
}

fn cat(b: u8) -> Cat {
    match b {
        b'\r' => Cat::Cr,
        b'\n' => Cat::Lf,
        0x0b | 0x0c => Cat::Newline,
        b' ' => Cat::WSegSpace,
        b'a'..=b'z' | b'A'..=b'Z' => Cat::ALetter,
        b'0'..=b'9' => Cat::Numeric,
        b':' => Cat::MidLetter,
        b'.' | b'\'' => Cat::MidNumLetQ,
        b',' | b';' => Cat::MidNum,
        b'_' => Cat::ExtendNumLet,
        _ => Cat::Other,
    }
}

/// Whether a word boundary lies between `b[i - 1]` and `b[i]` (0 < i < len).
fn breaks_at(b: &[u8], i: usize) -> bool {
    use Cat::*;
    let (prev, cur) = (cat(b[i - 1]), cat(b[i]));
    let before = || i.checked_sub(2).map(|j| cat(b[j]));
    let after = || b.get(i + 1).map(|&c| cat(c));
    match (prev, cur) {
        (Cr, Lf) => false,                                                     // WB3
        (Cr | Lf | Newline, _) | (_, Cr | Lf | Newline) => true,               // WB3a, WB3b
        (WSegSpace, WSegSpace) => false,                                       // WB3d
        (ALetter, ALetter) => false,                                           // WB5
        (ALetter, MidLetter | MidNumLetQ) => after() != Some(ALetter),         // WB6
        (MidLetter | MidNumLetQ, ALetter) => before() != Some(ALetter),        // WB7
        (Numeric, Numeric) | (ALetter, Numeric) | (Numeric, ALetter) => false, // WB8-10
        (MidNum | MidNumLetQ, Numeric) => before() != Some(Numeric),           // WB11
        (Numeric, MidNum | MidNumLetQ) => after() != Some(Numeric),            // WB12
        (ALetter | Numeric | ExtendNumLet, ExtendNumLet) => false,             // WB13a
        (ExtendNumLet, ALetter | Numeric) => false,                            // WB13b
        _ => true,                                                             // WB999
    }
}

/// The byte offsets where the words (and the runs between them) of an ASCII text start, in
/// order: 0 first for a non-empty text, as `split_word_bound_indices` gives them.
pub(crate) fn ascii_word_starts(b: &[u8]) -> impl Iterator<Item = usize> + '_ {
    debug_assert!(b.is_ascii());
    (0..b.len()).filter(move |&i| i == 0 || breaks_at(b, i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    fn unicode(text: &str) -> Vec<usize> {
        text.split_word_bound_indices().map(|(b, _)| b).collect()
    }

    fn ascii(text: &str) -> Vec<usize> {
        ascii_word_starts(text.as_bytes()).collect()
    }

    #[test]
    fn examples_agree_with_unicode_segmentation() {
        for text in [
            "",
            "a",
            "The U.S. economy grew 3.5 percent, or 1,000.5 units; can't stop.",
            "snake_case and _x_ or 12_ab: a:b a.b 'q' \"quoted\"  two  spaces\r\n\t tab",
            "e.g. 1.2.3 a1b2 x.1 1.x ...",
        ] {
            assert_eq!(ascii(text), unicode(text), "{text:?}");
        }
    }

    /// Every ASCII character, in mixtures weighted towards the ones the rules treat specially.
    fn ascii_text() -> impl Strategy<Value = String> {
        let special = prop::sample::select(
            b".:,;'\"_ \t\r\n\x0b\x0caAzZ0159#-/"
                .iter()
                .map(|&b| b as char)
                .collect::<Vec<_>>(),
        );
        let any = (0u8..128).prop_map(char::from);
        prop::collection::vec(prop_oneof![4 => special, 1 => any], 0..40)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn ascii_twin_agrees_with_unicode_segmentation(text in ascii_text()) {
            prop_assert_eq!(ascii(&text), unicode(&text));
        }
    }
}
