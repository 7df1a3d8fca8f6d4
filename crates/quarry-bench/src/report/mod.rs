//! What do the numbers say: the Markdown report and its charts, computed from the results JSON.
//!
//! Setup, indexing, index shapes, cold start and the codec micro-benchmark are here; the query
//! figures (per index shape, and quarry against the best peer) are in [`queries`].

mod queries;
mod scrutiny;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::charts::{self, Series};
use crate::measure::median;

const ENGINE_ORDER: [&str; 4] = ["quarry", "tantivy", "lucene", "seekstorm"];
const MODES: [&str; 4] = ["top10", "top10_count", "count", "top10_highlight"];

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn arr<'a>(results: &'a Value, key: &str) -> &'a [Value] {
    results[key].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

fn num(v: f64) -> String {
    if v.is_nan() {
        "–".into()
    } else if v >= 1000.0 {
        let s = format!("{v:.0}");
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Engines with any record, in report order.
fn engines_present(results: &Value) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for key in ["index", "query", "coldstart"] {
        for r in arr(results, key) {
            let e = s(&r["engine"]);
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
    }
    seen.sort_by_key(|e| ENGINE_ORDER.iter().position(|o| o == e).unwrap_or(99));
    seen
}

fn pairs(engines: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, a) in engines.iter().enumerate() {
        for b in &engines[i + 1..] {
            out.push((a.clone(), b.clone()));
        }
    }
    out
}

/// Writes a run's raw records as zstd-compressed JSON (`<stem>.json.zst`): a W2 record is
/// ~22 MB of JSON and ~2 MB compressed, and `bench/results/` keeps them in git.
pub fn write_results(path: &Path, results: &Value) -> Result<()> {
    let json = serde_json::to_vec_pretty(results)?;
    let packed = zstd::encode_all(&json[..], 19)?;
    std::fs::write(path, packed).with_context(|| format!("writing {}", path.display()))
}

/// Reads a run's raw records: `.json.zst` (what runs write) or plain `.json` (older runs).
pub fn read_results(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let json = if path.extension().is_some_and(|e| e == "zst") {
        zstd::decode_all(&bytes[..]).with_context(|| format!("decompressing {}", path.display()))?
    } else {
        bytes
    };
    serde_json::from_slice(&json).with_context(|| format!("parsing {}", path.display()))
}

/// The report's stem of a raw-records file: its name without `.json` or `.json.zst`.
fn results_stem(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".json.zst")
        .or_else(|| name.strip_suffix(".json"))
}

pub fn rerender(json: &Path) -> Result<()> {
    let results = read_results(json)?;
    let out_dir = json.parent().unwrap_or(Path::new("."));
    let stem =
        results_stem(json).context("a results file is named <stem>.json or <stem>.json.zst")?;
    let md = write_all(&results, out_dir, stem)?;
    eprintln!("wrote {}", md.display());
    Ok(())
}

/// Writes `<stem>.md` and the `<stem>-*.png` charts; returns the Markdown path.
pub fn write_all(results: &Value, out_dir: &Path, stem: &str) -> Result<PathBuf> {
    let engines = engines_present(results);
    let mut md = String::new();
    let meta = &results["meta"];
    let w = s(&meta["workload"]).to_uppercase();
    let quick = meta["settings"]["quick"].as_bool().unwrap_or(false);
    writeln!(
        md,
        "# quarry benchmark: {w}, {}{}\n",
        s(&meta["date"]),
        if quick { " (--quick smoke run)" } else { "" }
    )?;
    if quick {
        writeln!(
            md,
            "> **Smoke run.** `--quick` uses one indexing run and few query iterations{}; \
             its numbers show that the suite works, not how fast anything is.\n",
            if meta["workload"] == "w2" {
                " and a subsample of W2"
            } else {
                ""
            }
        )?;
    }
    setup_section(&mut md, results)?;
    timing_section(&mut md, results)?;
    index_section(&mut md, results, &engines, out_dir, stem)?;
    shapes_section(&mut md, results, &engines)?;
    queries::query_section(&mut md, results, &engines, out_dir, stem)?;
    coldstart_section(&mut md, results, &engines, out_dir, stem)?;
    codecs_section(&mut md, results)?;
    queries::detail_section(&mut md, results, &engines)?;
    let errors = arr(results, "errors");
    if !errors.is_empty() {
        writeln!(md, "## Errors\n")?;
        for e in errors {
            writeln!(
                md,
                "- **{}**: {}",
                s(&e["engine"]),
                s(&e["error"]).replace('\n', " ")
            )?;
        }
        writeln!(md)?;
    }
    let path = out_dir.join(format!("{stem}.md"));
    std::fs::write(&path, md)?;
    Ok(path)
}

fn setup_section(md: &mut String, results: &Value) -> Result<()> {
    let meta = &results["meta"];
    let st = &meta["settings"];
    writeln!(md, "## Setup\n")?;
    writeln!(md, "- Workload: {}", s(&meta["description"]))?;
    let mem_kb: f64 = s(&meta["machine"]["memory"])
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    writeln!(
        md,
        "- Machine: {} ({} cores), {:.1} GiB RAM, Linux {}; load average (1/5/15 min) {} at the start, {} at the end",
        s(&meta["machine"]["cpu"]),
        s(&meta["machine"]["cores"]),
        mem_kb / (1024.0 * 1024.0),
        s(&meta["machine"]["kernel"]),
        s(&meta["loadavg_start"]),
        s(&meta["loadavg_end"]),
    )?;
    writeln!(
        md,
        "- quarry commit: `{}`{}; total run time {:.0} s",
        s(&meta["git_commit"]),
        if meta["git_dirty"] == true {
            " with uncommitted changes"
        } else {
            ""
        },
        f(&meta["total_seconds"])
    )?;
    if let Some(engs) = meta["engines"].as_object() {
        // In ENGINE_ORDER: the map's own order depends on serde_json's `preserve_order`, which
        // only some builds get (`--features seekstorm-driver`).
        let mut engs: Vec<_> = engs.iter().collect();
        engs.sort_by_key(|(e, _)| ENGINE_ORDER.iter().position(|o| o == e).unwrap_or(99));
        for (name, st) in engs {
            let version = arr(results, "index")
                .iter()
                .find(|r| r["engine"] == name.as_str())
                .map(|r| s(&r["version"]))
                .filter(|v| !v.is_empty())
                .or_else(|| Some(s(&st["version"])).filter(|v| !v.is_empty()))
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            match s(&st["status"]).as_str() {
                "ran" => match st["jvm_options"].as_str() {
                    Some(jvm) => {
                        writeln!(md, "- Engine **{name}**{version}: ran (JVM flags `{jvm}`)")?
                    }
                    None => writeln!(md, "- Engine **{name}**{version}: ran")?,
                },
                _ => writeln!(md, "- Engine **{name}**: {}", s(&st["reason"]))?,
            }
        }
    }
    writeln!(
        md,
        "- Settings: {} fresh indexing run(s) per engine and thread count ({} threads), indexing memory {} MiB \
         per thread; {} untimed round-robin pass(es) over the (query, mode) pairs of each query process, then per (query, mode) {} \
         warm-up + {} timed iterations; {} cold-start process(es) per cache state",
        s(&st["index_runs"]),
        st["threads"].as_array().map(|a| a.iter().map(s).collect::<Vec<_>>().join(" and ")).unwrap_or_default(),
        s(&st["memory_mb_per_thread"]),
        s(&st["global_warmup_rounds"]),
        s(&st["warmup"]),
        s(&st["iters"]),
        s(&st["coldstart_runs"])
    )?;
    writeln!(md, "- Rust drivers: {}\n", s(&meta["allocator"]))?;
    Ok(())
}

fn timing_section(md: &mut String, results: &Value) -> Result<()> {
    let meta = &results["meta"];
    writeln!(md, "## What was timed, and what was not\n")?;
    writeln!(
        md,
        "- **Indexing** (`docs/s`): each run is a fresh driver process writing into a fresh directory{}. \
         Before the timer: reading and parsing the JSON-lines corpus into in-memory records (id, title, \
         body). Timed: creating the writer, turning each record into the engine's document, adding it, \
         the single final commit and waiting for merges to finish (Lucene: `IndexWriter.close`). `index bytes` is the size of all files in the index directory after \
         that; `peak RSS` is the driver's VmHWM (it includes the pre-loaded corpus; the RSS before the \
         timer is shown next to it).",
        if meta["settings"]["query_slices"].is_null() {
            ""
        } else {
            "; runs are interleaved: for each thread count and run, one run per engine, the \
             engines' order rotating"
        }
    )?;
    // Runs before query slicing existed used one process per engine and shape.
    let slices = meta["settings"]["query_slices"].as_u64().unwrap_or(1);
    let processes = if slices > 1 {
        format!(
            "the queries are cut into {slices} slices (query i goes to slice i mod {slices}, so each \
             slice holds every class), and each (shape, slice) is run by one driver process per engine, engine after \
             engine with the order rotating from slice to slice, so that a change of the machine's \
             speed during the run falls on every engine alike; each process is"
        )
    } else {
        "one driver process per engine and shape,".to_string()
    };
    writeln!(
        md,
        "- **Queries**: {processes} single-threaded, on the committed index built with \
         1 thread (last run), opened with the engine's default directory (memory-mapped files for all three). \
         Per (query, mode): the query is parsed once (untimed), then run {} times untimed (warm-up) and {} \
         times timed; each sample times the search call alone (collector included, stored fields not). \
         Percentiles are nearest-rank over the sorted samples. The stored `id`s of the top hits are read once \
         afterwards, untimed. Modes: `top10` = the 10 best by BM25, engines may skip non-competitive \
         documents (hit count is then a lower bound, `gte`); `top10_count` = the 10 best plus the exact \
         count; `count` = exact count only; `top10_highlight` (the *highlight* class) = `top10`, then, in \
         the same timed sample, the stored `body` of the 10 hits read and highlighted by the engine's \
         highlighter (quarry: `Searcher::docs` + `Highlighter`, Elasticsearch's defaults: 5 fragments of \
         100 characters, offsets by re-analysis; Lucene: `UnifiedHighlighter`, offsets by re-analysis as \
         Elasticsearch's default `unified` highlighter on a field without offsets, 5 passages, \
         `LengthGoalBreakIterator` towards 100 characters; Tantivy: `Searcher::doc` + \
         `SnippetGenerator`, made per query, one fragment of 100 characters, `to_html`). The \
         `fuzzy_wildcard` class (one-word `typo~`, `pre*`, `wo?d`, `w*d` queries from \
         `bench/queries/`, not run in `top10_highlight`): Lucene's `FuzzyQuery` defaults (2 edits, prefix \
         0, 50 expansions scored as one blended term, transpositions) and constant-score wildcards; \
         Tantivy's `FuzzyTermQuery` keeps every term within the distance and scores constantly, so its \
         fuzzy answers differ by design; SeekStorm has no such queries (reported as not supported). \
         Aggregates use each query's p50 and only queries that every engine ran without error.",
        s(&meta["settings"]["warmup"]),
        s(&meta["settings"]["iters"])
    )?;
    if engines_present(results).iter().any(|e| e == "seekstorm") {
        let shards = arr(results, "index")
            .iter()
            .rfind(|r| s(&r["engine"]) == "seekstorm" && r["threads"] == 1)
            .map(|r| s(&r["segments"]))
            .unwrap_or_else(|| "?".into());
        writeln!(
            md,
            "- **SeekStorm is not single-threaded.** Its driver process calls it from one thread, but \
             SeekStorm searches the shards of its index ({shards} in shape `default`: one per physical \
             core by default) in parallel on its own runtime, one worker per CPU, and indexes the same \
             way whatever thread count it is given. Its query latencies may therefore use every core of \
             the machine while the other engines use one; in shape `merged` it has one shard. Where its \
             exact counts differ from Lucene's is listed under *Do the engines agree?*."
        )?;
    }
    writeln!(
        md,
        "- **Cold start**: a fresh driver process opens the index and answers `{}` (top 10, with the stored \
         ids of the hits). *spawn → first result* is measured by the orchestrator from just before `spawn` to \
         the arrival of the result line (it includes process start-up: the JVM for Lucene); *open → first \
         result* is measured inside the driver. `warm` = every index file read just before (in the page \
         cache); `evicted` = fsync + `posix_fadvise(POSIX_FADV_DONTNEED)` on every index file just before, \
         checked with `mincore` (resident bytes shown). Only index files are evicted, not the driver \
         binary or the JVM. Peak RSS and major faults come from `wait4` on the child.",
        s(&meta["coldstart_query"])
    )?;
    writeln!(
        md,
        "- **Not timed anywhere**: corpus preparation (decompression, Wikipedia-to-JSONL conversion), \
         process start-up for indexing and query runs, JVM start-up except in *spawn → first result*.\n"
    )?;
    writeln!(md, "**Analyzers.** Each engine uses its standard analyzer and BM25 defaults (k1 = 1.2, b = 0.75), no stop words, no stemming:")?;
    writeln!(
        md,
        "Lucene's `StandardAnalyzer` (UAX#29 word boundaries, lowercase, tokens longer than 255 chars split); \
         Tantivy's `default` tokenizer (splits on every non-alphanumeric character, so `U.S.` gives `u`, `s` and \
         `don't` gives `don`, `t`; drops tokens longer than 40 bytes; lowercase); quarry's analyzer (UAX#29 + \
         lowercase, modelled on Lucene's). Hit counts therefore differ slightly between Tantivy and the other \
         two; see the agreement table below. Lucene encodes document length in a one-byte norm; so do quarry \
         and Tantivy (fieldnorm), with different tables.\n"
    )?;
    Ok(())
}

fn index_section(
    md: &mut String,
    results: &Value,
    engines: &[String],
    out_dir: &Path,
    stem: &str,
) -> Result<()> {
    let recs = arr(results, "index");
    if recs.is_empty() {
        return Ok(());
    }
    writeln!(md, "## Indexing\n")?;
    writeln!(md, "| engine | threads | runs | best docs/s | median docs/s | median s | index bytes | bytes/doc | segments | peak RSS | RSS before timer |")?;
    writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    let mut groups: BTreeMap<(usize, usize), Vec<&Value>> = BTreeMap::new();
    for r in recs {
        let e = engines
            .iter()
            .position(|x| *x == s(&r["engine"]))
            .unwrap_or(99);
        groups
            .entry((r["threads"].as_u64().unwrap_or(0) as usize, e))
            .or_default()
            .push(r);
    }
    let threads: Vec<usize> = {
        let mut t: Vec<usize> = groups.keys().map(|k| k.0).collect();
        t.dedup();
        t
    };
    let mut best: HashMap<(usize, String), f64> = HashMap::new();
    let mut configs = Vec::new();
    for ((t, e), rs) in &groups {
        let engine = engines.get(*e).cloned().unwrap_or_default();
        let dps: Vec<f64> = rs.iter().map(|r| f(&r["docs_per_sec"])).collect();
        let secs: Vec<f64> = rs.iter().map(|r| f(&r["seconds"])).collect();
        let last = rs.last().expect("non-empty");
        let b = dps.iter().cloned().fold(f64::MIN, f64::max);
        best.insert((*t, engine.clone()), b);
        let docs = f(&last["docs"]);
        let bytes = f(&last["index_bytes"]);
        let peak = rs
            .iter()
            .map(|r| f(&r["peak_rss_bytes"]))
            .fold(0.0, f64::max);
        let before = rs
            .iter()
            .map(|r| f(&r["rss_before_timing_bytes"]))
            .fold(f64::NAN, f64::min);
        writeln!(
            md,
            "| {engine} | {t} | {} | {} | {} | {:.2} | {} | {:.0} | {} | {} | {} |",
            rs.len(),
            num(b),
            num(median(&dps)),
            median(&secs),
            num(bytes),
            bytes / docs,
            s(&last["segments"]),
            mib(peak),
            if before.is_nan() {
                "–".into()
            } else {
                mib(before)
            }
        )?;
        let mut c = s(&last["config"]);
        if c.is_empty() && !last["ram_buffer_mb"].is_null() {
            c = format!(
                "IndexWriterConfig defaults, RAM buffer {} MB",
                s(&last["ram_buffer_mb"])
            );
        }
        configs.push((
            format!("{engine}, {t} thread(s)"),
            format!("{c}; timed: {}", s(&last["timed"])),
        ));
    }
    writeln!(md)?;
    for (e, c) in &configs {
        writeln!(md, "- {e}: {c}")?;
    }
    if engines.iter().any(|e| e == "lucene") {
        writeln!(
            md,
            "- Every run is a fresh process, so Lucene's figures include the JIT compiling the indexing code; \
             on a small corpus (W1) that is a large part of the time, on W2 much less."
        )?;
    }
    writeln!(md)?;
    let groups_lbl: Vec<String> = threads
        .iter()
        .map(|t| format!("{t} thread{}", if *t == 1 { "" } else { "s" }))
        .collect();
    let series: Vec<Series> = engines
        .iter()
        .map(|e| Series {
            name: e.clone(),
            values: threads
                .iter()
                .map(|t| best.get(&(*t, e.clone())).copied())
                .collect(),
        })
        .collect();
    let png = format!("{stem}-indexing.png");
    match charts::grouped_bars(
        &out_dir.join(&png),
        "Indexing throughput (best run, docs/s, higher is better)",
        "docs/s",
        &groups_lbl,
        &series,
        false,
    ) {
        Ok(()) => writeln!(md, "![indexing throughput]({png})\n")?,
        Err(e) => writeln!(md, "(indexing chart not drawn: {e:#})\n")?,
    }
    Ok(())
}

/// Segment counts and sizes of the two index shapes the queries ran on.
fn shapes_section(md: &mut String, results: &Value, engines: &[String]) -> Result<()> {
    let merges = arr(results, "merge");
    if merges.is_empty() && queries::shapes_present(results).len() < 2 {
        return Ok(());
    }
    writeln!(
        md,
        "## Index shapes
"
    )?;
    writeln!(
        md,
        "Queries run on two shapes of each engine's index: `default`, as the engine's defaults leave it after \
         the last 1-thread indexing run, and `merged`, a copy of it force-merged to one segment (quarry \
         `IndexWriter::force_merge(1)`, Tantivy `IndexWriter::merge` of all segments, Lucene \
         `IndexWriter.forceMerge(1)`; SeekStorm has no merge and is rebuilt into one shard from its document \
         store). The merge is not part of the indexing time.\n"
    )?;
    writeln!(md, "| engine | default: segments | default: bytes | merged: segments | merged: bytes | merge s | how |")?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|---|")?;
    for e in engines {
        let default = arr(results, "index")
            .iter()
            .rfind(|r| s(&r["engine"]) == *e && r["threads"] == 1);
        let merged = merges.iter().rfind(|r| s(&r["engine"]) == *e);
        let failed = arr(results, "errors")
            .iter()
            .find(|r| s(&r["engine"]) == *e && r["shape"] == "merged")
            .map(|r| format!("failed: {}", s(&r["error"]).replace('\n', " ")));
        let cell = |r: Option<&Value>, k: &str| r.map(|r| s(&r[k])).unwrap_or("–".into());
        writeln!(
            md,
            "| {e} | {} | {} | {} | {} | {} | {} |",
            default.map(|r| s(&r["segments"])).unwrap_or("–".into()),
            cell(default, "index_bytes"),
            merged
                .map(|r| s(&r["segments_after"]))
                .unwrap_or("–".into()),
            cell(merged, "index_bytes"),
            merged
                .map(|r| format!("{:.1}", f(&r["seconds"])))
                .unwrap_or("–".into()),
            merged
                .map(|r| s(&r["how"]))
                .or(failed)
                .unwrap_or("not run".into())
        )?;
    }
    writeln!(md)?;
    Ok(())
}

/// The codec micro-benchmark, when the run measured it.
fn codecs_section(md: &mut String, results: &Value) -> Result<()> {
    if results["codecs"].is_null() {
        return Ok(());
    }
    let report: crate::codecs::CodecReport = serde_json::from_value(results["codecs"].clone())
        .context("the results' `codecs` entry is not a codec report")?;
    writeln!(
        md,
        "## Codec micro-benchmark
"
    )?;
    writeln!(
        md,
        "Decode speed of quarry's block codecs through the public API of `quarry-codecs` (`quarry-bench codecs` \
         prints the same table), {} ms per timed pass, best of 3.\n",
        report.millis_per_pass
    )?;
    writeln!(md, "{}", crate::codecs::markdown(&report))?;
    Ok(())
}

fn coldstart_section(
    md: &mut String,
    results: &Value,
    engines: &[String],
    out_dir: &Path,
    stem: &str,
) -> Result<()> {
    let recs = arr(results, "coldstart");
    if recs.is_empty() {
        return Ok(());
    }
    writeln!(md, "## Cold start\n")?;
    writeln!(md, "Medians over runs; index resident = bytes of the index in the page cache when the process was spawned (after warming or eviction). Peak RSS is the driver's own `VmHWM` (`/proc/self/status`, read at the end of the run), the largest over runs; `wait4`'s `ru_maxrss` is not used because it carries the orchestrator's high-water mark over fork/exec.\n")?;
    writeln!(md, "| engine | cache | runs | spawn → first result ms | open → first result ms | peak RSS | major faults | index resident at spawn | hits (top10: may be a lower bound) |")?;
    writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|")?;
    let caches = ["warm", "evicted"];
    let mut chart: HashMap<String, Vec<Option<f64>>> = HashMap::new();
    for e in engines {
        for cache in caches {
            let rs: Vec<&Value> = recs
                .iter()
                .filter(|r| s(&r["engine"]) == *e && r["cache"] == cache)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let spawn: Vec<f64> = rs
                .iter()
                .map(|r| f(&r["spawn_to_first_result_us"]) / 1000.0)
                .collect();
            let open: Vec<f64> = rs
                .iter()
                .map(|r| f(&r["open_to_first_result_us"]) / 1000.0)
                .collect();
            let faults: Vec<f64> = rs.iter().map(|r| f(&r["child_major_faults"])).collect();
            let rss = rs.iter().map(|r| driver_peak_rss(r)).fold(0.0, f64::max);
            let resident: Vec<f64> = rs
                .iter()
                .map(|r| f(&r["index_resident_bytes_at_spawn"]))
                .collect();
            writeln!(
                md,
                "| {e} | {cache} | {} | {:.1} | {:.2} | {} | {} | {} | {} |",
                rs.len(),
                median(&spawn),
                median(&open),
                mib(rss),
                median(&faults),
                mib(median(&resident)),
                s(&rs[0]["hits"])
            )?;
            let v = chart.entry(e.clone()).or_insert_with(|| vec![None; 4]);
            let ci = if cache == "warm" { 0 } else { 1 };
            v[ci] = Some(median(&open));
            v[ci + 2] = Some(median(&spawn));
        }
    }
    writeln!(md)?;
    let groups: Vec<String> = [
        "open→result, cached",
        "open→result, evicted",
        "spawn→result, cached",
        "spawn→result, evicted",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let series: Vec<Series> = engines
        .iter()
        .map(|e| Series {
            name: e.clone(),
            values: chart.remove(e).unwrap_or_default(),
        })
        .collect();
    let png = format!("{stem}-coldstart.png");
    match charts::grouped_bars(
        &out_dir.join(&png),
        "Cold start: time to first result (ms, log scale, lower is better)",
        "ms",
        &groups,
        &series,
        true,
    ) {
        Ok(()) => writeln!(md, "![cold start]({png})\n")?,
        Err(e) => writeln!(md, "(cold-start chart not drawn: {e:#})\n")?,
    }
    Ok(())
}

/// The peak RSS of a cold-start run: the driver's own `VmHWM` (`peak_rss_bytes`). Records written
/// before drivers reported it fall back to `wait4`'s `ru_maxrss` (`child_maxrss_bytes`), which
/// inherits the parent's high-water mark across fork/exec and so overstates small drivers.
fn driver_peak_rss(r: &Value) -> f64 {
    match r["peak_rss_bytes"].as_f64() {
        Some(v) if v > 0.0 => v,
        _ => f(&r["child_maxrss_bytes"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_records_round_trip_compressed_and_plain() {
        let dir = tempfile::tempdir().unwrap();
        let results = json!({"meta": {"commit": "abc"}, "records": [1, 2, 3]});
        let zst = dir.path().join("2026-01-01-w1.json.zst");
        write_results(&zst, &results).unwrap();
        assert_eq!(read_results(&zst).unwrap(), results);
        assert_eq!(results_stem(&zst), Some("2026-01-01-w1"));
        let plain = dir.path().join("2026-01-01-w2.json");
        std::fs::write(&plain, serde_json::to_string(&results).unwrap()).unwrap();
        assert_eq!(read_results(&plain).unwrap(), results);
        assert_eq!(results_stem(&plain), Some("2026-01-01-w2"));
        assert!(read_results(&dir.path().join("missing.json.zst")).is_err());
    }

    #[test]
    fn coldstart_peak_rss_is_the_drivers_own() {
        let both =
            json!({"peak_rss_bytes": 50.0 * 1048576.0, "child_maxrss_bytes": 1047.9 * 1048576.0});
        assert_eq!(driver_peak_rss(&both), 50.0 * 1048576.0);
        let old = json!({"child_maxrss_bytes": 7.0});
        assert_eq!(driver_peak_rss(&old), 7.0);
        let unknown = json!({"peak_rss_bytes": -1, "child_maxrss_bytes": 7.0});
        assert_eq!(driver_peak_rss(&unknown), 7.0);
    }

    fn q(engine: &str, query: &str, class: &str, mode: &str, p50: f64, hits: u64) -> Value {
        json!({"engine": engine, "op": "query", "query": query, "class": class, "mode": mode, "hits": hits,
               "hits_relation": "eq", "p50_us": p50, "p90_us": p50, "p99_us": p50, "mean_us": p50, "min_us": p50,
               "iters": 10, "warmup": 1, "top": [{"id": 1, "score": 1.0}]})
    }

    #[test]
    fn report_from_synthetic_results() {
        let mut query = Vec::new();
        for mode in MODES {
            query.push(q("tantivy", "oil", "term", mode, 10.0, 5));
            query.push(q("lucene", "oil", "term", mode, 40.0, 5));
            query.push(q("tantivy", "\"oil prices\"", "phrase", mode, 30.0, 2));
            query.push(q("lucene", "\"oil prices\"", "phrase", mode, 15.0, 3));
        }
        query.push(json!({"engine": "lucene", "op": "query", "query": "bad(", "class": "mixed", "mode": "count", "error": "parse"}));
        let results = json!({
            "meta": {"date": "2026-01-01", "workload": "w1", "description": "test", "settings": {"quick": true},
                     "engines": {"tantivy": {"status": "ran"}, "quarry": {"status": "skipped", "reason": "not built"}}},
            "index": [
                {"engine": "tantivy", "op": "index", "threads": 1, "docs": 100, "seconds": 1.0, "docs_per_sec": 100.0,
                 "index_bytes": 1000, "segments": 1, "peak_rss_bytes": 1048576, "timed": "t"},
                {"engine": "lucene", "op": "index", "threads": 1, "docs": 100, "seconds": 2.0, "docs_per_sec": 50.0,
                 "index_bytes": 900, "segments": 1, "peak_rss_bytes": 2097152, "timed": "t", "ram_buffer_mb": 256.0}
            ],
            "query": query,
            "coldstart": [
                {"engine": "tantivy", "op": "coldstart", "cache": "warm", "open_to_first_result_us": 900.0,
                 "spawn_to_first_result_us": 3000.0, "child_maxrss_bytes": 1048576, "child_major_faults": 0,
                 "index_resident_bytes_at_spawn": 1000, "hits": 10},
                {"engine": "tantivy", "op": "coldstart", "cache": "evicted", "open_to_first_result_us": 9000.0,
                 "spawn_to_first_result_us": 30000.0, "child_maxrss_bytes": 1048576, "child_major_faults": 7,
                 "index_resident_bytes_at_spawn": 0, "hits": 10}
            ],
            "errors": []
        });
        let dir = std::env::temp_dir().join(format!("quarry-bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let md_path = write_all(&results, &dir, "t").unwrap();
        let md = std::fs::read_to_string(md_path).unwrap();
        assert!(
            md.contains(
                "`count` / term (1 queries): **tantivy** is fastest, 4.00× faster than lucene"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "`count` / phrase (1 queries): **lucene** is fastest, 2.00× faster than tantivy"
            ),
            "{md}"
        );
        assert!(md.contains("| tantivy vs lucene | 2 | 1 |"), "{md}");
        assert!(md.contains("Engine **quarry**: not built"), "{md}");
        // Engines in ENGINE_ORDER whatever the order of the record's map.
        assert!(
            md.find("Engine **quarry**") < md.find("Engine **tantivy**"),
            "{md}"
        );
        assert!(
            md.contains("lucene `bad(` (count, shape default): parse"),
            "{md}"
        );
        for png in [
            "t-indexing.png",
            "t-coldstart.png",
            "t-latency-top10.png",
            "t-latency-count.png",
        ] {
            assert!(dir.join(png).exists(), "{png} missing");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    fn qs(
        engine: &str,
        shape: &str,
        query: &str,
        class: &str,
        mode: &str,
        p50: f64,
        mean: f64,
    ) -> Value {
        let mut r = q(engine, query, class, mode, p50, 3);
        r["shape"] = json!(shape);
        r["mean_us"] = json!(mean);
        r
    }

    /// Two shapes, quarry and two peers: the verdict table picks the best peer per cell, marks
    /// the cells at target and names the segment counts; the codec section is rendered.
    #[test]
    fn verdict_per_cell_and_shape() {
        let mut query = Vec::new();
        for mode in MODES {
            for (shape, k) in [("default", 1.0), ("merged", 0.5)] {
                // term: quarry 7.5 vs best peer 10 (tantivy) -> 0.75, at target; mean 20 vs 10 -> 2.00.
                query.push(qs("quarry", shape, "a", "term", mode, 7.5 * k, 20.0 * k));
                query.push(qs("tantivy", shape, "a", "term", mode, 10.0 * k, 30.0 * k));
                query.push(qs(
                    "seekstorm",
                    shape,
                    "a",
                    "term",
                    mode,
                    40.0 * k,
                    10.0 * k,
                ));
                // union: quarry 9 vs 10 -> 0.90, not at target; mean 10 vs 10 -> 1.00 at target.
                query.push(qs("quarry", shape, "b c", "union", mode, 9.0 * k, 10.0 * k));
                query.push(qs(
                    "tantivy",
                    shape,
                    "b c",
                    "union",
                    mode,
                    10.0 * k,
                    10.0 * k,
                ));
                query.push(qs(
                    "seekstorm",
                    shape,
                    "b c",
                    "union",
                    mode,
                    12.0 * k,
                    11.0 * k,
                ));
                // mixed: SeekStorm refuses `+d e`, so it is compared with quarry on `+f -g` only
                // (0.50), Tantivy on both (geomean 22.4 vs 22.4 -> 1.00; mean 30 vs 22.5 -> 1.33).
                // Counting only the queries every engine ran would give 0.50 for both.
                query.push(qs("quarry", shape, "+d e", "mixed", mode, 50.0, 50.0));
                query.push(qs("tantivy", shape, "+d e", "mixed", mode, 25.0, 25.0));
                let mut refused = qs("seekstorm", shape, "+d e", "mixed", mode, 1.0, 1.0);
                refused["error"] = json!("cannot express optional clauses");
                query.push(refused);
                query.push(qs("quarry", shape, "+f -g", "mixed", mode, 10.0, 10.0));
                query.push(qs("tantivy", shape, "+f -g", "mixed", mode, 20.0, 20.0));
                query.push(qs("seekstorm", shape, "+f -g", "mixed", mode, 20.0, 20.0));
            }
        }
        let codecs = crate::codecs::measure(&crate::codecs::CodecArgs {
            millis: 1,
            buffer_mb: Some(4),
            json: true,
        });
        let results = json!({
            "meta": {"date": "2026-01-01", "workload": "w2", "description": "test", "settings": {"quick": false},
                     "engines": {}},
            "index": [
                {"engine": "quarry", "op": "index", "threads": 1, "docs": 100, "seconds": 1.0, "docs_per_sec": 100.0,
                 "index_bytes": 1000, "segments": 6, "peak_rss_bytes": 1, "timed": "t"},
                {"engine": "tantivy", "op": "index", "threads": 1, "docs": 100, "seconds": 1.0, "docs_per_sec": 100.0,
                 "index_bytes": 1000, "segments": 2, "peak_rss_bytes": 1, "timed": "t"},
                {"engine": "seekstorm", "op": "index", "threads": 1, "docs": 100, "seconds": 1.0, "docs_per_sec": 100.0,
                 "index_bytes": 1000, "segments": 2, "peak_rss_bytes": 1, "timed": "t"}
            ],
            "merge": [
                {"engine": "quarry", "op": "merge", "max_segments": 1, "segments_before": 6, "segments_after": 1,
                 "seconds": 2.5, "index_bytes": 900, "how": "force_merge(1)"},
                {"engine": "tantivy", "op": "merge", "max_segments": 1, "segments_before": 2, "segments_after": 1,
                 "seconds": 1.5, "index_bytes": 950, "how": "merge"},
                {"engine": "seekstorm", "op": "merge", "max_segments": 1, "segments_before": 2, "segments_after": 1,
                 "seconds": 3.0, "index_bytes": 990, "how": "rebuilt"}
            ],
            "query": query, "coldstart": [], "errors": [], "codecs": codecs,
        });
        let dir = std::env::temp_dir().join(format!("quarry-bench-verdict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let md = std::fs::read_to_string(write_all(&results, &dir, "v").unwrap()).unwrap();
        for shape in ["default", "merged"] {
            assert!(md.contains(&format!("### Shape `{shape}`")), "{md}");
        }
        assert!(
            md.contains("Segments: quarry 6, tantivy 2, seekstorm 2."),
            "{md}"
        );
        assert!(
            md.contains("Segments: quarry 1, tantivy 1, seekstorm 1."),
            "{md}"
        );
        assert!(
            md.contains("| top10 | term | 1 | 7.50 | tantivy 10.0 | **0.75** ✓ | 1 | 20.0 | seekstorm 10.0 | 2.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| count | union | 1 | 4.50 | tantivy 5.00 | 0.90 | 1 | 5.00 | tantivy 5.00 | **1.00** ✓ |"),
            "{md}"
        );
        assert!(
            md.contains("| top10 | **0.75** ✓ / 2.00 | 0.90 / **1.00** ✓ | 1.00 / 1.33 |"),
            "{md}"
        );
        assert!(
            md.contains("Cells meeting the p50 target: 4 of 12; meeting the mean target: 4 of 12."),
            "{md}"
        );
        assert!(
            md.contains("| top10 | mixed | 2 | 22.4 | tantivy 22.4 | 1.00 | 2 | 30.0 | tantivy 22.5 | 1.33 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "did not (error records, listed in the JSON): seekstorm: 1 mixed queries in top10;"
            ),
            "{md}"
        );
        assert!(
            md.contains("| quarry | 6 | 1000 | 1 | 900 | 2.5 | force_merge(1) |"),
            "{md}"
        );
        assert!(md.contains("## Codec micro-benchmark"), "{md}");
        assert!(
            md.contains("| bitpacked | scalar | 8 bits | 1.000 |"),
            "{md}"
        );
        assert!(dir.join("v-latency-top10-merged.png").exists());
        assert!(dir.join("v-latency-top10.png").exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}
