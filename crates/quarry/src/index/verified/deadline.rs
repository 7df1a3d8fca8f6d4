//! Until when may this thread's reads go to the disk? The I/O deadline a search with a deadline
//! sets around its work ([`IoDeadline`]), read by [`VerifiedFile`](super::VerifiedFile) before
//! each read it would issue.
use std::cell::Cell;
use std::time::Instant;

thread_local! {
    /// The deadline of the search running on this thread, if any (see [`IoDeadline`]).
    pub(super) static IO_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// While alive, reads of [`VerifiedFile`](super::VerifiedFile)s on this thread that would go to the disk (files
/// without a memory-mapped view: pread and direct modes) are not issued once `deadline` has
/// passed; they fail with [`Error::DeadlineExceeded`](crate::Error::DeadlineExceeded) instead. Set by a search with a deadline
/// around its work; dropping it restores the previous setting.
#[must_use = "the deadline applies only while the guard lives"]
pub struct IoDeadline {
    previous: Option<Instant>,
}

impl IoDeadline {
    /// Applies `deadline` (`None`: no limit) to this thread's reads until the guard is dropped.
    pub fn set(deadline: Option<Instant>) -> Self {
        Self {
            previous: IO_DEADLINE.with(|d| d.replace(deadline)),
        }
    }
}

impl Drop for IoDeadline {
    fn drop(&mut self) {
        IO_DEADLINE.with(|d| d.set(self.previous));
    }
}
