//! Which read path is fastest on this machine, for which read sizes, and for which engine and
//! directory on W2 cached, evicted or confined to less memory than the index: `quarry-bench io`.
//!
//! One Markdown report (`bench/results/io-w2-<date>.md` unless `--out`) with charts beside it:
//! 1. read sizes: `O_DIRECT` `pread` latency and throughput for 4 KiB .. 1 MiB at random aligned
//!    offsets of a large file (generated once under `bench/results/tmp/io/`, or `--file`);
//! 2. batches of 64 random reads through io_uring against one `pread` after another;
//! 3. pin or copy: single-page reads from a warm direct-I/O buffer pool handed out as pinned views
//!    against copied out (the choice `DirectOptions::copy_out` makes);
//! 4. W2 per quarry directory mode, Tantivy (mmap) and Lucene (MMapDirectory, NIOFSDirectory):
//!    warm, evicted and memory-limited (cgroup) latency per class, cold start, memory, disk
//!    bytes, and the Marginalia lookup and execution benchmarks (`io_w2`, `io_w2_report`).
//!
//! Run time on the 2-core machine at load average 12-16: 11 minutes with the defaults when the
//! three W2 indexes are built first, 8 minutes when they are reused (kept under
//! `bench/results/tmp/io/`); about 80 s with `--quick`.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use quarry_store::{
    AlignedBuf, BatchMode, DirectDirectory, DirectOptions, Directory, FileHandle, PreadDirectory,
};

use crate::io_w2::{self, W2Settings};
use crate::measure::summarize;

#[derive(Debug, clap::Args)]
pub struct IoArgs {
    /// Repository root (default: the checkout this binary was built from).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Report path (default: bench/results/io-<date>.md).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Large file for the read-size study (default: generated under bench/results/tmp/io/).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Size of the generated file, MiB.
    #[arg(long, default_value_t = 1024)]
    pub file_mb: u64,
    /// Random reads per read size.
    #[arg(long, default_value_t = 400)]
    pub reads: usize,
    /// quarry directory modes of the W2 study.
    #[arg(long, default_value = "mmap,pread,direct,adaptive")]
    pub modes: String,
    /// Peers of the W2 study (tantivy, lucene; empty for none).
    #[arg(long, default_value = "tantivy,lucene")]
    pub peers: String,
    /// Sampled W2 queries per class (warm and memory-limited runs).
    #[arg(long, default_value_t = 20)]
    pub per_class: usize,
    /// Sampled queries per class for the evicted runs (one process each).
    #[arg(long, default_value_t = 4)]
    pub evicted_per_class: usize,
    /// Timed warm rounds (after 2 untimed ones).
    #[arg(long, default_value_t = 5)]
    pub warm_rounds: u64,
    /// Timed memory-limited rounds (after 1 untimed one).
    #[arg(long, default_value_t = 2)]
    pub limited_rounds: u64,
    /// Queries of each Marginalia benchmark (lookup: intersection, execution: phrase).
    #[arg(long, default_value_t = 20)]
    pub bench_queries: usize,
    /// Page cache the memory limit leaves each driver, as a fraction of its index size.
    #[arg(long, default_value_t = 0.25)]
    pub cache_fraction: f64,
    /// Time budget of the execution benchmark, ms.
    #[arg(long, default_value_t = 150)]
    pub deadline_ms: u64,
    /// The Lucene driver jar (default: bench/lucene/target, rebuilt when older than its sources).
    #[arg(long)]
    pub lucene_jar: Option<PathBuf>,
    /// Smoke run: a 256 MiB file, 100 reads per size; W2 --quick (50,000 paragraphs), 3 queries
    /// per class, 1 evicted per class, 2 warm and 1 limited timed rounds, 5 benchmark queries.
    #[arg(long)]
    pub quick: bool,
}

/// A small seeded generator (xorshift64*), so offsets are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

const SIZES: [usize; 9] = [
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
];

pub fn run(mut args: IoArgs) -> Result<()> {
    if args.quick {
        args.file_mb = args.file_mb.min(256);
        args.reads = args.reads.min(100);
        args.per_class = args.per_class.min(3);
        args.evicted_per_class = args.evicted_per_class.min(1);
        args.warm_rounds = args.warm_rounds.min(2);
        args.limited_rounds = args.limited_rounds.min(1);
        args.bench_queries = args.bench_queries.min(5);
    }
    let started = Instant::now();
    let repo = args
        .repo
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let tmp = repo.join("bench/results/tmp/io");
    std::fs::create_dir_all(&tmp)?;
    let out = args.out.clone().unwrap_or_else(|| {
        let dir = if args.quick {
            repo.join("target/bench-quick")
        } else {
            repo.join("bench/results")
        };
        dir.join(format!(
            "io-w2-{}{}.md",
            crate::orchestrator::today(),
            if args.quick { "-quick" } else { "" }
        ))
    });
    let out_dir = out.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&out_dir)?;
    let stem = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("io")
        .to_string();
    let load_start = crate::orchestrator::loadavg();
    let mut md = String::new();
    let commit = crate::orchestrator::git_head(&repo);
    md += &format!(
        "# I/O study ({})\n\nCommit `{commit}`; command `quarry-bench io{}`; machine: {} cores, \
         {:.1} GiB available memory; kernel {}; load average at start {load_start}.\n\n",
        crate::orchestrator::today(),
        if args.quick { " --quick" } else { "" },
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        quarry_store::memory::available_memory().unwrap_or(0) as f64 / (1u64 << 30) as f64,
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
    );

    let big = match &args.file {
        Some(f) => f.clone(),
        None => generate(&tmp.join("readsize.bin"), args.file_mb << 20)?,
    };
    eprintln!("io: read sizes on {}", big.display());
    md += &read_sizes(&big, args.reads)?;
    eprintln!("io: batched reads");
    md += &batched(&big, args.reads)?;
    eprintln!("io: pin or copy");
    md += &pin_or_copy(&big)?;

    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect()
    };
    let modes = list(&args.modes);
    for m in &modes {
        m.parse::<quarry::DirectoryKind>()
            .map_err(|e| anyhow::anyhow!("--modes: {e}"))?;
    }
    let settings = W2Settings {
        quick: args.quick,
        modes,
        peers: list(&args.peers),
        per_class: args.per_class,
        evicted_per_class: args.evicted_per_class,
        warm_rounds: args.warm_rounds,
        limited_rounds: args.limited_rounds,
        bench_queries: args.bench_queries,
        cache_fraction: args.cache_fraction,
        deadline_ms: args.deadline_ms,
        lucene_jar: args.lucene_jar.clone(),
    };
    anyhow::ensure!(
        args.cache_fraction > 0.0 && args.cache_fraction < 1.0,
        "--cache-fraction must be between 0 and 1 (the limit must be smaller than the index)"
    );
    let work = tmp.join(if args.quick { "w2-quick" } else { "w2" });
    let study = io_w2::run(&repo, &work, &settings)?;
    md += &crate::io_w2_report::render(&study, &settings, &out_dir, &stem)?;

    md += &format!(
        "\nThe whole study took {:.0} s; load average at the end {}.\n",
        started.elapsed().as_secs_f64(),
        crate::orchestrator::loadavg()
    );
    std::fs::write(&out, md).with_context(|| format!("writing {}", out.display()))?;
    println!("{}", out.display());
    Ok(())
}

/// Writes `len` bytes of pseudo-random data to `path` once (kept for later runs).
fn generate(path: &Path, len: u64) -> Result<PathBuf> {
    if std::fs::metadata(path).map(|m| m.len()).ok() == Some(len) {
        return Ok(path.to_path_buf());
    }
    eprintln!("io: writing {} MiB to {}", len >> 20, path.display());
    let mut f = File::create(path)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..len >> 20 {
        for w in chunk.chunks_mut(8) {
            w.copy_from_slice(&rng.next().to_le_bytes());
        }
        f.write_all(&chunk)?;
    }
    f.sync_all()?;
    Ok(path.to_path_buf())
}

fn open_direct(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .with_context(|| format!("opening {} with O_DIRECT", path.display()))
}

fn read_sizes(path: &Path, reads: usize) -> Result<String> {
    let f = open_direct(path)?;
    let len = f.metadata()?.len();
    let mut out = String::from(
        "## 1. Read size: `O_DIRECT` `pread` at random offsets\n\n\
         One read at a time (queue depth 1), offsets uniformly random and aligned to the read size, \
         page cache bypassed.\n\n\
         | read size | p50 µs | p90 µs | p99 µs | mean µs | MB/s | reads/s |\n|---|---|---|---|---|---|---|\n",
    );
    let mut rng = Rng(42);
    for size in SIZES {
        let mut buf = AlignedBuf::zeroed(size);
        let slots = len / size as u64;
        anyhow::ensure!(
            slots > 1,
            "{} is too small for {size}-byte reads",
            path.display()
        );
        let mut samples = Vec::with_capacity(reads);
        for _ in 0..reads {
            let off = rng.next() % slots * size as u64;
            let t = Instant::now();
            f.read_exact_at(buf.as_mut_slice(), off)?;
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let s = summarize(&mut samples);
        out += &format!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |\n",
            human(size),
            s.p50,
            s.p90,
            s.p99,
            s.mean,
            size as f64 / s.mean,
            1e6 / s.mean
        );
    }
    Ok(out + "\n")
}

fn human(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{} MiB", size >> 20)
    } else {
        format!("{} KiB", size >> 10)
    }
}

/// 64 random reads of one size at once: io_uring against one pread after another (buffered,
/// the file's pages evicted before every batch).
fn batched(path: &Path, reads: usize) -> Result<String> {
    let dir = path.parent().context("file has a folder")?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("file name")?;
    let mut out = String::from(
        "## 2. Batched reads: 64 random ranges at once\n\n\
         `FileHandle::read_many` of a pread directory, the file evicted from the page cache before \
         every batch; time per batch.\n\n\
         | read size | batch mode | p50 µs per batch | mean µs per batch | µs per read |\n|---|---|---|---|---|\n",
    );
    let batches = (reads / 16).max(3);
    for size in [4usize << 10, 64 << 10] {
        for mode in [BatchMode::Pread, BatchMode::Uring] {
            if mode == BatchMode::Uring && !quarry_store::uring_available() {
                out += &format!("| {} | io_uring | unavailable here | | |\n", human(size));
                continue;
            }
            let d = PreadDirectory::open_with(dir, mode)?;
            let h = d.open(name)?;
            let slots = h.len() / size as u64;
            let mut rng = Rng(7);
            let mut samples = Vec::new();
            for _ in 0..batches {
                let ranges: Vec<_> = (0..64)
                    .map(|_| {
                        let s = rng.next() % slots * size as u64;
                        s..s + size as u64
                    })
                    .collect();
                h.evict_from_cache()?;
                let t = Instant::now();
                let got = h.read_many(&ranges)?;
                samples.push(t.elapsed().as_secs_f64() * 1e6);
                anyhow::ensure!(got.len() == 64);
            }
            let s = summarize(&mut samples);
            out += &format!(
                "| {} | {:?} | {:.0} | {:.0} | {:.1} |\n",
                human(size),
                mode,
                s.p50,
                s.mean,
                s.mean / 64.0
            );
        }
    }
    Ok(out + "\n")
}

/// Single-page reads from a warm pool: pinned views against copies.
fn pin_or_copy(path: &Path) -> Result<String> {
    let dir = path.parent().context("file has a folder")?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("file name")?;
    let mut out = String::from(
        "## 3. Buffer pool: hand out pinned pages or copies\n\n\
         64 KiB pages, a 64 MiB pool holding the first 32 MiB of the file (warm), 200,000 reads \
         of 100 bytes inside one page each, one thread.\n\n\
         | `copy_out` | ns per read |\n|---|---|\n",
    );
    for copy_out in [false, true] {
        let opts = DirectOptions {
            page_size: 64 << 10,
            memory_limit: Some(64 << 20),
            copy_out,
            ..Default::default()
        };
        let d = DirectDirectory::open_with(dir, opts)?;
        let h = d.open_file(name)?;
        let span = 32u64 << 20;
        for p in 0..span / (64 << 10) {
            h.read_bytes(p * (64 << 10), p * (64 << 10) + 1)?;
        }
        let mut rng = Rng(99);
        let n = 200_000u64;
        let mut sum = 0u64;
        let t = Instant::now();
        for _ in 0..n {
            let page = rng.next() % (span / (64 << 10));
            let s = page * (64 << 10) + rng.next() % 60_000;
            let b = h.read_bytes(s, s + 100)?;
            sum += u64::from(b[0]);
        }
        let ns = t.elapsed().as_secs_f64() * 1e9 / n as f64;
        std::hint::black_box(sum);
        out += &format!("| {copy_out} | {ns:.0} |\n");
    }
    Ok(out + "\n")
}
