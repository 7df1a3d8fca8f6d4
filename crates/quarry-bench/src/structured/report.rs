//! What does a structured run say: the raw record (settings, machine, every sample, every
//! answer and its verdict) and the Markdown report with its chart, in the text suite's style:
//! per-class p50 per engine with the ratio quarry / best peer, answers checked, every query.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{json, Value};

use super::queries::CLASSES;
use super::spec::{Answer, QuerySpec};
use super::{Checked, EngineRun, StructuredArgs, TANTIVY_HLL_TOLERANCE};
use crate::charts::{grouped_bars, Series};
use crate::measure::{geomean, percentile};

/// Engines in report order.
pub const ENGINES: [&str; 4] = ["quarry", "tantivy", "lucene", "seekstorm"];

/// What each engine's timed call is.
pub fn timed(engine: &str) -> &'static str {
    match engine {
        "quarry" => {
            "the library call in the driver process: `Searcher::count` (range_count), \
             `Searcher::search(q, 10, SearchMode::TopCount)` (range_text_top10, exact count), \
             `Searcher::search_sorted(q, [field, id asc], 10, after, false)` (sort_top10, \
             sort_deep with search_after; always counts every match), `Searcher::aggregate(q, \
             aggs)` returning Elasticsearch-shaped JSON (the aggregation classes; aggs parsed once \
             before timing). Reading the 10 stored ids happens after timing."
        }
        "tantivy" => {
            "`searcher.search(q, collector)` in the driver process: `Count`; `(TopDocs::with_limit(10).order_by_score(), Count)`; \
             `TopDocs::with_limit(10).and_offset(n).order_by(((field, order), (id, Asc)))` (no \
             search_after in Tantivy: a deep page is an offset; the sorted collector does not \
             count, the total is counted after timing); `AggregationCollector` (results as \
             `AggregationResults`, not serialized inside the timing)."
        }
        "lucene" => {
            "inside the JVM after warm-up (System.nanoTime around the call): `IndexSearcher.count` \
             (range_count); `IndexSearcher.search(q, TopScoreDocCollectorManager(10, \
             Integer.MAX_VALUE))` (exact count); `IndexSearcher.searchAfter(after, q, 10, Sort(field, \
             id))` (default total-hits threshold: counts up to 1,000, the exact total is counted \
             after timing); aggregations as `IndexSearcher.search(q, CollectorManager)` with \
             hand-written collectors over doc values (terms: ordinal counts on \
             Sorted(Set)DocValues, date_histogram: NumericDocValues bucketed by day or month \
             bounds, stats: NumericDocValues, cardinality: a FixedBitSet of ordinals), the \
             documented way to aggregate in plain Lucene without the facet module."
        }
        _ => "",
    }
}

/// Latency summary of samples (µs): p50, p90, p99, p99.9 (nearest rank), mean.
fn summary(samples: &[f64]) -> Value {
    let mut s: Vec<f64> = samples.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
    json!({
        "n": s.len(),
        "p50": percentile(&s, 50.0),
        "p90": percentile(&s, 90.0),
        "p99": percentile(&s, 99.0),
        "p999": percentile(&s, 99.9),
        "mean": mean,
    })
}

/// The raw record of a run.
#[allow(clippy::too_many_arguments)]
pub fn record(
    repo: &Path,
    args: &StructuredArgs,
    specs: &[QuerySpec],
    oracle: &HashMap<String, Answer>,
    runs: &HashMap<String, EngineRun>,
    skipped: &[(String, String)],
    checked: &Checked,
    docs: (usize, usize),
    settings: (usize, usize, usize),
) -> Value {
    let queries: Vec<Value> = specs
        .iter()
        .map(|s| {
            let mut results = serde_json::Map::new();
            for (engine, run) in runs {
                let Some(r) = run.queries.get(&s.name) else {
                    continue;
                };
                let v = if let Some(u) = r.get("unsupported") {
                    json!({"unsupported": u})
                } else {
                    let samples: Vec<f64> = r["samples_us"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_f64).collect())
                        .unwrap_or_default();
                    let key = (engine.clone(), s.name.clone());
                    let verdict = checked.verdicts.get(&key).cloned().flatten();
                    json!({
                        "latency_us": summary(&samples),
                        "answer": r["answer"],
                        "correct": verdict.is_none(),
                        "difference": verdict,
                        "note": checked.notes.get(&key),
                        "samples_us": samples,
                    })
                };
                results.insert(engine.clone(), v);
            }
            json!({"spec": s, "oracle": oracle.get(&s.name), "results": results})
        })
        .collect();
    let engines: serde_json::Map<String, Value> = runs
        .iter()
        .map(|(e, r)| {
            (
                e.clone(),
                json!({"version": r.version, "index": r.index, "timed": timed(e)}),
            )
        })
        .collect();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let dirty = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)bench/results",
        ])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty());
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    json!({
        "meta": {
            "date": crate::orchestrator::today(),
            "git_commit": crate::orchestrator::git_head(repo),
            "git_dirty": dirty,
            "command": command,
            "quick": args.quick,
            "only": args.only,
            "flights": docs.0,
            "stories": docs.1,
            "warmup": settings.0,
            "iters": settings.1,
            "deep_page_after": settings.2,
            "machine": {
                "cpu": cpu,
                "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            },
            "loadavg_end": crate::orchestrator::loadavg(),
        },
        "engines": engines,
        "skipped": skipped.iter().map(|(e, r)| json!({"engine": e, "reason": r})).collect::<Vec<_>>(),
        "queries": queries,
    })
}

fn p50(q: &Value, engine: &str) -> Option<f64> {
    q["results"][engine]["latency_us"]["p50"].as_f64()
}

fn fmt_us(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 10_000.0 => format!("{:.1} ms", v / 1000.0),
        Some(v) if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        Some(v) => format!("{v:.1} µs"),
    }
}

/// Per class and engine: the geometric mean of the class's query p50s (None when the engine
/// answered none of them).
pub fn class_p50(record: &Value) -> Vec<(String, HashMap<String, f64>)> {
    let queries = record["queries"].as_array().cloned().unwrap_or_default();
    CLASSES
        .iter()
        .map(|class| {
            let mut m = HashMap::new();
            let in_class: Vec<&Value> = queries
                .iter()
                .filter(|q| q["spec"]["class"] == *class)
                .collect();
            for e in ENGINES {
                let v: Vec<f64> = in_class.iter().filter_map(|q| p50(q, e)).collect();
                // A geometric mean over fewer queries than the class has would compare
                // different work: an engine that answers only some of the class is left out of
                // the class row (its queries are in the per-query table).
                if !v.is_empty() && v.len() == in_class.len() {
                    m.insert(e.to_string(), geomean(&v));
                }
            }
            (class.to_string(), m)
        })
        .collect()
}

/// quarry / best peer of a map engine -> value.
fn ratio(m: &HashMap<String, f64>) -> Option<(f64, String)> {
    let q = m.get("quarry")?;
    let (best, v) = m
        .iter()
        .filter(|(e, _)| e.as_str() != "quarry")
        .min_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(std::cmp::Ordering::Equal))?;
    Some((q / v, best.clone()))
}

/// Writes `<stem>.md` and `<stem>-latency.png` under `out`; returns the Markdown path.
pub fn write(record: &Value, out: &Path, stem: &str) -> Result<PathBuf> {
    let meta = &record["meta"];
    let present: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|e| record["engines"].get(*e).is_some())
        .collect();
    let mut md = String::new();
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    writeln!(
        md,
        "# Structured benchmark: ranges, sorts and aggregations ({})\n",
        s(&meta["date"])
    )?;
    writeln!(
        md,
        "Commit `{}`{}; command `{}`; {} ({} cores); load average at the end {}.\n",
        s(&meta["git_commit"]),
        if meta["git_dirty"] == true {
            " with uncommitted changes"
        } else {
            ""
        },
        s(&meta["command"]),
        s(&meta["machine"]["cpu"]),
        meta["machine"]["cores"],
        s(&meta["loadavg_end"]),
    )?;
    writeln!(
        md,
        "Data: {} flights of nycflights13 (2013, NYC departures) joined with the airline's and both \
         airports' names as the text field, and {} Reuters-21578 stories (date, topics, places, \
         title + body as text){}. Each engine indexes both into one segment, then runs every query \
         {} times after {} warm-up runs, one query after the other, one thread. Latencies are \
         per query in µs (nearest-rank percentiles; with {} samples p99.9 is the slowest \
         sample or near it). A deep page is the 10 hits after the {}-th.\n",
        meta["flights"],
        meta["stories"],
        match (meta["quick"] == true, meta["only"].as_str()) {
            (q, Some(only)) => format!(
                "{} — only the queries and classes {only}, the others left out",
                if q { " — quick mode: a subsample" } else { "" }
            ),
            (true, None) => " — quick mode: a subsample".to_string(),
            (false, None) => String::new(),
        },
        meta["iters"],
        meta["warmup"],
        meta["iters"],
        meta["deep_page_after"],
    )?;
    writeln!(
        md,
        "## Per class: p50 (geometric mean of the class's queries)\n"
    )?;
    let classes = class_p50(record);
    let mut header = "| class |".to_string();
    let mut rule = "|---|".to_string();
    for e in &present {
        write!(header, " {e} |")?;
        rule.push_str("---:|");
    }
    writeln!(md, "{header} quarry / best peer | target ≤ 0.8 |")?;
    writeln!(md, "{rule}---:|:---:|")?;
    for (class, m) in &classes {
        let mut row = format!("| {class} |");
        for e in &present {
            write!(row, " {} |", fmt_us(m.get(*e).copied()))?;
        }
        match ratio(m) {
            Some((r, best)) => write!(
                row,
                " {r:.2} ({best}) | {} |",
                if r <= 0.8 { "met" } else { "**not met**" }
            )?,
            None => row.push_str(" – | – |"),
        }
        writeln!(md, "{row}")?;
    }
    let queries = record["queries"].as_array().cloned().unwrap_or_default();
    writeln!(md, "\n## Answers\n")?;
    writeln!(
        md,
        "Every answer is compared with the oracle (a brute-force computation over the parsed \
         rows in Rust): exact counts and totals; sorted ids exactly (ties broken by id); \
         terms buckets exactly (keys with equal counts in any order, the last tie group cut \
         anywhere with true counts); date histograms exactly; stats count, min, max and sum \
         exactly and avg within 1e-9 relative; cardinality exactly (quarry with \
         `precision_threshold` 40,000, exact below it; Lucene counts ordinals), except Tantivy's \
         HyperLogLog (no exact mode), accepted within {:.1}% (three standard errors). BM25 top-10: \
         exact total, distinct ids that match (oracle), ranked like Lucene's (ties within 1e-5 \
         relative as sets).\n",
        TANTIVY_HLL_TOLERANCE * 100.0
    )?;
    let mut bad = Vec::new();
    let mut counts: HashMap<&str, (usize, usize, usize)> = HashMap::new();
    for q in &queries {
        for e in &present {
            let r = &q["results"][*e];
            let c = counts.entry(e).or_default();
            if r.get("unsupported").is_some() {
                c.2 += 1;
            } else if r["correct"] == true {
                c.0 += 1;
            } else if r.is_object() {
                c.1 += 1;
                bad.push(format!(
                    "- **{e} {}**: {}",
                    s(&q["spec"]["name"]),
                    s(&r["difference"])
                ));
            }
        }
    }
    for q in &queries {
        for e in &present {
            if let Some(n) = q["results"][*e]["note"].as_str() {
                bad.push(format!("- {e} {} (note): {n}", s(&q["spec"]["name"])));
            }
        }
    }
    for e in &present {
        let (ok, wrong, unsup) = counts.get(e).copied().unwrap_or_default();
        writeln!(
            md,
            "- {e}: {ok} equal to the oracle, {wrong} wrong, {unsup} not supported"
        )?;
    }
    for b in &bad {
        writeln!(md, "{b}")?;
    }
    for sk in record["skipped"].as_array().into_iter().flatten() {
        writeln!(md, "- {} skipped: {}", s(&sk["engine"]), s(&sk["reason"]))?;
    }
    writeln!(md, "\n![p50 per class]({stem}-latency.png)\n")?;
    writeln!(md, "## Every query: p50 (p99)\n")?;
    let mut header = "| query | class |".to_string();
    let mut rule = "|---|---|".to_string();
    for e in &present {
        write!(header, " {e} |")?;
        rule.push_str("---:|");
    }
    writeln!(md, "{header} quarry / best peer |")?;
    writeln!(md, "{rule}---:|")?;
    for q in &queries {
        let mut row = format!("| {} | {} |", s(&q["spec"]["name"]), s(&q["spec"]["class"]));
        let mut m = HashMap::new();
        for e in &present {
            let r = &q["results"][*e];
            if r.get("unsupported").is_some() {
                row.push_str(" not supported |");
                continue;
            }
            let l = &r["latency_us"];
            if let Some(p) = l["p50"].as_f64() {
                m.insert(e.to_string(), p);
            }
            let mark = if r["correct"] == false {
                " **wrong**"
            } else {
                ""
            };
            write!(
                row,
                " {} ({}){mark} |",
                fmt_us(l["p50"].as_f64()),
                fmt_us(l["p99"].as_f64())
            )?;
        }
        match ratio(&m) {
            Some((r, _)) => write!(row, " {r:.2} |")?,
            None => row.push_str(" – |"),
        }
        writeln!(md, "{row}")?;
    }
    writeln!(md, "\n## Tail latency: p90 / p99 / p99.9 (µs)\n")?;
    writeln!(
        md,
        "| query |{}",
        present
            .iter()
            .map(|e| format!(" {e} |"))
            .collect::<String>()
    )?;
    writeln!(md, "|---|{}", "---:|".repeat(present.len()))?;
    for q in &queries {
        let mut row = format!("| {} |", s(&q["spec"]["name"]));
        for e in &present {
            let l = &q["results"][*e]["latency_us"];
            match (l["p90"].as_f64(), l["p99"].as_f64(), l["p999"].as_f64()) {
                (Some(a), Some(b), Some(c)) => write!(row, " {a:.0} / {b:.0} / {c:.0} |")?,
                _ => row.push_str(" – |"),
            }
        }
        writeln!(md, "{row}")?;
    }
    writeln!(md, "\n## What is timed\n")?;
    for e in &present {
        let eng = &record["engines"][*e];
        writeln!(
            md,
            "- **{e}** ({}): {}",
            s(&eng["version"]),
            s(&eng["timed"])
        )?;
        for ix in eng["index"].as_array().into_iter().flatten() {
            writeln!(
                md,
                "  - index {}: {} docs in {:.1} s ({})",
                s(&ix["dataset"]),
                ix["docs"],
                ix["seconds"].as_f64().unwrap_or(f64::NAN),
                s(&ix["how"])
            )?;
        }
    }
    writeln!(
        md,
        "\nSubstitutions where an engine lacks the feature: Tantivy has no `search_after` (deep \
         pages use `and_offset`) and no `calendar_interval` (flights per month are a `range` \
         aggregation over the months' bounds, read from the date column's min and max at \
         preparation). SeekStorm: one shard (its parallel search over shards is not used, as \
         every engine gets one segment and one thread), deep pages by offset, date histograms as \
         one facet range per month or day between the field's extremes (recorded at indexing), \
         no metric aggregations (stats not supported), and no missing values in facets: the \
         driver writes a placeholder (i64::MIN, or a MISSING keyword) for a missing value and \
         keeps it out of ranges, ascending sorts and counts. An engine that does not answer \
         every query of a class is left out of that class's row. Field semantics: `sched` is the scheduled departure's New York wall-clock \
         time written as UTC, so months and days are local; ranges are inclusive on both ends; \
         missing values sort last in both directions; filters never score.\n"
    )?;
    writeln!(md, "## Queries\n")?;
    for q in &queries {
        writeln!(md, "- `{}`: `{}`", s(&q["spec"]["name"]), q["spec"])?;
    }
    let md_path = out.join(format!("{stem}.md"));
    std::fs::write(&md_path, md)?;
    let groups: Vec<String> = classes.iter().map(|(c, _)| c.clone()).collect();
    let series: Vec<Series> = present
        .iter()
        .map(|e| Series {
            name: e.to_string(),
            values: classes.iter().map(|(_, m)| m.get(*e).copied()).collect(),
        })
        .collect();
    grouped_bars(
        &out.join(format!("{stem}-latency.png")),
        "Structured queries: p50 per class (geometric mean, log scale)",
        "µs",
        &groups,
        &series,
        true,
    )?;
    Ok(md_path)
}
