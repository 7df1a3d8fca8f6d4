//! Fuzzes the query parser: arbitrary UTF-8 input under several parser settings must never
//! panic, errors must point at a character boundary, and a parsed query must render (and its
//! rendering must parse again without panicking).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use quarry::query::{Operator, QueryParser, SimpleAnalysis, StandardAnalysis};

fn parsers() -> &'static [QueryParser] {
    static PARSERS: OnceLock<Vec<QueryParser>> = OnceLock::new();
    PARSERS.get_or_init(|| {
        let simple = Arc::new(SimpleAnalysis);
        vec![
            QueryParser::new("body", Arc::new(StandardAnalysis::new())),
            QueryParser::new("body", simple.clone())
                .with_default_operator(Operator::And)
                .with_split_on_whitespace(true)
                .with_phrase_slop(2),
            QueryParser::with_default_fields(vec!["title".into(), "body".into()], simple.clone())
                .with_field_boost("title", 2.0)
                .with_max_clause_count(16),
            QueryParser::with_default_fields(vec![], simple).with_max_depth(8),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    for parser in parsers() {
        match parser.parse(input) {
            Ok(query) => {
                let rendered = query.to_string();
                let _ = query.to_string_with_field("body");
                let _ = parser.parse(&rendered);
            }
            Err(e) => {
                assert!(e.position <= input.len() && input.is_char_boundary(e.position));
                let _ = e.to_string();
                let _ = e.excerpt_with_caret();
            }
        }
    }
});
