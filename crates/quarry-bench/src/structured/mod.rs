//! `quarry-bench structured`: ranges, sorts and aggregations on real structured data (the NYC
//! flights of 2013 joined with airline and airport names, and Reuters' dates, topics and
//! places), the same queries on quarry, Tantivy and Lucene in one run, every answer checked
//! against an exact oracle computed from the raw rows (issue 30, item 8).
//!
//! Flow: parse the data ([`data`]), write it as JSON lines with a schema, build the query set
//! ([`queries`]) and the oracle's answers ([`oracle`]); run each engine's driver process
//! ([`driver`]; Lucene: the harness's `structured-bench`), which indexes both datasets and times
//! every query; compare every answer ([`spec::compare`]); write the JSON record, the Markdown
//! report and the charts ([`report`]). Any wrong answer fails the run after the report is
//! written.

pub mod data;
pub mod driver;
pub mod oracle;
#[cfg(feature = "quarry-driver")]
pub mod quarry_engine;
pub mod queries;
pub mod report;
#[cfg(feature = "seekstorm-driver")]
pub mod seekstorm_engine;
pub mod spec;
pub mod tantivy_engine;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::launch::{lucene_launcher, Launcher};
use data::Dataset;
use spec::{Answer, QuerySpec, Truth};

/// Arguments of `quarry-bench structured`.
#[derive(Debug, clap::Args)]
pub struct StructuredArgs {
    /// Every 16th flight and every 4th story, 3 warm-up and 15 timed runs per query (a smoke
    /// run: under 2 minutes).
    #[arg(long)]
    pub quick: bool,
    /// Engines to run, comma-separated: quarry, tantivy, lucene, seekstorm (SeekStorm only in a
    /// binary built with `--features seekstorm-driver`, else reported as skipped). Default: all
    /// four in such a binary, else the first three.
    #[arg(long)]
    pub engines: Option<String>,
    /// Where the report, charts and raw record go (default target/bench-structured/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fail when Lucene cannot run here (no Java 21+ or Maven) instead of skipping it.
    #[arg(long)]
    pub require_lucene: bool,
    /// Warm-up runs per query (default 20, quick 3).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Timed runs per query (default 200, quick 15).
    #[arg(long)]
    pub iters: Option<usize>,
    /// The Lucene harness jar (default: built from bench/lucene when missing or stale).
    #[arg(long)]
    pub lucene_jar: Option<PathBuf>,
    /// Run only these classes or queries (comma-separated names, e.g. `stats,r_per_day`): for
    /// profiling one class; a partial run's report says which were left out.
    #[arg(long)]
    pub only: Option<String>,
    /// The repository root (default: found from the binary or the working directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// The shared data folder: `$QUARRY_SHARED_DIR`, else the first `shared/` next to the
/// repository or one level up (worktrees live one level deeper).
fn shared_dir(repo: &Path) -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("QUARRY_SHARED_DIR") {
        return Ok(PathBuf::from(d));
    }
    for up in [repo.join("../shared"), repo.join("../../shared")] {
        if up.join("data/nycflights13").is_dir() {
            return Ok(up);
        }
    }
    bail!(
        "structured needs the shared data (data/nycflights13, data/reuters21578): set \
         QUARRY_SHARED_DIR to the folder holding data/, or put it at {}",
        repo.join("../shared").display()
    )
}

/// Runs a driver process and returns the JSON objects it printed, one per line.
fn records(mut cmd: Command) -> Result<Vec<Value>> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().with_context(|| format!("starting {cmd:?}"))?;
    let stdout = child.stdout.take().context("piped stdout")?;
    let mut out = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(v) if v.is_object() => out.push(v),
            _ if line.trim().is_empty() => {}
            _ => eprintln!("[driver stdout, not JSON] {line}"),
        }
    }
    let st = child.wait()?;
    if !st.success() {
        bail!("driver {cmd:?} failed ({st})");
    }
    Ok(out)
}

/// The command line of one engine's driver.
fn driver_command(
    engine: &str,
    lucene: Option<&Launcher>,
    data: &Path,
    index: &Path,
    queries: &Path,
    warmup: usize,
    iters: usize,
) -> Result<Command> {
    let tail = [
        "--data".as_ref(),
        data.as_os_str(),
        "--index".as_ref(),
        index.as_os_str(),
        "--queries".as_ref(),
        queries.as_os_str(),
        "--warmup".as_ref(),
        warmup.to_string().as_ref(),
        "--iters".as_ref(),
        iters.to_string().as_ref(),
    ]
    .map(|s: &std::ffi::OsStr| s.to_os_string());
    Ok(match engine {
        "lucene" => match lucene {
            Some(Launcher::Java { java, opts, jar }) => {
                let mut c = Command::new(java);
                c.args(opts)
                    .arg("-jar")
                    .arg(jar)
                    .arg("structured-bench")
                    .args(tail);
                c
            }
            _ => bail!("no Lucene launcher"),
        },
        e => {
            let mut c = Command::new(std::env::current_exe()?);
            c.arg("structured-driver").arg(e).args(tail);
            c
        }
    })
}

/// One engine's outcome: per query name, its answer and latency samples, or why not.
pub struct EngineRun {
    pub version: String,
    pub index: Vec<Value>,
    pub queries: HashMap<String, Value>,
}

fn engine_run(recs: Vec<Value>) -> EngineRun {
    let mut run = EngineRun {
        version: String::new(),
        index: vec![],
        queries: HashMap::new(),
    };
    for r in recs {
        match r["op"].as_str() {
            Some("hello") => run.version = r["version"].as_str().unwrap_or("").to_string(),
            Some("index") => run.index.push(r),
            Some("query") => {
                let name = r["name"].as_str().unwrap_or("").to_string();
                run.queries.insert(name, r);
            }
            _ => {}
        }
    }
    run
}

/// The outcome of the answer checks.
#[derive(Default)]
pub struct Checked {
    /// Per (engine, query): `None` when equal to the oracle, else the difference.
    pub verdicts: HashMap<(String, String), Option<String>>,
    /// Per (engine, query): differences that are not failures (said in the report).
    pub notes: HashMap<(String, String), String>,
    /// One line per wrong answer.
    pub failures: Vec<String>,
}

/// Checks every engine's answers against the oracle.
///
/// Tantivy's BM25 rankings are checked like the others' (exact total, distinct matching ids),
/// but a ranking different from Lucene's is a note, not a failure: Tantivy's default tokenizer
/// splits on every non-alphanumeric character (`oil's` is `oil` + `s`, Lucene's
/// StandardTokenizer keeps `oil's`) and its document lengths, hence scores, differ. The same
/// holds for SeekStorm (its own tokenizer and BM25F).
pub fn check_answers(
    specs: &[QuerySpec],
    datasets: &HashMap<String, &Dataset>,
    oracle: &HashMap<String, Answer>,
    runs: &HashMap<String, HashMap<String, Value>>,
) -> Result<Checked> {
    let mut checked = Checked::default();
    for spec in specs {
        let ds = datasets[&spec.dataset];
        let matcher = oracle::Matcher::new(ds, spec)?;
        let counts = match &spec.op {
            spec::Op::Terms { field, .. } => {
                oracle::key_counts(ds, &matcher.all(), field).unwrap_or_default()
            }
            _ => HashMap::new(),
        };
        let want = &oracle[&spec.name];
        let reference: Option<Answer> = runs
            .get("lucene")
            .and_then(|q| q.get(&spec.name))
            .and_then(|r| serde_json::from_value(r["answer"].clone()).ok());
        for (engine, answers) in runs {
            let Some(rec) = answers.get(&spec.name) else {
                continue;
            };
            if rec.get("unsupported").is_some() {
                continue;
            }
            let got: Answer = serde_json::from_value(rec["answer"].clone())
                .with_context(|| format!("{engine} answer of {}", spec.name))?;
            let matches =
                |id: i64| id >= 0 && (id as usize) < ds.rows.len() && matcher.matches(id as usize);
            let key_count = |k: &str| counts.get(k).copied().unwrap_or(0);
            let truth = Truth {
                matches: &matches,
                key_count: &key_count,
                // Lucene is the BM25 reference of quarry (see above for Tantivy).
                reference: if engine == "quarry" {
                    reference.as_ref()
                } else {
                    None
                },
            };
            let mut verdict = spec::compare(spec, &got, want, &truth).err();
            if matches!(engine.as_str(), "tantivy" | "seekstorm")
                && verdict.is_none()
                && reference.is_some()
            {
                let against_lucene = Truth {
                    reference: reference.as_ref(),
                    ..truth
                };
                if let Err(d) = spec::compare(spec, &got, want, &against_lucene) {
                    checked.notes.insert(
                        (engine.clone(), spec.name.clone()),
                        format!("ranking differs from Lucene's: {d} (tokenizer and BM25 differences, not a failure)"),
                    );
                }
            }
            if let (Some(_), "tantivy", spec::Op::Cardinality { .. }) =
                (&verdict, engine.as_str(), &spec.op)
            {
                verdict = tantivy_cardinality(&got, want);
            }
            if let (Some(d), "seekstorm", false) = (&verdict, engine.as_str(), spec.text.is_empty())
            {
                // SeekStorm's tokenizer keeps `-`, `+`, `#` inside words: its text matches are
                // checked against the oracle computed with its tokenization instead.
                let own = oracle::Matcher::with_words(ds, spec, oracle::seekstorm_words)?;
                let own_want = oracle::answer_with(ds, spec, oracle::seekstorm_words)?;
                let own_matches =
                    |id: i64| id >= 0 && (id as usize) < ds.rows.len() && own.matches(id as usize);
                let own_truth = Truth {
                    matches: &own_matches,
                    key_count: &key_count,
                    reference: None,
                };
                if spec::compare(spec, &got, &own_want, &own_truth).is_ok() {
                    checked.notes.insert(
                        (engine.clone(), spec.name.clone()),
                        format!(
                            "{d} with words split as Lucene splits them; equal to the oracle \
                             with SeekStorm's tokenization (`-`, `+`, `#` join words: \
                             `oil-bearing` is one word), not a failure"
                        ),
                    );
                    verdict = None;
                }
            }
            if let Some(v) = &verdict {
                checked
                    .failures
                    .push(format!("{engine} {}: {v}", spec.name));
            }
            checked
                .verdicts
                .insert((engine.clone(), spec.name.clone()), verdict);
        }
    }
    Ok(checked)
}

/// Tantivy's cardinality is a HyperLogLog sketch (DataSketches, lg_k = 11: relative standard
/// error 1.04 / sqrt(2048) = 2.3%) with no exact mode: within three standard errors passes.
fn tantivy_cardinality(got: &Answer, want: &Answer) -> Option<String> {
    match (got, want) {
        (Answer::Cardinality { value: g }, Answer::Cardinality { value: w }) => {
            let err = (*g as f64 - *w as f64).abs() / (*w as f64).max(1.0);
            (err > TANTIVY_HLL_TOLERANCE).then(|| {
                format!(
                    "cardinality {g}, oracle {w}: {:.2}% off, more than the HyperLogLog \
                     tolerance {:.1}%",
                    err * 100.0,
                    TANTIVY_HLL_TOLERANCE * 100.0
                )
            })
        }
        _ => Some("not a cardinality".into()),
    }
}

/// Three relative standard errors of an HLL with 2^11 registers.
pub const TANTIVY_HLL_TOLERANCE: f64 = 3.0 * 1.04 / 45.254_833_995_939_045;

pub fn run(args: StructuredArgs) -> Result<()> {
    let repo = crate::orchestrator::find_repo(args.repo.clone())?;
    let shared = shared_dir(&repo)?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join("target/bench-structured"));
    let work = out_dir.join("tmp");
    std::fs::create_dir_all(&work)?;
    let (flight_every, story_every) = if args.quick { (16, 4) } else { (1, 1) };
    let warmup = args.warmup.unwrap_or(if args.quick { 3 } else { 20 });
    let iters = args.iters.unwrap_or(if args.quick { 15 } else { 200 });
    let depth = if args.quick { 1_000 } else { 10_000 };

    eprintln!("[structured] preparing the data");
    let flights = data::flights(
        &shared.join("data/nycflights13"),
        &repo.join("target/bench-structured-cache"),
        flight_every,
    )?;
    let reuters = data::reuters(&shared.join("data/reuters21578"), story_every)?;
    let data_dir = work.join("data");
    flights.write(&data_dir)?;
    reuters.write(&data_dir)?;
    let mut specs = queries::query_set(&flights, &reuters, depth)?;
    if let Some(only) = &args.only {
        let keep: Vec<&str> = only.split(',').map(str::trim).collect();
        specs.retain(|s| keep.contains(&s.name.as_str()) || keep.contains(&s.class.as_str()));
        if specs.is_empty() {
            bail!("--only {only}: no query or class has that name");
        }
    }
    let qpath = work.join("queries.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&qpath)?);
        for s in &specs {
            serde_json::to_writer(&mut f, s)?;
            f.write_all(b"\n")?;
        }
    }
    let datasets: HashMap<String, &Dataset> = [
        ("flights".to_string(), &flights),
        ("reuters".to_string(), &reuters),
    ]
    .into();
    eprintln!(
        "[structured] oracle over {} flights, {} stories",
        flights.rows.len(),
        reuters.rows.len()
    );
    let mut oracle_answers = HashMap::new();
    for s in &specs {
        oracle_answers.insert(s.name.clone(), oracle::answer(datasets[&s.dataset], s)?);
    }

    let engines = args.engines.clone().unwrap_or_else(|| {
        if crate::SEEKSTORM_DRIVER {
            "quarry,tantivy,lucene,seekstorm".into()
        } else {
            "quarry,tantivy,lucene".into()
        }
    });
    let wanted: Vec<String> = engines
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut runs: HashMap<String, EngineRun> = HashMap::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut driver_failures: Vec<String> = Vec::new();
    for engine in &wanted {
        let lucene = if engine == "lucene" {
            match lucene_launcher(&repo, args.lucene_jar.clone()) {
                Ok(l) => Some(l),
                Err(e) if !args.require_lucene => {
                    skipped.push((engine.clone(), format!("{e:#}")));
                    continue;
                }
                Err(e) => return Err(e.context("--require-lucene")),
            }
        } else {
            None
        };
        match engine.as_str() {
            "quarry" if !crate::QUARRY_DRIVER => {
                skipped.push((engine.clone(), "built without the quarry driver".into()));
                continue;
            }
            "seekstorm" if !crate::SEEKSTORM_DRIVER => {
                skipped.push((engine.clone(), SEEKSTORM_REASON.into()));
                continue;
            }
            "quarry" | "tantivy" | "lucene" | "seekstorm" => {}
            other => bail!("unknown engine {other:?} (quarry, tantivy, lucene, seekstorm)"),
        }
        eprintln!(
            "[structured] {engine}: indexing and {} queries x ({warmup} + {iters})",
            specs.len()
        );
        let cmd = driver_command(
            engine,
            lucene.as_ref(),
            &data_dir,
            &work.join("index").join(engine),
            &qpath,
            warmup,
            iters,
        )?;
        match records(cmd) {
            Ok(recs) => {
                runs.insert(engine.clone(), engine_run(recs));
            }
            Err(e) => {
                // Keep the other engines' results; the run fails at the end.
                eprintln!("[structured] {engine} failed: {e:#}");
                driver_failures.push(format!("{engine}: driver failed: {e:#}"));
                skipped.push((engine.clone(), format!("driver failed: {e:#}")));
            }
        }
        // The indexes are not reused: free the disk now.
        let _ = std::fs::remove_dir_all(work.join("index").join(engine));
    }

    let answers: HashMap<String, HashMap<String, Value>> = runs
        .iter()
        .map(|(e, r)| (e.clone(), r.queries.clone()))
        .collect();
    let checked = check_answers(&specs, &datasets, &oracle_answers, &answers)?;
    let mut failures = checked.failures.clone();
    failures.extend(driver_failures);

    let record = report::record(
        &repo,
        &args,
        &specs,
        &oracle_answers,
        &runs,
        &skipped,
        &checked,
        (flights.rows.len(), reuters.rows.len()),
        (warmup, iters, depth),
    );
    let stem = format!(
        "{}-{}-structured{}",
        crate::orchestrator::today(),
        crate::orchestrator::git_head(&repo),
        if args.quick { "-quick" } else { "" }
    );
    std::fs::create_dir_all(&out_dir)?;
    crate::report::write_results(&out_dir.join(format!("{stem}.json.zst")), &record)?;
    let md = report::write(&record, &out_dir, &stem)?;
    eprintln!("[structured] report: {}", md.display());
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("FAILED: {f}");
        }
        bail!(
            "{} wrong answer(s) or failed driver(s) (see the report)",
            failures.len()
        );
    }
    Ok(())
}

/// Why SeekStorm is not in a run of a binary built without it.
pub const SEEKSTORM_REASON: &str = "this quarry-bench was built without the SeekStorm driver: \
    rebuild with `--features seekstorm-driver` (it adds minutes of build time)";

/// Runs `quarry-bench structured-driver <engine>`.
pub fn driver_main(args: driver::DriverArgs) -> Result<()> {
    match args.engine.as_str() {
        #[cfg(feature = "quarry-driver")]
        "quarry" => driver::run::<quarry_engine::QuarryEngine>(&args),
        "tantivy" => driver::run::<tantivy_engine::TantivyEngine>(&args),
        #[cfg(feature = "seekstorm-driver")]
        "seekstorm" => driver::run::<seekstorm_engine::SeekStormEngine>(&args),
        e => bail!("no structured driver for {e:?} in this binary (quarry, tantivy, seekstorm)"),
    }
}
