//! Do reads verify chunk checksums? The process-wide setting: the `QUARRY_VERIFY_CHUNKS`
//! environment variable and the benchmark-only switch that suspends checks to measure their cost.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set by [`suspend_checks_for_measurement`].
static SUSPENDED: AtomicBool = AtomicBool::new(false);

/// Whether reads verify chunk checksums: on, unless the environment variable
/// `QUARRY_VERIFY_CHUNKS` is `0` or `off` (read once per process) or checks are suspended
/// (both for measuring the cost only).
#[inline]
pub fn verification_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    let on = *ON.get_or_init(|| {
        !matches!(
            std::env::var("QUARRY_VERIFY_CHUNKS").as_deref(),
            Ok("0") | Ok("off")
        )
    });
    on && !SUSPENDED.load(Ordering::Relaxed)
}

/// For measuring the cost of verification inside one process (A/B): while `suspended`, reads
/// and postings cursors created afterwards skip the verified-bitmap check and read unverified
/// bytes. Never for production use: a suspended process trusts the disk. Scrubs and merges
/// ([`VerifiedFile::verify_all`](super::VerifiedFile::verify_all)) verify regardless.
pub fn suspend_checks_for_measurement(suspended: bool) {
    SUSPENDED.store(suspended, Ordering::Relaxed);
}
