//! Fuzzes the server's `_bulk` NDJSON parser: arbitrary bytes must parse or give a 400 naming
//! a line, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_server::bulk;

fuzz_target!(|data: &[u8]| {
    match bulk::parse(data, Some("default")) {
        Ok(items) => assert!(items.len() <= data.len()),
        Err(e) => {
            assert_eq!(e.status, 400);
            assert!(e.reason.contains("line ["), "{}", e.reason);
        }
    }
});
