//! Unit and property tests of the standard analyzer. Every expected token list below was produced
//! by Lucene 10.6.0's `StandardAnalyzer` on the same input.

use super::*;
use proptest::prelude::*;

fn toks(text: &str) -> Vec<String> {
    let a = StandardAnalyzer::new();
    let fast = a.tokens(text);
    assert_eq!(
        fast,
        a.tokens_unicode_path(text),
        "fast path and Unicode path differ on {text:?}"
    );
    fast
}

fn check(text: &str, want: &[&str]) {
    assert_eq!(toks(text), want, "tokens of {text:?}");
}

#[test]
fn brief_examples() {
    check("U.S.", &["u.s"]);
    check("3.14", &["3.14"]);
    check("wi-fi", &["wi", "fi"]);
    check("foo_bar", &["foo_bar"]);
    check("O'Neil", &["o'neil"]);
}

#[test]
fn punctuation_symbols_and_mid_characters() {
    // '$' '%' '-' and a lone '_' are dropped; ':' joins letters (WB6/7 MidLetter) but not digits;
    // ',' ';' join digits (WB11/12 MidNum) but not letters; '.' and '\'' join both.
    check(
        "$100 10% - _ __ a:b 1,000,000 1.2.3 a.1 1a.b a_.b x__y _x_ 1;2 1:2 a,b a;b",
        &[
            "100",
            "10",
            "a:b",
            "1,000,000",
            "1.2.3",
            "a",
            "1",
            "1a.b",
            "a_",
            "b",
            "x__y",
            "_x_",
            "1;2",
            "1",
            "2",
            "a",
            "b",
            "a",
            "b",
        ],
    );
    check(
        "e-mail: john.doe@example.com http://www.example.com/path?q=1 C++ C# .NET",
        &[
            "e",
            "mail",
            "john.doe",
            "example.com",
            "http",
            "www.example.com",
            "path",
            "q",
            "1",
            "c",
            "c",
            "net",
        ],
    );
    check(
        "can't won't rock'n'roll 'quoted' \"double\"",
        &["can't", "won't", "rock'n'roll", "quoted", "double"],
    );
    check(
        "12:30pm 2024-01-02 1.5% -3.2 +4 $1,234.56 1e10 0x1F",
        &[
            "12", "30pm", "2024", "01", "02", "1.5", "3.2", "4", "1,234.56", "1e10", "0x1f",
        ],
    );
}

#[test]
fn java_simple_lowercase() {
    // U+0130 lowercases to plain 'i' (Java's simple mapping), final sigma is not contextual.
    check(
        "\u{130}stanbul \u{3a3}\u{391}\u{3a3} STRASSE \u{1e9e}",
        &["istanbul", "σασ", "strasse", "ß"],
    );
    assert_eq!(java_lower('\u{130}'), 'i');
    assert_eq!(java_lower('Σ'), 'σ');
    assert_eq!(java_lower('ß'), 'ß');
    assert_eq!(
        StandardAnalyzer::new().normalize("Foo* \u{130}X"),
        "foo* ix"
    );
}

#[test]
fn east_asian_scripts() {
    // Ideographs and hiragana: one token per character; katakana and hangul: runs.
    check("日本語のテキスト", &["日", "本", "語", "の", "テキスト"]);
    check("한국어 텍스트", &["한국어", "텍스트"]);
    // Complex_Context (Thai): kept together.
    check("ภาษาไทย abc", &["ภาษาไทย", "abc"]);
}

#[test]
fn emoji_sequences() {
    check(
        "👍🏽 👨\u{200d}👩\u{200d}👧 🇺🇸 1\u{fe0f}\u{20e3} #\u{20e3} © ™",
        &[
            "👍🏽",
            "👨\u{200d}👩\u{200d}👧",
            "🇺🇸",
            "1\u{fe0f}\u{20e3}",
            "#\u{20e3}",
            "©",
            "™",
        ],
    );
}

#[test]
fn hebrew_quotes() {
    // WB7a-c: Hebrew letter × quote; but a quote after a mid-letter-joined Hebrew letter or after
    // `Hebrew " Hebrew` is not taken.
    check("צה\"ל ב' a'ב' ש\"ת'", &["צה\"ל", "ב'", "a'ב", "ש\"ת"]);
}

#[test]
fn combining_marks_attach() {
    check(
        "café cafe\u{301} naïve résumés",
        &["café", "cafe\u{301}", "naïve", "résumés"],
    );
}

#[test]
fn long_tokens_are_split_at_255_utf16_units() {
    let a = "a".repeat(300);
    assert_eq!(toks(&a), vec!["a".repeat(255), "a".repeat(45)]);
    assert_eq!(
        toks(&"a".repeat(600)),
        vec!["a".repeat(255), "a".repeat(255), "a".repeat(90)]
    );
    // A supplementary character that would straddle the window end starts the next piece.
    assert_eq!(
        toks(&format!("{}𝐀b", "a".repeat(254))),
        vec!["a".repeat(254), "𝐀b".to_owned()]
    );
    // The piece ends at the longest match inside the window; the rest is scanned afresh.
    assert_eq!(
        toks(&format!("{}.b", "a".repeat(254))),
        vec!["a".repeat(254), "b".to_owned()]
    );
    assert_eq!(
        toks(&format!("{}.b", "a".repeat(253))),
        vec![format!("{}.b", "a".repeat(253))]
    );
    assert_eq!(
        toks(&format!("{},5", "1".repeat(254))),
        vec!["1".repeat(254), "5".to_owned()]
    );
    assert_eq!(
        toks(&format!("{} x", "ab".repeat(200))),
        vec![
            "ab".repeat(127) + "a",
            "b".to_owned() + &"ab".repeat(72),
            "x".to_owned()
        ]
    );
    // A run of '_' too long for the window is dropped one character at a time.
    assert_eq!(
        toks(&format!("{}a", "_".repeat(300))),
        vec![format!("{}a", "_".repeat(254))]
    );
}

#[test]
fn configurable_max_token_length() {
    let a = StandardAnalyzer::with_max_token_length(3);
    assert_eq!(a.max_token_length(), 3);
    assert_eq!(a.tokens("abcdefg hi"), vec!["abc", "def", "g", "hi"]);
    assert_eq!(
        a.tokens_unicode_path("abcdefg hi"),
        vec!["abc", "def", "g", "hi"]
    );
}

#[test]
#[should_panic(expected = "max_token_length")]
fn zero_max_token_length_is_refused() {
    let _ = StandardAnalyzer::with_max_token_length(0);
}

#[test]
fn lookup_by_name_and_positions() {
    let a = analyzer_by_name("standard").expect("standard analyzer");
    assert_eq!(a.name(), "standard");
    assert!(analyzer_by_name("klingon").is_none());
    let mut seen = Vec::new();
    a.for_each_token("The quick, brown fox.", &mut |t| seen.push(t.to_owned()));
    assert_eq!(seen, ["the", "quick", "brown", "fox"]);
    assert!(toks("").is_empty());
    assert!(toks(" \t\n-- ").is_empty());
}

#[test]
fn mixed_text_splits_at_ascii_whitespace_exactly() {
    check(
        "naïve NAÏVE\tcafé's U.S.A. 東京 x",
        &["naïve", "naïve", "café's", "u.s.a", "東", "京", "x"],
    );
}

/// Random ASCII, biased toward the characters whose rules are subtle.
fn tricky_ascii() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => prop::sample::select(vec!['.', '\'', ',', '_', '-', ':', ';', '@', '/', ' ', '"']),
        3 => prop::sample::select(vec!['a', 'b', 'Z', 'Q', 'x']),
        3 => prop::sample::select(vec!['0', '1', '9']),
        1 => (0u8..128).prop_map(char::from),
    ];
    prop::collection::vec(ch, 0..80).prop_map(|v| v.into_iter().collect())
}

/// Random text mixing ASCII, accented Latin, scripts with special rules, emoji parts, marks and
/// arbitrary code points.
fn mixed_text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        3 => prop::sample::select(vec![
            'a', 'Z', '0', '7', '.', '\'', ',', ':', '_', ' ', '"', '-', '#', '*',
        ]),
        3 => prop::sample::select(vec![
            'é', 'İ', 'Σ', 'ß', 'א', 'ב', '日', 'の', 'テ', 'ー', '한', 'ก', '\u{e31}', '\u{301}',
            '\u{200d}', '\u{fe0f}', '\u{fe0e}', '\u{20e3}', '\u{ad}', '👍', '🏽', '🇺', '🇸', '©',
            '\u{e0067}', '\u{e007f}', '𝐀', '０', 'Ａ', '\u{85}', '\u{2028}', '’', '․',
        ]),
        1 => any::<char>(),
    ];
    prop::collection::vec(ch, 0..120).prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The offsets variant gives the same tokens, each the normalized text of its byte range,
    /// ranges ascending and disjoint.
    #[test]
    fn offsets_cover_exactly_the_tokens(text in prop_oneof![tricky_ascii(), mixed_text()], max in prop_oneof![Just(255usize), 1usize..12]) {
        let a = StandardAnalyzer::with_max_token_length(max);
        let mut with = Vec::new();
        a.for_each_token_with_offsets(&text, &mut |t, s, e| with.push((t.to_string(), s, e)));
        let terms: Vec<String> = with.iter().map(|(t, _, _)| t.clone()).collect();
        prop_assert_eq!(terms, a.tokens(&text));
        let mut last = 0;
        for (t, s, e) in &with {
            prop_assert!(last <= *s && s < e, "{} at {}..{} after {}", t, s, e, last);
            prop_assert_eq!(&a.normalize(&text[*s..*e]), t);
            last = *e;
        }
    }

    /// `find_terms` reports exactly the tokens equal to one of the terms: the text's own tokens,
    /// pieces of it and small random words, around tokens cut at the maximum length too.
    #[test]
    fn find_terms_is_the_filtered_tokenization(
        text in prop_oneof![
            3 => tricky_ascii(),
            1 => "[ab_.9]{240,600}( [ab]{1,300}[ .,]?){0,2}",
        ],
        max in prop_oneof![Just(255usize), 1usize..12],
        picks in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0usize..8),
            0..6,
        ),
        extra in prop::collection::vec("[abzqx019_.':,]{1,6}", 0..3),
    ) {
        let a = StandardAnalyzer::with_max_token_length(max);
        let mut all = Vec::new();
        a.for_each_token_with_offsets(&text, &mut |t, s, e| all.push((t.to_string(), s, e)));
        let lower = text.to_ascii_lowercase();
        let mut terms = extra;
        for (i, j, len) in picks {
            if !all.is_empty() {
                terms.push(all[i.index(all.len())].0.clone());
            }
            if !lower.is_empty() {
                let s = j.index(lower.len());
                terms.push(lower[s..(s + len).min(lower.len())].to_string());
            }
        }
        terms.sort();
        terms.dedup();
        let refs: Vec<&str> = terms.iter().map(String::as_str).collect();
        let mut found = Vec::new();
        prop_assert!(a.find_terms(&text, &refs, &mut |t, s, e| found.push((refs[t].to_string(), s, e))));
        found.sort_by_key(|&(_, s, _)| s);
        let expected: Vec<_> = all.into_iter().filter(|(t, _, _)| terms.contains(t)).collect();
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn find_terms_leaves_non_ascii_text_to_the_tokenizer(text in mixed_text()) {
        let a = StandardAnalyzer::new();
        let mut called = false;
        let done = a.find_terms(&text, &["a", "k"], &mut |_, _, _| called = true);
        prop_assert_eq!(done, text.is_ascii());
        prop_assert!(done || !called);
    }

    #[test]
    fn ascii_fast_path_matches_unicode_path(text in tricky_ascii(), max in prop_oneof![Just(255usize), 1usize..12]) {
        let a = StandardAnalyzer::with_max_token_length(max);
        prop_assert_eq!(a.tokens(&text), a.tokens_unicode_path(&text));
    }

    #[test]
    fn mixed_text_never_panics_and_paths_agree(text in mixed_text(), max in prop_oneof![Just(255usize), 1usize..12]) {
        let a = StandardAnalyzer::with_max_token_length(max);
        let toks = a.tokens(&text);
        prop_assert_eq!(&toks, &a.tokens_unicode_path(&text));
        for t in &toks {
            prop_assert!(!t.is_empty());
            prop_assert!(t.encode_utf16().count() <= max);
        }
    }
}

#[test]
fn lowercase_table_agrees_with_rust_where_unicode_is_stable() {
    // Outside U+0130 and characters newer than the JVM's Unicode version, Java's simple mapping is
    // Rust's full mapping whenever the latter is a single character.
    let mut differ = 0;
    for c in (0..=0x2ffffu32).filter_map(char::from_u32) {
        let mut it = c.to_lowercase();
        if it.len() == 1 && it.next() != Some(java_lower(c)) {
            differ += 1;
        }
    }
    assert!(
        differ < 64,
        "{differ} code points lowercase differently from Rust's mapping"
    );
    assert_eq!(java_lower('\u{130}'), 'i');
    assert_eq!(java_lower('Ａ'), 'ａ');
    assert_eq!(java_lower('𐐀'), '𐐨');
    assert_eq!(java_lower('ǅ'), 'ǆ');
}

#[test]
fn flag_table_agrees_with_ranges() {
    let table = uax29::FlagTable::get();
    let mut expected = vec![0u32; 0x110000];
    for &(lo, hi, f) in tables::RANGES {
        assert!(lo <= hi);
        expected[lo as usize..=hi as usize].fill(f);
    }
    for c in (0..0x110000u32).filter_map(char::from_u32) {
        assert_eq!(table.flags(c), expected[c as usize], "U+{:04X}", c as u32);
    }
    // A few anchors from Lucene's grammar.
    assert_ne!(table.flags('a') & uax29::F_ALETTER, 0);
    assert_ne!(table.flags(':') & uax29::F_MIDLETTER, 0);
    assert_ne!(table.flags('_') & uax29::F_EXTNUMLET, 0);
    assert_ne!(table.flags('\u{301}') & uax29::F_EXT, 0);
    assert_ne!(table.flags('ก') & uax29::F_SA, 0);
    assert_ne!(table.flags('日') & uax29::F_HAN, 0);
}
