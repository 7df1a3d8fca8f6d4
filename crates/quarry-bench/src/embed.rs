//! Text embedding speed: quarry's embedder (candle on the CPU) against sentence-transformers
//! (torch) on the same texts, model and thread counts, in one run.
//!
//! Texts: the first `--docs` non-empty Reuters bodies of `data/reuters21578.jsonl.zst` (the
//! documents: throughput, texts/s; sentence-transformers in batches of 32) and the W1 query texts of the embedding fixture
//! (`tests/fixtures/embeddings/minilm-reuters500.json`: latency of one query alone, p50 and
//! p99). Each engine runs in its own process per thread count (quarry: this binary's `--driver`
//! with `RAYON_NUM_THREADS`, which sizes candle's matrix kernels; sentence-transformers:
//! `scripts/embed-bench.py` with `torch.set_num_threads`), alternating engines `--rounds`
//! times; the report gives medians and the ratio. Report: `bench/results/<date>-embed.md`.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

#[derive(Debug, clap::Args)]
pub struct EmbedArgs {
    /// The model directory (default: what `scripts/fetch-model.sh` prints).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Reuters bodies embedded for throughput.
    #[arg(long, default_value_t = 500)]
    docs: usize,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    threads: Vec<usize>,
    /// Times each engine runs per thread count (alternating); medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Times every query is embedded alone for the latency percentiles.
    #[arg(long, default_value_t = 3)]
    query_rounds: usize,
    /// Python of the venv of scripts/vectors-venv.sh (sentence-transformers); none: quarry only.
    #[arg(long, default_value = "target/vectors-venv/bin/python")]
    python: PathBuf,
    /// Where the report goes.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Internal: run quarry's side once (texts and queries files) and print a JSON line.
    #[arg(long, hide = true, num_args = 2, value_names = ["TEXTS", "QUERIES"])]
    driver: Vec<PathBuf>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_lines(p: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Ok(serde_json::from_str::<String>(l)?))
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((p * sorted.len() as f64) as usize).min(sorted.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// quarry's side of one measurement, in this process (threads set by the parent).
fn drive(model: &Path, texts: &Path, queries: &Path, query_rounds: usize) -> Result<()> {
    let texts = read_lines(texts)?;
    let queries = read_lines(queries)?;
    let model = quarry::embed::SentenceModel::load(model)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    model.embed(&refs[..refs.len().min(32)])?;
    let start = Instant::now();
    let vectors = model.embed(&refs)?;
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), texts.len());
    let mut lat = Vec::new();
    for _ in 0..query_rounds {
        for q in &queries {
            let t = Instant::now();
            model.embed(&[q.as_str()])?;
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({
            "engine": "quarry (candle)",
            "threads": std::env::var("RAYON_NUM_THREADS").ok(),
            "texts": texts.len(),
            "seconds": seconds,
            "texts_per_second": texts.len() as f64 / seconds,
            "query_p50_ms": percentile(&lat, 0.5),
            "query_p99_ms": percentile(&lat, 0.99),
            "queries": lat.len(),
        })
    );
    Ok(())
}

/// The texts of the run: Reuters bodies and the fixture's W1 queries, written as JSON Lines
/// of strings for both engines.
fn write_texts(docs: usize, dir: &Path) -> Result<(PathBuf, PathBuf, usize)> {
    let mut raw = String::new();
    zstd::Decoder::new(std::fs::File::open(
        repo().join("data/reuters21578.jsonl.zst"),
    )?)?
    .read_to_string(&mut raw)?;
    let mut bodies = Vec::new();
    for line in raw.lines() {
        let d: Value = serde_json::from_str(line)?;
        if let Some(b) = d["body"].as_str().filter(|b| !b.is_empty()) {
            bodies.push(serde_json::to_string(b)?);
        }
        if bodies.len() == docs {
            break;
        }
    }
    let fixture = repo().join("tests/fixtures/embeddings/minilm-reuters500.json");
    let header: Value = serde_json::from_str(&std::fs::read_to_string(&fixture)?)?;
    let queries: Vec<String> = header["queries"]
        .as_array()
        .context("fixture queries")?
        .iter()
        .map(|q| serde_json::to_string(q).expect("string"))
        .collect();
    let (t, q) = (dir.join("texts.jsonl"), dir.join("queries.jsonl"));
    std::fs::write(&t, bodies.join("\n") + "\n")?;
    std::fs::write(&q, queries.join("\n") + "\n")?;
    Ok((t, q, queries.len()))
}

fn run_child(mut cmd: Command, what: &str) -> Result<Value> {
    let out = cmd.output().with_context(|| format!("starting {what}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().context("no output")?;
    Ok(serde_json::from_str(line)?)
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let model = match &args.model {
        Some(m) => m.clone(),
        None => {
            let out = Command::new("bash")
                .arg(repo().join("scripts/fetch-model.sh"))
                .output()?;
            if !out.status.success() {
                bail!(
                    "scripts/fetch-model.sh failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            PathBuf::from(String::from_utf8(out.stdout)?.trim())
        }
    };
    if let [texts, queries] = args.driver.as_slice() {
        return drive(&model, texts, queries, args.query_rounds);
    }
    let tmp = repo().join("bench/results/tmp/embed");
    std::fs::create_dir_all(&tmp)?;
    let (texts, queries, nq) = write_texts(args.docs, &tmp)?;
    let python = repo().join(&args.python);
    let with_st = python.exists();
    if !with_st {
        eprintln!(
            "no {}: sentence-transformers left out (run scripts/vectors-venv.sh)",
            python.display()
        );
    }
    let me = std::env::current_exe()?;
    let mut rows = Vec::new();
    for &threads in &args.threads {
        let (mut q, mut s) = (Vec::new(), Vec::new());
        for round in 0..args.rounds {
            let mut cmd = Command::new(&me);
            cmd.args(["embed", "--model"])
                .arg(&model)
                .args(["--query-rounds", &args.query_rounds.to_string(), "--driver"])
                .args([&texts, &queries])
                .env("RAYON_NUM_THREADS", threads.to_string());
            let r = run_child(cmd, "quarry's driver")?;
            eprintln!("[embed] {threads} thread(s), round {round}: quarry {r}");
            q.push(r);
            if with_st {
                let mut cmd = Command::new(&python);
                cmd.arg(repo().join("scripts/embed-bench.py"))
                    .args(["--texts"])
                    .arg(&texts)
                    .arg("--queries")
                    .arg(&queries)
                    .args(["--threads", &threads.to_string()])
                    .args(["--query-rounds", &args.query_rounds.to_string()]);
                let r = run_child(cmd, "scripts/embed-bench.py")?;
                eprintln!("[embed] {threads} thread(s), round {round}: sentence-transformers {r}");
                s.push(r);
            }
        }
        rows.push((threads, q, s));
    }
    let report = render(&args, &model, nq, &rows);
    let path = args
        .out
        .join(format!("{}-embed.md", crate::orchestrator::today()));
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(&path, &report)?;
    print!("{report}");
    eprintln!("report: {}", path.display());
    Ok(())
}

type Row = (usize, Vec<Value>, Vec<Value>);

fn med(v: &[Value], key: &str) -> Option<f64> {
    (!v.is_empty()).then(|| median(v.iter().filter_map(|r| r[key].as_f64()).collect()))
}

fn render(args: &EmbedArgs, model: &Path, nq: usize, rows: &[Row]) -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut s = format!(
        "# Text embedding: quarry vs sentence-transformers\n\n\
         Command: `{}` ({} build) on commit {} ({}). Model: all-MiniLM-L6-v2 from `{}`. Machine: {} core(s), load average at the end {}.\n\n\
         Throughput: the first {} non-empty Reuters bodies embedded in one call (quarry: sorted by \
         length, packed without padding into batches of at most 2048 tokens, batches side by side \
         on the threads; sentence-transformers: `encode(batch_size=32)`, which also sorts by \
         length and pads each batch), after a warm-up batch. Query latency: each of the {nq} W1 query texts embedded \
         alone, {} times over. Medians of {} alternating runs per engine and thread count.\n\n\
         | Threads | Engine | Texts/s | Query p50 (ms) | Query p99 (ms) |\n|---|---|---|---|---|\n",
        std::env::args().collect::<Vec<_>>().join(" "),
        if cfg!(debug_assertions) {
            "dev profile: dependencies at opt-level 2, quarry at 0"
        } else {
            "release"
        },
        crate::orchestrator::git_head(&repo()),
        crate::orchestrator::today(),
        model.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        args.docs,
        args.query_rounds,
        args.rounds,
    );
    let fmt = |x: Option<f64>, p: usize| x.map_or("—".to_string(), |x| format!("{x:.p$}"));
    let mut ratios = Vec::new();
    for (threads, q, st) in rows {
        for (name, v) in [("quarry", q), ("sentence-transformers", st)] {
            if v.is_empty() {
                continue;
            }
            s += &format!(
                "| {threads} | {name} | {} | {} | {} |\n",
                fmt(med(v, "texts_per_second"), 1),
                fmt(med(v, "query_p50_ms"), 2),
                fmt(med(v, "query_p99_ms"), 2)
            );
        }
        if let (Some(a), Some(b)) = (med(q, "texts_per_second"), med(st, "texts_per_second")) {
            let (pa, pb) = (
                med(q, "query_p50_ms").unwrap(),
                med(st, "query_p50_ms").unwrap(),
            );
            ratios.push(format!(
                "- {threads} thread(s): quarry's throughput is {:.2}x sentence-transformers', its median query latency {:.2}x.",
                a / b,
                pa / pb
            ));
        }
    }
    if !ratios.is_empty() {
        s += "\n";
        s += &ratios.join("\n");
        s += "\n";
    }
    s
}
