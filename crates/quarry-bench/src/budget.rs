//! Does a search's time budget hold on the slowest W2 queries? Finds them on a running
//! `quarry serve` (loading W2 into it when needed), then runs each with several `timeout`s and
//! reports how long the responses took against the budget.
//!
//! `quarry-bench budget --url http://127.0.0.1:9200 --budgets 1,5,20 --slowest 20`
//! (start the server first with `quarry serve --data DIR`; the release build).
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::load::{bulk_body, host_of, Conn};
use crate::workload;

#[derive(Debug, clap::Args)]
pub struct BudgetArgs {
    /// The server (`quarry serve`), e.g. http://127.0.0.1:9200.
    #[arg(long, default_value = "http://127.0.0.1:9200")]
    pub url: String,
    /// Time budgets to try, in milliseconds.
    #[arg(long, value_delimiter = ',', default_value = "1,5,20")]
    pub budgets: Vec<u64>,
    /// How many of the slowest (query, mode) pairs to run with budgets.
    #[arg(long, default_value_t = 20)]
    pub slowest: usize,
    /// Runs of each slow pair per budget.
    #[arg(long, default_value_t = 10)]
    pub repeats: usize,
    /// Index at most this many W2 documents (default: the whole corpus).
    #[arg(long)]
    pub docs: Option<usize>,
    /// Write the results as JSON here as well.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

const INDEX: &str = "budget-w2";

/// The request body of a query in a mode (`top10_count` or `count`), with an optional budget.
fn body(query: &str, mode: &str, timeout: Option<u64>) -> Vec<u8> {
    let mut b = json!({"query": {"query_string": {"query": query, "default_field": "body"}},
                       "size": if mode == "count" { 0 } else { 10 }, "track_total_hits": true});
    b["timeout"] = match timeout {
        Some(ms) => json!(format!("{ms}ms")),
        None => json!("-1"),
    };
    b.to_string().into_bytes()
}

/// Sends one search; returns (wall time in microseconds, timed_out).
fn time_search(c: &mut Conn, body: &[u8]) -> Result<(u64, bool)> {
    let t = Instant::now();
    let (st, resp) = c.request(
        "POST",
        &format!("/{INDEX}/_search"),
        "application/json",
        body,
    )?;
    let micros = t.elapsed().as_micros() as u64;
    if st != 200 {
        bail!("search answered {st}: {}", String::from_utf8_lossy(&resp));
    }
    let v: Value = serde_json::from_slice(&resp)?;
    Ok((micros.max(1), v["timed_out"] == json!(true)))
}

/// Loads W2 into the server unless the index already holds `n` documents.
fn load(c: &mut Conn, docs_path: &std::path::Path, n: usize) -> Result<()> {
    let (st, b) = c.request("GET", &format!("/{INDEX}/_count"), "application/json", b"")?;
    if st == 200 {
        let v: Value = serde_json::from_slice(&b)?;
        if v["count"].as_u64() == Some(n as u64) {
            eprintln!("[budget] reusing index {INDEX} ({n} documents)");
            return Ok(());
        }
    }
    let _ = c.request("DELETE", &format!("/{INDEX}"), "application/json", b"")?;
    let create = json!({"mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"}}},
                        "settings": {"refresh_interval": "-1"}});
    let (st, b) = c.request(
        "PUT",
        &format!("/{INDEX}"),
        "application/json",
        create.to_string().as_bytes(),
    )?;
    if st != 200 {
        bail!("creating the index: {st} {}", String::from_utf8_lossy(&b));
    }
    let t = Instant::now();
    let file = std::fs::File::open(docs_path)
        .with_context(|| format!("opening {}", docs_path.display()))?;
    let mut batch = Vec::new();
    let mut sent = 0usize;
    let mut flush = |batch: &mut Vec<String>, sent: &mut usize| -> Result<()> {
        let (st, b) = c.request(
            "POST",
            &format!("/{INDEX}/_bulk"),
            "application/x-ndjson",
            &bulk_body(batch, *sent as u64, &[]),
        )?;
        if st != 200 || String::from_utf8_lossy(&b).contains("\"errors\":true") {
            bail!("bulk failed: {st} {}", String::from_utf8_lossy(&b));
        }
        *sent += batch.len();
        batch.clear();
        Ok(())
    };
    for line in BufReader::new(file).lines().take(n) {
        let v: Value = serde_json::from_str(&line?)?;
        batch.push(json!({"title": v["title"], "body": v["body"]}).to_string());
        if batch.len() == 5000 {
            flush(&mut batch, &mut sent)?;
        }
    }
    if !batch.is_empty() {
        flush(&mut batch, &mut sent)?;
    }
    c.request("POST", &format!("/{INDEX}/_flush"), "application/json", b"")?;
    c.request(
        "POST",
        &format!("/{INDEX}/_refresh"),
        "application/json",
        b"",
    )?;
    eprintln!(
        "[budget] loaded {sent} documents in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(Debug, serde::Serialize)]
struct BudgetResult {
    budget_ms: u64,
    runs: u64,
    timed_out: u64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    /// Response time minus budget, at p50 / p99 / max (negative: answered within).
    overshoot_p50_ms: f64,
    overshoot_p99_ms: f64,
    overshoot_max_ms: f64,
}

pub fn run(args: BudgetArgs) -> Result<()> {
    let repo = std::env::current_dir()?;
    let tmp = repo.join("bench/results/tmp");
    let prepared = workload::prepare("w2", &repo, &tmp, false)?;
    let n = args.docs.unwrap_or(usize::MAX).min(prepared.docs as usize);
    let host = host_of(&args.url)?;
    let mut c = Conn::open(&host)?;
    load(&mut c, &prepared.docs_path, n)?;

    // The slowest (query, mode) pairs without a budget: one warm-up, then the best of two.
    eprintln!(
        "[budget] timing {} queries x 2 modes without a budget",
        prepared.queries.len()
    );
    let mut timed: Vec<(u64, String, &str)> = Vec::new();
    for q in &prepared.queries {
        for mode in ["top10_count", "count"] {
            let b = body(&q.query, mode, None);
            time_search(&mut c, &b)?;
            let t = time_search(&mut c, &b)?.0.min(time_search(&mut c, &b)?.0);
            timed.push((t, q.query.clone(), mode));
        }
    }
    timed.sort_by_key(|x| std::cmp::Reverse(x.0));
    timed.truncate(args.slowest);
    println!("Slowest (query, mode) pairs without a budget (best of two runs, through HTTP):\n");
    println!("| query | mode | ms |");
    println!("|---|---|---:|");
    for (t, q, m) in &timed {
        println!("| `{q}` | {m} | {:.2} |", *t as f64 / 1000.0);
    }
    println!();

    let mut results = Vec::new();
    for &budget in &args.budgets {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
        let mut over = Vec::new();
        let mut timed_out = 0u64;
        for _ in 0..args.repeats {
            for (_, q, m) in &timed {
                let (micros, to) = time_search(&mut c, &body(q, m, Some(budget)))?;
                h.saturating_record(micros);
                over.push(micros as f64 / 1000.0 - budget as f64);
                timed_out += u64::from(to);
            }
        }
        over.sort_by(f64::total_cmp);
        let rank =
            |p: f64| over[((over.len() as f64 * p).ceil() as usize).clamp(1, over.len()) - 1];
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        let r = BudgetResult {
            budget_ms: budget,
            runs: h.len(),
            timed_out,
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            max_ms: h.max() as f64 / 1000.0,
            overshoot_p50_ms: rank(0.5),
            overshoot_p99_ms: rank(0.99),
            overshoot_max_ms: *over.last().unwrap_or(&0.0),
        };
        eprintln!("[budget] {budget} ms: {r:?}");
        results.push(r);
    }
    println!("Responses with a budget ({} slowest pairs x {} runs each; time measured by the client, from sending the request to the full response):\n", timed.len(), args.repeats);
    println!("| budget ms | runs | timed out | p50 ms | p99 ms | max ms | overshoot p50 ms | overshoot p99 ms | overshoot max ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:+.2} | {:+.2} | {:+.2} |",
            r.budget_ms,
            r.runs,
            r.timed_out,
            r.p50_ms,
            r.p99_ms,
            r.max_ms,
            r.overshoot_p50_ms,
            r.overshoot_p99_ms,
            r.overshoot_max_ms
        );
    }
    if let Some(p) = &args.json {
        let slow: Vec<Value> = timed
            .iter()
            .map(|(t, q, m)| json!({"query": q, "mode": m, "ms": *t as f64 / 1000.0}))
            .collect();
        std::fs::write(
            p,
            serde_json::to_string_pretty(&json!({"docs": n, "slowest": slow, "results": results}))?,
        )?;
    }
    Ok(())
}
