//! How long does a fresh process take from open to the stored ids of its top 10, with the index
//! evicted from the page cache, per directory mode? (The store helper's before/after figures;
//! `quarry-bench run` has the full four-engine cold-start table.)
//!
//! ```text
//! cargo build --release -p quarry-bench --examples
//! target/release/examples/store_coldstart --index DIR [--query Q] [--runs N]
//!     [--modes mmap,pread,direct,adaptive] [--fetch one|batch] [--warm]
//!     [--tantivy-index DIR --bench-bin target/release/quarry-bench]
//! ```
//!
//! Per run: every file of the index is fsynced and dropped from the page cache with
//! `posix_fadvise(DONTNEED)` (skipped with `--warm`), then a child process opens the index with
//! the mode, parses the query, searches (top 10) and reads the stored `id` of each hit, and
//! prints its phase times. Medians over the runs. `--fetch batch` reads the hits' stored fields
//! with `Searcher::docs` (batched by segment) instead of one `stored_fields` call per hit.
//! With `--tantivy-index`, Tantivy's driver (`quarry-bench driver tantivy coldstart`) is run the
//! same way, for a side-by-side ratio.
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use quarry::{DirectoryKind, Index, SearchMode};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| -> Option<String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let index = PathBuf::from(get("--index").context("--index DIR is required")?);
    let query = get("--query").unwrap_or_else(|| "griffith observatory".into());
    let fetch = get("--fetch").unwrap_or_else(|| "one".into());
    if args.first().map(String::as_str) == Some("child") {
        let mode: DirectoryKind = get("--mode")
            .unwrap_or_else(|| "mmap".into())
            .parse()
            .map_err(anyhow::Error::msg)?;
        return child(&index, &query, mode, &fetch);
    }
    let runs: usize = get("--runs").unwrap_or_else(|| "5".into()).parse()?;
    let modes = get("--modes").unwrap_or_else(|| "mmap,pread,direct,adaptive".into());
    let warm = args.iter().any(|a| a == "--warm");
    let me = std::env::current_exe()?;
    println!(
        "| engine | mode | cache | fetch | runs | spawn → ids ms | open ms | search ms | fetch ms | open → ids ms |"
    );
    println!("|---|---|---|---|---:|---:|---:|---:|---:|---:|");
    for mode in modes.split(',') {
        let mut rows = Vec::new();
        for _ in 0..runs {
            prepare(&index, warm)?;
            let t = Instant::now();
            let out = Command::new(&me)
                .args(["child", "--index"])
                .arg(&index)
                .args(["--query", &query, "--mode", mode, "--fetch", &fetch])
                .output()?;
            let spawn_ms = t.elapsed().as_secs_f64() * 1e3;
            if !out.status.success() {
                bail!("child ({mode}): {}", String::from_utf8_lossy(&out.stderr));
            }
            let line = String::from_utf8(out.stdout)?;
            let mut v: Vec<f64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<std::result::Result<_, _>>()?;
            v.insert(0, spawn_ms);
            rows.push(v);
        }
        let m = |i: usize| median(rows.iter().map(|r| r[i]).collect());
        println!(
            "| quarry | {mode} | {} | {fetch} | {runs} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            if warm { "warm" } else { "evicted" },
            m(0),
            m(1),
            m(2),
            m(3),
            m(4)
        );
    }
    if let Some(tindex) = get("--tantivy-index") {
        let bin = get("--bench-bin").context("--bench-bin is needed with --tantivy-index")?;
        let mut spawn = Vec::new();
        let mut inner = Vec::new();
        for _ in 0..runs {
            prepare(Path::new(&tindex), warm)?;
            let t = Instant::now();
            let out = Command::new(&bin)
                .args(["driver", "tantivy", "coldstart", "--index", &tindex])
                .args(["--query", &query])
                .output()?;
            spawn.push(t.elapsed().as_secs_f64() * 1e3);
            if !out.status.success() {
                bail!("tantivy driver: {}", String::from_utf8_lossy(&out.stderr));
            }
            let text = String::from_utf8(out.stdout)?;
            let rec: serde_json::Value = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .find(|v: &serde_json::Value| v["op"] == "coldstart")
                .context("no coldstart record from the tantivy driver")?;
            inner.push(rec["open_to_first_result_us"].as_f64().unwrap_or(f64::NAN) / 1e3);
        }
        println!(
            "| tantivy | mmap | {} | one | {runs} | {:.1} | – | – | – | {:.1} |",
            if warm { "warm" } else { "evicted" },
            median(spawn),
            median(inner)
        );
    }
    Ok(())
}

/// Child: open, parse, search, fetch ids; prints open, search, fetch and total milliseconds.
fn child(index: &Path, query: &str, mode: DirectoryKind, fetch: &str) -> Result<()> {
    let t0 = Instant::now();
    let searcher = Index::open_with(index, mode)?.searcher();
    let t1 = Instant::now();
    let q = searcher.parse_query(query, &["body"])?;
    let res = searcher.search(&q, 10, SearchMode::Top)?;
    let t2 = Instant::now();
    let addrs: Vec<_> = res.top.iter().map(|h| h.doc).collect();
    let docs = if fetch == "batch" {
        searcher.docs(&addrs)?
    } else {
        addrs
            .iter()
            .map(|a| searcher.stored_fields(*a))
            .collect::<quarry::Result<Vec<_>>>()?
    };
    let ids: Vec<_> = docs.iter().map(|d| d.get("id").cloned()).collect();
    let t3 = Instant::now();
    std::hint::black_box(&ids);
    if ids.iter().any(Option::is_none) {
        bail!("a hit has no stored id");
    }
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    println!(
        "{} {} {} {}",
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        ms(t0, t3)
    );
    Ok(())
}

/// Evicts (or, with `warm`, reads) every file of `dir`.
fn prepare(dir: &Path, warm: bool) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if !p.is_file() {
            continue;
        }
        let mut f = std::fs::File::open(&p)?;
        if warm {
            std::io::copy(&mut f, &mut std::io::sink())?;
            continue;
        }
        f.sync_all()?;
        // SAFETY: a plain syscall on an fd owned by `f` for the duration of the call.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            bail!("posix_fadvise({}): error {rc}", p.display());
        }
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
