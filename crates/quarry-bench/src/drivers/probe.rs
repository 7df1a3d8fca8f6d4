//! What does one process see when it opens an index and runs queries in rounds: the `probe`
//! driver command of the I/O study (`quarry-bench io`).
//!
//! Unlike `query` (many timed repetitions of one query before the next), `probe` goes round-robin:
//! every round runs each query once, so a query's data may have been pushed out of a small page
//! cache by the others since its last run (the memory-limited case). Timed per search: `top10`
//! the search and the stored ids of its hits; `count` and `top10_count` the search alone. With
//! `--deadline-ms`, engines that support a deadline stop there and say so (`timed_out`).
//! After the last round one `probe_end` record gives the open time and the process's own peak RSS
//! (`VmHWM`), major faults and bytes read from storage (`/proc/self/io` `read_bytes`). The Lucene
//! driver implements the same command (`bench/lucene/`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use super::{load_queries, SearchEngine};
use crate::measure;
use crate::protocol::{self, Mode};

/// `read_bytes` of `/proc/self/io`: bytes this process caused to be fetched from storage.
pub fn disk_read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|t| parse_read_bytes(&t))
        .unwrap_or(0)
}

fn parse_read_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:")?.trim().parse().ok())
}

pub fn probe_cmd<E: SearchEngine>(
    dir: &Path,
    queries: &Path,
    mode: Mode,
    rounds: u64,
    deadline_ms: Option<u64>,
) -> Result<()> {
    let specs = load_queries(queries)?;
    let t = Instant::now();
    let engine = E::open(dir)?;
    let open_us = t.elapsed().as_nanos() as f64 / 1000.0;
    let parsed: Vec<Result<E::Query>> = specs.iter().map(|s| engine.parse(&s.query)).collect();
    let mut samples = vec![Vec::with_capacity(rounds as usize); specs.len()];
    let mut hits = vec![0u64; specs.len()];
    let mut timed_out = vec![0u64; specs.len()];
    let mut errors: Vec<Option<String>> = vec![None; specs.len()];
    for _ in 0..rounds {
        for (i, q) in parsed.iter().enumerate() {
            let q = match q {
                Ok(q) => q,
                Err(e) => {
                    errors[i] = Some(format!("parse: {e:#}"));
                    continue;
                }
            };
            let start = Instant::now();
            let deadline = deadline_ms.map(|ms| start + Duration::from_millis(ms));
            let run = engine
                .search_until(q, mode, deadline)
                .and_then(|(out, late)| {
                    if mode == Mode::Top10 {
                        std::hint::black_box(engine.top(&out)?);
                    }
                    Ok((out, late))
                });
            match run {
                Ok((out, late)) => {
                    samples[i].push(start.elapsed().as_nanos() as f64 / 1000.0);
                    hits[i] = E::hits(&out).0;
                    timed_out[i] += u64::from(late);
                }
                Err(e) => errors[i] = Some(format!("{e:#}")),
            }
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        let mut rec = json!({
            "engine": E::NAME, "op": "probe", "query": spec.query, "class": spec.class,
            "mode": mode.as_str(), "samples_us": samples[i], "hits": hits[i],
            "timed_out": timed_out[i],
        });
        if let Some(e) = &errors[i] {
            rec["error"] = json!(e);
        }
        protocol::emit(&rec)?;
    }
    protocol::emit(&json!({
        "engine": E::NAME, "op": "probe_end", "open_us": open_us,
        "peak_rss_bytes": measure::peak_rss_bytes(), "rss_bytes": measure::rss_bytes(),
        "major_faults": measure::major_faults(), "read_bytes": disk_read_bytes(),
        "deadline_supported": deadline_ms.is_none() || E::SUPPORTS_DEADLINE,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_read_bytes_of_proc_io() {
        let t = "rchar: 10\nwchar: 3\nsyscr: 1\nsyscw: 1\nread_bytes: 8192\nwrite_bytes: 0\n";
        assert_eq!(parse_read_bytes(t), Some(8192));
        assert_eq!(parse_read_bytes("rchar: 1\n"), None);
    }
}
