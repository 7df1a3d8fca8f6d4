//! Do background merges and near-real-time refreshes hurt search latency, and what do they cost?
//! `quarry-bench merges`: W2 queries timed on an idle index, then while another thread indexes
//! the rest of W2 with background merges on (committing, hence refreshing the reader, every
//! second), then idle again on the grown index; plus the latency of making a small batch
//! visible (add + refresh) and indexing throughput with a refresh every second vs never.
//! Writes `bench/results/merges-<date>.md`.
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use hdrhistogram::Histogram;
use quarry::query::Query;
use quarry::{
    DirectoryKind, IndexReader, IndexWriter, MergeInfo, ReloadPolicy, Schema, SearchMode, Searcher,
    WriterOptions,
};

use crate::online_parity::{document, CorpusDoc};
use crate::workload::CLASSES;

#[derive(Debug, Args)]
pub struct MergesArgs {
    /// W2 documents used (the first ones in dump order; 0 = all).
    #[arg(long, default_value_t = 300_000)]
    pub docs: usize,
    /// Percent of them indexed before the searches start; the rest is indexed during them.
    #[arg(long, default_value_t = 50)]
    pub initial_percent: usize,
    /// Queries per class in the sample (evenly spaced over each class of the W2 set).
    #[arg(long, default_value_t = 60)]
    pub queries_per_class: usize,
    /// Seconds of searching on each idle index.
    #[arg(long, default_value_t = 20)]
    pub idle_seconds: u64,
    /// Milliseconds between commits (each refreshes the reader and may start a merge).
    #[arg(long, default_value_t = 1000)]
    pub refresh_ms: u64,
    /// Batches of the refresh-latency measurement.
    #[arg(long, default_value_t = 50)]
    pub refresh_batches: usize,
    /// Documents per batch of the refresh-latency measurement.
    #[arg(long, default_value_t = 100)]
    pub batch_docs: usize,
    /// The prepared W2 documents (default: prepared under bench/results/tmp/w2).
    #[arg(long)]
    pub docs_path: Option<PathBuf>,
    /// Repository root (default: found from the binary or the working directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Report path (default: bench/results/merges-<date>.md).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn schema() -> Schema {
    Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build()
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// "p50 / p99 / p99.9 / max (n)" in µs.
fn pct(h: &Histogram<u64>) -> (u64, u64, u64, u64) {
    (
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn read_docs(path: &Path, limit: usize) -> Result<Vec<CorpusDoc>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::with_capacity(1 << 20, f)
        .lines()
        .enumerate()
    {
        if limit > 0 && out.len() >= limit {
            break;
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), i + 1))?;
        let id = v["id"]
            .as_i64()
            .with_context(|| format!("{}:{}: no integer id", path.display(), i + 1))?;
        let s = |k: &str| v[k].as_str().map(String::from);
        out.push((id, s("title"), s("body")));
    }
    Ok(out)
}

/// Searches `queries` (top 10) round-robin until `stop` says so or `min_time` passed (whichever
/// `until_stop` selects); latencies in µs. `searcher` is called before every query, so a
/// near-real-time reader's newest view is used.
fn search_loop(
    searcher: &dyn Fn() -> Searcher,
    queries: &[Query],
    min_time: Duration,
    stop: Option<&AtomicBool>,
) -> Result<(Histogram<u64>, u64)> {
    let mut h = hist();
    let start = Instant::now();
    let mut sink = 0u64;
    loop {
        for q in queries {
            let s = searcher();
            let t = Instant::now();
            let r = s.search(q, 10, SearchMode::Top)?;
            h.saturating_record(t.elapsed().as_micros().max(1) as u64);
            sink = sink.wrapping_add(r.total_hits);
        }
        let done = match stop {
            Some(s) => s.load(Ordering::SeqCst),
            None => start.elapsed() >= min_time,
        };
        if done {
            break;
        }
    }
    Ok((h, sink))
}

struct Concurrent {
    hist: Histogram<u64>,
    seconds: f64,
    docs: usize,
    commits: usize,
    merges: Vec<MergeInfo>,
    segments_after: usize,
}

/// Indexes `rest` on a writer thread with background merges, committing every `every`, while
/// this thread searches through the writer's near-real-time reader.
fn concurrent(
    dir: &Path,
    rest: Vec<CorpusDoc>,
    queries: &[Query],
    every: Duration,
) -> Result<Concurrent> {
    let schema = schema();
    let opts = WriterOptions {
        threads: 1,
        ..Default::default()
    };
    let mut w = IndexWriter::open(dir, opts)?;
    w.set_background_merges(true);
    let reader = w.reader()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let n = rest.len();
    let indexer = std::thread::spawn(move || -> Result<(f64, usize, Vec<MergeInfo>)> {
        let result = (|| {
            let start = Instant::now();
            let mut last = Instant::now();
            let mut commits = 0;
            for (id, t, b) in &rest {
                w.add_document(document(&schema, *id, t.as_deref(), b.as_deref())?)?;
                if last.elapsed() >= every {
                    w.commit()?;
                    commits += 1;
                    last = Instant::now();
                }
            }
            w.commit()?;
            commits += 1;
            let seconds = start.elapsed().as_secs_f64();
            while w.wait_for_merges()? > 0 {
                w.commit()?;
            }
            Ok((seconds, commits, w.background_merges_done().to_vec()))
        })();
        stop2.store(true, Ordering::SeqCst);
        result
    });
    let (hist, _) = search_loop(&|| reader.searcher(), queries, Duration::ZERO, Some(&stop))?;
    let (seconds, commits, merges) = indexer
        .join()
        .map_err(|_| anyhow::anyhow!("the indexing thread panicked"))??;
    Ok(Concurrent {
        hist,
        seconds,
        docs: n,
        commits,
        merges,
        segments_after: reader.searcher().segments().len(),
    })
}

/// Latency of add(`batch`) + refresh until the batch is visible, per batch (µs).
fn refresh_latency(
    dir: &Path,
    docs: &[CorpusDoc],
    batches: usize,
    batch: usize,
) -> Result<Histogram<u64>> {
    let schema = schema();
    let opts = WriterOptions {
        threads: 1,
        ..Default::default()
    };
    let mut w = IndexWriter::open(dir, opts)?;
    let reader = w.reader()?;
    let mut h = hist();
    let mut live = reader.searcher().live_doc_count();
    for b in 0..batches {
        let t = Instant::now();
        for k in 0..batch {
            let (id, title, body) = &docs[(b * batch + k) % docs.len()];
            let d = document(
                &schema,
                1_000_000_000 + id,
                title.as_deref(),
                body.as_deref(),
            )?;
            w.add_document(d)?;
        }
        w.refresh()?;
        let now = reader.searcher().live_doc_count();
        h.saturating_record(t.elapsed().as_micros().max(1) as u64);
        anyhow::ensure!(
            now == live + batch as u64,
            "batch {b}: {now} live docs visible, expected {}",
            live + batch as u64
        );
        live = now;
    }
    w.commit()?;
    Ok(h)
}

/// Docs/s indexing `docs` into a new index with one thread: refreshing every `every` (or never),
/// then one commit (which runs the policy's merges); the time includes that commit.
fn throughput(dir: &Path, docs: &[CorpusDoc], every: Option<Duration>) -> Result<(f64, usize)> {
    let schema = schema();
    let opts = WriterOptions {
        threads: 1,
        ..Default::default()
    };
    let mut w = IndexWriter::create(dir, schema.clone(), opts)?;
    let start = Instant::now();
    let mut last = Instant::now();
    let mut refreshes = 0;
    for (id, t, b) in docs {
        w.add_document(document(&schema, *id, t.as_deref(), b.as_deref())?)?;
        if every.is_some_and(|e| last.elapsed() >= e) {
            w.refresh()?;
            refreshes += 1;
            last = Instant::now();
        }
    }
    w.commit()?;
    Ok((docs.len() as f64 / start.elapsed().as_secs_f64(), refreshes))
}

fn row(name: &str, h: &Histogram<u64>) -> String {
    let (p50, p99, p999, max) = pct(h);
    format!(
        "| {name} | {} | {p50} | {p99} | {p999} | {max} |\n",
        h.len()
    )
}

/// The search latencies of the three phases and the segments searched.
struct Phases {
    idle: Histogram<u64>,
    segments_idle: usize,
    conc: Concurrent,
    idle_after: Histogram<u64>,
    segments_after: usize,
}

/// The report's latency section: idle vs during indexing and merges, and the merges that ran.
fn latency_section(args: &MergesArgs, p: &Phases) -> String {
    let Phases {
        idle,
        segments_idle,
        conc,
        idle_after,
        segments_after,
    } = p;
    let ratio = |a: &Histogram<u64>, b: &Histogram<u64>| {
        a.value_at_quantile(0.99) as f64 / b.value_at_quantile(0.99).max(1) as f64
    };
    let merge_secs: Vec<f64> = conc.merges.iter().map(|m| m.seconds).collect();
    let merge_total: f64 = merge_secs.iter().sum();
    let merge_max = merge_secs.iter().copied().fold(0.0, f64::max);
    let merged_docs: u64 = conc.merges.iter().map(|m| u64::from(m.docs)).sum();
    let mut md = String::new();
    md += "## Search latency: idle vs while indexing and merging\n\n\
           | phase | searches | p50 µs | p99 µs | p99.9 µs | max µs |\n|---|---|---|---|---|---|\n";
    md += &row(
        &format!("idle, initial index ({segments_idle} segments)"),
        idle,
    );
    md += &row(
        "during indexing + background merges, NRT reader",
        &conc.hist,
    );
    md += &row(
        &format!("idle, grown index ({segments_after} segments)"),
        idle_after,
    );
    md += &format!(
        "\np99 during merges / idle p99: **{:.2}x** against the initial index, **{:.2}x** \
         against the grown one (target: at most 2x).\n\n\
         During that phase one writer thread indexed {} docs in {:.1} s ({:.0} docs/s) with \
         background merges on and a commit every {} ms ({} commits; each publishes to the \
         near-real-time reader and lets the tiered policy start a merge), while the search \
         thread took a fresh searcher before every query. Background merges: **{}** ran \
         (merged {} docs), {:.2} s in all, the longest {:.2} s; {} segments at the end.\n\n",
        ratio(&conc.hist, idle),
        ratio(&conc.hist, idle_after),
        conc.docs,
        conc.seconds,
        conc.docs as f64 / conc.seconds,
        args.refresh_ms,
        conc.commits,
        conc.merges.len(),
        merged_docs,
        merge_total,
        merge_max,
        conc.segments_after,
    );
    md
}

/// `per_class` evenly spaced queries of each class of `queries`.
fn query_sample(queries: &[crate::protocol::QuerySpec], per_class: usize) -> Vec<String> {
    let mut sample = Vec::new();
    for class in CLASSES {
        let of: Vec<&str> = queries
            .iter()
            .filter(|q| q.class == *class)
            .map(|q| q.query.as_str())
            .collect();
        let k = per_class.min(of.len());
        sample.extend((0..k).map(|i| of[i * of.len() / k.max(1)].to_string()));
    }
    sample
}

/// Builds the initial index of `docs` in `dir`, one commit; returns the seconds it took.
fn build_index(dir: &Path, docs: &[CorpusDoc]) -> Result<f64> {
    let t = Instant::now();
    let schema = schema();
    let mut w = IndexWriter::create(dir, schema.clone(), WriterOptions::default())?;
    for (id, ti, b) in docs {
        w.add_document(document(&schema, *id, ti.as_deref(), b.as_deref())?)?;
    }
    w.commit()?;
    drop(w);
    Ok(t.elapsed().as_secs_f64())
}

/// One untimed warm-up round over `queries`, then timed rounds for `min_time` on an idle
/// index; returns the latencies and the segments searched.
fn idle_searches(
    reader: &IndexReader,
    queries: &[Query],
    min_time: Duration,
) -> Result<(Histogram<u64>, usize)> {
    search_loop(&|| reader.searcher(), queries, Duration::ZERO, None)?; // warm-up round
    let segments = reader.searcher().segments().len();
    let (h, _) = search_loop(&|| reader.searcher(), queries, min_time, None)?;
    Ok((h, segments))
}

pub fn run(args: MergesArgs) -> Result<()> {
    let repo = crate::orchestrator::find_repo(args.repo.clone())?;
    let load_start = loadavg();
    let started = Instant::now();
    let prepared = crate::workload::prepare("w2", &repo, &repo.join("bench/results/tmp"), false)?;
    let docs_path = args.docs_path.clone().unwrap_or(prepared.docs_path.clone());
    eprintln!("[merges] reading {}", docs_path.display());
    let mut docs = read_docs(&docs_path, args.docs)?;
    let initial = docs.len() * args.initial_percent.min(100) / 100;
    let rest = docs.split_off(initial);
    let sample = query_sample(&prepared.queries, args.queries_per_class);
    let work = repo.join("bench/results/tmp/merges");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    let dir = work.join("index");

    eprintln!("[merges] building the initial index: {} docs", docs.len());
    let build_seconds = build_index(&dir, &docs)?;
    let reader = IndexReader::open_with(&dir, DirectoryKind::Mmap, ReloadPolicy::Manual)?;
    let queries: Vec<Query> = sample
        .iter()
        .map(|q| reader.searcher().parse_query(q, &["body"]))
        .collect::<quarry::Result<_>>()?;
    let idle_time = Duration::from_secs(args.idle_seconds);
    eprintln!("[merges] idle searches ({} queries)", queries.len());
    let (idle, segments_idle) = idle_searches(&reader, &queries, idle_time)?;
    drop(reader);

    eprintln!("[merges] searching while indexing {} more docs", rest.len());
    let every = Duration::from_millis(args.refresh_ms);
    let conc = concurrent(&dir, rest.clone(), &queries, every)?;

    eprintln!("[merges] idle searches on the grown index");
    let reader = IndexReader::open_with(&dir, DirectoryKind::Mmap, ReloadPolicy::Manual)?;
    let (idle_after, segments_after) = idle_searches(&reader, &queries, idle_time)?;
    drop(reader);

    eprintln!("[merges] refresh latency");
    let refresh = refresh_latency(&dir, &rest, args.refresh_batches, args.batch_docs)?;

    eprintln!("[merges] throughput with and without refreshes");
    let tp_docs = &rest[..rest.len().min(100_000)];
    let (never, _) = throughput(&work.join("tp-never"), tp_docs, None)?;
    let (every_s, refreshes) = throughput(&work.join("tp-every"), tp_docs, Some(every))?;
    std::fs::remove_dir_all(&work)?;
    let load_end = loadavg();

    let cmd = format!(
        "cargo run --release -p quarry-bench -- merges --docs {} --initial-percent {} \
         --queries-per-class {} --idle-seconds {} --refresh-ms {} --refresh-batches {} \
         --batch-docs {}",
        args.docs,
        args.initial_percent,
        args.queries_per_class,
        args.idle_seconds,
        args.refresh_ms,
        args.refresh_batches,
        args.batch_docs
    );
    let mut md = format!(
        "# Search latency during merges, NRT refresh ({})\n\n\
         Commit `{}`; command `{cmd}`; {} cores; load average (1/5/15 min) {load_start} at the \
         start, {load_end} at the end (the machine is shared: the other helpers' builds run \
         meanwhile, so tails include CPU contention). Whole run {:.0} s.\n\n\
         W2 ({}): the first {} paragraphs; {} indexed first ({:.1} s with {} threads), {} \
         during the searches. Query sample: {} queries ({} per class: {}), evenly spaced in \
         each class of the W2 set, mode top10 (`SearchMode::Top`), one search thread, each \
         query timed alone (µs, hdrhistogram).\n\n",
        crate::orchestrator::today(),
        crate::orchestrator::git_head(&repo),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        started.elapsed().as_secs_f64(),
        prepared.description,
        docs.len() + rest.len(),
        docs.len(),
        build_seconds,
        WriterOptions::default().threads,
        rest.len(),
        queries.len(),
        args.queries_per_class,
        CLASSES.join(", "),
    );
    md += &latency_section(
        &args,
        &Phases {
            idle,
            segments_idle,
            conc,
            idle_after,
            segments_after,
        },
    );
    let (p50, p99, p999, max) = pct(&refresh);
    md += &format!(
        "## Near-real-time refresh\n\n\
         Add {} docs, `refresh()`, then the writer's reader sees them (checked), on the grown \
         index, {} batches: p50 **{:.2} ms**, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms.\n\n\
         Indexing throughput, one thread, {} docs into a new index, then one commit (incl. \
         the policy's merges): refresh never **{:.0} docs/s**; refresh every {} ms **{:.0} \
         docs/s** ({} refreshes), i.e. {:.2}x.\n",
        args.batch_docs,
        args.refresh_batches,
        p50 as f64 / 1e3,
        p99 as f64 / 1e3,
        p999 as f64 / 1e3,
        max as f64 / 1e3,
        tp_docs.len(),
        never,
        args.refresh_ms,
        every_s,
        refreshes,
        every_s / never,
    );
    let out = args.out.clone().unwrap_or_else(|| {
        repo.join(format!(
            "bench/results/merges-{}.md",
            crate::orchestrator::today()
        ))
    });
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    eprint!("{md}");
    println!("{}", out.display());
    Ok(())
}
