//! Who runs what, in which order: the `run` command that drives all engines through one workload.
//!
//! Per workload: prepare the corpus once; per engine: index it R times with 1 thread and R times
//! with all cores (fresh process and fresh directory each time); run the query set single-threaded
//! on the last 1-thread index; cold-start that index in fresh processes with its files in the
//! page cache and evicted. Everything lands in one JSON file, then the Markdown report and charts.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};

use crate::measure;
use crate::parity::Parity;
use crate::workload::{self, Prepared};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// w1 (Reuters, bundled), w2 (Wikipedia paragraphs, needs ../shared) or all.
    #[arg(long, default_value = "w1")]
    pub workload: String,
    /// Comma-separated engines: quarry, tantivy, lucene.
    #[arg(long, default_value = "quarry,tantivy,lucene")]
    pub engines: String,
    /// Smoke run (~2 minutes on W1): 1 indexing run per thread count, few iterations, W2 subsampled.
    #[arg(long)]
    pub quick: bool,
    /// Where results go (default: <repo>/bench/results; with --quick <repo>/target/bench-quick, so
    /// that a smoke run leaves the work tree clean).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fail (exit non-zero, after writing the reports) when quarry's hit counts or top-10 ids differ
    /// from Lucene's on any query; skipped, with a note, when Lucene cannot run here.
    #[arg(long)]
    pub check_parity: bool,
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
}

fn find_repo(explicit: Option<PathBuf>) -> Result<PathBuf> {
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

/// How to start one engine's driver.
#[derive(Debug, Clone)]
enum Launcher {
    /// This very binary: `quarry-bench driver <engine> ...`.
    SelfExe { engine: &'static str },
    /// `java [opts] -jar JAR ...`
    Java {
        java: PathBuf,
        opts: Vec<String>,
        jar: PathBuf,
    },
}

impl Launcher {
    fn command(&self, args: &[OsString]) -> Result<Command> {
        Ok(match self {
            Launcher::SelfExe { engine } => {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("driver").arg(engine).args(args);
                c
            }
            Launcher::Java { java, opts, jar } => {
                let mut c = Command::new(java);
                c.args(opts).arg("-jar").arg(jar).args(args);
                c
            }
        })
    }
}

/// Outcome of one driver process.
struct DriverRun {
    records: Vec<Value>,
    /// Wall time from just before spawn to the first complete stdout line, µs.
    spawn_to_first_line_us: Option<f64>,
    /// ru_maxrss of the child (bytes) and its major faults, from wait4.
    child_maxrss_bytes: u64,
    child_major_faults: u64,
    wall_seconds: f64,
}

fn run_driver(launcher: &Launcher, args: &[OsString]) -> Result<DriverRun> {
    let mut cmd = launcher.command(args)?;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {launcher:?}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut first = None;
    let mut records = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if first.is_none() {
            first = Some(start.elapsed().as_nanos() as f64 / 1000.0);
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(v) if v.is_object() => records.push(v),
            _ => eprintln!("[driver stdout, not JSON] {trimmed}"),
        }
    }
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `pid` is our own un-reaped child; status and usage point to live, writable memory.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
    if rc != pid {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    // SAFETY: wait4 succeeded and filled `usage` (which was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    let wall_seconds = start.elapsed().as_secs_f64();
    std::mem::forget(child); // already reaped by wait4
    let exited_ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !exited_ok {
        bail!("driver {launcher:?} {args:?} failed (wait status {status})");
    }
    Ok(DriverRun {
        records,
        spawn_to_first_line_us: first,
        child_maxrss_bytes: usage.ru_maxrss as u64 * 1024,
        child_major_faults: usage.ru_majflt as u64,
        wall_seconds,
    })
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// The Java binary: `$JAVA_HOME/bin/java`, else Temurin 25 if installed, else `java` on PATH.
fn java_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("JAVA_HOME") {
        return Some(PathBuf::from(h));
    }
    let temurin = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    temurin.exists().then_some(temurin)
}

/// Lucene version from the driver's pom (`<lucene.version>`).
fn lucene_version(repo: &Path) -> Option<String> {
    let pom = std::fs::read_to_string(repo.join("bench/lucene/pom.xml")).ok()?;
    let start = pom.find("<lucene.version>")? + "<lucene.version>".len();
    let end = start + pom[start..].find('<')?;
    Some(format!("Lucene {}", pom[start..end].trim()))
}

fn find_jar(repo: &Path) -> Option<PathBuf> {
    let target = repo.join("bench/lucene/target");
    let mut jars: Vec<PathBuf> = std::fs::read_dir(&target)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".jar") && !name.starts_with("original-") && !name.contains("sources")
        })
        .collect();
    // Prefer the shaded (largest) jar.
    jars.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)));
    jars.into_iter().next()
}

fn lucene_launcher(repo: &Path, explicit: Option<PathBuf>) -> Result<Launcher> {
    let jar = match explicit.or_else(|| find_jar(repo)) {
        Some(j) => j,
        None => {
            let pom = repo.join("bench/lucene/pom.xml");
            if !pom.exists() {
                bail!("no Lucene driver: {} is missing", pom.display());
            }
            eprintln!(
                "[lucene] no jar under bench/lucene/target; building it: mvn -q -f {} package",
                pom.display()
            );
            let mut mvn = Command::new("mvn");
            mvn.args(["-q", "-f"]).arg(&pom).arg("package");
            if let Some(h) = java_home() {
                mvn.env("JAVA_HOME", h);
            }
            let st = mvn
                .status()
                .context("running mvn (install Maven and a JDK >= 21 to benchmark Lucene)")?;
            if !st.success() {
                bail!("mvn package failed ({st}); the Lucene driver is not available");
            }
            find_jar(repo)
                .context("mvn package succeeded but no jar appeared under bench/lucene/target")?
        }
    };
    let java = java_home()
        .map(|h| h.join("bin/java"))
        .unwrap_or_else(|| PathBuf::from("java"));
    // Lucene's recommended flags: the Panama vector API (vectorized postings decoding) and native
    // access (madvise via PosixNativeAccess). Override with QUARRY_BENCH_JAVA_OPTS.
    let opts = std::env::var("QUARRY_BENCH_JAVA_OPTS")
        .unwrap_or_else(|_| {
            "--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED".into()
        })
        .split_whitespace()
        .map(String::from)
        .collect();
    Ok(Launcher::Java { java, opts, jar })
}

/// Evicts an index from the page cache: fsync, then posix_fadvise(DONTNEED), for every file.
/// Returns (files, bytes, resident bytes before, resident bytes after).
fn evict(dir: &Path) -> Result<(usize, u64, u64, u64)> {
    let files = measure::index_files(dir);
    let (mut bytes, mut before, mut after) = (0, 0, 0);
    for f in &files {
        before += resident_bytes(f)?;
        let file = std::fs::File::open(f)?;
        file.sync_all()?;
        let len = file.metadata()?.len();
        bytes += len;
        use std::os::fd::AsRawFd;
        // SAFETY: plain syscall on an fd we own for the duration of the call.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            bail!(
                "posix_fadvise({}) failed: {}",
                f.display(),
                std::io::Error::from_raw_os_error(rc)
            );
        }
        after += resident_bytes(f)?;
    }
    Ok((files.len(), bytes, before, after))
}

/// Reads every index file once so that it is in the page cache; returns resident bytes after.
fn warm(dir: &Path) -> Result<u64> {
    let mut resident = 0;
    for f in measure::index_files(dir) {
        std::io::copy(&mut std::fs::File::open(&f)?, &mut std::io::sink())?;
        resident += resident_bytes(&f)?;
    }
    Ok(resident)
}

/// Bytes of `path` resident in the page cache (mmap + mincore), like `fincore`.
fn resident_bytes(path: &Path) -> Result<u64> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: read-only shared mapping of a file we hold open; unmapped below; never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        bail!(
            "mmap {} failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: addr/len is the mapping created above; vec has one byte per page as mincore needs.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping created above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        bail!(
            "mincore {} failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64)
}

fn settings_for(workload: &str, args: &RunArgs, cores: usize) -> Settings {
    let (runs, warmup, iters, cold, global) = match (workload, args.quick) {
        ("w1", false) => (3, 100, 500, 5, 20),
        ("w1", true) => (1, 5, 20, 1, 5),
        (_, false) => (3, 10, 30, 3, 3),
        (_, true) => (1, 5, 10, 1, 5),
    };
    let mut threads = vec![1, cores];
    threads.dedup();
    Settings {
        quick: args.quick,
        index_runs: args.index_runs.unwrap_or(runs),
        threads,
        warmup: args.warmup.unwrap_or(warmup),
        iters: args.iters.unwrap_or(iters),
        coldstart_runs: args.coldstart_runs.unwrap_or(cold),
        global_warmup_rounds: global,
        memory_mb_per_thread: args.memory_mb,
        modes: "top10,top10_count,count".into(),
    }
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
    let mut parity_failures = Vec::new();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    // Which engines can run here.
    let mut launchers: Vec<(String, Launcher)> = Vec::new();
    let mut engine_status = serde_json::Map::new();
    for e in args
        .engines
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        let launcher = match e {
            "tantivy" => Ok(Launcher::SelfExe { engine: "tantivy" }),
            "quarry" if crate::QUARRY_DRIVER => Ok(Launcher::SelfExe { engine: "quarry" }),
            "quarry" => Err(anyhow::anyhow!(
                "skipped: quarry-bench was built without the quarry driver (feature `quarry-driver`)"
            )),
            "lucene" => lucene_launcher(&repo, args.lucene_jar.clone()),
            other => bail!("unknown engine {other:?}: expected quarry, tantivy or lucene"),
        };
        match launcher {
            Ok(l) => {
                let version = match &l {
                    Launcher::Java { .. } => lucene_version(&repo),
                    Launcher::SelfExe { .. } => None,
                };
                engine_status.insert(
                    e.into(),
                    json!({"status": "ran", "launcher": format!("{l:?}"), "version": version}),
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

    for w in workloads(&args.workload)? {
        let started = Instant::now();
        let prepared = workload::prepare(w, &repo, &tmp, args.quick)?;
        let settings = settings_for(w, &args, cores);
        eprintln!(
            "[{w}] {} docs, {} queries, settings {}",
            prepared.docs,
            prepared.queries.len(),
            serde_json::to_string(&settings)?
        );
        let mut results = json!({
            "meta": meta(&repo, &prepared, &settings, &engine_status),
            "index": [], "query": [], "coldstart": [], "errors": [],
        });
        for (name, launcher) in &launchers {
            if let Err(e) = run_engine(
                name,
                launcher,
                &prepared,
                &settings,
                &tmp,
                args.keep_indexes,
                &mut results,
            ) {
                eprintln!("[{w}/{name}] failed: {e:#}");
                push(
                    &mut results,
                    "errors",
                    json!({"engine": name, "error": format!("{e:#}")}),
                );
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
        let json_path = out_dir.join(format!("{stem}.json"));
        std::fs::write(&json_path, serde_json::to_string_pretty(&results)?)?;
        let md = crate::report::write_all(&results, &out_dir, &stem)?;
        eprintln!(
            "[{w}] done in {:.0} s: {} and {}",
            started.elapsed().as_secs_f64(),
            json_path.display(),
            md.display()
        );
        if args.check_parity {
            match crate::parity::compare(&results, "quarry", "lucene") {
                Parity::Same(n) => {
                    eprintln!(
                        "[{w}] parity: quarry and Lucene agree on all {n} (query, mode) pairs"
                    )
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
                    parity_failures.push(format!("{w}: {} difference(s)", diffs.len()));
                }
            }
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

fn push(results: &mut Value, key: &str, v: Value) {
    results[key].as_array_mut().expect("array").push(v);
}

fn run_engine(
    name: &str,
    launcher: &Launcher,
    p: &Prepared,
    s: &Settings,
    tmp: &Path,
    keep: bool,
    results: &mut Value,
) -> Result<()> {
    let wdir = tmp
        .join(&p.name)
        .join(if s.quick { "indexes-quick" } else { "indexes" });
    let mut query_index = None;
    // Indexing: fresh process, fresh directory, every run.
    for &threads in &s.threads {
        for run in 0..s.index_runs {
            let dir = wdir.join(format!("index-{name}-t{threads}-r{run}"));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            let mut args = os(&[
                &"index",
                &"--input",
                &p.docs_path,
                &"--index",
                &dir,
                &"--threads",
                &threads.to_string(),
            ]);
            match launcher {
                Launcher::SelfExe { .. } => {
                    args.extend(os(&[&"--memory-mb", &s.memory_mb_per_thread.to_string()]))
                }
                Launcher::Java { .. } => args.extend(os(&[
                    &"--ram-buffer-mb",
                    &(s.memory_mb_per_thread * threads).to_string(),
                ])),
            }
            let r = run_driver(launcher, &args)?;
            let mut rec = r
                .records
                .into_iter()
                .find(|v| v["op"] == "index")
                .context("driver printed no index record")?;
            rec["run"] = json!(run);
            rec["child_maxrss_bytes"] = json!(r.child_maxrss_bytes);
            rec["process_wall_seconds"] = json!(r.wall_seconds);
            eprintln!(
                "[{}/{name}] index threads={threads} run={run}: {:.0} docs/s, {} bytes, {} segments",
                p.name, rec["docs_per_sec"].as_f64().unwrap_or(0.0), rec["index_bytes"], rec["segments"]
            );
            push(results, "index", rec);
            if threads == 1 && run + 1 == s.index_runs {
                query_index = Some(dir);
            } else if !keep {
                std::fs::remove_dir_all(&dir).ok();
            }
        }
    }
    let index = query_index.context("no 1-thread index was built")?;

    // Queries: one process, single-threaded, warm-up then timed iterations per (query, mode).
    let t = Instant::now();
    let args = os(&[
        &"query",
        &"--index",
        &index,
        &"--queries",
        &p.queries_path,
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
        push(results, "query", rec);
    }
    eprintln!(
        "[{}/{name}] {} query records in {:.1} s",
        p.name,
        n,
        t.elapsed().as_secs_f64()
    );

    // Cold start: fresh process per run, index in page cache ("warm") and evicted ("evicted").
    for cache in ["warm", "evicted"] {
        for run in 0..s.coldstart_runs {
            let (resident_before, evicted) = if cache == "warm" {
                (warm(&index)?, Value::Null)
            } else {
                let (files, bytes, before, after) = evict(&index)?;
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
            let r = run_driver(launcher, &args)?;
            let mut rec = r
                .records
                .into_iter()
                .find(|v| v["op"] == "coldstart")
                .context("no coldstart record")?;
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
                "[{}/{name}] coldstart {cache}: spawn->result {:.0} us, open->result {:.0} us, majflt {}",
                p.name,
                r.spawn_to_first_line_us.unwrap_or(f64::NAN),
                rec["open_to_first_result_us"].as_f64().unwrap_or(f64::NAN),
                r.child_major_faults
            );
            push(results, "coldstart", rec);
        }
    }
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
fn loadavg() -> String {
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
