//! Which threads give way first when cores are scarce: background work (merges) runs at a lower
//! CPU priority so that searches and indexing keep their latency on a small machine, as Lucene's
//! merge scheduler runs its merge threads below the indexing threads.

/// Lowers the calling thread's CPU priority by `steps` nice levels (at most to 19), on Linux
/// per thread (`setpriority` on the thread id). A hint: a refusal is ignored, and the priority is
/// never raised.
pub fn lower_current_thread_priority(steps: i32) {
    let tid = rustix::thread::gettid();
    let Ok(current) = rustix::process::getpriority_process(Some(tid)) else {
        return;
    };
    let target = current.saturating_add(steps.max(0)).min(19);
    if target > current {
        let _ = rustix::process::setpriority_process(Some(tid), target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowers_only_the_calling_thread() {
        let main_before =
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let (before, after) = std::thread::spawn(|| {
            let tid = rustix::thread::gettid();
            let before = rustix::process::getpriority_process(Some(tid)).unwrap();
            lower_current_thread_priority(5);
            (
                before,
                rustix::process::getpriority_process(Some(tid)).unwrap(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + 5).min(19));
        let main_after =
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        assert_eq!(main_before, main_after);
    }
}
