//! How do quarry's directory modes and the peers' directories compare on W2 with the index
//! cached, evicted before every query, and larger than the memory the process may use: the W2
//! part of `quarry-bench io` (rendered by `io_w2_report`).
//!
//! Every measurement is a driver process running the `probe` command (round-robin rounds over a
//! query file, see `drivers/probe.rs`): quarry once per directory mode (`QUARRY_DIRECTORY`),
//! Tantivy with its default mmap directory, Lucene with `--directory mmap` and `niofs`. Per
//! configuration, in this order:
//! - *baseline*: open only (no query), index cached: the process's own `VmHWM`;
//! - *warm*: index files read just before; `WARM_SKIP` untimed rounds, then the timed ones;
//! - *lookup* and *execution* (the Marginalia benchmarks), warm, the same way;
//! - *evicted*: per sampled query a fresh process, the index evicted just before (fsync +
//!   `POSIX_FADV_DONTNEED`): open, one search; open time, first result, VmHWM, faults, disk bytes;
//! - *memory-limited*: index evicted, then the driver runs in a fresh cgroup v1 memory group whose
//!   limit is its baseline plus `cache_fraction` of its index; one untimed round, then the timed
//!   ones; the same for lookup and execution. The group's files are read after the run.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cache;
use crate::cgroup::{MemCgroup, MemReport, V1_ROOT};
use crate::launch::{self, os, run_driver, run_driver_with, Launcher};
use crate::measure;
use crate::protocol::QuerySpec;
use crate::workload::{self, Prepared};

/// Untimed rounds before the timed ones of a warm run (the JVM compiles on the first ones).
pub const WARM_SKIP: u64 = 2;

/// What the W2 study runs; `io_study` fills it from the command line.
pub struct W2Settings {
    pub quick: bool,
    /// quarry directory kinds (mmap, pread, direct, adaptive).
    pub modes: Vec<String>,
    /// Peers: tantivy, lucene.
    pub peers: Vec<String>,
    /// Sampled queries per class for the warm and memory-limited runs.
    pub per_class: usize,
    /// Sampled queries per class for the evicted runs (one process each).
    pub evicted_per_class: usize,
    /// Timed warm rounds (after `WARM_SKIP` untimed ones).
    pub warm_rounds: u64,
    /// Timed memory-limited rounds (after one untimed one).
    pub limited_rounds: u64,
    /// Queries of each Marginalia benchmark.
    pub bench_queries: usize,
    /// Page cache the memory limit leaves, as a fraction of the index size.
    pub cache_fraction: f64,
    /// The execution benchmark's time budget.
    pub deadline_ms: u64,
    pub lucene_jar: Option<PathBuf>,
}

/// One engine with one directory.
pub struct Config {
    pub label: String,
    launcher: Launcher,
    env: Vec<(String, String)>,
    extra: Vec<OsString>,
    pub index: PathBuf,
    pub index_bytes: u64,
}

/// One query of a probe run.
#[derive(Debug, Clone, Default)]
pub struct ProbeQuery {
    pub class: String,
    pub samples: Vec<f64>,
    pub hits: u64,
    pub timed_out: u64,
    pub error: Option<String>,
}

/// One probe process: its queries, its `probe_end` record, spawn -> last line.
#[derive(Debug, Clone)]
pub struct Probe {
    pub queries: Vec<ProbeQuery>,
    pub end: Value,
    pub spawn_to_output_us: f64,
}

/// A probe run inside a memory cgroup, with what the group's files said.
#[derive(Debug, Clone)]
pub struct Limited {
    pub probe: Probe,
    pub mem: MemReport,
}

/// Everything measured for one configuration.
pub struct Outcome {
    pub label: String,
    pub index_bytes: u64,
    pub baseline_rss: u64,
    pub limit: u64,
    pub warm: Probe,
    pub lookup_warm: Probe,
    pub exec_warm: Probe,
    pub evicted: Vec<Probe>,
    pub limited: Option<Limited>,
    pub lookup_limited: Option<Limited>,
    pub exec_limited: Option<Limited>,
}

/// What the study produced, for the report.
pub struct W2Study {
    pub prepared_description: String,
    pub sample_per_class: Vec<(String, usize)>,
    pub evicted_per_class: usize,
    pub lookup_queries: usize,
    pub exec_queries: usize,
    pub outcomes: Vec<Outcome>,
    pub skipped: Vec<(String, String)>,
    /// Why the memory-limited runs did not happen, if they did not.
    pub cgroup_note: Option<String>,
    pub seconds: f64,
}

/// `n` queries of `class`, spread evenly over the class in file order (all when fewer).
pub fn spread(queries: &[QuerySpec], class: &str, n: usize) -> Vec<QuerySpec> {
    let c: Vec<&QuerySpec> = queries.iter().filter(|q| q.class == class).collect();
    if c.len() <= n {
        return c.into_iter().cloned().collect();
    }
    (0..n).map(|i| c[i * c.len() / n].clone()).collect()
}

fn write_queries(path: &Path, qs: &[QuerySpec]) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for q in qs {
        writeln!(f, "{}", serde_json::to_string(q)?)?;
    }
    f.flush()?;
    Ok(())
}

fn probe(
    cfg: &Config,
    queries: &Path,
    mode: &str,
    rounds: u64,
    deadline_ms: Option<u64>,
    group: Option<&MemCgroup>,
) -> Result<Probe> {
    let mut args = os(&[
        &"probe",
        &"--index",
        &cfg.index,
        &"--queries",
        &queries,
        &"--mode",
        &mode,
        &"--rounds",
        &rounds.to_string(),
    ]);
    if let Some(d) = deadline_ms {
        args.extend(os(&[&"--deadline-ms", &d.to_string()]));
    }
    args.extend(cfg.extra.iter().cloned());
    let env: Vec<(&str, &str)> = cfg
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = run_driver_with(&cfg.launcher, &args, &env, group.map(|g| g.procs_fd()))
        .with_context(|| format!("{}: probe {mode}", cfg.label))?;
    let mut out = Vec::new();
    let mut end = Value::Null;
    for v in r.records {
        match v["op"].as_str() {
            Some("probe") => out.push(ProbeQuery {
                class: v["class"].as_str().unwrap_or("").to_string(),
                samples: v["samples_us"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_f64).collect())
                    .unwrap_or_default(),
                hits: v["hits"].as_u64().unwrap_or(0),
                timed_out: v["timed_out"].as_u64().unwrap_or(0),
                error: v["error"].as_str().map(String::from),
            }),
            Some("probe_end") => end = v,
            _ => {}
        }
    }
    anyhow::ensure!(!end.is_null(), "{}: no probe_end record", cfg.label);
    Ok(Probe {
        queries: out,
        end,
        spawn_to_output_us: r.wall_seconds * 1e6,
    })
}

/// Builds (or reuses) the index of `engine` under `dir`; returns its size in bytes.
fn build_index(engine: &str, launcher: &Launcher, p: &Prepared, dir: &Path) -> Result<u64> {
    let marker = dir.with_extension("done");
    if marker.exists() && dir.exists() {
        return Ok(measure::dir_bytes(dir));
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    eprintln!("io: indexing W2 with {engine} into {}", dir.display());
    let args = launch::index_args(launcher, &p.docs_path, dir, 1, 256);
    run_driver(launcher, &args).with_context(|| format!("indexing W2 with {engine}"))?;
    std::fs::write(&marker, b"built by quarry-bench io\n")?;
    Ok(measure::dir_bytes(dir))
}

/// The configurations: quarry per mode, then the peers (engines that cannot run are skipped).
fn configs(
    repo: &Path,
    work: &Path,
    p: &Prepared,
    s: &W2Settings,
    skipped: &mut Vec<(String, String)>,
) -> Vec<Config> {
    let mut out = Vec::new();
    let quarry = Launcher::SelfExe { engine: "quarry" };
    match build_index("quarry", &quarry, p, &work.join("quarry")) {
        Ok(bytes) => {
            for m in &s.modes {
                out.push(Config {
                    label: format!("quarry-{m}"),
                    launcher: quarry.clone(),
                    env: vec![("QUARRY_DIRECTORY".into(), m.clone())],
                    extra: Vec::new(),
                    index: work.join("quarry"),
                    index_bytes: bytes,
                });
            }
        }
        Err(e) => skipped.push(("quarry".into(), format!("{e:#}"))),
    }
    if s.peers.iter().any(|e| e == "tantivy") {
        let l = Launcher::SelfExe { engine: "tantivy" };
        match build_index("tantivy", &l, p, &work.join("tantivy")) {
            Ok(bytes) => out.push(Config {
                label: "tantivy-mmap".into(),
                launcher: l,
                env: Vec::new(),
                extra: Vec::new(),
                index: work.join("tantivy"),
                index_bytes: bytes,
            }),
            Err(e) => skipped.push(("tantivy".into(), format!("{e:#}"))),
        }
    }
    if s.peers.iter().any(|e| e == "lucene") {
        let built = launch::lucene_launcher(repo, s.lucene_jar.clone()).and_then(|l| {
            let bytes = build_index("lucene", &l, p, &work.join("lucene"))?;
            Ok((l, bytes))
        });
        match built {
            Ok((l, bytes)) => {
                for (label, dir) in [("lucene-mmap", "mmap"), ("lucene-niofs", "niofs")] {
                    out.push(Config {
                        label: label.into(),
                        launcher: l.clone(),
                        env: Vec::new(),
                        extra: os(&[&"--directory", &dir]),
                        index: work.join("lucene"),
                        index_bytes: bytes,
                    });
                }
            }
            Err(e) => skipped.push(("lucene".into(), format!("{e:#}"))),
        }
    }
    out
}

/// Query files of one run of the study.
struct Files {
    empty: PathBuf,
    sample: PathBuf,
    lookup: PathBuf,
    exec: PathBuf,
    evicted: Vec<PathBuf>,
}

fn run_config(cfg: &Config, f: &Files, s: &W2Settings, cgroups: bool) -> Result<Outcome> {
    eprintln!(
        "io: {} (index {:.0} MB)",
        cfg.label,
        cfg.index_bytes as f64 / 1e6
    );
    cache::warm(&cfg.index)?;
    let base = probe(cfg, &f.empty, "top10", 0, None, None)?;
    let baseline_rss = base.end["peak_rss_bytes"].as_u64().unwrap_or(0);
    let limit = baseline_rss + (cfg.index_bytes as f64 * s.cache_fraction) as u64;
    let rounds = WARM_SKIP + s.warm_rounds;
    let warm = probe(cfg, &f.sample, "top10", rounds, None, None)?;
    let lookup_warm = probe(cfg, &f.lookup, "count", rounds, None, None)?;
    let exec_warm = probe(
        cfg,
        &f.exec,
        "top10_count",
        rounds,
        Some(s.deadline_ms),
        None,
    )?;
    let mut evicted = Vec::new();
    for q in &f.evicted {
        cache::evict(&cfg.index)?;
        evicted.push(probe(cfg, q, "top10", 1, None, None)?);
    }
    let (mut limited, mut lookup_limited, mut exec_limited) = (None, None, None);
    if cgroups {
        let rounds = 1 + s.limited_rounds;
        let run = |file: &Path, mode: &str, deadline: Option<u64>| -> Result<Limited> {
            cache::evict(&cfg.index)?;
            let name = format!("quarry-bench-io-{}", std::process::id());
            let group = MemCgroup::create(Path::new(V1_ROOT), &name, Some(limit))?;
            let probe = probe(cfg, file, mode, rounds, deadline, Some(&group))?;
            let mem = group.report()?;
            Ok(Limited { probe, mem })
        };
        limited = Some(run(&f.sample, "top10", None)?);
        lookup_limited = Some(run(&f.lookup, "count", None)?);
        exec_limited = Some(run(&f.exec, "top10_count", Some(s.deadline_ms))?);
    }
    Ok(Outcome {
        label: cfg.label.clone(),
        index_bytes: cfg.index_bytes,
        baseline_rss,
        limit,
        warm,
        lookup_warm,
        exec_warm,
        evicted,
        limited,
        lookup_limited,
        exec_limited,
    })
}

/// Whether memory cgroups can be created here; the reason when not.
fn cgroup_check() -> Option<String> {
    let name = format!("quarry-bench-io-check-{}", std::process::id());
    MemCgroup::create(Path::new(V1_ROOT), &name, Some(1 << 30))
        .err()
        .map(|e| format!("{e:#}"))
}

/// Runs the W2 study; `work` holds indexes and query files (kept between runs).
pub fn run(repo: &Path, work: &Path, s: &W2Settings) -> Result<W2Study> {
    let started = std::time::Instant::now();
    let p = workload::prepare("w2", repo, &repo.join("bench/results/tmp"), s.quick)?;
    std::fs::create_dir_all(work)?;
    let mut skipped = Vec::new();
    let cfgs = configs(repo, work, &p, s, &mut skipped);

    let mut sample = Vec::new();
    let mut counts = Vec::new();
    let mut evicted_qs = Vec::new();
    for class in workload::CLASSES {
        let qs = spread(&p.queries, class, s.per_class);
        if qs.is_empty() {
            continue;
        }
        counts.push((class.to_string(), qs.len()));
        evicted_qs.extend(spread(&qs, class, s.evicted_per_class));
        sample.extend(qs);
    }
    let lookup = spread(&p.queries, "intersection", s.bench_queries);
    let exec = spread(&p.queries, "phrase", s.bench_queries);
    let files = Files {
        empty: work.join("q-empty.jsonl"),
        sample: work.join("q-sample.jsonl"),
        lookup: work.join("q-lookup.jsonl"),
        exec: work.join("q-exec.jsonl"),
        evicted: (0..evicted_qs.len())
            .map(|i| work.join(format!("q-evicted-{i}.jsonl")))
            .collect(),
    };
    write_queries(&files.empty, &[])?;
    write_queries(&files.sample, &sample)?;
    write_queries(&files.lookup, &lookup)?;
    write_queries(&files.exec, &exec)?;
    for (q, path) in evicted_qs.iter().zip(&files.evicted) {
        write_queries(path, std::slice::from_ref(q))?;
    }

    let cgroup_note = cgroup_check();
    if let Some(n) = &cgroup_note {
        eprintln!("io: no memory-limited runs: {n}");
    }
    let mut outcomes = Vec::new();
    for cfg in &cfgs {
        match run_config(cfg, &files, s, cgroup_note.is_none()) {
            Ok(o) => outcomes.push(o),
            Err(e) => {
                eprintln!("io: {} failed: {e:#}", cfg.label);
                skipped.push((cfg.label.clone(), format!("{e:#}")));
            }
        }
    }
    Ok(W2Study {
        prepared_description: p.description.clone(),
        sample_per_class: counts,
        evicted_per_class: s.evicted_per_class,
        lookup_queries: lookup.len(),
        exec_queries: exec.len(),
        outcomes,
        skipped,
        cgroup_note,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &str, class: &str) -> QuerySpec {
        QuerySpec {
            query: query.into(),
            class: class.into(),
            name: None,
            modes: None,
        }
    }

    #[test]
    fn spread_takes_evenly_spaced_queries_of_the_class() {
        let qs: Vec<QuerySpec> = (0..10)
            .map(|i| q(&format!("q{i}"), if i % 2 == 0 { "term" } else { "phrase" }))
            .collect();
        let got: Vec<String> = spread(&qs, "term", 2)
            .into_iter()
            .map(|q| q.query)
            .collect();
        assert_eq!(got, ["q0", "q4"]);
        assert_eq!(spread(&qs, "phrase", 9).len(), 5);
        assert!(spread(&qs, "union", 3).is_empty());
    }
}
