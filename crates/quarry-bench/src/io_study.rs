//! Which read path is fastest on this machine, and for which read sizes: the `io` subcommand.
//!
//! Three studies, one Markdown report (`bench/results/io-<date>.md` unless `--out`):
//! 1. read sizes: `O_DIRECT` `pread` latency and throughput for 4 KiB .. 1 MiB at random aligned
//!    offsets of a large file (generated once under `bench/results/tmp/io/`, or `--file`), plus
//!    batches of 64 random reads through io_uring against one `pread` after another;
//! 2. pin or copy: single-page reads from a warm direct-I/O buffer pool handed out as pinned views
//!    against copied out (the choice `DirectOptions::copy_out` makes);
//! 3. per directory mode (`--modes`), the W1 queries through the quarry driver: per-class latency
//!    with a warm cache, and with the index evicted (fsync + `POSIX_FADV_DONTNEED` on every file,
//!    then a fresh open) before every query, with the open time and the bytes read from disk.
//!
//! Run time: about 2 minutes with the defaults on the 2-core machine (the file is written once),
//! about 30 s with `--quick`.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use quarry::DirectoryKind;
use quarry_store::{
    AlignedBuf, BatchMode, DirectDirectory, DirectOptions, Directory, FileHandle, PreadDirectory,
};

use crate::drivers::quarry::Quarry;
use crate::drivers::{load_docs, SearchEngine};
use crate::measure::{self, summarize};
use crate::protocol::Mode;
use crate::workload;

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
    /// Directory modes of the query study.
    #[arg(long, default_value = "mmap,pread,direct,adaptive")]
    pub modes: String,
    /// Timed warm runs per query.
    #[arg(long, default_value_t = 20)]
    pub warm_iters: usize,
    /// Evicted runs per query.
    #[arg(long, default_value_t = 3)]
    pub cold_iters: usize,
    /// Smoke run: a 256 MiB file, 100 reads per size, 5 warm and 1 evicted run per query.
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
        args.warm_iters = args.warm_iters.min(5);
        args.cold_iters = args.cold_iters.min(1);
    }
    let started = Instant::now();
    let repo = args
        .repo
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let tmp = repo.join("bench/results/tmp/io");
    std::fs::create_dir_all(&tmp)?;
    let mut md = String::new();
    let commit = crate::orchestrator::git_head(&repo);
    md += &format!(
        "# I/O study ({})\n\nCommit `{commit}`; command `quarry-bench io{}`; machine: {} cores, \
         {:.1} GiB available memory; kernel {}.\n\n",
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
    eprintln!("io: query latency per directory mode");
    md += &modes(&repo, &tmp, &args)?;

    md += &format!(
        "\nThe whole study took {:.0} s.\n",
        started.elapsed().as_secs_f64()
    );
    let out = args.out.clone().unwrap_or_else(|| {
        repo.join(format!(
            "bench/results/io-{}.md",
            crate::orchestrator::today()
        ))
    });
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

fn evict(dir: &Path) -> Result<()> {
    let d = PreadDirectory::open(dir)?;
    for name in d.list()? {
        d.open(&name)?.evict_from_cache()?;
    }
    Ok(())
}

/// `read_bytes` of `/proc/self/io`: bytes this process caused to be read from storage.
fn disk_read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("read_bytes:")?.trim().parse().ok())
        })
        .unwrap_or(0)
}

fn modes(repo: &Path, tmp: &Path, args: &IoArgs) -> Result<String> {
    let w1 = workload::prepare("w1", repo, &repo.join("bench/results/tmp"), false)?;
    let index = tmp.join("w1-quarry");
    if index.exists() {
        std::fs::remove_dir_all(&index)?;
    }
    std::fs::create_dir_all(&index)?;
    Quarry::index(&index, load_docs(&w1.docs_path)?, 1, 256)?;
    let bytes = measure::dir_bytes(&index);
    let kinds: Vec<DirectoryKind> = args
        .modes
        .split(',')
        .map(|m| m.trim().parse().map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    let classes: Vec<&str> = workload::CLASSES
        .iter()
        .copied()
        .filter(|c| w1.queries.iter().any(|q| q.class == *c))
        .collect();
    let mut out = format!(
        "## 4. W1 queries per directory mode\n\n\
         {} queries, index {:.1} MB, top 10 with stored ids (search + stored fields), one \
         thread. *warm*: mean over queries of the median of {} runs after 3 untimed ones. \
         *evicted*: every index file fsynced and dropped from the page cache \
         (`POSIX_FADV_DONTNEED`), the index opened anew (open time apart), then one search; mean \
         over queries and {} round(s). Disk bytes: `/proc/self/io` `read_bytes` per evicted \
         search, open included.\n\n",
        w1.queries.len(),
        bytes as f64 / 1e6,
        args.warm_iters,
        args.cold_iters
    );
    out += "| mode | cache |";
    for c in &classes {
        out += &format!(" {c} µs |");
    }
    out += " open ms | disk KB per search |\n|---|---|";
    out += &"---|".repeat(classes.len() + 2);
    out += "\n";
    for kind in kinds {
        eprintln!("io: mode {kind}");
        let q = Quarry::open_with(&index, kind)?;
        let parsed: Vec<_> = w1
            .queries
            .iter()
            .map(|s| q.parse(&s.query))
            .collect::<Result<_>>()?;
        let once = |q: &Quarry, p: &quarry::query::Query| -> Result<f64> {
            let t = Instant::now();
            let outcome = q.search(p, Mode::Top10)?;
            q.top(&outcome)?;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        };
        let mut warm = vec![Vec::new(); classes.len()];
        for (spec, p) in w1.queries.iter().zip(&parsed) {
            for _ in 0..3 {
                once(&q, p)?;
            }
            let s: Vec<f64> = (0..args.warm_iters)
                .map(|_| once(&q, p))
                .collect::<Result<_>>()?;
            let ci = classes
                .iter()
                .position(|c| *c == spec.class)
                .expect("known class");
            warm[ci].push(measure::median(&s));
        }
        drop(q);
        let mut cold = vec![Vec::new(); classes.len()];
        let (mut opens, mut disk) = (Vec::new(), Vec::new());
        for _ in 0..args.cold_iters {
            for spec in &w1.queries {
                evict(&index)?;
                let before = disk_read_bytes();
                let t = Instant::now();
                let q = Quarry::open_with(&index, kind)?;
                opens.push(t.elapsed().as_secs_f64() * 1e3);
                let p = q.parse(&spec.query)?;
                let us = once(&q, &p)?;
                disk.push((disk_read_bytes() - before) as f64 / 1e3);
                let ci = classes
                    .iter()
                    .position(|c| *c == spec.class)
                    .expect("known class");
                cold[ci].push(us);
            }
        }
        for (cache, rows) in [("warm", &warm), ("evicted", &cold)] {
            out += &format!("| {kind} | {cache} |");
            for r in rows.iter() {
                out += &format!(" {:.0} |", measure::mean(r));
            }
            if cache == "warm" {
                out += " | |\n";
            } else {
                out += &format!(
                    " {:.1} | {:.0} |\n",
                    measure::mean(&opens),
                    measure::mean(&disk)
                );
            }
        }
    }
    Ok(out + "\n")
}
