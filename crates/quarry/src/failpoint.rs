//! Crash-test hooks: `QUARRY_FAILPOINT=<name>` makes the process abort at that point (or, for
//! error failpoints, makes that step fail), so tests can kill a writer between two steps of a
//! commit, or fail a merge, and check what survives.
use std::sync::OnceLock;

fn armed() -> Option<&'static str> {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| std::env::var("QUARRY_FAILPOINT").ok())
        .as_deref()
}

/// Aborts the process if the failpoint `name` is armed.
pub(crate) fn hit(name: &str) {
    if armed() == Some(name) {
        eprintln!("quarry: failpoint {name} hit, aborting");
        std::process::abort();
    }
}

/// Fails with an injected I/O error if the failpoint `name` is armed.
pub(crate) fn fail(name: &str) -> crate::Result<()> {
    if armed() == Some(name) {
        return Err(crate::Error::Store(quarry_store::StoreError::Io {
            op: "failpoint",
            path: name.into(),
            source: std::io::Error::other(format!("failpoint {name} armed")),
        }));
    }
    Ok(())
}
