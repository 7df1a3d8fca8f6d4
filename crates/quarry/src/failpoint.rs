//! Crash-test hooks: `QUARRY_FAILPOINT=<name>` makes the process abort at that point, so tests
//! can kill a writer between two steps of a commit and check what survives.
use std::sync::OnceLock;

/// Aborts the process if the failpoint `name` is armed.
pub(crate) fn hit(name: &str) {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    let armed = ARMED.get_or_init(|| std::env::var("QUARRY_FAILPOINT").ok());
    if armed.as_deref() == Some(name) {
        eprintln!("quarry: failpoint {name} hit, aborting");
        std::process::abort();
    }
}
