//! Fuzzes the server's query DSL translation: arbitrary bytes, when they are JSON, go through
//! `dsl::translate` and `search::parse_request` against a Reuters-like schema. Neither may
//! panic; every error must be a 4xx.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use quarry::{Schema, Searcher};
use quarry_server::{dsl, search};

fn searcher() -> &'static Searcher {
    static S: OnceLock<Searcher> = OnceLock::new();
    S.get_or_init(|| {
        let schema = Schema::builder()
            .keyword("_id")
            .integer("id")
            .text("title", true)
            .text("body", true)
            .keyword("topics")
            .build();
        Searcher::new(schema, Arc::new(Vec::new()))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Err(e) = dsl::translate(&v, searcher()) {
        assert!(e.status.is_client_error(), "{e}");
    }
    if let Err(e) = search::parse_request(&v, &HashMap::new(), searcher(), false) {
        assert!(e.status.is_client_error(), "{e}");
    }
});
