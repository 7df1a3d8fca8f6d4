//! How query text becomes terms when no schema is at hand: [`SimpleAnalysis`], a
//! dependency-free approximation of Lucene's `StandardAnalyzer`, and [`StandardAnalysis`],
//! quarry's own `StandardAnalyzer` for every field (what the Lucene parity tests and the fuzz
//! target use). The engine's schema-backed analysis lives with the searcher.
use super::FieldAnalysis;
use crate::analysis::{Analyzer, StandardAnalyzer};

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

/// quarry's [`StandardAnalyzer`] (Lucene 10's `StandardAnalyzer` without stop words) for every
/// field: terms are its tokens, prefixes its normalization. Every field exists.
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardAnalysis(StandardAnalyzer);

impl StandardAnalysis {
    pub fn new() -> Self {
        Self(StandardAnalyzer::new())
    }
}

impl FieldAnalysis for StandardAnalysis {
    fn tokens(&self, _field: &str, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.0
            .for_each_token(text, &mut |t| out.push(t.to_string()));
        out
    }

    fn normalize(&self, _field: &str, text: &str) -> String {
        self.0.normalize(text)
    }
}
