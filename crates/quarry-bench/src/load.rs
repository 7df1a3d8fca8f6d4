//! How does `quarry serve` hold its latency tail under load? An open-loop HTTP load generator.
//!
//! Queries are scheduled at a fixed arrival rate (request i is due at `start + i / rate`), and
//! each latency is measured from the time the request was *due*, not from when a connection was
//! free to send it, so a slow response that delays later requests shows up in their latencies
//! (coordinated omission avoided, as wrk2 does). Latencies go into an HDR histogram. A second
//! stream bulk-indexes W2 documents at a fixed rate with a refresh interval of one second.
//!
//! `quarry-bench load --url http://127.0.0.1:9200 --rates 100,250,500 --index-rate 1000`
//! (start the server first with `quarry serve --data DIR`).
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::workload;

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The server (`quarry serve`), e.g. http://127.0.0.1:9200.
    #[arg(long, default_value = "http://127.0.0.1:9200")]
    pub url: String,
    /// Query rates to try, in queries per second (one run each, in order).
    #[arg(long, value_delimiter = ',', default_value = "100,250,500")]
    pub rates: Vec<u64>,
    /// Seconds each rate runs.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Documents per second bulk-indexed during the runs (0: no indexing).
    #[arg(long, default_value_t = 1000)]
    pub index_rate: u64,
    /// Documents loaded (and refreshed) before the runs.
    #[arg(long, default_value_t = 20_000)]
    pub preload: usize,
    /// Connections sending queries (upper bound on queries in flight).
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// The latency bound (ms) whose highest sustained rate is reported (p99 under it).
    #[arg(long, default_value_t = 10.0)]
    pub p99_bound_ms: f64,
    /// Use the full W2 corpus instead of the quick subset (50,000 paragraphs).
    #[arg(long)]
    pub full: bool,
    /// Query classes left out of the mix (e.g. `fuzzy_wildcard`, whose dictionary walks cost
    /// milliseconds each on the full corpus): the tail with and without them.
    #[arg(long, value_delimiter = ',')]
    pub skip_class: Vec<String>,
    /// The seed of the query mix's order (shuffled once, then cycled).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Send the queries in the workload's order, class after class, instead of shuffled.
    #[arg(long)]
    pub in_order: bool,
    /// Write the results as JSON here as well.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// A kept-alive HTTP/1.1 connection.
pub(crate) struct Conn {
    host: String,
    stream: BufReader<TcpStream>,
}

impl Conn {
    pub(crate) fn open(host: &str) -> Result<Conn> {
        let s = TcpStream::connect(host).with_context(|| format!("connecting to {host}"))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            host: host.to_string(),
            stream: BufReader::new(s),
        })
    }

    /// Sends one request; returns the status and body.
    pub(crate) fn request(
        &mut self,
        method: &str,
        path: &str,
        ct: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let s = self.stream.get_mut();
        s.write_all(head.as_bytes())?;
        s.write_all(body)?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .with_context(|| format!("bad status line {line:?}"))?;
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse()?;
                }
            }
        }
        let mut buf = vec![0; len];
        self.stream.read_exact(&mut buf)?;
        Ok((status, buf))
    }
}

pub(crate) fn host_of(url: &str) -> Result<String> {
    let h = url
        .strip_prefix("http://")
        .context("--url must start with http://")?;
    Ok(h.trim_end_matches('/').to_string())
}

/// Results of one rate.
#[derive(Debug, serde::Serialize)]
struct RateResult {
    rate: u64,
    sent: u64,
    achieved_qps: f64,
    errors: u64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    p9999_ms: f64,
    max_ms: f64,
    docs_indexed: u64,
    index_errors: u64,
    /// Per second of the run (by the queries' due times): queries slower than
    /// [`SLOW_MICROS`], the slowest query and the slowest `_bulk` request (ms): where the tail
    /// sits in time (every refresh, every commit, during merges, ...).
    slow_per_second: Vec<u64>,
    worst_ms_per_second: Vec<f64>,
    bulk_worst_ms_per_second: Vec<f64>,
}

/// A query slower than this counts as slow in the per-second timeline (the p99.99 target).
const SLOW_MICROS: u64 = 10_000;

/// Per-second counters shared by the generator's threads.
struct Timeline {
    slow: Vec<AtomicU64>,
    worst: Vec<AtomicU64>,
    bulk_worst: Vec<AtomicU64>,
}

impl Timeline {
    fn new(seconds: u64) -> Timeline {
        let v = || (0..seconds + 1).map(|_| AtomicU64::new(0)).collect();
        Timeline {
            slow: v(),
            worst: v(),
            bulk_worst: v(),
        }
    }

    fn slot(&self, at: Duration) -> usize {
        (at.as_secs() as usize).min(self.slow.len() - 1)
    }

    fn query(&self, at: Duration, micros: u64) {
        let i = self.slot(at);
        if micros > SLOW_MICROS {
            self.slow[i].fetch_add(1, Ordering::Relaxed);
        }
        self.worst[i].fetch_max(micros, Ordering::Relaxed);
    }

    fn bulk(&self, at: Duration, micros: u64) {
        self.bulk_worst[self.slot(at)].fetch_max(micros, Ordering::Relaxed);
    }

    fn counts(v: &[AtomicU64]) -> Vec<u64> {
        v.iter().map(|x| x.load(Ordering::Relaxed)).collect()
    }

    /// Microseconds as milliseconds.
    fn ms(v: &[AtomicU64]) -> Vec<f64> {
        Self::counts(v)
            .into_iter()
            .map(|x| x as f64 / 1000.0)
            .collect()
    }
}

const INDEX: &str = "load-w2";

/// A `_bulk` body indexing `docs` with ids `first_id`, `first_id + 1`, ... and deleting the
/// documents `delete`.
pub(crate) fn bulk_body(docs: &[String], first_id: u64, delete: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        out.extend_from_slice(
            format!("{{\"index\":{{\"_id\":\"{}\"}}}}\n", first_id + i as u64).as_bytes(),
        );
        out.extend_from_slice(d.as_bytes());
        out.push(b'\n');
    }
    for id in delete {
        out.extend_from_slice(format!("{{\"delete\":{{\"_id\":\"{id}\"}}}}\n").as_bytes());
    }
    out
}

pub fn run(args: LoadArgs) -> Result<()> {
    let repo = std::env::current_dir()?;
    let tmp = repo.join("bench/results/tmp");
    let prepared = workload::prepare("w2", &repo, &tmp, !args.full)?;
    let host = host_of(&args.url)?;
    let file = std::fs::File::open(&prepared.docs_path)?;
    let mut docs: Vec<String> = Vec::new();
    for line in BufReader::new(file).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        docs.push(json!({"title": v["title"], "body": v["body"]}).to_string());
    }
    if docs.len() <= args.preload {
        bail!(
            "the corpus has {} documents, fewer than --preload {}",
            docs.len(),
            args.preload
        );
    }
    // The workload lists its queries class by class; a real query stream interleaves them.
    // In file order, the 120 fuzzy/wildcard queries (milliseconds each) arrived back to back
    // once per cycle and queued behind one another: a burst no user traffic makes.
    let mut mix: Vec<_> = prepared
        .queries
        .iter()
        .filter(|q| !args.skip_class.contains(&q.class))
        .collect();
    if !args.in_order {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        mix.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(args.seed));
    }
    let queries: Vec<Vec<u8>> = mix
        .into_iter()
        .map(|q| {
            json!({"query": {"query_string": {"query": q.query, "default_field": "body"}},
                   "size": 10, "track_total_hits": false})
            .to_string()
            .into_bytes()
        })
        .collect();

    if queries.is_empty() {
        bail!("--skip-class {:?} leaves no queries", args.skip_class);
    }
    eprintln!(
        "[load] {} queries in the mix (classes skipped: {:?}; {})",
        queries.len(),
        args.skip_class,
        if args.in_order {
            "in the workload's order".to_string()
        } else {
            format!("shuffled with seed {}", args.seed)
        }
    );
    let mut c = Conn::open(&host)?;
    let _ = c.request("DELETE", &format!("/{INDEX}"), "application/json", b"")?;
    let create = json!({"mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"}}},
                        "settings": {"refresh_interval": "1s"}});
    let (st, body) = c.request(
        "PUT",
        &format!("/{INDEX}"),
        "application/json",
        create.to_string().as_bytes(),
    )?;
    if st != 200 {
        bail!(
            "creating the index: {st} {}",
            String::from_utf8_lossy(&body)
        );
    }
    eprintln!("[load] preloading {} documents", args.preload);
    for (n, chunk) in docs[..args.preload].chunks(1000).enumerate() {
        let (st, body) = c.request(
            "POST",
            &format!("/{INDEX}/_bulk"),
            "application/x-ndjson",
            &bulk_body(chunk, n as u64 * 1000, &[]),
        )?;
        if st != 200 || String::from_utf8_lossy(&body).contains("\"errors\":true") {
            bail!(
                "preload bulk failed: {st} {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
    c.request(
        "POST",
        &format!("/{INDEX}/_refresh"),
        "application/json",
        b"",
    )?;

    let next_doc = Arc::new(AtomicU64::new(args.preload as u64));
    let docs = Arc::new(docs);
    let queries = Arc::new(queries);
    let mut results = Vec::new();
    for &rate in &args.rates {
        let r = run_rate(&args, &host, rate, &docs, &queries, &next_doc)?;
        eprintln!(
            "[load] {} q/s: p50 {:.2} ms, p99 {:.2}, p99.9 {:.2}, p99.99 {:.2}, max {:.2}; {} errors; {} docs indexed ({} errors)",
            r.rate, r.p50_ms, r.p99_ms, r.p999_ms, r.p9999_ms, r.max_ms, r.errors, r.docs_indexed, r.index_errors
        );
        let slow: Vec<String> = r
            .slow_per_second
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(s, n)| format!("{s}s:{n}/{:.0}ms", r.worst_ms_per_second[s]))
            .collect();
        eprintln!(
            "[load] {} q/s: seconds with queries over {} ms ({} of {}): {}",
            r.rate,
            SLOW_MICROS / 1000,
            slow.len(),
            r.slow_per_second.len(),
            slow.join(" ")
        );
        results.push(r);
    }
    println!("| offered q/s | achieved q/s | p50 ms | p99 ms | p99.9 ms | p99.99 ms | max ms | errors | docs indexed |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} |",
            r.rate,
            r.achieved_qps,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.p9999_ms,
            r.max_ms,
            r.errors + r.index_errors,
            r.docs_indexed
        );
    }
    let best = results
        .iter()
        .filter(|r| r.p99_ms <= args.p99_bound_ms && r.errors == 0)
        .map(|r| r.rate)
        .max();
    match best {
        Some(b) => println!(
            "highest rate with p99 under {} ms and no errors: {b} q/s",
            args.p99_bound_ms
        ),
        None => println!(
            "no rate kept p99 under {} ms without errors",
            args.p99_bound_ms
        ),
    }
    if let Some(p) = &args.json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(
                &json!({"index_rate": args.index_rate, "queries": queries.len(),
                        "skipped_classes": args.skip_class,
                        "order": if args.in_order { "workload".to_string() }
                                 else { format!("shuffled, seed {}", args.seed) },
                        "results": results}),
            )?,
        )?;
    }
    Ok(())
}

fn run_rate(
    args: &LoadArgs,
    host: &str,
    rate: u64,
    docs: &Arc<Vec<String>>,
    queries: &Arc<Vec<Vec<u8>>>,
    next_doc: &Arc<AtomicU64>,
) -> Result<RateResult> {
    let total = rate * args.duration;
    let start = Instant::now() + Duration::from_millis(200);
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let hist = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(
        1,
        120_000_000,
        3,
    )?));
    let stop = Arc::new(AtomicBool::new(false));
    let timeline = Arc::new(Timeline::new(args.duration));
    // Indexing stream: a batch every 100 ms, which also deletes one in ten of the documents
    // indexed a few batches before.
    let indexer = {
        let (host, docs, next_doc, stop, timeline) = (
            host.to_string(),
            docs.clone(),
            next_doc.clone(),
            stop.clone(),
            timeline.clone(),
        );
        let per_batch = (args.index_rate / 10) as usize;
        std::thread::spawn(move || -> (u64, u64) {
            let (mut done, mut errs) = (0u64, 0u64);
            if per_batch == 0 {
                return (0, 0);
            }
            let Ok(mut c) = Conn::open(&host) else {
                return (0, 1);
            };
            let mut tick = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let id = next_doc.fetch_add(per_batch as u64, Ordering::Relaxed);
                let from = id as usize % docs.len();
                let to = (from + per_batch).min(docs.len());
                let old = id.saturating_sub(5 * per_batch as u64);
                let delete: Vec<u64> = (old..old + per_batch as u64).step_by(10).collect();
                let sent = Instant::now();
                let answer = c.request(
                    "POST",
                    &format!("/{INDEX}/_bulk"),
                    "application/x-ndjson",
                    &bulk_body(&docs[from..to], id, &delete),
                );
                timeline.bulk(
                    sent.saturating_duration_since(start),
                    sent.elapsed().as_micros() as u64,
                );
                match answer {
                    Ok((200, b)) if !String::from_utf8_lossy(&b).contains("\"errors\":true") => {
                        done += (to - from) as u64
                    }
                    _ => errs += 1,
                }
                tick += Duration::from_millis(100);
                if let Some(d) = tick.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
            }
            (done, errs)
        })
    };
    let workers: Vec<_> = (0..args.connections)
        .map(|_| {
            let (host, next, errors, hist, queries, timeline) = (
                host.to_string(),
                next.clone(),
                errors.clone(),
                hist.clone(),
                queries.clone(),
                timeline.clone(),
            );
            std::thread::spawn(move || {
                let mut conn = Conn::open(&host).ok();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return;
                    }
                    let due = start + Duration::from_nanos(i * 1_000_000_000 / rate);
                    if let Some(d) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let q = &queries[i as usize % queries.len()];
                    let ok = match conn.as_mut() {
                        Some(c) => matches!(
                            c.request("POST", &format!("/{INDEX}/_search"), "application/json", q),
                            Ok((200, _))
                        ),
                        None => false,
                    };
                    let micros = due.elapsed().as_micros() as u64;
                    timeline.query(due.saturating_duration_since(start), micros);
                    hist.lock()
                        .expect("histogram")
                        .saturating_record(micros.max(1));
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                        conn = Conn::open(&host).ok();
                    }
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (docs_indexed, index_errors) = indexer.join().unwrap_or((0, 1));
    let h = hist.lock().expect("histogram");
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Ok(RateResult {
        rate,
        sent: total,
        achieved_qps: total as f64 / elapsed.max(1e-9),
        errors: errors.load(Ordering::Relaxed),
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        p9999_ms: ms(0.9999),
        max_ms: h.max() as f64 / 1000.0,
        docs_indexed,
        index_errors,
        slow_per_second: Timeline::counts(&timeline.slow),
        worst_ms_per_second: Timeline::ms(&timeline.worst),
        bulk_worst_ms_per_second: Timeline::ms(&timeline.bulk_worst),
    })
}
