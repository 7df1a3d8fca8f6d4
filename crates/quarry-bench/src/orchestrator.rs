//! Who runs what, in which order: the `run` command that drives all engines through one workload.
//!
//! Per workload: prepare the corpus once; per engine: index it R times with 1 thread and R times
//! with all cores (fresh process and fresh directory each time); run the query set single-threaded
//! on the last 1-thread index and on a copy of it force-merged to one segment; cold-start that
//! index in fresh processes with its files in the page cache and evicted. The codec
//! micro-benchmark runs once per `run`. Everything lands in one JSON file per workload, then the
//! Markdown report and charts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};

use crate::cache;
use crate::launch::{index_args, lucene_launcher, lucene_version, os, run_driver, Launcher};
use crate::parity::Parity;
use crate::workload::{self, Prepared};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// w1 (Reuters, bundled), w2 (Wikipedia paragraphs, needs ../shared) or all.
    #[arg(long, default_value = "w1")]
    pub workload: String,
    /// Comma-separated engines: quarry, tantivy, lucene, seekstorm (seekstorm needs a binary built
    /// with `--features seekstorm-driver`; the default list takes it when the binary has it).
    #[arg(long)]
    pub engines: Option<String>,
    /// Index shapes the queries run on: `default` (as each engine's defaults leave the index) and
    /// `merged` (a copy force-merged to one segment).
    #[arg(long, default_value = "default,merged")]
    pub shapes: String,
    /// Smoke run (~2 minutes on W1): 1 indexing run per thread count, few iterations, W2 subsampled.
    #[arg(long)]
    pub quick: bool,
    /// Where results go (default: <repo>/bench/results; with --quick <repo>/target/bench-quick, so
    /// that a smoke run leaves the work tree clean).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fail (exit non-zero, after writing the reports) when quarry's hit counts or top-10 ids differ
    /// from Lucene's on any query, or when both fail on one; skipped, with a note, when Lucene
    /// cannot run here (unless --require-lucene).
    #[arg(long)]
    pub check_parity: bool,
    /// Fail (exit non-zero, before running anything) when Lucene cannot run here: no JDK 21+, no
    /// Maven to build its driver, or `lucene` left out of --engines. CI passes it.
    #[arg(long)]
    pub require_lucene: bool,
    /// Repository root (default: found from this crate's location or the current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Fresh indexing runs per (engine, thread count); default 3 (1 with --quick).
    #[arg(long)]
    pub index_runs: Option<usize>,
    /// Warm-up iterations per (query, mode); default depends on workload and --quick.
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Timed iterations per (query, mode); default depends on workload and --quick.
    #[arg(long)]
    pub iters: Option<u64>,
    /// Cold-start processes per cache state; default 3 (1 with --quick).
    #[arg(long)]
    pub coldstart_runs: Option<usize>,
    /// Query passes are cut into this many slices (every K-th query) and run engine after engine
    /// slice by slice, so that a drift of the machine's speed during the run falls on every
    /// engine alike (default 4; 2 with --quick).
    #[arg(long)]
    pub query_slices: Option<usize>,
    /// The Lucene driver jar (default: found under bench/lucene/target/, built with Maven if missing).
    #[arg(long)]
    pub lucene_jar: Option<PathBuf>,
    /// Indexing memory per thread, MiB: Tantivy's per-thread budget, Lucene's RAM buffer is this times
    /// the thread count (Lucene's own default would be 16 MiB in total).
    #[arg(long, default_value_t = 256)]
    pub memory_mb: usize,
    /// Keep every index built (default: keep only the one that was queried).
    #[arg(long)]
    pub keep_indexes: bool,
    /// Skip the codec micro-benchmark (otherwise run once and put into every workload's report).
    #[arg(long)]
    pub no_codecs: bool,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[arg(long, default_value = "w1")]
    pub workload: String,
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// Settings of one workload run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Settings {
    pub quick: bool,
    pub index_runs: usize,
    pub threads: Vec<usize>,
    pub warmup: u64,
    pub iters: u64,
    pub coldstart_runs: usize,
    pub global_warmup_rounds: u64,
    pub memory_mb_per_thread: usize,
    pub modes: String,
    pub shapes: Vec<String>,
    /// Query passes per (engine, shape), each over every K-th query, interleaved across engines.
    pub query_slices: usize,
}

/// The index shapes queries can run on.
pub const SHAPES: &[&str] = &["default", "merged"];

fn parse_shapes(s: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for sh in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        if !SHAPES.contains(&sh) {
            bail!("unknown index shape {sh:?}: expected default and/or merged");
        }
        if !out.iter().any(|o| o == sh) {
            out.push(sh.to_string());
        }
    }
    if out.is_empty() {
        bail!("--shapes needs at least one of default, merged");
    }
    Ok(out)
}

/// The engines run when `--engines` is not given: all four when this binary has the SeekStorm
/// driver, else the three others.
fn default_engines() -> &'static str {
    if crate::SEEKSTORM_DRIVER {
        "quarry,tantivy,lucene,seekstorm"
    } else {
        "quarry,tantivy,lucene"
    }
}

pub(crate) fn find_repo(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(r) = explicit {
        return Ok(r);
    }
    let looks_right = |p: &Path| {
        p.join("Cargo.toml").exists() && p.join("crates").is_dir() && p.join("data").is_dir()
    };
    let compiled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if looks_right(&compiled) {
        return Ok(compiled.canonicalize()?);
    }
    let mut dir = std::env::current_dir()?;
    loop {
        if looks_right(&dir) {
            return Ok(dir);
        }
        if !dir.pop() {
            bail!("cannot find the quarry repository root; pass --repo");
        }
    }
}

pub fn prepare(args: PrepareArgs) -> Result<()> {
    let repo = find_repo(args.repo)?;
    let tmp = repo.join("bench/results/tmp");
    for w in workloads(&args.workload)? {
        let p = workload::prepare(w, &repo, &tmp, args.quick)?;
        println!(
            "{}: {} docs in {}; {} queries in {}",
            p.name,
            p.docs,
            p.docs_path.display(),
            p.queries.len(),
            p.queries_path.display()
        );
    }
    Ok(())
}

fn workloads(w: &str) -> Result<Vec<&'static str>> {
    Ok(match w {
        "w1" => vec!["w1"],
        "w2" => vec!["w2"],
        "all" => vec!["w1", "w2"],
        other => bail!("unknown workload {other:?}: expected w1, w2 or all"),
    })
}

fn settings_for(workload: &str, args: &RunArgs, cores: usize) -> Result<Settings> {
    let (runs, warmup, iters, cold, global) = match (workload, args.quick) {
        ("w1", false) => (3, 100, 500, 5, 20),
        ("w1", true) => (1, 5, 20, 1, 5),
        (_, false) => (3, 10, 30, 3, 3),
        (_, true) => (1, 5, 10, 1, 5),
    };
    let mut threads = vec![1, cores];
    threads.dedup();
    Ok(Settings {
        quick: args.quick,
        index_runs: args.index_runs.unwrap_or(runs),
        threads,
        warmup: args.warmup.unwrap_or(warmup),
        iters: args.iters.unwrap_or(iters),
        coldstart_runs: args.coldstart_runs.unwrap_or(cold),
        global_warmup_rounds: global,
        memory_mb_per_thread: args.memory_mb,
        modes: "top10,top10_count,count,top10_highlight".into(),
        shapes: parse_shapes(&args.shapes)?,
        query_slices: args
            .query_slices
            .unwrap_or(if args.quick { 2 } else { 4 })
            .max(1),
    })
}

pub fn run(args: RunArgs) -> Result<()> {
    let repo = find_repo(args.repo.clone())?;
    let out_dir = args.out.clone().unwrap_or_else(|| {
        if args.quick {
            repo.join("target/bench-quick")
        } else {
            repo.join("bench/results")
        }
    });
    let tmp = repo.join("bench/results/tmp");
    std::fs::create_dir_all(&out_dir)?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    parse_shapes(&args.shapes)?;
    // Checked before any engine is built or started: a typo fails at once.
    let names = workloads(&args.workload)?;
    let (launchers, engine_status) = engine_launchers(&args, &repo)?;
    let codecs = codec_record(&args)?;
    let mut parity_failures = Vec::new();
    for w in names {
        let ctx = WorkloadRun {
            args: &args,
            repo: &repo,
            tmp: &tmp,
            out_dir: &out_dir,
            cores,
            launchers: &launchers,
            engine_status: &engine_status,
            codecs: &codecs,
        };
        let results = ctx.run(w)?;
        if args.check_parity {
            check_parity(w, &results, args.require_lucene, &mut parity_failures);
        }
    }
    if !parity_failures.is_empty() {
        bail!(
            "quarry's answers differ from Lucene's ({}); see above and the reports",
            parity_failures.join(", ")
        );
    }
    Ok(())
}

/// The engines that can run here, by name, and each engine's status for the report.
type Engines = (Vec<(String, Launcher)>, serde_json::Map<String, Value>);

/// The engines of `--engines` that can run here, and each one's status for the report (ran,
/// or skipped and why). Lucene that cannot run is an error under `--require-lucene`.
fn engine_launchers(args: &RunArgs, repo: &Path) -> Result<Engines> {
    let mut launchers: Vec<(String, Launcher)> = Vec::new();
    let mut engine_status = serde_json::Map::new();
    let engines = args
        .engines
        .clone()
        .unwrap_or_else(|| default_engines().to_string());
    for e in engines.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let launcher = match e {
            "tantivy" => Ok(Launcher::SelfExe { engine: "tantivy" }),
            "quarry" if crate::QUARRY_DRIVER => Ok(Launcher::SelfExe { engine: "quarry" }),
            "quarry" => Err(anyhow::anyhow!(
                "skipped: quarry-bench was built without the quarry driver (feature `quarry-driver`)"
            )),
            "lucene" => match lucene_launcher(repo, args.lucene_jar.clone()) {
                Err(err) if args.require_lucene => {
                    return Err(err.context(crate::launch::LUCENE_REQUIRED))
                }
                l => l,
            },
            "seekstorm" if crate::SEEKSTORM_DRIVER => Ok(Launcher::SelfExe {
                engine: "seekstorm",
            }),
            "seekstorm" => Err(anyhow::anyhow!(
                "skipped: quarry-bench was built without the SeekStorm driver; rebuild with \
                 `--features seekstorm-driver` (it adds a few minutes of build time)"
            )),
            other => bail!(
                "unknown engine {other:?}: expected quarry, tantivy, lucene or seekstorm"
            ),
        };
        match launcher {
            Ok(l) => {
                let (version, jvm) = match &l {
                    Launcher::Java { opts, .. } => (lucene_version(repo), Some(opts.join(" "))),
                    Launcher::SelfExe { .. } => (None, None),
                };
                engine_status.insert(
                    e.into(),
                    json!({"status": "ran", "launcher": format!("{l:?}"), "version": version,
                           "jvm_options": jvm}),
                );
                launchers.push((e.to_string(), l));
            }
            Err(err) => {
                eprintln!("[{e}] not benchmarked: {err:#}");
                engine_status.insert(
                    e.into(),
                    json!({"status": "skipped", "reason": format!("{err:#}")}),
                );
            }
        }
    }
    if launchers.is_empty() {
        bail!("no engine can run");
    }
    if args.require_lucene && !launchers.iter().any(|(e, _)| e == "lucene") {
        bail!("--require-lucene, but --engines {engines:?} leaves Lucene out");
    }
    Ok((launchers, engine_status))
}

/// The codec micro-benchmark's record, or null with `--no-codecs`.
fn codec_record(args: &RunArgs) -> Result<Value> {
    if args.no_codecs {
        return Ok(Value::Null);
    }
    eprintln!("[codecs] decode micro-benchmark and memory bandwidth (one core)");
    let report = crate::codecs::measure(&crate::codecs::CodecArgs {
        millis: if args.quick { 2 } else { 40 },
        buffer_mb: None,
        json: true,
    });
    Ok(serde_json::to_value(report)?)
}

/// What one workload's run needs from the whole run.
struct WorkloadRun<'a> {
    args: &'a RunArgs,
    repo: &'a Path,
    tmp: &'a Path,
    out_dir: &'a Path,
    cores: usize,
    launchers: &'a [(String, Launcher)],
    engine_status: &'a serde_json::Map<String, Value>,
    codecs: &'a Value,
}

impl WorkloadRun<'_> {
    /// Prepares workload `w`, indexes it with every engine, runs the queries interleaved,
    /// writes the raw records and the report, and returns the records.
    fn run(&self, w: &str) -> Result<Value> {
        let (args, tmp) = (self.args, self.tmp);
        let started = Instant::now();
        let prepared = workload::prepare(w, self.repo, tmp, args.quick)?;
        let settings = settings_for(w, args, self.cores)?;
        eprintln!(
            "[{w}] {} docs, {} queries, settings {}",
            prepared.docs,
            prepared.queries.len(),
            serde_json::to_string(&settings)?
        );
        let mut results = json!({
            "meta": meta(self.repo, &prepared, &settings, self.engine_status),
            "index": [], "merge": [], "query": [], "coldstart": [], "errors": [],
            "codecs": self.codecs.clone(),
        });
        let mut passes = Vec::new();
        let indexes = index_all(
            self.launchers,
            &prepared,
            &settings,
            tmp,
            args.keep_indexes,
            &mut results,
        );
        for ((name, launcher), index) in self.launchers.iter().zip(indexes) {
            let r = index.and_then(|index| {
                finish_engine(name, launcher, &prepared, &settings, index, &mut results)
            });
            match r {
                Ok(p) => passes.extend(p),
                Err(e) => {
                    eprintln!("[{w}/{name}] failed: {e:#}");
                    push(
                        &mut results,
                        "errors",
                        json!({"engine": name, "error": format!("{e:#}")}),
                    );
                }
            }
        }
        let slices = query_slices(&prepared, tmp, settings.query_slices)?;
        run_interleaved_queries(&passes, &prepared, &settings, &slices, &mut results);
        if !args.keep_indexes {
            for pass in passes.iter().filter(|p| p.copy) {
                std::fs::remove_dir_all(&pass.index).ok();
            }
        }
        results["meta"]["total_seconds"] = json!(started.elapsed().as_secs_f64());
        results["meta"]["loadavg_end"] = json!(loadavg());
        let stem = format!(
            "{}-{}{}",
            today(),
            w,
            if args.quick { "-quick" } else { "" }
        );
        let json_path = self.out_dir.join(format!("{stem}.json.zst"));
        crate::report::write_results(&json_path, &results)?;
        let md = crate::report::write_all(&results, self.out_dir, &stem)?;
        eprintln!(
            "[{w}] done in {:.0} s: {} and {}",
            started.elapsed().as_secs_f64(),
            json_path.display(),
            md.display()
        );
        Ok(results)
    }
}

/// Compares quarry's answers with Lucene's in `results` and records a failure in `failures`
/// (a difference, or, under `--require-lucene`, no comparison at all).
fn check_parity(w: &str, results: &Value, require_lucene: bool, failures: &mut Vec<String>) {
    match crate::parity::compare(results, "quarry", "lucene") {
        Parity::Same(n) => {
            eprintln!("[{w}] parity: quarry and Lucene agree on all {n} (query, mode) pairs")
        }
        Parity::Skipped(why) if require_lucene => {
            eprintln!("[{w}] parity check could not be made: {why}");
            failures.push(format!("{w}: not compared ({why})"));
        }
        Parity::Skipped(why) => eprintln!("[{w}] parity check skipped: {why}"),
        Parity::Differs(n, diffs) => {
            eprintln!(
                "[{w}] parity: {} difference(s) between quarry and Lucene over {n} (query, mode) pairs:",
                diffs.len()
            );
            for d in diffs.iter().take(20) {
                eprintln!("  {d}");
            }
            failures.push(format!("{w}: {} difference(s)", diffs.len()));
        }
    }
}

fn push(results: &mut Value, key: &str, v: Value) {
    results[key].as_array_mut().expect("array").push(v);
}

/// One engine's query pass over one shape of its index.
struct QueryPass {
    engine: String,
    launcher: Launcher,
    shape: String,
    index: PathBuf,
    /// The index is a copy made for this pass (removed afterwards unless indexes are kept).
    copy: bool,
}

/// One fresh indexing run of one engine (a new process writing into a new directory); records
/// its `index` record and returns the index's directory.
#[allow(clippy::too_many_arguments)]
fn index_once(
    name: &str,
    launcher: &Launcher,
    p: &Prepared,
    s: &Settings,
    wdir: &Path,
    threads: usize,
    run: usize,
    results: &mut Value,
) -> Result<PathBuf> {
    let dir = wdir.join(format!("index-{name}-t{threads}-r{run}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let args = index_args(
        launcher,
        &p.docs_path,
        &dir,
        threads,
        s.memory_mb_per_thread,
    );
    let mut r = run_driver(launcher, &args)?;
    let mut rec = r.take_record("index")?;
    rec["run"] = json!(run);
    rec["child_maxrss_bytes"] = json!(r.child_maxrss_bytes);
    rec["process_wall_seconds"] = json!(r.wall_seconds);
    eprintln!(
        "[{}/{name}] index threads={threads} run={run}: {:.0} docs/s, {} bytes, {} segments",
        p.name,
        rec["docs_per_sec"].as_f64().unwrap_or(0.0),
        rec["index_bytes"],
        rec["segments"]
    );
    push(results, "index", rec);
    Ok(dir)
}

/// Every indexing run of every engine, interleaved: for each thread count and run, one run per
/// engine, the engines' order rotating from step to step, so that a change of the machine's speed
/// falls on every engine alike. Returns each engine's query index (its last 1-thread run), or the
/// error that stopped its indexing.
fn index_all(
    launchers: &[(String, Launcher)],
    p: &Prepared,
    s: &Settings,
    tmp: &Path,
    keep: bool,
    results: &mut Value,
) -> Vec<Result<PathBuf>> {
    let wdir = tmp
        .join(&p.name)
        .join(if s.quick { "indexes-quick" } else { "indexes" });
    let n = launchers.len();
    let mut out: Vec<Result<PathBuf>> = (0..n)
        .map(|_| Err(anyhow::anyhow!("no 1-thread index was built")))
        .collect();
    let mut failed: Vec<Option<anyhow::Error>> = (0..n).map(|_| None).collect();
    let mut step = 0;
    for &threads in &s.threads {
        for run in 0..s.index_runs {
            for j in 0..n {
                let i = (j + step) % n;
                if failed[i].is_some() {
                    continue;
                }
                let (name, launcher) = &launchers[i];
                match index_once(name, launcher, p, s, &wdir, threads, run, results) {
                    Ok(dir) => {
                        if threads == 1 && run + 1 == s.index_runs {
                            out[i] = Ok(dir);
                        } else if !keep {
                            std::fs::remove_dir_all(&dir).ok();
                        }
                    }
                    Err(e) => failed[i] = Some(e),
                }
            }
            step += 1;
        }
    }
    for (i, f) in failed.into_iter().enumerate() {
        if let Some(e) = f {
            out[i] = Err(e);
        }
    }
    out
}

/// After indexing: makes an engine's merged copy and runs its cold-start processes; returns the
/// query passes to run on its indexes.
fn finish_engine(
    name: &str,
    launcher: &Launcher,
    p: &Prepared,
    s: &Settings,
    index: PathBuf,
    results: &mut Value,
) -> Result<Vec<QueryPass>> {
    // Query passes run later, interleaved across engines (`run_interleaved_queries`). The merged
    // shape is a copy of the queried index, force-merged to one segment now.
    let mut passes = Vec::new();
    for shape in &s.shapes {
        let copy = shape == "merged";
        let dir = if copy {
            match merged_copy(name, launcher, p, &index, results) {
                Ok(dir) => dir,
                Err(e) => {
                    eprintln!("[{}/{name}] shape {shape}: {e:#}", p.name);
                    push(
                        results,
                        "errors",
                        json!({"engine": name, "shape": shape, "error": format!("{e:#}")}),
                    );
                    continue;
                }
            }
        } else {
            index.clone()
        };
        passes.push(QueryPass {
            engine: name.to_string(),
            launcher: launcher.clone(),
            shape: shape.clone(),
            index: dir,
            copy,
        });
    }

    // Cold start: fresh process per run, index in page cache ("warm") and evicted ("evicted").
    for cache in ["warm", "evicted"] {
        for run in 0..s.coldstart_runs {
            let (resident_before, evicted) = if cache == "warm" {
                (cache::warm(&index)?, Value::Null)
            } else {
                let (files, bytes, before, after) = cache::evict(&index)?;
                (
                    after,
                    json!({"files": files, "bytes": bytes, "resident_before": before, "resident_after": after}),
                )
            };
            let args = os(&[
                &"coldstart",
                &"--index",
                &index,
                &"--query",
                &p.coldstart_query,
            ]);
            let mut r = run_driver(launcher, &args)?;
            let mut rec = r.take_record("coldstart")?;
            rec["engine"] = json!(name);
            rec["cache"] = json!(cache);
            rec["run"] = json!(run);
            rec["query"] = json!(p.coldstart_query);
            rec["spawn_to_first_result_us"] = json!(r.spawn_to_first_line_us);
            rec["child_maxrss_bytes"] = json!(r.child_maxrss_bytes);
            rec["child_major_faults"] = json!(r.child_major_faults);
            rec["index_resident_bytes_at_spawn"] = json!(resident_before);
            rec["eviction"] = evicted;
            eprintln!(
                "[{}/{name}] coldstart {cache}: spawn->result {:.0} us, open->result {:.0} us, majflt {}, driver VmHWM {:.1} MiB",
                p.name,
                r.spawn_to_first_line_us.unwrap_or(f64::NAN),
                rec["open_to_first_result_us"].as_f64().unwrap_or(f64::NAN),
                r.child_major_faults,
                rec["peak_rss_bytes"].as_f64().unwrap_or(f64::NAN) / 1048576.0
            );
            push(results, "coldstart", rec);
        }
    }
    Ok(passes)
}

/// Writes the query set as `n` files, slice `k` holding every `n`-th query from the `k`-th (so
/// every slice has queries of every class); returns their paths.
fn query_slices(p: &Prepared, tmp: &Path, n: usize) -> Result<Vec<PathBuf>> {
    if n <= 1 {
        return Ok(vec![p.queries_path.clone()]);
    }
    let text = std::fs::read_to_string(&p.queries_path)
        .with_context(|| format!("reading {}", p.queries_path.display()))?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let dir = tmp.join(&p.name);
    std::fs::create_dir_all(&dir)?;
    let mut paths = Vec::new();
    for k in 0..n.min(lines.len().max(1)) {
        let path = dir.join(format!("queries-slice-{k}-of-{n}.jsonl"));
        let mut body = String::new();
        for l in lines.iter().skip(k).step_by(n) {
            body.push_str(l);
            body.push('\n');
        }
        std::fs::write(&path, body)?;
        paths.push(path);
    }
    Ok(paths)
}

/// Runs every pass slice by slice: for each shape and slice, one driver process per engine, the
/// engines' order rotating from slice to slice. An engine whose pass fails on a slice is not run
/// on that shape's later slices (the error is recorded once).
fn run_interleaved_queries(
    passes: &[QueryPass],
    p: &Prepared,
    s: &Settings,
    slices: &[PathBuf],
    results: &mut Value,
) {
    let mut failed = vec![false; passes.len()];
    for shape in &s.shapes {
        let idx: Vec<usize> = (0..passes.len())
            .filter(|&i| &passes[i].shape == shape)
            .collect();
        if idx.is_empty() {
            continue;
        }
        for (k, slice) in slices.iter().enumerate() {
            for j in 0..idx.len() {
                let i = idx[(j + k) % idx.len()];
                if failed[i] {
                    continue;
                }
                let pass = &passes[i];
                if let Err(e) = run_queries(
                    &pass.engine,
                    &pass.launcher,
                    p,
                    s,
                    &pass.index,
                    slice,
                    shape,
                    results,
                ) {
                    failed[i] = true;
                    eprintln!("[{}/{}] shape {shape}: {e:#}", p.name, pass.engine);
                    push(
                        results,
                        "errors",
                        json!({"engine": pass.engine, "shape": shape, "error": format!("{e:#}")}),
                    );
                }
            }
        }
    }
}

/// Copies the queried index to `<index>-merged` and force-merges the copy to one segment with the
/// engine's driver; records the `merge` record; returns the copy's path.
fn merged_copy(
    name: &str,
    launcher: &Launcher,
    p: &Prepared,
    index: &Path,
    results: &mut Value,
) -> Result<PathBuf> {
    let mut dir = index.as_os_str().to_os_string();
    dir.push("-merged");
    let dir = PathBuf::from(dir);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    copy_dir(index, &dir)
        .with_context(|| format!("copying {} to {}", index.display(), dir.display()))?;
    let args = os(&[&"merge", &"--index", &dir, &"--max-segments", &"1"]);
    let mut r = run_driver(launcher, &args)?;
    let mut rec = r.take_record("merge")?;
    rec["engine"] = json!(name);
    rec["child_maxrss_bytes"] = json!(r.child_maxrss_bytes);
    eprintln!(
        "[{}/{name}] force-merge: {} -> {} segments in {:.1} s",
        p.name,
        rec["segments_before"],
        rec["segments_after"],
        rec["seconds"].as_f64().unwrap_or(f64::NAN)
    );
    push(results, "merge", rec);
    Ok(dir)
}

/// Recursively copies the directory `from` to the new directory `to` (regular files and folders).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Runs the queries of `queries` on `index` in one driver process and records every result with
/// `shape`.
#[allow(clippy::too_many_arguments)]
fn run_queries(
    name: &str,
    launcher: &Launcher,
    p: &Prepared,
    s: &Settings,
    index: &Path,
    queries: &Path,
    shape: &str,
    results: &mut Value,
) -> Result<()> {
    let t = Instant::now();
    let args = os(&[
        &"query",
        &"--index",
        &index,
        &"--queries",
        &queries,
        &"--modes",
        &s.modes,
        &"--warmup",
        &s.warmup.to_string(),
        &"--iters",
        &s.iters.to_string(),
        &"--global-warmup-rounds",
        &s.global_warmup_rounds.to_string(),
    ]);
    let r = run_driver(launcher, &args)?;
    let n = r.records.len();
    for mut rec in r.records.into_iter().filter(|v| v["op"] == "query") {
        rec["engine"] = json!(name);
        rec["shape"] = json!(shape);
        push(results, "query", rec);
    }
    eprintln!(
        "[{}/{name}] shape {shape}, {}: {n} query records in {:.1} s",
        p.name,
        queries.file_name().unwrap_or_default().to_string_lossy(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn meta(
    repo: &Path,
    p: &Prepared,
    s: &Settings,
    engines: &serde_json::Map<String, Value>,
) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .unwrap_or("")
        .to_string();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let git = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(repo)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let dirty = Command::new("git")
        // Result files the run itself rewrites (W1's before W2's) do not make the code dirty.
        .args([
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)bench/results",
        ])
        .current_dir(repo)
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty());
    json!({
        "date": today(),
        "git_dirty": dirty,
        "workload": p.name,
        "description": p.description,
        "docs": p.docs,
        "queries": p.queries.len(),
        "coldstart_query": p.coldstart_query,
        "settings": s,
        "engines": engines,
        "machine": {
            "cpu": cpu,
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "memory": mem,
            "kernel": kernel,
        },
        "git_commit": git,
        "loadavg_start": loadavg(),
        "allocator": "system allocator (glibc malloc) for the Rust drivers",
    })
}

/// The short hash of the repository's HEAD, for report headers (`unknown` without git).
pub fn git_head(repo: &Path) -> String {
    std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Today's UTC date as YYYY-MM-DD.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `/proc/loadavg` (1, 5 and 15 minute load averages), to show whether the machine was busy.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn today_is_an_iso_date() {
        let d = super::today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
        assert_eq!(&d[4..5], "-");
        assert_eq!(&d[7..8], "-");
    }
}
